// Loading the one compiled core module and instantiating it per adapter.
//
// Every adapter is its own instance of the same WebAssembly.Module over the
// machine's one shared WebAssembly.Memory. The core's exports are plain
// numbers; this file only types them and reads the layout constants the core
// exports, so the host never retypes a size or an offset.

import { coreWasmBase64 } from '../generated/core-wasm.js';

// The WebAssembly objects the public types name, as structural types of their
// own: a TypeScript consumer compiling for Node alone (lib "es2022" and
// @types/node) has no `WebAssembly` namespace (it is in the DOM lib), and the
// package's declarations must compile there too. The real objects fit them.
/** A WebAssembly.Memory (a machine's is shared: `buffer` is then a SharedArrayBuffer). */
export interface WasmMemory { readonly buffer: ArrayBuffer; grow(delta: number): number }
/** A compiled WebAssembly.Module (opaque: pass it back to instantiateCore). */
export type WasmModule = object;
/** An exported immutable WebAssembly.Global: the core's layout constants are i32 numbers. */
export interface WasmGlobal { readonly value: number }

/** The core's exports, as the host calls them (u64 crosses as bigint). */
export interface CoreExports {
  // layout constants (immutable globals)
  PAGE_BYTES: WasmGlobal; STATIC_RESERVED_BYTES: WasmGlobal; REGION_MAGIC: WasmGlobal;
  LAYOUT_VERSION: WasmGlobal; REGION_KIND_SYSTEM: WasmGlobal; REGION_KIND_LOCAL: WasmGlobal;
  REGION_KIND_ADAPTER: WasmGlobal; REGION_HEADER_BYTES: WasmGlobal; ADAPTER_HEADER_BYTES: WasmGlobal;
  FENCE_RECORD_BYTES: WasmGlobal; PAGE_DESCRIPTOR_BYTES: WasmGlobal; WAIT_BLOCK_BYTES: WasmGlobal;
  HEAP_ENTRY_BYTES: WasmGlobal; COMMAND_BYTES: WasmGlobal; HEAP_MIN_CLASS: WasmGlobal;
  HEAP_MAX_CLASS: WasmGlobal; FENCE_KIND_NATIVE: WasmGlobal; FENCE_KIND_MONITORED: WasmGlobal;
  MEMORY_SYSTEM: WasmGlobal; MEMORY_LOCAL: WasmGlobal;
  OP_NOP: WasmGlobal; OP_WAIT: WasmGlobal; OP_SIGNAL: WasmGlobal; OP_WORK: WasmGlobal;
  OP_FENCE_WRITE: WasmGlobal; QUEUE_STATE_READY: WasmGlobal; QUEUE_STATE_BLOCKED: WasmGlobal;
  STEP_IDLE: WasmGlobal; STEP_DONE: WasmGlobal; STEP_BLOCKED: WasmGlobal; STEP_WORK: WasmGlobal;
  STEP_INTERRUPT: WasmGlobal; STEP_UNBLOCKED: WasmGlobal; STEP_MONITORED_INTERRUPT: WasmGlobal; STEP_SIGNAL_WRITTEN: WasmGlobal;
  CAP_NO_64BIT_ATOMICS: WasmGlobal; CAP_NATIVE_GPU_FENCE: WasmGlobal;
  CAP_OPTIMIZED_NATIVE_FENCE_INTERRUPT: WasmGlobal;
  GPU_VA_READ: WasmGlobal; GPU_VA_READ_WRITE: WasmGlobal;
  ADAPTER_GPU_SIGNALS_OFFSET: WasmGlobal; ADAPTER_CMP_CHECKS_OFFSET: WasmGlobal;
  ADAPTER_INTERRUPTS_OFFSET: WasmGlobal; ADAPTER_HEAP_PUSHES_OFFSET: WasmGlobal;
  ADAPTER_HEAP_POPS_OFFSET: WasmGlobal; ADAPTER_FENCE_LIVE_OFFSET: WasmGlobal;
  ADAPTER_PAGE_LIVE_OFFSET: WasmGlobal; ADAPTER_WAIT_BLOCK_LIVE_OFFSET: WasmGlobal;
  REGION_FREE_PAGES_OFFSET: WasmGlobal; REGION_SIZE_OFFSET: WasmGlobal;
  REGION_VERSION_OFFSET: WasmGlobal; REGION_KIND_OFFSET: WasmGlobal;
  ABI_VERSION: WasmGlobal; REGION_MAGIC_OFFSET: WasmGlobal;
  STEP_REPORT_BYTES: WasmGlobal; STEP_REPORT_WORK_DURATION_OFFSET: WasmGlobal;
  STEP_REPORT_FENCE_OFFSET: WasmGlobal; STEP_REPORT_HANDLE_OFFSET: WasmGlobal;
  STEP_REPORT_VALUE_OFFSET: WasmGlobal; STEP_REPORT_STEPS_OFFSET: WasmGlobal;
  STEP_REPORT_OP_OFFSET: WasmGlobal; STEP_REPORT_DOORBELL_POSTED_OFFSET: WasmGlobal;
  STEP_REPORT_DOORBELL_FULL_OFFSET: WasmGlobal; STEP_REPORT_OBSERVED_OFFSET: WasmGlobal;
  INTERRUPT_HANDLE_BYTES: WasmGlobal; SATISFIED_WAIT_BYTES: WasmGlobal;
  SATISFIED_WAIT_WAITER_OFFSET: WasmGlobal; SATISFIED_WAIT_ENTRY_OFFSET: WasmGlobal; SATISFIED_WAIT_COMPLETED_OFFSET: WasmGlobal;
  WAITER_RECORD_BYTES: WasmGlobal; WAIT_PAIR_BYTES: WasmGlobal; WAITER_MODE_ALL: WasmGlobal; WAITER_MODE_ANY: WasmGlobal; WAITER_MAX_ENTRIES: WasmGlobal;
  TAKEN_DOORBELL_RECORD_BYTES: WasmGlobal; TAKEN_DOORBELL_WORD_OFFSET: WasmGlobal;
  TAKEN_DOORBELL_SOURCE_OFFSET: WasmGlobal; TAKEN_DOORBELL_VALUE_OFFSET: WasmGlobal;
  ADAPTER_FENCE_TABLE_OFFSET: WasmGlobal; ADAPTER_FENCE_CAPACITY_OFFSET: WasmGlobal; FENCE_STATE_OFFSET: WasmGlobal;
  FENCE_CURRENT_VALUE_OFFSET: WasmGlobal; FENCE_DRIVER_HANDLE_OFFSET: WasmGlobal; FENCE_STATE_LIVE: WasmGlobal;
  [name: string]: unknown;

