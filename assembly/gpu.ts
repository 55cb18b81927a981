// The GPU side: hardware queues, engines and the context management processor
// (CMP), as discrete steps.
//
// A hardware queue is a ring of Commands the user-mode driver writes and the
// engine consumes. One engineStep executes one command. The protocol steps a
// signal is made of are also exported one by one, so a schedule explorer (or
// a directed test) can interleave them with the CPU's steps:
//
//   GPU signal (NF-05, NF-11, LOG-04)        CPU adds/retires a waiter (NF-09)
//   ─────────────────────────────────        ──────────────────────────────────
//   engineSignalWrite  CV → write buffer     OS: new MonitoredValue target
//   engineDrain        write buffer → memory  KMD: cmpUpdateMonitoredValue
//   cmpSignalCheck     value > MV ? raise         write MV, barrier, read CV,
//                                                 raise if CV > MV
//                                              OS: resample CurrentValue
//
// engineStep composes the left column in that order. Without the barrier in
// cmpUpdateMonitoredValue, a store still in an engine's write buffer is not
// seen by the CMP's read and the wakeup can be lost (the NF-11 test shows it).
//
// Queue states:   READY ──wait not satisfied──▶ BLOCKED ──queueRecheck sees CV >= value──▶ READY

import {
  QueueRecord, QUEUE_RECORD_BYTES, QUEUE_STATE_FREE, QUEUE_STATE_READY, QUEUE_STATE_BLOCKED,
  Command, COMMAND_BYTES, OP_WAIT, OP_SIGNAL, OP_WORK, OP_NOP, OP_FENCE_WRITE, EngineRecord,
  OK, E_NO_QUEUES, E_BAD_QUEUE, E_RING_FULL, E_GPU_PAGE_FAULT, E_BAD_ENGINE, E_BAD_FENCE, E_BAD_PROCESS, E_BAD_ARGUMENT,
  STEP_IDLE, STEP_DONE, STEP_BLOCKED, STEP_WORK, STEP_INTERRUPT, STEP_UNBLOCKED, STEP_MONITORED_INTERRUPT,
  UINT64_MAX, INTERRUPT_QUEUE_UNKNOWN,
} from './layout';
import { adapter, engineAt, fenceAt, fenceValid, outWord, gpuVaTranslate } from './adapter';
import {
  logRecord, logRecordOn, NATIVE_FENCE_LOG_TYPE_SIGNALS, NATIVE_FENCE_LOG_TYPE_WAITS,
  NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED, NATIVE_FENCE_LOG_OPERATION_WAIT_UNBLOCKED,
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
  return <usize>q.ring + <usize>(position % adapter().ringEntries) * COMMAND_BYTES;
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
    const generation = q.generation + 1;
    memory.fill(changetype<usize>(q), 0, QUEUE_RECORD_BYTES);
    q.state = QUEUE_STATE_READY;
    q.engine = engine;
    q.owner = owner;
    q.generation = generation;
    q.ring = a.ringArena + (id - 1) * a.ringEntries * COMMAND_BYTES;
    a.queueLive++;
    return <i32>id;
  }
  return E_NO_QUEUES;
}

export function queueDestroy(id: u32): i32 {
  if (!queueValid(id)) return E_BAD_QUEUE;
  const q = queueAt(id);
  q.state = QUEUE_STATE_FREE;
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
  if (op > OP_FENCE_WRITE) return E_BAD_ARGUMENT;
  const q = queueAt(id);
  if (q.tail - q.head >= adapter().ringEntries) return E_RING_FULL;
  const c = changetype<Command>(commandAt(q, q.tail));
  c.op = op; c.fence = fence; c.value = value; c.gpuVa = gpuVa; c.handle = handle; c.reserved = 0;
  q.tail++;
  return OK;
}

export function queuePending(id: u32): u32 { const q = queueAt(id); return q.tail - q.head; }
export function queueState(id: u32): u32 { return queueAt(id).state; }
export function queueEngine(id: u32): u32 { return queueAt(id).engine; }
export function queueBlockedFence(id: u32): u32 { return queueAt(id).blockedFence; }
export function queueBlockedValue(id: u32): u64 { return queueAt(id).blockedValue; }
export function queueBlockedSince(id: u32): u64 { return queueAt(id).blockedSinceNs; }
/** The command the queue will execute next: its op, value, fence and handle. */
export function queueHeadOp(id: u32): u32 { const q = queueAt(id); return q.tail == q.head ? OP_NOP : changetype<Command>(commandAt(q, q.head)).op; }
export function queueHeadValue(id: u32): u64 { const q = queueAt(id); return changetype<Command>(commandAt(q, q.head)).value; }
export function queueHeadFence(id: u32): u32 { const q = queueAt(id); return changetype<Command>(commandAt(q, q.head)).fence; }
export function queueHeadHandle(id: u32): u32 { const q = queueAt(id); return changetype<Command>(commandAt(q, q.head)).handle; }

