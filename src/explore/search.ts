// The searches. All of them drive one World at a time through
// scheduler.enabled() / take(i), and go back to an earlier state by
// restoring a snapshot of it (linear memory and the host objects, in place:
// src/explore/snapshot.ts) or, for a machine a snapshot cannot keep (a CPU
// thread written as a generator, a recording trace) and with restore
// 'replay', by building the machine again and replaying the choices that led
// there (the machine is a pure function of the model and its choices).
//
//   exhaustive(model, 'full')    depth-first, visited set of state keys, sleep
//                                sets, eager steps and persistent sets (the
//                                default): every reachable state that
//                                matters, far fewer transitions
//   exhaustive(model, 'states')  depth-first, visited set only: every state and
//                                every transition, and the number of complete
//                                interleavings (paths to a quiet state)
//   exhaustive(model, 'none')    depth-first over every interleaving, no
//                                reduction (tests: the reference the others
//                                are compared with)
//   shortest(model)              depth-first within a depth bound, each state
//                                kept with the fewest steps it was reached in
//                                and expanded again when met in fewer; each
//                                violation found lowers the bound below its
//                                length, so what is left when the search ends
//                                is a violation with the fewest steps from the
//                                start (the CLI gives it the depth of the
//                                exhaustive search's violation as its first bound)
//
// Why this file is long: the three searches share one Runner and one notion of a
// transition (an option with its latency choices) and of a frame; the exhaustive
// search's reductions and bounds and the shortest-counterexample search are each
// one loop over them, and apart they would each carry a copy.
//
// 'full' combines these reductions, all from Godefroid's "Partial-Order Methods
// for the Verification of Concurrent Systems" (1996):
//   - sleep sets (ch. 5) with a visited set (ch. 6): a transition t explored
//     from state s is put to sleep for the siblings explored after it; a
//     sleeping transition stays asleep in a child as long as it is independent
//     of the step taken (src/explore/footprint.ts) and is not explored there,
//     since the other order reaches the same states. A state met again with a
//     sleep set that leaves awake a transition its first visit slept explores
//     that transition (and keeps the intersection). Sleep sets cut
//     transitions, never states.
//   - persistent sets of one step (ch. 4) for the eager steps (isEager): a step
//     independent of every other, invisible to the invariants and enabled until
//     taken is taken at once, alone. This keeps every quiet state and every
//     violation, and cuts the states in between.
//   - wider persistent sets (ch. 4, persistentSet) while an OS operation holds
//     the lock: its next step and the engines whose remaining work conflicts
//     with a step in the set; the set less the sleep set is explored at a first
//     visit, and a revisit explores what the first visit slept and this one does
//     not (ch. 6), in the set or not. A set holding a step that writes a
//     CurrentValue is every enabled step (visibility: docs/EXPLORER.md says why
//     each "always" invariant is still judged wherever it could fail).
// The choices a counterexample lists are every step, eager ones included.
//
// Latencies (timed exploration of a scenario file, src/explore/world.ts): a
// step that draws latencies is one transition per choice of their ends. Which
// steps draw is learnt by taking them: the option with every draw low is taken
// first, and the other patterns of what it drew join its frame's options then
// (a transition's name is its event's key and its choices with trailing lows
// left out, transitionKey). Two choices of one event are never independent.
//
// Shards (`shard`, 'full' only; src/cli/explore-shards.ts runs and merges
// them): every shard walks the same top of the schedule tree, the states
// fewer than `splitDepth` steps from the start, in the same order, with a
// visited set of their own that nothing below the top fills, so each
// shard's top is the same walk. A state the top reaches at splitDepth steps
// or more is a subtree's root; the roots are numbered in the order met, and
// shard i of n takes root k when k mod n = i (round robin: neighbouring
// subtrees, often alike in size, go to different shards). Below a root the
// shard searches as one process does, its visited set shared by all its
// subtrees. Why the shards' states together are the one process's: a
// visited set or sleep set never drops a state from the search of a subtree
// (it drops only transitions whose states another branch reaches), and a
// shard's subtree search sees fewer visited states than the one process's,
// so it reaches at least what the process reaches from that root; and no
// shard reaches a state the process does not, because each step a shard
// takes is a step of the machine. The union of the shards' state keys is the
// process's set; each shard's count alone counts again what two of its
// subtrees share, which is why a merge counts the union, not the sum.
// Worker threads (ShardOptions.shared) take roots by claiming them instead,
// and below the split depth use the table they share as the visited set: a
// state met there, claimed before, is a revisit, whose slept transitions
// the table keeps for every worker (src/explore/shared-visited.ts).
//
// Bounds: a state limit, a depth limit (no step taken past it) and a time limit
// (`shouldStop`, asked every few hundred transitions); each one reached leaves
// the search NOT complete, and says which (SearchStats.stoppedBy): its verdicts
// prove nothing then.

import type { ScheduledEvent } from '../base/scheduler.js';
import { buildAnyWorld, type AnyModel } from './model.js';
import { options as worldOptions, take as worldTake, transitionKey, boundsOfKey, otherBounds, type World } from './world.js';
import { StateKeys, eventKey } from './state.js';
import { takeSnapshot, restoreSnapshot, SnapshotUnsupported, type Snapshot } from './snapshot.js';
import { checkAlways, checkQuiet, type InvariantId, type Violation } from './invariants.js';
import { footprint, independent, isEager, persistentSet, type Footprint } from './footprint.js';
import { BitstateVisited } from './bitstate.js';
import { VisitedTable } from './visited.js';
import { MASK_TRANSITIONS } from './shared-visited.js';

