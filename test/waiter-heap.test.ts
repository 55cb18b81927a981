// The core's CPU-waiter heap (assembly/heap.ts) at its edges: long runs of equal
// values, retirement of any wait block (root, last, middle, already free), the
// arrival sequence running out (2^32 waits on one adapter), and a fence that
// stays waited on across all of it. A plain model (an array sorted by value, then
// arrival) says what each pop must return.
import { describe, it, expect } from 'vitest';
import { createMachine, Random, type CoreExports, type Machine } from '../src/index.js';

const UINT64_MAX = 0xffff_ffff_ffff_ffffn;
const E_BAD_WAIT_BLOCK = -10;

interface Waiter { block: number; value: bigint; waiter: number; order: number }

async function heapRig(waitBlocks = 8192): Promise<{ machine: Machine; core: CoreExports; fence: () => number; arrivalAddress: number }> {
  const machine = await createMachine({ seed: 7, trace: false, adapters: [{ limits: { waitBlocks, waitersPerFence: waitBlocks } }] });
  const core = machine.adapter(0).core;
  const L = machine.layout;
  const fence = () => { const id = core.fenceCreate(0, L.fenceKindNative, L.memorySystem, 0, 0, 0n, 0); expect(id).toBeGreaterThan(0); return id; };
  const arrivalAddress = machine.adapters[0].privateBase + (core.ADAPTER_ARRIVAL_SEQUENCE_OFFSET as WebAssembly.Global).value;
  return { machine, core, fence, arrivalAddress };
}

/** Pops everything <= current through fenceSatisfy (8 at a time) and returns the waiter ids in pop order. */
function satisfy(machine: Machine, core: CoreExports, fence: number, current: bigint): number[] {
  const woken: number[] = [];
  for (;;) {
    const n = core.fenceSatisfy(fence, current, 8);
    const out = new Uint32Array(machine.memory.buffer, core.outBufferAddress(), n * 2);
    for (let i = 0; i < n; i++) woken.push(out[2 * i]);
    if (n < 8) return woken;
  }
}

/** The model: smallest value first, equal values in the order they were added. */
const expectedOrder = (live: Iterable<Waiter>, current: bigint) => [...live].filter((w) => w.value <= current)
  .sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : a.order - b.order)).map((w) => w.waiter);

