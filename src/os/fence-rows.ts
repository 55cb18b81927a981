// Fences as rows: the one store of every fence's state, and its objects made on demand (src/os/README.md, "Fences as rows").

import { KERNEL_VA_BASE } from '../base/wddm.js';
import { fenceView, LocalFence, type GlobalFence, type HandleObject, type OsAdapter, type OsDevice } from './objects.js';
import { FenceRows, rowKey, rowKeyAdapterIndex, rowKeyCoreFence, type FenceKey } from './fence-store.js';
import type { DeferredEntries, DeferredFences } from './tables.js';

export { ROW_KEY_ADAPTERS, rowKey, rowKeyAdapterIndex, rowKeyCoreFence, type FenceKey } from './fence-store.js';

/** The core id of the row a handle's token names if it is on adapter `adapterIndex`; -1 for no row (0) or another adapter's. */
export const rowOnAdapter = (token: number, adapterIndex: number): number => (token !== 0 && rowKeyAdapterIndex(token) === adapterIndex ? rowKeyCoreFence(token) : -1);
/** The adapter a key names, of `adapters` (the OS's, by index). */
export const keyAdapter = (key: FenceKey, adapters: readonly OsAdapter[]): OsAdapter => adapters[rowKeyAdapterIndex(key)];
/** The rows of `adapter`: its fences' one store, and the making of their views. */
export const rowsOf = (adapter: OsAdapter): AdapterFenceRows => adapter.rows as AdapterFenceRows;

/** The view of the fence `key` names, made from its row if it has none yet (undefined: gone). For tools and object paths. */
export function viewOf(key: FenceKey, adapters: readonly OsAdapter[]): GlobalFence | undefined {
  return adapters[rowKeyAdapterIndex(key)].fences.get(rowKeyCoreFence(key));
}

/** The key of the live fence `coreFence` of `adapter`, or undefined (no such fence: a destroyed fence's row is removed). */
export function keyAt(adapter: OsAdapter, coreFence: number): FenceKey | undefined {
  return rowsOf(adapter).has(coreFence) ? rowKey(adapter.index, coreFence) : undefined;
}

/** `key` while its fence lives (its row is there), else undefined. */
export function liveKey(key: FenceKey, adapters: readonly OsAdapter[]): FenceKey | undefined {
  return keyAt(adapters[rowKeyAdapterIndex(key)], rowKeyCoreFence(key));
}

/** The fence's name for people, from its row (GlobalFence.label: its creation name, or `fence<core id>`). */
export function keyLabel(key: FenceKey, adapters: readonly OsAdapter[]): string {
  const coreFence = rowKeyCoreFence(key);
  return rowsOf(adapters[rowKeyAdapterIndex(key)]).nameOf(coreFence) ?? `fence${coreFence}`;
}

/**
 * One adapter's fences by core id (OsAdapter.rows, and its `fences` table's `deferred`): the one store of their state
 * (FenceRows, src/os/fence-store.ts), and the making of a fence's objects on demand: its GlobalFence, a view of the row,
 * and, when its creator's handle is still a token, that handle's LocalFence (materialize).
 */
export class AdapterFenceRows extends FenceRows<OsDevice, LocalFence> implements DeferredFences<GlobalFence> {
  /**
   * hLocalNativeFence − hGlobalNativeFence (mod 2^32) of every token handle: the first one's, kept while rows live (a
   * driver that derives its first local handle from the global one, as the reference driver, has one difference).
   * A handle whose difference is another is not kept as a token (holdsLocal).
   */
  private localDelta: number | undefined = undefined;
  /** The LocalFence the last materialize() made, for FenceHandleRows (cleared there: never part of the state). */
  made: LocalFence | undefined = undefined;

  constructor(private readonly adapter: OsAdapter) {
    super((coreFence) => adapter.core.fenceMonitoredValueAddress(coreFence));
  }

  protected override shrink(): void {
    super.shrink();
    this.localDelta = undefined;
  }

  /** Can this fence's creator handle be a token? Its core id must make a small integer token, its device fit the row. */
  fits(coreFence: number, device: OsDevice): boolean {
    return coreFence < 2 ** 27 && this.holdsDevice(device);
  }

  /** The handle table token of `coreFence`'s creator handle. */
  token(coreFence: number): number { return rowKey(this.adapter.index, coreFence); }

  /** Can the row keep `hLocal` as its token handle's hLocalNativeFence? (Derived from hGlobal by the rows' one difference.) */
  holdsLocal(coreFence: number, hLocal: number): boolean {
    const delta = (hLocal - this.globalHandleOf(coreFence)) >>> 0;
    this.localDelta ??= delta;
    return delta === this.localDelta;
  }

  /** The row's MonitoredValue kernel CPU VA (derived from the core's address, not stored). */
  kernelMvVa(coreFence: number): bigint { return KERNEL_VA_BASE + BigInt(this.mvPhysOf(coreFence, coreFence)); }

  /**
   * Makes the fence's view and enters it; a creator handle still a token gets its LocalFence (in the handle table in
   * place of the token). No state moves: the row stays the fence's store and the token handle's (LocalFence.wasToken).
   */
  materialize(coreFence: number): GlobalFence {
    const { adapter } = this, handle = this.handleOf(coreFence);
    const global = fenceView(adapter, coreFence);
    let local: LocalFence | undefined;
    if (handle !== 0) {
      const device = this.deviceOf(coreFence);
      local = this.made = new LocalFence(device.process, handle, global, device, (this.globalHandleOf(coreFence) + this.localDelta!) >>> 0, true);
      global.locals.add(local);
      device.process.handles.set(handle, local); // the handle table still holds the token here
      this.setHandle(coreFence, 0);
    }
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
