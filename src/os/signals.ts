// CPU signals (NF-07, NF-19): D3DKMTSignalSynchronizationObjectFromCpu.
//
//   signalFromCpu ─▶ checked (rewinds refused without AllowFenceRewind, NF-19)
//        ─▶ native fences: UpdateCurrentValuesFromCpu per adapter (batched) ─▶ satisfy their waiters
//        ─▶ monitored fences: the kernel writes them itself (src/os/monitored.ts)
//        ─▶ the NF-09 loop (src/os/waits.ts), then cross-adapter propagation (XA-04)

import { WddmError } from '../base/errors.js';
import type { DriverPort } from '../port/driver-port.js';
import type { Trace } from '../base/trace.js';
import type { WasmMemory } from '../core/bindings.js';
import * as v from '../base/validate.js';
import { MAX_OBJECTS_PER_CALL, SYNC_FLAG_BITS, hex } from '../base/wddm.js';
import type { CrossAdapterFences } from './cross-adapter.js';
import { syncObjectOf, type Handles } from './handles.js';
import type { MonitoredFences } from './monitored.js';
import { checkMonitoredSignal } from './monitored-window.js';
import { ROW_BITS, ROW_CV_PHYS, ROW_FLAGS_SHIFT, ROW_GLOBAL_HANDLE, ROW_MONITORED, ROW_WORDS } from './fence-store.js';
import { narrow, rejectRepeat, requireRunning, updateCurrentValuesFromCpu, type GlobalFence, type HandleObject, type LocalFence, type OsAdapter, type Process } from './objects.js';
import type { FenceKey } from './fence-store.js';
import type { HandleTable } from './tables.js';
import type { OperationEnd, Waits } from './waits.js';

/** What a CPU signal does after its NF-09 loop (an OS operation's end when it runs in steps). */
export interface CpuSignalEnd extends OperationEnd {
  readonly owner: 'signals';
  readonly fences: GlobalFence[];
}

/** What CPU signals use of the rest of the OS (the OS wires it). */
export interface SignalsEnvironment {
  readonly handles: Handles;
  readonly waits: Waits;
  readonly monitored: MonitoredFences;
  readonly crossAdapter: CrossAdapterFences;
  readonly port: DriverPort;
  readonly trace: Trace;
}


/**
 * signalOne's last lookup, under a symbol: the race explorer's state key and snapshots walk a machine's objects by
 * their string keys (Object.keys), and a cache is no state (two states that differ only in the handle signalled
 * last are one state). It needs no restoring: each use checks it against the table's editStamp, which a restore
 * puts back with what the table held.
 */
const LAST_FOUND = Symbol('signalOne.lastFound');
/**
 * The short path's last kernel VA and the physical address it maps, from which it is derived (GlobalFence.kernelCvVa;
 * a BigInt is ~50 ns to make). Under a symbol, as LAST_FOUND: it holds nothing a later step reads.
 */
const LAST_KERNEL_VA = Symbol('signalOne.lastKernelVa');

export class CpuSignals {
  /** Fences signalled from the CPU (summary().os.cpuSignals). */
  readonly counters = { cpuSignals: 0 };

  /** signalOne's last lookup: `local` was `table`'s object for `handle` when the table's editStamp was `editStamp`. */
  private readonly [LAST_FOUND]: { handle: number; table: HandleTable<HandleObject> | undefined; editStamp: number; local: LocalFence | undefined } =
    { handle: -1, table: undefined, editStamp: -1, local: undefined };

  private readonly [LAST_KERNEL_VA] = { va: 0n, of: -1 };

  /** Linear memory as u64 words (a machine's memory is made at its final size and never grows: one view serves), and the memory it views. */
  private values?: BigUint64Array;
  private valuesOf?: WasmMemory;

  constructor(private readonly os: SignalsEnvironment) {}

  signalFromCpu(process: Process, args: unknown): void {
    // Two calls and nothing else, so this compiles into its caller and the short path is one call away.
    if (!this.signalOne(process, args)) this.signalChecked(process, args);
  }

