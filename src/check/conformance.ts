// The conformance suite: runs a driver module through every built-in scenario
// and a targeted case per requirement, with the contract checker on, and says
// for each rule passed / violated / not exercised (issue 12; the
// `wddm-fence check-driver` command prints it).
//
//   runConformance(module, { seed })
//     1. "start-device": one machine with the driver on its adapter. A module
//        that cannot be built (no createDriver, a missing DDI) throws here, the
//        WddmError naming what is missing: there is nothing to judge.
//     2. every built-in scenario (scenarios/*.yaml), the driver on every adapter
//        (the file's reference-driver flags do not apply)
//     3. the targeted cases below (TARGETED), each aimed at a few rules
//   each case: a fresh ContractChecker in the machine's observers; its
//   violations, and the rules it exercised (a check made), are the case's.
//
// A case that throws (a scenario the driver cannot finish, say) records the
// error and the suite goes on; the checker's violations up to there count.

import { createMachine } from '../machine/machine.js';
import { checkDriverModule, type DriverModule } from '../driver/module.js';
import { runnableScenarios } from '../scenario-files/builtin.js';
import { parseScenario } from '../scenario-files/load.js';
import { runScenario } from '../scenario-files/run.js';
import type { Scenario } from '../scenario-files/types.js';
import * as v from '../base/validate.js';
import { CONTRACT_RULES, ContractChecker, type Violation } from './contract.js';

export type { Violation } from './contract.js';

export interface ConformanceOptions { seed?: number }
export interface RequirementResult {
  requirement: string;
  status: 'passed' | 'violated' | 'not-exercised';
  /** The cases that exercised it (made at least one of its checks). */
  cases: string[];
  firstViolation?: Violation;
  violations: number;
}
export interface ConformanceReport {
  driver: string;
  seed: number;
  results: RequirementResult[];
  cases: { name: string; violations: Violation[]; error?: string }[];
  /** Every requirement passed or not exercised, and no case failed to run. */
  passed: boolean;
}

/**
 * The targeted cases: small scenarios aimed at rules the built-in scenarios
 * exercise little or not at all (the rules each one is for are in its name).
 */
const TARGETED: { name: string; text: string }[] = [
  {
    // A CPU waiter on two fences, GPU signals from one queue with work between them: UpdateMonitoredValues
    // (NF-09, NF-11), interrupts with a list (INT-01, INT-06), a signal log read after each (LOG-04, LOG-07).
    name: 'cpu-waiter-gpu-signals (NF-09 NF-11 INT-01 INT-06 LOG-04 LOG-07)',
    text: `name: cpu-waiter-gpu-signals
machine: { adapters: [ { name: gpu0, engines: 2 } ] }
processes: [ { name: app } ]
fences:
  - { name: a, process: app, adapter: gpu0, kind: native }
  - { name: b, process: app, adapter: gpu0, kind: native }
  - { name: c, process: app, adapter: gpu0, kind: native }
queues:
  - name: producer
    process: app
    adapter: gpu0
    engine: 0
    commands:
      - work: { durationNs: 3000 }
      - signal: { fence: a, value: 1 }
      - work: { durationNs: 3000 }
      - signal: { fence: a, value: 2 }
      - work: { durationNs: 3000 }
      - signal: { fence: b, value: 1 }
      - signal: { fence: a, value: 3 }
  - name: consumer
    process: app
    adapter: gpu0
    engine: 1
    commands:
      - wait: { fence: a, value: 2 }
      - signal: { fence: c, value: 1 }
threads:
  - name: waiter
    process: app
    steps:
      - wait: { id: first, fences: [a], values: [1], timeoutNs: 1000000 }
      - wait: { id: all, fences: [a, b, c], values: [3, 1, 1], timeoutNs: 1000000 }
`,
  },
  {
    // Optimized interrupts: two queues of one engine signal into one interrupt (it must name none), then one queue alone
    // (it may name that queue): INT-05.
    name: 'optimized-interrupt-queues (INT-05)',
    text: `name: optimized-interrupt-queues
machine: { adapters: [ { name: gpu0, engines: 1, caps: { optimizedNativeFenceSignaledInterrupt: true } } ] }
processes: [ { name: app } ]
fences:
  - { name: a, process: app, adapter: gpu0, kind: native }
  - { name: b, process: app, adapter: gpu0, kind: native }
queues:
  - name: first
    process: app
    adapter: gpu0
    commands:
      - work: { durationNs: 2000 }
      - signal: { fence: a, value: 1 }
      - work: { durationNs: 20000 }
      - signal: { fence: a, value: 2 }
  - name: second
    process: app
    adapter: gpu0
    commands:
      - work: { durationNs: 2000 }
      - signal: { fence: b, value: 1 }
threads:
  - name: waiter
    process: app
    steps:
      - wait: { id: both, fences: [a, b], values: [1, 1], timeoutNs: 1000000 }
      - wait: { id: again, fences: [a], values: [2], timeoutNs: 1000000 }
`,
  },
  {
    // A fence destroyed before another one's signal interrupts: no list may name it (INT-03).
    name: 'destroyed-fence (INT-03)',
    text: `name: destroyed-fence
machine: { adapters: [ { name: gpu0, engines: 1 } ] }
processes: [ { name: app } ]
fences:
  - { name: gone, process: app, adapter: gpu0, kind: native }
  - { name: live, process: app, adapter: gpu0, kind: native }
queues:
  - name: q
    process: app
    adapter: gpu0
    commands:
      - work: { durationNs: 5000 }
      - signal: { fence: live, value: 1 }
threads:
  - name: t
    process: app
    steps:
      - destroyFence: { fence: gone }
      - wait: { id: w, fences: [live], values: [1], timeoutNs: 1000000 }
`,
  },
  {
    // A cross-adapter fence: the other adapter's hardware queue waits; the signal reaches it as NotificationOnly (NF-18),
    // and a CPU signal writes it (NF-07).
    name: 'cross-adapter-notification (NF-07 NF-18)',
    text: `name: cross-adapter-notification
machine: { adapters: [ { name: gpu0, engines: 1 }, { name: gpu1, engines: 1 } ] }
processes: [ { name: app } ]
fences:
  - { name: x, process: app, adapter: gpu0, kind: native, flags: { shared: true, crossAdapter: true }, crossAdapter: [gpu1] }
  - { name: c, process: app, adapter: gpu1, kind: native }
queues:
  - name: waiter
    process: app
    adapter: gpu1
    commands:
      - wait: { fence: x, value: 1 }
      - wait: { fence: c, value: 1 }
      - work: { durationNs: 100 }
  - name: signaller
    process: app
    adapter: gpu0
    commands:
      - work: { durationNs: 4000 }
      - signal: { fence: x, value: 1 }
threads:
  - name: cpu
    process: app
    steps:
      - sleep: { durationNs: 20000 }
      - signal: { fences: [c], values: [1] }
`,
  },
  {
    // Values past 32 bits on a 64-bit adapter: the GPU's store keeps every bit (MF-07) and moves forward (NF-19).
    name: '64-bit-values (MF-07 NF-19)',
    text: `name: values-64-bit
machine: { adapters: [ { name: gpu0, engines: 1 } ] }
processes: [ { name: app } ]
fences:
  - { name: big, process: app, adapter: gpu0, kind: native, initialValue: "4294967296" }
queues:
  - name: q
    process: app
    adapter: gpu0
    commands:
      - signal: { fence: big, value: "4294967297" }
      - signal: { fence: big, value: "4294967298" }
threads:
  - name: t
    process: app
    steps:
      - wait: { id: w, fences: [big], values: ["4294967298"], timeoutNs: 1000000 }
`,
  },
  {
    // A No64BitAtomics GPU crossing 2^32: only the low half is written and the OS extends it (MF-07).
    // Monitored fences on kernel-mode contexts: a 32-bit-only GPU has no native fences (docs/ARCHITECTURE.md).
    name: '32-bit-atomics (MF-07)',
    text: `name: atomics-32-bit
machine: { adapters: [ { name: gpu0, engines: 1, caps: { no64BitAtomics: true } } ] }
processes: [ { name: app } ]
fences:
  - { name: f, process: app, adapter: gpu0, kind: monitored, initialValue: "4294967280" }
queues:
  - name: q
    process: app
    adapter: gpu0
    kind: kernelMode
    engine: 0
    commands:
      - fenceWrite: { fence: f, value: "4294967290" }
      - fenceWrite: { fence: f, value: "4294967301" }
threads:
  - name: t
    process: app
    steps:
      - wait: { id: w, fences: [f], values: ["4294967301"], timeoutNs: 1000000 }
`,
  },
];

