// A scenario file as the explorer's World: the file's machine and events, set
// up as `wddm-fence run` sets them up (src/scenario-files/run.ts setUpScenario),
// on a machine cut into steps (schedule.granularity and osGranularity 'step'),
// so that the explorer chooses among the file's own events: its queues'
// commands (each native signal in its five steps), its CPU threads' steps,
// the OS's steps (waiter add, MonitoredValue write and the driver's CMP steps,
// re-read, retire, log read, log fallback, cross-adapter notification), the
// interrupts, the file's faults and timeouts.
//
//   time 'timed' (default)  events happen at their virtual times: what can run
//                           next is what is due first. Each latency with jitter
//                           (a command's time, an interrupt's delivery, the
//                           doorbell's) takes either end of its span, low or
//                           high: both are explored (World.latencies), so ties
//                           and near-ties are explored both ways
//   time 'untimed'          every event is due at once (schedule.time
//                           'untimed'): any order that keeps each engine's,
//                           thread's and OS operation's own order; a timeout may
//                           fire at any point before its wait is satisfied
//
// Judged (World.invariants): no-lost-wakeup, monitored-value and
// current-value-not-torn as for the generated machine, steps-run, and
// `expectations`: at every terminal state the file's `expect` (less what it
// marks timedOnly, when untimed) and the implicit ones of `wddm-fence run`
// (nothing stuck unless expected, no deadlock, no bug check, no failed thread).
// After a fault the explorer injected (--faults N) only the implicit ones are
// judged: the file's expect describes its own run, not one with a TDR in it.
//
// Kept out of the library's bundle (src/explore/index.ts does not export it):
// it reads scenario files, whose parser the library does not carry.

import { createMachineSync, type AdapterOptions, type Machine, type MachineOptions } from '../machine/machine.js';
import type { DriverModule } from '../driver/module.js';
import type { CpuThread } from '../user/runtime.js';
import { setUpScenario, scenarioMachineOptions, checkExpectations, machineRefused, type ScenarioSetup, type ThreadPosition } from '../scenario-files/run.js';
import type { Scenario, ThreadStep, GpuCommand } from '../scenario-files/types.js';
import { UINT64_MAX } from '../base/wddm.js';
import { SCENARIO_INVARIANTS, type Violation } from './invariants.js';
import { linkScenario } from './components.js';
import { applyVariantToOs, variantDriver, type Variant } from './variants.js';
import { LatencyChoices, explorerEvent, type TimeMode, type World, type WorldFence, type WorldModel, type WorldQueue, type WorldThread, type ScenarioScheduleInfo, type Components } from './world.js';
export type { TimeMode } from './world.js';

export interface ScenarioModelOptions {
  scenario: Scenario;
  /** How the file is named in reports: its path as given, or the built-in's name. */
  source: string;
  /** The file's adapters with their driver module files loaded (scenarioAdapters). */
  adapters: AdapterOptions[];
  time: TimeMode;
  variant: Variant;
  /** The machine's seed (default: the file's machine.seed). */
  seed?: number;
  /** Faults (a TDR or an adapter's removal, FAULT_KINDS) the explorer may inject per run, between any two steps (default 0). */
  faults?: number;
  /** Every adapter runs this driver module (explore --driver FILE). */
  driver?: DriverModule;
  /** The OS re-reads CurrentValue after UpdateMonitoredValues (NF-09; default true). false: the driver alone is judged. */
  resample?: boolean;
}

/** A scenario file's model: the World it builds, the same each time. */
export class ScenarioModel implements WorldModel {
  readonly kind = 'scenario';
  readonly seed: number;
  readonly faults: number;
  private readonly adapters: AdapterOptions[];

  constructor(readonly options: ScenarioModelOptions) {
    const s = options.scenario;
    this.seed = options.seed ?? s.machine.seed ?? 1;
    this.faults = options.faults ?? 0;
    this.adapters = options.adapters.map((a, i) => {
      const driver = options.driver ? { ...a.driver, module: options.driver } : a.driver;
      return { ...a, driver: variantDriver(options.variant, driver, `machine.adapters[${i}] ("${a.name}")`) };
    });
  }

