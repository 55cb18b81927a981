// Scenario files in-process: the loader's problems (path, line, value,
// expectation), the runner's outcomes, and the timeline drawn from a trace.
import { describe, it, expect } from 'vitest';
import { parseScenario, ScenarioError, runScenario, timelineModel, findBuiltin, runnableScenarios } from '../src/scenario-files/index.js';
import { exportTimeline } from '../src/index.js';
import { ReferenceDriver, type DriverModule } from '../src/index.js';
import type { DxgkrnlCallbacks } from '../src/ddi/ddi.js';

const BASE = `name: t
machine: { adapters: [ { name: gpu0 } ] }
processes: [ { name: app } ]
fences:
  - { name: f, process: app, adapter: gpu0 }
`;

function problemsOf(text: string, source = 's.yaml') {
  try { parseScenario(text, source); } catch (error) {
    expect(error).toBeInstanceOf(ScenarioError);
    return (error as ScenarioError).problems;
  }
  throw new Error('expected the scenario to be rejected');
}

describe('scenario loader', () => {
  it('scenario loader reports every problem at once, each with path, line, bad value and what was expected', () => {
    const problems = problemsOf(BASE + `queues:
  - name: q
    process: app
    adapter: gpu0
    engine: 9
    commands:
      - signal: { fence: f, value: -3 }
      - jump: { to: 4 }
`);
    expect(problems.map((p) => [p.path, p.line])).toEqual([
      ['queues[0].engine', 10],
      ['queues[0].commands[0].signal.value', 12],
      ['queues[0].commands[1]', 13],
    ]);
    expect(problems[0].message).toBe('queues[0].engine is 9; expected 0 to 1 (adapter "gpu0" has 2 engines)');
    expect(problems[1].message).toBe('queues[0].commands[0].signal.value is -3; expected at least 0');
    expect(problems[2].message).toMatch(/queues\[0\]\.commands\[1\] has unknown key "jump"; expected only "wait", "signal", "work", "fenceWrite", "useAllocation"/);
  });

  it('scenario loader keeps 64-bit fence values exact (numbers past 2^53 and hex strings)', () => {
    const s = parseScenario(BASE.replace('adapter: gpu0 }', 'adapter: gpu0, initialValue: 18446744073709551614 }') + `threads:
  - { name: t, process: app, steps: [ { signal: { fences: [f], values: ["0xffffffffffffffff"] } } ] }
expect: { fences: { f: 18446744073709551615 } }
`);
    expect(s.fences![0].initialValue).toBe('18446744073709551614');
    expect(problemsOf(BASE + 'expect: { fences: { f: "0x10000000000000000" } }\n')[0].message).toMatch(/expect\.fences\.f is "0x10000000000000000"; expected a 64-bit unsigned value/);
  });

  it('scenario loader rejects a fence used by a process it was not shared with', () => {
    const problems = problemsOf(BASE.replace('processes: [ { name: app } ]', 'processes: [ { name: app }, { name: other } ]') + `threads:
  - { name: t, process: other, steps: [ { wait: { fences: [f], values: [1] } } ] }
`);
    expect(problems).toHaveLength(1);
    expect(problems.some((p) => /process "other" has no handle to; expected a fence it creates or one listed with sharedWith/.test(p.message))).toBe(true);
  });

  it('scenario loader rejects duplicate names and wait ids', () => {
    const problems = problemsOf(BASE + `  - { name: f, process: app, adapter: gpu0 }
threads:
  - { name: t, process: app, steps: [ { wait: { id: a, fences: [f], values: [1] } }, { wait: { id: a, fences: [f], values: [1] } } ] }
`);
    expect(problems.map((p) => p.path)).toEqual(['fences[1].name', 'threads[0].steps[1].wait.id']);
  });

  it('scenario loader refuses a built-in scenario that needs a feature missing from this build, and list leaves it out', () => {
    for (const b of runnableScenarios()) expect(b.unavailable).toBeUndefined();
    expect(findBuiltin('demo')?.scenario?.name).toBe('demo');
  });
});

