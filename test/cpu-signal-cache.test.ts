// The one-fence CPU signal's short path keeps its last lookup (src/os/signals.ts, signalOne: the handle, its table,
// the table's editStamp and the sync object) and the reference driver keeps the last fence record it wrote
// (writeCurrentValue). Both are caches: each use is checked against the handle table or linear memory as they are now. These tests
// make the cached entry stale every way it can go stale (closed, its slot taken by another handle, the table
// resized, a snapshot restored, another machine with the same handle values) and expect what a lookup expects.
import { describe, it, expect } from 'vitest';
import { createMachine, WddmError, type Machine, type RuntimeProcess } from '../src/index.js';
import { takeSnapshot, restoreSnapshot } from '../src/explore/snapshot.js';
import type { ReferenceDriver } from '../src/driver/reference.js';
import { buildWorld, type ExploreModel } from '../src/explore/model.js';
import { StateKeys } from '../src/explore/state.js';
import { globalOf, world, processOf, osModules } from './helpers.js';

/** What a call threw, as `status: message`, or 'ok'. */
function outcome(call: () => void): string {
  try {
    call();
    return 'ok';
  } catch (error) {
    if (error instanceof WddmError) return `${error.status}: ${error.message}`;
    throw error;
  }
}

/** The slot of the process's handle table that `handle` is in (handles are 0x40000000 + process slot × 0x100000 + n, n in slot n mod the table's size). */
const slotOf = (app: RuntimeProcess, handle: number): number => (handle - (0x4000_0000 + app.kernel.slot * 0x10_0000)) & (processOf(app).handles.capacity - 1);

describe('the one-fence CPU signal short path: its last lookup', () => {
  it('NF-07 a handle closed since it was last signalled is refused as closed, also once another handle takes its table slot', async () => {
    const { app, hDevice } = await world({ trace: false });
    const first = app.createNativeFence({ hDevice }).hSyncObject;
    app.signal({ objects: [first], values: [1n] }); // the short path keeps `first`
    app.destroySynchronizationObject(first);
    const closed = outcome(() => app.signal({ objects: [first], values: [2n] }));
    expect(closed).toMatch(/^INVALID_HANDLE: objects\[0\] 0x[0-9a-f]+ was closed or destroyed in process "app"$/);
    // A new fence in the slot `first` had (made and destroyed until one lands there; the table keeps its size).
    let other = 0;
    for (let tries = 0; tries < 1000 && other === 0; tries++) {
      const h = app.createNativeFence({ hDevice }).hSyncObject;
      if (slotOf(app, h) === slotOf(app, first)) other = h;
      else app.destroySynchronizationObject(h);
    }
    expect(other).not.toBe(0);
    expect(other).not.toBe(first);
    expect(outcome(() => app.signal({ objects: [first], values: [3n] }))).toBe(closed);
    app.signal({ objects: [other], values: [4n] });
    expect(outcome(() => app.signal({ objects: [first], values: [5n] }))).toBe(closed);
    expect(app.readFenceValue(other)).toBe(4n);
  });

  it('NF-07 the last signalled handle reaches its fence after its handle table grows and shrinks (its slot moves)', async () => {
    const { app, hDevice } = await world({ trace: false });
    const before = Array.from({ length: 300 }, () => app.createNativeFence({ hDevice }).hSyncObject);
    const fence = app.createNativeFence({ hDevice }).hSyncObject;
    const slotBefore = slotOf(app, fence);
    app.signal({ objects: [fence], values: [1n] });
    for (const h of before) app.destroySynchronizationObject(h); // the table shrinks
    const after = Array.from({ length: 5 }, () => app.createNativeFence({ hDevice }).hSyncObject);
    expect(slotOf(app, fence)).not.toBe(slotBefore);
    app.signal({ objects: [fence], values: [2n] });
    expect(app.readFenceValue(fence)).toBe(2n);
    for (const h of after) expect(app.readFenceValue(h)).toBe(0n);
    for (const h of after) app.signal({ objects: [h], values: [7n] });
    app.signal({ objects: [fence], values: [3n] });
    expect([fence, ...after].map((h) => app.readFenceValue(h))).toEqual([3n, 7n, 7n, 7n, 7n, 7n]);
  });

  it('NF-07 two machines whose processes hold the same handle values: each signal reaches its own machine\'s fence', async () => {
    const machines: Machine[] = [await createMachine({ seed: 1, trace: false }), await createMachine({ seed: 2, trace: false })];
    const apps = machines.map((m) => m.createProcess('app'));
    const handles = apps.map((app) => app.createNativeFence({ hDevice: app.createDevice({ hAdapter: app.openAdapter(0) }) }).hSyncObject);
    expect(handles[0]).toBe(handles[1]);
    for (let i = 1; i <= 6; i++) apps[i % 2].signal({ objects: [handles[i % 2]], values: [BigInt(i * (i % 2 ? 10 : 1))] });
    expect(apps.map((app, i) => app.readFenceValue(handles[i]))).toEqual([6n, 50n]);
  });

  it('NF-07 after a snapshot is restored the short path follows the restored handle table (a handle made after the snapshot is gone; made again, it names the new fence)', async () => {
    const { machine, app, hDevice } = await world({ trace: false });
    const kept = app.createNativeFence({ hDevice }).hSyncObject;
    const snapshot = takeSnapshot(machine);
    const made = app.createNativeFence({ hDevice }).hSyncObject;
    app.signal({ objects: [made], values: [3n] }); // the short path keeps `made`
    restoreSnapshot(machine, snapshot);
    expect(outcome(() => app.signal({ objects: [made], values: [4n] }))).toMatch(/^INVALID_HANDLE: objects\[0\] 0x[0-9a-f]+ is not a handle of process "app"$/);
    const again = app.createNativeFence({ hDevice, initialValue: 10n }).hSyncObject;
    expect(again).toBe(made); // the restored sequence issues the same value again
    app.signal({ objects: [again], values: [11n] });
    expect(app.readFenceValue(again)).toBe(11n);
    app.signal({ objects: [kept], values: [1n] });
    expect(app.readFenceValue(kept)).toBe(1n);
  });
});

