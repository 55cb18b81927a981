// Running a validated scenario on a fresh machine, then checking its
// expectations.
//
// Why this file is long: a scenario's set-up, its threads and its expectations
// read the same names and handles (the file's fences, queues, allocations), and
// the race explorer needs the set-up and the expectations apart from the run
// (setUpScenario, checkExpectations); split, each part would need the others'
// maps.
//
// Set-up calls that the model refuses (e.g. a native fence on an
// adapter without NativeGpuFence) are reported as ScenarioError problems with
// the path of the item that caused them: nothing has run yet at that point.

import { DEFAULT_LIMITS } from '../machine/options.js';
import { createMachine, loadDriverModule, timeOverflow, type AdapterOptions, type DriverModule, type Machine, type MachineObserver, type MachineOptions } from '../machine/machine.js';
import { eventLimitError } from '../base/scheduler.js';
import { MAX_VIRTUAL_TIME_NS } from '../base/validate.js';
import { counted } from '../base/words.js';
import type { TraceEvent } from '../base/trace.js';
import type { RuntimeProcess, CpuThread, ThreadOp, ThreadSignal, Cpu } from '../user/runtime.js';
import type { AllocationUse, WaitResult } from '../os/kernel.js';
import type { StuckReport } from '../machine/liveness.js';
import { lostWakeupText } from '../machine/lost-wakeups.js';
import { ScenarioError, locationOf, type ScenarioProblem } from './load.js';
import { ringEntriesFor } from './rings.js';
import { WddmError } from '../base/errors.js';
import type { Scenario, GpuCommand, ThreadStep, WaitOutcome, WaitStep } from './types.js';

export interface ExpectationResult {
  /** Where the expectation is in the file ("expect.fences.frameReady"), or "(implicit)". */
  path: string;
  /** Its line and column in the file, when it was read from one. */
  line?: number;
  column?: number;
  description: string;
  expected: string;
  actual: string;
  ok: boolean;
}

export interface WaitRecord { id?: string; thread: string; step: number; outcome: WaitOutcome; index?: number; atNs?: number }

export interface ScenarioResult {
  scenario: Scenario;
  /** How the file is named in reports (RunOptions.source). */
  source: string;
  machine: Machine;
  seed: number;
  waits: WaitRecord[];
  expectations: ExpectationResult[];
  passed: boolean;
  /** What is still blocked at the end, and any deadlock (machine.stuck()). */
  stuck: StuckReport;
  /** Scheduler events executed (work done). */
  events: number;
}

export interface RunOptions {
  seed?: number;
  /** Called every few thousand scheduler events (for a progress line). */
  onProgress?: (info: { events: number; timeNs: number }) => void;
  /** How set-up problems name the file (default: the scenario's name). */
  source?: string;
  progressEvery?: number;
  /**
   * Sees every trace event as it is recorded, from the machine's creation on
   * (the trace in memory keeps only the newest machine.limits.traceEvents):
   * `wddm-fence run --trace-events` streams them to a file with it.
   */
  onTraceEvent?: (event: TraceEvent) => void;
  /** Every adapter's driver module instead of the file's (the conformance suite runs a driver under test on every adapter). */
  driverModule?: DriverModule;
  /** Observers of the machine from its creation on (createMachine's `observers`: the contract checker). */
  observers?: MachineObserver[];
  /** The machine's trace (createMachine's `trace`, default true). false: nothing traced, so a driver's fast paths run as when nobody watches. */
  trace?: boolean;
}

function outcomeOf(result: WaitResult): WaitOutcome {
  switch (result.status) {
    case 'SUCCESS': return result.immediate ? 'satisfiedAtOnce' : 'woken';
    case 'TIMEOUT': return 'timedOut';
    case 'DEVICE_REMOVED': return 'deviceRemoved';
    case 'ADAPTER_STOPPED': return 'adapterStopped';
    default: return 'objectDestroyed';
  }
}

/**
 * The machine's adapters with each driver module file loaded (docs/DRIVERS.md): `driver: ./x.mjs`
 * or `driver: { module: ./x.mjs, … }`, relative to the scenario file's folder (RunOptions.source).
 * A module that cannot be loaded is a problem of the file, at its place (nothing runs).
 */
async function adaptersWithDrivers(s: Scenario, source: string): Promise<AdapterOptions[]> {
  const folder = source.replace(/[^\\/]*$/, '') || '.';
  const adapters: AdapterOptions[] = [];
  const problems: ScenarioProblem[] = [];
  for (const [i, adapter] of s.machine.adapters.entries()) {
    const driver = adapter.driver;
    const file = typeof driver === 'string' ? driver : driver?.module;
    if (file === undefined) { adapters.push(adapter as AdapterOptions); continue; }
    const path = typeof driver === 'string' ? `machine.adapters[${i}].driver` : `machine.adapters[${i}].driver.module`;
    try {
      const module = await loadDriverModule(file, { from: folder });
      adapters.push({ ...adapter, driver: { ...(typeof driver === 'object' ? driver : {}), module } } as AdapterOptions);
    } catch (error) {
      problems.push({ path, ...locationOf(s, path), message: `${path}: ${(error as Error).message}` });
    }
  }
  if (problems.length) throw new ScenarioError(source, problems);
  return adapters;
}

