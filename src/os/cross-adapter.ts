// Cross-adapter fences (XA-01..05, XA-07): the OS side.
//
// A cross-adapter fence is one group of per-adapter fence records that share
// ONE CurrentValue word in system memory (XA-02): the adapter that creates it
// allocates the word; every adapter it is opened on gets its own record (its
// own driver handle, its own MonitoredValue, its own CPU waiter heap) whose
// CurrentValue address is that same word, mapped into each adapter's GPU VA.
//
//   group "F"                      system memory
//   ┌───────────────────────┐      ┌──────────────────────┐
//   │ dGPU record (creator) │──cv─▶│ CurrentValue (u64)   │◀─cv──┐
//   │   MonitoredValue = 0  │      └──────────────────────┘      │
//   ├───────────────────────┤                                    │
//   │ iGPU record (opened)  │────────────────────────────────────┘
//   │   MonitoredValue = 0  │
//   └───────────────────────┘
//
// Default design (the document's): every adapter's MonitoredValue is held at
// 0 for the fence's life (XA-03), so every GPU signal of it interrupts; the OS
// then propagates the signal to every other adapter of the group (XA-04):
// UpdateCurrentValuesFromCpu with NotificationOnly (the driver rescans its run
// list) and the CPU waiters of that adapter's record are satisfied. CPU
// signals propagate the same way.
//
// With the OS's operations in steps (src/os/waits.ts), each target adapter's part of
// a propagation (its NotificationOnly call or, XA-05, its scan, then its waiters)
// is a step of its own: the `notify` step of the operation that propagates.
//
// Mixed support (XA-05): on an adapter without native fences the record is a
// monitored fence (no MonitoredValue, no native DDI); signals reach it through
// that adapter's monitored fence waiting lists (a scan), and signals written
// on it (CPU, software signal packet, GPU fence write + its interrupt) are
// propagated like any other.
//
// Doorbell design (XA-07, machine option doorbell.enabled): MonitoredValue
// follows the ordinary NF-02 rule on every adapter; a GPU signal posts a
// doorbell record to the other adapters' rings instead (src/gpu/doorbell.ts;
// each driver tells its adapter's doorbell scheduler which local fence a word
// is), and the OS propagates only signals whose doorbell ring was full: the
// driver reports those (DxgkrnlCallbacks.NotifyDoorbellFallback).

import type { CoreLayout } from '../core/bindings.js';
import type { DoorbellFallback } from '../ddi/ddi.js';
import { WddmError, check } from '../base/errors.js';
import type { DriverPort } from '../port/driver-port.js';
import type { Scheduler } from '../base/scheduler.js';
import type { Trace } from '../base/trace.js';
import { hex, type NativeFenceTypeName } from '../base/wddm.js';
import type { AddressSpaces } from './address-spaces.js';
import { crossAdapterOnNarrow, type MonitoredFences } from './monitored.js';
import {
  createFenceRow, fenceByGlobalHandle, GlobalFence, narrow, requireRunning, updateCurrentValuesFromCpu,
  type GpuProgress, LocalFence, type OsAdapter, type OsContext, type OsDevice, type Process,
} from './objects.js';
import type { FenceKey } from './fence-store.js';
import type { OperationNotification, OsOperation, Waits } from './waits.js';

/** What cross-adapter fences use of the rest of the OS (the OS wires it). */
export interface CrossAdapterEnvironment {
  readonly adapters: readonly OsAdapter[];
  readonly addressSpaces: AddressSpaces;
  readonly waits: Waits;
  readonly monitored: MonitoredFences;
  readonly port: DriverPort;
  readonly scheduler: Scheduler;
  readonly trace: Trace;
  readonly layout: CoreLayout;
  /** Storage + DxgkDdiCreateNativeFence for another adapter's record of a group (src/os/fences.ts). */
  createGlobalOn(process: Process, device: OsDevice, type: NativeFenceTypeName, flags: number, initialValue: bigint,
                 privateData: Uint8Array, name: string | undefined, crossRoot: GlobalFence): GlobalFence;
  /** Contexts with queued or in-flight work naming the fence (src/os/contexts.ts). */
  packetsUsing(fence: GlobalFence): OsContext[];
}

