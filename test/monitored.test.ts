import { describe, it, expect } from 'vitest';
import { WddmError, compareSynchronizationModels, type RuntimeProcess, type Machine, type WaitResult } from '../src/index.js';
import { world, globalOf, ddiCalls, UINT64_MAX, processOf } from './helpers.js';

const WINDOW = 0x7fff_ffffn; // UINT32_MAX / 2

function monitoredFence(app: RuntimeProcess, hDevice: number, initialValue = 0n, name?: string, flags?: Record<string, boolean>) {
  return app.createSynchronizationObject({ hDevice, type: 'MONITORED_FENCE', initialValue, name, flags });
}

/** Calls `f`, expects a WddmError, returns it. */
function failure(f: () => unknown): WddmError {
  try { f(); } catch (error) { expect(error).toBeInstanceOf(WddmError); return error as WddmError; }
  throw new Error('expected a WddmError');
}

function rawValue(machine: Machine, app: RuntimeProcess, hSyncObject: number): bigint {
  const g = globalOf({ machine }, app, hSyncObject);
  return BigInt.asUintN(64, g.adapter.core.cpuReadCurrentValue(g.coreFence));
}

const NATIVE_DDIS = ['DxgkDdiCreateNativeFence', 'DxgkDdiOpenNativeFence', 'DxgkDdiCloseNativeFence', 'DxgkDdiDestroyNativeFence',
  'DxgkDdiUpdateMonitoredValues', 'DxgkDdiUpdateCurrentValuesFromCpu'];

