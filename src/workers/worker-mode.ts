// Worker mode: the adapters of one machine in their own threads.
//
// Single-thread mode (createMachine + machine.run) is the model: one thread,
// virtual time, a byte-identical trace for a seed. Worker mode is the real
// thing on real threads: the machine is built and its cross-adapter fences
// are created and opened through the ordinary API on the main thread; then
// each adapter gets worker threads that instantiate the same compiled core
// over the one shared WebAssembly.Memory, attach to that adapter's private
// region, and signal and wait on the shared CurrentValue words with 64-bit
// atomics (CPU waits sleep on the word: memory.atomic.wait64 / notify). Runs
// are real-time and not reproducible step for step; the checks are the
// invariants (no torn value, every reached wait wakes, nothing left asleep).
//
// Node: worker_threads (this file). Browsers: the same worker source
// (browserAdapterWorkerSource) in a Web Worker from a Blob URL, in a
// cross-origin isolated page; a browser main thread must not block, so it
// waits with Atomics.waitAsync on the word instead.

import { createMachineSync, type Machine } from '../machine/machine.js';
import { WddmError, invalid } from '../base/errors.js';
import * as v from '../base/validate.js';
import type { WasmMemory } from '../core/bindings.js';
import { nodeAdapterWorkerSource, browserAdapterWorkerSource } from './adapter-worker-source.js';

export interface WorkerStressOptions {
  /** Adapters, each with its own workers (default 3). */
  adapters?: number;
  /** Cross-adapter fences (default 6); each is created on one adapter and opened on every other. */
  fences?: number;
  /** Producer threads per adapter (default 1): each signals every fence, so every fence has one producer per adapter racing. */
  producersPerAdapter?: number;
  /** Consumer threads per adapter (default 2). */
  consumersPerAdapter?: number;
  /** Waits each consumer makes (default 2000). */
  waitsPerConsumer?: number;
  /** Last k every producer signals (value k·2^32 + k) (default 4000). */
  lastValue?: number;
  seed?: number;
  /** A single sleep longer than this is a failure (default 10 s). */
  waitTimeoutMs?: number;
  /** The whole run must end within this (default 90 s), else the workers are stopped and the run fails. */
  budgetMs?: number;
  /** XA-07 in real time: producers also ring the other adapters' doorbells; one scheduler thread per adapter takes the records. */
  doorbell?: boolean;
  /** Doorbell ring size per adapter (power of two, default 64); a full ring is counted as an interrupt fallback. */
  doorbellRingEntries?: number;
  /** How consumers sleep: 'core' the core's fenceWordWait (memory.atomic.wait64, default), 'js' Atomics.wait from JavaScript. */
  waitWith?: 'core' | 'js';
}

export interface WorkerRoleStats {
  role: 'producer' | 'consumer' | 'scheduler'; adapter: number; signals: number; waits: number; wakes: number; immediate: number;
  timeouts: number; torn: number; short: number; doorbellPosted: number; doorbellFull: number; doorbellTaken: number; doorbellBad: number;
  errors: string[];
}

export interface WorkerStressReport {
  adapters: number;
  workers: number;
  wallMs: number;
  signals: number;
  waits: number;
  /** Waits that slept and were woken by a signal. */
  wakes: number;
  /** Waits already satisfied when made. */
  immediate: number;
  timeouts: number;
  /** Reads where the two 32-bit halves disagreed (must be 0). */
  torn: number;
  /** Wakes that found the word below the waited value (must be 0). */
  short: number;
  /** Threads still asleep on a fence word after every worker finished (must be 0). */
  leftBlocked: number;
  /** Every fence ended at the last value, seen through every adapter's handle. */
  finalValuesOk: boolean;
  /** With options.doorbell: records posted, refused (ring full: the interrupt fallback), taken by the schedulers, malformed (must be 0), left in rings (must be 0). */
  doorbell?: { posted: number; full: number; taken: number; bad: number; leftInRings: number };
  signalsPerSecond: number;
  wakesPerSecond: number;
  errors: string[];
  machine: Machine;
}

