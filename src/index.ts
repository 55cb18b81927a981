// wddm-fence: a reference software model of WDDM GPU synchronization objects.
export { createMachine, createMachineSync, Machine, Adapter } from './machine.js';
export { MAX_VIRTUAL_TIME_NS } from './validate.js';
export type { MachineOptions, MachineLimits, AdapterOptions, AdapterCapsOptions, NativeFenceCapsOptions, AdapterLimits, MachineSummary, AdapterSummary, FenceInspection } from './machine.js';
export type { StuckReport, StuckQueue, StuckWaiter, StuckThread, StuckWait, Deadlock } from './check/liveness.js';
export type { GpuRewind } from './os/gpu-rewind.js';
export { fuzzFenceLifetime, fuzzFailureText } from './check/fuzz.js';
export type { FuzzOptions, FuzzReport, FuzzFailure } from './check/fuzz.js';
export type { FaultInjection, FaultReport, CollapseInterruptsFault, ForceLogOverrunFault } from './faults.js';
export { RuntimeProcess, CpuThread, Cpu, CpuThreadError } from './runtime.js';
export type { ThreadOp, ThreadBody, WaitArgs, ThreadBlock } from './runtime.js';
export type { WaitResult, WaitStatus, NativeFenceMapping, BugCheckReport, Counters } from './os/dxgkrnl.js';
export type { MonitoredFenceCreated, LegacyCounters } from './os/monitored.js';
export { compareSynchronizationModels } from './compare.js';
export type { Comparison, ModelCost } from './compare.js';
export { WddmError, NTSTATUS, CORE_STATUS } from './errors.js';
export type { StatusName } from './errors.js';
export { Trace } from './trace.js';
export type { TraceEvent, TraceKind } from './trace.js';
export { Random } from './rng.js';
export { Scheduler } from './scheduler.js';
export type { ScheduledEvent, EventArgs, EventHandler } from './scheduler.js';
export type { Timing } from './gpu/hardware.js';
export { compileCore, compileCoreSync, instantiateCore, readLayout, CORE_ABI_VERSION, osCoreView, gpuCoreView, OS_CORE_EXPORTS, GPU_CORE_EXPORTS } from './core.js';
export type { CoreExports, CoreLayout, WasmMemory, WasmModule, WasmGlobal, OsCore, GpuCore } from './core.js';
export type {
  KernelModeDriver, DxgkrnlCallbacks, UserModeDriverInterface, UserModeCommand, UMDARG_SUBMITTOHWQUEUE, DriverModule,
  GpuProgressReport, GpuProgressOperation, DmaPageFaultedInterrupt, DoorbellFallback,
} from './driver/ddi.js';
export { DriverPort } from './port/driver-port.js';
export type { DdiObserver, DdiCall, DdiOutcome, CallbackCall, DdiName, CallbackName } from './port/driver-port.js';
export type { UserModeSystem } from './runtime.js';
export * from './wddm.js';
export { exportTimeline } from './timeline.js';
export type { ChromeTrace, ChromeTraceEvent } from './timeline.js';
export type { NativeFenceLogs, LogEntryRecord, QueuedEvent, LogFault, LogOverrun, LogCounters, LogKind } from './os/logs.js';
export { VidMm } from './vidmm/vidmm.js';
export type { AllocationInfo, AllocationUse, CpuAccess, CoherenceFault, GpuRead, VidMmCounters, LockPath } from './vidmm/vidmm.js';
export { UserModeDriver } from './vidmm/umd.js';
export type { MapArgs, MapResult, MapType, ResourceUse, UmdStats } from './vidmm/umd.js';
export type { SegmentOptions, SegmentDescriptor } from './vidmm/segments.js';
// Cross-adapter fences: the scenario tables (XA-06), the doorbell comparison (XA-07), worker mode.
export { runScenario, runScenarioPairs, rowsFor, scenarioText, compareDoorbell, doorbellComparisonText, SCENARIO_1_ROWS, SCENARIO_IDS } from './scenarios/cross-adapter.js';
export type { ScenarioId, ScenarioRun, ScenarioStep, DoorbellComparison } from './scenarios/cross-adapter.js';
export { runWorkerStress, workerStressText, waitForFenceWordAsync } from './workers/worker-mode.js';
export type { WorkerStressOptions, WorkerStressReport } from './workers/worker-mode.js';
export { nodeAdapterWorkerSource, browserAdapterWorkerSource } from './workers/adapter-worker-source.js';
export type { DoorbellOptions } from './machine.js';
// Scenario files (yaml, ajv) are a separate entry, `wddm-fence/scenario` (dist/scenario.js), so this
// bundle stays self-contained: the same file runs in Node and in browsers with no import map.
