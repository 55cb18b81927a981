// VidMm: the video memory manager's side of WDDM 2.0 allocation usage
// tracking (VM-01, VM-05, VM-06, VM-08), plus the model's view of what the
// GPU reads and writes.
//
// Why this file is long: one class holds one allocation table that every part
// changes (placement, backing pages, Lock2 mappings, the CpuHostAperture, deferred
// destruction, the GPU's declared reads and writes against the CPU cache model);
// its parts share that state call by call, and split into files they would
// reach into each other's records. aperture.ts, cache.ts and segments.ts hold
// what stands alone.
//
// What each part knows:
//   VidMm (this file)  segments, allocations, residency, backing pages, CPU
//                      mappings (Lock2/Unlock2), the CpuHostAperture, deferred
//                      destruction. It does NOT know which command buffer uses
//                      which allocation (WDDM 2.0 has no allocation list), so a
//                      destroy waits for ALL work the device queued before it.
//   the model          each submission may declare the allocations it reads and
//                      writes (`reads` / `writes`); when the GPU finishes that
//                      submission the bytes really move in linear memory and the
//                      CPU cache model of a non-coherent platform is checked.
//   the UMD (umd.ts)   its own usage tracking, renaming and Map semantics.
//
// Allocation life:
//
//   createAllocation ─▶ live ──destroyAllocation2──▶ destroyPending ──progress fences reached──▶ freed
//                        │   (handle retired at once,     (a CPU waiter on the queues'
//                        │    caller never blocks)         progress fences: no polling)
//                        └──destroyAllocation2 {AssumeNotInUse}, or nothing queued ──────────────▶ freed
//
// Placement: resident in one segment of its supported set, or not resident
// (its bytes in system memory pages). Bytes are real: pages come from the
// core's page allocator (local memory region for memory segments, the system
// memory region for aperture segments and non-resident allocations).

import type { OsCore, WasmMemory } from '../../core/bindings.js';
import { WddmError, invalid } from '../../base/errors.js';
import { KIND_NAMES, type CpuEvent, type GlobalFence, type GpuProgress, type LocalFence, type OsAdapter, type OsContext, type OsDevice, type OsHwQueue, type Process, type WaitResult } from '../objects.js';
import type { Handles } from '../handles.js';
import type { Trace } from '../../base/trace.js';
import * as v from '../../base/validate.js';
import { hex } from '../../base/wddm.js';
import { CpuHostAperture } from './aperture.js';
import { CpuCache, type BackingAccess, type ByteRange } from './cache.js';
import { PAGE_BYTES, type SegmentDescriptor } from './segments.js';

export type CpuAccess = 'none' | 'cached' | 'uncached';
export type AllocationState = 'live' | 'destroyPending' | 'freed';
/** How a Lock2 reached the bytes. */
export type LockPath = 'systemMemory' | 'cpuVisibleSegment' | 'cpuHostAperture';

/** Where user-mode CPU mappings of allocations start in every process. */
export const LOCK_VA_BASE = 0x0000_7e00_0000_0000n;
/** Bus address of adapter 0's CpuHostAperture (adapter i: + i × 256 MiB). */
export const CPU_HOST_APERTURE_BUS_BASE = 0xe000_0000n;

export interface SegmentState { descriptor: SegmentDescriptor; usedBytes: number }

/**
 * What VidMm uses of the rest of the OS, and nothing more (src/os/kernel.ts wires it): the handle checks, a
 * device's kernel-mode contexts, a CPU event it sets and a CPU wait on progress fences (a deferred destroy), and
 * the GPU's progress reports.
 */
export interface VidMmEnvironment {
  /** Virtual time now. */
  readonly nowNs: number;
  readonly handles: Pick<Handles, 'requireDevice' | 'resolve'>;
  contextsOf(process: Process): readonly OsContext[];
  newEvent(process: Process, name: string): CpuEvent;
  setEvent(event: CpuEvent): void;
  /** A wait-all on `fences` ≥ `values` (System's, untimed); `onComplete` runs once. */
  waitAll(fences: GlobalFence[], values: bigint[], label: string, onComplete: (result: WaitResult) => void): void;
  /** Every GPU progress report, from now on. */
  onGpuProgress(listener: (progress: GpuProgress) => void): void;
  /** Asked before a stretch of quiet GPU commands goes unreported: true when VidMm needs no report of them. */
  onGpuQuiet(quiet: () => boolean): void;
  /** Every kernel-mode context's command buffer retired by its DMA completed interrupt (or dropped with its context), from now on. */
  onContextRetired(listener: (adapter: OsAdapter, context: OsContext) => void): void;
}

export interface AdapterMemory {
  index: number;
  name: string;
  core: OsCore;
  localBase: number;
  segments: SegmentState[];
  aperture: CpuHostAperture;
}

export interface LockState {
  count: number;
  pData: bigint;
  path: LockPath;
  /** Direct paths: physical page behind each 4 KiB of the CPU range. */
  pages: number[];
  /** CpuHostAperture path: aperture page behind each 4 KiB of the CPU range. */
  aperturePages?: number[];
  /** VM-05: locked while not resident with no aperture segment: kept out of local memory until Unlock2. */
  keptOutOfLocalMemory: boolean;
}

export class Allocation {
  state: AllocationState = 'live';
  pages: number[] = [];
  pagesIn: 'local' | 'system' = 'system';
  placement?: SegmentState;
  lock?: LockState;
  cache?: CpuCache;
  freedAtNs?: number;
  constructor(
    readonly handle: number,
    readonly process: Process,
    readonly device: OsDevice,
    readonly memory: AdapterMemory,
    readonly name: string,
    readonly sizeBytes: number,
    readonly segmentSet: SegmentState[],
    readonly cpuAccess: CpuAccess,
  ) {}
  get pageCount(): number { return Math.ceil(this.sizeBytes / PAGE_BYTES); }
  get reservedBytes(): number { return this.pageCount * PAGE_BYTES; }
  get resident(): boolean { return this.placement !== undefined; }
  get placementName(): string { return this.placement ? this.placement.descriptor.name : 'system memory (not resident)'; }
  get hasApertureSegment(): boolean { return this.segmentSet.some((s) => s.descriptor.aperture); }
}

/** Public snapshot of an allocation (for tests and tools). */
export interface AllocationInfo {
  hAllocation: number; name: string; sizeBytes: number; state: AllocationState; cpuAccess: CpuAccess;
  resident: boolean; segment: string; pages: number[]; locked: boolean; lockPath?: LockPath;
  aperturePages?: number[]; keptOutOfLocalMemory?: boolean; freedAtNs?: number;
}

interface AccessRange { allocation: Allocation; offset: number; length: number; data?: Uint8Array }
/**
 * A submission's declared accesses, and the fence write that marks the end of
 * its work: a hardware queue's progress fence, or (kernel-mode context) the
 * last monitored fence { fenceWrite } of the command buffer.
 */
export interface PreparedUse { label: string; process: Process; marker?: GlobalFence; markerValue?: bigint; queue?: OsHwQueue; reads: AccessRange[]; writes: AccessRange[] }
interface PendingUse { queueLabel: string; fence: GlobalFence; progressValue: bigint; reads: AccessRange[]; writes: AccessRange[] }
/** A deferred destroy waiting for kernel-mode contexts: command buffers still to complete, per context. */
/**
 * A deferred destroy: the allocations, the parts of queued work still to finish (the hardware queues'
 * progress fences as one part, each kernel-mode context as one), when it was asked, and the event of a
 * SynchronousDestroy. Kept in a field (VidMm.deferredDestroys), not in a callback's variables: a schedule
 * explorer snapshots and restores the machine's objects, never a closure's variables.
 */
