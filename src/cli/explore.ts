// `wddm-fence explore`: the race explorer from the command line
// (src/explore/ does the work; docs/EXPLORER.md explains it).
//
//   explore [machine] [--variant V] [--seed N] [--reduction R] [--restore M] [--max-states N] [--out FILE] [--timeline OUT.json] [--json]
//       exhaustive search of the machine; on a violation, the shortest failing
//       schedule as a step list, written to a schedule file
//   explore --replay FILE [--timeline OUT.json] [--json]
//       replays a schedule file: the same step list, byte for byte
//   explore --random --seeds A..B [machine] [--variant V] [--workers N] [--shard i/n] [--max-steps N] [--out FILE] [--json]
//       seeded random schedules; each failing seed with the command that replays it
//
// Exit codes: 0 every invariant holds (or the replayed schedule ends with none
// failing), 1 a violation (a counterexample), 2 bad arguments or an unusable
// file (nothing runs then). Under --json every outcome is one JSON document.

import { readFileSync, writeFileSync, statSync, accessSync, constants as fsConstants } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { WddmError } from '../base/errors.js';
import { counted } from '../base/words.js';
import { scheduleTimeline } from '../explore/timeline.js';
import {
  DEFAULT_MACHINE, MACHINE_BOUNDS, MACHINE_KEYS, VARIANTS, VARIANT_TITLES, describeMachine, parseOsGranularity, parseVariant,
  type ExploreMachine, type ExploreModel, type OsGranularity, type Variant,
} from '../explore/model.js';
import { exhaustive, shortest, REDUCTIONS, RESTORES, type Reduction, type Restore, type SearchResult, type SearchStats } from '../explore/search.js';
import { INVARIANTS, type Violation } from '../explore/invariants.js';
import { loadDriverModule } from '../driver/load.js';
import type { DriverModule } from '../driver/module.js';
import { parseSchedule, scheduleJson, type ScheduleFile } from '../explore/schedule.js';
import { commandLine, parseArguments } from './args.js';
import { replay, replayText, scheduleOf, namedSteps, type Replay } from '../explore/replay.js';
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
}

export const EXPLORE_HELP = `usage: wddm-fence explore [options]

The race explorer: every interleaving of the fence protocol's steps on a small
machine (docs/EXPLORER.md). Exhaustive by default; --replay FILE replays a
schedule; --random runs seeded random schedules of bigger machines.

The machine (each a small integer; defaults ${MACHINE_KEYS.map((k) => DEFAULT_MACHINE[k]).join(' ')}, with --random ${MACHINE_KEYS.map((k) => DEFAULT_SWARM_MACHINE[k]).join(' ')}):
  --fences N        native fences (${MACHINE_BOUNDS.fences.join('..')})
  --waiters N       CPU threads, each waiting for one fence value (${MACHINE_BOUNDS.waiters.join('..')})
  --signals N       GPU signals per fence, values v1..vN (${MACHINE_BOUNDS.signals.join('..')})
  --engines N       engines per adapter, one hardware queue each (${MACHINE_BOUNDS.engines.join('..')})
  --adapters N      adapters (${MACHINE_BOUNDS.adapters.join('..')})
  --cpu-signals N   CPU signals in all, above the GPU's values (${MACHINE_BOUNDS.cpuSignals.join('..')})
  --variant V       the protocol (default barrier):
${VARIANTS.map((v) => `                      ${v.padEnd(23)} ${VARIANT_TITLES[v]}`).join('\n')}
  --os-granularity G  step (default: each OS operation in steps: waiter add, MonitoredValue
                    write + DDI, each CMP step of the DDI, re-read, retire) | operation (each whole)
  --seed N          the machine's seed (0..4294967295, default 1)
  --driver FILE     every adapter runs this driver module (.mjs exporting createDriver, or .wasm): the
                    explorer judges it (exhaustive search and --replay)

Exhaustive search:
  --reduction R     full (default: visited set, sleep sets, eager steps) | states (visited
                    set only; also counts complete interleavings) | none (every interleaving)
  --restore M       snapshot (default: restore memory and host objects) | replay (rebuild
                    the machine and replay the choices)
  --max-states N    stop after N states (default 2000000); the verdicts are then not a proof
  --out FILE        where a counterexample's schedule file goes (default wddm-fence-counterexample.json)
  --timeline OUT.json
                    also write the counterexample's timeline (https://ui.perfetto.dev)
  --json            one JSON document

Replay:
  --replay FILE     replay a schedule file: prints the same step list as the search did
  --timeline OUT.json
                    also write its timeline

Swarm:
  --random          seeded random schedules instead of the exhaustive search
  --seeds A..B      the seeds (required), e.g. 1..1000
  --workers N       worker threads (default 1)
  --shard i/n       run only shard i of n of the seeds (a CI matrix or batch array: one job per shard)
  --max-steps N     steps one seed may take (default ${DEFAULT_MAX_STEPS})

Exit codes: 0 every invariant holds, 1 a counterexample, 2 bad arguments or an unusable file.
`;

