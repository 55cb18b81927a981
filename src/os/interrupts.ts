// What the driver reports, handled (NF-09, INT-01..06, MF-06): the native
// fence signaled interrupt, the monitored fence signaled interrupt, the DMA
// page fault, and the model-only GPU progress reports.
//
//   native fence signaled ─▶ optimized (INT-05): the named queue's signal log (src/os/logs.ts), and with
//        │                   the doorbell the adapter's cross-adapter records (XA-07: in no log of it)
//        │                   list: the listed fences (a destroyed or foreign one: bug check, INT-03)
//        │                   no list: every native fence with waiters (a full scan, INT-01)
//        └─▶ satisfy ─▶ the NF-09 loop ─▶ INT-04 legacy scan ─▶ logs for the timeline ─▶ XA-04 propagation
//   monitored fence signaled ─▶ a scan of the monitored fences with pending waits (MF-06) ─▶ XA-05
//   DMA page faulted ─▶ device removal (a TDR)
//   GPU progress ─▶ the queue's picture (commands in its ring, the wait it blocks on) ─▶ fence
//        lifetime, GPU rewinds, VidMm's listeners, cross-adapter wake latency
//
// Each handled interrupt is counted once: it woke a waiter on its own adapter;
// or woke none but carried a cross-adapter signal on (a propagation
// interrupt, XA-04); or neither (spurious).

import type { DmaPageFaultedInterrupt, GpuProgressReport, GpuProgressStretch, GpuProgressStretchQuery, MonitoredFenceSignaledInterrupt, NativeFenceSignaledInterrupt } from '../ddi/ddi.js';
import type { Trace } from '../base/trace.js';
import { hex } from '../base/wddm.js';
import type { KernelContexts } from './contexts.js';
import type { CrossAdapterFences } from './cross-adapter.js';
import type { GpuRewinds } from './gpu-rewind.js';
import type { HwQueues } from './hw-queues.js';
import type { FenceLifetime } from './lifetime.js';
import type { NativeFenceLogs } from './logs.js';
import type { MonitoredFences } from './monitored.js';
import { keyAt, rowKeyCoreFence, rowOnAdapter, rowsOf, type FenceKey } from './fence-rows.js';
import { ROW_MONITORED } from './fence-store.js';
import { coreFenceOfGlobalHandle, type GlobalFence, type GpuProgress, type LocalFence, type OsAdapter, type OsContext, type OsHwQueue, type Process } from './objects.js';
import type { Resets } from './resets.js';
import type { OperationEnd, Waits } from './waits.js';

/** What a native fence interrupt does after its NF-09 loop (an OS operation's end when it runs in steps). */
export interface InterruptEnd extends OperationEnd {
  readonly owner: 'interrupts';
  readonly adapter: OsAdapter;
  readonly data: NativeFenceSignaledInterrupt;
  /** The fences the interrupt listed (a row by its key, src/os/fence-rows.ts); null for a full scan. */
  readonly fences: FenceKey[] | null;
  /** waitersWoken when it began. */
  readonly wokenBefore: number;
  /** An optimized interrupt served from the logs (INT-05): its end is the count and XA-04 only. */
  readonly fromLogs: boolean;
}

/** What interrupt handling uses of the rest of the OS (the OS wires it). */
export interface InterruptsEnvironment {
  readonly waits: Waits;
  readonly logs: NativeFenceLogs;
  readonly monitored: MonitoredFences;
  readonly crossAdapter: CrossAdapterFences;
  readonly contexts: KernelContexts;
  readonly hwQueues: HwQueues;
  readonly lifetime: FenceLifetime;
  readonly gpuRewinds: GpuRewinds;
  readonly resets: Resets;
  readonly trace: Trace;
}

export interface InterruptCounters {
  interruptsHandled: number;
  /** Interrupts that woke no waiter and carried no cross-adapter signal on: nothing for the OS to do. */
  spuriousInterrupts: number;
  /** Interrupts that woke no waiter on their own adapter but carried a cross-adapter signal to another adapter (XA-04). */
  propagationInterrupts: number;
  /** Fences the OS looked at on interrupts (lists and full scans). */
  fencesScanned: number;
  /** No-list interrupts. */
  fullScans: number;
  /** DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED interrupts handled (part of LegacyCounters). */
  monitoredFenceInterrupts: number;
}

