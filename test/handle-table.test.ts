// Handle tables bounded by the live handles (issue 14f): handle values from a
// per-process sequence, slots reused, a closed handle still told apart.
import { describe, it, expect } from 'vitest';
import { WddmError } from '../src/index.js';
import { HandleTable, RecentValues } from '../src/os/tables.js';
import { world, processOf, osModules } from './helpers.js';

const entry = (handle: number) => ({ handle });

describe('handle tables', () => {
  it('NF-16 thousands of fences made and destroyed: a closed handle still fails as closed, the tables stay as small as the live handles', async () => {
    const { app, hDevice, machine } = await world();
    const keep = app.createNativeFence({ hDevice }).hSyncObject;
    const closed: number[] = [];
    for (let i = 0; i < 3000; i++) {
      const h = app.createNativeFence({ hDevice }).hSyncObject;
      app.signal({ objects: [h], values: [BigInt(i + 1)] });
      expect(app.readFenceValue(h)).toBe(BigInt(i + 1));
      app.destroySynchronizationObject(h);
      closed.push(h);
    }
    // Values are never handed out twice within a sequence: 3,000 distinct, each now closed.
    expect(new Set(closed).size).toBe(3000);
    for (const h of [closed[0], closed[1500], closed[2999]]) {
      expect(() => app.readFenceValue(h)).toThrow(/was closed or destroyed in process "app"/);
      try { app.signal({ objects: [h], values: [1n] }); } catch (error) { expect((error as WddmError).status).toBe('INVALID_HANDLE'); }
    }
    expect(() => app.readFenceValue(closed[2999] + 1)).toThrow(/is not a handle of process "app"/);
    expect(processOf(app).handles.size).toBe(3); // adapter, device, keep
    expect(processOf(app).handles.capacity).toBeLessThanOrEqual(64);
    expect(processOf(app).retired.size).toBe(3000);
    expect(app.readFenceValue(keep)).toBe(0n);
    expect(machine.summary().adapters[0].liveFences).toBe(1);
  });

  it('NF-16 a reused slot never resolves a stale handle to the new object, and a value comes back only when the sequence wraps', () => {
    const table = new HandleTable<{ handle: number }>(1000, 1, 16, 4);
    const a = table.allocate()!; table.set(a, entry(a));
    const b = table.allocate()!; table.set(b, entry(b));
    expect([a, b]).toEqual([1001, 1002]);
    table.delete(a);
    // Made and closed one at a time: each new value's slot is reused (4 slots), never by a stale value.
    const seen: number[] = [];
    for (let h = 0; h !== a && seen.length < 100;) {
      h = table.allocate()!;
      seen.push(h);
      table.set(h, entry(h));
      if (h !== a) expect(table.get(a)).toBeUndefined();
      expect(table.get(b)).toEqual(entry(b));
      table.delete(h);
    }
    // The closed value a comes back only once the sequence wrapped at 16; the live b never came out.
    expect(seen.at(-1)).toBe(a);
    const before = seen.slice(0, -1);
    expect(new Set(before).size).toBe(before.length);
    expect(before.every((h) => h > b && h < 1016)).toBe(true);
    expect(before.length).toBeGreaterThanOrEqual(9);
    expect(table.wasIssued(1015)).toBe(true);
  });

  it('a table refuses a handle past its last free value, grows past half full and shrinks back', () => {
    const table = new HandleTable<{ handle: number }>(0, 4, 64, 4);
    const live: number[] = [];
    for (let i = 0; i < 63; i++) { const h = table.allocate()!; table.set(h, entry(h)); live.push(h); }
    expect(live[62]).toBe(4 * 63);
    expect(table.capacity).toBe(64);
    expect(table.allocate()).toBeUndefined(); // all 63 values in use
    expect(table.get(6)).toBeUndefined(); // not a multiple of the stride
    for (const h of live.slice(0, 60)) table.delete(h);
    expect(table.size).toBe(3);
    expect(table.capacity).toBeLessThanOrEqual(16); // 64 → 32 → 16: halved while under an eighth full
    expect([...table.keys()].sort((x, y) => x - y)).toEqual(live.slice(60));
    for (const h of live.slice(60)) expect(table.get(h)).toEqual(entry(h));
  });

  it('NF-16 a lookup finds only a live handle value of the range: fractions, off-stride values, NaN, the range ends and past them are nobody', () => {
    // The NT-handle shape (stride 4) above 2^30, where handles are not small integers, and a stride-1 range.
    for (const [start, stride] of [[0x8000_0000 + 3 * 0x10_0000, 4], [0x4000_0000 + 3 * 0x10_0000, 1]] as const) {
      const table = new HandleTable<{ handle: number }>(start, stride, 1024, 4);
      const live: number[] = [];
      for (let i = 0; i < 5; i++) { const h = table.allocate()!; table.set(h, entry(h)); live.push(h); }
      expect(live[0]).toBe(start + stride);
      for (const h of live) {
        expect(table.get(h)).toEqual(entry(h));
        expect(table.objectAt(h)).toEqual(entry(h));
        expect(table.has(h)).toBe(true);
      }
      const nobody = [start, start - stride, start + stride * 1024, start + stride * 1025, start + 0.5, live[1] + 0.25, live[1] - 0.5,
        NaN, Infinity, -Infinity, -live[1], 0];
      if (stride > 1) nobody.push(live[1] + 1, live[1] + 2, live[1] + 3, live[1] - 1);
      for (const h of nobody) {
        expect(table.get(h), `get(${h})`).toBeUndefined();
        expect(table.objectAt(h), `objectAt(${h})`).toBeUndefined();
        expect(table.has(h), `has(${h})`).toBe(false);
      }
    }
  });

  it('a handle allocated and never handed out is not reported as closed', () => {
    const table = new HandleTable<{ handle: number }>(0, 1, 16, 4);
    const h = table.allocate()!;
    table.forget(h);
    expect(table.wasIssued(h)).toBe(false);
    expect(table.allocate()).toBe(h);
  });
  it('NF-16 after the handle sequence wraps, a new handle never takes the value of a live allocation (allocations are not in the handle table)', async () => {
    const { app, hDevice } = await world();
    const hFirst = app.createNativeFence({ hDevice }).hSyncObject;
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096, name: 'kept' });
    app.destroySynchronizationObject(hFirst);
    // Wind the process's sequence once round (values handed out and never entered) until it is back at hFirst:
    // the next value the sequence reaches is the live allocation's.
    let wound = 0;
    for (let value = 0; value !== hFirst; wound++) {
      if (wound > processOf(app).handles.space + 8) throw new Error('the handle sequence did not come back round');
      value = processOf(app).handles.allocate()!;
    }
    expect(wound).toBeGreaterThan(0xF_0000);
    const hNext = app.createNativeFence({ hDevice }).hSyncObject;
    expect(hNext).not.toBe(hAllocation);
    expect(hNext).not.toBe(hFirst);
    app.signal({ objects: [hNext], values: [7n] });
    expect(app.readFenceValue(hNext)).toBe(7n);
    // The allocation is still itself: it locks and is destroyed by its handle.
    app.lock2({ hDevice, hAllocation });
    app.destroyAllocation2({ hDevice, hAllocations: [hAllocation] });
    expect(processOf(app).otherLiveHandles.has(hAllocation)).toBe(false);
  });
  it('NF-16 RecentValues remembers the last `capacity` destroyed handles, no more, and holds only what was added', () => {
    const recent = new RecentValues(4);
    expect(recent.has(0)).toBe(false);
    for (let value = 1; value <= 6; value++) recent.add(value);
    expect([1, 2, 3, 4, 5, 6].map((value) => recent.has(value))).toEqual([false, false, true, true, true, true]);
    recent.add(7);
    expect([3, 4, 7].map((value) => recent.has(value))).toEqual([false, true, true]);
  });
});