/**
 * The machine options of a scenario (its `machine` section) with `adapters` (scenarioAdapters: driver module
 * files loaded) and `seed`; the caller adds what it needs (observers, trace, schedule). Each adapter's rings
 * are as long as the file's longest submission into one, unless the file says (rings.ts).
 */
export function scenarioMachineOptions(s: Scenario, adapters: AdapterOptions[], seed: number): MachineOptions {
  const rings = ringEntriesFor(s);
  const sized = adapters.map((a, i) => (rings[i] === undefined || s.machine.adapters[i].limits?.ringEntries !== undefined ? a
    : { ...a, limits: { ...a.limits, ringEntries: rings[i] } }));
  return { seed, os: s.machine.os, adapters: sized, ...(s.machine.timing ? { timing: s.machine.timing } : {}),
    ...(s.machine.ioCoherent !== undefined ? { ioCoherent: s.machine.ioCoherent } : {}), ...(s.machine.doorbell ? { doorbell: s.machine.doorbell } : {}),
    ...(s.machine.limits ? { limits: s.machine.limits } : {}) };
}

/** The scenario's adapters with their driver modules loaded (or `driverModule` on every adapter: the conformance suite's driver under test). */
export async function scenarioAdapters(s: Scenario, source: string, driverModule?: DriverModule): Promise<AdapterOptions[]> {
  // The conformance suite's driver under test replaces every adapter's driver (the file's flags and modules do not apply).
  return driverModule ? s.machine.adapters.map((a) => ({ ...a, driver: { module: driverModule } }) as AdapterOptions) : adaptersWithDrivers(s, source);
}

/** createMachine refused the scenario's machine: the option it names, where it is in the file. */
export function machineRefused(s: Scenario, source: string, error: unknown): ScenarioError {
  const parameter = (error as { parameter?: unknown }).parameter;
  const path = typeof parameter === 'string' && locationOf(s, `machine.${parameter}`) ? `machine.${parameter}` : 'machine';
  return new ScenarioError(source, [{ path, ...locationOf(s, path), message: `${path}: the model refused it: ${(error as Error).message}` }]);
}

export async function runScenario(scenario: Scenario, options: RunOptions = {}): Promise<ScenarioResult> {
  const s = scenario;
  const seed = options.seed ?? s.machine.seed ?? 1;
  const source = options.source ?? s.name;
  const adapters = await scenarioAdapters(s, source, options.driverModule);
  let machine!: Machine;
  try {
    machine = await createMachine({ ...scenarioMachineOptions(s, adapters, seed), ...(options.observers ? { observers: options.observers } : {}),
      ...(options.trace === false ? { trace: false } : {}) });
  } catch (error) {
    throw machineRefused(s, source, error);
  }
  if (options.onTraceEvent) {
    const sink = options.onTraceEvent;
    for (const e of machine.trace.events) sink(e); // what createMachine recorded (the ring holds all of it yet)
    machine.trace.onEvent(sink);
  }
  const setup = setUpScenario(s, machine, source);

  // run in virtual time, within the machine's bounds (limits.eventsPerRun, MAX_VIRTUAL_TIME_NS): past one the run stops with a WddmError
  let events = 0;
  const every = options.progressEvery ?? 20_000;
  const scheduler = machine.scheduler;
  while (scheduler.step()) {
    if (scheduler.nowNs > MAX_VIRTUAL_TIME_NS) throw timeOverflow(scheduler.nowNs);
    if (++events > scheduler.maxEventsPerRun) throw eventLimitError(scheduler.maxEventsPerRun, scheduler.nowNs);
    if (options.onProgress && events % every === 0) options.onProgress({ events, timeNs: machine.nowNs });
  }
  const stuck = machine.stuck();
  const expectations = checkExpectations(setup, stuck);
  return { scenario: s, source, machine, seed, waits: setup.state.waits, expectations, passed: expectations.every((e) => e.ok), events, stuck };
}

/**
 * What a scenario's run keeps beside the machine, changed while it runs: the waits its threads
 * started (their outcomes), what `cpuRead` steps read, the devices opened (a thread's step may open
 * one). Every thread body holds it, so it is part of the machine's object graph (a schedule explorer
 * hashes and snapshots that graph).
 */
export interface ScenarioState {
  waits: WaitRecord[];
  cpuReads: Map<string, string>;
  devices: Map<string, number>;
}

/** A scenario set up on a machine: processes, fences, allocations, queues with their commands submitted, threads created, faults scheduled; nothing has run. */
export interface ScenarioSetup {
  scenario: Scenario;
  source: string;
  machine: Machine;
  state: ScenarioState;
  processes: Map<string, RuntimeProcess>;
  /** Each thread by name. */
  threads: Map<string, CpuThread>;
  /** Where each thread is in its steps (a schedule explorer's step list and footprints read it). */
  positions: Map<CpuThread, ThreadPosition>;
  /** The handle each process holds to each fence: key `process\0fence` (its own adapter's) or `process\0fence\0adapter`. */
  handles: Map<string, number>;
  allocations: Map<string, { process: string; adapter: string; hAllocation: number }>;
  queues: Map<string, { process: string; adapter: string; hHwQueue: number; hContext: number }>;
}

