// The core paths the benchmarks time (bench/run.mjs) must be the product's
// own behaviour: engineRun (the engine running a ring without returning to
// the host) against engineStep one command at a time, and heapBench against
// the heap invariants.
import { describe, it, expect } from 'vitest';
import { coreWaiters } from './core-waiters.js';
import { createMachine, Random, type Machine, type CoreExports } from '../src/index.js';

const UINT64_MAX = 0xffff_ffff_ffff_ffffn;

interface Rig { machine: Machine; core: CoreExports; fences: number[]; vas: bigint[]; queue: number; logs: number[] }

/** A core-level rig: `n` fences mapped in process slot 0 and one hardware queue on engine 0. */
async function rig(n: number, ringEntries = 64): Promise<Rig> {
  const machine = await createMachine({ seed: 5, trace: false, adapters: [{ limits: { fences: n + 4, queues: 2, ringEntries } }] });
  const core = machine.adapter(0).core;
  const L = machine.layout;
  const fences: number[] = [], vas: bigint[] = [];
  for (let i = 0; i < n; i++) {
    const id = core.fenceCreate(0, L.fenceKindNative, L.memorySystem, 0, 0, 0n, 0);
    expect(id).toBeGreaterThan(0);
    core.fenceSetDriverHandle(id, 0x100 + id);
    const cv = core.fenceCurrentValueAddress(id);
    const page = cv - (cv % L.pageBytes);
    fences.push(id);
    vas.push(BigInt.asUintN(64, core.gpuVaMap(0, page, L.gpuVaReadWrite)) + BigInt(cv - page));
  }
  const queue = core.queueCreate(0, 0);
  expect(queue).toBeGreaterThan(0);
  // Its two log buffers, as the OS gives every user-mode-submission queue (LOG-01).
  const logs: number[] = [];
  for (const name of ['NATIVE_FENCE_LOG_TYPE_WAITS', 'NATIVE_FENCE_LOG_TYPE_SIGNALS']) {
    const type = (core[name] as WebAssembly.Global).value as number;
    const page = core.logBufferCreate(type);
    expect(core.queueSetLogBuffer(queue, type, page)).toBe(0);
    logs.push(page);
  }
  return { machine, core, fences, vas, queue, logs };
}

type Op = { op: 'signal' | 'wait' | 'work'; fence: number; value: bigint };

/** The StepReport the core left in the out buffer, read at the offsets the core exports (layout.out.step). */
function stepReport(r: Rig) {
  const at = r.machine.layout.out.step;
  const view = new DataView(r.machine.memory.buffer, r.core.outBufferAddress(), at.bytes);
  return { fence: view.getUint32(at.fence, true), handle: view.getUint32(at.handle, true), value: view.getBigUint64(at.value, true),
    op: view.getUint32(at.op, true), steps: view.getUint32(at.steps, true) };
}

/** The state a run leaves: every fence's CurrentValue, the counters, the queue and the StepReport fields a host reads. */
function snapshot(r: Rig) {
  const L = r.machine.layout;
  const s = r.machine.summary().adapters[0];
  const out = stepReport(r);
  return {
    values: r.fences.map((f) => BigInt.asUintN(64, r.core.cpuReadCurrentValue(f))),
    gpuSignals: s.gpuSignals, cmpChecks: s.cmpChecks, interrupts: s.interruptsRaised,
    pending: r.core.queuePending(r.queue), state: r.core.queueState(r.queue) === L.queueStateBlocked ? 'blocked' : 'ready',
    line: r.core.engineInterruptLine(0),
    lastCommand: [out.fence, out.handle, out.value, out.op],
    // Log pages relative to their own address (the two rigs' pages differ), and the pending entry's slot.
    logs: r.logs.map((page) => [...new Uint8Array(r.machine.memory.buffer, page, r.machine.layout.pageBytes)].join(',')),
    logPending: r.core.logPendingAddress(r.queue) === 0 ? 0 : r.core.logPendingAddress(r.queue) - r.logs[1],
  };
}

