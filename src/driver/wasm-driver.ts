// Drivers written in C: a WebAssembly driver module (examples/drivers/c/wddm_fence_driver.h) behind the
// same KernelModeDriver a JavaScript module returns. This file is the adapter between the two:
//
//   loadWasmDriverModule(bytes)   the module checked, guarded and compiled once (wasm-module.ts), as a
//                                 DriverModule whose memoryBytes() asks the machine's memory plan for a region
//                                 per adapter
//   createDriver(context)         instantiates it over the machine's memory, its data at the region, binds its
//                                 imports (Dxgkrnl's callbacks → the OS; the GPU's interface → the core's GPU
//                                 view and the adapter's GpuHardware), and calls DxgkDdiAddDevice
//   WasmDriver                    each DDI: its DXGKARG structure written into the argument area, the export
//                                 called, the result read back; the GPU's events (ISR, progress, faults) the same
//
// The region the memory plan reserves for one adapter's driver (docs/MEMORY.md, "Driver regions"):
//
//   guard page │ stack (grows down) │ globals (__memory_base) │ argument area │ pool
//              region.base          stackTop                  argumentBase    poolBase          region end
//
// Failures. A DDI returns an NTSTATUS after describing a failure (wddm.ReportError): a refusal becomes the
// WddmError the caller gets, a fault an Error the driver port turns into a bug check of this adapter
// (docs/DRIVERS.md, "What a DDI may throw"). A trap in the driver's code (a store outside its memory, an
// out-of-bounds access, unreachable) stops the driver for good: the error names the DDI and what happened,
// the driver is never entered again, and its stack pointer is put back. Every driver's state is in linear
// memory (its region), so the race explorer's snapshots hold it whole; the adapter object keeps none.
//
// Why this file is long: it is one class, the one door between the model and a C driver, with a method per
// DDI, GPU event and callback, each writing or reading its structure at the header's offsets; split, each
// part would reach into the same views, argument area and error report.

import type {
  DXGKARG_CLOSENATIVEFENCE, DXGKARG_CREATECONTEXT, DXGKARG_CREATEHWQUEUE, DXGKARG_CREATENATIVEFENCE, DXGKARG_DESTROYCONTEXT,
  DXGKARG_DESTROYHWQUEUE, DXGKARG_DESTROYNATIVEFENCE, DXGKARG_OPENNATIVEFENCE, DXGKARG_SETNATIVEFENCELOGBUFFER, DXGKARG_SUBMITCOMMAND,
  DXGKARG_UPDATECURRENTVALUESFROMCPU, DXGKARG_UPDATEMONITOREDVALUES, DXGKARG_UPDATENATIVEFENCELOGS, DdiInProgress, DriverStartResult,
  DxgkrnlCallbacks, GpuProgressOperation, NativeFenceCaps, NativeFenceFeatureInterface, UMDARG_SUBMITCOLUMNSTOHWQUEUE, UMDARG_SUBMITTOHWQUEUE,
  UserModeDriverColumns, UserModeDriverInterface,
} from '../ddi/ddi.js';
import { DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED, DXGKQAITYPE_NATIVE_FENCE_CAPS, hex } from '../base/wddm.js';
import { NTSTATUS, WddmError, check, type StatusName } from '../base/errors.js';
import { GPU_CORE_EXPORTS, type GpuCore, type WasmMemory } from '../core/bindings.js';
import { DEFAULT_FIRMWARE, type GpuHardware, type HwQueueInfo, type StepRecord, type StretchReport } from '../gpu/hardware.js';
import { GUARD_IMPORTS, GUARD_MODULE, FAST_PATH_MAX_END } from './wasm-guard.js';
import {
  C_ABI, compileWasmDriver, layoutRegion, regionBytes, type C_OPTIONAL_EXPORTS, type C_REQUIRED_EXPORTS, type CDriverRegion,
  type LoadedWasmDriver, type WasmDriverSource,
} from './wasm-module.js';
import type { DriverContext, DriverMemorySizing, DriverModule, PluggableDriver } from './module.js';
import { columnsCommandCount } from './columns.js';

export { C_ABI, type CDriverRegion } from './wasm-module.js';

const STATUS_SUCCESS = 0, STATUS_PENDING = 0x103;
const STATUS_NOT_SUPPORTED = NTSTATUS.NOT_SUPPORTED | 0;
const ERROR_REFUSAL = 0, ERROR_GPU_STATUS = 1, ERROR_FAULT = 2;
const INTERRUPT = { dmaCompleted: 1, dmaPageFaulted: 9, monitoredFenceSignaled: 11, nativeFenceSignaled: DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED } as const;
const EVALUATE_LEGACY_MONITORED_FENCES = 1 << 2;
const STEP_KIND: Record<StepRecord['kind'], number> = {
  'wait-passed': 0, 'wait-blocked': 1, 'wait-unblocked': 2, signal: 3, work: 4, 'fence-write': 5, 'dma-completed': 6,
};
const PROGRESS_OPERATION: readonly GpuProgressOperation[] = ['WAIT_PASSED', 'WAIT_BLOCKED', 'WAIT_UNBLOCKED', 'SIGNAL', 'FENCE_WRITE', 'WORK', 'BUFFER_COMPLETED'];
const STEP_HAS_PREVIOUS = 1, STEP_HAS_INTERRUPT = 2, STEP_INTERRUPT = 4, STEP_HAS_OBSERVED = 8;
const UMD_OPS = { wait: 0, signal: 1, work: 2 } as const;

type Exports = Record<typeof C_REQUIRED_EXPORTS[number] | typeof C_OPTIONAL_EXPORTS[number], (...args: never[]) => unknown> & {
  DxgkDdiUpdateOneCurrentValueFromCpu?(h: number, value: bigint, va: bigint): number;
};
type Call = (...args: (number | bigint)[]) => number;

/** A DriverModule from a WebAssembly driver module's bytes (compileWasmDriver says what it refuses). */
export async function loadWasmDriverModule(bytes: Uint8Array, where: WasmDriverSource): Promise<DriverModule> {
  const loaded = await compileWasmDriver(bytes, where);
  return {
    name: where.baseName,
    memoryBytes: (sizing) => regionBytes(loaded.facts, sizing),
    createDriver: (context) => new WasmDriver(loaded, context),
  };
}

// ───────────────────────────── the driver ─────────────────────────────

/** A store outside the driver's memory, stopped before it happened (wasm-guard.ts calls the violation import). */
class GuardViolation extends Error {
  constructor(readonly address: number, readonly bytes: number) { super(`a store of ${bytes} byte(s) at ${hex(address)}`); this.name = 'GuardViolation'; }
}

/** The DdiInProgress of a C driver's stepped DxgkDdiUpdateMonitoredValues: its state is the driver's (in its memory). */
class WasmDdiInProgress implements DdiInProgress {
  constructor(private readonly driver: WasmDriver) {}
  step(): boolean { return this.driver.stepMonitoredValues(); }
}

