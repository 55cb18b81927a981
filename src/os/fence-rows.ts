// Native fences kept as rows until something asks for them (src/os/README.md, "Fences as rows").

import { grownTo } from '../base/grow.js';
import { KERNEL_VA_BASE, UINT64_MAX } from '../base/wddm.js';
import { GlobalFence, LocalFence, type HandleObject, type OsAdapter, type OsDevice } from './objects.js';
import type { DeferredEntries, DeferredFences } from './tables.js';

const WORDS = 3, INTRA_GPU = 1, SHAREABLE = 2, SYSTEM_MAPPED = 4, LIVE = 8;

/**
 * A native fence as the OS's paths that work on rows name it (src/os/README.md, "Fences as rows"): its GlobalFence
 * once it has one, else its row key (`rowKey`: core id × 8 + adapter index, the same number as its creator handle's
 * token). A fence that is a row has no object until something asks for one; a key of a fence made since resolves to
 * it (`fenceKeyObject`), so paths that need the object (multi-fence waits, closes, tools) still get it.
 */
export type FenceKey = GlobalFence | number;

/** How many adapters a row key can name: its adapter index is the key's remainder by this, its core id the quotient. */
export const ROW_KEY_ADAPTERS = 8;
/** The row key of core fence `coreFence` on adapter `adapterIndex` (index < ROW_KEY_ADAPTERS). */
export const rowKey = (adapterIndex: number, coreFence: number): number => coreFence * ROW_KEY_ADAPTERS + adapterIndex;
/** The adapter index of a row key (or of a creator handle's token: the same number). */
export const rowKeyAdapterIndex = (key: number): number => key % ROW_KEY_ADAPTERS;
/** The core id of a row key (or of a creator handle's token). */
export const rowKeyCoreFence = (key: number): number => Math.floor(key / ROW_KEY_ADAPTERS);
/** The core id of the row a handle's token names if it is on adapter `adapterIndex`; -1 for no row (0) or another adapter's. */
export const rowOnAdapter = (token: number, adapterIndex: number): number => (token !== 0 && rowKeyAdapterIndex(token) === adapterIndex ? rowKeyCoreFence(token) : -1);
/** The core id a key names. */
export const keyCoreFence = (key: FenceKey): number => (typeof key === 'number' ? rowKeyCoreFence(key) : key.coreFence);
/** The adapter a key names, of `adapters` (the OS's, by index). */
export const keyAdapter = (key: FenceKey, adapters: readonly OsAdapter[]): OsAdapter => (typeof key === 'number' ? adapters[rowKeyAdapterIndex(key)] : key.adapter);
/** The rows of `adapter` (undefined: it never kept one). */
export const rowsOf = (adapter: OsAdapter): AdapterFenceRows | undefined => adapter.fences.deferred as AdapterFenceRows | undefined;

/**
 * The object `key` names now, making none: the GlobalFence itself, a row key's GlobalFence made since, or undefined
 * (the fence is still a row, or gone).
 */
export function fenceKeyPeek(key: FenceKey, adapters: readonly OsAdapter[]): GlobalFence | undefined {
  return typeof key === 'number' ? adapters[rowKeyAdapterIndex(key)].fences.peek(rowKeyCoreFence(key)) : key;
}

/** The GlobalFence `key` names, made from its row if it is still one (undefined: gone). */
export function fenceKeyObject(key: FenceKey, adapters: readonly OsAdapter[]): GlobalFence | undefined {
  return typeof key === 'number' ? adapters[rowKeyAdapterIndex(key)].fences.get(rowKeyCoreFence(key)) : key;
}

/** The key of the live fence `coreFence` of `adapter`, making nothing: its GlobalFence, else its row's key, else undefined. */
export function fenceKeyAt(adapter: OsAdapter, coreFence: number): FenceKey | undefined {
  const object = adapter.fences.peek(coreFence);
  if (object !== undefined) return object;
  return rowsOf(adapter)?.has(coreFence) ? rowKey(adapter.index, coreFence) : undefined;
}

/**
 * `key` as the paths that work on rows keep it: the GlobalFence when the fence has one by now (it stays for good),
 * else the row key while the row lives, else undefined (gone).
 */
