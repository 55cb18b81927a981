// `wddm-fence check-driver`: judges a driver module against the contract (docs/DRIVERS.md).
//
//   check-driver FILE [--json] [--junit OUT.xml] [--seed N]
//
// Loads FILE (an ES module exporting createDriver: loadDriverModule), runs the conformance suite
// (src/check/conformance.ts: every built-in scenario and the targeted cases, the contract checker
// watching every DDI, callback and GPU step) and prints a table requirement → passed / violated /
// not exercised, with the first violation of each violated requirement and the seed to replay
// the run. `reference` (when no such file exists) names the built-in reference driver.
//
// Exit codes: 0 every requirement passed (or was not exercised) and every case ran to its end,
// 1 a requirement was violated, a case could not finish, or the driver could not even start (its
// DxgkDdiStartDevice threw: said, with where in the module), 2 the module cannot be loaded or is
// not a driver (the missing DDI or wrong shape named), or bad arguments. Nothing runs on a 2.
// --json prints the report as JSON (BigInts as strings), errors as a JSON document too;
// --junit writes one testcase per requirement (and one per case that did not finish).

import { writeFileSync, statSync, accessSync, constants as fsConstants } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WddmError } from '../base/errors.js';
import { loadDriverModule } from '../driver/load.js';
import { createMachine } from '../machine/machine.js';
import { referenceDriverModule, type DriverModule } from '../driver/module.js';
import { parseArguments, shellQuote } from './args.js';
import { runConformance, type ConformanceReport, type RequirementResult, type Violation } from '../check/conformance.js';

export interface CheckDriverIo {
  out(text: string): void;
  err(text: string): void;
}

export const CHECK_DRIVER_HELP = `usage: wddm-fence check-driver FILE [options]

Judges a driver module against the WDDM fence contract: runs every built-in scenario
and a targeted case per requirement with the driver on every adapter, the contract
checker watching every DDI, callback and GPU step, and prints a table
requirement → passed / violated / not exercised (docs/DRIVERS.md).
  FILE              an ES module (.mjs or .js) exporting createDriver(context), or a .wasm driver
                    built from C (examples/drivers/c), e.g.
                    examples/drivers/template/driver.mjs; "reference" = the built-in reference driver
  --seed N          the seed of every case (0..4294967295, default 1); printed, to replay a run
  --json            print the report as JSON (64-bit values as strings)
  --junit OUT.xml   also write the report as JUnit XML: one testcase per requirement
  --help            this text
Exit codes: 0 every requirement passed, 1 a violation (or a case that could not finish,
or a driver that could not start), 2 the module cannot be loaded or does not implement
the driver interface, or bad arguments.
`;

/** Bad arguments (exit 2; the help is shown). */
class CheckDriverUsage extends Error {}
/** The driver cannot be judged: it does not load, or is not a driver module (exit 2). */
class DriverUnusable extends Error {}
/** The driver is one, but it cannot start: building it or DxgkDdiStartDevice threw (exit 1: the driver is wrong, not its shape). */
class DriverFailedToStart extends Error {}

const codeOf = (error: unknown) => (error as NodeJS.ErrnoException)?.code;

/** An output path must be a file in an existing folder this user may write: checked before anything runs. */
function checkOutput(option: string, path: string): void {
  if (path === '') throw new CheckDriverUsage(`${option} is ""; expected the path of a file to write`);
  let stats;
  try { stats = statSync(path); } catch (error) {
    if (codeOf(error) !== 'ENOENT' && codeOf(error) !== 'ENOTDIR') throw new CheckDriverUsage(`${option} is "${path}", which cannot be used: ${(error as Error).message}`);
  }
  if (stats?.isDirectory()) throw new CheckDriverUsage(`${option} is "${path}", a directory; expected a file to write (e.g. ${path.replace(/[\\/]+$/, '')}/conformance.xml)`);
  if (stats && !stats.isFile()) throw new CheckDriverUsage(`${option} is "${path}", which is not a regular file; expected a file to write`);
  const folder = dirname(resolve(path));
  let parent;
  try { parent = statSync(folder); } catch { throw new CheckDriverUsage(`${option} is "${path}", but the folder "${dirname(path)}" does not exist; expected a file in an existing folder`); }
  if (!parent.isDirectory()) throw new CheckDriverUsage(`${option} is "${path}", but "${dirname(path)}" is not a folder; expected a file in an existing folder`);
  try { accessSync(stats ? path : folder, fsConstants.W_OK); } catch {
    throw new CheckDriverUsage(`${option} is "${path}", which cannot be written (permission denied); expected a file this user may write`);
  }
}