/** The user-mode half: both forms of the submission reach the driver's UmdSubmitToHwQueue as columns. */
class WasmUserModeDriver implements UserModeDriverInterface, UserModeDriverColumns {
  constructor(private readonly driver: WasmDriver) {}
  submitToHwQueue(args: UMDARG_SUBMITTOHWQUEUE): void { this.driver.submitRecords(args); }
  submitColumnsToHwQueue(args: UMDARG_SUBMITCOLUMNSTOHWQUEUE): void { this.driver.submitColumns(args); }
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** A C driver on one adapter: the KernelModeDriver the OS calls through the driver port. */
export class WasmDriver implements PluggableDriver {
  readonly userMode: WasmUserModeDriver;
  /** Where its memory is. */
  readonly region: CDriverRegion;
  /** Its name (the module file's). */
  readonly name: string;
  private readonly e: Exports;
  private readonly stackPointer: WebAssembly.Global;
  private readonly u8: Uint8Array;
  private readonly u32: Uint32Array;
  private readonly u64: BigUint64Array;
  private readonly f64: Float64Array;
  private readonly hardware: GpuHardware;
  private readonly stage: { start: number; end: number };
  private os?: DxgkrnlCallbacks;
  /** The feature interfaces QueryFeatureInterface returned (DXGKCBINT_FEATURE_NATIVEFENCE_1.Context = index + 1). */
  private readonly interfaces: NativeFenceFeatureInterface[] = [];
  /** The argument area's top (a stack: nested calls allocate above their caller's arguments). */
  private argumentTop: number;
  /** How deep the calls into the driver are nested (a trap at depth 0 puts the stack pointer back to its top). */
  private depth = 0;
  /** What WddmReportError said about the call in progress. */
  private reported: Error | undefined;
  /** Why the driver stopped for good (a trap), if it did. */
  private dead: string | undefined;

  constructor(loaded: LoadedWasmDriver, context: DriverContext) {
    const memory = context.hardware.memory as unknown as WebAssembly.Memory;
    const sizing: DriverMemorySizing = { engines: context.hardware.engineCount, limits: context.limits };
    if (!context.memory) throw new Error(`${loaded.name}: the machine reserved no memory for this C driver (DriverContext.memory); build the machine with createMachine, which asks the module (memoryBytes)`);
    if (context.memory.bytes < regionBytes(loaded.facts, sizing)) throw new Error(`${loaded.name}: the machine reserved ${context.memory.bytes} bytes for this C driver; it needs ${regionBytes(loaded.facts, sizing)}`);
    this.name = loaded.name;
    this.hardware = context.hardware;
    this.region = layoutRegion(loaded.facts, context.memory.base, context.memory.bytes, sizing);
    this.argumentTop = this.region.argumentBase;
    const buffer = memory.buffer;
    this.u8 = new Uint8Array(buffer);
    this.u32 = new Uint32Array(buffer);
    this.u64 = new BigUint64Array(buffer);
    this.f64 = new Float64Array(buffer);
    const core = context.core;
    const adapterBase = core.adapterBaseAddress();
    const outBuffer = core.outBufferAddress();
    const L = context.hardware.layout;
    this.stage = { start: outBuffer, end: outBuffer + this.u32[(adapterBase + L.offsets.outCapacity) >>> 2] * 4 };
    this.stackPointer = new WebAssembly.Global({ value: 'i32', mutable: true }, this.region.stackTop);
    if (this.region.bytes < FAST_PATH_MAX_END || this.stage.end - this.stage.start < FAST_PATH_MAX_END) throw new Error(`${loaded.name}: its region or its out buffer is smaller than the store guard's fast path assumes`);
    const tableSize = loaded.facts.dylink?.tableSize ?? 0;
    let instance: WebAssembly.Instance;
    try {
      instance = new WebAssembly.Instance(loaded.module, this.imports(memory, core, tableSize) as WebAssembly.Imports);
    } catch (error) {
      throw new Error(`${loaded.name}: the C driver could not be instantiated: ${(error as Error).message}${error instanceof WebAssembly.LinkError ? ' (an import of another type than wddm_fence_driver.h declares?)' : ''}`);
    }
    this.e = instance.exports as unknown as Exports;
    this.userMode = new WasmUserModeDriver(this);
    this.addDevice(context);
    this.hookHardware();
    // The optional DDIs, as own members (so hasFormBeside sees the one-fence form beside the array form, and a module
    // without contexts has none).
    const self = this as unknown as Record<string, unknown>;
    if (typeof this.e.DxgkDdiUpdateOneCurrentValueFromCpu === 'function') {
      self.updateCurrentValuesFromCpu = WasmDriver.prototype.updateCurrentValuesFromCpu;
      self.updateOneCurrentValueFromCpu = WasmDriver.prototype.updateOneCurrentValue;
    }
    if (typeof this.e.DxgkDdiCreateContext === 'function') {
      self.createContext = WasmDriver.prototype.createContextDdi;
      self.destroyContext = WasmDriver.prototype.destroyContextDdi;
      self.submitCommand = WasmDriver.prototype.submitCommandDdi;
    }
  }

  // ── binding the imports ──

  private imports(memory: WasmMemory, core: GpuCore, tableSize: number): Record<string, Record<string, unknown>> {
    const hardware = this.hardware;
    const gpu: Record<string, unknown> = {};
    for (const name of GPU_CORE_EXPORTS) gpu[name] = core[name];
    Object.assign(gpu, {
      Kick: (engine: number) => hardware.kick(engine),
      RaiseInterrupt: (engine: number) => hardware.raise(engine),
      RescanRunList: () => hardware.rescanAll(),
      AddQueue: (id: number, engine: number, handle: number, label: number) => hardware.addQueue(Object.freeze({ id, engine, handle: handle >>> 0, label: this.string(label) as string })),
      RemoveQueue: (id: number) => hardware.removeQueue(id),
      Stop: () => hardware.stop(),
      Restart: () => hardware.restart(),
      DoorbellRegister: (currentValue: number, fence: number) => hardware.doorbell?.register(currentValue >>> 0, fence),
      DoorbellUnregister: (currentValue: number) => hardware.doorbell?.unregister(currentValue >>> 0),
      ProgramFirmware: (at: number) => this.programFirmware(at),
    });
    return {
      env: {
        memory, __stack_pointer: this.stackPointer, __memory_base: this.region.memoryBase, __table_base: 0,
        __indirect_function_table: new WebAssembly.Table({ initial: tableSize, element: 'anyfunc' }),
      },
      [GUARD_MODULE]: {
        [GUARD_IMPORTS.regionStart]: this.region.base, [GUARD_IMPORTS.regionSize]: this.region.bytes,
        [GUARD_IMPORTS.stageStart]: this.stage.start, [GUARD_IMPORTS.stageSize]: this.stage.end - this.stage.start,
        [GUARD_IMPORTS.currentValueFence]: core.fenceAtCurrentValue,
        [GUARD_IMPORTS.violation]: (address: number, offset: number, bytes: number) => { throw new GuardViolation((address >>> 0) + (offset >>> 0), bytes >>> 0); },
      },
      wddm_gpu: gpu,
      dxgkrnl: {
        DxgkCbIsFeatureEnabled: (at: number) => this.isFeatureEnabled(at),
        DxgkCbQueryFeatureInterface: (at: number) => this.queryFeatureInterface(at),
        DxgkCbNativeFenceGetOSCaps: (context: number, at: number) => this.getOsCaps(context, at),
        DxgkCbNotifyInterrupt: (at: number) => this.notifyInterrupt(at),
        DxgkCbNotifyGpuProgress: (at: number) => this.notifyGpuProgress(at),
        DxgkCbQueryGpuProgressStretch: (at: number) => this.queryGpuProgressStretch(at),
        DxgkCbNotifyGpuProgressStretch: (at: number) => this.notifyGpuProgressStretch(at),
        DxgkCbNotifyDoorbellFallback: (at: number) => this.notifyDoorbellFallback(at),
      },
      wddm: { ReportError: (at: number) => { this.reported = this.readError(at); } },
    };
  }

