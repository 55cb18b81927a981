// The OS's records: adapters, processes and their handle tables, devices,
// fences (one GlobalFence per adapter record, one LocalFence per process
// handle), hardware queues, kernel-mode contexts, CPU events, and the small
// rules every module shares (reading a fence's value, one fence per call).
//
// Every other file of src/os/ imports this one; it imports none of them but
// tables.ts (the flat tables the records are kept in) and fence-store.ts (the
// fences' rows, which a GlobalFence is a view of).
// Why this file is long: the records are packed (flags, counts and rare
// fields folded into few fields, a field costs 8 B a fence) and their
// accessors sit with them; every module shares them, so they stay in one file.
// The records are plain data the modules own between them:
//
//   OsAdapter ──devices──▶ OsDevice ──queues──▶ OsHwQueue
//      │ rows (every fence's state, by core id: fence-store.ts), fences (their views, by core id),
//      │ byGlobalHandle (by the driver's handle), withWaiters
//      ▼
//   GlobalFence (a view of its row) ◀──global── LocalFence (a handle of one process; NT handles hold the GlobalFence)
//
// What the OS knows of the GPU is what the driver reported (GpuProgress):
// a queue's commands still in its ring and the wait it is blocked on.

import type { OsCore, WasmMemory } from '../core/bindings.js';
import { u64 as asU64 } from '../core/bindings.js';
import type { ContextCommand, DriverStartResult, GpuProgressReport } from '../ddi/ddi.js';
import type { SubmissionCommands } from './command-list.js';
import { WddmError } from '../base/errors.js';
import { grownTo } from '../base/grow.js';
import type { DriverPort } from '../port/driver-port.js';
import { ClosedHandles, HandleTable, type EditClock, type FenceTable, type RecentValues, type ValueTable } from './tables.js';
import {
  ROW_BITS, ROW_CV_PHYS, ROW_DESTROYED, ROW_DESTROY_PENDING, ROW_FLAGS_MASK, ROW_FLAGS_SHIFT, ROW_GLOBAL_HANDLE, ROW_INTRA_GPU, ROW_MONITORED, ROW_MONITORED_VALUE_HELD, ROW_NO_MONITORED_VALUE, ROW_SHAREABLE, ROW_SYSTEM_MAPPED, ROW_WORDS,
  rowKey, type FenceKey, type FenceRows,
} from './fence-store.js';
import type { IntMap } from '../base/int-map.js';
import {
  KERNEL_VA_BASE, SYNC_FLAG_BITS, USER_VA_BASE, VIDSCHCAPS,
  type NativeFenceTypeName, type SyncObjectFlagName,
} from '../base/wddm.js';

// ── adapters ──

export type AdapterState = 'running' | 'stopped';

export interface BugCheckReport {
  adapter: string;
  code: string;
  message: string;
  timeNs: number;
}

/**
 * The kernel CPU VA updateCurrentValuesFromCpu's last batch of one passed, by the CurrentValue address it maps (the VA
 * is KERNEL_VA_BASE + that address: a BigInt is ~50 ns to make). Under a symbol: no state (the race explorer's key and
 * snapshots walk string keys), and right after any restore since it is keyed by what it is derived from.
 */
export const LAST_KERNEL_CV_VA = Symbol('OsAdapter.lastKernelCvVa');

export interface OsAdapter {
  [LAST_KERNEL_CV_VA]: { of: number; va: bigint };
  index: number;
  name: string;
  /** The OS's view of the adapter's core instance: OS memory only (src/core/bindings.ts). The driver is reached through the port. */
  core: OsCore;
  memory: WasmMemory;
  /**
   * Linear memory as u64 words: a live native fence's CurrentValue read as the core's cpuReadCurrentValue reads it
   * (one aligned 64-bit load) without an export call, which is polymorphic once a process holds several machines
   * (each core instance its own exports object). A machine's memory is made at its final size: one view serves.
   */
  currentValues: BigUint64Array;
  caps: DriverStartResult;
  nativeFence: boolean;
  integrated: boolean;
  engines: number;
  state: AdapterState;
  bugCheck?: BugCheckReport;
  /** Why the adapter was removed for good (Resets.removeAdapter): stopped with no bug check. */
  removal?: string;
  /** Live fences' views by core id (made on demand from `rows`, src/os/fence-rows.ts). */
  fences: FenceTable<GlobalFence>;
  /** The one store of the adapter's fences' state, by core id (its `fences` table's `deferred`). */
  rows: OsFenceRows;
  /** Each live fence's kernel CurrentValue VA by core id (read on every CPU signal: cheaper than deriving it). */
  kernelCurrentValueVas: ValueTable;
  /** The System process's GPU page mappings on this adapter (MapToGpuSystemProcess), once a fence is mapped there. */
  systemPages?: ReadonlyMap<number, { va: bigint }>;
  /**
   * The driver's global handle → core fence id of the live native fences whose handle does not name its id in
   * its low 24 bits (fenceByGlobalHandle; a driver that derives its handles from the ids needs no entry).
   */
  byGlobalHandle: IntMap;
  /** The most recent destroyed fences' global handles (an interrupt naming one gets the clearer bug check). */
  destroyedGlobalHandles: RecentValues;
  /** Fences that currently have CPU waiters (scanned on a no-list interrupt): a bit per core id. */
  withWaiters: FencesWithWaiters;
  devices: Set<OsDevice>;
  /** GPU commands in flight through the handles of fences kept as rows, by core id (src/os/lifetime.ts). */
  rowReferences: RowReferences;
  /**
   * MF-07: on a No64BitAtomics adapter the OS extends each 32-bit value the GPU wrote from the fence's last one.
   * Always true but in the race explorer's variant of an OS that compares the raw word (src/explore/variants.ts).
   */
  extendMonitoredValues: boolean;
}

/** Does the adapter's GPU write only 32 bits atomically (DXGK_VIDSCHCAPS::No64BitAtomics)? */
export function narrow(adapter: OsAdapter): boolean {
  return (adapter.caps.VidSchCaps & VIDSCHCAPS.No64BitAtomics) !== 0;
}

/**
 * The core id a driver global handle is first looked for at: its low 24 bits. A driver that makes its handles from
 * the core ids (the reference driver: base + generation + id) has every fence found there, with no map entry (an
 * IntMap entry cost ~19 B a fence); the record's own handle decides, so any other handle goes through the map.
 */
const handleGuess = (hGlobal: number): number => hGlobal & 0xff_ffff;

