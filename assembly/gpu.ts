// The GPU side: hardware queues, engines and the context management processor
// (CMP), as discrete steps.
//
// Why this file is long: hardware queues, engines and the CMP are one
// protocol. Each step of a signal is an export here, beside engineStep and
// runCommands, which sequence them, so the order of the steps and the steps
// themselves are read in one file.
//
// A hardware queue is a ring of Commands the user-mode driver writes and the
// engine consumes. One engineStep executes one command. The protocol steps a
// signal is made of are exports of their own, and engineStep executes exactly
// those exports in this order (no copy of them), so a schedule explorer or a
// directed test that interleaves them by hand with the CPU's steps runs the
// same code the simulator runs. Each step's rule is written once, as a small
// function the export calls: storeFault and bufferStore (1), log.ts's
// slotAddress / entryWrite and nextWord (2, 3), drain and storeValue (4),
// cmpRaises and raiseFor (5). engineRun and engineRunStretch (runCommands)
// call those same functions for each signal, with the run's state in locals
// instead of memory between calls (the translation, the fence record, the
// log's header word and write buffer), and hand every other command to
// execute() itself:
//
//   GPU signal (NF-05, LOG-04, XA-07)             CPU adds/retires a waiter (NF-09, NF-11)
//   ──────────────────────────────────────        ─────────────────────────────────────────
//   1 engineSignalWrite  CV → engine's           OS: new MonitoredValue target
//                        write buffer             KMD: DxgkDdiUpdateMonitoredValues, per fence:
//   2 logWriteEntry      entry → log write buffer   a cmpWriteMonitoredValue  MV → CMP's write buffer
//   3 logAdvance         FirstFreeEntryIndex + 1    b cmpBarrier              every write buffer drains
//   4 engineDrain        barrier: CV → memory       c cmpReadCurrentValue     CV
//     engineDoorbellPost (doorbell on) other        d cmpMonitoredValueCheck  CV > MV ? raise
//                        adapters' rings          OS: resample CurrentValue
//   5 cmpSignalCheck     value > MV (memory) ? raise
//
//   fence write (monitored fence, MF-04):  engineSignalWrite, engineDrain,
//                                          engineRaiseMonitoredFenceInterrupt
//
// Leave out step b (the reference driver's monitoredValueBarrier: false) and
// the new MonitoredValue is not visible when the CMP reads CurrentValue: a GPU
// signal whose steps 4-5 fall in between compares against the old
// MonitoredValue while step c read the old CurrentValue, and the wakeup is
// lost (the NF-11 test tries every interleaving).
//
// Queue states:   READY ──wait not satisfied──▶ BLOCKED ──queueRecheck sees CV >= value──▶ READY

import {
  QueueRecord, QUEUE_RECORD_BYTES, QUEUE_STATE_FREE, QUEUE_STATE_READY, QUEUE_STATE_BLOCKED,
  Command, COMMAND_BYTES, RingCommand, RING_COMMAND_BYTES, RING_OP_SHIFT, RING_FENCE_MASK, OP_WAIT, OP_SIGNAL, OP_WORK, OP_NOP, OP_FENCE_WRITE, EngineRecord,
  OK, E_NO_QUEUES, E_BAD_QUEUE, E_RING_FULL, E_GPU_PAGE_FAULT, E_GPU_WRITE_FAULT, E_BAD_ENGINE, E_BAD_FENCE, E_BAD_PROCESS, E_BAD_ARGUMENT,
  STEP_IDLE, STEP_DONE, STEP_BLOCKED, STEP_WORK, STEP_INTERRUPT, STEP_UNBLOCKED, STEP_MONITORED_INTERRUPT, STEP_SIGNAL_WRITTEN,
  UINT64_MAX, INTERRUPT_QUEUE_UNKNOWN, StepReport, INTERRUPT_HANDLE_BYTES, AdapterHeader,
  PAGE_BYTES, StretchRecord, STRETCH_RECORD_OFFSET, STRETCH_RECORD_BYTES, STRETCH_STOP_LOUD, STRETCH_STOP_COUNT, STRETCH_STOP_QUEUED, STRETCH_STOP_EMPTY,
  Sfc32State,
} from './layout';
import { sfc32Next, uniformBelow, runsBefore } from '../src/base/portable';
import { adapter, engineAt, fenceAt, fenceValid, fenceAtCurrentValue, gpuVaTranslate, gpuVaTranslateWrite, heapBlockAlloc, heapBlockFree } from './adapter';
import {
  logWriteEntry, logAdvance, logRecord, NATIVE_FENCE_LOG_TYPE_SIGNALS, NATIVE_FENCE_LOG_TYPE_WAITS,
  NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED, NATIVE_FENCE_LOG_OPERATION_WAIT_UNBLOCKED,
  logRunStart, logRunCount, logRunSlot, logRunWrite, logRunFlush, logRunBuffer, logRunAdvance,
} from './log';
import { doorbellPost, doorbellAdapterCount } from './doorbell';
import { SYNC_FLAG_CROSS_ADAPTER } from './layout';

export const CAP_NO_64BIT_ATOMICS: u32 = 1 << 5;
export const CAP_NATIVE_GPU_FENCE: u32 = 1 << 11;
export const CAP_OPTIMIZED_NATIVE_FENCE_INTERRUPT: u32 = 1 << 12;

@inline function queueAt(id: u32): QueueRecord {
  return changetype<QueueRecord>(<usize>adapter().queueTable + <usize>(id - 1) * QUEUE_RECORD_BYTES);
}
@inline function queueValid(id: u32): bool {
  const a = adapter();
  return id != 0 && id <= a.queueCapacity && queueAt(id).state != QUEUE_STATE_FREE;
}
@inline function commandAt(q: QueueRecord, position: u32): usize {
  return <usize>q.ring + <usize>(position % adapter().ringEntries) * RING_COMMAND_BYTES;
}

// ─────────────────────────────── queues ────────────────────────────────

