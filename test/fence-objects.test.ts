import { describe, it, expect } from 'vitest';
import { WddmError, RuntimeProcess, ReferenceDriver, createMachine, type DriverModule } from '../src/index.js';
import { world, globalOf, UINT64_MAX, processOf, osModules } from './helpers.js';

describe('fence storage', () => {
  it('NF-01 CurrentValue is one 64-bit word never seen torn; MonitoredValue lives elsewhere', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const f = app.createNativeFence({ hDevice, initialValue: 0xffff_ffffn });
    const g = globalOf(w, app, f.hSyncObject);
    expect(g.cvPhys % 8).toBe(0);
    expect(g.mvPhys % 8).toBe(0);
    expect(Math.floor(g.cvPhys / 4096)).not.toBe(Math.floor(g.mvPhys / 4096));
    // A value whose both halves change at once, from the CPU and from the GPU.
    app.signal({ objects: [f.hSyncObject], values: [0x1_0000_0000n] });
    expect(app.readFenceValue(f.hSyncObject)).toBe(0x1_0000_0000n);
    const q = app.createHwQueue({ hDevice });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 0x2_ffff_ffffn } }] });
    machine.run();
    const words = new Uint32Array(machine.memory.buffer, g.cvPhys, 2);
    expect([words[0], words[1]]).toEqual([0xffff_ffff, 2]);
    expect(app.readFenceValue(f.hSyncObject)).toBe(0x2_ffff_ffffn);
  });

  it('NF-12 non-shareable fences of one process share pages; a shareable fence has pages of its own', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const a = globalOf(w, app, app.createNativeFence({ hDevice }).hSyncObject);
    const b = globalOf(w, app, app.createNativeFence({ hDevice }).hSyncObject);
    expect(b.cvPhys - a.cvPhys).toBe(8);
    expect(Math.floor(a.cvPhys / 4096)).toBe(Math.floor(b.cvPhys / 4096));
    const pagesBefore = machine.summary().adapters[0].fencePages;
    const shared = globalOf(w, app, app.createNativeFence({ hDevice, flags: { shared: true } }).hSyncObject);
    expect(machine.summary().adapters[0].fencePages).toBe(pagesBefore + 2);
    expect(shared.cvPhys % 4096).toBe(0);
    const c = globalOf(w, app, app.createNativeFence({ hDevice }).hSyncObject);
    expect(Math.floor(c.cvPhys / 4096)).toBe(Math.floor(a.cvPhys / 4096)); // packing continues around it
    // Another process gets pages of its own.
    const other = machine.createProcess('other');
    const od = other.createDevice({ hAdapter: other.openAdapter(0) });
    const o = globalOf(w, other, other.createNativeFence({ hDevice: od }).hSyncObject);
    expect(Math.floor(o.cvPhys / 4096)).not.toBe(Math.floor(a.cvPhys / 4096));
  });

  it('NF-12 freed slots are reused and an empty page goes back to its region', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const handles = Array.from({ length: 600 }, () => app.createNativeFence({ hDevice }).hSyncObject);
    expect(machine.summary().adapters[0].fencePages).toBe(4); // 600 CVs → 2 pages, 600 MVs → 2 pages
    for (const h of handles) app.destroySynchronizationObject(h);
    expect(machine.summary().adapters[0].fencePages).toBe(0);
    expect(machine.summary().adapters[0].liveFences).toBe(0);
  });

  it('NF-13 DEFAULT lives in system memory, INTRA_GPU in local memory; each value has kernel, process and system-process VAs', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const adapter = machine.adapters[0];
    const sys = app.createNativeFence({ hDevice, type: 'DEFAULT' });
    const local = app.createNativeFence({ hDevice, type: 'INTRA_GPU' });
    const gs = globalOf(w, app, sys.hSyncObject), gl = globalOf(w, app, local.hSyncObject);
    expect(gs.cvPhys).toBeLessThan(adapter.localBase);
    expect(gs.cvPhys).toBeGreaterThanOrEqual(machine.systemBase);
    expect(gl.cvPhys).toBeGreaterThanOrEqual(adapter.localBase);
    expect(gl.cvPhys).toBeLessThan(adapter.privateBase);
    expect(gs.kernelCvVa).toBe(0xffff_8000_0000_0000n + BigInt(gs.cvPhys));
    const slot = app.kernel.slot;
    expect(adapter.core.gpuVaTranslate(slot, sys.mapping.CurrentValueGpuVa)).toBe(gs.cvPhys);
    expect(adapter.core.gpuVaTranslate(slot, sys.mapping.MonitoredValueGpuVa)).toBe(gs.mvPhys);
    expect(adapter.core.gpuVaTranslate(0, gs.systemCvVa)).toBe(gs.cvPhys); // MapToGpuSystemProcess (default on)
    expect(adapter.core.gpuVaTranslate(0, gs.systemMvVa)).toBe(gs.mvPhys);
    // The process's VA does not translate in another process's address space.
    expect(adapter.core.gpuVaTranslate(slot + 1, sys.mapping.CurrentValueGpuVa)).toBe(0);
  });

  it('NF-04 user mode reads CurrentValue through a read-only mapping and has no path to write it or to MonitoredValue', async () => {
    const w = await world();
    const { app, hDevice } = w;
    const f = app.createNativeFence({ hDevice, initialValue: 5n });
    expect(app.readMapping(f.mapping.CurrentValueCpuVa)).toBe(5n);
    expect(Object.keys(f.mapping).sort()).toEqual(['CurrentValueCpuVa', 'CurrentValueGpuVa', 'MonitoredValueGpuVa']);
    const g = globalOf(w, app, f.hSyncObject);
    expect(processOf(app).translateUser(f.mapping.CurrentValueCpuVa)).toBe(g.cvPhys);
    // MonitoredValue has no user mapping at all.
    expect([...processOf(app).userMappings.keys()].includes(g.mvPhys & ~0xfff)).toBe(false);
    expect(() => app.readMapping(f.mapping.MonitoredValueGpuVa)).toThrow(/not an 8-byte aligned address mapped/);
    const methods = Object.getOwnPropertyNames(RuntimeProcess.prototype);
    expect(methods.filter((m) => /write|setValue|monitored/i.test(m))).toEqual([]);
  });
});

