// The exhaustive search's visited set: every state key met, with what the
// search keeps of the state (what it slept, for sleep sets), in typed arrays.
//
//   slots (Int32Array, a power of two of 3-word slots, at most 70 % full):
//   ┌──────────┬──────────┬────────────┐
//   │ key high │ key low  │ data + 1   │   data + 1 = 0: the slot is empty
//   └──────────┴──────────┴────────────┘
//   key: the 64-bit state key (src/explore/state.ts, 16 hex digits) as its two
//   32-bit lanes; linear probing from the low lane. data: what the search
//   keeps per state (the offset of its sleep set in the pool, or a number of
//   the search's own: a depth, an index).
//
//   pool (Int32Array): the distinct sleep sets, each once, as
//   ┌────────┬──────┬──────┬─────┐
//   │ length │ id 0 │ id 1 │ ... │   ids: transition names, numbered in the
//   └────────┴──────┴──────┴─────┘   order met (names), in the set's order
//   offset 0 is the empty set; sets are interned (intern: an open-addressing
//   table of pool offsets by a hash of the ids), so the many states that slept
//   the same transitions (in the same order) share one entry.
//
// Bytes per state (`bytes` / `size`): 12 bytes a slot at between 35 % and 70 %
// full is 17 to 34 bytes a state, plus the pool and its intern table, which
// grow with the distinct sleep sets, not with the states. The transition
// names' dictionary (`names`) is not counted: it grows with the distinct
// events of the machine (a few hundred), not with its states.
//
// Two states share a slot only when their 64-bit keys are equal: the same
// odds as the keys themselves (n² / 2^65 for n states).

/** A visited table is full at 2^27 slots (1.5 GiB): a search that big needs shards or bitstate. */
const MAX_SLOTS = 2 ** 27;
const SLOT_WORDS = 3;

export class VisitedFull extends Error {}

/** The two 32-bit lanes of a state key (16 hex digits: StateKeys.key), high first. */
export function keyLanes(key: string): [number, number] {
  return [parseInt(key.slice(0, 8), 16) | 0, parseInt(key.slice(8, 16), 16) | 0];
}

export class VisitedTable {
  private slots = new Int32Array(1024 * SLOT_WORDS);
  private mask = 1023;
  /** Keys stored. */
  size = 0;
  // Sleep sets: the pool, its intern table (pool offset + 1, 0 = empty) and the transition names' numbers.
  private pool = new Int32Array(1024);
  private poolUsed = 1; // offset 0: the empty set (length 0)
  private intern = new Int32Array(256);
  private interned = 0;
  private readonly names = new Map<string, number>();
  private readonly nameList: string[] = [];

  /** Bytes the table takes: its slots, the sleep-set pool and the pool's intern table (typed arrays, exact). */
  get bytes(): number { return this.slots.byteLength + this.pool.byteLength + this.intern.byteLength; }

  /** The slot of `key`, or -1 when it was never added. */
  find(key: string): number {
    const [high, low] = keyLanes(key);
    const slots = this.slots, mask = this.mask;
    for (let slot = low & mask; ; slot = (slot + 1) & mask) {
      const at = slot * SLOT_WORDS;
      if (slots[at + 2] === 0) return -1;
      if (slots[at] === high && slots[at + 1] === low) return slot;
    }
  }

  /** Adds `key` (not present: find() said -1) with `data` (a non-negative 31-bit integer); returns its slot. */
  add(key: string, data: number): number {
    if ((this.size + 1) * 10 > (this.mask + 1) * 7) this.grow();
    const [high, low] = keyLanes(key);
    const slot = this.place(high, low);
    const at = slot * SLOT_WORDS;
    this.slots[at] = high; this.slots[at + 1] = low; this.slots[at + 2] = data + 1;
    this.size++;
    return slot;
  }

  /** The data of a slot (find, add). */
  data(slot: number): number { return this.slots[slot * SLOT_WORDS + 2] - 1; }
  setData(slot: number, data: number): void { this.slots[slot * SLOT_WORDS + 2] = data + 1; }

