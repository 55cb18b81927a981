// The seeded random test of fence lifetime and handle aliasing (src/check/fuzz.ts).
// `npm test` runs a bounded number of sequences; `npm run fuzz -- --seeds N` runs more.
import { describe, it, expect } from 'vitest';
import { fuzzFenceLifetime, fuzzFailureText } from '../src/index.js';

describe('seeded random fence lifetime test', () => {
  it('NF-16 hundreds of random create/open/share/signal/wait/destroy/submit sequences over two processes and two adapters keep every rule', () => {
    const report = fuzzFenceLifetime({ seed: 1, sequences: 300, steps: 100 });
    if (report.failures.length) console.log(report.failures.map(fuzzFailureText).join('\n\n'));
    expect(report.failures.map((f) => f.seed)).toEqual([]);
    // The sequences did reach the cases the rules are about.
    expect(report.sequences).toBe(300);
    for (const kind of ['create', 'share', 'closeNt', 'signal', 'wait', 'destroy', 'createQueue', 'destroyQueue', 'submit', 'run', 'removeDevice', 'junk']) {
      expect(report.actions[kind] ?? 0, kind).toBeGreaterThan(0);
    }
    expect(report.refused).toBeGreaterThan(50);
    expect(report.deferredCloses).toBeGreaterThan(0);
    expect(report.gpuRewinds).toBeGreaterThan(0);
  });
});
