// A large fence's waiters (past 64: assembly/heap.ts "large fences"): a heap, a sorted run and an
// unsorted buffer in one entries block. Each test drives the core's exports against a plain model
// (the live waiters, ordered by value, then arrival) and checks after every step that heapCheck
// holds, that MonitoredValue's target is the model's smallest value − 1 (NF-02), and that pops come
// in the model's order (NF-03).
import { describe, it, expect } from 'vitest';
import { createMachine, Random, type CoreExports, type Machine } from '../src/index.js';
import { coreWaiters, type CoreWaiters } from './core-waiters.js';
import { takeSnapshot, restoreSnapshot } from '../src/explore/snapshot.js';

const UINT64_MAX = 0xffff_ffff_ffff_ffffn;
const E_HEAP_FULL = -8;

interface Waiter { block: number; value: bigint; waiter: number; order: number }

interface Rig {
  machine: Machine; core: CoreExports; waiters: CoreWaiters; fence: number; arrivalAddress: number;
  live: Map<number, Waiter>;
  add(value: bigint): number;
  remove(block: number): void;
  /** One fenceSatisfy call (the model says what it must return), then the checks. */
  satisfyOnce(current: bigint, limit: number): number[];
  /** fenceSatisfy until it returns less than `limit`. */
  satisfyAll(current: bigint, limit?: number): number[];
  check(): void;
  sorted(current?: bigint): Waiter[];
}

async function rig(waitersPerFence = 1 << 14, waitBlocks = waitersPerFence + 64): Promise<Rig> {
  const machine = await createMachine({ seed: 11, trace: false, adapters: [{ limits: { waitBlocks, waitersPerFence } }] });
  const core = machine.adapter(0).core;
  const L = machine.layout;
  const fence = core.fenceCreate(0, L.fenceKindNative, L.memorySystem, 0, 0, 0n, 0);
  expect(fence).toBeGreaterThan(0);
  const arrivalAddress = machine.adapters[0].privateBase + (core.ADAPTER_ARRIVAL_SEQUENCE_OFFSET as WebAssembly.Global).value;
  const waiters = coreWaiters(machine, core);
  const live = new Map<number, Waiter>();
  let order = 0;
  const sorted = (current = UINT64_MAX) => [...live.values()].filter((w) => w.value <= current)
    .sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : a.order - b.order));
  const check = () => {
    expect(core.heapCheck(fence)).toBe(0);
    expect(core.fenceWaiterCount(fence)).toBe(live.size);
    const smallest = sorted()[0];
    expect(BigInt.asUintN(64, core.fenceMonitoredTarget(fence))).toBe(smallest ? smallest.value - 1n : UINT64_MAX);
    expect(BigInt.asUintN(64, core.fenceMinWaited(fence))).toBe(smallest ? smallest.value : UINT64_MAX);
  };
  const r: Rig = {
    machine, core, waiters, fence, arrivalAddress, live, check, sorted,
    add(value) {
      const waiter = 1 + order;
      const block = waiters.add(fence, value, waiter);
      if (block > 0) live.set(block, { block, value, waiter, order: order++ });
      return block;
    },
    remove(block) {
      expect(waiters.remove(block)).toBe(1);
      live.delete(block);
    },
    satisfyOnce(current, limit) {
      const expected = sorted(current).slice(0, limit);
      const woken = waiters.satisfy(fence, current, limit);
      expect(woken).toEqual(expected.map((w) => w.waiter));
      for (const w of expected) live.delete(w.block);
      check();
      return woken;
    },
    satisfyAll(current, limit = 64) {
      const woken: number[] = [];
      for (;;) {
        const popped = r.satisfyOnce(current, limit);
        woken.push(...popped);
        if (popped.length < limit) return woken;
      }
    },
  };
  return r;
}

