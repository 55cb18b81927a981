// createMachine's options: their types, defaults and bounds, and the one
// place they are checked (a bad option is a WddmError naming its path, before
// any memory is made). src/machine/machine.ts builds the machine from what
// parseMachineOptions returns.

import type { NativeFenceCaps } from '../ddi/ddi.js';
import { invalid } from '../base/errors.js';
import { DEFAULT_EVENTS_PER_RUN } from '../base/scheduler.js';
import { DEFAULT_TRACE_CAPACITY, MAX_TRACE_CAPACITY } from '../base/trace.js';
import * as v from '../base/validate.js';
import type { GpuHardware, Granularity, Timing } from '../gpu/hardware.js';
import type { GpuCore } from '../core/bindings.js';
import { DEFAULT_ALLOCATION_RECORDS, DEFAULT_HISTORY_RECORDS, parseSegments, type SegmentDescriptor, type SegmentOptions } from '../os/kernel.js';
import { checkDriverModule, referenceDriverModule, type DriverModule, type PluggableDriver } from '../driver/module.js';

export interface NativeFenceCapsOptions {
  /** Bytes of padding after each MonitoredValue (multiple of 8). Default 0: 8-byte packing. */
  monitoredValuePadding?: number;
  mapToGpuSystemProcess?: boolean;
  minimumAddress?: bigint;
  maximumAddress?: bigint;
}
export interface AdapterCapsOptions {
  /** DXGK_VIDSCHCAPS::NativeGpuFence. Default true, false when no64BitAtomics (the two together are refused). */
  nativeGpuFence?: boolean;
  optimizedNativeFenceSignaledInterrupt?: boolean;
  /** DXGK_VIDSCHCAPS::No64BitAtomics: the GPU writes only 32 bits atomically (monitored fences; MF-07). Default false. */
  no64BitAtomics?: boolean;
  /** The engines can write a monitored fence through its GPU VA (fence-write commands). false: software signal packets only. Default true. */
  monitoredFenceGpuWrite?: boolean;
  nativeFenceCaps?: NativeFenceCapsOptions;
}
export interface AdapterLimits {
  fences?: number; waitBlocks?: number; waitersPerFence?: number; heapArenaBytes?: number;
  queues?: number; ringEntries?: number; gpuVaPagesPerProcess?: number; interruptListEntries?: number;
}
export interface AdapterOptions {
  name?: string;
  integrated?: boolean;
  engines?: number;
  localMemoryBytes?: number;
  caps?: AdapterCapsOptions;
  interrupts?: { payload?: 'list' | 'noList'; evaluateLegacyMonitoredFences?: boolean };
  /**
   * The adapter's kernel-mode driver. `module`: a driver module (docs/DRIVERS.md) exporting
   * createDriver(context), or the path or URL of one (createMachine loads it with
   * loadDriverModule, relative to the working directory; createMachineSync cannot); default the
   * built-in reference driver. The two flags configure the reference driver (a module gets them
   * in its context's options).
   */
  driver?: { queryFeatureBeforeAdvertising?: boolean; monitoredValueBarrier?: boolean; module?: DriverModule | string | URL };
  limits?: AdapterLimits;
  /** Memory segments (allocation usage tracking, docs/ALLOCATIONS.md). */
  segments?: SegmentOptions[];
  /** DXGK_CPUHOSTAPERTURE::SizeInPages (default 16). */
  cpuHostAperturePages?: number;
}
/** The OS's switches (createMachine's `os`). */
export interface OsFeatureOptions {
  /** DXGK_FEATURE_NATIVE_FENCE: what IsFeatureEnabled answers a driver (CAP-02). Default true. */
  nativeFence?: boolean;
  /**
   * NF-09's re-read: after DxgkDdiUpdateMonitoredValues returns, the OS reads each fence's CurrentValue
   * again and satisfies the waiters it reached (default true, the documented OS). false: an OS without
   * that re-read, so the driver's own CMP order (NF-11) is all that stands between a GPU signal and a
   * lost wakeup: `wddm-fence check-driver` judges a driver alone this way (docs/DRIVERS.md), and the
   * race explorer's `no-resample` variants show what the re-read guards against (docs/EXPLORER.md).
   */
  rereadCurrentValue?: boolean;
}
export interface MachineOptions {
  seed?: number;
  os?: OsFeatureOptions;
  adapters?: AdapterOptions[];
  systemMemoryBytes?: number;
  limits?: MachineLimits;
  timing?: Partial<Timing>;
  trace?: boolean;
  /** The platform keeps CPU caches coherent with GPU accesses (x86/x64: true; some ARM: false). Default true. */
  ioCoherent?: boolean;
  /** XA-07: the cross-adapter GPU-to-GPU doorbell (off by default: the document's interrupt design). */
  doorbell?: DoorbellOptions;
  /** How the scheduler cuts the work into events (schedule explorers, docs/EXPLORER.md). */
  schedule?: ScheduleOptions;
  /**
   * Opt-in observers that watch the machine from its creation on, before any adapter starts
   * (the contract checker, src/check/contract.ts). Default none: nothing watches, nothing is slower.
   */
  observers?: MachineObserver[];
}
/**
 * Something that watches a machine from its birth: it sees the machine before any adapter
 * exists, then each adapter's GPU, core view and driver before its DxgkDdiStartDevice.
 */
