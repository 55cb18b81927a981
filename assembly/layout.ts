// Linear-memory layout of the wddm-fence core.
//
// Why this file is long: it is one table, every struct and constant of linear
// memory with each region's diagram beside the structs it draws; the host
// reads the offsets from the core (readLayout, src/core/bindings.ts), so
// nothing here is written twice.
//
// The whole simulated machine lives in ONE shared WebAssembly.Memory, laid out
// like a physical memory map. Physical addresses are byte offsets into that
// memory. The core never allocates through the AssemblyScript runtime: the host
// lays the map out, the core formats and checks each region, and every mutable
// word of state lives inside a region (never in static data, which is copied
// again at every instantiation, and never in a per-instance allocator).
//
//   physical memory (one shared WebAssembly.Memory)
//   0x00000 ┌──────────────────────────────────────────────┐
//           │ core static data (read-only strings, consts) │ < STATIC_RESERVED_BYTES
//   0x10000 ├──────────────────────────────────────────────┤
//           │ system memory region      (RegionHeader)     │ DEFAULT fence pages,
//           │                                              │ cross-adapter values,
//           │                                              │ log buffers (assembly/log.ts)
//           ├──────────────────────────────────────────────┤
//           │ adapter 0 local memory    (RegionHeader)     │ INTRA_GPU fence pages
//           ├──────────────────────────────────────────────┤
//           │ adapter 0 private state   (AdapterHeader)    │ tables below
//           ├──────────────────────────────────────────────┤
//           │ adapter 1 local memory …                     │
//           └──────────────────────────────────────────────┘
//
// A memory region (system or local) is a run of 4 KiB pages:
//
//   region base ┌──────────────────────┐
//               │ RegionHeader         │ magic, version, kind, sizes
//               ├──────────────────────┤ + bitmapOffset
//               │ page bitmap (u64[])  │ one bit per page, 1 = in use,
//               │                      │ claimed with atomic cmpxchg so
//               │                      │ adapters in workers can share it
//               ├──────────────────────┤ + firstPage * PAGE_BYTES
//               │ page, page, page …   │ fence pages, log buffers
//               └──────────────────────┘
//
// An adapter's private region holds what the OS and the GPU keep about that
// adapter, each table a flat array of fixed-size records:
//
//   private base ┌──────────────────────────┐
//                │ AdapterHeader            │ magic, version, sizes, table offsets
//                ├──────────────────────────┤
//                │ FenceRecord[fences]      │ storage + waiter heap of each fence
//                │ PageDescriptor[pages]    │ slot bitmap of each fence page
//                │ ProcessRecord[processes] │ partial-page lists, GPU VA windows
//                │ WaitBlock[waitBlocks]    │ one per (waiter, fence) pair
//                │ WaiterRecord[waitBlocks] │ one per waiter: mode, entries left, its blocks
//                │ heap free lists u32[]    │ one per size class
//                │ GPU VA table u32[]       │ VA page → physical page | GPU access bits
//                │ EngineRecord[engines]    │ write buffer, CMP shadow, interrupt list
//                │ QueueRecord[queues]      │ hardware queue state
//                │ out buffer u32[]         │ results handed to the host
//                │ arena                    │ power-of-two blocks: waiter heaps, and
//                │                          │ each live queue's Command[ringEntries] ring
//                └──────────────────────────┘

export const PAGE_BYTES: u32 = 4096;
export const PAGE_SHIFT: u32 = 12;

// GPU access rights of a VA mapping (gpuVaMap). A VA table entry is the physical page (4 KiB aligned)
// with these bits in its low 12, so a translation reads the rights with the page (LAYOUT_VERSION 14):
//
//   entry  31 ──────────────── 12  11 ─── 2   1       0
//          │ physical page >> 12 │ 0      │ W │ R (mapped) │
//
// NF-04: the GPU reads and writes CurrentValue (and a monitored fence's value, and the log buffers), and
// only reads MonitoredValue: its pages are mapped GPU_VA_READ, and an engine's write through them is
// E_GPU_WRITE_FAULT (the driver reports a DMA page fault), never a store.
export const GPU_VA_READ: u32 = 1;
export const GPU_VA_WRITE: u32 = 2;
export const GPU_VA_READ_WRITE: u32 = GPU_VA_READ | GPU_VA_WRITE;
/** The bits of a VA table entry below the page. */
export const GPU_VA_ACCESS_MASK: u32 = PAGE_BYTES - 1;
export const STATIC_RESERVED_BYTES: u32 = 0x10000;

/** 'WDDF' little-endian: every region the core formats starts with it. */
export const REGION_MAGIC: u32 = 0x46444457;
/** Bumped whenever any record below changes shape. */
export const LAYOUT_VERSION: u32 = 14;

export const REGION_KIND_SYSTEM: u32 = 1;
export const REGION_KIND_LOCAL: u32 = 2;
export const REGION_KIND_ADAPTER: u32 = 3;

export const UINT64_MAX: u64 = 0xFFFF_FFFF_FFFF_FFFF;