  regionFormat(base: number, sizeBytes: number, kind: number): number;
  regionCheck(base: number, kind: number): number;
  regionAllocPage(base: number): number;
  regionFreePage(base: number, phys: number): number;
  regionFreePages(base: number): number;
  adapterRegionBytes(fences: number, processes: number, waitBlocks: number, heapArenaBytes: number,
    gpuVaPagesPerProcess: number, engines: number, queues: number, ringEntries: number,
    pendingCapacity: number, outCapacity: number): number;
  arenaBlockBytes(count: number, bytesEach: number): number;
  adapterFormat(base: number, sizeBytes: number, adapterIndex: number, capsBits: number, monitoredValueStride: number,
    systemRegion: number, localRegion: number, fences: number, processes: number, waitBlocks: number,
    heapArenaBytes: number, heapLimitClass: number, gpuVaPagesPerProcess: number, gpuVaBase: bigint,
    engines: number, queues: number, ringEntries: number, pendingCapacity: number, outCapacity: number): number;
  adapterAttach(base: number): number;
  adapterBaseAddress(): number;
  outBufferAddress(): number;
  staticDataEnd(): number;
  gpuVaMap(slot: number, phys: number, access: number): bigint;
  gpuVaUnmap(slot: number, va: bigint): number;
  gpuVaTranslate(slot: number, va: bigint): number;
  gpuVaAccess(slot: number, va: bigint): number;
  fenceCreate(owner: number, kind: number, memoryKind: number, shareable: number, flags: number,
    initialValue: bigint, cvPhys: number): number;
  fenceDestroy(fence: number): number;
  /** The live fence of this adapter whose CurrentValue word is at `cvPhys` (how a driver finds its record from an address); E_BAD_FENCE when none. */
  fenceAtCurrentValue(cvPhys: number): number;
  fenceIsLive(fence: number): number;
  fenceCurrentValueAddress(fence: number): number;
  fenceMonitoredValueAddress(fence: number): number;
  fenceSetDriverHandle(fence: number, handle: number): number;
  fenceDriverHandle(fence: number): number;
  fenceLastSignaled(fence: number): bigint;
  fenceSetLastSignaled(fence: number, value: bigint): void;
  /** A CPU waiter homed on this adapter (mode WAITER_MODE_ALL / _ANY): its record's physical address. */
  waiterCreate(hostId: number, mode: number): number;
  /** Entry `entry` of `waiter` (a record address from any adapter's waiterCreate): a wait block on `fence` for `value`. */
  waitBlockAdd(fence: number, value: bigint, waiter: number, entry: number): number;
  fenceSatisfy(fence: number, currentValue: bigint, limit: number): number;
  /** Retires `waiter`'s blocks on this adapter (and its record, when homed here); fence ids whose heaps changed in the out buffer. */
  waiterRetire(waiter: number): number;
  /** Entries of `waiter` still waiting, in the out buffer. */
  waiterPending(waiter: number): number;
  /** Host ids of the waiters in `fence`'s heap, entries [start, start + limit). */
  fenceWaiters(fence: number, start: number, limit: number): number;
  fenceMinWaited(fence: number): bigint;
  fenceMonitoredTarget(fence: number): bigint;
  fenceWaiterCount(fence: number): number;
  heapCheck(fence: number): number;
  heapBench(fence: number, values: number, count: number): bigint;
  queueCreate(engine: number, owner: number): number;
  queueDestroy(queue: number): number;
  queuePush(queue: number, op: number, fence: number, value: bigint, gpuVa: bigint, handle: number): number;
  queuePending(queue: number): number;
  queueState(queue: number): number;
  queueEngine(queue: number): number;
  queueBlockedFence(queue: number): number;
  queueBlockedValue(queue: number): bigint;
  queueBlockedSince(queue: number): bigint;
  queueHeadOp(queue: number): number;
  queueHeadValue(queue: number): bigint;
  queueHeadFence(queue: number): number;
  queueHeadHandle(queue: number): number;
  engineSignalWrite(engine: number, slot: number, gpuVa: bigint, value: bigint): number;
  engineDrain(engine: number): number;
  enginePendingWrite(engine: number): number;
  cmpSignalCheck(engine: number, fence: number, value: bigint): number;
  engineDoorbellPost(engine: number, fence: number, value: bigint): number;
  engineRaiseMonitoredFenceInterrupt(engine: number, fence: number): number;
  // DxgkDdiUpdateMonitoredValues for one fence, step by step (NF-11)
  cmpWriteMonitoredValue(fence: number, monitored: bigint): number;
  cmpBarrier(): number;
  cmpPendingWrite(): number;
  cmpReadCurrentValue(fence: number): bigint;
  cmpMonitoredValueCheck(engine: number, fence: number, currentValue: bigint): number;
  engineTakeInterrupt(engine: number): number;
  engineInterruptLine(engine: number): number;
  engineStep(queue: number, nowNs: bigint): number;
  engineStepBegin(queue: number, nowNs: bigint): number;
  cmpPendingValue(): bigint;
  engineRecordAddress(engine: number): number;
  queueRecordAddress(queue: number): number;
  engineRun(queue: number, nowNs: bigint, maxSteps: number): number;
  /** The UMD's ring write of `count` Command records staged at the out buffer's start (docs/ABI.md). */
  queuePushStaged(queue: number, count: number, slot: number): number;
  /** The simulator's stretch of commands that need no host (docs/ABI.md): its StretchRecord at out.stretch. */
  engineRunStretch(queue: number, maxSteps: number): number;
  queueRecheck(queue: number): number;
  cpuWriteCurrentValue(fence: number, value: bigint): number;
  cpuReadCurrentValue(fence: number): bigint;
  cpuReadMonitoredValue(fence: number): bigint;
  bareSignalLoop(cv: number, mv: number, count: number): number;
  engineInterruptQueue(engine: number): number;
  queueRecheckAt(queue: number, nowNs: bigint): number;
  // native fence log buffers (assembly/log.ts)
  logFormat(phys: number, type: number): number;
  logBufferCreate(type: number): number;
  logBufferDestroy(phys: number): number;
  logCheck(phys: number, type: number): number;
  logHeaderWord(phys: number): bigint;
  queueSetLogBuffer(queue: number, type: number, phys: number): number;
  queueLogBuffer(queue: number, type: number): number;
  logFlush(queue: number): number;
  logPendingAddress(queue: number): number;
  logWriteEntry(queue: number, type: number, handle: number, value: bigint, operation: number, observedNs: bigint, endNs: bigint): number;
  logAdvance(queue: number, type: number): number;
  logRecord(queue: number, type: number, handle: number, value: bigint, operation: number, observedNs: bigint, endNs: bigint): number;
  // cross-adapter doorbell (XA-07) and CPU waits on the fence word (worker mode)
  fenceFlags(fence: number): number;
  doorbellRegionBytes(adapterCount: number, capacity: number): number;
  doorbellFormat(base: number, sizeBytes: number, adapterCount: number, capacity: number): number;
  doorbellCheck(base: number): number;
  adapterSetDoorbell(base: number): number;
  doorbellPost(base: number, target: number, source: number, cvPhys: number, value: bigint): number;
  doorbellTake(limit: number): number;
  doorbellPending(base: number, index: number): number;
  doorbellCounter(base: number, index: number, which: number): bigint;
  doorbellAdapterCount(base: number): number;
  doorbellWait(base: number, index: number, timeoutNs: bigint): number;
  fenceWordSignal(cvPhys: number, value: bigint): bigint;
  fenceWordWait(cvPhys: number, value: bigint, timeoutNs: bigint): number;
  fenceWordReached(cvPhys: number, value: bigint): number;
  fenceCpuSignal(fence: number, value: bigint): number;
}

