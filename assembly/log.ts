// Native fence log buffers (LOG-01..07, LOG-10): the GPU's side.
//
// Every user-mode-submission hardware queue has two 4 KiB log buffers, one
// for waits and one for signals, in system memory pages the OS allocates and
// formats (logFormat). The OS tells the driver where they are
// (SetNativeFenceLogBuffer → queueSetLogBuffer), and the GPU appends an entry
// after every native fence signal it executes and every wait it sees
// satisfied. The layout is the public one (WDDM-FACTS.md):
//
//   one 4 KiB page
//   @0    ┌──────────────────────────────────────────────────────┐
//         │ DXGK_NATIVE_FENCE_LOG_HEADER (40 bytes)              │
//         │ @0  AtomicWraparoundAndEntryIndex u64 (ONE atomic)   │
//         │       low u32  FirstFreeEntryIndex                   │
//         │       high u32 WraparoundCount                       │
//         │ @8  Type u32 (WAITS 1, SIGNALS 2) │ @12 padding u32  │
//         │ @16 NumberOfEntries u64                              │
//         │ @24 Reserved[2] u64                                  │
//   @40   ├──────────────────────────────────────────────────────┤
//         │ DXGK_NATIVE_FENCE_LOG_ENTRY [0] (48 bytes)           │
//         │ @0  FenceValue u64                                   │
//         │ @8  hNativeFence u32 (user-mode handle)              │
//         │ @12 OperationType u32 (SIGNAL_EXECUTED 0,            │
//         │                        WAIT_UNBLOCKED 1)             │
//         │ @16 reserved u64                                     │
//         │ @24 FenceObservedGpuTimestamp u64 (waits only)       │
//         │ @32 reserved u64                                     │
//         │ @40 FenceEndGpuTimestamp u64                         │
//   @88   ├──────────────────────────────────────────────────────┤
//         │ entry [1] … entry [83]                               │ (4096 − 40) / 48 = 84
//   @4072 ├──────────────────────────────────────────────────────┤
//         │ 24 bytes unused                                      │
//   @4096 └──────────────────────────────────────────────────────┘
//
// The GPU's order for a signal or an unblocked wait (LOG-04), each a step of
// its own so a schedule explorer can interleave them with the CPU's:
//
//   1. write the fence value              (engineSignalWrite: into the engine's write buffer; waits: nothing)
//   2. logWriteEntry  the payload goes to the queue's log write buffer,
//                     aimed at slot FirstFreeEntryIndex
//   3. logAdvance     FirstFreeEntryIndex + 1 (0 and WraparoundCount + 1 at
//                     the end): one 64-bit compare-and-swap
//   4. memory barrier (engineDrain: the engine's write buffer drains; the
//                     index and the fence value are visible)
//   5. the CMP's conditional interrupt (cmpSignalCheck)
//
// engineStep (assembly/gpu.ts) calls exactly these exports in this order.
//
// The entry itself may still sit in the queue's one-entry log write buffer
// after step 4: the design moves that barrier to the CPU side. Before the OS
// reads entries it calls DxgkDdiUpdateNativeFenceLogs, whose driver half is
// logFlush (LOG-06). A reader that skips it can read a stale slot.
//
// The writer never waits for the reader: it may overwrite unread entries
// (LOG-05); the reader compares positions (WraparoundCount × entries +
// FirstFreeEntryIndex) with its cached ones to see it.

import {
  QueueRecord, QUEUE_RECORD_BYTES, QUEUE_STATE_FREE, PAGE_BYTES,
  OK, E_BAD_QUEUE, E_BAD_ARGUMENT, E_LOG_CORRUPT, align8,
} from './layout';
import { adapter } from './adapter';
import { regionAllocPage, regionFreePage } from './region';

export const NATIVE_FENCE_LOG_TYPE_WAITS: u32 = 1;
export const NATIVE_FENCE_LOG_TYPE_SIGNALS: u32 = 2;
export const NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED: u32 = 0;
export const NATIVE_FENCE_LOG_OPERATION_WAIT_UNBLOCKED: u32 = 1;

