// Fault injection (machine.injectFault, src/machine/faults.ts): collapsed interrupts
// (INT-02) and a forced native fence log overrun (LOG-05), then the scenario
// runner and the command line that schedule them.
import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { createMachineSync, WddmError, type Machine, type MachineOptions, type RuntimeProcess } from '../src/index.js';
import { parseScenario, ScenarioError, runScenario, findBuiltin } from '../src/scenario-files/index.js';

interface Setup { m: Machine; app: RuntimeProcess; hDevice: number }

function setup(options: MachineOptions = {}): Setup {
  const m = createMachineSync({ seed: 9, ...options });
  const app = m.createProcess('app');
  const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
  return { m, app, hDevice };
}
const signal = (hSyncObject: number, value: bigint | number) => ({ signal: { hSyncObject, value } });
const work = (durationNs: number) => ({ work: { durationNs } });

function expectWddmError(fn: () => unknown, parameter: RegExp | string, message: RegExp): WddmError {
  let caught: unknown;
  try { fn(); } catch (error) { caught = error; }
  expect(caught).toBeInstanceOf(WddmError);
  const e = caught as WddmError;
  if (typeof parameter === 'string') expect(e.parameter).toBe(parameter); else expect(e.parameter).toMatch(parameter);
  expect(e.message).toMatch(message);
  return e;
}

/** n fences, each with one CPU waiter for value 1, signalled by one queue `gapNs` apart. */
function spacedSignals(s: Setup, n: number, gapNs: number) {
  const fences = Array.from({ length: n }, () => s.app.createNativeFence({ hDevice: s.hDevice }).hSyncObject);
  const results = fences.map((h) => s.app.waitAsync({ objects: [h], values: [1n] }));
  const q = s.app.createHwQueue({ hDevice: s.hDevice, nativeProgressFence: false, name: 'q' });
  s.app.submit({ hHwQueue: q.hHwQueue, commands: fences.flatMap((h) => [work(gapNs), signal(h, 1)]) });
  return { fences, results, q };
}

