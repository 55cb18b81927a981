// CPU events: KEVENTs of a process (manual reset, a NotificationEvent), and
// D3DKMTWaitForSynchronizationObjectFromCpu with hAsyncEvent, which sets one
// when its wait is satisfied.
//
//   not set ──setEvent (the wait it belongs to was satisfied; VidMm reclaimed memory)──▶ set
//      ▲                                   every thread waiting on it wakes; later waits return at once
//      └──────────────────────────── resetEvent ◀──────────────────────────────────────────┘

import type { Scheduler } from '../base/scheduler.js';
import type { Trace } from '../base/trace.js';
import * as v from '../base/validate.js';
import type { Handles } from './handles.js';
import type { CpuEvent, Process } from './objects.js';
import type { Waits } from './waits.js';

export class CpuEvents {
  constructor(
    private readonly handles: Handles,
    private readonly waits: Waits,
    private readonly scheduler: Scheduler,
    private readonly trace: Trace,
  ) {}

  /** A CPU event of `process`, not set. Returns hEvent. */
  createEvent(process: Process, name: string): number {
    return this.newEvent(process, name).handle;
  }

  /** A new event in `process`'s handle table (the kernel's own, e.g. VidMm's "reclaimed" event). */
  newEvent(process: Process, name: string): CpuEvent {
    const event: CpuEvent = { kind: 'event', handle: process.allocHandle(), name, signaled: false, waiters: [] };
    process.handles.set(event.handle, event);
    return event;
  }

  isEventSet(process: Process, hEvent: unknown): boolean { return this.handles.resolve(process, hEvent, 'event', 'hEvent').signaled; }

  /**
   * Events are manual-reset (a KEVENT NotificationEvent): once set, an event stays set, every thread
   * waiting on it wakes and later waits return at once, until resetEvent clears it. Resetting an
   * event that is not set does nothing; a wait with hAsyncEvent still pending sets it again when satisfied.
   */
  resetEvent(process: Process, hEvent: unknown): void {
    const event = this.handles.resolve(process, hEvent, 'event', 'hEvent');
    if (!event.signaled) return;
    event.signaled = false;
    event.signaledAtNs = undefined;
    this.trace.record('cpu', process.name, 'KEVENT reset', { event: event.name });
  }

  /** Sets an event: its waiters wake. `actor`: who the trace names (none: no trace line, the kernel's own events). */
  setEvent(event: CpuEvent, actor: string | undefined): void {
    if (event.signaled) return;
    event.signaled = true;
    event.signaledAtNs = this.scheduler.nowNs;
    if (actor !== undefined) this.trace.record('cpu', actor, 'KEVENT signaled', { event: event.name });
    for (const wake of event.waiters.splice(0)) wake();
  }

  /**
   * A wait on an event: `wake` runs when it is set, unless it already is (then nothing is kept and
   * `set` is true). Returns the event (read-only for the caller: tools name it).
   */
  waitForEvent(process: Process, hEvent: unknown, wake: () => void): { set: boolean; event: CpuEvent } {
    const event = this.handles.resolve(process, hEvent, 'event', 'hEvent');
    if (event.signaled) return { set: true, event };
    event.waiters.push(wake);
    return { set: false, event };
  }

  /**
   * D3DKMTWaitForSynchronizationObjectFromCpu with hAsyncEvent: returns at once; the kernel sets the
   * event when the wait is satisfied.
   */
  waitWithEvent(process: Process, args: unknown): void {
    const a = v.options(args, 'waitWithEvent(args)', ['objects', 'values', 'waitAny', 'timeoutNs', 'hDevice', 'hAsyncEvent']);
    const { hAsyncEvent, ...rest } = a;
    const event = this.handles.resolve(process, hAsyncEvent, 'event', 'hAsyncEvent');
    this.waits.beginWait(process, rest, `event ${event.name}`, (result) => {
      if (result.status === 'SUCCESS') this.setEvent(event, process.name);
    }, { tag: event, event: event.name });
  }
}