interface DeferredDestroy { allocations: Allocation[]; parts: number; requestedNs: number; event?: CpuEvent }
interface ContextWait { context: OsContext; remaining: number; destroy: DeferredDestroy }

/** A range of an allocation in a submission's `reads` or `writes`: a handle alone means the whole allocation. */
export type AllocationUse = number | { hAllocation: number; Offset?: number; Length?: number; data?: Uint8Array };

export interface GpuRead { timeNs: number; queue: string; progressValue: bigint; hAllocation: number; allocation: string; offset: number; bytes: Uint8Array }
export interface CoherenceFault { kind: 'stale GPU read' | 'stale CPU read' | 'lost write'; timeNs: number; hAllocation: number; allocation: string; offset: number; length: number }

export interface VidMmCounters {
  allocationsCreated: number; allocationsFreed: number; destroysDeferred: number; destroysAtOnce: number;
  locks: number; relocations: number; cacheInvalidations: number; linesWrittenBack: number;
  staleGpuReads: number; staleCpuReads: number; lostWrites: number; gpuUseAfterFree: number;
  /** Records older than the newest limits.allocationRecords that were let go (see VidMm's bounds). */
  gpuReadsDropped: number; coherenceFaultsDropped: number; freedAllocationsForgotten: number;
}

/** Default of createMachine's limits.allocationRecords: records of each kind VidMm keeps, the newest. */
export const DEFAULT_ALLOCATION_RECORDS = 16_384;

/**
 * The newest `capacity` records of a list that grows with the commands run, in the array the caller reads:
 * once it holds a quarter more than `capacity`, the oldest go at once (one splice per capacity ÷ 4 records,
 * not one shift per record). Returns how many were dropped.
 */
function keepNewest<T>(list: T[], capacity: number): number {
  const over = list.length - capacity;
  if (over <= 0 || list.length < capacity + Math.max(1, capacity >> 2)) return 0;
  list.splice(0, over);
  return over;
}

interface UserMapping { va: bigint; bytes: number; allocation: Allocation }

export class VidMm {
  readonly adapters: AdapterMemory[] = [];
  readonly counters: VidMmCounters = {
    allocationsCreated: 0, allocationsFreed: 0, destroysDeferred: 0, destroysAtOnce: 0, locks: 0, relocations: 0,
    cacheInvalidations: 0, linesWrittenBack: 0, staleGpuReads: 0, staleCpuReads: 0, lostWrites: 0, gpuUseAfterFree: 0,
    gpuReadsDropped: 0, coherenceFaultsDropped: 0, freedAllocationsForgotten: 0,
  };
  /**
   * GPU reads of allocation ranges, with the bytes the GPU saw, oldest first: the newest
   * limits.allocationRecords at least (up to a quarter more); older ones are dropped and counted.
   */
  readonly gpuReads: GpuRead[] = [];
  /** Coherence faults (VM-08), oldest first, bounded as gpuReads. */
  readonly coherenceFaults: CoherenceFault[] = [];
  private readonly allocations = new Map<number, Allocation>();
  /** Destroyed allocations whose memory is not freed yet (deferred destruction, VM-01). */
  private readonly destroyPending = new Map<number, Allocation>();
  /**
   * Freed allocations, oldest first, for info() and for the "already destroyed" error: the newest
   * limits.allocationRecords (a Map iterates in insertion order, so the oldest is its first key).
   * An older handle still gets INVALID_HANDLE, told as closed by the process's handle sequence.
   */
  private readonly freed = new Map<number, Allocation>();
  private readonly mappings = new Map<Process, UserMapping[]>();
  private readonly nextVa = new Map<Process, bigint>();
  /** Per completion fence (adapter index : core fence id): submissions whose declared accesses the GPU has not done yet. */
  private readonly pending = new Map<string, PendingUse[]>();
  private contextWaits: ContextWait[] = [];
  /** Destroys waiting for queued work (each removed once its last part finished). */
  private readonly deferredDestroys: DeferredDestroy[] = [];

  constructor(
    private readonly os: VidMmEnvironment,
    readonly trace: Trace,
    readonly memory: WasmMemory,
    readonly systemBase: number,
    /** Machine option ioCoherent: the platform keeps CPU caches coherent with GPU accesses. */
    readonly ioCoherent: boolean,
    /** Machine option limits.allocationRecords: GPU reads, coherence faults and freed allocations kept, the newest of each. */
    readonly records: number = DEFAULT_ALLOCATION_RECORDS,
  ) {}

  private get nowNs(): number { return this.os.nowNs; }

  addAdapter(adapter: OsAdapter, localBase: number, segments: SegmentDescriptor[], cpuHostAperturePages: number): void {
    const aperture = new CpuHostAperture(adapter.name, Object.freeze({
      PhysicalAddress: CPU_HOST_APERTURE_BUS_BASE + BigInt(adapter.index) * 0x1000_0000n, SizeInPages: cpuHostAperturePages,
    }));
    this.adapters[adapter.index] = {
      index: adapter.index, name: adapter.name, core: adapter.core, localBase,
      segments: segments.map((descriptor) => ({ descriptor, usedBytes: 0 })), aperture,
    };
    this.trace.record('machine', adapter.name, 'segments', {
      segments: segments.map((s) => `${s.id}:${s.name}:${s.sizeBytes}${s.aperture ? ':Aperture' : ''}${s.cpuVisible ? ':CpuVisible' : ''}${s.cacheCoherent ? ':CacheCoherent' : ''}${s.supportsCpuHostAperture ? ':SupportsCpuHostAperture' : ''}`),
      CpuHostAperturePhysicalAddress: aperture.descriptor.PhysicalAddress, CpuHostApertureSizeInPages: cpuHostAperturePages,
      ioCoherent: this.ioCoherent,
    });
    // The GPU's progress (DxgkrnlCallbacks.NotifyGpuProgress, through the OS): when work is done its bytes move.
    this.os.onGpuProgress(({ adapter: on, report, fence }) => {
      if (on !== adapter) return;
      if ((report.Operation === 'SIGNAL' || report.Operation === 'FENCE_WRITE') && fence) this.gpuProgress(fence, report.Value);
    });
    // A deferred destroy counts a context's command buffers as the OS does (in flight until its DMA completed
    // interrupt retires each): so it counts each completion once, whenever the destroy was asked. (Counted at the
    // GPU's own report instead, a destroy asked between a buffer's end and its interrupt waited for it forever.)
    this.os.onContextRetired((on, context) => { if (on === adapter) this.contextCompleted(adapter, context.hContext); });
    // A stretch of quiet GPU commands (QueryGpuProgressStretch) may go unreported while no allocation use waits for a signal.
    this.os.onGpuQuiet(() => this.noUseWaitsForSignal());
  }

  // ── handles ──