  /** The general path: the call checked whole (every refusal is made here), then done. */
  private signalChecked(process: Process, args: unknown): void {
    const a = v.options(args, 'signal(args)', SIGNAL_KEYS);
    const objects = v.array(a.objects, 'objects', 1, MAX_OBJECTS_PER_CALL);
    const values = v.array(a.values, 'values', objects.length, objects.length);
    let rewind = false;
    if (a.flags !== undefined) {
      const flags = v.options(a.flags, 'flags', SIGNAL_FLAG_KEYS);
      rewind = flags.allowFenceRewind === undefined ? false : v.bool(flags.allowFenceRewind, 'flags.allowFenceRewind');
    }
    if (a.hDevice !== undefined) this.os.handles.requireDevice(process, a.hDevice, 'hDevice');
    // Every check before any change (no closure, no template string unless a check fails).
    // Exactly sized (an empty array's first push reserves room for 17).
    const fences: GlobalFence[] = new Array(objects.length);
    const signalled: bigint[] = new Array(objects.length);
    for (let i = 0; i < objects.length; i++) this.check(process, objects[i], values[i], i, rewind, fences, signalled);
    if (this.os.trace.enabled) {
      this.os.trace.record('runtime', process.name, 'D3DKMTSignalSynchronizationObjectFromCpu', {
        ObjectCount: fences.length, ObjectHandleArray: objects as number[], FenceValueArray: signalled, AllowFenceRewind: rewind,
      });
    }
    this.counters.cpuSignals += fences.length;
    this.cpuSignal(fences, signalled);
  }

  /**
   * The common CPU signal, checked and done without building anything: one handle of this process to a native
   * fence (or a monitored one, not on a No64BitAtomics adapter) of a running adapter that no cross-adapter group
   * holds, a bigint value not below CurrentValue, no flags, no hDevice, tracing off, OS operations run whole. For
   * any other call it returns false having changed nothing, and the general path checks the call whole: every
   * refusal is the general path's. What it does is what the general path does for that call: for a native fence
   * UpdateCurrentValuesFromCpu (its argument reused while no DDI observer could keep it), then the waiters the new
   * value satisfies; for a monitored fence the kernel's own write (MonitoredFences.cpuSignal). (Cross-adapter
   * propagation has nothing to do for a fence outside every group.)
   */
  private signalOne(process: Process, args: unknown): boolean {
    // oneFenceCall's checks (flags, hDevice, an unknown key or another shape: the general path), written out here
    // rather than called: V8 keeps what it learns of the objects a function sees per function, and oneFenceCall also
    // sees the waits' arguments (timeoutNs, waitAny …), which makes its property loads polymorphic. Each value is read once.
    if (typeof args !== 'object' || args === null) return false;
    for (const key in args) if (key !== 'objects' && key !== 'values') return false;
    const { objects, values } = args as { objects?: unknown; values?: unknown };
    if (!Array.isArray(objects) || objects.length !== 1 || !Array.isArray(values) || values.length !== 1) return false;
    const value: unknown = values[0];
    // 0 … UINT64_MAX: the value its low 64 bits make is itself (one truncation V8 compiles inline, not two BigInt compares).
    if (typeof value !== 'bigint' || BigInt.asUintN(64, value) !== value) return false;
    const handle: unknown = objects[0];
    if (typeof handle !== 'number') return false;
    // The handle's sync object: the last one found while its table holds what it held then (HandleTable.editStamp:
    // any change of the table, a snapshot's restore included, misses), else looked up.
    const table = process.handles;
    const last = this[LAST_FOUND];
    let local = last.local;
    if (handle !== last.handle || table !== last.table || table.editStamp !== last.editStamp) {
      local = syncObjectOf(process, handle);
      if (local === undefined) return false;
      last.handle = handle;
      last.table = table;
      last.editStamp = table.editStamp;
      last.local = local;
    }
    const fence = local!.global;
    const adapter = fence.adapter;
    // The fence's row, read once (a live handle's fence is live: its row is its adapter's; GlobalFence's getters read the same words).
    // Directly, not through FenceRows' accessors: through them a one-fence signal with a waiter measured 1.10x (paired, control 1.03).
    const words = adapter.rows.words, at = fence.coreFence * ROW_WORDS, bits = words[at + ROW_BITS], cvPhys = words[at + ROW_CV_PHYS];
    if (adapter.state !== 'running' || (bits & (NO_SIGNAL_FLAG << ROW_FLAGS_SHIFT)) !== 0) return false;
    if (this.os.trace.enabled || this.os.waits.stepwise || this.os.crossAdapter.holds(fence)) return false;
    // A rewind is refused or allowed by flags: the general path's to say. CurrentValue is read as the core's
    // cpuReadCurrentValue reads it, one aligned 64-bit load, but through a view: an export call is polymorphic once
    // a process has several machines (each core instance its own exports object), and twice as slow then.
    if (this.valuesOf !== adapter.memory) { this.values = new BigUint64Array(adapter.memory.buffer); this.valuesOf = adapter.memory; }
    if (value < this.values![cvPhys >>> 3]) return false;
    if ((bits & ROW_MONITORED) !== 0) return this.signalOneMonitored(fence, value);
    this.counters.cpuSignals++;
    // DxgkDdiUpdateCurrentValuesFromCpu for this one fence: the port hands it to the driver in the form it takes.
    const lastKernelVa = this[LAST_KERNEL_VA];
    if (cvPhys !== lastKernelVa.of) { lastKernelVa.va = adapter.kernelCurrentValueVas.get(fence.coreFence); lastKernelVa.of = cvPhys; }
    this.os.port.updateOneCurrentValueFromCpu(adapter.index, words[at + ROW_GLOBAL_HANDLE], value, lastKernelVa.va);
    // Only a fence with CPU waiters has any to satisfy (a bit test, as the general path asks; no 64-bit compare).
    if (adapter.withWaiters.has(fence)) this.wakeAfterOne(fence);
    return true;
  }

