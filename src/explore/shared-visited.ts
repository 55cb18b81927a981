// The visited set the worker threads of one exhaustive search share
// (`wddm-fence explore --workers N`): a state below the split depth is
// claimed by the first worker that reaches it, and what its claimer's sleep
// set left out is explored by whichever worker reaches it next with that
// transition awake.
//
//   SharedArrayBuffer: ┌────────┬─────┬────────┬────────┬─────┬────────┐
//                      │ key 0  │ ... │ key m  │ mask 0 │ ... │ mask m │   m + 1 = a power of two
//                      └────────┴─────┴────────┴────────┴─────┴────────┘
//                       BigInt64 × (m + 1)      Int32 × (m + 1)
//   key:  a state key (src/explore/state.ts: 64 bits), 0 = empty (the key 0
//         is stored as 1: one more key shares a slot, a chance of 2^-64).
//   mask: the transitions from that state that no worker has explored yet
//         because a sleep set left them out ("slept"): bit i is the i-th of
//         the state's enabled events sorted by name (sleptMask in
//         src/explore/search.ts), bit 31 (MASK_WRITTEN) says the claimer has
//         written it.
//
//   meet(key, slept)   linear probing from the key's low bits, each slot taken
//                      with Atomics.compareExchange, so of two workers that
//                      reach one state at once one claims it; the claimer then
//                      writes what its sleep set left out.
//   narrow(slot, keep) a worker that meets a claimed state with sleep set
//                      `keep` clears the slept bits it has awake, one
//                      compareExchange, and explores exactly the bits it
//                      cleared: each slept transition is explored by one
//                      worker, once some worker reaches the state with it awake.
//
// Why this searches what one process searches: a single process with sleep
// sets and a visited set explores, on a revisit, what the first visit slept
// and this one does not, and keeps the intersection (Godefroid's correction
// for state caching, docs/EXPLORER.md "The search and its reductions"). The
// mask is that intersection, kept where every worker sees it, and narrow()
// is that revisit, whichever worker makes it.

/** Bytes of one slot: its key and its mask. */
export const SLOT_BYTES = BigInt64Array.BYTES_PER_ELEMENT + Int32Array.BYTES_PER_ELEMENT;
/** The most slots a table has (2^25: 384 MiB). */
export const MAX_SLOTS = 2 ** 25;
/** How many transitions of one state a mask can name (bit 31 is MASK_WRITTEN). */
export const MASK_TRANSITIONS = 31;
/** A mask's "written" bit: set by the claimer right after its claim; a worker that meets the state first waits for it. */
const MASK_WRITTEN = 1 << 31;
/** How long a worker waits for a claimer's mask (loads): a claimer writes it in the same call as its claim, so this is never reached unless that worker died between the two. */
const MAX_MASK_WAIT = 1 << 30;

export class SharedVisitedFull extends Error {}

export class SharedVisited {
  private readonly keys: BigInt64Array;
  private readonly masks: Int32Array;
  private readonly mask: number;

  /** A table for at most `states` keys, half full at most (a power of two, at least 1,024 slots, at most MAX_SLOTS). */
  static create(states: number): SharedArrayBuffer {
    let slots = 1024;
    while (slots < states * 2 && slots < MAX_SLOTS) slots *= 2;
    return new SharedArrayBuffer(slots * SLOT_BYTES);
  }

  constructor(readonly buffer: SharedArrayBuffer) {
    const slots = buffer.byteLength / SLOT_BYTES;
    if (!Number.isInteger(slots) || slots < 1 || (slots & (slots - 1)) !== 0) throw new Error(`a shared visited table has a power of two of ${SLOT_BYTES}-byte slots (an 8-byte key and a 4-byte mask each); this buffer is ${buffer.byteLength} bytes`);
    this.keys = new BigInt64Array(buffer, 0, slots);
    this.masks = new Int32Array(buffer, slots * BigInt64Array.BYTES_PER_ELEMENT, slots);
    this.mask = slots - 1;
  }

  /**
   * Claims `key` (16 hex digits) for this worker with the transitions its sleep set left out (`slept`, at
   * most MASK_TRANSITIONS bits): the key's slot (>= 0) when this call claimed it, or -(slot + 1) when some
   * worker had (then narrow() says what is left to explore from it).
   */
  meet(key: string, slept: number): number {
    if (slept < 0 || slept >= MASK_WRITTEN >>> 0 || !Number.isInteger(slept)) throw new RangeError(`meet(${key}, ${slept}): expected a mask of at most ${MASK_TRANSITIONS} transitions`);
    let word = BigInt.asIntN(64, BigInt('0x' + key));
    if (word === 0n) word = 1n;
    let slot = Number(BigInt.asUintN(32, word)) & this.mask;
    for (let probes = 0; probes <= this.mask; probes++) {
      const old = Atomics.compareExchange(this.keys, slot, 0n, word);
      if (old === 0n) {
        Atomics.store(this.masks, slot, slept | MASK_WRITTEN);
        return slot;
      }
      if (old === word) return -(slot + 1);
      slot = (slot + 1) & this.mask;
    }
    throw new SharedVisitedFull(`the visited table the workers share is full (${this.mask + 1} states); lower --max-states or run shards (--shard i/n)`);
  }

  /** True when this call claimed `key` first (with nothing slept); false when some worker had. */
  claim(key: string): boolean { return this.meet(key, 0) >= 0; }

  /**
   * A worker met the state in `slot` (meet's -(slot + 1)) with sleep set `keep` (a mask as meet's): the
   * transitions still slept there that `keep` has awake are cleared, and returned: this worker explores
   * them, and no other will (the next to meet the state sees them cleared).
   */
  narrow(slot: number, keep: number): number {
    for (let waited = 0; ; waited++) {
      const old = Atomics.load(this.masks, slot);
      if ((old & MASK_WRITTEN) === 0) {
        // The claimer is between its claim and its mask (one store apart).
        if (waited >= MAX_MASK_WAIT) throw new Error(`internal: the shared visited table's slot ${slot} was claimed and its mask never written (did a worker stop between the two?)`);
        continue;
      }
      const next = old & (keep | MASK_WRITTEN);
      if (next === old) return 0;
      if (Atomics.compareExchange(this.masks, slot, old, next) === old) return old & ~next;
    }
  }
}
