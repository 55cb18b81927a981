// A user-mode driver layer for D3D11-style Map/Unmap on WDDM 2.0 (VM-02,
// VM-03, VM-04): with no allocation list, the UMD itself tracks which queued
// work uses each allocation and implements renaming.
//
//   resource (what the app maps)          kernel allocations (backing instances)
//   ┌──────────────────────────┐          ┌────────────┐ ┌────────────┐ ┌────────────┐
//   │ hResource, current ──────┼────────▶ │ instance 1 │ │ instance 2 │ │ instance 3 │ …  (the pool)
//   └──────────────────────────┘          │ uses: queue progress fence → last value │
//                                          └────────────┘ └────────────┘ └────────────┘
//
//   WRITE_NO_OVERWRITE  maps the current instance at once, busy or not (VM-02)
//   WRITE_DISCARD       current idle → itself; busy → an idle instance of the pool
//                       (recycled) or a new one (pool grows up to maxInstances):
//                       the CPU never waits (VM-03)
//   on a platform without I/O coherence (cached resources): D3DKMTInvalidateCache at
//   Unmap after a write map and before a READ / READ_WRITE map returns (VM-08), unless
//   maintainCoherence: false
//   READ / WRITE / READ_WRITE  synchronizing: current busy → with D3D11_MAP_FLAG_DO_NOT_WAIT
//                       returns DXGI_ERROR_WAS_STILL_DRAWING; otherwise waits (a CPU wait on
//                       the queues' progress fences: no polling) until it is idle (VM-04)
//
// "Busy" = some submission that referenced the instance has not finished: the
// UMD recorded (fence, value) at submit — a hardware queue's progress fence, or
// on a kernel-mode context its own monitored fence, which it writes at the end
// of each command buffer (context monitoring) — and compares with the fence's
// value read through the process's read-only mapping. Waits are CPU waits on
// those fences: the thread sleeps until the OS wakes it (no polling).
// Each instance is locked once (Lock2, Flags 0) and stays mapped for its life.

import { WddmError, invalid } from '../base/errors.js';
import type { CpuAccess, WaitResult } from '../os/kernel.js';
import type { Cpu, RuntimeProcess, ThreadOp } from './runtime.js';
import * as v from '../base/validate.js';
import { D3D11_MAP, D3D11_MAP_FLAG_DO_NOT_WAIT, DXGI_ERROR_WAS_STILL_DRAWING, S_OK, hex } from '../base/wddm.js';

export type MapType = keyof typeof D3D11_MAP;

export interface MapArgs { hResource: number; mapType: MapType; mapFlags?: number }

export interface MapResult {
  /** S_OK (0) or DXGI_ERROR_WAS_STILL_DRAWING (0x887A000A). */
  hr: number;
  /** CPU address of the mapped bytes (S_OK only). */
  pData?: bigint;
  /** The kernel allocation (backing instance) now behind the resource. */
  hAllocation?: number;
  /** WRITE_DISCARD moved the resource to another instance. */
  renamed?: boolean;
}

interface Instance { id: number; hAllocation: number; pData?: bigint; uses: Map<number, bigint>; currentSince: number }
interface Resource {
  handle: number; name: string; sizeBytes: number; segments?: (number | string)[]; cpuAccess: CpuAccess;
  instances: Instance[]; current: Instance; mapped?: MapType; destroyed: boolean;
}

export interface UmdStats {
  maps: number; noOverwriteMaps: number; discardMaps: number; renames: number; instancesCreated: number;
  instancesRecycled: number; wasStillDrawing: number; synchronizingWaits: number;
}

type Decision = { kind: 'now'; instance: Instance | 'new'; renamed: boolean } | { kind: 'busy'; objects: number[]; values: bigint[] };

