// The race explorer (src/explore/, docs/EXPLORER.md): steps as the unit, the
// searches and their reductions against a search without any, counterexamples
// that are the shortest, schedule files and replays, swarm seeds and shards.
import { describe, it, expect, beforeAll } from 'vitest';
import { mkdtempSync, readFileSync, existsSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DriverModule } from '../src/driver/module.js';
import { createMachineSync, type Machine } from '../src/machine/machine.js';
import { seededTieBreak } from '../src/base/scheduler.js';
import { exhaustive, shortest, Runner, type SearchResult } from '../src/explore/search.js';
import { buildWorld, type ExploreMachine, type ExploreModel, type OsGranularity, type Variant } from '../src/explore/model.js';
import { checkAlways, checkQuiet } from '../src/explore/invariants.js';
import { options as worldOptions, type World } from '../src/explore/world.js';
import { footprint, persistentSet } from '../src/explore/footprint.js';
import { describeEvent } from '../src/explore/render.js';
import { parseSchedule, scheduleJson, ScheduleFileError } from '../src/explore/schedule.js';
import { replay, replayText, namedSteps, scheduleOf, ReplayMismatch } from '../src/explore/replay.js';
import { shardSeeds, shardSize, parseSeedRange, parseShard, runSeed, runJob } from '../src/explore/swarm.js';
import { takeSnapshot, restoreSnapshot } from '../src/explore/snapshot.js';
import { Random } from '../src/base/rng.js';
import { world as makeWorld, cli } from './helpers.js';

const machine = (m: Partial<ExploreMachine> = {}): ExploreMachine => ({ fences: 1, waiters: 1, signals: 1, engines: 1, adapters: 1, cpuSignals: 0, ...m });
const model = (m: Partial<ExploreMachine> = {}, variant: Variant = 'barrier', osGranularity: OsGranularity = 'step'): ExploreModel => ({ machine: machine(m), variant, seed: 1, osGranularity });
const verdicts = (r: SearchResult) => [...r.violations.keys()].sort();

let dir: string;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'wddm-fence-explore-')); });


describe('steps as the unit', () => {
  it('NF-05 engineStepBegin and steps 2-5 called one by one leave exactly what engineStep leaves', async () => {
    const run = async (split: boolean) => {
      const { app, hDevice, machine: m } = await makeWorld({ trace: false });
      const f = app.createNativeFence({ hDevice });
      void app.waitAsync({ objects: [f.hSyncObject], values: [3n] });
      const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
      const g = m.os.inspect.fenceOf(app.kernel, f.hSyncObject);
      const driverQueue = m.os.inspect.hwQueueOf(app.kernel, q.hHwQueue).hHwQueue;
      const coreQueue = [...m.adapters[0].hardware.queues.values()].find((x) => x.handle === driverQueue)!.id;
      const core = m.adapters[0].core;
      m.adapters[0].hardware.stop(); // the host drives the engine itself
      app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 5n } }] });
      const signals = (core.NATIVE_FENCE_LOG_TYPE_SIGNALS as WebAssembly.Global).value as number;
      const executed = (core.NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED as WebAssembly.Global).value as number;
      let result: number;
      if (split) {
        expect(core.engineStepBegin(coreQueue, 7n)).toBe(m.layout.stepSignalWritten);
        expect(core.enginePendingWrite(0)).toBe(core.fenceCurrentValueAddress(g.coreFence)); // step 1: in the write buffer
        expect(core.logWriteEntry(coreQueue, signals, f.hSyncObject, 5n, executed, 0n, 7n)).toBeGreaterThanOrEqual(0);
        core.logAdvance(coreQueue, signals);
        expect(core.engineDrain(0)).toBe(1);
        result = core.cmpSignalCheck(0, g.coreFence, 5n) === 1 ? m.layout.stepInterrupt : m.layout.stepDone;
      } else {
        result = core.engineStep(coreQueue, 7n);
      }
      const words = new Uint32Array(m.memory.buffer).slice(m.layout.staticReservedBytes / 4);
      return { result, words, cv: core.cpuReadCurrentValue(g.coreFence), line: core.engineInterruptLine(0) };
    };
    const whole = await run(false);
    const split = await run(true);
    expect(whole.result).toBe((await makeWorld()).machine.layout.stepInterrupt);
    expect(split.result).toBe(whole.result);
    expect(split.cv).toBe(5n);
    expect(split.line).toBe(1);
    expect(Buffer.from(split.words.buffer).equals(Buffer.from(whole.words.buffer))).toBe(true);
  });

  it('NF-10 schedule.granularity step runs a signal as five events and ends where a whole command ends; a policy is asked at every event', async () => {
    const outcome = (granularity: 'command' | 'step') => {
      const m = createMachineSync({ seed: 3, schedule: { granularity }, trace: true });
      const app = m.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const f = app.createNativeFence({ hDevice });
      const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
      let woke = '';
      void app.waitAsync({ objects: [f.hSyncObject], values: [2n] }).then((r) => { woke = r.status; });
      app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 1n } }, { signal: { hSyncObject: f.hSyncObject, value: 2n } }] });
      const kinds: string[] = [];
      m.scheduler.policy = { choose: (enabled) => { kinds.push(enabled[0].kind); return 0; } };
      m.run();
      return { m, app, f, kinds, woke: () => woke };
    };
    const whole = outcome('command');
    const steps = outcome('step');
    expect(whole.kinds.filter((k) => k === 'engine-step')).toEqual([]);
    expect(steps.kinds.filter((k) => k === 'engine-step')).toHaveLength(8); // 4 per signal (doorbell off)
    for (const o of [whole, steps]) {
      await Promise.resolve();
      expect(o.app.readFenceValue(o.f.hSyncObject)).toBe(2n);
      expect(o.woke()).toBe('SUCCESS');
      expect(o.m.summary().adapters[0]).toMatchObject({ gpuSignals: 2, interruptsRaised: 1 });
    }
    expect(steps.m.trace.find({ kind: 'gpu', name: 'signal step 4 engineDrain' })).toHaveLength(2);
    expect(() => createMachineSync({ schedule: { granularity: 'events' as never } })).toThrow(/schedule.granularity is "events"; expected one of "command", "step"/);
  });

  it('NF-10 the default scheduler and the seededTieBreak policy give byte-identical traces', () => {
    const trace = (policy: boolean) => {
      const m = createMachineSync({ seed: 11 });
      if (policy) m.scheduler.policy = seededTieBreak;
      const app = m.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const f = app.createNativeFence({ hDevice });
      const q0 = app.createHwQueue({ hDevice, engine: 0, nativeProgressFence: false });
      const q1 = app.createHwQueue({ hDevice, engine: 1, nativeProgressFence: false });
      for (const [q, v] of [[q0, 1n], [q1, 2n], [q0, 3n]] as const) app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: v } }] });
      for (const v of [1n, 2n, 3n]) app.createThread(`t${v}`, function* (cpu) { yield cpu.wait({ objects: [f.hSyncObject], values: [v] }); });
      m.run();
      return JSON.stringify(m.trace.events);
    };
    const plain = trace(false);
    expect(plain.length).toBeGreaterThan(1000);
    expect(trace(true)).toBe(plain);
  });
});

