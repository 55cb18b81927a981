/*
 * wddm_fence_driver.h: a kernel-mode driver's native fence code, written in C, as the wddm-fence
 * model runs it. One header for both directions of the seam:
 *
 *   what the driver EXPORTS (the model calls it)        what the driver IMPORTS (it calls the model)
 *   ─────────────────────────────────────────────       ────────────────────────────────────────────
 *   DxgkDdiAddDevice, DxgkDdiStartDevice, …             Dxgkrnl's callbacks (module "dxgkrnl"):
 *   the native fence DDIs (Create/Open/Close/Destroy,     DxgkCbNotifyInterrupt, feature queries, …
 *     UpdateCurrentValuesFromCpu, UpdateMonitoredValues) the GPU's programming interface ("wddm_gpu"):
 *   hardware queue and log buffer DDIs                    CMP steps, rings, the interrupt line and its
 *   DxgkDdiInterruptRoutine and the GPU's other           lists, the queues' doorbells, the firmware's
 *     events (DMA completed, page fault, progress)        timestamp counter
 *   the user-mode half (UmdSubmitToHwQueue)             the model's error report ("wddm")
 *
 * The structures carry the names and fields of docs/DRIVERS.md (src/ddi/ddi.ts) and of the published
 * WDDM headers where the model keeps the same thing (../shared/WDDM-FACTS.md); every offset below is
 * pinned by a _Static_assert, and src/driver/wasm-driver.ts reads and writes the same offsets
 * (test/c-drivers.test.ts compares the two lists).
 *
 * Memory as the driver sees it. The driver is a position-independent wasm32 module that imports the
 * machine's one shared memory (env.memory): a fence's CurrentValue is where CurrentValueKernelCpuVa
 * says, and the driver reads and writes it there with 64-bit atomics (WDDM_KERNEL_POINTER), as a real
 * driver does; it reads the core's records at the offsets WDDM_GPU_LAYOUT gives. Its own globals, pool
 * and stack are in a region the machine's memory plan reserves for this adapter's driver
 * (docs/MEMORY.md, "Driver regions"):
 *
 *   guard page  (never writable: a stack that overflows lands here and is stopped)
 *   region base ┌──────────────────────────┐
 *               │ stack, grows down        │ WDDM_DRIVER_STACK_BYTES
 *               ├──────────────────────────┤ __memory_base
 *               │ globals (.data, .bss)    │ the module's own size (its dylink.0 section)
 *               ├──────────────────────────┤
 *               │ DDI argument area        │ the DXGKARG_* structures the model passes
 *               ├──────────────────────────┤ WDDM_ADAPTER_INFO.PoolBase
 *               │ pool                     │ WDDM_ADAPTER_INFO.PoolBytes (WddmPoolAllocate)
 *               └──────────────────────────┘
 *
 * Every store the driver makes is checked before it happens (the loader instruments the module): into
 * its region, the staging area of its adapter's out buffer (GpuQueuePushStaged's commands), or a live
 * fence's CurrentValue word of its adapter. Any other store stops the driver there: its adapter is
 * bug-checked with the address, and the rest of the machine runs on untouched. MonitoredValue is written
 * through the CMP (GpuCmpWriteMonitoredValue), whose write buffer and barrier the model simulates (NF-11).
 *
 * Build: examples/drivers/c/build.sh (Debian clang and lld; a freestanding -nostdlib build, no libc).
 * Walk-through: examples/drivers/c/README.md. The DDIs' contract: docs/DRIVERS.md.
 */
#ifndef WDDM_FENCE_DRIVER_H
#define WDDM_FENCE_DRIVER_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

#if !defined(__wasm32__)
#error "wddm_fence_driver.h is for wasm32 drivers: build with examples/drivers/c/build.sh"
#endif

/* ───────────────────────────── basic types (WDK spellings) ───────────────────────────── */

typedef uint8_t BYTE;
typedef uint8_t BOOLEAN;
typedef uint32_t UINT;
typedef uint32_t ULONG;
typedef uint64_t UINT64;
typedef int32_t NTSTATUS;
/* A driver's or the OS's handle. In the model every handle is a 32-bit number (the OS never reads a
 * driver handle's bits; the reference driver builds its own from the core's fence id). */
typedef uint32_t HANDLE;
typedef uint64_t D3DGPU_VIRTUAL_ADDRESS;

#define TRUE 1
#define FALSE 0

/* NTSTATUS values the model knows (src/base/errors.ts, NTSTATUS). */
#define STATUS_SUCCESS                 ((NTSTATUS)0x00000000)
#define STATUS_PENDING                 ((NTSTATUS)0x00000103)
#define STATUS_INVALID_HANDLE          ((NTSTATUS)0xC0000008)
#define STATUS_INVALID_PARAMETER       ((NTSTATUS)0xC000000D)
#define STATUS_NO_MEMORY               ((NTSTATUS)0xC0000017)
#define STATUS_ACCESS_DENIED           ((NTSTATUS)0xC0000022)
#define STATUS_INSUFFICIENT_RESOURCES  ((NTSTATUS)0xC000009A)
#define STATUS_NOT_SUPPORTED           ((NTSTATUS)0xC00000BB)
#define STATUS_DRIVER_INTERNAL_ERROR   ((NTSTATUS)0xC0000183)
#define STATUS_INVALID_DEVICE_STATE    ((NTSTATUS)0xC0000184)
#define NT_SUCCESS(status) ((NTSTATUS)(status) >= 0)

/* Kernel CPU VAs are a fixed offset over physical addresses (docs/MEMORY.md, "Addresses"). */
#define WDDM_KERNEL_VA_BASE 0xFFFF800000000000ull
/* The wasm32 pointer a kernel CPU VA names (the memory is the machine's physical memory). */
#define WDDM_KERNEL_POINTER(type, kernelCpuVa) ((type *)(uintptr_t)((UINT64)(kernelCpuVa) - WDDM_KERNEL_VA_BASE))
/* The physical address (a wasm32 address) a kernel CPU VA names, as a number. */
#define WDDM_PHYSICAL(kernelCpuVa) ((UINT)((UINT64)(kernelCpuVa) - WDDM_KERNEL_VA_BASE))

#define WDDM_EXPORT(name) __attribute__((export_name(#name)))
#define WDDM_IMPORT(module, name) __attribute__((import_module(module), import_name(name)))
#define WDDM_OFFSET(type, field, offset) _Static_assert(offsetof(type, field) == (offset), #type "." #field " is at " #offset)
#define WDDM_SIZE(type, size) _Static_assert(sizeof(type) == (size), #type " is " #size " bytes")

/* ───────────────────────────── published numbers (WDDM-FACTS.md) ───────────────────────────── */

/* DXGK_VIDSCHCAPS bits. */
#define DXGK_VIDSCHCAPS_NO_64BIT_ATOMICS                           (1u << 5)
#define DXGK_VIDSCHCAPS_NATIVE_GPU_FENCE                           (1u << 11)
#define DXGK_VIDSCHCAPS_OPTIMIZED_NATIVE_FENCE_SIGNALED_INTERRUPT  (1u << 12)
#define DXGK_FEATURE_NATIVE_FENCE 37u
#define DXGKQAITYPE_NATIVE_FENCE_CAPS 37u
/* D3DDDI_NATIVEFENCE_TYPE. */
#define D3DDDI_NATIVEFENCE_TYPE_DEFAULT 0u
#define D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU 1u
/* DXGK_INTERRUPT_TYPE (d3dkmddi.h). */
#define DXGK_INTERRUPT_DMA_COMPLETED 1u
#define DXGK_INTERRUPT_DMA_PAGE_FAULTED 9u
#define DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED 11u
#define DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED 19u
/* DXGK_NATIVE_FENCE_LOG_TYPE. */
#define DXGK_NATIVE_FENCE_LOG_TYPE_WAITS 1u
#define DXGK_NATIVE_FENCE_LOG_TYPE_SIGNALS 2u