  /**
   * signalOne for a monitored fence: the kernel writes it itself, no DDI (src/os/monitored.ts). One on a
   * No64BitAtomics adapter has its value window and 32-bit extension (MF-07): the general path (false, nothing changed).
   */
  private signalOneMonitored(fence: GlobalFence, value: bigint): boolean {
    if (narrow(fence.adapter)) return false;
    this.counters.cpuSignals++;
    this.os.monitored.cpuSignal([fence], [value]);
    return true;
  }

  /** signalOne's waiters: those the new CurrentValue satisfies, if it passed MonitoredValue (NF-02: only then can it). */
  private wakeAfterOne(fence: GlobalFence): void {
    const current = fence.currentValue();
    if (current > fence.monitoredValue) {
      const changed = new Set<FenceKey>();
      this.os.waits.satisfy(fence.key, current, changed);
      this.os.waits.refresh(changed);
    }
  }

  /** Checks objects[i] and values[i] of a CPU signal (handle, adapter, repeat, value, noSignal, monotonic, MF-07), then sets fences[i] and signalled[i]. */
  private check(process: Process, handle: unknown, rawValue: unknown, i: number, rewind: boolean, fences: GlobalFence[], signalled: bigint[]): void {
    const local = this.os.handles.resolve(process, handle, 'syncObject', i === 0 ? 'objects[0]' : `objects[${i}]`);
    const global = local.global;
    requireRunning(global.adapter, i === 0 ? 'objects[0]' : `objects[${i}]`);
    if (i > 0) rejectRepeat(fences, local, i, 'signal');
    const value = v.u64(rawValue, i === 0 ? 'values[0]' : `values[${i}]`);
    if ((global.flags & NO_SIGNAL_FLAG) !== 0) {
      throw new WddmError('INVALID_PARAMETER', `objects[${i}] ${hex(local.handle)} was created with flags.noSignal: it cannot be signalled`,
        { parameter: `objects[${i}]`, value: local.handle, expected: 'a fence created without flags.noSignal' });
    }
    const current = global.currentValue();
    if (value < current && !rewind) {
      throw new WddmError('INVALID_PARAMETER', `values[${i}] ${value} would move ${global.label} back from ${current}; fence values only move forward unless flags.allowFenceRewind is set`,
        { parameter: `values[${i}]`, value, expected: `>= ${current}, or flags.allowFenceRewind` });
    }
    if (global.kind === 'monitored') checkMonitoredSignal(global, value, `values[${i}]`);
    fences[i] = global;
    signalled[i] = value;
  }

