// `wddm-fence explore`: the race explorer from the command line
// (src/explore/ does the work; docs/EXPLORER.md explains it).
//
// Why this file is long: it is the command's one argument check and its three
// modes (search, replay, swarm), each printing text or JSON; the search's
// report is one function shared by the generated machine and scenario files,
// and by the two searches of --driver (with the OS as documented, and the
// driver alone).
//
//   explore [FILE|NAME] [--untimed] [--faults N] [machine] [--variant V] [--driver FILE] [--seed N]
//           [--reduction R] [--restore M] [--max-states N] [--max-depth N] [--max-seconds S]
//           [--bitstate SIZE [--bitstate-hashes K]] [--out FILE] [--timeline OUT.json] [--json]
//       exhaustive search of a scenario file's events (FILE, or a built-in's NAME) or of the
//       generated machine (no FILE); on a violation, the shortest failing schedule as a step
//       list, written to a schedule file; --driver: searched twice, with the OS as documented
//       and the driver alone (the OS's re-read of CurrentValue off: NF-11 on its own)
//   explore … --shard i/n [--report FILE] [--split-depth N]   one shard of the exhaustive search (a report to merge)
//   explore --merge REPORT…      the verdict of the n shards' reports, as one process gives it
//   explore … --workers N        the exhaustive search as N shards on worker threads, merged (src/cli/explore-shards.ts)
//   explore --replay FILE [SCENARIO] [--driver FILE] [--timeline OUT.json] [--json]
//       replays a schedule file: the same step list, byte for byte
//   explore --random --seeds A..B [machine] [--variant V] [--workers N] [--shard i/n] [--max-steps N] [--out FILE] [--json]
//       seeded random schedules; each failing seed with the command that replays it
//
// Exit codes: 0 every invariant holds (or the replayed schedule ends with none
// failing), 1 a violation (a counterexample), 2 bad arguments or an unusable
// file (nothing runs then). Under --json every outcome is one JSON document.

import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync, statSync, accessSync, constants as fsConstants } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { WddmError } from '../base/errors.js';
import { counted } from '../base/words.js';
import { scheduleTimeline } from '../explore/timeline.js';
import {
  DEFAULT_MACHINE, MACHINE_BOUNDS, MACHINE_KEYS, VARIANTS, VARIANT_TITLES, describeMachine, parseOsGranularity, parseVariant,
  type ExploreMachine, type ExploreModel, type OsGranularity, type Variant,
} from '../explore/model.js';
import { exhaustive, shortest, REDUCTIONS, RESTORES, type Bound, type Reduction, type Restore, type SearchResult, type SearchStats } from '../explore/search.js';
import { INVARIANTS, MACHINE_INVARIANTS, SCENARIO_INVARIANTS, type InvariantId, type Violation } from '../explore/invariants.js';
import type { AnyModel } from '../explore/model.js';
import { DRIVER_VARIANTS, VARIANT_NEEDS } from '../explore/variants.js';
import { ScenarioModel } from '../explore/scenario-world.js';
import { TIME_MODES, type TimeMode } from '../explore/world.js';
import { scenarioAdapters } from '../scenario-files/run.js';
import { loadScenario, type LoadedScenario } from './scenario-input.js';
import { loadDriverModule } from '../driver/load.js';
import type { DriverModule } from '../driver/module.js';
import { parseSchedule, scheduleJson, type ScheduleFile } from '../explore/schedule.js';
import { commandLine, parseArguments } from './args.js';
import { replay, replayText, scheduleOf, namedSteps, type Replay } from '../explore/replay.js';
import {
  DEFAULT_SPLIT_DEPTH, ShardError, mergeShardReports, readShardReport, shardReport, type Merged, type ShardReport,
} from './explore-shards.js';
import { ProgressLine } from '../explore/progress.js';
import { SharedVisited } from '../explore/shared-visited.js';
import { BITSTATE_DEFAULT_HASHES } from '../explore/bitstate.js';
import { runningPackage } from '../driver/resolve-hook.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DEFAULT_MAX_STEPS, DEFAULT_SWARM_MACHINE, emptyTally, mergeTally, parseSeedRange, parseShard, runJob, shardSize,
  type SwarmJob, type SwarmTally,
} from '../explore/swarm.js';

/** Where the command writes, and (the bin only) how it starts a worker thread. */
export interface ExploreIo {
  out(text: string): void;
  err(text: string): void;
  isTTY?: boolean;
  /** Runs a swarm job on a worker thread (the CLI entry gives one; without it --workers runs the jobs one after the other here). */
  startWorker?: (job: SwarmJob) => Promise<SwarmTally>;
  /** Runs `explore ARGV` (a shard: it writes its --report) on a worker thread sharing `sharedVisited`, to its exit code (the CLI entry gives one; without it --workers runs the shards one after the other here). */
  startShard?: (argv: string[], sharedVisited: SharedArrayBuffer) => Promise<number>;
  /** A shard of explore --workers N: the visited table its worker threads share (src/explore/shared-visited.ts). */
  sharedVisited?: SharedArrayBuffer;
  /** The clock of the progress line (tests give their own); default performance.now. */
  nowMs?: () => number;
}

const DEFAULT_MAX_STATES = 2_000_000;
const DEFAULT_OUT = 'wddm-fence-counterexample.json';
/** The most faults (TDRs, adapter removals) --faults injects per run. */
const MAX_FAULTS = 4;