describe('monitored fences (WDDM 2.x)', () => {
  it('MF-01 creation returns the handle, a read-only CPU mapping and a read/write GPU VA of the same 8-byte aligned value; bad input changes nothing', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const live = () => machine.summary().adapters[0].liveFences;
    const before = live();
    expect(failure(() => app.createSynchronizationObject({ hDevice, type: 'NATIVE_FENCE' as 'MONITORED_FENCE' })).parameter).toBe('type');
    expect(failure(() => app.createSynchronizationObject({ hDevice, type: 'MONITORED_FENCE', initialValue: -1n })).parameter).toBe('initialValue');
    expect(failure(() => app.createSynchronizationObject({ hDevice, type: 'MONITORED_FENCE', colour: 1 } as never)).message).toMatch(/unknown key "colour"/);
    expect(failure(() => monitoredFence(app, hDevice, 0n, 'x', { shared: true })).status).toBe('NOT_SUPPORTED');
    expect(live()).toBe(before);

    const f = monitoredFence(app, hDevice, 41n, 'F');
    const g = monitoredFence(app, hDevice, 7n, 'G');
    expect(live()).toBe(before + 2);
    expect(f.hSyncObject).toBeGreaterThan(0);
    expect(f.FenceValueGPUVirtualAddress % 8n).toBe(0n);
    expect(f.FenceValueCPUVirtualAddress % 8n).toBe(0n);
    // Both addresses name the same physical word, in a system-memory fence page.
    const adapter = machine.adapters[0];
    const gpuPhys = adapter.core.gpuVaTranslate(app.kernel.slot, f.FenceValueGPUVirtualAddress);
    expect(gpuPhys).toBe(processOf(app).translateUser(f.FenceValueCPUVirtualAddress));
    expect(gpuPhys).toBeGreaterThanOrEqual(machine.systemBase);
    expect(gpuPhys).toBeLessThan(adapter.localBase);
    expect(app.readMapping(f.FenceValueCPUVirtualAddress)).toBe(41n);
    expect(app.readFenceValue(g.hSyncObject)).toBe(7n);
    // Non-shareable values of one process are packed: the two fences share a page.
    expect(g.FenceValueGPUVirtualAddress - f.FenceValueGPUVirtualAddress).toBe(8n);
    expect(globalOf(w, app, f.hSyncObject).kind).toBe('monitored');
    // No native fence DDI for a monitored fence, ever.
    for (const name of NATIVE_DDIS) expect(ddiCalls(machine, name)).toHaveLength(0);

    // Destroy: the handle is gone, the storage freed, still no DDI.
    app.destroySynchronizationObject(g.hSyncObject);
    expect(live()).toBe(before + 1);
    expect(failure(() => app.readFenceValue(g.hSyncObject)).message).toMatch(/closed or destroyed/);
    for (const name of NATIVE_DDIS) expect(ddiCalls(machine, name)).toHaveLength(0);
  });

  it('MF-02 a CPU signal writes the value: every reader sees it at once and satisfied waits, CPU and GPU, are released at once', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const f = monitoredFence(app, hDevice, 0n, 'F');
    const out = monitoredFence(app, hDevice, 0n, 'out');
    const hEvent = app.createEvent('e');
    app.waitWithEvent({ objects: [f.hSyncObject], values: [3n], hAsyncEvent: hEvent });
    void app.waitAsync({ objects: [f.hSyncObject], values: [5n] }, 'five');
    void app.waitAsync({ objects: [f.hSyncObject], values: [9n] }, 'nine');
    const ctx = app.createContext({ hDevice, engine: 0, name: 'ctx' });
    app.waitForSynchronizationObjectFromGpu({ hContext: ctx, objects: [f.hSyncObject], values: [5n] });
    app.submitCommand({ hContext: ctx, commands: [{ fenceWrite: { hSyncObject: out.hSyncObject, value: 1n } }] });
    machine.run();
    expect(ddiCalls(machine, 'DxgkDdiSubmitCommand')).toHaveLength(0); // held
    const at = machine.nowNs;

    // Bad signals change nothing.
    expect(failure(() => app.signal({ objects: [f.hSyncObject], values: [2n ** 64n] })).parameter).toBe('values[0]');
    expect(app.readFenceValue(f.hSyncObject)).toBe(0n);

    app.signal({ objects: [f.hSyncObject], values: [5n] });
    // Synchronously, in the same virtual instant:
    expect(app.readFenceValue(f.hSyncObject)).toBe(5n);
    expect(app.readMapping(f.FenceValueCPUVirtualAddress)).toBe(5n);
    expect(app.isEventSet(hEvent)).toBe(true);
    const woken = machine.trace.find({ kind: 'os', name: 'waiter woken' });
    expect(woken.map((e) => String(e.args.waiter))).toEqual(['event e', 'app:five']);
    expect(woken.every((e) => e.timeNs === at)).toBe(true);
    expect(machine.os.inspect.pendingWaiters).toBe(1); // nine
    const submitted = ddiCalls(machine, 'DxgkDdiSubmitCommand');
    expect(submitted).toHaveLength(1);
    expect(submitted[0].timeNs).toBe(at);
    // Values only move forward (no rewind flag): rejected, nothing changed.
    expect(failure(() => app.signal({ objects: [f.hSyncObject], values: [4n] })).message).toMatch(/only move forward/);
    expect(app.readFenceValue(f.hSyncObject)).toBe(5n);
    // The kernel wrote it: no native DDI.
    for (const name of NATIVE_DDIS) expect(ddiCalls(machine, name)).toHaveLength(0);
    machine.run();
    expect(app.readFenceValue(out.hSyncObject)).toBe(1n);
  });

  it('MF-03 CPU waits block or set an event, with timeouts, wait-all and wait-any (mixed with native fences); a satisfied wait adds no waiter', async () => {
    const w = await world({ timing: { jitter: 0 } }); // the interrupt lands exactly one latency after the write (checked below)
    const { app, hDevice, machine } = w;
    const a = monitoredFence(app, hDevice, 0n, 'A');
    const b = monitoredFence(app, hDevice, 0n, 'B');
    const n = app.createNativeFence({ hDevice, name: 'N' });
    const ctx = app.createContext({ hDevice, engine: 0 });
    app.submitCommand({ hContext: ctx, commands: [{ work: { durationNs: 1000 } }, { fenceWrite: { hSyncObject: a.hSyncObject, value: 1n } },
      { work: { durationNs: 1000 } }, { fenceWrite: { hSyncObject: b.hSyncObject, value: 1n } }] });
    const hEvent = app.createEvent('gpuDone');
    app.waitWithEvent({ objects: [a.hSyncObject, b.hSyncObject], values: [1n, 1n], hAsyncEvent: hEvent });
    const all = app.createThread('all', function* (cpu) { return yield cpu.wait({ objects: [a.hSyncObject, b.hSyncObject], values: [1n, 1n] }); });
    const any = app.createThread('any', function* (cpu) { return yield cpu.wait({ objects: [n.hSyncObject, b.hSyncObject], values: [1n, 1n], waitAny: true }); });
    const late = app.createThread('late', function* (cpu) { return yield cpu.wait({ objects: [a.hSyncObject], values: [2n], timeoutNs: 10_000 }); });
    const evented = app.createThread('evented', function* (cpu) { return yield cpu.waitEvent(hEvent); });
    machine.run();
    const result = (t: { result: unknown }) => t.result as WaitResult;
    expect(result(all).status).toBe('SUCCESS');
    expect(result(any)).toMatchObject({ status: 'SUCCESS', index: 1 });
    expect(result(late).status).toBe('TIMEOUT');
    expect(evented.result).toMatchObject({ status: 'SUCCESS', immediate: false }); // the event was set by the GPU's writes, not before the wait
    // The all-waiter woke at the first interrupt whose scan saw both values (the second write joined it).
    const writes = machine.trace.find({ kind: 'gpu', name: 'fence write' });
    expect(writes).toHaveLength(2);
    const interrupts = machine.trace.find({ kind: 'interrupt', name: 'DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED' });
    expect(interrupts).toHaveLength(1);
    expect(interrupts[0].timeNs).toBe(writes[0].timeNs + machine.adapters[0].hardware.timing.interruptLatencyNs);
    expect(interrupts[0].timeNs).toBeGreaterThan(writes[1].timeNs);
    expect(result(all).timeNs).toBe(interrupts[0].timeNs);
    // Satisfied at once: no waiter added.
    const added = machine.os.inspect.counters.waitersAdded;
    const now = await app.waitAsync({ objects: [a.hSyncObject], values: [1n] });
    expect(now.immediate).toBe(true);
    expect(machine.os.inspect.counters.waitersAdded).toBe(added);
    // NoWait: rejected, nothing added; then a good wait.
    const nw = monitoredFence(app, hDevice, 0n, 'noWait', { noWait: true });
    expect(failure(() => app.waitWithEvent({ objects: [nw.hSyncObject], values: [1n], hAsyncEvent: hEvent })).message).toMatch(/noWait/);
    expect(machine.os.inspect.counters.waitersAdded).toBe(added);
    void app.waitAsync({ objects: [b.hSyncObject], values: [7n] });
    expect(machine.os.inspect.counters.waitersAdded).toBe(added + 1);
    // Destroying the fence releases its waiter.
    app.destroySynchronizationObject(b.hSyncObject);
    expect(machine.trace.find({ kind: 'os', name: 'waiter released' }).some((e) => e.args.status === 'OBJECT_DESTROYED')).toBe(true);
    expect(machine.os.inspect.pendingWaiters).toBe(0);
  });

  it('MF-04 a GPU signal is a fence write in the context stream followed by a monitored fence signaled interrupt (never a native one)', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const f = monitoredFence(app, hDevice, 0n, 'F');
    const ctx = app.createContext({ hDevice, engine: 1, name: 'ctx' });
    app.submitCommand({ hContext: ctx, commands: [{ work: { durationNs: 1500 } }, { fenceWrite: { hSyncObject: f.hSyncObject, value: 4n } }] });
    const waiter = app.createThread('w', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [4n] }); });
    machine.run();
    const write = machine.trace.find({ kind: 'gpu', name: 'fence write' });
    const raised = machine.trace.find({ kind: 'cmp', name: 'monitored fence signaled interrupt raised' });
    const interrupts = machine.trace.find({ kind: 'interrupt' });
    expect(write).toHaveLength(1);
    expect(write[0].timeNs).toBe(1500);
    expect(raised[0].seq).toBeGreaterThan(write[0].seq);
    expect(interrupts.map((e) => e.name)).toEqual(['DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED', 'DXGK_INTERRUPT_DMA_COMPLETED']);
    expect(interrupts[0].args.NodeOrdinal).toBe(1);
    expect((waiter.result as WaitResult).timeNs).toBe(interrupts[0].timeNs);
    expect(machine.os.inspect.counters.interruptsHandled).toBe(0); // no native fence signaled interrupt
    expect(machine.summary().legacy.monitoredFenceInterrupts).toBe(1);
    expect(app.readFenceValue(f.hSyncObject)).toBe(4n);
  });

  it('MF-04 an engine that cannot write the VA gets a software signal packet, executed by the OS at the head of the context', async () => {
    const w = await world({ adapters: [{ caps: { monitoredFenceGpuWrite: false } }] });
    const { app, hDevice, machine } = w;
    const f = monitoredFence(app, hDevice, 0n, 'F');
    const ctx = app.createContext({ hDevice, engine: 0, name: 'ctx' });
    const e = failure(() => app.submitCommand({ hContext: ctx, commands: [{ work: { durationNs: 1 } }, { fenceWrite: { hSyncObject: f.hSyncObject, value: 1n } }] }));
    expect(e.status).toBe('NOT_SUPPORTED');
    expect(e.message).toMatch(/signalSynchronizationObjectFromGpu/);
    expect(machine.trace.find({ kind: 'runtime', name: 'D3DKMTSubmitCommand' })).toHaveLength(0);

    app.submitCommand({ hContext: ctx, commands: [{ work: { durationNs: 3000 } }] });
    app.signalSynchronizationObjectFromGpu({ hContext: ctx, objects: [f.hSyncObject], values: [6n] });
    expect(app.readFenceValue(f.hSyncObject)).toBe(0n); // queued behind the command buffer, not executed
    const waiter = app.createThread('w', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [6n] }); });
    machine.run();
    const completed = machine.trace.find({ kind: 'interrupt', name: 'DXGK_INTERRUPT_DMA_COMPLETED' });
    const executed = machine.trace.find({ kind: 'os', name: 'software signal packet executed' });
    expect(executed).toHaveLength(1);
    expect(executed[0].seq).toBeGreaterThan(completed[0].seq); // only after the buffer before it completed
    expect(executed[0].timeNs).toBeGreaterThanOrEqual(3000);
    expect((waiter.result as WaitResult).timeNs).toBe(executed[0].timeNs);
    expect(app.readFenceValue(f.hSyncObject)).toBe(6n);
    expect(machine.trace.find({ kind: 'gpu', name: 'fence write' })).toHaveLength(0);
    expect(machine.summary().legacy.softwareSignals).toBe(1);
  });

  it('MF-05 a GPU wait returns at once; command buffers submitted after it are held by the OS until it is satisfied, earlier ones run', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const f = monitoredFence(app, hDevice, 0n, 'F');
    const g = monitoredFence(app, hDevice, 0n, 'G');
    const producer = app.createContext({ hDevice, engine: 0, name: 'producer' });
    const consumer = app.createContext({ hDevice, engine: 1, name: 'consumer' });
    app.submitCommand({ hContext: consumer, commands: [{ work: { durationNs: 1000 } }] });
    expect(app.waitForSynchronizationObjectFromGpu({ hContext: consumer, objects: [f.hSyncObject], values: [1n] })).toBeUndefined();
    app.submitCommand({ hContext: consumer, commands: [{ work: { durationNs: 2000 } }, { fenceWrite: { hSyncObject: g.hSyncObject, value: 1n } }] });
    machine.run();
    // Only the buffer before the wait reached the driver.
    expect(ddiCalls(machine, 'DxgkDdiSubmitCommand')).toHaveLength(1);
    expect(app.readFenceValue(g.hSyncObject)).toBe(0n);
    expect(machine.trace.find({ kind: 'os', name: 'context held by GPU wait' })).toHaveLength(1);

    // The producer's GPU write satisfies it, but only the OS can release the held buffer: a CPU round trip.
    app.submitCommand({ hContext: producer, commands: [{ work: { durationNs: 500 } }, { fenceWrite: { hSyncObject: f.hSyncObject, value: 1n } }] });
    machine.run();
    const write = machine.trace.find({ kind: 'gpu', name: 'fence write' }).find((e) => e.args.value === '1' && e.actor.endsWith('engine0'))!;
    const released = machine.trace.find({ kind: 'os', name: 'GPU wait satisfied: context released' });
    expect(released).toHaveLength(1);
    expect(released[0].timeNs).toBeGreaterThanOrEqual(write.timeNs + machine.adapters[0].hardware.timing.interruptLatencyNs);
    const heldWork = machine.trace.find({ kind: 'gpu', name: 'work' }).find((e) => e.args.durationNs === 2000)!;
    expect(heldWork.timeNs).toBeGreaterThanOrEqual(released[0].timeNs);
    expect(app.readFenceValue(g.hSyncObject)).toBe(1n);
    expect(machine.summary().legacy).toMatchObject({ gpuWaitsHeld: 1, heldWaitsReleased: 1 });
    // A wait that is satisfied when it reaches the head holds nothing.
    app.waitForSynchronizationObjectFromGpu({ hContext: consumer, objects: [f.hSyncObject], values: [1n] });
    expect(machine.trace.find({ kind: 'os', name: 'GPU wait satisfied at once' })).toHaveLength(1);
    expect(machine.summary().legacy.gpuWaitsHeld).toBe(1);
  });

  it('MF-05 bad GPU waits and signals (another process\'s context, a native fence, NoWait, NoSignal) fail clearly and change nothing', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const f = monitoredFence(app, hDevice, 0n, 'F');
    const ctx = app.createContext({ hDevice, engine: 0, name: 'ctx' });
    const other = machine.createProcess('other');
    const otherDevice = other.createDevice({ hAdapter: other.openAdapter(0) });
    const theirs = monitoredFence(other, otherDevice, 0n, 'theirs');
    const packets = () => machine.os.inspect.contextsOf(app.kernel)[0].packets.length;

    let e = failure(() => other.waitForSynchronizationObjectFromGpu({ hContext: ctx, objects: [theirs.hSyncObject], values: [1n] }));
    expect(e.status).toBe('INVALID_HANDLE');
    expect(e.message).toMatch(/belongs to process "app"/);
    e = failure(() => app.waitForSynchronizationObjectFromGpu({ hContext: ctx, objects: [theirs.hSyncObject], values: [1n] }));
    expect(e.message).toMatch(/belongs to process "other"/);
    const native = app.createNativeFence({ hDevice });
    expect(failure(() => app.waitForSynchronizationObjectFromGpu({ hContext: ctx, objects: [native.hSyncObject], values: [1n] })).message).toMatch(/native fence/);
    const noWait = monitoredFence(app, hDevice, 0n, 'noWait', { noWait: true });
    expect(failure(() => app.waitForSynchronizationObjectFromGpu({ hContext: ctx, objects: [noWait.hSyncObject], values: [1n] })).message).toMatch(/noWait/);
    const noSignal = monitoredFence(app, hDevice, 0n, 'noSignal', { noSignal: true });
    expect(failure(() => app.signalSynchronizationObjectFromGpu({ hContext: ctx, objects: [noSignal.hSyncObject], values: [1n] })).message).toMatch(/noSignal/);
    expect(failure(() => app.submitCommand({ hContext: ctx, commands: [{ fenceWrite: { hSyncObject: noSignal.hSyncObject, value: 1n } }] })).message).toMatch(/noSignal/);
    expect(failure(() => app.signal({ objects: [noSignal.hSyncObject], values: [1n] })).message).toMatch(/noSignal/);
    expect(failure(() => app.waitForSynchronizationObjectFromGpu({ hContext: ctx, objects: [f.hSyncObject, f.hSyncObject], values: [1n] })).parameter).toBe('values');
    // Hardware queues refuse monitored fences (no MonitoredValue for the CMP).
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    expect(failure(() => app.submit({ hHwQueue: q.hHwQueue, commands: [{ wait: { hSyncObject: f.hSyncObject, value: 1n } }] })).message).toMatch(/kernel-mode context/);
    expect(packets()).toBe(0);
    expect(machine.trace.find({ kind: 'runtime', name: /FromGpu$/ })).toHaveLength(0);
    expect(app.readFenceValue(noSignal.hSyncObject)).toBe(0n);

    // Then the good calls work.
    app.waitForSynchronizationObjectFromGpu({ hContext: ctx, objects: [f.hSyncObject], values: [1n] });
    app.signalSynchronizationObjectFromGpu({ hContext: ctx, objects: [noWait.hSyncObject], values: [1n] });
    expect(packets()).toBe(2);
    // A fence that queued GPU work names cannot be destroyed until it ran.
    expect(failure(() => app.destroySynchronizationObject(f.hSyncObject)).status).toBe('INVALID_DEVICE_STATE');
    app.signal({ objects: [f.hSyncObject], values: [1n] });
    machine.run();
    expect(packets()).toBe(0);
    expect(app.readFenceValue(noWait.hSyncObject)).toBe(1n);
    app.destroySynchronizationObject(f.hSyncObject);
  });

  it('MF-06 on every command buffer completion the OS scans the fences with pending waits of that process and releases what is satisfied', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const f = monitoredFence(app, hDevice, 0n, 'F');
    monitoredFence(app, hDevice, 0n, 'idle'); // no waiter: never read by a scan
    const other = machine.createProcess('other');
    const otherDevice = other.createDevice({ hAdapter: other.openAdapter(0) });
    const theirs = monitoredFence(other, otherDevice, 0n, 'theirs');
    void other.waitAsync({ objects: [theirs.hSyncObject], values: [1n] });
    const waiter = app.createThread('w', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [5n] }); });
    machine.run();
    // A GPU write with no interrupt after it (the basic implementation): the OS does not know yet.
    const core = machine.adapters[0].core;
    expect(core.engineSignalWrite(0, app.kernel.slot, f.FenceValueGPUVirtualAddress, 5n)).toBe(0);
    core.engineDrain(0);
    machine.run();
    expect(waiter.state).toBe('blocked');
    expect(app.readFenceValue(f.hSyncObject)).toBe(5n);

    const ctx = app.createContext({ hDevice, engine: 1 });
    app.submitCommand({ hContext: ctx, commands: [{ work: { durationNs: 700 } }] });
    machine.run();
    expect(waiter.state).toBe('done');
    const completed = machine.trace.find({ kind: 'interrupt', name: 'DXGK_INTERRUPT_DMA_COMPLETED' });
    const scans = machine.trace.find({ kind: 'os', name: 'scan of monitored fences with pending waits' });
    expect(completed).toHaveLength(1);
    expect(scans).toHaveLength(1);
    expect(scans[0].args).toMatchObject({ process: 'app', fences: ['F'], values: ['5'] });
    expect((waiter.result as WaitResult).timeNs).toBe(completed[0].timeNs);
    expect(machine.summary().legacy).toMatchObject({ dmaCompletedInterrupts: 1, scans: 1, fencesExamined: 1 });
    expect(machine.os.inspect.pendingWaiters).toBe(1); // the other process's waiter, not this process's fence

    // Every completion scans: three more buffers, three more scans.
    for (let i = 0; i < 3; i++) app.submitCommand({ hContext: ctx, commands: [{ work: { durationNs: 100 } }] });
    machine.run();
    expect(machine.summary().legacy).toMatchObject({ dmaCompletedInterrupts: 4, scans: 4 });
  });

  it('MF-06 the cost of the legacy model, counted side by side with native fences for the same producer/consumer workload', async () => {
    const c = await compareSynchronizationModels({ seed: 3, frames: 3 });
    expect(c.monitored.gpuWaits).toBe(5);
    expect(c.native.gpuWaits).toBe(5);
    // Monitored: a DMA completed interrupt per command buffer (2 per frame) and a monitored fence interrupt per fence write.
    expect(c.monitored).toMatchObject({ dmaCompletedInterrupts: 6, monitoredFenceInterrupts: 6, nativeFenceInterrupts: 0, cpuInterrupts: 12, scans: 12, cpuRoundTrips: 5 });
    // Native: one interrupt, for the CPU thread's wait; GPU waits never leave the GPU.
    expect(c.native).toMatchObject({ cpuInterrupts: 1, nativeFenceInterrupts: 1, dmaCompletedInterrupts: 0, scans: 0, fencesExamined: 1, cpuRoundTrips: 0 });
    expect(c.monitored.lastFrameConsumedNs).toBeGreaterThan(c.native.lastFrameConsumedNs);
    expect(c.text).toMatch(/CPU round trips that held GPU work\s+5\s+0/);
    expect(c.text).toMatch(/CPU interrupts\s+12\s+1/);
    const again = await compareSynchronizationModels({ seed: 3, frames: 3 });
    expect(again.text).toBe(c.text);
    expect(JSON.stringify(again.monitored.machine.trace.json())).toBe(JSON.stringify(c.monitored.machine.trace.json()));
    const more = await compareSynchronizationModels({ frames: 10 });
    expect(more.monitored.cpuRoundTrips).toBe(19);
    expect(more.native.cpuInterrupts).toBe(1);
    expect(failure(() => compareSynchronizationModels({ frames: 0 })).parameter).toBe('frames');
  });
});

