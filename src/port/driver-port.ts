// The driver port: the only holder of each adapter's KernelModeDriver.
//
// Every DDI the OS makes goes through one method here, and every callback a
// driver makes reaches the OS through here:
//
//   OS module ──port.createNativeFence(adapter, args)──▶ observers.beforeDdi ──▶ trace "ddi" line
//        ◀── result (or undefined: the driver threw)       ──▶ driver.createNativeFence(args)
//                                                           ──▶ observers.afterDdi (result or error)
//   driver ──callbacks.NotifyInterrupt(data)──▶ observers.beforeCallback ──▶ the OS's handler ──▶ observers.afterCallback
//
// What the port does for every call:
//   - traces it with its arguments (kind "ddi", actor the adapter), in the
//     shape the OS recorded before the port existed, so traces stay readable;
//   - counts it per adapter and DDI (`calls`), and the fences of the array
//     DDIs (`fences`), for the OS's counters;
//   - a driver that throws anything but a WddmError fails only its own
//     adapter: the port hands the error to the OS's bug check of that adapter
//     (onDriverFault) and returns undefined. A WddmError is the driver
//     refusing the call with a status: it reaches the caller unchanged;
//   - calls the observers (DdiObserver) before and after each DDI and each
//     callback: the place a contract checker (issue 12) hooks in. An
//     observer sees the very argument objects the driver gets and must not
//     change them; what it throws propagates (a checker that wants a bug
//     check asks for one through its own report, not by throwing).
//
// The port imports only the driver interface and the shared base: it knows
// adapters by index and name, not the OS's records.
//
// Why this file is long: it is one class, the one door between the OS and
// every driver, with a method per DDI; the DDIs on every CPU signal's and
// wait's path are written out (no generic dispatch), and a one-fence CPU
// signal has a method of its own (updateOneCurrentValueFromCpu).

import type {
  DXGKARG_CLOSENATIVEFENCE, DXGKARG_CREATECONTEXT, DXGKARG_CREATEHWQUEUE, DXGKARG_CREATENATIVEFENCE, DXGKARG_DESTROYCONTEXT,
  DXGKARG_DESTROYHWQUEUE, DXGKARG_DESTROYNATIVEFENCE, DXGKARG_OPENNATIVEFENCE, DXGKARG_SETNATIVEFENCELOGBUFFER,
  DXGKARG_SUBMITCOMMAND, DXGKARG_UPDATECURRENTVALUESFROMCPU, DXGKARG_UPDATEMONITOREDVALUES, DXGKARG_UPDATENATIVEFENCELOGS,
  DdiInProgress, DriverStartResult, DxgkrnlCallbacks, KernelModeDriver, KernelModeDriverCpuSignal, NativeFenceCaps,
} from '../ddi/ddi.js';
import { WddmError } from '../base/errors.js';
import { hasFormBeside } from '../base/optional-form.js';
import type { Trace } from '../base/trace.js';
import { DXGKQAITYPE_NATIVE_FENCE_CAPS, NATIVE_FENCE_TYPE } from '../base/wddm.js';

/** Every DDI the port carries, by its documented name; its place here is its slot in the port's tallies. */
const DDI_NAMES = [
  'DxgkDdiStartDevice', 'DxgkDdiStopDevice', 'DxgkDdiResetFromTimeout', 'DxgkDdiRestartFromTimeout',
  'DxgkDdiQueryAdapterInfo', 'DxgkDdiCreateNativeFence', 'DxgkDdiOpenNativeFence', 'DxgkDdiCloseNativeFence',
  'DxgkDdiDestroyNativeFence', 'DxgkDdiUpdateCurrentValuesFromCpu', 'DxgkDdiUpdateMonitoredValues',
  'DxgkDdiCreateHwQueue', 'DxgkDdiDestroyHwQueue', 'DxgkDdiSetNativeFenceLogBuffer', 'DxgkDdiUpdateNativeFenceLogs',
  'DxgkDdiCreateContext', 'DxgkDdiDestroyContext', 'DxgkDdiSubmitCommand',
] as const;
export type DdiName = typeof DDI_NAMES[number];
const DDI_SLOT = Object.fromEntries(DDI_NAMES.map((name, slot) => [name, slot])) as Record<DdiName, number>;
/** The slots of the DDIs every CPU signal and wait makes (their counting is written out). */
const UPDATE_CURRENT_VALUES_SLOT = DDI_SLOT.DxgkDdiUpdateCurrentValuesFromCpu;
const UPDATE_MONITORED_VALUES_SLOT = DDI_SLOT.DxgkDdiUpdateMonitoredValues;

