// The contract checker and the conformance suite (issue 12): the reference driver passes every rule,
// the checker is opt-in, and its hooks refuse bad input. The broken drivers are in test/broken-drivers.test.ts.
import { describe, it, expect } from 'vitest';
import { createMachine, ContractChecker, CONTRACT_RULES, ReferenceDriver, referenceDriverModule, WddmError, type DriverContext } from '../src/index.js';
import { runConformance } from '../src/scenario.js';
import { failedCases, judgedExpectation } from '../src/check/conformance.js';

describe('the conformance suite', () => {
  it('CAP-02 NF-09 NF-11 INT-01 LOG-04 the reference driver passes every rule, each evaluated, every case finished (seeds 1, 2, 3)', async () => {
    for (const seed of [1, 2, 3]) {
      const report = await runConformance(referenceDriverModule, { seed });
      expect(report.driver).toBe('reference');
      expect(report.seed).toBe(seed);
      expect(report.cases.filter((c) => c.outcome !== 'finished' || c.violations.length).map((c) => [c.name, c.outcome, c.error, c.violations[0]])).toEqual([]);
      const own = report.results.filter((r) => r.judgedBy === r.requirement);
      expect(own.map((r) => [r.requirement, r.status])).toEqual(CONTRACT_RULES.map((r) => [r.rule, 'passed']));
      for (const r of own) expect(r.evaluations, r.requirement).toBeGreaterThan(0);
      expect(report.results.filter((r) => r.status === 'not-driver-facing').every((r) => (r.reason?.length ?? 0) > 10)).toBe(true);
      expect(report.passed).toBe(true);
      expect(report.cases.some((c) => c.name === 'scenario: demo')).toBe(true);
    }
  }, 120_000);

  it('NF-11 the same seed gives the same report, violation for violation (a driver without the barrier, seed 5)', async () => {
    const noBarrier = { name: 'no-barrier', createDriver: (c: DriverContext) => new ReferenceDriver(c.hardware, c.core, { ...c.options, monitoredValueBarrier: false }) };
    const text = (r: unknown) => JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));
    const first = await runConformance(noBarrier, { seed: 5 });
    expect(first.results.filter((r) => r.status === 'violated').map((r) => r.requirement)).toEqual(['NF-11']);
    expect(text(await runConformance(noBarrier, { seed: 5 }))).toBe(text(first));
  }, 60_000);

  it('NF-09 isolation: a fatal violation stops only the case it happened in ("stopped by a bug check (NF-09)"); the other cases run; rules only those cases reach read "not reached" with the reason, never "passed"', async () => {
    // A driver that forgets UpdateMonitoredValues on every adapter but one called gpu0: the cross-adapter cases stop, the rest run on.
    const secondAdapterForgets = {
      name: 'second-adapter-forgets',
      createDriver: (c: DriverContext) => {
        const driver = new ReferenceDriver(c.hardware, c.core, c.options);
        if (c.adapterName !== 'gpu0') driver.updateMonitoredValues = () => undefined;
        return driver;
      },
    };
    const report = await runConformance(secondAdapterForgets, { seed: 1 });
    const stopped = report.cases.filter((c) => c.outcome === 'stopped');
    expect(stopped.length).toBeGreaterThan(0);
    for (const c of stopped) {
      expect(c.stoppedBy, c.name).toMatch(/^a bug check \(NF-09\) on \S+$/);
      expect(c.explained).toBe(true);
    }
    expect(report.cases.find((c) => c.name === 'scenario: demo')?.outcome).toBe('finished');
    expect(report.results.find((r) => r.requirement === 'NF-09')?.status).toBe('violated');
    expect(report.results.filter((r) => r.status === 'violated' && r.judgedBy === r.requirement).map((r) => r.requirement)).toEqual(['NF-09']);
    expect(failedCases(report)).toEqual([]);
    // Forgetting it on every adapter: every case with a CPU waiter stops, so NF-11 is never evaluated: not reached, saying why
    const everywhere = { name: 'forgets', createDriver: (c: DriverContext) => { const d = new ReferenceDriver(c.hardware, c.core, c.options); d.updateMonitoredValues = () => undefined; return d; } };
    const forgotten = await runConformance(everywhere, { seed: 1 });
    const nf11 = forgotten.results.find((r) => r.requirement === 'NF-11')!;
    expect(nf11.status).toBe('not-reached');
    expect(nf11.evaluations).toBe(0);
    expect(nf11.reason).toMatch(/^no case reached a MonitoredValue update; the driver-alone probe; "targeted: cpu-waiter-gpu-signals \(NF-09 NF-11 INT-01 INT-06 LOG-04 LOG-07\)" \(aimed at it\) was stopped by a bug check \(NF-09\) on gpu0; /);
    expect(nf11.reason).toMatch(/; NF-09 broke first \(what a violation leaves behind is not judged further\)$/);
    expect(forgotten.results.filter((r) => r.status === 'passed').every((r) => r.evaluations > 0)).toBe(true);
    expect(forgotten.cases.find((c) => c.name === 'start-device (CAP-02 NF-01)')?.outcome).toBe('finished');
  }, 60_000);

  it('NF-14 a DDI that throws stops its case with a DRIVER_FAULT bug check no rule explains: the case fails, the run fails, the other cases run', async () => {
    const throwsOnDestroy = {
      name: 'throws-on-destroy',
      createDriver: (c: DriverContext) => {
        const driver = new ReferenceDriver(c.hardware, c.core, c.options);
        driver.destroyNativeFence = () => { throw new Error('no such fence (stale table)'); };
        return driver;
      },
    };
    const report = await runConformance(throwsOnDestroy, { seed: 1 });
    const failed = failedCases(report);
    expect(failed.map((c) => c.name)).toContain('targeted: destroyed-fence (INT-03)');
    const c = failed.find((x) => x.name === 'targeted: destroyed-fence (INT-03)')!;
    expect(c.outcome).toBe('stopped');
    expect(c.stoppedBy).toMatch(/^a bug check \(DRIVER_FAULT: .*DxgkDdiDestroyNativeFence: no such fence \(stale table\)\) on gpu0$/);
    expect(c.explained).toBe(false);
    expect(report.passed).toBe(false);
    expect(report.cases.find((x) => x.name === 'scenario: demo')?.outcome).toBe('finished');
  }, 60_000);

  it('NF-10 a case judges the end state the contract fixes (fence values, wait outcomes, nothing stuck), never counters', () => {
    const rules = { values: 'NF-07', waits: 'NF-10' };
    const e = (path: string, description = 'x') => ({ path, description, expected: '1', actual: '2', ok: false });
    expect(judgedExpectation(e('expect.fences.a'), rules)).toBe('NF-07');
    expect(judgedExpectation(e('expect.waits.w'), rules)).toBe('NF-10');
    expect(judgedExpectation(e('expect.threads.t'), rules)).toBe('NF-10');
    expect(judgedExpectation(e('expect.blockedQueues.q'), rules)).toBe('NF-10');
    expect(judgedExpectation(e('(implicit)', 'the run ends with nothing stuck'), rules)).toBe('NF-10');
    for (const path of ['expect.waits.w.atNs', 'expect.waits.w.index', 'expect.interrupts.gpu0', 'expect.counters.spuriousInterrupts', 'expect.logCounters.overruns', 'expect.contractViolations']) {
      expect(judgedExpectation(e(path), rules), path).toBeUndefined();
    }
    expect(judgedExpectation(e('(implicit)', '0 bug checks'), rules)).toBeUndefined();
  });

  it('a module that is no driver module is refused before anything runs; unknown options are refused', async () => {
    await expect(runConformance({} as never)).rejects.toThrow(/runConformance\(module\)\.createDriver is undefined/);
    await expect(runConformance(referenceDriverModule, { seed: 1, verbose: true } as never)).rejects.toThrow(WddmError);
    await expect(runConformance(referenceDriverModule, { seed: -1 })).rejects.toThrow(/seed/);
  });
});