/** The driver's global handle of the live native fence `coreFence` on `adapter` (0: none), from its row. */
function globalHandleAt(adapter: OsAdapter, coreFence: number): number {
  const rows = adapter.rows;
  return rows.has(coreFence) && (rows.bitsOf(coreFence) & ROW_MONITORED) === 0 ? rows.globalHandleOf(coreFence) : 0;
}

/** The core id of the live native fence the driver knows as `hGlobal` on `adapter`, or -1. */
export function coreFenceOfGlobalHandle(adapter: OsAdapter, hGlobal: number): number {
  if (hGlobal !== 0 && globalHandleAt(adapter, handleGuess(hGlobal)) === hGlobal) return handleGuess(hGlobal);
  return adapter.byGlobalHandle.get(hGlobal) ?? -1;
}

/** Enters a new native fence's global handle (before or after its record: the guess is checked against the record). */
export function enterGlobalHandle(adapter: OsAdapter, hGlobal: number, coreFence: number): void {
  if (handleGuess(hGlobal) !== coreFence) adapter.byGlobalHandle.set(hGlobal, coreFence);
}

/** The live native fence the driver knows as `hGlobal` on `adapter`. */
export const fenceByGlobalHandle = (adapter: OsAdapter, hGlobal: number): GlobalFence | undefined => adapter.fences.get(coreFenceOfGlobalHandle(adapter, hGlobal));

export function requireRunning(adapter: OsAdapter, parameter: string): void {
  if (adapter.state === 'stopped') throw adapterStopped(adapter, parameter);
}

/** requireRunning's error: `adapter` is stopped (removed, or after a bug check). */
export function adapterStopped(adapter: OsAdapter, parameter: string): WddmError {
  return new WddmError('GRAPHICS_ADAPTER_STOPPED', `${parameter}: adapter "${adapter.name}" is ${adapter.removal !== undefined ? `removed (${adapter.removal})` : `stopped after a bug check (${adapter.bugCheck?.message ?? 'unknown'})`}`,
    { parameter, expected: 'an object of a running adapter' });
}

// ── fences ──

/**
 * The fences of one adapter that have CPU waiters, as much of a Set as its users need: one bit per core id (a Set of
 * 10⁶ waited fences was ~21 MB, and rehashed as it grew and as it emptied, waiter by waiter). Iterated in core id order
 * (every user sorts by it anyway), through the adapter's fence table: a fence is one of its live records.
 */
export class FencesWithWaiters implements Iterable<GlobalFence> {
  private bits = new Uint32Array(2);
  /** Words [from, to): the first word with a set bit to the last (a scan reads only those); 0, 0 when empty. */
  private from = 0;
  private to = 0;
  size = 0;

  constructor(private readonly fences: FenceTable<GlobalFence>) {}

  has(fence: GlobalFence): boolean { return this.hasId(fence.coreFence); }
  add(fence: GlobalFence): this { return this.addId(fence.coreFence); }
  delete(fence: GlobalFence): boolean { return this.deleteId(fence.coreFence); }

  /** has / add / delete by core id: a fence kept as a row (src/os/fence-rows.ts) is in the set without its object. */
  hasId(id: number): boolean {
    const word = id >>> 5;
    return word < this.bits.length && (this.bits[word] & (1 << (id & 31))) !== 0;
  }

  addId(id: number): this {
    const word = id >>> 5, bit = 1 << (id & 31);
    if (word >= this.bits.length) this.bits = grownTo(this.bits, word + 1);
    if ((this.bits[word] & bit) !== 0) return this;
    this.bits[word] |= bit;
    if (this.size++ === 0) { this.from = word; this.to = word + 1; }
    else if (word < this.from) this.from = word;
    else if (word >= this.to) this.to = word + 1;
    return this;
  }

  deleteId(id: number): boolean {
    const word = id >>> 5, bit = 1 << (id & 31);
    if (word >= this.bits.length || (this.bits[word] & bit) === 0) return false;
    const left = this.bits[word] &= ~bit;
    if (--this.size === 0) { this.from = this.to = 0; return true; }
    // The bounds stay tight (the first and the last word with a bit): the same set is the same fields (a race explorer
    // hashes them into its state key).
    if (left === 0 && word === this.from) while (this.bits[this.from] === 0) this.from++;
    if (left === 0 && word === this.to - 1) while (this.bits[this.to - 1] === 0) this.to--;
    return true;
  }

  /** The core ids in the set, in order (a fence kept as a row stays one). */
  *ids(): IterableIterator<number> {
    for (let word = this.from; word < this.to; word++) {
      for (let bits = this.bits[word]; bits !== 0; bits &= bits - 1) yield word * 32 + (31 - Math.clz32(bits & -bits));
    }
  }

  /** The fences that have their objects already, in core id order (rows, which are native fences, are skipped, not made). */
  *objects(): IterableIterator<GlobalFence> {
    for (const id of this.ids()) {
      const fence = this.fences.peek(id);
      if (fence !== undefined) yield fence;
    }
  }

  /** The fences in core id order; a fence kept as a row is made into its objects (a path that needs them: use ids() not to). */
  *[Symbol.iterator](): IterableIterator<GlobalFence> {
    for (const id of this.ids()) {
      const fence = this.fences.get(id);
      if (fence !== undefined) yield fence;
    }
  }
}

/**
 * A fence's handles in the order opened, as much of a Set as its users need: the usual one handle in the one
 * field, an array past it (a Set cost ~250 B a fence). Where the field is, the subclass says (GlobalFence: its row).
 */
export abstract class FenceLocals implements Iterable<LocalFence> {
  protected abstract get held(): LocalFence | LocalFence[] | undefined;
  protected abstract set held(held: LocalFence | LocalFence[] | undefined);

  get size(): number { const held = this.held; return held === undefined ? 0 : Array.isArray(held) ? held.length : 1; }

  has(local: LocalFence): boolean { const held = this.held; return held === local || (Array.isArray(held) && held.includes(local)); }

  add(local: LocalFence): this {
    const held = this.held;
    if (held === undefined) this.held = local;
    else if (Array.isArray(held)) { if (!held.includes(local)) held.push(local); }
    else if (held !== local) this.held = [held, local];
    return this;
  }

  delete(local: LocalFence): boolean {
    const held = this.held;
    if (held === local) { this.held = undefined; return true; }
    if (!Array.isArray(held)) return false;
    const at = held.indexOf(local);
    if (at < 0) return false;
    held.splice(at, 1);
    if (held.length === 1) this.held = held[0];
    return true;
  }

  *[Symbol.iterator](): IterableIterator<LocalFence> {
    const held = this.held;
    if (held === undefined) return;
    if (!Array.isArray(held)) { yield held; return; }
    yield* held.slice();
  }
}

