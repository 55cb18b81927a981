// CPU waiters (NF-02, NF-03, NF-08): each waiter's record, and the min-heap
// of each fence its wait blocks are in.
//
// Why this file is long: it is one structure. The 4-ary heap, a large fence's
// run and buffer, and the sorts that build the run all write the same heap
// index slots and keep the invariants heapCheck checks (listed below); kept
// apart they would each hold half of every invariant. It is made of small
// @inline helpers, one section per part.
//
//   waiterCreate(hostId, mode) ─▶ record ─▶ waitBlockAdd(fence, value, record, entry) per fence
//   fenceSatisfy(fence, CurrentValue) pops blocks ─▶ the record counts them down ─▶ SatisfiedWait
//        { hostId, entry, completed }: a wait-any completes at its first, a wait-all at its last
//   waiterRetire(record) on each adapter it has blocks on (home last): blocks still in heaps
//        leave them (their fences are reported: refresh their MonitoredValue), all its blocks
//        and the record are freed. A completed, timed-out or released waiter is retired.
//
// Ordered by (value, arrival): the smallest waited value is at index 0, and
// among equal values the earliest waiter. The heap is 4-ary (children of i are
// 4i+1..4i+4): half the levels of a binary heap, so a pop moves half as many
// entries and rewrites half as many heap indexes. Each entry names its wait
// block and the adapter's heap index table remembers each live wait block's
// entry index, so any waiter can be retired in O(log n). A heap grows by
// doubling (a power-of-two block from the arena) up to the adapter's limit
// class; past that, or with the arena exhausted, adding a waiter fails with
// E_HEAP_FULL and nothing changes.
//
// What makes a pop cheap (waiterHeap.vsFlatqueue in bench/run.mjs):
// - the smallest of four children is found without a data-dependent branch
//   (two pairs, then their winners, each a value compare and a `select`); the
//   arrivals are read only when two values are equal, which is either rare
//   (spread values) or the common case (everyone waits on one value), so that
//   branch predicts well either way;
// - while the hole walks down (Floyd's pop), the four grandchild groups, 16
//   contiguous entries, are loaded one level early, so their cache misses
//   overlap the current level's compares instead of following them;
// - a wait block's state (in a heap, satisfied, free) is its heap index
//   slot, so popping or freeing it writes one dense word and not the block.
//
// Arrivals are an adapter-wide u32 sequence compared as plain unsigned
// numbers. Before the sequence would wrap, arrivalsRenumber gives every heap's
// entries their rank (0, 1, 2, …) in arrival order, so ties stay exact no
// matter how long a waiter waits.
//
// A fence past 64 waiters keeps them in a heap, a sorted run and an unsorted
// buffer instead ("large fences" below; the layout: LargeHeap in layout.ts).
//
// Invariants (checked by heapCheck, used in tests):
//   entry(parent(i)) <= entry(i)              for every i > 0, parent(i) = (i - 1) >> 2
//   heapIndex(entry(i).waitBlock) == i         (the adapter's heapIndexTable, free tag clear)
//   a large fence: its run's live entries ascend; no buffer entry is before bufferMin; a bulk
//   entry k's heapIndex is WAIT_BLOCK_BULK | k; the parts' counts add up to heapCount
//   MonitoredValue target == smallest entry's value - 1 (entry(0), or for a large fence the
//   smallest of heap top, run head, buffer minimum), or UINT64_MAX when empty

import {
  FenceRecord, HeapEntry, HEAP_ENTRY_BYTES, HEAP_FIRST_CLASS, WaitBlock, LargeHeap, HEAP_LARGE_CLASS, LARGE_HEAP_BYTES, BUFFER_SORT_MIN, WAIT_BLOCK_BULK, WAIT_BLOCK_FREE, UINT64_MAX,
  OK, E_BAD_FENCE, E_HEAP_FULL, E_NO_WAIT_BLOCKS, E_BAD_ARGUMENT, FENCE_STATE_LIVE, FENCE_RECORD_BYTES,
  SatisfiedWait, SATISFIED_WAIT_BYTES, WAIT_BLOCK_POPPED, WAIT_BLOCK_DONE, WAIT_BLOCK_BYTES,
  WaiterRecord, WAITER_RECORD_BYTES, WAIT_PAIR_BYTES, WAITER_MODE_ANY, WAITER_COMPLETED, WAITER_TAG_LIVE, WAITER_TAG_MASK, WAITER_MAX_ENTRIES,
  E_NO_WAITERS, E_BAD_WAITER,
} from './layout';
import { adapter, fenceAt, fenceValid, waitBlockAt, waitBlockAddress, heapIndexAddress, heapBlockAlloc, heapBlockFree, outWord } from './adapter';

/** The last arrival number handed out before arrivalsRenumber runs. */
const ARRIVAL_LAST: u32 = 0xFFFF_FFFF;

@inline function entryAt(block: usize, index: u32): usize { return block + (<usize>index << 4); }
@inline function entryValue(e: usize): u64 { return load<u64>(e, offsetof<HeapEntry>('value')); }
@inline function entryArrival(e: usize): u32 { return load<u32>(e, offsetof<HeapEntry>('arrival')); }
@inline function entryBlock(e: usize): u32 { return load<u32>(e, offsetof<HeapEntry>('waitBlock')); }
/** Wait block `id`'s slot in the heap index table whose base is `indexTable`. */
@inline function indexSlot(indexTable: usize, id: u32): usize { return indexTable + (<usize>(id - 1) << 2); }

/** (value, arrival) before entry e: smaller value, or equal value and earlier arrival. */
@inline function before(value: u64, arrival: u32, e: usize): bool {
  const other = entryValue(e);
  return value < other || (value == other && arrival < entryArrival(e));
}

/** Entry a (value va) before entry b (value vb); the arrivals are read only on a tie. */
@inline function entryBefore(a: usize, va: u64, b: usize, vb: u64): bool {
  let earlier = va < vb;
  if (va == vb) earlier = entryArrival(a) < entryArrival(b);
  return earlier;
}

// The arrival and wait block halves of an entry move as one u64 (arrival low, wait block high).
@inline function payload(arrival: u32, waitBlock: u32): u64 { return (<u64>waitBlock << 32) | arrival; }
@inline function payloadBlock(pair: u64): u32 { return <u32>(pair >> 32); }

/** Copies the entry at `from` into slot `toIndex` (address `to`) and records its new index. */
@inline function moveEntry(indexTable: usize, from: usize, to: usize, toIndex: u32): void {
  const pair = load<u64>(from, offsetof<HeapEntry>('arrival'));
  store<u64>(to, load<u64>(from, offsetof<HeapEntry>('value')), offsetof<HeapEntry>('value'));
  store<u64>(to, pair, offsetof<HeapEntry>('arrival'));
  store<u32>(indexSlot(indexTable, payloadBlock(pair)), toIndex);
}

