// What this build can run. The schema (schema.ts) describes the whole format;
// a scenario that uses a part listed here as unsupported is rejected by the
// loader with "not supported by this build yet", naming the path, before
// anything runs. Flip an entry when its feature lands and the runner drives it.

export const FEATURES = {
  /** fences[].kind: monitored (WDDM 2.x monitored fences). */
  monitoredFences: true,
  /** queues[].kind: kernelMode (kernel-mode contexts with DMA buffers). */
  kernelModeContexts: true,
  /** fences[].crossAdapter, machine.doorbell. */
  crossAdapterFences: true,
  /**
   * machine.workers (each adapter in a worker thread). Scenario runs are virtual-time and
   * reproducible; worker mode is real threads (runWorkerStress, the page's Worker mode section).
   */
  workers: false,
  /** faults[].forceLogOverrun (an overrun on demand: machine.injectFault, src/machine/faults.ts; overruns from late interrupts need nothing: see scenarios/log-overrun.yaml). */
  forcedLogOverrun: true,
  /** allocations, lock/unlock steps, useAllocation commands. */
  allocations: true,
  /** faults[].collapseInterrupts (machine.injectFault, src/machine/faults.ts). */
  collapsedInterrupts: true,
} as const;

export type FeatureName = keyof typeof FEATURES;

export const FEATURE_TEXT: Record<FeatureName, string> = {
  monitoredFences: 'monitored fences are',
  kernelModeContexts: 'kernel-mode contexts are',
  crossAdapterFences: 'cross-adapter fences are',
  workers: 'worker mode is',
  forcedLogOverrun: 'forced log overruns are',
  allocations: 'allocations and Lock2 are',
  collapsedInterrupts: 'collapsed interrupts are',
};
