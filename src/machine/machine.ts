// createMachine: one simulated machine on one shared WebAssembly.Memory.
//
// The host lays the physical memory map out (sizes from the options and from
// the core's own adapterRegionBytes), formats each region through the core,
// checks every region header against the core's exported magic/version, and
// instantiates the core once per adapter. Everything after that is driven by
// one virtual-time scheduler and recorded in one trace.
//
//   0x00000  core static data (checked: staticDataEnd < STATIC_RESERVED_BYTES)
//   0x10000  system memory region          systemMemoryBytes
//            adapter 0 local memory region  adapters[0].localMemoryBytes
//            adapter 0 private region       adapterRegionBytes(adapters[0].limits…)
//            adapter 1 local memory region  …
//
// docs/MEMORY.md draws the records inside each region.

import { injectFault, type FaultInjection, type FaultReport } from './faults.js';
import { compileCore, compileCoreSync, gpuCoreView, instantiateCore, osCoreView, readLayout, u64, type CoreExports, type CoreLayout, type WasmMemory, type WasmModule } from '../core/bindings.js';
import { checkDriver, type PluggableDriver } from '../driver/module.js';
import { loadDriverModule } from '../driver/load.js';
import type { ReferenceDriverOptions } from '../driver/reference.js';
import type { UserModeDriverInterface } from '../ddi/ddi.js';
import { DriverPort } from '../port/driver-port.js';
import { WddmError, invalid, check } from '../base/errors.js';
import { GpuHardware } from '../gpu/hardware.js';
import { Kernel, type KernelOptions, type LogKind } from '../os/kernel.js';
import type { AdapterView, BugCheckReport, Counters, CrossAdapterCounters, FenceInspection, LegacyCounters, LogCounters, LogHistory, VidMmCounters, VidMmView } from '../os/inspect.js';
import { RuntimeProcess, type UserModeSystem } from '../user/runtime.js';
import { takesColumns } from '../user/ring-write.js';
import { Random, RANDOM_STREAM } from '../base/rng.js';
import { Scheduler, DEFAULT_EVENTS_PER_RUN } from '../base/scheduler.js';
import { Trace, DEFAULT_TRACE_CAPACITY } from '../base/trace.js';
import * as v from '../base/validate.js';
import { deepFreeze } from '../base/freeze.js';
import { DEFAULT_GPU_VA_BASE, VIDSCHCAPS } from '../base/wddm.js';
import { DoorbellService } from '../gpu/doorbell.js';
import { planMemory, heapClassFor, driverMemoryBytes } from './memory-plan.js';
import { OUT_CAPACITY_WORDS, PAGE, parseMachineOptions, type AdapterOptions, type MachineOptions } from './options.js';

export type {
  NativeFenceCapsOptions, AdapterCapsOptions, AdapterLimits, AdapterOptions, MachineOptions, OsFeatureOptions, MachineLimits, DoorbellOptions, ScheduleOptions,
  MachineObserver, BuiltAdapter, ScheduleTime,
} from './options.js';
export { MAX_PROCESSES, DEFAULT_JITTER } from './options.js';
export { loadDriverModule } from '../driver/load.js';
export type { LoadDriverModuleOptions } from '../driver/load.js';
export type { DriverModule } from '../driver/module.js';
import { stuckReport, stuckText, type StuckReport } from './liveness.js';
import { LostWakeupWatch, lostWakeupText, type LostWakeup } from './lost-wakeups.js';

export type { FenceInspection } from '../os/inspect.js';

export interface AdapterSummary {
  name: string; state: string; gpuSignals: number; cmpChecks: number; interruptsRaised: number;
  liveFences: number; fencePages: number; blockedQueues: number; bugCheck?: string;
}
export interface MachineSummary {
  seed: number;
  timeNs: number;
  adapters: AdapterSummary[];
  os: Counters;
  /** Monitored fences and kernel-mode contexts: the legacy model's interrupts, scans and round trips. */
  legacy: LegacyCounters;
  logs: LogCounters;
  /** Allocation usage tracking (src/os/vidmm/). */
  vidmm: VidMmCounters;
  pendingWaiters: number;
  bugChecks: BugCheckReport[];
  /** The trace ring: events recorded, kept, and the oldest dropped (limits.traceEvents). */
  trace: { recorded: number; kept: number; dropped: number; capacity: number };
}

