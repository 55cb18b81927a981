// The walks of a machine's host objects: one writes the words the state key
// hashes (src/explore/state.ts), the other keeps what a snapshot restores
// (src/explore/snapshot.ts). One HostWalk per machine does both, from state
// to state, and remembers what it learnt of each object between walks.
// Why this file is long: both walks read what the walker learns of an object
// (Known: its kind, shape, number, whether a constant), and the key's words
// need their checked digests (Shape, stringDigest) beside them; apart, each
// part would export its internals to the others.
//
//   write(roots)     every object the key covers (KeyRules), depth-first from
//                    the roots in field order, as canonical words (below)
//   keepAll(roots)   every object reachable, kept as below (Runner.save: only
//                    for a state the search will come back to, about one in
//                    2.8 keys; the key of a revisit keeps nothing)
//
// What it knows of an object (Known, one WeakMap lookup per object met): its
// kind (by its prototype: object, array, Map, Set, typed array, skipped), the
// number it has in this walk (so a second meeting writes the number), its
// field names' shape, and whether it is a constant.
//
// Constants: the objects of the machine as built that are deeply frozen
// (Object.freeze on them and on all they reach, data fields only, no Map, Set
// or typed array, which freezing cannot make constant): the OS's options,
// each adapter's caps, the timing, an engine's event arguments (shared by all
// its events), the firmware state, the driver's options, queue records and
// stretch reporter, the OS's callback table and caps, the OS modules' hooks,
// the segment and aperture descriptors (frozen where they are made: the
// census in docs/PERFORMANCE.md says which objects are constant by design).
// learnConstants numbers them once, in the order a walk meets them in
// the machine as built (so every process that builds the machine numbers them
// alike and their keys agree); after that, each is one word wherever it is met
// (its number, so its identity is still in the key), never walked again, and
// never kept (it cannot change). "Enforced, not assumed": a write to one
// throws (ES modules are strict), and an object frozen only at the top, or
// frozen later, is walked as any other.
//
// What is kept, for each object reached (once however often it is reached),
// to be put back into the same object (restoreSnapshot), as entries of one
// array per snapshot (HostRecord: the object, its field names or its kind and
// count, its values; the names are one list per object while they stay the
// same strings, shared by the snapshots):
//   ┌────────────┬─────────────────────────────────────────────────────────┐
//   │ Object     │ its own field names (Object.keys) and values, in order  │
//   │ Array      │ its items                                               │
//   │ Map, Set   │ its entries / items in insertion order                  │
//   │ Bytes      │ a typed array's bytes, copied into one buffer per       │
//   │            │ snapshot (views of linear memory: not kept here, the    │
//   │            │ snapshot copies linear memory)                          │
//   └────────────┴─────────────────────────────────────────────────────────┘
// Not kept: constants, frozen records (see frozenRecord: nothing can write to
// one), the trace (snapshots need it off), WebAssembly objects
// and the cores' frozen exports, ArrayBuffers (reached through their views),
// functions (their code; the model keeps no state in closure variables). A
// generator's position or a WeakMap's entries cannot be kept: keepAll throws
// SnapshotUnsupported when it meets one.
//
// The key's words (each a 32-bit integer; the walk's shape is in them, so the
// words of two different states differ):
//   undefined, true, false, null, a function, a symbol  one Tag each
//   a number     Tag.Number n for a 32-bit integer (-0 as 0), else Tag.Double
//                and the two words of its IEEE bits (every NaN as one)
//   a string     Tag.String and its 64-bit digest (stringDigest, checked)
//   a bigint     from 0 to 2^64 - 1 (a fence value): Tag.BigInt, its low and
//                high 32 bits; any other (negative, or 2^64 and past):
//                Tag.OtherBigInt and the 64-bit digest of its hex digits
//                (before, -1n and 2^64 - 1 wrote the same words)
//   a constant   Tag.Constant and its number among the constants
//   an object met before in this walk: Tag.Seen and its number (numbered in
//                the order met, those the key skips included, constants not)
//   an object the key skips (KeyRules.skip; the scheduler, seeded generators,
//                trace, WebAssembly objects): Tag.Skipped
//   an array     Tag.Array, its length, its items
//   a Map / Set  Tag.Map / Tag.Set, its size, its entries / items in order
//   a typed array  Tag.View; unless a view of linear memory (hashed with it):
//                its byte length, its 32-bit words where aligned, then its
//                odd bytes one each
//   an object    Tag.Object, the 64-bit digest of the list of its field names
//                the key reads (listDigest: own string keys in order, minus
//                fields that hold undefined and names in KeyRules.ignored),
//                then those fields' values in that order
// Field-name lists are digested once per object shape (Shape: the names of
// Object.keys, compared string by string with the object's shape last time)
// and per set of fields present (a mask), and every digest is checked against
// the names it was made from, so two lists with one digest stop the search
// instead of making two states one. A container makes room for its words
// before writing them (WORDS_PER_VALUE per item), so no word is bounds-checked.
//
// No array is made per Map, Set, typed array or bigint (forEach; views of a
// typed array's bytes made once, Known.whole and Known.odd; a BigUint64Array),
// only Object.keys and Object.values per object: per key on 2 × 2 × 2 × 2,
// about 262 objects numbered and 2,320 words (docs/PERFORMANCE.md, the census).

