// CPU waits (NF-02, NF-03, NF-08, NF-09): D3DKMTWaitForSynchronizationObjectFromCpu,
// the waiters, and the loop that keeps each fence's MonitoredValue right.
//
// The waiters live in the core (assembly/heap.ts): one record per waiter
// (wait-all or wait-any, entries still waiting, the entry that satisfied a
// wait-any, its blocks) and one wait block per (waiter, fence) in the fence's
// min-heap. This file keeps only what must call back into JavaScript: a
// dense array of completions by the waiter's host id, each with the call's
// arguments as made (for tools) and its timeout.
//
//   startWait ─▶ waiterCreate + waitBlockAdd per fence ─▶ refresh
//   satisfy(fence, CurrentValue) ─▶ fenceSatisfy: records { waiter, entry, completed }
//        ─▶ a completed waiter is retired (waiterRetire on each adapter it has blocks on,
//           its home last) and its completion runs
//   the NF-09 loop (MonitoredLoop): for each changed fence, MonitoredValue goes to the new smallest
//        waited value − 1 (fenceMonitoredTarget; batched per adapter into one
//        UpdateMonitoredValues), then CurrentValue is read again and satisfies what it
//        unblocks, until nothing changes. Each turn retires at least one wait block, so it ends.
//        It is written once, as steps: loopPhase says which step is next (monitored-write, ddi,
//        resample), loopStep does it. An OS operation in steps schedules each as an event of its own;
//        refresh (operations run whole) does them one after another, to the end.
//
// Why this file is long: it holds the waiters' host-side store (the completions,
// the short waiters of one-fence waits without objects, the deliveries), the wait call's checks, the
// NF-09 loop and the OS operations' step driver, and all of them work on the same private records
// (completions, finish, satisfy); splitting them would open those records to another module.
//
// Operations in steps (Dxgkrnl.runOperationsInSteps: a machine built with
// schedule.osGranularity 'step'). The OS holds its lock across an operation (a wait's waiter add, an interrupt
// served, a CPU signal, and the NF-09 loop each ends with); each part of it is a scheduler
// event of its own ('dxgkrnl' os-step), so the GPU's steps run between them:
//
//   the event that starts it (waiter add; ISR + satisfy; UpdateCurrentValuesFromCpu + satisfy)
//   ─▶ retire      one satisfied waiter retired (its blocks, its completion: its thread wakes)
//   ─▶ monitored-write   the new MonitoredValue (fenceMonitoredTarget) and
//                  DxgkDdiUpdateMonitoredValues: the driver's first step
//   ─▶ ddi         the driver's next step (DdiInProgress), until the DDI returns
//   ─▶ resample    CurrentValue read again for one fence of the batch, and satisfy
//   ─▶ … the loop's next batch or turn; then the OS's other work of the operation, each a
//        step of its own, each followed by the loop again:
//   ─▶ log-read    an optimized interrupt's (or a held-back reader's) read of a queue's
//                  logs: headers, DxgkDdiUpdateNativeFenceLogs, entries, satisfy (src/os/logs.ts)
//   ─▶ log-fallback  an overrun's fallback: every fence of the queue's device (LOG-05)
//   ─▶ (the end of the call that started it, under the lock: an interrupt's legacy scan
//        and XA-04 propagation, a CPU signal's propagation; it may add notifications)
//   ─▶ notify      one target adapter of a cross-adapter propagation: UpdateCurrentValuesFromCpu
//                  with NotificationOnly (or, XA-05, its monitored fences scanned), then its
//                  waiters (src/os/cross-adapter.ts)
//   ─▶ … until nothing is left; then the lock is free.
// While the lock is held no other OS operation starts (the machine's scheduler gate); work
// started inside one of its steps joins it.

import { check, WddmError } from '../base/errors.js';
import { grownTo } from '../base/grow.js';
import { u64 as asU64, type CoreLayout, type WasmMemory } from '../core/bindings.js';
import type { DriverPort, PendingDdi } from '../port/driver-port.js';
import type { Scheduler, ScheduledEvent } from '../base/scheduler.js';
import type { Trace } from '../base/trace.js';
import * as v from '../base/validate.js';
import { MAX_OBJECTS_PER_CALL, SYNC_FLAG_BITS, hex } from '../base/wddm.js';
import { oneFenceCall, type Handles } from './handles.js';
import { checkMonitoredWait } from './monitored-window.js';
import { fenceKeyAt, fenceKeyObject, keyAdapter, keyCoreFence, liveFenceKey, rowKeyAdapterIndex, rowKeyCoreFence, rowsOf, type FenceKey } from './fence-rows.js';
import type { QueueLogs } from './log-records.js';
import {
  rejectRepeat, requireRunning,
  type GlobalFence, type LocalFence, type OsAdapter, type PendingWaiter, type Process, type WaiterOwner, type WaitResult, type WaitStatus,
} from './objects.js';

/** What a waiter does when it ends, and what tools need to name it; its state is the core's. */
export interface Completion {
  /** The waiter's host id: its slot in `completions`, handed to the core (reused once retired). */
  id: number;
  /** Wait order: tools and releases go oldest first. */
  sequence: number;
  label: string;
  mode: 'all' | 'any';
  owner: WaiterOwner;
  onComplete: (result: WaitResult) => void;
  /** onComplete runs later, as a microtask after the OS is done (a caller's callback: waitWithCallback), not inside the OS. */
  deferred: boolean;
  /**
   * The wait as made: entry i is fences[i] ≥ values[i] (the core's entries index these); a one-fence wait keeps its
   * fence and value themselves, not arrays of one (two objects fewer per waiter). Read them with entryFence / entryValue.
   */
  fences: GlobalFence | GlobalFence[];
  values: bigint | bigint[];
  /** The core's waiter record (its physical address), on `home`. */
  record: number;
  home: OsAdapter;
  /** The other adapters the waiter has wait blocks on (most waiters have none); retired before `home`. */
  others: OsAdapter[] | undefined;
  timeout?: ScheduledEvent;
  timeoutNs?: number;
}

/**
 * Who a wait of `process` belongs to: `owner` itself when it names the process already (a caller's one record for
 * many waits: tools only read it), else a record with the process's name added.
 */
const ownerOf = (process: Process, owner: Omit<WaiterOwner, 'process'> | WaiterOwner | undefined): WaiterOwner =>
  owner === undefined ? { process: process.name } : 'process' in owner ? owner : { process: process.name, ...owner };

/** The fence of a waiter's entry i. */
const entryFence = (c: Completion, i: number): GlobalFence => (Array.isArray(c.fences) ? c.fences[i] : c.fences);
/** The value of a waiter's entry i. */
const entryValue = (c: Completion, i: number): bigint => (Array.isArray(c.values) ? c.values[i] : c.values);

export interface WaitCounters {
  waitersAdded: number;
  waitersWoken: number;
  waitsSatisfiedAtOnce: number;
  waitsTimedOut: number;
}

const NO_WAIT_FLAG = 1 << SYNC_FLAG_BITS.noWait;
/** A key's adapter index (a row key's low 3 bits). */
const keyAdapterIndex = (key: FenceKey): number => (typeof key === 'number' ? rowKeyAdapterIndex(key) : key.adapter.index);
const byAdapterThenCoreId = (x: FenceKey, y: FenceKey): number => keyAdapterIndex(x) - keyAdapterIndex(y) || keyCoreFence(x) - keyCoreFence(y);

/** The step an OS operation's next event runs (the header's drawing). */
export type OperationPhase = 'retire' | 'monitored-write' | 'ddi' | 'resample' | 'log-read' | 'log-fallback' | 'notify';

/** A cross-adapter propagation's call to one target adapter, done as a step of its own (src/os/cross-adapter.ts). */
export interface OperationNotification { readonly target: OsAdapter; readonly records: GlobalFence[]; readonly values: bigint[] }
/** A read of queues' logs as a step of its own (src/os/logs.ts); `queues` are the OS's QueueLogs records. */
export interface OperationLogRead { readonly adapter: OsAdapter; readonly queues: readonly QueueLogs[]; readonly reason: string }
/** A log overrun's fallback for one queue, as a step of its own (src/os/logs.ts). */
export interface OperationLogFallback { readonly adapter: OsAdapter; readonly queue: QueueLogs }

/** What the call that started an OS operation does once its NF-09 loop is over (OperationHooks.ended gets it back). */
export interface OperationEnd { readonly owner: 'interrupts' | 'signals' }

/** Upward calls of Waits (dxgkrnl.ts fills them). */
export interface OperationHooks {
  /** An operation's loop is over: the rest of the call that started it (run under the lock; it may add work). */
  ended(end: OperationEnd): void;
  /** The operation's next work item (each one step): a cross-adapter notification, a log read, a log fallback. */
  notify(work: OperationNotification, operation: OsOperation): void;
  readLogs(work: OperationLogRead, operation: OsOperation): void;
  logFallback(work: OperationLogFallback, operation: OsOperation): void;
}

