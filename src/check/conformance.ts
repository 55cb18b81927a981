// The conformance suite: runs a driver module through every built-in scenario, the targeted
// cases (conformance-cases.ts) and the NF-11 driver-alone probe (cmp-order.ts), with the contract
// checker on, and says for every requirement ID of the requirement list (requirements.ts) passed /
// violated / not reached (why) / not driver-facing (why). `wddm-fence check-driver` prints it.
//
//   runConformance(module, { seed })
//     1. "start-device": one machine with the driver on its adapter. A module that cannot be
//        built (no createDriver, a missing DDI) throws here, the WddmError naming what is
//        missing: there is nothing to judge.
//     2. every built-in scenario (scenarios/*.yaml), the driver on every adapter
//        (the file's reference-driver flags do not apply)
//     3. the targeted cases, each aimed at a few rules (its targets); then 2 and 3 once more unwatched:
//        no observer, no trace (the driver's production paths: GPU stretches, reused arguments), user
//        mode writing rings through submitToHwQueue, the end state judged
//     4. NF-11 on the driver alone: UpdateMonitoredValues of 1, 2 and 3 fences, a GPU signal at
//        every point between its CMP steps, the OS's re-read of CurrentValue off
//   each case on machines of its own, each with a fresh ContractChecker: its violations, and how
//   many times each rule's condition was evaluated, are the case's.
//
// Isolation: a fatal violation bug-checks one adapter of one case's machine; that case is
// reported "stopped by a bug check (RULE)" and every other case runs as if nothing happened.
// A case the driver stopped otherwise (a DDI that threw: DRIVER_FAULT, an adapter the OS would
// not start) with no violation to explain it did not finish, and fails the run. A case judges the
// end state the contract fixes (its scenario's fence values and wait outcomes, never counters a
// legal driver may change) only when nothing else went wrong in it: the first cause is the report.

import { createMachine, type Machine, type MachineObserver } from '../machine/machine.js';
import { checkDriverModule, withCreateDriver, type DriverModule } from '../driver/module.js';
import { runnableScenarios } from '../scenario-files/builtin.js';
import { parseScenario } from '../scenario-files/load.js';
import { runScenario, type ExpectationResult } from '../scenario-files/run.js';
import type { Scenario } from '../scenario-files/types.js';
import type { BugCheckReport } from '../os/objects.js';
import type { UserModeDriverInterface } from '../ddi/ddi.js';
import * as v from '../base/validate.js';
import { deepFreeze } from '../base/freeze.js';
import { CONTRACT_RULES, ContractChecker, type Violation } from './contract.js';
import { REQUIREMENTS } from './requirements.js';
import { probeCmpOrder } from './cmp-order.js';
import { BUILT_IN_END_STATE, CODE_CASES, SCENARIO_CASES, type CaseSession, type EndStateRules } from './conformance-cases.js';

export type { Violation } from './contract.js';

export interface ConformanceOptions { seed?: number }
export type RequirementStatus = 'passed' | 'violated' | 'not-reached' | 'not-driver-facing';
export interface RequirementResult {
  /** The requirement ID (SPEC.md). */
  requirement: string;
  /** What it asks, in a line. */
  summary: string;
  /** A driver module can break it. */
  driverFacing: boolean;
  /** The rule that judges it: its own ID, or another's whose rule covers what a driver can break of it. Absent: none. */
  judgedBy?: string;
  /** What that rule checks. */
  checks?: string;
  /** passed: evaluated at least once and never broken; violated; not reached (reason); not driver-facing (reason). */
  status: RequirementStatus;
  /** How many times the rule's condition was evaluated, over every case. */
  evaluations: number;
  /** The cases in which it was evaluated. */
  cases: string[];
  /** Why it was not reached, why it is not driver-facing, or why another ID's rule judges it. */
  reason?: string;
  firstViolation?: Violation;
  violations: number;
}
export interface CaseResult {
  name: string;
  /** The rules it is aimed at. */
  targets: string[];
  violations: Violation[];
  /** Per rule, how many times its condition was evaluated in this case. */
  evaluations: Record<string, number>;
  /** finished; stopped (a bug check, or an adapter that could not start: `stoppedBy` says which); error (it could not run). */
  outcome: 'finished' | 'stopped' | 'error';
  /** What stopped it: "a bug check (NF-09) on gpu0", "a bug check (DRIVER_FAULT: …) on gpu0", "the adapter failed to start (CAP-02)". */
  stoppedBy?: string;
  /** The stop is a violation's consequence (reported under its rule), or not: then the case failed. */
  explained?: boolean;
  /** What went wrong when it could not run (error), or the refusal a stop came with. */
  error?: string;
}
export interface ConformanceReport {
  driver: string;
  seed: number;
  /** Every requirement ID, in the requirement list's order. */
  results: RequirementResult[];
  cases: CaseResult[];
  /** No rule violated, and every case finished or was stopped by a violation. */
  passed: boolean;
}

