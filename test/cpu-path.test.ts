// The CPU signal and wait calls take a short path for the common case (one fence, tracing off, no DDI
// observer: src/os/signals.ts signalOne, src/os/waits.ts). These tests run the same seeded sequence of
// calls, good and bad, on machines that take it and machines that cannot (tracing on, an observer), and
// expect the same outcome call by call: values, errors, wakes in order, MonitoredValues, DDI counts.
import { describe, it, expect } from 'vitest';
import { createMachine, Random, type MachineOptions, type WaitResult } from '../src/index.js';
import { attemptLogger, globalOf, monitoredValue, UINT64_MAX } from './helpers.js';

const DDIS = ['DxgkDdiUpdateCurrentValuesFromCpu', 'DxgkDdiUpdateMonitoredValues'] as const;

/** Runs `steps` seeded calls on a fresh machine built with `options`; returns what each call did, in order. */
async function run(options: MachineOptions, seed: number, steps: number): Promise<string[]> {
  const machine = await createMachine({ seed: 7, ...options });
  const app = machine.createProcess('app');
  const other = machine.createProcess('other');
  const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
  const otherDevice = other.createDevice({ hAdapter: other.openAdapter(0) });
  const fences = [
    app.createNativeFence({ hDevice }).hSyncObject,
    app.createNativeFence({ hDevice, initialValue: 100n }).hSyncObject,
    app.createNativeFence({ hDevice, flags: { noSignal: true } }).hSyncObject,
    app.createSynchronizationObject({ hDevice, type: 'MONITORED_FENCE' }).hSyncObject,
  ];
  const foreign = other.createNativeFence({ hDevice: otherDevice }).hSyncObject;
  const closed = app.createNativeFence({ hDevice }).hSyncObject;
  app.destroySynchronizationObject(closed);
  const hEvent = app.createEvent();
  const random = new Random(seed);
  const log: string[] = [];
  const w = { machine };
  const state = () => fences.map((h) => `${app.readFenceValue(h)}/${monitoredValue(w, app, h)}`).join(' ');
  const attempt = attemptLogger(log, state);
  const near = (h: number) => {
    const current = app.readFenceValue(h);
    const step = BigInt(random.nextU32() % 7) - 2n; // now and then behind: a refused rewind
    return current + step < 0n ? 0n : current + step;
  };
  let label = 0;
  const wake = (name: string) => (r: WaitResult) => { log.push(`woke ${name} ${r.status} ${r.immediate} ${r.index}`); };
  for (let step = 0; step < steps; step++) {
    const pick = random.nextU32() % 14;
    const h = fences[random.nextU32() % 2]; // the two plain native fences
    const any = fences[random.nextU32() % fences.length];
    if (pick <= 3) attempt(`signal ${h}`, () => app.signal({ objects: [h], values: [near(h)] }));
    else if (pick === 4) attempt(`signal number ${h}`, () => app.signal({ objects: [h], values: [Number(near(h))] }));
    else if (pick === 5) attempt(`signal ${any}`, () => app.signal({ objects: [any], values: [near(any)] }));
    else if (pick === 6) attempt('signal both', () => app.signal({ objects: [fences[0], fences[1]], values: [near(fences[0]), near(fences[1])] }));
    else if (pick === 7) attempt('signal rewind', () => app.signal({ objects: [h], values: [0n], flags: { allowFenceRewind: true } }));
    else if (pick === 8) {
      const bad = [foreign, closed, hEvent, hDevice, -1, 'x', 2 ** 40][random.nextU32() % 7];
      attempt(`signal bad ${String(bad)}`, () => app.signal({ objects: [bad as number], values: [1n] }));
    } else if (pick === 9) {
      const odd = [{ objects: [h], values: [-1n] }, { objects: [h], values: [UINT64_MAX + 1n] }, { objects: [h], values: [1n], extra: 1 },
        { objects: [h, h], values: [1n, 1n] }, { objects: [h], values: [] }, null, { objects: [h], values: [1n], hDevice }][random.nextU32() % 7];
      attempt(`signal odd ${JSON.stringify(odd, (k, v) => (typeof v === 'bigint' ? `${v}n` : v))}`, () => app.signal(odd as never));
    } else if (pick <= 11) {
      const name = `w${label++}`;
      const value = app.readFenceValue(h) + BigInt(random.nextU32() % 6);
      attempt(`wait ${name} ${h} ${value}`, () => { void app.waitAsync({ objects: [h], values: [value] }, name).then(wake(name)); });
    } else if (pick === 12) {
      const name = `w${label++}`;
      const waitAny = random.nextU32() % 2 === 0;
      const values = [app.readFenceValue(fences[0]) + 2n, app.readFenceValue(fences[1]) + 1n];
      attempt(`wait ${name} both ${waitAny}`, () => {
        void app.waitAsync({ objects: [fences[0], fences[1]], values, waitAny, timeoutNs: 50 }, name).then(wake(name));
      });
    } else {
      machine.run();
      log.push(`run ${machine.nowNs}`);
    }
    await Promise.resolve(); // wakes land in the log between the calls that caused them
    await Promise.resolve();
  }
  machine.run();
  await new Promise((r) => setImmediate(r));
  log.push(`end ${state()} ${DDIS.map((d) => machine.port.calls(0, d)).join(' ')} signals ${machine.summary().os.cpuSignals}`);
  return log;
}