// Record sizes below write align8 out as `(offsetof<T>() + 7) & ~7`: a call would make each size a
// mutable global set at start-up instead of a constant the compiler folds into every address computation.
@inline export function align8(n: u32): u32 { return (n + 7) & ~7; }
@inline export function alignPage(n: u32): u32 { return (n + PAGE_BYTES - 1) & ~(PAGE_BYTES - 1); }

// ───────────────────────────── memory regions ─────────────────────────────

@unmanaged export class RegionHeader {
  magic: u32;
  version: u32;
  kind: u32;
  headerBytes: u32;
  base: u32;          // physical address of this header
  sizeBytes: u32;     // whole region, header included
  pageCount: u32;     // pages in the region, header pages included
  firstPage: u32;     // first allocatable page (after header + bitmap)
  freePages: u32;     // atomic counter
  bitmapOffset: u32;  // from base
  searchHint: u32;    // atomic: bitmap word to start the next search at
  reserved: u32;
}
export const REGION_HEADER_BYTES: u32 = (offsetof<RegionHeader>() + 7) & ~7;

// ─────────────────────────────── adapter ────────────────────────────────

@unmanaged export class AdapterHeader {
  magic: u32;
  version: u32;
  kind: u32;
  headerBytes: u32;
  base: u32;
  sizeBytes: u32;
  adapterIndex: u32;
  capsBits: u32;              // DXGK_VIDSCHCAPS bits the adapter was built with
  monitoredValueStride: u32;  // 8 + MonitoredValuePadding
  systemRegion: u32;          // physical base of the system memory region
  localRegion: u32;           // physical base of this adapter's local memory
  arrivalSequence: u32;       // tie-break for equal waited values (renumbered before it wraps: assembly/heap.ts)

  fenceTable: u32;     fenceCapacity: u32;     fenceFreeHead: u32;     fenceLive: u32;
  pageTable: u32;      pageCapacity: u32;      pageFreeHead: u32;      pageLive: u32;
  processTable: u32;   processCapacity: u32;
  waitBlockTable: u32; waitBlockCapacity: u32; waitBlockFreeHead: u32; waitBlockLive: u32;
  heapFreeTable: u32;  heapArena: u32;         heapArenaBytes: u32;    heapArenaBump: u32; // the arena (waiter heaps, rings)
  gpuVaTable: u32;     gpuVaPagesPerProcess: u32;
  engineTable: u32;    engineCount: u32;
  queueTable: u32;     queueCapacity: u32;     queueLive: u32;         ringEntries: u32;
  ringClass: u32;      outBuffer: u32;         outCapacity: u32;       pendingCapacity: u32; // ringClass: arena class of one ring
  heapLimitClass: u32;
  doorbellDirectory: u32;     // XA-07: physical base of the doorbell directory, 0 = doorbell off
  heapIndexTable: u32;        // u32[waitBlocks]: each live wait block's heap index, a free one's free-list link
  cmpPendingPhys: u32;        // the CMP's one-entry write buffer (NF-11): MonitoredValue address, 0 = empty
  waiterTable: u32;           // WaiterRecord[waiterCapacity] (one per CPU waiter homed here)
  waiterCapacity: u32;        // = waitBlockCapacity: a waiter has at least one block on its home adapter
  waiterFreeHead: u32;        // index + 1 of the first free record, 0 = none
  waiterLive: u32;
  fenceIndexTable: u32;       // u32[1 << (32 - fenceIndexShift)]: fence ids by CurrentValue address (fenceAtCurrentValue)
  fenceIndexShift: u32;       // 32 − log2(index slots): a key's home slot is (key · FENCE_INDEX_MULTIPLIER) >> shift

  gpuVaBase: u64;
  cmpPendingValue: u64;       // the MonitoredValue waiting in the CMP's write buffer
  // statistics, read by the host for the trace summary
  gpuSignals: u64;
  cmpChecks: u64;
  interruptsRaised: u64;
  heapPushes: u64;
  heapPops: u64;
  fenceBump: u32;             // fence records ever used: ids fenceBump + 1 … fenceCapacity were never touched (free, zero)
  pageBump: u32;              // page descriptors ever used, likewise: a table is touched only as far as it is used
  waitBlockBump: u32;         // wait blocks ever used, likewise (LAYOUT_VERSION 12): adapterFormat threads no free list
  waiterBump: u32;            // waiter records ever used, likewise
}
export const ADAPTER_HEADER_BYTES: u32 = (offsetof<AdapterHeader>() + 7) & ~7;

// ───────────────────────────── fence records ─────────────────────────────
//
//   FenceRecord (FENCE_RECORD_BYTES = 40: a field costs 1 MB at a million fences)
//   ┌───────┬──────┬────────┬───────────┬───────────┬────────────┬─────────┐
//   │ state │ kind │ memory │ shareable │ heapClass │ generation │ owner   │  u8 × 6, u16
//   ├───────┴──────┴────────┴───────────┴───────────┴────────────┴─────────┤
//   │ flags │ cvPhys │ mvPhys │ cvPage │ mvPage │ heapBlock (next free     │  u32 × 8
//   │ record while free) │ heapCount │ driverHandle                         │
//   └──────────────────────────────────────────────────────────────────────┘
//
//   lastSignaled u64[fences], right after the records (id − 1 indexes it): the last signalled value
//   of a monitored fence, which the OS extends 32-bit GPU writes from (No64BitAtomics, MF-07). Only a
//   monitored fence writes its slot (at create, at a signal; zeroed at destroy): a native fence never
//   touches it, so the table's pages become resident only with monitored fences (memory is fresh).

