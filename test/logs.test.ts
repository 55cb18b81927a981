// Native fence log buffers (LOG-01..07, LOG-09, LOG-10) and the optimized
// native fence signaled interrupt (INT-05).
import { describe, it, expect } from 'vitest';
import { createMachineSync, readLayout, Random, WddmError, type Machine, type RuntimeProcess, type MachineOptions } from '../src/index.js';
import { readLogLayout } from '../src/core/bindings.js';
import type { OsHwQueue } from '../src/os/dxgkrnl.js';
import type { NativeFenceSignaledInterrupt } from '../src/ddi/ddi.js';
import { DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED } from '../src/base/wddm.js';
import { osModules, processOf } from './helpers.js';

interface Setup {
  m: Machine;
  app: RuntimeProcess;
  hDevice: number;
}

function setup(options: MachineOptions = {}, optimized = false): Setup {
  const m = createMachineSync({
    seed: 5,
    adapters: [{ name: 'gpu0', engines: 2, caps: { optimizedNativeFenceSignaledInterrupt: optimized } }],
    ...options,
  });
  const app = m.createProcess('app');
  const hAdapter = app.openAdapter(0);
  const hDevice = app.createDevice({ hAdapter });
  return { m, app, hDevice };
}

function kernelQueue(s: Setup, hHwQueue: number): OsHwQueue {
  return osModules(s.m).handles.resolve(processOf(s.app), hHwQueue, 'hwQueue', 'hHwQueue');
}
function queueLogs(s: Setup, hHwQueue: number) {
  const q = kernelQueue(s, hHwQueue);
  return osModules(s.m).logs.queueLogs(q.device.adapter, q.hHwQueue)!;
}
/** The core's id of a hardware queue's ring: the GPU side's own, from the driver that made the queue (the OS never knows it). */
function coreQueue(s: Setup, logs: { queue: OsHwQueue }): number {
  return s.m.adapters[logs.queue.device.adapter.index].driver.coreQueueOf!(logs.queue.hHwQueue)!;
}
function view(m: Machine): DataView { return new DataView(m.memory.buffer); }
function headerWord(m: Machine, phys: number): { index: number; wraps: number } {
  const word = view(m).getBigUint64(phys, true);
  return { index: Number(word & 0xffff_ffffn), wraps: Number(word >> 32n) };
}
function systemFreePages(m: Machine): number {
  return view(m).getUint32(m.systemBase + m.layout.offsets.regionFreePages, true);
}
const signal = (hSyncObject: number, value: bigint | number) => ({ signal: { hSyncObject, value } });
const wait = (hSyncObject: number, value: bigint | number) => ({ wait: { hSyncObject, value } });

