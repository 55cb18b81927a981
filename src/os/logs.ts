// Native fence log buffers, the OS's side (LOG-01..10, INT-05).
//
// Why this file is long: the reader is one algorithm over one state (each
// buffer's cached position and timestamp): headers, the flush, overruns,
// entries, the fallback, and the LOG-05 fault injection that holds it back. The
// records it keeps are src/os/log-records.ts.
//
// Dxgkrnl gives every user-mode-submission hardware queue two 4 KiB log
// buffers (waits, signals) when the queue is created, tells the driver where
// they are (DxgkDdiSetNativeFenceLogBuffer), and reads them:
//
//   reader, per buffer: cached (WraparoundCount, FirstFreeEntryIndex)
//
//   1. read each header's 64-bit word; position = WraparoundCount × NumberOfEntries
//      + FirstFreeEntryIndex; new entries = position − cached position
//   2. DxgkDdiUpdateNativeFenceLogs for the queues that have new entries (LOG-06):
//      the driver's barrier makes their entry writes visible
//   3. more new entries than the buffer holds: an overrun (LOG-05). The entries
//      still there are read, and the waiters of every fence the queue's process
//      opened on the adapter are checked against live CurrentValues (the
//      "read every fence of the device" fallback), counted in fallbackScans
//   4. read the entries: a FenceEndGpuTimestamp lower than the last non-zero one
//      of that buffer is a contract violation (LOG-07); zero and repeated ones
//      are accepted. A signal entry satisfies waiters up to its value, capped by
//      the fence's live CurrentValue (an entry written before a rewind, NF-19,
//      must not wake a later waiter). An entry AHEAD of CurrentValue is kept:
//      LOG-04's order puts the barrier that makes the fence value visible after
//      the index advance, so the OS can read an entry (flushed, LOG-06) while
//      its fence value is still on its way, and that signal's interrupt then
//      finds no new entry. Each read of the queue checks the kept ones again
//      and drops each once CurrentValue reaches it (the race explorer found the
//      lost wakeup this closes: docs/EXPLORER.md)
//   5. cache the new position
//
// A header that does not fit its page (wrong Type, NumberOfEntries of 0 or more
// than 84, FirstFreeEntryIndex past the end, a position that went backwards) is
// reported as a contract violation; the OS falls back to the full check of that
// process's fences (no waiter is lost) and recreates the buffer.
//
// When the reader runs:
//   - OptimizedNativeFenceSignaledInterrupt (INT-05, LOG-09): the interrupt names
//     the queue that was running; the OS reads that queue's logs and wakes the
//     waiters the signal entries satisfy. hHWQueue = 0: every queue of the engine.
//     A queue of another engine (a contract violation) or one that no longer
//     exists (a late interrupt, reported) falls back to scanning every native
//     fence waiter, as an interrupt without a list does (INT-01).
//   - other interrupts: the list (or the full scan) wakes the waiters as before;
//     the logs are read afterwards for the timeline only.
//   - before a buffer is recreated or its queue destroyed, and when the timeline
//     is exported: entries read then wake waiters on optimized adapters, whose
//     interrupts rely on the logs.
//
// The CPU side of the timeline (LOG-08) is recorded here too: every wait and
// signal the user-mode driver puts in a ring is a "queued" event with its CPU
// timestamp, kept apart from the GPU's log entries; src/timeline/timeline.ts joins them.
//
// What the timeline is drawn from (queued events, entries read, interrupts,
// overruns, faults) grows with every command run, so each kind keeps only its
// most recent `historyRecords` records (createMachine option limits.timelineRecords,
// default DEFAULT_HISTORY_RECORDS): older ones are dropped, oldest first, and
// counted (counters.queuedDropped, entriesDropped, …). The timeline of a long
// run is then the recent window; the counts say what it leaves out.

import { u64 as asU64, type CoreLayout, type NativeFenceLogLayout } from '../core/bindings.js';
import { WddmError, check, invalid } from '../base/errors.js';
import type { DriverPort } from '../port/driver-port.js';
import type { Scheduler, ScheduledEvent } from '../base/scheduler.js';
import type { Trace } from '../base/trace.js';
import { KERNEL_VA_BASE, VIDSCHCAPS, hex } from '../base/wddm.js';
import type { NativeFenceSignaledInterrupt } from '../ddi/ddi.js';
import type { AddressSpaces } from './address-spaces.js';
import type { Handles } from './handles.js';
import { OP_WAIT, fenceLabel, requireRunning, type FenceCommandList, type FenceReference, type GlobalFence, type LocalFence, type OsAdapter, type OsHwQueue } from './objects.js';
import { keyAt, liveKey, rowOnAdapter, type FenceKey } from './fence-rows.js';
import type { OsOperation, Waits } from './waits.js';
import {
  DEFAULT_HISTORY_RECORDS, EntryRecords, RecentRecords,
  type InterruptMark, type LogBuffer, type LogCounters, type LogEntryRecord, type LogFault, type LogFaultKind, type LogKind,
  type LogOverrun, type QueueLogs, type QueuedEvent,
} from './log-records.js';

