// Going back to an earlier state without building the machine again: a
// snapshot of linear memory plus an in-place snapshot of the host objects.
//
//   take     copy linear memory from STATIC_RESERVED_BYTES to its end, and
//            keep every host object reachable from the machine: its own
//            fields (objects), its items (arrays), its entries in order (Maps,
//            Sets) or its bytes (typed arrays that are not views of linear
//            memory). The host part is what src/explore/host-walk.ts keeps:
//            the state key's walker in a search (Runner.save: it knows the
//            objects and the machine's constants already), else a walker of
//            its own (takeSnapshot)
//   restore  copy memory back; put every kept field, item and entry back INTO
//            THE SAME OBJECTS, so every reference anyone holds (a closure's
//            captured thread, an engine's pending event) is right again.
//            Objects made after the snapshot are simply no longer reachable.
//            Only what differs is written (about 12 of ~300 objects per
//            restore on 2 engines x 2 fences x 2 waiters x 2 signals); a field
//            added since is removed, one deleted comes back (the object's own
//            keys become exactly the kept ones, in order).
//
// The host part is one array of entries per snapshot (HostRecord: each object,
// its field names or its kind and count, then its values) and one of typed
// arrays' bytes: no array per object.
//
// This is sound for host state that lives in object fields. It cannot reach
// inside a generator (its position) or a closure's own variables, so the walk
// refuses a machine that holds a generator (the explorer's threads are plain
// iterator objects: src/explore/model.ts), and the model keeps no state in
// closure variables (what the OS keeps in callbacks is constant: which thread,
// which wait). test/explore.test.ts checks that searching with snapshots and
// searching by rebuilding from the start find exactly the same states.
//
// Not kept (never written after the machine is built, or restored elsewhere):
// WebAssembly objects and the cores' frozen exports, objects deeply frozen in
// the machine as built (the state key's constants), frozen records (a frozen
// plain object of primitives: the fields that hold one are kept), views of linear memory,
// functions, and the trace (the explorer's machines run with it off; take
// refuses one that records).

import type { Machine } from '../machine/machine.js';
import { HostWalk, Kind, SnapshotUnsupported, type HostRecord } from './host-walk.js';

export { SnapshotUnsupported };

export interface Snapshot {
  readonly memory: Uint8Array;
  readonly host: HostRecord;
}

/** The cores' exports as the OS and the GPU see them, where frozen (WebAssembly exports: code and constant globals): nothing to keep. */
export function frozenExports(machine: Machine): Set<object> {
  return new Set(machine.adapters.flatMap((adapter) => [adapter.core, adapter.hardware.core]).filter((core) => Object.isFrozen(core)));
}

/**
 * Keeps the machine's state (see the header), and that of `extra` objects beside it (the explorer's own
 * state); `host`: what a walk kept of this very state already (the state key's, Runner.save). Throws
 * SnapshotUnsupported for a generator or a recording trace.
 */
export function takeSnapshot(machine: Machine, reuse?: Snapshot, extra: readonly object[] = [], host?: HostRecord): Snapshot {
  if (machine.trace.enabled) throw new SnapshotUnsupported('the machine records a trace: snapshots need trace: false');
  const bytes = new Uint8Array(machine.memory.buffer);
  const from = machine.layout.staticReservedBytes;
  const memory = reuse && reuse.memory.length === bytes.length - from ? reuse.memory : new Uint8Array(bytes.length - from);
  memory.set(bytes.subarray(from));
  host ??= new HostWalk(undefined, machine.memory.buffer, frozenExports(machine)).keepAll([machine, ...extra]);
  return { memory, host };
}

/** Puts the machine back as it was when `snapshot` was taken. */
export function restoreSnapshot(machine: Machine, snapshot: Snapshot): void {
  new Uint8Array(machine.memory.buffer).set(snapshot.memory, machine.layout.staticReservedBytes);
  const { entries, bytes } = snapshot.host;
  // Object after object (HostRecord): the object, its field names or its kind and n, then its values entries[start, end).
  for (let at = 0; at < entries.length;) {
    const object = entries[at++] as object;
    const names = entries[at++] as readonly string[] | Kind;
    const kind = typeof names === 'number' ? names : Kind.Object;
    const start = typeof names === 'number' ? at + 1 : at;
    const end = at = start + (typeof names === 'number' ? entries[at] as number : names.length);
    switch (kind) {
      case Kind.Array: {
        const array = object as unknown[];
        if (array.length !== end - start) array.length = end - start;
        for (let j = start; j < end; j++) if (array[j - start] !== entries[j]) array[j - start] = entries[j];
        break;
      }
      case Kind.Map: {
        const map = object as Map<unknown, unknown>;
        if (sameEntries(map, entries, start, end)) break;
        map.clear();
        for (let j = start; j < end; j += 2) map.set(entries[j], entries[j + 1]);
        break;
      }
      case Kind.Set: {
        const set = object as Set<unknown>;
        if (sameItems(set, entries, start, end)) break;
        set.clear();
        for (let j = start; j < end; j++) set.add(entries[j]);
        break;
      }
      case Kind.Bytes: {
        // The typed array's bytes as a Uint8Array, and where they are in the record's bytes.
        const view = entries[start] as Uint8Array, from = entries[start + 1] as number;
        view.set(bytes.subarray(from, from + view.length));
        break;
      }
      default: {
        const record = object as Record<string, unknown>;
        const savedNames = names as readonly string[];
        const keys = Object.keys(record);
        let same = keys.length === savedNames.length;
        for (let j = 0; same && j < keys.length; j++) same = savedNames[j] === keys[j];
        if (!same) {
          // A field was added (or removed) since: the object's own keys become exactly the kept ones, in their order.
          for (const key of keys) delete record[key];
          for (let j = 0; j < savedNames.length; j++) record[savedNames[j]] = entries[start + j];
          break;
        }
        // The same fields: write back those whose values differ (most do not). A getter without a setter
        // (a value derived from other state, e.g. a clock's nowNs) is not written: what it reads is restored.
        const now = Object.values(record);
        for (let j = 0; j < now.length; j++) {
          if (Object.is(now[j], entries[start + j])) continue;
          const descriptor = Object.getOwnPropertyDescriptor(record, savedNames[j]);
          if (descriptor && descriptor.get && !descriptor.set) continue;
          record[savedNames[j]] = entries[start + j];
        }
      }
    }
  }
}

/** Does a Map hold exactly the entries values[start, end) (key, value, key, value ...), in this order? */
function sameEntries(map: Map<unknown, unknown>, values: readonly unknown[], start: number, end: number): boolean {
  if (map.size * 2 !== end - start) return false;
  let j = start;
  for (const [key, value] of map) {
    if (key !== values[j] || !Object.is(value, values[j + 1])) return false;
    j += 2;
  }
  return true;
}
/** Does a Set hold exactly the items values[start, end), in this order? */
function sameItems(set: Set<unknown>, values: readonly unknown[], start: number, end: number): boolean {
  if (set.size !== end - start) return false;
  let j = start;
  for (const item of set) if (item !== values[j++]) return false;
  return true;
}
