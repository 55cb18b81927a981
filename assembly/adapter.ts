// One adapter's private state: formatting it, fence storage (pages, slots,
// GPU VA), and the tables every other part indexes.
//
// Why this file is long: it is one region's code. adapterFormat lays out every
// table of an adapter's private region, and fence storage (pages, slots, GPU
// VA) is what most of those tables hold; every other file only indexes them.
//
// Each adapter is its own instance of this module. The only per-instance
// state is the wasm global `adapterBase`, set by adapterFormat/adapterAttach;
// everything else is in the private region, so any instance attached to the
// same region sees the same adapter.

import {
  AdapterHeader, ADAPTER_HEADER_BYTES, REGION_MAGIC, LAYOUT_VERSION, REGION_KIND_ADAPTER,
  REGION_KIND_SYSTEM, REGION_KIND_LOCAL, PAGE_BYTES, PAGE_SHIFT,
  FenceRecord, FENCE_RECORD_BYTES, FENCE_STATE_FREE, FENCE_STATE_LIVE, MEMORY_SYSTEM, MEMORY_LOCAL,
  PageDescriptor, PAGE_DESCRIPTOR_BYTES, PAGE_BITMAP_OFFSET, PAGE_BITMAP_WORDS, NO_OWNER, NOT_LISTED,
  PAGE_ROLE_CURRENT, PAGE_ROLE_MONITORED,
  ProcessRecord, PROCESS_RECORD_BYTES, PARTIAL_LISTS,
  WAIT_BLOCK_BYTES, ARENA_CLASSES, ARENA_BLOCK_BYTES, ARENA_MAX_CLASS, HEAP_MIN_CLASS, HEAP_MAX_CLASS,
  EngineRecord, ENGINE_RECORD_BYTES, QUEUE_RECORD_BYTES, COMMAND_BYTES, UINT64_MAX,
  OK, E_BAD_REGION, E_BAD_VERSION, E_TOO_SMALL, E_NO_PAGES, E_NO_FENCE_RECORDS, E_NO_PAGE_DESCRIPTORS,
  E_BAD_FENCE, E_NO_GPU_VA, E_BAD_PROCESS, E_BAD_ARGUMENT, align8,
  GPU_VA_READ, GPU_VA_READ_WRITE, GPU_VA_ACCESS_MASK,
  FENCE_INDEX_MULTIPLIER, FENCE_INDEX_MIN_SLOTS, FENCE_KIND_MONITORED,
} from './layout';
import { regionCheck, regionAllocPage, regionFreePage } from './region';
import { WaitBlock, WAIT_PAIR_BYTES, LargeHeap, HEAP_LARGE_CLASS } from './layout';

/** Physical base of the attached adapter's private region (per instance). */
export let adapterBase: u32 = 0;

@inline export function adapter(): AdapterHeader { return changetype<AdapterHeader>(<usize>adapterBase); }

@inline export function fenceAt(id: u32): FenceRecord {
  return changetype<FenceRecord>(<usize>adapter().fenceTable + <usize>(id - 1) * FENCE_RECORD_BYTES);
}
/** Fence `id`'s lastSignaled slot (layout.ts: the u64 table right after the fence records). */
@inline export function lastSignaledAddress(id: u32): usize {
  const a = adapter();
  return <usize>a.fenceTable + <usize>a.fenceCapacity * FENCE_RECORD_BYTES + (<usize>(id - 1) << 3);
}
@inline export function pageAt(index: u32): PageDescriptor {
  return changetype<PageDescriptor>(<usize>adapter().pageTable + <usize>index * PAGE_DESCRIPTOR_BYTES);
}
@inline export function processAt(slot: u32): ProcessRecord {
  return changetype<ProcessRecord>(<usize>adapter().processTable + <usize>slot * PROCESS_RECORD_BYTES);
}
@inline export function waitBlockAt(id: u32): WaitBlock {
  return changetype<WaitBlock>(<usize>adapter().waitBlockTable + <usize>(id - 1) * WAIT_PAIR_BYTES);
}
/** Physical address of wait block `id`. */
@inline export function waitBlockAddress(id: u32): usize {
  return <usize>adapter().waitBlockTable + <usize>(id - 1) * WAIT_PAIR_BYTES;
}
/** Where wait block `id`'s heap index lives (the dense heapIndexTable). */
@inline export function heapIndexAddress(id: u32): usize {
  return <usize>adapter().heapIndexTable + (<usize>(id - 1) << 2);
}
@inline export function engineAt(index: u32): EngineRecord {
  return changetype<EngineRecord>(<usize>adapter().engineTable + <usize>index * ENGINE_RECORD_BYTES);
}
@inline export function outWord(index: u32): usize {
  return <usize>adapter().outBuffer + (<usize>index << 2);
}