/**
 * An UpdateMonitoredValues batch of one adapter within the NF-09 loop. In an OS operation its fences are objects
 * (`F` = GlobalFence); in a whole call they may be rows' keys (src/os/fence-rows.ts).
 */
export interface OperationBatch<F extends FenceKey = GlobalFence> {
  readonly adapter: OsAdapter;
  readonly fences: F[];
  readonly values: bigint[];
  /** The DDI was called. */
  called: boolean;
  /** Fences of the batch whose CurrentValue was read again. */
  resampled: number;
}

/**
 * The NF-09 loop part-way through (the header's first drawing): an OS operation's fields when it runs in steps, a
 * whole call's own record when it runs to the end (refresh). One loop, two drivers: loopPhase says which step is
 * next, loopStep does it; an operation schedules each step as an event, refresh does them one after another.
 */
export interface MonitoredLoop<F extends FenceKey = FenceKey> {
  /** Fences whose MonitoredValue may have to move: the loop's next turn. */
  readonly changed: Set<FenceKey>;
  /** This turn's fences not yet in a batch: by adapter (index order), each adapter's by core id (turnOf). */
  turn: F[];
  turns: number;
  batch?: OperationBatch<F>;
  /** The driver's DxgkDdiUpdateMonitoredValues in progress. */
  ddi?: PendingDdi;
}

/** An empty turn (never changed: a turn is replaced, never emptied in place). */
const NO_TURN = Object.freeze([]) as unknown as FenceKey[];

/** A step of the NF-09 loop (loopStep). */
type LoopPhase = 'monitored-write' | 'ddi' | 'resample';

/**
 * An OS operation part-way through its steps (operationSteps): it holds the OS's lock. All of
 * it is fields (a schedule explorer snapshots it and hashes it into its state).
 */
export interface OsOperation extends MonitoredLoop<GlobalFence> {
  /** What started it, for people. */
  readonly label: string;
  /** The step its next event runs. */
  phase: OperationPhase;
  /**
   * Satisfied waiters to retire, one per step, in the order they were satisfied. A waiter of several fences
   * left the heaps when it was satisfied (`detached`): its blocks on the other fences must not be satisfied
   * again before its step; its step then only wakes its thread.
   */
  readonly retiring: { completion: Completion; result: WaitResult; detached?: boolean }[];
  /** Reads of logs, log fallbacks and cross-adapter notifications still to do, one per step, each in the order added. */
  readonly logReads: OperationLogRead[];
  readonly logFallbacks: OperationLogFallback[];
  readonly notifications: OperationNotification[];
  readonly ends: OperationEnd[];
  /** Its next step's event. */
  event?: ScheduledEvent;
}

/** Waits' record oneFenceCall fills (scratch, under a symbol: no state). */
const ONE_FENCE_CALL = Symbol('Waits.oneFenceCall');

/** waitOne's answer for a call it leaves to the general path. */
const NOT_TAKEN = Symbol('not taken');

/** SatisfiedWait records read per fenceSatisfy call. */
const SATISFY_BATCH = 64;
/** Waiter host ids read per fenceWaiters call. */
const WAITERS_BATCH = 256;
/**
 * A Waits' scratch and caches, each under a symbol (the race explorer's state key and snapshots walk string keys; none
 * of these is state a step reads): how it hands results to waiters (DELIVERIES), and satisfy's copy of a batch.
 */
const DELIVERIES = Symbol('Waits.deliveries');
const SATISFIED = Symbol('Waits.satisfied');

/**
 * How one Waits hands results to its waiters: one machine's, shared with no other.
 *
 * The result of a wait-all satisfied (or a wait satisfied at once, not wait-any) at virtual time `timeNs` is one
 * frozen object for every such wait completed at that time, not one each (10⁶ waiters woken by one run held 10⁶
 * results until their callbacks ran). Frozen, so a caller that writes to one cannot change what another waiter got.
 *
 * Deferred callbacks (waitWithCallback's), in completion order, run in one microtask once the OS is done, as `then`
 * handlers would: never inside an OS call. One that throws leaves this microtask with its error (uncaught) and the
 * rest run in the next. Run-length kept: entry i is `counts[i]` calls of callbacks[i](results[i]) in a row (waiters
 * woken together usually share their callback and, through wokenAt, their result: 10⁶ of them were 10⁶ entries of two
 * arrays). A machine's queue is its own: its callbacks run in its own microtask, after the promise handlers its
 * machine made due before them, whatever another machine does in the same job (test/isolation.test.ts).
 */
class Deliveries {
  private woken: WaitResult = Object.freeze({ status: 'SUCCESS', timeNs: -1, immediate: false, index: undefined });
  private atOnce: WaitResult = Object.freeze({ status: 'SUCCESS', timeNs: -1, immediate: true, index: undefined });
  private readonly callbacks: ((result: WaitResult) => void)[] = [];
  private readonly results: WaitResult[] = [];
  private readonly counts: number[] = [];
  /** The entry running, and how many of its calls were made. */
  private next = 0;
  private done = 0;
  private scheduled = false;

  wokenAt(timeNs: number): WaitResult {
    if (this.woken.timeNs !== timeNs) this.woken = Object.freeze({ status: 'SUCCESS', timeNs, immediate: false, index: undefined });
    return this.woken;
  }
  atOnceAt(timeNs: number): WaitResult {
    if (this.atOnce.timeNs !== timeNs) this.atOnce = Object.freeze({ status: 'SUCCESS', timeNs, immediate: true, index: undefined });
    return this.atOnce;
  }

  /** Runs `onComplete(result)` now, or (deferred) once the current JavaScript job is over, after those due before it. */
  deliver(onComplete: (result: WaitResult) => void, result: WaitResult, deferred: boolean): void {
    if (!deferred) { onComplete(result); return; }
    const callbacks = this.callbacks, last = callbacks.length - 1;
    if (last >= this.next && callbacks[last] === onComplete && this.results[last] === result) {
      this.counts[last]++;
    } else {
      callbacks.push(onComplete);
      this.results.push(result);
      this.counts.push(1);
    }
    if (!this.scheduled) { this.scheduled = true; queueMicrotask(this.run); }
  }

  private readonly run = (): void => {
    const callbacks = this.callbacks, results = this.results, counts = this.counts;
    try {
      for (; this.next < callbacks.length; this.next++, this.done = 0) {
        const callback = callbacks[this.next], result = results[this.next];
        // The count is read again after each call: a callback's own wait, satisfied at once, may add to this entry.
        while (this.done < counts[this.next]) {
          this.done++;
          callback(result);
        }
      }
    } finally {
      if (this.next < callbacks.length && this.done >= counts[this.next]) { this.next++; this.done = 0; } // the call that threw is done
      if (this.next < callbacks.length) {
        queueMicrotask(this.run); // a callback threw: its error leaves this microtask, the rest run in the next one
      } else {
        callbacks.length = 0;
        results.length = 0;
        counts.length = 0;
        this.next = 0;
        this.done = 0;
        this.scheduled = false;
      }
    }
  };
}

// A short waiter's slot: 32 bytes by host id in ShortWaiters.words (half a cache line, never two), what finishing it
// reads and clears in one place (not one line in each of six columns: at 10⁶ waiters woken in value order, not id order,
// each column was a cache miss). Words: sequence (f64, 0–1), value (u64, 2–3), the core's record (4), state (5), the
// fence's row key when the waiter names a row (6; 0: its fence is an object, in the chunks), 7 unused (0).
const SLOT_WORDS = 8, RECORD_WORD = 4, STATE_WORD = 5, ROW_WORD = 6;
/**
 * State bits: the slot holds a waiter waitOne started; its callback is the caller's, run later (Completion.deferred);
 * its callback is its own, in the chunks (else it is its tag's); above them its tag: the index of its (label, owner)
 * pair in ShortWaiters' tags.
 */
const SLOT_LIVE = 1, SLOT_DEFERRED = 2, SLOT_OWN_CALLBACK = 4, TAG_SHIFT = 3;
/** Objects by host id: callback, fence at OBJECTS × (id mod CHUNK_IDS), + 1 of chunk id / CHUNK_IDS. */
const OBJECTS = 2, CHUNK_SHIFT = 11, CHUNK_IDS = 1 << CHUNK_SHIFT, CHUNK_MASK = CHUNK_IDS - 1;
/** Does the slot at word `at` keep a chunk entry? Yes unless its callback is its tag's and its fence a row (set writes none then). */
const keepsChunkEntry = (words: Uint32Array, at: number): boolean => (words[at + STATE_WORD] & SLOT_OWN_CALLBACK) !== 0 || words[at + ROW_WORD] === 0;

