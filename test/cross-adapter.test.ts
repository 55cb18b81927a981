// Cross-adapter native fences: XA-01..04, XA-06 (scenario 1), XA-07 (doorbell).
import { describe, it, expect } from 'vitest';
import { createMachine, WddmError, type Machine, type MachineOptions, type RuntimeProcess } from '../src/index.js';
import { globalOf, monitoredValue, ddiCalls } from './helpers.js';
import { runScenario, runScenarioPairs, rowsFor, compareDoorbell, doorbellComparisonText } from '../src/comparisons/cross-adapter-tables.js';

interface Pair {
  machine: Machine; app: RuntimeProcess; iDevice: number; dDevice: number;
  onD: { hSyncObject: number }; onI: { hSyncObject: number }; nt: number;
}

async function pair(options: MachineOptions = {}): Promise<Pair> {
  const machine = await createMachine({
    seed: 4, adapters: [{ name: 'iGPU', integrated: true, engines: 1 }, { name: 'dGPU', engines: 1 }], ...options,
  });
  const app = machine.createProcess('app');
  const iDevice = app.createDevice({ hAdapter: app.openAdapter('iGPU') });
  const dDevice = app.createDevice({ hAdapter: app.openAdapter('dGPU') });
  const onD = app.createNativeFence({ hDevice: dDevice, flags: { shared: true, crossAdapter: true }, name: 'F' });
  const nt = app.shareObject(onD.hSyncObject);
  const onI = app.openNativeFenceFromNtHandle({ hNtHandle: nt, hDevice: iDevice });
  machine.run();
  return { machine, app, iDevice, dDevice, onD, onI, nt };
}

const interruptsOf = (m: Machine, name: string) => m.summary().adapters.find((a) => a.name === name)!.interruptsRaised;

function expectWddmError(call: () => unknown, status: string, parameter?: string): WddmError {
  let caught: unknown;
  try { call(); } catch (error) { caught = error; }
  expect(caught).toBeInstanceOf(WddmError);
  const e = caught as WddmError;
  expect(e.status).toBe(status);
  if (parameter) expect(e.parameter).toBe(parameter);
  return e;
}

describe('XA-01 type', () => {
  it('XA-01 a cross-adapter native fence of type INTRA_GPU fails creation; DEFAULT succeeds after it', async () => {
    const machine = await createMachine({ seed: 1, adapters: [{ name: 'iGPU' }, { name: 'dGPU' }] });
    const app = machine.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter('dGPU') });
    const live = () => machine.summary().adapters[1].liveFences;
    const before = live();
    const e = expectWddmError(() => app.createNativeFence({ hDevice, type: 'INTRA_GPU', flags: { crossAdapter: true } }), 'INVALID_PARAMETER', 'type');
    expect(e.message).toMatch(/cross-adapter native fence must be of type DEFAULT/);
    expect(live()).toBe(before);
    expect(ddiCalls(machine, 'DxgkDdiCreateNativeFence')).toHaveLength(0);
    const good = app.createNativeFence({ hDevice, type: 'DEFAULT', flags: { crossAdapter: true } });
    expect(good.hSyncObject).toBeGreaterThan(0);
    expect(live()).toBe(before + 1);
  });
});

describe('XA-02 one CurrentValue', () => {
  it('XA-02 every adapter\'s GPU VA of the fence maps the same physical word in system memory', async () => {
    const p = await pair();
    const gd = globalOf(p, p.app, p.onD.hSyncObject);
    const gi = globalOf(p, p.app, p.onI.hSyncObject);
    expect(gi).not.toBe(gd);
    expect(gi.adapter.name).toBe('iGPU');
    expect(gi.cvPhys).toBe(gd.cvPhys);
    expect(gi.mvPhys).not.toBe(gd.mvPhys); // each adapter its own MonitoredValue
    // system memory: inside the system region, not in either adapter's local memory
    const sys = p.machine.systemBase;
    expect(gd.cvPhys).toBeGreaterThanOrEqual(sys);
    expect(gd.cvPhys).toBeLessThan(sys + (4 << 20));
    const slot = p.app.kernel.slot;
    const localD = p.machine.os.inspect.handleOf(p.app.kernel, p.onD.hSyncObject);
    const localI = p.machine.os.inspect.handleOf(p.app.kernel, p.onI.hSyncObject);
    expect(p.machine.adapter('dGPU').core.gpuVaTranslate(slot, localD.cvGpuVa)).toBe(gd.cvPhys);
    expect(p.machine.adapter('iGPU').core.gpuVaTranslate(slot, localI.cvGpuVa)).toBe(gd.cvPhys);
    // a GPU write on the dGPU is what the iGPU's handle reads
    const q = p.app.createHwQueue({ hDevice: p.dDevice, nativeProgressFence: false });
    p.app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: p.onD.hSyncObject, value: 0x1_0000_0007n } }] });
    p.machine.run();
    expect(p.app.readFenceValue(p.onI.hSyncObject)).toBe(0x1_0000_0007n);
  });

  it('XA-02 a fence without flags.crossAdapter does not open on another adapter; the same open on its own adapter works', async () => {
    const machine = await createMachine({ seed: 1, adapters: [{ name: 'iGPU' }, { name: 'dGPU' }] });
    const app = machine.createProcess('app');
    const iDevice = app.createDevice({ hAdapter: app.openAdapter('iGPU') });
    const dDevice = app.createDevice({ hAdapter: app.openAdapter('dGPU') });
    const f = app.createNativeFence({ hDevice: dDevice, flags: { shared: true } });
    const nt = app.shareObject(f.hSyncObject);
    const fences = () => machine.summary().adapters.map((a) => a.liveFences);
    const before = fences();
    const e = expectWddmError(() => app.openNativeFenceFromNtHandle({ hNtHandle: nt, hDevice: iDevice }), 'INVALID_PARAMETER', 'hDevice');
    expect(e.message).toMatch(/only cross-adapter fences/);
    expect(fences()).toEqual(before);
    const again = app.openNativeFenceFromNtHandle({ hNtHandle: nt, hDevice: dDevice });
    expect(app.readFenceValue(again.hSyncObject)).toBe(0n);
  });

  it('XA-02 an NT handle or a process of another machine is refused clearly and changes nothing', async () => {
    const p = await pair();
    const other = await createMachine({ seed: 2, adapters: [{ name: 'iGPU' }, { name: 'dGPU' }] });
    const stranger = other.createProcess('app');
    const strangerDevice = stranger.createDevice({ hAdapter: stranger.openAdapter('iGPU') });
    // the NT handle value means nothing in the other machine's process
    const e = expectWddmError(() => stranger.openNativeFenceFromNtHandle({ hNtHandle: p.nt, hDevice: strangerDevice }), 'INVALID_HANDLE', 'hNtHandle');
    expect(e.message).toMatch(/not an NT handle of process/);
    // and it cannot be duplicated across machines
    expectWddmError(() => p.app.duplicateHandle(p.nt, stranger), 'INVALID_PARAMETER', 'target');
    expect(other.summary().adapters.map((a) => a.liveFences)).toEqual([0, 0]);
    // the fence still works in its own machine
    p.app.signal({ objects: [p.onD.hSyncObject], values: [3n] });
    expect(p.app.readFenceValue(p.onI.hSyncObject)).toBe(3n);
  });
});

