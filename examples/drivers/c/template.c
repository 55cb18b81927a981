// wddm-fence: link with reference.c as a library
/*
 * template.c: a C driver to start from. Every DDI the model calls, every event of the GPU and the
 * user-mode half, each with what the OS expects of it, when it is called and the requirement IDs it
 * serves (docs/DRIVERS.md says what each ID requires; wddm_fence_driver.h declares the structures
 * and what a driver may call).
 *
 * As it stands it is the reference driver with a seam at every DDI: each export below calls the
 * reference implementation (reference.c, linked as a library: Reference<DDI>), a few after checking
 * their arguments as a real driver would, except DxgkDdiUpdateMonitoredValues, written out in full
 * over the GPU's CMP steps (NF-11): the one to read first. Replace a body with your own code (your
 * HAL's calls become the Gpu* calls of wddm_fence_driver.h) and check it one DDI at a time:
 *
 *   cp examples/drivers/c/template.c my_driver.c           # keep its first line, or drop reference.c
 *   bash examples/drivers/c/build.sh my_driver.c           # → my_driver.wasm
 *   npx wddm-fence check-driver my_driver.wasm             # the table: requirement → passed / violated
 *
 * Dxgkrnl's callbacks (what the OS offers; module "dxgkrnl" in the header), and when a driver calls them:
 *   DxgkCbIsFeatureEnabled, DxgkCbQueryFeatureInterface, DxgkCbNativeFenceGetOSCaps
 *       in DxgkDdiStartDevice, in this order, before advertising NativeGpuFence (CAP-02)
 *   DxgkCbNotifyInterrupt
 *       from the ISR: DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED with the exact list of signalled fences with
 *       CPU waiters, or NULL to have the OS scan (INT-01, INT-02, INT-06); never a destroyed fence (INT-03);
 *       with the optimized cap the running queue instead (INT-05); DXGK_INTERRUPT_DMA_COMPLETED per command
 *       buffer (MF-06), DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED after a fence write (MF-04),
 *       DXGK_INTERRUPT_DMA_PAGE_FAULTED on a GPU fault (the OS resets the adapter, NF-20)
 *   DxgkCbNotifyGpuProgress, DxgkCbQueryGpuProgressStretch, DxgkCbNotifyGpuProgressStretch   (model-only)
 *       every executed GPU command, in the driver's own handles: the OS keeps its in-flight references
 *       from them (NF-14, NF-19)
 *   DxgkCbNotifyDoorbellFallback   (model-only, XA-07) a doorbell ring was full
 */
#include "wddm_fence_driver.h"