/** Is `id` a live fence of this adapter? */
@inline export function fenceValid(id: u32): bool {
  const a = adapter();
  return id != 0 && id <= a.fenceCapacity && fenceAt(id).state == FENCE_STATE_LIVE;
}

// ─────────────────────────────── format ────────────────────────────────

/**
 * Lays out an adapter's private region and attaches this instance to it.
 * Returns OK, or E_TOO_SMALL when the tables do not fit; the host computes the
 * size it needs with adapterRegionBytes (same arguments) first.
 */
export function adapterFormat(
  base: u32, sizeBytes: u32, adapterIndex: u32, capsBits: u32, monitoredValueStride: u32,
  systemRegion: u32, localRegion: u32,
  fenceCapacity: u32, processCapacity: u32, waitBlockCapacity: u32, heapArenaBytes: u32,
  heapLimitClass: u32, gpuVaPagesPerProcess: u32, gpuVaBase: u64,
  engineCount: u32, queueCapacity: u32, ringEntries: u32, pendingCapacity: u32, outCapacity: u32,
): i32 {
  if (regionCheck(systemRegion, REGION_KIND_SYSTEM) != OK) return E_BAD_REGION;
  if (localRegion != 0 && regionCheck(localRegion, REGION_KIND_LOCAL) != OK) return E_BAD_REGION;
  if (monitoredValueStride < 8 || (monitoredValueStride & 7) != 0 || monitoredValueStride > PAGE_BYTES) return E_BAD_ARGUMENT;
  if (heapLimitClass < HEAP_MIN_CLASS || heapLimitClass > HEAP_MAX_CLASS) return E_BAD_ARGUMENT;
  if (engineCount == 0 || processCapacity == 0 || fenceCapacity == 0) return E_BAD_ARGUMENT;
  if (processCapacity > 0x1_0000) return E_BAD_ARGUMENT; // a fence record keeps its owner in 16 bits
  if (ringEntries == 0 || arenaBlockBytes(ringEntries, COMMAND_BYTES) == 0) return E_BAD_ARGUMENT;
  const needed = adapterRegionBytes(fenceCapacity, processCapacity, waitBlockCapacity, heapArenaBytes,
    gpuVaPagesPerProcess, engineCount, queueCapacity, ringEntries, pendingCapacity, outCapacity);
  if (needed > sizeBytes) return E_TOO_SMALL;
  // The region must be fresh memory (zero, as a new WebAssembly.Memory is): only the header is zeroed
  // here. The tables are not written (the fence index, the process, GPU VA, engine, queue and out
  // tables start zero as they are), so a page of them becomes resident when it is first used, and
  // resident memory grows with what is used, not with the limits. The fence records and page
  // descriptors are zeroed when first handed out (fenceBump, pageBump); the arena (the last
  // heapArenaBytes) is never zeroed: every block is written before it is read (heap entries below
  // heapCount, ring commands between head and tail). The wait-block and waiter free lists are written
  // below, a link per record.
  memory.fill(<usize>base, 0, ADAPTER_HEADER_BYTES);

  const a = changetype<AdapterHeader>(<usize>base);
  a.magic = REGION_MAGIC;
  a.version = LAYOUT_VERSION;
  a.kind = REGION_KIND_ADAPTER;
  a.headerBytes = ADAPTER_HEADER_BYTES;
  a.base = base;
  a.sizeBytes = sizeBytes;
  a.adapterIndex = adapterIndex;
  a.capsBits = capsBits;
  a.monitoredValueStride = monitoredValueStride;
  a.systemRegion = systemRegion;
  a.localRegion = localRegion;
  a.heapLimitClass = heapLimitClass;
  a.gpuVaBase = gpuVaBase;
  a.gpuVaPagesPerProcess = gpuVaPagesPerProcess;

  let at = base + ADAPTER_HEADER_BYTES;
  a.fenceTable = at;      a.fenceCapacity = fenceCapacity;         at += fenceCapacity * (FENCE_RECORD_BYTES + 8); // + lastSignaled u64[]
  const pageCapacity = <u32>pageDescriptorsFor(fenceCapacity, processCapacity); // fits: the region holds them
  a.pageTable = at;       a.pageCapacity = pageCapacity;           at += pageCapacity * PAGE_DESCRIPTOR_BYTES;
  a.processTable = at;    a.processCapacity = processCapacity;     at += processCapacity * PROCESS_RECORD_BYTES;
  const indexSlots = <u32>fenceIndexSlots(fenceCapacity);
  a.fenceIndexTable = at; a.fenceIndexShift = 32 - ctz<u32>(indexSlots); at += indexSlots * 4;
  at = (at + WAIT_PAIR_BYTES - 1) & ~(WAIT_PAIR_BYTES - 1); // pairs never straddle a cache line
  a.waitBlockTable = at;  a.waitBlockCapacity = waitBlockCapacity;
  a.waiterTable = at + WAIT_BLOCK_BYTES; a.waiterCapacity = waitBlockCapacity; at += waitBlockCapacity * WAIT_PAIR_BYTES;
  a.heapIndexTable = at;                                           at += align8(waitBlockCapacity * 4);
  a.heapFreeTable = at;                                            at += align8(ARENA_CLASSES * 4);
  a.gpuVaTable = at;                                               at += align8(processCapacity * gpuVaPagesPerProcess * 4);
  a.engineTable = at;     a.engineCount = engineCount;             at += engineCount * ENGINE_RECORD_BYTES;
  const pendingLists = at;                                         at += align8(engineCount * pendingCapacity * 4);
  a.pendingCapacity = pendingCapacity;
  a.queueTable = at;      a.queueCapacity = queueCapacity;         at += queueCapacity * QUEUE_RECORD_BYTES;
  a.ringEntries = ringEntries;                                     a.ringClass = arenaClassOf(<u64>ringEntries * COMMAND_BYTES);
  a.outBuffer = at;       a.outCapacity = outCapacity;             at += align8(outCapacity * 4);
  at = (at + 15) & ~15;
  a.heapArena = at;       a.heapArenaBytes = heapArenaBytes;       a.heapArenaBump = 0;

  // Free lists thread through the released records (index + 1; 0 ends the list); past them, the
  // never-used records in order (fenceBump, pageBump): the same order a list of every record made at
  // format would give, without touching the table.
  a.fenceFreeHead = 0; a.fenceBump = 0;
  a.pageFreeHead = 0;  a.pageBump = 0;
  // Wait blocks and waiter records likewise (waitBlockBump, waiterBump; LAYOUT_VERSION 12): threading
  // their lists here wrote a word of every pair and of the heap index table, resident memory sized by
  // the limit (36 MiB at 10^6 wait blocks) before the first wait.
  a.waitBlockFreeHead = 0; a.waitBlockBump = 0;
  a.waiterFreeHead = 0;    a.waiterBump = 0;
  for (let e: u32 = 0; e < engineCount; e++) {
    changetype<EngineRecord>(<usize>a.engineTable + <usize>e * ENGINE_RECORD_BYTES).pendingList = pendingLists + e * pendingCapacity * 4;
  }
  adapterBase = base;
  return OK;
}