export {
  DEFAULT_HISTORY_RECORDS, RecentRecords,
  type InterruptMark, type LogBuffer, type LogCounters, type LogEntryRecord, type LogFault, type LogFaultKind, type LogKind,
  type LogOverrun, type QueueLogs, type QueuedEvent,
} from './log-records.js';

/** What the log reader uses of the rest of the OS (the OS wires it). */
export interface LogsEnvironment {
  readonly adapters: readonly OsAdapter[];
  readonly handles: Handles;
  readonly addressSpaces: AddressSpaces;
  readonly waits: Waits;
  readonly port: DriverPort;
  readonly scheduler: Scheduler;
  readonly trace: Trace;
  readonly layout: CoreLayout;
}

/** LOG-05 fault injection: how long a held-back reader waits before it looks at its log again. */
export const READER_RETRY_NS = 20_000;
const KINDS: readonly LogKind[] = ['waits', 'signals'];

interface AdapterLogs { queues: Map<number, QueueLogs>; destroyed: Set<number> }

export class NativeFenceLogs {
  private readonly counts = {
    buffersCreated: 0, buffersRecreated: 0, logReads: 0, entriesRead: 0, updateNativeFenceLogsCalls: 0,
    overruns: 0, entriesLost: 0, fallbackScans: 0, contractViolations: 0, optimizedInterrupts: 0,
  };
  // The timeline's records (LOG-08), each kind the most recent historyRecords.
  private readonly history = {
    queued: new QueuedRecords(DEFAULT_HISTORY_RECORDS),
    entries: new EntryRecords(DEFAULT_HISTORY_RECORDS),
    interrupts: new RecentRecords<InterruptMark>(DEFAULT_HISTORY_RECORDS),
    overruns: new RecentRecords<LogOverrun>(DEFAULT_HISTORY_RECORDS),
    faults: new RecentRecords<LogFault>(DEFAULT_HISTORY_RECORDS),
  };
  private readonly perAdapter = new Map<OsAdapter, AdapterLogs>();
  /** LOG-05 fault injection (src/machine/faults.ts): signal logs whose reader is held back, with its pending retry. */
  private readonly behind = new Map<LogBuffer, { retry?: ScheduledEvent }>();

  /** Fences the LOG-05 fallback looked at (part of summary().os.fencesScanned). */
  fallbackFencesScanned = 0;

  constructor(private readonly os: LogsEnvironment) {
    os.scheduler.register('dxgkrnl/logs', (event) => this.onEvent(event));
  }

  /** Counters, with how many timeline records each kind dropped. */
  get counters(): LogCounters {
    const h = this.history;
    return Object.assign({}, this.counts, {
      queuedDropped: h.queued.dropped, entriesDropped: h.entries.dropped, interruptsDropped: h.interrupts.dropped,
      overrunsDropped: h.overruns.dropped, faultsDropped: h.faults.dropped,
    });
  }

  /** Records of each kind kept for the timeline (the most recent ones). */
  get historyRecords(): number { return this.history.queued.limit; }
  set historyRecords(limit: number) { for (const records of Object.values(this.history)) records.resize(limit); }

  /** The timeline's records, oldest first (copies of the kept window). */
  get queued(): QueuedEvent[] { return this.history.queued.list(); }
  get entries(): LogEntryRecord[] { return this.history.entries.list(); }
  get interrupts(): InterruptMark[] { return this.history.interrupts.list(); }
  get overruns(): LogOverrun[] { return this.history.overruns.list(); }
  get faults(): LogFault[] { return this.history.faults.list(); }

  /** Contract violations only (overruns are allowed and kept apart). */
  get violations(): LogFault[] { return this.faults.filter((f) => f.kind !== 'interrupt-queue-destroyed'); }

  private layout(_adapter: OsAdapter): NativeFenceLogLayout { return this.os.layout.log; }

  private state(adapter: OsAdapter): AdapterLogs {
    let s = this.perAdapter.get(adapter);
    if (!s) this.perAdapter.set(adapter, (s = { queues: new Map(), destroyed: new Set() }));
    return s;
  }

  /** The logs of a hardware queue, by the driver's kernel handle. */
  queueLogs(adapter: OsAdapter, hHwQueue: number): QueueLogs | undefined { return this.state(adapter).queues.get(hHwQueue); }

  /** Every live queue's logs on the adapter, in kernel handle order. */
  liveQueues(adapter: OsAdapter): QueueLogs[] {
    return [...this.state(adapter).queues.values()].filter((q) => q.live).sort((x, y) => x.queue.hHwQueue - y.queue.hHwQueue);
  }

  // ── buffers (LOG-01, LOG-03) ──

  /** A user-mode-submission queue was created: its two buffers, each announced to the driver. */
  queueCreated(queue: OsHwQueue): void {
    const adapter = queue.device.adapter;
    const ql: QueueLogs = { queue, adapter, buffers: {} as Record<LogKind, LogBuffer>, live: true, ahead: [] };
    try {
      for (const kind of KINDS) ql.buffers[kind] = this.newBuffer(ql, kind, 0);
    } catch (error) {
      for (const kind of KINDS) if (ql.buffers[kind]) this.freeBuffer(ql, ql.buffers[kind]);
      throw error;
    }
    this.state(adapter).queues.set(queue.hHwQueue, ql);
  }

