// The core's CPU-waiter heap (assembly/heap.ts) at its edges: long runs of equal
// values, retirement of any wait block (root, last, middle, already free), the
// arrival sequence running out (2^32 waits on one adapter), and a fence that
// stays waited on across all of it. A plain model (an array sorted by value, then
// arrival) says what each pop must return.
import { describe, it, expect } from 'vitest';
import { createMachine, Random, type CoreExports, type Machine } from '../src/index.js';
import { coreWaiters, type CoreWaiters } from './core-waiters.js';

const UINT64_MAX = 0xffff_ffff_ffff_ffffn;
const E_BAD_WAITER = -21;

interface Waiter { block: number; value: bigint; waiter: number; order: number }

async function heapRig(waitBlocks = 8192): Promise<{ machine: Machine; core: CoreExports; waiters: CoreWaiters; fence: () => number; arrivalAddress: number }> {
  const machine = await createMachine({ seed: 7, trace: false, adapters: [{ limits: { waitBlocks, waitersPerFence: waitBlocks } }] });
  const core = machine.adapter(0).core;
  const L = machine.layout;
  const fence = () => { const id = core.fenceCreate(0, L.fenceKindNative, L.memorySystem, 0, 0, 0n, 0); expect(id).toBeGreaterThan(0); return id; };
  const arrivalAddress = machine.adapters[0].privateBase + (core.ADAPTER_ARRIVAL_SEQUENCE_OFFSET as WebAssembly.Global).value;
  return { machine, core, waiters: coreWaiters(machine, core), fence, arrivalAddress };
}

/** Pops everything <= current through fenceSatisfy (8 at a time) and returns the waiter ids in pop order (each retired). */
function satisfy(waiters: CoreWaiters, fence: number, current: bigint): number[] {
  const woken: number[] = [];
  for (;;) {
    const popped = waiters.satisfy(fence, current, 8);
    woken.push(...popped);
    if (popped.length < 8) return woken;
  }
}

/** The model: smallest value first, equal values in the order they were added. */
const expectedOrder = (live: Iterable<Waiter>, current: bigint) => [...live].filter((w) => w.value <= current)
  .sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : a.order - b.order)).map((w) => w.waiter);

