import { describe, it, expect } from 'vitest';
import { coreWaiters } from './core-waiters.js';
import { updateCurrentValuesFromCpu } from '../src/os/objects.js';
import { DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED, Random, WddmError, createMachine, type Machine, type RuntimeProcess } from '../src/index.js';
import type { AdapterFenceRows } from '../src/os/fence-rows.js';
import { world, globalOf, monitoredValue, ddiCalls, UINT64_MAX, osModules, processOf } from './helpers.js';

describe('CPU waiters and MonitoredValue', () => {
  it('NF-02 MonitoredValue is the smallest waited value minus one, UINT64_MAX with no waiter, and follows every add and retire', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const f = app.createNativeFence({ hDevice });
    const mv = () => monitoredValue(w, app, f.hSyncObject);
    expect(mv()).toBe(UINT64_MAX);
    void app.waitAsync({ objects: [f.hSyncObject], values: [10n] });
    expect(mv()).toBe(9n);
    void app.waitAsync({ objects: [f.hSyncObject], values: [5n], timeoutNs: 1000 });
    expect(mv()).toBe(4n);
    void app.waitAsync({ objects: [f.hSyncObject], values: [7n] });
    expect(mv()).toBe(4n);
    machine.run(); // the 5-waiter times out and is retired
    expect(mv()).toBe(6n);
    app.signal({ objects: [f.hSyncObject], values: [8n] });
    expect(mv()).toBe(9n);
    app.signal({ objects: [f.hSyncObject], values: [10n] });
    expect(mv()).toBe(UINT64_MAX);
    const updates = ddiCalls(machine, 'DxgkDdiUpdateMonitoredValues').map((e) => (e.args.UpdatedValueArray as string[])[0]);
    expect(updates).toEqual(['9', '4', '6', '9', '18446744073709551615']);
  });

  it('NF-03 waiters sit in a min-heap by value with ties in arrival order; invariants hold through random adds and retires', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const f = app.createNativeFence({ hDevice });
    const order: string[] = [];
    for (const [label, value] of [['a', 3n], ['b', 2n], ['c', 3n], ['d', 1n], ['e', 3n]] as const) {
      void app.waitAsync({ objects: [f.hSyncObject], values: [value] }, label).then(() => order.push(label));
    }
    app.signal({ objects: [f.hSyncObject], values: [3n] });
    await Promise.resolve();
    const woken = machine.trace.find({ kind: 'os', name: 'waiter woken' }).map((e) => String(e.args.waiter).split(':')[1]);
    expect(woken).toEqual(['d', 'b', 'a', 'c', 'e']);

    const g = globalOf(w, app, f.hSyncObject);
    const core = machine.adapters[0].core;
    const waiters = coreWaiters(machine, core);
    const random = new Random(9);
    const live: number[] = [];
    for (let i = 0; i < 3000; i++) {
      if (live.length && random.next() < 0.4) {
        const k = random.below(live.length);
        expect(waiters.remove(live[k])).toBe(1);
        live.splice(k, 1);
      } else {
        const block = waiters.add(g.coreFence, BigInt(4 + random.below(500)), 1000 + i);
        expect(block).toBeGreaterThan(0);
        live.push(block);
      }
      if (i % 100 === 0) expect(core.heapCheck(g.coreFence)).toBe(0);
    }
    expect(core.fenceWaiterCount(g.coreFence)).toBe(live.length);
    expect(core.heapCheck(g.coreFence)).toBe(0);
  });

  it('NF-08 blocking waits, event waits, timeouts, wait-all and wait-any; a satisfied wait returns at once and adds no waiter', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const a = app.createNativeFence({ hDevice, name: 'a' });
    const b = app.createNativeFence({ hDevice, name: 'b' });
    const hEvent = app.createEvent('ready');
    app.waitWithEvent({ objects: [a.hSyncObject], values: [2n], hAsyncEvent: hEvent });
    const thread = app.createThread('t', function* (cpu) {
      const all = yield cpu.wait({ objects: [a.hSyncObject, b.hSyncObject], values: [1n, 1n] });
      const any = yield cpu.wait({ objects: [a.hSyncObject, b.hSyncObject], values: [9n, 2n], waitAny: true });
      const timedOut = yield cpu.wait({ objects: [a.hSyncObject], values: [100n], timeoutNs: 500 });
      const atOnce = yield cpu.wait({ objects: [a.hSyncObject], values: [1n] });
      return { all, any, timedOut, atOnce };
    });
    machine.run();
    expect(thread.state).toBe('blocked');
    app.signal({ objects: [a.hSyncObject], values: [1n] });
    machine.run();
    expect(thread.state).toBe('blocked'); // wait-all still needs b
    expect(app.isEventSet(hEvent)).toBe(false);
    app.signal({ objects: [b.hSyncObject, a.hSyncObject], values: [2n, 2n] });
    expect(app.isEventSet(hEvent)).toBe(true);
    const addedBefore = machine.os.inspect.counters.waitersAdded;
    machine.run();
    expect(thread.state).toBe('done');
    const r = thread.result as Record<string, { status: string; immediate: boolean; index?: number }>;
    expect(r.all.status).toBe('SUCCESS');
    expect(r.any).toMatchObject({ status: 'SUCCESS', immediate: true, index: 1 });
    expect(r.timedOut).toMatchObject({ status: 'TIMEOUT', immediate: false });
    expect(r.atOnce).toMatchObject({ status: 'SUCCESS', immediate: true });
    expect(machine.os.inspect.counters.waitersAdded - addedBefore).toBe(1); // only the timed-out wait added one
    expect(machine.os.inspect.pendingWaiters).toBe(0);
  });

  it('NF-08 rejects more than 32 objects, mismatched arrays and a full waiter heap, changing nothing', async () => {
    const w = await world({ adapters: [{ limits: { waitersPerFence: 4 } }] });
    const { app, hDevice, machine } = w;
    const f = app.createNativeFence({ hDevice });
    const many = Array.from({ length: 33 }, () => f.hSyncObject);
    expect(() => app.waitAsync({ objects: many, values: many.map(() => 1n) })).toThrow(/objects has 33 items; expected 1 to 32/);
    expect(() => app.signal({ objects: [f.hSyncObject], values: [1n, 2n] })).toThrow(/values has 2 items; expected 1 to 1/);
    for (let i = 1; i <= 4; i++) void app.waitAsync({ objects: [f.hSyncObject], values: [BigInt(i)] });
    const mv = monitoredValue(w, app, f.hSyncObject);
    const before = machine.trace.events.length;
    let error: WddmError | undefined;
    try { app.createThread('x', function* (cpu) { yield cpu.wait({ objects: [f.hSyncObject], values: [9n] }); }); machine.run(); }
    catch (e) { error = e as WddmError; }
    expect(error).toBeUndefined(); // the thread gets the error at its yield
    expect(app.threads.at(-1)!.state).toBe('failed');
    expect(String((app.threads.at(-1)!.error as Error).message)).toMatch(/CPU waiter heap of this fence is full/);
    expect(() => app.waitAsync({ objects: [f.hSyncObject], values: [9n] })).toThrow(/heap of this fence is full/);
    expect(monitoredValue(w, app, f.hSyncObject)).toBe(mv);
    expect(ddiCalls(machine, 'DxgkDdiUpdateMonitoredValues').filter((e) => e.seq > before)).toHaveLength(0);
    app.signal({ objects: [f.hSyncObject], values: [4n] });
    expect(machine.os.inspect.pendingWaiters).toBe(0);
  });
});

