// The explorer's state: what makes two moments of a machine the same, and the
// hash that names one (the visited set's key).
//
//   key = hash( linear memory from STATIC_RESERVED_BYTES to its end,
//                 minus each adapter's out buffer and statistics counters
//             + the host digest: a walk over the machine's object graph,
//                 minus what no step reads (below)
//             + the scheduler's pending events as a sorted multiset of
//                 (time, owner, kind, args), and its current time
//             + the explorer's own state (faults injected) and what the
//                 world's quiet checks read that the rest leaves out
//                 (World.keyExtras: a scenario's expected counters) )
//
// Linear memory holds every fence page, MonitoredValue, waiter heap, wait
// block, engine and CMP write buffer, interrupt list, queue ring and log
// buffer (assembly/layout.ts). Left out, because no step reads them later:
//   - the out buffer: each export that fills it is read by the host in the
//     same event (docs/ABI.md section 4), so it is scratch between events;
//   - statistics (gpuSignals, cmpChecks, interruptsRaised, heapPushes,
//     heapPops, each engine's signals and interrupts): only summaries read them;
//   - a driver's scratch memory (PluggableDriver.scratchMemory: a C driver's
//     stack and argument area), where nothing outlives the call that wrote it.
//
// The host digest walks every object reachable from the machine (arrays,
// Maps and Sets in their insertion order, objects' own keys in order,
// primitives by value, shared objects once then by reference number), so a
// field a new module adds is covered without anyone listing it. Left out:
//   - functions (code, and the callbacks the OS keeps: what they capture is
//     visible elsewhere, e.g. a waiter's thread in the process's thread list);
//     a generator's position is not visible, so the explorer's threads keep
//     theirs in CpuThread (state, blockNumber, waits);
//   - the scheduler (its pending events are hashed as a multiset instead: the
//     order they were scheduled in and their seeded tie-break keys choose
//     only when no explorer does) and, on every event object, `sequence` and
//     `tieBreak` for the same reason;
//   - the trace, the seeded generators (Random: jitter is 0 and ties are the
//     explorer's), WebAssembly objects and views of the memory (hashed above);
//   - objects under keys that hold only counts or timeline history, read by
//     summaries and the timeline exporter, never by a step: `counters`,
//     `counts`, `history`, `sequence` (IGNORED_KEYS), and the driver port's
//     tallies of calls per DDI (DriverPort.tallies);
//   - a handle table's `editStamp` (IGNORED_KEYS): a number from one count
//     for every table of the machine, new at each change, which a cache of a
//     lookup checks (src/os/signals.ts); the table's entries are hashed, and
//     two tables that hold the same may carry different stamps (a snapshot
//     restores it);
//   - fields under symbol keys: a module's scratch and caches kept on its
//     instance (the model keeps none at module level: test/isolation.test.ts);
//   - fields that hold undefined: the model reads a field's value, never
//     whether it exists (`engine.isr = undefined` is "no interrupt on its way",
//     as is a field never set);
//   - which of several equal frozen records a field holds: a plain object
//     frozen when first met whose fields are all primitives (a wait's result,
//     which Waits shares among the waiters woken at one time) is written by its
//     content wherever it is met, never by its identity. Nothing can write to
//     one and no step tells two equal ones apart, while which one a field holds
//     depends on the order things happened in (a cache that is not state hands
//     them out): keyed by identity, one state reached two ways had two keys.
//     A record of the machine as built is a constant (below), by its number.
// Two states with equal keys then have equal memory and equal host state up
// to those, so the same choices from either give equal keys again and the
// same verdicts: the visited set may stop at the second one (docs/EXPLORER.md
// argues it, and test/explore.test.ts compares with a search that stops nowhere).
// The key is 64 bits (two 32-bit lanes): two different states share one with
// probability about n² / 2^65 for n states (3 × 10^-8 at a million).
//
// How it is fed (the same partition of states as a word-by-word hash of all
// of it, at a fraction of the cost: issue 31):
//   - memory sparsely: each non-zero word as (its word index, its value), in
//     order. The covered ranges are fixed for a machine, so the pairs determine
//     every word (a zero is a word not listed). Linear memory is mostly zeros
//     (437 of 32,768 covered words mid-search on 2 engines × 2 fences): a
//     WebAssembly SIMD scan over the machine's own memory skips them 64 bytes
//     a step (src/explore/zero-scan.ts; JavaScript where SIMD is missing);
//   - the pending events and the extras by the 64-bit digests of their keys;
//   - the host objects as the words src/explore/host-walk.ts writes: each value
//     with a tag, each object's list of field names the key reads as one
//     checked 64-bit digest (computed once per shape and set of present
//     fields), each string by a checked digest, an object met before by its
//     number in the walk, and an object deeply frozen in the machine as built
//     (the OS's options, the adapters' caps, the timing, the driver's options,
//     the OS's hooks...) by its number among those constants, learnt once per
//     machine. What the walk learns of an object (its kind, shape, number) is
//     one lookup per object (about 262 objects numbered and 2,320 words a key
//     on 2 × 2 × 2 × 2). Every digest
//     and constant number depends on the machine alone (never on the order a
//     process met states), so every process (shards, workers) agrees on keys.
//   A snapshot's host part is kept by the same walker at save (keep), not at
//   every key: a key is taken about 2.8 times per snapshot (revisits included).
// None of these drops anything from the key: test/explore-state-key.test.ts
// plants a difference of each kind (a memory word set or moved, a write-buffer
// word, a field only the driver writes, a field renamed or reordered, a log
// index where the logs wake waiters, an object frozen at the top only or over
// a Map, a frozen copy made later) and checks the key sees it, and
// test/explore-state-key-oracle.test.ts checks, at every key of searches on
// several machines and scenario files, that the key partitions the states
// exactly as a plain serialization of all of the above does (and fails for
// objects a step writes taken for constants).