@inline function place(block: usize, indexTable: usize, index: u32, value: u64, arrival: u32, waitBlock: u32): void {
  const e = entryAt(block, index);
  store<u64>(e, value, offsetof<HeapEntry>('value'));
  store<u64>(e, payload(arrival, waitBlock), offsetof<HeapEntry>('arrival'));
  store<u32>(indexSlot(indexTable, waitBlock), index);
}

/** Moves the hole at `index` up until (value, arrival) fits; returns the final index. */
function siftUp(block: usize, indexTable: usize, index: u32, value: u64, arrival: u32): u32 {
  while (index > 0) {
    const parent = (index - 1) >> 2;
    const p = entryAt(block, parent);
    if (!before(value, arrival, p)) break;
    moveEntry(indexTable, p, entryAt(block, index), index);
    index = parent;
  }
  return index;
}

/** Index of the smallest of the (up to four) children starting at `first`. */
@inline function smallestChild(block: usize, first: u32, count: u32): u32 {
  const c = entryAt(block, first);
  if (first + 4 <= count) {
    // A full group: (0 vs 1) and (2 vs 3), then the two winners; `select`, not branches.
    const v0 = entryValue(c), v1 = entryValue(c + 16), v2 = entryValue(c + 32), v3 = entryValue(c + 48);
    const low = entryBefore(c + 16, v1, c, v0);
    const high = entryBefore(c + 48, v3, c + 32, v2);
    const lowIndex = select<u32>(1, 0, low), lowValue = select<u64>(v1, v0, low);
    const highIndex = select<u32>(3, 2, high), highValue = select<u64>(v3, v2, high);
    const highWins = entryBefore(c + (<usize>highIndex << 4), highValue, c + (<usize>lowIndex << 4), lowValue);
    return first + select<u32>(highIndex, lowIndex, highWins);
  }
  // The last, partial group of the heap.
  let child = first;
  let childEntry = c;
  let childValue = entryValue(c);
  for (let k = first + 1; k < count; k++) {
    const e = entryAt(block, k);
    const v = entryValue(e);
    if (entryBefore(e, v, childEntry, childValue)) { child = k; childEntry = e; childValue = v; }
  }
  return child;
}

/** Moves the hole at `index` down until (value, arrival) fits; returns the final index. */
function siftDown(block: usize, indexTable: usize, count: u32, index: u32, value: u64, arrival: u32): u32 {
  while (true) {
    const first = (index << 2) + 1;
    if (first >= count) break;
    const child = smallestChild(block, first, count);
    const c = entryAt(block, child);
    const childValue = entryValue(c);
    if (!(childValue < value || (childValue == value && entryArrival(c) < arrival))) break;
    moveEntry(indexTable, c, entryAt(block, index), index);
    index = child;
  }
  return index;
}

/**
 * Moves the hole at the root down to a leaf, each level taking its smallest
 * child (Floyd's pop: no compare against the entry that will fill the hole);
 * returns the leaf.
 */
function holeToLeaf(block: usize, indexTable: usize, count: u32): u32 {
  let index: u32 = 0;
  let touched: u64 = 0;
  while (true) {
    const first = (index << 2) + 1;
    if (first >= count) break;
    // The children of this group are the 16 entries from 4·first + 1 on (4 cache lines): load one
    // word of each line now, so the next level is already on its way while this one compares.
    const grandchildren = (first << 2) + 1;
    if (grandchildren + 15 < count) {
      const g = entryAt(block, grandchildren);
      touched ^= load<u64>(g) ^ load<u64>(g, 64) ^ load<u64>(g, 128) ^ load<u64>(g, 192);
    }
    const child = smallestChild(block, first, count);
    moveEntry(indexTable, entryAt(block, child), entryAt(block, index), index);
    index = child;
  }
  prefetchSink = touched;
  return index;
}
/** Where holeToLeaf leaves the words it loads early, so no optimizer drops the loads. */
let prefetchSink: u64 = 0;

/**
 * Grows a small fence's heap block to the next class; false when it cannot. Past class
 * HEAP_LARGE_CLASS − 1 the fence becomes large: the entries move to a block of class
 * HEAP_LARGE_CLASS (as its heap part) and the block they leave holds the LargeHeap descriptor.
 */
function heapGrow(f: FenceRecord): bool {
  const a = adapter();
  const nextClass: u32 = f.heapBlock == 0 ? HEAP_FIRST_CLASS : <u32>f.heapClass + 1;
  if (nextClass > a.heapLimitClass) return false;
  const block = heapBlockAlloc(nextClass);
  if (block == 0) return false;
  if (f.heapBlock != 0) {
    memory.copy(<usize>block, <usize>f.heapBlock, <usize>f.heapCount * HEAP_ENTRY_BYTES);
    if (nextClass == HEAP_LARGE_CLASS) {
      assert(LARGE_HEAP_BYTES <= HEAP_ENTRY_BYTES << (HEAP_LARGE_CLASS - 1), 'heapGrow: the LargeHeap descriptor must fit the block the fence outgrew');
      const h = changetype<LargeHeap>(<usize>f.heapBlock);
      h.entries = block; h.heapCount = f.heapCount;
      h.runHead = 0; h.runEnd = 0; h.bulkCount = 0; h.runLive = 0; h.bufferMin = 0; h.unused = 0;
      f.heapClass = <u8>nextClass;
      return true;
    }
    heapBlockFree(f.heapBlock, f.heapClass);
  }
  f.heapBlock = block;
  f.heapClass = <u8>nextClass;
  return true;
}

// ───────────────────────────── large fences: heap, run, buffer ─────────────────────────────
//
// A fence past 64 waiters (layout: LargeHeap in assembly/layout.ts) appends every new wait to an
// unsorted buffer (sequential writes, its index slot written in arrival order) and keeps the
// buffer's smallest (value, arrival), so the fence's smallest, and so its MonitoredValue, is the
// smallest of three: the heap's top, the run's head and the buffer's minimum. When a satisfy
// reaches the buffer's minimum (or a retire takes it), the buffer is flushed: a large one (at least
// BUFFER_SORT_MIN, and at least the run's live entries) is sorted with the run's rest into a new
// run, which then pops from its head in order, streaming through memory; a small one goes into the
// heap. Each wait is sorted into a run at most once (a run is sorted again only with a buffer at
// least as large), so a wait costs O(log n) amortized, like a heap push and pop, without a heap's
// ~log4(n) dependent cache misses per pop. Keys (value, arrival) are unique, so any sort gives the
// one order. A retired run entry is a tombstone; a retired buffer entry is swapped with the last.
// Every part stays inside the one entries block (heap from the bottom, bulk from the top), so a
// flush never needs memory: only adding a wait grows or compacts the block, or fails.

@inline function largeOf(f: FenceRecord): LargeHeap { return changetype<LargeHeap>(<usize>f.heapBlock); }
@inline function isLarge(f: FenceRecord): bool { return <u32>f.heapClass >= HEAP_LARGE_CLASS; }
/** One past the last byte of a large fence's entries block: bulk entry k is just below it. */
@inline function bulkEnd(f: FenceRecord, h: LargeHeap): usize { return <usize>h.entries + (<usize>HEAP_ENTRY_BYTES << f.heapClass); }
@inline function bulkAt(end: usize, k: u32): usize { return end - ((<usize>k + 1) << 4); }
/** The address step from bulk entry k to k + 1 (the bulk grows down). */
const STEP_DOWN: usize = <usize>0 - 16;

