import { describe, it, expect } from 'vitest';
import { createMachine, UserModeDriver, WddmError, DXGI_ERROR_WAS_STILL_DRAWING, D3D11_MAP_FLAG_DO_NOT_WAIT, type MachineOptions, type AdapterOptions, type WaitResult } from '../src/index.js';

async function setup(options: Omit<MachineOptions, 'adapters'> = {}, adapter: AdapterOptions = {}) {
  const m = await createMachine({ seed: 1, ...options, adapters: [{ name: 'gpu0', ...adapter }] });
  const app = m.createProcess('app');
  const hAdapter = app.openAdapter(0);
  const hDevice = app.createDevice({ hAdapter });
  const q = app.createHwQueue({ hDevice, engine: 0, name: 'gfx' });
  return { m, app, hDevice, q, hHwQueue: q.hHwQueue };
}

function expectError(call: () => unknown, status: string, pattern?: RegExp): WddmError {
  let caught: unknown;
  try { call(); } catch (error) { caught = error; }
  expect(caught).toBeInstanceOf(WddmError);
  const e = caught as WddmError;
  expect(e.status).toBe(status);
  if (pattern) expect(e.message).toMatch(pattern);
  return e;
}

const work = (durationNs: number) => [{ work: { durationNs } }];
const bytes = (n: number, f: (i: number) => number) => Uint8Array.from({ length: n }, (_, i) => f(i) & 0xff);

const SEGMENTS = {
  localMemoryBytes: 1 << 20,
  segments: [
    { name: 'vram', sizeBytes: 256 << 10, supportsCpuHostAperture: true },
    { name: 'bar', sizeBytes: 128 << 10, cpuVisible: true },
    { name: 'aperture', sizeBytes: 256 << 10, aperture: true, cacheCoherent: true },
    { name: 'vram2', sizeBytes: 64 << 10 },
  ],
};