export type Reduction = 'full' | 'states' | 'none';
export const REDUCTIONS: readonly Reduction[] = ['full', 'states', 'none'];

/**
 * How a search goes back to an earlier state: 'snapshot' restores linear
 * memory and the host objects in place (src/explore/snapshot.ts); 'replay'
 * builds the machine again and replays the choices. 'snapshot' falls back to
 * 'replay' for a machine it cannot keep (a generator thread, a recording trace).
 */
export type Restore = 'snapshot' | 'replay';
export const RESTORES: readonly Restore[] = ['snapshot', 'replay'];

/** A state a Runner can come back to. */
export interface Saved { path: number[]; bounds: string[]; snapshot?: Snapshot }

/** A World driven by choices; it goes back by snapshot or by rebuilding from the start. */
export class Runner {
  world!: World;
  keys!: StateKeys;
  /** Choices taken since the world was built, and each one's latency choices ('' when it drew none or all low). */
  readonly path: number[] = [];
  readonly bounds: string[] = [];
  /** Latencies the last step drew. */
  lastDraws = 0;
  /** Machines built, events executed (replays included) and snapshots restored. */
  builds = 0;
  events = 0;
  restores = 0;
  restore: Restore;

  constructor(readonly model: AnyModel, options: { trace?: boolean; restore?: Restore } = {}) {
    this.trace = options.trace ?? false;
    this.restore = options.restore ?? 'snapshot';
    this.reset([]);
    if (this.restore === 'snapshot') {
      try { takeSnapshot(this.world.machine, undefined, [this.world.explorer]); } catch (error) {
        if (!(error instanceof SnapshotUnsupported)) throw error;
        this.restore = 'replay';
        this.fallback = error.message;
        this.keys = new StateKeys(this.world);
      }
    }
  }
  readonly trace: boolean;
  /** Why 'snapshot' fell back to 'replay'. */
  fallback?: string;

  /** Keeps the current state to come back to (a snapshot only in 'snapshot' mode). */
  save(): Saved {
    if (this.restore !== 'snapshot') return { path: [...this.path], bounds: [...this.bounds] };
    return { path: [...this.path], bounds: [...this.bounds], snapshot: takeSnapshot(this.world.machine, this.spare.pop(), [this.world.explorer], this.keys.keep()) };
  }

  /** The state key of the current state (StateKeys.key). */
  key(): string { return this.keys.key(); }

  /** Snapshots no frame needs any more, whose memory copies the next save() reuses (a copy is the machine's memory size). */
  private readonly spare: Snapshot[] = [];
  /** `saved` will not be gone back to again: its memory copy may be reused. */
  release(saved: Saved | undefined): void {
    if (saved?.snapshot && this.spare.length < 64) this.spare.push(saved.snapshot);
  }

  /** Goes back to a saved state. */
  back(saved: Saved): void {
    if (saved.snapshot) {
      restoreSnapshot(this.world.machine, saved.snapshot);
      this.path.length = 0;
      this.path.push(...saved.path);
      this.bounds.length = 0;
      this.bounds.push(...saved.bounds);
      this.restores++;
    } else this.reset(saved.path, saved.bounds);
  }

  /** A fresh machine, then `prefix` replayed (with its latency choices). */
  reset(prefix: readonly number[], bounds: readonly string[] = []): void {
    this.world = buildAnyWorld(this.model, { trace: this.trace });
    this.keys = new StateKeys(this.world);
    this.builds++;
    this.path.length = 0;
    this.bounds.length = 0;
    for (const [i, choice] of prefix.entries()) {
      const error = this.take(choice, bounds[i] ?? '');
      if (error) throw new Error(`replaying a choice that ran before failed at step ${this.path.length}: ${error.message}`);
    }
  }

  /** The options here: the scheduler's enabled events, then the explorer's own (World options). */
  enabled(): readonly ScheduledEvent[] { return worldOptions(this.world); }

  /** Takes option `choice` with latency choices `bounds`; returns a violation when the step threw (the model failed), else undefined. */
  take(choice: number, bounds = ''): Violation | undefined {
    this.path.push(choice);
    this.bounds.push(bounds);
    this.events++;
    try {
      worldTake(this.world, choice, bounds);
    } catch (error) {
      this.lastDraws = this.world.latencies.drawn;
      return { invariant: 'steps-run', message: `the step threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}` };
    } finally {
      this.lastDraws = this.world.latencies.drawn;
    }
    return undefined;
  }

  /** Takes an eager step (isEager): one that draws no latency, or the explorer would lose the other choices. */
  takeEager(choice: number): Violation | undefined {
    const crashed = this.take(choice);
    if (this.lastDraws > 0) throw new Error(`internal: an eager step drew ${this.lastDraws} latency(ies) (${this.path.length}: choice ${choice}); eager steps must draw none`);
    return crashed;
  }

