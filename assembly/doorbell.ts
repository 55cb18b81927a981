// The cross-adapter doorbell (XA-07): the GPU-to-GPU signal the native fence
// document leaves as future work, as an opt-in mode.
//
// A GPU signal of a cross-adapter fence posts a record naming the fence (the
// physical address of its shared CurrentValue word, the one identity every
// adapter has for it) and the value into the ring of every OTHER adapter. That
// adapter's hardware scheduler takes the records and rechecks only the queues
// blocked on that fence; no CPU interrupt is involved unless that adapter has
// a CPU waiter the value satisfies (then its own CMP check raises one).
//
// The doorbell area lives in system memory, laid out by the host:
//
//   directory base ┌────────────────────────────┐
//                  │ DoorbellDirectory          │ magic, version, kind, adapterCount,
//                  │                            │ capacity, ringBytes
//                  ├────────────────────────────┤ + DOORBELL_DIRECTORY_BYTES
//                  │ ring of adapter 0          │ DoorbellRing header
//                  │   DoorbellRecord[capacity] │
//                  ├────────────────────────────┤ + ringBytes
//                  │ ring of adapter 1 …        │
//                  └────────────────────────────┘
//
// Each ring is a bounded multi-producer queue (any other adapter may post,
// possibly from another worker) with one consumer (its adapter). Every record
// slot carries a sequence number: a producer claims position p with a
// compare-and-swap on writeIndex only when slot p % capacity has sequence p
// (free), writes the payload, then publishes sequence p + 1; the consumer
// takes the slot when its sequence is p + 1 and frees it by storing
// p + capacity. No lock, no torn record.
//
// A full ring is not an error the GPU can wait out: doorbellPost returns
// E_DOORBELL_FULL and the signalling engine falls back to the interrupt path
// of XA-03/XA-04 (the OS propagates the signal). Nothing is lost.

import {
  REGION_MAGIC, LAYOUT_VERSION, REGION_KIND_DOORBELL, OK, E_BAD_ARGUMENT, E_DOORBELL_FULL, E_BAD_DOORBELL, align8,
  TakenDoorbellRecord, TAKEN_DOORBELL_RECORD_BYTES,
} from './layout';
import { adapter } from './adapter';

@unmanaged export class DoorbellDirectory {
  magic: u32;
  version: u32;
  kind: u32;
  headerBytes: u32;
  base: u32;
  sizeBytes: u32;
  adapterCount: u32;
  capacity: u32;      // records per ring, a power of two
  ringBytes: u32;
  reserved: u32;
}
export const DOORBELL_DIRECTORY_BYTES: u32 = align8(offsetof<DoorbellDirectory>());

@unmanaged export class DoorbellRing {
  owner: u32;         // consuming adapter index
  capacity: u32;
  writeIndex: u32;    // atomic: next position a producer claims
  readIndex: u32;     // next position the consumer takes (consumer only)
  posted: u64;        // atomic counters, for the summary
  taken: u64;
  fullRejects: u64;
}
export const DOORBELL_RING_HEADER_BYTES: u32 = align8(offsetof<DoorbellRing>());

//   DoorbellRecord (24 bytes)
//   ┌──────────┬────────┬────────┬──────────┬───────────┐
//   │ sequence │ source │ cvPhys │ reserved │ value u64 │
//   └──────────┴────────┴────────┴──────────┴───────────┘
@unmanaged export class DoorbellRecord {
  sequence: u32;
  source: u32;        // signalling adapter index
  cvPhys: u32;        // the fence: its shared CurrentValue word
  reserved: u32;
  value: u64;
}
export const DOORBELL_RECORD_BYTES: u32 = align8(offsetof<DoorbellRecord>());