/** The rows a GlobalFence reads: its adapter's (src/os/fence-store.ts FenceRows), or a destroyed fence's copy of its row. */
export type OsFenceRows = FenceRows<OsDevice, LocalFence>;

/**
 * A fence on one adapter: a view of its row in the adapter's FenceRows (src/os/fence-store.ts), the one store of its
 * state, made on demand (src/os/fence-rows.ts) and kept in `adapter.fences` by core id, so one fence is one object
 * for the Sets and Maps that hold fences. It holds no state but where its row is: the adapter's rows at its core id
 * while it lives; once destroyed, a copy of its last row (`destroyed` detaches it: the id may be another fence's).
 * Its handles are kept by the FenceLocals it extends (`locals` is the view itself).
 */
export class GlobalFence extends FenceLocals {
  private rows: OsFenceRows;
  private at: number;
  constructor(readonly adapter: OsAdapter, readonly coreFence: number) {
    super();
    this.rows = adapter.rows;
    this.at = coreFence;
    adapter.kernelCurrentValueVas.set(coreFence, KERNEL_VA_BASE + BigInt(this.rows.cvPhysOf(coreFence)));
  }
  /** The row's first word (the words read directly: the CPU signal's getters are small enough for V8 to inline then). */
  private get bits(): number { return this.rows.words[this.at * ROW_WORDS + ROW_BITS]; }
  protected get held(): LocalFence | LocalFence[] | undefined { return this.rows.heldOf(this.at); }
  protected set held(held: LocalFence | LocalFence[] | undefined) { this.rows.setHeld(this.at, held); }
  /** The fence's handles in the order opened. */
  get locals(): FenceLocals { return this; }
  /** MonitoredValue as the OS last set it (NF-02; UINT64_MAX with no waiter). */
  get monitoredValue(): bigint { return this.rows.monitoredValueOf(this.at); }
  set monitoredValue(value: bigint) { this.rows.setMonitoredValue(this.at, value); }
  /** Submitted GPU waits and signals naming it that have not executed yet (any process, any queue). */
  get gpuWaitsInFlight(): number { return this.rows.waitsInFlight(this.at); }
  set gpuWaitsInFlight(count: number) { this.rows.setWaitsInFlight(this.at, count); }
  get gpuSignalsInFlight(): number { return this.rows.signalsInFlight(this.at); }
  set gpuSignalsInFlight(count: number) { this.rows.setSignalsInFlight(this.at, count); }
  /** The state of its creator handle if that was kept as a token (FenceRows.tokenHandleStateOf; LocalFence reads it). */
  get tokenHandleState(): number { return this.rows.tokenHandleStateOf(this.at); }
  set tokenHandleState(state: number) { this.rows.setTokenHandleState(this.at, state); }
  /** The record of its creator handle that was kept as a token (LocalFence.wasToken), if made and not closed yet. */
  tokenHandle(): LocalFence | undefined {
    for (const local of this) if (local.wasToken) return local;
    return undefined;
  }
  /** The driver's hGlobalNativeFence (0: a monitored fence). */
  get hGlobal(): number { return this.rows.words[this.at * ROW_WORDS + ROW_GLOBAL_HANDLE]; }
  set hGlobal(hGlobal: number) { this.rows.setGlobalHandle(this.at, hGlobal); }
  /** CurrentValue's and MonitoredValue's physical addresses (mvPhys 0: a fence with no MonitoredValue). */
  get cvPhys(): number { return this.rows.words[this.at * ROW_WORDS + ROW_CV_PHYS]; }
  get mvPhys(): number { return this.rows.mvPhysOf(this.at, this.coreFence); }
  /** D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS it was created with. */
  get flags(): number { return (this.bits >>> ROW_FLAGS_SHIFT) & ROW_FLAGS_MASK; }
  /** NT handles (any process) that hold it. */
  get ntReferences(): number { return this.rows.ntReferencesOf(this.at); }
  set ntReferences(count: number) { this.rows.setNtReferences(this.at, count); }
  get systemPages(): ReadonlyMap<number, { va: bigint }> | undefined { return (this.bits & ROW_SYSTEM_MAPPED) !== 0 ? this.adapter.systemPages : undefined; }
  get type(): NativeFenceTypeName { return (this.bits & ROW_INTRA_GPU) !== 0 ? 'INTRA_GPU' : 'DEFAULT'; }
  get shareable(): boolean { return (this.bits & ROW_SHAREABLE) !== 0; }
  /** Storage freed, Destroy DDI called. The view detaches from the adapter's rows: it reads a copy of its last row from then. */
  get destroyed(): boolean { return (this.bits & ROW_DESTROYED) !== 0; }
  set destroyed(on: boolean) {
    if (!on) throw new Error(`internal: ${this.label} cannot be made live again`);
    if (this.destroyed) return;
    this.rows.setBit(this.at, ROW_DESTROYED, true);
    this.rows = this.rows.detach(this.at);
    this.at = 0;
  }
  /** No open handle is left but GPU commands in flight still name it: storage kept (src/os/lifetime.ts). */
  get destroyPending(): boolean { return (this.bits & ROW_DESTROY_PENDING) !== 0; }
  set destroyPending(on: boolean) { this.rows.setBit(this.at, ROW_DESTROY_PENDING, on); }
  /** 'monitored': a WDDM 2.x monitored fence (src/os/monitored.ts): no MonitoredValue, no native DDI. */
  get kind(): 'native' | 'monitored' { return (this.bits & ROW_MONITORED) !== 0 ? 'monitored' : 'native'; }
  /** XA-03: the OS keeps this record's MonitoredValue at 0 (set by src/os/cross-adapter.ts; the NF-09 loop skips it). */
  get monitoredValueHeld(): boolean { return (this.bits & ROW_MONITORED_VALUE_HELD) !== 0; }
  set monitoredValueHeld(on: boolean) { this.rows.setBit(this.at, ROW_MONITORED_VALUE_HELD, on); }
  /** Its row key (src/os/fence-store.ts, FenceKey): the name the OS's stores keep it by. */
  get key(): FenceKey { return rowKey(this.adapter.index, this.coreFence); }
  /** The fence's name for people (traces, errors): its creation name, or `fence<core id>`. */
  get label(): string { return this.rows.nameOf(this.at) ?? `fence${this.coreFence}`; }
  /** Kernel CPU VAs (a stored BigInt costs ~32 B a fence): CurrentValue's from the adapter's table, MonitoredValue's derived. */
  get kernelCvVa(): bigint {
    // The table by core id while the view reads its adapter's rows; a destroyed fence's id may be another fence's by now.
    return this.rows === this.adapter.rows ? this.adapter.kernelCurrentValueVas.get(this.coreFence) : KERNEL_VA_BASE + BigInt(this.cvPhys);
  }
  get kernelMvVa(): bigint { return KERNEL_VA_BASE + BigInt(this.mvPhys); }
  /** The values' GPU VAs in the System process (0n when not mapped there, or no longer). */
  get systemCvVa(): bigint { return pageVa(this.systemPages, this.cvPhys); }
  get systemMvVa(): bigint { return pageVa(this.systemPages, this.mvPhys); }
  hasFlag(name: SyncObjectFlagName): boolean { return (this.flags & (1 << SYNC_FLAG_BITS[name])) !== 0; }
  /**
   * The value as the OS reads it (a monitored fence on a No64BitAtomics adapter: extended from 32 bits, recorded
   * as the last signalled value and written back for user-mode readers, MF-07). The OS's own look: tools use peekValue.
   */
  currentValue(): bigint {
    // A live native fence: its word, through the adapter's view of memory.
    return (this.bits & (ROW_MONITORED | ROW_DESTROYED)) === 0 ? this.adapter.currentValues[this.cvPhys >>> 3] : this.currentValueRead();
  }
  /** currentValue of a monitored fence, or of a destroyed record (whose core id may be another fence's by now): as the core reads it. */
  private currentValueRead(): bigint {
    const raw = asU64(this.adapter.core.cpuReadCurrentValue(this.coreFence));
    return this.kind === 'monitored' ? observeMonitoredValue(this, raw) : raw;
  }
  /**
   * The value currentValue() would return now, changing nothing: no last signalled value recorded, nothing
   * written back. For tools that only look (machine.inspectFence, machine.stuck(), lostWakeups, the fuzz test).
   */
  peekValue(): bigint {
    const core = this.adapter.core;
    const raw = asU64(core.cpuReadCurrentValue(this.coreFence));
    if (this.kind !== 'monitored' || !narrow(this.adapter)) return raw;
    return extend32(raw & 0xffff_ffffn, asU64(core.fenceLastSignaled(this.coreFence)));
  }
}

