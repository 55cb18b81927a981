// Bitstate ("supertrace") mode of the exhaustive search (src/explore/bitstate.ts).
import { describe, it, expect } from 'vitest';
import { exhaustive, type SearchResult } from '../src/explore/search.js';
import { BitstateVisited, omissionEstimate } from '../src/explore/bitstate.js';
import type { ExploreMachine, ExploreModel, OsGranularity } from '../src/explore/model.js';
import type { Variant } from '../src/explore/variants.js';
import { cli } from './helpers.js';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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

describe('explore --bitstate', () => {
  it('searches with the bits as its visited set, says how many states it may have omitted, and claims no proof', async () => {
    const exact = await cli('explore', '--json');
    const bits = await cli('explore', '--bitstate', '1M', '--json');
    expect(bits.code, bits.stderr).toBe(0);
    const e = JSON.parse(exact.stdout), b = JSON.parse(bits.stdout);
    // with bits to spare it reaches what the exact set reaches
    expect(b.search.states).toBe(e.search.states);
    expect(b.search.bitstate).toMatchObject({ sizeBits: 2 ** 23, hashes: 3, bytes: 2 ** 20 });
    expect(b.search.bitstate.expectedOmissions).toBeLessThan(1e-3);
    // the exact search proves; the bitstate one does not
    expect(e.invariants.every((i: { holds: boolean }) => i.holds)).toBe(true);
    expect(b.invariants.some((i: { holds: boolean }) => i.holds)).toBe(false);
    const text = await cli('explore', '--bitstate', '64K', '--bitstate-hashes', '2');
    expect(text.stdout).toMatch(/bitstate: 64 KiB \(524288 bits, 2 per state\), [\d.]+ % set, about \S+ states omitted \(expected\): no proof/);
    expect(text.stdout).toMatch(/sleep sets off/);
    expect(text.stdout).toMatch(/not a proof/);
    expect(text.stdout).not.toMatch(/every invariant holds/);
  });

  it('too small a bit array loses states and says so', async () => {
    const r = await cli('explore', '--bitstate', '8', '--json');
    const b = JSON.parse(r.stdout);
    const e = JSON.parse((await cli('explore', '--json')).stdout);
    expect(b.search.states).toBeLessThan(e.search.states);
    expect(b.search.bitstate.expectedOmissions).toBeGreaterThan(1);
  });

  it('finds a violation and writes its shortest counterexample as the exact search does', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'bitstate-'));
    try {
      const out = join(folder, 'ce.json');
      const r = await cli('explore', '--variant', 'no-barrier', '--bitstate', '1M', '--out', out);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stdout).toMatch(/VIOLATED/);
      expect(r.stdout).toMatch(/shortest counterexample: \d+ steps/);
      expect(existsSync(out)).toBe(true);
    } finally { rmSync(folder, { recursive: true, force: true }); }
  });

  it('rejects sizes and combinations it cannot do, naming what was wrong', async () => {
    for (const [args, message] of [
      [['--bitstate', '1X'], /--bitstate is "1X"; expected a size from 8 bytes to 512M/],
      [['--bitstate', '4'], /--bitstate is "4"; expected a size from 8 bytes/],
      [['--bitstate', '1G'], /--bitstate is "1G"; expected a size from 8 bytes to 512M/],
      [['--bitstate-hashes', '2'], /--bitstate-hashes goes with --bitstate SIZE/],
      [['--bitstate', '1M', '--bitstate-hashes', '17'], /--bitstate-hashes is "17"; expected an integer from 1 to 16/],
      [['--bitstate', '1M', '--reduction', 'states'], /--bitstate needs --reduction full/],
      [['--bitstate', '1M', '--shard', '1/2'], /--bitstate does not go with --shard/],
      [['--bitstate', '1M', '--workers', '2'], /--bitstate does not go with --workers/],
    ] as const) {
      const r = await cli('explore', ...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
    }
  });
});
