// An engine runs stretches of commands in place (Scheduler.atOrContinue, src/gpu/hardware.ts): when
// the scheduler would take the engine's next tick next anyway, no event is queued for it. The run must
// be the same run, event for event: these tests run one machine through machine.run() (stretches) and
// the same machine through scheduler.step() one event at a time (never in place), and compare.
import { describe, it, expect } from 'vitest';
import { createHash } from 'node:crypto';
import { createMachine, type Machine } from '../src/index.js';
import { Scheduler, runsBefore, type ScheduledEvent } from '../src/base/scheduler.js';
import { Random } from '../src/base/rng.js';

interface Outcome {
  values: bigint[];
  wakes: string[];
  summary: string;
  trace: string;
  nowNs: number;
  executed: number;
  continued: number;
}

/**
 * Two engines, four queues, three fences: signals, GPU waits on the other engine's fences (blocked,
 * unblocked by the run-list rescan), work, CPU waiters on many values (interrupts, collapsing), jitter.
 */
async function runWorkload(drive: 'run' | 'step', trace: boolean, seed: number): Promise<Outcome> {
  const machine: Machine = await createMachine({ seed, trace, timing: { jitter: 0.4 }, adapters: [{ engines: 2 }] });
  const app = machine.createProcess('app');
  const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
  const fences = [0, 1, 2].map(() => app.createNativeFence({ hDevice, initialValue: 0n }).hSyncObject);
  const queues = [0, 1, 0, 1].map((engine) => app.createHwQueue({ hDevice, engine, nativeProgressFence: false }).hHwQueue);
  const wakes: string[] = [];
  for (let k = 1; k <= 12; k++) {
    const fence = k % 3;
    const value = BigInt(k * 3);
    app.waitAsync({ objects: [fences[fence]], values: [value] }, `w${k}`).then((r) => wakes.push(`w${k} ${r.status} at ${r.timeNs} ns`));
  }
  for (let round = 1; round <= 40; round++) {
    const value = BigInt(round);
    app.submit({ hHwQueue: queues[0], commands: [{ signal: { hSyncObject: fences[0], value } }, { work: { durationNs: 150 } }] });
    app.submit({ hHwQueue: queues[1], commands: [{ wait: { hSyncObject: fences[0], value } }, { signal: { hSyncObject: fences[1], value } }] });
    app.submit({ hHwQueue: queues[2], commands: [{ signal: { hSyncObject: fences[2], value } }] });
    app.submit({ hHwQueue: queues[3], commands: [{ wait: { hSyncObject: fences[2], value } }, { work: { durationNs: 90 } }] });
  }
  // Count the ticks run in place (the wrapped method is the scheduler's own, called as before).
  const scheduler = machine.scheduler;
  const atOrContinue = scheduler.atOrContinue.bind(scheduler);
  let continued = 0;
  scheduler.atOrContinue = (...args) => {
    const event = atOrContinue(...args);
    if (event === undefined) continued++;
    return event;
  };
  if (drive === 'run') machine.run();
  else while (scheduler.step()) { /* one event at a time */ }
  await new Promise((resolve) => setImmediate(resolve));
  return {
    values: fences.map((h) => app.readFenceValue(h)),
    wakes,
    summary: machine.summaryText(),
    trace: machine.trace.text(),
    nowNs: scheduler.nowNs,
    executed: scheduler.executed,
    continued,
  };
}

