// The full reduction on scenario files (docs/EXPLORER.md, "The search and its reductions"): its eager steps
// (a signal's log steps, a waiter's resume, an idle engine's tick, an OS step that touches only the OS's own
// state) and its sleep sets leave out no quiet state and no verdict of the visited-set search, on the
// built-in scenarios small enough to search twice and on files whose hardware queues wait on the GPU after
// a signal (engineFutures in src/explore/footprint.ts names a queue's signalled fences and its position,
// not the fences its later waits read: a GPU wait reads only CurrentValues, which no eager OS step writes).
import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { exhaustive, type SearchResult } from '../src/explore/search.js';
import { ScenarioModel, type TimeMode } from '../src/explore/scenario-world.js';
import type { Variant } from '../src/explore/variants.js';
import { findBuiltin } from '../src/scenario-files/builtin.js';
import { parseScenario } from '../src/scenario-files/load.js';
import { scenarioAdapters } from '../src/scenario-files/run.js';
import type { Scenario } from '../src/scenario-files/types.js';
import { monitoredVsNative } from './explore-files.js';

const verdicts = (r: SearchResult) => [...r.violations.keys()].sort();

async function model(scenario: Scenario, source: string, time: TimeMode, variant: Variant = 'barrier'): Promise<ScenarioModel> {
  return new ScenarioModel({ scenario, source, adapters: await scenarioAdapters(scenario, source), time, variant });
}

/** The quiet states' keys and the verdicts of one search. */
function search(m: ScenarioModel, reduction: 'states' | 'full') {
  const quiet: string[] = [];
  const result = exhaustive(m, { reduction, onQuiet: (key) => quiet.push(key) });
  return { result, quiet: quiet.sort(), verdicts: verdicts(result) };
}

async function compare(scenario: Scenario, source: string, time: TimeMode, variant: Variant = 'barrier') {
  const states = search(await model(scenario, source, time, variant), 'states');
  const full = search(await model(scenario, source, time, variant), 'full');
  const what = `${source} ${time} ${variant}`;
  expect(states.result.stats.complete, what).toBe(true);
  expect(full.result.stats.complete, what).toBe(true);
  expect(full.quiet, what).toEqual(states.quiet);
  expect(full.verdicts, what).toEqual(states.verdicts);
  return { states, full };
}

// Two hardware queues on two engines hand values back and forth: each queue signals, then waits on the GPU for
// the other's fence, then signals again; a CPU thread waits for the last value and another signals from the CPU.
const PING_PONG = `
name: ping-pong
machine:
  seed: 1
  adapters: [ { name: gpu0, engines: 2 } ]
processes: [ { name: app } ]
fences:
  - { name: ping, process: app, adapter: gpu0 }
  - { name: pong, process: app, adapter: gpu0 }
queues:
  - { name: left, process: app, adapter: gpu0, engine: 0, commands: [ { signal: { fence: ping, value: 1 } }, { wait: { fence: pong, value: 1 } }, { signal: { fence: ping, value: 2 } } ] }
  - { name: right, process: app, adapter: gpu0, engine: 1, commands: [ { wait: { fence: ping, value: 1 } }, { signal: { fence: pong, value: 1 } } ] }
threads:
  - name: waiter
    process: app
    steps:
      - wait: { id: last, fences: [ping], values: [2] }
expect:
  fences: { ping: 2, pong: 1 }
  threads: { waiter: done }
`;

describe('the full reduction on scenario files', () => {
  it('NF-10 a hardware queue that waits on the GPU after a signal: the full reduction keeps every quiet state and verdict of the visited-set search, timed and untimed', async () => {
    const scenario = parseScenario(PING_PONG, 'ping-pong.yaml');
    for (const time of ['timed', 'untimed'] as const) {
      const { states, full } = await compare(scenario, 'ping-pong.yaml', time);
      expect(states.verdicts, time).toEqual([]);
      // The reduction applies here: fewer states than the visited-set search.
      expect(full.result.stats.states, time).toBeLessThan(states.result.stats.states);
    }
    // And where the driver is broken (no barrier between MonitoredValue and CurrentValue's read: a lost
    // wake-up), both searches find the same violations.
    const broken = await compare(scenario, 'ping-pong.yaml', 'untimed', 'no-barrier');
    expect(broken.full.verdicts).not.toEqual([]);
  }, 300_000);

  it('NF-10 two queues on two engines, timed with jitter: a step\'s other latency choices are explored before its siblings, so no quiet state is lost to a sleep set', async () => {
    // Each engine's step draws its next command's latency: taking it from a state adds its other choices there.
    // Explored after a sibling the step commutes with, they were never taken below that sibling, which slept the
    // step (and so them) while they were not yet explored above it: 46 of 132 quiet states were lost.
    const scenario = parseScenario(TWO_ENGINES_JITTER, 'two-engines-jitter.yaml');
    const { states, full } = await compare(scenario, 'two-engines-jitter.yaml', 'timed');
    expect(states.quiet.length).toBeGreaterThan(100);
    expect(full.result.stats.states).toBeLessThan(states.result.stats.states);
  }, 300_000);

  it('NF-10 the built-in scenarios small enough to search twice: the same quiet states and verdicts under both reductions', async () => {
    const names = ['scenario-1', 'scenario-2a', 'scenario-2b', 'deadlock', 'device-removal'];
    for (const name of names) {
      const scenario = findBuiltin(name)!.scenario!;
      for (const time of ['timed', 'untimed'] as const) await compare(scenario, name, time);
    }
    const handOff = new URL('../examples/explore/hand-off.yaml', import.meta.url).pathname;
    await compare(parseScenario(readFileSync(handOff, 'utf8'), handOff), 'hand-off', 'timed');
  }, 600_000);
});