/* The reference driver, linked as a library (reference.c built with -DWDDM_REFERENCE_LIBRARY). */
NTSTATUS ReferenceDxgkDdiAddDevice(const WDDM_ADAPTER_INFO *info);
NTSTATUS ReferenceDxgkDdiStartDevice(WDDM_START_DEVICE_RESULT *result);
NTSTATUS ReferenceDxgkDdiStopDevice(void);
NTSTATUS ReferenceDxgkDdiResetFromTimeout(void);
NTSTATUS ReferenceDxgkDdiRestartFromTimeout(void);
NTSTATUS ReferenceDxgkDdiQueryAdapterInfo(const DXGKARG_QUERYADAPTERINFO *args);
NTSTATUS ReferenceDxgkDdiCreateNativeFence(DXGKARG_CREATENATIVEFENCE *args);
NTSTATUS ReferenceDxgkDdiOpenNativeFence(DXGKARG_OPENNATIVEFENCE *args);
NTSTATUS ReferenceDxgkDdiCloseNativeFence(const DXGKARG_CLOSENATIVEFENCE *args);
NTSTATUS ReferenceDxgkDdiDestroyNativeFence(const DXGKARG_DESTROYNATIVEFENCE *args);
NTSTATUS ReferenceDxgkDdiUpdateCurrentValuesFromCpu(const DXGKARG_UPDATECURRENTVALUESFROMCPU *args);
NTSTATUS ReferenceDxgkDdiUpdateOneCurrentValueFromCpu(HANDLE hGlobalNativeFence, UINT64 value, UINT64 currentValueKernelCpuVa);
int32_t ReferenceWddmDdiUpdateMonitoredValuesStep(void);
NTSTATUS ReferenceDxgkDdiCreateHwQueue(DXGKARG_CREATEHWQUEUE *args);
NTSTATUS ReferenceDxgkDdiDestroyHwQueue(const DXGKARG_DESTROYHWQUEUE *args);
NTSTATUS ReferenceDxgkDdiSetNativeFenceLogBuffer(const DXGKARG_SETNATIVEFENCELOGBUFFER *args);
NTSTATUS ReferenceDxgkDdiUpdateNativeFenceLogs(const DXGKARG_UPDATENATIVEFENCELOGS *args);
NTSTATUS ReferenceDxgkDdiCreateContext(DXGKARG_CREATECONTEXT *args);
NTSTATUS ReferenceDxgkDdiDestroyContext(const DXGKARG_DESTROYCONTEXT *args);
NTSTATUS ReferenceDxgkDdiSubmitCommand(DXGKARG_SUBMITCOMMAND *args);
int32_t ReferenceWddmDriverQueueOf(HANDLE handle);
BOOLEAN ReferenceDxgkDdiInterruptRoutine(UINT engine);
void ReferenceWddmGpuDmaCompleted(UINT engine, UINT queue, UINT submissionFenceId);
void ReferenceWddmGpuFaulted(UINT queue, UINT engine, const char *message);
void ReferenceWddmGpuStepExecuted(const WDDM_GPU_STEP *step);
BOOLEAN ReferenceWddmGpuStretchAccepted(UINT queue);
void ReferenceWddmGpuStretchExecuted(UINT queue, UINT engine, UINT commands, UINT fenceCommands, double endNs);
void ReferenceWddmGpuDoorbellFallback(UINT engine, UINT fence, UINT posted, UINT full);
NTSTATUS ReferenceUmdSubmitToHwQueue(const UMDARG_SUBMITTOHWQUEUE *args);
/* The core fence id of one of the reference's hGlobalNativeFence handles, -1 for none. */
int32_t ReferenceFenceOf(HANDLE hGlobalNativeFence);

/* ── start, stop, reset ── */

/**
 * DxgkDdiAddDevice (model-only, in place of DriverEntry/DxgkDdiAddDevice), once per adapter while the machine is
 * built, before StartDevice. `info` is what the machine resolved for the adapter: the caps its hardware has, the
 * interrupt payload, its limits (size your tables by MaxFences and MaxQueues), your pool (PoolBase, PoolBytes) and
 * where the core keeps what you read (Layout). Valid during the call only: copy what you keep. CAP-01.
 */
WDDM_EXPORT(DxgkDdiAddDevice) NTSTATUS DxgkDdiAddDevice(const WDDM_ADAPTER_INFO *info) {
  return ReferenceDxgkDdiAddDevice(info);
}

/**
 * DxgkDdiStartDevice, once, when the adapter starts. Fill `result`: the DXGK_VIDSCHCAPS bits you advertise and
 * the native fence caps. CAP-01 the adapter is built from these; CAP-02 ask the OS before advertising
 * NativeGpuFence: DxgkCbIsFeatureEnabled → DxgkCbQueryFeatureInterface → DxgkCbNativeFenceGetOSCaps. Advertising
 * it while the OS has the feature off fails the adapter's start. From now on you may call Dxgkrnl's callbacks.
 */
WDDM_EXPORT(DxgkDdiStartDevice) NTSTATUS DxgkDdiStartDevice(WDDM_START_DEVICE_RESULT *result) {
  return ReferenceDxgkDdiStartDevice(result);
}

/**
 * DxgkDdiStopDevice: the adapter is stopped for good (its bug check). Stop the engines (GpuStop); pending
 * interrupts are dropped, and the driver must call back no more. INT-03: a fatal driver error (a destroyed fence
 * in an interrupt's list, a DDI that faults) stops only its own adapter, this way.
 */
WDDM_EXPORT(DxgkDdiStopDevice) NTSTATUS DxgkDdiStopDevice(void) {
  return ReferenceDxgkDdiStopDevice();
}

/**
 * DxgkDdiResetFromTimeout: a TDR or device removal. The engines stop and every hardware queue's and context's
 * work is dropped. NF-20: the OS then signals every fence of the adapter to UINT64_MAX (except
 * NoSignalMaxValueOnTdr ones), so no waiter hangs.
 */
