// Fence lifetime and handle aliasing (issue 15): deferred destroy while GPU
// work names a fence, GPU waits on destroyed fences, a fence twice in one
// call, GPU rewinds, failed CPU threads, the stuck report, small API gaps.
import { describe, it, expect } from 'vitest';
import { CpuThreadError, WddmError, createMachine, type GpuRewind, type RuntimeProcess } from '../src/index.js';
import { world, globalOf, ddiCalls, UINT64_MAX, processOf, osModules } from './helpers.js';

describe('fence storage lifetime', () => {
  it('NF-15 a fence destroyed while submitted GPU work names it keeps its storage until that work ran; a fence made meanwhile is never written through', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const keeper = app.createNativeFence({ hDevice, name: 'keeper' }); // keeps the fence page mapped
    const dead = app.createNativeFence({ hDevice, name: 'dead' });
    const deadSlot = globalOf(w, app, dead.hSyncObject);
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ work: { durationNs: 10_000 } }, { signal: { hSyncObject: dead.hSyncObject, value: 1n } }] });
    app.destroySynchronizationObject(dead.hSyncObject);
    const ddisAfterDestroy = machine.trace.events.filter((e) => e.kind === 'ddi' && /^DxgkDdi(Close|Destroy)NativeFence$/.test(e.name)).length;
    const fresh = app.createNativeFence({ hDevice, name: 'fresh', initialValue: 5n });
    const freshSlot = globalOf(w, app, fresh.hSyncObject).coreFence;
    const waiter = app.waitAsync({ objects: [fresh.hSyncObject], values: [6n], timeoutNs: 50_000 });
    machine.run();
    expect(app.readFenceValue(fresh.hSyncObject)).toBe(5n); // not 1: the dead fence's signal wrote its own slot
    await expect(waiter).resolves.toMatchObject({ status: 'TIMEOUT' });
    expect(freshSlot).not.toBe(deadSlot.coreFence); // the slot was not reused while the signal was in flight
    // Closed at once for the caller, but the driver was told only after the GPU work ran.
    expect(() => app.readFenceValue(dead.hSyncObject)).toThrow(/was closed or destroyed/);
    expect(ddisAfterDestroy).toBe(0);
    expect(machine.trace.find({ kind: 'os', name: 'handle closed; close deferred while GPU commands name it' })).toHaveLength(1);
    // The signal executed, then Close and Destroy followed (NF-15 order), and the slot is free again.
    const names = machine.trace.events.filter((e) => (e.kind === 'gpu' && e.name === 'signal') || (e.kind === 'ddi' && /^DxgkDdi(Close|Destroy)NativeFence$/.test(e.name))).map((e) => e.name);
    expect(names).toEqual(['signal', 'DxgkDdiCloseNativeFence', 'DxgkDdiDestroyNativeFence']);
    expect(deadSlot.destroyed).toBe(true);
    expect(machine.summary().os.deferredCloses).toBe(1);
    expect(machine.summary().adapters[0].liveFences).toBe(2);
    expect(app.readFenceValue(keeper.hSyncObject)).toBe(0n);
  });

  it('NF-15 a shared fence: each process\'s close waits for its own queue\'s work; the last one out destroys after everything ran', async () => {
    const w = await world({}, 'A');
    const { machine, app: A, hDevice } = w;
    const B = machine.createProcess('B');
    const hDeviceB = B.createDevice({ hAdapter: B.openAdapter(0) });
    const f = A.createNativeFence({ hDevice, flags: { shared: true }, name: 'f' });
    const fb = B.openNativeFenceFromNtHandle({ hNtHandle: A.duplicateHandle(A.shareObject(f.hSyncObject), B), hDevice: hDeviceB });
    for (const p of [A, B]) for (const h of [...processOf(p).ntHandles.keys()]) p.closeHandle(h);
    const qb = B.createHwQueue({ hDevice: hDeviceB, nativeProgressFence: false });
    B.submit({ hHwQueue: qb.hHwQueue, commands: [{ work: { durationNs: 5000 } }, { signal: { hSyncObject: fb.hSyncObject, value: 7n } }] });
    const seen = A.waitAsync({ objects: [f.hSyncObject], values: [7n] });
    B.destroySynchronizationObject(fb.hSyncObject); // B's close is deferred; A still holds the fence
    const closesBeforeRun = ddiCalls(machine, 'DxgkDdiCloseNativeFence').length;
    machine.run();
    // B's mapping stayed until its signal ran: no GPU page fault, no reset, and the value is the one B signalled.
    expect(machine.trace.find({ kind: 'fault' })).toHaveLength(0);
    expect(A.readFenceValue(f.hSyncObject)).toBe(7n);
    await expect(seen).resolves.toMatchObject({ status: 'SUCCESS' }); // B's in-flight signal still reached A's waiter
    expect(closesBeforeRun).toBe(0);
    expect(globalOf(w, A, f.hSyncObject).destroyPending).toBe(false);
    expect(ddiCalls(machine, 'DxgkDdiCloseNativeFence')).toHaveLength(1);
    A.destroySynchronizationObject(f.hSyncObject);
    expect(ddiCalls(machine, 'DxgkDdiDestroyNativeFence')).toHaveLength(1);
  });

  it('NF-06 a queue blocked on a fence whose last handle was destroyed is released by a GPU signal already in flight', async () => {
    const { app, hDevice, machine } = await world();
    const f = app.createNativeFence({ hDevice, name: 'f' });
    const done = app.createNativeFence({ hDevice, name: 'done' });
    const waiting = app.createHwQueue({ hDevice, engine: 0, nativeProgressFence: false, name: 'waiting' });
    const late = app.createHwQueue({ hDevice, engine: 1, nativeProgressFence: false, name: 'late' });
    app.submit({ hHwQueue: waiting.hHwQueue, commands: [{ wait: { hSyncObject: f.hSyncObject, value: 1n } }, { signal: { hSyncObject: done.hSyncObject, value: 1n } }] });
    app.submit({ hHwQueue: late.hHwQueue, commands: [{ work: { durationNs: 20_000 } }, { signal: { hSyncObject: f.hSyncObject, value: 1n } }] });
    machine.run(1000);
    const cpuWait = app.waitAsync({ objects: [f.hSyncObject], values: [1n] });
    app.destroySynchronizationObject(f.hSyncObject);
    await expect(cpuWait).resolves.toMatchObject({ status: 'OBJECT_DESTROYED' }); // no handle left: CPU waiters end at once
    const next = app.createNativeFence({ hDevice, name: 'next' }); // must not get f's slot while 'late' still signals it
    const doneWait = app.waitAsync({ objects: [done.hSyncObject], values: [1n] });
    machine.run();
    expect(app.readFenceValue(next.hSyncObject)).toBe(0n);
    await expect(doneWait).resolves.toMatchObject({ status: 'SUCCESS' });
    expect(machine.trace.find({ kind: 'fault' })).toHaveLength(0); // no fault, no reset
    expect(ddiCalls(machine, 'DxgkDdiDestroyNativeFence')).toHaveLength(1);
    expect(machine.stuck().stuck).toBe(false);
  });

  it('NF-06 a queue blocked on a destroyed fence that nothing in flight can signal is a GPU hang: its adapter is reset (TDR) and nobody waits forever', async () => {
    const { app, hDevice, machine } = await world();
    const f = app.createNativeFence({ hDevice, name: 'f' }); // not shared: its page stays mapped for 'behind'
    const behind = app.createNativeFence({ hDevice, name: 'behind' });
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false, name: 'blocked' });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ wait: { hSyncObject: f.hSyncObject, value: 1n } }, { signal: { hSyncObject: behind.hSyncObject, value: 1n } }] });
    machine.run();
    const onDestroyed = app.waitAsync({ objects: [f.hSyncObject], values: [1n] });
    const onBehind = app.waitAsync({ objects: [behind.hSyncObject], values: [1n] });
    app.destroySynchronizationObject(f.hSyncObject);
    expect(() => machine.run()).not.toThrow();
    expect(machine.os.inspect.pendingWaiters).toBe(0); // nobody waits forever …
    expect(machine.summary().adapters[0].blockedQueues).toBe(0); // … and no queue is left blocked
    await expect(onDestroyed).resolves.toMatchObject({ status: 'OBJECT_DESTROYED' });
    await expect(onBehind).resolves.toMatchObject({ status: 'SUCCESS' }); // NF-20: signalled to UINT64_MAX
    const hang = machine.trace.find({ kind: 'fault', name: 'GPU wait can never be satisfied' });
    expect(hang).toHaveLength(1);
    expect(hang[0].args).toMatchObject({ queue: 'blocked', fence: 'f', value: '1', currentValue: '0', outcome: 'reset (TDR)' });
    expect(machine.trace.find({ kind: 'fault', name: 'device removed (TDR)' })).toHaveLength(1);
    expect(machine.trace.find({ kind: 'fault', name: 'GPU fault' })).toHaveLength(0); // never a page fault
    expect(machine.summary().os.orphanedWaits).toBe(1);
    expect(machine.stuck().stuck).toBe(false);
    expect(app.readFenceValue(behind.hSyncObject)).toBe(UINT64_MAX);
  });
});