export const FENCE_STATE_FREE: u32 = 0;
export const FENCE_STATE_LIVE: u32 = 1;

export const FENCE_KIND_NATIVE: u32 = 1;
export const FENCE_KIND_MONITORED: u32 = 2;

export const MEMORY_SYSTEM: u32 = 0;
export const MEMORY_LOCAL: u32 = 1;

@unmanaged export class FenceRecord {
  state: u8;          // FENCE_STATE_*
  kind: u8;           // FENCE_KIND_*
  memory: u8;         // MEMORY_*
  shareable: u8;
  heapClass: u8;      // capacity = 1 << heapClass entries (≤ HEAP_MAX_CLASS)
  generation: u8;     // bumped at every reuse (wraps at 256)
  owner: u16;         // process slot that created it (< 1024)
  flags: u32;         // D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS
  cvPhys: u32;        // CurrentValue physical address (8-byte aligned)
  mvPhys: u32;        // MonitoredValue physical address (8-byte aligned)
  cvPage: u32;        // PageDescriptor index + 1, 0 when the CV word is not ours
  mvPage: u32;
  heapBlock: u32;     // physical address of the waiter heap block, 0 = none; while the record is free: the next free record's id
  heapCount: u32;
  driverHandle: u32;  // hGlobalNativeFence the driver made, for interrupt lists
}
export const FENCE_RECORD_BYTES: u32 = (offsetof<FenceRecord>() + 7) & ~7;

// ──────────────────────── fences by CurrentValue address ────────────────────────
//
// A driver is told where a fence's values are (DxgkDdiCreateNativeFence gets
// the kernel CPU address of CurrentValue; a command names it by GPU VA), never
// the core's fence id. fenceAtCurrentValue finds the record from the address:
// an open-addressing table of fence ids keyed by CurrentValue address (each
// record of one adapter has its own word; a cross-adapter fence has one record
// per adapter over the same word), twice the fence capacity rounded up to a
// power of two, linear probing, deletion by backward shift (no tombstones).
//
//   fence index  u32[slots]      slot = (cvPhys · FENCE_INDEX_MULTIPLIER) >> fenceIndexShift, then +1, +2, …
//   ┌──────┬──────┬──────┬──────┬─────
//   │ 0    │ id 7 │ id 2 │ 0    │ …      0 = empty; a live id's key is fenceAt(id).cvPhys
//   └──────┴──────┴──────┴──────┴─────

/** Fibonacci hashing: 2^32 / golden ratio. */
export const FENCE_INDEX_MULTIPLIER: u32 = 0x9E37_79B1;
export const FENCE_INDEX_MIN_SLOTS: u32 = 16;

// ───────────────────────────── fence pages ──────────────────────────────
//
// A fence page holds `slotCount` values `slotBytes` apart. CurrentValue pages
// pack 8-byte slots (512 a page); MonitoredValue pages use the driver's stride
// (8 + MonitoredValuePadding). Non-shareable fences of one process share pages
// through the per-process partial lists; a shareable fence gets pages of its
// own (slotCount 1).

export const PAGE_ROLE_CURRENT: u32 = 0;
export const PAGE_ROLE_MONITORED: u32 = 1;
export const PAGE_ROLE_LOG: u32 = 2;
export const PAGE_ROLE_CROSS: u32 = 3;
export const PAGE_BITMAP_WORDS: u32 = 8; // 512 slots

@unmanaged export class PageDescriptor {
  phys: u32;
  owner: u32;       // process slot, or NO_OWNER for shareable pages
  role: u32;
  memory: u32;
  slotBytes: u32;
  slotCount: u32;
  used: u32;
  list: u32;        // index of the partial list it is on, or NOT_LISTED
  next: u32;        // partial list links (descriptor index + 1)
  prev: u32;
  nextFree: u32;
  reserved: u32;
  bitmap0: u64;     // PAGE_BITMAP_WORDS words follow from here
}
export const PAGE_BITMAP_OFFSET: u32 = offsetof<PageDescriptor>('bitmap0');
export const PAGE_DESCRIPTOR_BYTES: u32 = align8(PAGE_BITMAP_OFFSET + PAGE_BITMAP_WORDS * 8);
export const NO_OWNER: u32 = 0xFFFF_FFFF;
export const NOT_LISTED: u32 = 0xFFFF_FFFF;

// Per process: four partial-page lists (role × memory) and its GPU VA window.
export const PARTIAL_LISTS: u32 = 4;
@unmanaged export class ProcessRecord {
  partial0: u32; partial1: u32; partial2: u32; partial3: u32; // list heads, descriptor index + 1
  vaHint: u32;
  mappedPages: u32;
  live: u32;
  reserved: u32;
}
export const PROCESS_RECORD_BYTES: u32 = (offsetof<ProcessRecord>() + 7) & ~7;