@inline function directory(base: u32): DoorbellDirectory { return changetype<DoorbellDirectory>(<usize>base); }
@inline function ringAt(d: DoorbellDirectory, index: u32): DoorbellRing {
  return changetype<DoorbellRing>(<usize>d.base + DOORBELL_DIRECTORY_BYTES + <usize>index * d.ringBytes);
}
@inline function recordAt(ring: DoorbellRing, position: u32): DoorbellRecord {
  return changetype<DoorbellRecord>(changetype<usize>(ring) + DOORBELL_RING_HEADER_BYTES +
    <usize>(position & (ring.capacity - 1)) * DOORBELL_RECORD_BYTES);
}

/** Bytes a doorbell area for `adapterCount` rings of `capacity` records needs. */
export function doorbellRegionBytes(adapterCount: u32, capacity: u32): u32 {
  return DOORBELL_DIRECTORY_BYTES + adapterCount * (DOORBELL_RING_HEADER_BYTES + capacity * DOORBELL_RECORD_BYTES);
}

/** Formats the doorbell area. `capacity` must be a power of two from 2 to 65536. */
export function doorbellFormat(base: u32, sizeBytes: u32, adapterCount: u32, capacity: u32): i32 {
  if ((base & 7) != 0 || adapterCount == 0 || adapterCount > 64) return E_BAD_ARGUMENT;
  if (capacity < 2 || capacity > 65536 || (capacity & (capacity - 1)) != 0) return E_BAD_ARGUMENT;
  if (doorbellRegionBytes(adapterCount, capacity) > sizeBytes) return E_BAD_ARGUMENT;
  memory.fill(<usize>base, 0, doorbellRegionBytes(adapterCount, capacity));
  const d = directory(base);
  d.kind = REGION_KIND_DOORBELL;
  d.headerBytes = DOORBELL_DIRECTORY_BYTES;
  d.base = base;
  d.sizeBytes = sizeBytes;
  d.adapterCount = adapterCount;
  d.capacity = capacity;
  d.ringBytes = DOORBELL_RING_HEADER_BYTES + capacity * DOORBELL_RECORD_BYTES;
  for (let i: u32 = 0; i < adapterCount; i++) {
    const ring = ringAt(d, i);
    ring.owner = i;
    ring.capacity = capacity;
    for (let p: u32 = 0; p < capacity; p++) recordAt(ring, p).sequence = p;
  }
  d.version = LAYOUT_VERSION;
  atomic.store<u32>(<usize>base, REGION_MAGIC); // magic last: the area is ready
  return OK;
}

export function doorbellCheck(base: u32): i32 {
  if (base == 0) return E_BAD_DOORBELL;
  const d = directory(base);
  if (atomic.load<u32>(<usize>base) != REGION_MAGIC || d.kind != REGION_KIND_DOORBELL || d.base != base) return E_BAD_DOORBELL;
  if (d.version != LAYOUT_VERSION) return E_BAD_DOORBELL;
  return OK;
}

/** Attaches the doorbell area to this instance's adapter (0 turns the doorbell off). */
export function adapterSetDoorbell(base: u32): i32 {
  if (base != 0 && doorbellCheck(base) != OK) return E_BAD_DOORBELL;
  adapter().doorbellDirectory = base;
  return OK;
}

/** Posts (cvPhys, value) from adapter `source` into adapter `target`'s ring. OK or E_DOORBELL_FULL. */
export function doorbellPost(base: u32, target: u32, source: u32, cvPhys: u32, value: u64): i32 {
  const d = directory(base);
  if (target >= d.adapterCount) return E_BAD_ARGUMENT;
  const ring = ringAt(d, target);
  const writeAddress = changetype<usize>(ring) + offsetof<DoorbellRing>('writeIndex');
  let position = atomic.load<u32>(writeAddress);
  while (true) {
    const record = recordAt(ring, position);
    const sequence = atomic.load<u32>(changetype<usize>(record));
    const difference = <i32>(sequence - position);
    if (difference == 0) {
      const seen = atomic.cmpxchg<u32>(writeAddress, position, position + 1);
      if (seen == position) {
        record.source = source;
        record.cvPhys = cvPhys;
        record.value = value;
        atomic.store<u32>(changetype<usize>(record), position + 1); // publish
        atomic.add<u64>(changetype<usize>(ring) + offsetof<DoorbellRing>('posted'), 1);
        atomic.notify(writeAddress, 1);
        return OK;
      }
      position = seen;
    } else if (difference < 0) {
      atomic.add<u64>(changetype<usize>(ring) + offsetof<DoorbellRing>('fullRejects'), 1);
      return E_DOORBELL_FULL;
    } else {
      position = atomic.load<u32>(writeAddress);
    }
  }
  return OK;
}

