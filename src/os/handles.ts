// Processes, their handle tables, adapters and devices: what a handle names
// and whether the caller may use it (D3DKMTOpenAdapterFromLuid,
// D3DKMTCreateDevice, D3DKMTQueryAdapterInfo, the checks every call makes).
//
// Handles are `0x40000000 + slot × 0x100000 + n` (NT handles `0x80000000 +
// slot × 0x100000 + 4n`): the slot bits say which process a foreign handle
// belongs to, so a wrong-process handle is told apart from a closed one
// (`Process.retired`) and from one that never existed. n is a sequence number
// (src/os/tables.ts HandleTable): a closed handle's value is issued again only
// once the process's sequence wraps (0xFFFFF handles later), and the tables
// hold only the live handles.

import { WddmError, invalid, show } from '../base/errors.js';
import type { DriverPort } from '../port/driver-port.js';
import type { Trace } from '../base/trace.js';
import * as v from '../base/validate.js';
import { KMTQAITYPE_WDDM_3_1_CAPS, SYNC_FLAG_BITS, hex, syncFlagsValue, type SyncObjectFlagName, type SyncObjectFlags } from '../base/wddm.js';
import {
  KIND_NAMES, LocalFence, Process, requireRunning, type HandleObject, type NtHandle, type OsAdapter, type OsAdapterHandle, type OsDevice,
} from './objects.js';
import { EditClock } from './tables.js';

const EDIT_CLOCK = Symbol('Handles.editClock');

/**
 * What oneFenceCall found: read once each (a getter could answer differently twice); valid until its next call.
 * `object` the sync object, or undefined when the handle names a row (a native fence nothing has made objects for,
 * src/os/fence-rows.ts): `row` is then its key (core id × 8 + adapter index), else 0. The row stays a row.
 */
export interface OneFenceCall { readonly object: LocalFence | undefined; readonly row: number; readonly value: bigint }

/**
 * The check the one-fence short path of the waits shares (Waits.waitOne), building nothing: `args` has only the
 * keys `objects` and `values` (no inherited one), each an array of one, the value a 64-bit bigint and the handle
 * one of `process`'s sync objects, or a row of one. Returns the sync object or the row's key and the value (one
 * record reused by every call: copy them out at once), or undefined for any other call, which the general path then
 * checks whole and refuses saying what was wrong.
 */
export function oneFenceCall(process: Process, args: unknown, found: { object: LocalFence | undefined; row: number; value: bigint }): OneFenceCall | undefined {
  if (typeof args !== 'object' || args === null) return undefined;
  for (const key in args) if (key !== 'objects' && key !== 'values') return undefined;
  const { objects, values } = args as { objects?: unknown; values?: unknown };
  if (!Array.isArray(objects) || objects.length !== 1 || !Array.isArray(values) || values.length !== 1) return undefined;
  const value: unknown = values[0];
  // 0 … UINT64_MAX: the value its low 64 bits make is itself (one truncation V8 compiles inline, not two BigInt compares).
  if (typeof value !== 'bigint' || BigInt.asUintN(64, value) !== value) return undefined;
  const handle: unknown = objects[0];
  if (typeof handle !== 'number') return undefined;
  const object = process.handles.objectAt(handle);
  if (object instanceof LocalFence && object.handle === handle) {
    found.object = object;
    found.row = 0;
  } else {
    if (object !== undefined) return undefined; // the slot holds another object: no row can be there
    const row = process.handles.rowToken(handle);
    if (row === 0) return undefined;
    found.object = undefined;
    found.row = row;
  }
  found.value = value;
  return found as OneFenceCall;
}

/**
 * The sync object `handle` names in `process`, or undefined (no live handle, or another kind): the short paths'
 * lookup. The slot's object is checked by its class, then its handle, so the loads stay monomorphic; the table's
 * `get`, which every kind of handle reaches (its loads of an entry's handle see every kind), is left for a row, made
 * into its objects there as any lookup makes it.
 */
export function syncObjectOf(process: Process, handle: number): LocalFence | undefined {
  const object = process.handles.objectAt(handle);
  if (object instanceof LocalFence && object.handle === handle) return object;
  if (object !== undefined) return undefined; // the slot holds another object: no row can be there
  const made = process.handles.get(handle);
  return made instanceof LocalFence ? made : undefined;
}

