// The wddm-fence command.
//
//   wddm-fence run FILE|NAME [--json] [--trace out.json] [--seed N] [--quiet]
//   wddm-fence list [--all]
//   wddm-fence show NAME
//   wddm-fence schema
//   wddm-fence demo            (= run demo; what `npm start` does)
//
// Exit codes: 0 every expectation holds, 1 an expectation failed (each one is
// reported), 2 invalid input (usage, unreadable file, malformed or invalid
// scenario: every problem with its path and line; nothing runs).

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { readFileSync, writeFileSync, existsSync, statSync } from 'node:fs';
import { parseScenario, ScenarioError, formatProblem } from './scenario/load.js';
import { runScenario } from './scenario/run.js';
import { builtinScenarios, findBuiltin, runnableScenarios } from './scenario/builtin.js';
import { reportJson, reportText } from './scenario/report.js';
import { SCENARIO_SCHEMA } from './scenario/schema.js';
import type { Scenario } from './scenario/types.js';
import { chromeTraceJson, CHROME_TRACE_AVAILABLE } from './scenario/chrome-trace.js';
import { compareSynchronizationModels } from './compare.js';
import { runScenarioPairs, scenarioText, compareDoorbell, doorbellComparisonText, SCENARIO_IDS, type ScenarioId } from './scenarios/cross-adapter.js';

const HELP: Record<string, string> = {
  main: `usage: wddm-fence <command> [options]

A reference model of WDDM GPU synchronization (native fences). Commands:
  run FILE|NAME   run a scenario file (.yaml, .yml, .json) or a built-in scenario
  list            name the built-in scenarios
  show NAME       print a built-in scenario as a file to start from
  schema          print the JSON Schema of scenario files
  demo            run the built-in demo (same as: run demo)

Run "wddm-fence <command> --help" for a command's options.
Exit codes: 0 every expectation holds, 1 an expectation failed, 2 invalid input.
`,
  run: `usage: wddm-fence run FILE|NAME [options]

Runs a scenario and prints its trace, a summary and each expectation.
  FILE|NAME         a scenario file (.yaml, .yml or .json), or a built-in name (see: wddm-fence list)
  --seed N          seed for the run (0..4294967295); overrides machine.seed
  --json            print the trace, summary and expectations as JSON
  --trace OUT.json  also write the fence timeline (Chrome JSON) to OUT.json; open it in
                    https://ui.perfetto.dev or chrome://tracing
  --quiet           print no trace, only the summary and expectations
  --help            this text
Exit codes: 0 every expectation holds, 1 an expectation failed, 2 invalid input.
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
  demo: `usage: wddm-fence demo [--seed N] [--json] [--quiet] [--trace OUT.json] [--scenario 1|2a|2b|doorbell]

Runs the built-in demo scenario (as: wddm-fence run demo), then counts the
same kind of workload on monitored fences + kernel-mode contexts and on
native fences + hardware queues (see also: wddm-fence run monitored-vs-native).
  --scenario 1|2a|2b  instead, play a cross-adapter scenario table of the native fence
                      document (every wait/signal pair) step by step
  --scenario doorbell instead, the same GPU-to-GPU workload with interrupts and with the doorbell
`,
};

class UsageError extends Error {}

function out(text: string): void { process.stdout.write(text); }
function err(text: string): void { process.stderr.write(text); }

function parseSeed(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const seed = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new UsageError(`--seed is "${raw}"; expected an integer from 0 to 4294967295`);
  return seed;
}

function loadScenario(target: string): { scenario: Scenario; source: string } {
  const looksLikeFile = /[\\/]|\.(ya?ml|json)$/i.test(target) || existsSync(target);
  if (looksLikeFile) {
    if (!existsSync(target) || !statSync(target).isFile()) throw new UsageError(`scenario file "${target}" does not exist`);
    return { scenario: parseScenario(readFileSync(target, 'utf8'), target), source: target };
  }
  const builtin = findBuiltin(target);
  if (!builtin) throw new UsageError(`"${target}" is neither a scenario file nor a built-in scenario; built-in: ${runnableScenarios().map((b) => b.name).join(', ')}`);
  if (!builtin.scenario) throw new UsageError(`built-in scenario "${target}" cannot run in this build: ${builtin.unavailable}`);
  return { scenario: builtin.scenario, source: `scenarios/${builtin.file}` };
}

async function run(target: string | undefined, values: { seed?: string; json?: boolean; trace?: string; quiet?: boolean }): Promise<number> {
  if (!target) throw new UsageError(`run needs a scenario file or name\n\n${HELP.run}`);
  const seed = parseSeed(values.seed);
  if (values.trace !== undefined && !CHROME_TRACE_AVAILABLE) {
    throw new UsageError('--trace needs the Chrome/Perfetto timeline exporter (src/timeline.ts), which is not in this build yet; use --json for the raw trace events');
  }
  const { scenario, source } = loadScenario(target);
  const tty = process.stderr.isTTY === true;
  let progressShown = false;
  const result = await runScenario(scenario, {
    seed,
    source,
    progressEvery: 5_000,
    onProgress: tty ? ({ events, timeNs }) => { progressShown = true; err(`\r  ${scenario.name}: ${events} events, ${(timeNs / 1000).toFixed(1)} us virtual time`); } : undefined,
  });
  if (progressShown) err('\r\x1b[2K');
  out(values.json ? reportJson(result) : reportText(result, { trace: !values.quiet }));
  // after the report: exporting reads the log buffers (as an interrupt would), which adds trace events
  if (values.trace) {
    writeFileSync(values.trace, chromeTraceJson(result.machine));
    err(`wddm-fence: timeline written to ${values.trace} (open it in https://ui.perfetto.dev or chrome://tracing)\n`);
  }
  if (!result.passed && values.json) {
    for (const e of result.expectations.filter((x) => !x.ok)) err(`FAIL ${e.description}: expected ${e.expected}, got ${e.actual} [${e.path}]\n`);
  }
  return result.passed ? 0 : 1;
}

