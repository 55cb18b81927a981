// The full reduction fuzzed against the visited-set search (src/explore/fuzz-reduction.ts): on small random
// scenario files, timed and untimed, the full search reaches the same quiet states and verdicts as the search that
// visits every state, visits no state that search does not, and no engine ever has two events pending. A bounded
// number of seeds here (by count, never by wall clock); `npm run fuzz:explore -- --seeds N --seed S` runs more.
// Each check is shown able to fail: defects planted in the full search (latency choices it never learns of, a
// persistent set that holds timeouts back) are caught, and so are, by the files that found them, the two defects the
// fuzz found: the engine's second chain of ticks (src/gpu/hardware.ts `running`) and an OS step's footprint that left
// out its operation's end (src/explore/footprint.ts osStepFootprint), each of which lost quiet states untimed.
import { describe, it, expect } from 'vitest';
import type { ScheduledEvent } from '../src/base/scheduler.js';
import {
  FUZZ_FEATURES, FUZZ_MAX_STATES, compareReductions, comparisonText, fuzzReductions, mismatchText, randomScenario,
  type CompareOptions, type FuzzReport,
} from '../src/explore/fuzz-reduction.js';
import { parseScenario } from '../src/scenario-files/load.js';
import { ScenarioModel } from '../src/explore/scenario-world.js';
import { exhaustive } from '../src/explore/search.js';
import { scenarioAdapters } from '../src/scenario-files/run.js';

/** Files in the suite's run, and the states the visited-set search may reach on one (fewer than a long run's default). */
const FILES = 150;
const MAX_STATES = 2000;

const summary = (r: FuzzReport) =>
  `${r.files} files from seed 1: ${r.compared} compared (${r.searches.timed} timed, ${r.searches.untimed} untimed), ${r.tooBig} too big; ` +
  `${r.statesVisited} states visited by the visited-set search, ${r.fullStatesVisited} by the full one`;

/** Runs `files` seeds from 1 with a planted defect: how many files differ. */
async function caught(files: number, planted: CompareOptions): Promise<number> {
  const r = await fuzzReductions({ seed: 1, files, maxStates: MAX_STATES, stopAtMismatch: false, ...planted });
  return r.mismatches.length;
}

