// Native fences (NF-12..16): D3DKMTCreateNativeFence, sharing through NT
// handles, opening on another process or adapter, and closing and
// destroying, with the driver's Create / Open / Close / Destroy DDIs.
//
//   created ──Create + Open DDIs──▶ live ──last local handle closed, no NT handle──▶ Close + Destroy DDIs ──▶ gone
//                                    └── a handle closed while GPU commands name it: its Close waits (src/os/lifetime.ts)
//
// A cross-adapter fence is one record per adapter over one CurrentValue word
// (src/os/cross-adapter.ts makes the other adapters' records through
// createGlobalOn); a monitored fence's handles close in src/os/monitored.ts.

import { check, invalid, WddmError } from '../base/errors.js';
import type { CoreLayout } from '../core/bindings.js';
import type { DriverPort } from '../port/driver-port.js';
import type { Trace } from '../base/trace.js';
import * as v from '../base/validate.js';
import { KERNEL_VA_BASE, NATIVE_FENCE_TYPE, SYNC_FLAG_BITS, hex, type NativeFenceTypeName } from '../base/wddm.js';
import type { AddressSpaces } from './address-spaces.js';
import type { CrossAdapterFences } from './cross-adapter.js';
import type { Handles } from './handles.js';
import type { FenceLifetime } from './lifetime.js';
import type { NativeFenceLogs } from './logs.js';
import type { MonitoredFences } from './monitored.js';
import { FenceHandleRows, rowKeyAdapterIndex, rowKeyCoreFence, rowsOf } from './fence-rows.js';
import { LocalFence, createFenceRow, enterGlobalHandle, fenceView, mappingAt, mappingOf, pageVa, type GlobalFence, type NativeFenceMapping, type NtHandle, type OsAdapter, type OsDevice, type Process } from './objects.js';
import type { Waits } from './waits.js';

/** What native fences use of the rest of the OS (the OS wires it). */
export interface FencesEnvironment {
  readonly handles: Handles;
  readonly addressSpaces: AddressSpaces;
  readonly waits: Waits;
  readonly lifetime: FenceLifetime;
  readonly logs: NativeFenceLogs;
  readonly crossAdapter: CrossAdapterFences;
  readonly monitored: MonitoredFences;
  readonly port: DriverPort;
  readonly trace: Trace;
  readonly layout: CoreLayout;
  /** os.nativeFence: the OS enabled DXGK_FEATURE_NATIVE_FENCE. */
  readonly nativeFenceFeature: boolean;
  /** The OS's adapters by index (the handle tables' fence rows name them). */
  readonly adapters: readonly OsAdapter[];
}

export class NativeFences {
  /** What every process's handle table asks for a creator handle kept as a row (src/os/fence-rows.ts). */
  private readonly handleRows: FenceHandleRows;
  constructor(private readonly os: FencesEnvironment) {
    this.handleRows = new FenceHandleRows(os.adapters);
  }

  /**
   * The CPU VA of `hSyncObject`'s CurrentValue in `process`'s read-only mapping: what readFenceValue reads. A fence
   * kept as a row stays one (its VA is derived from its core id and the process's mapping of the page, as its
   * LocalFence's cvCpuVa would be); any other handle is resolved as before, with the same errors.
   */
  currentValueCpuVa(process: Process, hSyncObject: number): bigint {
    const token = typeof hSyncObject === 'number' ? process.handles.rowToken(hSyncObject) : 0;
    if (token !== 0) return pageVa(process.userMappings, this.os.adapters[rowKeyAdapterIndex(token)].core.fenceCurrentValueAddress(rowKeyCoreFence(token)));
    return (this.os.handles.resolve(process, hSyncObject, 'syncObject', 'hSyncObject') as LocalFence).cvCpuVa;
  }