/** Slots of the fence index (fenceAtCurrentValue): twice the fence capacity, a power of two, at least FENCE_INDEX_MIN_SLOTS. */
function fenceIndexSlots(fenceCapacity: u32): u64 {
  let slots: u64 = FENCE_INDEX_MIN_SLOTS;
  while (slots < <u64>fenceCapacity * 2) slots <<= 1;
  return slots;
}

/** Pages a fence table of this size can need: two per fence when every fence is shareable. */
function pageDescriptorsFor(fenceCapacity: u32, processCapacity: u32): u64 {
  return <u64>fenceCapacity * 2 + <u64>processCapacity * PARTIAL_LISTS + 16;
}

/**
 * Bytes adapterFormat needs for these capacities (the host sizes the region
 * with it), a page multiple; 0xFFFFFFFF when that is 4 GiB or more. Every term
 * is computed in 64 bits, so no capacity up to 2^32 − 1 can wrap it. Rings are
 * not part of it: each comes from the arena (heapArenaBytes) when its queue is
 * created.
 */
export function adapterRegionBytes(
  fenceCapacity: u32, processCapacity: u32, waitBlockCapacity: u32, heapArenaBytes: u32,
  gpuVaPagesPerProcess: u32, engineCount: u32, queueCapacity: u32, ringEntries: u32,
  pendingCapacity: u32, outCapacity: u32,
): u32 {
  let bytes: u64 = ADAPTER_HEADER_BYTES;
  bytes += <u64>fenceCapacity * (FENCE_RECORD_BYTES + 8); // the records, then lastSignaled u64[fences]
  bytes += fenceIndexSlots(fenceCapacity) * 4;
  bytes += pageDescriptorsFor(fenceCapacity, processCapacity) * PAGE_DESCRIPTOR_BYTES;
  bytes += <u64>processCapacity * PROCESS_RECORD_BYTES;
  bytes += <u64>waitBlockCapacity * WAIT_PAIR_BYTES + WAIT_PAIR_BYTES; // + the alignment of the pairs
  bytes += align8u64(<u64>waitBlockCapacity * 4);
  bytes += align8u64(<u64>ARENA_CLASSES * 4);
  bytes += align8u64(<u64>processCapacity * gpuVaPagesPerProcess * 4);
  bytes += <u64>engineCount * ENGINE_RECORD_BYTES + align8u64(<u64>engineCount * pendingCapacity * 4);
  bytes += <u64>queueCapacity * QUEUE_RECORD_BYTES;
  bytes += align8u64(<u64>outCapacity * 4) + 16 + <u64>heapArenaBytes;
  bytes = (bytes + PAGE_BYTES - 1) & ~(<u64>PAGE_BYTES - 1);
  return bytes > 0xFFFF_F000 ? 0xFFFF_FFFF : <u32>bytes;
}
@inline function align8u64(n: u64): u64 { return (n + 7) & ~(<u64>7); }

