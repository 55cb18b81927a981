// waitWithCallback: the CPU wait with a callback instead of a promise (src/user/runtime.ts). It must be waitAsync in
// every respect but the promise: the same checks and errors, results, completion order and trace, and a callback
// that runs only once the OS is done (so one that throws, or calls the OS again, cannot leave the OS half-way).
import { describe, it, expect } from 'vitest';
import { createMachine, Random, type MachineOptions, type WaitResult } from '../src/index.js';
import { attemptLogger, monitoredValue, UINT64_MAX, world } from './helpers.js';

type Form = 'promise' | 'callback';

/**
 * Runs `steps` seeded calls on a fresh machine, every wait made in `form`: one-fence waits (the short path when
 * tracing is off), two-fence waits any/all with a timeout, bad waits, signals, runs. Returns what each call did and
 * every completion in the order it arrived, and the trace's text.
 */
async function course(form: Form, options: MachineOptions, seed: number, steps: number): Promise<{ log: string[]; trace: string }> {
  const machine = await createMachine({ seed: 5, ...options });
  const app = machine.createProcess('app');
  const other = machine.createProcess('other');
  const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
  const fences = [app.createNativeFence({ hDevice }).hSyncObject, app.createNativeFence({ hDevice, initialValue: 10n }).hSyncObject];
  const noWait = app.createNativeFence({ hDevice, flags: { noWait: true } }).hSyncObject;
  const foreign = other.createNativeFence({ hDevice: other.createDevice({ hAdapter: other.openAdapter(0) }) }).hSyncObject;
  const random = new Random(seed);
  const log: string[] = [];
  const state = () => fences.map((h) => `${app.readFenceValue(h)}/${monitoredValue({ machine }, app, h)}`).join(' ');
  const wait = (args: Parameters<typeof app.waitAsync>[0], name: string) => {
    const done = (r: WaitResult) => { log.push(`woke ${name} ${r.status} ${r.immediate} ${r.index} ${r.timeNs}`); };
    if (form === 'promise') void app.waitAsync(args, name).then(done);
    else app.waitWithCallback(args, done, name);
  };
  const attempt = attemptLogger(log, state, { parameter: true });
  for (let step = 0; step < steps; step++) {
    const pick = random.nextU32() % 10;
    const h = fences[random.nextU32() % 2];
    const name = `w${step}`;
    if (pick <= 3) {
      const value = app.readFenceValue(h) + BigInt(random.nextU32() % 6);
      attempt(`wait ${name} ${value}`, () => wait({ objects: [h], values: [value] }, name));
    } else if (pick === 4) {
      const values = [app.readFenceValue(fences[0]) + 2n, app.readFenceValue(fences[1]) + 1n];
      const waitAny = random.nextU32() % 2 === 0;
      const timeoutNs = random.nextU32() % 3 === 0 ? 0 : 60;
      attempt(`wait ${name} both ${waitAny} ${timeoutNs}`, () => wait({ objects: [fences[0], fences[1]], values, waitAny, timeoutNs }, name));
    } else if (pick === 5) {
      const bad = [{ objects: [foreign], values: [1n] }, { objects: [noWait], values: [1n] }, { objects: [h], values: [-1n] },
        { objects: [h, h], values: [1n, 1n] }, { objects: [h], values: [1n], extra: true }, { objects: [], values: [] }][random.nextU32() % 6];
      attempt(`wait ${name} bad`, () => wait(bad as never, name));
    } else if (pick <= 7) {
      attempt(`signal ${h}`, () => app.signal({ objects: [h], values: [app.readFenceValue(h) + BigInt(random.nextU32() % 4)] }));
    } else if (pick === 8) {
      const queue = app.createHwQueue({ hDevice, engine: 0, nativeProgressFence: false });
      app.submit({ hHwQueue: queue.hHwQueue, commands: [{ work: { durationNs: 40 } }, { signal: { hSyncObject: h, value: app.readFenceValue(h) + 3n } }] });
      log.push(`submitted ${h}`);
    } else {
      machine.run();
      log.push(`run ${machine.nowNs} ${state()}`);
    }
    await Promise.resolve(); // completions land in the log between the calls that caused them
    await Promise.resolve();
  }
  machine.run();
  await new Promise((r) => setImmediate(r));
  log.push(`end ${state()} woken ${machine.summary().os.waitersWoken} stuck ${machine.stuck().waiters.length}`);
  return { log, trace: machine.trace.text() };
}

