// The OS as tools see it: read-only views, the second of the two doors into src/os/ (kernel.ts is the other).
//
//   what                         for                                      read from
//   ──────────────────────────────────────────────────────────────────────────────────────────────────────
//   counters, legacyCounters,    machine.summary(), the page, the CLI      the modules that count
//   logCounters, crossAdapter…
//   pendingWaiterList,           machine.stuck() (src/machine/liveness.ts)  waits, lifetime, contexts,
//   hwQueueWaits, heldContexts                                              the adapters' devices
//   lostWakeups, onWaitTimedOut  machine.lostWakeups() (NF-10)             waits
//   inspectFence                 machine.inspectFence (a kernel debugger)  the fence's record and heap
//   logs                         the timeline (LOG-08), faults, tests      the log reader's history
//   operation                    the race explorer (the OS's lock)         waits
//   vidmm                        machine.vidmm (allocations)               VidMm
//
// Nothing here changes the machine: a fence is read with peekValue (no MF-07 write-back), a fence kept as a row
// (src/os/fence-rows.ts) is read as a row where a view allows it. The views are the OS's records typed narrowly
// (FenceView, HandleView …): what a tool may read of them, no table, no module.

import type { DriverStartResult } from '../ddi/ddi.js';
import { u64 } from '../core/bindings.js';
import type { Counters, Dxgkrnl } from './dxgkrnl.js';
import type { CrossAdapterCounters } from './cross-adapter.js';
import type { GpuRewind } from './gpu-rewind.js';
import type { InterruptMark, LogCounters, LogEntryRecord, LogFault, LogOverrun, QueuedEvent } from './log-records.js';
import type { LegacyCounters } from './monitored.js';
import { keyLabel, rowKeyAdapterIndex, rowKeyCoreFence, rowsOf } from './fence-rows.js';
import type { AdapterState, BugCheckReport, GlobalFence, KernelProcess, PendingWaiter, Process, WaiterOwner } from './objects.js';
import type { OsOperation } from './waits.js';
import type { AllocationInfo, CoherenceFault, GpuRead, VidMm, VidMmCounters } from './vidmm/vidmm.js';

export type { Counters } from './dxgkrnl.js';
export type { CrossAdapterCounters } from './cross-adapter.js';
export type { GpuRewind } from './gpu-rewind.js';
export type { InterruptMark, LogCounters, LogEntryRecord, LogFault, LogFaultKind, LogOverrun, QueuedEvent } from './log-records.js';
export type { LegacyCounters } from './monitored.js';
export type { AdapterState, BugCheckReport, WaiterOwner, WaitResult, WaitStatus } from './objects.js';
export type { OperationPhase, OsOperation } from './waits.js';
export type { AllocationInfo, CoherenceFault, GpuRead, LockPath, VidMmCounters } from './vidmm/vidmm.js';

/** A fence's record on one adapter, as tools read it. */
export interface FenceView {
  readonly label: string;
  readonly coreFence: number;
  /** Physical address of its CurrentValue word: one fence is one word (a cross-adapter fence's records share it). */
  readonly cvPhys: number;
  readonly kind: 'native' | 'monitored';
  readonly destroyed: boolean;
  /** No open handle is left but GPU commands still name it: storage kept until they drain. */
  readonly destroyPending: boolean;
  /** Its MonitoredValue is held at 0 on this adapter (a cross-adapter fence, XA-03). */
  readonly monitoredValueHeld: boolean;
  readonly adapter: AdapterView;
  /** The value as the OS would read it now, changing nothing (GlobalFence.peekValue). */
  peekValue(): bigint;
  /** Its values' GPU VAs in the System process (0n when not mapped there). */
  readonly systemCvVa: bigint;
  readonly systemMvVa: bigint;
}

/** A process's handle to a fence. */
export interface HandleView {
  readonly handle: number;
  readonly global: FenceView;
  /** The process closed it; its close waits for GPU commands that name it. */
  readonly closing: boolean;
  readonly cvGpuVa: bigint;
  readonly mvGpuVa: bigint;
  readonly cvCpuVa: bigint;
}

export interface AdapterView {
  readonly index: number;
  readonly name: string;
  readonly state: AdapterState;
  readonly caps: DriverStartResult;
  readonly nativeFence: boolean;
  readonly bugCheck?: BugCheckReport;
  readonly devices: ReadonlySet<DeviceView>;
}

