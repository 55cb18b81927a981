// The full reduction fuzzed against the visited-set search on small random scenario files.
//
// The full reduction (src/explore/search.ts: sleep sets, eager steps, persistent sets; the component
// footprints of src/explore/components.ts) must leave out no quiet state and no verdict of the
// visited-set search (reduction 'states', which visits every reachable state). Defects of that kind hide
// in what no hand-made file happens to reach: two were found in timed mode by comparing the searches on
// twelve hand-made files (a step's other latency choices slept by a sibling; a state key depending on
// history). This file draws the whole class: a seeded generator of small scenario files over what the
// format can say (docs/SCENARIOS.md), and the comparison of both searches on each, timed and untimed.
//
//   seed ──► randomScenarioText ──► YAML text ──► parseScenario ──► ScenarioModel (timed | untimed)
//                                                                       │
//                                     ┌─────────────────────────────────┴───────────────────┐
//                                     ▼                                                     ▼
//                       exhaustive(reduction 'states')                      exhaustive(reduction 'full')
//                       every reachable state (capped:                      its quiet states, verdicts and
//                       maxStates; a file past it is                        every state it visits
//                       discarded and counted)                                         │
//                                     └──────────────► compareReductions ◄─────────────┘
//                       the same quiet state keys; the same verdicts (invariant ids); every state the
//                       full search visits is one the visited-set search visits too; no state where an
//                       engine has two events pending (the footprints read one next step per engine);
//                       neither search throws
//
// A file is one machine of 1 or 2 adapters (1 or 2 engines each; an adapter without native fences
// now and then, the optimized signalled interrupt, a "no list" interrupt payload), its timing (command
// time, interrupt latency, jitter 0 … 1: timed, every jittered latency at both ends of its span), one
// process and sometimes a second that a fence is shared with, 1 to 3 fences (native or monitored, some
// opened on the other adapter too: cross-adapter fences, sometimes with the doorbell), up to 2 queues
// (hardware queues signal and wait on native fences; kernel-mode contexts write, signal and wait on
// monitored ones; either may run work) and up to 2 CPU threads of up to 2 steps (waits on one or two
// fences, all or any, with or without a timeout, some with an event; CPU signals; sleeps; submits;
// a fence destroyed), a start time now and then, and sometimes one of the file's faults (collapsed
// interrupts, a forced log overrun, a TDR). Values are small (1 … 3), so waits are mostly satisfied by
// what is signalled and sometimes left stuck; the file has no `expect` (the implicit ones are judged:
// nothing stuck, no deadlock, no failed thread). Every draw comes from src/base/rng.ts's Random, so a
// seed is the same file on every machine and every run.
//
// Used by test/explore-fuzz-reduction.test.ts (a bounded number of seeds, and planted defects the
// comparison must catch) and scripts/fuzz-explore.mjs (`npm run fuzz:explore -- --seeds N --seed S`,
// long runs, through dist/fuzz-explore.js; it prints a mismatch's seed, the file and the command that
// replays it). What it found is in docs/EXPLORER.md ("The reduction fuzzed").

import { Random } from '../base/rng.js';
import { parseScenario } from '../scenario-files/load.js';
import { scenarioAdapters } from '../scenario-files/run.js';
import { ScenarioModel, type TimeMode } from './scenario-world.js';
import { exhaustive, type SearchOptions, type SearchResult } from './search.js';
import type { World } from './world.js';

/** The states a visited-set search of one file may reach before the file is discarded as too big (default). */
export const FUZZ_MAX_STATES = 4000;