export interface MachineObserver {
  /** The machine exists (its driver port, OS and scheduler); no adapter is built yet. */
  machineCreated?(machine: unknown): void;
  /** One adapter's GPU and driver exist; DxgkDdiStartDevice comes next. */
  adapterBuilt?(adapter: BuiltAdapter): void;
}
/** What an observer gets of an adapter being built. */
export interface BuiltAdapter {
  readonly index: number;
  readonly name: string;
  readonly hardware: GpuHardware;
  readonly core: GpuCore;
  readonly driver: PluggableDriver;
  /** The DXGK_VIDSCHCAPS bits the GPU has (the driver's context.options.hardwareCaps): what it may advertise. */
  readonly hardwareCaps: number;
  /** The GPU's native fence caps (the driver's context.options.nativeFenceCaps): what it must report. */
  readonly hardwareNativeFenceCaps: Readonly<NativeFenceCaps>;
}
export interface ScheduleOptions {
  /**
   * 'command' (default): one engine event executes a whole command. 'step': a native fence
   * signal runs one core step per event (write, log entry, log advance, drain, CMP check), so
   * a schedule explorer can put anything between them (src/gpu/hardware.ts).
   */
  granularity?: Granularity;
  /**
   * The OS's operations (a waiter added, an interrupt served, a CPU signal, each with its
   * MonitoredValue update): 'step' runs each in steps, one event each, under the OS's lock
   * (waiter add, MonitoredValue write + DDI and each step of the driver's DDI, re-read of
   * CurrentValue, waiter retire: src/os/waits.ts); 'operation' runs each whole. Default:
   * 'step' with granularity 'step', else 'operation' ('step' needs granularity 'step').
   */
  osGranularity?: OsGranularity;
  /**
   * 'virtual' (default): every event happens at its virtual time. 'untimed': every event is
   * scheduled at the current time and time never moves, so whatever is pending may run next in
   * any order that keeps each engine's, thread's and operation's own order (a schedule
   * explorer's mode: src/base/scheduler.ts, docs/EXPLORER.md "Time").
   */
  time?: ScheduleTime;
}
/** How the scheduler treats virtual time (ScheduleOptions.time). */
export type ScheduleTime = 'virtual' | 'untimed';
/** How the OS's operations are cut into events (ScheduleOptions.osGranularity). */
export type OsGranularity = 'operation' | 'step';
/** Machine-wide bounds (each has a default; docs/SCENARIOS.md `machine.limits`). */
export interface MachineLimits {
  /** Processes the machine holds (1 … 1023; default 16). */
  processes?: number;
  /** Scheduler events one run may execute before the livelock guard stops it (default 50,000,000). */
  eventsPerRun?: number;
  /** Trace events kept in memory, the newest (1 … 16,777,216; default 262,144); older ones are counted as dropped. */
  traceEvents?: number;
  /**
   * LOG-08: records of each kind the OS keeps for the timeline (queued events, log entries read,
   * interrupts, overruns, faults), the newest (1 … 16,777,216; default 16,384); older ones are
   * dropped and counted in summary().logs (queuedDropped, entriesDropped, …).
   */
  timelineRecords?: number;
  /**
   * VidMm's records of each kind (GPU reads with their bytes, coherence faults, freed allocations for
   * vidmm.info() and the "already destroyed" error), the newest (1 … 16,777,216; default 16,384); older
   * ones are dropped and counted in vidmm.counters (gpuReadsDropped, coherenceFaultsDropped,
   * freedAllocationsForgotten).
   */
  allocationRecords?: number;
}
export interface DoorbellOptions {
  enabled?: boolean;
  /** Records per adapter ring, a power of two (default 64). A full ring falls back to the interrupt path. */
  ringEntries?: number;
  /** Virtual time from a doorbell write to the other adapter's scheduler taking it (default 300 ns). */
  latencyNs?: number;
}

