// The CPU-waiter min-heap of each fence (NF-02, NF-03).
//
// Ordered by (value, arrival): the smallest waited value is at index 0, and
// among equal values the earliest waiter. The heap is 4-ary (children of i are
// 4i+1..4i+4): half the levels of a binary heap, so a pop moves half as many
// entries and touches half as many wait blocks, and the four children sit
// side by side (64 bytes). Each entry names its wait block and
// each wait block remembers its entry's index, so any waiter can be retired in
// O(log n). A heap grows by doubling (a power-of-two block from the arena) up
// to the adapter's limit class; past that, or with the arena exhausted, adding
// a waiter fails with E_HEAP_FULL and nothing changes.
//
// Invariants (checked by heapCheck, used in tests):
//   entry(parent(i)) <= entry(i)              for every i > 0, parent(i) = (i - 1) >> 2
//   heapIndex(entry(i).waitBlock) == i         (the adapter's heapIndexTable)
//   MonitoredValue target == entry(0).value - 1, or UINT64_MAX when empty

import {
  FenceRecord, HeapEntry, HEAP_ENTRY_BYTES, HEAP_MIN_CLASS, WaitBlock, WAIT_BLOCK_LIVE, UINT64_MAX,
  OK, E_BAD_FENCE, E_HEAP_FULL, E_NO_WAIT_BLOCKS, E_BAD_WAIT_BLOCK,
} from './layout';
import { adapter, fenceAt, fenceValid, waitBlockAt, heapIndexAddress, outWord, heapBlockAlloc, heapBlockFree } from './adapter';

@inline function entryAt(block: u32, index: u32): usize { return <usize>block + (<usize>index << 4); }
@inline function entryValue(e: usize): u64 { return load<u64>(e, offsetof<HeapEntry>('value')); }
@inline function entryArrival(e: usize): u32 { return load<u32>(e, offsetof<HeapEntry>('arrival')); }
@inline function entryBlock(e: usize): u32 { return load<u32>(e, offsetof<HeapEntry>('waitBlock')); }

/** a before b: smaller value, or equal value and earlier arrival (wrap-aware). */
@inline function before(value: u64, arrival: u32, e: usize): bool {
  const other = entryValue(e);
  return value < other || (value == other && <i32>(arrival - entryArrival(e)) < 0);
}

@inline function place(block: u32, index: u32, value: u64, arrival: u32, waitBlock: u32): void {
  const e = entryAt(block, index);
  store<u64>(e, value, offsetof<HeapEntry>('value'));
  store<u32>(e, arrival, offsetof<HeapEntry>('arrival'));
  store<u32>(e, waitBlock, offsetof<HeapEntry>('waitBlock'));
  store<u32>(heapIndexAddress(waitBlock), index);
}

/** Moves the hole at `index` up until (value, arrival) fits; returns the final index. */
function siftUp(block: u32, index: u32, value: u64, arrival: u32): u32 {
  while (index > 0) {
    const parent = (index - 1) >> 2;
    const p = entryAt(block, parent);
    if (!before(value, arrival, p)) break;
    place(block, index, entryValue(p), entryArrival(p), entryBlock(p));
    index = parent;
  }
  return index;
}

/** Index of the smallest of the (up to four) children starting at `first`. */
@inline function smallestChild(block: u32, first: u32, count: u32): u32 {
  let child = first;
  let c = entryAt(block, first);
  let childValue = entryValue(c);
  const end = min<u32>(first + 4, count);
  for (let k = first + 1; k < end; k++) {
    const e = entryAt(block, k);
    const v = entryValue(e);
    if (v < childValue || (v == childValue && <i32>(entryArrival(e) - entryArrival(c)) < 0)) {
      child = k; c = e; childValue = v;
    }
  }
  return child;
}

/** Moves the hole at `index` down until (value, arrival) fits; returns the final index. */
function siftDown(block: u32, count: u32, index: u32, value: u64, arrival: u32): u32 {
  while (true) {
    const first = (index << 2) + 1;
    if (first >= count) break;
    const child = smallestChild(block, first, count);
    const c = entryAt(block, child);
    const childValue = entryValue(c);
    if (!(childValue < value || (childValue == value && <i32>(entryArrival(c) - arrival) < 0))) break;
    place(block, index, childValue, entryArrival(c), entryBlock(c));
    index = child;
  }
  return index;
}