  /** Writes values through each adapter's driver (batched), then satisfies CPU waiters. */
  cpuSignal(fences: GlobalFence[], values: bigint[]): void {
    let hasMonitored = false;
    for (let i = 0; i < fences.length; i++) if (fences[i].kind === 'monitored') { hasMonitored = true; break; }
    if (hasMonitored) {
      // Monitored fences: the kernel writes the value itself, no DDI (src/os/monitored.ts).
      const monitored = fences.map((f, i) => i).filter((i) => fences[i].kind === 'monitored');
      this.os.monitored.cpuSignal(monitored.map((i) => fences[i]), monitored.map((i) => values[i]));
      const native = fences.map((f, i) => i).filter((i) => fences[i].kind === 'native');
      if (!native.length) return;
      fences = native.map((i) => fences[i]);
      values = native.map((i) => values[i]);
    }
    // Grouped by adapter, adapters in index order (a machine has a handful): no Map, no closures per call.
    const first = fences[0].adapter;
    let adapters: OsAdapter[] | undefined;
    for (let i = 1; i < fences.length; i++) {
      const adapter = fences[i].adapter;
      if (adapter !== first && !(adapters ??= [first]).includes(adapter)) adapters.push(adapter);
    }
    if (adapters) adapters.sort((x, y) => x.index - y.index);
    // Only fences that may have CPU waiters (adapter.withWaiters) have a heap to pop: the others skip the core call.
    let changed: Set<FenceKey> | undefined;
    // In steps (src/os/waits.ts): each satisfied waiter is retired by a step of its own, then the NF-09 loop's steps.
    const operation = this.os.waits.operationFor('CPU signal');
    for (const adapter of adapters ?? [first]) {
      let batch = fences, batchValues = values;
      if (adapters) {
        batch = []; batchValues = [];
        for (let i = 0; i < fences.length; i++) if (fences[i].adapter === adapter) { batch.push(fences[i]); batchValues.push(values[i]); }
      }
      updateCurrentValuesFromCpu(this.os.port, adapter, batch, batchValues, false);
      for (let i = 0; i < batch.length; i++) {
        const fence = batch[i];
        if (adapter.withWaiters.has(fence)) this.os.waits.satisfy(fence.key, fence.currentValue(), (changed ??= new Set()), operation);
      }
    }
    if (operation) {
      const end: CpuSignalEnd = { owner: 'signals', fences };
      this.os.waits.run(operation, changed ?? new Set(), end);
      return;
    }
    if (changed) this.os.waits.refresh(changed);
    this.os.crossAdapter.afterCpuSignal(fences); // XA-04
  }

  /** The rest of a CPU signal after its NF-09 loop, when it ran in steps: cross-adapter propagation (XA-04). */
  finishCpuSignal(end: CpuSignalEnd): void {
    this.os.crossAdapter.afterCpuSignal(end.fences); // XA-04
  }
}

const SIGNAL_KEYS = ['objects', 'values', 'flags', 'hDevice'] as const;
const SIGNAL_FLAG_KEYS = ['allowFenceRewind', 'signalAtSubmission', 'enqueueCpuEvent'] as const;
const NO_SIGNAL_FLAG = 1 << SYNC_FLAG_BITS.noSignal;