async function main(argv: string[]): Promise<number> {
  const command = argv[0] && !argv[0].startsWith('-') ? argv[0] : undefined;
  const rest = command ? argv.slice(1) : argv;
  const known = ['run', 'list', 'show', 'schema', 'demo'];
  if (command && !known.includes(command)) throw new UsageError(`unknown command "${command}"\n\n${HELP.main}`);
  const options: ParseArgsConfig['options'] = { help: { type: 'boolean', short: 'h' } };
  if (command === 'run' || command === 'demo') Object.assign(options, { seed: { type: 'string' }, json: { type: 'boolean' }, quiet: { type: 'boolean', short: 'q' } });
  if (command === 'run' || command === 'demo') Object.assign(options, { trace: { type: 'string' } });
  if (command === 'demo') Object.assign(options, { scenario: { type: 'string' } });
  if (command === 'list') Object.assign(options, { all: { type: 'boolean' } });
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n\n${HELP[command ?? 'main']}`);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const positionals = parsed.positionals;
  if (values.help) { out(HELP[command ?? 'main']); return 0; }
  const maxPositionals = command === 'run' || command === 'show' ? 1 : 0;
  if (positionals.length > maxPositionals) throw new UsageError(`unexpected argument "${positionals[maxPositionals]}"\n\n${HELP[command ?? 'main']}`);
  switch (command) {
    case undefined: out(HELP.main); return 0;
    case 'run': return run(positionals[0], values as never);
    case 'demo': {
      if (values.scenario !== undefined) {
        // the cross-adapter tables of the native fence document, played step by step (XA-06), or the doorbell comparison (XA-07)
        const seed = parseSeed(values.seed as string | undefined) ?? 1;
        if (values.scenario === 'doorbell') { out(doorbellComparisonText(await compareDoorbell(8, seed))); return 0; }
        if (!SCENARIO_IDS.includes(values.scenario as ScenarioId)) throw new UsageError(`--scenario is "${values.scenario}"; expected 1, 2a, 2b or doorbell`);
        out(scenarioText(await runScenarioPairs(values.scenario as ScenarioId, seed)));
        return 0;
      }
      const code = await run('demo', values as never);
      // npm start also shows what the legacy model costs for the same kind of workload
      if (!values.json) out('\n' + (await compareSynchronizationModels({ seed: parseSeed(values.seed as string | undefined) ?? 1 })).text);
      return code;
    }
    case 'list': {
      const all = builtinScenarios();
      for (const b of all) {
        if (b.scenario) out(`${b.name.padEnd(24)} ${b.scenario.description ?? ''}\n`);
        else if (values.all) out(`${b.name.padEnd(24)} (not in this build: ${b.unavailable})\n`);
      }
      return 0;
    }
    case 'show': {
      const name = positionals[0];
      if (!name) throw new UsageError(`show needs a scenario name\n\n${HELP.show}`);
      const b = findBuiltin(name);
      if (!b) throw new UsageError(`no built-in scenario "${name}"; built-in: ${runnableScenarios().map((x) => x.name).join(', ')}`);
      out(b.text);
      return 0;
    }
    case 'schema': out(JSON.stringify(SCENARIO_SCHEMA, null, 2) + '\n'); return 0;
  }
  return 0;
}

process.stdout.on('error', (error: NodeJS.ErrnoException) => { if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0); else throw error; });

main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (error) => {
  if (error instanceof ScenarioError) {
    err(`wddm-fence: invalid scenario (nothing ran):\n${error.problems.map((p) => `  ${formatProblem(error.source, p)}`).join('\n')}\n`);
    process.exitCode = 2;
  } else if (error instanceof UsageError) {
    err(`wddm-fence: ${error.message}${error.message.endsWith('\n') ? '' : '\n'}`);
    process.exitCode = 2;
  } else {
    err(`wddm-fence: ${(error as Error).message ?? error}\n`);
    process.exitCode = 1;
  }
});
