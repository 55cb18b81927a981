// GPU virtual address spaces (VidMm's part): which physical page of fence
// storage or a log buffer is mapped at which GPU VA of a process, per
// adapter, with a reference count per page (several fences share a page).
// The core keeps the translation table the GPU reads (gpuVaMap/gpuVaUnmap,
// OS memory); this file keeps who holds each mapping.
//
//   Process.gpuMappings: adapter index → physical page → { va, references }
//   map: first reference maps the page (core.gpuVaMap), later ones count
//   unmap: the last reference unmaps it (core.gpuVaUnmap)

import { u64 as asU64 } from '../core/bindings.js';
import { check } from '../base/errors.js';
import type { OsAdapter, Process } from './objects.js';

export class AddressSpaces {
  /** Maps the page holding `phys` into `process`'s GPU VA space on `adapter`; returns the VA of `phys`. */
  mapGpu(process: Process, adapter: OsAdapter, phys: number): bigint {
    let pages = process.gpuMappings.get(adapter.index);
    if (!pages) process.gpuMappings.set(adapter.index, (pages = new Map()));
    const page = phys & ~0xfff;
    let m = pages.get(page);
    if (!m) {
      const va = asU64(adapter.core.gpuVaMap(process.slot, page));
      if (va === 0n) check(-11, `mapping a fence page into process "${process.name}" on "${adapter.name}"`);
      m = { va, references: 0 };
      pages.set(page, m);
    }
    m.references++;
    return m.va + BigInt(phys & 0xfff);
  }

  /** Drops one reference to the page holding `phys`; the last one unmaps it. */
  unmapGpu(process: Process, adapter: OsAdapter, phys: number): void {
    const pages = process.gpuMappings.get(adapter.index);
    const page = phys & ~0xfff;
    const m = pages?.get(page);
    if (!m) return;
    if (--m.references === 0) {
      adapter.core.gpuVaUnmap(process.slot, m.va);
      pages!.delete(page);
    }
  }
}