/**
 * ShortWaiters' caches, under symbols (the race explorer copies and hashes what string keys hold; these are no state):
 * the tag the last waiter got (0: none), which the next waiter with the same label and owner (a caller's many waits)
 * takes without a search, and the f64 and u64 views of the slot buffer, made when the buffer is another.
 */
const LAST_TAG = Symbol('ShortWaiters.lastTag');
const SLOT_NUMBERS = Symbol('ShortWaiters.slotNumbers');
const SLOT_BIGS = Symbol('ShortWaiters.slotBigs');

/**
 * The waiters waitOne starts (one fence, no timeout, wait-all), as slots by host id: what a Completion holds, with no
 * object per waiter. 10⁶ waiters pending at once are 10⁶ objects fewer for the garbage collector to copy. A waiter
 * whose callback is its tag's (a caller's many waits with one callback) and whose fence is a row is its slot alone:
 * a signal that wakes it touches that slot and no object reference; another keeps its callback or fence in the chunks.
 */
class ShortWaiters {
  /** Grown by doubling as ids come (grownTo); starts at 4 slots: the race explorer copies and hashes it per state. */
  private words = new Uint32Array(4 * SLOT_WORDS);
  private [LAST_TAG] = 0;
  private [SLOT_NUMBERS]: Float64Array<ArrayBufferLike> = new Float64Array(this.words.buffer);
  private [SLOT_BIGS]: BigUint64Array<ArrayBufferLike> = new BigUint64Array(this.words.buffer);
  /**
   * callback, fence of each host id (OBJECTS apart) that keeps them here, in chunks of CHUNK_IDS ids, each a packed
   * array (a gap is filled with undefined). One array for 10⁶ waiters grew by copies in V8's large-object space (~3 × its
   * 16 MB allocated, the dead copies kept until a major collection); a chunk is 32 KB at most and never copied once full.
   */
  private readonly chunks: unknown[][] = [];
  /**
   * The (label, owner) pairs the waiters name, by tag, each with the count of waiters naming it and the callback of
   * the waiter that made it (a freed tag is cleared and reused last-freed first): a caller's many waits share one
   * label, one owner and usually one callback, so 10⁶ waiters are one pair, not 16 MB of references. Tag 0 is never used.
   */
  private readonly tagLabels: (string | undefined)[] = [undefined];
  private readonly tagOwners: (WaiterOwner | undefined)[] = [undefined];
  private readonly tagCallbacks: (((result: WaitResult) => void) | undefined)[] = [undefined];
  private readonly tagCounts: number[] = [0];
  private readonly freeTags: number[] = [];

  /** Does host id `id` hold a waiter waitOne started? */
  has(id: number): boolean {
    const at = id * SLOT_WORDS + STATE_WORD;
    return at < this.words.length && (this.words[at] & SLOT_LIVE) !== 0;
  }

  set(id: number, sequence: number, label: string, owner: WaiterOwner, onComplete: (result: WaitResult) => void, deferred: boolean,
      fence: FenceKey, value: bigint, record: number): void {
    const at = id * SLOT_WORDS;
    if (at >= this.words.length) this.words = grownTo(this.words, at + SLOT_WORDS);
    const tag = this.tagOf(label, owner, onComplete);
    const own = this.tagCallbacks[tag] !== onComplete, row = typeof fence === 'number';
    const words = this.words;
    this.viewsOf(words);
    this[SLOT_NUMBERS][at >>> 1] = sequence;
    this[SLOT_BIGS][(at >>> 1) + 1] = value;
    words[at + RECORD_WORD] = record;
    words[at + STATE_WORD] = (deferred ? SLOT_LIVE | SLOT_DEFERRED : SLOT_LIVE) + (own ? SLOT_OWN_CALLBACK : 0) + tag * (1 << TAG_SHIFT);
    words[at + ROW_WORD] = row ? fence : 0;
    if (!own && row) return;
    const o = (id & CHUNK_MASK) * OBJECTS, objects = this.chunks[id >>> CHUNK_SHIFT] ??= [];
    while (objects.length < o) objects.push(undefined); // packed: no hole
    objects[o] = own ? onComplete : undefined;
    objects[o + 1] = row ? undefined : fence;
  }

  /** The tag of (label, owner), counted once more: the last one given when it matches, else a new one made with `onComplete`. */
  private tagOf(label: string, owner: WaiterOwner, onComplete: (result: WaitResult) => void): number {
    const last = this[LAST_TAG];
    if (last !== 0 && this.tagLabels[last] === label && this.tagOwners[last] === owner) {
      this.tagCounts[last]++;
      return last;
    }
    const tag = this.freeTags.length ? this.freeTags.pop()! : this.tagLabels.length;
    this.tagLabels[tag] = label;
    this.tagOwners[tag] = owner;
    this.tagCallbacks[tag] = onComplete;
    this.tagCounts[tag] = 1;
    this[LAST_TAG] = tag;
    return tag;
  }

  private tag(id: number): number { return Math.floor(this.words[id * SLOT_WORDS + STATE_WORD] / (1 << TAG_SHIFT)); }

  /** The f64 and u64 views are of `words`' buffer from here on. */
  private viewsOf(words: Uint32Array): void {
    if (this[SLOT_NUMBERS].buffer !== words.buffer) { this[SLOT_NUMBERS] = new Float64Array(words.buffer); this[SLOT_BIGS] = new BigUint64Array(words.buffer); }
  }
  sequence(id: number): number { this.viewsOf(this.words); return this[SLOT_NUMBERS][(id * SLOT_WORDS) >>> 1]; }
  value(id: number): bigint { this.viewsOf(this.words); return this[SLOT_BIGS][((id * SLOT_WORDS) >>> 1) + 1]; }
  record(id: number): number { return this.words[id * SLOT_WORDS + RECORD_WORD]; }
  deferred(id: number): boolean { return (this.words[id * SLOT_WORDS + STATE_WORD] & SLOT_DEFERRED) !== 0; }
  callback(id: number): (result: WaitResult) => void {
    if ((this.words[id * SLOT_WORDS + STATE_WORD] & SLOT_OWN_CALLBACK) === 0) return this.tagCallbacks[this.tag(id)]!;
    return this.chunks[id >>> CHUNK_SHIFT][(id & CHUNK_MASK) * OBJECTS] as (result: WaitResult) => void;
  }
  /** The waiter's fence: its GlobalFence, or its row key when waitOne found the fence a row (Waits.fenceOfWaiter resolves it). */
  fence(id: number): FenceKey {
    const row = this.words[id * SLOT_WORDS + ROW_WORD];
    return row !== 0 ? row : this.chunks[id >>> CHUNK_SHIFT][(id & CHUNK_MASK) * OBJECTS + 1] as FenceKey;
  }
  label(id: number): string { return this.tagLabels[this.tag(id)]!; }
  owner(id: number): WaiterOwner { return this.tagOwners[this.tag(id)]!; }

  /**
   * Reads the slot (and the chunk entry, for a waiter that keeps one) of each waiter named in `records` (`count`
   * SatisfiedWait records of `stride` words, the host id at `waiterAt`) and returns a word made of them: satisfy calls
   * it on a batch before it finishes any, so that the batch's cache misses (slots made in arrival order, finished in
   * value order) are in flight together instead of one finish at a time.
   */
  touch(records: Uint32Array, count: number, stride: number, waiterAt: number): number {
    const words = this.words, chunks = this.chunks, length = words.length;
    let seen = 0;
    for (let i = 0, at = 0; i < count; i++, at += stride) {
      const id = records[at + waiterAt], slot = id * SLOT_WORDS;
      if (slot >= length) continue;
      seen ^= words[slot + STATE_WORD];
      if (keepsChunkEntry(words, slot)) {
        const objects = chunks[id >>> CHUNK_SHIFT];
        if (objects !== undefined && objects[(id & CHUNK_MASK) * OBJECTS] === undefined) seen ^= 1;
      }
    }
    return seen;
  }

  /** Drops what waiter `id` referenced (its slot is free, or its Completion holds it now). */
  clear(id: number): void {
    const tag = this.tag(id);
    if (--this.tagCounts[tag] === 0) {
      // Cleared, so that the same waiters are the same fields whatever came and went (a race explorer hashes them).
      this.tagLabels[tag] = undefined;
      this.tagOwners[tag] = undefined;
      this.tagCallbacks[tag] = undefined;
      if (tag === this.tagLabels.length - 1 && this.freeTags.length === 0) {
        this.tagLabels.length = this.tagOwners.length = this.tagCallbacks.length = this.tagCounts.length = tag;
      } else this.freeTags.push(tag);
      if (this[LAST_TAG] === tag) this[LAST_TAG] = 0;
    }
    // Zeroed too: a race explorer hashes the slots into its state key, and a freed slot must not differ by what it held.
    const at = id * SLOT_WORDS, words = this.words;
    const chunked = keepsChunkEntry(words, at);
    words[at] = 0; words[at + 1] = 0; words[at + 2] = 0; words[at + 3] = 0; words[at + 4] = 0; words[at + 5] = 0; words[at + 6] = 0;
    if (!chunked) return;
    const o = (id & CHUNK_MASK) * OBJECTS, objects = this.chunks[id >>> CHUNK_SHIFT];
    objects[o] = undefined;
    objects[o + 1] = undefined;
  }
}