export class Interrupts {
  readonly counters: InterruptCounters = {
    interruptsHandled: 0, spuriousInterrupts: 0, propagationInterrupts: 0, fencesScanned: 0, fullScans: 0, monitoredFenceInterrupts: 0,
  };
  /** Other listeners of GPU progress (VidMm's data movement), after the fence lifetime and GPU rewinds. */
  readonly progressListeners: ((progress: GpuProgress) => void)[] = [];
  /**
   * One per progress listener that can do without the quiet commands of a stretch: true when it needs
   * no report of a passed wait, work or a signal on `adapter` now (QueryGpuProgressStretch). A listener
   * without one turns stretches off.
   */
  readonly progressQuiet: ((adapter: OsAdapter) => boolean)[] = [];

  constructor(private readonly os: InterruptsEnvironment) {}

  // ── DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED (NF-09, INT-01..05) ──

  notifyInterrupt(adapter: OsAdapter, data: NativeFenceSignaledInterrupt): void {
    const os = this.os;
    const list = data.pSignaledNativeFenceArray;
    os.trace.record('interrupt', adapter.name, 'DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED', {
      InterruptType: data.InterruptType, NodeOrdinal: data.NodeOrdinal, EngineOrdinal: data.EngineOrdinal, SignaledNativeFenceCount: data.SignaledNativeFenceCount,
      pSignaledNativeFenceArray: list ? list : 'NULL', hHWQueue: data.hHWQueue, EvaluateLegacyMonitoredFences: data.Flags.EvaluateLegacyMonitoredFences,
    });
    if (adapter.state !== 'running') return;
    this.counters.interruptsHandled++;
    const before = os.waits.counters.waitersWoken;
    // INT-05: an optimized interrupt is served from the named queue's signal log (in steps: the read is the
    // operation's next step, and the count and XA-04 its end).
    const served = os.logs.onInterrupt(adapter, data);
    if (served === 'in-steps') {
      const end: InterruptEnd = { owner: 'interrupts', adapter, data, fences: null, wokenBefore: before, fromLogs: true };
      os.waits.run(os.waits.operationFor('optimized interrupt')!, new Set(), end);
      return;
    }
    if (served) {
      this.finishLogInterrupt(adapter, before);
      return;
    }
    // The fences by key (src/os/fence-rows.ts): no view is made.
    let fences: FenceKey[];
    if (list) {
      fences = [];
      for (const handle of list) {
        const coreFence = coreFenceOfGlobalHandle(adapter, handle);
        const fence = coreFence < 0 ? undefined : keyAt(adapter, coreFence);
        if (fence === undefined) {
          const what = adapter.destroyedGlobalHandles.has(handle) ? 'a destroyed native fence' : 'no native fence of this adapter';
          os.resets.bugCheckAdapter(adapter, 'NATIVE_FENCE_INTERRUPT_INVALID_HANDLE',
            `native fence signaled interrupt lists hGlobalNativeFence ${hex(handle)}, which is ${what} (INT-03)`);
          return;
        }
        fences.push(fence);
      }
    } else {
      this.counters.fullScans++;
      fences = [];
      const rows = rowsOf(adapter);
      for (const coreFence of adapter.withWaiters.ids()) { // in core id order
        const fence = keyAt(adapter, coreFence);
        if (fence !== undefined && (rows.bitsOf(coreFence) & ROW_MONITORED) === 0) fences.push(fence);
      }
      os.trace.record('os', 'dxgkrnl', 'no list: scanning every native fence waiter', { fences: fences.length });
    }
    // In steps (src/os/waits.ts): each satisfied waiter is retired by a step of its own, then the NF-09 loop's steps.
    const operation = os.waits.operationFor(`interrupt ${adapter.name}/engine${data.NodeOrdinal}`);
    const changed = new Set<FenceKey>();
    for (const fence of fences) {
      this.counters.fencesScanned++;
      os.waits.satisfy(fence, os.waits.currentValueOf(fence), changed, operation);
    }
    if (operation) {
      const end: InterruptEnd = { owner: 'interrupts', adapter, data, fences: list ? fences : null, wokenBefore: before, fromLogs: false };
      os.waits.run(operation, changed, end);
      return;
    }
    os.waits.refresh(changed);
    this.finishInterrupt(adapter, data, list ? fences : null, before);
  }