function push(r: Rig, ops: Op[]): void {
  const L = r.machine.layout;
  for (const o of ops) {
    const op = o.op === 'signal' ? L.opSignal : o.op === 'wait' ? L.opWait : L.opWork;
    expect(r.core.queuePush(r.queue, op, r.fences[o.fence], o.value, r.vas[o.fence], 0x200 + o.fence)).toBe(0);
  }
}

describe('core engine and heap paths timed by npm run bench', () => {
  it('NF-05 engineRun leaves exactly what engineStep one command at a time leaves (signals with and without a waiter, waits, work, ring wrap)', async () => {
    const random = new Random(11);
    for (let trial = 0; trial < 20; trial++) {
      const ops: Op[] = [];
      const length = 1 + random.below(90);
      for (let i = 0; i < length; i++) {
        const roll = random.below(10);
        ops.push({ op: roll < 7 ? 'signal' : roll < 9 ? 'wait' : 'work', fence: random.below(3), value: BigInt(1 + random.below(40)) });
      }
      const waited = BigInt(random.below(30));
      const a = await rig(3, 64), b = await rig(3, 64);
      for (const r of [a, b]) {
        // A CPU waiter on fence 1 (MonitoredValue = waited - 1 when waited > 0); an offset head so the ring wraps.
        if (waited > 0n) { r.core.cmpWriteMonitoredValue(r.fences[1], waited - 1n); r.core.cmpBarrier(); }
        push(r, Array.from({ length: 40 }, () => ({ op: 'work' as const, fence: 0, value: 1n })));
        while (r.core.queuePending(r.queue) > 0) r.core.engineStep(r.queue, 0n);
        for (let n = 0; n < 10; n++) r.core.engineTakeInterrupt(0);
      }
      push(a, ops.slice(0, 64)); push(b, ops.slice(0, 64));
      const maxSteps = 1 + random.below(80);
      // a: engineStep until it would stop engineRun (anything but STEP_DONE) or maxSteps commands ran.
      const L = a.machine.layout;
      let steps = 0, last = L.stepDone;
      while (steps < maxSteps) {
        last = a.core.engineStep(a.queue, 7n);
        if (last !== L.stepIdle && last >= 0) steps++;
        if (last !== L.stepDone) break;
      }
      const result = b.core.engineRun(b.queue, 7n, maxSteps);
      expect(result).toBe(last);
      expect(stepReport(b).steps).toBe(steps);
      expect(snapshot(b)).toEqual(snapshot(a));
    }
  });

  it('NF-05 engineRun over long runs of signals of one fence (its fast inner loop) leaves exactly what engineStep leaves: interrupts mid-run, ring wrap, a log buffer that wraps', async () => {
    const random = new Random(29);
    for (let trial = 0; trial < 24; trial++) {
      const ops: Op[] = [];
      let fence = random.below(3), value = 0n;
      for (let i = 0; i < 60; i++) {
        if (random.below(10) === 0) fence = random.below(3); // mostly long runs of one fence
        const roll = random.below(20);
        value += 1n;
        ops.push(roll === 0 ? { op: 'work', fence: 0, value: 2n } : roll === 1 ? { op: 'wait', fence, value: 0n } : { op: 'signal', fence, value });
      }
      const waited = BigInt(random.below(60));
      const a = await rig(3, 64), b = await rig(3, 64);
      for (const r of [a, b]) {
        if (waited > 0n) { r.core.cmpWriteMonitoredValue(r.fences[1], waited - 1n); r.core.cmpBarrier(); }
        push(r, Array.from({ length: 20 + random.below(40) }, () => ({ op: 'work' as const, fence: 0, value: 1n })));
        while (r.core.queuePending(r.queue) > 0) r.core.engineStep(r.queue, 0n);
      }
      push(a, ops); push(b, ops);
      const L = a.machine.layout;
      // Run both to the end: a one command at a time, b in engineRun calls (each stops at an interrupt or maxSteps).
      for (let guard = 0; guard < 200 && a.core.queuePending(a.queue) > 0; guard++) {
        const maxSteps = 1 + random.below(70);
        let steps = 0, last = L.stepDone;
        while (steps < maxSteps) {
          last = a.core.engineStep(a.queue, 9n);
          if (last !== L.stepIdle && last >= 0) steps++;
          if (last !== L.stepDone) break;
        }
        const result = b.core.engineRun(b.queue, 9n, maxSteps);
        expect(result).toBe(last);
        expect(stepReport(b).steps).toBe(steps);
        expect(snapshot(b)).toEqual(snapshot(a));
        for (const r of [a, b]) r.core.engineTakeInterrupt(0);
      }
      expect(b.core.queuePending(b.queue)).toBe(0);
    }
  });

  it('LOG-04 engineStep leaves exactly what its exported steps leave, called one by one: a signal is engineSignalWrite, logWriteEntry, logAdvance, engineDrain, cmpSignalCheck; a passing wait logs; a fence write drains and raises', async () => {
    const random = new Random(17);
    const a = await rig(3, 64), b = await rig(3, 64);
    const L = a.machine.layout;
    const g = (r: Rig, name: string) => (r.core[name] as WebAssembly.Global).value as number;
    /** What the two rigs must agree on: memory the steps write, the CMP's counters and the interrupt each engine would deliver. */
    const state = (r: Rig) => {
      const s = r.machine.summary().adapters[0];
      const queue = r.core.engineInterruptQueue(0);
      const count = r.core.engineTakeInterrupt(0);
      const handles = count > 0 ? [...new Uint32Array(r.machine.memory.buffer, r.core.outBufferAddress(), count)] : [];
      return {
        values: r.fences.map((f) => BigInt.asUintN(64, r.core.cpuReadCurrentValue(f))), pendingWrite: r.core.enginePendingWrite(0),
        cmpChecks: s.cmpChecks, interrupts: s.interruptsRaised, interrupt: { queue, count, handles },
        logs: r.logs.map((page) => [...new Uint8Array(r.machine.memory.buffer, page, L.pageBytes)].join(',')),
        logPending: r.core.logPendingAddress(r.queue) === 0 ? 0 : r.core.logPendingAddress(r.queue) - r.logs[1],
      };
    };
    for (const r of [a, b]) { push(r, [{ op: 'work', fence: 0, value: 1n }]); expect(r.core.engineStep(r.queue, 0n)).toBe(L.stepWork); } // engine 0 runs the queue
    let interrupts = 0;
    for (let i = 0; i < 120; i++) {
      const fence = random.below(3), value = BigInt(1 + random.below(50)), nowNs = BigInt(10 * i);
      if (random.below(4) === 0) {
        const monitored = BigInt(random.below(50)); // a CPU waiter for monitored + 1
        for (const r of [a, b]) { r.core.cmpWriteMonitoredValue(r.fences[fence], monitored); r.core.cmpBarrier(); }
      }
      const kind = (['signal', 'signal', 'wait', 'fenceWrite'] as const)[random.below(4)];
      const current = BigInt.asUintN(64, a.core.cpuReadCurrentValue(a.fences[fence]));
      if (kind === 'wait' && value > current) continue; // a wait that passes at once (a blocked one is queueRecheckAt's)
      const op = kind === 'signal' ? L.opSignal : kind === 'wait' ? L.opWait : L.opFenceWrite;
      expect(a.core.queuePush(a.queue, op, a.fences[fence], value, a.vas[fence], 0x200 + fence)).toBe(0);
      const result = a.core.engineStep(a.queue, nowNs);
      // b: the same command, step by step, through the exports themselves
      const bq = b.queue, bf = b.fences[fence], handle = 0x200 + fence;
      let expected: number;
      if (kind === 'wait') {
        expect(b.core.logWriteEntry(bq, g(b, 'NATIVE_FENCE_LOG_TYPE_WAITS'), handle, value, g(b, 'NATIVE_FENCE_LOG_OPERATION_WAIT_UNBLOCKED'), nowNs, nowNs)).toBeGreaterThanOrEqual(0);
        expect(b.core.logAdvance(bq, g(b, 'NATIVE_FENCE_LOG_TYPE_WAITS'))).toBeGreaterThanOrEqual(0);
        expected = L.stepDone;
      } else if (kind === 'fenceWrite') {
        expect(b.core.engineSignalWrite(0, 0, b.vas[fence], value)).toBe(0);
        expect(b.core.engineDrain(0)).toBe(1);
        expect(b.core.engineRaiseMonitoredFenceInterrupt(0, bf)).toBe(1);
        expected = L.stepMonitoredInterrupt;
      } else {
        expect(b.core.engineSignalWrite(0, 0, b.vas[fence], value)).toBe(0);
        expect(b.core.logWriteEntry(bq, g(b, 'NATIVE_FENCE_LOG_TYPE_SIGNALS'), handle, value, g(b, 'NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED'), 0n, nowNs)).toBeGreaterThanOrEqual(0);
        expect(b.core.logAdvance(bq, g(b, 'NATIVE_FENCE_LOG_TYPE_SIGNALS'))).toBeGreaterThanOrEqual(0);
        expect(b.core.engineDrain(0)).toBe(1);
        expected = b.core.cmpSignalCheck(0, bf, value) === 1 ? L.stepInterrupt : L.stepDone;
      }
      expect(result, `${kind} ${value}`).toBe(expected);
      if (result === L.stepInterrupt || result === L.stepMonitoredInterrupt) interrupts++;
      if (random.below(3) === 0) expect(state(b)).toEqual(state(a)); // sometimes collapse several raises into one interrupt first
    }
    expect(state(b)).toEqual(state(a));
    expect(interrupts).toBeGreaterThan(10);
  });

  it('LOG-04 a command run (engineRun) leaves linear memory byte for byte as the same commands stepped one core export at a time, as the race explorer steps a signal: log wraparound, rewinds, interrupts, waits, work', async () => {
    // The run keeps its state in locals (translation, fence record, the log's header word and write buffer, counters);
    // the explorer's path (src/gpu/hardware.ts, granularity 'step') calls engineStepBegin, then logWriteEntry,
    // logAdvance, engineDrain and cmpSignalCheck one by one. Both must leave every byte of memory the same.
    const random = new Random(2029);
    const a = await rig(3, 64), b = await rig(3, 64); // a: stepped; b: engineRun
    const L = a.machine.layout;
    const g = (r: Rig, name: string) => (r.core[name] as WebAssembly.Global).value as number;
    const signals = g(a, 'NATIVE_FENCE_LOG_TYPE_SIGNALS'), executed = g(a, 'NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED');
    /** One command of `a` the explorer's way; its STEP_* result (a signal: STEP_INTERRUPT or STEP_DONE). */
    const stepOne = (nowNs: bigint): number => {
      const begun = a.core.engineStepBegin(a.queue, nowNs);
      if (begun !== L.stepSignalWritten) return begun;
      const report = stepReport(a);
      if (a.core.logWriteEntry(a.queue, signals, report.handle, report.value, executed, 0n, nowNs) >= 0) a.core.logAdvance(a.queue, signals);
      a.core.engineDrain(0);
      return a.core.cmpSignalCheck(0, report.fence, report.value) === 1 ? L.stepInterrupt : L.stepDone;
    };
    const memory = (r: Rig) => Buffer.from(r.machine.memory.buffer);
    const kinds = { signal: 0, rewind: 0, interrupt: 0, wait: 0, work: 0, wraps: 0 };
    let value = [0n, 0n, 0n];
    for (let round = 0; round < 40; round++) {
      if (random.below(2) === 0) { // a CPU waiter on one fence (its MonitoredValue: a later signal past it interrupts), or none left
        const fence = random.below(3), monitored = random.below(2) === 0 ? value[fence] + BigInt(random.below(30)) : UINT64_MAX;
        for (const r of [a, b]) { r.core.cmpWriteMonitoredValue(r.fences[fence], monitored); r.core.cmpBarrier(); }
      }
      const ops: Op[] = [];
      let fence = random.below(3);
      for (let i = 0, n = 1 + random.below(60); i < n; i++) {
        if (random.below(6) === 0) fence = random.below(3); // runs of one fence, and changes
        const roll = random.below(24);
        if (roll === 0) { ops.push({ op: 'work', fence: 0, value: BigInt(1 + random.below(5)) }); kinds.work++; continue; }
        if (roll === 1) { ops.push({ op: 'wait', fence, value: value[fence] }); kinds.wait++; continue; } // passes: no signal lowers it before
        const rewind = roll === 2 && value[fence] > 3n;
        value[fence] = rewind ? value[fence] - 3n : value[fence] + 1n;
        ops.push({ op: 'signal', fence, value: value[fence] });
        kinds[rewind ? 'rewind' : 'signal']++;
      }
      // A wait only passes when every signal before it left the value at least as high: keep those, turn the rest into work.
      const seen = [0n, 0n, 0n].map((_, f) => BigInt.asUintN(64, a.core.cpuReadCurrentValue(a.fences[f])));
      for (const o of ops) {
        if (o.op === 'signal') seen[o.fence] = o.value;
        else if (o.op === 'wait' && o.value > seen[o.fence]) { o.op = 'work'; o.value = 1n; }
      }
      push(a, ops); push(b, ops);
      const nowNs = BigInt(100 * round);
      for (let guard = 0; a.core.queuePending(a.queue) > 0; guard++) {
        if (guard > 500) throw new Error(`round ${round}: stuck, pending ${a.core.queuePending(a.queue)} state ${a.core.queueState(a.queue)}`);
        const maxSteps = 1 + random.below(40);
        let steps = 0, last = L.stepDone;
        while (steps < maxSteps && a.core.queuePending(a.queue) > 0) {
          last = stepOne(nowNs);
          expect(last).toBeGreaterThanOrEqual(0);
          steps++;
          if (last !== L.stepDone) break; // engineRun stops there too (work, an interrupt, a blocked wait)
        }
        if (last === L.stepDone && steps < maxSteps && a.core.queuePending(a.queue) === 0) last = L.stepIdle; // the ring ran empty first
        const result = b.core.engineRun(b.queue, nowNs, maxSteps);
        expect(result).toBe(last);
        expect(stepReport(b).steps).toBe(steps);
        if (result === L.stepInterrupt) kinds.interrupt++;
        // The StepReport's `steps` is engineRun's alone; every other byte of memory must match.
        new DataView(a.machine.memory.buffer).setUint32(a.core.outBufferAddress() + L.out.step.steps, steps, true);
        const [ma, mb] = [memory(a), memory(b)];
        if (!ma.equals(mb)) expect(ma.findIndex((byte, i) => byte !== mb[i]), `round ${round}: the first byte that differs`).toBe(-1);
        if (random.below(2) === 0) for (const r of [a, b]) r.core.engineTakeInterrupt(0);
      }
    }
    kinds.wraps = Number(a.core.logHeaderWord(a.logs[1]) >> 32n);
    // The mix the test promises: every kind of command, interrupts, and the signal log wrapped more than once.
    for (const [kind, count] of Object.entries(kinds)) expect(count, kind).toBeGreaterThan(1);
  });

  it('NF-05 engineRun over a ring of signals of a fence with no CPU waiter raises no interrupt and leaves the last value', async () => {
    const r = await rig(1, 1000);
    const L = r.machine.layout;
    push(r, Array.from({ length: 1000 }, (_, i) => ({ op: 'signal' as const, fence: 0, value: BigInt(i + 1) })));
    expect(r.core.engineRun(r.queue, 0n, 1000)).toBe(L.stepDone);
    expect(snapshot(r)).toMatchObject({ values: [1000n], gpuSignals: 1000, interrupts: 0, pending: 0, line: 0 });
    expect(BigInt.asUintN(64, r.core.cpuReadMonitoredValue(r.fences[0]))).toBe(UINT64_MAX);
    expect(r.core.engineRun(r.queue, 0n, 10)).toBe(L.stepIdle);
  });

  it('NF-03 heapBench pushes seeded values through waitBlockAdd and pops them in order, leaving the heap empty and every wait block free', async () => {
    const count = 5000;
    const machine = await createMachine({ seed: 3, trace: false, adapters: [{ limits: { waitBlocks: count, waitersPerFence: count } }] });
    const core = machine.adapter(0).core;
    const L = machine.layout;
    const fence = core.fenceCreate(0, L.fenceKindNative, L.memorySystem, 0, 0, 0n, 0);
    const pages: number[] = [];
    for (let i = 0; i < Math.ceil(count * 8 / L.pageBytes); i++) pages.push(core.regionAllocPage(machine.systemBase) >>> 0);
    pages.sort((x, y) => x - y);
    pages.forEach((p, i) => expect(p).toBe(pages[0] + i * L.pageBytes));
    const random = new Random(9);
    const values = new BigUint64Array(machine.memory.buffer, pages[0], count);
    for (let i = 0; i < count; i++) values[i] = random.nextU64() % 1000n; // many equal values: ties by arrival
    let expected = 0n;
    for (const v of [...values].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))) expected = BigInt.asUintN(64, expected * 31n + v);
    expect(BigInt.asUintN(64, core.heapBench(fence, pages[0], count))).toBe(expected);
    expect(core.fenceWaiterCount(fence)).toBe(0);
    expect(core.heapCheck(fence)).toBe(0);
    expect(new DataView(machine.memory.buffer).getUint32(machine.adapters[0].privateBase + L.offsets.waitBlockLive, true)).toBe(0);
    // The same fence takes ordinary waiters afterwards.
    expect(coreWaiters(machine, core).add(fence, 5n, 1)).toBeGreaterThan(0);
    expect(core.fenceMinWaited(fence)).toBe(5n);
  });

  it('NF-03 the core heap keeps its invariants through random adds, retires and satisfies; pops come smallest first, ties in arrival order', async () => {
    const machine = await createMachine({ seed: 3, trace: false, adapters: [{ limits: { waitBlocks: 4096, waitersPerFence: 4096 } }] });
    const core = machine.adapter(0).core;
    const L = machine.layout;
    const fence = core.fenceCreate(0, L.fenceKindNative, L.memorySystem, 0, 0, 0n, 0);
    const random = new Random(21);
    const waiters = coreWaiters(machine, core);
    const live = new Map<number, { value: bigint; waiter: number }>(); // wait block → entry
    let nextWaiter = 1;
    for (let op = 0; op < 6000; op++) {
      const roll = random.below(10);
      if (roll < 6 || live.size === 0) {
        const value = BigInt(random.below(200));
        const block = waiters.add(fence, value, nextWaiter);
        expect(block).toBeGreaterThan(0);
        live.set(block, { value, waiter: nextWaiter++ });
      } else if (roll < 8) {
        const blocks = [...live.keys()].sort((x, y) => x - y);
        const block = blocks[random.below(blocks.length)];
        expect(waiters.remove(block)).toBe(1); // its block left the fence's heap
        live.delete(block);
      } else {
        const current = BigInt(random.below(200));
        const n = core.fenceSatisfy(fence, current, 8);
        const at = L.out.satisfied;
        const view = new DataView(machine.memory.buffer.slice(core.outBufferAddress(), core.outBufferAddress() + n * at.bytes));
        const out = Array.from({ length: n }, (_, i) => [view.getUint32(i * at.bytes + at.waiter, true), view.getUint32(i * at.bytes + at.entry, true), view.getUint32(i * at.bytes + at.completed, true)]);
        const expected = [...live.entries()].filter(([, e]) => e.value <= current)
          .sort(([, x], [, y]) => (x.value < y.value ? -1 : x.value > y.value ? 1 : x.waiter - y.waiter)).slice(0, 8);
        expect(n).toBe(expected.length);
        for (let i = 0; i < n; i++) {
          // Each waiter names one fence: its entry 0 completes it; the OS would retire it now.
          expect(out[i]).toEqual([expected[i][1].waiter, 0, 1]);
          expect(core.waiterRetire(waiters.recordOf(expected[i][0]))).toBe(0); // popped already: no heap changed
          live.delete(expected[i][0]);
        }
      }
      expect(core.heapCheck(fence)).toBe(0);
      expect(core.fenceWaiterCount(fence)).toBe(live.size);
      const min = [...live.values()].reduce((m, e) => (e.value < m ? e.value : m), UINT64_MAX);
      expect(BigInt.asUintN(64, core.fenceMinWaited(fence))).toBe(min);
    }
  });
});