/** A stack of u32 ids in a typed array doubled as needed; popped slots are zeroed (a race explorer hashes it). */
class FreeIds {
  private ids = new Uint32Array(4);
  length = 0;
  push(id: number): void {
    if (this.length === this.ids.length) this.ids = grownTo(this.ids, this.length + 1);
    this.ids[this.length++] = id;
  }
  pop(): number {
    const id = this.ids[--this.length];
    this.ids[this.length] = 0;
    return id;
  }
}

export class Waits {
  private readonly [ONE_FENCE_CALL] = { object: undefined as LocalFence | undefined, row: 0, value: 0n };
  private readonly [DELIVERIES] = new Deliveries();
  /**
   * Where satisfy copies a batch of SatisfiedWait records out of the core's out buffer (SATISFY_BATCH records of at
   * most 16 words), and the word ShortWaiters.touch returns, kept so that no optimizer drops its reads.
   */
  private readonly [SATISFIED] = { words: new Uint32Array(SATISFY_BATCH * 16), touchSink: 0 };
  readonly counters: WaitCounters = { waitersAdded: 0, waitersWoken: 0, waitsSatisfiedAtOnce: 0, waitsTimedOut: 0 };
  /**
   * Completions by host id (dense; a retired waiter's id is reused). A waiter waitOne started has none here: it lives
   * in its `short` slot instead (no object per waiter); completionAt makes its Completion when a slow path (a tool,
   * a release) asks for one.
   */
  private readonly completions: (Completion | undefined)[] = [];
  /** Host ids handed out so far (a retired one is reused first): ids are below this. */
  private idsMade = 0;
  /** The waiter id addShortCoreWaiter took last. */
  private addedId = 0;
  private readonly short = new ShortWaiters();
  /** Retired host ids, reused last-retired first (a stack of u32: a JavaScript array of 10⁶ ids was 8 MB and its copies). */
  private readonly freeIds = new FreeIds();
  private live = 0;
  private nextSequence = 1;
  /** Linear memory as u32 words (satisfy reads the out buffer through it) and as u64 words (waitOne reads CurrentValue), and the memory each views. */
  private words?: Uint32Array;
  private wordsOf?: WasmMemory;
  private values?: BigUint64Array;
  private valuesOf?: WasmMemory;
  /** OS operations run in steps (schedule granularity 'step'; dxgkrnl.ts sets it). */
  stepwise = false;
  /** The OS operation in flight (stepwise only): while it is, the OS's lock is held. */
  operation?: OsOperation;
  /** Set by dxgkrnl.ts. */
  hooks: OperationHooks = {
    ended: () => { throw new Error('Waits.hooks.ended is not wired'); },
    notify: () => { throw new Error('Waits.hooks.notify is not wired'); },
    readLogs: () => { throw new Error('Waits.hooks.readLogs is not wired'); },
    logFallback: () => { throw new Error('Waits.hooks.logFallback is not wired'); },
  };
  /**
   * NF-09: after UpdateMonitoredValues returns, read CurrentValue again and satisfy what it
   * reached. The machine option os.rereadCurrentValue sets it (default true); false is an OS
   * that leaves the re-read out, so a driver's own CMP order is judged alone (check-driver's
   * NF-11 probe, src/check/cmp-order.ts; the race explorer's no-resample variants).
   */
  resampleAfterUpdate = true;
  /** Inside an operation's step (work started there joins it; the step schedules the next). */
  private inStep = false;

  constructor(
    private readonly handles: Handles,
    private readonly port: DriverPort,
    private readonly scheduler: Scheduler,
    private readonly trace: Trace,
    private readonly layout: CoreLayout,
  ) {
    // Its scheduler events (src/base/scheduler.ts lists every kind).
    scheduler.register('dxgkrnl', (event) => {
      if (event.kind === 'os-step') this.operationStep(event);
      else if (event.kind === 'wait-timeout') this.waitTimedOut(event);
      else throw new Error(`dxgkrnl: no scheduler event of kind "${event.kind}"`);
    });
  }

  // ── D3DKMTWaitForSynchronizationObjectFromCpu ──

  /**
   * Validates and starts a CPU wait; `onComplete` runs once, now or later.
   * `owner`: the caller's object behind the wait (a CpuThread, a CpuEvent), kept for tools (machine.stuck()).
   * `deferred`: `onComplete` is the caller's own code, run after the OS is done (a microtask, `deliver`), never inside it.
   */
  beginWait(process: Process, args: unknown, label: string, onComplete: (result: WaitResult) => void,
            owner?: Omit<WaiterOwner, 'process'> | WaiterOwner, deferred = false): WaitResult | undefined {
    const short = this.waitOne(process, args, label, onComplete, owner, deferred);
    if (short !== NOT_TAKEN) return short;
    const a = v.options(args, 'wait(args)', ['objects', 'values', 'waitAny', 'timeoutNs', 'hDevice', 'hAsyncEvent']);
    const objects = v.array(a.objects, 'objects', 1, MAX_OBJECTS_PER_CALL);
    const values = v.array(a.values, 'values', objects.length, objects.length);
    const waitAny = a.waitAny === undefined ? false : v.bool(a.waitAny, 'waitAny');
    const timeoutNs = a.timeoutNs === undefined ? Infinity : v.nonNegative(a.timeoutNs, 'timeoutNs');
    if (a.hDevice !== undefined) this.handles.requireDevice(process, a.hDevice, 'hDevice');
    // Exactly sized: a waiter keeps both for its life (push would leave room for 16 on each).
    const fences: GlobalFence[] = new Array(objects.length);
    const waited: bigint[] = new Array(objects.length);
    // Every check before any change; no closure, no template string unless a check fails.
    for (let i = 0; i < objects.length; i++) {
      const local = this.handles.resolve(process, objects[i], 'syncObject', i === 0 ? 'objects[0]' : `objects[${i}]`);
      const global = local.global;
      requireRunning(global.adapter, i === 0 ? 'objects[0]' : `objects[${i}]`);
      if (i > 0) rejectRepeat(fences, local, i, 'wait');
      if ((global.flags & NO_WAIT_FLAG) !== 0) {
        throw new WddmError('INVALID_PARAMETER', `objects[${i}] ${hex(local.handle)} was created with flags.noWait: it cannot be waited on`,
          { parameter: `objects[${i}]`, value: local.handle, expected: 'a fence created without flags.noWait' });
      }
      const value = v.u64(values[i], i === 0 ? 'values[0]' : `values[${i}]`);
      if (global.kind === 'monitored') checkMonitoredWait(global, value, `values[${i}]`);
      fences[i] = global;
      waited[i] = value;
    }
    if (this.trace.enabled) {
      this.trace.record('runtime', process.name, 'D3DKMTWaitForSynchronizationObjectFromCpu', {
        ObjectCount: fences.length, ObjectHandleArray: objects as number[], FenceValueArray: waited, WaitAny: waitAny,
        timeoutNs: timeoutNs === Infinity ? 'INFINITE' : timeoutNs, waiter: label,
      });
    }
    return this.startWait(fences, waited, waitAny ? 'any' : 'all', timeoutNs, label, onComplete,
      ownerOf(process, owner), deferred);
  }