/** Appends a new wait to a large fence's buffer, keeping bufferMin. */
@inline function bufferAppend(f: FenceRecord, h: LargeHeap, indexTable: usize, value: u64, arrival: u32, id: u32): void {
  const end = bulkEnd(f, h);
  const k = h.bulkCount;
  const e = bulkAt(end, k);
  store<u64>(e, value, offsetof<HeapEntry>('value'));
  store<u64>(e, payload(arrival, id), offsetof<HeapEntry>('arrival'));
  store<u32>(indexSlot(indexTable, id), WAIT_BLOCK_BULK | k);
  if (k == h.runEnd || before(value, arrival, bulkAt(end, h.bufferMin))) h.bufferMin = k;
  h.bulkCount = k + 1;
}

/** Moves the run's head past popped and tombstoned entries; an empty run and buffer give the bulk back whole. */
function runSettle(h: LargeHeap, end: usize): void {
  let k = h.runHead;
  if (h.runLive == 0) k = h.runEnd;
  else while (entryBlock(bulkAt(end, k)) == 0) k++;
  h.runHead = k;
  if (h.runLive == 0 && h.bulkCount == h.runEnd) { h.runHead = 0; h.runEnd = 0; h.bulkCount = 0; }
}

/** Drops the bulk's dead entries (popped, tombstoned): the run's live entries to k = 0…, the buffer after them. */
function bulkCompact(f: FenceRecord, h: LargeHeap): void {
  const indexTable = <usize>adapter().heapIndexTable;
  const end = bulkEnd(f, h);
  let to: u32 = 0;
  for (let k = h.runHead; k < h.runEnd; k++) {
    const e = bulkAt(end, k);
    if (entryBlock(e) == 0) continue;
    if (to != k) moveEntry(indexTable, e, bulkAt(end, to), WAIT_BLOCK_BULK | to);
    to++;
  }
  const shift = h.runEnd - to;
  if (shift != 0) {
    for (let k = h.runEnd; k < h.bulkCount; k++) moveEntry(indexTable, bulkAt(end, k), bulkAt(end, k - shift), WAIT_BLOCK_BULK | (k - shift));
    if (h.bulkCount > h.runEnd) h.bufferMin -= shift;
  }
  h.runHead = 0;
  h.runEnd = to;
  h.bulkCount -= shift;
}

/** Doubles a large fence's entries block (the heap part to its bottom, the bulk to its top: no index changes). */
function largeGrow(f: FenceRecord, h: LargeHeap): bool {
  const nextClass = <u32>f.heapClass + 1;
  if (nextClass > adapter().heapLimitClass) return false;
  const block = heapBlockAlloc(nextClass);
  if (block == 0) return false;
  const old = <usize>h.entries;
  const bulkBytes = <usize>h.bulkCount << 4;
  memory.copy(<usize>block, old, <usize>h.heapCount << 4);
  memory.copy(<usize>block + (<usize>HEAP_ENTRY_BYTES << nextClass) - bulkBytes, bulkEnd(f, h) - bulkBytes, bulkBytes);
  heapBlockFree(h.entries, f.heapClass);
  h.entries = block;
  f.heapClass = <u8>nextClass;
  return true;
}

/**
 * Makes room for one more entry in a full large fence: compacts when a quarter of the block is dead
 * (so compaction costs O(1) a wait), else doubles the block, else compacts what dead there is.
 */
function largeMakeRoom(f: FenceRecord, h: LargeHeap): bool {
  const dead = h.runEnd - h.runLive;
  if (dead != 0 && (dead << 2) >= (<u32>1 << f.heapClass)) { bulkCompact(f, h); return true; }
  if (largeGrow(f, h)) return true;
  if (dead == 0) return false;
  bulkCompact(f, h);
  return true;
}

/**
 * Empties a large fence's buffer: sorted with the run's rest into a new run when it is large (at
 * least BUFFER_SORT_MIN and at least the run's live entries), else into the heap, last entry first
 * (the heap grows into the slots the buffer frees: heapCount + bulkCount never grows).
 */
function bufferFlush(f: FenceRecord, h: LargeHeap, scratch: usize): void {
  const indexTable = <usize>adapter().heapIndexTable;
  const end = bulkEnd(f, h);
  const size = h.bulkCount - h.runEnd;
  if (size >= BUFFER_SORT_MIN && size >= h.runLive) {
    bulkCompact(f, h);
    const count = h.bulkCount;
    if (scratch != 0) radixSort(bulkAt(end, 0), STEP_DOWN, 0, count, 0, scratch);
    else sortEntries(bulkAt(end, 0), STEP_DOWN, count, false);
    for (let k: u32 = 0; k < count; k++) store<u32>(indexSlot(indexTable, entryBlock(bulkAt(end, k))), WAIT_BLOCK_BULK | k);
    h.runHead = 0; h.runEnd = count; h.runLive = count;
    return;
  }
  const block = <usize>h.entries;
  let heapCount = h.heapCount;
  for (let k = h.bulkCount; k > h.runEnd; k--) {
    const e = bulkAt(end, k - 1);
    const value = entryValue(e), pair = load<u64>(e, offsetof<HeapEntry>('arrival'));
    const at = siftUp(block, indexTable, heapCount, value, <u32>pair);
    place(block, indexTable, at, value, <u32>pair, payloadBlock(pair));
    heapCount++;
  }
  h.heapCount = heapCount;
  h.bulkCount = h.runEnd;
  runSettle(h, end);
}

/**
 * Before popping up to `currentValue`: a buffer whose smallest is reached is flushed (pops then merge
 * heap and run). Nothing is in the out buffer yet, so its first RADIX_SCRATCH_BYTES are the sort's counts.
 */
@inline function satisfyPrepare(f: FenceRecord, currentValue: u64): void {
  if (!isLarge(f)) return;
  const h = largeOf(f);
  if (h.bulkCount > h.runEnd && entryValue(bulkAt(bulkEnd(f, h), h.bufferMin)) <= currentValue) {
    const a = adapter();
    bufferFlush(f, h, (a.outCapacity << 2) >= RADIX_SCRATCH_BYTES ? <usize>a.outBuffer : 0);
  }
}

/**
 * waiterRetire's scratch for a flush: the out buffer's last RADIX_SCRATCH_BYTES, past the most fence
 * ids one waiter lists there (one per entry, WAITER_MAX_ENTRIES); 0 (no radix sort) when it is smaller.
 */
@inline function retireScratch(): usize {
  const a = adapter();
  const bytes = a.outCapacity << 2;
  return bytes >= RADIX_SCRATCH_BYTES + (WAITER_MAX_ENTRIES << 2) ? <usize>a.outBuffer + bytes - RADIX_SCRATCH_BYTES : 0;
}

/** The value of the entry popOne popped last. */
let poppedValue: u64 = 0;