describe('refusals leave rows as rows', () => {
  it('NF-16 a fresh fence named where a device, a queue or an allocation is expected is refused as a sync object, and stays a row (nothing made)', async () => {
    const { app, machine } = await world();
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const { hSyncObject } = app.createNativeFence({ hDevice });
    expect(processOf(app).handles.isRow(hSyncObject)).toBe(true); // nothing has looked it up yet
    const rowsBefore = (({ fences }) => fences.size - fences.viewed)(osModules(machine).adapters[0]);
    const refusals: [string, () => unknown][] = [
      ['hDevice', () => app.createHwQueue({ hDevice: hSyncObject })],
      ['hHwQueue', () => app.destroyHwQueue(hSyncObject)],
      ['hAllocation', () => app.lock2({ hDevice, hAllocation: hSyncObject })],
    ];
    for (const [parameter, call] of refusals) {
      let error: unknown;
      try { call(); } catch (thrown) { error = thrown; }
      expect(error, parameter).toBeInstanceOf(WddmError);
      expect((error as WddmError).status, parameter).toBe('OBJECT_TYPE_MISMATCH');
      expect((error as WddmError).message, parameter).toContain('is a sync object');
      expect(processOf(app).handles.isRow(hSyncObject), parameter).toBe(true);
    }
    expect((({ fences }) => fences.size - fences.viewed)(osModules(machine).adapters[0])).toBe(rowsBefore);
    // The first real lookup still makes it, and the fence works.
    app.signal({ objects: [hSyncObject], values: [5n] });
    expect(processOf(app).handles.isRow(hSyncObject)).toBe(false);
    expect(app.readFenceValue(hSyncObject)).toBe(5n);
  });
});