describe('the contract checker', () => {
  it('it is opt-in: a machine without it has no observer on its port; with it, every DDI is judged and nothing is reported for the reference driver', async () => {
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
    for (const rule of ['CAP-02', 'NF-01', 'NF-05', 'NF-09', 'NF-11', 'INT-01', 'INT-06', 'NF-19', 'LOG-03', 'LOG-06']) expect(checker.evaluations.get(rule), rule).toBeGreaterThan(0);
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

  it('createMachine refuses observers that are not objects with function members, naming them', async () => {
    await expect(createMachine({ observers: [3 as never] })).rejects.toThrow(/observers\[0\]/);
    await expect(createMachine({ observers: [{ adapterBuilt: 'x' } as never] })).rejects.toThrow(/observers\[0\]\.adapterBuilt/);
  });

  it('the GPU firmware hook refuses unknown members and bad values, changing nothing', async () => {
    const m = await createMachine({ seed: 1 });
    const hardware = m.adapters[0].hardware;
    expect(() => hardware.configureFirmware({ clock: 1 } as never)).toThrow(/unknown member "clock"/);
    expect(() => hardware.configureFirmware({ signalLogOrder: 'sideways' as never })).toThrow(/signalLogOrder/);
    expect(() => hardware.configureFirmware({ timestamp: 5 as never })).toThrow(/timestamp must be a function/);
    expect(() => hardware.configureFirmware({ logWraparound: 'never' as never })).toThrow(/logWraparound is "never"; expected 'count' or 'index-only'/);
    expect(hardware.firmware.signalLogOrder).toBe('entry-first');
    expect(hardware.firmware.logWraparound).toBe('count');
    expect(hardware.firmware.timestamp(7)).toBe(7n);
  });

  it('LOG-05 firmware logWraparound: \'count\' bumps WraparoundCount as the index wraps; \'index-only\' wraps the index and leaves the count', async () => {
    for (const logWraparound of ['count', 'index-only'] as const) {
      const m = await createMachine({ seed: 1 });
      const hardware = m.adapters[0].hardware;
      hardware.configureFirmware({ logWraparound });
      const app = m.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const f = app.createNativeFence({ hDevice }).hSyncObject;
      const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
      const entries = hardware.layout.log.entries;
      app.submit({ hHwQueue: q.hHwQueue, commands: Array.from({ length: entries + 3 }, (_, i) => ({ signal: { hSyncObject: f, value: BigInt(i + 1) } })) });
      m.run();
      const coreQueue = m.adapters[0].driver.coreQueueOf!(m.os.inspect.hwQueueOf(app.kernel, q.hHwQueue).hHwQueue)!;
      const word = new DataView(m.memory.buffer).getBigUint64(hardware.core.queueLogBuffer(coreQueue, hardware.layout.log.typeSignals) + hardware.layout.log.indexOffset, true);
      expect([Number(word & 0xffff_ffffn), Number(word >> 32n)], logWraparound).toEqual([3, logWraparound === 'count' ? 1 : 0]);
    }
  });

  it('GpuHardware.runEngineNow runs the engine\'s due step in place (virtual time does not move); false when none is due', async () => {
    const m = await createMachine({ seed: 1 });
    const app = m.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const f = app.createNativeFence({ hDevice }).hSyncObject;
    const q = app.createHwQueue({ hDevice, engine: 0 });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: f, value: 9n } }] });
    expect(app.readFenceValue(f)).toBe(0n);
    expect(m.adapters[0].hardware.runEngineNow(0)).toBe(true);
    expect(app.readFenceValue(f)).toBe(9n);
    expect(m.nowNs).toBe(0);
    expect(m.adapters[0].hardware.runEngineNow(1)).toBe(false);
  });

  it('NF-05 NF-06 the driver port tells its observers what user mode submitted, in order, after the user-mode half wrote the ring; the checker matches each GPU fence step to it', async () => {
    const seen: unknown[] = [];
    const checker = new ContractChecker();
    const m = await createMachine({ seed: 1, observers: [checker, { machineCreated: (machine) => { (machine as typeof m).port.observe({ userModeSubmitted: (s) => seen.push(s) }); } }] });
    const app = m.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const f = app.createNativeFence({ hDevice }).hSyncObject;
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ wait: { hSyncObject: f, value: 0n } }, { work: { durationNs: 10 } }, { signal: { hSyncObject: f, value: 4n } }] });
    expect(seen).toEqual([{ adapterIndex: 0, adapter: 'gpu0', hHwQueue: m.os.inspect.hwQueueOf(app.kernel, q.hHwQueue).hHwQueue,
      commands: [{ op: 'wait', handle: f, value: 0n }, { op: 'work', handle: 0, value: 10n }, { op: 'signal', handle: f, value: 4n }] }]);
    m.run();
    expect(checker.finish()).toEqual([]);
    expect(checker.evaluations.get('NF-05')).toBe(1);
    expect(checker.evaluations.get('NF-06')).toBe(2); // the wait matched, and passed at its value
  });
});