/** Arena class of a block that holds `bytes` (HEAP_MIN_CLASS at least); ARENA_CLASSES when none does. */
function arenaClassOf(bytes: u64): u32 {
  let c = HEAP_MIN_CLASS;
  while (c <= ARENA_MAX_CLASS && (<u64>ARENA_BLOCK_BYTES << c) < bytes) c++;
  return c;
}

/** Bytes of the arena block that holds `count` items of `bytesEach` (a power of two from 64), or 0 when no block is that large. */
export function arenaBlockBytes(count: u32, bytesEach: u32): u32 {
  const c = arenaClassOf(<u64>count * bytesEach);
  return c > ARENA_MAX_CLASS ? 0 : ARENA_BLOCK_BYTES << c;
}

/** Attaches this instance to a region another instance formatted (worker mode). */
export function adapterAttach(base: u32): i32 {
  const a = changetype<AdapterHeader>(<usize>base);
  if (a.magic != REGION_MAGIC || a.kind != REGION_KIND_ADAPTER || a.base != base) return E_BAD_REGION;
  if (a.version != LAYOUT_VERSION) return E_BAD_VERSION;
  adapterBase = base;
  return OK;
}

// ───────────────────────────── GPU VA space ─────────────────────────────
//
// Each process slot owns a window of gpuVaPagesPerProcess pages starting at
//   gpuVaBase + slot * gpuVaPagesPerProcess * PAGE_BYTES
// Slot 0 is the system (paging) process, used for the CMP's mappings
// (MapToGpuSystemProcess). The table maps each VA page to a physical page and
// the GPU's rights on it (GPU_VA_READ, or GPU_VA_READ_WRITE: layout.ts draws
// the entry); 0 is unmapped.

@inline function vaEntry(index: u32): usize { return <usize>adapter().gpuVaTable + (<usize>index << 2); }

/**
 * Maps physical page `phys` into process `slot`'s GPU VA space with `access` (GPU_VA_READ or
 * GPU_VA_READ_WRITE); returns the VA, or 0 when the slot is out of range, its window is full or
 * `access` is neither.
 */
export function gpuVaMap(slot: u32, phys: u32, access: u32): u64 {
  const a = adapter();
  if (slot >= a.processCapacity || a.gpuVaPagesPerProcess == 0) return 0;
  if (access != GPU_VA_READ && access != GPU_VA_READ_WRITE) return 0;
  const p = processAt(slot);
  const window = slot * a.gpuVaPagesPerProcess;
  const pagePhys = phys & ~(PAGE_BYTES - 1);
  for (let n: u32 = 0; n < a.gpuVaPagesPerProcess; n++) {
    const index = (p.vaHint + n) % a.gpuVaPagesPerProcess;
    const entry = vaEntry(window + index);
    if (load<u32>(entry) == 0) {
      store<u32>(entry, pagePhys | access);
      p.vaHint = index + 1;
      p.mappedPages++;
      return a.gpuVaBase + ((<u64>(window + index)) << PAGE_SHIFT) + (phys & (PAGE_BYTES - 1));
    }
  }
  return 0;
}