/** The expectations of a scenario a conformance case judges: end states the contract fixes. Counters, interrupt counts and times are not. */
export function judgedExpectation(e: Pick<ExpectationResult, 'path' | 'description'>, rules: EndStateRules): string | undefined {
  if (e.path.startsWith('expect.fences.')) return rules.values;
  if (/^expect\.waits\.[^.]+$/.test(e.path) || e.path.startsWith('expect.threads.') || e.path.startsWith('expect.blockedQueues.')) return rules.waits;
  if (e.path === 'expect.stuck' || e.path === 'expect.deadlock') return rules.waits;
  if (e.path === '(implicit)' && (e.description.startsWith('the run ends') || e.description.startsWith('thread '))) return rules.waits;
  return undefined;
}

/** One case's parts as they were gathered, before its outcome is decided. */
interface Gathered {
  checkers: ContractChecker[];
  /** Violations and evaluations gathered outside a checker of the case's (the NF-11 probe). */
  violations: Violation[];
  evaluations: Map<string, number>;
  bugChecks: BugCheckReport[];
  /** End-state judgements: each an evaluation of its rule; a failed one is reported only when nothing else went wrong. */
  endState: { rule: string; ok: boolean; checker: ContractChecker; where: string; expected: string; actual: string }[];
  error?: unknown;
}

class Session implements CaseSession {
  readonly gathered: Gathered = { checkers: [], violations: [], evaluations: new Map(), bugChecks: [], endState: [] };
  constructor(private readonly module: DriverModule, private readonly seed: number) {}

  /** A fresh checker for a machine of this case. */
  checker(): ContractChecker {
    const checker = new ContractChecker();
    this.gathered.checkers.push(checker);
    return checker;
  }

  async machine(options: Parameters<typeof createMachine>[0] = {}): Promise<Machine> {
    const checker = this.checker();
    const adapters = (options.adapters ?? [{}]).map((a) => ({ ...a, driver: { module: this.module } }));
    return createMachine({ seed: this.seed, ...options, adapters, limits: { eventsPerRun: CASE_EVENTS, ...options.limits }, observers: [...(options.observers ?? []), checker as MachineObserver] });
  }

  async unwatchedMachine(options: Parameters<typeof createMachine>[0] = {}): Promise<Machine> {
    const checker = this.checker();
    const adapters = (options.adapters ?? [{}]).map((a) => ({ ...a, driver: { module: this.module } }));
    const machine = await createMachine({ seed: this.seed, ...options, adapters, trace: false, limits: { eventsPerRun: CASE_EVENTS, ...options.limits } });
    checker.judgeAfterRun(machine);
    return machine;
  }

  judge(rule: string, ok: boolean, where: string, expected: string, actual: string): void {
    const checker = this.gathered.checkers[this.gathered.checkers.length - 1];
    if (!checker) throw new Error('conformance: judge() before any machine of the case');
    this.gathered.endState.push({ rule, ok, checker, where, expected, actual });
  }
}