/**
 * Pops the fence's smallest entry when its value <= currentValue: returns its wait block id, or 0
 * (none). A large fence's buffer must have been through satisfyPrepare for this currentValue.
 */
@inline function popOne(f: FenceRecord, currentValue: u64): u32 {
  if (isLarge(f)) return largePopOne(f, currentValue);
  const count = f.heapCount;
  if (count == 0) return 0;
  const top = <usize>f.heapBlock;
  const value = entryValue(top);
  if (value > currentValue) return 0;
  const id = entryBlock(top);
  f.heapCount = count - 1;
  heapRemove(top, count - 1, 0);
  adapter().heapPops++;
  poppedValue = value;
  return id;
}

/** popOne of a large fence: the smaller of the heap's top and the run's head. */
function largePopOne(f: FenceRecord, currentValue: u64): u32 {
  const h = largeOf(f);
  const block = <usize>h.entries;
  const heapCount = h.heapCount;
  const end = bulkEnd(f, h);
  let e = block;
  let fromRun = false;
  if (h.runLive > 0) {
    const r = bulkAt(end, h.runHead);
    fromRun = heapCount == 0 || entryBefore(r, entryValue(r), block, entryValue(block));
    if (fromRun) e = r;
  } else if (heapCount == 0) return 0;
  const value = entryValue(e);
  if (value > currentValue) return 0;
  const id = entryBlock(e);
  if (fromRun) {
    h.runLive--;
    h.runHead++;
    runSettle(h, end);
  } else {
    h.heapCount = heapCount - 1;
    heapRemove(block, heapCount - 1, 0);
  }
  f.heapCount--;
  adapter().heapPops++;
  poppedValue = value;
  return id;
}

/** The fence's smallest entry (heap top, run head or buffer minimum), 0 with no waiter. */
function smallestEntry(f: FenceRecord): usize {
  if (f.heapCount == 0) return 0;
  if (!isLarge(f)) return <usize>f.heapBlock;
  const h = largeOf(f);
  const end = bulkEnd(f, h);
  let best: usize = h.heapCount > 0 ? <usize>h.entries : 0;
  if (h.runLive > 0) {
    const r = bulkAt(end, h.runHead);
    if (best == 0 || before(entryValue(r), entryArrival(r), best)) best = r;
  }
  if (h.bulkCount > h.runEnd) {
    const b = bulkAt(end, h.bufferMin);
    if (best == 0 || before(entryValue(b), entryArrival(b), best)) best = b;
  }
  return best;
}

/** Takes wait block `id` (heap index table slot `index`) out of fence f, whichever part holds it. */
function removeWaitBlock(f: FenceRecord, id: u32, index: u32): void {
  if (!isLarge(f)) {
    assert(index < f.heapCount && entryBlock(entryAt(f.heapBlock, index)) == id, 'waiterRetire: heap index out of sync');
    heapRemove(f.heapBlock, f.heapCount - 1, index);
  } else {
    const h = largeOf(f);
    if ((index & WAIT_BLOCK_BULK) == 0) {
      assert(index < h.heapCount && entryBlock(entryAt(h.entries, index)) == id, 'waiterRetire: heap index out of sync');
      h.heapCount--;
      heapRemove(h.entries, h.heapCount, index);
    } else {
      const end = bulkEnd(f, h);
      const k = index & ~WAIT_BLOCK_BULK;
      const e = bulkAt(end, k);
      assert(k >= h.runHead && k < h.bulkCount && entryBlock(e) == id, 'waiterRetire: bulk index out of sync');
      if (k < h.runEnd) {
        // From the run: a tombstone (the run stays sorted); the head moves on when it was the head.
        store<u32>(e, 0, offsetof<HeapEntry>('waitBlock'));
        h.runLive--;
        if (k == h.runHead || h.runLive == 0) runSettle(h, end);
      } else {
        // From the buffer: the last buffer entry fills the hole; a lost minimum flushes the buffer.
        const last = h.bulkCount - 1;
        if (k != last) moveEntry(<usize>adapter().heapIndexTable, bulkAt(end, last), e, WAIT_BLOCK_BULK | k);
        h.bulkCount = last;
        if (h.bufferMin == k) {
          if (last > h.runEnd) bufferFlush(f, h, retireScratch());
          else runSettle(h, end);
        } else if (h.bufferMin == last) h.bufferMin = k;
      }
    }
  }
  f.heapCount--;
  adapter().heapPops++;
}

/**
 * Pushes a new wait block of `fence` for `value` (onto a small fence's heap, or
 * a large fence's buffer); the block's waiter fields are the caller's. Returns
 * the block id, or E_NO_WAIT_BLOCKS / E_HEAP_FULL with nothing changed.
 */
@inline function blockPush(f: FenceRecord, fence: u32, value: u64): i32 {
  const a = adapter();
  if (a.waitBlockFreeHead == 0 && a.waitBlockBump >= a.waitBlockCapacity) return E_NO_WAIT_BLOCKS;
  if (!isLarge(f) && (f.heapBlock == 0 || f.heapCount == (<u32>1 << f.heapClass))) {
    if (!heapGrow(f)) return E_HEAP_FULL;
  }
  if (isLarge(f)) {
    const h = largeOf(f);
    if (h.heapCount + h.bulkCount == (<u32>1 << f.heapClass) && !largeMakeRoom(f, h)) return E_HEAP_FULL;
  }
  if (a.arrivalSequence == ARRIVAL_LAST) arrivalsRenumber();
  const indexTable = <usize>a.heapIndexTable;
  // A released block first (last released first), else the next never used: ids from 1 up.
  let id = a.waitBlockFreeHead;
  if (id != 0) a.waitBlockFreeHead = load<u32>(indexSlot(indexTable, id)) & ~WAIT_BLOCK_FREE;
  else id = ++a.waitBlockBump;
  a.waitBlockLive++;
  waitBlockAt(id).fence = fence;
  const arrival = a.arrivalSequence++;
  if (isLarge(f)) bufferAppend(f, largeOf(f), indexTable, value, arrival, id);
  else {
    const block = <usize>f.heapBlock;
    const index = siftUp(block, indexTable, f.heapCount, value, arrival);
    place(block, indexTable, index, value, arrival, id);
  }
  f.heapCount++;
  a.heapPushes++;
  return <i32>id;
}

// ───────────────────────────── sorting entries ─────────────────────────────
//
// Entries at origin + p·step, p in [0, count): step 16 for a heap part, STEP_DOWN for the bulk (k order).
// Introsort: median-of-three quicksort, insertion sort below 16 entries, heapsort past 2·log2(count)
// levels. By (value, arrival), or by arrival alone (arrivalsRenumber). Keys are unique either way.

@inline function at(origin: usize, step: usize, p: u32): usize { return origin + <usize>p * step; }

@inline function keyBefore(a: usize, b: usize, byArrival: bool): bool {
  if (byArrival) return entryArrival(a) < entryArrival(b);
  const va = entryValue(a), vb = entryValue(b);
  return va < vb || (va == vb && entryArrival(a) < entryArrival(b));
}