describe('signals and interrupts', () => {
  it('NF-05 a GPU signal interrupts only when CurrentValue > MonitoredValue; a fence with no CPU waiter never interrupts', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const quiet = app.createNativeFence({ hDevice });
    const watched = app.createNativeFence({ hDevice });
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: [1n, 2n, 3n].map((v) => ({ signal: { hSyncObject: quiet.hSyncObject, value: v } })) });
    machine.run();
    expect(machine.summary().adapters[0].interruptsRaised).toBe(0);
    void app.waitAsync({ objects: [watched.hSyncObject], values: [3n] });
    app.submit({ hHwQueue: q.hHwQueue, commands: [1n, 2n, 3n].map((v) => ({ signal: { hSyncObject: watched.hSyncObject, value: v } })) });
    machine.run();
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: watched.hSyncObject, value: 4n } }] });
    machine.run();
    const decisions = machine.trace.find({ kind: 'cmp' }).map((e) => `${e.name}:${e.args.value}:${e.args.monitoredValue}`);
    expect(decisions.slice(3)).toEqual(['no interrupt:1:2', 'no interrupt:2:2', 'interrupt raised:3:2', 'no interrupt:4:18446744073709551615']);
    expect(machine.summary().adapters[0].interruptsRaised).toBe(1);
  });

  it('NF-06 a GPU wait blocks its queue on the GPU with no CPU round trip and no interrupt', async () => {
    const { app, hDevice, machine } = await world();
    const f = app.createNativeFence({ hDevice });
    const consumer = app.createHwQueue({ hDevice, engine: 1, nativeProgressFence: false });
    const producer = app.createHwQueue({ hDevice, engine: 0, nativeProgressFence: false });
    const done = app.createNativeFence({ hDevice });
    app.submit({ hHwQueue: consumer.hHwQueue, commands: [{ wait: { hSyncObject: f.hSyncObject, value: 1n } }, { signal: { hSyncObject: done.hSyncObject, value: 1n } }] });
    machine.run();
    expect(app.readFenceValue(done.hSyncObject)).toBe(0n);
    expect(machine.summary().adapters[0].blockedQueues).toBe(1);
    const ddisBefore = machine.trace.find({ kind: 'ddi' }).length;
    app.submit({ hHwQueue: producer.hHwQueue, commands: [{ work: { durationNs: 1000 } }, { signal: { hSyncObject: f.hSyncObject, value: 1n } }] });
    machine.run();
    expect(app.readFenceValue(done.hSyncObject)).toBe(1n);
    expect(machine.summary().adapters[0].interruptsRaised).toBe(0);
    expect(machine.trace.find({ kind: 'ddi' }).length).toBe(ddisBefore);
    expect(machine.trace.find({ kind: 'interrupt' })).toHaveLength(0);
  });

  it('NF-07 a CPU signal goes through UpdateCurrentValuesFromCpu and unblocks CPU waiters and hardware queues', async () => {
    const { app, hDevice, machine } = await world();
    const f = app.createNativeFence({ hDevice });
    const done = app.createNativeFence({ hDevice });
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ wait: { hSyncObject: f.hSyncObject, value: 5n } }, { signal: { hSyncObject: done.hSyncObject, value: 1n } }] });
    const waited = app.waitAsync({ objects: [f.hSyncObject], values: [5n] });
    machine.run();
    app.signal({ objects: [f.hSyncObject], values: [5n] });
    const call = ddiCalls(machine, 'DxgkDdiUpdateCurrentValuesFromCpu')[0];
    expect(call.args).toMatchObject({ NumFences: 1, UpdatedValueArray: ['5'], NotificationOnly: false });
    await expect(waited).resolves.toMatchObject({ status: 'SUCCESS', immediate: false });
    machine.run();
    expect(app.readFenceValue(done.hSyncObject)).toBe(1n);
  });

  it('NF-09 on an interrupt the OS wakes waiters, moves MonitoredValue, calls UpdateMonitoredValues, then resamples until nothing changes', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const f = app.createNativeFence({ hDevice });
    const g = globalOf(w, app, f.hSyncObject);
    const results: string[] = [];
    void app.waitAsync({ objects: [f.hSyncObject], values: [1n] }, 'one').then((r) => results.push(`one:${r.status}`));
    void app.waitAsync({ objects: [f.hSyncObject], values: [2n] }, 'two').then((r) => results.push(`two:${r.status}`));
    // While the OS updates MonitoredValue to 1, the GPU lands value 2: the resample must catch it.
    const driver = machine.adapters[0].driver;
    const original = driver.updateMonitoredValues.bind(driver);
    driver.updateMonitoredValues = (args) => {
      original(args);
      if (args.UpdatedValueArray[0] === 1n) g.adapter.core.cpuWriteCurrentValue(g.coreFence, 2n);
    };
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 1n } }] });
    machine.run();
    await Promise.resolve();
    expect(results).toEqual(['one:SUCCESS', 'two:SUCCESS']);
    const logReads = ['DxgkDdiUpdateNativeFenceLogs', 'log entry read']; // the timeline's log read after the interrupt (src/os/logs.ts)
    const os = machine.trace.events.filter((e) => e.seq > machine.trace.find({ kind: 'interrupt' })[0].seq && (e.kind === 'os' || e.kind === 'ddi') && !logReads.includes(e.name)).map((e) => e.name);
    expect(os).toEqual(['waiter woken', 'DxgkDdiUpdateMonitoredValues', 'waiter woken', 'resample satisfied waiters', 'DxgkDdiUpdateMonitoredValues']);
    expect(monitoredValue(w, app, f.hSyncObject)).toBe(UINT64_MAX);
  });

  it('NF-09 the loop run whole (refresh) and in steps (an OS operation) takes the same four turns: three re-reads that wake, the same MonitoredValue writes', async () => {
    // One CPU signal starts a loop of four turns: each UpdateMonitoredValues lands the next value (as a GPU would)
    // and only the OS's re-read catches it. Whole and in steps are one loop (src/os/waits.ts): same wakes, same DDIs.
    const run = async (osGranularity: 'operation' | 'step') => {
      const w = await world({ schedule: { granularity: 'step', osGranularity } });
      const { app, hDevice, machine } = w;
      const f = app.createNativeFence({ hDevice });
      const g = globalOf(w, app, f.hSyncObject);
      const woken: string[] = [];
      for (const value of [1n, 2n, 3n, 4n]) void app.waitAsync({ objects: [f.hSyncObject], values: [value] }, `w${value}`).then((r) => woken.push(`w${value}:${r.status}`));
      machine.run();
      const driver = machine.adapters[0].driver;
      const original = driver.updateMonitoredValues.bind(driver);
      driver.updateMonitoredValues = (args) => {
        const result = original(args);
        const next = args.UpdatedValueArray[0] + 1n; // MonitoredValue m: the next waiter waits for m + 1; land it
        if (next <= 4n) g.adapter.core.cpuWriteCurrentValue(g.coreFence, next);
        return result;
      };
      const before = ddiCalls(machine, 'DxgkDdiUpdateMonitoredValues').length;
      app.signal({ objects: [f.hSyncObject], values: [1n] });
      machine.run();
      await new Promise((r) => setImmediate(r));
      const writes = ddiCalls(machine, 'DxgkDdiUpdateMonitoredValues').slice(before).map((e) => e.args.UpdatedValueArray);
      const resamples = machine.trace.find({ kind: 'os', name: 'resample satisfied waiters' }).length;
      return { woken, writes, resamples, monitored: monitoredValue(w, app, f.hSyncObject), current: app.readFenceValue(f.hSyncObject) };
    };
    const whole = await run('operation');
    expect(whole).toEqual({ woken: ['w1:SUCCESS', 'w2:SUCCESS', 'w3:SUCCESS', 'w4:SUCCESS'], writes: [['1'], ['2'], ['3'], [String(UINT64_MAX)]], resamples: 3, monitored: UINT64_MAX, current: 4n });
    expect(await run('step')).toEqual(whole);
  });

  it('NF-09 os.rereadCurrentValue false: an OS without the re-read leaves the value written during UpdateMonitoredValues to the driver (a lost wakeup when the driver does not look); true is the default; a non-boolean is refused', async () => {
    // A value that reaches CurrentValue inside the DDI, after the driver's own read: only the OS's re-read sees it.
    const run = async (os: { rereadCurrentValue?: boolean }) => {
      const w = await world({ os });
      const { app, hDevice, machine } = w;
      const f = app.createNativeFence({ hDevice });
      const g = globalOf(w, app, f.hSyncObject);
      const driver = machine.adapters[0].driver;
      const original = driver.updateMonitoredValues.bind(driver);
      driver.updateMonitoredValues = (args) => {
        original(args);
        if (args.UpdatedValueArray[0] === 0n) g.adapter.core.cpuWriteCurrentValue(g.coreFence, 1n);
      };
      let status = 'pending';
      void app.waitAsync({ objects: [f.hSyncObject], values: [1n] }).then((r) => { status = r.status; });
      machine.run();
      await Promise.resolve();
      return { status, lost: machine.os.inspect.lostWakeups().length };
    };
    expect(await run({})).toEqual({ status: 'SUCCESS', lost: 0 });
    expect(await run({ rereadCurrentValue: true })).toEqual({ status: 'SUCCESS', lost: 0 });
    expect(await run({ rereadCurrentValue: false })).toEqual({ status: 'pending', lost: 1 });
    await expect(createMachine({ os: { rereadCurrentValue: 'no' as never } })).rejects.toThrow(/os\.rereadCurrentValue/);
  });

  it('NF-10 no lost wakeup over random schedules of GPU signals and CPU waiters; spurious interrupts are counted', async () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      for (const payload of ['list', 'noList'] as const) {
        const { app, hDevice, machine } = await world({ seed, adapters: [{ interrupts: { payload }, engines: 2 }], timing: { commandNs: 50, interruptLatencyNs: 700 } });
        const random = new Random(seed);
        const fences = Array.from({ length: 4 }, (_, i) => app.createNativeFence({ hDevice, name: `f${i}` }).hSyncObject);
        const queues = [0, 1].map((engine) => app.createHwQueue({ hDevice, engine, nativeProgressFence: false }).hHwQueue);
        const next = fences.map(() => 0n);
        let woken = 0;
        let expected = 0;
        for (let step = 0; step < 120; step++) {
          machine.run(machine.nowNs + random.below(400));
          const i = random.below(fences.length);
          if (random.next() < 0.5) {
            next[i] += BigInt(1 + random.below(3));
            app.submit({ hHwQueue: queues[random.below(2)], commands: [{ work: { durationNs: random.below(300) } }, { signal: { hSyncObject: fences[i], value: next[i] } }] });
          } else {
            expected++;
            void app.waitAsync({ objects: [fences[i]], values: [next[i] + BigInt(random.below(3))], timeoutNs: 1e9 }).then((r) => { if (r.status === 'SUCCESS') woken++; });
          }
        }
        // Finally signal every fence far enough that every waiter's value is reached.
        app.submit({ hHwQueue: queues[0], commands: fences.map((h, i) => ({ signal: { hSyncObject: h, value: next[i] + 10n } })) });
        machine.run();
        await new Promise((r) => setTimeout(r, 0));
        expect(machine.os.inspect.lostWakeups(), `seed ${seed} ${payload}`).toEqual([]);
        expect(machine.os.inspect.pendingWaiters).toBe(0);
        expect(woken).toBe(expected);
        const s = machine.summary();
        // Every interrupt is handled once and either wakes a waiter or is counted as spurious (the next test pins the count).
        expect(s.os.interruptsHandled).toBe(s.adapters[0].interruptsRaised);
        expect(s.os.spuriousInterrupts).toBe(machine.trace.find({ kind: 'os', name: 'spurious interrupt (woke no waiter)' }).length);
        expect(s.os.spuriousInterrupts).toBeLessThan(s.os.interruptsHandled);
      }
    }
  });

  it('NF-10 an interrupt that wakes nobody is allowed and counted as spurious; one that wakes a waiter is not', async () => {
    for (const payload of ['list', 'noList'] as const) {
      const { app, hDevice, machine } = await world({ adapters: [{ interrupts: { payload } }] });
      const f = app.createNativeFence({ hDevice });
      const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
      // 1. The GPU signals 5 for a waiter of 5 (the CMP raises), then the CPU signals 5 before the ISR runs:
      //    the CPU signal wakes the waiter, the interrupt finds nobody.
      const first = app.waitAsync({ objects: [f.hSyncObject], values: [5n] });
      app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 5n } }] });
      machine.run(machine.nowNs + 500); // the signal executed; the ISR is at least 2 us away
      expect(machine.trace.find({ kind: 'cmp', name: 'interrupt raised' })).toHaveLength(1);
      expect(machine.trace.find({ kind: 'interrupt' })).toHaveLength(0);
      app.signal({ objects: [f.hSyncObject], values: [5n] });
      await expect(first).resolves.toMatchObject({ status: 'SUCCESS' });
      machine.run();
      expect(machine.summary().os).toMatchObject({ interruptsHandled: 1, spuriousInterrupts: 1, waitersWoken: 1 });
      // 2. A waiter of 6 and a GPU signal of 6: the interrupt wakes it; the spurious count stays.
      const second = app.waitAsync({ objects: [f.hSyncObject], values: [6n] });
      app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 6n } }] });
      machine.run();
      await expect(second).resolves.toMatchObject({ status: 'SUCCESS' });
      expect(machine.summary().os).toMatchObject({ interruptsHandled: 2, spuriousInterrupts: 1, waitersWoken: 2 });
      expect(machine.summaryText()).toMatch(/interrupts: raised=2 handled=2 spurious=1/);
    }
  });

  it('NF-10 a waiter whose value is reached while the interrupt is on its way is no lost wake-up, for stuck() as for lostWakeups() (one rule)', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const f = app.createNativeFence({ hDevice });
    let status = 'waiting';
    void app.waitAsync({ objects: [f.hSyncObject], values: [10n] }).then((r) => { status = r.status; });
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 10n } }] });
    // step until the GPU wrote the value and raised the interrupt, which the OS has not served yet
    while (app.readFenceValue(f.hSyncObject) < 10n || machine.trace.find({ kind: 'cmp', name: 'interrupt raised' }).length === 0) expect(machine.scheduler.step()).toBeTruthy();
    expect(machine.scheduler.pendingEvents().some((e) => e.kind === 'interrupt')).toBe(true);
    expect(machine.lostWakeups()).toEqual([]);
    expect(machine.stuck().lostWakeups).toEqual([]);
    machine.run();
    await Promise.resolve();
    expect(status).toBe('SUCCESS');
  });

  it('NF-11 the CMP order write MonitoredValue, barrier, read CurrentValue, interrupt: without the barrier a wakeup is lost', async () => {
    // The simulator's own path: a CPU waiter (the driver's UpdateMonitoredValues runs the core's CMP
    // steps), then a GPU signal the engine executes (engineStep runs the signal's steps).
    for (const barrier of [true, false]) {
      const w = await world({ adapters: [{ driver: { monitoredValueBarrier: barrier } }] });
      const { app, hDevice, machine } = w;
      const f = app.createNativeFence({ hDevice });
      const g = globalOf(w, app, f.hSyncObject);
      const core = machine.adapters[0].core;
      let status = 'waiting';
      void app.waitAsync({ objects: [f.hSyncObject], values: [10n] }).then((r) => { status = r.status; });
      // Without the barrier the new MonitoredValue (9) still sits in the CMP's write buffer.
      expect(core.cmpPendingWrite()).toBe(barrier ? 0 : core.fenceMonitoredValueAddress(g.coreFence));
      expect(monitoredValue(w, app, f.hSyncObject)).toBe(barrier ? 9n : UINT64_MAX);
      const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
      app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 10n } }] });
      machine.run();
      await Promise.resolve();
      expect(app.readFenceValue(f.hSyncObject)).toBe(10n);
      expect(machine.trace.find({ kind: 'cmp', name: 'interrupt raised' })).toHaveLength(barrier ? 1 : 0);
      if (barrier) {
        expect(status).toBe('SUCCESS');
        expect(machine.os.inspect.lostWakeups()).toEqual([]);
      } else {
        expect(status).toBe('waiting');
        expect(machine.os.inspect.lostWakeups()).toEqual([{ waiter: 'app:async', fence: g.label, value: 10n, currentValue: 10n }]);
      }
    }
  });

  it('NF-11 every interleaving of a GPU signal\'s steps with the CMP\'s: with the barrier one of them raises; without it exactly the ones whose CurrentValue read comes before the engine\'s drain lose the wakeup', async () => {
    const { machine } = await world({ trace: false, adapters: [{ limits: { fences: 256 } }] });
    const core = machine.adapters[0].core;
    const L = machine.layout;
    const signals = (core.NATIVE_FENCE_LOG_TYPE_SIGNALS as WebAssembly.Global).value as number;
    const executed = (core.NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED as WebAssembly.Global).value as number;
    const queue = core.queueCreate(0, 0);
    expect(queue).toBeGreaterThan(0);
    /** Every way to merge two step lists, keeping each list's order. */
    const merges = <T,>(a: T[], b: T[]): T[][] => (!a.length ? [b] : !b.length ? [a]
      : [...merges(a.slice(1), b).map((m) => [a[0], ...m]), ...merges(a, b.slice(1)).map((m) => [b[0], ...m])]);
    for (const barrier of [true, false]) {
      let tried = 0, lost = 0;
      const gpu = ['1 write', '2 log entry', '3 log advance', '4 drain', '5 check'];
      const cmp = ['a write MV', ...(barrier ? ['b barrier'] : []), 'c read CV', 'd check'];
      for (const order of merges(gpu, cmp)) {
        // A fresh fence at CurrentValue 0, MonitoredValue UINT64_MAX: a waiter for 10 arrives (MV 9) while the GPU signals 10.
        const fence = core.fenceCreate(0, L.fenceKindNative, L.memorySystem, 0, 0, 0n, 0);
        expect(fence).toBeGreaterThan(0);
        core.fenceSetDriverHandle(fence, 0x100 + fence);
        const cv = core.fenceCurrentValueAddress(fence);
        const page = cv - (cv % L.pageBytes);
        const va = BigInt.asUintN(64, core.gpuVaMap(0, page, L.gpuVaReadWrite)) + BigInt(cv - page);
        let current = 0n, raised = 0;
        for (const step of order) {
          const r = step === '1 write' ? core.engineSignalWrite(0, 0, va, 10n)
            : step === '2 log entry' ? core.logWriteEntry(queue, signals, 0x100 + fence, 10n, executed, 0n, 0n)
            : step === '3 log advance' ? core.logAdvance(queue, signals)
            : step === '4 drain' ? core.engineDrain(0)
            : step === '5 check' ? core.cmpSignalCheck(0, fence, 10n)
            : step === 'a write MV' ? core.cmpWriteMonitoredValue(fence, 9n)
            : step === 'b barrier' ? core.cmpBarrier()
            : step === 'c read CV' ? ((current = BigInt.asUintN(64, core.cmpReadCurrentValue(fence))), 0)
            : core.cmpMonitoredValueCheck(0, fence, current);
          expect(r, `${order.join(', ')}: ${step}`).toBeGreaterThanOrEqual(0);
          if (step.endsWith('check')) raised += r;
        }
        const readBeforeDrain = order.indexOf('c read CV') < order.indexOf('4 drain');
        expect(raised > 0, order.join(', ')).toBe(barrier || !readBeforeDrain);
        tried++;
        if (raised === 0) lost++;
        core.engineTakeInterrupt(0);
        core.cmpBarrier();
        core.fenceDestroy(fence);
      }
      expect(tried).toBe(barrier ? 126 : 56);
      // Without the barrier: the 40 of 56 merges that put c before the engine's step 4 (fewer than four GPU steps before c).
      expect(lost).toBe(barrier ? 0 : 40);
    }
  });

  it('NF-17 a hardware queue progress fence is a native fence that advances with each submission', async () => {
    const { app, hDevice, machine } = await world();
    const q = app.createHwQueue({ hDevice, nativeProgressFence: true });
    const ddi = ddiCalls(machine, 'DxgkDdiCreateHwQueue')[0];
    expect(ddi.args).toMatchObject({ NativeProgressFence: true });
    expect(ddi.args.hHwQueueProgressFence).toBeGreaterThan(0);
    const first = app.submit({ hHwQueue: q.hHwQueue, commands: [{ work: { durationNs: 100 } }] });
    const second = app.submit({ hHwQueue: q.hHwQueue, commands: [{ work: { durationNs: 100 } }] });
    expect([first.progressValue, second.progressValue]).toEqual([1n, 2n]);
    const waited = app.waitAsync({ objects: [q.hProgressFence!], values: [2n] });
    machine.run();
    await expect(waited).resolves.toMatchObject({ status: 'SUCCESS' });
    expect(() => app.destroySynchronizationObject(q.hProgressFence!)).toThrow(/progress fence of hardware queue/);
  });

  it('NF-18 the driver takes batches: one UpdateCurrentValuesFromCpu and one UpdateMonitoredValues for many fences; NotificationOnly rescans without writing', async () => {
    const { app, hDevice, machine } = await world();
    const fences = [0, 1, 2].map(() => app.createNativeFence({ hDevice }).hSyncObject);
    void app.waitAsync({ objects: fences, values: [5n, 6n, 7n], waitAny: true });
    const mvCalls = ddiCalls(machine, 'DxgkDdiUpdateMonitoredValues');
    expect(mvCalls).toHaveLength(1);
    expect(mvCalls[0].args).toMatchObject({ NumFences: 3, UpdatedValueArray: ['4', '5', '6'] });
    app.signal({ objects: fences, values: [1n, 2n, 3n] });
    const cvCalls = ddiCalls(machine, 'DxgkDdiUpdateCurrentValuesFromCpu');
    expect(cvCalls).toHaveLength(1);
    expect(cvCalls[0].args).toMatchObject({ NumFences: 3, UpdatedValueArray: ['1', '2', '3'] });
    // NotificationOnly: the driver rescans its run list but writes nothing.
    const done = app.createNativeFence({ hDevice });
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ wait: { hSyncObject: fences[0], value: 1n } }, { wait: { hSyncObject: fences[1], value: 3n } }, { signal: { hSyncObject: done.hSyncObject, value: 1n } }] });
    machine.run();
    expect(machine.summary().adapters[0].blockedQueues).toBe(1);
    const g = globalOf({ machine }, app, fences[1]);
    g.adapter.core.cpuWriteCurrentValue(g.coreFence, 3n); // as if another adapter wrote the shared word
    updateCurrentValuesFromCpu(machine.port, g.adapter, [g], [3n], true);
    machine.run();
    expect(app.readFenceValue(done.hSyncObject)).toBe(1n);
    expect(ddiCalls(machine, 'DxgkDdiUpdateCurrentValuesFromCpu').at(-1)!.args.NotificationOnly).toBe(true);
  });

  it('NF-19 values only move forward unless AllowFenceRewind; a wait once satisfied stays satisfied; UINT64_MAX is valid', async () => {
    const { app, hDevice, machine } = await world();
    const f = app.createNativeFence({ hDevice, initialValue: 10n });
    expect(() => app.signal({ objects: [f.hSyncObject], values: [4n] })).toThrow(/would move .* back from 10; fence values only move forward unless flags.allowFenceRewind/);
    expect(app.readFenceValue(f.hSyncObject)).toBe(10n);
    const satisfied = app.waitAsync({ objects: [f.hSyncObject], values: [12n] });
    app.signal({ objects: [f.hSyncObject], values: [12n] });
    app.signal({ objects: [f.hSyncObject], values: [3n], flags: { allowFenceRewind: true } });
    expect(app.readFenceValue(f.hSyncObject)).toBe(3n);
    await expect(satisfied).resolves.toMatchObject({ status: 'SUCCESS' });
    const later = app.waitAsync({ objects: [f.hSyncObject], values: [5n], timeoutNs: 100 });
    machine.run();
    await expect(later).resolves.toMatchObject({ status: 'TIMEOUT' });
    app.signal({ objects: [f.hSyncObject], values: [UINT64_MAX] });
    expect(app.readFenceValue(f.hSyncObject)).toBe(UINT64_MAX);
  });

  it('NF-20 device removal signals every fence to UINT64_MAX except NoSignalMaxValueOnTdr, so no waiter hangs', async () => {
    const { app, hDevice, machine } = await world();
    const a = app.createNativeFence({ hDevice, name: 'a' });
    const kept = app.createNativeFence({ hDevice, name: 'kept', flags: { noSignalMaxValueOnTdr: true } });
    const q = app.createHwQueue({ hDevice });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ wait: { hSyncObject: a.hSyncObject, value: 1000n } }] });
    const waitA = app.waitAsync({ objects: [a.hSyncObject], values: [50n] });
    machine.run();
    machine.removeDevice(0, 'test TDR');
    await expect(waitA).resolves.toMatchObject({ status: 'SUCCESS' });
    expect(app.readFenceValue(a.hSyncObject)).toBe(UINT64_MAX);
    expect(app.readFenceValue(kept.hSyncObject)).toBe(0n);
    expect(() => app.submit({ hHwQueue: q.hHwQueue, commands: [{ work: { durationNs: 1 } }] })).toThrow(/removed device/);
    expect(() => app.createNativeFence({ hDevice })).toThrow(/the device was removed/);
    expect(machine.trace.find({ kind: 'fault', name: 'device removed (TDR)' })).toHaveLength(1);
    // A new device on the same adapter works.
    const hDevice2 = app.createDevice({ hAdapter: app.openAdapter(0) });
    expect(app.createNativeFence({ hDevice: hDevice2 }).hSyncObject).toBeGreaterThan(0);
  });
});