describe('lifecycle and handles', () => {
  it('NF-14 create, open from an NT handle and destroy drive Create, Open, Close and Destroy', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const f = app.createNativeFence({ hDevice, flags: { shared: true } });
    const nt = app.shareObject(f.hSyncObject);
    const g = app.openNativeFenceFromNtHandle({ hNtHandle: nt, hDevice });
    app.closeHandle(nt);
    app.destroySynchronizationObject(f.hSyncObject);
    app.destroySynchronizationObject(g.hSyncObject);
    const ddis = machine.trace.events.filter((e) => e.kind === 'ddi' && /NativeFence$/.test(e.name)).map((e) => e.name);
    expect(ddis).toEqual(['DxgkDdiCreateNativeFence', 'DxgkDdiOpenNativeFence', 'DxgkDdiOpenNativeFence', 'DxgkDdiCloseNativeFence', 'DxgkDdiCloseNativeFence', 'DxgkDdiDestroyNativeFence']);
  });

  it('NF-15 a shared fence has one global handle and a local handle per process; the last one out destroys it', async () => {
    const w = await world({}, 'A');
    const { machine, app: A, hDevice } = w;
    const B = machine.createProcess('B');
    const hDeviceB = B.createDevice({ hAdapter: B.openAdapter(0) });
    const f = A.createNativeFence({ hDevice, flags: { shared: true } });
    const ntInB = A.duplicateHandle(A.shareObject(f.hSyncObject), B);
    const fb = B.openNativeFenceFromNtHandle({ hNtHandle: ntInB, hDevice: hDeviceB });
    for (const p of [A, B]) for (const h of [...processOf(p).ntHandles.keys()]) p.closeHandle(h);
    const opens = machine.trace.find({ kind: 'ddi', name: 'DxgkDdiOpenNativeFence' });
    const created = machine.trace.find({ kind: 'ddi', name: 'DxgkDdiCreateNativeFence returned' })[0].args.hGlobalNativeFence;
    expect(opens.map((e) => e.args.hGlobalNativeFence)).toEqual([created, created]);
    const locals = machine.trace.find({ kind: 'ddi', name: 'DxgkDdiOpenNativeFence returned' }).map((e) => e.args.hLocalNativeFence);
    expect(new Set(locals).size).toBe(2);
    const mark = machine.trace.events.length;
    A.destroySynchronizationObject(f.hSyncObject);
    let after = machine.trace.events.slice(mark).filter((e) => e.kind === 'ddi').map((e) => `${e.name} ${JSON.stringify(e.args)}`);
    expect(after).toEqual([`DxgkDdiCloseNativeFence {"hLocalNativeFence":${locals[0]}}`]);
    expect(B.readFenceValue(fb.hSyncObject)).toBe(0n); // still alive for B
    const mark2 = machine.trace.events.length;
    B.destroySynchronizationObject(fb.hSyncObject);
    after = machine.trace.events.slice(mark2).filter((e) => e.kind === 'ddi').map((e) => `${e.name} ${JSON.stringify(e.args)}`);
    expect(after).toEqual([`DxgkDdiCloseNativeFence {"hLocalNativeFence":${locals[1]}}`, `DxgkDdiDestroyNativeFence {"hGlobalNativeFence":${created}}`]);
  });

  it('NF-16 foreign, closed and destroyed handles and NT handles of non-shareable fences fail clearly and change nothing', async () => {
    const w = await world({}, 'A');
    const { machine, app: A, hDevice } = w;
    const B = machine.createProcess('B');
    const hDeviceB = B.createDevice({ hAdapter: B.openAdapter(0) });
    const f = A.createNativeFence({ hDevice });
    const before = machine.trace.events.length;
    expect(() => B.signal({ objects: [f.hSyncObject], values: [1n] })).toThrow(/belongs to process "A", not "B": a handle is valid only in the process that made it/);
    expect(() => B.createNativeFence({ hDevice })).toThrow(/hDevice 0x[0-9a-f]+ belongs to process "A"/);
    expect(() => A.shareObject(f.hSyncObject)).toThrow(/created without flags.shared/);
    expect(() => A.signal({ objects: [hDevice], values: [1n] })).toThrow(/is a device \(hDevice\); expected a sync object/);
    expect(machine.trace.events.length).toBe(before); // nothing happened
    const g = A.createNativeFence({ hDevice });
    A.destroySynchronizationObject(g.hSyncObject);
    expect(() => A.readFenceValue(g.hSyncObject)).toThrow(/was closed or destroyed in process "A"/);
    expect(() => A.destroySynchronizationObject(g.hSyncObject)).toThrow(WddmError);
    const shared = A.createNativeFence({ hDevice, flags: { shared: true } });
    const nt = A.shareObject(shared.hSyncObject);
    expect(() => B.openNativeFenceFromNtHandle({ hNtHandle: nt, hDevice: hDeviceB })).toThrow(/belongs to process "A"; duplicate it into "B" first/);
    // A failed call followed by a good one behaves as if the failed one never happened.
    A.signal({ objects: [f.hSyncObject], values: [3n] });
    expect(A.readFenceValue(f.hSyncObject)).toBe(3n);
    const err = (() => { try { B.signal({ objects: [f.hSyncObject], values: [1n] }); } catch (e) { return e as WddmError; } })()!;
    expect(err.status).toBe('INVALID_HANDLE');
    expect(err.parameter).toBe('objects[0]');
  });

  it('NF-14 a driver whose local handles are not its global ones plus one difference gets each handle\'s own at Close', async () => {
    // The OS keeps a fresh fence as a row that derives hLocalNativeFence from hGlobalNativeFence (src/os/fence-rows.ts);
    // a driver numbering its local handles otherwise must still get back the one Open gave for each handle.
    const opened: number[] = [], closed: number[] = [];
    class RenumberingDriver extends ReferenceDriver {
      private readonly own = new Map<number, number>();
      override openNativeFence(args: Parameters<ReferenceDriver['openNativeFence']>[0]): { hLocalNativeFence: number } {
        const hLocal = 0x5000_0000 + opened.length * (opened.length + 7); // differences from hGlobal that vary
        this.own.set(hLocal, super.openNativeFence(args).hLocalNativeFence);
        opened.push(hLocal);
        return { hLocalNativeFence: hLocal };
      }
      override closeNativeFence(args: Parameters<ReferenceDriver['closeNativeFence']>[0]): void {
        closed.push(args.hLocalNativeFence);
        const reference = this.own.get(args.hLocalNativeFence);
        if (reference === undefined) throw new Error(`unknown hLocalNativeFence 0x${args.hLocalNativeFence.toString(16)}`);
        super.closeNativeFence({ hLocalNativeFence: reference });
      }
    }
    const module: DriverModule = { name: 'renumbering', createDriver: (c) => new RenumberingDriver(c.hardware, c.core, c.options) };
    const machine = await createMachine({ seed: 5, adapters: [{ driver: { module } }] });
    const app = machine.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const fences = [0, 1, 2, 3].map((i) => app.createNativeFence({ hDevice, initialValue: BigInt(i) }).hSyncObject);
    app.signal({ objects: [fences[2]], values: [9n] });
    expect(fences.map((h) => app.readFenceValue(h))).toEqual([0n, 1n, 9n, 3n]);
    for (const h of [...fences].reverse()) app.destroySynchronizationObject(h);
    expect(closed).toEqual([...opened].reverse());
    expect(machine.summary().adapters[0].liveFences).toBe(0);
  });

  it('NF-14 rejects a type that is not DEFAULT or INTRA_GPU and unknown option keys, changing nothing', async () => {
    const { app, hDevice, machine } = await world();
    const live = machine.summary().adapters[0].liveFences;
    expect(() => app.createNativeFence({ hDevice, type: 'CROSS' as never })).toThrow(/type is "CROSS"; expected one of "DEFAULT", "INTRA_GPU"/);
    expect(() => app.createNativeFence({ hDevice, initialVal: 3n } as never)).toThrow(/unknown key "initialVal"/);
    expect(() => app.createNativeFence({ hDevice, flags: { shard: true } as never })).toThrow(/flags has unknown key "shard"/);
    expect(() => app.createNativeFence({ hDevice, flags: { crossAdapter: true }, type: 'INTRA_GPU' })).toThrow(/cross-adapter native fence must be of type DEFAULT/);
    expect(machine.summary().adapters[0].liveFences).toBe(live);
    expect(app.createNativeFence({ hDevice, type: 'INTRA_GPU' }).hSyncObject).toBeGreaterThan(0);
  });

  it('NF-19 values must be 64-bit unsigned', async () => {
    const { app, hDevice } = await world();
    const f = app.createNativeFence({ hDevice });
    expect(() => app.signal({ objects: [f.hSyncObject], values: [-1n] })).toThrow(/values\[0\] is -1n; expected a 64-bit unsigned value/);
    expect(() => app.signal({ objects: [f.hSyncObject], values: [1n << 64n] })).toThrow(/values\[0\] is 18446744073709551616n/);
    expect(() => app.signal({ objects: [f.hSyncObject], values: [1.5] })).toThrow(/expected a 64-bit unsigned value/);
    expect(() => app.signal({ objects: [f.hSyncObject], values: ['7' as never] })).toThrow(/values\[0\] is "7"/);
    expect(() => app.createNativeFence({ hDevice, initialValue: -3 })).toThrow(/initialValue is -3/);
    expect(app.readFenceValue(f.hSyncObject)).toBe(0n);
    app.signal({ objects: [f.hSyncObject], values: [UINT64_MAX] });
    expect(app.readFenceValue(f.hSyncObject)).toBe(UINT64_MAX);
  });
});

