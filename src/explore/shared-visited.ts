// The visited set the worker threads of one exhaustive search share
// (`wddm-fence explore --workers N`): a state below the split depth is
// searched by the worker that claims it first, and by no other.
//
//   SharedArrayBuffer: ┌────────┬────────┬─────┬────────┐
//                      │ slot 0 │ slot 1 │ ... │ slot m │   m + 1 = a power of two
//                      └────────┴────────┴─────┴────────┘
//   slot: a state key (src/explore/state.ts: 64 bits) as a BigInt64, 0 = empty
//   (the key 0 is stored as 1: one more key shares a slot, a chance of 2^-64).
//   claim(key): linear probing from the key's low bits, each slot taken with
//   Atomics.compareExchange, so two workers that reach one state at once see
//   one of them win.
//
// Why a claimed state may be left to its claimer: the claimer expands every
// option of it (the search turns sleep sets off below the split depth when it
// claims, src/explore/search.ts), so every state reachable from it is reached
// by the claimer or claimed, and expanded, by another worker.

/** Bytes of one slot. */
export const SLOT_BYTES = BigInt64Array.BYTES_PER_ELEMENT;
/** The most slots a table has (2^25: 256 MiB). */
export const MAX_SLOTS = 2 ** 25;

export class SharedVisitedFull extends Error {}

export class SharedVisited {
  private readonly slots: BigInt64Array;
  private readonly mask: number;

  /** A table for at most `states` keys, half full at most (a power of two, at least 1,024 slots, at most MAX_SLOTS). */
  static create(states: number): SharedArrayBuffer {
    let slots = 1024;
    while (slots < states * 2 && slots < MAX_SLOTS) slots *= 2;
    return new SharedArrayBuffer(slots * SLOT_BYTES);
  }

  constructor(readonly buffer: SharedArrayBuffer) {
    const slots = buffer.byteLength / SLOT_BYTES;
    if (!Number.isInteger(slots) || slots < 1 || (slots & (slots - 1)) !== 0) throw new Error(`a shared visited table has a power of two of ${SLOT_BYTES}-byte slots; this buffer is ${buffer.byteLength} bytes`);
    this.slots = new BigInt64Array(buffer);
    this.mask = slots - 1;
  }

  /** True when this call stored `key` (16 hex digits) first; false when some worker had. */
  claim(key: string): boolean {
    let word = BigInt.asIntN(64, BigInt('0x' + key));
    if (word === 0n) word = 1n;
    let slot = Number(BigInt.asUintN(32, word)) & this.mask;
    for (let probes = 0; probes <= this.mask; probes++) {
      const old = Atomics.compareExchange(this.slots, slot, 0n, word);
      if (old === 0n) return true;
      if (old === word) return false;
      slot = (slot + 1) & this.mask;
    }
    throw new SharedVisitedFull(`the visited table the workers share is full (${this.mask + 1} states); lower --max-states or run shards (--shard i/n)`);
  }
}