describe('exhaustive search', () => {
  it('NF-10 counts equal a search without reduction: same states, the same quiet states, complete interleavings and verdicts, with snapshots and with replays; the OS whole and in steps', () => {
    // With the OS in steps a search without reduction is long already on the smallest machine (about 190,000 transitions): that one is compared.
    const cases: [Partial<ExploreMachine>, Variant, OsGranularity][] = [
      [{}, 'barrier', 'step'],
      ...[{}, { waiters: 2 }, { cpuSignals: 1 }].flatMap((m) => (['barrier', 'no-barrier'] as const).map((v): [Partial<ExploreMachine>, Variant, OsGranularity] => [m, v, 'operation'])),
    ];
    for (const [m, variant, os] of cases) {
      {
        const quiet = (reduction: 'none' | 'states' | 'full') => {
          const keys: string[] = [];
          return { keys, result: exhaustive(model(m, variant, os), { reduction, onQuiet: (key) => keys.push(key) }) };
        };
        const { result: none, keys: noneQuiet } = quiet('none');
        const { result: states, keys: statesQuiet } = quiet('states');
        const { result: full, keys: fullQuiet } = quiet('full');
        const replayed = exhaustive(model(m, variant, os), { reduction: 'full', restore: 'replay' });
        const what = `${JSON.stringify(m)} ${variant} OS ${os}`;
        expect(none.stats.complete, what).toBe(true);
        expect(states.stats.states, what).toBe(none.stats.states);
        expect(states.stats.interleavings, what).toBe(none.stats.interleavings);
        expect(full.stats.quietStates, what).toBe(none.stats.quietStates);
        expect(states.stats.quietStates, what).toBe(none.stats.quietStates);
        expect(fullQuiet.sort(), what).toEqual(noneQuiet.sort());
        expect(statesQuiet.sort(), what).toEqual(noneQuiet.sort());
        expect(full.stats.states, what).toBeLessThanOrEqual(states.stats.states);
        expect(full.stats.transitions, what).toBeLessThan(states.stats.transitions);
        expect(verdicts(full), what).toEqual(verdicts(none));
        expect(verdicts(states), what).toEqual(verdicts(none));
        // Going back by replaying from the start finds exactly what restoring snapshots finds.
        expect({ ...replayed.stats, runs: 0, events: 0, restores: 0, restore: '' }, what).toEqual({ ...full.stats, runs: 0, events: 0, restores: 0, restore: '' });
        expect(full.stats.restore).toBe('snapshot');
        expect(replayed.stats.runs).toBeGreaterThan(1);
      }
    }
    // The figures of the smallest machine with the OS whole, counted by hand from its interleavings (docs/EXPLORER.md).
    const smallest = exhaustive(model({}, 'barrier', 'operation'), { reduction: 'none' });
    expect(smallest.stats).toMatchObject({ states: 44, quietStates: 2, interleavings: 101n, maxDepth: 9 });
    expect(verdicts(smallest)).toEqual([]);
    expect(verdicts(exhaustive(model({}, 'no-barrier', 'operation'), { reduction: 'none' }))).toEqual(['no-lost-wakeup']);
  }, 600_000);

  it('NF-10 with the OS in steps the full reduction reaches exactly the quiet states of the visited-set search, for every variant and bigger machines', () => {
    const machines: Partial<ExploreMachine>[] = [{ waiters: 2, signals: 2 }, { cpuSignals: 1 }, { engines: 2, fences: 2, waiters: 2, signals: 1 }];
    for (const m of machines) {
      for (const variant of ['barrier', 'no-barrier', 'no-resample', 'read-first', 'read-first-no-resample'] as const) {
        if (m.engines && variant !== 'barrier' && variant !== 'read-first-no-resample') continue;
        const quiet = (reduction: 'states' | 'full') => {
          const keys: string[] = [];
          const result = exhaustive(model(m, variant), { reduction, onQuiet: (key) => keys.push(key) });
          return { result, keys: keys.sort() };
        };
        const states = quiet('states'), full = quiet('full');
        const what = `${JSON.stringify(m)} ${variant}`;
        expect(full.keys, what).toEqual(states.keys);
        expect(verdicts(full.result), what).toEqual(verdicts(states.result));
        expect(full.result.stats.states, what).toBeLessThan(states.result.stats.states);
      }
    }
  }, 600_000);

  it('NF-10 the persistent sets (the OS step with the engines whose remaining work conflicts with it) keep every quiet state, every verdict with its counterexample, and every value an "always" invariant reads', () => {
    // What the "always" invariants read at a state (src/explore/invariants.ts checkAlways): each fence's CurrentValue, and,
    // where no OS operation holds the lock, its MonitoredValue as the CMP holds it and the value it must be.
    const judged = (w: World): string => w.fences.map((f) => {
      const core = w.machine.adapters[f.adapter].core, fence = f.global.coreFence;
      if (w.machine.os.lockHeld) return `${f.global.peekValue()}`;
      const buffered = core.cmpPendingWrite() !== 0 && core.cmpPendingWrite() === core.fenceMonitoredValueAddress(fence);
      return `${f.global.peekValue()}/${buffered ? core.cmpPendingValue() : core.cpuReadMonitoredValue(fence)}/${core.fenceMonitoredTarget(fence)}`;
    }).join(' ');
    const cases: [Partial<ExploreMachine>, Variant][] = [
      ...(['barrier', 'no-barrier', 'read-first-no-resample'] as const).map((v): [Partial<ExploreMachine>, Variant] => [{ engines: 2, fences: 2, waiters: 1, signals: 1 }, v]),
      [{ engines: 2, fences: 2, waiters: 1, signals: 2 }, 'barrier'],
      [{ adapters: 2, fences: 2, waiters: 1, signals: 1, cpuSignals: 1 }, 'barrier'],
    ];
    for (const [m, variant] of cases) {
      let narrowed = 0;
      const search = (options: Parameters<typeof exhaustive>[1]) => {
        const quiet: string[] = [], values = new Set<string>();
        const onState = (_key: string, _path: readonly number[], w: World) => {
          values.add(judged(w));
          const enabled = worldOptions(w);
          if (options?.reduction !== 'states' && persistentSet(w, enabled, enabled.map((e) => footprint(w, e)))) narrowed++;
        };
        const result = exhaustive(model(m, variant), { ...options, onQuiet: (key) => quiet.push(key), onState });
        return { result, quiet: quiet.sort(), values };
      };
      const states = search({ reduction: 'states' }), full = search({});
      const what = `${JSON.stringify(m)} ${variant}`;
      expect(full.result.stats.complete, what).toBe(true);
      expect(full.quiet, what).toEqual(states.quiet);
      expect(verdicts(full.result), what).toEqual(verdicts(states.result));
      expect([...states.values].filter((v) => !full.values.has(v)), what).toEqual([]);
      // It applies here: states where the set explored is narrower than every enabled step.
      expect(narrowed, what).toBeGreaterThan(0);
      // Each violation found comes with a schedule that reaches it.
      for (const [invariant, found] of full.result.violations) {
        const runner = new Runner(model(m, variant), { restore: 'replay' });
        runner.reset(found.path);
        const seen = [...checkAlways(runner.world), ...(runner.enabled().length ? [] : checkQuiet(runner.world))].map((v) => v.invariant);
        expect(seen, `${what} ${invariant}`).toContain(invariant);
      }
    }
  }, 600_000);

  it('NF-10 two engines, two fences, the OS whole: the full reduction visits the quiet states and verdicts of the visited-set search', () => {
    for (const variant of ['barrier', 'no-barrier'] as const) {
      const m = { engines: 2, fences: 2, waiters: 2, signals: 1 };
      const states = exhaustive(model(m, variant, 'operation'), { reduction: 'states' });
      const full = exhaustive(model(m, variant, 'operation'), { reduction: 'full' });
      expect(full.stats.quietStates).toBe(states.stats.quietStates);
      expect(verdicts(full)).toEqual(verdicts(states));
      expect(full.stats.transitions * 2).toBeLessThan(states.stats.transitions);
    }
  });

  it('NF-10 the reference driver keeps every invariant in every reachable state of a machine with CPU signals and two adapters', () => {
    const r = exhaustive(model({ adapters: 2, fences: 2, waiters: 2, signals: 1, cpuSignals: 2 }));
    expect(r.stats.complete).toBe(true);
    expect(r.stats.states).toBeGreaterThan(100);
    expect([...r.violations.values()]).toEqual([]);
  });

  it('NF-10 --max-states bounds the search and says it is not complete', () => {
    const r = exhaustive(model({ waiters: 2, signals: 2 }), { maxStates: 20 });
    expect(r.stats.complete).toBe(false);
    expect(r.stats.states).toBe(20);
  });

  it('NF-10 a snapshot restored in place reaches the same keys as a replay from the start, along random walks that jump back', () => {
    // (With the OS in steps a walk is about twice as long, and each step is compared with a replay from the start: fewer walks.)
    const m = model({ engines: 2, fences: 2, waiters: 2, signals: 2, cpuSignals: 1 });
    const a = new Runner(m, { restore: 'snapshot' });
    const b = new Runner(m, { restore: 'replay' });
    const random = new Random(5);
    let compared = 0;
    for (let walk = 0; walk < 8; walk++) {
      a.reset([]);
      const saved = [];
      while (a.enabled().length) {
        saved.push(a.save());
        if (random.below(3) === 0) a.back(saved[random.below(saved.length)]);
        a.take(random.below(a.enabled().length));
        b.reset(a.path);
        expect(a.keys.key(), `path ${a.path.join(',')}`).toBe(b.keys.key());
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(200);
    // A generator thread cannot be kept: the runner goes back by replaying instead.
    const generators: ExploreModel = {
      ...m,
      adjustOptions: (o) => ({ ...o, limits: { ...o.limits, processes: 2 } }),
      createMachine: (o) => { const x = createMachineSync(o); x.createProcess('other').createThread('g', function* () { /* nothing */ }); return x; },
    };
    const fallback = new Runner(generators);
    expect(fallback.restore).toBe('replay');
    expect(fallback.fallback).toMatch(/generator/);
  }, 300_000);
});

describe('the OS in steps', () => {
  const osSteps = (w: ReturnType<typeof buildWorld>): string[] => {
    const seen: string[] = [];
    const s = w.machine.scheduler;
    for (;;) {
      const at = s.enabled().findIndex((e) => e.owner === 'dxgkrnl' && e.kind === 'os-step');
      if (at < 0) return seen;
      seen.push(describeEvent(w, s.enabled()[at]));
      s.take(at);
    }
  };

  it('NF-09 a wait is the OS\'s steps under its lock: waiter add, MonitoredValue write + DDI, the CMP\'s steps b, c, d, the re-read; only GPU steps run between them', () => {
    const w = buildWorld(model());
    const s = w.machine.scheduler;
    const wait = s.enabled().findIndex((e) => e.owner.startsWith('process') && e.kind === 'thread-resume');
    expect(describeEvent(w, s.enabled()[wait])).toMatch(/^w0 waits for f0 ≥ v1: the OS adds the waiter/);
    s.take(wait);
    expect(w.machine.os.lockHeld).toBe(true);
    // The lock holds every other OS event back: what may run is the GPU's steps and the operation's next step.
    expect(s.enabled().map((e) => e.kind).sort()).toEqual(['engine-tick', 'os-step']);
    const steps = osSteps(w);
    expect(steps).toEqual([
      'OS: f0.MV ← v1-1: DxgkDdiUpdateMonitoredValues, the driver\'s first step',
      'gpu0 DxgkDdiUpdateMonitoredValues b cmpBarrier',
      'gpu0 DxgkDdiUpdateMonitoredValues c cmpReadCurrentValue f0',
      'gpu0 DxgkDdiUpdateMonitoredValues d cmpMonitoredValueCheck f0: CV read 0 > MV?',
      'OS re-reads f0\'s CurrentValue and satisfies what it reached (NF-09)',
    ]);
    expect(w.machine.os.lockHeld).toBe(false);
    expect(checkAlways(w)).toEqual([]);
    // A GPU signal run to its end between step b and step c: the re-read finds it, the waiter is retired by a step of its own.
    const v = buildWorld(model());
    const t = v.machine.scheduler;
    t.take(t.enabled().findIndex((e) => e.kind === 'thread-resume'));
    const next = () => t.enabled().findIndex((e) => e.kind === 'os-step');
    t.take(next()); t.take(next()); // MonitoredValue write (step a), b
    const gpu: string[] = [];
    while (t.enabled().some((e) => e.kind !== 'os-step')) {
      const i = t.enabled().findIndex((e) => e.kind !== 'os-step');
      gpu.push(describeEvent(v, t.enabled()[i]));
      t.take(i);
    }
    expect(gpu[0]).toMatch(/1 engineSignalWrite f0 ← v1/);
    expect(gpu).toContain('gpu0/engine0 5 cmpSignalCheck f0 v1');
    expect(osSteps(v).slice(2)).toEqual([
      'OS re-reads f0\'s CurrentValue and satisfies what it reached (NF-09)',
      'OS retires w0: its wait is satisfied, its thread wakes',
      'OS: f0.MV ← MAX: DxgkDdiUpdateMonitoredValues, the driver\'s first step',
      'gpu0 DxgkDdiUpdateMonitoredValues b cmpBarrier',
      'gpu0 DxgkDdiUpdateMonitoredValues c cmpReadCurrentValue f0',
      'gpu0 DxgkDdiUpdateMonitoredValues d cmpMonitoredValueCheck f0: CV read v1 > MV?',
      'OS re-reads f0\'s CurrentValue and satisfies what it reached (NF-09)',
    ]);
    // With the OS whole the same wait is one event.
    const whole = buildWorld(model({}, 'barrier', 'operation'));
    whole.machine.scheduler.take(whole.machine.scheduler.enabled().findIndex((e) => e.kind === 'thread-resume'));
    expect(whole.machine.os.lockHeld).toBe(false);
    expect(whole.machine.scheduler.enabled().map((e) => e.kind)).not.toContain('os-step');
    expect(() => createMachineSync({ schedule: { osGranularity: 'step' } })).toThrow(/schedule.osGranularity is "step"; expected "operation" with schedule.granularity "command"/);
    expect(() => createMachineSync({ schedule: { granularity: 'step', osGranularity: 'atoms' as never } })).toThrow(/schedule.osGranularity is "atoms"; expected one of "operation", "step"/);
  });

  it('NF-09 NF-11 a driver whose CMP reads CurrentValue before writing MonitoredValue, with an OS that does not re-read: correct with the OS whole, a lost wakeup with the OS in steps', () => {
    const whole = exhaustive(model({ waiters: 2, signals: 2 }, 'read-first-no-resample', 'operation'));
    expect(whole.stats.complete).toBe(true);
    expect(verdicts(whole)).toEqual([]);
    const split = model({ waiters: 2, signals: 2 }, 'read-first-no-resample');
    expect(verdicts(exhaustive(split))).toEqual(['no-lost-wakeup']);
    // Either half alone is covered by the other party: the OS's re-read, or the CMP's own read after its barrier.
    for (const variant of ['read-first', 'no-resample'] as const) {
      for (const os of ['step', 'operation'] as const) expect(verdicts(exhaustive(model({ waiters: 2, signals: 2 }, variant, os))), `${variant} ${os}`).toEqual([]);
    }
    const best = shortest(split, { quietOnly: true });
    expect(best.complete).toBe(true);
    const steps = namedSteps(split, best.found!.path);
    const r = replay(split, steps);
    expect(r.violations.map((x) => x.invariant)).toEqual(['no-lost-wakeup']);
    // What loses it: the CMP reads CurrentValue (the read-first driver's first step, made within the DDI's call), the GPU's
    // signal drains and checks MonitoredValue in memory before the CMP's barrier makes the new one visible; nobody re-reads.
    const said = r.steps.map((x) => x.description);
    const read = said.findIndex((x) => /^OS: f0\.MV ← v\d-1: DxgkDdiUpdateMonitoredValues, the driver's first step/.test(x));
    const drain = said.findIndex((x, i) => i > read && /4 engineDrain f0/.test(x));
    const check = said.findIndex((x, i) => i > drain && /5 cmpSignalCheck f0/.test(x));
    const barrier = said.findIndex((x, i) => i > read && /b cmpBarrier/.test(x));
    expect(read).toBeGreaterThanOrEqual(0);
    expect(drain).toBeGreaterThan(read);
    expect(check).toBeGreaterThan(drain);
    expect(barrier).toBeGreaterThan(check);
    expect(said.some((x) => /re-reads/.test(x))).toBe(false);
  }, 300_000);

  it('NF-09 explore --variant read-first-no-resample exits 1 with the OS in steps and 0 with --os-granularity operation; its schedule file says so and replays byte for byte', async () => {
    const out = join(dir, 'read-first.json');
    const found = await cli('explore', '--variant', 'read-first-no-resample', '--out', out);
    expect(found.code).toBe(1);
    expect(found.stdout).toMatch(/variant read-first-no-resample; OS in steps/);
    expect(found.stdout).toMatch(/shortest counterexample: \d+ steps/);
    const file = parseSchedule(readFileSync(out, 'utf8'), out);
    expect(file).toMatchObject({ version: 2, variant: 'read-first-no-resample', osGranularity: 'step', violation: { invariant: 'no-lost-wakeup' } });
    const replayed = await cli('explore', '--replay', out);
    expect(found.stdout.endsWith(replayed.stdout)).toBe(true);
    const whole = await cli('explore', '--variant', 'read-first-no-resample', '--os-granularity', 'operation');
    expect(whole.code).toBe(0);
    expect(whole.stdout).toMatch(/OS in whole operations/);
    expect(whole.stdout).toContain('every invariant holds in every reachable state');
    // A version 1 file was written with the OS whole; version 2 must say how.
    const v1 = { ...JSON.parse(readFileSync(out, 'utf8')), version: 1 };
    delete v1.osGranularity;
    expect(parseSchedule(JSON.stringify(v1), 'v1.json').osGranularity).toBe('operation');
    const v2 = JSON.parse(readFileSync(out, 'utf8'));
    delete v2.osGranularity;
    expect(() => parseSchedule(JSON.stringify(v2), 'v2.json')).toThrow(/osGranularity is undefined; expected "step" or "operation"/);
    const bad = await cli('explore', '--os-granularity', 'atoms');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--os-granularity is "atoms"; expected one of "step", "operation"/);
  });
});

describe('counterexamples', () => {
  it('NF-11 without the barrier the explorer finds a lost wakeup, and the breadth-first one is the shortest there is', () => {
    const m = model({}, 'no-barrier');
    const best = shortest(m);
    expect(best.found?.invariant).toBe('no-lost-wakeup');
    const length = best.found!.path.length;
    // Every schedule shorter than that, tried one by one, breaks nothing.
    const runner = new Runner(m, { restore: 'replay' });
    let tried = 0;
    const walk = (path: number[]): void => {
      runner.reset(path);
      const violated = [...checkAlways(runner.world), ...(runner.enabled().length ? [] : checkQuiet(runner.world))];
      expect(violated, `schedule ${path.join(',')}`).toEqual([]);
      tried++;
      if (path.length + 1 >= length) return;
      const n = runner.enabled().length;
      for (let i = 0; i < n; i++) walk([...path, i]);
    };
    walk([]);
    expect(tried).toBeGreaterThan(10);
    runner.reset(best.found!.path);
    expect(runner.enabled()).toHaveLength(0);
    expect(checkQuiet(runner.world).map((v) => v.invariant)).toEqual(['no-lost-wakeup']);
    // With the barrier nothing is found.
    expect(shortest(model({}, 'barrier')).found).toBeUndefined();
    // Taking the eager steps at once (a search that found only quiet violations) finds schedules just as short, expanding fewer states.
    for (const m2 of [model({ waiters: 2, signals: 2 }, 'no-barrier'), model({ engines: 2, fences: 2, waiters: 2, signals: 1 }, 'no-barrier')]) {
      const exact = shortest(m2);
      const quick = shortest(m2, { quietOnly: true });
      expect(quick.found!.path.length).toBe(exact.found!.path.length);
      expect(quick.expansions).toBeLessThan(exact.expansions);
      }
  });

  it('NF-11 explore --variant no-barrier exits 1 with the step list and a schedule file; --replay prints the same step list byte for byte', async () => {
    const out = join(dir, 'no-barrier.json');
    const timeline = join(dir, 'timeline.json');
    const found = await cli('explore', '--variant', 'no-barrier', '--out', out);
    expect(found.code).toBe(1);
    expect(found.stdout).toMatch(/VIOLATED {2}no-lost-wakeup/);
    expect(found.stdout).toMatch(/shortest counterexample: 17 steps/);
    expect(found.stdout).toMatch(/\*gpu0 CMP buffer f0\.MV←v1-1/); // the MonitoredValue that never reached memory
    const file = parseSchedule(readFileSync(out, 'utf8'), out);
    expect(file).toMatchObject({ variant: 'no-barrier', seed: 1, machine: { fences: 1, waiters: 2, signals: 2 }, violation: { invariant: 'no-lost-wakeup' } });
    expect(file.steps).toHaveLength(17);
    const first = await cli('explore', '--replay', out, '--timeline', timeline);
    const second = await cli('explore', '--replay', out);
    expect(first.code).toBe(1);
    expect(second.stdout).toBe(first.stdout);
    expect(found.stdout.endsWith(first.stdout)).toBe(true);
    expect(first.stdout).toMatch(/^machine: .*\n(.*\n)*quiet: nothing is left to run\nVIOLATED no-lost-wakeup: app:w0 still waits for f0 ≥ v1/);
    const trace = JSON.parse(readFileSync(timeline, 'utf8'));
    const steps = trace.traceEvents.filter((e: { cat?: string }) => e.cat === 'step');
    expect(steps).toHaveLength(17);
    expect(steps[16]).toMatchObject({ ph: 'X', ts: 16, dur: 1, name: 'gpu0/engine0 tick: nothing to run' });
    expect(steps[16].args['violated 1']).toMatch(/^no-lost-wakeup: app:w0 still waits/);
    expect(trace.traceEvents.filter((e: { name: string }) => /^signal /.test(e.name))).toHaveLength(2); // the fence timeline of src/timeline.ts
    // JSON: the same steps as data.
    const json = JSON.parse((await cli('explore', '--replay', out, '--json')).stdout);
    expect(json.replay.steps).toHaveLength(17);
    expect(json.replay.violations[0].invariant).toBe('no-lost-wakeup');
  });

  it('NF-10 explore exits 0 with its counts and every verdict when the invariants hold', async () => {
    const r = await cli('explore', '--waiters', '2', '--signals', '1', '--cpu-signals', '1');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/\d+ states \(\d+ quiet\), \d+ transitions, depth up to \d+, \d+ restores, [\d.]+ s \(\d+ states\/s\): complete/);
    for (const id of ['no-lost-wakeup', 'monitored-value', 'current-value-not-torn', 'satisfied-waiters-woken']) expect(r.stdout).toMatch(new RegExp(`holds {5}${id}`));
    expect(r.stdout).toContain('every invariant holds in every reachable state');
    const json = JSON.parse((await cli('explore', '--reduction', 'states', '--json')).stdout);
    expect(json).toMatchObject({ ok: true, exitCode: 0, mode: 'exhaustive', search: { complete: true, interleavings: '10157562557' } });
  });

  it('NF-11 a schedule file is checked when loaded: each problem names its place and what was expected, and nothing runs', () => {
    const good = scheduleOf(model({}, 'no-barrier'), namedSteps(model({}, 'no-barrier'), shortest(model({}, 'no-barrier')).found!.path));
    const text = scheduleJson(good);
    expect(parseSchedule(text, 'f.json')).toEqual(good);
    const bad = (change: (o: Record<string, unknown>) => void) => {
      const o = JSON.parse(text);
      change(o);
      return () => parseSchedule(JSON.stringify(o), 'f.json');
    };
    expect(() => parseSchedule('{ "schedule": ', 'f.json')).toThrow(/schedule file "f.json": not JSON/);
    expect(bad((o) => { o.schedule = 'something'; })).toThrow(/schedule is "something"; expected "wddm-fence explore"/);
    expect(bad((o) => { o.version = 4; })).toThrow(/version is 4; expected 3 or less: this file was written by a newer wddm-fence/);
    expect(bad((o) => { o.resample = false; })).toThrow(/resample is false; expected no resample in a version 1 or 2 file/);
    expect(bad((o) => { (o.machine as Record<string, unknown>).fences = 99; })).toThrow(/machine.fences is 99; expected an integer from 1 to 8/);
    expect(bad((o) => { delete o.machine; })).toThrow(/machine is undefined; expected the machine the schedule runs on/);
    expect(bad((o) => { o.colour = 'blue'; })).toThrow(ScheduleFileError);
    expect(bad((o) => { o.colour = 'blue'; })).toThrow(/colour/);
    expect(bad((o) => { (o.steps as { choice: number }[])[3].choice = -1; })).toThrow(/steps\[3\]\.choice is -1; expected an integer/);
    expect(bad((o) => { (o.steps as { event: unknown }[])[0].event = 7; })).toThrow(/steps\[0\]\.event is 7/);
    expect(bad((o) => { o.violation = { invariant: 'happiness', message: '' }; })).toThrow(/violation.invariant is "happiness"/);
    // Checked again while replaying: an event that is not the one the file names, a choice past the enabled ones, steps after the end.
    const m = model({}, 'no-barrier');
    const steps = good.steps.map((s) => ({ ...s }));
    steps[2] = { ...steps[2], event: 'gpu0 interrupt {engine=0}' };
    expect(() => replay(m, steps)).toThrow(ReplayMismatch);
    expect(() => replay(m, steps)).toThrow(/step 3 \(steps\[2\]\): choice \d is ".*" here, but the schedule says "gpu0 interrupt \{engine=0\}"/);
    expect(() => replay(m, [{ choice: 5, event: 'x' }])).toThrow(/step 1 \(steps\[0\]\): choice 5 but only 2 event\(s\) are enabled/);
    expect(() => replay(m, [...good.steps, { choice: 0, event: 'x' }])).toThrow(/the machine is quiet .* but the schedule has 1 more step/);
  });

  it('NF-11 explore refuses bad arguments and unusable files with exit 2 and runs nothing', async () => {
    const cases: [string[], RegExp][] = [
      [['explore', '--fences', '0'], /--fences is "0"; expected an integer from 1 to 8/],
      [['explore', '--variant', 'fast'], /--variant is "fast"; expected one of "barrier", "no-barrier"/],
      [['explore', '--reduction', 'magic'], /--reduction is "magic"; expected full, states, none/],
      [['explore', '--random'], /--random needs --seeds A..B/],
      [['explore', '--random', '--seeds', '9..3'], /--seeds is "9..3"; expected a seed range A..B/],
      [['explore', '--random', '--seeds', '1..9', '--shard', '4/3'], /--shard is "4\/3"; expected i\/n with 1 ≤ i ≤ n/],
      [['explore', '--random', '--seeds', '1..9', '--reduction', 'full'], /--reduction does not go with --random/],
      [['explore', '--replay', join(dir, 'missing.json')], /cannot be read: no such file/],
      [['explore', '--replay', join(dir, 'x.json'), '--fences', '2'], /--fences does not go with --replay/],
      [['explore', '--out', join(dir, 'no', 'such', 'folder.json')], /the folder .* does not exist/],
      [['explore', '--frobnicate'], /unknown option --frobnicate; the options of explore are --help, --json/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stdout, args.join(' ')).toBe('');
    }
    const json = await cli('explore', '--fences', '0', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, exitCode: 2, error: 'usage' });
  });
});

