// Flat tables of the OS's per-fence records: a process's handle table and an
// adapter's fence records by core id. Arrays indexed by a small integer the
// OS hands out in order, not Maps: a Map entry cost ~30–45 B a fence, a slot 8.
// src/os/objects.ts keeps the records; this file only the tables (generic:
// it imports nothing of the OS, only src/base/grow.ts).

import { grownTo } from '../base/grow.js';

/** What a table asks its owner about an entry kept as a row (a number in its slot) until first asked for (src/os/fence-rows.ts). */
export interface DeferredEntries<Entry> {
  /** Makes the row's object and enters it in the table in place of the number. */
  materialize(token: number): Entry;
  /** The handle a handle table's token was entered under. */
  handleOf(token: number): number;
}

/** A fence table's rows (src/os/fence-rows.ts): the store of every live fence; the table holds the views made of them. */
export interface DeferredFences<Fence> {
  /** Makes the view of row `coreFence` (and its creator handle's record) and enters it in the table. */
  materialize(coreFence: number): Fence;
  /** Is `coreFence` a live fence's row? */
  has(coreFence: number): boolean;
  /** Removes a destroyed fence's row. */
  remove(coreFence: number): void;
  /** Live rows. */
  readonly live: number;
  /** Core ids below this may be rows. */
  readonly extent: number;
}

/**
 * An adapter's fence views by core fence id: a flat array (the core's ids are small, bounded by limits.fences, and
 * reused), not a Map (an entry cost ~30–45 B a fence). values() goes in core id order. With `deferred` (every
 * adapter's: its FenceRows, the fences' one store) a live fence is a row there, and has a slot here once get() or
 * values() made its view: the view's identity is the fence's for Sets and Maps.
 */
export class FenceTable<Fence> {
  /** By core id, made at a power-of-two length (an array grown by push keeps up to half its length spare). */
  private slots: (Fence | undefined)[] = [];
  private count = 0;
  deferred: DeferredFences<Fence> | undefined = undefined;

  get size(): number { return this.deferred?.live ?? this.count; }
  /** Fences whose view is made (with `deferred`, the others are rows only). */
  get viewed(): number { return this.count; }

  get(coreFence: number): Fence | undefined {
    const slot = coreFence >= 0 && coreFence < this.slots.length ? this.slots[coreFence] : undefined;
    return slot ?? (this.deferred?.has(coreFence) ? this.deferred.materialize(coreFence) : undefined);
  }

  /** The object in `coreFence`'s slot, never making one from a row. */
  peek(coreFence: number): Fence | undefined {
    return coreFence >= 0 && coreFence < this.slots.length ? this.slots[coreFence] : undefined;
  }

  set(coreFence: number, fence: Fence): this {
    if (!Number.isInteger(coreFence) || coreFence < 0) throw new RangeError(`fence table: ${coreFence} is not a core fence id`);
    if (coreFence >= this.slots.length) {
      let length = Math.max(8, this.slots.length);
      while (length <= coreFence) length *= 2;
      const slots = new Array<Fence | undefined>(length).fill(undefined);
      for (let id = 0; id < this.slots.length; id++) slots[id] = this.slots[id];
      this.slots = slots;
    }
    if (this.slots[coreFence] === undefined) this.count++;
    this.slots[coreFence] = fence;
    return this;
  }

  /** Forgets a destroyed fence: its view (detached from the row by then) and its row. */
  delete(coreFence: number): boolean {
    const deferred = this.deferred;
    if (deferred !== undefined && deferred.has(coreFence)) deferred.remove(coreFence);
    else if (this.peek(coreFence) === undefined) return false;
    if (this.peek(coreFence) !== undefined) { this.slots[coreFence] = undefined; this.count--; }
    return true;
  }

  /** The fences in core id order (a row's view is made as it comes). */
  *values(): IterableIterator<Fence> {
    for (let id = 0; id < Math.max(this.slots.length, this.deferred?.extent ?? 0); id++) {
      const fence = this.get(id);
      if (fence !== undefined) yield fence;
    }
  }
}

