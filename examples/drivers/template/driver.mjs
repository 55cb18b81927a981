// A driver module to start from: every DDI of KernelModeDriver, every DxgkrnlCallbacks callback
// and the user-mode half, each with what the OS expects of it, when it is called and the
// requirement IDs it serves (docs/DRIVERS.md says what each ID requires).
//
// As it stands it is the reference driver with a hook at every seam: each DDI calls the
// reference implementation (super), a few after checking their arguments as a real driver would
// (createNativeFence, updateCurrentValuesFromCpu, setNativeFenceLogBuffer), except
// updateMonitoredValues, written out in full over the core's GPU view (the CMP's four steps,
// NF-11): the one to read first. Replace a DDI's body with your own to check your logic against
// the contract one DDI at a time:
//
//   cp -r examples/drivers/template my-driver
//   $EDITOR my-driver/driver.mjs
//   npx wddm-fence check-driver my-driver/driver.mjs      # the table: requirement → passed / violated
//
// The machine calls createDriver(context) once per adapter (bottom of this file). The driver
// works by its interface alone: the OS calls only the methods below and reads only what they
// return; the driver reaches the OS only through the callbacks it gets in startDevice.
import { CORE_STATUS, KERNEL_VA_BASE, ReferenceDriver, ReferenceUserModeDriver, WddmError } from 'wddm-fence';

/** Shown in check-driver's report and in traces. Rename it. */
export const name = 'template';

class TemplateDriver extends ReferenceDriver {
  constructor(context) {
    // context.hardware: the adapter's simulated GPU (engines, rings, interrupt line); the driver owns it.
    // context.core: the core's GPU view (fence records, CMP steps, log buffers) of this adapter.
    // context.options: what the machine resolved for the adapter (caps to advertise, payload, ring size).
    super(context.hardware, context.core, context.options);
    /** hGlobalNativeFence → the core's fence record (found from the CurrentValue address the OS gave). */
    this.coreFences = new Map();
    // The user-mode half: the runtime calls it, never the OS (see TemplateUserModeDriver below).
    this.userMode = new TemplateUserModeDriver(this);
  }

  // ── start, stop, reset ──

  /**
   * DxgkDdiStartDevice, once, when the adapter starts (createMachine).
   * Expects back: { VidSchCaps, NativeFenceCaps, EnginesWriteMonitoredFences? }.
   * CAP-01 the caps the adapter is built from; CAP-02 ask the OS before advertising NativeGpuFence:
   * IsFeatureEnabled → QueryFeatureInterface → GetOSCaps. Advertising it while the OS has not
   * enabled the feature fails the adapter's start.
   * Keep `os`: it is the only way to reach the OS (interrupts, faults, progress).
   */
  startDevice(os) {
    return super.startDevice(watchCallbacks(os));
  }

  /**
   * DxgkDdiStopDevice: the adapter is stopped for good (its bug check). The engines stop, pending
   * interrupts are dropped, and the driver must call back no more. Returns nothing. INT-03: a
   * fatal driver error (a destroyed fence in an interrupt's list, a DDI that throws) stops only
   * its own adapter, this way.
   */
  stopDevice() {
    super.stopDevice();
  }

  /**
   * DxgkDdiResetFromTimeout: a TDR or device removal. The engines stop and every hardware
   * queue's and context's work is dropped. NF-20: the OS then signals every fence of the adapter
   * to UINT64_MAX (except NoSignalMaxValueOnTdr ones), so no waiter hangs.
   */
  resetFromTimeout() {
    super.resetFromTimeout();
  }

  /** DxgkDdiRestartFromTimeout: after the reset (NF-20) the engines run again; new devices, queues and contexts may be made. */
  restartFromTimeout() {
    super.restartFromTimeout();
  }

