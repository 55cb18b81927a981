import { describe, it, expect } from 'vitest';
import { world, globalOf } from './helpers.js';

// Issue 14o: a fence record is 40 bytes; a monitored fence's last signalled value (MF-07) is kept in
// a table after the records that only monitored fences write (docs/MEMORY.md, docs/ABI.md).

const u64 = (value: bigint) => BigInt.asUintN(64, value);

describe('the fence record and the lastSignaled table (issue 14o)', () => {
  it('MF-07 a monitored fence keeps its last signalled value from creation through CPU signals, each fence its own', async () => {
    const w = await world({ adapters: [{ caps: { no64BitAtomics: true } }] });
    const { app, hDevice } = w;
    const a = app.createSynchronizationObject({ hDevice, type: 'MONITORED_FENCE', initialValue: 5n });
    const b = app.createSynchronizationObject({ hDevice, type: 'MONITORED_FENCE', initialValue: 0x1_0000_0007n });
    const ga = globalOf(w, app, a.hSyncObject), gb = globalOf(w, app, b.hSyncObject);
    const core = ga.adapter.core;
    expect(w.machine.layout.fenceRecordBytes).toBe(40);
    expect(u64(core.fenceLastSignaled(ga.coreFence))).toBe(5n);
    expect(u64(core.fenceLastSignaled(gb.coreFence))).toBe(0x1_0000_0007n);
    app.signal({ objects: [a.hSyncObject], values: [0x7000_0001n] });
    expect(u64(core.fenceLastSignaled(ga.coreFence))).toBe(0x7000_0001n);
    expect(u64(core.fenceLastSignaled(gb.coreFence))).toBe(0x1_0000_0007n);
    app.signal({ objects: [b.hSyncObject], values: [0x1_6000_0000n] });
    expect(u64(core.fenceLastSignaled(gb.coreFence))).toBe(0x1_6000_0000n);
    expect(u64(core.fenceLastSignaled(ga.coreFence))).toBe(0x7000_0001n);
    expect(app.readFenceValue(a.hSyncObject)).toBe(0x7000_0001n);
    expect(app.readFenceValue(b.hSyncObject)).toBe(0x1_6000_0000n);
  });

  it('MF-07 a native fence has no last signalled value: setting one changes neither its values nor any other fence, and a record reused after a monitored fence reads 0', async () => {
    const capacity = 64;
    const w = await world({ adapters: [{ limits: { fences: capacity } }] });
    const { app, hDevice } = w;
    const monitored = app.createSynchronizationObject({ hDevice, type: 'MONITORED_FENCE', initialValue: 9n });
    const gm = globalOf(w, app, monitored.hSyncObject);
    const core = gm.adapter.core;
    const id = gm.coreFence;
    app.destroySynchronizationObject(monitored.hSyncObject);
    // The freed record is the next one handed out: the native fence gets the same id.
    const native = app.createNativeFence({ hDevice, initialValue: 3n });
    const gn = globalOf(w, app, native.hSyncObject);
    expect(gn.coreFence).toBe(id);
    expect(u64(core.fenceLastSignaled(id))).toBe(0n);
    const monitoredValueBefore = u64(core.cpuReadMonitoredValue(id));
    core.fenceSetLastSignaled(id, 77n);
    expect(u64(core.fenceLastSignaled(id))).toBe(0n);
    expect(u64(core.cpuReadMonitoredValue(id))).toBe(monitoredValueBefore);
    expect(app.readFenceValue(native.hSyncObject)).toBe(3n);
    // Ids that name no fence: nothing is read or written.
    for (const bad of [0, capacity + 1, 0xffff_ffff]) {
      core.fenceSetLastSignaled(bad, 1n);
      expect(u64(core.fenceLastSignaled(bad))).toBe(0n);
    }
    expect(app.readFenceValue(native.hSyncObject)).toBe(3n);
    expect(w.machine.summary().adapters[0].liveFences).toBe(1);
  });
});

describe('the ring command (issue 14o)', () => {
  it('NF-05 a ring command keeps its op, fence id, value, VA and handle in 24 bytes: the head reads back what was pushed, across a ring wrap; a fence id of 2^28 or more is refused and nothing is written', async () => {
    const { createMachine } = await import('../src/index.js');
    const machine = await createMachine({ seed: 5, trace: false, adapters: [{ limits: { fences: 8, queues: 2, ringEntries: 4 } }] });
    const core = machine.adapter(0).core;
    const L = machine.layout;
    const badArgument = (core['E_BAD_ARGUMENT'] as WebAssembly.Global).value as number;
    const queue = core.queueCreate(0, 0);
    expect(queue).toBeGreaterThan(0);
    const ids = [1, 7, 0x0fff_ffff];
    const head = () => [core.queueHeadOp(queue), core.queueHeadFence(queue), u64(core.queueHeadValue(queue)), core.queueHeadHandle(queue) >>> 0];
    for (let round = 0; round < 3; round++) { // 3 × 3 commands through a ring of 4: it wraps
      ids.forEach((fence, k) => {
        const op = [L.opWork, L.opNop, L.opWork][k];
        expect(core.queuePush(queue, op, fence, 0xffff_ffff_0000_0000n + BigInt(round * 3 + k), 0x1234_5000n + BigInt(k), 0xffff_fff0 + k)).toBe(0);
      });
      for (let k = 0; k < 3; k++) {
        expect(head()).toEqual([[L.opWork, L.opNop, L.opWork][k], ids[k], 0xffff_ffff_0000_0000n + BigInt(round * 3 + k), 0xffff_fff0 + k]);
        expect(core.engineStep(queue, 0n)).toBeGreaterThanOrEqual(0);
      }
    }
    expect(core.queuePending(queue)).toBe(0);
    expect(core.queuePush(queue, L.opWork, 0x1000_0000, 1n, 0n, 1)).toBe(badArgument);
    expect(core.queuePush(queue, L.opWork, 0xffff_ffff, 1n, 0n, 1)).toBe(badArgument);
    expect(core.queuePending(queue)).toBe(0);
  });
});
