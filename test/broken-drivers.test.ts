// examples/drivers/broken/ (issue 12): every broken driver is caught by the conformance suite with exactly
// the rule its header names, and nothing else; its README lists the same rule. The modules import the
// package by name ('wddm-fence' → dist/wddm-fence.js: `npm test` builds it first).
import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runConformance } from '../src/scenario.js';
import type { DriverModule } from '../src/index.js';

const folder = fileURLToPath(new URL('../examples/drivers/broken/', import.meta.url));
const files = readdirSync(folder).filter((f) => f.endsWith('.mjs')).sort();
const readme = readFileSync(join(folder, 'README.md'), 'utf8');
const expectedRule = (file: string) => /^\/\/ Expected rule: ([A-Z]+-\d+)/m.exec(readFileSync(join(folder, file), 'utf8'))?.[1];
const cases = files.map((file) => ({ file, rule: expectedRule(file) ?? 'none' }));

describe('examples/drivers/broken', () => {
  it('CAP-01 there are at least 10, each with its expected rule in its header and the same rule in the README', () => {
    expect(files.length).toBeGreaterThanOrEqual(10);
    for (const { file, rule } of cases) {
      expect(rule, file).toMatch(/^[A-Z]+-\d+$/);
      expect(readme, file).toMatch(new RegExp(`\\| \`${file.replace('.', '\\.')}\` \\|[^\\n]*\\| ${rule} \\|`));
    }
    expect(new Set(cases.map((c) => c.rule)).size).toBe(cases.length);
  });

  for (const { file, rule } of cases) {
    it(`${rule} ${file}: the conformance suite reports exactly ${rule} violated`, async () => {
      const module = (await import(pathToFileURL(join(folder, file)).href)) as DriverModule;
      const report = await runConformance(module, { seed: 1 });
      const violated = report.results.filter((r) => r.status === 'violated').map((r) => r.requirement);
      expect(violated, JSON.stringify(report.results.filter((r) => r.firstViolation).map((r) => r.firstViolation))).toEqual([rule]);
      expect(report.passed).toBe(false);
      const first = report.results.find((r) => r.requirement === rule)!.firstViolation!;
      expect(first.rule).toBe(rule);
      expect(first.expected.length).toBeGreaterThan(0);
      expect(first.actual.length).toBeGreaterThan(0);
      expect(report.driver).toBe(file.replace('.mjs', ''));
    }, 60_000);
  }
});
