#!/usr/bin/env node
// npm run fuzz [-- --seeds N] [-- --seed S] [-- --steps K] [-- --replay S]
//
// The seeded random test of fence lifetime and handle aliasing
// (src/check/fuzz.ts; `npm test` runs 300 sequences of it). Runs N sequences
// (default 2000) starting at seed S (default 1), K calls each (default 100),
// against the built bundle. Every failure is printed with its seed;
// `--replay SEED` runs that one sequence again and prints every call it makes.
// Exit code 1 when any sequence broke a rule.

import { parseArgs } from 'node:util';
import { fuzzFenceLifetime, fuzzFailureText } from '../dist/wddm-fence.js';

const usage = 'usage: npm run fuzz -- [--seeds N] [--seed S] [--steps K] [--replay SEED]';
let args;
try {
  ({ values: args } = parseArgs({ options: { seeds: { type: 'string' }, seed: { type: 'string' }, steps: { type: 'string' }, replay: { type: 'string' }, help: { type: 'boolean', short: 'h' } } }));
} catch (error) {
  console.error(`fuzz: ${error.message}\n${usage}`);
  process.exit(2);
}
if (args.help) { console.log(usage); process.exit(0); }
const count = (name, raw, fallback, max) => {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > max) { console.error(`fuzz: --${name} is "${raw}"; expected an integer from 0 to ${max}\n${usage}`); process.exit(2); }
  return Number(raw);
};
const steps = count('steps', args.steps, 100, 100_000);
const replay = args.replay === undefined ? undefined : count('replay', args.replay, 0, 0xffff_ffff);
const seed = replay ?? count('seed', args.seed, 1, 0xffff_ffff);
const sequences = replay === undefined ? count('seeds', args.seeds, 2000, 10_000_000) : 1;

const started = process.hrtime.bigint();
const report = fuzzFenceLifetime({ seed, sequences, steps, onAction: replay === undefined ? undefined : (line) => console.log(line) });
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
console.log(`fuzz: ${report.sequences} sequences from seed ${report.firstSeed}, ${report.calls} calls (${report.refused} refused with a WddmError), ` +
  `${report.deferredCloses} deferred closes, ${report.gpuRewinds} GPU rewinds, ${report.orphanedWaits} waits nothing could satisfy; ${seconds.toFixed(1)} s`);
console.log(`  calls per kind: ${Object.entries(report.actions).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, n]) => `${k}=${n}`).join(' ')}`);
if (report.failures.length) {
  console.log(`\n${report.failures.length} sequence(s) broke a rule:\n`);
  for (const failure of report.failures) console.log(fuzzFailureText(failure) + '\n');
  console.log(`failing seeds: ${report.failures.map((f) => f.seed).join(' ')}`);
  process.exitCode = 1;
} else {
  console.log('every rule held');
}