describe('engine stretches (a tick the scheduler would take next anyway runs in place)', () => {
  it('machine.run() with stretches ends exactly as the same machine stepped event by event: values, counters, wakes in order, trace', async () => {
    for (const seed of [3, 11]) {
      const stepped = await runWorkload('step', true, seed);
      const stretched = await runWorkload('run', true, seed);
      expect(stepped.continued).toBe(0);
      expect(stretched.continued).toBeGreaterThan(20);
      expect(stretched.values).toEqual([40n, 40n, 40n]);
      expect(stretched.values).toEqual(stepped.values);
      expect(stretched.wakes).toHaveLength(12);
      expect(stretched.wakes).toEqual(stepped.wakes);
      expect(stretched.summary).toBe(stepped.summary);
      expect(stretched.trace).toBe(stepped.trace);
      expect(stretched.nowNs).toBe(stepped.nowNs);
      expect(stretched.executed).toBe(stepped.executed);
    }
  });

  it('with tracing off the stretches run too, and the run is still the stepped one: values, counters, wakes in order', async () => {
    const stepped = await runWorkload('step', false, 5);
    const stretched = await runWorkload('run', false, 5);
    expect(stretched.continued).toBeGreaterThan(20);
    expect(stretched.values).toEqual(stepped.values);
    expect(stretched.wakes).toEqual(stepped.wakes);
    expect(stretched.summary).toBe(stepped.summary);
    expect(stretched.nowNs).toBe(stepped.nowNs);
    expect(stretched.executed).toBe(stepped.executed);
  });

  it('atOrContinue runs an event in place only inside run(), with no policy, within the bound, when it would be taken next', () => {
    const scheduler = new Scheduler(new Random(9));
    const ran: string[] = [];
    scheduler.register('x', (event) => ran.push(event.label));
    // Outside run(): always queued.
    expect(scheduler.atOrContinue(0, 'x', 'k', {}, 'outside')).toBeDefined();
    scheduler.register('self', (event) => {
      ran.push(event.label);
      if (event.label !== 'first') return;
      // A queued event at 10 ns comes first: at 20 ns this one must be queued; at 5 ns it runs in place.
      expect(scheduler.atOrContinue(20, 'self', 'k', {}, 'later')).toBeDefined();
      expect(scheduler.atOrContinue(5, 'self', 'k', {}, 'sooner')).toBeUndefined();
      expect(scheduler.nowNs).toBe(5);
    });
    scheduler.at(1, 'self', 'k', {}, 'first');
    scheduler.at(10, 'x', 'k', {}, 'at 10');
    scheduler.register('bounded', (event) => {
      ran.push(event.label);
      // Past the run's bound (30 ns): queued, and the run stops before it.
      expect(scheduler.atOrContinue(50, 'x', 'k', {}, 'past the bound')).toBeDefined();
    });
    scheduler.at(12, 'bounded', 'k', {}, 'bounded');
    const count = scheduler.run(30);
    expect(ran).toEqual(['outside', 'first', 'at 10', 'bounded', 'later']);
    // Counted as taken: outside, first, sooner (in place), at 10, bounded, later.
    expect(count).toBe(6);
    expect(scheduler.executed).toBe(6);
    expect(scheduler.nowNs).toBe(30);
    // A policy (a schedule explorer) chooses every event: nothing runs in place.
    scheduler.policy = { choose: () => 0 };
    scheduler.register('policy', () => { expect(scheduler.atOrContinue(31, 'x', 'k', {}, 'under a policy')).toBeDefined(); });
    scheduler.at(30, 'policy', 'k', {}, 'policy');
    scheduler.run(40);
    expect(ran).toEqual(['outside', 'first', 'at 10', 'bounded', 'later', 'under a policy']);
    expect(() => scheduler.atOrContinue(1, 'x', 'k', {}, 'in the past')).toThrow(/before now/);
  });
});

// The core's stretches (GpuHardware.runStretch → engineRunStretch): with the trace off and nothing
// watching each command, an engine's quiet commands (passed waits, work, signals that neither lower
// CurrentValue nor raise the interrupt) run in one core call that draws each command's time, sequence
// and tie-break as the host would. The run must still be the stepped one, memory byte for byte.

interface CoreOutcome extends Omit<Outcome, 'trace' | 'continued'> { memory: string; stretches: number; stretchCommands: number; interrupts: number; inFlight: string[] }

/**
 * One or two engines, long rings of signals with work and passed waits between them, CPU waiters on
 * scattered values (interrupts the stretch must stop before, at the same virtual times), a CPU thread
 * that signals and sleeps between GPU commands (events inside stretches' windows), optional slices of
 * machine.run(untilNs) (the run's bound).
 */