/** Creates a hardware queue on `engine` owned by process slot `owner`; returns its id. */
export function queueCreate(engine: u32, owner: u32): i32 {
  const a = adapter();
  if (engine >= a.engineCount) return E_BAD_ENGINE;
  if (owner >= a.processCapacity) return E_BAD_PROCESS;
  for (let id: u32 = 1; id <= a.queueCapacity; id++) {
    const q = queueAt(id);
    if (q.state != QUEUE_STATE_FREE) continue;
    const ring = heapBlockAlloc(a.ringClass); // its ring, from the arena (layout.ts)
    if (ring == 0) return E_NO_QUEUES;
    const generation = q.generation + 1;
    memory.fill(changetype<usize>(q), 0, QUEUE_RECORD_BYTES);
    q.state = QUEUE_STATE_READY;
    q.engine = engine;
    q.owner = owner;
    q.generation = generation;
    q.ring = ring;
    a.queueLive++;
    return <i32>id;
  }
  return E_NO_QUEUES;
}

export function queueDestroy(id: u32): i32 {
  if (!queueValid(id)) return E_BAD_QUEUE;
  const q = queueAt(id);
  q.state = QUEUE_STATE_FREE;
  heapBlockFree(q.ring, adapter().ringClass);
  q.ring = 0;
  // An interrupt on its way must not name this id: a new queue may get it (INT-05).
  const e = engineAt(q.engine);
  if (e.interruptQueue == id) e.interruptQueue = INTERRUPT_QUEUE_UNKNOWN;
  if (e.runningQueue == id) e.runningQueue = 0;
  adapter().queueLive--;
  return OK;
}

/** Appends one command (the user-mode driver writing its ring). */
export function queuePush(id: u32, op: u32, fence: u32, value: u64, gpuVa: u64, handle: u32): i32 {
  if (!queueValid(id)) return E_BAD_QUEUE;
  if (op > OP_FENCE_WRITE || fence > RING_FENCE_MASK) return E_BAD_ARGUMENT; // no fence id reaches 2^28 (RingCommand)
  const q = queueAt(id);
  if (q.tail - q.head >= adapter().ringEntries) return E_RING_FULL;
  const c = changetype<RingCommand>(commandAt(q, q.tail));
  c.opFence = op << RING_OP_SHIFT | fence; c.value = value; c.gpuVa = gpuVa; c.handle = handle;
  q.tail++;
  return OK;
}

/**
 * The user-mode driver's ring write for `count` commands it staged as Command records at the
 * start of the out buffer (op, value, gpuVa, handle; the fence field is ignored): each wait or
 * signal gets the fence whose CurrentValue `gpuVa` maps to in process `slot` (0 when none, as
 * fenceAtCurrentValue after gpuVaTranslate), and all go into the ring, or none: E_BAD_QUEUE,
 * E_BAD_ARGUMENT (an op past OP_FENCE_WRITE, or more than the out buffer holds), E_RING_FULL.
 */
export function queuePushStaged(id: u32, count: u32, slot: u32): i32 {
  if (!queueValid(id)) return E_BAD_QUEUE;
  const a = adapter();
  if (<u64>count * COMMAND_BYTES > <u64>a.outCapacity * 4) return E_BAD_ARGUMENT;
  const q = queueAt(id);
  if (<u64>(q.tail - q.head) + <u64>count > <u64>a.ringEntries) return E_RING_FULL;
  const staged = <usize>a.outBuffer;
  for (let i: u32 = 0; i < count; i++) if (changetype<Command>(staged + <usize>i * COMMAND_BYTES).op > OP_FENCE_WRITE) return E_BAD_ARGUMENT;
  let lastVa: u64 = 0, lastFence: u32 = 0;
  for (let i: u32 = 0; i < count; i++) {
    const s = changetype<Command>(staged + <usize>i * COMMAND_BYTES);
    const c = changetype<RingCommand>(commandAt(q, q.tail));
    const op = s.op;
    let fence: u32 = 0;
    if (op == OP_WAIT || op == OP_SIGNAL || op == OP_FENCE_WRITE) {
      if (s.gpuVa == lastVa && lastFence != 0) fence = lastFence;
      else {
        const phys = gpuVaTranslate(slot, s.gpuVa);
        const found = phys == 0 ? 0 : fenceAtCurrentValue(phys);
        fence = found > 0 ? <u32>found : 0;
        lastVa = s.gpuVa; lastFence = fence;
      }
    }
    c.opFence = op << RING_OP_SHIFT | fence; c.value = s.value; c.gpuVa = s.gpuVa; c.handle = s.handle;
    q.tail++;
  }
  return OK;
}

export function queuePending(id: u32): u32 { const q = queueAt(id); return q.tail - q.head; }
export function queueState(id: u32): u32 { return queueAt(id).state; }
export function queueEngine(id: u32): u32 { return queueAt(id).engine; }
export function queueBlockedFence(id: u32): u32 { return queueAt(id).blockedFence; }
export function queueBlockedValue(id: u32): u64 { return queueAt(id).blockedValue; }
export function queueBlockedSince(id: u32): u64 { return queueAt(id).blockedSinceNs; }
/** The command the queue will execute next: its op, value, fence and handle. */
export function queueHeadOp(id: u32): u32 { const q = queueAt(id); return q.tail == q.head ? OP_NOP : changetype<RingCommand>(commandAt(q, q.head)).op; }
export function queueHeadValue(id: u32): u64 { const q = queueAt(id); return changetype<RingCommand>(commandAt(q, q.head)).value; }
export function queueHeadFence(id: u32): u32 { const q = queueAt(id); return changetype<RingCommand>(commandAt(q, q.head)).fence; }
export function queueHeadHandle(id: u32): u32 { const q = queueAt(id); return changetype<RingCommand>(commandAt(q, q.head)).handle; }

// ─────────────────────────── the out buffer ───────────────────────────

/** The StepReport an engine step leaves in the out buffer (layout.ts draws it). */
@inline function report(): StepReport { return changetype<StepReport>(<usize>adapter().outBuffer); }
/** What a signal's doorbell step reports when it posts nothing: no record posted, no ring full. */
@inline function reportNoDoorbell(): void { const r = report(); r.doorbellPosted = 0; r.doorbellFull = 0; }

// ─────────────────────────── the signal's steps ───────────────────────────

/**
 * Step 1 of a GPU signal: the engine stores `value` at `gpuVa` (process
 * `slot`'s address space). The store waits in the engine's write buffer;
 * a store already there drains first (one-entry buffer). A 32-bit-only
 * engine (No64BitAtomics) will write the low half. E_GPU_PAGE_FAULT for an
 * unmapped or unaligned address, E_GPU_WRITE_FAULT for a page the GPU may
 * only read (a MonitoredValue, NF-04): nothing changes.
 */
