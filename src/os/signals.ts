// CPU signals (NF-07, NF-19): D3DKMTSignalSynchronizationObjectFromCpu.
//
//   signalFromCpu ─▶ checked (rewinds refused without AllowFenceRewind, NF-19)
//        ─▶ native fences: UpdateCurrentValuesFromCpu per adapter (batched) ─▶ satisfy their waiters
//        ─▶ monitored fences: the kernel writes them itself (src/os/monitored.ts)
//        ─▶ the NF-09 loop (src/os/waits.ts), then cross-adapter propagation (XA-04)

import { WddmError } from '../base/errors.js';
import type { DriverPort } from '../port/driver-port.js';
import type { Trace } from '../base/trace.js';
import * as v from '../base/validate.js';
import { MAX_OBJECTS_PER_CALL, hex } from '../base/wddm.js';
import type { CrossAdapterFences } from './cross-adapter.js';
import type { Handles } from './handles.js';
import type { MonitoredFences } from './monitored.js';
import { checkMonitoredSignal, rejectRepeat, requireRunning, updateCurrentValuesFromCpu, type GlobalFence, type OsAdapter, type Process } from './objects.js';
import type { Waits } from './waits.js';

/** What CPU signals use of the rest of the OS (the OS wires it). */
export interface SignalsEnvironment {
  readonly handles: Handles;
  readonly waits: Waits;
  readonly monitored: MonitoredFences;
  readonly crossAdapter: CrossAdapterFences;
  readonly port: DriverPort;
  readonly trace: Trace;
}

export class CpuSignals {
  /** Fences signalled from the CPU (summary().os.cpuSignals). */
  readonly counters = { cpuSignals: 0 };

  constructor(private readonly os: SignalsEnvironment) {}

  signalFromCpu(process: Process, args: unknown): void {
    const a = v.options(args, 'signal(args)', ['objects', 'values', 'flags', 'hDevice']);
    const objects = v.array(a.objects, 'objects', 1, MAX_OBJECTS_PER_CALL);
    const values = v.array(a.values, 'values', objects.length, objects.length);
    const flags = v.options(a.flags, 'flags', ['allowFenceRewind', 'signalAtSubmission', 'enqueueCpuEvent']);
    const rewind = flags.allowFenceRewind === undefined ? false : v.bool(flags.allowFenceRewind, 'flags.allowFenceRewind');
    if (a.hDevice !== undefined) this.os.handles.requireDevice(process, a.hDevice, 'hDevice');
    const fences: GlobalFence[] = [];
    const signalled: bigint[] = [];
    objects.forEach((h, i) => {
      const local = this.os.handles.resolve(process, h, 'syncObject', `objects[${i}]`);
      requireRunning(local.global.adapter, `objects[${i}]`);
      rejectRepeat(fences, local, i, 'signal');
      const value = v.u64(values[i], `values[${i}]`);
      if (local.global.hasFlag('noSignal')) {
        throw new WddmError('INVALID_PARAMETER', `objects[${i}] ${hex(local.handle)} was created with flags.noSignal: it cannot be signalled`,
          { parameter: `objects[${i}]`, value: local.handle, expected: 'a fence created without flags.noSignal' });
      }
      const current = local.global.currentValue();
      if (value < current && !rewind) {
        throw new WddmError('INVALID_PARAMETER', `values[${i}] ${value} would move ${local.global.label} back from ${current}; fence values only move forward unless flags.allowFenceRewind is set`,
          { parameter: `values[${i}]`, value, expected: `>= ${current}, or flags.allowFenceRewind` });
      }
      if (local.global.kind === 'monitored') checkMonitoredSignal(local.global, value, `values[${i}]`);
      fences.push(local.global);
      signalled.push(value);
    });
    if (this.os.trace.enabled) {
      this.os.trace.record('runtime', process.name, 'D3DKMTSignalSynchronizationObjectFromCpu', {
        ObjectCount: fences.length, ObjectHandleArray: objects as number[], FenceValueArray: signalled, AllowFenceRewind: rewind,
      });
    }
    this.counters.cpuSignals += fences.length;
    this.cpuSignal(fences, signalled);
  }

  /** Writes values through each adapter's driver (batched), then satisfies CPU waiters. */
  cpuSignal(fences: GlobalFence[], values: bigint[]): void {
    if (fences.some((f) => f.kind === 'monitored')) {
      // Monitored fences: the kernel writes the value itself, no DDI (src/os/monitored.ts).
      const monitored = fences.map((f, i) => i).filter((i) => fences[i].kind === 'monitored');
      this.os.monitored.cpuSignal(monitored.map((i) => fences[i]), monitored.map((i) => values[i]));
      const native = fences.map((f, i) => i).filter((i) => fences[i].kind === 'native');
      if (!native.length) return;
      fences = native.map((i) => fences[i]);
      values = native.map((i) => values[i]);
    }
    // Grouped by adapter, adapters in index order (a machine has a handful): no Map, no closures per call.
    const adapters: OsAdapter[] = [];
    for (const f of fences) if (!adapters.includes(f.adapter)) adapters.push(f.adapter);
    if (adapters.length > 1) adapters.sort((x, y) => x.index - y.index);
    const changed = new Set<GlobalFence>();
    for (const adapter of adapters) {
      let batch = fences, batchValues = values;
      if (adapters.length > 1) {
        batch = []; batchValues = [];
        for (let i = 0; i < fences.length; i++) if (fences[i].adapter === adapter) { batch.push(fences[i]); batchValues.push(values[i]); }
      }
      updateCurrentValuesFromCpu(this.os.port, adapter, batch, batchValues, false);
      for (const fence of batch) this.os.waits.satisfy(fence, fence.currentValue(), changed);
    }
    this.os.waits.refresh(changed);
    this.os.crossAdapter.afterCpuSignal(fences); // XA-04
  }
}
