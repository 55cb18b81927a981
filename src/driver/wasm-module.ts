// Loading a WebAssembly driver module (a driver written in C: examples/drivers/c/wddm_fence_driver.h): what
// the adapter (wasm-driver.ts) needs to know before it makes any instance.
//
//   compileWasmDriver(bytes)   checks the module up front (WebAssembly, position-independent, imports the
//                              model provides, every required export), guards its stores (wasm-guard.ts) and
//                              compiles it once
//   regionBytes / layoutRegion the region the memory plan reserves per adapter for the driver, and its parts
//   C_ABI                      every offset of the header's structures the adapter reads or writes
//
// Every refusal is a WddmError naming the module and what is wrong with it (check-driver exit 2).

import { WddmError } from '../base/errors.js';
import { GPU_CORE_EXPORTS } from '../core/bindings.js';
import { WasmGuardError, guardModule, moduleFacts, type ModuleFacts } from './wasm-guard.js';
import type { DriverMemorySizing } from './module.js';

// ───────────────────────────── the region's policy ─────────────────────────────

/** The driver's stack (WDDM_DRIVER_STACK_BYTES in wddm_fence_driver.h's drawing). */
export const C_DRIVER_STACK_BYTES = 64 * 1024;
/** The argument area: a base, and room for one DDI's arrays of the adapter's limits (24 B an entry). */
const ARGUMENT_AREA_BASE_BYTES = 64 * 1024, ARGUMENT_BYTES_PER_ENTRY = 24;
/** The pool (WDDM_ADAPTER_INFO.PoolBytes): a base, then per fence and per queue the adapter's limits allow. */
export const C_DRIVER_POOL = { baseBytes: 256 * 1024, bytesPerFence: 32, bytesPerQueue: 128 } as const;
const PAGE = 4096;
const alignUp = (n: number, to: number) => Math.ceil(n / to) * to;
const argumentAreaBytes = (s: DriverMemorySizing) => ARGUMENT_AREA_BASE_BYTES + ARGUMENT_BYTES_PER_ENTRY * Math.max(s.limits.fences, s.limits.ringEntries, s.limits.queues);
const poolBytes = (s: DriverMemorySizing) => C_DRIVER_POOL.baseBytes + C_DRIVER_POOL.bytesPerFence * (s.limits.fences + 1) + C_DRIVER_POOL.bytesPerQueue * (s.limits.queues + 1);

// ───────────────────────────── the C ABI (wddm_fence_driver.h) ─────────────────────────────

/**
 * Every offset the adapter reads or writes, named as the header's _Static_asserts name them
 * (test/c-drivers.test.ts compares this table with the header's).
 */