/** What a new fence's row holds (createFenceRow). */
export interface NewFence {
  kind: 'native' | 'monitored';
  type: NativeFenceTypeName;
  flags: number;
  shareable: boolean;
  cvPhys: number;
  /** Has a MonitoredValue (a native fence); false: mvPhys is 0. */
  monitoredValue: boolean;
  /**
   * MapToGpuSystemProcess: the System process's page mappings on this adapter (Process.gpuMappings), which hold the
   * values' pages while the fence lives; undefined: not mapped there. Kept once per adapter (OsAdapter.systemPages), a bit in the row.
   */
  systemPages: ReadonlyMap<number, { va: bigint }> | undefined;
  /** Undefined: the label is derived from the core id. */
  name: string | undefined;
  hGlobal: number;
  /** The creating device, kept when the creator's handle is to be a token (src/os/fence-rows.ts). */
  device: OsDevice | undefined;
}

/** Enters a new fence's row in its adapter's store; its view is made on demand (fenceView makes it at once). */
export function createFenceRow(adapter: OsAdapter, coreFence: number, fence: NewFence): void {
  if (fence.systemPages !== undefined && (adapter.systemPages ??= fence.systemPages) !== fence.systemPages) throw new Error(`internal: adapter "${adapter.name}" has two System process page tables`);
  const bits = (fence.kind === 'monitored' ? ROW_MONITORED : 0) | (fence.type === 'INTRA_GPU' ? ROW_INTRA_GPU : 0) | (fence.shareable ? ROW_SHAREABLE : 0) |
    (fence.systemPages !== undefined ? ROW_SYSTEM_MAPPED : 0) | (fence.monitoredValue ? 0 : ROW_NO_MONITORED_VALUE);
  adapter.rows.create(coreFence, bits, fence.flags, fence.device, fence.hGlobal, fence.cvPhys, fence.name);
}

/** The view of the live fence `coreFence` of `adapter`, made now and entered in its table (its row's creator handle stays as it is). */
export function fenceView(adapter: OsAdapter, coreFence: number): GlobalFence {
  const view = new GlobalFence(adapter, coreFence);
  adapter.fences.set(coreFence, view);
  return view;
}

/** The VA of `phys` through a page mapping table (physical page → { va }); 0n when its page is not mapped. */
export function pageVa(pages: ReadonlyMap<number, { va: bigint }> | undefined, phys: number): bigint {
  const mapping = pages?.get(phys & ~0xfff);
  return mapping === undefined ? 0n : mapping.va + BigInt(phys & 0xfff);
}

/** The 64-bit value a 32-bit write `low32` stands for, given the last signalled value (MF-07). */
export function extend32(low32: bigint, last: bigint): bigint {
  const difference = (low32 - (last & 0xffff_ffffn)) & 0xffff_ffffn;
  const signed = difference >= 0x8000_0000n ? difference - 0x1_0000_0000n : difference;
  return BigInt.asUintN(64, last + signed);
}

/** The OS's view of a monitored fence's value: raw on 64-bit adapters, extended on No64BitAtomics ones. */
export function observeMonitoredValue(fence: GlobalFence, raw: bigint): bigint {
  if (!narrow(fence.adapter) || !fence.adapter.extendMonitoredValues) return raw;
  const core = fence.adapter.core;
  const last = asU64(core.fenceLastSignaled(fence.coreFence));
  const value = extend32(raw & 0xffff_ffffn, last);
  if (value !== last) core.fenceSetLastSignaled(fence.coreFence, value);
  if (value !== raw) {
    // The kernel writes the high half back (64-bit CPU atomic), only if the GPU did not write meanwhile.
    const word = new BigUint64Array(fence.adapter.memory.buffer, fence.cvPhys, 1);
    Atomics.compareExchange(word, 0, raw, value);
  }
  return value;
}

/**
 * A process's handle to a fence. Its VAs are derived from the process's page mappings, which hold the
 * values' pages while the handle is open (a stored BigInt costs ~24 B a handle); 0n once unmapped.
 */
/** LocalFence's state is in its fence's row (a creator handle that was a token). */
const IN_ROW = -1;

