// Monitored fences (WDDM 2.x, MF-01..03, MF-06, MF-07, INT-04): the OS side.
//
// A monitored fence is a core fence record of kind FENCE_KIND_MONITORED whose
// 64-bit value sits in a system-memory fence page (packed with the process's
// other fence values). It shares everything with native fences that works the
// same way: the OS's GlobalFence/LocalFence records and handles, the core's
// waiter records, heaps and wait blocks, Waits.satisfy/refresh (src/os/waits.ts), CPU
// waits (blocking, event, timeout, wait-all/any) and the CPU signal entry
// point. What differs is here:
//
//   • no MonitoredValue and no conditional interrupt: the OS never calls
//     UpdateMonitoredValues for it (Waits.refresh skips it), and no native
//     fence DDI is ever called for it;
//   • the OS learns of GPU progress only by looking: on every command buffer
//     completion (MF-06), on a monitored fence signaled interrupt (which names
//     no fence), and on a native no-list interrupt with
//     EvaluateLegacyMonitoredFences (INT-04) — each a *scan* of the fences
//     with pending waits (CPU waiters, or kernel-mode contexts held by a GPU
//     wait), counted in `counters`;
//   • on an adapter with No64BitAtomics the GPU writes only the low 32 bits;
//     the OS extends every value it reads from the last signalled value and
//     keeps outstanding waits/signals within UINT32_MAX/2 of it (MF-07).
//
//   value word (8-byte aligned, system memory)
//   ┌──────────────── high 32 ───────────────┬──────────── low 32 ────────────┐
//   │ written only by the kernel (CPU)       │ the GPU's 32-bit fence write   │
//   └────────────────────────────────────────┴────────────────────────────────┘
//   extended = last + signed32(low − low32(last))       (|difference| < 2^31)

import { u64 as asU64, type CoreLayout } from '../core/bindings.js';
import { WddmError, check } from '../base/errors.js';
import type { Trace } from '../base/trace.js';
import { MAX_OBJECTS_PER_CALL, SYNC_FLAG_BITS, hex } from '../base/wddm.js';
import * as v from '../base/validate.js';
import type { AddressSpaces } from './address-spaces.js';
import type { Handles } from './handles.js';
import {
  createFenceRow, GlobalFence, narrow, rejectRepeat,
  LocalFence, type OsAdapter, type OsContext, type OsDevice, type Process,
} from './objects.js';
import type { FenceKey } from './fence-store.js';
import { checkMonitoredSignal, checkMonitoredWait } from './monitored-window.js';
import type { Waits } from './waits.js';

export { extend32, observeMonitoredValue, narrow } from './objects.js';

/**
 * MF-07 with XA-02: a cross-adapter fence's value is one 64-bit word every adapter shares; the other adapters' GPUs
 * and CMPs write and compare it whole, and the OS could not tell their writes from a 32-bit one it should extend. So
 * a No64BitAtomics adapter neither creates nor opens one (as it has no native fences: docs/ARCHITECTURE.md).
 */
export function crossAdapterOnNarrow(adapter: OsAdapter, parameter: string, value: unknown): WddmError {
  return new WddmError('NOT_SUPPORTED', `adapter "${adapter.name}" has No64BitAtomics: its GPU writes 32 bits of a fence value, and a cross-adapter fence's CurrentValue is one 64-bit word other adapters write and compare whole (XA-02), so the OS could not extend it (MF-07); use a fence of this adapter alone, or an adapter with 64-bit atomics`,
    { parameter, value, expected: 'a cross-adapter fence on an adapter without No64BitAtomics' });
}

/** What monitored fences need from the modules above them (the OS wires them). */
export interface MonitoredHooks {
  /** A cross-adapter monitored fence joins its group (XA-05, src/os/cross-adapter.ts). */
  attachCrossAdapter(fence: GlobalFence): void;
  /** Values the kernel wrote reach the fence's other adapters (XA-04). */
  afterCpuSignal(fences: GlobalFence[]): void;
  /** Contexts (src/os/contexts.ts): fences their held GPU waits wait for, waking them, and who names a fence. */
  heldOn(adapter: OsAdapter): GlobalFence[];
  wakeContexts(fences: GlobalFence[]): void;
  packetsUsing(fence: GlobalFence): OsContext[];
  /** Held GPU waits the contexts released so far (counted by src/os/contexts.ts). */
  heldWaitsReleased(): number;
}

/** What the monitored fence scans count (part of LegacyCounters). */
export interface ScanCounters {
  scans: number;
  legacyScans: number;
  fencesExamined: number;
}