describe('a large fence\'s waiters: heap, sorted run and buffer', () => {
  it('NF-03 a large buffer of random values with long runs of ties is sorted and drained in (value, arrival) order, MonitoredValue exact after every add and every batch', async () => {
    const r = await rig();
    const random = new Random(5);
    for (let i = 0; i < 6000; i++) {
      // Half spread over 64 bits (every key byte differs), half on eight values (ties decided by arrival alone).
      const value = i % 2 ? (random.nextU64() | 1n) : BigInt(1000 + random.below(8)) << 40n;
      expect(r.add(value)).toBeGreaterThan(0);
      if (i % 500 === 0) r.check();
    }
    r.check();
    r.satisfyAll(1003n << 40n);                      // part of the buffer: the whole buffer is sorted, the tied prefix drained
    r.satisfyAll(1n << 63n, 37);                     // then across the ties and the spread values, batches cut mid-run
    for (let i = 0; i < 300; i++) r.add(BigInt(1 + random.below(3)) << 62n);  // new buffer behind a live run
    r.satisfyAll(UINT64_MAX, 50);
    expect(r.live.size).toBe(0);
  });

  it('NF-03 retiring from the run (its head, its middle) and from the buffer (its minimum, another) keeps the order; a lost buffer minimum flushes the buffer', async () => {
    const r = await rig();
    const random = new Random(9);
    for (let i = 0; i < 1000; i++) r.add(BigInt(100 + random.below(400)));
    r.satisfyOnce(150n, 8);                          // flushes the buffer into a run, pops 8 of it
    let order = r.sorted();
    r.remove(order[0].block); r.check();            // the run's head (or the heap's top)
    for (const w of r.sorted().slice(100, 140)) { r.remove(w.block); r.check(); } // the run's middle: tombstones
    order = r.sorted();
    r.remove(order[0].block); r.check();            // the head again, now past tombstones behind it
    // A buffer behind the run: its minimum is retired (the buffer is flushed), then others.
    const added = [90n, 95n, 95n, 120n, 600n, 700n, 95n, 91n].map((v) => ({ value: v, block: r.add(v) }));
    for (const a of added) expect(a.block).toBeGreaterThan(0);
    r.check();
    r.remove(added[0].block); r.check();           // 90: the buffer's minimum
    r.remove(added[5].block); r.check();           // 700: not its minimum
    for (let i = 0; i < 200; i++) r.add(BigInt(80 + random.below(600)));
    r.check();
    const inBuffer = [...r.live.values()].sort((a, b) => b.order - a.order).slice(0, 200); // the newest 200: the buffer
    const bufferMin = inBuffer.reduce((m, w) => (w.value < m.value || (w.value === m.value && w.order < m.order) ? w : m));
    r.remove(bufferMin.block); r.check();           // a large buffer's minimum: sorted into the run
    for (let k = 0; k < 150; k++) { const all = [...r.live.keys()]; r.remove(all[random.below(all.length)]); if (k % 10 === 0) r.check(); }
    r.check();
    r.satisfyAll(UINT64_MAX, 16);
    // A buffer larger than the run (here the only part): retiring its minimum sorts it into a run, and the
    // fence id waiterRetire lists in the out buffer survives the sort (its counts use the buffer's far end).
    for (let i = 0; i < 600; i++) r.add(BigInt(1 + random.below(300)));
    const minimum = r.sorted()[0];
    r.remove(minimum.block);
    expect(new Uint32Array(r.machine.memory.buffer, r.core.outBufferAddress(), 1)[0]).toBe(r.fence);
    r.check();
    r.satisfyAll(150n, 64);
    r.satisfyAll(UINT64_MAX, 64);
  });

  it('NF-03 a satisfy cut by its limit mid-run, then waits below the run\'s head and tied with it: each pops in its place', async () => {
    const r = await rig();
    const random = new Random(13);
    for (let i = 0; i < 400; i++) r.add(BigInt(1000 + random.below(1000)));
    r.satisfyOnce(1500n, 10);                       // the run is sorted, its first 10 popped
    const head = r.sorted()[0].value;
    for (const v of [head - 1n, head, head, head - 400n, head + 1n]) r.add(v); // a small buffer: into the heap at the next satisfy
    r.check();
    r.satisfyOnce(head, 3);
    for (let i = 0; i < 100; i++) r.add(head - 50n + BigInt(random.below(100))); // a buffer of 100 < the run's live: into the heap
    r.check();
    r.satisfyAll(head + 200n, 7);
    for (let i = 0; i < 500; i++) r.add(head + 100n + BigInt(random.below(600))); // a buffer larger than the run: sorted with its rest
    r.satisfyAll(UINT64_MAX, 64);
  });

  it('NF-03 random adds, retires and cut satisfies on one large fence keep every invariant (heap, run, tombstones, buffer, compaction)', async () => {
    const r = await rig(512, 2048);
    const random = new Random(21);
    let current = 0n;
    for (let step = 0; step < 3000; step++) {
      const op = random.below(10);
      if (op < 6 && r.live.size < 512) {
        const value = current + 1n + BigInt(random.below(op < 3 ? 40 : 4000));
        expect(r.add(value)).toBeGreaterThan(0);
      } else if (op < 8 && r.live.size > 0) {
        const all = [...r.live.keys()];
        r.remove(all[random.below(all.length)]);
      } else {
        current += BigInt(random.below(60));
        r.satisfyOnce(current, 1 + random.below(80));
      }
      if (step % 7 === 0) r.check();
    }
    r.check();
    r.satisfyAll(UINT64_MAX);
  });

  it('NF-03 when the arrival sequence runs out, a large fence\'s heap, run (with tombstones) and buffer are renumbered together: ties stay exact', async () => {
    const r = await rig();
    const view = new DataView(r.machine.memory.buffer);
    view.setUint32(r.arrivalAddress, 0xffff_ffff - 1200, true);
    const random = new Random(17);
    for (let i = 0; i < 700; i++) r.add(BigInt(10 + random.below(6)));  // 64 in the heap, the rest buffered
    r.satisfyOnce(10n, 5);                                                  // the buffer becomes a run
    for (let i = 0; i < 30; i++) r.add(BigInt(9 + random.below(3)));      // a small buffer…
    r.satisfyOnce(10n, 4);                                                  // …into the heap
    for (const w of r.sorted().slice(50, 70)) r.remove(w.block);           // tombstones in the run
    for (let i = 0; i < 150; i++) r.add(BigInt(10 + random.below(6)));     // a buffer again
    r.check();
    expect(view.getUint32(r.arrivalAddress, true)).toBeLessThan(0xffff_ffff);
    let renumberedAt = -1;
    for (let i = 0; i < 400; i++) {
      if (view.getUint32(r.arrivalAddress, true) === 0xffff_ffff) renumberedAt = r.live.size;
      r.add(BigInt(10 + random.below(6)));
    }
    expect(renumberedAt).toBeGreaterThan(0);
    expect(view.getUint32(r.arrivalAddress, true)).toBe(r.live.size); // restarted after the fence's waiters, ranked 0 … n − 1
    r.check();
    r.satisfyAll(12n, 9);
    for (let i = 0; i < 100; i++) r.add(BigInt(12 + random.below(4)));  // new arrivals tie with renumbered ones
    r.satisfyAll(UINT64_MAX, 33);
  });

  it('NF-08 a wait on two fences retired while its block is a large buffer\'s minimum: both fence ids come back for the refresh, the buffer sorted', async () => {
    const r = await rig();
    const L = r.machine.layout;
    const other = r.core.fenceCreate(0, L.fenceKindNative, L.memorySystem, 0, 0, 0n, 0);
    const random = new Random(41);
    for (let i = 0; i < 700; i++) r.add(BigInt(100 + random.below(300)));
    const record = r.core.waiterCreate(9999, L.waiterModeAll);
    expect(r.core.waitBlockAdd(r.fence, 50n, record, 0)).toBeGreaterThan(0); // the buffer's minimum
    expect(r.core.waitBlockAdd(other, 7n, record, 1)).toBeGreaterThan(0);   // listed first: the chain is newest first
    expect(BigInt.asUintN(64, r.core.fenceMonitoredTarget(r.fence))).toBe(49n);
    expect(r.core.waiterRetire(record)).toBe(2);
    expect([...new Uint32Array(r.machine.memory.buffer, r.core.outBufferAddress(), 2)]).toEqual([other, r.fence]);
    r.check();                                        // MonitoredValue back to the model's smallest − 1
    expect(r.core.fenceWaiterCount(other)).toBe(0);
    r.satisfyAll(UINT64_MAX, 64);
  });

  it('NF-08 fenceWaiters lists a large fence\'s waiters in heap, run and buffer, each once, page by page (what releasing its waiters reads)', async () => {
    const r = await rig();
    const random = new Random(29);
    for (let i = 0; i < 500; i++) r.add(BigInt(100 + random.below(900)));
    r.satisfyOnce(300n, 30);                         // a run with a popped start
    for (const w of r.sorted().slice(40, 60)) r.remove(w.block); // tombstones
    for (let i = 0; i < 90; i++) r.add(BigInt(100 + random.below(900))); // a buffer
    r.check();
    const listed: number[] = [];
    for (let start = 0; ; start += 64) {
      const n = r.core.fenceWaiters(r.fence, start, 64);
      expect(n).toBeGreaterThanOrEqual(0);
      listed.push(...new Uint32Array(r.machine.memory.buffer.slice(r.core.outBufferAddress(), r.core.outBufferAddress() + n * 4)));
      if (n < 64) break;
    }
    expect(listed.length).toBe(r.live.size);
    expect([...listed].sort((a, b) => a - b)).toEqual([...r.live.values()].map((w) => w.waiter).sort((a, b) => a - b));
  });

  it('NF-03 at the limit (waitersPerFence 128) adding fails with E_HEAP_FULL and changes nothing; space the run popped is compacted for new waits; satisfying never fails', async () => {
    const r = await rig(128, 512);
    const random = new Random(3);
    for (let i = 0; i < 128; i++) expect(r.add(BigInt(50 + random.below(100)))).toBeGreaterThan(0);
    r.check();
    const pushes = r.core.fenceWaiterCount(r.fence);
    expect(r.add(1n)).toBe(E_HEAP_FULL);             // below every waiter: would have changed MonitoredValue
    expect(r.core.fenceWaiterCount(r.fence)).toBe(pushes);
    r.check();
    r.satisfyOnce(80n, 20);                          // the buffer sorted into the run, 20 popped: dead space at its start
    r.remove(r.sorted()[10].block);                  // and a tombstone
    r.check();
    for (let i = 0; i < 21; i++) expect(r.add(BigInt(40 + random.below(100)))).toBeGreaterThan(0); // the dead space, compacted
    expect(r.live.size).toBe(128);
    expect(r.add(1n)).toBe(E_HEAP_FULL);
    r.check();
    r.satisfyAll(UINT64_MAX, 16);
    for (let i = 0; i < 128; i++) expect(r.add(BigInt(1 + random.below(9)))).toBeGreaterThan(0);
    r.satisfyAll(UINT64_MAX, 128);
    // Compaction under a buffer: 64 in the heap, a run of 64 with 20 popped, then the block full again with a
    // buffer whose minimum is its first entry; one tombstone, and the next add compacts with the buffer moving.
    for (let i = 0; i < 64; i++) r.add(BigInt(1000 + i));
    for (let i = 0; i < 64; i++) r.add(BigInt(1 + i));
    r.satisfyOnce(20n, 20);
    for (let i = 0; i < 20; i++) expect(r.add(BigInt(300 + i))).toBeGreaterThan(0); // the first compacts (an empty buffer)
    r.remove(r.sorted()[5].block);                  // a tombstone in the run
    expect(r.add(400n)).toBeGreaterThan(0);         // compacts: the buffer moves down by one
    r.check();
    r.satisfyAll(UINT64_MAX, 16);
  });
});