@unmanaged export class DXGK_NATIVE_FENCE_LOG_HEADER {
  AtomicWraparoundAndEntryIndex: u64; // low u32 FirstFreeEntryIndex, high u32 WraparoundCount
  Type: u32;
  Padding: u32;
  NumberOfEntries: u64;
  Reserved0: u64;
  Reserved1: u64;
}
export const NATIVE_FENCE_LOG_HEADER_BYTES: u32 = align8(offsetof<DXGK_NATIVE_FENCE_LOG_HEADER>());

@unmanaged export class DXGK_NATIVE_FENCE_LOG_ENTRY {
  FenceValue: u64;
  hNativeFence: u32;
  OperationType: u32;
  Reserved0: u64;
  FenceObservedGpuTimestamp: u64;
  Reserved1: u64;
  FenceEndGpuTimestamp: u64;
}
export const NATIVE_FENCE_LOG_ENTRY_BYTES: u32 = align8(offsetof<DXGK_NATIVE_FENCE_LOG_ENTRY>());
/** Entries in one 4 KiB buffer: (4096 − 40) / 48 = 84. */
export const NATIVE_FENCE_LOG_ENTRIES: u32 = (PAGE_BYTES - NATIVE_FENCE_LOG_HEADER_BYTES) / NATIVE_FENCE_LOG_ENTRY_BYTES;
export const NATIVE_FENCE_LOG_INDEX_OFFSET: u32 = offsetof<DXGK_NATIVE_FENCE_LOG_HEADER>('AtomicWraparoundAndEntryIndex');
export const NATIVE_FENCE_LOG_TYPE_OFFSET: u32 = offsetof<DXGK_NATIVE_FENCE_LOG_HEADER>('Type');
export const NATIVE_FENCE_LOG_COUNT_OFFSET: u32 = offsetof<DXGK_NATIVE_FENCE_LOG_HEADER>('NumberOfEntries');
export const NATIVE_FENCE_LOG_ENTRY_VALUE_OFFSET: u32 = offsetof<DXGK_NATIVE_FENCE_LOG_ENTRY>('FenceValue');
export const NATIVE_FENCE_LOG_ENTRY_HANDLE_OFFSET: u32 = offsetof<DXGK_NATIVE_FENCE_LOG_ENTRY>('hNativeFence');
export const NATIVE_FENCE_LOG_ENTRY_OPERATION_OFFSET: u32 = offsetof<DXGK_NATIVE_FENCE_LOG_ENTRY>('OperationType');
export const NATIVE_FENCE_LOG_ENTRY_OBSERVED_OFFSET: u32 = offsetof<DXGK_NATIVE_FENCE_LOG_ENTRY>('FenceObservedGpuTimestamp');
export const NATIVE_FENCE_LOG_ENTRY_END_OFFSET: u32 = offsetof<DXGK_NATIVE_FENCE_LOG_ENTRY>('FenceEndGpuTimestamp');

@inline function header(phys: u32): DXGK_NATIVE_FENCE_LOG_HEADER { return changetype<DXGK_NATIVE_FENCE_LOG_HEADER>(<usize>phys); }
@inline function entryAddress(phys: u32, slot: u32): usize {
  return <usize>phys + NATIVE_FENCE_LOG_HEADER_BYTES + <usize>slot * NATIVE_FENCE_LOG_ENTRY_BYTES;
}
@inline function queueRecord(id: u32): QueueRecord {
  return changetype<QueueRecord>(<usize>adapter().queueTable + <usize>(id - 1) * QUEUE_RECORD_BYTES);
}
@inline function queueLive(id: u32): bool {
  return id != 0 && id <= adapter().queueCapacity && queueRecord(id).state != QUEUE_STATE_FREE;
}
@inline function typeValid(type: u32): bool {
  return type == NATIVE_FENCE_LOG_TYPE_WAITS || type == NATIVE_FENCE_LOG_TYPE_SIGNALS;
}

// ─────────────────────────── buffers (the OS's part) ───────────────────────────

