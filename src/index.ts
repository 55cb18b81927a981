// wddm-fence: a reference software model of WDDM GPU synchronization objects.
export { createMachine, createMachineSync, Machine, Adapter } from './machine.js';
export type { MachineOptions, AdapterOptions, AdapterCapsOptions, NativeFenceCapsOptions, AdapterLimits, MachineSummary, AdapterSummary } from './machine.js';
export { RuntimeProcess, CpuThread, Cpu } from './runtime.js';
export type { ThreadOp, ThreadBody, WaitArgs } from './runtime.js';
export type { WaitResult, WaitStatus, NativeFenceMapping, BugCheckReport, Counters } from './os/dxgkrnl.js';
export type { MonitoredFenceCreated, LegacyCounters } from './os/monitored.js';
export { compareSynchronizationModels } from './compare.js';
export type { Comparison, ModelCost } from './compare.js';
export { WddmError, NTSTATUS, CORE_STATUS } from './errors.js';
export type { StatusName } from './errors.js';
export { Trace } from './trace.js';
export type { TraceEvent, TraceKind } from './trace.js';
export { Random } from './rng.js';
export { compileCore, compileCoreSync, instantiateCore, readLayout } from './core.js';
export type { CoreExports, CoreLayout } from './core.js';
export type { KernelModeDriver, DxgkrnlCallbacks } from './driver/ddi.js';
export * from './wddm.js';
