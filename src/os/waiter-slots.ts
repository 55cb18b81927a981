// The CPU waiters' host-side store: one slot of numbers per waiter, by its host id (the id the core's waiter record
// carries), for every waiter whichever path started it (src/os/waits.ts: waitOne, the short path, or startWait, the
// general one). The waiter's state (its entries still waiting, its wait blocks in the fences' min-heaps) is the
// core's (assembly/heap.ts); what is kept here is what must call back into JavaScript or name the waiter for tools.
//
//   words (u32), 8 a slot, 32 bytes (half a cache line, never two), by host id:
//   ┌──────────────┬──────────────┬────────┬───────┬─────────┬────────┐
//   │ sequence f64 │ value u64    │ record │ state │ fence   │ unused │
//   │ words 0–1    │ words 2–3    │ 4      │ 5     │ 6       │ 7 (0)  │
//   └──────────────┴──────────────┴────────┴───────┴─────────┴────────┘
//   sequence  the wait's order (tools and releases go oldest first)
//   value     the value its one fence must reach (0 for a waiter with a detail: the detail has its values)
//   record    the core's waiter record (its physical address) on its home adapter
//   state     SLOT_LIVE, SLOT_DEFERRED (its callback is the caller's, run later), SLOT_OWN_CALLBACK (its callback is
//             in the chunks, not its tag's), SLOT_ANY (wait-any), SLOT_DETAIL (its side record is in the chunks);
//             above TAG_SHIFT its tag: the index of its (label, owner, first callback) entry
//   fence     its one fence's key (src/os/fence-rows.ts: core id × 8 + adapter index, never 0); 0: a waiter with a detail
//
//   chunks (objects), OBJECTS a waiter, CHUNK_IDS waiters a chunk: its own callback (SLOT_OWN_CALLBACK), and its
//   detail (SLOT_DETAIL). A waiter whose callback is its tag's and that has no detail is its slot alone (writes no
//   chunk entry): a signal that wakes it touches that slot and no object reference.
//
// The detail (`WaiterDetail`) holds what only some waiters have: several fences and their values, a home adapter
// other than its fence's and other adapters its blocks are on, a timeout. A waiter of one fence with no timeout
// (every waiter waitOne starts, and the general path's of one fence) has none, wait-any or not (SLOT_ANY).
//
// Every slot, chunk entry and tag of a freed waiter is zeroed: a race explorer hashes them into its state key (a freed
// slot must not differ by what it held) and snapshots restore them (src/explore/snapshot.ts).

import { grownTo } from '../base/grow.js';
import type { ScheduledEvent } from '../base/scheduler.js';
import type { FenceKey } from './fence-rows.js';
import type { OsAdapter, WaiterOwner, WaitResult } from './objects.js';

/** What only some waiters have (the header): kept in the chunks, named from the slot by SLOT_DETAIL. */
export interface WaiterDetail {
  /** The wait as made: entry i is fences[i] ≥ values[i] (the core's entries index these; keys); one fence as itself. */
  readonly fences: FenceKey | FenceKey[];
  readonly values: bigint | bigint[];
  /** The adapter its core record is on (its first pending entry's). */
  readonly home: OsAdapter;
  /** The other adapters it has wait blocks on (most waiters have none); retired before `home`. */
  readonly others: OsAdapter[] | undefined;
  timeout: ScheduledEvent | undefined;
  timeoutNs: number | undefined;
}

const SLOT_WORDS = 8, RECORD_WORD = 4, STATE_WORD = 5, FENCE_WORD = 6;
const SLOT_LIVE = 1, SLOT_DEFERRED = 2, SLOT_OWN_CALLBACK = 4;
/** State bits `set` takes from its caller: wait-any, and a detail in place of the fence. */
export const SLOT_ANY = 8, SLOT_DETAIL = 16;
const TAG_SHIFT = 5;
/** Objects by host id: callback, detail at OBJECTS × (id mod CHUNK_IDS), + 1 of chunk id / CHUNK_IDS. */
const OBJECTS = 2, CHUNK_SHIFT = 11, CHUNK_IDS = 1 << CHUNK_SHIFT, CHUNK_MASK = CHUNK_IDS - 1;
/** Does the slot at word `at` keep a chunk entry? Yes if its callback is its own or it has a detail (set writes none else). */
const keepsChunkEntry = (words: Uint32Array, at: number): boolean => (words[at + STATE_WORD] & (SLOT_OWN_CALLBACK | SLOT_DETAIL)) !== 0;

