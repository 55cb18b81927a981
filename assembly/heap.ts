// CPU waiters (NF-02, NF-03, NF-08): each waiter's record, and the min-heap
// of each fence its wait blocks are in.
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
// Invariants (checked by heapCheck, used in tests):
//   entry(parent(i)) <= entry(i)              for every i > 0, parent(i) = (i - 1) >> 2
//   heapIndex(entry(i).waitBlock) == i         (the adapter's heapIndexTable, free tag clear)
//   MonitoredValue target == entry(0).value - 1, or UINT64_MAX when empty

import {
  FenceRecord, HeapEntry, HEAP_ENTRY_BYTES, HEAP_FIRST_CLASS, WaitBlock, WAIT_BLOCK_FREE, UINT64_MAX,
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

/** Grows the fence's heap block to the next class; false when it cannot. */
function heapGrow(f: FenceRecord): bool {
  const a = adapter();
  const nextClass: u32 = f.heapBlock == 0 ? HEAP_FIRST_CLASS : <u32>f.heapClass + 1;
  if (nextClass > a.heapLimitClass) return false;
  const block = heapBlockAlloc(nextClass);
  if (block == 0) return false;
  if (f.heapBlock != 0) {
    memory.copy(<usize>block, <usize>f.heapBlock, <usize>f.heapCount * HEAP_ENTRY_BYTES);
    heapBlockFree(f.heapBlock, f.heapClass);
  }
  f.heapBlock = block;
  f.heapClass = <u8>nextClass;
  return true;
}

/**
 * Pushes a new wait block of `fence` for `value` onto its heap; the block's
 * waiter fields are the caller's. Returns the block id, or E_NO_WAIT_BLOCKS /
 * E_HEAP_FULL with nothing changed.
 */
@inline function blockPush(f: FenceRecord, fence: u32, value: u64): i32 {
  const a = adapter();
  if (a.waitBlockFreeHead == 0 && a.waitBlockBump >= a.waitBlockCapacity) return E_NO_WAIT_BLOCKS;
  if (f.heapBlock == 0 || f.heapCount == (<u32>1 << f.heapClass)) {
    if (!heapGrow(f)) return E_HEAP_FULL;
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
  const block = <usize>f.heapBlock;
  const index = siftUp(block, indexTable, f.heapCount, value, arrival);
  place(block, indexTable, index, value, arrival, id);
  f.heapCount++;
  a.heapPushes++;
  return <i32>id;
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

/** Removes heap entry `index` of fence f (the hole is refilled by the last entry). */
function removeAt(f: FenceRecord, index: u32): void {
  const a = adapter();
  const count = f.heapCount - 1;
  f.heapCount = count;
  a.heapPops++;
  if (index == count) return;
  const block = <usize>f.heapBlock;
  const indexTable = <usize>a.heapIndexTable;
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
  while (written < max && f.heapCount > 0) {
    const top = <usize>f.heapBlock;
    if (entryValue(top) > currentValue) break;
    const id = entryBlock(top);
    removeAt(f, 0);
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
        const f = fenceAt(wb.fence);
        assert(index < f.heapCount && entryBlock(entryAt(f.heapBlock, index)) == id, 'waiterRetire: heap index out of sync');
        removeAt(f, index);
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
 * Host ids of the waiters with a block in `fence`'s heap, heap entries
 * [start, start + limit) (u32 each, out buffer, heap order). Returns how many
 * it wrote, or E_BAD_FENCE.
 */
export function fenceWaiters(fence: u32, start: u32, limit: u32): i32 {
  if (!fenceValid(fence)) return E_BAD_FENCE;
  const a = adapter();
  const f = fenceAt(fence);
  const max = min<u32>(limit, a.outCapacity);
  let written: u32 = 0;
  for (let i = start; i < f.heapCount && written < max; i++) {
    const wb = waitBlockAt(entryBlock(entryAt(f.heapBlock, i)));
    store<u32>(outWord(written++), changetype<WaiterRecord>(<usize>wb.waiter).hostId);
  }
  return <i32>written;
}

/** Smallest waited value of the fence, UINT64_MAX with no waiter. */
export function fenceMinWaited(fence: u32): u64 {
  const f = fenceAt(fence);
  return f.heapCount == 0 ? UINT64_MAX : entryValue(f.heapBlock);
}

/** What MonitoredValue must be (NF-02): smallest waited value − 1, or UINT64_MAX. */
export function fenceMonitoredTarget(fence: u32): u64 {
  const f = fenceAt(fence);
  return f.heapCount == 0 ? UINT64_MAX : entryValue(f.heapBlock) - 1;
}

export function fenceWaiterCount(fence: u32): u32 { return fenceAt(fence).heapCount; }

// ───────────────────────────── arrival renumbering ─────────────────────────────
//
// Runs once every 2^32 − 1 waits on an adapter. Each heap's entries are sorted
// by arrival in place (a binary max-heap on arrival, then extraction), numbered
// 0, 1, 2, … in that order, and heapified again by (value, arrival); the
// adapter's sequence continues after the largest heap. Relative order inside
// every heap is unchanged, so no wake order changes; only the numbers do.

/** Swaps entries i and j (16 bytes each). */
@inline function swapEntries(block: usize, i: u32, j: u32): void {
  const a = entryAt(block, i), b = entryAt(block, j);
  const av = load<u64>(a), ap = load<u64>(a, 8);
  store<u64>(a, load<u64>(b)); store<u64>(a, load<u64>(b, 8), 8);
  store<u64>(b, av); store<u64>(b, ap, 8);
}

/** Binary max-heap sift on arrival over entries [0, count). */
function arrivalSiftDown(block: usize, count: u32, index: u32): void {
  while (true) {
    let largest = index;
    const left = (index << 1) + 1, right = left + 1;
    if (left < count && entryArrival(entryAt(block, left)) > entryArrival(entryAt(block, largest))) largest = left;
    if (right < count && entryArrival(entryAt(block, right)) > entryArrival(entryAt(block, largest))) largest = right;
    if (largest == index) return;
    swapEntries(block, index, largest);
    index = largest;
  }
}

function heapRenumber(block: usize, indexTable: usize, count: u32): void {
  // Heapsort by arrival: ascending order of arrival, in place.
  for (let i = count >> 1; i > 0; i--) arrivalSiftDown(block, count, i - 1);
  for (let end = count - 1; end > 0; end--) {
    swapEntries(block, 0, end);
    arrivalSiftDown(block, end, 0);
  }
  for (let i: u32 = 0; i < count; i++) store<u32>(entryAt(block, i), i, offsetof<HeapEntry>('arrival'));
  // Floyd's heapify by (value, arrival), then every entry's index afresh.
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

/** Gives every live heap's entries their arrival rank; the sequence restarts after the largest heap. */
function arrivalsRenumber(): void {
  const a = adapter();
  const indexTable = <usize>a.heapIndexTable;
  let next: u32 = 0;
  for (let id: u32 = 1; id <= a.fenceCapacity; id++) {
    const f = changetype<FenceRecord>(<usize>a.fenceTable + <usize>(id - 1) * FENCE_RECORD_BYTES);
    if (f.state != FENCE_STATE_LIVE || f.heapCount == 0) continue;
    heapRenumber(<usize>f.heapBlock, indexTable, f.heapCount);
    next = max<u32>(next, f.heapCount);
  }
  a.arrivalSequence = next;
}

/** Checks every heap invariant of a fence; returns OK or the first bad index + 1 as a negative. */
export function heapCheck(fence: u32): i32 {
  if (!fenceValid(fence)) return E_BAD_FENCE;
  const f = fenceAt(fence);
  const block = <usize>f.heapBlock;
  for (let i: u32 = 0; i < f.heapCount; i++) {
    const e = entryAt(block, i);
    if (load<u32>(heapIndexAddress(entryBlock(e))) != i) return -(<i32>i + 1); // also fails when tagged free
    if (waitBlockAt(entryBlock(e)).fence != fence) return -(<i32>i + 1);
    if (i > 0 && before(entryValue(e), entryArrival(e), entryAt(block, (i - 1) >> 2))) return -(<i32>i + 1);
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
  while (f.heapCount > 0) {
    const top = <usize>f.heapBlock;
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