@inline function swapAt(a: usize, b: usize): void {
  const av = load<u64>(a), ap = load<u64>(a, 8);
  store<u64>(a, load<u64>(b)); store<u64>(a, load<u64>(b, 8), 8);
  store<u64>(b, av); store<u64>(b, ap, 8);
}

function insertionSort(origin: usize, step: usize, lo: u32, hi: u32, byArrival: bool): void {
  for (let i = lo + 1; i < hi; i++) {
    const e = at(origin, step, i);
    const value = load<u64>(e), pair = load<u64>(e, 8);
    const arrival = <u32>pair;
    let j = i;
    while (j > lo) {
      const previous = at(origin, step, j - 1);
      const pv = entryValue(previous);
      const earlier = byArrival ? arrival < entryArrival(previous) : (value < pv || (value == pv && arrival < entryArrival(previous)));
      if (!earlier) break;
      const to = at(origin, step, j);
      store<u64>(to, pv); store<u64>(to, load<u64>(previous, 8), 8);
      j--;
    }
    const to = at(origin, step, j);
    store<u64>(to, value); store<u64>(to, pair, 8);
  }
}

function heapSortSift(origin: usize, step: usize, count: u32, index: u32, byArrival: bool): void {
  while (true) {
    let largest = index;
    const left = (index << 1) + 1, right = left + 1;
    if (left < count && keyBefore(at(origin, step, largest), at(origin, step, left), byArrival)) largest = left;
    if (right < count && keyBefore(at(origin, step, largest), at(origin, step, right), byArrival)) largest = right;
    if (largest == index) return;
    swapAt(at(origin, step, index), at(origin, step, largest));
    index = largest;
  }
}

function heapSortRange(origin: usize, step: usize, count: u32, byArrival: bool): void {
  for (let i = count >> 1; i > 0; i--) heapSortSift(origin, step, count, i - 1, byArrival);
  for (let end = count - 1; end > 0; end--) {
    swapAt(origin, at(origin, step, end));
    heapSortSift(origin, step, end, 0, byArrival);
  }
}

function introSort(origin: usize, step: usize, lo: u32, hi: u32, depth: u32, byArrival: bool): void {
  while (hi - lo > 16) {
    if (depth == 0) { heapSortRange(at(origin, step, lo), step, hi - lo, byArrival); return; }
    depth--;
    // The median of the first, middle and last entries becomes the pivot, at lo.
    const first = at(origin, step, lo), middle = at(origin, step, lo + ((hi - lo) >> 1)), last = at(origin, step, hi - 1);
    if (keyBefore(middle, first, byArrival)) swapAt(first, middle);
    if (keyBefore(last, middle, byArrival)) {
      swapAt(middle, last);
      if (keyBefore(middle, first, byArrival)) swapAt(first, middle);
    }
    swapAt(first, middle);
    let i = lo + 1, j = hi - 1;
    while (true) {
      while (i <= j && keyBefore(at(origin, step, i), first, byArrival)) i++;
      while (i <= j && !keyBefore(at(origin, step, j), first, byArrival)) j--;
      if (i >= j) break;
      swapAt(at(origin, step, i), at(origin, step, j));
      i++; j--;
    }
    swapAt(first, at(origin, step, j));
    // The smaller side by recursion, the larger by the loop: the stack stays O(log count).
    if (j - lo < hi - j - 1) { introSort(origin, step, lo, j, depth, byArrival); lo = j + 1; }
    else { introSort(origin, step, j + 1, hi, depth, byArrival); hi = j; }
  }
  insertionSort(origin, step, lo, hi, byArrival);
}

/** Byte d (0 the most significant) of the 12-byte key (value, arrival). */
@inline function keyByte(value: u64, arrival: u32, d: u32): u32 {
  return d < 8 ? <u32>(value >> (<u64>(56 - (d << 3)))) & 0xFF : (arrival >> (24 - ((d - 8) << 3))) & 0xFF;
}
@inline function entryByte(e: usize, d: u32): u32 { return keyByte(entryValue(e), entryArrival(e), d); }

/** Ranges this short are insertion-sorted. */
const RADIX_SMALL: u32 = 32;
/** The values one key byte takes: the radix sort's buckets. */
const RADIX_BUCKETS: u32 = 256;
/** One u32 per bucket. */
const RADIX_COUNTS_BYTES: u32 = RADIX_BUCKETS << 2;
/** The radix sort's counts: each bucket's next position, then each bucket's end. */
const RADIX_SCRATCH_BYTES: u32 = RADIX_COUNTS_BYTES << 1;

/**
 * In-place MSD radix sort (American flag sort) of entries [lo, hi) by (value, arrival) from key byte d:
 * a histogram of the byte, each entry swapped straight into its bucket, then each bucket by the next
 * byte (its bounds found again by a scan, so the 2 KB of counts at `scratch` serve every level); a
 * byte all entries share is skipped without a pass. At 10^6 random values: two passes, then
 * insertion sorts of ~15 entries, each pass streaming through memory (256 write positions).
 */
function radixSort(origin: usize, step: usize, lo: u32, hi: u32, d: u32, scratch: usize): void {
  while (hi - lo > RADIX_SMALL && d < 12) { // keys are unique: 12 bytes tell any two apart
    const next = scratch, ends = scratch + RADIX_COUNTS_BYTES;
    memory.fill(next, 0, RADIX_COUNTS_BYTES);
    for (let p = lo; p < hi; p++) {
      const slot = next + (<usize>entryByte(at(origin, step, p), d) << 2);
      store<u32>(slot, load<u32>(slot) + 1);
    }
    if (load<u32>(next + (<usize>entryByte(at(origin, step, lo), d) << 2)) == hi - lo) { d++; continue; }
    let sum = lo;
    for (let b: usize = 0; b < RADIX_COUNTS_BYTES; b += 4) {
      const c = load<u32>(next + b);
      store<u32>(next + b, sum);
      sum += c;
      store<u32>(ends + b, sum);
    }
    for (let b: u32 = 0; b < RADIX_BUCKETS; b++) {
      const end = load<u32>(ends + (<usize>b << 2));
      for (let i = load<u32>(next + (<usize>b << 2)); i < end; i++) {
        const e = at(origin, step, i);
        let value = load<u64>(e), pair = load<u64>(e, 8);
        let digit = keyByte(value, <u32>pair, d);
        while (digit != b) {
          // Into its bucket's next free position; what was there is the next to place.
          const slot = next + (<usize>digit << 2);
          const j = load<u32>(slot);
          store<u32>(slot, j + 1);
          const t = at(origin, step, j);
          const tv = load<u64>(t), tp = load<u64>(t, 8);
          store<u64>(t, value); store<u64>(t, pair, 8);
          value = tv; pair = tp;
          digit = keyByte(value, <u32>pair, d);
        }
        store<u64>(e, value); store<u64>(e, pair, 8);
      }
    }
    let start = lo;
    while (start < hi) {
      const b = entryByte(at(origin, step, start), d);
      let end = start + 1;
      while (end < hi && entryByte(at(origin, step, end), d) == b) end++;
      if (end - start > 1) radixSort(origin, step, start, end, d + 1, scratch);
      start = end;
    }
    return;
  }
  insertionSort(origin, step, lo, hi, false);
}