export const C_ABI = {
  DXGK_NATIVE_FENCE_CAPS: { MonitoredValuePadding: 0, MapToGpuSystemProcess: 4, MinimumAddress: 8, MaximumAddress: 16, size: 56 },
  WDDM_GPU_LAYOUT: { OutBuffer: 0, OpNop: 8, CommandBytes: 28, FenceTableAddress: 48, FenceDriverHandleOffset: 72, LogEntries: 84, size: 88 },
  WDDM_ADAPTER_INFO: {
    AdapterName: 8, HardwareCaps: 12, NativeFenceCaps: 16, InterruptPayload: 72, EvaluateLegacyMonitoredFences: 76, QueryFeatureBeforeAdvertising: 77,
    MonitoredValueBarrier: 78, EnginesWriteMonitoredFences: 79, RingEntries: 80, MaxFences: 84, MaxQueues: 88, Granularity: 92, DoorbellPresent: 96,
    PoolBase: 100, PoolBytes: 104, Layout: 108, size: 200,
  },
  WDDM_START_DEVICE_RESULT: { EnginesWriteMonitoredFences: 4, NativeFenceCaps: 8, size: 64 },
  DXGKARG_QUERYADAPTERINFO: { pOutputData: 4, OutputDataSize: 8 },
  DXGKARG_CREATENATIVEFENCE: {
    Type: 4, InitialFenceValue: 8, CurrentValueKernelCpuVa: 16, MonitoredValueKernelCpuVa: 24, CurrentValueSystemProcessGpuVa: 32,
    MonitoredValueSystemProcessGpuVa: 40, PrivateDriverData: 48, size: 112,
  },
  DXGKARG_OPENNATIVEFENCE: { hLocalNativeFence: 4, hDevice: 8, CurrentValueGpuVa: 16, MonitoredValueGpuVa: 24, size: 32 },
  DXGKARG_UPDATECURRENTVALUESFROMCPU: { Flags: 4, NativeFenceArray: 8, UpdatedValueArray: 12, CurrentValueKernelCpuVa: 16, size: 20 },
  DXGKARG_UPDATEMONITOREDVALUES: { NativeFenceArray: 4, UpdatedValueArray: 8, MonitoredValueKernelCpuVa: 12, size: 16 },
  DXGKARG_CREATEHWQUEUE: { EngineOrdinal: 4, Flags: 8, hHwQueueProgressFence: 12, ProcessSlot: 16, DebugName: 20, hHwQueue: 24, PrivateDriverDataSize: 28, pPrivateDriverData: 32, size: 36 },
  DXGKARG_SETNATIVEFENCELOGBUFFER: { NumberOfEntries: 4, LogBufferCpuVa: 8, LogBufferGpuVa: 16, LogBufferSystemProcessGpuVa: 24, Flags: 32, size: 40 },
  DXGKARG_UPDATENATIVEFENCELOGS: { hHWQueueArray: 4, Flags: 8 },
  DXGKARG_CREATECONTEXT: { NodeOrdinal: 4, ProcessSlot: 8, hContext: 12 },
  WDDM_CONTEXT_COMMAND: { GpuVa: 8, Value: 16, size: 24 },
  DXGKARG_SUBMITCOMMAND: { SubmissionFenceId: 4, NumCommands: 8, pCommands: 12, Submitted: 16 },
  UMDARG_SUBMITTOHWQUEUE: { HwQueuePrivateDriverDataSize: 4, CommandCount: 8, Ops: 12, GpuVas: 16, Values: 20, Handles: 24, size: 28 },
  WDDM_GPU_STEP: { Flags: 20, Value: 24, PreviousValue: 32, TimeNs: 40, ObservedNs: 48, size: 56 },
  DXGKARGCB_NOTIFY_INTERRUPT_DATA: {
    'DmaCompleted.SubmissionFenceId': 4, 'DmaCompleted.NodeOrdinal': 8, 'DmaPageFaulted.hQueue': 12, 'DmaPageFaulted.Message': 16,
    'NativeFenceSignaled.SignaledNativeFenceCount': 12, 'NativeFenceSignaled.pSignaledNativeFenceArray': 16, 'NativeFenceSignaled.hHWQueue': 20, Flags: 24, size: 28,
  },
  DXGKARGCB_ISFEATUREENABLED2: { Enabled: 4, Version: 8 },
  DXGKARGCB_QUERYFEATUREINTERFACE: { Version: 4, pInterface: 8 },
  WDDM_GPU_PROGRESS_REPORT: { Operation: 12, Flags: 20, Value: 24, PreviousValue: 32, GpuTimeNs: 40, ObservedGpuTimeNs: 48, size: 56 },
  WDDM_GPU_PROGRESS_STRETCH_QUERY: { CommandsInRing: 8 },
  WDDM_GPU_PROGRESS_STRETCH: { FenceCommands: 16, GpuTimeNs: 24, size: 32 },
  WDDM_DOORBELL_FALLBACK: { RingsFull: 12 },
  WDDM_ERROR_INFO: { GpuStatus: 8, Message: 12, Parameter: 16, Expected: 20, HasValue: 24, Value: 32, size: 40 },
} as const;