export class UserModeDriver {
  readonly stats: UmdStats = { maps: 0, noOverwriteMaps: 0, discardMaps: 0, renames: 0, instancesCreated: 0, instancesRecycled: 0, wasStillDrawing: 0, synchronizingWaits: 0 };
  private readonly resources = new Map<number, Resource>();
  private nextResource = 1;
  private nextInstance = 1;
  private sequence = 0;
  readonly maxInstances: number;
  /** VM-08: on a platform without I/O coherence, invalidate cached resources at Unmap (after CPU writes) and before READ maps (after GPU writes). */
  readonly maintainCoherence: boolean;

  constructor(readonly process: RuntimeProcess, readonly hDevice: number, options: { maxInstances?: number; maintainCoherence?: boolean } = {}) {
    const o = v.options(options, 'UserModeDriver(options)', ['maxInstances', 'maintainCoherence']);
    this.maxInstances = o.maxInstances === undefined ? 16 : v.integer(o.maxInstances, 'maxInstances', 1, 1024);
    this.maintainCoherence = o.maintainCoherence === undefined ? true : v.bool(o.maintainCoherence, 'maintainCoherence');
  }

  private get trace() { return this.process.machine.trace; }

  private resource(hResource: unknown, parameter = 'hResource'): Resource {
    const r = typeof hResource === 'number' ? this.resources.get(hResource) : undefined;
    if (!r) throw invalid(parameter, hResource, `a resource of this user-mode driver (${[...this.resources.keys()].join(', ') || 'none created'})`, 'INVALID_HANDLE');
    return r;
  }

  private newInstance(r: Resource): Instance {
    const { hAllocation } = this.process.createAllocation({
      hDevice: this.hDevice, sizeBytes: r.sizeBytes, cpuAccess: r.cpuAccess, name: `${r.name}#${this.nextInstance}`,
      ...(r.segments ? { segments: r.segments } : {}),
    });
    this.stats.instancesCreated++;
    return { id: this.nextInstance++, hAllocation, uses: new Map(), currentSince: this.sequence++ };
  }

  /** A dynamic resource (e.g. a vertex buffer): its first backing instance is created now. */
  createResource(args: { sizeBytes: number; segments?: (number | string)[]; cpuAccess?: CpuAccess; name?: string }): number {
    const a = v.options(args, 'createResource(args)', ['sizeBytes', 'segments', 'cpuAccess', 'name']);
    const handle = this.nextResource;
    const r: Resource = {
      handle, name: a.name === undefined ? `resource${handle}` : String(a.name), sizeBytes: a.sizeBytes as number,
      segments: a.segments as (number | string)[] | undefined, cpuAccess: (a.cpuAccess ?? 'uncached') as CpuAccess,
      instances: [], current: undefined as unknown as Instance, destroyed: false,
    };
    r.current = this.newInstance(r); // validates everything (VidMm checks the arguments)
    r.instances.push(r.current);
    this.nextResource++;
    this.resources.set(handle, r);
    return handle;
  }

  /** Forgets uses whose submissions finished; true when some are still running. */
  private busy(instance: Instance): boolean {
    for (const [hFence, value] of [...instance.uses]) {
      let done: boolean;
      try { done = this.process.readFenceValue(hFence) >= value; } catch { done = true; /* queue destroyed */ }
      if (done) instance.uses.delete(hFence);
    }
    return instance.uses.size > 0;
  }

  private waitFor(instance: Instance): { kind: 'busy'; objects: number[]; values: bigint[] } {
    const entries = [...instance.uses].sort((x, y) => x[0] - y[0]);
    return { kind: 'busy', objects: entries.map((e) => e[0]), values: entries.map((e) => e[1]) };
  }

  private decide(r: Resource, mapType: MapType): Decision {
    if (mapType === 'WRITE_NO_OVERWRITE') return { kind: 'now', instance: r.current, renamed: false };
    if (!this.busy(r.current)) return { kind: 'now', instance: r.current, renamed: false };
    if (mapType !== 'WRITE_DISCARD') return this.waitFor(r.current);
    const idle = r.instances.find((i) => i !== r.current && !this.busy(i));
    if (idle) return { kind: 'now', instance: idle, renamed: true };
    if (r.instances.length < this.maxInstances) return { kind: 'now', instance: 'new', renamed: true };
    // Pool exhausted: the instance that stopped being current longest ago finishes first.
    const oldest = r.instances.filter((i) => i !== r.current).sort((x, y) => x.currentSince - y.currentSince)[0] ?? r.current;
    return this.waitFor(oldest);
  }