  /** The latency choices of the path, or undefined when no step drew one (the generated machine: none ever). */
  pathBounds(): string[] | undefined { return this.bounds.some((b) => b !== '') ? [...this.bounds] : undefined; }
}

export interface SearchStats {
  /** Distinct states (by key) reached. */
  states: number;
  /** Steps explored (replays not counted). */
  transitions: number;
  /** Quiet states (nothing left to run) among them. */
  quietStates: number;
  /** Complete interleavings (paths from the start to a quiet state): 'states' and 'none' only; none when the graph has a cycle (cyclic). */
  interleavings?: bigint;
  /**
   * A step led back to a state on the search's own path (the state graph has a cycle: a step that changes nothing
   * the key covers, as a poll that finds nothing new). 'full' then explores every step of the state that step was
   * taken from (the stack proviso), 'states' counts no interleavings (there are infinitely many), 'none' refuses.
   */
  cyclic?: true;
  /** Machines built (runs from the start). */
  runs: number;
  /** Events executed, replays included. */
  events: number;
  maxDepth: number;
  /** Every reachable state was visited (false when a bound stopped it: stoppedBy). */
  complete: boolean;
  /** The bounds that stopped the search (empty when complete). */
  stoppedBy: Bound[];
  /** How the search went back to states, and how often it restored a snapshot. */
  restore: Restore;
  restores: number;
  /**
   * Bytes the visited set takes at the end: the exact set's typed arrays (src/explore/visited.ts: its
   * slots, its sleep-set pool and the pool's intern table; a shard's top table too), or the bitstate bit
   * array. Not counted: the transition names' dictionary (it grows with the machine's distinct events, not
   * its states) and, for 'states', the interleaving counts. visitedBytes / states is the bytes per state.
   */
  visitedBytes: number;
  /** Bitstate searches: the bit array's size and hashes, its bytes, the share of bits set, and the expected number of states omitted (src/explore/bitstate.ts). */
  bitstate?: { sizeBits: number; hashes: number; bytes: number; fill: number; expectedOmissions: number };
}

/** What can stop a search before it is complete. */
export type Bound = 'states' | 'depth' | 'time';

export interface FoundViolation extends Violation {
  /** The choices that reach the state where it was seen. */
  path: number[];
  /** Their latency choices, when any step drew one (timed exploration). */
  bounds?: string[];
}

export interface SearchResult {
  stats: SearchStats;
  /** The first violation found of each invariant, in the order found. */
  violations: Map<InvariantId, FoundViolation>;
  /** A shard's search: what a merge needs (SearchOptions.shard). */
  shard?: ShardStats;
}

export interface SearchOptions {
  reduction?: Reduction;
  /** How to go back to a state (default 'snapshot'). */
  restore?: Restore;
  /** Stop after this many distinct states (the result says complete: false). */
  maxStates?: number;
  /** Take no step from a state this many steps from the start (the result says complete: false when one was left). */
  maxDepth?: number;
  /** Asked every few hundred transitions: true stops the search (a time limit; the result says complete: false). */
  shouldStop?: () => boolean;
  /** 'full' only: leave out one of its two reductions (to measure what each buys; both on by default). */
  sleepSets?: boolean;
  eagerSteps?: boolean;
  /** 'full' only: leave out the persistent sets wider than one step (the OS's step with the engines that conflict with it, persistentSet); on by default. */
  persistentSets?: boolean;
  /** 'full' only: the persistent set to use instead of persistentSet's (tests plant a wrong one, to see a comparison catch it). */
  persistentSet?: typeof persistentSet;
  /** Called for every violation at every state the search judges (the result keeps the first of each invariant). */
  onViolation?: (violation: FoundViolation) => void;
  /** Called at each distinct quiet state reached, with its key and the choices that reached it, and their latency choices when any (tests compare the sets). */
  onQuiet?: (key: string, path: readonly number[], bounds?: readonly string[]) => void;
  /** Called at each distinct state the search visits ('states', 'full'), after its eager steps, with the world in that state and the path's latency choices when any (diagnostics, tests; read it, change nothing). */
  onState?: (key: string, path: readonly number[], world: World, bounds?: readonly string[]) => void;
  /** Called every `progressEvery` states, with the estimated share of the search tree done (0..1, see progressEstimate) and the frames on the stack. */
  onProgress?: (stats: SearchStats, progress: { done: number; frontier: number }) => void;
  progressEvery?: number;
  /**
   * Bitstate ("supertrace") mode: keep the visited set as `sizeBits` bits with
   * `hashes` positions per state instead of the keys (src/explore/bitstate.ts).
   * 'full' with sleepSets: false only (a sleep set cannot be kept in bits), no shards.
   * The result is not a proof: stats.bitstate.expectedOmissions says how many states it may have missed.
   */
  bitstate?: { sizeBits: number; hashes?: number };
  /** Search only shard `index` (0-based) of `count`: the subtrees rooted `splitDepth` steps from the start (see the header). 'full' only. */
  shard?: ShardOptions;
}

export interface ShardOptions {
  index: number; count: number; splitDepth: number;
  /**
   * Worker threads of one search (src/explore/shared-visited.ts): a state below the split depth, a subtree
   * root included, is this shard's when it claims it first in this table, instead of round robin; what the
   * claimer's sleep set left out is explored by the worker that meets the state next with it awake.
   */
  shared?: SharedTable;
}