@inline export function engineSignalWrite(engine: u32, slot: u32, gpuVa: u64, value: u64): i32 {
  const a = adapter();
  if (engine >= a.engineCount) return E_BAD_ENGINE;
  const phys = gpuVaTranslateWrite(slot, gpuVa);
  const fault = storeFault(slot, gpuVa, phys);
  if (fault != OK) return fault;
  bufferStore(engineAt(engine), phys, value, (a.capsBits & CAP_NO_64BIT_ATOMICS) != 0);
  return OK;
}

/** Step 1's rule: may the GPU store a fence value at `phys` (gpuVaTranslateWrite of `gpuVa`)? OK, or the fault. */
@inline function storeFault(slot: u32, gpuVa: u64, phys: u32): i32 {
  if (phys == 0) return writeFault(slot, gpuVa);
  if ((phys & 7) != 0) return E_GPU_PAGE_FAULT;
  return OK;
}

/** Step 1's store: into the engine's one-entry write buffer; a store already there drains first. */
@inline function bufferStore(e: EngineRecord, phys: u32, value: u64, value32: bool): void {
  if (e.pendingPhys != 0) drain(e);
  e.pendingPhys = phys;
  e.pendingValue = value;
  e.pendingValue32 = value32 ? 1 : 0;
}

/** Why a GPU write through `gpuVa` found no writable page: E_GPU_WRITE_FAULT when it is mapped read-only, else E_GPU_PAGE_FAULT. */
function writeFault(slot: u32, gpuVa: u64): i32 {
  return gpuVaTranslate(slot, gpuVa) != 0 ? E_GPU_WRITE_FAULT : E_GPU_PAGE_FAULT;
}

/**
 * Step 4 (the engine's memory barrier; the log's steps 2 and 3 are in log.ts):
 * the engine's write buffer reaches memory. Returns 1 when a store drained,
 * 0 when the buffer was empty.
 */
@inline export function engineDrain(engine: u32): i32 {
  if (engine >= adapter().engineCount) return E_BAD_ENGINE;
  return drain(engineAt(engine));
}
@inline function drain(e: EngineRecord): i32 {
  if (e.pendingPhys == 0) return 0;
  storeValue(e.pendingPhys, e.pendingValue, e.pendingValue32 != 0);
  e.pendingPhys = 0;
  return 1;
}
/** Step 4's store: a fence value reaches memory at `phys`; a 32-bit-only engine (No64BitAtomics) writes the low half. */
@inline function storeValue(phys: u32, value: u64, value32: bool): void {
  if (value32) atomic.store<u32>(<usize>phys, <u32>value);
  else atomic.store<u64>(<usize>phys, value);
}

/** Is a store of the engine still in its write buffer? Its address, 0 when empty. */
export function enginePendingWrite(engine: u32): u32 {
  return engine < adapter().engineCount ? engineAt(engine).pendingPhys : 0;
}

/**
 * Queues `fence` on the engine's next interrupt; a full list collapses to "no list" (INT-02).
 * `queue` is the hardware queue whose signal raised it (0 = none): an interrupt
 * raised for one queue only names that queue (INT-05), otherwise none.
 */
function raiseFor(engine: u32, fence: u32, queue: u32): void {
  const a = adapter();
  const e = engineAt(engine);
  const source = queue == 0 ? INTERRUPT_QUEUE_UNKNOWN : queue;
  if (e.interruptLine == 0 && e.pendingCount == 0 && e.pendingOverflow == 0) e.interruptQueue = source;
  else if (e.interruptQueue != source) e.interruptQueue = INTERRUPT_QUEUE_UNKNOWN;
  const handle = fenceAt(fence).driverHandle;
  if (e.pendingOverflow == 0) {
    let listed = false;
    for (let i: u32 = 0; i < e.pendingCount; i++) {
      if (load<u32>(<usize>e.pendingList + <usize>i * INTERRUPT_HANDLE_BYTES) == handle) { listed = true; break; }
    }
    if (!listed) {
      if (e.pendingCount < a.pendingCapacity) {
        store<u32>(<usize>e.pendingList + <usize>e.pendingCount * INTERRUPT_HANDLE_BYTES, handle);
        e.pendingCount++;
      } else {
        e.pendingOverflow = 1;
      }
    }
  }
  if (e.interruptLine == 0) { e.interrupts++; a.interruptsRaised++; }
  e.interruptLine = 1;
}

/**
 * Step 5: the CMP's conditional interrupt (NF-05): raise iff `value` >
 * MonitoredValue in memory. The interrupt names the queue running on
 * `engine` (INT-05). Returns 1 when it raised, 0 when not, E_BAD_FENCE for a
 * fence that is not live (a command naming no live fence raises nothing).
 */
@inline export function cmpSignalCheck(engine: u32, fence: u32, value: u64): i32 {
  const a = adapter();
  if (engine >= a.engineCount) return E_BAD_ENGINE;
  if (!fenceValid(fence)) return E_BAD_FENCE;
  a.cmpChecks++;
  if (cmpRaises(value, fenceAt(fence).mvPhys)) { raiseFor(engine, fence, engineAt(engine).runningQueue); return 1; }
  return 0;
}
/** Step 5's rule (NF-05): a signal of `value` raises the interrupt iff value > the MonitoredValue in memory at `mvPhys`. */
@inline function cmpRaises(value: u64, mvPhys: u32): bool { return value > atomic.load<u64>(<usize>mvPhys); }

/**
 * The last step of a monitored fence write (OP_FENCE_WRITE): the monitored
 * fence signaled interrupt, raised whatever the value (the OS scans, MF-06).
 * The interrupt names the queue running on `engine`. Returns 1, or E_BAD_ENGINE / E_BAD_FENCE.
 */
export function engineRaiseMonitoredFenceInterrupt(engine: u32, fence: u32): i32 {
  if (engine >= adapter().engineCount) return E_BAD_ENGINE;
  if (!fenceValid(fence)) return E_BAD_FENCE;
  raiseFor(engine, fence, engineAt(engine).runningQueue);
  return 1;
}

