// The OS model, put together: Dxgkrnl and its scheduler (VidSch) as one
// object made of modules with narrow interfaces. This file builds them in
// dependency order, wires the few calls that go upward through hooks each
// lower module declares (no module imports one above it), starts adapters,
// routes the driver's callbacks, and sums the modules' counters.
//
//   objects ◀── handles, address-spaces ◀── waits ◀── events
//      ▲              ▲                        ▲
//      │              │                        ├── lifetime, gpu-rewind
//      │              │                        ├── monitored ◀── contexts
//      │              │                        ├── logs
//      │              │                        └── cross-adapter ◀── fences ◀── hw-queues
//      │              │                                 ▲              ▲
//      └──────────────┴──────────────── signals ────────┘   resets ◀── interrupts ◀── dxgkrnl (this file)
//
// The OS reaches a driver only through the driver port (src/port/), and the
// core only through each adapter's OsCore view (OS memory).

import type { CoreLayout } from '../core/bindings.js';
import type { DxgkrnlCallbacks, KernelModeDriver } from '../ddi/ddi.js';
import { WddmError, type StatusName } from '../base/errors.js';
import { deepFreeze } from '../base/freeze.js';
import type { DdiName, DriverPort } from '../port/driver-port.js';
import type { Scheduler } from '../base/scheduler.js';
import type { Trace } from '../base/trace.js';
import { DXGK_FEATURE_NATIVE_FENCE, VIDSCHCAPS } from '../base/wddm.js';
import { AddressSpaces } from './address-spaces.js';
import { KernelContexts } from './contexts.js';
import { CrossAdapterFences } from './cross-adapter.js';
import { CpuEvents } from './events.js';
import { NativeFences } from './fences.js';
import { GpuRewinds } from './gpu-rewind.js';
import { Handles } from './handles.js';
import { HwQueues } from './hw-queues.js';
import { Interrupts, type InterruptEnd } from './interrupts.js';
import { FenceLifetime, type LifetimeHooks } from './lifetime.js';
import { NativeFenceLogs } from './logs.js';
import { MonitoredFences, type LegacyCounters, type MonitoredHooks } from './monitored.js';
import { FencesWithWaiters, LAST_KERNEL_CV_VA, RowReferences, type BugCheckReport, type GlobalFence, type OsAdapter, type Process } from './objects.js';
import { FenceTable, RecentValues, ValueTable } from './tables.js';
import { AdapterFenceRows } from './fence-rows.js';
import { IntMap } from '../base/int-map.js';
import { Resets } from './resets.js';
import { CpuSignals, type CpuSignalEnd } from './signals.js';
import { Waits, type OperationHooks } from './waits.js';

export type {
  AdapterState, BugCheckReport, OsAdapter, LocalFence, OsDevice, OsAdapterHandle, OsHwQueue, HwQueueProgress, GpuProgress,
  CpuEvent, WaitStatus, WaitResult, WaiterOwner, PendingWaiter, NativeFenceMapping, SubmissionPlan, OsContext, InFlightCommand,
} from './objects.js';
export { GlobalFence, Process, rejectRepeat } from './objects.js';
export type { StatusName };

/** The OS's counters, summed from the modules that count (summary().os). */
export interface Counters {
  cpuSignals: number;
  interruptsHandled: number;
  /** Interrupts that woke no waiter and carried no cross-adapter signal on: nothing for the OS to do. */
  spuriousInterrupts: number;
  /** Interrupts that woke no waiter on their own adapter but carried a cross-adapter signal to another adapter (XA-04). */
  propagationInterrupts: number;
  waitersAdded: number;
  waitersWoken: number;
  waitsSatisfiedAtOnce: number;
  waitsTimedOut: number;
  monitoredValueUpdates: number;   // DDI calls
  monitoredValuesWritten: number;  // fences in them
  currentValueUpdates: number;     // UpdateCurrentValuesFromCpu calls
  fencesScanned: number;           // fences the OS looked at on interrupts
  fullScans: number;               // no-list interrupts
  gpuRewinds: number;              // GPU signals that lowered CurrentValue (src/os/gpu-rewind.ts)
  deferredCloses: number;          // handles closed while GPU commands still named them (src/os/lifetime.ts)
  orphanedWaits: number;           // GPU waits on destroyed fences nothing could signal: adapter reset
}