/** The visited table worker threads share (SharedVisited; an interface so a search needs no SharedArrayBuffer). */
export interface SharedTable {
  /** Claims a key with what the claimer's sleep set left out (a mask, see sleptMask): its slot (>= 0) when claimed here, else -(slot + 1). */
  meet(key: string, slept: number): number;
  /** Clears the slept transitions of a met state that `keep` (a mask) has awake; returns them: this worker explores them. */
  narrow(slot: number, keep: number): number;
}

export interface ShardStats {
  /** Subtree roots met (every shard meets the same), and how many were this shard's. */
  roots: number;
  owned: number;
  /** Every distinct state this shard visited (top and its subtrees), by key; those that were quiet; dead ends where a step threw (the state and option they were reached from). */
  keys: Set<string>;
  quietKeys: Set<string>;
  crashes: Set<string>;
}

/** A transition from a frame's state: an option's index, its latency choices, its name (transitionKey) and footprint. */
interface Option { index: number; key: string; footprint?: Footprint; bounds: string }

interface Frame {
  stateKey: string;
  /** The choices from the start to this state, and their latency choices. */
  path: number[];
  bounds: string[];
  options: Option[];
  /** Indexes into options, explored in order. */
  todo: number[];
  next: number;
  /** The sleep set: transitions (event keys) not to explore from here, growing with each sibling explored. */
  sleep: Set<string>;
  /** Complete interleavings found below this state so far ('states', 'none'). */
  paths: bigint;
  /** How to come back here for the second option on (none when there is only one). */
  saved?: Saved;
}


/** Depth-first search of every state reachable from the model's start (see the header for the reductions). */
export function exhaustive(model: AnyModel, options: SearchOptions = {}): SearchResult { return new Exhaustive(model, options).run(); }

/** One exhaustive search (exhaustive): its bounds, the runner, what it visited and found, and the stack of frames. */
class Exhaustive {
  readonly reduction: Reduction;
  readonly maxStates: number;
  readonly maxDepth: number;
  readonly stopped = new Set<Bound>();
  timeUp = false;
  readonly progressEvery: number;
  readonly runner: Runner;
  readonly logs: boolean;
  /**
   * The visited set (src/explore/visited.ts): each state's key with, for 'full', the pool offset of its
   * sleep set, for 'states', an index into `paths` (undefined there until the state is done). 'none' keeps
   * only the keys (data 0), for the count.
   */
  readonly visited = new VisitedTable();
  readonly paths: (bigint | undefined)[] = [];
  readonly violations = new Map<InvariantId, FoundViolation>();
  readonly stats: SearchStats;
  readonly frames: Frame[] = [];
  /** The frame whose state the runner is in, -1 when it went past it. */
  runnerAt = -1;
  readonly useSleep: boolean;
  /** Shards: the top's visited set, apart from the subtrees' (see the header), and what the shard saw. */
  readonly shard?: ShardOptions;
  readonly topVisited = new VisitedTable();
  readonly shardStats?: ShardStats;
  readonly bitstate?: BitstateVisited;

  constructor(model: AnyModel, readonly options: SearchOptions) {
    this.reduction = options.reduction ?? 'full';
    this.maxStates = options.maxStates ?? Infinity;
    this.maxDepth = options.maxDepth ?? Infinity;
    this.progressEvery = options.progressEvery ?? 10_000;
    this.runner = new Runner(model, { restore: options.restore });
    this.logs = this.runner.keys.logsAbstracted;
    this.stats = { states: 0, transitions: 0, quietStates: 0, runs: 0, events: 0, maxDepth: 0, complete: true, stoppedBy: [], restore: this.runner.restore, restores: 0, visitedBytes: 0 };
    if (this.reduction !== 'full') this.stats.interleavings = 0n;
    this.useSleep = this.reduction === 'full' && options.sleepSets !== false;
    if (options.bitstate) {
      if (this.reduction !== 'full' || this.useSleep || options.shard) throw new Error(`bitstate needs the reduction 'full' with sleepSets: false and no shard (it has reduction '${this.reduction}'${this.useSleep ? ', sleep sets on' : ''}${options.shard ? ', a shard' : ''}): a bit per state cannot keep what a state slept nor a shard's keys`);
      this.bitstate = new BitstateVisited(options.bitstate.sizeBits, options.bitstate.hashes);
    }
    if (options.shard) {
      const { index, count, splitDepth } = options.shard;
      if (this.reduction !== 'full') throw new Error(`a shard's search needs the reduction 'full' (it is '${this.reduction}'): the others count interleavings, which a subtree alone cannot`);
      if (!Number.isSafeInteger(count) || count < 1 || !Number.isSafeInteger(index) || index < 0 || index >= count) throw new Error(`shard ${index} of ${count}: expected 0 <= index < count`);
      if (!Number.isSafeInteger(splitDepth) || splitDepth < 1) throw new Error(`shard splitDepth ${splitDepth}: expected an integer of at least 1`);
      this.shard = options.shard;
      this.shardStats = { roots: 0, owned: 0, keys: new Set(), quietKeys: new Set(), crashes: new Set() };
    }
  }

