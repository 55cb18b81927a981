// A command list in the D3D12 sense, for user-mode submission: wait / signal / work commands recorded
// once into typed columns and submitted whole (RuntimeProcess.submit({ hHwQueue, commands: list })),
// with no object per command on the way to the ring.
//
//   record (list.signal / wait / work) ── the command's shape is checked here, naming its index as the
//                                         object form's check does (`commands[3].signal.value`)
//   submit ── what depends on the OS's state (the handle names a live native fence of the process on the
//             queue's adapter, its flags allow the op) is checked by HwQueues.prepareSubmission once per run
//             of commands naming one handle with one op; a refused submission changes nothing
//   reset ── the list is empty again (its columns are kept); submitting leaves a list as it was
//
// A list belongs to the process that created it and holds at most `capacity` commands (at most
// MAX_SUBMISSION_COMMANDS, what one submission takes besides its progress fence's signal).

import { WddmError, invalid } from '../base/errors.js';
import * as v from '../base/validate.js';
import { UMD_OP_SIGNAL, UMD_OP_WAIT, UMD_OP_WORK, type UserModeCommand } from '../ddi/ddi.js';

/** The most commands one submission takes (the object form's `commands` array too); the OS adds the progress fence's signal. */
export const MAX_SUBMISSION_COMMANDS = 4096;

/** A command's op in a list's `ops` column: the typed DDI's codes (the OS's in-flight references use the same for wait and signal). */
export const LIST_OP_WAIT = UMD_OP_WAIT;
export const LIST_OP_SIGNAL = UMD_OP_SIGNAL;
export const LIST_OP_WORK = UMD_OP_WORK;

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const TWO_32 = 4294967296;
/** A handle as a list stores it: an integer from 1 to 2^32 - 1. */
function isHandle(handle: unknown): handle is number {
  return typeof handle === 'number' && handle >>> 0 === handle && handle !== 0;
}

export class CommandList {
  /** The most commands it holds (createCommandList({ capacity }), 1 … MAX_SUBMISSION_COMMANDS). */
  readonly capacity: number;
  /**
   * The columns, command i at index i (i < length). Written by the recording methods only:
   * ops[i] (LIST_OP_*), handles[i] (the fence handle; 0 for work), values[i] (the fence value, or
   * work's duration in whole ns), durationsNs[i] (work's duration as a number: the trace's words).
   */
  readonly ops: Uint8Array;
  readonly handles: Uint32Array;
  readonly values: BigUint64Array;
  readonly durationsNs: Float64Array;
  /** `values` as 32-bit words: a number value is stored without making a bigint. */
  private readonly valueWords: Uint32Array;
  private count = 0;

  /** Made by RuntimeProcess.createCommandList; `process` is the OS's record of the process whose handles it names. */
  constructor(readonly process: { readonly name: string }, options?: unknown) {
    const o = v.options(options ?? {}, 'createCommandList(options)', ['capacity']);
    this.capacity = o.capacity === undefined ? MAX_SUBMISSION_COMMANDS : v.integer(o.capacity, 'createCommandList(options).capacity', 1, MAX_SUBMISSION_COMMANDS);
    this.ops = new Uint8Array(this.capacity);
    this.handles = new Uint32Array(this.capacity);
    this.values = new BigUint64Array(this.capacity);
    this.durationsNs = new Float64Array(this.capacity);
    this.valueWords = new Uint32Array(this.values.buffer);
  }

  /** The commands recorded since it was made or last reset. */
  get length(): number { return this.count; }

  /** Records a GPU signal of `hSyncObject` to `value` (a u64: a bigint, or a non-negative safe integer). */
  signal(hSyncObject: number, value: bigint | number): this { return this.recordFence(LIST_OP_SIGNAL, hSyncObject, value); }

  /** Records a GPU wait until `hSyncObject` reaches `value`. */
  wait(hSyncObject: number, value: bigint | number): this { return this.recordFence(LIST_OP_WAIT, hSyncObject, value); }

  /** Records `durationNs` of GPU work (a whole number of ns, 0 … MAX_VIRTUAL_TIME_NS). */
  work(durationNs: number): this {
    const at = this.room('work');
    const checked = v.nonNegative(durationNs, `commands[${at}].work.durationNs`);
    this.ops[at] = LIST_OP_WORK;
    this.handles[at] = 0;
    this.values[at] = BigInt(checked);
    this.durationsNs[at] = checked;
    this.count = at + 1;
    return this;
  }

  /** Empties the list for reuse (nothing submitted is affected: a submission's commands are in the ring). */
  reset(): this {
    this.count = 0;
    return this;
  }

