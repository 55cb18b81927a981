// The front door of the OS: every way into Dxgkrnl from outside src/os/.
//
//   user mode (src/user/) ──D3DKMT entry points──▶ Kernel ──▶ the OS's modules (private: dxgkrnl.ts builds them)
//   the machine (src/machine/) ──boot, adapters, faults──▶ Kernel
//   tools (stuck, lost wake-ups, timeline, checker, explorer) ──read-only──▶ Kernel.inspect (src/os/inspect.ts)
//
// Outside src/os/ only this file and inspect.ts are imported (test/import-graph.test.ts): a caller names an
// entry point, never a module (`os.fences`, `os.waits`). Each entry point takes the calling process's record
// (the `Process` the machine's createProcess made), checks its arguments in the module that owns the call,
// and changes nothing when it refuses. The methods are one line each on purpose: what a call does is in the
// module that owns it (the table in src/os/README.md).
//
// VidMm (src/os/vidmm/) is part of the OS too: its entry points are here, its read-only views in inspect.ts,
// and it reaches the rest of the OS only through the narrow VidMmEnvironment this file fills.

import { invalid } from '../base/errors.js';
import type { CoreLayout, WasmMemory } from '../core/bindings.js';
import type { KernelModeDriver } from '../ddi/ddi.js';
import type { DriverPort } from '../port/driver-port.js';
import type { Scheduler } from '../base/scheduler.js';
import type { Trace } from '../base/trace.js';
import type { SyncObjectFlags } from '../base/wddm.js';
import { CommandList } from './command-list.js';
import { Dxgkrnl, type OsOptions } from './dxgkrnl.js';
import { OsInspector } from './inspect.js';
import type { LogKind } from './logs.js';
import type { MonitoredFenceCreated } from './monitored.js';
import type { CpuEvent, KernelProcess, NativeFenceMapping, OsAdapter, Process, SubmissionPlan, WaiterOwner, WaitResult } from './objects.js';
import type { SegmentDescriptor } from './vidmm/segments.js';
import { VidMm, type PreparedUse } from './vidmm/vidmm.js';

export { CommandList } from './command-list.js';
export type { SubmissionCommands } from './command-list.js';
export type { LogKind } from './logs.js';
export type { MonitoredFenceCreated } from './monitored.js';
export type { CpuEvent, KernelProcess, NativeFenceMapping, WaiterOwner, WaitResult, WaitStatus, SubmissionPlan } from './objects.js';
export type { AllocationUse, CpuAccess, PreparedUse } from './vidmm/vidmm.js';
export { DEFAULT_ALLOCATION_RECORDS } from './vidmm/vidmm.js';
export { DEFAULT_HISTORY_RECORDS } from './log-records.js';
export { parseSegments, type SegmentDescriptor, type SegmentOptions } from './vidmm/segments.js';


/** What an adapter brings to the OS when it starts (the machine built its core view and its driver). */
export interface AdapterStart {
  index: number;
  name: string;
  core: OsAdapter['core'];
  memory: WasmMemory;
  integrated: boolean;
  engines: number;
  /** VidMm's segments of the adapter and its CpuHostAperture's size (src/os/vidmm/). */
  localBase: number;
  segments: SegmentDescriptor[];
  cpuHostAperturePages: number;
}

export interface KernelOptions extends OsOptions {
  /** Process slots, the System process's included (limits.processes + 1). */
  maxProcesses: number;
  /** What the log reader keeps for the timeline, of each kind (limits.timelineRecords). */
  timelineRecords: number;
  /** NF-09: the OS reads CurrentValue again after UpdateMonitoredValues (machine option os.rereadCurrentValue; false judges the driver alone). */
  rereadCurrentValue: boolean;
  /** VidMm: the machine's memory, where system memory starts, I/O coherence, records kept (limits.allocationRecords). */
  memory: WasmMemory;
  systemBase: number;
  ioCoherent: boolean;
  allocationRecords: number;
}

/** The process record behind a KernelProcess token (the same object: the token only hides its tables). */
const record = (process: KernelProcess): Process => process as unknown as Process;

export class Kernel {
  /** Read-only views for tools: counters, waiters, stuck parts, fences, log history (src/os/inspect.ts). */
  readonly inspect: OsInspector;
  private readonly os: Dxgkrnl;
  private readonly vidmm: VidMm;
  // The modules the hottest entry points call, one load away.
  private readonly signals: Dxgkrnl['signals'];
  private readonly waits: Dxgkrnl['waits'];