// The CMP side of DxgkDdiUpdateMonitoredValues for one fence (NF-11), in four
// steps the driver calls in order: a, b, c, d (the drawing on top). The CMP
// has a one-entry write buffer of its own: its MonitoredValue write reaches
// memory at its barrier (or at its next MonitoredValue write), while a GPU
// signal's check (cmpSignalCheck, step 5) reads MonitoredValue from memory.

/**
 * NF-11 step a: the CMP writes the shadow MonitoredValue of `fence`. The
 * store waits in the CMP's write buffer (an older one drains first).
 */
export function cmpWriteMonitoredValue(fence: u32, monitored: u64): i32 {
  if (!fenceValid(fence)) return E_BAD_FENCE;
  const a = adapter();
  cmpDrain(a);
  a.cmpPendingPhys = fenceAt(fence).mvPhys;
  a.cmpPendingValue = monitored;
  return OK;
}
@inline function cmpDrain(a: AdapterHeader): i32 {
  if (a.cmpPendingPhys == 0) return 0;
  atomic.store<u64>(<usize>a.cmpPendingPhys, a.cmpPendingValue);
  a.cmpPendingPhys = 0;
  return 1;
}

/**
 * NF-11 step b: the memory barrier: every write buffer of the GPU drains, the
 * CMP's (its MonitoredValue write is now visible) and each engine's. Returns
 * the stores drained.
 */
export function cmpBarrier(): i32 {
  const a = adapter();
  let drained = cmpDrain(a);
  for (let e: u32 = 0; e < a.engineCount; e++) drained += drain(engineAt(e));
  return drained;
}

/** Is a MonitoredValue write of the CMP still in its write buffer? Its address, 0 when empty. */
export function cmpPendingWrite(): u32 { return adapter().cmpPendingPhys; }

/** The MonitoredValue waiting in the CMP's write buffer (meaningful while cmpPendingWrite() is not 0). */
export function cmpPendingValue(): u64 { return adapter().cmpPendingValue; }

/** Physical address of engine `engine`'s record (its write buffer, interrupt list, statistics), 0 for no such engine. */
export function engineRecordAddress(engine: u32): u32 {
  return engine < adapter().engineCount ? changetype<u32>(engineAt(engine)) : 0;
}

/** NF-11 step c: the CMP reads CurrentValue (0 for a fence that is not live; step d then refuses it). */
export function cmpReadCurrentValue(fence: u32): u64 {
  return fenceValid(fence) ? atomic.load<u64>(<usize>fenceAt(fence).cvPhys) : 0;
}

/**
 * NF-11 step d: raise the interrupt of `engine` iff `currentValue` (what step
 * c read) > MonitoredValue as the CMP sees it (its own buffered write, else
 * memory). Such an interrupt names no queue (INT-05). Returns 1 when it
 * raised, 0 when not.
 */
export function cmpMonitoredValueCheck(engine: u32, fence: u32, currentValue: u64): i32 {
  const a = adapter();
  if (engine >= a.engineCount) return E_BAD_ENGINE;
  if (!fenceValid(fence)) return E_BAD_FENCE;
  a.cmpChecks++;
  const f = fenceAt(fence);
  const monitored = a.cmpPendingPhys == f.mvPhys ? a.cmpPendingValue : atomic.load<u64>(<usize>f.mvPhys);
  if (currentValue > monitored) { raiseFor(engine, fence, 0); return 1; }
  return 0;
}

/**
 * The driver takes the raised interrupt's payload: the listed driver handles
 * go to the out buffer (INTERRUPT_HANDLE_BYTES apart). Returns the count, -1
 * for "no list" (collapsed or overflowed), or -2 when no interrupt is raised.
 */
export function engineTakeInterrupt(engine: u32): i32 {
  if (engine >= adapter().engineCount) return E_BAD_ENGINE;
  const e = engineAt(engine);
  if (e.interruptLine == 0) return -2;
  const overflow = e.pendingOverflow != 0;
  const count = e.pendingCount;
  const out = <usize>adapter().outBuffer;
  for (let i: u32 = 0; i < count; i++) {
    store<u32>(out + <usize>i * INTERRUPT_HANDLE_BYTES, load<u32>(<usize>e.pendingList + <usize>i * INTERRUPT_HANDLE_BYTES));
  }
  e.pendingCount = 0;
  e.pendingOverflow = 0;
  e.interruptLine = 0;
  e.interruptQueue = 0;
  return overflow ? -1 : <i32>count;
}

export function engineInterruptLine(engine: u32): u32 { return engine < adapter().engineCount ? engineAt(engine).interruptLine : 0; }

/**
 * The queue the raised interrupt names under OptimizedNativeFenceSignaledInterrupt
 * (INT-05): its id when every signal that joined the interrupt came from that one
 * queue, 0 when it cannot tell (several queues, or a CMP raise on a MonitoredValue
 * update). Read it before engineTakeInterrupt, which clears it.
 */
export function engineInterruptQueue(engine: u32): u32 {
  const a = adapter();
  if (engine >= a.engineCount) return 0;
  const q = engineAt(engine).interruptQueue;
  return q == INTERRUPT_QUEUE_UNKNOWN ? 0 : q;
}

/**
 * XA-07, the signalling side (between steps 4 and 5 when the doorbell is on):
 * when `fence` is a cross-adapter fence, post (CurrentValue word, value) to
 * every other adapter's ring. The StepReport's doorbellPosted = records
 * posted, doorbellFull = rings that were full; a full ring falls back to the
 * interrupt path (the fence is listed on this engine's interrupt, naming the
 * running queue, and the OS propagates it). Returns 1 on fallback, else 0.
 */
export function engineDoorbellPost(engine: u32, fence: u32, value: u64): i32 {
  const a = adapter();
  if (engine >= a.engineCount) return E_BAD_ENGINE;
  reportNoDoorbell();
  if (a.doorbellDirectory == 0 || !fenceValid(fence)) return 0;
  const f = fenceAt(fence);
  if ((f.flags & SYNC_FLAG_CROSS_ADAPTER) == 0) return 0;
  let posted: u32 = 0;
  let full: u32 = 0;
  const count = doorbellAdapterCount(a.doorbellDirectory);
  for (let target: u32 = 0; target < count; target++) {
    if (target == a.adapterIndex) continue;
    if (doorbellPost(a.doorbellDirectory, target, a.adapterIndex, f.cvPhys, value) == OK) posted++;
    else full++;
  }
  const r = report();
  r.doorbellPosted = posted;
  r.doorbellFull = full;
  if (full == 0) return 0;
  raiseFor(engine, fence, engineAt(engine).runningQueue);
  return 1;
}