describe('swarm', () => {
  it('NF-10 --shard i/n splits a seed range so that the shards together take every seed exactly once', () => {
    for (const [from, to] of [[0, 0], [1, 1000], [7, 12], [4294967290, 4294967295]]) {
      for (const count of [1, 2, 3, 7, 16]) {
        const seen: number[] = [];
        let sizes = 0;
        for (let index = 1; index <= count; index++) {
          const mine = [...shardSeeds({ from, to }, { index, count })];
          expect(mine.length).toBe(shardSize({ from, to }, { index, count }));
          sizes += mine.length;
          // and the workers of a shard split it again, exactly
          const byWorkers = [0, 1, 2].flatMap((w) => [...shardSeeds({ from, to }, { index, count }, w, 3)]).sort((a, b) => a - b);
          expect(byWorkers).toEqual(mine);
          seen.push(...mine);
        }
        seen.sort((a, b) => a - b);
        expect(seen).toEqual(Array.from({ length: to - from + 1 }, (_, i) => from + i));
        expect(sizes).toBe(to - from + 1);
      }
    }
    expect(parseSeedRange('5')).toEqual({ from: 5, to: 5 });
    expect(() => parseSeedRange('1..4294967296')).toThrow(/--seeds is "1..4294967296"/);
    expect(parseShard('2/8')).toEqual({ index: 2, count: 8 });
    expect(() => parseShard('0/8')).toThrow(/--shard is "0\/8"/);
  });

  it('NF-11 random schedules find the no-barrier lost wakeup; the printed command replays that seed to the same failure', async () => {
    const swarmMachine = { fences: 2, waiters: 3, signals: 2, engines: 2, adapters: 1, cpuSignals: 0 };
    const tally = runJob({ machine: swarmMachine, variant: 'no-barrier', range: { from: 1, to: 60 }, shard: { index: 1, count: 1 }, worker: 0, workers: 1, maxSteps: 10_000 });
    expect(tally.seeds).toBe(60);
    expect(tally.failures.length).toBeGreaterThan(0);
    const failure = tally.failures[0];
    expect(failure.invariant).toBe('no-lost-wakeup');
    expect(runSeed({ machine: swarmMachine, variant: 'no-barrier' }, failure.seed).failure).toEqual(failure);
    const flags = ['--fences', '2', '--waiters', '3', '--signals', '2', '--engines', '2', '--adapters', '1', '--cpu-signals', '0', '--variant', 'no-barrier'];
    const all = await cli('explore', '--random', '--seeds', '1..60', ...flags);
    expect(all.code).toBe(1);
    const command = `wddm-fence explore --random --seeds ${failure.seed}..${failure.seed} ${flags.join(' ')}`;
    expect(all.stdout).toContain(`FAIL seed ${failure.seed}: no-lost-wakeup`);
    expect(all.stdout).toContain(`  replay: ${command}`);
    const out = join(dir, 'seed.json');
    const one = await cli(...command.split(' ').slice(1), '--out', out);
    expect(one.code).toBe(1);
    expect(one.stdout).toContain(`FAIL seed ${failure.seed}: ${failure.invariant}: ${failure.message}`);
    const replayed = await cli('explore', '--replay', out);
    expect(one.stdout.endsWith(replayed.stdout)).toBe(true);
    // The reference driver: no seed fails.
    const ok = runJob({ machine: swarmMachine, variant: 'barrier', range: { from: 1, to: 60 }, shard: { index: 1, count: 1 }, worker: 0, workers: 1, maxSteps: 10_000 });
    expect(ok.failures).toEqual([]);
    expect(ok.steps).toBeGreaterThan(60 * 20);
  });

  it('NF-10 the command runs a swarm on worker threads and reports the same seeds as one thread does', () => {
    const CLI = join(__dirname, '..', 'dist', 'cli.js');
    const run = (...args: string[]) => spawnSync(process.execPath, [CLI, 'explore', '--random', '--seeds', '1..40', '--variant', 'no-barrier', '--json', ...args], { encoding: 'utf8', cwd: dir });
    const two = run('--workers', '2');
    const one = run();
    expect(two.status).toBe(1);
    const a = JSON.parse(two.stdout), b = JSON.parse(one.stdout);
    expect(a.workers).toBe(2);
    expect(a.failures).toEqual(b.failures);
    expect(a.run.seeds).toBe(40);
    expect(a.run.steps).toBe(b.run.steps);
  });
});