export class LocalFence {
  /**
   * closing (1), usedByGpu (2) and 4 × gpuReferences, in one field (a field costs 8 B a handle): arithmetic, not
   * bitwise, past 2^31. IN_ROW for a creator handle that was kept as a token: its state is in its fence's row for its
   * whole life (GlobalFence.tokenHandleState), where it was while a token, so one handle's state has one place.
   */
  private ownState: number;
  constructor(
    process: Process,
    readonly handle: number,
    readonly global: GlobalFence,
    /** The device it was opened on, of the same process (the process is derived from it). */
    readonly device: OsDevice,
    /** The driver's hLocalNativeFence (0: a monitored fence's handle). */
    readonly hLocal: number,
    /** It was its fence's creator handle kept as a token (src/os/fence-rows.ts, materialize). */
    wasToken = false,
  ) {
    if (device.process !== process) throw new Error(`internal: handle ${handle} of process "${process.name}" opened on a device of process "${device.process.name}"`);
    this.ownState = wasToken ? IN_ROW : 0;
  }
  get kind(): 'syncObject' { return 'syncObject'; }
  get process(): Process { return this.device.process; }
  /** Was it its fence's creator handle kept as a token (its state is its fence's row's)? */
  get wasToken(): boolean { return this.ownState === IN_ROW; }
  private get state(): number { return this.ownState === IN_ROW ? this.global.tokenHandleState : this.ownState; }
  private set state(state: number) {
    if (this.ownState === IN_ROW) this.global.tokenHandleState = state;
    else this.ownState = state;
  }
  /** The process closed the handle; DxgkDdiCloseNativeFence and the unmaps wait for gpuReferences to drain. */
  get closing(): boolean { return this.state % 2 === 1; }
  set closing(on: boolean) { if (on !== this.closing) this.state += on ? 1 : -1; }
  /** A submitted GPU command named this handle: its queues' logs may name it (read before the close finishes). */
  get usedByGpu(): boolean { return this.state % 4 >= 2; }
  set usedByGpu(on: boolean) { if (on !== this.usedByGpu) this.state += on ? 2 : -2; }
  /** Submitted GPU commands written through this handle that have not executed yet (src/os/lifetime.ts). */
  get gpuReferences(): number { return Math.floor(this.state / 4); }
  set gpuReferences(count: number) { this.state = this.state % 4 + 4 * count; }
  /** CurrentValue's GPU VA in the process (on the fence record's adapter). */
  get cvGpuVa(): bigint { return pageVa(this.process.gpuMappings.get(this.global.adapter.index), this.global.cvPhys); }
  /** MonitoredValue's GPU VA in the process (0n: a monitored fence has none). */
  get mvGpuVa(): bigint { return this.global.mvPhys === 0 ? 0n : pageVa(this.process.gpuMappings.get(this.global.adapter.index), this.global.mvPhys); }
  /** CurrentValue's read-only user-mode CPU VA. */
  get cvCpuVa(): bigint { return pageVa(this.process.userMappings, this.global.cvPhys); }
}

export interface NativeFenceMapping {
  /** User-mode read-only CPU VA of CurrentValue. */
  CurrentValueCpuVa: bigint;
  CurrentValueGpuVa: bigint;
  MonitoredValueGpuVa: bigint;
}

export function mappingOf(local: LocalFence): NativeFenceMapping {
  return mappingAt(local.process, local.global.adapter.index, local.global.cvPhys, local.global.mvPhys);
}

/** mappingOf for a handle of `process` to a fence with values at `cvPhys`, `mvPhys` on adapter `adapterIndex`. */
export function mappingAt(process: Process, adapterIndex: number, cvPhys: number, mvPhys: number): NativeFenceMapping {
  const pages = process.gpuMappings.get(adapterIndex);
  return { CurrentValueCpuVa: pageVa(process.userMappings, cvPhys), CurrentValueGpuVa: pageVa(pages, cvPhys), MonitoredValueGpuVa: mvPhys === 0 ? 0n : pageVa(pages, mvPhys) };
}

/**
 * Is `a` the same fence as `b`? One fence is one CurrentValue word: the records a cross-adapter fence has on
 * each adapter (XA-02, a monitored record of an adapter without native fences too, XA-05) are one fence, as
 * are two handles of one record. A word holds one live fence at a time (its slot is reused only after the
 * fence's storage is freed).
 */
export function sameFence(a: GlobalFence, b: GlobalFence): boolean {
  return a === b || a.cvPhys === b.cvPhys;
}

/**
 * One fence may appear once per wait or signal call (D3DKMT takes an array of
 * distinct objects). Two handles of the same fence count as the same fence,
 * through one adapter or two (sameFence). `seen` holds the fences of
 * objects[0 … index − 1]. Throws before the call changes anything.
 */
export function rejectRepeat(seen: GlobalFence[], local: LocalFence, index: number, call: 'wait' | 'signal'): void {
  const first = firstNaming(seen, local.global, index);
  if (first >= 0) throw repeatError(seen, local, index, first, call);
}

/** rejectRepeat's test without its error: the first of seen[0 … index − 1] that is `fence` (sameFence), or −1. */
export function firstNaming(seen: GlobalFence[], fence: GlobalFence, index: number): number {
  for (let i = 0; i < index; i++) if (sameFence(seen[i], fence)) return i;
  return -1;
}

/** rejectRepeat's error: objects[index] names the fence objects[first] named. */
export function repeatError(seen: GlobalFence[], local: LocalFence, index: number, first: number, call: 'wait' | 'signal'): WddmError {
  const fence = local.global;
  const hint = call === 'wait'
    ? 'name each fence once (wait-all: wait for the larger value; wait-any: the smaller one)'
    : 'name each fence once, with the value it must end at';
  const which = seen[first] === fence ? fence.label : `${seen[first].label} and ${fence.label}, one cross-adapter fence through the handles of two adapters`;
  return new WddmError('INVALID_PARAMETER', `objects[${first}] and objects[${index}] name the same fence (${which}); a ${call} names each fence at most once: ${hint}`,
    { parameter: `objects[${index}]`, value: local.handle, expected: `a fence not already named by objects[${first}]` });
}

// ── devices, queues, contexts ──

export interface OsDevice { kind: 'device'; handle: number; process: Process; adapter: OsAdapter; removed: boolean; queues: Set<OsHwQueue> }
export interface OsAdapterHandle { kind: 'adapter'; handle: number; adapter: OsAdapter }

/** A submitted GPU command that names a native fence: an in-flight reference of `local`. */
export interface InFlightCommand {
  op: 'wait' | 'signal';
  local: LocalFence;
  value: bigint;
}

export const OP_WAIT = 0;
export const OP_SIGNAL = 1;

/**
 * What an in-flight command names: the LocalFence of the handle it was written through, or, for a handle of a fence
 * still kept as a row (src/os/fence-rows.ts: no object made), the row's core id on the queue's adapter (a row has one
 * handle). Submitting through a row makes no object; its references are counted in the adapter's RowReferences, in
 * the row, where the token handle's record reads them once made (LocalFence.wasToken).
 */