  private validate(args: unknown): { r: Resource; mapType: MapType; doNotWait: boolean } {
    const a = v.options(args, 'map(args)', ['hResource', 'mapType', 'mapFlags']);
    const r = this.resource(a.hResource);
    const mapType = v.oneOf(a.mapType, 'mapType', Object.keys(D3D11_MAP) as MapType[]);
    const flags = a.mapFlags === undefined ? 0 : v.integer(a.mapFlags, 'mapFlags', 0, 0xffff_ffff);
    if (flags & ~D3D11_MAP_FLAG_DO_NOT_WAIT) throw invalid('mapFlags', flags, `0 or D3D11_MAP_FLAG_DO_NOT_WAIT (0x${D3D11_MAP_FLAG_DO_NOT_WAIT.toString(16)})`);
    if (r.mapped) throw new WddmError('INVALID_DEVICE_STATE', `map: resource ${r.handle} "${r.name}" is already mapped (${r.mapped}); unmap it first`, { parameter: 'hResource', value: r.handle, expected: 'a resource that is not mapped' });
    return { r, mapType, doNotWait: (flags & D3D11_MAP_FLAG_DO_NOT_WAIT) !== 0 };
  }

  private commit(r: Resource, mapType: MapType, decision: Extract<Decision, { kind: 'now' }>): MapResult {
    let instance = decision.instance;
    if (instance === 'new') {
      instance = this.newInstance(r);
      r.instances.push(instance);
    } else if (decision.renamed) {
      this.stats.instancesRecycled++;
    }
    if (instance.pData === undefined) instance.pData = this.process.lock2({ hDevice: this.hDevice, hAllocation: instance.hAllocation, Flags: 0 }).pData;
    if (decision.renamed) {
      this.stats.renames++;
      r.current.currentSince = this.sequence++;
      this.trace.record('umd', this.process.name, 'rename', { resource: r.name, from: hex(r.current.hAllocation), to: hex(instance.hAllocation), poolSize: r.instances.length });
      r.current = instance;
    }
    // After GPU writes, the CPU must not read lines it may have fetched before them (VM-08).
    if ((mapType === 'READ' || mapType === 'READ_WRITE') && this.needsInvalidation(r)) this.invalidateCache(r.handle);
    this.stats.maps++;
    if (mapType === 'WRITE_NO_OVERWRITE') this.stats.noOverwriteMaps++;
    if (mapType === 'WRITE_DISCARD') this.stats.discardMaps++;
    r.mapped = mapType;
    this.trace.record('umd', this.process.name, 'Map', { resource: r.name, MapType: `D3D11_MAP_${mapType}`, hAllocation: instance.hAllocation, pData: hex(instance.pData!), renamed: decision.renamed });
    return { hr: S_OK, pData: instance.pData, hAllocation: instance.hAllocation, renamed: decision.renamed };
  }

  private stillDrawing(r: Resource, mapType: MapType): MapResult {
    this.stats.wasStillDrawing++;
    this.trace.record('umd', this.process.name, 'Map', { resource: r.name, MapType: `D3D11_MAP_${mapType}`, DO_NOT_WAIT: true, hr: DXGI_ERROR_WAS_STILL_DRAWING });
    return { hr: DXGI_ERROR_WAS_STILL_DRAWING };
  }

