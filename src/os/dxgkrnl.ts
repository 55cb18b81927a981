// The OS model: Dxgkrnl and its scheduler (VidSch) for native GPU fences.
//
// It owns processes, handles, devices, sync objects and CPU waiters, and it
// calls each adapter's driver only through KernelModeDriver (src/driver/ddi.ts),
// recording every DDI call with its arguments in the trace first.
//
// State of a native fence, as the OS sees it:
//
//   created ──Create+Open DDIs──▶ live ──last local handle closed, no NT handle──▶ Close+Destroy DDIs ──▶ gone
//                                  │
//     CPU waiter added/retired ────┤ MonitoredValue = min(waited) − 1, or UINT64_MAX   (NF-02)
//                                  │   → UpdateMonitoredValues (batched) → resample CurrentValue → satisfy…
//     interrupt (list / no list) ──┤ satisfy waiters of listed (or all) fences, same loop   (NF-09)
//     CPU signal ──────────────────┘ UpdateCurrentValuesFromCpu (batched) → satisfy, same loop  (NF-07)
//
// The loop "satisfy → new MonitoredValue → driver → resample" runs until no
// waiter changes; each turn retires at least one wait block, so it ends.
//
// Waiter bookkeeping lives in the core (one min-heap per fence, a wait block
// per (waiter, fence)); this file keeps only what a waiter does when woken.

import type { CoreLayout, OsCore, WasmMemory } from '../core.js';
import { u64 as asU64 } from '../core.js';
import {
  HWQUEUE_PRIVATE_DRIVER_DATA_BYTES,
  type DriverStartResult, type KernelModeDriver, type NativeFenceCaps, type NativeFenceSignaledInterrupt, type DxgkrnlCallbacks,
  type UserModeCommand, type GpuProgressReport, type DmaPageFaultedInterrupt,
} from '../driver/ddi.js';
import { check, invalid, WddmError, show, type StatusName } from '../errors.js';
import type { DriverPort, DdiName } from '../port/driver-port.js';
import type { Scheduler, ScheduledEvent } from '../scheduler.js';
import type { Trace } from '../trace.js';
import {
  DXGK_FEATURE_NATIVE_FENCE, KERNEL_VA_BASE, KMTQAITYPE_WDDM_3_1_CAPS, MAX_OBJECTS_PER_CALL, NATIVE_FENCE_TYPE, SYNC_FLAG_BITS,
  UINT64_MAX, USER_VA_BASE, VIDSCHCAPS, hex, syncFlagsValue, type NativeFenceTypeName, type SyncObjectFlags,
  type SyncObjectFlagName,
} from '../wddm.js';
import * as v from '../validate.js';
import { MonitoredFences, observeMonitoredValue } from './monitored.js';
import { KernelContexts, type OsContext } from './contexts.js';
import { NativeFenceLogs } from './logs.js';
import { CrossAdapterFences } from './cross-adapter.js';
import { FenceLifetime, type InFlightCommand, type QueueReferences } from './lifetime.js';
import { GpuRewinds } from './gpu-rewind.js';

// ───────────────────────────── objects ─────────────────────────────

export type AdapterState = 'running' | 'stopped';

export interface BugCheckReport {
  adapter: string;
  code: string;
  message: string;
  timeNs: number;
}

export interface OsAdapter {
  index: number;
  name: string;
  /** The OS's view of the adapter's core instance: OS memory only (src/core.ts). The driver is reached through the port. */
  core: OsCore;
  memory: WasmMemory;
  caps: DriverStartResult;
  nativeFence: boolean;
  integrated: boolean;
  engines: number;
  state: AdapterState;
  bugCheck?: BugCheckReport;
  /** Live fences by core id, and by the driver's global handle. */
  fences: Map<number, GlobalFence>;
  byGlobalHandle: Map<number, GlobalFence>;
  destroyedGlobalHandles: Set<number>;
  /** Fences that currently have CPU waiters (scanned on a no-list interrupt). */
  withWaiters: Set<GlobalFence>;
  devices: Set<OsDevice>;
}

export class GlobalFence {
  monitoredValue = UINT64_MAX;
  readonly locals = new Set<LocalFence>();
  ntReferences = 0;
  /** Storage freed, Destroy DDI called. */
  destroyed = false;
  /** No open handle is left but GPU commands in flight still name it: storage kept (src/os/lifetime.ts). */
  destroyPending = false;
  /** Submitted GPU waits / signals naming it that have not executed yet (any process, any queue). */
  gpuWaitsInFlight = 0;
  gpuSignalsInFlight = 0;
  hGlobal = 0;
  /** 'monitored': a WDDM 2.x monitored fence (src/os/monitored.ts): no MonitoredValue, no native DDI. */
  kind: 'native' | 'monitored' = 'native';
  constructor(
    readonly adapter: OsAdapter,
    readonly coreFence: number,
    readonly type: NativeFenceTypeName,
    readonly flags: number,
    readonly shareable: boolean,
    readonly cvPhys: number,
    readonly mvPhys: number,
    readonly systemCvVa: bigint,
    readonly systemMvVa: bigint,
    readonly label: string,
  ) {}
  private cvVa?: bigint;
  private mvVa?: bigint;
  get kernelCvVa(): bigint { return (this.cvVa ??= KERNEL_VA_BASE + BigInt(this.cvPhys)); }
  get kernelMvVa(): bigint { return (this.mvVa ??= KERNEL_VA_BASE + BigInt(this.mvPhys)); }
  hasFlag(name: SyncObjectFlagName): boolean { return (this.flags & (1 << SYNC_FLAG_BITS[name])) !== 0; }
  currentValue(): bigint {
    const raw = asU64(this.adapter.core.cpuReadCurrentValue(this.coreFence));
    return this.kind === 'monitored' ? observeMonitoredValue(this, raw) : raw;
  }
}

export interface LocalFence {
  kind: 'syncObject';
  process: Process;
  handle: number;
  global: GlobalFence;
  device: OsDevice;
  hLocal: number;
  cvGpuVa: bigint;
  mvGpuVa: bigint;
  cvCpuVa: bigint;
  /** Submitted GPU commands written through this handle that have not executed yet (src/os/lifetime.ts). */
  gpuReferences: number;
  /** The process closed the handle; DxgkDdiCloseNativeFence and the unmaps wait for gpuReferences to drain. */
  closing: boolean;
  /** A submitted GPU command named this handle: its queues' logs may name it (read before the close finishes). */
  usedByGpu: boolean;
}

export interface OsDevice { kind: 'device'; handle: number; process: Process; adapter: OsAdapter; removed: boolean; queues: Set<OsHwQueue> }
export interface OsAdapterHandle { kind: 'adapter'; handle: number; adapter: OsAdapter }
export interface OsHwQueue {
  kind: 'hwQueue'; handle: number; device: OsDevice; hHwQueue: number; engine: number;
  progress?: LocalFence; progressValue: bigint; label: string;
  /** What DxgkDdiCreateHwQueue left for the driver's user-mode half (user mode got a copy with the handle). */
  privateDriverData: Uint8Array;
  /** Submitted wait / signal commands not yet executed, in ring order (src/os/lifetime.ts). */
  references: QueueReferences;
  /** What the OS knows of the queue on the GPU, from the driver's progress reports (NotifyGpuProgress). */
  gpu: HwQueueProgress;
}

/** A hardware queue as the OS knows it from GPU progress reports: no peeking at the ring. */
export interface HwQueueProgress {
  /** Commands submitted and not yet executed (waits, signals, work). */
  inRing: number;
  /** The wait the queue is blocked on, if it is. */
  blocked?: { local: LocalFence; value: bigint };
}

/** A GPU progress report resolved to the OS's objects (what the OS's modules listen to). */
export interface GpuProgress {
  adapter: OsAdapter;
  report: GpuProgressReport;
  /** The hardware queue or the kernel-mode context that executed the command (undefined: not one the OS made). */
  queue?: OsHwQueue;
  context?: OsContext;
  /** The handle the command named, and its fence (waits, signals, fence writes; undefined when the handle is gone). */
  local?: LocalFence;
  fence?: GlobalFence;
}
export interface CpuEvent { kind: 'event'; handle: number; name: string; signaled: boolean; signaledAtNs?: number; waiters: (() => void)[] }
interface NtHandle { kind: 'nt'; handle: number; global: GlobalFence }
type HandleObject = OsDevice | OsAdapterHandle | LocalFence | OsHwQueue | CpuEvent | OsContext;
const KIND_NAMES: Record<HandleObject['kind'], string> = {
  device: 'device (hDevice)', adapter: 'adapter (hAdapter)', syncObject: 'sync object (hSyncObject)',
  hwQueue: 'hardware queue (hHwQueue)', event: 'CPU event (hEvent)', context: 'kernel-mode context (hContext)',
};

// ───────────────────────────── waits ─────────────────────────────

export type WaitStatus = 'SUCCESS' | 'TIMEOUT' | 'DEVICE_REMOVED' | 'ADAPTER_STOPPED' | 'OBJECT_DESTROYED';
export interface WaitResult {
  status: WaitStatus;
  /** Virtual time the wait completed. */
  timeNs: number;
  /** true when it was satisfied at the call and no waiter was added (NF-08). */
  immediate: boolean;
  /** wait-any: index of the object that satisfied it. */
  index?: number;
}

interface WaitEntry { fence: GlobalFence; value: bigint; waitBlock: number; done: boolean }
/**
 * Who started a CPU wait, for tools (machine.stuck()): the process's name and,
 * from the runtime, the object behind it (a CpuThread, or the CpuEvent a
 * waitWithEvent sets) with its name.
 */
