// CPU waits (NF-02, NF-03, NF-08, NF-09): D3DKMTWaitForSynchronizationObjectFromCpu,
// the waiters, and the loop that keeps each fence's MonitoredValue right.
//
// The waiters live in the core (assembly/heap.ts): one record per waiter
// (wait-all or wait-any, entries still waiting, the entry that satisfied a
// wait-any, its blocks) and one wait block per (waiter, fence) in the fence's
// min-heap. The host keeps, in one store (src/os/waiter-slots.ts: a slot of
// numbers by the waiter's host id, and a side record for a waiter of several
// fences or with a timeout), only what must call back into JavaScript or name
// the waiter for tools. Both ways in, the one-fence short path (waitOne) and
// the general one (startWait), put their waiters there alike, and one path
// (finish) ends every waiter, whatever ends it: satisfied, released, timed out.
//
//   startWait / waitOne ─▶ waiterCreate + waitBlockAdd per fence ─▶ a slot ─▶ refresh
//   satisfy(fence, CurrentValue) ─▶ fenceSatisfy: records { waiter, entry, completed }
//        ─▶ a completed waiter is finished: retired (waiterRetire on each adapter it has
//           blocks on, its home last), its slot freed, its callback run (deliver)
//   the NF-09 loop (MonitoredLoop): for each changed fence, MonitoredValue goes to the new smallest
//        waited value − 1 (fenceMonitoredTarget; batched per adapter into one
//        UpdateMonitoredValues), then CurrentValue is read again and satisfies what it
//        unblocks, until nothing changes. Each turn retires at least one wait block, so it ends.
//        It is written once, as steps: loopPhase says which step is next (monitored-write, ddi,
//        resample), loopStep does it. An OS operation in steps schedules each as an event of its own;
//        refresh (operations run whole) does them one after another, to the end.
//
// Why this file is long: it holds the wait call's checks (both ways in), finishing and delivering
// waiters, the NF-09 loop and the OS operations' step driver, and all of them work on the same private
// records (the waiter store, finish, satisfy); splitting them would open those records to another module.
//
// Operations in steps (Dxgkrnl.runOperationsInSteps: a machine built with
// schedule.osGranularity 'step'). The OS holds its lock across an operation (a wait's waiter add, an interrupt
// served, a CPU signal, and the NF-09 loop each ends with); each part of it is a scheduler
// event of its own ('dxgkrnl' os-step), so the GPU's steps run between them:
//
//   the event that starts it (waiter add; ISR + satisfy; UpdateCurrentValuesFromCpu + satisfy)
//   ─▶ retire      one satisfied waiter retired (its blocks, its slot, its callback: its thread wakes)
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
import { u64 as asU64, type CoreLayout, type WasmMemory } from '../core/bindings.js';
import type { DriverPort, PendingDdi } from '../port/driver-port.js';
import type { EventArgs, Scheduler, ScheduledEvent } from '../base/scheduler.js';
import type { Trace } from '../base/trace.js';
import * as v from '../base/validate.js';
import { MAX_OBJECTS_PER_CALL, SYNC_FLAG_BITS, hex } from '../base/wddm.js';
import { oneFenceCall, type Handles } from './handles.js';
import { checkMonitoredWait } from './monitored-window.js';
import { ROW_MONITORED, ROW_MONITORED_VALUE_HELD } from './fence-store.js';
import { keyAdapter, keyAt, keyLabel, rowKeyAdapterIndex, rowKeyCoreFence, rowsOf, viewOf, type FenceKey } from './fence-rows.js';
import type { QueueLogs } from './log-records.js';
import { SLOT_ANY, SLOT_DETAIL, WaiterSlots, type WaiterDetail } from './waiter-slots.js';
import {
  rejectRepeat, requireRunning,
  type GlobalFence, type LocalFence, type OsAdapter, type PendingWaiter, type Process, type WaiterOwner, type WaitResult, type WaitStatus,
} from './objects.js';