/** What the driver must export (wddm_fence_driver.h, "what the driver exports"). */
export const C_REQUIRED_EXPORTS = [
  'DxgkDdiAddDevice', 'DxgkDdiStartDevice', 'DxgkDdiStopDevice', 'DxgkDdiResetFromTimeout', 'DxgkDdiRestartFromTimeout',
  'DxgkDdiQueryAdapterInfo', 'DxgkDdiCreateNativeFence', 'DxgkDdiOpenNativeFence', 'DxgkDdiCloseNativeFence', 'DxgkDdiDestroyNativeFence',
  'DxgkDdiUpdateCurrentValuesFromCpu', 'DxgkDdiUpdateMonitoredValues', 'WddmDdiUpdateMonitoredValuesStep', 'DxgkDdiCreateHwQueue',
  'DxgkDdiDestroyHwQueue', 'DxgkDdiSetNativeFenceLogBuffer', 'DxgkDdiUpdateNativeFenceLogs', 'DxgkDdiInterruptRoutine',
  'WddmGpuDmaCompleted', 'WddmGpuFaulted', 'WddmGpuStepExecuted', 'WddmGpuStretchAccepted', 'WddmGpuStretchExecuted',
  'WddmGpuDoorbellFallback', 'WddmDriverQueueOf', 'UmdSubmitToHwQueue',
] as const;
/** What it may export: the three context DDIs (all or none), the one-fence form, the firmware's timestamp counter. */
export const C_OPTIONAL_EXPORTS = ['DxgkDdiCreateContext', 'DxgkDdiDestroyContext', 'DxgkDdiSubmitCommand', 'DxgkDdiUpdateOneCurrentValueFromCpu', 'WddmGpuTimestamp'] as const;
export const CONTEXT_EXPORTS = ['DxgkDdiCreateContext', 'DxgkDdiDestroyContext', 'DxgkDdiSubmitCommand'] as const;

/** The hardware functions of module "wddm_gpu" (beside the core's GPU view). */
export const HARDWARE_IMPORTS = ['Kick', 'RaiseInterrupt', 'RescanRunList', 'AddQueue', 'RemoveQueue', 'Stop', 'Restart', 'DoorbellRegister', 'DoorbellUnregister', 'ProgramFirmware'] as const;
export const CALLBACK_IMPORTS = ['DxgkCbIsFeatureEnabled', 'DxgkCbQueryFeatureInterface', 'DxgkCbNativeFenceGetOSCaps', 'DxgkCbNotifyInterrupt', 'DxgkCbNotifyGpuProgress',
  'DxgkCbQueryGpuProgressStretch', 'DxgkCbNotifyGpuProgressStretch', 'DxgkCbNotifyDoorbellFallback'] as const;
export const ENV_IMPORTS = ['memory', '__stack_pointer', '__memory_base', '__table_base', '__indirect_function_table'];

// ───────────────────────────── loading ─────────────────────────────

/** Where the module came from, for messages. */
export interface WasmDriverSource { shown: string; baseName: string }

const unusable = (where: WasmDriverSource, why: string) => new WddmError('INVALID_PARAMETER', `driver module ${where.shown} ${why}`, {
  parameter: 'driver module', value: where.shown, expected: 'a WebAssembly driver module built from C with examples/drivers/c/build.sh (examples/drivers/c/wddm_fence_driver.h)',
});

/** What the loader learned of a module, kept by its DriverModule. */
export interface LoadedWasmDriver { readonly module: WebAssembly.Module; readonly facts: ModuleFacts; readonly name: string }

/**
 * Checks a WebAssembly driver module's bytes (a C driver: examples/drivers/c) and compiles its guarded copy.
 * Everything that makes it no driver is refused with a WddmError naming it: not WebAssembly, not
 * position-independent, an import the model does not provide, a missing export.
 */
export async function compileWasmDriver(bytes: Uint8Array, where: WasmDriverSource): Promise<LoadedWasmDriver> {
  if (!WebAssembly.validate(bytes as BufferSource)) {
    let reason = 'it does not validate';
    try { await WebAssembly.compile(bytes as BufferSource); } catch (error) { reason = (error as Error).message; }
    throw unusable(where, `is not a WebAssembly module: ${reason}`);
  }
  let facts: ModuleFacts;
  let guarded: Uint8Array;
  try {
    facts = moduleFacts(bytes);
    checkShape(facts, where);
    guarded = guardModule(bytes);
  } catch (error) {
    if (error instanceof WasmGuardError) throw unusable(where, `cannot be loaded: ${error.message}`);
    throw error;
  }
  return { module: await WebAssembly.compile(guarded as BufferSource), facts, name: where.baseName };
}