import { Random } from '../base/rng.js';
import { Scheduler } from '../base/scheduler.js';
import { Trace } from '../base/trace.js';

/** A machine holds something a snapshot cannot restore. */
export class SnapshotUnsupported extends Error {
  constructor(message: string) { super(message); this.name = 'SnapshotUnsupported'; }
}

/** What the state key leaves out of the walk (StateKeys): objects, and field names whose values no step reads. */
export interface KeyRules {
  readonly skip: ReadonlySet<object>;
  readonly ignored: ReadonlySet<string>;
}

/** How the walk treats an object, decided once per prototype (every instance of a class is the same kind); Constant: see Known. */
export const enum Kind { Object, Array, Map, Set, Bytes, Skipped, KeptOnly, Generator, Unlistable, Constant }

function kindOf(value: object): Kind {
  if (value instanceof Trace || value instanceof WebAssembly.Memory || value instanceof WebAssembly.Module ||
      value instanceof WebAssembly.Instance || value instanceof WebAssembly.Global || value instanceof ArrayBuffer ||
      (typeof SharedArrayBuffer !== 'undefined' && value instanceof SharedArrayBuffer)) return Kind.Skipped;
  // Kept for a snapshot, left out of the key: the scheduler's pending events are hashed as a multiset
  // instead (StateKeys), and a seeded generator chooses nothing in an explored machine (jitter is 0).
  if (value instanceof Scheduler || value instanceof Random) return Kind.KeptOnly;
  if (Object.prototype.toString.call(value) === '[object Generator]') return Kind.Generator;
  if (Array.isArray(value)) return Kind.Array;
  if (value instanceof Map) return Kind.Map;
  if (value instanceof Set) return Kind.Set;
  if (ArrayBuffer.isView(value)) return Kind.Bytes;
  if (value instanceof WeakMap || value instanceof WeakSet || value instanceof Promise) return Kind.Unlistable;
  return Kind.Object;
}
/** Per prototype: its kind (kindOf; a pure function's memo: nothing of a machine's). */
const kinds = new Map<object | null, Kind>();
function kindOfObject(object: object): Kind {
  const prototype = Object.getPrototypeOf(object) as object | null;
  let kind = kinds.get(prototype);
  if (kind === undefined) { kind = kindOf(object); kinds.set(prototype, kind); }
  // (An object made with an array's prototype that is no array is walked as the object it is.)
  return kind === Kind.Array && !Array.isArray(object) ? kindOf(object) : kind;
}

/**
 * What a walk knows of one object, learned the first time it meets it and kept from walk to walk (its kind
 * too: what an object is made as, array, Map, Set or typed array, cannot change, and the model never swaps
 * an object's prototype; a frozen object's cannot be swapped at all).
 * A Constant is an object of the machine as built that is deeply frozen (Object.freeze on it and on every
 * object it reaches: plain objects and arrays whose fields are data, never a Map, Set or typed array, which
 * freezing cannot make constant); its words are its number among the constants (HostWalk.learnConstants),
 * so it is neither walked nor kept per state, and its identity is still in the key wherever it is met.
 */
