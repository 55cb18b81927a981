// The one store of an adapter's fences' state: a row per fence by core id (src/os/README.md, "Fences as rows").
// Generic over the device and handle records (src/os/objects.ts's), so it imports nothing of the OS, only
// src/base/grow.ts; src/os/objects.ts's GlobalFence is a view of a row, src/os/fence-rows.ts makes the views.

import { grownTo } from '../base/grow.js';

/** A fence row's first word (FenceRows): yes/no state in the low bits, the sync flags above, the creator's device index on top. */
export const ROW_LIVE = 1, ROW_INTRA_GPU = 2, ROW_SHAREABLE = 4, ROW_SYSTEM_MAPPED = 8, ROW_DESTROYED = 16, ROW_DESTROY_PENDING = 32,
  ROW_MONITORED = 64, ROW_MONITORED_VALUE_HELD = 128, ROW_NO_MONITORED_VALUE = 256;
export const ROW_FLAGS_SHIFT = 9, ROW_FLAGS_MASK = 0x7ff;
const ROW_DEVICE_SHIFT = 20;
/** u32 words a fence row: bits | flags | device index, hGlobalNativeFence, the creator's handle while it is a token, CurrentValue's physical address. */
export const ROW_WORDS = 4, ROW_BITS = 0, ROW_GLOBAL_HANDLE = 1, ROW_CV_PHYS = 3;
const ROW_HANDLE = 2;
/** A row's first word can name this many devices of its creator (one past it: the creator handle is an object, src/os/fence-rows.ts). */
export const ROW_DEVICES = 2 ** (32 - ROW_DEVICE_SHIFT);
/** Sync flags a row holds (D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS: bits 0 … 10). */
export const ROW_FLAGS_LIMIT = ROW_FLAGS_MASK + 1;
/**
 * A fence as the OS names it (src/os/README.md, "One name for a fence"): its row key, core id × ROW_KEY_ADAPTERS +
 * adapter index (a fence's core id is 1 or more, so a key is never 0; the same number as its creator handle's token
 * while that handle is one). Every store that keeps a fence past a call (waiter slots, the NF-09 loop's sets and
 * batches, an interrupt's list, the log reader's entries ahead) keeps its key, and what it reads of the fence it
 * reads from the row the key names, the fence's one store. A key names its fence while the row lives: a fence is
 * destroyed under the OS's lock, its waiters released first and its key taken out of the loop's set, so no key of
 * a destroyed fence is read after (`liveKey` says gone for a key whose row is gone). A `GlobalFence` view is made
 * from a key (`viewOf`, src/os/fence-rows.ts) only where an object is handed out: tools, and paths that take a fence's handle record.
 */
export type FenceKey = number;

/** How many adapters a row key can name: its adapter index is the key's remainder by this, its core id the quotient. */
export const ROW_KEY_ADAPTERS = 8;
/** The row key of core fence `coreFence` on adapter `adapterIndex` (index < ROW_KEY_ADAPTERS). */
export const rowKey = (adapterIndex: number, coreFence: number): FenceKey => coreFence * ROW_KEY_ADAPTERS + adapterIndex;
/** The adapter index of a row key (or of a creator handle's token: the same number). */
export const rowKeyAdapterIndex = (key: FenceKey): number => key % ROW_KEY_ADAPTERS;
/** The core id of a row key (or of a creator handle's token). */
export const rowKeyCoreFence = (key: FenceKey): number => Math.floor(key / ROW_KEY_ADAPTERS);

/** What few fences have (a name, NT handles), out of line. */
interface RareFenceState { name: string | undefined; ntReferences: number }

/**
 * The one store of an adapter's fences' state, by core fence id (src/os/README.md, "Fences as rows"): every fence
 * the OS keeps on the adapter (native, monitored, a cross-adapter fence's record) is a row here from creation to
 * destruction, and its GlobalFence (src/os/objects.ts) is a view that reads and writes it. Generic over the device
 * and handle records (src/os/objects.ts's), so this file imports nothing of the OS.
 *
 *   words     u32 × 4 by core id: bits | flags << 9 | device index << 20, hGlobal, handle, cvPhys   (16 B a fence)
 *   monitored u64 by core id, MonitoredValue XOR UINT64_MAX (0: UINT64_MAX, a fresh fence's); grown only when a
 *             fence's first moves
 *   inFlight  u32 × 2 by core id: GPU waits and GPU signals in flight naming the fence; grown at the first
 *   tokenHandles u32 by core id: the state of the fence's creator handle if it was kept as a token, for its whole life
 *             (LocalFence's encoding: closing, used by the GPU, 4 × commands in flight); grown at the first
 *   held      the fence's LocalFence records (one, or an array past one) by core id; only fences that have one
 *   rare      name and NT references by core id; only the fences that have one
 *
 * A destroyed fence's view keeps answering from a copy of its last row (detach): the id may be another fence's soon.
 */