/** Formats the page at `phys` as an empty log of `type`: index 0, wraparound 0, 84 entries. */
export function logFormat(phys: u32, type: u32): i32 {
  if (phys == 0 || (phys & (PAGE_BYTES - 1)) != 0 || !typeValid(type)) return E_BAD_ARGUMENT;
  memory.fill(<usize>phys, 0, PAGE_BYTES);
  const h = header(phys);
  h.Type = type;
  h.NumberOfEntries = NATIVE_FENCE_LOG_ENTRIES;
  return OK;
}

/**
 * Is the header at `phys` one the GPU may write through and the OS may read?
 * Type as expected, NumberOfEntries from 1 to what fits in 4 KiB, and
 * FirstFreeEntryIndex below NumberOfEntries. E_LOG_CORRUPT otherwise.
 */
export function logCheck(phys: u32, type: u32): i32 { return checkHeader(phys, type); }
@inline function checkHeader(phys: u32, type: u32): i32 {
  if (phys == 0 || (phys & (PAGE_BYTES - 1)) != 0) return E_BAD_ARGUMENT;
  const h = header(phys);
  if (h.Type != type) return E_LOG_CORRUPT;
  const count = h.NumberOfEntries;
  if (count == 0 || count > <u64>NATIVE_FENCE_LOG_ENTRIES) return E_LOG_CORRUPT;
  const word = atomic.load<u64>(<usize>phys);
  if (<u64>(<u32>word) >= count) return E_LOG_CORRUPT;
  return OK;
}

/** A new log buffer: one zeroed page of system memory, formatted as an empty `type` log. 0 when memory is full. */
export function logBufferCreate(type: u32): u32 {
  if (!typeValid(type)) return 0;
  const phys = regionAllocPage(adapter().systemRegion);
  if (phys == 0) return 0;
  logFormat(phys, type);
  return phys;
}

/** Returns a log buffer's page to system memory. */
export function logBufferDestroy(phys: u32): i32 { return regionFreePage(adapter().systemRegion, phys); }

/** The header's 64-bit word, read atomically (low: FirstFreeEntryIndex, high: WraparoundCount). */
export function logHeaderWord(phys: u32): u64 { return atomic.load<u64>(<usize>phys); }

// ─────────────────────────── the driver's part ───────────────────────────

/**
 * DxgkDdiSetNativeFenceLogBuffer lands here: from now on the queue's `type`
 * log is at `phys` (0 = none). A write still in the queue's log write buffer
 * reaches the old location first, so nothing is written to a page after the
 * OS was told it is no longer the queue's log (LOG-03).
 */
export function queueSetLogBuffer(queue: u32, type: u32, phys: u32): i32 {
  if (!queueLive(queue)) return E_BAD_QUEUE;
  if (!typeValid(type)) return E_BAD_ARGUMENT;
  if (phys != 0) {
    const r = logCheck(phys, type);
    if (r != OK) return r;
  }
  logFlush(queue);
  const q = queueRecord(queue);
  if (type == NATIVE_FENCE_LOG_TYPE_WAITS) q.waitLog = phys; else q.signalLog = phys;
  return OK;
}

export function queueLogBuffer(queue: u32, type: u32): u32 {
  if (!queueLive(queue)) return 0;
  return logOf(queueRecord(queue), type);
}
@inline function logOf(q: QueueRecord, type: u32): u32 {
  return type == NATIVE_FENCE_LOG_TYPE_WAITS ? q.waitLog : type == NATIVE_FENCE_LOG_TYPE_SIGNALS ? q.signalLog : 0;
}

/**
 * DxgkDdiUpdateNativeFenceLogs for one queue: the entry in the queue's log
 * write buffer reaches memory. Returns 1 when one did, 0 when it was empty.
 */
export function logFlush(queue: u32): i32 {
  if (!queueLive(queue)) return E_BAD_QUEUE;
  return flush(queueRecord(queue));
}
@inline function flush(q: QueueRecord): i32 {
  if (q.logPendingPhys == 0) return 0;
  entryWrite(q.logPendingPhys, q.logPendingHandle, q.logPendingValue, q.logPendingOperation, q.logPendingObservedNs, q.logPendingEndNs);
  q.logPendingPhys = 0;
  return 1;
}

