import { describe, it, expect } from 'vitest';
import { createMachine, Random, DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED } from '../src/index.js';
import { world, globalOf, osModules } from './helpers.js';

describe('the native fence signaled interrupt', () => {
  it('INT-01 the interrupt lists exactly the signalled fences that have CPU waiters, or carries no list (scan every waiter)', async () => {
    for (const payload of ['list', 'noList'] as const) {
      const w = await world({ adapters: [{ interrupts: { payload } }] });
      const { app, hDevice, machine } = w;
      const watched = app.createNativeFence({ hDevice });
      const quiet = app.createNativeFence({ hDevice });
      const other = app.createNativeFence({ hDevice });
      void app.waitAsync({ objects: [watched.hSyncObject], values: [1n] });
      void app.waitAsync({ objects: [other.hSyncObject], values: [1n] });
      const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
      app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: watched.hSyncObject, value: 1n } }, { signal: { hSyncObject: quiet.hSyncObject, value: 1n } }] });
      machine.run();
      const interrupt = machine.trace.find({ kind: 'interrupt' });
      expect(interrupt).toHaveLength(1);
      // The driver's DXGKARGCB_NOTIFY_INTERRUPT_DATA as the OS received it: type 19 (WDDM-FACTS.md), engine 0.
      expect(DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED).toBe(19);
      expect(interrupt[0].name).toBe('DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED');
      expect(interrupt[0].args).toMatchObject({ InterruptType: 19, NodeOrdinal: 0, EngineOrdinal: 0, EvaluateLegacyMonitoredFences: false });
      expect(interrupt[0].args.SignaledNativeFenceCount).toBe(payload === 'list' ? 1 : 0);
      if (payload === 'list') {
        expect(interrupt[0].args.pSignaledNativeFenceArray).toEqual([globalOf(w, app, watched.hSyncObject).hGlobal]);
        expect(machine.os.inspect.counters.fullScans).toBe(0);
        expect(machine.os.inspect.counters.fencesScanned).toBe(1);
      } else {
        expect(interrupt[0].args.pSignaledNativeFenceArray).toBe('NULL');
        expect(machine.os.inspect.counters.fullScans).toBe(1);
        expect(machine.os.inspect.counters.fencesScanned).toBe(2); // every fence with a waiter
      }
      expect(machine.os.inspect.pendingWaiters).toBe(1); // `other` still waits
    }
  });

  it('INT-01 a no-list interrupt scans exactly the fences with CPU waiters (kept as a bit per core id, across many words), in core id order, and a fence leaves them with its last waiter', async () => {
    const w = await world({ trace: false, adapters: [{ interrupts: { payload: 'noList' } }] });
    const { app, hDevice, machine } = w;
    const fences = Array.from({ length: 200 }, () => app.createNativeFence({ hDevice }).hSyncObject);
    const adapter = globalOf(w, app, fences[0]).adapter;
    const waited = [199, 3, 64, 65, 130, 31, 32]; // out of order, in five 32-bit words
    const woken: number[] = [];
    for (const i of waited) app.waitWithCallback({ objects: [fences[i]], values: [1n] }, () => { woken.push(i); });
    app.waitWithCallback({ objects: [fences[64]], values: [2n] }, () => { woken.push(-64); }); // a second waiter on one fence
    const idsOf = () => [...adapter.withWaiters].map((f) => f.coreFence);
    const coreIds = (list: number[]) => list.map((i) => globalOf(w, app, fences[i]).coreFence).sort((x, y) => x - y);
    expect(idsOf()).toEqual(coreIds(waited));
    expect(adapter.withWaiters.size).toBe(7);
    expect(adapter.withWaiters.has(globalOf(w, app, fences[4]))).toBe(false);
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    // Signal the first and the last waited fences (the scan's bounds move in) and 64 to 1 (its other waiter stays).
    app.submit({ hHwQueue: q.hHwQueue, commands: [3, 199, 64, 150].map((i) => ({ signal: { hSyncObject: fences[i], value: 1n } })) });
    machine.run();
    await Promise.resolve();
    expect(woken.sort((x, y) => x - y)).toEqual([3, 64, 199]);
    expect(idsOf()).toEqual(coreIds([31, 32, 64, 65, 130]));
    expect(machine.os.inspect.counters.fullScans).toBeGreaterThan(0);
    // Every waiter gone: nothing is left to scan.
    app.signal({ objects: [fences[31]], values: [1n] });
    app.submit({ hHwQueue: q.hHwQueue, commands: [32, 64, 65, 130].map((i) => ({ signal: { hSyncObject: fences[i], value: 2n } })) });
    machine.run();
    await Promise.resolve();
    expect(idsOf()).toEqual([]);
    expect(adapter.withWaiters.size).toBe(0);
    expect(woken).toHaveLength(8);
    expect(machine.os.inspect.pendingWaiters).toBe(0);
  });

  it('INT-01 a fence leaves the scanned set with its last waiter however the waiter goes (timed out; a wait-any woken by another fence), so a no-list scan counts the same with the trace on or off', async () => {
    const scanned: number[] = [];
    for (const trace of [false, true]) {
      const w = await world({ trace, adapters: [{ interrupts: { payload: 'noList' } }] });
      const { app, hDevice, machine } = w;
      const [timed, left, other, gpu] = [0, 1, 2, 3].map(() => app.createNativeFence({ hDevice }).hSyncObject);
      const adapter = globalOf(w, app, timed).adapter;
      void app.waitAsync({ objects: [timed], values: [5n], timeoutNs: 1000 });
      void app.waitAsync({ objects: [left, other], values: [1n, 1n], waitAny: true });
      machine.run(); // the timed wait times out
      app.signal({ objects: [other], values: [1n] }); // the wait-any is woken by `other`: its block on `left` is retired
      app.signal({ objects: [timed], values: [1n] }); // no waiter left on `timed`
      await Promise.resolve();
      expect(machine.os.inspect.pendingWaiters, `trace ${trace}`).toBe(0);
      expect([...adapter.withWaiters], `trace ${trace}: no fence has a CPU waiter`).toEqual([]);
      // A GPU signal of a waited fence with no list: the OS scans the fences with CPU waiters, that one alone.
      void app.waitAsync({ objects: [gpu], values: [1n] });
      const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
      app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: gpu, value: 1n } }] });
      machine.run();
      expect(machine.os.inspect.counters.fullScans, `trace ${trace}`).toBe(1);
      scanned.push(machine.os.inspect.counters.fencesScanned);
    }
    expect(scanned).toEqual([1, 1]);
  });

  it('INT-02 several signals collapse into one interrupt; more fences than the list holds collapse to no list', async () => {
    const w = await world({ adapters: [{ limits: { interruptListEntries: 2 } }] });
    const { app, hDevice, machine } = w;
    const fences = [0, 1, 2].map(() => app.createNativeFence({ hDevice }).hSyncObject);
    fences.forEach((h) => void app.waitAsync({ objects: [h], values: [1n] }));
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: fences.slice(0, 2).map((h) => ({ signal: { hSyncObject: h, value: 1n } })) });
    machine.run();
    let interrupts = machine.trace.find({ kind: 'interrupt' });
    expect(interrupts).toHaveLength(1); // two signals, one interrupt
    expect((interrupts[0].args.pSignaledNativeFenceArray as number[]).length).toBe(2);
    // Three more waits, three signals before the ISR: the list (2 entries) overflows → NULL.
    fences.forEach((h) => void app.waitAsync({ objects: [h], values: [2n] }));
    app.submit({ hHwQueue: q.hHwQueue, commands: fences.map((h) => ({ signal: { hSyncObject: h, value: 2n } })) });
    machine.run();
    interrupts = machine.trace.find({ kind: 'interrupt' });
    expect(interrupts).toHaveLength(2);
    expect(interrupts[1].args.pSignaledNativeFenceArray).toBe('NULL');
    expect(machine.os.inspect.pendingWaiters).toBe(0);
  });

  it('INT-03 a destroyed fence in the list bug-checks that adapter only, naming the handle; nothing else is lost', async () => {
    const machine = await createMachine({ seed: 3, adapters: [{ name: 'bad' }, { name: 'good' }] });
    const app = machine.createProcess('app');
    const devBad = app.createDevice({ hAdapter: app.openAdapter('bad') });
    const devGood = app.createDevice({ hAdapter: app.openAdapter('good') });
    const doomed = app.createNativeFence({ hDevice: devBad });
    const stuck = app.createNativeFence({ hDevice: devBad });
    const fine = app.createNativeFence({ hDevice: devGood });
    const hGlobal = globalOf({ machine }, app, doomed.hSyncObject).hGlobal;
    const stuckWait = app.waitAsync({ objects: [stuck.hSyncObject], values: [1n] });
    const fineWait = app.waitAsync({ objects: [fine.hSyncObject], values: [1n] });
    app.destroySynchronizationObject(doomed.hSyncObject);
    // A faulty driver reports the destroyed fence.
    osModules(machine).interrupts.notifyInterrupt(osModules(machine).adapters[0], {
      InterruptType: DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED, NodeOrdinal: 0, EngineOrdinal: 0, SignaledNativeFenceCount: 1,
      pSignaledNativeFenceArray: [hGlobal], hHWQueue: 0, Flags: { EvaluateLegacyMonitoredFences: false },
    });
    expect(machine.os.inspect.bugChecks).toHaveLength(1);
    expect(machine.os.inspect.bugChecks[0]).toMatchObject({ adapter: 'bad', code: 'NATIVE_FENCE_INTERRUPT_INVALID_HANDLE' });
    expect(machine.os.inspect.bugChecks[0].message).toContain(`hGlobalNativeFence 0x${hGlobal.toString(16)}, which is a destroyed native fence`);
    await expect(stuckWait).resolves.toMatchObject({ status: 'ADAPTER_STOPPED' });
    expect(() => app.signal({ objects: [stuck.hSyncObject], values: [1n] })).toThrow(/adapter "bad" is stopped after a bug check/);
    // The other adapter goes on.
    app.signal({ objects: [fine.hSyncObject], values: [1n] });
    await expect(fineWait).resolves.toMatchObject({ status: 'SUCCESS' });
    expect(machine.summary().adapters.map((a) => a.state)).toEqual(['stopped', 'running']);
  });

  it('INT-03 the reference driver never reports a fence destroyed between the signal and its ISR', async () => {
    const { app, hDevice, machine } = await world();
    const f = app.createNativeFence({ hDevice });
    const wait = app.waitAsync({ objects: [f.hSyncObject], values: [1n] });
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 1n } }] });
    machine.run(machine.nowNs + 500); // signal executed, ISR not yet run
    app.destroySynchronizationObject(f.hSyncObject);
    await expect(wait).resolves.toMatchObject({ status: 'OBJECT_DESTROYED' });
    machine.run();
    expect(machine.os.inspect.bugChecks).toEqual([]);
  });

  it('INT-06 whenever a GPU signal makes CurrentValue > MonitoredValue of a fence with a waiter, the next interrupt lists it or has no list', async () => {
    for (const payload of ['list', 'noList'] as const) {
      const w = await world({ seed: 11, adapters: [{ interrupts: { payload } }], timing: { interruptLatencyNs: 900 } });
      const { app, hDevice, machine } = w;
      const random = new Random(11);
      const fences = [0, 1, 2].map(() => app.createNativeFence({ hDevice }).hSyncObject);
      const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
      const values = [0n, 0n, 0n];
      for (let i = 0; i < 60; i++) {
        const k = random.below(3);
        if (random.next() < 0.5) void app.waitAsync({ objects: [fences[k]], values: [values[k] + 1n] });
        values[k] += 1n;
        app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: fences[k], value: values[k] } }] });
        machine.run(machine.nowNs + random.below(1500));
      }
      machine.run();
      const handleOf = new Map(fences.map((h) => [globalOf(w, app, h).hGlobal, h]));
      const events = machine.trace.events;
      let raisedChecked = 0;
      events.forEach((e, i) => {
        if (e.kind !== 'cmp' || e.name !== 'interrupt raised') return;
        const signal = events[i - 1];
        const next = events.slice(i).find((x) => x.kind === 'interrupt');
        expect(next, 'an interrupt follows every raise').toBeDefined();
        const list = next!.args.pSignaledNativeFenceArray;
        if (list !== 'NULL') expect([...(list as number[])].map((h) => handleOf.get(h))).toContain(signal.args.hSyncObject);
        raisedChecked++;
      });
      expect(raisedChecked).toBeGreaterThan(5);
      expect(machine.os.inspect.lostWakeups()).toEqual([]);
      expect(machine.os.inspect.pendingWaiters).toBe(0);
    }
  });
});
