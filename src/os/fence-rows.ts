// Native fences kept as rows until something asks for them. A fence fresh from
// D3DKMTCreateNativeFence (no name, not cross-adapter) is five u32 in its
// adapter's rows by core id, and its creator's handle a number in the process's
// handle table, not a GlobalFence and a LocalFence (~170 B a fence). The first
// lookup of either (src/os/tables.ts: get, values) makes both objects from the
// row, as creation would have made them, and they replace it for good.
//
//   adapter.fences slot   0                  ──first get()──▶ GlobalFence
//   process.handles slot  id × 8 + adapter   ──first get()──▶ LocalFence
//   row (u32 × 5)         type/shareable/System-mapped bits | flags << 8, hGlobalNativeFence,
//                         device (index), handle, hLocalNativeFence

import { GlobalFence, LocalFence, type HandleObject, type OsAdapter, type OsDevice } from './objects.js';
import type { DeferredEntries } from './tables.js';

const WORDS = 5, BITS = 0, GLOBAL_HANDLE = 1, DEVICE = 2, HANDLE = 3, LOCAL_HANDLE = 4;
const INTRA_GPU = 1, SHAREABLE = 2, SYSTEM_MAPPED = 4, FLAGS_SHIFT = 8;
/** Adapters a handle table's token can name (createMachine allows at most 8). */
const ADAPTER_BITS = 3;
/** Tokens stay small integers (V8 Smis): a larger core id is made an object at once. */
const MAX_TOKEN = 0x3fff_ffff;

/** A fresh native fence as creation made it, for its row. */
export interface FenceRow {
  type: 'DEFAULT' | 'INTRA_GPU';
  flags: number;
  shareable: boolean;
  systemMapped: boolean;
  hGlobal: number;
}

/** One adapter's rows by core fence id (its `fences` table's `deferred`). */
export class AdapterFenceRows implements DeferredEntries<GlobalFence> {
  /** WORDS u32 per core id, grown by doubling; a row is zeroed once its objects are made. */
  private words = new Uint32Array(8 * WORDS);
  /** The devices rows name (a row keeps an index here). */
  private readonly devices: OsDevice[] = [];

  constructor(private readonly adapter: OsAdapter) {}

  /** Can `coreFence`'s creator handle be a token of a handle table? */
  fits(coreFence: number): boolean { return coreFence * 2 ** ADAPTER_BITS + this.adapter.index <= MAX_TOKEN; }

  /** Enters `coreFence` as a row: the fence part (its handle follows with setHandle, 0 until then). */
  write(coreFence: number, device: OsDevice, row: FenceRow): void {
    if (coreFence * WORDS + WORDS > this.words.length) {
      let length = this.words.length;
      while (length < coreFence * WORDS + WORDS) length *= 2;
      const grown = new Uint32Array(length);
      grown.set(this.words);
      this.words = grown;
    }
    let deviceIndex = this.devices.indexOf(device);
    if (deviceIndex < 0) deviceIndex = this.devices.push(device) - 1;
    const at = coreFence * WORDS;
    this.words[at + BITS] = (row.type === 'INTRA_GPU' ? INTRA_GPU : 0) | (row.shareable ? SHAREABLE : 0) | (row.systemMapped ? SYSTEM_MAPPED : 0) | (row.flags << FLAGS_SHIFT);
    this.words[at + GLOBAL_HANDLE] = row.hGlobal;
    this.words[at + DEVICE] = deviceIndex;
    this.words[at + HANDLE] = 0;
    this.words[at + LOCAL_HANDLE] = 0;
  }

  /** The creator's handle and the driver's hLocalNativeFence, once opened. */
  setHandle(coreFence: number, handle: number, hLocal: number): void {
    this.words[coreFence * WORDS + HANDLE] = handle;
    this.words[coreFence * WORDS + LOCAL_HANDLE] = hLocal;
  }

  /** The handle table token of `coreFence`'s creator handle. */
  token(coreFence: number): number { return coreFence * 2 ** ADAPTER_BITS + this.adapter.index; }

  /** The driver's hGlobalNativeFence of a row. */
  globalHandleOf(coreFence: number): number { return this.words[coreFence * WORDS + GLOBAL_HANDLE]; }

  /** The creator handle of a row (0: not opened). */
  handleOf(coreFence: number): number { return this.words[coreFence * WORDS + HANDLE]; }

  /** Makes the row's GlobalFence and its creator's LocalFence, enters both in their tables, zeroes the row. */
  materialize(coreFence: number): GlobalFence {
    const words = this.words, at = coreFence * WORDS;
    const bits = words[at + BITS], hGlobal = words[at + GLOBAL_HANDLE], device = this.devices[words[at + DEVICE]];
    const handle = words[at + HANDLE], hLocal = words[at + LOCAL_HANDLE];
    const adapter = this.adapter;
    const global = new GlobalFence(adapter, coreFence, (bits & INTRA_GPU) !== 0 ? 'INTRA_GPU' : 'DEFAULT', bits >>> FLAGS_SHIFT, (bits & SHAREABLE) !== 0,
      adapter.core.fenceCurrentValueAddress(coreFence), adapter.core.fenceMonitoredValueAddress(coreFence),
      (bits & SYSTEM_MAPPED) !== 0 ? adapter.systemPages : undefined, undefined);
    global.hGlobal = hGlobal;
    adapter.fences.set(coreFence, global);
    if (handle !== 0) {
      const process = device.process;
      const local = new LocalFence(process, handle, global, device, hLocal);
      global.locals.add(local);
      process.handles.set(handle, local); // replaces the token (the row still names the handle until zeroed below)
    }
    words.fill(0, at, at + WORDS);
    return global;
  }
}

/** The rows behind the handle tables' tokens (every process's `handles.deferred`): token = core id × 8 + adapter index. */
export class FenceHandleRows implements DeferredEntries<HandleObject> {
  constructor(private readonly adapters: readonly OsAdapter[]) {}

  private split(token: number): { rows: AdapterFenceRows; coreFence: number } {
    const adapter = this.adapters[token % 2 ** ADAPTER_BITS];
    return { rows: adapter.fences.deferred as AdapterFenceRows, coreFence: Math.floor(token / 2 ** ADAPTER_BITS) };
  }

  handleOf(token: number): number {
    const { rows, coreFence } = this.split(token);
    return rows.handleOf(coreFence);
  }

  materialize(token: number): HandleObject {
    const { rows, coreFence } = this.split(token);
    const handle = rows.handleOf(coreFence);
    const global = this.adapters[token % 2 ** ADAPTER_BITS].fences.get(coreFence)!;
    for (const local of global.locals) if (local.handle === handle) return local;
    throw new Error(`internal: fence row ${coreFence} made no handle ${handle}`);
  }
}