/** Removes the mapping of the page containing `va`. */
export function gpuVaUnmap(slot: u32, va: u64): i32 {
  const index = vaIndex(slot, va);
  if (index < 0) return E_NO_GPU_VA;
  const entry = vaEntry(<u32>index);
  if (load<u32>(entry) == 0) return E_NO_GPU_VA;
  store<u32>(entry, 0);
  processAt(slot).mappedPages--;
  return OK;
}

/** VA table index of `va` if it lies in `slot`'s window, else -1. */
function vaIndex(slot: u32, va: u64): i64 {
  const a = adapter();
  if (slot >= a.processCapacity || va < a.gpuVaBase) return -1;
  const page = (va - a.gpuVaBase) >> PAGE_SHIFT;
  const window = <u64>slot * a.gpuVaPagesPerProcess;
  if (page - window >= <u64>a.gpuVaPagesPerProcess) return -1; // outside [window, window + pages), wrap-aware
  return <i64>page;
}

/** The VA table entry of `va` in `slot`'s window (page | access), 0 when unmapped or outside it. */
@inline function vaEntryOf(slot: u32, va: u64): u32 {
  const index = vaIndex(slot, va);
  return index < 0 ? 0 : load<u32>(vaEntry(<u32>index));
}

/** Translates a GPU VA of process `slot` for a read: a physical address; 0 = page fault (unmapped). */
export function gpuVaTranslate(slot: u32, va: u64): u32 {
  const entry = vaEntryOf(slot, va);
  if (entry == 0) return 0;
  return (entry & ~GPU_VA_ACCESS_MASK) + <u32>(va & (PAGE_BYTES - 1));
}

/**
 * Translates a GPU VA of process `slot` for a write: a physical address; 0 when the page is unmapped or
 * mapped read-only for the GPU (gpuVaAccess tells which: a page fault, or E_GPU_WRITE_FAULT).
 */
@inline export function gpuVaTranslateWrite(slot: u32, va: u64): u32 {
  const entry = vaEntryOf(slot, va);
  if ((entry & GPU_VA_READ_WRITE) != GPU_VA_READ_WRITE) return 0;
  return (entry & ~GPU_VA_ACCESS_MASK) + <u32>(va & (PAGE_BYTES - 1));
}

/** The GPU's rights on `va` in process `slot`: GPU_VA_READ, GPU_VA_READ_WRITE, or 0 (unmapped). */
export function gpuVaAccess(slot: u32, va: u64): u32 {
  return vaEntryOf(slot, va) & GPU_VA_ACCESS_MASK;
}

// ───────────────────────────── fence pages ──────────────────────────────

function regionFor(memoryKind: u32): u32 {
  const a = adapter();
  return memoryKind == MEMORY_LOCAL && a.localRegion != 0 ? a.localRegion : a.systemRegion;
}

@inline function listIndex(role: u32, memoryKind: u32): u32 { return role * 2 + memoryKind; }
@inline function listHeadAddress(slot: u32, list: u32): usize {
  return changetype<usize>(processAt(slot)) + (<usize>list << 2);
}

function listRemove(slot: u32, index: u32): void {
  const d = pageAt(index);
  if (d.list == NOT_LISTED) return;
  if (d.prev != 0) pageAt(d.prev - 1).next = d.next;
  else store<u32>(listHeadAddress(slot, d.list), d.next);
  if (d.next != 0) pageAt(d.next - 1).prev = d.prev;
  d.list = NOT_LISTED; d.next = 0; d.prev = 0;
}

function listPush(slot: u32, index: u32, list: u32): void {
  const d = pageAt(index);
  const headAddress = listHeadAddress(slot, list);
  const head = load<u32>(headAddress);
  d.list = list; d.prev = 0; d.next = head;
  if (head != 0) pageAt(head - 1).prev = index + 1;
  store<u32>(headAddress, index + 1);
}