/** An entry reaching memory at `at`: the one place its fields are written (the write buffer drains through it). */
@inline function entryWrite(at: u32, handle: u32, value: u64, operation: u32, observedNs: u64, endNs: u64): void {
  const e = changetype<DXGK_NATIVE_FENCE_LOG_ENTRY>(<usize>at);
  e.FenceValue = value;
  e.hNativeFence = handle;
  e.OperationType = operation;
  e.Reserved0 = 0;
  e.FenceObservedGpuTimestamp = observedNs;
  e.Reserved1 = 0;
  e.FenceEndGpuTimestamp = endNs;
}

/** Address of the slot the queue's log write buffer is aimed at (0 = empty). */
export function logPendingAddress(queue: u32): u32 { return queueLive(queue) ? queueRecord(queue).logPendingPhys : 0; }

/** Physical address of a live queue's record (its log write buffer is QUEUE_LOG_PENDING_BYTES at QUEUE_LOG_PENDING_OFFSET), 0 otherwise. */
export function queueRecordAddress(queue: u32): u32 { return queueLive(queue) ? changetype<u32>(queueRecord(queue)) : 0; }

// ─────────────────────────── the GPU's steps ───────────────────────────

/**
 * LOG-04 step 2: the GPU writes the entry for one operation into the queue's
 * `type` log at slot FirstFreeEntryIndex. The payload waits in the queue's
 * one-entry log write buffer (an older one drains first). Returns the slot;
 * a queue without that log returns OK and writes nothing; a corrupt header (count that does not fit, index past the end) makes the
 * GPU drop the entry (E_LOG_CORRUPT) rather than write outside the page.
 */
@inline export function logWriteEntry(queue: u32, type: u32, handle: u32, value: u64, operation: u32,
                              observedNs: u64, endNs: u64): i32 {
  if (!queueLive(queue)) return E_BAD_QUEUE;
  if (!typeValid(type) || operation > NATIVE_FENCE_LOG_OPERATION_WAIT_UNBLOCKED) return E_BAD_ARGUMENT;
  const q = queueRecord(queue);
  const phys = logOf(q, type);
  if (phys == 0) return OK;
  const r = checkHeader(phys, type);
  if (r != OK) return r;
  return writeEntry(q, phys, handle, value, operation, observedNs, endNs);
}
@inline function writeEntry(q: QueueRecord, phys: u32, handle: u32, value: u64, operation: u32, observedNs: u64, endNs: u64): i32 {
  const word = atomic.load<u64>(<usize>phys);
  writeEntryAt(q, slotAddress(phys, word), handle, value, operation, observedNs, endNs);
  return <i32><u32>word;
}
/** Step 2 itself: the entry aimed at slot address `at` goes into the queue's one-entry log write buffer (an older one drains first). */
@inline function writeEntryAt(q: QueueRecord, at: u32, handle: u32, value: u64, operation: u32, observedNs: u64, endNs: u64): void {
  flush(q);
  bufferEntry(q, at, handle, value, operation, observedNs, endNs);
}
/** The queue's one-entry log write buffer holds the entry for slot address `at` (it reaches memory at the next flush). */
@inline function bufferEntry(q: QueueRecord, at: u32, handle: u32, value: u64, operation: u32, observedNs: u64, endNs: u64): void {
  q.logPendingPhys = at;
  q.logPendingHandle = handle;
  q.logPendingOperation = operation;
  q.logPendingValue = value;
  q.logPendingObservedNs = observedNs;
  q.logPendingEndNs = endNs;
}
/** The slot address the header word `word` of log `phys` names (its low half, FirstFreeEntryIndex). */
@inline function slotAddress(phys: u32, word: u64): u32 { return <u32>entryAddress(phys, <u32>word); }

/**
 * LOG-04 step 3: FirstFreeEntryIndex + 1; past the last entry it goes back
 * to 0 and WraparoundCount + 1. Both halves change in one 64-bit
 * compare-and-swap, so a reader never sees one without the other.
 * Returns the new FirstFreeEntryIndex (or OK with no log, E_LOG_CORRUPT).
 */