export interface OsOptions { nativeFence: boolean }

export class Dxgkrnl {
  readonly adapters: OsAdapter[] = [];
  /** Processes, handle tables, adapters and devices as handles (src/os/handles.ts). */
  readonly handles: Handles;
  /** GPU VA maps of fence storage and log buffers (src/os/address-spaces.ts). */
  readonly addressSpaces: AddressSpaces;
  /** CPU waiters and the NF-09 loop (src/os/waits.ts). */
  readonly waits: Waits;
  /** KEVENTs (src/os/events.ts). */
  readonly events: CpuEvents;
  /** In-flight GPU references, deferred close and destroy, waits nothing can satisfy (src/os/lifetime.ts). */
  readonly lifetime: FenceLifetime;
  /** GPU signals below CurrentValue: the rule and its listeners (src/os/gpu-rewind.ts). */
  readonly gpuRewinds: GpuRewinds;
  /** Monitored fences (MF-01..03, MF-06, MF-07, INT-04): src/os/monitored.ts. */
  readonly monitored: MonitoredFences;
  /** Native fence log buffers, their reader and the timeline's CPU events (src/os/logs.ts). */
  readonly logs: NativeFenceLogs;
  /** Kernel-mode contexts (MF-04, MF-05): src/os/contexts.ts. */
  readonly contexts: KernelContexts;
  /** Cross-adapter fences (XA-01..05, XA-07): src/os/cross-adapter.ts. */
  readonly crossAdapter: CrossAdapterFences;
  /** Native fences: create, share, open, close, destroy (src/os/fences.ts). */
  readonly fences: NativeFences;
  /** CPU signals (src/os/signals.ts). */
  readonly signals: CpuSignals;
  /** Hardware queues and user-mode submission (src/os/hw-queues.ts). */
  readonly hwQueues: HwQueues;
  /** Bug checks and device removal (src/os/resets.ts). */
  readonly resets: Resets;
  /** The driver's interrupts and GPU progress reports (src/os/interrupts.ts). */
  readonly interrupts: Interrupts;

