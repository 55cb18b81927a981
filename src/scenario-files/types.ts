// TypeScript shapes of a validated scenario (schema.ts is the authority).

export type RawValue = number | string;

export interface GpuCommand {
  wait?: { fence: string; value: RawValue };
  signal?: { fence: string; value: RawValue };
  work?: { durationNs: number };
  fenceWrite?: { fence: string; value: RawValue };
  useAllocation?: { allocation: string; write?: boolean; offset?: number; length?: number; bytes?: string };
}

export interface WaitStep { id?: string; fences: string[]; values: RawValue[]; any?: boolean; timeoutNs?: number }

export interface ThreadStep {
  wait?: WaitStep;
  waitWithEvent?: WaitStep;
  signal?: { fences: string[]; values: RawValue[]; allowFenceRewind?: boolean };
  sleep?: { durationNs: number };
  submit?: { queue: string; commands: GpuCommand[] };
  destroyFence?: { fence: string };
  lock?: { allocation: string };
  unlock?: { allocation: string };
  cpuWrite?: { allocation: string; offset?: number; bytes: string };
  cpuRead?: { id: string; allocation: string; offset?: number; length: number };
  destroyAllocation?: { allocation: string; assumeNotInUse?: boolean; synchronous?: boolean };
  makeResident?: { allocation: string; segment?: string | number };
  evict?: { allocation: string };
  recreateLogBuffer?: { queue: string; log: 'waits' | 'signals' };
}

export type WaitOutcome = 'woken' | 'satisfiedAtOnce' | 'timedOut' | 'pending' | 'deviceRemoved' | 'adapterStopped' | 'objectDestroyed';

export interface ScenarioAdapter {
  name: string;
  integrated?: boolean;
  engines?: number;
  localMemoryBytes?: number;
  caps?: { nativeGpuFence?: boolean; optimizedNativeFenceSignaledInterrupt?: boolean; no64BitAtomics?: boolean;
    nativeFenceCaps?: { monitoredValuePadding?: number; mapToGpuSystemProcess?: boolean } };
  interrupts?: { payload?: 'list' | 'noList'; evaluateLegacyMonitoredFences?: boolean };
  /** A driver module file relative to the scenario file, or the reference driver's flags with an optional module file. */
  driver?: string | { queryFeatureBeforeAdvertising?: boolean; monitoredValueBarrier?: boolean; module?: string };
  limits?: Record<string, number>;
  segments?: { name?: string; sizeBytes: number; cpuVisible?: boolean; aperture?: boolean; cacheCoherent?: boolean; supportsCpuHostAperture?: boolean }[];
  cpuHostAperturePages?: number;
}

export interface Scenario {
  name: string;
  description?: string;
  machine: { seed?: number; os?: { nativeFence?: boolean; rereadCurrentValue?: boolean }; workers?: boolean; ioCoherent?: boolean; doorbell?: { enabled?: boolean; ringEntries?: number; latencyNs?: number }; timing?: { commandNs?: number; interruptLatencyNs?: number; jitter?: number }; adapters: ScenarioAdapter[];
    limits?: { processes?: number; eventsPerRun?: number; traceEvents?: number; timelineRecords?: number; allocationRecords?: number } };
  processes: { name: string }[];
  fences?: { name: string; process: string; adapter: string; kind?: 'native' | 'monitored'; type?: 'DEFAULT' | 'INTRA_GPU';
    flags?: Record<string, boolean>; initialValue?: RawValue; sharedWith?: string[]; crossAdapter?: string[] }[];
  queues?: { name: string; process: string; adapter: string; kind?: 'hardware' | 'kernelMode'; engine?: number; progressFence?: boolean; commands?: GpuCommand[] }[];
  allocations?: { name: string; process: string; adapter: string; sizeBytes: number; segments?: (string | number)[]; cpuAccess?: 'none' | 'cached' | 'uncached'; resident?: boolean }[];
  threads?: { name: string; process: string; startNs?: number; steps: ThreadStep[] }[];
  faults?: { atNs: number; removeDevice?: { adapter: string; reason?: string }; removeAdapter?: { adapter: string; reason?: string }; collapseInterrupts?: { adapter: string; windowNs: number }; forceLogOverrun?: { adapter: string; queue?: string } }[];
  expect?: {
    fences?: Record<string, RawValue>;
    waits?: Record<string, WaitOutcome | { outcome: WaitOutcome; index?: number; atNs?: number }>;
    interrupts?: Record<string, number>;
    counters?: Record<string, number>;
    legacyCounters?: Record<string, number>;
    logCounters?: Record<string, number>;
    allocations?: Record<string, 'live' | 'destroyPending' | 'freed'>;
    reads?: Record<string, string>;
    vidmmCounters?: Record<string, number>;
    crossAdapterCounters?: Record<string, number>;
    threads?: Record<string, 'done' | 'blocked' | 'failed'>;
    adapters?: Record<string, 'running' | 'stopped'>;
    blockedQueues?: Record<string, boolean>;
    bugChecks?: number;
    contractViolations?: number;
    /** The run ends with something still blocked (default false: a stuck run fails). */
    stuck?: boolean;
    /** The run ends in a deadlock: a cycle of waits nothing in the machine can release (implies stuck). */
    deadlock?: boolean;
    /**
     * Expectations that hold only with the scenario's times (a group, e.g. "counters", or one entry, e.g.
     * "waits.frame") → why: the race explorer's --untimed mode leaves them out (docs/EXPLORER.md "Time").
     */
    timedOnly?: Record<string, string>;
  };
}