export interface CrossAdapterGroup {
  id: number;
  label: string;
  /** The creator's record: it owns the CurrentValue word and is destroyed last. */
  root: GlobalFence;
  /** One record per adapter, by adapter index. */
  members: GlobalFence[];
  /** Signals seen (value, virtual time), for wake latency. */
  signals: { value: bigint; timeNs: number; adapter: number }[];
  /** The last value propagated (an interrupt that names no fence propagates only a value that differs from it: moved on, or back after a GPU rewind). */
  lastPropagated: bigint;
}

export interface CrossAdapterCounters {
  /** Signals the OS propagated to another adapter (one per fence and target adapter). */
  propagations: number;
  /** UpdateCurrentValuesFromCpu calls with NotificationOnly. */
  notificationOnlyCalls: number;
  /** Signals that fell back to the interrupt path because a doorbell ring was full (the records posted and taken are the GPU's: Machine.crossAdapterCounters). */
  doorbellFallbacks: number;
  /** Hardware queue waits on one adapter unblocked by a signal from another: count, sum and max of the delay. */
  crossWakes: number;
  crossWakeTotalNs: number;
  crossWakeMaxNs: number;
}

export class CrossAdapterFences {
  private readonly groups = new Map<GlobalFence, CrossAdapterGroup>();
  private readonly byCurrentValue = new Map<number, CrossAdapterGroup>();
  private nextGroup = 1;
  /** Fences whose doorbell post failed: the OS propagates them on the next interrupt. */
  private readonly fallbackPending = new Set<GlobalFence>();
  doorbellEnabled = false;
  /**
   * XA-03: a cross-adapter fence's MonitoredValue is held at 0 on every adapter. Always true but in the race
   * explorer's variant of an OS that lets it follow each record's own waiters (src/explore/variants.ts: it
   * shows what the hold guards against: a signal that interrupts nobody on its adapter is never propagated).
   */
  holdMonitoredValueAtZero = true;
  readonly counters: CrossAdapterCounters = {
    propagations: 0, notificationOnlyCalls: 0, doorbellFallbacks: 0,
    crossWakes: 0, crossWakeTotalNs: 0, crossWakeMaxNs: 0,
  };

  constructor(private readonly os: CrossAdapterEnvironment) {}

  groupOf(fence: GlobalFence): CrossAdapterGroup | undefined { return this.groups.get(fence); }
  /** Is `fence` a record of a cross-adapter group (no Map lookup while there is none, the common case)? */
  holds(fence: GlobalFence): boolean { return this.groups.size !== 0 && this.groups.has(fence); }
  groupByCurrentValue(cvPhys: number): CrossAdapterGroup | undefined { return this.byCurrentValue.get(cvPhys); }
  get groupCount(): number { return new Set(this.groups.values()).size; }
  /** Is any cross-adapter fence open (its GPU progress reports feed the wake latency)? */
  get hasGroups(): boolean { return this.groups.size > 0; }

  /** XA-03: in the default design the OS never moves a cross-adapter fence's MonitoredValue off 0. */
  holdsMonitoredValue(fence: GlobalFence): boolean {
    const group = this.groups.get(fence);
    if (!group || fence.kind !== 'native' || !this.holdMonitoredValueAtZero) return false;
    // With the doorbell, only groups with a monitored record (an adapter without native fences, XA-05) still need every signal.
    return !this.doorbellEnabled || this.hasMonitoredMember(group);
  }

  private hasMonitoredMember(group: CrossAdapterGroup): boolean { return group.members.some((m) => m.kind === 'monitored'); }