  private resolve(process: Process, handle: unknown, parameter: string): Allocation {
    if (typeof handle !== 'number' || !Number.isInteger(handle) || handle <= 0) {
      throw invalid(parameter, handle, `an allocation handle (a positive integer) made by process "${process.name}"`, 'INVALID_HANDLE');
    }
    const allocation = this.allocations.get(handle);
    if (allocation && allocation.process !== process) {
      throw new WddmError('INVALID_HANDLE', `${parameter} ${hex(handle)} belongs to process "${allocation.process.name}", not "${process.name}": a handle is valid only in the process that made it`,
        { parameter, value: handle, expected: `an allocation handle of process "${process.name}"` });
    }
    if (!allocation) {
      const gone = this.destroyPending.get(handle) ?? this.freed.get(handle);
      if (gone && gone.process === process) {
        throw new WddmError('INVALID_HANDLE', `${parameter} ${hex(handle)} is an allocation that was already destroyed in process "${process.name}"`,
          { parameter, value: handle, expected: 'a live allocation handle' });
      }
      // A row (a native fence nothing has looked up) is named as a sync object without making its objects.
      const objectKind = process.handles.isRow(handle) ? 'syncObject' : process.handles.get(handle)?.kind;
      if (objectKind) {
        throw new WddmError('OBJECT_TYPE_MISMATCH', `${parameter} ${hex(handle)} is a ${KIND_NAMES[objectKind]}; expected an allocation (hAllocation)`,
          { parameter, value: handle, expected: `an allocation handle of process "${process.name}"` });
      }
      if (process.retired.has(handle)) {
        throw new WddmError('INVALID_HANDLE', `${parameter} ${hex(handle)} was closed or destroyed in process "${process.name}"`,
          { parameter, value: handle, expected: 'a live allocation handle' });
      }
      throw new WddmError('INVALID_HANDLE', `${parameter} ${hex(handle)} is not an allocation handle of process "${process.name}"`,
        { parameter, value: handle, expected: `an allocation handle of process "${process.name}"` });
    }
    return allocation;
  }

  private deviceAndAllocation(process: Process, a: Record<string, unknown>, parameter = 'hAllocation'): { device: OsDevice; allocation: Allocation } {
    const device = this.os.handles.requireDevice(process, a.hDevice, 'hDevice');
    const allocation = this.resolve(process, a[parameter], parameter);
    if (allocation.device !== device) {
      throw new WddmError('INVALID_PARAMETER', `${parameter} ${hex(allocation.handle)} belongs to device ${hex(allocation.device.handle)}, not to hDevice ${hex(device.handle)}`,
        { parameter, value: allocation.handle, expected: `an allocation created on device ${hex(device.handle)}` });
    }
    return { device, allocation };
  }

  private range(allocation: Allocation, offsetRaw: unknown, lengthRaw: unknown, parameter: string, fallbackLength?: number): { offset: number; length: number } {
    const offset = offsetRaw === undefined ? 0 : v.integer(offsetRaw, `${parameter}.Offset`, 0, 0x7fff_ffff);
    const length = lengthRaw === undefined ? (fallbackLength ?? allocation.sizeBytes - offset) : v.integer(lengthRaw, `${parameter}.Length`, 0, 0x7fff_ffff);
    if (offset + length > allocation.sizeBytes || length < 0) {
      throw new WddmError('INVALID_PARAMETER', `${parameter}: range [${offset}, ${offset + length}) is outside allocation ${hex(allocation.handle)} "${allocation.name}" of ${allocation.sizeBytes} bytes`,
        { parameter, value: { Offset: offset, Length: length }, expected: `a range inside [0, ${allocation.sizeBytes})` });
    }
    return { offset, length };
  }

  // ── pages ──

  private allocPages(memory: AdapterMemory, where: 'local' | 'system', count: number, what: string): number[] {
    const base = where === 'local' ? memory.localBase : this.systemBase;
    if (!base) throw new WddmError('NO_MEMORY', `${what}: adapter "${memory.name}" has no local memory (localMemoryBytes is 0)`);
    const pages: number[] = [];
    for (let i = 0; i < count; i++) {
      const phys = memory.core.regionAllocPage(base) >>> 0;
      if (!phys) {
        for (const p of pages) memory.core.regionFreePage(base, p);
        throw new WddmError('NO_MEMORY', `${what}: no free 4 KiB page left in ${where === 'local' ? `the local memory of "${memory.name}"` : 'system memory'} (needed ${count})`);
      }
      pages.push(phys);
    }
    const bytes = new Uint8Array(this.memory.buffer);
    for (const p of pages) bytes.fill(0, p, p + PAGE_BYTES);
    return pages;
  }

  private freePages(memory: AdapterMemory, where: 'local' | 'system', pages: number[]): void {
    const base = where === 'local' ? memory.localBase : this.systemBase;
    for (const p of pages) memory.core.regionFreePage(base, p);
  }

  /** Reads and writes an allocation's bytes in memory, wherever its pages are now. */
  backing(allocation: Allocation): BackingAccess {
    const bytes = () => new Uint8Array(this.memory.buffer);
    const walk = (offset: number, length: number, visit: (phys: number, at: number, n: number) => void) => {
      let done = 0;
      while (done < length) {
        const at = offset + done;
        const page = Math.floor(at / PAGE_BYTES);
        const within = at % PAGE_BYTES;
        const n = Math.min(length - done, PAGE_BYTES - within);
        visit(allocation.pages[page] + within, done, n);
        done += n;
      }
    };
    return {
      read: (offset, length) => {
        const out = new Uint8Array(length);
        const mem = bytes();
        walk(offset, length, (phys, at, n) => out.set(mem.subarray(phys, phys + n), at));
        return out;
      },
      write: (offset, data) => {
        const mem = bytes();
        walk(offset, data.length, (phys, at, n) => mem.set(data.subarray(at, at + n), phys));
      },
    };
  }

  private fits(segment: SegmentState, allocation: { reservedBytes: number }): boolean {
    return segment.usedBytes + allocation.reservedBytes <= segment.descriptor.sizeBytes;
  }

  /** Moves an allocation to a segment (or out of every segment). Nothing changes when it fails. */
  private move(allocation: Allocation, target: SegmentState | undefined, reason: string): void {
    if (target === allocation.placement) return;
    if (target && !this.fits(target, allocation)) {
      throw new WddmError('NO_MEMORY', `allocation ${hex(allocation.handle)} "${allocation.name}": segment "${target.descriptor.name}" has ${target.descriptor.sizeBytes - target.usedBytes} bytes free, it needs ${allocation.reservedBytes}`);
    }
    const where = target && !target.descriptor.aperture ? 'local' : 'system';
    const from = allocation.placementName;
    if (where !== allocation.pagesIn) {
      const pages = this.allocPages(allocation.memory, where, allocation.pageCount, `moving allocation ${hex(allocation.handle)} "${allocation.name}"`);
      this.flushCache(allocation, 'relocation');
      const old = this.backing(allocation).read(0, allocation.reservedBytes);
      this.freePages(allocation.memory, allocation.pagesIn, allocation.pages);
      allocation.pages = pages;
      allocation.pagesIn = where;
      this.backing(allocation).write(0, old);
    }
    if (allocation.placement) allocation.placement.usedBytes -= allocation.reservedBytes;
    allocation.placement = target;
    if (target) target.usedBytes += allocation.reservedBytes;
    this.counters.relocations++;
    this.trace.record('os', 'vidmm', 'allocation moved', { hAllocation: allocation.handle, allocation: allocation.name, from, to: allocation.placementName, reason });
  }

  /** Writes back and drops the CPU cache of an allocation (VidMm does this itself whenever it moves bytes). */
  private flushCache(allocation: Allocation, reason: string): void {
    if (!allocation.cache) return;
    const written = allocation.cache.invalidate(0, allocation.sizeBytes, this.backing(allocation));
    allocation.cache = undefined;
    if (written) this.trace.record('os', 'vidmm', 'CPU cache written back', { hAllocation: allocation.handle, allocation: allocation.name, lines: written, reason });
  }

