// The wddm-fence command, as a function: runCli(argv, io) → exit code. The
// bin entry (src/cli.ts) hands it the process's streams; tests call it
// in-process with their own.
//
//   wddm-fence run FILE|NAME [--json] [--timeline out.json] [--trace-events out.jsonl] [--seed N] [--quiet] [--check]
//   wddm-fence list [--all]
//   wddm-fence show NAME
//   wddm-fence schema
//   wddm-fence demo            (= run demo, then compare models; what `npm start` does)
//   wddm-fence table 1|2a|2b   the document's cross-adapter tables, step by step (src/cli/tables.ts)
//   wddm-fence compare models|doorbell
//   wddm-fence explore …       the race explorer (src/cli/explore.ts)
//   wddm-fence check-driver FILE  judge a driver module against the contract (src/cli/check-driver.ts)
//   wddm-fence help [COMMAND], wddm-fence --version
//
// Arguments are read by src/cli/args.ts: an option a command does not have, a
// missing value, a flag given a value… each is a usage error in the tool's own
// words (exit 2); no command at all prints the usage on stderr and exits 2.
//
// Exit codes: 0 every expectation holds, 1 an expectation failed (each one is
// reported with its place in the file; a run that ends stuck fails unless the
// file expects it: src/machine/liveness.ts), 2 invalid input: usage, a file that
// cannot be read or is past a scenario file's limits, a malformed or invalid
// scenario (every problem with its path and line), an output path that cannot
// be written (checked before the run), or a run the model's bounds stopped
// (limits.eventsPerRun, virtual time). Nothing runs when the input is invalid.
// Under --json every outcome, errors included, is one JSON document on stdout.

import { writeFileSync, statSync, openSync, closeSync, writeSync, accessSync, constants as fsConstants } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ScenarioError, formatProblem, type ScenarioProblem } from '../scenario-files/load.js';
import { runScenario } from '../scenario-files/run.js';
import { builtinScenarios, findBuiltin, runnableScenarios } from '../scenario-files/builtin.js';
import { reportJson, reportText } from '../scenario-files/report.js';
import { SCENARIO_SCHEMA } from '../scenario-files/schema.js';
import { chromeTraceJson, CHROME_TRACE_AVAILABLE } from '../scenario-files/chrome-trace.js';
import { compareSynchronizationModels } from '../comparisons/sync-models.js';
import { WddmError } from '../base/errors.js';
import type { TraceEvent } from '../base/trace.js';
import { exploreCommand } from './explore.js';
import { checkDriverCommand, CHECK_DRIVER_HELP } from './check-driver.js';
import { EXPLORE_HELP } from './explore.js';
import { parseArguments, ArgumentError, type OptionSpec } from './args.js';
import { tableCommand, compareCommand, TableUsage, TABLE_HELP, COMPARE_HELP } from './tables.js';
import { runningPackage } from '../driver/resolve-hook.js';
import { InputError, UsageError, codeOf, exists, loadScenario } from './scenario-input.js';
import { ContractChecker } from '../check/contract.js';
import type { SwarmJob, SwarmTally } from '../explore/swarm.js';

/** Where the command writes. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** stderr is a terminal (a progress line is shown). */
  isTTY?: boolean;
  /** Runs an explorer swarm job on a worker thread (the bin gives one: `explore --random --workers N`). */
  startWorker?: (job: SwarmJob) => Promise<SwarmTally>;
  /** Runs `explore ARGV` (one shard of an exhaustive search) on a worker thread, to its exit code (the bin gives one: `explore --workers N`). */
  startShard?: (argv: string[], sharedVisited: SharedArrayBuffer) => Promise<number>;
  /** The clock of explore's progress line (tests give their own). */
  nowMs?: () => number;
}