/* ───────────────────────────── what the driver is given at AddDevice ───────────────────────────── */

/* DXGK_NATIVE_FENCE_CAPS (56 bytes, as published). */
typedef struct _DXGK_NATIVE_FENCE_CAPS {
  UINT MonitoredValuePadding;     /* bytes after each 8-byte MonitoredValue (older name MonitoredValueStride) */
  BOOLEAN MapToGpuSystemProcess;
  UINT64 MinimumAddress;          /* optional GPU VA range for fence mappings (0, 0 = anywhere) */
  UINT64 MaximumAddress;
  UINT64 Reserved[4];
} DXGK_NATIVE_FENCE_CAPS;
WDDM_OFFSET(DXGK_NATIVE_FENCE_CAPS, MonitoredValuePadding, 0);
WDDM_OFFSET(DXGK_NATIVE_FENCE_CAPS, MapToGpuSystemProcess, 4);
WDDM_OFFSET(DXGK_NATIVE_FENCE_CAPS, MinimumAddress, 8);
WDDM_OFFSET(DXGK_NATIVE_FENCE_CAPS, MaximumAddress, 16);
WDDM_SIZE(DXGK_NATIVE_FENCE_CAPS, 56);

/*
 * Where the core keeps what a driver reads, and its command codes: the core's own numbers
 * (src/core/bindings.ts readLayout, docs/ABI.md), never retyped in a driver.
 */
typedef struct _WDDM_GPU_LAYOUT {
  UINT OutBuffer;                 /* the adapter's out buffer: interrupt lists and staged commands */
  UINT OutBufferBytes;
  UINT OpNop, OpWait, OpSignal, OpWork, OpFenceWrite;   /* ring command ops */
  UINT CommandBytes;              /* one staged Command record (GpuQueuePushStaged) */
  UINT CommandOpOffset, CommandValueOffset, CommandGpuVaOffset, CommandHandleOffset;
  UINT FenceTableAddress;         /* the u32 word holding the fence table's address */
  UINT FenceCapacityAddress;      /* the u32 word holding the table's capacity (fence ids 1 … capacity) */
  UINT FenceRecordBytes;          /* fence id's record: table + (id - 1) × FenceRecordBytes */
  UINT FenceStateOffset;          /* u8: FenceStateLive when live */
  UINT FenceStateLive;
  UINT FenceCurrentValueOffset;   /* u32: the physical address of its CurrentValue word */
  UINT FenceDriverHandleOffset;   /* u32: the handle the driver gave GpuFenceSetDriverHandle */
  UINT InterruptHandleBytes;      /* one handle of an interrupt list in the out buffer (GpuEngineTakeInterrupt) */
  UINT LogTypeOffset;             /* DXGK_NATIVE_FENCE_LOG_HEADER.Type */
  UINT LogEntries;                /* entries a 4 KiB log buffer holds (84) */
} WDDM_GPU_LAYOUT;
WDDM_OFFSET(WDDM_GPU_LAYOUT, OutBuffer, 0);
WDDM_OFFSET(WDDM_GPU_LAYOUT, OpNop, 8);
WDDM_OFFSET(WDDM_GPU_LAYOUT, CommandBytes, 28);
WDDM_OFFSET(WDDM_GPU_LAYOUT, FenceTableAddress, 48);
WDDM_OFFSET(WDDM_GPU_LAYOUT, FenceDriverHandleOffset, 72);
WDDM_OFFSET(WDDM_GPU_LAYOUT, LogEntries, 84);
WDDM_SIZE(WDDM_GPU_LAYOUT, 88);

/* WDDM_ADAPTER_INFO.InterruptPayload / Granularity. */
#define WDDM_INTERRUPT_PAYLOAD_LIST 0u      /* interrupts carry the signalled fences with waiters */
#define WDDM_INTERRUPT_PAYLOAD_NO_LIST 1u   /* always NULL: the OS scans every fence */
#define WDDM_GRANULARITY_COMMAND 0u         /* DxgkDdiUpdateMonitoredValues runs whole */
#define WDDM_GRANULARITY_STEP 1u            /* …may run one CMP step per OS step (STATUS_PENDING) */

/*
 * Model-only: DxgkDdiAddDevice's input, what the machine resolved for this adapter (src/driver/module.ts
 * DriverContext, ReferenceDriverOptions): the hardware's caps, the reference driver's two switches, the
 * adapter's limits, the driver's pool and the core's layout. Valid during the call only (copy it).
 */
typedef struct _WDDM_ADAPTER_INFO {
  UINT AdapterIndex;
  UINT EngineCount;
  const char *AdapterName;                 /* NUL-terminated UTF-8 */
  UINT HardwareCaps;                       /* DXGK_VIDSCHCAPS bits the GPU has (advertise only what the OS allows: CAP-02) */
  DXGK_NATIVE_FENCE_CAPS NativeFenceCaps;  /* what the hardware's fence storage needs (CAP-01, CAP-03) */
  UINT InterruptPayload;                   /* WDDM_INTERRUPT_PAYLOAD_* */
  BOOLEAN EvaluateLegacyMonitoredFences;   /* set the flag on every no-list interrupt */
  BOOLEAN QueryFeatureBeforeAdvertising;   /* the reference driver's switch (CAP-02); a correct driver asks always */
  BOOLEAN MonitoredValueBarrier;           /* the reference driver's switch (NF-11); a correct driver has the barrier */
  BOOLEAN EnginesWriteMonitoredFences;     /* the engines can write a monitored fence by GPU VA */
  UINT RingEntries;                        /* every hardware queue's ring (limits.ringEntries) */
  UINT MaxFences;                          /* core fence ids are 1 … MaxFences (limits.fences) */
  UINT MaxQueues;                          /* core queue ids are 1 … MaxQueues (limits.queues) */
  UINT Granularity;                        /* WDDM_GRANULARITY_* */
  BOOLEAN DoorbellPresent;                 /* the cross-adapter doorbell is on (XA-07: GpuDoorbellRegister) */
  BYTE *PoolBase;                          /* the driver's pool (WddmPoolAllocate), zero-filled */
  UINT PoolBytes;
  WDDM_GPU_LAYOUT Layout;
} WDDM_ADAPTER_INFO;
WDDM_OFFSET(WDDM_ADAPTER_INFO, AdapterName, 8);
WDDM_OFFSET(WDDM_ADAPTER_INFO, HardwareCaps, 12);
WDDM_OFFSET(WDDM_ADAPTER_INFO, NativeFenceCaps, 16);
WDDM_OFFSET(WDDM_ADAPTER_INFO, InterruptPayload, 72);
WDDM_OFFSET(WDDM_ADAPTER_INFO, EvaluateLegacyMonitoredFences, 76);
WDDM_OFFSET(WDDM_ADAPTER_INFO, QueryFeatureBeforeAdvertising, 77);
WDDM_OFFSET(WDDM_ADAPTER_INFO, MonitoredValueBarrier, 78);
WDDM_OFFSET(WDDM_ADAPTER_INFO, EnginesWriteMonitoredFences, 79);
WDDM_OFFSET(WDDM_ADAPTER_INFO, RingEntries, 80);
WDDM_OFFSET(WDDM_ADAPTER_INFO, MaxFences, 84);
WDDM_OFFSET(WDDM_ADAPTER_INFO, MaxQueues, 88);
WDDM_OFFSET(WDDM_ADAPTER_INFO, Granularity, 92);
WDDM_OFFSET(WDDM_ADAPTER_INFO, DoorbellPresent, 96);
WDDM_OFFSET(WDDM_ADAPTER_INFO, PoolBase, 100);
WDDM_OFFSET(WDDM_ADAPTER_INFO, PoolBytes, 104);
WDDM_OFFSET(WDDM_ADAPTER_INFO, Layout, 108);
WDDM_SIZE(WDDM_ADAPTER_INFO, 200);

