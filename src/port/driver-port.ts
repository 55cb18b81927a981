// The driver port: the only holder of each adapter's KernelModeDriver.
//
// Every DDI the OS makes goes through one method here, and every callback a
// driver makes reaches the OS through here:
//
//   OS module ──port.createNativeFence(adapter, args)──▶ observers.beforeDdi ──▶ trace "ddi" line
//        ◀── result (or undefined: the driver threw)       ──▶ driver.createNativeFence(args)
//                                                           ──▶ observers.afterDdi (result or error)
//   driver ──callbacks.NotifyInterrupt(data)──▶ observers.beforeCallback ──▶ the OS's handler
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
//   - calls the observers (DdiObserver) before and after each DDI and before
//     each callback: the place a contract checker (issue 12) hooks in. An
//     observer sees the very argument objects the driver gets and must not
//     change them; what it throws propagates (a checker that wants a bug
//     check asks for one through its own report, not by throwing).
//
// The port imports only the driver interface and the shared base: it knows
// adapters by index and name, not the OS's records.

import type {
  DXGKARG_CLOSENATIVEFENCE, DXGKARG_CREATECONTEXT, DXGKARG_CREATEHWQUEUE, DXGKARG_CREATENATIVEFENCE, DXGKARG_DESTROYCONTEXT,
  DXGKARG_DESTROYHWQUEUE, DXGKARG_DESTROYNATIVEFENCE, DXGKARG_OPENNATIVEFENCE, DXGKARG_SETNATIVEFENCELOGBUFFER,
  DXGKARG_SUBMITCOMMAND, DXGKARG_UPDATECURRENTVALUESFROMCPU, DXGKARG_UPDATEMONITOREDVALUES, DXGKARG_UPDATENATIVEFENCELOGS,
  DriverStartResult, DxgkrnlCallbacks, KernelModeDriver, NativeFenceCaps,
} from '../driver/ddi.js';
import { WddmError } from '../errors.js';
import type { Trace } from '../trace.js';
import { DXGKQAITYPE_NATIVE_FENCE_CAPS, NATIVE_FENCE_TYPE } from '../wddm.js';

/** Every DDI the port carries, by its documented name. */
export type DdiName =
  | 'DxgkDdiStartDevice' | 'DxgkDdiStopDevice' | 'DxgkDdiResetFromTimeout' | 'DxgkDdiRestartFromTimeout'
  | 'DxgkDdiQueryAdapterInfo' | 'DxgkDdiCreateNativeFence' | 'DxgkDdiOpenNativeFence' | 'DxgkDdiCloseNativeFence'
  | 'DxgkDdiDestroyNativeFence' | 'DxgkDdiUpdateCurrentValuesFromCpu' | 'DxgkDdiUpdateMonitoredValues'
  | 'DxgkDdiCreateHwQueue' | 'DxgkDdiDestroyHwQueue' | 'DxgkDdiSetNativeFenceLogBuffer' | 'DxgkDdiUpdateNativeFenceLogs'
  | 'DxgkDdiCreateContext' | 'DxgkDdiDestroyContext' | 'DxgkDdiSubmitCommand';

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
}

/** What the OS gives the port for each adapter. */
export interface PortAdapterOptions {
  index: number;
  name: string;
  driver: KernelModeDriver;
  /** The OS's bug check of this adapter: a driver threw `error` in `ddi`. */
  onDriverFault(ddi: DdiName, error: unknown): void;
}

interface PortAdapter extends PortAdapterOptions {
  calls: Map<DdiName, number>;
  fences: Map<DdiName, number>;
}

export class DriverPort {
  private readonly adapters: PortAdapter[] = [];
  private readonly observers: DdiObserver[] = [];
  private sequence = 0;

  constructor(private readonly trace: Trace, private readonly clock: () => number) {}

  /** Hands the port an adapter's driver. Its index must be new. */
  attach(options: PortAdapterOptions): void {
    if (this.adapters[options.index]) throw new Error(`driver port: adapter ${options.index} is already attached`);
    this.adapters[options.index] = { ...options, calls: new Map(), fences: new Map() };
  }

  /** Adds an observer of every DDI and callback from now on; returns the function that removes it. */
  observe(observer: DdiObserver): () => void {
    this.observers.push(observer);
    return () => { const at = this.observers.indexOf(observer); if (at >= 0) this.observers.splice(at, 1); };
  }

