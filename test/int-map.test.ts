// IntMap (src/base/int-map.ts): the typed-array map the OS and the reference
// driver key fences by driver handle with (issue 14f). Checked against a Map.
import { describe, it, expect } from 'vitest';
import { IntMap } from '../src/base/int-map.js';
import { Random } from '../src/base/rng.js';

describe('IntMap', () => {
  it('agrees with a Map over seeded sets, overwrites and deletes (growth, tombstones, shrinking back)', () => {
    for (const seed of [1, 2, 3]) {
      const random = new Random(seed);
      const map = new IntMap();
      const reference = new Map<number, number>();
      // Keys from a small range so sets, overwrites and deletes meet; then a large range so the table grows.
      for (let step = 0; step < 30_000; step++) {
        const range = step < 15_000 ? 512 : 0xffff_ffff;
        const key = random.nextU32() % range;
        const action = random.nextU32() % 3;
        if (action === 2) {
          expect(map.delete(key)).toBe(reference.delete(key));
        } else {
          const value = random.nextU32();
          map.set(key, value);
          reference.set(key, value);
        }
        expect(map.size).toBe(reference.size);
      }
      for (const [key, value] of reference) expect(map.get(key)).toBe(value);
      // Delete everything: every lookup misses, and the table is usable again.
      for (const key of [...reference.keys()]) expect(map.delete(key)).toBe(true);
      expect(map.size).toBe(0);
      for (const key of [...reference.keys()].slice(0, 100)) expect(map.has(key)).toBe(false);
      map.set(0xffff_ffff, 0);
      expect(map.get(0xffff_ffff)).toBe(0);
    }
  });

  it('refuses keys and values that are not 32-bit unsigned integers and finds nothing for them', () => {
    const map = new IntMap();
    for (const bad of [-1, 0x1_0000_0000, 1.5, Number.NaN]) {
      expect(() => map.set(bad, 1)).toThrow(/is not a pair of 32-bit unsigned integers/);
      expect(() => map.set(1, bad)).toThrow(/is not a pair of 32-bit unsigned integers/);
      expect(map.get(bad)).toBeUndefined();
      expect(map.delete(bad)).toBe(false);
    }
    expect(map.size).toBe(0);
  });
});