/** Every callback a driver makes, by its name in DxgkrnlCallbacks. */
export type CallbackName = keyof DxgkrnlCallbacks;

/** One DDI call as observers see it. */
export interface DdiCall {
  /** Counts every DDI and callback through this port, from 1: one order for both. */
  readonly sequence: number;
  readonly adapterIndex: number;
  readonly adapter: string;
  readonly ddi: DdiName;
  /** The argument object the driver gets (undefined for DDIs without one). Do not change it. */
  readonly args: unknown;
  /** Virtual time of the call. */
  readonly timeNs: number;
}

/** How a DDI call ended: its result, or the error the driver threw. */
export type DdiOutcome = { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: unknown };

/** One driver callback as observers see it, before the OS acts on it. */
export interface CallbackCall {
  readonly sequence: number;
  readonly adapterIndex: number;
  readonly adapter: string;
  readonly callback: CallbackName;
  /** The callback's argument (the interrupt data, the progress report, …; undefined for none). Do not change it. */
  readonly data: unknown;
  readonly timeNs: number;
}

/**
 * The interposition point between the OS and every driver (issue 12's contract
 * checker implements it). Each member is optional.
 */
export interface DdiObserver {
  /** Before the driver is called, after the call was traced. */
  beforeDdi?(call: DdiCall): void;
  /** After the driver returned or threw (before the port bug-checks the adapter for a throw). */
  afterDdi?(call: DdiCall, outcome: DdiOutcome): void;
  /** A callback from the driver, before the OS's handler runs. */
  beforeCallback?(call: CallbackCall): void;
  /** The same callback once the OS's handler returned (what it changed is visible). */
  afterCallback?(call: CallbackCall): void;
  /**
   * User mode's submission to a hardware queue, once the driver's user-mode half wrote it into the
   * ring (DriverPort.userModeSubmitted): what user mode asked the GPU to execute, in order.
   */
  userModeSubmitted?(submission: UserModeSubmission): void;
}

/** What user mode submitted to one hardware queue (DdiObserver.userModeSubmitted): the commands as the OS checked them. */
export interface UserModeSubmission {
  readonly adapterIndex: number;
  readonly adapter: string;
  /** The driver's handle of the queue (DxgkDdiCreateHwQueue's hHwQueue). */
  readonly hHwQueue: number;
  /** In order; a fence command names the fence by the user-mode handle the ring entry carries (the log's hNativeFence). */
  readonly commands: readonly { readonly op: 'wait' | 'signal' | 'work'; readonly handle: number; readonly value: bigint }[];
}

/** A DDI the driver performs in steps, part-way through (DriverPort.updateMonitoredValues). */
export interface PendingDdi {
  readonly adapterIndex: number;
  readonly ddi: DdiName;
  /** The driver's record of where it is. */
  readonly steps: DdiInProgress;
  /** The call as observers saw it (undefined with no observer): they hear its end when it returns. */
  readonly call: DdiCall | undefined;
}

/** What the OS gives the port for each adapter. */
export interface PortAdapterOptions {
  index: number;
  name: string;
  driver: KernelModeDriver;
  /** The OS's bug check of this adapter: a driver threw `error` in `ddi`. */
  onDriverFault(ddi: DdiName, error: unknown): void;
}

/** The KernelModeDriver methods that take one argument object. */
type DriverMethod = Exclude<keyof KernelModeDriver, 'startDevice' | 'stopDevice' | 'resetFromTimeout' | 'restartFromTimeout' | 'queryNativeFenceCaps'>;