describe('VM-01 deferred destruction', () => {
  it('VM-01 destroy returns at once; the memory is freed only after the work queued before the request finishes', async () => {
    const { m, app, hDevice, hHwQueue } = await setup();
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 8192, name: 'vb' });
    const { progressValue } = app.submit({ hHwQueue, commands: work(10_000), reads: [hAllocation] });
    const result = app.destroyAllocation2({ hDevice, hAllocations: [hAllocation] });
    expect(result.freed).toBe(false);
    expect(m.nowNs).toBe(0);
    expect(m.vidmm.info(hAllocation)!.state).toBe('destroyPending');
    // The handle is dead for the app at once.
    expectError(() => app.lock2({ hDevice, hAllocation }), 'INVALID_HANDLE', /already destroyed/);
    m.run();
    const info = m.vidmm.info(hAllocation)!;
    expect(info.state).toBe('freed');
    expect(info.freedAtNs!).toBeGreaterThanOrEqual(10_000);
    expect(app.readFenceValue(app.progressFenceOf(hHwQueue)!)).toBe(progressValue);
    // The GPU read it before it was freed, and the trace says when it was really freed.
    expect(m.vidmm.gpuReads).toHaveLength(1);
    expect(m.vidmm.gpuReads[0].timeNs).toBeLessThanOrEqual(info.freedAtNs!);
    expect(m.vidmm.counters.gpuUseAfterFree).toBe(0);
    expect(m.summary().vidmm).toMatchObject({ allocationsCreated: 1, allocationsFreed: 1, destroysDeferred: 1 });
    expect(m.summaryText()).toMatch(/allocations: created=1 freed=1 destroysDeferred=1 destroysAtOnce=0/);
    const freed = m.trace.find({ name: 'allocation freed' });
    expect(freed).toHaveLength(1);
    expect(freed[0].timeNs).toBe(info.freedAtNs);
    expect(freed[0].args.reason).toMatch(/queued work finished/);
  });

  it('VM-01 the deferred destroy waits on the progress fence (a CPU waiter, woken by the interrupt), and work queued after the request does not delay it', async () => {
    const { m, app, hDevice, hHwQueue } = await setup();
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096 });
    app.submit({ hHwQueue, commands: work(1000), reads: [hAllocation] });
    app.destroyAllocation2({ hDevice, hAllocations: [hAllocation] });
    app.submit({ hHwQueue, commands: work(50_000) });
    const waitersBefore = m.os.inspect.counters.waitersAdded;
    expect(waitersBefore).toBe(1);
    m.run();
    expect(m.os.inspect.counters.waitersWoken).toBe(1);
    expect(m.trace.find({ kind: 'cmp', name: 'interrupt raised' }).length).toBeGreaterThanOrEqual(1);
    const freedAt = m.vidmm.info(hAllocation)!.freedAtNs!;
    expect(freedAt).toBeGreaterThanOrEqual(1000);
    expect(freedAt).toBeLessThan(50_000);
  });

  it('VM-01 AssumeNotInUse frees at once, ignoring pending work (the GPU then touches freed memory: reported)', async () => {
    const { m, app, hDevice, hHwQueue } = await setup();
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096, name: 'scratch' });
    app.submit({ hHwQueue, commands: work(5000), reads: [hAllocation] });
    const result = app.destroyAllocation2({ hDevice, hAllocations: [hAllocation], Flags: { AssumeNotInUse: true } });
    expect(result.freed).toBe(true);
    expect(m.vidmm.info(hAllocation)!.freedAtNs).toBe(0);
    expect(m.os.inspect.counters.waitersAdded).toBe(0);
    m.run();
    expect(m.vidmm.counters.gpuUseAfterFree).toBe(1);
    expect(m.trace.find({ kind: 'fault', name: 'GPU read of a freed allocation' })).toHaveLength(1);
  });

  it('VM-01 with nothing unfinished queued, destroy frees at once', async () => {
    const { m, app, hDevice, hHwQueue } = await setup();
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096 });
    app.submit({ hHwQueue, commands: work(100), reads: [hAllocation] });
    m.run();
    expect(app.destroyAllocation2({ hDevice, hAllocations: [hAllocation] }).freed).toBe(true);
  });

  it('VM-01 after a GPU reset the device can still destroy its allocations; a pending destroy completes', async () => {
    const { m, app, hDevice, hHwQueue } = await setup();
    const pending = app.createAllocation({ hDevice, sizeBytes: 4096 }).hAllocation;
    const later = app.createAllocation({ hDevice, sizeBytes: 4096 }).hAllocation;
    app.submit({ hHwQueue, commands: work(100_000), reads: [pending] });
    expect(app.destroyAllocation2({ hDevice, hAllocations: [pending] }).freed).toBe(false);
    m.run(1000);
    m.removeDevice(0);
    m.run();
    expect(m.vidmm.info(pending)!.state).toBe('freed');
    expect(app.destroyAllocation2({ hDevice, hAllocations: [later] }).freed).toBe(true);
  });

  it('VM-01 SynchronousDestroy: a CPU thread that yields the returned wait resumes once the memory is reclaimed', async () => {
    const { m, app, hDevice, hHwQueue } = await setup();
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096 });
    app.submit({ hHwQueue, commands: work(7000), writes: [hAllocation] });
    let resumedAt = -1;
    let freedWhenResumed = '';
    const t = app.createThread('destroyer', function* (cpu) {
      const r = app.destroyAllocation2({ hDevice, hAllocations: [hAllocation], Flags: { SynchronousDestroy: true } });
      expect(r.freed).toBe(false);
      expect(r.wait).toBeDefined();
      yield r.wait!;
      resumedAt = cpu.nowNs;
      freedWhenResumed = m.vidmm.info(hAllocation)!.state;
    });
    m.run();
    expect(t.state).toBe('done');
    expect(resumedAt).toBeGreaterThanOrEqual(7000);
    expect(freedWhenResumed).toBe('freed');
  });

  it('VM-01 bad input: destroying twice (in one list, or again later) fails clearly and changes nothing', async () => {
    const { m, app, hDevice } = await setup();
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096 });
    expectError(() => app.destroyAllocation2({ hDevice, hAllocations: [hAllocation, hAllocation] }), 'INVALID_PARAMETER', /destroyed twice/);
    expect(m.vidmm.info(hAllocation)!.state).toBe('live');
    expectError(() => app.destroyAllocation2({ hDevice, hAllocations: [hAllocation], Flags: { AssumeNotInUse: 1 as unknown as boolean } }), 'INVALID_PARAMETER', /AssumeNotInUse/);
    expectError(() => app.destroyAllocation2({ hDevice, hAllocations: [hAllocation], Flags: { Bogus: true } as never }), 'INVALID_PARAMETER', /unknown key "Bogus"/);
    expect(m.vidmm.info(hAllocation)!.state).toBe('live');
    expect(app.destroyAllocation2({ hDevice, hAllocations: [hAllocation] }).freed).toBe(true);
    expectError(() => app.destroyAllocation2({ hDevice, hAllocations: [hAllocation] }), 'INVALID_HANDLE', /already destroyed/);
    // Another process cannot destroy it either.
    const other = m.createProcess('other');
    const h2 = app.createAllocation({ hDevice, sizeBytes: 4096 }).hAllocation;
    const otherDevice = other.createDevice({ hAdapter: other.openAdapter(0) });
    expectError(() => other.destroyAllocation2({ hDevice: otherDevice, hAllocations: [h2] }), 'INVALID_HANDLE', /belongs to process "app"/);
    expect(m.vidmm.info(h2)!.state).toBe('live');
  });

  it('VM-01 allocation churn leaves a bounded record: info() knows the newest limits.allocationRecords freed allocations, older handles still get INVALID_HANDLE', async () => {
    const limit = 8;
    const { m, app, hDevice, hHwQueue } = await setup({ limits: { allocationRecords: limit } });
    const handles: number[] = [];
    for (let i = 0; i < 40; i++) {
      const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096, name: `churn${i}` });
      handles.push(hAllocation);
      // Every other one is destroyed behind queued work (deferred), the rest at once.
      if (i % 2 === 0) app.submit({ hHwQueue, commands: work(500), reads: [hAllocation] });
      app.destroyAllocation2({ hDevice, hAllocations: [hAllocation] });
    }
    // Deferred destroys are all known while their memory is not freed, whatever the limit.
    const pending = handles.filter((h) => m.vidmm.info(h)?.state === 'destroyPending');
    expect(pending.length).toBeGreaterThan(limit);
    m.run();
    expect(m.vidmm.counters.allocationsFreed).toBe(40);
    const known = handles.filter((h) => m.vidmm.info(h) !== undefined);
    expect(known).toHaveLength(limit);
    expect(m.vidmm.counters.freedAllocationsForgotten).toBe(40 - limit);
    expect(known.every((h) => m.vidmm.info(h)!.state === 'freed')).toBe(true);
    // The newest freed are kept, in the order they were freed.
    const freedOrder = m.trace.find({ name: 'allocation freed' }).map((e) => e.args.hAllocation as number);
    expect(known.sort((x, y) => x - y)).toEqual(freedOrder.slice(-limit).sort((x, y) => x - y));
    // A kept one is "already destroyed"; a forgotten one is still refused, as closed.
    expectError(() => app.lock2({ hDevice, hAllocation: known[0] }), 'INVALID_HANDLE', /already destroyed/);
    const forgotten = handles.find((h) => m.vidmm.info(h) === undefined)!;
    expectError(() => app.lock2({ hDevice, hAllocation: forgotten }), 'INVALID_HANDLE', /was closed or destroyed in process "app"/);
    expect(m.vidmm.counters.locks).toBe(0);
    // The segments got every byte back.
    expect(m.vidmm.segmentUsage(0).every((s) => s.usedBytes === 0)).toBe(true);
  });

  it('VM-01 a live allocation handle named as another kind of handle, and a sync object named as an allocation, are type mismatches', async () => {
    const { m, app, hDevice } = await setup();
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096, name: 'vb' });
    const hSyncObject = app.createNativeFence({ hDevice, initialValue: 0n }).hSyncObject;
    expectError(() => app.signal({ objects: [hAllocation], values: [1n] }), 'OBJECT_TYPE_MISMATCH', /is an allocation \(hAllocation\); expected a sync object/);
    expectError(() => app.createHwQueue({ hDevice: hAllocation, engine: 0 }), 'OBJECT_TYPE_MISMATCH', /is an allocation \(hAllocation\); expected a device/);
    expectError(() => app.lock2({ hDevice, hAllocation: hSyncObject }), 'OBJECT_TYPE_MISMATCH', /is a sync object \(hSyncObject\); expected an allocation/);
    expect(m.vidmm.info(hAllocation)!.state).toBe('live');
    expect(m.vidmm.counters.locks).toBe(0);
  });
});

