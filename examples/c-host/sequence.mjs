#!/usr/bin/env node
// The TypeScript twin of host.c: the same ABI sequence, step for step, through
// the TypeScript host's own loader (compileCoreSync, instantiateCore and
// readLayout from the built bundle, dist/wddm-fence.js), printing the same
// lines. test/c-host.test.ts compares the two outputs byte for byte.
//
//   node examples/c-host/sequence.mjs                   the embedded core (build/core.wasm: shared memory, threads)
//   node examples/c-host/sequence.mjs --core nothreads  build/core-nothreads.wasm over an unshared memory
//
// Needs the bundle: `npm run build` (or `npm test`, which builds what is missing).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { compileCoreSync, instantiateCore, readLayout } from '../../dist/wddm-fence.js';

const MEMORY_MAXIMUM_PAGES = 32768; // env.memory's declared maximum
const WASM_PAGE_BYTES = 65536;

// The host's own choices: the same numbers as host.c.
const SYSTEM_PAGES = 64;
const FENCES = 4, PROCESSES = 1, WAIT_BLOCKS = 8, HEAP_ARENA_BYTES = 4096, HEAP_LIMIT_CLASS = 4;
const GPU_VA_PAGES_PER_PROCESS = 8, ENGINES = 1, QUEUES = 1, RING_ENTRIES = 16;
const INTERRUPT_LIST_ENTRIES = 8, OUT_WORDS = 64, MONITORED_VALUE_STRIDE = 8;
const SATISFY_LIMIT = 16;
const ENGINE = 0, PROCESS = 0;
const DRIVER_HANDLE = 0x51, USER_HANDLE = 0x77;
const GPU_VA_BASE = 0x1_0000_0000n;
const UINT64_MAXIMUM = 0xffff_ffff_ffff_ffffn;

const args = process.argv.slice(2);
const coreName = args[0] === '--core' ? args[1] : 'threads';
if ((args.length !== 0 && args.length !== 2) || (coreName !== 'threads' && coreName !== 'nothreads')) {
  process.stderr.write('usage: sequence.mjs [--core threads|nothreads]\n');
  process.exit(64);
}

const module = coreName === 'threads'
  ? compileCoreSync()
  : new WebAssembly.Module(readFileSync(fileURLToPath(new URL('../../build/core-nothreads.wasm', import.meta.url))));
const memory = new WebAssembly.Memory({ initial: 1, maximum: MEMORY_MAXIMUM_PAGES, shared: coreName === 'threads' });
const core = instantiateCore(module, memory);
const layout = readLayout(core); // refuses a core whose ABI_VERSION is not the one the TypeScript host follows
const K = (name) => core[name].value;

const lines = [];
const print = (line) => lines.push(line);
const u64 = (value) => BigInt.asUintN(64, value);
const u32 = (value) => value >>> 0;
const hex = (value) => `0x${value.toString(16)}`;
const view = () => new DataView(memory.buffer);
const readU32 = (address) => view().getUint32(address, true);
const readU64 = (address) => view().getBigUint64(address, true);

function check(result, what) {
  if (result < 0) {
    const name = Object.keys(core).find((n) => (n.startsWith('E_') || n === 'OK') && core[n].value === result);
    throw new Error(`${what} returned ${result} (${name ?? 'not a status code the core exports'})`);
  }
  return result;
}

// ───────────────────────────── the OS's part ─────────────────────────────

/** Each waiter's record (waiterCreate's address), by the host's waiter id. */
const waiterRecord = [];

function satisfy(fence, current) {
  let total = 0;
  for (;;) {
    const popped = check(core.fenceSatisfy(fence.id, current, SATISFY_LIMIT), 'fenceSatisfy');
    const out = u32(core.outBufferAddress());
    const at = layout.out.satisfied; // SatisfiedWait records
    const completed = [];
    for (let i = 0; i < popped; i++) {
      const waiter = readU32(out + at.bytes * i + at.waiter);
      const finished = readU32(out + at.bytes * i + at.completed);
      print(`satisfied waiter=${waiter} entry=${readU32(out + at.bytes * i + at.entry)} completed=${finished}`);
      if (finished) completed.push(waiter);
    }
    for (const waiter of completed) print(`waiter-retire waiter=${waiter} fences=${check(core.waiterRetire(waiterRecord[waiter]), 'waiterRetire')}`);
    total += popped;
    if (popped < SATISFY_LIMIT) return total;
  }
}