/**
 * The case's outcome from what was gathered (the module header's isolation rules). `consequence`: the case repeats
 * one that already broke a rule or stopped (its unwatched twin), so what its end state shows is that cause's
 * consequence: not judged again.
 */
function outcomeOf(name: string, targets: readonly string[], g: Gathered, consequence = false): CaseResult {
  for (const checker of g.checkers) {
    checker.finish({ lostWakeups: !consequence });
    const machine = checker.attachedMachine;
    if (machine) g.bugChecks.push(...machine.summary().bugChecks);
  }
  const otherwise = () => [...g.violations, ...g.checkers.flatMap((c) => c.violations)];
  // The end state is judged (evaluated) unless the case repeats one that broke a rule, and a failure is reported only
  // when nothing else went wrong: the first cause is the report.
  if (!consequence) {
    const report = !otherwise().length && !g.bugChecks.length && g.error === undefined;
    for (const e of g.endState) e.checker.evaluated(e.rule, '', !e.ok && report ? { where: e.where, expected: e.expected, actual: e.actual } : undefined);
  }
  const violations = otherwise();
  const evaluations: Record<string, number> = {};
  const add = (rule: string, n: number) => { if (n > 0) evaluations[rule] = (evaluations[rule] ?? 0) + n; };
  for (const [rule, n] of g.evaluations) add(rule, n);
  for (const checker of g.checkers) for (const [rule, n] of checker.evaluations) add(rule, n);
  const result: CaseResult = { name, targets: [...targets], violations, evaluations, outcome: 'finished' };
  const firstLine = (error: unknown) => (error instanceof Error ? error.message : String(error)).split('\n').map((l) => l.trim()).filter(Boolean).slice(0, 2).join(' ');
  const bugCheck = g.bugChecks[0];
  if (consequence && (bugCheck || g.error !== undefined)) {
    // Its watched twin broke a rule or stopped: this stop is the same cause's (reported there).
    result.outcome = 'stopped';
    result.stoppedBy = `${bugCheck ? `a bug check (${bugCheck.code}) on ${bugCheck.adapter}` : firstLine(g.error)}, as its watched run was`;
    result.explained = true;
  } else if (bugCheck) {
    const rule = bugCheck.code === 'CONTRACT_VIOLATION' ? /^([A-Z]+-\d+)/.exec(bugCheck.message)?.[1] : undefined;
    result.outcome = 'stopped';
    result.stoppedBy = rule ? `a bug check (${rule}) on ${bugCheck.adapter}` : `a bug check (${bugCheck.code}: ${bugCheck.message}) on ${bugCheck.adapter}`;
    result.explained = violations.some((x) => x.adapter === bugCheck.adapter);
    if (g.error !== undefined) result.error = firstLine(g.error);
  } else if (g.error !== undefined) {
    const first = violations[0];
    if (first) {
      result.outcome = 'stopped';
      result.stoppedBy = `${first.rule} (the model refused to go on: ${firstLine(g.error)})`;
      result.explained = true;
      result.error = firstLine(g.error);
    } else {
      result.outcome = 'error';
      result.error = firstLine(g.error);
    }
  }
  return result;
}

/** The scenario cases, parsed once per process and frozen: every run reads the same, and none can change it. */
let scenarioCache: readonly { name: string; targets: readonly string[]; endState: EndStateRules; scenario: Scenario }[] | undefined;
function scenarioCases() {
  scenarioCache ??= deepFreeze([
    ...runnableScenarios().map((b) => ({ name: `scenario: ${b.name}`, targets: [] as string[], endState: BUILT_IN_END_STATE, scenario: b.scenario! })),
    ...SCENARIO_CASES.map((c) => ({ name: `targeted: ${c.name} (${c.targets.join(' ')})`, targets: c.targets, endState: c.endState, scenario: parseScenario(c.text, `conformance case ${c.name}`) })),
  ]);
  return scenarioCache;
}

/**
 * The module with its drivers' user-mode half reduced to its required form, submitToHwQueue: what a runtime
 * reaches when a user-mode half has no typed columns (src/user/ring-write.ts). A half that cannot be replaced
 * is left as it is.
 */