WDDM_EXPORT(DxgkDdiResetFromTimeout) NTSTATUS DxgkDdiResetFromTimeout(void) {
  return ReferenceDxgkDdiResetFromTimeout();
}

/** DxgkDdiRestartFromTimeout: after the reset (NF-20) the engines run again (GpuRestart); new queues and contexts may be made. */
WDDM_EXPORT(DxgkDdiRestartFromTimeout) NTSTATUS DxgkDdiRestartFromTimeout(void) {
  return ReferenceDxgkDdiRestartFromTimeout();
}

/**
 * DxgkDdiQueryAdapterInfo(DXGKQAITYPE_NATIVE_FENCE_CAPS), when user mode queries the adapter's native fence caps
 * and when the OS lays out fence storage: write a DXGK_NATIVE_FENCE_CAPS to pOutputData. CAP-03; NF-12
 * (MonitoredValuePadding packs the values of one page), NF-13 (MapToGpuSystemProcess: the CMP's VA in the system process).
 */
WDDM_EXPORT(DxgkDdiQueryAdapterInfo) NTSTATUS DxgkDdiQueryAdapterInfo(const DXGKARG_QUERYADAPTERINFO *args) {
  return ReferenceDxgkDdiQueryAdapterInfo(args);
}

/* ── native fence objects (NF-14, NF-15) ── */

/**
 * DxgkDdiCreateNativeFence, when user mode creates a native fence (D3DKMTCreateNativeFence), once per fence and
 * adapter (a cross-adapter fence once on each adapter, XA-02: its CurrentValue is one shared word). The OS has
 * allocated the storage: CurrentValueKernelCpuVa / MonitoredValueKernelCpuVa (and the system-process GPU VAs with
 * MapToGpuSystemProcess). Set hGlobalNativeFence: a handle of your own that names the fence in every later DDI and
 * in interrupt lists (INT-01). NF-12, NF-13, NF-14. Find the GPU's record from the address (GpuFenceAtCurrentValue)
 * and tell it your handle (GpuFenceSetDriverHandle: the interrupt lists carry it).
 */
WDDM_EXPORT(DxgkDdiCreateNativeFence) NTSTATUS DxgkDdiCreateNativeFence(DXGKARG_CREATENATIVEFENCE *args) {
  if (args->CurrentValueKernelCpuVa < WDDM_KERNEL_VA_BASE) {
    return WddmFault("DxgkDdiCreateNativeFence: CurrentValueKernelCpuVa 0x%llx is no kernel address", args->CurrentValueKernelCpuVa);
  }
  return ReferenceDxgkDdiCreateNativeFence(args);
}

/**
 * DxgkDdiOpenNativeFence, when a process opens the fence on a device (its creator, or another process through an
 * NT handle): hGlobalNativeFence, hDevice, and the process's GPU VAs of both values. Set hLocalNativeFence. NF-15, NF-16.
 */
WDDM_EXPORT(DxgkDdiOpenNativeFence) NTSTATUS DxgkDdiOpenNativeFence(DXGKARG_OPENNATIVEFENCE *args) {
  return ReferenceDxgkDdiOpenNativeFence(args);
}

/** DxgkDdiCloseNativeFence, when a process's last handle is closed and no submitted GPU command still names the fence (the OS waits for those). NF-15. */
WDDM_EXPORT(DxgkDdiCloseNativeFence) NTSTATUS DxgkDdiCloseNativeFence(const DXGKARG_CLOSENATIVEFENCE *args) {
  return ReferenceDxgkDdiCloseNativeFence(args);
}

/** DxgkDdiDestroyNativeFence, after the last Close (NF-15). From now on the handle must never appear in an interrupt's list: that is a bug check (INT-03). */
WDDM_EXPORT(DxgkDdiDestroyNativeFence) NTSTATUS DxgkDdiDestroyNativeFence(const DXGKARG_DESTROYNATIVEFENCE *args) {
  return ReferenceDxgkDdiDestroyNativeFence(args);
}

/* ── values: CPU signals and CPU waiters ── */

/**
 * DxgkDdiUpdateCurrentValuesFromCpu, batched (NF-18): a CPU signal (NF-07) writes UpdatedValueArray[i] to each
 * fence's CurrentValue (a 64-bit atomic store at CurrentValueKernelCpuVa[i]: WddmAtomicStore64), then rescans
 * the run list so hardware queues waiting on those fences run (GpuRescanRunList, NF-06). With
 * Flags.NotificationOnly (XA-04) another adapter already wrote the shared CurrentValue: write nothing, only rescan.
 * NF-19: values only move forward unless the signal allowed a rewind (the OS decides; the driver writes).
 */
