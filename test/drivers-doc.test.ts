// docs/DRIVERS.md documents the whole driver interface: every member of KernelModeDriver,
// DxgkrnlCallbacks and UserModeDriverInterface in src/ddi/ddi.ts has its row, with the
// requirements it serves (the same kind of check as test/abi-doc.test.ts for the core's ABI).
import { it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const ddi = readFileSync(join(root, 'src', 'ddi', 'ddi.ts'), 'utf8');
const doc = readFileSync(join(root, 'docs', 'DRIVERS.md'), 'utf8');

/** The members of one interface of ddi.ts, as declared (`name(` or `name?(`). */
function members(name: string): string[] {
  const start = ddi.indexOf(`export interface ${name} {`);
  expect(start, name).toBeGreaterThanOrEqual(0);
  const body = ddi.slice(start, ddi.indexOf('\n}', start));
  return [...body.matchAll(/^ {2}([A-Za-z]+)\??\(/gm)].map((m) => m[1]);
}

it('every DDI, callback and user-mode method of src/ddi/ddi.ts has a row in docs/DRIVERS.md naming the requirements it serves', () => {
  const all = { KernelModeDriver: members('KernelModeDriver'), DxgkrnlCallbacks: members('DxgkrnlCallbacks'), UserModeDriverInterface: members('UserModeDriverInterface') };
  expect(all.KernelModeDriver.length).toBeGreaterThanOrEqual(18);
  expect(all.DxgkrnlCallbacks.length).toBeGreaterThanOrEqual(8);
  expect(all.UserModeDriverInterface).toEqual(['submitToHwQueue']);
  const missing: string[] = [];
  for (const [where, names] of Object.entries(all)) {
    for (const name of names) {
      const row = doc.split('\n').find((line) => line.startsWith(`| \`${name}(`));
      if (!row) { missing.push(`${where}.${name}: no row`); continue; }
      if (!/\b(CAP|NF|INT|XA|LOG|MF)-\d\d\b/.test(row.split('|').at(-2) ?? '')) missing.push(`${where}.${name}: no requirement ID in its last column`);
    }
  }
  expect(missing).toEqual([]);
});