/** A new page descriptor over a freshly claimed page; returns index + 1, or an error. */
function pageNew(owner: u32, role: u32, memoryKind: u32, slotBytes: u32, slotCount: u32): i32 {
  const a = adapter();
  if (a.pageFreeHead == 0 && a.pageBump >= a.pageCapacity) return E_NO_PAGE_DESCRIPTORS;
  const phys = regionAllocPage(regionFor(memoryKind));
  if (phys == 0) return E_NO_PAGES;
  let id = a.pageFreeHead;
  if (id != 0) a.pageFreeHead = pageAt(id - 1).nextFree;
  else id = ++a.pageBump;
  const d = pageAt(id - 1);
  memory.fill(changetype<usize>(d), 0, PAGE_DESCRIPTOR_BYTES);
  d.phys = phys; d.owner = owner; d.role = role; d.memory = memoryKind;
  d.slotBytes = slotBytes; d.slotCount = slotCount; d.list = NOT_LISTED;
  a.pageLive++;
  return <i32>id;
}

function pageRelease(index: u32): void {
  const a = adapter();
  const d = pageAt(index);
  if (d.owner != NO_OWNER) listRemove(d.owner, index);
  regionFreePage(regionFor(d.memory), d.phys);
  d.phys = 0;
  d.nextFree = a.pageFreeHead;
  a.pageFreeHead = index + 1;
  a.pageLive--;
}

/** Claims the first free slot of page `index`; returns the slot number. */
function slotClaim(index: u32): u32 {
  const d = pageAt(index);
  const bitmap = changetype<usize>(d) + PAGE_BITMAP_OFFSET;
  for (let w: u32 = 0; w < PAGE_BITMAP_WORDS; w++) {
    const address = bitmap + (<usize>w << 3);
    const bits = load<u64>(address);
    if (bits == 0xFFFF_FFFF_FFFF_FFFF) continue;
    const bit = <u32>ctz<u64>(~bits);
    const slot = (w << 6) + bit;
    if (slot >= d.slotCount) break;
    store<u64>(address, bits | (<u64>1 << bit));
    d.used++;
    return slot;
  }
  assert(false, 'slotClaim: a page on a partial list had no free slot');
  return 0;
}

/**
 * Finds storage for one value: a slot in a partially used page of the owner
 * (packed), or a page of its own (shareable, owner == NO_OWNER).
 * Returns the page index + 1, and the slot's physical address in out word 0.
 */
function valueAlloc(owner: u32, role: u32, memoryKind: u32): i32 {
  const a = adapter();
  const slotBytes = role == PAGE_ROLE_MONITORED ? a.monitoredValueStride : 8;
  if (owner == NO_OWNER) {
    const id = pageNew(NO_OWNER, role, memoryKind, slotBytes, 1);
    if (id < 0) return id;
    const d = pageAt(<u32>id - 1);
    slotClaim(<u32>id - 1);
    store<u32>(outWord(0), d.phys);
    return id;
  }
  const list = listIndex(role, memoryKind);
  let head = load<u32>(listHeadAddress(owner, list));
  if (head == 0) {
    const slotCount = min<u32>(PAGE_BYTES / slotBytes, PAGE_BITMAP_WORDS * 64);
    const id = pageNew(owner, role, memoryKind, slotBytes, slotCount);
    if (id < 0) return id;
    listPush(owner, <u32>id - 1, list);
    head = <u32>id;
  }
  const index = head - 1;
  const d = pageAt(index);
  const slot = slotClaim(index);
  if (d.used == d.slotCount) listRemove(owner, index);
  store<u32>(outWord(0), d.phys + slot * d.slotBytes);
  return <i32>head;
}

function valueFree(pageId: u32, phys: u32): void {
  const index = pageId - 1;
  const d = pageAt(index);
  const slot = (phys - d.phys) / d.slotBytes;
  const address = changetype<usize>(d) + PAGE_BITMAP_OFFSET + (<usize>(slot >> 6) << 3);
  const mask = <u64>1 << (slot & 63);
  assert((load<u64>(address) & mask) != 0, 'valueFree: slot was not in use');
  store<u64>(address, load<u64>(address) & ~mask);
  const wasFull = d.used == d.slotCount;
  d.used--;
  if (d.used == 0) { pageRelease(index); return; }
  if (wasFull && d.owner != NO_OWNER) listPush(d.owner, index, listIndex(d.role, d.memory));
}

// ─────────────────────────────── fences ────────────────────────────────