/**
 * Sets the scenario up on `machine` (built from scenarioMachineOptions), synchronously. Set-up calls the
 * model refuses are ScenarioError problems with the item's path; nothing has run then.
 */
export function setUpScenario(scenario: Scenario, machine: Machine, source = scenario.name): ScenarioSetup {
  const s = scenario;
  const problems: ScenarioProblem[] = [];
  const setup = <T>(path: string, action: () => T): T | undefined => {
    try { return action(); } catch (error) {
      problems.push({ path, ...locationOf(s, path), message: `${path}: the model refused it at set-up: ${(error as Error).message}` });
      return undefined;
    }
  };
  const state: ScenarioState = { waits: [], cpuReads: new Map(), devices: new Map() };

  // processes and their devices (one per adapter they use, opened on first use)
  const processes = new Map<string, RuntimeProcess>();
  s.processes.forEach((p, i) => setup(`processes[${i}]`, () => processes.set(p.name, machine.createProcess(p.name))));
  if (problems.length) throw new ScenarioError(source, problems);
  const deviceOf = (process: string, adapter: string): number => {
    const key = `${process}\u0000${adapter}`;
    let h = state.devices.get(key);
    if (h === undefined) {
      const rp = processes.get(process)!;
      h = rp.createDevice({ hAdapter: rp.openAdapter(adapter) });
      state.devices.set(key, h);
    }
    return h;
  };

  // fences, and the handle each process holds to each, per adapter it is opened on
  const handles = new Map<string, number>();
  const key = (process: string, fence: string, adapter?: string) => `${process}\u0000${fence}${adapter === undefined ? '' : `\u0000${adapter}`}`;
  /** The process's handle to a fence: the one opened on `adapter` (a queue's), else the one on the fence's own adapter. */
  const handleOf = (process: string, fence: string, adapter?: string) => handles.get(key(process, fence, adapter)) ?? handles.get(key(process, fence))!;
  (s.fences ?? []).forEach((f, i) => setup(`fences[${i}]`, () => {
    const owner = processes.get(f.process)!;
    const made = f.kind === 'monitored'
      ? owner.createSynchronizationObject({ hDevice: deviceOf(f.process, f.adapter), type: 'MONITORED_FENCE', initialValue: BigInt(f.initialValue ?? 0), flags: f.flags, name: f.name })
      : owner.createNativeFence({ hDevice: deviceOf(f.process, f.adapter), initialValue: BigInt(f.initialValue ?? 0), type: f.type, flags: f.flags, name: f.name });
    handles.set(key(f.process, f.name), made.hSyncObject);
    handles.set(key(f.process, f.name, f.adapter), made.hSyncObject);
    // the same process opens it on the other adapters (cross-adapter fences), other processes on every adapter
    const opens: [string, string][] = [...(f.crossAdapter ?? []).map((a): [string, string] => [f.process, a]),
      ...(f.sharedWith ?? []).flatMap((p) => [f.adapter, ...(f.crossAdapter ?? [])].map((a): [string, string] => [p, a]))];
    for (const [other, adapter] of opens) {
      const target = processes.get(other)!;
      const hNt = owner.shareObject(made.hSyncObject);
      let hOpen = hNt;
      if (target !== owner) { hOpen = owner.duplicateHandle(hNt, target); owner.closeHandle(hNt); }
      const opened = target.openNativeFenceFromNtHandle({ hNtHandle: hOpen, hDevice: deviceOf(other, adapter) });
      target.closeHandle(hOpen);
      handles.set(key(other, f.name, adapter), opened.hSyncObject);
      if (!handles.has(key(other, f.name))) handles.set(key(other, f.name), opened.hSyncObject);
    }
  }));
  if (problems.length) throw new ScenarioError(source, problems);

  // allocations
  const allocations = new Map<string, { process: string; adapter: string; hAllocation: number }>();
  (s.allocations ?? []).forEach((x, i) => setup(`allocations[${i}]`, () => {
    const made = processes.get(x.process)!.createAllocation({ hDevice: deviceOf(x.process, x.adapter), sizeBytes: x.sizeBytes, name: x.name,
      ...(x.segments ? { segments: x.segments } : {}), ...(x.cpuAccess ? { cpuAccess: x.cpuAccess } : {}), ...(x.resident !== undefined ? { resident: x.resident } : {}) });
    allocations.set(x.name, { process: x.process, adapter: x.adapter, hAllocation: made.hAllocation });
  }));
  if (problems.length) throw new ScenarioError(source, problems);
  const queues = new Map<string, { process: string; adapter: string; hHwQueue: number; hContext: number }>();
  const submitTo = submitter(s, processes, queues, allocations, handleOf);
  (s.queues ?? []).forEach((q, i) => setup(`queues[${i}]`, () => {
    const rp = processes.get(q.process)!;
    if (q.kind === 'kernelMode') {
      const hContext = rp.createContext({ hDevice: deviceOf(q.process, q.adapter), engine: q.engine ?? 0, name: q.name });
      queues.set(q.name, { process: q.process, adapter: q.adapter, hHwQueue: 0, hContext });
    } else {
      const made = rp.createHwQueue({ hDevice: deviceOf(q.process, q.adapter), engine: q.engine ?? 0, nativeProgressFence: q.progressFence ?? false, name: q.name });
      queues.set(q.name, { process: q.process, adapter: q.adapter, hHwQueue: made.hHwQueue, hContext: 0 });
    }
    if (q.commands?.length) submitTo(q.name, q.commands);
  }));
  if (problems.length) throw new ScenarioError(source, problems);

  // CPU threads: plain iterator objects (ScenarioThreadBody), whose position is in their fields
  const threads = new Map<string, CpuThread>();
  const positions = new Map<CpuThread, ThreadPosition>();
  const environment: ThreadEnvironment = { machine, processes, allocations, queues, handleOf, deviceOf, submitTo };
  for (const t of s.threads ?? []) {
    let body!: ScenarioThreadBody; // made by createThread, at once
    const thread = processes.get(t.process)!.createThread(t.name,
      (cpu) => (body = new ScenarioThreadBody(t, environment, state, cpu)) as unknown as Generator<ThreadOp, unknown, WaitResult>,
      { mayStillSignal: () => body.mayStillSignal() });
    threads.set(t.name, thread);
    positions.set(thread, body);
  }

  scheduleFaults(s, machine);
  return { scenario: s, source, machine, state, processes, threads, positions, handles, allocations, queues };
}

