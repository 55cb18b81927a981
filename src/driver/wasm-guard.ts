// The store guard of a WebAssembly driver module: every store the module makes is checked before it
// happens, so a C driver cannot write the core's records, another driver's region or anything else of
// the machine's memory that is not its own (docs/DRIVERS.md, "Drivers in C").
//
//   a store of `bytes` at addr + offset (i32.store, i64.atomic.rmw.add, memory.fill, …) may land
//     1. in the driver's region            [region_start, region_start + region_size)   its globals, pool, stack, arguments
//     2. in its adapter's staging area     [stage_start, stage_start + stage_size)   the out buffer, GpuQueuePushStaged's commands
//     3. in a live fence's CurrentValue    the 8-byte word at addr + offset (rounded down to 8) is a CurrentValue
//        word of this adapter (the core's fenceAtCurrentValue says so): what DxgkDdiCreateNativeFence gave it
//   anything else: wddm_guard.violation(addr, offset, bytes) throws, before the store: the driver stops there
//
// How: guardModule(bytes) rewrites the module's code. Each store becomes
//
//   local.set $value ; local.tee $address                 the operands, kept
//   global.get $region_start ; i32.sub                    (addr − start) as u32: huge when addr < start
//   global.get $region_size ; i32.const offset+bytes ; i32.sub
//   i32.gt_u ; if                                           not in the region: the same for the staging area
//     local.get $address ; global.get $stage_start ; i32.sub ; global.get $stage_size ; i32.const offset+bytes ; i32.sub
//     i32.gt_u ; if  local.get $address ; i32.const offset ; i32.const bytes ; call $slow ; end
//   end
//   local.get $address ; local.get $value ; <the store>
//
// the fast path for a store into the region or the staging area (every store a correct driver makes but its
// CurrentValue writes: its stack, globals and pool, the commands it stages), and $slow, a function the rewrite
// adds, for the rest (1, 2 and 3 in 64-bit arithmetic; then the violation). A store whose offset + bytes
// exceeds FAST_PATH_MAX_END and the bulk operations always take $slow. The module gains four imported immutable globals and two imported functions (module "wddm_guard"),
// so every later function and global index moves up and is renumbered wherever it is named (calls,
// ref.func, global.get/set, exports, the start function, element segments, the name section).
//
// What it refuses (WasmGuardError, naming what): a module that is not WebAssembly, instructions it does
// not decode (SIMD, exceptions, multiple memories), an active data segment (it would be written at
// instantiation, unchecked: a position-independent module initializes its data in its start function,
// through the checked memory.init).
//
// Why this file is long: it is one pass over the binary format. Reading a section and writing its rewrite
// share the reader, the writer and the index shifts, and the instruction decoder must know every opcode
// to find the stores among them; split, each half would declare them again.

/** The rewrite refused the module: `message` says what and why. */
export class WasmGuardError extends Error {
  constructor(message: string) { super(message); this.name = 'WasmGuardError'; }
}

/** The imports the guard adds (module "wddm_guard"). */
export const GUARD_MODULE = 'wddm_guard';
export const GUARD_IMPORTS = {
  regionStart: 'region_start', regionSize: 'region_size', stageStart: 'stage_start', stageSize: 'stage_size',
  currentValueFence: 'current_value_fence', violation: 'violation',
} as const;
/** The name the added function carries in the name section (stack traces). */
const SLOW_PATH_NAME = 'wddm_guard.check_store';
/** Stores with offset + bytes up to this take the fast path (the region and the staging area are each at least this large). */
export const FAST_PATH_MAX_END = 256;

const I32 = 0x7f, I64 = 0x7e, F32 = 0x7d, F64 = 0x7c;
const SECTION = { custom: 0, type: 1, import: 2, function: 3, table: 4, memory: 5, global: 6, export: 7, start: 8, element: 9, code: 10, data: 11, dataCount: 12, tag: 13 } as const;

// ───────────────────────────── reading ─────────────────────────────

class Reader {
  at: number;
  constructor(readonly bytes: Uint8Array, at = 0, readonly end = bytes.length) { this.at = at; }
  get done(): boolean { return this.at >= this.end; }
  byte(): number {
    if (this.at >= this.end) throw new WasmGuardError('the module ends in the middle of a section');
    return this.bytes[this.at++];
  }
  u32(): number {
    let result = 0, shift = 0, b: number;
    do {
      b = this.byte();
      if (shift === 28 && b > 0x0f) throw new WasmGuardError('an unsigned LEB128 number overflows 32 bits');
      result += (b & 0x7f) * 2 ** shift;
      shift += 7;
    } while (b & 0x80);
    return result;
  }
  /** A signed LEB128 of up to `bits` bits, skipped (its bytes are copied as they are). */
  skipSigned(): void { while (this.byte() & 0x80) { /* continuation */ } }
  name(): string {
    const length = this.u32();
    const text = new TextDecoder().decode(this.bytes.subarray(this.at, this.at + length));
    this.at += length;
    return text;
  }
  slice(from: number): Uint8Array { return this.bytes.subarray(from, this.at); }
}