describe('VM-02..04 Lock2 through the user-mode driver', () => {
  it('VM-02 WRITE_NO_OVERWRITE maps at once even while the GPU reads the buffer (and the GPU then sees the new bytes: the app promised not to overwrite)', async () => {
    const { m, app, hDevice, hHwQueue } = await setup();
    const umd = new UserModeDriver(app, hDevice);
    const vb = umd.createResource({ sizeBytes: 4096, name: 'vb' });
    let r = umd.map({ hResource: vb, mapType: 'WRITE_DISCARD' });
    umd.write(vb, 0, bytes(16, () => 1));
    umd.unmap(vb);
    umd.submit({ hHwQueue, commands: work(10_000), reads: [{ hResource: vb, Offset: 0, Length: 16 }] });
    r = umd.map({ hResource: vb, mapType: 'WRITE_NO_OVERWRITE' });
    expect(r.hr).toBe(0);
    expect(r.renamed).toBe(false);
    expect(m.nowNs).toBe(0);
    expect(umd.poolSize(vb)).toBe(1);
    umd.write(vb, 0, bytes(16, () => 2)); // breaks the no-overwrite promise on purpose
    umd.unmap(vb);
    m.run();
    expect(m.vidmm.gpuReads[0].bytes[0]).toBe(2);
  });

  it('VM-03 a dynamic vertex buffer mapped with DISCARD several times a frame: renames, recycles, the CPU never waits, the GPU reads every version intact', async () => {
    const { m, app, hDevice, hHwQueue } = await setup();
    const umd = new UserModeDriver(app, hDevice);
    const vb = umd.createResource({ sizeBytes: 4096, name: 'dynamicVB' });
    const frames = 8, drawsPerFrame = 3;
    let mapsThatWaited = 0;
    const t = app.createThread('render', function* (cpu) {
      for (let frame = 0; frame < frames; frame++) {
        for (let draw = 0; draw < drawsPerFrame; draw++) {
          const before = cpu.nowNs;
          const mapped = yield* umd.mapBlocking(cpu, { hResource: vb, mapType: 'WRITE_DISCARD' });
          if (cpu.nowNs !== before) mapsThatWaited++;
          expect(mapped.hr).toBe(0);
          const k = frame * drawsPerFrame + draw;
          umd.write(vb, 0, bytes(64, () => k));
          umd.unmap(vb);
          umd.submit({ hHwQueue, commands: work(1000), reads: [{ hResource: vb, Offset: 0, Length: 64 }] });
        }
        yield cpu.sleep(6000);
      }
    });
    m.run();
    expect(t.state).toBe('done');
    expect(mapsThatWaited).toBe(0);
    expect(umd.stats.synchronizingWaits).toBe(0);
    // Every draw read the bytes written for it, though the CPU rewrote "the same" buffer while the GPU read older ones.
    expect(m.vidmm.gpuReads.map((r) => r.bytes[0])).toEqual(Array.from({ length: frames * drawsPerFrame }, (_, k) => k));
    expect(m.vidmm.gpuReads.every((r) => r.bytes.every((b) => b === r.bytes[0]))).toBe(true);
    expect(umd.stats.renames).toBeGreaterThanOrEqual(frames * (drawsPerFrame - 1));
    expect(umd.poolSize(vb)).toBeGreaterThanOrEqual(2);
    expect(umd.poolSize(vb)).toBeLessThanOrEqual(drawsPerFrame + 1);
    expect(umd.stats.instancesCreated).toBe(umd.poolSize(vb));
    expect(umd.stats.instancesRecycled).toBeGreaterThan(0);
    // Lock2 once per backing instance (kept mapped), never per Map.
    expect(m.vidmm.counters.locks).toBe(umd.poolSize(vb));
  });

  it('VM-03 the README example: three discards while the GPU reads → two renames, a pool of three', async () => {
    const machine = await createMachine({ seed: 1, adapters: [{ name: 'gpu0' }] });
    const app = machine.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter('gpu0') });
    const queue = app.createHwQueue({ hDevice, engine: 0 });
    const umd = new UserModeDriver(app, hDevice);
    const vb = umd.createResource({ sizeBytes: 4096, name: 'dynamicVB' });
    for (let draw = 0; draw < 3; draw++) {
      umd.map({ hResource: vb, mapType: 'WRITE_DISCARD' });
      umd.write(vb, 0, new Uint8Array(64).fill(draw)); umd.unmap(vb);
      umd.submit({ hHwQueue: queue.hHwQueue, commands: [{ work: { durationNs: 1000 } }], reads: [vb] });
    }
    machine.run();
    expect(umd.stats.renames).toBe(2);
    expect(umd.poolSize(vb)).toBe(3);
    expect(machine.vidmm.gpuReads.map((r) => r.bytes[0])).toEqual([0, 1, 2]);
  });

  it('VM-03 in virtual time: DISCARD never stalls the CPU, the same frames with a synchronizing WRITE map stall it on every draw', async () => {
    async function frames(mapType: 'WRITE_DISCARD' | 'WRITE') {
      const { m, app, hDevice, hHwQueue } = await setup();
      const umd = new UserModeDriver(app, hDevice);
      const vb = umd.createResource({ sizeBytes: 4096 });
      let stalledNs = 0;
      const t = app.createThread('render', function* (cpu) {
        for (let frame = 0; frame < 10; frame++) {
          for (let draw = 0; draw < 3; draw++) {
            const before = cpu.nowNs;
            yield* umd.mapBlocking(cpu, { hResource: vb, mapType });
            stalledNs += cpu.nowNs - before;
            umd.write(vb, 0, bytes(64, () => frame * 3 + draw));
            umd.unmap(vb);
            umd.submit({ hHwQueue, commands: work(1000), reads: [{ hResource: vb, Offset: 0, Length: 64 }] });
          }
          yield cpu.sleep(4000);
        }
      });
      m.run();
      return { stalledNs, doneNs: t.state === 'done' ? m.nowNs : -1, waits: umd.stats.synchronizingWaits, pool: umd.poolSize(vb), reads: m.vidmm.gpuReads.map((r) => r.bytes[0]) };
    }
    const discard = await frames('WRITE_DISCARD');
    const write = await frames('WRITE');
    expect(discard.stalledNs).toBe(0);
    expect(discard.waits).toBe(0);
    expect(discard.pool).toBeLessThanOrEqual(3);
    expect(write.waits).toBe(20);
    expect(write.stalledNs).toBeGreaterThan(20 * 1000);
    expect(write.doneNs).toBeGreaterThan(discard.doneNs);
    expect(write.pool).toBe(1);
    // Both are correct; only the synchronizing one pays for it with CPU time.
    expect(discard.reads).toEqual(write.reads);
  });

  it('VM-03 without renaming (NO_OVERWRITE every time) the same program corrupts what the GPU reads', async () => {
    const { m, app, hDevice, hHwQueue } = await setup();
    const umd = new UserModeDriver(app, hDevice);
    const vb = umd.createResource({ sizeBytes: 4096 });
    for (let k = 0; k < 3; k++) {
      umd.map({ hResource: vb, mapType: 'WRITE_NO_OVERWRITE' });
      umd.write(vb, 0, bytes(64, () => k));
      umd.unmap(vb);
      umd.submit({ hHwQueue, commands: work(1000), reads: [{ hResource: vb, Offset: 0, Length: 64 }] });
    }
    m.run();
    expect(m.vidmm.gpuReads.map((r) => r.bytes[0])).not.toEqual([0, 1, 2]);
  });

  it('VM-03 a pool at its limit makes DISCARD wait for the oldest instance (or return WasStillDrawing with DO_NOT_WAIT)', async () => {
    const { m, app, hDevice, hHwQueue } = await setup();
    const umd = new UserModeDriver(app, hDevice, { maxInstances: 2 });
    const vb = umd.createResource({ sizeBytes: 4096 });
    for (let k = 0; k < 2; k++) {
      expect(umd.map({ hResource: vb, mapType: 'WRITE_DISCARD' }).hr).toBe(0);
      umd.unmap(vb);
      umd.submit({ hHwQueue, commands: work(3000), reads: [vb] });
    }
    expect(umd.map({ hResource: vb, mapType: 'WRITE_DISCARD', mapFlags: D3D11_MAP_FLAG_DO_NOT_WAIT }).hr).toBe(DXGI_ERROR_WAS_STILL_DRAWING);
    const result = await Promise.all([umd.mapAsync({ hResource: vb, mapType: 'WRITE_DISCARD' }), Promise.resolve(m.run())]);
    expect(result[0].hr).toBe(0);
    expect(umd.poolSize(vb)).toBe(2);
  });

  it('VM-04 a synchronizing map of a busy buffer returns WasStillDrawing with DO_NOT_WAIT and changes nothing', async () => {
    const { m, app, hDevice, hHwQueue } = await setup();
    const umd = new UserModeDriver(app, hDevice);
    const staging = umd.createResource({ sizeBytes: 4096, name: 'staging' });
    umd.submit({ hHwQueue, commands: work(5000), writes: [staging] });
    for (const mapType of ['READ', 'WRITE', 'READ_WRITE'] as const) {
      const r = umd.map({ hResource: staging, mapType, mapFlags: D3D11_MAP_FLAG_DO_NOT_WAIT });
      expect(r.hr).toBe(DXGI_ERROR_WAS_STILL_DRAWING);
      expect(r.hr).toBe(0x887a000a);
      expect(r.pData).toBeUndefined();
    }
    expect(umd.stats.wasStillDrawing).toBe(3);
    expect(umd.stats.maps).toBe(0);
    expect(umd.poolSize(staging)).toBe(1);
    // Without a thread or a promise the UMD refuses to block.
    expectError(() => umd.map({ hResource: staging, mapType: 'READ' }), 'INVALID_DEVICE_STATE', /mapBlocking/);
    m.run();
    // Idle now: the same call maps at once.
    expect(umd.map({ hResource: staging, mapType: 'READ', mapFlags: D3D11_MAP_FLAG_DO_NOT_WAIT }).hr).toBe(0);
  });

  it('VM-04 without DO_NOT_WAIT the thread blocks on the queue progress fence (one CPU waiter, woken by the interrupt: no polling) until the GPU is done', async () => {
    const { m, app, hDevice, hHwQueue } = await setup();
    const umd = new UserModeDriver(app, hDevice);
    const staging = umd.createResource({ sizeBytes: 4096, name: 'staging', segments: ['aperture'] });
    umd.submit({ hHwQueue, commands: work(8000), writes: [{ hResource: staging, Offset: 0, data: bytes(32, (i) => 100 + i) }] });
    let mappedAt = -1;
    let seen: Uint8Array = new Uint8Array();
    const t = app.createThread('reader', function* (cpu) {
      const r = yield* umd.mapBlocking(cpu, { hResource: staging, mapType: 'READ' });
      mappedAt = cpu.nowNs;
      seen = umd.read(staging, 0, 32);
      umd.unmap(staging);
      return r.hr;
    });
    m.run();
    expect(t.state).toBe('done');
    expect(t.result).toBe(0);
    expect(mappedAt).toBeGreaterThanOrEqual(8000);
    expect([...seen]).toEqual([...bytes(32, (i) => 100 + i)]);
    expect(umd.stats.synchronizingWaits).toBe(1);
    expect(t.waits).toHaveLength(1);
    expect((t.waits[0] as WaitResult).immediate).toBe(false);
    expect(m.os.inspect.counters.waitersAdded).toBe(1);
    expect(m.os.inspect.counters.interruptsHandled).toBeGreaterThanOrEqual(1);
    expect(m.trace.find({ kind: 'runtime', name: 'D3DKMTWaitForSynchronizationObjectFromCpu' })).toHaveLength(1);
  });
});