  get scenario(): Scenario { return this.options.scenario; }
  /** The file's components (linkScenario), found once: the file does not change. */
  get components(): Components { return (this.linked ??= linkScenario(this.options.scenario)); }
  private linked?: Components;
  scheduleInfo(): ScenarioScheduleInfo {
    return { scenario: { name: this.options.scenario.name, source: this.options.source }, time: this.options.time, faults: this.faults,
      variant: this.options.variant, seed: this.seed, ...(this.options.resample === false ? { resample: false as const } : {}) };
  }
  get time(): TimeMode { return this.options.time; }
  get variant(): Variant { return this.options.variant; }

  build(options: { trace: boolean }): World {
    const s = this.options.scenario;
    const base = scenarioMachineOptions(s, this.adapters, this.seed);
    const sized = explorationSizing(s, base);
    let machine: Machine;
    try {
      machine = createMachineSync({
        ...base, ...sized, trace: options.trace,
        schedule: { granularity: 'step', osGranularity: 'step', time: this.options.time === 'untimed' ? 'untimed' : 'virtual' },
      });
    } catch (error) {
      throw machineRefused(s, this.options.source, error);
    }
    applyVariantToOs(this.options.variant, machine);
    if (this.options.resample === false) machine.os.variant({ rereadCurrentValue: false });
    const jitter = s.machine.timing?.jitter ?? 0.1;
    const latencies = new LatencyChoices(this.options.time === 'timed' && jitter > 0);
    // Timed: each latency at one end of its span, the explorer's choice. Untimed: times do not matter; the low end, no draw.
    machine.timingRandom.chooseLatency = latencies.bounded ? latencies.choose : (low) => low;
    const setup = setUpScenario(s, machine, this.options.source);
    return new ScenarioWorld(this, setup, latencies);
  }
}

const UINT64_MAX_BIG = BigInt(UINT64_MAX);

/**
 * The faults --faults injects: 'tdr' a GPU reset (the adapter runs again, Resets.removeDevice), 'removal' the
 * adapter removed for good (no reset, it stays stopped, Resets.removeAdapter). Both signal its fences to UINT64_MAX.
 */
export const FAULT_KINDS = ['tdr', 'removal'] as const;

const pow2 = (n: number) => 2 ** Math.ceil(Math.log2(Math.max(1, n)));

/**
 * The machine's sizes for exploring `s`: every state's key hashes, and every snapshot copies, the whole of
 * linear memory, so the explorer builds the machine no bigger than the file needs. Every bound the file
 * sets is kept; those it leaves to their defaults (sized for big runs: 4 MiB of system memory, 4096 fences,
 * 65536 wait blocks, 16 processes, …) are sized from what the file holds, with room to spare: its fence
 * records, queues and their commands, threads and their waits, allocations. (test/explore-scenarios.test.ts
 * explores every built-in scenario on machines sized so.)
 */