class Writer {
  private chunks: number[] = [];
  byte(b: number): this { this.chunks.push(b & 0xff); return this; }
  bytes(list: ArrayLike<number>): this { for (let i = 0; i < list.length; i++) this.chunks.push(list[i]); return this; }
  u32(value: number): this {
    let v = value >>> 0;
    do { let b = v & 0x7f; v >>>= 7; if (v) b |= 0x80; this.chunks.push(b); } while (v);
    return this;
  }
  i32(value: number): this {
    let v = value | 0;
    for (;;) {
      const b = v & 0x7f;
      v >>= 7;
      if ((v === 0 && (b & 0x40) === 0) || (v === -1 && (b & 0x40) !== 0)) { this.chunks.push(b); return this; }
      this.chunks.push(b | 0x80);
    }
  }
  name(text: string): this { const encoded = new TextEncoder().encode(text); return this.u32(encoded.length).bytes(encoded); }
  get length(): number { return this.chunks.length; }
  toBytes(): Uint8Array { return Uint8Array.from(this.chunks); }
}

interface Section { id: number; start: number; end: number; name?: string }

function sectionsOf(bytes: Uint8Array): Section[] {
  if (bytes.length < 8 || bytes[0] !== 0x00 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) {
    throw new WasmGuardError('it is not a WebAssembly module (no \\0asm header)');
  }
  if (bytes[4] !== 1 || bytes[5] !== 0 || bytes[6] !== 0 || bytes[7] !== 0) throw new WasmGuardError('it is a WebAssembly binary of another version than 1');
  const r = new Reader(bytes, 8);
  const sections: Section[] = [];
  while (!r.done) {
    const id = r.byte();
    const size = r.u32();
    const start = r.at;
    if (start + size > bytes.length) throw new WasmGuardError(`section ${id} runs past the end of the module`);
    const section: Section = { id, start, end: start + size };
    if (id === SECTION.custom) section.name = new Reader(bytes, start, start + size).name();
    sections.push(section);
    r.at = start + size;
  }
  return sections;
}

/** A module's imports, by kind (what the loader checks and the rewrite renumbers from). */
export interface ImportEntry { module: string; name: string; kind: 'function' | 'table' | 'memory' | 'global'; type?: number; mutable?: boolean; valueType?: number; shared?: boolean }

/** What the loader needs of a module before instrumenting it. */
export interface ModuleFacts {
  imports: ImportEntry[];
  exports: { name: string; kind: number; index: number }[];
  /** dylink.0's memory size and alignment (log2), table size: a position-independent module's needs. */
  dylink?: { memorySize: number; memoryAlignment: number; tableSize: number; tableAlignment: number; needed: string[] };
  /** Active data segments (absolute placement): refused. */
  activeDataSegments: number;
  definesMemory: boolean;
}

function readImports(bytes: Uint8Array, section: Section | undefined): ImportEntry[] {
  if (!section) return [];
  const r = new Reader(bytes, section.start, section.end);
  const imports: ImportEntry[] = [];
  for (let n = r.u32(); n > 0; n--) {
    const module = r.name(), name = r.name();
    const kind = r.byte();
    if (kind === 0) imports.push({ module, name, kind: 'function', type: r.u32() });
    else if (kind === 1) { r.byte(); const flags = r.u32(); r.u32(); if (flags & 1) r.u32(); imports.push({ module, name, kind: 'table' }); }
    else if (kind === 2) { const flags = r.u32(); r.u32(); if (flags & 1) r.u32(); imports.push({ module, name, kind: 'memory', shared: (flags & 2) !== 0 }); }
    else if (kind === 3) { const valueType = r.byte(); const mutable = r.byte() === 1; imports.push({ module, name, kind: 'global', valueType, mutable }); }
    else throw new WasmGuardError(`import ${module}.${name} is of kind ${kind}, which a driver module may not import`);
  }
  return imports;
}