class Known {
  /** The write (HostWalk.walks counts write and keepAll) that last met it, and its number in that write. */
  walk = 0;
  number = 0;
  /** The keepAll that last met it. */
  keptIn = 0;
  /** Its field names' shape when last walked (objects), and the digest of the names read for the fields present. */
  shape: Shape | undefined = undefined;
  present = -1;
  list: Digest = EMPTY_LIST;
  /** A typed array's bytes as a Uint8Array (itself when it is one): what a snapshot copies and puts back. */
  bytes: Uint8Array | undefined = undefined;
  /** Its field names when a keepAll last kept it (objects): one list shared by the snapshots while they stay the same strings. */
  keptNames: readonly string[] | undefined = undefined;
  /**
   * `skipped`: the key writes Tag.Skipped for it (KeyRules.skip, and the kinds Skipped and KeptOnly);
   * `notKept`: a snapshot has nothing of it to keep (the kind Skipped, a Constant, a frozen record, the cores' frozen exports).
   */
  constructor(readonly kind: Kind, readonly skipped: boolean, readonly notKept: boolean, readonly constant: number) {}
  /** A frozen record (frozenRecord): written by its content wherever met, never numbered. */
  record = false;
  /** A typed array: is it a view of linear memory (its buffer is its buffer for life: asked once)? */
  ofMemory: boolean | undefined = undefined;
  /** A typed array's bytes as the key reads them (HostWalk.bytesInto): its whole 32-bit words, then its odd bytes. */
  whole: Int32Array | undefined = undefined;
  odd: Uint8Array | undefined = undefined;
}

/**
 * Is `object` a frozen record: a plain object, frozen when the walk first meets it, whose own fields are all data
 * holding primitives (a wait's result, shared by every waiter woken at one time: Waits' Deliveries)? Such an
 * object is a value: nothing can write to it, and no step tells two equal ones apart, so the key writes its
 * content wherever it is met and never its identity. Whether two fields hold one record or two equal ones
 * depends on the order things happened in (a cache that is not state hands them out), so writing identity would
 * split one state into several by its history: a search that went back by snapshot and one that rebuilt the
 * machine counted different states (test/explore-state-key.test.ts).
 */
function frozenRecord(object: object, kind: Kind): boolean {
  if (kind !== Kind.Object || !Object.isFrozen(object)) return false;
  const prototype = Object.getPrototypeOf(object) as object | null;
  if (prototype !== Object.prototype && prototype !== null) return false;
  return everyDataField(object, (item) => (item === null || typeof item !== 'object') && typeof item !== 'function');
}

/** Are all of `object`'s own enumerable fields data (a getter could answer differently each time), each value passing `test`? */
function everyDataField(object: object, test: (item: unknown) => boolean): boolean {
  const descriptors = Object.getOwnPropertyDescriptors(object) as Record<string, PropertyDescriptor>;
  for (const name of Object.keys(object)) {
    const descriptor = descriptors[name];
    if (!('value' in descriptor) || !test(descriptor.value)) return false;
  }
  return true;
}

/**
 * Is `object` deeply frozen (see Known)? Its own enumerable fields must be data (a getter could answer
 * differently each time), and every object among their values deeply frozen too (`visiting`: those being
 * checked, taken as frozen while they are, for a cycle).
 */
function deepFrozen(object: object, visiting: Set<object>): boolean {
  const kind = kindOfObject(object);
  if ((kind !== Kind.Object && kind !== Kind.Array) || !Object.isFrozen(object)) return false;
  if (visiting.has(object)) return true;
  visiting.add(object);
  return everyDataField(object, (item) => item === null || typeof item !== 'object' || deepFrozen(item, visiting));
}