describe('the handle table\'s editStamp and the race explorer', () => {
  it('the state key leaves a handle table\'s editStamp out: two worlds built alike have one key though their tables\' stamps differ', () => {
    const model: ExploreModel = { machine: { fences: 2, waiters: 1, signals: 1, engines: 1, adapters: 1, cpuSignals: 1 }, variant: 'barrier', seed: 1, osGranularity: 'step' };
    const worlds = [buildWorld(model), buildWorld(model)];
    // Each machine has a clock of its own (two machines share nothing): the second world's tables took stamps further on.
    for (const p of osModules(worlds[1].machine).handles.processes) p.handles.editStamp += 1000;
    const stamps = worlds.map((w) => osModules(w.machine).handles.processes.map((p) => p.handles.editStamp));
    for (const list of stamps) expect(list.some((stamp) => stamp > 0)).toBe(true);
    expect(stamps[0]).not.toEqual(stamps[1]);
    expect(new StateKeys(worlds[0]).key()).toBe(new StateKeys(worlds[1]).key());
  });
});

describe('the reference driver: its last fence record', () => {
  it('NF-07 a one-fence update of a fence destroyed since the driver last wrote it is refused, as is its handle once the core id is reused', async () => {
    const w = await world({ trace: false });
    const { machine, app, hDevice } = w;
    const driver = machine.adapter(0).driver as unknown as ReferenceDriver;
    const h = app.createNativeFence({ hDevice }).hSyncObject;
    const { hGlobal, coreFence } = globalOf(w, app, h);
    app.signal({ objects: [h], values: [5n] }); // the driver keeps h's record
    driver.updateOneCurrentValueFromCpu(hGlobal, 6n, 0n);
    expect(app.readFenceValue(h)).toBe(6n);
    app.destroySynchronizationObject(h);
    const unknown = `DxgkDdiUpdateCurrentValuesFromCpu: unknown hGlobalNativeFence 0x${hGlobal.toString(16)}`;
    expect(() => driver.updateOneCurrentValueFromCpu(hGlobal, 7n, 0n)).toThrow(unknown);
    // A new fence in the same core record: another handle (the driver's handles carry a generation).
    const next = app.createNativeFence({ hDevice }).hSyncObject;
    const nextGlobal = globalOf(w, app, next);
    expect(nextGlobal.coreFence).toBe(coreFence);
    expect(nextGlobal.hGlobal).not.toBe(hGlobal);
    expect(() => driver.updateOneCurrentValueFromCpu(hGlobal, 8n, 0n)).toThrow(unknown);
    expect(app.readFenceValue(next)).toBe(0n);
    driver.updateOneCurrentValueFromCpu(nextGlobal.hGlobal, 9n, 0n);
    expect(app.readFenceValue(next)).toBe(9n);
  });
});