function parseSeed(raw: string | undefined): number {
  if (raw === undefined) return 1;
  const seed = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(seed) || seed > 0xffff_ffff) throw new CheckDriverUsage(`--seed is "${raw}"; expected an integer from 0 to 4294967295`);
  return seed;
}

/** The command that runs the same suite again, case for case. */
export const replayCommand = (file: string, seed: number) => `wddm-fence check-driver ${shellQuote(file)} --seed ${seed}`;

const STATUS_TEXT: Record<RequirementResult['status'], string> = { passed: 'passed', violated: 'VIOLATED', 'not-exercised': 'not exercised' };

/** The case a requirement's first violation was seen in (the suite reports them in case order). */
function caseOfFirst(report: ConformanceReport, result: RequirementResult): string | undefined {
  return report.cases.find((c) => c.violations.some((v) => v.rule === result.requirement))?.name;
}

/** One violation in words: where, when, which trace event; then expected and actual on their own lines. */
export function violationText(violation: Violation, caseName: string | undefined, indent = '    '): string[] {
  const place = [caseName ? `in "${caseName}"` : undefined, `adapter ${violation.adapter}`, `at ${violation.where}`,
    `${String(violation.timeNs)} ns`, `trace #${violation.traceIndex}`].filter(Boolean).join(', ');
  return [
    `${indent}first: ${place}${violation.fatal ? ' (fatal: that adapter was bug-checked)' : ''}`,
    `${indent}  expected: ${violation.expected}`,
    `${indent}  actual:   ${violation.actual}`,
  ];
}

/** The table: each requirement's result, the first violation of each violated one, the cases that did not finish, the verdict and the replay command. */
export function conformanceText(report: ConformanceReport, file: string): string {
  const lines: string[] = [];
  lines.push(`wddm-fence check-driver: driver "${report.driver}" from ${file}, seed ${report.seed}`);
  lines.push(`${report.cases.length} case${report.cases.length === 1 ? '' : 's'} ran (every built-in scenario and the targeted cases), with the driver on every adapter`);
  lines.push('');
  const width = Math.max('requirement'.length, ...report.results.map((r) => r.requirement.length));
  lines.push(`${'requirement'.padEnd(width)}  ${'result'.padEnd(13)}  ${'violations'.padStart(10)}  exercised by`);
  for (const r of report.results) {
    const by = r.cases.length === 0 ? 'no case' : `${r.cases.length} case${r.cases.length === 1 ? '' : 's'}`;
    lines.push(`${r.requirement.padEnd(width)}  ${STATUS_TEXT[r.status].padEnd(13)}  ${String(r.violations).padStart(10)}  ${by}`);
    if (r.status === 'violated' && r.firstViolation) lines.push(...violationText(r.firstViolation, caseOfFirst(report, r)));
  }
  const unfinished = report.cases.filter((c) => c.error !== undefined);
  if (unfinished.length) {
    lines.push('');
    lines.push(`cases that did not finish (${unfinished.length}):`);
    for (const c of unfinished) lines.push(`  ${c.name}: ${c.error}`);
  }
  const count = (status: RequirementResult['status']) => report.results.filter((r) => r.status === status).length;
  const violated = count('violated');
  lines.push('');
  lines.push(`${passedVerdict(report) ? 'PASS' : 'FAIL'}: ${count('passed')} passed, ${violated} violated, ${count('not-exercised')} not exercised`
    + ` (of ${report.results.length} requirements)${unfinished.length ? `; ${unfinished.length} case${unfinished.length === 1 ? '' : 's'} did not finish` : ''}`);
  lines.push(`replay: ${replayCommand(file, report.seed)}`);
  return lines.join('\n') + '\n';
}