@inline export function logAdvance(queue: u32, type: u32): i32 {
  if (!queueLive(queue)) return E_BAD_QUEUE;
  if (!typeValid(type)) return E_BAD_ARGUMENT;
  const phys = logOf(queueRecord(queue), type);
  if (phys == 0) return OK;
  const r = checkHeader(phys, type);
  if (r != OK) return r;
  return advance(phys);
}
@inline function advance(phys: u32): i32 {
  const count = <u32>header(phys).NumberOfEntries;
  let word = atomic.load<u64>(<usize>phys);
  let next: u64 = 0;
  while (true) {
    next = nextWord(count, word);
    const seen = atomic.cmpxchg<u64>(<usize>phys, word, next);
    if (seen == word) break;
    word = seen;
  }
  return <i32><u32>next;
}
/** Step 3's arithmetic: the header word after one more entry, `count` = NumberOfEntries (past the last entry: index 0, WraparoundCount + 1). */
@inline function nextWord(count: u32, word: u64): u64 {
  let index = <u32>word + 1;
  let wraps = <u32>(word >> 32);
  if (index >= count) { index = 0; wraps++; }
  return (<u64>wraps << 32) | <u64>index;
}

// ─────────────────────────── a run of commands (engineRun, engineRunStretch) ───────────────────────────
//
// A run checks the signal log's header once (nothing else writes a header while the core runs) and
// keeps the header word and the queue's one-entry log write buffer in locals: step 2 aims the entry
// at logRunSlot (the slot rule writeEntry uses) after the entry the buffer held reaches memory
// through logRunWrite (the entry format flush() writes), step 3 is logRunAdvance (the arithmetic
// logAdvance's compare-and-swap stores). Before the run hands a command to execute(), and at its
// end, the buffer goes back to the queue (logRunBuffer, what writeEntry leaves) and the word to the
// header, so each entry is written once and the header once. What memory holds after the run is what
// the same commands' logWriteEntry / logAdvance leave (test/core-engine-run.test.ts).

/** The header word of a log a run may write through (OK header), or -1 (no log, or a corrupt one: entries dropped). */
@inline export function logRunStart(phys: u32, type: u32): i64 {
  if (phys == 0 || checkHeader(phys, type) != OK) return -1;
  return <i64>atomic.load<u64>(<usize>phys);
}
/** NumberOfEntries of a log logRunStart accepted (read once per run). */
@inline export function logRunCount(phys: u32): u32 { return <u32>header(phys).NumberOfEntries; }
/** Step 2's slot in a run: the slot address the header word `word` of log `phys` names (writeEntry's slotAddress). */
@inline export function logRunSlot(phys: u32, word: u64): u32 { return slotAddress(phys, word); }
/** An entry the run's write buffer held reaches memory (flush()'s entryWrite). */
@inline export function logRunWrite(at: u32, handle: u32, value: u64, operation: u32, observedNs: u64, endNs: u64): void {
  entryWrite(at, handle, value, operation, observedNs, endNs);
}
/** The queue's own write buffer drains (flush()), before a run's first entry takes it over. */
@inline export function logRunFlush(q: QueueRecord): void { flush(q); }
/** The run's write buffer back in the queue (writeEntryAt's bufferEntry): its last entry stays there. */
@inline export function logRunBuffer(q: QueueRecord, at: u32, handle: u32, value: u64, operation: u32, observedNs: u64, endNs: u64): void {
  bufferEntry(q, at, handle, value, operation, observedNs, endNs);
}
/** Step 3 in a run: the header word after one more entry (logAdvance's nextWord), `count` = logRunCount. */
@inline export function logRunAdvance(count: u32, word: u64): u64 { return nextWord(count, word); }

/**
 * Steps 2 and 3 together, built from them (what queueRecheckAt does for an
 * unblocked wait; engineStep calls the two exports itself).
 */
export function logRecord(queue: u32, type: u32, handle: u32, value: u64, operation: u32, observedNs: u64, endNs: u64): i32 {
  const r = logWriteEntry(queue, type, handle, value, operation, observedNs, endNs);
  if (r < 0) return r;
  return logAdvance(queue, type);
}