WDDM_EXPORT(DxgkDdiUpdateCurrentValuesFromCpu) NTSTATUS DxgkDdiUpdateCurrentValuesFromCpu(const DXGKARG_UPDATECURRENTVALUESFROMCPU *args) {
  if (args->NumFences && (!args->NativeFenceArray || !args->UpdatedValueArray)) {
    return WddmFault("DxgkDdiUpdateCurrentValuesFromCpu: NumFences %u with no arrays", args->NumFences);
  }
  return ReferenceDxgkDdiUpdateCurrentValuesFromCpu(args);
}

/**
 * The one-fence form of DxgkDdiUpdateCurrentValuesFromCpu (optional; docs/DRIVERS.md): the commonest CPU signal,
 * NumFences 1 and no flag, without an argument structure. The same writes as the array form. NF-07.
 */
WDDM_EXPORT(DxgkDdiUpdateOneCurrentValueFromCpu) NTSTATUS DxgkDdiUpdateOneCurrentValueFromCpu(HANDLE hGlobalNativeFence, UINT64 value, UINT64 currentValueKernelCpuVa) {
  return ReferenceDxgkDdiUpdateOneCurrentValueFromCpu(hGlobalNativeFence, value, currentValueKernelCpuVa);
}

/**
 * DxgkDdiUpdateMonitoredValues, batched (NF-18), whenever a CPU waiter is added or retired (NF-02, NF-09). For
 * each fence the CMP's order (NF-11): write the new MonitoredValue, memory barrier, read CurrentValue, raise the
 * interrupt if CurrentValue > MonitoredValue. Leaving the barrier out can lose a wakeup (NF-10) —
 * `wddm-fence explore --variant no-barrier` shows how. The OS reads CurrentValue again after this returns.
 * (On a machine built with schedule granularity 'step' a driver may return STATUS_PENDING and do one CMP step per
 * WddmDdiUpdateMonitoredValuesStep call, as reference.c does; this one does the whole DDI at once, which is allowed.)
 */
WDDM_EXPORT(DxgkDdiUpdateMonitoredValues) NTSTATUS DxgkDdiUpdateMonitoredValues(const DXGKARG_UPDATEMONITOREDVALUES *args) {
  const char *ddi = "DxgkDdiUpdateMonitoredValues";
  for (UINT i = 0; i < args->NumFences; i++) {
    int32_t fence = ReferenceFenceOf(args->NativeFenceArray[i]);
    if (fence < 0) return WddmFault("%s: unknown hGlobalNativeFence 0x%x", ddi, args->NativeFenceArray[i]);
    /* 1. write the new MonitoredValue (into the CMP's write buffer first: the shadow copy) */
    int32_t status = GpuCmpWriteMonitoredValue((UINT)fence, args->UpdatedValueArray[i]);
    if (status < 0) return WddmGpuFailure(status, ddi);
    /* 2. the memory barrier: the write is visible to the engines before CurrentValue is read.
     *    Delete this line and run check-driver: NF-11 is violated (a GPU signal landing between the write and
     *    the read raises no interrupt, and a CPU waiter is never woken: NF-10). */
    GpuCmpBarrier();
    /* 3. read CurrentValue */
    UINT64 current = GpuCmpReadCurrentValue((UINT)fence);
    /* 4. interrupt if CurrentValue > MonitoredValue: the OS then wakes the waiters it reached (NF-09) */
    status = GpuCmpMonitoredValueCheck(0, (UINT)fence, current);
    if (status < 0) return WddmGpuFailure(status, ddi);
    if (status == 1) GpuRaiseInterrupt(0);
  }
  return STATUS_SUCCESS;
}

/** The stepped DxgkDdiUpdateMonitoredValues' next step (only after that DDI returned STATUS_PENDING; this template never does). */
WDDM_EXPORT(WddmDdiUpdateMonitoredValuesStep) int32_t WddmDdiUpdateMonitoredValuesStep(void) {
  return ReferenceWddmDdiUpdateMonitoredValuesStep();
}

/* ── hardware queues (user-mode submission) and their logs ── */

