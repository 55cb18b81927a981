// Swarm mode: seeded random schedules of machines too big to exhaust.
//
//   seed s  →  the machine of the model (its seed is s) run to quiet, each step
//              chosen uniformly among the enabled events by Random(s); the
//              "always" invariants are checked after every step, the "quiet"
//              ones at the end. Same seed, same schedule: a failing seed is
//              replayed by running that seed alone.
//
// A range of seeds A..B is split without any coordination:
//   shard i of n (1-based)  takes the seeds A + (i − 1) + k·n   (k = 0, 1, …, up to B)
//   worker w of W           takes every W-th seed of its shard, starting at its w-th
// so a CI matrix or a batch array runs shard ${i}/${n} in each job and the
// shards together run every seed of the range exactly once.

import { Random } from '../base/rng.js';
import { invalid } from '../base/errors.js';
import { buildWorld, type ExploreModel, type ExploreMachine, type Variant } from './model.js';
import type { OsGranularity } from '../machine/options.js';
import { checkAlways, checkQuiet, INVARIANTS, type InvariantId, type Violation } from './invariants.js';

/** Steps one seed may take before it counts as a run that never ends (the explorer's machines always end). */
export const DEFAULT_MAX_STEPS = 100_000;

/** The machine swarm mode runs when given no numbers: more of everything than an exhaustive search could take. */
export const DEFAULT_SWARM_MACHINE: Readonly<ExploreMachine> = { fences: 3, waiters: 6, signals: 4, engines: 2, adapters: 1, cpuSignals: 2 };

export interface SeedRange { from: number; to: number }
export interface Shard { index: number; count: number }

/** "A..B" (or one seed "A"): seeds from 0 to 4294967295, A ≤ B. */
export function parseSeedRange(text: string, option = '--seeds'): SeedRange {
  const match = /^(\d+)(?:\.\.(\d+))?$/.exec(text);
  const from = match ? Number(match[1]) : NaN;
  const to = match ? Number(match[2] ?? match[1]) : NaN;
  if (!match || !Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from > 0xffff_ffff || to > 0xffff_ffff || from > to) {
    throw invalid(option, text, 'a seed range A..B (or one seed A) of integers from 0 to 4294967295 with A ≤ B, e.g. 1..1000');
  }
  return { from, to };
}

/** "i/n": shard i of n, 1 ≤ i ≤ n ≤ 65536. */
export function parseShard(text: string, option = '--shard'): Shard {
  const match = /^(\d+)\/(\d+)$/.exec(text);
  const index = match ? Number(match[1]) : NaN;
  const count = match ? Number(match[2]) : NaN;
  if (!match || !(count >= 1 && count <= 65536) || !(index >= 1 && index <= count)) {
    throw invalid(option, text, 'i/n with 1 ≤ i ≤ n ≤ 65536, e.g. 2/8 for the second of eight shards');
  }
  return { index, count };
}

/** The seeds of one shard (and one worker of it), in increasing order, without building a list. */
export function* shardSeeds(range: SeedRange, shard: Shard = { index: 1, count: 1 }, worker = 0, workers = 1): Generator<number> {
  const step = shard.count * workers;
  for (let seed = range.from + (shard.index - 1) + worker * shard.count; seed <= range.to; seed += step) yield seed;
}

/** How many seeds a shard takes. */
export function shardSize(range: SeedRange, shard: Shard = { index: 1, count: 1 }): number {
  const first = range.from + shard.index - 1;
  return first > range.to ? 0 : Math.floor((range.to - first) / shard.count) + 1;
}

export interface SeedFailure extends Violation {
  seed: number;
  /** The choices of the run up to the failing state. */
  path: number[];
}

/** One seed's run: its length, and its first violation if any. */
export function runSeed(model: Omit<ExploreModel, 'seed'>, seed: number, maxSteps = DEFAULT_MAX_STEPS): { steps: number; failure?: SeedFailure } {
  const world = buildWorld({ ...model, seed }, { trace: false });
  const scheduler = world.machine.scheduler;
  const random = new Random(seed);
  const path: number[] = [];
  const fail = (v: Violation) => ({ steps: path.length, failure: { ...v, seed, path } });
  for (;;) {
    const enabled = scheduler.enabled();
    if (!enabled.length) {
      const quiet = checkQuiet(world);
      return quiet.length ? fail(quiet[0]) : { steps: path.length };
    }
    if (path.length >= maxSteps) return fail({ invariant: 'steps-run', message: `seed ${seed} ran ${maxSteps} steps without the machine becoming quiet (a run that never ends)` });
    const choice = random.below(enabled.length);
    path.push(choice);
    try { scheduler.take(choice); } catch (error) {
      return fail({ invariant: 'steps-run', message: `the step threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}` });
    }
    const now = checkAlways(world);
    if (now.length) return fail(now[0]);
  }
}

/** What one worker (or the whole run) was given. */
export interface SwarmJob {
  machine: ExploreMachine;
  variant: Variant;
  /** Default 'step'. */
  osGranularity?: OsGranularity;
  range: SeedRange;
  shard: Shard;
  worker: number;
  workers: number;
  maxSteps: number;
}

export interface SwarmTally {
  seeds: number;
  steps: number;
  failures: SeedFailure[];
  /** Failing seeds per invariant. */
  failed: Record<InvariantId, number>;
}

export function emptyTally(): SwarmTally {
  return { seeds: 0, steps: 0, failures: [], failed: Object.fromEntries(INVARIANTS.map((i) => [i.id, 0])) as Record<InvariantId, number> };
}

/** Runs a job's seeds (one worker's share). `model` can carry a machine factory (not in the job: jobs cross threads as data). */
export function runJob(job: SwarmJob, model: Omit<ExploreModel, 'seed'> = { machine: job.machine, variant: job.variant, osGranularity: job.osGranularity }, onSeed?: (tally: SwarmTally) => void): SwarmTally {
  const tally = emptyTally();
  for (const seed of shardSeeds(job.range, job.shard, job.worker, job.workers)) {
    const { steps, failure } = runSeed(model, seed, job.maxSteps);
    tally.seeds++;
    tally.steps += steps;
    if (failure) { tally.failures.push(failure); tally.failed[failure.invariant]++; }
    onSeed?.(tally);
  }
  return tally;
}

/** Adds one worker's tally to another (failures kept in seed order). */
export function mergeTally(into: SwarmTally, from: SwarmTally): void {
  into.seeds += from.seeds;
  into.steps += from.steps;
  into.failures.push(...from.failures);
  into.failures.sort((a, b) => a.seed - b.seed);
  for (const id of Object.keys(from.failed) as InvariantId[]) into.failed[id] += from.failed[id];
}