describe('the arena a large fence takes', () => {
  it('NF-03 a large fence destroyed gives back its entries block and the block of its parts\' descriptor: eight fences in turn grow to 256 waiters in a 12 KiB arena', async () => {
    const machine = await createMachine({ seed: 1, trace: false, adapters: [{ limits: { heapArenaBytes: 12288, ringEntries: 2, waitersPerFence: 256, waitBlocks: 600 } }] });
    const core = machine.adapter(0).core;
    const L = machine.layout;
    const waiters = coreWaiters(machine, core);
    // One fence grown to 256 takes blocks of 1 … 256 entries (8,176 bytes); a second one's fresh blocks would not fit.
    for (let round = 0; round < 8; round++) {
      const fence = core.fenceCreate(0, L.fenceKindNative, L.memorySystem, 0, 0, 0n, 0);
      expect(fence).toBeGreaterThan(0);
      for (let i = 0; i < 256; i++) expect(waiters.add(fence, BigInt(1000 - i), i + 1)).toBeGreaterThan(0);
      expect(waiters.add(fence, 1n, 999)).toBe(E_HEAP_FULL);
      expect(core.heapCheck(fence)).toBe(0);
      const woken: number[] = [];
      for (;;) { const popped = waiters.satisfy(fence, UINT64_MAX, 64); woken.push(...popped); if (popped.length < 64) break; }
      expect(woken).toEqual(Array.from({ length: 256 }, (_, i) => 256 - i));
      expect(core.fenceDestroy(fence)).toBe(0);
    }
  });
});