// ── typed views: who may call what ──
//
// One core instance per adapter serves two sides of the seam. The OS keeps
// OS memory through it (fence storage, the CPU-waiter heaps, GPU VA maps, log
// buffers it allocates and reads, pages for allocations); the driver and the
// simulated GPU run the engines, the CMP, the rings and the doorbell through
// it. Each side holds the instance typed as its view, which names only its
// exports, so the boundary is checked by the types (an OS module cannot name
// engineStep) and by test/boundary.test.ts (no OS source calls a GPU-only
// export, and the view lists are what the test reads). The view is the
// instance itself, not a copy: V8 calls a wasm export through the instance's
// exports object about 25 ns faster per CPU signal than through a copied object
// (measured with the bench's signal loop), and the OS calls the core on every
// signal and wait. The composition root (src/machine/machine.ts) keeps the whole
// instance to format memory.

/** The exports the OS may call: OS memory (fence storage, waiter heaps, VA maps, log buffers it owns, pages). */
export const OS_CORE_EXPORTS = [
  'outBufferAddress', 'regionAllocPage', 'regionFreePage', 'regionFreePages',
  'gpuVaMap', 'gpuVaUnmap',
  'fenceCreate', 'fenceDestroy', 'fenceIsLive', 'fenceCurrentValueAddress', 'fenceMonitoredValueAddress', 'fenceFlags',
  'fenceLastSignaled', 'fenceSetLastSignaled', 'cpuReadCurrentValue', 'cpuReadMonitoredValue', 'cpuWriteCurrentValue',
  'waiterCreate', 'waitBlockAdd', 'fenceSatisfy', 'waiterRetire', 'waiterPending', 'fenceWaiters',
  'fenceMinWaited', 'fenceMonitoredTarget', 'fenceWaiterCount', 'heapCheck',
  'logBufferCreate', 'logBufferDestroy', 'logCheck', 'logHeaderWord',
] as const;

