// Virtual time. Everything that happens later (an engine step, an interrupt
// delivered, a CPU thread resuming, a timeout) is an event in one queue
// ordered by (time, sequence): ties run in the order they were scheduled, so
// a run is a pure function of the seed and the inputs. Nothing reads a wall
// clock.

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

export interface ScheduledEvent {
  timeNs: number;
  sequence: number;
  label: string;
  run: () => void;
  cancelled: boolean;
}

export class Scheduler {
  nowNs = 0;
  private heap: ScheduledEvent[] = [];
  private sequence = 0;
  /** Hard bound on events one run() may execute (no unbounded loops): machine option limits.eventsPerRun. */
  maxEventsPerRun = DEFAULT_EVENTS_PER_RUN;
  executed = 0;

  at(timeNs: number, label: string, run: () => void): ScheduledEvent {
    if (!(timeNs >= this.nowNs)) throw new Error(`scheduler: event "${label}" at ${timeNs} ns is before now (${this.nowNs} ns)`);
    const event: ScheduledEvent = { timeNs, sequence: this.sequence++, label, run, cancelled: false };
    this.push(event);
    return event;
  }

  after(delayNs: number, label: string, run: () => void): ScheduledEvent {
    return this.at(this.nowNs + Math.max(0, delayNs), label, run);
  }

  cancel(event: ScheduledEvent | undefined): void { if (event) event.cancelled = true; }

  get pending(): number { return this.heap.filter((e) => !e.cancelled).length; }

  /** Runs one event; false when none is left. */
  step(): boolean {
    while (this.heap.length) {
      const event = this.pop();
      if (event.cancelled) continue;
      this.nowNs = event.timeNs;
      this.executed++;
      event.run();
      return true;
    }
    return false;
  }

  /** Runs until no event is left, or until virtual time would pass `untilNs`. */
  run(untilNs = Infinity): number {
    let count = 0;
    while (this.heap.length) {
      const top = this.heap[0];
      if (top.cancelled) { this.pop(); continue; }
      if (top.timeNs > untilNs) { this.nowNs = Math.max(this.nowNs, untilNs); break; }
      if (++count > this.maxEventsPerRun) throw eventLimitError(this.maxEventsPerRun, this.nowNs);
      this.step();
    }
    if (untilNs !== Infinity && this.nowNs < untilNs) this.nowNs = untilNs;
    return count;
  }

  private less(a: ScheduledEvent, b: ScheduledEvent): boolean {
    return a.timeNs < b.timeNs || (a.timeNs === b.timeNs && a.sequence < b.sequence);
  }
  private push(event: ScheduledEvent): void {
    const h = this.heap;
    let i = h.length;
    h.push(event);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(event, h[parent])) break;
      h[i] = h[parent];
      i = parent;
    }
    h[i] = event;
  }
  private pop(): ScheduledEvent {
    const h = this.heap;
    const top = h[0];
    const last = h.pop()!;
    if (h.length) {
      let i = 0;
      const n = h.length;
      for (;;) {
        let child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && this.less(h[child + 1], h[child])) child++;
        if (!this.less(h[child], last)) break;
        h[i] = h[child];
        i = child;
      }
      h[i] = last;
    }
    return top;
  }
}