/** Reads what the loader checks: imports, exports, dylink.0, data segments. */
export function moduleFacts(bytes: Uint8Array): ModuleFacts {
  const sections = sectionsOf(bytes);
  const find = (id: number) => sections.find((s) => s.id === id);
  const imports = readImports(bytes, find(SECTION.import));
  const exports: ModuleFacts['exports'] = [];
  const exportSection = find(SECTION.export);
  if (exportSection) {
    const r = new Reader(bytes, exportSection.start, exportSection.end);
    for (let n = r.u32(); n > 0; n--) { const name = r.name(); const kind = r.byte(); exports.push({ name, kind, index: r.u32() }); }
  }
  let dylink: ModuleFacts['dylink'];
  const dylinkSection = sections.find((s) => s.id === SECTION.custom && s.name === 'dylink.0');
  if (dylinkSection) {
    const r = new Reader(bytes, dylinkSection.start, dylinkSection.end);
    r.name();
    dylink = { memorySize: 0, memoryAlignment: 0, tableSize: 0, tableAlignment: 0, needed: [] };
    while (!r.done) {
      const type = r.byte();
      const size = r.u32();
      const end = r.at + size;
      if (type === 1) { dylink.memorySize = r.u32(); dylink.memoryAlignment = r.u32(); dylink.tableSize = r.u32(); dylink.tableAlignment = r.u32(); }
      else if (type === 2) for (let n = r.u32(); n > 0; n--) dylink.needed.push(r.name());
      r.at = end;
    }
  }
  let activeDataSegments = 0;
  const data = find(SECTION.data);
  if (data) {
    const r = new Reader(bytes, data.start, data.end);
    for (let n = r.u32(); n > 0; n--) {
      const flags = r.u32();
      if (flags === 2) r.u32();
      if (flags !== 1) { activeDataSegments++; skipConstantExpression(r); }
      const size = r.u32();
      r.at += size;
    }
  }
  return { imports, exports, dylink, activeDataSegments, definesMemory: !!find(SECTION.memory) };
}

function skipConstantExpression(r: Reader): void {
  for (;;) {
    const op = r.byte();
    if (op === 0x0b) return;
    if (op === 0x41 || op === 0x42) r.skipSigned();
    else if (op === 0x43) r.at += 4;
    else if (op === 0x44) r.at += 8;
    else if (op === 0x23 || op === 0xd2) r.u32();
    else if (op === 0xd0) r.byte();
    else if (op === 0x6a || op === 0x6b || op === 0x6c || op === 0x7c || op === 0x7d || op === 0x7e) { /* extended constant arithmetic */ }
    else throw new WasmGuardError(`a constant expression uses opcode 0x${op.toString(16)}`);
  }
}

// ───────────────────────────── the rewrite ─────────────────────────────

/** Index shifts: imports added before the defined functions and globals. */
interface Shift { functionsImported: number; globalsImported: number; addedFunctions: number; addedGlobals: number }
const func = (s: Shift, index: number) => (index >= s.functionsImported ? index + s.addedFunctions : index);
const glob = (s: Shift, index: number) => (index >= s.globalsImported ? index + s.addedGlobals : index);

/** Copies a constant expression, renumbering global.get and ref.func. */
function copyConstantExpression(r: Reader, w: Writer, s: Shift): void {
  for (;;) {
    const op = r.byte();
    w.byte(op);
    if (op === 0x0b) return;
    if (op === 0x41 || op === 0x42) { const from = r.at; r.skipSigned(); w.bytes(r.slice(from)); }
    else if (op === 0x43) { w.bytes(r.bytes.subarray(r.at, r.at + 4)); r.at += 4; }
    else if (op === 0x44) { w.bytes(r.bytes.subarray(r.at, r.at + 8)); r.at += 8; }
    else if (op === 0x23) w.u32(glob(s, r.u32()));
    else if (op === 0xd2) w.u32(func(s, r.u32()));
    else if (op === 0xd0) w.byte(r.byte());
    else if (op === 0x6a || op === 0x6b || op === 0x6c || op === 0x7c || op === 0x7d || op === 0x7e) { /* extended constant arithmetic */ }
    else throw new WasmGuardError(`a constant expression uses opcode 0x${op.toString(16)}`);
  }
}

/** Where a store's operands go while its address is checked: the locals the rewrite adds to each function. */
interface Temps { address: number; i32: number; i32b: number; i64: number; i64b: number; f32: number; f64: number; length: number }
const TEMP_TYPES = [I32, I32, I32, I64, I64, F32, F64, I32] as const; // address, i32, i32b, i64, i64b, f32, f64, length

interface GuardIndices { regionStart: number; regionSize: number; stageStart: number; stageSize: number; slow: number }

