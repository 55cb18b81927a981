// Memory regions: a header, a page bitmap, then 4 KiB pages.
//
// Pages are claimed with a compare-and-swap on the bitmap word, so several
// adapter instances (possibly in different workers) can allocate from the one
// system memory region without a lock. Everything else in a region header is
// written once by regionFormat and only read afterwards, except the two
// atomic words `freePages` and `searchHint`.

import {
  RegionHeader, REGION_HEADER_BYTES, REGION_MAGIC, LAYOUT_VERSION, PAGE_BYTES, PAGE_SHIFT,
  OK, E_BAD_REGION, E_BAD_VERSION, E_TOO_SMALL, E_BAD_ARGUMENT, align8, alignPage,
} from './layout';

@inline function header(base: u32): RegionHeader { return changetype<RegionHeader>(<usize>base); }

/** Formats [base, base+sizeBytes) as a page region. base must be page aligned. */
export function regionFormat(base: u32, sizeBytes: u32, kind: u32): i32 {
  if ((base & (PAGE_BYTES - 1)) != 0 || (sizeBytes & (PAGE_BYTES - 1)) != 0) return E_BAD_ARGUMENT;
  const pageCount = sizeBytes >> PAGE_SHIFT;
  const bitmapWords = (pageCount + 63) >> 6;
  const metaBytes = alignPage(align8(REGION_HEADER_BYTES) + bitmapWords * 8);
  const firstPage = metaBytes >> PAGE_SHIFT;
  if (firstPage + 1 > pageCount) return E_TOO_SMALL;
  memory.fill(<usize>base, 0, metaBytes);
  const h = header(base);
  h.magic = REGION_MAGIC;
  h.version = LAYOUT_VERSION;
  h.kind = kind;
  h.headerBytes = REGION_HEADER_BYTES;
  h.base = base;
  h.sizeBytes = sizeBytes;
  h.pageCount = pageCount;
  h.firstPage = firstPage;
  h.freePages = pageCount - firstPage;
  h.bitmapOffset = align8(REGION_HEADER_BYTES);
  h.searchHint = 0;
  // The header and bitmap pages are in use; so are the bits past pageCount.
  const bitmap = <usize>base + h.bitmapOffset;
  for (let page: u32 = 0; page < firstPage; page++) markBit(bitmap, page);
  for (let page: u32 = pageCount; page < bitmapWords * 64; page++) markBit(bitmap, page);
  return OK;
}

@inline function markBit(bitmap: usize, page: u32): void {
  const word = bitmap + ((<usize>(page >> 6)) << 3);
  store<u64>(word, load<u64>(word) | (<u64>1 << (page & 63)));
}

/** Checks magic, version and kind of a region someone else formatted. */
export function regionCheck(base: u32, kind: u32): i32 {
  const h = header(base);
  if (h.magic != REGION_MAGIC) return E_BAD_REGION;
  if (h.version != LAYOUT_VERSION) return E_BAD_VERSION;
  if (h.kind != kind || h.base != base) return E_BAD_REGION;
  return OK;
}

/** Claims one zeroed page; returns its physical address, or 0 when the region is full. */
export function regionAllocPage(base: u32): u32 {
  const h = header(base);
  const bitmap = <usize>base + h.bitmapOffset;
  const words = (h.pageCount + 63) >> 6;
  const start = atomic.load<u32>(changetype<usize>(h) + offsetof<RegionHeader>('searchHint')) % words;
  for (let n: u32 = 0; n < words; n++) {
    const w = (start + n) % words;
    const address = bitmap + ((<usize>w) << 3);
    let bits = atomic.load<u64>(address);
    while (bits != 0xFFFF_FFFF_FFFF_FFFF) {
      const bit = <u32>ctz<u64>(~bits);
      const seen = atomic.cmpxchg<u64>(address, bits, bits | (<u64>1 << bit));
      if (seen == bits) {
        atomic.sub<u32>(changetype<usize>(h) + offsetof<RegionHeader>('freePages'), 1);
        atomic.store<u32>(changetype<usize>(h) + offsetof<RegionHeader>('searchHint'), w);
        const phys = base + (((w << 6) + bit) << PAGE_SHIFT);
        memory.fill(<usize>phys, 0, PAGE_BYTES);
        return phys;
      }
      bits = seen;
    }
  }
  return 0;
}

/** Returns a page to its region. */
export function regionFreePage(base: u32, phys: u32): i32 {
  const h = header(base);
  if (phys < base || phys >= base + h.sizeBytes || (phys & (PAGE_BYTES - 1)) != 0) return E_BAD_ARGUMENT;
  const page = (phys - base) >> PAGE_SHIFT;
  if (page < h.firstPage) return E_BAD_ARGUMENT;
  const address = <usize>base + h.bitmapOffset + ((<usize>(page >> 6)) << 3);
  const mask = <u64>1 << (page & 63);
  let bits = atomic.load<u64>(address);
  while (true) {
    if ((bits & mask) == 0) return E_BAD_ARGUMENT; // already free: a double free is a bug
    const seen = atomic.cmpxchg<u64>(address, bits, bits & ~mask);
    if (seen == bits) break;
    bits = seen;
  }
  atomic.add<u32>(changetype<usize>(h) + offsetof<RegionHeader>('freePages'), 1);
  return OK;
}

export function regionFreePages(base: u32): u32 {
  return atomic.load<u32>(<usize>base + offsetof<RegionHeader>('freePages'));
}

/** Does [phys, phys+bytes) lie inside the region's pages? */
export function regionContains(base: u32, phys: u32, bytes: u32): bool {
  const h = header(base);
  return phys >= base + (h.firstPage << PAGE_SHIFT) && phys + bytes <= base + h.sizeBytes;
}