export function explorationSizing(s: Scenario, base: MachineOptions): Pick<MachineOptions, 'adapters' | 'systemMemoryBytes' | 'limits'> {
  const fences = s.fences ?? [], queues = s.queues ?? [], threads = s.threads ?? [], allocations = s.allocations ?? [];
  const commandsOf = new Map<string, number>();
  for (const q of queues) commandsOf.set(q.name, (q.commands ?? []).length);
  let waitEntries = 0;
  for (const t of threads) {
    for (const step of t.steps) {
      if (step.submit) commandsOf.set(step.submit.queue, (commandsOf.get(step.submit.queue) ?? 0) + step.submit.commands.length);
      const w = step.wait ?? step.waitWithEvent;
      if (w) waitEntries += w.fences.length;
    }
  }
  const allocationPages = allocations.reduce((n, a) => n + Math.ceil(a.sizeBytes / 4096), 0);
  const adapters = (base.adapters ?? []).map((a, i) => {
    const name = s.machine.adapters[i].name;
    const given = s.machine.adapters[i].limits ?? {};
    const records = fences.filter((f) => f.adapter === name || (f.crossAdapter ?? []).includes(name)).length;
    const mine = queues.filter((q) => q.adapter === name);
    const longest = Math.max(0, ...mine.map((q) => commandsOf.get(q.name) ?? 0));
    const limits = {
      fences: records + 16,
      waitBlocks: 64 + 4 * waitEntries,
      waitersPerFence: Math.max(8, 2 * threads.length + 4),
      queues: mine.length + 4,
      ringEntries: pow2(Math.max(64, 2 * longest + 16)),
      gpuVaPagesPerProcess: 64 + 2 * records + 4 * mine.length + 2 * allocationPages,
    };
    // The arena holds each queue's ring and each fence's waiter heap, made as they are needed: room for every ring and
    // for the largest heap on every fence at once, twice over.
    const heapArenaBytes = pow2(limits.queues * limits.ringEntries * 32 + 2 * (records + 2) * 64 * pow2(Math.max(4, 2 * threads.length)) + 16384);
    const unset = Object.fromEntries(Object.entries({ ...limits, heapArenaBytes }).filter(([key]) => !(key in given)));
    const localMemoryBytes = a.localMemoryBytes ?? (allocations.some((x) => x.adapter === name) ? undefined : 0);
    return { ...a, ...(localMemoryBytes !== undefined ? { localMemoryBytes } : {}), limits: { ...unset, ...given } };
  });
  const pages = 32 + 2 * fences.length * Math.max(1, s.machine.adapters.length) + 4 * queues.length + 2 * allocationPages;
  const processes = s.machine.limits?.processes ?? Math.max(1, s.processes.length);
  return { adapters, systemMemoryBytes: Math.max(128 << 10, pages * 4096), limits: { ...(s.machine.limits ?? {}), processes } };
}

/** A fence value as scenario step lists write it: decimal, MAX for UINT64_MAX. */
export function formatScenarioValue(value: bigint): string {
  return value === UINT64_MAX_BIG ? 'MAX' : value.toString();
}

class ScenarioWorld implements World {
  readonly kind = 'scenario';
  readonly machine: Machine;
  readonly fences: WorldFence[] = [];
  readonly queues: WorldQueue[] = [];
  readonly threads: WorldThread[] = [];
  readonly invariants = SCENARIO_INVARIANTS;
  readonly explorer = { faultsInjected: 0 };
  /** The expectations judged at a terminal state (untimed: less the timed-only ones). */
  private readonly expect: NonNullable<Scenario['expect']>;
  /** What the judged expectations read that the state key leaves out (counters), one reader each. */
  private readonly extras: (() => number | string)[] = [];