describe('VM-05 lock rules by segment and CPU access attribute', () => {
  it('VM-05 an uncached allocation in a fully CPU-visible segment always locks in place (the CPU writes local memory directly)', async () => {
    const { m, app, hDevice } = await setup({}, SEGMENTS);
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 8192, segments: ['bar'], cpuAccess: 'uncached' });
    const { pData } = app.lock2({ hDevice, hAllocation });
    const info = m.vidmm.info(hAllocation)!;
    expect(info.segment).toBe('bar');
    expect(info.lockPath).toBe('cpuVisibleSegment');
    app.cpuStore(pData + 4096n, bytes(8, (i) => 0xa0 + i));
    const local = m.adapters[0].localBase;
    expect(info.pages[1]).toBeGreaterThanOrEqual(local);
    expect([...new Uint8Array(m.memory.buffer, info.pages[1], 8)]).toEqual([...bytes(8, (i) => 0xa0 + i)]);
  });

  it('VM-05 a cached allocation locks only in an aperture segment or not resident: VidMm moves it out of local memory first', async () => {
    const { m, app, hDevice } = await setup({}, SEGMENTS);
    const withAperture = app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['bar', 'aperture'], cpuAccess: 'cached' }).hAllocation;
    const without = app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['bar'], cpuAccess: 'cached' }).hAllocation;
    expect(m.vidmm.info(withAperture)!.segment).toBe('bar');
    app.lock2({ hDevice, hAllocation: withAperture });
    expect(m.vidmm.info(withAperture)!.segment).toBe('aperture');
    expect(m.vidmm.info(withAperture)!.lockPath).toBe('systemMemory');
    app.lock2({ hDevice, hAllocation: without });
    expect(m.vidmm.info(without)!.resident).toBe(false);
    expect(m.vidmm.info(without)!.keptOutOfLocalMemory).toBe(true);
    expect(m.trace.find({ name: 'allocation moved' }).map((e) => e.args.reason)).toEqual([
      'cached CPU access: aperture segment', 'cached CPU access: not resident (no aperture segment with room)',
    ]);
  });

  it('VM-05 in a segment the CPU cannot see: through the CpuHostAperture, else through an aperture segment in the set, else a clear error', async () => {
    const { m, app, hDevice } = await setup({}, SEGMENTS);
    const viaHostAperture = app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['vram'] }).hAllocation;
    app.lock2({ hDevice, hAllocation: viaHostAperture });
    expect(m.vidmm.info(viaHostAperture)!.lockPath).toBe('cpuHostAperture');
    expect(m.vidmm.info(viaHostAperture)!.segment).toBe('vram');

    const viaAperture = app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['vram2', 'aperture'] }).hAllocation;
    expect(m.vidmm.info(viaAperture)!.segment).toBe('vram2');
    app.lock2({ hDevice, hAllocation: viaAperture });
    expect(m.vidmm.info(viaAperture)!.segment).toBe('aperture');

    const stuck = app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['vram2'] }).hAllocation;
    expectError(() => app.lock2({ hDevice, hAllocation: stuck }), 'NOT_SUPPORTED', /cannot see.*no aperture segment/);
    expect(m.vidmm.info(stuck)).toMatchObject({ segment: 'vram2', locked: false });
    // Not CPU-accessible at all, resident in local memory, no aperture segment: refused too.
    const opaque = app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['vram'], cpuAccess: 'none' }).hAllocation;
    expectError(() => app.lock2({ hDevice, hAllocation: opaque }), 'NOT_SUPPORTED', /not CPU-accessible/);
    // After an eviction the same allocations lock (they are in system memory).
    app.evict({ hDevice, hAllocation: stuck });
    expect(app.lock2({ hDevice, hAllocation: stuck }).pData).toBeTypeOf('bigint');
  });

  it('VM-05 a lock of a non-resident allocation without an aperture segment keeps it out of local memory until Unlock2', async () => {
    const { m, app, hDevice } = await setup({}, SEGMENTS);
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['vram'], resident: false });
    const { pData } = app.lock2({ hDevice, hAllocation });
    app.cpuStore(pData, bytes(4, () => 7));
    expect(m.vidmm.info(hAllocation)!.keptOutOfLocalMemory).toBe(true);
    expectError(() => app.makeResident({ hDevice, hAllocation }), 'INVALID_DEVICE_STATE', /stays out of local memory until Unlock2/);
    expect(m.vidmm.info(hAllocation)!.resident).toBe(false);
    app.unlock2({ hDevice, hAllocation });
    expect(app.makeResident({ hDevice, hAllocation }).segment).toBe('vram');
    // Its bytes moved with it.
    const page = m.vidmm.info(hAllocation)!.pages[0];
    expect([...new Uint8Array(m.memory.buffer, page, 4)]).toEqual([7, 7, 7, 7]);
  });
});