  /** VM-08: does a CPU access to this allocation need cache maintenance by the UMD? */
  needsCacheMaintenance(allocation: Allocation): boolean {
    if (allocation.cpuAccess !== 'cached' || allocation.pagesIn !== 'system') return false;
    if (!this.ioCoherent) return true;
    return allocation.placement !== undefined && !allocation.placement.descriptor.cacheCoherent;
  }

  // ── create / destroy (VM-01) ──

  createAllocation(process: Process, args: unknown): { hAllocation: number } {
    const a = v.options(args, 'createAllocation(args)', ['hDevice', 'sizeBytes', 'segments', 'cpuAccess', 'resident', 'name']);
    const device = this.os.handles.requireDevice(process, a.hDevice, 'hDevice');
    const memory = this.adapters[device.adapter.index];
    const sizeBytes = v.integer(a.sizeBytes, 'sizeBytes', 1, 1 << 28);
    const cpuAccess = a.cpuAccess === undefined ? 'uncached' : v.oneOf(a.cpuAccess, 'cpuAccess', ['none', 'cached', 'uncached'] as const);
    const resident = a.resident === undefined ? true : v.bool(a.resident, 'resident');
    const name = a.name === undefined ? `allocation${this.counters.allocationsCreated + 1}` : String(a.name);
    const known = memory.segments.map((s) => `${s.descriptor.id} ("${s.descriptor.name}")`).join(', ');
    let set: SegmentState[];
    if (a.segments === undefined) {
      set = [...memory.segments];
    } else {
      const list = v.array(a.segments, 'segments', 0, 32);
      set = list.map((ref, i) => {
        const found = memory.segments.find((s) => s.descriptor.id === ref || s.descriptor.name === ref);
        if (!found) throw invalid(`segments[${i}]`, ref, `a segment id or name of adapter "${memory.name}": ${known}`);
        return found;
      });
      set.forEach((s, i) => { if (set.indexOf(s) !== i) throw invalid(`segments[${i}]`, list[i], 'each segment at most once'); });
    }
    const reservedBytes = Math.ceil(sizeBytes / PAGE_BYTES) * PAGE_BYTES;
    const livable = set.filter((s) => s.descriptor.sizeBytes >= reservedBytes);
    if (!livable.length) {
      throw new WddmError('INVALID_PARAMETER', set.length === 0
        ? `createAllocation: the supported segment set is empty: the allocation has no segment it can live in (adapter "${memory.name}" has ${known})`
        : `createAllocation: no segment of the supported set [${set.map((s) => `"${s.descriptor.name}" (${s.descriptor.sizeBytes} bytes)`).join(', ')}] can hold ${reservedBytes} bytes: the allocation has no segment it can live in`,
      { parameter: 'segments', value: set.map((s) => s.descriptor.id), expected: `at least one segment of at least ${reservedBytes} bytes` });
    }
    // Placement: the first segment of the set with room, or not resident.
    const target = resident ? set.find((s) => this.fits(s, { reservedBytes })) : undefined;
    const where = target && !target.descriptor.aperture ? 'local' : 'system';
    const pages = this.allocPages(memory, where, Math.ceil(sizeBytes / PAGE_BYTES), `createAllocation "${name}"`);
    const handle = process.allocHandle();
    process.otherLiveHandles.add(handle);
    const allocation = new Allocation(handle, process, device, memory, name, sizeBytes, set, cpuAccess);
    allocation.pages = pages;
    allocation.pagesIn = where;
    allocation.placement = target;
    if (target) target.usedBytes += reservedBytes;
    this.allocations.set(handle, allocation);
    this.counters.allocationsCreated++;
    this.trace.record('runtime', process.name, 'D3DKMTCreateAllocation', {
      hDevice: device.handle, hAllocation: handle, name, sizeBytes, cpuAccess, segments: set.map((s) => s.descriptor.name),
    });
    this.trace.record('os', 'vidmm', 'allocation placed', {
      hAllocation: handle, allocation: name, segment: allocation.placementName,
      reason: target ? 'first segment of the set with room' : resident ? 'no segment of the set has room' : 'created not resident',
    });
    return { hAllocation: handle };
  }

  /**
   * D3DKMTDestroyAllocation2. Returns at once. Without AssumeNotInUse the
   * memory is freed once the work the device queued before this call has
   * finished (a CPU waiter on each queue's progress fence). `wait` is set
   * only with SynchronousDestroy while the memory is not freed yet: a CPU
   * thread that yields it resumes once the memory is reclaimed.
   */
  /** D3DKMTDestroyAllocation2: never blocks; with SynchronousDestroy, `hEvent` (when not freed at once) is set when the memory is reclaimed. */
  destroyAllocation2(process: Process, args: unknown): { freed: boolean; hEvent?: number } {
    const a = v.options(args, 'destroyAllocation2(args)', ['hDevice', 'hAllocations', 'Flags']);
    // A removed device (GPU reset) may still destroy what it made.
    const device = this.os.handles.resolve(process, a.hDevice, 'device', 'hDevice');
    const handles = v.array(a.hAllocations, 'hAllocations', 1, 1024);
    const flags = v.options(a.Flags, 'Flags', ['AssumeNotInUse', 'SynchronousDestroy']);
    const assumeNotInUse = flags.AssumeNotInUse === undefined ? false : v.bool(flags.AssumeNotInUse, 'Flags.AssumeNotInUse');
    const synchronous = flags.SynchronousDestroy === undefined ? false : v.bool(flags.SynchronousDestroy, 'Flags.SynchronousDestroy');
    const list = handles.map((h, i) => {
      const allocation = this.resolve(process, h, `hAllocations[${i}]`);
      if (allocation.device !== device) throw invalid(`hAllocations[${i}]`, h, `an allocation of device ${hex(device.handle)}`);
      if (handles.indexOf(h) !== i) throw invalid(`hAllocations[${i}]`, h, 'each allocation once (it would be destroyed twice)');
      return allocation;
    });
    this.trace.record('runtime', process.name, 'D3DKMTDestroyAllocation2', {
      hDevice: device.handle, AllocationCount: list.length, phAllocationList: list.map((x) => x.handle),
      AssumeNotInUse: assumeNotInUse, SynchronousDestroy: synchronous,
    });
    for (const allocation of list) {
      this.allocations.delete(allocation.handle);
      allocation.process.otherLiveHandles.delete(allocation.handle);
      process.retired.add(allocation.handle);
      this.destroyPending.set(allocation.handle, allocation);
      allocation.state = 'destroyPending';
      if (allocation.lock) this.dropLock(allocation, 'destroyed while locked: implicit Unlock2');
    }
    // The work queued before the request: every hardware queue of the owning device up to its last
    // submission, and every command buffer its kernel-mode contexts have queued or on the engine.
    const queues = [...device.queues].filter((q) => q.progress && !q.progress.global.destroyed).sort((x, y) => x.handle - y.handle);
    const unfinished = device.removed ? [] : queues.filter((q) => q.progress!.global.currentValue() < q.progressValue);
    const contexts = device.removed ? [] : this.os.contextsOf(process)
      .filter((c) => c.device === device && !c.destroyed)
      .map((c) => ({ context: c, remaining: c.inFlight.length + c.packets.filter((p) => p.type === 'commandBuffer').length }))
      .filter((c) => c.remaining > 0);
    if (assumeNotInUse || (unfinished.length === 0 && contexts.length === 0)) {
      this.counters.destroysAtOnce += list.length;
      for (const allocation of list) this.free(allocation, assumeNotInUse ? 'AssumeNotInUse: pending work ignored' : 'no work queued before the request is unfinished');
      return { freed: true };
    }
    this.counters.destroysDeferred += list.length;
    const values = unfinished.map((q) => q.progressValue);
    const requestedNs = this.nowNs;
    this.trace.record('os', 'vidmm', 'destroy deferred', {
      allocations: list.map((x) => x.name),
      until: [...unfinished.map((q, i) => `${q.progress!.global.label}>=${values[i]}`), ...contexts.map((c) => `${c.context.label}: ${c.remaining} command buffer(s) completed`)],
    });
    // SynchronousDestroy: a CPU event of the process, set when the memory is reclaimed.
    const event: CpuEvent | undefined = synchronous ? this.os.newEvent(process, `reclaimed ${list.map((x) => x.name).join(',')}`) : undefined;
    const destroy: DeferredDestroy = { allocations: list, parts: (unfinished.length ? 1 : 0) + contexts.length, requestedNs, event };
    this.deferredDestroys.push(destroy);
    for (const c of contexts) this.contextWaits.push({ ...c, destroy });
    if (unfinished.length) {
      this.os.waitAll(unfinished.map((q) => q.progress!.global), values, `vidmm:destroy ${list.map((x) => x.name).join(',')}`,
        (result: WaitResult) => this.destroyPartDone(destroy, `progress fences ${result.status}`));
    }
    const freed = list.every((x) => x.state === 'freed');
    if (!event || freed) return { freed };
    return { freed, hEvent: event.handle };
  }