/**
 * DxgkDdiCreateHwQueue, when user mode creates a hardware queue on an engine (EngineOrdinal;
 * Flags.NativeProgressFence with hHwQueueProgressFence, NF-17). Make its ring (GpuQueueCreate), give it to the
 * engine (GpuAddQueue), fill pPrivateDriverData (16 bytes) with what your user-mode half needs to find the queue
 * (the OS hands it back to user mode) and set hHwQueue. NF-06; the OS then sets its two log buffers (LOG-01).
 */
WDDM_EXPORT(DxgkDdiCreateHwQueue) NTSTATUS DxgkDdiCreateHwQueue(DXGKARG_CREATEHWQUEUE *args) {
  return ReferenceDxgkDdiCreateHwQueue(args);
}

/** DxgkDdiDestroyHwQueue, when user mode destroys the queue (or its device goes). Its ring and its two logs (LOG-01) are gone after this. */
WDDM_EXPORT(DxgkDdiDestroyHwQueue) NTSTATUS DxgkDdiDestroyHwQueue(const DXGKARG_DESTROYHWQUEUE *args) {
  return ReferenceDxgkDdiDestroyHwQueue(args);
}

/**
 * DxgkDdiSetNativeFenceLogBuffer, twice after CreateHwQueue (waits, signals) and again each time the OS recreates a
 * buffer (LOG-03): from now on the GPU writes that log there (GpuQueueSetLogBuffer; the header's Type says which).
 * Each signal and unblocked wait: the fence value, the entry with its GPU timestamps, advance the index, barrier,
 * then the conditional interrupt (LOG-02, LOG-04); timestamps never decrease (LOG-07).
 */
WDDM_EXPORT(DxgkDdiSetNativeFenceLogBuffer) NTSTATUS DxgkDdiSetNativeFenceLogBuffer(const DXGKARG_SETNATIVEFENCELOGBUFFER *args) {
  if (args->NumberOfEntries < 1) return WddmFault("DxgkDdiSetNativeFenceLogBuffer: a log buffer with no entries");
  return ReferenceDxgkDdiSetNativeFenceLogBuffer(args);
}

/** DxgkDdiUpdateNativeFenceLogs, before the OS reads new log entries of these queues (LOG-06; INT-05's reads): make every entry they wrote visible (GpuLogFlush). */
WDDM_EXPORT(DxgkDdiUpdateNativeFenceLogs) NTSTATUS DxgkDdiUpdateNativeFenceLogs(const DXGKARG_UPDATENATIVEFENCELOGS *args) {
  return ReferenceDxgkDdiUpdateNativeFenceLogs(args);
}

/* ── kernel-mode contexts (WDDM 2.x, monitored fences: MF-04…MF-07); optional, all three or none ── */

/** DxgkDdiCreateContext, when user mode creates a kernel-mode context on a node (MF-04, MF-05). Set hContext. */
WDDM_EXPORT(DxgkDdiCreateContext) NTSTATUS DxgkDdiCreateContext(DXGKARG_CREATECONTEXT *args) {
  return ReferenceDxgkDdiCreateContext(args);
}

/** DxgkDdiDestroyContext: work the context still had on the engine is dropped; no DMA completed interrupt for it (MF-06). */
WDDM_EXPORT(DxgkDdiDestroyContext) NTSTATUS DxgkDdiDestroyContext(const DXGKARG_DESTROYCONTEXT *args) {
  return ReferenceDxgkDdiDestroyContext(args);
}

/**
 * DxgkDdiSubmitCommand: put one command buffer on the context's engine; when it has run, raise
 * DXGK_INTERRUPT_DMA_COMPLETED with its SubmissionFenceId (MF-06); a fence write, then the monitored fence
 * interrupt (MF-04); 32-bit writes with No64BitAtomics (MF-07). Set Submitted FALSE, taking nothing, when the
 * engine has no room now: the OS retries at the next completion.
 */
WDDM_EXPORT(DxgkDdiSubmitCommand) NTSTATUS DxgkDdiSubmitCommand(DXGKARG_SUBMITCOMMAND *args) {
  return ReferenceDxgkDdiSubmitCommand(args);
}

/* ── the GPU's events (the hardware calls these; the OS never does) ── */