  constructor(options: KernelOptions, scheduler: Scheduler, trace: Trace, layout: CoreLayout, port: DriverPort) {
    const os = (this.os = new Dxgkrnl(Object.freeze({ nativeFence: options.nativeFence }), scheduler, trace, layout, options.maxProcesses, port));
    os.logs.historyRecords = options.timelineRecords;
    os.waits.resampleAfterUpdate = options.rereadCurrentValue;
    this.signals = os.signals;
    this.waits = os.waits;
    this.vidmm = new VidMm({
      get nowNs() { return scheduler.nowNs; },
      handles: os.handles,
      contextsOf: (process) => os.contexts.contextsOf(process),
      newEvent: (process, name) => os.events.newEvent(process, name),
      setEvent: (event) => os.events.setEvent(event, undefined),
      waitAll: (fences, values, label, onComplete) => { os.waits.startWait(fences, values, 'all', Infinity, label, onComplete); },
      onGpuProgress: (listener) => { os.interrupts.progressListeners.push(listener); },
      onGpuQuiet: (quiet) => { os.interrupts.progressQuiet.push(quiet); },
      onContextRetired: (listener) => { os.contexts.retiredListeners.push(listener); },
    }, trace, options.memory, options.systemBase, options.ioCoherent, options.allocationRecords);
    this.inspect = new OsInspector(os, this.vidmm);
  }

  // ── the machine's calls: processes, adapters, the OS's lock, resets, faults ──

  /** A new process (its handle tables and address spaces). */
  createProcess(name: string): KernelProcess { return this.os.handles.createProcess(name) as unknown as KernelProcess; }

  /** Starts an adapter (its driver through the port, DxgkDdiStartDevice, CAP-02) and gives VidMm its segments. Throws when the driver breaks it. */
  startAdapter(adapter: AdapterStart, driver: KernelModeDriver): void {
    const started = this.os.startAdapter({ index: adapter.index, name: adapter.name, core: adapter.core, memory: adapter.memory, integrated: adapter.integrated, engines: adapter.engines }, driver);
    this.vidmm.addAdapter(started, adapter.localBase, adapter.segments, adapter.cpuHostAperturePages);
  }

  /** Each OS operation runs in steps under the OS's lock from now on (schedule.osGranularity 'step'; src/os/waits.ts). */
  runOperationsInSteps(): void { this.os.runOperationsInSteps(); }
  /** An OS operation is part-way through its steps: no other may start (the machine's scheduler gate). */
  get lockHeld(): boolean { return this.os.lockHeld; }

  /** The cross-adapter doorbell (XA-07) is on: MonitoredValues follow NF-02 on every adapter. */
  enableDoorbell(): void { this.os.crossAdapter.doorbellEnabled = true; }

  /** NF-20: device removal (a GPU reset) on adapter `index`. */
  removeDevice(index: number, reason: string): void { this.os.resets.removeDevice(this.os.adapters[index], reason); }
  /** NF-20 for an adapter that goes for good (surprise removal): its fences to UINT64_MAX, its waiters ended, the adapter stopped. */
  removeAdapter(index: number, reason: string): void { this.os.resets.removeAdapter(this.os.adapters[index], reason); }

  /** A bug check of adapter `index` (a contract checker's fatal violation): it stops, with the report; nothing else is lost. */
  bugCheckAdapter(index: number, code: string, message: string): void {
    const adapter = this.os.adapters[index];
    if (adapter && adapter.state !== 'stopped') this.os.resets.bugCheckAdapter(adapter, code, message);
  }

  /** LOG-03: a hardware queue's log buffer `kind` destroyed and made again (the old one read first). */
  recreateNativeFenceLogBuffer(process: KernelProcess, hHwQueue: unknown, kind: LogKind): void {
    const queue = this.os.handles.resolve(record(process), hHwQueue, 'hwQueue', 'hHwQueue');
    const logs = this.os.logs.queueLogs(queue.device.adapter, queue.hHwQueue);
    if (!logs) throw invalid('hHwQueue', hHwQueue, 'a hardware queue with log buffers (a live user-mode-submission queue)');
    this.os.logs.recreate(logs, kind, 'requested');
  }

  /**
   * LOG-05 fault: the OS's reader skips the signal log of adapter `index`'s live hardware queue `hHwQueue` until the GPU
   * wrote more entries than it holds (src/os/logs.ts fallBehind). Returns false when it was already held back.
   */
  holdLogReader(index: number, hHwQueue: number): boolean {
    const logs = this.os.logs.queueLogs(this.os.adapters[index], hHwQueue);
    return logs !== undefined && this.os.logs.fallBehind(logs);
  }

  /** The platform keeps CPU caches coherent with GPU accesses (machine option ioCoherent): a UMD then needs no cache maintenance. */
  get ioCoherent(): boolean { return this.vidmm.ioCoherent; }