// ───────────────────────────── CPU waiters ──────────────────────────────
//
// A CPU wait on N fences is one WaiterRecord and N wait blocks. The record
// is on the wait's home adapter (the adapter of its first fence); each block
// is on its fence's adapter and names the record by physical address, so a
// waiter can span adapters (every instance can read and write all memory).
// The record holds the waiter's whole state: wait-all or wait-any, the
// entries still waiting, the entry that satisfied a wait-any, and the chain
// of its blocks. The host keeps only what must call back into it (its
// completion, by the record's host id).
//
//   WaiterRecord (16 bytes)                    WaitBlock (16 bytes)
//   ┌─────────┬─────────┬───────────┬───────┐  ┌───────┬────────┬──────┬───────────────┐
//   │ hostId  │ state   │ remaining │ first │  │ fence │ waiter │ next │ entry (| DONE)│
//   └─────────┴─────────┴───────────┴───────┘  └───────┴────────┴──────┴───────────────┘
//   state: tag 0xA5 << 24 while live │ satisfied entry << 8 │ COMPLETED │ ANY
//   first, next: physical addresses of the waiter's wait blocks (0 ends the chain)
//
// Each fence keeps a 4-ary min-heap of HeapEntry ordered by (value,
// arrival); an entry names its wait block and the adapter's heap index table
// remembers each live wait block's entry index, so retiring an arbitrary
// waiter (timeout, wait-any won elsewhere) costs O(log n). A satisfied block
// leaves the heap but stays on its waiter's chain (DONE) until the waiter is
// retired, so a waiter holds one block per fence it names from the wait
// until it is retired.
//
//   heap block (1 << heapClass entries)
//   ┌──────────────┬──────────────┬──────────────┬─────
//   │ HeapEntry 0  │ HeapEntry 1  │ HeapEntry 2  │ …      parent(i) = (i-1)/4, children 4i+1 … 4i+4
//   └──────────────┴──────────────┴──────────────┴─────
//   HeapEntry: value u64 │ arrival u32 │ waitBlock u32   (16 bytes)

@unmanaged export class HeapEntry {
  value: u64;
  arrival: u32;
  waitBlock: u32;
}
export const HEAP_ENTRY_BYTES: u32 = (offsetof<HeapEntry>() + 7) & ~7;
export const HEAP_MIN_CLASS: u32 = 2;   // 4 entries: the smallest heapLimitClass (waitersPerFence 1 … 4 allow 4)
// A fence's first heap block holds one entry (most waited fences have one waiter: 16 bytes of arena, not 64);
// it doubles from there (1, 2, 4, … entries) up to the limit class.
export const HEAP_FIRST_CLASS: u32 = 0;
export const HEAP_MAX_CLASS: u32 = 22;  // 4,194,304 entries

// A fence whose waiters outgrow a block of 64 entries (class HEAP_LARGE_CLASS and up; LAYOUT_VERSION 13)
// keeps them in three parts of one entries block, described by a LargeHeap that lives in its last small
// heap block (the class HEAP_LARGE_CLASS − 1 block it outgrew: the first 32 bytes are the descriptor).
// FenceRecord.heapBlock then names the descriptor, heapClass is the entries block's class and heapCount
// counts the waiters of all three parts.
//
//   entries block (1 << heapClass entries)
//   ┌────────────────────────────┬──────────── free ───────────┬───────────────────────────────────┐
//   │ heap: HeapEntry 0 … h − 1  │                             │ bulk: k = bulkCount − 1 … 1, 0    │
//   └────────────────────────────┴─────────────────────────────┴───────────────────────────────────┘
//   heap  entries [0, heapCount): a 4-ary heap as a small fence's (heap index table: its index)
//   bulk  entry k at entry index (1 << heapClass) − 1 − k, so k survives a doubling of the block
//         [0, runHead)          popped from the run (dead until compacted)
//         [runHead, runEnd)     the run: sorted by (value, arrival); a retired one is a tombstone (waitBlock 0);
//                               runLive of them live; the entry at runHead is live whenever runLive > 0
//         [runEnd, bulkCount)   the buffer: unsorted, appended to by every new wait; bufferMin is its smallest
//         heap index table: WAIT_BLOCK_BULK | k
//
//   LargeHeap (32 bytes, in the class HEAP_LARGE_CLASS − 1 block)
//   ┌─────────┬───────────┬─────────┬────────┬───────────┬─────────┬───────────┬────────┐
//   │ entries │ heapCount │ runHead │ runEnd │ bulkCount │ runLive │ bufferMin │ unused │  u32 × 8
//   └─────────┴───────────┴─────────┴────────┴───────────┴─────────┴───────────┴────────┘
@unmanaged export class LargeHeap {
  entries: u32;     // physical address of the entries block
  heapCount: u32;   // entries in the heap part
  runHead: u32;     // first k of the run not yet popped
  runEnd: u32;      // the run is [runHead, runEnd), the buffer [runEnd, bulkCount)
  bulkCount: u32;
  runLive: u32;     // live (not tombstoned) entries in [runHead, runEnd)
  bufferMin: u32;   // k of the buffer's smallest (value, arrival) while the buffer is not empty
  unused: u32;
}
export const LARGE_HEAP_BYTES: u32 = offsetof<LargeHeap>();
export const HEAP_LARGE_CLASS: u32 = 7;  // 128 entries: the first class of the three-part layout
/** A buffer this large (and at least as large as the run's live entries) is sorted into the run; a smaller one goes into the heap. */
export const BUFFER_SORT_MIN: u32 = 64;