export class FenceRows<Device, Local> {
  /** The rows' words (replaced as they grow: read through the rows each time). GlobalFence's hot getters read it directly. */
  words = new Uint32Array(8 * ROW_WORDS);
  private devices: Device[] = [];
  private monitored = new BigUint64Array(0);
  private inFlight = new Uint32Array(0);
  private tokenHandles = new Uint32Array(0);
  private held: (Local | Local[] | undefined)[] = [];
  private rare = new Map<number, RareFenceState>();
  /** Live rows: at 0 the columns shrink back. */
  live = 0;
  /** A detached row's MonitoredValue address (its core id may be another fence's by now); -1: the core's for the id. */
  private detachedMvPhys = -1;

  constructor(private readonly mvPhysOfCoreFence: (coreFence: number) => number) {}

  /** Core ids below this may be rows. */
  get extent(): number { return this.words.length / ROW_WORDS; }

  has(coreFence: number): boolean { return coreFence < this.extent && (this.words[coreFence * ROW_WORDS] & ROW_LIVE) !== 0; }

  /** Enters a new fence's row: `bits` (ROW_*, not ROW_LIVE), its sync flags, its creator's device (undefined: none kept). */
  create(coreFence: number, bits: number, flags: number, device: Device | undefined, hGlobal: number, cvPhys: number, name: string | undefined): void {
    if (flags >= ROW_FLAGS_LIMIT) throw new RangeError(`fence rows: flags ${flags} do not fit a row`);
    const at = coreFence * ROW_WORDS;
    this.words = grownTo(this.words, at + ROW_WORDS);
    this.live++;
    let deviceIndex = 0;
    if (device !== undefined) {
      deviceIndex = this.devices.indexOf(device);
      if (deviceIndex < 0) deviceIndex = this.devices.push(device) - 1;
    }
    const words = this.words;
    words[at + ROW_BITS] = ROW_LIVE | bits | (flags << ROW_FLAGS_SHIFT) | (deviceIndex << ROW_DEVICE_SHIFT);
    words[at + ROW_GLOBAL_HANDLE] = hGlobal;
    words[at + ROW_HANDLE] = 0;
    words[at + ROW_CV_PHYS] = cvPhys;
    if (name !== undefined) this.rare.set(coreFence, { name, ntReferences: 0 });
  }

  /** Can the row keep its creator's device (for a handle kept as a token)? */
  holdsDevice(device: Device): boolean { return this.devices.length < ROW_DEVICES || this.devices.includes(device); }

  /** Removes a destroyed fence's row (its view detached first): the id is free for another fence. */
  remove(coreFence: number): void {
    if (!this.has(coreFence)) return;
    this.words.fill(0, coreFence * ROW_WORDS, (coreFence + 1) * ROW_WORDS);
    if (coreFence < this.monitored.length) this.monitored[coreFence] = 0n;
    if (coreFence * 2 < this.inFlight.length) this.inFlight[coreFence * 2] = this.inFlight[coreFence * 2 + 1] = 0;
    if (coreFence < this.tokenHandles.length) this.tokenHandles[coreFence] = 0;
    if (coreFence < this.held.length) this.held[coreFence] = undefined;
    this.rare.delete(coreFence);
    if (--this.live === 0) this.shrink();
  }

  /** No row lives: the columns go back to their first size (the same rows are the same bytes: the race explorer hashes them). */
  protected shrink(): void {
    if (this.words.length > 8 * ROW_WORDS) this.words = new Uint32Array(8 * ROW_WORDS);
    this.devices = [];
    this.monitored = new BigUint64Array(0);
    this.inFlight = new Uint32Array(0);
    this.tokenHandles = new Uint32Array(0);
    this.held = [];
  }

  /** A copy of row `coreFence` as row 0 of rows of its own: what a destroyed fence's view reads from then. */
  detach(coreFence: number): FenceRows<Device, Local> {
    const copy = new FenceRows<Device, Local>(this.mvPhysOfCoreFence);
    const at = coreFence * ROW_WORDS;
    copy.words.set(this.words.subarray(at, at + ROW_WORDS));
    copy.words[ROW_BITS] &= ~(~0 << ROW_DEVICE_SHIFT); // no device: the copy keeps none
    copy.live = 1;
    copy.setMonitoredValue(0, this.monitoredValueOf(coreFence));
    copy.setWaitsInFlight(0, this.waitsInFlight(coreFence));
    copy.setSignalsInFlight(0, this.signalsInFlight(coreFence));
    copy.setTokenHandleState(0, this.tokenHandleStateOf(coreFence));
    copy.held[0] = this.held[coreFence];
    const rare = this.rare.get(coreFence);
    if (rare !== undefined) copy.rare.set(0, rare);
    copy.detachedMvPhys = this.mvPhysOf(coreFence, coreFence);
    return copy;
  }

