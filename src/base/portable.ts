// The rules the host and the core must apply identically, written once and compiled by both compilers:
// TypeScript for the host (src/base/rng.ts, src/base/scheduler.ts import it) and AssemblyScript for the
// core (assembly/gpu.ts imports `../src/base/portable`: an engine's stretch, engineRunStretch, draws
// the ticks the host would draw and takes them in place when the host's scheduler would take them
// next). Two copies held together by tests would be two definitions; this file is the one.
//
//   sfc32Next      sfc32's step: the seeded generator (Random.nextU32; the stretch's two streams)
//   uniformBelow   a draw as a whole number in [0, n) (Random.below and jittered; the stretch's jitter)
//   runsBefore     the scheduler's order: time, then the seeded tie-break key, then scheduling order
//
// Written in the subset both compile with the same meaning:
// - Types are the core's: u32, f64, bool. AssemblyScript knows them; the host sees them as number and
//   boolean through portable-types.d.ts (two ambient lines). Every u32 result is written with `>>> 0`:
//   a JS number then wraps to 32 unsigned bits exactly as an AssemblyScript u32 does (where `>>> 0`
//   costs nothing: binaryen drops it), and `<f64>x` is a conversion there, an assertion here.
// - No decorators, no imports, no language feature only one of them has. A state is anything with four
//   u32 fields a, b, c, d: the host's Random holds an object, the core views the words of its
//   StretchRecord in linear memory (AssemblyScript compiles the generic once per type, and inlines it).
// - The host's declarations (dist/types) never name this file's types: its callers wrap it in numbers.
//
// The core's build (scripts/build-core.mjs, scripts/ensure-built.mjs) reads this file as one of its
// sources; test/portable.test.ts holds the known draws and the order, and checks that the core's stretch
// draws what the host draws.

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