  private newBuffer(ql: QueueLogs, kind: LogKind, generation: number): LogBuffer {
    const adapter = ql.adapter;
    const L = this.layout(adapter);
    const type = kind === 'waits' ? L.typeWaits : L.typeSignals;
    const phys = adapter.core.logBufferCreate(type);
    if (!phys) throw new WddmError('NO_MEMORY', `no free 4 KiB page of system memory for the ${kind} log buffer of hardware queue "${ql.queue.label}" (machine option systemMemoryBytes)`);
    const process = ql.queue.device.process;
    let gpuVa = 0n, systemGpuVa = 0n;
    try {
      gpuVa = this.os.addressSpaces.mapGpu(process, adapter, phys, 'read-write'); // the engine writes its entries
      if (adapter.caps.NativeFenceCaps.MapToGpuSystemProcess) systemGpuVa = this.os.addressSpaces.mapGpu(this.os.handles.system, adapter, phys, 'read-write');
    } catch (error) {
      if (gpuVa) this.os.addressSpaces.unmapGpu(process, adapter, phys);
      adapter.core.logBufferDestroy(phys);
      throw error;
    }
    const buffer: LogBuffer = { kind, type, phys, gpuVa, systemGpuVa, cachedIndex: 0, cachedWraparound: 0, lastTimestampNs: 0n, generation };
    const args = {
      hHwQueue: ql.queue.hHwQueue, NumberOfEntries: L.entries, LogBufferCpuVa: KERNEL_VA_BASE + BigInt(phys),
      LogBufferGpuVa: gpuVa, LogBufferSystemProcessGpuVa: systemGpuVa, Flags: { Value: 0 },
    };
    this.os.port.setNativeFenceLogBuffer(adapter.index, args, kind === 'waits' ? 'DXGK_NATIVE_FENCE_LOG_TYPE_WAITS' : 'DXGK_NATIVE_FENCE_LOG_TYPE_SIGNALS');
    this.counts.buffersCreated++;
    return buffer;
  }

  private freeBuffer(ql: QueueLogs, buffer: LogBuffer): void {
    const adapter = ql.adapter;
    this.os.addressSpaces.unmapGpu(ql.queue.device.process, adapter, buffer.phys);
    if (buffer.systemGpuVa) this.os.addressSpaces.unmapGpu(this.os.handles.system, adapter, buffer.phys);
    check(adapter.core.logBufferDestroy(buffer.phys), `freeing the ${buffer.kind} log buffer of "${ql.queue.label}"`);
  }

  /**
   * The OS destroys one of a queue's buffers and makes a new one (LOG-03):
   * the old one is flushed and read first, the driver is told the new
   * location, then the old page is freed.
   */
  recreate(ql: QueueLogs, kind: LogKind, reason: string, readFirst = true): void {
    if (!ql.live) throw invalid('hHwQueue', ql.queue.handle, 'a live hardware queue');
    const adapter = ql.adapter;
    requireRunning(adapter, 'hHwQueue');
    this.releaseHold(ql, 'its log buffer is recreated');
    if (readFirst) this.service(adapter, [ql], 'before recreating a log buffer', this.optimized(adapter));
    const old = ql.buffers[kind];
    this.os.trace.record('os', 'dxgkrnl', 'log buffer recreated', { queue: ql.queue.label, log: kind, reason, oldPhys: old.phys });
    ql.buffers[kind] = this.newBuffer(ql, kind, old.generation + 1);
    this.freeBuffer(ql, old);
    this.counts.buffersRecreated++;
  }

  /** Before DxgkDdiDestroyHwQueue: read what the queue logged last. */
  queueDestroying(queue: OsHwQueue): void {
    const adapter = queue.device.adapter;
    const ql = this.state(adapter).queues.get(queue.hHwQueue);
    if (!ql || !ql.live || adapter.state !== 'running' || queue.device.removed) return;
    this.releaseHold(ql, 'its hardware queue is destroyed');
    this.service(adapter, [ql], 'hardware queue destroyed', this.optimized(adapter));
  }

  /**
   * A handle GPU commands used is about to be closed for good (src/os/lifetime.ts):
   * the logs of the process's queues on that adapter are read first, so the
   * entries written through it resolve to its fence (and wake what they satisfy).
   */
  beforeHandleClosed(local: LocalFence): void {
    const adapter = local.global.adapter;
    const queues = this.liveQueues(adapter).filter((ql) => ql.queue.device.process === local.process && !ql.queue.device.removed);
    if (!queues.length || adapter.state !== 'running') return;
    this.service(adapter, queues, 'before closing a handle GPU commands used', this.optimized(adapter));
  }

  /** After the queue is gone: its pages go back to system memory. */
  queueDestroyed(queue: OsHwQueue): void {
    const state = this.state(queue.device.adapter);
    const ql = state.queues.get(queue.hHwQueue);
    if (!ql || !ql.live) return;
    ql.live = false;
    this.releaseHold(ql, undefined);
    for (const kind of KINDS) this.freeBuffer(ql, ql.buffers[kind]);
    state.queues.delete(queue.hHwQueue);
    state.destroyed.add(queue.hHwQueue);
  }

