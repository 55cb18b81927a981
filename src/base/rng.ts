// A small seeded generator (sfc32 seeded through splitmix32). The model never
// uses Math.random: one seed drives every random choice, and the trace prints it.
// A machine draws from independent streams of its seed (Random.stream), one
// per purpose, so that turning one kind of choice off (e.g. timing jitter 0)
// leaves the others' draws as they were.
//
// The step itself (sfc32Next) and the uniform draw (uniformBelow) are in portable.ts, the file the core
// compiles too: an engine's stretch in the core (engineRunStretch) draws from these same streams, their
// state handed to it (saveState) and back (loadState).

import { sfc32Next, uniformBelow, type Sfc32Words } from './portable.js';

export class Random {
  /** sfc32's four words, stepped by sfc32Next. */
  private readonly words: Sfc32Words = { a: 0, b: 0, c: 0, d: 0 };
  readonly seed: number;
  constructor(seed: number) {
    this.seed = seed >>> 0;
    let s = this.seed;
    const next = () => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    const words = this.words;
    words.a = next(); words.b = next(); words.c = next(); words.d = next();
    for (let i = 0; i < 12; i++) this.nextU32();
  }
  /** The next 32-bit draw (sfc32's step: portable.ts). */
  nextU32(): number { return sfc32Next(this.words); }
  /** The generator's state (four u32) into `into` at `at`: a stretch run elsewhere (the core's engineRunStretch) draws on from it. */
  saveState(into: Uint32Array, at: number): void { const w = this.words; into[at] = w.a; into[at + 1] = w.b; into[at + 2] = w.c; into[at + 3] = w.d; }
  /** Continues from a state saveState wrote and the core's stretch advanced (the same step: portable.ts). */
  loadState(from: Uint32Array, at: number): void { const w = this.words; w.a = from[at]; w.b = from[at + 1]; w.c = from[at + 2]; w.d = from[at + 3]; }
  /** Uniform float in [0, 1). */
  next(): number { return this.nextU32() / 4294967296; }
  /** Uniform integer in [0, n). */
  below(n: number): number { return uniformBelow(this.nextU32(), n); }
  /** Uniform 64-bit value. */
  nextU64(): bigint { return (BigInt(this.nextU32()) << 32n) | BigInt(this.nextU32()); }

  /** An independent generator for purpose `stream` (a small integer) of `seed`. */
  static stream(seed: number, stream: number): Random {
    return new Random((seed ^ Math.imul(stream + 1, 0x9e3779b9)) >>> 0);
  }

  /**
   * When set, jittered() asks it for each latency whose span is not empty instead of drawing one: it is
   * given the span's two ends (ns) and returns the latency (a schedule explorer's choice: src/explore/).
   */
  chooseLatency?: (lowNs: number, highNs: number) => number;

  /**
   * A latency with seeded jitter: `baseNs` plus a whole number of ns from 0 to
   * floor(baseNs × fraction), uniform. No draw when that span is 0.
   */
  jittered(baseNs: number, fraction: number): number {
    const span = Math.floor(baseNs * fraction);
    if (span <= 0) return baseNs;
    return this.chooseLatency ? this.chooseLatency(baseNs, baseNs + span) : baseNs + this.below(span + 1);
  }
}

/** The seed streams of a machine (Random.stream). */
export const RANDOM_STREAM = { tieBreak: 1, timing: 2 } as const;
