// The contract checker and the conformance suite (issue 12): the reference driver passes every rule,
// the checker is opt-in, and its hooks refuse bad input. The broken drivers are in test/broken-drivers.test.ts.
import { describe, it, expect } from 'vitest';
import { createMachine, ContractChecker, CONTRACT_RULES, ReferenceDriver, referenceDriverModule, WddmError, type DriverContext } from '../src/index.js';
import { runConformance } from '../src/scenario.js';

describe('the conformance suite', () => {
  it('CAP-02 NF-09 NF-11 INT-01 LOG-04 the reference driver passes every rule, each exercised, with no case failing (seeds 1, 2, 3)', async () => {
    for (const seed of [1, 2, 3]) {
      const report = await runConformance(referenceDriverModule, { seed });
      expect(report.driver).toBe('reference');
      expect(report.seed).toBe(seed);
      expect(report.cases.filter((c) => c.error || c.violations.length)).toEqual([]);
      expect(report.results.map((r) => [r.requirement, r.status])).toEqual(CONTRACT_RULES.map((r) => [r.rule, 'passed']));
      expect(report.passed).toBe(true);
      expect(report.cases.some((c) => c.name === 'scenario: demo')).toBe(true);
    }
  }, 60_000);

  it('NF-11 the same seed gives the same report, violation for violation (a driver without the barrier, seed 5)', async () => {
    const noBarrier = { name: 'no-barrier', createDriver: (c: DriverContext) => new ReferenceDriver(c.hardware, c.core, { ...c.options, monitoredValueBarrier: false }) };
    const text = (r: unknown) => JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));
    const first = await runConformance(noBarrier, { seed: 5 });
    expect(first.results.filter((r) => r.status === 'violated').map((r) => r.requirement)).toEqual(['NF-11']);
    expect(text(await runConformance(noBarrier, { seed: 5 }))).toBe(text(first));
  }, 60_000);

  it('CAP-01 a module that is no driver module is refused before anything runs; unknown options are refused', async () => {
    await expect(runConformance({} as never)).rejects.toThrow(/runConformance\(module\)\.createDriver is undefined/);
    await expect(runConformance(referenceDriverModule, { seed: 1, verbose: true } as never)).rejects.toThrow(WddmError);
    await expect(runConformance(referenceDriverModule, { seed: -1 })).rejects.toThrow(/seed/);
  });
});

describe('the contract checker', () => {
  it('NF-09 it is opt-in: a machine without it has no observer on its port; with it, every DDI is judged and nothing is reported for the reference driver', async () => {
    const plain = await createMachine({ seed: 1 });
    expect((plain.port as unknown as { observers: unknown[] }).observers).toEqual([]);
    const checker = new ContractChecker();
    const m = await createMachine({ seed: 1, observers: [checker] });
    const app = m.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const fence = app.createNativeFence({ hDevice, initialValue: 0n });
    const queue = app.createHwQueue({ hDevice });
    const woken = app.waitAsync({ objects: [fence.hSyncObject], values: [1n] });
    app.submit({ hHwQueue: queue.hHwQueue, commands: [{ work: { durationNs: 1000 } }, { signal: { hSyncObject: fence.hSyncObject, value: 1n } }] });
    m.run();
    expect((await woken).status).toBe('SUCCESS');
    expect(checker.finish()).toEqual([]);
    for (const rule of ['CAP-02', 'NF-09', 'NF-11', 'INT-01', 'INT-06', 'NF-19', 'MF-07']) expect(checker.checks.get(rule), rule).toBeGreaterThan(0);
    expect(() => checker.machineCreated(m)).toThrow(/already attached/);
  });

  it('NF-11 a fatal violation bug-checks only its adapter, with the report; the checker never throws', async () => {
    const checker = new ContractChecker();
    const m = await createMachine({ seed: 1, adapters: [{ name: 'a' }, { name: 'b' }], observers: [checker] });
    // Forge what a driver that never programs the CMP leaves: a MonitoredValue the OS did not ask for.
    const app = m.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter('a') });
    const fence = app.createNativeFence({ hDevice, initialValue: 0n });
    const driver = m.adapters[0].driver as unknown as { updateMonitoredValues(args: unknown): void };
    driver.updateMonitoredValues = () => {};
    void app.waitAsync({ objects: [fence.hSyncObject], values: [5n] });
    m.run();
    expect(checker.violations.map((v) => [v.rule, v.adapter, v.fatal])).toEqual([['NF-09', 'a', true]]);
    expect(m.summary().bugChecks.map((b) => [b.adapter, b.code])).toEqual([['a', 'CONTRACT_VIOLATION']]);
    expect(m.summary().bugChecks[0].message).toMatch(/^NF-09 at DxgkDdiUpdateMonitoredValues: expected MonitoredValue of 0x[0-9a-f]+ = 4/);
    expect(m.adapters[1].state).toBe('running');
    const v = checker.violations[0];
    expect(m.trace.events.find((e) => e.seq === v.traceIndex)?.name).toBe('contract violation NF-09');
  });

  it('LOG-04 INT-06 the checker judges a machine cut into steps (schedule granularity \'step\') alike: the reference driver passes, its logs read part-way through signals', async () => {
    for (const seed of [1, 2, 3, 4]) {
      const checker = new ContractChecker();
      const m = await createMachine({ seed, schedule: { granularity: 'step' }, adapters: [{ engines: 2 }], observers: [checker] });
      const app = m.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const fences = [0, 1, 2].map(() => app.createNativeFence({ hDevice, initialValue: 0n }).hSyncObject);
      const queues = [0, 1].map((engine) => app.createHwQueue({ hDevice, engine }).hHwQueue);
      const waits = fences.map((f, i) => app.waitAsync({ objects: [f], values: [BigInt(i + 1)] }));
      for (let round = 1; round <= 3; round++) {
        app.submit({ hHwQueue: queues[0], commands: fences.map((f) => ({ signal: { hSyncObject: f, value: BigInt(round) } })) });
        app.submit({ hHwQueue: queues[1], commands: [{ wait: { hSyncObject: fences[0], value: BigInt(round) } }, { work: { durationNs: 300 } }] });
      }
      m.run();
      for (const w of waits) expect((await w).status).toBe('SUCCESS');
      expect(checker.finish(), `seed ${seed}`).toEqual([]);
      expect(checker.checks.get('LOG-04')).toBeGreaterThan(0);
    }
  });

  it('CAP-01 createMachine refuses observers that are not objects with function members, naming them', async () => {
    await expect(createMachine({ observers: [3 as never] })).rejects.toThrow(/observers\[0\]/);
    await expect(createMachine({ observers: [{ adapterBuilt: 'x' } as never] })).rejects.toThrow(/observers\[0\]\.adapterBuilt/);
  });

  it('LOG-07 the GPU firmware hook refuses unknown members and bad values, changing nothing', async () => {
    const m = await createMachine({ seed: 1 });
    const hardware = m.adapters[0].hardware;
    expect(() => hardware.configureFirmware({ clock: 1 } as never)).toThrow(/unknown member "clock"/);
    expect(() => hardware.configureFirmware({ signalLogOrder: 'sideways' as never })).toThrow(/signalLogOrder/);
    expect(() => hardware.configureFirmware({ timestamp: 5 as never })).toThrow(/timestamp must be a function/);
    expect(hardware.firmware.signalLogOrder).toBe('entry-first');
    expect(hardware.firmware.timestamp(7)).toBe(7n);
  });
});