  /** Device removal: every queue of the adapter is gone with its buffers. */
  adapterReset(adapter: OsAdapter): void {
    for (const ql of this.liveQueues(adapter)) this.queueDestroyed(ql.queue);
  }

  // ── CPU-side queued events (LOG-08) ──

  /** The UMD wrote these waits and signals into the queue's ring at the current CPU time. */
  recordQueued(queue: OsHwQueue, commands: FenceCommandList): void {
    this.history.queued.pushAll(queue, commands, this.os.scheduler.nowNs);
  }

  // ── interrupts (INT-05, LOG-09) ──

  optimized(adapter: OsAdapter): boolean {
    return (adapter.caps.VidSchCaps & VIDSCHCAPS.OptimizedNativeFenceSignaledInterrupt) !== 0;
  }

  /**
   * A native fence signaled interrupt arrived. Returns true when the logs
   * handled it (optimized interrupt naming a valid queue, or none); false
   * when the caller must go on with the list or the full scan; 'in-steps'
   * when the OS runs its operations in steps: the read is the next step of
   * the operation (Waits.operationFor), and the caller ends it.
   */
  onInterrupt(adapter: OsAdapter, data: NativeFenceSignaledInterrupt): boolean | 'in-steps' {
    const list = data.pSignaledNativeFenceArray;
    this.history.interrupts.push({ adapter: adapter.name, adapterIndex: adapter.index, engine: data.NodeOrdinal, hHWQueue: data.hHWQueue, listed: list ? list.length : null, timeNs: this.os.scheduler.nowNs });
    if (!this.optimized(adapter) || list) return false;
    const state = this.state(adapter);
    let queues: QueueLogs[];
    if (data.hHWQueue === 0) {
      queues = this.liveQueues(adapter).filter((q) => q.queue.engine === data.NodeOrdinal);
      this.os.trace.record('os', 'dxgkrnl', 'optimized interrupt: no queue named, reading every queue of the engine', { engine: data.NodeOrdinal, queues: queues.map((q) => q.queue.label) });
    } else {
      const ql = state.queues.get(data.hHWQueue);
      if (!ql) {
        const destroyed = state.destroyed.has(data.hHWQueue);
        this.fault(destroyed ? 'interrupt-queue-destroyed' : 'interrupt-queue-unknown', adapter, undefined, undefined,
          `optimized native fence signaled interrupt names hHWQueue ${hex(data.hHWQueue)}, which is ${destroyed ? 'a hardware queue destroyed before the interrupt was serviced' : 'no hardware queue of this adapter'}; scanning every native fence waiter instead`);
        return false;
      }
      if (ql.queue.engine !== data.NodeOrdinal) {
        this.fault('interrupt-queue-other-engine', adapter, ql, undefined,
          `optimized native fence signaled interrupt on engine ${data.NodeOrdinal} names hHWQueue ${hex(data.hHWQueue)} ("${ql.queue.label}"), which runs on engine ${ql.queue.engine}; scanning every native fence waiter instead`);
        return false;
      }
      queues = [ql];
      this.os.trace.record('os', 'dxgkrnl', 'optimized interrupt: reading the signal log of the named queue', { queue: ql.queue.label, hHWQueue: data.hHWQueue });
    }
    this.counts.optimizedInterrupts++;
    const operation = this.os.waits.operationFor('optimized interrupt');
    if (operation) {
      operation.logReads.push({ adapter, queues, reason: 'optimized native fence signaled interrupt' });
      return 'in-steps';
    }
    this.service(adapter, queues, 'optimized native fence signaled interrupt', true);
    return true; // the OS counts what it did (Interrupts.countInterrupt, src/os/interrupts.ts)
  }

  /** After an interrupt the list (or full scan) handled: read the logs for the timeline, waking nothing. */
  afterInterrupt(adapter: OsAdapter): void {
    if (adapter.state !== 'running') return;
    this.service(adapter, this.liveQueues(adapter), 'timeline', false);
  }

  /** Reads every live queue's logs of every running adapter (the timeline exporter calls it). */
  readAll(): void {
    for (const adapter of [...this.perAdapter.keys()].sort((x, y) => x.index - y.index)) {
      if (adapter.state === 'running') this.service(adapter, this.liveQueues(adapter), 'timeline export', this.optimized(adapter));
    }
  }

  // ── the reader (LOG-05, LOG-06, LOG-07) ──

