// Schedule files: a counterexample (or any run) of the explorer's machine as
// data, replayed by `wddm-fence explore --replay FILE`.
//
//   {
//     "schedule": "wddm-fence explore",      what the file is
//     "version": 2,                          SCHEDULE_VERSION; newer files are refused
//                                            (version 1: written before the OS's steps were
//                                            split, replayed with osGranularity "operation")
//     "machine": { "fences": 1, "waiters": 1, "signals": 1, "engines": 1, "adapters": 1, "cpuSignals": 0 },
//     "variant": "no-barrier",
//     "osGranularity": "step",               the OS's operations in steps, or whole ("operation")
//     "driver": "my-driver.mjs",             optional: the driver module it was found with (--driver)
//     "seed": 1,
//     "violation": { "invariant": "no-lost-wakeup", "message": "…" },   optional: what it shows
//     "steps": [ { "choice": 0, "event": "process 1 thread-resume {thread=0}" }, … ]
//   }
//
// A scenario file's schedule (version 3) names the file instead of a machine:
//
//     "scenario": { "name": "scenario-1", "source": "scenario-1", "builtin": true,
//                   "sha256": "…" },           the file's text as explored (a replay refuses another)
//     "time": "timed",                         or "untimed" (src/explore/scenario-world.ts)
//     "faults": 0,                             faults the explorer could inject (--faults)
//     "resample": false,                       optional: the driver alone (the OS's re-read off)
//
// and a step of it may carry "bounds": "01": the end of each latency it drew, low (0) or
// high (1), in the order drawn (missing: low). An injected fault is a step too
// ("event": "explorer fault {adapter=dGPU,kind=tdr}", or kind=removal). A file written before
// faults had kinds names one "explorer fault {adapter=dGPU}": it reads as kind=tdr, the one kind
// there was, and replay finds that option by its name.
//
// Each step's `choice` is the index of the event to run among the enabled
// events (scheduler.enabled(), in scheduling order); `event` names it, so a
// replay that finds another event at that index stops with both named
// instead of silently replaying something else. Everything is checked when
// the file is loaded, and the first problem is reported with its place in
// the file (`steps[3].choice`) and what was expected; nothing runs then.

import { WddmError, invalid } from '../base/errors.js';
import * as v from '../base/validate.js';
import { parseMachine, parseOsGranularity, parseVariant, type ExploreMachine, type Variant } from './model.js';
import type { OsGranularity } from '../machine/options.js';
import { INVARIANTS, type InvariantId } from './invariants.js';
import { TIME_MODES, type TimeMode } from './world.js';

export const SCHEDULE_FORMAT = 'wddm-fence explore';
/** The newest version; a file is written with the lowest one that holds it (2 for the generated machine's schedules). */
export const SCHEDULE_VERSION = 3;
/** The most steps a schedule file may hold. */
export const MAX_SCHEDULE_STEPS = 1_000_000;

export interface ScheduleStep {
  choice: number;
  event: string;
  /** The end of each latency the step drew: '0' low, '1' high, in the order drawn (missing: low). */
  bounds?: string;
  /** Replay finds the step's option by its event name, not by `choice` (a fault recorded before faults had kinds). */
  byName?: true;
}

/** An injected fault as schedule files named it before faults had kinds (it was a TDR). */
const LEGACY_FAULT = /^explorer fault \{adapter=([^,{}]+)\}$/;

/** The scenario file a schedule explores (version 3). */
export interface ScheduleScenario {
  name: string;
  /** As given to explore: a file's path, or a built-in's name. */
  source: string;
  builtin: boolean;
  /** SHA-256 of the file's text, hex. */
  sha256: string;
}

export interface ScheduleFile {
  schedule: typeof SCHEDULE_FORMAT;
  version: number;
  /** The generated machine's numbers (no scenario). */
  machine?: ExploreMachine;
  /** A scenario file's schedule: the file, its time mode, the TDRs the explorer could inject, and whether the OS re-read. */
  scenario?: ScheduleScenario;
  time?: TimeMode;
  faults?: number;
  resample?: false;
  variant: Variant;
  osGranularity: OsGranularity;
  /** The driver module the schedule was found with (explore --driver FILE, as given): --replay needs it again. */
  driver?: string;
  seed: number;
  violation?: { invariant: InvariantId; message: string };
  steps: ScheduleStep[];
}