  /** A kernel-mode context's command buffer completed on the GPU (hContext is the driver's). */
  private contextCompleted(adapter: OsAdapter, hContext: number): void {
    if (!this.contextWaits.length) return;
    const finished: ContextWait[] = [];
    for (const wait of this.contextWaits) {
      const c = wait.context;
      if (c.device.adapter === adapter && c.hContext === hContext) wait.remaining--;
      if (wait.remaining <= 0 || c.destroyed || c.device.removed) finished.push(wait);
    }
    if (!finished.length) return;
    this.contextWaits = this.contextWaits.filter((w) => !finished.includes(w));
    for (const wait of finished) this.destroyPartDone(wait.destroy, `${wait.context.label} completed`);
  }

  /** One part of a deferred destroy's queued work finished; after the last, the memory is reclaimed (and a SynchronousDestroy's event set). */
  private destroyPartDone(destroy: DeferredDestroy, what: string): void {
    if (--destroy.parts > 0) return;
    // The work it waited for is done: the reads and writes of every submission whose progress fence the OS sees
    // reached happened before (a fence is signalled after its submission's commands), even where the GPU's own
    // report of that signal comes later (its last step, after the value reached memory: schedule.granularity 'step').
    this.settleReached();
    this.deferredDestroys.splice(this.deferredDestroys.indexOf(destroy), 1);
    for (const allocation of destroy.allocations) this.free(allocation, `queued work finished (${what}) after ${this.nowNs - destroy.requestedNs} ns`);
    if (destroy.event && !destroy.event.signaled) this.os.setEvent(destroy.event);
  }

  private free(allocation: Allocation, reason: string): void {
    if (allocation.state === 'freed') return;
    allocation.cache = undefined;
    this.freePages(allocation.memory, allocation.pagesIn, allocation.pages);
    if (allocation.placement) allocation.placement.usedBytes -= allocation.reservedBytes;
    allocation.placement = undefined;
    allocation.pages = [];
    allocation.state = 'freed';
    allocation.freedAtNs = this.nowNs;
    this.counters.allocationsFreed++;
    if (this.destroyPending.get(allocation.handle) === allocation) this.destroyPending.delete(allocation.handle);
    this.freed.delete(allocation.handle);
    this.freed.set(allocation.handle, allocation);
    if (this.freed.size > this.records) {
      this.freed.delete(this.freed.keys().next().value as number);
      this.counters.freedAllocationsForgotten++;
    }
    this.trace.record('os', 'vidmm', 'allocation freed', { hAllocation: allocation.handle, allocation: allocation.name, reason });
  }

  // ── residency ──

  /** Makes an allocation resident in a segment of its set (the first with room, or `segment`). */
  makeResident(process: Process, args: unknown): { segment: string } {
    const a = v.options(args, 'makeResident(args)', ['hDevice', 'hAllocation', 'segment']);
    const { allocation } = this.deviceAndAllocation(process, a);
    let candidates = allocation.segmentSet;
    if (a.segment !== undefined) {
      const found = allocation.segmentSet.find((s) => s.descriptor.id === a.segment || s.descriptor.name === a.segment);
      if (!found) throw invalid('segment', a.segment, `a segment of the allocation's supported set: ${allocation.segmentSet.map((s) => JSON.stringify(s.descriptor.name)).join(', ')}`);
      candidates = [found];
    }
    if (allocation.lock) {
      if (allocation.lock.keptOutOfLocalMemory && candidates.some((s) => !s.descriptor.aperture)) {
        throw new WddmError('INVALID_DEVICE_STATE', `makeResident: allocation ${hex(allocation.handle)} "${allocation.name}" was locked while not resident and has no aperture segment: it stays out of local memory until Unlock2 (VM-05)`,
          { parameter: 'hAllocation', value: allocation.handle, expected: 'an allocation that is not locked, or has an aperture segment' });
      }
      // A locked allocation keeps its CPU mapping: it stays where it is, except that one in system
      // memory may enter an aperture segment (the same pages).
      candidates = candidates.filter((s) => s === allocation.placement || (s.descriptor.aperture && allocation.pagesIn === 'system'));
    }
    this.trace.record('runtime', process.name, 'D3DKMTMakeResident', { hAllocation: allocation.handle, segment: a.segment === undefined ? 'any' : String(a.segment) });
    if (allocation.placement && candidates.includes(allocation.placement)) return { segment: allocation.placementName };
    const target = candidates.find((s) => this.fits(s, allocation));
    if (!target) {
      throw new WddmError('NO_MEMORY', `makeResident: no segment of [${candidates.map((s) => s.descriptor.name).join(', ')}] has room for allocation ${hex(allocation.handle)} "${allocation.name}" (${allocation.reservedBytes} bytes)${allocation.lock ? ' that keeps its CPU mapping while locked' : ''}`,
        { parameter: 'hAllocation', value: allocation.handle, expected: 'a segment with room' });
    }
    this.move(allocation, target, 'MakeResident');
    return { segment: allocation.placementName };
  }

  /** Evicts an allocation: its bytes go to system memory, it is no longer resident. */
  evict(process: Process, args: unknown): void {
    const a = v.options(args, 'evict(args)', ['hDevice', 'hAllocation']);
    const { allocation } = this.deviceAndAllocation(process, a);
    if (allocation.lock && allocation.pagesIn === 'local') {
      throw new WddmError('INVALID_DEVICE_STATE', `evict: allocation ${hex(allocation.handle)} "${allocation.name}" is locked in local memory (${allocation.lock.path}); Unlock2 it first`,
        { parameter: 'hAllocation', value: allocation.handle, expected: 'an allocation not locked in local memory' });
    }
    this.trace.record('runtime', process.name, 'D3DKMTEvict', { hAllocation: allocation.handle });
    this.move(allocation, undefined, 'Evict');
  }