/* ───────────────────────────── DDI arguments ───────────────────────────── */
/* Each is the driver's to read during the call only, as a DXGKARG structure is (docs/DRIVERS.md). */

/* What DxgkDdiStartDevice reports (DXGK_VIDSCHCAPS as QueryAdapterInfo would, and the fence caps). */
typedef struct _WDDM_START_DEVICE_RESULT {
  UINT VidSchCaps;                         /* the DXGK_VIDSCHCAPS bits advertised */
  BOOLEAN EnginesWriteMonitoredFences;     /* model-only (what the UMD knows of its engines) */
  DXGK_NATIVE_FENCE_CAPS NativeFenceCaps;
} WDDM_START_DEVICE_RESULT;
WDDM_OFFSET(WDDM_START_DEVICE_RESULT, EnginesWriteMonitoredFences, 4);
WDDM_OFFSET(WDDM_START_DEVICE_RESULT, NativeFenceCaps, 8);
WDDM_SIZE(WDDM_START_DEVICE_RESULT, 64);

/* DXGKARG_QUERYADAPTERINFO (the model asks only for DXGKQAITYPE_NATIVE_FENCE_CAPS). */
typedef struct _DXGKARG_QUERYADAPTERINFO {
  UINT Type;
  void *pOutputData;                       /* a DXGK_NATIVE_FENCE_CAPS */
  UINT OutputDataSize;
} DXGKARG_QUERYADAPTERINFO;
WDDM_OFFSET(DXGKARG_QUERYADAPTERINFO, pOutputData, 4);
WDDM_OFFSET(DXGKARG_QUERYADAPTERINFO, OutputDataSize, 8);

typedef struct _DXGKARG_CREATENATIVEFENCE {
  HANDLE hGlobalNativeFence;               /* out: the driver's handle, named in every later DDI and interrupt list */
  UINT Type;                               /* D3DDDI_NATIVEFENCE_TYPE */
  UINT64 InitialFenceValue;
  UINT64 CurrentValueKernelCpuVa;          /* the OS allocated both values */
  UINT64 MonitoredValueKernelCpuVa;
  D3DGPU_VIRTUAL_ADDRESS CurrentValueSystemProcessGpuVa;    /* with MapToGpuSystemProcess (NF-13) */
  D3DGPU_VIRTUAL_ADDRESS MonitoredValueSystemProcessGpuVa;
  BYTE PrivateDriverData[64];              /* in/out: the UMD's private data from D3DKMTCreateNativeFence */
} DXGKARG_CREATENATIVEFENCE;
WDDM_OFFSET(DXGKARG_CREATENATIVEFENCE, Type, 4);
WDDM_OFFSET(DXGKARG_CREATENATIVEFENCE, InitialFenceValue, 8);
WDDM_OFFSET(DXGKARG_CREATENATIVEFENCE, CurrentValueKernelCpuVa, 16);
WDDM_OFFSET(DXGKARG_CREATENATIVEFENCE, MonitoredValueKernelCpuVa, 24);
WDDM_OFFSET(DXGKARG_CREATENATIVEFENCE, CurrentValueSystemProcessGpuVa, 32);
WDDM_OFFSET(DXGKARG_CREATENATIVEFENCE, MonitoredValueSystemProcessGpuVa, 40);
WDDM_OFFSET(DXGKARG_CREATENATIVEFENCE, PrivateDriverData, 48);
WDDM_SIZE(DXGKARG_CREATENATIVEFENCE, 112);

typedef struct _DXGKARG_OPENNATIVEFENCE {
  HANDLE hGlobalNativeFence;
  HANDLE hLocalNativeFence;                /* out */
  HANDLE hDevice;
  D3DGPU_VIRTUAL_ADDRESS CurrentValueGpuVa;     /* in the opening process's GPU VA space */
  D3DGPU_VIRTUAL_ADDRESS MonitoredValueGpuVa;
} DXGKARG_OPENNATIVEFENCE;
WDDM_OFFSET(DXGKARG_OPENNATIVEFENCE, hLocalNativeFence, 4);
WDDM_OFFSET(DXGKARG_OPENNATIVEFENCE, hDevice, 8);
WDDM_OFFSET(DXGKARG_OPENNATIVEFENCE, CurrentValueGpuVa, 16);
WDDM_OFFSET(DXGKARG_OPENNATIVEFENCE, MonitoredValueGpuVa, 24);
WDDM_SIZE(DXGKARG_OPENNATIVEFENCE, 32);

typedef struct _DXGKARG_CLOSENATIVEFENCE { HANDLE hLocalNativeFence; } DXGKARG_CLOSENATIVEFENCE;
typedef struct _DXGKARG_DESTROYNATIVEFENCE { HANDLE hGlobalNativeFence; } DXGKARG_DESTROYNATIVEFENCE;

typedef union _DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS {
  struct { UINT AlwaysSignaled : 1; UINT NotificationOnly : 1; UINT Reserved : 30; };
  UINT Value;
} DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS;

typedef struct _DXGKARG_UPDATECURRENTVALUESFROMCPU {
  UINT NumFences;
  DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS Flags;
  const HANDLE *NativeFenceArray;          /* hGlobalNativeFence of each */
  const UINT64 *UpdatedValueArray;
  const UINT64 *CurrentValueKernelCpuVa;
} DXGKARG_UPDATECURRENTVALUESFROMCPU;
WDDM_OFFSET(DXGKARG_UPDATECURRENTVALUESFROMCPU, Flags, 4);
WDDM_OFFSET(DXGKARG_UPDATECURRENTVALUESFROMCPU, NativeFenceArray, 8);
WDDM_OFFSET(DXGKARG_UPDATECURRENTVALUESFROMCPU, UpdatedValueArray, 12);
WDDM_OFFSET(DXGKARG_UPDATECURRENTVALUESFROMCPU, CurrentValueKernelCpuVa, 16);
WDDM_SIZE(DXGKARG_UPDATECURRENTVALUESFROMCPU, 20);

typedef struct _DXGKARG_UPDATEMONITOREDVALUES {
  UINT NumFences;
  const HANDLE *NativeFenceArray;
  const UINT64 *UpdatedValueArray;
  const UINT64 *MonitoredValueKernelCpuVa;
} DXGKARG_UPDATEMONITOREDVALUES;
WDDM_OFFSET(DXGKARG_UPDATEMONITOREDVALUES, NativeFenceArray, 4);
WDDM_OFFSET(DXGKARG_UPDATEMONITOREDVALUES, UpdatedValueArray, 8);
WDDM_OFFSET(DXGKARG_UPDATEMONITOREDVALUES, MonitoredValueKernelCpuVa, 12);
WDDM_SIZE(DXGKARG_UPDATEMONITOREDVALUES, 16);

