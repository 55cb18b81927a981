// Which enabled steps are independent: the sleep-set reduction's one input.
//
// A step's footprint, read at the state where it is enabled, names what it
// reads and writes:
//
//   resource         what it is
//   cv:<a>.<f>       fence f's CurrentValue word on adapter a
//   mv:<a>.<f>       fence f's MonitoredValue word (memory)
//   wb:<a>.<e>       engine e's write buffer (and which queue it runs)
//   irq:<a>.<e>      engine e's interrupt line, pending list and ISR event
//   q:<a>.<id>       hardware queue id's ring position
//   log:<a>.<id>     hardware queue id's log buffers and log write buffer
//   life:<a>.<f>     the OS's count of GPU commands in flight naming fence f
//   thread:<t>       CPU thread t of the explorer's process
//   *                everything above except threads (an OS operation)
//
//   step                                        reads        writes
//   engine-tick, head is a signal (step 1)      -            wb, q (cv of a store still
//                                                            buffered: it drains first)
//   engine-tick, nothing to run                 q of the engine's queues  -
//   engine-step 2 logWriteEntry, 3 logAdvance   -            log
//   engine-step 4 engineDrain                   -            wb, cv
//   engine-step 5 cmpSignalCheck (+ the end of  mv, cv       irq, life (and * when a
//     the command: listeners, run-list rescan)               queue waits on the fence)
//   a waiter thread resuming after its wait     -            thread
//   anything else: a thread starting its wait,  *            *
//     a CPU signal, an interrupt delivered (the
//     OS serves it), other commands, doorbells
//
// Two steps are independent at a state when neither writes what the other
// reads or writes. Then running them in either order from that state reaches
// states with the same key (src/explore/state.ts: the order events were
// scheduled in is not part of it) and neither disables the other (an event
// is only cancelled by a step that writes its resource). An OS operation
// never touches a thread whose resumption is already enabled: that thread's
// wait is over. docs/EXPLORER.md gives the argument step by step.

import type { ScheduledEvent } from '../base/scheduler.js';
import type { World } from './model.js';

export interface Footprint { reads: readonly string[]; writes: readonly string[] }

const EVERYTHING: Footprint = { reads: ['*'], writes: ['*'] };

export function footprint(world: World, event: ScheduledEvent): Footprint {
  const machine = world.machine;
  const a = machine.adapters.findIndex((x) => x.name === event.owner);
  if (a >= 0) {
    const adapter = machine.adapters[a];
    if (adapter.hardware.granularity !== 'step' || adapter.state !== 'running') return EVERYTHING;
    const core = adapter.core;
    const e = event.args.engine as number;
    if (event.kind === 'engine-tick') {
      const queue = adapter.hardware.peekRunnable(e);
      if (!queue) {
        const mine = [...adapter.hardware.queues.values()].filter((q) => q.engine === e).map((q) => `q:${a}.${q.id}`);
        return { reads: mine, writes: [] };
      }
      if (core.queueHeadOp(queue.id) !== machine.layout.opSignal) return EVERYTHING;
      const writes = [`wb:${a}.${e}`, `q:${a}.${queue.id}`];
      const buffered = core.enginePendingWrite(e);
      if (buffered) writes.push(`cv:${a}.@${buffered}`);
      return { reads: [], writes };
    }
    if (event.kind === 'engine-step') {
      const signal = adapter.hardware.signalInFlight(e);
      if (!signal) return { reads: [], writes: [] };
      const fence = `${a}.@${core.fenceCurrentValueAddress(signal.fence)}`;
      switch (signal.phase) {
        case 'log-entry': case 'log-advance': return { reads: [], writes: [`log:${a}.${signal.queue.id}`] };
        case 'drain': return { reads: [], writes: [`wb:${a}.${e}`, `cv:${fence}`] };
        case 'cmp-check': {
          if (adapter.hardware.blockedQueues() > 0) return EVERYTHING;
          return { reads: [`mv:${fence}`, `cv:${fence}`], writes: [`irq:${a}.${e}`, `life:${fence}`] };
        }
        default: return EVERYTHING;
      }
    }
    return EVERYTHING;
  }
  if (event.owner === `process ${world.process.kernel.slot}` && event.kind === 'thread-resume') {
    const thread = world.process.threads[event.args.thread as number];
    if (thread && thread.state === 'blocked' && thread.resumeWith !== undefined && world.waiters.some((w) => w.thread === thread)) {
      return { reads: [], writes: [`thread:${thread.index}`] };
    }
  }
  return EVERYTHING;
}

/** No write of one meets a read or write of the other ("*" meets every resource but a thread's). */
export function independent(x: Footprint, y: Footprint): boolean {
  return !conflicts(x.writes, y.writes) && !conflicts(x.writes, y.reads) && !conflicts(y.writes, x.reads);
}

function conflicts(writes: readonly string[], other: readonly string[]): boolean {
  for (const w of writes) {
    for (const o of other) {
      if (w === o) return true;
      if ((w === '*' && !o.startsWith('thread:')) || (o === '*' && !w.startsWith('thread:'))) return true;
    }
  }
  return false;
}

/**
 * Steps the full reduction takes as soon as they are enabled, exploring no
 * alternative (a persistent set of one step): each is independent of every
 * other step, stays enabled until taken, and changes nothing an "always"
 * invariant reads, so any interleaving is equivalent to one that takes it at
 * once. They are:
 *   - a signal's log steps (2 logWriteEntry, 3 logAdvance) when the logs are
 *     left out of the state (no optimized interrupt: only the timeline reads them);
 *   - a waiter thread resuming after its wait (it only ends its own thread);
 *   - an engine tick that finds nothing to run while none of the engine's
 *     queues is blocked (nothing the explorer's machine does gives it work later).
 */
export function isEager(world: World, event: ScheduledEvent, logsAbstracted: boolean): boolean {
  const machine = world.machine;
  const a = machine.adapters.findIndex((x) => x.name === event.owner);
  if (a >= 0) {
    const adapter = machine.adapters[a];
    if (adapter.hardware.granularity !== 'step' || adapter.state !== 'running') return false;
    const e = event.args.engine as number;
    if (event.kind === 'engine-step') {
      const phase = adapter.hardware.signalInFlight(e)?.phase;
      return logsAbstracted && (phase === 'log-entry' || phase === 'log-advance');
    }
    if (event.kind === 'engine-tick') {
      if (adapter.hardware.peekRunnable(e)) return false;
      return [...adapter.hardware.queues.values()].every((q) => q.engine !== e || adapter.core.queueState(q.id) !== machine.layout.queueStateBlocked);
    }
    return false;
  }
  const f = footprint(world, event);
  return f.reads.length === 0 && f.writes.length === 1 && f.writes[0].startsWith('thread:');
}