/** An attached adapter: one class, so every adapter's record has one shape (the port's reads of it stay monomorphic). */
class PortAdapter {
  readonly index: number;
  readonly name: string;
  readonly driver: KernelModeDriver;
  readonly onDriverFault: (ddi: DdiName, error: unknown) => void;
  /** Calls and fences per DDI, by DDI_SLOT (typed arrays: counting is on every call's path, and a plain object's shape depends on the order its DDIs came). */
  readonly calls = new Float64Array(DDI_NAMES.length);
  readonly fences = new Float64Array(DDI_NAMES.length);
  /**
   * The driver's updateCurrentValuesFromCpu when it has the one-fence form where it has that one (hasFormBeside,
   * decided at attach), else undefined. A one-fence call takes that form only while the driver's
   * updateCurrentValuesFromCpu is still this function: one replaced later (a test's spy) sees every call.
   */
  readonly oneFenceBeside: KernelModeDriver['updateCurrentValuesFromCpu'] | undefined;
  constructor(options: PortAdapterOptions) {
    this.index = options.index;
    this.name = options.name;
    this.driver = options.driver;
    this.onDriverFault = options.onDriverFault;
    // Decided once, at attach: a driver that overrides only the array form, on its instance or in a subclass, is
    // called through its override (src/base/optional-form.ts).
    this.oneFenceBeside = hasFormBeside(options.driver, 'updateOneCurrentValueFromCpu', 'updateCurrentValuesFromCpu') ? options.driver.updateCurrentValuesFromCpu : undefined;
  }
}

/**
 * Does a CPU signal of one fence (`args`, NumFences 1) go to the driver's one-fence form? When the driver has it
 * beside the array form it still has (PortAdapter.oneFenceBeside) and the call carries no flag: every such signal,
 * whichever path reached the port, watched or not, so observers (a contract checker) judge the code a driver runs
 * when nobody watches; they see the call as the array form's argument.
 */
function takesOneFence(a: PortAdapter, args: DXGKARG_UPDATECURRENTVALUESFROMCPU): boolean {
  return a.oneFenceBeside !== undefined && a.driver.updateCurrentValuesFromCpu === a.oneFenceBeside && !args.Flags.NotificationOnly && !args.Flags.AlwaysSignaled;
}
/** The one-fence form for `args`' one fence. */
function oneFence(a: PortAdapter, args: DXGKARG_UPDATECURRENTVALUESFROMCPU): void {
  (a.driver as KernelModeDriver & KernelModeDriverCpuSignal).updateOneCurrentValueFromCpu(args.NativeFenceArray[0], args.UpdatedValueArray[0], args.CurrentValueKernelCpuVa[0]);
}

/**
 * The port's argument of a one-fence updateCurrentValuesFromCpu for a driver without the one-fence form, reused call
 * after call while no observer can keep it (`busy` while a driver has it: a signal made meanwhile gets its own).
 * Under a symbol: it holds nothing a later step reads, and the race explorer's state key and snapshots walk string keys.
 */
const ONE_FENCE_ARGUMENT = Symbol('DriverPort.oneFenceArgument');

export class DriverPort {
  private readonly [ONE_FENCE_ARGUMENT]: { args: DXGKARG_UPDATECURRENTVALUESFROMCPU; busy: boolean } = {
    args: { NumFences: 1, NativeFenceArray: [0], UpdatedValueArray: [0n], CurrentValueKernelCpuVa: [0n], Flags: { AlwaysSignaled: false, NotificationOnly: false } },
    busy: false,
  };
  private readonly adapters: PortAdapter[] = [];
  private readonly observers: DdiObserver[] = [];
  private sequence = 0;

  constructor(private readonly trace: Trace, private readonly clock: () => number) {}

  /** Hands the port an adapter's driver. Its index must be new. */
  attach(options: PortAdapterOptions): void {
    if (this.adapters[options.index]) throw new Error(`driver port: adapter ${options.index} is already attached`);
    this.adapters[options.index] = new PortAdapter(options);
  }

  /** Adds an observer of every DDI and callback from now on; returns the function that removes it. */
  observe(observer: DdiObserver): () => void {
    this.observers.push(observer);
    return () => { const at = this.observers.indexOf(observer); if (at >= 0) this.observers.splice(at, 1); };
  }

  /** The tally objects (per adapter: calls and fences per DDI): counts only, read by summaries, never by a DDI (an explorer's state leaves them out). */
  tallies(): object[] { return this.adapters.flatMap((a) => (a ? [a.calls, a.fences] : [])); }