describe('XA-02 edges', () => {
  it('XA-02 a second open on the same adapter reuses that adapter\'s record', async () => {
    const p = await pair();
    const again = p.app.openNativeFenceFromNtHandle({ hNtHandle: p.nt, hDevice: p.iDevice });
    expect(globalOf(p, p.app, again.hSyncObject)).toBe(globalOf(p, p.app, p.onI.hSyncObject));
    expect(p.machine.summary().adapters.map((a) => a.liveFences)).toEqual([1, 1]);
  });

  it('the scenario traces are byte-identical for the same seed', async () => {
    const a = await runScenario('1', 'gpu', 'cpu', 5);
    const b = await runScenario('1', 'gpu', 'cpu', 5);
    expect(a.machine.trace.text()).toBe(b.machine.trace.text());
    expect(JSON.stringify(a.machine.trace.json())).toBe(JSON.stringify(b.machine.trace.json()));
  });
});

describe('XA-03 MonitoredValue held at 0', () => {
  it('XA-03 each adapter\'s MonitoredValue is 0 from creation and stays 0 while CPU waiters come and go', async () => {
    const p = await pair();
    expect(monitoredValue(p, p.app, p.onD.hSyncObject)).toBe(0n);
    expect(monitoredValue(p, p.app, p.onI.hSyncObject)).toBe(0n);
    const updatesBefore = ddiCalls(p.machine, 'DxgkDdiUpdateMonitoredValues').length;
    const waiter = p.app.createThread('waiter', function* (cpu) {
      yield cpu.wait({ objects: [p.onI.hSyncObject], values: [5n] });
      yield cpu.wait({ objects: [p.onD.hSyncObject], values: [6n] });
    });
    p.machine.run();
    expect(monitoredValue(p, p.app, p.onI.hSyncObject)).toBe(0n); // a waiter for 5 would make it 4 on an ordinary fence
    p.app.signal({ objects: [p.onD.hSyncObject], values: [6n] });
    p.machine.run();
    expect(waiter.state).toBe('done');
    expect(monitoredValue(p, p.app, p.onD.hSyncObject)).toBe(0n);
    expect(monitoredValue(p, p.app, p.onI.hSyncObject)).toBe(0n);
    expect(ddiCalls(p.machine, 'DxgkDdiUpdateMonitoredValues').length).toBe(updatesBefore);
  });

  it('XA-03 every GPU signal of a cross-adapter fence interrupts, with no CPU waiter anywhere; an ordinary fence does not', async () => {
    const p = await pair();
    const plain = p.app.createNativeFence({ hDevice: p.dDevice, name: 'plain' });
    const q = p.app.createHwQueue({ hDevice: p.dDevice, nativeProgressFence: false });
    const before = interruptsOf(p.machine, 'dGPU');
    p.app.submit({ hHwQueue: q.hHwQueue, commands: [1n, 2n, 3n].flatMap((v) => [{ work: { durationNs: 10_000 } }, { signal: { hSyncObject: plain.hSyncObject, value: v } }]) });
    p.machine.run();
    expect(interruptsOf(p.machine, 'dGPU')).toBe(before);
    p.app.submit({ hHwQueue: q.hHwQueue, commands: [1n, 2n, 3n].flatMap((v) => [{ work: { durationNs: 10_000 } }, { signal: { hSyncObject: p.onD.hSyncObject, value: v } }]) });
    p.machine.run();
    expect(interruptsOf(p.machine, 'dGPU')).toBe(before + 3);
    expect(p.machine.os.inspect.pendingWaiters).toBe(0);
  });
});