  /**
   * The share of the search tree done, estimated from the stack (Knuth's estimate of a backtrack tree's
   * size, read as a fraction): each frame's finished options count as that share of its parent's part.
   */
  progressEstimate(): number {
    let done = 0, part = 1;
    for (const frame of this.frames) {
      const n = frame.todo.length;
      if (!n) break;
      done += part * Math.max(0, frame.next - 1) / n;
      part /= n;
    }
    return Math.min(1, done);
  }

  record(found: Violation[], path: readonly number[]): void {
    for (const v of found) {
      if (this.violations.has(v.invariant) && !this.options.onViolation) continue;
      const bounds = this.runner.pathBounds();
      const violation = { ...v, path: [...path], ...(bounds ? { bounds } : {}) };
      this.options.onViolation?.(violation);
      if (!this.violations.has(v.invariant)) this.violations.set(v.invariant, violation);
    }
  }
  optionsHere(withFootprints: boolean): Option[] {
    return this.runner.enabled().map((event, index) => ({ index, key: eventKey(event), footprint: withFootprints ? footprint(this.runner.world, event) : undefined, bounds: '' }));
  }
  /** The option named `key` here (a transition with latency choices is its event's option with them). */
  optionNamed(here: Option[], key: string): Option | undefined {
    const bounds = boundsOfKey(key);
    if (!bounds) return here.find((o) => o.key === key);
    const base = here.find((o) => o.key === key.slice(0, key.length - bounds.length - 1));
    return base && { ...base, key, bounds };
  }

  /**
   * A new frame for the state the runner is in; it is saved when a second option will need to come back
   * (or may: where latencies are chosen, taking an option can add its other choices).
   */
  push(frame: Frame): void {
    if (frame.todo.length > 1 || this.runner.world.latencies.bounded) frame.saved = this.runner.save();
    this.frames.push(frame);
    this.runnerAt = this.frames.length - 1;
  }

  /**
   * 'full': the persistent set to explore from the state the runner is in (persistentSet: the OS's step and the
   * engines that conflict with it, while an operation holds the lock), as option indexes; undefined: every option.
   */
  persistent(here: Option[]): number[] | undefined {
    if (this.reduction !== 'full' || this.options.persistentSets === false) return undefined;
    return (this.options.persistentSet ?? persistentSet)(this.runner.world, this.runner.enabled(), here.map((o) => o.footprint!));
  }

  /** 'full': takes the eager steps enabled now, one after the other. Returns a violation when one threw. */
  takeEager(sleep: Set<string>): Violation | undefined {
    if (this.reduction !== 'full' || this.options.eagerSteps === false) return undefined;
    for (;;) {
      const enabled = this.runner.enabled();
      const index = enabled.findIndex((event) => isEager(this.runner.world, event, this.logs));
      if (index < 0) return undefined;
      // The transition runs: a sleeping one of the same name (an OS step can become eager
      // while asleep) names the step after it from now on, which is not asleep.
      sleep.delete(eventKey(enabled[index]));
      const crashed = this.runner.takeEager(index);
      if (crashed) return crashed;
    }
  }