  /**
   * Reads the new entries of `queues`. With `wake`, the signal entries
   * satisfy CPU waiters (value by value) and an overrun or a corrupt header
   * falls back to every fence of the queue's process on this adapter.
   * Within an OS operation in steps (`operation`: a log-read step), the
   * waiters it satisfies are retired by steps of their own, and each
   * fallback is a step of its own (the operation's logFallbacks).
   */
  service(adapter: OsAdapter, queues: QueueLogs[], reason: string, wake: boolean, operation?: OsOperation): void {
    if (adapter.state !== 'running' || !queues.length) return;
    // On an optimized adapter interrupts rely on the logs: an entry read must wake what it satisfies.
    wake ||= this.optimized(adapter);
    const core = adapter.core;
    const L = this.layout(adapter);
    const view = new DataView(adapter.memory.buffer);
    const now = this.os.scheduler.nowNs;
    this.counts.logReads++;
    interface Pending { ql: QueueLogs; buffer: LogBuffer; count: number; from: number; to: number; index: number; wraps: number }
    const pending: Pending[] = [];
    const fallback = new Set<QueueLogs>();
    const broken: [QueueLogs, LogKind][] = [];
    // 1. headers
    for (const ql of queues) {
      if (!ql.live) continue;
      for (const kind of KINDS) {
        const b = ql.buffers[kind];
        const why = this.headerProblem(adapter, b, view);
        if (why) {
          this.fault('corrupt-header', adapter, ql, kind, `the ${kind} log of "${ql.queue.label}" has a corrupt header: ${why}; its entries are not read, every fence of the device is checked instead and the buffer is recreated`);
          fallback.add(ql);
          broken.push([ql, kind]);
          continue;
        }
        const word = asU64(core.logHeaderWord(b.phys));
        const index = Number(word & 0xffff_ffffn);
        const wraps = Number(word >> 32n);
        const count = Number(view.getBigUint64(b.phys + L.countOffset, true));
        const to = wraps * count + index;
        const from = b.cachedWraparound * count + b.cachedIndex;
        if (to < from) {
          this.fault('corrupt-header', adapter, ql, kind, `the ${kind} log of "${ql.queue.label}" went backwards: WraparoundCount ${wraps} FirstFreeEntryIndex ${index}, last read ${b.cachedWraparound}/${b.cachedIndex}; every fence of the device is checked instead and the buffer is recreated`);
          fallback.add(ql);
          broken.push([ql, kind]);
          continue;
        }
        if (this.behind.has(b) && this.stillBehind(adapter, ql, b, to - from, count, wake)) continue;
        if (to > from) pending.push({ ql, buffer: b, count, from, to, index, wraps });
      }
    }
    // 2. flush the queues that have new entries
    const flush = [...new Set(pending.map((p) => p.ql))].sort((x, y) => x.queue.hHwQueue - y.queue.hHwQueue);
    if (flush.length) {
      const args = { NumberOfQueues: flush.length, hHWQueueArray: flush.map((q) => q.queue.hHwQueue), Flags: { Value: 0 } };
      this.counts.updateNativeFenceLogsCalls++;
      this.os.port.updateNativeFenceLogs(adapter.index, args, reason);
      if (adapter.state !== 'running') return;
    }
    // 3. + 4. overruns, entries, timestamps
    const changed: Set<FenceKey> = operation ? operation.changed : new Set();
    for (const p of pending) {
      const { ql, buffer: b, count } = p;
      let from = p.from;
      if (p.to - from > count) {
        const lost = p.to - from - count;
        this.counts.overruns++;
        this.counts.entriesLost += lost;
        this.history.overruns.push({ adapter: adapter.name, queue: ql.queue.label, hHwQueue: ql.queue.hHwQueue, log: b.kind, lost, timeNs: now });
        this.os.trace.record('os', 'dxgkrnl', 'log overrun', { queue: ql.queue.label, log: b.kind, lost, WraparoundCount: p.wraps, cachedWraparoundCount: b.cachedWraparound });
        if (b.kind === 'signals') fallback.add(ql);
        from = p.to - count;
      }
      for (let position = from; position < p.to; position++) {
        const slot = position % count;
        const at = b.phys + L.headerBytes + slot * L.entryBytes;
        // Kept as columns (EntryRecords): the BigInts read here die young.
        const handle = view.getUint32(at + L.entryHandleOffset, true);
        const named = this.fenceOfEntry(ql, handle);
        const value = view.getBigUint64(at + L.entryValueOffset, true);
        const waitUnblocked = view.getUint32(at + L.entryOperationOffset, true) === L.operationWaitUnblocked;
        const observedNs = view.getBigUint64(at + L.entryObservedOffset, true), endNs = view.getBigUint64(at + L.entryEndOffset, true);
        this.history.entries.push(ql, b, slot, handle, named, value, waitUnblocked, observedNs, endNs, now);
        if (this.os.trace.enabled) {
          this.os.trace.record('os', 'dxgkrnl', 'log entry read', {
            queue: ql.queue.label, log: b.kind, slot, hNativeFence: handle, fence: typeof named === 'number' ? `fence${named}` : named?.label ?? 'unknown', FenceValue: value,
            OperationType: waitUnblocked ? 'WAIT_UNBLOCKED' : 'SIGNAL_EXECUTED', FenceObservedGpuTimestamp: observedNs, FenceEndGpuTimestamp: endNs,
          });
        }
        this.counts.entriesRead++;
        if (endNs !== 0n) {
          if (endNs < b.lastTimestampNs) {
            this.fault('timestamp-decreased', adapter, ql, b.kind, `the ${b.kind} log of "${ql.queue.label}" went back in time at slot ${slot}: FenceEndGpuTimestamp ${endNs} after ${b.lastTimestampNs}`);
          } else {
            b.lastTimestampNs = endNs;
          }
        }
        if (wake && b.kind === 'signals' && !waitUnblocked && named !== undefined) {
          // The fence by its key (no view made), while it lives.
          const fence = keyAt(adapter, typeof named === 'number' ? named : named.coreFence);
          // Capped by the live value: an entry written before a rewind (NF-19) must not wake a later waiter.
          if (fence !== undefined) {
            const current = this.os.waits.currentValueOf(fence);
            this.os.waits.satisfy(fence, value < current ? value : current, changed, operation);
            if (value > current) this.keepAhead(ql, fence, value);
          }
        }
      }
      // 5. cache
      b.cachedIndex = p.index;
      b.cachedWraparound = p.wraps;
    }
    // Entries read ahead of their fence's CurrentValue, again (step 4).
    if (wake) for (const ql of queues) if (ql.ahead.length) this.checkAhead(ql, changed, operation);
    // LOG-05 fallback: every fence the queue's process opened on this adapter, live values
    if (wake) {
      for (const ql of [...fallback].sort((x, y) => x.queue.hHwQueue - y.queue.hHwQueue)) {
        if (operation) operation.logFallbacks.push({ adapter, queue: ql });
        else this.fallbackScan(adapter, ql, changed);
      }
    }
    if (!operation) this.os.waits.refresh(changed);
    for (const [ql, kind] of broken) if (ql.live && adapter.state === 'running') this.recreate(ql, kind, 'corrupt header', false);
  }