import type { Machine } from '../machine/machine.js';
import { readLogLayout } from '../core/bindings.js';
import { HostWalk, stringDigest, mix1, mix2, fmix, type HostRecord, type KeyRules } from './host-walk.js';
import { frozenExports } from './snapshot.js';
import { zeroScan, type NextNonZero } from './zero-scan.js';
import { Random } from '../base/rng.js';
import { Scheduler, type ScheduledEvent } from '../base/scheduler.js';
import { Trace } from '../base/trace.js';
import { VIDSCHCAPS } from '../base/wddm.js';
import type { World } from './world.js';

/** Object keys whose values no step's outcome depends on (counts, timeline history, a cache's stamp). */
export const IGNORED_KEYS: ReadonlySet<string> = new Set(['counters', 'counts', 'history', 'sequence', 'tieBreak', 'editStamp']);

/** With the logs abstracted: the OS log reader's positions and last timestamp of each buffer. */
export const LOG_READER_KEYS: readonly string[] = ['cachedIndex', 'cachedWraparound', 'lastTimestampNs'];

/**
 * Are the native fence logs left out of the key? Yes when no adapter has
 * OptimizedNativeFenceSignaledInterrupt: there the logs serve only the
 * timeline (docs/EXPLORER.md, "What a state is").
 */
export function logsAbstracted(machine: Machine): boolean {
  return machine.adapters.every((a) => (a.os.caps.VidSchCaps & VIDSCHCAPS.OptimizedNativeFenceSignaledInterrupt) === 0);
}

/** The ignored field names, one set per choice of logsAbstracted (so the walk's shape memo is shared by every machine). */
const IGNORED_WITH_LOGS: ReadonlySet<string> = new Set(IGNORED_KEYS);
const IGNORED_WITHOUT_LOGS: ReadonlySet<string> = new Set([...IGNORED_KEYS, ...LOG_READER_KEYS]);

/** The state key of a World at this moment (see the header), and the pieces it is made of. */
export class StateKeys {
  private readonly words: Int32Array;
  /** The skip over zeros of linear memory (src/explore/zero-scan.ts). */
  private readonly scan: NextNonZero;
  /** [start, end) word ranges of memory the key covers. */
  private readonly ranges: number[] = [];
  /** The walk of the host objects (src/explore/host-walk.ts), which keeps a snapshot's host part too when recording. */
  private readonly walk: HostWalk;
  /** The logs are left out (logsAbstracted). */
  readonly logsAbstracted: boolean;