/**
 * WaiterSlots' caches, under symbols (the race explorer copies and hashes what string keys hold; these are no state):
 * the tag the last waiter got (0: none), which the next waiter with the same label and owner (a caller's many waits)
 * takes without a search, and the f64 and u64 views of the slot buffer, made when the buffer is another.
 */
const LAST_TAG = Symbol('WaiterSlots.lastTag');
const SLOT_NUMBERS = Symbol('WaiterSlots.slotNumbers');
const SLOT_BIGS = Symbol('WaiterSlots.slotBigs');

/** A stack of u32 ids in a typed array doubled as needed; popped slots are zeroed (a race explorer hashes it). */
class FreeIds {
  private ids = new Uint32Array(4);
  length = 0;
  push(id: number): void {
    if (this.length === this.ids.length) this.ids = grownTo(this.ids, this.length + 1);
    this.ids[this.length++] = id;
  }
  pop(): number {
    const id = this.ids[--this.length];
    this.ids[this.length] = 0;
    return id;
  }
}

/**
 * Every CPU waiter, as a slot by host id (the header). 10⁶ waiters pending at once are 10⁶ objects fewer for the
 * garbage collector to copy than one object each.
 */
export class WaiterSlots {
  /** Grown by doubling as ids come (grownTo); starts at 4 slots: the race explorer copies and hashes it per state. */
  private words = new Uint32Array(4 * SLOT_WORDS);
  private [LAST_TAG] = 0;
  private [SLOT_NUMBERS]: Float64Array<ArrayBufferLike> = new Float64Array(this.words.buffer);
  private [SLOT_BIGS]: BigUint64Array<ArrayBufferLike> = new BigUint64Array(this.words.buffer);
  /**
   * callback, fence or detail of each host id (OBJECTS apart) that keeps them here, in chunks of CHUNK_IDS ids, each a
   * packed array (a gap is filled with undefined). One array for 10⁶ waiters grew by copies in V8's large-object space
   * (~3 × its 16 MB allocated, the dead copies kept until a major collection); a chunk is 32 KB at most and never copied once full.
   */
  private readonly chunks: unknown[][] = [];
  /**
   * The (label, owner) pairs the waiters name, by tag, each with the count of waiters naming it and the callback of
   * the waiter that made it (a freed tag is cleared and reused last-freed first): a caller's many waits share one
   * label, one owner and usually one callback, so 10⁶ waiters are one pair, not 16 MB of references. Tag 0 is never used.
   */
  private readonly tagLabels: (string | undefined)[] = [undefined];
  private readonly tagOwners: (WaiterOwner | undefined)[] = [undefined];
  private readonly tagCallbacks: (((result: WaitResult) => void) | undefined)[] = [undefined];
  private readonly tagCounts: number[] = [0];
  private readonly freeTags: number[] = [];
  /** Retired host ids, reused last-retired first (a stack of u32: a JavaScript array of 10⁶ ids was 8 MB and its copies). */
  private readonly freeIds = new FreeIds();
  /** Host ids handed out so far (a retired one is reused first): ids are below this. */
  private idsMade = 0;
  /** Waiters live. */
  live = 0;

  /** A host id for a new waiter: the last one freed, else a new one. */
  takeId(): number { return this.freeIds.length ? this.freeIds.pop() : this.idsMade++; }
  /** Gives back an id `takeId` gave whose waiter was never `set` (the core refused it). */
  returnId(id: number): void { this.freeIds.push(id); }