  /** Keeps a signal entry read ahead of its fence's CurrentValue (step 4 of the reader). */
  private keepAhead(ql: QueueLogs, fence: FenceKey, value: bigint): void {
    ql.ahead.push({ fence, value });
    if (ql.ahead.length > this.os.layout.log.entries) ql.ahead.shift();
  }

  /** The entries read ahead of CurrentValue: each satisfies what CurrentValue reaches now, and is dropped once it reached the entry. */
  private checkAhead(ql: QueueLogs, changed: Set<FenceKey>, operation?: OsOperation): void {
    const adapters = this.os.adapters;
    ql.ahead = ql.ahead.filter(({ fence, value }) => {
      const live = liveKey(fence, adapters);
      if (live === undefined) return false;
      const current = this.os.waits.currentValueOf(live);
      this.os.waits.satisfy(live, value < current ? value : current, changed, operation);
      return current < value;
    });
  }

  /** A log-fallback step of an OS operation in steps (service queued it). */
  fallback(adapter: OsAdapter, ql: QueueLogs, operation: OsOperation): void {
    if (adapter.state !== 'running') return;
    this.fallbackScan(adapter, ql, operation.changed, operation);
  }

  /** The LOG-05 fallback for one queue: the waiters of every fence its process opened on the adapter, against live CurrentValues. */
  private fallbackScan(adapter: OsAdapter, ql: QueueLogs, changed: Set<FenceKey>, operation?: OsOperation): void {
    const process = ql.queue.device.process;
    const fences = [...adapter.withWaiters].filter((f) => [...f.locals].some((l: LocalFence) => l.process === process)).sort((x, y) => x.coreFence - y.coreFence);
    this.counts.fallbackScans++;
    this.os.trace.record('os', 'dxgkrnl', 'log fallback: reading every fence of the device', { queue: ql.queue.label, fences: fences.map((f) => f.label) });
    for (const fence of fences) {
      this.fallbackFencesScanned++;
      this.os.waits.satisfy(fence.key, fence.currentValue(), changed, operation);
    }
  }

  // ── LOG-05 fault injection: a reader that falls behind (src/machine/faults.ts) ──
  //
  // The OS stops reading the signal log of the queue until the GPU has written
  // more entries than the buffer holds since the cached position: the next
  // read then finds the overrun and takes the fallback above. Nothing is
  // edited; the reader only stays away. So that no waiter is lost meanwhile:
  //   - a read that had to wake waiters and was skipped is retried later
  //     (READER_RETRY_NS), as a reader thread that runs again would;
  //   - when the queue cannot write more entries now (nothing pending, or
  //     blocked), waiting longer cannot overrun the log: the reader catches
  //     up at once (traced, no overrun);
  //   - recreating the buffer or destroying the queue reads it first, as always.

  /** Holds back the reader of the queue's signal log. False when it already was. */
  fallBehind(ql: QueueLogs): boolean {
    if (!ql.live) throw invalid('queue', ql.queue.label, 'a live hardware queue with log buffers');
    const b = ql.buffers.signals;
    if (this.behind.has(b)) return false;
    this.behind.set(b, {});
    return true;
  }

  /** Is the reader of `b` still held back? Skips the read (and arranges a retry) if so. */
  private stillBehind(adapter: OsAdapter, ql: QueueLogs, b: LogBuffer, unread: number, count: number, wake: boolean): boolean {
    if (unread > count) {
      this.releaseHold(ql, undefined);
      this.os.trace.record('os', 'dxgkrnl', 'log reader back: the GPU wrapped past its cached position', { queue: ql.queue.label, log: b.kind, unread, NumberOfEntries: count });
      return false;
    }
    // What the OS knows from the driver's progress reports: commands still in the ring, and no wait holding them.
    const canWrite = !ql.queue.gpu.blocked && ql.queue.gpu.inRing > 0;
    if (!canWrite) {
      this.releaseHold(ql, undefined);
      this.os.trace.record('os', 'dxgkrnl', 'log reader back: the queue stopped writing before the log wrapped (no overrun)', { queue: ql.queue.label, log: b.kind, unread, NumberOfEntries: count });
      return false;
    }
    this.os.trace.record('os', 'dxgkrnl', 'log read skipped: reader behind', { queue: ql.queue.label, log: b.kind, unread, NumberOfEntries: count });
    const hold = this.behind.get(b)!;
    if (wake && !hold.retry) {
      hold.retry = this.os.scheduler.after(READER_RETRY_NS, 'dxgkrnl/logs', 'log-reader-retry', { adapter: adapter.index, hHwQueue: ql.queue.hHwQueue },
        `dxgkrnl log reader retry ${ql.queue.label}`);
    }
    return true;
  }

