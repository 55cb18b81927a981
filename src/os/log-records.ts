// What the native fence log reader keeps (LOG-01..10): a queue's two
// buffers and the reader's cache of each, the entries it read, the CPU-side
// queued events, overruns, contract violations, interrupts for the timeline,
// and its counters. The timeline's records are bounded: each kind keeps its
// most recent `historyRecords` (RecentRecords), counting what it drops.
// src/os/logs.ts is the reader.

import type { FenceKey } from './fence-rows.js';
import type { GlobalFence, OsAdapter, OsHwQueue } from './objects.js';

export type LogKind = 'waits' | 'signals';
/** Records of each kind the OS keeps for the timeline (LOG-08) unless createMachine says otherwise. */
export const DEFAULT_HISTORY_RECORDS = 16384;

/**
 * The most recent `limit` records, oldest first: a ring that overwrites its
 * oldest record once full and counts what it dropped. Reading it (`list`)
 * copies the window out in order.
 */
export class RecentRecords<T> {
  private ring: T[] = [];
  private start = 0;
  dropped = 0;
  constructor(public limit: number) {}
  push(record: T): void {
    if (this.ring.length < this.limit) { this.ring.push(record); return; }
    this.ring[this.start] = record;
    this.start = (this.start + 1) % this.limit;
    this.dropped++;
  }
  get length(): number { return this.ring.length; }
  list(): T[] { return this.start === 0 ? [...this.ring] : [...this.ring.slice(this.start), ...this.ring.slice(0, this.start)]; }
  /** A new limit; keeps the newest records that fit. */
  resize(limit: number): void {
    const kept = this.list();
    this.dropped += Math.max(0, kept.length - limit);
    this.ring = kept.slice(Math.max(0, kept.length - limit));
    this.start = 0;
    this.limit = limit;
  }
}

/**
 * The log entries read (LOG-08) as RecentRecords keeps them (the newest `limit`, counting what it drops), in a
 * ring of columns growing by doubling up to `limit`: an entry read is its queue, its fence record and a few
 * numbers, not an object with three BigInts and a label (~300 B, each kept long enough to reach V8's old
 * generation: the million-fence run's 10⁶ entries left ~300 MiB for the major collector). list() makes the
 * records (labels and ids never change).
 */
export class EntryRecords {
  private queues: QueueLogs[] = [];
  /** The fence record, or the core id of a fence kept as a row (no object made to read its entries). */
  private fences: (GlobalFence | number | undefined)[] = [];
  /** Per slot: handle, log slot | kind << 8 | operation << 9, generation. */
  private words = new Uint32Array(0);
  /** Per slot: FenceValue, FenceObservedGpuTimestamp, FenceEndGpuTimestamp. */
  private values = new BigUint64Array(0);
  private readAt = new Float64Array(0);
  private capacity = 0;
  private start = 0;
  private kept = 0;
  dropped = 0;
  constructor(public limit: number) {}

  get length(): number { return this.kept; }

  push(ql: QueueLogs, buffer: LogBuffer, slot: number, handle: number, fence: GlobalFence | number | undefined, value: bigint, waitUnblocked: boolean,
       observedNs: bigint, endNs: bigint, readAtNs: number): void {
    if (this.limit === 0) { this.dropped++; return; }
    if (this.kept === this.capacity && this.capacity < this.limit) this.relayout(Math.min(this.limit, Math.max(16, this.capacity * 2)));
    let at: number;
    if (this.kept < this.capacity) at = (this.start + this.kept++) % this.capacity;
    else { at = this.start; this.start = (this.start + 1) % this.capacity; this.dropped++; }
    this.queues[at] = ql;
    this.fences[at] = fence;
    this.words[at * 3] = handle;
    this.words[at * 3 + 1] = slot | (buffer.kind === 'signals' ? 1 << 8 : 0) | (waitUnblocked ? 1 << 9 : 0);
    this.words[at * 3 + 2] = buffer.generation;
    this.values[at * 3] = value;
    this.values[at * 3 + 1] = observedNs;
    this.values[at * 3 + 2] = endNs;
    this.readAt[at] = readAtNs;
  }

  /** The newest `capacity` records kept, from slot 0. */
  private relayout(capacity: number): void {
    const keep = Math.min(this.kept, capacity), skip = this.kept - keep, old = this.capacity;
    this.dropped += skip;
    const queues: QueueLogs[] = [], fences: (GlobalFence | number | undefined)[] = [];
    const words = new Uint32Array(capacity * 3), values = new BigUint64Array(capacity * 3), readAt = new Float64Array(capacity);
    for (let i = 0; i < keep; i++) {
      const at = (this.start + skip + i) % old;
      queues.push(this.queues[at]);
      fences.push(this.fences[at]);
      words.set(this.words.subarray(at * 3, at * 3 + 3), i * 3);
      values.set(this.values.subarray(at * 3, at * 3 + 3), i * 3);
      readAt[i] = this.readAt[at];
    }
    this.queues = queues; this.fences = fences; this.words = words; this.values = values; this.readAt = readAt;
    this.capacity = capacity;
    this.start = 0;
    this.kept = keep;
  }

