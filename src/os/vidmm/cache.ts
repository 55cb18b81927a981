// The CPU cache of one allocation on a platform without I/O coherence (VM-08).
//
// Lines of 64 bytes, each invalid, clean or dirty, plus a "stale" mark:
//
//   CPU read   invalid → filled from memory (clean); a stale line returns its old bytes → STALE CPU READ
//   CPU write  line filled if invalid (write-allocate), bytes go to the cache only → dirty
//   GPU read   reads memory; a dirty line means the GPU misses the CPU's bytes → STALE GPU READ
//   GPU write  writes memory; a valid line now holds old bytes → stale;
//              a dirty line's bytes are lost (the GPU's or the CPU's) → LOST WRITE
//   invalidate dirty lines written back, every line of the range invalid (D3DKMTInvalidateCache)
//
// Speculation: the CPU may read any line of a mapped range ahead of time, so
// the model takes the worst case the document describes: when an allocation
// is locked, every line of it is speculatively filled. A CPU read after a GPU
// write therefore always needs an invalidation first.

export const CACHE_LINE_BYTES = 64;
const INVALID = 0, CLEAN = 1, DIRTY = 2;

export interface ByteRange { offset: number; length: number }

/** Reads and writes the allocation's bytes in memory (wherever its pages are). */
export interface BackingAccess {
  read(offset: number, length: number): Uint8Array;
  write(offset: number, bytes: Uint8Array): void;
}

export class CpuCache {
  private readonly state: Uint8Array;
  private readonly stale: Uint8Array;
  private readonly data: Uint8Array;

  constructor(readonly sizeBytes: number) {
    const lines = Math.ceil(sizeBytes / CACHE_LINE_BYTES);
    this.state = new Uint8Array(lines);
    this.stale = new Uint8Array(lines);
    this.data = new Uint8Array(lines * CACHE_LINE_BYTES);
  }

  private lines(offset: number, length: number): [number, number] {
    return [Math.floor(offset / CACHE_LINE_BYTES), Math.ceil((offset + length) / CACHE_LINE_BYTES)];
  }

  private fill(line: number, memory: BackingAccess): void {
    const start = line * CACHE_LINE_BYTES;
    const length = Math.min(CACHE_LINE_BYTES, this.sizeBytes - start);
    this.data.set(memory.read(start, length), start);
    this.state[line] = CLEAN;
    this.stale[line] = 0;
  }

  /** Ranges (clipped to the request) of the lines for which `test` holds, merged. */
  private ranges(offset: number, length: number, test: (line: number) => boolean): ByteRange[] {
    const out: ByteRange[] = [];
    const [first, end] = this.lines(offset, length);
    for (let line = first; line < end; line++) {
      if (!test(line)) continue;
      const from = Math.max(offset, line * CACHE_LINE_BYTES);
      const to = Math.min(offset + length, (line + 1) * CACHE_LINE_BYTES);
      const last = out[out.length - 1];
      if (last && last.offset + last.length === from) last.length += to - from;
      else out.push({ offset: from, length: to - from });
    }
    return out;
  }

  /** Speculative fill of every invalid line of the range. */
  prefetch(offset: number, length: number, memory: BackingAccess): void {
    const [first, end] = this.lines(offset, length);
    for (let line = first; line < end; line++) if (this.state[line] === INVALID) this.fill(line, memory);
  }

  cpuRead(offset: number, length: number, memory: BackingAccess): { bytes: Uint8Array; stale: ByteRange[] } {
    const [first, end] = this.lines(offset, length);
    for (let line = first; line < end; line++) if (this.state[line] === INVALID) this.fill(line, memory);
    return { bytes: this.data.slice(offset, offset + length), stale: this.ranges(offset, length, (l) => this.stale[l] === 1) };
  }

  cpuWrite(offset: number, bytes: Uint8Array, memory: BackingAccess): void {
    const [first, end] = this.lines(offset, bytes.length);
    for (let line = first; line < end; line++) if (this.state[line] === INVALID) this.fill(line, memory);
    this.data.set(bytes, offset);
    for (let line = first; line < end; line++) this.state[line] = DIRTY;
  }

  /** Returns the ranges the GPU reads without the CPU's newer bytes. */
  gpuRead(offset: number, length: number): ByteRange[] {
    return this.ranges(offset, length, (l) => this.state[l] === DIRTY);
  }

  /** The GPU wrote memory: returns the ranges whose dirty CPU bytes collide with it (lost writes). */
  gpuWrite(offset: number, length: number): ByteRange[] {
    const lost = this.ranges(offset, length, (l) => this.state[l] === DIRTY);
    const [first, end] = this.lines(offset, length);
    for (let line = first; line < end; line++) if (this.state[line] !== INVALID) this.stale[line] = 1;
    return lost;
  }

  /** Write back dirty lines of the range and invalidate every line of it. Returns lines written back. */
  invalidate(offset: number, length: number, memory: BackingAccess): number {
    const [first, end] = this.lines(offset, length);
    let written = 0;
    for (let line = first; line < end; line++) {
      if (this.state[line] === DIRTY) {
        const start = line * CACHE_LINE_BYTES;
        memory.write(start, this.data.subarray(start, Math.min(start + CACHE_LINE_BYTES, this.sizeBytes)));
        written++;
      }
      this.state[line] = INVALID;
      this.stale[line] = 0;
    }
    return written;
  }

  dirtyLines(): number { let n = 0; for (const s of this.state) if (s === DIRTY) n++; return n; }
}
