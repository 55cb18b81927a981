import { describe, it, expect } from 'vitest';
import { runDemo } from '../src/demo.js';
import { Random, createMachine, type Machine } from '../src/index.js';
import { Scheduler, type ScheduledEvent } from '../src/base/scheduler.js';

/** The model's trace lines without the first record (the one that prints the seed itself). */
const modelLines = (m: Machine) => m.trace.text().split('\n').filter((line) => !/ created seed=/.test(line));

describe('determinism and the seed', () => {
  it('same seed and inputs give a byte-identical trace; another seed gives another interleaving and timing of the same workload', async () => {
    const a = await runDemo(5);
    const b = await runDemo(5);
    expect(JSON.stringify(a.trace.json())).toBe(JSON.stringify(b.trace.json()));
    expect(a.trace.text()).toBe(b.trace.text());
    expect(a.summaryText()).toBe(b.summaryText());
    // Seeds 5 and 6: not only the printed seed differs, the model's own events do (order at equal times, jittered latencies) ...
    const c = await runDemo(6);
    const [linesA, linesC] = [modelLines(a), modelLines(c)];
    expect(linesA.length).toBeGreaterThan(50);
    expect(linesC).not.toEqual(linesA);
    expect(linesC.filter((line, i) => line !== linesA[i]).length).toBeGreaterThan(5);
    // ... while the workload does the same work with the same outcome.
    for (const m of [a, c]) {
      expect(m.summary().os).toMatchObject({ waitersWoken: 1, waitsSatisfiedAtOnce: 1, waitsTimedOut: 1, spuriousInterrupts: 0 });
      expect(m.summary().adapters[0]).toMatchObject({ gpuSignals: 12, interruptsRaised: 1 });
    }
  });

  it('with exact timing (jitter 0) the seed still chooses the order of events due at the same time; the same seed the same order', async () => {
    const traces = new Map<number, string[]>();
    for (const seed of [1, 2, 3, 1]) {
      const m = await runDemo(seed, { timing: { jitter: 0 } });
      const lines = modelLines(m);
      if (traces.has(seed)) expect(lines).toEqual(traces.get(seed));
      traces.set(seed, lines);
      // The machine records the timing it ran with.
      expect(m.trace.find({ kind: 'machine', name: 'created' })[0].args.jitter).toBe(0);
    }
    const distinct = new Set([...traces.values()].map((lines) => lines.join('\n')));
    expect(distinct.size).toBeGreaterThan(1);
    // Reordering only: the same events happen at the same times, only their order among equals differs.
    const sorted = (lines: string[]) => [...lines].sort();
    expect(sorted(traces.get(2)!)).toEqual(sorted(traces.get(1)!));
  });

  it('the scheduler offers every event due at the earliest time (enabled), runs the one chosen (take), and by default the seed\'s choice', () => {
    const orderOf = (seed: number) => {
      const s = new Scheduler(new Random(seed));
      const ran: string[] = [];
      s.register('test', (e) => ran.push(`${e.kind}${e.args.n}`));
      for (let n = 0; n < 6; n++) s.at(10, 'test', 'tie', { n });
      s.at(20, 'test', 'later', { n: 0 });
      s.run();
      return ran;
    };
    const one = orderOf(1);
    expect(orderOf(1)).toEqual(one); // the same seed, the same order
    expect([...one].sort()).toEqual(['later0', 'tie0', 'tie1', 'tie2', 'tie3', 'tie4', 'tie5']);
    expect(one.at(-1)).toBe('later0'); // time first: only ties are the seed's to order
    const orders = new Set([1, 2, 3, 4, 5, 6, 7, 8].map((seed) => orderOf(seed).join(',')));
    expect(orders.size).toBeGreaterThan(4);

    // An explorer's view: the enabled events are plain data; take(i) runs exactly that one.
    const s = new Scheduler(new Random(9));
    const ran: ScheduledEvent[] = [];
    s.register('gpu0', (e) => { ran.push(e); if (e.kind === 'tick' && e.args.engine === 0) s.after(0, 'gpu0', 'tick', { engine: 2 }); });
    s.at(5, 'gpu0', 'tick', { engine: 0 });
    s.at(5, 'gpu0', 'tick', { engine: 1 });
    const late = s.at(7, 'gpu0', 'tick', { engine: 3 });
    expect(s.enabled().map((e) => [e.timeNs, e.owner, e.kind, e.args.engine])).toEqual([[5, 'gpu0', 'tick', 0], [5, 'gpu0', 'tick', 1]]);
    expect(JSON.parse(JSON.stringify(s.enabled()[1]))).toMatchObject({ timeNs: 5, owner: 'gpu0', kind: 'tick', args: { engine: 1 } });
    expect(s.take(1).args.engine).toBe(1);
    expect(s.nowNs).toBe(5);
    expect(s.take(0).args.engine).toBe(0);
    expect(s.enabled().map((e) => e.args.engine)).toEqual([2]); // scheduled by the handler, due now
    expect(() => s.take(1)).toThrow(/expected an index from 0 to 0 \(1 enabled event\)/);
    s.take(0);
    s.cancel(late);
    expect(s.enabled()).toEqual([]);
    expect(s.step()).toBe(false);
    expect(ran.map((e) => e.args.engine)).toEqual([1, 0, 2]);
    expect(() => s.at(9, 'nobody', 'tick')).toThrow(/owner "nobody", which has no handler/);
  });

  it('timing.jitter stretches every command time and interrupt latency by a seeded 0 to jitter fraction; 0 keeps them exact; other values are refused', async () => {
    const spacing = async (seed: number, jitter: number) => {
      const machine = await createMachine({ seed, timing: { commandNs: 1000, interruptLatencyNs: 10_000, jitter } });
      const app = machine.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const f = app.createNativeFence({ hDevice });
      const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
      for (let v = 1n; v <= 10n; v++) void app.waitAsync({ objects: [f.hSyncObject], values: [v * 20n] }); // a raise every 20 signals
      app.submit({ hHwQueue: q.hHwQueue, commands: Array.from({ length: 200 }, (_, i) => ({ signal: { hSyncObject: f.hSyncObject, value: BigInt(i + 1) } })) });
      machine.run();
      const signals = machine.trace.find({ kind: 'gpu', name: 'signal' }).map((e) => e.timeNs);
      const raised = machine.trace.find({ kind: 'cmp', name: 'interrupt raised' }).map((e) => e.timeNs);
      const delivered = machine.trace.find({ kind: 'interrupt' }).map((e) => e.timeNs);
      expect(machine.os.inspect.pendingWaiters).toBe(0);
      // A waiter every 20 values: each interrupt belongs to the first raise after the interrupt before it
      // (later signals before its delivery raise again and join it).
      expect(delivered).toHaveLength(10);
      const latencies = delivered.map((t, i) => t - raised.find((r) => r > (i ? delivered[i - 1] : -1))!);
      return { commands: signals.slice(1).map((t, i) => t - signals[i]), latencies };
    };
    const exact = await spacing(1, 0);
    expect(new Set(exact.commands)).toEqual(new Set([1000]));
    expect(new Set(exact.latencies)).toEqual(new Set([10_000]));
    const [one, two] = [await spacing(1, 0.2), await spacing(2, 0.2)];
    for (const run of [one, two]) {
      expect(Math.min(...run.commands)).toBeGreaterThanOrEqual(1000);
      expect(Math.max(...run.commands)).toBeLessThanOrEqual(1200);
      expect(new Set(run.commands).size).toBeGreaterThan(20);
      expect(Math.min(...run.latencies)).toBeGreaterThanOrEqual(10_000);
      expect(Math.max(...run.latencies)).toBeLessThanOrEqual(12_000);
      expect(new Set(run.latencies).size).toBeGreaterThan(1);
    }
    expect(two.commands).not.toEqual(one.commands);
    expect(await spacing(1, 0.2)).toEqual(one);
    for (const jitter of [1.5, -0.1, Number.NaN, '0.1']) {
      await expect(createMachine({ timing: { jitter: jitter as number } })).rejects.toThrow(/timing\.jitter.*expected a fraction from 0 to 1/);
    }
  });

  it('NF-08 the demo produces, consumes, wakes its CPU waiter, satisfies one wait at once and times one out', async () => {
    const machine = await runDemo(1);
    const s = machine.summary();
    expect(s.os).toMatchObject({ waitersWoken: 1, waitsSatisfiedAtOnce: 1, waitsTimedOut: 1, spuriousInterrupts: 0 });
    expect(s.adapters[0].interruptsRaised).toBe(1); // only the signal with a CPU waiter interrupts
    expect(s.adapters[0].gpuSignals).toBe(12);
    expect(s.pendingWaiters).toBe(0);
    expect(machine.summaryText()).toMatch(/interrupts: raised=1 handled=1 spurious=0/);
  });
});