  createNativeFence(process: Process, args: unknown): { hSyncObject: number; mapping: NativeFenceMapping } {
    const a = v.options(args, 'createNativeFence(args)', ['hDevice', 'initialValue', 'type', 'flags', 'engineAffinity', 'privateDriverData', 'name']);
    const device = this.os.handles.requireDevice(process, a.hDevice, 'hDevice');
    const adapter = device.adapter;
    const initialValue = v.u64(a.initialValue ?? 0n, 'initialValue');
    const type = a.type === undefined ? 'DEFAULT' : v.oneOf(a.type, 'type', ['DEFAULT', 'INTRA_GPU'] as const);
    const flags = this.os.handles.syncFlags(a.flags, 'flags');
    if (a.engineAffinity !== undefined) v.integer(a.engineAffinity, 'engineAffinity', 0, 0xffff_ffff);
    const name = a.name === undefined ? undefined : String(a.name);
    const privateData = a.privateDriverData === undefined ? new Uint8Array(64) : a.privateDriverData;
    if (!(privateData instanceof Uint8Array) || privateData.length > 64) throw invalid('privateDriverData', privateData, 'a Uint8Array of at most 64 bytes');
    if (!adapter.nativeFence) {
      throw new WddmError('NOT_SUPPORTED', `createNativeFence: adapter "${adapter.name}" does not support native fences (NativeGpuFence is not advertised${this.os.nativeFenceFeature ? '' : '; the OS feature is off'}); create a monitored fence instead`,
        { parameter: 'hDevice', value: device.handle, expected: 'a device on an adapter with NativeGpuFence' });
    }
    if ((flags & (1 << SYNC_FLAG_BITS.crossAdapter)) !== 0 && type !== 'DEFAULT') {
      throw new WddmError('INVALID_PARAMETER', `createNativeFence: a cross-adapter native fence must be of type DEFAULT, not ${type}`,
        { parameter: 'type', value: type, expected: 'DEFAULT for flags.crossAdapter' });
    }
    if (this.os.trace.enabled) {
      this.os.trace.record('runtime', process.name, 'D3DKMTCreateNativeFence', {
        hDevice: device.handle, InitialFenceValue: initialValue, Type: type, Flags: flags, name,
      });
    }
    return this.createNativeFenceOn(process, device, type, flags, initialValue, privateData, name);
  }

  /** Creation after validation; also used for queue progress fences. No name, not cross-adapter: kept as rows (src/os/fence-rows.ts). */
  createNativeFenceOn(process: Process, device: OsDevice, type: NativeFenceTypeName, flags: number, initialValue: bigint,
                      privateData: Uint8Array, name?: string): { hSyncObject: number; mapping: NativeFenceMapping } {
    const row = name === undefined && (flags & (1 << SYNC_FLAG_BITS.crossAdapter)) === 0;
    const global = this.createGlobal(process, device, type, flags, initialValue, privateData, name, undefined, row);
    const opened = this.open(process, device, global);
    if (typeof opened !== 'number') return { hSyncObject: opened.handle, mapping: mappingOf(opened) };
    const core = device.adapter.core, coreFence = global as number;
    return { hSyncObject: opened, mapping: mappingAt(process, device.adapter.index, core.fenceCurrentValueAddress(coreFence), core.fenceMonitoredValueAddress(coreFence)) };
  }

  /**
   * Storage + DxgkDdiCreateNativeFence on the device's adapter. `crossRoot`:
   * this is another adapter's record of that cross-adapter fence, sharing its
   * CurrentValue word (XA-02).
   */
  createGlobalOn(process: Process, device: OsDevice, type: NativeFenceTypeName, flags: number, initialValue: bigint,
                 privateData: Uint8Array, name?: string, crossRoot?: GlobalFence): GlobalFence {
    return this.createGlobal(process, device, type, flags, initialValue, privateData, name, crossRoot, false) as GlobalFence;
  }