  /** The runner reached a state by `path` with sleep set `sleep`: check it and push its frame if anything is left to explore. Returns the interleavings it adds when nothing was pushed. */
  arrive(sleep: Set<string>, crashed: Violation | undefined): bigint | undefined {
    crashed ??= this.takeEager(sleep);
    const path = [...this.runner.path];
    let visited = this.visited;
    const parent = this.frames[this.frames.length - 1];
    let root = false;
    if (this.shard) {
      // A subtree's root: the first state splitDepth steps or more from the start on its path (see the header).
      if (path.length < this.shard.splitDepth) visited = this.topVisited;
      else if (parent === undefined || parent.path.length < this.shard.splitDepth) {
        root = true;
        if (!this.shard.shared && this.shardStats!.roots++ % this.shard.count !== this.shard.index) return 0n;
        if (this.shard.shared) this.shardStats!.roots++;
        else this.shardStats!.owned++;
      }
    }
    const shared = this.shard?.shared && visited === this.visited ? this.shard.shared : undefined;
    this.stats.maxDepth = Math.max(this.stats.maxDepth, path.length);
    if (crashed) {
      // The step threw: the state is a dead end, reported once (by the state and option it came from: shards agree on those).
      const deadEnd = this.shard ? crashKey(parent, this.runner) : '';
      if (shared && shared.meet(deadEnd, 0) < 0) return 0n;
      this.stats.states++;
      this.shardStats?.crashes.add(deadEnd);
      this.record([crashed], path);
      return 1n;
    }
    const key = this.runner.key();
    if (shared) {
      // Below the split depth of worker threads: the shared table is the visited set (a revisit, this worker's or
      // another's, is met there), and what a sleep set leaves out is kept there (src/explore/shared-visited.ts).
      // The state's enabled events by name, sorted (made only when a mask is: a sleep set, or transitions to explore).
      let names: string[] | undefined;
      const namesHere = (): string[] => (names ??= [...new Set(this.runner.enabled().map(eventKey))].sort());
      let slept = sleep.size === 0 ? 0 : sleptMask(namesHere(), sleep);
      // A sleep set the mask cannot name (a latency choice's transition, or too many transitions): nothing slept.
      if (slept < 0) { sleep.clear(); slept = 0; }
      const met = shared.meet(key, slept);
      if (met < 0) {
        this.closeCycle(key);
        // Met before: explore the slept transitions this worker cleared (narrow), as a revisit does.
        const mine = shared.narrow(-met - 1, slept);
        return mine === 0 ? 0n : this.revisit(key, path, sleep, namesHere().filter((_, bit) => (mine & (1 << bit)) !== 0));
      }
      if (root) this.shardStats!.owned++;
    }
    if (this.reduction === 'none') {
      if (this.frames.some((frame) => frame.stateKey === key)) {
        throw new Error(`the state graph has a cycle (state ${key} reached again on its own path): the search without reduction would not end; search it with the reduction 'states' or 'full'`);
      }
      if (this.visited.find(key) < 0) {
        this.visited.add(key, 0);
        this.stats.states++;
        const quiet = this.runner.enabled().length === 0;
        this.record(checkAlways(this.runner.world), path);
        if (quiet) { this.stats.quietStates++; this.record(checkQuiet(this.runner.world), path); this.options.onQuiet?.(key, path, this.runner.pathBounds()); }
      }
      const here = this.optionsHere(false);
      if (!here.length) return 1n;
      if (path.length >= this.maxDepth) { this.stopped.add('depth'); return 0n; }
      this.push({ stateKey: key, path, bounds: [...this.runner.bounds], options: here, todo: here.map((_, i) => i), next: 0, sleep: new Set(), paths: 0n });
      return undefined;
    }
    if (this.bitstate) {
      // Without sleep sets a revisit adds nothing (see the 'full' branch below: nothing slept, nothing awake).
      if (this.bitstate.testAndSet(key)) { this.closeCycle(key); return 0n; }
    }
    const old = this.bitstate || shared ? -1 : visited.find(key);
    if (old >= 0) {
      if (this.reduction === 'states') {
        const paths = this.paths[visited.data(old)];
        if (paths !== undefined) return paths;
        // A state still on the path (its paths not known yet): a cycle, so infinitely many interleavings.
        this.stats.cyclic = true;
        this.stats.interleavings = undefined;
        return 0n;
      }
      this.closeCycle(key);
      // Sleep sets: explore what the first visit slept but this one does not; keep the intersection.
      const slept = visited.sleepNames(visited.data(old));
      const awake = slept.filter((t) => !sleep.has(t));
      if (!awake.length) return 0n;
      visited.setData(old, visited.sleepSet(slept.filter((t) => sleep.has(t))));
      return this.revisit(key, path, sleep, awake);
    }
    this.stats.states++;
    this.shardStats?.keys.add(key);
    this.options.onState?.(key, path, this.runner.world, this.runner.pathBounds());
    if (this.stats.states % this.progressEvery === 0) {
      this.options.onProgress?.({ ...this.stats, runs: this.runner.builds, events: this.runner.events, restores: this.runner.restores }, { done: this.progressEstimate(), frontier: this.frames.length });
    }
    const here = this.optionsHere(this.reduction === 'full');
    const quiet = here.length === 0;
    this.record(checkAlways(this.runner.world), path);
    if (quiet) { this.stats.quietStates++; this.shardStats?.quietKeys.add(key); this.record(checkQuiet(this.runner.world), path); this.options.onQuiet?.(key, path, this.runner.pathBounds()); }
    if (!this.bitstate) {
      if (this.reduction === 'full') visited.add(key, visited.sleepSet(sleep));
      else { visited.add(key, this.paths.length); this.paths.push(quiet ? 1n : undefined); }
    }
    if (quiet) return 1n;
    if (path.length >= this.maxDepth) { this.stopped.add('depth'); return 0n; }
    const persistent = this.persistent(here);
    const todo = here.filter((o) => !sleep.has(o.key) && (!persistent || persistent.includes(o.index))).map((o) => o.index);
    if (!todo.length) return 0n;
    this.push({ stateKey: key, path, bounds: [...this.runner.bounds], options: here, todo, next: 0, sleep: new Set(sleep), paths: 0n });
    return undefined;
  }

  /**
   * 'full', a state reached again: when it is one on the search's own path, the step just taken closed a cycle, and
   * the state it was taken from explores every step not asleep there (the stack proviso, Peled's C3 in its
   * depth-first form): otherwise a persistent set whose steps all lead round the cycle would leave the other steps
   * of every state on it unexplored for ever. Acyclic machines (every built-in one) never get here.
   */
  closeCycle(key: string): void {
    const from = this.frames[this.frames.length - 1];
    if (!from || !this.frames.some((frame) => frame.stateKey === key)) return;
    this.stats.cyclic = true;
    for (const option of from.options) if (!from.todo.includes(option.index) && !from.sleep.has(option.key)) from.todo.push(option.index);
  }