/* Bytes of a hardware queue's private driver data (DXGKARG_CREATEHWQUEUE.pPrivateDriverData). */
#define HWQUEUE_PRIVATE_DRIVER_DATA_BYTES 16u

typedef union _DXGK_CREATEHWQUEUEFLAGS {
  struct { UINT NativeProgressFence : 1; UINT Reserved : 31; };
  UINT Value;
} DXGK_CREATEHWQUEUEFLAGS;

typedef struct _DXGKARG_CREATEHWQUEUE {
  HANDLE hDevice;
  UINT EngineOrdinal;
  DXGK_CREATEHWQUEUEFLAGS Flags;
  HANDLE hHwQueueProgressFence;            /* a native fence's hGlobalNativeFence with NativeProgressFence */
  UINT ProcessSlot;                        /* model-only: whose GPU VA space the queue runs in */
  const char *DebugName;                   /* model-only: the queue's name in the trace (NUL-terminated UTF-8) */
  HANDLE hHwQueue;                         /* out */
  UINT PrivateDriverDataSize;
  BYTE *pPrivateDriverData;                /* in/out: what the user-mode half needs to find the queue */
} DXGKARG_CREATEHWQUEUE;
WDDM_OFFSET(DXGKARG_CREATEHWQUEUE, EngineOrdinal, 4);
WDDM_OFFSET(DXGKARG_CREATEHWQUEUE, Flags, 8);
WDDM_OFFSET(DXGKARG_CREATEHWQUEUE, hHwQueueProgressFence, 12);
WDDM_OFFSET(DXGKARG_CREATEHWQUEUE, ProcessSlot, 16);
WDDM_OFFSET(DXGKARG_CREATEHWQUEUE, DebugName, 20);
WDDM_OFFSET(DXGKARG_CREATEHWQUEUE, hHwQueue, 24);
WDDM_OFFSET(DXGKARG_CREATEHWQUEUE, PrivateDriverDataSize, 28);
WDDM_OFFSET(DXGKARG_CREATEHWQUEUE, pPrivateDriverData, 32);
WDDM_SIZE(DXGKARG_CREATEHWQUEUE, 36);

typedef struct _DXGKARG_DESTROYHWQUEUE { HANDLE hHwQueue; } DXGKARG_DESTROYHWQUEUE;

typedef struct _DXGKARG_SETNATIVEFENCELOGBUFFER {
  HANDLE hHwQueue;
  UINT NumberOfEntries;                    /* entries the buffer holds; its header says the same and its Type */
  UINT64 LogBufferCpuVa;                   /* kernel CPU VA of the 4 KiB buffer */
  D3DGPU_VIRTUAL_ADDRESS LogBufferGpuVa;
  D3DGPU_VIRTUAL_ADDRESS LogBufferSystemProcessGpuVa;
  UINT Flags;
} DXGKARG_SETNATIVEFENCELOGBUFFER;
WDDM_OFFSET(DXGKARG_SETNATIVEFENCELOGBUFFER, NumberOfEntries, 4);
WDDM_OFFSET(DXGKARG_SETNATIVEFENCELOGBUFFER, LogBufferCpuVa, 8);
WDDM_OFFSET(DXGKARG_SETNATIVEFENCELOGBUFFER, LogBufferGpuVa, 16);
WDDM_OFFSET(DXGKARG_SETNATIVEFENCELOGBUFFER, LogBufferSystemProcessGpuVa, 24);
WDDM_OFFSET(DXGKARG_SETNATIVEFENCELOGBUFFER, Flags, 32);
WDDM_SIZE(DXGKARG_SETNATIVEFENCELOGBUFFER, 40);

typedef struct _DXGKARG_UPDATENATIVEFENCELOGS {
  UINT NumberOfQueues;
  const HANDLE *hHWQueueArray;
  UINT Flags;
} DXGKARG_UPDATENATIVEFENCELOGS;
WDDM_OFFSET(DXGKARG_UPDATENATIVEFENCELOGS, hHWQueueArray, 4);
WDDM_OFFSET(DXGKARG_UPDATENATIVEFENCELOGS, Flags, 8);

/* Kernel-mode contexts (WDDM 2.x, optional DDIs). */
typedef struct _DXGKARG_CREATECONTEXT {
  HANDLE hDevice;
  UINT NodeOrdinal;                        /* the engine the context runs on */
  UINT ProcessSlot;                        /* model-only */
  HANDLE hContext;                         /* out */
} DXGKARG_CREATECONTEXT;
WDDM_OFFSET(DXGKARG_CREATECONTEXT, NodeOrdinal, 4);
WDDM_OFFSET(DXGKARG_CREATECONTEXT, ProcessSlot, 8);
WDDM_OFFSET(DXGKARG_CREATECONTEXT, hContext, 12);

typedef struct _DXGKARG_DESTROYCONTEXT { HANDLE hContext; } DXGKARG_DESTROYCONTEXT;

#define WDDM_CONTEXT_COMMAND_WORK 0u
#define WDDM_CONTEXT_COMMAND_FENCE_WRITE 1u
/* One command of a kernel-mode context's command buffer. */
typedef struct _WDDM_CONTEXT_COMMAND {
  UINT Op;                                 /* WDDM_CONTEXT_COMMAND_* */
  HANDLE hSyncObject;                      /* the fence's user-mode handle (fence writes), for the trace */
  D3DGPU_VIRTUAL_ADDRESS GpuVa;            /* FenceValueGPUVirtualAddress in the context's process */
  UINT64 Value;                            /* the fence value, or the work's duration in ns */
} WDDM_CONTEXT_COMMAND;
WDDM_OFFSET(WDDM_CONTEXT_COMMAND, GpuVa, 8);
WDDM_OFFSET(WDDM_CONTEXT_COMMAND, Value, 16);
WDDM_SIZE(WDDM_CONTEXT_COMMAND, 24);

typedef struct _DXGKARG_SUBMITCOMMAND {
  HANDLE hContext;
  UINT SubmissionFenceId;                  /* reported back in the DMA completed interrupt */
  UINT NumCommands;
  const WDDM_CONTEXT_COMMAND *pCommands;
  BOOLEAN Submitted;                       /* out: FALSE = the engine has no room now, nothing taken (the OS retries) */
} DXGKARG_SUBMITCOMMAND;
WDDM_OFFSET(DXGKARG_SUBMITCOMMAND, SubmissionFenceId, 4);
WDDM_OFFSET(DXGKARG_SUBMITCOMMAND, NumCommands, 8);
WDDM_OFFSET(DXGKARG_SUBMITCOMMAND, pCommands, 12);
WDDM_OFFSET(DXGKARG_SUBMITCOMMAND, Submitted, 16);

/* The user-mode half: one submission to a hardware queue, the commands in columns. */
#define UMD_OP_WAIT 0u
#define UMD_OP_SIGNAL 1u
#define UMD_OP_WORK 2u
typedef struct _UMDARG_SUBMITTOHWQUEUE {
  const BYTE *HwQueuePrivateDriverData;    /* what DxgkDdiCreateHwQueue wrote */
  UINT HwQueuePrivateDriverDataSize;
  UINT CommandCount;
  const BYTE *Ops;                         /* UMD_OP_* of command i */
  const UINT64 *GpuVas;                    /* the fence's CurrentValue GPU VA in the queue's process (0 for work) */
  const UINT64 *Values;                    /* the fence value, or the work's duration in ns */
  const UINT *Handles;                     /* the fence's user-mode handle (log entries name it); 0 for work */
} UMDARG_SUBMITTOHWQUEUE;
WDDM_OFFSET(UMDARG_SUBMITTOHWQUEUE, HwQueuePrivateDriverDataSize, 4);
WDDM_OFFSET(UMDARG_SUBMITTOHWQUEUE, CommandCount, 8);
WDDM_OFFSET(UMDARG_SUBMITTOHWQUEUE, Ops, 12);
WDDM_OFFSET(UMDARG_SUBMITTOHWQUEUE, GpuVas, 16);
WDDM_OFFSET(UMDARG_SUBMITTOHWQUEUE, Values, 20);
WDDM_OFFSET(UMDARG_SUBMITTOHWQUEUE, Handles, 24);
WDDM_SIZE(UMDARG_SUBMITTOHWQUEUE, 28);