  /** Does any observer see the calls (then every call's arguments are its own: an observer may keep them)? */
  get observed(): boolean { return this.observers.length !== 0; }

  /**
   * The OS learned what user mode submitted to a hardware queue (the user-mode half wrote it into the ring; the
   * OS never sees the ring): observers hear it. Called only while observed (the commands are built for them).
   */
  userModeSubmitted(submission: UserModeSubmission): void {
    for (const o of this.observers) o.userModeSubmitted?.(submission);
  }

  /** DDI calls made to an adapter's driver, by name (0 for none). */
  calls(adapterIndex: number, ddi: DdiName): number { return this.adapters[adapterIndex]?.calls[DDI_SLOT[ddi]] ?? 0; }
  /** Fences named by the array DDIs (UpdateMonitoredValues, UpdateCurrentValuesFromCpu) of an adapter. */
  fences(adapterIndex: number, ddi: DdiName): number { return this.adapters[adapterIndex]?.fences[DDI_SLOT[ddi]] ?? 0; }
  /** The same, summed over every adapter. */
  totalCalls(ddi: DdiName): number { return this.adapters.reduce((n, a) => n + a.calls[DDI_SLOT[ddi]], 0); }
  totalFences(ddi: DdiName): number { return this.adapters.reduce((n, a) => n + a.fences[DDI_SLOT[ddi]], 0); }

  // ── the DDIs ──

  /**
   * DxgkDdiStartDevice with the OS's callbacks, each wrapped so observers see it first.
   * A throw here is the adapter failing to start: it reaches the caller (there is no adapter to stop yet).
   */
  startDevice(adapterIndex: number, callbacks: DxgkrnlCallbacks): DriverStartResult {
    const a = this.adapter(adapterIndex);
    const wrapped = this.wrapCallbacks(a, callbacks);
    const call = this.begin(a, 'DxgkDdiStartDevice', undefined, {});
    try {
      const result = a.driver.startDevice(wrapped);
      this.end(call, { ok: true, result });
      return result;
    } catch (error) {
      this.end(call, { ok: false, error });
      throw error;
    }
  }

  /** DxgkDdiStopDevice (a bug check). A throw is traced and ignored: the adapter is stopped already. */
  stopDevice(adapterIndex: number): void {
    const a = this.adapter(adapterIndex);
    const call = this.begin(a, 'DxgkDdiStopDevice', undefined, {});
    try {
      a.driver.stopDevice();
      this.end(call, { ok: true, result: undefined });
    } catch (error) {
      this.end(call, { ok: false, error });
      this.trace.record('fault', a.name, 'DxgkDdiStopDevice failed (the adapter stays stopped)', { error: error instanceof Error ? error.message : String(error) });
    }
  }

  resetFromTimeout(adapterIndex: number): boolean {
    return this.invoke(adapterIndex, 'DxgkDdiResetFromTimeout', undefined, {}, (d) => { d.resetFromTimeout(); return true; }) ?? false;
  }

  restartFromTimeout(adapterIndex: number): boolean {
    return this.invoke(adapterIndex, 'DxgkDdiRestartFromTimeout', undefined, {}, (d) => { d.restartFromTimeout(); return true; }) ?? false;
  }

  /** DxgkDdiQueryAdapterInfo(DXGKQAITYPE_NATIVE_FENCE_CAPS). */
  queryNativeFenceCaps(adapterIndex: number): NativeFenceCaps | undefined {
    return this.invoke(adapterIndex, 'DxgkDdiQueryAdapterInfo', { Type: DXGKQAITYPE_NATIVE_FENCE_CAPS }, { Type: DXGKQAITYPE_NATIVE_FENCE_CAPS },
      (d) => d.queryNativeFenceCaps());
  }