/**
 * What a walk keeps for a snapshot, in two arrays: `entries`, each object kept after the one before, as
 *
 *   ┌────────┬──────────────────────────────┬───────────────────────────────────────┐
 *   │ object │ its field names (an Object)  │ its field values, in that order       │
 *   │ object │ its Kind, then n (the rest)  │ its n values: an array's items, a     │
 *   │        │                              │ Map's keys and values (key, value ...)│
 *   │        │                              │ in order, a Set's items in order, a   │
 *   │        │                              │ typed array's [its bytes as a         │
 *   │        │                              │ Uint8Array, their offset in `bytes`]  │
 *   └────────┴──────────────────────────────┴───────────────────────────────────────┘
 *
 * and `bytes`, the typed arrays' bytes. An object's field names are one list while they stay the same
 * strings (Known.keptNames), shared by the snapshots that kept them: per object a snapshot holds no array
 * of its own.
 */
export interface HostRecord {
  readonly entries: unknown[];
  readonly bytes: Uint8Array;
}

// Tags that keep the walk's shape in the key's words (a value is never mistaken for another kind).
const enum Tag { Undefined = 1, True, False, Number, Double, BigInt, String, Function, Symbol, Null, Seen, Skipped, Array, Map, Set, View, Object, Constant, OtherBigInt }

/** 2^64: a bigint from 0 to 2^64 - 1 is two words, any other the digest of its hex digits. */
const TWO_TO_64 = 1n << 64n;
/** Which 32-bit word of a 64-bit element is its low half, and which its high (the platform's byte order). */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const LOW = LITTLE_ENDIAN ? 0 : 1, HIGH = 1 - LOW;

/** The most words one value writes in its container's words (a tag and two words: a double, a string, a bigint). */
const WORDS_PER_VALUE = 3;

/** One walk at a time of one machine's host objects (see the header); reused from state to state. */
export class HostWalk {
  /** The key's words of the last write: words[0, length). */
  words = new Int32Array(4096);
  length = 0;
  /**
   * What keepAll is keeping: the record's entries (the snapshot's own array), and the typed arrays' bytes,
   * bytes[0, bytesKept) (scratch, copied out at the end).
   */
  private entries: unknown[] = [];
  private bytes = new Uint8Array(4096);
  private bytesKept = 0;
  /** What the walk knows of each object it met (Known): one lookup per object reached. */
  private readonly known = new WeakMap<object, Known>();
  /** Writes and keepAlls so far: the current one's number (an object whose Known.walk or keptIn is this was met in it). */
  private walks = 0;
  /** Objects numbered in this write so far. */
  private count = 0;
  /** Constants numbered so far, and whether the walk is learning them (learnConstants). */
  private constants = 0;
  private learning = false;
  /** A Map's entry's words (its key's, then its value's) and a Set's item's, for forEach (no array per Map or Set). */
  private readonly entryValue = (item: unknown, key: unknown): void => { this.value(key); this.value(item); };
  private readonly itemValue = (item: unknown): void => { this.value(item); };
  private readonly float = new Float64Array(1);
  private readonly floatWords = new Int32Array(this.float.buffer);
  private readonly big = new BigUint64Array(1);
  private readonly bigWords = new Int32Array(this.big.buffer);

  /**
   * `rules`: what the key leaves out (undefined: a walk that only keeps); `memoryBuffer`: linear memory, whose
   * views are hashed and copied with it; `frozen`: objects a snapshot does not keep (the cores' frozen
   * exports: code and constant globals).
   */
  constructor(private readonly rules: KeyRules | undefined, private readonly memoryBuffer: ArrayBufferLike, private readonly frozen: ReadonlySet<object>) {}

  /**
   * Numbers the deeply frozen objects (Known) the key reaches from `roots` in the machine as it is now, in the
   * order a walk meets them, each with all it reaches: every process that builds the machine numbers them
   * alike, so keys agree across processes. Called once, before any walk, on the machine as built; an object
   * frozen later, or first reached later, is walked as any other.
   */
  learnConstants(roots: readonly object[]): void {
    if (this.walks !== 0) throw new Error('internal: HostWalk.learnConstants after a walk: constants are numbered in the machine as built');
    this.learning = true;
    try { this.write(roots); } finally { this.learning = false; }
  }

  /** Writes the key's words of `roots` and what they reach, in order: words[0, length). */
  write(roots: readonly object[]): void {
    if (!this.rules) throw new Error('internal: HostWalk.write without KeyRules (a walk made to keep only)');
    this.length = 0;
    this.walks++;
    this.count = 0;
    for (const root of roots) { this.room(WORDS_PER_VALUE); this.value(root); }
  }