/** The file's text: one step per line, so that a diff of two schedules reads well. */
export function scheduleJson(file: ScheduleFile): string {
  const head = {
    schedule: file.schedule, version: file.version,
    ...(file.machine ? { machine: file.machine, ...(file.resample === false ? { resample: false } : {}) } : {}),
    ...(file.scenario ? { scenario: file.scenario, time: file.time, faults: file.faults ?? 0, ...(file.resample === false ? { resample: false } : {}) } : {}),
    variant: file.variant, osGranularity: file.osGranularity, ...(file.driver !== undefined ? { driver: file.driver } : {}), seed: file.seed, ...(file.violation ? { violation: file.violation } : {}),
  };
  const lines = JSON.stringify(head, null, 2).split('\n');
  lines.pop(); // the closing brace
  lines[lines.length - 1] += ',';
  lines.push('  "steps": [');
  file.steps.forEach((s, i) => lines.push(`    ${JSON.stringify(s)}${i < file.steps.length - 1 ? ',' : ''}`));
  lines.push('  ]', '}');
  return lines.join('\n') + '\n';
}

/** A schedule file that cannot be used: what is wrong and where. */
export class ScheduleFileError extends WddmError {
  constructor(readonly source: string, message: string) {
    super('INVALID_PARAMETER', `schedule file "${source}": ${message}`);
    this.name = 'ScheduleFileError';
  }
}

/** Parses and checks a schedule file's text; `source` names it in errors. */
export function parseSchedule(text: string, source: string): ScheduleFile {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ScheduleFileError(source, `not JSON (${(error as Error).message}); expected the JSON a schedule was written as (wddm-fence explore --out)`);
  }
  try {
    return checkSchedule(raw);
  } catch (error) {
    if (error instanceof WddmError) throw new ScheduleFileError(source, error.message);
    throw error;
  }
}

