// Bitstate ("supertrace") visited set: for machines too big to store.
//
// Instead of keeping each visited state's key (and, for sleep sets, what it
// slept), the search keeps an array of m bits. A state's 64-bit key (two
// 32-bit lanes, src/explore/state.ts) picks k bit positions by double
// hashing, position_i = (h1 + i * h2) mod m (Kirsch and Mitzenmacher); the
// state counts as visited when all k bits are already set. Memory is m / 8
// bytes whatever the number of states: m / (8 n) bytes per state.
//
// What it costs: a state whose k bits were all set by others is taken for
// visited and its subtree is not searched (an omission; never a false
// violation: every violation reported is on a path really taken). After n
// states the chance that the next new state is omitted is about
//     (1 - e^(-k n / m))^k,
// and the expected number of omissions over the search is the sum of that
// over n (omissionEstimate). A search with omissions may miss a violation, so
// a bitstate verdict of "no violation" is a strong hint, not a proof; the
// exact visited set (the default) stays the proof.

import { keyLanes } from './visited.js';

/** Default number of hash positions per state (SPIN's default is 3). */
export const BITSTATE_DEFAULT_HASHES = 3;

export class BitstateVisited {
  private readonly bits: Uint32Array;
  /** Bits set so far, and distinct states inserted (new ones). */
  setBits = 0;
  inserted = 0;
  /** Expected omissions so far: the sum of the false-visited probability at each insertion. */
  expectedOmissions = 0;

  constructor(readonly sizeBits: number, readonly hashes: number = BITSTATE_DEFAULT_HASHES) {
    if (!Number.isSafeInteger(sizeBits) || sizeBits < 64 || sizeBits > 2 ** 32) throw new Error(`bitstate size ${sizeBits} bits: expected an integer from 64 to 2^32 (512 MiB): a bit position is a 32-bit number`);
    if (!Number.isSafeInteger(hashes) || hashes < 1 || hashes > 16) throw new Error(`bitstate hashes ${hashes}: expected an integer from 1 to 16`);
    this.bits = new Uint32Array(Math.ceil(sizeBits / 32));
  }

  /** Bytes the bit array takes. */
  get bytes(): number { return this.bits.byteLength; }

  /**
   * Mark the state with this key (16 hex digits, StateKeys.key) as visited.
   * Returns true when it already counted as visited (all its bits were set).
   */
  testAndSet(key: string): boolean {
    const [high, low] = keyLanes(key);
    const h1 = low >>> 0;
    // An odd step so that the k positions differ whenever m is a power of two.
    const h2 = (high | 1) >>> 0;
    const m = this.sizeBits;
    let all = true;
    let position = h1 % m;
    const step = h2 % m;
    for (let i = 0; i < this.hashes; i++) {
      const word = position >>> 5, bit = 1 << (position & 31);
      if ((this.bits[word] & bit) === 0) { all = false; this.bits[word] |= bit; this.setBits++; }
      position += step;
      if (position >= m) position -= m;
    }
    if (!all) {
      this.inserted++;
      this.expectedOmissions += this.omissionProbability();
    }
    return all;
  }

  /** The chance that a new state now would be taken for visited: (share of bits set)^k. */
  omissionProbability(): number { return (this.setBits / this.sizeBits) ** this.hashes; }
}

/** Expected omissions when n states go into m bits with k hashes: the sum over i < n of (1 - e^(-k i / m))^k. */
export function omissionEstimate(states: number, sizeBits: number, hashes: number = BITSTATE_DEFAULT_HASHES): number {
  let sum = 0;
  for (let i = 0; i < states; i++) sum += (1 - Math.exp(-hashes * i / sizeBits)) ** hashes;
  return sum;
}
