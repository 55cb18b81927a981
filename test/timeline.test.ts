// The fence timeline (LOG-08): CPU queued events apart from the GPU logs, and
// the Chrome JSON trace that joins them.
import { describe, it, expect } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMachineSync, exportTimeline, type ChromeTraceEvent, type Machine } from '../src/index.js';
import { readLogLayout } from '../src/core/bindings.js';
import { osModules } from './helpers.js';

/** Checks what Perfetto / chrome://tracing need; returns a description of each problem. */
function structureProblems(json: unknown): string[] {
  const problems: string[] = [];
  const trace = json as { traceEvents?: ChromeTraceEvent[] };
  if (!trace || !Array.isArray(trace.traceEvents)) return ['no traceEvents array'];
  const events = trace.traceEvents;
  const processNames = new Map<number, string>();
  const threadNames = new Map<string, string>();
  for (const e of events) {
    if (typeof e.ts !== 'number' || typeof e.pid !== 'number' || typeof e.tid !== 'number' || typeof e.name !== 'string') problems.push(`malformed event ${JSON.stringify(e)}`);
    if (e.ph === 'M' && e.name === 'process_name') processNames.set(e.pid, String(e.args?.name));
    if (e.ph === 'M' && e.name === 'thread_name') threadNames.set(`${e.pid}/${e.tid}`, String(e.args?.name));
  }
  const byTid = new Map<string, { start: number; end: number; name: string }[]>();
  for (const e of events) {
    if (e.ph === 'M') continue;
    if (!processNames.has(e.pid)) problems.push(`event "${e.name}" on pid ${e.pid} without process_name`);
    if (!threadNames.has(`${e.pid}/${e.tid}`)) problems.push(`event "${e.name}" on ${e.pid}/${e.tid} without thread_name`);
    if (e.ph === 'X') {
      if (typeof e.dur !== 'number' || e.dur < 0) problems.push(`slice "${e.name}" has dur ${e.dur}`);
      const key = `${e.pid}/${e.tid}`;
      let list = byTid.get(key);
      if (!list) byTid.set(key, (list = []));
      list.push({ start: Math.round(e.ts * 1000), end: Math.round((e.ts + (e.dur ?? 0)) * 1000), name: e.name });
    }
  }
  // Slices on one track nest: any two are disjoint or one contains the other.
  for (const [key, slices] of byTid) {
    for (let i = 0; i < slices.length; i++) {
      for (let j = i + 1; j < slices.length; j++) {
        const a = slices[i], b = slices[j];
        const disjoint = a.end <= b.start || b.end <= a.start;
        const nested = (a.start <= b.start && b.end <= a.end) || (b.start <= a.start && a.end <= b.end);
        if (!disjoint && !nested) problems.push(`slices "${a.name}" [${a.start},${a.end}] and "${b.name}" [${b.start},${b.end}] overlap on ${key} without nesting`);
      }
    }
  }
  // Every flow has both ends, once each, on slices.
  const flows = new Map<string, { out: ChromeTraceEvent[]; in: ChromeTraceEvent[] }>();
  for (const e of events) {
    if (e.bind_id === undefined) continue;
    if (e.ph !== 'X') problems.push(`flow ${e.bind_id} on a non-slice event`);
    let f = flows.get(e.bind_id);
    if (!f) flows.set(e.bind_id, (f = { out: [], in: [] }));
    if (e.flow_out) f.out.push(e);
    if (e.flow_in) f.in.push(e);
  }
  for (const [id, f] of flows) {
    if (f.out.length !== 1 || f.in.length !== 1) problems.push(`flow ${id} has ${f.out.length} start(s) and ${f.in.length} end(s)`);
    else if (f.out[0].ts > f.in[0].ts) problems.push(`flow ${id} goes back in time`);
  }
  return problems;
}