/** What a generated file holds (counted over a run, so a test can see the generator reaches each part of the format). */
export const FUZZ_FEATURES = [
  'two adapters', 'two engines', 'no native fences', 'optimized interrupt', 'no-list payload', 'no re-read',
  'jitter', 'no jitter', 'second process', 'native fence', 'monitored fence', 'cross-adapter fence', 'doorbell',
  'initial value', 'hardware queue', 'kernel-mode queue', 'gpu wait', 'gpu signal', 'fence write', 'work',
  'cpu wait', 'wait-any', 'timeout', 'zero timeout', 'wait with event', 'cpu signal', 'sleep', 'submit',
  'destroy fence', 'start time', 'collapsed interrupts', 'forced log overrun', 'tdr',
] as const;
export type FuzzFeature = (typeof FUZZ_FEATURES)[number];

export interface GeneratedScenario {
  /** The file, as YAML (parseScenario reads it; a failure prints it). */
  text: string;
  /** The parts of the format it uses. */
  features: Set<FuzzFeature>;
}

interface FenceSpec {
  name: string;
  adapter: number;
  kind: 'native' | 'monitored';
  /** Adapters it is opened on besides its own (a cross-adapter fence). */
  crossAdapter: number[];
  initialValue: number;
  sharedWith?: string;
}

/** A flow-style YAML value: maps and lists on one line, names and numbers bare. */
function flow(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(flow).join(', ')}]`;
  if (value !== null && typeof value === 'object') return `{ ${Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}: ${flow(v)}`).join(', ')} }`;
  return String(value);
}

interface QueueSpec { name: string; adapter: number; engine: number; kind: 'hardware' | 'kernelMode' }
interface ThreadSpec { name: string; process: string; startNs?: number; steps: object[] }

/** A file's generator, the parts of the format it used, and two shorthands of it. */
interface Draw {
  random: Random;
  chance: (n: number) => boolean;
  pick: <T>(list: readonly T[]) => T;
  features: Set<FuzzFeature>;
}

/** What a thread's steps draw from: the values of the file's fences, its queues' commands, and what was drawn so far. */
interface StepDraw {
  waitIds: number;
  destroyed: boolean;
  waitValue: (f: FenceSpec) => number;
  nextValue: (f: FenceSpec) => number;
  commands: (q: QueueSpec, most: number) => object[];
}

/** One step of a thread that holds handles to `mine` and may submit to `submitTo`: a wait, a CPU signal, a submit, a fence destroyed or a sleep. */
function drawThreadStep({ random, chance, pick, features }: Draw, mine: FenceSpec[], submitTo: QueueSpec[], d: StepDraw): object {
  const what = random.below(10);
  if (mine.length && what < 5) {
    const first = pick(mine);
    const second = mine.length > 1 && chance(3) ? pick(mine.filter((f) => f !== first)) : undefined;
    const waited = second ? [first, second] : [first];
    const any = second !== undefined && chance(2);
    const timeoutNs = chance(3) ? pick([0, 150, 400, 2000]) : undefined;
    const wait = { id: `w${d.waitIds++}`, fences: waited.map((f) => f.name), values: waited.map(d.waitValue), any: any || undefined, timeoutNs };
    features.add('cpu wait');
    if (any) features.add('wait-any');
    if (timeoutNs !== undefined) features.add(timeoutNs === 0 ? 'zero timeout' : 'timeout');
    if (chance(6)) { features.add('wait with event'); return { waitWithEvent: wait }; }
    return { wait };
  }
  if (mine.length && what < 7) {
    const f = pick(mine);
    features.add('cpu signal');
    return { signal: { fences: [f.name], values: [d.nextValue(f)] } };
  }
  if (submitTo.length && what < 9) {
    const q = pick(submitTo);
    const submit = { submit: { queue: q.name, commands: d.commands(q, 1) } };
    features.add('submit');
    return submit;
  }
  if (mine.length && what === 9 && !d.destroyed && chance(2)) {
    d.destroyed = true;
    features.add('destroy fence');
    return { destroyFence: { fence: pick(mine).name } };
  }
  features.add('sleep');
  return { sleep: { durationNs: pick([100, 250, 600]) } };
}