/* ───────────────────────────── what the GPU tells its driver (model-only) ───────────────────────────── */

/* A GPU step executed (WddmGpuStepExecuted): what kind. */
#define WDDM_GPU_STEP_WAIT_PASSED 0u
#define WDDM_GPU_STEP_WAIT_BLOCKED 1u
#define WDDM_GPU_STEP_WAIT_UNBLOCKED 2u
#define WDDM_GPU_STEP_SIGNAL 3u
#define WDDM_GPU_STEP_WORK 4u
#define WDDM_GPU_STEP_FENCE_WRITE 5u
#define WDDM_GPU_STEP_DMA_COMPLETED 6u
/* WDDM_GPU_STEP.Flags: which optional members hold a value. */
#define WDDM_GPU_STEP_HAS_PREVIOUS_VALUE 1u
#define WDDM_GPU_STEP_HAS_INTERRUPT 2u
#define WDDM_GPU_STEP_INTERRUPT 4u
#define WDDM_GPU_STEP_HAS_OBSERVED 8u

typedef struct _WDDM_GPU_STEP {
  UINT Queue;                              /* the core queue id (GpuQueueCreate's) */
  UINT Engine;
  UINT Kind;                               /* WDDM_GPU_STEP_* */
  UINT Fence;                              /* the core fence id (0: none) */
  HANDLE Handle;                           /* the user-mode handle the command named */
  UINT Flags;                              /* WDDM_GPU_STEP_HAS_* */
  UINT64 Value;                            /* the command's value (work: its duration; completion: its SubmissionFenceId) */
  UINT64 PreviousValue;                    /* signals: the CurrentValue the store overwrote */
  double TimeNs;                           /* virtual time of the step */
  double ObservedNs;                       /* waits: when the GPU first saw the wait */
} WDDM_GPU_STEP;
WDDM_OFFSET(WDDM_GPU_STEP, Flags, 20);
WDDM_OFFSET(WDDM_GPU_STEP, Value, 24);
WDDM_OFFSET(WDDM_GPU_STEP, PreviousValue, 32);
WDDM_OFFSET(WDDM_GPU_STEP, TimeNs, 40);
WDDM_OFFSET(WDDM_GPU_STEP, ObservedNs, 48);
WDDM_SIZE(WDDM_GPU_STEP, 56);

/* ───────────────────────────── the callbacks' data (DxgkrnlCallbacks) ───────────────────────────── */

typedef union _DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS {
  struct { UINT ValidPhysicalAdapterMask : 1; UINT HsyncFlipCompletion : 1; UINT EvaluateLegacyMonitoredFences : 1; UINT Reserved : 29; };
  UINT Value;
} DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS;

/* DXGKARGCB_NOTIFY_INTERRUPT_DATA: InterruptType, the union for that type, Flags (as published). */
typedef struct _DXGKARGCB_NOTIFY_INTERRUPT_DATA {
  UINT InterruptType;                      /* DXGK_INTERRUPT_* */
  union {
    struct { UINT SubmissionFenceId; UINT NodeOrdinal; UINT EngineOrdinal; } DmaCompleted;
    struct { UINT NodeOrdinal; UINT EngineOrdinal; } MonitoredFenceSignaled;
    struct {
      UINT NodeOrdinal; UINT EngineOrdinal;
      HANDLE hQueue;                       /* model-only: the hardware queue or context that faulted, 0 when unknown */
      const char *Message;                 /* model-only: what faulted, in words (NUL-terminated UTF-8) */
    } DmaPageFaulted;
    struct {
      UINT NodeOrdinal; UINT EngineOrdinal;
      UINT SignaledNativeFenceCount;
      const HANDLE *pSignaledNativeFenceArray;  /* hGlobalNativeFence of each signalled fence with waiters, or NULL: scan all */
      HANDLE hHWQueue;                     /* the running queue (read only with the optimized cap, INT-05) */
    } NativeFenceSignaled;
  };
  DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS Flags;
} DXGKARGCB_NOTIFY_INTERRUPT_DATA;
WDDM_OFFSET(DXGKARGCB_NOTIFY_INTERRUPT_DATA, DmaCompleted.SubmissionFenceId, 4);
WDDM_OFFSET(DXGKARGCB_NOTIFY_INTERRUPT_DATA, DmaCompleted.NodeOrdinal, 8);
WDDM_OFFSET(DXGKARGCB_NOTIFY_INTERRUPT_DATA, DmaPageFaulted.hQueue, 12);
WDDM_OFFSET(DXGKARGCB_NOTIFY_INTERRUPT_DATA, DmaPageFaulted.Message, 16);
WDDM_OFFSET(DXGKARGCB_NOTIFY_INTERRUPT_DATA, NativeFenceSignaled.SignaledNativeFenceCount, 12);
WDDM_OFFSET(DXGKARGCB_NOTIFY_INTERRUPT_DATA, NativeFenceSignaled.pSignaledNativeFenceArray, 16);
WDDM_OFFSET(DXGKARGCB_NOTIFY_INTERRUPT_DATA, NativeFenceSignaled.hHWQueue, 20);
WDDM_OFFSET(DXGKARGCB_NOTIFY_INTERRUPT_DATA, Flags, 24);
WDDM_SIZE(DXGKARGCB_NOTIFY_INTERRUPT_DATA, 28);

/* DXGKARGCB_ISFEATUREENABLED2: FeatureId in, the result out. */
typedef struct _DXGKARGCB_ISFEATUREENABLED2 {
  UINT FeatureId;
  BOOLEAN Enabled;
  UINT Version;
} DXGKARGCB_ISFEATUREENABLED2;
WDDM_OFFSET(DXGKARGCB_ISFEATUREENABLED2, Enabled, 4);
WDDM_OFFSET(DXGKARGCB_ISFEATUREENABLED2, Version, 8);

/* DXGKCBINT_FEATURE_NATIVEFENCE_1: the interface QueryFeatureInterface returns; call its GetOSCaps through
 * DxgkCbNativeFenceGetOSCaps(Interface.Context, …). */
typedef struct _DXGKCBINT_FEATURE_NATIVEFENCE_1 { HANDLE Context; } DXGKCBINT_FEATURE_NATIVEFENCE_1;

typedef struct _DXGKARGCB_QUERYFEATUREINTERFACE {
  UINT FeatureId;
  UINT Version;
  DXGKCBINT_FEATURE_NATIVEFENCE_1 *pInterface;   /* out */
} DXGKARGCB_QUERYFEATUREINTERFACE;
WDDM_OFFSET(DXGKARGCB_QUERYFEATUREINTERFACE, Version, 4);
WDDM_OFFSET(DXGKARGCB_QUERYFEATUREINTERFACE, pInterface, 8);

/* DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1. */
typedef union _DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1 {
  struct { UINT SupportOptimizedDefaultFenceType : 1; UINT SupportIntraGpuFenceType : 1; UINT Reserved : 30; };
  UINT Value;
} DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1;

/* Model-only callback data (src/ddi/ddi.ts GpuProgressReport & co.). */
#define WDDM_QUEUE_KIND_HW_QUEUE 0u
#define WDDM_QUEUE_KIND_CONTEXT 1u
#define WDDM_GPU_PROGRESS_WAIT_PASSED 0u
#define WDDM_GPU_PROGRESS_WAIT_BLOCKED 1u
#define WDDM_GPU_PROGRESS_WAIT_UNBLOCKED 2u
#define WDDM_GPU_PROGRESS_SIGNAL 3u
#define WDDM_GPU_PROGRESS_FENCE_WRITE 4u
#define WDDM_GPU_PROGRESS_WORK 5u
#define WDDM_GPU_PROGRESS_BUFFER_COMPLETED 6u

typedef struct _WDDM_GPU_PROGRESS_REPORT {
  HANDLE hQueue;                           /* the driver's hHwQueue or hContext */
  UINT QueueKind;                          /* WDDM_QUEUE_KIND_* */
  UINT EngineOrdinal;
  UINT Operation;                          /* WDDM_GPU_PROGRESS_* */
  HANDLE hSyncObject;
  UINT Flags;                              /* WDDM_GPU_STEP_HAS_* / _INTERRUPT, as in WDDM_GPU_STEP */
  UINT64 Value;
  UINT64 PreviousValue;
  double GpuTimeNs;
  double ObservedGpuTimeNs;
} WDDM_GPU_PROGRESS_REPORT;
WDDM_OFFSET(WDDM_GPU_PROGRESS_REPORT, Operation, 12);
WDDM_OFFSET(WDDM_GPU_PROGRESS_REPORT, Flags, 20);
WDDM_OFFSET(WDDM_GPU_PROGRESS_REPORT, Value, 24);
WDDM_OFFSET(WDDM_GPU_PROGRESS_REPORT, PreviousValue, 32);
WDDM_OFFSET(WDDM_GPU_PROGRESS_REPORT, GpuTimeNs, 40);
WDDM_OFFSET(WDDM_GPU_PROGRESS_REPORT, ObservedGpuTimeNs, 48);
WDDM_SIZE(WDDM_GPU_PROGRESS_REPORT, 56);

typedef struct _WDDM_GPU_PROGRESS_STRETCH_QUERY { HANDLE hQueue; UINT QueueKind; UINT CommandsInRing; } WDDM_GPU_PROGRESS_STRETCH_QUERY;
WDDM_OFFSET(WDDM_GPU_PROGRESS_STRETCH_QUERY, CommandsInRing, 8);

typedef struct _WDDM_GPU_PROGRESS_STRETCH {
  HANDLE hQueue; UINT QueueKind; UINT EngineOrdinal; UINT Commands; UINT FenceCommands;
  double GpuTimeNs;
} WDDM_GPU_PROGRESS_STRETCH;
WDDM_OFFSET(WDDM_GPU_PROGRESS_STRETCH, FenceCommands, 16);
WDDM_OFFSET(WDDM_GPU_PROGRESS_STRETCH, GpuTimeNs, 24);
WDDM_SIZE(WDDM_GPU_PROGRESS_STRETCH, 32);

typedef struct _WDDM_DOORBELL_FALLBACK { UINT NodeOrdinal; HANDLE hGlobalNativeFence; UINT RecordsPosted; UINT RingsFull; } WDDM_DOORBELL_FALLBACK;
WDDM_OFFSET(WDDM_DOORBELL_FALLBACK, RingsFull, 12);

/* GpuProgramFirmware's settings (docs/DRIVERS.md, "Programming the GPU"). */
#define WDDM_SIGNAL_LOG_ENTRY_FIRST 0u     /* LOG-04's documented order */
#define WDDM_SIGNAL_LOG_INDEX_FIRST 1u
#define WDDM_TIMESTAMP_VIRTUAL_TIME 0u     /* the counter is the virtual time in ns (the default) */
#define WDDM_TIMESTAMP_DRIVER 1u           /* the counter is the driver's export WddmGpuTimestamp(nowNs) */
typedef struct _WDDM_GPU_FIRMWARE { UINT SignalLogOrder; UINT TimestampSource; } WDDM_GPU_FIRMWARE;

/* The model's error report (WddmReportError): what a failing DDI tells its caller. */
#define WDDM_ERROR_REFUSAL 0u      /* the driver refuses the call with Status (a WddmError): the caller gets it, nothing changed */
#define WDDM_ERROR_GPU_STATUS 1u   /* refused with the GPU interface's status GpuStatus, described as `What: …` (as src/base/errors.ts check() does) */
#define WDDM_ERROR_FAULT 2u        /* a driver fault: the OS bug-checks this adapter (DRIVER_FAULT) with Message */
typedef struct _WDDM_ERROR_INFO {
  UINT Kind;                       /* WDDM_ERROR_* */
  NTSTATUS Status;                 /* REFUSAL: one of the STATUS_* above */
  int32_t GpuStatus;               /* GPU_STATUS: the negative status a Gpu* call returned */
  const char *Message;             /* REFUSAL, FAULT: the message; GPU_STATUS: What */
  const char *Parameter;           /* REFUSAL: the parameter that was wrong (or NULL) */
  const char *Expected;            /* REFUSAL: what would have been accepted (or NULL) */
  BOOLEAN HasValue;                /* REFUSAL: Value is the wrong value */
  UINT64 Value;
} WDDM_ERROR_INFO;
WDDM_OFFSET(WDDM_ERROR_INFO, GpuStatus, 8);
WDDM_OFFSET(WDDM_ERROR_INFO, Message, 12);
WDDM_OFFSET(WDDM_ERROR_INFO, Parameter, 16);
WDDM_OFFSET(WDDM_ERROR_INFO, Expected, 20);
WDDM_OFFSET(WDDM_ERROR_INFO, HasValue, 24);
WDDM_OFFSET(WDDM_ERROR_INFO, Value, 32);
WDDM_SIZE(WDDM_ERROR_INFO, 40);

/* ═════════════════════════════ what the driver may call ═════════════════════════════ */

/* ── Dxgkrnl's callbacks (module "dxgkrnl"; DxgkrnlCallbacks in src/ddi/ddi.ts). ── */

/* DXGKCB_ISFEATUREENABLED2: in StartDevice, before advertising NativeGpuFence (CAP-02). */
WDDM_IMPORT("dxgkrnl", "DxgkCbIsFeatureEnabled") NTSTATUS DxgkCbIsFeatureEnabled(DXGKARGCB_ISFEATUREENABLED2 *args);
/* DXGKCB_QUERYFEATUREINTERFACE: STATUS_NOT_SUPPORTED when the feature/version was not negotiated (CAP-02). */
WDDM_IMPORT("dxgkrnl", "DxgkCbQueryFeatureInterface") NTSTATUS DxgkCbQueryFeatureInterface(DXGKARGCB_QUERYFEATUREINTERFACE *args);
/* DXGKCBINT_FEATURE_NATIVEFENCE_1::GetOSCaps (CAP-02). */
WDDM_IMPORT("dxgkrnl", "DxgkCbNativeFenceGetOSCaps") NTSTATUS DxgkCbNativeFenceGetOSCaps(HANDLE context, DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1 *caps);
/* DXGKCB_NOTIFY_INTERRUPT: native fence signaled (INT-01…06, XA-03), DMA completed (MF-05, MF-06),
 * monitored fence signaled (MF-04), DMA page faulted (the OS resets the adapter: NF-20). */