export class Adapter {
  constructor(/** The OS's view of the adapter (read-only). */ readonly os: AdapterView, readonly hardware: GpuHardware, readonly driver: PluggableDriver,
              /** The raw core instance of this adapter: every protocol step as a plain export (docs/ABI.md). */
              readonly core: CoreExports,
              readonly privateBase: number, readonly localBase: number) {}
  get name(): string { return this.os.name; }
  get index(): number { return this.os.index; }
  get state(): string { return this.os.state; }
  get nativeFence(): boolean { return this.os.nativeFence; }
}

/** Machine.userModeDriverTakesColumns's answers by adapter index. */
const UMD_FORMS = Symbol('Machine.userModeDriverForms');

export class Machine implements UserModeSystem {
  /** Virtual time; its ties are broken by the seed's tie-break stream (src/base/scheduler.ts). */
  readonly scheduler: Scheduler;
  readonly trace: Trace;
  /** The seed's generator for what the model draws beyond ties and timing (Random.stream gives the others). */
  readonly random: Random;
  /** The seed's timing stream: the jitter of command times and latencies (Timing.jitter). */
  readonly timingRandom: Random;
  /** The OS (src/os/kernel.ts): user mode's entry points and the machine's; `os.inspect` is what tools read. */
  readonly os: Kernel;
  /** The only holder of the adapters' kernel-mode drivers: every DDI and callback goes through it (src/port/). */
  readonly port: DriverPort;
  readonly adapters: Adapter[] = [];
  readonly processes: RuntimeProcess[] = [];
  readonly layout: CoreLayout;
  readonly systemBase: number;
  /** Physical base of the cross-adapter doorbell area (XA-07); 0 when the doorbell is off. */
  doorbellBase = 0;
  private readonly lostWakeupWatch: LostWakeupWatch;

  constructor(readonly seed: number, readonly memory: WasmMemory, readonly module: WasmModule,
              layout: CoreLayout, systemBase: number, os: Omit<KernelOptions, 'memory' | 'systemBase'>, traceOn: boolean,
              bounds: { eventsPerRun: number; traceEvents: number } = { eventsPerRun: DEFAULT_EVENTS_PER_RUN, traceEvents: DEFAULT_TRACE_CAPACITY }) {
    this.scheduler = new Scheduler(Random.stream(seed, RANDOM_STREAM.tieBreak));
    this.trace = new Trace(() => this.scheduler.nowNs, bounds.traceEvents);
    this.trace.enabled = traceOn;
    this.scheduler.maxEventsPerRun = bounds.eventsPerRun;
    this.random = new Random(seed);
    this.timingRandom = Random.stream(seed, RANDOM_STREAM.timing);
    this.layout = layout;
    this.systemBase = systemBase;
    this.port = new DriverPort(this.trace, () => this.scheduler.nowNs);
    this.os = new Kernel({ ...os, memory, systemBase }, this.scheduler, this.trace, layout, this.port);
    this.lostWakeupWatch = new LostWakeupWatch(this.os.inspect, this.scheduler);
  }

  /** Video memory manager, read-only: allocations, segments, GPU reads, coherence faults (src/os/vidmm/; its calls are RuntimeProcess's). */
  get vidmm(): VidMmView { return this.os.inspect.vidmm; }

  get nowNs(): number { return this.scheduler.nowNs; }

  /** UserModeSystem: an adapter's index by name or index. */
  adapterIndex(adapter: string | number): number { return this.adapter(adapter).index; }

  /** UserModeSystem: the user-mode half of an adapter's driver module (the runtime's way to a driver). */
  userModeDriver(index: number): UserModeDriverInterface { return this.adapter(index).driver.userMode; }

  /** UserModeSystem: whether that half takes the typed form, decided at its first submission (under a symbol: a cache, no state). */
  userModeDriverTakesColumns(index: number): boolean {
    return (this[UMD_FORMS][index] ??= takesColumns(this.adapter(index).driver.userMode));
  }
  private readonly [UMD_FORMS]: boolean[] = [];