describe('MF-07: 64-bit values from 32-bit GPU writes', () => {
  const narrow = { adapters: [{ caps: { no64BitAtomics: true } }] };

  it('MF-07 the GPU writes only the low 32 bits; the OS extends the value across 2^32 several times', async () => {
    const w = await world(narrow);
    const { app, hDevice, machine } = w;
    const f = monitoredFence(app, hDevice, 0n, 'F');
    const g = globalOf(w, app, f.hSyncObject);
    const ctx = app.createContext({ hDevice, engine: 0 });
    const rawAtWrite: bigint[] = [];
    machine.adapters[0].hardware.stepListeners.push((step) => { if (step.kind === 'fence-write') rawAtWrite.push(rawValue(machine, app, f.hSyncObject)); });
    const step = 0x7000_0000n;
    let previous = 0n;
    const highs = new Set<bigint>();
    for (let k = 1n; k <= 10n; k++) {
      const value = k * step;
      const done = app.waitAsync({ objects: [f.hSyncObject], values: [value] });
      app.submitCommand({ hContext: ctx, commands: [{ work: { durationNs: 100 } }, { fenceWrite: { hSyncObject: f.hSyncObject, value } }] });
      machine.run();
      expect((await done).status).toBe('SUCCESS');
      // What the engine wrote: the new low half under the old high half.
      expect(rawAtWrite.at(-1)).toBe((previous & ~0xffff_ffffn) | (value & 0xffff_ffffn));
      // What the OS made of it, and wrote back for readers.
      expect(app.readFenceValue(f.hSyncObject)).toBe(value);
      expect(BigInt.asUintN(64, g.adapter.core.fenceLastSignaled(g.coreFence))).toBe(value);
      highs.add(value >> 32n);
      previous = value;
    }
    expect(previous).toBe(0x4_6000_0000n);
    expect([...highs].sort()).toEqual([0n, 1n, 2n, 3n, 4n]); // crossed 2^32 four times
    // Wraps were real: at least one raw write showed a value below the one before it.
    expect(rawAtWrite.some((raw, i) => i > 0 && raw < rawAtWrite[i - 1])).toBe(true);
  });

  it('MF-07 outstanding waits and signals exactly UINT32_MAX/2 from the last signalled value are accepted; one more is rejected, naming the rule, with nothing changed', async () => {
    const w = await world(narrow);
    const { app, hDevice, machine } = w;
    const last = 0x1_9000_0000n;
    const f = monitoredFence(app, hDevice, last, 'F');
    const ctx = app.createContext({ hDevice, engine: 0 });
    const edge = last + WINDOW;      // 0x2_0FFF_FFFF: crosses 2^33 in the low half
    const past = last + WINDOW + 1n;
    const waiters = machine.os.inspect.pendingWaiters;
    const traceLength = machine.trace.events.length;

    const e = failure(() => app.waitAsync({ objects: [f.hSyncObject], values: [past] }).catch(() => {}));
    expect(e.parameter).toBe('values[0]');
    expect(e.message).toMatch(/UINT32_MAX\/2/);
    expect(e.message).toMatch(/No64BitAtomics/);
    expect(e.message).toMatch(/MF-07/);
    expect(failure(() => app.signal({ objects: [f.hSyncObject], values: [past] })).message).toMatch(/UINT32_MAX\/2/);
    expect(failure(() => app.waitForSynchronizationObjectFromGpu({ hContext: ctx, objects: [f.hSyncObject], values: [past] })).message).toMatch(/UINT32_MAX\/2/);
    expect(failure(() => app.signalSynchronizationObjectFromGpu({ hContext: ctx, objects: [f.hSyncObject], values: [past] })).message).toMatch(/UINT32_MAX\/2/);
    expect(failure(() => app.submitCommand({ hContext: ctx, commands: [{ fenceWrite: { hSyncObject: f.hSyncObject, value: past } }] })).message).toMatch(/UINT32_MAX\/2/);
    expect(failure(() => app.signal({ objects: [f.hSyncObject], values: [last - WINDOW - 1n], flags: { allowFenceRewind: true } })).message).toMatch(/UINT32_MAX\/2/);
    expect(machine.os.inspect.pendingWaiters).toBe(waiters);
    expect(machine.trace.events.length).toBe(traceLength); // not even traced as a call
    expect(app.readFenceValue(f.hSyncObject)).toBe(last);

    // At the edge: accepted. A CPU waiter and a held GPU wait at the edge, then a GPU write of exactly the edge.
    const out = monitoredFence(app, hDevice, 0n, 'out');
    const done = app.waitAsync({ objects: [f.hSyncObject], values: [edge] });
    const consumer = app.createContext({ hDevice, engine: 1 });
    app.waitForSynchronizationObjectFromGpu({ hContext: consumer, objects: [f.hSyncObject], values: [edge] });
    app.submitCommand({ hContext: consumer, commands: [{ fenceWrite: { hSyncObject: out.hSyncObject, value: 1n } }] });
    app.submitCommand({ hContext: ctx, commands: [{ fenceWrite: { hSyncObject: f.hSyncObject, value: edge } }] });
    machine.run();
    expect((await done).status).toBe('SUCCESS');
    expect(app.readFenceValue(f.hSyncObject)).toBe(edge);
    expect(app.readFenceValue(out.hSyncObject)).toBe(1n);
    // The window moved with the last signalled value.
    app.signal({ objects: [f.hSyncObject], values: [edge + WINDOW] });
    expect(app.readFenceValue(f.hSyncObject)).toBe(edge + WINDOW);
    expect(failure(() => app.signal({ objects: [f.hSyncObject], values: [edge + 2n * WINDOW + 1n] })).message).toMatch(/MF-07/);
    app.signal({ objects: [f.hSyncObject], values: [edge], flags: { allowFenceRewind: true } }); // back by exactly the window
    expect(app.readFenceValue(f.hSyncObject)).toBe(edge);
  });

  it('MF-07 a fence whose initial value is close to 2^32 wraps on its first GPU write', async () => {
    const w = await world(narrow);
    const { app, hDevice, machine } = w;
    const f = monitoredFence(app, hDevice, 0xffff_fff0n, 'F');
    const ctx = app.createContext({ hDevice, engine: 0 });
    const waiter = app.createThread('w', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [0x1_0000_0000n] }); });
    app.submitCommand({ hContext: ctx, commands: [{ work: { durationNs: 100 } }, { fenceWrite: { hSyncObject: f.hSyncObject, value: 0x1_0000_0010n } }] });
    let rawAtWrite = -1n;
    machine.adapters[0].hardware.stepListeners.push((step) => { if (step.kind === 'fence-write') rawAtWrite = rawValue(machine, app, f.hSyncObject); });
    machine.run();
    expect(rawAtWrite).toBe(0x10n); // the engine wrote 0x00000010 into the low half only
    expect(waiter.state).toBe('done');
    expect(app.readFenceValue(f.hSyncObject)).toBe(0x1_0000_0010n);
    expect(rawValue(machine, app, f.hSyncObject)).toBe(0x1_0000_0010n); // written back by the kernel
  });

  it('MF-07 with nobody waiting, user-mode reads see the extended value once the OS handled the first interrupt after the GPU write; inspectFence writes nothing (issue 27)', async () => {
    for (const inspect of [false, true]) {
      const w = await world(narrow);
      const { app, hDevice, machine } = w;
      const other = machine.createProcess('other');
      const otherDevice = other.createDevice({ hAdapter: other.openAdapter(0) });
      const f = monitoredFence(app, hDevice, 0xffff_fff0n, 'F');
      const g = monitoredFence(other, otherDevice, 0x2_ffff_ff00n, 'G');
      const ctx = app.createContext({ hDevice, engine: 0 });
      const otherCtx = other.createContext({ hDevice: otherDevice, engine: 1 });
      const record = globalOf(w, app, f.hSyncObject);
      const seen: string[] = [];
      machine.adapters[0].hardware.stepListeners.push((step) => {
        if (step.kind !== 'fence-write' || step.value !== 0x1_0000_0005n) return;
        // Between the 32-bit write and the OS's look: the mapping shows the old high half (the bound, docs/ARCHITECTURE.md).
        seen.push(`at write: raw ${rawValue(machine, app, f.hSyncObject).toString(16)} read ${app.readFenceValue(f.hSyncObject).toString(16)}`);
        if (!inspect) return;
        const inspected = machine.inspectFence(app, f.hSyncObject).currentValue;
        seen.push(`inspect ${inspected.toString(16)}, raw after it ${rawValue(machine, app, f.hSyncObject).toString(16)}, last signalled ${BigInt.asUintN(64, record.adapter.core.fenceLastSignaled(record.coreFence)).toString(16)}`);
      });
      app.submitCommand({ hContext: ctx, commands: [{ work: { durationNs: 100 } }, { fenceWrite: { hSyncObject: f.hSyncObject, value: 0x1_0000_0005n } }, { work: { durationNs: 20_000 } }] });
      other.submitCommand({ hContext: otherCtx, commands: [{ fenceWrite: { hSyncObject: g.hSyncObject, value: 0x3_0000_0100n } }] });
      // Event by event: from the first interrupt the OS handled after the write on, every user-mode read is extended.
      let handled = false;
      while (machine.scheduler.pending > 0) {
        machine.scheduler.step();
        if (seen.length && machine.trace.find({ kind: 'interrupt' }).length) handled = true;
        if (handled) {
          expect(app.readFenceValue(f.hSyncObject)).toBe(0x1_0000_0005n);
          expect(app.readMapping(f.FenceValueCPUVirtualAddress)).toBe(0x1_0000_0005n);
        }
      }
      expect(seen).toEqual(['at write: raw 5 read 5', ...(inspect ? ['inspect 100000005, raw after it 5, last signalled fffffff0'] : [])]);
      expect(handled).toBe(true);
      expect(other.readFenceValue(g.hSyncObject)).toBe(0x3_0000_0100n);
      expect(machine.inspectFence(app, f.hSyncObject).currentValue).toBe(0x1_0000_0005n);
      expect(machine.os.inspect.pendingWaiters).toBe(0);
    }
  });

  it('MF-07 a No64BitAtomics adapter neither creates nor opens a cross-adapter fence (one 64-bit word other GPUs write whole); refused, nothing changed (found by the fuzz test, issue 27)', async () => {
    // Before: a cross-adapter monitored fence on the 32-bit GPU, a 64-bit GPU's rewind of the shared word, and the OS's
    // extension on the 32-bit side made UINT64_MAX − 63 of it, a value nobody signalled, written back for every adapter.
    const w = await world({ adapters: [{ name: 'narrow', caps: { no64BitAtomics: true } }, { name: 'wide' }] });
    const { app, machine } = w;
    const narrowDevice = app.createDevice({ hAdapter: app.openAdapter('narrow') });
    const wideDevice = app.createDevice({ hAdapter: app.openAdapter('wide') });
    const before = JSON.stringify(machine.summary());
    const created = failure(() => monitoredFence(app, narrowDevice, 0n, 'X', { shared: true, crossAdapter: true }));
    expect(created.status).toBe('NOT_SUPPORTED');
    expect(created.message).toMatch(/No64BitAtomics.*cross-adapter fence's CurrentValue is one 64-bit word/);
    const wide = app.createNativeFence({ hDevice: wideDevice, name: 'Y', flags: { shared: true, crossAdapter: true } });
    const nt = app.shareObject(wide.hSyncObject);
    const afterCreate = JSON.stringify(machine.summary());
    const opened = failure(() => app.openNativeFenceFromNtHandle({ hNtHandle: nt, hDevice: narrowDevice }));
    expect(opened.status).toBe('NOT_SUPPORTED');
    expect(opened.parameter).toBe('hDevice');
    expect(JSON.parse(JSON.stringify(machine.summary()))).toEqual(JSON.parse(afterCreate));
    expect(afterCreate).not.toBe(before);
    // The same fence still opens on a 64-bit adapter without native fences (XA-05), and monitored fences of the 32-bit one alone still work.
    expect(monitoredFence(app, narrowDevice, 5n, 'Z').hSyncObject).toBeGreaterThan(0);
  });

  it('MF-07 a 64-bit adapter writes whole values and has no window', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const f = monitoredFence(app, hDevice, 0xffff_fff0n, 'F');
    const ctx = app.createContext({ hDevice, engine: 0 });
    const far = 0xffff_fff0n + 2n ** 40n;
    const done = app.waitAsync({ objects: [f.hSyncObject], values: [far] });
    app.submitCommand({ hContext: ctx, commands: [{ fenceWrite: { hSyncObject: f.hSyncObject, value: far } }] });
    let rawAtWrite = -1n;
    machine.adapters[0].hardware.stepListeners.push((step) => { if (step.kind === 'fence-write') rawAtWrite = rawValue(machine, app, f.hSyncObject); });
    machine.run();
    expect(rawAtWrite).toBe(far);
    expect((await done).status).toBe('SUCCESS');
  });
});

