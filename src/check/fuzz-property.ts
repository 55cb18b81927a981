// The fuzz test's generators and its runner (`npm run fuzz`, test/fuzz.test.ts): fast-check makes
// the cases (src/check/fuzz.ts says what a case is and which rules it must keep), runs them, and
// shrinks a failing one to a minimal case before it is reported. A dev tool: it imports fast-check
// (a dev dependency), so nothing in the library imports it; scripts/fuzz.mjs runs its build
// (dist/fuzz.js, from a clone).
//
//   fc.assert-like loop ──one seed──▶ N cases (config + calls) ──runFuzzCase──▶ a rule broken?
//        └─ the first failure ──fast-check shrinks it──▶ the smallest case that still fails,
//           printed as its calls, with `--replay SEED:PATH` to make exactly it again

import fc from 'fast-check';
import { HOSTILE_TARGETS, WAIT_TIMEOUTS, configText, emptyCounts, runFuzzCase, type FuzzCall, type FuzzCommand, type FuzzConfig, type FuzzCounts, type FuzzProblem } from './fuzz.js';

// ── generators ──

/** An index into what exists when the call runs (modulo its count): small, so shrinking goes to "the first one". */
const index = fc.nat({ max: 15 });
const delta = fc.integer({ min: -3, max: 12 });
const process = fc.nat({ max: 1 });
/** True about one time in five. */
const rarely = fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) });

const adapterArbitrary: fc.Arbitrary<FuzzConfig['adapters'][number]> = fc.record({
  engines: fc.constantFrom(1 as const, 2 as const),
  optimized: fc.boolean(),
  noList: fc.boolean(),
  no64BitAtomics: fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  hostile: fc.oneof({ weight: 2, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
}).map((a) => (a.no64BitAtomics && a.hostile ? { ...a, hostile: false } : a)); // no hardware queue there to be hostile with

/** A machine: 1–3 adapters (more often 2 or 3: cross-adapter fences need two), the doorbell on or off. */
export const configArbitrary: fc.Arbitrary<FuzzConfig> = fc.record({
  adapters: fc.array(adapterArbitrary, { minLength: 1, maxLength: 3 }).map((list) => (list.length === 1 && list[0].no64BitAtomics ? [list[0], { ...list[0], no64BitAtomics: false }] : list)),
  doorbell: fc.boolean(),
  doorbellRing: fc.constantFrom(2, 64),
  seed: fc.nat({ max: 0xffff }),
});

const commandArbitrary: fc.Arbitrary<FuzzCommand> = fc.record({
  op: fc.constantFrom('wait' as const, 'signal' as const, 'signal' as const, 'work' as const),
  handle: index,
  delta,
  // On a hostile adapter's queue, one signal in three goes through a hostile GPU VA (elsewhere the field is ignored).
  hostile: fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_TARGETS) }),
});

const handles = fc.array(index, { minLength: 1, maxLength: 3 });