  createNativeFence(adapterIndex: number, args: DXGKARG_CREATENATIVEFENCE): { hGlobalNativeFence: number } | undefined {
    // The trace line's arguments only when tracing (fence creation is on the path of every fence a program makes).
    const traced = this.trace.enabled ? {
      Type: Object.entries(NATIVE_FENCE_TYPE).find(([, v]) => v === args.Type)?.[0] ?? args.Type,
      CurrentValueSystemProcessGpuVa: args.CurrentValueSystemProcessGpuVa, MonitoredValueSystemProcessGpuVa: args.MonitoredValueSystemProcessGpuVa,
    } : undefined;
    const result = this.invoke<{ hGlobalNativeFence: number }>(adapterIndex, 'DxgkDdiCreateNativeFence', args, traced, 'createNativeFence');
    if (result && this.trace.enabled) this.trace.record('ddi', this.adapter(adapterIndex).name, 'DxgkDdiCreateNativeFence returned', { hGlobalNativeFence: result.hGlobalNativeFence });
    return result;
  }

  openNativeFence(adapterIndex: number, args: DXGKARG_OPENNATIVEFENCE): { hLocalNativeFence: number } | undefined {
    const result = this.invoke<{ hLocalNativeFence: number }>(adapterIndex, 'DxgkDdiOpenNativeFence', args, this.trace.enabled ? {
      hGlobalNativeFence: args.hGlobalNativeFence, hDevice: args.hDevice, CurrentValueGpuVa: args.CurrentValueGpuVa, MonitoredValueGpuVa: args.MonitoredValueGpuVa,
    } : undefined, 'openNativeFence');
    if (result && this.trace.enabled) this.trace.record('ddi', this.adapter(adapterIndex).name, 'DxgkDdiOpenNativeFence returned', { hLocalNativeFence: result.hLocalNativeFence });
    return result;
  }

  closeNativeFence(adapterIndex: number, args: DXGKARG_CLOSENATIVEFENCE): void {
    this.invoke(adapterIndex, 'DxgkDdiCloseNativeFence', args, { hLocalNativeFence: args.hLocalNativeFence }, 'closeNativeFence');
  }

  destroyNativeFence(adapterIndex: number, args: DXGKARG_DESTROYNATIVEFENCE): void {
    this.invoke(adapterIndex, 'DxgkDdiDestroyNativeFence', args, { hGlobalNativeFence: args.hGlobalNativeFence }, 'destroyNativeFence');
  }

  // The two DDIs every CPU signal and wait makes: written out (no generic dispatch), nothing built for nobody.

  updateCurrentValuesFromCpu(adapterIndex: number, args: DXGKARG_UPDATECURRENTVALUESFROMCPU): void {
    if (this.trace.enabled || this.observers.length) { this.updateCurrentValuesFromCpuWatched(adapterIndex, args); return; }
    // Nobody watches: begin()'s counting without its keyed access, and the call (small enough to compile into the caller).
    const a = this.adapter(adapterIndex);
    a.fences[UPDATE_CURRENT_VALUES_SLOT] += args.NumFences;
    a.calls[UPDATE_CURRENT_VALUES_SLOT]++;
    this.sequence++;
    try {
      if (args.NumFences === 1 && takesOneFence(a, args)) oneFence(a, args);
      else a.driver.updateCurrentValuesFromCpu(args);
    } catch (error) {
      this.failed(a, 'DxgkDdiUpdateCurrentValuesFromCpu', undefined, error);
    }
  }

  /**
   * DxgkDdiUpdateCurrentValuesFromCpu for one fence (a CPU signal's common case, NumFences 1, no flag). While nobody
   * watches (no observer, tracing off) a driver with the one-fence form (KernelModeDriverCpuSignal) gets the values
   * as they are, and one without it gets a reused argument; otherwise the call is updateCurrentValuesFromCpu's with an
   * argument of its own, seen by observers and traced as every DDI is. Counted as that DDI in every case.
   */
  updateOneCurrentValueFromCpu(adapterIndex: number, hGlobalNativeFence: number, updatedValue: bigint, currentValueKernelCpuVa: bigint): void {
    // Small, so it compiles into its caller (V8 counts a callee's whole bytecode): every other case is the next method's.
    const a = this.adapters[adapterIndex];
    if (a === undefined || a.oneFenceBeside === undefined || a.driver.updateCurrentValuesFromCpu !== a.oneFenceBeside || this.trace.enabled || this.observers.length !== 0) {
      this.updateOneThroughArgument(adapterIndex, hGlobalNativeFence, updatedValue, currentValueKernelCpuVa);
      return;
    }
    a.fences[UPDATE_CURRENT_VALUES_SLOT]++;
    a.calls[UPDATE_CURRENT_VALUES_SLOT]++;
    this.sequence++;
    try {
      (a.driver as KernelModeDriver & KernelModeDriverCpuSignal).updateOneCurrentValueFromCpu(hGlobalNativeFence, updatedValue, currentValueKernelCpuVa);
    } catch (error) {
      this.failed(a, 'DxgkDdiUpdateCurrentValuesFromCpu', undefined, error);
    }
  }

