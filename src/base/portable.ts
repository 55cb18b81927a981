// Rules the host and the core must apply identically, written once and compiled by both tsc (the host:
// rng.ts, scheduler.ts) and asc (the core: assembly/gpu.ts imports it, so an engine's stretch draws and
// orders its ticks as the host's Random and Scheduler would):
//
//   sfc32Next      sfc32's step (Random.nextU32; the stretch's two streams)
//   uniformBelow   a draw as a whole number in [0, n) (Random.below, jittered; the stretch's jitter)
//   runsBefore     the scheduler's order: time, then the seeded tie-break key, then scheduling order
//
// Only the subset both compile alike: the core's types u32, f64, bool (portable-types.d.ts makes them
// number and boolean for tsc), every u32 result wrapped with `>>> 0` (a JS number then wraps as an
// AssemblyScript u32 does; asc drops it), `<f64>x` (a conversion in asc, an assertion in tsc); no
// decorators, no imports. A state is anything with four u32 fields a..d: Random's object on the host,
// a view of the StretchRecord's words in the core (the generic is compiled per type and inlined there).
// The host's public declarations never name these types. Tests: test/portable.test.ts (known draws,
// the order), test/engine-stretches.test.ts (the core's stretch against the host, tick by tick).

/** sfc32's state: four 32-bit words. */
export interface Sfc32Words { a: u32; b: u32; c: u32; d: u32 }

/** sfc32's step: advances `words` and returns the next 32-bit draw. */
export function sfc32Next<Words extends Sfc32Words>(words: Words): u32 {
  const a = words.a, b = words.b, c = words.c, d = words.d;
  const t: u32 = (((a + b) >>> 0) + d) >>> 0;
  words.a = (b ^ (b >>> 9)) >>> 0;
  words.b = (c + (c << 3)) >>> 0;
  words.c = ((((c << 21) | (c >>> 11)) >>> 0) + t) >>> 0;
  words.d = (d + 1) >>> 0;
  return t;
}

/** A 32-bit draw as a whole number uniform in [0, n): floor(draw / 2³² × n). */
export function uniformBelow(draw: u32, n: f64): f64 {
  return Math.floor(<f64>draw / 4294967296 * n);
}

/**
 * The scheduler's order: does the event at `timeNs` with seeded key `tieBreak` and scheduling number `sequence`
 * run before the other one? The earlier time first, then the smaller key, then the earlier scheduling.
 */
export function runsBefore(timeNs: f64, tieBreak: u32, sequence: f64, otherTimeNs: f64, otherTieBreak: u32, otherSequence: f64): bool {
  return timeNs < otherTimeNs || (timeNs === otherTimeNs && (tieBreak < otherTieBreak || (tieBreak === otherTieBreak && sequence < otherSequence)));
}
