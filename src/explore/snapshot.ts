// Going back to an earlier state without building the machine again: a
// snapshot of linear memory plus an in-place snapshot of the host objects.
//
//   take     copy linear memory from STATIC_RESERVED_BYTES to its end; walk
//            every object reachable from the machine (as the state key's walk
//            does) and keep, for each, its own fields (objects), its items
//            (arrays), its entries in order (Maps, Sets) or its bytes (typed
//            arrays that are not views of linear memory)
//   restore  copy memory back; put every kept field, item and entry back INTO
//            THE SAME OBJECTS, so every reference anyone holds (a closure's
//            captured thread, an engine's pending event) is right again.
//            Objects made after the snapshot are simply no longer reachable.
//
// This is sound for host state that lives in object fields. It cannot reach
// inside a generator (its position) or a closure's own variables, so take()
// refuses a machine that holds a generator (the explorer's threads are plain
// iterator objects: src/explore/model.ts), and the model keeps no state in
// closure variables (what the OS keeps in callbacks is constant: which thread,
// which wait). test/explore.test.ts checks that searching with snapshots and
// searching by rebuilding from the start find exactly the same states.
//
// Skipped (never written after the machine is built, or restored elsewhere):
// WebAssembly objects, views of linear memory, functions, and the trace (the
// explorer's machines run with it off; take() refuses one that records).

import type { Machine } from '../machine/machine.js';
import { Trace } from '../base/trace.js';

/** A machine holds something a snapshot cannot restore. */
export class SnapshotUnsupported extends Error {
  constructor(message: string) { super(message); this.name = 'SnapshotUnsupported'; }
}

const enum Kind { Object, Array, Map, Set, Bytes, Skipped, Generator, Unlistable }

/** How a snapshot treats an object, decided once per prototype (every instance of a class is the same kind). */
function kindOf(value: object): Kind {
  if (value instanceof Trace || value instanceof WebAssembly.Memory || value instanceof WebAssembly.Module ||
      value instanceof WebAssembly.Instance || value instanceof WebAssembly.Global || value instanceof ArrayBuffer ||
      (typeof SharedArrayBuffer !== 'undefined' && value instanceof SharedArrayBuffer)) return Kind.Skipped;
  if (Object.prototype.toString.call(value) === '[object Generator]') return Kind.Generator;
  if (Array.isArray(value)) return Kind.Array;
  if (value instanceof Map) return Kind.Map;
  if (value instanceof Set) return Kind.Set;
  if (ArrayBuffer.isView(value)) return Kind.Bytes;
  if (value instanceof WeakMap || value instanceof WeakSet || value instanceof Promise) return Kind.Unlistable;
  return Kind.Object;
}
/** kindOf by prototype (a pure function's memo: nothing of a machine's). */
const kindCache = new Map<object | null, Kind>();

export interface Snapshot {
  readonly memory: Uint8Array;
  readonly objects: object[];
  readonly kinds: Kind[];
  readonly data: unknown[][];
}

/**
 * Keeps the machine's state (see the header), and that of `extra` objects beside it (the explorer's own
 * state). Throws SnapshotUnsupported for a generator or a recording trace.
 */
