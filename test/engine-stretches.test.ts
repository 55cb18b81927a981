// An engine runs stretches of commands in place (Scheduler.atOrContinue, src/gpu/hardware.ts): when
// the scheduler would take the engine's next tick next anyway, no event is queued for it. The run must
// be the same run, event for event: these tests run one machine through machine.run() (stretches) and
// the same machine through scheduler.step() one event at a time (never in place), and compare.
import { describe, it, expect } from 'vitest';
import { createMachine, type Machine } from '../src/index.js';
import { Scheduler } from '../src/base/scheduler.js';
import { Random } from '../src/base/rng.js';

interface Outcome {
  values: bigint[];
  wakes: string[];
  summary: string;
  trace: string;
  nowNs: number;
  executed: number;
  continued: number;
}

/**
 * Two engines, four queues, three fences: signals, GPU waits on the other engine's fences (blocked,
 * unblocked by the run-list rescan), work, CPU waiters on many values (interrupts, collapsing), jitter.
 */
async function runWorkload(drive: 'run' | 'step', trace: boolean, seed: number): Promise<Outcome> {
  const machine: Machine = await createMachine({ seed, trace, timing: { jitter: 0.4 }, adapters: [{ engines: 2 }] });
  const app = machine.createProcess('app');
  const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
  const fences = [0, 1, 2].map(() => app.createNativeFence({ hDevice, initialValue: 0n }).hSyncObject);
  const queues = [0, 1, 0, 1].map((engine) => app.createHwQueue({ hDevice, engine, nativeProgressFence: false }).hHwQueue);
  const wakes: string[] = [];
  for (let k = 1; k <= 12; k++) {
    const fence = k % 3;
    const value = BigInt(k * 3);
    app.waitAsync({ objects: [fences[fence]], values: [value] }, `w${k}`).then((r) => wakes.push(`w${k} ${r.status} at ${r.timeNs} ns`));
  }
  for (let round = 1; round <= 40; round++) {
    const value = BigInt(round);
    app.submit({ hHwQueue: queues[0], commands: [{ signal: { hSyncObject: fences[0], value } }, { work: { durationNs: 150 } }] });
    app.submit({ hHwQueue: queues[1], commands: [{ wait: { hSyncObject: fences[0], value } }, { signal: { hSyncObject: fences[1], value } }] });
    app.submit({ hHwQueue: queues[2], commands: [{ signal: { hSyncObject: fences[2], value } }] });
    app.submit({ hHwQueue: queues[3], commands: [{ wait: { hSyncObject: fences[2], value } }, { work: { durationNs: 90 } }] });
  }
  // Count the ticks run in place (the wrapped method is the scheduler's own, called as before).
  const scheduler = machine.scheduler;
  const atOrContinue = scheduler.atOrContinue.bind(scheduler);
  let continued = 0;
  scheduler.atOrContinue = (...args) => {
    const event = atOrContinue(...args);
    if (event === undefined) continued++;
    return event;
  };
  if (drive === 'run') machine.run();
  else while (scheduler.step()) { /* one event at a time */ }
  await new Promise((resolve) => setImmediate(resolve));
  return {
    values: fences.map((h) => app.readFenceValue(h)),
    wakes,
    summary: machine.summaryText(),
    trace: machine.trace.text(),
    nowNs: scheduler.nowNs,
    executed: scheduler.executed,
    continued,
  };
}

describe('engine stretches (a tick the scheduler would take next anyway runs in place)', () => {
  it('NF-10 machine.run() with stretches ends exactly as the same machine stepped event by event: values, counters, wakes in order, trace', async () => {
    for (const seed of [3, 11]) {
      const stepped = await runWorkload('step', true, seed);
      const stretched = await runWorkload('run', true, seed);
      expect(stepped.continued).toBe(0);
      expect(stretched.continued).toBeGreaterThan(20);
      expect(stretched.values).toEqual([40n, 40n, 40n]);
      expect(stretched.values).toEqual(stepped.values);
      expect(stretched.wakes).toHaveLength(12);
      expect(stretched.wakes).toEqual(stepped.wakes);
      expect(stretched.summary).toBe(stepped.summary);
      expect(stretched.trace).toBe(stepped.trace);
      expect(stretched.nowNs).toBe(stepped.nowNs);
      expect(stretched.executed).toBe(stepped.executed);
    }
  });

  it('NF-10 with tracing off the stretches run too, and the run is still the stepped one: values, counters, wakes in order', async () => {
    const stepped = await runWorkload('step', false, 5);
    const stretched = await runWorkload('run', false, 5);
    expect(stretched.continued).toBeGreaterThan(20);
    expect(stretched.values).toEqual(stepped.values);
    expect(stretched.wakes).toEqual(stepped.wakes);
    expect(stretched.summary).toBe(stepped.summary);
    expect(stretched.nowNs).toBe(stepped.nowNs);
    expect(stretched.executed).toBe(stepped.executed);
  });

  it('NF-10 atOrContinue runs an event in place only inside run(), with no policy, within the bound, when it would be taken next', () => {
    const scheduler = new Scheduler(new Random(9));
    const ran: string[] = [];
    scheduler.register('x', (event) => ran.push(event.label));
    // Outside run(): always queued.
    expect(scheduler.atOrContinue(0, 'x', 'k', {}, 'outside')).toBeDefined();
    scheduler.register('self', (event) => {
      ran.push(event.label);
      if (event.label !== 'first') return;
      // A queued event at 10 ns comes first: at 20 ns this one must be queued; at 5 ns it runs in place.
      expect(scheduler.atOrContinue(20, 'self', 'k', {}, 'later')).toBeDefined();
      expect(scheduler.atOrContinue(5, 'self', 'k', {}, 'sooner')).toBeUndefined();
      expect(scheduler.nowNs).toBe(5);
    });
    scheduler.at(1, 'self', 'k', {}, 'first');
    scheduler.at(10, 'x', 'k', {}, 'at 10');
    scheduler.register('bounded', (event) => {
      ran.push(event.label);
      // Past the run's bound (30 ns): queued, and the run stops before it.
      expect(scheduler.atOrContinue(50, 'x', 'k', {}, 'past the bound')).toBeDefined();
    });
    scheduler.at(12, 'bounded', 'k', {}, 'bounded');
    const count = scheduler.run(30);
    expect(ran).toEqual(['outside', 'first', 'at 10', 'bounded', 'later']);
    // Counted as taken: outside, first, sooner (in place), at 10, bounded, later.
    expect(count).toBe(6);
    expect(scheduler.executed).toBe(6);
    expect(scheduler.nowNs).toBe(30);
    // A policy (a schedule explorer) chooses every event: nothing runs in place.
    scheduler.policy = { choose: () => 0 };
    scheduler.register('policy', () => { expect(scheduler.atOrContinue(31, 'x', 'k', {}, 'under a policy')).toBeDefined(); });
    scheduler.at(30, 'policy', 'k', {}, 'policy');
    scheduler.run(40);
    expect(ran).toEqual(['outside', 'first', 'at 10', 'bounded', 'later', 'under a policy']);
    expect(() => scheduler.atOrContinue(1, 'x', 'k', {}, 'in the past')).toThrow(/before now/);
  });
});