describe('GPU faults', () => {
  it('NF-20 a GPU page fault (a ring command naming an unmapped GPU VA) resets the adapter instead of stopping the machine', async () => {
    const { app, hDevice, machine } = await world();
    const f = app.createNativeFence({ hDevice, flags: { shared: true } }); // pages of its own
    const other = app.createNativeFence({ hDevice });
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    const waitOther = app.waitAsync({ objects: [other.hSyncObject], values: [1n] });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ work: { durationNs: 1000 } }] });
    // A broken UMD writes a wait whose GPU VA is one page past the fence's mapping (a destroyed fence's
    // storage is never unmapped while a command names it, src/os/lifetime.ts; only a bad ring write faults).
    const queue = osModules(machine).handles.resolve(processOf(app), q.hHwQueue, 'hwQueue', 'hHwQueue');
    machine.adapters[0].driver.userMode.submitToHwQueue({ HwQueuePrivateDriverData: queue.privateDriverData, Commands: [
      { op: 'wait', gpuVa: f.mapping.CurrentValueGpuVa + 0x10_0000n, value: 1n, handle: f.hSyncObject },
    ] });
    expect(() => machine.run()).not.toThrow();
    const fault = machine.trace.find({ kind: 'fault', name: 'GPU fault' });
    expect(fault).toHaveLength(1);
    expect(String(fault[0].args.message)).toMatch(/GPU page fault/);
    expect(machine.trace.find({ kind: 'fault', name: 'device removed (TDR)' })).toHaveLength(1);
    await expect(waitOther).resolves.toMatchObject({ status: 'SUCCESS' }); // signalled to UINT64_MAX, nobody hangs
  });
});