  /** The GPU's events, into the driver's exports (what the reference driver's constructor hooks). */
  private hookHardware(): void {
    const hardware = this.hardware;
    hardware.onInterrupt = (engine) => { this.invoke('DxgkDdiInterruptRoutine', this.e.DxgkDdiInterruptRoutine as Call, engine); };
    hardware.onDmaCompleted = (engine, queue, fenceId) => { this.invoke('WddmGpuDmaCompleted', this.e.WddmGpuDmaCompleted as Call, engine, queue, fenceId); };
    hardware.onFault = (message, queue) => this.gpuFaulted(message, queue);
    const stepListener = (step: StepRecord) => this.stepExecuted(step);
    hardware.stepListeners.push(stepListener);
    hardware.stretchReporter = {
      stepListener,
      accepts: (queue: HwQueueInfo) => this.invoke('WddmGpuStretchAccepted', this.e.WddmGpuStretchAccepted as Call, queue.id) !== 0,
      executed: (stretch: StretchReport) => {
        this.invoke('WddmGpuStretchExecuted', this.e.WddmGpuStretchExecuted as Call, stretch.queue.id, stretch.queue.engine, stretch.commands, stretch.fenceCommands, stretch.endNs);
      },
    };
    if (hardware.doorbell) {
      hardware.doorbell.onFallback = (engine, fence, posted, full) => { this.invoke('WddmGpuDoorbellFallback', this.e.WddmGpuDoorbellFallback as Call, engine, fence, posted, full); };
    }
  }

  // ── calling into the driver ──

  /**
   * Calls an export: the stack pointer put back and the driver stopped for good if it traps; what it reported
   * (WddmReportError) thrown. Returns its result.
   */
  private invoke(what: string, fn: Call, ...args: (number | bigint)[]): number {
    if (this.dead !== undefined) throw new Error(`driver "${this.name}" stopped earlier (${this.dead}); ${what} was not called`);
    const saved = this.reported;
    this.reported = undefined;
    const depth = this.depth++;
    const stackPointer = depth === 0 ? this.region.stackTop : this.stackPointer.value as number;
    let result: number;
    try {
      result = fn(...args);
    } catch (error) {
      this.depth = depth;
      this.stackPointer.value = stackPointer;
      this.reported = saved;
      throw this.trapped(error, what);
    }
    this.depth = depth;
    const reported = this.reported;
    this.reported = saved;
    if (reported !== undefined) throw reported;
    return result;
  }

  /** A DDI: invoke, then its NTSTATUS (STATUS_PENDING only where `pending` allows it). */
  private ddi(what: string, fn: Call, ...args: (number | bigint)[]): number {
    const status = this.invoke(what, fn, ...args) | 0;
    if (status !== STATUS_SUCCESS && status !== STATUS_PENDING) throw this.unexplained(what, status);
    if (status === STATUS_PENDING && what !== 'DxgkDdiUpdateMonitoredValues') throw this.unexplained(what, status);
    return status;
  }

  /** A failure the driver did not describe: a known NTSTATUS refuses the call, anything else is a fault. */
  private unexplained(what: string, status: number): Error {
    const name = (Object.keys(NTSTATUS) as StatusName[]).find((n) => (NTSTATUS[n] | 0) === status && n !== 'SUCCESS');
    const code = `0x${(status >>> 0).toString(16).padStart(8, '0')}`;
    if (name) return new WddmError(name, `${what}: the driver returned STATUS_${name} (${code})`);
    return new Error(`${what}: the driver returned NTSTATUS ${code}${status === STATUS_PENDING ? ' (STATUS_PENDING: only DxgkDdiUpdateMonitoredValues may return it)' : ', which the model does not know'}, without describing the failure (WddmReportError)`);
  }

  private trapped(error: unknown, what: string): unknown {
    const region = `${hex(this.region.base)}–${hex(this.region.base + this.region.bytes)}`;
    if (error instanceof GuardViolation) {
      this.dead = `it wrote outside its memory in ${what}`;
      return new Error(`driver "${this.name}" was stopped in ${what}: ${error.message}, outside its memory (its region ${region}: stack, globals, `
        + `arguments and pool; its adapter's out buffer ${hex(this.stage.start)}–${hex(this.stage.end)}; the CurrentValue word of a live fence). `
        + 'The store did not happen; the driver is not called again');
    }
    if (error instanceof WebAssembly.RuntimeError) {
      this.dead = `it trapped in ${what}: ${error.message}`;
      return new Error(`driver "${this.name}" trapped in ${what}: ${error.message} (its region ${region}); the driver is not called again`);
    }
    if (error instanceof RangeError && /call stack/i.test(error.message)) {
      this.dead = `its calls nested too deep in ${what}`;
      return new Error(`driver "${this.name}" nested its calls too deep in ${what}: ${error.message}; the driver is not called again`);
    }
    return error; // thrown by the OS or the GPU in a call the driver made: it reaches the caller as it would from a JavaScript driver
  }

  /** Bump-allocates `bytes` of the argument area (8-byte aligned); the caller resets argumentTop. */
  private allocate(bytes: number, what: string): number {
    const at = (this.argumentTop + 7) & ~7;
    if (at + bytes > this.region.argumentEnd) {
      throw new Error(`${what}: its arguments (${bytes} bytes) do not fit the C driver's argument area (${this.region.argumentEnd - this.region.argumentBase} bytes, sized from the adapter's limits)`);
    }
    this.argumentTop = at + bytes;
    return at;
  }

  private writeString(text: string | undefined, what: string): number {
    if (typeof text !== 'string') return 0;
    const bytes = encoder.encode(text);
    const at = this.allocate(bytes.length + 1, what);
    this.u8.set(bytes, at);
    this.u8[at + bytes.length] = 0;
    return at;
  }

  /** The NUL-terminated UTF-8 string at `at` (undefined for NULL), at most 64 KiB of it. */
  private string(at: number): string | undefined {
    if (!at) return undefined;
    const u8 = this.u8;
    let end = at >>> 0;
    const limit = Math.min(u8.length, end + 65536);
    let ascii = true;
    while (end < limit && u8[end] !== 0) { if (u8[end] > 0x7f) ascii = false; end++; }
    if (ascii) { let text = ''; for (let i = at >>> 0; i < end; i++) text += String.fromCharCode(u8[i]); return text; }
    return decoder.decode(u8.slice(at >>> 0, end));
  }

  /** A pointer the driver gave the model to write `bytes` through: inside its region, or a driver fault. */
  private writable(at: number, bytes: number, what: string): number {
    const address = at >>> 0;
    if (address < this.region.base || address + bytes > this.region.base + this.region.bytes) {
      throw new Error(`${what}: the driver asked the model to write ${bytes} bytes at ${hex(address)}, outside its region ${hex(this.region.base)}–${hex(this.region.base + this.region.bytes)}`);
    }
    return address;
  }

