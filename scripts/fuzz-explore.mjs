#!/usr/bin/env node
// npm run fuzz:explore [-- --seeds N] [-- --seed S] [-- --max-states M] [-- --time timed|untimed] [-- --keep-going]
//
// The explorer's reduction fuzzed (src/explore/fuzz-reduction.ts): N small random scenario files (default 200), the
// first from seed S (default 1; file i is seed S + i), each explored timed and untimed with the full reduction and
// with the visited-set search ('states'), which must reach the same quiet states and verdicts (`--time`: in one
// mode only). A file whose
// visited-set search reaches more than M states (default 4000) is discarded and counted. A progress line every 25
// files. On a mismatch it prints the seed, what differs, the file, and the command that runs exactly that file again
// (`--seed SEED --seeds 1`), and stops (`--keep-going`: carries on, and lists every mismatch at the end). Exit code 1
// on a mismatch, 2 for bad arguments. Runs from a clone (dist/fuzz-explore.js, which the build makes).

import { parseArgs } from 'node:util';
import { existsSync } from 'node:fs';

const usage = 'usage: npm run fuzz:explore -- [--seeds N] [--seed S] [--max-states M] [--time timed|untimed] [--keep-going]';
let args;
try {
  ({ values: args } = parseArgs({ options: { seeds: { type: 'string' }, seed: { type: 'string' }, 'max-states': { type: 'string' }, time: { type: 'string' }, 'keep-going': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } }));
} catch (error) {
  console.error(`fuzz:explore: ${error.message}\n${usage}`);
  process.exit(2);
}
if (args.help) { console.log(usage); process.exit(0); }
const count = (name, raw, fallback, min, max) => {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    console.error(`fuzz:explore: --${name} is "${raw}"; expected an integer from ${min} to ${max}\n${usage}`);
    process.exit(2);
  }
  return Number(raw);
};
const seed = count('seed', args.seed, 1, 0, 0xffff_ffff);
const files = count('seeds', args.seeds, 200, 1, 10_000_000);
const maxStates = count('max-states', args['max-states'], undefined, 1, 10_000_000);
if (args.time !== undefined && args.time !== 'timed' && args.time !== 'untimed') {
  console.error(`fuzz:explore: --time is "${args.time}"; expected timed or untimed (without it: both)\n${usage}`);
  process.exit(2);
}

const bundle = new URL('../dist/fuzz-explore.js', import.meta.url);
if (!existsSync(bundle)) {
  console.error('fuzz:explore: npm run fuzz:explore runs from a clone of the repository (it needs dist/fuzz-explore.js, which the build makes: npm run build, or node scripts/ensure-built.mjs)');
  process.exit(2);
}
const { fuzzReductions, mismatchText, FUZZ_MAX_STATES, FUZZ_FEATURES } = await import(bundle.href);

const started = process.hrtime.bigint();
const seconds = () => (Number(process.hrtime.bigint() - started) / 1e9).toFixed(1);
const modes = args.time ?? 'timed and untimed';
const line = (r) => `${r.files} files (${r.compared} compared ${modes}, ${r.tooBig} too big), ${r.mismatches.length} mismatch(es); ${r.statesVisited} states visited by the visited-set search, ${r.fullStatesVisited} by the full one; ${seconds()} s`;
console.log(`fuzz:explore: ${files} files from seed ${seed}, ${modes}, at most ${maxStates ?? FUZZ_MAX_STATES} states each`);
const report = await fuzzReductions({
  seed, files, ...(maxStates !== undefined ? { maxStates } : {}), ...(args.time ? { times: [args.time] } : {}), stopAtMismatch: !args['keep-going'],
  onFile: (fileSeed, comparisons, r) => {
    if (comparisons.some((c) => c.differs)) console.log(`\n${mismatchText(r.mismatches[r.mismatches.length - 1])}\n`);
    else if (r.files % 25 === 0) console.log(`  ${line(r)}`);
  },
});
console.log(line(report));
const used = report.features.size;
console.log(`parts of the format the compared files used: ${used} of ${FUZZ_FEATURES.length} (${[...report.features].map(([f, n]) => `${f} ${n}`).join(', ')})`);
if (report.mismatches.length) {
  console.log(`\nthe full reduction lost or changed something on ${report.mismatches.length} file(s): seeds ${report.mismatches.map((m) => m.seed).join(', ')}`);
  process.exitCode = 1;
} else {
  console.log('every compared file: the same quiet states and verdicts under both reductions, no state outside the visited-set search, no engine with two events pending');
}