describe('scenario runner', () => {
  it('scenario runner: a wait with an event, a CPU signal and wait-any report their outcomes and index', async () => {
    const s = parseScenario(BASE + `  - { name: g, process: app, adapter: gpu0 }
threads:
  - name: waiter
    process: app
    steps:
      - waitWithEvent: { id: ev, fences: [f], values: [1], timeoutNs: 50000 }
      - wait: { id: anyOf, fences: [f, g], values: [9, 2], any: true }
  - name: signaller
    process: app
    steps:
      - sleep: { durationNs: 1000 }
      - signal: { fences: [f], values: [1] }
      - sleep: { durationNs: 1000 }
      - signal: { fences: [g], values: [2] }
expect:
  waits: { ev: woken, anyOf: { outcome: woken, index: 1 } }
  fences: { f: 1, g: 2 }
  threads: { waiter: done, signaller: done }
`);
    const result = await runScenario(s);
    expect(result.expectations.filter((e) => !e.ok)).toEqual([]);
    expect(result.waits.find((w) => w.id === 'ev')).toMatchObject({ outcome: 'woken', atNs: 1000 });
    expect(result.waits.find((w) => w.id === 'anyOf')).toMatchObject({ outcome: 'woken', index: 1, atNs: 2000 });
  });

  it('scenario runner marks a failed expectation with what was expected and what happened', async () => {
    const s = parseScenario(BASE + `threads:
  - { name: t, process: app, steps: [ { signal: { fences: [f], values: [4] } } ] }
expect: { fences: { f: 0 }, counters: { cpuSignals: 1 } }
`);
    const result = await runScenario(s);
    expect(result.passed).toBe(false);
    expect(result.expectations.find((e) => e.path === 'expect.fences.f')).toMatchObject({ ok: false, expected: '0', actual: '4' });
    expect(result.expectations.find((e) => e.path === 'expect.counters.cpuSignals')).toMatchObject({ ok: true });
  });

  it('scenario runner reports a thread whose step the model refuses as a failure', async () => {
    const s = parseScenario(BASE + `threads:
  - { name: t, process: app, steps: [ { destroyFence: { fence: f } }, { signal: { fences: [f], values: [1] } } ] }
`);
    const result = await runScenario(s);
    expect(result.passed).toBe(false);
    expect(result.expectations.find((e) => e.description === 'thread t does not fail')?.actual).toMatch(/^failed: /);
  });
});

describe('timeline model', () => {
  it('timeline model of the demo: a track per queue per adapter, an arrow from each signal to the wait it unblocked', async () => {
    const result = await runScenario(findBuiltin('demo')!.scenario!);
    const model = timelineModel(exportTimeline(result.machine));
    expect(model.tracks.map((t) => t.id)).toEqual(['gpu0/producer', 'gpu0/consumer', 'gpu0/interrupts', 'cpu/app:presenter']);
    // five GPU waits blocked and were unblocked, and one CPU waiter was woken
    expect(model.slices.filter((s) => s.kind === 'wait' && s.outcome === 'unblocked')).toHaveLength(5);
    expect(model.arrows).toHaveLength(6);
    for (const a of model.arrows) {
      const from = model.slices[a.from], to = model.slices[a.to];
      expect(from.kind === 'signal' || from.kind === 'cpu-signal').toBe(true);
      expect(from.label).toBe(`signal ${a.fence} ${a.value}`);
      expect(from.startNs).toBeLessThanOrEqual(to.endNs);
      expect(to.label).toMatch(new RegExp(`wait ${a.fence} ${a.value}$`));
    }
    const cpuArrow = model.arrows.find((a) => model.slices[a.to].track === 'cpu/app:presenter')!;
    expect(model.slices[cpuArrow.from].track).toBe('gpu0/consumer');
    expect(model.marks.filter((m) => m.kind === 'interrupt')).toHaveLength(1);
    expect(model.slices.filter((s) => s.kind === 'cpu-wait').map((s) => s.outcome).sort()).toEqual(['satisfied at once', 'timed out', 'woken']);
  });
});