// ─────────────────────────────── executing ───────────────────────────────

/**
 * Executes the command at the head of queue `id` on its engine at GPU time
 * `nowNs`. Returns a STEP_* code (or a negative error, nothing consumed):
 *   STEP_IDLE       ring empty
 *   STEP_DONE       a wait passed or a signal retired with no interrupt
 *   STEP_BLOCKED    a wait is not satisfied; the queue is BLOCKED
 *   STEP_WORK       StepReport.workDurationNs = busy duration
 *   STEP_INTERRUPT  a signal retired and the CMP raised the interrupt
 * For every command the StepReport holds its fence id, handle, value and op.
 */
export function engineStep(id: u32, nowNs: u64): i32 {
  if (!queueValid(id)) return E_BAD_QUEUE;
  const q = queueAt(id);
  if (q.state == QUEUE_STATE_BLOCKED) return STEP_BLOCKED;
  if (q.head == q.tail) return STEP_IDLE;
  const c = changetype<RingCommand>(commandAt(q, q.head));
  engineAt(q.engine).runningQueue = id;
  reportCommand(c);
  return execute(q, id, c, nowNs);
}

/**
 * The head command's first step only, for a host that runs a signal one step
 * at a time (a schedule explorer: src/gpu/hardware.ts, granularity 'step').
 * For an OP_SIGNAL: the command is consumed and step 1 (engineSignalWrite)
 * runs, exactly as engineStep would; it returns STEP_SIGNAL_WRITTEN with the
 * StepReport's fence, handle, value and op set, and the host calls steps 2-5
 * itself in the order of the drawing on top (logWriteEntry, logAdvance,
 * engineDrain, engineDoorbellPost with the doorbell on, cmpSignalCheck). Any
 * other command executes whole, as engineStep (its STEP_* code).
 */
export function engineStepBegin(id: u32, nowNs: u64): i32 {
  if (!queueValid(id)) return E_BAD_QUEUE;
  const q = queueAt(id);
  if (q.state == QUEUE_STATE_BLOCKED) return STEP_BLOCKED;
  if (q.head == q.tail) return STEP_IDLE;
  const c = changetype<RingCommand>(commandAt(q, q.head));
  engineAt(q.engine).runningQueue = id;
  reportCommand(c);
  if (c.op != OP_SIGNAL) return execute(q, id, c, nowNs);
  const written = signalWrite(q, c);
  return written == OK ? STEP_SIGNAL_WRITTEN : written;
}

/** The StepReport's fence, handle, value and op: the command a step executed. */
@inline function reportCommand(c: RingCommand): void {
  const r = report();
  r.fence = c.fence;
  r.handle = c.handle;
  r.value = c.value;
  r.op = c.op;
}

/**
 * Executes command `c`, the head of ready queue `q` (id `id`), on the
 * queue's engine, whose runningQueue is `id`. engineStep and engineRun check
 * the queue; engineRun walks the ring without a division per command and
 * reports only the last command it executed. A signal is the exported steps
 * in their documented order, called as they are (the drawing on top).
 */
@inline function execute(q: QueueRecord, id: u32, c: RingCommand, nowNs: u64): i32 {
  const op = c.op;
  if (op == OP_WAIT) {
    const phys = gpuVaTranslate(q.owner, c.gpuVa);
    if (phys == 0) return E_GPU_PAGE_FAULT;
    if (atomic.load<u64>(<usize>phys) >= c.value) {
      q.head++;
      // LOG-04 for a wait that never blocked: observed and end are both now; no value to write, no interrupt.
      if (logWriteEntry(id, NATIVE_FENCE_LOG_TYPE_WAITS, c.handle, c.value, NATIVE_FENCE_LOG_OPERATION_WAIT_UNBLOCKED, nowNs, nowNs) >= 0) {
        logAdvance(id, NATIVE_FENCE_LOG_TYPE_WAITS);
      }
      return STEP_DONE;
    }
    q.state = QUEUE_STATE_BLOCKED;
    q.blockedFence = c.fence;
    q.blockedValue = c.value;
    q.blockedSinceNs = nowNs;
    return STEP_BLOCKED;
  }
  if (op == OP_SIGNAL || op == OP_FENCE_WRITE) {
    const engine = q.engine;
    const value = c.value;
    const fence = c.fence;
    // 1. the fence value into the engine's write buffer (a page fault consumes nothing)
    const written = signalWrite(q, c);
    if (written != OK) return written;
    const a = adapter();
    if (op == OP_FENCE_WRITE) {
      // A monitored fence write: the barrier, then its signaled interrupt, whatever the value.
      engineDrain(engine);
      return engineRaiseMonitoredFenceInterrupt(engine, fence) == 1 ? STEP_MONITORED_INTERRUPT : STEP_DONE;
    }
    // 2. the log entry with its GPU timestamp, 3. the index advance (a corrupt header drops the entry)
    if (logWriteEntry(id, NATIVE_FENCE_LOG_TYPE_SIGNALS, c.handle, value, NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED, 0, nowNs) >= 0) {
      logAdvance(id, NATIVE_FENCE_LOG_TYPE_SIGNALS);
    }
    // 4. the memory barrier: the value reaches memory
    engineDrain(engine);
    // XA-07: a cross-adapter fence rings the other adapters' doorbells (opt-in); a full ring falls back to the interrupt
    let fallback = false;
    if (a.doorbellDirectory != 0) fallback = engineDoorbellPost(engine, fence, value) == 1;
    else reportNoDoorbell();
    // 5. the conditional interrupt (a command naming no live fence raises nothing)
    const raised = cmpSignalCheck(engine, fence, value) == 1;
    return raised || fallback ? STEP_INTERRUPT : STEP_DONE;
  }
  if (op == OP_WORK) {
    report().workDurationNs = c.value;
    q.head++;
    return STEP_WORK;
  }
  q.head++;
  return STEP_DONE;
}