function checkShape(facts: ModuleFacts, where: WasmDriverSource): void {
  const { imports, exports, dylink } = facts;
  if (!dylink || !imports.some((i) => i.module === 'env' && i.name === '__memory_base')) {
    throw unusable(where, 'is not a position-independent module (no dylink.0 section or env.__memory_base import): the machine places a driver\'s globals in the region it reserves; build it with examples/drivers/c/build.sh (-fPIC, wasm-ld --experimental-pic -pie)');
  }
  if (dylink.needed.length) throw unusable(where, `needs the shared libraries ${dylink.needed.join(', ')}; a driver module is one module`);
  if (facts.definesMemory) throw unusable(where, 'defines a memory of its own; a driver imports the machine\'s (env.memory, shared: wasm-ld --import-memory --shared-memory)');
  const memory = imports.find((i) => i.kind === 'memory');
  if (!memory || memory.module !== 'env' || memory.name !== 'memory' || !memory.shared) {
    throw unusable(where, 'does not import the machine\'s shared memory as env.memory (wasm-ld --import-memory --shared-memory)');
  }
  const gpuNames = new Set<string>([...GPU_CORE_EXPORTS, ...HARDWARE_IMPORTS]);
  const provided = (i: { module: string; name: string }) =>
    (i.module === 'env' && ENV_IMPORTS.includes(i.name)) || (i.module === 'dxgkrnl' && (CALLBACK_IMPORTS as readonly string[]).includes(i.name))
    || (i.module === 'wddm_gpu' && gpuNames.has(i.name)) || (i.module === 'wddm' && i.name === 'ReportError');
  const unknown = imports.filter((i) => !provided(i)).map((i) => `${i.module}.${i.name}`);
  if (unknown.length) {
    throw unusable(where, `imports ${unknown.join(', ')}, which the model does not provide (wddm_fence_driver.h lists what a driver may call; env.memset and its kind come from wddm_fence_runtime.c, which build.sh links in)`);
  }
  const exported = new Set(exports.filter((e) => e.kind === 0).map((e) => e.name));
  const missing = C_REQUIRED_EXPORTS.filter((name) => !exported.has(name));
  if (missing.length) {
    throw unusable(where, `does not implement the driver interface: it exports no ${missing.join(', ')} (wddm_fence_driver.h lists what a driver exports; docs/DRIVERS.md)`);
  }
  const contexts = CONTEXT_EXPORTS.filter((name) => exported.has(name));
  if (contexts.length && contexts.length !== CONTEXT_EXPORTS.length) {
    throw unusable(where, `exports ${contexts.join(', ')} but not ${CONTEXT_EXPORTS.filter((n) => !exported.has(n)).join(', ')}: the kernel-mode context DDIs come all three or none`);
  }
}

/** Where each part of a driver's region is. */
export interface CDriverRegion {
  /** The region [base, base + bytes) (a guard page precedes it). */
  readonly base: number; readonly bytes: number;
  /** The stack's top (__stack_pointer at rest); the stack is [base, stackTop). */
  readonly stackTop: number;
  /** __memory_base: the driver's globals. */
  readonly memoryBase: number;
  readonly argumentBase: number; readonly argumentEnd: number;
  readonly poolBase: number; readonly poolBytes: number;
}

export function regionBytes(facts: ModuleFacts, sizing: DriverMemorySizing): number {
  const alignment = 2 ** (facts.dylink?.memoryAlignment ?? 4);
  return alignUp(C_DRIVER_STACK_BYTES + Math.max(alignment, 16) + (facts.dylink?.memorySize ?? 0) + 16 + argumentAreaBytes(sizing) + 16 + poolBytes(sizing), PAGE);
}

export function layoutRegion(facts: ModuleFacts, base: number, bytes: number, sizing: DriverMemorySizing): CDriverRegion {
  const stackTop = base + C_DRIVER_STACK_BYTES;
  const memoryBase = alignUp(stackTop, Math.max(2 ** (facts.dylink?.memoryAlignment ?? 4), 16));
  const argumentBase = alignUp(memoryBase + (facts.dylink?.memorySize ?? 0), 16);
  const argumentEnd = argumentBase + argumentAreaBytes(sizing);
  const poolBase = alignUp(argumentEnd, 16);
  return { base, bytes, stackTop, memoryBase, argumentBase, argumentEnd, poolBase, poolBytes: base + bytes - poolBase };
}