/**
 * The attached adapter's scheduler takes up to `limit` records from its own
 * ring. Record i goes to the out buffer as TakenDoorbellRecord i (cvPhys, source, value).
 * Returns the number taken.
 */
export function doorbellTake(limit: u32): i32 {
  const a = adapter();
  if (a.doorbellDirectory == 0) return 0;
  const d = directory(a.doorbellDirectory);
  const ring = ringAt(d, a.adapterIndex);
  const max = min<u32>(limit, (a.outCapacity << 2) / TAKEN_DOORBELL_RECORD_BYTES);
  let taken: u32 = 0;
  while (taken < max) {
    const position = ring.readIndex;
    const record = recordAt(ring, position);
    const sequence = atomic.load<u32>(changetype<usize>(record));
    if (sequence != position + 1) break; // empty (or a producer still writing)
    const out = changetype<TakenDoorbellRecord>(<usize>a.outBuffer + <usize>taken * TAKEN_DOORBELL_RECORD_BYTES);
    out.cvPhys = record.cvPhys;
    out.source = record.source;
    out.value = record.value;
    atomic.store<u32>(changetype<usize>(record), position + ring.capacity); // free the slot
    ring.readIndex = position + 1;
    taken++;
  }
  if (taken > 0) atomic.add<u64>(changetype<usize>(ring) + offsetof<DoorbellRing>('taken'), <u64>taken);
  return <i32>taken;
}

/** Records waiting in adapter `index`'s ring. */
export function doorbellPending(base: u32, index: u32): u32 {
  const d = directory(base);
  if (index >= d.adapterCount) return 0;
  const ring = ringAt(d, index);
  return atomic.load<u32>(changetype<usize>(ring) + offsetof<DoorbellRing>('writeIndex')) - ring.readIndex;
}

/** Counters of adapter `index`'s ring: which = 0 posted, 1 taken, 2 rejected because full. */
export function doorbellCounter(base: u32, index: u32, which: u32): u64 {
  const d = directory(base);
  if (index >= d.adapterCount || which > 2) return 0;
  const ring = ringAt(d, index);
  const field = which == 0 ? offsetof<DoorbellRing>('posted') : which == 1 ? offsetof<DoorbellRing>('taken') : offsetof<DoorbellRing>('fullRejects');
  return atomic.load<u64>(changetype<usize>(ring) + field);
}

/**
 * Worker mode: the scheduler of adapter `index` sleeps until its ring has a
 * record (doorbellPost notifies the ring's writeIndex). Returns 0 when records
 * are waiting (at once or after sleeping), 2 when `timeoutNs` passed first.
 */
export function doorbellWait(base: u32, index: u32, timeoutNs: i64): i32 {
  const d = directory(base);
  if (index >= d.adapterCount) return E_BAD_ARGUMENT;
  const ring = ringAt(d, index);
  const writeAddress = changetype<usize>(ring) + offsetof<DoorbellRing>('writeIndex');
  const seen = atomic.load<u32>(writeAddress);
  if (seen != ring.readIndex) return 0;
  const result = atomic.wait<i32>(writeAddress, <i32>seen, timeoutNs);
  return atomic.load<u32>(writeAddress) != ring.readIndex ? 0 : (result == 2 ? 2 : 0);
}

/** Adapters the directory serves. */
export function doorbellAdapterCount(base: u32): u32 { return directory(base).adapterCount; }