  /** Does host id `id` hold a live waiter? */
  has(id: number): boolean {
    const at = id * SLOT_WORDS + STATE_WORD;
    return at < this.words.length && (this.words[at] & SLOT_LIVE) !== 0;
  }

  /**
   * Waiter `id` is live: `fence` is its one fence's key and `value` its value, or, with
   * SLOT_DETAIL in `bits`, `fence` is its detail (and `value` 0n); SLOT_ANY in `bits` for a wait-any.
   */
  set(id: number, sequence: number, label: string, owner: WaiterOwner, onComplete: (result: WaitResult) => void, deferred: boolean,
      fence: FenceKey | WaiterDetail, value: bigint, record: number, bits: number): void {
    const at = id * SLOT_WORDS;
    if (at >= this.words.length) this.words = grownTo(this.words, at + SLOT_WORDS);
    const tag = this.tagOf(label, owner, onComplete);
    const own = this.tagCallbacks[tag] !== onComplete, detail = (bits & SLOT_DETAIL) !== 0;
    const words = this.words;
    this.viewsOf(words);
    this[SLOT_NUMBERS][at >>> 1] = sequence;
    this[SLOT_BIGS][(at >>> 1) + 1] = value;
    words[at + RECORD_WORD] = record;
    words[at + STATE_WORD] = (deferred ? SLOT_LIVE | SLOT_DEFERRED : SLOT_LIVE) + (own ? SLOT_OWN_CALLBACK : 0) + bits + tag * (1 << TAG_SHIFT);
    words[at + FENCE_WORD] = detail ? 0 : fence as FenceKey;
    this.live++;
    if (!own && !detail) return;
    const o = (id & CHUNK_MASK) * OBJECTS, objects = this.chunks[id >>> CHUNK_SHIFT] ??= [];
    while (objects.length < o) objects.push(undefined); // packed: no hole
    objects[o] = own ? onComplete : undefined;
    objects[o + 1] = detail ? fence : undefined;
  }

  /** The tag of (label, owner), counted once more: the last one given when it matches, else a new one made with `onComplete`. */
  private tagOf(label: string, owner: WaiterOwner, onComplete: (result: WaitResult) => void): number {
    const last = this[LAST_TAG];
    if (last !== 0 && this.tagLabels[last] === label && this.tagOwners[last] === owner) {
      this.tagCounts[last]++;
      return last;
    }
    const tag = this.freeTags.length ? this.freeTags.pop()! : this.tagLabels.length;
    this.tagLabels[tag] = label;
    this.tagOwners[tag] = owner;
    this.tagCallbacks[tag] = onComplete;
    this.tagCounts[tag] = 1;
    this[LAST_TAG] = tag;
    return tag;
  }

  private tag(id: number): number { return Math.floor(this.words[id * SLOT_WORDS + STATE_WORD] / (1 << TAG_SHIFT)); }