  // ── Lock2 / Unlock2 (VM-05, VM-06, VM-07) ──

  /** Decides how a lock reaches the bytes (VM-05) without changing anything. */
  private lockPlan(allocation: Allocation): { path: LockPath; moveTo?: SegmentState | 'notResident'; reason?: string } {
    const placement = allocation.placement;
    const what = `Lock2 of allocation ${hex(allocation.handle)} "${allocation.name}"`;
    if (!placement || placement.descriptor.aperture) return { path: 'systemMemory' };
    const apertureSegment = allocation.segmentSet.find((s) => s.descriptor.aperture && this.fits(s, allocation));
    const segment = placement.descriptor;
    if (allocation.cpuAccess === 'cached') {
      // Cached CPU access only in an aperture segment or when not resident (no coherence with local memory).
      return apertureSegment
        ? { path: 'systemMemory', moveTo: apertureSegment, reason: 'cached CPU access: aperture segment' }
        : { path: 'systemMemory', moveTo: 'notResident', reason: 'cached CPU access: not resident (no aperture segment with room)' };
    }
    if (allocation.cpuAccess === 'none') {
      if (apertureSegment) return { path: 'systemMemory', moveTo: apertureSegment, reason: 'not CPU-accessible: only lockable in an aperture segment or in system memory' };
      throw new WddmError('NOT_SUPPORTED', `${what}: it is not CPU-accessible and resident in memory segment "${segment.name}"; it locks only with an aperture segment (with room) in its supported set or when not resident (VM-05)`,
        { parameter: 'hAllocation', value: allocation.handle, expected: 'an allocation in system memory or with an aperture segment' });
    }
    if (segment.cpuVisible) return { path: 'cpuVisibleSegment' };
    if (segment.supportsCpuHostAperture && allocation.memory.aperture.pagesFree >= allocation.pageCount) return { path: 'cpuHostAperture' };
    if (apertureSegment) {
      return { path: 'systemMemory', moveTo: apertureSegment, reason: segment.supportsCpuHostAperture ? 'CpuHostAperture full: aperture segment path' : `segment "${segment.name}" has no CpuHostAperture: aperture segment path` };
    }
    if (segment.supportsCpuHostAperture) {
      allocation.memory.aperture.requireFree(allocation.pageCount, what);
    }
    throw new WddmError('NOT_SUPPORTED', `${what}: it is resident in segment "${segment.name}", which the CPU cannot see and which has no CpuHostAperture, and its supported set has no aperture segment with room: no CPU virtual address is possible (VM-05)`,
      { parameter: 'hAllocation', value: allocation.handle, expected: 'an allocation with an aperture segment in its supported set' });
  }

  lock2(process: Process, args: unknown): { pData: bigint } {
    const a = v.options(args, 'lock2(args)', ['hDevice', 'hAllocation', 'Flags']);
    const flags = a.Flags === undefined ? 0 : v.integer(a.Flags, 'Flags', 0, 0xffff_ffff);
    if (flags !== 0) {
      throw new WddmError('INVALID_PARAMETER', `lock2: Flags is 0x${flags.toString(16)}; D3DDDICB_LOCK2FLAGS has no flags yet: every bit is reserved and must be 0 (VM-07)`,
        { parameter: 'Flags', value: flags, expected: '0' });
    }
    const { device, allocation } = this.deviceAndAllocation(process, a);
    if (allocation.lock) {
      allocation.lock.count++;
      this.trace.record('runtime', process.name, 'D3DKMTLock2', { hDevice: device.handle, hAllocation: allocation.handle, pData: hex(allocation.lock.pData), lockCount: allocation.lock.count });
      return { pData: allocation.lock.pData };
    }
    const plan = this.lockPlan(allocation);
    if (plan.moveTo) this.move(allocation, plan.moveTo === 'notResident' ? undefined : plan.moveTo, plan.reason ?? 'Lock2');
    let aperturePages: number[] | undefined;
    if (plan.path === 'cpuHostAperture') {
      const aperture = allocation.memory.aperture;
      aperturePages = aperture.map(allocation.pages, `Lock2 of allocation ${hex(allocation.handle)} "${allocation.name}"`);
      this.trace.record('ddi', allocation.memory.name, 'DxgkDdiMapCpuHostAperture', {
        hAllocation: allocation.handle, NumberOfPages: aperturePages.length,
        AperturePages: aperturePages, PhysicalPages: allocation.pages, pagesInUse: aperture.pagesInUse, SizeInPages: aperture.sizeInPages,
      });
    }
    const va = this.nextVa.get(process) ?? LOCK_VA_BASE;
    this.nextVa.set(process, va + BigInt(allocation.reservedBytes) + BigInt(PAGE_BYTES)); // a guard page between mappings
    allocation.lock = {
      count: 1, pData: va, path: plan.path, pages: plan.path === 'cpuHostAperture' ? [] : [...allocation.pages], aperturePages,
      keptOutOfLocalMemory: !allocation.resident && !allocation.hasApertureSegment,
    };
    let list = this.mappings.get(process);
    if (!list) this.mappings.set(process, (list = []));
    list.push({ va, bytes: allocation.sizeBytes, allocation });
    this.counters.locks++;
    if (this.needsCacheMaintenance(allocation)) {
      allocation.cache ??= new CpuCache(allocation.sizeBytes);
      allocation.cache.prefetch(0, allocation.sizeBytes, this.backing(allocation));
    }
    this.trace.record('runtime', process.name, 'D3DKMTLock2', {
      hDevice: device.handle, hAllocation: allocation.handle, Flags: 0, pData: hex(va), path: plan.path, segment: allocation.placementName,
      keptOutOfLocalMemory: allocation.lock.keptOutOfLocalMemory,
    });
    return { pData: va };
  }

  unlock2(process: Process, args: unknown): void {
    const a = v.options(args, 'unlock2(args)', ['hDevice', 'hAllocation']);
    const { allocation } = this.deviceAndAllocation(process, a);
    if (!allocation.lock) {
      throw new WddmError('INVALID_DEVICE_STATE', `unlock2: allocation ${hex(allocation.handle)} "${allocation.name}" is not locked`,
        { parameter: 'hAllocation', value: allocation.handle, expected: 'a locked allocation' });
    }
    this.trace.record('runtime', process.name, 'D3DKMTUnlock2', { hAllocation: allocation.handle, lockCount: allocation.lock.count - 1 });
    if (--allocation.lock.count === 0) this.dropLock(allocation, 'Unlock2');
  }

  private dropLock(allocation: Allocation, reason: string): void {
    const lock = allocation.lock!;
    if (lock.aperturePages) {
      allocation.memory.aperture.unmap(lock.aperturePages);
      this.trace.record('ddi', allocation.memory.name, 'DxgkDdiUnmapCpuHostAperture', { hAllocation: allocation.handle, AperturePages: lock.aperturePages, pagesInUse: allocation.memory.aperture.pagesInUse });
    }
    const list = this.mappings.get(allocation.process) ?? [];
    const index = list.findIndex((m) => m.allocation === allocation);
    if (index >= 0) list.splice(index, 1);
    allocation.lock = undefined;
    this.trace.record('os', 'vidmm', 'CPU mapping removed', { hAllocation: allocation.handle, allocation: allocation.name, reason });
  }

  // ── CPU access through a Lock2 mapping ──