  /**
   * A state reached again (sleep sets, Godefroid ch. 6): explore the transitions named `awake`, those an earlier
   * visit slept that `sleep` has awake (in this process's visited set, or cleared for this worker in the workers'
   * shared table), with this visit's sleep set.
   */
  revisit(key: string, path: number[], sleep: Set<string>, awake: readonly string[]): bigint | undefined {
    if (path.length >= this.maxDepth) { this.stopped.add('depth'); return 0n; }
    const here = this.optionsHere(true);
    const todo: number[] = [];
    for (const t of awake) {
      const option = this.optionNamed(here, t);
      if (!option) continue;
      if (option.bounds) here.push(option);
      todo.push(here.indexOf(option));
    }
    if (!todo.length) return 0n;
    this.push({ stateKey: key, path, bounds: [...this.runner.bounds], options: here, todo, next: 0, sleep: new Set(sleep), paths: 0n });
    return undefined;
  }

  finishFrame(frame: Frame): void {
    if (this.reduction === 'states') {
      this.paths[this.visited.data(this.visited.find(frame.stateKey))] = frame.paths;
    }
    const parent = this.frames[this.frames.length - 1];
    if (parent) parent.paths += frame.paths;
    else if (this.stats.interleavings !== undefined) this.stats.interleavings += frame.paths;
  }

  /** The search: the start state, then frames until none is left or a bound stops it. */
  run(): SearchResult {
    const rootPaths = this.arrive(new Set(), undefined);
    if (rootPaths !== undefined && this.stats.interleavings !== undefined) this.stats.interleavings += rootPaths;

    while (this.frames.length) {
      const top = this.frames[this.frames.length - 1];
      if (!this.timeUp && this.options.shouldStop && this.stats.transitions % 256 === 0 && this.options.shouldStop()) { this.timeUp = true; this.stopped.add('time'); }
      if (top.next >= top.todo.length || this.stats.states >= this.maxStates || this.timeUp) {
        if (top.next < top.todo.length && !this.timeUp) this.stopped.add('states');
        this.frames.pop();
        this.runnerAt = -1;
        this.runner.release(top.saved);
        this.finishFrame(top);
        continue;
      }
      const option = top.options[top.todo[top.next++]];
      if (this.runnerAt !== this.frames.length - 1) this.runner.back(top.saved ?? { path: top.path, bounds: top.bounds });
      let childSleep = new Set<string>();
      if (this.useSleep) {
        for (const u of top.sleep) {
          const other = top.options.find((o) => o.key === u);
          // Two latency choices of one event are two transitions that never commute.
          if (other && other.index !== option.index && independent(other.footprint!, option.footprint!)) childSleep.add(u);
        }
        top.sleep.add(option.key);
      }
      const crashed = this.runner.take(option.index, option.bounds);
      this.stats.transitions++;
      this.runnerAt = -1;
      // The step drew latencies its bounds did not choose: each other choice of them is a transition of its own from here,
      // explored next, before the options after it. (Appended at the end, a sibling u explored in between would sleep
      // this step in its child, and with it these choices, which no state above u had explored yet: lost states.)
      let at = top.next;
      for (const bounds of otherBounds(option.bounds, this.runner.lastDraws)) {
        const key = transitionKey(option.key.split('#')[0], bounds);
        if (top.sleep.has(key) || top.options.some((o) => o.key === key)) continue;
        top.options.push({ ...option, key, bounds });
        top.todo.splice(at++, 0, top.options.length - 1);
      }
      const paths = this.arrive(childSleep, crashed);
      if (paths !== undefined) top.paths += paths;
    }
    if (this.stopped.size) { this.stats.complete = false; this.stats.stoppedBy = [...this.stopped]; }
    if (this.bitstate) {
      const b = this.bitstate;
      this.stats.bitstate = { sizeBits: b.sizeBits, hashes: b.hashes, bytes: b.bytes, fill: b.setBits / b.sizeBits, expectedOmissions: b.expectedOmissions };
    }
    this.stats.visitedBytes = this.bitstate ? this.bitstate.bytes : this.visited.bytes + (this.shard ? this.topVisited.bytes : 0);
    this.stats.runs = this.runner.builds;
    this.stats.events = this.runner.events;
    this.stats.restores = this.runner.restores;
    return { stats: this.stats, violations: this.violations, ...(this.shardStats ? { shard: this.shardStats } : {}) };
  }
}

/** A dead end's name: the state it was reached from and the option taken there (with its latency choices). */
function crashKey(parent: Frame | undefined, runner: Runner): string {
  if (!parent) return 'start';
  const at = parent.path.length;
  return `${parent.stateKey}/${runner.path[at]}${runner.bounds[at] ? `#${runner.bounds[at]}` : ''}`;
}

export interface ShortestResult {
  /** The shortest schedule that reaches a violation (undefined: none within the bounds), with its latency choices when any. */
  found?: FoundViolation & { all: Violation[] };
  /** Distinct states reached, and expansions (a state is expanded again when reached in fewer steps). */
  states: number;
  expansions: number;
  runs: number;
  complete: boolean;
}