export function takeSnapshot(machine: Machine, reuse?: Snapshot, extra: readonly object[] = []): Snapshot {
  if (machine.trace.enabled) throw new SnapshotUnsupported('the machine records a trace: snapshots need trace: false');
  const bytes = new Uint8Array(machine.memory.buffer);
  const from = machine.layout.staticReservedBytes;
  const memory = reuse && reuse.memory.length === bytes.length - from ? reuse.memory : new Uint8Array(bytes.length - from);
  memory.set(bytes.subarray(from));
  const objects: object[] = [];
  const kinds: Kind[] = [];
  const data: unknown[][] = [];
  const seen = new Set<object>();
  const memoryBuffer = machine.memory.buffer;
  // The core's exports (frozen: functions and constant globals) hold nothing to keep.
  for (const adapter of machine.adapters) seen.add(adapter.hardware.core);
  const stack: unknown[] = [...extra].reverse();
  stack.push(machine);
  while (stack.length) {
    const value = stack.pop();
    if (value === null || typeof value !== 'object') continue;
    if (seen.has(value)) continue;
    seen.add(value);
    const prototype = Object.getPrototypeOf(value) as object | null;
    let kind = kindCache.get(prototype);
    if (kind === undefined) { kind = kindOf(value); kindCache.set(prototype, kind); }
    if (kind === Kind.Array && !Array.isArray(value)) kind = kindOf(value);
    switch (kind) {
      case Kind.Skipped: continue;
      case Kind.Array: {
        const array = value as unknown[];
        objects.push(array); kinds.push(Kind.Array); data.push(array.slice());
        for (let i = array.length - 1; i >= 0; i--) stack.push(array[i]);
        continue;
      }
      case Kind.Map: {
        const entries: unknown[] = [];
        for (const [k, v] of value as Map<unknown, unknown>) entries.push(k, v);
        objects.push(value); kinds.push(Kind.Map); data.push(entries);
        for (let i = entries.length - 1; i >= 0; i--) stack.push(entries[i]);
        continue;
      }
      case Kind.Set: {
        const items = [...(value as Set<unknown>)];
        objects.push(value); kinds.push(Kind.Set); data.push(items);
        for (let i = items.length - 1; i >= 0; i--) stack.push(items[i]);
        continue;
      }
      case Kind.Bytes: {
        const view = value as ArrayBufferView;
        if (view.buffer === memoryBuffer) continue;
        const copy = new Uint8Array(view.byteLength);
        copy.set(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
        objects.push(view); kinds.push(Kind.Bytes); data.push([copy]);
        continue;
      }
      case Kind.Generator:
        throw new SnapshotUnsupported('the machine holds a generator (a CPU thread written as function*): its position cannot be kept; explore it by replaying from the start');
      case Kind.Unlistable:
        throw new SnapshotUnsupported(`the machine holds a ${(value as object).constructor.name}, whose contents a snapshot cannot list`);
    }
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    const fields: unknown[] = [];
    for (const key of keys) fields.push(key, record[key]);
    objects.push(value); kinds.push(Kind.Object); data.push(fields);
    for (let i = fields.length - 1; i > 0; i -= 2) stack.push(fields[i]);
  }
  return { memory, objects, kinds, data };
}

/** Puts the machine back as it was when `snapshot` was taken. */
export function restoreSnapshot(machine: Machine, snapshot: Snapshot): void {
  new Uint8Array(machine.memory.buffer).set(snapshot.memory, machine.layout.staticReservedBytes);
  const { objects, kinds, data } = snapshot;
  for (let i = 0; i < objects.length; i++) {
    const object = objects[i];
    const saved = data[i];
    switch (kinds[i]) {
      case Kind.Array: {
        const array = object as unknown[];
        if (array.length !== saved.length) array.length = saved.length;
        for (let j = 0; j < saved.length; j++) if (array[j] !== saved[j]) array[j] = saved[j];
        break;
      }
      case Kind.Map: {
        const map = object as Map<unknown, unknown>;
        map.clear();
        for (let j = 0; j < saved.length; j += 2) map.set(saved[j], saved[j + 1]);
        break;
      }
      case Kind.Set: {
        const set = object as Set<unknown>;
        set.clear();
        for (const item of saved) set.add(item);
        break;
      }
      case Kind.Bytes: {
        const view = object as ArrayBufferView;
        new Uint8Array(view.buffer, view.byteOffset, view.byteLength).set(saved[0] as Uint8Array);
        break;
      }
      default: {
        const record = object as Record<string, unknown>;
        const keys = Object.keys(record);
        let same = keys.length * 2 === saved.length;
        for (let j = 0; same && j < keys.length; j++) same = saved[j * 2] === keys[j];
        if (!same) {
          // A field was added (or removed) since: the object's own keys become exactly the kept ones, in their order.
          for (const key of keys) delete record[key];
          for (let j = 0; j < saved.length; j += 2) record[saved[j] as string] = saved[j + 1];
          break;
        }
        for (let j = 0; j < saved.length; j += 2) {
          const key = saved[j] as string;
          if (!Object.is(record[key], saved[j + 1])) record[key] = saved[j + 1];
        }
      }
    }
  }
}