function submitToHwQueueOnly(module: DriverModule): DriverModule {
  return withCreateDriver(module, (context) => {
    const driver = module.createDriver(context);
    const umd = (driver as { userMode?: UserModeDriverInterface } | null)?.userMode;
    if (umd && typeof umd.submitToHwQueue === 'function') {
      try {
        (driver as { userMode: UserModeDriverInterface }).userMode = { submitToHwQueue: (args) => umd.submitToHwQueue(args) };
      } catch { /* a read-only userMode: the form it has */ }
    }
    return driver;
  });
}

/**
 * Scheduler events one run of a case may take (the largest case takes a few thousand): a driver that makes the model
 * loop (work that faults again after every reset, say) stops its case with the model's bound instead of the suite.
 */
const CASE_EVENTS = 1_000_000;
/** A scenario with its run bounded by CASE_EVENTS (or its own, smaller bound). */
function bounded(scenario: Scenario): Scenario {
  const own = scenario.machine.limits?.eventsPerRun;
  if (own !== undefined && own <= CASE_EVENTS) return scenario;
  return { ...scenario, machine: { ...scenario.machine, limits: { ...scenario.machine.limits, eventsPerRun: CASE_EVENTS } } };
}

/** The NF-11 probe's batch sizes: one fence, and batches of two and three (every fence of a batch signalled at every point). */
const PROBE_BATCHES = [1, 2, 3];