  constructor(readonly model: ScenarioModel, readonly setup: ScenarioSetup, readonly latencies: LatencyChoices) {
    const machine = (this.machine = setup.machine);
    const s = setup.scenario;
    this.expect = model.time === 'untimed' ? withoutTimedOnly(s.expect ?? {}) : { ...(s.expect ?? {}) };
    delete this.expect.timedOnly;
    // Fences: each record (one per adapter a cross-adapter fence is opened on), with every value it may hold.
    const values = valuesOf(s, model.faults > 0);
    for (const f of s.fences ?? []) {
      for (const adapterName of [f.adapter, ...(f.crossAdapter ?? [])]) {
        const process = setup.processes.get(f.process)!;
        const handle = setup.handles.get(`${f.process}\u0000${f.name}\u0000${adapterName}`);
        if (handle === undefined) continue;
        const global = machine.os.inspect.fenceOf(process.kernel, handle);
        const name = adapterName === f.adapter ? f.name : `${f.name}@${adapterName}`;
        this.fences.push({ name, index: this.fences.length, handle, global, adapter: global.adapter.index, engine: -1, values: values.get(f.name)! });
      }
    }
    // Hardware queues, with the records their signal commands name (a queue of a thread's submit step too).
    const signalled = new Map<string, Set<string>>();
    const note = (queue: string, commands: GpuCommand[]) => {
      let set = signalled.get(queue);
      if (!set) signalled.set(queue, (set = new Set()));
      for (const c of commands) if (c.signal) set.add(c.signal.fence);
    };
    for (const q of s.queues ?? []) note(q.name, q.commands ?? []);
    for (const t of s.threads ?? []) for (const step of t.steps) if (step.submit) note(step.submit.queue, step.submit.commands);
    for (const q of s.queues ?? []) {
      const made = setup.queues.get(q.name);
      if (!made || !made.hHwQueue) continue; // a kernel-mode context: its command buffers are the OS's
      const process = setup.processes.get(q.process)!;
      const a = machine.adapters.findIndex((x) => x.name === q.adapter);
      const { hHwQueue: driverQueue } = machine.os.inspect.hwQueueOf(process.kernel, made.hHwQueue);
      const coreQueue = [...machine.adapters[a].hardware.queues.values()].find((x) => x.handle === driverQueue)?.id;
      if (coreQueue === undefined) continue;
      const fences = [...(signalled.get(q.name) ?? [])]
        .map((name) => this.fences.findIndex((f) => f.adapter === a && (f.name === name || f.name === `${name}@${q.adapter}`)))
        .filter((i) => i >= 0);
      this.queues.push({ name: q.name, adapter: a, engine: q.engine ?? 0, handle: made.hHwQueue, coreQueue, fences });
    }
    for (const [name, thread] of setup.threads) this.threads.push({ name, process: thread.process, thread });
    this.keyReaders();
  }

  header(): string[] {
    const m = this.model;
    const s = m.scenario;
    const faults = m.faults ? `; up to ${m.faults} fault${m.faults === 1 ? '' : 's'} injected (TDR or adapter removal, at any step)` : '';
    return [
      `scenario: ${s.name} (${m.options.source}); ${m.time}${m.time === 'timed' ? (this.latencies.bounded ? ', each latency at either end of its jitter span' : ', exact latencies') : ''}; variant ${m.variant}${m.options.resample === false ? '; the OS does not re-read CurrentValue (the driver alone)' : ''}${faults}; seed ${m.seed}`,
      `values: as the file writes them, MAX = UINT64_MAX; [choice/options]${this.latencies.bounded ? ' latencies (L low, H high end of each span drawn)' : ''}; * marks what the step changed`,
    ];
  }

  formatValue(value: bigint): string { return formatScenarioValue(value); }

  components(): Components { return this.model.components; }

  private position(thread: CpuThread): ThreadPosition | undefined { return this.setup.positions.get(thread); }

  resumeIsLocal(thread: CpuThread): boolean {
    const at = this.position(thread);
    // Resuming only records what the wait returned when no step follows it.
    return at !== undefined && at.resuming !== undefined && at.step >= at.spec.steps.length;
  }

  describeResume(thread: CpuThread): string | undefined {
    const at = this.position(thread);
    if (!at) return undefined;
    const name = at.spec.name;
    const next = at.step < 0 ? (at.spec.startNs ? `sleeps ${at.spec.startNs} ns (startNs)` : describeStep(at.spec.steps[0], this))
      : at.step < at.spec.steps.length ? describeStep(at.spec.steps[at.step], this) : 'ends';
    if (thread.state === 'ready') return `${name} starts: ${next}`;
    const back = at.resuming === 'wait' ? 'returns from its wait' : at.resuming === 'event' ? 'returns from its event wait' : 'resumes';
    return `${name} ${back}; then ${next}`;
  }

  threadItems(): [string, string][] {
    // Each hardware queue: commands left, blocked on a wait, or done.
    const L = this.machine.layout;
    const queues = this.queues.map((q): [string, string] => {
      const core = this.machine.adapters[q.adapter].core;
      const state = core.queueState(q.coreQueue);
      const left = state === L.queueStateFree ? 0 : core.queuePending(q.coreQueue);
      return [`queue.${q.name}`, `${q.name} ${state === L.queueStateBlocked ? `blocked (${left} left)` : left ? `${left} left` : 'done'}`];
    });
    return [...queues, ...this.threads.map(({ name, thread }): [string, string] => {
      const at = this.position(thread);
      const where = at && at.step >= 0 && at.step <= at.spec.steps.length && thread.state !== 'done' ? `@${at.step}` : '';
      const result = thread.waits.length ? `:${thread.waits.map((r) => r.status).join(',')}` : '';
      return [`thread.${name}`, `${name}=${thread.state}${where}${result}`];
    })];
  }

