// The one seam between the OS model and a driver, in both directions.
//
//   OS (src/os/) ──KernelModeDriver (through the driver port, src/port/)──▶ kernel-mode driver
//   kernel-mode driver ──DxgkrnlCallbacks──▶ OS
//   user mode (src/user/runtime.ts) ──UserModeDriverInterface──▶ the driver's user-mode half
//
// Argument objects carry the documented DXGKARG_* field names and what a real
// driver gets: handles it made, addresses (kernel CPU VAs, GPU VAs), private
// driver data; never an id of the core's records (a driver finds its own
// records from what it is given). The driver port records every DDI call with
// its arguments in the trace before making it, so any driver behind this
// interface (the reference driver in reference.ts today, a user's own
// tomorrow) is traced and judged the same. A few members are marked
// "model-only": what the simulation needs that WDDM carries some other way
// (a process slot instead of a process's page tables, per-command GPU
// progress instead of the progress fence); each says why.

export interface NativeFenceCaps {
  /** DXGK_NATIVE_FENCE_CAPS::MonitoredValuePadding (older name MonitoredValueStride), bytes after each 8-byte MonitoredValue. */
  MonitoredValuePadding: number;
  MapToGpuSystemProcess: boolean;
  /** Optional GPU VA range for fence mappings (0n, 0n = anywhere). */
  MinimumAddress: bigint;
  MaximumAddress: bigint;
}

export interface FeatureResult { Enabled: boolean; Version: number }
export interface NativeFenceOsCaps { SupportOptimizedDefaultFenceType: boolean; SupportIntraGpuFenceType: boolean }
/** DXGKCBINT_FEATURE_NATIVEFENCE_1. */
export interface NativeFenceFeatureInterface { GetOSCaps(): NativeFenceOsCaps }

/** What DxgkDdiStartDevice + QueryAdapterInfo(DXGK_VIDSCHCAPS) yield. */
export interface DriverStartResult {
  /** DXGK_VIDSCHCAPS bits the driver advertises. */
  VidSchCaps: number;
  NativeFenceCaps: NativeFenceCaps;
  /**
   * Model-only (what the UMD knows about its engines): true when the engines can write a monitored
   * fence through its GPU VA (a fence-write command); false means GPU signals of monitored fences
   * go through software signal packets (SignalSynchronizationObjectFromGpu). Absent = true.
   */
  EnginesWriteMonitoredFences?: boolean;
}

export interface DXGKARG_CREATENATIVEFENCE {
  Type: number;
  CurrentValueSystemProcessGpuVa: bigint;
  MonitoredValueSystemProcessGpuVa: bigint;
  /** Kernel CPU VAs of both values (the OS allocated the storage). */
  CurrentValueKernelCpuVa: bigint;
  MonitoredValueKernelCpuVa: bigint;
  InitialFenceValue: bigint;
  /** In/out: the UMD's private data from D3DKMTCreateNativeFence (64 bytes). */
  PrivateDriverData: Uint8Array;
}
export interface DXGKARG_OPENNATIVEFENCE {
  hGlobalNativeFence: number;
  hDevice: number;
  CurrentValueGpuVa: bigint;
  MonitoredValueGpuVa: bigint;
}
export interface DXGKARG_CLOSENATIVEFENCE { hLocalNativeFence: number }
export interface DXGKARG_DESTROYNATIVEFENCE { hGlobalNativeFence: number }
export interface DXGKARG_UPDATECURRENTVALUESFROMCPU {
  NumFences: number;
  NativeFenceArray: number[];
  UpdatedValueArray: bigint[];
  CurrentValueKernelCpuVa: bigint[];
  Flags: { AlwaysSignaled: boolean; NotificationOnly: boolean };
}
export interface DXGKARG_UPDATEMONITOREDVALUES {
  NumFences: number;
  NativeFenceArray: number[];
  UpdatedValueArray: bigint[];
  MonitoredValueKernelCpuVa: bigint[];
}
export interface DXGKARG_CREATEHWQUEUE {
  hDevice: number;
  EngineOrdinal: number;
  Flags: { NativeProgressFence: boolean };
  /** Driver handle of the progress fence (a native fence's hGlobalNativeFence with NativeProgressFence). */
  hHwQueueProgressFence: number;
  /** Model-only: the process slot whose GPU VA space the queue runs in (a real driver gets the process's page tables). */
  ProcessSlot: number;
  /** Model-only: the queue's name in the trace. */
  DebugName: string;
  /**
   * In/out, HWQUEUE_PRIVATE_DRIVER_DATA_BYTES bytes: what the driver's user-mode half needs to
   * find the queue again (the OS copies it back to user mode with the queue's handle).
   */
  PrivateDriverData: Uint8Array;
}
export interface DXGKARG_DESTROYHWQUEUE { hHwQueue: number }
/** Bytes of a hardware queue's private driver data (DXGKARG_CREATEHWQUEUE.PrivateDriverData). */
export const HWQUEUE_PRIVATE_DRIVER_DATA_BYTES = 16;