/** Grows the fence's heap block to the next class; false when it cannot. */
function heapGrow(f: FenceRecord): bool {
  const a = adapter();
  const nextClass = f.heapBlock == 0 ? HEAP_MIN_CLASS : f.heapClass + 1;
  if (nextClass > a.heapLimitClass) return false;
  const block = heapBlockAlloc(nextClass);
  if (block == 0) return false;
  if (f.heapBlock != 0) {
    memory.copy(<usize>block, <usize>f.heapBlock, <usize>f.heapCount * HEAP_ENTRY_BYTES);
    heapBlockFree(f.heapBlock, f.heapClass);
  }
  f.heapBlock = block;
  f.heapClass = nextClass;
  return true;
}

/**
 * Adds a CPU waiter of `fence` for `value` on behalf of host waiter `waiter`.
 * Returns the wait block id (> 0), or E_BAD_FENCE / E_NO_WAIT_BLOCKS / E_HEAP_FULL
 * with nothing changed.
 */
export function waitBlockAdd(fence: u32, value: u64, waiter: u32): i32 {
  if (!fenceValid(fence)) return E_BAD_FENCE;
  const a = adapter();
  if (a.waitBlockFreeHead == 0) return E_NO_WAIT_BLOCKS;
  const f = fenceAt(fence);
  if (f.heapBlock == 0 || f.heapCount == (<u32>1 << f.heapClass)) {
    if (!heapGrow(f)) return E_HEAP_FULL;
  }
  const id = a.waitBlockFreeHead;
  const wb = waitBlockAt(id);
  a.waitBlockFreeHead = load<u32>(heapIndexAddress(id)); // a free block's heapIndexTable slot is its free-list link
  a.waitBlockLive++;
  wb.value = value; wb.fence = fence; wb.waiter = waiter; wb.state = WAIT_BLOCK_LIVE;
  const arrival = a.arrivalSequence++;
  const index = siftUp(f.heapBlock, f.heapCount, value, arrival);
  place(f.heapBlock, index, value, arrival, id);
  f.heapCount++;
  a.heapPushes++;
  return <i32>id;
}

function waitBlockRelease(id: u32): void {
  const a = adapter();
  const wb = waitBlockAt(id);
  wb.state = 0;
  wb.fence = 0;
  store<u32>(heapIndexAddress(id), a.waitBlockFreeHead);
  a.waitBlockFreeHead = id;
  a.waitBlockLive--;
}

/** Removes heap entry `index` of fence f (the hole is refilled by the last entry). */
function removeAt(f: FenceRecord, index: u32): void {
  const count = f.heapCount - 1;
  f.heapCount = count;
  adapter().heapPops++;
  if (index == count) return;
  const last = entryAt(f.heapBlock, count);
  const value = entryValue(last), arrival = entryArrival(last), block = entryBlock(last);
  let at: u32;
  if (index == 0) {
    // A pop: the last entry almost always belongs near the bottom, so move the
    // hole down to a leaf along the smallest children without comparing, then
    // sift the last entry up from there (Floyd's pop: fewer comparisons).
    at = siftUp(f.heapBlock, holeToLeaf(f.heapBlock, count), value, arrival);
  } else {
    at = siftUp(f.heapBlock, index, value, arrival);
    if (at == index) at = siftDown(f.heapBlock, count, index, value, arrival);
  }
  place(f.heapBlock, at, value, arrival, block);
}

/** Moves the hole at the root down to a leaf, each level taking its smallest child; returns the leaf. */
function holeToLeaf(block: u32, count: u32): u32 {
  let index: u32 = 0;
  while (true) {
    const first = (index << 2) + 1;
    if (first >= count) break;
    const child = smallestChild(block, first, count);
    const c = entryAt(block, child);
    const childValue = entryValue(c);
    place(block, index, childValue, entryArrival(c), entryBlock(c));
    index = child;
  }
  return index;
}

