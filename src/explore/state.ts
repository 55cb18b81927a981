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
//
// How it is fed (the same information as a word-by-word hash of all of it,
// at a fraction of the cost: issue 31):
//   - memory sparsely: each non-zero word as (its word index, its value), in
//     order, zeros skipped four at a time. The covered ranges are fixed for a
//     machine, so the pairs determine every word (a zero is a word not listed).
//     Linear memory is mostly zeros (477 of 49,152 words mid-search on 2
//     engines × 2 fences), so this reads memory once and mixes ~1 % of it;
//   - a field name as a 64-bit digest of its characters (two words) instead of
//     its characters: distinct names with one digest would be two fields the
//     key cannot tell apart, so every digest is checked against the names
//     already given it and a clash stops the search (nameDigest). The digest
//     depends on the name only, so every process (shards, workers) agrees;
//   - the walk remembers the field-name lists it met and their digests
//     (Shape, by first name) and reuses them when an object's Object.keys are
//     the same strings in the same order (a pointer compare each), and
//     remembers how it treats each prototype (kindOf: skipped, array, Map, Set,
//     typed array, object), decided by the same tests as before.
// None of these drops anything from the key: test/explore-state-key.test.ts
// plants a difference of each kind (a memory word set or moved, a write-buffer
// word, a field only the driver writes, a field renamed or reordered, a log
// index where the logs wake waiters) and checks the key sees it.

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

/**
 * Lane 1 takes a word as MurmurHash3's 32-bit body does, lane 2 as xxHash32's round: each scrambles the
 * word by multiplications and rotations before it meets the lane, and carries of an addition mix the
 * lane, so differences in two words do not cancel. (The multiply-only mix used before, h = (h ^ x) × C,
 * keeps a difference in a word's top bit in the lane's top bit alone, so two states that differ in the
 * top bit of two words had one key: test/explore-state-key.test.ts.)
 */
function mix1(h: number, x: number): number {
  let k = Math.imul(x, 0xcc9e2d51);
  k = Math.imul((k << 15) | (k >>> 17), 0x1b873593);
  h ^= k;
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}
function mix2(h: number, x: number): number {
  h = (h + Math.imul(x, 0x85ebca77)) | 0;
  h = (h << 13) | (h >>> 19);
  return Math.imul(h, 0x9e3779b1);
}

/** Two 32-bit lanes fed word by word (mix1, mix2), finished to 16 hex digits. */
class Lanes {
  h1 = WORD_SEED_1;
  h2 = WORD_SEED_2;
  word(x: number): void {
    this.h1 = mix1(this.h1, x);
    this.h2 = mix2(this.h2, x);
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
    // MurmurHash3's finalizer on each lane, then each lane into the other.
    const h1 = fmix(this.h1 ^ fmix(this.h2)), h2 = fmix(this.h2 ^ Math.imul(h1, 0x9e3779b1));
    return (h2 >>> 0).toString(16).padStart(8, '0') + (h1 >>> 0).toString(16).padStart(8, '0');
  }
}