/** A handle table's objects are kept in chunks of this many slots, made when an object is first entered in one. */
const CHUNK_SHIFT = 10, CHUNK_SLOTS = 1 << CHUNK_SHIFT, CHUNK_MASK = CHUNK_SLOTS - 1;
/** The tokens of a table that holds none (shared: nothing is ever written to it). */
const NO_TOKENS = new Uint32Array(0);

/**
 * A process's handle table (its sync object handles, or its NT handles): what each handle names, bounded by
 * the live handles, with the handle values issued from a sequence so a closed handle's value is not handed
 * out again until the sequence wraps (`space` values later).
 *
 *   handle = rangeStart + stride × sequence        sequence 1 … space − 1, issued in order, then again from 1
 *   slot   = sequence mod capacity                 direct-mapped: a slot holds at most one live handle
 *
 * The table is 2^k slots: an object per slot in chunks of 1024 (8 B a slot, a chunk made when an object is first
 * entered in it), and a u32 token per slot for an entry kept as a row (4 B: a table of rows only, as after creating
 * fences nothing looked up, is one typed array, which V8's young generation does not grow for while it fills; the
 * array goes while no slot holds a token; a Map entry cost ~30–45 B a handle). A lookup reads one slot and checks the entry's own handle, so a stale handle whose
 * slot holds a newer entry does not resolve. allocate() skips sequence numbers whose slot is taken (a live handle
 * with the same remainder), grows the table by doubling past half full and halves it below an eighth (when the
 * live handles' slots still differ). What was closed needs no record: a value the sequence passed that resolves
 * to nothing was closed (wasIssued), until the sequence wraps and issues it again.
 */
/**
 * Where the handle tables of one machine take their editStamps from: one count per OS, so no stamp is given twice
 * in a machine (the count is the machine's, not the process's: two machines share nothing). A table keeps it under
 * a symbol, which the race explorer's snapshots do not walk: a restore puts a table's stamp back with its entries,
 * and the count goes on from where it was, so a stamp taken before the restore is never given again.
 */
export class EditClock { count = 0; }
const CLOCK = Symbol('HandleTable.clock');

export class HandleTable<Entry extends { readonly handle: number }> {
  /**
   * A new number at every change of what the table holds (put, which every entry, row, removal and resize goes
   * through), from the machine's EditClock, so no number is given twice in a machine: while it is what it was, every handle
   * names what it named then (what a lookup's cache checks, src/os/signals.ts). A snapshot's restore puts it back
   * with what the table held; the race explorer's state key leaves it out (IGNORED_KEYS: tables that hold the
   * same carry different numbers).
   */
  editStamp = 0;
  private readonly [CLOCK]: EditClock;
  /** Objects by slot, in chunks of CHUNK_SLOTS (fewer while the table is smaller); undefined: no object there. */
  private chunks: ((Entry | undefined)[] | undefined)[] = [];
  /** Tokens by slot (an entry kept as a row of `deferred`; tokens are positive), 0: none; empty while no slot holds one. */
  private tokens = NO_TOKENS;
  /** Slots holding a token. */
  private tokenCount = 0;
  private mask = 0;
  private count = 0;
  /** The next sequence number to issue; `wrapped`: the sequence went past space − 1 at least once. */
  private next = 1;
  private wrapped = false;
  /** Shrinking is not tried again until the live count falls below this (the last try found two slots that would meet). */
  private shrinkBelow = Infinity;
  deferred: DeferredEntries<Entry> | undefined = undefined;
  /** sequenceOf's arithmetic: log2(stride) and the first offset past the range (stride × space). */
  private readonly strideShift: number;
  private readonly offsetEnd: number;