  /**
   * Cross-adapter counters (XA-04, XA-07): the OS's (propagations, NotificationOnly calls, doorbell
   * fallbacks, wake latency) with the doorbell records the GPUs posted and took.
   */
  crossAdapterCounters(): CrossAdapterCounters & { doorbellPosted: number; doorbellTaken: number } {
    const doorbell = this.doorbellCounts();
    const c = this.os.inspect.crossAdapterCounters;
    return {
      propagations: c.propagations, notificationOnlyCalls: c.notificationOnlyCalls, doorbellPosted: doorbell.posted, doorbellTaken: doorbell.taken,
      doorbellFallbacks: c.doorbellFallbacks, crossWakes: c.crossWakes, crossWakeTotalNs: c.crossWakeTotalNs, crossWakeMaxNs: c.crossWakeMaxNs,
    };
  }

  private doorbellCounts(): { posted: number; taken: number } {
    let posted = 0, taken = 0;
    for (const a of this.adapters) { posted += a.hardware.doorbell?.posted ?? 0; taken += a.hardware.doorbell?.taken ?? 0; }
    return { posted, taken };
  }

  /** A new process (its own handle table and address spaces); its name is its own on this machine. */
  createProcess(name: string): RuntimeProcess {
    if (typeof name === 'string' && this.processes.some((p) => p.name === name)) throw invalid('name', name, 'a name no other process of this machine has');
    const process = new RuntimeProcess(this, this.os.createProcess(name));
    this.processes.push(process);
    return process;
  }

  adapter(nameOrIndex: string | number): Adapter {
    const found = typeof nameOrIndex === 'number' ? this.adapters[nameOrIndex] : this.adapters.find((a) => a.name === nameOrIndex);
    if (!found) throw invalid('adapter', nameOrIndex, `an adapter index 0..${this.adapters.length - 1} or one of ${this.adapters.map((a) => JSON.stringify(a.name)).join(', ')}`);
    return found;
  }

  /**
   * Runs virtual time until nothing is left to do, or until `untilNs` (a
   * point in virtual time, 0 … MAX_VIRTUAL_TIME_NS; one already passed runs
   * nothing). Stops with a WddmError when the run passes limits.eventsPerRun
   * events (the livelock guard) or virtual time passes MAX_VIRTUAL_TIME_NS.
   * A CPU thread whose body throws anything but a WddmError stops the run:
   * run() throws a CpuThreadError naming the thread, with the original error
   * as `cause` (the machine stays consistent; run() again goes on). When it
   * returns, `stuck()` says what is still blocked.
   */
  run(untilNs?: number): this {
    const until = untilNs === undefined ? Infinity : v.nonNegative(untilNs, 'run(untilNs)');
    this.scheduler.run(until);
    if (this.scheduler.nowNs > v.MAX_VIRTUAL_TIME_NS) throw timeOverflow(this.scheduler.nowNs);
    return this;
  }

  /**
   * What is still blocked — hardware queues and kernel-mode contexts on a
   * wait, CPU waiters, unfinished CPU threads — and every deadlock (a cycle of
   * them that nothing inside the machine can release). Meant for after run();
   * src/machine/liveness.ts explains the rules.
   */
  stuck(): StuckReport { return stuckReport(this.os.inspect, this.processes, this.scheduler); }

  /** NF-10: CPU waiters whose value was reached with nothing on its way to wake them, timed out or still waiting (src/machine/lost-wakeups.ts). */
  lostWakeups(): LostWakeup[] { return this.lostWakeupWatch.list(); }

  /**
   * A kernel debugger's read-only look at one fence through a process's
   * handle: values, CPU waiter count, GPU work in flight, handles. Not part of
   * what user mode can do (RuntimeProcess has no such call, NF-04).
   */
  inspectFence(process: RuntimeProcess, hSyncObject: number): FenceInspection {
    if (!(process instanceof RuntimeProcess) || process.machine !== this) throw invalid('process', process, 'a process of this machine');
    return this.os.inspect.inspectFence(process.kernel, hSyncObject);
  }

  /** What the OS's native fence log reader keeps: entries read, queued events, overruns, contract violations (src/os/logs.ts). */
  get nativeFenceLogs(): LogHistory { return this.os.inspect.logs; }

