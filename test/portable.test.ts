// src/base/portable.ts: the generator's step, the uniform draw and the scheduler's order, the one definition
// the host and the core both compile. Here: their known results (a change to any of them changes every seeded
// run, so it must be deliberate and show up here), and the order's cases. That the core's stretch uses them as the
// host does (the same streams, the same formulas, tick by tick) is test/engine-stretches.test.ts's.
import { describe, it, expect } from 'vitest';
import { Random } from '../src/base/rng.js';
import { sfc32Next, uniformBelow, runsBefore } from '../src/base/portable.js';

describe('the seeded generator (sfc32, src/base/portable.ts)', () => {
  it('draws the same numbers as before for the same seed: a seed replays every run recorded with it', () => {
    // Recorded from the generator as it was before portable.ts (Random.nextU32 written in rng.ts).
    const first = new Random(1);
    expect(Array.from({ length: 6 }, () => first.nextU32())).toEqual([1828152527, 3394835397, 2967886022, 2251045104, 4148684523, 4055680838]);
    const tieBreaks = Random.stream(20261121, 1);
    expect(Array.from({ length: 4 }, () => tieBreaks.nextU32())).toEqual([1647057744, 330592987, 2640243145, 1150045068]);
    const timing = Random.stream(20261121, 2);
    expect(Array.from({ length: 6 }, () => timing.below(1000))).toEqual([574, 601, 70, 92, 866, 270]);
    expect(Array.from({ length: 4 }, () => timing.jittered(1000, 0.4))).toEqual([1079, 1256, 1355, 1324]);
    const far = new Random(0xffffffff), state = new Uint32Array(4);
    for (let i = 0; i < 1000; i++) far.nextU32();
    far.saveState(state, 0);
    expect([...state]).toEqual([3064952818, 4128176590, 569746967, 1778836776]);
  });

  it('steps any four words in place and keeps each a u32, as the core\'s words in linear memory are', () => {
    const words = { a: 0xffffffff, b: 0xffffffff, c: 0xffffffff, d: 0xffffffff };
    const draw = sfc32Next(words);
    expect(draw).toBe(0xfffffffd); // (a + b + d) mod 2³²
    expect(words).toEqual({ a: 0xff800000, b: 0xfffffff7, c: 0xfffffffc, d: 0 }); // b ^ b >>> 9, c × 9, rotl(c, 21) + draw, d + 1
    for (let i = 0; i < 1000; i++) {
      const t = sfc32Next(words);
      for (const value of [t, words.a, words.b, words.c, words.d]) expect(value >>> 0).toBe(value);
    }
  });

  it('a draw below n is floor(draw / 2³² × n): 0 … n − 1, the ends included', () => {
    expect(uniformBelow(0, 401)).toBe(0);
    expect(uniformBelow(0xffffffff, 401)).toBe(400);
    expect(uniformBelow(0x80000000, 401)).toBe(200);
    expect(uniformBelow(0x80000000, 1)).toBe(0);
  });
});

describe('the scheduler\'s order (src/base/portable.ts runsBefore)', () => {
  it('the earlier time first, then the smaller tie-break key, then the earlier scheduling; an event never runs before itself', () => {
    expect(runsBefore(10, 9, 9, 11, 0, 0)).toBe(true);       // time decides over key and sequence
    expect(runsBefore(11, 0, 0, 10, 9, 9)).toBe(false);
    expect(runsBefore(10, 1, 9, 10, 2, 0)).toBe(true);       // equal times: the key decides over sequence
    expect(runsBefore(10, 2, 0, 10, 1, 9)).toBe(false);
    expect(runsBefore(10, 5, 3, 10, 5, 4)).toBe(true);       // equal times and keys: scheduling order
    expect(runsBefore(10, 5, 4, 10, 5, 3)).toBe(false);
    expect(runsBefore(10, 5, 4, 10, 5, 4)).toBe(false);
    expect(runsBefore(10, 0xffffffff, 0, 10, 0x80000000, 1)).toBe(false); // keys compare as unsigned 32-bit numbers
    expect(runsBefore(1e15, 0, 0, Infinity, 0, 0)).toBe(true); // nothing queued: the time Infinity
  });
});