/** The verdict the exit code follows: no requirement violated and every case finished. */
export function passedVerdict(report: ConformanceReport): boolean {
  return report.passed && report.results.every((r) => r.status !== 'violated') && report.cases.every((c) => c.error === undefined);
}

/** The report as JSON, 64-bit values (BigInts) as decimal strings. */
export function conformanceJson(report: ConformanceReport): string {
  return JSON.stringify(report, (_key, value) => (typeof value === 'bigint' ? value.toString() : value), 2) + '\n';
}

/** Text for XML: the five special characters escaped, characters XML 1.0 cannot hold replaced by U+FFFD. */
export function xmlText(text: string): string {
  return text
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '\uFFFD')
    .replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

/** JUnit XML: one testsuite for the driver, one testcase per requirement (failure: the first violation; skipped: not exercised), one error testcase per case that did not finish. */
export function conformanceJunit(report: ConformanceReport, file: string): string {
  const unfinished = report.cases.filter((c) => c.error !== undefined);
  const failures = report.results.filter((r) => r.status === 'violated').length;
  const skipped = report.results.filter((r) => r.status === 'not-exercised').length;
  const tests = report.results.length + unfinished.length;
  const counts = `tests="${tests}" failures="${failures}" errors="${unfinished.length}" skipped="${skipped}"`;
  const suite = xmlText(`wddm-fence check-driver: ${report.driver}`);
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${suite}" ${counts}>`,
    `  <testsuite name="${suite}" ${counts}>`,
    '    <properties>',
    `      <property name="driver" value="${xmlText(report.driver)}"/>`,
    `      <property name="file" value="${xmlText(file)}"/>`,
    `      <property name="seed" value="${report.seed}"/>`,
    `      <property name="replay" value="${xmlText(replayCommand(file, report.seed))}"/>`,
    '    </properties>',
  ];
  const classname = xmlText(`wddm-fence.check-driver.${report.driver}`);
  for (const r of report.results) {
    const open = `    <testcase classname="${classname}" name="${xmlText(r.requirement)}">`;
    if (r.status === 'passed') {
      lines.push(`    <testcase classname="${classname}" name="${xmlText(r.requirement)}"/>`);
    } else if (r.status === 'not-exercised') {
      lines.push(open, '      <skipped message="not exercised by any case"/>', '    </testcase>');
    } else {
      const first = r.firstViolation;
      const message = first ? `${r.requirement} violated at ${first.where}: expected ${first.expected}; actual ${first.actual}` : `${r.requirement} violated`;
      const details = first ? violationText(first, caseOfFirst(report, r), '').join('\n') + `\n${r.violations} violation${r.violations === 1 ? '' : 's'} in all` : '';
      lines.push(open, `      <failure type="${xmlText(r.requirement)}" message="${xmlText(message)}">${xmlText(details)}</failure>`, '    </testcase>');
    }
  }
  for (const c of unfinished) {
    lines.push(`    <testcase classname="${classname}" name="${xmlText(`case did not finish: ${c.name}`)}">`,
      `      <error message="${xmlText(c.error ?? '')}"/>`, '    </testcase>');
  }
  lines.push('  </testsuite>', '</testsuites>');
  return lines.join('\n') + '\n';
}

/** The module FILE names: a file, or the built-in reference driver. */
async function moduleOf(file: string): Promise<DriverModule> {
  let exists = true;
  try { statSync(file); } catch { exists = false; }
  if (!exists && file === 'reference') return referenceDriverModule;
  try {
    return await loadDriverModule(file);
  } catch (error) {
    throw new DriverUnusable((error as Error).message);
  }
}

/**
 * Builds one machine with the driver, as the suite's first case does, to tell a module that is no
 * driver (exit 2: the missing DDI or wrong shape, named by the machine's check) from a driver that
 * fails to start (exit 1: what it threw, and where in the module).
 */