describe('the full reduction on random scenario files', () => {
  it('generates the same file for a seed, valid, and small', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const file = randomScenario(seed);
      expect(randomScenario(seed).text).toBe(file.text);
      expect(() => parseScenario(file.text, `fuzz-${seed}.yaml`), file.text).not.toThrow();
    }
    expect(randomScenario(1).text).not.toBe(randomScenario(2).text);
  });

  it('NF-10 keeps every quiet state and verdict of the visited-set search, timed and untimed, and visits no state it does not', async () => {
    const report = await fuzzReductions({ seed: 1, files: FILES, maxStates: MAX_STATES, stopAtMismatch: false });
    console.log(summary(report));
    expect(report.mismatches.map(mismatchText)).toEqual([]);
    // Most files are compared, in both modes, and the reduction applies (fewer states).
    expect(report.compared).toBeGreaterThanOrEqual(FILES * 0.8);
    expect(report.fullStatesVisited).toBeLessThan(report.statesVisited);
    // The generator reaches most of what the format can say (a long run reaches the rest).
    const used = FUZZ_FEATURES.filter((f) => report.features.has(f));
    expect(used.length, `used: ${used.join(', ')}`).toBeGreaterThanOrEqual(FUZZ_FEATURES.length - 8);
    for (const f of ['two adapters', 'two engines', 'jitter', 'native fence', 'monitored fence', 'cross-adapter fence', 'hardware queue', 'kernel-mode queue', 'gpu wait', 'timeout', 'cpu signal', 'submit'] as const) {
      expect(report.features.get(f) ?? 0, f).toBeGreaterThan(0);
    }
  }, 600_000);

  it('catches latency choices the full search never learns of (each jittered latency at its low end only)', async () => {
    // The full search's world reports no draws: it never adds a step's high-end choices, and loses the states they reach.
    const lowOnly = (model: ScenarioModel): ScenarioModel => {
      const build = model.build.bind(model);
      model.build = (options) => {
        const world = build(options);
        Object.defineProperty(world.latencies, 'drawn', { get: () => 0, set: () => undefined });
        return world;
      };
      return model;
    };
    expect(await caught(20, { fullModel: lowOnly })).toBeGreaterThan(0);
  }, 600_000);

  it('catches a persistent set that holds timeouts back while anything else can run', async () => {
    const noTimeouts = (_world: unknown, enabled: readonly ScheduledEvent[]) => {
      const kept = enabled.flatMap((event, i) => (event.kind === 'wait-timeout' ? [] : [i]));
      return kept.length && kept.length < enabled.length ? kept : undefined;
    };
    expect(await caught(40, { full: { persistentSet: noTimeouts } })).toBeGreaterThan(0);
  }, 600_000);

  it('NF-10 two queues of one engine, one waiting for the other\'s signal: one chain of ticks, no quiet state lost untimed (fuzz seed 942)', async () => {
    // The signal's run-list rescan unblocked the other queue and kicked the engine while its own tick was running:
    // a second tick was scheduled beside the one the signal's end schedules, so the engine began a signal while
    // another was in flight. Quiet states were lost to the sleep sets (the footprints read one next step per engine).
    const comparison = await compareReductions(randomScenario(942).text, 'untimed', { maxStates: MAX_STATES });
    expect(comparison.doubled, comparisonText(comparison)).toBe(0);
    expect(comparison.differs, comparisonText(comparison)).toBe(false);
  }, 120_000);

  it('NF-10 an interrupt\'s NF-09 loop whose last step reads the logs, where the key covers them: no quiet state lost untimed (fuzz seed 527)', async () => {
    // gpu0 has the optimized interrupt, so the logs are in the key; gpu1's interrupt ends its operation with a log read
    // for the timeline (Logs.afterInterrupt), inside the CMP check d that ends its NF-09 loop. That step's footprint
    // named the OS and the CMP only, so a sleep set slept it beside a signal's log write: one of 5 quiet states lost.
    const comparison = await compareReductions(randomScenario(527).text, 'untimed', { maxStates: MAX_STATES });
    expect(comparison.differs, comparisonText(comparison)).toBe(false);
    expect(comparison.states.quiet.length).toBe(5);
  }, 120_000);
  it('NF-10 a CPU signal of a cross-adapter fence whose operation ends beside a GPU signal of it: no quiet state lost untimed (fuzz seeds 2717, 2418)', async () => {
    // A CPU signal's operation ends (afterCpuSignal, inside its last step) by reading the cross-adapter fence's shared
    // CurrentValue and queueing the other adapters' notifications with it. The last step's footprint (2717: the retire
    // of the woken waiter, an eager step; 2418: the reference driver's CMP check d) named the OS and the thread or the
    // CMP only, so it was taken before, or slept beside, a GPU signal's drain of that fence: the value propagated
    // differed, and 2 quiet states (2717) and 1 (2418) were lost.
    for (const [seed, quiet] of [[2717, 9], [2418, 19]] as const) {
      const comparison = await compareReductions(randomScenario(seed).text, 'untimed', { maxStates: FUZZ_MAX_STATES });
      expect(comparison.tooBig, `seed ${seed}`).toBe(false);
      expect(comparison.differs, `seed ${seed}: ${comparisonText(comparison)}`).toBe(false);
      expect(comparison.states.quiet.length, `seed ${seed}`).toBe(quiet);
    }
  }, 240_000);

  it('NF-10 two adapters\' GPU signals of one cross-adapter fence, checked in either order: no quiet state lost timed (fuzz seed 2530)', async () => {
    // Each signal's CMP check (engine step 5) ends its command with a progress report, which notes the value, time and
    // adapter in the fence's cross-adapter group (CrossAdapter.onProgress: its list of signals, in the key). The two
    // checks read the shared CurrentValue and wrote their own adapter's interrupt and in-flight count only, so a sleep
    // set took them in one order: the group's list differed, and 2 quiet states were lost timed.
    const comparison = await compareReductions(randomScenario(2530).text, 'timed', { maxStates: FUZZ_MAX_STATES });
    expect(comparison.tooBig).toBe(false);
    expect(comparison.differs, comparisonText(comparison)).toBe(false);
    expect(comparison.states.quiet.length).toBe(24);
  }, 240_000);

  it('LOG-05 a reader held behind polls untimed with nothing new: a cycle both searches complete, with the same quiet states (fuzz seed 1676)', async () => {
    // With a forced log overrun, the reader's retry finds it still behind and arms the same retry again: untimed, a
    // step that changes nothing the key covers. The visited-set search threw ("the state graph has a cycle"); it now
    // counts no interleavings there (cyclic), and the full search, which expands the state a cycle closes from (the
    // stack proviso), reaches the same quiet states.
    const text = randomScenario(1676).text;
    const comparison = await compareReductions(text, 'untimed', { maxStates: 4000 });
    expect(comparison.error, comparisonText(comparison)).toBeUndefined();
    expect(comparison.differs, comparisonText(comparison)).toBe(false);
    expect(comparison.states.quiet.length).toBe(6);
    const scenario = parseScenario(text, 'fuzz-1676.yaml');
    const model = new ScenarioModel({ scenario, source: 'fuzz-1676.yaml', adapters: await scenarioAdapters(scenario, 'fuzz-1676.yaml'), time: 'untimed', variant: 'barrier' });
    const states = exhaustive(model, { reduction: 'states' });
    expect(states.stats.cyclic).toBe(true);
    expect(states.stats.interleavings).toBeUndefined();
    expect(exhaustive(model, {}).stats.cyclic).toBe(true);
    // Timed, the same file has no cycle (each retry is later): every interleaving is counted.
    const timed = new ScenarioModel({ scenario, source: 'fuzz-1676.yaml', adapters: await scenarioAdapters(scenario, 'fuzz-1676.yaml'), time: 'timed', variant: 'barrier' });
    const timedStates = exhaustive(timed, { reduction: 'states', maxStates: 20_000 });
    expect(timedStates.stats.cyclic).toBeUndefined();
    // Without a reduction the search would go round for ever: it refuses, naming the cycle.
    expect(() => exhaustive(model, { reduction: 'none', maxDepth: 400 })).toThrow(/the state graph has a cycle/);
  }, 300_000);
});