export const EXPLORE_HELP = `usage: wddm-fence explore [FILE|NAME] [options]

The race explorer (docs/EXPLORER.md): every interleaving of a scenario file's events
(FILE, or a built-in scenario's NAME: wddm-fence list), or of a small generated machine
(no FILE), with invariants checked in every reachable state and the scenario's expect in
every terminal state. Exhaustive by default; --replay FILE replays a schedule; --random
runs seeded random schedules of bigger generated machines.

A scenario file:
  --untimed         any order that keeps each queue's, thread's and OS operation's own order
                    (a timeout may fire at any point before its wait is satisfied); default:
                    timed, each latency at either end of its jitter span
  --faults N        also inject up to N faults per run (0..${MAX_FAULTS}): a TDR or an adapter's removal, between any two steps

The generated machine (each a small integer; defaults ${MACHINE_KEYS.map((k) => DEFAULT_MACHINE[k]).join(' ')}, with --random ${MACHINE_KEYS.map((k) => DEFAULT_SWARM_MACHINE[k]).join(' ')}):
  --fences N        native fences (${MACHINE_BOUNDS.fences.join('..')})
  --waiters N       CPU threads, each waiting for one fence value (${MACHINE_BOUNDS.waiters.join('..')})
  --signals N       GPU signals per fence, values v1..vN (${MACHINE_BOUNDS.signals.join('..')})
  --engines N       engines per adapter, one hardware queue each (${MACHINE_BOUNDS.engines.join('..')})
  --adapters N      adapters (${MACHINE_BOUNDS.adapters.join('..')})
  --cpu-signals N   CPU signals in all, above the GPU's values (${MACHINE_BOUNDS.cpuSignals.join('..')})
  --os-granularity G  step (default: each OS operation in steps: waiter add, MonitoredValue
                    write + DDI, each CMP step of the DDI, re-read, retire) | operation (each whole)

Both:
  --variant V       the protocol (default barrier):
${VARIANTS.map((v) => `                      ${v.padEnd(25)} ${VARIANT_TITLES[v]}`).join('\n')}
  --seed N          the machine's seed (0..4294967295; default 1, a scenario's machine.seed)
  --driver FILE     every adapter runs this driver module (.mjs exporting createDriver, or .wasm); searched
                    twice: with the OS as documented, and the driver alone (the OS's re-read of
                    CurrentValue after UpdateMonitoredValues off: NF-11 judged on its own)

Exhaustive search on several cores or machines (--reduction full; docs/EXPLORER.md "Shards"):
  --workers N       N shards on worker threads, merged: the same verdict and counts as one process
  --shard i/n       search only shard i of n (subtrees of the schedule tree, round robin) and
                    write a report: its exit code is its own part's, no proof alone
  --report FILE     where the shard's report goes (default wddm-fence-shard-I-of-N.json)
  --split-depth N   subtrees start N steps from the start (default ${DEFAULT_SPLIT_DEPTH}); the same for every shard
  --merge REPORT…   the verdict of all n reports: states (their union), violations, the shortest
                    counterexample (searched again); refuses reports of different searches
  --progress        a progress line on stderr at most once a second (default: when stderr is a
                    terminal and not --json): states, states/s, depth, frontier, an estimate

Exhaustive search:
  --reduction R     full (default: visited set, sleep sets, eager steps, persistent sets) |
                    states (visited set only; also counts complete interleavings) | none
                    (every interleaving)
  --restore M       snapshot (default: restore memory and host objects) | replay (rebuild
                    the machine and replay the choices)
  --max-states N    stop after N states (default ${DEFAULT_MAX_STATES})
  --max-depth N     take no step past N steps from the start (default none)
  --max-seconds S   stop after S seconds (default none)
                    a bound reached leaves the search NOT complete: its verdicts are no proof
  --bitstate SIZE   keep the visited set as SIZE of bits (e.g. 64M; K, M, G are KiB, MiB, GiB)
                    (8..512M) instead of each state's key: for machines too big to store. Sleep sets off;
                    not with --shard, --workers or --merge. No proof: a state whose bits others
                    set is taken for visited; the report gives the expected number omitted
  --bitstate-hashes K  bit positions per state (1..16, default ${BITSTATE_DEFAULT_HASHES})
  --out FILE        where a counterexample's schedule file goes (default wddm-fence-counterexample.json)
  --timeline OUT.json
                    also write the counterexample's timeline (https://ui.perfetto.dev)
  --json            one JSON document

Replay:
  --replay FILE     replay a schedule file: prints the same step list as the search did
                    (a scenario's schedule names its file; give the file again to check it)
  --timeline OUT.json
                    also write its timeline

Swarm (the generated machine):
  --random          seeded random schedules instead of the exhaustive search
  --seeds A..B      the seeds (required), e.g. 1..1000
  --workers N       worker threads (default 1)
  --shard i/n       run only shard i of n of the seeds (a CI matrix or batch array: one job per shard)
  --max-steps N     steps one seed may take (default ${DEFAULT_MAX_STEPS})

Exit codes: 0 every invariant holds, 1 a counterexample, 2 bad arguments or an unusable file.
`;

class ExploreUsage extends Error {}


type Values = Record<string, string | boolean | undefined>;

function integerOption(values: Values, name: string, min: number, max: number): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new ExploreUsage(`--${name} is "${raw}"; expected an integer from ${min} to ${max}`);
  return n;
}

function machineOf(values: Values, defaults: Readonly<ExploreMachine>): ExploreMachine {
  const flag = (key: keyof ExploreMachine) => (key === 'cpuSignals' ? 'cpu-signals' : key);
  const machine = { ...defaults };
  for (const key of MACHINE_KEYS) {
    const [min, max] = MACHINE_BOUNDS[key];
    const n = integerOption(values, flag(key), min, max);
    if (n !== undefined) machine[key] = n;
  }
  return machine;
}

/** The flags that give a machine, for the replay commands printed for swarm failures. */
function machineFlags(machine: ExploreMachine, variant: Variant, osGranularity: OsGranularity): string {
  return `--fences ${machine.fences} --waiters ${machine.waiters} --signals ${machine.signals} --engines ${machine.engines} --adapters ${machine.adapters} --cpu-signals ${machine.cpuSignals} --variant ${variant} --os-granularity ${osGranularity}`;
}

function exists(path: string): boolean { try { statSync(path); return true; } catch { return false; } }

/** An output path must be a file in an existing folder this user may write: checked before anything runs. */
function checkOutput(option: string, path: string): void {
  if (path === '') throw new ExploreUsage(`${option} is ""; expected the path of a file to write`);
  let stats;
  try { stats = statSync(path); } catch { /* a new file */ }
  if (stats?.isDirectory()) throw new ExploreUsage(`${option} is "${path}", a directory; expected a file to write`);
  const folder = dirname(resolve(path));
  if (!exists(folder) || !statSync(folder).isDirectory()) throw new ExploreUsage(`${option} is "${path}", but the folder "${dirname(path)}" does not exist; expected a file in an existing folder`);
  try { accessSync(stats ? path : folder, fsConstants.W_OK); } catch { throw new ExploreUsage(`${option} is "${path}", which cannot be written (permission denied)`); }
}

