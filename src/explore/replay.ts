// Replaying a schedule: build the model's machine, run each choice, and say
// what each step did and what the state is after it. The explorer prints a
// counterexample by replaying it here, and `explore --replay FILE` does the
// same with the file, so both print the same text byte for byte.

import { WddmError } from '../base/errors.js';
import { buildWorld, describeMachine, type ExploreModel, type World } from './model.js';
import { checkAlways, checkQuiet, type Violation } from './invariants.js';
import { describeEvent, stateItems, stateLine } from './render.js';
import { eventName } from './state.js';
import { SCHEDULE_FORMAT, SCHEDULE_VERSION, type ScheduleFile, type ScheduleStep } from './schedule.js';

export interface ReplayedStep {
  /** 1-based. */
  number: number;
  choice: number;
  /** Events enabled before the step. */
  enabled: number;
  event: string;
  description: string;
  /** The state after the step, item by item; `changed` lists the keys that differ from before. */
  state: Record<string, string>;
  changed: string[];
  /** Invariants that fail at the state after the step (quiet ones only once nothing is left). */
  violations: Violation[];
}

export interface Replay {
  world: World;
  start: Record<string, string>;
  steps: ReplayedStep[];
  /** Nothing is left to run after the last step. */
  quiet: boolean;
  violations: Violation[];
}

/** A replay that cannot go on: the file names an event the machine does not have at that step. */
export class ReplayMismatch extends WddmError {
  constructor(message: string) { super('INVALID_PARAMETER', message); this.name = 'ReplayMismatch'; }
}

/** Runs `steps` on a fresh machine of `model` (with its trace on when `trace`). */
export function replay(model: ExploreModel, steps: readonly ScheduleStep[], options: { trace?: boolean } = {}): Replay {
  const world = buildWorld(model, { trace: options.trace ?? true });
  const scheduler = world.machine.scheduler;
  let before = stateItems(world);
  const start = Object.fromEntries(before);
  const replayed: ReplayedStep[] = [];
  let violations: Violation[] = checkAlways(world);
  for (const [i, step] of steps.entries()) {
    const enabled = scheduler.enabled();
    const where = `step ${i + 1} (steps[${i}])`;
    if (!enabled.length) throw new ReplayMismatch(`${where}: the machine is quiet (nothing left to run), but the schedule has ${steps.length - i} more step(s); expected a schedule of this machine, variant and seed`);
    if (step.choice >= enabled.length) {
      throw new ReplayMismatch(`${where}: choice ${step.choice} but only ${enabled.length} event(s) are enabled (${enabled.map(eventName).join('; ')}); expected a schedule of this machine, variant and seed`);
    }
    const event = enabled[step.choice];
    if (eventName(event) !== step.event) {
      throw new ReplayMismatch(`${where}: choice ${step.choice} is "${eventName(event)}" here, but the schedule says "${step.event}"; expected a schedule of this machine, variant and seed`);
    }
    const description = describeEvent(world, event);
    let thrown: Violation | undefined;
    try { scheduler.take(step.choice); } catch (error) {
      thrown = { invariant: 'steps-run', message: `the step threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}` };
    }
    const after = stateItems(world);
    const old = new Map(before);
    const quiet = scheduler.enabled().length === 0;
    violations = thrown ? [thrown] : [...checkAlways(world), ...(quiet ? checkQuiet(world) : [])];
    replayed.push({
      number: i + 1, choice: step.choice, enabled: enabled.length, event: eventName(event), description,
      state: Object.fromEntries(after), changed: after.filter(([k, t]) => old.get(k) !== t).map(([k]) => k), violations,
    });
    before = after;
    if (thrown) break;
  }
  return { world, start, steps: replayed, quiet: scheduler.enabled().length === 0, violations };
}

/** The step list: what `explore` prints for a counterexample and `explore --replay` prints for a file. */
export function replayText(model: ExploreModel, result: Replay): string {
  const lines: string[] = [];
  lines.push(`machine: ${describeMachine(model.machine)}; variant ${model.variant}; OS in ${(model.osGranularity ?? 'step') === 'step' ? 'steps' : 'whole operations'}; seed ${model.seed}`);
  lines.push(`values: v<k> = k × 0x100000001, MAX = UINT64_MAX; [choice/enabled]; * marks what the step changed`);
  lines.push(`   0  start`);
  lines.push(`      ${stateLine(Object.entries(result.start))}`);
  let previous = Object.entries(result.start);
  for (const s of result.steps) {
    lines.push(`${String(s.number).padStart(4)}  [${s.choice}/${s.enabled}] ${s.description}`);
    const items = Object.entries(s.state);
    lines.push(`      ${stateLine(items, previous)}`);
    previous = items;
  }
  lines.push(result.quiet ? 'quiet: nothing is left to run' : `not quiet: ${result.world.machine.scheduler.enabled().length} event(s) still enabled`);
  if (result.violations.length) for (const v of result.violations) lines.push(`VIOLATED ${v.invariant}: ${v.message}`);
  else lines.push('no invariant fails at the last state');
  return lines.join('\n') + '\n';
}

/** The schedule file of a path the explorer found. */
export function scheduleOf(model: ExploreModel, steps: ScheduleStep[], violation?: Violation): ScheduleFile {
  return {
    schedule: SCHEDULE_FORMAT, version: SCHEDULE_VERSION, machine: { ...model.machine }, variant: model.variant, osGranularity: model.osGranularity ?? 'step', seed: model.seed,
    ...(violation ? { violation: { invariant: violation.invariant, message: violation.message } } : {}), steps,
  };
}

/** The named steps of a list of choices (runs them once to learn each event's name). */
export function namedSteps(model: ExploreModel, choices: readonly number[]): ScheduleStep[] {
  const world = buildWorld(model, { trace: false });
  const scheduler = world.machine.scheduler;
  return choices.map((choice) => {
    const event = scheduler.enabled()[choice];
    if (!event) throw new Error(`choice ${choice} is not enabled: the path does not belong to this model`);
    const name = eventName(event);
    try { scheduler.take(choice); } catch { /* the last step of a path that threw */ }
    return { choice, event: name };
  });
}