  /**
   * The rest of a native fence interrupt after its NF-09 loop: INT-04's legacy scan, the logs, XA-04, the count.
   * `fences`: those it listed (null: a full scan); `wokenBefore`: waitersWoken when it began.
   */
  finishInterrupt(adapter: OsAdapter, data: NativeFenceSignaledInterrupt, fences: FenceKey[] | null, wokenBefore: number): void {
    const os = this.os;
    // INT-04: only with EvaluateLegacyMonitoredFences does a no-list interrupt look at monitored fences too.
    const legacyReleased = !fences && data.Flags.EvaluateLegacyMonitoredFences ? os.monitored.legacyScan(adapter) : 0;
    os.logs.afterInterrupt(adapter);
    const propagated = this.propagate(adapter, fences); // XA-04
    this.countInterrupt(adapter, os.waits.counters.waitersWoken !== wokenBefore || legacyReleased > 0, propagated);
  }

  /** The rest of an optimized interrupt the logs served: the doorbell's records (XA-07), XA-04, the count. */
  finishLogInterrupt(adapter: OsAdapter, wokenBefore: number): void {
    this.os.crossAdapter.afterLogInterrupt(adapter); // XA-07: a doorbell's value is in no log of this adapter
    this.countInterrupt(adapter, this.os.waits.counters.waitersWoken !== wokenBefore, this.propagate(adapter, null)); // XA-04 too
  }

  /**
   * XA-04 after an interrupt: CrossAdapterFences.afterInterrupt, for the listed fences (null: every fence). Only a
   * member of a cross-adapter group propagates, and such a fence has its view from creation: with no group nothing
   * is asked (its every-fence walk would make every fence's view), and of a list only the fences with a view are
   * passed on (peek: none is made).
   */
  private propagate(adapter: OsAdapter, fences: FenceKey[] | null): number {
    const crossAdapter = this.os.crossAdapter;
    if (!crossAdapter.hasGroups) return 0;
    let views: GlobalFence[] | null = null;
    if (fences) {
      views = [];
      for (const key of fences) {
        const view = adapter.fences.peek(rowKeyCoreFence(key));
        if (view !== undefined) views.push(view);
      }
    }
    return crossAdapter.afterInterrupt(adapter, views);
  }

  /**
   * What a handled interrupt did, counted once: it woke a waiter on its own
   * adapter; or it woke none but carried a cross-adapter signal to another
   * adapter (`propagated` records, XA-04: a propagation interrupt, the
   * document's design for every GPU signal of a cross-adapter fence); or
   * neither (a spurious interrupt).
   */
  private countInterrupt(adapter: OsAdapter, woke: boolean, propagated: number): void {
    if (woke) return;
    if (propagated > 0) {
      this.counters.propagationInterrupts++;
      this.os.trace.record('os', 'dxgkrnl', 'propagation interrupt (woke no waiter here; carried a cross-adapter signal on)', { adapter: adapter.name, propagations: propagated });
    } else {
      this.counters.spuriousInterrupts++;
      this.os.trace.record('os', 'dxgkrnl', 'spurious interrupt (woke no waiter)', {});
    }
  }

  // ── DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED (MF-06, XA-05) ──

  /** Names no fence, so the OS scans them all. */
  onMonitoredFenceSignaled(adapter: OsAdapter, data: MonitoredFenceSignaledInterrupt): void {
    this.os.trace.record('interrupt', adapter.name, 'DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED', { NodeOrdinal: data.NodeOrdinal, EngineOrdinal: data.EngineOrdinal });
    if (adapter.state !== 'running') return;
    this.counters.monitoredFenceInterrupts++;
    const released = this.os.monitored.scan(adapter, 'monitored fence signaled interrupt');
    const propagated = this.os.crossAdapter.afterMonitoredInterrupt(adapter); // XA-05: GPU fence writes of cross-adapter monitored fences
    this.countInterrupt(adapter, released > 0, propagated);
  }

  // ── DXGK_INTERRUPT_DMA_PAGE_FAULTED ──

  /** A timeout detection and recovery: the devices are removed. */
  onDmaPageFaulted(adapter: OsAdapter, data: DmaPageFaultedInterrupt): void {
    this.os.trace.record('interrupt', adapter.name, 'DXGK_INTERRUPT_DMA_PAGE_FAULTED', { NodeOrdinal: data.NodeOrdinal, hQueue: data.hQueue, message: data.Message });
    if (adapter.state === 'running') this.os.resets.removeDevice(adapter, `GPU fault: ${data.Message}`);
  }

