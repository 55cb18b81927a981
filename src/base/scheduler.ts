// Virtual time. Everything that happens later (an engine step, an interrupt
// delivered, a CPU thread resuming, a timeout) is an event in one queue.
// Nothing reads a wall clock.
//
// An event is plain data: who handles it (`owner`, a handler registered once
// per owner), what it is (`kind`), its arguments (`args`: numbers and
// strings), its virtual time, its scheduling sequence and a tie-break key
// drawn from the seeded Random when it was scheduled. No closure is stored,
// so the queue can be listed, and its next event chosen, from outside:
//
//   enabled()   the events that may run next: every event due at the
//               earliest virtual time, in scheduling order
//   take(i)     runs the i-th of them (a schedule explorer's choice)
//   step()      runs the one the policy picks
//   run(until)  step() until nothing is left (or time would pass `until`)
//   atOrContinue  a handler's own next event: run in place when run() would take it next anyway
//
// The policy (`scheduler.policy`, a SchedulePolicy) is handed enabled() and
// returns the index to take. Without one (the default) the scheduler takes
// the smallest tie-break key among enabled(), i.e. a choice the seed makes,
// straight from its heap; `seededTieBreak` is that same choice as a policy
// object. A schedule explorer (src/explore/) installs its own.
//
// A gate (`scheduler.gate`) holds events back: while it returns false for an
// event, that event is not enabled (it stays pending, in order). The OS's lock
// is one (schedule.granularity 'step': while an OS operation runs its steps,
// only the GPU's own steps and the operation's next step may run). Without a
// gate (the default) nothing is held back.
//
// Untimed (`scheduler.timeless`, machine option schedule.time 'untimed': a
// schedule explorer's mode): every event is scheduled at the current time,
// whatever delay it asks for, and time never moves. Then every pending event
// is enabled at once: each owner still has its own events in its own order
// (an engine one tick at a time, a thread one resumption at a time), so what
// is left is program order and causality; a timeout may fire at any point
// before its wait is satisfied.
//
// So a run is a pure function of the seed, the inputs and, under an explorer,
// its sequence of choices: replaying them reproduces it exactly.
//
// Event kinds (owner → kind: args), documented in docs/ARCHITECTURE.md:
//   <adapter>           engine-tick {engine}                  the engine looks for its next command
//   <adapter>           engine-step {engine}                  the next core step of a signal (granularity 'step')
//   <adapter>           interrupt {engine}                    the ISR runs (interrupt delivered)
//   <adapter>           dma-completed {engine, queue, submissionFenceId}
//   <adapter>/doorbell  doorbell {}                           the scheduler takes its ring's records
//   process <slot>      thread-resume {thread}                a CPU thread starts or continues
//   process <slot>      thread-event-timeout {thread, wait}   a thread's event wait times out
//   dxgkrnl             os-step {}                            an OS operation's next step (schedule.osGranularity 'step')
//   dxgkrnl             wait-timeout {waiter}                 a CPU wait times out
//   dxgkrnl/logs        log-reader-retry {adapter, hHwQueue}  a held-back log reader tries again
//   dxgkrnl/lifetime    deferred-close {}                     closes whose GPU references drained finish
//   dxgkrnl/lifetime    hang-check {}                         GPU waits on destroyed fences nothing can satisfy → reset
//   scenario            fault {index}                         a scenario's injected fault

import { Random } from './rng.js';
import { runsBefore as eventOrder } from './portable.js';
import { WddmError } from './errors.js';

/** Events one run may execute by default (machine option limits.eventsPerRun). */
export const DEFAULT_EVENTS_PER_RUN = 50_000_000;

/** The livelock guard's error: what happened, and which option raises the bound. */
export function eventLimitError(limit: number, nowNs: number): WddmError {
  return new WddmError('INSUFFICIENT_RESOURCES',
    `the run stopped at ${nowNs} ns of virtual time after ${limit} scheduler events: a livelock (a CPU thread or GPU queue that loops ` +
    'without end?) or a longer run than the bound allows; raise the bound with createMachine({ limits: { eventsPerRun } }) ' +
    '(scenario files: machine.limits.eventsPerRun), or run in slices with machine.run(untilNs)',
    { parameter: 'limits.eventsPerRun', value: limit, expected: 'a run that ends within limits.eventsPerRun events' });
}

export type EventArgs = Readonly<Record<string, number | string>>;