/** Runs the stress workload in Node worker threads. */
export async function runWorkerStress(options: WorkerStressOptions = {}): Promise<WorkerStressReport> {
  const o = v.options(options, 'runWorkerStress(options)', ['adapters', 'fences', 'producersPerAdapter', 'consumersPerAdapter', 'waitsPerConsumer', 'lastValue', 'seed', 'waitTimeoutMs', 'budgetMs', 'waitWith', 'doorbell', 'doorbellRingEntries']);
  const adapters = o.adapters === undefined ? 3 : v.integer(o.adapters, 'adapters', 2, 8);
  const fences = o.fences === undefined ? 6 : v.integer(o.fences, 'fences', 1, 256);
  const producers = o.producersPerAdapter === undefined ? 1 : v.integer(o.producersPerAdapter, 'producersPerAdapter', 0, 8);
  const consumers = o.consumersPerAdapter === undefined ? 2 : v.integer(o.consumersPerAdapter, 'consumersPerAdapter', 0, 8);
  const waits = o.waitsPerConsumer === undefined ? 2000 : v.integer(o.waitsPerConsumer, 'waitsPerConsumer', 0, 10_000_000);
  const last = o.lastValue === undefined ? 4000 : v.integer(o.lastValue, 'lastValue', 1, 0x7fff_ffff);
  const seed = o.seed === undefined ? 1 : v.integer(o.seed, 'seed', 0, 0xffff_ffff);
  const waitTimeoutMs = o.waitTimeoutMs === undefined ? 10_000 : v.integer(o.waitTimeoutMs, 'waitTimeoutMs', 1, 3_600_000);
  const budgetMs = o.budgetMs === undefined ? 90_000 : v.integer(o.budgetMs, 'budgetMs', 1, 3_600_000);
  const waitWith = o.waitWith === undefined ? 'core' : v.oneOf(o.waitWith, 'waitWith', ['core', 'js'] as const);
  const doorbell = o.doorbell === undefined ? false : v.bool(o.doorbell, 'doorbell');
  const ringEntries = o.doorbellRingEntries === undefined ? 64 : v.integer(o.doorbellRingEntries, 'doorbellRingEntries', 2, 65536);
  if (producers === 0 && consumers > 0) throw invalid('producersPerAdapter', 0, 'at least 1 when there are consumers (nothing would signal)');

  const spawn = await workerSpawner();

  // The machine, built and populated on this thread through the ordinary API.
  const machine = createMachineSync({
    seed, trace: false, doorbell: { enabled: doorbell, ringEntries },
    adapters: Array.from({ length: adapters }, (_, i) => ({ name: `gpu${i}`, engines: 1, limits: { fences: fences + 16 } })),
  });
  const app = machine.createProcess('stress');
  const devices = machine.adapters.map((a) => app.createDevice({ hAdapter: app.openAdapter(a.name) }));
  const handles: number[][] = machine.adapters.map(() => []); // [adapter][fence] → hSyncObject
  for (let f = 0; f < fences; f++) {
    const owner = f % adapters;
    const created = app.createNativeFence({ hDevice: devices[owner], flags: { shared: true, crossAdapter: true }, name: `F${f}` });
    handles[owner][f] = created.hSyncObject;
    const nt = app.shareObject(created.hSyncObject);
    for (let a = 0; a < adapters; a++) if (a !== owner) handles[a][f] = app.openNativeFenceFromNtHandle({ hNtHandle: nt, hDevice: devices[a] }).hSyncObject;
    app.closeHandle(nt);
  }
  const records = handles.map((row) => row.map((h) => machine.os.inspect.fenceOf(app.kernel, h)));
  const words = records[0].map((g) => g.cvPhys);

  const doorbellBase = machine.doorbellBase;
  // The workers: each attaches to its adapter and uses that adapter's fence records.
  const jobs: Record<string, unknown>[] = [];
  let jobSeed = seed * 7919 + 1;
  for (let a = 0; a < adapters; a++) {
    const base = {
      memory: machine.memory, module: machine.module, privateBase: machine.adapters[a].privateBase, adapterIndex: a,
      fences: records[a].map((g) => g.coreFence), last, waitTimeoutMs, waitWith,
      words, adapterCount: adapters, doorbell: doorbell ? doorbellBase : 0,
    };
    for (let p = 0; p < producers; p++) jobs.push({ ...base, role: 'producer', seed: (jobSeed += 104729) >>> 0 });
    for (let c = 0; c < consumers; c++) jobs.push({ ...base, role: 'consumer', waits, seed: (jobSeed += 104729) >>> 0 });
  }
  const schedulerJobs = doorbell ? machine.adapters.map((a, i) => ({
    memory: machine.memory, module: machine.module, privateBase: a.privateBase, adapterIndex: i, fences: [], last, waitTimeoutMs,
    words, adapterCount: adapters, doorbell: doorbellBase, role: 'scheduler', seed: 1,
  })) : [];
  // Every worker reports ready, then all start at once (the gate), so consumers really sleep.
  const gateBuffer = new SharedArrayBuffer(8); // [0] start, [1] producers and consumers are done (schedulers drain and stop)
  const gate = new Int32Array(gateBuffer);
  let ready = 0;
  let started = performance.now();
  const openGate = () => { started = performance.now(); Atomics.store(gate, 0, 1); Atomics.notify(gate, 0); };
  const running = [...jobs, ...schedulerJobs].map((job) => spawn({ ...job, gate: gateBuffer }));
  const workerCount = jobs.length;
  const results: WorkerRoleStats[] = [];
  const errors: string[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const settled = running.map((worker, i) => new Promise<void>((resolve) => {
    worker.onMessage((m) => {
      if (m.kind === 'ready') { if (++ready === running.length) openGate(); return; }
      if (m.kind === 'done' && m.stats) results.push(m.stats);
      else errors.push(`worker ${i}: ${m.message}`);
      resolve();
    });
    worker.onFailure((message) => { errors.push(`worker ${i}: ${message}`); resolve(); });
  }));
  // Producers and consumers first; then the schedulers are told to drain their rings and stop.
  const finished = Promise.all(settled.slice(0, workerCount)).then(() => {
    Atomics.store(gate, 1, 1);
    return Promise.all(settled.slice(workerCount));
  });
  const budget = new Promise<'budget'>((resolve) => { timer = setTimeout(() => resolve('budget'), budgetMs); });
  const outcome = await Promise.race([finished.then(() => 'done' as const), budget]);
  clearTimeout(timer);
  const wallMs = performance.now() - started;
  // Nobody may still sleep on a word: a notify now would find (and wake) them.
  const view = new BigInt64Array(machine.memory.buffer);
  let leftBlocked = 0;
  for (const word of words) leftBlocked += Atomics.notify(view, word / 8, Infinity);
  if (outcome === 'budget') {
    openGate();
    errors.push(`the run did not end within ${budgetMs} ms; workers stopped`);
    await Promise.all(running.map((w) => w.terminate()));
  } else {
    await Promise.all(running.map((w) => w.finish()));
  }
  const expected = (BigInt(last) << 32n) | BigInt(last);
  const finalValuesOk = handles.every((row) => row.every((h) => app.readFenceValue(h) === (producers > 0 ? expected : 0n)));

  const sum = (key: 'signals' | 'waits' | 'wakes' | 'immediate' | 'timeouts' | 'torn' | 'short' | 'doorbellPosted' | 'doorbellFull' | 'doorbellTaken' | 'doorbellBad') => results.reduce((n, r) => n + r[key], 0);
  for (const r of results) for (const e of r.errors.slice(0, 5)) errors.push(`${r.role} on gpu${r.adapter}: ${e}`);
  if (results.length !== running.length && outcome !== 'budget') errors.push(`${running.length - results.length} worker(s) ended without a report`);
  const doorbellStats = doorbell ? {
    posted: sum('doorbellPosted'), full: sum('doorbellFull'), taken: sum('doorbellTaken'), bad: sum('doorbellBad'),
    leftInRings: machine.adapters.reduce((n, _a, i) => n + machine.adapters[0].core.doorbellPending(doorbellBase, i), 0),
  } : undefined;
  const seconds = Math.max(wallMs, 1) / 1000;
  return {
    adapters, workers: running.length, wallMs,
    doorbell: doorbellStats,
    signals: sum('signals'), waits: sum('waits'), wakes: sum('wakes'), immediate: sum('immediate'), timeouts: sum('timeouts'),
    torn: sum('torn'), short: sum('short'), leftBlocked, finalValuesOk,
    signalsPerSecond: sum('signals') / seconds, wakesPerSecond: sum('wakes') / seconds, errors, machine,
  };
}

interface WorkerMessage { kind: string; stats?: WorkerRoleStats; message?: string }
interface SpawnedWorker {
  onMessage(listener: (m: WorkerMessage) => void): void;
  onFailure(listener: (message: string) => void): void;
  terminate(): Promise<unknown>;
  /** After its last message: let it end (Node: wait for its exit; browser: terminate it). */
  finish(): Promise<unknown>;
}

/** Node worker_threads, or browser Web Workers in a cross-origin isolated page. */
async function workerSpawner(): Promise<(job: Record<string, unknown>) => SpawnedWorker> {
  const g = globalThis as unknown as { process?: { versions?: { node?: string } }; Worker?: new (url: string) => BrowserWorker; crossOriginIsolated?: boolean; Blob?: typeof Blob; URL: typeof URL };
  if (g.process?.versions?.node) {
    const { Worker } = await import('node:worker_threads');
    return (job) => {
      const worker = new Worker(nodeAdapterWorkerSource, { eval: true, workerData: job });
      let stopping = false;
      const exited = new Promise<void>((resolve) => worker.on('exit', () => resolve()));
      return {
        onMessage: (listener) => worker.on('message', listener),
        onFailure: (listener) => { worker.on('error', (e) => listener(e.message)); worker.on('exit', (code) => { if (code !== 0 && !stopping) listener(`exited with code ${code}`); }); },
        terminate: () => { stopping = true; return worker.terminate(); },
        finish: () => exited,
      };
    };
  }
  if (typeof g.Worker !== 'function' || typeof g.Blob !== 'function') {
    throw new WddmError('NOT_SUPPORTED', 'worker mode needs Node worker_threads or browser Web Workers');
  }
  if (!g.crossOriginIsolated) {
    throw new WddmError('NOT_SUPPORTED', 'worker mode in a browser needs a cross-origin isolated page (Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp) to share the WebAssembly.Memory with Web Workers');
  }
  const url = g.URL.createObjectURL(new g.Blob([browserAdapterWorkerSource], { type: 'text/javascript' }));
  return (job) => {
    const worker = new g.Worker!(url);
    worker.postMessage(job);
    return {
      onMessage: (listener) => worker.addEventListener('message', (e) => listener((e as MessageEvent).data as WorkerMessage)),
      onFailure: (listener) => worker.addEventListener('error', (e) => listener(String((e as ErrorEvent).message))),
      terminate: async () => worker.terminate(),
      finish: async () => worker.terminate(),
    };
  };
}
interface BrowserWorker { postMessage(m: unknown): void; addEventListener(type: string, listener: (e: Event) => void): void; terminate(): void }

/**
 * Waits without blocking the calling thread until the 64-bit word at
 * `cvPhys` of `memory` is >= `value` (Atomics.waitAsync): what a browser main
 * thread, which may not block, does in worker mode. Resolves 'ok' or
 * 'timed-out'.
 */
export async function waitForFenceWordAsync(memory: WasmMemory, cvPhys: number, value: bigint, timeoutMs = Infinity): Promise<'ok' | 'timed-out'> {
  if (!Number.isInteger(cvPhys) || cvPhys < 0 || cvPhys % 8 || cvPhys + 8 > memory.buffer.byteLength) throw invalid('cvPhys', cvPhys, 'an 8-byte aligned address inside the memory');
  const target = v.u64(value, 'value');
  const words = new BigInt64Array(memory.buffer);
  const index = cvPhys / 8;
  const deadline = timeoutMs === Infinity ? Infinity : performance.now() + timeoutMs;
  const waitAsync = (Atomics as unknown as { waitAsync?: (a: BigInt64Array, i: number, v: bigint, t?: number) => { async: boolean; value: Promise<string> | string } }).waitAsync;
  if (!waitAsync) throw new WddmError('NOT_SUPPORTED', 'Atomics.waitAsync is not available in this runtime');
  for (;;) {
    const current = Atomics.load(words, index);
    if (BigInt.asUintN(64, current) >= target) return 'ok';
    const left = deadline - performance.now();
    if (left <= 0) return 'timed-out';
    const result = waitAsync(words, index, current, left === Infinity ? undefined : left);
    const outcome = result.async ? await result.value : result.value;
    if (outcome === 'timed-out') return BigInt.asUintN(64, Atomics.load(words, index)) >= target ? 'ok' : 'timed-out';
  }
}

export function workerStressText(r: WorkerStressReport): string {
  return `worker mode: ${r.adapters} adapters, ${r.workers} worker threads, ${r.wallMs.toFixed(0)} ms wall\n` +
    `  signals=${r.signals} waits=${r.waits} wakes=${r.wakes} immediate=${r.immediate} timeouts=${r.timeouts} torn=${r.torn} short=${r.short} leftBlocked=${r.leftBlocked} finalValuesOk=${r.finalValuesOk}\n` +
    `  signals/s=${r.signalsPerSecond.toFixed(0)} wakes/s=${r.wakesPerSecond.toFixed(0)}` +
    (r.doorbell ? `\n  doorbell: posted=${r.doorbell.posted} full=${r.doorbell.full} taken=${r.doorbell.taken} bad=${r.doorbell.bad} leftInRings=${r.doorbell.leftInRings}` : '') +
    `${r.errors.length ? `\n  errors: ${r.errors.join('; ')}` : ''}\n`;
}
