// What the native fence log reader keeps (LOG-01..10): a queue's two
// buffers and the reader's cache of each, the entries it read, the CPU-side
// queued events, overruns, contract violations, interrupts for the timeline,
// and its counters. The timeline's records are bounded: each kind keeps its
// most recent `historyRecords` (RecentRecords), counting what it drops.
// src/os/logs.ts is the reader.

import type { OsAdapter, OsHwQueue } from './objects.js';

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

