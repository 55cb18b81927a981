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
//     as is a field never set).
// Two states with equal keys then have equal memory and equal host state up
// to those, so the same choices from either give equal keys again and the
// same verdicts: the visited set may stop at the second one (docs/EXPLORER.md
// argues it, and test/explore.test.ts compares with a search that stops nowhere).
// The key is 64 bits (two 32-bit lanes): two different states share one with
// probability about n² / 2^65 for n states (3 × 10^-8 at a million).

import type { Machine } from '../machine/machine.js';
import { readLogLayout } from '../core/bindings.js';
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

const WORD_SEED_1 = 0xdeadbeef;
const WORD_SEED_2 = 0x41c6ce57;

/** Two 32-bit lanes fed word by word (a cyrb53-style mix), finished to 16 hex digits. */
class Lanes {
  h1 = WORD_SEED_1;
  h2 = WORD_SEED_2;
  word(x: number): void {
    this.h1 = Math.imul(this.h1 ^ x, 2654435761);
    this.h2 = Math.imul(this.h2 ^ x, 1597334677);
  }
  string(s: string): void {
    this.word(s.length | 0x4000_0000);
    for (let i = 0; i < s.length; i++) this.word(s.charCodeAt(i));
  }
  number(n: number): void {
    if (Number.isInteger(n) && n >= -0x8000_0000 && n <= 0x7fff_ffff) { this.word(n | 0); return; }
    this.string(String(n));
  }
  bigint(n: bigint): void {
    this.word(Number(BigInt.asUintN(32, n)));
    this.word(Number(BigInt.asUintN(32, n >> 32n)));
    if (n >> 64n !== 0n && n >> 64n !== -1n) this.string(n.toString(16));
  }
  finish(): string {
    let h1 = this.h1, h2 = this.h2;
    h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
    h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
    return (h2 >>> 0).toString(16).padStart(8, '0') + (h1 >>> 0).toString(16).padStart(8, '0');
  }
}

// Tags that keep the walk's shape in the hash (a value is never mistaken for another kind).
const enum Tag { Undefined = 1, True, False, Number, BigInt, String, Function, Symbol, Null, Seen, Skipped, Array, Map, Set, View, Object }

/** The state key of a World at this moment (see the header), and the pieces it is made of. */
export class StateKeys {
  private readonly words: Uint32Array;
  /** [start, end) word ranges of memory the key covers. */
  private readonly ranges: number[] = [];
  private readonly skip: Set<object>;
  private readonly ignored: ReadonlySet<string>;
  /** The logs are left out (logsAbstracted). */
  readonly logsAbstracted: boolean;

  constructor(private readonly world: World) {
    const machine = world.machine;
    const memory = machine.memory.buffer;
    this.words = new Uint32Array(memory);
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
    this.ignored = new Set([...IGNORED_KEYS, ...(this.logsAbstracted ? LOG_READER_KEYS : [])]);
    holes.sort((x, y) => x[0] - y[0]);
    let at = L.staticReservedBytes;
    for (const [start, end] of holes) {
      if (start > at) this.ranges.push(at >>> 2, start >>> 2);
      at = Math.max(at, end);
    }
    if (memory.byteLength > at) this.ranges.push(at >>> 2, memory.byteLength >>> 2);
    this.skip = new Set<object>([machine.scheduler, machine.trace, machine.layout, machine.memory, machine.module as object, ...machine.port.tallies()]);
    for (const adapter of machine.adapters) { this.skip.add(adapter.core); this.skip.add(adapter.hardware.layout); }
  }

  /** The visited-set key of the current state. */
  key(): string {
    const lanes = new Lanes();
    this.memoryInto(lanes);
    this.eventsInto(lanes);
    this.hostInto(lanes);
    return lanes.finish();
  }

  /** Only linear memory (tests, diagnostics). */
  memoryKey(): string { const lanes = new Lanes(); this.memoryInto(lanes); return lanes.finish(); }
  /** Only the host side: pending events and the object walk (tests, diagnostics). */
  hostKey(): string { const lanes = new Lanes(); this.eventsInto(lanes); this.hostInto(lanes); return lanes.finish(); }