/** Runs the suite (module header). Throws only when the module cannot be built at all. */
export async function runConformance(module: DriverModule, options: ConformanceOptions = {}): Promise<ConformanceReport> {
  const checked = checkDriverModule(module, 'runConformance(module)');
  const o = v.options(options, 'runConformance(options)', ['seed']);
  const seed = o.seed === undefined ? 1 : v.integer(o.seed, 'seed', 0, 0xffff_ffff);
  const cases: CaseResult[] = [];
  const requiredFormOnly = submitToHwQueueOnly(checked);

  // 1. the driver starts (a module that cannot be built throws from here)
  {
    const session = new Session(checked, seed);
    const machine = await session.machine({ adapters: [{ name: 'gpu0' }] });
    machine.run();
    cases.push(outcomeOf('start-device (CAP-02 NF-01)', ['CAP-02', 'NF-01'], session.gathered));
  }
  // 2. the built-in scenarios, 3. the targeted cases
  const watchedOutcome = new Map<Scenario, CaseResult>();
  for (const watched of [true, false]) {
    for (const original of scenarioCases()) {
      const c = { ...original, scenario: bounded(original.scenario) };
      const session = new Session(checked, seed);
      const checker = session.checker();
      try {
        // Unwatched: nothing observes the driver and nothing is traced, so it takes the paths it takes in production
        // (GPU stretches, reused arguments), and user mode writes the rings through the user-mode half's required form
        // (submitToHwQueue) rather than the typed columns; only the end state is judged.
        const result = await runScenario(c.scenario, { seed, ...(watched ? { driverModule: checked, observers: [checker] } : { driverModule: requiredFormOnly, trace: false }) });
        if (!watched) checker.judgeAfterRun(result.machine);
        for (const e of result.expectations) {
          const rule = judgedExpectation(e, c.endState);
          if (rule) session.judge(rule, e.ok, `the end of the case (${e.path === '(implicit)' ? e.description : e.path})`, `${e.description}: ${e.expected}`, e.actual);
        }
      } catch (error) {
        session.gathered.error = error;
      }
      const twin = watchedOutcome.get(original.scenario);
      const result = outcomeOf(watched ? c.name : `${c.name}, unwatched, submitToHwQueue (end state only)`, watched ? c.targets : [], session.gathered,
        !watched && twin !== undefined && (twin.violations.length > 0 || twin.outcome !== 'finished'));
      if (watched) watchedOutcome.set(original.scenario, result);
      cases.push(result);
    }
  }
  // The code cases, the unwatched ones last: their end state is judged only when no other case broke a rule.
  for (const c of [...CODE_CASES.filter((x) => !x.unwatched), ...CODE_CASES.filter((x) => x.unwatched)]) {
    const session = new Session(checked, seed);
    try { await c.run(session); } catch (error) { session.gathered.error = error; }
    cases.push(outcomeOf(`targeted: ${c.name} (${c.targets.join(' ')})`, c.unwatched ? [] : c.targets, session.gathered,
      c.unwatched === true && cases.some((x) => x.violations.length > 0 || x.outcome !== 'finished')));
  }
  // 4. NF-11, the driver alone
  for (const fences of PROBE_BATCHES) {
    const session = new Session(checked, seed);
    const g = session.gathered;
    try {
      const probe = await probeCmpOrder(checked, seed, fences);
      g.violations.push(...probe.violations);
      for (const [rule, n] of probe.evaluations) g.evaluations.set(rule, (g.evaluations.get(rule) ?? 0) + n);
      if (probe.stoppedBy) g.bugChecks.push({ adapter: probe.stoppedBy.adapter, code: probe.stoppedBy.code, message: probe.stoppedBy.message, timeNs: 0 });
    } catch (error) {
      g.error = error;
    }
    cases.push(outcomeOf(`NF-11 the driver alone: UpdateMonitoredValues of ${fences} fence${fences === 1 ? '' : 's'}, a GPU signal at every point between its CMP steps, no OS re-read`, ['NF-11'], g));
  }

  const results = REQUIREMENTS.map((requirement): RequirementResult => {
    const base = { requirement: requirement.id, summary: requirement.summary, driverFacing: requirement.driverFacing };
    const rule = requirement.judgedBy === undefined ? undefined : CONTRACT_RULES.find((r) => r.rule === requirement.judgedBy);
    if (!rule) return { ...base, status: 'not-driver-facing', evaluations: 0, cases: [], reason: requirement.reason, violations: 0 };
    const found = cases.flatMap((c) => c.violations.filter((x) => x.rule === rule.rule));
    const evaluated = cases.filter((c) => (c.evaluations[rule.rule] ?? 0) > 0);
    const evaluations = evaluated.reduce((n, c) => n + c.evaluations[rule.rule], 0);
    const judgedElsewhere = rule.rule !== requirement.id ? `judged by ${rule.rule}'s rule: ${requirement.reason}` : requirement.reason;
    const status: RequirementStatus = found.length ? 'violated' : evaluations > 0 ? 'passed' : 'not-reached';
    let reason = judgedElsewhere;
    if (status === 'not-reached') {
      const aimed = cases.filter((c) => c.targets.includes(rule.rule) && c.outcome !== 'finished');
      const first = [...new Set(cases.flatMap((c) => c.violations.map((x) => x.rule)))];
      reason = `no case reached ${rule.reachedBy}${aimed.length ? `; ${aimed.map((c) => `"${c.name}" (aimed at it) was stopped by ${c.stoppedBy ?? `an error: ${c.error}`}`).join('; ')}` : ''}`
        + (first.length ? `; ${first.join(', ')} broke first (what a violation leaves behind is not judged further)` : '')
        + (judgedElsewhere ? ` (${judgedElsewhere})` : '');
    }
    return {
      ...base, judgedBy: rule.rule, checks: rule.checks, status, evaluations, cases: evaluated.map((c) => c.name),
      ...(reason ? { reason } : {}), ...(found.length ? { firstViolation: found[0] } : {}), violations: found.length,
    };
  });
  const failedCases = cases.filter((c) => c.outcome === 'error' || (c.outcome === 'stopped' && !c.explained));
  return { driver: checked.name ?? 'module', seed, results, cases, passed: results.every((r) => r.status !== 'violated') && failedCases.length === 0 };
}

/** The cases of a report that fail it by themselves: they could not run, or a stop no violation explains. */
export function failedCases(report: ConformanceReport): CaseResult[] {
  return report.cases.filter((c) => c.outcome === 'error' || (c.outcome === 'stopped' && !c.explained));
}