export class Handles {
  /** Every process, by slot; slot 0 is the System process (the paging process, MapToGpuSystemProcess). */
  readonly processes: Process[] = [];
  readonly system: Process;
  /**
   * The machine's handle-table edit clock (src/os/tables.ts): every table of every process of this OS. Under a
   * symbol: the race explorer's state key and snapshots walk string keys, and the count is no state (never restored).
   */
  private readonly [EDIT_CLOCK] = new EditClock();

  constructor(
    /** The OS's adapters by index (a fence row's key names one). */
    readonly adapters: readonly OsAdapter[],
    private readonly port: DriverPort,
    private readonly trace: Trace,
    /** Process slots, the System process's included (limits.processes + 1). */
    readonly maxProcesses: number,
  ) {
    this.system = new Process(0, 'System', this[EDIT_CLOCK]);
    this.processes.push(this.system);
  }

  createProcess(name: string): Process {
    if (typeof name !== 'string' || !name) throw invalid('name', name, 'a non-empty process name');
    if (this.processes.length >= this.maxProcesses) {
      throw new WddmError('INSUFFICIENT_RESOURCES', `cannot create process "${name}": the machine holds at most ${this.maxProcesses - 1} processes (limits.processes)`);
    }
    const process = new Process(this.processes.length, name, this[EDIT_CLOCK]);
    this.processes.push(process);
    this.trace.record('runtime', name, 'process created', { slot: process.slot });
    return process;
  }

  /** Is `process` one of this OS's processes? */
  owns(process: unknown): process is Process {
    return process instanceof Process && this.processes[process.slot] === process;
  }

  resolve<K extends HandleObject['kind']>(process: Process, handle: unknown, kind: K, parameter: string): Extract<HandleObject, { kind: K }> {
    if (typeof handle !== 'number' || !Number.isInteger(handle) || handle <= 0) {
      throw invalid(parameter, handle, `a ${KIND_NAMES[kind]} handle (a positive integer) made by process "${process.name}"`, 'INVALID_HANDLE');
    }
    // A row (a native fence nothing has looked up, src/os/fence-rows.ts) named where another kind is expected is
    // refused as a sync object without making its objects: a refused call changes nothing, not even that.
    if (kind !== 'syncObject' && process.handles.isRow(handle)) {
      throw new WddmError('OBJECT_TYPE_MISMATCH', `${parameter} ${hex(handle)} is a ${KIND_NAMES.syncObject}; expected a ${KIND_NAMES[kind]}`,
        { parameter, value: handle, expected: KIND_NAMES[kind] });
    }
    const object = process.handles.get(handle);
    if (!object) {
      const ownerSlot = Math.floor((handle - 0x4000_0000) / 0x10_0000);
      const owner = handle >= 0x4000_0000 && handle < 0x8000_0000 ? this.processes[ownerSlot] : undefined;
      if (owner && owner !== process) {
        throw new WddmError('INVALID_HANDLE', `${parameter} ${hex(handle)} belongs to process "${owner.name}", not "${process.name}": a handle is valid only in the process that made it`,
          { parameter, value: handle, expected: `a handle of process "${process.name}"` });
      }
      if (process.otherLiveHandles.has(handle)) {
        throw new WddmError('OBJECT_TYPE_MISMATCH', `${parameter} ${hex(handle)} is an allocation (hAllocation); expected a ${KIND_NAMES[kind]}`,
          { parameter, value: handle, expected: KIND_NAMES[kind] });
      }
      if (process.retired.has(handle)) {
        throw new WddmError('INVALID_HANDLE', `${parameter} ${hex(handle)} was closed or destroyed in process "${process.name}"`,
          { parameter, value: handle, expected: 'a live handle' });
      }
      throw new WddmError('INVALID_HANDLE', `${parameter} ${hex(handle)} is not a handle of process "${process.name}"`,
        { parameter, value: handle, expected: `a ${KIND_NAMES[kind]} handle of process "${process.name}"` });
    }
    if (object.kind !== kind) {
      throw new WddmError('OBJECT_TYPE_MISMATCH', `${parameter} ${hex(handle)} is a ${KIND_NAMES[object.kind]}; expected a ${KIND_NAMES[kind]}`,
        { parameter, value: handle, expected: KIND_NAMES[kind] });
    }
    return object as Extract<HandleObject, { kind: K }>;
  }