  private memoryInto(lanes: Lanes): void {
    const words = this.words;
    let h1 = lanes.h1, h2 = lanes.h2;
    const ranges = this.ranges;
    for (let r = 0; r < ranges.length; r += 2) {
      for (let i = ranges[r], end = ranges[r + 1]; i < end; i++) {
        const x = words[i];
        h1 = Math.imul(h1 ^ x, 2654435761);
        h2 = Math.imul(h2 ^ x, 1597334677);
      }
    }
    lanes.h1 = h1; lanes.h2 = h2;
  }

  private eventsInto(lanes: Lanes): void {
    const scheduler = this.world.machine.scheduler;
    const keys = pendingEvents(scheduler).map(eventKey).sort();
    lanes.word(keys.length);
    for (const key of keys) lanes.string(key);
    // Virtual time: what a step schedules is due at now + its latency (always 0 on the generated machine).
    if (scheduler.nowNs !== 0) lanes.number(scheduler.nowNs);
    const extras = this.world.keyExtras?.();
    if (extras) for (const x of extras) { if (typeof x === 'number') lanes.number(x); else lanes.string(x); }
  }

  private hostInto(lanes: Lanes): void {
    const machine = this.world.machine;
    const seen = new Map<object, number>();
    const skip = this.skip;
    const memoryBuffer = machine.memory.buffer;
    const walk = (value: unknown): void => {
      switch (typeof value) {
        case 'undefined': lanes.word(Tag.Undefined); return;
        case 'boolean': lanes.word(value ? Tag.True : Tag.False); return;
        case 'number': lanes.word(Tag.Number); lanes.number(value); return;
        case 'bigint': lanes.word(Tag.BigInt); lanes.bigint(value); return;
        case 'string': lanes.word(Tag.String); lanes.string(value); return;
        case 'function': lanes.word(Tag.Function); return;
        case 'symbol': lanes.word(Tag.Symbol); return;
      }
      if (value === null) { lanes.word(Tag.Null); return; }
      const object = value as object;
      const earlier = seen.get(object);
      if (earlier !== undefined) { lanes.word(Tag.Seen); lanes.word(earlier); return; }
      seen.set(object, seen.size);
      if (skip.has(object) || object instanceof Random || object instanceof Trace || object instanceof Scheduler ||
          object instanceof WebAssembly.Memory || object instanceof WebAssembly.Module || object instanceof WebAssembly.Instance ||
          object instanceof WebAssembly.Global || object instanceof ArrayBuffer || isSharedBuffer(object)) {
        lanes.word(Tag.Skipped);
        return;
      }
      if (Array.isArray(object)) {
        lanes.word(Tag.Array); lanes.word(object.length);
        for (const item of object) walk(item);
        return;
      }
      if (object instanceof Map) {
        lanes.word(Tag.Map); lanes.word(object.size);
        for (const [k, item] of object) { walk(k); walk(item); }
        return;
      }
      if (object instanceof Set) {
        lanes.word(Tag.Set); lanes.word(object.size);
        for (const item of object) walk(item);
        return;
      }
      if (ArrayBuffer.isView(object)) {
        lanes.word(Tag.View);
        if (object.buffer === memoryBuffer) return; // a view of linear memory: hashed with it
        // By 32-bit words where the view is aligned (a quarter of the calls: the OS keeps columns in typed arrays),
        // the odd bytes after them one each.
        const { byteOffset, byteLength } = object, whole = (byteOffset & 3) === 0 ? byteLength >>> 2 : 0;
        lanes.word(byteLength);
        const words = new Uint32Array(object.buffer, byteOffset, whole);
        for (let i = 0; i < whole; i++) lanes.word(words[i]);
        const bytes = new Uint8Array(object.buffer, byteOffset + whole * 4, byteLength - whole * 4);
        for (let i = 0; i < bytes.length; i++) lanes.word(bytes[i]);
        return;
      }
      lanes.word(Tag.Object);
      const record = object as Record<string, unknown>;
      const ignored = this.ignored;
      for (const key of Object.keys(record)) {
        // A field holding undefined counts as no field (`x.isr = undefined` after an interrupt = never had one).
        if (ignored.has(key) || record[key] === undefined) continue;
        lanes.string(key);
        walk(record[key]);
      }
    };
    walk(machine);
    if (this.world.explorer.faultsInjected) walk(this.world.explorer);
  }
}

function isSharedBuffer(object: object): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && object instanceof SharedArrayBuffer;
}

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
