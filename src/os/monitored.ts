// Monitored fences (WDDM 2.x, MF-01..03, MF-06, MF-07, INT-04): the OS side.
//
// A monitored fence is a core fence record of kind FENCE_KIND_MONITORED whose
// 64-bit value sits in a system-memory fence page (packed with the process's
// other fence values). It shares everything with native fences that works the
// same way: the OS's GlobalFence/LocalFence records and handles, the core's
// waiter heap and wait blocks, Dxgkrnl.satisfy/refresh/finishWaiter, CPU
// waits (blocking, event, timeout, wait-all/any) and the CPU signal entry
// point. What differs is here:
//
//   • no MonitoredValue and no conditional interrupt: the OS never calls
//     UpdateMonitoredValues for it (Dxgkrnl.refresh skips it), and no native
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

import { u64 as asU64 } from '../core.js';
import { WddmError, check } from '../errors.js';
import type { MonitoredFenceSignaledInterrupt } from '../driver/ddi.js';
import { MONITORED_FENCE_WINDOW, MAX_OBJECTS_PER_CALL, SYNC_FLAG_BITS, UINT64_MAX, VIDSCHCAPS, hex } from '../wddm.js';
import * as v from '../validate.js';
import { GlobalFence, rejectRepeat, type Dxgkrnl, type LocalFence, type OsAdapter, type OsDevice, type Process } from './dxgkrnl.js';

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

/** The 64-bit value a 32-bit write `low32` stands for, given the last signalled value (MF-07). */
export function extend32(low32: bigint, last: bigint): bigint {
  const difference = (low32 - (last & 0xffff_ffffn)) & 0xffff_ffffn;
  const signed = difference >= 0x8000_0000n ? difference - 0x1_0000_0000n : difference;
  return BigInt.asUintN(64, last + signed);
}

/** The OS's view of a monitored fence's value: raw on 64-bit adapters, extended on No64BitAtomics ones. */
export function observeMonitoredValue(fence: GlobalFence, raw: bigint): bigint {
  if (!narrow(fence.adapter)) return raw;
  const core = fence.adapter.core;
  const last = asU64(core.fenceLastSignaled(fence.coreFence));
  const value = extend32(raw & 0xffff_ffffn, last);
  if (value !== last) core.fenceSetLastSignaled(fence.coreFence, value);
  if (value !== raw) {
    // The kernel writes the high half back (64-bit CPU atomic), only if the GPU did not write meanwhile.
    const word = new BigUint64Array(fence.adapter.memory.buffer, fence.cvPhys, 1);
    Atomics.compareExchange(word, 0, raw, value);
  }
  return value;
}