  /**
   * The common CPU wait, checked and started without building anything but its waiter: one handle of this process
   * to a native fence of a running adapter whose MonitoredValue the OS moves (not a cross-adapter record held at
   * 0), a bigint value, no other option, tracing off, OS operations run whole. For any other call it returns
   * NOT_TAKEN having changed nothing, and the general path checks the call whole: every refusal is the general
   * path's. What it does is what startWait does for that call; MonitoredValue moves (and refresh runs) only when
   * the new value is at or below it, since a value past it leaves the smallest waited value where it is (NF-02).
   */
  private waitOne(process: Process, args: unknown, label: string, onComplete: (result: WaitResult) => void,
                  owner: Omit<WaiterOwner, 'process'> | WaiterOwner | undefined, deferred: boolean): WaitResult | undefined | typeof NOT_TAKEN {
    if (this.trace.enabled || this.stepwise) return NOT_TAKEN;
    const call = oneFenceCall(process, args, this[ONE_FENCE_CALL]);
    if (call === undefined) return NOT_TAKEN;
    const value = call.value, object = call.object;
    if (object === undefined) return this.waitOneRow(process, call.row, value, label, onComplete, owner, deferred);
    const fence = object.global;
    const adapter = fence.adapter;
    if (adapter.state !== 'running' || fence.kind !== 'native' || (fence.flags & NO_WAIT_FLAG) !== 0 || fence.monitoredValueHeld) return NOT_TAKEN;
    const atOnce = this.reachedAtOnce(adapter, fence.cvPhys, value, onComplete, deferred);
    if (atOnce !== undefined) return atOnce;
    const record = this.addShortCoreWaiter(adapter, fence.coreFence, value, fence);
    const id = this.addedId;
    this.short.set(id, this.nextSequence++, label, ownerOf(process, owner), onComplete, deferred, fence, value, record);
    this.live++;
    this.counters.waitersAdded++;
    adapter.withWaiters.add(fence);
    if (value <= fence.monitoredValue) this.refresh(new Set([fence]));
    return undefined;
  }

  /**
   * waitOne for a handle that names a row (a native fence nothing has made objects for, src/os/fence-rows.ts): the
   * same checks and the same waiter, read from the row and the core by core id, and the fence stays a row (its
   * MonitoredValue is the row's, the waiter names it by its key). A row is a native fence of no cross-adapter group,
   * so what waitOne checks of the object holds but the adapter's state and the flags, checked here as there.
   */
  private waitOneRow(process: Process, row: number, value: bigint, label: string, onComplete: (result: WaitResult) => void,
                     owner: Omit<WaiterOwner, 'process'> | WaiterOwner | undefined, deferred: boolean): WaitResult | undefined | typeof NOT_TAKEN {
    const adapter = this.handles.adapters[rowKeyAdapterIndex(row)], coreFence = rowKeyCoreFence(row);
    const rows = rowsOf(adapter)!;
    if (adapter.state !== 'running' || (rows.flagsOf(coreFence) & NO_WAIT_FLAG) !== 0) return NOT_TAKEN;
    const atOnce = this.reachedAtOnce(adapter, adapter.core.fenceCurrentValueAddress(coreFence), value, onComplete, deferred);
    if (atOnce !== undefined) return atOnce;
    const record = this.addShortCoreWaiter(adapter, coreFence, value, undefined);
    const id = this.addedId;
    this.short.set(id, this.nextSequence++, label, ownerOf(process, owner), onComplete, deferred, row, value, record);
    this.live++;
    this.counters.waitersAdded++;
    adapter.withWaiters.addId(coreFence);
    if (value <= rows.monitoredValueOf(coreFence)) this.refresh(new Set([row]));
    return undefined;
  }

  /**
   * The short paths' "already reached" check: CurrentValue at `cvPhys` read as cpuReadCurrentValue reads it (one
   * aligned 64-bit load), through a view (CpuSignals.signalOne says why). Reached: the at-once result, delivered.
   */
  private reachedAtOnce(adapter: OsAdapter, cvPhys: number, value: bigint, onComplete: (result: WaitResult) => void,
                        deferred: boolean): WaitResult | undefined {
    if (this.valuesOf !== adapter.memory) { this.values = new BigUint64Array(adapter.memory.buffer); this.valuesOf = adapter.memory; }
    if (this.values![cvPhys >>> 3] < value) return undefined;
    this.counters.waitsSatisfiedAtOnce++;
    const result = this[DELIVERIES].atOnceAt(this.scheduler.nowNs);
    this[DELIVERIES].deliver(onComplete, result, deferred);
    return result;
  }

  /**
   * The short paths' core waiter: a waiter id, a wait-all record and its one wait block on `coreFence`. Returns the
   * record; the id is left in `addedId` (no pair is made per wait). A refusal changes nothing (the id goes back, the
   * record is retired) and throws the core's error naming the fence: `fence`'s label, or fence<id> for a row.
   */
  private addShortCoreWaiter(adapter: OsAdapter, coreFence: number, value: bigint, fence: GlobalFence | undefined): number {
    const core = adapter.core;
    const id = this.freeIds.length ? this.freeIds.pop() : this.idsMade++;
    const record = core.waiterCreate(id, this.layout.waiterModeAll);
    if (record < 0) { this.freeIds.push(id); check(record, `adding a CPU waiter on ${fence ? fence.label : `fence${coreFence}`}`); }
    const block = core.waitBlockAdd(coreFence, value, record, 0);
    if (block < 0) {
      core.waiterRetire(record);
      this.freeIds.push(id);
      check(block, `adding a CPU waiter on ${fence ? fence.label : `fence${coreFence}`}`);
    }
    this.addedId = id;
    return record;
  }

  /** Starts a validated wait. Returns the result when satisfied at once, else undefined. */
  startWait(fences: GlobalFence[], values: bigint[], mode: 'all' | 'any', timeoutNs: number, label: string,
            onComplete: (result: WaitResult) => void, owner: WaiterOwner = { process: 'System' }, deferred = false): WaitResult | undefined {
    // One wait block per (waiter, fence): a fence twice would pop twice in one batch (beginWait refuses it up front).
    const count = fences.length;
    for (let i = 1; i < count; i++) {
      if (fences.indexOf(fences[i]) !== i) throw new Error(`startWait(${label}): a fence appears twice; callers must refuse that before changing anything`);
    }
    const now = this.scheduler.nowNs;
    // reached[i]: fences[i] is at its value already (allocated only for a call of several fences).
    const reached: boolean[] | undefined = count > 1 ? new Array(count) : undefined;
    let anyIndex = -1, reachedCount = 0;
    for (let i = 0; i < count; i++) {
      const at = fences[i].currentValue() >= values[i];
      if (reached) reached[i] = at;
      if (at) { reachedCount++; if (anyIndex < 0) anyIndex = i; }
    }
    if (mode === 'all' ? reachedCount === count : anyIndex >= 0) {
      this.counters.waitsSatisfiedAtOnce++;
      if (this.trace.enabled) this.trace.record('os', 'dxgkrnl', 'wait satisfied at once', { waiter: label, index: mode === 'any' ? anyIndex : undefined });
      const result: WaitResult = mode === 'any' ? { status: 'SUCCESS', timeNs: now, immediate: true, index: anyIndex } : this[DELIVERIES].atOnceAt(now);
      this[DELIVERIES].deliver(onComplete, result, deferred);
      return result;
    }
    if (timeoutNs === 0) {
      this.trace.record('os', 'dxgkrnl', 'wait timed out', { waiter: label, timeoutNs: 0 });
      this.counters.waitsTimedOut++;
      const result: WaitResult = { status: 'TIMEOUT', timeNs: now, immediate: true };
      this[DELIVERIES].deliver(onComplete, result, deferred);
      return result;
    }
    // The entries left to wait for (a wait-all's reached ones are done already), and the adapters they are on.
    // Exactly sized, as every per-wait array here (an empty array's first push reserves room for 17).
    const pending: number[] = new Array(mode === 'all' ? count - reachedCount : count);
    for (let i = 0, k = 0; i < count; i++) if (!(mode === 'all' && reached !== undefined && reached[i])) pending[k++] = i;
    const home = fences[pending[0]].adapter;
    let others: OsAdapter[] | undefined;
    for (const i of pending) {
      const adapter = fences[i].adapter;
      if (adapter !== home && !(others ??= []).includes(adapter)) others.push(adapter);
    }
    const id = this.freeIds.length ? this.freeIds.pop() : this.idsMade++;
    const record = home.core.waiterCreate(id, mode === 'any' ? this.layout.waiterModeAny : this.layout.waiterModeAll);
    if (record < 0) { this.freeIds.push(id); check(record, `adding a CPU waiter on ${fences[pending[0]].label}`); }
    // Every wait block first; any failure rolls back and changes nothing.
    for (const i of pending) {
      const fence = fences[i];
      const block = fence.adapter.core.waitBlockAdd(fence.coreFence, values[i], record, i);
      if (block < 0) {
        if (others) for (const adapter of others) adapter.core.waiterRetire(record);
        home.core.waiterRetire(record);
        this.freeIds.push(id);
        check(block, `adding a CPU waiter on ${fence.label}`);
      }
    }
    const completion: Completion = {
      id, sequence: this.nextSequence++, label, mode, owner, onComplete, deferred, fences: count === 1 ? fences[0] : fences, values: count === 1 ? values[0] : values,
      record, home, others,
    };
    this.completions[id] = completion;
    this.live++;
    this.counters.waitersAdded++;
    const changed = new Set<FenceKey>();
    for (const i of pending) { fences[i].adapter.withWaiters.add(fences[i]); changed.add(fences[i]); }
    if (this.trace.enabled) {
      this.trace.record('os', 'dxgkrnl', 'waiter added', {
        waiter: label, fences: pending.map((i) => fences[i].label), values: pending.map((i) => values[i]), mode,
      });
    }
    if (timeoutNs !== Infinity) {
      completion.timeoutNs = timeoutNs;
      completion.timeout = this.scheduler.after(timeoutNs, 'dxgkrnl', 'wait-timeout', { waiter: id }, `timeout ${label}`);
    }
    this.refresh(changed, this.stepwise ? `wait ${label}` : undefined);
    return undefined;
  }