export type FenceReference = LocalFence | number;

/** The label of the fence an in-flight command names: a row's is its core id's (a row has no name), as its GlobalFence's would be. */
export function fenceLabel(fence: FenceReference): string { return typeof fence === 'number' ? `fence${fence}` : fence.global.label; }

// Waits and signals in ring order as columns, no object per command: run r (commands through one
// handle with one op, maximal) is runOps[r] (OP_WAIT / OP_SIGNAL) through runLocals[r], ending before
// command runEnds[r]; command i's value is values[i].

/** One submission's waits and signals (SubmissionPlan.references): reused by every submission, its arrays kept past the counts. */
export class FenceCommandList {
  runLocals: FenceReference[] = [];
  /** Run r's handle (the LocalFence's, or the row's handle value). */
  runHandles: number[] = [];
  runOps: number[] = [];
  runEnds: number[] = [];
  /** Command i's value (i < length); doubles from 16 entries as needed. */
  values = new BigUint64Array(16);
  runCount = 0;
  length = 0;

  reset(): void { this.runCount = 0; this.length = 0; }

  push(local: LocalFence, op: number, value: bigint): void {
    const at = this.next(local, local.handle, op);
    this.values[at] = value;
  }

  /** `to - from` commands `op` through `fence` (handle `handle`), their values source[from … to) (copied between typed arrays: no bigint is made). */
  pushRange(fence: FenceReference, handle: number, op: number, source: BigUint64Array, from: number, to: number): void {
    const count = to - from;
    const at = this.next(fence, handle, op, count);
    if (count < 16) for (let k = 0; k < count; k++) this.values[at + k] = source[from + k];
    else this.values.set(source.subarray(from, to), at);
  }

  /** Room for `count` more commands `op` through `fence`: returns the index of the first. */
  private next(fence: FenceReference, handle: number, op: number, count = 1): number {
    const at = this.length;
    const length = this.length = at + count;
    this.values = grownTo(this.values, length);
    const last = this.runCount - 1;
    if (last >= 0 && this.runLocals[last] === fence && this.runOps[last] === op) this.runEnds[last] = length;
    else { this.runLocals[last + 1] = fence; this.runHandles[last + 1] = handle; this.runOps[last + 1] = op; this.runEnds[last + 1] = length; this.runCount++; }
    return at;
  }
}

/**
 * One adapter's in-flight GPU references through creator handles kept as tokens (FenceReference's core ids), by core
 * id. The fence's counts (waits and signals in flight) are its row's, whichever form its handles have; the token
 * handle's own state (used by the GPU, its references) is its row's too (FenceRows.tokenHandleStateOf), where its
 * LocalFence, once made, reads and writes it: nothing moves when a token becomes its record.
 */
export class RowReferences {
  constructor(private readonly rows: OsFenceRows) {}

  take(coreFence: number, op: number, count: number): void {
    const rows = this.rows;
    if (op === OP_WAIT) rows.setWaitsInFlight(coreFence, rows.waitsInFlight(coreFence) + count);
    else rows.setSignalsInFlight(coreFence, rows.signalsInFlight(coreFence) + count);
    rows.setTokenHandleState(coreFence, rows.tokenHandleStateOf(coreFence) + 4 * count);
  }

  release(coreFence: number, op: number, count: number): void { this.take(coreFence, op, -count); }

  /** The token handle's references left (LocalFence.gpuReferences of its record). */
  references(coreFence: number): number { return Math.floor(this.rows.tokenHandleStateOf(coreFence) / 4); }

  markUsed(coreFence: number): void {
    const state = this.rows.tokenHandleStateOf(coreFence);
    if (state % 4 < 2) this.rows.setTokenHandleState(coreFence, state + 2);
  }
}

/**
 * A hardware queue's in-flight fence commands (src/os/lifetime.ts); those before `head` executed (run
 * `runHead` holds it). `values` doubles from 16 entries and keeps its capacity (at most the ring's entries,
 * so a queue that drains and fills again does not grow again); the executed commands go when the queue
 * drains (values zeroed) or when they are most of a long list, so a queue holds the same bytes for the same
 * commands once its capacity is reached (the race explorer copies and hashes them).
 */
export class QueueReferences {
  /** Run r's handle (a LocalFence, or a row's core id on the queue's adapter), for r < runCount (exactly runCount long). */
  runLocals: FenceReference[] = [];
  /** Run r's op and end, for r < runCount; past runCount zero (their capacity doubles from 16 and is kept, as `values`'s). */
  runOps = new Uint8Array(16);
  runEnds = new Uint32Array(16);
  values = new BigUint64Array(16);
  runCount = 0;
  length = 0;
  head = 0;
  runHead = 0;

  get pendingCount(): number { return this.length - this.head; }

  /** The commands from `from` as records; `localOf` gives a row's LocalFence (made from the row: a slow path). */
  toRecords(from: number, localOf: (fence: FenceReference) => LocalFence): InFlightCommand[] {
    const out: InFlightCommand[] = [];
    for (let r = this.runOf(from, 0), at = from; at < this.length; r++) {
      const local = localOf(this.runLocals[r]), op = this.runOps[r] === OP_WAIT ? 'wait' : 'signal';
      for (const end = this.runEnds[r]; at < end; at++) out.push({ op, local, value: this.values[at] });
    }
    return out;
  }

  pushAll(list: FenceCommandList): void {
    const base = this.length, count = list.length;
    this.values = grownTo(this.values, base + count); // past `length` it holds zeros (clear, advance): copied as they are
    this.values.set(list.values.subarray(0, count), base);
    this.length = base + count;
    let last = this.runCount - 1;
    if (this.runEnds.length < this.runCount + list.runCount) {
      this.runOps = grownTo(this.runOps, this.runCount + list.runCount);
      this.runEnds = grownTo(this.runEnds, this.runCount + list.runCount);
    }
    const { runLocals, runOps, runEnds } = this;
    for (let r = 0; r < list.runCount; r++) {
      const local = list.runLocals[r], op = list.runOps[r];
      if (last >= 0 && runLocals[last] === local && runOps[last] === op) runEnds[last] = base + list.runEnds[r];
      else { last++; runLocals.push(local); runOps[last] = op; runEnds[last] = base + list.runEnds[r]; }
    }
    this.runCount = last + 1;
  }

