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
import { otherBounds } from '../src/explore/world.js';
import { ScenarioModel, type TimeMode } from '../src/explore/scenario-world.js';
import type { Scenario } from '../src/scenario-files/types.js';
import { monitoredVsNative } from './explore-files.js';
import { findBuiltin } from '../src/scenario-files/builtin.js';
import { scenarioAdapters } from '../src/scenario-files/run.js';

const machineModel = (machine: Partial<ExploreMachine>, variant: Variant = 'barrier'): ExploreModel =>
  ({ machine: { ...DEFAULT_MACHINE, ...machine }, variant, seed: 1, osGranularity: 'step' });

async function scenarioModel(name: string, time: TimeMode = 'untimed', scenario = findBuiltin(name)!.scenario!): Promise<ScenarioModel> {
  return new ScenarioModel({ scenario, source: name, adapters: await scenarioAdapters(scenario, name), time, variant: 'barrier', faults: 0 });
}

/**
 * Every pair called independent (by `footprintOf`) at every state the search without sleep sets visits (the first
 * `maxStates`): how many, and those that do not commute.
 */
function commutation(model: AnyModel, { footprintOf = footprint, maxStates = Infinity }: { footprintOf?: typeof footprint; maxStates?: number } = {}): { pairs: number; states: number; failures: string[] } {
  const paths: [number[], string[]][] = [];
  exhaustive(model, { sleepSets: false, maxStates, onState: (_key, path, _world, bounds) => paths.push([[...path], [...(bounds ?? [])]]) });
  const runner = new Runner(model);
  let pairs = 0;
  const failures: string[] = [];
  for (const [path, bounds] of paths) {
    runner.reset(path, bounds);
    const here = runner.enabled();
    const footprints = here.map((event) => footprintOf(runner.world, event));
    const names = here.map(eventKey);
    const start = runner.save();
    // The latency choices of option i: '' (every draw low), then each other pattern of what it drew (timed exploration).
    const choicesOf = (i: number): string[] => {
      runner.back(start);
      runner.take(i);
      return ['', ...otherBounds('', runner.lastDraws)];
    };
    // The key after taking here[first] then here[second] (the second found again by its name), with those latency choices, or why not.
    const both = (first: number, firstBounds: string, second: number, secondBounds: string): string => {
      runner.back(start);
      if (runner.take(first, firstBounds)) return 'the first step threw';
      const next = runner.enabled().findIndex((event) => eventKey(event) === names[second]);
      if (next < 0) return `${eventName(here[second])} is no longer enabled`;
      if (runner.take(next, secondBounds)) return 'the second step threw';
      return runner.keys.key();
    };
    const choices = here.map((_, i) => choicesOf(i));
    for (let i = 0; i < here.length; i++) {
      for (let j = i + 1; j < here.length; j++) {
        if (!independent(footprints[i], footprints[j])) continue;
        for (const bi of choices[i]) {
          for (const bj of choices[j]) {
            pairs++;
            const ij = both(i, bi, j, bj), ji = both(j, bj, i, bi);
            if (ij !== ji || !/^[0-9a-f]{16}$/.test(ij)) failures.push(`${eventName(here[i])}${bi ? ` #${bi}` : ''} then ${eventName(here[j])}${bj ? ` #${bj}` : ''}: ${ij}; the other order: ${ji} (after choices ${JSON.stringify(path)})`);
          }
        }
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

  // A scenario file's steps the table does not tell (src/explore/components.ts): an adapter's GPU steps, the
  // interrupts and DMA completions it raises, threads, timeouts and the OS's steps each touch their component
  // (adapter:<a>, its records' CurrentValues, and "os" for every step the lock may hold back).
  it('at every state of scenario files, timed and untimed (their GPU, interrupt, thread, timeout and OS steps by component)', async () => {
    let pairs = 0, timedPairs = 0;
    const files: [string, Scenario | undefined, number][] = [
      ['monitored-vs-native (one frame, no consumers)', monitoredVsNative(1, { consumers: false }), 1500], ['monitored-vs-native (one frame)', monitoredVsNative(1), 1500], ['scenario-1', undefined, Infinity], ['scenario-2b', undefined, Infinity],
      ['demo', undefined, 800], ['collapsed-interrupts', undefined, 800], ['interrupt-payload', undefined, 800],
    ];
    for (const [name, scenario, maxStates] of files) {
      for (const time of ['untimed', 'timed'] as const) {
        const r = commutation(await scenarioModel(name, time, scenario ?? findBuiltin(name)!.scenario!), { maxStates });
        expect(r.failures.slice(0, 3), `${name} ${time}`).toEqual([]);
        pairs += r.pairs;
        if (time === 'timed') timedPairs += r.pairs;
      }
    }
    // Thousands of pairs called independent (about 2,800 when written), timed ones among them (about 150).
    expect(pairs).toBeGreaterThan(2000);
    expect(timedPairs).toBeGreaterThan(50);
  }, 600_000);

  it('a footprint planted too narrow is caught: an interrupt served on gpu0 that claims none of gpu0', async () => {
    // The OS serving gpu0's interrupt reads and writes gpu0's fences, contexts and waiters; claiming only the OS's lock
    // makes it independent of gpu0's GPU steps, which it does not commute with.
    const narrow: typeof footprint = (world, event) => (event.owner === 'gpu0' && (event.kind === 'interrupt' || event.kind === 'dma-completed') ? { reads: [], writes: ['os'] } : footprint(world, event));
    const r = commutation(await scenarioModel('monitored-vs-native (one frame)', 'untimed', monitoredVsNative(1)), { footprintOf: narrow, maxStates: 2500 });
    expect(r.failures.length).toBeGreaterThan(0);
  }, 300_000);
});