/** What the legacy (monitored fence + kernel-mode context) model costs, counted. */
export interface LegacyCounters {
  /** DXGK_INTERRUPT_DMA_COMPLETED interrupts handled (one per command buffer). */
  dmaCompletedInterrupts: number;
  /** DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED interrupts handled. */
  monitoredFenceInterrupts: number;
  /** Scans of the fences with pending waits (MF-06 completions, monitored interrupts, INT-04). */
  scans: number;
  /** Of which: on a native no-list interrupt with EvaluateLegacyMonitoredFences (INT-04). */
  legacyScans: number;
  /** Monitored fences read during those scans. */
  fencesExamined: number;
  /** GPU waits (WaitForSynchronizationObjectFromGpu) that held a context's later work. */
  gpuWaitsHeld: number;
  /** Held GPU waits the OS released after seeing the value: each one a CPU round trip that held GPU work. */
  heldWaitsReleased: number;
  /** Software signal packets the OS executed (SignalSynchronizationObjectFromGpu). */
  softwareSignals: number;
  /** Command buffers submitted to the engines through the OS. */
  commandBuffers: number;
}

export interface MonitoredFenceCreated {
  hSyncObject: number;
  /** Read-only user-mode mapping of the 64-bit value. */
  FenceValueCPUVirtualAddress: bigint;
  /** Read/write GPU VA of the value in the process's GPU address space, 8-byte aligned. */
  FenceValueGPUVirtualAddress: bigint;
}

const UNSHAREABLE = (1 << SYNC_FLAG_BITS.shared) | (1 << SYNC_FLAG_BITS.ntSecuritySharing) | (1 << SYNC_FLAG_BITS.crossAdapter);

export class MonitoredFences {
  readonly counters: ScanCounters = { scans: 0, legacyScans: 0, fencesExamined: 0 };

  constructor(
    private readonly handles: Handles,
    private readonly addressSpaces: AddressSpaces,
    private readonly waits: Waits,
    private readonly trace: Trace,
    private readonly layout: CoreLayout,
    private readonly hooks: MonitoredHooks,
  ) {}

  // ── MF-01: creation ──

  /** D3DKMTCreateSynchronizationObject2 with type MONITORED_FENCE. */
  create(process: Process, args: unknown): MonitoredFenceCreated {
    const a = v.options(args, 'createSynchronizationObject(args)', ['hDevice', 'type', 'initialValue', 'flags', 'engineAffinity', 'name']);
    const device = this.handles.requireDevice(process, a.hDevice, 'hDevice');
    v.oneOf(a.type, 'type', ['MONITORED_FENCE'] as const);
    const initialValue = v.u64(a.initialValue ?? 0n, 'initialValue');
    const flags = this.handles.syncFlags(a.flags, 'flags');
    if (a.engineAffinity !== undefined) v.integer(a.engineAffinity, 'engineAffinity', 0, 0xffff_ffff);
    const crossAdapter = (flags & (1 << SYNC_FLAG_BITS.crossAdapter)) !== 0; // XA-05: opens as a native fence elsewhere
    if ((flags & UNSHAREABLE) && !crossAdapter) {
      throw new WddmError('NOT_SUPPORTED', 'createSynchronizationObject: shared and cross-adapter monitored fences are not modelled; create the monitored fence without flags.shared, flags.ntSecuritySharing and flags.crossAdapter',
        { parameter: 'flags', value: a.flags, expected: 'flags without shared, ntSecuritySharing, crossAdapter' });
    }
    if (crossAdapter && narrow(device.adapter)) throw crossAdapterOnNarrow(device.adapter, 'flags', a.flags);
    const name = a.name === undefined ? undefined : String(a.name);
    return this.createOn(process, device, flags, initialValue, name);
  }

  createOn(process: Process, device: OsDevice, flags: number, initialValue: bigint, name?: string): MonitoredFenceCreated {
    const adapter = device.adapter;
    const L = this.layout;
    this.trace.record('runtime', process.name, 'D3DKMTCreateSynchronizationObject2', {
      hDevice: device.handle, Type: 'D3DDDI_MONITORED_FENCE', InitialFenceValue: initialValue, Flags: flags, name,
    });
    const shareable = (flags & (1 << SYNC_FLAG_BITS.crossAdapter)) !== 0; // cross-adapter (XA-05): a page of its own
    const coreFence = check(adapter.core.fenceCreate(process.slot, L.fenceKindMonitored, L.memorySystem, shareable ? 1 : 0, flags, initialValue, 0),
      `createSynchronizationObject (monitored fence) on "${adapter.name}"`);
    const cvPhys = adapter.core.fenceCurrentValueAddress(coreFence);
    let gpuVa: bigint;
    try {
      gpuVa = this.addressSpaces.mapGpu(process, adapter, cvPhys, 'read-write'); // MF-01: read/write for the GPU
    } catch (error) {
      adapter.core.fenceDestroy(coreFence);
      throw error;
    }
    const label = name ?? `monitored${coreFence}`;
    createFenceRow(adapter, coreFence, { kind: 'monitored', type: 'DEFAULT', flags, shareable, cvPhys, monitoredValue: false, systemPages: undefined, name: label, hGlobal: 0, device: undefined });
    const global = new GlobalFence(adapter, coreFence);
    if (shareable) this.hooks.attachCrossAdapter(global);
    const cpuVa = process.mapUser(cvPhys);
    const local = new LocalFence(process, process.allocHandle(), global, device, 0);
    global.locals.add(local);
    adapter.fences.set(coreFence, global);
    process.handles.set(local.handle, local);
    this.trace.record('os', 'dxgkrnl', 'monitored fence created', {
      fence: label, hSyncObject: local.handle, memory: 'system', FenceValuePhys: cvPhys,
      FenceValueCPUVirtualAddress: cpuVa, FenceValueGPUVirtualAddress: gpuVa, No64BitAtomics: narrow(adapter),
    });
    return { hSyncObject: local.handle, FenceValueCPUVirtualAddress: cpuVa, FenceValueGPUVirtualAddress: gpuVa };
  }

