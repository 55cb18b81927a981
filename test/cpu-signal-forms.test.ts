// A CPU signal of one fence reaches the driver in one of two forms (src/port/driver-port.ts,
// updateOneCurrentValueFromCpu): a driver with the optional one-fence form (KernelModeDriverCpuSignal,
// the reference driver has it) gets the handle and value as they are while nobody watches the port;
// a driver without it, one that overrides only updateCurrentValuesFromCpu, and any watched call get
// DxgkDdiUpdateCurrentValuesFromCpu's array form. These tests expect the same course from both forms
// call by call, and that a watcher or an override never misses a call.
import { describe, it, expect } from 'vitest';
import { checkDriver, createMachine, Random, ReferenceDriver, type DriverModule, type Machine } from '../src/index.js';
import { attemptLogger, globalOf, monitoredValue, UINT64_MAX } from './helpers.js';

type UpdateArgs = Parameters<ReferenceDriver['updateCurrentValuesFromCpu']>[0];

/** A reference driver that counts the calls of each form (it has both where the reference has them: the one-fence form is taken). */
class CountingBoth extends ReferenceDriver {
  arrayCalls = 0;
  oneCalls = 0;
  override updateCurrentValuesFromCpu(args: UpdateArgs): void { this.arrayCalls++; super.updateCurrentValuesFromCpu(args); }
  override updateOneCurrentValueFromCpu(hGlobal: number, value: bigint, kernelVa: bigint): void { this.oneCalls++; super.updateOneCurrentValueFromCpu(hGlobal, value, kernelVa); }
}

/** A driver that overrides only the array form: the one-fence form it inherits is not where its override is, so it is never called. */
class ArrayOnly extends ReferenceDriver {
  arrayCalls = 0;
  override updateCurrentValuesFromCpu(args: UpdateArgs): void { this.arrayCalls++; super.updateCurrentValuesFromCpu(args); }
}

const moduleOf = (make: typeof CountingBoth | typeof ArrayOnly): DriverModule => ({
  createDriver: (context) => new make(context.hardware, context.core, context.options),
});

/** Seeded one-fence signals, good and bad, and waits; returns what each call did, in order, and the machine. */
async function run(module: DriverModule | undefined, seed: number, steps: number): Promise<{ log: string[]; machine: Machine }> {
  const machine = await createMachine({ seed: 7, trace: false, adapters: [module ? { driver: { module } } : {}] });
  const app = machine.createProcess('app');
  const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
  const fences = [
    app.createNativeFence({ hDevice }).hSyncObject,
    app.createNativeFence({ hDevice, initialValue: 100n }).hSyncObject,
    app.createNativeFence({ hDevice, flags: { noSignal: true } }).hSyncObject,
  ];
  const closed = app.createNativeFence({ hDevice }).hSyncObject;
  app.destroySynchronizationObject(closed);
  const random = new Random(seed);
  const log: string[] = [];
  const w = { machine };
  const state = () => fences.map((h) => `${app.readFenceValue(h)}/${monitoredValue(w, app, h)}`).join(' ');
  const attempt = attemptLogger(log, state);
  let label = 0;
  for (let step = 0; step < steps; step++) {
    const pick = random.nextU32() % 8;
    const h = fences[random.nextU32() % fences.length];
    const current = app.readFenceValue(h);
    const value = current + BigInt(random.nextU32() % 5) - 1n; // now and then behind: a refused rewind
    if (pick <= 3) attempt(`signal ${h} ${value}`, () => app.signal({ objects: [h], values: [value] }));
    else if (pick === 4) attempt(`signal closed`, () => app.signal({ objects: [closed], values: [1n] }));
    else if (pick === 5) attempt(`signal past UINT64_MAX`, () => app.signal({ objects: [h], values: [UINT64_MAX + 1n] }));
    else {
      const name = `w${label++}`;
      const waited = current + BigInt(random.nextU32() % 4);
      attempt(`wait ${name} ${h} ${waited}`, () => { void app.waitAsync({ objects: [h], values: [waited] }, name).then((r) => log.push(`woke ${name} ${r.status}`)); });
    }
    await Promise.resolve();
    await Promise.resolve();
  }
  log.push(`end ${state()} calls ${machine.port.calls(0, 'DxgkDdiUpdateCurrentValuesFromCpu')} fences ${machine.port.fences(0, 'DxgkDdiUpdateCurrentValuesFromCpu')} signals ${machine.summary().os.cpuSignals}`);
  return { log, machine };
}

