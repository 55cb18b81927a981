// What the explorer explores: a World, a machine with what the explorer put
// in it and knows about it, and the Model that builds it the same way every
// time. Two kinds:
//
//   kind 'machine'    the machine described by a handful of numbers
//                     (src/explore/model.ts): native fences, waiters and
//                     signallers the explorer made itself
//   kind 'scenario'   a scenario file's machine and events, set up as
//                     `wddm-fence run` sets it up (src/explore/scenario-world.ts,
//                     kept out of the library's bundle: it reads YAML)
//
// Everything else in src/explore/ (the searches, state keys, snapshots,
// footprints, step lists, schedule files) works on this interface.
//
// A step is one of the World's options at a state (`options()`): the
// scheduler's enabled events, in scheduling order, then the explorer's own
// (an injected fault, `explorer fault {…}`, while the model allows one more).
// `take(world, i, bounds)` runs option i. Under timed exploration a step may
// draw latencies (a command's time, an interrupt's delivery): each draw takes
// one end of its jitter span, low or high, from `bounds` ('0' low, '1' high,
// one character per draw in the order drawn; missing characters are low), and
// `world.latencies.drawn` says how many it drew (docs/EXPLORER.md "Time").

import type { Machine } from '../machine/machine.js';
import type { ScheduledEvent } from '../base/scheduler.js';
import type { FenceView as GlobalFence } from '../os/inspect.js';
import type { CpuThread, RuntimeProcess } from '../user/runtime.js';

/** The invariants the explorer judges (src/explore/invariants.ts says what each is). */
export type InvariantId = 'no-lost-wakeup' | 'monitored-value' | 'current-value-not-torn' | 'satisfied-waiters-woken' | 'gpu-work-done' | 'steps-run' | 'expectations';
/** An invariant that does not hold, and how. */
export interface Violation { invariant: InvariantId; message: string }

/** A fence record the explorer judges (a cross-adapter fence has one per adapter, sharing one CurrentValue word). */
export interface WorldFence {
  name: string;
  index: number;
  /** A process's handle to this record. */
  handle: number;
  global: GlobalFence;
  adapter: number;
  /** The engine that signals it (the generated machine); -1 when several may. */
  engine: number;
  /** Every value CurrentValue may hold: its initial value, then each value it may be set to. */
  values: readonly bigint[];
}

/** A hardware queue the explorer knows: its commands, and which fences (indexes into World.fences) they signal. */
export interface WorldQueue { name: string; adapter: number; engine: number; handle: number; coreQueue: number; fences: readonly number[] }

/** A CPU thread, by the explorer's name of it. */
export interface WorldThread { name: string; process: RuntimeProcess; thread: CpuThread }

/** The explorer's choice of each latency a step draws (Random.chooseLatency): one end of its span. */
export class LatencyChoices {
  /** The current step's choices, '0' low / '1' high, one per draw (missing: low). */
  bits = '';
  /** Draws the current step made so far. */
  drawn = 0;
  /** Latencies are explored at the ends of their spans (timed, jitter > 0); false: the machine draws none. */
  constructor(readonly bounded: boolean) {}
  readonly choose = (lowNs: number, highNs: number): number => (this.bits.charCodeAt(this.drawn++) === 0x31 ? highNs : lowNs);
}

/** The explorer's own state beside the machine (part of the state key and of snapshots). */
export interface ExplorerState { faultsInjected: number }

export interface World {
  readonly kind: 'machine' | 'scenario';
  readonly machine: Machine;
  readonly fences: readonly WorldFence[];
  readonly queues: readonly WorldQueue[];
  readonly threads: readonly WorldThread[];
  /** The invariants it is judged by, in the order verdicts are printed. */
  readonly invariants: readonly InvariantId[];
  /** How its steps choose latencies. */
  readonly latencies: LatencyChoices;
  /** The explorer's own state (walked and snapshotted with the machine). */
  readonly explorer: ExplorerState;
  /** The step list's first lines (what is explored, how). */
  header(): string[];
  /** A fence value as its step list writes it. */
  formatValue(value: bigint): string;
  /** Does this thread's resumption touch only the thread itself (its wait is over and nothing follows it)? */
  resumeIsLocal(thread: CpuThread): boolean;
  /** What a thread's resumption will do, for people (undefined: the generic name). */
  describeResume(thread: CpuThread): string | undefined;
  /** The state items of its threads (and, for a scenario, its queues), for step lists. */
  threadItems(): [string, string][];
  /** The "quiet" checks of this kind (beyond no-lost-wakeup). */
  checkQuiet(): Violation[];
  /** What the key must cover beyond memory and the host walk: what its quiet checks read that both leave out (counters). */
  keyExtras?(): readonly (number | string)[];
  /** A scenario file's components (src/explore/components.ts: adapters nothing links); undefined for the generated machine. */
  components?(): Components;
  /** The explorer's own options at this state (injected faults), as events no scheduler holds. */
  explorerOptions(): ScheduledEvent[];
  /** Runs one of explorerOptions(). */
  takeExplorerOption(event: ScheduledEvent): void;
}

