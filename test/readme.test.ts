// The README's library example must run as printed (against the built bundle).
import { it, expect } from 'vitest';
import { readFileSync, writeFileSync, mkdtempSync, rmSync, existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

it('NF-08 the README library example runs as printed: the waiter wakes and the trace and summary print', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## A short example (the library)'));
  const code = /```js\n([\s\S]*?)```/.exec(section)![1];
  const bundle = join(root, 'dist', 'wddm-fence.js');
  const dir = mkdtempSync(join(tmpdir(), 'wddm-fence-readme-'));
  try {
    const file = join(dir, 'example.mjs');
    writeFileSync(file, code.replace("from 'wddm-fence'", `from ${JSON.stringify(bundle)}`));
    const out = execFileSync(process.execPath, [file], { encoding: 'utf8' });
    expect(out).toMatch(/^SUCCESS$/m);
    expect(out).toMatch(/D3DKMTCreateNativeFence/);
    expect(out).toMatch(/interrupts: raised=1 handled=1 spurious=0/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('the README links only to files inside the repository, and every one exists', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const targets = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((t) => !/^(https?:|#)/.test(t));
  expect(targets.length).toBeGreaterThan(5);
  for (const target of targets) {
    expect(target, target).not.toMatch(/^(\.\.|\/)/);
    expect(existsSync(join(root, target.split('#')[0])), target).toBe(true);
  }
  expect(readme).not.toMatch(/`\.\.\/[^`]*`/); // no path outside the repository in code either
});
