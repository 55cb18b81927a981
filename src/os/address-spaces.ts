// GPU virtual address spaces (VidMm's part): which physical page of fence
// storage or a log buffer is mapped at which GPU VA of a process, per
// adapter, with the GPU's rights on it and a reference count per page
// (several fences share a page). The core keeps the translation table the GPU
// reads (gpuVaMap/gpuVaUnmap, OS memory); this file keeps who holds each mapping.
//
//   Process.gpuMappings: adapter index → physical page → { va, access, references }
//   map: first reference maps the page (core.gpuVaMap, with its access), later ones count
//   unmap: the last reference unmaps it (core.gpuVaUnmap)
//
// Access (NF-04, the native fence document: MonitoredValue is "readable using GPU VA, no write
// access"): MonitoredValue pages are mapped 'read', in every address space (the process's and the
// System process's); CurrentValue pages, a monitored fence's value and the log buffers 'read-write'.
// A page holds values of one role only (fence pages are CurrentValue pages or MonitoredValue pages),
// so every reference to a page asks for the same access. An engine's write through a 'read' page is a
// GPU page fault (E_GPU_WRITE_FAULT): the driver reports DXGK_INTERRUPT_DMA_PAGE_FAULTED, never a store.

import { u64 as asU64, type CoreLayout } from '../core/bindings.js';
import { check } from '../base/errors.js';
import type { OsAdapter, Process } from './objects.js';

/** The GPU's rights on a mapping. */
export type GpuAccess = 'read' | 'read-write';

export class AddressSpaces {
  constructor(private readonly layout: CoreLayout) {}

  /** Maps the page holding `phys` into `process`'s GPU VA space on `adapter` with `access`; returns the VA of `phys`. */
  mapGpu(process: Process, adapter: OsAdapter, phys: number, access: GpuAccess): bigint {
    let pages = process.gpuMappings.get(adapter.index);
    if (!pages) process.gpuMappings.set(adapter.index, (pages = new Map()));
    const page = phys & ~0xfff;
    let m = pages.get(page);
    if (!m) {
      const va = asU64(adapter.core.gpuVaMap(process.slot, page, access === 'read' ? this.layout.gpuVaRead : this.layout.gpuVaReadWrite));
      if (va === 0n) check(-11, `mapping a fence page into process "${process.name}" on "${adapter.name}"`);
      m = { va, access, references: 0 };
      pages.set(page, m);
    } else if (m.access !== access) {
      throw new Error(`internal: page 0x${page.toString(16)} of process "${process.name}" on "${adapter.name}" is mapped ${m.access} for the GPU; a value of another role (${access}) shares it`);
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
