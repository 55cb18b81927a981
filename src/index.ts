// wddm-fence: a reference software model of WDDM GPU synchronization objects.
export { createMachine, createMachineSync, Machine, Adapter } from './machine/machine.js';
export { MAX_VIRTUAL_TIME_NS } from './base/validate.js';
export type { MachineOptions, OsFeatureOptions, MachineLimits, AdapterOptions, AdapterCapsOptions, NativeFenceCapsOptions, AdapterLimits, MachineSummary, AdapterSummary, FenceInspection } from './machine/machine.js';
export type { StuckReport, StuckQueue, StuckWaiter, StuckThread, StuckWait, Deadlock, StuckLostWakeup, NeverSignalled } from './machine/liveness.js';
export type { LostWakeup } from './machine/lost-wakeups.js';
export type { GpuRewind } from './os/inspect.js';
// The contract checker (opt-in: createMachine({ observers: [new ContractChecker()] })). The conformance suite that runs
// it over the built-in scenarios, runConformance, parses YAML: it is in the `wddm-fence/scenario` entry.
export { ContractChecker, createContractChecker, CONTRACT_RULES } from './check/contract.js';
export type { Violation, ContractRule } from './check/contract.js';
export { REQUIREMENTS } from './check/requirements.js';
export type { Requirement } from './check/requirements.js';
export type { ConformanceOptions, ConformanceReport, RequirementResult, RequirementStatus, CaseResult } from './check/conformance.js';
export type { UserModeSubmission } from './port/driver-port.js';
export type { MachineObserver, BuiltAdapter } from './machine/machine.js';
export type { GpuFirmware, InterruptPhase } from './gpu/hardware.js';
export type { FaultInjection, FaultReport, CollapseInterruptsFault, ForceLogOverrunFault } from './machine/faults.js';
export { RuntimeProcess, CpuThread, Cpu, CpuThreadError } from './user/runtime.js';
export type { ThreadOp, ThreadBody, ThreadOptions, ThreadSignal, WaitArgs, ThreadBlock } from './user/runtime.js';
export type { WaitResult, WaitStatus, NativeFenceMapping, MonitoredFenceCreated } from './os/kernel.js';
export type { BugCheckReport, Counters, LegacyCounters } from './os/inspect.js';
export { compareSynchronizationModels } from './comparisons/sync-models.js';
export type { Comparison, ModelCost } from './comparisons/sync-models.js';
export { WddmError, NTSTATUS, CORE_STATUS } from './base/errors.js';
export type { StatusName } from './base/errors.js';
export { Trace } from './base/trace.js';
export type { TraceEvent, TraceKind } from './base/trace.js';
export { Random } from './base/rng.js';
export { Scheduler } from './base/scheduler.js';
export type { ScheduledEvent, EventArgs, EventHandler } from './base/scheduler.js';
export type { Timing } from './gpu/hardware.js';
export { compileCore, compileCoreSync, instantiateCore, readLayout, CORE_ABI_VERSION, osCoreView, gpuCoreView, OS_CORE_EXPORTS, GPU_CORE_EXPORTS } from './core/bindings.js';
export type { CoreExports, CoreLayout, WasmMemory, WasmModule, WasmGlobal, OsCore, GpuCore } from './core/bindings.js';
export { CommandList } from './os/kernel.js';
export { UMD_OP_WAIT, UMD_OP_SIGNAL, UMD_OP_WORK } from './ddi/ddi.js';
export type {
  KernelModeDriver, KernelModeDriverCpuSignal, DxgkrnlCallbacks, UserModeDriverInterface, UserModeCommand, UMDARG_SUBMITTOHWQUEUE, UserModeDriverColumns, UMDARG_SUBMITCOLUMNSTOHWQUEUE,
  GpuProgressReport, GpuProgressOperation, DmaPageFaultedInterrupt, DoorbellFallback,
} from './ddi/ddi.js';
export { DriverPort } from './port/driver-port.js';
export { ReferenceDriver, ReferenceUserModeDriver } from './driver/reference.js';
export type { ReferenceDriverOptions } from './driver/reference.js';
export { referenceDriverModule, checkDriverModule, checkDriver, REQUIRED_DDIS, OPTIONAL_DDIS, OPTIONAL_DDI_FORMS, OPTIONAL_USER_MODE } from './driver/module.js';
export type { DriverModule, DriverContext, PluggableDriver } from './driver/module.js';
export { loadDriverModule } from './driver/load.js';
export type { LoadDriverModuleOptions } from './driver/load.js';
export type { DdiObserver, DdiCall, DdiOutcome, CallbackCall, DdiName, CallbackName } from './port/driver-port.js';
export type { UserModeSystem } from './user/runtime.js';
export * from './base/wddm.js';
export { exportTimeline } from './timeline/timeline.js';
export type { ChromeTrace, ChromeTraceEvent } from './timeline/timeline.js';
export type { LogHistory as NativeFenceLogs, LogEntryRecord, QueuedEvent, LogFault, LogOverrun, LogCounters, VidMmView, AllocationInfo, CoherenceFault, GpuRead, VidMmCounters, LockPath } from './os/inspect.js';
export type { LogKind, AllocationUse, CpuAccess } from './os/kernel.js';
export { UserModeDriver } from './user/d3d11-map.js';
export type { MapArgs, MapResult, MapType, ResourceUse, UmdStats } from './user/d3d11-map.js';
export type { SegmentOptions, SegmentDescriptor } from './os/kernel.js';
// Cross-adapter fences: the scenario tables (XA-06), the doorbell comparison (XA-07), worker mode.
export { runScenario, runScenarioPairs, rowsFor, scenarioText, compareDoorbell, doorbellComparisonText, SCENARIO_1_ROWS, SCENARIO_IDS } from './comparisons/cross-adapter-tables.js';
export type { ScenarioId, ScenarioRun, ScenarioStep, DoorbellComparison } from './comparisons/cross-adapter-tables.js';
export { runWorkerStress, workerStressText, waitForFenceWordAsync } from './workers/worker-mode.js';
export type { WorkerStressOptions, WorkerStressReport } from './workers/worker-mode.js';
export { nodeAdapterWorkerSource, browserAdapterWorkerSource } from './workers/adapter-worker-source.js';
export type { DoorbellOptions, ScheduleOptions } from './machine/machine.js';
// Scenario files (yaml, ajv) are a separate entry, `wddm-fence/scenario` (dist/scenario.js), so this
// bundle stays self-contained: the same file runs in Node and in browsers with no import map.
export * from './explore/index.js';
export { seededTieBreak } from './base/scheduler.js';
export type { SchedulePolicy } from './base/scheduler.js';