/** Sorts the `count` entries at origin + p·step by (value, arrival), or by arrival. */
function sortEntries(origin: usize, step: usize, count: u32, byArrival: bool): void {
  if (count < 2) return;
  introSort(origin, step, 0, count, (31 - clz<u32>(count)) << 1, byArrival);
}

/** Is `address` a waiter record in use (of any adapter: the tag says so)? Checked before it is read as one. */
@inline function waiterTagged(address: u32): bool {
  if (address == 0 || (address & 7) != 0 || <u64>address + WAITER_RECORD_BYTES > (<u64>memory.size() << 16)) return false;
  return (changetype<WaiterRecord>(<usize>address).state & WAITER_TAG_MASK) == WAITER_TAG_LIVE;
}

/** …and not yet completed: a new block may join it. */
@inline function waiterLive(address: u32): bool {
  return waiterTagged(address) && (changetype<WaiterRecord>(<usize>address).state & WAITER_COMPLETED) == 0;
}

/**
 * A new CPU waiter homed on this adapter: `hostId` is handed back by
 * fenceSatisfy, `mode` WAITER_MODE_ALL or WAITER_MODE_ANY. Returns the
 * record's physical address (> 0; name it in waitBlockAdd and waiterRetire
 * on any adapter), or E_NO_WAITERS / E_BAD_ARGUMENT.
 */
export function waiterCreate(hostId: u32, mode: u32): i32 {
  const a = adapter();
  if (mode > WAITER_MODE_ANY) return E_BAD_ARGUMENT;
  if (a.waiterFreeHead == 0 && a.waiterBump >= a.waiterCapacity) return E_NO_WAITERS;
  // A released record first (last released first), else the next never used: as wait blocks are taken.
  const index = a.waiterFreeHead != 0 ? a.waiterFreeHead : a.waiterBump + 1;
  const address = <usize>a.waiterTable + <usize>(index - 1) * WAIT_PAIR_BYTES;
  const w = changetype<WaiterRecord>(address);
  if (a.waiterFreeHead != 0) a.waiterFreeHead = w.hostId;
  else a.waiterBump = index;
  a.waiterLive++;
  w.hostId = hostId;
  w.state = WAITER_TAG_LIVE | (0xFF << 8) | mode;
  w.remaining = 0;
  w.firstBlock = 0;
  return <i32>address;
}

/**
 * Adds entry `entry` of waiter `waiter` (a record address from waiterCreate,
 * on any adapter): a wait block on `fence`'s heap for `value`. Returns the
 * wait block id (> 0), or E_BAD_FENCE / E_BAD_WAITER / E_BAD_ARGUMENT (entry
 * past WAITER_MAX_ENTRIES) / E_NO_WAIT_BLOCKS / E_HEAP_FULL with nothing changed.
 */
export function waitBlockAdd(fence: u32, value: u64, waiter: u32, entry: u32): i32 {
  if (!fenceValid(fence)) return E_BAD_FENCE;
  if (!waiterLive(waiter)) return E_BAD_WAITER;
  if (entry >= WAITER_MAX_ENTRIES) return E_BAD_ARGUMENT;
  const id = blockPush(fenceAt(fence), fence, value);
  if (id < 0) return id;
  const w = changetype<WaiterRecord>(<usize>waiter);
  const wb = waitBlockAt(<u32>id);
  wb.waiter = waiter;
  wb.entry = entry;
  wb.next = w.firstBlock;
  w.firstBlock = <u32>waitBlockAddress(<u32>id);
  w.remaining++;
  return id;
}

/** Puts a wait block back on the free list: its index slot becomes the tagged free-list link. */
function waitBlockRelease(id: u32): void {
  const a = adapter();
  store<u32>(heapIndexAddress(id), a.waitBlockFreeHead | WAIT_BLOCK_FREE);
  a.waitBlockFreeHead = id;
  a.waitBlockLive--;
}

/** Removes entry `index` of the heap at `block`, which holds `count` entries after it (the last, at `count`, refills the hole). */
function heapRemove(block: usize, count: u32, index: u32): void {
  if (index == count) return;
  const indexTable = <usize>adapter().heapIndexTable;
  const last = entryAt(block, count);
  const value = entryValue(last), arrival = entryArrival(last), waitBlock = entryBlock(last);
  let at: u32;
  if (index == 0) {
    // A pop: the last entry almost always belongs near the bottom, so move the
    // hole down to a leaf along the smallest children without comparing, then
    // sift the last entry up from there.
    at = siftUp(block, indexTable, holeToLeaf(block, indexTable, count), value, arrival);
  } else {
    at = siftUp(block, indexTable, index, value, arrival);
    if (at == index) at = siftDown(block, indexTable, count, index, value, arrival);
  }
  place(block, indexTable, at, value, arrival, waitBlock);
}

/**
 * Pops every wait block of `fence` whose value <= currentValue, smallest
 * first. Each block leaves the heap (it stays on its waiter's chain, DONE)
 * and counts its waiter down; a SatisfiedWait (host id, entry, completed) per
 * block goes to the out buffer. Stops after `limit` records; returns how many
 * it wrote (call again while it returns `limit`). A completed waiter must be
 * retired (waiterRetire) before the next fenceSatisfy.
 */
export function fenceSatisfy(fence: u32, currentValue: u64, limit: u32): i32 {
  if (!fenceValid(fence)) return E_BAD_FENCE;
  const a = adapter();
  const f = fenceAt(fence);
  const max = min<u32>(limit, (a.outCapacity << 2) / SATISFIED_WAIT_BYTES);
  const out = <usize>a.outBuffer;
  // Three passes over the batch, each over what the one before found, so that the cache misses of one block or
  // record do not wait for another's: the heap's pops (their block ids into the records' waiter words), then each
  // popped block (its state, its entry, its waiter's record address), then each waiter record. A block's, a
  // record's and its index slot's lines are made in arrival order and read here in value order: at 10^6 waiters
  // each is a miss; one after another in one loop they were a chain of dependent misses per waiter.
  let written: u32 = 0;
  satisfyPrepare(f, currentValue);
  while (written < max) {
    const id = popOne(f, currentValue);
    if (id == 0) break;
    changetype<SatisfiedWait>(out + <usize>written * SATISFIED_WAIT_BYTES).waiter = id;
    written++;
  }
  for (let k: u32 = 0; k < written; k++) {
    const record = changetype<SatisfiedWait>(out + <usize>k * SATISFIED_WAIT_BYTES);
    const id = record.waiter;
    store<u32>(heapIndexAddress(id), WAIT_BLOCK_POPPED);
    const wb = waitBlockAt(id);
    const entry = wb.entry;
    wb.entry = entry | WAIT_BLOCK_DONE;
    record.waiter = wb.waiter;
    record.entry = entry;
  }
  for (let k: u32 = 0; k < written; k++) {
    const record = changetype<SatisfiedWait>(out + <usize>k * SATISFIED_WAIT_BYTES);
    const w = changetype<WaiterRecord>(<usize>record.waiter);
    const entry = record.entry;
    assert((w.state & WAITER_TAG_MASK) == WAITER_TAG_LIVE && (w.state & WAITER_COMPLETED) == 0, 'fenceSatisfy: a block of a completed or free waiter was still in a heap');
    w.remaining--;
    const completed = (w.state & WAITER_MODE_ANY) != 0 || w.remaining == 0;
    if (completed) w.state = (w.state & ~(<u32>0xFF << 8)) | (entry << 8) | WAITER_COMPLETED;
    record.waiter = w.hostId;
    record.completed = completed ? 1 : 0;
  }
  return <i32>written;
}