describe('a fence twice in one call', () => {
  it('NF-08 the same fence twice in one wait is refused up front, naming both indexes, and changes nothing', async () => {
    const w = await world();
    const { app, hDevice, machine } = w;
    const f = app.createNativeFence({ hDevice, name: 'f', flags: { shared: true } });
    const again = app.openNativeFenceFromNtHandle({ hNtHandle: app.shareObject(f.hSyncObject), hDevice }); // a second handle, same fence
    const other = app.createNativeFence({ hDevice, name: 'other' });
    const g = globalOf(w, app, f.hSyncObject);
    const before = { events: machine.trace.events.length, waiters: machine.os.inspect.pendingWaiters, blocks: g.adapter.core.fenceWaiterCount(g.coreFence) };
    const attempts = [
      { objects: [f.hSyncObject, f.hSyncObject], values: [9n, 9n], waitAny: true },
      { objects: [f.hSyncObject, f.hSyncObject], values: [3n, 9n] },
      { objects: [other.hSyncObject, f.hSyncObject, again.hSyncObject], values: [1n, 2n, 3n], waitAny: true },
    ];
    for (const args of attempts) {
      let error: unknown;
      try { void app.waitAsync(args); } catch (e) { error = e; }
      expect(error).toBeInstanceOf(WddmError);
      expect((error as WddmError).status).toBe('INVALID_PARAMETER');
      expect((error as WddmError).message).toMatch(/^objects\[(0|1)\] and objects\[(1|2)\] name the same fence \(f\); a wait names each fence at most once/);
    }
    expect(() => app.waitWithEvent({ objects: [f.hSyncObject, again.hSyncObject], values: [1n, 1n], hAsyncEvent: app.createEvent('e') })).toThrow(/objects\[0\] and objects\[1\] name the same fence/);
    expect(() => app.signal({ objects: [f.hSyncObject, again.hSyncObject], values: [5n, 3n] })).toThrow(/objects\[0\] and objects\[1\] name the same fence \(f\); a signal names each fence at most once/);
    expect(machine.trace.events.length).toBe(before.events);
    expect(machine.os.inspect.pendingWaiters).toBe(before.waiters);
    expect(g.adapter.core.fenceWaiterCount(g.coreFence)).toBe(before.blocks);
    expect(app.readFenceValue(f.hSyncObject)).toBe(0n);
    // Waiters popped by the same signal are all woken; nothing throws on the interrupt path either.
    const first = app.waitAsync({ objects: [f.hSyncObject, other.hSyncObject], values: [9n, 9n], waitAny: true });
    const second = app.waitAsync({ objects: [again.hSyncObject], values: [9n] });
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 9n } }] });
    expect(() => machine.run()).not.toThrow();
    await expect(first).resolves.toMatchObject({ status: 'SUCCESS', index: 0 });
    await expect(second).resolves.toMatchObject({ status: 'SUCCESS' });
  });
});