  resolveNt(process: Process, handle: unknown, parameter: string): NtHandle {
    const nt = typeof handle === 'number' ? process.ntHandles.get(handle) : undefined;
    if (!nt) {
      const owner = typeof handle === 'number' && handle >= 0x8000_0000 ? this.processes[Math.floor((handle - 0x8000_0000) / 0x10_0000)] : undefined;
      const why = owner && owner !== process ? `belongs to process "${owner.name}"; duplicate it into "${process.name}" first`
        : process.retired.has(handle as number) ? 'was closed' : `is not an NT handle of process "${process.name}"`;
      throw new WddmError('INVALID_HANDLE', `${parameter} ${typeof handle === 'number' ? hex(handle) : show(handle)} ${why}`, { parameter, value: handle, expected: 'an open NT handle of this process' });
    }
    return nt;
  }

  requireDevice(process: Process, hDevice: unknown, parameter: string): OsDevice {
    const device = this.resolve(process, hDevice, 'device', parameter);
    requireRunning(device.adapter, parameter);
    if (device.removed) {
      throw new WddmError('DEVICE_REMOVED', `${parameter} ${hex(device.handle)}: the device was removed (GPU reset); create a new device`,
        { parameter, value: device.handle, expected: 'a device that was not removed' });
    }
    return device;
  }

  /** D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS from `{ shared, crossAdapter, … }`, checked. */
  syncFlags(flags: unknown, parameter: string): number {
    if (flags === undefined) return 0;
    const f = v.options(flags, parameter, Object.keys(SYNC_FLAG_BITS)) as SyncObjectFlags;
    for (const key of Object.keys(f)) v.bool(f[key as SyncObjectFlagName], `${parameter}.${key}`);
    return syncFlagsValue(f);
  }

  // ── adapters and devices ──

  /** D3DKMTOpenAdapterFromLuid: a handle of `process` to adapter `index`. */
  openAdapter(process: Process, index: number): number {
    const adapter = this.adapters[index];
    if (!adapter) throw invalid('adapter', index, `an adapter index 0..${this.adapters.length - 1}`);
    const object: OsAdapterHandle = { kind: 'adapter', handle: process.allocHandle(), adapter };
    process.handles.set(object.handle, object);
    this.trace.record('runtime', process.name, 'D3DKMTOpenAdapter', { adapter: adapter.name, hAdapter: object.handle });
    return object.handle;
  }

  /**
   * D3DKMTQueryAdapterInfo. 'KMTQAITYPE_WDDM_3_1_CAPS' → { NativeGpuFenceSupported } (what user mode
   * sees, CAP-03); 'NATIVE_FENCE_CAPS' → the driver's DXGK_NATIVE_FENCE_CAPS (DxgkDdiQueryAdapterInfo).
   */
  queryAdapterInfo(process: Process, hAdapter: unknown, type: unknown): Record<string, unknown> {
    const { adapter } = this.resolve(process, hAdapter, 'adapter', 'hAdapter');
    v.oneOf(type, 'type', [KMTQAITYPE_WDDM_3_1_CAPS, 'NATIVE_FENCE_CAPS'] as const);
    requireRunning(adapter, 'hAdapter');
    this.trace.record('runtime', process.name, 'D3DKMTQueryAdapterInfo', { hAdapter: hAdapter as number, Type: type as string });
    if (type === KMTQAITYPE_WDDM_3_1_CAPS) return { NativeGpuFenceSupported: adapter.nativeFence };
    if (!adapter.nativeFence) {
      throw new WddmError('NOT_SUPPORTED', `queryAdapterInfo: adapter "${adapter.name}" has no native fence support, so it has no DXGK_NATIVE_FENCE_CAPS`);
    }
    const caps = this.port.queryNativeFenceCaps(adapter.index);
    if (!caps) throw new WddmError('GRAPHICS_ADAPTER_STOPPED', `queryAdapterInfo: the driver of "${adapter.name}" failed`);
    return { ...caps };
  }

  /** D3DKMTCreateDevice: returns hDevice. */
  createDevice(process: Process, args: unknown): number {
    const a = v.options(args, 'createDevice(args)', ['hAdapter']);
    const { adapter } = this.resolve(process, a.hAdapter, 'adapter', 'hAdapter');
    requireRunning(adapter, 'hAdapter');
    const device: OsDevice = { kind: 'device', handle: process.allocHandle(), process, adapter, removed: false, queues: new Set() };
    process.handles.set(device.handle, device);
    adapter.devices.add(device);
    this.trace.record('runtime', process.name, 'D3DKMTCreateDevice', { hAdapter: a.hAdapter as number, hDevice: device.handle });
    return device.handle;
  }
}