/** Does the adapter's GPU write only 32 bits atomically (DXGK_VIDSCHCAPS::No64BitAtomics)? */
export function narrow(adapter: OsAdapter): boolean {
  return (adapter.caps.VidSchCaps & VIDSCHCAPS.No64BitAtomics) !== 0;
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
  readonly counters: LegacyCounters = {
    dmaCompletedInterrupts: 0, monitoredFenceInterrupts: 0, scans: 0, legacyScans: 0, fencesExamined: 0,
    gpuWaitsHeld: 0, heldWaitsReleased: 0, softwareSignals: 0, commandBuffers: 0,
  };

  constructor(private readonly os: Dxgkrnl) {}

  // ── MF-01: creation ──

  /** D3DKMTCreateSynchronizationObject2 with type MONITORED_FENCE. */
  create(process: Process, args: unknown): MonitoredFenceCreated {
    const a = v.options(args, 'createSynchronizationObject(args)', ['hDevice', 'type', 'initialValue', 'flags', 'engineAffinity', 'name']);
    const device = this.os.requireDevice(process, a.hDevice, 'hDevice');
    v.oneOf(a.type, 'type', ['MONITORED_FENCE'] as const);
    const initialValue = v.u64(a.initialValue ?? 0n, 'initialValue');
    const flags = this.os.syncFlags(a.flags, 'flags');
    if (a.engineAffinity !== undefined) v.integer(a.engineAffinity, 'engineAffinity', 0, 0xffff_ffff);
    const crossAdapter = (flags & (1 << SYNC_FLAG_BITS.crossAdapter)) !== 0; // XA-05: opens as a native fence elsewhere
    if ((flags & UNSHAREABLE) && !crossAdapter) {
      throw new WddmError('NOT_SUPPORTED', 'createSynchronizationObject: shared and cross-adapter monitored fences are not modelled; create the monitored fence without flags.shared, flags.ntSecuritySharing and flags.crossAdapter',
        { parameter: 'flags', value: a.flags, expected: 'flags without shared, ntSecuritySharing, crossAdapter' });
    }
    const name = a.name === undefined ? undefined : String(a.name);
    return this.createOn(process, device, flags, initialValue, name);
  }

  createOn(process: Process, device: OsDevice, flags: number, initialValue: bigint, name?: string): MonitoredFenceCreated {
    const os = this.os;
    const adapter = device.adapter;
    const L = os.layout;
    os.trace.record('runtime', process.name, 'D3DKMTCreateSynchronizationObject2', {
      hDevice: device.handle, Type: 'D3DDDI_MONITORED_FENCE', InitialFenceValue: initialValue, Flags: flags, name,
    });
    const shareable = (flags & (1 << SYNC_FLAG_BITS.crossAdapter)) !== 0; // cross-adapter (XA-05): a page of its own
    const coreFence = check(adapter.core.fenceCreate(process.slot, L.fenceKindMonitored, L.memorySystem, shareable ? 1 : 0, flags, initialValue, 0),
      `createSynchronizationObject (monitored fence) on "${adapter.name}"`);
    const cvPhys = adapter.core.fenceCurrentValueAddress(coreFence);
    let gpuVa: bigint;
    try {
      gpuVa = os.mapGpu(process, adapter, cvPhys);
    } catch (error) {
      adapter.core.fenceDestroy(coreFence);
      throw error;
    }
    const label = name ?? `monitored${coreFence}`;
    const global = new GlobalFence(adapter, coreFence, 'DEFAULT', flags, shareable, cvPhys, 0, 0n, 0n, label);
    global.kind = 'monitored';
    if (shareable) os.crossAdapter.attach(global);
    const cpuVa = process.mapUser(cvPhys);
    const local: LocalFence = {
      kind: 'syncObject', process, handle: process.allocHandle(), global, device, hLocal: 0, cvGpuVa: gpuVa, mvGpuVa: 0n, cvCpuVa: cpuVa, gpuReferences: 0, closing: false, usedByGpu: false,
    };
    global.locals.add(local);
    adapter.fences.set(coreFence, global);
    process.handles.set(local.handle, local);
    os.trace.record('os', 'dxgkrnl', 'monitored fence created', {
      fence: label, hSyncObject: local.handle, memory: 'system', FenceValuePhys: cvPhys,
      FenceValueCPUVirtualAddress: cpuVa, FenceValueGPUVirtualAddress: gpuVa, No64BitAtomics: narrow(adapter),
    });
    return { hSyncObject: local.handle, FenceValueCPUVirtualAddress: cpuVa, FenceValueGPUVirtualAddress: gpuVa };
  }

  /** D3DKMTDestroySynchronizationObject of a monitored fence (Dxgkrnl.closeLocal dispatches here). No DDI. */
  close(local: LocalFence): void {
    const os = this.os;
    const { process, global } = local;
    const adapter = global.adapter;
    const users = os.contexts.packetsUsing(global);
    if (users.length) {
      throw new WddmError('INVALID_DEVICE_STATE', `hSyncObject ${hex(local.handle)} (${global.label}) is still named by queued or running GPU work of context ${hex(users[0].handle)} (${users[0].label}): a GPU wait, a signal packet or a fence write; let it execute (machine.run) or destroy the context first`,
        { parameter: 'hSyncObject', value: local.handle, expected: 'a monitored fence no pending GPU work names' });
    }
    process.handles.delete(local.handle);
    process.retired.add(local.handle);
    global.locals.delete(local);
    os.releaseWaitersOf(global, 'OBJECT_DESTROYED');
    global.destroyed = true;
    os.unmapGpu(process, adapter, global.cvPhys);
    process.unmapUser(global.cvPhys);
    adapter.fences.delete(global.coreFence);
    adapter.withWaiters.delete(global);
    check(adapter.core.fenceDestroy(global.coreFence), 'destroying monitored fence storage');
    os.trace.record('os', 'dxgkrnl', 'monitored fence destroyed', { fence: global.label });
  }

  // ── MF-07: the 32-bit window ──

  /** Rejects a wait more than UINT32_MAX/2 ahead of the last signalled value (No64BitAtomics adapters only). */
  checkWait(fence: GlobalFence, value: bigint, parameter: string): void {
    if (!narrow(fence.adapter)) return;
    const last = fence.currentValue();
    if (value > last && value - last > MONITORED_FENCE_WINDOW) throw this.windowError(fence, value, last, parameter, 'wait');
  }

  /** Rejects a signal more than UINT32_MAX/2 away (either way) from the last signalled value (No64BitAtomics adapters only). */
  checkSignal(fence: GlobalFence, value: bigint, parameter: string): void {
    if (!narrow(fence.adapter)) return;
    const last = fence.currentValue();
    const distance = value > last ? value - last : last - value;
    if (distance > MONITORED_FENCE_WINDOW) throw this.windowError(fence, value, last, parameter, 'signal');
  }

  private windowError(fence: GlobalFence, value: bigint, last: bigint, parameter: string, what: 'wait' | 'signal'): WddmError {
    const low = last > MONITORED_FENCE_WINDOW ? last - MONITORED_FENCE_WINDOW : 0n;
    const high = UINT64_MAX - last < MONITORED_FENCE_WINDOW ? UINT64_MAX : last + MONITORED_FENCE_WINDOW;
    const expected = what === 'wait' ? `at most ${high} (last signalled value ${last} + UINT32_MAX/2)` : `${low} … ${high} (last signalled value ${last} ± UINT32_MAX/2)`;
    return new WddmError('INVALID_PARAMETER',
      `${parameter} ${value} is ${value > last ? value - last : last - value} away from the last signalled value ${last} of monitored fence ${fence.label}: ` +
      `on adapter "${fence.adapter.name}" (No64BitAtomics) an outstanding ${what} must stay within UINT32_MAX/2 (${MONITORED_FENCE_WINDOW}) of the last signalled value (MF-07)`,
      { parameter, value, expected });
  }

  // ── MF-02: signals the kernel writes (CPU signal, software signal packets, device removal) ──

  /** Writes each value (a 64-bit kernel store), releases satisfied CPU waiters and held contexts at once. */
  cpuSignal(fences: GlobalFence[], values: bigint[]): void {
    const os = this.os;
    const changed = new Set<GlobalFence>();
    fences.forEach((fence, i) => {
      if (fence.destroyed || fence.adapter.state !== 'running') return;
      const core = fence.adapter.core;
      check(core.cpuWriteCurrentValue(fence.coreFence, values[i]), `writing monitored fence ${fence.label}`);
      core.fenceSetLastSignaled(fence.coreFence, values[i]);
      os.trace.record('os', 'dxgkrnl', 'monitored fence value written', { fence: fence.label, value: values[i] });
      os.satisfy(fence, fence.currentValue(), changed);
    });
    os.refresh(changed);
    os.contexts.wake(fences);
    os.crossAdapter.afterCpuSignal(fences); // XA-04/XA-05: a cross-adapter monitored fence tells the other adapters
  }

  // ── MF-06, INT-04: scans ──

  /** Monitored fences of `adapter` (of `process` only, when given) with CPU waiters or a context held on them. */
  pendingFences(adapter: OsAdapter, process?: Process): GlobalFence[] {
    const set = new Set<GlobalFence>();
    for (const fence of adapter.withWaiters) if (fence.kind === 'monitored') set.add(fence);
    for (const fence of this.os.contexts.heldOn(adapter)) set.add(fence);
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
    const os = this.os;
    if (adapter.state !== 'running') return 0;
    const fences = this.pendingFences(adapter, process);
    this.counters.scans++;
    this.counters.fencesExamined += fences.length;
    const before = os.counters.waitersWoken + this.counters.heldWaitsReleased;
    const values = fences.map((fence) => fence.currentValue());
    os.trace.record('os', 'dxgkrnl', 'scan of monitored fences with pending waits', {
      reason, process: process?.name, fences: fences.map((f) => f.label), values,
    });
    const changed = new Set<GlobalFence>();
    fences.forEach((fence, i) => os.satisfy(fence, values[i], changed));
    os.refresh(changed);
    os.contexts.wake(fences);
    return os.counters.waitersWoken + this.counters.heldWaitsReleased - before;
  }

  /** DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED: names no fence, so the OS scans them all. */
  onMonitoredFenceSignaled(adapter: OsAdapter, data: MonitoredFenceSignaledInterrupt): void {
    this.os.trace.record('interrupt', adapter.name, 'DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED', { NodeOrdinal: data.NodeOrdinal, EngineOrdinal: data.EngineOrdinal });
    if (adapter.state !== 'running') return;
    this.counters.monitoredFenceInterrupts++;
    const released = this.scan(adapter, 'monitored fence signaled interrupt');
    const propagated = this.os.crossAdapter.afterMonitoredInterrupt(adapter); // XA-05: GPU fence writes of cross-adapter monitored fences
    this.os.countInterrupt(adapter, released > 0, propagated);
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
      const local = this.os.resolve(process, h, 'syncObject', `objects[${i}]`);
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
      if (what === 'wait') this.checkWait(fence, value, `values[${i}]`);
      else this.checkSignal(fence, value, `values[${i}]`);
      fences.push(fence);
      values.push(value);
    });
    return { fences, values };
  }
}