  /** Commands [head, head + count) executed. */
  advance(count: number): void {
    const head = this.head += count, length = this.length;
    if (head >= length) { this.clear(); return; }
    this.runHead = this.runOf(head, this.runHead);
    if (head < 1024 || head * 2 < length) return;
    // The executed ones go, moved down in place (splice would make an array of them).
    const runs = this.runHead, left = this.runCount - runs;
    for (let r = 0; r < left; r++) {
      this.runLocals[r] = this.runLocals[r + runs];
      this.runEnds[r] = this.runEnds[r + runs] - head;
    }
    this.runOps.copyWithin(0, runs, this.runCount);
    this.runOps.fill(0, left, this.runCount);
    this.runEnds.fill(0, left, this.runCount);
    this.runLocals.length = this.runCount = left;
    this.values.copyWithin(0, head, length);
    this.values.fill(0n, length - head, length);
    this.length -= head;
    this.head = this.runHead = 0;
  }

  /** Drops command `at`, executed out of ring order (after `head`). */
  remove(at: number): void {
    const list = new FenceCommandList();
    for (let r = 0, i = 0; r < this.runCount; r++) {
      for (const end = this.runEnds[r]; i < end; i++) if (i !== at) list.pushRange(this.runLocals[r], 0, this.runOps[r], this.values, i, i + 1);
    }
    const head = this.head;
    this.clear();
    this.pushAll(list);
    this.advance(head);
  }

  clear(): void {
    this.runOps.fill(0, 0, this.runCount);
    this.runEnds.fill(0, 0, this.runCount);
    this.runLocals.length = this.runCount = 0;
    this.values.fill(0n, 0, this.length);
    this.length = this.head = this.runHead = 0;
  }

  private runOf(at: number, from: number): number {
    let r = from;
    while (r < this.runCount && this.runEnds[r] <= at) r++;
    return r;
  }
}

export interface OsHwQueue {
  kind: 'hwQueue'; handle: number; device: OsDevice; hHwQueue: number; engine: number;
  /** progressGpuVa: its CurrentValue's GPU VA (0n without one), mapped as long as the queue lives. */
  progress?: LocalFence; progressValue: bigint; progressGpuVa: bigint; label: string;
  /** What DxgkDdiCreateHwQueue left for the driver's user-mode half (user mode got a copy with the handle). */
  privateDriverData: Uint8Array;
  /** Submitted wait / signal commands not yet executed, in ring order (src/os/lifetime.ts). */
  references: QueueReferences;
  /** What the OS knows of the queue on the GPU, from the driver's progress reports (NotifyGpuProgress). */
  gpu: HwQueueProgress;
}

/** A hardware queue as the OS knows it from GPU progress reports: no peeking at the ring. */
export interface HwQueueProgress {
  /** Commands submitted and not yet executed (waits, signals, work). */
  inRing: number;
  /** The wait the queue is blocked on, if it is. */
  blocked?: { local: LocalFence; value: bigint };
}

/** A checked user-mode submission (HwQueues.prepareSubmission): what the UMD writes, and what the OS records once it did. */
export interface SubmissionPlan {
  process: Process;
  queue: OsHwQueue;
  adapterIndex: number;
  /** For the driver's user-mode half (UserModeDriverInterface; reused by the next submission). */
  commands: SubmissionCommands;
  /** The waits and signals among them, each an in-flight reference of the handle it names (reused by the next submission). */
  references: FenceCommandList;
  /** The commands in words, for the trace (left empty while tracing is off: nothing would read them). */
  described: string[];
  /** The progress fence value the submission signals last. */
  progressValue?: bigint;
}

/** A packet of a kernel-mode context's software queue (src/os/contexts.ts). */
export type ContextPacket =
  /** `fences`: the fence each fence-write command writes, in order (the OS's own record; the driver gets GPU VAs). */
  | { type: 'commandBuffer'; commands: ContextCommand[]; described: string[]; fences: GlobalFence[] }
  | { type: 'wait'; fences: GlobalFence[]; values: bigint[]; held: boolean; heldSinceNs: number }
  | { type: 'signal'; fences: GlobalFence[]; values: bigint[] };

export interface OsContext {
  kind: 'context';
  handle: number;
  device: OsDevice;
  engine: number;
  /** The driver's hContext. */
  hContext: number;
  label: string;
  /** VidSch's software queue: packets not yet handed to the engine. */
  packets: ContextPacket[];
  /** Command buffers on the engine (SubmissionFenceId, fences they write), oldest first. */
  inFlight: { id: number; fences: GlobalFence[] }[];
  destroyed: boolean;
}

/** A GPU progress report resolved to the OS's objects (what the OS's modules listen to). */
export interface GpuProgress {
  adapter: OsAdapter;
  report: GpuProgressReport;
  /** The hardware queue or the kernel-mode context that executed the command (undefined: not one the OS made). */
  queue?: OsHwQueue;
  context?: OsContext;
  /**
   * The handle the command named, and its fence (waits, signals, fence writes; undefined when the handle is gone, or
   * when it names a fence kept as a row: `row`).
   */
  local?: LocalFence;
  fence?: GlobalFence;
  /**
   * The core id (on `adapter`) of the fence kept as a row whose handle the command named (src/os/fence-rows.ts): its
   * objects are not made for a report (a signal, a passed wait); undefined otherwise. A row is a native fence of no
   * cross-adapter group and no allocation use, so only the in-flight references (src/os/lifetime.ts) look at it.
   */
  row?: number;
}

// ── events, handles, processes ──

export interface CpuEvent { kind: 'event'; handle: number; name: string; signaled: boolean; signaledAtNs?: number; waiters: (() => void)[] }
export interface NtHandle { kind: 'nt'; handle: number; global: GlobalFence }
export type HandleObject = OsDevice | OsAdapterHandle | LocalFence | OsHwQueue | CpuEvent | OsContext;
export const KIND_NAMES: Record<HandleObject['kind'], string> = {
  device: 'device (hDevice)', adapter: 'adapter (hAdapter)', syncObject: 'sync object (hSyncObject)',
  hwQueue: 'hardware queue (hHwQueue)', event: 'CPU event (hEvent)', context: 'kernel-mode context (hContext)',
};