  constructor(
    readonly options: OsOptions,
    readonly scheduler: Scheduler,
    readonly trace: Trace,
    readonly layout: CoreLayout,
    maxProcesses: number,
    /** The only way to a driver (src/port/driver-port.ts). */
    readonly port: DriverPort,
  ) {
    const adapters = this.adapters;
    const addressSpaces = (this.addressSpaces = new AddressSpaces(layout));
    // Upward calls go through hooks: arrow functions that find the module when they run.
    const handles = (this.handles = new Handles(adapters, port, trace, maxProcesses));
    const waits = (this.waits = new Waits(handles, port, scheduler, trace, layout));
    this.events = new CpuEvents(handles, waits, scheduler, trace);
    // The modules' hooks into each other are frozen: wired once, never replaced (the explorer's state key writes each as one word).
    const lifetime = (this.lifetime = new FenceLifetime(adapters, waits, scheduler, trace, Object.freeze<LifetimeHooks>({
      finishClose: (local) => this.fences.finishClose(local),
      membersOf: (fence) => this.crossAdapter.groupOf(fence)?.members ?? [fence],
      resetAdapter: (adapter, reason) => this.resets.removeDevice(adapter, reason),
    })));
    const gpuRewinds = (this.gpuRewinds = new GpuRewinds(trace));
    const monitored = (this.monitored = new MonitoredFences(handles, addressSpaces, waits, trace, layout, Object.freeze<MonitoredHooks>({
      attachCrossAdapter: (fence) => this.crossAdapter.attach(fence),
      afterCpuSignal: (fences) => this.crossAdapter.afterCpuSignal(fences),
      heldOn: (adapter) => this.contexts.heldOn(adapter),
      wakeContexts: (fences) => this.contexts.wake(fences),
      packetsUsing: (fence) => this.contexts.packetsUsing(fence),
      heldWaitsReleased: () => this.contexts.counters.heldWaitsReleased,
    })));
    const logs = (this.logs = new NativeFenceLogs({ adapters, handles, addressSpaces, waits, port, scheduler, trace, layout }));
    const contexts = (this.contexts = new KernelContexts({
      handles, port, monitored, scheduler, trace,
      bugCheckAdapter: (adapter, code, message) => this.resets.bugCheckAdapter(adapter, code, message),
    }));
    const crossAdapter = (this.crossAdapter = new CrossAdapterFences({
      adapters, addressSpaces, waits, monitored, port, scheduler, trace, layout,
      createGlobalOn: (process, device, type, flags, initialValue, privateData, name, crossRoot) =>
        this.fences.createGlobalOn(process, device, type, flags, initialValue, privateData, name, crossRoot),
      packetsUsing: (fence) => contexts.packetsUsing(fence),
    }));
    const fences = (this.fences = new NativeFences({
      handles, addressSpaces, waits, lifetime, logs, crossAdapter, monitored, port, trace, layout, nativeFenceFeature: options.nativeFence, adapters,
    }));
    const signals = (this.signals = new CpuSignals({ handles, waits, monitored, crossAdapter, port, trace }));
    const hwQueues = (this.hwQueues = new HwQueues({ handles, fences, logs, lifetime, port, trace }));
    const resets = (this.resets = new Resets({ port, waits, lifetime, logs, contexts, hwQueues, signals, monitored, crossAdapter, scheduler, trace }));
    this.interrupts = new Interrupts({ waits, logs, monitored, crossAdapter, contexts, hwQueues, lifetime, gpuRewinds, resets, trace });
    waits.hooks = Object.freeze<OperationHooks>({
      ended: (end) => {
        if (end.owner === 'interrupts') {
          const e = end as InterruptEnd;
          if (e.fromLogs) this.interrupts.finishLogInterrupt(e.adapter, e.wokenBefore);
          else this.interrupts.finishInterrupt(e.adapter, e.data, e.fences, e.wokenBefore);
        }
        else this.signals.finishCpuSignal(end as CpuSignalEnd);
      },
      notify: (work, operation) => this.crossAdapter.notify(work, operation),
      readLogs: (work, operation) => this.logs.service(work.adapter, [...work.queues], work.reason, true, operation),
      logFallback: (work, operation) => this.logs.fallback(work.adapter, work.queue, operation),
    });
  }

  get processes(): readonly Process[] { return this.handles.processes; }
  get system(): Process { return this.handles.system; }
  get bugChecks(): readonly BugCheckReport[] { return this.resets.bugChecks; }

  // ── adapters ──