/**
 * Is physical `address` one of this adapter's `count` records at `base` (its wait blocks' or its waiter
 * records' column of the pairs, WAIT_PAIR_BYTES apart)?
 */
@inline function inPairs(address: usize, base: u32, count: u32): bool {
  return address >= <usize>base && address < <usize>base + <usize>count * WAIT_PAIR_BYTES && (address - base) % WAIT_PAIR_BYTES == 0;
}

/**
 * Retires waiter `waiter` (completed, timed out, released) as far as this
 * adapter holds it: its wait blocks here still in a heap leave it (their fence
 * ids go to the out buffer, u32 each: refresh their MonitoredValue), every
 * block of it here is freed, and the record too when it is homed here. Call
 * it on every adapter the waiter has blocks on, its home adapter last, with
 * nothing else in between. Returns the count of fence ids, or E_BAD_WAITER.
 */
export function waiterRetire(waiter: u32): i32 {
  const a = adapter();
  if (!waiterTagged(waiter)) return E_BAD_WAITER;
  const w = changetype<WaiterRecord>(<usize>waiter);
  const capacity = a.outCapacity; // u32 words
  let changed: u32 = 0;
  let block = w.firstBlock;
  while (block != 0) {
    const wb = changetype<WaitBlock>(<usize>block);
    const next = wb.next;
    if (inPairs(block, a.waitBlockTable, a.waitBlockCapacity)) {
      const id = <u32>((<usize>block - a.waitBlockTable) / WAIT_PAIR_BYTES) + 1;
      const index = load<u32>(heapIndexAddress(id));
      if (index != WAIT_BLOCK_POPPED) {
        removeWaitBlock(fenceAt(wb.fence), id, index);
        assert(changed < capacity, 'waiterRetire: more fences than the out buffer holds');
        store<u32>(outWord(changed++), wb.fence);
      }
      waitBlockRelease(id);
    }
    block = next;
  }
  if (inPairs(waiter, a.waiterTable, a.waiterCapacity)) {
    w.state = 0;
    w.hostId = a.waiterFreeHead;
    a.waiterFreeHead = <u32>((<usize>waiter - a.waiterTable) / WAIT_PAIR_BYTES) + 1;
    a.waiterLive--;
  }
  return <i32>changed;
}

/**
 * The entries of waiter `waiter` still waiting (u32 each, in the out buffer,
 * newest block first): what tools list for a stuck waiter. Returns their
 * count, or E_BAD_WAITER.
 */
export function waiterPending(waiter: u32): i32 {
  const a = adapter();
  if (!waiterTagged(waiter)) return E_BAD_WAITER;
  const capacity = a.outCapacity;
  let count: u32 = 0;
  let block = changetype<WaiterRecord>(<usize>waiter).firstBlock;
  while (block != 0 && count < capacity) {
    const wb = changetype<WaitBlock>(<usize>block);
    if ((wb.entry & WAIT_BLOCK_DONE) == 0) store<u32>(outWord(count++), wb.entry);
    block = wb.next;
  }
  return <i32>count;
}

/**
 * Host ids of the waiters with a block in `fence`'s heap, waiters
 * [start, start + limit) in storage order (u32 each, out buffer; a large fence:
 * its heap part, then its run, then its buffer). Returns how many
 * it wrote, or E_BAD_FENCE.
 */
export function fenceWaiters(fence: u32, start: u32, limit: u32): i32 {
  if (!fenceValid(fence)) return E_BAD_FENCE;
  const a = adapter();
  const f = fenceAt(fence);
  const max = min<u32>(limit, a.outCapacity);
  let written: u32 = 0;
  const large = isLarge(f);
  const heapBase = large ? <usize>largeOf(f).entries : <usize>f.heapBlock;
  const heapCount = large ? largeOf(f).heapCount : f.heapCount;
  for (let i = start; i < heapCount && written < max; i++) {
    const wb = waitBlockAt(entryBlock(entryAt(heapBase, i)));
    store<u32>(outWord(written++), changetype<WaiterRecord>(<usize>wb.waiter).hostId);
  }
  if (large) {
    // Then the run's live entries and the buffer's, in k order.
    const h = largeOf(f);
    const end = bulkEnd(f, h);
    let position = heapCount;
    for (let k = h.runHead; k < h.bulkCount && written < max; k++) {
      const id = entryBlock(bulkAt(end, k));
      if (id == 0) continue;
      if (position++ < start) continue;
      store<u32>(outWord(written++), changetype<WaiterRecord>(<usize>waitBlockAt(id).waiter).hostId);
    }
  }
  return <i32>written;
}

/** Smallest waited value of the fence, UINT64_MAX with no waiter. */
export function fenceMinWaited(fence: u32): u64 {
  const e = smallestEntry(fenceAt(fence));
  return e == 0 ? UINT64_MAX : entryValue(e);
}

/** What MonitoredValue must be (NF-02): smallest waited value − 1, or UINT64_MAX. */
export function fenceMonitoredTarget(fence: u32): u64 {
  const e = smallestEntry(fenceAt(fence));
  return e == 0 ? UINT64_MAX : entryValue(e) - 1;
}

export function fenceWaiterCount(fence: u32): u32 { return fenceAt(fence).heapCount; }

// ───────────────────────────── arrival renumbering ─────────────────────────────
//
// Runs once every 2^32 − 1 waits on an adapter. Each heap's entries are sorted
// by arrival in place (a binary max-heap on arrival, then extraction), numbered
// 0, 1, 2, … in that order, and heapified again by (value, arrival); the
// adapter's sequence continues after the largest heap. Relative order inside
// every heap is unchanged, so no wake order changes; only the numbers do.

/** Floyd's heapify by (value, arrival) of the `count` entries at `block`, then every entry's index afresh. */
function heapRestore(block: usize, indexTable: usize, count: u32): void {
  if (count > 1) {
    for (let i = ((count - 2) >> 2) + 1; i > 0; i--) {
      const e = entryAt(block, i - 1);
      const value = entryValue(e), pair = load<u64>(e, 8);
      const at = siftDown(block, indexTable, count, i - 1, value, <u32>pair);
      store<u64>(entryAt(block, at), value);
      store<u64>(entryAt(block, at), pair, 8);
    }
  }
  for (let i: u32 = 0; i < count; i++) store<u32>(indexSlot(indexTable, entryBlock(entryAt(block, i))), i);
}