  /** createGlobalOn; `row`: kept as a row, its core id returned (when it fits one). */
  private createGlobal(process: Process, device: OsDevice, type: NativeFenceTypeName, flags: number, initialValue: bigint,
                       privateData: Uint8Array, name: string | undefined, crossRoot: GlobalFence | undefined, row: boolean): GlobalFence | number {
    const adapter = device.adapter;
    const L = this.os.layout;
    const shareable = (flags & ((1 << SYNC_FLAG_BITS.shared) | (1 << SYNC_FLAG_BITS.ntSecuritySharing) | (1 << SYNC_FLAG_BITS.crossAdapter))) !== 0;
    const memoryKind = type === 'INTRA_GPU' ? L.memoryLocal : L.memorySystem;
    const coreFence = check(adapter.core.fenceCreate(process.slot, L.fenceKindNative, memoryKind, shareable ? 1 : 0, flags, initialValue, crossRoot?.cvPhys ?? 0),
      `createNativeFence on "${adapter.name}"`);
    const cvPhys = adapter.core.fenceCurrentValueAddress(coreFence);
    const mvPhys = adapter.core.fenceMonitoredValueAddress(coreFence);
    let systemCvVa = 0n, systemMvVa = 0n;
    const caps = adapter.caps.NativeFenceCaps;
    const system = this.os.handles.system;
    try {
      if (caps.MapToGpuSystemProcess) {
        systemCvVa = this.os.addressSpaces.mapGpu(system, adapter, cvPhys, 'read-write');
        systemMvVa = this.os.addressSpaces.mapGpu(system, adapter, mvPhys, 'read'); // NF-04: the GPU only reads MonitoredValue
      }
    } catch (error) {
      adapter.core.fenceDestroy(coreFence);
      throw error;
    }
    const systemPages = caps.MapToGpuSystemProcess ? system.gpuMappings.get(adapter.index) : undefined;
    // A fence whose creator handle can be a token gets no object now (src/os/fence-rows.ts): its row is all it is.
    const rows = rowsOf(adapter), token = row && rows.fits(coreFence, device);
    const kernelCvVa = KERNEL_VA_BASE + BigInt(cvPhys);
    if (this.os.trace.enabled) {
      this.os.trace.record('os', 'dxgkrnl', 'fence storage', {
        fence: name ?? `fence${coreFence}`, memory: type === 'INTRA_GPU' ? `local(${adapter.name})` : 'system', shareable,
        CurrentValuePhys: cvPhys, MonitoredValuePhys: mvPhys,
      });
    }
    const created = this.os.port.createNativeFence(adapter.index, {
      Type: NATIVE_FENCE_TYPE[type], CurrentValueSystemProcessGpuVa: systemCvVa, MonitoredValueSystemProcessGpuVa: systemMvVa,
      CurrentValueKernelCpuVa: kernelCvVa, MonitoredValueKernelCpuVa: KERNEL_VA_BASE + BigInt(mvPhys),
      InitialFenceValue: initialValue, PrivateDriverData: privateData,
    });
    if (!created) {
      adapter.kernelCurrentValueVas.set(coreFence, kernelCvVa);
      throw new WddmError('GRAPHICS_ADAPTER_STOPPED', `createNativeFence: the driver of "${adapter.name}" failed`);
    }
    enterGlobalHandle(adapter, created.hGlobalNativeFence, coreFence);
    createFenceRow(adapter, coreFence, {
      kind: 'native', type, flags, shareable, cvPhys, monitoredValue: true, systemPages, name, hGlobal: created.hGlobalNativeFence, device: token ? device : undefined,
    });
    if (token) return coreFence;
    const global = fenceView(adapter, coreFence);
    if ((flags & (1 << SYNC_FLAG_BITS.crossAdapter)) !== 0) this.os.crossAdapter.attach(global, crossRoot);
    return global;
  }

  /** DxgkDdiOpenNativeFence for one process: maps the values and makes its handle. */
  openLocal(process: Process, device: OsDevice, global: GlobalFence): LocalFence {
    return this.open(process, device, global) as LocalFence;
  }

  /** openLocal; a row's (core id) creator handle is a token, returned. Failing, the fence gets the view openLocal leaves. */
  private open(process: Process, device: OsDevice, fence: GlobalFence | number): LocalFence | number {
    const adapter = device.adapter, row = typeof fence === 'number', rows = rowsOf(adapter);
    const coreFence = row ? fence : fence.coreFence, cvPhys = rows.cvPhysOf(coreFence), mvPhys = rows.mvPhysOf(coreFence, coreFence);
    let cvCpuVa: bigint, handle: number, hLocal: number;
    try {
      const cvGpuVa = this.os.addressSpaces.mapGpu(process, adapter, cvPhys, 'read-write');
      const mvGpuVa = this.os.addressSpaces.mapGpu(process, adapter, mvPhys, 'read'); // NF-04
      cvCpuVa = process.mapUser(cvPhys);
      const opened = this.os.port.openNativeFence(adapter.index, { hGlobalNativeFence: rows.globalHandleOf(coreFence), hDevice: device.handle, CurrentValueGpuVa: cvGpuVa, MonitoredValueGpuVa: mvGpuVa });
      if (!opened) throw new WddmError('GRAPHICS_ADAPTER_STOPPED', `openNativeFence: the driver of "${adapter.name}" failed`);
      hLocal = opened.hLocalNativeFence;
      handle = process.allocHandle();
    } catch (error) {
      if (row) adapter.fences.get(fence);
      throw error;
    }
    let local: LocalFence | undefined;
    // A local handle the row cannot derive from its global one: the fence gets its view, and the handle a record.
    const target = row && !rows.holdsLocal(fence, hLocal) ? adapter.fences.get(fence)! : fence;
    if (typeof target === 'number') {
      rows.setHandle(target, handle);
      process.handles.deferred ??= this.handleRows;
      process.handles.defer(handle, rows.token(target));
    } else {
      local = new LocalFence(process, handle, target, device, hLocal);
      target.locals.add(local);
      process.handles.set(handle, local);
    }
    if (this.os.trace.enabled) this.os.trace.record('os', 'dxgkrnl', 'handle', { process: process.name, hSyncObject: handle, fence: local?.global.label ?? `fence${fence}`, CurrentValueCpuVa: cvCpuVa });
    return local ?? handle;
  }