/**
 * The exports the driver and the simulated GPU call: engines, the CMP, rings, the GPU's log
 * writes, interrupt lists, the doorbell, and finding a fence by the address the driver was given.
 */
export const GPU_CORE_EXPORTS = [
  'outBufferAddress', 'adapterBaseAddress', 'gpuVaTranslate',
  'fenceAtCurrentValue', 'fenceIsLive', 'fenceFlags', 'fenceSetDriverHandle', 'fenceDriverHandle', 'fenceCurrentValueAddress',
  'cpuReadCurrentValue', 'cpuReadMonitoredValue', 'cpuWriteCurrentValue',
  'queueCreate', 'queueDestroy', 'queuePush', 'queuePushStaged', 'queuePending', 'queueState', 'queueEngine', 'queueBlockedFence',
  'queueBlockedValue', 'queueBlockedSince', 'queueHeadOp', 'queueHeadValue', 'queueHeadFence', 'queueHeadHandle',
  'engineSignalWrite', 'engineDrain', 'enginePendingWrite', 'cmpSignalCheck', 'engineDoorbellPost', 'engineRaiseMonitoredFenceInterrupt',
  'cmpWriteMonitoredValue', 'cmpBarrier', 'cmpPendingWrite', 'cmpPendingValue', 'cmpReadCurrentValue', 'cmpMonitoredValueCheck',
  'engineTakeInterrupt', 'engineInterruptLine', 'engineInterruptQueue', 'engineStep', 'engineStepBegin', 'engineRun', 'engineRunStretch', 'queueRecheck', 'queueRecheckAt',
  'queueSetLogBuffer', 'queueLogBuffer', 'logFlush', 'logPendingAddress', 'logWriteEntry', 'logAdvance', 'logRecord',
  'doorbellTake', 'doorbellPending', 'doorbellCounter',
] as const;

/** The OS's view of an adapter's core instance. */
export type OsCore = Readonly<Pick<CoreExports, typeof OS_CORE_EXPORTS[number]>>;
/** The driver's and the simulated GPU's view of an adapter's core instance. */
export type GpuCore = Readonly<Pick<CoreExports, typeof GPU_CORE_EXPORTS[number]>>;

