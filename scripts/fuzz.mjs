#!/usr/bin/env node
// npm run fuzz [-- --seeds N] [-- --seed S] [-- --steps K] [-- --replay S:PATH]
//
// The fuzz test (src/check/fuzz.ts: a case is a machine configuration and a list of calls, and
// the rules every case keeps; src/check/fuzz-property.ts: fast-check's generators and shrinking;
// `npm test` runs a small number of cases). Runs N cases (default 2000) from fast-check seed S
// (default 1), at most K calls each (default 100), against dist/fuzz.js. A failing case is shrunk
// to the smallest one that still fails and printed as its calls, with the command that makes
// exactly it again: `--replay S:PATH` (every call of it printed as it is made). Exit code 1 when a
// case broke a rule, 2 for bad arguments. Needs a clone of the repository (fast-check is a dev
// dependency).

import { parseArgs } from 'node:util';
import { existsSync } from 'node:fs';

const usage = 'usage: npm run fuzz -- [--seeds N] [--seed S] [--steps K] [--replay SEED:PATH]';
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
let replay;
if (args.replay !== undefined) {
  const match = /^(\d+):(\d+(?::\d+)*)$/.exec(args.replay);
  if (!match || Number(match[1]) > 0x7fff_ffff) { console.error(`fuzz: --replay is "${args.replay}"; expected SEED:PATH as a failure printed it (e.g. 7:12:0:3)\n${usage}`); process.exit(2); }
  replay = { seed: Number(match[1]), path: match[2] };
}
const seed = replay?.seed ?? count('seed', args.seed, 1, 0x7fff_ffff);
const cases = replay ? 1 : count('seeds', args.seeds, 2000, 10_000_000);

const bundle = new URL('../dist/fuzz.js', import.meta.url);
if (!existsSync(bundle) || !existsSync(new URL('../node_modules/fast-check/package.json', import.meta.url))) {
  console.error('fuzz: npm run fuzz runs from a clone of the repository, after `npm install` (it needs fast-check, a dev dependency, and dist/fuzz.js, which the build makes)');
  process.exit(2);
}
const { runFuzz, fuzzFailureText, fuzzCountsText } = await import(bundle.href);

const started = process.hrtime.bigint();
const report = runFuzz({ seed, cases, steps, ...(replay ? { path: replay.path, onCall: (line) => console.log(line) } : {}) });
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
console.log(`fuzz: ${replay ? `case ${replay.seed}:${replay.path}` : `${report.counts.cases} cases from seed ${seed}`}, at most ${steps} calls each; ${seconds.toFixed(1)} s`);
console.log(fuzzCountsText(report.counts));
if (report.failure) {
  console.log(`\n${fuzzFailureText(report.failure, steps)}`);
  process.exitCode = 1;
} else {
  console.log('every rule held: no lost wake-up, no fence moved backwards without AllowFenceRewind, no stale value after the OS\'s look, no write through a read-only mapping (and the lifetime rules of src/check/fuzz.ts)');
}