export interface WaiterOwner { process: string; tag?: object; thread?: string; event?: string }
class Waiter {
  timeout?: ScheduledEvent;
  timeoutNs?: number;
  completed = false;
  remaining: number;
  constructor(
    readonly id: number,
    readonly label: string,
    readonly mode: 'all' | 'any',
    readonly entries: WaitEntry[],
    readonly onComplete: (result: WaitResult) => void,
    readonly owner: WaiterOwner,
  ) { this.remaining = entries.filter((e) => !e.done).length; }
}

/** A CPU waiter still waiting, as tools see it (machine.stuck()). */
export interface PendingWaiter {
  id: number;
  label: string;
  mode: 'all' | 'any';
  owner: WaiterOwner;
  /** Has a timeout on its way (it will end on its own). */
  timed: boolean;
  /** What it still waits for. */
  waits: { fence: GlobalFence; value: bigint }[];
}

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

// ───────────────────────────── processes ─────────────────────────────

export class Process {
  readonly handles = new Map<number, HandleObject>();
  readonly ntHandles = new Map<number, NtHandle>();
  readonly retired = new Set<number>();
  /**
   * Sync object handles the process closed whose close has not finished (GPU
   * commands still name them, or their log entries are being read): log
   * entries written through them still resolve here.
   */
  readonly closing = new Map<number, LocalFence>();
  private nextHandle = 1;
  private nextNt = 1;
  /** Per adapter: physical page → { GPU VA, references }. */
  readonly gpuMappings = new Map<number, Map<number, { va: bigint; references: number }>>();
  /** Physical page → { user CPU VA (read-only), references }. */
  readonly userMappings = new Map<number, { va: bigint; references: number }>();
  private nextUserPage = 0n;

  constructor(readonly os: Dxgkrnl, readonly slot: number, readonly name: string) {}

  allocHandle(): number { return 0x4000_0000 + this.slot * 0x10_0000 + this.nextHandle++; }
  allocNtHandle(): number { return 0x8000_0000 + this.slot * 0x10_0000 + 4 * this.nextNt++; }

  mapUser(phys: number): bigint {
    const page = phys & ~0xfff;
    let m = this.userMappings.get(page);
    if (!m) { m = { va: USER_VA_BASE + this.nextUserPage++ * 0x1000n, references: 0 }; this.userMappings.set(page, m); }
    m.references++;
    return m.va + BigInt(phys & 0xfff);
  }
  unmapUser(phys: number): void {
    const page = phys & ~0xfff;
    const m = this.userMappings.get(page);
    if (m && --m.references === 0) this.userMappings.delete(page);
  }
  /** Physical address behind a user VA of this process (read-only mappings only). */
  translateUser(va: bigint): number | undefined {
    for (const [page, m] of this.userMappings) if (va >= m.va && va < m.va + 0x1000n) return page + Number(va - m.va);
    return undefined;
  }
}

// ───────────────────────────── the OS ─────────────────────────────

export interface OsOptions { nativeFence: boolean }

export class Dxgkrnl {
  readonly adapters: OsAdapter[] = [];
  readonly processes: Process[] = [];
  readonly bugChecks: BugCheckReport[] = [];
  readonly counters: Counters = {
    cpuSignals: 0, interruptsHandled: 0, spuriousInterrupts: 0, propagationInterrupts: 0, waitersAdded: 0, waitersWoken: 0,
    waitsSatisfiedAtOnce: 0, waitsTimedOut: 0, monitoredValueUpdates: 0, monitoredValuesWritten: 0,
    currentValueUpdates: 0, fencesScanned: 0, fullScans: 0, gpuRewinds: 0, deferredCloses: 0, orphanedWaits: 0,
  };
  private readonly waiters = new Map<number, Waiter>();
  private nextWaiter = 1;
  readonly system: Process;
  /** Monitored fences (MF-01..03, MF-06, MF-07, INT-04) and kernel-mode contexts (MF-04, MF-05). */
  readonly monitored = new MonitoredFences(this);
  readonly contexts = new KernelContexts(this);
  /** Native fence log buffers, their reader and the timeline's CPU events (src/os/logs.ts). */
  readonly logs = new NativeFenceLogs(this);
  /** Cross-adapter fences (XA-01..04, XA-07): src/os/cross-adapter.ts. */
  readonly crossAdapter = new CrossAdapterFences(this);
  /** In-flight GPU references, deferred close and destroy, waits nothing can satisfy: src/os/lifetime.ts. */
  readonly lifetime = new FenceLifetime(this);
  /** GPU signals below CurrentValue: the rule and its listeners (src/os/gpu-rewind.ts). */
  readonly gpuRewinds = new GpuRewinds(this);
  /** Other listeners of GPU progress (VidMm's data movement), after the OS's own. */
  readonly progressListeners: ((progress: GpuProgress) => void)[] = [];

  constructor(
    readonly options: OsOptions,
    readonly scheduler: Scheduler,
    readonly trace: Trace,
    readonly layout: CoreLayout,
    readonly maxProcesses: number,
    /** The only way to a driver (src/port/driver-port.ts). */
    readonly port: DriverPort,
  ) {
    this.system = new Process(this, 0, 'System');
    this.processes.push(this.system);
    // The OS's scheduler events (src/scheduler.ts lists every kind).
    scheduler.register('dxgkrnl', (event) => {
      if (event.kind !== 'wait-timeout') throw new Error(`dxgkrnl: no scheduler event of kind "${event.kind}"`);
      this.waitTimedOut(event);
    });
    scheduler.register('dxgkrnl/logs', (event) => this.logs.onEvent(event));
    scheduler.register('dxgkrnl/lifetime', (event) => this.lifetime.onEvent(event));
  }

  // ── adapters ──