// The arena hands out blocks of ARENA_BLOCK_BYTES << class bytes (class 0 … 25,
// 16 B … 512 MiB): a waiter heap of class c is one block of class c; a queue's
// ring of ringEntries commands is one block of the smallest class that holds
// it, taken at queueCreate and returned at queueDestroy, so the adapter never
// reserves rings for queues that do not exist. Each class keeps a free list.
export const ARENA_BLOCK_BYTES: u32 = HEAP_ENTRY_BYTES;
export const ARENA_MAX_CLASS: u32 = 25;
export const ARENA_CLASSES: u32 = ARENA_MAX_CLASS + 1;

// A wait block's index in its fence's heap is not in the record but in the
// adapter's dense heap index table (4 bytes per wait block): every entry a
// sift moves rewrites its wait block's index, and at a million waiters those
// scattered writes land sixteen to a cache line. The slot also holds the
// block's state: a heap index (< 2^31 − 1) while it is in its fence's heap,
// WAIT_BLOCK_POPPED once satisfied (it left the heap, its waiter is not
// retired yet), or WAIT_BLOCK_FREE | the free-list link. Heap indexes stay
// below 2^HEAP_MAX_CLASS, far from both.
//
//   heap index table u32[waitBlocks]
//   ┌──────────────────────────────────────────────────┐
//   │ in a heap: its index (< 2^22)                    │
//   │ in a large fence's run or buffer: BULK | k       │
//   │ satisfied, waiter not retired: WAIT_BLOCK_POPPED │
//   │ free: WAIT_BLOCK_FREE | next free block id       │
//   └──────────────────────────────────────────────────┘
@unmanaged export class WaitBlock {
  fence: u32;       // fence id
  waiter: u32;      // physical address of its WaiterRecord (any adapter's)
  next: u32;        // physical address of the waiter's next wait block, 0 = last
  entry: u32;       // index of the fence in the wait call; WAIT_BLOCK_DONE once satisfied
}
export const WAIT_BLOCK_BYTES: u32 = (offsetof<WaitBlock>() + 7) & ~7;
export const WAIT_BLOCK_FREE: u32 = 0x8000_0000;
export const WAIT_BLOCK_POPPED: u32 = 0x7FFF_FFFF;
export const WAIT_BLOCK_BULK: u32 = 0x4000_0000;   // | k: in a large fence's run or buffer (see LargeHeap)
export const WAIT_BLOCK_DONE: u32 = 0x8000_0000;

@unmanaged export class WaiterRecord {
  hostId: u32;      // the host's id, handed back by fenceSatisfy; a free record's next free (index + 1)
  state: u32;       // WAITER_TAG_LIVE | satisfied entry << 8 | WAITER_COMPLETED | WAITER_MODE_ANY
  remaining: u32;   // entries not satisfied yet
  firstBlock: u32;  // physical address of the first wait block of its chain, 0 = none yet
}
export const WAITER_RECORD_BYTES: u32 = (offsetof<WaiterRecord>() + 7) & ~7;
// Wait block i and waiter record i are one pair (the block first), WAIT_PAIR_BYTES (32) apart and
// aligned to 32, so a pair is half of one cache line. The two free lists are apart, but both hand out
// ids from 1 up and take them back last-freed first (waiterRetire frees the blocks, then the record),
// so while waiters name one fence each (waiterCreate then one waitBlockAdd), a waiter gets a record
// and a block of the same pair: satisfying and retiring it reads one line for both, not two lines of
// two tables made in arrival order and read in value order (LAYOUT_VERSION 12). Nothing depends on
// the pairing but speed.
export const WAIT_PAIR_BYTES: u32 = WAIT_BLOCK_BYTES + WAITER_RECORD_BYTES;
export const WAITER_MODE_ALL: u32 = 0;
export const WAITER_MODE_ANY: u32 = 1;
export const WAITER_COMPLETED: u32 = 2;
export const WAITER_TAG_LIVE: u32 = 0xA500_0000;
export const WAITER_TAG_MASK: u32 = 0xFF00_0000;
/** A wait call names at most this many fences (an entry is 8 bits of the record's state). */
export const WAITER_MAX_ENTRIES: u32 = 255;

// ─────────────────────────── engines and queues ───────────────────────────
//
// An engine executes the command ring of the hardware queue running on it.
// A GPU store does not reach memory at once: it sits in the engine's write
// buffer until drained (the signal's own barrier, LOG-04 step 4; or a CMP
// barrier). The CMP's MonitoredValue write on DxgkDdiUpdateMonitoredValues
// sits in the CMP's write buffer (AdapterHeader.cmpPendingPhys/Value) until
// its barrier, or its next MonitoredValue write: that is what lets the model
// show NF-11. Without the barrier the CMP reads CurrentValue before its new
// MonitoredValue is visible, so a GPU signal in between compares against the
// old MonitoredValue while the CMP read the old CurrentValue: nobody raises.