  checkQuiet(): Violation[] {
    // After an injected TDR the file's expect describes another run: what is judged is that nothing is left stuck
    // (unless the file expects its run stuck: a reset may or may not release it), no bug check, no lost wakeup.
    // A thread whose call the model refused because of the reset (its device removed, a value now UINT64_MAX) is
    // the program's to handle, not the protocol's.
    const faulted = this.explorer.faultsInjected > 0;
    const expectsStuck = this.expect.stuck === true || this.expect.deadlock === true;
    const expect: NonNullable<Scenario['expect']> = faulted ? {} : this.expect;
    const source = this.model.options.source;
    return checkExpectations(this.setup, this.machine.stuck(), expect)
      .filter((r) => !r.ok && !(faulted && r.path === '(implicit)' && (/^thread .* does not fail$/.test(r.description) || (expectsStuck && /stuck|deadlock/.test(r.description)))))
      .map((r) => ({
        invariant: 'expectations' as const,
        message: `${r.path === '(implicit)' ? '' : `${r.path}${r.line ? ` (${source}:${r.line}:${r.column})` : ''}: `}${r.description}: expected ${r.expected}, got ${r.actual}`,
      }));
  }

  keyExtras(): readonly (number | string)[] { return this.extras.map((read) => read()); }

  /** Readers of every counter the judged expectations compare (the key leaves counters out: two states that differ only there would be one). */
  private keyReaders(): void {
    const e = this.expect;
    const machine = this.machine;
    const extras = this.extras;
    const memory = new DataView(machine.memory.buffer);
    for (const name of Object.keys(e.interrupts ?? {})) {
      const adapter = machine.adapters.find((a) => a.name === name)!;
      extras.push(() => Number(memory.getBigUint64(adapter.privateBase + machine.layout.offsets.interrupts, true)));
    }
    for (const name of Object.keys(e.counters ?? {})) extras.push(() => (machine.os.inspect.counters as unknown as Record<string, number>)[name]);
    for (const name of Object.keys(e.legacyCounters ?? {})) extras.push(() => (machine.os.inspect.legacyCounters as unknown as Record<string, number>)[name]);
    for (const name of Object.keys(e.logCounters ?? {})) extras.push(() => (machine.os.inspect.logs.counters as unknown as Record<string, number>)[name]);
    for (const name of Object.keys(e.crossAdapterCounters ?? {})) extras.push(() => (machine.crossAdapterCounters() as unknown as Record<string, number>)[name]);
    for (const name of Object.keys(e.vidmmCounters ?? {})) extras.push(() => (machine.vidmm.counters as unknown as Record<string, number>)[name]);
  }

  explorerOptions(): ReturnType<World['explorerOptions']> {
    if (this.explorer.faultsInjected >= this.model.faults) return [];
    const machine = this.machine;
    // A fault point is every state where something is left to run: between any two steps, an OS operation's and a
    // signal's included (docs/EXPLORER.md "Faults"). Each running adapter, each kind.
    if (machine.scheduler.enabled().length === 0) return [];
    const now = machine.scheduler.nowNs;
    return machine.adapters.filter((a) => a.state === 'running')
      .flatMap((a) => FAULT_KINDS.map((kind) => explorerEvent('fault', { adapter: a.name, kind }, now)));
  }

  takeExplorerOption(event: Parameters<World['takeExplorerOption']>[0]): void {
    if (event.kind !== 'fault') throw new Error(`explorer: no option of kind "${event.kind}"`);
    this.explorer.faultsInjected++;
    const adapter = event.args.adapter as string;
    if (event.args.kind === 'removal') this.machine.removeAdapter(adapter, 'adapter removed (injected by the explorer)');
    else this.machine.removeDevice(adapter, 'TDR (injected by the explorer)');
  }
}