  /** updateOneCurrentValueFromCpu in the array form (watched or no adapter: an argument of its own; else the reused one). */
  private updateOneThroughArgument(adapterIndex: number, hGlobalNativeFence: number, updatedValue: bigint, currentValueKernelCpuVa: bigint): void {
    const a = this.adapters[adapterIndex];
    const reused = this[ONE_FENCE_ARGUMENT];
    if (a === undefined || this.trace.enabled || this.observers.length !== 0 || reused.busy) {
      this.updateCurrentValuesFromCpu(adapterIndex, {
        NumFences: 1, NativeFenceArray: [hGlobalNativeFence], UpdatedValueArray: [updatedValue], CurrentValueKernelCpuVa: [currentValueKernelCpuVa],
        Flags: { AlwaysSignaled: false, NotificationOnly: false },
      });
      return;
    }
    a.fences[UPDATE_CURRENT_VALUES_SLOT]++;
    a.calls[UPDATE_CURRENT_VALUES_SLOT]++;
    this.sequence++;
    const args = reused.args;
    args.NumFences = 1;
    args.NativeFenceArray[0] = hGlobalNativeFence;
    args.UpdatedValueArray[0] = updatedValue;
    args.CurrentValueKernelCpuVa[0] = currentValueKernelCpuVa;
    args.Flags.AlwaysSignaled = false;
    args.Flags.NotificationOnly = false;
    reused.busy = true;
    try {
      a.driver.updateCurrentValuesFromCpu(args);
    } catch (error) {
      this.failed(a, 'DxgkDdiUpdateCurrentValuesFromCpu', undefined, error);
    } finally {
      reused.busy = false;
    }
  }

  /** The same DDI traced, or seen by observers. */
  private updateCurrentValuesFromCpuWatched(adapterIndex: number, args: DXGKARG_UPDATECURRENTVALUESFROMCPU): void {
    const a = this.adapter(adapterIndex);
    const ddi = 'DxgkDdiUpdateCurrentValuesFromCpu';
    a.fences[UPDATE_CURRENT_VALUES_SLOT] += args.NumFences;
    const call = this.begin(a, ddi, args, this.trace.enabled ? {
      NumFences: args.NumFences, NativeFenceArray: args.NativeFenceArray, UpdatedValueArray: args.UpdatedValueArray,
      CurrentValueKernelCpuVa: args.CurrentValueKernelCpuVa, NotificationOnly: args.Flags.NotificationOnly,
    } : undefined);
    try {
      if (args.NumFences === 1 && takesOneFence(a, args)) oneFence(a, args);
      else a.driver.updateCurrentValuesFromCpu(args);
    } catch (error) {
      this.failed(a, ddi, call, error);
      return;
    }
    this.end(call, { ok: true, result: undefined });
  }

  /**
   * DxgkDdiUpdateMonitoredValues. Returns the DDI still in progress when the driver performs it
   * in steps (KernelModeDriver.updateMonitoredValues): the caller runs each next step with
   * continueDdi. Undefined: it returned (or failed: the adapter is bug-checked).
   */
  updateMonitoredValues(adapterIndex: number, args: DXGKARG_UPDATEMONITOREDVALUES): PendingDdi | undefined {
    const a = this.adapter(adapterIndex);
    const ddi = 'DxgkDdiUpdateMonitoredValues';
    a.fences[UPDATE_MONITORED_VALUES_SLOT] += args.NumFences;
    const call = this.begin(a, ddi, args, this.trace.enabled ? {
      NumFences: args.NumFences, NativeFenceArray: args.NativeFenceArray, UpdatedValueArray: args.UpdatedValueArray,
      MonitoredValueKernelCpuVa: args.MonitoredValueKernelCpuVa,
    } : undefined);
    let steps: void | DdiInProgress;
    try {
      steps = a.driver.updateMonitoredValues(args);
    } catch (error) {
      this.failed(a, ddi, call, error);
      return undefined;
    }
    if (steps !== undefined && steps !== null) {
      if (typeof steps !== 'object' || typeof steps.step !== 'function') {
        this.failed(a, ddi, call, new Error(`${ddi} returned ${typeof steps}; expected nothing, or a DdiInProgress (an object with step())`));
        return undefined;
      }
      return { adapterIndex, ddi, steps, call };
    }
    if (call) this.end(call, { ok: true, result: undefined });
    return undefined;
  }