  /**
   * Starts an adapter: its driver goes to the port, then DxgkDdiStartDevice and the caps check of
   * CAP-02. Throws when the driver breaks it.
   */
  startAdapter(adapter: Omit<OsAdapter, 'currentValues' | 'caps' | 'nativeFence' | 'state' | 'fences' | 'kernelCurrentValueVas' | 'byGlobalHandle' | 'destroyedGlobalHandles' | 'withWaiters' | 'devices' | 'rows' | 'rowReferences' | 'extendMonitoredValues' | typeof LAST_KERNEL_CV_VA>,
               driver: KernelModeDriver): OsAdapter {
    const callbacks = this.callbacksFor(adapter.index, adapter.name);
    this.port.attach({
      index: adapter.index, name: adapter.name, driver,
      onDriverFault: (ddi: DdiName, error: unknown) => this.resets.bugCheckAdapter(this.adapters[adapter.index], 'DRIVER_FAULT', `driver of "${adapter.name}" failed in ${ddi}: ${error instanceof Error ? error.message : String(error)}`),
    });
    const caps = this.port.startDevice(adapter.index, callbacks);
    const advertises = (caps.VidSchCaps & VIDSCHCAPS.NativeGpuFence) !== 0;
    this.trace.record('os', 'dxgkrnl', 'adapter caps', {
      adapter: adapter.name, NativeGpuFence: advertises,
      OptimizedNativeFenceSignaledInterrupt: (caps.VidSchCaps & VIDSCHCAPS.OptimizedNativeFenceSignaledInterrupt) !== 0,
      No64BitAtomics: (caps.VidSchCaps & VIDSCHCAPS.No64BitAtomics) !== 0,
    });
    if (advertises && !this.options.nativeFence) {
      const message = `adapter "${adapter.name}" failed to start: its driver advertises DXGK_VIDSCHCAPS::NativeGpuFence ` +
        `but the OS has not enabled DXGK_FEATURE_NATIVE_FENCE (os.nativeFence is false). A driver must ask ` +
        `IsFeatureEnabled → QueryFeatureInterface → GetOSCaps before advertising the cap.`;
      this.trace.record('fault', 'dxgkrnl', 'adapter start failed', { adapter: adapter.name, reason: 'NativeGpuFence advertised while the feature is disabled' });
      throw new WddmError('NOT_SUPPORTED', message, { parameter: `adapters[${adapter.index}].caps.nativeGpuFence`, value: true, expected: 'a driver that queries the OS feature before advertising NativeGpuFence' });
    }
    if (advertises && (caps.VidSchCaps & VIDSCHCAPS.No64BitAtomics) !== 0) {
      const message = `adapter "${adapter.name}" failed to start: its driver advertises DXGK_VIDSCHCAPS::NativeGpuFence ` +
        `together with No64BitAtomics. A native fence's CurrentValue is a 64-bit value that the GPU's CMP compares and user mode ` +
        `reads directly, with no OS in between to extend a 32-bit write (MF-07 covers monitored fences, which the OS reads): ` +
        `a GPU that writes only 32 bits atomically must not advertise NativeGpuFence.`;
      this.trace.record('fault', 'dxgkrnl', 'adapter start failed', { adapter: adapter.name, reason: 'NativeGpuFence advertised with No64BitAtomics' });
      throw new WddmError('NOT_SUPPORTED', message, { parameter: `adapters[${adapter.index}].caps`, value: 'NativeGpuFence | No64BitAtomics', expected: 'a driver that advertises NativeGpuFence only with 64-bit atomic GPU writes' });
    }
    // Every field written here, in one order, those set later (bugCheck, systemPages) included: each adapter record
    // then has one shape. Made by spreading `adapter` and gaining fields as it went, the records of a process's
    // machines had many (19 for 31 machines), and every load of an adapter's field on the CPU signal's path was megamorphic.
    // The caps are the OS's own copy of what the driver reported, frozen: constant for the adapter's life (the
    // explorer's state key writes a frozen object of the machine as built as one word: src/explore/host-walk.ts).
    const fences = new FenceTable<GlobalFence>();
    const full: OsAdapter = {
      index: adapter.index, name: adapter.name, core: adapter.core, memory: adapter.memory, currentValues: new BigUint64Array(adapter.memory.buffer), caps: deepFreeze(structuredClone(caps)), nativeFence: advertises,
      integrated: adapter.integrated, engines: adapter.engines, state: 'running', bugCheck: undefined, removal: undefined,
      fences, rows: undefined!, kernelCurrentValueVas: new ValueTable(), systemPages: undefined, byGlobalHandle: new IntMap(),
      destroyedGlobalHandles: new RecentValues(4096), withWaiters: new FencesWithWaiters(fences), devices: new Set(),
      rowReferences: undefined!, extendMonitoredValues: true, [LAST_KERNEL_CV_VA]: { of: -1, va: 0n },
    };
    // The fences' one store (src/os/fence-rows.ts), which the table makes views of and the token handles' references count in.
    const rows = new AdapterFenceRows(full);
    full.rows = fences.deferred = rows;
    full.rowReferences = new RowReferences(rows);
    this.adapters.push(full);
    return full;
  }

  /**
   * From now on each OS operation (a wait's waiter add, an interrupt served, a CPU signal, and the
   * NF-09 loop each ends with) runs in steps, one scheduler event each, under the OS's lock
   * (src/os/waits.ts; the machine does this for schedule.osGranularity 'step'). While
   * `lockHeld`, no other OS operation may start: the machine's scheduler gate holds them back.
   */
  runOperationsInSteps(): void { this.waits.stepwise = true; }
  get lockHeld(): boolean { return this.waits.operation !== undefined; }