  /** DDI calls made to an adapter's driver, by name (0 for none). */
  calls(adapterIndex: number, ddi: DdiName): number { return this.adapters[adapterIndex]?.calls.get(ddi) ?? 0; }
  /** Fences named by the array DDIs (UpdateMonitoredValues, UpdateCurrentValuesFromCpu) of an adapter. */
  fences(adapterIndex: number, ddi: DdiName): number { return this.adapters[adapterIndex]?.fences.get(ddi) ?? 0; }
  /** The same, summed over every adapter. */
  totalCalls(ddi: DdiName): number { return this.adapters.reduce((n, a) => n + (a.calls.get(ddi) ?? 0), 0); }
  totalFences(ddi: DdiName): number { return this.adapters.reduce((n, a) => n + (a.fences.get(ddi) ?? 0), 0); }

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
    const typeName = Object.entries(NATIVE_FENCE_TYPE).find(([, v]) => v === args.Type)?.[0] ?? args.Type;
    const result = this.invoke(adapterIndex, 'DxgkDdiCreateNativeFence', args, {
      Type: typeName, CurrentValueSystemProcessGpuVa: args.CurrentValueSystemProcessGpuVa, MonitoredValueSystemProcessGpuVa: args.MonitoredValueSystemProcessGpuVa,
    }, (d) => d.createNativeFence(args));
    if (result) this.trace.record('ddi', this.adapter(adapterIndex).name, 'DxgkDdiCreateNativeFence returned', { hGlobalNativeFence: result.hGlobalNativeFence });
    return result;
  }

  openNativeFence(adapterIndex: number, args: DXGKARG_OPENNATIVEFENCE): { hLocalNativeFence: number } | undefined {
    const result = this.invoke(adapterIndex, 'DxgkDdiOpenNativeFence', args, {
      hGlobalNativeFence: args.hGlobalNativeFence, hDevice: args.hDevice, CurrentValueGpuVa: args.CurrentValueGpuVa, MonitoredValueGpuVa: args.MonitoredValueGpuVa,
    }, (d) => d.openNativeFence(args));
    if (result) this.trace.record('ddi', this.adapter(adapterIndex).name, 'DxgkDdiOpenNativeFence returned', { hLocalNativeFence: result.hLocalNativeFence });
    return result;
  }

  closeNativeFence(adapterIndex: number, args: DXGKARG_CLOSENATIVEFENCE): void {
    this.invoke(adapterIndex, 'DxgkDdiCloseNativeFence', args, { hLocalNativeFence: args.hLocalNativeFence }, (d) => d.closeNativeFence(args));
  }

  destroyNativeFence(adapterIndex: number, args: DXGKARG_DESTROYNATIVEFENCE): void {
    this.invoke(adapterIndex, 'DxgkDdiDestroyNativeFence', args, { hGlobalNativeFence: args.hGlobalNativeFence }, (d) => d.destroyNativeFence(args));
  }

  updateCurrentValuesFromCpu(adapterIndex: number, args: DXGKARG_UPDATECURRENTVALUESFROMCPU): void {
    const traced = this.trace.enabled ? {
      NumFences: args.NumFences, NativeFenceArray: args.NativeFenceArray, UpdatedValueArray: args.UpdatedValueArray,
      CurrentValueKernelCpuVa: args.CurrentValueKernelCpuVa, NotificationOnly: args.Flags.NotificationOnly,
    } : undefined;
    this.count(adapterIndex, 'DxgkDdiUpdateCurrentValuesFromCpu', args.NumFences, 'fences');
    this.invoke(adapterIndex, 'DxgkDdiUpdateCurrentValuesFromCpu', args, traced, (d) => d.updateCurrentValuesFromCpu(args));
  }

  updateMonitoredValues(adapterIndex: number, args: DXGKARG_UPDATEMONITOREDVALUES): void {
    this.count(adapterIndex, 'DxgkDdiUpdateMonitoredValues', args.NumFences, 'fences');
    this.invoke(adapterIndex, 'DxgkDdiUpdateMonitoredValues', args, {
      NumFences: args.NumFences, NativeFenceArray: args.NativeFenceArray, UpdatedValueArray: args.UpdatedValueArray,
      MonitoredValueKernelCpuVa: args.MonitoredValueKernelCpuVa,
    }, (d) => d.updateMonitoredValues(args));
  }

  createHwQueue(adapterIndex: number, args: DXGKARG_CREATEHWQUEUE): { hHwQueue: number } | undefined {
    return this.invoke(adapterIndex, 'DxgkDdiCreateHwQueue', args, {
      hDevice: args.hDevice, EngineOrdinal: args.EngineOrdinal, NativeProgressFence: args.Flags.NativeProgressFence, hHwQueueProgressFence: args.hHwQueueProgressFence,
    }, (d) => d.createHwQueue(args));
  }

  destroyHwQueue(adapterIndex: number, args: DXGKARG_DESTROYHWQUEUE): void {
    this.invoke(adapterIndex, 'DxgkDdiDestroyHwQueue', args, { hHwQueue: args.hHwQueue }, (d) => d.destroyHwQueue(args));
  }

  /** `logType`: the buffer's DXGK_NATIVE_FENCE_LOG_TYPE by name, for the trace (the header says it; the arguments do not). */
  setNativeFenceLogBuffer(adapterIndex: number, args: DXGKARG_SETNATIVEFENCELOGBUFFER, logType: string): void {
    this.invoke(adapterIndex, 'DxgkDdiSetNativeFenceLogBuffer', args, {
      hHwQueue: args.hHwQueue, Type: logType, NumberOfEntries: args.NumberOfEntries, LogBufferCpuVa: args.LogBufferCpuVa,
      LogBufferGpuVa: args.LogBufferGpuVa, LogBufferSystemProcessGpuVa: args.LogBufferSystemProcessGpuVa,
    }, (d) => d.setNativeFenceLogBuffer(args));
  }

  /** `reason`: why the OS reads the logs now, for the trace. */
  updateNativeFenceLogs(adapterIndex: number, args: DXGKARG_UPDATENATIVEFENCELOGS, reason: string): void {
    this.invoke(adapterIndex, 'DxgkDdiUpdateNativeFenceLogs', args, { NumberOfQueues: args.NumberOfQueues, hHWQueueArray: args.hHWQueueArray, reason },
      (d) => d.updateNativeFenceLogs(args));
  }

  /** Does the adapter's driver have kernel-mode contexts (the three context DDIs)? */
  hasContexts(adapterIndex: number): boolean {
    const d = this.adapter(adapterIndex).driver;
    return typeof d.createContext === 'function' && typeof d.submitCommand === 'function' && typeof d.destroyContext === 'function';
  }

  createContext(adapterIndex: number, args: DXGKARG_CREATECONTEXT): { hContext: number } | undefined {
    return this.invoke(adapterIndex, 'DxgkDdiCreateContext', args, { hDevice: args.hDevice, NodeOrdinal: args.NodeOrdinal }, (d) => d.createContext!(args));
  }

  destroyContext(adapterIndex: number, args: DXGKARG_DESTROYCONTEXT): void {
    this.invoke(adapterIndex, 'DxgkDdiDestroyContext', args, { hContext: args.hContext }, (d) => d.destroyContext!(args));
  }

  /** `described`: the commands in words, for the trace. Undefined: the driver failed (its adapter is bug-checked). */
  submitCommand(adapterIndex: number, args: DXGKARG_SUBMITCOMMAND, described: string[]): boolean | undefined {
    return this.invoke(adapterIndex, 'DxgkDdiSubmitCommand', args, { hContext: args.hContext, SubmissionFenceId: args.SubmissionFenceId, commands: described },
      (d) => d.submitCommand!(args));
  }

  // ── the machinery ──

  private adapter(index: number): PortAdapter {
    const a = this.adapters[index];
    if (!a) throw new Error(`driver port: no adapter ${index}`);
    return a;
  }

  private count(adapterIndex: number, ddi: DdiName, n: number, what: 'fences'): void {
    const a = this.adapter(adapterIndex);
    if (what === 'fences') a.fences.set(ddi, (a.fences.get(ddi) ?? 0) + n);
  }

  /** Traces and counts the call, tells the observers. `traced` undefined: no trace line (the trace is off, say). */
  private begin(a: PortAdapter, ddi: DdiName, args: unknown, traced: Record<string, unknown> | undefined): DdiCall {
    a.calls.set(ddi, (a.calls.get(ddi) ?? 0) + 1);
    if (traced) this.trace.record('ddi', a.name, ddi, traced);
    const call: DdiCall = { sequence: ++this.sequence, adapterIndex: a.index, adapter: a.name, ddi, args, timeNs: this.clock() };
    for (const o of this.observers) o.beforeDdi?.(call);
    return call;
  }

  private end(call: DdiCall, outcome: DdiOutcome): void {
    for (const o of this.observers) o.afterDdi?.(call, outcome);
  }

  /**
   * One DDI: trace, count, observers, the call. A WddmError from the driver is
   * its refusal and reaches the caller; any other throw bug-checks the adapter
   * (onDriverFault) and the call returns undefined.
   */
  private invoke<T>(adapterIndex: number, ddi: DdiName, args: unknown, traced: Record<string, unknown> | undefined, run: (driver: KernelModeDriver) => T): T | undefined {
    const a = this.adapter(adapterIndex);
    const call = this.begin(a, ddi, args, traced);
    let result: T;
    try {
      result = run(a.driver);
    } catch (error) {
      this.end(call, { ok: false, error });
      if (error instanceof WddmError) throw error;
      a.onDriverFault(ddi, error);
      return undefined;
    }
    this.end(call, { ok: true, result });
    return result;
  }

  private wrapCallbacks(a: PortAdapter, callbacks: DxgkrnlCallbacks): DxgkrnlCallbacks {
    const wrapped = {} as Record<CallbackName, (...params: unknown[]) => unknown>;
    for (const name of Object.keys(callbacks) as CallbackName[]) {
      const handler = callbacks[name] as (...params: unknown[]) => unknown;
      wrapped[name] = (...params: unknown[]) => {
        const sequence = ++this.sequence;
        if (this.observers.length) {
          // One argument is the data; the feature queries' two (FeatureId, Version) come as an array.
          const data = params.length === 1 ? params[0] : params;
          const call: CallbackCall = { sequence, adapterIndex: a.index, adapter: a.name, callback: name, data, timeNs: this.clock() };
          for (const o of this.observers) o.beforeCallback?.(call);
        }
        return handler(...params);
      };
    }
    return wrapped as unknown as DxgkrnlCallbacks;
  }
}
