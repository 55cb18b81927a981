// The wddm-fence command. `wddm-fence demo` runs the built-in demo and prints
// its trace and summary (what `npm start` does).
import { parseArgs } from 'node:util';
import { writeFileSync } from 'node:fs';
import { runDemo } from './demo.js';
import { compareSynchronizationModels } from './compare.js';
import { exportTimeline } from './timeline.js';

import { runScenarioPairs, scenarioText, compareDoorbell, doorbellComparisonText, SCENARIO_IDS, type ScenarioId } from './scenarios/cross-adapter.js';

const USAGE = `usage: wddm-fence demo [--seed N] [--json] [--trace FILE] [--scenario 1|2a|2b|doorbell]

  demo      run the built-in demo machine and print its trace and summary
  --seed N  seed for the run (default 1); printed in the trace
  --json    print the trace as JSON instead of text
  --trace FILE  also write the fence timeline as Chrome JSON (open in ui.perfetto.dev or chrome://tracing)
  --scenario 1|2a|2b  play a cross-adapter scenario table (every wait/signal pair) step by step
  --scenario doorbell the XA-07 doorbell against the interrupt design on one workload
  --help    this text
`;

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: {
      seed: { type: 'string' }, json: { type: 'boolean' }, trace: { type: 'string' }, help: { type: 'boolean', short: 'h' },
      scenario: { type: 'string' },
    } });
  } catch (error) {
    process.stderr.write(`wddm-fence: ${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) { process.stdout.write(USAGE); return 0; }
  const command = positionals[0] ?? 'demo';
  if (command !== 'demo') { process.stderr.write(`wddm-fence: unknown command "${command}"\n${USAGE}`); return 2; }
  const seed = values.seed === undefined ? 1 : Number(values.seed);
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    process.stderr.write(`wddm-fence: --seed is "${values.seed}"; expected an integer from 0 to 4294967295\n`);
    return 2;
  }
  if (values.scenario !== undefined) {
    if (values.scenario === 'doorbell') { process.stdout.write(doorbellComparisonText(await compareDoorbell(8, seed))); return 0; }
    if (!SCENARIO_IDS.includes(values.scenario as ScenarioId)) {
      process.stderr.write(`wddm-fence: --scenario is "${values.scenario}"; expected 1, 2a, 2b or doorbell\n`);
      return 2;
    }
    try {
      process.stdout.write(scenarioText(await runScenarioPairs(values.scenario as ScenarioId, seed)));
    } catch (error) {
      process.stderr.write(`wddm-fence: ${(error as Error).message}\n`);
      return 1;
    }
    return 0;
  }
  const machine = await runDemo(seed);
  if (values.json) {
    process.stdout.write(JSON.stringify({ seed, events: machine.trace.json(), summary: machine.summary() }, null, 2) + '\n');
  } else {
    process.stdout.write(machine.trace.text());
    process.stdout.write('\n' + machine.summaryText());
    process.stdout.write('\n' + (await compareSynchronizationModels({ seed })).text);
  }
  if (values.trace) {
    writeFileSync(values.trace, JSON.stringify(exportTimeline(machine)) + '\n');
    process.stderr.write(`wddm-fence: timeline written to ${values.trace}\n`);
  }
  return 0;
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (error) => {
  process.stderr.write(`wddm-fence: ${(error as Error).stack ?? error}\n`);
  process.exitCode = 1;
});