/**
 * The shortest schedule that breaks an invariant: a depth-first search that
 * remembers, for each state, the fewest steps it was reached in, expands a
 * state again only when it is reached in fewer, and cuts every path that
 * cannot beat the shortest violation found so far (or `maxDepth`, the length
 * of one already known). Every state is so expanded at its smallest depth,
 * every violation met at its smallest depth, and the shortest one kept (among
 * equally short ones, the first in the order choices are tried: the same
 * every time). Each step counts, as the step list shows it.
 *
 * `quietOnly` (when a complete search found violations of "quiet" invariants
 * only, so no state breaks an "always" one): the eager steps are taken at
 * once. On every path to a given quiet state the eager steps are the same in
 * number (each signal's two log steps, one resumption per woken thread, one
 * idle tick per engine), and any path can be reordered to take each as soon
 * as it is enabled without changing its length or its end, so the shortest
 * path to a violating quiet state is as short with them taken at once, and
 * far fewer states are expanded.
 * Depth-first keeps only the path's snapshots in memory, where breadth-first
 * would keep a whole frontier of machines (or rebuild each from the start).
 */
export function shortest(model: AnyModel, options: { maxDepth?: number; maxStates?: number; restore?: Restore; quietOnly?: boolean; shouldStop?: () => boolean } = {}): ShortestResult {
  const maxStates = options.maxStates ?? Infinity;
  const runner = new Runner(model, { restore: options.restore });
  const logs = runner.keys.logsAbstracted;
  /** quietOnly: take the eager steps at once (they are counted in the path). */
  const takeEager = (): Violation | undefined => {
    if (!options.quietOnly) return undefined;
    for (;;) {
      const index = runner.enabled().findIndex((event) => isEager(runner.world, event, logs));
      if (index < 0) return undefined;
      const crashed = runner.takeEager(index);
      if (crashed) return crashed;
    }
  };
  // The fewest steps each state was reached in: state keys in a visited table (data: the depth), dead ends by name.
  const depthOf = new VisitedTable();
  const crashDepth = new Map<string, number>();
  let bound = options.maxDepth ?? Infinity; // only paths of at most this many steps are of interest
  let found: ShortestResult['found'];
  let expansions = 0;
  let complete = true;
  let taken = 0;
  const judge = (crashed: Violation | undefined): Violation[] => {
    if (crashed) return [crashed];
    const violations = checkAlways(runner.world);
    if (runner.enabled().length === 0) violations.push(...checkQuiet(runner.world));
    return violations;
  };
  interface Level { path: number[]; bounds: string[]; options: { index: number; bounds: string }[]; next: number; saved?: Saved }
  const stack: Level[] = [];
  /** The runner is at a new state reached by `path`: judge it, and push it when it is worth expanding. */
  const arrive = (crashed: Violation | undefined): void => {
    crashed ??= takeEager();
    const path = [...runner.path];
    if (crashed) {
      const name = `${path.join('.')}:${runner.bounds.join('.')}`;
      const before = crashDepth.get(name);
      if (before !== undefined && before <= path.length) return;
      crashDepth.set(name, path.length);
    } else {
      const key = runner.key();
      const slot = depthOf.find(key);
      if (slot >= 0 && depthOf.data(slot) <= path.length) return;
      if (slot >= 0) depthOf.setData(slot, path.length); else depthOf.add(key, path.length);
    }
    if (depthOf.size + crashDepth.size > maxStates) { complete = false; return; }
    const violations = judge(crashed);
    if (violations.length) {
      if (!found || path.length < found.path.length) {
        const bounds = runner.pathBounds();
        found = { ...violations[0], path: [...path], ...(bounds ? { bounds } : {}), all: violations };
      }
      bound = Math.min(bound, path.length - 1 >= 0 ? path.length - 1 : 0);
      return;
    }
    if (crashed || path.length >= bound) return;
    const count = runner.enabled().length;
    if (!count) return;
    expansions++;
    const choices = Array.from({ length: count }, (_, index) => ({ index, bounds: '' }));
    stack.push({ path, bounds: [...runner.bounds], options: choices, next: 0, saved: count > 1 || runner.world.latencies.bounded ? runner.save() : undefined });
  };
  arrive(undefined);
  while (stack.length) {
    const top = stack[stack.length - 1];
    if (options.shouldStop && ++taken % 256 === 0 && options.shouldStop()) complete = false;
    if (top.next >= top.options.length || top.path.length >= bound || !complete) { stack.pop(); continue; }
    const option = top.options[top.next++];
    const here = runner.path.length === top.path.length && runner.path.every((c, j) => c === top.path[j]) && runner.bounds.every((b, j) => b === top.bounds[j]);
    if (top.next > 1 || !here) runner.back(top.saved ?? { path: top.path, bounds: top.bounds });
    const crashed = runner.take(option.index, option.bounds);
    for (const bounds of otherBounds(option.bounds, runner.lastDraws)) top.options.push({ index: option.index, bounds });
    arrive(crashed);
  }
  return { found, states: depthOf.size + crashDepth.size, expansions, runs: runner.builds, complete };
}

/**
 * A sleep set as the workers' shared table keeps it: bit i for names[i] (a state's enabled events, sorted and
 * distinct, so every worker numbers them alike); -1 when it cannot (a name not among them: a latency choice's
 * transition; more names than a mask holds).
 */
export function sleptMask(names: readonly string[], sleep: ReadonlySet<string>): number {
  if (sleep.size === 0) return 0;
  if (names.length > MASK_TRANSITIONS) return -1;
  let mask = 0;
  for (const name of sleep) {
    const bit = names.indexOf(name);
    if (bit < 0) return -1;
    mask |= 1 << bit;
  }
  return mask;
}