/** The bytes a store of each opcode writes, and its value's type. */
const PLAIN_STORES: Record<number, [number, number]> = {
  0x36: [4, I32], 0x37: [8, I64], 0x38: [4, F32], 0x39: [8, F64], 0x3a: [1, I32], 0x3b: [2, I32], 0x3c: [1, I64], 0x3d: [2, I64], 0x3e: [4, I64],
};
/** The atomic stores (0xFE prefix). */
const ATOMIC_STORES: Record<number, [number, number]> = { 0x17: [4, I32], 0x18: [8, I64], 0x19: [1, I32], 0x1a: [2, I32], 0x1b: [1, I64], 0x1c: [2, I64], 0x1d: [4, I64] };
/** Each family of atomic read-modify-writes has this shape, from its first opcode: i32, i64, i32 8u, i32 16u, i64 8u, i64 16u, i64 32u. */
const RMW_SHAPE: [number, number][] = [[4, I32], [8, I64], [1, I32], [2, I32], [1, I64], [2, I64], [4, I64]];

function tempFor(t: Temps, type: number, second = false): number {
  if (type === I32) return second ? t.i32b : t.i32;
  if (type === I64) return second ? t.i64b : t.i64;
  if (type === F32) return t.f32;
  return t.f64;
}

/** Emits the check of [address + offset, + bytes) with the address in $address (left on no stack). */
function emitCheck(w: Writer, g: GuardIndices, t: Temps, offset: number, bytes: number): void {
  const end = offset + bytes;
  if (end <= FAST_PATH_MAX_END) {
    for (const [start, size] of [[g.regionStart, g.regionSize], [g.stageStart, g.stageSize]]) {
      w.byte(0x20).u32(t.address).byte(0x23).u32(start).byte(0x6b);                // addr − start
      w.byte(0x23).u32(size).byte(0x41).i32(end).byte(0x6b);                       // size − (offset + bytes)
      w.byte(0x4b).byte(0x04).byte(0x40);                                           // i32.gt_u ; if
    }
    w.byte(0x20).u32(t.address).byte(0x41).i32(offset).byte(0x41).i32(bytes).byte(0x10).u32(g.slow);
    w.byte(0x0b).byte(0x0b);
  } else {
    w.byte(0x20).u32(t.address).byte(0x41).i32(offset).byte(0x41).i32(bytes).byte(0x10).u32(g.slow);
  }
}

/** A store of one value: [address, value] → check → the store. */
function emitGuardedStore(w: Writer, g: GuardIndices, t: Temps, valueType: number, bytes: number, offset: number, instruction: Uint8Array): void {
  const value = tempFor(t, valueType);
  w.byte(0x21).u32(value).byte(0x21).u32(t.address);
  emitCheck(w, g, t, offset, bytes);
  w.byte(0x20).u32(t.address).byte(0x20).u32(value).bytes(instruction);
}

/** A compare-exchange: [address, expected, replacement] → check → the instruction. */
function emitGuardedExchange(w: Writer, g: GuardIndices, t: Temps, valueType: number, bytes: number, offset: number, instruction: Uint8Array): void {
  const expected = tempFor(t, valueType), replacement = tempFor(t, valueType, true);
  w.byte(0x21).u32(replacement).byte(0x21).u32(expected).byte(0x21).u32(t.address);
  emitCheck(w, g, t, offset, bytes);
  w.byte(0x20).u32(t.address).byte(0x20).u32(expected).byte(0x20).u32(replacement).bytes(instruction);
}

/** memory.fill / memory.copy / memory.init: [destination, x, length] → check [destination, + length) → the instruction. */
function emitGuardedBulk(w: Writer, g: GuardIndices, t: Temps, instruction: Uint8Array): void {
  w.byte(0x21).u32(t.length).byte(0x21).u32(t.i32).byte(0x21).u32(t.address);
  w.byte(0x20).u32(t.address).byte(0x41).i32(0).byte(0x20).u32(t.length).byte(0x10).u32(g.slow);
  w.byte(0x20).u32(t.address).byte(0x20).u32(t.i32).byte(0x20).u32(t.length).bytes(instruction);
}

function memarg(r: Reader): { offset: number } {
  const align = r.u32();
  if (align & 0x40) throw new WasmGuardError('the module addresses a second memory (multi-memory); a driver has one, the machine\'s');
  return { offset: r.u32() };
}

