// Running a validated scenario on a fresh machine, then checking its
// expectations. Set-up calls that the model refuses (e.g. a native fence on an
// adapter without NativeGpuFence) are reported as ScenarioError problems with
// the path of the item that caused them: nothing has run yet at that point.

import { DEFAULT_LIMITS } from '../machine/options.js';
import { createMachine, loadDriverModule, timeOverflow, type AdapterOptions, type DriverModule, type Machine, type MachineObserver } from '../machine/machine.js';
import { eventLimitError } from '../base/scheduler.js';
import { MAX_VIRTUAL_TIME_NS } from '../base/validate.js';
import { counted } from '../base/words.js';
import type { TraceEvent } from '../base/trace.js';
import type { RuntimeProcess, CpuThread, ThreadOp, ThreadSignal } from '../user/runtime.js';
import type { WaitResult } from '../os/dxgkrnl.js';
import type { AllocationUse } from '../os/vidmm/vidmm.js';
import type { StuckReport } from '../machine/liveness.js';
import { lostWakeupText } from '../machine/lost-wakeups.js';
import { ScenarioError, locationOf, type ScenarioProblem } from './load.js';
import { ringEntriesFor } from './rings.js';
import { WddmError } from '../base/errors.js';
import type { Scenario, GpuCommand, WaitOutcome, WaitStep } from './types.js';

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

