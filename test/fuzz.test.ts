// The fuzz test (src/check/fuzz.ts, src/check/fuzz-property.ts): fast-check's cases over machine
// configurations (1–3 adapters, cross-adapter fences, the doorbell on and off, optimized interrupts on
// and off, No64BitAtomics adapters with monitored fences, user-mode halves that submit hostile GPU VAs),
// every rule checked after every call; a failure is shrunk to a minimal case. `npm test` runs a bounded
// number of cases; `npm run fuzz -- --seeds N` runs more.
import { describe, expect } from 'vitest';
import { it } from '@fast-check/vitest';
import { caseArbitrary, runFuzz, fuzzCountsText } from '../src/check/fuzz-property.js';
import { runFuzzCase } from '../src/check/fuzz.js';

const CASES = 120;

describe('fuzz: random machines and calls keep every rule', () => {
  it.prop([caseArbitrary(60)], { numRuns: CASES, seed: 27 })(
    'NF-10 no lost wake-up, no fence moved backwards without AllowFenceRewind, no stale value after the OS\'s look, no write through a read-only mapping',
    ([config, calls]) => {
      const result = runFuzzCase(config, calls);
      expect(result.problem, result.problem && [...result.lines, `→ ${result.problem.problem}`].join('\n')).toBeUndefined();
    });

  it('NF-16 the cases reach what the rules are about (several adapters, the doorbell, optimized interrupts, No64BitAtomics, hostile GPU VAs), and the runner reports none broken', () => {
    const report = runFuzz({ seed: 1, cases: 60, steps: 60 });
    const c = report.counts;
    console.log(fuzzCountsText(c));
    expect(report.failure).toBeUndefined();
    expect(c.cases).toBe(60);
    expect(c.adapters[2] + c.adapters[3]).toBeGreaterThan(20);
    for (const [what, n] of Object.entries({ doorbell: c.doorbell, optimized: c.optimized, no64BitAtomics: c.no64BitAtomics, hostile: c.hostileAdapters, hostileVas: c.hostileVas, hostileFaults: c.hostileFaults, cross: c.crossAdapterFences, monitored: c.monitoredFences, refused: c.refused, gpuRewinds: c.gpuRewinds, timedOut: c.waitsTimedOut })) {
      expect(n, what).toBeGreaterThan(0);
    }
    for (const kind of ['create', 'share', 'signal', 'wait', 'destroy', 'submit', 'submitCommand', 'gpuWait', 'run', 'removeDevice', 'junk']) expect(c.actions[kind] ?? 0, kind).toBeGreaterThan(0);
  });
});
