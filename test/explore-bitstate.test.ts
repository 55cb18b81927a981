// Bitstate ("supertrace") mode of the exhaustive search (src/explore/bitstate.ts).
import { describe, it, expect } from 'vitest';
import { exhaustive, type SearchResult } from '../src/explore/search.js';
import { BitstateVisited, omissionEstimate } from '../src/explore/bitstate.js';
import type { ExploreMachine, ExploreModel, OsGranularity } from '../src/explore/model.js';
import type { Variant } from '../src/explore/variants.js';

const machine = (m: Partial<ExploreMachine> = {}): ExploreMachine => ({ fences: 1, waiters: 1, signals: 1, engines: 1, adapters: 1, cpuSignals: 0, ...m });
const model = (m: Partial<ExploreMachine>, variant: Variant, os: OsGranularity): ExploreModel => ({ machine: machine(m), variant, seed: 1, osGranularity: os });
const verdicts = (r: SearchResult) => [...r.violations.keys()].sort();

describe('bitstate visited set', () => {
  it('with bits to spare finds what the exact visited set finds: the same states, quiet states and verdicts', () => {
    const cases: [Partial<ExploreMachine>, Variant, OsGranularity][] = [
      [{ waiters: 2 }, 'barrier', 'operation'], [{ waiters: 2 }, 'no-barrier', 'operation'], [{ cpuSignals: 1 }, 'no-barrier', 'operation'], [{}, 'barrier', 'step'],
    ];
    for (const [m, variant, os] of cases) {
      const what = `${JSON.stringify(m)} ${variant} OS ${os}`;
      const exactQuiet: string[] = [], bitQuiet: string[] = [];
      const exact = exhaustive(model(m, variant, os), { sleepSets: false, onQuiet: (k) => exactQuiet.push(k) });
      const bits = exhaustive(model(m, variant, os), { sleepSets: false, bitstate: { sizeBits: 2 ** 24 }, onQuiet: (k) => bitQuiet.push(k) });
      expect(bits.stats.states, what).toBe(exact.stats.states);
      expect(bits.stats.transitions, what).toBe(exact.stats.transitions);
      expect(bitQuiet.sort(), what).toEqual(exactQuiet.sort());
      expect(verdicts(bits), what).toEqual(verdicts(exact));
      expect(bits.stats.bitstate, what).toMatchObject({ sizeBits: 2 ** 24, hashes: 3, bytes: 2 ** 21 });
      expect(bits.stats.bitstate!.expectedOmissions, what).toBeLessThan(1e-6);
      expect(exact.stats.bitstate, what).toBeUndefined();
    }
  });

  it('too few bits omit states, and the estimate says so', () => {
    const m = model({ waiters: 2 }, 'barrier', 'operation');
    const exact = exhaustive(m, { sleepSets: false });
    const bits = exhaustive(m, { sleepSets: false, bitstate: { sizeBits: 64, hashes: 1 } });
    expect(bits.stats.states).toBeLessThan(exact.stats.states);
    expect(bits.stats.bitstate!.expectedOmissions).toBeGreaterThan(1);
    expect(bits.stats.bitstate!.fill).toBeGreaterThan(0.2);
  });

  it('rejects what it cannot do, naming what was wrong', () => {
    const m = model({}, 'barrier', 'operation');
    expect(() => exhaustive(m, { bitstate: { sizeBits: 1024 } })).toThrow(/bitstate needs the reduction 'full' with sleepSets: false.*sleep sets on/);
    expect(() => exhaustive(m, { reduction: 'states', bitstate: { sizeBits: 1024 } })).toThrow(/reduction 'states'/);
    expect(() => exhaustive(m, { sleepSets: false, bitstate: { sizeBits: 10 } })).toThrow(/bitstate size 10 bits: expected an integer from 64/);
    expect(() => exhaustive(m, { sleepSets: false, bitstate: { sizeBits: 1024, hashes: 0 } })).toThrow(/bitstate hashes 0/);
  });

  it('a key counts as visited once all its bits are set; the omission estimate follows (1 - e^(-kn/m))^k', () => {
    const v = new BitstateVisited(1 << 16);
    expect(v.testAndSet('0123456789abcdef')).toBe(false);
    expect(v.testAndSet('0123456789abcdef')).toBe(true);
    expect(v.testAndSet('fedcba9876543210')).toBe(false);
    expect(v.setBits).toBe(6);
    expect(v.inserted).toBe(2);
    expect(omissionEstimate(1, 1000)).toBe(0);
    expect(omissionEstimate(3, 1000, 1)).toBeCloseTo((1 - Math.exp(-1 / 1000)) + (1 - Math.exp(-2 / 1000)), 12);
  });
});