// ─────────────────────────── memory as the GPU sees it ───────────────────────────

/** Reads a 64-bit value at a GPU VA of process `slot`; E_GPU_PAGE_FAULT in out[0] when unmapped. */
@inline function gpuLoad(slot: u32, va: u64): u64 {
  const phys = gpuVaTranslate(slot, va);
  if (phys == 0) { store<i32>(outWord(0), E_GPU_PAGE_FAULT); return 0; }
  return atomic.load<u64>(<usize>phys);
}

// ─────────────────────────── the signal's steps ───────────────────────────

/**
 * Step 1 of a GPU signal: the engine stores `value` at `gpuVa` (process
 * `slot`'s address space). The store waits in the engine's write buffer;
 * a store already there drains first (one-entry buffer).
 */
export function engineSignalWrite(engine: u32, slot: u32, gpuVa: u64, value: u64): i32 {
  const a = adapter();
  if (engine >= a.engineCount) return E_BAD_ENGINE;
  const phys = gpuVaTranslate(slot, gpuVa);
  if (phys == 0 || (phys & 7) != 0) return E_GPU_PAGE_FAULT;
  const e = engineAt(engine);
  if (e.pendingPhys != 0) engineDrain(engine);
  e.pendingPhys = phys;
  e.pendingValue = value;
  e.pendingValue32 = (a.capsBits & CAP_NO_64BIT_ATOMICS) != 0 ? 1 : 0;
  return OK;
}

/** Step 2: the engine's write buffer reaches memory (a 32-bit-only engine writes the low half). */
export function engineDrain(engine: u32): i32 { return drain(engineAt(engine)); }
@inline function drain(e: EngineRecord): i32 {
  if (e.pendingPhys == 0) return 0;
  if (e.pendingValue32 != 0) atomic.store<u32>(<usize>e.pendingPhys, <u32>e.pendingValue);
  else atomic.store<u64>(<usize>e.pendingPhys, e.pendingValue);
  e.pendingPhys = 0;
  return 1;
}

/** Is a store of the engine still in its write buffer? */
export function enginePendingWrite(engine: u32): u32 { return engineAt(engine).pendingPhys; }

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
      if (load<u32>(<usize>e.pendingList + (<usize>i << 2)) == handle) { listed = true; break; }
    }
    if (!listed) {
      if (e.pendingCount < a.pendingCapacity) {
        store<u32>(<usize>e.pendingList + (<usize>e.pendingCount << 2), handle);
        e.pendingCount++;
      } else {
        e.pendingOverflow = 1;
      }
    }
  }
  if (e.interruptLine == 0) { e.interrupts++; a.interruptsRaised++; }
  e.interruptLine = 1;
}

/** Step 3: the CMP's conditional interrupt (NF-05): raise iff value > MonitoredValue. */
export function cmpSignalCheck(engine: u32, fence: u32, value: u64): i32 {
  if (!fenceValid(fence)) return E_BAD_FENCE;
  const a = adapter();
  a.cmpChecks++;
  const monitored = atomic.load<u64>(<usize>fenceAt(fence).mvPhys);
  if (value > monitored) { raiseFor(engine, fence, engineAt(engine).runningQueue); return 1; }
  return 0;
}

/**
 * The CMP side of DxgkDdiUpdateMonitoredValues for one fence (NF-11): write
 * the new MonitoredValue, memory barrier (every engine's write buffer drains),
 * read CurrentValue, raise the interrupt if CurrentValue > MonitoredValue.
 * `barrier` = 0 leaves the barrier out, to show what that loses.
 * Returns 1 when it raised the interrupt.
 */
export function cmpUpdateMonitoredValue(engine: u32, fence: u32, monitored: u64, barrier: u32): i32 {
  if (!fenceValid(fence)) return E_BAD_FENCE;
  const a = adapter();
  if (engine >= a.engineCount) return E_BAD_ENGINE;
  const f = fenceAt(fence);
  atomic.store<u64>(<usize>f.mvPhys, monitored);
  if (barrier != 0) {
    for (let e: u32 = 0; e < a.engineCount; e++) engineDrain(e);
  }
  a.cmpChecks++;
  const current = atomic.load<u64>(<usize>f.cvPhys);
  if (current > monitored) { raiseFor(engine, fence, 0); return 1; }
  return 0;
}

/**
 * The driver takes the raised interrupt's payload: the listed driver handles
 * go to the out buffer. Returns the count, -1 for "no list" (collapsed or
 * overflowed), or -2 when no interrupt is raised.
 */