describe('VM-05 residency while locked', () => {
  it('VM-05 a locked allocation keeps its CPU mapping: from system memory it may only enter an aperture segment', async () => {
    const { m, app, hDevice } = await setup({}, SEGMENTS);
    const a = app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['vram', 'aperture'], resident: false }).hAllocation;
    const { pData } = app.lock2({ hDevice, hAllocation: a });
    expect(m.vidmm.info(a)!.keptOutOfLocalMemory).toBe(false);
    app.cpuStore(pData, bytes(4, () => 5));
    expect(app.makeResident({ hDevice, hAllocation: a }).segment).toBe('aperture');
    expect([...app.cpuLoad(pData, 4)]).toEqual([5, 5, 5, 5]);
    const b = app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['vram', 'vram2'] }).hAllocation;
    app.lock2({ hDevice, hAllocation: b });
    expectError(() => app.makeResident({ hDevice, hAllocation: b, segment: 'vram2' }), 'NO_MEMORY', /keeps its CPU mapping while locked/);
    expectError(() => app.evict({ hDevice, hAllocation: b }), 'INVALID_DEVICE_STATE', /locked in local memory/);
    expect(m.vidmm.info(b)).toMatchObject({ segment: 'vram', locked: true, lockPath: 'cpuHostAperture' });
    app.unlock2({ hDevice, hAllocation: b });
    expect(app.makeResident({ hDevice, hAllocation: b, segment: 'vram2' }).segment).toBe('vram2');
  });
});

describe('VM-06 the CpuHostAperture', () => {
  it('VM-06 maps non-contiguous local pages into one contiguous CPU range through its page table; when full the lock fails clearly', async () => {
    const { m, app, hDevice } = await setup({}, { ...SEGMENTS, cpuHostAperturePages: 4 });
    // Punch holes in local memory so the next allocation's pages are not contiguous.
    const fillers = [0, 1, 2, 3].map(() => app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['vram'] }).hAllocation);
    app.destroyAllocation2({ hDevice, hAllocations: [fillers[0], fillers[2]], Flags: { AssumeNotInUse: true } });
    const a = app.createAllocation({ hDevice, sizeBytes: 3 * 4096, segments: ['vram'], name: 'A' }).hAllocation;
    const pages = m.vidmm.info(a)!.pages;
    expect(pages.some((p, i) => i > 0 && p !== pages[i - 1] + 4096)).toBe(true);

    const { pData } = app.lock2({ hDevice, hAllocation: a });
    const info = m.vidmm.info(a)!;
    expect(info.lockPath).toBe('cpuHostAperture');
    expect(info.aperturePages).toHaveLength(3);
    const aperture = m.vidmm.adapters[0].aperture;
    info.aperturePages!.forEach((ap, i) => expect(aperture.pageTable[ap]).toBe(pages[i]));
    // One contiguous CPU write across the page boundaries lands in the scattered local pages.
    const data = bytes(3 * 4096, (i) => i * 7 + 3);
    app.cpuStore(pData, data);
    const memory = new Uint8Array(m.memory.buffer);
    pages.forEach((p, i) => expect([...memory.subarray(p, p + 4096)]).toEqual([...data.subarray(i * 4096, (i + 1) * 4096)]));
    expect([...app.cpuLoad(pData + 4090n, 12)]).toEqual([...data.subarray(4090, 4102)]);
    expect(m.trace.find({ kind: 'ddi', name: 'DxgkDdiMapCpuHostAperture' })).toHaveLength(1);

    // 1 page left: a 2-page allocation with no aperture segment cannot lock.
    const b = app.createAllocation({ hDevice, sizeBytes: 2 * 4096, segments: ['vram'], name: 'B' }).hAllocation;
    const e = expectError(() => app.lock2({ hDevice, hAllocation: b }), 'INSUFFICIENT_RESOURCES', /CpuHostAperture of "gpu0" is full: it needs 2 page\(s\), 1 of 4 are free/);
    expect(e.parameter).toBe('hAllocation');
    expect(m.vidmm.info(b)).toMatchObject({ locked: false, segment: 'vram' });
    expect(aperture.pagesInUse).toBe(3);
    // With an aperture segment in its set, the allocation takes the aperture-segment path instead.
    const c = app.createAllocation({ hDevice, sizeBytes: 2 * 4096, segments: ['vram', 'aperture'], name: 'C' }).hAllocation;
    app.lock2({ hDevice, hAllocation: c });
    expect(m.vidmm.info(c)).toMatchObject({ segment: 'aperture', lockPath: 'systemMemory' });
    // Unlock A: its aperture pages are free again and B locks.
    app.unlock2({ hDevice, hAllocation: a });
    expect(aperture.pagesInUse).toBe(0);
    expect(app.lock2({ hDevice, hAllocation: b }).pData).toBeTypeOf('bigint');
    expect(m.vidmm.info(b)!.lockPath).toBe('cpuHostAperture');
  });
});

describe('VM-07 Lock2 flags', () => {
  it('VM-07 any set bit of D3DDDICB_LOCK2FLAGS is rejected, and nothing changes', async () => {
    const { m, app, hDevice } = await setup();
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['aperture'] });
    for (let bit = 0; bit < 32; bit++) {
      const e = expectError(() => app.lock2({ hDevice, hAllocation, Flags: 2 ** bit }), 'INVALID_PARAMETER', /reserved and must be 0/);
      expect(e.parameter).toBe('Flags');
    }
    expect(m.vidmm.info(hAllocation)!.locked).toBe(false);
    expect(m.vidmm.counters.locks).toBe(0);
    expect(app.lock2({ hDevice, hAllocation, Flags: 0 }).pData).toBeTypeOf('bigint');
    expect(m.vidmm.info(hAllocation)!.locked).toBe(true);
  });
});

