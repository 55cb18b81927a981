// The test `npm run mutate` (Stryker, stryker.config.mjs) runs against each mutant of the reference driver
// (src/driver/reference.ts): the conformance suite, as `wddm-fence check-driver reference` runs it. A mutant
// is killed when check-driver would fail the reference driver: a rule violated, or a case that failed on its
// own (a bug check no rule explains, a case that could not run). Not part of `npm test` (vitest.config.ts
// includes only *.test.ts); vitest.mutate.config.ts runs this file alone.
import { it, expect } from 'vitest';
import { runConformance, failedCases } from '../../src/scenario.js';
import { referenceDriverModule } from '../../src/index.js';

it('the reference driver passes the conformance suite (check-driver reference, seed 1)', async () => {
  const report = await runConformance(referenceDriverModule, { seed: 1 });
  const violated = report.results.filter((r) => r.status === 'violated' && r.judgedBy === r.requirement);
  expect(violated.map((r) => `${r.requirement}: ${r.firstViolation?.where}: expected ${r.firstViolation?.expected}; actual ${r.firstViolation?.actual}`)).toEqual([]);
  expect(failedCases(report).map((c) => `${c.name}: ${c.stoppedBy ?? c.error}`)).toEqual([]);
  expect(report.passed).toBe(true);
});
