// Replaying a schedule: build the model's machine, run each choice, and say
// what each step did and what the state is after it. The explorer prints a
// counterexample by replaying it here, and `explore --replay FILE` does the
// same with the file, so both print the same text byte for byte.

import { WddmError } from '../base/errors.js';
import { buildAnyWorld, type AnyModel, type ExploreModel } from './model.js';
import { options as worldOptions, take as worldTake, type World } from './world.js';
import { checkAlways, checkQuiet, type Violation } from './invariants.js';
import { describeEvent, stateItems, stateLine } from './render.js';
import { eventName } from './state.js';
import { SCHEDULE_FORMAT, type ScheduleFile, type ScheduleStep } from './schedule.js';

export interface ReplayedStep {
  /** 1-based. */
  number: number;
  choice: number;
  /** Options before the step (the scheduler's enabled events, then the explorer's own). */
  enabled: number;
  event: string;
  /** The end of each latency the step drew, L (low) or H (high), in the order drawn ('' when it drew none). */
  latencies: string;
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
export function replay(model: AnyModel, steps: readonly ScheduleStep[], options: { trace?: boolean } = {}): Replay {
  const world = buildAnyWorld(model, { trace: options.trace ?? true });
  let before = stateItems(world);
  const start = Object.fromEntries(before);
  const replayed: ReplayedStep[] = [];
  let violations: Violation[] = checkAlways(world);
  for (const [i, recorded] of steps.entries()) {
    let step = recorded;
    const enabled = worldOptions(world);
    const where = `step ${i + 1} (steps[${i}])`;
    if (!enabled.length) throw new ReplayMismatch(`${where}: the machine is quiet (nothing left to run), but the schedule has ${steps.length - i} more step(s); expected a schedule of this machine, variant and seed`);
    if (step.byName) {
      const found = enabled.findIndex((e) => eventName(e) === step.event);
      if (found < 0) throw new ReplayMismatch(`${where}: the schedule says "${step.event}" (an injected TDR, as files before faults had kinds name it), but no such event is enabled here (${enabled.map(eventName).join('; ')}); expected a schedule of this machine, variant and seed`);
      step = { choice: found, event: step.event };
    }
    if (step.choice >= enabled.length) {
      throw new ReplayMismatch(`${where}: choice ${step.choice} but only ${enabled.length} event(s) are enabled (${enabled.map(eventName).join('; ')}); expected a schedule of this machine, variant and seed`);
    }
    const event = enabled[step.choice];
    if (eventName(event) !== step.event) {
      throw new ReplayMismatch(`${where}: choice ${step.choice} is "${eventName(event)}" here, but the schedule says "${step.event}"; expected a schedule of this machine, variant and seed`);
    }
    const description = describeEvent(world, event);
    let thrown: Violation | undefined;
    const bounds = step.bounds ?? '';
    try { worldTake(world, step.choice, bounds); } catch (error) {
      thrown = { invariant: 'steps-run', message: `the step threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}` };
    }
    const drawn = world.latencies.drawn;
    if (bounds.length > drawn && bounds.slice(drawn).includes('1')) {
      throw new ReplayMismatch(`${where}: the schedule chooses ${bounds.length} latencies ("${bounds}"), but the step drew ${drawn}; expected a schedule of this scenario, variant and seed`);
    }
    const latencies = Array.from({ length: drawn }, (_, k) => (bounds[k] === '1' ? 'H' : 'L')).join('');
    const after = stateItems(world);
    const old = new Map(before);
    const quiet = worldOptions(world).length === 0;
    violations = thrown ? [thrown] : [...checkAlways(world), ...(quiet ? checkQuiet(world) : [])];
    replayed.push({
      number: i + 1, choice: step.choice, enabled: enabled.length, event: eventName(event), latencies, description,
      state: Object.fromEntries(after), changed: after.filter(([k, t]) => old.get(k) !== t).map(([k]) => k), violations,
    });
    before = after;
    if (thrown) break;
  }
  return { world, start, steps: replayed, quiet: worldOptions(world).length === 0, violations };
}

/** The step list: what `explore` prints for a counterexample and `explore --replay` prints for a file (the model is the replay's own). */
export function replayText(_model: AnyModel, result: Replay): string {
  const lines: string[] = [];
  lines.push(...result.world.header());
  lines.push(`   0  start`);
  lines.push(`      ${stateLine(Object.entries(result.start))}`);
  let previous = Object.entries(result.start);
  for (const s of result.steps) {
    lines.push(`${String(s.number).padStart(4)}  [${s.choice}/${s.enabled}${s.latencies ? ` ${s.latencies}` : ''}] ${s.description}`);
    const items = Object.entries(s.state);
    lines.push(`      ${stateLine(items, previous)}`);
    previous = items;
  }
  lines.push(result.quiet ? 'quiet: nothing is left to run' : `not quiet: ${worldOptions(result.world).length} event(s) still enabled`);
  if (result.violations.length) for (const v of result.violations) lines.push(`VIOLATED ${v.invariant}: ${v.message}`);
  else lines.push('no invariant fails at the last state');
  return lines.join('\n') + '\n';
}

/** The schedule file of a path the explorer found (the lowest version that holds it). */
export function scheduleOf(model: AnyModel, steps: ScheduleStep[], violation?: Violation): ScheduleFile {
  const found = violation ? { violation: { invariant: violation.invariant, message: violation.message } } : {};
  if ('kind' in model && model.kind === 'scenario') {
    const info = model.scheduleInfo();
    return {
      schedule: SCHEDULE_FORMAT, version: 3,
      // The file's digest and whether it is a built-in are the caller's to fill in (it read the file).
      scenario: { name: info.scenario.name, source: info.scenario.source, builtin: false, sha256: '0'.repeat(64) },
      time: info.time, faults: info.faults, ...(info.resample === false ? { resample: false as const } : {}),
      variant: info.variant as ScheduleFile['variant'], osGranularity: 'step', seed: info.seed, ...found, steps,
    };
  }
  const m = model as ExploreModel;
  return {
    schedule: SCHEDULE_FORMAT, version: steps.some((s) => s.bounds) || m.resample === false ? 3 : 2, machine: { ...m.machine },
    ...(m.resample === false ? { resample: false as const } : {}), variant: m.variant, osGranularity: m.osGranularity ?? 'step', seed: m.seed,
    ...found, steps,
  };
}

/** The named steps of a list of choices and their latency choices (runs them once to learn each event's name). */
export function namedSteps(model: AnyModel, choices: readonly number[], bounds: readonly string[] = []): ScheduleStep[] {
  const world = buildAnyWorld(model, { trace: false });
  return choices.map((choice, i) => {
    const event = worldOptions(world)[choice];
    if (!event) throw new Error(`choice ${choice} is not enabled: the path does not belong to this model`);
    const name = eventName(event);
    const chosen = (bounds[i] ?? '').replace(/0+$/, '');
    try { worldTake(world, choice, chosen); } catch { /* the last step of a path that threw */ }
    return chosen ? { choice, event: name, bounds: chosen } : { choice, event: name };
  });
}