  /**
   * LOG-03: the OS destroys one of a hardware queue's log buffers and makes a
   * new one (reading the old one first); the driver gets SetNativeFenceLogBuffer
   * with the new location and the GPU writes there from its next entry on.
   */
  recreateNativeFenceLogBuffer(process: RuntimeProcess, hHwQueue: number, log: LogKind): void {
    if (!(process instanceof RuntimeProcess) || process.machine !== this) throw invalid('process', process, 'a process of this machine');
    this.os.inspect.hwQueueOf(process.kernel, hHwQueue);
    this.os.recreateNativeFenceLogBuffer(process.kernel, hHwQueue, v.oneOf(log, 'log', ['waits', 'signals'] as const));
  }

  /** NF-20: device removal (GPU reset) on one adapter. */
  removeDevice(adapter: string | number, reason = 'TDR'): void {
    this.os.removeDevice(this.adapter(adapter).index, reason);
  }

  /** NF-20: the adapter removed for good (surprise removal): no reset; its fences to UINT64_MAX, its waiters ended, it stays stopped. */
  removeAdapter(adapter: string | number, reason = 'adapter removed'): void { this.os.removeAdapter(this.adapter(adapter).index, reason); }

  /**
   * Fault injection (INT-02 collapsed interrupts, LOG-05 forced log overrun):
   * `{ collapseInterrupts: { adapter, windowNs } }` or `{ forceLogOverrun: { adapter, queue? } }`.
   * See src/machine/faults.ts.
   */
  injectFault(fault: FaultInjection): FaultReport { return injectFault(this, fault); }

  summary(): MachineSummary {
    const L = this.layout.offsets;
    const view = new DataView(this.memory.buffer);
    return {
      seed: this.seed,
      timeNs: this.scheduler.nowNs,
      adapters: this.adapters.map((a) => ({
        name: a.name,
        state: a.state,
        gpuSignals: Number(view.getBigUint64(a.privateBase + L.gpuSignals, true)),
        cmpChecks: Number(view.getBigUint64(a.privateBase + L.cmpChecks, true)),
        interruptsRaised: Number(view.getBigUint64(a.privateBase + L.interrupts, true)),
        liveFences: view.getUint32(a.privateBase + L.fenceLive, true),
        fencePages: view.getUint32(a.privateBase + L.pageLive, true),
        blockedQueues: a.hardware.blockedQueues(),
        bugCheck: a.os.bugCheck?.message,
      })),
      os: { ...this.os.inspect.counters },
      legacy: this.os.inspect.legacyCounters,
      logs: { ...this.os.inspect.logCounters },
      vidmm: { ...this.vidmm.counters },
      pendingWaiters: this.os.inspect.pendingWaiters,
      bugChecks: [...this.os.inspect.bugChecks],
      trace: { recorded: this.trace.recorded, kept: this.trace.events.length, dropped: this.trace.dropped, capacity: this.trace.capacity },
    };
  }

