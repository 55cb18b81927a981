// `wddm-fence check-driver` (issue 12): what it prints for a report (the table, --json, --junit),
// and the exits: 2 for a module that cannot be loaded or is no driver, 0 for the reference driver
// and the template, 1 for a violation. The suite itself (src/check/conformance.ts) has its own tests.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, writeFileSync, readFileSync, readdirSync, rmSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runCli } from '../src/cli/main.js';
import { conformanceJson, conformanceJunit, conformanceText, passedVerdict, xmlText } from '../src/cli/check-driver.js';
import type { ConformanceReport } from '../src/check/conformance.js';
import { REQUIREMENTS, REQUIREMENT_RANGES } from '../src/check/requirements.js';
import { CONTRACT_RULES } from '../src/check/contract.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const bundle = pathToFileURL(join(root, 'dist', 'wddm-fence.js')).href;
let dir: string;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'wddm-fence-check-driver-')); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => { const path = join(dir, name); writeFileSync(path, text); return path; };

async function cli(...argv: string[]) {
  let stdout = '', stderr = '';
  const code = await runCli(argv, { out: (t) => { stdout += t; }, err: (t) => { stderr += t; } });
  return { code, stdout, stderr };
}

/**
 * Well-formed XML or the first thing wrong: every tag closed in order, attributes quoted, no raw
 * "<" or "&" in text or attribute values (a checker small enough to read; no XML parser is a dependency).
 */