  /** D3DKMTDestroySynchronizationObject of a monitored fence (NativeFences.closeLocal dispatches here). No DDI. */
  close(local: LocalFence): void {
    const { process, global } = local;
    const adapter = global.adapter;
    const users = this.hooks.packetsUsing(global);
    if (users.length) {
      throw new WddmError('INVALID_DEVICE_STATE', `hSyncObject ${hex(local.handle)} (${global.label}) is still named by queued or running GPU work of context ${hex(users[0].handle)} (${users[0].label}): a GPU wait, a signal packet or a fence write; let it execute (machine.run) or destroy the context first`,
        { parameter: 'hSyncObject', value: local.handle, expected: 'a monitored fence no pending GPU work names' });
    }
    process.handles.delete(local.handle);
    process.retired.add(local.handle);
    global.locals.delete(local);
    this.waits.releaseWaitersOf(global, 'OBJECT_DESTROYED');
    global.destroyed = true;
    this.addressSpaces.unmapGpu(process, adapter, global.cvPhys);
    process.unmapUser(global.cvPhys);
    adapter.fences.delete(global.coreFence);
    adapter.withWaiters.delete(global);
    check(adapter.core.fenceDestroy(global.coreFence), 'destroying monitored fence storage');
    this.trace.record('os', 'dxgkrnl', 'monitored fence destroyed', { fence: global.label });
  }

  // ── MF-02: signals the kernel writes (CPU signal, software signal packets, device removal) ──

  /** Writes each value (a 64-bit kernel store), releases satisfied CPU waiters and held contexts at once. */
  cpuSignal(fences: GlobalFence[], values: bigint[]): void {
    const changed = new Set<FenceKey>();
    // No closure, and no message or trace arguments unless they are used (a CPU signal's path).
    for (let i = 0; i < fences.length; i++) {
      const fence = fences[i];
      if (fence.destroyed || fence.adapter.state !== 'running') continue;
      const core = fence.adapter.core;
      const written = core.cpuWriteCurrentValue(fence.coreFence, values[i]);
      if (written < 0) check(written, `writing monitored fence ${fence.label}`);
      core.fenceSetLastSignaled(fence.coreFence, values[i]);
      if (this.trace.enabled) this.trace.record('os', 'dxgkrnl', 'monitored fence value written', { fence: fence.label, value: values[i] });
      this.waits.satisfy(fence.key, fence.currentValue(), changed);
    }
    this.waits.refresh(changed);
    this.hooks.wakeContexts(fences);
    this.hooks.afterCpuSignal(fences); // XA-04/XA-05: a cross-adapter monitored fence tells the other adapters
  }

  // ── MF-06, INT-04: scans ──

  /** Monitored fences of `adapter` (of `process` only, when given) with CPU waiters or a context held on them. */
  pendingFences(adapter: OsAdapter, process?: Process): GlobalFence[] {
    const set = new Set<GlobalFence>();
    for (const fence of adapter.withWaiters.objects()) if (fence.kind === 'monitored') set.add(fence); // a row is a native fence
    for (const fence of this.hooks.heldOn(adapter)) set.add(fence);
    return [...set]
      .filter((f) => !f.destroyed && (!process || [...f.locals].some((l) => l.process === process)))
      .sort((x, y) => x.coreFence - y.coreFence);
  }