  /** A CPU wait's timeout event: the waiter is released with TIMEOUT, unless it completed meanwhile. */
  private waitTimedOut(event: ScheduledEvent): void {
    const completion = this.completionAt(event.args.waiter as number);
    if (!completion || completion.timeout !== event) return;
    this.counters.waitsTimedOut++;
    if (this.timeoutListeners.length) {
      const waiter = { label: completion.label, mode: completion.mode, waits: this.pendingEntries(completion).map((i) => ({ fence: entryFence(completion, i), value: entryValue(completion, i) })) };
      for (const listener of this.timeoutListeners) listener(waiter);
    }
    this.trace.record('os', 'dxgkrnl', 'wait timed out', { waiter: completion.label, timeoutNs: completion.timeoutNs });
    const changed = new Set<FenceKey>();
    this.finish(completion, { status: 'TIMEOUT', timeNs: this.scheduler.nowNs, immediate: false }, changed);
    this.refresh(changed);
  }

  /**
   * Ends a waiter: the core retires it on each adapter it has blocks on (the fences whose heaps lost
   * a block go into `changed`), then its completion runs.
   */
  private finish(completion: Completion, result: WaitResult, changed: Set<FenceKey>, deliverNow = true): void {
    if (this.completions[completion.id] !== completion) return;
    this.scheduler.cancel(completion.timeout);
    if (completion.others) for (const adapter of completion.others) this.retire(completion, adapter, changed);
    this.retire(completion, completion.home, changed);
    this.completions[completion.id] = undefined;
    this.freeIds.push(completion.id);
    this.live--;
    if (result.status === 'SUCCESS') this.counters.waitersWoken++;
    if (deliverNow) this.delivered(completion, result);
  }

  /** The end of finish: the waiter's completion runs (its thread wakes). */
  private delivered(completion: Completion, result: WaitResult): void {
    if (this.trace.enabled) {
      this.trace.record('os', 'dxgkrnl', result.status === 'SUCCESS' ? 'waiter woken' : 'waiter released', { waiter: completion.label, status: result.status, index: result.index });
    }
    this[DELIVERIES].deliver(completion.onComplete, result, completion.deferred);
  }

  /**
   * finish for a waiter waitOne started, satisfied by its one fence (the caller's `satisfy` has that fence in its
   * changed set already): the core retires its record and its one block, which is out of the heap (so no other
   * fence changed), then its completion runs. What finish does for it, without making its Completion.
   */
  private finishShort(id: number, adapter: OsAdapter): void {
    const short = this.short;
    const n = adapter.core.waiterRetire(short.record(id));
    if (n < 0) check(n, `retiring waiter ${short.label(id)}`);
    const onComplete = short.callback(id);
    const deferred = short.deferred(id);
    const label = this.trace.enabled ? short.label(id) : undefined;
    short.clear(id);
    this.freeIds.push(id);
    this.live--;
    this.counters.waitersWoken++;
    const result = this[DELIVERIES].wokenAt(this.scheduler.nowNs);
    if (this.trace.enabled) this.trace.record('os', 'dxgkrnl', 'waiter woken', { waiter: label, status: result.status, index: result.index });
    this[DELIVERIES].deliver(onComplete, result, deferred);
  }

  /**
   * The completion of waiter `id`, made from its columns for a waiter waitOne started; `keep` (a path that will
   * finish it): kept from then on in place of the columns. Tools, which only read, leave the waiter as it was.
   */
  private completionAt(id: number, keep = true): Completion | undefined {
    const short = this.short;
    if (!short.has(id)) return this.completions[id];
    const fence = this.fenceOfWaiter(id);
    const completion: Completion = {
      id, sequence: short.sequence(id), label: short.label(id), mode: 'all', owner: short.owner(id),
      onComplete: short.callback(id), deferred: short.deferred(id), fences: fence, values: short.value(id), record: short.record(id), home: fence.adapter, others: undefined,
    };
    if (keep) {
      short.clear(id);
      this.completions[id] = completion;
    }
    return completion;
  }

  /** The GlobalFence of short waiter `id` (made from its row when the waiter names one: a path that needs the object). */
  private fenceOfWaiter(id: number): GlobalFence {
    const key = this.short.fence(id);
    const fence = fenceKeyObject(key, this.handles.adapters);
    if (fence === undefined) throw new Error(`internal: waiter ${id} waits on fence${keyCoreFence(key)}, which is gone`);
    return fence;
  }

  /** Retires the waiter's blocks on `adapter`; the fences whose heaps lost one go into `changed`. */
  private retire(completion: Completion, adapter: OsAdapter, changed: Set<FenceKey>): void {
    const core = adapter.core;
    let n = core.waiterRetire(completion.record);
    if (n < 0) n = check(n, `retiring waiter ${completion.label}`); // the message is built only on failure
    if (n === 0) return;
    const words = new Uint32Array(adapter.memory.buffer, core.outBufferAddress(), n);
    for (let k = 0; k < n; k++) {
      const fence = fenceKeyAt(adapter, words[k]);
      if (fence !== undefined) changed.add(fence);
    }
  }

  /**
   * Pops every waiter of `fence` satisfied by `currentValue` (the core's heap),
   * completing those whose condition now holds. Returns the entries satisfied.
   * `fence` may be a row's key (src/os/fence-rows.ts): a row's waiters are short waiters, finished without its
   * objects, and the key goes into `changed` as it is (refresh takes keys).
   */
  satisfy(fence: FenceKey, currentValue: bigint, changed: Set<FenceKey>, operation?: OsOperation): number {
    const row = typeof fence === 'number';
    const adapter = row ? this.handles.adapters[rowKeyAdapterIndex(fence)] : fence.adapter;
    const coreFence = row ? rowKeyCoreFence(fence) : fence.coreFence;
    const core = adapter.core;
    const record = this.layout.out.satisfied;
    let total = 0;
    for (;;) {
      let n = core.fenceSatisfy(coreFence, currentValue, SATISFY_BATCH);
      if (n < 0) n = check(n, `satisfying waiters of ${row ? `fence${coreFence}` : fence.label}`); // the message is built only on failure
      if (n === 0) break;
      changed.add(fence);
      total += n;
      // Copied out: a completion may run code that calls the core again. (Linear memory never grows: a machine's is
      // made at its final size, so one view serves; records are little-endian u32s, as the host's typed arrays.)
      if (this.wordsOf !== adapter.memory) { this.words = new Uint32Array(adapter.memory.buffer); this.wordsOf = adapter.memory; }
      const stride = record.bytes >>> 2, completedAt = record.completed >>> 2, waiterAt = record.waiter >>> 2, entryAt = record.entry >>> 2;
      const base = core.outBufferAddress() >>> 2, count = n * stride, memoryWords = this.words!;
      const scratch = this[SATISFIED], words = scratch.words; // a copy: a completion may call the core again (no slice: a typed array per call)
      for (let k = 0; k < count; k++) words[k] = memoryWords[base + k];
      if (!operation) scratch.touchSink ^= this.short.touch(words, n, stride, waiterAt);
      for (let i = 0, at = 0; i < n; i++, at += stride) {
        if (words[at + completedAt] === 0) continue;
        const id = words[at + waiterAt];
        if (!operation && this.short.has(id)) {
          this.finishShort(id, adapter);
          continue;
        }
        const completion = this.completionAt(id);
        if (!completion) continue;
        const entry = words[at + entryAt];
        const result: WaitResult = completion.mode === 'any'
          ? { status: 'SUCCESS', timeNs: this.scheduler.nowNs, immediate: false, index: entry } : this[DELIVERIES].wokenAt(this.scheduler.nowNs);
        // In an operation's steps, each satisfied waiter is retired by a step of its own. One of several fences leaves
        // the heaps now (its other blocks must not be popped again by the next fence this step satisfies); its step wakes it.
        if (operation && Array.isArray(completion.fences)) {
          this.finish(completion, result, changed, false);
          operation.retiring.push({ completion, result, detached: true });
        } else if (operation) operation.retiring.push({ completion, result });
        else this.finish(completion, result, changed);
      }
      if (n < SATISFY_BATCH) break;
    }
    if (core.fenceWaiterCount(coreFence) === 0) adapter.withWaiters.deleteId(coreFence);
    return total;
  }