describe('one fence through two adapters in one call', () => {
  it('NF-19 a signal or wait naming one cross-adapter fence through two adapters\' handles is refused naming both indexes, in any process, and changes nothing (issue 27)', async () => {
    const machine = await createMachine({ seed: 3, adapters: [{ name: 'a0' }, { name: 'a1' }, { name: 'narrow', caps: { nativeGpuFence: false } }] });
    const A = machine.createProcess('A'), B = machine.createProcess('B');
    const device = (p: RuntimeProcess, a: string) => p.createDevice({ hAdapter: p.openAdapter(a) });
    const x1 = A.createNativeFence({ hDevice: device(A, 'a1'), name: 'X', flags: { shared: true, crossAdapter: true } });
    const nt = A.shareObject(x1.hSyncObject);
    const x0 = A.openNativeFenceFromNtHandle({ hNtHandle: nt, hDevice: device(A, 'a0') });
    const xm = A.openNativeFenceFromNtHandle({ hNtHandle: nt, hDevice: device(A, 'narrow') }); // XA-05: a monitored record, same word
    const ntB = A.duplicateHandle(nt, B);
    const b0 = B.openNativeFenceFromNtHandle({ hNtHandle: ntB, hDevice: device(B, 'a0') });
    const b1 = B.openNativeFenceFromNtHandle({ hNtHandle: ntB, hDevice: device(B, 'a1') });
    const other = A.createNativeFence({ hDevice: device(A, 'a0'), name: 'other' });
    A.signal({ objects: [x1.hSyncObject], values: [4n] });
    const woken: string[] = [];
    B.waitAsync({ objects: [b1.hSyncObject], values: [9n] }).then((r) => woken.push(r.status));
    machine.run();
    const state = () => JSON.stringify([machine.trace.events.length, machine.os.inspect.pendingWaiters, String(A.readFenceValue(x0.hSyncObject)), machine.summary().os]);
    const before = state();
    const refused = (call: () => unknown, pattern: RegExp) => {
      let error: unknown;
      try { call(); } catch (e) { error = e; }
      expect(error).toBeInstanceOf(WddmError);
      expect((error as WddmError).status).toBe('INVALID_PARAMETER');
      expect((error as WddmError).message).toMatch(pattern);
      expect(state()).toBe(before);
    };
    // The reproduction: 9 then 8 through the two adapters would end the fence at 8 with no AllowFenceRewind.
    refused(() => A.signal({ objects: [x0.hSyncObject, x1.hSyncObject], values: [9n, 8n] }), /^objects\[0\] and objects\[1\] name the same fence \(X(@\w+)? and X(@\w+)?, one cross-adapter fence through the handles of two adapters\); a signal names each fence at most once/);
    refused(() => A.signal({ objects: [other.hSyncObject, x1.hSyncObject, x0.hSyncObject], values: [1n, 9n, 9n] }), /^objects\[1\] and objects\[2\] name the same fence \(X(@\w+)? and X(@\w+)?, one cross-adapter fence through the handles of two adapters\)/);
    refused(() => A.signal({ objects: [x0.hSyncObject, xm.hSyncObject], values: [9n, 9n] }), /^objects\[0\] and objects\[1\] name the same fence \(X(@\w+)? and X(@\w+)?, one cross-adapter fence through the handles of two adapters\)/);
    refused(() => B.signal({ objects: [b1.hSyncObject, b0.hSyncObject], values: [9n, 8n], flags: { allowFenceRewind: true } }), /^objects\[0\] and objects\[1\] name the same fence \(X(@\w+)? and X(@\w+)?, one cross-adapter fence through the handles of two adapters\)/);
    refused(() => { void A.waitAsync({ objects: [x0.hSyncObject, x1.hSyncObject], values: [5n, 6n] }); }, /^objects\[0\] and objects\[1\] name the same fence \(X(@\w+)? and X(@\w+)?, one cross-adapter fence through the handles of two adapters\); a wait names each fence at most once/);
    refused(() => { void B.waitAsync({ objects: [b0.hSyncObject, b1.hSyncObject], values: [5n, 6n], waitAny: true }); }, /^objects\[0\] and objects\[1\] name the same fence \(X(@\w+)? and X(@\w+)?, one cross-adapter fence through the handles of two adapters\)/);
    refused(() => A.waitWithEvent({ objects: [xm.hSyncObject, x1.hSyncObject], values: [5n, 5n], hAsyncEvent: A.createEvent('e') }), /^objects\[0\] and objects\[1\] name the same fence \(X(@\w+)? and X(@\w+)?, one cross-adapter fence through the handles of two adapters\)/);
    // Each handle alone still works, and the waiter at 9 wakes when 9 is written.
    A.signal({ objects: [x0.hSyncObject, other.hSyncObject], values: [9n, 1n] });
    machine.run();
    await Promise.resolve();
    expect(A.readFenceValue(x1.hSyncObject)).toBe(9n);
    expect(woken).toEqual(['SUCCESS']);
    expect(machine.os.inspect.lostWakeups()).toEqual([]);
  });
});

describe('GPU signals below CurrentValue', () => {
  it('NF-19 a GPU signal below CurrentValue lowers the fence (D3D12 allows it), and the trace, the counter and onRewind say so', async () => {
    const { app, hDevice, machine } = await world();
    const f = app.createNativeFence({ hDevice, name: 'f' });
    const fast = app.createHwQueue({ hDevice, engine: 0, nativeProgressFence: false, name: 'fast' });
    const slow = app.createHwQueue({ hDevice, engine: 1, nativeProgressFence: false, name: 'slow' });
    const early = app.waitAsync({ objects: [f.hSyncObject], values: [2n] });
    app.submit({ hHwQueue: fast.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 2n } }] });
    app.submit({ hHwQueue: slow.hHwQueue, commands: [{ work: { durationNs: 5000 } }, { signal: { hSyncObject: f.hSyncObject, value: 1n } }] });
    machine.run();
    expect(app.readFenceValue(f.hSyncObject)).toBe(1n);
    await expect(early).resolves.toMatchObject({ status: 'SUCCESS' }); // woken at 2 stays woken (NF-19)
    const line = machine.trace.find({ kind: 'gpu', name: 'gpu rewind' });
    expect(line).toHaveLength(1);
    expect(line[0].actor).toBe('gpu0/engine1');
    expect(line[0].args).toMatchObject({ queue: 'slow', fence: 'f', from: '2', to: '1' });
    expect(machine.summary().os.gpuRewinds).toBe(1);
    expect(machine.summaryText()).toMatch(/fence lifetime: gpuRewinds=1/);
    // A waiter that comes after the rewind waits for the value again; a signal that does not go down is no rewind.
    const later = app.waitAsync({ objects: [f.hSyncObject], values: [2n], timeoutNs: 1000 });
    app.submit({ hHwQueue: fast.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 1n } }] });
    machine.run();
    await expect(later).resolves.toMatchObject({ status: 'TIMEOUT' });
    expect(machine.summary().os.gpuRewinds).toBe(1);
    // The hook a contract checker uses: every rewind as a record.
    const rewinds: GpuRewind[] = [];
    const stop = machine.os.inspect.onGpuRewind((r) => rewinds.push(r));
    app.signal({ objects: [f.hSyncObject], values: [4n] });
    app.submit({ hHwQueue: slow.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 3n } }] });
    machine.run();
    stop();
    const second = machine.trace.find({ kind: 'gpu', name: 'gpu rewind' })[1];
    expect(rewinds).toEqual([{ timeNs: second.timeNs, adapter: 'gpu0', engine: 1, queue: 'slow', fence: 'f', hSyncObject: f.hSyncObject, fromValue: 4n, toValue: 3n }]);
    // CPU signals keep NF-19's rule.
    expect(() => app.signal({ objects: [f.hSyncObject], values: [0n] })).toThrow(/fence values only move forward unless flags.allowFenceRewind/);
  });
});