export function liveFenceKey(key: FenceKey, adapters: readonly OsAdapter[]): FenceKey | undefined {
  if (typeof key !== 'number') return key;
  const adapter = adapters[rowKeyAdapterIndex(key)], coreFence = rowKeyCoreFence(key);
  const object = adapter.fences.peek(coreFence);
  if (object !== undefined) return object;
  return rowsOf(adapter)?.has(coreFence) ? key : undefined;
}

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
  /**
   * Each row's MonitoredValue as the OS last set it (a row with CPU waiters has one of its own), XOR UINT64_MAX: 0 is
   * UINT64_MAX, a fresh fence's. Grown by core id only when a row's first moves (grownTo), so rows nobody waits on
   * cost nothing here; zeroed when the row is made into its objects (GlobalFence.monitoredValue holds it then).
   */
  private monitored = new BigUint64Array(0);

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
    if (coreFence < this.monitored.length) this.monitored[coreFence] = 0n;
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
  /** D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS of the row (has() true). */
  flagsOf(coreFence: number): number { return (this.words[coreFence * WORDS] >>> 4) & 0xfff; }
  /** The device that created the row's fence (has() true). */
  deviceOf(coreFence: number): OsDevice { return this.devices[this.words[coreFence * WORDS] >>> 16]; }

  /** The row's MonitoredValue as the OS last set it (GlobalFence.monitoredValue of a row): UINT64_MAX until a waiter moves it. */
  monitoredValueOf(coreFence: number): bigint {
    return coreFence < this.monitored.length ? this.monitored[coreFence] ^ UINT64_MAX : UINT64_MAX;
  }
  setMonitoredValue(coreFence: number, value: bigint): void {
    if (coreFence >= this.monitored.length) {
      if (value === UINT64_MAX) return;
      this.monitored = grownTo(this.monitored, coreFence + 1);
    }
    this.monitored[coreFence] = value ^ UINT64_MAX;
  }
  /** The row's MonitoredValue kernel CPU VA (GlobalFence.kernelMvVa of a row: derived from the core's address, not stored). */
  kernelMvVa(coreFence: number): bigint { return KERNEL_VA_BASE + BigInt(this.adapter.core.fenceMonitoredValueAddress(coreFence)); }

  /** Makes the row's GlobalFence and its handle's LocalFence and enters both (replacing the row and the token). */
  materialize(coreFence: number): GlobalFence {
    const { adapter, words } = this, at = coreFence * WORDS;
    const bits = words[at], device = this.devices[bits >>> 16], handle = words[at + 2];
    const global = new GlobalFence(adapter, coreFence, (bits & INTRA_GPU) !== 0 ? 'INTRA_GPU' : 'DEFAULT', (bits >>> 4) & 0xfff, (bits & SHAREABLE) !== 0,
      adapter.core.fenceCurrentValueAddress(coreFence), adapter.core.fenceMonitoredValueAddress(coreFence),
      (bits & SYSTEM_MAPPED) !== 0 ? adapter.systemPages : undefined, undefined);
    global.hGlobal = words[at + 1];
    if (coreFence < this.monitored.length) { global.monitoredValue = this.monitored[coreFence] ^ UINT64_MAX; this.monitored[coreFence] = 0n; }
    let local: LocalFence | undefined;
    if (handle !== 0) {
      local = this.made = new LocalFence(device.process, handle, global, device, (words[at + 1] + this.localDelta!) >>> 0);
      global.locals.add(local);
      device.process.handles.set(handle, local); // the row still names the handle here
    }
    words.fill(0, at, at + WORDS);
    adapter.fences.set(coreFence, global);
    adapter.rowReferences.adopt(coreFence, global, local); // GPU commands in flight through the row's handle
    if (--this.live === 0 && words.length > 8 * WORDS) { this.words = new Uint32Array(8 * WORDS); this.devices = []; this.localDelta = undefined; this.monitored = new BigUint64Array(0); }
    return global;
  }
}

/** What every process's handle table asks about a token (its `deferred`). */
export class FenceHandleRows implements DeferredEntries<HandleObject> {
  constructor(private readonly adapters: readonly OsAdapter[]) {}
  private rows(token: number): AdapterFenceRows { return this.adapters[rowKeyAdapterIndex(token)].fences.deferred as AdapterFenceRows; }
  handleOf(token: number): number { return this.rows(token).handleOf(rowKeyCoreFence(token)); }
  materialize(token: number): HandleObject {
    const rows = this.rows(token);
    rows.materialize(rowKeyCoreFence(token));
    const local = rows.made!;
    rows.made = undefined;
    return local;
  }
}