/** Retires one wait block (timeout, cancel, wait-any satisfied elsewhere). */
export function waitBlockRemove(id: u32): i32 {
  const a = adapter();
  if (id == 0 || id > a.waitBlockCapacity) return E_BAD_WAIT_BLOCK;
  const wb = waitBlockAt(id);
  if (wb.state != WAIT_BLOCK_LIVE) return E_BAD_WAIT_BLOCK;
  const f = fenceAt(wb.fence);
  const index = load<u32>(heapIndexAddress(id));
  assert(entryBlock(entryAt(f.heapBlock, index)) == id, 'waitBlockRemove: heap index out of sync');
  removeAt(f, index);
  waitBlockRelease(id);
  return OK;
}

/**
 * Pops every waiter of `fence` whose value <= currentValue, smallest first,
 * writing (waiter, waitBlock) pairs to the out buffer. Stops after `limit`
 * pairs; returns how many it wrote (call again while it returns `limit`).
 */
export function fenceSatisfy(fence: u32, currentValue: u64, limit: u32): i32 {
  if (!fenceValid(fence)) return E_BAD_FENCE;
  const a = adapter();
  const f = fenceAt(fence);
  const max = min<u32>(limit, a.outCapacity >> 1);
  let written: u32 = 0;
  while (written < max && f.heapCount > 0) {
    const top = entryAt(f.heapBlock, 0);
    if (entryValue(top) > currentValue) break;
    const id = entryBlock(top);
    store<u32>(outWord(written * 2), waitBlockAt(id).waiter);
    store<u32>(outWord(written * 2 + 1), id);
    removeAt(f, 0);
    waitBlockRelease(id);
    written++;
  }
  return <i32>written;
}

/** Smallest waited value of the fence, UINT64_MAX with no waiter. */
export function fenceMinWaited(fence: u32): u64 {
  const f = fenceAt(fence);
  return f.heapCount == 0 ? UINT64_MAX : entryValue(entryAt(f.heapBlock, 0));
}

/** What MonitoredValue must be (NF-02): smallest waited value − 1, or UINT64_MAX. */
export function fenceMonitoredTarget(fence: u32): u64 {
  const f = fenceAt(fence);
  return f.heapCount == 0 ? UINT64_MAX : entryValue(entryAt(f.heapBlock, 0)) - 1;
}

export function fenceWaiterCount(fence: u32): u32 { return fenceAt(fence).heapCount; }

/** Checks every heap invariant of a fence; returns OK or the first bad index + 1 as a negative. */
export function heapCheck(fence: u32): i32 {
  if (!fenceValid(fence)) return E_BAD_FENCE;
  const f = fenceAt(fence);
  for (let i: u32 = 0; i < f.heapCount; i++) {
    const e = entryAt(f.heapBlock, i);
    if (load<u32>(heapIndexAddress(entryBlock(e))) != i) return -(<i32>i + 1);
    if (i > 0) {
      const p = entryAt(f.heapBlock, (i - 1) >> 2);
      if (before(entryValue(e), entryArrival(e), p)) return -(<i32>i + 1);
    }
  }
  return OK;
}

/**
 * Benchmark driver (waiterHeap.vsFlatqueue): pushes `count` values read from
 * `values` (u64[]) onto the fence's heap through waitBlockAdd, then pops them
 * all through removeAt + waitBlockRelease, the pop path fenceSatisfy uses. Returns a checksum of
 * the popped order so the work cannot be optimized away.
 */
export function heapBench(fence: u32, values: u32, count: u32): u64 {
  for (let i: u32 = 0; i < count; i++) {
    const r = waitBlockAdd(fence, load<u64>(<usize>values + (<usize>i << 3)), i);
    if (r < 0) return <u64>r;
  }
  let checksum: u64 = 0;
  let previous: u64 = 0;
  const f = fenceAt(fence);
  while (f.heapCount > 0) {
    const top = entryAt(f.heapBlock, 0);
    const value = entryValue(top);
    assert(value >= previous, 'heapBench: popped out of order');
    previous = value;
    const id = entryBlock(top);
    removeAt(f, 0);
    waitBlockRelease(id);
    checksum = checksum * 31 + value;
  }
  return checksum;
}