WDDM_IMPORT("dxgkrnl", "DxgkCbNotifyInterrupt") void DxgkCbNotifyInterrupt(const DXGKARGCB_NOTIFY_INTERRUPT_DATA *data);
/* Model-only: one executed GPU command (NF-14, NF-19: the OS keeps in-flight references from these). */
WDDM_IMPORT("dxgkrnl", "DxgkCbNotifyGpuProgress") void DxgkCbNotifyGpuProgress(const WDDM_GPU_PROGRESS_REPORT *report);
/* Model-only: may the queue's next quiet commands be reported as a stretch? */
WDDM_IMPORT("dxgkrnl", "DxgkCbQueryGpuProgressStretch") BOOLEAN DxgkCbQueryGpuProgressStretch(const WDDM_GPU_PROGRESS_STRETCH_QUERY *query);
/* Model-only: a stretch of quiet commands executed. */
WDDM_IMPORT("dxgkrnl", "DxgkCbNotifyGpuProgressStretch") void DxgkCbNotifyGpuProgressStretch(const WDDM_GPU_PROGRESS_STRETCH *stretch);
/* Model-only (XA-07): a doorbell ring was full; the OS propagates the fence after the interrupt. */
WDDM_IMPORT("dxgkrnl", "DxgkCbNotifyDoorbellFallback") void DxgkCbNotifyDoorbellFallback(const WDDM_DOORBELL_FALLBACK *fallback);

/* ── The GPU's programming interface (module "wddm_gpu"): the adapter's simulated GPU. ──
 * The core's GPU view (docs/ABI.md section 6 says each; negative results are the core's status codes,
 * and a call that returns one changed nothing), then the hardware around it. */

/* Finding things. */
WDDM_IMPORT("wddm_gpu", "fenceAtCurrentValue") int32_t GpuFenceAtCurrentValue(UINT currentValuePhysical);   /* the core fence id, < 0 none */
WDDM_IMPORT("wddm_gpu", "fenceIsLive") int32_t GpuFenceIsLive(UINT fence);
WDDM_IMPORT("wddm_gpu", "fenceSetDriverHandle") int32_t GpuFenceSetDriverHandle(UINT fence, HANDLE handle);  /* what interrupt lists name */
WDDM_IMPORT("wddm_gpu", "fenceDriverHandle") HANDLE GpuFenceDriverHandle(UINT fence);
WDDM_IMPORT("wddm_gpu", "fenceCurrentValueAddress") UINT GpuFenceCurrentValueAddress(UINT fence);
WDDM_IMPORT("wddm_gpu", "gpuVaTranslate") UINT GpuVaTranslate(UINT processSlot, D3DGPU_VIRTUAL_ADDRESS gpuVa);  /* physical, 0 unmapped */
WDDM_IMPORT("wddm_gpu", "cpuReadCurrentValue") UINT64 GpuCpuReadCurrentValue(UINT fence);
/* Rings (hardware queues and contexts). */
WDDM_IMPORT("wddm_gpu", "queueCreate") int32_t GpuQueueCreate(UINT engine, UINT processSlot);      /* the core queue id */
WDDM_IMPORT("wddm_gpu", "queueDestroy") int32_t GpuQueueDestroy(UINT queue);
WDDM_IMPORT("wddm_gpu", "queuePush") int32_t GpuQueuePush(UINT queue, UINT op, UINT fence, UINT64 value, D3DGPU_VIRTUAL_ADDRESS gpuVa, HANDLE handle);
/* The UMD's ring write: `count` Command records staged at the out buffer's start (Layout.Command*). */
WDDM_IMPORT("wddm_gpu", "queuePushStaged") int32_t GpuQueuePushStaged(UINT queue, UINT count, UINT processSlot);
WDDM_IMPORT("wddm_gpu", "queuePending") int32_t GpuQueuePending(UINT queue);
WDDM_IMPORT("wddm_gpu", "queueEngine") int32_t GpuQueueEngine(UINT queue);
/* The CMP's steps of DxgkDdiUpdateMonitoredValues for one fence, in this order (NF-11): a write
 * MonitoredValue, b barrier, c read CurrentValue, d compare (1: raise the interrupt). */
WDDM_IMPORT("wddm_gpu", "cmpWriteMonitoredValue") int32_t GpuCmpWriteMonitoredValue(UINT fence, UINT64 monitoredValue);
WDDM_IMPORT("wddm_gpu", "cmpBarrier") int32_t GpuCmpBarrier(void);
WDDM_IMPORT("wddm_gpu", "cmpReadCurrentValue") UINT64 GpuCmpReadCurrentValue(UINT fence);
WDDM_IMPORT("wddm_gpu", "cmpMonitoredValueCheck") int32_t GpuCmpMonitoredValueCheck(UINT engine, UINT fence, UINT64 currentValue);
/* The interrupt line's payload: the list (driver handles at Layout.OutBuffer; -1 overflowed, no list; -2 nothing
 * pending) and the queue that raised it (INT-05). */
WDDM_IMPORT("wddm_gpu", "engineTakeInterrupt") int32_t GpuEngineTakeInterrupt(UINT engine);
WDDM_IMPORT("wddm_gpu", "engineInterruptQueue") UINT GpuEngineInterruptQueue(UINT engine);
/* Native fence log buffers (LOG-01…07). */
WDDM_IMPORT("wddm_gpu", "queueSetLogBuffer") int32_t GpuQueueSetLogBuffer(UINT queue, UINT type, UINT physical);
WDDM_IMPORT("wddm_gpu", "logFlush") int32_t GpuLogFlush(UINT queue);

/* The hardware around the core. */
WDDM_IMPORT("wddm_gpu", "Kick") void GpuKick(UINT engine);                          /* a queue's doorbell: the engine looks for work */
WDDM_IMPORT("wddm_gpu", "RaiseInterrupt") void GpuRaiseInterrupt(UINT engine);      /* the CMP's interrupt line: the ISR runs after the latency */
WDDM_IMPORT("wddm_gpu", "RescanRunList") UINT GpuRescanRunList(void);               /* the run list's rescan: waiting queues whose fence moved run */
WDDM_IMPORT("wddm_gpu", "AddQueue") void GpuAddQueue(UINT queue, UINT engine, HANDLE handle, const char *label);  /* the engine schedules it */
WDDM_IMPORT("wddm_gpu", "RemoveQueue") void GpuRemoveQueue(UINT queue);
WDDM_IMPORT("wddm_gpu", "Stop") void GpuStop(void);                                 /* every engine stops, pending work and interrupts dropped */
WDDM_IMPORT("wddm_gpu", "Restart") void GpuRestart(void);
WDDM_IMPORT("wddm_gpu", "DoorbellRegister") void GpuDoorbellRegister(UINT currentValuePhysical, UINT fence);   /* XA-07 */
WDDM_IMPORT("wddm_gpu", "DoorbellUnregister") void GpuDoorbellUnregister(UINT currentValuePhysical);
WDDM_IMPORT("wddm_gpu", "ProgramFirmware") void GpuProgramFirmware(const WDDM_GPU_FIRMWARE *firmware);

/* ── The model's own (module "wddm"). ── */

/* Describes how the DDI in progress failed; the model acts on it when the export returns (WDDM_ERROR_*). */
WDDM_IMPORT("wddm", "ReportError") void WddmReportError(const WDDM_ERROR_INFO *info);

