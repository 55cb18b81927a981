// The README's library example must run as printed (against the built bundle).
import { it, expect } from 'vitest';
import { readFileSync, writeFileSync, mkdtempSync, rmSync, existsSync, mkdirSync, cpSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

it('the README library example runs as printed: the waiter wakes and the trace and summary print', () => {
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

it('the README\'s "Check your driver" commands run as printed: the template copied, each check-driver line exits 0', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Check your driver'));
  const lines = /```sh\n([\s\S]*?)```/.exec(section)![1].split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter(Boolean);
  expect(lines[1]).toBe('cp -r examples/drivers/template my-driver');
  const commands = lines.filter((l) => /check-driver/.test(l));
  expect(commands.length).toBe(5);
  // my-driver goes under test/artifacts/ (ignored), inside the repository so 'wddm-fence' resolves as it does for the README's reader
  mkdirSync(join(root, 'test', 'artifacts'), { recursive: true });
  const dir = mkdtempSync(join(root, 'test', 'artifacts', 'readme-driver-'));
  try {
    cpSync(join(root, 'examples', 'drivers', 'template'), join(dir, 'my-driver'), { recursive: true });
    for (const command of commands) {
      const args = command.replace(/^(node dist\/cli\.js|npx wddm-fence|wddm-fence) /, '').split(/\s+/)
        .map((a) => a.replace(/^my-driver\//, `${dir}/my-driver/`).replace(/^conformance\.xml$/, join(dir, 'conformance.xml')));
      const r = spawnSync(process.execPath, [join(root, 'dist', 'cli.js'), ...args], { cwd: root, encoding: 'utf8' });
      expect(r.status, `${command}\n${r.stderr}`).toBe(0);
      if (args.includes('--json')) expect(JSON.parse(r.stdout).passed).toBe(true);
      else expect(r.stdout, command).toMatch(/^PASS: /m);
    }
    expect(readFileSync(join(dir, 'conformance.xml'), 'utf8')).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites /);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('the counts the README\'s race explorer commands state are what those commands print', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const block = /```sh\n(wddm-fence explore [\s\S]*?)```/.exec(readme.slice(readme.indexOf('## The race explorer')))![1];
  const said = (pattern: RegExp) => Number(pattern.exec(block)?.[1]);
  const dir = mkdtempSync(join(tmpdir(), 'wddm-fence-readme-explore-'));
  const explore = (...args: string[]) => spawnSync(process.execPath, [join(root, 'dist', 'cli.js'), 'explore', ...args], { cwd: dir, encoding: 'utf8' });
  const states = (out: string) => Number(/^ {2}(\d+) states \(/m.exec(out)?.[1]);
  try {
    const steps = explore();
    expect(steps.status).toBe(0);
    expect(states(steps.stdout)).toBe(said(/^wddm-fence explore +# (\d+) states, every invariant holds/m));
    expect(states(explore('--os-granularity', 'operation').stdout)).toBe(said(/--os-granularity operation +# each OS operation whole: (\d+) states/));
    const lost = explore('--variant', 'no-barrier');
    expect(lost.status).toBe(1);
    expect(Number(/^shortest counterexample: (\d+) steps/m.exec(lost.stdout)?.[1])).toBe(said(/the shortest lost wakeup \((\d+) steps\)/));
    expect(existsSync(join(dir, 'wddm-fence-counterexample.json'))).toBe(true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('the README is a newcomer\'s page: at most 300 lines (the rest lives in docs/)', () => {
  const lines = readFileSync(join(root, 'README.md'), 'utf8').split('\n').length;
  expect(lines, 'README.md is longer than 300 lines: move the detail into docs/ and link it').toBeLessThanOrEqual(300);
});

/** The figure's number as shown ("9.13 M", "1,286", "0.19×") and the largest difference its rounding allows. */
function shown(text: string): { value: number; tolerance: number } | undefined {
  const m = /(\d[\d,]*(?:\.(\d+))?)(?: (M)\b)?/.exec(text);
  if (m === null) return undefined;
  const scale = m[3] === 'M' ? 1e6 : 1;
  return { value: Number(m[1].replace(/,/g, '')) * scale, tolerance: 0.5 * 10 ** -(m[2]?.length ?? 0) * scale * 1.0001 };
}

it('the README\'s performance table states what bench/results.json holds: each figure\'s value and ratio, as rounded', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Performance'), readme.indexOf('\n## ', readme.indexOf('## Performance') + 3));
  const metrics = (JSON.parse(readFileSync(join(root, 'bench', 'results.json'), 'utf8')) as { metrics: Record<string, { value: number; ratio: number | null }> }).metrics;
  const rows = section.split('\n').filter((l) => /^\| `/.test(l)).map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
  expect(rows.length).toBeGreaterThanOrEqual(10);
  for (const [figure, , measured, ratio] of rows) {
    const name = figure.replace(/`/g, '');
    const metric = metrics[name];
    expect(metric, `README figure ${name} is not in bench/results.json: the README's table holds the latest full bench's figures (put others in docs/PERFORMANCE.md)`).toBeDefined();
    const value = shown(measured)!;
    expect(Math.abs(value.value - metric.value), `${name}: the README says ${measured}, bench/results.json ${metric.value}`).toBeLessThanOrEqual(value.tolerance);
    if (ratio !== '—') {
      const r = shown(ratio)!;
      expect(Math.abs(r.value - metric.ratio!), `${name}: the README's ratio ${ratio}, bench/results.json ${metric.ratio}`).toBeLessThanOrEqual(r.tolerance);
    }
  }
});