  constructor(private readonly world: World) {
    const machine = world.machine;
    const memory = machine.memory.buffer;
    this.words = new Int32Array(memory);
    this.scan = zeroScan(machine.memory);
    const L = machine.layout;
    const view = new DataView(memory);
    // Word ranges left out: the out buffer and the statistics of each adapter and engine.
    const holes: [number, number][] = [];
    for (const adapter of machine.adapters) {
      const base = adapter.privateBase;
      const out = view.getUint32(base + L.offsets.outBuffer, true);
      const capacity = view.getUint32(base + L.offsets.outCapacity, true);
      holes.push([out, out + capacity * 4]);
      for (const at of [L.offsets.gpuSignals, L.offsets.cmpChecks, L.offsets.interrupts, L.offsets.heapPushes, L.offsets.heapPops]) holes.push([base + at, base + at + 8]);
      // A driver's scratch memory (a C driver's stack and argument area): nothing in it outlives a call.
      for (const [start, end] of adapter.driver.scratchMemory?.() ?? []) holes.push([start, end]);
      for (let e = 0; e < adapter.hardware.engineCount; e++) {
        const record = adapter.core.engineRecordAddress(e);
        holes.push([record + L.offsets.engineSignals, record + L.offsets.engineSignals + 8]);
        holes.push([record + L.offsets.engineInterrupts, record + L.offsets.engineInterrupts + 8]);
      }
    }
    this.logsAbstracted = logsAbstracted(machine);
    if (this.logsAbstracted) {
      // Each queue's two log pages and its log write buffer: read by the OS's timeline reader only.
      const logLayout = readLogLayout(machine.adapters[0].core);
      for (const q of world.queues) {
        const core = machine.adapters[q.adapter].core;
        for (const type of [logLayout.typeWaits, logLayout.typeSignals]) {
          const page = core.queueLogBuffer(q.coreQueue, type);
          if (page) holes.push([page, page + L.pageBytes]);
        }
        const record = core.queueRecordAddress(q.coreQueue);
        if (record) holes.push([record + L.offsets.queueLogPending, record + L.offsets.queueLogPending + L.offsets.queueLogPendingBytes]);
      }
    }
    holes.sort((x, y) => x[0] - y[0]);
    let at = L.staticReservedBytes;
    for (const [start, end] of holes) {
      if (start > at) this.ranges.push(at >>> 2, start >>> 2);
      at = Math.max(at, end);
    }
    if (memory.byteLength > at) this.ranges.push(at >>> 2, memory.byteLength >>> 2);
    const skip = new Set<object>([machine.scheduler, machine.trace, machine.layout, machine.memory, machine.module as object, ...machine.port.tallies()]);
    // The core's exports, as the OS and as the GPU see them: code, and constants (frozen WebAssembly objects).
    for (const adapter of machine.adapters) { skip.add(adapter.core); skip.add(adapter.hardware.core); skip.add(adapter.hardware.layout); }
    this.rules = { skip, ignored: this.logsAbstracted ? IGNORED_WITHOUT_LOGS : IGNORED_WITH_LOGS };
    this.walk = new HostWalk(this.rules, memory, frozenExports(machine));
    // The deeply frozen objects of the machine as built (configuration, capabilities...): numbered once, then one word each per key.
    this.walk.learnConstants([machine, world.explorer]);
  }
  /** What the host walk leaves out (tests: the reference key in test/ reads the same rules). */
  readonly rules: KeyRules;

  /** The visited-set key of the current state. */
  key(): string {
    const world = this.world;
    const walk = this.walk;
    let h1 = WORD_SEED_1, h2 = WORD_SEED_2;
    // Linear memory, sparsely: each non-zero word with its index (the ranges are fixed, so the pairs say every
    // word; linear memory is mostly zeros: 437 of 32,768 covered words on a 2-engine machine mid-search). The
    // scan skips to the next 64 bytes holding one (src/explore/zero-scan.ts); the words from there are read
    // one by one until 16 zeros in a row.
    const memory = this.words, ranges = this.ranges, scan = this.scan;
    for (let r = 0; r < ranges.length; r += 2) {
      for (let i = ranges[r], end = ranges[r + 1]; i < end;) {
        i = scan(i << 2, end << 2) >>> 2;
        for (let zeros = 0; i < end && zeros < 16; i++) {
          const x = memory[i];
          if (x === 0) { zeros++; continue; }
          zeros = 0;
          h1 = mix1(mix1(h1, i), x);
          h2 = mix2(mix2(h2, i), x);
        }
      }
    }
    // The pending events, as a sorted multiset of their keys (each key's digest), and the virtual time.
    const scheduler = world.machine.scheduler;
    const events = pendingEvents(scheduler).map(eventKey).sort();
    h1 = mix1(h1, events.length); h2 = mix2(h2, events.length);
    for (const event of events) { const d = stringDigest(event); h1 = mix1(mix1(h1, d[0]), d[1]); h2 = mix2(mix2(h2, d[0]), d[1]); }
    // Virtual time: what a step schedules is due at now + its latency (always 0 on the generated machine).
    const extras: (number | string)[] = scheduler.nowNs !== 0 ? [scheduler.nowNs] : [];
    const more = world.keyExtras?.();
    if (more) extras.push(...more);
    for (const x of extras) {
      const d = typeof x === 'number' && (x | 0) === x ? [x, 0] : stringDigest(`${typeof x}:${x}`);
      h1 = mix1(mix1(h1, d[0]), d[1]); h2 = mix2(mix2(h2, d[0]), d[1]);
    }
    // The host objects, last (as before: what the extras read may run model code): the walk writes their words (and keeps a snapshot's host part when recording).
    walk.write(world.explorer.faultsInjected ? [world.machine, world.explorer] : [world.machine]);
    // The host objects' words.
    const words = walk.words;
    for (let i = 0, n = walk.length; i < n; i++) { const x = words[i]; h1 = mix1(h1, x); h2 = mix2(h2, x); }
    // MurmurHash3's finalizer on each lane, then each lane into the other.
    const f1 = fmix(h1 ^ fmix(h2)), f2 = fmix(h2 ^ Math.imul(f1, 0x9e3779b1));
    return (f2 >>> 0).toString(16).padStart(8, '0') + (f1 >>> 0).toString(16).padStart(8, '0');
  }

