// CPU signals (NF-07, NF-19): D3DKMTSignalSynchronizationObjectFromCpu.
//
//   signalFromCpu ─▶ signalOne (one handle, one value, no option) or signalValidated (any other call)
//        ─▶ checkFence for every fence before any change (rewinds refused without AllowFenceRewind, NF-19;
//           refuse makes each refusal's error, in signalValidated)
//        ─▶ native fences: UpdateCurrentValuesFromCpu per adapter (batched; a batch of one is the port's
//           one-fence call) ─▶ wake their waiters
//        ─▶ monitored fences: the kernel writes them itself (src/os/monitored.ts)
//        ─▶ the NF-09 loop (src/os/waits.ts), then cross-adapter propagation (XA-04)
//   signalOne does cpuSignal's steps for one native fence signalled whole without making the batch; any
//   other fence it accepts goes to cpuSignal with a batch of one.

import { WddmError } from '../base/errors.js';
import type { DriverPort } from '../port/driver-port.js';
import type { Trace } from '../base/trace.js';
import * as v from '../base/validate.js';
import { MAX_OBJECTS_PER_CALL, SYNC_FLAG_BITS, hex } from '../base/wddm.js';
import type { CrossAdapterFences } from './cross-adapter.js';
import { syncObjectOf, type Handles } from './handles.js';
import type { MonitoredFences } from './monitored.js';
import { checkMonitoredSignal, signalOutsideWindow } from './monitored-window.js';
import { ROW_BITS, ROW_CV_PHYS, ROW_FLAGS_SHIFT, ROW_MONITORED, ROW_WORDS } from './fence-store.js';
import { adapterStopped, firstNaming, narrow, repeatError, updateCurrentValueFromCpu, updateCurrentValuesFromCpu, type GlobalFence, type HandleObject, type LocalFence, type OsAdapter, type Process } from './objects.js';
import type { FenceKey } from './fence-store.js';
import type { HandleTable } from './tables.js';
import type { OperationEnd, OsOperation, Waits } from './waits.js';

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
 * The handle lookup's last answer, under a symbol: the race explorer's state key and snapshots walk a machine's objects
 * by their string keys (Object.keys), and a cache is no state (two states that differ only in the handle signalled
 * last are one state). It needs no restoring: each use checks it against the table's editStamp, which a restore
 * puts back with what the table held.
 */
const LAST_FOUND = Symbol('CpuSignals.lastFound');

/** Why checkFence refused a fence of a CPU signal (ACCEPTED: it did not); refuse() turns each into the call's error. */
const ACCEPTED = 0, ADAPTER_STOPPED = 1, REPEATED = 2, NOT_U64 = 3, NO_SIGNAL = 4, BACKWARDS = 5, OUT_OF_WINDOW = 6;

/** The fences before entry 0 of a call: none (checkFence reads them from entry 1 on). */
const NO_FENCES: GlobalFence[] = [];

export class CpuSignals {
  /** Fences signalled from the CPU (summary().os.cpuSignals). */
  readonly counters = { cpuSignals: 0 };

  /** signalOne's last lookup: `local` was `table`'s object for `handle` when the table's editStamp was `editStamp`. */
  private readonly [LAST_FOUND]: { handle: unknown; table: HandleTable<HandleObject> | undefined; editStamp: number; local: LocalFence | undefined } =
    { handle: -1, table: undefined, editStamp: -1, local: undefined };

  constructor(private readonly os: SignalsEnvironment) {}

  /**
   * D3DKMTSignalSynchronizationObjectFromCpu: the call checked whole (every refusal before any change), then done.
   * Every fence of every call goes through the same checks (checkFence; refuse makes each refusal's error) and its
   * signal through the same steps (the DDI of updateCurrentValue(s)FromCpu, then wake for its waiters). The common
   * call is tried first (signalOne); any call it does not finish is validated whole here (signalValidated) and done by
   * cpuSignal.
   */
  signalFromCpu(process: Process, args: unknown): void {
    // Two calls and nothing else, so this compiles into its caller and signalOne is one call away.
    if (!this.signalOne(process, args)) this.signalValidated(process, args);
  }