/**
 * The set-up's way to submit GPU commands (a queue's first commands, a thread's submit steps): to a hardware queue
 * (one submission) or to a kernel-mode context (waits, signal packets, command buffers).
 */
function submitter(s: Scenario, processes: Map<string, RuntimeProcess>, queues: ScenarioSetup['queues'], allocations: ScenarioSetup['allocations'],
                   handleOf: (process: string, fence: string, adapter?: string) => number): (queue: string, list: GpuCommand[]) => void {
  /** The reads / writes a list of commands declares (useAllocation). */
  const usesOf = (list: GpuCommand[]) => {
    const reads: AllocationUse[] = [], writes: AllocationUse[] = [];
    for (const c of list) {
      if (!c.useAllocation) continue;
      const u = c.useAllocation;
      const entry = { hAllocation: allocations.get(u.allocation)!.hAllocation, ...(u.offset !== undefined ? { Offset: u.offset } : {}),
        ...(u.length !== undefined ? { Length: u.length } : {}), ...(u.bytes !== undefined ? { data: bytesOf(u.bytes) } : {}) };
      (u.write ? writes : reads).push(entry);
    }
    return { ...(reads.length ? { reads } : {}), ...(writes.length ? { writes } : {}) };
  };

  const commandsFor = (process: string, adapter: string, list: GpuCommand[]) => list.filter((c) => !c.useAllocation).map((c) => {
    if (c.wait) return { wait: { hSyncObject: handleOf(process, c.wait.fence, adapter), value: BigInt(c.wait.value) } };
    if (c.signal) return { signal: { hSyncObject: handleOf(process, c.signal.fence, adapter), value: BigInt(c.signal.value) } };
    return { work: { durationNs: c.work!.durationNs } };
  });
  const rings = ringEntriesFor(s);
  return (queue: string, list: GpuCommand[]) => {
    const q = queues.get(queue)!;
    const rp = processes.get(q.process)!;
    if (q.hHwQueue) {
      try {
        rp.submit({ hHwQueue: q.hHwQueue, commands: commandsFor(q.process, q.adapter, list), ...usesOf(list) });
      } catch (error) {
        // a ring filled by submissions faster than the GPU drains them: what a scenario file can change
        if (!(error instanceof WddmError) || error.status !== 'INSUFFICIENT_RESOURCES' || error.parameter !== 'commands') throw error;
        const index = s.machine.adapters.findIndex((a) => a.name === q.adapter);
        throw new WddmError('INSUFFICIENT_RESOURCES', `queue ${queue}: ${error.message.replace(/; let the GPU drain it.*$/, '')}; in a scenario file, raise machine.adapters[${index}].limits.ringEntries `
          + `(now ${rings[index] ?? DEFAULT_LIMITS.ringEntries}), or let the thread wait until the queue has run its earlier commands (a wait step on a fence it signals) before this submit`,
        { parameter: `machine.adapters[${index}].limits.ringEntries`, value: rings[index] ?? DEFAULT_LIMITS.ringEntries, expected: error.expected });
      }
      return;
    }
    let buffer: ({ work: { durationNs: number } } | { fenceWrite: { hSyncObject: number; value: bigint } })[] = [];
    let uses: GpuCommand[] = [];
    const flush = () => { if (buffer.length) rp.submitCommand({ hContext: q.hContext, commands: buffer, ...usesOf(uses) }); buffer = []; uses = []; };
    for (const c of list) {
      if (c.useAllocation) uses.push(c);
      else if (c.work) buffer.push({ work: { durationNs: c.work.durationNs } });
      else if (c.fenceWrite) buffer.push({ fenceWrite: { hSyncObject: handleOf(q.process, c.fenceWrite.fence, q.adapter), value: BigInt(c.fenceWrite.value) } });
      else if (c.wait) { flush(); rp.waitForSynchronizationObjectFromGpu({ hContext: q.hContext, objects: [handleOf(q.process, c.wait.fence, q.adapter)], values: [BigInt(c.wait.value)] }); }
      else if (c.signal) { flush(); rp.signalSynchronizationObjectFromGpu({ hContext: q.hContext, objects: [handleOf(q.process, c.signal.fence, q.adapter)], values: [BigInt(c.signal.value)] }); }
    }
    flush();
  };
}