describe('INT-02 collapsed interrupts (fault injection)', () => {
  it('INT-02 injectFault collapseInterrupts: signals raised in the window join one interrupt (with its list) delivered at the end of the window', () => {
    // Control: the same workload undisturbed raises one interrupt per signal.
    const control = setup();
    spacedSignals(control, 3, 5000);
    control.m.run();
    expect(control.m.trace.find({ kind: 'interrupt' })).toHaveLength(3);

    const s = setup();
    spacedSignals(s, 3, 5000);
    const report = s.m.injectFault({ collapseInterrupts: { adapter: 0, windowNs: 50_000 } });
    expect(report).toEqual({ fault: 'collapseInterrupts', adapter: 'gpu0', untilNs: 50_000, heldEngines: [] });
    expect(s.m.trace.find({ kind: 'fault', name: 'interrupts collapsed' })).toHaveLength(1);
    s.m.run();
    const interrupts = s.m.trace.find({ kind: 'interrupt' });
    expect(interrupts).toHaveLength(1);
    expect(interrupts[0].timeNs).toBe(50_000);
    expect((interrupts[0].args.pSignaledNativeFenceArray as number[]).length).toBe(3);
    expect(s.m.summary().adapters[0].interruptsRaised).toBe(1);
    expect(s.m.os.inspect.counters.waitersWoken).toBe(3);
    expect(s.m.os.inspect.pendingWaiters).toBe(0);
    expect(s.m.os.inspect.lostWakeups()).toEqual([]);
    // After the window, delivery is back to normal.
    const late = s.app.createNativeFence({ hDevice: s.hDevice }).hSyncObject;
    void s.app.waitAsync({ objects: [late], values: [1n] });
    const q2 = s.app.createHwQueue({ hDevice: s.hDevice, nativeProgressFence: false });
    const start = s.m.nowNs;
    s.app.submit({ hHwQueue: q2.hHwQueue, commands: [signal(late, 1)] });
    s.m.run();
    const last = s.m.trace.find({ kind: 'interrupt' }).at(-1)!;
    expect(last.timeNs - start).toBeLessThan(5000); // command + the 2 µs latency, not held
  });

  it('INT-02 a collapsed interrupt past the driver pending list (limits.interruptListEntries) has no list; the OS scans and every waiter wakes', () => {
    const s = setup({ adapters: [{ limits: { interruptListEntries: 2 } }] });
    spacedSignals(s, 4, 3000);
    s.m.injectFault({ collapseInterrupts: { adapter: 'gpu0', windowNs: 40_000 } });
    s.m.run();
    const interrupts = s.m.trace.find({ kind: 'interrupt' });
    expect(interrupts).toHaveLength(1);
    expect(interrupts[0].args.pSignaledNativeFenceArray).toBe('NULL');
    expect(s.m.os.inspect.counters.fullScans).toBe(1);
    expect(s.m.os.inspect.counters.waitersWoken).toBe(4);
    expect(s.m.os.inspect.pendingWaiters).toBe(0);
    expect(s.m.os.inspect.lostWakeups()).toEqual([]);
  });

  it('INT-02 an interrupt already on its way when the fault is injected is held until the window ends, and later raises join it', () => {
    const s = setup();
    const { fences } = spacedSignals(s, 2, 1000);
    s.m.run(1500); // the first signal (at 1000 ns) raised the line; its ISR is due at 3000 ns
    expect(s.m.trace.find({ kind: 'interrupt' })).toHaveLength(0);
    const report = s.m.injectFault({ collapseInterrupts: { adapter: 'gpu0', windowNs: 10_000 } });
    expect(report.heldEngines).toEqual([0]);
    expect(report.untilNs).toBe(11_500);
    s.m.run();
    const interrupts = s.m.trace.find({ kind: 'interrupt' });
    expect(interrupts).toHaveLength(1);
    expect(interrupts[0].timeNs).toBe(11_500);
    expect((interrupts[0].args.pSignaledNativeFenceArray as number[]).length).toBe(fences.length);
    expect(s.m.os.inspect.pendingWaiters).toBe(0);
    expect(s.m.os.inspect.lostWakeups()).toEqual([]);
  });

  it('INT-02 bad input (unknown adapter, negative / zero / fractional window, unknown keys, two faults at once, a stopped adapter) is a WddmError and changes nothing', () => {
    const s = setup({ adapters: [{ name: 'gpu0' }, { name: 'gpu1' }] });
    const hw = s.m.adapters[0].hardware;
    const bad = (fault: unknown) => () => s.m.injectFault(fault as never);
    expectWddmError(bad({ collapseInterrupts: { adapter: 'gpu9', windowNs: 1000 } }), 'fault.collapseInterrupts.adapter', /"gpu9".*"gpu0", "gpu1"/);
    expectWddmError(bad({ collapseInterrupts: { adapter: 5, windowNs: 1000 } }), 'fault.collapseInterrupts.adapter', /index 0\.\.1/);
    expectWddmError(bad({ collapseInterrupts: { adapter: 'gpu0', windowNs: -5 } }), 'fault.collapseInterrupts.windowNs', /-5.*> 0/);
    expectWddmError(bad({ collapseInterrupts: { adapter: 'gpu0', windowNs: 0 } }), 'fault.collapseInterrupts.windowNs', /> 0/);
    expectWddmError(bad({ collapseInterrupts: { adapter: 'gpu0', windowNs: 1.5 } }), 'fault.collapseInterrupts.windowNs', /whole number/);
    expectWddmError(bad({ collapseInterrupts: { adapter: 'gpu0' } }), 'fault.collapseInterrupts.windowNs', /undefined/);
    expectWddmError(bad({ collapseInterrupts: { adapter: 'gpu0', windowNs: 10, window: 3 } }), 'fault.collapseInterrupts.window', /unknown key "window"/);
    expectWddmError(bad({ collapse: { adapter: 'gpu0', windowNs: 10 } }), 'fault.collapse', /unknown key "collapse"/);
    expectWddmError(bad({}), 'fault', /exactly one of/);
    expectWddmError(bad({ collapseInterrupts: { adapter: 'gpu0', windowNs: 10 }, forceLogOverrun: { adapter: 'gpu0' } }), 'fault', /exactly one of/);
    expectWddmError(bad(null), 'fault', /options object/);
    s.m.os.bugCheckAdapter(s.m.adapters[1].index, 'TEST_STOP', 'stopped by the test');
    const stopped = expectWddmError(bad({ collapseInterrupts: { adapter: 'gpu1', windowNs: 10 } }), 'fault.collapseInterrupts.adapter', /"gpu1", whose state is stopped; expected a running adapter/);
    expect(stopped.status).toBe('DEVICE_REMOVED');
    // nothing changed
    expect(hw.interruptsHeldUntilNs).toBe(0);
    expect(s.m.trace.find({ kind: 'fault', name: 'interrupts collapsed' })).toHaveLength(0);
    // a good call afterwards works
    expect(s.m.injectFault({ collapseInterrupts: { adapter: 'gpu0', windowNs: 10 } }).untilNs).toBe(10);
    expect(hw.interruptsHeldUntilNs).toBe(10);
  });
});