/** DXGKARG_SETNATIVEFENCELOGBUFFER: where one of a hardware queue's two log buffers now is (LOG-03). */
export interface DXGKARG_SETNATIVEFENCELOGBUFFER {
  hHwQueue: number;
  /** Entries the buffer holds (84 for 4 KiB); the buffer's header says the same and its Type. */
  NumberOfEntries: number;
  LogBufferCpuVa: bigint;
  LogBufferGpuVa: bigint;
  /** GPU VA in the system (paging) process for the CMP; 0 without MapToGpuSystemProcess. */
  LogBufferSystemProcessGpuVa: bigint;
  Flags: { Value: number };
}
/** DXGKARG_UPDATENATIVEFENCELOGS: flush pending log writes of these queues before the OS reads them (LOG-06). */
export interface DXGKARG_UPDATENATIVEFENCELOGS {
  NumberOfQueues: number;
  hHWQueueArray: number[];
  Flags: { Value: number };
}

/** DXGKARGCB_NOTIFY_INTERRUPT_DATA for DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED. */
export interface NativeFenceSignaledInterrupt {
  InterruptType: number;
  NodeOrdinal: number;
  EngineOrdinal: number;
  SignaledNativeFenceCount: number;
  /** Global handles, or null: "scan every native fence waiter". */
  pSignaledNativeFenceArray: number[] | null;
  /** Kernel handle of the running hardware queue (read only with OptimizedNativeFenceSignaledInterrupt). */
  hHWQueue: number;
  Flags: { EvaluateLegacyMonitoredFences: boolean };
}

// ── kernel-mode contexts (WDDM 2.x, OS-scheduled) ──

export interface DXGKARG_CREATECONTEXT {
  hDevice: number;
  /** The engine (node) the context runs on. */
  NodeOrdinal: number;
  /** Model-only: the process slot whose GPU VA space the context runs in. */
  ProcessSlot: number;
}
export interface DXGKARG_DESTROYCONTEXT { hContext: number }

/** One command of a kernel-mode context's command buffer (the UMD wrote it; the OS passes the buffer on). */
export interface ContextCommand {
  op: 'work' | 'fenceWrite';
  /** FenceValueGPUVirtualAddress in the context's process (fenceWrite): the engine writes there. */
  gpuVa: bigint;
  /** Fence value, or the duration in ns for work. */
  value: bigint;
  /** User-mode handle of the fence (fenceWrite), for the trace. */
  handle: number;
}

/** DXGKARG_SUBMITCOMMAND, reduced to what the model needs. */
export interface DXGKARG_SUBMITCOMMAND {
  hContext: number;
  /** Reported back in the DMA completed interrupt when the buffer has executed. */
  SubmissionFenceId: number;
  Commands: ContextCommand[];
}

/** DXGKARGCB_NOTIFY_INTERRUPT_DATA for DXGK_INTERRUPT_DMA_COMPLETED. */
export interface DmaCompletedInterrupt {
  InterruptType: 'DXGK_INTERRUPT_DMA_COMPLETED';
  NodeOrdinal: number;
  EngineOrdinal: number;
  SubmissionFenceId: number;
}

/** DXGKARGCB_NOTIFY_INTERRUPT_DATA for DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED: no fence named. */
export interface MonitoredFenceSignaledInterrupt {
  InterruptType: 'DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED';
  NodeOrdinal: number;
  EngineOrdinal: number;
}