function scenario(): Machine {
  const m = createMachineSync({
    seed: 11,
    timing: { jitter: 0 }, // the slices' times below are exact
    adapters: [
      { name: 'dgpu', engines: 2, caps: { optimizedNativeFenceSignaledInterrupt: true } },
      { name: 'igpu', engines: 1, integrated: true },
    ],
  });
  const app = m.createProcess('app');
  const d = app.createDevice({ hAdapter: app.openAdapter('dgpu') });
  const i = app.createDevice({ hAdapter: app.openAdapter('igpu') });
  const frame = app.createNativeFence({ hDevice: d, name: 'frame' });
  const done = app.createNativeFence({ hDevice: d, name: 'done' });
  const spam = app.createNativeFence({ hDevice: i, name: 'spam' });
  const producer = app.createHwQueue({ hDevice: d, engine: 0, name: 'producer' });
  const consumer = app.createHwQueue({ hDevice: d, engine: 1, name: 'consumer' });
  const busy = app.createHwQueue({ hDevice: i, engine: 0, nativeProgressFence: false, name: 'busy' });
  app.createThread('submitter', function* (cpu) {
    for (let n = 1; n <= 3; n++) {
      app.submit({ hHwQueue: consumer.hHwQueue, commands: [{ wait: { hSyncObject: frame.hSyncObject, value: n } }, { work: { durationNs: 1500 } }, { signal: { hSyncObject: done.hSyncObject, value: n } }] });
      app.submit({ hHwQueue: producer.hHwQueue, commands: [{ work: { durationNs: 4000 } }, { signal: { hSyncObject: frame.hSyncObject, value: n } }] });
      yield cpu.sleep(1000);
    }
  });
  app.createThread('presenter', function* (cpu) { return yield cpu.wait({ objects: [done.hSyncObject], values: [3n] }); });
  // 90 signals on the integrated GPU (+1 written below), nobody reads them until the export: an overrun of 7.
  app.submit({ hHwQueue: busy.hHwQueue, commands: Array.from({ length: 90 }, (_, k) => ({ signal: { hSyncObject: spam.hSyncObject, value: k + 1 } })) });
  m.run();
  // A driver that writes a timestamp going backwards (LOG-07) on the integrated GPU.
  const igpu = m.adapters[1];
  const L = readLogLayout(igpu.core);
  const ql = osModules(m).logs.liveQueues(osModules(m).adapters[igpu.index])[0];
  igpu.core.logRecord(igpu.driver.coreQueueOf!(ql.queue.hHwQueue)!, L.typeSignals, spam.hSyncObject, 91n, L.operationSignalExecuted, 0n, 1n);
  return m;
}