  summaryText(): string {
    const s = this.summary();
    const lines = [`summary (seed ${s.seed}, virtual time ${(s.timeNs / 1000).toFixed(3)} us)`];
    for (const a of s.adapters) {
      lines.push(`  ${a.name}: state=${a.state} gpuSignals=${a.gpuSignals} cmpChecks=${a.cmpChecks} interruptsRaised=${a.interruptsRaised} liveFences=${a.liveFences} fencePages=${a.fencePages} blockedQueues=${a.blockedQueues}${a.bugCheck ? ` bugCheck="${a.bugCheck}"` : ''}`);
    }
    const o = s.os;
    lines.push(`  signals: gpu=${s.adapters.reduce((n, a) => n + a.gpuSignals, 0)} cpu=${o.cpuSignals}`);
    lines.push(`  interrupts: raised=${s.adapters.reduce((n, a) => n + a.interruptsRaised, 0)} handled=${o.interruptsHandled} spurious=${o.spuriousInterrupts} propagation=${o.propagationInterrupts} fullScans=${o.fullScans} fencesScanned=${o.fencesScanned}`);
    lines.push(`  waits: waitersAdded=${o.waitersAdded} waitersWoken=${o.waitersWoken} satisfiedAtOnce=${o.waitsSatisfiedAtOnce} timedOut=${o.waitsTimedOut} stillWaiting=${s.pendingWaiters}`);
    lines.push(`  DDIs: UpdateMonitoredValues=${o.monitoredValueUpdates} (fences ${o.monitoredValuesWritten}) UpdateCurrentValuesFromCpu=${o.currentValueUpdates}`);
    const l = s.legacy;
    if (l.commandBuffers || l.scans || l.monitoredFenceInterrupts) {
      lines.push(`  monitored fences + kernel-mode contexts: commandBuffers=${l.commandBuffers} dmaCompletedInterrupts=${l.dmaCompletedInterrupts} monitoredFenceInterrupts=${l.monitoredFenceInterrupts} scans=${l.scans} (legacy ${l.legacyScans}) fencesExamined=${l.fencesExamined} gpuWaitsHeld=${l.gpuWaitsHeld} releasedByCpu=${l.heldWaitsReleased} softwareSignals=${l.softwareSignals}`);
    }
    const g = s.logs;
    if (g.buffersCreated) lines.push(`  fence logs: entriesRead=${g.entriesRead} UpdateNativeFenceLogs=${g.updateNativeFenceLogsCalls} overruns=${g.overruns} (lost ${g.entriesLost}) fallbackScans=${g.fallbackScans} contractViolations=${g.contractViolations} recreated=${g.buffersRecreated}`);
    const dropped = g.queuedDropped + g.entriesDropped + g.interruptsDropped + g.overrunsDropped + g.faultsDropped;
    if (dropped) lines.push(`  timeline records dropped (only the last ${this.os.inspect.logs.historyRecords} of each kind are kept: limits.timelineRecords): queued=${g.queuedDropped} entries=${g.entriesDropped} interrupts=${g.interruptsDropped} overruns=${g.overrunsDropped} faults=${g.faultsDropped}`);
    const m = s.vidmm;
    if (m.allocationsCreated) {
      lines.push(`  allocations: created=${m.allocationsCreated} freed=${m.allocationsFreed} destroysDeferred=${m.destroysDeferred} destroysAtOnce=${m.destroysAtOnce} locks=${m.locks} relocations=${m.relocations} invalidations=${m.cacheInvalidations} staleGpuReads=${m.staleGpuReads} staleCpuReads=${m.staleCpuReads} lostWrites=${m.lostWrites} gpuUseAfterFree=${m.gpuUseAfterFree}`);
      if (m.gpuReadsDropped || m.coherenceFaultsDropped || m.freedAllocationsForgotten) {
        lines.push(`  allocation records let go (only the newest ${this.vidmm.records} of each kind are kept: limits.allocationRecords): gpuReads=${m.gpuReadsDropped} coherenceFaults=${m.coherenceFaultsDropped} freedAllocations=${m.freedAllocationsForgotten}`);
      }
    }
    const cross = this.os.inspect.crossAdapterSummaryLine(this.doorbellCounts());
    if (cross) lines.push(cross);
    if (o.gpuRewinds || o.deferredCloses || o.orphanedWaits) {
      lines.push(`  fence lifetime: gpuRewinds=${o.gpuRewinds} deferredCloses=${o.deferredCloses} orphanedWaits=${o.orphanedWaits}`);
    }
    for (const b of s.bugChecks) lines.push(`  BUG CHECK on ${b.adapter}: ${b.code}: ${b.message}`);
    if (s.trace.dropped) {
      lines.push(`  trace: ${s.trace.recorded} events recorded; the oldest ${s.trace.dropped} were dropped (memory keeps the last ${s.trace.capacity}: limits.traceEvents; \`wddm-fence run --trace-events\` keeps every one)`);
    }
    const lost = this.lostWakeups();
    if (lost.length) lines.push(`  LOST WAKE-UPS (NF-10): ${lost.length}`, ...lost.map((l) => `    ${lostWakeupText(l)}`));
    lines.push(...stuckText(this.stuck()));
    return lines.join('\n') + '\n';
  }
}

/** Virtual time went past what it holds exactly (MAX_VIRTUAL_TIME_NS). */
export function timeOverflow(nowNs: number): WddmError {
  return new WddmError('INTEGER_OVERFLOW', `virtual time reached ${nowNs} ns, past ${v.MAX_VIRTUAL_TIME_NS} ns (2^53 − 1), the largest time the model holds exactly; expected durations, timeouts and sleeps that add up to less`,
    { parameter: 'virtual time', value: nowNs, expected: `at most ${v.MAX_VIRTUAL_TIME_NS} ns` });
}