export interface ScheduledEvent {
  readonly timeNs: number;
  /** Scheduling order (unique). */
  readonly sequence: number;
  /** Drawn from the seeded Random when scheduled: the default policy runs the smallest first among equal times. */
  readonly tieBreak: number;
  /** The handler that runs it (Scheduler.register). */
  readonly owner: string;
  readonly kind: string;
  readonly args: EventArgs;
  /** For people: traces, errors. */
  readonly label: string;
  cancelled: boolean;
}

export type EventHandler = (event: ScheduledEvent) => void;

/** Scheduler.inPlaceWindow: what decides whether a handler's next event runs in place (atOrContinue). */
export interface InPlaceWindow {
  /** The run's bound. */
  untilNs: number;
  /** Events the run may still take. */
  budget: number;
  /** The earliest queued event's order (Infinity, 0, 0: none). */
  topTimeNs: number;
  topTieBreak: number;
  topSequence: number;
  /** The next sequence number. */
  sequence: number;
}

/** Chooses the next event: `enabled` is scheduler.enabled() (never empty); returns an index into it. */
export interface SchedulePolicy {
  choose(enabled: readonly ScheduledEvent[]): number;
}

/**
 * The scheduler's order: does the event at `timeNs` with `tieBreak` and `sequence` run before `other`? The earlier
 * time first, then the smaller seeded tie-break key, then scheduling order. The heap, the default policy and
 * atOrContinue's in-place test all ask it; its definition is portable.ts's runsBefore, which the core's stretch
 * (assembly/gpu.ts, stretchInPlace) compiles and asks too, of the earliest queued event (InPlaceWindow).
 */
export function runsBefore(timeNs: number, tieBreak: number, sequence: number, other: ScheduledEvent): boolean {
  return eventOrder(timeNs, tieBreak, sequence, other.timeNs, other.tieBreak, other.sequence);
}

/** The default choice as a policy: the smallest seeded tie-break key (scheduling order breaks equal keys). */
export const seededTieBreak: SchedulePolicy = {
  choose(enabled) {
    let best = 0;
    for (let i = 1; i < enabled.length; i++) {
      const e = enabled[i];
      if (runsBefore(e.timeNs, e.tieBreak, e.sequence, enabled[best])) best = i; // enabled() events share one time
    }
    return best;
  },
};

export class Scheduler {
  nowNs = 0;
  private heap: ScheduledEvent[] = [];
  private sequence = 0;
  private readonly handlers = new Map<string, EventHandler>();
  /** Hard bound on events one run() may execute (no unbounded loops): machine option limits.eventsPerRun. */
  maxEventsPerRun = DEFAULT_EVENTS_PER_RUN;
  executed = 0;
  /** Who chooses among enabled() in step() and run(); undefined = the seeded tie-break, taken straight from the heap. */
  policy?: SchedulePolicy;
  /** While run() runs: its bound and events taken. */
  private runUntilNs: number | undefined = undefined;
  private runCount = 0;
  /** May this pending event run now? undefined: every event may (the default). With a gate, step() and run() choose among enabled() (seededTieBreak without a policy). */
  gate?: (event: ScheduledEvent) => boolean;
  /** Untimed (the header): every event is scheduled at the current time, and time stays where it is. */
  timeless = false;

  /** `random` draws every event's tie-break key (the machine passes a stream of its seed). */
  constructor(private readonly random: Random = new Random(1)) {}

  /** The handler of every event whose owner is `owner`. One handler per owner. */
  register(owner: string, handler: EventHandler): void {
    if (this.handlers.has(owner)) throw new Error(`scheduler: owner "${owner}" already has a handler`);
    this.handlers.set(owner, handler);
  }

  at(timeNs: number, owner: string, kind: string, args: EventArgs = {}, label = `${owner} ${kind}`): ScheduledEvent {
    if (!(timeNs >= this.nowNs)) throw new Error(`scheduler: event "${label}" at ${timeNs} ns is before now (${this.nowNs} ns)`);
    if (!this.handlers.has(owner)) throw new Error(`scheduler: event "${label}" names owner "${owner}", which has no handler (Scheduler.register)`);
    if (this.timeless) timeNs = this.nowNs;
    const event: ScheduledEvent = { timeNs, sequence: this.sequence++, tieBreak: this.random.nextU32(), owner, kind, args, label, cancelled: false };
    this.push(event);
    return event;
  }