describe('CPU threads and liveness', () => {
  it('NF-10 machine.run() throws a CpuThreadError for a thread that failed with anything but a WddmError; refused calls only fail the thread', async () => {
    const { app, hDevice, machine } = await world();
    const f = app.createNativeFence({ hDevice });
    const bug = new RangeError('index out of range in the thread body');
    app.createThread('refused', function* (cpu) { yield cpu.wait({ objects: [0x1234], values: [1n] }); });
    app.createThread('buggy', function* (cpu) { yield cpu.sleep(100); throw bug; });
    let thrown: unknown;
    try { machine.run(); } catch (e) { thrown = e; }
    expect(thrown).toBeInstanceOf(CpuThreadError);
    expect((thrown as CpuThreadError).message).toBe('CPU thread "app:buggy" failed: RangeError: index out of range in the thread body');
    expect((thrown as CpuThreadError).cause).toBe(bug);
    expect((thrown as CpuThreadError).thread.name).toBe('buggy');
    const [refused, buggy] = app.threads;
    expect(refused.state).toBe('failed');
    expect(refused.error).toBeInstanceOf(WddmError);
    expect(buggy.state).toBe('failed');
    expect(machine.trace.find({ kind: 'cpu', name: 'thread failed' }).map((e) => e.args.unexpected)).toEqual([false, true]);
    // The machine is consistent: run() goes on.
    app.createThread('after', function* (cpu) { yield cpu.wait({ objects: [f.hSyncObject], values: [0n] }); });
    expect(() => machine.run()).not.toThrow();
    expect(app.threads[2].state).toBe('done');
    // Yielding something that is not an operation is a bug too; a bad handle to waitEvent is a refused call.
    app.createThread('yields junk', function* () { yield 42 as never; });
    expect(() => machine.run()).toThrow(/CPU thread "app:yields junk" failed: TypeError: a thread must yield/);
    app.createThread('bad event', function* (cpu) { yield cpu.waitEvent(0x999); });
    expect(() => machine.run()).not.toThrow();
    expect(app.threads[4].error).toBeInstanceOf(WddmError);
  });

  it('NF-10 machine.stuck() lists blocked queues, pending waiters and unfinished threads, and names a deadlock cycle', async () => {
    const { app, hDevice, machine } = await world();
    const a = app.createNativeFence({ hDevice, name: 'a' });
    const b = app.createNativeFence({ hDevice, name: 'b' });
    const outside = app.createNativeFence({ hDevice, name: 'outside' });
    const render = app.createHwQueue({ hDevice, engine: 0, nativeProgressFence: false, name: 'render' });
    const compose = app.createHwQueue({ hDevice, engine: 1, nativeProgressFence: false, name: 'compose' });
    app.submit({ hHwQueue: render.hHwQueue, commands: [{ wait: { hSyncObject: a.hSyncObject, value: 1n } }, { signal: { hSyncObject: b.hSyncObject, value: 1n } }] });
    app.submit({ hHwQueue: compose.hHwQueue, commands: [{ wait: { hSyncObject: b.hSyncObject, value: 1n } }, { signal: { hSyncObject: a.hSyncObject, value: 1n } }] });
    app.createThread('presenter', function* (cpu) { yield cpu.wait({ objects: [b.hSyncObject], values: [1n] }); });
    const hEvent = app.createEvent('frame');
    app.waitWithEvent({ objects: [outside.hSyncObject], values: [3n], hAsyncEvent: hEvent });
    app.createThread('eventWaiter', function* (cpu) { yield cpu.waitEvent(hEvent); });
    // A process with no thread: its waiter waits for a CPU signal from outside the machine (stuck, not deadlocked).
    const tool = machine.createProcess('tool');
    const toolFence = tool.createNativeFence({ hDevice: tool.createDevice({ hAdapter: tool.openAdapter(0) }), name: 'toolFence' });
    void tool.waitAsync({ objects: [toolFence.hSyncObject], values: [1n] });
    machine.run();
    const report = machine.stuck();
    expect(report.stuck).toBe(true);
    expect(report.queues.map((q) => [q.queue, q.waits[0].fence, q.waits[0].value, q.waits[0].currentValue, q.queuedSignals, q.deadlocked])).toEqual([
      ['render', 'a', 1n, 0n, [{ fence: 'b', value: 1n }], true],
      ['compose', 'b', 1n, 0n, [{ fence: 'a', value: 1n }], true],
    ]);
    expect(report.waiters.map((w) => [w.label, w.thread ?? w.event ?? '-', w.deadlocked])).toEqual([
      // only app's threads could signal "outside", and the one that would wake is blocked on the event this waiter sets
      ['event frame', 'frame', true],
      ['tool:async', '-', false],            // a CPU signal from outside the machine would end it
      ['app:presenter', 'app:presenter', true], // behind the queues' deadlock
    ]);
    expect(report.threads.map((t) => [t.thread, t.blockedOn, t.deadlocked])).toEqual([
      ['presenter', 'waiter app:presenter', true], ['eventWaiter', 'event frame', true],
    ]);
    // One deadlock: app's threads hold handles to a and b too, so everything of app's is one knot; its shortest cycle is named.
    expect(report.deadlocks.map((d) => d.cycle)).toEqual([['queue gpu0/render', 'queue gpu0/compose']]);
    expect(report.deadlocks[0].text).toContain('queue gpu0/render waits for a >= 1 (CurrentValue 0); that would come from queue gpu0/compose');
    const text = machine.summaryText();
    expect(text).toContain('STUCK: 2 queues blocked, 3 CPU waiters pending, 2 CPU threads unfinished, 1 deadlock');
    expect(text).toContain('deadlock (a cycle of 2):');
    // Releasing it from outside ends everything.
    app.signal({ objects: [a.hSyncObject, outside.hSyncObject], values: [1n, 3n] });
    tool.signal({ objects: [toolFence.hSyncObject], values: [1n] });
    machine.run();
    expect(machine.stuck()).toEqual({ stuck: false, queues: [], waiters: [], threads: [], deadlocks: [], lostWakeups: [], neverSignalled: [] });
    expect(machine.summaryText()).not.toContain('STUCK');
  });

  it('NF-10 a CPU thread that is the only one able to signal what it waits for is a deadlock (a cycle through a queue)', async () => {
    const { app, hDevice, machine } = await world();
    const go = app.createNativeFence({ hDevice, name: 'go' });
    const done = app.createNativeFence({ hDevice, name: 'done' });
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false, name: 'gpu' });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ wait: { hSyncObject: go.hSyncObject, value: 1n } }, { signal: { hSyncObject: done.hSyncObject, value: 1n } }] });
    app.createThread('main', function* (cpu) {
      yield cpu.wait({ objects: [done.hSyncObject], values: [1n] }); // waits first …
      app.signal({ objects: [go.hSyncObject], values: [1n] });        // … and would only signal after
    });
    machine.run();
    expect(machine.stuck().deadlocks.map((d) => d.cycle)).toEqual([['queue gpu0/gpu', 'thread app:main', 'waiter app:main']]);
  });
});