describe('scenario features', () => {
  it('scenario loader names the path of each feature this build does not run yet, and accepts those it does', async () => {
    const { FEATURES } = await import('../src/scenario-files/features.js');
    const snippets: Record<string, [string, RegExp]> = {
      workers: [BASE.replace('machine: {', 'machine: { workers: true,'), /machine\.workers: worker mode is not supported by this build yet/],
      allocations: [BASE + 'allocations: [ { name: a, process: app, adapter: gpu0 } ]\n', /allocations: allocations and Lock2 are not supported by this build yet/],
      collapsedInterrupts: [BASE + 'faults: [ { atNs: 0, collapseInterrupts: { adapter: gpu0, windowNs: 1000 } } ]\n', /faults\[0\]\.collapseInterrupts: collapsed interrupts are not supported by this build yet/],
      forcedLogOverrun: [BASE + 'faults: [ { atNs: 0, forceLogOverrun: { adapter: gpu0 } } ]\n', /faults\[0\]\.forceLogOverrun: forced log overruns are not supported by this build yet/],
      crossAdapterFences: [BASE.replace('adapter: gpu0 }\n', 'adapter: gpu0, crossAdapter: [gpu0] }\n'), /fences\[0\]\.crossAdapter: cross-adapter fences are not supported by this build yet/],
      monitoredFences: [BASE.replace('adapter: gpu0 }\n', 'adapter: gpu0, kind: monitored }\n'), /monitored fences are not supported/],
      kernelModeContexts: [BASE + 'queues: [ { name: q, process: app, adapter: gpu0, kind: kernelMode } ]\n', /kernel-mode contexts are not supported/],
    };
    for (const [feature, [text, message]] of Object.entries(snippets)) {
      let problems: { message: string; line?: number }[] = [];
      try { parseScenario(text, 's.yaml'); } catch (error) { problems = (error as ScenarioError).problems; }
      const hit = problems.find((p) => message.test(p.message));
      if (FEATURES[feature as keyof typeof FEATURES]) expect(hit, feature).toBeUndefined();
      else { expect(hit, `${feature}: ${problems.map((p) => p.message).join('; ')}`).toBeDefined(); expect(hit!.line).toBeGreaterThan(0); }
    }
  });

  it('scenario runner drives monitored fences and kernel-mode contexts; the timeline shows the OS holding their GPU waits', async () => {
    const result = await runScenario(findBuiltin('monitored-vs-native')!.scenario!);
    expect(result.expectations.filter((e) => !e.ok)).toEqual([]);
    const legacy = result.machine.summary().legacy;
    expect(legacy).toMatchObject({ commandBuffers: 6, gpuWaitsHeld: 5, heldWaitsReleased: 5 });
    const model = timelineModel(exportTimeline(result.machine));
    expect(model.tracks.map((t) => t.id)).toEqual(expect.arrayContaining(['gpu0/legacyProducer', 'gpu0/legacyConsumer', 'gpu1/nativeProducer', 'gpu1/nativeConsumer']));
    const held = model.slices.filter((s) => s.track.startsWith('gpu0/') && s.kind === 'wait' && s.outcome === 'unblocked');
    expect(held).toHaveLength(5);
    // each held wait has an arrow from the fence write that released it
    for (const wait of held) {
      const arrow = model.arrows.find((a) => a.to === wait.id);
      expect(arrow, wait.label).toBeDefined();
      expect(model.slices[arrow!.from].label).toBe(`signal ${arrow!.fence} ${arrow!.value}`);
    }
  });
});

describe('scenario loader: impossible wait expectations', () => {
  it('scenario loader rejects a wait expected to be woken that no signal in the scenario can satisfy', () => {
    const problems = problemsOf(BASE + `  - { name: g, process: app, adapter: gpu0 }
threads:
  - name: t
    process: app
    steps:
      - signal: { fences: [f], values: [3] }
      - wait: { id: all, fences: [f, g], values: [3, 1], timeoutNs: 100 }
      - wait: { id: any, fences: [f, g], values: [3, 1], any: true }
expect:
  waits: { all: woken, any: woken }
`);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ path: 'expect.waits.all', line: 15 });
    expect(problems[0].message).toBe('expect.waits.all is "woken", but nothing in the scenario can satisfy that wait (g never reaches 1); expected "timedOut" or "pending", or a signal that reaches the value');
  });

  it('scenario loader counts a device removal as a signal to UINT64_MAX', () => {
    expect(() => parseScenario(BASE + `threads:
  - { name: t, process: app, steps: [ { wait: { id: w, fences: [f], values: [5] } } ] }
faults: [ { atNs: 1000, removeDevice: { adapter: gpu0 } } ]
expect: { waits: { w: woken } }
`)).not.toThrow();
  });
});