  /**
   * DxgkDdiQueryAdapterInfo(DXGKQAITYPE_NATIVE_FENCE_CAPS), when user mode queries the adapter's
   * native fence caps and when the OS lays out fence storage. CAP-03; NF-12 (MonitoredValuePadding
   * packs the values of one page), NF-13 (MapToGpuSystemProcess: the CMP's VA in the system process).
   * Expects back: { MonitoredValuePadding, MapToGpuSystemProcess, MinimumAddress, MaximumAddress }.
   */
  queryNativeFenceCaps() {
    return super.queryNativeFenceCaps();
  }

  // ── native fence objects (NF-14, NF-15) ──

  /**
   * DxgkDdiCreateNativeFence, when user mode creates a native fence (D3DKMTCreateNativeFence),
   * once per fence and adapter (a cross-adapter fence once on each adapter, XA-02).
   * The OS has allocated the storage: args.CurrentValueKernelCpuVa / MonitoredValueKernelCpuVa
   * (and the system-process GPU VAs with MapToGpuSystemProcess), args.InitialFenceValue.
   * Expects back: { hGlobalNativeFence }, a handle of the driver's own that names the fence in
   * every later DDI and in interrupt lists (INT-01). NF-12, NF-13, NF-14.
   */
  createNativeFence(args) {
    if (typeof args.CurrentValueKernelCpuVa !== 'bigint') throw new Error('DxgkDdiCreateNativeFence: CurrentValueKernelCpuVa is not an address');
    const created = super.createNativeFence(args);
    // A driver is given addresses, never the core's ids: it finds the fence's record from where CurrentValue is.
    const coreFence = this.core.fenceAtCurrentValue(Number(args.CurrentValueKernelCpuVa - KERNEL_VA_BASE));
    this.coreFences.set(created.hGlobalNativeFence, coreFence);
    return created;
  }

  /**
   * DxgkDdiOpenNativeFence, when a process opens the fence on a device (its creator, or another
   * process through an NT handle). args.hGlobalNativeFence, args.hDevice, and the process's GPU VAs
   * of both values. Expects back: { hLocalNativeFence }. NF-15, NF-16.
   */
  openNativeFence(args) {
    return super.openNativeFence(args);
  }

  /**
   * DxgkDdiCloseNativeFence, when a process's last handle to the fence is closed and no submitted
   * GPU command still names it (the OS waits for those). args.hLocalNativeFence. NF-15.
   */
  closeNativeFence(args) {
    super.closeNativeFence(args);
  }

  /**
   * DxgkDdiDestroyNativeFence, after the last Close (NF-15). From now on the handle must never
   * appear in an interrupt's list: that is a bug check of the adapter (INT-03).
   */
  destroyNativeFence(args) {
    super.destroyNativeFence(args);
    this.coreFences.delete(args.hGlobalNativeFence);
  }

  // ── values: CPU signals and CPU waiters ──

  /**
   * DxgkDdiUpdateCurrentValuesFromCpu, batched (NF-18): a CPU signal (NF-07) writes
   * args.UpdatedValueArray[i] to each fence's CurrentValue, then the driver rescans its run list so
   * hardware queues waiting on those fences run (NF-06). With Flags.NotificationOnly (XA-04) another
   * adapter already wrote the shared CurrentValue: write nothing, only rescan.
   * NF-19: values only move forward unless the signal allowed a rewind (the OS decides; the driver writes).
   */
  updateCurrentValuesFromCpu(args) {
    if (args.NativeFenceArray.length !== args.NumFences || args.UpdatedValueArray.length !== args.NumFences) {
      throw new Error(`DxgkDdiUpdateCurrentValuesFromCpu: NumFences ${args.NumFences} does not match the arrays`);
    }
    super.updateCurrentValuesFromCpu(args);
  }