  /** A sleep set's pool offset (interned: equal sets, one offset); data() of a slot that keeps one. */
  sleepSet(transitions: Iterable<string>): number {
    const ids: number[] = [];
    for (const name of transitions) {
      let id = this.names.get(name);
      if (id === undefined) { id = this.nameList.length; this.names.set(name, id); this.nameList.push(name); }
      ids.push(id);
    }
    if (!ids.length) return 0;
    // A set: a name given twice is kept once, where it came first. The order is kept (and is part of what is
    // interned): the search explores a revisited state's awake transitions in the order its sleep set lists
    // them, and the order decides which transitions a sleep set cuts later (the transition counts).
    let unique = 0;
    for (let i = 0; i < ids.length; i++) if (ids.indexOf(ids[i]) === i) ids[unique++] = ids[i];
    ids.length = unique;
    let hash = ids.length;
    for (const id of ids) hash = Math.imul(hash ^ id, 2654435761) ^ (hash >>> 15);
    let imask = this.intern.length - 1;
    for (let i = hash & imask; ; i = (i + 1) & imask) {
      const entry = this.intern[i];
      if (entry === 0) break;
      if (this.sameSet(entry - 1, ids)) return entry - 1;
    }
    // New: append it to the pool and intern it.
    if (this.poolUsed + ids.length + 1 > this.pool.length) {
      let length = this.pool.length * 2;
      while (this.poolUsed + ids.length + 1 > length) length *= 2;
      const pool = new Int32Array(length);
      pool.set(this.pool);
      this.pool = pool;
    }
    const offset = this.poolUsed;
    this.pool[offset] = ids.length;
    this.pool.set(ids, offset + 1);
    this.poolUsed += ids.length + 1;
    if ((this.interned + 1) * 2 > this.intern.length) { this.growIntern(); imask = this.intern.length - 1; }
    for (let i = hash & imask; ; i = (i + 1) & imask) if (this.intern[i] === 0) { this.intern[i] = offset + 1; break; }
    this.interned++;
    return offset;
  }

  /** The transition names of a sleep set (a pool offset from sleepSet). */
  sleepNames(offset: number): string[] {
    const names: string[] = [];
    for (let i = 0, n = this.pool[offset]; i < n; i++) names.push(this.nameList[this.pool[offset + 1 + i]]);
    return names;
  }

  private sameSet(offset: number, ids: readonly number[]): boolean {
    if (this.pool[offset] !== ids.length) return false;
    for (let i = 0; i < ids.length; i++) if (this.pool[offset + 1 + i] !== ids[i]) return false;
    return true;
  }

  private setHash(offset: number): number {
    let hash = this.pool[offset];
    for (let i = 0, n = this.pool[offset]; i < n; i++) hash = Math.imul(hash ^ this.pool[offset + 1 + i], 2654435761) ^ (hash >>> 15);
    return hash;
  }

  private growIntern(): void {
    const old = this.intern;
    this.intern = new Int32Array(old.length * 2);
    const mask = this.intern.length - 1;
    for (const entry of old) {
      if (entry === 0) continue;
      for (let i = this.setHash(entry - 1) & mask; ; i = (i + 1) & mask) if (this.intern[i] === 0) { this.intern[i] = entry; break; }
    }
  }

  /** The first empty slot of the probe sequence of a key's low lane. */
  private place(high: number, low: number): number {
    const slots = this.slots, mask = this.mask;
    for (let slot = low & mask; ; slot = (slot + 1) & mask) {
      const at = slot * SLOT_WORDS;
      if (slots[at + 2] === 0) return slot;
      if (slots[at] === high && slots[at + 1] === low) throw new Error(`internal: visited table: key ${high >>> 0}:${low >>> 0} added twice`);
    }
  }

  private grow(): void {
    const count = (this.mask + 1) * 2;
    if (count > MAX_SLOTS) throw new VisitedFull(`the visited set is full (${this.size} states, ${MAX_SLOTS} slots): bound the search (--max-states), or split it (--shard i/n)`);
    const old = this.slots;
    this.slots = new Int32Array(count * SLOT_WORDS);
    this.mask = count - 1;
    for (let at = 0; at < old.length; at += SLOT_WORDS) {
      if (old[at + 2] === 0) continue;
      const slot = this.place(old[at], old[at + 1]) * SLOT_WORDS;
      this.slots[slot] = old[at]; this.slots[slot + 1] = old[at + 1]; this.slots[slot + 2] = old[at + 2];
    }
  }
}