  /**
   * The race explorer's variants of the OS (src/explore/): each switch leaves out one thing the reference OS does,
   * to show what it guards against. `rereadCurrentValue: false`: NF-09's re-read of CurrentValue after
   * UpdateMonitoredValues is left out; `holdCrossAdapterMonitoredValueAtZero: false`: XA-03's MonitoredValue of 0 on every
   * adapter; `extendMonitoredValues: false`: MF-07's extension of 32-bit GPU writes; `wakeWaitersOnReset: false`: NF-20's
   * signal of every fence on a device removal.
   */
  variant(switches: { rereadCurrentValue?: boolean; holdCrossAdapterMonitoredValueAtZero?: boolean; extendMonitoredValues?: boolean; wakeWaitersOnReset?: boolean }): void {
    if (switches.rereadCurrentValue !== undefined) this.waits.resampleAfterUpdate = switches.rereadCurrentValue;
    if (switches.holdCrossAdapterMonitoredValueAtZero !== undefined) this.os.crossAdapter.holdMonitoredValueAtZero = switches.holdCrossAdapterMonitoredValueAtZero;
    if (switches.extendMonitoredValues !== undefined) for (const adapter of this.os.adapters) adapter.extendMonitoredValues = switches.extendMonitoredValues;
    if (switches.wakeWaitersOnReset !== undefined) this.os.resets.wakeWaitersOnReset = switches.wakeWaitersOnReset;
  }

  /** Reads every queue's new log entries now, as an interrupt would (the timeline's export does, LOG-08). */
  readNativeFenceLogs(): void { this.os.logs.readAll(); }

  // ── D3DKMT: adapters and devices ──

  openAdapter(process: KernelProcess, index: number): number { return this.os.handles.openAdapter(record(process), index); }
  queryAdapterInfo(process: KernelProcess, hAdapter: unknown, type: unknown): Record<string, unknown> { return this.os.handles.queryAdapterInfo(record(process), hAdapter, type); }
  createDevice(process: KernelProcess, args: unknown): number { return this.os.handles.createDevice(record(process), args); }

  // ── D3DKMT: native fences and sharing ──

  createNativeFence(process: KernelProcess, args: unknown): { hSyncObject: number; mapping: NativeFenceMapping } { return this.os.fences.createNativeFence(record(process), args); }
  shareObjects(process: KernelProcess, hSyncObject: unknown): number { return this.os.fences.shareObject(record(process), hSyncObject); }
  duplicateHandle(process: KernelProcess, hNtHandle: unknown, target: KernelProcess): number { return this.os.fences.duplicateNtHandle(record(process), hNtHandle, record(target)); }
  closeHandle(process: KernelProcess, hNtHandle: unknown): void { this.os.fences.closeNtHandle(record(process), hNtHandle); }
  openNativeFenceFromNtHandle(process: KernelProcess, args: unknown): { hSyncObject: number; mapping: NativeFenceMapping } { return this.os.fences.openNativeFenceFromNtHandle(record(process), args); }
  destroySynchronizationObject(process: KernelProcess, hSyncObject: unknown): void { this.os.fences.destroySynchronizationObject(record(process), hSyncObject); }
  /** The user-mode CPU VA of the fence's CurrentValue (its read-only mapping in `process`). */
  currentValueCpuVa(process: KernelProcess, hSyncObject: number): bigint { return this.os.fences.currentValueCpuVa(record(process), hSyncObject); }
  /** The physical address behind a user-mode CPU VA of `process` (read-only mappings only), or undefined. */
  translateUser(process: KernelProcess, va: bigint): number | undefined { return record(process).translateUser(va); }

  // ── D3DKMT: CPU signals and waits, CPU events ──

  signalSynchronizationObjectFromCpu(process: KernelProcess, args: unknown): void { this.signals.signalFromCpu(record(process), args); }

  /**
   * D3DKMTWaitForSynchronizationObjectFromCpu: validates and starts the wait; `onComplete` runs once, now or later
   * (`deferred`: the caller's own code, run after the OS is done, never inside it). Returns the result when the wait
   * ended at once. `owner`: the caller's object behind the wait, for tools.
   */
  waitForSynchronizationObjectFromCpu(process: KernelProcess, args: unknown, label: string, onComplete: (result: WaitResult) => void,
                                      owner?: Omit<WaiterOwner, 'process'> | WaiterOwner, deferred = false): WaitResult | undefined {
    return this.waits.beginWait(record(process), args, label, onComplete, owner, deferred);
  }
  /** The same wait with hAsyncEvent: the event is set when it is satisfied. */
  waitWithEvent(process: KernelProcess, args: unknown): void { this.os.events.waitWithEvent(record(process), args); }

  createEvent(process: KernelProcess, name: string): number { return this.os.events.createEvent(record(process), name); }
  isEventSet(process: KernelProcess, hEvent: unknown): boolean { return this.os.events.isEventSet(record(process), hEvent); }
  resetEvent(process: KernelProcess, hEvent: unknown): void { this.os.events.resetEvent(record(process), hEvent); }
  /** A thread's wait on a CPU event: `{ set: true }` when it is set already, else `wake` runs when it is. */
  waitForEvent(process: KernelProcess, hEvent: unknown, wake: () => void): { set: boolean; event: CpuEvent } { return this.os.events.waitForEvent(record(process), hEvent, wake); }

