// Native fences kept as rows until something asks for them (src/os/README.md, "Fences as rows").

import { grownTo } from '../base/grow.js';
import { GlobalFence, LocalFence, type HandleObject, type OsAdapter, type OsDevice } from './objects.js';
import type { DeferredEntries, DeferredFences } from './tables.js';

const WORDS = 3, INTRA_GPU = 1, SHAREABLE = 2, SYSTEM_MAPPED = 4, LIVE = 8;

/** One adapter's rows by core fence id (its `fences` table's `deferred`). */
export class AdapterFenceRows implements DeferredFences<GlobalFence> {
  /** u32 × 3 by core id: bits | flags << 4 | device index << 16, hGlobal, handle; zeroed once made. */
  private words = new Uint32Array(8 * WORDS);
  private devices: OsDevice[] = [];
  /**
   * hLocalNativeFence − hGlobalNativeFence (mod 2^32) of every row's handle: the first row's, kept while rows live (a
   * driver that derives its first local handle from the global one, as the reference driver, has one difference).
   * A handle whose difference is another is not kept as a row (holdsLocal).
   */
  private localDelta: number | undefined = undefined;
  /** Rows not made yet: at 0 the table shrinks back (every fence was looked at, as after a wait on each). */
  live = 0;
  /** The LocalFence the last materialize() made, for FenceHandleRows (cleared there: never part of the state). */
  made: LocalFence | undefined = undefined;

  constructor(private readonly adapter: OsAdapter) {}

  /** Can this fence be a row? Its handle's token must be a small integer, its flags and device fit the bits word. */
  fits(coreFence: number, device: OsDevice, flags: number): boolean {
    return coreFence < 2 ** 27 && flags < 2 ** 12 && (this.devices.length < 2 ** 16 || this.devices.includes(device));
  }

  /** The handle table token of `coreFence`'s handle. */
  token(coreFence: number): number { return coreFence * 8 + this.adapter.index; }

  /** Core ids below this may be rows. */
  get extent(): number { return this.words.length / WORDS; }

  has(coreFence: number): boolean { return (this.words[coreFence * WORDS] & LIVE) !== 0; }

  /** Enters the fence part of a row; the handle (0 until then) follows with setHandle. */
  write(coreFence: number, device: OsDevice, type: 'DEFAULT' | 'INTRA_GPU', flags: number, shareable: boolean, systemMapped: boolean, hGlobal: number): void {
    const at = coreFence * WORDS;
    this.words = grownTo(this.words, at + WORDS);
    this.live++;
    let deviceIndex = this.devices.indexOf(device);
    if (deviceIndex < 0) deviceIndex = this.devices.push(device) - 1;
    const words = this.words;
    words[at] = LIVE | (type === 'INTRA_GPU' ? INTRA_GPU : 0) | (shareable ? SHAREABLE : 0) | (systemMapped ? SYSTEM_MAPPED : 0) | (flags << 4) | (deviceIndex << 16);
    words[at + 1] = hGlobal;
  }

  /** Can the row keep `hLocal` as its handle's hLocalNativeFence? (Derived from hGlobal by the rows' one difference.) */
  holdsLocal(coreFence: number, hLocal: number): boolean {
    const delta = (hLocal - this.words[coreFence * WORDS + 1]) >>> 0;
    this.localDelta ??= delta;
    return delta === this.localDelta;
  }

  /** Enters the row's handle (holdsLocal said its hLocalNativeFence fits). */
  setHandle(coreFence: number, handle: number): void {
    this.words[coreFence * WORDS + 2] = handle;
  }
  globalHandleOf(coreFence: number): number { return this.words[coreFence * WORDS + 1]; }
  handleOf(coreFence: number): number { return this.words[coreFence * WORDS + 2]; }

  /** Makes the row's GlobalFence and its handle's LocalFence and enters both (replacing the row and the token). */
  materialize(coreFence: number): GlobalFence {
    const { adapter, words } = this, at = coreFence * WORDS;
    const bits = words[at], device = this.devices[bits >>> 16], handle = words[at + 2];
    const global = new GlobalFence(adapter, coreFence, (bits & INTRA_GPU) !== 0 ? 'INTRA_GPU' : 'DEFAULT', (bits >>> 4) & 0xfff, (bits & SHAREABLE) !== 0,
      adapter.core.fenceCurrentValueAddress(coreFence), adapter.core.fenceMonitoredValueAddress(coreFence),
      (bits & SYSTEM_MAPPED) !== 0 ? adapter.systemPages : undefined, undefined);
    global.hGlobal = words[at + 1];
    if (handle !== 0) {
      const local = this.made = new LocalFence(device.process, handle, global, device, (words[at + 1] + this.localDelta!) >>> 0);
      global.locals.add(local);
      device.process.handles.set(handle, local); // the row still names the handle here
    }
    words.fill(0, at, at + WORDS);
    adapter.fences.set(coreFence, global);
    if (--this.live === 0 && words.length > 8 * WORDS) { this.words = new Uint32Array(8 * WORDS); this.devices = []; this.localDelta = undefined; }
    return global;
  }
}

/** What every process's handle table asks about a token (its `deferred`). */
export class FenceHandleRows implements DeferredEntries<HandleObject> {
  constructor(private readonly adapters: readonly OsAdapter[]) {}
  private rows(token: number): AdapterFenceRows { return this.adapters[token % 8].fences.deferred as AdapterFenceRows; }
  handleOf(token: number): number { return this.rows(token).handleOf(Math.floor(token / 8)); }
  materialize(token: number): HandleObject {
    const rows = this.rows(token);
    rows.materialize(Math.floor(token / 8));
    const local = rows.made!;
    rows.made = undefined;
    return local;
  }
}