describe('legacy scanning and native interop', () => {
  async function legacySetup(evaluateLegacyMonitoredFences: boolean) {
    const w = await world({ adapters: [{ interrupts: { payload: 'noList', evaluateLegacyMonitoredFences } }] });
    const { app, hDevice, machine } = w;
    const m = monitoredFence(app, hDevice, 0n, 'M');
    const n = app.createNativeFence({ hDevice, name: 'N' });
    const monitoredWaiter = app.createThread('monitored', function* (cpu) { return yield cpu.wait({ objects: [m.hSyncObject], values: [1n] }); });
    const nativeWaiter = app.createThread('native', function* (cpu) { return yield cpu.wait({ objects: [n.hSyncObject], values: [1n] }); });
    machine.run();
    // The GPU writes M with no interrupt of its own, then signals N from a hardware queue.
    const core = machine.adapters[0].core;
    expect(core.engineSignalWrite(0, app.kernel.slot, m.FenceValueGPUVirtualAddress, 1n)).toBe(0);
    core.engineDrain(0);
    const q = app.createHwQueue({ hDevice, engine: 1, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: n.hSyncObject, value: 1n } }] });
    machine.run();
    return { machine, monitoredWaiter, nativeWaiter };
  }

  it('INT-04 a no-list native interrupt with EvaluateLegacyMonitoredFences also scans monitored fence waiters', async () => {
    const { machine, monitoredWaiter, nativeWaiter } = await legacySetup(true);
    const interrupt = machine.trace.find({ kind: 'interrupt', name: 'DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED' });
    expect(interrupt).toHaveLength(1);
    expect(interrupt[0].args).toMatchObject({ pSignaledNativeFenceArray: 'NULL', EvaluateLegacyMonitoredFences: true });
    expect(nativeWaiter.state).toBe('done');
    expect(monitoredWaiter.state).toBe('done');
    expect((monitoredWaiter.result as WaitResult).timeNs).toBe(interrupt[0].timeNs);
    expect(machine.summary().legacy).toMatchObject({ legacyScans: 1, scans: 1, fencesExamined: 1 });
    expect(machine.os.inspect.counters.fencesScanned).toBe(1); // the native scan read N only
    expect(machine.os.inspect.counters.spuriousInterrupts).toBe(0);
  });

  it('INT-04 without EvaluateLegacyMonitoredFences a no-list interrupt scans native fence waiters only', async () => {
    const { machine, monitoredWaiter, nativeWaiter } = await legacySetup(false);
    const interrupt = machine.trace.find({ kind: 'interrupt', name: 'DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED' });
    expect(interrupt[0].args).toMatchObject({ pSignaledNativeFenceArray: 'NULL', EvaluateLegacyMonitoredFences: false });
    expect(nativeWaiter.state).toBe('done');
    expect(monitoredWaiter.state).toBe('blocked'); // its value is reached, but nobody looked
    expect(machine.summary().legacy).toMatchObject({ legacyScans: 0, scans: 0 });
    expect(machine.os.inspect.counters.fencesScanned).toBe(1);
  });

  it('CAP-04 monitored fences and kernel-mode contexts on an adapter without native fences call no native fence DDI and raise no native interrupt', async () => {
    const w = await world({ adapters: [{ caps: { nativeGpuFence: false } }] });
    const { app, hDevice, machine } = w;
    expect(failure(() => app.createNativeFence({ hDevice })).status).toBe('NOT_SUPPORTED');
    const f = monitoredFence(app, hDevice, 0n, 'F');
    const ctx = app.createContext({ hDevice, engine: 0 });
    app.submitCommand({ hContext: ctx, commands: [{ work: { durationNs: 100 } }, { fenceWrite: { hSyncObject: f.hSyncObject, value: 2n } }] });
    const waiter = app.createThread('w', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [2n] }); });
    machine.run();
    app.signal({ objects: [f.hSyncObject], values: [3n] });
    app.destroySynchronizationObject(f.hSyncObject);
    expect(waiter.state).toBe('done');
    for (const name of NATIVE_DDIS) expect(ddiCalls(machine, name)).toHaveLength(0);
    expect(machine.trace.find({ kind: 'interrupt', name: 'DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED' })).toHaveLength(0);
  });

  it('NF-20 device removal signals monitored fences to UINT64_MAX and drops the contexts\' queued work', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const f = monitoredFence(app, hDevice, 0n, 'F');
    const ctx = app.createContext({ hDevice, engine: 0 });
    const g = monitoredFence(app, hDevice, 0n, 'G');
    app.waitForSynchronizationObjectFromGpu({ hContext: ctx, objects: [g.hSyncObject], values: [1n] });
    app.submitCommand({ hContext: ctx, commands: [{ fenceWrite: { hSyncObject: f.hSyncObject, value: 1n } }] });
    const waiter = app.createThread('w', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [10n] }); });
    machine.run();
    machine.removeDevice(0);
    machine.run();
    expect(waiter.state).toBe('done');
    expect(app.readFenceValue(f.hSyncObject)).toBe(UINT64_MAX);
    expect(machine.os.inspect.contextsOf(app.kernel)[0].packets).toHaveLength(0);
    expect(failure(() => app.submitCommand({ hContext: ctx, commands: [{ work: { durationNs: 1 } }] })).status).toBe('DEVICE_REMOVED');
    app.destroyContext(ctx);
  });
});