  /** The log reader's scheduler events: 'log-reader-retry' of a held-back reader (src/base/scheduler.ts). */
  onEvent(event: ScheduledEvent): void {
    if (event.kind !== 'log-reader-retry') throw new Error(`dxgkrnl/logs: no scheduler event of kind "${event.kind}"`);
    const adapter = this.os.adapters.find((a) => a.index === event.args.adapter);
    const ql = adapter && this.queueLogs(adapter, event.args.hHwQueue as number);
    if (!adapter || !ql) return;
    const hold = this.behind.get(ql.buffers.signals);
    if (!hold || hold.retry !== event) return;
    hold.retry = undefined;
    if (!ql.live) return;
    // In steps, the read is an operation's step of its own, as an interrupt's is.
    const operation = this.os.waits.operationFor('log reader retry');
    if (!operation) { this.service(adapter, [ql], 'log reader retry', true); return; }
    operation.logReads.push({ adapter, queues: [ql], reason: 'log reader retry' });
    this.os.waits.run(operation, new Set());
  }

  private releaseHold(ql: QueueLogs, reason: string | undefined): void {
    const hold = this.behind.get(ql.buffers.signals);
    if (!hold) return;
    this.os.scheduler.cancel(hold.retry);
    this.behind.delete(ql.buffers.signals);
    if (reason) this.os.trace.record('os', 'dxgkrnl', 'log reader back: ' + reason, { queue: ql.queue.label, log: 'signals' });
  }

  /** Signal logs whose reader is held back (tests, the summary). */
  get readersBehind(): number { return this.behind.size; }

  private headerProblem(adapter: OsAdapter, b: LogBuffer, view: DataView): string | undefined {
    if (adapter.core.logCheck(b.phys, b.type) === 0) return undefined;
    const L = this.layout(adapter);
    const type = view.getUint32(b.phys + L.typeOffset, true);
    const count = view.getBigUint64(b.phys + L.countOffset, true);
    const index = Number(asU64(adapter.core.logHeaderWord(b.phys)) & 0xffff_ffffn);
    if (type !== b.type) return `Type is ${type}, expected ${b.type}`;
    if (count === 0n || count > BigInt(L.entries)) return `NumberOfEntries is ${count}, but a 4 KiB buffer holds 1 to ${L.entries}`;
    return `FirstFreeEntryIndex ${index} is past the last entry (NumberOfEntries ${count})`;
  }

  /**
   * The fence record a log entry's handle names (a handle closed meanwhile still names its fence), if any; the core id
   * of a fence kept as a row when the handle is still that row's (no object made to read an entry, issue 14q).
   */
  private fenceOfEntry(ql: QueueLogs, handle: number): GlobalFence | number | undefined {
    const process = ql.queue.device.process;
    const row = rowOnAdapter(process.handles.rowToken(handle), ql.queue.device.adapter.index);
    if (row >= 0) return row;
    const object = process.handles.get(handle) ?? process.closing.get(handle);
    return object && object.kind === 'syncObject' ? (object as LocalFence).global : undefined;
  }

  private fault(kind: LogFaultKind, adapter: OsAdapter, ql: QueueLogs | undefined, log: LogKind | undefined, message: string): void {
    const fault: LogFault = { kind, adapter: adapter.name, queue: ql?.queue.label, hHwQueue: ql?.queue.hHwQueue, log, message, timeNs: this.os.scheduler.nowNs };
    this.history.faults.push(fault);
    if (kind === 'interrupt-queue-destroyed') {
      this.os.trace.record('os', 'dxgkrnl', 'interrupt names a destroyed hardware queue', { message });
      return;
    }
    this.counts.contractViolations++;
    this.os.trace.record('fault', adapter.name, 'native fence log contract violation', { kind, message });
  }
}

/**
 * The queued events (LOG-08) as RecentRecords keeps them (the newest `limit`, counting what it drops), in a
 * ring of slots growing by doubling up to `limit`; list() makes the records (labels and ids never change).
 * A slot holds its command's value and the index of its run (the commands of one submission naming one handle
 * with one op): the queue, fence reference, handle, op and CPU time are the run's, written once a run, so a
 * command costs its value and a u32 (no object reference per command). Runs are indexed by their number
 * modulo the capacity: every live run holds at least one kept slot, so two live runs never share an index.
 */
