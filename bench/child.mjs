#!/usr/bin/env node
// One bench figure in a fresh process (bench/run.mjs starts it with --expose-gc):
// whole-process memory and peak RSS are only honest in a process that has done
// nothing else. Prints one JSON line on stdout.
//
//   node --expose-gc bench/child.mjs processBytesPerFence N SEED
//   node --expose-gc bench/child.mjs millionFences N SEED
//
// processBytesPerFence: N non-shareable fences through the public API in a machine
//   sized for them, their handles kept by the caller in a Uint32Array. Measured after a full GC before the machine exists and after
//   the fences do: the growth of resident memory (JS heap, the linear memory the
//   core touched, everything else) per fence, and the JS heap part of it. Then
//   each fence is signalled once from the CPU (a fence in use: the OS makes its
//   objects at the first lookup) and the same is measured again.
// millionFences: N fences, a CPU waiter on each (waitWithCallback for value 1: the
//   form README recommends for many waits), N GPU
//   signal commands (each fence to 1, recorded into a command list 4,096 at a time)
//   over 4 engines, one machine.run(): wall and CPU time of each phase and of the
//   whole, resident memory after each phase, and the process's peak RSS.
// waiterScaling N SEED ROUNDS WARMUPS: scaling.waiterAddRetire's rounds (bench/waits.mjs)
//   over the sizes whose largest is N (10^6, or 10^5 for --quick), after WARMUPS
//   runs at 10^4: each size's median and its rounds' CPU ms.

import { createMachineSync } from '../dist/wddm-fence.js';
import { now as cpuMs, scalingSizes, waitScalingRounds } from './waits.mjs';

const [figure, nArg, seedArg, roundsArg, warmupsArg] = process.argv.slice(2);
const N = Number(nArg);
const SEED = Number(seedArg ?? 1) >>> 0;
if (typeof globalThis.gc !== 'function') throw new Error('bench/child.mjs needs --expose-gc');
if (!Number.isSafeInteger(N) || N < 1) throw new Error(`bench/child.mjs: N is ${nArg}; expected a positive integer`);

const fullGc = () => { for (let i = 0; i < 3; i++) globalThis.gc(); };
const MiB = 2 ** 20;

function processBytesPerFence(n) {
  fullGc();
  const before = process.memoryUsage();
  const machine = createMachineSync({
    seed: SEED, trace: false,
    systemMemoryBytes: Math.ceil(n * 16 / MiB + 4) * MiB,
    adapters: [{ limits: { fences: n + 64, gpuVaPagesPerProcess: Math.ceil(n / 256) + 256 } }],
  });
  const app = machine.createProcess('bench');
  const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
  // The caller keeps its handles as u32 (a JavaScript array of 10⁶ numbers is 8 MB of the caller's own, not the library's).
  const handles = new Uint32Array(n);
  for (let i = 0; i < n; i++) handles[i] = app.createNativeFence({ hDevice, initialValue: 0n }).hSyncObject;
  fullGc();
  const after = process.memoryUsage();
  if (machine.summary().adapters[0].liveFences !== n || app.readFenceValue(handles[n - 1]) !== 0n) throw new Error('bench: fences missing');
  const signal = { objects: [0], values: [1n] };
  for (let i = 0; i < n; i++) { signal.objects[0] = handles[i]; app.signal(signal); }
  fullGc();
  const used = process.memoryUsage();
  if (app.readFenceValue(handles[0]) !== 1n || app.readFenceValue(handles[n - 1]) !== 1n) throw new Error('bench: a signal did not land');
  return {
    fences: n,
    bytesPerFence: (after.rss - before.rss) / n,
    jsHeapBytesPerFence: (after.heapUsed - before.heapUsed) / n,
    otherBytesPerFence: (after.rss - before.rss - (after.heapUsed - before.heapUsed)) / n,
    machineMemoryBytes: machine.memory.buffer.byteLength,
    rssBefore: before.rss, rssAfter: after.rss, heapUsedBefore: before.heapUsed, heapUsedAfter: after.heapUsed,
    bytesPerSignalledFence: (used.rss - before.rss) / n,
    jsHeapBytesPerSignalledFence: (used.heapUsed - before.heapUsed) / n,
    rssAfterSignals: used.rss, heapUsedAfterSignals: used.heapUsed,
  };
}

