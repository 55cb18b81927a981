// `npm run mutate` (stryker.config.mjs): the one test Stryker runs against each mutant of the reference
// driver, the conformance suite (test/mutation/reference-conformance.mutate.ts). Not part of `npm test`.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/mutation/*.mutate.ts'],
    testTimeout: 120_000,
  },
});
