// `wddm-fence check-driver`: judges a driver module against the contract (docs/DRIVERS.md).
//
//   check-driver FILE [--json] [--junit OUT.xml] [--seed N]
//   check-driver --list-rules [--json]
//
// Loads FILE (an ES module exporting createDriver: loadDriverModule), runs the conformance suite
// (src/check/conformance.ts: every built-in scenario, the targeted cases and NF-11 on the driver
// alone, the contract checker watching every DDI, callback, user-mode submission and GPU step) and
// prints every requirement ID → passed / violated / not reached (why) / not driver-facing, with
// the evaluations of each rule's condition, the first violation of each violated requirement, the
// cases a bug check stopped, and the seed to replay the run. `reference` (when no such file exists)
// names the built-in reference driver. --list-rules prints the coverage table and runs nothing.
//
// Exit codes: 0 no requirement violated and every case ran (or was stopped by a violation),
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
import { failedCases, runConformance, type ConformanceReport, type RequirementResult, type Violation } from '../check/conformance.js';
import { REQUIREMENTS } from '../check/requirements.js';
import { CONTRACT_RULES } from '../check/contract.js';

export interface CheckDriverIo {
  out(text: string): void;
  err(text: string): void;
}

export const CHECK_DRIVER_HELP = `usage: wddm-fence check-driver FILE [options]
       wddm-fence check-driver --list-rules [--json]

Judges a driver module against the WDDM fence contract: runs every built-in scenario,
the targeted cases and NF-11 on the driver alone (a GPU signal between every two of its
CMP steps, no OS re-read of CurrentValue), each case on machines of its own with the
driver on every adapter, the contract checker watching every DDI, callback, user-mode
submission and GPU step. Prints every requirement ID: passed / VIOLATED / not reached
(why) / not driver-facing, with how many times its rule's condition was evaluated
(docs/DRIVERS.md).
  FILE              an ES module (.mjs or .js) exporting createDriver(context), or a .wasm driver
                    built from C (examples/drivers/c), e.g.
                    examples/drivers/template/driver.mjs; "reference" = the built-in reference driver
  --seed N          the seed of every case (0..4294967295, default 1); printed, to replay a run
  --json            print the report as JSON (64-bit values as strings)
  --junit OUT.xml   also write the report as JUnit XML: one testcase per requirement
  --list-rules      print the coverage table (every requirement ID: driver-facing with its
                    rule, or why not) and run nothing
  --help            this text
Exit codes: 0 no rule violated and every case ran, 1 a violation (or a case that failed
on its own, or a driver that could not start), 2 the module cannot be loaded or does not
implement the driver interface, or bad arguments.
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

const STATUS_TEXT: Record<RequirementResult['status'], string> = { passed: 'passed', violated: 'VIOLATED', 'not-reached': 'not reached', 'not-driver-facing': 'not driver-facing' };
/** A requirement's result in a word or two: "passed", "VIOLATED", "not reached", "passed (NF-09)" for one another ID's rule judges. */
export const statusText = (r: RequirementResult): string =>
  `${STATUS_TEXT[r.status]}${r.judgedBy && r.judgedBy !== r.requirement && r.status !== 'not-driver-facing' ? ` (${r.judgedBy})` : ''}`;

/** The case a requirement's first violation was seen in (the suite reports them in case order). */
function caseOfFirst(report: ConformanceReport, result: RequirementResult): string | undefined {
  return report.cases.find((c) => c.violations.some((v) => v.rule === result.judgedBy))?.name;
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

/** Counts for the verdict line: the rules (requirements judged by their own rule), and the requirement list. */
function tally(report: ConformanceReport) {
  const rules = report.results.filter((r) => r.judgedBy === r.requirement);
  const count = (status: RequirementResult['status']) => rules.filter((r) => r.status === status).length;
  return {
    rules: rules.length, passed: count('passed'), violated: count('violated'), notReached: count('not-reached'),
    requirements: report.results.length, driverFacing: report.results.filter((r) => r.driverFacing).length,
    byAnother: report.results.filter((r) => r.driverFacing && r.judgedBy !== undefined && r.judgedBy !== r.requirement).length,
    notDriverFacing: report.results.filter((r) => !r.driverFacing).length,
  };
}

/**
 * The table: every requirement's result (evaluations of its rule's condition, violations, cases that
 * evaluated it), the first violation of each violated one, why each not-reached one was not reached,
 * the cases a bug check stopped and those that did not finish, the verdict and the replay command.
 */
export function conformanceText(report: ConformanceReport, file: string): string {
  const lines: string[] = [];
  lines.push(`wddm-fence check-driver: driver "${report.driver}" from ${file}, seed ${report.seed}`);
  lines.push(`${report.cases.length} case${report.cases.length === 1 ? '' : 's'} ran (every built-in scenario and the targeted cases, watched and unwatched, and NF-11 on the driver alone), each on machines of its own, with the driver on every adapter`);
  lines.push('');
  const width = Math.max('requirement'.length, ...report.results.map((r) => r.requirement.length));
  const resultWidth = Math.max('result'.length, ...report.results.map((r) => statusText(r).length));
  lines.push(`${'requirement'.padEnd(width)}  ${'result'.padEnd(resultWidth)}  ${'evaluations'.padStart(11)}  ${'violations'.padStart(10)}  cases`);
  for (const r of report.results) {
    if (r.status === 'not-driver-facing') { lines.push(`${r.requirement.padEnd(width)}  ${statusText(r)}`); continue; }
    lines.push(`${r.requirement.padEnd(width)}  ${statusText(r).padEnd(resultWidth)}  ${String(r.evaluations).padStart(11)}  ${String(r.violations).padStart(10)}  ${r.cases.length}`);
    if (r.status === 'violated' && r.firstViolation && r.judgedBy === r.requirement) lines.push(...violationText(r.firstViolation, caseOfFirst(report, r)));
    if (r.status === 'not-reached' && r.judgedBy === r.requirement) lines.push(`    why: ${r.reason}`);
  }
  const stopped = report.cases.filter((c) => c.outcome === 'stopped');
  if (stopped.length) {
    lines.push('');
    lines.push(`cases stopped (${stopped.length}; the rest ran on):`);
    for (const c of stopped) lines.push(`  stopped by ${c.stoppedBy} in case "${c.name}"${c.explained ? '' : ' (no rule explains it: the case failed)'}`);
  }
  const unfinished = report.cases.filter((c) => c.outcome === 'error');
  if (unfinished.length) {
    lines.push('');
    lines.push(`cases that did not finish (${unfinished.length}):`);
    for (const c of unfinished) lines.push(`  ${c.name}: ${c.error}`);
  }
  const t = tally(report);
  const failed = failedCases(report).length;
  lines.push('');
  lines.push(`${passedVerdict(report) ? 'PASS' : 'FAIL'}: ${t.passed} passed, ${t.violated} violated, ${t.notReached} not reached (of ${t.rules} rules)`
    + `${failed ? `; ${failed} case${failed === 1 ? '' : 's'} failed` : ''}`);
  lines.push(`requirements: ${t.requirements} (${t.driverFacing} driver-facing, ${t.byAnother} of them judged by another's rule; ${t.notDriverFacing} not: check-driver --list-rules says why)`);
  lines.push(`replay: ${replayCommand(file, report.seed)}`);
  return lines.join('\n') + '\n';
}