export const DEFAULT_LIMITS: Required<AdapterLimits> = {
  fences: 4096, waitBlocks: 65536, waitersPerFence: 65536, heapArenaBytes: 6 << 20, queues: 64, ringEntries: 1024,
  gpuVaPagesPerProcess: 2048, interruptListEntries: 32,
};
/**
 * The largest value each limit accepts. Whether a set of limits fits is checked
 * afterwards (src/machine/memory-plan.ts), with an error naming the limit and the most that fits.
 */
export const LIMIT_MAX: Required<AdapterLimits> = {
  fences: 1 << 24, waitBlocks: 1 << 24, waitersPerFence: 1 << 22, heapArenaBytes: 1 << 30, queues: 1 << 16,
  ringEntries: 1 << 24, gpuVaPagesPerProcess: 1 << 22, interruptListEntries: 1 << 16,
};
export const OUT_CAPACITY_WORDS = 1024;
/** The most processes a machine may hold (limits.processes). */
export const MAX_PROCESSES = 1023;
/**
 * Default Timing.jitter: each command time and latency is stretched by up to
 * 10 %, drawn from the seed, so two seeds interleave differently (and the same
 * seed the same way). `timing: { jitter: 0 }` gives exact latencies.
 */
export const DEFAULT_JITTER = 0.1;
export const PAGE = 4096;

/**
 * One adapter as the machine put it together: the OS's record of it, the
 * simulated GPU and the driver module that owns it, and the raw core instance.
 */
