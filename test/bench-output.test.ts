// Where the bench writes (without running it: the decision is its own function).
import { it, expect } from 'vitest';
import { join } from 'node:path';
import { outputFolder } from '../bench/output.mjs';

it('bench a quick run writes to bench/out/ (ignored by git), a full run to the tracked bench/, unless --out or --write says otherwise', () => {
  const bench = join('/repo', 'bench');
  expect(outputFolder({ quick: true }, bench)).toBe(join(bench, 'out'));
  expect(outputFolder({ quick: true, write: true }, bench)).toBe(bench);
  expect(outputFolder({ quick: true, out: '/tmp/x' }, bench)).toBe('/tmp/x');
  expect(outputFolder({ quick: false }, bench)).toBe(bench);
  expect(outputFolder({ quick: false, out: 'elsewhere' }, bench)).toBe('elsewhere');
});