function xmlProblem(xml: string): string | undefined {
  if (!xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n')) return 'no XML declaration';
  const body = xml.slice(xml.indexOf('\n') + 1);
  const stack: string[] = [];
  const token = /<(\/?)([A-Za-z][\w.-]*)((?:\s+[\w.-]+="[^"<]*")*)\s*(\/?)>|([^<]+)|(<)/gy;
  for (let m; (m = token.exec(body));) {
    const [, closing, name, , selfClosing, text, stray] = m;
    if (stray) return `a stray "<" at ${m.index}`;
    if (text !== undefined) {
      if (/&(?!(amp|lt|gt|quot|apos);)/.test(text)) return `a raw "&" in text at ${m.index}`;
      if (!stack.length && text.trim()) return `text outside the root at ${m.index}`;
      continue;
    }
    if (/&(?!(amp|lt|gt|quot|apos);)/.test(m[3] ?? '')) return `a raw "&" in an attribute of <${name}>`;
    if (closing) { if (stack.pop() !== name) return `</${name}> closes the wrong element`; } else if (!selfClosing) stack.push(name);
  }
  if (token.lastIndex !== 0 && token.lastIndex < body.length) return `unparsed text at ${token.lastIndex}`;
  return stack.length ? `<${stack.join('>, <')}> not closed` : undefined;
}

/** A report as the suite returns one: the input of the formatters (the suite's own output is checked further down). */
const VIOLATION = { rule: 'NF-11', adapter: 'gpu0', where: 'DxgkDdiUpdateMonitoredValues', timeNs: 12_345n, traceIndex: 45,
  expected: 'MonitoredValue <written> & "visible" before CurrentValue is read', actual: "still in the write buffer ('barrier' missing)\u0001", fatal: true };
const REPORT: ConformanceReport = {
  driver: 'mine',
  seed: 7,
  results: [
    { requirement: 'CAP-01', summary: 'caps', driverFacing: false, status: 'not-driver-facing', evaluations: 0, cases: [], reason: 'the OS builds the adapter', violations: 0 },
    { requirement: 'CAP-02', summary: 'ask', driverFacing: true, judgedBy: 'CAP-02', checks: 'asked first', status: 'passed', evaluations: 42, cases: ['start-device (CAP-02 NF-01)', 'scenario: demo'], violations: 0 },
    { requirement: 'NF-02', summary: 'mv', driverFacing: true, judgedBy: 'NF-11', checks: 'order', status: 'violated', evaluations: 9, cases: ['scenario: demo'], reason: 'judged by NF-11', violations: 3, firstViolation: VIOLATION },
    { requirement: 'NF-11', summary: 'order', driverFacing: true, judgedBy: 'NF-11', checks: 'order', status: 'violated', evaluations: 9, cases: ['scenario: demo'], violations: 3, firstViolation: VIOLATION },
    { requirement: 'LOG-07', summary: 'time', driverFacing: true, judgedBy: 'LOG-07', checks: 'timestamps', status: 'not-reached', evaluations: 0, cases: [], reason: 'no case reached a log read', violations: 0 },
  ],
  cases: [
    { name: 'start-device (CAP-02 NF-01)', targets: ['CAP-02'], violations: [], evaluations: { 'CAP-02': 1 }, outcome: 'finished' },
    { name: 'scenario: demo', targets: [], violations: [VIOLATION], evaluations: { 'CAP-02': 41, 'NF-11': 9 }, outcome: 'stopped', stoppedBy: 'a bug check (NF-11) on gpu0', explained: true },
    { name: 'targeted: x', targets: ['LOG-07'], violations: [], evaluations: {}, outcome: 'error', error: 'the run stopped <here> & there' },
    { name: 'targeted: y', targets: [], violations: [], evaluations: {}, outcome: 'stopped', stoppedBy: 'a bug check (DRIVER_FAULT: it threw) on gpu0', explained: false },
  ],
  passed: false,
};

describe('check-driver output', () => {
  it('the table: every requirement passed / VIOLATED / not reached (why) / not driver-facing, evaluations, the first violation in full, the stopped and unfinished cases, the seed to replay', () => {
    const text = conformanceText(REPORT, 'my driver/driver.mjs');
    const lines = text.split('\n');
    expect(lines[0]).toBe('wddm-fence check-driver: driver "mine" from my driver/driver.mjs, seed 7');
    expect(text).toMatch(/^requirement {2}result {13}evaluations {2}violations {2}cases$/m);
    expect(text).toMatch(/^CAP-01 {7}not driver-facing$/m);
    expect(text).toMatch(/^CAP-02 {7}passed {22}42 {11}0 {2}2$/m);
    expect(text).toMatch(/^NF-02 {8}VIOLATED \(NF-11\) {13}9 {11}3 {2}1$/m);
    expect(text).toMatch(/^NF-11 {8}VIOLATED {21}9 {11}3 {2}1$/m);
    expect(text).toContain('    first: in "scenario: demo", adapter gpu0, at DxgkDdiUpdateMonitoredValues, 12345 ns, trace #45 (fatal: that adapter was bug-checked)');
    expect(text.split('    first: ').length).toBe(2); // once: NF-02's row mirrors NF-11's
    expect(text).toContain('      expected: MonitoredValue <written> & "visible" before CurrentValue is read');
    expect(text).toMatch(/^LOG-07 {7}not reached {18}0 {11}0 {2}0\n {4}why: no case reached a log read$/m);
    expect(text).toContain('cases stopped (2; the rest ran on):\n  stopped by a bug check (NF-11) on gpu0 in case "scenario: demo"\n  stopped by a bug check (DRIVER_FAULT: it threw) on gpu0 in case "targeted: y" (no rule explains it: the case failed)');
    expect(text).toContain('cases that did not finish (1):\n  targeted: x: the run stopped <here> & there');
    expect(text).toContain('FAIL: 1 passed, 1 violated, 1 not reached (of 3 rules); 2 cases failed');
    expect(text).toContain('requirements: 5 (4 driver-facing, 1 of them judged by another\'s rule; 1 not: check-driver --list-rules says why)');
    expect(text).toContain("replay: wddm-fence check-driver 'my driver/driver.mjs' --seed 7");
    expect(passedVerdict(REPORT)).toBe(false);
    const clean = { ...REPORT, results: [REPORT.results[0], REPORT.results[1], REPORT.results[4]], cases: REPORT.cases.slice(0, 1), passed: true };
    expect(passedVerdict(clean)).toBe(true);
    // a stop a violation explains does not fail a case by itself; one no rule explains does
    expect(passedVerdict({ ...clean, cases: [REPORT.cases[1]] })).toBe(true);
    expect(passedVerdict({ ...clean, cases: [REPORT.cases[3]] })).toBe(false);
  });

  it('--json is the report itself, 64-bit times as strings', () => {
    const parsed = JSON.parse(conformanceJson(REPORT));
    expect(parsed.results[2].firstViolation.timeNs).toBe('12345');
    expect(parsed).toEqual(JSON.parse(JSON.stringify(REPORT, (_k, v) => (typeof v === 'bigint' ? String(v) : v))));
  });

  it('--junit: valid XML, one testcase per requirement (failure with the first violation, skipped with the reason), an error per failed case, everything escaped', () => {
    const xml = conformanceJunit(REPORT, 'a&b.mjs');
    expect(xmlProblem(xml)).toBeUndefined();
    expect(xml).toContain('<testsuites name="wddm-fence check-driver: mine" tests="7" failures="2" errors="2" skipped="2">');
    expect(xml).toContain('<property name="seed" value="7"/>');
    expect(xml).toContain('<property name="file" value="a&amp;b.mjs"/>');
    expect(xml.match(/<testcase /g)).toHaveLength(7);
    expect(xml).toContain('<testcase classname="wddm-fence.check-driver.mine" name="CAP-02"/>');
    expect(xml).toContain('<failure type="NF-11" message="NF-11 violated at DxgkDdiUpdateMonitoredValues: expected MonitoredValue &lt;written&gt; &amp; &quot;visible&quot; before CurrentValue is read; actual still in the write buffer (&apos;barrier&apos; missing)\uFFFD">');
    expect(xml).toContain('3 violations in all</failure>');
    expect(xml).toContain('<skipped message="not reached: no case reached a log read"/>');
    expect(xml).toContain('<skipped message="not driver-facing: the OS builds the adapter"/>');
    expect(xml).toContain('name="case failed: targeted: x">\n      <error message="the run stopped &lt;here&gt; &amp; there"/>');
    expect(xml).toContain('name="case failed: targeted: y">\n      <error message="stopped by a bug check (DRIVER_FAULT: it threw) on gpu0"/>');
    expect(xml).not.toContain('\u0001');
    // the checker itself catches what it is for
    expect(xmlProblem(xml.replace('&amp;b', '&b'))).toMatch(/raw "&"/);
    expect(xmlProblem(xml.replace('</testsuite>', ''))).toMatch(/closes the wrong element/);
    expect(xmlText('<a & "b">\u0000\uFFFF')).toBe('&lt;a &amp; &quot;b&quot;&gt;\uFFFD\uFFFD');
  });
});

describe('check-driver --list-rules: the coverage table', () => {
  it('every requirement ID of the list (62: CAP 4, NF 20, INT 6, XA 7, LOG 10, MF 7, VM 8) in order, driver-facing with its rule or not with the reason; runs nothing', async () => {
    expect(REQUIREMENTS.map((r) => r.id)).toEqual(REQUIREMENT_RANGES.flatMap(([prefix, n]) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i + 1).padStart(2, '0')}`)));
    expect(REQUIREMENTS).toHaveLength(62);
    for (const r of REQUIREMENTS) {
      if (r.driverFacing) expect(CONTRACT_RULES.some((x) => x.rule === r.judgedBy), r.id).toBe(true);
      else expect(r.reason?.length ?? 0, r.id).toBeGreaterThan(10);
      if (r.judgedBy && r.judgedBy !== r.id) expect(r.reason, r.id).toBeTruthy();
    }
    // every rule is some requirement's own
    for (const rule of CONTRACT_RULES) expect(REQUIREMENTS.find((r) => r.id === rule.rule)?.judgedBy, rule.rule).toBe(rule.rule);
    const text = await cli('check-driver', '--list-rules');
    expect(text.code).toBe(0);
    for (const r of REQUIREMENTS) expect(text.stdout, r.id).toMatch(new RegExp(`^${r.id} +${r.driverFacing ? 'yes' : 'no'} +\\S`, 'm'));
    expect(text.stdout).toMatch(/^NF-02 +yes +judged by NF-09's rule: /m);
    expect(text.stdout).toMatch(/^VM-03 +no +not driver-facing: /m);
    expect(text.stdout).toMatch(/^62 requirements: 30 driver-facing \(25 rules, 1 of them judging the OS\), 32 not$/m);
    const json = await cli('check-driver', '--list-rules', '--json');
    expect(json.code).toBe(0);
    const rows = JSON.parse(json.stdout) as { requirement: string; driverFacing: boolean; judgedBy?: string; reason?: string }[];
    expect(rows.map((r) => r.requirement)).toEqual(REQUIREMENTS.map((r) => r.id));
    expect(rows.find((r) => r.requirement === 'NF-11')).toMatchObject({ driverFacing: true, judgedBy: 'NF-11', fatal: false });
    expect(await cli('check-driver', '--list-rules', 'x.mjs')).toMatchObject({ code: 2, stderr: expect.stringMatching(/--list-rules runs nothing/) });
  });

  it('docs/DRIVERS.md has the same table: every ID, driver-facing or not as the code says', () => {
    const doc = readFileSync(join(root, 'docs', 'DRIVERS.md'), 'utf8');
    for (const r of REQUIREMENTS) {
      const row = doc.split('\n').find((line) => line.startsWith(`| ${r.id} |`));
      expect(row, r.id).toBeDefined();
      const cells = row!.split('|').map((c) => c.trim());
      expect(cells[2], r.id).toBe(r.driverFacing ? (r.judgedBy === r.id ? 'yes' : `yes (${r.judgedBy}'s rule)`) : r.judgedBy ? 'no (its rule judges the OS)' : 'no');
    }
  });
});

describe('check-driver: modules it cannot judge exit 2 and run nothing', () => {
  it('no file, a syntax error, a throw while loading, no createDriver: each said, exit 2 (and a JSON document under --json)', async () => {
    const missing = await cli('check-driver', join(dir, 'nope.mjs'));
    expect(missing.code).toBe(2);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toContain(`not found: no file at ${join(dir, 'nope.mjs')}`);
    const syntax = await cli('check-driver', file('syntax.mjs', 'export function createDriver(context) {\n  return new Driver(;\n}\n'));
    expect(syntax.code).toBe(2);
    expect(syntax.stderr).toMatch(/could not be loaded: a syntax error: Unexpected token/);
    expect(syntax.stderr).toContain(`${join(dir, 'syntax.mjs')}:2`);
    const throws = await cli('check-driver', file('throws.mjs', 'throw new Error("no GPU here");\n'));
    expect(throws.code).toBe(2);
    expect(throws.stderr).toMatch(/its top-level code threw Error: no GPU here/);
    const noFactory = await cli('check-driver', file('no-factory.mjs', 'export const driver = {};\n'), '--json');
    expect(noFactory.code).toBe(2);
    expect(noFactory.stderr).toMatch(/exports no createDriver function \(its exports: driver\)/);
    expect(JSON.parse(noFactory.stdout)).toMatchObject({ ok: false, exitCode: 2, error: 'invalid-driver', message: expect.stringMatching(/exports no createDriver/) });
  });

  it('bad arguments exit 2 with the reason: no FILE, two files, a bad seed, an unknown option, a --junit path that cannot be written', async () => {
    const reference = join(root, 'examples', 'drivers', 'reference.mjs');
    expect(await cli('check-driver')).toMatchObject({ code: 2, stderr: expect.stringMatching(/needs the driver module to check/) });
    expect(await cli('check-driver', reference, reference)).toMatchObject({ code: 2, stderr: expect.stringMatching(/unexpected argument/) });
    expect(await cli('check-driver', reference, '--seed', '-3')).toMatchObject({ code: 2 });
    expect(await cli('check-driver', reference, '--seed', '4294967296')).toMatchObject({ code: 2, stderr: expect.stringMatching(/--seed is "4294967296"; expected an integer from 0 to 4294967295/) });
    expect(await cli('check-driver', reference, '--verbose')).toMatchObject({ code: 2, stderr: expect.stringMatching(/--verbose/) });
    mkdirSync(join(dir, 'out'), { recursive: true });
    expect(await cli('check-driver', reference, '--junit', join(dir, 'out'))).toMatchObject({ code: 2, stderr: expect.stringMatching(/a directory; expected a file to write/) });
    expect(await cli('check-driver', reference, '--junit', join(dir, 'no-folder', 'x.xml'))).toMatchObject({ code: 2, stderr: expect.stringMatching(/does not exist/) });
    const help = await cli('check-driver', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: wddm-fence check-driver FILE/);
    expect((await cli('--help')).stdout).toContain('check-driver FILE');
  });
});

describe('check-driver judges drivers', () => {
  it('a driver missing a DDI exits 2 naming it; one whose DDI is no function too', async () => {
    const missing = file('missing-ddi.mjs', `import { ReferenceDriver } from ${JSON.stringify(bundle)};
export function createDriver(context) {
  const driver = new ReferenceDriver(context.hardware, context.core, context.options);
  driver.updateMonitoredValues = undefined;
  driver.setNativeFenceLogBuffer = 'later';
  return driver;
}\n`);
    const r = await cli('check-driver', missing);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/does not implement the driver interface: .*missing or not a function: updateMonitoredValues, setNativeFenceLogBuffer/);
  });

  it('CAP-01 a driver whose DxgkDdiStartDevice throws cannot start an adapter: exit 1, what it threw and where, nothing else runs', async () => {
    const path = file('no-start.mjs', `import { ReferenceDriver } from ${JSON.stringify(bundle)};
export const name = 'no-start';
class NoStart extends ReferenceDriver {
  startDevice() { throw new RangeError('firmware did not answer'); }
}
export function createDriver(context) { return new NoStart(context.hardware, context.core, context.options); }\n`);
    const r = await cli('check-driver', path, '--json');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`driver "no-start" could not start an adapter: RangeError: firmware did not answer (at NoStart.startDevice (${path}:4:`);
    expect(r.stderr).toMatch(/; nothing else ran\n$/);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, exitCode: 1, error: 'driver-failed-to-start' });
  });

  it('CAP-02 NF-11 the built-in reference driver, as a module file, passes every requirement: exit 0, the table, the seed; --junit has no failure', async () => {
    const junit = join(dir, 'reference.xml');
    const r = await cli('check-driver', join(root, 'examples', 'drivers', 'reference.mjs'), '--seed', '3', '--junit', junit);
    expect(r.stderr).toBe(`wddm-fence: JUnit report written to ${junit}\n`);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^wddm-fence check-driver: driver "reference" from .*reference\.mjs, seed 3$/m);
    expect(r.stdout).toMatch(/^NF-11 +passed +[1-9]\d* +0 +\d+$/m);
    expect(r.stdout).not.toMatch(/VIOLATED|did not finish/);
    expect(r.stdout).toMatch(/^PASS: \d+ passed, 0 violated/m);
    expect(r.stdout).toMatch(/^replay: wddm-fence check-driver .*reference\.mjs --seed 3$/m);
    const xml = readFileSync(junit, 'utf8');
    expect(xmlProblem(xml)).toBeUndefined();
    expect(xml).not.toContain('<failure');
    const json = await cli('check-driver', 'reference', '--json', '--seed', '3');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ driver: 'reference', seed: 3, passed: true });
  });

  it('NF-11 a driver without the CMP barrier exits 1 with NF-11 violated and its first violation', async () => {
    const noBarrier = file('no-barrier.mjs', `import { ReferenceDriver } from ${JSON.stringify(bundle)};
export const name = 'no-barrier';
export function createDriver(context) { return new ReferenceDriver(context.hardware, context.core, { ...context.options, monitoredValueBarrier: false }); }\n`);
    const r = await cli('check-driver', noBarrier);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^NF-11 +VIOLATED +\d+ +[1-9]\d* +\d+$/m);
    expect(r.stdout).toMatch(/^ {4}first: in ".*", adapter \S+, at .*, \d+ ns, trace #\d+/m);
    expect(r.stdout).toMatch(/^FAIL: /m);
  });
});