  /**
   * The next step of a DDI in progress (the driver's step()). Returns true when the DDI is over:
   * it returned, or the driver threw (a WddmError reaches the caller; anything else bug-checks the
   * adapter, as any DDI's throw does).
   */
  continueDdi(pending: PendingDdi): boolean {
    const a = this.adapter(pending.adapterIndex);
    let done: boolean;
    try {
      done = pending.steps.step() === true;
    } catch (error) {
      this.failed(a, pending.ddi, pending.call, error);
      return true;
    }
    if (done && pending.call) this.end(pending.call, { ok: true, result: undefined });
    return done;
  }

  createHwQueue(adapterIndex: number, args: DXGKARG_CREATEHWQUEUE): { hHwQueue: number } | undefined {
    return this.invoke<{ hHwQueue: number }>(adapterIndex, 'DxgkDdiCreateHwQueue', args, {
      hDevice: args.hDevice, EngineOrdinal: args.EngineOrdinal, NativeProgressFence: args.Flags.NativeProgressFence, hHwQueueProgressFence: args.hHwQueueProgressFence,
    }, 'createHwQueue');
  }

  destroyHwQueue(adapterIndex: number, args: DXGKARG_DESTROYHWQUEUE): void {
    this.invoke(adapterIndex, 'DxgkDdiDestroyHwQueue', args, { hHwQueue: args.hHwQueue }, 'destroyHwQueue');
  }

  /** `logType`: the buffer's DXGK_NATIVE_FENCE_LOG_TYPE by name, for the trace (the header says it; the arguments do not). */
  setNativeFenceLogBuffer(adapterIndex: number, args: DXGKARG_SETNATIVEFENCELOGBUFFER, logType: string): void {
    this.invoke(adapterIndex, 'DxgkDdiSetNativeFenceLogBuffer', args, {
      hHwQueue: args.hHwQueue, Type: logType, NumberOfEntries: args.NumberOfEntries, LogBufferCpuVa: args.LogBufferCpuVa,
      LogBufferGpuVa: args.LogBufferGpuVa, LogBufferSystemProcessGpuVa: args.LogBufferSystemProcessGpuVa,
    }, 'setNativeFenceLogBuffer');
  }

  /** `reason`: why the OS reads the logs now, for the trace. */
  updateNativeFenceLogs(adapterIndex: number, args: DXGKARG_UPDATENATIVEFENCELOGS, reason: string): void {
    this.invoke(adapterIndex, 'DxgkDdiUpdateNativeFenceLogs', args, { NumberOfQueues: args.NumberOfQueues, hHWQueueArray: args.hHWQueueArray, reason }, 'updateNativeFenceLogs');
  }

  /** Does the adapter's driver have kernel-mode contexts (the three context DDIs)? */
  hasContexts(adapterIndex: number): boolean {
    const d = this.adapter(adapterIndex).driver;
    return typeof d.createContext === 'function' && typeof d.submitCommand === 'function' && typeof d.destroyContext === 'function';
  }

  createContext(adapterIndex: number, args: DXGKARG_CREATECONTEXT): { hContext: number } | undefined {
    return this.invoke<{ hContext: number }>(adapterIndex, 'DxgkDdiCreateContext', args, { hDevice: args.hDevice, NodeOrdinal: args.NodeOrdinal }, 'createContext');
  }

  destroyContext(adapterIndex: number, args: DXGKARG_DESTROYCONTEXT): void {
    this.invoke(adapterIndex, 'DxgkDdiDestroyContext', args, { hContext: args.hContext }, 'destroyContext');
  }