/**
 * Creates a fence record with its CurrentValue and MonitoredValue storage.
 * `owner` is the creating process slot; shareable fences get pages of their
 * own. `cvPhys` != 0 reuses an existing CurrentValue word (cross-adapter
 * fences opened on a second adapter share the first adapter's word).
 * MonitoredValue starts at UINT64_MAX (no CPU waiter). Returns the fence id.
 */
export function fenceCreate(owner: u32, kind: u32, memoryKind: u32, shareable: bool, flags: u32,
                            initialValue: u64, cvPhys: u32): i32 {
  const a = adapter();
  if (owner >= a.processCapacity) return E_BAD_PROCESS;
  if (memoryKind != MEMORY_SYSTEM && memoryKind != MEMORY_LOCAL) return E_BAD_ARGUMENT;
  if (a.fenceFreeHead == 0 && a.fenceBump >= a.fenceCapacity) return E_NO_FENCE_RECORDS;
  const packOwner = shareable ? NO_OWNER : owner;

  let cvPage: i32 = 0;
  if (cvPhys == 0) {
    cvPage = valueAlloc(packOwner, PAGE_ROLE_CURRENT, memoryKind);
    if (cvPage < 0) return cvPage;
    cvPhys = load<u32>(outWord(0));
  }
  const mvPage = valueAlloc(packOwner, PAGE_ROLE_MONITORED, memoryKind);
  if (mvPage < 0) {
    if (cvPage > 0) valueFree(<u32>cvPage, cvPhys);
    return mvPage;
  }
  const mvPhys = load<u32>(outWord(0));

  let id = a.fenceFreeHead;
  if (id != 0) a.fenceFreeHead = fenceAt(id).heapBlock; // a free record's next free record
  else id = ++a.fenceBump;
  const f = fenceAt(id);
  const generation = <u8>(f.generation + 1);
  memory.fill(changetype<usize>(f), 0, FENCE_RECORD_BYTES);
  f.state = <u8>FENCE_STATE_LIVE;
  f.kind = <u8>kind; f.memory = <u8>memoryKind; f.flags = flags; f.owner = <u16>owner;
  f.shareable = shareable ? 1 : 0;
  f.cvPhys = cvPhys; f.mvPhys = mvPhys; f.cvPage = <u32>cvPage; f.mvPage = <u32>mvPage;
  f.generation = generation;
  if (kind == FENCE_KIND_MONITORED) store<u64>(lastSignaledAddress(id), initialValue); // a native fence never touches its slot
  if (cvPage > 0) atomic.store<u64>(<usize>cvPhys, initialValue);
  atomic.store<u64>(<usize>mvPhys, UINT64_MAX);
  fenceIndexInsert(id, cvPhys);
  a.fenceLive++;
  return <i32>id;
}

/** Frees a fence's storage. Its waiter heap must be empty (the OS retires waiters first). */
export function fenceDestroy(id: u32): i32 {
  if (!fenceValid(id)) return E_BAD_FENCE;
  const a = adapter();
  const f = fenceAt(id);
  if (f.heapCount != 0) return E_BAD_ARGUMENT;
  heapRelease(f);
  // A MonitoredValue still in the CMP's write buffer must not land in a slot a new fence may get.
  if (a.cmpPendingPhys == f.mvPhys) a.cmpPendingPhys = 0;
  fenceIndexDelete(id, f.cvPhys);
  if (f.cvPage != 0) valueFree(f.cvPage, f.cvPhys);
  valueFree(f.mvPage, f.mvPhys);
  if (f.kind == <u8>FENCE_KIND_MONITORED) store<u64>(lastSignaledAddress(id), 0); // as a native fence's: zero
  f.state = <u8>FENCE_STATE_FREE;
  f.heapBlock = a.fenceFreeHead; // a free record's heapBlock links the free list
  a.fenceFreeHead = id;
  a.fenceLive--;
  return OK;
}

// ───────────────────── fences by CurrentValue address (layout.ts) ─────────────────────

@inline function fenceIndexSlot(slot: u32): usize { return <usize>adapter().fenceIndexTable + (<usize>slot << 2); }
@inline function fenceIndexHome(cvPhys: u32): u32 { return (cvPhys * FENCE_INDEX_MULTIPLIER) >> adapter().fenceIndexShift; }
@inline function fenceIndexMask(): u32 { return (<u32>0xFFFF_FFFF) >> adapter().fenceIndexShift; }