function readScheduleFile(path: string): ScheduleFile {
  let text: string;
  try {
    const stats = statSync(path);
    if (!stats.isFile()) throw new ExploreUsage(`--replay is "${path}", which is not a file; expected a schedule file (JSON)`);
    if (stats.size > 64 << 20) throw new ExploreUsage(`--replay is "${path}", ${stats.size} bytes; expected a schedule file of at most 64 MiB`);
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if (error instanceof ExploreUsage) throw error;
    throw new ExploreUsage(`--replay is "${path}", which cannot be read: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
  }
  return parseSchedule(text, path);
}

const BOUND_FLAGS: Readonly<Record<Bound, string>> = { states: '--max-states', depth: '--max-depth', time: '--max-seconds' };
const notComplete = (s: SearchStats) => `NOT complete (${s.stoppedBy.map((b) => BOUND_FLAGS[b]).join(', ')} reached): no proof`;

const statsLine = (s: SearchStats, ms: number) =>
  `  ${s.states} states (${s.quietStates} quiet), ${s.transitions} transitions${s.interleavings !== undefined ? `, ${s.interleavings} complete interleavings` : ''}${s.cyclic ? ', a cycle (a step that changes nothing)' : ''}, depth up to ${s.maxDepth}, ` +
  `${s.restore === 'snapshot' ? `${s.restores} restores` : `${s.runs} runs from the start`}, ${(ms / 1000).toFixed(2)} s (${Math.round(s.states / Math.max(ms / 1000, 1e-3))} states/s): ${s.complete ? 'complete' : notComplete(s)}` +
  (s.bitstate ? `\n  bitstate: ${bytesText(s.bitstate.bytes)} (${s.bitstate.sizeBits} bits, ${s.bitstate.hashes} per state), ${(s.bitstate.fill * 100).toFixed(2)} % set, about ${omittedText(s.bitstate.expectedOmissions)} states omitted (expected): no proof` : '');

/** Bytes as KiB, MiB or GiB when whole. */
function bytesText(bytes: number): string {
  for (const [unit, size] of [['GiB', 2 ** 30], ['MiB', 2 ** 20], ['KiB', 2 ** 10]] as const) if (bytes >= size && bytes % size === 0) return `${bytes / size} ${unit}`;
  return `${bytes} B`;
}

/** An expected count of omissions: small ones with their digits, never rounded to a false 0. */
function omittedText(expected: number): string {
  if (expected >= 10) return String(Math.round(expected));
  if (expected >= 0.01) return expected.toFixed(2);
  return expected === 0 ? '0' : expected.toExponential(1);
}

/** --bitstate SIZE: bytes (a whole number, optionally K, M or G for KiB, MiB, GiB), 8 B to 512 MiB (2^32 bits: a bit position is 32 bits). */
function parseBitstateSize(raw: string): number {
  const match = /^(\d+)([KMG]?)$/i.exec(raw.trim());
  const bytes = match ? Number(match[1]) * ({ '': 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30 } as Record<string, number>)[match[2].toUpperCase()] : NaN;
  if (!Number.isSafeInteger(bytes) || bytes < 8 || bytes > 2 ** 29) throw new ExploreUsage(`--bitstate is "${raw}"; expected a size from 8 bytes to 512M: a whole number of bytes, or with K, M or G (KiB, MiB, GiB), e.g. 64M`);
  return bytes;
}

const REDUCTION_TEXT: Record<Reduction, string> = {
  full: 'full (visited set, sleep sets, eager steps, persistent sets)', states: 'states (visited set)', none: 'none (every interleaving)',
};

function statsJson(s: SearchStats, ms: number): Record<string, unknown> {
  return { ...s, interleavings: s.interleavings?.toString(), timeMs: Math.round(ms), statesPerSec: Math.round(s.states / Math.max(ms / 1000, 1e-3)) };
}

function replayJson(r: Replay): Record<string, unknown> {
  return { start: r.start, steps: r.steps, quiet: r.quiet, violations: r.violations };
}

function writeTimeline(io: ExploreIo, path: string | undefined, r: Replay): void {
  if (!path) return;
  writeFileSync(path, JSON.stringify(scheduleTimeline(r)) + '\n');
  io.err(`wddm-fence: timeline written to ${path} (open it in https://ui.perfetto.dev or chrome://tracing)\n`);
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** A scenario to explore: the file read, its drivers loaded. */
interface ScenarioInput { target: string; loaded: LoadedScenario; adapters: Awaited<ReturnType<typeof scenarioAdapters>> }

async function scenarioInput(target: string): Promise<ScenarioInput> {
  const loaded = loadScenario(target);
  return { target, loaded, adapters: await scenarioAdapters(loaded.scenario, loaded.source) };
}

/** One search to run and report: its model, what it is called in the report (the --driver pair), and what it prints. */
interface Search { model: AnyModel; title?: string; invariants: readonly InvariantId[] }

interface SearchSettings {
  reduction: Reduction; restore: Restore; maxStates: number; maxDepth?: number; maxSeconds?: number;
  /** --bitstate: the visited set as bits (no proof; sleep sets off). */
  bitstate?: { sizeBits: number; hashes: number };
  /** A shard's search: which, and what its report needs (the report is written, no counterexample searched). */
  shard?: ShardRun;
  /** A merge: the shards' results stand for the searches (nothing is searched again but the shortest counterexample). */
  merged?: Merged;
  /** A progress line on stderr (ProgressLine). */
  progress: boolean;
  out: string; timeline?: string;
  /** What the report names (machine or scenario), the driver's line. */
  heading: string[];
  /** The replay command's arguments after --replay OUT (the scenario file, --driver). */
  replayArgs: string[];
  /** Fills in a schedule file's scenario reference and driver (the caller read the files). */
  finish(file: ScheduleFile): void;
  /** What the JSON document says of the model. */
  json: boolean;
  /** The scenario text's SHA-256 (a scenario file) or null: a shard's report carries it, a merge compares it. */
  scenarioSha256: string | null;
  jsonModel: Record<string, unknown>;
}

/** explore --replay FILE: the schedule file's steps again, on the model it names (a generated machine or a scenario file). */
async function replayMode(io: ExploreIo, values: Values, target: string | undefined, driver: DriverModule | undefined,
                          withDriver: (model: ExploreModel) => ExploreModel): Promise<number> {
  const path = values.replay as string;
  const file = readScheduleFile(path);
  if (values.timeline !== undefined && resolve(values.timeline as string) === resolve(path)) throw new ExploreUsage(`--timeline is "${path}", the schedule file itself; expected another file`);
  if (file.driver !== undefined && !driver) throw new ExploreUsage(`--replay: "${path}" was found with the driver module ${file.driver}; give it again with --driver FILE`);
  let model: AnyModel;
  if (file.scenario) {
    const input = await scenarioInput(target ?? file.scenario.source);
    if (sha256(input.loaded.text) !== file.scenario.sha256) {
      throw new ExploreUsage(`--replay: "${path}" was found on ${file.scenario.builtin ? 'the built-in scenario' : 'the scenario file'} ${file.scenario.source} as it was then (SHA-256 ${file.scenario.sha256.slice(0, 12)}…), but ${input.target} is not that text now; expected the same scenario file`);
    }
    model = new ScenarioModel({ scenario: input.loaded.scenario, source: input.loaded.source, adapters: input.adapters, time: file.time!, variant: file.variant, seed: file.seed, faults: file.faults, driver, ...(file.resample === false ? { resample: false } : {}) });
  } else {
    if (target !== undefined) throw new ExploreUsage(`--replay: "${path}" is a schedule of the generated machine; expected no scenario beside it`);
    model = withDriver({ machine: file.machine!, variant: file.variant, seed: file.seed, osGranularity: file.osGranularity, ...(file.resample === false ? { resample: false as const } : {}) });
  }
  const r = replay(model, file.steps);
  const code = r.violations.length ? 1 : 0;
  if (values.json) {
    io.out(JSON.stringify({
      ok: code === 0, exitCode: code, mode: 'replay', file: path, ...(file.machine ? { machine: file.machine } : { scenario: file.scenario, time: file.time, faults: file.faults }),
      variant: file.variant, osGranularity: file.osGranularity, seed: file.seed, recorded: file.violation ?? null, replay: replayJson(r),
    }, null, 2) + '\n');
  } else io.out(replayText(model, r));
  writeTimeline(io, values.timeline as string | undefined, r);
  return code;
}

/** explore --random: seeded random schedules of the generated machine (swarm). */
function randomMode(io: ExploreIo, values: Values, target: string | undefined, variant: Variant, osGranularity: OsGranularity,
                    only: (allowed: string[], mode: string) => void): Promise<number> {
  const machineKeys = ['fences', 'waiters', 'signals', 'engines', 'adapters', 'cpu-signals'];
  if (target !== undefined) throw new ExploreUsage('--random runs the generated machine; expected no scenario file with it (explore a scenario exhaustively, with --max-states or --max-seconds as bounds)');
  only(['random', 'seeds', 'workers', 'shard', 'max-steps', 'variant', 'os-granularity', 'out', 'json', ...machineKeys], '--random');
  if (values.seeds === undefined) throw new ExploreUsage('--random needs --seeds A..B (e.g. --seeds 1..1000)');
  let range, shard;
  try {
    range = parseSeedRange(values.seeds as string);
    shard = values.shard === undefined ? { index: 1, count: 1 } : parseShard(values.shard as string);
  } catch (error) { throw new ExploreUsage((error as Error).message); }
  const workers = integerOption(values, 'workers', 1, 64) ?? 1;
  const maxSteps = integerOption(values, 'max-steps', 1, 100_000_000) ?? DEFAULT_MAX_STEPS;
  const machine = machineOf(values, DEFAULT_SWARM_MACHINE);
  if (VARIANT_NEEDS[variant]) throw new ExploreUsage(`--variant ${variant} needs ${VARIANT_NEEDS[variant]}, which the generated machine has none of; expected a scenario file that has one`);
  return swarm(io, { machine, variant, osGranularity, range, shard, workers, maxSteps, json: values.json === true, out: values.out as string | undefined });
}

/** The command's options, parsed (unknown ones and renamed ones refused, naming them). */
function parseExploreArguments(argv: string[]): { values: Values; positionals: string[] } {
  const options = {
    help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' },
    fences: { type: 'string' }, waiters: { type: 'string' }, signals: { type: 'string' }, engines: { type: 'string' }, adapters: { type: 'string' }, 'cpu-signals': { type: 'string' },
    variant: { type: 'string' }, 'os-granularity': { type: 'string' }, seed: { type: 'string' }, reduction: { type: 'string' }, restore: { type: 'string' }, 'max-states': { type: 'string' },
    'max-depth': { type: 'string' }, 'max-seconds': { type: 'string' }, untimed: { type: 'boolean' }, faults: { type: 'string' },
    out: { type: 'string' }, timeline: { type: 'string' }, replay: { type: 'string' }, driver: { type: 'string' },
    random: { type: 'boolean' }, seeds: { type: 'string' }, workers: { type: 'string' }, shard: { type: 'string' }, 'max-steps': { type: 'string' },
    report: { type: 'string' }, 'split-depth': { type: 'string' }, merge: { type: 'boolean' }, progress: { type: 'boolean' },
    bitstate: { type: 'string' }, 'bitstate-hashes': { type: 'string' },
  } as const;
  try {
    const parsed = parseArguments('explore', argv, options, { renamed: { '--trace': '--trace is now --timeline OUT.json (the timeline, Chrome JSON for Perfetto)' } });
    return { values: parsed.values as Values, positionals: parsed.positionals };
  } catch (error) { throw new ExploreUsage((error as Error).message); }
}

async function exploreMain(io: ExploreIo, argv: string[], merged?: Merged): Promise<number> {
  const parsed = parseExploreArguments(argv);
  const values = parsed.values as Values;
  if (values.help) { io.out(EXPLORE_HELP); return 0; }
  const only = (allowed: string[], mode: string) => {
    for (const key of Object.keys(values)) if (values[key] !== undefined && !allowed.includes(key)) throw new ExploreUsage(`--${key} does not go with ${mode}`);
  };
  if (values.merge) {
    if (merged) throw new ExploreUsage('--merge: a shard report records --merge in its command; expected the command of a search');
    only(['merge', 'json', 'out', 'timeline'], '--merge (the reports say the search)');
    if (values.out !== undefined) checkOutput('--out', values.out as string);
    if (values.timeline !== undefined) checkOutput('--timeline', values.timeline as string);
    return mergeMode(io, parsed.positionals, values);
  }
  if (parsed.positionals.length > 1) throw new ExploreUsage(`unexpected argument "${parsed.positionals[1]}"; expected at most one scenario file or name`);
  const target = parsed.positionals[0];
  const machineKeys = ['fences', 'waiters', 'signals', 'engines', 'adapters', 'cpu-signals'];
  let variant: Variant;
  let osGranularity: OsGranularity;
  try {
    variant = parseVariant(values.variant, '--variant');
    osGranularity = parseOsGranularity(values['os-granularity'], '--os-granularity');
  } catch (error) { throw new ExploreUsage((error as Error).message); }
  const seed = integerOption(values, 'seed', 0, 0xffff_ffff);
  // --driver FILE: the machine's adapters run that driver module (loadDriverModule), so the explorer judges it.
  let driver: DriverModule | undefined;
  if (values.driver !== undefined) {
    if (values.random) throw new ExploreUsage('--driver does not go with --random (worker threads would each have to load it); explore it exhaustively, or with --max-states');
    if (DRIVER_VARIANTS.has(variant)) throw new ExploreUsage(`--driver does not go with --variant ${variant} (that variant is a driver of its own)`);
    try { driver = await loadDriverModule(values.driver as string, { from: process.cwd() }); } catch (error) { throw new ExploreUsage((error as Error).message); }
  }
  const withDriver = (model: ExploreModel): ExploreModel => (driver ? {
    ...model,
    adjustOptions: (o) => ({ ...o, adapters: o.adapters!.map((a) => ({ ...a, driver: { ...a.driver, module: driver } })) }),
  } : model);
  if (values.timeline !== undefined) checkOutput('--timeline', values.timeline as string);
  if (values.out !== undefined) checkOutput('--out', values.out as string);
  const driverArgs = values.driver !== undefined ? ['--driver', values.driver as string] : [];

  if (values.replay !== undefined) {
    only(['replay', 'timeline', 'json', 'driver'], '--replay (the file says the model, variant and seed)');
    return replayMode(io, values, target, driver, withDriver);
  }

  if (values.random) return randomMode(io, values, target, variant, osGranularity, only);

  const common = ['driver', 'variant', 'seed', 'reduction', 'restore', 'max-states', 'max-depth', 'max-seconds', 'out', 'timeline', 'json', 'shard', 'report', 'split-depth', 'workers', 'progress', 'bitstate', 'bitstate-hashes'];
  const reduction = (values.reduction ?? 'full') as Reduction;
  if (!REDUCTIONS.includes(reduction)) throw new ExploreUsage(`--reduction is "${values.reduction}"; expected ${REDUCTIONS.join(', ')}`);
  const restore = (values.restore ?? 'snapshot') as Restore;
  if (!RESTORES.includes(restore)) throw new ExploreUsage(`--restore is "${values.restore}"; expected ${RESTORES.join(', ')}`);
  const maxStates = integerOption(values, 'max-states', 1, 1_000_000_000) ?? DEFAULT_MAX_STATES;
  const maxDepth = integerOption(values, 'max-depth', 1, 100_000_000);
  const maxSeconds = integerOption(values, 'max-seconds', 1, 1_000_000);
  const out = (values.out as string | undefined) ?? DEFAULT_OUT;
  const bitstate = bitstateSettings(values, reduction);
  const parallel = await parallelSettings(io, values, argv, reduction);
  if (parallel.workers) return workersMode(io, argv, parallel.workers, values);
  const base = {
    reduction, restore, maxStates, maxDepth, maxSeconds, out, bitstate, timeline: values.timeline as string | undefined, json: values.json === true,
    shard: parallel.shard, merged, progress: values.progress === true || (values.progress === undefined && io.isTTY === true && values.json !== true),
  };
  const driverLine = driver ? [`driver: ${values.driver as string}${driver.name ? ` (${driver.name})` : ''}`] : [];
  // --driver: the driver with the OS as documented, then the driver alone (the OS's re-read after UpdateMonitoredValues off).
  const pair = <M extends AnyModel>(make: (resample: boolean) => M, invariants: readonly InvariantId[]): Search[] => driver
    ? [{ model: make(true), title: 'the driver with the OS as documented (it re-reads CurrentValue after UpdateMonitoredValues, NF-09)', invariants },
      { model: make(false), title: 'the driver alone (the OS\'s re-read after UpdateMonitoredValues off: NF-11 judged on its own)', invariants }]
    : [{ model: make(true), invariants }];

  if (target !== undefined) {
    only([...common, 'untimed', 'faults'], 'a scenario file');
    const time: TimeMode = values.untimed ? 'untimed' : 'timed';
    const faults = integerOption(values, 'faults', 0, MAX_FAULTS) ?? 0;
    const input = await scenarioInput(target);
    const { loaded } = input;
    const make = (resample: boolean) => new ScenarioModel({
      scenario: loaded.scenario, source: loaded.source, adapters: input.adapters, time, variant, faults, driver, ...(seed !== undefined ? { seed } : {}), ...(resample ? {} : { resample: false }),
    });
    let searches: Search[];
    try { searches = pair(make, SCENARIO_INVARIANTS); } catch (error) { throw new ExploreUsage((error as Error).message); }
    const digest = sha256(loaded.text);
    return search(io, searches, {
      ...base,
      heading: driverLine,
      replayArgs: [...(loaded.builtin ? [] : [target]), ...driverArgs],
      finish: (file) => {
        file.scenario = { name: loaded.scenario.name, source: target, builtin: loaded.builtin, sha256: digest };
        if (driver) file.driver = values.driver as string;
      },
      jsonModel: { scenario: { name: loaded.scenario.name, source: loaded.source, builtin: loaded.builtin }, time, faults, variant },
      scenarioSha256: digest,
    });
  }

  only([...common, 'os-granularity', ...machineKeys], 'the exhaustive search');
  if (values.untimed || values.faults !== undefined) throw new ExploreUsage(`--${values.untimed ? 'untimed' : 'faults'} goes with a scenario file; the generated machine has no time and no fault`);
  if (VARIANT_NEEDS[variant]) throw new ExploreUsage(`--variant ${variant} needs ${VARIANT_NEEDS[variant]}, which the generated machine has none of; expected a scenario file that has one (e.g. wddm-fence explore scenario-1 --variant ${variant})`);
  const machine = machineOf(values, DEFAULT_MACHINE);
  const make = (resample: boolean): ExploreModel => withDriver({ machine, variant, seed: seed ?? 1, osGranularity, ...(resample ? {} : { resample: false as const }) });
  return search(io, pair(make, MACHINE_INVARIANTS), {
    ...base,
    heading: [`machine: ${describeMachine(machine)}; variant ${variant}; OS in ${osGranularity === 'step' ? 'steps' : 'whole operations'}; seed ${seed ?? 1}`, ...driverLine],
    replayArgs: driverArgs,
    finish: (file) => { if (driver) file.driver = values.driver as string; },
    jsonModel: { machine, variant, osGranularity, seed: seed ?? 1, reduction },
    scenarioSha256: null,
  });
}

/**
 * Runs each search and reports it (one with --driver absent, two with it); the first that finds a
 * violation gives the shortest counterexample, its schedule file and its step list. Exit 1 when any
 * search found one.
 */
async function search(io: ExploreIo, searches: Search[], s: SearchSettings): Promise<number> {
  const lines: string[] = ['wddm-fence explore: exhaustive search'];
  const reports: Record<string, unknown>[] = [];
  let failed: { model: AnyModel; result: SearchResult } | undefined;
  if (s.merged && s.merged.scenarioSha256 !== s.scenarioSha256) {
    throw new ExploreUsage(`--merge: the shards searched another text of the scenario (SHA-256 ${String(s.merged.scenarioSha256).slice(0, 12)}…) than the file reads now (${String(s.scenarioSha256).slice(0, 12)}…); expected the same file: merge where, and with the file as, the shards ran`);
  }
  const shardSearches: { title?: string; result: SearchResult; ms: number }[] = [];
  for (const [i, one] of searches.entries()) {
    const started = performance.now();
    const deadline = s.maxSeconds !== undefined ? started + s.maxSeconds * 1000 : undefined;
    const progress = s.progress && !s.merged ? new ProgressLine((text) => io.err(text), io.nowMs ?? (() => performance.now()), io.isTTY === true) : undefined;
    const result = s.merged ? s.merged.results[i] : exhaustive(one.model, {
      reduction: s.reduction, restore: s.restore, maxStates: s.maxStates, maxDepth: s.maxDepth, progressEvery: 256,
      shouldStop: deadline !== undefined ? () => performance.now() > deadline : undefined,
      onProgress: progress ? (st, p) => progress.update(st, p) : undefined,
      ...(s.shard ? { shard: { index: s.shard.index - 1, count: s.shard.count, splitDepth: s.shard.splitDepth, shared: s.shard.shared } } : {}),
      ...(s.bitstate ? { bitstate: s.bitstate, sleepSets: false } : {}),
    });
    progress?.end();
    const ms = s.merged ? s.merged.ms[i] : performance.now() - started;
    if (s.shard) shardSearches.push({ title: one.title, result, ms });
    if (i === 0) {
      const world = headerOf(one.model);
      lines.push(...(world.length ? world : []), ...s.heading);
      lines.push(`search: reduction ${s.bitstate ? 'full (bitstate visited set, eager steps; sleep sets off)' : REDUCTION_TEXT[s.reduction]}, back by ${result.stats.restore}`);
    }
    if (one.title) lines.push(`${i + 1}. ${one.title}`);
    if (s.merged) lines.push(`  merged from ${s.merged.count} shards (split depth ${s.merged.splitDepth}, ${s.merged.roots[i]} subtree roots; each shard's own states ${s.merged.shardStates[i].join(', ')}): the states are their union, transitions and runs their sum, the time the longest shard's`);
    if (s.shard) lines.push(`  shard ${s.shard.index}/${s.shard.count} (split depth ${s.shard.splitDepth}): ${result.shard!.owned} of ${result.shard!.roots} subtree roots and the top above them; its counts are its own part's, no proof alone: merge every shard's report with explore --merge`);
    lines.push(statsLine(result.stats, ms));
    lines.push('invariants:');
    for (const inv of INVARIANTS.filter((x) => one.invariants.includes(x.id))) {
      const found = result.violations.get(inv.id);
      const verdict = found ? 'VIOLATED' : result.stats.complete && !s.shard && !s.bitstate ? 'holds' : 'not seen';
      lines.push(`  ${verdict.padEnd(9)} ${inv.id.padEnd(24)} ${inv.requirement.padEnd(6)} ${inv.title}${found ? `\n            first seen after ${counted(found.path.length, 'step')}: ${found.message}` : ''}`);
    }
    if (one.title && i === 1 && result.violations.size && !failed) {
      lines.push('NF-11: the driver alone loses what only the OS\'s re-read of CurrentValue finds: its UpdateMonitoredValues does not do the CMP\'s steps in their order (write MonitoredValue, barrier, read CurrentValue, interrupt if above)');
    }
    reports.push({
      ...(one.title ? { search: one.title } : {}), stats: statsJson(result.stats, ms),
      invariants: INVARIANTS.filter((x) => one.invariants.includes(x.id)).map((inv) => {
        const found = result.violations.get(inv.id);
        return { ...inv, holds: !found && result.stats.complete && !s.shard && !s.bitstate, violated: !!found, firstSeen: found ? { steps: found.path.length, message: found.message } : null };
      }),
    });
    if (result.violations.size && !failed) failed = { model: one.model, result };
  }
  if (s.shard) return writeShard(io, s, shardSearches, lines, reports, failed !== undefined);
  if (!failed) {
    const complete = reports.every((r) => (r.stats as { complete: boolean }).complete);
    if (s.json) io.out(JSON.stringify({ ok: true, exitCode: 0, mode: 'exhaustive', ...s.jsonModel, ...mergedJson(s.merged), search: reports[0].stats, invariants: reports[0].invariants, ...(reports.length > 1 ? { driverAlone: reports[1] } : {}), counterexample: null }, null, 2) + '\n');
    else io.out(lines.join('\n') + '\n' + (s.bitstate ? 'no violation in the states explored (bitstate: states may have been omitted, see above: not a proof; the exact search, without --bitstate, is)\n'
      : complete ? 'every invariant holds in every reachable state\n' : 'no violation in the states explored (the search was bounded: not a proof)\n'));
    return 0;
  }
  // The shortest failing schedule (search.ts shortest), no longer than the first one found.
  const { model, result } = failed;
  const depthBound = Math.min(...[...result.violations.values()].map((v) => v.path.length));
  const bfsStarted = performance.now();
  const quietOnly = result.stats.complete && [...result.violations.keys()].every((id) => INVARIANTS.find((i) => i.id === id)?.when === 'quiet');
  const deadline = s.maxSeconds !== undefined ? bfsStarted + s.maxSeconds * 1000 : undefined;
  const best = shortest(model, { maxDepth: depthBound, maxStates: s.maxStates, restore: s.restore, quietOnly, shouldStop: deadline !== undefined ? () => performance.now() > deadline : undefined });
  const bfsMs = performance.now() - bfsStarted;
  const found = best.found ?? [...result.violations.values()].sort((a, b) => a.path.length - b.path.length)[0];
  const violation: Violation = { invariant: found.invariant, message: found.message };
  const steps = namedSteps(model, found.path, found.bounds);
  const file = scheduleOf(model, steps, violation);
  s.finish(file);
  writeFileSync(s.out, scheduleJson(file));
  const r = replay(model, steps);
  lines.push(`shortest counterexample: ${counted(steps.length, 'step')} (${best.complete ? '' : 'NOT proven shortest: a bound was reached; '}search over ${best.states} states, ${(bfsMs / 1000).toFixed(2)} s): ${violation.invariant}: ${violation.message}`);
  // the command that replays it, runnable as printed: the scenario file and the driver module too (the file names them, --replay needs them again)
  const replayCommand = commandLine('wddm-fence', 'explore', '--replay', s.out, ...s.replayArgs);
  lines.push(`schedule written to ${s.out}; replay it with: ${replayCommand}`);
  if (s.json) {
    io.out(JSON.stringify({
      ok: false, exitCode: 1, mode: 'exhaustive', ...s.jsonModel, ...mergedJson(s.merged), search: reports[0].stats, invariants: reports[0].invariants, ...(reports.length > 1 ? { driverAlone: reports[1] } : {}),
      counterexample: { ...violation, steps: steps.length, shortestSearch: { states: best.states, expansions: best.expansions, complete: best.complete, quietOnly, timeMs: Math.round(bfsMs) }, scheduleFile: s.out, replayCommand, replay: replayJson(r) },
    }, null, 2) + '\n');
  } else {
    io.out(lines.join('\n') + '\n\n' + replayText(model, r));
  }
  writeTimeline(io, s.timeline, r);
  return 1;
}

// ── shards, workers and merges (src/cli/explore-shards.ts has the report and the merge) ──

/** A shard's search: i of n (1-based), the split depth, where its report goes and what the report says the search was. */
interface ShardRun { index: number; count: number; splitDepth: number; report: string; argv: string[]; package: string; shared?: SharedVisited }

/** The options a shard's report leaves out of the command it records (a merge gives its own output options). */
const NOT_RECORDED = new Set(['--shard', '--report', '--split-depth', '--workers', '--json', '--progress', '--out', '--timeline']);
const TAKES_VALUE = new Set(['--shard', '--report', '--split-depth', '--workers', '--out', '--timeline']);

/** `argv` less the options in `drop` (both --name value and --name=value). */
function withoutOptions(argv: readonly string[], drop: ReadonlySet<string>): string[] {
  const kept: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i].startsWith('--') ? argv[i].split('=')[0] : argv[i];
    if (!drop.has(name)) { kept.push(argv[i]); continue; }
    if (TAKES_VALUE.has(name) && !argv[i].includes('=')) i++;
  }
  return kept;
}

/** --bitstate SIZE and --bitstate-hashes K, checked up front: the exact search's reduction, one process. */
function bitstateSettings(values: Values, reduction: Reduction): { sizeBits: number; hashes: number } | undefined {
  if (values.bitstate === undefined) {
    if (values['bitstate-hashes'] !== undefined) throw new ExploreUsage('--bitstate-hashes goes with --bitstate SIZE');
    return undefined;
  }
  if (reduction !== 'full') throw new ExploreUsage(`--bitstate needs --reduction full (it is ${reduction}): the other reductions count complete interleavings per state, which a bit cannot keep`);
  for (const key of ['shard', 'workers']) if (values[key] !== undefined) throw new ExploreUsage(`--bitstate does not go with --${key}: a shard's report carries its states' keys, which a bit array does not keep`);
  const bytes = parseBitstateSize(values.bitstate as string);
  return { sizeBits: bytes * 8, hashes: integerOption(values, 'bitstate-hashes', 1, 16) ?? BITSTATE_DEFAULT_HASHES };
}

/** --shard, --report, --split-depth and --workers of the exhaustive search, checked up front. */
async function parallelSettings(io: ExploreIo, values: Values, argv: readonly string[], reduction: Reduction): Promise<{ shard?: ShardRun; workers?: number }> {
  const workers = integerOption(values, 'workers', 1, 64);
  const splitDepth = integerOption(values, 'split-depth', 1, 10_000) ?? DEFAULT_SPLIT_DEPTH;
  if (values.shard === undefined && workers === undefined) {
    for (const key of ['report', 'split-depth']) if (values[key] !== undefined) throw new ExploreUsage(`--${key} goes with --shard i/n or --workers N (a shard's search)`);
    return {};
  }
  if (reduction !== 'full') throw new ExploreUsage(`--${values.shard !== undefined ? 'shard' : 'workers'} needs --reduction full (the other reductions count complete interleavings, which a subtree alone cannot)`);
  if (values.shard !== undefined && workers !== undefined) throw new ExploreUsage('--workers does not go with --shard (a shard runs in one process: run more shards instead, e.g. --shard 3/8)');
  if (workers !== undefined) {
    if (values.report !== undefined) throw new ExploreUsage('--report goes with --shard i/n; --workers merges its shards itself');
    return workers > 1 ? { workers } : {};
  }
  let shard;
  try { shard = parseShard(values.shard as string); } catch (error) { throw new ExploreUsage((error as Error).message); }
  const report = (values.report as string | undefined) ?? `wddm-fence-shard-${shard.index}-of-${shard.count}.json`;
  checkOutput('--report', report);
  const version = (await runningPackage())?.version ?? 'unknown';
  const shared = io.sharedVisited ? new SharedVisited(io.sharedVisited) : undefined;
  return { shard: { ...shard, splitDepth, report, argv: withoutOptions(argv, NOT_RECORDED), package: version, ...(shared ? { shared } : {}) } };
}

/** A shard's end: its report written, its own part's verdict printed (no counterexample: the merge searches it). */
function writeShard(io: ExploreIo, s: SearchSettings, searches: { title?: string; result: SearchResult; ms: number }[],
                    lines: string[], reports: Record<string, unknown>[], failed: boolean): number {
  const run = s.shard!;
  const report: ShardReport = shardReport({ package: run.package, argv: run.argv, scenarioSha256: s.scenarioSha256, shard: { index: run.index, count: run.count }, splitDepth: run.splitDepth, searches });
  writeFileSync(run.report, JSON.stringify(report) + '\n');
  const code = failed ? 1 : 0;
  if (s.json) {
    io.out(JSON.stringify({ ok: !failed, exitCode: code, mode: 'shard', ...s.jsonModel, shard: `${run.index}/${run.count}`, splitDepth: run.splitDepth, report: run.report,
      search: reports[0].stats, invariants: reports[0].invariants, ...(reports.length > 1 ? { driverAlone: reports[1] } : {}) }, null, 2) + '\n');
  } else {
    io.out(`${lines.join('\n')}\nshard report written to ${run.report}; the verdict is the merge of all ${run.count}: ${commandLine('wddm-fence', 'explore', '--merge', `wddm-fence-shard-*-of-${run.count}.json`)}\n`);
  }
  return code;
}

function mergedJson(merged: Merged | undefined): Record<string, unknown> {
  return merged ? { merged: { shards: merged.count, splitDepth: merged.splitDepth, roots: merged.roots, shardStates: merged.shardStates } } : {};
}

/** explore --merge REPORT…: the reports checked, united, and judged as the one process's search (exploreMain again, with the shards' results). */
async function mergeMode(io: ExploreIo, paths: string[], values: Values): Promise<number> {
  let merged: Merged, first: ShardReport;
  try {
    const reports = paths.map((path) => ({ path, report: readShardReport(path) }));
    merged = mergeShardReports(reports);
    first = reports[0].report;
  } catch (error) {
    if (error instanceof ShardError) throw new ExploreUsage(error.message);
    throw error;
  }
  const version = (await runningPackage())?.version ?? 'unknown';
  if (first.package !== version) throw new ExploreUsage(`--merge: the reports were written by wddm-fence ${first.package}, this is ${version}; expected the same version (it searches the counterexample again)`);
  const output = [...(values.json ? ['--json'] : []), ...(values.out !== undefined ? ['--out', values.out as string] : []), ...(values.timeline !== undefined ? ['--timeline', values.timeline as string] : [])];
  const argv = [...first.argv, ...output];
  const code = await exploreMain(io, argv, merged);
  return code;
}

/** explore … --workers N: N shards on worker threads (or one after the other without them), then their merge. */
async function workersMode(io: ExploreIo, argv: readonly string[], workers: number, values: Values): Promise<number> {
  // The workers share one visited table: each state below the split depth is claimed by one worker, and what its sleep set left out is explored by the next to meet it with that awake.
  const maxStates = integerOption(values, 'max-states', 1, 1_000_000_000) ?? DEFAULT_MAX_STATES;
  const sharedVisited = SharedVisited.create(maxStates * workers);
  const folder = mkdtempSync(join(tmpdir(), 'wddm-fence-shards-'));
  try {
    const base = withoutOptions(argv, new Set(['--workers', '--json', '--progress', '--out', '--timeline']));
    const files = Array.from({ length: workers }, (_, i) => join(folder, `shard-${i + 1}-of-${workers}.json`));
    const shardArgv = (i: number) => [...base, '--shard', `${i + 1}/${workers}`, '--report', files[i], '--json'];
    const errors: string[] = [];
    const quiet: ExploreIo = { out: () => {}, err: (text) => { errors.push(text); }, sharedVisited };
    if (!io.startShard) io.err(`wddm-fence: --workers ${workers}: no worker threads here (the library, not the command); running the ${workers} shards one after the other
`);
    const codes = io.startShard ? await Promise.all(files.map((_, i) => io.startShard!(shardArgv(i), sharedVisited))) : [];
    if (!io.startShard) for (let i = 0; i < workers; i++) codes.push(await exploreCommand(quiet, shardArgv(i)));
    const broken = codes.findIndex((code) => code !== 0 && code !== 1);
    if (broken >= 0) throw new Error(`shard ${broken + 1}/${workers} failed (exit ${codes[broken]})${errors.length ? `: ${errors.join('').trim()}` : ''}`);
    return await mergeMode(io, files, values);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** The first lines that say what is explored: the scenario's (its World's header, less the values line); the generated machine's come from the caller. */
function headerOf(model: AnyModel): string[] {
  if (!('kind' in model)) return [];
  return [model.build({ trace: false }).header()[0]];
}

interface SwarmSettings {
  machine: ExploreMachine; variant: Variant; osGranularity: OsGranularity; range: { from: number; to: number }; shard: { index: number; count: number };
  workers: number; maxSteps: number; json: boolean; out?: string;
}

async function swarm(io: ExploreIo, s: SwarmSettings): Promise<number> {
  const total = shardSize(s.range, s.shard);
  const jobs: SwarmJob[] = Array.from({ length: Math.max(1, Math.min(s.workers, total)) }, (_, worker, ) => ({
    machine: s.machine, variant: s.variant, osGranularity: s.osGranularity, range: s.range, shard: s.shard, worker, workers: Math.max(1, Math.min(s.workers, total)), maxSteps: s.maxSteps,
  }));
  const started = performance.now();
  const tally = emptyTally();
  if (jobs.length > 1 && !io.startWorker) io.err(`wddm-fence: --workers ${s.workers}: no worker threads here (the library, not the command); running the ${jobs.length} shares one after the other\n`);
  const tallies = jobs.length > 1 && io.startWorker ? await Promise.all(jobs.map((job) => io.startWorker!(job))) : jobs.map((job) => runJob(job));
  for (const t of tallies) mergeTally(tally, t);
  const ms = performance.now() - started;
  const seedsRange = s.range.from === s.range.to ? `${s.range.from}` : `${s.range.from}..${s.range.to}`;
  const command = (seed: number) => `wddm-fence explore --random --seeds ${seed}..${seed} ${machineFlags(s.machine, s.variant, s.osGranularity)}`;
  const perCore = tally.seeds / Math.max(ms / 1000, 1e-3) / jobs.length;
  const code = tally.failures.length ? 1 : 0;
  let counterexample: { file: string; replay: Replay; violation: Violation } | undefined;
  if (total === 1 && tally.failures.length === 1) {
    // One seed that fails: its step list and schedule file, as the exhaustive search gives.
    const failure = tally.failures[0];
    const model: ExploreModel = { machine: s.machine, variant: s.variant, seed: failure.seed, osGranularity: s.osGranularity };
    const steps = namedSteps(model, failure.path);
    const out = s.out ?? DEFAULT_OUT;
    writeFileSync(out, scheduleJson(scheduleOf(model, steps, failure)));
    counterexample = { file: out, replay: replay(model, steps), violation: failure };
  }
  if (s.json) {
    io.out(JSON.stringify({
      ok: code === 0, exitCode: code, mode: 'random', machine: s.machine, variant: s.variant, osGranularity: s.osGranularity, seeds: seedsRange, shard: `${s.shard.index}/${s.shard.count}`, workers: jobs.length,
      run: { seeds: tally.seeds, steps: tally.steps, timeMs: Math.round(ms), seedsPerSecPerWorker: Math.round(perCore) },
      invariants: INVARIANTS.filter((x) => MACHINE_INVARIANTS.includes(x.id)).map((inv) => ({ ...inv, failingSeeds: tally.failed[inv.id] })),
      failures: tally.failures.map((f) => ({ seed: f.seed, invariant: f.invariant, message: f.message, steps: f.path.length, replay: command(f.seed) })),
      counterexample: counterexample ? { scheduleFile: counterexample.file, replay: replayJson(counterexample.replay) } : null,
    }, null, 2) + '\n');
    return code;
  }
  const lines: string[] = [];
  lines.push(`wddm-fence explore --random: seeds ${seedsRange}${s.shard.count > 1 ? `, shard ${s.shard.index}/${s.shard.count}` : ''} (${total} seed${total === 1 ? "" : "s"}), ${jobs.length} worker${jobs.length === 1 ? '' : 's'}`);
  lines.push(`machine: ${describeMachine(s.machine)}; variant ${s.variant}; OS in ${s.osGranularity === 'step' ? 'steps' : 'whole operations'}`);
  lines.push(`  ${tally.seeds} seed${tally.seeds === 1 ? "" : "s"}, ${tally.steps} steps, ${tally.failures.length} failing, ${(ms / 1000).toFixed(2)} s (${perCore.toFixed(1)} seeds/s per worker)`);
  lines.push('invariants:');
  for (const inv of INVARIANTS.filter((x) => MACHINE_INVARIANTS.includes(x.id))) {
    const n = tally.failed[inv.id];
    lines.push(`  ${(n ? `VIOLATED in ${n} seed${n === 1 ? '' : 's'}` : 'holds').padEnd(20)} ${inv.id.padEnd(24)} ${inv.title}`);
  }
  for (const f of tally.failures.slice(0, 50)) {
    lines.push(`FAIL seed ${f.seed}: ${f.invariant}: ${f.message} (after ${counted(f.path.length, 'step')})`);
    lines.push(`  replay: ${command(f.seed)}`);
  }
  if (tally.failures.length > 50) lines.push(`… and ${tally.failures.length - 50} more failing seeds (--json lists every one)`);
  let text = lines.join('\n') + '\n';
  if (counterexample) {
    text += `schedule written to ${counterexample.file}; replay it with: ${commandLine('wddm-fence', 'explore', '--replay', counterexample.file)}\n\n` + replayText({ machine: s.machine, variant: s.variant, seed: tally.failures[0].seed, osGranularity: s.osGranularity }, counterexample.replay);
  }
  io.out(text);
  return code;
}

/** Runs `wddm-fence explore …` (argv after the command); never throws. */
export async function exploreCommand(io: ExploreIo, argv: string[]): Promise<number> {
  try {
    return await exploreMain(io, argv);
  } catch (error) {
    const usage = error instanceof ExploreUsage || error instanceof WddmError;
    const code = usage ? 2 : 1;
    const text = usage ? (error as Error).message : `internal error: ${(error as Error)?.stack ?? error}`;
    io.err(`wddm-fence explore: ${text}\n${error instanceof ExploreUsage ? '(wddm-fence explore --help lists the options)\n' : ''}`);
    if (argv.includes('--json')) io.out(JSON.stringify({ ok: false, exitCode: code, error: usage ? 'usage' : 'internal-error', message: text.split('\n')[0] }, null, 2) + '\n');
    return code;
  }
}