  /**
   * A new record joined (or started) a group: hold its MonitoredValue at 0
   * through the driver (default design). (The doorbell design needs nothing
   * here: the driver told its doorbell scheduler about the fence at create.)
   */
  attach(fence: GlobalFence, root?: GlobalFence): void {
    let group = root ? this.groups.get(root) : undefined;
    if (!group) {
      group = { id: this.nextGroup++, label: fence.label, root: fence, members: [], signals: [], lastPropagated: -1n };
      this.byCurrentValue.set(fence.cvPhys, group);
    }
    group.members.push(fence);
    group.members.sort((x, y) => x.adapter.index - y.adapter.index);
    this.groups.set(fence, group);
    this.os.trace.record('os', 'dxgkrnl', 'cross-adapter fence record', {
      fence: group.label, adapter: fence.adapter.name, CurrentValuePhys: fence.cvPhys, MonitoredValuePhys: fence.mvPhys,
      adapters: group.members.map((m) => m.adapter.name),
    });
    if (fence.kind === 'monitored') {
      // XA-05: no MonitoredValue, no native DDI on this adapter. With the doorbell on, the native records
      // of the group now need every signal to interrupt again (the monitored side has no doorbell).
      if (this.doorbellEnabled) for (const m of group.members) if (m.kind === 'native') this.holdAtZero(m, group);
      return;
    }
    if (this.holdsMonitoredValue(fence)) this.holdAtZero(fence, group);
  }

  private holdAtZero(fence: GlobalFence, group: CrossAdapterGroup): void {
    fence.monitoredValueHeld = true; // the NF-09 loop leaves it alone from now on (src/os/waits.ts)
    if (fence.monitoredValue === 0n) return;
    this.os.trace.record('os', 'dxgkrnl', 'cross-adapter: MonitoredValue held at 0 for the fence\'s life', { fence: group.label, adapter: fence.adapter.name });
    this.os.waits.updateMonitoredValues(fence.adapter, [fence.key], [0n]);
  }

  /**
   * Opening a fence from an NT handle with a device of another adapter: the
   * record of that adapter, created on first open (XA-02). Only cross-adapter
   * fences open elsewhere.
   */
  recordFor(process: Process, fence: GlobalFence, device: OsDevice, create = true): GlobalFence | undefined {
    const target = device.adapter;
    if (!fence.hasFlag('crossAdapter')) {
      throw new WddmError('INVALID_PARAMETER', `openNativeFenceFromNtHandle: the fence lives on adapter "${fence.adapter.name}" but hDevice is on "${target.name}"; only cross-adapter fences (flags.crossAdapter) open on another adapter`,
        { parameter: 'hDevice', value: device.handle, expected: `a device on "${fence.adapter.name}", or a fence created with flags.crossAdapter` });
    }
    const group = this.groups.get(fence);
    if (!group) throw new Error(`cross-adapter fence ${fence.label} has no group`);
    const existing = group.members.find((m) => m.adapter === target);
    if (existing) return existing;
    requireRunning(target, 'hDevice');
    if (narrow(target)) throw crossAdapterOnNarrow(target, 'hDevice', device.handle); // MF-07: no shared 64-bit word on a 32-bit GPU
    if (!create) return undefined;
    // XA-05: an adapter without native fences opens it as a monitored fence over the same word.
    if (!target.nativeFence) return this.createMonitoredRecord(process, device, group);
    return this.os.createGlobalOn(process, device, 'DEFAULT', group.root.flags, group.root.currentValue(), new Uint8Array(64),
      `${group.label}@${target.name}`, group.root);
  }

  // ── XA-05: monitored records of a cross-adapter fence ──