// Two hardware queues on two engines of one adapter, each signalling its own fence twice; a thread waits for each.
const TWO_ENGINES_JITTER = `
name: two-engines-jitter
machine:
  seed: 1
  timing: { commandNs: 100, interruptLatencyNs: 100, jitter: 0.5 }
  adapters: [ { name: gpu0, engines: 2 } ]
processes: [ { name: app } ]
fences:
  - { name: a, process: app, adapter: gpu0 }
  - { name: b, process: app, adapter: gpu0 }
queues:
  - { name: q0, process: app, adapter: gpu0, engine: 0, commands: [ { signal: { fence: a, value: 1 } }, { signal: { fence: a, value: 2 } } ] }
  - { name: q1, process: app, adapter: gpu0, engine: 1, commands: [ { signal: { fence: b, value: 1 } }, { signal: { fence: b, value: 2 } } ] }
threads:
  - { name: t0, process: app, steps: [ { wait: { id: w0, fences: [a], values: [2] } } ] }
  - { name: t1, process: app, steps: [ { wait: { id: w1, fences: [b], values: [2] } } ] }
`;

// Two adapters the persistent sets take one at a time (src/explore/components.ts): what no fence, queue or
// thread links is searched one component after the other; what a cross-adapter fence links is not split.
describe('the full reduction on scenario files of independent components', () => {
  it('NF-10 monitored-vs-native cut down to one frame, its producers alone: the same quiet states and verdicts with far fewer states, timed and untimed; a broken driver\'s counterexamples found by both', async () => {
    const scenario = monitoredVsNative(1, { consumers: false });
    for (const time of ['untimed', 'timed'] as const) {
      const { states, full } = await compare(scenario, 'monitored-vs-native-1', time);
      expect(states.verdicts, time).toEqual([]);
      expect(full.result.stats.states, time).toBeLessThan(states.result.stats.states);
    }
    const broken = await compare(scenario, 'monitored-vs-native-1', 'untimed', 'no-barrier');
    expect(broken.full.verdicts).not.toEqual([]);
  }, 600_000);

  it('NF-10 two adapters linked by a cross-adapter fence are one component: the same quiet states and verdicts', async () => {
    const scenario = parseScenario(LINKED, 'linked.yaml');
    for (const time of ['untimed', 'timed'] as const) await compare(scenario, 'linked.yaml', time);
  }, 600_000);

  it('a persistent set planted unsound is caught: one adapter\'s steps alone wherever it has any, linked or not', async () => {
    // Whenever gpu0 has a step, explore gpu0's steps only: gpu1's may be held back until gpu0 is done, which
    // loses the orders where gpu1 signals the shared fence first.
    const gpu0First: NonNullable<Parameters<typeof exhaustive>[1]>['persistentSet'] = (_world, enabled) => {
      const mine = enabled.flatMap((event, i) => (event.owner === 'gpu0' ? [i] : []));
      return mine.length && mine.length < enabled.length ? mine : undefined;
    };
    const scenario = parseScenario(LINKED, 'linked.yaml');
    const states = search(await model(scenario, 'linked.yaml', 'untimed'), 'states');
    const planted = exhaustive(await model(scenario, 'linked.yaml', 'untimed'), { reduction: 'full', persistentSet: gpu0First, onQuiet: () => undefined });
    expect(planted.stats.quietStates).toBeLessThan(states.result.stats.quietStates);
  }, 300_000);
});

// gpu0 signals a native fence opened on gpu1 too; gpu1's queue waits for it, then signals its own; a thread waits on each adapter.
const LINKED = `
name: linked
machine:
  seed: 1
  adapters: [ { name: gpu0, engines: 1 }, { name: gpu1, engines: 1 } ]
processes: [ { name: app } ]
fences:
  - { name: shared, process: app, adapter: gpu0, kind: native, flags: { shared: true, crossAdapter: true }, crossAdapter: [gpu1] }
  - { name: done, process: app, adapter: gpu1, kind: native }
queues:
  - { name: producer, process: app, adapter: gpu0, commands: [ { signal: { fence: shared, value: 1 } }, { signal: { fence: shared, value: 2 } } ] }
  - { name: consumer, process: app, adapter: gpu1, commands: [ { signal: { fence: done, value: 1 } }, { wait: { fence: shared, value: 1 } }, { signal: { fence: done, value: 2 } } ] }
threads:
  - { name: first, process: app, steps: [ { wait: { id: shared2, fences: [shared], values: [2] } } ] }
  - { name: second, process: app, steps: [ { wait: { id: done2, fences: [done], values: [2] } } ] }
expect:
  fences: { shared: 2, done: 2 }
  threads: { first: done, second: done }
`;