describe('scenario allocations', () => {
  it('scenario runner: destroying an allocation the GPU still reads is deferred until the work is done; AssumeNotInUse is not', async () => {
    const text = findBuiltin('allocation-lifetime')!.text;
    const deferred = await runScenario(parseScenario(text));
    expect(deferred.expectations.filter((e) => !e.ok)).toEqual([]);
    const freedAt = deferred.machine.trace.find({ name: 'allocation freed' });
    expect(freedAt).toHaveLength(1);
    expect(freedAt[0].timeNs).toBeGreaterThanOrEqual(8000); // not before the 8 us of work that reads it
    // the same with AssumeNotInUse: freed at once, and the model catches the GPU reading freed memory
    const rushed = await runScenario(parseScenario(text.replace('destroyAllocation: { allocation: vertices, synchronous: true }', 'destroyAllocation: { allocation: vertices, assumeNotInUse: true }')));
    expect(rushed.passed).toBe(false);
    expect(rushed.expectations.find((e) => e.path === 'expect.vidmmCounters.gpuUseAfterFree')).toMatchObject({ ok: false, actual: '1' });
  });

  it('scenario loader: CPU access without a lock, and an allocation of another process, are errors with their paths', () => {
    const problems = problemsOf(BASE.replace('processes: [ { name: app } ]', 'processes: [ { name: app }, { name: other } ]') + `allocations: [ { name: buf, process: app, adapter: gpu0, sizeBytes: 64 } ]
threads:
  - { name: t, process: app, steps: [ { cpuWrite: { allocation: buf, bytes: "00" } } ] }
  - { name: u, process: other, steps: [ { lock: { allocation: buf } } ] }
`);
    expect(problems.map((p) => p.path)).toEqual(['threads[0].steps[0].cpuWrite.allocation', 'threads[1].steps[0].lock.allocation']);
    expect(problems[0].message).toMatch(/which this thread has not locked here; expected a lock: \{ allocation: buf \} step before it/);
    expect(problems[1].message).toMatch(/an allocation of process "app"; expected one of process "other"/);
  });
});

describe('scenario cross-adapter fences', () => {
  const TWO = `name: x
machine: { adapters: [ { name: iGPU, caps: { nativeGpuFence: false } }, { name: dGPU } ] }
processes: [ { name: app } ]
`;
  it('scenario loader: a cross-adapter fence needs its flags, and is a monitored fence on an adapter without native fences', () => {
    const problems = problemsOf(TWO + `fences:
  - { name: f, process: app, adapter: dGPU, crossAdapter: [iGPU] }
  - { name: g, process: app, adapter: dGPU, flags: { shared: true, crossAdapter: true }, crossAdapter: [iGPU] }
queues:
  - { name: q, process: app, adapter: iGPU, commands: [ { wait: { fence: g, value: 1 } } ] }
  - { name: c, process: app, adapter: iGPU, kind: kernelMode, commands: [ { wait: { fence: g, value: 1 } } ] }
  - { name: d, process: app, adapter: dGPU, kind: kernelMode, commands: [ { wait: { fence: g, value: 1 } } ] }
`);
    expect(problems.map((p) => p.path)).toEqual(['fences[0].crossAdapter', 'queues[2].commands[0].wait.fence']);
    expect(problems[0].message).toMatch(/expected flags: \{ shared: true, crossAdapter: true \}/);
    expect(problems[1].message).toMatch(/is "g", a native fence; expected a monitored fence/);
  });

  it('scenario runner: scenario 2a releases the iGPU context held on a dGPU native fence it sees as monitored', async () => {
    const result = await runScenario(findBuiltin('scenario-2a')!.scenario!);
    expect(result.expectations.filter((e) => !e.ok)).toEqual([]);
    expect(result.machine.summary().legacy.heldWaitsReleased).toBe(1);
    const model = timelineModel(exportTimeline(result.machine));
    const arrow = model.arrows.find((a) => model.slices[a.to].track === 'iGPU/iGPU.context')!;
    expect(model.slices[arrow.from].track).toBe('dGPU/dGPU.signal');
  });
});