  /**
   * Starts an adapter: its driver goes to the port, then DxgkDdiStartDevice and the caps check of
   * CAP-02. Throws when the driver breaks it.
   */
  startAdapter(adapter: Omit<OsAdapter, 'caps' | 'nativeFence' | 'state' | 'fences' | 'byGlobalHandle' | 'destroyedGlobalHandles' | 'withWaiters' | 'devices'>,
               driver: KernelModeDriver): OsAdapter {
    const callbacks = this.callbacksFor(adapter.index, adapter.name);
    this.port.attach({
      index: adapter.index, name: adapter.name, driver,
      onDriverFault: (ddi: DdiName, error: unknown) => this.bugCheckAdapter(this.adapters[adapter.index], 'DRIVER_FAULT', `driver of "${adapter.name}" failed in ${ddi}: ${error instanceof Error ? error.message : String(error)}`),
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
    const full: OsAdapter = {
      ...adapter, caps, nativeFence: advertises, state: 'running', fences: new Map(), byGlobalHandle: new Map(),
      destroyedGlobalHandles: new Set(), withWaiters: new Set(), devices: new Set(),
    };
    this.adapters.push(full);
    return full;
  }

  /** DXGK_INTERRUPT_DMA_PAGE_FAULTED: a timeout detection and recovery, the devices are removed. */
  private dmaPageFaulted(adapter: OsAdapter, data: DmaPageFaultedInterrupt): void {
    this.trace.record('interrupt', adapter.name, 'DXGK_INTERRUPT_DMA_PAGE_FAULTED', { NodeOrdinal: data.NodeOrdinal, hQueue: data.hQueue, message: data.Message });
    if (adapter.state === 'running') this.removeDevice(adapter, `GPU fault: ${data.Message}`);
  }

  /** Per adapter: the driver's hHwQueue → the OS's queue (progress reports name queues by it). */
  private readonly queuesByDriverHandle = new Map<OsAdapter, Map<number, OsHwQueue>>();

  /**
   * NotifyGpuProgress: what a queue or context executed. The OS keeps its picture of the queue
   * (commands in the ring, the wait it is blocked on), then tells its listeners: fence lifetime,
   * GPU rewinds, VidMm's data movement, cross-adapter wake latency.
   */
  private gpuProgress(adapter: OsAdapter, report: GpuProgressReport): void {
    if (adapter.state !== 'running') return;
    let queue: OsHwQueue | undefined, context: OsContext | undefined, process: Process | undefined;
    if (report.QueueKind === 'HW_QUEUE') {
      queue = this.queuesByDriverHandle.get(adapter)?.get(report.hQueue);
      process = queue?.device.process;
    } else {
      context = this.contexts.byDriverHandle(adapter, report.hQueue);
      process = context?.device.process;
    }
    let local: LocalFence | undefined;
    if (process && report.hSyncObject) {
      const object = process.handles.get(report.hSyncObject) ?? process.closing.get(report.hSyncObject);
      if (object?.kind === 'syncObject') local = object;
    }
    if (queue) {
      const op = report.Operation;
      if (op === 'WAIT_BLOCKED') { if (local) queue.gpu.blocked = { local, value: report.Value }; }
      else {
        if (op === 'WAIT_UNBLOCKED') queue.gpu.blocked = undefined;
        if (queue.gpu.inRing > 0) queue.gpu.inRing--;
      }
    }
    const progress: GpuProgress = { adapter, report, queue, context, local, fence: local?.global };
    this.lifetime.onProgress(progress);
    this.gpuRewinds.observe(progress);
    for (const listener of this.progressListeners) listener(progress);
    this.crossAdapter.onProgress(progress);
  }

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
            const caps = { SupportOptimizedDefaultFenceType: true, SupportIntraGpuFenceType: true };
            this.trace.record('cb', name, 'DXGKCBINT_FEATURE_NATIVEFENCE_1::GetOSCaps', caps);
            return caps;
          },
        };
      },
      NotifyInterrupt: (data) => this.notifyInterrupt(this.adapters[index], data),
      NotifyDmaCompleted: (data) => this.contexts.onDmaCompleted(this.adapters[index], data),
      NotifyMonitoredFenceSignaled: (data) => this.monitored.onMonitoredFenceSignaled(this.adapters[index], data),
      NotifyDmaPageFaulted: (data) => this.dmaPageFaulted(this.adapters[index], data),
      NotifyGpuProgress: (data) => this.gpuProgress(this.adapters[index], data),
      NotifyDoorbellFallback: (data) => this.crossAdapter.onDoorbellFallback(this.adapters[index], data),
    };
  }

  // ── processes and handles ──

  createProcess(name: string): Process {
    if (typeof name !== 'string' || !name) throw invalid('name', name, 'a non-empty process name');
    if (this.processes.length >= this.maxProcesses) {
      throw new WddmError('INSUFFICIENT_RESOURCES', `cannot create process "${name}": the machine holds at most ${this.maxProcesses - 1} processes (limits.processes)`);
    }
    const process = new Process(this, this.processes.length, name);
    this.processes.push(process);
    this.trace.record('runtime', name, 'process created', { slot: process.slot });
    return process;
  }

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
    this.requireRunning(adapter, 'hAdapter');
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
    this.requireRunning(adapter, 'hAdapter');
    const device: OsDevice = { kind: 'device', handle: process.allocHandle(), process, adapter, removed: false, queues: new Set() };
    process.handles.set(device.handle, device);
    adapter.devices.add(device);
    this.trace.record('runtime', process.name, 'D3DKMTCreateDevice', { hAdapter: a.hAdapter as number, hDevice: device.handle });
    return device.handle;
  }

  // ── CPU events (KEVENT, manual reset) ──

  /** A CPU event of `process`, not set. Returns hEvent. */
  createEvent(process: Process, name: string): number {
    return this.newEvent(process, name).handle;
  }

  /** A new event in `process`'s handle table (the kernel's own, e.g. VidMm's "reclaimed" event). */
  newEvent(process: Process, name: string): CpuEvent {
    const event: CpuEvent = { kind: 'event', handle: process.allocHandle(), name, signaled: false, waiters: [] };
    process.handles.set(event.handle, event);
    return event;
  }

  isEventSet(process: Process, hEvent: unknown): boolean { return this.resolve(process, hEvent, 'event', 'hEvent').signaled; }

  /**
   * Events are manual-reset (a KEVENT NotificationEvent): once set, an event stays set, every thread
   * waiting on it wakes and later waits return at once, until resetEvent clears it. Resetting an
   * event that is not set does nothing; a wait with hAsyncEvent still pending sets it again when satisfied.
   */
  resetEvent(process: Process, hEvent: unknown): void {
    const event = this.resolve(process, hEvent, 'event', 'hEvent');
    if (!event.signaled) return;
    event.signaled = false;
    event.signaledAtNs = undefined;
    this.trace.record('cpu', process.name, 'KEVENT reset', { event: event.name });
  }

  /** Sets an event: its waiters wake. `actor`: who the trace names (none: no trace line, the kernel's own events). */
  setEvent(event: CpuEvent, actor: string | undefined): void {
    if (event.signaled) return;
    event.signaled = true;
    event.signaledAtNs = this.scheduler.nowNs;
    if (actor !== undefined) this.trace.record('cpu', actor, 'KEVENT signaled', { event: event.name });
    for (const wake of event.waiters.splice(0)) wake();
  }

  /**
   * A wait on an event: `wake` runs when it is set, unless it already is (then nothing is kept and
   * `set` is true). Returns the event (read-only for the caller: tools name it).
   */
  waitForEvent(process: Process, hEvent: unknown, wake: () => void): { set: boolean; event: CpuEvent } {
    const event = this.resolve(process, hEvent, 'event', 'hEvent');
    if (event.signaled) return { set: true, event };
    event.waiters.push(wake);
    return { set: false, event };
  }

  /**
   * D3DKMTWaitForSynchronizationObjectFromCpu with hAsyncEvent: returns at once; the kernel sets the
   * event when the wait is satisfied.
   */
  waitWithEvent(process: Process, args: unknown): void {
    const a = v.options(args, 'waitWithEvent(args)', ['objects', 'values', 'waitAny', 'timeoutNs', 'hDevice', 'hAsyncEvent']);
    const { hAsyncEvent, ...rest } = a;
    const event = this.resolve(process, hAsyncEvent, 'event', 'hAsyncEvent');
    this.beginWait(process, rest, `event ${event.name}`, (result) => {
      if (result.status === 'SUCCESS') this.setEvent(event, process.name);
    }, { tag: event, event: event.name });
  }

  resolve<K extends HandleObject['kind']>(process: Process, handle: unknown, kind: K, parameter: string): Extract<HandleObject, { kind: K }> {
    if (typeof handle !== 'number' || !Number.isInteger(handle) || handle <= 0) {
      throw invalid(parameter, handle, `a ${KIND_NAMES[kind]} handle (a positive integer) made by process "${process.name}"`, 'INVALID_HANDLE');
    }
    const object = process.handles.get(handle);
    if (!object) {
      const ownerSlot = Math.floor((handle - 0x4000_0000) / 0x10_0000);
      const owner = handle >= 0x4000_0000 && handle < 0x8000_0000 ? this.processes[ownerSlot] : undefined;
      if (owner && owner !== process) {
        throw new WddmError('INVALID_HANDLE', `${parameter} ${hex(handle)} belongs to process "${owner.name}", not "${process.name}": a handle is valid only in the process that made it`,
          { parameter, value: handle, expected: `a handle of process "${process.name}"` });
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

  requireRunning(adapter: OsAdapter, parameter: string): void {
    if (adapter.state === 'stopped') {
      throw new WddmError('GRAPHICS_ADAPTER_STOPPED', `${parameter}: adapter "${adapter.name}" is stopped after a bug check (${adapter.bugCheck?.message ?? 'unknown'})`,
        { parameter, expected: 'an object of a running adapter' });
    }
  }

  requireDevice(process: Process, hDevice: unknown, parameter: string): OsDevice {
    const device = this.resolve(process, hDevice, 'device', parameter);
    this.requireRunning(device.adapter, parameter);
    if (device.removed) {
      throw new WddmError('DEVICE_REMOVED', `${parameter} ${hex(device.handle)}: the device was removed (GPU reset); create a new device`,
        { parameter, value: device.handle, expected: 'a device that was not removed' });
    }
    return device;
  }

  // ── GPU VA mappings (VidMm's part) ──

  mapGpu(process: Process, adapter: OsAdapter, phys: number): bigint {
    let pages = process.gpuMappings.get(adapter.index);
    if (!pages) process.gpuMappings.set(adapter.index, (pages = new Map()));
    const page = phys & ~0xfff;
    let m = pages.get(page);
    if (!m) {
      const va = asU64(adapter.core.gpuVaMap(process.slot, page));
      if (va === 0n) check(-11, `mapping a fence page into process "${process.name}" on "${adapter.name}"`);
      m = { va, references: 0 };
      pages.set(page, m);
    }
    m.references++;
    return m.va + BigInt(phys & 0xfff);
  }

  unmapGpu(process: Process, adapter: OsAdapter, phys: number): void {
    const pages = process.gpuMappings.get(adapter.index);
    const page = phys & ~0xfff;
    const m = pages?.get(page);
    if (!m) return;
    if (--m.references === 0) {
      adapter.core.gpuVaUnmap(process.slot, m.va);
      pages!.delete(page);
    }
  }

  // ── DDI wrappers: every call traced with its arguments ──

  ddiUpdateMonitoredValues(adapter: OsAdapter, fences: GlobalFence[], values: bigint[]): void {
    this.counters.monitoredValueUpdates++;
    this.counters.monitoredValuesWritten += fences.length;
    this.port.updateMonitoredValues(adapter.index, {
      NumFences: fences.length, NativeFenceArray: fences.map((f) => f.hGlobal), UpdatedValueArray: values,
      MonitoredValueKernelCpuVa: fences.map((f) => f.kernelMvVa),
    });
  }

  ddiUpdateCurrentValuesFromCpu(adapter: OsAdapter, fences: GlobalFence[], values: bigint[], notificationOnly: boolean): void {
    this.counters.currentValueUpdates++;
    this.port.updateCurrentValuesFromCpu(adapter.index, {
      NumFences: fences.length, NativeFenceArray: fences.map((f) => f.hGlobal), UpdatedValueArray: values,
      CurrentValueKernelCpuVa: fences.map((f) => f.kernelCvVa), Flags: { AlwaysSignaled: false, NotificationOnly: notificationOnly },
    });
  }

  // ── native fences: create, open, share, destroy (NF-12..16) ──

  createNativeFence(process: Process, args: unknown): { hSyncObject: number; mapping: NativeFenceMapping } {
    const a = v.options(args, 'createNativeFence(args)', ['hDevice', 'initialValue', 'type', 'flags', 'engineAffinity', 'privateDriverData', 'name']);
    const device = this.requireDevice(process, a.hDevice, 'hDevice');
    const adapter = device.adapter;
    const initialValue = v.u64(a.initialValue ?? 0n, 'initialValue');
    const type = a.type === undefined ? 'DEFAULT' : v.oneOf(a.type, 'type', ['DEFAULT', 'INTRA_GPU'] as const);
    const flags = this.syncFlags(a.flags, 'flags');
    if (a.engineAffinity !== undefined) v.integer(a.engineAffinity, 'engineAffinity', 0, 0xffff_ffff);
    const name = a.name === undefined ? undefined : String(a.name);
    const privateData = a.privateDriverData === undefined ? new Uint8Array(64) : a.privateDriverData;
    if (!(privateData instanceof Uint8Array) || privateData.length > 64) throw invalid('privateDriverData', privateData, 'a Uint8Array of at most 64 bytes');
    if (!adapter.nativeFence) {
      throw new WddmError('NOT_SUPPORTED', `createNativeFence: adapter "${adapter.name}" does not support native fences (NativeGpuFence is not advertised${this.options.nativeFence ? '' : '; the OS feature is off'}); create a monitored fence instead`,
        { parameter: 'hDevice', value: device.handle, expected: 'a device on an adapter with NativeGpuFence' });
    }
    if ((flags & (1 << SYNC_FLAG_BITS.crossAdapter)) !== 0 && type !== 'DEFAULT') {
      throw new WddmError('INVALID_PARAMETER', `createNativeFence: a cross-adapter native fence must be of type DEFAULT, not ${type}`,
        { parameter: 'type', value: type, expected: 'DEFAULT for flags.crossAdapter' });
    }
    this.trace.record('runtime', process.name, 'D3DKMTCreateNativeFence', {
      hDevice: device.handle, InitialFenceValue: initialValue, Type: type, Flags: flags, name,
    });
    return this.createNativeFenceOn(process, device, type, flags, initialValue, privateData, name);
  }

  /** Creation after validation; also used for queue progress fences. */
  createNativeFenceOn(process: Process, device: OsDevice, type: NativeFenceTypeName, flags: number, initialValue: bigint,
                      privateData: Uint8Array, name?: string): { hSyncObject: number; mapping: NativeFenceMapping } {
    const global = this.createGlobalOn(process, device, type, flags, initialValue, privateData, name);
    const local = this.openLocal(process, device, global);
    return { hSyncObject: local.handle, mapping: mappingOf(local) };
  }

  /**
   * Storage + DxgkDdiCreateNativeFence on the device's adapter. `crossRoot`:
   * this is another adapter's record of that cross-adapter fence, sharing its
   * CurrentValue word (XA-02).
   */
  createGlobalOn(process: Process, device: OsDevice, type: NativeFenceTypeName, flags: number, initialValue: bigint,
                 privateData: Uint8Array, name?: string, crossRoot?: GlobalFence): GlobalFence {
    const adapter = device.adapter;
    const L = this.layout;
    const shareable = (flags & ((1 << SYNC_FLAG_BITS.shared) | (1 << SYNC_FLAG_BITS.ntSecuritySharing) | (1 << SYNC_FLAG_BITS.crossAdapter))) !== 0;
    const memoryKind = type === 'INTRA_GPU' ? L.memoryLocal : L.memorySystem;
    const coreFence = check(adapter.core.fenceCreate(process.slot, L.fenceKindNative, memoryKind, shareable ? 1 : 0, flags, initialValue, crossRoot?.cvPhys ?? 0),
      `createNativeFence on "${adapter.name}"`);
    const cvPhys = adapter.core.fenceCurrentValueAddress(coreFence);
    const mvPhys = adapter.core.fenceMonitoredValueAddress(coreFence);
    let systemCvVa = 0n, systemMvVa = 0n;
    const caps = adapter.caps.NativeFenceCaps;
    try {
      if (caps.MapToGpuSystemProcess) {
        systemCvVa = this.mapGpu(this.system, adapter, cvPhys);
        systemMvVa = this.mapGpu(this.system, adapter, mvPhys);
      }
    } catch (error) {
      adapter.core.fenceDestroy(coreFence);
      throw error;
    }
    const label = name ?? `fence${coreFence}`;
    const global = new GlobalFence(adapter, coreFence, type, flags, shareable, cvPhys, mvPhys, systemCvVa, systemMvVa, label);
    this.trace.record('os', 'dxgkrnl', 'fence storage', {
      fence: label, memory: type === 'INTRA_GPU' ? `local(${adapter.name})` : 'system', shareable,
      CurrentValuePhys: cvPhys, MonitoredValuePhys: mvPhys,
    });
    const created = this.port.createNativeFence(adapter.index, {
      Type: NATIVE_FENCE_TYPE[type], CurrentValueSystemProcessGpuVa: systemCvVa, MonitoredValueSystemProcessGpuVa: systemMvVa,
      CurrentValueKernelCpuVa: global.kernelCvVa, MonitoredValueKernelCpuVa: global.kernelMvVa,
      InitialFenceValue: initialValue, PrivateDriverData: privateData,
    });
    if (!created) throw new WddmError('GRAPHICS_ADAPTER_STOPPED', `createNativeFence: the driver of "${adapter.name}" failed`);
    global.hGlobal = created.hGlobalNativeFence;
    adapter.fences.set(coreFence, global);
    adapter.byGlobalHandle.set(global.hGlobal, global);
    if ((flags & (1 << SYNC_FLAG_BITS.crossAdapter)) !== 0) this.crossAdapter.attach(global, crossRoot);
    return global;
  }

  /** DxgkDdiOpenNativeFence for one process: maps the values and makes its handle. */
  openLocal(process: Process, device: OsDevice, global: GlobalFence): LocalFence {
    const adapter = global.adapter;
    const cvGpuVa = this.mapGpu(process, adapter, global.cvPhys);
    const mvGpuVa = this.mapGpu(process, adapter, global.mvPhys);
    const cvCpuVa = process.mapUser(global.cvPhys);
    const opened = this.port.openNativeFence(adapter.index, { hGlobalNativeFence: global.hGlobal, hDevice: device.handle, CurrentValueGpuVa: cvGpuVa, MonitoredValueGpuVa: mvGpuVa });
    if (!opened) throw new WddmError('GRAPHICS_ADAPTER_STOPPED', `openNativeFence: the driver of "${adapter.name}" failed`);
    const local: LocalFence = {
      kind: 'syncObject', process, handle: process.allocHandle(), global, device, hLocal: opened.hLocalNativeFence, cvGpuVa, mvGpuVa, cvCpuVa,
      gpuReferences: 0, closing: false, usedByGpu: false,
    };
    global.locals.add(local);
    process.handles.set(local.handle, local);
    this.trace.record('os', 'dxgkrnl', 'handle', { process: process.name, hSyncObject: local.handle, fence: global.label, CurrentValueCpuVa: cvCpuVa });
    return local;
  }

  /** D3DKMTShareObjects: an NT handle for a shareable fence. */
  shareObject(process: Process, hSyncObject: unknown): number {
    const local = this.resolve(process, hSyncObject, 'syncObject', 'hSyncObject');
    if (!local.global.shareable) {
      throw new WddmError('INVALID_PARAMETER', `shareObject: sync object ${hex(local.handle)} was created without flags.shared / flags.ntSecuritySharing, so it has no NT handle`,
        { parameter: 'hSyncObject', value: local.handle, expected: 'a fence created with flags.shared or flags.ntSecuritySharing' });
    }
    const nt: NtHandle = { kind: 'nt', handle: process.allocNtHandle(), global: local.global };
    local.global.ntReferences++;
    process.ntHandles.set(nt.handle, nt);
    this.trace.record('runtime', process.name, 'D3DKMTShareObjects', { hSyncObject: local.handle, hNtHandle: nt.handle });
    return nt.handle;
  }

  /** DuplicateHandle of an NT handle into another process. */
  duplicateNtHandle(process: Process, hNtHandle: unknown, target: Process): number {
    const nt = this.resolveNt(process, hNtHandle, 'hNtHandle');
    if (!(target instanceof Process) || target.os !== this) throw invalid('target', target, 'a process of the same machine');
    const copy: NtHandle = { kind: 'nt', handle: target.allocNtHandle(), global: nt.global };
    nt.global.ntReferences++;
    target.ntHandles.set(copy.handle, copy);
    this.trace.record('runtime', process.name, 'DuplicateHandle', { hNtHandle: nt.handle, targetProcess: target.name, hTargetNtHandle: copy.handle });
    return copy.handle;
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

  closeNtHandle(process: Process, hNtHandle: unknown): void {
    const nt = this.resolveNt(process, hNtHandle, 'hNtHandle');
    process.ntHandles.delete(nt.handle);
    process.retired.add(nt.handle);
    nt.global.ntReferences--;
    this.trace.record('runtime', process.name, 'CloseHandle', { hNtHandle: nt.handle });
    this.maybeDestroyGlobal(nt.global);
  }

  /** D3DKMTOpenNativeFenceFromNTHandle. */
  openNativeFenceFromNtHandle(process: Process, args: unknown): { hSyncObject: number; mapping: NativeFenceMapping } {
    const a = v.options(args, 'openNativeFenceFromNtHandle(args)', ['hNtHandle', 'hDevice', 'engineAffinity', 'flags']);
    const nt = this.resolveNt(process, a.hNtHandle, 'hNtHandle');
    const device = this.requireDevice(process, a.hDevice, 'hDevice');
    if (a.flags !== undefined) this.syncFlags(a.flags, 'flags');
    if (nt.global.destroyed) throw new WddmError('INVALID_HANDLE', `hNtHandle ${hex(nt.handle)} refers to a destroyed fence`);
    // Another adapter: only cross-adapter fences, through that adapter's own record (XA-02).
    if (device.adapter !== nt.global.adapter) this.crossAdapter.recordFor(process, nt.global, device, false); // validates only
    this.trace.record('runtime', process.name, 'D3DKMTOpenNativeFenceFromNTHandle', { hNtHandle: nt.handle, hDevice: device.handle });
    const global = device.adapter === nt.global.adapter ? nt.global : this.crossAdapter.recordFor(process, nt.global, device)!;
    const local = global.kind === 'monitored' ? this.crossAdapter.openMonitoredLocal(process, device, global) : this.openLocal(process, device, global);
    return { hSyncObject: local.handle, mapping: mappingOf(local) };
  }

  /** D3DKMTDestroySynchronizationObject: closes this process's local handle; the last one out destroys (NF-15). */
  destroySynchronizationObject(process: Process, hSyncObject: unknown): void {
    const local = this.resolve(process, hSyncObject, 'syncObject', 'hSyncObject');
    for (const queue of local.device.queues) {
      if (queue.progress === local) {
        throw new WddmError('INVALID_PARAMETER', `hSyncObject ${hex(local.handle)} is the progress fence of hardware queue ${hex(queue.handle)}; destroy the queue instead`,
          { parameter: 'hSyncObject', value: local.handle, expected: 'a fence that is not a queue progress fence' });
      }
    }
    this.trace.record('runtime', process.name, 'D3DKMTDestroySynchronizationObject', { hSyncObject: local.handle });
    this.closeLocal(local);
  }

  closeLocal(local: LocalFence): void {
    if (local.global.kind === 'monitored') {
      if (this.crossAdapter.groupOf(local.global)) this.crossAdapter.closeMonitoredLocal(local, (f) => this.destroyGlobalNow(f)); // XA-05
      else this.monitored.close(local);
      return;
    }
    const { process, global } = local;
    // The handle is gone at once; what the GPU may still use (mappings, the driver's local) waits (src/os/lifetime.ts).
    process.handles.delete(local.handle);
    process.retired.add(local.handle);
    process.closing.set(local.handle, local);
    process.unmapUser(global.cvPhys);
    if (this.lifetime.deferClose(local)) {
      if (!this.lifetime.reachable(global)) this.lifetime.markDestroyPending(global);
      return;
    }
    this.finishClose(local);
  }

  /** DxgkDdiCloseNativeFence and the GPU unmaps of a closed handle; the last one out destroys the fence (NF-15). */
  finishClose(local: LocalFence): void {
    const { process, global } = local;
    const adapter = global.adapter;
    // Entries the GPU logged through this handle are read while it still resolves (an optimized interrupt's waiters depend on them).
    if (local.usedByGpu) this.logs.beforeHandleClosed(local);
    process.closing.delete(local.handle);
    global.locals.delete(local);
    if (adapter.state === 'running') this.port.closeNativeFence(adapter.index, { hLocalNativeFence: local.hLocal });
    this.unmapGpu(process, adapter, global.cvPhys);
    this.unmapGpu(process, adapter, global.mvPhys);
    this.maybeDestroyGlobal(global);
  }

  private maybeDestroyGlobal(global: GlobalFence): void {
    if (global.destroyed) return;
    if (!global.destroyPending && !this.lifetime.reachable(global)) {
      // Only handles still closing (GPU commands name them) are left: destroy pending.
      const members = this.crossAdapter.groupOf(global)?.members ?? [global];
      if (members.some((m) => m.locals.size > 0)) { this.lifetime.markDestroyPending(global); return; }
    }
    if (this.crossAdapter.groupOf(global)) { this.crossAdapter.releaseIfUnused(global, (f) => this.destroyGlobalNow(f)); return; }
    if (global.locals.size || global.ntReferences) return;
    this.destroyGlobalNow(global);
  }

  destroyGlobalNow(global: GlobalFence): void {
    const adapter = global.adapter;
    // Waiters still blocked on a destroyed fence are released with OBJECT_DESTROYED.
    this.releaseWaitersOf(global, 'OBJECT_DESTROYED');
    global.destroyed = true;
    global.destroyPending = false;
    if (adapter.state === 'running') this.port.destroyNativeFence(adapter.index, { hGlobalNativeFence: global.hGlobal });
    if (global.systemCvVa) { this.unmapGpu(this.system, adapter, global.cvPhys); this.unmapGpu(this.system, adapter, global.mvPhys); }
    adapter.fences.delete(global.coreFence);
    adapter.byGlobalHandle.delete(global.hGlobal);
    adapter.destroyedGlobalHandles.add(global.hGlobal);
    adapter.withWaiters.delete(global);
    check(adapter.core.fenceDestroy(global.coreFence), 'destroying fence storage');
    this.trace.record('os', 'dxgkrnl', 'fence destroyed', { fence: global.label, hGlobalNativeFence: global.hGlobal });
  }

  syncFlags(flags: unknown, parameter: string): number {
    if (flags === undefined) return 0;
    const f = v.options(flags, parameter, Object.keys(SYNC_FLAG_BITS)) as SyncObjectFlags;
    for (const key of Object.keys(f)) v.bool(f[key as SyncObjectFlagName], `${parameter}.${key}`);
    return syncFlagsValue(f);
  }

  // ── CPU waits (NF-08) ──

  /**
   * Validates and starts a CPU wait; `onComplete` runs once, now or later.
   * `owner`: the caller's object behind the wait (a CpuThread, a CpuEvent), kept for tools (machine.stuck()).
   */
  beginWait(process: Process, args: unknown, label: string, onComplete: (result: WaitResult) => void,
            owner?: Omit<WaiterOwner, 'process'>): WaitResult | undefined {
    const a = v.options(args, 'wait(args)', ['objects', 'values', 'waitAny', 'timeoutNs', 'hDevice', 'hAsyncEvent']);
    const objects = v.array(a.objects, 'objects', 1, MAX_OBJECTS_PER_CALL);
    const values = v.array(a.values, 'values', objects.length, objects.length);
    const waitAny = a.waitAny === undefined ? false : v.bool(a.waitAny, 'waitAny');
    const timeoutNs = a.timeoutNs === undefined ? Infinity : v.nonNegative(a.timeoutNs, 'timeoutNs');
    if (a.hDevice !== undefined) this.requireDevice(process, a.hDevice, 'hDevice');
    const fences: GlobalFence[] = [];
    const waited: bigint[] = [];
    objects.forEach((h, i) => {
      const local = this.resolve(process, h, 'syncObject', `objects[${i}]`);
      this.requireRunning(local.global.adapter, `objects[${i}]`);
      rejectRepeat(fences, local, i, 'wait');
      if (local.global.hasFlag('noWait')) {
        throw new WddmError('INVALID_PARAMETER', `objects[${i}] ${hex(local.handle)} was created with flags.noWait: it cannot be waited on`,
          { parameter: `objects[${i}]`, value: local.handle, expected: 'a fence created without flags.noWait' });
      }
      const value = v.u64(values[i], `values[${i}]`);
      if (local.global.kind === 'monitored') this.monitored.checkWait(local.global, value, `values[${i}]`);
      fences.push(local.global);
      waited.push(value);
    });
    this.trace.record('runtime', process.name, 'D3DKMTWaitForSynchronizationObjectFromCpu', {
      ObjectCount: fences.length, ObjectHandleArray: objects as number[], FenceValueArray: waited, WaitAny: waitAny,
      timeoutNs: timeoutNs === Infinity ? 'INFINITE' : timeoutNs, waiter: label,
    });
    return this.startWait(fences, waited, waitAny ? 'any' : 'all', timeoutNs, label, onComplete, { process: process.name, ...owner });
  }

  /** Starts a validated wait. Returns the result when satisfied at once, else undefined. */
  startWait(fences: GlobalFence[], values: bigint[], mode: 'all' | 'any', timeoutNs: number, label: string,
            onComplete: (result: WaitResult) => void, owner: WaiterOwner = { process: 'System' }): WaitResult | undefined {
    // One wait block per (waiter, fence): a fence twice would pop twice in one batch (beginWait refuses it up front).
    if (new Set(fences).size !== fences.length) throw new Error(`startWait(${label}): a fence appears twice; callers must refuse that before changing anything`);
    const now = this.scheduler.nowNs;
    const reached = fences.map((f, i) => f.currentValue() >= values[i]);
    const anyIndex = reached.indexOf(true);
    if (mode === 'all' ? reached.every(Boolean) : anyIndex >= 0) {
      this.counters.waitsSatisfiedAtOnce++;
      this.trace.record('os', 'dxgkrnl', 'wait satisfied at once', { waiter: label, index: mode === 'any' ? anyIndex : undefined });
      const result: WaitResult = { status: 'SUCCESS', timeNs: now, immediate: true, index: mode === 'any' ? anyIndex : undefined };
      onComplete(result);
      return result;
    }
    if (timeoutNs === 0) {
      this.trace.record('os', 'dxgkrnl', 'wait timed out', { waiter: label, timeoutNs: 0 });
      this.counters.waitsTimedOut++;
      const result: WaitResult = { status: 'TIMEOUT', timeNs: now, immediate: true };
      onComplete(result);
      return result;
    }
    const id = this.nextWaiter++;
    const entries: WaitEntry[] = fences.map((fence, i) => ({ fence, value: values[i], waitBlock: 0, done: mode === 'all' && reached[i] }));
    const waiter = new Waiter(id, label, mode, entries, onComplete, owner);
    // Add every wait block first; any failure rolls back and changes nothing.
    const added: WaitEntry[] = [];
    for (const entry of entries) {
      if (entry.done) continue;
      const block = entry.fence.adapter.core.waitBlockAdd(entry.fence.coreFence, entry.value, id);
      if (block < 0) {
        for (const e of added) e.fence.adapter.core.waitBlockRemove(e.waitBlock);
        check(block, `adding a CPU waiter on ${entry.fence.label}`);
      }
      entry.waitBlock = block;
      added.push(entry);
    }
    this.waiters.set(id, waiter);
    this.counters.waitersAdded++;
    const changed = new Set<GlobalFence>();
    for (const e of added) { e.fence.adapter.withWaiters.add(e.fence); changed.add(e.fence); }
    this.trace.record('os', 'dxgkrnl', 'waiter added', {
      waiter: label, fences: added.map((e) => e.fence.label), values: added.map((e) => e.value), mode,
    });
    if (timeoutNs !== Infinity) {
      waiter.timeoutNs = timeoutNs;
      waiter.timeout = this.scheduler.after(timeoutNs, 'dxgkrnl', 'wait-timeout', { waiter: id }, `timeout ${label}`);
    }
    this.refresh(changed);
    return undefined;
  }

  /** A CPU wait's timeout event: the waiter is released with TIMEOUT, unless it completed meanwhile. */
  private waitTimedOut(event: ScheduledEvent): void {
    const waiter = this.waiters.get(event.args.waiter as number);
    if (!waiter || waiter.completed || waiter.timeout !== event) return;
    this.counters.waitsTimedOut++;
    this.trace.record('os', 'dxgkrnl', 'wait timed out', { waiter: waiter.label, timeoutNs: waiter.timeoutNs });
    const changed = new Set<GlobalFence>(waiter.entries.filter((e) => e.waitBlock).map((e) => e.fence));
    this.finishWaiter(waiter, { status: 'TIMEOUT', timeNs: this.scheduler.nowNs, immediate: false }, changed);
    this.refresh(changed);
  }

  /** Completes a waiter: retires its remaining wait blocks (fences they were on go into `changed`). */
  private finishWaiter(waiter: Waiter, result: WaitResult, changed: Set<GlobalFence>): void {
    if (waiter.completed) return;
    waiter.completed = true;
    this.scheduler.cancel(waiter.timeout);
    for (const entry of waiter.entries) {
      if (entry.done || !entry.waitBlock) continue;
      const core = entry.fence.adapter.core;
      if (!entry.fence.destroyed) check(core.waitBlockRemove(entry.waitBlock), `retiring waiter ${waiter.label}`);
      entry.done = true;
      changed.add(entry.fence);
    }
    this.waiters.delete(waiter.id);
    if (result.status === 'SUCCESS') this.counters.waitersWoken++;
    this.trace.record('os', 'dxgkrnl', result.status === 'SUCCESS' ? 'waiter woken' : 'waiter released', { waiter: waiter.label, status: result.status, index: result.index });
    waiter.onComplete(result);
  }

  /**
   * Pops every waiter of `fence` satisfied by `currentValue` (core heap),
   * completing waiters whose condition now holds.
   */
  satisfy(fence: GlobalFence, currentValue: bigint, changed: Set<GlobalFence>): number {
    const core = fence.adapter.core;
    const limit = 64;
    let total = 0;
    for (;;) {
      const n = check(core.fenceSatisfy(fence.coreFence, currentValue, limit), `satisfying waiters of ${fence.label}`);
      if (n === 0) break;
      const record = this.layout.out.satisfied;
      const base = core.outBufferAddress();
      const view = new DataView(fence.adapter.memory.buffer.slice(base, base + n * record.bytes));
      changed.add(fence);
      for (let i = 0; i < n; i++) {
        const waiter = this.waiters.get(view.getUint32(i * record.bytes + record.waiter, true));
        if (!waiter) continue;
        const waitBlock = view.getUint32(i * record.bytes + record.waitBlock, true);
        const entryIndex = waiter.entries.findIndex((e) => e.waitBlock === waitBlock && e.fence === fence && !e.done);
        if (entryIndex < 0) continue;
        waiter.entries[entryIndex].done = true;
        waiter.remaining--;
        total++;
        if (waiter.mode === 'any' || waiter.remaining === 0) {
          this.finishWaiter(waiter, { status: 'SUCCESS', timeNs: this.scheduler.nowNs, immediate: false, index: waiter.mode === 'any' ? entryIndex : undefined }, changed);
        }
      }
      if (n < limit) break;
    }
    if (core.fenceWaiterCount(fence.coreFence) === 0) fence.adapter.withWaiters.delete(fence);
    return total;
  }

  /**
   * NF-09's loop: for each changed fence, move MonitoredValue to the new
   * smallest waited value − 1 (batched per adapter into one
   * UpdateMonitoredValues), then read CurrentValue again and satisfy what it
   * unblocks, until nothing changes.
   */
  refresh(changed: Set<GlobalFence>): void {
    let turns = 0;
    while (changed.size) {
      if (++turns > 1_000_000) throw new Error('refresh: monitored value loop did not settle');
      const byAdapter = new Map<OsAdapter, GlobalFence[]>();
      for (const fence of changed) {
        if (fence.destroyed || fence.adapter.state !== 'running' || fence.kind === 'monitored') continue;
        let list = byAdapter.get(fence.adapter);
        if (!list) byAdapter.set(fence.adapter, (list = []));
        list.push(fence);
      }
      changed.clear();
      for (const adapter of [...byAdapter.keys()].sort((x, y) => x.index - y.index)) {
        const fences = byAdapter.get(adapter)!.sort((x, y) => x.coreFence - y.coreFence);
        const batch: GlobalFence[] = [];
        const values: bigint[] = [];
        for (const fence of fences) {
          if (this.crossAdapter.holdsMonitoredValue(fence)) continue; // XA-03: held at 0
          const target = this.monitoredTarget(fence);
          if (target !== fence.monitoredValue) { batch.push(fence); values.push(target); }
        }
        if (!batch.length) continue;
        this.ddiUpdateMonitoredValues(adapter, batch, values);
        batch.forEach((f, i) => { f.monitoredValue = values[i]; });
        if (adapter.state !== 'running') continue;
        // Resample: the driver guarantees CurrentValue read now was written after the new MonitoredValue was seen.
        for (const fence of batch) {
          const current = fence.currentValue();
          if (this.satisfy(fence, current, changed) > 0) {
            this.trace.record('os', 'dxgkrnl', 'resample satisfied waiters', { fence: fence.label, currentValue: current });
          }
        }
      }
    }
  }

  /** The MonitoredValue this fence must have (NF-02). */
  monitoredTarget(fence: GlobalFence): bigint {
    return asU64(fence.adapter.core.fenceMonitoredTarget(fence.coreFence));
  }

  /**
   * Releases every waiter that waits on `fence` with a non-success status.
   * `keepFence`: the fence lives on (destroy pending), so its MonitoredValue
   * follows too (UINT64_MAX once no waiter is left, NF-02).
   */
  releaseWaitersOf(fence: GlobalFence, status: WaitStatus, keepFence = false): void {
    const changed = new Set<GlobalFence>();
    for (const waiter of [...this.waiters.values()].sort((x, y) => x.id - y.id)) {
      if (waiter.entries.some((e) => e.fence === fence && !e.done)) {
        this.finishWaiter(waiter, { status, timeNs: this.scheduler.nowNs, immediate: false }, changed);
      }
    }
    if (!keepFence) changed.delete(fence);
    this.refresh(changed);
  }

  // ── CPU signal (NF-07, NF-19) ──

  signalFromCpu(process: Process, args: unknown): void {
    const a = v.options(args, 'signal(args)', ['objects', 'values', 'flags', 'hDevice']);
    const objects = v.array(a.objects, 'objects', 1, MAX_OBJECTS_PER_CALL);
    const values = v.array(a.values, 'values', objects.length, objects.length);
    const flags = v.options(a.flags, 'flags', ['allowFenceRewind', 'signalAtSubmission', 'enqueueCpuEvent']);
    const rewind = flags.allowFenceRewind === undefined ? false : v.bool(flags.allowFenceRewind, 'flags.allowFenceRewind');
    if (a.hDevice !== undefined) this.requireDevice(process, a.hDevice, 'hDevice');
    const fences: GlobalFence[] = [];
    const signalled: bigint[] = [];
    objects.forEach((h, i) => {
      const local = this.resolve(process, h, 'syncObject', `objects[${i}]`);
      this.requireRunning(local.global.adapter, `objects[${i}]`);
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
      if (local.global.kind === 'monitored') this.monitored.checkSignal(local.global, value, `values[${i}]`);
      fences.push(local.global);
      signalled.push(value);
    });
    if (this.trace.enabled) {
      this.trace.record('runtime', process.name, 'D3DKMTSignalSynchronizationObjectFromCpu', {
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
      this.monitored.cpuSignal(monitored.map((i) => fences[i]), monitored.map((i) => values[i]));
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
      this.ddiUpdateCurrentValuesFromCpu(adapter, batch, batchValues, false);
      for (const fence of batch) this.satisfy(fence, fence.currentValue(), changed);
    }
    this.refresh(changed);
    this.crossAdapter.afterCpuSignal(fences); // XA-04
  }

  // ── interrupts (NF-09, INT-01..04, INT-06) ──

  notifyInterrupt(adapter: OsAdapter, data: NativeFenceSignaledInterrupt): void {
    const list = data.pSignaledNativeFenceArray;
    this.trace.record('interrupt', adapter.name, 'DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED', {
      InterruptType: data.InterruptType, NodeOrdinal: data.NodeOrdinal, EngineOrdinal: data.EngineOrdinal, SignaledNativeFenceCount: data.SignaledNativeFenceCount,
      pSignaledNativeFenceArray: list ? list : 'NULL', hHWQueue: data.hHWQueue, EvaluateLegacyMonitoredFences: data.Flags.EvaluateLegacyMonitoredFences,
    });
    if (adapter.state !== 'running') return;
    this.counters.interruptsHandled++;
    const before = this.counters.waitersWoken;
    // INT-05: an optimized interrupt is served from the named queue's signal log.
    if (this.logs.onInterrupt(adapter, data)) {
      this.countInterrupt(adapter, this.counters.waitersWoken !== before, this.crossAdapter.afterInterrupt(adapter, null)); // XA-04 too
      return;
    }
    let fences: GlobalFence[];
    if (list) {
      fences = [];
      for (const handle of list) {
        const fence = adapter.byGlobalHandle.get(handle);
        if (!fence) {
          const what = adapter.destroyedGlobalHandles.has(handle) ? 'a destroyed native fence' : 'no native fence of this adapter';
          this.bugCheckAdapter(adapter, 'NATIVE_FENCE_INTERRUPT_INVALID_HANDLE',
            `native fence signaled interrupt lists hGlobalNativeFence ${hex(handle)}, which is ${what} (INT-03)`);
          return;
        }
        fences.push(fence);
      }
    } else {
      this.counters.fullScans++;
      fences = [...adapter.withWaiters].filter((f) => f.kind === 'native').sort((x, y) => x.coreFence - y.coreFence);
      this.trace.record('os', 'dxgkrnl', 'no list: scanning every native fence waiter', { fences: fences.length });
    }
    const changed = new Set<GlobalFence>();
    for (const fence of fences) {
      this.counters.fencesScanned++;
      this.satisfy(fence, fence.currentValue(), changed);
    }
    this.refresh(changed);
    // INT-04: only with EvaluateLegacyMonitoredFences does a no-list interrupt look at monitored fences too.
    const legacyReleased = !list && data.Flags.EvaluateLegacyMonitoredFences ? this.monitored.legacyScan(adapter) : 0;
    this.logs.afterInterrupt(adapter);
    const propagated = this.crossAdapter.afterInterrupt(adapter, list ? fences : null); // XA-04
    this.countInterrupt(adapter, this.counters.waitersWoken !== before || legacyReleased > 0, propagated);
  }

  /**
   * What a handled interrupt did, counted once: it woke a waiter on its own
   * adapter; or it woke none but carried a cross-adapter signal to another
   * adapter (`propagated` records, XA-04: a propagation interrupt, the
   * document's design for every GPU signal of a cross-adapter fence); or
   * neither (a spurious interrupt).
   */
  countInterrupt(adapter: OsAdapter, woke: boolean, propagated: number): void {
    if (woke) return;
    if (propagated > 0) {
      this.counters.propagationInterrupts++;
      this.trace.record('os', 'dxgkrnl', 'propagation interrupt (woke no waiter here; carried a cross-adapter signal on)', { adapter: adapter.name, propagations: propagated });
    } else {
      this.counters.spuriousInterrupts++;
      this.trace.record('os', 'dxgkrnl', 'spurious interrupt (woke no waiter)', {});
    }
  }

  // ── faults ──

  /** A fatal driver error: stops this adapter only, with a report. */
  bugCheckAdapter(adapter: OsAdapter, code: string, message: string): void {
    if (adapter.state === 'stopped') return;
    const report: BugCheckReport = { adapter: adapter.name, code, message, timeNs: this.scheduler.nowNs };
    adapter.state = 'stopped';
    adapter.bugCheck = report;
    this.bugChecks.push(report);
    this.trace.record('fault', adapter.name, 'BUG CHECK', { code, message });
    this.port.stopDevice(adapter.index); // its engines stop, its pending interrupts are dropped
    this.lifetime.adapterReset(adapter); // its GPU work will never execute: in-flight references go
    // Waiters on the stopped adapter's fences must not hang: release them.
    const changed = new Set<GlobalFence>();
    for (const waiter of [...this.waiters.values()].sort((x, y) => x.id - y.id)) {
      if (waiter.entries.some((e) => e.fence.adapter === adapter && !e.done)) {
        this.finishWaiter(waiter, { status: 'ADAPTER_STOPPED', timeNs: this.scheduler.nowNs, immediate: false }, changed);
      }
    }
    this.refresh(changed);
  }

  /** NF-20: a GPU reset. Every fence → UINT64_MAX except NoSignalMaxValueOnTdr; devices are removed. */
  removeDevice(adapter: OsAdapter, reason: string): void {
    this.requireRunning(adapter, 'removeDevice');
    this.trace.record('fault', adapter.name, 'device removed (TDR)', { reason });
    // The driver drops every queue's work (its queues and contexts are gone with the devices), then runs again.
    if (!this.port.resetFromTimeout(adapter.index) || !this.port.restartFromTimeout(adapter.index)) return; // it failed: bug-checked
    this.logs.adapterReset(adapter);
    this.lifetime.adapterReset(adapter); // the dropped work releases its fences (deferred closes finish)
    for (const device of adapter.devices) {
      device.removed = true;
      for (const queue of device.queues) this.forgetQueue(queue);
      device.queues.clear();
    }
    this.contexts.onDeviceRemoved(adapter);
    const fences = [...adapter.fences.values()].sort((x, y) => x.coreFence - y.coreFence).filter((f) => !f.hasFlag('noSignalMaxValueOnTdr'));
    const kept = [...adapter.fences.values()].filter((f) => f.hasFlag('noSignalMaxValueOnTdr')).map((f) => f.label);
    if (kept.length) this.trace.record('os', 'dxgkrnl', 'NoSignalMaxValueOnTdr: not signalled', { fences: kept });
    for (let i = 0; i < fences.length; i += MAX_OBJECTS_PER_CALL) {
      const slice = fences.slice(i, i + MAX_OBJECTS_PER_CALL);
      this.cpuSignal(slice, slice.map(() => UINT64_MAX));
    }
    // The reset dropped interrupts on their way: a kept fence's value the GPU reached before it would
    // never wake its waiters. The OS looks at those fences' waiters once more (what an ISR would have done).
    const keptWithWaiters = [...adapter.withWaiters].filter((f) => f.hasFlag('noSignalMaxValueOnTdr')).sort((x, y) => x.coreFence - y.coreFence);
    if (keptWithWaiters.some((f) => f.kind === 'monitored')) this.monitored.scan(adapter, 'device removed: kept fences rechecked');
    const changed = new Set<GlobalFence>();
    for (const fence of keptWithWaiters) if (fence.kind === 'native') this.satisfy(fence, fence.currentValue(), changed);
    this.refresh(changed);
    // …and carries on what those interrupts would have propagated to the other adapters (XA-04).
    this.crossAdapter.afterInterrupt(adapter, null);
  }

  // ── hardware queues and user-mode submission (NF-06, NF-17) ──

  createHwQueue(process: Process, args: unknown): { hHwQueue: number; hProgressFence?: number; adapterIndex: number; privateDriverData: Uint8Array } {
    const a = v.options(args, 'createHwQueue(args)', ['hDevice', 'engine', 'nativeProgressFence', 'name']);
    const device = this.requireDevice(process, a.hDevice, 'hDevice');
    const adapter = device.adapter;
    const engine = a.engine === undefined ? 0 : v.integer(a.engine, 'engine', 0, adapter.engines - 1);
    const nativeProgressFence = a.nativeProgressFence === undefined ? true : v.bool(a.nativeProgressFence, 'nativeProgressFence');
    if (!adapter.nativeFence) {
      throw new WddmError('NOT_SUPPORTED', `createHwQueue: adapter "${adapter.name}" has no native fence support, so user-mode submission hardware queues cannot wait or signal on the GPU; use a kernel-mode context`,
        { parameter: 'hDevice', value: device.handle, expected: 'a device on an adapter with NativeGpuFence' });
    }
    const label = a.name === undefined ? `queue${device.queues.size + 1}` : String(a.name);
    this.trace.record('runtime', process.name, 'D3DKMTCreateHwQueue', { hDevice: device.handle, engine, NativeProgressFence: nativeProgressFence, name: label });
    let progress: LocalFence | undefined;
    if (nativeProgressFence) {
      const made = this.createNativeFenceOn(process, device, 'DEFAULT', 0, 0n, new Uint8Array(64), `${label}.progress`);
      progress = process.handles.get(made.hSyncObject) as LocalFence;
    }
    const privateDriverData = new Uint8Array(HWQUEUE_PRIVATE_DRIVER_DATA_BYTES);
    const undo = () => {
      // Undone as if never made: the progress fence's handle never reached the caller, so it is not "closed" either.
      if (progress) { this.closeLocal(progress); process.retired.delete(progress.handle); }
    };
    let created: { hHwQueue: number } | undefined;
    try {
      created = this.port.createHwQueue(adapter.index, {
        hDevice: device.handle, EngineOrdinal: engine, Flags: { NativeProgressFence: nativeProgressFence },
        hHwQueueProgressFence: progress ? progress.global.hGlobal : 0, ProcessSlot: process.slot, DebugName: label, PrivateDriverData: privateDriverData,
      });
    } catch (error) {
      undo();
      throw error;
    }
    if (!created) {
      undo();
      throw new WddmError('GRAPHICS_ADAPTER_STOPPED', `createHwQueue: the driver of "${adapter.name}" failed`);
    }
    const queue: OsHwQueue = {
      kind: 'hwQueue', handle: process.allocHandle(), device, hHwQueue: created.hHwQueue, engine, progress, progressValue: 0n, label,
      privateDriverData, references: { commands: [], head: 0 }, gpu: { inRing: 0 },
    };
    device.queues.add(queue);
    process.handles.set(queue.handle, queue);
    let byHandle = this.queuesByDriverHandle.get(adapter);
    if (!byHandle) this.queuesByDriverHandle.set(adapter, (byHandle = new Map()));
    byHandle.set(queue.hHwQueue, queue);
    // LOG-01, LOG-03: the queue's two log buffers, announced to the driver.
    try {
      this.logs.queueCreated(queue);
    } catch (error) {
      this.destroyHwQueue(process, queue.handle);
      process.retired.delete(queue.handle);
      if (progress) process.retired.delete(progress.handle);
      throw error;
    }
    // User mode gets its own copy of the private data (its UMD hands it back at every submission).
    return { hHwQueue: queue.handle, hProgressFence: progress?.handle, adapterIndex: adapter.index, privateDriverData: privateDriverData.slice() };
  }

  destroyHwQueue(process: Process, hHwQueue: unknown): void {
    const queue = this.resolve(process, hHwQueue, 'hwQueue', 'hHwQueue');
    const adapter = queue.device.adapter;
    this.trace.record('runtime', process.name, 'D3DKMTDestroyHwQueue', { hHwQueue: queue.handle });
    this.logs.queueDestroying(queue);
    if (adapter.state === 'running' && !queue.device.removed) this.port.destroyHwQueue(adapter.index, { hHwQueue: queue.hHwQueue });
    this.logs.queueDestroyed(queue);
    this.lifetime.queueGone(queue); // its unexecuted commands release their fences
    this.forgetQueue(queue);
    queue.device.queues.delete(queue);
    process.handles.delete(queue.handle);
    process.retired.add(queue.handle);
    if (queue.progress) this.closeLocal(queue.progress);
  }

  /** The OS forgets a queue the driver no longer has (destroyed, or its device removed). */
  private forgetQueue(queue: OsHwQueue): void {
    const byHandle = this.queuesByDriverHandle.get(queue.device.adapter);
    if (byHandle?.get(queue.hHwQueue) === queue) byHandle.delete(queue.hHwQueue);
    queue.gpu = { inRing: 0 };
  }

  /**
   * User-mode submission, checked (NF-06, NF-17): what user mode may write into the queue's ring.
   * Changes nothing: the runtime hands `commands` to the driver's user-mode half, which writes the
   * ring and rings the doorbell, and then tells the OS with submitted() (the OS never sees the ring).
   */
  prepareSubmission(process: Process, args: unknown): SubmissionPlan {
    const a = v.options(args, 'submit(args)', ['hHwQueue', 'commands']);
    const queue = this.resolve(process, a.hHwQueue, 'hwQueue', 'hHwQueue');
    const device = queue.device;
    if (device.removed) throw new WddmError('DEVICE_REMOVED', `submit: hardware queue ${hex(queue.handle)} belongs to a removed device`);
    this.requireRunning(device.adapter, 'hHwQueue');
    const list = v.array(a.commands, 'commands', 1, 4096);
    const commands: UserModeCommand[] = [];
    const described: string[] = [];
    const references: InFlightCommand[] = [];
    list.forEach((raw, i) => {
      const c = v.options(raw, `commands[${i}]`, ['wait', 'signal', 'work']);
      const keys = Object.keys(c);
      if (keys.length !== 1) throw invalid(`commands[${i}]`, raw, 'exactly one of { wait }, { signal }, { work }');
      if (c.work !== undefined) {
        const work = v.workCommand(c.work, `commands[${i}].work`);
        commands.push(work.command);
        described.push(work.described);
        return;
      }
      const op = c.wait !== undefined ? 'wait' : 'signal';
      const body = v.options(c[op], `commands[${i}].${op}`, ['hSyncObject', 'value']);
      const local = this.resolve(process, body.hSyncObject, 'syncObject', `commands[${i}].${op}.hSyncObject`);
      const value = v.u64(body.value, `commands[${i}].${op}.value`);
      if (local.global.kind === 'monitored') {
        throw new WddmError('INVALID_PARAMETER', `commands[${i}].${op}.hSyncObject ${hex(local.handle)} is a monitored fence: it has no MonitoredValue for the CMP, so hardware queues do not ${op} on it; use a kernel-mode context (submitCommand / ${op === 'wait' ? 'waitForSynchronizationObjectFromGpu' : 'fenceWrite or signalSynchronizationObjectFromGpu'})`,
          { parameter: `commands[${i}].${op}.hSyncObject`, value: local.handle, expected: 'a native fence' });
      }
      if (local.global.adapter !== device.adapter) {
        throw new WddmError('INVALID_PARAMETER', `commands[${i}].${op}.hSyncObject ${hex(local.handle)} lives on adapter "${local.global.adapter.name}", not on the queue's "${device.adapter.name}"`,
          { parameter: `commands[${i}].${op}.hSyncObject`, value: local.handle, expected: `a fence opened on "${device.adapter.name}"` });
      }
      if (op === 'signal' && local.global.hasFlag('noSignal')) throw new WddmError('INVALID_PARAMETER', `commands[${i}].signal.hSyncObject ${hex(local.handle)} was created with flags.noSignal`);
      if (op === 'wait' && local.global.hasFlag('noWait')) throw new WddmError('INVALID_PARAMETER', `commands[${i}].wait.hSyncObject ${hex(local.handle)} was created with flags.noWait`);
      commands.push({ op, gpuVa: local.cvGpuVa, value, handle: local.handle });
      references.push({ op, local, value });
      described.push(`${op}(${local.global.label}, ${value})`);
    });
    let progressValue: bigint | undefined;
    if (queue.progress) {
      progressValue = queue.progressValue + 1n;
      commands.push({ op: 'signal', gpuVa: queue.progress.cvGpuVa, value: progressValue, handle: queue.progress.handle });
      references.push({ op: 'signal', local: queue.progress, value: progressValue });
      described.push(`signal(${queue.progress.global.label}, ${progressValue})`);
    }
    return { process, queue, adapterIndex: device.adapter.index, commands, references, described, progressValue };
  }

  /**
   * The driver's user-mode half wrote `plan`'s commands into the ring: each command holds its fence
   * until it executed (src/os/lifetime.ts), the timeline records them as queued (LOG-08).
   */
  submitted(plan: SubmissionPlan): { progressValue?: bigint } {
    const { queue, references, progressValue } = plan;
    for (const r of references) r.local.usedByGpu = true;
    queue.gpu.inRing += plan.commands.length;
    this.lifetime.submitted(queue, references);
    this.logs.recordQueued(queue, references);
    if (progressValue !== undefined) queue.progressValue = progressValue;
    return { progressValue };
  }

  /** Waiters whose value is reached but which are still waiting, with no interrupt on its way (NF-10 check). */
  lostWakeups(): { waiter: string; fence: string; value: bigint; currentValue: bigint }[] {
    const lost: { waiter: string; fence: string; value: bigint; currentValue: bigint }[] = [];
    for (const waiter of [...this.waiters.values()].sort((x, y) => x.id - y.id)) {
      for (const entry of waiter.entries) {
        if (entry.done) continue;
        const current = entry.fence.currentValue();
        if (current >= entry.value) lost.push({ waiter: waiter.label, fence: entry.fence.label, value: entry.value, currentValue: current });
      }
    }
    return lost;
  }

  get pendingWaiters(): number { return this.waiters.size; }

  /** The CPU waiters still waiting, oldest first, with what each still waits for (read-only, for tools). */
  pendingWaiterList(): PendingWaiter[] {
    return [...this.waiters.values()].sort((x, y) => x.id - y.id).map((w) => ({
      id: w.id, label: w.label, mode: w.mode, owner: w.owner, timed: w.timeout !== undefined && !w.timeout.cancelled,
      waits: w.entries.filter((e) => !e.done).map((e) => ({ fence: e.fence, value: e.value })),
    }));
  }

  /** CPU waiters of one fence (its wait blocks in the core's heap): kernel-side inspection (machine.inspectFence). */
  fenceWaiterCount(fence: GlobalFence): number {
    return fence.destroyed ? 0 : fence.adapter.core.fenceWaiterCount(fence.coreFence);
  }
}

/**
 * One fence may appear once per wait or signal call (D3DKMT takes an array of
 * distinct objects). Two handles of the same fence count as the same fence.
 * Throws before the call changes anything.
 */
export function rejectRepeat(seen: GlobalFence[], local: LocalFence, index: number, call: 'wait' | 'signal'): void {
  const first = seen.indexOf(local.global);
  if (first < 0) return;
  const hint = call === 'wait'
    ? 'name each fence once (wait-all: wait for the larger value; wait-any: the smaller one)'
    : 'name each fence once, with the value it must end at';
  throw new WddmError('INVALID_PARAMETER', `objects[${first}] and objects[${index}] name the same fence (${local.global.label}); a ${call} names each fence at most once: ${hint}`,
    { parameter: `objects[${index}]`, value: local.handle, expected: `a fence not already named by objects[${first}]` });
}

/** A checked user-mode submission (Dxgkrnl.prepareSubmission): what the UMD writes, and what the OS records once it did. */
export interface SubmissionPlan {
  process: Process;
  queue: OsHwQueue;
  adapterIndex: number;
  /** For the driver's user-mode half (UserModeDriverInterface.submitToHwQueue). */
  commands: UserModeCommand[];
  /** The waits and signals among them, each an in-flight reference of the handle it names. */
  references: InFlightCommand[];
  /** The commands in words, for the trace. */
  described: string[];
  /** The progress fence value the submission signals last. */
  progressValue?: bigint;
}

export interface NativeFenceMapping {
  /** User-mode read-only CPU VA of CurrentValue. */
  CurrentValueCpuVa: bigint;
  CurrentValueGpuVa: bigint;
  MonitoredValueGpuVa: bigint;
}

function mappingOf(local: LocalFence): NativeFenceMapping {
  return { CurrentValueCpuVa: local.cvCpuVa, CurrentValueGpuVa: local.cvGpuVa, MonitoredValueGpuVa: local.mvGpuVa };
}

export type { StatusName, NativeFenceCaps };