describe('the CPU signal and wait path', () => {
  it('NF-07 a one-fence CPU signal or wait takes the same course with tracing off (the short path) as with tracing on or a DDI observer: values, errors, wakes in order, MonitoredValues, DDI counts', async () => {
    for (const seed of [1, 2, 3]) {
      const short = await run({ trace: false }, seed, 400);
      const traced = await run({ trace: true }, seed, 400);
      const observed = await run({ trace: false, observers: [{ machineCreated: (m) => { (m as { port: { observe(o: object): void } }).port.observe({ beforeDdi: () => {} }); } }] }, seed, 400);
      expect(short).toEqual(traced);
      expect(short).toEqual(observed);
      // The sequence exercised what it is for: refusals, rewinds, wakes.
      const text = short.join('\n');
      expect(text).toMatch(/would move .* back/);
      expect(text).toMatch(/INVALID_HANDLE/);
      expect(text).toMatch(/woke w\d+ SUCCESS false/);
      expect(text).toMatch(/woke w\d+ TIMEOUT/);
    }
  });

  it('NF-07 waiters the short path started (kept as columns, not objects) are listed, released, timed and woken as the general path\'s are', async () => {
    /** One machine's course: short-path waits, a tool's look, a destroy with waiters pending, more waits, signals, a device removal. */
    const course = async (options: MachineOptions): Promise<string[]> => {
      const machine = await createMachine({ seed: 3, ...options });
      const app = machine.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const [a, b, c] = [0, 1, 2].map(() => app.createNativeFence({ hDevice }).hSyncObject);
      const log: string[] = [];
      const wait = (name: string, h: number, value: bigint, timeoutNs?: number) => {
        void app.waitAsync(timeoutNs === undefined ? { objects: [h], values: [value] } : { objects: [h], values: [value], timeoutNs }, name)
          .then((r) => { log.push(`woke ${name} ${r.status} ${r.immediate} ${r.timeNs}`); });
      };
      for (let i = 0; i < 12; i++) wait(`a${i}`, a, BigInt(1 + ((i * 5) % 7)));
      for (let i = 0; i < 4; i++) wait(`b${i}`, b, BigInt(3 + i));
      wait('c0', c, 2n);
      wait('t0', a, 50n, 40); // a timeout: the general path, beside the short ones
      const stuck = machine.stuck();
      log.push(`stuck ${JSON.stringify(stuck, (k, v) => (typeof v === 'bigint' ? `${v}n` : v))}`);
      log.push(`inspect ${machine.inspectFence(app, a).cpuWaiters} ${machine.inspectFence(app, b).cpuWaiters}`);
      app.signal({ objects: [a], values: [3n] });
      await new Promise((r) => setImmediate(r));
      app.destroySynchronizationObject(b); // its waiters are released
      await new Promise((r) => setImmediate(r));
      for (let i = 12; i < 20; i++) wait(`a${i}`, a, BigInt(2 + (i % 5)));
      machine.run();
      app.signal({ objects: [a], values: [5n] });
      await new Promise((r) => setImmediate(r));
      machine.removeDevice(0); // the reset signals the fences: the rest wake
      await new Promise((r) => setImmediate(r));
      log.push(`end ${machine.summary().os.cpuSignals} ${JSON.stringify(machine.stuck().waiters ?? [])}`);
      return log;
    };
    const short = await course({ trace: false });
    expect(short).toEqual(await course({ trace: true }));
    const text = short.join('\n');
    expect(text).toMatch(/woke a\d+ SUCCESS false/);
    expect(text).toMatch(/woke b\d+ OBJECT_DESTROYED/); // released with the fence
    expect(text).toMatch(/woke t0 TIMEOUT/);
    expect(text).toMatch(/woke c0 SUCCESS false 40\nend 2 \[\]/); // the device removal's reset signalled what was left
    expect(text).toMatch(/stuck .*"app:a11"/);
  });

  it('NF-07 a DDI observer gets each CPU signal\'s own UpdateCurrentValuesFromCpu arguments, as they were at the call', async () => {
    const kept: { NativeFenceArray: number[]; UpdatedValueArray: bigint[]; CurrentValueKernelCpuVa: bigint[] }[] = [];
    const machine = await createMachine({ seed: 1, trace: false });
    const app = machine.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const a = app.createNativeFence({ hDevice }).hSyncObject;
    const b = app.createNativeFence({ hDevice }).hSyncObject;
    app.signal({ objects: [a], values: [1n] }); // unobserved: the short path's own argument
    const stop = machine.port.observe({ beforeDdi: (call) => { if (call.ddi === 'DxgkDdiUpdateCurrentValuesFromCpu') kept.push(call.args as never); } });
    app.signal({ objects: [a], values: [2n] });
    app.signal({ objects: [b], values: [3n] });
    stop();
    app.signal({ objects: [a], values: [4n] });
    const w = { machine };
    expect(kept.map((k) => [k.NativeFenceArray[0], k.UpdatedValueArray[0], k.CurrentValueKernelCpuVa[0]])).toEqual([
      [globalOf(w, app, a).hGlobal, 2n, globalOf(w, app, a).kernelCvVa],
      [globalOf(w, app, b).hGlobal, 3n, globalOf(w, app, b).kernelCvVa],
    ]);
    expect(kept[0]).not.toBe(kept[1]);
    expect(machine.port.calls(0, 'DxgkDdiUpdateCurrentValuesFromCpu')).toBe(4);
    expect(app.readFenceValue(a)).toBe(4n);
  });
});