class ExploreUsage extends Error {}

const DEFAULT_MAX_STATES = 2_000_000;
const DEFAULT_OUT = 'wddm-fence-counterexample.json';

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

const statsLine = (s: SearchStats, ms: number) =>
  `  ${s.states} states (${s.quietStates} quiet), ${s.transitions} transitions${s.interleavings !== undefined ? `, ${s.interleavings} complete interleavings` : ''}, depth up to ${s.maxDepth}, ` +
  `${s.restore === 'snapshot' ? `${s.restores} restores` : `${s.runs} runs from the start`}, ${(ms / 1000).toFixed(2)} s (${Math.round(s.states / Math.max(ms / 1000, 1e-3))} states/s): ${s.complete ? 'complete' : 'NOT complete (--max-states reached): no proof'}`;

const REDUCTION_TEXT: Record<Reduction, string> = {
  full: 'full (visited set, sleep sets, eager steps)', states: 'states (visited set)', none: 'none (every interleaving)',
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

async function exploreMain(io: ExploreIo, argv: string[]): Promise<number> {
  const options = {
    help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' },
    fences: { type: 'string' }, waiters: { type: 'string' }, signals: { type: 'string' }, engines: { type: 'string' }, adapters: { type: 'string' }, 'cpu-signals': { type: 'string' },
    variant: { type: 'string' }, 'os-granularity': { type: 'string' }, seed: { type: 'string' }, reduction: { type: 'string' }, restore: { type: 'string' }, 'max-states': { type: 'string' },
    out: { type: 'string' }, timeline: { type: 'string' }, replay: { type: 'string' }, driver: { type: 'string' },
    random: { type: 'boolean' }, seeds: { type: 'string' }, workers: { type: 'string' }, shard: { type: 'string' }, 'max-steps': { type: 'string' },
  } as const;
  let parsed;
  try {
    parsed = parseArguments('explore', argv, options, { maxPositionals: 0, renamed: { '--trace': '--trace is now --timeline OUT.json (the timeline, Chrome JSON for Perfetto)' } });
  } catch (error) { throw new ExploreUsage((error as Error).message); }
  const values = parsed.values as Values;
  if (values.help) { io.out(EXPLORE_HELP); return 0; }
  const only = (allowed: string[], mode: string) => {
    for (const key of Object.keys(values)) if (values[key] !== undefined && !allowed.includes(key)) throw new ExploreUsage(`--${key} does not go with ${mode}`);
  };
  const machineKeys = ['fences', 'waiters', 'signals', 'engines', 'adapters', 'cpu-signals'];
  let variant: Variant;
  let osGranularity: OsGranularity;
  try {
    variant = parseVariant(values.variant, '--variant');
    osGranularity = parseOsGranularity(values['os-granularity'], '--os-granularity');
  } catch (error) { throw new ExploreUsage((error as Error).message); }
  const seed = integerOption(values, 'seed', 0, 0xffff_ffff) ?? 1;
  // --driver FILE: the machine's adapters run that driver module (loadDriverModule), so the explorer judges it.
  let driver: DriverModule | undefined;
  if (values.driver !== undefined) {
    if (values.random) throw new ExploreUsage('--driver does not go with --random (worker threads would each have to load it); explore it exhaustively, or with --max-states');
    if (variant === 'read-first' || variant === 'read-first-no-resample') throw new ExploreUsage(`--driver does not go with --variant ${variant} (that variant is a driver of its own)`);
    try { driver = await loadDriverModule(values.driver as string, { from: process.cwd() }); } catch (error) { throw new ExploreUsage((error as Error).message); }
  }
  const withDriver = (model: ExploreModel): ExploreModel => (driver ? {
    ...model,
    adjustOptions: (o) => ({ ...o, adapters: o.adapters!.map((a) => ({ ...a, driver: { ...a.driver, module: driver } })) }),
  } : model);
  if (values.timeline !== undefined) checkOutput('--timeline', values.timeline as string);
  if (values.out !== undefined) checkOutput('--out', values.out as string);

  if (values.replay !== undefined) {
    only(['replay', 'timeline', 'json', 'driver'], '--replay (the file says the machine, variant and seed)');
    const path = values.replay as string;
    const file = readScheduleFile(path);
    if (values.timeline !== undefined && resolve(values.timeline as string) === resolve(path)) throw new ExploreUsage(`--timeline is "${path}", the schedule file itself; expected another file`);
    if (file.driver !== undefined && !driver) throw new ExploreUsage(`--replay: "${path}" was found with the driver module ${file.driver}; give it again with --driver FILE`);
    const model: ExploreModel = withDriver({ machine: file.machine, variant: file.variant, seed: file.seed, osGranularity: file.osGranularity });
    const r = replay(model, file.steps);
    const code = r.violations.length ? 1 : 0;
    if (values.json) io.out(JSON.stringify({ ok: code === 0, exitCode: code, mode: 'replay', file: path, machine: file.machine, variant: file.variant, osGranularity: file.osGranularity, seed: file.seed, recorded: file.violation ?? null, replay: replayJson(r) }, null, 2) + '\n');
    else io.out(replayText(model, r));
    writeTimeline(io, values.timeline as string | undefined, r);
    return code;
  }

  if (values.random) {
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
    return swarm(io, { machine, variant, osGranularity, range, shard, workers, maxSteps, json: values.json === true, out: values.out as string | undefined });
  }

  only(['driver', 'variant', 'os-granularity', 'seed', 'reduction', 'restore', 'max-states', 'out', 'timeline', 'json', ...machineKeys], 'the exhaustive search');
  const machine = machineOf(values, DEFAULT_MACHINE);
  const reduction = (values.reduction ?? 'full') as Reduction;
  if (!REDUCTIONS.includes(reduction)) throw new ExploreUsage(`--reduction is "${values.reduction}"; expected ${REDUCTIONS.join(', ')}`);
  const restore = (values.restore ?? 'snapshot') as Restore;
  if (!RESTORES.includes(restore)) throw new ExploreUsage(`--restore is "${values.restore}"; expected ${RESTORES.join(', ')}`);
  const maxStates = integerOption(values, 'max-states', 1, 1_000_000_000) ?? DEFAULT_MAX_STATES;
  const model: ExploreModel = withDriver({ machine, variant, seed, osGranularity });
  const started = performance.now();
  let progressShown = false;
  const result: SearchResult = exhaustive(model, {
    reduction, restore, maxStates, progressEvery: 20_000,
    onProgress: io.isTTY && !values.json ? (s) => { progressShown = true; io.err(`\r  ${s.states} states, ${s.transitions} transitions, depth ${s.maxDepth}…`); } : undefined,
  });
  if (progressShown) io.err('\r\x1b[2K');
  const searchMs = performance.now() - started;
  const lines: string[] = [];
  lines.push(`wddm-fence explore: exhaustive search`);
  lines.push(`machine: ${describeMachine(machine)}; variant ${variant}; OS in ${osGranularity === 'step' ? 'steps' : 'whole operations'}; seed ${seed}`);
  if (driver) lines.push(`driver: ${values.driver as string}${driver.name ? ` (${driver.name})` : ''}`);
  lines.push(`search: reduction ${REDUCTION_TEXT[reduction]}, back by ${result.stats.restore}`);
  lines.push(statsLine(result.stats, searchMs));
  lines.push('invariants:');
  for (const inv of INVARIANTS) {
    const found = result.violations.get(inv.id);
    const verdict = found ? 'VIOLATED' : result.stats.complete ? 'holds' : 'not seen';
    lines.push(`  ${verdict.padEnd(9)} ${inv.id.padEnd(24)} ${inv.requirement.padEnd(6)} ${inv.title}${found ? `\n            first seen after ${counted(found.path.length, 'step')}: ${found.message}` : ''}`);
  }
  const invariantsJson = INVARIANTS.map((inv) => {
    const found = result.violations.get(inv.id);
    return { ...inv, holds: !found && result.stats.complete, violated: !!found, firstSeen: found ? { steps: found.path.length, message: found.message } : null };
  });
  if (!result.violations.size) {
    if (values.json) io.out(JSON.stringify({ ok: true, exitCode: 0, mode: 'exhaustive', machine, variant, osGranularity, seed, reduction, search: statsJson(result.stats, searchMs), invariants: invariantsJson, counterexample: null }, null, 2) + '\n');
    else io.out(lines.join('\n') + '\n' + (result.stats.complete ? 'every invariant holds in every reachable state\n' : 'no violation in the states explored (the search was bounded: not a proof)\n'));
    return 0;
  }
  // The shortest failing schedule (search.ts shortest), no longer than the first one found.
  const depthBound = Math.min(...[...result.violations.values()].map((v) => v.path.length));
  const bfsStarted = performance.now();
  const quietOnly = result.stats.complete && [...result.violations.keys()].every((id) => INVARIANTS.find((i) => i.id === id)?.when === 'quiet');
  const best = shortest(model, { maxDepth: depthBound, maxStates, restore, quietOnly });
  const bfsMs = performance.now() - bfsStarted;
  const found = best.found ?? [...result.violations.values()].sort((a, b) => a.path.length - b.path.length)[0];
  const violation: Violation = { invariant: found.invariant, message: found.message };
  const steps = namedSteps(model, found.path);
  const out = (values.out as string | undefined) ?? DEFAULT_OUT;
  const file = scheduleOf(model, steps, violation);
  if (driver) file.driver = values.driver as string;
  writeFileSync(out, scheduleJson(file));
  const r = replay(model, steps);
  lines.push(`shortest counterexample: ${counted(steps.length, 'step')} (${best.complete ? '' : 'NOT proven shortest: --max-states reached; '}search over ${best.states} states, ${(bfsMs / 1000).toFixed(2)} s): ${violation.invariant}: ${violation.message}`);
  // the command that replays it, runnable as printed: the driver module too (the file names it, --replay needs it again)
  const replayCommand = commandLine('wddm-fence', 'explore', '--replay', out, ...(driver ? ['--driver', values.driver as string] : []));
  lines.push(`schedule written to ${out}; replay it with: ${replayCommand}`);
  if (values.json) {
    io.out(JSON.stringify({
      ok: false, exitCode: 1, mode: 'exhaustive', machine, variant, osGranularity, seed, reduction, search: statsJson(result.stats, searchMs), invariants: invariantsJson,
      counterexample: { ...violation, steps: steps.length, shortestSearch: { states: best.states, expansions: best.expansions, complete: best.complete, quietOnly, timeMs: Math.round(bfsMs) }, scheduleFile: out, replayCommand, replay: replayJson(r) },
    }, null, 2) + '\n');
  } else {
    io.out(lines.join('\n') + '\n\n' + replayText(model, r));
  }
  writeTimeline(io, values.timeline as string | undefined, r);
  return 1;
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
      invariants: INVARIANTS.map((inv) => ({ ...inv, failingSeeds: tally.failed[inv.id] })),
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
  for (const inv of INVARIANTS) {
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