@unmanaged export class EngineRecord {
  pendingPhys: u32;       // write buffer: address (0 = empty)
  pendingValue32: u32;    // 1 when only the low 32 bits are written (No64BitAtomics)
  pendingValue: u64;
  pendingCount: u32;      // fences collected for the next interrupt
  pendingOverflow: u32;   // 1 = too many: interrupt with no list (collapsed)
  pendingList: u32;       // u32[pendingCapacity] of driver handles
  interruptLine: u32;     // 1 while an interrupt is raised and not yet serviced
  runningQueue: u32;      // id of the queue the engine executes (0 = none yet)
  interruptQueue: u32;    // queue whose signal raised the pending interrupt: 0 none, INTERRUPT_QUEUE_UNKNOWN = several/not a queue (INT-05)
  signals: u64;
  interrupts: u64;
}
export const ENGINE_RECORD_BYTES: u32 = (offsetof<EngineRecord>() + 7) & ~7;
export const INTERRUPT_QUEUE_UNKNOWN: u32 = 0xFFFF_FFFF;

export const QUEUE_STATE_FREE: u32 = 0;
export const QUEUE_STATE_READY: u32 = 1;
export const QUEUE_STATE_BLOCKED: u32 = 2;

@unmanaged export class QueueRecord {
  state: u32;
  engine: u32;
  owner: u32;           // process slot
  ring: u32;            // physical address of Command[ringEntries]
  head: u32;            // next command to execute (monotonic, index = head % ringEntries)
  tail: u32;            // next free slot (monotonic)
  blockedFence: u32;    // fence id while blocked
  waitLog: u32;         // log buffer physical addresses (0 = none)
  signalLog: u32;
  generation: u32;
  blockedValue: u64;
  blockedSinceNs: u64;  // GPU time the wait was first observed (FenceObservedGpuTimestamp)
  // The queue's one-entry log write buffer (assembly/log.ts): a log entry the
  // GPU wrote that has not reached memory yet; DxgkDdiUpdateNativeFenceLogs drains it.
  logPendingPhys: u32;        // entry slot address (0 = empty)
  logPendingHandle: u32;
  logPendingOperation: u32;
  logPendingReserved: u32;
  logPendingValue: u64;
  logPendingObservedNs: u64;
  logPendingEndNs: u64;
}
export const QUEUE_RECORD_BYTES: u32 = (offsetof<QueueRecord>() + 7) & ~7;

//   Command (32 bytes)
//   ┌──────┬────────┬───────────┬─────────────────┬───────┬─────┐
//   │ op   │ fence  │ value u64 │ gpuVa u64 (CV)  │ handle│ pad │
//   └──────┴────────┴───────────┴─────────────────┴───────┴─────┘
export const OP_NOP: u32 = 0;
export const OP_WAIT: u32 = 1;     // block until *gpuVa >= value
export const OP_SIGNAL: u32 = 2;   // *gpuVa = value, then the CMP's conditional interrupt
export const OP_WORK: u32 = 3;     // busy for value nanoseconds
export const OP_FENCE_WRITE: u32 = 4; // monitored fence: write, then always interrupt

@unmanaged export class Command {
  op: u32;
  fence: u32;     // fence id (driver-private data the UMD put in the stream)
  value: u64;
  gpuVa: u64;
  handle: u32;    // user-mode fence handle, for log entries
  reserved: u32;
}
export const COMMAND_BYTES: u32 = (offsetof<Command>() + 7) & ~7;

//   RingCommand (RING_COMMAND_BYTES = 24): a command as a queue's ring holds it. The staged Command's
//   fields with the op in the top 4 bits of the fence id's word (a fence id is below 2^28: a fence
//   table that large does not fit in the core's memory) and no padding. A ring's arena block is sized
//   at COMMAND_BYTES an entry (the limits and their errors are the staged size's); its commands use
//   the first RING_COMMAND_BYTES × ringEntries bytes, and the block's pages are resident as written.
//   ┌───────────┬─────────────────┬──────────────────────┬────────┐
//   │ value u64 │ gpuVa u64 (CV)  │ op << 28 | fence u32 │ handle │
//   └───────────┴─────────────────┴──────────────────────┴────────┘
export const RING_OP_SHIFT: u32 = 28;
export const RING_FENCE_MASK: u32 = (1 << RING_OP_SHIFT) - 1;

@unmanaged export class RingCommand {
  value: u64;
  gpuVa: u64;
  opFence: u32;   // op << RING_OP_SHIFT | fence id
  handle: u32;    // user-mode fence handle, for log entries
  @inline get op(): u32 { return this.opFence >>> RING_OP_SHIFT; }
  @inline get fence(): u32 { return this.opFence & RING_FENCE_MASK; }
}
export const RING_COMMAND_BYTES: u32 = offsetof<RingCommand>();