describe('XA-04 propagation', () => {
  it('XA-04 a GPU signal on the dGPU reaches the iGPU: NotificationOnly, its queue unblocks, its CPU waiter wakes', async () => {
    const p = await pair();
    const qi = p.app.createHwQueue({ hDevice: p.iDevice, nativeProgressFence: false, name: 'consumer' });
    p.app.submit({ hHwQueue: qi.hHwQueue, commands: [{ wait: { hSyncObject: p.onI.hSyncObject, value: 2n } }] });
    const waiter = p.app.createThread('cpu', function* (cpu) { return yield cpu.wait({ objects: [p.onI.hSyncObject], values: [2n] }); });
    p.machine.run();
    expect(p.machine.adapter('iGPU').hardware.blockedQueues()).toBe(1);
    const qd = p.app.createHwQueue({ hDevice: p.dDevice, nativeProgressFence: false });
    p.app.submit({ hHwQueue: qd.hHwQueue, commands: [{ signal: { hSyncObject: p.onD.hSyncObject, value: 2n } }] });
    p.machine.run();
    const notes = ddiCalls(p.machine, 'DxgkDdiUpdateCurrentValuesFromCpu').filter((e) => e.actor === 'iGPU');
    expect(notes).toHaveLength(1);
    expect(notes[0].args.NotificationOnly).toBe(true);
    expect(notes[0].args.NativeFenceArray).toEqual([globalOf(p, p.app, p.onI.hSyncObject).hGlobal]);
    expect(p.machine.adapter('iGPU').hardware.blockedQueues()).toBe(0);
    expect(waiter.state).toBe('done');
    expect(p.machine.os.inspect.lostWakeups()).toEqual([]);
  });

  it('XA-04 a CPU signal through the iGPU handle reaches the dGPU\'s waiting queue; nothing is written twice', async () => {
    const p = await pair();
    const qd = p.app.createHwQueue({ hDevice: p.dDevice, nativeProgressFence: false });
    p.app.submit({ hHwQueue: qd.hHwQueue, commands: [{ wait: { hSyncObject: p.onD.hSyncObject, value: 9n } }] });
    p.machine.run();
    expect(p.machine.adapter('dGPU').hardware.blockedQueues()).toBe(1);
    p.app.signal({ objects: [p.onI.hSyncObject], values: [9n] });
    p.machine.run();
    const calls = ddiCalls(p.machine, 'DxgkDdiUpdateCurrentValuesFromCpu');
    expect(calls.map((e) => [e.actor, e.args.NotificationOnly])).toEqual([['iGPU', false], ['dGPU', true]]);
    expect(p.machine.adapter('dGPU').hardware.blockedQueues()).toBe(0);
    expect(p.app.readFenceValue(p.onD.hSyncObject)).toBe(9n);
  });

  it('XA-04 with three adapters one signal reaches both others, one batched call per adapter', async () => {
    const machine = await createMachine({ seed: 3, adapters: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] });
    const app = machine.createProcess('app');
    const devices = ['a', 'b', 'c'].map((n) => app.createDevice({ hAdapter: app.openAdapter(n) }));
    const f1 = app.createNativeFence({ hDevice: devices[0], flags: { shared: true, crossAdapter: true }, name: 'f1' });
    const f2 = app.createNativeFence({ hDevice: devices[0], flags: { shared: true, crossAdapter: true }, name: 'f2' });
    for (const f of [f1, f2]) {
      const nt = app.shareObject(f.hSyncObject);
      app.openNativeFenceFromNtHandle({ hNtHandle: nt, hDevice: devices[1] });
      app.openNativeFenceFromNtHandle({ hNtHandle: nt, hDevice: devices[2] });
    }
    app.signal({ objects: [f1.hSyncObject, f2.hSyncObject], values: [4n, 5n] });
    const notes = ddiCalls(machine, 'DxgkDdiUpdateCurrentValuesFromCpu').filter((e) => e.args.NotificationOnly === true);
    expect(notes.map((e) => [e.actor, e.args.NumFences])).toEqual([['b', 2], ['c', 2]]);
    expect(machine.os.inspect.crossAdapterCounters.propagations).toBe(4);
  });

  it('XA-04 an interrupt with no list propagates every cross-adapter fence of that adapter', async () => {
    const p = await pair({ adapters: [{ name: 'iGPU', integrated: true, engines: 1 }, { name: 'dGPU', engines: 1, interrupts: { payload: 'noList' } }] });
    const qi = p.app.createHwQueue({ hDevice: p.iDevice, nativeProgressFence: false });
    p.app.submit({ hHwQueue: qi.hHwQueue, commands: [{ wait: { hSyncObject: p.onI.hSyncObject, value: 1n } }] });
    p.machine.run();
    const qd = p.app.createHwQueue({ hDevice: p.dDevice, nativeProgressFence: false });
    p.app.submit({ hHwQueue: qd.hHwQueue, commands: [{ signal: { hSyncObject: p.onD.hSyncObject, value: 1n } }] });
    p.machine.run();
    const interrupt = p.machine.trace.find({ kind: 'interrupt', actor: 'dGPU' });
    expect(interrupt.length).toBeGreaterThan(0);
    expect(interrupt.every((e) => e.args.pSignaledNativeFenceArray === 'NULL')).toBe(true);
    expect(p.machine.trace.find({ kind: 'os', name: 'cross-adapter signal propagated' }).map((e) => e.args.to)).toContain('iGPU');
    expect(p.machine.adapter('iGPU').hardware.blockedQueues()).toBe(0);
  });

  it('XA-04 an optimized interrupt (a queue named, no fence list) still propagates the cross-adapter signal', async () => {
    const p = await pair({ adapters: [{ name: 'iGPU', integrated: true, engines: 1 }, { name: 'dGPU', engines: 1, caps: { optimizedNativeFenceSignaledInterrupt: true } }] });
    const qi = p.app.createHwQueue({ hDevice: p.iDevice, nativeProgressFence: false });
    p.app.submit({ hHwQueue: qi.hHwQueue, commands: [{ wait: { hSyncObject: p.onI.hSyncObject, value: 1n } }] });
    p.machine.run();
    const qd = p.app.createHwQueue({ hDevice: p.dDevice, nativeProgressFence: false });
    p.app.submit({ hHwQueue: qd.hHwQueue, commands: [{ signal: { hSyncObject: p.onD.hSyncObject, value: 1n } }] });
    p.machine.run();
    expect(p.machine.trace.find({ kind: 'interrupt', actor: 'dGPU' }).some((e) => e.args.hHWQueue !== 0)).toBe(true);
    expect(p.machine.adapter('iGPU').hardware.blockedQueues()).toBe(0);
  });

  it('XA-04 a GPU reset of the creating adapter signals the shared word to UINT64_MAX and the other adapter\'s waiters wake', async () => {
    const p = await pair();
    const qi = p.app.createHwQueue({ hDevice: p.iDevice, nativeProgressFence: false });
    p.app.submit({ hHwQueue: qi.hHwQueue, commands: [{ wait: { hSyncObject: p.onI.hSyncObject, value: 50n } }] });
    const waiter = p.app.createThread('w', function* (cpu) { return yield cpu.wait({ objects: [p.onI.hSyncObject], values: [60n] }); });
    p.machine.run();
    p.machine.removeDevice('dGPU');
    p.machine.run();
    expect(waiter.state).toBe('done');
    expect(p.machine.adapter('iGPU').hardware.blockedQueues()).toBe(0);
    expect(p.app.readFenceValue(p.onI.hSyncObject)).toBe(0xffff_ffff_ffff_ffffn);
  });

  it('XA-04 a bug-checked adapter is left out of propagation; the others still get the signal', async () => {
    const machine = await createMachine({ seed: 3, adapters: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] });
    const app = machine.createProcess('app');
    const devices = ['a', 'b', 'c'].map((n) => app.createDevice({ hAdapter: app.openAdapter(n) }));
    const f = app.createNativeFence({ hDevice: devices[0], flags: { shared: true, crossAdapter: true } });
    const nt = app.shareObject(f.hSyncObject);
    app.openNativeFenceFromNtHandle({ hNtHandle: nt, hDevice: devices[1] });
    const onC = app.openNativeFenceFromNtHandle({ hNtHandle: nt, hDevice: devices[2] });
    const waiter = app.createThread('w', function* (cpu) { return yield cpu.wait({ objects: [onC.hSyncObject], values: [2n] }); });
    machine.run();
    machine.os.bugCheckAdapter(machine.adapter('b').index, 'TEST', 'stopped by the test');
    app.signal({ objects: [f.hSyncObject], values: [2n] });
    machine.run();
    const notes = ddiCalls(machine, 'DxgkDdiUpdateCurrentValuesFromCpu').filter((e) => e.args.NotificationOnly === true);
    expect(notes.map((e) => e.actor)).toEqual(['c']);
    expect(waiter.state).toBe('done');
  });

  it('XA-04 the fence lives while any adapter has it open; the last close destroys every record, the word\'s owner last', async () => {
    const p = await pair();
    const live = () => p.machine.summary().adapters.map((a) => a.liveFences);
    expect(live()).toEqual([1, 1]);
    p.app.destroySynchronizationObject(p.onD.hSyncObject); // the creator's handle goes first
    p.app.closeHandle(p.nt);
    expect(live()).toEqual([1, 1]); // the iGPU still has it open: the shared word must stay
    p.app.signal({ objects: [p.onI.hSyncObject], values: [1n] });
    expect(p.app.readFenceValue(p.onI.hSyncObject)).toBe(1n);
    p.app.destroySynchronizationObject(p.onI.hSyncObject);
    expect(live()).toEqual([0, 0]);
    const destroys = ddiCalls(p.machine, 'DxgkDdiDestroyNativeFence').map((e) => e.actor);
    expect(destroys).toEqual(['iGPU', 'dGPU']);
    expect(p.machine.os.inspect.crossAdapterFences).toBe(0);
  });
});