  /** A call of any other shape: its options and arrays validated whole, each fence checked before any change, then done. */
  private signalValidated(process: Process, args: unknown): void {
    const a = v.options(args, 'signal(args)', SIGNAL_KEYS);
    const objects = v.array(a.objects, 'objects', 1, MAX_OBJECTS_PER_CALL);
    const values = v.array(a.values, 'values', objects.length, objects.length);
    let rewind = false;
    if (a.flags !== undefined) {
      const flags = v.options(a.flags, 'flags', SIGNAL_FLAG_KEYS);
      rewind = flags.allowFenceRewind === undefined ? false : v.bool(flags.allowFenceRewind, 'flags.allowFenceRewind');
    }
    if (a.hDevice !== undefined) this.os.handles.requireDevice(process, a.hDevice, 'hDevice');
    // Exactly sized (an empty array's first push reserves room for 17); no closure, no template string unless a check fails.
    const fences: GlobalFence[] = new Array(objects.length);
    const signalled: bigint[] = new Array(objects.length);
    for (let i = 0; i < objects.length; i++) {
      const local = this.os.handles.resolve(process, objects[i], 'syncObject', objectsAt(i));
      const raw = values[i], value = v.u64OrUndefined(raw);
      const refusal = this.checkFence(local, value, rewind, fences, i);
      if (refusal !== ACCEPTED) throw this.refuse(refusal, local, raw, value!, fences, i);
      fences[i] = local.global;
      signalled[i] = value!;
    }
    this.signalChecked(process, objects, fences, signalled, rewind);
  }

  /**
   * The common call, `{ objects: [handle], values: [value] }` and nothing else (own keys), read in place: the
   * handle looked up (the last answer kept), checked as any call's entry is (checkFence), and, for a native fence
   * signalled whole (tracing off, the OS's operations run whole, no cross-adapter group holding it: XA-04 has
   * nothing to do), signalled with cpuSignal's steps for a batch of one without making the batch: the one-fence DDI
   * (updateCurrentValueFromCpu, the call updateCurrentValuesFromCpu makes for one fence), then its waiters (wake)
   * and the NF-09 loop (refresh); any other fence of such a call is done as a checked call is (signalChecked).
   * Returns false, having changed nothing, for any other call, a refused one included: signalValidated then checks
   * it whole and makes the refusal's error.
   */
  private signalOne(process: Process, args: unknown): boolean {
    // The shape's test written out here rather than called: V8 keeps what it learns of the objects a function sees per
    // function, and a shared test would also see other calls' arguments. Each value is read once.
    if (typeof args !== 'object' || args === null) return false;
    for (const key in args) if (key !== 'objects' && key !== 'values') return false;
    const { objects, values } = args as { objects?: unknown; values?: unknown };
    if (!Array.isArray(objects) || objects.length !== 1 || !Array.isArray(values) || values.length !== 1) return false;
    // The handle's sync object: the last one found while the process's table holds what it held then
    // (HandleTable.editStamp: any change of the table, a snapshot's restore included, misses), else looked up (a
    // handle that names none, or not a number: signalValidated's resolve says which).
    const handle = objects[0], table = process.handles, last = this[LAST_FOUND];
    let local = last.local;
    if (handle !== last.handle || table !== last.table || table.editStamp !== last.editStamp) {
      if (typeof handle !== 'number' || (local = syncObjectOf(process, handle)) === undefined) return false;
      last.handle = handle;
      last.table = table;
      last.editStamp = table.editStamp;
      last.local = local;
    }
    const value = v.u64OrUndefined(values[0]);
    if (this.checkFence(local!, value, false, NO_FENCES, 0) !== ACCEPTED) return false;
    const fence = local!.global;
    if (this.os.trace.enabled || this.os.waits.stepwise || isMonitored(fence) || this.os.crossAdapter.holds(fence)) return this.signalOneChecked(process, objects, fence, value!);
    this.counters.cpuSignals++;
    const adapter = fence.adapter;
    updateCurrentValueFromCpu(this.os.port, adapter, fence, value!);
    if (adapter.withWaiters.has(fence)) this.wakeWhole(fence);
    return true;
  }