  /** Keeps what a snapshot restores of `roots` and every object they reach (restoreSnapshot). */
  keepAll(roots: readonly object[]): HostRecord {
    this.walks++;
    const entries: unknown[] = this.entries = [];
    this.bytesKept = 0;
    for (const root of roots) this.keep(root);
    return { entries, bytes: this.bytes.slice(0, this.bytesKept) };
  }

  /** Makes room for `n` more words (a container makes room for its own words, WORDS_PER_VALUE per item, before writing them). */
  private room(n: number): void {
    if (this.length + n <= this.words.length) return;
    const grown = new Int32Array(Math.max(this.words.length * 2, this.length + n));
    grown.set(this.words.subarray(0, this.length));
    this.words = grown;
  }

  /** What the walk knows of `object`, learned at the first meeting (in learnConstants, a deeply frozen object's whole reach at once). */
  private knownOf(object: object): Known {
    const known = this.known.get(object);
    if (known !== undefined) return known;
    if (this.learning && this.rules && !this.rules.skip.has(object) && deepFrozen(object, new Set())) {
      this.numberConstants(object);
      return this.known.get(object)!;
    }
    const kind = kindOfObject(object);
    const skipped = kind === Kind.Skipped || kind === Kind.KeptOnly || (this.rules?.skip.has(object) ?? false);
    // A frozen record cannot change either: a snapshot keeps the fields that hold it, never the record.
    const record = !skipped && frozenRecord(object, kind);
    const learned = new Known(kind, skipped, kind === Kind.Skipped || record || this.frozen.has(object), -1);
    learned.record = record;
    this.known.set(object, learned);
    return learned;
  }
  /** Numbers a deeply frozen object and what it reaches, depth-first in field order (learnConstants). */
  private numberConstants(object: object): void {
    if (this.known.has(object)) return;
    this.known.set(object, new Known(Kind.Constant, false, true, this.constants++));
    for (const item of Object.values(object)) if (item !== null && typeof item === 'object') this.numberConstants(item);
  }

  /** Writes a value's words (its container made room for them). */
  private value(value: unknown): void {
    const words = this.words;
    switch (typeof value) {
      case 'undefined': words[this.length++] = Tag.Undefined; return;
      case 'boolean': words[this.length++] = value ? Tag.True : Tag.False; return;
      case 'number':
        if ((value | 0) === value) { words[this.length++] = Tag.Number; words[this.length++] = value; return; }  // -0 as 0
        this.float[0] = value === value ? value : NaN;
        words[this.length++] = Tag.Double; words[this.length++] = this.floatWords[0]; words[this.length++] = this.floatWords[1];
        return;
      case 'string': { const d = stringDigest(value); words[this.length++] = Tag.String; words[this.length++] = d[0]; words[this.length++] = d[1]; return; }
      case 'bigint': {
        // From 0 to 2^64 - 1 (a fence value): its low and high 32-bit words, read through a BigUint64Array
        // (no bigint made); any other (negative, or 2^64 and past): the checked digest of its hex digits.
        if (value >= 0n && value < TWO_TO_64) {
          this.big[0] = value;
          words[this.length++] = Tag.BigInt; words[this.length++] = this.bigWords[LOW]; words[this.length++] = this.bigWords[HIGH];
        } else {
          const d = stringDigest(value.toString(16));
          words[this.length++] = Tag.OtherBigInt; words[this.length++] = d[0]; words[this.length++] = d[1];
        }
        return;
      }
      case 'function': words[this.length++] = Tag.Function; return;
      case 'symbol': words[this.length++] = Tag.Symbol; return;
    }
    if (value === null) { words[this.length++] = Tag.Null; return; }
    const object = value as object;
    const known = this.knownOf(object);
    if (known.record) { this.fields(object, known); return; }
    if (known.walk === this.walks) { words[this.length++] = Tag.Seen; words[this.length++] = known.number; return; }
    if (known.kind === Kind.Constant) { words[this.length++] = Tag.Constant; words[this.length++] = known.constant; return; }
    known.walk = this.walks;
    known.number = this.count++;
    if (known.skipped) { words[this.length++] = Tag.Skipped; return; }
    switch (known.kind) {
      case Kind.Array: {
        const array = object as unknown[];
        this.room(2 + WORDS_PER_VALUE * array.length);
        this.words[this.length++] = Tag.Array; this.words[this.length++] = array.length;
        for (let i = 0; i < array.length; i++) this.value(array[i]);
        return;
      }
      case Kind.Map: {
        const map = object as Map<unknown, unknown>;
        this.room(2 + WORDS_PER_VALUE * 2 * map.size);
        this.words[this.length++] = Tag.Map; this.words[this.length++] = map.size;
        if (map.size !== 0) map.forEach(this.entryValue);
        return;
      }
      case Kind.Set: {
        const set = object as Set<unknown>;
        this.room(2 + WORDS_PER_VALUE * set.size);
        this.words[this.length++] = Tag.Set; this.words[this.length++] = set.size;
        if (set.size !== 0) set.forEach(this.itemValue);
        return;
      }
      case Kind.Bytes: {
        const view = object as ArrayBufferView;
        if (this.ofMemory(view, known)) { words[this.length++] = Tag.View; return; } // hashed and copied with memory
        this.room(2 + view.byteLength);
        this.words[this.length++] = Tag.View; this.words[this.length++] = view.byteLength;
        this.bytesInto(view, known);
        return;
      }
    }
    // (A generator or a WeakMap, which keepAll refuses: a search that replays hashes its own fields, none.)
    this.fields(object, known);
  }