/** MurmurHash3's 32-bit finalizer (every input bit reaches every output bit). */
function fmix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
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
  /** The walk's kind of each prototype met (kindOf), and each field name's digest (nameDigest). */
  private readonly kinds = new Map<object | null, Tag>();
  private readonly names = new Map<string, NameDigest>();
  /** By first field name, the field-name lists of the objects walked last (at most 8 each) and their digests. */
  private readonly shapes = new Map<string, Shape[]>();
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
    // The core's exports, as the OS and as the GPU see them: code, and constants (frozen WebAssembly objects).
    for (const adapter of machine.adapters) { this.skip.add(adapter.core); this.skip.add(adapter.hardware.core); this.skip.add(adapter.hardware.layout); }
  }

  /** The visited-set key of the current state. */
  key(): string {
    const lanes = new Lanes();
    this.memoryInto(lanes);
    this.eventsInto(lanes);
    this.hostInto(lanes);
    return lanes.finish();
  }

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

  /** Only linear memory (tests, diagnostics). */
  memoryKey(): string { const lanes = new Lanes(); this.memoryInto(lanes); return lanes.finish(); }
  /** Only the host side: pending events and the object walk (tests, diagnostics). */
  hostKey(): string { const lanes = new Lanes(); this.eventsInto(lanes); this.hostInto(lanes); return lanes.finish(); }

  private memoryInto(lanes: Lanes): void {
    const words = this.words;
    let h1 = lanes.h1, h2 = lanes.h2;
    const ranges = this.ranges;
    // Sparse: each non-zero word with its index (the ranges are fixed, so the pairs say every word; linear
    // memory is mostly zeros: 477 of 49,152 words on a 2-engine machine mid-search).
    for (let r = 0; r < ranges.length; r += 2) {
      for (let i = ranges[r], end = ranges[r + 1]; i < end;) {
        // Four zero words at once (the common case), else one word.
        if (i + 4 <= end && (words[i] | words[i + 1] | words[i + 2] | words[i + 3]) === 0) { i += 4; continue; }
        const x = words[i];
        if (x !== 0) {
          h1 = mix1(mix1(h1, i), x);
          h2 = mix2(mix2(h2, i), x);
        }
        i++;
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
    const kinds = this.kinds;
    const names = this.names;
    const shapes = this.shapes;
    let h1 = lanes.h1, h2 = lanes.h2;
    // The mix of Lanes.word, inlined: this loop is the key's hot path (a few thousand fields per state).
    const word = (x: number): void => { h1 = mix1(h1, x); h2 = mix2(h2, x); };
    const string = (s: string): void => { word(s.length | 0x4000_0000); for (let i = 0; i < s.length; i++) word(s.charCodeAt(i)); };
    const number = (n: number): void => {
      if ((n | 0) === n) { word(n); return; }  // -0 as 0, as Lanes.number
      string(String(n));
    };
    const walk = (value: unknown): void => {
      switch (typeof value) {
        case 'undefined': word(Tag.Undefined); return;
        case 'boolean': word(value ? Tag.True : Tag.False); return;
        case 'number': word(Tag.Number); number(value); return;
        case 'bigint':
          word(Tag.BigInt);
          word(Number(BigInt.asUintN(32, value)));
          word(Number(BigInt.asUintN(32, value >> 32n)));
          if (value >> 64n !== 0n && value >> 64n !== -1n) string(value.toString(16));
          return;
        case 'string': word(Tag.String); string(value); return;
        case 'function': word(Tag.Function); return;
        case 'symbol': word(Tag.Symbol); return;
      }
      if (value === null) { word(Tag.Null); return; }
      const object = value as object;
      const earlier = seen.get(object);
      if (earlier !== undefined) { word(Tag.Seen); word(earlier); return; }
      seen.set(object, seen.size);
      if (skip.has(object)) { word(Tag.Skipped); return; }
      const prototype = Object.getPrototypeOf(object) as object | null;
      let kind = kinds.get(prototype);
      if (kind === undefined) { kind = kindOf(object); kinds.set(prototype, kind); }
      // (An object made with an array's prototype that is no array is walked as the object it is.)
      if (kind === Tag.Array && !Array.isArray(object)) kind = kindOf(object);
      switch (kind) {
        case Tag.Skipped: word(Tag.Skipped); return;
        case Tag.Array: {
          const array = object as unknown[];
          word(Tag.Array); word(array.length);
          for (let i = 0; i < array.length; i++) walk(array[i]);
          return;
        }
        case Tag.Map:
          word(Tag.Map); word((object as Map<unknown, unknown>).size);
          for (const [k, item] of object as Map<unknown, unknown>) { walk(k); walk(item); }
          return;
        case Tag.Set:
          word(Tag.Set); word((object as Set<unknown>).size);
          for (const item of object as Set<unknown>) walk(item);
          return;
        case Tag.View: {
          word(Tag.View);
          const view = object as ArrayBufferView;
          if (view.buffer === memoryBuffer) return; // a view of linear memory: hashed with it
          // By 32-bit words where the view is aligned (the OS keeps columns in typed arrays), the odd bytes after them one each.
          const { byteOffset, byteLength } = view, whole = (byteOffset & 3) === 0 ? byteLength >>> 2 : 0;
          word(byteLength);
          const words = new Uint32Array(view.buffer, byteOffset, whole);
          for (let i = 0; i < whole; i++) word(words[i]);
          const bytes = new Uint8Array(view.buffer, byteOffset + whole * 4, byteLength - whole * 4);
          for (let i = 0; i < bytes.length; i++) word(bytes[i]);
          return;
        }
      }
      word(Tag.Object);
      const keys = Object.keys(object);
      if (keys.length === 0) return;
      const values = Object.values(object);
      // The digests of its field names: those of a list met before when its keys are the same strings in the
      // same order (instances of a class, objects made by one literal), else looked up by name.
      let known = shapes.get(keys[0]);
      if (known === undefined) { known = []; shapes.set(keys[0], known); }
      let shape: Shape | undefined;
      for (let s = 0; s < known.length; s++) {
        const candidate = known[s];
        if (candidate.keys.length === keys.length && sameStrings(candidate.keys, keys)) { shape = candidate; break; }
      }
      if (shape === undefined) {
        const digests: NameDigest[] = [];
        for (const key of keys) {
          let name = names.get(key);
          if (name === undefined) { name = this.nameDigest(key); names.set(key, name); }
          digests.push(name);
        }
        shape = { keys, digests };
        // The lists met most recently first, a few per first field name.
        known.unshift(shape);
        if (known.length > 8) known.pop();
      }
      const digests = shape.digests;
      for (let i = 0; i < keys.length; i++) {
        const item = values[i];
        // A field holding undefined counts as no field (`x.isr = undefined` after an interrupt = never had one).
        if (item === undefined) continue;
        const name = digests[i];
        if (name === IGNORED_NAME) continue;
        // The name's 64-bit digest (nameDigest: distinct names have distinct digests, checked), in two words.
        word(name[0]); word(name[1]);
        walk(item);
      }
    };
    walk(machine);
    if (this.world.explorer.faultsInjected) walk(this.world.explorer);
    lanes.h1 = h1; lanes.h2 = h2;
  }

  /**
   * A field name's digest: two 32-bit words of a hash of its characters (the same in every process, so
   * shards and workers agree on keys), or IGNORED_NAME for a key the walk leaves out. Two names with one
   * digest would make two different objects hash alike, so every digest is checked against the names that
   * have it (a 64-bit clash among a few hundred names: about 10^-15; it stops the search, naming both).
   */
  private nameDigest(key: string): NameDigest {
    if (this.ignored.has(key)) return IGNORED_NAME;
    const lanes = new Lanes();
    lanes.string(key);
    const digest = lanes.finish();
    const owner = nameOwners.get(digest);
    if (owner !== undefined && owner !== key) throw new Error(`internal: the state key's digests of field names "${owner}" and "${key}" are equal (${digest}); the key cannot tell them apart`);
    nameOwners.set(digest, key);
    return [parseInt(digest.slice(0, 8), 16) | 0, parseInt(digest.slice(8), 16) | 0];
  }
}

/** A field name's digest (two words), or IGNORED_NAME. */
type NameDigest = readonly [number, number] | typeof IGNORED_NAME;
/** An object's own field names, in order, and their digests. */
interface Shape { readonly keys: readonly string[]; readonly digests: readonly NameDigest[] }

/** A field name the walk leaves out (IGNORED_KEYS, and the log reader's when the logs are abstracted). */
const IGNORED_NAME = 0;
/** Every field name's digest so far, and its name (a pure function's memo: nothing of a machine's). */
const nameOwners = new Map<string, string>();

/** Are two lists of field names the same strings (Object.keys gives internalized strings: mostly one pointer compare each)? */
function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** How the walk treats an object, decided once per prototype (every instance of a class is the same kind). */
function kindOf(object: object): Tag {
  if (object instanceof Random || object instanceof Trace || object instanceof Scheduler ||
      object instanceof WebAssembly.Memory || object instanceof WebAssembly.Module || object instanceof WebAssembly.Instance ||
      object instanceof WebAssembly.Global || object instanceof ArrayBuffer || isSharedBuffer(object)) return Tag.Skipped;
  if (Array.isArray(object)) return Tag.Array;
  if (object instanceof Map) return Tag.Map;
  if (object instanceof Set) return Tag.Set;
  if (ArrayBuffer.isView(object)) return Tag.View;
  return Tag.Object;
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