/** DXGKARGCB_NOTIFY_INTERRUPT_DATA for DXGK_INTERRUPT_DMA_PAGE_FAULTED: the OS treats it as a TDR. */
export interface DmaPageFaultedInterrupt {
  InterruptType: 'DXGK_INTERRUPT_DMA_PAGE_FAULTED';
  NodeOrdinal: number;
  EngineOrdinal: number;
  /** The hardware queue (hHwQueue) or context (hContext) whose command faulted, 0 when unknown. */
  hQueue: number;
  /** Model-only: what faulted (the command, the address), in words, for the report. */
  Message: string;
}

/** What a hardware queue or kernel-mode context did on the GPU, one report per command (model-only). */
export type GpuProgressOperation =
  | 'WAIT_PASSED' | 'WAIT_BLOCKED' | 'WAIT_UNBLOCKED' | 'SIGNAL' | 'FENCE_WRITE' | 'WORK' | 'BUFFER_COMPLETED';

/**
 * Model-only callback data (DxgkrnlCallbacks.NotifyGpuProgress): one command a
 * hardware queue or a kernel-mode context executed on the GPU, or a wait that
 * blocked. A real OS learns the same, later and coarser, from the queue's
 * progress fence and its log buffers; the model's OS keeps its in-flight
 * references (fence lifetime), the stuck report, GPU rewinds, cross-adapter
 * wake latency and allocation data movement from it.
 */
export interface GpuProgressReport {
  /** The driver's handle of the queue (hHwQueue) or context (hContext) that executed the command. */
  hQueue: number;
  QueueKind: 'HW_QUEUE' | 'CONTEXT';
  EngineOrdinal: number;
  Operation: GpuProgressOperation;
  /** The user-mode fence handle the command named (waits, signals, fence writes); 0 otherwise. */
  hSyncObject: number;
  /** The command's value: a fence value; WORK: its duration in ns; BUFFER_COMPLETED: the SubmissionFenceId. */
  Value: bigint;
  /** SIGNAL: the CurrentValue its store overwrote (undefined when the fence was no longer live). */
  PreviousValue?: bigint;
  /** SIGNAL: the CMP raised the native fence signaled interrupt for it. */
  Interrupt?: boolean;
  /** GPU time of the step, and for waits the time the GPU first saw the wait. */
  GpuTimeNs: number;
  ObservedGpuTimeNs?: number;
}

/**
 * Model-only callback data (DxgkrnlCallbacks.QueryGpuProgressStretch): may the GPU run this hardware
 * queue's next commands as a stretch, reporting their count (NotifyGpuProgressStretch) instead of one
 * NotifyGpuProgress each? Only commands whose reports would need nothing of the OS but counting run in a
 * stretch (passed waits, work, signals that neither lower CurrentValue nor raise the interrupt).
 */
export interface GpuProgressStretchQuery {
  hQueue: number;
  QueueKind: 'HW_QUEUE' | 'CONTEXT';
  /** Commands in the queue's ring now (the OS compares them with what it saw submitted). */
  CommandsInRing: number;
}

/** Model-only callback data (DxgkrnlCallbacks.NotifyGpuProgressStretch): the queue's oldest `Commands` commands executed. */
export interface GpuProgressStretch {
  hQueue: number;
  QueueKind: 'HW_QUEUE' | 'CONTEXT';
  EngineOrdinal: number;
  /** Commands executed, in ring order. */
  Commands: number;
  /** Of them, waits and signals. */
  FenceCommands: number;
  /** GPU time when the stretch ended. */
  GpuTimeNs: number;
}

/** Model-only (XA-07): a signal's doorbell could not be posted to every adapter: the fence takes the interrupt path. */
export interface DoorbellFallback {
  NodeOrdinal: number;
  /** The signalled fence (the driver's handle). */
  hGlobalNativeFence: number;
  /** Records posted, and adapters whose ring was full. */
  RecordsPosted: number;
  RingsFull: number;
}

