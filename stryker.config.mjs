// `npm run mutate`: mutation testing of the reference driver with the conformance suite as the test
// (docs/DRIVERS.md, "How much the checker notices: the mutation score"). Stryker changes one thing at a
// time in src/driver/reference.ts (a condition, an operator, a constant, a statement left out), runs
// test/mutation/reference-conformance.mutate.ts against each mutant, and counts the mutants the suite
// kills (check-driver would fail the driver). It takes a while on two cores (about half an hour):
// never part of `npm test`. Reports: reports/mutation/ (git-ignored).
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  vitest: { configFile: 'vitest.mutate.config.ts', related: false },
  mutate: ['src/driver/reference.ts'],
  coverageAnalysis: 'perTest',
  concurrency: 2,
  timeoutMS: 60_000,
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
  thresholds: { high: 90, low: 80, break: null },
};