  /** Writes an object's words: Tag.Object, the digest of the list of field names the key reads, their values. */
  private fields(object: object, known: Known): void {
    const keys = Object.keys(object);
    const values = Object.values(object);
    this.room(3 + WORDS_PER_VALUE * values.length);
    this.words[this.length++] = Tag.Object;
    if (keys.length === 0) { this.words[this.length++] = EMPTY_LIST[0]; this.words[this.length++] = EMPTY_LIST[1]; return; }
    let shape = known.shape;
    if (shape === undefined || shape.keys.length !== keys.length || !sameStrings(shape.keys, keys)) {
      shape = known.shape = shapeOf(keys, this.rules!.ignored);
      known.present = -1;
    }
    // The fields the key reads: present (not undefined: the model reads a field's value, never whether it
    // exists) and not ignored; their list's digest, then their values.
    let present = shape.read;
    const bits = shape.bits;
    for (let i = 0; i < values.length; i++) if (values[i] === undefined) present -= bits[i];
    if (present !== known.present || shape.keys.length > 53) { known.present = present; known.list = shape.lists.get(present) ?? shape.listOf(present, values); }
    this.words[this.length++] = known.list[0]; this.words[this.length++] = known.list[1];
    const ignored = shape.ignored;
    for (let i = 0; i < values.length; i++) {
      const item = values[i];
      if (item === undefined) continue;
      if (!ignored[i]) this.value(item);
    }
  }