function refresh(fence) {
  for (;;) {
    const target = u64(core.fenceMonitoredTarget(fence.id));
    if (target === fence.monitored) {
      print(`monitored-value fence=${fence.id} target=${target} unchanged`);
      return;
    }
    check(core.cmpWriteMonitoredValue(fence.id, target), 'cmpWriteMonitoredValue');
    core.cmpBarrier();
    const seen = u64(core.cmpReadCurrentValue(fence.id));
    const raised = check(core.cmpMonitoredValueCheck(ENGINE, fence.id, seen), 'cmpMonitoredValueCheck');
    fence.monitored = target;
    print(`update-monitored fence=${fence.id} monitored=${target} raised=${raised}`);
    const current = u64(core.cpuReadCurrentValue(fence.id));
    const satisfied = satisfy(fence, current);
    print(`resample fence=${fence.id} current=${current} satisfied=${satisfied}`);
    if (satisfied === 0) return;
  }
}

function addWaiter(fence, waiter, value) {
  waiterRecord[waiter] = check(core.waiterCreate(waiter, layout.waiterModeAll), 'waiterCreate');
  const block = check(core.waitBlockAdd(fence.id, value, waiterRecord[waiter], 0), 'waitBlockAdd');
  print(`waiter-add waiter=${waiter} value=${value} block=${block} waiters=${u32(core.fenceWaiterCount(fence.id))}`);
  refresh(fence);
  return block;
}

function serviceInterrupt(fence) {
  const line = u32(core.engineInterruptLine(ENGINE));
  const queue = u32(core.engineInterruptQueue(ENGINE));
  const count = core.engineTakeInterrupt(ENGINE);
  let text = `interrupt engine=${ENGINE} line=${line} queue=${queue} count=${count}`;
  const out = u32(core.outBufferAddress());
  let listed = count === -1;
  for (let i = 0; i < count; i++) {
    const handle = readU32(out + layout.out.interruptHandleBytes * i);
    text += ` handle=${hex(handle)}`;
    if (handle === DRIVER_HANDLE) listed = true;
  }
  print(text);
  if (!listed) return;
  const current = u64(core.cpuReadCurrentValue(fence.id));
  const satisfied = satisfy(fence, current);
  print(`dpc fence=${fence.id} current=${current} satisfied=${satisfied}`);
  if (satisfied > 0) refresh(fence);
}

// ───────────────────────────── the GPU's part ─────────────────────────────

const STEP_NAMES = [
  ['STEP_IDLE', 'idle'], ['STEP_DONE', 'done'], ['STEP_BLOCKED', 'blocked'], ['STEP_WORK', 'work'],
  ['STEP_INTERRUPT', 'interrupt'], ['STEP_UNBLOCKED', 'unblocked'], ['STEP_MONITORED_INTERRUPT', 'monitored-interrupt'],
];
const stepName = (step) => STEP_NAMES.find(([name]) => K(name) === step)?.[1] ?? 'unknown';
const opName = (op) => (op === layout.opSignal ? 'signal' : op === layout.opWait ? 'wait' : 'other');

function gpuStep(queue, nowNs, fence) {
  const step = check(core.engineStep(queue, nowNs), 'engineStep');
  const out = u32(core.outBufferAddress());
  if (step === layout.stepIdle) print(`engine-step now=${nowNs} result=${stepName(step)}`);
  else {
    const at = layout.out.step; // the StepReport
    print(`engine-step now=${nowNs} op=${opName(readU32(out + at.op))} value=${readU64(out + at.value)} result=${stepName(step)} current=${u64(core.cpuReadCurrentValue(fence.id))}`);
  }
  return step;
}