  private readError(at: number): Error {
    const A = C_ABI.WDDM_ERROR_INFO;
    const u32 = this.u32;
    const kind = u32[at >>> 2];
    const message = this.string(u32[(at + A.Message) >>> 2]) ?? '';
    if (kind === ERROR_FAULT) return new Error(message);
    if (kind === ERROR_GPU_STATUS) {
      const status = u32[(at + A.GpuStatus) >>> 2] | 0;
      try { check(status, message); } catch (error) { return error as Error; }
      return new Error(`${message}: the driver described a GPU failure with status ${status}, which is not one (a GPU status is negative)`);
    }
    const status = u32[(at + 4) >>> 2] | 0;
    const name = (Object.keys(NTSTATUS) as StatusName[]).find((n) => (NTSTATUS[n] | 0) === status && n !== 'SUCCESS');
    if (kind !== ERROR_REFUSAL || !name) return new Error(`${message} (the driver reported error kind ${kind} with NTSTATUS 0x${(status >>> 0).toString(16)}, which the model does not know)`);
    const parameter = this.string(u32[(at + A.Parameter) >>> 2]);
    const expected = this.string(u32[(at + A.Expected) >>> 2]);
    const detail: { parameter?: string; value?: unknown; expected?: string } = {};
    if (parameter !== undefined) detail.parameter = parameter;
    if (this.u8[at + A.HasValue]) detail.value = Number(this.u64[(at + A.Value) >>> 3]);
    if (expected !== undefined) detail.expected = expected;
    return new WddmError(name, message, detail);
  }

  // ── AddDevice ──

  private addDevice(context: DriverContext): void {
    const A = C_ABI.WDDM_ADAPTER_INFO, u8 = this.u8, u32 = this.u32, o = context.options, L = context.hardware.layout;
    const mark = this.argumentTop;
    try {
      const at = this.allocate(A.size, 'DxgkDdiAddDevice');
      u32[at >>> 2] = context.adapterIndex;
      u32[(at + 4) >>> 2] = context.hardware.engineCount;
      u32[(at + A.AdapterName) >>> 2] = this.writeString(context.adapterName, 'DxgkDdiAddDevice');
      u32[(at + A.HardwareCaps) >>> 2] = o.hardwareCaps;
      this.writeCaps(at + A.NativeFenceCaps, o.nativeFenceCaps);
      u32[(at + A.InterruptPayload) >>> 2] = o.interruptPayload === 'list' ? 0 : 1;
      u8[at + A.EvaluateLegacyMonitoredFences] = o.evaluateLegacyMonitoredFences ? 1 : 0;
      u8[at + A.QueryFeatureBeforeAdvertising] = o.queryFeatureBeforeAdvertising ? 1 : 0;
      u8[at + A.MonitoredValueBarrier] = o.monitoredValueBarrier ? 1 : 0;
      u8[at + A.EnginesWriteMonitoredFences] = (o.enginesWriteMonitoredFences ?? true) ? 1 : 0;
      u32[(at + A.RingEntries) >>> 2] = o.ringEntries;
      u32[(at + A.MaxFences) >>> 2] = context.limits.fences;
      u32[(at + A.MaxQueues) >>> 2] = context.limits.queues;
      u32[(at + A.Granularity) >>> 2] = context.hardware.granularity === 'step' ? 1 : 0;
      u8[at + A.DoorbellPresent] = context.hardware.doorbell ? 1 : 0;
      u32[(at + A.PoolBase) >>> 2] = this.region.poolBase;
      u32[(at + A.PoolBytes) >>> 2] = this.region.poolBytes;
      const adapterBase = context.core.adapterBaseAddress();
      const layout = [
        this.stage.start, this.stage.end - this.stage.start, L.opNop, L.opWait, L.opSignal, L.opWork, L.opFenceWrite,
        L.out.command.bytes, L.out.command.op, L.out.command.value, L.out.command.gpuVa, L.out.command.handle,
        adapterBase + L.offsets.fenceTable, adapterBase + L.offsets.fenceCapacity, L.fenceRecordBytes, L.offsets.fenceState, L.fenceStateLive,
        L.offsets.fenceCurrentValue, L.offsets.fenceDriverHandle, L.out.interruptHandleBytes, L.log.typeOffset, L.log.entries,
      ];
      if (layout.length * 4 !== C_ABI.WDDM_GPU_LAYOUT.size) throw new Error('WDDM_GPU_LAYOUT: the adapter writes another number of fields than the header has');
      for (let i = 0; i < layout.length; i++) u32[(at + A.Layout + i * 4) >>> 2] = layout[i];
      this.ddi('DxgkDdiAddDevice', this.e.DxgkDdiAddDevice as Call, at);
    } finally {
      this.argumentTop = mark;
    }
  }

  private writeCaps(at: number, caps: NativeFenceCaps): void {
    const C = C_ABI.DXGK_NATIVE_FENCE_CAPS;
    this.u32[(at + C.MonitoredValuePadding) >>> 2] = caps.MonitoredValuePadding;
    this.u8[at + C.MapToGpuSystemProcess] = caps.MapToGpuSystemProcess ? 1 : 0;
    this.u64[(at + C.MinimumAddress) >>> 3] = caps.MinimumAddress;
    this.u64[(at + C.MaximumAddress) >>> 3] = caps.MaximumAddress;
  }

  private readCaps(at: number): NativeFenceCaps {
    const C = C_ABI.DXGK_NATIVE_FENCE_CAPS;
    return {
      MonitoredValuePadding: this.u32[(at + C.MonitoredValuePadding) >>> 2], MapToGpuSystemProcess: this.u8[at + C.MapToGpuSystemProcess] !== 0,
      MinimumAddress: this.u64[(at + C.MinimumAddress) >>> 3], MaximumAddress: this.u64[(at + C.MaximumAddress) >>> 3],
    };
  }

  // ── the DDIs (KernelModeDriver) ──

  startDevice(os: DxgkrnlCallbacks): DriverStartResult {
    this.os = os;
    const R = C_ABI.WDDM_START_DEVICE_RESULT;
    const mark = this.argumentTop;
    try {
      const at = this.allocate(R.size, 'DxgkDdiStartDevice');
      this.u8.fill(0, at, at + R.size);
      this.ddi('DxgkDdiStartDevice', this.e.DxgkDdiStartDevice as Call, at);
      return { VidSchCaps: this.u32[at >>> 2], NativeFenceCaps: this.readCaps(at + R.NativeFenceCaps), EnginesWriteMonitoredFences: this.u8[at + R.EnginesWriteMonitoredFences] !== 0 };
    } finally {
      this.argumentTop = mark;
    }
  }

  /** DxgkDdiStopDevice: a bug check. A driver that trapped is not entered again: its GPU is stopped for it. */
  stopDevice(): void {
    if (this.dead !== undefined) { this.hardware.stop(); return; }
    this.ddi('DxgkDdiStopDevice', this.e.DxgkDdiStopDevice as Call);
  }

  resetFromTimeout(): void { this.ddi('DxgkDdiResetFromTimeout', this.e.DxgkDdiResetFromTimeout as Call); }
  restartFromTimeout(): void { this.ddi('DxgkDdiRestartFromTimeout', this.e.DxgkDdiRestartFromTimeout as Call); }

