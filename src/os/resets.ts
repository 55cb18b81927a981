// When an adapter fails: the bug check (a fatal driver error stops that
// adapter only, with a report) and device removal (NF-20: a GPU reset, TDR).
//
//   bug check       state stopped, report kept ─▶ DxgkDdiStopDevice ─▶ in-flight references
//                   dropped ─▶ waiters on its fences released (ADAPTER_STOPPED). Other adapters go on.
//   device removal  DxgkDdiResetFromTimeout + DxgkDdiRestartFromTimeout (the driver drops every
//   (TDR)           queue's work) ─▶ logs, in-flight references, queues and contexts forgotten,
//                   devices removed ─▶ every fence but NoSignalMaxValueOnTdr ones to UINT64_MAX
//                   (UpdateCurrentValuesFromCpu in batches of 32) ─▶ the kept fences' waiters
//                   rechecked once, and their cross-adapter propagation carried on (the reset
//                   dropped the interrupts that would have done both). The adapter runs again.
//   adapter removal the adapter goes for good (surprise removal): no reset, no restart. Its
//                   devices are removed and its fences go to UINT64_MAX as for a TDR, while its
//                   driver can still take the writes ─▶ DxgkDdiStopDevice (its engines stop,
//                   their interrupts are dropped) ─▶ in-flight references dropped ─▶ the waiters
//                   left on its fences (NoSignalMaxValueOnTdr ones) released with DEVICE_REMOVED:
//                   nothing will ever signal them. The adapter stays stopped, with no bug check.

import type { DriverPort } from '../port/driver-port.js';
import type { Scheduler } from '../base/scheduler.js';
import type { Trace } from '../base/trace.js';
import { MAX_OBJECTS_PER_CALL, UINT64_MAX } from '../base/wddm.js';
import type { KernelContexts } from './contexts.js';
import type { CrossAdapterFences } from './cross-adapter.js';
import type { HwQueues } from './hw-queues.js';
import type { FenceLifetime } from './lifetime.js';
import type { NativeFenceLogs } from './logs.js';
import type { MonitoredFences } from './monitored.js';
import { requireRunning, updateCurrentValuesFromCpu, type BugCheckReport, type GlobalFence, type OsAdapter } from './objects.js';
import type { FenceKey } from './fence-store.js';
import type { CpuSignals } from './signals.js';
import type { Waits } from './waits.js';

/** What resets use of the rest of the OS (the OS wires it). */
export interface ResetsEnvironment {
  readonly port: DriverPort;
  readonly waits: Waits;
  readonly lifetime: FenceLifetime;
  readonly logs: NativeFenceLogs;
  readonly contexts: KernelContexts;
  readonly hwQueues: HwQueues;
  readonly signals: CpuSignals;
  readonly monitored: MonitoredFences;
  readonly crossAdapter: CrossAdapterFences;
  readonly scheduler: Scheduler;
  readonly trace: Trace;
}

export class Resets {
  /** Every bug check so far (summary().bugChecks). */
  readonly bugChecks: BugCheckReport[] = [];
  /**
   * NF-20: a TDR's UINT64_MAX is a CPU signal, which wakes the fences' waiters. Always true but in the race
   * explorer's variant of an OS that writes the value through the driver and wakes nobody
   * (src/explore/variants.ts: it shows the waiter a reset leaves blocked).
   */
  wakeWaitersOnReset = true;

  constructor(private readonly os: ResetsEnvironment) {}

  /** A fatal driver error: stops this adapter only, with a report. */
  bugCheckAdapter(adapter: OsAdapter, code: string, message: string): void {
    if (adapter.state === 'stopped') return;
    const report: BugCheckReport = { adapter: adapter.name, code, message, timeNs: this.os.scheduler.nowNs };
    adapter.state = 'stopped';
    adapter.bugCheck = report;
    this.bugChecks.push(report);
    this.os.trace.record('fault', adapter.name, 'BUG CHECK', { code, message });
    this.os.port.stopDevice(adapter.index); // its engines stop, its pending interrupts are dropped
    this.os.lifetime.adapterReset(adapter); // its GPU work will never execute: in-flight references go
    // Waiters on the stopped adapter's fences must not hang: release them.
    this.os.waits.releaseWaitersOnAdapter(adapter, 'ADAPTER_STOPPED');
  }