let targetedCache: { name: string; scenario: Scenario }[] | undefined;
function targeted(): { name: string; scenario: Scenario }[] {
  targetedCache ??= TARGETED.map((t) => ({ name: `targeted: ${t.name}`, scenario: parseScenario(t.text, `conformance case ${t.name}`) }));
  return targetedCache;
}

/** Runs the suite (module header). Throws only when the module cannot be built at all. */
export async function runConformance(module: DriverModule, options: ConformanceOptions = {}): Promise<ConformanceReport> {
  const checked = checkDriverModule(module, 'runConformance(module)');
  const o = v.options(options, 'runConformance(options)', ['seed']);
  const seed = o.seed === undefined ? 1 : v.integer(o.seed, 'seed', 0, 0xffff_ffff);
  const cases: ConformanceReport['cases'] = [];
  const exercised = new Map<string, string[]>();
  const record = (name: string, checker: ContractChecker, error?: unknown) => {
    const violations = [...checker.finish()];
    cases.push({ name, violations, ...(error === undefined ? {} : { error: error instanceof Error ? error.message : String(error) }) });
    for (const [rule, count] of checker.checks) if (count > 0) exercised.set(rule, [...(exercised.get(rule) ?? []), name]);
  };

  // 1. the driver starts (a module that cannot be built throws from here)
  {
    const checker = new ContractChecker();
    const machine = await createMachine({ seed, adapters: [{ name: 'gpu0', driver: { module: checked } }], observers: [checker] });
    machine.run();
    record('start-device (CAP-02)', checker);
  }
  // 2. the built-in scenarios, 3. the targeted cases
  const scenarios = [...runnableScenarios().map((b) => ({ name: `scenario: ${b.name}`, scenario: b.scenario! })), ...targeted()];
  for (const { name, scenario } of scenarios) {
    const checker = new ContractChecker();
    try {
      await runScenario(scenario, { seed, driverModule: checked, observers: [checker] });
      record(name, checker);
    } catch (error) {
      record(name, checker, error);
    }
  }

  const results: RequirementResult[] = CONTRACT_RULES.map(({ rule }) => {
    const found = cases.flatMap((c) => c.violations.filter((x) => x.rule === rule));
    const ran = exercised.get(rule) ?? [];
    return {
      requirement: rule,
      status: found.length ? 'violated' : ran.length ? 'passed' : 'not-exercised',
      cases: ran,
      ...(found.length ? { firstViolation: found[0] } : {}),
      violations: found.length,
    };
  });
  return { driver: checked.name ?? 'module', seed, results, cases, passed: results.every((r) => r.status !== 'violated') && cases.every((c) => c.error === undefined) };
}