  /**
   * Map that never blocks: S_OK, or DXGI_ERROR_WAS_STILL_DRAWING with
   * D3D11_MAP_FLAG_DO_NOT_WAIT. A synchronizing map of a busy resource
   * without DO_NOT_WAIT would block: use mapBlocking (CPU thread) or mapAsync.
   */
  map(args: MapArgs): MapResult {
    const { r, mapType, doNotWait } = this.validate(args);
    const decision = this.decide(r, mapType);
    if (decision.kind === 'now') return this.commit(r, mapType, decision);
    if (doNotWait) return this.stillDrawing(r, mapType);
    throw new WddmError('INVALID_DEVICE_STATE', `map: resource ${r.handle} "${r.name}" is busy and D3D11_MAP_${mapType} must wait for the GPU; call mapBlocking from a CPU thread, mapAsync, or pass D3D11_MAP_FLAG_DO_NOT_WAIT`,
      { parameter: 'mapType', value: mapType, expected: 'a map that does not wait, or mapBlocking / mapAsync' });
  }

  /** Map from a CPU thread: `const m = yield* umd.mapBlocking(cpu, {...})`. Waits on progress fences (no polling). */
  *mapBlocking(cpu: Cpu, args: MapArgs): Generator<ThreadOp, MapResult, unknown> {
    for (;;) {
      const { r, mapType, doNotWait } = this.validate(args);
      const decision = this.decide(r, mapType);
      if (decision.kind === 'now') return this.commit(r, mapType, decision);
      if (doNotWait) return this.stillDrawing(r, mapType);
      this.stats.synchronizingWaits++;
      this.trace.record('umd', this.process.name, 'Map waits for the GPU', { resource: r.name, MapType: `D3D11_MAP_${mapType}`, objects: decision.objects.map((h) => hex(h)), values: decision.values });
      const result = (yield cpu.wait({ objects: decision.objects, values: decision.values })) as WaitResult;
      if (result.status !== 'SUCCESS') throw new WddmError('DEVICE_REMOVED', `map: waiting for resource "${r.name}" ended with ${result.status}`);
    }
  }

  /** The same as a Promise that settles in virtual time. */
  async mapAsync(args: MapArgs): Promise<MapResult> {
    for (;;) {
      const { r, mapType, doNotWait } = this.validate(args);
      const decision = this.decide(r, mapType);
      if (decision.kind === 'now') return this.commit(r, mapType, decision);
      if (doNotWait) return this.stillDrawing(r, mapType);
      this.stats.synchronizingWaits++;
      const result = await this.process.waitAsync({ objects: decision.objects, values: decision.values }, `map ${r.name}`);
      if (result.status !== 'SUCCESS') throw new WddmError('DEVICE_REMOVED', `map: waiting for resource "${r.name}" ended with ${result.status}`);
    }
  }

  unmap(hResource: number): void {
    const r = this.resource(hResource);
    if (!r.mapped) throw new WddmError('INVALID_DEVICE_STATE', `unmap: resource ${r.handle} "${r.name}" is not mapped`, { parameter: 'hResource', value: r.handle, expected: 'a mapped resource' });
    const wrote = r.mapped !== 'READ';
    r.mapped = undefined;
    this.trace.record('umd', this.process.name, 'Unmap', { resource: r.name });
    // CPU writes must reach memory before the GPU reads them (VM-08).
    if (wrote && this.needsInvalidation(r)) this.invalidateCache(r.handle);
  }

  private needsInvalidation(r: Resource): boolean {
    return this.maintainCoherence && r.cpuAccess === 'cached' && !this.process.machine.os.ioCoherent;
  }

  /** Writes through the current mapping (offset within the resource). */
  write(hResource: number, offset: number, bytes: Uint8Array): void {
    const r = this.mappedResource(hResource);
    this.process.cpuStore(r.current.pData! + BigInt(v.integer(offset, 'offset', 0, r.sizeBytes)), bytes);
  }
  read(hResource: number, offset: number, length: number): Uint8Array {
    const r = this.mappedResource(hResource);
    return this.process.cpuLoad(r.current.pData! + BigInt(v.integer(offset, 'offset', 0, r.sizeBytes)), length);
  }
  private mappedResource(hResource: number): Resource {
    const r = this.resource(hResource);
    if (!r.mapped) throw new WddmError('INVALID_DEVICE_STATE', `resource ${r.handle} "${r.name}" is not mapped`, { parameter: 'hResource', value: r.handle, expected: 'a mapped resource' });
    return r;
  }