/**
 * Builds a machine. Async because browsers only compile large modules asynchronously, and
 * because an adapter's `driver.module` may be the path of a module file, loaded here
 * (loadDriverModule, relative to the working directory) before anything else is built.
 */
export async function createMachine(options: MachineOptions = {}): Promise<Machine> {
  return buildMachine(await withDriverModulesLoaded(options), await compileCore());
}

/** The options with each adapters[i].driver.module given as a path or URL replaced by the module it names. */
async function withDriverModulesLoaded(options: MachineOptions): Promise<MachineOptions> {
  const adapters = (options as { adapters?: unknown } | null)?.adapters;
  if (!Array.isArray(adapters)) return options;
  const named = (a: unknown) => {
    const module = (a as { driver?: { module?: unknown } } | null)?.driver?.module;
    return typeof module === 'string' || module instanceof URL ? module : undefined;
  };
  if (!adapters.some((a) => named(a) !== undefined)) return options;
  const loaded: unknown[] = [];
  for (const [i, a] of adapters.entries()) {
    const path = named(a);
    if (path === undefined) { loaded.push(a); continue; }
    let module;
    try { module = await loadDriverModule(path); } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new WddmError('INVALID_PARAMETER', `adapters[${i}].driver.module: ${message}`, { parameter: `adapters[${i}].driver.module`, value: String(path), expected: 'an ES module (.mjs or .js) exporting createDriver(context) (docs/DRIVERS.md)' });
    }
    const adapter = a as AdapterOptions;
    loaded.push({ ...adapter, driver: { ...adapter.driver, module } });
  }
  return { ...options, adapters: loaded as AdapterOptions[] };
}

/** The same, synchronously (Node, workers). */
export function createMachineSync(options: MachineOptions = {}): Machine {
  return buildMachine(options, compileCoreSync());
}

