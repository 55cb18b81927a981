// A map from 32-bit unsigned integers to 32-bit unsigned integers in typed
// arrays (open addressing, linear probing): for tables keyed by a handle with
// one entry per fence, where a Map entry cost ~30–45 B and a slot here costs
// 9 B (at most twice the entries, so ~13–24 B an entry). Deterministic: no
// iteration order is offered.

const EMPTY = 0, FULL = 1, DELETED = 2;

export class IntMap {
  private keys = new Uint32Array(16);
  private values = new Uint32Array(16);
  private states = new Uint8Array(16);
  private count = 0;
  /** Slots FULL or DELETED (a probe passes both). */
  private used = 0;

  get size(): number { return this.count; }

  private home(key: number): number { return Math.imul(key, 0x9e37_79b1) >>> 0 & (this.keys.length - 1); }

  private find(key: number): number {
    const mask = this.keys.length - 1;
    for (let slot = this.home(key); ; slot = (slot + 1) & mask) {
      const state = this.states[slot];
      if (state === EMPTY) return -1;
      if (state === FULL && this.keys[slot] === key) return slot;
    }
  }

  get(key: number): number | undefined {
    if (!(key >= 0 && key <= 0xffff_ffff && Number.isInteger(key))) return undefined;
    const slot = this.find(key);
    return slot < 0 ? undefined : this.values[slot];
  }

  has(key: number): boolean { return this.get(key) !== undefined; }

  set(key: number, value: number): this {
    if (!Number.isInteger(key) || key < 0 || key > 0xffff_ffff || !Number.isInteger(value) || value < 0 || value > 0xffff_ffff) {
      throw new RangeError(`IntMap: ${key} → ${value} is not a pair of 32-bit unsigned integers`);
    }
    const found = this.find(key);
    if (found >= 0) { this.values[found] = value; return this; }
    if ((this.used + 1) * 2 > this.keys.length) this.rehash(this.count + 1 > this.keys.length / 4 ? this.keys.length * 2 : this.keys.length);
    const mask = this.keys.length - 1;
    let slot = this.home(key);
    while (this.states[slot] === FULL) slot = (slot + 1) & mask;
    if (this.states[slot] === EMPTY) this.used++;
    this.states[slot] = FULL;
    this.keys[slot] = key;
    this.values[slot] = value;
    this.count++;
    return this;
  }

  delete(key: number): boolean {
    if (this.get(key) === undefined) return false;
    const slot = this.find(key);
    if (slot < 0) return false;
    this.states[slot] = DELETED;
    this.count--;
    if (this.count * 8 < this.keys.length && this.keys.length > 16) this.rehash(this.keys.length / 2);
    return true;
  }

  private rehash(length: number): void {
    const { keys, values, states } = this;
    this.keys = new Uint32Array(length);
    this.values = new Uint32Array(length);
    this.states = new Uint8Array(length);
    this.count = 0;
    this.used = 0;
    for (let i = 0; i < keys.length; i++) if (states[i] === FULL) this.set(keys[i], values[i]);
  }
}