export interface DeviceView {
  readonly handle: number;
  readonly removed: boolean;
  readonly process: { readonly name: string };
  readonly adapter: AdapterView;
  readonly queues: ReadonlySet<HwQueueView>;
}

/** A hardware queue as the OS knows it (from the driver's progress reports: no peeking at the ring). */
export interface HwQueueView {
  readonly handle: number;
  /** The driver's handle. */
  readonly hHwQueue: number;
  readonly label: string;
  readonly engine: number;
  readonly device: DeviceView;
  readonly progress?: HandleView;
  readonly progressValue: bigint;
  /** The queue's private driver data, as the user-mode half received it from createHwQueue (a tool that writes a ring itself, as a UMD does, passes it to submitToHwQueue). */
  readonly privateDriverData: Uint8Array;
  readonly gpu: { readonly inRing: number; readonly blocked?: { readonly local: HandleView; readonly value: bigint } };
  readonly references: { readonly pendingCount: number };
}

/** A submitted wait or signal the GPU has not executed yet. */
export interface InFlightView { readonly op: 'wait' | 'signal'; readonly local: HandleView; readonly value: bigint }

export interface ContextView {
  readonly handle: number;
  readonly hContext: number;
  readonly label: string;
  readonly engine: number;
  readonly device: DeviceView;
  readonly destroyed: boolean;
  /** VidSch's software queue (packets not yet on the engine) and the command buffers on it. */
  readonly packets: readonly { readonly type: 'commandBuffer' | 'wait' | 'signal' }[];
  readonly inFlight: readonly { readonly id: number }[];
}

/** A kernel-mode context held by the GPU wait at its head, with the signals queued behind it. */
export interface HeldContextView {
  readonly context: ContextView;
  readonly fences: readonly FenceView[];
  readonly values: readonly bigint[];
  readonly queuedSignals: readonly { readonly fence: FenceView; readonly value: bigint }[];
}

/** A CPU waiter still waiting. */
export interface WaiterView {
  readonly id: number;
  readonly label: string;
  readonly mode: 'all' | 'any';
  readonly owner: WaiterOwner;
  readonly timed: boolean;
  readonly waits: readonly { readonly fence: FenceView; readonly value: bigint }[];
}

/** What the log reader keeps for the timeline (the most recent limits.timelineRecords of each kind). */
export interface LogHistory {
  readonly counters: LogCounters;
  readonly historyRecords: number;
  readonly queued: QueuedEvent[];
  readonly entries: LogEntryRecord[];
  readonly interrupts: InterruptMark[];
  readonly overruns: LogOverrun[];
  readonly faults: LogFault[];
  /** The faults that are contract violations (an interrupt naming a queue destroyed on its way is not). */
  readonly violations: LogFault[];
  /** Log readers held back by an injected fault (LOG-05). */
  readonly readersBehind: number;
}

/** machine.inspectFence: what the kernel knows of one fence (read-only; no user-mode path reads MonitoredValue). */
export interface FenceInspection {
  fence: string;
  adapter: string;
  kind: 'native' | 'monitored';
  currentValue: bigint;
  /** Native fences: the MonitoredValue the CMP compares against (UINT64_MAX with no CPU waiter). */
  monitoredValue?: bigint;
  /** CPU waiters (wait blocks in the fence's heap). */
  cpuWaiters: number;
  /** Submitted GPU waits / signals naming it that have not executed yet. */
  gpuWaitsInFlight: number;
  gpuSignalsInFlight: number;
  /** Open handles to this record, in every process (closed ones still draining GPU work not counted). */
  openHandles: number;
  /** No open handle is left anywhere but GPU commands still name it: storage kept until they drain. */
  destroyPending: boolean;
}

/** A native fence of an adapter by core id, read without making its objects (a row stays a row). */
export interface NativeFenceRecordView {
  readonly label: string;
  readonly kind: 'native' | 'monitored';
  readonly destroyed: boolean;
  /** XA-03: the OS holds its MonitoredValue at 0. */
  readonly monitoredValueHeld: boolean;
}

/** A fence by its key, as OsInspector.fenceKey reads it from its row. */
export interface FenceKeyView { readonly adapterIndex: number; readonly coreFence: number; readonly label: string; readonly cvPhys: number }