async function runCoreWorkload(drive: 'run' | 'step' | 'traced', seed: number, options: { jitter: number; engines: number; sliceNs?: number }): Promise<CoreOutcome> {
  const machine: Machine = await createMachine({ seed, trace: drive === 'traced', timing: { jitter: options.jitter }, adapters: [{ engines: options.engines }] });
  const app = machine.createProcess('app');
  const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
  const fences = [0, 1, 2].map(() => app.createNativeFence({ hDevice, initialValue: 0n }).hSyncObject);
  const queues = Array.from({ length: options.engines }, (_, engine) => app.createHwQueue({ hDevice, engine }).hHwQueue);
  const wakes: string[] = [];
  for (const [k, value] of [7, 8, 9, 64, 65, 200, 333, 334, 335, 599].entries()) {
    app.waitAsync({ objects: [fences[k % options.engines]], values: [BigInt(value)] }, `w${k}`).then((r) => wakes.push(`w${k} ${r.status} at ${r.timeNs} ns`));
  }
  for (let q = 0; q < queues.length; q++) {
    const commands: Parameters<typeof app.submit>[0]['commands'] = [];
    for (let v = 1; v <= 600; v++) {
      commands.push({ signal: { hSyncObject: fences[q], value: BigInt(v) } });
      if (v % 97 === 0) commands.push({ work: { durationNs: 333 + q } });
      if (v % 41 === 0) commands.push({ wait: { hSyncObject: fences[q], value: BigInt(v - 1) } });
      if (commands.length >= 4000) { app.submit({ hHwQueue: queues[q], commands: commands.splice(0) }); }
    }
    if (commands.length) app.submit({ hHwQueue: queues[q], commands });
  }
  app.createThread('cpu', function* (cpu) {
    for (let i = 1; i <= 30; i++) {
      yield cpu.sleep(997 * i % 2000 + 50);
      app.signal({ objects: [fences[2]], values: [BigInt(i)] });
    }
  });
  const scheduler = machine.scheduler;
  if (drive === 'step') while (scheduler.step()) { /* one event at a time: nothing in place, no stretch */ }
  else if (options.sliceNs) { for (let until = options.sliceNs; scheduler.pending > 0; until += options.sliceNs) machine.run(until); }
  else machine.run();
  await new Promise((resolve) => setImmediate(resolve));
  const hardware = machine.adapter(0).hardware;
  return {
    values: fences.map((h) => app.readFenceValue(h)),
    wakes,
    summary: machine.summaryText(),
    nowNs: scheduler.nowNs,
    executed: scheduler.executed,
    memory: memoryHash(machine),
    stretches: hardware.counts.stretches,
    stretchCommands: hardware.counts.stretchedCommands,
    interrupts: machine.summary().adapters[0].interruptsRaised,
    // What the OS follows of each ring (NotifyGpuProgress / NotifyGpuProgressStretch): references in flight, commands in the ring.
    inFlight: [...machine.os.inspect.adapters[0].devices].flatMap((d) => [...d.queues].map((q) => `${q.label}: ${machine.os.inspect.inFlight(q).length} references, ${q.gpu.inRing} in ring`)),
  };
}

/** Linear memory's hash, out buffers left out (what a call hands back there lives only until the next call). */
/** A machine with one engine, one native fence and one hardware queue without a progress fence. */
async function oneQueueOneFence(seed: number) {
  const machine: Machine = await createMachine({ seed, trace: false, adapters: [{ engines: 1 }] });
  const app = machine.createProcess('app');
  const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
  const { hSyncObject } = app.createNativeFence({ hDevice, initialValue: 0n });
  const { hHwQueue } = app.createHwQueue({ hDevice, engine: 0, nativeProgressFence: false });
  return { machine, app, hSyncObject, hHwQueue };
}

function memoryHash(machine: Machine): string {
  const bytes = new Uint8Array(machine.memory.buffer).slice();
  for (const adapter of machine.adapters) {
    const at = adapter.core.outBufferAddress();
    const words = new DataView(machine.memory.buffer).getUint32(adapter.privateBase + machine.layout.offsets.outCapacity, true);
    bytes.fill(0, at, at + words * 4);
  }
  return createHash('sha256').update(bytes).digest('hex');
}