const HELP: Record<string, string> = {
  main: `usage: wddm-fence <command> [options]

A reference model of WDDM GPU synchronization (native fences). Commands:
  run FILE|NAME   run a scenario file (.yaml, .yml, .json) or a built-in scenario
  list            name the built-in scenarios
  show NAME       print a built-in scenario as a file to start from
  schema          print the JSON Schema of scenario files
  demo            run the built-in demo (as: run demo), then: compare models
  table 1|2a|2b   play a cross-adapter table of the native fence document, every
                  wait/signal pair, each row marked when the trace shows it
  compare models|doorbell
                  one workload two ways, counted side by side
  explore         the race explorer: every interleaving of a small machine, shortest
                  counterexamples, replayable schedule files, seeded random swarms
  check-driver FILE
                  judge a driver module (.mjs exporting createDriver, or .wasm) against the contract:
                  every requirement → passed / violated / not reached / not driver-facing
  help [COMMAND]  this text, or a command's options (as: wddm-fence COMMAND --help)

  --version       the version of this copy of wddm-fence
Exit codes: 0 every expectation holds, 1 an expectation failed, 2 invalid input.
`,
  run: `usage: wddm-fence run FILE|NAME [options]

Runs a scenario and prints its trace, a summary and each expectation.
  FILE|NAME         a scenario file (.yaml, .yml or .json), or a built-in name (see: wddm-fence list)
  --seed N          seed for the run (0..4294967295); overrides machine.seed
  --json            print the trace, summary and expectations as JSON
  --timeline OUT.json
                    also write the fence timeline (Chrome JSON) to OUT.json; open it in
                    https://ui.perfetto.dev or chrome://tracing
  --trace-events OUT.jsonl
                    stream every trace event to OUT.jsonl as it happens (one JSON object per
                    line); memory keeps only the newest machine.limits.traceEvents of them
  --quiet           print no trace, only the summary and expectations
  --check           judge the run with the contract checker too: every driver of the
                    scenario against the rules of check-driver (docs/DRIVERS.md); each
                    violation is listed by rule, and one fails the run
  --help            this text
Exit codes: 0 every expectation holds (and, with --check, no contract violation), 1 an
expectation failed or a contract violation, 2 invalid input (or a run stopped by the
model's bounds). Under --json, errors are a JSON document on stdout too.
A run that ends with a queue blocked, a CPU waiter pending or a CPU thread unfinished
fails (the summary's STUCK section names each one, and any deadlock cycle) unless the
file sets expect.stuck or expect.deadlock.
`,
  list: `usage: wddm-fence list [--all]

Names the built-in scenarios this build runs.
  --all   also name those this build cannot run yet, with the reason
`,
  show: `usage: wddm-fence show NAME

Prints a built-in scenario file (YAML), to copy and edit:
  wddm-fence show demo > my-scenario.yaml && wddm-fence run my-scenario.yaml
`,
  schema: `usage: wddm-fence schema

Prints the JSON Schema that scenario files are checked against (for editors).
`,
  demo: `usage: wddm-fence demo [--seed N] [--json] [--quiet] [--check] [--timeline OUT.json] [--trace-events OUT.jsonl]

Runs the built-in demo scenario (as: wddm-fence run demo, with the same options), then
counts the same kind of workload on monitored fences + kernel-mode contexts and on
native fences + hardware queues (as: wddm-fence compare models; see also: wddm-fence
run monitored-vs-native). Under --json only the run's report is printed (one JSON
document; the counts: wddm-fence compare models --json).
The cross-adapter tables: wddm-fence table 1|2a|2b; the doorbell: wddm-fence compare doorbell.
`,
  help: `usage: wddm-fence help [COMMAND]

Prints the usage of wddm-fence, or of one command (as: wddm-fence COMMAND --help).
`,
  table: TABLE_HELP,
  compare: COMPARE_HELP,
  explore: EXPLORE_HELP,
  'check-driver': CHECK_DRIVER_HELP,
};