function view<K extends keyof CoreExports>(core: CoreExports, names: readonly K[]): Readonly<Pick<CoreExports, K>> {
  for (const name of names) if (typeof core[name] !== 'function') throw new Error(`core view: the core exports no function "${String(name)}"`);
  return core as Readonly<Pick<CoreExports, K>>;
}

/** `core` as the OS sees it: its OS memory exports (checked present), typed so nothing else can be named. */
export function osCoreView(core: CoreExports): OsCore { return view(core, OS_CORE_EXPORTS); }
/** `core` as the driver and the simulated GPU see it. */
export function gpuCoreView(core: CoreExports): GpuCore { return view(core, GPU_CORE_EXPORTS); }

/** Layout of DXGK_NATIVE_FENCE_LOG_HEADER / _ENTRY as the core was built with (assembly/log.ts). */
export interface NativeFenceLogLayout {
  typeWaits: number; typeSignals: number; operationSignalExecuted: number; operationWaitUnblocked: number;
  headerBytes: number; entryBytes: number; entries: number;
  indexOffset: number; typeOffset: number; countOffset: number;
  entryValueOffset: number; entryHandleOffset: number; entryOperationOffset: number;
  entryObservedOffset: number; entryEndOffset: number;
}

export function readLogLayout(core: CoreExports): NativeFenceLogLayout {
  const g = (name: string) => (core[name] as WebAssembly.Global).value as number;
  return {
    typeWaits: g('NATIVE_FENCE_LOG_TYPE_WAITS'), typeSignals: g('NATIVE_FENCE_LOG_TYPE_SIGNALS'),
    operationSignalExecuted: g('NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED'),
    operationWaitUnblocked: g('NATIVE_FENCE_LOG_OPERATION_WAIT_UNBLOCKED'),
    headerBytes: g('NATIVE_FENCE_LOG_HEADER_BYTES'), entryBytes: g('NATIVE_FENCE_LOG_ENTRY_BYTES'), entries: g('NATIVE_FENCE_LOG_ENTRIES'),
    indexOffset: g('NATIVE_FENCE_LOG_INDEX_OFFSET'), typeOffset: g('NATIVE_FENCE_LOG_TYPE_OFFSET'), countOffset: g('NATIVE_FENCE_LOG_COUNT_OFFSET'),
    entryValueOffset: g('NATIVE_FENCE_LOG_ENTRY_VALUE_OFFSET'), entryHandleOffset: g('NATIVE_FENCE_LOG_ENTRY_HANDLE_OFFSET'),
    entryOperationOffset: g('NATIVE_FENCE_LOG_ENTRY_OPERATION_OFFSET'), entryObservedOffset: g('NATIVE_FENCE_LOG_ENTRY_OBSERVED_OFFSET'),
    entryEndOffset: g('NATIVE_FENCE_LOG_ENTRY_END_OFFSET'),
  };
}

/**
 * The core ABI version this host is written for (docs/ABI.md): readLayout
 * refuses a core that exports another ABI_VERSION.
 */
export const CORE_ABI_VERSION = 10;

