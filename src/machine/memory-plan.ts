// The physical memory map of a machine, and every size check that comes before it.
//
// The host lays the map out (docs/MEMORY.md); the core says how many bytes each
// region needs (adapterRegionBytes, arenaBlockBytes), computed in 64 bits. Before
// any memory is made, each adapter's limits are checked against what can exist:
//
//   1. one hardware queue's ring (limits.ringEntries commands) must fit in the
//      arena (limits.heapArenaBytes) it is taken from when the queue is created;
//   2. one fence's largest waiter heap (limits.waitersPerFence entries) must fit
//      in that arena too;
//   3. the whole map must fit in the core's memory (MAX_MEMORY_BYTES).
//
// After the core's regions come the driver regions: for each adapter whose driver module asks for memory
// of its own (DriverModule.memoryBytes: a C driver's globals, stack and pool), a guard page the driver may
// never write, then its region. They follow everything else, so the core's addresses are the same with
// any driver; `mapPages` is the memory without them (what the trace reports as the machine's memory).
//
// A limit that fails gets a WddmError naming it, its value, and the most that
// fits with everything else as it is. For 3 the limit named is the one whose
// bytes weigh most; the most that fits is found by bisection over the core's
// own size function, so it is exact, never an estimate retyped here.

import { WddmError, invalid } from '../base/errors.js';
import type { DriverModule } from '../driver/module.js';
import type { CoreExports, CoreLayout } from '../core/bindings.js';

/** asconfig.json maximumMemory (32768 pages of 64 KiB): the most one machine's memory can be. */
export const MAX_MEMORY_BYTES = 32768 * 65536;
const PAGE = 4096;
const roundPage = (n: number) => Math.ceil(n / PAGE) * PAGE;

/** The sizing inputs of one adapter (validated ranges; src/machine/machine.ts). */
export interface AdapterSizing {
  name: string;
  /** The limits the caller set (the others are defaults): a conflict between two limits names the one set. */
  given: ReadonlySet<string>;
  engines: number;
  localMemoryBytes: number;
  limits: {
    fences: number; waitBlocks: number; waitersPerFence: number; heapArenaBytes: number;
    queues: number; ringEntries: number; gpuVaPagesPerProcess: number; interruptListEntries: number;
  };
  /** Bytes the adapter's driver module asks for with these limits (DriverModule.memoryBytes); absent: none. */
  driverBytes?: (limits: AdapterSizing['limits']) => number;
}
type LimitName = keyof AdapterSizing['limits'];

export interface MemoryPlan {
  systemBase: number;
  doorbellBase: number;
  doorbellBytes: number;
  adapters: { localBase: number; privateBase: number; privateBytes: number; driver?: { base: number; bytes: number } }[];
  /** Whole memory, in 64 KiB WebAssembly pages. */
  pages: number;
  /** The memory map without the driver regions, in 64 KiB pages (what the trace reports). */
  mapPages: number;
}

/** Smallest waiter-heap class (power of two entries) that holds `waitersPerFence`. */
export function heapClassFor(layout: CoreLayout, waitersPerFence: number): number {
  let c = layout.heapMinClass;
  while (2 ** c < waitersPerFence) c++;
  return c;
}

const LIMIT_UNITS: Record<LimitName, string> = {
  fences: 'fences', waitBlocks: 'wait blocks', waitersPerFence: 'waiters per fence', heapArenaBytes: 'bytes of arena',
  queues: 'queues', ringEntries: 'ring entries', gpuVaPagesPerProcess: 'GPU VA pages per process', interruptListEntries: 'interrupt list entries',
};

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/**
 * Checks every adapter's limits and lays the memory map out; throws WddmError
 * (NO_MEMORY) naming the first limit that cannot fit and the most that would.
 */