/** Each command's options (args.ts); explore and check-driver read their own. */
const SEED: OptionSpec = { type: 'string', value: 'N' };
const HELP_OPTION: OptionSpec = { type: 'boolean', short: 'h' };
const RUN_OPTIONS = {
  seed: SEED, json: { type: 'boolean' }, quiet: { type: 'boolean', short: 'q' },
  timeline: { type: 'string', value: 'OUT.json' }, 'trace-events': { type: 'string', value: 'OUT.jsonl' }, check: { type: 'boolean' }, help: HELP_OPTION,
} as const satisfies Record<string, OptionSpec>;
const OPTIONS: Record<string, Record<string, OptionSpec>> = {
  run: RUN_OPTIONS,
  demo: RUN_OPTIONS,
  list: { all: { type: 'boolean' }, help: HELP_OPTION },
  show: { help: HELP_OPTION },
  schema: { help: HELP_OPTION },
  table: { seed: SEED, quiet: { type: 'boolean', short: 'q' }, json: { type: 'boolean' }, help: HELP_OPTION },
  compare: { seed: SEED, json: { type: 'boolean' }, help: HELP_OPTION },
  help: {},
};
/** How many arguments besides the options each command takes. */
const POSITIONALS: Record<string, number> = { run: 1, show: 1, table: 1, compare: 1, help: 1 };
/** Options that were renamed or moved: the message says where to. */
const RENAMED: Record<string, string> = {
  '--trace': '--trace is now --timeline OUT.json (the fence timeline, Chrome JSON for Perfetto)',
  '--trace-file': '--trace-file is now --trace-events OUT.jsonl (every trace event, streamed as JSON Lines)',
  '--scenario': 'demo --scenario moved: the cross-adapter tables are wddm-fence table 1|2a|2b, the doorbell comparison wddm-fence compare doorbell',
};
const COMMANDS = ['run', 'list', 'show', 'schema', 'demo', 'table', 'compare', 'explore', 'check-driver', 'help'];


function parseSeed(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const seed = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new UsageError(`--seed is "${raw}"; expected an integer from 0 to 4294967295`);
  return seed;
}

/** An output path must be a file we can write, in a folder that exists: checked before anything runs. `example` names a file of the option's kind. */
function checkOutput(option: string, path: string, example: string): void {
  if (path === '') throw new UsageError(`${option} is ""; expected the path of a file to write`);
  let stats;
  try { stats = statSync(path); } catch (error) {
    if (codeOf(error) !== 'ENOENT' && codeOf(error) !== 'ENOTDIR') throw new InputError(`${option} is "${path}", which cannot be used: ${(error as Error).message}`);
  }
  if (stats?.isDirectory()) throw new InputError(`${option} is "${path}", a directory; expected a file to write (e.g. ${path.replace(/[\\/]+$/, '')}/${example})`);
  if (stats && !stats.isFile()) throw new InputError(`${option} is "${path}", which is not a regular file; expected a file to write`);
  const folder = dirname(path);
  let parent;
  try { parent = statSync(folder); } catch { throw new InputError(`${option} is "${path}", but the folder "${folder}" does not exist; expected a file in an existing folder`); }
  if (!parent.isDirectory()) throw new InputError(`${option} is "${path}", but "${folder}" is not a folder; expected a file in an existing folder`);
  try { accessSync(stats ? path : folder, fsConstants.W_OK); } catch {
    throw new InputError(`${option} is "${path}", which cannot be written (permission denied); expected a file this user may write`);
  }
}

/** Trace events as JSON Lines, written in chunks (memory holds one chunk). */
class TraceFile {
  private chunk: string[] = [];
  private size = 0;
  written = 0;
  constructor(private readonly fd: number) {}
  write = (e: TraceEvent): void => {
    const line = JSON.stringify(e) + '\n';
    this.chunk.push(line);
    this.size += line.length;
    this.written++;
    if (this.size >= 1 << 16) this.flush();
  };
  flush(): void {
    if (!this.chunk.length) return;
    writeSync(this.fd, this.chunk.join(''));
    this.chunk = [];
    this.size = 0;
  }
  close(): void { try { this.flush(); } finally { closeSync(this.fd); } }
}

interface RunValues { seed?: string; json?: boolean; timeline?: string; 'trace-events'?: string; quiet?: boolean; check?: boolean }