/** The calls, with their weights (how often each kind comes). */
const CALLS: { weight: number; arbitrary: fc.Arbitrary<FuzzCall> }[] = [
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('create' as const), process, adapter: index, cross: fc.boolean(), shared: fc.boolean(), noSignalMaxValueOnTdr: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }), monitored: fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }) }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('share' as const), handle: index, to: process, otherAdapter: fc.boolean(), keepNt: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('closeNt' as const), nt: index }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('crossPair' as const), process, adapter: index, to: process }) },
  { weight: 10, arbitrary: fc.record({ kind: fc.constant('signal' as const), process, handles, deltas: fc.array(delta, { minLength: 3, maxLength: 3 }), rewind: fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }), badAt: fc.nat({ max: 20 }), alias: rarely }) },
  { weight: 10, arbitrary: fc.record({ kind: fc.constant('wait' as const), process, handles, deltas: fc.array(delta, { minLength: 3, maxLength: 3 }), waitAny: fc.boolean(), timeout: fc.nat({ max: WAIT_TIMEOUTS.length - 1 }), withEvent: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }), alias: rarely }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('destroy' as const), handle: index }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('recycle' as const), handle: index }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('createQueue' as const), process, adapter: index, engine: fc.nat({ max: 1 }), progress: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('destroyQueue' as const), queue: index }) },
  { weight: 12, arbitrary: fc.record({ kind: fc.constant('submit' as const), queue: index, commands: fc.array(commandArbitrary, { minLength: 1, maxLength: 4 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('createContext' as const), process, adapter: index, engine: fc.nat({ max: 1 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('destroyContext' as const), context: index }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('submitCommand' as const), context: index, handle: index, delta, workNs: fc.constantFrom(100, 2000) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('gpuWait' as const), context: index, handle: index, delta }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('gpuSignal' as const), context: index, handle: index, delta }) },
  { weight: 10, arbitrary: fc.record({ kind: fc.constant('run' as const), all: fc.oneof({ weight: 2, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }), ns: fc.nat({ max: 20_000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('removeDevice' as const), adapter: index }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('junk' as const), process, which: fc.nat({ max: 6 }), bad: index }) },
];

export const callArbitrary: fc.Arbitrary<FuzzCall> = fc.oneof(...CALLS);

/** A case: a machine and up to `steps` calls. */
export function caseArbitrary(steps: number): fc.Arbitrary<[FuzzConfig, FuzzCall[]]> {
  return fc.tuple(configArbitrary, fc.array(callArbitrary, { maxLength: steps, size: 'max' }));
}

// ── the runner ──

export interface FuzzOptions {
  /** fast-check's seed: the same seed makes the same cases (default 1). */
  seed?: number;
  /** Cases to run, each on a fresh machine (default 200). */
  cases?: number;
  /** Most calls per case (default 100). */
  steps?: number;
  /** fast-check's path of a counterexample (with `seed`): makes exactly that case again (`--replay SEED:PATH`). */
  path?: string;
  /** Each call of the replayed case as it is made, with its outcome (with `path`). */
  onCall?: (line: string) => void;
}

export interface FuzzFailure {
  seed: number;
  /** With the seed, makes the minimal case again: `npm run fuzz -- --replay SEED:PATH`. */
  path: string;
  /** Shrinking steps fast-check took from the first failing case to this one. */
  shrinks: number;
  config: FuzzConfig;
  /** The minimal case's calls (each with its outcome), up to the one that broke the rule. */
  calls: string[];
  problem: FuzzProblem;
}

export interface FuzzReport {
  seed: number;
  steps: number;
  /** What the cases run before any failure generated and saw (a failure's shrinking runs are not counted). */
  counts: FuzzCounts;
  failure?: FuzzFailure;
}

/** Runs the cases; a failure is shrunk and reported, never thrown. */
export function runFuzz(options: FuzzOptions = {}): FuzzReport {
  const seed = options.seed ?? 1, steps = options.steps ?? 100, cases = options.cases ?? 200;
  const counts = emptyCounts();
  let failed = false;
  const result = fc.check(fc.property(caseArbitrary(steps), ([config, calls]) => {
    const outcome = runFuzzCase(config, calls, failed ? emptyCounts() : counts, options.path !== undefined ? options.onCall : undefined);
    if (outcome.problem) failed = true;
    return outcome.problem === undefined;
  }), { seed, numRuns: cases, ...(options.path !== undefined ? { path: options.path, endOnFailure: true } : {}) });
  const report: FuzzReport = { seed, steps, counts };
  if (!result.failed || !result.counterexample) return report;
  const [config, calls] = result.counterexample[0];
  const again = runFuzzCase(config, calls, emptyCounts()); // the minimal case again, for its calls (a replay printed them already)
  report.failure = {
    seed, path: result.counterexamplePath ?? '', shrinks: result.numShrinks, config,
    calls: again.lines, problem: again.problem ?? { step: -1, call: '-', problem: `the case failed under fast-check but not when run again: ${String(result.errorInstance ?? 'no error')}` },
  };
  return report;
}

/** A failure as text: the minimal case's calls, the rule it broke, and how to make it again. */
export function fuzzFailureText(failure: FuzzFailure, steps = 100): string {
  return [
    `a case broke a rule at call ${failure.problem.step} (${failure.problem.call}):`,
    `  ${failure.problem.problem}`,
    `the smallest case fast-check found (${failure.shrinks} shrinking steps), ${configText(failure.config)}:`,
    ...failure.calls.map((line) => `  ${line}`),
    `replay: npm run fuzz -- --replay ${failure.seed}:${failure.path}${steps === 100 ? '' : ` --steps ${steps}`}`,
  ].join('\n');
}

/** What the run generated, in a few lines (each number a count over the cases run). */
export function fuzzCountsText(counts: FuzzCounts): string {
  const c = counts;
  return [
    `  machines: ${c.cases} (1 adapter: ${c.adapters[1]}, 2: ${c.adapters[2]}, 3: ${c.adapters[3]}); doorbell on: ${c.doorbell}; with an optimized-interrupt adapter: ${c.optimized}; ` +
      `with a No64BitAtomics adapter: ${c.no64BitAtomics}; with a hostile user-mode half: ${c.hostileAdapters}`,
    `  calls: ${c.calls} made (${c.refused} refused with a WddmError), ${c.skipped} skipped (nothing to name); cross-adapter fences created: ${c.crossAdapterFences}; monitored fences: ${c.monitoredFences}`,
    `  hostile GPU VAs written: ${c.hostileVas} (GPU page faults they caused: ${c.hostileFaults}); GPU rewinds: ${c.gpuRewinds}; waits timed out: ${c.waitsTimedOut}; deferred closes: ${c.deferredCloses}; waits nothing could satisfy: ${c.orphanedWaits}`,
    `  calls per kind: ${Object.entries(c.actions).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, n]) => `${k}=${n}`).join(' ')}`,
  ].join('\n');
}