/** The core's layout constants, read once from its exports. */
export interface CoreLayout {
  abiVersion: number;
  pageBytes: number; staticReservedBytes: number; regionMagic: number; layoutVersion: number;
  regionKindSystem: number; regionKindLocal: number; regionKindAdapter: number;
  regionHeaderBytes: number; adapterHeaderBytes: number; fenceRecordBytes: number;
  pageDescriptorBytes: number; waitBlockBytes: number; heapEntryBytes: number; commandBytes: number;
  heapMinClass: number; heapMaxClass: number; arenaUnitBytes: number; arenaMaxClass: number;
  fenceKindNative: number; fenceKindMonitored: number; memorySystem: number; memoryLocal: number;
  opNop: number; opWait: number; opSignal: number; opWork: number; opFenceWrite: number;
  queueStateFree: number; queueStateReady: number; queueStateBlocked: number;
  stepIdle: number; stepDone: number; stepBlocked: number; stepWork: number; stepInterrupt: number;
  stepUnblocked: number; stepMonitoredInterrupt: number; stepSignalWritten: number;
  capNo64BitAtomics: number; capNativeGpuFence: number; capOptimizedNativeFenceInterrupt: number;
  /** gpuVaMap's access rights: the GPU reads the page, or reads and writes it (NF-04: MonitoredValue is read-only to the GPU). */
  gpuVaRead: number; gpuVaReadWrite: number;
  /** waiterCreate's modes, and the most fences one wait names. */
  waiterModeAll: number; waiterModeAny: number; waiterMaxEntries: number;
  /** DXGK_NATIVE_FENCE_LOG_HEADER / _ENTRY (assembly/log.ts). */
  log: NativeFenceLogLayout;
  offsets: {
    gpuSignals: number; cmpChecks: number; interrupts: number; heapPushes: number; heapPops: number;
    fenceLive: number; pageLive: number; waitBlockLive: number;
    /** From the adapter's base: the out buffer's address and capacity in u32 words. */
    outBuffer: number; outCapacity: number;
    /** From engineRecordAddress(engine): the engine's statistics (u64). */
    engineSignals: number; engineInterrupts: number;
    /** From queueRecordAddress(queue): the queue's log write buffer. */
    queueLogPending: number; queueLogPendingBytes: number;
    regionMagic: number; regionFreePages: number; regionSize: number; regionVersion: number; regionKind: number;
    /** From the adapter's base: the fence table's address and its capacity (u32 each). */
    fenceTable: number; fenceCapacity: number;
    /** From a fence record (fence table + (id - 1) × fenceRecordBytes): its state (u8: fenceStateLive when live), CurrentValue's address and the driver's handle (u32). */
    fenceState: number; fenceCurrentValue: number; fenceDriverHandle: number;
  };
  fenceStateLive: number;
  /** Where results sit in the out buffer (assembly/layout.ts draws it): byte offsets and record sizes. */
  out: {
    /** After engineStep / engineRun / queueRecheckAt (StepReport). */
    step: {
      bytes: number; workDurationNs: number; fence: number; handle: number; value: number; steps: number; op: number;
      doorbellPosted: number; doorbellFull: number; observedNs: number;
    };
    /** After engineTakeInterrupt: one u32 driver handle per listed fence. */
    interruptHandleBytes: number;
    /** After fenceSatisfy (SatisfiedWait records). */
    satisfied: { bytes: number; waiter: number; entry: number; completed: number };
    /** After doorbellTake (TakenDoorbellRecord records). */
    doorbell: { bytes: number; word: number; source: number; value: number };
    /** queuePushStaged's staging area: Command records (`bytes` apart) at the out buffer's start. */
    command: { bytes: number; op: number; value: number; gpuVa: number; handle: number };
    /** engineRunStretch's StretchRecord (in and out), at `offset` of the out buffer, beside the StepReport. */
    stretch: {
      offset: number; bytes: number; nowNs: number; untilNs: number; topTimeNs: number; sequence: number; commandNs: number; jitterSpan: number;
      timingState: number; tieState: number; topTieBreak: number; budget: number; inPlace: number; nextQueued: number; nextTieBreak: number;
      stop: number; fenceCommands: number; nextNs: number; topSequence: number;
      stopLoud: number; stopCount: number; stopQueued: number; stopEmpty: number;
    };
  };
}

let compiled: WebAssembly.Module | undefined;
let compiling: Promise<WebAssembly.Module> | undefined;