describe('the two forms of a one-fence CPU signal\'s DDI', () => {
  it('NF-07 the one-fence form (updateOneCurrentValueFromCpu) and the array form take the same course call by call: values, refusals, wakes, MonitoredValues, DDI counts', async () => {
    for (const seed of [1, 2]) {
      const reference = await run(undefined, seed, 300);
      const both = await run(moduleOf(CountingBoth), seed, 300);
      const arrayOnly = await run(moduleOf(ArrayOnly), seed, 300);
      expect(both.log).toEqual(reference.log);
      expect(arrayOnly.log).toEqual(reference.log);
      // Which form each took: the counting driver only the one-fence form (nobody watched), the array-only driver the array form.
      const counting = both.machine.adapters[0].driver as CountingBoth;
      const overriding = arrayOnly.machine.adapters[0].driver as ArrayOnly;
      const calls = reference.machine.port.calls(0, 'DxgkDdiUpdateCurrentValuesFromCpu');
      expect(calls).toBeGreaterThan(50);
      expect(counting.oneCalls).toBe(calls);
      expect(counting.arrayCalls).toBe(0);
      expect(overriding.arrayCalls).toBe(calls);
      // The sequence exercised what it is for.
      const text = reference.log.join('\n');
      expect(text).toMatch(/would move .* back/);
      expect(text).toMatch(/noSignal/);
      expect(text).toMatch(/INVALID_HANDLE/);
      expect(text).toMatch(/woke w\d+ SUCCESS/);
    }
  });

  it('NF-07 the driver gets the one-fence form watched or not; a DDI observer and the trace see each call as the array form\'s argument (a checker judges the code the driver runs unwatched)', async () => {
    const machine = await createMachine({ seed: 1, trace: false, adapters: [{ driver: { module: moduleOf(CountingBoth) } }] });
    const driver = machine.adapters[0].driver as CountingBoth;
    const app = machine.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const a = app.createNativeFence({ hDevice }).hSyncObject;
    app.signal({ objects: [a], values: [1n] });
    expect([driver.oneCalls, driver.arrayCalls]).toEqual([1, 0]);
    const seen: UpdateArgs[] = [];
    const stop = machine.port.observe({ beforeDdi: (call) => { if (call.ddi === 'DxgkDdiUpdateCurrentValuesFromCpu') seen.push(call.args as UpdateArgs); } });
    app.signal({ objects: [a], values: [2n] });
    stop();
    expect([driver.oneCalls, driver.arrayCalls]).toEqual([2, 0]);
    expect(seen.map((s) => [s.NumFences, s.NativeFenceArray, s.UpdatedValueArray, s.CurrentValueKernelCpuVa])).toEqual([
      [1, [globalOf({ machine }, app, a).hGlobal], [2n], [globalOf({ machine }, app, a).kernelCvVa]],
    ]);
    machine.trace.enabled = true;
    app.signal({ objects: [a], values: [3n] });
    machine.trace.enabled = false;
    expect([driver.oneCalls, driver.arrayCalls]).toEqual([3, 0]);
    expect(machine.trace.find({ kind: 'ddi', name: 'DxgkDdiUpdateCurrentValuesFromCpu' }).length).toBe(1);
    app.signal({ objects: [a], values: [4n] });
    expect([driver.oneCalls, driver.arrayCalls]).toEqual([4, 0]);
    expect(machine.port.calls(0, 'DxgkDdiUpdateCurrentValuesFromCpu')).toBe(4);
    expect(app.readFenceValue(a)).toBe(4n);
  });

  it('NF-07 an updateCurrentValuesFromCpu replaced on the driver after the machine is built (a spy) sees every one-fence signal', async () => {
    const machine = await createMachine({ seed: 1, trace: false });
    const app = machine.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const a = app.createNativeFence({ hDevice }).hSyncObject;
    const driver = machine.adapters[0].driver as ReferenceDriver;
    const original = driver.updateCurrentValuesFromCpu.bind(driver);
    const values: bigint[] = [];
    driver.updateCurrentValuesFromCpu = (args) => { values.push(args.UpdatedValueArray[0]); original(args); };
    app.signal({ objects: [a], values: [5n] });
    app.signal({ objects: [a], values: [6n] });
    expect(values).toEqual([5n, 6n]);
    expect(app.readFenceValue(a)).toBe(6n);
  });

  it('a driver whose one-fence form throws bug-checks its own adapter, the report naming DxgkDdiUpdateCurrentValuesFromCpu', async () => {
    const machine = await createMachine({ seed: 3, trace: false, adapters: [{ name: 'a' }, { name: 'b' }] });
    const app = machine.createProcess('app');
    const fa = app.createNativeFence({ hDevice: app.createDevice({ hAdapter: app.openAdapter('a') }) }).hSyncObject;
    const fb = app.createNativeFence({ hDevice: app.createDevice({ hAdapter: app.openAdapter('b') }) }).hSyncObject;
    const broken = machine.adapter('b').driver as ReferenceDriver;
    broken.updateOneCurrentValueFromCpu = () => { throw new TypeError('broken one-fence form'); };
    const wait = app.waitAsync({ objects: [fb], values: [1n] });
    app.signal({ objects: [fb], values: [1n] });
    expect(machine.summary().bugChecks).toEqual([expect.objectContaining({ adapter: 'b', code: 'DRIVER_FAULT', message: expect.stringMatching(/DxgkDdiUpdateCurrentValuesFromCpu: broken one-fence form/) })]);
    await expect(wait).resolves.toMatchObject({ status: 'ADAPTER_STOPPED' });
    app.signal({ objects: [fa], values: [1n] });
    expect(app.readFenceValue(fa)).toBe(1n);
  });

  it('CAP-01 a driver whose updateOneCurrentValueFromCpu is present but not a function is refused naming it', () => {
    const driver = { updateOneCurrentValueFromCpu: 5 } as Record<string, unknown>;
    for (const name of ['startDevice', 'stopDevice', 'resetFromTimeout', 'restartFromTimeout', 'queryNativeFenceCaps', 'createNativeFence', 'openNativeFence',
      'closeNativeFence', 'destroyNativeFence', 'updateCurrentValuesFromCpu', 'updateMonitoredValues', 'createHwQueue', 'destroyHwQueue',
      'setNativeFenceLogBuffer', 'updateNativeFenceLogs']) driver[name] = () => undefined;
    driver.userMode = { submitToHwQueue: () => undefined };
    expect(() => checkDriver(driver, 'adapters[0].driver.module')).toThrow(/updateOneCurrentValueFromCpu not a function/);
    driver.updateOneCurrentValueFromCpu = undefined;
    expect(checkDriver(driver, 'adapters[0].driver.module')).toBe(driver);
  });
});