  queryNativeFenceCaps(): NativeFenceCaps {
    const Q = C_ABI.DXGKARG_QUERYADAPTERINFO, C = C_ABI.DXGK_NATIVE_FENCE_CAPS;
    const mark = this.argumentTop;
    try {
      const at = this.allocate(16 + C.size, 'DxgkDdiQueryAdapterInfo');
      const caps = at + 16;
      this.u8.fill(0, caps, caps + C.size);
      this.u32[at >>> 2] = DXGKQAITYPE_NATIVE_FENCE_CAPS;
      this.u32[(at + Q.pOutputData) >>> 2] = caps;
      this.u32[(at + Q.OutputDataSize) >>> 2] = C.size;
      this.ddi('DxgkDdiQueryAdapterInfo', this.e.DxgkDdiQueryAdapterInfo as Call, at);
      return this.readCaps(caps);
    } finally {
      this.argumentTop = mark;
    }
  }

  createNativeFence(args: DXGKARG_CREATENATIVEFENCE): { hGlobalNativeFence: number } {
    const A = C_ABI.DXGKARG_CREATENATIVEFENCE;
    const mark = this.argumentTop;
    try {
      const at = this.allocate(A.size, 'DxgkDdiCreateNativeFence');
      this.u8.fill(0, at, at + A.size);
      this.u32[(at + A.Type) >>> 2] = args.Type;
      this.u64[(at + A.InitialFenceValue) >>> 3] = args.InitialFenceValue;
      this.u64[(at + A.CurrentValueKernelCpuVa) >>> 3] = args.CurrentValueKernelCpuVa;
      this.u64[(at + A.MonitoredValueKernelCpuVa) >>> 3] = args.MonitoredValueKernelCpuVa;
      this.u64[(at + A.CurrentValueSystemProcessGpuVa) >>> 3] = args.CurrentValueSystemProcessGpuVa;
      this.u64[(at + A.MonitoredValueSystemProcessGpuVa) >>> 3] = args.MonitoredValueSystemProcessGpuVa;
      const data = args.PrivateDriverData instanceof Uint8Array ? args.PrivateDriverData : undefined;
      if (data) this.u8.set(data.subarray(0, 64), at + A.PrivateDriverData);
      this.ddi('DxgkDdiCreateNativeFence', this.e.DxgkDdiCreateNativeFence as Call, at);
      if (data) data.set(this.u8.subarray(at + A.PrivateDriverData, at + A.PrivateDriverData + Math.min(64, data.length)));
      return { hGlobalNativeFence: this.u32[at >>> 2] };
    } finally {
      this.argumentTop = mark;
    }
  }

  openNativeFence(args: DXGKARG_OPENNATIVEFENCE): { hLocalNativeFence: number } {
    const A = C_ABI.DXGKARG_OPENNATIVEFENCE;
    const mark = this.argumentTop;
    try {
      const at = this.allocate(A.size, 'DxgkDdiOpenNativeFence');
      this.u32[at >>> 2] = args.hGlobalNativeFence;
      this.u32[(at + A.hLocalNativeFence) >>> 2] = 0;
      this.u32[(at + A.hDevice) >>> 2] = args.hDevice;
      this.u64[(at + A.CurrentValueGpuVa) >>> 3] = args.CurrentValueGpuVa;
      this.u64[(at + A.MonitoredValueGpuVa) >>> 3] = args.MonitoredValueGpuVa;
      this.ddi('DxgkDdiOpenNativeFence', this.e.DxgkDdiOpenNativeFence as Call, at);
      return { hLocalNativeFence: this.u32[(at + A.hLocalNativeFence) >>> 2] };
    } finally {
      this.argumentTop = mark;
    }
  }

  closeNativeFence(args: DXGKARG_CLOSENATIVEFENCE): void { this.oneHandle('DxgkDdiCloseNativeFence', this.e.DxgkDdiCloseNativeFence as Call, args.hLocalNativeFence); }
  destroyNativeFence(args: DXGKARG_DESTROYNATIVEFENCE): void { this.oneHandle('DxgkDdiDestroyNativeFence', this.e.DxgkDdiDestroyNativeFence as Call, args.hGlobalNativeFence); }
  destroyHwQueue(args: DXGKARG_DESTROYHWQUEUE): void { this.oneHandle('DxgkDdiDestroyHwQueue', this.e.DxgkDdiDestroyHwQueue as Call, args.hHwQueue); }

  /** A DDI whose argument is one handle. */
  private oneHandle(what: string, fn: Call, handle: number): void {
    const mark = this.argumentTop;
    try {
      const at = this.allocate(4, what);
      this.u32[at >>> 2] = handle;
      this.ddi(what, fn, at);
    } finally {
      this.argumentTop = mark;
    }
  }

  /** Writes NumFences handles and two u64 arrays after a structure; returns their addresses. */
  private fenceArrays(what: string, count: number, handles: readonly number[], first: readonly bigint[], second: readonly bigint[]): [number, number, number] {
    const handlesAt = this.allocate(count * 4, what), firstAt = this.allocate(count * 8, what), secondAt = this.allocate(count * 8, what);
    const u32 = this.u32, u64 = this.u64;
    for (let i = 0, h = handlesAt >>> 2, f = firstAt >>> 3, s = secondAt >>> 3; i < count; i++) {
      u32[h + i] = handles[i];
      u64[f + i] = first[i];
      u64[s + i] = second[i];
    }
    return [handlesAt, firstAt, secondAt];
  }

  updateCurrentValuesFromCpu(args: DXGKARG_UPDATECURRENTVALUESFROMCPU): void {
    const A = C_ABI.DXGKARG_UPDATECURRENTVALUESFROMCPU, what = 'DxgkDdiUpdateCurrentValuesFromCpu';
    const mark = this.argumentTop;
    try {
      const at = this.allocate(A.size, what);
      const count = args.NumFences >>> 0;
      const [handles, values, addresses] = this.fenceArrays(what, count, args.NativeFenceArray, args.UpdatedValueArray, args.CurrentValueKernelCpuVa);
      this.u32[at >>> 2] = count;
      this.u32[(at + A.Flags) >>> 2] = (args.Flags.AlwaysSignaled ? 1 : 0) | (args.Flags.NotificationOnly ? 2 : 0);
      this.u32[(at + A.NativeFenceArray) >>> 2] = handles;
      this.u32[(at + A.UpdatedValueArray) >>> 2] = values;
      this.u32[(at + A.CurrentValueKernelCpuVa) >>> 2] = addresses;
      this.ddi(what, this.e.DxgkDdiUpdateCurrentValuesFromCpu as Call, at);
    } finally {
      this.argumentTop = mark;
    }
  }

  /** The one-fence form (installed as updateOneCurrentValueFromCpu when the driver exports it): no argument structure. */
  private updateOneCurrentValue(hGlobalNativeFence: number, updatedValue: bigint, currentValueKernelCpuVa: bigint): void {
    if (this.depth !== 0 || this.dead !== undefined) {
      this.ddi('DxgkDdiUpdateCurrentValuesFromCpu', this.e.DxgkDdiUpdateOneCurrentValueFromCpu as Call, hGlobalNativeFence, updatedValue, currentValueKernelCpuVa);
      return;
    }
    // Written out (no rest arguments, no argument area): every CPU signal of one fence comes here.
    this.depth = 1;
    let status: number;
    try {
      status = this.e.DxgkDdiUpdateOneCurrentValueFromCpu!(hGlobalNativeFence, updatedValue, currentValueKernelCpuVa);
    } catch (error) {
      this.depth = 0;
      this.stackPointer.value = this.region.stackTop;
      this.reported = undefined;
      throw this.trapped(error, 'DxgkDdiUpdateCurrentValuesFromCpu');
    }
    this.depth = 0;
    if (status !== 0 || this.reported !== undefined) {
      const reported = this.reported;
      this.reported = undefined;
      throw reported ?? this.unexplained('DxgkDdiUpdateCurrentValuesFromCpu', status | 0);
    }
  }