  /** The host part of a snapshot of the current state (Runner.save): the same walk keeps it, knowing the objects and constants already. */
  keep(): HostRecord { return this.walk.keepAll([this.world.machine, this.world.explorer]); }

  /** Does the key cover the 32-bit word at this byte address of linear memory (tests, diagnostics)? */
  covers(address: number): boolean {
    const word = address >>> 2;
    for (let r = 0; r < this.ranges.length; r += 2) if (word >= this.ranges[r] && word < this.ranges[r + 1]) return true;
    return false;
  }
  /** The [start, end) byte ranges of linear memory the key covers (tests, diagnostics). */
  coveredRanges(): [number, number][] {
    const out: [number, number][] = [];
    for (let r = 0; r < this.ranges.length; r += 2) out.push([this.ranges[r] * 4, this.ranges[r + 1] * 4]);
    return out;
  }
}

const WORD_SEED_1 = 0xdeadbeef | 0;
const WORD_SEED_2 = 0x41c6ce57;

/** Every live pending event of a scheduler, in scheduling order. */
export function pendingEvents(scheduler: Scheduler): ScheduledEvent[] { return scheduler.pendingEvents(); }

/** An event's identity across runs of the same machine: owner, kind and arguments (time too, though it is always 0 here). */
export function eventKey(event: ScheduledEvent): string {
  const args = Object.keys(event.args).map((k) => `${k}=${event.args[k]}`).join(',');
  return `${event.timeNs}|${event.owner}|${event.kind}|${args}`;
}

/** For a person: what an event is, without the time (every explorer event is due at 0). */
export function eventName(event: ScheduledEvent): string {
  const args = Object.keys(event.args).map((k) => `${k}=${event.args[k]}`).join(',');
  return `${event.owner} ${event.kind}${args ? ` {${args}}` : ''}`;
}

function isSharedBuffer(object: object): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && object instanceof SharedArrayBuffer;
}

/** Paths and values the host walk covers (diagnostics: `explore --debug-state`, tests). */
export function hostWalkLines(machine: Machine, limit = 5000): string[] {
  const lines: string[] = [];
  const seen = new Set<object>();
  const visit = (path: string, value: unknown): void => {
    if (lines.length >= limit) return;
    if (value === null || typeof value !== 'object') {
      lines.push(`${path} = ${typeof value === 'bigint' ? `${value}n` : typeof value === 'function' ? 'ƒ' : String(value)}`);
      return;
    }
    if (seen.has(value)) return;
    seen.add(value);
    if (value instanceof Random || value instanceof Trace || value instanceof Scheduler || value instanceof WebAssembly.Memory ||
        value instanceof WebAssembly.Module || value instanceof WebAssembly.Global || ArrayBuffer.isView(value) || value instanceof ArrayBuffer || isSharedBuffer(value)) {
      lines.push(`${path} (skipped)`);
      return;
    }
    if (Array.isArray(value)) { value.forEach((item, i) => visit(`${path}[${i}]`, item)); return; }
    if (value instanceof Map) { for (const [k, item] of value) visit(`${path}{${typeof k === 'object' ? '…' : String(k)}}`, item); return; }
    if (value instanceof Set) { let i = 0; for (const item of value) visit(`${path}<${i++}>`, item); return; }
    for (const key of Object.keys(value)) if (!IGNORED_KEYS.has(key)) visit(`${path}.${key}`, (value as Record<string, unknown>)[key]);
  };
  visit('machine', machine);
  return lines;
}