function fenceIndexInsert(id: u32, cvPhys: u32): void {
  const mask = fenceIndexMask();
  let slot = fenceIndexHome(cvPhys);
  // The table has twice as many slots as fences: an empty one is always found.
  while (load<u32>(fenceIndexSlot(slot)) != 0) {
    assert(fenceAt(load<u32>(fenceIndexSlot(slot))).cvPhys != cvPhys, 'fenceIndexInsert: two records of one adapter over one CurrentValue word');
    slot = (slot + 1) & mask;
  }
  store<u32>(fenceIndexSlot(slot), id);
}

/** Removes `id` and shifts back the entries after it that would no longer be found (Knuth's algorithm R). */
function fenceIndexDelete(id: u32, cvPhys: u32): void {
  const mask = fenceIndexMask();
  let hole = fenceIndexHome(cvPhys);
  while (load<u32>(fenceIndexSlot(hole)) != id) {
    assert(load<u32>(fenceIndexSlot(hole)) != 0, 'fenceIndexDelete: a live fence missing from the index');
    hole = (hole + 1) & mask;
  }
  let next = hole;
  while (true) {
    next = (next + 1) & mask;
    const other = load<u32>(fenceIndexSlot(next));
    if (other == 0) break;
    const home = fenceIndexHome(fenceAt(other).cvPhys);
    // `other` stays where it is when its home lies cyclically in (hole, next].
    if (hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)) continue;
    store<u32>(fenceIndexSlot(hole), other);
    hole = next;
  }
  store<u32>(fenceIndexSlot(hole), 0);
}

/**
 * The live fence of this adapter whose CurrentValue word is at `cvPhys` (a
 * driver knows a fence by its addresses, DxgkDdiCreateNativeFence); E_BAD_FENCE
 * when none. O(1): the fence index (layout.ts).
 */
export function fenceAtCurrentValue(cvPhys: u32): i32 {
  if (cvPhys == 0 || adapter().fenceIndexTable == 0) return E_BAD_FENCE;
  const mask = fenceIndexMask();
  let slot = fenceIndexHome(cvPhys);
  while (true) {
    const id = load<u32>(fenceIndexSlot(slot));
    if (id == 0) return E_BAD_FENCE;
    if (fenceAt(id).cvPhys == cvPhys) return <i32>id;
    slot = (slot + 1) & mask;
  }
}

// The arena allocator (waiter heaps, queue rings) lives with the fences because fenceDestroy returns blocks.

@inline function freeHeadAddress(heapClass: u32): usize { return <usize>adapter().heapFreeTable + (<usize>heapClass << 2); }

/** A block of ARENA_BLOCK_BYTES << heapClass bytes from the arena; 0 when the arena is exhausted. */
export function heapBlockAlloc(heapClass: u32): u32 {
  const a = adapter();
  const headAddress = freeHeadAddress(heapClass);
  const head = load<u32>(headAddress);
  if (head != 0) { store<u32>(headAddress, load<u32>(<usize>head)); return head; }
  const bytes = <u64>ARENA_BLOCK_BYTES << heapClass;
  if (<u64>a.heapArenaBump + bytes > <u64>a.heapArenaBytes) return 0;
  const block = a.heapArena + a.heapArenaBump;
  a.heapArenaBump += <u32>bytes;
  return block;
}

export function heapBlockFree(block: u32, heapClass: u32): void {
  const headAddress = freeHeadAddress(heapClass);
  store<u32>(<usize>block, load<u32>(headAddress));
  store<u32>(headAddress, block);
}

function heapRelease(f: FenceRecord): void {
  if (<u32>f.heapClass >= HEAP_LARGE_CLASS) {
    // A large fence: its entries block, then the small block that holds its LargeHeap descriptor.
    heapBlockFree(changetype<LargeHeap>(<usize>f.heapBlock).entries, f.heapClass);
    heapBlockFree(f.heapBlock, HEAP_LARGE_CLASS - 1);
  } else if (f.heapBlock != 0) heapBlockFree(f.heapBlock, f.heapClass);
  f.heapBlock = 0; f.heapClass = 0; f.heapCount = 0;
}

export { HEAP_MIN_CLASS, E_BAD_FENCE, E_NO_GPU_VA, E_BAD_ARGUMENT, E_NO_PAGES, E_TOO_SMALL, E_BAD_VERSION };