describe('XA-05 mixed support', () => {
  const mixed = { adapters: [{ name: 'iGPU', integrated: true, engines: 1, caps: { nativeGpuFence: false } }, { name: 'dGPU', engines: 1 }] };
  const nativeDdisOn = (m: Machine, adapter: string) => m.trace.events.filter((e) => e.kind === 'ddi' && e.actor === adapter && /NativeFence|UpdateCurrentValues|UpdateMonitoredValues/.test(e.name));

  it('XA-05 a native fence opened on an adapter without the feature is a monitored fence there, over the same word, with no native DDI', async () => {
    const p = await pair(mixed);
    const gi = globalOf(p, p.app, p.onI.hSyncObject);
    const gd = globalOf(p, p.app, p.onD.hSyncObject);
    expect(gi.kind).toBe('monitored');
    expect(gd.kind).toBe('native');
    expect(gi.cvPhys).toBe(gd.cvPhys);
    expect(nativeDdisOn(p.machine, 'iGPU')).toEqual([]);
    // a CPU waiter on the monitored side wakes when the native side's GPU signals
    const waiter = p.app.createThread('w', function* (cpu) { return yield cpu.wait({ objects: [p.onI.hSyncObject], values: [4n] }); });
    p.machine.run();
    const q = p.app.createHwQueue({ hDevice: p.dDevice, nativeProgressFence: false });
    p.app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: p.onD.hSyncObject, value: 4n } }] });
    p.machine.run();
    expect(waiter.state).toBe('done');
    expect(p.machine.trace.find({ kind: 'os', name: 'scan of monitored fences with pending waits' }).length).toBeGreaterThan(0);
    expect(nativeDdisOn(p.machine, 'iGPU')).toEqual([]);
    // hardware queues do not take it on the iGPU; kernel-mode contexts do
    expectWddmError(() => p.app.createHwQueue({ hDevice: p.iDevice }), 'NOT_SUPPORTED', 'hDevice');
  });

  it('XA-05 a cross-adapter monitored fence opened on an adapter with the feature is a native fence there; the signal crosses both ways', async () => {
    const machine = await createMachine({ seed: 5, ...mixed });
    const app = machine.createProcess('app');
    const iDevice = app.createDevice({ hAdapter: app.openAdapter('iGPU') });
    const dDevice = app.createDevice({ hAdapter: app.openAdapter('dGPU') });
    const onI = app.createSynchronizationObject({ hDevice: iDevice, type: 'MONITORED_FENCE', flags: { shared: true, crossAdapter: true }, name: 'M' });
    const nt = app.shareObject(onI.hSyncObject);
    const onD = app.openNativeFenceFromNtHandle({ hNtHandle: nt, hDevice: dDevice });
    const w = { machine };
    expect(globalOf(w, app, onI.hSyncObject).kind).toBe('monitored');
    expect(globalOf(w, app, onD.hSyncObject).kind).toBe('native');
    expect(globalOf(w, app, onD.hSyncObject).cvPhys).toBe(globalOf(w, app, onI.hSyncObject).cvPhys);
    expect(monitoredValue(w, app, onD.hSyncObject)).toBe(0n); // XA-03 on the native side
    expect(nativeDdisOn(machine, 'iGPU')).toEqual([]);
    // iGPU → dGPU: a software signal packet on an iGPU context unblocks a dGPU hardware queue
    const q = app.createHwQueue({ hDevice: dDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ wait: { hSyncObject: onD.hSyncObject, value: 2n } }] });
    machine.run();
    const hContext = app.createContext({ hDevice: iDevice });
    app.signalSynchronizationObjectFromGpu({ hContext, objects: [onI.hSyncObject], values: [2n] });
    machine.run();
    expect(machine.adapter('dGPU').hardware.blockedQueues()).toBe(0);
    // dGPU → iGPU: a dGPU GPU signal releases an iGPU context held by a GPU wait
    app.waitForSynchronizationObjectFromGpu({ hContext, objects: [onI.hSyncObject], values: [3n] });
    machine.run();
    expect(machine.os.inspect.heldOn(machine.adapter('iGPU').index)).toHaveLength(1);
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: onD.hSyncObject, value: 3n } }] });
    machine.run();
    expect(machine.os.inspect.heldOn(machine.adapter('iGPU').index)).toHaveLength(0);
    expect(app.readFenceValue(onI.hSyncObject)).toBe(3n);
    expect(nativeDdisOn(machine, 'iGPU')).toEqual([]);
    // the last handle out destroys both records
    app.destroyContext(hContext);
    app.destroyHwQueue(q.hHwQueue);
    app.destroySynchronizationObject(onI.hSyncObject); // the monitored record owns the word: it stays while the dGPU has it
    app.closeHandle(nt);
    expect(machine.summary().adapters.map((a) => a.liveFences)).toEqual([1, 1]);
    app.signal({ objects: [onD.hSyncObject], values: [5n] });
    expect(app.readFenceValue(onD.hSyncObject)).toBe(5n);
    app.destroySynchronizationObject(onD.hSyncObject);
    expect(machine.summary().adapters.map((a) => a.liveFences)).toEqual([0, 0]);
    expect(machine.trace.find({ kind: 'os', name: 'monitored fence destroyed' })).toHaveLength(1);
  });

  it('XA-05 with the doorbell on, an adapter without native fences (no doorbell) still gets every signal through the OS', async () => {
    const p = await pair({ ...mixed, doorbell: { enabled: true } });
    expect(monitoredValue(p, p.app, p.onD.hSyncObject)).toBe(0n); // held at 0 again: the monitored side needs the interrupt
    const waiter = p.app.createThread('w', function* (cpu) { return yield cpu.wait({ objects: [p.onI.hSyncObject], values: [7n] }); });
    p.machine.run();
    const q = p.app.createHwQueue({ hDevice: p.dDevice, nativeProgressFence: false });
    p.app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: p.onD.hSyncObject, value: 7n } }] });
    p.machine.run();
    expect(waiter.state).toBe('done');
    expect(ddiCalls(p.machine, 'DxgkDdiUpdateCurrentValuesFromCpu')).toHaveLength(0); // nobody native to notify
  });

  it('XA-05 a GPU fence write on the monitored side reaches the native side after its monitored fence interrupt', async () => {
    const machine = await createMachine({ seed: 5, ...mixed });
    const app = machine.createProcess('app');
    const iDevice = app.createDevice({ hAdapter: app.openAdapter('iGPU') });
    const dDevice = app.createDevice({ hAdapter: app.openAdapter('dGPU') });
    const onI = app.createSynchronizationObject({ hDevice: iDevice, type: 'MONITORED_FENCE', flags: { shared: true, crossAdapter: true } });
    const onD = app.openNativeFenceFromNtHandle({ hNtHandle: app.shareObject(onI.hSyncObject), hDevice: dDevice });
    const q = app.createHwQueue({ hDevice: dDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ wait: { hSyncObject: onD.hSyncObject, value: 6n } }] });
    machine.run();
    const hContext = app.createContext({ hDevice: iDevice });
    app.submitCommand({ hContext, commands: [{ work: { durationNs: 1000 } }, { fenceWrite: { hSyncObject: onI.hSyncObject, value: 6n } }] });
    machine.run();
    expect(machine.adapter('dGPU').hardware.blockedQueues()).toBe(0);
    const propagated = machine.trace.find({ kind: 'os', name: 'cross-adapter signal propagated' });
    expect(propagated.map((e) => e.args.cause)).toEqual(['monitored fence signaled interrupt']);
  });

  it('XA-05 one propagation to an adapter that holds a monitored record of one fence and a native record of another reaches both (found by the fuzz test, issue 27)', async () => {
    // Before: the OS sent the whole batch for that adapter down the monitored path when its first record was monitored,
    // so the native record's waiters were never satisfied and its driver never told (NotificationOnly).
    for (const order of ['monitored first', 'native first']) {
      const machine = await createMachine({ seed: 2, adapters: [{ name: 'a0' }, { name: 'a1' }] });
      const app = machine.createProcess('app');
      const d0 = app.createDevice({ hAdapter: app.openAdapter('a0') }), d1 = app.createDevice({ hAdapter: app.openAdapter('a1') });
      const m1 = app.createSynchronizationObject({ hDevice: d1, type: 'MONITORED_FENCE', name: 'M', flags: { shared: true, crossAdapter: true } });
      const n1 = app.createNativeFence({ hDevice: d1, name: 'N', flags: { shared: true, crossAdapter: true } });
      const m0 = app.openNativeFenceFromNtHandle({ hNtHandle: app.shareObject(m1.hSyncObject), hDevice: d0 });
      const n0 = app.openNativeFenceFromNtHandle({ hNtHandle: app.shareObject(n1.hSyncObject), hDevice: d0 });
      const woken: string[] = [];
      app.waitAsync({ objects: [n1.hSyncObject], values: [3n] }).then((r) => woken.push(`N ${r.status}`));
      app.waitAsync({ objects: [m1.hSyncObject], values: [3n] }).then((r) => woken.push(`M ${r.status}`));
      machine.run();
      const objects = order === 'monitored first' ? [m0.hSyncObject, n0.hSyncObject] : [n0.hSyncObject, m0.hSyncObject];
      app.signal({ objects, values: [3n, 3n] });
      machine.run();
      await Promise.resolve();
      expect(woken.sort(), order).toEqual(['M SUCCESS', 'N SUCCESS']);
      expect(machine.lostWakeups(), order).toEqual([]);
    }
  });

  it('XA-05 monitored fences stay unshareable unless cross-adapter', async () => {
    const machine = await createMachine({ seed: 5, ...mixed });
    const app = machine.createProcess('app');
    const iDevice = app.createDevice({ hAdapter: app.openAdapter('iGPU') });
    expectWddmError(() => app.createSynchronizationObject({ hDevice: iDevice, type: 'MONITORED_FENCE', flags: { shared: true } }), 'NOT_SUPPORTED', 'flags');
    expect(machine.summary().adapters[0].liveFences).toBe(0);
  });
});