/** The file's expectations without those it marks timed-only. */
function withoutTimedOnly(expect: NonNullable<Scenario['expect']>): NonNullable<Scenario['expect']> {
  const copy: Record<string, unknown> = {};
  for (const [group, value] of Object.entries(expect)) copy[group] = value !== null && typeof value === 'object' ? { ...value } : value;
  for (const path of Object.keys(expect.timedOnly ?? {})) {
    const [group, ...rest] = path.split('.');
    if (!rest.length) delete copy[group];
    else if (copy[group] && typeof copy[group] === 'object') delete (copy[group] as Record<string, unknown>)[rest.join('.')];
  }
  return copy as NonNullable<Scenario['expect']>;
}

/** Every value each fence may hold: its initial value, then each value the file signals, writes or sets it to (UINT64_MAX after a TDR). */
function valuesOf(s: Scenario, injectedFaults: boolean): Map<string, bigint[]> {
  const found = new Map<string, Set<bigint>>();
  for (const f of s.fences ?? []) found.set(f.name, new Set([BigInt(f.initialValue ?? 0)]));
  const add = (fence: string, value: string | number) => found.get(fence)?.add(BigInt(value));
  const commands = (list: GpuCommand[] | undefined) => {
    for (const c of list ?? []) {
      if (c.signal) add(c.signal.fence, c.signal.value);
      if (c.fenceWrite) add(c.fenceWrite.fence, c.fenceWrite.value);
    }
  };
  for (const q of s.queues ?? []) commands(q.commands);
  for (const t of s.threads ?? []) {
    for (const step of t.steps) {
      if (step.submit) commands(step.submit.commands);
      if (step.signal) step.signal.fences.forEach((f, i) => add(f, step.signal!.values[i]));
    }
  }
  const removed = new Set((s.faults ?? []).flatMap((f) => [f.removeDevice?.adapter, f.removeAdapter?.adapter]).filter((a): a is string => a !== undefined));
  for (const f of s.fences ?? []) {
    if (f.flags?.noSignalMaxValueOnTdr) continue;
    if (injectedFaults || [f.adapter, ...(f.crossAdapter ?? [])].some((a) => removed.has(a))) found.get(f.name)!.add(UINT64_MAX_BIG);
  }
  return new Map([...found].map(([name, set]) => {
    const initial = BigInt((s.fences ?? []).find((f) => f.name === name)?.initialValue ?? 0);
    return [name, [initial, ...[...set].filter((v) => v !== initial).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))]];
  }));
}

/** A thread step, for step lists. */
function describeStep(step: ThreadStep, world: ScenarioWorld): string {
  const v = (raw: string | number) => world.formatValue(BigInt(raw));
  const w = step.wait ?? step.waitWithEvent;
  if (w) {
    const what = w.fences.map((f, i) => `${f} ≥ ${v(w.values[i])}`).join(w.any ? ' or ' : ' and ');
    return `${step.wait ? 'waits' : 'waits with an event'} for ${what}${w.id ? ` (wait ${w.id}` : ' ('}${w.timeoutNs !== undefined ? `${w.id ? ', ' : ''}timeout ${w.timeoutNs} ns)` : w.id ? ')' : 'no timeout)'}: the OS adds the waiter (or finds CurrentValue there)`;
  }
  if (step.signal) return `signals ${step.signal.fences.map((f, i) => `${f} = ${v(step.signal!.values[i])}`).join(', ')} from the CPU: UpdateCurrentValuesFromCpu, then the waiters`;
  if (step.sleep) return `sleeps ${step.sleep.durationNs} ns`;
  if (step.submit) return `submits ${step.submit.commands.length} command(s) to ${step.submit.queue}`;
  const [op] = Object.keys(step);
  return `${op}${op ? ` ${JSON.stringify((step as Record<string, unknown>)[op])}` : ''}`;
}