  /** The record of an adapter without native fences: a monitored fence over the group's word. No native DDI. */
  private createMonitoredRecord(process: Process, device: OsDevice, group: CrossAdapterGroup): GlobalFence {
    const adapter = device.adapter;
    const L = this.os.layout;
    const root = group.root;
    const coreFence = check(adapter.core.fenceCreate(process.slot, L.fenceKindMonitored, L.memorySystem, 1, root.flags, root.currentValue(), root.cvPhys),
      `opening ${group.label} on "${adapter.name}" as a monitored fence`);
    const label = `${group.label}@${adapter.name}`;
    createFenceRow(adapter, coreFence, { kind: 'monitored', type: 'DEFAULT', flags: root.flags, shareable: true, cvPhys: root.cvPhys, monitoredValue: false, systemPages: undefined, name: label, hGlobal: 0, device: undefined });
    const global = new GlobalFence(adapter, coreFence);
    adapter.fences.set(coreFence, global);
    this.os.trace.record('os', 'dxgkrnl', 'cross-adapter fence opened as a monitored fence (no native fence support)', { fence: group.label, adapter: adapter.name, FenceValuePhys: root.cvPhys });
    this.attach(global, root);
    return global;
  }

  /** A process handle to a monitored record (the monitored fence's mappings: read-only CPU, read/write GPU). */
  openMonitoredLocal(process: Process, device: OsDevice, global: GlobalFence): LocalFence {
    const cvGpuVa = this.os.addressSpaces.mapGpu(process, global.adapter, global.cvPhys, 'read-write');
    const cvCpuVa = process.mapUser(global.cvPhys);
    const local = new LocalFence(process, process.allocHandle(), global, device, 0);
    global.locals.add(local);
    process.handles.set(local.handle, local);
    this.os.trace.record('os', 'dxgkrnl', 'handle', { process: process.name, hSyncObject: local.handle, fence: global.label, kind: 'monitored', FenceValueGPUVirtualAddress: cvGpuVa, FenceValueCPUVirtualAddress: cvCpuVa });
    return local;
  }

  /** Closing a process handle to a monitored record of a cross-adapter fence. */
  closeMonitoredLocal(local: LocalFence, destroyNative: (f: GlobalFence) => void): void {
    const { process, global } = local;
    const users = this.os.packetsUsing(global);
    if (users.length) {
      throw new WddmError('INVALID_DEVICE_STATE', `hSyncObject ${hex(local.handle)} (${global.label}) is still named by queued or running GPU work of context ${hex(users[0].handle)} (${users[0].label}); let it execute (machine.run) or destroy the context first`,
        { parameter: 'hSyncObject', value: local.handle, expected: 'a fence no pending GPU work names' });
    }
    process.handles.delete(local.handle);
    process.retired.add(local.handle);
    global.locals.delete(local);
    this.os.addressSpaces.unmapGpu(process, global.adapter, global.cvPhys);
    process.unmapUser(global.cvPhys);
    this.releaseIfUnused(global, destroyNative);
  }

  private destroyMonitoredRecord(global: GlobalFence): void {
    const adapter = global.adapter;
    this.os.waits.releaseWaitersOf(global, 'OBJECT_DESTROYED');
    global.destroyed = true;
    adapter.fences.delete(global.coreFence);
    adapter.withWaiters.delete(global);
    check(adapter.core.fenceDestroy(global.coreFence), 'destroying monitored fence storage');
    this.os.trace.record('os', 'dxgkrnl', 'monitored fence destroyed', { fence: global.label });
  }

  /** Every record of the group is closed and no NT handle is left: destroy all, the word's owner last. */
  releaseIfUnused(fence: GlobalFence, destroy: (f: GlobalFence) => void): void {
    const group = this.groups.get(fence);
    if (!group) return;
    if (group.members.some((m) => m.locals.size > 0 || m.ntReferences > 0)) return;
    const order = [...group.members.filter((m) => m !== group.root), group.root];
    for (const member of order) {
      this.fallbackPending.delete(member);
      if (member.kind === 'monitored') this.destroyMonitoredRecord(member);
      else destroy(member);
      this.groups.delete(member);
    }
    this.byCurrentValue.delete(group.root.cvPhys);
  }

