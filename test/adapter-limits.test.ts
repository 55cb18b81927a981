// Adapter limits at their edges (src/machine/memory-plan.ts): every value up to 2^32 builds a
// machine or throws a WddmError that names the limit, never a TypeError or a trap; a
// limit that does not fit says the most that does, and that many build; hardware queue
// rings come from the arena when a queue is created, so a long ring costs one ring,
// not `queues` of them.
import { describe, it, expect } from 'vitest';
import { createMachineSync, WddmError, type AdapterLimits, type MachineOptions } from '../src/index.js';

const LIMITS: (keyof AdapterLimits)[] = ['fences', 'waitBlocks', 'waitersPerFence', 'heapArenaBytes', 'queues', 'ringEntries', 'gpuVaPagesPerProcess', 'interruptListEntries'];
const WALK = [0, 1, 16, 256, 4096, 65536, 2 ** 20, 2 ** 22 + 1, 2 ** 24, 2 ** 24 + 1, 2 ** 28, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 1.5, -1];

/** createMachineSync, returning the WddmError it throws (any other error fails the test). */
function attempt(options: MachineOptions): WddmError | undefined {
  try {
    createMachineSync({ trace: false, ...options });
    return undefined;
  } catch (error) {
    if (!(error instanceof WddmError)) throw new Error(`${JSON.stringify(options)} threw ${(error as Error).name}: ${(error as Error).message}`);
    return error;
  }
}

/** The most that fits, as the error states it. */
const mostOf = (error: WddmError): number => Number(/at most (\d+)/.exec(error.expected ?? '')?.[1]);