/** Rewrites one function body (after its size): its locals gain the temps, its stores are checked, indices renumbered. */
function rewriteBody(r: Reader, end: number, params: number, s: Shift, g: GuardIndices): Uint8Array {
  const w = new Writer();
  const groups = r.u32();
  let declared = 0;
  const localGroups: [number, number][] = [];
  for (let n = 0; n < groups; n++) { const count = r.u32(); const type = r.byte(); localGroups.push([count, type]); declared += count; }
  w.u32(groups + TEMP_TYPES.length);
  for (const [count, type] of localGroups) w.u32(count).byte(type);
  for (const type of TEMP_TYPES) w.u32(1).byte(type);
  const first = params + declared;
  const t: Temps = { address: first, i32: first + 1, i32b: first + 2, i64: first + 3, i64b: first + 4, f32: first + 5, f64: first + 6, length: first + 7 };
  while (r.at < end) {
    const from = r.at;
    const op = r.byte();
    if (op === 0x02 || op === 0x03 || op === 0x04) {                 // block, loop, if: a block type
      const b = r.bytes[r.at];
      if (b === 0x40 || b === I32 || b === I64 || b === F32 || b === F64 || b === 0x7b || b === 0x70 || b === 0x6f) r.at++;
      else r.skipSigned();
      w.bytes(r.slice(from));
    } else if (op === 0x0c || op === 0x0d || (op >= 0x20 && op <= 0x22) || op === 0x25 || op === 0x26) {
      r.u32(); w.bytes(r.slice(from));                               // br, br_if, local.*, table.get/set
    } else if (op === 0x0e) {                                        // br_table
      for (let n = r.u32(); n >= 0; n--) r.u32();
      w.bytes(r.slice(from));
    } else if (op === 0x10 || op === 0x12) {                         // call, return_call
      w.byte(op).u32(func(s, r.u32()));
    } else if (op === 0x11 || op === 0x13) {                         // call_indirect, return_call_indirect
      r.u32(); r.u32(); w.bytes(r.slice(from));
    } else if (op === 0x1c) {                                        // select t*
      for (let n = r.u32(); n > 0; n--) r.byte();
      w.bytes(r.slice(from));
    } else if (op === 0x23 || op === 0x24) {                         // global.get, global.set
      w.byte(op).u32(glob(s, r.u32()));
    } else if (op >= 0x28 && op <= 0x35) {                           // loads
      memarg(r); w.bytes(r.slice(from));
    } else if (op >= 0x36 && op <= 0x3e) {                           // stores
      const { offset } = memarg(r);
      const [bytes, type] = PLAIN_STORES[op];
      emitGuardedStore(w, g, t, type, bytes, offset, r.slice(from));
    } else if (op === 0x3f || op === 0x40) {                         // memory.size, memory.grow
      r.byte(); w.bytes(r.slice(from));
    } else if (op === 0x41 || op === 0x42) {                         // i32.const, i64.const
      r.skipSigned(); w.bytes(r.slice(from));
    } else if (op === 0x43) { r.at += 4; w.bytes(r.slice(from)); }
    else if (op === 0x44) { r.at += 8; w.bytes(r.slice(from)); }
    else if (op <= 0x01 || op === 0x05 || op === 0x0b || op === 0x0f || op === 0x1a || op === 0x1b || (op >= 0x45 && op <= 0xc4) || op === 0xd1) {
      w.byte(op);                                                    // no immediates
    } else if (op === 0xd0) { r.byte(); w.bytes(r.slice(from)); }   // ref.null t
    else if (op === 0xd2) { w.byte(op).u32(func(s, r.u32())); }     // ref.func
    else if (op === 0xfc) {
      const sub = r.u32();
      if (sub <= 7) w.bytes(r.slice(from));
      else if (sub === 8) { r.u32(); r.byte(); emitGuardedBulk(w, g, t, r.slice(from)); }        // memory.init
      else if (sub === 10) { r.byte(); r.byte(); emitGuardedBulk(w, g, t, r.slice(from)); }      // memory.copy
      else if (sub === 11) { r.byte(); emitGuardedBulk(w, g, t, r.slice(from)); }                // memory.fill
      else if (sub === 9 || sub === 13 || (sub >= 15 && sub <= 17)) { r.u32(); w.bytes(r.slice(from)); }
      else if (sub === 12 || sub === 14) { r.u32(); r.u32(); w.bytes(r.slice(from)); }
      else throw new WasmGuardError(`instruction 0xfc ${sub} is not one the driver loader decodes`);
    } else if (op === 0xfe) {
      const sub = r.u32();
      if (sub === 0x03) { r.byte(); w.bytes(r.slice(from)); continue; } // atomic.fence
      if (sub > 0x4e) throw new WasmGuardError(`atomic instruction 0xfe ${sub} is not one the driver loader decodes`);
      const { offset } = memarg(r);
      const instruction = r.slice(from);
      if (sub <= 0x16) w.bytes(instruction);                         // notify, waits, loads: no store
      else if (sub <= 0x1d) { const [bytes, type] = ATOMIC_STORES[sub]; emitGuardedStore(w, g, t, type, bytes, offset, instruction); }
      else if (sub <= 0x47) { const [bytes, type] = RMW_SHAPE[(sub - 0x1e) % 7]; emitGuardedStore(w, g, t, type, bytes, offset, instruction); }
      else { const [bytes, type] = RMW_SHAPE[sub - 0x48]; emitGuardedExchange(w, g, t, type, bytes, offset, instruction); }
    } else if (op === 0xfd) {
      throw new WasmGuardError('the module uses SIMD instructions; build it without them (build.sh passes -mno-simd128)');
    } else {
      throw new WasmGuardError(`opcode 0x${op.toString(16)} is not one the driver loader decodes (exceptions and other proposals are not supported)`);
    }
  }
  return w.toBytes();
}