  /**
   * Called by the OS after it handled an interrupt of `adapter` for `fences`
   * (null list: every fence of the adapter). Returns the propagations it made
   * (records of other adapters told the new value).
   */
  afterInterrupt(adapter: OsAdapter, fences: GlobalFence[] | null): number {
    const before = this.counters.propagations;
    let candidates = fences ?? [...adapter.fences.values()].sort((x, y) => x.coreFence - y.coreFence)
      .filter((f) => this.groups.has(f) && f.currentValue() !== this.groups.get(f)!.lastPropagated); // moved either way (a GPU rewind too)
    candidates = candidates.filter((f) => this.groups.has(f));
    if (this.doorbellEnabled) {
      // Signals whose doorbell could not be posted (full ring) take the interrupt path to everybody;
      // adapters without native fences (monitored records, XA-05) have no doorbell and always do.
      const fallback = candidates.filter((f) => this.fallbackPending.delete(f));
      const monitoredOnly = candidates.filter((f) => !fallback.includes(f) && this.hasMonitoredMember(this.groups.get(f)!));
      if (fallback.length) this.propagate(adapter, fallback, 'GPU interrupt (doorbell ring full)');
      if (monitoredOnly.length) this.propagate(adapter, monitoredOnly, 'GPU interrupt', true);
      return this.counters.propagations - before;
    }
    if (candidates.length) this.propagate(adapter, candidates, 'GPU interrupt');
    return this.counters.propagations - before;
  }

  /**
   * XA-07 on an adapter whose interrupts are served from its logs (OptimizedNativeFenceSignaledInterrupt, INT-05):
   * a doorbell record's CMP check raises this adapter's interrupt for a value another adapter's GPU wrote, which is
   * in no log of this adapter, whatever queue the interrupt names. So after such an interrupt the OS also checks the
   * waiters of this adapter's cross-adapter records against their CurrentValue (the logs cover every other fence:
   * only a cross-adapter fence's word is written by another GPU), in core id order.
   */
  afterLogInterrupt(adapter: OsAdapter): void {
    if (!this.doorbellEnabled || this.groups.size === 0) return;
    const records: GlobalFence[] = [];
    for (const fence of this.groups.keys()) {
      if (fence.adapter === adapter && fence.kind === 'native' && !fence.destroyed && adapter.withWaiters.has(fence)) records.push(fence);
    }
    if (!records.length) return;
    records.sort((x, y) => x.coreFence - y.coreFence);
    const changed = new Set<FenceKey>();
    for (const fence of records) this.os.waits.satisfy(fence.key, fence.currentValue(), changed);
    this.os.waits.refresh(changed);
  }

  /**
   * XA-05: a monitored fence signaled interrupt on an adapter without native
   * fences names no fence; the cross-adapter monitored records of that adapter
   * whose value moved past what was last propagated are propagated now.
   * Returns the propagations it made.
   */
  afterMonitoredInterrupt(adapter: OsAdapter): number {
    const before = this.counters.propagations;
    const moved = [...adapter.fences.values()]
      .filter((f) => f.kind === 'monitored' && this.groups.has(f))
      .sort((x, y) => x.coreFence - y.coreFence)
      .filter((f) => { const g = this.groups.get(f)!; const last = g.signals[g.signals.length - 1]; return !last || f.currentValue() > last.value; });
    for (const fence of moved) this.noteSignal(fence, fence.currentValue());
    if (moved.length) this.propagate(adapter, moved, 'monitored fence signaled interrupt');
    return this.counters.propagations - before;
  }

  /** Called by the OS after a CPU signal wrote `fences` through their adapters' drivers. */
  afterCpuSignal(fences: GlobalFence[]): void {
    if (this.groups.size === 0) return; // no cross-adapter fence: nothing to propagate (the common case, no allocation)
    let cross: GlobalFence[] | undefined;
    for (let i = 0; i < fences.length; i++) if (this.groups.has(fences[i])) (cross ??= []).push(fences[i]);
    if (!cross) return;
    for (const fence of cross) this.noteSignal(fence, fence.currentValue());
    const byAdapter = new Map<OsAdapter, GlobalFence[]>();
    for (const f of cross) {
      let list = byAdapter.get(f.adapter);
      if (!list) byAdapter.set(f.adapter, (list = []));
      if (!list.includes(f)) list.push(f);
    }
    for (const adapter of [...byAdapter.keys()].sort((x, y) => x.index - y.index)) this.propagate(adapter, byAdapter.get(adapter)!, 'CPU signal');
  }