/**
 * Step 1 of a signal or fence write, command `c` at the head of `q`: the
 * store into the engine's write buffer, then the command is consumed and
 * counted. A page fault consumes nothing.
 */
@inline function signalWrite(q: QueueRecord, c: RingCommand): i32 {
  const written = engineSignalWrite(q.engine, q.owner, c.gpuVa, c.value);
  if (written != OK) return written;
  q.head++;
  adapter().gpuSignals++;
  engineAt(q.engine).signals++;
  return OK;
}

/**
 * Runs engineStep until a step needs the host (anything but STEP_DONE) or
 * `maxSteps` commands ran: the same steps per command (runCommands), with the
 * log's header checked once per run (log.ts, "a run of commands").
 * StepReport.steps = commands executed. Returns the last step.
 */
export function engineRun(id: u32, nowNs: u64, maxSteps: u32): i32 {
  return runCommands(id, maxSteps, nowNs, false);
}

/**
 * The simulator's stretch (src/gpu/hardware.ts): runs the queue's next
 * commands for as long as each one needs no host (a passed wait, work, a
 * signal that neither lowers CurrentValue nor raises the interrupt, of a fence
 * that is not cross-adapter: stretchQuietSignal, stretchQuietOther) and the
 * host's scheduler would take the engine's next tick next anyway
 * (stretchInPlace). The StretchRecord at STRETCH_RECORD_OFFSET of the out
 * buffer carries the scheduler's view in and what the stretch used out.
 * Returns STEP_DONE (or STEP_BLOCKED / E_BAD_QUEUE, nothing run);
 * StepReport.steps = commands executed, StretchRecord.stop says why it ended.
 */
export function engineRunStretch(id: u32, maxSteps: u32): i32 {
  return runCommands(id, maxSteps, 0, true);
}

/**
 * engineRun and engineRunStretch (`timed`). A signal (doorbell off) runs the
 * steps of execute()'s signal, each through the same step function
 * (storeFault, drain, logRunSlot / logRunWrite / logRunAdvance, storeValue,
 * cmpRaises, raiseFor), with the run's state in locals: the page's
 * translation and the fence's record looked up again only when they change,
 * the signal log's header word and the queue's one-entry log write buffer
 * (log.ts, "a run of commands"), the counters. The engine's write buffer is
 * drained by the run's first signal and each later store reaches memory in
 * its own step 4, so none is left there. Any other command goes through
 * execute() itself, with that state put back first (runSave) and read again after.
 */