export function planMemory(probe: CoreExports, layout: CoreLayout, options: {
  systemMemoryBytes: number; processes: number; outCapacityWords: number;
  doorbell: { enabled: boolean; ringEntries: number }; adapters: AdapterSizing[];
}): MemoryPlan {
  const { adapters, processes, outCapacityWords } = options;
  const regionBytes = (a: AdapterSizing, limits = a.limits): number => probe.adapterRegionBytes(limits.fences, processes, limits.waitBlocks,
    limits.heapArenaBytes, limits.gpuVaPagesPerProcess, a.engines, limits.queues, limits.ringEntries, limits.interruptListEntries, outCapacityWords) >>> 0;
  const fail = (index: number, limit: LimitName, why: string, most: number) => {
    const parameter = `adapters[${index}].limits.${limit}`;
    const value = adapters[index].limits[limit];
    const expected = most >= 1 ? `at most ${most} ${LIMIT_UNITS[limit]} (${why})` : `a smaller machine: ${why}, even with ${limit} 1`;
    return new WddmError('NO_MEMORY', `${parameter} is ${value}: ${why}; ${most >= 1 ? `at most ${most} fit with the other options as they are` : 'it does not fit even at 1'}`, { parameter, value, expected });
  };

  // 1 and 2: what must fit in the arena.
  const largestBlock = (bytes: number): number => { // the largest arena block that is at most `bytes`
    let block = 0;
    for (let c = layout.heapMinClass; c <= layout.arenaMaxClass; c++) {
      const b = layout.arenaUnitBytes * 2 ** c;
      if (b <= bytes) block = b;
    }
    return block;
  };
  const tooSmallArena = (index: number, what: string, block: number) => {
    const parameter = `adapters[${index}].limits.heapArenaBytes`;
    const value = adapters[index].limits.heapArenaBytes;
    return new WddmError('NO_MEMORY', `${parameter} is ${value}: ${what} takes a ${block}-byte block of the arena; at least ${block} bytes are needed`,
      { parameter, value, expected: `at least ${block} bytes (${what})` });
  };
  adapters.forEach((a, index) => {
    const arena = a.limits.heapArenaBytes;
    const ring = probe.arenaBlockBytes(a.limits.ringEntries, layout.commandBytes) >>> 0;
    if (ring === 0 || ring > arena) {
      // Blame the limit the caller set: a long ring (ringEntries), or else a small arena.
      if (ring !== 0 && !a.given.has('ringEntries')) throw tooSmallArena(index, `one queue's ring of ${a.limits.ringEntries} commands (limits.ringEntries)`, ring);
      throw fail(index, 'ringEntries', `one queue's ring of ${a.limits.ringEntries} commands takes a ${ring ? `${ring}-byte` : 'larger than any'} block of the arena, and limits.heapArenaBytes is ${arena} (raise it for longer rings)`,
        Math.floor(largestBlock(arena) / layout.commandBytes));
    }
    const heap = layout.arenaUnitBytes * 2 ** heapClassFor(layout, a.limits.waitersPerFence);
    if (heap > arena) {
      if (!a.given.has('waitersPerFence')) throw tooSmallArena(index, `one fence's waiter heap of ${a.limits.waitersPerFence} waiters (limits.waitersPerFence)`, heap);
      throw fail(index, 'waitersPerFence', `one fence's waiter heap of ${a.limits.waitersPerFence} waiters takes a ${heap}-byte block of the arena, and limits.heapArenaBytes is ${arena} (raise it for more waiters per fence)`,
        Math.floor(largestBlock(arena) / layout.heapEntryBytes));
    }
  });

  // 3: the whole map.
  const fixedBytes = layout.staticReservedBytes + roundPage(options.systemMemoryBytes)
    + (options.doorbell.enabled ? roundPage(probe.doorbellRegionBytes(adapters.length, options.doorbell.ringEntries)) : 0);
  const driverRegion = (a: AdapterSizing, limits = a.limits): number => (a.driverBytes ? PAGE + roundPage(a.driverBytes(limits)) : 0);
  const totalWith = (index: number, limits: AdapterSizing['limits']): number => fixedBytes + adapters.reduce((sum, a, i) =>
    sum + roundPage(a.localMemoryBytes) + regionBytes(a, i === index ? limits : a.limits) + driverRegion(a, i === index ? limits : a.limits), 0);
  const total = totalWith(-1, adapters[0].limits);
  if (Math.ceil(total / 65536) * 65536 > MAX_MEMORY_BYTES) {
    // The limit to name: of those whose lowering alone makes the machine fit, the one whose bytes weigh most.
    const fitsWith = (index: number, limits: AdapterSizing['limits']) => Math.ceil(totalWith(index, limits) / 65536) * 65536 <= MAX_MEMORY_BYTES;
    let worst: { index: number; limit: LimitName; saved: number } | undefined;
    adapters.forEach((a, index) => {
      for (const limit of Object.keys(a.limits) as LimitName[]) {
        const saved = regionBytes(a) + driverRegion(a) - regionBytes(a, { ...a.limits, [limit]: 1 }) - driverRegion(a, { ...a.limits, [limit]: 1 });
        if (saved > 0 && (!worst || saved > worst.saved) && fitsWith(index, { ...a.limits, [limit]: 1 })) worst = { index, limit, saved };
      }
    });
    if (!worst) {
      const largest = adapters.reduce((best, a, i) => (a.localMemoryBytes > best.bytes ? { parameter: `adapters[${i}].localMemoryBytes`, bytes: a.localMemoryBytes } : best),
        { parameter: 'systemMemoryBytes', bytes: options.systemMemoryBytes });
      throw new WddmError('NO_MEMORY', `the machine needs ${mib(total)} of memory; the core is built for at most ${mib(MAX_MEMORY_BYTES)} (lower systemMemoryBytes or localMemoryBytes)`,
        { parameter: largest.parameter, value: largest.bytes, expected: `a machine of at most ${mib(MAX_MEMORY_BYTES)} in all` });
    }
    const { index, limit } = worst;
    const a = adapters[index];
    let low = 1, high = a.limits[limit]; // fits with low, not with high
    while (high - low > 1) { const mid = Math.floor((low + high) / 2); if (fitsWith(index, { ...a.limits, [limit]: mid })) low = mid; else high = mid; }
    throw fail(index, limit, `the machine would need ${mib(total)} of memory (adapter "${a.name}" ${mib(regionBytes(a))} of it), and the core is built for at most ${mib(MAX_MEMORY_BYTES)}`, low);
  }

  let at = layout.staticReservedBytes;
  const systemBase = at;
  at += roundPage(options.systemMemoryBytes);
  const doorbellBase = options.doorbell.enabled ? at : 0;
  const doorbellBytes = options.doorbell.enabled ? roundPage(probe.doorbellRegionBytes(adapters.length, options.doorbell.ringEntries)) : 0;
  at += doorbellBytes;
  const planned = adapters.map((a) => {
    const localBase = a.localMemoryBytes > 0 ? at : 0;
    at += roundPage(a.localMemoryBytes);
    const privateBytes = regionBytes(a);
    const privateBase = at;
    at += privateBytes;
    return { localBase, privateBase, privateBytes } as MemoryPlan['adapters'][number];
  });
  const mapPages = Math.ceil(at / 65536);
  adapters.forEach((a, index) => {
    if (!a.driverBytes) return;
    at += PAGE; // the guard page: never the driver's to write
    const bytes = roundPage(a.driverBytes(a.limits));
    planned[index].driver = { base: at, bytes };
    at += bytes;
  });
  return { systemBase, doorbellBase, doorbellBytes, adapters: planned, pages: Math.ceil(at / 65536), mapPages };
}

/**
 * The bytes an adapter's driver module asks for (DriverModule.memoryBytes), as a function of the limits the memory
 * plan tries; undefined when it asks for none. What it returns is checked: a whole number of bytes, at most 1 GiB.
 */
export function driverMemoryBytes(module: DriverModule, engines: number, where: string): ((limits: AdapterSizing['limits']) => number) | undefined {
  const ask = module.memoryBytes;
  if (typeof ask !== 'function') return undefined;
  return (limits) => {
    const bytes = ask.call(module, { engines, limits: { fences: limits.fences, queues: limits.queues, ringEntries: limits.ringEntries } });
    if (!Number.isInteger(bytes) || bytes < 0 || bytes > 2 ** 30) throw invalid(`${where}.memoryBytes(sizing)`, bytes, 'a whole number of bytes from 0 to 2^30');
    return bytes;
  };
}
