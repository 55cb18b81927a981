// docs/ARCHITECTURE.md "Where each requirement lives": a newcomer finds the code of any requirement ID in one
// hop. The table names every ID of the specification once (62: CAP-01..04, NF-01..20, INT-01..06, XA-01..07,
// LOG-01..10, MF-01..07, VM-01..08) and every path it names exists.
import { it, expect } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const EXPECTED = { CAP: 4, NF: 20, INT: 6, XA: 7, LOG: 10, MF: 7, VM: 8 };

/** The table's rows as [ID, what, where]. */
function rows(text: string): string[][] {
  const start = text.indexOf('## Where each requirement lives');
  expect(start, 'docs/ARCHITECTURE.md has the section "Where each requirement lives"').toBeGreaterThan(-1);
  const section = text.slice(start, text.indexOf('\n## ', start + 3));
  return section.split('\n').filter((l) => /^\| [A-Z]+-\d+ \|/.test(l)).map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
}

it('docs/ARCHITECTURE.md names every requirement ID once, in order, with files that exist', () => {
  const table = rows(readFileSync(join(root, 'docs', 'ARCHITECTURE.md'), 'utf8'));
  const expected = Object.entries(EXPECTED).flatMap(([prefix, n]) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i + 1).padStart(2, '0')}`));
  expect(table.map((r) => r[0])).toEqual(expected);
  for (const [id, , where] of table) {
    const paths = [...where.matchAll(/`([^`\s]+)[^`]*`/g)].map((m) => m[1]);
    expect(paths.length, `${id} names no file`).toBeGreaterThan(0);
    for (const path of paths) expect(existsSync(join(root, path)), `${id}: ${path} does not exist`).toBe(true);
  }
});