describe('CPU waits on fences kept as rows (src/os/fence-rows.ts)', () => {
  /** A fence's row view, read without making its objects: is it still a row, its core id, MonitoredValue and hGlobal. */
  const rowView = (w: { machine: Machine }, app: RuntimeProcess, hSyncObject: number) => {
    const adapter = osModules(w.machine).adapters[0];
    const rows = adapter.fences.deferred as AdapterFenceRows;
    const token = processOf(app).handles.rowToken(hSyncObject);
    const coreFence = Math.floor(token / 8);
    if (token === 0) return { isRow: false, coreFence: -1, rowsLive: adapter.fences.size - adapter.fences.viewed, hGlobal: 0, monitoredValue: 0n, write: () => {} };
    return {
      isRow: processOf(app).handles.isRow(hSyncObject),
      coreFence,
      rowsLive: adapter.fences.size - adapter.fences.viewed,
      hGlobal: rows.globalHandleOf(coreFence),
      monitoredValue: BigInt.asUintN(64, adapter.core.cpuReadMonitoredValue(coreFence)),
      /** A GPU write of CurrentValue, as the engine makes it (the test plays the GPU; the driver's ISR is the interrupt below). */
      write: (value: bigint) => { new BigUint64Array(adapter.memory.buffer)[adapter.core.fenceCurrentValueAddress(coreFence) / 8] = value; },
    };
  };
  const interrupt = (machine: Machine, list: number[] | null) => osModules(machine).interrupts.notifyInterrupt(osModules(machine).adapters[0], {
    InterruptType: DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED, NodeOrdinal: 0, EngineOrdinal: 0, SignaledNativeFenceCount: list ? list.length : 0,
    pSignaledNativeFenceArray: list, hHWQueue: 0, Flags: { EvaluateLegacyMonitoredFences: false },
  });

  it('NF-04 readFenceValue reads a fence kept as a row through the process\'s read-only mapping and keeps it a row; a foreign or closed handle is refused as before', async () => {
    const w = await world({ trace: false });
    const { app, hDevice, machine } = w;
    const f = app.createNativeFence({ hDevice, initialValue: 6n }).hSyncObject;
    const mapping = app.createNativeFence({ hDevice, initialValue: 0n }).mapping;
    const before = rowView(w, app, f);
    expect(before.isRow).toBe(true);
    expect(app.readFenceValue(f)).toBe(6n);
    before.write(0x1234_5678_9abc_def0n); // the GPU's write: the read sees the value in memory, not a copy
    expect(app.readFenceValue(f)).toBe(0x1234_5678_9abc_def0n);
    expect(rowView(w, app, f)).toMatchObject({ isRow: true, rowsLive: before.rowsLive });
    // The VA read is the one the fence's mapping names: the row's page mapping, the same as a created fence's.
    expect(app.readMapping(mapping.CurrentValueCpuVa)).toBe(0n);
    const other = machine.createProcess('other');
    expect(() => other.readFenceValue(f)).toThrow(/hSyncObject/);
    expect(() => app.readFenceValue('1' as unknown as number)).toThrow(/hSyncObject/);
    app.destroySynchronizationObject(f);
    expect(() => app.readFenceValue(f)).toThrow(/hSyncObject/);
  });

  it('NF-08 a one-fence wait on a fence nothing looked up adds its waiter and moves MonitoredValue without making the fence\'s objects; refusals are unchanged', async () => {
    const w = await world({ trace: false });
    const { app, hDevice, machine } = w;
    const other = machine.createProcess('other');
    const foreign = other.createNativeFence({ hDevice: other.createDevice({ hAdapter: other.openAdapter(0) }) }).hSyncObject;
    const f = app.createNativeFence({ hDevice }).hSyncObject;
    const before = rowView(w, app, f);
    expect(before.isRow).toBe(true);
    expect(before.monitoredValue).toBe(UINT64_MAX);
    const updates = () => machine.port.calls(0, 'DxgkDdiUpdateMonitoredValues');
    const woken: string[] = [];
    app.waitWithCallback({ objects: [f], values: [5n] }, (r) => { woken.push(`5 ${r.status}`); });
    expect(rowView(w, app, f)).toMatchObject({ isRow: true, rowsLive: before.rowsLive, monitoredValue: 4n });
    expect(updates()).toBe(1);
    app.waitWithCallback({ objects: [f], values: [3n] }, (r) => { woken.push(`3 ${r.status}`); });
    app.waitWithCallback({ objects: [f], values: [9n] }, (r) => { woken.push(`9 ${r.status}`); }); // above MonitoredValue: no DDI
    expect(rowView(w, app, f)).toMatchObject({ isRow: true, rowsLive: before.rowsLive, monitoredValue: 2n });
    expect(updates()).toBe(2);
    expect(machine.os.inspect.pendingWaiters).toBe(3);
    expect(osModules(machine).adapters[0].withWaiters.hasId(before.coreFence)).toBe(true);
    // Satisfied at the call: no waiter, and the fence stays a row.
    const reached = app.createNativeFence({ hDevice, initialValue: 7n }).hSyncObject;
    const result = await app.waitAsync({ objects: [reached], values: [7n] });
    expect(result).toMatchObject({ status: 'SUCCESS', immediate: true });
    expect(rowView(w, app, reached).isRow).toBe(true);
    expect(machine.os.inspect.pendingWaiters).toBe(3);
    // Refused as before, and the foreign fence and a noWait fence stay rows only where nothing resolved them.
    expect(() => app.waitWithCallback({ objects: [foreign], values: [1n] }, () => {})).toThrow(/belongs to process "other", not "app"/);
    expect(processOf(other).handles.isRow(foreign)).toBe(true);
    const noWait = app.createNativeFence({ hDevice, flags: { noWait: true } }).hSyncObject;
    expect(() => app.waitWithCallback({ objects: [noWait], values: [1n] }, () => {})).toThrow(/created with flags\.noWait: it cannot be waited on/);
    const closed = app.createNativeFence({ hDevice }).hSyncObject;
    app.destroySynchronizationObject(closed);
    expect(() => app.waitWithCallback({ objects: [closed], values: [1n] }, () => {})).toThrow(/was closed or destroyed in process "app"/);
    expect(machine.os.inspect.pendingWaiters).toBe(3);
    // The first lookup makes the objects with the row's MonitoredValue; the waiters go on through them.
    expect(globalOf(w, app, f).monitoredValue).toBe(2n);
    expect(rowView(w, app, f).isRow).toBe(false);
    app.signal({ objects: [f], values: [5n] });
    await Promise.resolve();
    expect(woken).toEqual(['3 SUCCESS', '5 SUCCESS']);
    expect(monitoredValue(w, app, f)).toBe(8n);
    expect(globalOf(w, app, f).monitoredValue).toBe(8n);
  });

  it('NF-09 an interrupt wakes the waiters of a fence kept as a row by its core id (a list or a full scan): MonitoredValue follows, the fence stays a row', async () => {
    for (const payload of ['list', 'noList'] as const) {
      const w = await world({ trace: false, adapters: [{ interrupts: { payload } }] });
      const { app, hDevice, machine } = w;
      const [a, b] = [0, 1].map(() => app.createNativeFence({ hDevice }).hSyncObject);
      const woken: string[] = [];
      for (const [name, h, value] of [['a1', a, 1n], ['a3', a, 3n], ['b2', b, 2n]] as const) {
        app.waitWithCallback({ objects: [h], values: [value] }, (r) => { woken.push(`${name} ${r.status} ${r.timeNs}`); });
      }
      const rowA = rowView(w, app, a), rowB = rowView(w, app, b);
      const live = rowA.rowsLive;
      expect([rowA.monitoredValue, rowB.monitoredValue]).toEqual([0n, 1n]);
      const withWaiters = osModules(machine).adapters[0].withWaiters;
      rowA.write(1n);
      interrupt(machine, payload === 'list' ? [rowA.hGlobal] : null);
      await Promise.resolve();
      expect(woken).toEqual(['a1 SUCCESS 0']);
      expect(rowView(w, app, a)).toMatchObject({ isRow: true, rowsLive: live, monitoredValue: 2n });
      expect(machine.os.inspect.pendingWaiters).toBe(2);
      expect(machine.os.inspect.counters.fencesScanned).toBe(payload === 'list' ? 1 : 2); // a full scan reads both waited fences
      // A value past every waiter of a: its last leaves, MonitoredValue goes back to UINT64_MAX, and it leaves the waited set.
      rowA.write(7n);
      interrupt(machine, payload === 'list' ? [rowA.hGlobal] : null);
      await Promise.resolve();
      expect(woken).toEqual(['a1 SUCCESS 0', 'a3 SUCCESS 0']);
      expect(rowView(w, app, a)).toMatchObject({ isRow: true, rowsLive: live, monitoredValue: UINT64_MAX });
      expect([withWaiters.hasId(rowA.coreFence), withWaiters.hasId(rowB.coreFence), withWaiters.size]).toEqual([false, true, 1]);
      // NF-09's resample: a value written while the OS moves MonitoredValue is read again (here: before the interrupt's loop ends).
      rowB.write(2n);
      interrupt(machine, payload === 'list' ? [rowB.hGlobal] : null);
      await Promise.resolve();
      expect(woken).toHaveLength(3);
      expect(rowView(w, app, b)).toMatchObject({ isRow: true, rowsLive: live, monitoredValue: UINT64_MAX });
      expect(machine.os.inspect.pendingWaiters).toBe(0);
      expect(machine.os.inspect.counters.spuriousInterrupts).toBe(0);
    }
  });

  it('NF-05 a GPU progress report naming a fence kept as a row (a signal, a passed wait) makes none of its objects; a queue blocked on it and a GPU rewind of it do', async () => {
    const w = await world({ trace: true });
    const { app, hDevice, machine } = w;
    const [signalled, passed, blocking, rewound] = [0, 1, 2, 3].map(() => app.createNativeFence({ hDevice }).hSyncObject);
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    const queue = machine.os.inspect.hwQueueOf(app.kernel, q.hHwQueue);
    const adapter = osModules(machine).adapters[0];
    // The driver's reports of commands written behind the OS's back (no in-flight reference: the OS traces each as a fault).
    const report = (hSyncObject: number, Operation: 'SIGNAL' | 'WAIT_PASSED' | 'WAIT_BLOCKED', Value: bigint, PreviousValue?: bigint) =>
      osModules(machine).interrupts.onGpuProgress(adapter, { hQueue: queue.hHwQueue, QueueKind: 'HW_QUEUE', EngineOrdinal: 0, Operation, hSyncObject, Value, PreviousValue, GpuTimeNs: 0 });
    report(signalled, 'SIGNAL', 1n, 0n);
    report(passed, 'WAIT_PASSED', 0n);
    expect([signalled, passed].map((h) => rowView(w, app, h).isRow)).toEqual([true, true]);
    const unseen = machine.trace.find({ kind: 'fault', name: 'GPU executed a command the OS never saw submitted' });
    expect(unseen.map((e) => e.args.hSyncObject)).toEqual([signalled, passed]); // the same fault as for a fence with objects
    report(blocking, 'WAIT_BLOCKED', 5n);
    expect(rowView(w, app, blocking).isRow).toBe(false);
    expect(queue.gpu.blocked).toMatchObject({ local: { handle: blocking }, value: 5n });
    report(rewound, 'SIGNAL', 2n, 7n);
    expect(rowView(w, app, rewound).isRow).toBe(false);
    expect(machine.trace.find({ kind: 'gpu', name: 'gpu rewind' }).map((e) => e.args)).toMatchObject([{ fence: globalOf(w, app, rewound).label, from: '7', to: '2' }]);
  });

  it('NF-15 a fence kept as a row and closed while waited releases its waiters with OBJECT_DESTROYED; a device removal wakes the rest', async () => {
    const w = await world({ trace: false });
    const { app, hDevice, machine } = w;
    const [a, b, c] = [0, 1, 2].map(() => app.createNativeFence({ hDevice }).hSyncObject);
    const results: string[] = [];
    for (const [name, h] of [['a', a], ['b', b], ['c', c]] as const) {
      app.waitWithCallback({ objects: [h], values: [10n] }, (r) => { results.push(`${name} ${r.status}`); });
    }
    expect([a, b, c].map((h) => rowView(w, app, h).isRow)).toEqual([true, true, true]);
    app.destroySynchronizationObject(a);
    await Promise.resolve();
    expect(results).toEqual(['a OBJECT_DESTROYED']);
    expect(machine.os.inspect.pendingWaiters).toBe(2);
    expect(() => app.waitWithCallback({ objects: [a], values: [1n] }, () => {})).toThrow(/was closed or destroyed/);
    machine.removeDevice(0, 'test TDR'); // the reset signals b and c to UINT64_MAX
    await Promise.resolve();
    expect(results).toEqual(['a OBJECT_DESTROYED', 'b SUCCESS', 'c SUCCESS']);
    expect(machine.os.inspect.pendingWaiters).toBe(0);
  });
});