describe('a large fence and a snapshot', () => {
  it('NF-03 a snapshot taken with a large fence\'s heap, run and buffer all holding waiters restores them: the same signals wake the same waiters in the same order', async () => {
    const machine = await createMachine({ seed: 1, trace: false });
    const app = machine.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const fence = app.createNativeFence({ hDevice }).hSyncObject;
    const random = new Random(57);
    const woken: number[] = [];
    const wait = (i: number, value: bigint) => app.waitWithCallback({ objects: [fence], values: [value] }, () => { woken.push(i); });
    for (let i = 0; i < 600; i++) wait(i, BigInt(10 + random.below(500)));
    app.signal({ objects: [fence], values: [30n] });        // the buffer sorted into a run, its start woken
    await new Promise((resolve) => setImmediate(resolve));  // (their callbacks run)
    expect(woken.length).toBeGreaterThan(0);
    for (let i = 600; i < 800; i++) wait(i, BigInt(31 + random.below(500))); // a new buffer
    const snapshot = takeSnapshot(machine);
    const wakeRest = async () => {
      woken.length = 0;
      for (const value of [200n, 201n, 350n, 10_000n]) app.signal({ objects: [fence], values: [value] });
      await new Promise((resolve) => setImmediate(resolve));
      return [...woken];
    };
    const first = await wakeRest();
    expect(first.length).toBeGreaterThan(700);
    restoreSnapshot(machine, snapshot);
    expect(app.readFenceValue(fence)).toBe(30n);
    expect(await wakeRest()).toEqual(first);
  });
});