describe('the core waiter heap', () => {
  it('NF-03 long runs of equal values pop in exact arrival order, through partial bottom groups and retirements of root, last and middle entries', async () => {
    const { core, waiters, fence } = await heapRig();
    const f = fence();
    const random = new Random(31);
    const live = new Map<number, Waiter>();
    let order = 0;
    for (let i = 0; i < 3001; i++) { // three values, ~1000 waiters each; 3001 leaves the last 4-group partial
      const value = BigInt(1 + random.below(3));
      const block = waiters.add(f, value, 10_000 + i);
      expect(block).toBeGreaterThan(0);
      live.set(block, { block, value, waiter: 10_000 + i, order: order++ });
    }
    expect(core.heapCheck(f)).toBe(0);
    // Retire the root's waiter, the last added, and 500 chosen at random.
    const byOrder = [...live.values()].sort((a, b) => a.order - b.order);
    const root = expectedOrder(live.values(), UINT64_MAX)[0];
    const rootBlock = [...live.values()].find((w) => w.waiter === root)!.block;
    for (const block of [rootBlock, byOrder[byOrder.length - 1].block]) {
      expect(waiters.remove(block)).toBe(1);
      live.delete(block);
    }
    for (let k = 0; k < 500; k++) {
      const blocks = [...live.keys()];
      const block = blocks[random.below(blocks.length)];
      expect(waiters.remove(block)).toBe(1);
      live.delete(block);
      if (k % 50 === 0) expect(core.heapCheck(f)).toBe(0);
    }
    expect(core.fenceWaiterCount(f)).toBe(live.size);
    expect(BigInt.asUintN(64, core.fenceMinWaited(f))).toBe(1n);
    // Two values are satisfied, then the third: every pop in (value, arrival) order.
    expect(satisfy(waiters, f, 2n)).toEqual(expectedOrder(live.values(), 2n));
    for (const [block, w] of live) if (w.value <= 2n) live.delete(block);
    expect(core.heapCheck(f)).toBe(0);
    expect(BigInt.asUintN(64, core.fenceMinWaited(f))).toBe(3n);
    expect(satisfy(waiters, f, 3n)).toEqual(expectedOrder(live.values(), 3n));
    expect(core.fenceWaiterCount(f)).toBe(0);
    expect(BigInt.asUintN(64, core.fenceMonitoredTarget(f))).toBe(UINT64_MAX);
  });

  it('NF-03 retiring a waiter twice, one never made, 0 or no record at all is E_BAD_WAITER and changes nothing; a freed block comes back as a new waiter', async () => {
    const { machine, core, waiters, fence } = await heapRig(64);
    const f = fence();
    const a = waiters.add(f, 5n, 1), b = waiters.add(f, 5n, 2), c = waiters.add(f, 4n, 3);
    const recordB = waiters.recordOf(b);
    expect(waiters.remove(b)).toBe(1); // its block left the heap of f: f's MonitoredValue needs the refresh
    const neverMade = recordB + 8 * 16; // a record of the table no waiterCreate handed out
    for (const bad of [recordB, 0, neverMade, 0xffff_fff8, 40]) expect(core.waiterRetire(bad)).toBe(E_BAD_WAITER);
    expect(core.fenceWaiterCount(f)).toBe(2);
    expect(core.heapCheck(f)).toBe(0);
    const again = waiters.add(f, 5n, 4); // the free list hands b's block out again, as a later arrival
    expect(again).toBe(b);
    const records = [a, c].map((block) => waiters.recordOf(block));
    expect(satisfy(waiters, f, 5n)).toEqual([3, 1, 4]);
    expect(records.map((record) => core.waiterRetire(record))).toEqual([E_BAD_WAITER, E_BAD_WAITER]); // retired when satisfied
    // All 64 wait blocks can be live at once, and the 65th add fails with nothing changed.
    const g = fence();
    for (let i = 0; i < 63; i++) expect(waiters.add(g, BigInt(100 - i), i)).toBeGreaterThan(0);
    // The 64th waiter names two fences: its first block is the last free one, its second fails, and
    // a 65th waiter finds no record (a waiter takes one record, so records run out with the blocks).
    const two = core.waiterCreate(63, machine.layout.waiterModeAll);
    expect(two).toBeGreaterThan(0);
    expect(core.waitBlockAdd(g, 37n, two, 0)).toBeGreaterThan(0);
    expect(core.waitBlockAdd(f, 1n, two, 1)).toBe(-9); // E_NO_WAIT_BLOCKS
    expect(core.waiterCreate(99, machine.layout.waiterModeAll)).toBe(-20); // E_NO_WAITERS
    expect(core.fenceWaiterCount(f)).toBe(0);
    expect(core.fenceWaiterCount(g)).toBe(64);
    expect(BigInt.asUintN(64, core.fenceMinWaited(g))).toBe(37n);
    expect(core.heapCheck(g)).toBe(0);
  });

  it('NF-03 when the adapter\'s 32-bit arrival sequence runs out, every heap is renumbered in arrival order: ties stay exact across the wrap', async () => {
    const { machine, core, waiters, fence, arrivalAddress } = await heapRig();
    const view = new DataView(machine.memory.buffer);
    const fences = [fence(), fence(), fence()];
    const live = fences.map(() => new Map<number, Waiter>());
    const random = new Random(77);
    let order = 0;
    let renumberedTo = -1, addsSince = 0; // what the sequence must be: the largest heap at the wrap, plus every add since
    const add = (k: number, value: bigint) => {
      if (view.getUint32(arrivalAddress, true) === 0xffff_ffff) renumberedTo = Math.max(...live.map((m) => m.size));
      else if (renumberedTo >= 0) addsSince++;
      const waiter = order + 1;
      const block = waiters.add(fences[k], value, waiter);
      expect(block).toBeGreaterThan(0);
      live[k].set(block, { block, value, waiter, order: order++ });
    };
    // Waiters from before the wrap, on all three fences, mostly on equal values.
    view.setUint32(arrivalAddress, 0xffff_ffff - 700, true);
    for (let i = 0; i < 600; i++) add(random.below(3), BigInt(1 + random.below(4)));
    for (let i = 0; i < 60; i++) { // some retired before the wrap
      const k = random.below(3); const blocks = [...live[k].keys()];
      if (blocks.length) { const block = blocks[random.below(blocks.length)]; expect(waiters.remove(block)).toBe(1); live[k].delete(block); }
    }
    for (let i = 0; i < 300; i++) add(random.below(3), BigInt(1 + random.below(4))); // crosses 2^32 - 1: renumbered once
    expect(renumberedTo).toBeGreaterThan(0);
    expect(view.getUint32(arrivalAddress, true)).toBe(renumberedTo + addsSince + 1); // restarted after the largest heap, not wrapped
    fences.forEach((f) => expect(core.heapCheck(f)).toBe(0));
    for (let k = 0; k < 3; k++) {
      expect(satisfy(waiters, fences[k], 2n)).toEqual(expectedOrder(live[k].values(), 2n));
      for (const [block, w] of live[k]) if (w.value <= 2n) live[k].delete(block);
    }
    for (let i = 0; i < 200; i++) add(random.below(3), BigInt(2 + random.below(3))); // later arrivals tie with older ones
    for (let k = 0; k < 3; k++) {
      expect(core.heapCheck(fences[k])).toBe(0);
      expect(satisfy(waiters, fences[k], UINT64_MAX)).toEqual(expectedOrder(live[k].values(), UINT64_MAX));
      expect(core.fenceWaiterCount(fences[k])).toBe(0);
    }
  });
});