/**
 * $slow(address, offset, bytes): the three allowed places in 64-bit arithmetic, then the violation (which throws).
 * Locals: 3 start (i64), 4 end (i64).
 */
function slowPathBody(regionStart: number, regionSize: number, stageStart: number, stageSize: number, currentValueFence: number, violation: number): Uint8Array {
  const w = new Writer();
  w.u32(1).u32(2).byte(I64);
  const getU64 = (global: number) => w.byte(0x23).u32(global).byte(0xad);       // global.get ; i64.extend_i32_u
  w.byte(0x20).u32(2).byte(0x45).byte(0x04).byte(0x40).byte(0x0f).byte(0x0b);  // bytes == 0: nothing written
  w.byte(0x20).u32(0).byte(0xad).byte(0x20).u32(1).byte(0xad).byte(0x7c).byte(0x22).u32(3);   // start = address + offset
  w.byte(0x20).u32(2).byte(0xad).byte(0x7c).byte(0x21).u32(4);                              // end = start + bytes
  // 1. the region
  w.byte(0x20).u32(3); getU64(regionStart); w.byte(0x5a);                                   // start >= region_start
  w.byte(0x20).u32(4); getU64(regionStart); getU64(regionSize); w.byte(0x7c).byte(0x58);    // end <= region_start + size
  w.byte(0x71).byte(0x04).byte(0x40).byte(0x0f).byte(0x0b);
  // 2. the staging area
  w.byte(0x20).u32(3); getU64(stageStart); w.byte(0x5a);
  w.byte(0x20).u32(4); getU64(stageStart); getU64(stageSize); w.byte(0x7c).byte(0x58);
  w.byte(0x71).byte(0x04).byte(0x40).byte(0x0f).byte(0x0b);
  // 3. within one aligned 8-byte word that is a live fence's CurrentValue
  w.byte(0x20).u32(4).byte(0x20).u32(3).byte(0x42).bytes([0x78]).byte(0x83).byte(0x42).bytes([0x08]).byte(0x7c).byte(0x58); // end <= (start & ~7) + 8
  w.byte(0x20).u32(4).byte(0x42).bytes([0x80, 0x80, 0x80, 0x80, 0x10]).byte(0x58);          // end <= 2^32
  w.byte(0x71).byte(0x04).byte(0x40);
  w.byte(0x20).u32(3).byte(0xa7).byte(0x41).i32(-8).byte(0x71).byte(0x10).u32(currentValueFence).byte(0x41).i32(0).byte(0x4a); // fence > 0
  w.byte(0x04).byte(0x40).byte(0x0f).byte(0x0b);
  w.byte(0x0b);
  w.byte(0x20).u32(0).byte(0x20).u32(1).byte(0x20).u32(2).byte(0x10).u32(violation).byte(0x00);
  w.byte(0x0b);
  return w.toBytes();
}

function section(w: Writer, id: number, body: Uint8Array): void { w.byte(id).u32(body.length).bytes(body); }

/**
 * The module with every store checked (see the header). The new imports, in order after the module's own:
 * wddm_guard.current_value_fence (i32) → i32, wddm_guard.violation (i32, i32, i32) → (), and the immutable i32
 * globals region_start, region_size, stage_start, stage_size.
 */
