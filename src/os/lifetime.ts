// Native fence lifetime: what the OS knows is in flight on hardware queues,
// deferred close and destroy, and GPU waits that can never be satisfied.
//
// The rule (docs/ARCHITECTURE.md, "Fence storage lifetime"): a process's
// handle to a native fence closes at once, but the fence's storage, its GPU
// mappings in that process and the driver's Close (then Destroy) DDIs wait
// until no submitted, not yet executed GPU command names the fence through
// that handle. So a slot is never reused while the GPU may still write it.
//
//   submit ──▶ every wait / signal command is an in-flight reference of the
//              LocalFence it was written through (per queue, in ring order: columns,
//              QueueReferences in src/os/objects.ts — each command's value, the
//              handle and op per run — taken and released a run at a time)
//   GPU step (wait passed / unblocked, signal executed) ──▶ the queue's oldest
//              reference is released
//   queue destroyed, device removed (TDR), adapter bug-checked ──▶ every
//              reference of its queues is released (the work is dropped)
//
//   LocalFence:  open ──destroy call──▶ (references?) closing ──last released──▶ closed
//                                            │ no references                        │
//                                            └──────────────▶ closed ◀──────────────┘
//                closed = DxgkDdiCloseNativeFence + GPU unmaps; the last local of a
//                fence (or of every record of a cross-adapter fence) closed → Destroy.
//
//   GlobalFence: live ──no open handle left (only closing ones)──▶ destroy pending ──▶ destroyed
//                CPU waiters are released with OBJECT_DESTROYED when the last
//                open handle goes (nothing can wait or CPU-signal it any more);
//                GPU commands already in flight still execute against its storage.
//
// A hardware queue blocked on a destroy-pending fence can still be released
// by a GPU signal already in flight. When none is left that could reach the
// value it waits for, the wait can never be satisfied: the OS treats it as a
// GPU hang (trace "GPU wait can never be satisfied", counter orphanedWaits)
// and resets that adapter (device removal, NF-20), so nothing hangs silently.

import type { Scheduler, ScheduledEvent } from '../base/scheduler.js';
import type { Trace } from '../base/trace.js';
import { OP_SIGNAL, OP_WAIT, type FenceCommandList, type FenceReference, type GlobalFence, type GpuProgress, type InFlightCommand, type LocalFence, type OsAdapter, type OsHwQueue, type QueueReferences, type RowReferences } from './objects.js';
import type { Waits } from './waits.js';

export type { InFlightCommand, QueueReferences };

/** What fence lifetime needs from the modules above it (the OS wires them). */
export interface LifetimeHooks {
  /** DxgkDdiCloseNativeFence and the unmaps of a closed handle whose GPU references drained (src/os/fences.ts). */
  finishClose(local: LocalFence): void;
  /** Every record of the fence: one per adapter for a cross-adapter fence (src/os/cross-adapter.ts). */
  membersOf(fence: GlobalFence): GlobalFence[];
  /** Device removal (TDR, src/os/resets.ts) of an adapter whose queue waits for what nothing can signal. */
  resetAdapter(adapter: OsAdapter, reason: string): void;
}

export interface LifetimeCounters {
  /** Handles closed while GPU commands still named them. */
  deferredCloses: number;
  /** GPU waits on destroyed fences nothing could signal: adapter reset. */
  orphanedWaits: number;
}

export class FenceLifetime {
  readonly counters: LifetimeCounters = { deferredCloses: 0, orphanedWaits: 0 };
  /** Closing locals whose last reference was released during a GPU step: finished by one event at the same virtual time. */
  private readonly toFinish: LocalFence[] = [];
  /** Destroy-pending fences whose blocked waits must be looked at (one event at the same virtual time). */
  private readonly toCheck = new Set<GlobalFence>();
  private finishScheduled = false;
  /**
   * Locals closing and fences destroy-pending (their references' release has work to do), to answer
   * quietReleases() at once. A cache of what the objects' own flags say, emptied lazily: kept behind
   * functions, so a state digest that walks the OS's objects (the race explorer) does not see it.
   */
  private readonly lateReleases = lateReleaseCache();
  private checkScheduled = false;

  constructor(
    private readonly adapters: readonly OsAdapter[],
    private readonly waits: Waits,
    private readonly scheduler: Scheduler,
    private readonly trace: Trace,
    private readonly hooks: LifetimeHooks,
  ) {
    scheduler.register('dxgkrnl/lifetime', (event) => this.onEvent(event));
  }

  // ── bookkeeping ──