/**
 * Runs `body`, then lets the microtasks and callbacks it queued run, with uncaught exceptions (a throwing callback's
 * error) collected into `into` instead of failing the test run.
 */
async function capturingUncaught(into: unknown[], body: () => void): Promise<void> {
  process.setUncaughtExceptionCaptureCallback((error) => { into.push(error); });
  try {
    body();
    await new Promise((r) => setImmediate(r));
  } finally {
    process.setUncaughtExceptionCaptureCallback(null);
  }
}

describe('waitWithCallback', () => {
  it('NF-08 takes the same course as waitAsync for the same seeded waits: results, refusals, completion order, MonitoredValues, and the trace byte for byte', async () => {
    for (const seed of [1, 2, 3]) {
      for (const trace of [false, true]) {
        const promise = await course('promise', { trace }, seed, 300);
        const callback = await course('callback', { trace }, seed, 300);
        expect(callback.log).toEqual(promise.log);
        expect(callback.trace).toBe(promise.trace);
        const text = callback.log.join('\n');
        // The sequence exercised what it is for.
        expect(text).toMatch(/woke w\d+ SUCCESS false undefined/); // a short-path waiter woken later
        expect(text).toMatch(/woke w\d+ SUCCESS true/); // satisfied at the call
        expect(text).toMatch(/woke w\d+ TIMEOUT/);
        expect(text).toMatch(/woke w\d+ SUCCESS false [01] /); // a wait-any's index
        expect(text).toMatch(/INVALID_HANDLE objects\[0\]/);
        expect(text).toMatch(/INVALID_PARAMETER/);
        if (trace) expect(callback.trace).toMatch(/waiter woken/);
      }
    }
  });

  it('NF-08 a callback runs only after the OS call that completed its wait is over (a microtask), in completion order, with the WaitResult', async () => {
    const w = await world({ trace: false });
    const { app, hDevice } = w;
    const f = app.createNativeFence({ hDevice, initialValue: 5n }).hSyncObject;
    const seen: string[] = [];
    const note = (name: string) => (r: WaitResult) => { seen.push(`${name} ${r.status} ${r.immediate}`); };
    app.waitWithCallback({ objects: [f], values: [3n] }, note('now')); // satisfied at the call: no waiter
    expect(seen).toEqual([]); // never inside the call
    app.waitWithCallback({ objects: [f], values: [9n] }, note('nine'));
    app.waitWithCallback({ objects: [f], values: [7n] }, note('seven'));
    app.waitWithCallback({ objects: [f], values: [7n] }, note('seven again'));
    expect(w.machine.inspectFence(app, f).cpuWaiters).toBe(3);
    expect(monitoredValue(w, app, f)).toBe(6n); // NF-02: the smallest waited value − 1
    app.signal({ objects: [f], values: [8n] });
    expect(seen).toEqual([]);
    expect(w.machine.inspectFence(app, f).cpuWaiters).toBe(1); // the OS is done with the two it satisfied
    expect(monitoredValue(w, app, f)).toBe(8n);
    await Promise.resolve();
    expect(seen).toEqual(['now SUCCESS true', 'seven SUCCESS false', 'seven again SUCCESS false']);
  });

  it('NF-08 a bad callback or a bad wait is refused naming what was wrong, and changes nothing', async () => {
    const w = await world({ trace: true });
    const { app, hDevice } = w;
    const f = app.createNativeFence({ hDevice }).hSyncObject;
    const before = w.machine.trace.text();
    let called = 0;
    const callback = () => { called++; };
    for (const bad of [undefined, null, 'callback', { then: () => {} }, 1]) {
      expect(() => app.waitWithCallback({ objects: [f], values: [1n] }, bad as never)).toThrow(
        expect.objectContaining({ status: 'INVALID_PARAMETER', parameter: 'callback', expected: 'a function (result: WaitResult) => void' }));
    }
    expect(() => app.waitWithCallback({ objects: [f + 1000], values: [1n] }, callback)).toThrow(expect.objectContaining({ status: 'INVALID_HANDLE', parameter: 'objects[0]' }));
    expect(() => app.waitWithCallback({ objects: [f], values: [1n], timeoutNs: -1 }, callback)).toThrow(expect.objectContaining({ parameter: 'timeoutNs' }));
    expect(() => app.waitWithCallback({ objects: [f], values: [1n], unknown: 1 } as never, callback)).toThrow(/unknown/);
    await new Promise((r) => setImmediate(r));
    expect(called).toBe(0);
    expect(w.machine.inspectFence(app, f).cpuWaiters).toBe(0);
    expect(monitoredValue(w, app, f)).toBe(UINT64_MAX);
    expect(w.machine.trace.text()).toBe(before);
    expect(w.machine.stuck().waiters).toEqual([]);
  });

  it('NF-10 a callback that throws changes nothing in the OS: every other waiter is woken, MonitoredValue is right, the error is an uncaught exception', async () => {
    const w = await world({ trace: false });
    const { app, hDevice } = w;
    const f = app.createNativeFence({ hDevice }).hSyncObject;
    const g = app.createNativeFence({ hDevice }).hSyncObject;
    const seen: string[] = [];
    const uncaught: unknown[] = [];
    await capturingUncaught(uncaught, () => {
      for (let i = 1; i <= 6; i++) {
        app.waitWithCallback({ objects: [f], values: [BigInt(i)] }, (r) => {
          seen.push(`f${i} ${r.status}`);
          if (i === 2 || i === 4 || i === 6) throw new Error(`callback ${i} failed`);
        });
      }
      app.waitWithCallback({ objects: [f], values: [10n] }, (r) => { seen.push(`f10 ${r.status}`); });
      // A callback may call the OS: it runs after the OS is done, so this signal is a call of its own.
      app.waitWithCallback({ objects: [f], values: [3n] }, () => { seen.push('signal g'); app.signal({ objects: [g], values: [1n] }); });
      app.waitWithCallback({ objects: [g], values: [1n] }, (r) => { seen.push(`g1 ${r.status}`); });
      app.signal({ objects: [f], values: [5n] });
    });
    expect(seen).toEqual(['f1 SUCCESS', 'f2 SUCCESS', 'f3 SUCCESS', 'signal g', 'f4 SUCCESS', 'f5 SUCCESS', 'g1 SUCCESS']);
    expect(uncaught.map((e) => (e as Error).message)).toEqual(['callback 2 failed', 'callback 4 failed']);
    expect(w.machine.inspectFence(app, f).cpuWaiters).toBe(2); // 6 and 10
    expect(monitoredValue(w, app, f)).toBe(5n);
    expect(monitoredValue(w, app, g)).toBe(UINT64_MAX);
    expect(w.machine.stuck().waiters.map((x) => x.label)).toEqual(['app:async', 'app:async']);
    expect(w.machine.summary().os.waitersWoken).toBe(7);
    // The OS goes on as before.
    await capturingUncaught(uncaught, () => {
      app.signal({ objects: [f], values: [10n] });
    });
    expect(uncaught).toHaveLength(3); // f6's
    expect(seen.slice(-2)).toEqual(['f6 SUCCESS', 'f10 SUCCESS']);
    expect(w.machine.stuck().waiters).toEqual([]);
  });
});