  /**
   * DxgkDdiUpdateMonitoredValues, batched (NF-18), whenever a CPU waiter is added or retired
   * (NF-02, NF-09). For each fence the CMP's order (NF-11): write the new MonitoredValue, memory
   * barrier, read CurrentValue, raise the interrupt if CurrentValue > MonitoredValue. Leaving the
   * barrier out can lose a wakeup (NF-10) — `wddm-fence explore --variant no-barrier` shows how.
   * The OS reads CurrentValue again after this returns.
   */
  updateMonitoredValues(args) {
    const ddi = 'DxgkDdiUpdateMonitoredValues';
    const core = this.core;
    for (let i = 0; i < args.NumFences; i++) {
      const coreFence = this.coreFences.get(args.NativeFenceArray[i]);
      if (coreFence === undefined) throw new Error(`${ddi}: unknown hGlobalNativeFence 0x${args.NativeFenceArray[i].toString(16)}`);
      // 1. write the new MonitoredValue (into the CMP's write buffer first: the shadow copy)
      coreStatus(core.cmpWriteMonitoredValue(coreFence, args.UpdatedValueArray[i]), ddi);
      // 2. the memory barrier: the write is visible to the engines before CurrentValue is read.
      //    Delete this line and run check-driver: NF-11 is violated (a GPU signal landing between
      //    the write and the read raises no interrupt, and a CPU waiter is never woken: NF-10).
      core.cmpBarrier();
      // 3. read CurrentValue
      const current = core.cmpReadCurrentValue(coreFence);
      // 4. interrupt if CurrentValue > MonitoredValue: the OS then wakes the waiters it reached (NF-09)
      if (coreStatus(core.cmpMonitoredValueCheck(0, coreFence, current), ddi) === 1) this.hardware.raise(0);
    }
  }

  // ── hardware queues (user-mode submission) and their logs ──

  /**
   * DxgkDdiCreateHwQueue, when user mode creates a hardware queue on an engine
   * (args.EngineOrdinal; args.Flags.NativeProgressFence with args.hHwQueueProgressFence, NF-17).
   * Fill args.PrivateDriverData (16 bytes) with what your user-mode half needs to find the queue;
   * the OS hands it back to user mode. Expects back: { hHwQueue }. The OS then sets its two log
   * buffers (LOG-01, below).
   */
  createHwQueue(args) {
    return super.createHwQueue(args);
  }

  /** DxgkDdiDestroyHwQueue, when user mode destroys the queue (or its device goes). Its ring and its two logs (LOG-01) are gone after this. */
  destroyHwQueue(args) {
    super.destroyHwQueue(args);
  }

  /**
   * DxgkDdiSetNativeFenceLogBuffer, twice after CreateHwQueue (waits, signals) and again each time
   * the OS recreates a buffer (LOG-03): from now on the GPU writes that log there. Each signal and
   * unblocked wait: the fence value, the entry with its GPU timestamps, advance the index, barrier,
   * then the conditional interrupt (LOG-02, LOG-04); timestamps never decrease (LOG-07).
   */
  setNativeFenceLogBuffer(args) {
    if (args.NumberOfEntries < 1) throw new Error('DxgkDdiSetNativeFenceLogBuffer: a log buffer with no entries');
    super.setNativeFenceLogBuffer(args);
  }

  /**
   * DxgkDdiUpdateNativeFenceLogs, before the OS reads new log entries of these queues (LOG-06):
   * make every entry they wrote visible to the CPU (flush the pending writes).
   */
  updateNativeFenceLogs(args) {
    super.updateNativeFenceLogs(args);
  }

  // ── kernel-mode contexts (WDDM 2.x, monitored fences: MF-04..MF-06); optional ──

  /** DxgkDdiCreateContext, when user mode creates a kernel-mode context on a node (MF-04, MF-05). Expects back: { hContext }. */
  createContext(args) {
    return super.createContext(args);
  }

  /** DxgkDdiDestroyContext: work the context still had on the engine is dropped; no NotifyDmaCompleted for it (MF-06). */
  destroyContext(args) {
    super.destroyContext(args);
  }

  /**
   * DxgkDdiSubmitCommand: put one command buffer on the context's engine; when it has run, report
   * NotifyDmaCompleted with its SubmissionFenceId (MF-06). Return false, taking nothing, when the
   * engine has no room now: the OS retries at the next completion.
   */
  submitCommand(args) {
    return super.submitCommand(args);
  }
}