/** What the OS offers a driver (DXGKRNL_INTERFACE + the feature interface). */
export interface DxgkrnlCallbacks {
  /** DXGKCB_ISFEATUREENABLED2 (through DXGK_FEATURE_INTERFACE). */
  IsFeatureEnabled(featureId: number): FeatureResult;
  /** DXGKCB_QUERYFEATUREINTERFACE: null when the feature/version was not negotiated. */
  QueryFeatureInterface(featureId: number, version: number): NativeFenceFeatureInterface | null;
  /** DXGKCB_NOTIFY_INTERRUPT. */
  NotifyInterrupt(data: NativeFenceSignaledInterrupt): void;
  /** DXGKCB_NOTIFY_INTERRUPT with DXGK_INTERRUPT_DMA_COMPLETED (kernel-mode contexts). */
  NotifyDmaCompleted(data: DmaCompletedInterrupt): void;
  /** DXGKCB_NOTIFY_INTERRUPT with DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED. */
  NotifyMonitoredFenceSignaled(data: MonitoredFenceSignaledInterrupt): void;
  /** DXGKCB_NOTIFY_INTERRUPT with DXGK_INTERRUPT_DMA_PAGE_FAULTED: the OS resets the adapter (TDR). */
  NotifyDmaPageFaulted(data: DmaPageFaultedInterrupt): void;
  /** Model-only: one executed GPU command (GpuProgressReport says why). */
  NotifyGpuProgress(data: GpuProgressReport): void;
  /** Model-only: may the queue's next quiet commands be reported as a stretch (GpuProgressStretchQuery)? */
  QueryGpuProgressStretch(data: GpuProgressStretchQuery): boolean;
  /** Model-only: a stretch of quiet commands executed (instead of a NotifyGpuProgress each). */
  NotifyGpuProgressStretch(data: GpuProgressStretch): void;
  /** Model-only (XA-07): a doorbell ring was full; the OS propagates the fence after the interrupt. */
  NotifyDoorbellFallback(data: DoorbellFallback): void;
}

/**
 * A DDI part-way through (KernelModeDriver.updateMonitoredValues at schedule granularity 'step'):
 * the driver's own record of where it is, in fields (a schedule explorer snapshots and restores
 * it in place; a closure's variables it cannot see).
 */
export interface DdiInProgress {
  /** Performs the driver's next step of the DDI; true when the DDI has returned (nothing is left). */
  step(): boolean;
  /** What the next step() does, for people (step lists, traces): e.g. "cmpBarrier". */
  describeNext?(): string;
}

export interface KernelModeDriver {
  /** DxgkDdiStartDevice: the driver queries the OS and reports its caps. */
  startDevice(os: DxgkrnlCallbacks): DriverStartResult;
  /**
   * DxgkDdiStopDevice: the adapter is stopped for good (a bug check): its engines stop, pending
   * interrupts are dropped, and the driver calls back no more.
   */
  stopDevice(): void;
  /** DxgkDdiResetFromTimeout (TDR, device removal): the engines stop and every queue's and context's work is dropped. */
  resetFromTimeout(): void;
  /** DxgkDdiRestartFromTimeout: after the reset, the engines run again (new devices, queues and contexts may be made). */
  restartFromTimeout(): void;
  /** DxgkDdiQueryAdapterInfo(DXGKQAITYPE_NATIVE_FENCE_CAPS). */
  queryNativeFenceCaps(): NativeFenceCaps;
  createNativeFence(args: DXGKARG_CREATENATIVEFENCE): { hGlobalNativeFence: number };
  openNativeFence(args: DXGKARG_OPENNATIVEFENCE): { hLocalNativeFence: number };
  closeNativeFence(args: DXGKARG_CLOSENATIVEFENCE): void;
  destroyNativeFence(args: DXGKARG_DESTROYNATIVEFENCE): void;
  updateCurrentValuesFromCpu(args: DXGKARG_UPDATECURRENTVALUESFROMCPU): void;
  /**
   * DxgkDdiUpdateMonitoredValues. A driver may perform it in steps (on a machine built with
   * schedule.granularity 'step'): it does its first step and returns a DdiInProgress; the OS
   * calls step() for each next one, as scheduler events of their own (GPU steps run between
   * them), until it returns true (the DDI returned). Returning nothing: done at once.
   */
  updateMonitoredValues(args: DXGKARG_UPDATEMONITOREDVALUES): void | DdiInProgress;
  /** DxgkDdiCreateHwQueue: returns the driver's hHwQueue; fills args.PrivateDriverData for its user-mode half. */
  createHwQueue(args: DXGKARG_CREATEHWQUEUE): { hHwQueue: number };
  destroyHwQueue(args: DXGKARG_DESTROYHWQUEUE): void;
  /** DxgkDdiSetNativeFenceLogBuffer: from now on the GPU logs to this buffer (LOG-03). */
  setNativeFenceLogBuffer(args: DXGKARG_SETNATIVEFENCELOGBUFFER): void;
  /** DxgkDdiUpdateNativeFenceLogs: make every log entry these queues wrote visible to the CPU (LOG-06). */
  updateNativeFenceLogs(args: DXGKARG_UPDATENATIVEFENCELOGS): void;
  /** DxgkDdiCreateContext (kernel-mode contexts; optional so a native-only test driver need not have them). */
  createContext?(args: DXGKARG_CREATECONTEXT): { hContext: number };
  /** DxgkDdiDestroyContext: work the context still had on the engine is dropped. */
  destroyContext?(args: DXGKARG_DESTROYCONTEXT): void;
  /**
   * DxgkDdiSubmitCommand: put one command buffer on the context's engine. Returns false, taking
   * nothing, when the engine's queue has no room now (the OS retries at the next completion).
   */
  submitCommand?(args: DXGKARG_SUBMITCOMMAND): boolean;
}