export function guardModule(bytes: Uint8Array): Uint8Array {
  const sections = sectionsOf(bytes);
  const find = (id: number) => sections.find((x) => x.id === id);
  const imports = readImports(bytes, find(SECTION.import));
  const facts = moduleFacts(bytes);
  if (facts.activeDataSegments) throw new WasmGuardError(`it has ${facts.activeDataSegments} active data segment(s), written at a fixed address when it is instantiated; build it position-independent (build.sh: -fPIC, wasm-ld --experimental-pic -pie --shared-memory)`);

  // Types: the module's, then (i32) → i32 and (i32, i32, i32) → ().
  const typeSection = find(SECTION.type);
  const types: number[][] = []; // parameter counts only matter (for each function's first local index)
  const typeWriter = new Writer();
  let typeCount = 0;
  if (typeSection) {
    const r = new Reader(bytes, typeSection.start, typeSection.end);
    typeCount = r.u32();
    const from = r.at;
    for (let n = 0; n < typeCount; n++) {
      if (r.byte() !== 0x60) throw new WasmGuardError('a type that is not a function type');
      const params: number[] = [];
      for (let p = r.u32(); p > 0; p--) params.push(r.byte());
      for (let q = r.u32(); q > 0; q--) r.byte();
      types.push(params);
    }
    typeWriter.u32(typeCount + 2).bytes(r.slice(from));
  } else typeWriter.u32(2);
  const typeI32ToI32 = typeCount, typeThreeI32 = typeCount + 1;
  typeWriter.byte(0x60).u32(1).byte(I32).u32(1).byte(I32);
  typeWriter.byte(0x60).u32(3).byte(I32).byte(I32).byte(I32).u32(0);

  const functionsImported = imports.filter((i) => i.kind === 'function').length;
  const globalsImported = imports.filter((i) => i.kind === 'global').length;
  const shift: Shift = { functionsImported, globalsImported, addedFunctions: 2, addedGlobals: 4 };
  const currentValueFence = functionsImported, violation = functionsImported + 1;
  const regionStart = globalsImported, regionSize = globalsImported + 1, stageStart = globalsImported + 2, stageSize = globalsImported + 3;

  // Imports: the module's, then the guard's.
  const importWriter = new Writer();
  const importSection = find(SECTION.import);
  if (importSection) {
    const r = new Reader(bytes, importSection.start, importSection.end);
    const n = r.u32();
    importWriter.u32(n + 6).bytes(bytes.subarray(r.at, importSection.end));
  } else importWriter.u32(6);
  importWriter.name(GUARD_MODULE).name(GUARD_IMPORTS.currentValueFence).byte(0).u32(typeI32ToI32);
  importWriter.name(GUARD_MODULE).name(GUARD_IMPORTS.violation).byte(0).u32(typeThreeI32);
  for (const name of [GUARD_IMPORTS.regionStart, GUARD_IMPORTS.regionSize, GUARD_IMPORTS.stageStart, GUARD_IMPORTS.stageSize]) {
    importWriter.name(GUARD_MODULE).name(name).byte(3).byte(I32).byte(0);
  }

  // Functions: their types (for each body's parameter count), then the slow path's.
  const functionSection = find(SECTION.function);
  const functionTypes: number[] = [];
  if (functionSection) {
    const r = new Reader(bytes, functionSection.start, functionSection.end);
    for (let n = r.u32(); n > 0; n--) functionTypes.push(r.u32());
  }
  const functionWriter = new Writer().u32(functionTypes.length + 1);
  for (const type of functionTypes) functionWriter.u32(type);
  functionWriter.u32(typeThreeI32);
  const slow = functionsImported + shift.addedFunctions + functionTypes.length;
  const guard: GuardIndices = { regionStart, regionSize, stageStart, stageSize, slow };

  // Code.
  const codeSection = find(SECTION.code);
  const codeWriter = new Writer().u32(functionTypes.length + 1);
  if (codeSection) {
    const r = new Reader(bytes, codeSection.start, codeSection.end);
    const count = r.u32();
    if (count !== functionTypes.length) throw new WasmGuardError('its code and function sections disagree on the number of functions');
    for (let i = 0; i < count; i++) {
      const size = r.u32();
      const end = r.at + size;
      const body = rewriteBody(r, end, types[functionTypes[i]]?.length ?? 0, shift, guard);
      if (r.at !== end) throw new WasmGuardError(`function ${functionsImported + i} ends inside an instruction`);
      codeWriter.u32(body.length).bytes(body);
    }
  }
  const slowBody = slowPathBody(regionStart, regionSize, stageStart, stageSize, currentValueFence, violation);
  codeWriter.u32(slowBody.length).bytes(slowBody);

  const out = new Writer().bytes(bytes.subarray(0, 8));
  const order: number[] = [];
  for (const s of sections) {
    const body = bytes.subarray(s.start, s.end);
    switch (s.id) {
      case SECTION.type: section(out, s.id, typeWriter.toBytes()); break;
      case SECTION.import: section(out, s.id, importWriter.toBytes()); break;
      case SECTION.function: section(out, s.id, functionWriter.toBytes()); break;
      case SECTION.code: section(out, s.id, codeWriter.toBytes()); break;
      case SECTION.global:
        section(out, s.id, rewriteVector(bytes, s, (r, w) => { w.byte(r.byte()).byte(r.byte()); copyConstantExpression(r, w, shift); }));
        break;
      case SECTION.export:
        section(out, s.id, rewriteVector(bytes, s, (r, w) => {
          const name = r.name(); const kind = r.byte(); const index = r.u32();
          w.name(name).byte(kind).u32(kind === 0 ? func(shift, index) : kind === 3 ? glob(shift, index) : index);
        }));
        break;
      case SECTION.start: section(out, s.id, new Writer().u32(func(shift, new Reader(bytes, s.start, s.end).u32())).toBytes()); break;
      case SECTION.element: section(out, s.id, rewriteElements(bytes, s, shift)); break;
      case SECTION.data: section(out, s.id, rewriteData(bytes, s, shift)); break;
      case SECTION.custom:
        if (s.name === 'name') section(out, s.id, rewriteNames(bytes, s, shift, slow));
        else section(out, s.id, body);
        break;
      default: section(out, s.id, body);
    }
    order.push(s.id);
  }
  // A module with no import, type, function or code section gets them (in the order the binary format wants).
  if (!order.includes(SECTION.type) || !order.includes(SECTION.import) || !order.includes(SECTION.function) || !order.includes(SECTION.code)) {
    throw new WasmGuardError('it has no functions (no type, import, function or code section): it is no driver');
  }
  return out.toBytes();
}