  constructor(
    /** The value of sequence number 0 (never issued). */
    private readonly rangeStart: number,
    /** Distance between consecutive handle values (NT handles are multiples of 4). */
    private readonly stride: number,
    /** Sequence numbers per wrap: the table never holds more than space − 1 handles. */
    readonly space: number,
    private readonly initialSlots = 64,
    /** The machine's clock its editStamps come from (a table of its own: a clock of its own). */
    clock: EditClock = new EditClock(),
  ) {
    this[CLOCK] = clock;
    if (!Number.isInteger(Math.log2(space)) || initialSlots > space) throw new RangeError(`handle table: space ${space} is not a power of two ≥ ${initialSlots}`);
    if (!Number.isInteger(Math.log2(stride)) || stride * space > 2 ** 31) throw new RangeError(`handle table: stride ${stride} is not a power of two with stride × space ≤ 2^31`);
    this.strideShift = Math.log2(stride);
    this.offsetEnd = stride * space;
    this.resize(initialSlots);
  }

  get size(): number { return this.count; }
  /** Slots the table holds now (a power of two: at most about 2 × the live handles, 8 × after closes). */
  get capacity(): number { return this.mask + 1; }

  /** The sequence number of `handle`, or -1 when it is not a value of this table's range. */
  private sequenceOf(handle: number): number {
    // Every CPU signal's and wait's lookup: shifts (the stride is a power of two). Shifted back, the sequence is offset
    // itself only for a whole multiple of the stride (offset < 2^31: no overflow; NaN fails the range).
    const offset = handle - this.rangeStart;
    if (!(offset > 0 && offset < this.offsetEnd)) return -1;
    const sequence = offset >>> this.strideShift;
    return (sequence << this.strideShift) === offset ? sequence : -1;
  }

  /** What slot `slot` holds: an object, a token, or undefined. */
  private entryAt(slot: number): Entry | number | undefined {
    const object = this.chunks[slot >>> CHUNK_SHIFT]?.[slot & CHUNK_MASK];
    if (object !== undefined) return object;
    const token = this.tokens[slot];
    return token === undefined || token === 0 ? undefined : token;
  }

  private put(slot: number, entry: Entry | number | undefined): void {
    this.editStamp = ++this[CLOCK].count;
    const chunk = this.chunks[slot >>> CHUNK_SHIFT];
    const token = typeof entry === 'number' ? entry : 0;
    if (typeof entry === 'object') {
      (chunk ?? (this.chunks[slot >>> CHUNK_SHIFT] = new Array<Entry | undefined>(Math.min(CHUNK_SLOTS, this.mask + 1)).fill(undefined)))[slot & CHUNK_MASK] = entry;
    } else if (chunk !== undefined) chunk[slot & CHUNK_MASK] = undefined;
    const held = this.tokens[slot] ?? 0;
    if (held === token) return;
    if (token !== 0 && this.tokens.length === 0) this.tokens = new Uint32Array(this.mask + 1);
    this.tokens[slot] = token;
    this.tokenCount += (token !== 0 ? 1 : 0) - (held !== 0 ? 1 : 0);
    // Every row made (as after a wait on each fence): the tokens' array goes until a row is entered again.
    if (this.tokenCount === 0) this.tokens = NO_TOKENS;
  }

  get(handle: number): Entry | undefined {
    const sequence = this.sequenceOf(handle);
    if (sequence < 0) return undefined;
    const slot = sequence & this.mask;
    const object = this.chunks[slot >>> CHUNK_SHIFT]?.[slot & CHUNK_MASK];
    if (object !== undefined) return object.handle === handle ? object : undefined;
    const token = this.tokens[slot];
    if (token === undefined || token === 0) return undefined;
    return this.deferred!.handleOf(token) === handle ? this.deferred!.materialize(token) : undefined;
  }

  private handleAt(entry: Entry | number): number { return typeof entry === 'number' ? this.deferred!.handleOf(entry) : entry.handle; }

  /**
   * The object in `handle`'s slot as it is, or undefined (no object there: nothing, or a row). Its own handle may be
   * another (a newer entry in the slot): the caller compares. No row is made into its object (get does that).
   */
  objectAt(handle: number): Entry | undefined {
    const sequence = this.sequenceOf(handle);
    if (sequence < 0) return undefined;
    const slot = sequence & this.mask;
    return this.chunks[slot >>> CHUNK_SHIFT]?.[slot & CHUNK_MASK];
  }