describe('kernel-mode context lifecycle', () => {
  it('MF-05 destroying a context drops its queued and running work; a new context on the same ring never sees a stale completion', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const f = monitoredFence(app, hDevice, 0n, 'F');
    const old = app.createContext({ hDevice, engine: 0, name: 'old' });
    app.submitCommand({ hContext: old, commands: [{ work: { durationNs: 1000 } }] });
    app.waitForSynchronizationObjectFromGpu({ hContext: old, objects: [f.hSyncObject], values: [1n] });
    app.submitCommand({ hContext: old, commands: [{ work: { durationNs: 1000 } }] });
    machine.run(1050); // the first buffer ran, its completion interrupt is on its way
    app.destroyContext(old);
    expect(failure(() => app.submitCommand({ hContext: old, commands: [{ work: { durationNs: 1 } }] })).message).toMatch(/closed or destroyed/);
    const fresh = app.createContext({ hDevice, engine: 0, name: 'fresh' });
    app.submitCommand({ hContext: fresh, commands: [{ work: { durationNs: 5000 } }] });
    machine.run();
    expect(machine.os.inspect.bugChecks).toHaveLength(0);
    const completions = machine.trace.find({ kind: 'interrupt', name: 'DXGK_INTERRUPT_DMA_COMPLETED' });
    expect(completions).toHaveLength(1); // only the fresh context's buffer
    expect(machine.summary().legacy.commandBuffers).toBe(2);
    // The fence no queued work names any more can be destroyed.
    app.destroySynchronizationObject(f.hSyncObject);
  });
});