  /** signalOne's waiters: wake's, then the NF-09 loop for the fence if any was satisfied (refresh). */
  private wakeWhole(fence: GlobalFence): void {
    const changed = this.wake(fence, undefined, undefined);
    if (changed) this.os.waits.refresh(changed);
  }

  /** signalOne's call of one fence that is not signalled as its common case: as a checked call. */
  private signalOneChecked(process: Process, objects: readonly unknown[], fence: GlobalFence, value: bigint): true {
    this.signalChecked(process, objects, [fence], [value], false);
    return true;
  }

  /** A checked call: traced, counted, done (cpuSignal). */
  private signalChecked(process: Process, objects: readonly unknown[], fences: GlobalFence[], signalled: bigint[], rewind: boolean): void {
    if (this.os.trace.enabled) {
      this.os.trace.record('runtime', process.name, 'D3DKMTSignalSynchronizationObjectFromCpu', {
        ObjectCount: fences.length, ObjectHandleArray: objects as number[], FenceValueArray: signalled, AllowFenceRewind: rewind,
      });
    }
    this.counters.cpuSignals += fences.length;
    this.cpuSignal(fences, signalled);
  }

  /**
   * The checks of one fence of a CPU signal, in the order the call reports them: its adapter runs, no earlier entry
   * names the same fence, `value` is a 64-bit value (u64OrUndefined's: undefined is not), the fence was not created
   * with noSignal, the value does not move it back (unless `rewind`, NF-19), and a monitored fence of a
   * No64BitAtomics adapter stays in its window (MF-07). Returns ACCEPTED or why not (refuse makes the error).
   * `fences` holds the fences of entries 0 … i − 1.
   */
  private checkFence(local: LocalFence, value: bigint | undefined, rewind: boolean, fences: GlobalFence[], i: number): number {
    const fence = local.global, adapter = fence.adapter;
    if (adapter.state === 'stopped') return ADAPTER_STOPPED;
    if (i > 0 && firstNaming(fences, fence, i) >= 0) return REPEATED;
    if (value === undefined) return NOT_U64;
    // The fence's row read directly, once (a live handle's fence is live: its row is its adapter's). GlobalFence's
    // getters (flags, kind, currentValue) read the same words, but V8 does not always inline them here: through them
    // a one-fence signal measured 1.6x (paired, in one process).
    const words = adapter.rows.words, at = fence.coreFence * ROW_WORDS, bits = words[at + ROW_BITS];
    if ((bits & (NO_SIGNAL_FLAG << ROW_FLAGS_SHIFT)) !== 0) return NO_SIGNAL;
    // CurrentValue is its word (GlobalFence.currentValue's read), but for a monitored fence of a No64BitAtomics adapter,
    // whose 32-bit word the kernel extends (MF-07) and whose value window is checked too.
    if ((bits & ROW_MONITORED) !== 0 && narrow(adapter)) return checkNarrowMonitored(fence, value, rewind);
    if (!rewind && value < adapter.currentValues[words[at + ROW_CV_PHYS] >>> 3]) return BACKWARDS;
    return ACCEPTED;
  }