  /** The f64 and u64 views are of `words`' buffer from here on. */
  private viewsOf(words: Uint32Array): void {
    if (this[SLOT_NUMBERS].buffer !== words.buffer) { this[SLOT_NUMBERS] = new Float64Array(words.buffer); this[SLOT_BIGS] = new BigUint64Array(words.buffer); }
  }
  sequence(id: number): number { this.viewsOf(this.words); return this[SLOT_NUMBERS][(id * SLOT_WORDS) >>> 1]; }
  /** The value of a waiter with no detail. */
  value(id: number): bigint { this.viewsOf(this.words); return this[SLOT_BIGS][((id * SLOT_WORDS) >>> 1) + 1]; }
  record(id: number): number { return this.words[id * SLOT_WORDS + RECORD_WORD]; }
  deferred(id: number): boolean { return (this.words[id * SLOT_WORDS + STATE_WORD] & SLOT_DEFERRED) !== 0; }
  waitAny(id: number): boolean { return (this.words[id * SLOT_WORDS + STATE_WORD] & SLOT_ANY) !== 0; }
  callback(id: number): (result: WaitResult) => void {
    if ((this.words[id * SLOT_WORDS + STATE_WORD] & SLOT_OWN_CALLBACK) === 0) return this.tagCallbacks[this.tag(id)]!;
    return this.chunks[id >>> CHUNK_SHIFT][(id & CHUNK_MASK) * OBJECTS] as (result: WaitResult) => void;
  }
  /** The detail of waiter `id`, or undefined: its one fence is `fence(id)`, its value `value(id)`. */
  detail(id: number): WaiterDetail | undefined {
    if ((this.words[id * SLOT_WORDS + STATE_WORD] & SLOT_DETAIL) === 0) return undefined;
    return this.chunks[id >>> CHUNK_SHIFT][(id & CHUNK_MASK) * OBJECTS + 1] as WaiterDetail;
  }
  /** The key of the one fence of a waiter with no detail (Waits.entryFence makes its view for tools). */
  fence(id: number): FenceKey { return this.words[id * SLOT_WORDS + FENCE_WORD]; }
  label(id: number): string { return this.tagLabels[this.tag(id)]!; }
  owner(id: number): WaiterOwner { return this.tagOwners[this.tag(id)]!; }

  /** The live waiters' host ids, oldest first. */
  liveIds(): number[] {
    const ids: number[] = [];
    for (let id = 0; id < this.idsMade; id++) if (this.has(id)) ids.push(id);
    return ids.sort((x, y) => this.sequence(x) - this.sequence(y));
  }

  /**
   * Reads the slot (and the chunk entry, for a waiter that keeps one) of each waiter named in `records` (`count`
   * SatisfiedWait records of `stride` words, the host id at `waiterAt`) and returns a word made of them: satisfy calls
   * it on a batch before it finishes any, so that the batch's cache misses (slots made in arrival order, finished in
   * value order) are in flight together instead of one finish at a time.
   */
  touch(records: Uint32Array, count: number, stride: number, waiterAt: number): number {
    const words = this.words, chunks = this.chunks, length = words.length;
    let seen = 0;
    for (let i = 0, at = 0; i < count; i++, at += stride) {
      const id = records[at + waiterAt], slot = id * SLOT_WORDS;
      if (slot >= length) continue;
      seen ^= words[slot + STATE_WORD];
      if (keepsChunkEntry(words, slot)) {
        const objects = chunks[id >>> CHUNK_SHIFT];
        if (objects !== undefined && objects[(id & CHUNK_MASK) * OBJECTS] === undefined) seen ^= 1;
      }
    }
    return seen;
  }

  /** Waiter `id` is over: what it referenced is dropped, its slot zeroed and its id free. */
  clear(id: number): void {
    const tag = this.tag(id);
    if (--this.tagCounts[tag] === 0) {
      // Cleared, so that the same waiters are the same fields whatever came and went (a race explorer hashes them).
      this.tagLabels[tag] = undefined;
      this.tagOwners[tag] = undefined;
      this.tagCallbacks[tag] = undefined;
      if (tag === this.tagLabels.length - 1 && this.freeTags.length === 0) {
        this.tagLabels.length = this.tagOwners.length = this.tagCallbacks.length = this.tagCounts.length = tag;
      } else this.freeTags.push(tag);
      if (this[LAST_TAG] === tag) this[LAST_TAG] = 0;
    }
    this.freeIds.push(id);
    this.live--;
    // Zeroed too: a race explorer hashes the slots into its state key, and a freed slot must not differ by what it held.
    const at = id * SLOT_WORDS, words = this.words;
    const chunked = keepsChunkEntry(words, at);
    words[at] = 0; words[at + 1] = 0; words[at + 2] = 0; words[at + 3] = 0; words[at + 4] = 0; words[at + 5] = 0; words[at + 6] = 0;
    if (!chunked) return;
    const o = (id & CHUNK_MASK) * OBJECTS, objects = this.chunks[id >>> CHUNK_SHIFT];
    objects[o] = undefined;
    objects[o + 1] = undefined;
  }
}