describe('what satisfied waits hold', () => {
  it('NF-08 waiters woken at one time share one frozen SUCCESS result; one callback for many waiters that throws part-way still runs for every waiter, in order', async () => {
    const w = await world({ trace: false });
    const { app, hDevice } = w;
    const f = app.createNativeFence({ hDevice }).hSyncObject;
    const results: WaitResult[] = [];
    const uncaught: unknown[] = [];
    // One function for every waiter, as a caller of many waits passes (the due callbacks are kept run-length).
    const callback = (r: WaitResult) => {
      results.push(r);
      if (results.length === 2 || results.length === 4) throw new Error(`call ${results.length} failed`);
    };
    for (let i = 0; i < 6; i++) app.waitWithCallback({ objects: [f], values: [1n] }, callback);
    await capturingUncaught(uncaught, () => {
      app.signal({ objects: [f], values: [1n] });
    });
    expect(results).toHaveLength(6);
    expect(uncaught.map((e) => (e as Error).message)).toEqual(['call 2 failed', 'call 4 failed']);
    expect(new Set(results).size).toBe(1); // one object for the six
    expect(results[0]).toEqual({ status: 'SUCCESS', timeNs: w.machine.nowNs, immediate: false, index: undefined });
    expect(Object.isFrozen(results[0])).toBe(true);
    expect(() => { 'use strict'; (results[0] as { status: string }).status = 'TIMEOUT'; }).toThrow(TypeError);
    // Satisfied at the call: a result of its own kind; a wait-any keeps its own result (its index).
    const g = app.createNativeFence({ hDevice }).hSyncObject;
    const later: WaitResult[] = [];
    app.waitWithCallback({ objects: [f], values: [1n] }, (r) => later.push(r));
    app.waitWithCallback({ objects: [g, f], values: [5n, 7n], waitAny: true }, (r) => later.push(r));
    app.signal({ objects: [f], values: [7n] });
    await Promise.resolve();
    expect(later).toEqual([
      { status: 'SUCCESS', timeNs: w.machine.nowNs, immediate: true, index: undefined },
      { status: 'SUCCESS', timeNs: w.machine.nowNs, immediate: false, index: 1 },
    ]);
    expect(Object.isFrozen(later[1])).toBe(false);
    expect(w.machine.stuck().waiters).toEqual([]);
  });

  it('NF-08 waiters added through the short path keep their labels and owners (a run of one label and owner is one shared pair) through wakes, retirements and reuse, as tools list them', async () => {
    const w = await world({ trace: false });
    const { app, hDevice, machine } = w;
    const f = app.createNativeFence({ hDevice }).hSyncObject;
    const other = machine.createProcess('other');
    const g = other.createNativeFence({ hDevice: other.createDevice({ hAdapter: other.openAdapter(0) }) }).hSyncObject;
    const wait = (p: typeof app, h: number, value: bigint, label?: string) => p.waitWithCallback({ objects: [h], values: [value] }, () => {}, label);
    wait(app, f, 1n, 'a'); wait(app, f, 2n, 'a'); wait(app, f, 3n, 'a');
    wait(app, f, 4n, 'b'); wait(app, f, 5n, 'b');
    wait(other, g, 1n, 'a'); // the same label text, another process: another owner
    wait(app, f, 6n, 'a'); wait(app, f, 7n);
    const listed = () => machine.stuck().waiters.map((x) => `${x.label}/${x.process}/${x.waits.map((e) => e.value).join()}`);
    expect(listed()).toEqual(['app:a/app/1', 'app:a/app/2', 'app:a/app/3', 'app:b/app/4', 'app:b/app/5', 'other:a/other/1', 'app:a/app/6', 'app:async/app/7']);
    app.signal({ objects: [f], values: [4n] }); // the first three 'a' and the first 'b' go; their ids are reused below
    wait(app, f, 8n, 'c'); wait(app, f, 9n, 'b'); wait(app, f, 10n, 'c');
    expect(listed()).toEqual(['app:b/app/5', 'other:a/other/1', 'app:a/app/6', 'app:async/app/7', 'app:c/app/8', 'app:b/app/9', 'app:c/app/10']);
    other.signal({ objects: [g], values: [1n] });
    app.signal({ objects: [f], values: [10n] });
    expect(listed()).toEqual([]);
    wait(app, f, 11n, 'd');
    expect(listed()).toEqual(['app:d/app/11']);
    await new Promise((r) => setImmediate(r));
  });
});