describe('core stretches (engineRunStretch: an engine\'s quiet commands in one core call)', () => {
  const cases = [
    { name: 'one engine, jitter 0.4', seeds: [1, 7, 20261121], options: { jitter: 0.4, engines: 1 } },
    { name: 'two engines, no jitter (equal times: the seed\'s tie-breaks decide)', seeds: [2, 13], options: { jitter: 0, engines: 2 } },
    { name: 'two engines, jitter 0.1, run in slices of 1,013 ns (the run\'s bound)', seeds: [5, 99], options: { jitter: 0.1, engines: 2, sliceNs: 1013 } },
  ];
  for (const { name, seeds, options } of cases) {
    it(`${name}: machine.run() with core stretches ends exactly as stepped: values, wakes in order, counters, virtual time, events, linear memory byte for byte`, async () => {
      for (const seed of seeds) {
        // Slices end each run() at its bound, which stepping cannot: their reference is the same slices with the trace on (no core stretch).
        const stepped = await runCoreWorkload(options.sliceNs ? 'traced' : 'step', seed, options);
        const stretched = await runCoreWorkload('run', seed, options);
        expect(stepped.stretches).toBe(0);
        expect(stretched.stretches).toBeGreaterThan(5);
        expect(stretched.stretchCommands).toBeGreaterThan(300 * options.engines);
        expect(stretched.interrupts).toBeGreaterThan(3);
        expect(stretched.values.slice(0, options.engines)).toEqual(Array(options.engines).fill(600n));
        expect(stretched.wakes.length).toBeGreaterThan(5);
        expect(stretched.values).toEqual(stepped.values);
        expect(stretched.wakes).toEqual(stepped.wakes);
        expect(stretched.summary).toBe(stepped.summary);
        expect(stretched.nowNs).toBe(stepped.nowNs);
        expect(stretched.executed).toBe(stepped.executed);
        expect(stretched.interrupts).toBe(stepped.interrupts);
        expect(stretched.memory).toBe(stepped.memory);
        expect(stretched.inFlight).toEqual(stepped.inFlight);
        expect(stretched.inFlight).toHaveLength(options.engines);
      }
    });
  }

  it('NF-10 the OS\'s in-flight references follow core stretches exactly as stepped: at every slice\'s end, each queue\'s commands in flight (op, handle, value) and each fence\'s counts, across submissions, a deferred close and a destroyed queue', async () => {
    // What the OS holds at a point of the run: each queue's references in ring order and what inspectFence counts per fence.
    const snapshot = (machine: Machine, app: ReturnType<Machine['createProcess']>, fences: number[]): string => {
      const queues = [...machine.os.inspect.adapters[0].devices].flatMap((d) => [...d.queues]);
      const refs = queues.map((q) => `${q.label}: ${machine.os.inspect.inFlight(q).map((c) => `${c.op} ${c.local.handle} ${c.value}`).join(', ')}`);
      const counts = fences.map((h) => { try { const i = machine.inspectFence(app, h); return `${h} ${i.gpuWaitsInFlight}/${i.gpuSignalsInFlight}`; } catch { return `${h} closed`; } });
      return [...refs, ...counts].join(' | ');
    };
    const drive = async (mode: 'run' | 'traced', seed: number): Promise<{ points: string[]; stretches: number; values: bigint[] }> => {
      const machine: Machine = await createMachine({ seed, trace: mode === 'traced', timing: { jitter: 0.2 }, adapters: [{ engines: 2 }] });
      const app = machine.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const fences = [0, 1, 2, 3].map(() => app.createNativeFence({ hDevice, initialValue: 0n }).hSyncObject);
      const queues = [0, 1, 0].map((engine) => app.createHwQueue({ hDevice, engine }).hHwQueue);
      // Submissions of different sizes whose runs of one handle and op continue from one submission into the next.
      let value = 0;
      for (const size of [5, 1, 64, 200, 3, 500, 17]) {
        const from = value;
        app.submit({ hHwQueue: queues[0], commands: Array.from({ length: size }, () => ({ signal: { hSyncObject: fences[0], value: BigInt(++value) } })) });
        app.submit({ hHwQueue: queues[1], commands: [
          ...Array.from({ length: size }, (_, i) => ({ signal: { hSyncObject: fences[1], value: BigInt(from + i + 1) } })),
          { wait: { hSyncObject: fences[0], value: BigInt(from + 1) } },
          { work: { durationNs: 120 } },
          { signal: { hSyncObject: fences[3], value: BigInt(value) } },
        ] });
        app.submit({ hHwQueue: queues[2], commands: [{ signal: { hSyncObject: fences[2], value: BigInt(value) } }, { wait: { hSyncObject: fences[2], value: BigInt(from) } }] });
      }
      const points: string[] = [snapshot(machine, app, fences)];
      let slice = 0;
      for (let until = 997; machine.scheduler.pending > 0; until += 997) {
        machine.run(until);
        slice++;
        // Part-way through: a handle closed while commands name it (its close deferred), then a queue destroyed with work in it.
        if (slice === 3) app.destroySynchronizationObject(fences[3]);
        if (slice === 6) app.destroyHwQueue(queues[2]);
        points.push(snapshot(machine, app, fences));
      }
      return { points, stretches: machine.adapter(0).hardware.counts.stretches, values: fences.slice(0, 3).map((h) => app.readFenceValue(h)) };
    };
    for (const seed of [3, 20261121]) {
      const stepped = await drive('traced', seed);
      const stretched = await drive('run', seed);
      expect(stepped.stretches).toBe(0);
      expect(stretched.stretches).toBeGreaterThan(3);
      expect(stretched.points.length).toBeGreaterThan(10);
      // The slices see references part-way through: some still held, some released by stretches.
      expect(stretched.points.some((p) => /signal \d+ \d+/.test(p))).toBe(true);
      expect(stretched.points).toEqual(stepped.points);
      expect(stretched.values).toEqual(stepped.values);
    }
  });

  it('different seeds still give different runs with core stretches', async () => {
    const a = await runCoreWorkload('run', 1, { jitter: 0.4, engines: 1 });
    const b = await runCoreWorkload('run', 2, { jitter: 0.4, engines: 1 });
    expect(a.stretches).toBeGreaterThan(0);
    expect(a.wakes).not.toEqual(b.wakes);
    expect(a.nowNs).not.toBe(b.nowNs);
  });

  it('an observer on the driver port turns core stretches off: it sees a NotifyGpuProgress per command, as stepped', async () => {
    const { machine, app, hSyncObject, hHwQueue } = await oneQueueOneFence(4);
    const callbacks: string[] = [];
    const stop = machine.port.observe({ beforeCallback: (call) => { callbacks.push(call.callback); } });
    app.submit({ hHwQueue, commands: Array.from({ length: 40 }, (_, i) => ({ signal: { hSyncObject, value: BigInt(i + 1) } })) });
    machine.run();
    expect(machine.adapter(0).hardware.counts.stretches).toBe(0);
    expect(callbacks.filter((c) => c === 'NotifyGpuProgress')).toHaveLength(40);
    expect(callbacks.filter((c) => c.includes('Stretch'))).toEqual([]);
    // Without it, the same work runs as a stretch, reported by count.
    stop();
    app.submit({ hHwQueue, commands: Array.from({ length: 40 }, (_, i) => ({ signal: { hSyncObject, value: BigInt(41 + i) } })) });
    machine.run();
    expect(machine.adapter(0).hardware.counts.stretches).toBeGreaterThan(0);
    expect(app.readFenceValue(hSyncObject)).toBe(80n);
  });

  it('a tool watching every step (a step listener of its own) turns core stretches off, and sees every command', async () => {
    const { machine, app, hSyncObject, hHwQueue } = await oneQueueOneFence(3);
    const seen: string[] = [];
    machine.adapter(0).hardware.stepListeners.push((step) => seen.push(`${step.kind} ${step.value}`));
    app.submit({ hHwQueue, commands: Array.from({ length: 50 }, (_, i) => ({ signal: { hSyncObject, value: BigInt(i + 1) } })) });
    machine.run();
    expect(machine.adapter(0).hardware.counts.stretches).toBe(0);
    expect(seen).toHaveLength(50);
    expect(seen[49]).toBe('signal 50');
  });
});