@inline function runCommands(id: u32, maxSteps: u32, fixedNowNs: u64, timed: bool): i32 {
  const rep = report();
  const a = adapter();
  const r = changetype<StretchRecord>(<usize>a.outBuffer + STRETCH_RECORD_OFFSET);
  if (timed && !stretchBegin(a, r)) { rep.steps = 0; return E_BAD_ARGUMENT; }
  if (!queueValid(id)) { rep.steps = 0; return E_BAD_QUEUE; }
  const q = queueAt(id);
  if (maxSteps > 0 && q.state == QUEUE_STATE_BLOCKED) { rep.steps = 0; return STEP_BLOCKED; }
  const engine = q.engine, e = engineAt(engine), owner = q.owner;
  const value32 = (a.capsBits & CAP_NO_64BIT_ATOMICS) != 0;
  const doorbellOn = a.doorbellDirectory != 0;
  const signalLog = q.signalLog;
  let word = logRunStart(signalLog, NATIVE_FENCE_LOG_TYPE_SIGNALS), wordInMemory = word;
  const count: u32 = word >= 0 ? logRunCount(signalLog) : 0;
  let bufferTaken = false; // the queue's log write buffer drained and held in the next four locals (the run's first signal does it)
  let bufferAt: u32 = 0, bufferHandle: u32 = 0, bufferValue: u64 = 0, bufferEndNs: u64 = 0;
  let drained = false, signalled = false, lastValue: u64 = 0;
  let gpuSignals: u64 = 0, cmpChecks: u64 = 0, fenceCommands: u32 = 0;
  let stop: u32 = STRETCH_STOP_LOUD, steps: u32 = 0, result: i32 = STEP_DONE, last: usize = 0;
  const pending = q.tail - q.head;
  const limit = min<u32>(maxSteps, pending);
  if (limit > 0) e.runningQueue = id;
  let c = commandAt(q, q.head), head = q.head;
  const ringEnd = <usize>q.ring + <usize>a.ringEntries * RING_COMMAND_BYTES;
  let cachedVaPage: u64 = 0, cachedPagePhys: u32 = 0;
  let cachedFence: u32 = 0, cachedLive = false, cachedCross = false, cachedCvPhys: u32 = 0, cachedMvPhys: u32 = 0;
  while (true) {
    if (steps >= limit) { stop = steps == pending ? STRETCH_STOP_EMPTY : STRETCH_STOP_COUNT; break; }
    const command = changetype<RingCommand>(c);
    const op = command.op;
    if (op == OP_SIGNAL && !doorbellOn) {
      const va = command.gpuVa, fence = command.fence;
      let phys: u32 = 0;
      if ((va & ~(<u64>PAGE_BYTES - 1)) == cachedVaPage && cachedPagePhys != 0) phys = cachedPagePhys + <u32>(va & (<u64>PAGE_BYTES - 1));
      else {
        phys = gpuVaTranslateWrite(owner, va);
        if (phys != 0) { cachedVaPage = va & ~(<u64>PAGE_BYTES - 1); cachedPagePhys = phys - <u32>(va & (<u64>PAGE_BYTES - 1)); }
      }
      const fault = storeFault(owner, va, phys);
      if (fault != OK) { if (!timed) result = fault; break; } // nothing consumed (a stretch leaves the command to engineStep)
      if (fence != cachedFence) {
        cachedFence = fence;
        cachedLive = fenceValid(fence);
        if (cachedLive) { const f = fenceAt(fence); cachedCvPhys = f.cvPhys; cachedMvPhys = f.mvPhys; cachedCross = (f.flags & SYNC_FLAG_CROSS_ADAPTER) != 0; }
      }
      if (timed && !stretchQuietSignal(cachedLive, cachedCross, cachedCvPhys, cachedMvPhys, command.value)) break;
      // The write buffers the steps below use, taken by the run's first signal: the engine's (an older
      // store drains, as step 1's bufferStore drains it) and the queue's log write buffer (its entry
      // reaches memory, as step 2's flush, and the locals hold the buffer from here on).
      if (!drained) { drain(e); drained = true; }
      if (word >= 0 && !bufferTaken) { logRunFlush(q); bufferTaken = true; }
      signalled = true;
      // This signal, then (engineRun) the next ones of the same fence through the same page, each these steps:
      let signal = command;
      while (true) {
        const value = signal.value;
        const stampNs: u64 = timed ? <u64>r.nowNs : fixedNowNs;
        // 1. the store (the engine's write buffer is empty: it reaches memory in step 4); consumed and counted
        head++;
        gpuSignals++;
        // 2. the log entry into the log write buffer (the entry it held reaches memory), 3. the index advance
        if (word >= 0) {
          if (bufferAt != 0) logRunWrite(bufferAt, bufferHandle, bufferValue, NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED, 0, bufferEndNs);
          bufferAt = logRunSlot(signalLog, <u64>word);
          bufferHandle = signal.handle; bufferValue = value; bufferEndNs = stampNs;
          word = <i64>logRunAdvance(count, <u64>word);
        }
        // 4. the barrier: the value reaches memory (the doorbell is off: with it on, signals go to execute())
        storeValue(phys, value, value32);
        lastValue = value;
        fenceCommands++;
        steps++;
        last = c;
        c += RING_COMMAND_BYTES;             // the head moved one command: next slot, wrapping
        if (c == ringEnd) c = <usize>q.ring;
        // 5. the CMP's conditional interrupt (a command naming no live fence raises nothing): the run stops there
        if (cachedLive) {
          cmpChecks++;
          if (cmpRaises(value, cachedMvPhys)) { raiseFor(engine, fence, id); result = STEP_INTERRUPT; break; }
        }
        if (timed || steps >= limit) break;  // a stretch takes its next tick per command
        signal = changetype<RingCommand>(c);
        const nextVa = signal.gpuVa;
        if (signal.op != OP_SIGNAL || signal.fence != fence || (nextVa & ~(<u64>PAGE_BYTES - 1)) != cachedVaPage) break;
        phys = cachedPagePhys + <u32>(nextVa & (<u64>PAGE_BYTES - 1));
        if ((phys & 7) != 0) break;          // storeFault's alignment rule: the outer loop reports it
      }
    } else {
      if (timed && !stretchQuietOther(owner, command)) break;
      runSave(q, e, a, head, signalLog, word, wordInMemory, bufferTaken, bufferAt, bufferHandle, bufferValue, bufferEndNs, gpuSignals, cmpChecks, signalled, lastValue, value32);
      result = execute(q, id, command, timed ? <u64>r.nowNs : fixedNowNs);
      head = q.head;
      word = logRunStart(signalLog, NATIVE_FENCE_LOG_TYPE_SIGNALS); wordInMemory = word;
      bufferTaken = false; bufferAt = 0; gpuSignals = 0; cmpChecks = 0; signalled = false;
      if (result < 0) break;
      if (op == OP_WAIT || op == OP_SIGNAL) fenceCommands++;
      steps++;
      last = c;
      c += RING_COMMAND_BYTES;
      if (c == ringEnd) c = <usize>q.ring;
    }
    if (!timed) { if (result != STEP_DONE) break; continue; }
    if (!stretchInPlace(r, op, command)) { stop = STRETCH_STOP_QUEUED; break; }
  }
  runSave(q, e, a, head, signalLog, word, wordInMemory, bufferTaken, bufferAt, bufferHandle, bufferValue, bufferEndNs, gpuSignals, cmpChecks, signalled, lastValue, value32);
  if (last != 0) reportCommand(changetype<RingCommand>(last));
  rep.steps = steps;
  if (timed) { stretchEnd(r, stop, fenceCommands); return STEP_DONE; }
  if (result == STEP_DONE && steps == pending && steps < maxSteps) result = STEP_IDLE;
  return result;
}

/**
 * A run's state back where execute()'s steps keep it (before the run hands a
 * command to execute(), and at its end): the queue's head, the counters, the
 * log's write buffer in the queue (logRunBuffer) and its header word in the
 * header, and after a signal what its steps leave in the engine's drained
 * write buffer (its value) and the StepReport (no doorbell record).
 */
@inline function runSave(q: QueueRecord, e: EngineRecord, a: AdapterHeader, head: u32, signalLog: u32, word: i64, wordInMemory: i64,
                         bufferTaken: bool, bufferAt: u32, bufferHandle: u32, bufferValue: u64, bufferEndNs: u64,
                         gpuSignals: u64, cmpChecks: u64, signalled: bool, lastValue: u64, value32: bool): void {
  q.head = head;
  a.gpuSignals += gpuSignals; e.signals += gpuSignals; a.cmpChecks += cmpChecks;
  if (bufferTaken && bufferAt != 0) logRunBuffer(q, bufferAt, bufferHandle, bufferValue, NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED, 0, bufferEndNs);
  if (word >= 0 && word != wordInMemory) atomic.store<u64>(<usize>signalLog, <u64>word);
  if (signalled) {
    e.pendingValue = lastValue;
    e.pendingValue32 = value32 ? 1 : 0;
    reportNoDoorbell();
  }
}

// ─────────────────────────── a stretch's rules (engineRunStretch) ───────────────────────────

/** A stretch's record at its start: room for it in the out buffer (false: none), its outputs cleared. */
@inline function stretchBegin(a: AdapterHeader, r: StretchRecord): bool {
  if (<u64>a.outCapacity * 4 < <u64>(STRETCH_RECORD_OFFSET + STRETCH_RECORD_BYTES)) return false;
  r.inPlace = 0; r.nextQueued = 0; r.stop = STRETCH_STOP_LOUD; r.fenceCommands = 0;
  return true;
}

/** May a stretch run this signal without the host? A live fence of this adapter only, no rewind (the host reports those), no interrupt. */
@inline function stretchQuietSignal(live: bool, cross: bool, cvPhys: u32, mvPhys: u32, value: u64): bool {
  return live && !cross && value >= atomic.load<u64>(<usize>cvPhys) && !cmpRaises(value, mvPhys);
}