  /** A wait or signal: the quick checks and the columns' writes; anything they do not take goes to recordChecked. */
  private recordFence(op: typeof LIST_OP_WAIT | typeof LIST_OP_SIGNAL, hSyncObject: number, value: bigint | number): this {
    const at = this.count;
    if (at >= this.capacity || !isHandle(hSyncObject) || !this.storeValue(at, value)) return this.recordChecked(op === LIST_OP_WAIT ? 'wait' : 'signal', hSyncObject, value);
    this.ops[at] = op;
    this.handles[at] = hSyncObject;
    this.count = at + 1;
    return this;
  }

  /** Stores a valid u64 `value` at `at` (a number without making a bigint); false, storing nothing, for anything else. */
  private storeValue(at: number, value: bigint | number): boolean {
    if (typeof value === 'number') {
      if (!LITTLE_ENDIAN || !(value >= 0 && value <= Number.MAX_SAFE_INTEGER) || Math.floor(value) !== value) return false;
      this.valueWords[2 * at] = value >>> 0;
      this.valueWords[2 * at + 1] = (value / TWO_32) >>> 0;
      return true;
    }
    if (typeof value !== 'bigint' || BigInt.asUintN(64, value) !== value) return false;
    this.values[at] = value;
    return true;
  }

  /**
   * A wait or signal the quick checks did not take, checked in full: throws the error the object form gives for it
   * (or for a full list), recording nothing; else records it (a number value on a big-endian platform comes here).
   */
  private recordChecked(name: 'wait' | 'signal', hSyncObject: unknown, value: unknown): this {
    const at = this.room(name);
    if (!isHandle(hSyncObject)) {
      throw invalid(`commands[${at}].${name}.hSyncObject`, hSyncObject, `a sync object (hSyncObject) handle (a positive 32-bit integer) made by process "${this.process.name}"`, 'INVALID_HANDLE');
    }
    this.values[at] = v.u64(value, `commands[${at}].${name}.value`);
    this.ops[at] = name === 'wait' ? LIST_OP_WAIT : LIST_OP_SIGNAL;
    this.handles[at] = hSyncObject;
    this.count = at + 1;
    return this;
  }

  /** The index of the next command; a full list is a clear error (nothing is recorded). */
  private room(name: string): number {
    const at = this.count;
    if (at >= this.capacity) {
      throw new WddmError('INVALID_PARAMETER', `commands[${at}].${name}: the command list is full (it holds ${this.capacity} commands, its capacity; one submission takes at most ${MAX_SUBMISSION_COMMANDS}); submit it and reset() it, or record the rest into another list`,
        { parameter: `commands[${at}]`, value: at, expected: `at most ${this.capacity} commands` });
    }
    return at;
  }
}

const OP_NAMES: readonly UserModeCommand['op'][] = ['wait', 'signal', 'work'];

/**
 * A checked submission's commands as the driver's user-mode half gets them (SubmissionPlan.commands),
 * reused by every submission: command i is ops[i] (UMD_OP_*), gpuVas[i], values[i], handles[i] for
 * i < count (the typed form, UMDARG_SUBMITCOLUMNSTOHWQUEUE), or the same as records (toRecords()).
 */
export class SubmissionCommands {
  count = 0;
  readonly ops = new Uint8Array(MAX_SUBMISSION_COMMANDS + 1);
  readonly gpuVas = new BigUint64Array(MAX_SUBMISSION_COMMANDS + 1);
  readonly values = new BigUint64Array(MAX_SUBMISSION_COMMANDS + 1);
  readonly handles = new Uint32Array(MAX_SUBMISSION_COMMANDS + 1);
  private readonly records: UserModeCommand[] = [];
  private readonly list: UserModeCommand[] = [];

  get length(): number { return this.count; }

  /** Appends one command (the object form's path, and the progress fence's signal). */
  add(op: number, gpuVa: bigint, value: bigint, handle: number): void {
    const at = this.count++;
    this.ops[at] = op;
    this.gpuVas[at] = gpuVa;
    this.values[at] = value;
    this.handles[at] = handle;
  }

  /** The commands as UserModeCommand records, for a user-mode half that takes only those (records and list reused by the next call). */
  toRecords(): UserModeCommand[] {
    const { records, list, count } = this;
    while (records.length < count) records.push({ op: 'signal', gpuVa: 0n, value: 0n, handle: 0 });
    for (let i = 0; i < count; i++) {
      const record = records[i];
      record.op = OP_NAMES[this.ops[i]];
      record.gpuVa = this.gpuVas[i];
      record.value = this.values[i];
      record.handle = this.handles[i];
      list[i] = record;
    }
    if (list.length !== count) list.length = count;
    return list;
  }
}