/** Injected faults: scheduler events (owner "scenario", kind fault {index}) naming the file's faults[index]. */
function scheduleFaults(s: Scenario, machine: Machine): void {
  const faults = s.faults ?? [];
  machine.scheduler.register('scenario', (event) => {
    const i = event.args.index as number;
    const f = faults[i];
    try {
      if (f.removeDevice) machine.removeDevice(f.removeDevice.adapter, f.removeDevice.reason ?? 'TDR');
      if (f.removeAdapter) machine.removeAdapter(f.removeAdapter.adapter, f.removeAdapter.reason ?? 'adapter removed');
      if (f.collapseInterrupts) machine.injectFault({ collapseInterrupts: { adapter: f.collapseInterrupts.adapter, windowNs: f.collapseInterrupts.windowNs } });
      if (f.forceLogOverrun) machine.injectFault({ forceLogOverrun: { adapter: f.forceLogOverrun.adapter, ...(f.forceLogOverrun.queue !== undefined ? { queue: f.forceLogOverrun.queue } : {}) } });
    } catch (error) {
      machine.trace.record('fault', 'scenario', 'fault injection refused', { fault: `faults[${i}]`, error: (error as Error).message });
    }
  });
  for (const [i, f] of faults.entries()) machine.scheduler.at(f.atNs, 'scenario', 'fault', { index: i }, `faults[${i}]`);
}

/** Where a scenario thread is: the file's thread, the step it runs next (-1: its start, with its startNs sleep), and what its next resumption's value is for. */
export interface ThreadPosition {
  readonly spec: NonNullable<Scenario['threads']>[number];
  readonly step: number;
  readonly resuming: 'wait' | 'event' | undefined;
}