  private translate(process: Process, va: unknown, length: number, parameter: string): { allocation: Allocation; offset: number } {
    const address = v.u64(va, parameter);
    const mapping = (this.mappings.get(process) ?? []).find((m) => address >= m.va && address < m.va + BigInt(m.bytes));
    if (!mapping) {
      throw new WddmError('ACCESS_DENIED', `${parameter} ${hex(address)} is not inside any Lock2 mapping of process "${process.name}" (unlocked or destroyed allocation?)`,
        { parameter, value: address, expected: 'an address returned by lock2 (pData + offset) of a locked allocation' });
    }
    const offset = Number(address - mapping.va);
    if (offset + length > mapping.bytes) {
      throw new WddmError('INVALID_PARAMETER', `${parameter}: range [${offset}, ${offset + length}) is outside allocation ${hex(mapping.allocation.handle)} "${mapping.allocation.name}" of ${mapping.bytes} bytes`,
        { parameter, value: { offset, length }, expected: `a range inside [0, ${mapping.bytes})` });
    }
    return { allocation: mapping.allocation, offset };
  }

  /** Physical address behind byte `offset` of a locked allocation, through its lock path (aperture page table included). */
  private lockedPhys(allocation: Allocation, offset: number): number {
    const lock = allocation.lock!;
    const page = Math.floor(offset / PAGE_BYTES);
    const base = lock.aperturePages ? allocation.memory.aperture.translate(lock.aperturePages[page]) : lock.pages[page];
    return base + (offset % PAGE_BYTES);
  }

  private throughLock(allocation: Allocation): BackingAccess {
    const walk = (offset: number, length: number, visit: (phys: number, at: number, n: number) => void) => {
      for (let done = 0; done < length;) {
        const at = offset + done;
        const n = Math.min(length - done, PAGE_BYTES - (at % PAGE_BYTES));
        visit(this.lockedPhys(allocation, at), done, n);
        done += n;
      }
    };
    return {
      read: (offset, length) => {
        const out = new Uint8Array(length);
        const mem = new Uint8Array(this.memory.buffer);
        walk(offset, length, (phys, at, n) => out.set(mem.subarray(phys, phys + n), at));
        return out;
      },
      write: (offset, data) => {
        const mem = new Uint8Array(this.memory.buffer);
        walk(offset, data.length, (phys, at, n) => mem.set(data.subarray(at, at + n), phys));
      },
    };
  }

  cpuWrite(process: Process, va: unknown, data: unknown): void {
    if (!(data instanceof Uint8Array)) throw invalid('data', data, 'a Uint8Array');
    const { allocation, offset } = this.translate(process, va, data.length, 'cpuVa');
    if (this.needsCacheMaintenance(allocation)) {
      allocation.cache ??= new CpuCache(allocation.sizeBytes);
      allocation.cache.cpuWrite(offset, data, this.throughLock(allocation));
    } else {
      this.throughLock(allocation).write(offset, data);
    }
  }

  cpuRead(process: Process, va: unknown, length: unknown): Uint8Array {
    const n = v.integer(length, 'length', 0, 1 << 28);
    const { allocation, offset } = this.translate(process, va, n, 'cpuVa');
    if (!this.needsCacheMaintenance(allocation)) return this.throughLock(allocation).read(offset, n);
    allocation.cache ??= new CpuCache(allocation.sizeBytes);
    const { bytes, stale } = allocation.cache.cpuRead(offset, n, this.throughLock(allocation));
    for (const r of stale) this.coherenceFault('stale CPU read', allocation, r, 'a CPU read after a GPU write without D3DKMTInvalidateCache: the CPU cache returns bytes older than memory');
    return bytes;
  }

  /** D3DKMTInvalidateCache: write back and invalidate the CPU cache lines of a range. */
  invalidateCache(process: Process, args: unknown): void {
    const a = v.options(args, 'invalidateCache(args)', ['hDevice', 'hAllocation', 'Offset', 'Length']);
    const { allocation } = this.deviceAndAllocation(process, a);
    const { offset, length } = this.range(allocation, a.Offset, a.Length, 'invalidateCache');
    this.counters.cacheInvalidations++;
    const needed = this.needsCacheMaintenance(allocation);
    const written = needed && allocation.cache ? allocation.cache.invalidate(offset, length, this.backing(allocation)) : 0;
    this.counters.linesWrittenBack += written;
    this.trace.record('runtime', process.name, 'D3DKMTInvalidateCache', {
      hDevice: allocation.device.handle, hAllocation: allocation.handle, Offset: offset, Length: length,
      linesWrittenBack: written, needed,
    });
  }

  private coherenceFault(kind: CoherenceFault['kind'], allocation: Allocation, range: ByteRange, why: string): void {
    if (kind === 'stale CPU read') this.counters.staleCpuReads++;
    else if (kind === 'stale GPU read') this.counters.staleGpuReads++;
    else this.counters.lostWrites++;
    this.coherenceFaults.push({ kind, timeNs: this.nowNs, hAllocation: allocation.handle, allocation: allocation.name, offset: range.offset, length: range.length });
    this.counters.coherenceFaultsDropped += keepNewest(this.coherenceFaults, this.records);
    this.trace.record('fault', 'vidmm', kind, { hAllocation: allocation.handle, allocation: allocation.name, Offset: range.offset, Length: range.length, why });
  }

  // ── GPU accesses declared by submissions ──

  /** Validates a submission's `reads` / `writes` before anything is submitted (hardware queue). */
  prepareUse(process: Process, hHwQueue: unknown, reads: unknown, writes: unknown): PreparedUse {
    const queue = this.os.handles.resolve(process, hHwQueue, 'hwQueue', 'hHwQueue');
    if (!queue.progress) {
      throw new WddmError('INVALID_PARAMETER', `submit: hardware queue ${hex(queue.handle)} has no progress fence (created with nativeProgressFence: false), so the model cannot tell when its reads and writes are done`,
        { parameter: 'hHwQueue', value: queue.handle, expected: 'a queue with a native progress fence' });
    }
    return { label: queue.label, process, queue, marker: queue.progress.global, ...this.parseAccesses(process, queue.device.adapter, reads, writes) };
  }

  /**
   * The same for a kernel-mode context's command buffer (submitCommand): the
   * accesses happen when the GPU executes the buffer's last { fenceWrite },
   * which must exist.
   */
  prepareContextUse(process: Process, hContext: unknown, commands: unknown, reads: unknown, writes: unknown): PreparedUse {
    const context = this.os.handles.resolve(process, hContext, 'context', 'hContext');
    const list = Array.isArray(commands) ? commands : [];
    let marker: { hSyncObject: unknown; value: unknown } | undefined;
    for (const c of list) if (c && typeof c === 'object' && 'fenceWrite' in c) marker = (c as { fenceWrite: { hSyncObject: unknown; value: unknown } }).fenceWrite;
    if (!marker) {
      throw new WddmError('INVALID_PARAMETER', `submitCommand: reads / writes on kernel-mode context ${hex(context.handle)} need a { fenceWrite } in the command buffer: the model performs the accesses when the GPU executes the last one`,
        { parameter: 'commands', expected: 'a command buffer ending its work with a monitored fence { fenceWrite }' });
    }
    const local = this.os.handles.resolve(process, marker.hSyncObject, 'syncObject', 'fenceWrite.hSyncObject') as LocalFence;
    return { label: context.label, process, marker: local.global, markerValue: v.u64(marker.value, 'fenceWrite.value'), ...this.parseAccesses(process, context.device.adapter, reads, writes) };
  }