describe('XA-06 scenarios', () => {
  const expectedRows: Record<string, Record<'gpu' | 'cpu', number[]>> = {
    '1': { gpu: [1, 3, 4, 5, 6, 7], cpu: [1, 2, 3, 4, 5, 6, 7] },
    '2a': { gpu: [1, 2, 3, 4, 5, 6, 7], cpu: [1, 2, 3, 4, 5, 6, 7] },
    '2b': { gpu: [1, 3, 4, 5, 6], cpu: [1, 2, 3, 4, 5, 6] },
  };
  for (const scenario of ['1', '2a', '2b'] as const) {
    const waiter = scenario === '2b' ? 'dGPU' : 'iGPU';
    const signaller = scenario === '2b' ? 'iGPU' : 'dGPU';
    for (const wait of ['gpu', 'cpu'] as const) {
      for (const signal of ['gpu', 'cpu'] as const) {
        it(`XA-06 scenario ${scenario}: ${waiter} wait from ${wait.toUpperCase()} + ${signaller} signal from ${signal.toUpperCase()} plays every row in the table's order`, async () => {
          const run = await runScenario(scenario, wait, signal);
          const rows = run.steps.map((s) => s.row);
          expect(rows).toEqual(expectedRows[scenario][wait]);
          for (const s of run.steps) expect(s.event, `row ${s.row} happened`).toBeDefined();
          const seqs = run.steps.map((s) => s.event!.seq);
          expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
          expect(run.inOrder).toBe(true);
          const byRow = new Map(run.steps.map((s) => [s.row, s.event!]));
          expect(byRow.get(5)!.args).toMatchObject({ from: signaller, to: waiter, value: '10' });
          if (scenario === '1' || scenario === '2a') {
            expect(byRow.get(4)!.actor).toBe('dGPU');
            expect(byRow.get(4)!.kind).toBe(signal === 'gpu' ? 'interrupt' : 'ddi');
          } else {
            expect(byRow.get(4)!).toMatchObject({ kind: 'os', name: 'monitored fence value written' });
          }
          if (scenario === '2a') {
            expect(byRow.get(6)!).toMatchObject({ kind: 'os', actor: 'iGPU' });
            expect(byRow.get(7)!.name).toBe(wait === 'gpu' ? 'GPU wait satisfied: context released' : 'KEVENT signaled');
          } else {
            expect(byRow.get(6)!).toMatchObject({ kind: 'ddi', actor: waiter, name: 'DxgkDdiUpdateCurrentValuesFromCpu' });
            expect(byRow.get(6)!.args.NotificationOnly).toBe(true);
          }
          if (scenario === '1') expect(byRow.get(7)!.kind).toBe(wait === 'gpu' ? 'gpu' : 'cpu');
          // the adapter without native fences never sees a native fence DDI (CAP-04)
          if (scenario !== '1') {
            expect(run.machine.trace.events.filter((e) => e.kind === 'ddi' && e.actor === 'iGPU' && /NativeFence|UpdateCurrentValues|UpdateMonitoredValues/.test(e.name))).toEqual([]);
          }
          // each row's explain line follows the event that did it
          const explains = run.machine.trace.find({ kind: 'explain', name: /row \d/ });
          expect(explains.map((e) => Number(/row (\d)/.exec(e.name)![1]))).toEqual(rows);
          run.steps.forEach((s, i) => expect(explains[i].seq).toBeGreaterThan(s.event!.seq));
          // and the wait completed: nobody is left waiting, no queue or context left blocked
          expect(run.machine.os.inspect.pendingWaiters).toBe(0);
          expect(run.machine.summary().adapters.every((a) => a.blockedQueues === 0)).toBe(true);
          expect(run.machine.os.inspect.heldOn(run.machine.adapter('iGPU').index)).toHaveLength(0);
          expect(run.machine.trace.find({ kind: 'fault' })).toEqual([]);
        });
      }
    }
  }

  it('XA-06 the GPU-wait pairs of scenario 1 unblock the iGPU queue only after the propagation, never before', async () => {
    for (const run of (await runScenarioPairs('1')).filter((r) => r.wait === 'gpu')) {
      const unblocked = run.machine.trace.find({ kind: 'gpu', name: 'wait unblocked' });
      const propagated = run.machine.trace.find({ kind: 'os', name: 'cross-adapter signal propagated' });
      expect(unblocked).toHaveLength(1);
      expect(unblocked[0].seq).toBeGreaterThan(propagated[0].seq);
    }
  });

  it('XA-06 an unknown scenario or side is refused naming it', async () => {
    expect(() => rowsFor('3' as never, 'gpu', 'gpu')).toThrow(/expected one of 1, 2a, 2b/);
    await expect(runScenario('3' as never, 'cpu', 'cpu')).rejects.toThrow(/expected one of 1, 2a, 2b/);
    await expect(runScenario('1', 'gpu', 'disk' as never)).rejects.toThrow(/signal is "disk"/);
  });
});