describe('scenario liveness: runs that end stuck', () => {
  const CYCLE = `name: cycle
machine: { adapters: [ { name: gpu0, engines: 2 } ] }
processes: [ { name: app } ]
fences:
  - { name: x, process: app, adapter: gpu0 }
  - { name: y, process: app, adapter: gpu0 }
queues:
  - { name: a, process: app, adapter: gpu0, engine: 0, commands: [ { wait: { fence: x, value: 1 } }, { signal: { fence: y, value: 1 } } ] }
  - { name: b, process: app, adapter: gpu0, engine: 1, commands: [ { wait: { fence: y, value: 1 } }, { signal: { fence: x, value: 1 } } ] }
`;

  it('a run that ends stuck fails unless the file expects it, and the failed expectation names the deadlock cycle', async () => {
    const result = await runScenario(parseScenario(CYCLE, 'cycle.yaml'));
    expect(result.passed).toBe(false);
    const stuck = result.expectations.find((e) => e.description === 'the run ends with nothing stuck')!;
    expect(stuck).toMatchObject({ path: '(implicit)', ok: false, expected: 'nothing stuck' });
    expect(stuck.actual).toBe('stuck: 2 queues blocked, 0 CPU waiters pending, 0 CPU threads unfinished, 1 deadlock: queue gpu0/a -> queue gpu0/b');
    expect(result.expectations.find((e) => e.description === 'the run ends in no deadlock')).toMatchObject({ ok: false, path: '(implicit)' });
    expect(result.stuck.queues.map((q) => q.queue)).toEqual(['a', 'b']);
    expect(result.machine.summaryText()).toContain('deadlock (a cycle of 2):');
    // Expected, it passes; expect.blockedQueues now reads the same report.
    const expected = await runScenario(parseScenario(CYCLE + 'expect: { deadlock: true, blockedQueues: { a: true, b: true } }\n', 'cycle.yaml'));
    expect(expected.passed).toBe(true);
    expect(expected.expectations.filter((e) => e.path === 'expect.deadlock').map((e) => e.description)).toEqual(['the run ends stuck', 'the run ends in a deadlock']);
    // Expecting stuck but no deadlock fails on the deadlock; expecting stuck when nothing is, fails too.
    expect((await runScenario(parseScenario(CYCLE + 'expect: { stuck: true, deadlock: false, blockedQueues: { a: true, b: true } }\n', 'cycle.yaml'))).passed).toBe(false);
    const quiet = await runScenario(parseScenario(BASE + 'expect: { stuck: true }\n', 'quiet.yaml'));
    expect(quiet.expectations.find((e) => e.path === 'expect.stuck')).toMatchObject({ ok: false, expected: 'stuck', actual: 'nothing stuck' });
  });

  it('the loader asks for expect.stuck beside a pending wait, a blocked thread or a blocked queue, and refuses stuck: false with deadlock: true', () => {
    const problems = problemsOf(CYCLE + `threads:
  - { name: t, process: app, steps: [ { wait: { id: w, fences: [y], values: [1] } } ] }
expect:
  waits: { w: pending }
  threads: { t: blocked }
  blockedQueues: { a: true, b: false }
`);
    expect(problems.map((p) => p.path)).toEqual(['expect.waits.w', 'expect.threads.t', 'expect.blockedQueues.a']);
    expect(problems[0].message).toBe('expect.waits.w is "pending", so the run ends stuck; expected expect.stuck: true (or expect.deadlock: true) beside it: a run that ends stuck fails unless the file expects it');
    expect(problemsOf(CYCLE + 'expect: { stuck: false, deadlock: true }\n').map((p) => p.message))
      .toEqual(['expect.deadlock is true but expect.stuck is false; expected expect.stuck: true or left out (a deadlocked run is stuck)']);
    expect(() => parseScenario(CYCLE + 'expect: { stuck: true, waits: {} }\n', 's.yaml')).not.toThrow();
  });

  it('the built-in deadlock scenario ends in the deadlock it expects, and passes', async () => {
    const builtin = findBuiltin('deadlock')!;
    expect(runnableScenarios().map((b) => b.name)).toContain('deadlock');
    const result = await runScenario(builtin.scenario!);
    expect(result.expectations.filter((e) => !e.ok)).toEqual([]);
    expect(result.stuck.deadlocks.map((d) => d.cycle)).toEqual([['queue gpu0/render', 'queue gpu0/upload']]);
    expect(result.stuck.waiters.map((w) => [w.label, w.deadlocked])).toEqual([['app:present', true]]);
  });
});