  /**
   * The token of the row `handle` names, or 0 (no row there: an object, nothing, or another handle's row). The row
   * stays a row: what a path that works on rows asks (src/os/fence-rows.ts).
   */
  rowToken(handle: number): number {
    const sequence = this.sequenceOf(handle);
    if (sequence < 0) return 0;
    const token = this.tokens[sequence & this.mask];
    return token === undefined || token === 0 || this.deferred!.handleOf(token) !== handle ? 0 : token;
  }

  /** Does `handle` name a row not made into its object yet? (It stays a row: what a refusal asks, without changing anything.) */
  isRow(handle: number): boolean {
    const sequence = this.sequenceOf(handle);
    if (sequence < 0) return false;
    const entry = this.entryAt(sequence & this.mask);
    return typeof entry === 'number' && this.deferred!.handleOf(entry) === handle;
  }

  /** Is `handle` live? (A row stays a row.) */
  has(handle: number): boolean {
    const sequence = this.sequenceOf(handle);
    if (sequence < 0) return false;
    const entry = this.entryAt(sequence & this.mask);
    return entry !== undefined && this.handleAt(entry) === handle;
  }

  /**
   * The next handle value to give out: the next sequence number whose slot is free and that `taken` does not
   * claim (handles closed but still in use elsewhere). undefined when space − 1 handles are live.
   */
  allocate(taken?: (handle: number) => boolean): number | undefined {
    if ((this.count + 1) * 2 > this.capacity && this.capacity < this.space) this.resize(this.capacity * 2);
    for (let tries = 1; tries < this.space; tries++) {
      const sequence = this.next;
      if (sequence + 1 === this.space) { this.next = 1; this.wrapped = true; } else this.next = sequence + 1;
      const handle = this.rangeStart + this.stride * sequence;
      if (this.entryAt(sequence & this.mask) === undefined && !(taken?.(handle) ?? false)) return handle;
    }
    return undefined;
  }

  /** Undoes the last allocate() for a handle that was never handed out (its value is issued again next). */
  forget(handle: number): void {
    const sequence = this.sequenceOf(handle);
    if (sequence < 0 || this.has(handle)) return;
    if ((sequence + 1 === this.space ? 1 : sequence + 1) === this.next) this.next = sequence;
  }

  /** Did the sequence hand out `handle` (since it last wrapped past it)? A value of the range that no live entry holds then was closed. */
  wasIssued(handle: number): boolean {
    const sequence = this.sequenceOf(handle);
    return sequence > 0 && (this.wrapped || sequence < this.next);
  }

  /** Enters `object` under `handle`, a value allocate() gave. */
  set(handle: number, object: Entry): this {
    const sequence = this.sequenceOf(handle);
    if (sequence < 0 || object.handle !== handle) throw new RangeError(`handle table: ${handle} is not a handle value of this table`);
    this.enter(sequence, handle, object);
    return this;
  }

  /** Enters `handle`, a value allocate() gave, as `token` (a positive u32), a row of `deferred` (whose handleOf(token) is `handle`). */
  defer(handle: number, token: number): this {
    const sequence = this.sequenceOf(handle);
    if (sequence < 0 || !(Number.isInteger(token) && token > 0 && token <= 0xffff_ffff) || this.deferred?.handleOf(token) !== handle) {
      throw new RangeError(`handle table: ${handle} is not a handle value of this table's rows`);
    }
    this.enter(sequence, handle, token);
    return this;
  }

  private enter(sequence: number, handle: number, entry: Entry | number): void {
    let held = this.entryAt(sequence & this.mask);
    // Two handles allocated before either was entered may share a slot: grow until they do not.
    while (held !== undefined && this.handleAt(held) !== handle) {
      this.resize(this.capacity * 2);
      held = this.entryAt(sequence & this.mask);
    }
    if (held === undefined) this.count++;
    this.put(sequence & this.mask, entry);
  }