describe('XA-07 doorbell', () => {
  it('XA-07 the same workload: the doorbell raises no interrupt and wakes the other GPU sooner than interrupt + OS propagation', async () => {
    const frames = 8;
    const c = await compareDoorbell(frames);
    expect(c.interrupt.crossWakes).toBe(frames);
    expect(c.doorbell.crossWakes).toBe(frames);
    expect(c.interrupt.interrupts).toBe(frames);
    expect(c.doorbell.interrupts).toBe(0);
    expect(c.doorbell.meanWakeNs).toBeLessThan(c.interrupt.meanWakeNs);
    expect(c.doorbell.fallbacks).toBe(0);
    expect(c.doorbell.machine.os.inspect.crossAdapterCounters.propagations).toBe(0);
    expect(ddiCalls(c.doorbell.machine, 'DxgkDdiUpdateCurrentValuesFromCpu')).toHaveLength(0);
    const text = doorbellComparisonText(c);
    console.log(text.split('\n').filter((l) => /interrupts=|cross-adapter \(/.test(l)).join('\n'));
    expect(text).toMatch(/interrupt \+ OS propagation\s+interrupts=8 .*wakeLatencyMeanNs=2000/);
    expect(text).toMatch(/doorbell\s+interrupts=0 .*wakeLatencyMeanNs=300/);
    expect(c.doorbell.machine.summaryText()).toMatch(/cross-adapter \(doorbell\): .*doorbellPosted=8 doorbellTaken=8/);
  });

  it('XA-07 with the doorbell only the adapter with a CPU waiter interrupts, and the waiter wakes', async () => {
    const p = await pair({ doorbell: { enabled: true } });
    expect(monitoredValue(p, p.app, p.onI.hSyncObject)).toBe(0xffff_ffff_ffff_ffffn); // ordinary NF-02 rule
    const waiter = p.app.createThread('cpu', function* (cpu) { return yield cpu.wait({ objects: [p.onI.hSyncObject], values: [3n] }); });
    p.machine.run();
    expect(monitoredValue(p, p.app, p.onI.hSyncObject)).toBe(2n);
    const qd = p.app.createHwQueue({ hDevice: p.dDevice, nativeProgressFence: false });
    p.app.submit({ hHwQueue: qd.hHwQueue, commands: [{ signal: { hSyncObject: p.onD.hSyncObject, value: 1n } }, { signal: { hSyncObject: p.onD.hSyncObject, value: 3n } }] });
    p.machine.run();
    expect(waiter.state).toBe('done');
    expect(interruptsOf(p.machine, 'dGPU')).toBe(0);
    expect(interruptsOf(p.machine, 'iGPU')).toBeGreaterThanOrEqual(1);
    expect(p.machine.os.inspect.lostWakeups()).toEqual([]);
  });

  it('NF-10 doorbell on, the waiting adapter with OptimizedNativeFenceSignaledInterrupt: a GPU signal from the other adapter wakes its CPU waiters (issue 27)', async () => {
    // The iGPU serves its interrupts from its logs (INT-05); the doorbell's CMP check raises its interrupt, whose logs
    // hold no entry of a signal written by the dGPU. With the iGPU's own queue running and idle, and with none.
    for (const ownQueue of [false, true]) {
      const p = await pair({ doorbell: { enabled: true }, adapters: [{ name: 'iGPU', integrated: true, engines: 1, caps: { optimizedNativeFenceSignaledInterrupt: true } }, { name: 'dGPU', engines: 1 }] });
      const results: string[] = [];
      p.app.waitAsync({ objects: [p.onI.hSyncObject], values: [1n] }).then((r) => results.push(`untimed ${r.status}`));
      p.app.waitAsync({ objects: [p.onI.hSyncObject], values: [2n], timeoutNs: 1_000_000 }).then((r) => results.push(`timed ${r.status}`));
      const waiter = p.app.createThread('cpu', function* (cpu) { return yield cpu.wait({ objects: [p.onI.hSyncObject], values: [2n] }); });
      if (ownQueue) {
        const qi = p.app.createHwQueue({ hDevice: p.iDevice, nativeProgressFence: false });
        p.app.submit({ hHwQueue: qi.hHwQueue, commands: [{ work: { durationNs: 50_000 } }] });
      }
      const qd = p.app.createHwQueue({ hDevice: p.dDevice, nativeProgressFence: false });
      p.app.submit({ hHwQueue: qd.hHwQueue, commands: [{ signal: { hSyncObject: p.onD.hSyncObject, value: 1n } }, { work: { durationNs: 5000 } }, { signal: { hSyncObject: p.onD.hSyncObject, value: 2n } }] });
      p.machine.run();
      await Promise.resolve();
      expect(p.app.readFenceValue(p.onI.hSyncObject)).toBe(2n);
      expect(p.machine.os.inspect.lostWakeups()).toEqual([]);
      expect(results.sort()).toEqual(['timed SUCCESS', 'untimed SUCCESS']);
      expect(waiter.state).toBe('done');
      expect(p.machine.os.inspect.crossAdapterCounters.propagations).toBe(0); // the doorbell carried the value, not the OS
      expect(interruptsOf(p.machine, 'iGPU')).toBeGreaterThanOrEqual(1);
      expect(p.machine.nowNs).toBeLessThan(ownQueue ? 100_000 : 50_000);
    }
  });

  it('XA-07 a full doorbell ring falls back to the interrupt path and loses nothing', async () => {
    const p = await pair({ doorbell: { enabled: true, ringEntries: 2, latencyNs: 50_000 } });
    const qi = p.app.createHwQueue({ hDevice: p.iDevice, nativeProgressFence: false });
    p.app.submit({ hHwQueue: qi.hHwQueue, commands: [1n, 2n, 3n, 4n, 5n, 6n].map((v) => ({ wait: { hSyncObject: p.onI.hSyncObject, value: v } })) });
    p.machine.run();
    const qd = p.app.createHwQueue({ hDevice: p.dDevice, nativeProgressFence: false });
    p.app.submit({ hHwQueue: qd.hHwQueue, commands: [1n, 2n, 3n, 4n, 5n, 6n].map((v) => ({ signal: { hSyncObject: p.onD.hSyncObject, value: v } })) });
    p.machine.run();
    const c = p.machine.crossAdapterCounters();
    expect(c.doorbellFallbacks).toBeGreaterThan(0);
    expect(c.doorbellPosted + c.doorbellFallbacks).toBe(6);
    expect(p.machine.trace.find({ kind: 'fault', name: /doorbell ring full/ }).length).toBe(c.doorbellFallbacks);
    expect(c.propagations).toBeGreaterThan(0); // the fallback went through the OS
    expect(p.machine.adapter('iGPU').hardware.blockedQueues()).toBe(0);
    expect(p.machine.adapter('iGPU').core.queuePending(1)).toBe(0);
  });

  it('XA-07 the core ring: posts until full (E_DOORBELL_FULL), takes in order, then accepts again', async () => {
    const machine = await createMachine({ seed: 1, adapters: [{ name: 'a' }, { name: 'b' }], doorbell: { enabled: true, ringEntries: 4 } });
    const a = machine.adapter('a').core;
    const b = machine.adapter('b').core;
    const base = machine.doorbellBase;
    expect(base).toBe(machine.systemBase + 4 * 1024 * 1024); // right after system memory
    expect(a.doorbellCheck(base)).toBe(0);
    for (let i = 1; i <= 4; i++) expect(a.doorbellPost(base, 1, 0, 0x1000 * i, BigInt(i))).toBe(0);
    expect(a.doorbellPost(base, 1, 0, 0x5000, 5n)).toBe(-40);
    expect(b.doorbellPending(base, 1)).toBe(4);
    expect(b.doorbellTake(2)).toBe(2);
    const out = new DataView(machine.memory.buffer, b.outBufferAddress(), 64);
    const record = machine.layout.out.doorbell; // TakenDoorbellRecord, at the offsets the core exports
    expect([0, 1].flatMap((i) => [out.getUint32(i * record.bytes + record.word, true), out.getUint32(i * record.bytes + record.source, true), out.getBigUint64(i * record.bytes + record.value, true)]))
      .toEqual([0x1000, 0, 1n, 0x2000, 0, 2n]);
    expect(a.doorbellPost(base, 1, 0, 0x5000, 5n)).toBe(0);
    expect(b.doorbellTake(64)).toBe(3);
    expect(BigInt.asUintN(64, b.doorbellCounter(base, 1, 2))).toBe(1n); // one rejected post
    expect(a.doorbellTake(64)).toBe(0); // a's own ring is empty
  });

  it('XA-07 bad doorbell options are rejected naming the option', async () => {
    await expect(createMachine({ doorbell: { enabled: true, ringEntries: 3 } })).rejects.toThrow(/doorbell.ringEntries is 3; expected a power of two/);
    await expect(createMachine({ doorbell: { enabled: true, ring: 4 } as never })).rejects.toThrow(/ring/);
    await expect(createMachine({ doorbell: { latencyNs: -1 } })).rejects.toThrow(/doorbell.latencyNs/);
  });
});