async function run(io: CliIo, target: string | undefined, values: RunValues): Promise<number> {
  if (!target) throw new UsageError('run needs a scenario file or name: wddm-fence run FILE|NAME (wddm-fence list names the built-in ones)');
  const seed = parseSeed(values.seed);
  const timeline = values.timeline;
  if (timeline !== undefined && !CHROME_TRACE_AVAILABLE) {
    throw new UsageError('--timeline needs the Chrome/Perfetto timeline exporter (src/timeline/timeline.ts), which is not in this build yet; use --json for the raw trace events');
  }
  const traceFile = values['trace-events'];
  if (timeline !== undefined) checkOutput('--timeline', timeline, 'timeline.json');
  if (traceFile !== undefined) checkOutput('--trace-events', traceFile, 'events.jsonl');
  if (timeline !== undefined && traceFile !== undefined && resolve(timeline) === resolve(traceFile)) {
    throw new UsageError(`--timeline and --trace-events are both "${traceFile}"; expected two different files`);
  }
  for (const [option, path] of [['--timeline', timeline], ['--trace-events', traceFile]] as const) {
    if (path !== undefined && exists(target) && resolve(path) === resolve(target)) throw new UsageError(`${option} is "${path}", the scenario file itself; expected another file (it would be overwritten)`);
  }
  const { scenario, source } = loadScenario(target);
  let stream: TraceFile | undefined;
  if (traceFile !== undefined) {
    try { stream = new TraceFile(openSync(traceFile, 'w')); } catch (error) { throw new InputError(`--trace-events is "${traceFile}", which cannot be written: ${(error as Error).message}`); }
  }
  let progressShown = false;
  let result;
  const checker = values.check ? new ContractChecker() : undefined;
  try {
    result = await runScenario(scenario, {
      seed,
      source,
      ...(checker ? { observers: [checker] } : {}),
      progressEvery: 5_000,
      onProgress: io.isTTY ? ({ events, timeNs }) => { progressShown = true; io.err(`\r  ${scenario.name}: ${events} events, ${(timeNs / 1000).toFixed(1)} us virtual time`); } : undefined,
      ...(stream ? { onTraceEvent: stream.write } : {}),
    });
  } finally {
    if (progressShown) io.err('\r\x1b[2K');
    if (stream) {
      stream.close();
      io.err(`wddm-fence: ${stream.written} trace events written to ${traceFile} (JSON Lines)\n`);
    }
  }
  const contract = checker ? { violations: [...checker.finish()], evaluations: Object.fromEntries(checker.evaluations) } : undefined;
  io.out(values.json ? reportJson(result, contract) : reportText(result, { trace: !values.quiet, ...(contract ? { contract } : {}) }));
  // after the report: exporting reads the log buffers (as an interrupt would), which adds trace events
  if (timeline) {
    try { writeFileSync(timeline, chromeTraceJson(result.machine)); } catch (error) {
      throw new InputError(`--timeline is "${timeline}", which could not be written: ${(error as Error).message}`);
    }
    io.err(`wddm-fence: timeline written to ${timeline} (open it in https://ui.perfetto.dev or chrome://tracing)\n`);
  }
  if (!result.passed && values.json) {
    for (const e of result.expectations.filter((x) => !x.ok)) io.err(`FAIL ${e.description}: expected ${e.expected}, got ${e.actual} [${e.path}]${e.line ? ` ${source}:${e.line}:${e.column}` : ''}\n`);
  }
  if (contract?.violations.length && values.json) {
    for (const v of contract.violations) io.err(`FAIL contract ${v.rule} at ${v.where} (${v.adapter}): expected ${v.expected}; actual ${v.actual}\n`);
  }
  return result.passed && !contract?.violations.length ? 0 : 1;
}

/** The usage text of a command named by `help COMMAND`. */
function helpOf(name: string): string {
  const text = HELP[name];
  if (text === undefined) throw new UsageError(`help: there is no command "${name}"; the commands: ${COMMANDS.join(', ')}`);
  return text;
}

