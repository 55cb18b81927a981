// Worker mode: adapters in worker threads on the one shared memory (real time).
import { it, expect } from 'vitest';
import { runWorkerStress, workerStressText } from '../src/workers/worker-mode.js';

it('XA-02 worker mode stress: adapters in worker threads share each fence word; every reached wait wakes, nothing torn, nothing left blocked', async () => {
  const report = await runWorkerStress({ adapters: 4, fences: 8, producersPerAdapter: 1, consumersPerAdapter: 2, waitsPerConsumer: 10_000, lastValue: 20_000, seed: 11, budgetMs: 90_000 });
  console.log(workerStressText(report));
  expect(report.errors).toEqual([]);
  expect(report.workers).toBe(12);
  expect(report.waits).toBe(4 * 2 * 10_000);
  expect(report.timeouts).toBe(0);
  expect(report.torn).toBe(0);
  expect(report.short).toBe(0);
  expect(report.leftBlocked).toBe(0);
  expect(report.finalValuesOk).toBe(true);
  expect(report.wakes).toBeGreaterThan(0); // some waits really slept and were woken by another thread
  expect(report.signals).toBeGreaterThan(0);
}, 120_000);

it('worker mode rejects bad options naming the option', async () => {
  await expect(runWorkerStress({ adapters: 1 })).rejects.toThrow(/adapters/);
  await expect(runWorkerStress({ producersPerAdapter: 0 })).rejects.toThrow(/producersPerAdapter/);
  await expect(runWorkerStress({ threads: 4 } as never)).rejects.toThrow(/threads/);
});

it('XA-02 a thread that must not block (a browser main thread) waits on the shared word with Atomics.waitAsync while a worker signals it', async () => {
  const { createMachineSync } = await import('../src/index.js');
  const { waitForFenceWordAsync } = await import('../src/workers/worker-mode.js');
  const { Worker } = await import('node:worker_threads');
  const machine = createMachineSync({ seed: 1, trace: false, adapters: [{ name: 'a' }, { name: 'b' }] });
  const app = machine.createProcess('app');
  const dA = app.createDevice({ hAdapter: app.openAdapter('a') });
  const dB = app.createDevice({ hAdapter: app.openAdapter('b') });
  const f = app.createNativeFence({ hDevice: dA, flags: { shared: true, crossAdapter: true } });
  const onB = app.openNativeFenceFromNtHandle({ hNtHandle: app.shareObject(f.hSyncObject), hDevice: dB });
  const record = machine.os.inspect.fenceOf(app.kernel, onB.hSyncObject);
  const pending = waitForFenceWordAsync(machine.memory, record.cvPhys, 3n, 10_000);
  // A worker attached to adapter b signals 1, 2, 3 through b's record.
  const worker = new Worker(`
    const { workerData } = require('node:worker_threads');
    const core = new WebAssembly.Instance(workerData.module, { env: { memory: workerData.memory, abort() {} } }).exports;
    if (core.adapterAttach(workerData.base) !== 0) throw new Error('attach failed');
    for (const v of [1n, 2n, 3n]) { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5); core.fenceCpuSignal(workerData.fence, v); }
  `, { eval: true, workerData: { module: machine.module, memory: machine.memory, base: machine.adapter('b').privateBase, fence: record.coreFence } });
  expect(await pending).toBe('ok');
  await new Promise((resolve) => worker.on('exit', resolve));
  expect(app.readFenceValue(f.hSyncObject)).toBe(3n);
  expect(await waitForFenceWordAsync(machine.memory, record.cvPhys, 4n, 20)).toBe('timed-out');
  await expect(waitForFenceWordAsync(machine.memory, 3, 1n)).rejects.toThrow(/cvPhys/);
});

it('XA-02 worker mode reports a run that overruns its budget instead of hanging, and the JavaScript Atomics.wait path agrees with the core\'s', async () => {
  const slow = await runWorkerStress({ adapters: 2, fences: 2, waitsPerConsumer: 2_000_000, lastValue: 2_000_000, budgetMs: 300 });
  expect(slow.errors.join(' ')).toMatch(/did not end within 300 ms/);
  const js = await runWorkerStress({ adapters: 2, fences: 3, waitsPerConsumer: 2000, lastValue: 3000, waitWith: 'js', seed: 5 });
  expect(js.errors).toEqual([]);
  expect([js.timeouts, js.torn, js.short, js.leftBlocked]).toEqual([0, 0, 0, 0]);
  expect(js.finalValuesOk).toBe(true);
}, 60_000);

it('XA-07 worker mode: producers ring the doorbells of the other adapters while each adapter\'s scheduler thread takes the records; none lost, none torn', async () => {
  const report = await runWorkerStress({ adapters: 3, fences: 4, consumersPerAdapter: 1, waitsPerConsumer: 2000, lastValue: 6000, seed: 21, doorbell: true, doorbellRingEntries: 64 });
  console.log(workerStressText(report));
  expect(report.errors).toEqual([]);
  expect(report.workers).toBe(3 * 2 + 3); // producer + consumer per adapter, and a scheduler per adapter
  const d = report.doorbell!;
  expect(d.posted + d.full).toBe(report.signals * 2); // every signal rang both other adapters (or hit a full ring)
  expect(d.taken).toBe(d.posted);                     // every record posted was taken
  expect(d.bad).toBe(0);                               // and named a known fence word with a whole value
  expect(d.leftInRings).toBe(0);
  expect([report.timeouts, report.torn, report.short, report.leftBlocked]).toEqual([0, 0, 0, 0]);
  expect(report.finalValuesOk).toBe(true);
}, 120_000);