describe('check-driver on the broken drivers', () => {
  it('every driver in examples/drivers/broken/ exits 1 naming exactly the rule its header expects; every one in examples/drivers/legal/ exits 0', async () => {
    const folder = join(root, 'examples', 'drivers', 'broken');
    const files = readdirSync(folder).filter((f) => f.endsWith('.mjs')).sort();
    expect(files.length).toBeGreaterThanOrEqual(10);
    for (const name of files) {
      const rule = /^\/\/ Expected rule: ([A-Z]+-\d+)/m.exec(readFileSync(join(folder, name), 'utf8'))?.[1];
      const r = await cli('check-driver', join(folder, name));
      expect(r.code, name).toBe(1);
      expect([...r.stdout.matchAll(/^(\S+) +VIOLATED +\d/gm)].map((m) => m[1]), name).toEqual([rule]);
      expect(r.stdout, name).toMatch(new RegExp(`^${rule} +VIOLATED +\\d+ +\\d+ +\\d+\\n {4}first: in "`, 'm'));
    }
    const legal = join(root, 'examples', 'drivers', 'legal');
    for (const name of readdirSync(legal).filter((f) => f.endsWith('.mjs'))) {
      const r = await cli('check-driver', join(legal, name));
      expect(r.code, name).toBe(0);
      expect(r.stdout, name).toMatch(/^PASS: \d+ passed, 0 violated/m);
    }
  }, 600_000);
});

describe('check-driver as a user runs it', () => {
  it('node dist/cli.js check-driver examples/drivers/reference.mjs exits 0; a module missing a DDI exits 2', () => {
    const run = (...args: string[]) => spawnSync(process.execPath, [join(root, 'dist', 'cli.js'), 'check-driver', ...args], { encoding: 'utf8', cwd: root });
    const ok = run('examples/drivers/reference.mjs');
    expect(ok.stderr).toBe('');
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/^PASS: /m);
    // inside the repository (test/artifacts/ is ignored), so the module imports the package by name as a user's would
    const local = join(root, 'test', 'artifacts');
    mkdirSync(local, { recursive: true });
    const folder = mkdtempSync(join(local, 'check-driver-'));
    try {
      writeFileSync(join(folder, 'no-ddi.mjs'), `import { ReferenceDriver } from 'wddm-fence';
export function createDriver(context) { const d = new ReferenceDriver(context.hardware, context.core, context.options); d.destroyHwQueue = undefined; return d; }\n`);
      const missing = run(join(folder, 'no-ddi.mjs'));
      expect(missing.status).toBe(2);
      expect(missing.stdout).toBe('');
      expect(missing.stderr).toMatch(/does not implement the driver interface: .*missing or not a function: destroyHwQueue/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