  /**
   * Keeps an object and what it reaches (keepAll): its entry (HostRecord), then, depth-first in the order of
   * its values, the objects among them.
   */
  private keep(value: unknown): void {
    if (value === null || typeof value !== 'object') return;
    const known = this.knownOf(value);
    if (known.keptIn === this.walks) return;
    known.keptIn = this.walks;
    if (known.notKept) return;
    if (known.kind === Kind.Bytes && this.ofMemory(value as ArrayBufferView, known)) return; // a view of linear memory: copied with it
    this.add(value);
    let start: number;
    switch (known.kind) {
      case Kind.Array: {
        const array = value as unknown[];
        this.add(Kind.Array); this.add(array.length);
        start = this.entries.length;
        for (let i = 0; i < array.length; i++) this.add(array[i]);
        break;
      }
      case Kind.Map: {
        const map = value as Map<unknown, unknown>;
        this.add(Kind.Map); this.add(2 * map.size);
        start = this.entries.length;
        for (const [k, item] of map) { this.add(k); this.add(item); }
        break;
      }
      case Kind.Set: {
        const set = value as Set<unknown>;
        this.add(Kind.Set); this.add(set.size);
        start = this.entries.length;
        for (const item of set) this.add(item);
        break;
      }
      case Kind.Bytes: {
        const view = value as ArrayBufferView;
        let bytes = known.bytes;
        if (bytes === undefined || bytes.byteLength !== view.byteLength) bytes = known.bytes = view instanceof Uint8Array ? view : new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
        if (this.bytesKept + bytes.length > this.bytes.length) {
          const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.bytesKept + bytes.length));
          grown.set(this.bytes.subarray(0, this.bytesKept));
          this.bytes = grown;
        }
        this.bytes.set(bytes, this.bytesKept);
        this.add(Kind.Bytes); this.add(2); this.add(bytes); this.add(this.bytesKept);
        this.bytesKept += bytes.length;
        return;
      }
      case Kind.Generator: case Kind.Unlistable: unsupported(value, known.kind);
      // falls through: a plain object (or a KeptOnly one: the scheduler, a seeded generator)
      default: {
        const keys = Object.keys(value);
        let names = known.keptNames;
        if (names === undefined || names.length !== keys.length || !sameStrings(names, keys)) names = known.keptNames = keys;
        this.add(names);
        start = this.entries.length;
        const values = Object.values(value);
        for (let i = 0; i < values.length; i++) this.add(values[i]);
      }
    }
    for (let i = start, end = this.entries.length; i < end; i++) this.keep(this.entries[i]);
  }

  /** Is `view` a view of linear memory (a view's buffer is its buffer for life: asked once per object)? */
  private ofMemory(view: ArrayBufferView, known: Known): boolean {
    if (known.ofMemory === undefined) known.ofMemory = view.buffer === this.memoryBuffer;
    return known.ofMemory;
  }

  /** Adds an entry to the record (keep). */
  private add(entry: unknown): void { this.entries.push(entry); }

  /**
   * A typed array's bytes as words (its container made room): its 32-bit words where the view is aligned
   * (the OS keeps columns in Uint32Arrays: their elements are the words; other views' words are their
   * bytes little-endian, read through an Int32Array on a little-endian platform, the only kind the
   * explorer runs on in practice; elsewhere their bytes are written one each), then its odd bytes one each.
   */
  private bytesInto(view: ArrayBufferView, known: Known): void {
    let whole = known.whole, odd = known.odd;
    // The two views over its bytes, made at the first write and again when its length changed (a resized or detached buffer).
    if (whole === undefined || odd === undefined || whole.byteLength + odd.byteLength !== view.byteLength) {
      const count = view instanceof Uint32Array || view instanceof Int32Array || ((view.byteOffset & 3) === 0 && LITTLE_ENDIAN) ? view.byteLength >>> 2 : 0;
      whole = known.whole = count === 0 ? new Int32Array(0) : new Int32Array(view.buffer, view.byteOffset, count);
      odd = known.odd = new Uint8Array(view.buffer, view.byteOffset + 4 * count, view.byteLength - 4 * count);
    }
    const words = this.words;
    for (let i = 0; i < whole.length; i++) words[this.length++] = whole[i];
    for (let i = 0; i < odd.length; i++) words[this.length++] = odd[i];
  }
}

function unsupported(object: object, kind: Kind): never {
  if (kind === Kind.Generator) throw new SnapshotUnsupported('the machine holds a generator (a CPU thread written as function*): its position cannot be kept; explore it by replaying from the start');
  throw new SnapshotUnsupported(`the machine holds a ${object.constructor.name}, whose contents a snapshot cannot list`);
}

/**
 * An object shape: its field names in order (Object.keys), which of them the key ignores, and the digests of
 * the lists of names it reads, by which fields are present (field i counts 2^i, for up to 53 fields; a
 * bigger shape digests its list at each object).
 */