  /** The UMD wrote these commands to the queue's ring: each one holds its fence (counted a run of one handle and op at a time). */
  submitted(queue: OsHwQueue, commands: FenceCommandList): void {
    queue.references.pushAll(commands);
    const rows = queue.device.adapter.rowReferences;
    const { runLocals, runOps, runEnds } = commands;
    for (let r = 0, start = 0; r < commands.runCount; start = runEnds[r], r++) this.take(rows, runLocals[r], runOps[r], runEnds[r] - start);
  }

  /**
   * Commands of `queue` not yet executed that name fences, oldest first (records made from the columns on each call;
   * a row a command names is made into its objects here: a diagnostic's path, not the GPU's).
   */
  pending(queue: OsHwQueue): readonly InFlightCommand[] {
    const adapter = queue.device.adapter;
    return queue.references.toRecords(queue.references.head, (fence) => localOfReference(adapter, fence));
  }

  /** `count` commands `op` through `fence` were submitted (a row's are counted by its adapter's RowReferences). */
  private take(rows: RowReferences, fence: FenceReference, op: number, count: number): void {
    if (typeof fence === 'number') { rows.take(fence, op, count); return; }
    fence.gpuReferences += count;
    const global = fence.global;
    if (op === OP_WAIT) global.gpuWaitsInFlight += count;
    else global.gpuSignalsInFlight += count;
  }

  /** Releases `count` references `op` through `fence`; returns its LocalFence when they were the last ones of a closing handle. */
  private release(adapter: OsAdapter, fence: FenceReference, op: number, count: number): LocalFence | undefined {
    let local: LocalFence | undefined;
    if (typeof fence === 'number') {
      // A token handle's run: once its record is made (with the fence's view) the record counts, reading the same
      // state in the row (LocalFence.wasToken); before, the row's counts only.
      local = adapter.fences.peek(fence)?.tokenHandle();
      if (local === undefined) { adapter.rowReferences.release(fence, op, count); return undefined; }
    } else {
      local = fence;
    }
    local.gpuReferences -= count;
    const global = local.global;
    if (op === OP_WAIT) global.gpuWaitsInFlight -= count;
    else global.gpuSignalsInFlight -= count;
    if (global.destroyPending && op === OP_SIGNAL) this.toCheck.add(global);
    if (local.gpuReferences !== 0) return undefined;
    return local.closing ? local : undefined;
  }

  /** Releases the queue's commands [head, to), a run at a time; the closing locals they drained go to `finished`. */
  private releaseTo(queue: OsHwQueue, to: number, finished?: LocalFence[]): void {
    const refs = queue.references, adapter = queue.device.adapter;
    const { runLocals, runOps, runEnds } = refs;
    for (let r = refs.runHead, at = refs.head; at < to; r++) {
      const end = Math.min(runEnds[r], to);
      const drained = this.release(adapter, runLocals[r], runOps[r], end - at);
      if (drained !== undefined) finished?.push(drained);
      at = end;
    }
  }

  /** Every GPU progress report (NotifyGpuProgress): a wait or signal a hardware queue executed releases its reference. */
  onProgress(progress: GpuProgress): void {
    const { report, queue, local, row } = progress;
    const operation = report.Operation;
    if (operation === 'WAIT_BLOCKED') {
      const fence = local?.global;
      if (fence?.destroyPending) { this.toCheck.add(fence); this.scheduleCheck(); }
      return;
    }
    if (operation !== 'WAIT_PASSED' && operation !== 'WAIT_UNBLOCKED' && operation !== 'SIGNAL') return;
    if (!queue) return; // a kernel-mode context, or a queue the OS did not create
    const refs = queue.references, adapter = queue.device.adapter;
    const op = operation === 'SIGNAL' ? OP_SIGNAL : OP_WAIT;
    // The GPU executes a ring in order, so the step is normally the oldest reference.
    const { runLocals, runOps, runEnds, values, length } = refs;
    let at = refs.head, r = refs.runHead;
    for (; at < length; at++) {
      if (runEnds[r] <= at) r++;
      if (runOps[r] !== op || values[at] !== report.Value) continue;
      const fence = runLocals[r];
      // A token's core id: the report's handle is still that token, or resolved to the record the token was made into.
      if (fence === local || (typeof fence === 'number' && (fence === row || (local !== undefined && isTokenRecord(local, adapter, fence))))) break;
    }
    if (at === length) {
      // Only a command written to the ring behind the OS's back (a test driving the driver's UMD half) gets here.
      this.trace.record('fault', 'dxgkrnl', 'GPU executed a command the OS never saw submitted', {
        queue: queue.label, op: op === OP_SIGNAL ? 'signal' : 'wait', hSyncObject: report.hSyncObject, value: report.Value,
      });
      return;
    }
    const executed = runLocals[r];
    if (at !== refs.head) refs.remove(at);
    else refs.advance(1);
    const drained = this.release(adapter, executed, op, 1);
    if (drained !== undefined) { this.toFinish.push(drained); this.scheduleFinish(); }
    if (this.toCheck.size) this.scheduleCheck();
  }