function coreBytes(): Uint8Array {
  const text = atob(coreWasmBase64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

/** Compiles the core once per JS realm (async: browsers refuse large sync compiles on the main thread). */
export async function compileCore(): Promise<WasmModule> {
  if (compiled) return compiled;
  compiling ??= WebAssembly.compile(coreBytes() as BufferSource).then((m) => (compiled = m));
  return compiling;
}

/** Synchronous compile, for Node and workers. */
export function compileCoreSync(): WasmModule {
  compiled ??= new WebAssembly.Module(coreBytes() as BufferSource);
  return compiled;
}

/** Thrown when the core's own debug assertion fails: a bug in the core, never bad input. */
export class CoreAssertionError extends Error {
  constructor(message: string) { super(message); this.name = 'CoreAssertionError'; }
}

/** Instantiates the core over `memory`. The instance starts unattached (adapterFormat/adapterAttach). */
export function instantiateCore(module: WasmModule, memory: WasmMemory): CoreExports {
  if (!(module instanceof WebAssembly.Module)) throw new TypeError('instantiateCore: module is not a WebAssembly.Module; expected the one compileCore() or compileCoreSync() returns');
  const instance = new WebAssembly.Instance(module, {
    env: {
      memory,
      abort(messagePointer: number, filePointer: number, line: number, column: number): never {
        const read = (pointer: number) => {
          if (!pointer) return '';
          const view = new Uint32Array(memory.buffer);
          const length = view[(pointer - 4) >>> 2] >>> 1;
          const chars = new Uint16Array(memory.buffer, pointer, length);
          let text = '';
          for (const c of chars) text += String.fromCharCode(c);
          return text;
        };
        throw new CoreAssertionError(`core assertion failed: ${read(messagePointer)} (${read(filePointer)}:${line}:${column})`);
      },
    },
  });
  return instance.exports as unknown as CoreExports;
}

/** Reads the layout constants; throws when the core speaks another ABI version than CORE_ABI_VERSION. */
export function readLayout(core: CoreExports): CoreLayout {
  const g = (name: string) => (core[name] as WebAssembly.Global).value as number;
  const abiVersion = core.ABI_VERSION instanceof WebAssembly.Global ? g('ABI_VERSION') : undefined;
  if (abiVersion !== CORE_ABI_VERSION) {
    throw new Error(`core.wasm exports ${abiVersion === undefined ? 'no ABI_VERSION' : `ABI_VERSION ${abiVersion}`}; ` +
      `this host follows ABI version ${CORE_ABI_VERSION} (docs/ABI.md): rebuild the core and the host from one checkout`);
  }
  return {
    abiVersion,
    pageBytes: g('PAGE_BYTES'), staticReservedBytes: g('STATIC_RESERVED_BYTES'), regionMagic: g('REGION_MAGIC') >>> 0,
    layoutVersion: g('LAYOUT_VERSION'), regionKindSystem: g('REGION_KIND_SYSTEM'), regionKindLocal: g('REGION_KIND_LOCAL'),
    regionKindAdapter: g('REGION_KIND_ADAPTER'), regionHeaderBytes: g('REGION_HEADER_BYTES'),
    adapterHeaderBytes: g('ADAPTER_HEADER_BYTES'), fenceRecordBytes: g('FENCE_RECORD_BYTES'),
    pageDescriptorBytes: g('PAGE_DESCRIPTOR_BYTES'), waitBlockBytes: g('WAIT_BLOCK_BYTES'),
    heapEntryBytes: g('HEAP_ENTRY_BYTES'), commandBytes: g('COMMAND_BYTES'),
    heapMinClass: g('HEAP_MIN_CLASS'), heapMaxClass: g('HEAP_MAX_CLASS'), arenaUnitBytes: g('ARENA_BLOCK_BYTES'), arenaMaxClass: g('ARENA_MAX_CLASS'),
    fenceKindNative: g('FENCE_KIND_NATIVE'), fenceKindMonitored: g('FENCE_KIND_MONITORED'),
    memorySystem: g('MEMORY_SYSTEM'), memoryLocal: g('MEMORY_LOCAL'),
    opNop: g('OP_NOP'), opWait: g('OP_WAIT'), opSignal: g('OP_SIGNAL'), opWork: g('OP_WORK'), opFenceWrite: g('OP_FENCE_WRITE'),
    queueStateFree: g('QUEUE_STATE_FREE'), queueStateReady: g('QUEUE_STATE_READY'), queueStateBlocked: g('QUEUE_STATE_BLOCKED'),
    stepIdle: g('STEP_IDLE'), stepDone: g('STEP_DONE'), stepBlocked: g('STEP_BLOCKED'), stepWork: g('STEP_WORK'),
    stepInterrupt: g('STEP_INTERRUPT'), stepUnblocked: g('STEP_UNBLOCKED'), stepMonitoredInterrupt: g('STEP_MONITORED_INTERRUPT'),
    stepSignalWritten: g('STEP_SIGNAL_WRITTEN'),
    capNo64BitAtomics: g('CAP_NO_64BIT_ATOMICS'), capNativeGpuFence: g('CAP_NATIVE_GPU_FENCE'),
    capOptimizedNativeFenceInterrupt: g('CAP_OPTIMIZED_NATIVE_FENCE_INTERRUPT'),
    gpuVaRead: g('GPU_VA_READ'), gpuVaReadWrite: g('GPU_VA_READ_WRITE'),
    waiterModeAll: g('WAITER_MODE_ALL'), waiterModeAny: g('WAITER_MODE_ANY'), waiterMaxEntries: g('WAITER_MAX_ENTRIES'),
    log: readLogLayout(core),
    offsets: {
      gpuSignals: g('ADAPTER_GPU_SIGNALS_OFFSET'), cmpChecks: g('ADAPTER_CMP_CHECKS_OFFSET'),
      interrupts: g('ADAPTER_INTERRUPTS_OFFSET'), heapPushes: g('ADAPTER_HEAP_PUSHES_OFFSET'),
      heapPops: g('ADAPTER_HEAP_POPS_OFFSET'), fenceLive: g('ADAPTER_FENCE_LIVE_OFFSET'),
      pageLive: g('ADAPTER_PAGE_LIVE_OFFSET'), waitBlockLive: g('ADAPTER_WAIT_BLOCK_LIVE_OFFSET'),
      outBuffer: g('ADAPTER_OUT_BUFFER_OFFSET'), outCapacity: g('ADAPTER_OUT_CAPACITY_OFFSET'),
      engineSignals: g('ENGINE_SIGNALS_OFFSET'), engineInterrupts: g('ENGINE_INTERRUPTS_OFFSET'),
      queueLogPending: g('QUEUE_LOG_PENDING_OFFSET'), queueLogPendingBytes: g('QUEUE_LOG_PENDING_BYTES'),
      regionMagic: g('REGION_MAGIC_OFFSET'), regionFreePages: g('REGION_FREE_PAGES_OFFSET'), regionSize: g('REGION_SIZE_OFFSET'),
      regionVersion: g('REGION_VERSION_OFFSET'), regionKind: g('REGION_KIND_OFFSET'),
      fenceTable: g('ADAPTER_FENCE_TABLE_OFFSET'), fenceCapacity: g('ADAPTER_FENCE_CAPACITY_OFFSET'),
      fenceState: g('FENCE_STATE_OFFSET'), fenceCurrentValue: g('FENCE_CURRENT_VALUE_OFFSET'), fenceDriverHandle: g('FENCE_DRIVER_HANDLE_OFFSET'),
    },
    fenceStateLive: g('FENCE_STATE_LIVE'),
    out: {
      step: {
        bytes: g('STEP_REPORT_BYTES'), workDurationNs: g('STEP_REPORT_WORK_DURATION_OFFSET'), fence: g('STEP_REPORT_FENCE_OFFSET'),
        handle: g('STEP_REPORT_HANDLE_OFFSET'), value: g('STEP_REPORT_VALUE_OFFSET'), steps: g('STEP_REPORT_STEPS_OFFSET'),
        op: g('STEP_REPORT_OP_OFFSET'), doorbellPosted: g('STEP_REPORT_DOORBELL_POSTED_OFFSET'),
        doorbellFull: g('STEP_REPORT_DOORBELL_FULL_OFFSET'), observedNs: g('STEP_REPORT_OBSERVED_OFFSET'),
      },
      interruptHandleBytes: g('INTERRUPT_HANDLE_BYTES'),
      satisfied: {
        bytes: g('SATISFIED_WAIT_BYTES'), waiter: g('SATISFIED_WAIT_WAITER_OFFSET'), entry: g('SATISFIED_WAIT_ENTRY_OFFSET'),
        completed: g('SATISFIED_WAIT_COMPLETED_OFFSET'),
      },
      doorbell: {
        bytes: g('TAKEN_DOORBELL_RECORD_BYTES'), word: g('TAKEN_DOORBELL_WORD_OFFSET'),
        source: g('TAKEN_DOORBELL_SOURCE_OFFSET'), value: g('TAKEN_DOORBELL_VALUE_OFFSET'),
      },
      command: { bytes: g('COMMAND_BYTES'), op: g('COMMAND_OP_OFFSET'), value: g('COMMAND_VALUE_OFFSET'), gpuVa: g('COMMAND_GPU_VA_OFFSET'), handle: g('COMMAND_HANDLE_OFFSET') },
      stretch: {
        offset: g('STRETCH_RECORD_OFFSET'), bytes: g('STRETCH_RECORD_BYTES'), nowNs: g('STRETCH_NOW_OFFSET'), untilNs: g('STRETCH_UNTIL_OFFSET'),
        topTimeNs: g('STRETCH_TOP_TIME_OFFSET'), sequence: g('STRETCH_SEQUENCE_OFFSET'), commandNs: g('STRETCH_COMMAND_NS_OFFSET'),
        jitterSpan: g('STRETCH_JITTER_SPAN_OFFSET'), timingState: g('STRETCH_TIMING_STATE_OFFSET'), tieState: g('STRETCH_TIE_STATE_OFFSET'),
        topTieBreak: g('STRETCH_TOP_TIE_BREAK_OFFSET'), budget: g('STRETCH_BUDGET_OFFSET'), inPlace: g('STRETCH_IN_PLACE_OFFSET'),
        nextQueued: g('STRETCH_NEXT_QUEUED_OFFSET'), nextTieBreak: g('STRETCH_NEXT_TIE_BREAK_OFFSET'), stop: g('STRETCH_STOP_OFFSET'),
        fenceCommands: g('STRETCH_FENCE_COMMANDS_OFFSET'), nextNs: g('STRETCH_NEXT_OFFSET'), topSequence: g('STRETCH_TOP_SEQUENCE_OFFSET'),
        stopLoud: g('STRETCH_STOP_LOUD'), stopCount: g('STRETCH_STOP_COUNT'), stopQueued: g('STRETCH_STOP_QUEUED'), stopEmpty: g('STRETCH_STOP_EMPTY'),
      },
    },
  };
}

/** u64 returned by the core arrives as a signed bigint. */
export const u64 = (value: bigint): bigint => BigInt.asUintN(64, value);