describe('VM-08 I/O coherence', () => {
  /** CPU writes vertices, the GPU reads them; the GPU writes results, the CPU reads them. */
  async function program(ioCoherent: boolean, invalidate: boolean) {
    const { m, app, hDevice, hHwQueue } = await setup({ ioCoherent });
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['aperture'], cpuAccess: 'cached', name: 'shared' });
    const { pData } = app.lock2({ hDevice, hAllocation });
    const vertices = bytes(64, (i) => i + 1);
    app.cpuStore(pData, vertices);
    if (invalidate) app.invalidateCache({ hDevice, hAllocation, Offset: 0, Length: 64 });
    app.submit({ hHwQueue, commands: work(1000), reads: [{ hAllocation, Offset: 0, Length: 64 }] });
    const results = bytes(64, (i) => 200 - i);
    app.submit({ hHwQueue, commands: work(1000), writes: [{ hAllocation, Offset: 256, data: results }] });
    m.run();
    if (invalidate) app.invalidateCache({ hDevice, hAllocation, Offset: 256, Length: 64 });
    const cpuSaw = app.cpuLoad(pData + 256n, 64);
    return { m, gpuSaw: m.vidmm.gpuReads[0].bytes, cpuSaw, vertices, results, hAllocation };
  }

  it('VM-08 on a non-coherent platform a missed invalidation is caught: the GPU reads stale vertices and the CPU reads stale results', async () => {
    const { m, gpuSaw, cpuSaw, vertices, results, hAllocation } = await program(false, false);
    expect([...gpuSaw]).not.toEqual([...vertices]);
    expect([...gpuSaw]).toEqual(new Array(64).fill(0));
    expect([...cpuSaw]).not.toEqual([...results]);
    expect(m.vidmm.coherenceFaults.map((f) => [f.kind, f.hAllocation, f.offset, f.length])).toEqual([
      ['stale GPU read', hAllocation, 0, 64],
      ['stale CPU read', hAllocation, 256, 64],
    ]);
    const faults = m.trace.find({ kind: 'fault' });
    expect(faults.map((f) => f.name)).toEqual(['stale GPU read', 'stale CPU read']);
    expect(faults[0].args).toMatchObject({ allocation: 'shared', Offset: 0, Length: 64 });
    expect(faults[1].args).toMatchObject({ allocation: 'shared', Offset: 256, Length: 64 });
  });

  it('VM-08 the same program with the invalidations (after the CPU write, before the CPU read) is correct', async () => {
    const { m, gpuSaw, cpuSaw, vertices, results } = await program(false, true);
    expect([...gpuSaw]).toEqual([...vertices]);
    expect([...cpuSaw]).toEqual([...results]);
    expect(m.vidmm.coherenceFaults).toEqual([]);
    expect(m.trace.find({ kind: 'fault' })).toEqual([]);
    expect(m.vidmm.counters.linesWrittenBack).toBe(1);
  });

  it('VM-08 on a coherent platform the program needs no invalidation', async () => {
    const { m, gpuSaw, cpuSaw, vertices, results } = await program(true, false);
    expect([...gpuSaw]).toEqual([...vertices]);
    expect([...cpuSaw]).toEqual([...results]);
    expect(m.vidmm.coherenceFaults).toEqual([]);
  });

  it('VM-08 a GPU write over CPU bytes never written back is reported as a lost write', async () => {
    const { m, app, hDevice, hHwQueue } = await setup({ ioCoherent: false });
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['aperture'], cpuAccess: 'cached' });
    const { pData } = app.lock2({ hDevice, hAllocation });
    app.cpuStore(pData + 64n, bytes(8, () => 1));
    app.submit({ hHwQueue, commands: work(100), writes: [{ hAllocation, Offset: 0, Length: 256 }] });
    m.run();
    expect(m.vidmm.coherenceFaults.map((f) => [f.kind, f.offset, f.length])).toEqual([['lost write', 64, 64]]);
  });

  it('gpuReads and coherenceFaults keep the newest limits.allocationRecords and count the rest: a long run does not grow them', async () => {
    const limit = 16;
    const { m, app, hDevice, hHwQueue } = await setup({ ioCoherent: false, limits: { allocationRecords: limit } });
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['aperture'], cpuAccess: 'cached' });
    const { pData } = app.lock2({ hDevice, hAllocation });
    const draws = 200;
    for (let k = 0; k < draws; k++) {
      // A CPU write with no invalidation before the GPU reads it: a stale GPU read every draw.
      app.cpuStore(pData, bytes(1, () => k));
      app.submit({ hHwQueue, commands: work(100), reads: [{ hAllocation, Offset: 0, Length: 64 }] });
      m.run();
    }
    const { gpuReads, coherenceFaults, counters } = m.vidmm;
    expect(counters.staleGpuReads).toBe(draws);
    expect(gpuReads.length).toBeGreaterThanOrEqual(limit);
    expect(gpuReads.length).toBeLessThanOrEqual(limit + limit / 4);
    expect(gpuReads.length + counters.gpuReadsDropped).toBe(draws);
    expect(coherenceFaults.length + counters.coherenceFaultsDropped).toBe(draws);
    expect(coherenceFaults.length).toBeLessThanOrEqual(limit + limit / 4);
    // What is kept is the newest, oldest first.
    const times = gpuReads.map((r) => r.timeNs);
    expect(times).toEqual([...times].sort((x, y) => x - y));
    expect(times.at(-1)).toBe(m.trace.find({ name: 'GPU read allocation' }).at(-1)!.timeNs);
    expect(m.summary().vidmm).toMatchObject({ gpuReadsDropped: counters.gpuReadsDropped, coherenceFaultsDropped: counters.coherenceFaultsDropped });
    expect(m.summaryText()).toContain(`allocation records let go (only the newest ${limit} of each kind are kept: limits.allocationRecords): gpuReads=${counters.gpuReadsDropped} coherenceFaults=${counters.coherenceFaultsDropped} freedAllocations=0`);
  });

  it('limits.allocationRecords is checked at createMachine: out of range or not an integer is refused', async () => {
    for (const bad of [0, -1, 1.5, 2 ** 24 + 1, '16']) {
      await expect(createMachine({ adapters: [{}], limits: { allocationRecords: bad as never } })).rejects.toThrow(/limits\.allocationRecords/);
    }
    const m = await createMachine({ adapters: [{}], limits: { allocationRecords: 1 } });
    expect(m.vidmm.records).toBe(1);
  });

  it('VM-08 uncached allocations need no maintenance even on a non-coherent platform', async () => {
    const { m, app, hDevice, hHwQueue } = await setup({ ioCoherent: false });
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['aperture'], cpuAccess: 'uncached' });
    const { pData } = app.lock2({ hDevice, hAllocation });
    app.cpuStore(pData, bytes(16, () => 9));
    app.submit({ hHwQueue, commands: work(100), reads: [hAllocation] });
    m.run();
    expect(m.vidmm.gpuReads[0].bytes[0]).toBe(9);
    expect(m.vidmm.coherenceFaults).toEqual([]);
  });

  it('VM-08 the UMD does the invalidations itself (Unmap after a write map, before a READ map); without them the same frames are stale', async () => {
    async function frames(maintainCoherence: boolean) {
      const { m, app, hDevice, hHwQueue } = await setup({ ioCoherent: false });
      const umd = new UserModeDriver(app, hDevice, { maintainCoherence });
      const vb = umd.createResource({ sizeBytes: 4096, segments: ['aperture'], cpuAccess: 'cached' });
      const readback = umd.createResource({ sizeBytes: 4096, segments: ['aperture'], cpuAccess: 'cached' });
      umd.map({ hResource: readback, mapType: 'WRITE_DISCARD' }); umd.unmap(readback); // the CPU has touched it
      for (let k = 1; k <= 3; k++) {
        umd.map({ hResource: vb, mapType: 'WRITE_DISCARD' });
        umd.write(vb, 0, bytes(64, () => k));
        umd.unmap(vb);
        umd.submit({ hHwQueue, commands: work(500), reads: [{ hResource: vb, Offset: 0, Length: 64 }] });
      }
      umd.submit({ hHwQueue, commands: work(500), writes: [{ hResource: readback, Offset: 0, data: bytes(8, () => 42) }] });
      let cpuSaw = -1;
      app.createThread('readback', function* (cpu) {
        yield* umd.mapBlocking(cpu, { hResource: readback, mapType: 'READ' });
        cpuSaw = umd.read(readback, 0, 1)[0];
        umd.unmap(readback);
      });
      m.run();
      return { gpuSaw: m.vidmm.gpuReads.map((r) => r.bytes[0]), cpuSaw, faults: m.vidmm.coherenceFaults.map((f) => f.kind), invalidations: m.vidmm.counters.cacheInvalidations };
    }
    const correct = await frames(true);
    expect(correct).toEqual({ gpuSaw: [1, 2, 3], cpuSaw: 42, faults: [], invalidations: 5 });
    const broken = await frames(false);
    expect(broken.gpuSaw).not.toEqual([1, 2, 3]);
    expect(broken.cpuSaw).not.toBe(42);
    expect(broken.faults).toContain('stale GPU read');
    expect(broken.faults).toContain('stale CPU read');
  });
});