/** A core step's result: a negative status is a failure, named from the core's status table. */
function coreStatus(result, ddi) {
  if (result < 0) throw new Error(`${ddi}: the core refused the step: ${CORE_STATUS[result]?.text ?? `status ${result}`}`);
  return result;
}

/**
 * The callbacks as the driver calls them (DxgkrnlCallbacks), passed through unchanged. Each is the
 * only way a piece of news reaches the OS; log or count here. Most are called from the ISR or a
 * GPU step: do not throw from them.
 */
function watchCallbacks(os) {
  return {
    /** CAP-02: is DXGK_FEATURE_NATIVE_FENCE enabled? → { Enabled, Version }. */
    IsFeatureEnabled: (featureId) => os.IsFeatureEnabled(featureId),
    /** CAP-02: the feature's interface (GetOSCaps), or null when not negotiated. */
    QueryFeatureInterface: (featureId, version) => os.QueryFeatureInterface(featureId, version),
    /**
     * The native fence signaled interrupt (from the ISR). INT-01: pSignaledNativeFenceArray lists
     * the hGlobalNativeFence of every signalled fence with CPU waiters, or is null ("scan all");
     * INT-02 several signals may share one; INT-03 never a destroyed fence; INT-04
     * EvaluateLegacyMonitoredFences; INT-05 with the optimized cap, hHWQueue names the running
     * queue instead of a list; INT-06 a reached waiter is always listed or covered by null.
     */
    NotifyInterrupt: (data) => os.NotifyInterrupt(data),
    /** A kernel-mode context's command buffer completed (MF-06): its SubmissionFenceId. */
    NotifyDmaCompleted: (data) => os.NotifyDmaCompleted(data),
    /** A fence-write command wrote a monitored fence (MF-04): the OS scans pending waits. */
    NotifyMonitoredFenceSignaled: (data) => os.NotifyMonitoredFenceSignaled(data),
    /** A GPU page fault: the OS resets the adapter (TDR), NF-20. */
    NotifyDmaPageFaulted: (data) => os.NotifyDmaPageFaulted(data),
    /** Model-only: each command a queue executed (the OS's in-flight references, stuck report, GPU rewinds). */
    NotifyGpuProgress: (data) => os.NotifyGpuProgress(data),
    /**
     * Model-only: may the queue's next quiet commands (work, passed waits, signals nobody waits for) run as
     * a stretch reported by count? The OS says (it asks only on a machine with no observer and no trace).
     */
    QueryGpuProgressStretch: (data) => os.QueryGpuProgressStretch(data),
    /** Model-only: the queue's oldest `Commands` commands executed, as one report. */
    NotifyGpuProgressStretch: (data) => os.NotifyGpuProgressStretch(data),
    /** Model-only (XA-07): a doorbell ring was full; the OS propagates the fence after the interrupt. */
    NotifyDoorbellFallback: (data) => os.NotifyDoorbellFallback(data),
  };
}

/**
 * The user-mode half (UMD): the runtime calls submitToHwQueue to write commands into a hardware
 * queue's ring and ring its doorbell; the OS never sees it. Write every command or none: a ring
 * without room for all of them is a WddmError (the runtime's call fails, nothing is written).
 */
class TemplateUserModeDriver extends ReferenceUserModeDriver {
  submitToHwQueue(args) {
    if (!Array.isArray(args.Commands)) {
      throw new WddmError('INVALID_PARAMETER', 'submitToHwQueue: Commands is not a list', { parameter: 'Commands', expected: 'a list of commands' });
    }
    super.submitToHwQueue(args);
  }
}

/**
 * The module's factory: called once per adapter while the machine is built, with that adapter's
 * context (adapterIndex, adapterName, hardware, core, options). Returns the kernel-mode driver;
 * its `userMode` property is the user-mode half.
 */
export function createDriver(context) {
  return new TemplateDriver(context);
}