export class Process {
  readonly handles: HandleTable<HandleObject>;
  readonly ntHandles: HandleTable<NtHandle>;
  readonly retired: ClosedHandles;
  /**
   * Sync object handles the process closed whose close has not finished (GPU
   * commands still name them, or their log entries are being read): log
   * entries written through them still resolve here. allocHandle() does not hand their values out again.
   */
  readonly closing = new Map<number, LocalFence>();
  /**
   * Live handle values of this process that are not entries of `handles` (VidMm's allocations): allocHandle()
   * skips them once the sequence wraps, so a new object never takes the value of a live allocation.
   */
  readonly otherLiveHandles = new Set<number>();
  /** Per adapter: physical page → { GPU VA, references } (src/os/address-spaces.ts). */
  readonly gpuMappings = new Map<number, Map<number, { va: bigint; access: 'read' | 'read-write'; references: number }>>();
  /** Physical page → { user CPU VA (read-only), references }. */
  readonly userMappings = new Map<number, { va: bigint; references: number }>();
  /** User VA page number (from USER_VA_BASE) → physical page: translateUser in one lookup. */
  private readonly userPagesByVa = new Map<number, number>();
  private nextUserPage = 0;
  private readonly isTaken = (handle: number): boolean => this.closing.has(handle) || this.otherLiveHandles.has(handle);

  /** `clock`: the machine's, which every handle table of its processes takes its editStamps from (src/os/tables.ts). */
  constructor(readonly slot: number, readonly name: string, clock: EditClock) {
    // Handles 0x40000000 + slot × 0x100000 + n, n = 1 … 0xFFFFF; NT handles 0x80000000 + slot × 0x100000 + 4n, n = 1 … 0x3FFFF.
    this.handles = new HandleTable(0x4000_0000 + slot * 0x10_0000, 1, 0x10_0000, 64, clock);
    this.ntHandles = new HandleTable(0x8000_0000 + slot * 0x10_0000, 4, 0x4_0000, 4, clock);
    this.retired = new ClosedHandles([this.handles, this.ntHandles]);
  }

  /** A new handle value of this process (enter it in `handles`); INSUFFICIENT_RESOURCES when all are in use. */
  allocHandle(): number { return this.handles.allocate(this.isTaken) ?? this.full(this.handles, ''); }
  allocNtHandle(): number { return this.ntHandles.allocate() ?? this.full(this.ntHandles, 'NT '); }
  private full(table: { space: number }, what: string): never {
    throw new WddmError('INSUFFICIENT_RESOURCES', `process "${this.name}" holds ${table.space - 1} open ${what}handles, the most a process can; close some first`);
  }

  mapUser(phys: number): bigint {
    const page = phys & ~0xfff;
    let m = this.userMappings.get(page);
    if (!m) {
      const vaPage = this.nextUserPage++;
      m = { va: USER_VA_BASE + BigInt(vaPage) * 0x1000n, references: 0 };
      this.userMappings.set(page, m);
      this.userPagesByVa.set(vaPage, page);
    }
    m.references++;
    return m.va + BigInt(phys & 0xfff);
  }
  unmapUser(phys: number): void {
    const page = phys & ~0xfff;
    const m = this.userMappings.get(page);
    if (m && --m.references === 0) {
      this.userMappings.delete(page);
      this.userPagesByVa.delete(Number((m.va - USER_VA_BASE) >> 12n));
    }
  }
  /** Physical address behind a user VA of this process (read-only mappings only). */
  translateUser(va: bigint): number | undefined {
    if (va < USER_VA_BASE) return undefined;
    const offset = va - USER_VA_BASE;
    if (offset >= BigInt(this.nextUserPage) * 0x1000n) return undefined;
    const page = this.userPagesByVa.get(Number(offset >> 12n));
    return page === undefined ? undefined : page + Number(offset & 0xfffn);
  }
}

/**
 * The OS's record of a process as user mode and the machine hold it (src/os/kernel.ts): a token the entry points
 * take first, with the process's name and slot. Its tables are the OS's.
 */
export type KernelProcess = Pick<Process, 'name' | 'slot'> & { readonly [kernelProcessBrand]: true };
declare const kernelProcessBrand: unique symbol;

// ── waits ──

export type WaitStatus = 'SUCCESS' | 'TIMEOUT' | 'DEVICE_REMOVED' | 'ADAPTER_STOPPED' | 'OBJECT_DESTROYED';
export interface WaitResult {
  status: WaitStatus;
  /** Virtual time the wait completed. */
  timeNs: number;
  /** true when it was satisfied at the call and no waiter was added (NF-08). */
  immediate: boolean;
  /** wait-any: index of the object that satisfied it. */
  index?: number;
}

/**
 * Who started a CPU wait, for tools (machine.stuck()): the process's name and,
 * from the runtime, the object behind it (a CpuThread, or the CpuEvent a
 * waitWithEvent sets) with its name.
 */
export interface WaiterOwner { process: string; tag?: object; thread?: string; event?: string }

/** A CPU waiter still waiting, as tools see it (machine.stuck()). */
export interface PendingWaiter {
  id: number;
  label: string;
  mode: 'all' | 'any';
  owner: WaiterOwner;
  /** Has a timeout on its way (it will end on its own). */
  timed: boolean;
  /** What it still waits for. */
  waits: { fence: GlobalFence; value: bigint }[];
}

/**
 * DxgkDdiUpdateCurrentValuesFromCpu for `fences` of one adapter: the CPU signal (NF-07) writes the
 * values; NotificationOnly (XA-04) only tells the driver another adapter wrote the shared word.
 */
export function updateCurrentValuesFromCpu(port: DriverPort, adapter: OsAdapter, fences: GlobalFence[], values: bigint[], notificationOnly: boolean): void {
  if (fences.length === 1 && !notificationOnly) { updateCurrentValueFromCpu(port, adapter, fences[0], values[0]); return; }
  port.updateCurrentValuesFromCpu(adapter.index, {
    NumFences: fences.length, NativeFenceArray: fences.map((f) => f.hGlobal), UpdatedValueArray: values,
    CurrentValueKernelCpuVa: fences.map((f) => f.kernelCvVa), Flags: { AlwaysSignaled: false, NotificationOnly: notificationOnly },
  });
}

/**
 * updateCurrentValuesFromCpu of one fence, no flag (a CPU signal's common case): the port's one-fence call, which makes
 * no argument while nobody watches and is the array form's call, argument and count when someone does
 * (src/port/driver-port.ts). `fence` is live.
 */
export function updateCurrentValueFromCpu(port: DriverPort, adapter: OsAdapter, fence: GlobalFence, value: bigint): void {
  // The fence's row read directly (its getters' words; not always inlined in a caller this hot).
  const words = adapter.rows.words, at = fence.coreFence * ROW_WORDS, cvPhys = words[at + ROW_CV_PHYS];
  const last = adapter[LAST_KERNEL_CV_VA];
  if (last.of !== cvPhys) { last.va = fence.kernelCvVa; last.of = cvPhys; }
  port.updateOneCurrentValueFromCpu(adapter.index, words[at + ROW_GLOBAL_HANDLE], value, last.va);
}