  list(): LogEntryRecord[] {
    const out: LogEntryRecord[] = [];
    for (let i = 0; i < this.kept; i++) {
      const at = (this.start + i) % this.capacity, ql = this.queues[at], fence = this.fences[at], bits = this.words[at * 3 + 1];
      out.push({
        adapter: ql.adapter.name, adapterIndex: ql.adapter.index, queue: ql.queue.label, hHwQueue: ql.queue.hHwQueue, kind: (bits & (1 << 8)) !== 0 ? 'signals' : 'waits',
        generation: this.words[at * 3 + 2], slot: bits & 0xff, hNativeFence: this.words[at * 3], fence: typeof fence === 'number' ? `fence${fence}` : fence?.label, coreFence: typeof fence === 'number' ? fence : fence?.coreFence,
        value: this.values[at * 3], operation: (bits & (1 << 9)) !== 0 ? 'WAIT_UNBLOCKED' : 'SIGNAL_EXECUTED',
        observedNs: this.values[at * 3 + 1], endNs: this.values[at * 3 + 2], readAtNs: this.readAt[at],
      });
    }
    return out;
  }

  /** A new limit; keeps the newest records that fit. */
  resize(limit: number): void {
    this.limit = limit;
    if (this.capacity > limit) this.relayout(limit);
  }
}


export interface LogBuffer {
  kind: LogKind;
  /** DXGK_NATIVE_FENCE_LOG_TYPE. */
  type: number;
  phys: number;
  gpuVa: bigint;
  systemGpuVa: bigint;
  /** The reader's cache (LOG-05). */
  cachedIndex: number;
  cachedWraparound: number;
  /** Last non-zero FenceEndGpuTimestamp read (LOG-07). */
  lastTimestampNs: bigint;
  /** 0 for the buffer made with the queue, +1 at every recreation. */
  generation: number;
}

export interface QueueLogs {
  queue: OsHwQueue;
  adapter: OsAdapter;
  buffers: Record<LogKind, LogBuffer>;
  live: boolean;
  /**
   * Signal entries read ahead of their fence's CurrentValue (src/os/logs.ts, "ahead"): each one's fence and
   * value, checked again at each read of the queue's logs until CurrentValue reaches it. At most one
   * buffer's entries, the oldest dropped first.
   */
  ahead: { fence: FenceKey; value: bigint }[];
}

/** One log entry as the OS read it. */
export interface LogEntryRecord {
  adapter: string;
  adapterIndex: number;
  queue: string;
  /** Kernel handle of the hardware queue (the driver's hHwQueue). */
  hHwQueue: number;
  kind: LogKind;
  generation: number;
  slot: number;
  hNativeFence: number;
  /** Label of the fence the handle names, when it still exists. */
  fence?: string;
  coreFence?: number;
  value: bigint;
  operation: 'SIGNAL_EXECUTED' | 'WAIT_UNBLOCKED';
  observedNs: bigint;
  endNs: bigint;
  readAtNs: number;
}

/** A wait or signal the user-mode driver put in a ring (CPU side of LOG-08). */
export interface QueuedEvent {
  adapter: string;
  adapterIndex: number;
  queue: string;
  hHwQueue: number;
  kind: 'wait' | 'signal';
  hSyncObject: number;
  fence: string;
  coreFence: number;
  value: bigint;
  cpuTimeNs: number;
}

export type LogFaultKind =
  | 'timestamp-decreased' | 'corrupt-header' | 'interrupt-queue-other-engine' | 'interrupt-queue-unknown'
  /** Not a violation: a queue destroyed while its interrupt was on its way (reported only). */
  | 'interrupt-queue-destroyed';

/** A contract violation (or a report) the reader made. */
export interface LogFault {
  kind: LogFaultKind;
  adapter: string;
  queue?: string;
  hHwQueue?: number;
  log?: LogKind;
  message: string;
  timeNs: number;
}

export interface LogOverrun {
  adapter: string;
  queue: string;
  hHwQueue: number;
  log: LogKind;
  lost: number;
  timeNs: number;
}

export interface InterruptMark {
  adapter: string;
  adapterIndex: number;
  engine: number;
  hHWQueue: number;
  listed: number | null;
  timeNs: number;
}

export interface LogCounters {
  buffersCreated: number;
  buffersRecreated: number;
  logReads: number;
  entriesRead: number;
  updateNativeFenceLogsCalls: number;
  overruns: number;
  entriesLost: number;
  /** Times the OS fell back to checking every fence of a device (LOG-05). */
  fallbackScans: number;
  contractViolations: number;
  optimizedInterrupts: number;
  /** Timeline records dropped, oldest first, to keep only the most recent historyRecords of each kind. */
  queuedDropped: number;
  entriesDropped: number;
  interruptsDropped: number;
  overrunsDropped: number;
  faultsDropped: number;
}