async function startOnce(module: DriverModule, file: string): Promise<void> {
  try {
    await createMachine({ adapters: [{ name: 'gpu0', driver: { module } }] });
  } catch (error) {
    if (error instanceof WddmError && String(error.parameter ?? '').startsWith('adapters[0].driver.module')) {
      throw new DriverUnusable(`driver module "${file}" does not implement the driver interface: ${error.message}`);
    }
    const path = resolve(file);
    const url = pathToFileURL(path).href;
    const frame = error instanceof Error ? (error.stack ?? '').split('\n').find((l) => l.includes(url) || l.includes(path)) : undefined;
    const place = frame ? ` (at ${frame.trim().replace(/^at /, '').replace(url, path)})` : '';
    const what = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throw new DriverFailedToStart(`driver "${module.name ?? file}" could not start an adapter: ${what}${place}; nothing else ran`);
  }
}

async function checkDriverMain(io: CheckDriverIo, argv: string[]): Promise<number> {
  const options = { help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' }, junit: { type: 'string' }, seed: { type: 'string' } } as const;
  let parsed;
  try { parsed = parseArguments('check-driver', argv, options); } catch (error) { throw new CheckDriverUsage((error as Error).message); }
  const { values, positionals } = parsed;
  if (values.help) { io.out(CHECK_DRIVER_HELP); return 0; }
  if (positionals.length === 0) throw new CheckDriverUsage('check-driver needs the driver module to check: wddm-fence check-driver FILE (e.g. examples/drivers/template/driver.mjs)');
  if (positionals.length > 1) throw new CheckDriverUsage(`unexpected argument "${positionals[1]}"; check-driver checks one driver module at a time`);
  const file = positionals[0];
  const seed = parseSeed(values.seed);
  if (values.junit !== undefined) {
    checkOutput('--junit', values.junit);
    if (resolve(values.junit) === resolve(file)) throw new CheckDriverUsage(`--junit is "${values.junit}", the driver module itself; expected another file (it would be overwritten)`);
  }
  const module = await moduleOf(file);
  await startOnce(module, file);
  let report: ConformanceReport;
  try {
    report = await runConformance(module, { seed });
  } catch (error) {
    // The suite throws only when the driver cannot be built at all: no createDriver result, a missing DDI, a wrong shape.
    if (error instanceof WddmError) throw new DriverUnusable(`driver module "${file}" does not implement the driver interface: ${error.message}`);
    throw error;
  }
  const code = passedVerdict(report) ? 0 : 1;
  io.out(values.json ? conformanceJson(report) : conformanceText(report, file));
  if (values.junit !== undefined) {
    try { writeFileSync(values.junit, conformanceJunit(report, file)); } catch (error) {
      throw new CheckDriverUsage(`--junit is "${values.junit}", which could not be written: ${(error as Error).message}`);
    }
    io.err(`wddm-fence: JUnit report written to ${values.junit}\n`);
  }
  return code;
}

/** Runs `wddm-fence check-driver …` (argv after the command); never throws. */
export async function checkDriverCommand(io: CheckDriverIo, argv: string[]): Promise<number> {
  try {
    return await checkDriverMain(io, argv);
  } catch (error) {
    const known = error instanceof CheckDriverUsage || error instanceof DriverUnusable;
    const code = known ? 2 : 1;
    const kind = error instanceof CheckDriverUsage ? 'usage' : error instanceof DriverUnusable ? 'invalid-driver'
      : error instanceof DriverFailedToStart ? 'driver-failed-to-start' : 'internal-error';
    const text = known || error instanceof DriverFailedToStart ? (error as Error).message : `internal error: ${(error as Error)?.stack ?? error}`;
    io.err(`wddm-fence check-driver: ${text}\n${error instanceof CheckDriverUsage ? '(wddm-fence check-driver --help lists the options)\n' : ''}`);
    if (argv.includes('--json')) io.out(JSON.stringify({ ok: false, exitCode: code, error: kind, message: text.split('\n')[0] }, null, 2) + '\n');
    return code;
  }
}