  bitsOf(coreFence: number): number { return this.words[coreFence * ROW_WORDS + ROW_BITS]; }
  setBit(coreFence: number, bit: number, on: boolean): void {
    const at = coreFence * ROW_WORDS + ROW_BITS;
    this.words[at] = on ? this.words[at] | bit : this.words[at] & ~bit;
  }
  /** D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS of the row. */
  flagsOf(coreFence: number): number { return (this.words[coreFence * ROW_WORDS + ROW_BITS] >>> ROW_FLAGS_SHIFT) & ROW_FLAGS_MASK; }
  /** The device that created the row's fence (for a row whose creator handle is a token). */
  deviceOf(coreFence: number): Device { return this.devices[this.words[coreFence * ROW_WORDS + ROW_BITS] >>> ROW_DEVICE_SHIFT]; }
  globalHandleOf(coreFence: number): number { return this.words[coreFence * ROW_WORDS + ROW_GLOBAL_HANDLE]; }
  setGlobalHandle(coreFence: number, hGlobal: number): void { this.words[coreFence * ROW_WORDS + ROW_GLOBAL_HANDLE] = hGlobal; }
  /** The creator's handle while the handle table holds it as a token (0: none, or its LocalFence is made). */
  handleOf(coreFence: number): number { return this.words[coreFence * ROW_WORDS + ROW_HANDLE]; }
  setHandle(coreFence: number, handle: number): void { this.words[coreFence * ROW_WORDS + ROW_HANDLE] = handle; }
  cvPhysOf(coreFence: number): number { return this.words[coreFence * ROW_WORDS + ROW_CV_PHYS]; }
  /** MonitoredValue's physical address: from the core (0 for a fence with none), a detached row's kept. */
  mvPhysOf(at: number, coreFence: number): number {
    if ((this.bitsOf(at) & ROW_NO_MONITORED_VALUE) !== 0) return 0;
    return this.detachedMvPhys >= 0 ? this.detachedMvPhys : this.mvPhysOfCoreFence(coreFence);
  }

  /** The MonitoredValue the OS last set (UINT64_MAX until a waiter moves it). */
  monitoredValueOf(coreFence: number): bigint {
    return coreFence < this.monitored.length ? this.monitored[coreFence] ^ 0xffff_ffff_ffff_ffffn : 0xffff_ffff_ffff_ffffn;
  }
  setMonitoredValue(coreFence: number, value: bigint): void {
    if (coreFence >= this.monitored.length) {
      if (value === 0xffff_ffff_ffff_ffffn) return;
      this.monitored = grownTo(this.monitored, coreFence + 1);
    }
    this.monitored[coreFence] = value ^ 0xffff_ffff_ffff_ffffn;
  }

  /** GPU waits in flight naming the fence (submitted, not executed; any process, any queue). */
  waitsInFlight(coreFence: number): number { return coreFence * 2 < this.inFlight.length ? this.inFlight[coreFence * 2] : 0; }
  signalsInFlight(coreFence: number): number { return coreFence * 2 < this.inFlight.length ? this.inFlight[coreFence * 2 + 1] : 0; }
  setWaitsInFlight(coreFence: number, count: number): void { this.setInFlight(coreFence * 2, count); }
  setSignalsInFlight(coreFence: number, count: number): void { this.setInFlight(coreFence * 2 + 1, count); }
  private setInFlight(at: number, count: number): void {
    if (at >= this.inFlight.length) {
      if (count === 0) return;
      this.inFlight = grownTo(this.inFlight, (at | 1) + 1);
    }
    this.inFlight[at] = count;
  }

  /**
   * The state of the fence's creator handle if it was kept as a token (src/os/fence-rows.ts), in LocalFence's encoding
   * (closing 1, used by the GPU 2, 4 × GPU commands in flight through it): here while it is a token and after its
   * LocalFence is made, which reads and writes it here (src/os/objects.ts), so nothing moves when the record is made.
   */
  tokenHandleStateOf(coreFence: number): number { return coreFence < this.tokenHandles.length ? this.tokenHandles[coreFence] : 0; }
  setTokenHandleState(coreFence: number, state: number): void {
    if (coreFence >= this.tokenHandles.length) {
      if (state === 0) return;
      this.tokenHandles = grownTo(this.tokenHandles, coreFence + 1);
    }
    this.tokenHandles[coreFence] = state;
  }

  /** The fence's handle records: one, an array of them in the order opened, or undefined. */
  heldOf(coreFence: number): Local | Local[] | undefined { return this.held[coreFence]; }
  setHeld(coreFence: number, held: Local | Local[] | undefined): void {
    if (held === undefined && coreFence >= this.held.length) return;
    this.held[coreFence] = held;
  }

  nameOf(coreFence: number): string | undefined { return this.rare.get(coreFence)?.name; }
  ntReferencesOf(coreFence: number): number { return this.rare.get(coreFence)?.ntReferences ?? 0; }
  setNtReferences(coreFence: number, count: number): void {
    const rare = this.rare.get(coreFence);
    if (rare !== undefined) rare.ntReferences = count;
    else if (count !== 0) this.rare.set(coreFence, { name: undefined, ntReferences: count });
  }
}