describe('fence state in one store (src/os/README.md, "Fences as rows: one store")', () => {
  it('a fence\'s view holds no state of its own: what a row key\'s path writes, the view made later reads; a destroyed view keeps answering when its core id is reused', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const rows = osModules(machine).adapters[0].rows;
    const f = app.createNativeFence({ hDevice, initialValue: 0n });
    const coreFence = processOf(app).handles.rowToken(f.hSyncObject) >>> 3;
    expect(osModules(machine).adapters[0].fences.peek(coreFence)).toBeUndefined(); // a row only
    void app.waitAsync({ objects: [f.hSyncObject], values: [7n] }); // the short path: the row's MonitoredValue moves
    expect(rows.monitoredValueOf(coreFence)).toBe(6n);
    const view = globalOf(w, app, f.hSyncObject); // the view made now reads the same row
    expect(view.monitoredValue).toBe(6n);
    view.monitoredValue = 5n;
    expect(rows.monitoredValueOf(coreFence)).toBe(5n);
    view.monitoredValue = 6n;
    app.signal({ objects: [f.hSyncObject], values: [7n] });
    machine.run();
    await Promise.resolve();
    const { hGlobal, cvPhys } = view;
    app.destroySynchronizationObject(f.hSyncObject);
    expect(view.destroyed).toBe(true);
    const g = app.createNativeFence({ hDevice, initialValue: 3n, name: 'next' });
    const next = globalOf(w, app, g.hSyncObject);
    expect(next.coreFence).toBe(coreFence); // the id is reused
    expect(next).not.toBe(view);
    // The destroyed view reads the copy of its last row, not the new fence's row.
    expect([view.label, view.destroyed, view.hGlobal, view.cvPhys, view.monitoredValue]).toEqual([`fence${coreFence}`, true, hGlobal, cvPhys, UINT64_MAX]);
    expect([next.label, next.destroyed, next.hGlobal === hGlobal]).toEqual(['next', false, false]);
  });
});