function heapRenumber(block: usize, indexTable: usize, count: u32): void {
  sortEntries(block, HEAP_ENTRY_BYTES, count, true);
  for (let i: u32 = 0; i < count; i++) store<u32>(entryAt(block, i), i, offsetof<HeapEntry>('arrival'));
  heapRestore(block, indexTable, count);
}

/**
 * A large fence: the bulk compacted, the heap part and the bulk each sorted by arrival and numbered
 * together (a merge), the heap heapified again and the bulk sorted by (value, arrival) into one run.
 */
function largeRenumber(f: FenceRecord, indexTable: usize): void {
  const h = largeOf(f);
  bulkCompact(f, h);
  const end = bulkEnd(f, h);
  const heapBase = <usize>h.entries, heapCount = h.heapCount, bulkCount = h.bulkCount;
  sortEntries(heapBase, HEAP_ENTRY_BYTES, heapCount, true);
  sortEntries(bulkAt(end, 0), STEP_DOWN, bulkCount, true);
  let i: u32 = 0, k: u32 = 0, rank: u32 = 0;
  while (i < heapCount || k < bulkCount) {
    const fromHeap = k >= bulkCount || (i < heapCount && entryArrival(entryAt(heapBase, i)) < entryArrival(bulkAt(end, k)));
    const e = fromHeap ? entryAt(heapBase, i++) : bulkAt(end, k++);
    store<u32>(e, rank++, offsetof<HeapEntry>('arrival'));
  }
  heapRestore(heapBase, indexTable, heapCount);
  sortEntries(bulkAt(end, 0), STEP_DOWN, bulkCount, false);
  for (let j: u32 = 0; j < bulkCount; j++) store<u32>(indexSlot(indexTable, entryBlock(bulkAt(end, j))), WAIT_BLOCK_BULK | j);
  h.runHead = 0; h.runEnd = bulkCount; h.runLive = bulkCount;
}

/** Gives every live heap's entries their arrival rank; the sequence restarts after the largest heap. */
function arrivalsRenumber(): void {
  const a = adapter();
  const indexTable = <usize>a.heapIndexTable;
  let next: u32 = 0;
  for (let id: u32 = 1; id <= a.fenceCapacity; id++) {
    const f = changetype<FenceRecord>(<usize>a.fenceTable + <usize>(id - 1) * FENCE_RECORD_BYTES);
    if (f.state != FENCE_STATE_LIVE || f.heapCount == 0) continue;
    if (isLarge(f)) largeRenumber(f, indexTable);
    else heapRenumber(<usize>f.heapBlock, indexTable, f.heapCount);
    next = max<u32>(next, f.heapCount);
  }
  a.arrivalSequence = next;
}

/** Checks the heap invariants of the `count` entries at `block`; returns 0 or the first bad index + 1. */
function heapPartCheck(fence: u32, block: usize, count: u32): u32 {
  for (let i: u32 = 0; i < count; i++) {
    const e = entryAt(block, i);
    if (load<u32>(heapIndexAddress(entryBlock(e))) != i) return i + 1; // also fails when tagged free
    if (waitBlockAt(entryBlock(e)).fence != fence) return i + 1;
    if (i > 0 && before(entryValue(e), entryArrival(e), entryAt(block, (i - 1) >> 2))) return i + 1;
  }
  return 0;
}

/**
 * Checks every invariant of a fence's waiters; returns OK or, for the first bad entry, a negative:
 * −(heap index + 1), or for a large fence's bulk entry k −(heap part count + k + 1), or for its
 * counts −(1 << 30).
 */
export function heapCheck(fence: u32): i32 {
  if (!fenceValid(fence)) return E_BAD_FENCE;
  const f = fenceAt(fence);
  if (!isLarge(f)) {
    const bad = heapPartCheck(fence, <usize>f.heapBlock, f.heapCount);
    return bad == 0 ? OK : -(<i32>bad);
  }
  const h = largeOf(f);
  const COUNTS = -(1 << 30);
  if (h.runHead > h.runEnd || h.runEnd > h.bulkCount || <u64>h.heapCount + h.bulkCount > (<u64>1 << f.heapClass)) return COUNTS;
  if (h.heapCount + h.runLive + (h.bulkCount - h.runEnd) != f.heapCount) return COUNTS;
  const bad = heapPartCheck(fence, <usize>h.entries, h.heapCount);
  if (bad != 0) return -(<i32>bad);
  const end = bulkEnd(f, h);
  const bufferMin = bulkAt(end, h.bufferMin);
  if (h.bulkCount > h.runEnd && (h.bufferMin < h.runEnd || h.bufferMin >= h.bulkCount)) return COUNTS;
  let live: u32 = 0;
  let previous: usize = 0;
  for (let k = h.runHead; k < h.bulkCount; k++) {
    const e = bulkAt(end, k);
    const id = entryBlock(e);
    const failed = -(<i32>(h.heapCount + k) + 1);
    const inRun = k < h.runEnd;
    if (id == 0) {
      // A tombstone: only inside the run, never at a live run's head.
      if (!inRun || k == h.runHead) return failed;
      continue;
    }
    if (load<u32>(heapIndexAddress(id)) != (WAIT_BLOCK_BULK | k)) return failed;
    if (waitBlockAt(id).fence != fence) return failed;
    if (inRun) {
      if (previous != 0 && before(entryValue(e), entryArrival(e), previous)) return failed;
      previous = e;
      live++;
    } else if (e != bufferMin && before(entryValue(e), entryArrival(e), bufferMin)) return failed;
  }
  if (live != h.runLive) return COUNTS;
  return OK;
}

/**
 * Benchmark driver (waiterHeap.vsFlatqueue): pushes `count` values read from
 * `values` (u64[]) onto the fence's heap through waitBlockAdd, then pops them
 * all through satisfyPrepare + popOne + waitBlockRelease, the pop path fenceSatisfy uses. Returns a checksum of
 * the popped order so the work cannot be optimized away.
 */
export function heapBench(fence: u32, values: u32, count: u32): u64 {
  if (!fenceValid(fence)) return <u64>E_BAD_FENCE;
  const f0 = fenceAt(fence);
  for (let i: u32 = 0; i < count; i++) {
    // The heap alone: blocks with no waiter record (nothing pops them but this loop).
    const r = blockPush(f0, fence, load<u64>(<usize>values + (<usize>i << 3)));
    if (r < 0) return <u64>r;
  }
  let checksum: u64 = 0;
  let previous: u64 = 0;
  const f = fenceAt(fence);
  satisfyPrepare(f, UINT64_MAX);
  while (f.heapCount > 0) {
    const id = popOne(f, UINT64_MAX);
    const value = poppedValue;
    assert(value >= previous, 'heapBench: popped out of order');
    previous = value;
    waitBlockRelease(id);
    checksum = checksum * 31 + value;
  }
  return checksum;
}