describe('fenceSatisfy\'s batch', () => {
  /** The SatisfiedWait records of one fenceSatisfy call: [host id, entry, completed] each, in the order written. */
  function satisfyRecords(machine: Machine, core: CoreExports, fence: number, current: bigint, limit: number): number[][] {
    const n = core.fenceSatisfy(fence, current, limit);
    expect(n).toBeGreaterThanOrEqual(0);
    const at = machine.layout.out.satisfied, base = core.outBufferAddress();
    const view = new DataView(machine.memory.buffer);
    return Array.from({ length: n }, (_, i) => [at.waiter, at.entry, at.completed].map((offset) => view.getUint32(base + i * at.bytes + offset, true)));
  }

  it('NF-03 one call\'s records name each popped block\'s own waiter, entry and completion, in (value, arrival) order, wait-all and wait-any mixed and across calls cut by the limit', async () => {
    const { machine, core, fence } = await heapRig(64);
    const L = machine.layout;
    const f = fence(), g = fence();
    // A: wait-all on g (entry 0, 7) and f (entry 1, 5); B: wait-any on f (entry 0, 5) and g (entry 1, 9);
    // C: wait-all on f alone (entry 0, 2); D: wait-any on g (entry 0, 8) and f (entry 1, 6).
    const add = (host: number, mode: number, blocks: [number, bigint][]) => {
      const record = core.waiterCreate(host, mode);
      expect(record).toBeGreaterThan(0);
      blocks.forEach(([onFence, value], entry) => expect(core.waitBlockAdd(onFence, value, record, entry)).toBeGreaterThan(0));
      return record;
    };
    const a = add(1, L.waiterModeAll, [[g, 7n], [f, 5n]]);
    const b = add(2, L.waiterModeAny, [[f, 5n], [g, 9n]]);
    const c = add(3, L.waiterModeAll, [[f, 2n]]);
    const d = add(4, L.waiterModeAny, [[g, 8n], [f, 6n]]);
    // f at 6, two records a call: C (2), then A and B (5, A added first), then D (6).
    expect(satisfyRecords(machine, core, f, 6n, 2)).toEqual([[3, 0, 1], [1, 1, 0]]);
    expect(core.waiterRetire(c)).toBe(0);
    expect(satisfyRecords(machine, core, f, 6n, 2)).toEqual([[2, 0, 1], [4, 1, 1]]);
    // B and D completed (wait-any): retired, their blocks on g leave g's heap (g is reported twice, once each).
    expect(core.waiterRetire(b)).toBe(1);
    expect(core.waiterRetire(d)).toBe(1);
    expect(core.fenceWaiterCount(f)).toBe(0);
    expect(core.fenceWaiterCount(g)).toBe(1);
    expect(core.heapCheck(g)).toBe(0);
    // A's last entry: g at 7 completes it.
    expect(satisfyRecords(machine, core, g, 7n, 64)).toEqual([[1, 0, 1]]);
    expect(core.waiterRetire(a)).toBe(0);
    expect(core.waiterPending(a)).toBe(E_BAD_WAITER);
  });
});