function readLog(phys, typeName) {
  const word = u64(core.logHeaderWord(phys));
  const firstFree = Number(word & 0xffff_ffffn), wraps = Number(word >> 32n);
  const entries = readU64(phys + K('NATIVE_FENCE_LOG_COUNT_OFFSET'));
  print(`log type=${typeName} header_type=${readU32(phys + K('NATIVE_FENCE_LOG_TYPE_OFFSET'))} entries=${entries} first_free=${firstFree} wraparound=${wraps}`);
  const count = wraps === 0 ? firstFree : Number(entries);
  const oldest = wraps === 0 ? 0 : firstFree;
  for (let n = 0; n < count; n++) {
    const slot = (oldest + n) % Number(entries);
    const entry = phys + K('NATIVE_FENCE_LOG_HEADER_BYTES') + slot * K('NATIVE_FENCE_LOG_ENTRY_BYTES');
    const operation = readU32(entry + K('NATIVE_FENCE_LOG_ENTRY_OPERATION_OFFSET'));
    const operationName = operation === K('NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED') ? 'signal-executed'
      : operation === K('NATIVE_FENCE_LOG_OPERATION_WAIT_UNBLOCKED') ? 'wait-unblocked' : 'unknown';
    print(`log-entry type=${typeName} slot=${slot} value=${readU64(entry + K('NATIVE_FENCE_LOG_ENTRY_VALUE_OFFSET'))} ` +
      `handle=${hex(readU32(entry + K('NATIVE_FENCE_LOG_ENTRY_HANDLE_OFFSET')))} operation=${operationName} ` +
      `observed=${readU64(entry + K('NATIVE_FENCE_LOG_ENTRY_OBSERVED_OFFSET'))} end=${readU64(entry + K('NATIVE_FENCE_LOG_ENTRY_END_OFFSET'))}`);
  }
}

// ───────────────────────────── the sequence ─────────────────────────────

print(`abi version=${layout.abiVersion} layout=${layout.layoutVersion}`);

const systemBase = layout.staticReservedBytes;
const systemBytes = SYSTEM_PAGES * layout.pageBytes;
const adapterBase = systemBase + systemBytes;
const adapterBytes = u32(core.adapterRegionBytes(FENCES, PROCESSES, WAIT_BLOCKS, HEAP_ARENA_BYTES, GPU_VA_PAGES_PER_PROCESS,
  ENGINES, QUEUES, RING_ENTRIES, INTERRUPT_LIST_ENTRIES, OUT_WORDS));
const pages = Math.ceil((adapterBase + adapterBytes) / WASM_PAGE_BYTES);
memory.grow(pages - memory.buffer.byteLength / WASM_PAGE_BYTES);
print(`plan system=${systemBase}+${systemBytes} adapter=${adapterBase}+${adapterBytes} memory_pages=${pages}`);

check(core.regionFormat(systemBase, systemBytes, layout.regionKindSystem), 'regionFormat');
const freePagesAtStart = u32(core.regionFreePages(systemBase));
print(`region kind=system magic=0x${readU32(systemBase + K('REGION_MAGIC_OFFSET')).toString(16).padStart(8, '0')} ` +
  `version=${readU32(systemBase + layout.offsets.regionVersion)} free_pages=${freePagesAtStart}`);

const caps = layout.capNativeGpuFence | layout.capOptimizedNativeFenceInterrupt;
check(core.adapterFormat(adapterBase, adapterBytes, 0, caps, MONITORED_VALUE_STRIDE, systemBase, 0, FENCES, PROCESSES,
  WAIT_BLOCKS, HEAP_ARENA_BYTES, HEAP_LIMIT_CLASS, GPU_VA_PAGES_PER_PROCESS, GPU_VA_BASE, ENGINES,
  QUEUES, RING_ENTRIES, INTERRUPT_LIST_ENTRIES, OUT_WORDS), 'adapterFormat');
check(core.regionCheck(adapterBase, layout.regionKindAdapter), 'regionCheck');
print(`adapter base=${adapterBase} caps=${hex(caps)} out_words=${readU32(adapterBase + K('ADAPTER_OUT_CAPACITY_OFFSET'))}`);

const fence = { id: 0, monitored: UINT64_MAXIMUM };
fence.id = check(core.fenceCreate(PROCESS, layout.fenceKindNative, layout.memorySystem, 0, 0, 0n, 0), 'fenceCreate');
check(core.fenceSetDriverHandle(fence.id, DRIVER_HANDLE), 'fenceSetDriverHandle');
const cv = u32(core.fenceCurrentValueAddress(fence.id));
const cvPage = cv - (cv % layout.pageBytes);
const mapped = u64(core.gpuVaMap(PROCESS, cvPage, layout.gpuVaReadWrite));
if (mapped === 0n) throw new Error('gpuVaMap: no GPU VA left');
const va = mapped + BigInt(cv - cvPage);
print(`fence id=${fence.id} handle=${hex(DRIVER_HANDLE)} cv=${cv} mv=${u32(core.fenceMonitoredValueAddress(fence.id))} ` +
  `current=${u64(core.cpuReadCurrentValue(fence.id))} monitored=${u64(core.cpuReadMonitoredValue(fence.id))} gpu_va=${hex(va)}`);

