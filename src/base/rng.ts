// A small seeded generator (sfc32 seeded through splitmix32). The model never
// uses Math.random: one seed drives every random choice, and the trace prints it.
// A machine draws from independent streams of its seed (Random.stream), one
// per purpose, so that turning one kind of choice off (e.g. timing jitter 0)
// leaves the others' draws as they were.

export class Random {
  private a: number; private b: number; private c: number; private d: number;
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
    this.a = next(); this.b = next(); this.c = next(); this.d = next();
    for (let i = 0; i < 12; i++) this.nextU32();
  }
  /** sfc32's step, its definition (the core's stretch draws the same steps over a state handed to it: assembly/gpu.ts sfcNext). */
  nextU32(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0;
    this.c = (this.c + t) >>> 0;
    return t;
  }
  /** The generator's state (four u32) into `into` at `at`: a stretch run elsewhere (the core's engineRunStretch) draws on from it. */
  saveState(into: Uint32Array, at: number): void { into[at] = this.a; into[at + 1] = this.b; into[at + 2] = this.c; into[at + 3] = this.d; }
  /** Continues from a state saveState wrote and another copy of sfc32 advanced. */
  loadState(from: Uint32Array, at: number): void { this.a = from[at]; this.b = from[at + 1]; this.c = from[at + 2]; this.d = from[at + 3]; }
  /** Uniform float in [0, 1). */
  next(): number { return this.nextU32() / 4294967296; }
  /** Uniform integer in [0, n). */
  below(n: number): number { return Math.floor(this.next() * n); }
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