describe('native fence log buffers', () => {
  it('LOG-01 every user-mode-submission hardware queue gets two 4 KiB log buffers (waits, signals) in system memory, freed with the queue', () => {
    const s = setup();
    const core = s.m.adapters[0].core;
    const L = readLogLayout(core);
    const free0 = systemFreePages(s.m);
    const q = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    expect(systemFreePages(s.m)).toBe(free0 - 2);
    const logs = queueLogs(s, q.hHwQueue);
    const waits = core.queueLogBuffer(coreQueue(s, logs), L.typeWaits);
    const signals = core.queueLogBuffer(coreQueue(s, logs), L.typeSignals);
    expect(waits).toBe(logs.buffers.waits.phys);
    expect(signals).toBe(logs.buffers.signals.phys);
    expect(waits % 4096).toBe(0);
    expect(signals % 4096).toBe(0);
    expect(waits).not.toBe(signals);
    // Both pages lie in the system memory region.
    for (const phys of [waits, signals]) {
      expect(phys).toBeGreaterThanOrEqual(s.m.systemBase);
      expect(phys).toBeLessThan(s.m.systemBase + (4 << 20));
    }
    expect(view(s.m).getUint32(waits + L.typeOffset, true)).toBe(L.typeWaits);
    expect(view(s.m).getUint32(signals + L.typeOffset, true)).toBe(L.typeSignals);
    expect(s.m.trace.find({ kind: 'ddi', name: 'DxgkDdiSetNativeFenceLogBuffer' })).toHaveLength(2);
    s.app.destroyHwQueue(q.hHwQueue);
    expect(systemFreePages(s.m)).toBe(free0);
    expect(osModules(s.m).logs.liveQueues(osModules(s.m).adapters[0])).toHaveLength(0);
  });

  it('LOG-01 kernel-mode contexts and adapters without user-mode submission get no log buffer', () => {
    // A kernel-mode context on a native-fence adapter: no buffer, nothing logged for its work and fence writes.
    const s = setup();
    const before = systemFreePages(s.m);
    const hContext = s.app.createContext({ hDevice: s.hDevice, engine: 0, name: 'ctx' });
    const monitored = s.app.createSynchronizationObject({ hDevice: s.hDevice, type: 'MONITORED_FENCE', initialValue: 0n });
    const pagesForFence = before - systemFreePages(s.m);
    s.app.submitCommand({ hContext, commands: [{ work: { durationNs: 100 } }, { fenceWrite: { hSyncObject: monitored.hSyncObject, value: 1 } }] });
    s.m.run();
    s.m.os.readNativeFenceLogs();
    expect(s.m.trace.find({ name: 'DxgkDdiSetNativeFenceLogBuffer' })).toHaveLength(0);
    expect(osModules(s.m).logs.liveQueues(osModules(s.m).adapters[0])).toHaveLength(0);
    expect(s.m.nativeFenceLogs.entries).toHaveLength(0);
    expect(before - systemFreePages(s.m)).toBe(pagesForFence);

    const m = createMachineSync({ adapters: [{ name: 'legacy', caps: { nativeGpuFence: false } }] });
    const app = m.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const free0 = systemFreePages(m);
    expect(() => app.createHwQueue({ hDevice })).toThrow(WddmError);
    expect(systemFreePages(m)).toBe(free0);
    expect(m.trace.find({ name: 'DxgkDdiSetNativeFenceLogBuffer' })).toHaveLength(0);
  });

  it('LOG-02 header and entry layout: 40-byte header, 48-byte entries, 84 entries in 4 KiB, offsets as published', () => {
    const s = setup();
    const L = readLogLayout(s.m.adapters[0].core);
    expect(L.headerBytes).toBe(40);
    expect(L.entryBytes).toBe(48);
    expect(L.entries).toBe(84);
    expect(L.headerBytes + L.entries * L.entryBytes).toBeLessThanOrEqual(4096);
    expect(L.headerBytes + (L.entries + 1) * L.entryBytes).toBeGreaterThan(4096);
    expect([L.indexOffset, L.typeOffset, L.countOffset]).toEqual([0, 8, 16]);
    expect([L.entryValueOffset, L.entryHandleOffset, L.entryOperationOffset, L.entryObservedOffset, L.entryEndOffset]).toEqual([0, 8, 12, 24, 40]);
    expect([L.typeWaits, L.typeSignals, L.operationSignalExecuted, L.operationWaitUnblocked]).toEqual([1, 2, 0, 1]);
  });

  it('LOG-02 entries carry value, user-mode handle, operation and GPU timestamps; the index and wraparound count move in one 64-bit word', () => {
    const s = setup({ timing: { commandNs: 100, interruptLatencyNs: 2000 } });
    const L = readLogLayout(s.m.adapters[0].core);
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    const b = s.app.createHwQueue({ hDevice: s.hDevice, engine: 1, nativeProgressFence: false, name: 'B' });
    s.app.submit({ hHwQueue: b.hHwQueue, commands: [wait(f.hSyncObject, 1)] });
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [{ work: { durationNs: 1000 } }, signal(f.hSyncObject, 1)] });
    s.m.run();
    s.m.os.readNativeFenceLogs(); // flushes (UpdateNativeFenceLogs) and reads
    const la = queueLogs(s, a.hHwQueue), lb = queueLogs(s, b.hHwQueue);
    const sig = la.buffers.signals.phys + L.headerBytes;
    const v = view(s.m);
    expect(v.getBigUint64(sig + L.entryValueOffset, true)).toBe(1n);
    expect(v.getUint32(sig + L.entryHandleOffset, true)).toBe(f.hSyncObject);
    expect(v.getUint32(sig + L.entryOperationOffset, true)).toBe(L.operationSignalExecuted);
    expect(v.getBigUint64(sig + L.entryObservedOffset, true)).toBe(0n);
    expect(v.getBigUint64(sig + L.entryEndOffset, true)).toBe(1000n);
    const w = lb.buffers.waits.phys + L.headerBytes;
    expect(v.getUint32(w + L.entryOperationOffset, true)).toBe(L.operationWaitUnblocked);
    expect(v.getBigUint64(w + L.entryObservedOffset, true)).toBe(0n); // first seen blocked at GPU time 0
    expect(v.getBigUint64(w + L.entryEndOffset, true)).toBe(1000n);  // unblocked by the signal at 1000
    expect(headerWord(s.m, la.buffers.signals.phys)).toEqual({ index: 1, wraps: 0 });

    // 84 more advances wrap: index back to 1, wraparound count 1, both in the one u64.
    const core = s.m.adapters[0].core;
    for (let i = 0; i < L.entries; i++) expect(core.logAdvance(coreQueue(s, la), L.typeSignals)).toBe((i + 2) % L.entries);
    expect(v.getBigUint64(la.buffers.signals.phys, true)).toBe((1n << 32n) | 1n);
  });

  it('LOG-02 a corrupt header (NumberOfEntries that does not fit 4 KiB) is reported, the GPU writes nothing outside the page, no waiter is lost, and the buffer is recreated', () => {
    const s = setup({}, true);
    const L = readLogLayout(s.m.adapters[0].core);
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    const logs = queueLogs(s, a.hHwQueue);
    const old = logs.buffers.signals.phys;
    view(s.m).setBigUint64(old + L.countOffset, 200n, true);
    let oldPageAtInterrupt: Uint8Array | undefined;
    s.m.trace.onEvent((e) => { if (e.kind === 'interrupt') oldPageAtInterrupt = new Uint8Array(s.m.memory.buffer, old, 4096).slice(); });
    const t = s.app.createThread('waiter', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [1n] }); });
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f.hSyncObject, 1)] });
    s.m.run();
    expect(t.state).toBe('done');
    expect((t.result as { status: string }).status).toBe('SUCCESS');
    // The GPU dropped the entry: index not advanced, no entry slot written.
    expect(oldPageAtInterrupt!.subarray(40).every((b) => b === 0)).toBe(true);
    expect(new DataView(oldPageAtInterrupt!.buffer).getBigUint64(0, true)).toBe(0n);
    const faults = s.m.nativeFenceLogs.violations;
    expect(faults).toHaveLength(1);
    expect(faults[0].kind).toBe('corrupt-header');
    expect(faults[0].message).toMatch(/NumberOfEntries is 200, but a 4 KiB buffer holds 1 to 84/);
    expect(s.m.trace.find({ kind: 'fault', name: 'native fence log contract violation' })).toHaveLength(1);
    expect(s.m.nativeFenceLogs.counters.fallbackScans).toBe(1);
    expect(logs.buffers.signals.phys).not.toBe(old);
    expect(logs.buffers.signals.generation).toBe(1);
    expect(s.m.trace.find({ kind: 'ddi', name: 'DxgkDdiSetNativeFenceLogBuffer' })).toHaveLength(3);
    // The new buffer logs normally.
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f.hSyncObject, 2)] });
    s.m.run();
    s.m.os.readNativeFenceLogs();
    expect(headerWord(s.m, logs.buffers.signals.phys)).toEqual({ index: 1, wraps: 0 });
    expect(s.m.nativeFenceLogs.entries.at(-1)).toMatchObject({ fence: 'F', value: 2n, generation: 1 });
  });

  it('LOG-02 a corrupt header (FirstFreeEntryIndex past the end) is reported and every waiter still wakes', () => {
    const s = setup({}, true);
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    const g = s.app.createNativeFence({ hDevice: s.hDevice, name: 'G' });
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    const logs = queueLogs(s, a.hHwQueue);
    view(s.m).setBigUint64(logs.buffers.signals.phys, 90n, true); // index 90 of 84
    const tf = s.app.createThread('f', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [1n] }); });
    const tg = s.app.createThread('g', function* (cpu) { return yield cpu.wait({ objects: [g.hSyncObject], values: [3n] }); });
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f.hSyncObject, 1), signal(g.hSyncObject, 3)] });
    s.m.run();
    expect([tf.state, tg.state]).toEqual(['done', 'done']);
    expect(s.m.nativeFenceLogs.violations[0].message).toMatch(/FirstFreeEntryIndex 90 is past the last entry \(NumberOfEntries 84\)/);
    expect(s.m.os.inspect.lostWakeups()).toEqual([]);
  });

  it('LOG-03 SetNativeFenceLogBuffer at creation, and again with the new location whenever the OS recreates a buffer; the driver writes to the latest', () => {
    const s = setup({}, true);
    const core = s.m.adapters[0].core;
    const L = readLogLayout(core);
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    const logs = queueLogs(s, a.hHwQueue);
    const calls = () => s.m.trace.find({ kind: 'ddi', name: 'DxgkDdiSetNativeFenceLogBuffer' });
    expect(calls().map((e) => e.args.Type)).toEqual(['DXGK_NATIVE_FENCE_LOG_TYPE_WAITS', 'DXGK_NATIVE_FENCE_LOG_TYPE_SIGNALS']);
    expect(calls().every((e) => e.args.NumberOfEntries === 84 && typeof e.args.LogBufferGpuVa === 'string')).toBe(true);

    // A buffer recreated between two writes: waiters of both signals wake, each entry read once.
    const t1 = s.app.createThread('w1', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [1n] }); });
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f.hSyncObject, 1)] });
    s.m.run(100); // executed, its interrupt not serviced yet
    const old = logs.buffers.signals.phys;
    expect(headerWord(s.m, old).index).toBe(1);

    // Bad input first: nothing changes.
    expect(() => s.m.recreateNativeFenceLogBuffer(s.app, a.hHwQueue, 'both' as 'waits')).toThrow(/log is "both"; expected one of "waits", "signals"/);
    expect(() => s.m.recreateNativeFenceLogBuffer(s.app, 12345, 'signals')).toThrow(WddmError);
    expect(logs.buffers.signals.phys).toBe(old);
    expect(calls()).toHaveLength(2);

    s.m.recreateNativeFenceLogBuffer(s.app, a.hHwQueue, 'signals');
    const fresh = logs.buffers.signals.phys;
    expect(fresh).not.toBe(old);
    expect(calls()).toHaveLength(3);
    expect(calls()[2].args.LogBufferCpuVa).toBe((0xffff_8000_0000_0000n + BigInt(fresh)).toString());
    expect(core.queueLogBuffer(coreQueue(s, logs), L.typeSignals)).toBe(fresh);
    // The old buffer was read before it went away: its entry woke the waiter before the interrupt arrived.
    s.m.run(150);
    expect(t1.state).toBe('done');
    expect(s.m.trace.find({ kind: 'interrupt' })).toHaveLength(0);

    const t2 = s.app.createThread('w2', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [2n] }); });
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f.hSyncObject, 2)] });
    s.m.run();
    expect(t2.state).toBe('done');
    expect(headerWord(s.m, fresh)).toEqual({ index: 1, wraps: 0 });
    expect(headerWord(s.m, old)).toEqual({ index: 1, wraps: 0 }); // nothing written to the old location after the switch
    const read = s.m.nativeFenceLogs.entries.filter((e) => e.kind === 'signals');
    expect(read.map((e) => [e.value, e.generation, e.slot])).toEqual([[1n, 0, 0], [2n, 1, 0]]);
  });

  it('LOG-04 GPU order: fence value, log entry with its GPU timestamp, index advance, barrier, then the conditional interrupt', () => {
    const s = setup({}, true);
    const core = s.m.adapters[0].core;
    const L = readLogLayout(core);
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    const logs = queueLogs(s, a.hHwQueue);
    const phys = logs.buffers.signals.phys;
    s.app.waitWithEvent({ objects: [f.hSyncObject], values: [1n], hAsyncEvent: s.app.createEvent('e') });
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f.hSyncObject, 1)] });
    // Step the core ourselves at GPU time 777, watching memory between steps.
    const layout = readLayout(core);
    const local = s.m.os.inspect.handleOf(s.app.kernel, f.hSyncObject);
    const slot0 = phys + L.headerBytes;
    expect(core.engineSignalWrite(0, s.app.kernel.slot, local.cvGpuVa, 1n)).toBe(0);
    expect(s.app.readFenceValue(f.hSyncObject)).toBe(0n);          // 1. still in the write buffer
    core.engineDrain(0);
    expect(s.app.readFenceValue(f.hSyncObject)).toBe(1n);          // 1. value in memory
    expect(core.logWriteEntry(coreQueue(s, logs), L.typeSignals, f.hSyncObject, 1n, L.operationSignalExecuted, 0n, 777n)).toBe(0);
    expect(headerWord(s.m, phys).index).toBe(0);                    // 2. entry written, index not yet
    expect(core.logPendingAddress(coreQueue(s, logs))).toBe(slot0);
    expect(core.logAdvance(coreQueue(s, logs), L.typeSignals)).toBe(1); // 3. index advanced
    core.engineDrain(0);                                            // 4. barrier
    expect(core.engineInterruptLine(0)).toBe(0);
    expect(core.cmpSignalCheck(0, local.global.coreFence, 1n)).toBe(1); // 5. CurrentValue > MonitoredValue: raise
    expect(core.engineInterruptLine(0)).toBe(1);
    // The entry may still be in the queue's log write buffer: the CPU's UpdateNativeFenceLogs makes it visible.
    expect(view(s.m).getBigUint64(slot0 + L.entryEndOffset, true)).toBe(0n);
    expect(core.logFlush(coreQueue(s, logs))).toBe(1);
    expect(view(s.m).getBigUint64(slot0 + L.entryEndOffset, true)).toBe(777n);
    expect(layout.stepInterrupt).toBeGreaterThan(0);

    // engineStep composes the same order: after a step that raised the interrupt, value and index are in memory.
    const s2 = setup({}, true);
    const f2 = s2.app.createNativeFence({ hDevice: s2.hDevice, name: 'F' });
    const a2 = s2.app.createHwQueue({ hDevice: s2.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    const logs2 = queueLogs(s2, a2.hHwQueue);
    s2.app.waitWithEvent({ objects: [f2.hSyncObject], values: [1n], hAsyncEvent: s2.app.createEvent('e') });
    s2.app.submit({ hHwQueue: a2.hHwQueue, commands: [signal(f2.hSyncObject, 1)] });
    const core2 = s2.m.adapters[0].core;
    expect(core2.engineStep(coreQueue(s2, logs2), 555n)).toBe(layout.stepInterrupt);
    expect(s2.app.readFenceValue(f2.hSyncObject)).toBe(1n);
    expect(headerWord(s2.m, logs2.buffers.signals.phys).index).toBe(1);
    expect(core2.engineInterruptQueue(0)).toBe(coreQueue(s2, logs2));
  });

  it('LOG-05 an overrun of unread entries bumps the wraparound count; the reader detects it, falls back to every fence of the device, and every waiter wakes', () => {
    // The interrupt is serviced long after the GPU wrote 91 signals into an 84-entry log.
    const s = setup({ timing: { commandNs: 100, interruptLatencyNs: 1_000_000 } }, true);
    const h = s.app.createNativeFence({ hDevice: s.hDevice, name: 'H' });
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    const threads = [
      s.app.createThread('h', function* (cpu) { return yield cpu.wait({ objects: [h.hSyncObject], values: [1n] }); }),
      s.app.createThread('f5', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [5n] }); }),
      s.app.createThread('f90', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [90n] }); }),
    ];
    s.m.run();
    const commands = [signal(h.hSyncObject, 1), ...Array.from({ length: 90 }, (_, i) => signal(f.hSyncObject, i + 1))];
    s.app.submit({ hHwQueue: a.hHwQueue, commands });
    s.m.run();
    const logs = s.m.nativeFenceLogs;
    expect(threads.map((t) => t.state)).toEqual(['done', 'done', 'done']);
    expect(logs.counters.overruns).toBe(1);
    expect(logs.counters.entriesLost).toBe(91 - 84);
    expect(logs.overruns[0]).toMatchObject({ queue: 'A', log: 'signals', lost: 7 });
    expect(logs.counters.fallbackScans).toBe(1);
    // F's waiters were woken by the surviving entries (F7..F90); only H's waiter was left for the fallback.
    expect(s.m.trace.find({ name: 'log fallback: reading every fence of the device' })[0].args.fences).toEqual(['H']);
    // H's only entry was overwritten: only the fallback could wake its waiter.
    expect(logs.entries.some((e) => e.fence === 'H')).toBe(false);
    expect(logs.entries.filter((e) => e.kind === 'signals').map((e) => e.value)).toEqual(Array.from({ length: 84 }, (_, i) => BigInt(i + 7)));
    expect(s.m.os.inspect.lostWakeups()).toEqual([]);
    const phys = queueLogs(s, a.hHwQueue).buffers.signals.phys;
    expect(headerWord(s.m, phys)).toEqual({ index: 91 - 84, wraps: 1 });
  });

  it('LOG-05 writes that wrap without passing unread entries are no overrun', () => {
    const s = setup({ timing: { commandNs: 100, interruptLatencyNs: 500 } }, true);
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    for (let round = 0; round < 3; round++) {
      s.app.submit({ hHwQueue: a.hHwQueue, commands: Array.from({ length: 50 }, (_, i) => signal(f.hSyncObject, round * 50 + i + 1)) });
      s.m.run();
      s.m.os.readNativeFenceLogs();
    }
    expect(s.m.nativeFenceLogs.counters.overruns).toBe(0);
    expect(s.m.nativeFenceLogs.entries.map((e) => e.value)).toEqual(Array.from({ length: 150 }, (_, i) => BigInt(i + 1)));
  });

  it('LOG-06 before reading, the OS asks the driver to flush the queues that have new entries, and only those', () => {
    const s = setup({}, false);
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    s.app.createHwQueue({ hDevice: s.hDevice, engine: 1, nativeProgressFence: false, name: 'idle' });
    const c = s.app.createHwQueue({ hDevice: s.hDevice, engine: 1, nativeProgressFence: false, name: 'C' });
    s.app.submit({ hHwQueue: c.hHwQueue, commands: [wait(f.hSyncObject, 1)] });
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f.hSyncObject, 1)] });
    const la = queueLogs(s, a.hHwQueue), lc = queueLogs(s, c.hHwQueue);
    s.m.run();
    const core = s.m.adapters[0].core;
    // The last entries are still in the queues' log write buffers: memory has zeros there.
    expect(core.logPendingAddress(coreQueue(s, la))).toBe(la.buffers.signals.phys + 40);
    expect(view(s.m).getBigUint64(la.buffers.signals.phys + 40, true)).toBe(0n);
    s.m.os.readNativeFenceLogs();
    const flushes = s.m.trace.find({ kind: 'ddi', name: 'DxgkDdiUpdateNativeFenceLogs' });
    expect(flushes).toHaveLength(1);
    expect(flushes[0].args.hHWQueueArray).toEqual([la.queue.hHwQueue, lc.queue.hHwQueue]);
    const firstRead = s.m.trace.find({ name: 'log entry read' })[0];
    expect(flushes[0].seq).toBeLessThan(firstRead.seq);
    expect(core.logPendingAddress(coreQueue(s, la))).toBe(0);
    expect(s.m.nativeFenceLogs.entries.map((e) => [e.queue, e.kind, e.value])).toEqual([['A', 'signals', 1n], ['C', 'waits', 1n]]);
    // Nothing new: no flush at all.
    s.m.os.readNativeFenceLogs();
    expect(s.m.trace.find({ kind: 'ddi', name: 'DxgkDdiUpdateNativeFenceLogs' })).toHaveLength(1);
  });

  it('LOG-07 zero and repeated timestamps are accepted; a decreasing one is reported as a contract violation', () => {
    const s = setup();
    const core = s.m.adapters[0].core;
    const L = readLogLayout(core);
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    const logs = queueLogs(s, a.hHwQueue);
    const put = (value: bigint, endNs: bigint) =>
      expect(core.logRecord(coreQueue(s, logs), L.typeSignals, f.hSyncObject, value, L.operationSignalExecuted, 0n, endNs)).toBeGreaterThanOrEqual(0);
    put(1n, 100n); put(2n, 0n); put(3n, 100n); put(4n, 150n);
    s.m.os.readNativeFenceLogs();
    expect(s.m.nativeFenceLogs.violations).toEqual([]);
    put(5n, 120n);
    s.m.os.readNativeFenceLogs();
    const violations = s.m.nativeFenceLogs.violations;
    expect(violations).toHaveLength(1);
    expect(violations[0]).toMatchObject({ kind: 'timestamp-decreased', queue: 'A', log: 'signals' });
    expect(violations[0].message).toMatch(/FenceEndGpuTimestamp 120 after 150/);
    expect(s.m.trace.find({ kind: 'fault', name: 'native fence log contract violation' })).toHaveLength(1);
    expect(s.m.summary().logs.contractViolations).toBe(1);
  });

  it('LOG-09 the worked example: four signals F1/V1, F1/V2, F2/V3, F2/V3 on queue A, the interrupt on the fourth names A, the OS reads E1..E4', () => {
    const s = setup({ adapters: [{ name: 'gpu0', engines: 1, caps: { optimizedNativeFenceSignaledInterrupt: true } }] }, true);
    const core = s.m.adapters[0].core;
    const f1 = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F1' });
    const f2 = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F2' });
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    const logs = queueLogs(s, a.hHwQueue);
    const [V1, V2, V3] = [1n, 2n, 3n];
    // E1..E3: no CPU waiter, no interrupt required.
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f1.hSyncObject, V1), signal(f1.hSyncObject, V2), signal(f2.hSyncObject, V3)] });
    s.m.run();
    expect(s.m.trace.find({ kind: 'cmp', name: 'no interrupt' })).toHaveLength(3);
    expect(s.m.trace.find({ kind: 'interrupt' })).toHaveLength(0);
    // F2 is rewound below V3 and a CPU thread waits for V3 again: the repeated F2/V3 signal needs the interrupt.
    s.app.signal({ objects: [f2.hSyncObject], values: [2n], flags: { allowFenceRewind: true } });
    const waiter = s.app.createThread('waiter', function* (cpu) { return yield cpu.wait({ objects: [f2.hSyncObject], values: [V3] }); });
    s.m.run();
    let pendingAtInterrupt = -1;
    s.m.trace.onEvent((e) => { if (e.kind === 'interrupt') pendingAtInterrupt = core.logPendingAddress(coreQueue(s, logs)); });
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f2.hSyncObject, V3)] });
    s.m.run();

    const interrupts = s.m.trace.find({ kind: 'interrupt' });
    expect(interrupts).toHaveLength(1);
    expect(interrupts[0].args).toMatchObject({ NodeOrdinal: 0, EngineOrdinal: 0, SignaledNativeFenceCount: 0, pSignaledNativeFenceArray: 'NULL', hHWQueue: logs.queue.hHwQueue });
    expect(pendingAtInterrupt).toBe(logs.buffers.signals.phys + 40 + 3 * 48); // E4 not yet in memory when the interrupt arrived
    const flush = s.m.trace.find({ kind: 'ddi', name: 'DxgkDdiUpdateNativeFenceLogs' });
    expect(flush.map((e) => e.args.hHWQueueArray)).toEqual([[logs.queue.hHwQueue]]);
    const read = s.m.trace.find({ name: 'log entry read' }).map((e) => [e.args.slot, e.args.fence, e.args.FenceValue, e.args.OperationType]);
    expect(read).toEqual([
      [0, 'F1', '1', 'SIGNAL_EXECUTED'],
      [1, 'F1', '2', 'SIGNAL_EXECUTED'],
      [2, 'F2', '3', 'SIGNAL_EXECUTED'],
      [3, 'F2', '3', 'SIGNAL_EXECUTED'],
    ]);
    expect(flush[0].seq).toBeLessThan(s.m.trace.find({ name: 'log entry read' })[0].seq);
    expect(waiter.state).toBe('done');
    expect((waiter.result as { status: string }).status).toBe('SUCCESS');
    expect(s.m.os.inspect.counters.fullScans).toBe(0);
    expect(s.m.nativeFenceLogs.counters.optimizedInterrupts).toBe(1);
  });

  it('LOG-10 wait and signal logging are always on: every GPU wait and signal leaves an entry, and no option turns it off', () => {
    const s = setup({ timing: { commandNs: 100, interruptLatencyNs: 2000 } });
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, name: 'A' });
    const b = s.app.createHwQueue({ hDevice: s.hDevice, engine: 1, name: 'B' });
    s.app.submit({ hHwQueue: b.hHwQueue, commands: [wait(f.hSyncObject, 1), wait(f.hSyncObject, 1), wait(f.hSyncObject, 2)] });
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f.hSyncObject, 1), { work: { durationNs: 500 } }, signal(f.hSyncObject, 2)] });
    s.m.run();
    s.m.os.readNativeFenceLogs();
    const entries = s.m.nativeFenceLogs.entries;
    expect(entries.filter((e) => e.kind === 'waits').map((e) => e.value)).toEqual([1n, 1n, 2n]);
    // two signals of F + the progress fence signal on each queue
    expect(entries.filter((e) => e.kind === 'signals' && e.queue === 'A').map((e) => [e.fence, e.value])).toEqual([['F', 1n], ['F', 2n], ['A.progress', 1n]]);
    expect(entries.filter((e) => e.kind === 'signals' && e.queue === 'B').map((e) => e.fence)).toEqual(['B.progress']);
    expect(() => createMachineSync({ adapters: [{ logging: false } as never] })).toThrow(/unknown key "logging"/);
  });
});