/** VidMm's read-only side (machine.vidmm). */
export interface VidMmView {
  readonly counters: VidMmCounters;
  readonly gpuReads: readonly GpuRead[];
  readonly coherenceFaults: readonly CoherenceFault[];
  /** Records kept of each kind (limits.allocationRecords). */
  readonly records: number;
  readonly ioCoherent: boolean;
  /** Each adapter's CpuHostAperture (VM-06): its page table (aperture page → physical page) and size. */
  readonly adapters: readonly { readonly aperture: { readonly pageTable: Uint32Array; readonly sizeInPages: number; readonly pagesInUse: number } }[];
  info(hAllocation: number): AllocationInfo | undefined;
  segmentUsage(adapter: number): { id: number; name: string; sizeBytes: number; usedBytes: number }[];
}

export class OsInspector {
  constructor(private readonly os: Dxgkrnl, private readonly vidMm: VidMm) {}

  /** The OS's DXGK_FEATURE_NATIVE_FENCE switch (machine option os.nativeFence): what IsFeatureEnabled answers. */
  get nativeFenceFeature(): boolean { return this.os.options.nativeFence; }

  // ── counters ──

  get counters(): Counters { return this.os.counters; }
  get legacyCounters(): LegacyCounters { return this.os.legacyCounters; }
  get logCounters(): LogCounters { return this.os.logs.counters; }
  get crossAdapterCounters(): Readonly<CrossAdapterCounters> { return this.os.crossAdapter.counters; }
  /** The cross-adapter line of summaryText (undefined when there is nothing cross-adapter to say). */
  crossAdapterSummaryLine(doorbell: { posted: number; taken: number }): string | undefined { return this.os.crossAdapter.summaryLine(doorbell); }
  /** Cross-adapter fences now (groups of records). */
  get crossAdapterFences(): number { return this.os.crossAdapter.groupCount; }
  get bugChecks(): readonly BugCheckReport[] { return this.os.bugChecks; }
  get adapters(): readonly AdapterView[] { return this.os.adapters; }

  // ── CPU waiters ──

  get pendingWaiters(): number { return this.os.waits.pendingWaiters; }
  /** The CPU waiters still waiting, oldest first, with what each still waits for. */
  pendingWaiterList(): WaiterView[] { return this.os.waits.pendingWaiterList() as PendingWaiter[]; }
  /** Waiters whose value is reached but which still wait (NF-10; meaningful when nothing is on its way: machine.lostWakeups). */
  lostWakeups(): { waiter: string; fence: string; value: bigint; currentValue: bigint }[] { return this.os.waits.lostWakeups(); }
  /** Calls `listener` with each wait that times out, its unsatisfied entries, before it is released. */
  onWaitTimedOut(listener: (waiter: { label: string; mode: 'all' | 'any'; waits: { fence: FenceView; value: bigint }[] }) => void): void {
    this.os.waits.timeoutListeners.push(listener);
  }
  /** Calls `listener` for every GPU signal that lowers a fence's CurrentValue from now on; returns the function that stops it. */
  onGpuRewind(listener: (rewind: GpuRewind) => void): () => void { return this.os.gpuRewinds.onRewind(listener); }

  // ── what is blocked (machine.stuck()) ──

  /** Submitted waits and signals of `queue` the GPU has not executed yet, oldest first. */
  inFlight(queue: HwQueueView): readonly InFlightView[] { return this.os.lifetime.pending(queue as never); }
  /** Kernel-mode contexts held by the GPU wait at their head (running adapters, devices not removed). */
  heldContexts(): readonly HeldContextView[] { return this.os.contexts.held(); }
  /** The monitored fences head-of-context GPU waits of adapter `index` are held on. */
  heldOn(index: number): readonly FenceView[] { return this.os.contexts.heldOn(this.os.adapters[index]); }
  contextsOf(process: KernelProcess): readonly ContextView[] { return this.os.contexts.contextsOf(process as never); }

  // ── a process's handles ──