describe('timeline', () => {
  it('LOG-08 wait-queued and signal-queued events carry CPU timestamps and are kept apart from the GPU log entries', () => {
    const m = createMachineSync({ seed: 3, timing: { jitter: 0 } }); // exact command times (the entries' end timestamps below)
    const app = m.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const f = app.createNativeFence({ hDevice, name: 'F' });
    const q = app.createHwQueue({ hDevice, engine: 0, nativeProgressFence: false, name: 'Q' });
    app.createThread('late', function* (cpu) {
      yield cpu.sleep(3000);
      app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 1 } }, { wait: { hSyncObject: f.hSyncObject, value: 1 } }] });
    });
    m.run();
    const logs = m.nativeFenceLogs;
    expect(logs.queued.map((e) => [e.kind, e.fence, e.value, e.cpuTimeNs])).toEqual([['signal', 'F', 1n, 3000], ['wait', 'F', 1n, 3000]]);
    expect(logs.entries).toHaveLength(0); // nobody has read the GPU logs yet
    const trace = exportTimeline(m);
    expect(logs.entries.map((e) => [e.kind, e.endNs])).toEqual([['waits', 3100n], ['signals', 3000n]]);
    const slices = trace.traceEvents.filter((e) => e.ph === 'X' && e.cat !== 'flow');
    // on the queue's track at GPU time (the signal executed at 3000 ns, the wait passed at 3100 ns); the CPU queued time is in the args
    expect(slices.map((e) => [e.name, e.ts, e.dur, e.args?.cpuQueuedNs])).toEqual([['signal F 1', 3, 0, 3000], ['wait F 1', 3.1, 0, 3000]]);
    expect(trace.traceEvents.filter((e) => e.cat === 'flow').map((e) => [e.name, e.ts, e.flow_out ?? false, e.flow_in ?? false]))
      .toEqual([['unblocks Q', 3, true, false], ['unblocked', 3.1, false, true]]);
  });

  it('LOG-08 the exported Chrome JSON has a process per adapter, a track per hardware queue, nested slices, flows with both ends, interrupts, overruns and violations', () => {
    const m = scenario();
    const json = JSON.parse(JSON.stringify(exportTimeline(m)));
    expect(structureProblems(json)).toEqual([]);
    const events = json.traceEvents as ChromeTraceEvent[];
    const names = (n: string) => events.filter((e) => e.ph === 'M' && e.name === n).map((e) => [e.pid, e.tid, e.args?.name]);
    expect(names('process_name')).toEqual([[1, 0, 'dgpu'], [2, 0, 'igpu'], [3, 0, 'CPU']]);
    const tracks = names('thread_name').map(([pid, , name]) => `${pid}:${name}`);
    expect(tracks).toEqual(expect.arrayContaining(['1:Dxgkrnl', '2:Dxgkrnl']));
    for (const q of ['1:producer', '1:consumer', '2:busy']) expect(tracks.some((t) => t.startsWith(`${q} (hHwQueue 0x`))).toBe(true);
    // A queue's GPU operations do not overlap: one lane each (extra lanes only if slices would not nest).
    expect(tracks.some((t) => / #2$/.test(t))).toBe(false);
    // GPU work slices at their real virtual times: the producer's three 4000 ns frames, back to back with the hand-offs between them.
    const work = (tid: number) => events.filter((e) => e.cat === 'work' && e.pid === 1 && e.tid === tid).map((e) => [e.ts, e.dur]);
    const producerTid = events.find((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === 1 && String(e.args?.name).startsWith('producer'))!.tid;
    const producerWork = work(producerTid);
    expect(producerWork).toHaveLength(3);
    expect(producerWork[0]).toEqual([0, 4]);
    for (const [, dur] of producerWork) expect(dur).toBe(4);
    expect(producerWork[1][0]).toBeGreaterThan(producerWork[0][0]! + 4 - 1e-9);
    // every GPU slice of a queue lies within the GPU's run: the consumer's first wait starts at 0 (it is reached at once), its work after it
    const consumerTid = events.find((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === 1 && String(e.args?.name).startsWith('consumer'))!.tid;
    const consumerWait1 = events.find((e) => e.ph === 'X' && e.tid === consumerTid && e.name === 'wait frame 1')!;
    expect(consumerWait1.args?.gpuObservedNs).toBe(consumerWait1.ts * 1000);
    expect(work(consumerTid)[0][0]).toBeCloseTo(consumerWait1.ts + consumerWait1.dur!, 9);
    // Each consumer wait is unblocked by the producer's signal of the same value.
    const flowsIn = events.filter((e) => e.flow_in);
    const flowsOut = events.filter((e) => e.flow_out);
    expect(flowsIn.length).toBeGreaterThanOrEqual(3);
    for (const n of [1, 2, 3]) {
      const wait = events.find((e) => e.ph === 'X' && e.name === `wait frame ${n}`)!;
      const signal = events.find((e) => e.ph === 'X' && e.name === `signal frame ${n}`)!;
      expect(wait.pid).toBe(1);
      const arrowEnd = flowsIn.find((e) => e.tid === wait.tid && e.ts === wait.ts + wait.dur!)!;
      const arrowStart = flowsOut.find((e) => e.bind_id === arrowEnd.bind_id)!;
      expect(arrowStart.tid).toBe(signal.tid);
      expect(arrowStart.ts).toBe(signal.ts + signal.dur!);
    }
    // A signal is a zero-length slice when the GPU executed it; when it was queued on the CPU is in its args.
    const frame2 = events.find((e) => e.ph === 'X' && e.name === 'signal frame 2')!;
    expect(frame2.args?.cpuQueuedNs).toBe(1000);
    expect(frame2.dur).toBe(0);
    expect(frame2.ts).toBeCloseTo((frame2.args?.gpuEndNs as number) / 1000, 9);
    expect(frame2.ts).toBeGreaterThan(4); // after the second frame's work, not at the CPU time it was queued
    expect(events.filter((e) => e.cat === 'interrupt').length).toBe(m.trace.find({ kind: 'interrupt' }).length);
    expect(events.filter((e) => e.cat === 'interrupt').length).toBeGreaterThan(0);
    const overrun = events.filter((e) => e.cat === 'overrun');
    expect(overrun.map((e) => [e.pid, e.name])).toEqual([[2, 'log overrun: 7 signals entries lost']]);
    // The CPU thread waiting for done = 3 is woken by the consumer's signal of done 3.
    const cpuWait = events.find((e) => e.cat === 'cpu-wait' && e.name === 'CPU wait done 3')!;
    expect(cpuWait.pid).toBe(3);
    const woken = events.find((e) => e.name === 'woken' && e.tid === cpuWait.tid && e.pid === 3)!;
    const from = events.find((e) => e.flow_out && e.bind_id === woken.bind_id)!;
    const doneSignal = events.find((e) => e.ph === 'X' && e.name === 'signal done 3')!;
    expect([from.pid, from.tid, from.ts]).toEqual([1, doneSignal.tid, doneSignal.ts + doneSignal.dur!]);
    const violation = events.filter((e) => e.cat === 'violation');
    expect(violation.map((e) => [e.pid, e.name])).toEqual([[2, 'contract violation: timestamp-decreased']]);
  });

  it('LOG-08 the queued window keeps each command\'s queue, fence, handle, op, value and time through many short runs (handles, ops and queues interleaved, submissions of 1 to 40 commands)', () => {
    const limit = 16;
    const m = createMachineSync({ seed: 9, trace: false, limits: { timelineRecords: limit } });
    const app = m.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const fences = ['A', 'B', 'C'].map((name) => ({ name, ...app.createNativeFence({ hDevice, name }) }));
    const queues = ['Q0', 'Q1'].map((name, engine) => ({ name, ...app.createHwQueue({ hDevice, engine: 0, nativeProgressFence: false, name }) }));
    // Every command as the window must show it, in submission order; waits are on values already reached (they pass).
    const expected: (string | number | bigint)[][] = [];
    const next = [0, 0, 0];
    let seen = 0;
    for (let submission = 0; submission < 60; submission++) {
      const queue = queues[submission % 2];
      const size = 1 + ((submission * 7) % 40);
      const list = app.createCommandList();
      for (let k = 0; k < size; k++) {
        // Runs of 1 to 3 commands of one fence and op, so a submission holds many runs.
        const fence = Math.floor((k + submission) / (1 + (submission % 3))) % 3;
        const op = (k + submission) % 5 === 0 && next[fence] > 0 ? 'wait' : 'signal';
        const value = op === 'wait' ? next[fence] : ++next[fence];
        if (op === 'wait') list.wait(fences[fence].hSyncObject, value); else list.signal(fences[fence].hSyncObject, value);
        expected.push([queue.name, op, fences[fence].name, fences[fence].hSyncObject, BigInt(value)]);
      }
      const queuedAtNs = m.nowNs;
      app.submit({ hHwQueue: queue.hHwQueue, commands: list });
      m.run();
      m.os.readNativeFenceLogs();
      seen += size;
      const window = m.nativeFenceLogs.queued;
      expect(window).toHaveLength(Math.min(limit, seen));
      expect(window.map((e) => [e.queue, e.kind, e.fence, e.hSyncObject, e.value])).toEqual(expected.slice(-Math.min(limit, seen)));
      // This submission's commands were queued at its time (every run of it), the older ones before it.
      expect(window.slice(-Math.min(size, limit)).every((e) => e.cpuTimeNs === queuedAtNs)).toBe(true);
      if (size < limit && seen > size) expect(window[window.length - size - 1].cpuTimeNs).toBeLessThan(queuedAtNs);
      expect(m.nativeFenceLogs.counters.queuedDropped).toBe(seen - Math.min(limit, seen));
    }
    // Shrinking the window keeps the newest; growing it again keeps what is left, renumbered runs and all.
    osModules(m).logs.historyRecords = 5;
    expect(m.nativeFenceLogs.queued.map((e) => [e.queue, e.kind, e.fence, e.hSyncObject, e.value])).toEqual(expected.slice(-5));
    osModules(m).logs.historyRecords = 64;
    const list = app.createCommandList().signal(fences[0].hSyncObject, ++next[0]).signal(fences[1].hSyncObject, ++next[1]);
    app.submit({ hHwQueue: queues[0].hHwQueue, commands: list });
    expected.push(['Q0', 'signal', 'A', fences[0].hSyncObject, BigInt(next[0])], ['Q0', 'signal', 'B', fences[1].hSyncObject, BigInt(next[1])]);
    expect(m.nativeFenceLogs.queued.map((e) => [e.queue, e.kind, e.fence, e.hSyncObject, e.value])).toEqual([...expected.slice(-7, -2), ...expected.slice(-2)]);
  });

  it('LOG-08 the OS keeps only the most recent limits.timelineRecords records of each kind, counts the dropped ones, and the timeline is that window', () => {
    const limit = 8;
    const m = createMachineSync({ seed: 5, trace: false, limits: { timelineRecords: limit } });
    const app = m.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const f = app.createNativeFence({ hDevice, name: 'F' });
    const q = app.createHwQueue({ hDevice, engine: 0, nativeProgressFence: false, name: 'Q' });
    const logs = m.nativeFenceLogs;
    let value = 0;
    for (let round = 1; round <= 10; round++) {
      // 30 signals a round; the OS reads the log between rounds (it holds 84 entries: no overrun).
      app.submit({ hHwQueue: q.hHwQueue, commands: Array.from({ length: 30 }, () => ({ signal: { hSyncObject: f.hSyncObject, value: ++value } })) });
      m.run();
      m.os.readNativeFenceLogs();
      expect(logs.queued).toHaveLength(limit); // bounded however many commands ran
      expect(logs.entries).toHaveLength(limit);
      expect(logs.counters).toMatchObject({ queuedDropped: 30 * round - limit, entriesDropped: 30 * round - limit, overruns: 0 });
    }
    // The window is the newest records, oldest first.
    expect(logs.queued.map((e) => e.value)).toEqual(Array.from({ length: limit }, (_, k) => BigInt(300 - limit + 1 + k)));
    expect(logs.entries.map((e) => e.value)).toEqual(Array.from({ length: limit }, (_, k) => BigInt(300 - limit + 1 + k)));
    expect(m.summary().logs).toMatchObject({ entriesRead: 300, queuedDropped: 292, entriesDropped: 292 });
    expect(m.summaryText()).toMatch(/timeline records dropped \(only the last 8 of each kind are kept: limits\.timelineRecords\): queued=292 entries=292/);
    const trace = exportTimeline(m);
    expect(structureProblems(JSON.parse(JSON.stringify(trace)))).toEqual([]);
    const slices = trace.traceEvents.filter((e) => e.ph === 'X' && e.cat === 'signal');
    expect(slices.map((e) => e.name)).toEqual(Array.from({ length: limit }, (_, k) => `signal F ${300 - limit + 1 + k}`));
    expect(slices.every((e) => typeof e.args?.cpuQueuedNs === 'number')).toBe(true); // each joined with its queued event
    expect(trace.otherData).toMatchObject({ recordsKeptPerKind: limit, queuedDropped: 292, entriesDropped: 292 });
    // A machine that drops nothing says nothing about it; a bad limit is refused.
    expect(exportTimeline(createMachineSync({ seed: 5 })).otherData).not.toHaveProperty('queuedDropped');
    expect(() => createMachineSync({ limits: { timelineRecords: 0 } })).toThrow(/limits.timelineRecords is 0; expected an integer from 1 to 16777216/);
  });

  it('the same seed and inputs export a byte-identical timeline', () => {
    expect(JSON.stringify(exportTimeline(scenario()))).toBe(JSON.stringify(exportTimeline(scenario())));
  });

  it('LOG-08 every built-in scenario\'s timeline passes the structure check: kernel-mode contexts, CPU signals, other interrupts and faults from the trace beside the logs', async () => {
    const { runnableScenarios, runScenario } = await import('../src/scenario-files/index.js');
    const seen = new Set<string>();
    for (const builtin of runnableScenarios()) {
      const result = await runScenario(builtin.scenario!);
      const json = JSON.parse(JSON.stringify(exportTimeline(result.machine)));
      expect(structureProblems(json), builtin.name).toEqual([]);
      for (const e of json.traceEvents as ChromeTraceEvent[]) if (e.cat) seen.add(e.cat);
      for (const e of json.traceEvents as ChromeTraceEvent[]) if (e.args?.source) seen.add('traced');
    }
    for (const cat of ['work', 'wait', 'signal', 'cpu-wait', 'cpu-signal', 'flow', 'interrupt', 'fault', 'traced']) expect(seen, cat).toContain(cat);
  });

  it('the structure check catches broken traces', () => {
    const slice = (name: string, ts: number, dur: number, extra: Partial<ChromeTraceEvent> = {}): ChromeTraceEvent => ({ name, ph: 'X', ts, dur, pid: 1, tid: 2, ...extra });
    const meta: ChromeTraceEvent[] = [
      { name: 'process_name', ph: 'M', ts: 0, pid: 1, tid: 0, args: { name: 'p' } },
      { name: 'thread_name', ph: 'M', ts: 0, pid: 1, tid: 2, args: { name: 't' } },
    ];
    expect(structureProblems({ traceEvents: [...meta, slice('a', 0, 2), slice('b', 1, 2)] })[0]).toMatch(/overlap on 1\/2 without nesting/);
    expect(structureProblems({ traceEvents: [...meta, slice('a', 0, 2, { bind_id: '0x1', flow_out: true })] })[0]).toMatch(/flow 0x1 has 1 start\(s\) and 0 end\(s\)/);
    expect(structureProblems({ traceEvents: [slice('a', 0, 2)] })).toContain('event "a" on pid 1 without process_name');
    expect(structureProblems({ traceEvents: [...meta, slice('a', 0, 2), slice('b', 0.5, 1)] })).toEqual([]);
  });

  it('LOG-08 `wddm-fence demo --timeline FILE` writes a timeline that loads and passes the structure check', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wddm-fence-'));
    const file = join(dir, 'out.json');
    execFileSync(process.execPath, ['dist/cli.js', 'demo', '--timeline', file], { stdio: ['ignore', 'ignore', 'pipe'] });
    const json = JSON.parse(readFileSync(file, 'utf8'));
    expect(structureProblems(json)).toEqual([]);
    const events = json.traceEvents as ChromeTraceEvent[];
    expect(events.filter((e) => e.ph === 'X' && e.cat !== 'flow').length).toBeGreaterThan(10);
    expect(events.some((e) => e.flow_out)).toBe(true);
  });
});

describe('timeline: cross-adapter propagation', () => {
  it('XA-04 NF-10 an interrupt that wakes nobody on its adapter but carries a cross-adapter signal on is a propagation, not spurious: counters, trace, summary and timeline (an arrow across adapters)', async () => {
    const { parseScenario, runScenario } = await import('../src/scenario-files/index.js');
    const s = parseScenario(`name: propagation
machine: { seed: 1, timing: { jitter: 0 }, adapters: [ { name: iGPU, integrated: true, engines: 1 }, { name: dGPU, engines: 1 } ] }
processes: [ { name: app } ]
fences:
  - { name: hFence, process: app, adapter: dGPU, flags: { shared: true, crossAdapter: true }, crossAdapter: [iGPU] }
queues:
  - { name: iGPU.wait, process: app, adapter: iGPU, commands: [ { wait: { fence: hFence, value: 10 } }, { work: { durationNs: 1000 } } ] }
  - { name: dGPU.signal, process: app, adapter: dGPU, commands: [ { work: { durationNs: 5000 } }, { signal: { fence: hFence, value: 10 } } ] }
expect:
  counters: { interruptsHandled: 1, spuriousInterrupts: 0, propagationInterrupts: 1 }
  crossAdapterCounters: { propagations: 1 }
  blockedQueues: { iGPU.wait: false }
`, 'propagation.yaml');
    const r = await runScenario(s);
    expect(r.expectations.filter((e) => !e.ok)).toEqual([]);
    const m = r.machine;
    expect(m.trace.find({ name: /spurious/ })).toHaveLength(0);
    expect(m.trace.find({ name: /^propagation interrupt/ }).map((e) => e.args)).toEqual([{ adapter: 'dGPU', propagations: 1 }]);
    expect(m.summaryText()).toMatch(/interrupts: raised=1 handled=1 spurious=0 propagation=1 /);
    const events = exportTimeline(m).traceEvents;
    expect(structureProblems({ traceEvents: events })).toEqual([]);
    // dGPU (pid 2) names its interrupt a propagation; iGPU (pid 1) shows the value arriving
    expect(events.filter((e) => e.cat === 'propagation-interrupt').map((e) => [e.pid, e.ts, e.name])).toEqual([[2, 7, 'propagation interrupt (engine 0, 1 listed): hFence = 10 to iGPU']]);
    expect(events.filter((e) => e.cat === 'interrupt')).toHaveLength(0);
    expect(events.filter((e) => e.cat === 'propagation').map((e) => [e.pid, e.ts, e.name])).toEqual([[1, 7, 'cross-adapter propagation: hFence = 10 from dGPU']]);
    // the iGPU queue's wait runs from 0 to 7 us and the dGPU's signal (at 5 us) points at its end
    const wait = events.find((e) => e.ph === 'X' && e.name === 'wait hFence@iGPU 10')!;
    expect([wait.pid, wait.ts, wait.dur]).toEqual([1, 0, 7]);
    const end = events.find((e) => e.flow_in && e.pid === 1)!;
    const start = events.find((e) => e.flow_out && e.bind_id === end.bind_id)!;
    expect([start.pid, start.ts, start.name]).toEqual([2, 5, 'unblocks iGPU.wait']);
    expect(events.filter((e) => e.cat === 'work').map((e) => [e.pid, e.ts, e.dur])).toEqual([[1, 7, 1], [2, 0, 5]]);
  });
});