/** Checks an already parsed schedule (every field, no unknown ones). */
export function checkSchedule(raw: unknown): ScheduleFile {
  const o = v.options(raw, 'the file', ['schedule', 'version', 'machine', 'scenario', 'time', 'faults', 'resample', 'variant', 'osGranularity', 'driver', 'seed', 'violation', 'steps']);
  if (o.schedule !== SCHEDULE_FORMAT) throw invalid('schedule', o.schedule, `"${SCHEDULE_FORMAT}" (the file a wddm-fence explore counterexample is written to)`);
  const version = v.integer(o.version, 'version', 1, Number.MAX_SAFE_INTEGER);
  if (version > SCHEDULE_VERSION) throw invalid('version', version, `${SCHEDULE_VERSION} or less: this file was written by a newer wddm-fence`);
  let machine: ExploreMachine | undefined;
  let scenario: ScheduleScenario | undefined;
  let time: TimeMode | undefined, faults: number | undefined;
  if (o.scenario !== undefined) {
    if (version < 3) throw invalid('scenario', '{…}', 'no scenario in a version 1 or 2 file (those explore the generated machine); version 3 for one');
    if (o.machine !== undefined) throw invalid('machine', '{…}', 'no machine beside a scenario (the scenario file says the machine)');
    const sc = v.options(o.scenario, 'scenario', ['name', 'source', 'builtin', 'sha256']);
    for (const key of ['name', 'source'] as const) if (typeof sc[key] !== 'string' || !sc[key]) throw invalid(`scenario.${key}`, sc[key], 'a non-empty string');
    const builtin = v.bool(sc.builtin, 'scenario.builtin');
    if (typeof sc.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sc.sha256)) throw invalid('scenario.sha256', sc.sha256, 'the SHA-256 of the scenario file\'s text: 64 lowercase hex digits');
    scenario = { name: sc.name as string, source: sc.source as string, builtin, sha256: sc.sha256 };
    time = v.oneOf(o.time, 'time', TIME_MODES);
    faults = o.faults === undefined ? 0 : v.integer(o.faults, 'faults', 0, 16);
    if (o.resample !== undefined && o.resample !== false) throw invalid('resample', o.resample, 'false (the driver alone: the OS does not re-read CurrentValue), or no resample field');
  } else {
    for (const key of ['time', 'faults'] as const) if (o[key] !== undefined) throw invalid(key, o[key], `no ${key} without a scenario (the generated machine's schedule)`);
    if (o.resample !== undefined && (o.resample !== false || version < 3)) throw invalid('resample', o.resample, version < 3 ? 'no resample in a version 1 or 2 file' : 'false (the driver alone: the OS does not re-read CurrentValue), or no resample field');
    if (o.machine === undefined) throw invalid('machine', undefined, 'the machine the schedule runs on: { fences, waiters, signals, engines, adapters, cpuSignals }, or a scenario');
    machine = parseMachine(o.machine, 'machine');
  }
  const variant = parseVariant(o.variant, 'variant');
  if (version < 2 && o.osGranularity !== undefined) throw invalid('osGranularity', o.osGranularity, 'no osGranularity in a version 1 file (its OS operations ran whole); version 2 for one');
  if (version >= 2 && o.osGranularity === undefined) throw invalid('osGranularity', undefined, '"step" or "operation": how the OS\'s operations were cut into steps');
  const osGranularity = version < 2 ? 'operation' : parseOsGranularity(o.osGranularity, 'osGranularity');
  if (o.driver !== undefined && (typeof o.driver !== 'string' || !o.driver)) throw invalid('driver', o.driver, 'the driver module\'s file as explore --driver was given it, or no driver field');
  const seed = v.integer(o.seed, 'seed', 0, 0xffff_ffff);
  let violation: ScheduleFile['violation'];
  if (o.violation !== undefined) {
    const found = v.options(o.violation, 'violation', ['invariant', 'message']);
    const invariant = v.oneOf(found.invariant, 'violation.invariant', INVARIANTS.map((i) => i.id));
    if (typeof found.message !== 'string') throw invalid('violation.message', found.message, 'a string');
    violation = { invariant, message: found.message };
  }
  const list = v.array(o.steps, 'steps', 0, MAX_SCHEDULE_STEPS);
  const steps = list.map((item, i) => {
    const step = v.options(item, `steps[${i}]`, ['choice', 'event', 'bounds']);
    const choice = v.integer(step.choice, `steps[${i}].choice`, 0, 1 << 20);
    if (typeof step.event !== 'string' || !step.event) throw invalid(`steps[${i}].event`, step.event, 'the name of the event the choice runs (as written by wddm-fence explore)');
    // A fault injected before faults had kinds was a TDR, the one kind there was; the choice is found by the name then
    // (the options list a fault of each kind per adapter now, so the recorded index no longer points at it).
    const legacyFault = LEGACY_FAULT.exec(step.event);
    if (legacyFault) return { choice, event: `explorer fault {adapter=${legacyFault[1]},kind=tdr}`, byName: true as const };
    if (step.bounds === undefined) return { choice, event: step.event };
    if (version < 3 || typeof step.bounds !== 'string' || !/^[01]{1,16}$/.test(step.bounds)) {
      throw invalid(`steps[${i}].bounds`, step.bounds, version < 3 ? 'no bounds in a version 1 or 2 file' : 'the end of each latency the step drew: 1 to 16 characters 0 (low) or 1 (high)');
    }
    return { choice, event: step.event, bounds: step.bounds };
  });
  if (scenario && osGranularity !== 'step') throw invalid('osGranularity', osGranularity, '"step" (a scenario is explored with the OS in steps)');
  return {
    schedule: SCHEDULE_FORMAT, version, ...(machine ? { machine } : {}), ...(scenario ? { scenario, time, faults } : {}), ...(o.resample === false ? { resample: false as const } : {}),
    variant, osGranularity, ...(o.driver !== undefined ? { driver: o.driver as string } : {}), seed, violation, steps,
  };
}