export function adapterOptions(raw: unknown, index: number): Required<Omit<AdapterOptions, 'caps' | 'interrupts' | 'driver' | 'limits' | 'segments'>> & {
  segments: SegmentDescriptor[];
  caps: Required<Omit<AdapterCapsOptions, 'nativeFenceCaps'>> & { nativeFenceCaps: Required<NativeFenceCapsOptions> };
  interrupts: Required<NonNullable<AdapterOptions['interrupts']>>;
  driver: Required<Omit<NonNullable<AdapterOptions['driver']>, 'module'>> & { module: DriverModule };
  limits: Required<AdapterLimits>;
  given: ReadonlySet<string>;
} {
  const p = `adapters[${index}]`;
  const a = v.options(raw, p, ['name', 'integrated', 'engines', 'localMemoryBytes', 'caps', 'interrupts', 'driver', 'limits', 'segments', 'cpuHostAperturePages']);
  const caps = v.options(a.caps, `${p}.caps`, ['nativeGpuFence', 'optimizedNativeFenceSignaledInterrupt', 'no64BitAtomics', 'monitoredFenceGpuWrite', 'nativeFenceCaps']);
  const nf = v.options(caps.nativeFenceCaps, `${p}.caps.nativeFenceCaps`, ['monitoredValuePadding', 'mapToGpuSystemProcess', 'minimumAddress', 'maximumAddress']);
  const interrupts = v.options(a.interrupts, `${p}.interrupts`, ['payload', 'evaluateLegacyMonitoredFences']);
  const driver = v.options(a.driver, `${p}.driver`, ['queryFeatureBeforeAdvertising', 'monitoredValueBarrier', 'module']);
  const limits = v.options(a.limits, `${p}.limits`, Object.keys(DEFAULT_LIMITS));
  const flag = (value: unknown, name: string, fallback: boolean) => (value === undefined ? fallback : v.bool(value, name));
  const padding = nf.monitoredValuePadding === undefined ? 0 : v.integer(nf.monitoredValuePadding, `${p}.caps.nativeFenceCaps.monitoredValuePadding`, 0, 4088);
  if (padding % 8) throw invalid(`${p}.caps.nativeFenceCaps.monitoredValuePadding`, padding, 'a multiple of 8 bytes (MonitoredValue stays 8-byte aligned)');
  const resolvedLimits = { ...DEFAULT_LIMITS };
  for (const key of Object.keys(limits) as (keyof AdapterLimits)[]) {
    resolvedLimits[key] = v.integer(limits[key], `${p}.limits.${key}`, 1, LIMIT_MAX[key]);
  }
  // A native fence's CurrentValue is a 64-bit value the CMP compares and user mode reads with no OS in
  // between, so a GPU that writes only 32 bits atomically cannot have native fences (MF-07's extension
  // is the OS's, for monitored fences it reads): nativeGpuFence defaults to !no64BitAtomics, both is refused.
  const no64BitAtomics = flag(caps.no64BitAtomics, `${p}.caps.no64BitAtomics`, false);
  const nativeGpuFence = flag(caps.nativeGpuFence, `${p}.caps.nativeGpuFence`, !no64BitAtomics);
  if (nativeGpuFence && no64BitAtomics) {
    throw invalid(`${p}.caps`, { nativeGpuFence: true, no64BitAtomics: true },
      'nativeGpuFence and no64BitAtomics not both true: a native fence needs 64-bit atomic GPU writes (its CurrentValue is compared by the CMP and read by user mode with no OS to extend a 32-bit write, MF-07); leave nativeGpuFence out on a 32-bit-only GPU');
  }
  const name = a.name === undefined ? `gpu${index}` : String(a.name);
  if (!/^[A-Za-z0-9_.-]{1,32}$/.test(name)) throw invalid(`${p}.name`, a.name, '1 to 32 letters, digits, "_", "." or "-"');
  const localMemoryBytes = a.localMemoryBytes === undefined ? 1 << 20 : v.integer(a.localMemoryBytes, `${p}.localMemoryBytes`, 0, 1 << 30);
  return {
    name,
    integrated: flag(a.integrated, `${p}.integrated`, false),
    engines: a.engines === undefined ? 2 : v.integer(a.engines, `${p}.engines`, 1, 16),
    localMemoryBytes,
    ...parseSegments(a.segments, a.cpuHostAperturePages, p, localMemoryBytes),
    caps: {
      nativeGpuFence,
      optimizedNativeFenceSignaledInterrupt: flag(caps.optimizedNativeFenceSignaledInterrupt, `${p}.caps.optimizedNativeFenceSignaledInterrupt`, false),
      no64BitAtomics,
      monitoredFenceGpuWrite: flag(caps.monitoredFenceGpuWrite, `${p}.caps.monitoredFenceGpuWrite`, true),
      nativeFenceCaps: {
        monitoredValuePadding: padding,
        mapToGpuSystemProcess: flag(nf.mapToGpuSystemProcess, `${p}.caps.nativeFenceCaps.mapToGpuSystemProcess`, true),
        minimumAddress: nf.minimumAddress === undefined ? 0n : v.u64(nf.minimumAddress, `${p}.caps.nativeFenceCaps.minimumAddress`),
        maximumAddress: nf.maximumAddress === undefined ? 0n : v.u64(nf.maximumAddress, `${p}.caps.nativeFenceCaps.maximumAddress`),
      },
    },
    interrupts: {
      payload: interrupts.payload === undefined ? 'list' : v.oneOf(interrupts.payload, `${p}.interrupts.payload`, ['list', 'noList'] as const),
      evaluateLegacyMonitoredFences: flag(interrupts.evaluateLegacyMonitoredFences, `${p}.interrupts.evaluateLegacyMonitoredFences`, false),
    },
    driver: {
      queryFeatureBeforeAdvertising: flag(driver.queryFeatureBeforeAdvertising, `${p}.driver.queryFeatureBeforeAdvertising`, true),
      monitoredValueBarrier: flag(driver.monitoredValueBarrier, `${p}.driver.monitoredValueBarrier`, true),
      module: driver.module === undefined ? referenceDriverModule : driverModule(driver.module, `${p}.driver.module`),
    },
    limits: resolvedLimits,
    given: new Set(Object.keys(limits)),
  };
}