  /** NF-20: a GPU reset. Every fence → UINT64_MAX except NoSignalMaxValueOnTdr; devices are removed. */
  removeDevice(adapter: OsAdapter, reason: string): void {
    const os = this.os;
    requireRunning(adapter, 'removeDevice');
    os.trace.record('fault', adapter.name, 'device removed (TDR)', { reason });
    // The driver drops every queue's work (its queues and contexts are gone with the devices), then runs again.
    if (!os.port.resetFromTimeout(adapter.index) || !os.port.restartFromTimeout(adapter.index)) return; // it failed: bug-checked
    this.removeDevicesSignallingMax(adapter);
    // The reset dropped interrupts on their way: a kept fence's value the GPU reached before it would
    // never wake its waiters. The OS looks at those fences' waiters once more (what an ISR would have done).
    const keptWithWaiters = [...adapter.withWaiters].filter((f) => f.hasFlag('noSignalMaxValueOnTdr')).sort((x, y) => x.coreFence - y.coreFence);
    if (keptWithWaiters.some((f) => f.kind === 'monitored')) os.monitored.scan(adapter, 'device removed: kept fences rechecked');
    const changed = new Set<FenceKey>();
    for (const fence of keptWithWaiters) if (fence.kind === 'native') os.waits.satisfy(fence.key, fence.currentValue(), changed);
    os.waits.refresh(changed);
    // …and carries on what those interrupts would have propagated to the other adapters (XA-04).
    os.crossAdapter.afterInterrupt(adapter, null);
  }

  /**
   * NF-20 for an adapter that goes for good (surprise removal: no reset, no restart; the header's drawing).
   * Nothing of it runs again, so every waiter on its fences ends now: those at UINT64_MAX are woken, the
   * rest (NoSignalMaxValueOnTdr) released with DEVICE_REMOVED.
   */
  removeAdapter(adapter: OsAdapter, reason: string): void {
    const os = this.os;
    requireRunning(adapter, 'removeAdapter');
    os.trace.record('fault', adapter.name, 'adapter removed', { reason });
    this.removeDevicesSignallingMax(adapter); // the driver is still there to take the CPU's writes
    adapter.state = 'stopped';
    adapter.removal = reason;
    os.port.stopDevice(adapter.index); // its engines stop, its pending interrupts are dropped
    os.lifetime.adapterReset(adapter); // its GPU work will never execute: in-flight references go
    os.waits.releaseWaitersOnAdapter(adapter, 'DEVICE_REMOVED');
  }

  /** Both removals: the adapter's devices (queues, contexts, logs, in-flight references) go, and every fence but NoSignalMaxValueOnTdr ones to UINT64_MAX. */
  private removeDevicesSignallingMax(adapter: OsAdapter): void {
    const os = this.os;
    os.logs.adapterReset(adapter);
    os.lifetime.adapterReset(adapter); // the dropped work releases its fences (deferred closes finish)
    for (const device of adapter.devices) {
      device.removed = true;
      for (const queue of device.queues) os.hwQueues.forgetQueue(queue);
      device.queues.clear();
    }
    os.contexts.onDeviceRemoved(adapter);
    const fences = [...adapter.fences.values()].sort((x, y) => x.coreFence - y.coreFence).filter((f) => !f.hasFlag('noSignalMaxValueOnTdr'));
    const kept = [...adapter.fences.values()].filter((f) => f.hasFlag('noSignalMaxValueOnTdr')).map((f) => f.label);
    if (kept.length) os.trace.record('os', 'dxgkrnl', 'NoSignalMaxValueOnTdr: not signalled', { fences: kept });
    for (let i = 0; i < fences.length; i += MAX_OBJECTS_PER_CALL) {
      const slice = fences.slice(i, i + MAX_OBJECTS_PER_CALL);
      if (this.wakeWaitersOnReset) os.signals.cpuSignal(slice, slice.map(() => UINT64_MAX));
      else {
        const native = slice.filter((f) => f.kind === 'native');
        if (native.length) updateCurrentValuesFromCpu(os.port, adapter, native, native.map(() => UINT64_MAX), false);
      }
    }
  }
}