class QueuedRecords {
  private values = new BigUint64Array(0);
  private runOf = new Uint32Array(0);
  private runQueues: OsHwQueue[] = [];
  /** What each run named (a row's core id: no object made, FenceReference) and through which handle. */
  private runLocals: FenceReference[] = [];
  private runHandles = new Uint32Array(0);
  private runOps = new Uint8Array(0);
  private runTimes = new Float64Array(0);
  /** The index the next run takes. */
  private nextRun = 0;
  private start = 0;
  private kept = 0;
  dropped = 0;
  constructor(public limit: number) {}

  get length(): number { return this.kept; }

  pushAll(queue: OsHwQueue, commands: FenceCommandList, cpuTimeNs: number): void {
    const count = commands.length;
    // Only the newest `limit` of them can be kept.
    const first = Math.max(0, count - this.limit);
    this.dropped += first;
    if (first === count) return;
    if (this.kept + count - first > this.values.length && this.values.length < this.limit) this.grow(Math.min(this.limit, this.kept + count - first));
    const { runLocals, runHandles, runOps, runEnds, values } = commands;
    const capacity = this.values.length;
    // Each run's slots go to the ring a contiguous stretch at a time (filled, not one by one).
    for (let r = 0, at = 0; r < commands.runCount; r++) {
      const end = runEnds[r];
      if (end <= first) { at = end; continue; }
      // The run's index: the run that had it holds no kept slot, or only the oldest one, which this run's first slot replaces.
      const run = this.nextRun;
      this.nextRun = run + 1 === capacity ? 0 : run + 1;
      this.runQueues[run] = queue;
      this.runLocals[run] = runLocals[r];
      this.runHandles[run] = runHandles[r];
      this.runOps[run] = runOps[r];
      this.runTimes[run] = cpuTimeNs;
      for (at = Math.max(at, first); at < end;) {
        let slot: number, room: number;
        if (this.kept < capacity) {
          slot = (this.start + this.kept) % capacity;
          room = Math.min(end - at, capacity - this.kept, capacity - slot);
          this.kept += room;
        } else {
          slot = this.start;
          room = Math.min(end - at, capacity - slot);
          this.start = (slot + room) % capacity;
          this.dropped += room;
        }
        if (room < 16) {
          for (let k = 0; k < room; k++) {
            this.values[slot + k] = values[at + k];
            this.runOf[slot + k] = run;
          }
        } else {
          this.values.set(values.subarray(at, at + room), slot);
          this.runOf.fill(run, slot, slot + room);
        }
        at += room;
      }
    }
  }

  private grow(capacity: number): void {
    let size = Math.max(16, this.values.length);
    while (size < capacity) size *= 2;
    this.relayout(Math.min(size, this.limit));
  }

  /** The newest `capacity` records kept, from slot 0, their runs renumbered from 0. */
  private relayout(capacity: number): void {
    const keep = Math.min(this.kept, capacity);
    const skip = this.kept - keep;
    this.dropped += skip;
    const old = this.values.length;
    const values = new BigUint64Array(capacity), runOf = new Uint32Array(capacity);
    // Every run index exists (an array without holes); those past the runs kept hold no run yet.
    const runQueues = new Array<OsHwQueue>(capacity).fill(undefined as unknown as OsHwQueue), runLocals = new Array<FenceReference>(capacity).fill(undefined as unknown as FenceReference);
    const runHandles = new Uint32Array(capacity), runOps = new Uint8Array(capacity), runTimes = new Float64Array(capacity);
    let runs = 0, lastOld = -1;
    for (let i = 0; i < keep; i++) {
      const slot = (this.start + skip + i) % old;
      const was = this.runOf[slot];
      // Consecutive slots of one run share its index (two live runs never do).
      if (i === 0 || was !== lastOld) {
        runQueues[runs] = this.runQueues[was];
        runLocals[runs] = this.runLocals[was];
        runHandles[runs] = this.runHandles[was];
        runOps[runs] = this.runOps[was];
        runTimes[runs] = this.runTimes[was];
        runs++;
        lastOld = was;
      }
      values[i] = this.values[slot];
      runOf[i] = runs - 1;
    }
    this.values = values; this.runOf = runOf;
    this.runQueues = runQueues; this.runLocals = runLocals; this.runHandles = runHandles; this.runOps = runOps; this.runTimes = runTimes;
    this.nextRun = runs % Math.max(1, capacity);
    this.start = 0;
    this.kept = keep;
  }

  list(): QueuedEvent[] {
    const out: QueuedEvent[] = [];
    const capacity = this.values.length;
    for (let i = 0; i < this.kept; i++) {
      const slot = (this.start + i) % capacity;
      const run = this.runOf[slot];
      const queue = this.runQueues[run], fence = this.runLocals[run], adapter = queue.device.adapter;
      out.push({
        adapter: adapter.name, adapterIndex: adapter.index, queue: queue.label, hHwQueue: queue.hHwQueue, kind: this.runOps[run] === OP_WAIT ? 'wait' : 'signal',
        hSyncObject: this.runHandles[run], fence: fenceLabel(fence), coreFence: typeof fence === 'number' ? fence : fence.global.coreFence,
        value: this.values[slot], cpuTimeNs: this.runTimes[run],
      });
    }
    return out;
  }

  /** A new limit; keeps the newest records that fit. */
  resize(limit: number): void {
    this.limit = limit;
    if (this.values.length > limit) this.relayout(limit);
  }
}