/** May a stretch run this other command without the host? A wait that passes and work do; anything else needs it. */
@inline function stretchQuietOther(owner: u32, c: RingCommand): bool {
  const op = c.op;
  if (op == OP_WORK) return true;
  if (op != OP_WAIT) return false;
  const phys = gpuVaTranslate(owner, c.gpuVa);
  return phys != 0 && atomic.load<u64>(<usize>phys) >= c.value;
}

/**
 * After command `c` (op `op`) of a stretch: the engine's next tick, drawn as
 * the host draws it, with the host's own definitions (src/base/portable.ts,
 * which the core compiles too): its time as Random.jittered draws it
 * (commandNs + uniformBelow of the timing stream's next draw; work: its
 * duration), then Scheduler.atOrContinue's sequence and tie-break (the
 * tie-break stream's next draw). True when the scheduler would take it next
 * anyway (within the run's bound and budget, and runsBefore the earliest
 * queued event): it is taken in place (r.nowNs moves to it, one event of
 * r.budget used). False: it must be queued (r.nextNs, r.nextTieBreak).
 */
@inline function stretchInPlace(r: StretchRecord, op: u32, c: RingCommand): bool {
  const nowNs = r.nowNs;
  let nextNs: f64 = r.jitterSpan > 0 ? nowNs + (r.commandNs + uniformBelow(sfc32Next(stretchStream(r, STRETCH_TIMING_WORDS)), r.jitterSpan + 1)) : nowNs + r.commandNs;
  if (op == OP_WORK) nextNs = nowNs + <f64>c.value;
  const tieBreak = sfc32Next(stretchStream(r, STRETCH_TIE_WORDS));
  const sequence = r.sequence;
  r.sequence = sequence + 1;
  if (r.budget == 0 || !(nextNs <= r.untilNs) || !runsBefore(nextNs, tieBreak, sequence, r.topTimeNs, r.topTieBreak, r.topSequence)) {
    r.nextNs = nextNs;
    r.nextQueued = 1;
    r.nextTieBreak = tieBreak;
    return false;
  }
  r.budget--;
  r.inPlace++;
  r.nowNs = nextNs;
  return true;
}

/** A stretch's end in its record: why it stopped, the fence commands it ran, and the next tick's time (now, unless it must be queued). */
@inline function stretchEnd(r: StretchRecord, stop: u32, fenceCommands: u32): void {
  if (stop != STRETCH_STOP_QUEUED) r.nextNs = r.nowNs;
  r.stop = stop;
  r.fenceCommands = fenceCommands;
}

/** Where the StretchRecord's two generator states start (four u32 each). */
const STRETCH_TIMING_WORDS: usize = offsetof<StretchRecord>('timingA');
const STRETCH_TIE_WORDS: usize = offsetof<StretchRecord>('tieA');

/** One of the StretchRecord's generator states as sfc32 words, in place (sfc32Next steps them there; the host loads them back). */
@inline function stretchStream(r: StretchRecord, words: usize): Sfc32State {
  return changetype<Sfc32State>(changetype<usize>(r) + words);
}

/**
 * The hardware scheduler looks at a blocked queue again (after a GPU signal
 * on this adapter, or when the driver rescans its run list on
 * UpdateCurrentValuesFromCpu). STEP_UNBLOCKED retires the wait; the
 * StepReport holds its fence, handle, value and observedNs = the GPU time
 * the wait was first observed.
 * Without a GPU time the wait-unblocked log entry's end timestamp is the
 * observed one; queueRecheckAt gives the real time.
 */
export function queueRecheck(id: u32): i32 {
  if (!queueValid(id)) return E_BAD_QUEUE;
  return queueRecheckAt(id, queueAt(id).blockedSinceNs);
}

/** queueRecheck at GPU time `nowNs`: an unblocked wait is logged (LOG-04) with FenceEndGpuTimestamp = nowNs. */
export function queueRecheckAt(id: u32, nowNs: u64): i32 {
  if (!queueValid(id)) return E_BAD_QUEUE;
  const q = queueAt(id);
  if (q.state != QUEUE_STATE_BLOCKED) return STEP_DONE;
  const c = changetype<RingCommand>(commandAt(q, q.head));
  const phys = gpuVaTranslate(q.owner, c.gpuVa);
  if (phys == 0) return E_GPU_PAGE_FAULT;
  if (atomic.load<u64>(<usize>phys) < c.value) return STEP_BLOCKED;
  q.state = QUEUE_STATE_READY;
  q.head++;
  const r = report();
  r.observedNs = q.blockedSinceNs;
  r.fence = c.fence;
  r.handle = c.handle;
  r.value = c.value;
  r.op = c.op;
  q.blockedFence = 0;
  logRecord(id, NATIVE_FENCE_LOG_TYPE_WAITS, c.handle, c.value, NATIVE_FENCE_LOG_OPERATION_WAIT_UNBLOCKED, q.blockedSinceNs, nowNs);
  return STEP_UNBLOCKED;
}

// ─────────────────────────── CPU access (kernel) ───────────────────────────

/** Kernel-mode write of CurrentValue (the driver's UpdateCurrentValuesFromCpu). */
export function cpuWriteCurrentValue(fence: u32, value: u64): i32 {
  if (!fenceValid(fence)) return E_BAD_FENCE;
  atomic.store<u64>(<usize>fenceAt(fence).cvPhys, value);
  return OK;
}

export function cpuReadCurrentValue(fence: u32): u64 { return atomic.load<u64>(<usize>fenceAt(fence).cvPhys); }
export function cpuReadMonitoredValue(fence: u32): u64 { return atomic.load<u64>(<usize>fenceAt(fence).mvPhys); }

/** Baseline for gpuSignal.vsRawStore: `count` bare 64-bit atomic stores plus one compare each. */
export function bareSignalLoop(cv: u32, mv: u32, count: u32): u32 {
  let raised: u32 = 0;
  for (let i: u32 = 1; i <= count; i++) {
    atomic.store<u64>(<usize>cv, <u64>i);
    if (<u64>i > atomic.load<u64>(<usize>mv)) raised++;
  }
  return raised;
}

export { UINT64_MAX };