describe('optimized native fence signaled interrupt', () => {
  it('INT-05 with OptimizedNativeFenceSignaledInterrupt the interrupt names the running queue, and the OS reads that queue\'s signal log only', () => {
    const s = setup({}, true);
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    const g = s.app.createNativeFence({ hDevice: s.hDevice, name: 'G' });
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    const b = s.app.createHwQueue({ hDevice: s.hDevice, engine: 1, nativeProgressFence: false, name: 'B' });
    const t = s.app.createThread('w', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [1n] }); });
    s.m.run();
    s.app.submit({ hHwQueue: b.hHwQueue, commands: [signal(g.hSyncObject, 1)] }); // no waiter: no interrupt
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f.hSyncObject, 1)] });
    s.m.run();
    const interrupt = s.m.trace.find({ kind: 'interrupt' });
    expect(interrupt).toHaveLength(1);
    expect(interrupt[0].args.hHWQueue).toBe(kernelQueue(s, a.hHwQueue).hHwQueue);
    expect(interrupt[0].args.pSignaledNativeFenceArray).toBe('NULL');
    expect(t.state).toBe('done');
    const flush = s.m.trace.find({ kind: 'ddi', name: 'DxgkDdiUpdateNativeFenceLogs' });
    expect(flush[0].args.hHWQueueArray).toEqual([kernelQueue(s, a.hHwQueue).hHwQueue]);
    expect(s.m.nativeFenceLogs.entries.map((e) => e.queue)).toEqual(['A']);
    expect(s.m.os.inspect.counters.fullScans).toBe(0);
  });

  it('INT-05 no queue named (signals of several queues joined one interrupt): the OS reads every queue of that engine', () => {
    const s = setup({ timing: { commandNs: 100, interruptLatencyNs: 5000 } }, true);
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    const g = s.app.createNativeFence({ hDevice: s.hDevice, name: 'G' });
    const h = s.app.createNativeFence({ hDevice: s.hDevice, name: 'H' });
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    const b = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'B' });
    const c = s.app.createHwQueue({ hDevice: s.hDevice, engine: 1, nativeProgressFence: false, name: 'C' });
    const tf = s.app.createThread('f', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [1n] }); });
    const tg = s.app.createThread('g', function* (cpu) { return yield cpu.wait({ objects: [g.hSyncObject], values: [1n] }); });
    s.m.run();
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f.hSyncObject, 1)] });
    s.app.submit({ hHwQueue: b.hHwQueue, commands: [signal(g.hSyncObject, 1)] });
    s.app.submit({ hHwQueue: c.hHwQueue, commands: [signal(h.hSyncObject, 1)] });
    s.m.run();
    const interrupt = s.m.trace.find({ kind: 'interrupt' });
    expect(interrupt).toHaveLength(1);
    expect(interrupt[0].args).toMatchObject({ NodeOrdinal: 0, hHWQueue: 0, pSignaledNativeFenceArray: 'NULL' });
    expect(s.m.trace.find({ name: 'optimized interrupt: no queue named, reading every queue of the engine' })[0].args.queues).toEqual(['A', 'B']);
    expect([tf.state, tg.state]).toEqual(['done', 'done']);
    expect(s.m.nativeFenceLogs.entries.map((e) => e.queue)).toEqual(['A', 'B']);
  });

  it('INT-05 an interrupt naming a queue of another engine is a contract violation; the OS scans every waiter and loses none', () => {
    const s = setup({}, true);
    const adapter = s.m.adapters[0];
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    const b = s.app.createHwQueue({ hDevice: s.hDevice, engine: 1, nativeProgressFence: false, name: 'B' });
    const hB = kernelQueue(s, b.hHwQueue).hHwQueue;
    // A driver that names the wrong queue: B runs on engine 1, the interrupt is engine 0's.
    adapter.hardware.onInterrupt = (engine) => {
      adapter.core.engineTakeInterrupt(engine);
      osModules(s.m).interrupts.notifyInterrupt(osModules(s.m).adapters[adapter.index], payload(0, hB));
    };
    const t = s.app.createThread('w', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [1n] }); });
    s.m.run();
    const a = osModules(s.m).logs.liveQueues(osModules(s.m).adapters[adapter.index]).find((q) => q.queue.label === 'A')!;
    s.app.submit({ hHwQueue: a.queue.handle, commands: [signal(f.hSyncObject, 1)] });
    s.m.run();
    expect(t.state).toBe('done');
    const v = s.m.nativeFenceLogs.violations;
    expect(v).toHaveLength(1);
    expect(v[0].kind).toBe('interrupt-queue-other-engine');
    expect(v[0].message).toMatch(/interrupt on engine 0 names hHWQueue 0x[0-9a-f]+ \("B"\), which runs on engine 1/);
    expect(s.m.os.inspect.counters.fullScans).toBe(1);
    expect(adapter.state).toBe('running');
  });

  it('INT-05 an interrupt naming a destroyed queue is reported (not a violation), one naming an unknown queue is a violation; neither loses a waiter', () => {
    const s = setup({}, true);
    const adapter = s.m.adapters[0];
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    const gone = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'gone' });
    const hGone = kernelQueue(s, gone.hHwQueue).hHwQueue;
    s.app.destroyHwQueue(gone.hHwQueue);
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    let named = hGone;
    adapter.hardware.onInterrupt = (engine) => {
      adapter.core.engineTakeInterrupt(engine);
      osModules(s.m).interrupts.notifyInterrupt(osModules(s.m).adapters[adapter.index], payload(0, named));
    };
    const t1 = s.app.createThread('w1', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [1n] }); });
    s.m.run();
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f.hSyncObject, 1)] });
    s.m.run();
    expect(t1.state).toBe('done');
    const logs = s.m.nativeFenceLogs;
    expect(logs.faults.map((x) => x.kind)).toEqual(['interrupt-queue-destroyed']);
    expect(logs.violations).toEqual([]);
    expect(s.m.trace.find({ name: 'interrupt names a destroyed hardware queue' })).toHaveLength(1);

    named = 0x7777;
    const t2 = s.app.createThread('w2', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [2n] }); });
    s.m.run();
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f.hSyncObject, 2)] });
    s.m.run();
    expect(t2.state).toBe('done');
    expect(logs.violations.map((x) => x.kind)).toEqual(['interrupt-queue-unknown']);
    expect(logs.violations[0].message).toMatch(/names hHWQueue 0x7777, which is no hardware queue of this adapter/);
    expect(s.m.os.inspect.lostWakeups()).toEqual([]);
  });

  it('INT-05 no lost wakeup over random schedules served from the logs, with bursts that overrun them and buffers recreated at random', async () => {
    let overruns = 0;
    for (const seed of [1, 2, 3, 4, 5]) {
      for (const latency of [700, 30_000]) {
        const s = setup({ seed, timing: { commandNs: 50, interruptLatencyNs: latency } }, true);
        const random = new Random(seed);
        const fences = Array.from({ length: 4 }, (_, i) => s.app.createNativeFence({ hDevice: s.hDevice, name: `f${i}` }).hSyncObject);
        const queues = [0, 0, 1].map((engine, i) => s.app.createHwQueue({ hDevice: s.hDevice, engine, nativeProgressFence: i === 2, name: `q${i}` }).hHwQueue);
        const next = fences.map(() => 0n);
        let woken = 0, expected = 0;
        for (let step = 0; step < 150; step++) {
          s.m.run(s.m.nowNs + random.below(400));
          const i = random.below(fences.length);
          const r = random.next();
          if (r < 0.45) {
            const burst = random.next() < 0.1 ? 60 : 1;
            const commands = Array.from({ length: burst }, () => signal(fences[i], (next[i] += BigInt(1 + random.below(2)))));
            s.app.submit({ hHwQueue: queues[random.below(3)], commands: [{ work: { durationNs: random.below(300) } }, ...commands] });
          } else if (r < 0.95) {
            expected++;
            void s.app.waitAsync({ objects: [fences[i]], values: [next[i] + BigInt(random.below(3))] }).then((x) => { if (x.status === 'SUCCESS') woken++; });
          } else {
            s.m.recreateNativeFenceLogBuffer(s.app, queues[random.below(3)], random.next() < 0.5 ? 'waits' : 'signals');
          }
        }
        s.m.run();
        expect(s.m.os.inspect.lostWakeups(), `seed ${seed} latency ${latency}, before the final signals`).toEqual([]);
        s.app.submit({ hHwQueue: queues[0], commands: fences.map((h, i) => signal(h, next[i] + 10n)) });
        s.m.run();
        await new Promise((resolve) => setTimeout(resolve, 0));
        expect(woken, `seed ${seed} latency ${latency}`).toBe(expected);
        overruns += s.m.nativeFenceLogs.counters.overruns;
        expect(s.m.os.inspect.lostWakeups(), `seed ${seed} latency ${latency}`).toEqual([]);
        expect(s.m.os.inspect.pendingWaiters, `seed ${seed} latency ${latency}`).toBe(0);
        expect(s.m.nativeFenceLogs.violations).toEqual([]);
        expect(s.m.nativeFenceLogs.counters.optimizedInterrupts).toBeGreaterThan(0);
      }
    }
    expect(overruns).toBeGreaterThan(0); // the schedules did exercise the fallback
  });

  it('INT-05 without the cap interrupts keep their fence lists and name no queue', () => {
    const s = setup({}, false);
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    const t = s.app.createThread('w', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [1n] }); });
    s.m.run();
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f.hSyncObject, 1)] });
    s.m.run();
    const interrupt = s.m.trace.find({ kind: 'interrupt' });
    expect(interrupt[0].args.hHWQueue).toBe(0);
    expect(interrupt[0].args.SignaledNativeFenceCount).toBe(1);
    expect(t.state).toBe('done');
    expect(s.m.nativeFenceLogs.counters.optimizedInterrupts).toBe(0);
  });
});