class Shape {
  readonly ignored: boolean[];
  /** 2^i for field i when the key reads it (not ignored), else 0. */
  readonly bits: number[];
  /** The sum of bits: every field read present. */
  readonly read: number;
  readonly lists = new Map<number, Digest>();
  constructor(readonly keys: readonly string[], readonly ignoredNames: ReadonlySet<string>) {
    this.ignored = keys.map((k) => ignoredNames.has(k));
    const exact = keys.length <= 53;
    this.bits = this.ignored.map((ignored, i) => (ignored || !exact ? 0 : 2 ** i));
    this.read = this.bits.reduce((sum, bit) => sum + bit, 0);
  }
  /** The digest of the names read: those not ignored whose values are not undefined (`present` says which). */
  listOf(present: number, values: readonly unknown[]): Digest {
    const names: string[] = [];
    for (let i = 0; i < this.keys.length; i++) if (!this.ignored[i] && values[i] !== undefined) names.push(this.keys[i]);
    const digest = stringDigest(`\u0000fields\u0000${names.join('\u0000')}`);
    if (this.keys.length <= 53) this.lists.set(present, digest);
    return digest;
  }
}

/** By first field name, the shapes met most recently (at most 64 each: many classes' first field is `os`); per ignored-name set (a machine's KeyRules). */
const shapeCache = new WeakMap<ReadonlySet<string>, Map<string, Shape[]>>();
function shapeOf(keys: readonly string[], ignored: ReadonlySet<string>): Shape {
  let byFirst = shapeCache.get(ignored);
  if (byFirst === undefined) { byFirst = new Map(); shapeCache.set(ignored, byFirst); }
  let known = byFirst.get(keys[0]);
  if (known === undefined) { known = []; byFirst.set(keys[0], known); }
  for (let s = 0; s < known.length; s++) {
    const candidate = known[s].keys;
    if (candidate.length === keys.length && sameStrings(candidate, keys)) return known[s];
  }
  const shape = new Shape(keys, ignored);
  known.unshift(shape);
  if (known.length > 64) known.pop();
  return shape;
}

/** Are two lists of field names the same strings (Object.keys gives internalized strings: mostly one pointer compare each)? */
function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A 64-bit digest as two 32-bit words. */
export type Digest = readonly [number, number];

/** Every string's digest so far, and the strings of each digest (a pure function's memo: nothing of a machine's). */
const digests = new Map<string, Digest>();
const owners = new Map<string, string>();
const EMPTY_LIST = stringDigest('\u0000fields\u0000');

/**
 * A string's 64-bit digest: two lanes of a hash of its characters (the same in every process, so shards and
 * workers agree on keys). Two strings with one digest would make two different states hash alike, so every
 * digest is checked against the string it was first made from (a 64-bit clash among a few thousand strings:
 * about 10^-12; it stops the search, naming both).
 */
export function stringDigest(s: string): Digest {
  const known = digests.get(s);
  if (known !== undefined) return known;
  let h1 = 0xdeadbeef | 0, h2 = 0x41c6ce57;
  const word = (x: number): void => { h1 = mix1(h1, x); h2 = mix2(h2, x); };
  word(s.length | 0x4000_0000);
  for (let i = 0; i < s.length; i++) word(s.charCodeAt(i));
  const d1 = fmix(h1 ^ fmix(h2)), d2 = fmix(h2 ^ Math.imul(d1, 0x9e3779b1));
  const digest: Digest = [d2, d1];
  const name = `${d2}:${d1}`;
  const owner = owners.get(name);
  if (owner !== undefined && owner !== s) throw new Error(`internal: the state key's digests of "${owner}" and "${s}" are equal (${name}); the key cannot tell them apart`);
  owners.set(name, s);
  digests.set(s, digest);
  return digest;
}

/**
 * Lane 1 takes a word as MurmurHash3's 32-bit body does, lane 2 as xxHash32's round: each scrambles the
 * word by multiplications and rotations before it meets the lane, and carries of an addition mix the
 * lane, so differences in two words do not cancel. (A multiply-only mix, h = (h ^ x) × C, keeps a
 * difference in a word's top bit in the lane's top bit alone: test/explore-state-key.test.ts.)
 */
export function mix1(h: number, x: number): number {
  let k = Math.imul(x, 0xcc9e2d51);
  k = Math.imul((k << 15) | (k >>> 17), 0x1b873593);
  h ^= k;
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}
export function mix2(h: number, x: number): number {
  h = (h + Math.imul(x, 0x85ebca77)) | 0;
  h = (h << 13) | (h >>> 19);
  return Math.imul(h, 0x9e3779b1);
}

/** MurmurHash3's 32-bit finalizer (every input bit reaches every output bit). */
export function fmix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}