async function millionFences(n) {
  const engines = 4;
  const perQueue = Math.ceil(n / engines);
  const phases = {};
  const wallStart = performance.now(), cpuStart = cpuMs();
  let wall = wallStart, cpu = cpuStart;
  const phase = (name) => {
    const w = performance.now(), c = cpuMs();
    phases[name] = { wallMs: w - wall, cpuMs: c - cpu, rssMiB: process.memoryUsage.rss() / MiB };
    wall = w; cpu = c;
  };
  const ringBytes = 2 ** Math.ceil(Math.log2((perQueue + 16) * 32));
  const machine = createMachineSync({
    seed: SEED, trace: false,
    systemMemoryBytes: Math.ceil(n * 16 / MiB + 4) * MiB,
    adapters: [{
      engines,
      limits: {
        fences: n + 64, waitBlocks: n + 64, waitersPerFence: 4, queues: engines * 2, ringEntries: perQueue + 16,
        heapArenaBytes: Math.min(2 ** 30, engines * ringBytes + n * 64 + 16 * MiB), gpuVaPagesPerProcess: Math.ceil(n / 256) + 256,
      },
    }],
  });
  const app = machine.createProcess('bench');
  const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
  phase('machine');
  const handles = new Uint32Array(n); // as processBytesPerFence's
  for (let i = 0; i < n; i++) handles[i] = app.createNativeFence({ hDevice, initialValue: 0n }).hSyncObject;
  phase('createFences');
  let woken = 0;
  const wake = (r) => { if (r.status === 'SUCCESS') woken++; };
  for (let i = 0; i < n; i++) app.waitWithCallback({ objects: [handles[i]], values: [1n] }, wake);
  phase('addWaiters');
  // One command list, recorded and submitted 4,096 signals at a time: no object per command.
  const list = app.createCommandList();
  for (let e = 0; e < engines; e++) {
    const { hHwQueue } = app.createHwQueue({ hDevice, engine: e, nativeProgressFence: false });
    for (let i = e; i < n; i += engines) {
      list.signal(handles[i], 1);
      if (list.length === 4096) { app.submit({ hHwQueue, commands: list }); list.reset(); }
    }
    if (list.length) { app.submit({ hHwQueue, commands: list }); list.reset(); }
  }
  phase('submit');
  machine.run();
  await new Promise((resolve) => setImmediate(resolve));
  phase('run');
  const s = machine.summary();
  if (woken !== n) throw new Error(`bench: ${woken} of ${n} waiters woke`);
  if (s.adapters[0].gpuSignals !== n) throw new Error(`bench: ${s.adapters[0].gpuSignals} of ${n} GPU signals ran`);
  return {
    fences: n, waiters: n, gpuSignals: n, engines,
    totalWallMs: performance.now() - wallStart, totalCpuMs: cpuMs() - cpuStart,
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
    interrupts: s.adapters[0].interruptsRaised, virtualTimeNs: s.timeNs, phases,
  };
}

/** scaling.waiterAddRetire's rounds in this fresh process (the sizes of a full run when N is 10^6, else --quick's). */
async function waiterScaling(n) {
  const sizes = scalingSizes(n < 1e6);
  if (sizes.at(-1) !== n) throw new Error(`bench/child.mjs waiterScaling: N is ${n}; expected 1000000 or 100000 (the largest scaling size)`);
  const rounds = Number(roundsArg), warmups = Number(warmupsArg);
  if (!Number.isSafeInteger(rounds) || rounds < 1) throw new Error(`bench/child.mjs waiterScaling: ROUNDS is ${roundsArg}; expected a positive integer`);
  if (!Number.isSafeInteger(warmups) || warmups < 0) throw new Error(`bench/child.mjs waiterScaling: WARMUPS is ${warmupsArg}; expected a whole number`);
  return { points: await waitScalingRounds({ sizes, rounds, seed: SEED, warmups }) };
}

const result = figure === 'processBytesPerFence' ? processBytesPerFence(N)
  : figure === 'millionFences' ? await millionFences(N)
  : figure === 'waiterScaling' ? await waiterScaling(N)
  : (() => { throw new Error(`bench/child.mjs: unknown figure ${figure}; expected processBytesPerFence, millionFences or waiterScaling`); })();
process.stdout.write(JSON.stringify(result) + '\n');