  /** The error of checkFence's `refusal` of entry i (`raw` its value as given, `value` as u64OrUndefined read it). */
  private refuse(refusal: number, local: LocalFence, raw: unknown, value: bigint, fences: GlobalFence[], i: number): Error {
    const global = local.global;
    switch (refusal) {
      case ADAPTER_STOPPED: return adapterStopped(global.adapter, objectsAt(i));
      case REPEATED: return repeatError(fences, local, i, firstNaming(fences, global, i), 'signal');
      case NOT_U64: try { v.u64(raw, i === 0 ? 'values[0]' : `values[${i}]`); } catch (error) { return error as Error; } break;
      case NO_SIGNAL:
        return new WddmError('INVALID_PARAMETER', `objects[${i}] ${hex(local.handle)} was created with flags.noSignal: it cannot be signalled`,
          { parameter: `objects[${i}]`, value: local.handle, expected: 'a fence created without flags.noSignal' });
      case BACKWARDS: {
        const current = global.currentValue();
        return new WddmError('INVALID_PARAMETER', `values[${i}] ${value} would move ${global.label} back from ${current}; fence values only move forward unless flags.allowFenceRewind is set`,
          { parameter: `values[${i}]`, value, expected: `>= ${current}, or flags.allowFenceRewind` });
      }
      case OUT_OF_WINDOW: try { checkMonitoredSignal(global, value, `values[${i}]`); } catch (error) { return error as Error; } break;
    }
    return new Error(`internal: CPU signal refusal ${refusal} of objects[${i}] has no error`);
  }

  /**
   * Waiters of `fence`, which has CPU waiters (its adapter's withWaiters: only such a fence has any to satisfy, a bit
   * test its callers make), that its new CurrentValue satisfies, into `changed` (made when one is). Run whole, a
   * value not past MonitoredValue (the smallest waited value − 1, NF-02, exact between whole operations) satisfies none.
   */
  private wake(fence: GlobalFence, changed: Set<FenceKey> | undefined, operation: OsOperation | undefined): Set<FenceKey> | undefined {
    const adapter = fence.adapter;
    // CurrentValue and MonitoredValue from the row and the word (a native fence's: GlobalFence's getters' values; see checkFence).
    const rows = adapter.rows, current = adapter.currentValues[rows.words[fence.coreFence * ROW_WORDS + ROW_CV_PHYS] >>> 3];
    if (operation === undefined && current <= rows.monitoredValueOf(fence.coreFence)) return changed;
    this.os.waits.satisfy(fence.key, current, (changed ??= new Set()), operation);
    return changed;
  }

  /**
   * Writes values through each adapter's driver, a batch per adapter (signalOnAdapter; adapters in index order), then
   * satisfies CPU waiters, runs the NF-09 loop and XA-04. Monitored fences are the kernel's to write (signalMonitored).
   */
  cpuSignal(fences: GlobalFence[], values: bigint[]): void {
    // No closure here (one would put the arguments in a context allocated at every call).
    for (let i = 0; i < fences.length; i++) {
      if (isMonitored(fences[i])) {
        const native = this.signalMonitored(fences, values);
        if (native === undefined) return;
        fences = native.fences;
        values = native.values;
        break;
      }
    }
    // In steps (src/os/waits.ts): each satisfied waiter is retired by a step of its own, then the NF-09 loop's steps.
    const operation = this.os.waits.operationFor('CPU signal');
    const changed = onOneAdapter(fences) ? this.signalOnAdapter(fences[0].adapter, fences, values, undefined, operation)
      : this.signalByAdapter(fences, values, operation);
    if (operation) {
      const end: CpuSignalEnd = { owner: 'signals', fences };
      this.os.waits.run(operation, changed ?? new Set(), end);
      return;
    }
    if (changed) this.os.waits.refresh(changed);
    this.os.crossAdapter.afterCpuSignal(fences); // XA-04
  }

