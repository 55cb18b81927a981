// Public WDDM numbers the model uses (../shared/WDDM-FACTS.md), in one place.

export const UINT64_MAX = 0xffff_ffff_ffff_ffffn;
export const UINT32_MAX = 0xffff_ffffn;

/** DXGK_VIDSCHCAPS bits. */
export const VIDSCHCAPS = {
  No64BitAtomics: 1 << 5,
  NativeGpuFence: 1 << 11,
  OptimizedNativeFenceSignaledInterrupt: 1 << 12,
} as const;

export const DXGK_FEATURE_NATIVE_FENCE = 37;
export const DXGKQAITYPE_NATIVE_FENCE_CAPS = 37;
export const KMTQAITYPE_WDDM_3_1_CAPS = 'KMTQAITYPE_WDDM_3_1_CAPS';
export const DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED = 19;
export const DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED = 'DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED';
/** A kernel-mode context's command buffer (DMA buffer) completed; carries its SubmissionFenceId. */
export const DXGK_INTERRUPT_DMA_COMPLETED = 'DXGK_INTERRUPT_DMA_COMPLETED';
/** MF-07: on a No64BitAtomics adapter, outstanding waits and signals stay within UINT32_MAX / 2 of the last signalled value. */
export const MONITORED_FENCE_WINDOW = 0x7fff_ffffn;
/** DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::EvaluateLegacyMonitoredFences. */
export const INTERRUPT_FLAG_EVALUATE_LEGACY_MONITORED_FENCES = 1 << 2;

/** D3DDDI_NATIVEFENCE_TYPE. */
export const NATIVE_FENCE_TYPE = { DEFAULT: 0, INTRA_GPU: 1 } as const;
export type NativeFenceTypeName = keyof typeof NATIVE_FENCE_TYPE;

/** Sync object types. */
export const SYNC_OBJECT_TYPE = {
  MUTEX: 1, SEMAPHORE: 2, FENCE: 3, CPU_NOTIFICATION: 4, MONITORED_FENCE: 5, PERIODIC_MONITORED_FENCE: 6, NATIVE_FENCE: 7,
} as const;

/** D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS bits. */
export const SYNC_FLAG_BITS = {
  shared: 0, ntSecuritySharing: 1, crossAdapter: 2, topOfPipeline: 3, noSignal: 4, noWait: 5,
  noSignalMaxValueOnTdr: 6, noGpuAccess: 7, signalByKmd: 8, unwaitCpuWaitersOnlyOnDestroy: 10,
} as const;
export type SyncObjectFlagName = keyof typeof SYNC_FLAG_BITS;
export type SyncObjectFlags = Partial<Record<SyncObjectFlagName, boolean>>;

export function syncFlagsValue(flags: SyncObjectFlags): number {
  let value = 0;
  for (const name of Object.keys(flags) as SyncObjectFlagName[]) if (flags[name]) value |= 1 << SYNC_FLAG_BITS[name];
  return value;
}

/** D3DDDICB_SIGNALFLAGS bits. */
export const SIGNAL_FLAG_BITS = { signalAtSubmission: 0, enqueueCpuEvent: 1, allowFenceRewind: 2 } as const;

/** DXGKARG_UPDATECURRENTVALUESFROMCPU flags. */
export const UPDATE_CURRENT_VALUES_FLAGS = { AlwaysSignaled: 1 << 0, NotificationOnly: 1 << 1 } as const;

/** DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1 bits. */
export const NATIVE_FENCE_OS_CAPS = { SupportOptimizedDefaultFenceType: 1 << 0, SupportIntraGpuFenceType: 1 << 1 } as const;

/** Kernel CPU VAs are modelled as a fixed offset over physical addresses. */
export const KERNEL_VA_BASE = 0xffff_8000_0000_0000n;
/** User-mode read-only mappings start here in every process. */
export const USER_VA_BASE = 0x0000_7ff0_0000_0000n;
/** Default start of the GPU VA range when the driver gives none. */
export const DEFAULT_GPU_VA_BASE = 0x0000_0001_0000_0000n;

export const MAX_OBJECTS_PER_CALL = 32;

export const hex = (value: number | bigint): string => `0x${value.toString(16)}`;

// ── allocation usage tracking (WDDM 2.0, src/os/vidmm/) ──

/** D3DDDICB_DESTROYALLOCATION2FLAGS bits. */
export const DESTROY_ALLOCATION2_FLAG_BITS = { AssumeNotInUse: 0, SynchronousDestroy: 1 } as const;
/** D3D11_MAP values. */
export const D3D11_MAP = { READ: 1, WRITE: 2, READ_WRITE: 3, WRITE_DISCARD: 4, WRITE_NO_OVERWRITE: 5 } as const;
export const D3D11_MAP_FLAG_DO_NOT_WAIT = 0x100000;
export const S_OK = 0;
export const DXGI_ERROR_WAS_STILL_DRAWING = 0x887a000a;
/** DXGK_SEGMENTFLAGS bits for the CpuHostAperture. */
export const SEGMENT_FLAG_BITS = { SupportsCpuHostAperture: 13, SupportsCachedCpuHostAperture: 14 } as const;
