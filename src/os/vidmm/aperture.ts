// The CpuHostAperture of one adapter (VM-06): a window of `sizeInPages`
// 4 KiB pages in the PCI aperture, managed page by page. Each aperture page
// can be pointed (DxgkDdiMapCpuHostAperture) at any page of the adapter's
// local memory, so a contiguous CPU virtual range can show non-contiguous
// local-memory pages of an allocation in a segment the CPU cannot see.
//
//   CPU VA (contiguous)      aperture pages (any free ones)     local memory pages
//   pData + 0x0000 ───────▶  aperture[3]  ──page table──────▶  phys 0x0023_4000
//   pData + 0x1000 ───────▶  aperture[0]  ──page table──────▶  phys 0x0020_9000
//   pData + 0x2000 ───────▶  aperture[7]  ──page table──────▶  phys 0x0027_1000
//
// The page table is the model of the hardware's aperture translation: CPU
// accesses through the aperture read it on every access.

import { WddmError } from '../../base/errors.js';
import { PAGE_BYTES } from './segments.js';

/** DXGK_CPUHOSTAPERTURE. */
export interface DXGK_CPUHOSTAPERTURE { PhysicalAddress: bigint; SizeInPages: number }

export class CpuHostAperture {
  /** Aperture page → local memory physical address (0 = unmapped). */
  readonly pageTable: Uint32Array;
  private inUse = 0;
  /** Where the next search for a free page starts (round robin, so mappings are spread out). */
  private cursor = 0;
  highWater = 0;

  constructor(readonly adapterName: string, readonly descriptor: DXGK_CPUHOSTAPERTURE) {
    this.pageTable = new Uint32Array(descriptor.SizeInPages);
  }

  get sizeInPages(): number { return this.descriptor.SizeInPages; }
  get pagesInUse(): number { return this.inUse; }
  get pagesFree(): number { return this.sizeInPages - this.inUse; }

  /**
   * Maps `localPages` (physical addresses) into free aperture pages; returns
   * the aperture page index for each. All or nothing: when fewer pages are
   * free, nothing is mapped and the error says how many were needed.
   */
  map(localPages: number[], what: string): number[] {
    this.requireFree(localPages.length, what);
    const taken: number[] = [];
    for (const phys of localPages) {
      while (this.pageTable[this.cursor] !== 0) this.cursor = (this.cursor + 1) % this.sizeInPages;
      this.pageTable[this.cursor] = phys;
      taken.push(this.cursor);
      this.cursor = (this.cursor + 1) % this.sizeInPages;
    }
    this.inUse += taken.length;
    this.highWater = Math.max(this.highWater, this.inUse);
    return taken;
  }

  /** Throws the "aperture full" error unless `count` pages are free. */
  requireFree(count: number, what: string): void {
    if (count > this.pagesFree) {
      throw new WddmError('INSUFFICIENT_RESOURCES',
        `${what}: the CpuHostAperture of "${this.adapterName}" is full: it needs ${count} page(s), ` +
        `${this.pagesFree} of ${this.sizeInPages} are free (adapter option cpuHostAperturePages). ` +
        `Unlock other allocations, or give the allocation an aperture segment in its supported set`,
        { parameter: 'hAllocation', expected: `at most ${this.pagesFree} page(s) of CpuHostAperture` });
    }
  }

  unmap(aperturePages: number[]): void {
    for (const page of aperturePages) {
      if (this.pageTable[page] !== 0) { this.pageTable[page] = 0; this.inUse--; }
    }
  }

  /** The local physical address behind one aperture page (the translation a CPU access goes through). */
  translate(aperturePage: number): number {
    const phys = this.pageTable[aperturePage];
    if (!phys) throw new Error(`CpuHostAperture of "${this.adapterName}": page ${aperturePage} is not mapped`);
    return phys;
  }

  /** Bus address of one aperture page. */
  busAddress(aperturePage: number): bigint { return this.descriptor.PhysicalAddress + BigInt(aperturePage * PAGE_BYTES); }
}