/**
 * A core with one fence and one queue, and engineRunStretch called directly on a StretchRecord the test fills:
 * the generators' states and the earliest queued event are the test's. `signals(n)` queues n quiet signals.
 */
async function stretchBench() {
  const machine = await createMachine({ seed: 3, trace: false, adapters: [{ engines: 1 }] });
  const core = machine.adapter(0).core, L = machine.layout, S = L.out.stretch;
  const fence = core.fenceCreate(0, L.fenceKindNative, L.memorySystem, 0, 0, 0n, 0);
  const cv = core.fenceCurrentValueAddress(fence), page = cv - (cv % L.pageBytes);
  const va = BigInt.asUintN(64, core.gpuVaMap(0, page, L.gpuVaReadWrite)) + BigInt(cv - page);
  const queue = core.queueCreate(0, 0);
  const base = core.outBufferAddress() + S.offset;
  const words = new Uint32Array(machine.memory.buffer), numbers = new Float64Array(machine.memory.buffer);
  let value = 0n;
  return {
    L, S, words, numbers, base,
    signals(count: number): void { for (let i = 0; i < count; i++) expect(core.queuePush(queue, L.opSignal, fence, ++value, va, 0x11)).toBe(0); },
    /** engineRunStretch of at most `maxSteps` commands from `nowNs`, the generators' states saved into the record and loaded back after. */
    stretch(maxSteps: number, record: { nowNs: number; sequence: number; commandNs: number; jitterSpan: number; top: ScheduledEvent | undefined; timing: Random; ties: Random }): number {
      const { top } = record;
      numbers[(base + S.nowNs) >> 3] = record.nowNs;
      numbers[(base + S.untilNs) >> 3] = Infinity;
      numbers[(base + S.topTimeNs) >> 3] = top ? top.timeNs : Infinity;
      numbers[(base + S.topSequence) >> 3] = top ? top.sequence : 0;
      numbers[(base + S.sequence) >> 3] = record.sequence;
      numbers[(base + S.commandNs) >> 3] = record.commandNs;
      numbers[(base + S.jitterSpan) >> 3] = record.jitterSpan;
      record.timing.saveState(words, (base + S.timingState) >> 2);
      record.ties.saveState(words, (base + S.tieState) >> 2);
      words[(base + S.topTieBreak) >> 2] = top ? top.tieBreak : 0;
      words[(base + S.budget) >> 2] = 1_000_000;
      expect(core.engineRunStretch(queue, maxSteps)).toBe(L.stepDone);
      record.timing.loadState(words, (base + S.timingState) >> 2);
      record.ties.loadState(words, (base + S.tieState) >> 2);
      return words[(base + S.inPlace) >> 2];
    },
    drain(): void { while (core.queuePending(queue) > 0) core.engineStep(queue, 0n); },
  };
}