const queue = check(core.queueCreate(ENGINE, PROCESS), 'queueCreate');
const waitLog = u32(core.logBufferCreate(K('NATIVE_FENCE_LOG_TYPE_WAITS')));
const signalLog = u32(core.logBufferCreate(K('NATIVE_FENCE_LOG_TYPE_SIGNALS')));
if (waitLog === 0 || signalLog === 0) throw new Error('logBufferCreate: system memory is full');
check(core.queueSetLogBuffer(queue, K('NATIVE_FENCE_LOG_TYPE_WAITS'), waitLog), 'queueSetLogBuffer');
check(core.queueSetLogBuffer(queue, K('NATIVE_FENCE_LOG_TYPE_SIGNALS'), signalLog), 'queueSetLogBuffer');
print(`queue id=${queue} engine=${ENGINE} wait_log=${waitLog} signal_log=${signalLog}`);

addWaiter(fence, 1, 5n);
addWaiter(fence, 2, 3n);
const third = addWaiter(fence, 3, 8n);

check(core.queuePush(queue, layout.opSignal, fence.id, 2n, va, USER_HANDLE), 'queuePush');
check(core.queuePush(queue, layout.opSignal, fence.id, 4n, va, USER_HANDLE), 'queuePush');
check(core.queuePush(queue, layout.opWait, fence.id, 4n, va, USER_HANDLE), 'queuePush');
gpuStep(queue, 1000n, fence);
if (gpuStep(queue, 2000n, fence) === layout.stepInterrupt) serviceInterrupt(fence);
gpuStep(queue, 3000n, fence);

const changed = check(core.waiterRetire(waiterRecord[3]), 'waiterRetire');
print(`waiter-remove waiter=3 block=${third} fences=${changed} waiters=${u32(core.fenceWaiterCount(fence.id))}`);
refresh(fence);

check(core.queuePush(queue, layout.opSignal, fence.id, 9n, va, USER_HANDLE), 'queuePush');
if (gpuStep(queue, 4000n, fence) === layout.stepInterrupt) serviceInterrupt(fence);

addWaiter(fence, 4, 6n);
if (core.engineInterruptLine(ENGINE)) serviceInterrupt(fence);
gpuStep(queue, 5000n, fence);

print(`log-flush queue=${queue} flushed=${check(core.logFlush(queue), 'logFlush')}`);
readLog(waitLog, 'waits');
readLog(signalLog, 'signals');

const o = layout.offsets;
print(`counters gpu_signals=${readU64(adapterBase + o.gpuSignals)} cmp_checks=${readU64(adapterBase + o.cmpChecks)} ` +
  `interrupts=${readU64(adapterBase + o.interrupts)} heap_pushes=${readU64(adapterBase + o.heapPushes)} ` +
  `heap_pops=${readU64(adapterBase + o.heapPops)} fences_live=${readU32(adapterBase + o.fenceLive)} ` +
  `wait_blocks_live=${readU32(adapterBase + o.waitBlockLive)} heap_check=${core.heapCheck(fence.id)}`);

check(core.queueSetLogBuffer(queue, K('NATIVE_FENCE_LOG_TYPE_WAITS'), 0), 'queueSetLogBuffer');
check(core.queueSetLogBuffer(queue, K('NATIVE_FENCE_LOG_TYPE_SIGNALS'), 0), 'queueSetLogBuffer');
check(core.logBufferDestroy(waitLog), 'logBufferDestroy');
check(core.logBufferDestroy(signalLog), 'logBufferDestroy');
check(core.queueDestroy(queue), 'queueDestroy');
check(core.gpuVaUnmap(PROCESS, va), 'gpuVaUnmap');
check(core.fenceDestroy(fence.id), 'fenceDestroy');
const freePages = u32(core.regionFreePages(systemBase));
print(`teardown free_pages=${freePages} fences_live=${readU32(adapterBase + o.fenceLive)} all_pages_back=${freePages === freePagesAtStart ? 'yes' : 'no'}`);

process.stdout.write(lines.join('\n') + '\n');