/** The verdict the exit code follows: no requirement violated and every case finished (or was stopped by a violation). */
export function passedVerdict(report: ConformanceReport): boolean {
  return report.passed && report.results.every((r) => r.status !== 'violated') && failedCases(report).length === 0;
}

/** The report as JSON, 64-bit values (BigInts) as decimal strings. */
export function conformanceJson(report: ConformanceReport): string {
  return JSON.stringify(report, (_key, value) => (typeof value === 'bigint' ? value.toString() : value), 2) + '\n';
}

/** The coverage table without running anything (--list-rules): every requirement, driver-facing or not, its rule or the reason. */
export function rulesText(): string {
  const lines = ['requirement  driver-facing  rule (what it checks; where it is evaluated) or why not driver-facing'];
  for (const r of REQUIREMENTS) {
    const rule = r.judgedBy === undefined ? undefined : CONTRACT_RULES.find((x) => x.rule === r.judgedBy);
    const facing = r.driverFacing ? 'yes' : 'no';
    let text: string;
    if (rule && rule.rule === r.id) text = `${rule.checks} [evaluated at: ${rule.reachedBy}${rule.fatal ? '; fatal: bug-checks the adapter' : ''}${rule.judgesOs ? '; judges the OS' : ''}]${r.reason ? ` (${r.reason})` : ''}`;
    else if (rule) text = `judged by ${rule.rule}'s rule: ${r.reason}`;
    else text = `not driver-facing: ${r.reason}`;
    lines.push(`${r.id.padEnd(11)}  ${facing.padEnd(13)}  ${text}`);
  }
  const facing = REQUIREMENTS.filter((r) => r.driverFacing).length;
  lines.push('');
  lines.push(`${REQUIREMENTS.length} requirements: ${facing} driver-facing (${CONTRACT_RULES.length} rules, ${CONTRACT_RULES.filter((r) => r.judgesOs).length} of them judging the OS), ${REQUIREMENTS.length - facing} not`);
  return lines.join('\n') + '\n';
}