/* ═════════════════════════════ what the driver exports ═════════════════════════════
 *
 * Required: every DDI below but the three context DDIs, the one-fence form and WddmGpuTimestamp.
 * A DDI returns STATUS_SUCCESS, or a failure after WddmReportError (the helpers below do both).
 *
 *   NTSTATUS DxgkDdiAddDevice(const WDDM_ADAPTER_INFO *info)                     once, as the machine is built
 *   NTSTATUS DxgkDdiStartDevice(WDDM_START_DEVICE_RESULT *result)                CAP-01, CAP-02
 *   NTSTATUS DxgkDdiStopDevice(void)                                             INT-03
 *   NTSTATUS DxgkDdiResetFromTimeout(void), DxgkDdiRestartFromTimeout(void)      NF-20
 *   NTSTATUS DxgkDdiQueryAdapterInfo(const DXGKARG_QUERYADAPTERINFO *args)       CAP-01, CAP-03
 *   NTSTATUS DxgkDdiCreateNativeFence(DXGKARG_CREATENATIVEFENCE *args)           NF-12…14, XA-02
 *   NTSTATUS DxgkDdiOpenNativeFence(DXGKARG_OPENNATIVEFENCE *args)               NF-14…16
 *   NTSTATUS DxgkDdiCloseNativeFence(const DXGKARG_CLOSENATIVEFENCE *args)       NF-15
 *   NTSTATUS DxgkDdiDestroyNativeFence(const DXGKARG_DESTROYNATIVEFENCE *args)   NF-15, INT-03
 *   NTSTATUS DxgkDdiUpdateCurrentValuesFromCpu(const DXGKARG_UPDATECURRENTVALUESFROMCPU *args)   NF-07, NF-18, XA-04
 *   NTSTATUS DxgkDdiUpdateMonitoredValues(const DXGKARG_UPDATEMONITOREDVALUES *args)  NF-02, NF-09…11
 *            (STATUS_PENDING: in progress, WddmDdiUpdateMonitoredValuesStep does the rest; Granularity STEP only)
 *   int32_t  WddmDdiUpdateMonitoredValuesStep(void)     the next step: 1 returned, 0 more to do, < 0 failed
 *   NTSTATUS DxgkDdiCreateHwQueue(DXGKARG_CREATEHWQUEUE *args)                   NF-06, NF-17, LOG-01
 *   NTSTATUS DxgkDdiDestroyHwQueue(const DXGKARG_DESTROYHWQUEUE *args)           LOG-01
 *   NTSTATUS DxgkDdiSetNativeFenceLogBuffer(const DXGKARG_SETNATIVEFENCELOGBUFFER *args)   LOG-02, LOG-03
 *   NTSTATUS DxgkDdiUpdateNativeFenceLogs(const DXGKARG_UPDATENATIVEFENCELOGS *args)       LOG-06, INT-05
 *   BOOLEAN  DxgkDdiInterruptRoutine(UINT engine)       the ISR of an engine's native fence interrupt line
 *   void     WddmGpuDmaCompleted(UINT engine, UINT queue, UINT submissionFenceId)   a context's buffer completed
 *   void     WddmGpuFaulted(UINT queue, UINT engine, const char *message)           a GPU page fault (queue 0: unknown)
 *   void     WddmGpuStepExecuted(const WDDM_GPU_STEP *step)                         every executed GPU step
 *   BOOLEAN  WddmGpuStretchAccepted(UINT queue)         may the queue's next quiet commands run as a stretch?
 *   void     WddmGpuStretchExecuted(UINT queue, UINT engine, UINT commands, UINT fenceCommands, double endNs)
 *   void     WddmGpuDoorbellFallback(UINT engine, UINT fence, UINT posted, UINT full)  XA-07
 *   int32_t  WddmDriverQueueOf(HANDLE handle)           the core queue of a hHwQueue or hContext, 0 none (tools)
 *   NTSTATUS UmdSubmitToHwQueue(const UMDARG_SUBMITTOHWQUEUE *args)             NF-05, NF-06, LOG-04
 * Optional:
 *   NTSTATUS DxgkDdiCreateContext(DXGKARG_CREATECONTEXT *args), DxgkDdiDestroyContext(const DXGKARG_DESTROYCONTEXT *args),
 *            DxgkDdiSubmitCommand(DXGKARG_SUBMITCOMMAND *args)     all three or none: MF-04…07
 *   NTSTATUS DxgkDdiUpdateOneCurrentValueFromCpu(HANDLE hGlobalNativeFence, UINT64 value, UINT64 currentValueKernelCpuVa)
 *            the one-fence form of UpdateCurrentValuesFromCpu (docs/DRIVERS.md): NumFences 1, no flag
 *   UINT64   WddmGpuTimestamp(double nowNs)             the GPU timestamp counter, with WDDM_TIMESTAMP_DRIVER
 */

/* ═════════════════════════════ tiny helpers (wddm_fence_runtime.c) ═════════════════════════════ */

void *memset(void *destination, int value, size_t bytes);
void *memcpy(void *destination, const void *source, size_t bytes);
void *memmove(void *destination, const void *source, size_t bytes);
int memcmp(const void *a, const void *b, size_t bytes);
size_t strlen(const char *text);

/* printf's subset: %s %c %d %u %x %X with the l / ll length, and %%; always NUL-terminates. Returns the length. */
int WddmFormatV(char *buffer, size_t size, const char *format, va_list args);
int WddmFormat(char *buffer, size_t size, const char *format, ...);

/* A bump allocator over the driver's pool (WDDM_ADAPTER_INFO.PoolBase/PoolBytes): zero-filled, 16-byte aligned,
 * NULL when the pool is out of room. Call WddmPoolInitialize once in DxgkDdiAddDevice. */
void WddmPoolInitialize(BYTE *base, UINT bytes);
void *WddmPoolAllocate(UINT bytes);

/* The error report's helpers: each describes the failure (WddmReportError) and returns a failure NTSTATUS. */
/* A driver fault: the OS bug-checks this adapter with the message. */
NTSTATUS WddmFault(const char *format, ...);
/* The driver refuses the call (the caller gets a WddmError with this status and detail; nothing changes). */
NTSTATUS WddmRefuse(NTSTATUS status, const char *parameter, const UINT64 *value, const char *expected, const char *format, ...);
/* A Gpu* call failed with `gpuStatus` (< 0): refuse the call with it, described as `what: …`. */
NTSTATUS WddmGpuFailure(int32_t gpuStatus, const char *what);

/* 64-bit atomic access to a fence value at a kernel CPU VA (sequentially consistent, as the core's). */
static inline UINT64 WddmAtomicLoad64(UINT64 kernelCpuVa) {
  return __atomic_load_n(WDDM_KERNEL_POINTER(UINT64, kernelCpuVa), __ATOMIC_SEQ_CST);
}
static inline void WddmAtomicStore64(UINT64 kernelCpuVa, UINT64 value) {
  __atomic_store_n(WDDM_KERNEL_POINTER(UINT64, kernelCpuVa), value, __ATOMIC_SEQ_CST);
}
/* A u32 / u8 of the core's records, at a physical address (reads only: the core's records are not the driver's to write). */
static inline UINT WddmRead32(UINT physical) { return *(const volatile UINT *)(uintptr_t)physical; }
static inline BYTE WddmRead8(UINT physical) { return *(const volatile BYTE *)(uintptr_t)physical; }

#endif /* WDDM_FENCE_DRIVER_H */