  /** D3DKMTInvalidateCache on the instance currently behind the resource. */
  invalidateCache(hResource: number, range: { Offset?: number; Length?: number } = {}): void {
    const r = this.resource(hResource);
    this.process.invalidateCache({ hDevice: this.hDevice, hAllocation: r.current.hAllocation, ...range });
  }

  /**
   * Submits commands that read / write resources: each resource is bound to
   * its current instance now, and the UMD records when that instance's use ends:
   *   { hHwQueue }  a hardware queue: the queue's progress fence value of this submission;
   *   { hContext }  a kernel-mode context (context monitoring, WDDM 2.0): the UMD appends a
   *                 { fenceWrite } of its own monitored fence with the next value, and waits
   *                 on that monitored fence.
   */
  submit(args: { hHwQueue?: number; hContext?: number; commands: unknown[]; reads?: ResourceUse[]; writes?: ResourceUse[] }): { progressValue?: bigint; fenceValue?: bigint } {
    const a = v.options(args, 'submit(args)', ['hHwQueue', 'hContext', 'commands', 'reads', 'writes']);
    if ((a.hHwQueue === undefined) === (a.hContext === undefined)) throw invalid('submit(args)', Object.keys(a), 'exactly one of hHwQueue and hContext');
    const used = new Set<Instance>();
    const translate = (list: unknown, parameter: string) => list === undefined ? undefined : v.array(list, parameter, 0, 256).map((item, i) => {
      const entry = typeof item === 'number' ? { hResource: item } : v.options(item, `${parameter}[${i}]`, ['hResource', 'Offset', 'Length', 'data']);
      const r = this.resource(entry.hResource, `${parameter}[${i}].hResource`);
      used.add(r.current);
      const { hResource: _, ...rest } = entry;
      return { hAllocation: r.current.hAllocation, ...rest };
    });
    const reads = translate(a.reads, 'reads');
    const writes = translate(a.writes, 'writes');
    const accesses = { ...(reads ? { reads } : {}), ...(writes ? { writes } : {}) };
    if (a.hHwQueue !== undefined) {
      const result = this.process.submit({ hHwQueue: a.hHwQueue as number, commands: a.commands as never, ...accesses } as never);
      const hFence = this.process.progressFenceOf(a.hHwQueue as number);
      if (hFence !== undefined && result.progressValue !== undefined) for (const instance of used) instance.uses.set(hFence, result.progressValue);
      return result;
    }
    const commands = v.array(a.commands, 'commands', 1, 4095);
    this.tracking ??= this.process.createSynchronizationObject({ hDevice: this.hDevice, type: 'MONITORED_FENCE', initialValue: 0n, name: 'umd.usage' }).hSyncObject;
    const fenceValue = this.trackingValue + 1n;
    this.process.submitCommand({ hContext: a.hContext as number, commands: [...commands, { fenceWrite: { hSyncObject: this.tracking, value: fenceValue } }] as never, ...accesses } as never);
    this.trackingValue = fenceValue;
    for (const instance of used) instance.uses.set(this.tracking, fenceValue);
    return { fenceValue };
  }

  /** The UMD's monitored fence for kernel-mode context submissions (created at the first one). */
  tracking?: number;
  private trackingValue = 0n;

  /** Destroys every instance: VidMm frees each once the work queued before this call finishes (VM-01). */
  destroyResource(hResource: number): void {
    const r = this.resource(hResource);
    this.resources.delete(r.handle);
    r.destroyed = true;
    this.process.destroyAllocation2({ hDevice: this.hDevice, hAllocations: r.instances.map((i) => i.hAllocation) });
  }

  poolSize(hResource: number): number { return this.resource(hResource).instances.length; }
  currentAllocation(hResource: number): number { return this.resource(hResource).current.hAllocation; }
}

/** A resource in a UMD submission: the handle alone means the whole resource. */
export type ResourceUse = number | { hResource: number; Offset?: number; Length?: number; data?: Uint8Array };