/** An optimized adapter (interrupts name the queue; the OS reads its signal log): H once, then F 1..n. */
function logWorkload(optimized: boolean, n: number, extra: { work?: number; then?: 'signal G' } = {}) {
  const s = setup({ adapters: [{ name: 'gpu0', engines: 2, caps: { optimizedNativeFenceSignaledInterrupt: optimized } }] });
  const H = s.app.createNativeFence({ hDevice: s.hDevice, name: 'H' }).hSyncObject;
  const F = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' }).hSyncObject;
  for (const [h, value] of [[H, 1n], [F, 5n], [F, BigInt(n)]] as const) void s.app.waitAsync({ objects: [h], values: [value] });
  const q = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
  const G = s.app.createNativeFence({ hDevice: s.hDevice, name: 'G' }).hSyncObject; // nobody waits on G: its signal raises no interrupt
  const commands = [signal(H, 1), ...Array.from({ length: n }, (_, i) => signal(F, i + 1)), ...(extra.work ? [work(extra.work)] : []),
    ...(extra.then ? [signal(G, 1)] : [])];
  return { s, q, submit: () => s.app.submit({ hHwQueue: q.hHwQueue, commands }) };
}

describe('LOG-05 forced log overrun (fault injection)', () => {
  it('LOG-05 injectFault forceLogOverrun: the reader skips the signal log until the GPU overwrote unread entries; the next read finds the overrun, falls back to every fence of the device, and every waiter wakes', () => {
    const control = logWorkload(true, 100);
    control.submit();
    control.s.m.run();
    expect(control.s.m.nativeFenceLogs.counters.overruns).toBe(0);
    expect(control.s.m.nativeFenceLogs.counters.fallbackScans).toBe(0);

    const { s, submit } = logWorkload(true, 100);
    const report = s.m.injectFault({ forceLogOverrun: { adapter: 'gpu0', queue: 'A' } });
    expect(report).toEqual({ fault: 'forceLogOverrun', adapter: 'gpu0', queues: ['A'] });
    expect(s.m.nativeFenceLogs.readersBehind).toBe(1);
    submit();
    s.m.run();
    const c = s.m.nativeFenceLogs.counters;
    expect(c.overruns).toBe(1);
    expect(c.entriesLost).toBeGreaterThan(0);
    expect(c.fallbackScans).toBe(1);
    expect(c.contractViolations).toBe(0);
    expect(s.m.trace.find({ kind: 'os', name: 'log read skipped: reader behind' }).length).toBeGreaterThan(0);
    expect(s.m.trace.find({ kind: 'os', name: 'log reader back: the GPU wrapped past its cached position' })).toHaveLength(1);
    expect(s.m.nativeFenceLogs.overruns[0]).toMatchObject({ queue: 'A', log: 'signals' });
    expect(s.m.nativeFenceLogs.readersBehind).toBe(0);
    expect(s.m.os.inspect.counters.waitersWoken).toBe(3);
    expect(s.m.os.inspect.pendingWaiters).toBe(0);
    expect(s.m.os.inspect.lostWakeups()).toEqual([]);
  });

  it('LOG-05 a queue that stops writing before its log wraps is read at once, without an overrun, and no waiter is lost', () => {
    const { s, submit } = logWorkload(true, 10);
    s.m.injectFault({ forceLogOverrun: { adapter: 'gpu0' } });
    submit();
    s.m.run();
    expect(s.m.nativeFenceLogs.counters.overruns).toBe(0);
    expect(s.m.trace.find({ kind: 'os', name: 'log reader back: the queue stopped writing before the log wrapped (no overrun)' })).toHaveLength(1);
    expect(s.m.os.inspect.pendingWaiters).toBe(0);
    expect(s.m.os.inspect.lostWakeups()).toEqual([]);
  });

  it('LOG-05 a skipped read that had to wake waiters is retried, so a waiter whose last interrupt came while the queue still ran wakes', () => {
    // The last signal a waiter needs is followed by 200 µs of work and a signal nobody waits on (no interrupt):
    // the last interrupt finds the queue still running; only the reader's retry wakes the waiters.
    const { s, submit } = logWorkload(true, 10, { work: 200_000, then: 'signal G' });
    s.m.injectFault({ forceLogOverrun: { adapter: 'gpu0', queue: 'A' } });
    submit();
    s.m.run();
    const retries = s.m.trace.find({ kind: 'os', name: 'log read skipped: reader behind' });
    expect(retries.length).toBeGreaterThan(1);
    expect(s.m.trace.find({ kind: 'os', name: 'log reader back: the queue stopped writing before the log wrapped (no overrun)' })).toHaveLength(1);
    expect(s.m.nativeFenceLogs.counters.overruns).toBe(0);
    expect(s.m.os.inspect.counters.waitersWoken).toBe(3);
    expect(s.m.os.inspect.pendingWaiters).toBe(0);
    expect(s.m.os.inspect.lostWakeups()).toEqual([]);
    expect(s.m.nativeFenceLogs.readersBehind).toBe(0);
  });

  it('LOG-05 on an adapter without the optimized interrupt the lists still wake every waiter while the reader is behind; the overrun is still found', () => {
    const { s, submit } = logWorkload(false, 100);
    s.m.injectFault({ forceLogOverrun: { adapter: 'gpu0' } });
    submit();
    s.m.run();
    expect(s.m.nativeFenceLogs.counters.overruns).toBe(1);
    expect(s.m.os.inspect.pendingWaiters).toBe(0);
    expect(s.m.os.inspect.lostWakeups()).toEqual([]);
  });

  it('LOG-05 with no queue named every live hardware queue of the adapter falls behind; a queue may be named by hHwQueue; recreating the buffer or destroying the queue reads it first', () => {
    const s = setup();
    const a = s.app.createHwQueue({ hDevice: s.hDevice, nativeProgressFence: false, name: 'A' });
    const b = s.app.createHwQueue({ hDevice: s.hDevice, nativeProgressFence: false, name: 'B' });
    expect(s.m.injectFault({ forceLogOverrun: { adapter: 0 } }).queues).toEqual(['A', 'B']);
    expect(s.m.nativeFenceLogs.readersBehind).toBe(2);
    // already behind: reported as nothing new
    const kernelB = s.m.os.inspect.hwQueueOf(s.app.kernel, b.hHwQueue);
    expect(s.m.injectFault({ forceLogOverrun: { adapter: 0, queue: kernelB.hHwQueue } }).queues).toEqual([]);
    s.m.recreateNativeFenceLogBuffer(s.app, a.hHwQueue, 'signals');
    expect(s.m.trace.find({ kind: 'os', name: 'log reader back: its log buffer is recreated' })).toHaveLength(1);
    s.app.destroyHwQueue(b.hHwQueue);
    expect(s.m.trace.find({ kind: 'os', name: 'log reader back: its hardware queue is destroyed' })).toHaveLength(1);
    expect(s.m.nativeFenceLogs.readersBehind).toBe(0);
  });

  it('LOG-05 bad input (unknown adapter or queue, an adapter without hardware queues, unknown keys) is a WddmError and changes nothing', () => {
    const s = setup({ adapters: [{ name: 'gpu0' }, { name: 'gpu1' }] });
    s.app.createHwQueue({ hDevice: s.hDevice, nativeProgressFence: false, name: 'A' });
    const bad = (fault: unknown) => () => s.m.injectFault(fault as never);
    expectWddmError(bad({ forceLogOverrun: { adapter: 'nope' } }), 'fault.forceLogOverrun.adapter', /"nope"/);
    expectWddmError(bad({ forceLogOverrun: { adapter: 'gpu0', queue: 'Z' } }), 'fault.forceLogOverrun.queue', /"Z".*live hardware queue of "gpu0" \("A"\)/);
    expectWddmError(bad({ forceLogOverrun: { adapter: 'gpu0', queue: 0x7777 } }), 'fault.forceLogOverrun.queue', /30583/);
    expectWddmError(bad({ forceLogOverrun: { adapter: 'gpu1', queue: 'A' } }), 'fault.forceLogOverrun.queue', /none: the adapter has no live hardware queue/);
    expectWddmError(bad({ forceLogOverrun: { adapter: 'gpu1' } }), 'fault.forceLogOverrun.adapter', /at least one live hardware queue/);
    expectWddmError(bad({ forceLogOverrun: { adapter: 'gpu0', log: 'waits' } }), 'fault.forceLogOverrun.log', /unknown key "log"/);
    expect(s.m.nativeFenceLogs.readersBehind).toBe(0);
    expect(s.m.trace.find({ kind: 'fault', name: 'log reader held back' })).toHaveLength(0);
    expect(s.m.injectFault({ forceLogOverrun: { adapter: 'gpu0', queue: 'A' } }).queues).toEqual(['A']);
    expect(s.m.nativeFenceLogs.readersBehind).toBe(1);
  });
});