describe('small API gaps', () => {
  it('NF-08 CPU events are manual-reset: a set event stays set until resetEvent, and a reset one blocks again', async () => {
    const { app, hDevice, machine } = await world();
    const f = app.createNativeFence({ hDevice });
    const hEvent = app.createEvent('ready');
    app.waitWithEvent({ objects: [f.hSyncObject], values: [1n], hAsyncEvent: hEvent });
    app.signal({ objects: [f.hSyncObject], values: [1n] });
    expect(app.isEventSet(hEvent)).toBe(true);
    const woke: string[] = [];
    app.createThread('one', function* (cpu) { woke.push(`one:${(yield cpu.waitEvent(hEvent)).status}`); });
    app.createThread('two', function* (cpu) { woke.push(`two:${(yield cpu.waitEvent(hEvent)).status}`); });
    machine.run();
    expect(woke).toEqual(['one:SUCCESS', 'two:SUCCESS']); // both pass: it stays set
    app.resetEvent(hEvent);
    expect(app.isEventSet(hEvent)).toBe(false);
    app.resetEvent(hEvent); // resetting a reset event does nothing
    expect(machine.trace.find({ kind: 'cpu', name: 'KEVENT reset' })).toHaveLength(1);
    app.createThread('three', function* (cpu) { woke.push(`three:${(yield cpu.waitEvent(hEvent, 500)).status}`); });
    machine.run();
    expect(woke.at(-1)).toBe('three:TIMEOUT'); // blocks again, times out
    app.waitWithEvent({ objects: [f.hSyncObject], values: [2n], hAsyncEvent: hEvent });
    app.signal({ objects: [f.hSyncObject], values: [2n] });
    expect(app.isEventSet(hEvent)).toBe(true);
    expect(() => app.resetEvent(f.hSyncObject)).toThrow(/is a sync object \(hSyncObject\); expected a CPU event/);
  });

  it('NF-02 machine.inspectFence counts a fence\'s CPU waiters and shows MonitoredValue kernel-side; user mode still cannot read it', async () => {
    const { app, hDevice, machine } = await world();
    const f = app.createNativeFence({ hDevice, name: 'f', initialValue: 1n });
    expect(machine.inspectFence(app, f.hSyncObject)).toEqual({
      fence: 'f', adapter: 'gpu0', kind: 'native', currentValue: 1n, monitoredValue: UINT64_MAX, cpuWaiters: 0,
      gpuWaitsInFlight: 0, gpuSignalsInFlight: 0, openHandles: 1, destroyPending: false,
    });
    void app.waitAsync({ objects: [f.hSyncObject], values: [5n] });
    void app.waitAsync({ objects: [f.hSyncObject], values: [3n] });
    expect(machine.inspectFence(app, f.hSyncObject)).toMatchObject({ cpuWaiters: 2, monitoredValue: 2n });
    app.signal({ objects: [f.hSyncObject], values: [3n] });
    expect(machine.inspectFence(app, f.hSyncObject)).toMatchObject({ cpuWaiters: 1, monitoredValue: 4n, currentValue: 3n });
    const other = machine.createProcess('other');
    expect(() => machine.inspectFence(other, f.hSyncObject)).toThrow(/belongs to process "app"/);
    expect(Object.getOwnPropertyNames(Object.getPrototypeOf(app)).filter((m) => /inspect|waiterCount|monitored/i.test(m))).toEqual([]);
  });
});

