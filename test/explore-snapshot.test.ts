// The snapshot's contract (src/explore/snapshot.ts): restore puts every kept field, item, entry and byte back
// INTO THE SAME OBJECTS; a field added after the snapshot is removed and one deleted comes back, in the kept
// order; a getter without a setter is not written; a generator is refused. The record is one array of
// entries per snapshot (HostRecord), whose field-name lists one walk shares between its snapshots
// (Known.keptNames): snapshots taken by one walk before and after an object's fields change each restore their own.
import { describe, it, expect } from 'vitest';
import type { Machine } from '../src/machine/machine.js';
import { takeSnapshot, restoreSnapshot, SnapshotUnsupported, type Snapshot } from '../src/explore/snapshot.js';
import { HostWalk } from '../src/explore/host-walk.js';

/** The little a snapshot reads of a machine (its trace's switch, linear memory and where the kept part starts), beside host objects of our own. */
function machineLike(): Machine {
  const memory = new WebAssembly.Memory({ initial: 1 });
  return { trace: { enabled: false }, memory, layout: { staticReservedBytes: 1024 }, adapters: [] } as unknown as Machine;
}

/** A host state with every kind a snapshot keeps, reached through objects, arrays, a Map and a Set, one object twice. */
function state() {
  const shared = { count: 1 };
  const clock = { ticks: 5, get nowNs(): number { return this.ticks * 10; } };
  return {
    shared, clock,
    list: [shared, 2, 'three'],
    byName: new Map<string, unknown>([['a', shared], ['b', 2]]),
    members: new Set<unknown>([shared, 'x']),
    bits: new Uint16Array([1, 2, 3]),
    nested: { inner: { deep: [shared] } },
  };
}

/** The host state as plain data (its objects' identity aside): what restore must give back. */
function picture(s: ReturnType<typeof state>): string {
  return JSON.stringify({
    shared: s.shared, clock: [Object.keys(s.clock), s.clock.ticks, s.clock.nowNs], list: s.list, byName: [...s.byName], members: [...s.members],
    bits: [...s.bits], nested: s.nested, keys: Object.keys(s), sharedKeys: Object.keys(s.shared),
  });
}

/** Changes every part of the state, the objects' fields included (added, deleted, reordered by delete and add). */
function scramble(s: ReturnType<typeof state>): void {
  s.shared.count = 7;
  (s.shared as Record<string, unknown>).added = 'new';
  s.clock.ticks = 9;
  s.list.push({ count: 3 }); s.list[1] = 20;
  s.byName.delete('a'); s.byName.set('c', 3); s.byName.set('a', s.shared);
  s.members.delete(s.shared); s.members.add(s.shared); s.members.add('y');
  s.bits[1] = 200;
  delete (s.nested as Record<string, unknown>).inner;
  (s.nested as Record<string, unknown>).inner = { deep: [] };
}

describe('snapshots', () => {
  it('restore puts every field, item, entry and byte back into the same objects; added fields go, deleted ones come back in their order', () => {
    const machine = machineLike();
    const s = state();
    const objects = [s.shared, s.clock, s.list, s.byName, s.members, s.bits, s.nested, s.nested.inner, s.nested.inner.deep];
    const before = picture(s);
    new Uint8Array(machine.memory.buffer)[2048] = 42;
    const snapshot = takeSnapshot(machine, undefined, [s]);
    scramble(s);
    new Uint8Array(machine.memory.buffer)[2048] = 43;
    expect(picture(s)).not.toBe(before);
    restoreSnapshot(machine, snapshot);
    expect(picture(s)).toBe(before);
    expect(new Uint8Array(machine.memory.buffer)[2048]).toBe(42);
    // The same objects: what anyone held before is what the state holds again.
    expect([s.shared, s.clock, s.list, s.byName, s.members, s.bits, s.nested, s.nested.inner, s.nested.inner.deep]).toEqual(objects);
    for (const [i, object] of [s.shared, s.clock, s.list, s.byName, s.members, s.bits, s.nested, s.nested.inner, s.nested.inner.deep].entries()) expect(object).toBe(objects[i]);
    expect(s.list[0]).toBe(s.shared);
    expect(s.byName.get('a')).toBe(s.shared);
  });

  it('a getter without a setter is not written (what it reads is restored); one with a setter is', () => {
    const machine = machineLike();
    let written = 0;
    const derived = { base: 1, get twice(): number { return this.base * 2; } };
    const settable = { stored: 1, get value(): number { return this.stored; }, set value(v: number) { written++; this.stored = v; } };
    const snapshot = takeSnapshot(machine, undefined, [{ derived, settable }]);
    derived.base = 4;
    settable.value = 5;
    written = 0;
    restoreSnapshot(machine, snapshot);
    expect(derived.twice).toBe(2);
    expect(settable.value).toBe(1);
    expect(written).toBeGreaterThan(0);
  });

  it('one walk\'s snapshots before and after an object\'s fields change each restore their own fields (the field-name lists they share)', () => {
    const machine = machineLike();
    const walk = new HostWalk(undefined, machine.memory.buffer, new Set());
    const object: Record<string, unknown> = { a: 1, b: 2 };
    const roots = [{ object, list: [object] }];
    const take = (): Snapshot => takeSnapshot(machine, undefined, [], walk.keepAll(roots));
    const first = take();
    object.c = 3;
    const second = take();
    delete object.a; object.a = 4;
    const third = take();
    object.b = 5;
    const fourth = take();
    for (const [snapshot, expected] of [[first, { a: 1, b: 2 }], [third, { b: 2, c: 3, a: 4 }], [second, { a: 1, b: 2, c: 3 }], [fourth, { b: 5, c: 3, a: 4 }], [first, { a: 1, b: 2 }]] as const) {
      restoreSnapshot(machine, snapshot);
      expect(JSON.stringify(object)).toBe(JSON.stringify(expected));
    }
  });

  it('a generator cannot be kept', () => {
    const machine = machineLike();
    function* thread(): Generator<number> { yield 1; }
    expect(() => takeSnapshot(machine, undefined, [{ thread: thread() }])).toThrow(SnapshotUnsupported);
  });
});