  /**
   * Would releasing any reference now only count (no closing handle, no destroy-pending fence)? A GPU
   * stretch reported by count (NotifyGpuProgressStretch) needs it.
   */
  quietReleases(): boolean { return this.lateReleases.none(); }

  /** A stretch of the queue's commands executed (quietReleases() held): its `fenceCommands` oldest references are released. */
  releaseExecuted(queue: OsHwQueue, fenceCommands: number): void {
    const refs = queue.references;
    const end = refs.head + fenceCommands;
    if (end > refs.length) {
      this.trace.record('fault', 'dxgkrnl', 'GPU executed a command the OS never saw submitted', { queue: queue.label, commands: fenceCommands });
    }
    const last = Math.min(end, refs.length);
    this.releaseTo(queue, last);
    refs.advance(last - refs.head);
  }

  /** The queue is gone (destroyed, or its device reset): its commands will never execute. */
  queueGone(queue: OsHwQueue): void {
    const refs = queue.references;
    const finished: LocalFence[] = [];
    this.releaseTo(queue, refs.length, finished);
    refs.clear();
    for (const local of finished) this.finish(local);
    if (this.toCheck.size) this.scheduleCheck();
  }

  /** Device removal or bug check: every queue of the adapter dropped its work. */
  adapterReset(adapter: OsAdapter): void {
    for (const device of adapter.devices) for (const queue of device.queues) this.queueGone(queue);
  }

  // ── closing ──

  /**
   * A process closed its handle `local` (already out of its handle table).
   * Returns true when the close is deferred because GPU commands still name it.
   */
  deferClose(local: LocalFence): boolean {
    if (local.gpuReferences === 0) return false;
    local.closing = true;
    this.lateReleases.closing(local);
    this.counters.deferredCloses++;
    this.trace.record('os', 'dxgkrnl', 'handle closed; close deferred while GPU commands name it', {
      fence: local.global.label, process: local.process.name, hSyncObject: local.handle, gpuCommandsInFlight: local.gpuReferences,
    });
    return true;
  }

  private finish(local: LocalFence): void {
    if (!local.closing || local.gpuReferences !== 0) return;
    local.closing = false;
    this.trace.record('os', 'dxgkrnl', 'GPU references drained: deferred close', { fence: local.global.label, process: local.process.name });
    this.hooks.finishClose(local);
  }

  private scheduleFinish(): void {
    if (this.finishScheduled) return;
    this.finishScheduled = true;
    this.scheduler.after(0, 'dxgkrnl/lifetime', 'deferred-close', {}, 'deferred fence close');
  }

  /** Its scheduler events (src/base/scheduler.ts): 'deferred-close' finishes the closes whose GPU references drained; 'hang-check' looks for waits nothing can satisfy. */
  onEvent(event: ScheduledEvent): void {
    if (event.kind === 'deferred-close') {
      this.finishScheduled = false;
      for (const local of this.toFinish.splice(0)) this.finish(local);
    } else if (event.kind === 'hang-check') {
      this.checkScheduled = false;
      const fences = [...this.toCheck].sort((x, y) => x.adapter.index - y.adapter.index || x.coreFence - y.coreFence);
      this.toCheck.clear();
      for (const fence of fences) this.checkOrphanedWaits(fence);
    } else {
      throw new Error(`dxgkrnl/lifetime: no scheduler event of kind "${event.kind}"`);
    }
  }

  /** Is there still a handle (local or NT) that user mode can use, on any record of the fence? */
  reachable(fence: GlobalFence): boolean {
    const members = this.hooks.membersOf(fence);
    for (const m of members) {
      if (m.ntReferences > 0) return true;
      for (const l of m.locals) if (!l.closing) return true;
    }
    return false;
  }

  /**
   * The last open handle of `fence` (every record, for a cross-adapter fence)
   * was closed but GPU commands still name it: its CPU waiters are released
   * (OBJECT_DESTROYED) and its storage lives on until they drained.
   */
  markDestroyPending(fence: GlobalFence): void {
    const members = this.hooks.membersOf(fence);
    for (const m of members) {
      if (m.destroyPending || m.destroyed) continue;
      m.destroyPending = true;
      this.lateReleases.destroyPending(m);
      this.trace.record('os', 'dxgkrnl', 'fence destroy pending: storage kept while GPU commands name it', {
        fence: m.label, gpuWaitsInFlight: m.gpuWaitsInFlight, gpuSignalsInFlight: m.gpuSignalsInFlight,
      });
      this.waits.releaseWaitersOf(m, 'OBJECT_DESTROYED', true);
      this.toCheck.add(m);
    }
    this.scheduleCheck();
  }