describe('fault injection in scenario files', () => {
  it('scenario runner injects collapseInterrupts and forceLogOverrun at atNs; the built-in collapsed-interrupts and forced-log-overrun scenarios pass', async () => {
    for (const [name, fault, atNs] of [['collapsed-interrupts', 'interrupts collapsed', 1000], ['forced-log-overrun', 'log reader held back', 500]] as const) {
      const result = await runScenario(findBuiltin(name)!.scenario!);
      expect(result.expectations.filter((e) => !e.ok), name).toEqual([]);
      expect(result.passed).toBe(true);
      const injected = result.machine.trace.find({ kind: 'fault', name: fault });
      expect(injected.map((e) => e.timeNs)).toEqual([atNs]);
      expect(result.machine.os.inspect.lostWakeups()).toEqual([]);
    }
  });

  it('scenario loader checks fault injections: window > 0 and a hardware queue of the named adapter, each error with its path and line', () => {
    const text = `name: t
machine: { adapters: [ { name: gpu0 }, { name: gpu1 } ] }
processes: [ { name: app } ]
queues:
  - { name: hw1, process: app, adapter: gpu1 }
  - { name: km, process: app, adapter: gpu0, kind: kernelMode }
faults:
  - { atNs: 0, collapseInterrupts: { adapter: gpu0, windowNs: 0 } }
  - { atNs: 0, forceLogOverrun: { adapter: gpu0, queue: hw1 } }
  - { atNs: 0, forceLogOverrun: { adapter: gpu0, queue: km } }
  - { atNs: 0, forceLogOverrun: { adapter: gpu0, queue: nope } }
`;
    let problems: { message: string; line?: number }[] = [];
    try { parseScenario(text, 's.yaml'); } catch (error) { expect(error).toBeInstanceOf(ScenarioError); problems = (error as ScenarioError).problems; }
    const find = (re: RegExp) => problems.find((p) => re.test(p.message));
    expect(find(/faults\[0\]\.collapseInterrupts\.windowNs/), problems.map((p) => p.message).join('\n')).toBeDefined();
    expect(find(/faults\[0\]\.collapseInterrupts\.windowNs/)!.line).toBe(8);
    expect(find(/faults\[1\]\.forceLogOverrun\.queue is "hw1", a queue of adapter "gpu1"; expected a queue of "gpu0"/)?.line).toBe(9);
    expect(find(/faults\[2\]\.forceLogOverrun\.queue is "km", a kernelMode queue/)?.line).toBe(10);
    expect(find(/faults\[3\]\.forceLogOverrun\.queue is "nope"; expected the name of one of the queues/)?.line).toBe(11);
  });

  it('scenario runner traces a fault the model refuses at run time (a log overrun after a TDR removed every queue) and goes on', async () => {
    const s = parseScenario(`name: t
machine: { adapters: [ { name: gpu0 } ] }
processes: [ { name: app } ]
queues: [ { name: A, process: app, adapter: gpu0 } ]
faults:
  - { atNs: 100, removeDevice: { adapter: gpu0 } }
  - { atNs: 200, forceLogOverrun: { adapter: gpu0 } }
  - { atNs: 300, collapseInterrupts: { adapter: gpu0, windowNs: 1000 } }
expect: { adapters: { gpu0: running } }
`, 's.yaml');
    const result = await runScenario(s);
    const refused = result.machine.trace.find({ kind: 'fault', name: 'fault injection refused' });
    expect(refused).toHaveLength(1);
    expect(String(refused[0].args.error)).toMatch(/fault\.forceLogOverrun\.adapter is "gpu0"; expected an adapter with at least one live hardware queue/);
    expect(refused[0].args.fault).toBe('faults[1]');
    // the next fault still runs (a TDR leaves the adapter running)
    expect(result.machine.trace.find({ kind: 'fault', name: 'interrupts collapsed' }).map((e) => e.timeNs)).toEqual([300]);
    expect(result.passed).toBe(true);
  });

  it('NF-20 a scenario file removes an adapter for good (faults[].removeAdapter): fences to UINT64_MAX, a NoSignalMaxValueOnTdr waiter released DEVICE_REMOVED, the adapter stopped', async () => {
    const text = `name: removal
machine: { adapters: [ { name: gpu0 }, { name: gpu1 } ] }
processes: [ { name: app } ]
fences:
  - { name: f, process: app, adapter: gpu0 }
  - { name: kept, process: app, adapter: gpu0, initialValue: 5, flags: { noSignalMaxValueOnTdr: true } }
  - { name: other, process: app, adapter: gpu1 }
threads:
  - { name: w, process: app, steps: [ { wait: { id: onF, fences: [f], values: [9] } } ] }
  - { name: k, process: app, steps: [ { wait: { id: onKept, fences: [kept], values: [7] } } ] }
  - { name: s, process: app, startNs: 5000, steps: [ { signal: { fences: [other], values: [3] } } ] }
faults:
  - { atNs: 1000, removeAdapter: { adapter: gpu0, reason: surprise removal } }
expect:
  fences: { f: "18446744073709551615", kept: 5, other: 3 }
  waits: { onF: woken, onKept: deviceRemoved }
  adapters: { gpu0: stopped, gpu1: running }
`;
    const result = await runScenario(parseScenario(text, 'removal.yaml'));
    expect(result.expectations.filter((e) => !e.ok)).toEqual([]);
    expect(result.passed).toBe(true);
    expect(result.machine.trace.find({ kind: 'fault', name: 'adapter removed' }).map((e) => [e.timeNs, e.args.reason])).toEqual([[1000, 'surprise removal']]);
    expect(result.machine.summary().bugChecks).toEqual([]);
    // A TDR in its place leaves gpu0 running, and the NoSignalMaxValueOnTdr waiter waiting: the file says so, and fails.
    const tdr = await runScenario(parseScenario(text.replace('removeAdapter: { adapter: gpu0, reason: surprise removal }', 'removeDevice: { adapter: gpu0 }'), 'tdr.yaml'));
    expect(tdr.passed).toBe(false);
    expect(tdr.expectations.filter((e) => !e.ok && e.path !== '(implicit)').map((e) => e.path).sort()).toEqual(['expect.adapters.gpu0', 'expect.waits.onKept']);
    // An adapter the file does not have is refused at load, with its place.
    expect(() => parseScenario(text.replace('removeAdapter: { adapter: gpu0', 'removeAdapter: { adapter: gpu9'), 'bad.yaml')).toThrow(/faults\[0\]\.removeAdapter\.adapter is "gpu9"/);
  });

  it('cli run collapsed-interrupts and run forced-log-overrun exit 0 with every expectation holding', () => {
    const CLI = join(__dirname, '..', 'dist', 'cli.js');
    for (const name of ['collapsed-interrupts', 'forced-log-overrun']) {
      const r = spawnSync(process.execPath, [CLI, 'run', name, '--quiet'], { encoding: 'utf8' });
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain('PASSED');
    }
    const list = spawnSync(process.execPath, [CLI, 'list'], { encoding: 'utf8' });
    expect(list.stdout).toMatch(/^collapsed-interrupts /m);
    expect(list.stdout).toMatch(/^forced-log-overrun /m);
  });
});