  /**
   * at() for a handler's own next event: when run() (no policy) would take it next anyway, it is counted
   * as taken now and undefined returned (the handler runs it in place); else queued as at() does.
   */
  atOrContinue(timeNs: number, owner: string, kind: string, args: EventArgs, label: string): ScheduledEvent | undefined {
    if (!(timeNs >= this.nowNs)) throw new Error(`scheduler: event "${label}" at ${timeNs} ns is before now (${this.nowNs} ns)`);
    if (!this.handlers.has(owner)) throw new Error(`scheduler: event "${label}" names owner "${owner}", which has no handler (Scheduler.register)`);
    if (this.timeless) timeNs = this.nowNs;
    const sequence = this.sequence++;
    const tieBreak = this.random.nextU32();
    if (this.runUntilNs !== undefined && this.policy === undefined && this.gate === undefined && timeNs <= this.runUntilNs && this.runCount < this.maxEventsPerRun) {
      this.dropCancelledTop();
      const top = this.heap[0];
      if (top === undefined || runsBefore(timeNs, tieBreak, sequence, top)) {
        this.runCount++;
        this.nowNs = timeNs;
        this.executed++;
        return undefined;
      }
    }
    const event: ScheduledEvent = { timeNs, sequence, tieBreak, owner, kind, args, label, cancelled: false };
    this.push(event);
    return event;
  }

  /**
   * For a handler that runs a stretch of its own next events elsewhere (src/gpu/hardware.ts: the core's
   * engineRunStretch draws each one's sequence and tie-break from `tieBreakRandom` exactly as
   * atOrContinue would): what atOrContinue's in-place test compares against, or undefined when nothing
   * may run in place (outside run(), under a policy or a gate). Fills and returns `window`.
   */
  inPlaceWindow(window: InPlaceWindow): InPlaceWindow | undefined {
    if (this.runUntilNs === undefined || this.policy !== undefined || this.gate !== undefined) return undefined;
    this.dropCancelledTop();
    const top = this.heap[0];
    window.untilNs = this.runUntilNs;
    window.budget = Math.max(0, this.maxEventsPerRun - this.runCount);
    window.topTimeNs = top === undefined ? Infinity : top.timeNs;
    window.topTieBreak = top === undefined ? 0 : top.tieBreak;
    window.topSequence = top === undefined ? 0 : top.sequence;
    window.sequence = this.sequence;
    return window;
  }
  /** The stream atOrContinue and at() draw tie-breaks from (saved and loaded around a stretch). */
  get tieBreakRandom(): Random { return this.random; }
  /**
   * A stretch ran: `inPlace` events were taken in place (counted as executed, as atOrContinue counts
   * them), `sequence` numbers were drawn up to `sequence`, and virtual time is `nowNs`.
   */
  tookInPlace(inPlace: number, sequence: number, nowNs: number): void {
    if (!(nowNs >= this.nowNs) || sequence < this.sequence || inPlace > this.maxEventsPerRun - this.runCount) {
      throw new Error(`scheduler: a stretch ending at ${nowNs} ns (sequence ${sequence}, ${inPlace} in place) does not follow ${this.nowNs} ns (sequence ${this.sequence})`);
    }
    this.runCount += inPlace;
    this.executed += inPlace;
    this.sequence = sequence;
    this.nowNs = nowNs;
  }
  /** Queues an event whose sequence and tie-break a stretch already drew (the one atOrContinue would have queued). */
  queueDrawn(timeNs: number, sequence: number, tieBreak: number, owner: string, kind: string, args: EventArgs, label: string): ScheduledEvent {
    if (!(timeNs >= this.nowNs) || sequence >= this.sequence) throw new Error(`scheduler: event "${label}" at ${timeNs} ns (sequence ${sequence}) was not drawn by a stretch`);
    const event: ScheduledEvent = { timeNs, sequence, tieBreak, owner, kind, args, label, cancelled: false };
    this.push(event);
    return event;
  }

  after(delayNs: number, owner: string, kind: string, args: EventArgs = {}, label?: string): ScheduledEvent {
    return this.at(this.nowNs + Math.max(0, delayNs), owner, kind, args, label);
  }

  cancel(event: ScheduledEvent | undefined): void { if (event) event.cancelled = true; }

  get pending(): number { return this.heap.filter((e) => !e.cancelled).length; }

  /** The events that may run next: every live event due at the earliest time, in scheduling order. */
  enabled(): readonly ScheduledEvent[] {
    this.dropCancelledTop();
    if (!this.heap.length) return [];
    const gate = this.gate;
    if (gate) {
      // The earliest time among the events the gate lets through.
      let timeNs = Infinity;
      for (const e of this.heap) if (!e.cancelled && e.timeNs < timeNs && gate(e)) timeNs = e.timeNs;
      return this.heap.filter((e) => !e.cancelled && e.timeNs === timeNs && gate(e)).sort((a, b) => a.sequence - b.sequence);
    }
    const timeNs = this.heap[0].timeNs;
    return this.heap.filter((e) => !e.cancelled && e.timeNs === timeNs).sort((a, b) => a.sequence - b.sequence);
  }