  updateMonitoredValues(args: DXGKARG_UPDATEMONITOREDVALUES): void | DdiInProgress {
    const A = C_ABI.DXGKARG_UPDATEMONITOREDVALUES, what = 'DxgkDdiUpdateMonitoredValues';
    const mark = this.argumentTop;
    try {
      const at = this.allocate(A.size, what);
      const count = args.NumFences >>> 0;
      const [handles, values, addresses] = this.fenceArrays(what, count, args.NativeFenceArray, args.UpdatedValueArray, args.MonitoredValueKernelCpuVa);
      this.u32[at >>> 2] = count;
      this.u32[(at + A.NativeFenceArray) >>> 2] = handles;
      this.u32[(at + A.UpdatedValueArray) >>> 2] = values;
      this.u32[(at + A.MonitoredValueKernelCpuVa) >>> 2] = addresses;
      const status = this.ddi(what, this.e.DxgkDdiUpdateMonitoredValues as Call, at);
      return status === STATUS_PENDING ? new WasmDdiInProgress(this) : undefined;
    } finally {
      this.argumentTop = mark;
    }
  }

  /** The stepped DxgkDdiUpdateMonitoredValues' next step (WasmDdiInProgress.step). */
  stepMonitoredValues(): boolean {
    const result = this.invoke('DxgkDdiUpdateMonitoredValues', this.e.WddmDdiUpdateMonitoredValuesStep as Call) | 0;
    if (result < 0) throw new Error('DxgkDdiUpdateMonitoredValues: the driver\'s step failed without describing the failure (WddmReportError)');
    return result === 1;
  }

  createHwQueue(args: DXGKARG_CREATEHWQUEUE): { hHwQueue: number } {
    const A = C_ABI.DXGKARG_CREATEHWQUEUE, what = 'DxgkDdiCreateHwQueue';
    const mark = this.argumentTop;
    try {
      const at = this.allocate(A.size, what);
      const data = args.PrivateDriverData instanceof Uint8Array ? args.PrivateDriverData : undefined;
      const dataAt = data ? this.allocate(data.length, what) : 0;
      if (data) this.u8.set(data, dataAt);
      const u32 = this.u32;
      u32[at >>> 2] = args.hDevice;
      u32[(at + A.EngineOrdinal) >>> 2] = args.EngineOrdinal;
      u32[(at + A.Flags) >>> 2] = args.Flags.NativeProgressFence ? 1 : 0;
      u32[(at + A.hHwQueueProgressFence) >>> 2] = args.hHwQueueProgressFence;
      u32[(at + A.ProcessSlot) >>> 2] = args.ProcessSlot;
      u32[(at + A.DebugName) >>> 2] = this.writeString(args.DebugName, what);
      u32[(at + A.hHwQueue) >>> 2] = 0;
      u32[(at + A.PrivateDriverDataSize) >>> 2] = data ? data.length : 0;
      u32[(at + A.pPrivateDriverData) >>> 2] = dataAt;
      this.ddi(what, this.e.DxgkDdiCreateHwQueue as Call, at);
      if (data) data.set(this.u8.subarray(dataAt, dataAt + data.length));
      return { hHwQueue: u32[(at + A.hHwQueue) >>> 2] };
    } finally {
      this.argumentTop = mark;
    }
  }

  setNativeFenceLogBuffer(args: DXGKARG_SETNATIVEFENCELOGBUFFER): void {
    const A = C_ABI.DXGKARG_SETNATIVEFENCELOGBUFFER, what = 'DxgkDdiSetNativeFenceLogBuffer';
    const mark = this.argumentTop;
    try {
      const at = this.allocate(A.size, what);
      this.u32[at >>> 2] = args.hHwQueue;
      this.u32[(at + A.NumberOfEntries) >>> 2] = args.NumberOfEntries;
      this.u64[(at + A.LogBufferCpuVa) >>> 3] = args.LogBufferCpuVa;
      this.u64[(at + A.LogBufferGpuVa) >>> 3] = args.LogBufferGpuVa;
      this.u64[(at + A.LogBufferSystemProcessGpuVa) >>> 3] = args.LogBufferSystemProcessGpuVa;
      this.u32[(at + A.Flags) >>> 2] = args.Flags.Value;
      this.ddi(what, this.e.DxgkDdiSetNativeFenceLogBuffer as Call, at);
    } finally {
      this.argumentTop = mark;
    }
  }

  updateNativeFenceLogs(args: DXGKARG_UPDATENATIVEFENCELOGS): void {
    const A = C_ABI.DXGKARG_UPDATENATIVEFENCELOGS, what = 'DxgkDdiUpdateNativeFenceLogs';
    const mark = this.argumentTop;
    try {
      const at = this.allocate(12, what);
      const count = args.NumberOfQueues >>> 0;
      const queues = this.allocate(count * 4, what);
      for (let i = 0; i < count; i++) this.u32[(queues >>> 2) + i] = args.hHWQueueArray[i];
      this.u32[at >>> 2] = count;
      this.u32[(at + A.hHWQueueArray) >>> 2] = queues;
      this.u32[(at + A.Flags) >>> 2] = args.Flags.Value;
      this.ddi(what, this.e.DxgkDdiUpdateNativeFenceLogs as Call, at);
    } finally {
      this.argumentTop = mark;
    }
  }

  // Kernel-mode contexts: installed as createContext / destroyContext / submitCommand when the driver exports them.

  private createContextDdi(args: DXGKARG_CREATECONTEXT): { hContext: number } {
    const A = C_ABI.DXGKARG_CREATECONTEXT, what = 'DxgkDdiCreateContext';
    const mark = this.argumentTop;
    try {
      const at = this.allocate(16, what);
      this.u32[at >>> 2] = args.hDevice;
      this.u32[(at + A.NodeOrdinal) >>> 2] = args.NodeOrdinal;
      this.u32[(at + A.ProcessSlot) >>> 2] = args.ProcessSlot;
      this.u32[(at + A.hContext) >>> 2] = 0;
      this.ddi(what, this.e.DxgkDdiCreateContext as Call, at);
      return { hContext: this.u32[(at + A.hContext) >>> 2] };
    } finally {
      this.argumentTop = mark;
    }
  }

  private destroyContextDdi(args: DXGKARG_DESTROYCONTEXT): void { this.oneHandle('DxgkDdiDestroyContext', this.e.DxgkDdiDestroyContext as Call, args.hContext); }

  private submitCommandDdi(args: DXGKARG_SUBMITCOMMAND): boolean {
    const A = C_ABI.DXGKARG_SUBMITCOMMAND, C = C_ABI.WDDM_CONTEXT_COMMAND, what = 'DxgkDdiSubmitCommand';
    const mark = this.argumentTop;
    try {
      const at = this.allocate(20, what);
      const count = args.Commands.length;
      // More commands than a ring holds: the driver refuses them before it reads any (no room), so none is written.
      const commands = count * C.size + 64 <= this.region.argumentEnd - this.argumentTop ? this.allocate(count * C.size, what) : 0;
      for (let i = 0; commands && i < count; i++) {
        const c = args.Commands[i], p = commands + i * C.size;
        this.u32[p >>> 2] = c.op === 'work' ? 0 : 1;
        this.u32[(p + 4) >>> 2] = c.handle;
        this.u64[(p + C.GpuVa) >>> 3] = c.gpuVa;
        this.u64[(p + C.Value) >>> 3] = c.value;
      }
      this.u32[at >>> 2] = args.hContext;
      this.u32[(at + A.SubmissionFenceId) >>> 2] = args.SubmissionFenceId;
      this.u32[(at + A.NumCommands) >>> 2] = count;
      this.u32[(at + A.pCommands) >>> 2] = commands;
      this.u8[at + A.Submitted] = 0;
      this.ddi(what, this.e.DxgkDdiSubmitCommand as Call, at);
      return this.u8[at + A.Submitted] !== 0;
    } finally {
      this.argumentTop = mark;
    }
  }