/** The file's YAML text. */
function scenarioText(seed: number, f: {
  reread: boolean; timing: object; doorbell: boolean; adapters: { name: string; engines: number; caps?: object; interrupts?: object }[];
  processes: string[]; fences: FenceSpec[]; queues: QueueSpec[]; queueCommands: object[][]; threads: ThreadSpec[]; faults: object[];
}): string {
  const { reread, timing, doorbell, adapters, processes, fences, queues, queueCommands, threads, faults } = f;
  const lines = [
    `name: fuzz-${seed}`,
    'machine:',
    `  seed: ${seed}`,
    ...(reread ? [] : ['  os: { rereadCurrentValue: false }']),
    `  timing: ${flow(timing)}`,
    ...(doorbell ? ['  doorbell: { enabled: true }'] : []),
    '  adapters:',
    ...adapters.map((a) => `    - ${flow({ name: a.name, engines: a.engines, caps: a.caps, interrupts: a.interrupts })}`),
    `processes: ${flow(processes.map((name) => ({ name })))}`,
    'fences:',
    ...fences.map((f) => {
      const cross = f.crossAdapter.length > 0;
      return `  - ${flow({
        name: f.name, process: 'app', adapter: `gpu${f.adapter}`, kind: f.kind,
        flags: cross || f.sharedWith ? { shared: true, crossAdapter: cross || undefined } : undefined,
        crossAdapter: cross ? f.crossAdapter.map((a) => `gpu${a}`) : undefined,
        initialValue: f.initialValue || undefined,
        sharedWith: f.sharedWith ? [f.sharedWith] : undefined,
      })}`;
    }),
    ...(queues.length ? ['queues:', ...queues.map((q, i) => `  - ${flow({ name: q.name, process: 'app', adapter: `gpu${q.adapter}`, kind: q.kind, engine: q.engine, commands: queueCommands[i] })}`)] : []),
    ...(threads.length ? ['threads:', ...threads.map((t) => `  - ${flow(t)}`)] : []),
    ...(faults.length ? ['faults:', ...faults.map((f) => `  - ${flow(f)}`)] : []),
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * The scenario file of `seed`: small (a few fences, commands and thread steps), valid (parseScenario takes
 * it) and the same for a seed everywhere. The header lists what it may hold.
 */
export function randomScenario(seed: number): GeneratedScenario {
  const random = new Random(seed);
  const features = new Set<FuzzFeature>();
  const chance = (n: number) => random.below(n) === 0;
  const pick = <T>(list: readonly T[]): T => list[random.below(list.length)];

  // The machine: adapters, the OS, timing.
  const adapterCount = 1 + random.below(2);
  if (adapterCount === 2) features.add('two adapters');
  const adapters = Array.from({ length: adapterCount }, (_, a) => {
    const engines = 1 + random.below(2);
    if (engines === 2) features.add('two engines');
    // The first adapter always has native fences, so a file can always hold a hardware queue.
    const native = a === 0 || !chance(5);
    if (!native) features.add('no native fences');
    const optimized = native && chance(4);
    if (optimized) features.add('optimized interrupt');
    const noList = chance(6);
    if (noList) features.add('no-list payload');
    const caps = native ? (optimized ? { optimizedNativeFenceSignaledInterrupt: true } : undefined) : { nativeGpuFence: false };
    return { name: `gpu${a}`, engines, native, caps, interrupts: noList ? { payload: 'noList' } : undefined };
  });
  const reread = !chance(8);
  if (!reread) features.add('no re-read');
  const jitter = pick([0, 0.1, 0.3, 0.5, 1]);
  features.add(jitter > 0 ? 'jitter' : 'no jitter');
  const timing = { commandNs: pick([100, 200, 300]), interruptLatencyNs: pick([100, 200, 500]), jitter };

  // Processes and fences.
  const processes = ['app'];
  if (chance(6)) { processes.push('other'); features.add('second process'); }
  const fences: FenceSpec[] = [];
  const fenceCount = 1 + random.below(3);
  for (let i = 0; i < fenceCount; i++) {
    const adapter = random.below(adapterCount);
    const kind = !adapters[adapter].native || chance(3) ? 'monitored' : 'native';
    features.add(kind === 'native' ? 'native fence' : 'monitored fence');
    const crossAdapter = adapterCount === 2 && chance(3) ? [1 - adapter] : [];
    if (crossAdapter.length) features.add('cross-adapter fence');
    const initialValue = chance(6) ? 1 : 0;
    if (initialValue) features.add('initial value');
    // A native fence that is not cross-adapter may be shared with the second process (through an NT handle).
    const sharedWith = processes.length > 1 && kind === 'native' && !crossAdapter.length && chance(2) ? 'other' : undefined;
    fences.push({ name: `f${i}`, adapter, kind, crossAdapter, initialValue, sharedWith });
  }
  const doorbell = fences.some((f) => f.crossAdapter.length) && chance(4);
  if (doorbell) features.add('doorbell');

  /** What a fence is on adapter a: native where it is created native, or opened where native fences are supported (XA-05). */
  const kindOn = (f: FenceSpec, a: number): 'native' | 'monitored' | undefined =>
    a === f.adapter ? f.kind : f.crossAdapter.includes(a) ? (adapters[a].native ? 'native' : 'monitored') : undefined;
  /** The highest value signalled to each fence so far (values grow, mostly). */
  const top = new Map(fences.map((f) => [f.name, f.initialValue]));
  const nextValue = (f: FenceSpec) => {
    const value = Math.min(3, top.get(f.name)! + 1 + (chance(4) ? 1 : 0));
    top.set(f.name, Math.max(top.get(f.name)!, value));
    return value;
  };
  /** A value to wait for: mostly one a signal reaches, sometimes one past every signal (a wait left stuck). */
  const waitValue = (f: FenceSpec) => Math.max(1, Math.min(3, chance(6) ? top.get(f.name)! + 1 : 1 + random.below(Math.max(1, top.get(f.name)!))));

  // Queues: a hardware queue on native fences, a kernel-mode context on monitored ones, on adapter a.
  const queues: QueueSpec[] = [];
  const queueCount = random.below(3);
  for (let i = 0; i < queueCount; i++) {
    const adapter = random.below(adapterCount);
    const kind = !adapters[adapter].native || chance(3) ? 'kernelMode' : 'hardware';
    features.add(kind === 'hardware' ? 'hardware queue' : 'kernel-mode queue');
    queues.push({ name: `q${i}`, adapter, engine: random.below(adapters[adapter].engines), kind });
  }
  /** Up to `most` commands of queue q: GPU signals, waits, fence writes (kernel mode) and work. */
  const commands = (q: QueueSpec, most: number): object[] => {
    const want = q.kind === 'hardware' ? 'native' : 'monitored';
    const usable = fences.filter((f) => kindOn(f, q.adapter) === want);
    const list: object[] = [];
    const count = 1 + random.below(most);
    for (let k = 0; k < count; k++) {
      // 0 a signal, 1 a wait, 2 a fence write (kernel mode only), 3 work.
      const what = !usable.length ? 3 : q.kind === 'kernelMode' ? random.below(4) : pick([0, 1, 3]);
      if (what === 3) { list.push({ work: { durationNs: pick([100, 300, 1000]) } }); features.add('work'); continue; }
      const f = pick(usable);
      if (what === 0) { list.push({ signal: { fence: f.name, value: nextValue(f) } }); features.add('gpu signal'); }
      else if (what === 1) { list.push({ wait: { fence: f.name, value: waitValue(f) } }); features.add('gpu wait'); }
      else { list.push({ fenceWrite: { fence: f.name, value: nextValue(f) } }); features.add('fence write'); }
    }
    return list;
  };
  const queueCommands = queues.map((q) => commands(q, q.kind === 'hardware' ? 3 : 2));

  // Threads: waits, CPU signals, sleeps, submits, a fence destroyed.
  const threads: ThreadSpec[] = [];
  const step: StepDraw = { waitIds: 0, destroyed: false, waitValue, nextValue, commands };
  const draw: Draw = { random, chance, pick, features };
  const threadCount = queues.length ? random.below(3) : 1 + random.below(2);
  for (let i = 0; i < threadCount; i++) {
    const process = processes.length > 1 && i === 1 ? 'other' : 'app';
    const mine = fences.filter((f) => process === 'app' || f.sharedWith === process);
    const steps: object[] = [];
    const stepCount = 1 + random.below(2);
    for (let k = 0; k < stepCount; k++) steps.push(drawThreadStep(draw, mine, process === 'app' ? queues : [], step));
    const startNs = chance(5) ? pick([100, 300]) : undefined;
    if (startNs !== undefined) features.add('start time');
    threads.push({ name: `t${i}`, process, startNs, steps });
  }

  // The file's own faults, now and then.
  const faults: object[] = [];
  if (chance(8)) {
    const adapter = `gpu${random.below(adapterCount)}`;
    const atNs = pick([0, 200, 500]);
    const kind = random.below(3);
    const hardware = queues.filter((q) => q.kind === 'hardware' && `gpu${q.adapter}` === adapter);
    if (kind === 0) { faults.push({ atNs, collapseInterrupts: { adapter, windowNs: pick([200, 1000]) } }); features.add('collapsed interrupts'); }
    else if (kind === 1 && hardware.length) { faults.push({ atNs, forceLogOverrun: { adapter } }); features.add('forced log overrun'); }
    else { faults.push({ atNs, removeDevice: { adapter } }); features.add('tdr'); }
  }

  const text = scenarioText(seed, { reread, timing, doorbell, adapters, processes, fences, queues, queueCommands, threads, faults });
  return { text, features };
}

/** One search's outcome as the comparison reads it. */
export interface SearchSide {
  states: number;
  complete: boolean;
  /** Quiet state keys, sorted. */
  quiet: string[];
  /** The invariants violated somewhere, sorted. */
  verdicts: string[];
}

/** The two searches of one file in one time mode, and how they differ (nothing, when the reduction is sound there). */
export interface ReductionComparison {
  time: TimeMode;
  states: SearchSide;
  full: SearchSide;
  /** Quiet states the visited-set search reaches and the full one does not (a loss). */
  missing: string[];
  /** Quiet states the full search reaches and the visited-set search does not. */
  extra: string[];
  /** States the full search visits that the visited-set search does not (none can be: each is reachable). */
  outside: number;
  /**
   * States (of the visited-set search) where one engine had two events pending: a GPU engine runs one command at a
   * time, and the footprints (src/explore/footprint.ts) read an engine's one next step; none can be.
   */
  doubled: number;
  /** The visited-set search stopped at maxStates: no comparison (the file is too big, discarded). */
  tooBig: boolean;
  /** The comparison found a difference. */
  differs: boolean;
  /** A search threw (what it threw): a difference too. */
  error?: string;
}

export interface CompareOptions {
  /** The states the visited-set search may reach (default FUZZ_MAX_STATES). */
  maxStates?: number;
  /** Options of the full search only: a planted defect (tests), e.g. a persistent set that is not one. */
  full?: Pick<SearchOptions, 'persistentSet' | 'sleepSets' | 'eagerSteps' | 'persistentSets'>;
  /** The model of the full search, when it is to differ from the visited-set search's (tests plant a defect in it). */
  fullModel?: (model: ScenarioModel) => ScenarioModel;
}

/** Does an engine of the world have two events pending (two ticks, or a tick beside a signal's next step)? */
function engineTwice(world: World): boolean {
  const seen = new Set<string>();
  for (const event of world.machine.scheduler.pendingEvents()) {
    if (event.kind !== 'engine-tick' && event.kind !== 'engine-step') continue;
    const engine = `${event.owner}/${String(event.args.engine)}`;
    if (seen.has(engine)) return true;
    seen.add(engine);
  }
  return false;
}

function side(result: SearchResult, quiet: string[]): SearchSide {
  return { states: result.stats.states, complete: result.stats.complete, quiet: quiet.sort(), verdicts: [...result.violations.keys()].sort() };
}

/** The scenario file `text` explored with both reductions in time mode `time`, compared (the header). */
export async function compareReductions(text: string, time: TimeMode, options: CompareOptions = {}): Promise<ReductionComparison> {
  const source = 'fuzz.yaml';
  const scenario = parseScenario(text, source);
  const adapters = await scenarioAdapters(scenario, source);
  const model = () => new ScenarioModel({ scenario, source, adapters, time, variant: 'barrier' });
  const maxStates = options.maxStates ?? FUZZ_MAX_STATES;
  const seen = new Set<string>();
  const statesQuiet: string[] = [];
  let doubled = 0;
  const empty = (): SearchSide => ({ states: 0, complete: false, quiet: [], verdicts: [] });
  // A search that throws (an error of the explorer or the model) is a finding too: the other side is not compared.
  let states: SearchResult;
  try {
    states = exhaustive(model(), {
      reduction: 'states', maxStates, onQuiet: (key) => statesQuiet.push(key),
      onState: (key, _path, world) => { seen.add(key); if (engineTwice(world)) doubled++; },
    });
  } catch (error) {
    return { time, states: empty(), full: empty(), missing: [], extra: [], outside: 0, doubled, tooBig: false, differs: true, error: `the visited-set search threw ${String(error)}` };
  }
  const statesSide = side(states, statesQuiet);
  if (!states.stats.complete) return { time, states: statesSide, full: empty(), missing: [], extra: [], outside: 0, doubled, tooBig: true, differs: false };
  const fullQuiet: string[] = [];
  let outside = 0;
  const fullModel = options.fullModel ? options.fullModel(model()) : model();
  let full: SearchResult;
  try {
    full = exhaustive(fullModel, { ...options.full, reduction: 'full', maxStates, onQuiet: (key) => fullQuiet.push(key), onState: (key) => { if (!seen.has(key)) outside++; } });
  } catch (error) {
    return { time, states: statesSide, full: empty(), missing: [], extra: [], outside: 0, doubled, tooBig: false, differs: true, error: `the full search threw ${String(error)}` };
  }
  const fullSide = side(full, fullQuiet);
  const fullSet = new Set(fullSide.quiet), statesSet = new Set(statesSide.quiet);
  const missing = statesSide.quiet.filter((key) => !fullSet.has(key));
  const extra = fullSide.quiet.filter((key) => !statesSet.has(key));
  const differs = missing.length > 0 || extra.length > 0 || outside > 0 || doubled > 0 || !fullSide.complete || fullSide.verdicts.join() !== statesSide.verdicts.join();
  return { time, states: statesSide, full: fullSide, missing, extra, outside, doubled, tooBig: false, differs };
}

/** One line on a comparison: the counts of both searches and what differs. */
export function comparisonText(c: ReductionComparison): string {
  const counts = (s: SearchSide) => `${s.states} states, ${s.quiet.length} quiet, verdicts [${s.verdicts.join(', ')}]${s.complete ? '' : ' NOT complete'}`;
  if (c.tooBig) return `${c.time}: states ${counts(c.states)}: too big, not compared`;
  if (c.error) return `${c.time}: ${c.error}`;
  const what = [
    c.missing.length ? `${c.missing.length} quiet state(s) lost by the full reduction` : '',
    c.extra.length ? `${c.extra.length} quiet state(s) only the full reduction reaches` : '',
    c.outside ? `${c.outside} state(s) the full reduction visits that the visited-set search does not` : '',
    c.doubled ? `${c.doubled} state(s) where an engine had two events pending` : '',
    c.full.verdicts.join() !== c.states.verdicts.join() ? 'the verdicts differ' : '',
    c.full.complete ? '' : 'the full search stopped at maxStates',
  ].filter(Boolean);
  return `${c.time}: states ${counts(c.states)} | full ${counts(c.full)}${what.length ? ` — ${what.join('; ')}` : ''}`;
}

export const FUZZ_TIME_MODES: readonly TimeMode[] = ['timed', 'untimed'];

/** A file whose searches differ: its seed, text and the comparisons that differ. */
export interface FuzzMismatch { seed: number; text: string; comparisons: ReductionComparison[] }

export interface FuzzReport {
  /** Files generated, compared (in every time mode asked for), discarded as too big (in any of them). */
  files: number;
  compared: number;
  tooBig: number;
  /** Searches compared, per time mode. */
  searches: Record<TimeMode, number>;
  /** How many compared files used each part of the format. */
  features: Map<FuzzFeature, number>;
  /** States visited by the visited-set and the full searches, over the compared files. */
  statesVisited: number;
  fullStatesVisited: number;
  mismatches: FuzzMismatch[];
}

export interface FuzzOptions extends CompareOptions {
  /** The first file's seed; file i is seed + i (as an unsigned 32-bit number). */
  seed: number;
  /** Files to generate (compared or discarded). */
  files: number;
  /** The time modes each file is compared in (default both, FUZZ_TIME_MODES). */
  times?: readonly TimeMode[];
  /** Stop at the first mismatch (default true). */
  stopAtMismatch?: boolean;
  /** Called after each file with its seed, whether it was compared and its comparisons (progress lines). */
  onFile?: (seed: number, comparisons: ReductionComparison[], report: FuzzReport) => void;
}

/** The seed of file i of a run from `seed`. */
export const fileSeed = (seed: number, i: number): number => (seed + i) >>> 0;

/** Files `seed` … seed + files − 1, each compared timed and untimed (the header). */
export async function fuzzReductions(options: FuzzOptions): Promise<FuzzReport> {
  const report: FuzzReport = { files: 0, compared: 0, tooBig: 0, searches: { timed: 0, untimed: 0 }, features: new Map(), statesVisited: 0, fullStatesVisited: 0, mismatches: [] };
  for (let i = 0; i < options.files; i++) {
    const seed = fileSeed(options.seed, i);
    const file = randomScenario(seed);
    report.files++;
    const comparisons: ReductionComparison[] = [];
    for (const time of options.times ?? FUZZ_TIME_MODES) {
      const c = await compareReductions(file.text, time, options);
      comparisons.push(c);
      if (c.tooBig) break;
    }
    if (comparisons.some((c) => c.tooBig)) report.tooBig++;
    else {
      report.compared++;
      for (const c of comparisons) { report.searches[c.time]++; report.statesVisited += c.states.states; report.fullStatesVisited += c.full.states; }
      for (const f of file.features) report.features.set(f, (report.features.get(f) ?? 0) + 1);
    }
    const differ = comparisons.filter((c) => c.differs);
    if (differ.length) report.mismatches.push({ seed, text: file.text, comparisons: differ });
    options.onFile?.(seed, comparisons, report);
    if (differ.length && options.stopAtMismatch !== false) break;
  }
  return report;
}

/** A mismatch for people: the seed, what differs, the file, and the command that runs it again. */
export function mismatchText(m: FuzzMismatch): string {
  return [
    `seed ${m.seed}: the full reduction and the visited-set search differ`,
    ...m.comparisons.map((c) => `  ${comparisonText(c)}`),
    ...m.comparisons.flatMap((c) => c.missing.slice(0, 3).map((key) => `  ${c.time}: lost quiet state ${key.length > 160 ? `${key.slice(0, 160)}…` : key}`)),
    `the file (fuzz-${m.seed}.yaml):`,
    ...m.text.trimEnd().split('\n').map((line) => `  ${line}`),
    `again: npm run fuzz:explore -- --seed ${m.seed} --seeds 1`,
  ].join('\n');
}