export function engineTakeInterrupt(engine: u32): i32 {
  const e = engineAt(engine);
  if (e.interruptLine == 0) return -2;
  const overflow = e.pendingOverflow != 0;
  const count = e.pendingCount;
  for (let i: u32 = 0; i < count; i++) store<u32>(outWord(i), load<u32>(<usize>e.pendingList + (<usize>i << 2)));
  e.pendingCount = 0;
  e.pendingOverflow = 0;
  e.interruptLine = 0;
  e.interruptQueue = 0;
  return overflow ? -1 : <i32>count;
}

export function engineInterruptLine(engine: u32): u32 { return engineAt(engine).interruptLine; }

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
 * XA-07, the signalling side: when the doorbell is on and `fence` is a
 * cross-adapter fence, post (CurrentValue word, value) to every other
 * adapter's ring. out[8] = records posted, out[9] = rings that were full; a
 * full ring falls back to the interrupt path (the fence is listed on this
 * engine's interrupt and the OS propagates it). Returns true on fallback.
 */
function doorbellSignal(engine: u32, fence: u32, value: u64, queue: u32): bool {
  store<u32>(outWord(8), 0);
  store<u32>(outWord(9), 0);
  const a = adapter();
  if (a.doorbellDirectory == 0 || !fenceValid(fence)) return false;
  const f = fenceAt(fence);
  if ((f.flags & SYNC_FLAG_CROSS_ADAPTER) == 0) return false;
  let posted: u32 = 0;
  let full: u32 = 0;
  const count = doorbellAdapterCount(a.doorbellDirectory);
  for (let target: u32 = 0; target < count; target++) {
    if (target == a.adapterIndex) continue;
    if (doorbellPost(a.doorbellDirectory, target, a.adapterIndex, f.cvPhys, value) == OK) posted++;
    else full++;
  }
  store<u32>(outWord(8), posted);
  store<u32>(outWord(9), full);
  if (full != 0) raiseFor(engine, fence, queue);
  return full != 0;
}

// ─────────────────────────────── executing ───────────────────────────────

/**
 * Executes the command at the head of queue `id` on its engine at GPU time
 * `nowNs`. Returns a STEP_* code (or a negative error, nothing consumed):
 *   STEP_IDLE       ring empty
 *   STEP_DONE       a wait passed or a signal retired with no interrupt
 *   STEP_BLOCKED    a wait is not satisfied; the queue is BLOCKED
 *   STEP_WORK       out[0..1] = busy duration in ns
 *   STEP_INTERRUPT  a signal retired and the CMP raised the interrupt
 * For every command out[2] = fence id, out[3] = handle, out[4..5] = value, out[7] = op.
 */
export function engineStep(id: u32, nowNs: u64): i32 {
  if (!queueValid(id)) return E_BAD_QUEUE;
  const q = queueAt(id);
  if (q.state == QUEUE_STATE_BLOCKED) return STEP_BLOCKED;
  if (q.head == q.tail) return STEP_IDLE;
  const c = changetype<Command>(commandAt(q, q.head));
  engineAt(q.engine).runningQueue = id;
  reportCommand(c);
  return execute(q, id, c, nowNs);
}

/** out[2] = fence id, out[3] = handle, out[4..5] = value, out[7] = op of the command a step executed. */
@inline function reportCommand(c: Command): void {
  const out = adapter().outBuffer;
  store<u32>(out, c.fence, 8);
  store<u32>(out, c.handle, 12);
  store<u64>(out, c.value, 16);
  store<u32>(out, c.op, 28);
}

/**
 * Executes command `c`, the head of ready queue `q` (id `id`), on the
 * queue's engine, whose runningQueue is `id`. engineStep and engineRun check
 * the queue; engineRun walks the ring without a division per command and
 * reports only the last command it executed.
 */
@inline function execute(q: QueueRecord, id: u32, c: Command, nowNs: u64): i32 {
  const op = c.op;
  if (op == OP_WAIT) {
    store<i32>(outWord(0), OK);
    const current = gpuLoad(q.owner, c.gpuVa);
    if (load<i32>(outWord(0)) == E_GPU_PAGE_FAULT) return E_GPU_PAGE_FAULT;
    if (current >= c.value) {
      q.head++;
      // LOG-04 for a wait that never blocked: observed and end are both now.
      logRecordOn(q, NATIVE_FENCE_LOG_TYPE_WAITS, c.handle, c.value, NATIVE_FENCE_LOG_OPERATION_WAIT_UNBLOCKED, nowNs, nowNs);
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
    const a = adapter();
    const value = c.value;
    // LOG-04: 1. the fence value (engineSignalWrite then engineDrain: into the write buffer and out at once)
    const phys = gpuVaTranslate(q.owner, c.gpuVa);
    if (phys == 0 || (phys & 7) != 0) return E_GPU_PAGE_FAULT;
    const e = engineAt(engine);
    if (e.pendingPhys != 0) drain(e);
    if ((a.capsBits & CAP_NO_64BIT_ATOMICS) != 0) atomic.store<u32>(<usize>phys, <u32>value);
    else atomic.store<u64>(<usize>phys, value);
    q.head++;
    a.gpuSignals++;
    e.signals++;
    const fence = c.fence;
    if (op == OP_FENCE_WRITE) {
      // A monitored fence write is always followed by its signaled interrupt.
      raiseFor(engine, fence, id);
      return STEP_MONITORED_INTERRUPT;
    }
    // 2. + 3. the log entry with its GPU timestamp, the index advance (a corrupt header drops the entry)
    logRecordOn(q, NATIVE_FENCE_LOG_TYPE_SIGNALS, c.handle, value, NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED, 0, nowNs);
    // 4. memory barrier: whatever the engine still buffers reaches memory
    drain(e);
    // XA-07: a cross-adapter fence rings the other adapters' doorbells (opt-in); a full ring falls back to the interrupt
    let fallback = false;
    if (a.doorbellDirectory != 0) fallback = doorbellSignal(engine, fence, value, id);
    else { store<u32>(outWord(8), 0); store<u32>(outWord(9), 0); } // what doorbellSignal reports with the doorbell off
    // 5. the conditional interrupt (cmpSignalCheck; a command naming no live fence raises nothing)
    let raised = false;
    if (fenceValid(fence)) {
      a.cmpChecks++;
      if (value > atomic.load<u64>(<usize>fenceAt(fence).mvPhys)) { raiseFor(engine, fence, e.runningQueue); raised = true; }
    }
    return raised || fallback ? STEP_INTERRUPT : STEP_DONE;
  }
  if (op == OP_WORK) {
    store<u64>(outWord(0), c.value);
    q.head++;
    return STEP_WORK;
  }
  q.head++;
  return STEP_DONE;
}

/**
 * Runs engineStep until a step needs the host (anything but STEP_DONE) or
 * `maxSteps` commands ran. out[6] = commands executed. Returns the last step.
 */
export function engineRun(id: u32, nowNs: u64, maxSteps: u32): i32 {
  if (!queueValid(id)) { store<u32>(outWord(6), 0); return E_BAD_QUEUE; }
  const q = queueAt(id);
  const ringEnd = <usize>q.ring + <usize>adapter().ringEntries * COMMAND_BYTES;
  let c = commandAt(q, q.head);
  let last: usize = 0;
  let steps: u32 = 0;
  let result: i32 = maxSteps > 0 && q.state == QUEUE_STATE_BLOCKED ? STEP_BLOCKED : STEP_DONE;
  // Only execute() changes the queue during the run, and it stops the run when it blocks it.
  const pending = q.tail - q.head;
  const limit = min<u32>(maxSteps, pending);
  if (result == STEP_DONE && limit > 0) engineAt(q.engine).runningQueue = id;
  while (result == STEP_DONE && steps < limit) {
    last = c;
    result = execute(q, id, changetype<Command>(c), nowNs);
    if (result >= 0) steps++;
    c += COMMAND_BYTES;                 // the head moved one command: next slot, wrapping
    if (c == ringEnd) c = <usize>q.ring;
  }
  if (result == STEP_DONE && steps == pending && steps < maxSteps) result = STEP_IDLE;
  if (last != 0) reportCommand(changetype<Command>(last));
  store<u32>(outWord(6), steps);
  return result;
}

/**
 * The hardware scheduler looks at a blocked queue again (after a GPU signal
 * on this adapter, or when the driver rescans its run list on
 * UpdateCurrentValuesFromCpu). STEP_UNBLOCKED retires the wait and puts
 * out[0..1] = the GPU time the wait was first observed.
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
  const c = changetype<Command>(commandAt(q, q.head));
  store<i32>(outWord(0), OK);
  const current = gpuLoad(q.owner, c.gpuVa);
  if (load<i32>(outWord(0)) == E_GPU_PAGE_FAULT) return E_GPU_PAGE_FAULT;
  if (current < c.value) return STEP_BLOCKED;
  q.state = QUEUE_STATE_READY;
  q.head++;
  store<u64>(outWord(0), q.blockedSinceNs);
  store<u32>(outWord(2), c.fence);
  store<u32>(outWord(3), c.handle);
  store<u64>(outWord(4), c.value);
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
