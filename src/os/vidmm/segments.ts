// Memory segments of an adapter, as its driver describes them
// (DXGK_SEGMENTDESCRIPTOR flags), and the CpuHostAperture size.
//
//   segment kind         backed by                         CPU reaches it
//   ───────────────────  ────────────────────────────────  ─────────────────────────────
//   aperture             system memory pages (GART view)    always (system memory)
//   memory, CpuVisible   the adapter's local memory pages   directly (a resizable BAR)
//   memory, not visible  the adapter's local memory pages   only through the CpuHostAperture
//                                                           (when SupportsCpuHostAperture)
//
// Segment ids start at 1, as WDDM segment ids do. Parsed here so that
// src/machine/machine.ts only forwards the option keys.

import { invalid } from '../../base/errors.js';
import * as v from '../../base/validate.js';

export const PAGE_BYTES = 4096;

export interface SegmentOptions {
  name?: string;
  /** Capacity in bytes (rounded up to 4 KiB pages). */
  sizeBytes: number;
  /** DXGK_SEGMENTFLAGS::CpuVisible: the CPU sees the whole segment (resizable BAR). */
  cpuVisible?: boolean;
  /** DXGK_SEGMENTFLAGS::Aperture: system memory the GPU reaches through its aperture. */
  aperture?: boolean;
  /** DXGK_SEGMENTFLAGS::CacheCoherent: GPU accesses snoop the CPU caches (matters on an I/O coherent platform only). */
  cacheCoherent?: boolean;
  /** DXGK_SEGMENTFLAGS::SupportsCpuHostAperture (bit 13): CPU locks may go through the CpuHostAperture. */
  supportsCpuHostAperture?: boolean;
}

/** A memory segment as the adapter describes it (frozen by parseSegments). */
export interface SegmentDescriptor {
  readonly id: number;
  readonly name: string;
  readonly sizeBytes: number;
  readonly cpuVisible: boolean;
  readonly aperture: boolean;
  readonly cacheCoherent: boolean;
  readonly supportsCpuHostAperture: boolean;
}

export const DEFAULT_CPU_HOST_APERTURE_PAGES = 16;
const DEFAULT_APERTURE_SEGMENT_BYTES = 1 << 20;

const roundPage = (n: number) => Math.ceil(n / PAGE_BYTES) * PAGE_BYTES;

/**
 * Validates `adapters[i].segments` and `adapters[i].cpuHostAperturePages`.
 * Without `segments`: one non-CPU-visible local memory segment of half the
 * local memory (the other half stays for fence pages) that supports the
 * CpuHostAperture, and a 1 MiB cache-coherent aperture segment.
 */
export function parseSegments(raw: unknown, rawAperturePages: unknown, path: string, localMemoryBytes: number): { segments: SegmentDescriptor[]; cpuHostAperturePages: number } {
  const cpuHostAperturePages = rawAperturePages === undefined ? DEFAULT_CPU_HOST_APERTURE_PAGES
    : v.integer(rawAperturePages, `${path}.cpuHostAperturePages`, 0, 1 << 16);
  let list: unknown[];
  if (raw === undefined) {
    list = [];
    const half = Math.floor(localMemoryBytes / 2 / PAGE_BYTES) * PAGE_BYTES;
    if (half > 0) list.push({ name: 'local', sizeBytes: half, supportsCpuHostAperture: true });
    list.push({ name: 'aperture', sizeBytes: DEFAULT_APERTURE_SEGMENT_BYTES, aperture: true, cacheCoherent: true });
  } else {
    list = v.array(raw, `${path}.segments`, 1, 32);
  }
  const segments: SegmentDescriptor[] = [];
  let localTotal = 0;
  list.forEach((item, i) => {
    const p = `${path}.segments[${i}]`;
    const s = v.options(item, p, ['name', 'sizeBytes', 'cpuVisible', 'aperture', 'cacheCoherent', 'supportsCpuHostAperture']);
    const flag = (value: unknown, key: string, fallback: boolean) => (value === undefined ? fallback : v.bool(value, `${p}.${key}`));
    const aperture = flag(s.aperture, 'aperture', false);
    const sizeBytes = roundPage(v.integer(s.sizeBytes, `${p}.sizeBytes`, 1, 1 << 30));
    const cpuVisible = flag(s.cpuVisible, 'cpuVisible', aperture);
    if (aperture && !cpuVisible) throw invalid(`${p}.cpuVisible`, false, 'true or omitted: an aperture segment is system memory, which the CPU always sees');
    const supportsCpuHostAperture = flag(s.supportsCpuHostAperture, 'supportsCpuHostAperture', false);
    if (supportsCpuHostAperture && (aperture || cpuVisible)) {
      throw invalid(`${p}.supportsCpuHostAperture`, true, 'false: only a memory segment the CPU cannot see needs the CpuHostAperture');
    }
    const name = s.name === undefined ? `segment${i + 1}` : String(s.name);
    if (!/^[A-Za-z0-9_.-]{1,32}$/.test(name)) throw invalid(`${p}.name`, s.name, '1 to 32 letters, digits, "_", "." or "-"');
    if (segments.some((o) => o.name === name)) throw invalid(`${p}.name`, name, 'a name no other segment of this adapter has');
    if (!aperture) localTotal += sizeBytes;
    // Frozen: a segment's description is constant for the machine's life (the explorer's state key writes it as one word).
    segments.push(Object.freeze({ id: i + 1, name, sizeBytes, cpuVisible, aperture, cacheCoherent: flag(s.cacheCoherent, 'cacheCoherent', false), supportsCpuHostAperture }));
  });
  if (localTotal > localMemoryBytes) {
    throw invalid(`${path}.segments`, `${localTotal} bytes of memory segments`, `memory segments (aperture: false) totalling at most localMemoryBytes (${localMemoryBytes})`);
  }
  return { segments, cpuHostAperturePages };
}