describe('lost wakeups the seeded random test found', () => {
  it('XA-04 a value another adapter\'s GPU wrote wakes this adapter\'s waiters even when this adapter\'s optimized interrupt propagates it first (fuzz seed 109689)', async () => {
    const { createMachine } = await import('../src/index.js');
    const machine = await createMachine({ seed: 3, adapters: [{ name: 'gpu0', interrupts: { payload: 'noList' } }, { name: 'gpu1', caps: { optimizedNativeFenceSignaledInterrupt: true } }] });
    const app = machine.createProcess('app');
    const d0 = app.createDevice({ hAdapter: app.openAdapter(0) });
    const d1 = app.createDevice({ hAdapter: app.openAdapter(1) });
    const f = app.createNativeFence({ hDevice: d0, flags: { shared: true, crossAdapter: true }, name: 'f' });
    const f1 = app.openNativeFenceFromNtHandle({ hNtHandle: app.shareObject(f.hSyncObject), hDevice: d1 });
    const g = app.createNativeFence({ hDevice: d1, name: 'g' });
    const q1 = app.createHwQueue({ hDevice: d1, nativeProgressFence: false }); // its interrupt is served first
    const q0 = app.createHwQueue({ hDevice: d0, nativeProgressFence: false });
    machine.run();
    const onF = app.waitAsync({ objects: [f1.hSyncObject], values: [1n] }); // on gpu1's record of f
    const onG = app.waitAsync({ objects: [g.hSyncObject], values: [1n] });
    app.submit({ hHwQueue: q1.hHwQueue, commands: [{ signal: { hSyncObject: g.hSyncObject, value: 1n } }] });
    app.submit({ hHwQueue: q0.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 1n } }] });
    machine.run();
    expect(machine.os.inspect.lostWakeups()).toEqual([]);
    await expect(onG).resolves.toMatchObject({ status: 'SUCCESS' });
    await expect(onF).resolves.toMatchObject({ status: 'SUCCESS' });
  });

  it('INT-05 a signal logged through a handle closed meanwhile still wakes its fence\'s waiters on an optimized adapter (fuzz seed 114269)', async () => {
    const { machine, app: A, hDevice } = await world({ adapters: [{ caps: { optimizedNativeFenceSignaledInterrupt: true } }] }, 'A');
    const B = machine.createProcess('B');
    const hDeviceB = B.createDevice({ hAdapter: B.openAdapter(0) });
    const f = A.createNativeFence({ hDevice, flags: { shared: true }, name: 'f' });
    const fb = B.openNativeFenceFromNtHandle({ hNtHandle: A.duplicateHandle(A.shareObject(f.hSyncObject), B), hDevice: hDeviceB });
    const qb = B.createHwQueue({ hDevice: hDeviceB, nativeProgressFence: false });
    const woken = A.waitAsync({ objects: [f.hSyncObject], values: [1n] });
    B.submit({ hHwQueue: qb.hHwQueue, commands: [{ signal: { hSyncObject: fb.hSyncObject, value: 1n } }] });
    B.destroySynchronizationObject(fb.hSyncObject); // before the GPU ran the signal and before the OS read its log
    machine.run();
    expect(machine.os.inspect.lostWakeups()).toEqual([]);
    await expect(woken).resolves.toMatchObject({ status: 'SUCCESS' });
    const entry = machine.trace.find({ kind: 'os', name: 'log entry read' }).find((e) => e.args.hNativeFence === fb.hSyncObject)!;
    expect(entry.args.fence).toBe('f'); // resolved through the closing handle, not "unknown"
  });

  it('NF-20 a device removal that drops the interrupt of a value a NoSignalMaxValueOnTdr fence already reached still wakes its waiter (fuzz seed 519653)', async () => {
    const { app, hDevice, machine } = await world();
    const kept = app.createNativeFence({ hDevice, name: 'kept', flags: { noSignalMaxValueOnTdr: true } });
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    const woken = app.waitAsync({ objects: [kept.hSyncObject], values: [1n] });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ signal: { hSyncObject: kept.hSyncObject, value: 1n } }] });
    machine.run(500); // the signal ran and raised the interrupt; its ISR would run at 2.1 us
    expect(app.readFenceValue(kept.hSyncObject)).toBe(1n);
    machine.removeDevice(0, 'test TDR');
    machine.run();
    expect(machine.os.inspect.lostWakeups()).toEqual([]);
    await expect(woken).resolves.toMatchObject({ status: 'SUCCESS' });
    expect(app.readFenceValue(kept.hSyncObject)).toBe(1n); // kept: not signalled to UINT64_MAX
  });

  it('NF-20 an adapter removed for good: its fences go to UINT64_MAX and wake their waiters, a NoSignalMaxValueOnTdr fence\'s waiter is released with DEVICE_REMOVED, the adapter stays stopped with no bug check', async () => {
    const { app, hDevice, machine } = await world();
    const plain = app.createNativeFence({ hDevice, name: 'plain' });
    const kept = app.createNativeFence({ hDevice, name: 'kept', flags: { noSignalMaxValueOnTdr: true } });
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ wait: { hSyncObject: plain.hSyncObject, value: 9n } }, { signal: { hSyncObject: kept.hSyncObject, value: 1n } }] });
    const onPlain = app.waitAsync({ objects: [plain.hSyncObject], values: [5n] });
    const onKept = app.waitAsync({ objects: [kept.hSyncObject], values: [1n] });
    machine.run(1000);
    machine.removeAdapter(0, 'unplugged');
    machine.run();
    await expect(onPlain).resolves.toMatchObject({ status: 'SUCCESS' }); // UINT64_MAX reached 5
    await expect(onKept).resolves.toMatchObject({ status: 'DEVICE_REMOVED' }); // nothing will ever signal it now
    expect(app.readFenceValue(plain.hSyncObject)).toBe(UINT64_MAX);
    expect(app.readFenceValue(kept.hSyncObject)).toBe(0n);
    expect(machine.adapters[0].state).toBe('stopped');
    expect(machine.summary().bugChecks).toEqual([]);
    expect(machine.os.inspect.lostWakeups()).toEqual([]);
    expect(() => machine.removeAdapter(0)).toThrow(/adapter "gpu0" is removed \(unplugged\)/);
    expect(() => machine.removeDevice(0)).toThrow(/adapter "gpu0" is removed \(unplugged\)/);
  });

  it('XA-04 a cross-adapter fence a GPU rewind lowered is propagated again when it moves up below its old top (no-list interrupts; fuzz seed 913425)', async () => {
    const { createMachine } = await import('../src/index.js');
    const machine = await createMachine({ seed: 5, adapters: [{ name: 'gpu0', interrupts: { payload: 'noList' } }, { name: 'gpu1' }] });
    const app = machine.createProcess('app');
    const d0 = app.createDevice({ hAdapter: app.openAdapter(0) });
    const d1 = app.createDevice({ hAdapter: app.openAdapter(1) });
    const f = app.createNativeFence({ hDevice: d0, flags: { shared: true, crossAdapter: true }, name: 'f' });
    const f1 = app.openNativeFenceFromNtHandle({ hNtHandle: app.shareObject(f.hSyncObject), hDevice: d1 });
    const q0 = app.createHwQueue({ hDevice: d0, nativeProgressFence: false });
    app.submit({ hHwQueue: q0.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 5n } }] });
    machine.run(); // 5 propagated to gpu1
    app.submit({ hHwQueue: q0.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 3n } }] });
    machine.run();
    expect(machine.summary().os.gpuRewinds).toBe(1);
    const woken = app.waitAsync({ objects: [f1.hSyncObject], values: [4n] }); // on gpu1's record
    app.submit({ hHwQueue: q0.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 4n } }] });
    machine.run();
    expect(machine.os.inspect.lostWakeups()).toEqual([]);
    await expect(woken).resolves.toMatchObject({ status: 'SUCCESS' });
  });

  it('NF-16 a hardware queue the driver refuses (table full) leaves the process as it was, progress fence and handles included (fuzz seed 905292)', async () => {
    const { app, hDevice, machine } = await world({ adapters: [{ limits: { queues: 1 } }] });
    app.createHwQueue({ hDevice });
    const before = { handles: processOf(app).handles.size, retired: processOf(app).retired.size, fences: machine.summary().adapters[0].liveFences };
    expect(() => app.createHwQueue({ hDevice, nativeProgressFence: true })).toThrow(WddmError);
    expect({ handles: processOf(app).handles.size, retired: processOf(app).retired.size, fences: machine.summary().adapters[0].liveFences }).toEqual(before);
  });

  it('NF-15 destroying a queue of a removed device does not lose the in-flight bookkeeping of the new queue that reuses its core id (fuzz seed 2010089)', async () => {
    const { app, hDevice, machine } = await world();
    const old = app.createHwQueue({ hDevice, nativeProgressFence: false });
    machine.removeDevice(0, 'test TDR');
    const hDevice2 = app.createDevice({ hAdapter: app.openAdapter(0) });
    const fresh = app.createHwQueue({ hDevice: hDevice2, nativeProgressFence: false }); // the core gives it the old queue's id
    const f = app.createNativeFence({ hDevice: hDevice2, name: 'f' });
    app.destroyHwQueue(old.hHwQueue);
    app.submit({ hHwQueue: fresh.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 1n } }] });
    machine.run();
    expect(machine.inspectFence(app, f.hSyncObject)).toMatchObject({ currentValue: 1n, gpuSignalsInFlight: 0 });
    app.destroySynchronizationObject(f.hSyncObject);
    expect(machine.summary().os.deferredCloses).toBe(0);
    expect(ddiCalls(machine, 'DxgkDdiDestroyNativeFence')).toHaveLength(1);
  });

  it('XA-04 a device removal that drops the interrupt of a kept cross-adapter fence still carries its value to the other adapter\'s waiters (fuzz seed 3018303)', async () => {
    const { createMachine } = await import('../src/index.js');
    const machine = await createMachine({ seed: 6, adapters: [{ name: 'gpu0' }, { name: 'gpu1' }] });
    const app = machine.createProcess('app');
    const d0 = app.createDevice({ hAdapter: app.openAdapter(0) });
    const d1 = app.createDevice({ hAdapter: app.openAdapter(1) });
    const f = app.createNativeFence({ hDevice: d1, flags: { shared: true, crossAdapter: true, noSignalMaxValueOnTdr: true }, name: 'f' });
    const f0 = app.openNativeFenceFromNtHandle({ hNtHandle: app.shareObject(f.hSyncObject), hDevice: d0 });
    const q1 = app.createHwQueue({ hDevice: d1, nativeProgressFence: false });
    machine.run();
    const woken = app.waitAsync({ objects: [f0.hSyncObject], values: [2n] }); // on gpu0's record
    app.submit({ hHwQueue: q1.hHwQueue, commands: [{ signal: { hSyncObject: f.hSyncObject, value: 2n } }] });
    machine.run(machine.nowNs + 500); // the signal ran on gpu1; its interrupt is on its way
    machine.removeDevice(1, 'test TDR');
    machine.run();
    expect(machine.os.inspect.lostWakeups()).toEqual([]);
    await expect(woken).resolves.toMatchObject({ status: 'SUCCESS' });
  });
});