  /**
   * NF-09's loop run to the end: for each changed fence, move MonitoredValue to the new smallest waited value − 1
   * (batched per adapter into one UpdateMonitoredValues), then read CurrentValue again and satisfy what it unblocks,
   * until nothing changes. The same steps an OS operation takes one event at a time (loopPhase, loopStep), done one
   * after another; stepwise, the operation itself.
   */
  refresh(changed: Set<FenceKey>, label?: string): void {
    if (this.stepwise) { this.run(this.operationFor(label ?? 'MonitoredValue update')!, changed); return; }
    if (changed.size === 0) return; // nothing to do: no record made
    const loop: MonitoredLoop = { changed, turn: NO_TURN, turns: 0, batch: undefined, ddi: undefined };
    for (let phase = this.loopPhase(loop, undefined); phase !== undefined; phase = this.loopPhase(loop, undefined)) {
      this.loopStep(loop, phase, undefined);
    }
  }

  /**
   * The NF-09 loop's next step, or undefined when it is over (nothing changed is left): past a finished batch, to the
   * turn's next adapter whose fences need a new MonitoredValue, to the next turn. `operation` is the loop's own OS
   * operation when it runs in steps (its turns are made of objects), undefined when it runs whole.
   */
  private loopPhase(loop: MonitoredLoop, operation: OsOperation | undefined): LoopPhase | undefined {
    for (;;) {
      if (loop.ddi) return 'ddi';
      const batch = loop.batch;
      if (batch) {
        if (!batch.called) return 'monitored-write';
        if (batch.resampled < batch.fences.length) return 'resample';
        loop.batch = undefined;
      }
      while (loop.turn.length && !loop.batch) loop.batch = this.nextBatch(loop);
      if (loop.batch) continue;
      if (!loop.changed.size) return undefined;
      if (++loop.turns > 1_000_000) throw new Error('refresh: monitored value loop did not settle');
      loop.turn = this.turnOf(loop.changed, operation !== undefined);
      loop.changed.clear();
    }
  }

  /** Does the NF-09 loop's step `phase` (loopPhase's answer); `operation` as loopPhase's. */
  private loopStep(loop: MonitoredLoop, phase: LoopPhase, operation: OsOperation | undefined): void {
    const batch = loop.batch!;
    switch (phase) {
      case 'monitored-write':
        batch.called = true;
        if (batch.adapter.state !== 'running') { loop.batch = undefined; break; }
        loop.ddi = this.callUpdateMonitoredValues(batch.adapter, batch.fences, batch.values);
        if (!loop.ddi) this.ddiReturned(loop);
        break;
      case 'ddi':
        if (this.port.continueDdi(loop.ddi!)) this.ddiReturned(loop);
        break;
      case 'resample': {
        const fence = batch.fences[batch.resampled++];
        if ((typeof fence !== 'number' && fence.destroyed) || batch.adapter.state !== 'running') break;
        // The driver guarantees CurrentValue read now was written after the new MonitoredValue was seen.
        const current = this.currentValueOf(fence);
        if (this.satisfy(fence, current, loop.changed, operation) > 0 && this.trace.enabled) {
          this.trace.record('os', 'dxgkrnl', 'resample satisfied waiters', { fence: this.labelOf(fence), currentValue: current });
        }
        break;
      }
    }
  }

  /** The DDI returned: the OS's record of each MonitoredValue, then its re-reads (unless the adapter stopped). */
  private ddiReturned(loop: MonitoredLoop): void {
    loop.ddi = undefined;
    const batch = loop.batch!;
    this.recordMonitoredValues(batch.adapter, batch.fences, batch.values);
    if (batch.adapter.state !== 'running' || !this.resampleAfterUpdate) loop.batch = undefined;
  }

  /**
   * One turn of the NF-09 loop: the changed native fences of running adapters, by adapter (index order), each
   * adapter's by core id, each fence once. Run whole, a row's key stays a key (its fence stays a row) and a key whose
   * fence has its object by now is that object; in steps (`makeObjects`), a row's key is made into its objects
   * (operations in steps take the general paths, which make them).
   */
  private turnOf(changed: Set<FenceKey>, makeObjects: boolean): FenceKey[] {
    const adapters = this.handles.adapters;
    // Adapters in index order and each adapter's fences in core id order (no Map, no closure).
    const list: FenceKey[] = new Array(changed.size);
    let listed = 0;
    for (const key of changed) {
      const fence = makeObjects ? fenceKeyObject(key, adapters) : liveFenceKey(key, adapters);
      if (fence === undefined) continue;
      if (typeof fence === 'number') { if (adapters[rowKeyAdapterIndex(fence)].state !== 'running') continue; }
      else if (fence.destroyed || fence.adapter.state !== 'running' || fence.kind === 'monitored') continue;
      list[listed++] = fence;
    }
    if (listed !== list.length) list.length = listed;
    if (list.length > 1) {
      list.sort(byAdapterThenCoreId);
      // A row's key and its object (made since the key went in) are the same fence: once.
      let kept = 1;
      for (let k = 1; k < list.length; k++) if (list[k] !== list[kept - 1]) list[kept++] = list[k];
      list.length = kept;
    }
    return list;
  }

  /**
   * The batch of the turn's next adapter, its fences taken off the turn: those whose MonitoredValue is not what it
   * must be now (NF-02), with that value; undefined for none (or an adapter no longer running).
   */
  private nextBatch(loop: MonitoredLoop): OperationBatch<FenceKey> | undefined {
    const turn = loop.turn, adapters = this.handles.adapters;
    const adapter = keyAdapter(turn[0], adapters);
    let end = 1;
    while (end < turn.length && keyAdapter(turn[end], adapters) === adapter) end++;
    // The adapter's fences leave the turn (all of it, the common case: no copy).
    const taken = end === turn.length ? turn : turn.slice(0, end);
    loop.turn = end === turn.length ? NO_TURN : turn.slice(end);
    if (adapter.state !== 'running') return undefined;
    const rows = rowsOf(adapter);
    let fences: FenceKey[] | undefined;
    let values: bigint[] | undefined;
    for (const fence of taken) {
      let target: bigint, monitoredValue: bigint;
      if (typeof fence === 'number') {
        const coreFence = rowKeyCoreFence(fence);
        target = asU64(adapter.core.fenceMonitoredTarget(coreFence));
        monitoredValue = rows!.monitoredValueOf(coreFence);
      } else {
        if (fence.destroyed || fence.monitoredValueHeld) continue; // XA-03: held at 0
        target = this.monitoredTarget(fence);
        monitoredValue = fence.monitoredValue;
      }
      if (target !== monitoredValue) { (fences ??= []).push(fence); (values ??= []).push(target); }
    }
    return fences ? { adapter, fences, values: values!, called: false, resampled: 0 } : undefined;
  }

  /** CurrentValue of a fence or a row (GlobalFence.currentValue: a row is a native fence, read as it is). */
  currentValueOf(fence: FenceKey): bigint {
    if (typeof fence !== 'number') return fence.currentValue();
    return asU64(this.handles.adapters[rowKeyAdapterIndex(fence)].core.cpuReadCurrentValue(rowKeyCoreFence(fence)));
  }

  /** The fence's name for people (GlobalFence.label: a row has no name, so `fence<core id>`). */
  labelOf(fence: FenceKey): string { return typeof fence === 'number' ? `fence${rowKeyCoreFence(fence)}` : fence.label; }

  /**
   * DxgkDdiUpdateMonitoredValues for `fences` of one adapter (objects, or rows' keys), and the OS's record of what
   * each is now (a row's in its row, src/os/fence-rows.ts).
   */
  updateMonitoredValues(adapter: OsAdapter, fences: FenceKey[], values: bigint[]): void {
    const pending = this.callUpdateMonitoredValues(adapter, fences, values);
    // A driver that performs it in steps: all of them now (this caller runs it whole).
    if (pending) while (!this.port.continueDdi(pending));
    this.recordMonitoredValues(adapter, fences, values);
  }

  /** The OS's record of each fence's MonitoredValue after the DDI returned: the object's field, or the row's. */
  private recordMonitoredValues(adapter: OsAdapter, fences: FenceKey[], values: bigint[]): void {
    for (let i = 0; i < fences.length; i++) {
      const fence = fences[i];
      if (typeof fence !== 'number') { fence.monitoredValue = values[i]; continue; }
      const coreFence = rowKeyCoreFence(fence), made = adapter.fences.peek(coreFence);
      if (made !== undefined) made.monitoredValue = values[i]; // made into its objects meanwhile
      else rowsOf(adapter)!.setMonitoredValue(coreFence, values[i]);
    }
  }