  // ── GPU progress (model-only) ──

  /**
   * QueryGpuProgressStretch: the GPU may report the queue's next quiet commands (passed waits, work,
   * signals that neither lower CurrentValue nor raise the interrupt) by count when nothing the OS does
   * per report would do more than count them: a hardware queue whose ring holds what the OS saw
   * submitted, no handle closing and no fence destroy-pending (their last reference has work to do),
   * no cross-adapter fence (wake latency), and every other progress listener quiet.
   */
  acceptsStretch(adapter: OsAdapter, query: GpuProgressStretchQuery): boolean {
    if (adapter.state !== 'running') return true; // reports are ignored anyway
    if (query.QueueKind !== 'HW_QUEUE') return false;
    const queue = this.os.hwQueues.byHandle(adapter, query.hQueue);
    if (!queue || queue.gpu.inRing !== query.CommandsInRing) return false;
    if (!this.os.lifetime.quietReleases() || this.os.crossAdapter.hasGroups) return false;
    if (this.progressQuiet.length !== this.progressListeners.length) return false;
    for (const quiet of this.progressQuiet) if (!quiet(adapter)) return false;
    return true;
  }

  /** NotifyGpuProgressStretch: the queue's oldest commands executed, each as a quiet NotifyGpuProgress would have said. */
  onGpuProgressStretch(adapter: OsAdapter, stretch: GpuProgressStretch): void {
    if (adapter.state !== 'running' || stretch.QueueKind !== 'HW_QUEUE') return;
    const queue = this.os.hwQueues.byHandle(adapter, stretch.hQueue);
    if (!queue) return;
    queue.gpu.inRing = Math.max(0, queue.gpu.inRing - stretch.Commands);
    this.os.lifetime.releaseExecuted(queue, stretch.FenceCommands);
  }

  /**
   * NotifyGpuProgress: what a queue or context executed. The OS keeps its picture of the queue
   * (commands in the ring, the wait it is blocked on), then tells its listeners: fence lifetime,
   * GPU rewinds, VidMm's data movement, cross-adapter wake latency.
   */
  onGpuProgress(adapter: OsAdapter, report: GpuProgressReport): void {
    if (adapter.state !== 'running') return;
    let queue: OsHwQueue | undefined, context: OsContext | undefined, process: Process | undefined;
    if (report.QueueKind === 'HW_QUEUE') {
      queue = this.os.hwQueues.byHandle(adapter, report.hQueue);
      process = queue?.device.process;
    } else {
      context = this.os.contexts.byDriverHandle(adapter, report.hQueue);
      process = context?.device.process;
    }
    let local: LocalFence | undefined, row: number | undefined;
    if (process && report.hSyncObject) {
      // A handle that names a row (src/os/fence-rows.ts) is reported by its core id, the objects not made: a GPU
      // signal's or a passed wait's report needs no more. A queue blocked on it (the OS's picture keeps the handle) and
      // a GPU rewind (traced with the fence's label) make them, as any lookup.
      const coreFence = rowOnAdapter(process.handles.rowToken(report.hSyncObject), adapter.index);
      const op = report.Operation;
      if (coreFence >= 0 && op !== 'WAIT_BLOCKED'
          && !(op === 'SIGNAL' && report.PreviousValue !== undefined && report.Value < report.PreviousValue)) {
        row = coreFence;
      } else {
        const object = process.handles.get(report.hSyncObject) ?? process.closing.get(report.hSyncObject);
        if (object?.kind === 'syncObject') local = object;
      }
    }
    if (queue) {
      const op = report.Operation;
      if (op === 'WAIT_BLOCKED') { if (local) queue.gpu.blocked = { local, value: report.Value }; }
      else {
        if (op === 'WAIT_UNBLOCKED') queue.gpu.blocked = undefined;
        if (queue.gpu.inRing > 0) queue.gpu.inRing--;
      }
    }
    const progress: GpuProgress = { adapter, report, queue, context, local, fence: local?.global, row };
    this.os.lifetime.onProgress(progress);
    this.os.gpuRewinds.observe(progress);
    for (const listener of this.progressListeners) listener(progress);
    this.os.crossAdapter.onProgress(progress);
  }
}
