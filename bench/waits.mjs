// The waits of cpuWait.* and scaling.waiterAddRetire, shared by bench/run.mjs and bench/child.mjs:
// n waits added through the public API on one fence, then satisfied by one CPU signal, and the
// rounds over sizes that scaling.waiterAddRetire fits.

import { createMachineSync, Random } from '../dist/wddm-fence.js';

export const UINT64_MAX = (1n << 64n) - 1n;
/** Process CPU time in ms. */
export const now = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
export const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

/** Seeded random 64-bit values (never 0, so no wait is satisfied at creation). */
export function seededValues(count, seed) {
  const random = new Random(seed);
  const values = new BigUint64Array(count);
  for (let i = 0; i < count; i++) values[i] = (random.nextU64() | 1n);
  return values;
}

/** A machine whose one adapter holds `count` waits on one fence (and `extraSystemBytes` of system memory more). */
export function heapMachine(count, seed, extraSystemBytes = 0) {
  const heapEntryBytes = 16;
  // Power-of-two blocks while growing: the final block plus every smaller one, twice over for the buddy split.
  let block = 4; while (block < count) block *= 2;
  return createMachineSync({
    seed, trace: false,
    systemMemoryBytes: Math.max(4 << 20, Math.ceil((count * 8 + extraSystemBytes) / 65536) * 65536 + (2 << 20)),
    adapters: [{ limits: { fences: 64, waitBlocks: count + 16, waitersPerFence: Math.max(count, 4), heapArenaBytes: Math.min(1 << 30, block * heapEntryBytes * 4) } }],
  });
}

export function apiProcess(machine) {
  const app = machine.createProcess('bench');
  const hAdapter = app.openAdapter(0);
  const hDevice = app.createDevice({ hAdapter });
  return { app, hDevice };
}

/**
 * `values.length` waits added through the public API on one fence, then satisfied by one CPU signal, every callback
 * run: `form` 'callback' is RuntimeProcess.waitWithCallback (the form README recommends for many waits), 'promise'
 * is waitAsync with one `then` each. Returns CPU ms in all and CPU ms to add the waits.
 */
export async function cpuWaitRun(values, seed, form = 'callback') {
  const count = values.length;
  const machine = heapMachine(count, seed);
  const { app, hDevice } = apiProcess(machine);
  const { hSyncObject } = app.createNativeFence({ hDevice, initialValue: 0n });
  let woken = 0;
  const wake = (r) => { if (r.status === 'SUCCESS') woken++; };
  const objects = [hSyncObject];
  const t = now();
  if (form === 'callback') for (let i = 0; i < count; i++) app.waitWithCallback({ objects, values: [values[i]] }, wake);
  else for (let i = 0; i < count; i++) app.waitAsync({ objects, values: [values[i]] }).then(wake);
  const added = now();
  app.signal({ objects, values: [UINT64_MAX] });
  await new Promise((r) => setImmediate(r));
  const ms = now() - t;
  if (woken !== count) throw new Error(`bench: ${woken} of ${count} waits woke`);
  return { ms, addMs: added - t };
}

/** The sizes scaling.* runs: the full run's, or --quick's (whose largest is 10^5). */
export const scalingSizes = (quick) => (quick ? [1e3, 1e4, 3e4, 1e5] : [1e3, 1e4, 1e5, 1e6]);
/** Slopes are fitted from here: 10^3 mostly measures JIT warm-up. */
export const SCALING_FIT_FROM = 1e4;

/**
 * Rounds of scaling.waiterAddRetire: each round runs every size once, the sizes' order rotating from round to round,
 * and each size's figure is the median of its rounds. Run size by size (the runs before issue 14r: 5 repetitions at
 * 10^4, 3 at 10^5, one at 10^6), a size's runs shared one stretch of the machine's load, and the one run at 10^6 was
 * the figure: the fit moved with whatever ran beside it (10^4 once came out slower a wait than 10^5).
 *
 * A round's sample at a size of at most WAIT_SMALL_SIZE is the median of WAIT_SMALL_RUNS runs back to back. A run at
 * 10^4 takes ~4 ms, and one alone came out anywhere from 4.1 to 53 ms in the full runs after issue 14u (the collection
 * of the previous size's garbage, or a compile, lands in whichever small run comes next): the median of five such
 * runs was noise, and the fit of the medians (1.00 and 0.71) passed on it while the fastest rounds fit 1.125.
 *
 * Warm-up: `warmups` runs at SCALING_FIT_FROM, then one at the next size, before the first timed round (the first runs
 * at 10^4 otherwise time code V8 is still optimizing, which makes 10^4 dearer a wait and the slope flatter).
 * Round r uses the values of seed `seed + r` at each size.
 */
export const WAIT_SMALL_SIZE = 1e4;
export const WAIT_SMALL_RUNS = 8;

export async function waitScalingRounds({ sizes, rounds, seed, warmups }) {
  for (let k = 0; k < warmups; k++) await cpuWaitRun(seededValues(SCALING_FIT_FROM, seed - 1 - k), seed);
  const next = sizes.find((n) => n > SCALING_FIT_FROM);
  if (next !== undefined) await cpuWaitRun(seededValues(next, seed - 1 - warmups), seed);
  const roundMs = sizes.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < sizes.length; k++) {
      const i = (k + round) % sizes.length;
      const values = seededValues(sizes[i], seed + round);
      const runs = [];
      for (let r = 0; r < (sizes[i] <= WAIT_SMALL_SIZE ? WAIT_SMALL_RUNS : 1); r++) runs.push((await cpuWaitRun(values, seed)).ms);
      roundMs[i].push(median(runs));
    }
  }
  return sizes.map((n, i) => ({ n, totalMs: median(roundMs[i]), roundMs: roundMs[i] }));
}