describe('lost wake-ups in a scenario run', () => {
  // A driver whose ISR never names the signalled fences (its list is empty): the OS wakes nobody, so every waiter is lost.
  const silent: DriverModule = {
    createDriver: (context) => new (class extends ReferenceDriver {
      startDevice(os: DxgkrnlCallbacks) {
        return super.startDevice({ ...os, NotifyInterrupt: (data) => os.NotifyInterrupt({ ...data, pSignaledNativeFenceArray: data.pSignaledNativeFenceArray && [], SignaledNativeFenceCount: 0 }) });
      }
    })(context.hardware, context.core, context.options),
  };
  // Two fences: a timeout's retire makes the OS re-read its fence (NF-09), which would wake a waiter of the same fence.
  const FILE = BASE + `  - { name: g, process: app, adapter: gpu0 }
queues:
  - { name: q, process: app, adapter: gpu0, commands: [ { work: { durationNs: 1000 } }, { signal: { fence: f, value: 2 } }, { signal: { fence: g, value: 2 } } ] }
threads:
  - { name: timed, process: app, steps: [ { wait: { id: t, fences: [f], values: [1], timeoutNs: 50000 } } ] }
  - { name: forever, process: app, steps: [ { wait: { id: w, fences: [g], values: [2] } } ] }
expect: { stuck: true, waits: { t: timedOut } }
`;

  it('NF-10 a run with a lost wake-up, timed out or still waiting, reports it and fails; a correct driver passes the same file', async () => {
    const lost = await runScenario(parseScenario(FILE, 'lost.yaml'), { driverModule: silent });
    expect(lost.machine.lostWakeups().map((l) => [l.waiter, l.fence, l.value, l.timedOutAtNs !== undefined])).toEqual([
      ['app:timed', 'f', 1n, true], ['app:forever', 'g', 2n, false],
    ]);
    const violations = lost.expectations.find((e) => /lost wake-ups or OS-detected faults/.test(e.description))!;
    expect(violations.ok).toBe(false);
    expect(violations.actual).toMatch(/^2 \(lost wake-up: app:timed timed out at 50000 ns waiting for f >= 1 though it is 2; lost wake-up: app:forever still waits for g >= 2 though it is 2\)/);
    expect(lost.passed).toBe(false);
    expect(lost.machine.summaryText()).toMatch(/LOST WAKE-UPS \(NF-10\): 2/);
    // The reference driver wakes both: no lost wake-up, and then the file's own expectations fail (t is woken, nothing is stuck).
    const fine = await runScenario(parseScenario(FILE, 'lost.yaml'));
    expect(fine.machine.lostWakeups()).toEqual([]);
    expect(fine.expectations.find((e) => /lost wake-ups or OS-detected faults/.test(e.description))!.ok).toBe(true);
    expect(fine.expectations.filter((e) => !e.ok).map((e) => e.path)).toEqual(['expect.waits.t', 'expect.stuck']);
  });

  it('NF-10 a timeout that fires while the wake-up is on its way (the interrupt not yet delivered) is a race, not a lost wake-up', async () => {
    // The signal lands at ~1100 ns, its interrupt is delivered ~1000 ns later; a timeout in between sees the value reached.
    const race = await runScenario(parseScenario(FILE.replace('timeoutNs: 50000', 'timeoutNs: 1500').replace('values: [1], ', 'values: [2], '), 'race.yaml'));
    expect(race.waits.find((w) => w.id === 't')!.outcome).toBe('timedOut');
    expect(race.machine.lostWakeups()).toEqual([]);
  });
});
