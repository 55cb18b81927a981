// Two machines in one process share nothing: the model keeps no state at module level (issue 29). A workload
// of CPU signals and waits (promises, callbacks, threads, timeouts), GPU submissions, handles made and closed
// and device removal runs on each machine alone, then on two machines interleaved call by call and event by
// event, in both orders; each machine's trace, summary, wake order (callbacks against promises), stuck report
// and handle-table stamps must be what it was alone. Without a trace (the OS's short wait path), everything the
// host walk of the race explorer sees must be too (a cache one machine shares with another shows there).
import { createHash } from 'node:crypto';
import { describe, it, expect } from 'vitest';
import { createMachineSync, type Machine, type WaitResult } from '../src/index.js';
import { hostWalkLines } from '../src/explore/state.js';
import { processOf } from './helpers.js';

interface Run {
  machine: Machine;
  /** What the workload saw, in order (wakes, results, errors). */
  log: string[];
  /** The workload as steps: each one API call. */
  steps: (() => void)[];
}

/** The workload on a new machine (seed `seed`), as steps to interleave with another machine's. */
function workload(seed: number, trace: boolean): Run {
  const machine = createMachineSync({ seed, trace, adapters: [{ name: 'gpu0', engines: 2 }, { name: 'gpu1', engines: 1 }] });
  const log: string[] = [];
  const app = machine.createProcess('app');
  const other = machine.createProcess('other');
  const d0 = app.createDevice({ hAdapter: app.openAdapter(0) });
  const d1 = app.createDevice({ hAdapter: app.openAdapter(1) });
  const od = other.createDevice({ hAdapter: other.openAdapter(0) });
  const fences = [app.createNativeFence({ hDevice: d0 }).hSyncObject, app.createNativeFence({ hDevice: d0, name: 'named' }).hSyncObject,
    app.createNativeFence({ hDevice: d1 }).hSyncObject];
  const shared = app.createNativeFence({ hDevice: d0, flags: { shared: true } }).hSyncObject;
  const q = app.createHwQueue({ hDevice: d0, engine: 0, name: 'render' });
  const note = (name: string) => (r: WaitResult) => { log.push(`${name} ${r.status} ${r.immediate} ${r.timeNs}`); };
  const attempt = (name: string, call: () => unknown) => {
    try { call(); log.push(`${name} ok`); } catch (error) { log.push(`${name} ${(error as Error).message}`); }
  };
  let value = 0n;
  const calls: (() => void)[] = [
    () => { void app.waitAsync({ objects: [fences[0]], values: [3n] }, 'p3').then(note('p3')); },
    () => app.waitWithCallback({ objects: [fences[0]], values: [2n] }, note('c2')),
    // The same caller's next wait (label and owner as the last: a wait the OS may file with the last one's).
    () => app.waitWithCallback({ objects: [fences[0]], values: [1n] }, note('c1')),
    () => app.waitWithCallback({ objects: [fences[1], fences[2]], values: [1n, 1n], waitAny: true }, note('any')),
    () => app.waitWithCallback({ objects: [fences[2]], values: [9n], timeoutNs: 5_000 }, note('timed')),
    () => attempt('signal bad', () => app.signal({ objects: [fences[0]], values: [-1n] })),
    () => app.createThread('t', function* (cpu) { const r = yield cpu.wait({ objects: [fences[1]], values: [2n] }); log.push(`thread ${r.status}`); }),
    () => app.submit({ hHwQueue: q.hHwQueue, commands: [{ work: { durationNs: 700 } }, { signal: { hSyncObject: fences[0], value: ++value } }, { signal: { hSyncObject: fences[0], value: ++value } }] }),
    () => app.signal({ objects: [fences[1]], values: [1n] }),
    () => { const nt = app.shareObject(shared); other.openNativeFenceFromNtHandle({ hNtHandle: app.duplicateHandle(nt, other), hDevice: od }); app.closeHandle(nt); },
    () => { const h = app.createNativeFence({ hDevice: d0 }).hSyncObject; app.destroySynchronizationObject(h); },
    () => app.signal({ objects: [fences[0], fences[1]], values: [3n, 2n] }),
    () => app.waitWithCallback({ objects: [fences[0]], values: [3n] }, note('at once')),
    // A promise settled, then a callback due, in one call: the callback comes after the promise's handler (a queue of
    // due callbacks shared with a machine that made one due earlier in this job would run it before).
    () => { void app.waitAsync({ objects: [fences[0]], values: [0n] }).then(note('p0')); app.waitWithCallback({ objects: [fences[0]], values: [0n] }, note('c0')); },
    () => machine.removeDevice('gpu1', 'test'),
  ];
  // Without a trace, what the host walk sees after each call too (a waiter's record may be gone by the end).
  const walk = () => { if (!trace) log.push(`walk ${createHash('sha256').update(hostWalkLines(machine, 1e6).join('\n')).digest('hex')}`); };
  const steps = calls.map((c, i) => () => { log.push(`call ${i}`); c(); walk(); });
  return { machine, log, steps };
}

/** Runs runs' steps, one of each in turn, then their schedulers an event at a time in turn, then awaits the callbacks. */
async function interleaved(runs: Run[]): Promise<void> {
  const longest = Math.max(...runs.map((r) => r.steps.length));
  for (let i = 0; i < longest; i++) {
    for (const r of runs) {
      r.steps[i]?.();
      r.machine.scheduler.step(); // an event of each between calls
    }
    await Promise.resolve(); // deferred callbacks between calls, as a caller's microtasks would let them run
  }
  let busy = true;
  while (busy) {
    busy = false;
    for (const r of runs) if (r.machine.scheduler.step()) busy = true;
  }
  await new Promise((resolve) => setImmediate(resolve));
}

/** Everything a machine shows of its course (and, without a trace, what the race explorer's host walk sees). */
function outcome(r: Run): string[] {
  const stamps = r.machine.processes.map((p) => `${processOf(p).handles.editStamp}/${processOf(p).ntHandles.editStamp}`);
  const shown = [...r.log, r.machine.summaryText(), JSON.stringify(r.machine.stuck()), `stamps ${stamps.join(' ')}`];
  return r.machine.trace.enabled ? [...shown, r.machine.trace.text()] : [...shown, ...hostWalkLines(r.machine, 1e6)];
}

describe('two machines in one process share nothing', () => {
  it.each([true, false])('each of two machines run interleaved, call by call and event by event, takes the course it takes alone (trace %s)', async (trace) => {
    const alone: string[][] = [];
    for (const seed of [1, 2]) {
      const r = workload(seed, trace);
      await interleaved([r]);
      alone.push(outcome(r));
    }
    // The workload exercised what it is for: wakes of every kind, a timeout, a refusal, a removal.
    const text = alone[0].join('\n');
    for (const expected of [/c2 SUCCESS false/, /c1 SUCCESS false/, /p3 SUCCESS false/, /any SUCCESS false/, /timed (TIMEOUT|DEVICE_REMOVED)/, /thread SUCCESS/, /signal bad values\[0\]/, /at once SUCCESS true/, /p0 SUCCESS true[^]*c0 SUCCESS true/, /BUG CHECK|device removal|DEVICE_REMOVED|removed/]) {
      expect(text).toMatch(expected);
    }
    for (const order of [[1, 2], [2, 1]]) {
      const runs = order.map((seed) => workload(seed, trace));
      await interleaved(runs);
      runs.forEach((r, i) => expect(outcome(r), `seed ${order[i]} beside seed ${order[1 - i]}`).toEqual(alone[order[i] - 1]));
    }
  });
});