  /** The fence record `hSyncObject` names in `process` (INVALID_HANDLE and the like, as the entry points refuse it). */
  fenceOf(process: KernelProcess, hSyncObject: unknown): FenceView { return this.handleOf(process, hSyncObject).global; }
  handleOf(process: KernelProcess, hSyncObject: unknown): HandleView { return this.os.handles.resolve(process as never, hSyncObject, 'syncObject', 'hSyncObject'); }
  hwQueueOf(process: KernelProcess, hHwQueue: unknown): HwQueueView { return this.os.handles.resolve(process as never, hHwQueue, 'hwQueue', 'hHwQueue'); }
  /** Open handles, closed handles and NT handles of `process`. */
  handleCounts(process: KernelProcess): { handles: number; closed: number; ntHandles: number } {
    const p = process as unknown as Process;
    return { handles: p.handles.size, closed: p.retired.size, ntHandles: p.ntHandles.size };
  }
  /** The CurrentValue words (physical addresses) of every fence `process` holds a handle to. */
  fenceWordsOf(process: KernelProcess): Set<number> {
    const words = new Set<number>();
    for (const object of (process as unknown as Process).handles.values()) if (object.kind === 'syncObject') words.add(object.global.cvPhys);
    return words;
  }
  /** The CurrentValue word of the fence `hSyncObject` names in `process`; undefined when it names no sync object (no error: a thread's declaration may name a closed handle). */
  fenceWordAt(process: KernelProcess, hSyncObject: number): number | undefined {
    const object = (process as unknown as Process).handles.get(hSyncObject);
    return object?.kind === 'syncObject' ? object.global.cvPhys : undefined;
  }

  /** Native fence `coreFence` of adapter `index` as the OS holds it, without making its objects; undefined when none lives there. */
  nativeFenceAt(index: number, coreFence: number): NativeFenceRecordView | undefined {
    const adapter = this.os.adapters[index];
    const fence = adapter.fences.peek(coreFence);
    if (fence !== undefined) return fence;
    return rowsOf(adapter).has(coreFence) ? { label: `fence${coreFence}`, kind: 'native', destroyed: false, monitoredValueHeld: false } : undefined;
  }

  /** machine.inspectFence: a kernel debugger's look at the fence `hSyncObject` names in `process`. */
  inspectFence(process: KernelProcess, hSyncObject: unknown): FenceInspection {
    const global = this.os.handles.resolve(process as never, hSyncObject, 'syncObject', 'hSyncObject').global as GlobalFence;
    return {
      fence: global.label, adapter: global.adapter.name, kind: global.kind, currentValue: global.peekValue(),
      monitoredValue: global.kind === 'native' ? u64(global.adapter.core.cpuReadMonitoredValue(global.coreFence)) : undefined,
      cpuWaiters: this.os.waits.fenceWaiterCount(global),
      gpuWaitsInFlight: global.gpuWaitsInFlight, gpuSignalsInFlight: global.gpuSignalsInFlight,
      openHandles: [...global.locals].filter((l) => !l.closing).length, destroyPending: global.destroyPending,
    };
  }

  // ── log history, hardware queues with logs ──

  get logs(): LogHistory { return this.os.logs; }
  /** Adapter `index`'s live hardware queues with log buffers (user-mode submission queues). */
  liveHwQueues(index: number): { label: string; hHwQueue: number }[] {
    return this.os.logs.liveQueues(this.os.adapters[index]).map((ql) => ({ label: ql.queue.label, hHwQueue: ql.queue.hHwQueue }));
  }

  // ── the OS's lock (schedule.osGranularity 'step') ──

  /** OS operations run in steps (the machine's schedule.osGranularity 'step'). */
  get stepwise(): boolean { return this.os.waits.stepwise; }
  get lockHeld(): boolean { return this.os.lockHeld; }
  /** The OS operation in flight, holding the lock (stepwise only): its phase and what its next step works on. */
  get operation(): Readonly<OsOperation> | undefined { return this.os.waits.operation; }
  /**
   * The fence an operation's loop names by key (its batch's `fences`: src/os/fence-rows.ts, core id × 8 + adapter
   * index), read from its row without making its view: its adapter, core id, label and CurrentValue's physical address.
   */
  fenceKey(key: number): FenceKeyView {
    const adapterIndex = rowKeyAdapterIndex(key), coreFence = rowKeyCoreFence(key);
    return { adapterIndex, coreFence, label: keyLabel(key, this.os.adapters), cvPhys: rowsOf(this.os.adapters[adapterIndex]).cvPhysOf(coreFence) };
  }

  // ── allocations ──

  get vidmm(): VidMmView { return this.vidMm; }
}