/** A section that is a vector of entries, each copied by `entry` (which renumbers what it must). */
function rewriteVector(bytes: Uint8Array, s: Section, entry: (r: Reader, w: Writer) => void): Uint8Array {
  const r = new Reader(bytes, s.start, s.end);
  const w = new Writer();
  const n = r.u32();
  w.u32(n);
  for (let i = 0; i < n; i++) entry(r, w);
  return w.toBytes();
}

function rewriteElements(bytes: Uint8Array, s: Section, shift: Shift): Uint8Array {
  return rewriteVector(bytes, s, (r, w) => {
    const flags = r.u32();
    w.u32(flags);
    if (flags === 2 || flags === 6) w.u32(r.u32());                     // table index
    if ((flags & 1) === 0) copyConstantExpression(r, w, shift);         // active: its offset
    const expressions = (flags & 4) !== 0;
    if (flags & 3) w.byte(r.byte());                                    // element kind or reference type
    const count = r.u32();
    w.u32(count);
    for (let k = 0; k < count; k++) {
      if (expressions) copyConstantExpression(r, w, shift);
      else w.u32(func(shift, r.u32()));
    }
  });
}

function rewriteData(bytes: Uint8Array, s: Section, shift: Shift): Uint8Array {
  return rewriteVector(bytes, s, (r, w) => {
    const flags = r.u32();
    w.u32(flags);
    if (flags === 2) w.u32(r.u32());
    if (flags !== 1) copyConstantExpression(r, w, shift);
    const size = r.u32();
    w.u32(size).bytes(bytes.subarray(r.at, r.at + size));
    r.at += size;
  });
}

/** The name section with function names renumbered (and the added one named); other subsections are left out. */
function rewriteNames(bytes: Uint8Array, s: Section, shift: Shift, slow: number): Uint8Array {
  const r = new Reader(bytes, s.start, s.end);
  const w = new Writer().name(r.name());
  while (!r.done) {
    const id = r.byte();
    const size = r.u32();
    const end = r.at + size;
    if (id === 0) w.byte(0).u32(size).bytes(bytes.subarray(r.at, end));
    else if (id === 1) {
      const names: [number, string][] = [];
      for (let n = r.u32(); n > 0; n--) { const index = r.u32(); names.push([func(shift, index), r.name()]); }
      names.push([slow, SLOW_PATH_NAME]);
      const sub = new Writer().u32(names.length);
      for (const [index, name] of names) sub.u32(index).name(name);
      const body = sub.toBytes();
      w.byte(1).u32(body.length).bytes(body);
    }
    r.at = end;
  }
  return w.toBytes();
}