describe('VM bad input and options', () => {
  it('VM-05 an allocation with no segment it can live in is refused, and a good one follows', async () => {
    const { m, app, hDevice } = await setup({}, SEGMENTS);
    expectError(() => app.createAllocation({ hDevice, sizeBytes: 4096, segments: [] }), 'INVALID_PARAMETER', /no segment it can live in/);
    expectError(() => app.createAllocation({ hDevice, sizeBytes: 512 << 10, segments: ['vram', 'vram2'] }), 'INVALID_PARAMETER', /can hold 524288 bytes/);
    expectError(() => app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['nowhere'] }), 'INVALID_PARAMETER', /segments\[0\] is "nowhere"/);
    expectError(() => app.createAllocation({ hDevice, sizeBytes: 4096, segments: [1, 1] }), 'INVALID_PARAMETER', /at most once/);
    expectError(() => app.createAllocation({ hDevice, sizeBytes: 4096, cpuAccess: 'writeCombined' as never }), 'INVALID_PARAMETER', /cpuAccess/);
    expect(m.vidmm.counters.allocationsCreated).toBe(0);
    expect(m.vidmm.segmentUsage(0).every((s) => s.usedBytes === 0)).toBe(true);
    expect(app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['vram'] }).hAllocation).toBeGreaterThan(0);
  });

  it('VM-05 running out of pages is a clear NO_MEMORY and leaves nothing behind', async () => {
    const { m, app, hDevice } = await setup({ systemMemoryBytes: 64 << 10 });
    const free = () => m.adapters[0].core.regionFreePages(m.systemBase);
    const before = free();
    expectError(() => app.createAllocation({ hDevice, sizeBytes: 1 << 20, segments: ['aperture'], resident: false }), 'NO_MEMORY', /no free 4 KiB page left in system memory/);
    expect(free()).toBe(before);
    expect(m.vidmm.counters.allocationsCreated).toBe(0);
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096, segments: ['aperture'], resident: false });
    expect(free()).toBe(before - 1);
    app.destroyAllocation2({ hDevice, hAllocations: [hAllocation] });
    expect(free()).toBe(before);
  });

  it('VM-05 ranges outside the allocation, unlocked addresses and unknown keys fail clearly with nothing changed', async () => {
    const { m, app, hDevice, hHwQueue } = await setup({ ioCoherent: false });
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 1000, segments: ['aperture'], cpuAccess: 'cached' });
    expectError(() => app.invalidateCache({ hDevice, hAllocation, Offset: 900, Length: 200 }), 'INVALID_PARAMETER', /\[900, 1100\) is outside allocation/);
    expectError(() => app.submit({ hHwQueue, commands: work(10), reads: [{ hAllocation, Offset: 1000, Length: 1 }] }), 'INVALID_PARAMETER', /outside allocation/);
    expect(app.progressFenceOf(hHwQueue)).toBeDefined();
    expect(m.trace.find({ name: 'commands written to ring + doorbell' })).toHaveLength(0);
    expectError(() => app.cpuLoad(0x7e00_0000_0000n, 4), 'ACCESS_DENIED', /not inside any Lock2 mapping/);
    const { pData } = app.lock2({ hDevice, hAllocation });
    expectError(() => app.cpuStore(pData + 996n, bytes(8, () => 1)), 'INVALID_PARAMETER', /outside allocation/);
    expectError(() => app.lock2({ hDevice, hAllocation, Bogus: 1 } as never), 'INVALID_PARAMETER', /unknown key "Bogus"/);
    expectError(() => app.unlock2({ hDevice, hAllocation: 12345 }), 'INVALID_HANDLE', /not an allocation handle/);
    app.unlock2({ hDevice, hAllocation });
    expectError(() => app.unlock2({ hDevice, hAllocation }), 'INVALID_DEVICE_STATE', /not locked/);
    app.invalidateCache({ hDevice, hAllocation, Offset: 0, Length: 1000 });
    expect(app.submit({ hHwQueue, commands: work(10), reads: [{ hAllocation, Offset: 0, Length: 1000 }] }).progressValue).toBe(1n);
  });

  it('VM-05 machine options: segments and ioCoherent are validated, unknown keys rejected', async () => {
    await expect(createMachine({ ioCoherent: 'no' as never })).rejects.toThrow(/ioCoherent is "no"; expected true or false/);
    await expect(createMachine({ adapters: [{ segments: [{ sizeBytes: 4096, colour: 'red' } as never] }] })).rejects.toThrow(/unknown key "colour"/);
    await expect(createMachine({ adapters: [{ segments: [{ sizeBytes: 4096, aperture: true, cpuVisible: false }] }] })).rejects.toThrow(/aperture segment is system memory/);
    await expect(createMachine({ adapters: [{ localMemoryBytes: 65536, segments: [{ sizeBytes: 1 << 20 }] }] })).rejects.toThrow(/at most localMemoryBytes/);
    await expect(createMachine({ adapters: [{ cpuHostAperturePages: -1 }] })).rejects.toThrow(/cpuHostAperturePages/);
    const m = await createMachine({ ioCoherent: false, adapters: [{ ...SEGMENTS, cpuHostAperturePages: 8 }] });
    expect(m.vidmm.ioCoherent).toBe(false);
    expect(m.vidmm.segmentUsage(0).map((s) => s.name)).toEqual(['vram', 'bar', 'aperture', 'vram2']);
    expect(m.vidmm.adapters[0].aperture.sizeInPages).toBe(8);
  });

  it('the same seed and program give a byte-identical trace', async () => {
    async function once() {
      const { m, app, hDevice, hHwQueue } = await setup({ ioCoherent: false });
      const umd = new UserModeDriver(app, hDevice, { maintainCoherence: false });
      const vb = umd.createResource({ sizeBytes: 4096, segments: ['aperture'], cpuAccess: 'cached' });
      for (let k = 0; k < 4; k++) {
        umd.map({ hResource: vb, mapType: 'WRITE_DISCARD' });
        umd.write(vb, 0, bytes(64, () => k));
        umd.unmap(vb);
        umd.submit({ hHwQueue, commands: work(1000), reads: [vb] });
      }
      umd.destroyResource(vb);
      m.run();
      return JSON.stringify(m.trace.json());
    }
    const [a, b] = [await once(), await once()];
    expect(a).toBe(b);
    expect(a).toContain('stale GPU read');
  });
});