  private parseAccesses(process: Process, adapter: OsAdapter, reads: unknown, writes: unknown): { reads: AccessRange[]; writes: AccessRange[] } {
    const parse = (raw: unknown, parameter: 'reads' | 'writes'): AccessRange[] => {
      if (raw === undefined) return [];
      return v.array(raw, parameter, 0, 256).map((item, i) => {
        const p = `${parameter}[${i}]`;
        const entry = typeof item === 'number' ? { hAllocation: item } : v.options(item, p, parameter === 'writes' ? ['hAllocation', 'Offset', 'Length', 'data'] : ['hAllocation', 'Offset', 'Length']);
        const allocation = this.resolve(process, entry.hAllocation, `${p}.hAllocation`);
        if (allocation.memory.index !== adapter.index) {
          throw invalid(`${p}.hAllocation`, allocation.handle, `an allocation on the submission's adapter "${adapter.name}"`);
        }
        const data = entry.data;
        if (data !== undefined && !(data instanceof Uint8Array)) throw invalid(`${p}.data`, data, 'a Uint8Array the GPU writes');
        const { offset, length } = this.range(allocation, entry.Offset, entry.Length, p, data ? data.length : undefined);
        if (data && data.length !== length) throw invalid(`${p}.Length`, length, `the length of data (${data.length})`);
        return { allocation, offset, length, data: data ? data.slice() : undefined };
      });
    };
    return { reads: parse(reads, 'reads'), writes: parse(writes, 'writes') };
  }

  /** Records the declared accesses of a submission the OS accepted. */
  commitUse(use: PreparedUse, progressValue?: bigint): void {
    if (!use.reads.length && !use.writes.length) return;
    const fence = use.marker!;
    const value = use.markerValue ?? progressValue!;
    const key = `${fence.adapter.index}:${fence.coreFence}`;
    let list = this.pending.get(key);
    if (!list) this.pending.set(key, (list = []));
    list.push({ queueLabel: use.label, fence, progressValue: value, reads: use.reads, writes: use.writes });
    const show = (r: AccessRange) => `${r.allocation.name}[${r.offset},${r.offset + r.length})`;
    this.trace.record('umd', use.process.name, 'submission uses allocations', {
      queue: use.label, until: `${fence.label}>=${value}`, reads: use.reads.map(show), writes: use.writes.map(show),
    });
  }

  /** Does no allocation use wait for a fence signal (gpuProgress would do nothing)? */
  private noUseWaitsForSignal(): boolean {
    return this.pending.size === 0; // a fence's list is deleted when it empties (gpuProgress)
  }

  /** Every pending use whose progress fence has reached its value did its reads and writes: account them now. */
  private settleReached(): void {
    for (const list of [...this.pending.values()]) {
      const fence = list[0]?.fence;
      if (fence && !fence.destroyed) this.gpuProgress(fence, fence.currentValue());
    }
  }

  /** The GPU signalled a progress fence: the submissions up to that value did their reads and writes. */
  private gpuProgress(fence: GlobalFence, value: bigint): void {
    if (this.pending.size === 0) return; // no key string per GPU signal when no use waits
    const key = `${fence.adapter.index}:${fence.coreFence}`;
    const list = this.pending.get(key);
    if (!list) return;
    const done = list.filter((u) => u.progressValue <= value);
    if (!done.length) return;
    const left = list.filter((u) => u.progressValue > value);
    if (left.length) this.pending.set(key, left);
    else this.pending.delete(key); // a fence used once leaves nothing behind
    for (const use of done) {
      for (const r of use.reads) this.gpuRead(use, r, use.queueLabel);
      for (const w of use.writes) this.gpuWrite(use, w, use.queueLabel);
    }
  }

  private useAfterFree(allocation: Allocation, access: string, queueLabel: string): boolean {
    if (allocation.state !== 'freed') return false;
    this.counters.gpuUseAfterFree++;
    this.trace.record('fault', 'vidmm', `GPU ${access} of a freed allocation`, {
      hAllocation: allocation.handle, allocation: allocation.name, queue: queueLabel, freedAtNs: allocation.freedAtNs,
      why: 'destroyed with AssumeNotInUse while queued work still used it',
    });
    return true;
  }

  private gpuRead(use: PendingUse, r: AccessRange, queueLabel: string): void {
    const allocation = r.allocation;
    if (this.useAfterFree(allocation, 'read', queueLabel)) return;
    if (allocation.cache && this.needsCacheMaintenance(allocation)) {
      for (const range of allocation.cache.gpuRead(r.offset, r.length)) {
        this.coherenceFault('stale GPU read', allocation, range, 'a GPU read after a CPU write without D3DKMTInvalidateCache: the CPU bytes are still in its cache, the GPU reads older memory');
      }
    }
    const bytes = this.backing(allocation).read(r.offset, r.length);
    this.gpuReads.push({ timeNs: this.nowNs, queue: queueLabel, progressValue: use.progressValue, hAllocation: allocation.handle, allocation: allocation.name, offset: r.offset, bytes });
    this.counters.gpuReadsDropped += keepNewest(this.gpuReads, this.records);
    this.trace.record('gpu', 'vidmm', 'GPU read allocation', { queue: queueLabel, hAllocation: allocation.handle, allocation: allocation.name, Offset: r.offset, Length: r.length });
  }

  private gpuWrite(use: PendingUse, w: AccessRange, queueLabel: string): void {
    const allocation = w.allocation;
    if (this.useAfterFree(allocation, 'write', queueLabel)) return;
    if (allocation.cache && this.needsCacheMaintenance(allocation)) {
      for (const range of allocation.cache.gpuWrite(w.offset, w.length)) {
        this.coherenceFault('lost write', allocation, range, 'the GPU wrote bytes the CPU had written but not yet written back: one of the two writes is lost');
      }
    }
    if (w.data) this.backing(allocation).write(w.offset, w.data);
    this.trace.record('gpu', 'vidmm', 'GPU wrote allocation', { queue: queueLabel, progressValue: use.progressValue, hAllocation: allocation.handle, allocation: allocation.name, Offset: w.offset, Length: w.length });
  }

  // ── inspection ──

  /**
   * A snapshot of an allocation (by handle, any process): live, destroyed and not yet freed, or among the
   * newest limits.allocationRecords freed ones; undefined otherwise.
   */
  info(hAllocation: number): AllocationInfo | undefined {
    const allocation = this.allocations.get(hAllocation) ?? this.destroyPending.get(hAllocation) ?? this.freed.get(hAllocation);
    if (!allocation) return undefined;
    return {
      hAllocation, name: allocation.name, sizeBytes: allocation.sizeBytes, state: allocation.state, cpuAccess: allocation.cpuAccess,
      resident: allocation.resident, segment: allocation.placementName, pages: [...allocation.pages], locked: !!allocation.lock,
      lockPath: allocation.lock?.path, aperturePages: allocation.lock?.aperturePages ? [...allocation.lock.aperturePages] : undefined,
      keptOutOfLocalMemory: allocation.lock?.keptOutOfLocalMemory, freedAtNs: allocation.freedAtNs,
    };
  }

  segmentUsage(adapter: number): { id: number; name: string; sizeBytes: number; usedBytes: number }[] {
    return this.adapters[adapter].segments.map((s) => ({ id: s.descriptor.id, name: s.descriptor.name, sizeBytes: s.descriptor.sizeBytes, usedBytes: s.usedBytes }));
  }
}