  /** D3DKMTShareObjects: an NT handle for a shareable fence. */
  shareObject(process: Process, hSyncObject: unknown): number {
    const local = this.os.handles.resolve(process, hSyncObject, 'syncObject', 'hSyncObject');
    if (!local.global.shareable) {
      throw new WddmError('INVALID_PARAMETER', `shareObject: sync object ${hex(local.handle)} was created without flags.shared / flags.ntSecuritySharing, so it has no NT handle`,
        { parameter: 'hSyncObject', value: local.handle, expected: 'a fence created with flags.shared or flags.ntSecuritySharing' });
    }
    const nt: NtHandle = { kind: 'nt', handle: process.allocNtHandle(), global: local.global };
    local.global.ntReferences++;
    process.ntHandles.set(nt.handle, nt);
    this.os.trace.record('runtime', process.name, 'D3DKMTShareObjects', { hSyncObject: local.handle, hNtHandle: nt.handle });
    return nt.handle;
  }

  /** DuplicateHandle of an NT handle into another process. */
  duplicateNtHandle(process: Process, hNtHandle: unknown, target: Process): number {
    const nt = this.os.handles.resolveNt(process, hNtHandle, 'hNtHandle');
    if (!this.os.handles.owns(target)) throw invalid('target', target, 'a process of the same machine');
    const copy: NtHandle = { kind: 'nt', handle: target.allocNtHandle(), global: nt.global };
    nt.global.ntReferences++;
    target.ntHandles.set(copy.handle, copy);
    this.os.trace.record('runtime', process.name, 'DuplicateHandle', { hNtHandle: nt.handle, targetProcess: target.name, hTargetNtHandle: copy.handle });
    return copy.handle;
  }

  closeNtHandle(process: Process, hNtHandle: unknown): void {
    const nt = this.os.handles.resolveNt(process, hNtHandle, 'hNtHandle');
    process.ntHandles.delete(nt.handle);
    process.retired.add(nt.handle);
    nt.global.ntReferences--;
    this.os.trace.record('runtime', process.name, 'CloseHandle', { hNtHandle: nt.handle });
    this.maybeDestroyGlobal(nt.global);
  }

  /** D3DKMTOpenNativeFenceFromNTHandle. */
  openNativeFenceFromNtHandle(process: Process, args: unknown): { hSyncObject: number; mapping: NativeFenceMapping } {
    const a = v.options(args, 'openNativeFenceFromNtHandle(args)', ['hNtHandle', 'hDevice', 'engineAffinity', 'flags']);
    const nt = this.os.handles.resolveNt(process, a.hNtHandle, 'hNtHandle');
    const device = this.os.handles.requireDevice(process, a.hDevice, 'hDevice');
    if (a.flags !== undefined) this.os.handles.syncFlags(a.flags, 'flags');
    if (nt.global.destroyed) throw new WddmError('INVALID_HANDLE', `hNtHandle ${hex(nt.handle)} refers to a destroyed fence`);
    // Another adapter: only cross-adapter fences, through that adapter's own record (XA-02).
    if (device.adapter !== nt.global.adapter) this.os.crossAdapter.recordFor(process, nt.global, device, false); // validates only
    this.os.trace.record('runtime', process.name, 'D3DKMTOpenNativeFenceFromNTHandle', { hNtHandle: nt.handle, hDevice: device.handle });
    const global = device.adapter === nt.global.adapter ? nt.global : this.os.crossAdapter.recordFor(process, nt.global, device)!;
    const local = global.kind === 'monitored' ? this.os.crossAdapter.openMonitoredLocal(process, device, global) : this.openLocal(process, device, global);
    return { hSyncObject: local.handle, mapping: mappingOf(local) };
  }

