// The sleep-set reduction's one assumption, checked where it is used: two steps the footprints call
// independent (src/explore/footprint.ts) commute. At every state of several machines, for every pair of
// enabled steps whose footprints do not meet, taking them in either order must leave the second enabled and
// reach states with the same key (src/explore/state.ts). A pair that does not is a footprint that says too
// little, or a key that tells two equal states apart (both make the search's counts wrong: the first can lose
// states, the second counts one state twice and the sleep sets keep only one of the two).

import { describe, it, expect } from 'vitest';
import { exhaustive, Runner } from '../src/explore/search.js';
import { DEFAULT_MACHINE, type AnyModel, type ExploreMachine, type ExploreModel, type Variant } from '../src/explore/model.js';
import { eventKey, eventName } from '../src/explore/state.js';
import { footprint, independent } from '../src/explore/footprint.js';
import { ScenarioModel } from '../src/explore/scenario-world.js';
import { findBuiltin } from '../src/scenario-files/builtin.js';
import { scenarioAdapters } from '../src/scenario-files/run.js';

const machineModel = (machine: Partial<ExploreMachine>, variant: Variant = 'barrier'): ExploreModel =>
  ({ machine: { ...DEFAULT_MACHINE, ...machine }, variant, seed: 1, osGranularity: 'step' });

async function scenarioModel(name: string): Promise<ScenarioModel> {
  const builtin = findBuiltin(name)!;
  return new ScenarioModel({ scenario: builtin.scenario!, source: builtin.name, adapters: await scenarioAdapters(builtin.scenario!, builtin.name), time: 'untimed', variant: 'barrier', faults: 0 });
}

/** Every pair called independent at every state the search without sleep sets visits: how many, and those that do not commute. */
function commutation(model: AnyModel): { pairs: number; states: number; failures: string[] } {
  const paths: number[][] = [];
  exhaustive(model, { sleepSets: false, onState: (_key, path) => paths.push([...path]) });
  const runner = new Runner(model);
  let pairs = 0;
  const failures: string[] = [];
  for (const path of paths) {
    runner.reset(path);
    const here = runner.enabled();
    const footprints = here.map((event) => footprint(runner.world, event));
    const names = here.map(eventKey);
    const start = runner.save();
    // The key after taking here[first] then here[second] (the second found again by its name), or why not.
    const both = (first: number, second: number): string => {
      runner.back(start);
      if (runner.take(first)) return 'the first step threw';
      const next = runner.enabled().findIndex((event) => eventKey(event) === names[second]);
      if (next < 0) return `${eventName(here[second])} is no longer enabled`;
      if (runner.take(next)) return 'the second step threw';
      return runner.keys.key();
    };
    for (let i = 0; i < here.length; i++) {
      for (let j = i + 1; j < here.length; j++) {
        if (!independent(footprints[i], footprints[j])) continue;
        pairs++;
        const ij = both(i, j), ji = both(j, i);
        if (ij !== ji || !/^[0-9a-f]{16}$/.test(ij)) failures.push(`${eventName(here[i])} then ${eventName(here[j])}: ${ij}; the other order: ${ji} (after choices ${JSON.stringify(path)})`);
      }
    }
    runner.release(start);
  }
  return { pairs, states: paths.length, failures };
}

describe('independent steps commute', () => {
  it('at every state of generated machines (one and two engines, barrier and broken drivers, CPU signals, two adapters)', () => {
    const models: [string, ExploreModel][] = [
      ['2 engines, 2 fences, 1 signal', machineModel({ engines: 2, fences: 2, signals: 1 })],
      ['the default machine', machineModel({})],
      ['no-barrier', machineModel({}, 'no-barrier')],
      ['read-first-no-resample', machineModel({}, 'read-first-no-resample')],
      ['2 CPU signals', machineModel({ cpuSignals: 2 })],
      ['2 adapters', machineModel({ adapters: 2 })],
    ];
    let pairs = 0;
    for (const [name, model] of models) {
      const r = commutation(model);
      expect(r.failures.slice(0, 3), name).toEqual([]);
      pairs += r.pairs;
    }
    // The check has something to check: thousands of pairs called independent.
    expect(pairs).toBeGreaterThan(3000);
  }, 300_000);

  it('at every state of seed scenarios explored untimed', async () => {
    let pairs = 0;
    for (const name of ['scenario-1', 'deadlock', 'device-removal']) {
      const r = commutation(await scenarioModel(name));
      expect(r.failures.slice(0, 3), name).toEqual([]);
      pairs += r.pairs;
    }
    expect(pairs).toBeGreaterThan(50);
  }, 300_000);
});
