// Flat tables of the OS's per-fence records: a process's handle table and an
// adapter's fence records by core id. Arrays indexed by a small integer the
// OS hands out in order, not Maps: a Map entry cost ~30–45 B a fence, a slot 8.
// src/os/objects.ts keeps the records; this file only the tables (generic:
// it imports nothing).

/**
 * An adapter's live fence records by core fence id: a flat array (the core's ids are small, bounded by
 * limits.fences, and reused), not a Map (an entry cost ~30–45 B a fence). values() goes in core id order.
 */
export class FenceTable<Fence> {
  private readonly slots: (Fence | undefined)[] = [];
  private count = 0;

  get size(): number { return this.count; }

  get(coreFence: number): Fence | undefined {
    return coreFence >= 0 && coreFence < this.slots.length ? this.slots[coreFence] : undefined;
  }

  set(coreFence: number, fence: Fence): this {
    if (!Number.isInteger(coreFence) || coreFence < 0) throw new RangeError(`fence table: ${coreFence} is not a core fence id`);
    while (this.slots.length < coreFence) this.slots.push(undefined);
    if (this.slots[coreFence] === undefined) this.count++;
    this.slots[coreFence] = fence;
    return this;
  }

  delete(coreFence: number): boolean {
    if (this.get(coreFence) === undefined) return false;
    this.slots[coreFence] = undefined;
    this.count--;
    return true;
  }

  *values(): IterableIterator<Fence> {
    for (const fence of this.slots) if (fence !== undefined) yield fence;
  }
}

/**
 * A process's handle table: what each handle names, in a flat array indexed by the handle's sequence number
 * (handles are made in order by Process.allocHandle; a Map entry cost ~30–45 B a handle, a slot costs 8).
 * A closed handle leaves an empty slot (its number is never reused; Process.retired remembers it).
 */
export class HandleTable<Entry> {
  private readonly slots: (Entry | undefined)[] = [];
  private count = 0;
  constructor(private readonly base: number) {}

  get size(): number { return this.count; }

  private index(handle: number): number {
    const index = handle - this.base;
    return Number.isInteger(index) && index >= 0 && index < this.slots.length ? index : -1;
  }

  get(handle: number): Entry | undefined {
    const index = this.index(handle);
    return index < 0 ? undefined : this.slots[index];
  }

  has(handle: number): boolean { return this.get(handle) !== undefined; }

  /** Enters `object` under `handle`, a handle of this process (Process.allocHandle). */
  set(handle: number, object: Entry): this {
    const index = handle - this.base;
    if (!Number.isInteger(index) || index < 0 || index > this.slots.length + 0x10_0000) {
      throw new RangeError(`handle table: ${handle} is not a handle this process made`);
    }
    while (this.slots.length < index) this.slots.push(undefined);
    if (this.slots[index] === undefined) this.count++;
    this.slots[index] = object;
    return this;
  }

  delete(handle: number): boolean {
    const index = this.index(handle);
    if (index < 0 || this.slots[index] === undefined) return false;
    this.slots[index] = undefined;
    this.count--;
    return true;
  }

  /** The objects in handle order. */
  *values(): IterableIterator<Entry> {
    for (const object of this.slots) if (object !== undefined) yield object;
  }
}

/**
 * A 64-bit value per core fence id (an adapter's fences' kernel CurrentValue VAs): a BigUint64Array grown
 * by doubling. Reading one costs less than deriving it (a BigInt add, ~50 ns) and 8 B a fence where a
 * stored BigInt costs ~32.
 */
export class ValueTable {
  private values = new BigUint64Array(64);

  get(id: number): bigint { return this.values[id]; }

  set(id: number, value: bigint): void {
    if (id >= this.values.length) {
      let length = this.values.length;
      while (length <= id) length *= 2;
      const grown = new BigUint64Array(length);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[id] = value;
  }
}