describe('any driver', () => {
  it('NF-11 explore --driver FILE judges that driver module; its schedule file names it and --replay needs it again', async () => {
    const file = join(__dirname, '..', 'examples', 'drivers', 'broken', 'skips-barrier.mjs');
    const out = join(dir, 'driver.json');
    const found = await cli('explore', '--driver', file, '--out', out);
    expect(found.code).toBe(1);
    expect(found.stdout).toContain(`driver: ${file}`);
    expect(found.stdout).toMatch(/VIOLATED {2}no-lost-wakeup/);
    const schedule = parseSchedule(readFileSync(out, 'utf8'), out);
    expect(schedule.driver).toBe(file);
    const replayed = await cli('explore', '--replay', out, '--driver', file);
    expect(replayed.code).toBe(1);
    expect(found.stdout.endsWith(replayed.stdout)).toBe(true);
    const without = await cli('explore', '--replay', out);
    expect(without.code).toBe(2);
    expect(without.stderr).toMatch(/was found with the driver module .*skips-barrier\.mjs; give it again with --driver FILE/);
    const missing = await cli('explore', '--driver', join(dir, 'no-such-driver.mjs'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no-such-driver\.mjs/);
    expect((await cli('explore', '--driver', file, '--random', '--seeds', '1..2')).stderr).toMatch(/--driver does not go with --random/);
  });

  it('NF-02 the explorer judges the driver the machine is built with: one that skips UpdateMonitoredValues is caught', () => {
    const forgetful = (options: Parameters<typeof createMachineSync>[0]): Machine => {
      const m = createMachineSync(options);
      for (const a of m.adapters) a.driver.updateMonitoredValues = () => { /* a broken driver: tells the CMP nothing */ };
      return m;
    };
    const r = exhaustive({ ...model(), createMachine: forgetful });
    expect(verdicts(r)).toEqual(['monitored-value', 'no-lost-wakeup']);
    const best = shortest({ ...model(), createMachine: forgetful });
    expect(best.found?.invariant).toBe('monitored-value');
    expect(best.found?.message).toMatch(/f0: MonitoredValue is MAX, expected v1-1 \(smallest waited value − 1\)/);
  });

  const broken = join(__dirname, '..', 'examples', 'drivers', 'broken');
  it.skipIf(!existsSync(broken))('NF-10 every broken driver of examples/drivers/broken runs under the explorer, and its counterexamples replay', async () => {
    const modules = readdirSync(broken).filter((f) => /\.m?js$/.test(f));
    expect(modules.length).toBeGreaterThan(0);
    let caught = 0;
    for (const file of modules) {
      // The machine is built synchronously: the module is loaded first (it imports the package by name: dist/).
      const driverModule = (await import(pathToFileURL(join(broken, file)).href)) as DriverModule;
      const withDriver: ExploreModel = {
        ...model({ waiters: 2, signals: 2 }),
        adjustOptions: (o) => ({ ...o, adapters: o.adapters!.map((a) => ({ ...a, driver: { ...a.driver, module: driverModule } })) }),
      };
      const r = exhaustive(withDriver, { maxStates: 20_000 });
      const first = [...r.violations.values()][0];
      if (!first) continue;
      caught++;
      const replayed = replay(withDriver, namedSteps(withDriver, first.path), { trace: false });
      expect(replayed.violations.map((v) => v.invariant), file).toContain(first.invariant);
    }
    expect(caught).toBeGreaterThan(0);
  });
});

it('NF-10 replayText is the same for a replay built twice (deterministic step lists)', () => {
  const m = model({ waiters: 2, cpuSignals: 1 }, 'no-barrier');
  const path = exhaustive(m).violations.get('no-lost-wakeup')?.path ?? shortest(m).found?.path ?? [0, 0, 0];
  const steps = namedSteps(m, path);
  expect(replayText(m, replay(m, steps))).toBe(replayText(m, replay(m, steps)));
  expect(buildWorld(m).machine.scheduler.enabled().length).toBeGreaterThan(1);
  const w = buildWorld(m);
  const snap = takeSnapshot(w.machine);
  w.machine.scheduler.take(0);
  restoreSnapshot(w.machine, snap);
  expect(w.machine.scheduler.enabled().map((e) => e.label)).toEqual(buildWorld(m).machine.scheduler.enabled().map((e) => e.label));
});
