// GPU VA mappings carry access rights (NF-04, issue 27): MonitoredValue is read-only to the GPU, so a
// GPU write through its VA — a user-mode half that points a signal's GPU VA at MonitoredValueGpuVa, in
// its own process or in another that shares the fence — is a GPU page fault (DxgkCbNotifyDmaPageFaulted,
// then the adapter's reset), never a write. CurrentValue, a monitored fence's value and the log buffers
// stay read/write for the GPU.
import { describe, it, expect } from 'vitest';
import { createMachine, type Machine, type RuntimeProcess } from '../src/index.js';
import type { UMDARG_SUBMITTOHWQUEUE } from '../src/ddi/ddi.js';
import { globalOf } from './helpers.js';

/** The adapter's user-mode half, made hostile: every signal it writes goes to `target()` instead of the fence's CurrentValue VA. */
function hostileSignals(machine: Machine, target: () => bigint): void {
  const umd = machine.userModeDriver(0);
  const honest = umd.submitToHwQueue.bind(umd);
  umd.submitToHwQueue = (args: UMDARG_SUBMITTOHWQUEUE) => honest({ ...args, Commands: args.Commands.map((c) => (c.op === 'signal' ? { ...c, gpuVa: target() } : c)) });
}

describe('NF-04 the GPU only reads MonitoredValue', () => {
  it('NF-04 a GPU write through a MonitoredValue VA (own process, another process sharing the fence, the System process) is a GPU page fault, never a write; the waiter is not silenced (issue 27)', async () => {
    const cases = ['own MonitoredValueGpuVa', 'MonitoredValueGpuVa of the process that opened it', 'another process\'s MonitoredValueGpuVa', 'the System process\'s MonitoredValue VA'] as const;
    for (const which of cases) {
      const machine = await createMachine({ seed: 5, trace: which.startsWith('own') ? false : true, adapters: [{ name: 'gpu0' }] }); // trace off: the engine's fast loop (engineRun)
      const A = machine.createProcess('A'), B = machine.createProcess('B');
      const deviceA = A.createDevice({ hAdapter: A.openAdapter(0) }), deviceB = B.createDevice({ hAdapter: B.openAdapter(0) });
      // NoSignalMaxValueOnTdr: the reset the fault causes does not signal it, so what the GPU wrote stays visible.
      const f = A.createNativeFence({ hDevice: deviceA, initialValue: 4n, name: 'F', flags: { shared: true, noSignalMaxValueOnTdr: true } });
      const nt = A.shareObject(f.hSyncObject);
      const inB = B.openNativeFenceFromNtHandle({ hNtHandle: A.duplicateHandle(nt, B), hDevice: deviceB });
      const record = globalOf({ machine }, A, f.hSyncObject);
      const monitoredValue = () => BigInt.asUintN(64, machine.adapters[0].core.cpuReadMonitoredValue(record.coreFence));
      const results: string[] = [];
      A.waitAsync({ objects: [f.hSyncObject], values: [5n] }).then((r) => results.push(r.status));
      machine.run();
      expect(monitoredValue()).toBe(4n);
      const writer: RuntimeProcess = which === 'MonitoredValueGpuVa of the process that opened it' || which === 'another process\'s MonitoredValueGpuVa' ? B : A;
      const target = {
        'own MonitoredValueGpuVa': f.mapping.MonitoredValueGpuVa,
        'MonitoredValueGpuVa of the process that opened it': inB.mapping.MonitoredValueGpuVa,
        'another process\'s MonitoredValueGpuVa': f.mapping.MonitoredValueGpuVa, // A's VA, named by B's queue
        'the System process\'s MonitoredValue VA': record.systemMvVa,
      }[which];
      expect(target).not.toBe(0n);
      hostileSignals(machine, () => target);
      const faults: { mv: bigint; message: string }[] = [];
      machine.port.observe({ beforeCallback: (call) => { if (call.callback === 'NotifyDmaPageFaulted') faults.push({ mv: monitoredValue(), message: (call.data as { Message: string }).Message }); } });
      const queue = writer.createHwQueue({ hDevice: writer === A ? deviceA : deviceB, nativeProgressFence: false });
      writer.submit({ hHwQueue: queue.hHwQueue, commands: [{ signal: { hSyncObject: writer === A ? f.hSyncObject : inB.hSyncObject, value: 0xffff_ffff_ffff_ffffn } }] });
      machine.run();
      expect(faults, which).toHaveLength(1);
      expect(faults[0].mv, which).toBe(4n); // nothing was written before the OS heard of the fault
      expect(faults[0].message, which).toMatch(/GPU page fault/);
      // Its own mapping is there, read-only for the GPU; another process's VA and the System process's are not in its window.
      expect(faults[0].message, which).toMatch(which.endsWith('MonitoredValueGpuVa') && !which.startsWith('another') || which.includes('opened') ? /mapped read-only for the GPU/ : /not mapped in the queue's process/);
      if (!which.startsWith('another') && !which.startsWith('the System')) expect(machine.adapters[0].core.gpuVaAccess(writer.kernel.slot, target)).toBe(machine.layout.gpuVaRead);
      expect(machine.trace.find({ kind: 'fault', name: 'device removed (TDR)' }), which).toHaveLength(1);
      expect(monitoredValue(), which).toBe(4n);
      expect(A.readFenceValue(f.hSyncObject)).toBe(4n);
      // The waiter at 5 is still there and still reachable: a CPU signal to 5 wakes it.
      await Promise.resolve();
      expect(results, which).toEqual([]);
      A.signal({ objects: [f.hSyncObject], values: [5n] });
      machine.run();
      await Promise.resolve();
      expect(results, which).toEqual(['SUCCESS']);
      expect(machine.os.inspect.lostWakeups()).toEqual([]);
    }
  });
});

describe('NF-04 GPU VA access in the core (docs/ABI.md, gpuVaMap)', () => {
  it('NF-04 a page mapped GPU_VA_READ is translated for reads and refuses an engine\'s write with E_GPU_WRITE_FAULT, writing nothing; gpuVaMap refuses any other access', async () => {
    const machine = await createMachine({ seed: 1, adapters: [{ name: 'gpu0' }] });
    const core = machine.adapters[0].core, L = machine.layout;
    const fence = core.fenceCreate(1, L.fenceKindNative, L.memorySystem, 0, 0, 7n, 0);
    const cv = core.fenceCurrentValueAddress(fence), mv = core.fenceMonitoredValueAddress(fence);
    const pageOf = (phys: number) => phys - (phys % L.pageBytes);
    for (const access of [0, 2, 4, 7]) expect(BigInt.asUintN(64, core.gpuVaMap(1, pageOf(mv), access)), `access ${access}`).toBe(0n);
    const mvVa = BigInt.asUintN(64, core.gpuVaMap(1, pageOf(mv), L.gpuVaRead)) + BigInt(mv % L.pageBytes);
    const cvVa = BigInt.asUintN(64, core.gpuVaMap(1, pageOf(cv), L.gpuVaReadWrite)) + BigInt(cv % L.pageBytes);
    expect(core.gpuVaAccess(1, mvVa)).toBe(L.gpuVaRead);
    expect(core.gpuVaAccess(1, cvVa)).toBe(L.gpuVaReadWrite);
    expect(core.gpuVaAccess(1, mvVa + 0x10_0000n)).toBe(0);
    expect(core.gpuVaTranslate(1, mvVa)).toBe(mv); // the GPU reads it
    expect(core.engineSignalWrite(0, 1, mvVa, 5n)).toBe(-22); // E_GPU_WRITE_FAULT
    expect(core.enginePendingWrite(0)).toBe(0); // nothing in the engine's write buffer
    core.engineDrain(0);
    expect(BigInt.asUintN(64, core.cpuReadMonitoredValue(fence))).toBe(0xffff_ffff_ffff_ffffn); // untouched (no waiter: UINT64_MAX), not 5
    expect(core.engineSignalWrite(0, 1, cvVa, 9n)).toBe(0);
    core.engineDrain(0);
    expect(BigInt.asUintN(64, core.cpuReadCurrentValue(fence))).toBe(9n);
  });
});