/**
 * DxgkDdiInterruptRoutine, the ISR of an engine's interrupt line (GpuRaiseInterrupt raised it). Take the payload
 * (GpuEngineInterruptQueue, then GpuEngineTakeInterrupt: the list of driver handles in the out buffer) and tell
 * the OS (DxgkCbNotifyInterrupt). INT-01 the exact list of signalled fences with CPU waiters, or NULL; INT-02 one
 * interrupt may carry several signals; INT-03 never a destroyed fence; INT-05 with the optimized cap, the running
 * queue; INT-06 a reached waiter is listed or covered by NULL.
 */
WDDM_EXPORT(DxgkDdiInterruptRoutine) BOOLEAN DxgkDdiInterruptRoutine(UINT engine) {
  return ReferenceDxgkDdiInterruptRoutine(engine);
}

/** A kernel-mode context's command buffer completed on `engine`: DXGK_INTERRUPT_DMA_COMPLETED with its SubmissionFenceId, once (MF-05, MF-06). */
WDDM_EXPORT(WddmGpuDmaCompleted) void WddmGpuDmaCompleted(UINT engine, UINT queue, UINT submissionFenceId) {
  ReferenceWddmGpuDmaCompleted(engine, queue, submissionFenceId);
}

/** The GPU faulted (a command's GPU VA not mapped): DXGK_INTERRUPT_DMA_PAGE_FAULTED naming the queue; the OS resets the adapter (NF-20). */
WDDM_EXPORT(WddmGpuFaulted) void WddmGpuFaulted(UINT queue, UINT engine, const char *message) {
  ReferenceWddmGpuFaulted(queue, engine, message);
}

/**
 * Every executed GPU command (model-only): report it to the OS in your own handles (DxgkCbNotifyGpuProgress).
 * The OS keeps each fence's in-flight references (NF-14: no storage freed under a command) and its GPU rewind
 * rule (NF-19) from these. A fence write also means the monitored fence interrupt follows (MF-04).
 */
WDDM_EXPORT(WddmGpuStepExecuted) void WddmGpuStepExecuted(const WDDM_GPU_STEP *step) {
  ReferenceWddmGpuStepExecuted(step);
}

/** May the queue's next quiet commands run as a stretch, reported by count? Ask the OS (DxgkCbQueryGpuProgressStretch; NF-14). */
WDDM_EXPORT(WddmGpuStretchAccepted) BOOLEAN WddmGpuStretchAccepted(UINT queue) {
  return ReferenceWddmGpuStretchAccepted(queue);
}

/** A stretch ran: report its commands by count (DxgkCbNotifyGpuProgressStretch; NF-14). */
WDDM_EXPORT(WddmGpuStretchExecuted) void WddmGpuStretchExecuted(UINT queue, UINT engine, UINT commands, UINT fenceCommands, double endNs) {
  ReferenceWddmGpuStretchExecuted(queue, engine, commands, fenceCommands, endNs);
}

/** XA-07: a signal's doorbell could not reach every adapter: tell the OS (DxgkCbNotifyDoorbellFallback), which propagates the fence after the interrupt. */
WDDM_EXPORT(WddmGpuDoorbellFallback) void WddmGpuDoorbellFallback(UINT engine, UINT fence, UINT posted, UINT full) {
  ReferenceWddmGpuDoorbellFallback(engine, fence, posted, full);
}

/** The core queue behind one of your hardware queue or context handles, 0 for none (tools that step the core; CAP-01). */
WDDM_EXPORT(WddmDriverQueueOf) int32_t WddmDriverQueueOf(HANDLE handle) {
  return ReferenceWddmDriverQueueOf(handle);
}

/* ── the user-mode half (the runtime calls it; the OS never sees it) ── */

/**
 * UmdSubmitToHwQueue, when user mode submits to a hardware queue: write every command into the queue's ring and
 * ring its doorbell (GpuQueuePushStaged, GpuKick), or none and a refusal (WddmRefuse) when the ring has no room or
 * the queue is gone. Waits block the queue on the GPU until the fence reaches the value (NF-05, NF-06); each
 * signal's log entry and conditional interrupt follow (LOG-04). Find the queue from HwQueuePrivateDriverData.
 */
WDDM_EXPORT(UmdSubmitToHwQueue) NTSTATUS UmdSubmitToHwQueue(const UMDARG_SUBMITTOHWQUEUE *args) {
  return ReferenceUmdSubmitToHwQueue(args);
}