  // ── waits that can never be satisfied ──

  private scheduleCheck(): void {
    if (this.checkScheduled || !this.toCheck.size) return;
    this.checkScheduled = true;
    this.scheduler.after(0, 'dxgkrnl/lifetime', 'hang-check', {}, 'GPU hang check: waits on destroyed fences');
  }

  /** Resets every adapter with a queue blocked on `fence` that no in-flight GPU signal can release. */
  private checkOrphanedWaits(fence: GlobalFence): void {
    if (!fence.destroyPending || fence.destroyed) return;
    const members = this.hooks.membersOf(fence);
    for (const member of members) {
      const adapter = member.adapter;
      if (member.kind !== 'native' || adapter.state !== 'running') continue;
      for (const device of [...adapter.devices]) {
        if (device.removed) continue;
        for (const queue of [...device.queues]) {
          const blocked = queue.gpu.blocked;
          if (!blocked || blocked.local.global !== member) continue;
          const value = blocked.value;
          const current = member.currentValue();
          if (current >= value || this.signalInFlight(member.cvPhys, value)) continue;
          this.counters.orphanedWaits++;
          const reason = `GPU hang: hardware queue ${queue.label} waits for ${member.label} >= ${value} (CurrentValue ${current}); the fence was destroyed and no GPU command in flight signals it`;
          this.trace.record('fault', adapter.name, 'GPU wait can never be satisfied', {
            queue: queue.label, fence: member.label, value, currentValue: current, outcome: 'reset (TDR)',
          });
          this.hooks.resetAdapter(adapter, reason);
          break;
        }
        if (device.removed) break;
      }
    }
  }

  /** Is a signal of the fence whose CurrentValue word is `word` to at least `value` queued on any hardware queue? */
  private signalInFlight(word: number, value: bigint): boolean {
    for (const adapter of this.adapters) {
      if (adapter.state !== 'running') continue;
      for (const device of adapter.devices) {
        if (device.removed) continue;
        for (const queue of device.queues) {
          const { runLocals, runOps, runEnds, values, head, runHead, length } = queue.references;
          for (let r = runHead, at = head; at < length; r++) {
            const end = runEnds[r];
            if (runOps[r] === OP_SIGNAL && cvPhysOfReference(adapter, runLocals[r]) === word) {
              for (; at < end; at++) if (values[at] >= value) return true;
            }
            at = end;
          }
        }
      }
    }
    return false;
  }
}

/** The CurrentValue word of the fence an in-flight command names (from its row: no object made). */
function cvPhysOfReference(adapter: OsAdapter, fence: FenceReference): number {
  return typeof fence === 'number' ? adapter.rows.cvPhysOf(fence) : fence.global.cvPhys;
}

/** The LocalFence an in-flight command names on `adapter`: a token's record is made from its row if it is not yet (a slow path). */
function localOfReference(adapter: OsAdapter, fence: FenceReference): LocalFence {
  if (typeof fence !== 'number') return fence;
  const local = adapter.fences.get(fence)?.tokenHandle();
  if (local === undefined) throw new Error(`internal: an in-flight command names fence${fence} of "${adapter.name}", which has neither a row nor its token handle's record`);
  return local;
}

/** Is `local` the record of the token handle of core fence `coreFence` of `adapter`? */
function isTokenRecord(local: LocalFence, adapter: OsAdapter, coreFence: number): boolean {
  return local.wasToken && local.global.coreFence === coreFence && local.global.adapter === adapter;
}

/** FenceLifetime.lateReleases: closing locals and destroy-pending fences, dropped once their flag is down. */
function lateReleaseCache(): { closing(local: LocalFence): void; destroyPending(fence: GlobalFence): void; none(): boolean } {
  const locals = new Set<LocalFence>();
  const fences = new Set<GlobalFence>();
  return Object.freeze({
    closing: (local: LocalFence) => { locals.add(local); },
    destroyPending: (fence: GlobalFence) => { fences.add(fence); },
    none: () => {
      if (locals.size) for (const local of locals) if (!local.closing) locals.delete(local);
      if (fences.size) for (const fence of fences) if (!fence.destroyPending) fences.delete(fence);
      return locals.size === 0 && fences.size === 0;
    },
  });
}