describe('the core waiter heap', () => {
  it('NF-03 long runs of equal values pop in exact arrival order, through partial bottom groups and retirements of root, last and middle entries', async () => {
    const { machine, core, fence } = await heapRig();
    const f = fence();
    const random = new Random(31);
    const live = new Map<number, Waiter>();
    let order = 0;
    for (let i = 0; i < 3001; i++) { // three values, ~1000 waiters each; 3001 leaves the last 4-group partial
      const value = BigInt(1 + random.below(3));
      const block = core.waitBlockAdd(f, value, 10_000 + i);
      expect(block).toBeGreaterThan(0);
      live.set(block, { block, value, waiter: 10_000 + i, order: order++ });
    }
    expect(core.heapCheck(f)).toBe(0);
    // Retire the root's waiter, the last added, and 500 chosen at random.
    const byOrder = [...live.values()].sort((a, b) => a.order - b.order);
    const root = expectedOrder(live.values(), UINT64_MAX)[0];
    const rootBlock = [...live.values()].find((w) => w.waiter === root)!.block;
    for (const block of [rootBlock, byOrder[byOrder.length - 1].block]) {
      expect(core.waitBlockRemove(block)).toBe(0);
      live.delete(block);
    }
    for (let k = 0; k < 500; k++) {
      const blocks = [...live.keys()];
      const block = blocks[random.below(blocks.length)];
      expect(core.waitBlockRemove(block)).toBe(0);
      live.delete(block);
      if (k % 50 === 0) expect(core.heapCheck(f)).toBe(0);
    }
    expect(core.fenceWaiterCount(f)).toBe(live.size);
    expect(BigInt.asUintN(64, core.fenceMinWaited(f))).toBe(1n);
    // Two values are satisfied, then the third: every pop in (value, arrival) order.
    expect(satisfy(machine, core, f, 2n)).toEqual(expectedOrder(live.values(), 2n));
    for (const [block, w] of live) if (w.value <= 2n) live.delete(block);
    expect(core.heapCheck(f)).toBe(0);
    expect(BigInt.asUintN(64, core.fenceMinWaited(f))).toBe(3n);
    expect(satisfy(machine, core, f, 3n)).toEqual(expectedOrder(live.values(), 3n));
    expect(core.fenceWaiterCount(f)).toBe(0);
    expect(BigInt.asUintN(64, core.fenceMonitoredTarget(f))).toBe(UINT64_MAX);
  });

  it('NF-03 retiring a wait block twice, one never handed out, 0 or past the table is E_BAD_WAIT_BLOCK and changes nothing; a freed block comes back as a new waiter', async () => {
    const { machine, core, fence } = await heapRig(64);
    const f = fence();
    const a = core.waitBlockAdd(f, 5n, 1), b = core.waitBlockAdd(f, 5n, 2), c = core.waitBlockAdd(f, 4n, 3);
    expect(core.waitBlockRemove(b)).toBe(0);
    for (const bad of [b, 0, 65, 0xffff_ffff, 40]) expect(core.waitBlockRemove(bad)).toBe(E_BAD_WAIT_BLOCK);
    expect(core.fenceWaiterCount(f)).toBe(2);
    expect(core.heapCheck(f)).toBe(0);
    const again = core.waitBlockAdd(f, 5n, 4); // the free list hands b's block out again, as a later arrival
    expect(again).toBe(b);
    expect(satisfy(machine, core, f, 5n)).toEqual([3, 1, 4]);
    expect([a, c].map((block) => core.waitBlockRemove(block))).toEqual([E_BAD_WAIT_BLOCK, E_BAD_WAIT_BLOCK]);
    // All 64 wait blocks can be live at once, and the 65th add fails with nothing changed.
    const g = fence();
    for (let i = 0; i < 64; i++) expect(core.waitBlockAdd(g, BigInt(100 - i), i)).toBeGreaterThan(0);
    expect(core.waitBlockAdd(g, 1n, 99)).toBe(-9); // E_NO_WAIT_BLOCKS
    expect(core.fenceWaiterCount(g)).toBe(64);
    expect(BigInt.asUintN(64, core.fenceMinWaited(g))).toBe(37n);
    expect(core.heapCheck(g)).toBe(0);
  });

  it('NF-03 when the adapter\'s 32-bit arrival sequence runs out, every heap is renumbered in arrival order: ties stay exact across the wrap', async () => {
    const { machine, core, fence, arrivalAddress } = await heapRig();
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
      const block = core.waitBlockAdd(fences[k], value, waiter);
      expect(block).toBeGreaterThan(0);
      live[k].set(block, { block, value, waiter, order: order++ });
    };
    // Waiters from before the wrap, on all three fences, mostly on equal values.
    view.setUint32(arrivalAddress, 0xffff_ffff - 700, true);
    for (let i = 0; i < 600; i++) add(random.below(3), BigInt(1 + random.below(4)));
    for (let i = 0; i < 60; i++) { // some retired before the wrap
      const k = random.below(3); const blocks = [...live[k].keys()];
      if (blocks.length) { const block = blocks[random.below(blocks.length)]; expect(core.waitBlockRemove(block)).toBe(0); live[k].delete(block); }
    }
    for (let i = 0; i < 300; i++) add(random.below(3), BigInt(1 + random.below(4))); // crosses 2^32 - 1: renumbered once
    expect(renumberedTo).toBeGreaterThan(0);
    expect(view.getUint32(arrivalAddress, true)).toBe(renumberedTo + addsSince + 1); // restarted after the largest heap, not wrapped
    fences.forEach((f) => expect(core.heapCheck(f)).toBe(0));
    for (let k = 0; k < 3; k++) {
      expect(satisfy(machine, core, fences[k], 2n)).toEqual(expectedOrder(live[k].values(), 2n));
      for (const [block, w] of live[k]) if (w.value <= 2n) live[k].delete(block);
    }
    for (let i = 0; i < 200; i++) add(random.below(3), BigInt(2 + random.below(3))); // later arrivals tie with older ones
    for (let k = 0; k < 3; k++) {
      expect(core.heapCheck(fences[k])).toBe(0);
      expect(satisfy(machine, core, fences[k], UINT64_MAX)).toEqual(expectedOrder(live[k].values(), UINT64_MAX));
      expect(core.fenceWaiterCount(fences[k])).toBe(0);
    }
  });
});