export async function runScenario(scenario: Scenario, options: RunOptions = {}): Promise<ScenarioResult> {
  const s = scenario;
  const seed = options.seed ?? s.machine.seed ?? 1;
  const source = options.source ?? s.name;
  const problems: ScenarioProblem[] = [];
  const setup = <T>(path: string, action: () => T): T | undefined => {
    try { return action(); } catch (error) {
      problems.push({ path, ...locationOf(s, path), message: `${path}: the model refused it at set-up: ${(error as Error).message}` });
      return undefined;
    }
  };
  // The conformance suite's driver under test replaces every adapter's driver (the file's flags and modules do not apply).
  const withDrivers = options.driverModule
    ? s.machine.adapters.map((a) => ({ ...a, driver: { module: options.driverModule } }) as AdapterOptions)
    : await adaptersWithDrivers(s, source);
  // each ring as long as the file's longest submission into it, unless the file says (rings.ts)
  const rings = ringEntriesFor(s);
  const adapters = withDrivers.map((a, i) => (rings[i] === undefined || s.machine.adapters[i].limits?.ringEntries !== undefined ? a
    : { ...a, limits: { ...a.limits, ringEntries: rings[i] } }));
  let machine!: Machine;
  try {
    machine = await createMachine({ seed, os: s.machine.os, adapters, ...(s.machine.timing ? { timing: s.machine.timing } : {}),
      ...(s.machine.ioCoherent !== undefined ? { ioCoherent: s.machine.ioCoherent } : {}), ...(s.machine.doorbell ? { doorbell: s.machine.doorbell } : {}),
      ...(s.machine.limits ? { limits: s.machine.limits } : {}), ...(options.observers ? { observers: options.observers } : {}) });
  } catch (error) {
    // the option createMachine names (e.g. "doorbell.ringEntries"), where it is in the file
    const parameter = (error as { parameter?: unknown }).parameter;
    const path = typeof parameter === 'string' && locationOf(s, `machine.${parameter}`) ? `machine.${parameter}` : 'machine';
    throw new ScenarioError(source, [{ path, ...locationOf(s, path), message: `${path}: the model refused it: ${(error as Error).message}` }]);
  }
  if (options.onTraceEvent) {
    const sink = options.onTraceEvent;
    for (const e of machine.trace.events) sink(e); // what createMachine recorded (the ring holds all of it yet)
    machine.trace.onEvent(sink);
  }

  // processes and their devices (one per adapter they use, opened on first use)
  const processes = new Map<string, RuntimeProcess>();
  s.processes.forEach((p, i) => setup(`processes[${i}]`, () => processes.set(p.name, machine.createProcess(p.name))));
  if (problems.length) throw new ScenarioError(source, problems);
  const devices = new Map<string, number>();
  const deviceOf = (process: string, adapter: string): number => {
    const key = `${process}\u0000${adapter}`;
    let h = devices.get(key);
    if (h === undefined) {
      const rp = processes.get(process)!;
      h = rp.createDevice({ hAdapter: rp.openAdapter(adapter) });
      devices.set(key, h);
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
  const bytesOf = (hex: string) => Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));
  const hexOf = (bytes: Uint8Array) => [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');
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
  const queues = new Map<string, { process: string; adapter: string; hHwQueue: number; hContext: number }>();
  /** Submits GPU commands to a hardware queue (one submission) or to a kernel-mode context (waits, signal packets, command buffers). */
  const submitTo = (queue: string, list: GpuCommand[]) => {
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

  // CPU threads
  const waits: WaitRecord[] = [];
  const cpuReads = new Map<string, string>();
  const threads = new Map<string, CpuThread>();
  for (const t of s.threads ?? []) {
    const rp = processes.get(t.process)!;
    const waitArgs = (w: WaitStep) => ({
      objects: w.fences.map((f) => handleOf(t.process, f)), values: w.values.map((v) => BigInt(v)),
      waitAny: w.any ?? false, ...(w.timeoutNs !== undefined ? { timeoutNs: w.timeoutNs } : {}),
    });
    const locks = new Map<string, bigint>();
    /** The step the thread is at (-1 before its first): what it may still signal is in the steps after it (machine.stuck()). */
    let position = -1;
    const mayStillSignal = (): ThreadSignal[] => t.steps.slice(position + 1).flatMap((step): ThreadSignal[] => {
      if (step.signal) return step.signal.fences.map((f, i) => ({ hSyncObject: handleOf(t.process, f), value: BigInt(step.signal!.values[i]) }));
      if (!step.submit) return [];
      const q = queues.get(step.submit.queue)!;
      return step.submit.commands.flatMap((c): ThreadSignal[] => {
        const written = c.signal ?? c.fenceWrite;
        return written ? [{ hSyncObject: handleOf(q.process, written.fence, q.adapter), value: BigInt(written.value), process: processes.get(q.process)! }] : [];
      });
    });
    threads.set(t.name, rp.createThread(t.name, function* (cpu): Generator<ThreadOp, unknown, WaitResult> {
      if (t.startNs) yield cpu.sleep(t.startNs);
      for (const [k, step] of t.steps.entries()) {
        position = k;
        if (step.wait) {
          const record: WaitRecord = { id: step.wait.id, thread: t.name, step: k, outcome: 'pending' };
          waits.push(record);
          const result = yield cpu.wait(waitArgs(step.wait));
          Object.assign(record, { outcome: outcomeOf(result), index: result.index, atNs: result.timeNs });
        } else if (step.waitWithEvent) {
          const w = step.waitWithEvent;
          const record: WaitRecord = { id: w.id, thread: t.name, step: k, outcome: 'pending' };
          waits.push(record);
          const hEvent = rp.createEvent(w.id ?? `${t.name}.step${k}`);
          const { timeoutNs, ...rest } = waitArgs(w) as ReturnType<typeof waitArgs> & { timeoutNs?: number };
          rp.waitWithEvent({ ...rest, hAsyncEvent: hEvent });
          const setAtOnce = rp.isEventSet(hEvent);
          const set = (yield cpu.waitEvent(hEvent, timeoutNs)).status === 'SUCCESS';
          Object.assign(record, { outcome: set ? (setAtOnce ? 'satisfiedAtOnce' : 'woken') : 'timedOut', atNs: cpu.nowNs });
        } else if (step.signal) {
          rp.signal({ objects: step.signal.fences.map((f) => handleOf(t.process, f)), values: step.signal.values.map((v) => BigInt(v)),
            ...(step.signal.allowFenceRewind ? { flags: { allowFenceRewind: true } } : {}) });
        } else if (step.sleep) {
          yield cpu.sleep(step.sleep.durationNs);
        } else if (step.submit) {
          submitTo(step.submit.queue, step.submit.commands);
        } else if (step.lock) {
          const a = allocations.get(step.lock.allocation)!;
          locks.set(step.lock.allocation, rp.lock2({ hDevice: deviceOf(t.process, a.adapter), hAllocation: a.hAllocation }).pData);
        } else if (step.unlock) {
          const a = allocations.get(step.unlock.allocation)!;
          rp.unlock2({ hDevice: deviceOf(t.process, a.adapter), hAllocation: a.hAllocation });
          locks.delete(step.unlock.allocation);
        } else if (step.cpuWrite) {
          rp.cpuStore(locks.get(step.cpuWrite.allocation)! + BigInt(step.cpuWrite.offset ?? 0), bytesOf(step.cpuWrite.bytes));
        } else if (step.cpuRead) {
          cpuReads.set(step.cpuRead.id, hexOf(rp.cpuLoad(locks.get(step.cpuRead.allocation)! + BigInt(step.cpuRead.offset ?? 0), step.cpuRead.length)));
        } else if (step.destroyAllocation) {
          const d = step.destroyAllocation;
          const a = allocations.get(d.allocation)!;
          const result = rp.destroyAllocation2({ hDevice: deviceOf(t.process, a.adapter), hAllocations: [a.hAllocation],
            Flags: { AssumeNotInUse: d.assumeNotInUse ?? false, SynchronousDestroy: d.synchronous ?? false } });
          if (result.wait) yield result.wait;
        } else if (step.makeResident) {
          const a = allocations.get(step.makeResident.allocation)!;
          rp.makeResident({ hDevice: deviceOf(t.process, a.adapter), hAllocation: a.hAllocation, ...(step.makeResident.segment !== undefined ? { segment: step.makeResident.segment } : {}) });
        } else if (step.evict) {
          const a = allocations.get(step.evict.allocation)!;
          rp.evict({ hDevice: deviceOf(t.process, a.adapter), hAllocation: a.hAllocation });
        } else if (step.recreateLogBuffer) {
          machine.recreateNativeFenceLogBuffer(rp, queues.get(step.recreateLogBuffer.queue)!.hHwQueue, step.recreateLogBuffer.log);
        } else if (step.destroyFence) {
          rp.destroySynchronizationObject(handleOf(t.process, step.destroyFence.fence));
        }
      }
      return undefined;
    }, { mayStillSignal }));
  }

  // injected faults: scheduler events (owner "scenario", kind fault {index}) naming the file's faults[index]
  const faults = s.faults ?? [];
  machine.scheduler.register('scenario', (event) => {
    const i = event.args.index as number;
    const f = faults[i];
    try {
      if (f.removeDevice) machine.removeDevice(f.removeDevice.adapter, f.removeDevice.reason ?? 'TDR');
      if (f.collapseInterrupts) machine.injectFault({ collapseInterrupts: { adapter: f.collapseInterrupts.adapter, windowNs: f.collapseInterrupts.windowNs } });
      if (f.forceLogOverrun) machine.injectFault({ forceLogOverrun: { adapter: f.forceLogOverrun.adapter, ...(f.forceLogOverrun.queue !== undefined ? { queue: f.forceLogOverrun.queue } : {}) } });
    } catch (error) {
      machine.trace.record('fault', 'scenario', 'fault injection refused', { fault: `faults[${i}]`, error: (error as Error).message });
    }
  });
  for (const [i, f] of faults.entries()) machine.scheduler.at(f.atNs, 'scenario', 'fault', { index: i }, `faults[${i}]`);

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
  const expectations = checkExpectations(s, machine, waits, threads, handles, allocations, cpuReads, stuck)
    .map((e) => ({ ...e, ...(e.path !== '(implicit)' ? locationOf(s, e.path) : undefined) }));
  return { scenario: s, source, machine, seed, waits, expectations, passed: expectations.every((e) => e.ok), events, stuck };
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

/** Lost wake-ups (machine.lostWakeups(): still waiting, or timed out, with the value reached), plus any recorded contract violation. */
export function contractViolations(machine: Machine): string[] {
  const found = machine.lostWakeups().map(lostWakeupText);
  for (const e of machine.trace.events) if (e.kind === 'fault' && /contract/i.test(e.name)) found.push(`${e.name} (${e.actor})`);
  return found;
}

function checkExpectations(s: Scenario, machine: Machine, waits: WaitRecord[], threads: Map<string, CpuThread>, handles: Map<string, number>,
  allocations: Map<string, { hAllocation: number }>, cpuReads: Map<string, string>, stuck: StuckReport): ExpectationResult[] {
  const out: ExpectationResult[] = [];
  const push = (path: string, description: string, expected: unknown, actual: unknown) =>
    out.push({ path, description, expected: String(expected), actual: String(actual), ok: String(expected) === String(actual) });
  const e = s.expect ?? {};
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
  const violations = contractViolations(machine);
  push(e.contractViolations === undefined ? '(implicit)' : 'expect.contractViolations', `${e.contractViolations ?? 0} contract violations`, e.contractViolations ?? 0,
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