describe('the wait pairs', () => {
  it('NF-03 a waiter of one fence takes the waiter record and the wait block of one pair (the record right after the block, 32-aligned), also after retirements; a waiter of two fences shifts the next waiters\' records by one pair', async () => {
    const { core, waiters, fence } = await heapRig(64);
    const pair = (core.WAIT_PAIR_BYTES as WebAssembly.Global).value as number;
    const blockBytes = core.WAIT_BLOCK_BYTES.value as number;
    expect(pair).toBe(32);
    const f = fence(), g = fence();
    /** Each waiter's record against its block's pair: record − (first record + (block − first block) × pair); 0 = paired. */
    const offsets = (blocks: number[]) => {
      const first = blocks[0], record = waiters.recordOf(first);
      expect(record % pair).toBe(blockBytes);
      return blocks.map((block) => waiters.recordOf(block) - record - (block - first) * pair);
    };
    const blocks = Array.from({ length: 8 }, (_, i) => waiters.add(f, BigInt(10 + i), i));
    expect(offsets(blocks)).toEqual(blocks.map(() => 0));
    // Retire three (the middle ones), add three: the freed pairs come back whole.
    for (const block of blocks.slice(2, 5)) expect(waiters.remove(block)).toBe(1);
    const again = [100, 101, 102].map((host) => waiters.add(f, 50n, host));
    expect([...again].sort((x, y) => x - y)).toEqual(blocks.slice(2, 5));
    const live = [...blocks.slice(0, 2), ...again, ...blocks.slice(5)];
    expect(offsets(live)).toEqual(live.map(() => 0));
    // A waiter of two fences takes one record and two blocks (pairs 9 and 10): the next waiters' records are one
    // pair before their blocks' (record 10 with block 11, …), still nothing but a matter of speed.
    const two = core.waiterCreate(200, core.WAITER_MODE_ALL.value as number);
    expect(core.waitBlockAdd(f, 60n, two, 0)).toBe(9);
    expect(core.waitBlockAdd(g, 60n, two, 1)).toBe(10);
    const after = [300, 301].map((host) => waiters.add(f, 70n, host));
    expect(after).toEqual([11, 12]);
    expect(offsets([blocks[0], ...after])).toEqual([0, -pair, -pair]);
    expect(core.waiterRetire(two)).toBe(2);
    expect(core.heapCheck(f)).toBe(0);
    expect(core.heapCheck(g)).toBe(0);
    expect(satisfy(waiters, f, 100n)).toEqual([0, 1, 5, 6, 7, 100, 101, 102, 300, 301]);
  });
});

describe('the arena a waited fence takes', () => {
  it('NF-03 a fence\'s first waiter takes a one-entry heap (16 bytes of the arena), doubled as waiters come: 4096 bytes hold 256 waited fences; the next wait is refused and changes nothing', async () => {
    const machine = await createMachine({ seed: 1, trace: false, adapters: [{ limits: { heapArenaBytes: 4096, ringEntries: 2, waitersPerFence: 4 } }] });
    const app = machine.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const fences = Array.from({ length: 257 }, () => app.createNativeFence({ hDevice }).hSyncObject);
    let woken = 0;
    for (const f of fences.slice(0, 256)) app.waitWithCallback({ objects: [f], values: [1n] }, () => { woken++; });
    expect(() => app.waitWithCallback({ objects: [fences[256]], values: [1n] }, () => {})).toThrow(
      expect.objectContaining({ status: 'INSUFFICIENT_RESOURCES', message: expect.stringMatching(/heap of this fence is full/) }));
    expect(machine.inspectFence(app, fences[256]).cpuWaiters).toBe(0);
    expect(machine.stuck().waiters).toHaveLength(256);
    // A heap grows from one entry to the limit's four (its blocks of 1, 2 and 4 entries come from what the others freed or left).
    const many = await createMachine({ seed: 1, trace: false, adapters: [{ limits: { heapArenaBytes: 4096, ringEntries: 2, waitersPerFence: 4 } }] });
    const other = many.createProcess('app');
    const f = other.createNativeFence({ hDevice: other.createDevice({ hAdapter: other.openAdapter(0) }) }).hSyncObject;
    const order: number[] = [];
    for (const value of [4n, 2n, 3n, 1n]) other.waitWithCallback({ objects: [f], values: [value] }, () => { order.push(Number(value)); });
    expect(() => other.waitWithCallback({ objects: [f], values: [5n] }, () => {})).toThrow(expect.objectContaining({ status: 'INSUFFICIENT_RESOURCES' }));
    other.signal({ objects: [f], values: [4n] });
    for (const g of fences.slice(0, 256)) app.signal({ objects: [g], values: [1n] });
    await Promise.resolve();
    expect(order).toEqual([1, 2, 3, 4]);
    expect(woken).toBe(256);
    expect(machine.stuck().waiters).toEqual([]);
  });
});
