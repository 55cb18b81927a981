import { it } from 'vitest';
import { runFuzz, fuzzCountsText, fuzzFailureText } from '../src/check/fuzz-property.js';
it('fz', () => {
  const t = Date.now();
  const r = runFuzz({ seed: Number(process.env.FZSEED ?? 1), cases: Number(process.env.FZCASES ?? 100), steps: 100 });
  console.log(fuzzCountsText(r.counts), (Date.now() - t) / 1000, 's');
  if (r.failure) console.log(fuzzFailureText(r.failure));
}, 600_000);