  /**
   * XA-04: tell every other adapter of each fence's group about the new
   * value. Batched: one NotificationOnly call per target adapter. With the
   * OS in steps, each target's call is a step of the operation in flight
   * (its `notify` steps, run by `notify` below).
   */
  propagate(from: OsAdapter, fences: GlobalFence[], cause: string, monitoredOnly = false): void {
    const operation = this.os.waits.operationFor(`propagate ${from.name}`);
    // The source adapter's own records first: the value may have been written by another adapter's GPU,
    // and once it counts as propagated no later interrupt carries it back here (an optimized interrupt
    // served from the logs never scans these records' waiters).
    const own = operation ? operation.changed : new Set<FenceKey>();
    for (const fence of fences) if (fence.kind === 'native' && !fence.destroyed && fence.adapter.state === 'running') this.os.waits.satisfy(fence.key, fence.currentValue(), own, operation);
    if (!operation) this.os.waits.refresh(own);
    const perTarget = new Map<OsAdapter, { records: GlobalFence[]; values: bigint[] }>();
    for (const fence of fences) {
      const group = this.groups.get(fence)!;
      const value = fence.currentValue();
      group.lastPropagated = value;
      for (const member of group.members) {
        if (member.adapter === from || member.destroyed || member.adapter.state !== 'running') continue;
        if (monitoredOnly && member.kind !== 'monitored') continue;
        this.counters.propagations++;
        this.os.trace.record('os', 'dxgkrnl', 'cross-adapter signal propagated', {
          fence: group.label, value, from: from.name, to: member.adapter.name, cause, hGlobalNativeFence: member.hGlobal,
        });
        let batch = perTarget.get(member.adapter);
        if (!batch) perTarget.set(member.adapter, (batch = { records: [], values: [] }));
        batch.records.push(member);
        batch.values.push(value);
      }
    }
    for (const target of [...perTarget.keys()].sort((x, y) => x.index - y.index)) {
      const { records, values } = perTarget.get(target)!;
      if (operation) operation.notifications.push({ target, records, values });
      else this.notifyTarget(target, records, values);
    }
    if (operation) this.os.waits.run(operation, new Set()); // the operation goes on (or, started here, begins)
  }

  /** A `notify` step of an OS operation in steps: one target adapter of a propagation. */
  notify(work: OperationNotification, operation: OsOperation): void {
    if (work.target.state !== 'running') return;
    this.notifyTarget(work.target, work.records.filter((r) => !r.destroyed), work.values.filter((_, i) => !work.records[i].destroyed), operation);
  }

  /** One target adapter learns of the new values: its NotificationOnly call (or its monitored scan, XA-05), then its waiters. */
  private notifyTarget(target: OsAdapter, batchRecords: GlobalFence[], batchValues: bigint[], operation?: OsOperation): void {
    if (!batchRecords.length) return;
    // XA-05: monitored records (one of an adapter without native fences, or a cross-adapter monitored fence's
    // own) go through the adapter's monitored fence waiting lists; the native records of the same batch, which
    // other groups may have on the same adapter, are told and satisfied as native (issue 27: a batch whose
    // first record was monitored left its native ones out).
    const monitored = batchRecords.filter((r) => r.kind === 'monitored');
    if (monitored.length) {
      this.os.trace.record('os', target.name, 'propagated signal received: observes the new fence value', { fences: monitored.map((r) => this.groups.get(r)!.label), values: monitored.map((r) => r.currentValue()) });
      this.os.monitored.scan(target, 'propagated cross-adapter signal');
    }
    if (monitored.length === batchRecords.length) return;
    const records = monitored.length ? batchRecords.filter((r) => r.kind === 'native') : batchRecords;
    const values = monitored.length ? batchValues.filter((_, i) => batchRecords[i].kind === 'native') : batchValues;
    this.os.trace.record('os', target.name, 'propagated signal received', { fences: records.map((r) => this.groups.get(r)!.label), values });
    if (target.nativeFence) {
      this.counters.notificationOnlyCalls++;
      updateCurrentValuesFromCpu(this.os.port, target, records, values, true);
    }
    const changed = operation ? operation.changed : new Set<FenceKey>();
    for (const record of records) this.os.waits.satisfy(record.key, record.currentValue(), changed, operation);
    if (!operation) this.os.waits.refresh(changed);
  }

