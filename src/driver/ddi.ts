// The one interface between the OS model and a kernel-mode driver.
//
// The OS (src/os/) calls a driver only through KernelModeDriver, and a driver
// calls the OS only through DxgkrnlCallbacks. Argument objects carry the
// documented DXGKARG_* field names. The OS records every call in the trace
// before making it, so any driver behind this interface (the reference driver
// in reference.ts today, a user's own tomorrow) is traced and judged the same.

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
  PrivateDriverData: Uint8Array;
  /** Model-only: the core's id of the fence storage, so the reference hardware can find it. */
  CoreFence: number;
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
  /** Model-only: the process slot whose GPU VA space the queue runs in. */
  ProcessSlot: number;
  /** Model-only: the queue's name in the trace. */
  DebugName: string;
}
export interface DXGKARG_DESTROYHWQUEUE { hHwQueue: number }

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
  /** Core id of the fence storage (fenceWrite). */
  coreFence: number;
  /** FenceValueGPUVirtualAddress in the context's process (fenceWrite). */
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
}

export interface KernelModeDriver {
  /** DxgkDdiStartDevice: the driver queries the OS and reports its caps. */
  startDevice(os: DxgkrnlCallbacks): DriverStartResult;
  /** DxgkDdiQueryAdapterInfo(DXGKQAITYPE_NATIVE_FENCE_CAPS). */
  queryNativeFenceCaps(): NativeFenceCaps;
  createNativeFence(args: DXGKARG_CREATENATIVEFENCE): { hGlobalNativeFence: number };
  openNativeFence(args: DXGKARG_OPENNATIVEFENCE): { hLocalNativeFence: number };
  closeNativeFence(args: DXGKARG_CLOSENATIVEFENCE): void;
  destroyNativeFence(args: DXGKARG_DESTROYNATIVEFENCE): void;
  updateCurrentValuesFromCpu(args: DXGKARG_UPDATECURRENTVALUESFROMCPU): void;
  updateMonitoredValues(args: DXGKARG_UPDATEMONITOREDVALUES): void;
  /**
   * Returns the driver's hHwQueue and, model-only, the core's id of the queue record (the OS's log
   * reader and SetNativeFenceLogBuffer address the queue's log buffers through it).
   */
  createHwQueue(args: DXGKARG_CREATEHWQUEUE): { hHwQueue: number; coreQueue: number };
  destroyHwQueue(args: DXGKARG_DESTROYHWQUEUE): void;
  /** DxgkDdiSetNativeFenceLogBuffer: from now on the GPU logs to this buffer (LOG-03). */
  setNativeFenceLogBuffer(args: DXGKARG_SETNATIVEFENCELOGBUFFER): void;
  /** DxgkDdiUpdateNativeFenceLogs: make every log entry these queues wrote visible to the CPU (LOG-06). */
  updateNativeFenceLogs(args: DXGKARG_UPDATENATIVEFENCELOGS): void;
  /** Device removal / TDR: the driver stops its engines and drops queued work. */
  resetEngines(): void;
  /**
   * The user-mode driver half of user-mode submission: write commands into the
   * queue's ring and ring its doorbell. The OS never sees this (it only traces
   * that the UMD did it). Throws, writing nothing, when the ring has no room.
   */
  writeUserModeCommands(hHwQueue: number, commands: UserModeCommand[]): void;
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

export interface UserModeCommand {
  op: 'wait' | 'signal' | 'work';
  /** Core id of the fence storage (the UMD's private data from create/open). */
  coreFence: number;
  /** CurrentValueGpuVa in the queue's process. */
  gpuVa: bigint;
  /** Fence value, or the duration in ns for work. */
  value: bigint;
  /** User-mode fence handle (for log entries). */
  handle: number;
}
