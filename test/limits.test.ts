// Bounds the library keeps on its own, whatever the caller passes: numbers
// range-checked (virtual time holds 2^53 − 1 ns), unique process names, the
// livelock guard's error, and a trace that keeps a bounded ring and counts
// what it dropped. Deterministic: small bounds, counted events, no clocks.
import { describe, it, expect } from 'vitest';
import { createMachineSync, WddmError, type Machine, type WaitResult, type WaitStatus } from '../src/index.js';
import { MAX_VIRTUAL_TIME_NS } from '../src/base/validate.js';

function world(options: Parameters<typeof createMachineSync>[0] = {}) {
  const machine = createMachineSync({ seed: 5, ...options });
  const app = machine.createProcess('app');
  const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
  const fence = app.createNativeFence({ hDevice, name: 'F' });
  return { machine, app, hDevice, fence };
}

function wddmError(action: () => unknown): WddmError {
  try { action(); } catch (error) { expect(error).toBeInstanceOf(WddmError); return error as WddmError; }
  throw new Error('expected a WddmError');
}

describe('limits: numbers the library takes', () => {
  it('limits machine.run(untilNs) takes a point in virtual time: negative, NaN, Infinity, past 2^53 − 1 and non-numbers are INVALID_PARAMETER and change nothing', () => {
    const { machine } = world();
    for (const bad of [-5, NaN, Infinity, -Infinity, 2 ** 53, 1e30, 'abc', '100', null, {}, 10n] as unknown[]) {
      const error = wddmError(() => machine.run(bad as number));
      expect(error.status).toBe('INVALID_PARAMETER');
      expect(error.parameter).toBe('run(untilNs)');
      expect(error.message).toMatch(/^run\(untilNs\) is .*; expected a whole number of virtual nanoseconds from 0 to 9007199254740991 \(2\^53 − 1/);
      expect(machine.nowNs).toBe(0);
    }
    machine.run(5000);
    expect(machine.nowNs).toBe(5000);
    machine.run(100); // a time already passed runs nothing
    expect(machine.nowNs).toBe(5000);
    machine.run(MAX_VIRTUAL_TIME_NS);
    expect(machine.nowNs).toBe(MAX_VIRTUAL_TIME_NS);
  });

  it('limits durations and timeouts past what virtual time holds are refused where they are given: work, wait timeouts, timing, sleep, waitEvent', () => {
    const { machine, app, hDevice, fence } = world();
    const queue = app.createHwQueue({ hDevice, engine: 0 });
    for (const durationNs of [1e30, -1, NaN, Infinity, '5']) {
      const error = wddmError(() => app.submit({ hHwQueue: queue.hHwQueue, commands: [{ work: { durationNs: durationNs as number } }] }));
      expect(error.message).toMatch(/commands\[0\]\.work\.durationNs is .*; expected a whole number of virtual nanoseconds from 0 to 9007199254740991/);
    }
    expect(wddmError(() => app.waitAsync({ objects: [fence.hSyncObject], values: [1n], timeoutNs: 1e300 })).parameter).toBe('timeoutNs');
    expect(wddmError(() => createMachineSync({ timing: { commandNs: 2 ** 60 } })).parameter).toBe('timing.commandNs');
    expect(wddmError(() => createMachineSync({ doorbell: { latencyNs: -3 } })).parameter).toBe('doorbell.latencyNs');
    // a thread's own bad numbers fail that thread, at its yield, with the error; the machine goes on
    const sleeper = app.createThread('sleeper', function* (cpu) { yield cpu.sleep(-1); });
    const hEvent = app.createEvent('e');
    const eventWaiter = app.createThread('eventWaiter', function* (cpu) { yield cpu.waitEvent(hEvent, NaN); });
    machine.run();
    expect(sleeper.state).toBe('failed');
    expect((sleeper.error as WddmError).message).toMatch(/^sleep\(durationNs\) is -1; expected a whole number of virtual nanoseconds/);
    expect(eventWaiter.state).toBe('failed');
    expect((eventWaiter.error as WddmError).parameter).toBe('waitEvent(timeoutNs)');
  });

  it('limits a run whose virtual time passes 2^53 − 1 ns stops with INTEGER_OVERFLOW naming the bound', () => {
    const { machine, app } = world();
    app.createThread('long', function* (cpu) { yield cpu.sleep(MAX_VIRTUAL_TIME_NS); yield cpu.sleep(MAX_VIRTUAL_TIME_NS); });
    const error = wddmError(() => machine.run());
    expect(error.status).toBe('INTEGER_OVERFLOW');
    expect(error.message).toMatch(/virtual time reached .* ns, past 9007199254740991 ns \(2\^53 − 1\), the largest time the model holds exactly/);
  });

  it('limits two processes of one machine may not share a name; a machine holds limits.processes processes', () => {
    const machine = createMachineSync({ limits: { processes: 2 } });
    machine.createProcess('app');
    const error = wddmError(() => machine.createProcess('app'));
    expect(error.status).toBe('INVALID_PARAMETER');
    expect(error.message).toBe('name is "app"; expected a name no other process of this machine has');
    expect(machine.processes).toHaveLength(1);
    machine.createProcess('other');
    const full = wddmError(() => machine.createProcess('third'));
    expect(full.status).toBe('INSUFFICIENT_RESOURCES');
    expect(full.message).toMatch(/at most 2 processes \(limits\.processes\)/);
    for (const [limits, parameter] of [[{ processes: 1024 }, 'limits.processes'], [{ eventsPerRun: 0 }, 'limits.eventsPerRun'], [{ traceEvents: 2 ** 25 }, 'limits.traceEvents'], [{ threads: 3 }, 'limits.threads']] as const) {
      expect(wddmError(() => createMachineSync({ limits: limits as never })).parameter).toBe(parameter);
    }
  });
});

describe('limits: the livelock guard', () => {
  it('limits a run past limits.eventsPerRun stops with a WddmError that says which option raises the bound', () => {
    const { machine, app } = world({ limits: { eventsPerRun: 500 } });
    app.createThread('spinner', function* (cpu) { for (;;) yield cpu.sleep(10); });
    const error = wddmError(() => machine.run());
    expect(error.status).toBe('INSUFFICIENT_RESOURCES');
    expect(error.parameter).toBe('limits.eventsPerRun');
    expect(error.message).toMatch(/after 500 scheduler events: a livelock .* raise the bound with createMachine\(\{ limits: \{ eventsPerRun \} \}\) \(scenario files: machine\.limits\.eventsPerRun\), or run in slices with machine\.run\(untilNs\)/);
    // the bound is per run: a slice of virtual time runs within it
    const before = machine.nowNs;
    machine.run(before + 1000);
    expect(machine.nowNs).toBe(before + 1000);
  });
});

describe('limits: the trace is a bounded ring', () => {
  function loop(machine: Machine, app: ReturnType<typeof world>['app'], fence: number, iterations: number) {
    app.createThread('loop', function* (cpu) {
      for (let n = 1; n <= iterations; n++) { app.signal({ objects: [fence], values: [BigInt(n)] }); yield cpu.sleep(100); }
    });
    machine.run();
  }

  it('limits a signal + sleep loop with tracing on keeps the last limits.traceEvents events and counts the dropped ones', () => {
    const { machine, app, fence } = world({ limits: { traceEvents: 64 } });
    loop(machine, app, fence.hSyncObject, 2000);
    const trace = machine.trace;
    expect(trace.capacity).toBe(64);
    expect(trace.events).toHaveLength(64);
    expect(trace.recorded).toBeGreaterThan(2000 * 2);
    expect(trace.dropped).toBe(trace.recorded - 64);
    // the newest events, in order, numbered as recorded
    expect(trace.events.map((e) => e.seq)).toEqual(Array.from({ length: 64 }, (_, i) => trace.recorded - 64 + i));
    expect(trace.events[63].name).toBe('thread done');
    expect(trace.find({ kind: 'runtime', name: 'D3DKMTSignalSynchronizationObjectFromCpu' }).at(-1)!.args.FenceValueArray).toEqual(['2000']);
    expect(machine.summary().trace).toEqual({ recorded: trace.recorded, kept: 64, dropped: trace.dropped, capacity: 64 });
    expect(machine.summaryText()).toContain(`trace: ${trace.recorded} events recorded; the oldest ${trace.dropped} were dropped (memory keeps the last 64: limits.traceEvents`);
    expect(trace.text().split('\n').length).toBe(64 + 2); // header + 64 lines + final newline
  });

  it('limits the ring gives the same kept events for the same seed, and a listener sees every event recorded', () => {
    const run = () => {
      const { machine, app, fence } = world({ limits: { traceEvents: 50 } });
      const seen: number[] = [];
      machine.trace.onEvent((e) => seen.push(e.seq));
      loop(machine, app, fence.hSyncObject, 300);
      return { machine, seen };
    };
    const a = run(), b = run();
    expect(JSON.stringify(a.machine.trace.json())).toBe(JSON.stringify(b.machine.trace.json()));
    expect(a.seen.length).toBeGreaterThan(50);
    expect(a.seen).toEqual(Array.from({ length: a.seen.length }, (_, i) => a.seen[0] + i));
    expect(a.seen.at(-1)).toBe(a.machine.trace.recorded - 1);
    // with a ring large enough nothing is dropped and the summary has no trace line
    const { machine, app, fence } = world();
    loop(machine, app, fence.hSyncObject, 10);
    expect(machine.trace.dropped).toBe(0);
    expect(machine.summaryText()).not.toMatch(/trace: .* dropped/);
  });
});

describe('limits: thread operations are typed', () => {
  it('NF-08 every yield of a thread body gives a WaitResult: a wait its result, a set event SUCCESS (immediate when already set), a timed-out event TIMEOUT, a sleep SUCCESS', () => {
    const { machine, app, fence } = world();
    const set = app.createEvent('set');
    const never = app.createEvent('never');
    const seen: [string, WaitResult][] = [];
    app.createThread('typed', function* (cpu) {
      const waited = yield cpu.wait({ objects: [fence.hSyncObject], values: [1n], timeoutNs: 1000 });
      const status: WaitStatus = waited.status; // typed as a WaitResult, no cast
      seen.push([`wait ${status}`, waited]);
      seen.push(['sleep', yield cpu.sleep(500)]);
      seen.push(['event timed out', yield cpu.waitEvent(never, 200)]);
      app.signal({ objects: [fence.hSyncObject], values: [1n] });
      seen.push(['event', yield cpu.waitEvent(set)]);
    });
    app.createThread('setter', function* (cpu) { yield cpu.sleep(3000); app.waitWithEvent({ objects: [fence.hSyncObject], values: [1n], hAsyncEvent: set }); });
    machine.run();
    expect(seen).toEqual([
      ['wait TIMEOUT', { status: 'TIMEOUT', timeNs: 1000, immediate: false }],
      ['sleep', { status: 'SUCCESS', timeNs: 1500, immediate: false }],
      ['event timed out', { status: 'TIMEOUT', timeNs: 1700, immediate: false }],
      ['event', { status: 'SUCCESS', timeNs: 3000, immediate: false }],
    ]);
  });
});