  private callUpdateMonitoredValues(adapter: OsAdapter, fences: FenceKey[], values: bigint[]): PendingDdi | undefined {
    const rows = rowsOf(adapter);
    return this.port.updateMonitoredValues(adapter.index, {
      NumFences: fences.length,
      NativeFenceArray: fences.map((f) => (typeof f === 'number' ? rows!.globalHandleOf(rowKeyCoreFence(f)) : f.hGlobal)),
      UpdatedValueArray: values,
      MonitoredValueKernelCpuVa: fences.map((f) => (typeof f === 'number' ? rows!.kernelMvVa(rowKeyCoreFence(f)) : f.kernelMvVa)),
    });
  }

  // ── OS operations in steps (the header's second drawing) ──

  /**
   * The operation the OS's work belongs to, stepwise: the one in flight (work done inside one of
   * its steps joins it), else a new one. Undefined when operations run whole.
   */
  operationFor(label: string): OsOperation | undefined {
    if (!this.stepwise) return undefined;
    return this.operation ??= { label, phase: 'retire', changed: new Set(), turn: [], turns: 0, retiring: [], logReads: [], logFallbacks: [], notifications: [], ends: [] };
  }

  /**
   * Goes on with `operation` after the work of the event that started it (or joined it): the
   * NF-09 loop for `changed` (and the waiters satisfied so far), then `end`.
   */
  run(operation: OsOperation, changed: Set<FenceKey>, end?: OperationEnd): void {
    for (const fence of changed) operation.changed.add(fence);
    if (end) operation.ends.push(end);
    if (!operation.event && !this.inStep) this.proceed(operation);
  }

  /** An os-step event: the operation's next step. */
  private operationStep(event: ScheduledEvent): void {
    const op = this.operation;
    if (!op || op.event !== event) throw new Error(`dxgkrnl: os-step event with no operation waiting for it (${event.label})`);
    op.event = undefined;
    this.inStep = true;
    try {
      switch (op.phase) {
        case 'retire': {
          const { completion, result, detached } = op.retiring.shift()!;
          if (detached) this.delivered(completion, result);
          else this.finish(completion, result, op.changed);
          break;
        }
        case 'monitored-write': case 'ddi': case 'resample': this.loopStep(op, op.phase, op); break;
        case 'log-read': this.hooks.readLogs(op.logReads.shift()!, op); break;
        case 'log-fallback': this.hooks.logFallback(op.logFallbacks.shift()!, op); break;
        case 'notify': this.hooks.notify(op.notifications.shift()!, op); break;
      }
    } finally {
      this.inStep = false;
    }
    this.proceed(op);
  }

  /** Schedules the operation's next step, or ends it (the lock is free) when nothing is left. */
  private proceed(op: OsOperation): void {
    for (;;) {
      if (op.retiring.length) { this.scheduleStep(op, 'retire'); return; }
      // The NF-09 loop's next step (the same steps refresh takes whole).
      const phase = this.loopPhase(op, op);
      if (phase !== undefined) { this.scheduleStep(op, phase); return; }
      // The operation's other work, each a step, each followed by the loop again.
      if (op.logReads.length) { this.scheduleStep(op, 'log-read'); return; }
      if (op.logFallbacks.length) { this.scheduleStep(op, 'log-fallback'); return; }
      if (op.ends.length) {
        // The rest of the calls that started it, still under the lock: what they do joins the operation.
        const ends = op.ends.splice(0);
        this.inStep = true;
        try { for (const end of ends) this.hooks.ended(end); } finally { this.inStep = false; }
        continue;
      }
      if (op.notifications.length) { this.scheduleStep(op, 'notify'); return; }
      this.operation = undefined;
      return;
    }
  }

  private scheduleStep(op: OsOperation, phase: OperationPhase): void {
    op.phase = phase;
    op.event = this.scheduler.at(this.scheduler.nowNs, 'dxgkrnl', 'os-step', {}, `dxgkrnl ${op.label}: ${phase}`);
  }

  /** The MonitoredValue this fence must have (NF-02). */
  monitoredTarget(fence: GlobalFence): bigint {
    return asU64(fence.adapter.core.fenceMonitoredTarget(fence.coreFence));
  }

  // ── releasing waiters that cannot be satisfied any more ──

  /** The waiters with a wait block in `fence`'s heap, oldest first. */
  private waitersOf(fence: GlobalFence): Completion[] {
    const core = fence.adapter.core;
    const found: Completion[] = [];
    for (let start = 0; ; start += WAITERS_BATCH) {
      const n = check(core.fenceWaiters(fence.coreFence, start, WAITERS_BATCH), `listing the waiters of ${fence.label}`);
      const ids = new Uint32Array(fence.adapter.memory.buffer, core.outBufferAddress(), n);
      for (let k = 0; k < n; k++) {
        const completion = this.completionAt(ids[k]);
        if (completion && !found.includes(completion)) found.push(completion);
      }
      if (n < WAITERS_BATCH) break;
    }
    return found.sort((x, y) => x.sequence - y.sequence);
  }

  /**
   * Releases every waiter that waits on `fence` with a non-success status.
   * `keepFence`: the fence lives on (destroy pending), so its MonitoredValue
   * follows too (UINT64_MAX once no waiter is left, NF-02).
   */
  releaseWaitersOf(fence: GlobalFence, status: WaitStatus, keepFence = false): void {
    const changed = new Set<FenceKey>();
    if (!fence.destroyed) {
      for (const completion of this.waitersOf(fence)) this.finish(completion, { status, timeNs: this.scheduler.nowNs, immediate: false }, changed);
    }
    if (!keepFence) changed.delete(fence);
    this.refresh(changed);
  }

  /** A bug check: every waiter still waiting on a fence of `adapter` is released with `status`. */
  releaseWaitersOnAdapter(adapter: OsAdapter, status: WaitStatus): void {
    const waiting = new Set<Completion>();
    for (const fence of [...adapter.withWaiters].sort((x, y) => x.coreFence - y.coreFence)) {
      if (!fence.destroyed) for (const completion of this.waitersOf(fence)) waiting.add(completion);
    }
    const changed = new Set<FenceKey>();
    for (const completion of [...waiting].sort((x, y) => x.sequence - y.sequence)) {
      this.finish(completion, { status, timeNs: this.scheduler.nowNs, immediate: false }, changed);
    }
    this.refresh(changed);
  }

  // ── for tools (read-only) ──

  get pendingWaiters(): number { return this.live; }

  /** The live completions, oldest first. */
  private liveCompletions(): Completion[] {
    const live: Completion[] = [];
    for (let id = 0; id < this.idsMade; id++) {
      const completion = this.completionAt(id, false);
      if (completion !== undefined) live.push(completion);
    }
    return live.sort((x, y) => x.sequence - y.sequence);
  }

  /** The entries a waiter still waits for (the core's record), in call order. */
  private pendingEntries(completion: Completion): number[] {
    const core = completion.home.core;
    const n = check(core.waiterPending(completion.record), `reading waiter ${completion.label}`);
    return [...new Uint32Array(completion.home.memory.buffer, core.outBufferAddress(), n)].sort((x, y) => x - y);
  }

  /** The CPU waiters still waiting, oldest first, with what each still waits for (read-only, for tools). */
  pendingWaiterList(): PendingWaiter[] {
    return this.liveCompletions().map((c) => ({
      id: c.sequence, label: c.label, mode: c.mode, owner: c.owner, timed: c.timeout !== undefined && !c.timeout.cancelled,
      waits: this.pendingEntries(c).map((i) => ({ fence: entryFence(c, i), value: entryValue(c, i) })),
    }));
  }

  /**
   * Tools that judge a wait that times out (machine.lostWakeups: one whose value was already reached), called with
   * its unsatisfied entries before it is released. They only read.
   */
  readonly timeoutListeners: ((waiter: { label: string; mode: 'all' | 'any'; waits: { fence: GlobalFence; value: bigint }[] }) => void)[] = [];

  /** Waiters whose value is reached but which are still waiting (NF-10; meaningful when no interrupt is on its way: machine.lostWakeups). */
  lostWakeups(): { waiter: string; fence: string; value: bigint; currentValue: bigint }[] {
    const lost: { waiter: string; fence: string; value: bigint; currentValue: bigint }[] = [];
    for (const c of this.liveCompletions()) {
      for (const i of this.pendingEntries(c)) {
        const fence = entryFence(c, i), value = entryValue(c, i);
        const current = fence.peekValue();
        if (current >= value) lost.push({ waiter: c.label, fence: fence.label, value, currentValue: current });
      }
    }
    return lost;
  }

  /** CPU waiters of one fence (its wait blocks in the core's heap): kernel-side inspection (machine.inspectFence). */
  fenceWaiterCount(fence: GlobalFence): number {
    return fence.destroyed ? 0 : fence.adapter.core.fenceWaiterCount(fence.coreFence);
  }
}