/** adapters[i].driver.module: a module object here; a path reaches this point only from createMachineSync, which cannot load it. */
function driverModule(value: unknown, parameter: string): DriverModule {
  if (typeof value === 'string' || value instanceof URL) {
    throw invalid(parameter, String(value), 'a driver module object here: createMachineSync cannot load a module file; use createMachine (async), which loads it, or pass the module loadDriverModule(path) returns');
  }
  return checkDriverModule(value, parameter);
}

/** Every createMachine option, checked, with its default. */
export function parseMachineOptions(options: MachineOptions) {
  const o = v.options(options, 'createMachine(options)', ['seed', 'os', 'adapters', 'systemMemoryBytes', 'limits', 'timing', 'trace', 'ioCoherent', 'doorbell', 'schedule', 'observers']);
  const seed = o.seed === undefined ? 1 : v.integer(o.seed, 'seed', 0, 0xffff_ffff);
  const os = v.options(o.os, 'os', ['nativeFence', 'rereadCurrentValue']);
  const nativeFence = os.nativeFence === undefined ? true : v.bool(os.nativeFence, 'os.nativeFence');
  const rereadCurrentValue = os.rereadCurrentValue === undefined ? true : v.bool(os.rereadCurrentValue, 'os.rereadCurrentValue');
  const adapterList = o.adapters === undefined ? [{}] : v.array(o.adapters, 'adapters', 1, 8);
  const adapters = adapterList.map((a, i) => adapterOptions(a, i));
  const names = new Set<string>();
  for (const [i, a] of adapters.entries()) {
    if (names.has(a.name)) throw invalid(`adapters[${i}].name`, a.name, 'a name no other adapter has');
    names.add(a.name);
  }
  const systemMemoryBytes = o.systemMemoryBytes === undefined ? 4 << 20 : v.integer(o.systemMemoryBytes, 'systemMemoryBytes', 64 << 10, 1 << 30);
  const limits = v.options(o.limits, 'limits', ['processes', 'eventsPerRun', 'traceEvents', 'timelineRecords', 'allocationRecords']);
  const processes = (limits.processes === undefined ? 16 : v.integer(limits.processes, 'limits.processes', 1, MAX_PROCESSES)) + 1;
  const bounds = {
    eventsPerRun: limits.eventsPerRun === undefined ? DEFAULT_EVENTS_PER_RUN : v.integer(limits.eventsPerRun, 'limits.eventsPerRun', 1, Number.MAX_SAFE_INTEGER),
    traceEvents: limits.traceEvents === undefined ? DEFAULT_TRACE_CAPACITY : v.integer(limits.traceEvents, 'limits.traceEvents', 1, MAX_TRACE_CAPACITY),
  };
  const timingIn = v.options(o.timing, 'timing', ['commandNs', 'interruptLatencyNs', 'jitter']);
  // Frozen: constant for the machine's life (the explorer's state key writes a frozen object of the machine as built as one word).
  const timing: Timing = Object.freeze({
    commandNs: timingIn.commandNs === undefined ? 100 : v.nonNegative(timingIn.commandNs, 'timing.commandNs'),
    interruptLatencyNs: timingIn.interruptLatencyNs === undefined ? 2000 : v.nonNegative(timingIn.interruptLatencyNs, 'timing.interruptLatencyNs'),
    jitter: timingIn.jitter === undefined ? DEFAULT_JITTER : v.fraction(timingIn.jitter, 'timing.jitter'),
  });
  const traceOn = o.trace === undefined ? true : v.bool(o.trace, 'trace');
  const timelineRecords = limits.timelineRecords === undefined ? DEFAULT_HISTORY_RECORDS : v.integer(limits.timelineRecords, 'limits.timelineRecords', 1, 1 << 24);
  const allocationRecords = limits.allocationRecords === undefined ? DEFAULT_ALLOCATION_RECORDS : v.integer(limits.allocationRecords, 'limits.allocationRecords', 1, 1 << 24);
  const ioCoherent = o.ioCoherent === undefined ? true : v.bool(o.ioCoherent, 'ioCoherent');
  const doorbellIn = v.options(o.doorbell, 'doorbell', ['enabled', 'ringEntries', 'latencyNs']);
  const doorbell = {
    enabled: doorbellIn.enabled === undefined ? false : v.bool(doorbellIn.enabled, 'doorbell.enabled'),
    ringEntries: doorbellIn.ringEntries === undefined ? 64 : v.integer(doorbellIn.ringEntries, 'doorbell.ringEntries', 2, 65536),
    latencyNs: doorbellIn.latencyNs === undefined ? 300 : v.nonNegative(doorbellIn.latencyNs, 'doorbell.latencyNs'),
  };
  if (doorbell.ringEntries & (doorbell.ringEntries - 1)) throw invalid('doorbell.ringEntries', doorbell.ringEntries, 'a power of two from 2 to 65536');
  const scheduleIn = v.options(o.schedule, 'schedule', ['granularity', 'osGranularity', 'time']);
  const granularity: Granularity = scheduleIn.granularity === undefined ? 'command' : v.oneOf(scheduleIn.granularity, 'schedule.granularity', ['command', 'step'] as const);
  const osGranularity: OsGranularity = scheduleIn.osGranularity === undefined ? (granularity === 'step' ? 'step' : 'operation')
    : v.oneOf(scheduleIn.osGranularity, 'schedule.osGranularity', ['operation', 'step'] as const);
  if (osGranularity === 'step' && granularity !== 'step') {
    throw invalid('schedule.osGranularity', osGranularity, '"operation" with schedule.granularity "command" (the OS\'s steps need the GPU\'s: set schedule.granularity "step")');
  }
  const time: ScheduleTime = scheduleIn.time === undefined ? 'virtual' : v.oneOf(scheduleIn.time, 'schedule.time', ['virtual', 'untimed'] as const);

  const observers = o.observers === undefined ? [] : v.array(o.observers, 'observers', 0, 16).map((observer, i) => {
    if (observer === null || typeof observer !== 'object') throw invalid(`observers[${i}]`, observer, 'an object with machineCreated(machine) and/or adapterBuilt(adapter)');
    for (const member of ['machineCreated', 'adapterBuilt'] as const) {
      const f = (observer as Record<string, unknown>)[member];
      if (f !== undefined && typeof f !== 'function') throw invalid(`observers[${i}].${member}`, f, 'a function, or absent');
    }
    return observer as MachineObserver;
  });

  return { seed, nativeFence, rereadCurrentValue, adapters, systemMemoryBytes, processes, bounds, timing, traceOn, timelineRecords, allocationRecords, ioCoherent, doorbell, granularity, osGranularity, time, observers };
}