  // ── D3DKMT: hardware queues and user-mode submission ──

  createHwQueue(process: KernelProcess, args: unknown): { hHwQueue: number; hProgressFence?: number; adapterIndex: number; privateDriverData: Uint8Array } {
    return this.os.hwQueues.createHwQueue(record(process), args);
  }
  destroyHwQueue(process: KernelProcess, hHwQueue: unknown): void { this.os.hwQueues.destroyHwQueue(record(process), hHwQueue); }
  /** hSyncObject of a hardware queue's progress fence (undefined without one). */
  progressFenceOf(process: KernelProcess, hHwQueue: unknown): number | undefined { return this.os.handles.resolve(record(process), hHwQueue, 'hwQueue', 'hHwQueue').progress?.handle; }
  /** A command list for `process`'s submissions (src/os/command-list.ts). */
  createCommandList(process: KernelProcess, options?: unknown): CommandList { return new CommandList(record(process), options); }
  /** User-mode submission, first half: what may go into the ring, checked (nothing changes yet). */
  prepareSubmission(process: KernelProcess, args: unknown): SubmissionPlan { return this.os.hwQueues.prepareSubmission(record(process), args); }
  /** Second half, after the driver's user-mode half wrote the ring: the OS records what was submitted. */
  submitted(plan: SubmissionPlan): { progressValue?: bigint } { return this.os.hwQueues.submitted(plan); }

  // ── D3DKMT: monitored fences and kernel-mode contexts (WDDM 2.x) ──

  createSynchronizationObject(process: KernelProcess, args: { hDevice: number; type: 'MONITORED_FENCE'; initialValue?: bigint | number; flags?: SyncObjectFlags; engineAffinity?: number; name?: string }): MonitoredFenceCreated {
    return this.os.monitored.create(record(process), args);
  }
  createContext(process: KernelProcess, args: unknown): number { return this.os.contexts.create(record(process), args); }
  destroyContext(process: KernelProcess, hContext: unknown): void { this.os.contexts.destroy(record(process), hContext); }
  submitCommand(process: KernelProcess, args: unknown): { submitted: number } { return this.os.contexts.submitCommand(record(process), args); }
  waitForSynchronizationObjectFromGpu(process: KernelProcess, args: unknown): void { this.os.contexts.waitFromGpu(record(process), args); }
  signalSynchronizationObjectFromGpu(process: KernelProcess, args: unknown): void { this.os.contexts.signalFromGpu(record(process), args); }

  // ── D3DKMT: allocations (WDDM 2.0 VidMm, src/os/vidmm/) ──

  createAllocation(process: KernelProcess, args: unknown): { hAllocation: number } { return this.vidmm.createAllocation(record(process), args); }
  destroyAllocation2(process: KernelProcess, args: unknown): { freed: boolean; hEvent?: number } { return this.vidmm.destroyAllocation2(record(process), args); }
  lock2(process: KernelProcess, args: unknown): { pData: bigint } { return this.vidmm.lock2(record(process), args); }
  unlock2(process: KernelProcess, args: unknown): void { this.vidmm.unlock2(record(process), args); }
  makeResident(process: KernelProcess, args: unknown): { segment: string } { return this.vidmm.makeResident(record(process), args); }
  evict(process: KernelProcess, args: unknown): void { this.vidmm.evict(record(process), args); }
  invalidateCache(process: KernelProcess, args: unknown): void { this.vidmm.invalidateCache(record(process), args); }
  /** A CPU store / load through a Lock2 mapping (through the CPU cache model on a non-coherent platform). */
  cpuWrite(process: KernelProcess, va: unknown, data: unknown): void { this.vidmm.cpuWrite(record(process), va, data); }
  cpuRead(process: KernelProcess, va: unknown, length: unknown): Uint8Array { return this.vidmm.cpuRead(record(process), va, length); }
  /** The allocations a submission declares it reads and writes, checked before it is submitted (hardware queue / context). */
  prepareUse(process: KernelProcess, hHwQueue: unknown, reads: unknown, writes: unknown): PreparedUse { return this.vidmm.prepareUse(record(process), hHwQueue, reads, writes); }
  prepareContextUse(process: KernelProcess, hContext: unknown, commands: unknown, reads: unknown, writes: unknown): PreparedUse { return this.vidmm.prepareContextUse(record(process), hContext, commands, reads, writes); }
  /** The submission went in: its accesses happen when the GPU reaches `progressValue` (or its context's fence write). */
  commitUse(use: PreparedUse, progressValue?: bigint): void { this.vidmm.commitUse(use, progressValue); }
}