  /** Every live pending event, due now or later, in scheduling order (tools: an explorer's state, stuck reports). */
  pendingEvents(): ScheduledEvent[] {
    return this.heap.filter((e) => !e.cancelled).sort((a, b) => a.sequence - b.sequence);
  }

  /** Runs the i-th event of enabled() (any policy's choice). Returns it. */
  take(index: number): ScheduledEvent {
    const choices = this.enabled();
    if (!Number.isInteger(index) || index < 0 || index >= choices.length) {
      throw new RangeError(`scheduler.take(${index}): expected an index from 0 to ${choices.length - 1} (${choices.length} enabled event${choices.length === 1 ? '' : 's'})`);
    }
    const event = choices[index];
    this.removeAt(this.heap.indexOf(event));
    this.execute(event);
    return event;
  }

  /** Runs one event, the policy's choice (by default the smallest seeded tie-break key at the earliest time); false when none is left. */
  step(): boolean {
    this.dropCancelledTop();
    if (!this.heap.length) return false;
    if (this.policy || this.gate) this.takeChosen(this.policy ?? seededTieBreak);
    else this.execute(this.removeAt(0));
    return true;
  }

  /** Runs until no event is left, or until virtual time would pass `untilNs`. */
  run(untilNs = Infinity): number {
    const outerUntilNs = this.runUntilNs, outerCount = this.runCount;
    this.runUntilNs = untilNs;
    this.runCount = 0;
    try {
      for (;;) {
        this.dropCancelledTop();
        if (!this.heap.length) break;
        if (this.heap[0].timeNs > untilNs) { this.nowNs = Math.max(this.nowNs, untilNs); break; }
        if (++this.runCount > this.maxEventsPerRun) throw eventLimitError(this.maxEventsPerRun, this.nowNs);
        if (this.policy || this.gate) this.takeChosen(this.policy ?? seededTieBreak);
        else this.execute(this.removeAt(0));
      }
      if (untilNs !== Infinity && this.nowNs < untilNs) this.nowNs = untilNs;
      return this.runCount;
    } finally {
      this.runUntilNs = outerUntilNs;
      this.runCount = outerCount;
    }
  }

  private takeChosen(policy: SchedulePolicy): void {
    const choices = this.enabled();
    if (!choices.length) throw new Error(`scheduler: ${this.pending} event(s) pending but the gate holds every one back (a lock nobody releases)`);
    const index = policy.choose(choices);
    if (!Number.isInteger(index) || index < 0 || index >= choices.length) {
      throw new RangeError(`scheduler policy chose ${index}: expected an index from 0 to ${choices.length - 1} (${choices.length} enabled event${choices.length === 1 ? '' : 's'})`);
    }
    const event = choices[index];
    this.removeAt(this.heap.indexOf(event));
    this.execute(event);
  }

  private execute(event: ScheduledEvent): void {
    this.nowNs = event.timeNs;
    this.executed++;
    this.handlers.get(event.owner)!(event);
  }

  private dropCancelledTop(): void {
    while (this.heap.length && this.heap[0].cancelled) this.removeAt(0);
  }

  private less(a: ScheduledEvent, b: ScheduledEvent): boolean {
    return eventOrder(a.timeNs, a.tieBreak, a.sequence, b.timeNs, b.tieBreak, b.sequence);
  }
  private push(event: ScheduledEvent): void {
    this.heap.push(event);
    this.siftUp(this.heap.length - 1);
  }
  private siftUp(at: number): void {
    const h = this.heap;
    const event = h[at];
    let i = at;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(event, h[parent])) break;
      h[i] = h[parent];
      i = parent;
    }
    h[i] = event;
  }
  private siftDown(at: number): void {
    const h = this.heap;
    const n = h.length;
    const event = h[at];
    let i = at;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && this.less(h[child + 1], h[child])) child++;
      if (!this.less(h[child], event)) break;
      h[i] = h[child];
      i = child;
    }
    h[i] = event;
  }
  /** Removes and returns the heap entry at `index`. */
  private removeAt(index: number): ScheduledEvent {
    const h = this.heap;
    const removed = h[index];
    const last = h.pop()!;
    if (index < h.length) {
      h[index] = last;
      this.siftDown(index);
      this.siftUp(index);
    }
    return removed;
  }
}