  coreQueueOf(handle: number): number | undefined {
    const id = this.invoke('WddmDriverQueueOf', this.e.WddmDriverQueueOf as Call, handle) | 0;
    return id > 0 ? id : undefined;
  }

  /** Memory the driver keeps nothing in between calls: its stack and its argument area (a state's key leaves them out). */
  scratchMemory(): readonly (readonly [number, number])[] {
    return [[this.region.base, this.region.stackTop], [this.region.argumentBase, this.region.argumentEnd]];
  }

  // ── the user-mode half ──

  /** UMDARG_SUBMITTOHWQUEUE from records: the same columns the typed form carries. */
  submitRecords(args: UMDARG_SUBMITTOHWQUEUE): void {
    const commands = args.Commands;
    const count = commands.length;
    const mark = this.argumentTop;
    try {
      const columns = this.umdColumns(args.HwQueuePrivateDriverData, count);
      if (columns.ops) {
        for (let i = 0; i < count; i++) {
          const c = commands[i];
          this.u8[columns.ops + i] = UMD_OPS[c.op] ?? UMD_OPS.work;
          this.u64[(columns.gpuVas >>> 3) + i] = c.gpuVa;
          this.u64[(columns.values >>> 3) + i] = c.value;
          this.u32[(columns.handles >>> 2) + i] = c.handle;
        }
      }
      this.ddi('submitToHwQueue', this.e.UmdSubmitToHwQueue as Call, columns.at);
    } finally {
      this.argumentTop = mark;
    }
  }

  /** UMDARG_SUBMITCOLUMNSTOHWQUEUE: the columns copied as they are. */
  submitColumns(args: UMDARG_SUBMITCOLUMNSTOHWQUEUE): void {
    const total = columnsCommandCount(args);
    const { Ops: ops, GpuVas: gpuVas, Values: values, Handles: handles } = args;
    const mark = this.argumentTop;
    try {
      const columns = this.umdColumns(args.HwQueuePrivateDriverData, total);
      if (columns.ops) {
        this.u8.set(ops.subarray(0, total), columns.ops);
        this.u64.set(gpuVas.subarray(0, total), columns.gpuVas >>> 3);
        this.u64.set(values.subarray(0, total), columns.values >>> 3);
        this.u32.set(handles.subarray(0, total), columns.handles >>> 2);
      }
      this.ddi('submitToHwQueue', this.e.UmdSubmitToHwQueue as Call, columns.at);
    } finally {
      this.argumentTop = mark;
    }
  }

  /**
   * The UMDARG structure and room for `count` commands' columns. A submission larger than any ring reaches the
   * driver with its columns NULL: it refuses it (no room) before it reads a command.
   */
  private umdColumns(privateData: Uint8Array, count: number): { at: number; ops: number; gpuVas: number; values: number; handles: number } {
    const A = C_ABI.UMDARG_SUBMITTOHWQUEUE, what = 'submitToHwQueue';
    const at = this.allocate(A.size, what);
    const data = privateData instanceof Uint8Array ? privateData : undefined;
    const dataAt = data ? this.allocate(data.length, what) : 0;
    if (data) this.u8.set(data, dataAt);
    const fits = count * 21 + 32 <= this.region.argumentEnd - this.argumentTop;
    const gpuVas = fits ? this.allocate(count * 8, what) : 0;
    const values = fits ? this.allocate(count * 8, what) : 0;
    const handles = fits ? this.allocate(count * 4, what) : 0;
    const ops = fits ? this.allocate(count, what) : 0;
    const u32 = this.u32;
    u32[at >>> 2] = dataAt;
    u32[(at + A.HwQueuePrivateDriverDataSize) >>> 2] = data ? data.length : 0;
    u32[(at + A.CommandCount) >>> 2] = count;
    u32[(at + A.Ops) >>> 2] = ops;
    u32[(at + A.GpuVas) >>> 2] = gpuVas;
    u32[(at + A.Values) >>> 2] = values;
    u32[(at + A.Handles) >>> 2] = handles;
    return { at, ops, gpuVas, values, handles };
  }

  // ── the GPU's events ──

  private stepExecuted(step: StepRecord): void {
    const S = C_ABI.WDDM_GPU_STEP;
    const mark = this.argumentTop;
    try {
      const at = this.allocate(S.size, 'WddmGpuStepExecuted');
      const u32 = this.u32, w = at >>> 2;
      u32[w] = step.queue.id;
      u32[w + 1] = step.queue.engine;
      u32[w + 2] = STEP_KIND[step.kind];
      u32[w + 3] = step.fence;
      u32[w + 4] = step.handle;
      u32[w + 5] = (step.previousValue !== undefined ? STEP_HAS_PREVIOUS : 0) | (step.interrupt !== undefined ? STEP_HAS_INTERRUPT | (step.interrupt ? STEP_INTERRUPT : 0) : 0)
        | (step.observedNs !== undefined ? STEP_HAS_OBSERVED : 0);
      this.u64[(at + S.Value) >>> 3] = step.value;
      this.u64[(at + S.PreviousValue) >>> 3] = step.previousValue ?? 0n;
      this.f64[(at + S.TimeNs) >>> 3] = step.timeNs;
      this.f64[(at + S.ObservedNs) >>> 3] = step.observedNs ?? 0;
      this.invoke('WddmGpuStepExecuted', this.e.WddmGpuStepExecuted as Call, at);
    } finally {
      this.argumentTop = mark;
    }
  }

  private gpuFaulted(message: string, queue: HwQueueInfo | undefined): void {
    const mark = this.argumentTop;
    try {
      const text = this.writeString(message, 'WddmGpuFaulted');
      this.invoke('WddmGpuFaulted', this.e.WddmGpuFaulted as Call, queue?.id ?? 0, queue?.engine ?? 0, text);
    } finally {
      this.argumentTop = mark;
    }
  }

  private programFirmware(at: number): void {
    const order = this.u32[at >>> 2], source = this.u32[(at + 4) >>> 2];
    if (order > 1 || source > 1) throw new Error(`GpuProgramFirmware: SignalLogOrder ${order} / TimestampSource ${source}; expected WDDM_SIGNAL_LOG_* and WDDM_TIMESTAMP_* values`);
    const timestamp = this.e.WddmGpuTimestamp as ((nowNs: number) => bigint) | undefined;
    if (source === 1 && typeof timestamp !== 'function') throw new Error('GpuProgramFirmware: TimestampSource WDDM_TIMESTAMP_DRIVER, but the driver exports no WddmGpuTimestamp');
    this.hardware.configureFirmware({
      signalLogOrder: order === 1 ? 'index-first' : 'entry-first',
      timestamp: source === 1 ? (nowNs: number) => BigInt.asUintN(64, BigInt(this.invoke('WddmGpuTimestamp', timestamp as unknown as Call, nowNs))) : DEFAULT_FIRMWARE.timestamp,
    });
  }

