// Lost wake-ups (NF-10), as a run reports them (machine.lostWakeups()).
//
// A CPU waiter whose value is reached must be woken (NF-10). Between the GPU's
// store and the OS's look the waiter legitimately still waits: the interrupt,
// the doorbell, the DMA completion or the OS operation that tells the OS is on
// its way. So a waiter is lost when its condition holds while none of those is
// pending anywhere in the machine: the OS has heard everything it was going to
// hear, and the waiter still waits.
//
//   kind        when it is seen                          what it means
//   ───────────────────────────────────────────────────────────────────────────────
//   pending     asked (machine.lostWakeups()), with      it waits now and nothing
//               nothing on its way                       on its way will wake it
//   timed out   its timeout fired with its condition     it gave up waiting for a
//               holding and nothing on its way           value that was already there
//
// A timeout that fires while a wake is on its way is a race the caller chose
// (its timeout was shorter than the wake's latency), not a lost wake-up. The
// notifications on their way are the scheduler's events of the kinds below;
// engine ticks, CPU threads and timeouts are new work, not the delivery of a
// value already written. Only reads (GlobalFence.peekValue): nothing changes.
//
// One rule says when a waiter's wake-up is due (dueWaits): wait-all, every fence
// it still waits for is reached; wait-any, one is. A destroyed fence is never
// reached. machine.lostWakeups() (timed out, pending) and machine.stuck() (a
// CPU waiter stuck for a lost wake-up rather than a deadlock) both judge by it,
// and the summary says each lost wake-up of a CPU waiter once, under LOST
// WAKE-UPS (NF-10); the stuck report marks that waiter's line "[lost wake-up]".
// (os.inspect.lostWakeups() is the OS's lower view: every pending entry whose
// value is reached, entry by entry, for the contract checker and the explorer.)

import type { Scheduler } from '../base/scheduler.js';
import type { FenceView, OsInspector } from '../os/inspect.js';

/** A waiter whose value was reached while it waited, with nothing on its way to wake it. */
export interface LostWakeup {
  waiter: string;
  fence: string;
  value: bigint;
  currentValue: bigint;
  /** Set when it timed out so (the virtual time of its timeout); absent: it still waits. */
  timedOutAtNs?: number;
}

/**
 * The events by which the OS still learns of a value already written: an interrupt's delivery (its ISR), a DMA
 * completed interrupt, a doorbell ring's service, a signal's remaining steps (granularity 'step'), an OS operation's
 * next step, a held-back log reader's retry.
 */
const NOTIFICATION_KINDS: ReadonlySet<string> = new Set(['interrupt', 'dma-completed', 'doorbell', 'engine-step', 'os-step', 'log-reader-retry']);

/** Is a notification on its way (a pending event of a NOTIFICATION_KINDS kind)? */
export function notificationInFlight(scheduler: Scheduler): boolean {
  return scheduler.pendingEvents().some((event) => NOTIFICATION_KINDS.has(event.kind));
}

/** A wait entry whose fence was read: the value it waits for and the fence's CurrentValue now. */
export type ReachedWait<W> = W & { current: bigint };

/**
 * The entries by which a waiter's wake-up is due now: wait-all, every entry (when each is reached); wait-any, the
 * reached ones; none when its condition does not hold. The one rule for "this waiter should have been woken".
 */
export function dueWaits<W extends { fence: FenceView; value: bigint }>(mode: 'all' | 'any', waits: readonly W[]): ReachedWait<W>[] {
  const reached = waits.map((w) => ({ ...w, current: w.fence.destroyed ? -1n : w.fence.peekValue() })).filter((w) => w.current >= w.value);
  const holds = mode === 'all' ? reached.length === waits.length && reached.length > 0 : reached.length > 0;
  return holds ? reached : [];
}

/** At most this many timed-out lost wake-ups are kept (the oldest first); more are counted in `dropped`. */
const KEPT = 1024;

/** Watches every wait that times out (Waits.timeoutListeners) and keeps the lost ones. */
export class LostWakeupWatch {
  private readonly timedOut: LostWakeup[] = [];
  /** Timed-out lost wake-ups past the KEPT first. */
  dropped = 0;

  constructor(private readonly os: OsInspector, private readonly scheduler: Scheduler) {
    os.onWaitTimedOut((waiter) => this.onTimeout(waiter));
  }

  private onTimeout(waiter: { label: string; mode: 'all' | 'any'; waits: { fence: FenceView; value: bigint }[] }): void {
    const due = dueWaits(waiter.mode, waiter.waits);
    if (!due.length || notificationInFlight(this.scheduler)) return;
    for (const w of due) {
      if (this.timedOut.length >= KEPT) { this.dropped++; continue; }
      this.timedOut.push({ waiter: waiter.label, fence: w.fence.label, value: w.value, currentValue: w.current, timedOutAtNs: this.scheduler.nowNs });
    }
  }

  /** The timed-out ones so far, then the pending ones (when nothing is on its way): each entry by which its wake-up was due. */
  list(): LostWakeup[] {
    if (notificationInFlight(this.scheduler)) return [...this.timedOut];
    const pending = this.os.pendingWaiterList().flatMap((waiter) => dueWaits(waiter.mode, waiter.waits)
      .map((w) => ({ waiter: waiter.label, fence: w.fence.label, value: w.value, currentValue: w.current })));
    return [...this.timedOut, ...pending];
  }
}

/** One line per lost wake-up, for summaries and reports. */
export function lostWakeupText(lost: LostWakeup): string {
  return `lost wake-up: ${lost.waiter} ${lost.timedOutAtNs === undefined ? 'still waits' : `timed out at ${lost.timedOutAtNs} ns waiting`} for ${lost.fence} >= ${lost.value} though it is ${lost.currentValue}`;
}