  // ── doorbell (XA-07) and measurements ──

  /** NotifyDoorbellFallback: a signal's doorbell found a ring full; the fence is propagated after the interrupt. */
  onDoorbellFallback(adapter: OsAdapter, data: DoorbellFallback): void {
    if (adapter.state !== 'running') return;
    const fence = fenceByGlobalHandle(adapter, data.hGlobalNativeFence);
    this.counters.doorbellFallbacks++;
    this.os.trace.record('fault', adapter.name, 'doorbell ring full: falling back to the interrupt path', { fence: fence?.label ?? data.hGlobalNativeFence, fullRings: data.RingsFull });
    if (fence) this.fallbackPending.add(fence);
  }

  /** Every GPU progress report of every adapter (for wake latency). */
  onProgress(progress: GpuProgress): void {
    const { adapter, report, fence } = progress;
    if (!fence || fence.adapter !== adapter) return;
    const group = this.groups.get(fence);
    if (!group) return;
    if (report.Operation === 'SIGNAL') { this.noteSignal(fence, report.Value, report.GpuTimeNs); return; }
    if (report.Operation !== 'WAIT_UNBLOCKED') return;
    const cause = group.signals.find((s) => s.value >= report.Value);
    if (!cause || cause.adapter === adapter.index) return;
    const delay = report.GpuTimeNs - cause.timeNs;
    this.counters.crossWakes++;
    this.counters.crossWakeTotalNs += delay;
    this.counters.crossWakeMaxNs = Math.max(this.counters.crossWakeMaxNs, delay);
    this.os.trace.record('os', 'dxgkrnl', 'cross-adapter wake', { fence: group.label, value: report.Value, signalledBy: this.os.adapters[cause.adapter].name, woke: adapter.name, delayNs: delay });
  }

  private noteSignal(fence: GlobalFence, value: bigint, timeNs = this.os.scheduler.nowNs): void {
    const group = this.groups.get(fence)!;
    const last = group.signals[group.signals.length - 1];
    if (last && last.value >= value) return;
    group.signals.push({ value, timeNs, adapter: fence.adapter.index });
    if (group.signals.length > 4096) group.signals.splice(0, group.signals.length - 4096);
  }

  /** The summary's cross-adapter line; `doorbell`: the records the GPUs posted and took (the hardware counts them). */
  summaryLine(doorbell: { posted: number; taken: number }): string | undefined {
    if (!this.groups.size && !this.counters.propagations) return undefined;
    const c = this.counters;
    const mean = c.crossWakes ? (c.crossWakeTotalNs / c.crossWakes).toFixed(0) : '-';
    return `  cross-adapter (${this.doorbellEnabled ? 'doorbell' : 'interrupt + OS propagation'}): fences=${this.groupCount} propagations=${c.propagations} ` +
      `notificationOnly=${c.notificationOnlyCalls} doorbellPosted=${doorbell.posted} doorbellTaken=${doorbell.taken} doorbellFallbacks=${c.doorbellFallbacks} ` +
      `crossWakes=${c.crossWakes} wakeLatencyMeanNs=${mean} wakeLatencyMaxNs=${c.crossWakes ? c.crossWakeMaxNs : '-'}`;
  }
}