  /**
   * One scan: read the value of every monitored fence with pending waits,
   * release the CPU waiters and the contexts it satisfies. Returns the number
   * of CPU waiters woken plus contexts released.
   */
  scan(adapter: OsAdapter, reason: string, process?: Process): number {
    if (adapter.state !== 'running') return 0;
    const fences = this.pendingFences(adapter, process);
    this.counters.scans++;
    this.counters.fencesExamined += fences.length;
    const before = this.waits.counters.waitersWoken + this.hooks.heldWaitsReleased();
    const values = fences.map((fence) => fence.currentValue());
    this.trace.record('os', 'dxgkrnl', 'scan of monitored fences with pending waits', {
      reason, process: process?.name, fences: fences.map((f) => f.label), values,
    });
    if (narrow(adapter)) this.extendWritten(adapter, process);
    const changed = new Set<FenceKey>();
    fences.forEach((fence, i) => this.waits.satisfy(fence.key, values[i], changed));
    this.waits.refresh(changed);
    this.hooks.wakeContexts(fences);
    return this.waits.counters.waitersWoken + this.hooks.heldWaitsReleased() - before;
  }

  /**
   * MF-07 on a No64BitAtomics adapter, part of every scan: the kernel reads every monitored fence of the adapter
   * (of `process`, after its command buffer completed), waited on or not, so a 32-bit GPU write that crossed 2^32
   * is extended and written back for user-mode readers once the OS handled the interrupt after it. Every fence,
   * because the kernel cannot know which ones a command buffer wrote: the user-mode driver puts fence writes in
   * the command stream itself. The fences with pending waits were read by the scan already (reading again changes
   * nothing). Traced when a value was written back.
   */
  private extendWritten(adapter: OsAdapter, process: Process | undefined): void {
    let written: string[] | undefined;
    for (const fence of adapter.fences.values()) {
      if (fence.kind !== 'monitored' || fence.destroyed) continue;
      if (process && ![...fence.locals].some((l) => l.process === process)) continue;
      const raw = asU64(adapter.core.cpuReadCurrentValue(fence.coreFence));
      const value = fence.currentValue();
      if (value !== raw) (written ??= []).push(`${fence.label}=${value}`);
    }
    if (written) this.trace.record('os', 'dxgkrnl', 'No64BitAtomics: extended values written back', { reason: process ? `process ${process.name}` : 'adapter', fences: written });
  }

  /** INT-04: a native no-list interrupt with EvaluateLegacyMonitoredFences also scans monitored fence waiters. */
  legacyScan(adapter: OsAdapter): number {
    this.counters.legacyScans++;
    return this.scan(adapter, 'EvaluateLegacyMonitoredFences');
  }

  // ── shared argument checks for GPU waits and signals on contexts ──

  /** Resolves objects/values of a GPU wait or signal: monitored fences of `adapter`, values in the window. */
  resolveObjects(process: Process, a: Record<string, unknown>, adapter: OsAdapter, what: 'wait' | 'signal'): { fences: GlobalFence[]; values: bigint[] } {
    const objects = v.array(a.objects, 'objects', 1, MAX_OBJECTS_PER_CALL);
    const rawValues = v.array(a.values, 'values', objects.length, objects.length);
    const fences: GlobalFence[] = [];
    const values: bigint[] = [];
    objects.forEach((h, i) => {
      const local = this.handles.resolve(process, h, 'syncObject', `objects[${i}]`);
      const fence = local.global;
      rejectRepeat(fences, local, i, what);
      const value = v.u64(rawValues[i], `values[${i}]`);
      if (fence.kind !== 'monitored') {
        throw new WddmError('INVALID_PARAMETER', `objects[${i}] ${hex(local.handle)} (${fence.label}) is a native fence; kernel-mode contexts wait for and signal monitored fences (a native fence is waited for and signalled in a hardware queue)`,
          { parameter: `objects[${i}]`, value: local.handle, expected: 'a monitored fence' });
      }
      if (fence.adapter !== adapter) {
        throw new WddmError('INVALID_PARAMETER', `objects[${i}] ${hex(local.handle)} lives on adapter "${fence.adapter.name}", not on the context's "${adapter.name}"`,
          { parameter: `objects[${i}]`, value: local.handle, expected: `a monitored fence of "${adapter.name}"` });
      }
      if (what === 'wait' && fence.hasFlag('noWait')) {
        throw new WddmError('INVALID_PARAMETER', `objects[${i}] ${hex(local.handle)} was created with flags.noWait: it cannot be waited on`,
          { parameter: `objects[${i}]`, value: local.handle, expected: 'a fence created without flags.noWait' });
      }
      if (what === 'signal' && fence.hasFlag('noSignal')) {
        throw new WddmError('INVALID_PARAMETER', `objects[${i}] ${hex(local.handle)} was created with flags.noSignal: it cannot be signalled`,
          { parameter: `objects[${i}]`, value: local.handle, expected: 'a fence created without flags.noSignal' });
      }
      if (what === 'wait') checkMonitoredWait(fence, value, `values[${i}]`);
      else checkMonitoredSignal(fence, value, `values[${i}]`);
      fences.push(fence);
      values.push(value);
    });
    return { fences, values };
  }
}