  // ── Dxgkrnl's callbacks, from the driver's structures ──

  private callbacks(what: string): DxgkrnlCallbacks {
    if (!this.os) throw new Error(`${what}: called before DxgkDdiStartDevice gave the driver Dxgkrnl's callbacks`);
    return this.os;
  }

  private isFeatureEnabled(at: number): number {
    const A = C_ABI.DXGKARGCB_ISFEATUREENABLED2;
    const p = this.writable(at, 12, 'DxgkCbIsFeatureEnabled');
    const result = this.callbacks('DxgkCbIsFeatureEnabled').IsFeatureEnabled(this.u32[p >>> 2]);
    this.u8[p + A.Enabled] = result.Enabled ? 1 : 0;
    this.u32[(p + A.Version) >>> 2] = result.Version;
    return STATUS_SUCCESS;
  }

  private queryFeatureInterface(at: number): number {
    const A = C_ABI.DXGKARGCB_QUERYFEATUREINTERFACE;
    const p = at >>> 2;
    const table = this.callbacks('DxgkCbQueryFeatureInterface').QueryFeatureInterface(this.u32[p], this.u32[(at + A.Version) >>> 2]);
    if (!table) return STATUS_NOT_SUPPORTED;
    this.interfaces.push(table);
    const pointer = this.u32[(at + A.pInterface) >>> 2];
    if (pointer) this.u32[this.writable(pointer, 4, 'DxgkCbQueryFeatureInterface') >>> 2] = this.interfaces.length;
    return STATUS_SUCCESS;
  }

  private getOsCaps(context: number, at: number): number {
    const table = this.interfaces[context - 1];
    if (!table) throw new Error(`DxgkCbNativeFenceGetOSCaps: Context ${context} is no interface DxgkCbQueryFeatureInterface returned`);
    const caps = table.GetOSCaps();
    this.u32[this.writable(at, 4, 'DxgkCbNativeFenceGetOSCaps') >>> 2] = (caps.SupportOptimizedDefaultFenceType ? 1 : 0) | (caps.SupportIntraGpuFenceType ? 2 : 0);
    return STATUS_SUCCESS;
  }

  private notifyInterrupt(at: number): void {
    const os = this.callbacks('DxgkCbNotifyInterrupt');
    const u32 = this.u32, w = at >>> 2;
    const type = u32[w];
    switch (type) {
      case INTERRUPT.nativeFenceSignaled: {
        const count = u32[w + 3], array = u32[w + 4];
        os.NotifyInterrupt({
          InterruptType: DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED, NodeOrdinal: u32[w + 1], EngineOrdinal: u32[w + 2],
          SignaledNativeFenceCount: count, pSignaledNativeFenceArray: array ? Array.from(u32.subarray(array >>> 2, (array >>> 2) + count)) : null,
          hHWQueue: u32[w + 5], Flags: { EvaluateLegacyMonitoredFences: (u32[w + 6] & EVALUATE_LEGACY_MONITORED_FENCES) !== 0 },
        });
        return;
      }
      case INTERRUPT.dmaCompleted:
        os.NotifyDmaCompleted({ InterruptType: 'DXGK_INTERRUPT_DMA_COMPLETED', NodeOrdinal: u32[w + 2], EngineOrdinal: u32[w + 3], SubmissionFenceId: u32[w + 1] });
        return;
      case INTERRUPT.monitoredFenceSignaled:
        os.NotifyMonitoredFenceSignaled({ InterruptType: 'DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED', NodeOrdinal: u32[w + 1], EngineOrdinal: u32[w + 2] });
        return;
      case INTERRUPT.dmaPageFaulted:
        os.NotifyDmaPageFaulted({ InterruptType: 'DXGK_INTERRUPT_DMA_PAGE_FAULTED', NodeOrdinal: u32[w + 1], EngineOrdinal: u32[w + 2], hQueue: u32[w + 3], Message: this.string(u32[w + 4]) ?? '' });
        return;
      default:
        throw new Error(`DxgkCbNotifyInterrupt: InterruptType ${type} is not one the model carries (DXGK_INTERRUPT_DMA_COMPLETED 1, DMA_PAGE_FAULTED 9, MONITORED_FENCE_SIGNALED 11, NATIVE_FENCE_SIGNALED 19)`);
    }
  }

  private notifyGpuProgress(at: number): void {
    const R = C_ABI.WDDM_GPU_PROGRESS_REPORT;
    const u32 = this.u32, w = at >>> 2;
    const flags = u32[(at + R.Flags) >>> 2];
    const operation = PROGRESS_OPERATION[u32[(at + R.Operation) >>> 2]];
    if (operation === undefined) throw new Error(`DxgkCbNotifyGpuProgress: Operation ${u32[(at + R.Operation) >>> 2]} is no WDDM_GPU_PROGRESS_* value`);
    this.callbacks('DxgkCbNotifyGpuProgress').NotifyGpuProgress({
      hQueue: u32[w], QueueKind: u32[w + 1] === 1 ? 'CONTEXT' : 'HW_QUEUE', EngineOrdinal: u32[w + 2], Operation: operation, hSyncObject: u32[w + 4],
      Value: this.u64[(at + R.Value) >>> 3],
      PreviousValue: flags & STEP_HAS_PREVIOUS ? this.u64[(at + R.PreviousValue) >>> 3] : undefined,
      Interrupt: flags & STEP_HAS_INTERRUPT ? (flags & STEP_INTERRUPT) !== 0 : undefined,
      GpuTimeNs: this.f64[(at + R.GpuTimeNs) >>> 3],
      ObservedGpuTimeNs: flags & STEP_HAS_OBSERVED ? this.f64[(at + R.ObservedGpuTimeNs) >>> 3] : undefined,
    });
  }

  private queryGpuProgressStretch(at: number): number {
    const u32 = this.u32, w = at >>> 2;
    return this.callbacks('DxgkCbQueryGpuProgressStretch').QueryGpuProgressStretch({ hQueue: u32[w], QueueKind: u32[w + 1] === 1 ? 'CONTEXT' : 'HW_QUEUE', CommandsInRing: u32[w + 2] }) ? 1 : 0;
  }

  private notifyGpuProgressStretch(at: number): void {
    const u32 = this.u32, w = at >>> 2;
    this.callbacks('DxgkCbNotifyGpuProgressStretch').NotifyGpuProgressStretch({
      hQueue: u32[w], QueueKind: u32[w + 1] === 1 ? 'CONTEXT' : 'HW_QUEUE', EngineOrdinal: u32[w + 2], Commands: u32[w + 3], FenceCommands: u32[w + 4],
      GpuTimeNs: this.f64[(at + C_ABI.WDDM_GPU_PROGRESS_STRETCH.GpuTimeNs) >>> 3],
    });
  }

  private notifyDoorbellFallback(at: number): void {
    const u32 = this.u32, w = at >>> 2;
    this.callbacks('DxgkCbNotifyDoorbellFallback').NotifyDoorbellFallback({ NodeOrdinal: u32[w], hGlobalNativeFence: u32[w + 1], RecordsPosted: u32[w + 2], RingsFull: u32[w + 3] });
  }
}