/** A scenario file's components (src/explore/components.ts, linkScenario): fixed for the file. */
export interface Components {
  /** How many; 1 when the file is not split. */
  count: number;
  /** Each adapter's component, by adapter index. */
  ofAdapter: readonly number[];
  /** Each thread's component, by the file's thread name (EVERY, -1: a thread that names no adapter). */
  ofThread: ReadonlyMap<string, number>;
  /** Each scenario fault's component, by its index in the file's faults. */
  ofFault: readonly number[];
  /** Why the file is one component (undefined when it is split, or has one adapter). */
  unsplit?: string;
}

/** How the explorer treats a scenario's time: at its virtual times with latencies at their ends, or not at all (src/explore/scenario-world.ts). */
export type TimeMode = 'timed' | 'untimed';
export const TIME_MODES: readonly TimeMode[] = ['timed', 'untimed'];

/** What a schedule file records of a World model (src/explore/schedule.ts). */
export interface ScenarioScheduleInfo {
  scenario: { name: string; source: string };
  time: TimeMode;
  faults: number;
  variant: string;
  seed: number;
  /** false: the OS's re-read of CurrentValue after UpdateMonitoredValues was off (the driver alone). */
  resample?: false;
}

/** What builds a World (each build is the same machine, nothing run yet). */
export interface WorldModel {
  readonly kind: 'scenario';
  build(options: { trace: boolean }): World;
  scheduleInfo(): ScenarioScheduleInfo;
}

/** The options at this state: the scheduler's enabled events, then the explorer's own. */
export function options(world: World): readonly ScheduledEvent[] {
  const enabled = world.machine.scheduler.enabled();
  const own = world.explorerOptions();
  return own.length ? [...enabled, ...own] : enabled;
}

/**
 * Runs option `index` of options(world) with latency choices `bounds`; returns the event it ran.
 * Throws what the step throws (the caller turns it into a steps-run violation).
 */
export function take(world: World, index: number, bounds = ''): ScheduledEvent {
  const scheduler = world.machine.scheduler;
  const latencies = world.latencies;
  latencies.bits = bounds;
  latencies.drawn = 0;
  const own = world.explorerOptions();
  if (!own.length) return scheduler.take(index); // (it checks the index itself)
  const enabled = scheduler.enabled();
  if (index < enabled.length) return scheduler.take(index);
  const event = own[index - enabled.length];
  if (!event) throw new RangeError(`take(${index}): expected an index from 0 to ${enabled.length + own.length - 1}`);
  world.takeExplorerOption(event);
  return event;
}

/** An explorer option as an event: owner "explorer" (no scheduler holds it; take() runs it). */
export function explorerEvent(kind: string, args: Readonly<Record<string, number | string>>, timeNs: number): ScheduledEvent {
  return { timeNs, sequence: -1, tieBreak: 0, owner: 'explorer', kind, args, label: `explorer ${kind}`, cancelled: false };
}

/**
 * The canonical name of a transition: the event's key, then its latency choices with trailing
 * lows left out ('0' and '' and '00' are one transition: a missing choice is low).
 */
export function transitionKey(eventKey: string, bounds: string): string {
  const trimmed = bounds.replace(/0+$/, '');
  return trimmed ? `${eventKey}#${trimmed}` : eventKey;
}

/** The latency choices of a transition key (transitionKey's inverse; event keys hold no '#'). */
export function boundsOfKey(key: string): string {
  const at = key.lastIndexOf('#');
  return at >= 0 ? key.slice(at + 1) : '';
}

/** The latency choices a step that drew `drawn` times with `bounds` leaves unexplored: every other pattern of its draws past `bounds`. */
export function otherBounds(bounds: string, drawn: number): string[] {
  const extra = drawn - bounds.length;
  if (extra <= 0) return [];
  if (extra > 16) throw new Error(`a step drew ${drawn} latencies; the explorer takes at most ${bounds.length + 16} per step`);
  const found: string[] = [];
  for (let pattern = 1; pattern < 1 << extra; pattern++) {
    let bits = '';
    for (let k = extra - 1; k >= 0; k--) bits += (pattern >> k) & 1 ? '1' : '0';
    found.push(bounds + bits);
  }
  return found;
}