  delete(handle: number): boolean {
    if (!this.has(handle)) return false;
    this.put(this.sequenceOf(handle) & this.mask, undefined);
    this.count--;
    if (this.count * 8 < this.capacity && this.capacity > this.initialSlots && this.count < this.shrinkBelow) this.shrink();
    return true;
  }

  /** The objects in slot order (handle order until the sequence wraps or skips); rows are made as they come. */
  *values(): IterableIterator<Entry> {
    for (let slot = 0; slot < this.capacity; slot++) {
      const entry = this.entryAt(slot);
      if (entry !== undefined) yield typeof entry === 'number' ? this.deferred!.materialize(entry) : entry;
    }
  }

  /** The live handle values in slot order. */
  *keys(): IterableIterator<number> {
    for (let slot = 0; slot < this.capacity; slot++) {
      const entry = this.entryAt(slot);
      if (entry !== undefined) yield this.handleAt(entry);
    }
  }

  private shrink(): void {
    const length = this.capacity / 2, mask = length - 1;
    const seen = new Uint8Array(length);
    for (let slot = 0; slot < this.capacity; slot++) {
      const entry = this.entryAt(slot);
      if (entry === undefined) continue;
      const at = this.sequenceOf(this.handleAt(entry)) & mask;
      if (seen[at]) { this.shrinkBelow = this.count / 2; return; }
      seen[at] = 1;
    }
    this.shrinkBelow = Infinity;
    this.resize(length);
  }

  /** Moves the entries to a table of `length` slots (a power of two; their slots must differ there). */
  private resize(length: number): void {
    if (length > this.space) throw new RangeError(`handle table: ${length} slots is more than the ${this.space} values`);
    const { chunks, tokens } = this, old = this.mask + 1;
    this.chunks = [];
    this.tokens = NO_TOKENS;
    this.tokenCount = 0;
    this.mask = length - 1;
    for (let slot = 0; slot < old; slot++) {
      const object = chunks[slot >>> CHUNK_SHIFT]?.[slot & CHUNK_MASK];
      const token = tokens[slot];
      const entry = object ?? (token === undefined || token === 0 ? undefined : token);
      if (entry !== undefined) this.put(this.sequenceOf(this.handleAt(entry)) & this.mask, entry);
    }
  }
}

/**
 * A process's closed handles, as errors tell them apart from ones that never existed: a value of one of its
 * tables' ranges that the table issued and that no live entry holds. Nothing is kept per closed handle (a Set
 * of them grew with every handle ever closed); `size` counts the closes.
 */
export class ClosedHandles {
  private closes = 0;
  constructor(private readonly tables: readonly HandleTable<{ readonly handle: number }>[]) {}
  /** Handles closed (and not undone). */
  get size(): number { return this.closes; }
  has(handle: number): boolean { return this.tables.some((table) => table.wasIssued(handle) && !table.has(handle)); }
  /** The process closed `handle`. */
  add(_handle: number): void { this.closes++; }
  /** Undoes add() for a handle that never reached the caller: the value counts as never made (it is issued again). */
  delete(handle: number): void {
    this.closes--;
    for (const table of this.tables) table.forget(handle);
  }
}

/**
 * The last `capacity` values added (older ones are forgotten): a ring, searched only on error paths. It
 * grows with what is added up to `capacity`, so an adapter that destroyed few fences holds few values:
 * the explorer copies and hashes every machine object per state (a 4,096-entry ring made up front doubled
 * the time to exhaust the 2×2×3×3 machine).
 */
export class RecentValues {
  private readonly ring: number[] = [];
  private added = 0;
  constructor(readonly capacity: number) {}
  add(value: number): void {
    if (this.ring.length < this.capacity) this.ring.push(value);
    else this.ring[this.added % this.capacity] = value;
    this.added++;
  }
  has(value: number): boolean { return this.ring.includes(value); }
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
    this.values = grownTo(this.values, id + 1);
    this.values[id] = value;
  }
}