  /** What the OS offers a driver: the feature interface, and each callback routed to the module that handles it. */
  private callbacksFor(index: number, name: string): DxgkrnlCallbacks {
    return {
      IsFeatureEnabled: (featureId) => {
        const enabled = featureId === DXGK_FEATURE_NATIVE_FENCE && this.options.nativeFence;
        this.trace.record('cb', name, 'DxgkCbIsFeatureEnabled', { FeatureId: featureId, Enabled: enabled, Version: enabled ? 1 : 0 });
        return { Enabled: enabled, Version: enabled ? 1 : 0 };
      },
      QueryFeatureInterface: (featureId, version) => {
        const ok = featureId === DXGK_FEATURE_NATIVE_FENCE && this.options.nativeFence && version === 1;
        this.trace.record('cb', name, 'DxgkCbQueryFeatureInterface', { FeatureId: featureId, Version: version, Status: ok ? 'STATUS_SUCCESS' : 'STATUS_NOT_SUPPORTED' });
        if (!ok) return null;
        return {
          GetOSCaps: () => {
            const caps = Object.freeze({ SupportOptimizedDefaultFenceType: true, SupportIntraGpuFenceType: true });
            this.trace.record('cb', name, 'DXGKCBINT_FEATURE_NATIVEFENCE_1::GetOSCaps', caps);
            return caps;
          },
        };
      },
      NotifyInterrupt: (data) => this.interrupts.notifyInterrupt(this.adapters[index], data),
      NotifyDmaCompleted: (data) => this.contexts.onDmaCompleted(this.adapters[index], data),
      NotifyMonitoredFenceSignaled: (data) => this.interrupts.onMonitoredFenceSignaled(this.adapters[index], data),
      NotifyDmaPageFaulted: (data) => this.interrupts.onDmaPageFaulted(this.adapters[index], data),
      NotifyGpuProgress: (data) => this.interrupts.onGpuProgress(this.adapters[index], data),
      QueryGpuProgressStretch: (data) => this.interrupts.acceptsStretch(this.adapters[index], data),
      NotifyGpuProgressStretch: (data) => this.interrupts.onGpuProgressStretch(this.adapters[index], data),
      NotifyDoorbellFallback: (data) => this.crossAdapter.onDoorbellFallback(this.adapters[index], data),
    };
  }

  // ── counters, summed from the modules that count ──

  get counters(): Counters {
    const w = this.waits.counters, i = this.interrupts.counters, l = this.lifetime.counters;
    return {
      cpuSignals: this.signals.counters.cpuSignals,
      interruptsHandled: i.interruptsHandled, spuriousInterrupts: i.spuriousInterrupts, propagationInterrupts: i.propagationInterrupts,
      waitersAdded: w.waitersAdded, waitersWoken: w.waitersWoken, waitsSatisfiedAtOnce: w.waitsSatisfiedAtOnce, waitsTimedOut: w.waitsTimedOut,
      monitoredValueUpdates: this.port.totalCalls('DxgkDdiUpdateMonitoredValues'),
      monitoredValuesWritten: this.port.totalFences('DxgkDdiUpdateMonitoredValues'),
      currentValueUpdates: this.port.totalCalls('DxgkDdiUpdateCurrentValuesFromCpu'),
      fencesScanned: i.fencesScanned + this.logs.fallbackFencesScanned, fullScans: i.fullScans,
      gpuRewinds: this.gpuRewinds.count, deferredCloses: l.deferredCloses, orphanedWaits: l.orphanedWaits,
    };
  }

  /** Monitored fences and kernel-mode contexts: the legacy model's interrupts, scans and round trips (summary().legacy). */
  get legacyCounters(): LegacyCounters {
    const c = this.contexts.counters, m = this.monitored.counters;
    return {
      dmaCompletedInterrupts: c.dmaCompletedInterrupts, monitoredFenceInterrupts: this.interrupts.counters.monitoredFenceInterrupts,
      scans: m.scans, legacyScans: m.legacyScans, fencesExamined: m.fencesExamined, gpuWaitsHeld: c.gpuWaitsHeld,
      heldWaitsReleased: c.heldWaitsReleased, softwareSignals: c.softwareSignals, commandBuffers: c.commandBuffers,
    };
  }
}