describe('kernel-mode contexts and monitored fences (WDDM 2.0 context monitoring)', () => {
  it('VM-04 on a kernel-mode context the UMD tracks use with its own monitored fence and waits on it (no polling)', async () => {
    const { m, app, hDevice } = await setup();
    const hContext = app.createContext({ hDevice, engine: 1, name: 'gfxContext' });
    const umd = new UserModeDriver(app, hDevice);
    const staging = umd.createResource({ sizeBytes: 4096, name: 'staging', segments: ['aperture'] });
    const { fenceValue } = umd.submit({ hContext, commands: work(8000), writes: [{ hResource: staging, Offset: 0, data: bytes(16, (i) => 50 + i) }] });
    expect(fenceValue).toBe(1n);
    expect(umd.tracking).toBeDefined();
    expect(umd.map({ hResource: staging, mapType: 'READ', mapFlags: D3D11_MAP_FLAG_DO_NOT_WAIT }).hr).toBe(DXGI_ERROR_WAS_STILL_DRAWING);
    let mappedAt = -1;
    let seen: Uint8Array = new Uint8Array();
    const t = app.createThread('reader', function* (cpu) {
      yield* umd.mapBlocking(cpu, { hResource: staging, mapType: 'READ' });
      mappedAt = cpu.nowNs;
      seen = umd.read(staging, 0, 16);
      umd.unmap(staging);
    });
    m.run();
    expect(t.state).toBe('done');
    expect(mappedAt).toBeGreaterThanOrEqual(8000);
    expect([...seen]).toEqual([...bytes(16, (i) => 50 + i)]);
    const waits = m.trace.find({ kind: 'runtime', name: 'D3DKMTWaitForSynchronizationObjectFromCpu' });
    expect(waits).toHaveLength(1);
    expect(waits[0].args.ObjectHandleArray).toEqual([umd.tracking!]);
    expect(app.readFenceValue(umd.tracking!)).toBe(1n);
  });

  it('VM-03 DISCARD renames on a kernel-mode context too: the GPU reads each version intact', async () => {
    const { m, app, hDevice } = await setup();
    const hContext = app.createContext({ hDevice, engine: 0 });
    const umd = new UserModeDriver(app, hDevice);
    const vb = umd.createResource({ sizeBytes: 4096 });
    for (let k = 0; k < 3; k++) {
      expect(umd.map({ hResource: vb, mapType: 'WRITE_DISCARD' }).hr).toBe(0);
      umd.write(vb, 0, bytes(64, () => k));
      umd.unmap(vb);
      umd.submit({ hContext, commands: work(1000), reads: [{ hResource: vb, Offset: 0, Length: 64 }] });
    }
    m.run();
    expect(m.vidmm.gpuReads.map((r) => r.bytes[0])).toEqual([0, 1, 2]);
    expect(umd.stats.renames).toBe(2);
  });

  it('VM-01 a destroy also waits for the command buffers the device\'s kernel-mode contexts queued before it', async () => {
    const { m, app, hDevice } = await setup();
    const hContext = app.createContext({ hDevice, engine: 0, name: 'ctx' });
    const fence = app.createSynchronizationObject({ hDevice, type: 'MONITORED_FENCE', initialValue: 0n });
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096 });
    app.submitCommand({ hContext, commands: [...work(6000), { fenceWrite: { hSyncObject: fence.hSyncObject, value: 1n } }], reads: [hAllocation] });
    app.submitCommand({ hContext, commands: work(3000) });
    const r = app.destroyAllocation2({ hDevice, hAllocations: [hAllocation], Flags: { SynchronousDestroy: true } });
    expect(r.freed).toBe(false);
    expect(r.wait).toEqual({ op: 'waitEvent', hEvent: r.hEvent });
    expect(m.trace.find({ name: 'destroy deferred' })[0].args.until).toEqual(['ctx: 2 command buffer(s) completed']);
    let resumedAt = -1;
    app.createThread('destroyer', function* (cpu) { yield r.wait!; resumedAt = cpu.nowNs; });
    m.run();
    const info = m.vidmm.info(hAllocation)!;
    expect(info.state).toBe('freed');
    expect(info.freedAtNs!).toBeGreaterThanOrEqual(9000);
    expect(resumedAt).toBeGreaterThanOrEqual(info.freedAtNs!);
    expect(m.vidmm.gpuReads).toHaveLength(1);
    expect(m.vidmm.counters.gpuUseAfterFree).toBe(0);
  });

  it('VM-01 reads / writes on a kernel-mode context need a fenceWrite marker; without one nothing is submitted', async () => {
    const { m, app, hDevice } = await setup();
    const hContext = app.createContext({ hDevice, engine: 0 });
    const { hAllocation } = app.createAllocation({ hDevice, sizeBytes: 4096 });
    expectError(() => app.submitCommand({ hContext, commands: work(10), reads: [hAllocation] }), 'INVALID_PARAMETER', /need a \{ fenceWrite \}/);
    expect(m.trace.find({ name: 'D3DKMTSubmitCommand' })).toHaveLength(0);
    const fence = app.createSynchronizationObject({ hDevice, type: 'MONITORED_FENCE' });
    app.submitCommand({ hContext, commands: [...work(10), { fenceWrite: { hSyncObject: fence.hSyncObject, value: 1n } }], reads: [hAllocation] });
    m.run();
    expect(m.vidmm.gpuReads).toHaveLength(1);
  });
});