function buildMachine(options: MachineOptions, module: WasmModule): Machine {
  const { seed, nativeFence, rereadCurrentValue, adapters, systemMemoryBytes, processes, bounds, timing, traceOn, timelineRecords, allocationRecords, ioCoherent, doorbell, granularity, osGranularity, time, observers } = parseMachineOptions(options);

  // A probe instance reads the layout and region sizes the core wants.
  const probeMemory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
  const probe = instantiateCore(module, probeMemory);
  const layout = readLayout(probe);
  if (probe.staticDataEnd() > layout.staticReservedBytes) {
    throw new Error(`core static data ends at ${probe.staticDataEnd()}, past the ${layout.staticReservedBytes} bytes reserved for it`);
  }
  const roundPage = (n: number) => Math.ceil(n / PAGE) * PAGE;
  const { systemBase, doorbellBase, doorbellBytes, adapters: plan, pages, mapPages } = planMemory(probe, layout, {
    systemMemoryBytes, processes, outCapacityWords: OUT_CAPACITY_WORDS, doorbell,
    adapters: adapters.map((a, index) => ({ ...a, driverBytes: driverMemoryBytes(a.driver.module, a.engines, `adapters[${index}].driver.module`) })),
  });
  let memory: WebAssembly.Memory;
  try {
    memory = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true });
  } catch (error) {
    throw new WddmError('NO_MEMORY', `this process could not reserve the machine's ${(pages * 65536 / 2 ** 20).toFixed(1)} MiB of memory (${(error as Error).message}); lower the limits or the memory options`);
  }
  const machine = new Machine(seed, memory, module, layout, systemBase,
    { nativeFence, maxProcesses: processes, timelineRecords, rereadCurrentValue, ioCoherent, allocationRecords }, traceOn, bounds);
  const { trace } = machine;
  machine.scheduler.timeless = time === 'untimed';
  if (osGranularity === 'step') {
    machine.os.runOperationsInSteps();
    // The OS's lock: while an operation runs its steps, only the GPU's own steps (an engine's,
    // the doorbell scheduler's) and the operation's next step may run; every other event (an
    // interrupt, a CPU thread, a timeout) waits for the lock.
    const os = machine.os;
    machine.scheduler.gate = (event) => !os.lockHeld || (event.owner === 'dxgkrnl' && event.kind === 'os-step')
      || event.kind === 'engine-tick' || event.kind === 'engine-step' || event.kind === 'doorbell';
  }
  for (const observer of observers) observer.machineCreated?.(machine);
  trace.record('machine', 'machine', 'created', {
    seed, nativeFenceFeature: nativeFence, ...(rereadCurrentValue ? {} : { rereadCurrentValue }), memoryBytes: mapPages * 65536, systemMemory: `${systemBase}+${roundPage(systemMemoryBytes)}`,
    commandNs: timing.commandNs, interruptLatencyNs: timing.interruptLatencyNs, jitter: timing.jitter,
  });

  const first = instantiateCore(module, memory);
  check(first.regionFormat(systemBase, roundPage(systemMemoryBytes), layout.regionKindSystem), 'formatting system memory');
  checkRegion(memory, layout, systemBase, layout.regionKindSystem, 'system memory');
  if (doorbell.enabled) {
    check(first.doorbellFormat(doorbellBase, doorbellBytes, adapters.length, doorbell.ringEntries), 'formatting the cross-adapter doorbell');
    trace.record('machine', 'machine', 'cross-adapter doorbell', { area: `${doorbellBase}+${doorbellBytes}`, ringEntries: doorbell.ringEntries, latencyNs: doorbell.latencyNs });
    machine.os.enableDoorbell();
    machine.doorbellBase = doorbellBase;
  }

  adapters.forEach((a, index) => {
    const { localBase, privateBase, privateBytes } = plan[index];
    const core = index === 0 ? first : instantiateCore(module, memory);
    if (localBase) {
      check(core.regionFormat(localBase, roundPage(a.localMemoryBytes), layout.regionKindLocal), `formatting local memory of "${a.name}"`);
      checkRegion(memory, layout, localBase, layout.regionKindLocal, `local memory of "${a.name}"`);
    }
    const hardwareCaps = hardwareCapsOf(a);
    const gpuVaBase = a.caps.nativeFenceCaps.minimumAddress || DEFAULT_GPU_VA_BASE;
    const vaEnd = gpuVaBase + BigInt(processes) * BigInt(a.limits.gpuVaPagesPerProcess) * 4096n;
    if (a.caps.nativeFenceCaps.maximumAddress && vaEnd - 1n > a.caps.nativeFenceCaps.maximumAddress) {
      throw invalid(`adapters[${index}].caps.nativeFenceCaps.maximumAddress`, a.caps.nativeFenceCaps.maximumAddress,
        `at least ${vaEnd - 1n} (GPU VA windows of ${processes} process slots × limits.gpuVaPagesPerProcess pages from ${gpuVaBase})`);
    }
    check(core.adapterFormat(privateBase, privateBytes, index, hardwareCaps, 8 + a.caps.nativeFenceCaps.monitoredValuePadding,
      systemBase, localBase, a.limits.fences, processes, a.limits.waitBlocks, a.limits.heapArenaBytes,
      heapClassFor(layout, a.limits.waitersPerFence), a.limits.gpuVaPagesPerProcess, gpuVaBase, a.engines, a.limits.queues,
      a.limits.ringEntries, a.limits.interruptListEntries, OUT_CAPACITY_WORDS), `formatting private state of "${a.name}"`);
    checkRegion(memory, layout, privateBase, layout.regionKindAdapter, `private state of "${a.name}"`);

    // The simulated GPU and its driver module get the core's GPU view; the OS gets its own view (src/core/bindings.ts).
    const gpuCore = gpuCoreView(core);
    const hardware = new GpuHardware(a.name, gpuCore, layout, a.engines, machine.scheduler, trace, timing, machine.timingRandom);
    hardware.memory = memory;
    hardware.granularity = granularity;
    if (doorbell.enabled) {
      // Cross-adapter doorbell (XA-07): each adapter's hardware scheduler takes its ring.
      check(core.adapterSetDoorbell(doorbellBase), `attaching the doorbell to "${a.name}"`);
      hardware.doorbell = new DoorbellService(index, hardware, gpuCore, machine.scheduler, trace, doorbell.latencyNs, machine.timingRandom, timing.jitter);
    }
    const driverOptions = referenceDriverOptions(a, hardwareCaps);
    // The adapter's driver module (default: the reference driver) builds its driver over the GPU it owns (docs/DRIVERS.md).
    const driverWhere = `adapters[${index}].driver.module`;
    let made: unknown;
    try {
      const limits = { fences: a.limits.fences, queues: a.limits.queues, ringEntries: a.limits.ringEntries }, driverMemory = plan[index].driver;
      made = a.driver.module.createDriver({ adapterIndex: index, adapterName: a.name, hardware, core: gpuCore, options: driverOptions, limits, ...(driverMemory ? { memory: driverMemory } : {}) });
    } catch (error) {
      if (error instanceof WddmError) throw error;
      throw new WddmError('INVALID_PARAMETER', `${driverWhere}.createDriver(context) threw while building the driver of "${a.name}": ${error instanceof Error ? error.message : String(error)}`,
        { parameter: driverWhere, value: error });
    }
    const driver = checkDriver(made, driverWhere);
    for (const observer of observers) observer.adapterBuilt?.({ index, name: a.name, hardware, core: gpuCore, driver, hardwareCaps, hardwareNativeFenceCaps: driverOptions.nativeFenceCaps });
    trace.record('machine', a.name, 'adapter regions', { localMemory: localBase ? `${localBase}+${roundPage(a.localMemoryBytes)}` : 'none', privateState: `${privateBase}+${privateBytes}`, engines: a.engines, integrated: a.integrated });
    machine.os.startAdapter({
      index, name: a.name, core: osCoreView(core), memory, integrated: a.integrated, engines: a.engines,
      localBase, segments: a.segments, cpuHostAperturePages: a.cpuHostAperturePages,
    }, driver);
    machine.adapters.push(new Adapter(machine.os.inspect.adapters[index], hardware, driver, core, privateBase, localBase));
  });
  const services = machine.adapters.map((a) => a.hardware.doorbell).filter((d): d is DoorbellService => !!d);
  for (const service of services) service.peers = services;
  return machine;
}