/** A copy of `random`'s state: the same draws from here on. */
function copyOf(random: Random): Random {
  const state = new Uint32Array(4), copy = new Random(0);
  random.saveState(state, 0); copy.loadState(state, 0);
  return copy;
}

describe('the stretch\'s in-place rule is the scheduler\'s order (runsBefore)', () => {
  it('a core stretch takes its next tick in place exactly when runsBefore puts it before the earliest queued event: earlier time, or the same time and a smaller tie-break; a tie of both goes to the queued event', async () => {
    const bench = await stretchBench();
    const { S, words, base } = bench;
    const commandNs = 100, nowNs = 1000, sequence = 50;
    const seen: boolean[] = [];
    for (const [timeDelta, keyDelta] of [[0, 0], [0, 1], [0, -1], [1, 0], [-1, 0], [1, -1], [-1, 1]]) {
      const timing = new Random(7 + seen.length), ties = new Random(70 + seen.length);
      // The tie-break the stretch will draw for its next tick: a copy of the same generator, one draw ahead.
      const drawn = copyOf(ties).nextU32();
      expect(drawn + keyDelta).toBeGreaterThanOrEqual(0); // these seeds draw no key at an end of the u32 range
      expect(drawn + keyDelta).toBeLessThan(2 ** 32);
      const top = { timeNs: nowNs + commandNs + timeDelta, tieBreak: drawn + keyDelta, sequence: sequence - 1 } as ScheduledEvent;
      bench.signals(2);
      // one command, then its next tick (at now + commandNs exactly: no jitter): in place or queued
      const inPlace = bench.stretch(1, { nowNs, sequence, commandNs, jitterSpan: 0, top, timing, ties }) === 1;
      expect(inPlace, `time ${timeDelta}, tie-break ${keyDelta}`).toBe(runsBefore(nowNs + commandNs, drawn, sequence, top));
      expect(words[(base + S.stop) >> 2]).toBe(inPlace ? S.stopCount : S.stopQueued);
      if (!inPlace) expect(words[(base + S.nextTieBreak) >> 2]).toBe(drawn);
      seen.push(inPlace);
      bench.drain();
    }
    // A tie of time and key, a larger key, a smaller one, a later time, an earlier one; then the time decides.
    expect(seen).toEqual([false, true, false, true, false, true, false]);
  });

  it('the core\'s stretch draws what the host draws: each tick\'s time as Random.jittered, its tie-break as Random.nextU32, the same order, and hands back the generators where the host\'s would be', async () => {
    // The core compiles the host's generator and order (src/base/portable.ts); this holds the core's use of them
    // to the host's: the same streams, in the same order, through the same formulas, compared tick by tick.
    const bench = await stretchBench();
    const { S, words, numbers, base } = bench;
    const commandNs = 1000, signals = 60;
    let queued = 0, byKey = 0;
    // jitter 0.4, and none: then the earliest queued event falls on a tick's time exactly and the keys decide
    for (const [jitter, seed] of [0.4, 0].flatMap((j) => [1, 2, 3, 20261121].map((seed) => [j, seed]))) {
      const jitterSpan = Math.floor(commandNs * jitter);
      const timing = Random.stream(seed, 2), ties = Random.stream(seed, 1);
      const hostTiming = copyOf(timing), hostTies = copyOf(ties);
      const nowNs = 5000, sequence = 100 + seed % 7;
      // the earliest queued event: somewhere among the stretch's ticks, its key drawn from the seed too
      const keys = Random.stream(seed, 9);
      const top = { timeNs: nowNs + commandNs * (10 + keys.below(40)) + (jitterSpan ? keys.below(jitterSpan) : 0), tieBreak: keys.nextU32(), sequence: sequence - 1 - keys.below(50) } as ScheduledEvent;
      // The host's model of the stretch: Random.jittered and Scheduler's runsBefore, tick by tick.
      let hostNowNs = nowNs, hostSequence = sequence, hostInPlace = 0, hostNext: { timeNs: number; tieBreak: number } | undefined;
      for (let tick = 0; tick < signals - 1; tick++) {
        const timeNs = hostNowNs + hostTiming.jittered(commandNs, jitter);
        const tieBreak = hostTies.nextU32();
        const tickSequence = hostSequence++;
        if (!runsBefore(timeNs, tieBreak, tickSequence, top)) { hostNext = { timeNs, tieBreak }; break; }
        hostInPlace++;
        hostNowNs = timeNs;
      }
      bench.signals(signals);
      const inPlace = bench.stretch(signals - 1, { nowNs, sequence, commandNs, jitterSpan, top, timing, ties });
      expect(inPlace, `seed ${seed}`).toBe(hostInPlace);
      expect(inPlace).toBeGreaterThan(5);
      expect(numbers[(base + S.nowNs) >> 3]).toBe(hostNowNs);
      expect(numbers[(base + S.sequence) >> 3]).toBe(hostSequence);
      expect(words[(base + S.stop) >> 2]).toBe(hostNext ? S.stopQueued : S.stopCount);
      if (hostNext) {
        queued++;
        if (hostNext.timeNs === top.timeNs) byKey++;
        expect(numbers[(base + S.nextNs) >> 3]).toBe(hostNext.timeNs);
        expect(words[(base + S.nextTieBreak) >> 2]).toBe(hostNext.tieBreak);
      }
      // the generators come back where the host's copies are: the next draws agree
      expect([timing.nextU32(), ties.nextU32()]).toEqual([hostTiming.nextU32(), hostTies.nextU32()]);
      bench.drain();
    }
    expect(queued).toBe(8); // every stretch ends at the queued event, some by time, some on a tie of times by the key
    expect(byKey).toBeGreaterThan(0);
    expect(byKey).toBeLessThan(8);
  });
});