/** The same as JSON. */
export function rulesJson(): string {
  return JSON.stringify(REQUIREMENTS.map((r) => {
    const rule = r.judgedBy === undefined ? undefined : CONTRACT_RULES.find((x) => x.rule === r.judgedBy);
    return { requirement: r.id, summary: r.summary, driverFacing: r.driverFacing, ...(rule ? { judgedBy: rule.rule, checks: rule.checks, reachedBy: rule.reachedBy, fatal: rule.fatal } : {}),
      ...(rule?.judgesOs ? { judgesOs: true } : {}), ...(r.reason ? { reason: r.reason } : {}) };
  }), null, 2) + '\n';
}

/** Text for XML: the five special characters escaped, characters XML 1.0 cannot hold replaced by U+FFFD. */
export function xmlText(text: string): string {
  return text
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '\uFFFD')
    .replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

/**
 * JUnit XML: one testsuite for the driver, one testcase per requirement (failure: the first violation; skipped:
 * not reached or not driver-facing, with the reason), one error testcase per case that failed by itself.
 */
export function conformanceJunit(report: ConformanceReport, file: string): string {
  const failing = failedCases(report);
  const failures = report.results.filter((r) => r.status === 'violated').length;
  const skipped = report.results.filter((r) => r.status === 'not-reached' || r.status === 'not-driver-facing').length;
  const tests = report.results.length + failing.length;
  const counts = `tests="${tests}" failures="${failures}" errors="${failing.length}" skipped="${skipped}"`;
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
    } else if (r.status === 'not-reached' || r.status === 'not-driver-facing') {
      lines.push(open, `      <skipped message="${xmlText(`${STATUS_TEXT[r.status]}: ${r.reason ?? ''}`)}"/>`, '    </testcase>');
    } else {
      const first = r.firstViolation;
      const message = first ? `${r.judgedBy} violated at ${first.where}: expected ${first.expected}; actual ${first.actual}` : `${r.requirement} violated`;
      const details = first ? violationText(first, caseOfFirst(report, r), '').join('\n') + `\n${r.violations} violation${r.violations === 1 ? '' : 's'} in all` : '';
      lines.push(open, `      <failure type="${xmlText(r.judgedBy ?? r.requirement)}" message="${xmlText(message)}">${xmlText(details)}</failure>`, '    </testcase>');
    }
  }
  for (const c of failing) {
    const what = c.outcome === 'stopped' ? `stopped by ${c.stoppedBy}` : c.error ?? '';
    lines.push(`    <testcase classname="${classname}" name="${xmlText(`case failed: ${c.name}`)}">`,
      `      <error message="${xmlText(what)}"/>`, '    </testcase>');
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
  const options = { help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' }, junit: { type: 'string' }, seed: { type: 'string' }, 'list-rules': { type: 'boolean' } } as const;
  let parsed;
  try { parsed = parseArguments('check-driver', argv, options); } catch (error) { throw new CheckDriverUsage((error as Error).message); }
  const { values, positionals } = parsed;
  if (values.help) { io.out(CHECK_DRIVER_HELP); return 0; }
  if (values['list-rules']) {
    if (positionals.length) throw new CheckDriverUsage(`--list-rules runs nothing; unexpected argument "${positionals[0]}"`);
    if (values.seed !== undefined || values.junit !== undefined) throw new CheckDriverUsage('--list-rules runs nothing: it takes only --json');
    io.out(values.json ? rulesJson() : rulesText());
    return 0;
  }
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