// ───────────────────────────── the out buffer ─────────────────────────────
//
// What an export hands back beyond its return value sits in the adapter's out
// buffer (outBufferAddress(), outCapacity u32 words). Each kind of result is a
// record below; the host reads the exported offsets (src/core/bindings.ts readLayout),
// so no offset is typed twice.
//
//   after engineStep / engineRun / queueRecheckAt   StepReport (STEP_REPORT_BYTES)
//   @0  ┌───────────────────────────────────────────────────────────────┐
//       │ workDurationNs u64   STEP_WORK: how long the engine is busy   │
//   @8  │ fence u32            core fence id of the command              │
//   @12 │ handle u32           user-mode handle in the command           │
//   @16 │ value u64            the command's value                       │
//   @24 │ steps u32            engineRun: commands executed              │
//   @28 │ op u32               OP_* of the command                       │
//   @32 │ doorbellPosted u32   XA-07: records posted by a signal         │
//   @36 │ doorbellFull u32     XA-07: rings that were full               │
//   @40 │ observedNs u64       STEP_UNBLOCKED: GPU time the wait was     │
//       │                      first observed                            │
//   @48 └───────────────────────────────────────────────────────────────┘
//
//   after engineTakeInterrupt   u32 driver handles, INTERRUPT_HANDLE_BYTES apart
//   after fenceSatisfy          SatisfiedWait[n]       { waiter u32, entry u32, completed u32 }
//   after waiterRetire          u32 fence ids whose heaps lost a block (refresh their MonitoredValue)
//   after waiterPending         u32 entries of the waiter still waiting
//   after fenceWaiters          u32 host ids of the waiters in a fence's heap
//   after doorbellTake          TakenDoorbellRecord[n] { cvPhys u32, source u32, value u64 }

@unmanaged export class StepReport {
  workDurationNs: u64;
  fence: u32;
  handle: u32;
  value: u64;
  steps: u32;
  op: u32;
  doorbellPosted: u32;
  doorbellFull: u32;
  observedNs: u64;
}
export const STEP_REPORT_BYTES: u32 = (offsetof<StepReport>() + 7) & ~7;
export const STEP_REPORT_WORK_DURATION_OFFSET: u32 = offsetof<StepReport>('workDurationNs');
export const STEP_REPORT_FENCE_OFFSET: u32 = offsetof<StepReport>('fence');
export const STEP_REPORT_HANDLE_OFFSET: u32 = offsetof<StepReport>('handle');
export const STEP_REPORT_VALUE_OFFSET: u32 = offsetof<StepReport>('value');
export const STEP_REPORT_STEPS_OFFSET: u32 = offsetof<StepReport>('steps');
export const STEP_REPORT_OP_OFFSET: u32 = offsetof<StepReport>('op');
export const STEP_REPORT_DOORBELL_POSTED_OFFSET: u32 = offsetof<StepReport>('doorbellPosted');
export const STEP_REPORT_DOORBELL_FULL_OFFSET: u32 = offsetof<StepReport>('doorbellFull');
export const STEP_REPORT_OBSERVED_OFFSET: u32 = offsetof<StepReport>('observedNs');

//   engineRunStretch's record (STRETCH_RECORD_BYTES), at STRETCH_RECORD_OFFSET of the
//   out buffer (after the StepReport): what the host's scheduler knows going in, what
//   the stretch used coming out. Times are f64 whole nanoseconds (the host's numbers).
@unmanaged export class StretchRecord {
  nowNs: f64;        // in: virtual time of the first command (its tick already taken); out: the scheduler's now after the stretch
  untilNs: f64;      // in: the run's bound (Infinity: none)
  topTimeNs: f64;    // in: the earliest queued event's time (Infinity: none)
  sequence: f64;     // in/out: the scheduler's next sequence number
  commandNs: f64;    // in: Timing.commandNs
  jitterSpan: f64;   // in: floor(commandNs × jitter): a command takes commandNs + [0, span]
  timingA: u32; timingB: u32; timingC: u32; timingD: u32; // in/out: the timing stream (sfc32)
  tieA: u32; tieB: u32; tieC: u32; tieD: u32;             // in/out: the tie-break stream (sfc32)
  topTieBreak: u32;  // in: the earliest queued event's tie-break
  budget: u32;       // in: events the run may still take in place (the stretch counts it down)
  inPlace: u32;      // out: ticks taken in place (counted as executed events)
  nextQueued: u32;   // out: 1 = the next tick must be queued at nowNs with nextTieBreak (sequence − 1)
  nextTieBreak: u32; // out
  stop: u32;         // out: STRETCH_STOP_*
  fenceCommands: u32; // out: waits and signals among the commands executed
  nextNs: f64;       // out: time of the engine's next tick (= nowNs unless it must be queued)
  topSequence: f64;  // in: the earliest queued event's scheduling sequence (any value when there is none: its time is Infinity)
}
export const STRETCH_RECORD_BYTES: u32 = (offsetof<StretchRecord>() + 7) & ~7;
export const STRETCH_RECORD_OFFSET: u32 = (STEP_REPORT_BYTES + 7) & ~7;
export const STRETCH_STOP_LOUD: u32 = 1;     // the next command needs the host (engineStep it at nowNs)
export const STRETCH_STOP_COUNT: u32 = 2;    // maxSteps commands ran; the next tick runs in place at nowNs
export const STRETCH_STOP_QUEUED: u32 = 3;   // the next tick is not the scheduler's next event: queue it
export const STRETCH_STOP_EMPTY: u32 = 4;    // the ring is empty; the next tick runs in place at nowNs (it finds nothing here)
//   One of the StretchRecord's two generator states, viewed in place: src/base/portable.ts's
//   sfc32Next (the host's generator, compiled here too) steps any four u32 words a, b, c, d.
@unmanaged export class Sfc32State { a: u32; b: u32; c: u32; d: u32 }