// Issue 14q: a fence kept as a row (src/os/fence-rows.ts) is submitted through its handle without its objects being
// made; its in-flight references are counted by the adapter's RowReferences (src/os/objects.ts) until something
// needs the objects, which then take the counts over.
describe('in-flight references of fences kept as rows', () => {
  const rowsLeft = (machine: Awaited<ReturnType<typeof world>>['machine']) => { const fences = osModules(machine).adapters[0].fences; return fences.size - fences.viewed; };

  async function blockedSignal() {
    const w = await world();
    const { app, hDevice, machine } = w;
    const gate = app.createNativeFence({ hDevice, name: 'gate' }); // named: an object from the start
    const row = app.createNativeFence({ hDevice });
    const coreFence = processOf(app).handles.rowToken(row.hSyncObject) >>> 3;
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    const list = app.createCommandList().wait(gate.hSyncObject, 1).signal(row.hSyncObject, 5);
    const rowsBefore = rowsLeft(machine);
    app.submit({ hHwQueue: q.hHwQueue, commands: list });
    machine.run(); // the queue blocks on gate: the signal stays in flight
    return { ...w, gate, row, coreFence, q, rowsBefore };
  }

  it('NF-15 a signal submitted through a fence kept as a row holds it in flight without making its objects; the row counts it', async () => {
    const { app, machine, row, coreFence, gate, rowsBefore } = await blockedSignal();
    const references = osModules(machine).adapters[0].rowReferences;
    expect(processOf(app).handles.isRow(row.hSyncObject)).toBe(true);
    expect(rowsLeft(machine)).toBe(rowsBefore); // no row made into objects by submit or by the blocked run
    expect(references.references(coreFence)).toBe(1);
    expect(machine.stuck().queues.map((q) => q.queuedSignals)).toEqual([[{ fence: `fence${coreFence}`, value: 5n }]]);
    // LOG-08's queued records name the handle and the fence as before (the progress fence is off).
    expect(machine.os.inspect.logs.queued.map((e) => [e.kind, e.fence, e.hSyncObject])).toEqual([['wait', 'gate', gate.hSyncObject], ['signal', `fence${coreFence}`, row.hSyncObject]]);
    app.signal({ objects: [gate.hSyncObject], values: [1n] });
    machine.run();
    expect(app.readMapping(row.mapping.CurrentValueCpuVa)).toBe(5n);
    expect(references.references(coreFence)).toBe(0);
  });

  it('NF-15 a row that is looked up while its signal is in flight: its record reads the token handle\'s state where it was (the row), inspectFence sees the signal until it ran', async () => {
    const { app, machine, row, coreFence, gate, rowsBefore } = await blockedSignal();
    const references = osModules(machine).adapters[0].rowReferences;
    expect(machine.inspectFence(app, row.hSyncObject)).toMatchObject({ gpuSignalsInFlight: 1, gpuWaitsInFlight: 0 });
    expect(rowsLeft(machine)).toBe(rowsBefore - 1); // the inspection made it
    // The handle's state stays in the row, which its record reads and writes: nothing moved.
    const record = processOf(app).handles.get(row.hSyncObject) as unknown as { wasToken: boolean; gpuReferences: number; usedByGpu: boolean };
    expect(record.wasToken).toBe(true);
    expect([references.references(coreFence), record.gpuReferences, record.usedByGpu]).toEqual([1, 1, true]);
    app.signal({ objects: [gate.hSyncObject], values: [1n] });
    machine.run();
    expect(machine.inspectFence(app, row.hSyncObject)).toMatchObject({ currentValue: 5n, gpuSignalsInFlight: 0 });
    expect([references.references(coreFence), record.gpuReferences]).toEqual([0, 0]); // drained, in the one place
  });

  it('NF-15 a row closed while its signal is in flight: the close is deferred, storage kept and not reused, Close and Destroy after the signal ran', async () => {
    const w = await blockedSignal();
    const { app, hDevice, machine, row, coreFence, gate } = w;
    app.destroySynchronizationObject(row.hSyncObject);
    expect(machine.summary().os.deferredCloses).toBe(1);
    expect(machine.trace.find({ kind: 'os', name: 'handle closed; close deferred while GPU commands name it' })).toHaveLength(1);
    const fresh = app.createNativeFence({ hDevice, initialValue: 7n });
    expect(processOf(app).handles.rowToken(fresh.hSyncObject) >>> 3).not.toBe(coreFence); // its slot is still the GPU's
    const before = ddiCalls(machine, 'DxgkDdiDestroyNativeFence').length;
    app.signal({ objects: [gate.hSyncObject], values: [1n] });
    machine.run();
    const names = machine.trace.events.filter((e) => (e.kind === 'gpu' && e.name === 'signal') || (e.kind === 'ddi' && /^DxgkDdi(Close|Destroy)NativeFence$/.test(e.name))).map((e) => e.name);
    expect(names.slice(-3)).toEqual(['signal', 'DxgkDdiCloseNativeFence', 'DxgkDdiDestroyNativeFence']);
    expect(ddiCalls(machine, 'DxgkDdiDestroyNativeFence').length).toBe(before + 1);
    expect(app.readMapping(fresh.mapping.CurrentValueCpuVa)).toBe(7n); // never written through
    expect(osModules(machine).adapters[0].rows.has(coreFence)).toBe(false); // destroyed: its row (and the handle's state) gone
  });

  it('INT-05 a GPU signal through a row wakes its CPU waiter from the signal log, and neither the progress report nor the log reader makes its objects', async () => {
    const { app, hDevice, machine } = await world({ trace: false }); // the wait's short path (issue 14p) keeps the row
    const row = app.createNativeFence({ hDevice });
    const coreFence = processOf(app).handles.rowToken(row.hSyncObject) >>> 3;
    const results: string[] = [];
    app.waitWithCallback({ objects: [row.hSyncObject], values: [2n] }, (r) => results.push(r.status));
    expect(processOf(app).handles.isRow(row.hSyncObject)).toBe(true);
    const rowsBefore = rowsLeft(machine);
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: app.createCommandList().signal(row.hSyncObject, 1).signal(row.hSyncObject, 2) });
    machine.run();
    await Promise.resolve();
    expect(results).toEqual(['SUCCESS']);
    expect(machine.summary().logs.entriesRead).toBeGreaterThan(0); // woken through the log (INT-05), which named the row
    expect(machine.os.inspect.logs.entries.filter((e) => e.coreFence === coreFence).map((e) => e.fence)).toContain(`fence${coreFence}`);
    expect(rowsLeft(machine)).toBe(rowsBefore);
    expect(processOf(app).handles.isRow(row.hSyncObject)).toBe(true);
  });

  it('NF-19 a GPU signal through a row that lowers it is a rewind: its report makes the objects while the signal is in flight, which take its reference over and release it', async () => {
    const { app, hDevice, machine } = await world();
    const row = app.createNativeFence({ hDevice });
    const coreFence = processOf(app).handles.rowToken(row.hSyncObject) >>> 3;
    const rewinds: GpuRewind[] = [];
    machine.os.inspect.onGpuRewind((r) => rewinds.push(r));
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: app.createCommandList().signal(row.hSyncObject, 5).signal(row.hSyncObject, 3) });
    expect(osModules(machine).adapters[0].rowReferences.references(coreFence)).toBe(2);
    machine.run();
    expect(rewinds.map((r) => [r.fence, r.hSyncObject, r.fromValue, r.toValue])).toEqual([[`fence${coreFence}`, row.hSyncObject, 5n, 3n]]);
    expect(processOf(app).handles.isRow(row.hSyncObject)).toBe(false); // the rewind's report made it (traced with its label)
    // The reference the report released was the row's, counted through the record made meanwhile: nothing is left in flight.
    expect(osModules(machine).adapters[0].rowReferences.references(coreFence)).toBe(0);
    expect(machine.inspectFence(app, row.hSyncObject)).toMatchObject({ currentValue: 3n, gpuSignalsInFlight: 0, gpuWaitsInFlight: 0 });
    expect(machine.os.inspect.inFlight(machine.os.inspect.hwQueueOf(app.kernel, q.hHwQueue))).toEqual([]);
    expect(machine.trace.find({ kind: 'fault', name: 'GPU executed a command the OS never saw submitted' })).toEqual([]);
  });

  it('NF-15 signals through rows that run in core stretches leave every fence a row: nothing looks them up', async () => {
    const { app, hDevice, machine } = await world({ trace: false });
    const fences = Array.from({ length: 64 }, () => app.createNativeFence({ hDevice }));
    const rowsBefore = rowsLeft(machine);
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    const list = app.createCommandList();
    for (const f of fences) list.signal(f.hSyncObject, 3);
    app.submit({ hHwQueue: q.hHwQueue, commands: list });
    machine.run();
    expect(rowsLeft(machine)).toBe(rowsBefore);
    expect(fences.map((f) => app.readMapping(f.mapping.CurrentValueCpuVa))).toEqual(fences.map(() => 3n));
    expect(fences.every((f) => osModules(machine).adapters[0].rowReferences.references(processOf(app).handles.rowToken(f.hSyncObject) >>> 3) === 0)).toBe(true);
  });
});