  /** D3DKMTDestroySynchronizationObject: closes this process's local handle; the last one out destroys (NF-15). */
  destroySynchronizationObject(process: Process, hSyncObject: unknown): void {
    const local = this.os.handles.resolve(process, hSyncObject, 'syncObject', 'hSyncObject');
    for (const queue of local.device.queues) {
      if (queue.progress === local) {
        throw new WddmError('INVALID_PARAMETER', `hSyncObject ${hex(local.handle)} is the progress fence of hardware queue ${hex(queue.handle)}; destroy the queue instead`,
          { parameter: 'hSyncObject', value: local.handle, expected: 'a fence that is not a queue progress fence' });
      }
    }
    this.os.trace.record('runtime', process.name, 'D3DKMTDestroySynchronizationObject', { hSyncObject: local.handle });
    this.closeLocal(local);
  }

  closeLocal(local: LocalFence): void {
    if (local.global.kind === 'monitored') {
      if (this.os.crossAdapter.groupOf(local.global)) this.os.crossAdapter.closeMonitoredLocal(local, (f) => this.destroyGlobalNow(f)); // XA-05
      else this.os.monitored.close(local);
      return;
    }
    const { process, global } = local;
    // The handle is gone at once; what the GPU may still use (mappings, the driver's local) waits (src/os/lifetime.ts).
    process.handles.delete(local.handle);
    process.retired.add(local.handle);
    process.closing.set(local.handle, local);
    process.unmapUser(global.cvPhys);
    if (this.os.lifetime.deferClose(local)) {
      if (!this.os.lifetime.reachable(global)) this.os.lifetime.markDestroyPending(global);
      return;
    }
    this.finishClose(local);
  }

  /** DxgkDdiCloseNativeFence and the GPU unmaps of a closed handle; the last one out destroys the fence (NF-15). */
  finishClose(local: LocalFence): void {
    const { process, global } = local;
    const adapter = global.adapter;
    // Entries the GPU logged through this handle are read while it still resolves (an optimized interrupt's waiters depend on them).
    if (local.usedByGpu) this.os.logs.beforeHandleClosed(local);
    process.closing.delete(local.handle);
    global.locals.delete(local);
    if (adapter.state === 'running') this.os.port.closeNativeFence(adapter.index, { hLocalNativeFence: local.hLocal });
    this.os.addressSpaces.unmapGpu(process, adapter, global.cvPhys);
    this.os.addressSpaces.unmapGpu(process, adapter, global.mvPhys);
    this.maybeDestroyGlobal(global);
  }

  maybeDestroyGlobal(global: GlobalFence): void {
    if (global.destroyed) return;
    if (!global.destroyPending && !this.os.lifetime.reachable(global)) {
      // Only handles still closing (GPU commands name them) are left: destroy pending.
      const members = this.os.crossAdapter.groupOf(global)?.members ?? [global];
      if (members.some((m) => m.locals.size > 0)) { this.os.lifetime.markDestroyPending(global); return; }
    }
    if (this.os.crossAdapter.groupOf(global)) { this.os.crossAdapter.releaseIfUnused(global, (f) => this.destroyGlobalNow(f)); return; }
    if (global.locals.size || global.ntReferences) return;
    this.destroyGlobalNow(global);
  }

  destroyGlobalNow(global: GlobalFence): void {
    const adapter = global.adapter;
    // Waiters still blocked on a destroyed fence are released with OBJECT_DESTROYED.
    this.os.waits.releaseWaitersOf(global, 'OBJECT_DESTROYED');
    global.destroyed = true;
    global.destroyPending = false;
    if (adapter.state === 'running') this.os.port.destroyNativeFence(adapter.index, { hGlobalNativeFence: global.hGlobal });
    if (global.systemPages !== undefined) { this.os.addressSpaces.unmapGpu(this.os.handles.system, adapter, global.cvPhys); this.os.addressSpaces.unmapGpu(this.os.handles.system, adapter, global.mvPhys); }
    adapter.fences.delete(global.coreFence);
    adapter.byGlobalHandle.delete(global.hGlobal);
    adapter.destroyedGlobalHandles.add(global.hGlobal);
    adapter.withWaiters.delete(global);
    check(adapter.core.fenceDestroy(global.coreFence), 'destroying fence storage');
    this.os.trace.record('os', 'dxgkrnl', 'fence destroyed', { fence: global.label, hGlobalNativeFence: global.hGlobal });
  }
}