describe('adapter limits', () => {
  it('each adapter limit from 0 up to 2^32 builds a machine or throws a WddmError naming that limit, never another error', () => {
    const built: string[] = [];
    for (const limit of LIMITS) {
      for (const value of WALK) {
        const error = attempt({ adapters: [{ limits: { [limit]: value } }] });
        if (!error) { built.push(`${limit}=${value}`); continue; }
        expect(error.parameter, `${limit}=${value}: ${error.message}`).toBe(`adapters[0].limits.${limit}`);
        expect(error.expected).toBeTruthy();
        expect(error.message).toContain(`adapters[0].limits.${limit} is`);
        expect(['INVALID_PARAMETER', 'NO_MEMORY']).toContain(error.status);
      }
    }
    // The small values build; what cannot exist is refused (the two that overflowed before: fences 2^24, long rings).
    expect(built).toEqual(expect.arrayContaining(LIMITS.filter((l) => l !== 'heapArenaBytes').flatMap((l) => [`${l}=16`, `${l}=4096`])));
    expect(built).toEqual(expect.arrayContaining(['heapArenaBytes=4194305', 'heapArenaBytes=268435456']));
    expect(built).not.toContain('heapArenaBytes=65536'); // the default waiter heap (65536 waiters) needs 1 MiB of it
    expect(built).not.toContain('fences=16777216');
    expect(built).not.toContain('ringEntries=1048576');
    // The machine-wide sizes too.
    for (const value of [0, 65536, 2 ** 30, 2 ** 30 + 1, 2 ** 32]) {
      const error = attempt({ systemMemoryBytes: value });
      if (error) expect(error.parameter).toBe('systemMemoryBytes');
      const local = attempt({ adapters: [{ localMemoryBytes: value }, { localMemoryBytes: value }] });
      if (local) expect(local.parameter).toMatch(/^(adapters\[\d\]\.localMemoryBytes|systemMemoryBytes)$/);
    }
    const both = attempt({ systemMemoryBytes: 2 ** 30, adapters: [{ localMemoryBytes: 2 ** 30 }] });
    expect(both?.status).toBe('NO_MEMORY');
    expect(both?.message).toMatch(/the core is built for at most 2048\.0 MiB \(lower systemMemoryBytes or localMemoryBytes\)/);
  });

  it('a limit that does not fit names the most that fits with the other options as they are; that many build, one more does not', () => {
    // 1 GiB of system memory and 960 MiB of local memory leave about 80 MiB for the adapter's tables.
    const base = { systemMemoryBytes: 2 ** 30 };
    const adapter = (limits: AdapterLimits) => ({ ...base, adapters: [{ localMemoryBytes: 960 * 2 ** 20, limits }] });
    for (const [limit, value] of [['fences', 2 ** 20], ['waitBlocks', 2 ** 24], ['gpuVaPagesPerProcess', 2 ** 22]] as const) {
      const error = attempt(adapter({ [limit]: value }))!;
      expect(error.status).toBe('NO_MEMORY');
      expect(error.parameter).toBe(`adapters[0].limits.${limit}`);
      expect(error.message).toMatch(/the machine would need [\d.]+ MiB of memory .* at most \d+ fit with the other options as they are/);
      const most = mostOf(error);
      expect(most).toBeGreaterThan(1000);
      expect(most).toBeLessThan(value);
      expect(attempt(adapter({ [limit]: most }))).toBeUndefined();
      expect(attempt(adapter({ [limit]: most + 1 }))?.parameter).toBe(`adapters[0].limits.${limit}`);
    }
    // A ring must fit in the arena it is taken from; the most that fits is a ring that does.
    const ring = attempt({ adapters: [{ limits: { ringEntries: 2 ** 20 } }] })!;
    expect(ring.message).toMatch(/limits\.ringEntries is 1048576: one queue's ring of 1048576 commands takes a 33554432-byte block of the arena, and limits\.heapArenaBytes is 6291456/);
    expect(mostOf(ring)).toBe(131072);
    expect(attempt({ adapters: [{ limits: { ringEntries: 131072 } }] })).toBeUndefined();
    expect(attempt({ adapters: [{ limits: { ringEntries: 131073 } }] })?.parameter).toBe('adapters[0].limits.ringEntries');
  });

  it('NF-03 waitersPerFence must fit one heap block of the arena: the error names the most that fits, which builds; an arena too small for the default heap names heapArenaBytes', () => {
    const error = attempt({ adapters: [{ limits: { waitersPerFence: 2 ** 22, heapArenaBytes: 2 ** 20 } }] })!;
    expect(error.parameter).toBe('adapters[0].limits.waitersPerFence');
    expect(error.message).toMatch(/one fence's waiter heap of 4194304 waiters takes a 67108864-byte block of the arena, and limits\.heapArenaBytes is 1048576/);
    expect(mostOf(error)).toBe(65536);
    expect(attempt({ adapters: [{ limits: { waitersPerFence: 65536, heapArenaBytes: 2 ** 20 } }] })).toBeUndefined();
    const arena = attempt({ adapters: [{ limits: { heapArenaBytes: 2 ** 16 } }] })!;
    expect(arena.parameter).toBe('adapters[0].limits.heapArenaBytes');
    expect(arena.message).toBe('adapters[0].limits.heapArenaBytes is 65536: one fence\'s waiter heap of 65536 waiters (limits.waitersPerFence) takes a 1048576-byte block of the arena; at least 1048576 bytes are needed');
  });

  it('hardware queue rings come from the arena when queues are created: the private region does not grow with queues × ringEntries, a full arena refuses a queue clearly, a destroyed queue gives its ring back', () => {
    // A million-entry ring: 32 MiB of arena for the one queue that uses it, not 64 queues × 32 MiB.
    const long = createMachineSync({ trace: false, adapters: [{ limits: { ringEntries: 1_000_000, heapArenaBytes: 40 << 20 } }] });
    expect(long.memory.buffer.byteLength).toBeLessThan(64 << 20);
    const sizeWith = (queues: number, ringEntries: number) => createMachineSync({ trace: false, adapters: [{ limits: { queues, ringEntries } }] }).memory.buffer.byteLength;
    expect(sizeWith(64, 65536)).toBe(sizeWith(64, 16));
    const app = long.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const f = app.createNativeFence({ hDevice });
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    for (let batch = 0; batch < 50; batch++) { // 204,800 commands in the ring before the GPU runs any
      app.submit({ hHwQueue: q.hHwQueue, commands: Array.from({ length: 4096 }, (_, k) => ({ signal: { hSyncObject: f.hSyncObject, value: batch * 4096 + k + 1 } })) });
    }
    long.run();
    expect(app.readFenceValue(f.hSyncObject)).toBe(204_800n);

    // 32 KiB rings in a 160 KiB arena: five queues, then a clear refusal; destroying one makes room.
    const m = createMachineSync({ trace: false, adapters: [{ limits: { ringEntries: 1024, heapArenaBytes: 160 << 10, waitersPerFence: 64 } }] });
    const p = m.createProcess('p');
    const device = p.createDevice({ hAdapter: p.openAdapter(0) });
    const queues = [];
    let refusal: unknown;
    for (let i = 0; i < 10 && !refusal; i++) {
      try { queues.push(p.createHwQueue({ hDevice: device, nativeProgressFence: false })); } catch (error) { refusal = error; }
    }
    expect(queues).toHaveLength(5);
    expect(refusal).toBeInstanceOf(WddmError);
    expect((refusal as WddmError).status).toBe('INSUFFICIENT_RESOURCES');
    expect((refusal as WddmError).message).toMatch(/hardware queue table full \(adapter option limits\.queues\), or no room left in the arena for another ring of limits\.ringEntries commands \(limits\.heapArenaBytes\)/);
    p.destroyHwQueue(queues[1].hHwQueue);
    const again = p.createHwQueue({ hDevice: device, nativeProgressFence: false });
    const fence = p.createNativeFence({ hDevice: device });
    p.submit({ hHwQueue: again.hHwQueue, commands: [{ signal: { hSyncObject: fence.hSyncObject, value: 7 } }] });
    m.run();
    expect(p.readFenceValue(fence.hSyncObject)).toBe(7n);
  });
});
