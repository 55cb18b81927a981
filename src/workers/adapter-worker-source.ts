// The code an adapter worker runs, as source text, so one bundle can start it
// anywhere: Node (`new Worker(source, { eval: true })`) or a browser (a Blob
// URL; the page must be cross-origin isolated to share the memory).
//
// A worker instantiates the SAME compiled core module over the machine's ONE
// shared WebAssembly.Memory, attaches to its adapter's private region
// (adapterAttach checks magic and version), and then works on that adapter's
// fence records only. CPU waits sleep on the fence's CurrentValue word
// (memory.atomic.wait64 inside fenceWordWait, at the address the fence record
// names); CPU signals move the word forward with a compare-and-swap and wake
// its sleepers (fenceCpuSignal).
//
// Roles (from the job the host posts):
//   producer: for each of its fences, signals encode(k) for a seeded rising
//             sequence of k up to `last`, with seeded pauses
//   consumer: a seeded series of waits (fence, encode(k)); after each wake it
//             reads the word and checks it is whole (high half == low half)
//             and reached
// encode(k) = k * 2^32 + k: a torn read (one half old, one half new) shows as
// high != low.

const body = String.raw`
function adapterWorkerMain(job, post) {
  const memory = job.memory;
  const instance = new WebAssembly.Instance(job.module, { env: { memory, abort() { throw new Error('core assertion failed in adapter worker'); } } });
  const core = instance.exports;
  const attached = core.adapterAttach(job.privateBase);
  if (attached !== 0) { post({ kind: 'error', message: 'adapterAttach(' + job.privateBase + ') returned ' + attached }); return; }
  let state = job.seed >>> 0 || 1;
  const random = () => { state ^= state << 13; state >>>= 0; state ^= state >>> 17; state ^= state << 5; state >>>= 0; return state / 4294967296; };
  const encode = (k) => (BigInt(k) << 32n) | BigInt(k);
  const pauseWord = new Int32Array(new SharedArrayBuffer(4));
  const pause = () => { const r = random(); if (r < 0.1) Atomics.wait(pauseWord, 0, 0, 0.02); else if (r < 0.3) { let x = 0; for (let i = 0; i < 200; i++) x += i; return x; } return 0; };
  const stats = { role: job.role, adapter: job.adapterIndex, signals: 0, waits: 0, wakes: 0, immediate: 0, timeouts: 0, torn: 0, short: 0,
    doorbellPosted: 0, doorbellFull: 0, doorbellTaken: 0, doorbellBad: 0, errors: [] };
  const read = (fence) => BigInt.asUintN(64, core.cpuReadCurrentValue(fence));
  const whole = (v) => (v >> 32n) === (v & 0xffffffffn);
  const words = new BigInt64Array(memory.buffer);
  const jsWait = (addr, target) => {
    let slept = 0;
    for (;;) {
      const current = Atomics.load(words, addr / 8);
      if (BigInt.asUintN(64, current) >= target) return slept;
      slept = 1;
      if (Atomics.wait(words, addr / 8, current, job.waitTimeoutMs) === 'timed-out') return BigInt.asUintN(64, Atomics.load(words, addr / 8)) >= target ? 1 : 2;
    }
  };
  // Start together: report ready, then sleep until the host opens the gate.
  const gate = new Int32Array(job.gate);
  post({ kind: 'ready' });
  while (Atomics.load(gate, 0) === 0) Atomics.wait(gate, 0, 0, 1000);
  if (job.role === 'producer') {
    const next = job.fences.map(() => 0);
    let live = job.fences.length;
    while (live > 0) {
      const i = Math.floor(random() * job.fences.length);
      if (next[i] >= job.last) continue;
      next[i] = Math.min(job.last, next[i] + 1 + Math.floor(random() * 3));
      const r = core.fenceCpuSignal(job.fences[i], encode(next[i]));
      if (r !== 0) stats.errors.push('fenceCpuSignal returned ' + r);
      stats.signals++;
      if (job.doorbell) {
        // XA-07 in real time: ring every other adapter's doorbell with (word, value); a full ring is the interrupt fallback.
        for (let target = 0; target < job.adapterCount; target++) {
          if (target === job.adapterIndex) continue;
          if (core.doorbellPost(job.doorbell, target, job.adapterIndex, job.words[i], encode(next[i])) === 0) stats.doorbellPosted++;
          else stats.doorbellFull++;
        }
      }
      if (next[i] >= job.last) live--;
      const seen = read(job.fences[i]);
      if (!whole(seen)) stats.torn++;
      pause();
    }
  } else if (job.role === 'scheduler') {
    // This adapter's scheduler: sleep on the ring, take records, check each names a known word with a whole value.
    const known = new Set(job.words);
    // TakenDoorbellRecord offsets as the core exports them (docs/ABI.md).
    const bytes = core.TAKEN_DOORBELL_RECORD_BYTES.value, wordAt = core.TAKEN_DOORBELL_WORD_OFFSET.value, valueAt = core.TAKEN_DOORBELL_VALUE_OFFSET.value;
    const out = () => new DataView(memory.buffer, core.outBufferAddress(), 64 * bytes);
    for (;;) {
      const n = core.doorbellTake(64);
      if (n > 0) {
        const view = out();
        for (let r = 0; r < n; r++) {
          const word = view.getUint32(bytes * r + wordAt, true);
          const value = view.getBigUint64(bytes * r + valueAt, true);
          if (!known.has(word) || !whole(value)) stats.doorbellBad++;
        }
        stats.doorbellTaken += n;
        continue;
      }
      if (Atomics.load(gate, 1) !== 0 && core.doorbellPending(job.doorbell, job.adapterIndex) === 0) break;
      core.doorbellWait(job.doorbell, job.adapterIndex, 1000000n);
    }
  } else {
    const timeoutNs = BigInt(job.waitTimeoutMs) * 1000000n;
    for (let n = 0; n < job.waits; n++) {
      const i = Math.floor(random() * job.fences.length);
      const fence = job.fences[i];
      const now = read(fence);
      if (!whole(now)) stats.torn++;
      const k = Math.min(job.last, Number(now & 0xffffffffn) + 1 + Math.floor(random() * 4));
      const target = encode(k);
      const addr = core.fenceCurrentValueAddress(fence);
      const r = job.waitWith === 'js' ? jsWait(addr, target) : core.fenceWordWait(addr, target, timeoutNs);
      stats.waits++;
      if (r === 2) { stats.timeouts++; stats.errors.push('wait for ' + k + ' on fence ' + fence + ' timed out; the word is now ' + read(fence)); continue; }
      if (r === 1) stats.wakes++; else if (r === 0) stats.immediate++; else stats.errors.push('fenceWordWait returned ' + r);
      const seen = read(fence);
      if (!whole(seen)) stats.torn++;
      if (seen < target) stats.short++;
    }
  }
  post({ kind: 'done', stats });
}
`;

/** Worker source for Node's `new Worker(source, { eval: true, workerData })`. */
export const nodeAdapterWorkerSource = `${body}
const { parentPort, workerData } = require('node:worker_threads');
try { adapterWorkerMain(workerData, (m) => parentPort.postMessage(m)); }
catch (error) { parentPort.postMessage({ kind: 'error', message: String(error && error.stack || error) }); }
`;

/** Worker source for a browser Web Worker (post the job as the first message). */
export const browserAdapterWorkerSource = `${body}
self.onmessage = (event) => {
  try { adapterWorkerMain(event.data, (m) => self.postMessage(m)); }
  catch (error) { self.postMessage({ kind: 'error', message: String(error && error.stack || error) }); }
};
`;