type ParsedAdapter = ReturnType<typeof parseMachineOptions>['adapters'][number];

/** The VIDSCHCAPS bits adapter `a`'s caps ask for. */
function hardwareCapsOf(a: ParsedAdapter): number {
  let hardwareCaps = 0;
  if (a.caps.nativeGpuFence) hardwareCaps |= VIDSCHCAPS.NativeGpuFence;
  if (a.caps.optimizedNativeFenceSignaledInterrupt) hardwareCaps |= VIDSCHCAPS.OptimizedNativeFenceSignaledInterrupt;
  if (a.caps.no64BitAtomics) hardwareCaps |= VIDSCHCAPS.No64BitAtomics;
  return hardwareCaps;
}

/** What adapter `a`'s options tell its driver module (DriverContext.options): deeply frozen, constant for the machine's life. */
function referenceDriverOptions(a: ParsedAdapter, hardwareCaps: number): ReferenceDriverOptions {
  return deepFreeze({
    hardwareCaps,
    nativeFenceCaps: {
      MonitoredValuePadding: a.caps.nativeFenceCaps.monitoredValuePadding,
      MapToGpuSystemProcess: a.caps.nativeFenceCaps.mapToGpuSystemProcess,
      MinimumAddress: a.caps.nativeFenceCaps.minimumAddress,
      MaximumAddress: a.caps.nativeFenceCaps.maximumAddress,
    },
    interruptPayload: a.interrupts.payload,
    evaluateLegacyMonitoredFences: a.interrupts.evaluateLegacyMonitoredFences,
    queryFeatureBeforeAdvertising: a.driver.queryFeatureBeforeAdvertising,
    monitoredValueBarrier: a.driver.monitoredValueBarrier,
    ringEntries: a.limits.ringEntries,
    enginesWriteMonitoredFences: a.caps.monitoredFenceGpuWrite,
  });
}

function checkRegion(memory: WasmMemory, layout: CoreLayout, base: number, kind: number, what: string): void {
  const view = new DataView(memory.buffer);
  const magic = view.getUint32(base + layout.offsets.regionMagic, true);
  const version = view.getUint32(base + layout.offsets.regionVersion, true);
  const foundKind = view.getUint32(base + layout.offsets.regionKind, true);
  if (magic !== layout.regionMagic || version !== layout.layoutVersion || foundKind !== kind) {
    throw new Error(`${what} at ${base}: header magic 0x${magic.toString(16)} version ${version} kind ${foundKind}; expected magic 0x${layout.regionMagic.toString(16)} version ${layout.layoutVersion} kind ${kind}`);
  }
}

export { u64 };