/**
 * Who a wait of `process` belongs to: `owner` itself when it names the process already (a caller's one record for
 * many waits: tools only read it), else a record with the process's name added.
 */
const ownerOf = (process: Process, owner: Omit<WaiterOwner, 'process'> | WaiterOwner | undefined): WaiterOwner =>
  owner === undefined ? { process: process.name } : 'process' in owner ? owner : { process: process.name, ...owner };

export interface WaitCounters {
  waitersAdded: number;
  waitersWoken: number;
  waitsSatisfiedAtOnce: number;
  waitsTimedOut: number;
}

const NO_WAIT_FLAG = 1 << SYNC_FLAG_BITS.noWait;
const byAdapterThenCoreId = (x: FenceKey, y: FenceKey): number => rowKeyAdapterIndex(x) - rowKeyAdapterIndex(y) || rowKeyCoreFence(x) - rowKeyCoreFence(y);

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

/** An UpdateMonitoredValues batch of one adapter within the NF-09 loop (its fences by key, src/os/fence-rows.ts). */
export interface OperationBatch {
  readonly adapter: OsAdapter;
  readonly fences: FenceKey[];
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
export interface MonitoredLoop {
  /** Fences whose MonitoredValue may have to move: the loop's next turn. */
  readonly changed: Set<FenceKey>;
  /** This turn's fences not yet in a batch: by adapter (index order), each adapter's by core id (turnOf). */
  turn: FenceKey[];
  turns: number;
  batch?: OperationBatch;
  /** The driver's DxgkDdiUpdateMonitoredValues in progress. */
  ddi?: PendingDdi;
}

/** An empty turn (never changed: a turn is replaced, never emptied in place). */
const NO_TURN = Object.freeze([]) as unknown as FenceKey[];
/** An OS step's event arguments: none (one frozen object for every step, not one each). */
const NO_ARGUMENTS: EventArgs = Object.freeze({});

/** A step of the NF-09 loop (loopStep). */
type LoopPhase = 'monitored-write' | 'ddi' | 'resample';

/**
 * An OS operation part-way through its steps (operationSteps): it holds the OS's lock. All of
 * it is fields (a schedule explorer snapshots it and hashes it into its state).
 */
export interface OsOperation extends MonitoredLoop {
  /** What started it, for people. */
  readonly label: string;
  /** The step its next event runs. */
  phase: OperationPhase;
  /**
   * Satisfied waiters to retire, one per step, in the order they were satisfied. A waiter of several fences
   * left the heaps when it was satisfied (`detached`): its blocks on the other fences must not be satisfied
   * again before its step; its step then only wakes its thread.
   */
  readonly retiring: RetiringWaiter[];
  /** Reads of logs, log fallbacks and cross-adapter notifications still to do, one per step, each in the order added. */
  readonly logReads: OperationLogRead[];
  readonly logFallbacks: OperationLogFallback[];
  readonly notifications: OperationNotification[];
  readonly ends: OperationEnd[];
  /** Its next step's event. */
  event?: ScheduledEvent;
}

/**
 * A satisfied waiter an OS operation retires in a step of its own: host id `waiter` while its slot's sequence is still
 * `sequence` (a release may have ended it meanwhile, and its id gone to another waiter); its label and owner name it
 * for tools (the explorer's footprints and step descriptions). A waiter of several fences was finished when it was
 * satisfied (`detached`: what its step delivers, its slot is free): its step only wakes its thread.
 */
export interface RetiringWaiter {
  readonly waiter: number;
  readonly sequence: number;
  readonly label: string;
  readonly owner: WaiterOwner;
  readonly result: WaitResult;
  readonly detached?: { readonly onComplete: (result: WaitResult) => void; readonly deferred: boolean };
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

export class Waits {
  private readonly [ONE_FENCE_CALL] = { object: undefined as LocalFence | undefined, row: 0, value: 0n };
  private readonly [DELIVERIES] = new Deliveries();
  /**
   * Where satisfy copies a batch of SatisfiedWait records out of the core's out buffer (SATISFY_BATCH records of at
   * most 16 words), and the word WaiterSlots.touch returns, kept so that no optimizer drops its reads.
   */
  private readonly [SATISFIED] = { words: new Uint32Array(SATISFY_BATCH * 16), touchSink: 0 };
  readonly counters: WaitCounters = { waitersAdded: 0, waitersWoken: 0, waitsSatisfiedAtOnce: 0, waitsTimedOut: 0 };
  /** Every waiter, by host id (src/os/waiter-slots.ts), whichever path started it. */
  private readonly slots = new WaiterSlots();
  /** The waiter id addShortCoreWaiter took last. */
  private addedId = 0;
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
  /** Set by dxgkrnl.ts (frozen: the whole table is replaced, never one hook). */
  hooks: OperationHooks = Object.freeze({
    ended: () => { throw new Error('Waits.hooks.ended is not wired'); },
    notify: () => { throw new Error('Waits.hooks.notify is not wired'); },
    readLogs: () => { throw new Error('Waits.hooks.readLogs is not wired'); },
    logFallback: () => { throw new Error('Waits.hooks.logFallback is not wired'); },
  });
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
    // The fence by its key (src/os/fence-rows.ts), whether the handle is a token or has its record: the checks
    // read its row, its one store.
    const value = call.value, object = call.object, key: FenceKey = object !== undefined ? object.global.key : call.row;
    const adapter = this.handles.adapters[rowKeyAdapterIndex(key)];
    const coreFence = rowKeyCoreFence(key), rows = rowsOf(adapter);
    if (adapter.state !== 'running' || (rows.bitsOf(coreFence) & (ROW_MONITORED | ROW_MONITORED_VALUE_HELD)) !== 0 || (rows.flagsOf(coreFence) & NO_WAIT_FLAG) !== 0) return NOT_TAKEN;
    const atOnce = this.reachedAtOnce(adapter, rows.cvPhysOf(coreFence), value, onComplete, deferred);
    if (atOnce !== undefined) return atOnce;
    const record = this.addShortCoreWaiter(adapter, coreFence, value);
    const id = this.addedId;
    this.slots.set(id, this.nextSequence++, label, ownerOf(process, owner), onComplete, deferred, key, value, record, 0);
    this.counters.waitersAdded++;
    adapter.withWaiters.addId(coreFence);
    if (value <= rows.monitoredValueOf(coreFence)) this.refresh(new Set([key]));
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
   * record is retired) and throws the core's error naming the fence (its label, from its row).
   */
  private addShortCoreWaiter(adapter: OsAdapter, coreFence: number, value: bigint): number {
    const core = adapter.core;
    const id = this.slots.takeId();
    const record = core.waiterCreate(id, this.layout.waiterModeAll);
    if (record < 0) { this.slots.returnId(id); check(record, addingWaiterOn(adapter, coreFence)); }
    const block = core.waitBlockAdd(coreFence, value, record, 0);
    if (block < 0) {
      core.waiterRetire(record);
      this.slots.returnId(id);
      check(block, addingWaiterOn(adapter, coreFence));
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
    const id = this.slots.takeId();
    const record = home.core.waiterCreate(id, mode === 'any' ? this.layout.waiterModeAny : this.layout.waiterModeAll);
    if (record < 0) { this.slots.returnId(id); check(record, `adding a CPU waiter on ${fences[pending[0]].label}`); }
    // Every wait block first; any failure rolls back and changes nothing.
    for (const i of pending) {
      const fence = fences[i];
      const block = fence.adapter.core.waitBlockAdd(fence.coreFence, values[i], record, i);
      if (block < 0) {
        if (others) for (const adapter of others) adapter.core.waiterRetire(record);
        home.core.waiterRetire(record);
        this.slots.returnId(id);
        check(block, `adding a CPU waiter on ${fence.label}`);
      }
    }
    // A waiter of one fence with no timeout is its slot alone, as waitOne's are; another keeps a detail beside it.
    const detail: WaiterDetail | undefined = count === 1 && timeoutNs === Infinity ? undefined : {
      fences: count === 1 ? fences[0].key : fences.map((f) => f.key), values: count === 1 ? values[0] : values, home, others, timeout: undefined, timeoutNs: undefined,
    };
    this.slots.set(id, this.nextSequence++, label, owner, onComplete, deferred, detail ?? fences[0].key, detail ? 0n : values[0], record,
      (mode === 'any' ? SLOT_ANY : 0) + (detail ? SLOT_DETAIL : 0));
    this.counters.waitersAdded++;
    const changed = new Set<FenceKey>();
    for (const i of pending) { fences[i].adapter.withWaiters.add(fences[i]); changed.add(fences[i].key); }
    if (this.trace.enabled) {
      this.trace.record('os', 'dxgkrnl', 'waiter added', {
        waiter: label, fences: pending.map((i) => fences[i].label), values: pending.map((i) => values[i]), mode,
      });
    }
    if (detail && timeoutNs !== Infinity) {
      detail.timeoutNs = timeoutNs;
      detail.timeout = this.scheduler.after(timeoutNs, 'dxgkrnl', 'wait-timeout', { waiter: id }, `timeout ${label}`);
    }
    this.refresh(changed, this.stepwise ? `wait ${label}` : undefined);
    return undefined;
  }

  /** A CPU wait's timeout event: the waiter is released with TIMEOUT, unless it completed meanwhile. */
  private waitTimedOut(event: ScheduledEvent): void {
    const id = event.args.waiter as number, slots = this.slots;
    const detail = slots.has(id) ? slots.detail(id) : undefined;
    if (!detail || detail.timeout !== event) return;
    this.counters.waitsTimedOut++;
    if (this.timeoutListeners.length) {
      const waiter = { label: slots.label(id), mode: this.modeOf(id), waits: this.pendingEntries(id).map((i) => ({ fence: this.entryFence(id, i), value: this.entryValue(id, i) })) };
      for (const listener of this.timeoutListeners) listener(waiter);
    }
    this.trace.record('os', 'dxgkrnl', 'wait timed out', { waiter: slots.label(id), timeoutNs: detail.timeoutNs });
    const changed = new Set<FenceKey>();
    this.finish(id, { status: 'TIMEOUT', timeNs: this.scheduler.nowNs, immediate: false }, changed);
    this.refresh(changed);
  }

  /**
   * Ends waiter `id`, whatever ends it (satisfied, released, timed out) and whichever path started it: the core
   * retires it on each adapter it has blocks on, its home last (the fences whose heaps lost a block go into
   * `changed`), its slot is freed, then its callback runs (unless `deliverNow` is false: an OS operation's step
   * delivers it later). `home`: its home adapter when the caller knows it (satisfy: the fence's), else found.
   */
  private finish(id: number, result: WaitResult, changed: Set<FenceKey>, deliverNow = true, home?: OsAdapter): void {
    const slots = this.slots, detail = slots.detail(id), record = slots.record(id);
    if (detail) {
      this.scheduler.cancel(detail.timeout);
      if (detail.others) for (const adapter of detail.others) this.retire(id, record, adapter, changed);
      home = detail.home;
    } else home ??= keyAdapter(slots.fence(id), this.handles.adapters);
    this.retire(id, record, home, changed);
    const onComplete = slots.callback(id), deferred = slots.deferred(id);
    const label = this.trace.enabled ? slots.label(id) : '';
    slots.clear(id);
    if (result.status === 'SUCCESS') this.counters.waitersWoken++;
    if (deliverNow) this.delivered(label, onComplete, deferred, result);
  }

  /** The end of finish: the waiter's callback runs (its thread wakes); `label` is read only while tracing. */
  private delivered(label: string, onComplete: (result: WaitResult) => void, deferred: boolean, result: WaitResult): void {
    if (this.trace.enabled) this.traceDelivery(label, result);
    this[DELIVERIES].deliver(onComplete, result, deferred);
  }

  private traceDelivery(label: string, result: WaitResult): void {
    this.trace.record('os', 'dxgkrnl', result.status === 'SUCCESS' ? 'waiter woken' : 'waiter released', { waiter: label, status: result.status, index: result.index });
  }

  /** Retires waiter `id`'s blocks (its core record `record`) on `adapter`; the fences whose heaps lost one go into `changed`. */
  private retire(id: number, record: number, adapter: OsAdapter, changed: Set<FenceKey>): void {
    const n = adapter.core.waiterRetire(record);
    if (n !== 0) this.retiredBlocks(id, n, adapter, changed); // none for a waiter satisfied by its one fence
  }

  /** retire's `n` (the core's count of fences whose heaps lost a block, or its error): those fences go into `changed`. */
  private retiredBlocks(id: number, n: number, adapter: OsAdapter, changed: Set<FenceKey>): void {
    if (n < 0) n = check(n, `retiring waiter ${this.slots.label(id)}`);
    const words = new Uint32Array(adapter.memory.buffer, adapter.core.outBufferAddress(), n);
    for (let k = 0; k < n; k++) {
      const fence = keyAt(adapter, words[k]);
      if (fence !== undefined) changed.add(fence);
    }
  }

  /** Waiter `id`'s mode, for tools. */
  private modeOf(id: number): 'all' | 'any' { return this.slots.waitAny(id) ? 'any' : 'all'; }

  /** The view of waiter `id`'s entry i's fence (made from its row if it has none yet: a tool needs the object). */
  private entryFence(id: number, i: number): GlobalFence {
    const detail = this.slots.detail(id);
    const key = !detail ? this.slots.fence(id) : Array.isArray(detail.fences) ? detail.fences[i] : detail.fences;
    const fence = viewOf(key, this.handles.adapters);
    if (fence === undefined) throw new Error(`internal: waiter ${id} waits on fence${rowKeyCoreFence(key)}, which is gone`);
    return fence;
  }

  /** The value of waiter `id`'s entry i. */
  private entryValue(id: number, i: number): bigint {
    const detail = this.slots.detail(id);
    if (!detail) return this.slots.value(id);
    return Array.isArray(detail.values) ? detail.values[i] : detail.values;
  }

  /**
   * Pops every waiter of `fence` satisfied by `currentValue` (the core's heap),
   * completing those whose condition now holds. Returns the entries satisfied. `fence` is its key
   * (src/os/fence-rows.ts): no view is made; the key goes into `changed`.
   */
  satisfy(fence: FenceKey, currentValue: bigint, changed: Set<FenceKey>, operation?: OsOperation): number {
    const adapter = this.handles.adapters[rowKeyAdapterIndex(fence)], coreFence = rowKeyCoreFence(fence);
    const core = adapter.core, slots = this.slots;
    const record = this.layout.out.satisfied;
    let total = 0;
    for (;;) {
      let n = core.fenceSatisfy(coreFence, currentValue, SATISFY_BATCH);
      if (n < 0) n = check(n, `satisfying waiters of ${this.labelOf(fence)}`); // the message is built only on failure
      if (n === 0) break;
      changed.add(fence);
      total += n;
      // Copied out: a callback may run code that calls the core again. (Linear memory never grows: a machine's is
      // made at its final size, so one view serves; records are little-endian u32s, as the host's typed arrays.)
      if (this.wordsOf !== adapter.memory) { this.words = new Uint32Array(adapter.memory.buffer); this.wordsOf = adapter.memory; }
      const stride = record.bytes >>> 2, completedAt = record.completed >>> 2, waiterAt = record.waiter >>> 2, entryAt = record.entry >>> 2;
      const base = core.outBufferAddress() >>> 2, count = n * stride, memoryWords = this.words!;
      const scratch = this[SATISFIED], words = scratch.words; // a copy: a callback may call the core again (no slice: a typed array per call)
      for (let k = 0; k < count; k++) words[k] = memoryWords[base + k];
      if (!operation) scratch.touchSink ^= slots.touch(words, n, stride, waiterAt);
      for (let i = 0, at = 0; i < n; i++, at += stride) {
        if (words[at + completedAt] === 0) continue;
        const id = words[at + waiterAt];
        if (!slots.has(id)) continue;
        const result: WaitResult = slots.waitAny(id)
          ? { status: 'SUCCESS', timeNs: this.scheduler.nowNs, immediate: false, index: words[at + entryAt] } : this[DELIVERIES].wokenAt(this.scheduler.nowNs);
        if (!operation) { this.finish(id, result, changed, true, adapter); continue; }
        // In an operation's steps, each satisfied waiter is retired by a step of its own. One of several fences leaves
        // the heaps now (its other blocks must not be popped again by the next fence this step satisfies); its step wakes it.
        const detail = slots.detail(id), several = detail !== undefined && Array.isArray(detail.fences);
        operation.retiring.push({
          waiter: id, sequence: slots.sequence(id), label: slots.label(id), owner: slots.owner(id), result,
          detached: several ? { onComplete: slots.callback(id), deferred: slots.deferred(id) } : undefined,
        });
        if (several) this.finish(id, result, changed, false);
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
   * operation when it runs in steps, undefined when it runs whole.
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
      loop.turn = this.turnOf(loop.changed);
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
        if (!rowsOf(batch.adapter).has(rowKeyCoreFence(fence)) || batch.adapter.state !== 'running') break;
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
   * adapter's by core id, each fence once (a Set's keys are once already). A key whose fence is gone is left out.
   */
  private turnOf(changed: Set<FenceKey>): FenceKey[] {
    const adapters = this.handles.adapters;
    // Adapters in index order and each adapter's fences in core id order (no Map, no closure).
    const list: FenceKey[] = new Array(changed.size);
    let listed = 0;
    for (const key of changed) {
      const adapter = adapters[rowKeyAdapterIndex(key)], coreFence = rowKeyCoreFence(key), rows = rowsOf(adapter);
      if (!rows.has(coreFence) || adapter.state !== 'running' || (rows.bitsOf(coreFence) & ROW_MONITORED) !== 0) continue;
      list[listed++] = key;
    }
    if (listed !== list.length) list.length = listed;
    if (list.length > 1) list.sort(byAdapterThenCoreId);
    return list;
  }

  /**
   * The batch of the turn's next adapter, its fences taken off the turn: those whose MonitoredValue is not what it
   * must be now (NF-02), with that value; undefined for none (or an adapter no longer running).
   */
  private nextBatch(loop: MonitoredLoop): OperationBatch | undefined {
    const turn = loop.turn, index = rowKeyAdapterIndex(turn[0]);
    let end = 1;
    while (end < turn.length && rowKeyAdapterIndex(turn[end]) === index) end++;
    // The adapter's fences leave the turn (all of it, the common case: no copy).
    const taken = end === turn.length ? turn : turn.slice(0, end);
    loop.turn = end === turn.length ? NO_TURN : turn.slice(end);
    const adapter = this.handles.adapters[index];
    if (adapter.state !== 'running') return undefined;
    const rows = rowsOf(adapter), core = adapter.core;
    let fences: FenceKey[] | undefined;
    let values: bigint[] | undefined;
    for (const fence of taken) {
      const coreFence = rowKeyCoreFence(fence);
      if (!rows.has(coreFence) || (rows.bitsOf(coreFence) & ROW_MONITORED_VALUE_HELD) !== 0) continue; // XA-03: held at 0
      const target = asU64(core.fenceMonitoredTarget(coreFence));
      if (target !== rows.monitoredValueOf(coreFence)) { (fences ??= []).push(fence); (values ??= []).push(target); }
    }
    return fences ? { adapter, fences, values: values!, called: false, resampled: 0 } : undefined;
  }

  /** CurrentValue of the fence `fence` names (GlobalFence.currentValue: the core's CPU read). */
  currentValueOf(fence: FenceKey): bigint {
    return asU64(this.handles.adapters[rowKeyAdapterIndex(fence)].core.cpuReadCurrentValue(rowKeyCoreFence(fence)));
  }

  /** The fence's name for people (GlobalFence.label), from its row. */
  labelOf(fence: FenceKey): string { return keyLabel(fence, this.handles.adapters); }

  /** DxgkDdiUpdateMonitoredValues for `fences` of one adapter, and the OS's record of what each is now (in its row). */
  updateMonitoredValues(adapter: OsAdapter, fences: FenceKey[], values: bigint[]): void {
    const pending = this.callUpdateMonitoredValues(adapter, fences, values);
    // A driver that performs it in steps: all of them now (this caller runs it whole).
    if (pending) while (!this.port.continueDdi(pending));
    this.recordMonitoredValues(adapter, fences, values);
  }

  /** The OS's record of each fence's MonitoredValue after the DDI returned: in its row (a fence destroyed meanwhile has none). */
  private recordMonitoredValues(adapter: OsAdapter, fences: FenceKey[], values: bigint[]): void {
    const rows = rowsOf(adapter);
    for (let i = 0; i < fences.length; i++) {
      const coreFence = rowKeyCoreFence(fences[i]);
      if (rows.has(coreFence)) rows.setMonitoredValue(coreFence, values[i]);
    }
  }

  private callUpdateMonitoredValues(adapter: OsAdapter, fences: FenceKey[], values: bigint[]): PendingDdi | undefined {
    const rows = rowsOf(adapter);
    return this.port.updateMonitoredValues(adapter.index, {
      NumFences: fences.length,
      NativeFenceArray: fences.map((f) => rows.globalHandleOf(rowKeyCoreFence(f))),
      UpdatedValueArray: values,
      MonitoredValueKernelCpuVa: fences.map((f) => rows.kernelMvVa(rowKeyCoreFence(f))),
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
          const { waiter, sequence, label, result, detached } = op.retiring.shift()!;
          if (detached) this.delivered(label, detached.onComplete, detached.deferred, result);
          else if (this.isWaiter(waiter, sequence)) this.finish(waiter, result, op.changed);
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
    op.event = this.scheduler.at(this.scheduler.nowNs, 'dxgkrnl', 'os-step', NO_ARGUMENTS, `dxgkrnl ${op.label}: ${phase}`);
  }

  /** The MonitoredValue this fence must have (NF-02). */
  monitoredTarget(fence: GlobalFence): bigint {
    return asU64(fence.adapter.core.fenceMonitoredTarget(fence.coreFence));
  }

  // ── releasing waiters that cannot be satisfied any more ──

  /** Is host id `id` still the waiter whose sequence is `sequence` (not ended, its id not another waiter's since)? */
  private isWaiter(id: number, sequence: number): boolean { return this.slots.has(id) && this.slots.sequence(id) === sequence; }

  /** The host ids of the waiters with a wait block in `fence`'s heap (each once). */
  private waitersOf(fence: GlobalFence, found: number[] = []): number[] {
    const core = fence.adapter.core;
    for (let start = 0; ; start += WAITERS_BATCH) {
      const n = check(core.fenceWaiters(fence.coreFence, start, WAITERS_BATCH), `listing the waiters of ${fence.label}`);
      const ids = new Uint32Array(fence.adapter.memory.buffer, core.outBufferAddress(), n);
      for (let k = 0; k < n; k++) if (this.slots.has(ids[k]) && !found.includes(ids[k])) found.push(ids[k]);
      if (n < WAITERS_BATCH) break;
    }
    return found;
  }

  /**
   * Ends the waiters `ids` with `status`, oldest first; one that a callback run meanwhile ended (its id another
   * waiter's by then) is left alone. The fences whose heaps changed go into `changed`.
   */
  private release(ids: number[], status: WaitStatus, changed: Set<FenceKey>): void {
    const sequences = ids.map((id) => this.slots.sequence(id));
    const order = ids.map((_, k) => k).sort((x, y) => sequences[x] - sequences[y]);
    for (const k of order) {
      if (this.isWaiter(ids[k], sequences[k])) this.finish(ids[k], { status, timeNs: this.scheduler.nowNs, immediate: false }, changed);
    }
  }

  /**
   * Releases every waiter that waits on `fence` with a non-success status.
   * `keepFence`: the fence lives on (destroy pending), so its MonitoredValue
   * follows too (UINT64_MAX once no waiter is left, NF-02).
   */
  releaseWaitersOf(fence: GlobalFence, status: WaitStatus, keepFence = false): void {
    const changed = new Set<FenceKey>();
    if (!fence.destroyed) this.release(this.waitersOf(fence), status, changed);
    if (!keepFence) changed.delete(fence.key);
    this.refresh(changed);
  }

  /** A bug check: every waiter still waiting on a fence of `adapter` is released with `status`. */
  releaseWaitersOnAdapter(adapter: OsAdapter, status: WaitStatus): void {
    const waiting: number[] = [];
    for (const fence of [...adapter.withWaiters].sort((x, y) => x.coreFence - y.coreFence)) {
      if (!fence.destroyed) this.waitersOf(fence, waiting);
    }
    const changed = new Set<FenceKey>();
    this.release(waiting, status, changed);
    this.refresh(changed);
  }

  // ── for tools (read-only) ──

  get pendingWaiters(): number { return this.slots.live; }

  /** The entries waiter `id` still waits for (the core's record on its home adapter), in call order. */
  private pendingEntries(id: number): number[] {
    const detail = this.slots.detail(id);
    const home = detail ? detail.home : keyAdapter(this.slots.fence(id), this.handles.adapters), core = home.core;
    const n = check(core.waiterPending(this.slots.record(id)), `reading waiter ${this.slots.label(id)}`);
    return [...new Uint32Array(home.memory.buffer, core.outBufferAddress(), n)].sort((x, y) => x - y);
  }

  /** The CPU waiters still waiting, oldest first, with what each still waits for (read-only, for tools). */
  pendingWaiterList(): PendingWaiter[] {
    const slots = this.slots;
    return slots.liveIds().map((id) => {
      const timeout = slots.detail(id)?.timeout;
      return {
        id: slots.sequence(id), label: slots.label(id), mode: this.modeOf(id), owner: slots.owner(id), timed: timeout !== undefined && !timeout.cancelled,
        waits: this.pendingEntries(id).map((i) => ({ fence: this.entryFence(id, i), value: this.entryValue(id, i) })),
      };
    });
  }

  /**
   * Tools that judge a wait that times out (machine.lostWakeups: one whose value was already reached), called with
   * its unsatisfied entries before it is released. They only read.
   */
  readonly timeoutListeners: ((waiter: { label: string; mode: 'all' | 'any'; waits: { fence: GlobalFence; value: bigint }[] }) => void)[] = [];

  /** Waiters whose value is reached but which are still waiting (NF-10; meaningful when no interrupt is on its way: machine.lostWakeups). */
  lostWakeups(): { waiter: string; fence: string; value: bigint; currentValue: bigint }[] {
    const lost: { waiter: string; fence: string; value: bigint; currentValue: bigint }[] = [];
    for (const id of this.slots.liveIds()) {
      for (const i of this.pendingEntries(id)) {
        const fence = this.entryFence(id, i), value = this.entryValue(id, i);
        const current = fence.peekValue();
        if (current >= value) lost.push({ waiter: this.slots.label(id), fence: fence.label, value, currentValue: current });
      }
    }
    return lost;
  }

  /** CPU waiters of one fence (its wait blocks in the core's heap): kernel-side inspection (machine.inspectFence). */
  fenceWaiterCount(fence: GlobalFence): number {
    return fence.destroyed ? 0 : fence.adapter.core.fenceWaiterCount(fence.coreFence);
  }
}

/** What addShortCoreWaiter's refusal says it was doing (the fence's label, from its row). */
function addingWaiterOn(adapter: OsAdapter, coreFence: number): string {
  return `adding a CPU waiter on ${rowsOf(adapter).nameOf(coreFence) ?? `fence${coreFence}`}`;
}
