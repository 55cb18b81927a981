// `wddm-fence table 1|2a|2b` and `wddm-fence compare doorbell|models`: the native fence document's
// cross-adapter tables played step by step, and the side-by-side counts (src/comparisons/).
//
// How `table 1` differs from `run scenario-1`: the scenario file is ONE wait/signal pair of the
// table (the iGPU waits on the GPU and a CPU thread waits too, the dGPU signals from the GPU) with
// expectations, to copy and edit; `table 1` plays EVERY pair of the document's table (wait from
// the GPU or the CPU × signal from the GPU or the CPU) and marks each of the table's rows when the
// trace shows the OS, driver or GPU doing that step.
//
// Exit codes: 0 every row of every pair happened, in the table's order (table), or the comparison
// ran (compare); 1 a row did not happen or came out of order; 2 bad arguments.

import { compareSynchronizationModels, type ModelCost } from '../comparisons/sync-models.js';
import {
  compareDoorbell, doorbellComparisonText, runScenarioPairs, scenarioText, SCENARIO_IDS, type ScenarioId, type ScenarioRun,
} from '../comparisons/cross-adapter-tables.js';
import type { Machine } from '../machine/machine.js';

export const TABLE_HELP = `usage: wddm-fence table 1|2a|2b [--seed N] [--quiet] [--json]

Plays a cross-adapter table of the native fence document (XA-06) on an integrated GPU
("iGPU") and a discrete GPU ("dGPU"): every wait/signal pair of the table (wait from the
GPU or the CPU × signal from the GPU or the CPU), each of the table's rows marked with
the trace event that did it, or DID NOT HAPPEN.
  1    both GPUs native; the iGPU waits, the dGPU signals
  2a   the iGPU has no native fences and opens the dGPU's native fence as a monitored fence
  2b   a monitored fence of the iGPU opened as a native fence on the dGPU; the iGPU signals
  --seed N   the machines' seed (0..4294967295, default 1)
  --quiet    the rows and each pair's verdict, no trace or summary
  --json     the pairs, their rows and each machine's summary as JSON
Not the same as "wddm-fence run scenario-1": that scenario file is one pair of table 1
(the iGPU waits on the GPU and the CPU, the dGPU signals from the GPU) with expectations,
to copy and edit (wddm-fence show scenario-1).
Exit codes: 0 every row of every pair happened in the table's order, 1 a row did not
happen or came out of order, 2 bad arguments.
`;

export const COMPARE_HELP = `usage: wddm-fence compare models|doorbell [--seed N] [--json]

Runs one workload two ways and counts both, side by side (virtual time):
  models     a producer/consumer hand-off on monitored fences + kernel-mode contexts
             (WDDM 2.x) and on native fences + hardware queues (WDDM 3.2): CPU interrupts,
             OS scans of pending waits, CPU round trips that held GPU work (what
             wddm-fence demo prints after the demo)
  doorbell   a cross-adapter producer/consumer with the document's interrupt design and
             with the GPU-to-GPU doorbell (XA-07): interrupts, wake latency, fallbacks
  --seed N   the machines' seed (0..4294967295, default 1)
  --json     the counts as JSON
Exit codes: 0 it ran, 2 bad arguments.
`;

/** Bad arguments of these commands (the caller turns it into its usage error, exit 2). */
export class TableUsage extends Error {}

const bigintsAsStrings = (_key: string, value: unknown) => (typeof value === 'bigint' ? value.toString() : value);
const json = (value: unknown) => JSON.stringify(value, bigintsAsStrings, 2) + '\n';

function runJson(run: ScenarioRun): Record<string, unknown> {
  return {
    wait: run.wait, signal: run.signal, title: run.title, inOrder: run.inOrder,
    rows: run.steps.map((s) => ({
      row: s.row, column: s.column, text: s.text, happened: s.event !== undefined,
      event: s.event ? { seq: s.event.seq, timeNs: s.event.timeNs, kind: s.event.kind, actor: s.event.actor, name: s.event.name } : null,
    })),
    summary: run.machine.summary(),
  };
}

/** The rows and the verdict of each pair, without the trace and summary (--quiet). */
function rowsText(runs: ScenarioRun[]): string {
  const full = scenarioText(runs);
  // scenarioText prints, per pair: the title, the rows, the verdict, then "trace:" and the summary
  return full.split(/^(?==== )/m).map((pair) => pair.slice(0, pair.indexOf('\ntrace:\n') + 1 || undefined)).join('');
}

/** `wddm-fence table ID`: exit 0 when every pair's rows all happened in order. */
export async function tableCommand(out: (text: string) => void, id: string | undefined, seed: number, options: { quiet?: boolean; json?: boolean }): Promise<number> {
  if (id === undefined) throw new TableUsage(`table needs the table to play: wddm-fence table 1|2a|2b`);
  if (!SCENARIO_IDS.includes(id as ScenarioId)) throw new TableUsage(`there is no table "${id}"; expected 1, 2a or 2b${id === 'doorbell' ? ' (the doorbell comparison is: wddm-fence compare doorbell)' : ''}`);
  const runs = await runScenarioPairs(id as ScenarioId, seed);
  const code = runs.every((r) => r.inOrder) ? 0 : 1;
  if (options.json) out(json({ ok: code === 0, exitCode: code, table: id, seed, pairs: runs.map(runJson) }));
  else out(options.quiet ? rowsText(runs) : scenarioText(runs));
  return code;
}

type Counts<T> = Omit<T, 'machine'> & { summary: ReturnType<Machine['summary']> };
const counts = <T extends { machine: Machine }>({ machine, ...rest }: T): Counts<T> => ({ ...rest, summary: machine.summary() } as Counts<T>);

/** `wddm-fence compare WHAT`. */
export async function compareCommand(out: (text: string) => void, what: string | undefined, seed: number, options: { json?: boolean }): Promise<number> {
  if (what === 'models') {
    const c = await compareSynchronizationModels({ seed });
    if (options.json) out(json({ ok: true, exitCode: 0, compare: 'models', seed: c.seed, frames: c.frames, monitored: counts<ModelCost>(c.monitored), native: counts<ModelCost>(c.native) }));
    else out(c.text);
    return 0;
  }
  if (what === 'doorbell') {
    const c = await compareDoorbell(8, seed);
    if (options.json) out(json({ ok: true, exitCode: 0, compare: 'doorbell', seed, interrupt: counts(c.interrupt), doorbell: counts(c.doorbell) }));
    else out(doorbellComparisonText(c));
    return 0;
  }
  throw new TableUsage(what === undefined ? 'compare needs what to compare: wddm-fence compare models|doorbell' : `there is no comparison "${what}"; expected models or doorbell`);
}