/** engineTakeInterrupt's payload: one u32 driver handle per listed fence. */
export const INTERRUPT_HANDLE_BYTES: u32 = 4;

@unmanaged export class SatisfiedWait {
  waiter: u32;      // the waiter's host id (waiterCreate's `hostId`)
  entry: u32;       // which fence of its wait call was satisfied (its index)
  completed: u32;   // 1: this completed the waiter (wait-any, or the last entry of a wait-all): retire it
}
export const SATISFIED_WAIT_BYTES: u32 = offsetof<SatisfiedWait>();
export const SATISFIED_WAIT_WAITER_OFFSET: u32 = offsetof<SatisfiedWait>('waiter');
export const SATISFIED_WAIT_ENTRY_OFFSET: u32 = offsetof<SatisfiedWait>('entry');
export const SATISFIED_WAIT_COMPLETED_OFFSET: u32 = offsetof<SatisfiedWait>('completed');

@unmanaged export class TakenDoorbellRecord {
  cvPhys: u32;      // the shared CurrentValue word that names the fence
  source: u32;      // index of the adapter that posted it
  value: u64;
}
export const TAKEN_DOORBELL_RECORD_BYTES: u32 = offsetof<TakenDoorbellRecord>();
export const TAKEN_DOORBELL_WORD_OFFSET: u32 = offsetof<TakenDoorbellRecord>('cvPhys');
export const TAKEN_DOORBELL_SOURCE_OFFSET: u32 = offsetof<TakenDoorbellRecord>('source');
export const TAKEN_DOORBELL_VALUE_OFFSET: u32 = offsetof<TakenDoorbellRecord>('value');

// ───────────────────────────── status codes ─────────────────────────────
// Negative returns; the host maps each to an NTSTATUS and a message (one table).
export const OK: i32 = 0;
export const E_BAD_REGION: i32 = -1;
export const E_BAD_VERSION: i32 = -2;
export const E_TOO_SMALL: i32 = -3;
export const E_NO_PAGES: i32 = -4;
export const E_NO_FENCE_RECORDS: i32 = -5;
export const E_NO_PAGE_DESCRIPTORS: i32 = -6;
export const E_BAD_FENCE: i32 = -7;
export const E_HEAP_FULL: i32 = -8;
export const E_NO_WAIT_BLOCKS: i32 = -9;
export const E_BAD_WAIT_BLOCK: i32 = -10;
export const E_NO_GPU_VA: i32 = -11;
export const E_BAD_PROCESS: i32 = -12;
export const E_NO_QUEUES: i32 = -13;
export const E_BAD_QUEUE: i32 = -14;
export const E_RING_FULL: i32 = -15;
export const E_GPU_PAGE_FAULT: i32 = -16;
export const E_BAD_ENGINE: i32 = -17;
export const E_BAD_ARGUMENT: i32 = -18;
export const E_LOG_CORRUPT: i32 = -19;     // a native fence log header that does not fit its 4 KiB page
export const E_NO_WAITERS: i32 = -20;      // the adapter's waiter table is full
export const E_BAD_WAITER: i32 = -21;      // not a live, uncompleted waiter record
export const E_GPU_WRITE_FAULT: i32 = -22; // a GPU write through a VA mapped read-only for the GPU (a MonitoredValue page, NF-04)
// Cross-adapter doorbell (XA-07; assembly/doorbell.ts). Numbered apart from the rest.
export const E_DOORBELL_FULL: i32 = -40;
export const E_BAD_DOORBELL: i32 = -41;

/** D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS::CrossAdapter, as kept in FenceRecord.flags. */
export const SYNC_FLAG_CROSS_ADAPTER: u32 = 1 << 2;
export const REGION_KIND_DOORBELL: u32 = 4;

// Engine step results (non-negative).
export const STEP_IDLE: i32 = 0;          // ring empty
export const STEP_DONE: i32 = 1;          // a command retired, nothing for the host
export const STEP_BLOCKED: i32 = 2;       // queue waits on a fence
export const STEP_WORK: i32 = 3;          // busy: out[0..1] = duration ns (u64)
export const STEP_INTERRUPT: i32 = 4;     // the CMP raised the native fence signaled interrupt
export const STEP_UNBLOCKED: i32 = 5;     // a blocked wait became satisfied and retired
export const STEP_MONITORED_INTERRUPT: i32 = 6; // a monitored fence write raised its interrupt
export const STEP_SIGNAL_WRITTEN: i32 = 7;    // engineStepBegin: a signal's step 1 ran; the host calls steps 2-5 itself