/**
 * What a kernel-mode driver may add (optional): DxgkDdiUpdateCurrentValuesFromCpu for one fence, its arguments
 * as they are (no arrays, no argument object), with the DDI's meanings: NumFences 1, no flags. The OS calls it
 * for every CPU signal of one fence with no flag (observers and the trace see it as the array form's call), and
 * only when it is a function defined where updateCurrentValuesFromCpu is (the same object of the prototype chain),
 * so a driver that overrides only updateCurrentValuesFromCpu (an instance property, or a subclass) still sees every
 * CPU signal through its override.
 */
export interface KernelModeDriverCpuSignal {
  updateOneCurrentValueFromCpu(hGlobalNativeFence: number, updatedValue: bigint, currentValueKernelCpuVa: bigint): void;
}

// ── the user-mode half of a driver module ──

/** One command the user-mode driver writes into a hardware queue's ring. */
export interface UserModeCommand {
  op: 'wait' | 'signal' | 'work';
  /** CurrentValueGpuVa of the fence in the queue's process (waits and signals; 0 for work). */
  gpuVa: bigint;
  /** Fence value, or the duration in ns for work. */
  value: bigint;
  /** User-mode fence handle (log entries name it); 0 for work. */
  handle: number;
}

/** What user mode passes to write a hardware queue's ring. */
export interface UMDARG_SUBMITTOHWQUEUE {
  /** The queue's private driver data, as DxgkDdiCreateHwQueue left it (user mode got it back with the queue). */
  HwQueuePrivateDriverData: Uint8Array;
  Commands: UserModeCommand[];
}

/** A command's op in the typed form's Ops column (UMDARG_SUBMITCOLUMNSTOHWQUEUE). */
export const UMD_OP_WAIT = 0;
export const UMD_OP_SIGNAL = 1;
export const UMD_OP_WORK = 2;

/**
 * The same commands as UMDARG_SUBMITTOHWQUEUE in typed columns (no object per command): command i, for
 * i < CommandCount, is Ops[i] (UMD_OP_WAIT / UMD_OP_SIGNAL / UMD_OP_WORK), GpuVas[i], Values[i] and
 * Handles[i], with UserModeCommand's meanings. The columns may be longer than CommandCount (read only
 * the first CommandCount entries); like every argument they are the driver's during the call only.
 */
export interface UMDARG_SUBMITCOLUMNSTOHWQUEUE {
  HwQueuePrivateDriverData: Uint8Array;
  CommandCount: number;
  Ops: Uint8Array;
  GpuVas: BigUint64Array;
  Values: BigUint64Array;
  Handles: Uint32Array;
}

/**
 * The user-mode half of a driver module (its UMD), as the runtime calls it for
 * user-mode submission: it writes commands into the hardware queue's ring and
 * rings the queue's doorbell. The OS never calls it and never sees the ring.
 */
export interface UserModeDriverInterface {
  /** Writes every command or none: throws a WddmError, writing nothing, when the ring has no room for all. */
  submitToHwQueue(args: UMDARG_SUBMITTOHWQUEUE): void;
}

/**
 * What a user-mode half may add (optional): the typed form of submitToHwQueue, with its rules. The
 * runtime calls it instead of submitToHwQueue when it is a function defined where submitToHwQueue is
 * (the same object of the prototype chain), so a driver that overrides only submitToHwQueue (an
 * instance property, or a subclass) still sees every submission as records.
 */
export interface UserModeDriverColumns {
  submitColumnsToHwQueue(args: UMDARG_SUBMITCOLUMNSTOHWQUEUE): void;
}
