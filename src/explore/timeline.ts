// `explore --replay FILE --timeline out.json`: a schedule as a Perfetto timeline.
//
// The explorer's machine runs in no time (every latency is 0), so the
// timeline's clock is the step number: step n is a slice from n − 1 to n µs on
// the track of whoever took it (an engine, an adapter's interrupt, a CPU
// thread), named by what it did, with the state items it changed as args.
// The fence timeline the simulator itself exports (src/timeline.ts: queued
// events, log entries, interrupts) follows as it is, at virtual time 0.

import { exportTimeline, type ChromeTrace, type ChromeTraceEvent } from '../timeline/timeline.js';
import type { Replay } from './replay.js';

const STEP_US = 1;

/** The actor a step belongs to, from its event name ("gpu0 engine-step {engine=0}" → "gpu0/engine0"). */
function actorOf(event: string, world: Replay['world']): string {
  const [owner] = event.split(' ');
  const engine = /engine=(\d+)/.exec(event)?.[1];
  if (event.includes(' interrupt ')) return `${owner} interrupts`;
  if (engine !== undefined) return `${owner}/engine${engine}`;
  const thread = /thread=(\d+)/.exec(event)?.[1];
  if (thread !== undefined) {
    const process = world.machine.processes.find((p) => event.startsWith(`${p.owner} `));
    return `CPU ${process?.threads[Number(thread)]?.name ?? `thread ${thread}`}`;
  }
  return owner;
}

export function scheduleTimeline(replayed: Replay): ChromeTrace {
  const fences = exportTimeline(replayed.world.machine);
  const pid = 1 + Math.max(0, ...fences.traceEvents.map((e) => e.pid));
  const tids = new Map<string, number>();
  const events: ChromeTraceEvent[] = [
    { name: 'process_name', ph: 'M', ts: 0, pid, tid: 0, args: { name: 'explorer schedule (1 µs = 1 step)' } },
    { name: 'process_sort_index', ph: 'M', ts: 0, pid, tid: 0, args: { sort_index: -1 } },
  ];
  for (const step of replayed.steps) {
    const actor = actorOf(step.event, replayed.world);
    let tid = tids.get(actor);
    if (tid === undefined) {
      tids.set(actor, (tid = tids.size + 1));
      events.push({ name: 'thread_name', ph: 'M', ts: 0, pid, tid, args: { name: actor } });
      events.push({ name: 'thread_sort_index', ph: 'M', ts: 0, pid, tid, args: { sort_index: tid } });
    }
    const args: Record<string, string | number> = { step: step.number, choice: `${step.choice} of ${step.enabled}`, event: step.event };
    for (const key of step.changed) args[key] = step.state[key];
    for (const [i, v] of step.violations.entries()) args[`violated ${i + 1}`] = `${v.invariant}: ${v.message}`;
    events.push({ name: step.description, ph: 'X', ts: (step.number - 1) * STEP_US, dur: STEP_US, pid, tid, cat: 'step', args });
  }
  return {
    traceEvents: [...events, ...fences.traceEvents],
    displayTimeUnit: 'ns',
    otherData: { ...fences.otherData, explorerSteps: replayed.steps.length },
  };
}