  /** `described`: the commands in words, for the trace. Undefined: the driver failed (its adapter is bug-checked). */
  submitCommand(adapterIndex: number, args: DXGKARG_SUBMITCOMMAND, described: string[]): boolean | undefined {
    return this.invoke<boolean>(adapterIndex, 'DxgkDdiSubmitCommand', args, { hContext: args.hContext, SubmissionFenceId: args.SubmissionFenceId, commands: described }, 'submitCommand');
  }

  // ── the machinery ──

  private adapter(index: number): PortAdapter {
    const a = this.adapters[index];
    if (!a) throw new Error(`driver port: no adapter ${index}`);
    return a;
  }

  /**
   * Traces and counts the call, tells the observers. `traced` undefined: no trace line (the trace
   * is off, say). Returns the call as observers see it (undefined with no observer: nothing to build).
   */
  private begin(a: PortAdapter, ddi: DdiName, args: unknown, traced: Record<string, unknown> | undefined): DdiCall | undefined {
    a.calls[DDI_SLOT[ddi]]++;
    if (traced) this.trace.record('ddi', a.name, ddi, traced);
    const sequence = ++this.sequence;
    if (!this.observers.length) return undefined;
    const call: DdiCall = { sequence, adapterIndex: a.index, adapter: a.name, ddi, args, timeNs: this.clock() };
    for (const o of this.observers) o.beforeDdi?.(call);
    return call;
  }

  private end(call: DdiCall | undefined, outcome: DdiOutcome): void {
    if (call) for (const o of this.observers) o.afterDdi?.(call, outcome);
  }

  /**
   * One DDI: trace, count, observers, the call. A WddmError from the driver is
   * its refusal and reaches the caller; any other throw bug-checks the adapter
   * (onDriverFault) and the call returns undefined.
   */
  private invoke<T>(adapterIndex: number, ddi: DdiName, args: unknown, traced: Record<string, unknown> | undefined,
                    run: ((driver: KernelModeDriver) => T) | DriverMethod): T | undefined {
    const a = this.adapter(adapterIndex);
    const call = this.begin(a, ddi, args, traced);
    let result: T;
    try {
      result = typeof run === 'string' ? (a.driver as unknown as Record<DriverMethod, (args: unknown) => T>)[run](args) : run(a.driver);
    } catch (error) {
      return this.failed(a, ddi, call, error);
    }
    if (call) this.end(call, { ok: true, result });
    return result;
  }

  /** The driver threw: observers hear it; a WddmError (the driver's refusal) reaches the caller, anything else bug-checks the adapter. */
  private failed(a: PortAdapter, ddi: DdiName, call: DdiCall | undefined, error: unknown): undefined {
    this.end(call, { ok: false, error });
    if (error instanceof WddmError) throw error;
    a.onDriverFault(ddi, error);
    return undefined;
  }

  private wrapCallbacks(a: PortAdapter, callbacks: DxgkrnlCallbacks): DxgkrnlCallbacks {
    const wrapped = {} as Record<CallbackName, (first?: unknown, second?: unknown) => unknown>;
    for (const name of Object.keys(callbacks) as CallbackName[]) {
      const handler = callbacks[name] as (first?: unknown, second?: unknown) => unknown;
      // Every callback takes one argument but QueryFeatureInterface (FeatureId, Version): observers get those two as an array.
      const twoArguments = handler.length === 2;
      const stretchQuery = name === 'QueryGpuProgressStretch';
      wrapped[name] = (first?: unknown, second?: unknown) => {
        // While an observer watches, the GPU runs no stretch: every command comes as its own NotifyGpuProgress, as it would stepped.
        if (stretchQuery && this.observers.length) return false;
        const sequence = ++this.sequence;
        if (!this.observers.length) return handler(first, second);
        const call: CallbackCall = { sequence, adapterIndex: a.index, adapter: a.name, callback: name, data: twoArguments ? [first, second] : first, timeNs: this.clock() };
        for (const o of this.observers) o.beforeCallback?.(call);
        const result = handler(first, second);
        for (const o of this.observers) o.afterCallback?.(call);
        return result;
      };
    }
    // Frozen: the table a driver holds for life (a driver cannot replace the OS's callbacks; the explorer's state key writes it as one word).
    return Object.freeze(wrapped) as unknown as DxgkrnlCallbacks;
  }
}