  /**
   * The monitored fences of a CPU signal: the kernel writes them itself, no DDI (src/os/monitored.ts). Returns the
   * native ones with their values, or undefined for none.
   */
  private signalMonitored(fences: GlobalFence[], values: bigint[]): { fences: GlobalFence[]; values: bigint[] } | undefined {
    let monitoredCount = 0;
    for (let i = 0; i < fences.length; i++) if (isMonitored(fences[i])) monitoredCount++;
    if (monitoredCount === fences.length) { this.os.monitored.cpuSignal(fences, values); return undefined; }
    const monitored = fences.map((f, i) => i).filter((i) => isMonitored(fences[i]));
    this.os.monitored.cpuSignal(monitored.map((i) => fences[i]), monitored.map((i) => values[i]));
    const native = fences.map((f, i) => i).filter((i) => !isMonitored(fences[i]));
    return { fences: native.map((i) => fences[i]), values: native.map((i) => values[i]) };
  }

  /** cpuSignal's fences of several adapters: a batch per adapter, adapters in index order. */
  private signalByAdapter(fences: GlobalFence[], values: bigint[], operation: OsOperation | undefined): Set<FenceKey> | undefined {
    const adapters: OsAdapter[] = [];
    for (const fence of fences) if (!adapters.includes(fence.adapter)) adapters.push(fence.adapter);
    adapters.sort((x, y) => x.index - y.index);
    let changed: Set<FenceKey> | undefined;
    for (const adapter of adapters) {
      const batch: GlobalFence[] = [], batchValues: bigint[] = [];
      for (let i = 0; i < fences.length; i++) if (fences[i].adapter === adapter) { batch.push(fences[i]); batchValues.push(values[i]); }
      changed = this.signalOnAdapter(adapter, batch, batchValues, changed, operation);
    }
    return changed;
  }

  /** One adapter's batch: DxgkDdiUpdateCurrentValuesFromCpu (a batch of one: the port's one-fence call), then its fences' waiters. */
  private signalOnAdapter(adapter: OsAdapter, fences: GlobalFence[], values: bigint[], changed: Set<FenceKey> | undefined,
                          operation: OsOperation | undefined): Set<FenceKey> | undefined {
    updateCurrentValuesFromCpu(this.os.port, adapter, fences, values, false);
    for (let i = 0; i < fences.length; i++) if (adapter.withWaiters.has(fences[i])) changed = this.wake(fences[i], changed, operation);
    return changed;
  }

  /** The rest of a CPU signal after its NF-09 loop, when it ran in steps: cross-adapter propagation (XA-04). */
  finishCpuSignal(end: CpuSignalEnd): void {
    this.os.crossAdapter.afterCpuSignal(end.fences); // XA-04
  }
}

const SIGNAL_KEYS = ['objects', 'values', 'flags', 'hDevice'] as const;
const SIGNAL_FLAG_KEYS = ['allowFenceRewind', 'signalAtSubmission', 'enqueueCpuEvent'] as const;
const NO_SIGNAL_FLAG = 1 << SYNC_FLAG_BITS.noSignal;

/** The parameter name of entry i of `objects`. */
const objectsAt = (i: number): string => (i === 0 ? 'objects[0]' : `objects[${i}]`);

/** checkFence for a monitored fence of a No64BitAtomics adapter (MF-07): its extended CurrentValue, then its window. */
function checkNarrowMonitored(fence: GlobalFence, value: bigint, rewind: boolean): number {
  if (!rewind && value < fence.currentValue()) return BACKWARDS;
  return signalOutsideWindow(fence, value) ? OUT_OF_WINDOW : ACCEPTED;
}

/** Are `fences` all of one adapter (a call of one fence, the common case, is)? */
function onOneAdapter(fences: GlobalFence[]): boolean {
  const first = fences[0].adapter;
  for (let i = 1; i < fences.length; i++) if (fences[i].adapter !== first) return false;
  return true;
}

/** Is `fence` a monitored fence? Its row's bit, read directly (GlobalFence.kind's; see checkFence). A CPU signal's fences are live. */
const isMonitored = (fence: GlobalFence): boolean => (fence.adapter.rows.words[fence.coreFence * ROW_WORDS + ROW_BITS] & ROW_MONITORED) !== 0;