const bytesOf = (hex: string) => Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));
const hexOf = (bytes: Uint8Array) => [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');

/** What a scenario thread's steps use, fixed once set up (functions and maps no step changes). */
interface ThreadEnvironment {
  readonly machine: Machine;
  readonly processes: Map<string, RuntimeProcess>;
  readonly allocations: Map<string, { process: string; adapter: string; hAllocation: number }>;
  readonly queues: Map<string, { process: string; adapter: string; hHwQueue: number; hContext: number }>;
  handleOf(process: string, fence: string, adapter?: string): number;
  deviceOf(process: string, adapter: string): number;
  submitTo(queue: string, list: GpuCommand[]): void;
}

/**
 * What a thread's steps never change (the file's thread, the environment), under a symbol: a schedule
 * explorer hashes and snapshots a machine's objects by their string keys, and these are no state.
 */
const FIXED = Symbol('scenario thread: fixed');

/** What the value a thread resumes with is for: a wait's outcome, a waitWithEvent's, or nothing. */
type Resumption = { kind: 'wait'; record: WaitRecord } | { kind: 'event'; record: WaitRecord; setAtOnce: boolean } | undefined;

/**
 * A scenario thread as a plain iterator object, not a generator: its position is in its fields, which a
 * snapshot can keep (src/explore/snapshot.ts), where a generator's cannot be. It behaves as
 *
 *   function* (cpu) {
 *     if (t.startNs) yield cpu.sleep(t.startNs);
 *     for (const step of t.steps) { run the step: a blocking one yields its operation, a wait records its outcome }
 *   }
 */
class ScenarioThreadBody implements ThreadPosition {
  /** The step to run next; -1 before the start (its startNs sleep). */
  step = -1;
  /** What the next resumption's value is for. */
  resumption: Resumption = undefined;
  /** The pointers of this thread's Lock2 mappings, by allocation name. */
  readonly locks = new Map<string, bigint>();
  private readonly [FIXED]: { spec: NonNullable<Scenario['threads']>[number]; environment: ThreadEnvironment; cpu: Cpu };

  constructor(spec: NonNullable<Scenario['threads']>[number], environment: ThreadEnvironment, readonly state: ScenarioState, cpu: Cpu) {
    this[FIXED] = { spec, environment, cpu };
  }

  get spec(): NonNullable<Scenario['threads']>[number] { return this[FIXED].spec; }
  get resuming(): 'wait' | 'event' | undefined { return this.resumption?.kind; }

  next(input?: WaitResult): IteratorResult<ThreadOp, unknown> {
    const { spec: t, cpu } = this[FIXED];
    const resumed = this.resumption;
    this.resumption = undefined;
    if (resumed?.kind === 'wait') Object.assign(resumed.record, { outcome: outcomeOf(input!), index: input!.index, atNs: input!.timeNs });
    else if (resumed?.kind === 'event') {
      const set = input!.status === 'SUCCESS';
      Object.assign(resumed.record, { outcome: set ? (resumed.setAtOnce ? 'satisfiedAtOnce' : 'woken') : 'timedOut', atNs: cpu.nowNs });
    }
    if (this.step < 0) {
      this.step = 0;
      if (t.startNs) return { done: false, value: cpu.sleep(t.startNs) };
    }
    while (this.step < t.steps.length) {
      const k = this.step++;
      const op = this.run(k, t.steps[k]);
      if (op) return { done: false, value: op };
    }
    return { done: true, value: undefined };
  }

  return(value: unknown): IteratorResult<ThreadOp, unknown> { this.step = this[FIXED].spec.steps.length; this.resumption = undefined; return { done: true, value }; }
  throw(error: unknown): IteratorResult<ThreadOp, unknown> { this.step = this[FIXED].spec.steps.length; this.resumption = undefined; throw error; }

  /** What the thread may still signal: the CPU signals and the submitted signals and fence writes of the steps it has not run (machine.stuck()). */
  mayStillSignal(): ThreadSignal[] {
    const { spec: t, environment: env } = this[FIXED];
    return t.steps.slice(Math.max(0, this.step)).flatMap((step): ThreadSignal[] => {
      if (step.signal) return step.signal.fences.map((f, i) => ({ hSyncObject: env.handleOf(t.process, f), value: BigInt(step.signal!.values[i]) }));
      if (!step.submit) return [];
      const q = env.queues.get(step.submit.queue)!;
      return step.submit.commands.flatMap((c): ThreadSignal[] => {
        const written = c.signal ?? c.fenceWrite;
        return written ? [{ hSyncObject: env.handleOf(q.process, written.fence, q.adapter), value: BigInt(written.value), process: env.processes.get(q.process)! }] : [];
      });
    });
  }

  /** Step k: what it does; a blocking step returns the operation it waits in. */
  private run(k: number, step: ThreadStep): ThreadOp | undefined {
    const { spec: t, environment: env, cpu } = this[FIXED];
    const rp = env.processes.get(t.process)!;
    const waitArgs = (w: WaitStep) => ({
      objects: w.fences.map((f) => env.handleOf(t.process, f)), values: w.values.map((v) => BigInt(v)),
      waitAny: w.any ?? false, ...(w.timeoutNs !== undefined ? { timeoutNs: w.timeoutNs } : {}),
    });
    if (step.wait) {
      const record: WaitRecord = { id: step.wait.id, thread: t.name, step: k, outcome: 'pending' };
      this.state.waits.push(record);
      this.resumption = { kind: 'wait', record };
      return cpu.wait(waitArgs(step.wait));
    }
    if (step.waitWithEvent) {
      const w = step.waitWithEvent;
      const record: WaitRecord = { id: w.id, thread: t.name, step: k, outcome: 'pending' };
      this.state.waits.push(record);
      const hEvent = rp.createEvent(w.id ?? `${t.name}.step${k}`);
      const { timeoutNs, ...rest } = waitArgs(w) as ReturnType<typeof waitArgs> & { timeoutNs?: number };
      rp.waitWithEvent({ ...rest, hAsyncEvent: hEvent });
      this.resumption = { kind: 'event', record, setAtOnce: rp.isEventSet(hEvent) };
      return cpu.waitEvent(hEvent, timeoutNs);
    }
    if (step.signal) {
      rp.signal({ objects: step.signal.fences.map((f) => env.handleOf(t.process, f)), values: step.signal.values.map((v) => BigInt(v)),
        ...(step.signal.allowFenceRewind ? { flags: { allowFenceRewind: true } } : {}) });
    } else if (step.sleep) {
      return cpu.sleep(step.sleep.durationNs);
    } else if (step.submit) {
      env.submitTo(step.submit.queue, step.submit.commands);
    } else if (step.lock) {
      const a = env.allocations.get(step.lock.allocation)!;
      this.locks.set(step.lock.allocation, rp.lock2({ hDevice: env.deviceOf(t.process, a.adapter), hAllocation: a.hAllocation }).pData);
    } else if (step.unlock) {
      const a = env.allocations.get(step.unlock.allocation)!;
      rp.unlock2({ hDevice: env.deviceOf(t.process, a.adapter), hAllocation: a.hAllocation });
      this.locks.delete(step.unlock.allocation);
    } else if (step.cpuWrite) {
      rp.cpuStore(this.locks.get(step.cpuWrite.allocation)! + BigInt(step.cpuWrite.offset ?? 0), bytesOf(step.cpuWrite.bytes));
    } else if (step.cpuRead) {
      this.state.cpuReads.set(step.cpuRead.id, hexOf(rp.cpuLoad(this.locks.get(step.cpuRead.allocation)! + BigInt(step.cpuRead.offset ?? 0), step.cpuRead.length)));
    } else if (step.destroyAllocation) {
      const d = step.destroyAllocation;
      const a = env.allocations.get(d.allocation)!;
      const result = rp.destroyAllocation2({ hDevice: env.deviceOf(t.process, a.adapter), hAllocations: [a.hAllocation],
        Flags: { AssumeNotInUse: d.assumeNotInUse ?? false, SynchronousDestroy: d.synchronous ?? false } });
      if (result.wait) return result.wait;
    } else if (step.makeResident) {
      const a = env.allocations.get(step.makeResident.allocation)!;
      rp.makeResident({ hDevice: env.deviceOf(t.process, a.adapter), hAllocation: a.hAllocation, ...(step.makeResident.segment !== undefined ? { segment: step.makeResident.segment } : {}) });
    } else if (step.evict) {
      const a = env.allocations.get(step.evict.allocation)!;
      rp.evict({ hDevice: env.deviceOf(t.process, a.adapter), hAllocation: a.hAllocation });
    } else if (step.recreateLogBuffer) {
      env.machine.recreateNativeFenceLogBuffer(rp, env.queues.get(step.recreateLogBuffer.queue)!.hHwQueue, step.recreateLogBuffer.log);
    } else if (step.destroyFence) {
      rp.destroySynchronizationObject(env.handleOf(t.process, step.destroyFence.fence));
    }
    return undefined;
  }
}

/** One line for the stuck expectation: what is blocked, and why (deadlocks, lost wake-ups, values never signalled). */
function stuckSummary(report: StuckReport): string {
  if (!report.stuck) return 'nothing stuck';
  const parts = [counted(report.queues.length, 'queue') + ' blocked', counted(report.waiters.length, 'CPU waiter') + ' pending', counted(report.threads.length, 'CPU thread') + ' unfinished'];
  if (report.deadlocks.length) parts.push(`${counted(report.deadlocks.length, 'deadlock')}: ${report.deadlocks.map((d) => d.cycle.join(' -> ')).join('; ')}`);
  if (report.lostWakeups.length) parts.push(`${counted(report.lostWakeups.length, 'lost wake-up')}: ${report.lostWakeups.map((l) => l.item).join('; ')}`);
  if (report.neverSignalled.length) parts.push(`never signalled: ${report.neverSignalled.map((n) => `${n.item} ${n.need}`).join('; ')}`);
  return `stuck: ${parts.join(', ')}`;
}

/**
 * What the OS itself sees going wrong in a run (expect.contractViolations counts it): lost wake-ups
 * (machine.lostWakeups(): still waiting, or timed out, with the value reached), and the faults the OS's
 * own checks record as contract violations (a native fence log read that breaks LOG-07, say). The
 * contract checker's own violations (`run --check`) are reported apart, by rule.
 */
export function lostWakeupsAndOsFaults(machine: Machine): string[] {
  const found = machine.lostWakeups().map(lostWakeupText);
  for (const e of machine.trace.events) if (e.kind === 'fault' && /contract/i.test(e.name) && !e.name.startsWith('contract violation ')) found.push(`${e.name} (${e.actor})`);
  return found;
}
/** The former name of lostWakeupsAndOsFaults (what it counts was never the contract checker's violations). */
export const contractViolations = lostWakeupsAndOsFaults;

/**
 * The file's expectations, and the implicit ones (no bug check, no contract violation, nothing stuck, no
 * deadlock, no failed thread), judged on the machine as it is now (after a run, or at a schedule
 * explorer's terminal state). `expect` replaces the file's section (the explorer leaves out what it
 * does not judge); each result carries its file:line:col.
 */
export function checkExpectations(setup: ScenarioSetup, stuck: StuckReport, expect: NonNullable<Scenario['expect']> = setup.scenario.expect ?? {}): ExpectationResult[] {
  const s = setup.scenario;
  return expectationResults(s, setup.machine, setup.state.waits, setup.threads, setup.handles, setup.allocations, setup.state.cpuReads, stuck, expect)
    .map((e) => ({ ...e, ...(e.path !== '(implicit)' ? locationOf(s, e.path) : undefined) }));
}

function expectationResults(s: Scenario, machine: Machine, waits: WaitRecord[], threads: Map<string, CpuThread>, handles: Map<string, number>,
  allocations: Map<string, { hAllocation: number }>, cpuReads: Map<string, string>, stuck: StuckReport, e: NonNullable<Scenario['expect']>): ExpectationResult[] {
  const out: ExpectationResult[] = [];
  const push = (path: string, description: string, expected: unknown, actual: unknown) =>
    out.push({ path, description, expected: String(expected), actual: String(actual), ok: String(expected) === String(actual) });
  const summary = machine.summary();
  for (const [name, raw] of Object.entries(e.fences ?? {})) {
    const f = s.fences!.find((x) => x.name === name)!;
    const rp = machine.processes.find((p) => p.name === f.process)!;
    let actual: string;
    try { actual = rp.readFenceValue(handles.get(`${f.process}\u0000${name}`)!).toString(); } catch (error) { actual = `unreadable (${(error as Error).message})`; }
    push(`expect.fences.${name}`, `fence ${name} ends at ${BigInt(raw)}`, BigInt(raw), actual);
  }
  for (const [id, raw] of Object.entries(e.waits ?? {})) {
    const want = typeof raw === 'string' ? { outcome: raw } : raw;
    const got = waits.find((w) => w.id === id);
    push(`expect.waits.${id}`, `wait ${id} is ${want.outcome}`, want.outcome, got ? got.outcome : 'never started');
    if ('index' in want && want.index !== undefined) push(`expect.waits.${id}.index`, `wait ${id} was satisfied by fence #${want.index}`, want.index, got?.index ?? 'none');
    if ('atNs' in want && want.atNs !== undefined) push(`expect.waits.${id}.atNs`, `wait ${id} completed at ${want.atNs} ns`, want.atNs, got?.atNs ?? 'never');
  }
  for (const [name, count] of Object.entries(e.interrupts ?? {})) {
    push(`expect.interrupts.${name}`, `adapter ${name} raised ${counted(count, 'interrupt')}`, count, summary.adapters.find((a) => a.name === name)!.interruptsRaised);
  }
  for (const [name, count] of Object.entries(e.counters ?? {})) {
    push(`expect.counters.${name}`, `OS counter ${name} is ${count}`, count, (summary.os as unknown as Record<string, number>)[name]);
  }
  for (const [name, state] of Object.entries(e.allocations ?? {})) {
    const info = machine.vidmm.info(allocations.get(name)!.hAllocation);
    push(`expect.allocations.${name}`, `allocation ${name} is ${state}`, state, info?.state ?? 'unknown');
  }
  for (const [id, bytes] of Object.entries(e.reads ?? {})) {
    push(`expect.reads.${id}`, `cpuRead ${id} read ${bytes.toLowerCase()}`, bytes.toLowerCase(), cpuReads.get(id) ?? 'never read');
  }
  for (const [name, count] of Object.entries(e.crossAdapterCounters ?? {})) {
    push(`expect.crossAdapterCounters.${name}`, `cross-adapter counter ${name} is ${count}`, count, (machine.crossAdapterCounters() as unknown as Record<string, number>)[name]);
  }
  for (const [name, count] of Object.entries(e.vidmmCounters ?? {})) {
    push(`expect.vidmmCounters.${name}`, `VidMm counter ${name} is ${count}`, count, (summary.vidmm as unknown as Record<string, number>)[name]);
  }
  for (const [name, count] of Object.entries(e.logCounters ?? {})) {
    push(`expect.logCounters.${name}`, `log counter ${name} is ${count}`, count, (summary.logs as unknown as Record<string, number>)[name]);
  }
  for (const [name, count] of Object.entries(e.legacyCounters ?? {})) {
    push(`expect.legacyCounters.${name}`, `monitored-fence counter ${name} is ${count}`, count, (summary.legacy as unknown as Record<string, number>)[name]);
  }
  for (const [name, state] of Object.entries(e.threads ?? {})) {
    const t = threads.get(name)!;
    const actual = t.state === 'done' || t.state === 'failed' ? t.state : 'blocked';
    push(`expect.threads.${name}`, `thread ${name} is ${state}`, state, actual + (t.state === 'failed' && state !== 'failed' ? ` (${(t.error as Error)?.message})` : ''));
  }
  for (const [name, state] of Object.entries(e.adapters ?? {})) {
    push(`expect.adapters.${name}`, `adapter ${name} is ${state}`, state, summary.adapters.find((a) => a.name === name)!.state);
  }
  const blocked = new Set(stuck.queues.map((q) => q.queue));
  for (const [name, want] of Object.entries(e.blockedQueues ?? {})) {
    push(`expect.blockedQueues.${name}`, `queue ${name} ${want ? 'is' : 'is not'} blocked at the end`, want, blocked.has(name));
  }
  const bugChecks = summary.bugChecks.length;
  push(e.bugChecks === undefined ? '(implicit)' : 'expect.bugChecks', `${e.bugChecks ?? 0} bug checks`, e.bugChecks ?? 0,
    bugChecks + (bugChecks ? ` (${summary.bugChecks.map((b) => `${b.adapter}: ${b.code}`).join('; ')})` : ''));
  const violations = lostWakeupsAndOsFaults(machine);
  push(e.contractViolations === undefined ? '(implicit)' : 'expect.contractViolations', `${e.contractViolations ?? 0} lost wake-ups or OS-detected faults`, e.contractViolations ?? 0,
    violations.length + (violations.length ? ` (${violations.join('; ')})` : ''));
  // Liveness: nothing may be left blocked unless the file expects it (expect.stuck), nor deadlocked (expect.deadlock).
  const stuckWanted = e.stuck ?? e.deadlock ?? false;
  push(e.stuck === undefined && e.deadlock === undefined ? '(implicit)' : e.stuck !== undefined ? 'expect.stuck' : 'expect.deadlock',
    stuckWanted ? 'the run ends stuck' : 'the run ends with nothing stuck', stuckWanted ? 'stuck' : 'nothing stuck',
    stuck.stuck ? (stuckWanted ? 'stuck' : stuckSummary(stuck)) : 'nothing stuck');
  if (e.deadlock !== undefined || stuck.deadlocks.length) {
    const wanted = e.deadlock ?? false;
    push(e.deadlock === undefined ? '(implicit)' : 'expect.deadlock', wanted ? 'the run ends in a deadlock' : 'the run ends in no deadlock',
      wanted ? 'deadlock' : 'no deadlock', stuck.deadlocks.length ? (wanted ? 'deadlock' : `deadlock: ${stuck.deadlocks.map((d) => d.cycle.join(' -> ')).join('; ')}`) : 'no deadlock');
  }
  // threads that failed are always reported (an exception in a step is never what a scenario wants unless it says so)
  for (const [name, t] of [...threads.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (t.state === 'failed' && e.threads?.[name] !== 'failed') push('(implicit)', `thread ${name} does not fail`, 'no failure', `failed: ${(t.error as Error)?.message}`);
  }
  return out.map((r) => ({ ...r, ok: r.expected === r.actual }));
}