async function main(io: CliIo, argv: string[]): Promise<number> {
  if (argv.length === 0) throw new UsageError(`a command is needed\n\n${HELP.main}`);
  const [first, ...rest] = argv;
  if (first === '--help' || first === '-h') { io.out(HELP.main); return 0; }
  if (first === '--version') {
    if (rest.length) throw new UsageError('--version takes nothing after it');
    const running = await runningPackage();
    io.out(`wddm-fence ${running?.version ?? '(version unknown: no wddm-fence package.json above this copy)'}\n`);
    return 0;
  }
  if (first.startsWith('-')) throw new UsageError(`${first} is not a command; expected a command first: wddm-fence <command> [options] (wddm-fence help lists them)`);
  const command = first;
  if (!COMMANDS.includes(command)) throw new UsageError(`there is no command "${command}"; the commands: ${COMMANDS.join(', ')} (wddm-fence help says what each does)`);
  if (command === 'explore') return exploreCommand(io, rest);
  if (command === 'check-driver') return checkDriverCommand(io, rest);
  let parsed;
  try {
    parsed = parseArguments(command, rest, OPTIONS[command], { maxPositionals: POSITIONALS[command] ?? 0, renamed: RENAMED });
  } catch (error) {
    if (error instanceof ArgumentError) throw new UsageError(`${error.message}\n(wddm-fence help ${command} lists its options)`);
    throw error;
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const positionals = parsed.positionals;
  if (values.help) { io.out(HELP[command]); return 0; }
  const seedOf = () => parseSeed(values.seed as string | undefined) ?? 1;
  try {
    switch (command) {
      case 'help': io.out(positionals.length ? helpOf(positionals[0]) : HELP.main); return 0;
      case 'run': return await run(io, positionals[0], values as RunValues);
      case 'demo': {
        const code = await run(io, 'demo', values as RunValues);
        // npm start also shows what the legacy model costs for the same kind of workload
        if (!values.json) io.out('\n' + (await compareSynchronizationModels({ seed: seedOf() })).text);
        return code;
      }
      case 'table': return await tableCommand(io.out, positionals[0], seedOf(), { quiet: values.quiet === true, json: values.json === true });
      case 'compare': return await compareCommand(io.out, positionals[0], seedOf(), { json: values.json === true });
      case 'list': {
        const all = builtinScenarios();
        for (const b of all) {
          if (b.scenario) io.out(`${b.name.padEnd(24)} ${b.scenario.description ?? ''}\n`);
          else if (values.all) io.out(`${b.name.padEnd(24)} (not in this build: ${b.unavailable})\n`);
        }
        return 0;
      }
      case 'show': {
        const name = positionals[0];
        if (!name) throw new UsageError('show needs a scenario name: wddm-fence show NAME (wddm-fence list names them)');
        const b = findBuiltin(name);
        if (!b) throw new UsageError(`no built-in scenario "${name}"; built-in: ${runnableScenarios().map((x) => x.name).join(', ')}`);
        io.out(b.text);
        return 0;
      }
      case 'schema': io.out(JSON.stringify(SCENARIO_SCHEMA, null, 2) + '\n'); return 0;
    }
  } catch (error) {
    if (error instanceof TableUsage) throw new UsageError(`${error.message}\n(wddm-fence help ${command} lists its options)`);
    throw error;
  }
  return 0;
}

/** What an error means for the user: its exit code, a kind for --json, and the text. */
function describe(error: unknown): { code: number; kind: string; text: string; summary?: string; source?: string; problems?: ScenarioProblem[] } {
  if (error instanceof ScenarioError) {
    return { code: 2, kind: 'invalid-scenario', source: error.source, problems: error.problems,
      summary: `invalid scenario (nothing ran): ${error.problems.length} problem${error.problems.length === 1 ? '' : 's'}`,
      text: `invalid scenario (nothing ran):\n${error.problems.map((p) => `  ${formatProblem(error.source, p)}`).join('\n')}` };
  }
  if (error instanceof UsageError) return { code: 2, kind: 'usage', text: error.message.replace(/\n+$/, '') };
  if (error instanceof InputError) return { code: 2, kind: 'invalid-input', text: error.message };
  if (error instanceof WddmError) return { code: 2, kind: 'run-stopped', text: `the run stopped (${error.status}): ${error.message}` };
  return { code: 1, kind: 'internal-error', text: `internal error: ${(error as Error)?.stack ?? error}` };
}

/** Runs the command; never throws: every error becomes its message and exit code (and a JSON document under --json). */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  try {
    return await main(io, argv);
  } catch (error) {
    const d = describe(error);
    io.err(`wddm-fence: ${d.text}\n`);
    if (argv.includes('--json')) {
      io.out(JSON.stringify({
        ok: false, exitCode: d.code, error: d.kind, message: d.summary ?? d.text.split('\n')[0],
        ...(d.source !== undefined ? { source: d.source } : {}),
        ...(d.problems ? { problems: d.problems.map((p) => ({ path: p.path, line: p.line ?? null, column: p.column ?? null, message: p.message, location: p.line ? `${d.source}:${p.line}${p.column ? `:${p.column}` : ''}` : d.source })) } : {}),
      }, null, 2) + '\n');
    }
    return d.code;
  }
}