function payload(engine: number, hHWQueue: number): NativeFenceSignaledInterrupt {
  return {
    InterruptType: DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED, NodeOrdinal: engine, EngineOrdinal: 0, SignaledNativeFenceCount: 0,
    pSignaledNativeFenceArray: null, hHWQueue, Flags: { EvaluateLegacyMonitoredFences: false },
  };
}

describe('log entries and rewinds', () => {
  it('LOG-09 an entry written before a rewind does not wake a waiter that came after it', () => {
    const s = setup({}, true);
    const f = s.app.createNativeFence({ hDevice: s.hDevice, name: 'F' });
    const g = s.app.createNativeFence({ hDevice: s.hDevice, name: 'G' });
    const a = s.app.createHwQueue({ hDevice: s.hDevice, engine: 0, nativeProgressFence: false, name: 'A' });
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(f.hSyncObject, 3)] }); // logged, unread: nobody waits
    s.m.run();
    s.app.signal({ objects: [f.hSyncObject], values: [2], flags: { allowFenceRewind: true } });
    const tf = s.app.createThread('f', function* (cpu) { return yield cpu.wait({ objects: [f.hSyncObject], values: [3n] }); });
    const tg = s.app.createThread('g', function* (cpu) { return yield cpu.wait({ objects: [g.hSyncObject], values: [1n] }); });
    s.m.run();
    s.app.submit({ hHwQueue: a.hHwQueue, commands: [signal(g.hSyncObject, 1)] }); // its interrupt names A: the OS reads F@3 too
    s.m.run();
    expect(s.m.nativeFenceLogs.entries.map((e) => [e.fence, e.value])).toEqual([['F', 3n], ['G', 1n]]);
    expect(tg.state).toBe('done');
    expect(tf.state).toBe('blocked');
    expect(s.app.readFenceValue(f.hSyncObject)).toBe(2n);
  });
});
