// The scenario file format, as a JSON Schema (draft-07, checked by ajv).
//
// A scenario describes a whole run: the machine, its processes, fences,
// hardware queues (and kernel-mode contexts) with their command streams,
// CPU threads with their signals and waits, allocations, injected faults and
// what must hold at the end. docs/SCENARIOS.md explains every field.
//
// The schema is the FULL format. Parts this build cannot run yet are listed
// in features.ts; the loader rejects them with a "not supported by this build
// yet" error naming the path, before anything runs.
//
// Every list and map has a maximum and every number a range (limits.ts):
// times are virtual nanoseconds up to 2^53 − 1, what virtual time holds.

import { SCENARIO_LIMITS as L } from './limits.js';

const NAME = { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_.-]{0,31}$', description: 'a name: a letter or "_", then up to 31 letters, digits, "_", "." or "-"' };
/** A 64-bit unsigned fence value: a number, or a decimal / 0x-hex string for values past 2^53. */
const VALUE = { type: ['integer', 'string'], minimum: 0, pattern: '^(0|[1-9][0-9]{0,19}|0[xX][0-9a-fA-F]{1,16})$', description: 'a 64-bit unsigned value: a number, or a decimal or 0x-hex string' };
const DURATION = { type: 'integer', minimum: 0, maximum: L.timeNs };
const HEX_BYTES = { type: 'string', pattern: '^([0-9a-fA-F]{2})*$', description: 'bytes as hex digits, two per byte ("deadbeef")' };
const COUNT = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER };
/** A driver module file (.mjs or .js, or a .wasm driver built from C), relative to the scenario file (docs/DRIVERS.md). */
const MODULE_PATH = { type: 'string', minLength: 1, maxLength: 1024, description: 'a driver module (.mjs or .js exporting createDriver, or a .wasm driver built from C), relative to the scenario file' };
/** Sizes and offsets in bytes: the model's memories are at most 1 GiB. */
const BYTES = { type: 'integer', minimum: 0, maximum: 1 << 30 };
const list = (items: unknown, maxItems: number, extra: Record<string, unknown> = {}) => ({ type: 'array', items, maxItems, ...extra });
const map = (values: unknown, extra: Record<string, unknown> = {}) => ({ type: 'object', additionalProperties: values, maxProperties: L.expectations, ...extra });

const strict = (properties: Record<string, unknown>, required: string[] = [], extra: Record<string, unknown> = {}) =>
  ({ type: 'object', additionalProperties: false, properties, required, ...extra });
/** An object with exactly one of the given keys (a tagged union without oneOf noise). */
const exactlyOne = (properties: Record<string, unknown>) =>
  ({ type: 'object', additionalProperties: false, properties, minProperties: 1, maxProperties: 1 });

const SYNC_FLAGS = strict(Object.fromEntries(['shared', 'ntSecuritySharing', 'crossAdapter', 'topOfPipeline', 'noSignal', 'noWait',
  'noSignalMaxValueOnTdr', 'noGpuAccess', 'signalByKmd', 'unwaitCpuWaitersOnlyOnDestroy'].map((k) => [k, { type: 'boolean' }])));

const GPU_COMMAND = exactlyOne({
  wait: strict({ fence: NAME, value: VALUE }, ['fence', 'value']),
  signal: strict({ fence: NAME, value: VALUE }, ['fence', 'value']),
  work: strict({ durationNs: DURATION }, ['durationNs']),
  /** Kernel-mode contexts: the GPU writes a monitored fence's value at the end of a command buffer. */
  fenceWrite: strict({ fence: NAME, value: VALUE }, ['fence', 'value']),
  /** The submission reads (or writes) an allocation (or a range of it): the model moves the bytes when the GPU finishes it. */
  useAllocation: strict({ allocation: NAME, write: { type: 'boolean' }, offset: BYTES, length: { type: 'integer', minimum: 1, maximum: 1 << 30 }, bytes: HEX_BYTES }, ['allocation']),
});

const WAIT = strict({
  id: NAME,
  fences: { type: 'array', items: NAME, minItems: 1, maxItems: 32 },
  values: { type: 'array', items: VALUE, minItems: 1, maxItems: 32 },
  any: { type: 'boolean', description: 'wait-any (default: wait-all)' },
  timeoutNs: DURATION,
}, ['fences', 'values']);

const THREAD_STEP = exactlyOne({
  wait: WAIT,
  waitWithEvent: { ...WAIT, description: 'D3DKMTWaitForSynchronizationObjectFromCpu with hAsyncEvent, then a wait on the event' },
  signal: strict({ fences: { type: 'array', items: NAME, minItems: 1, maxItems: 32 }, values: { type: 'array', items: VALUE, minItems: 1, maxItems: 32 }, allowFenceRewind: { type: 'boolean' } }, ['fences', 'values']),
  sleep: strict({ durationNs: DURATION }, ['durationNs']),
  submit: strict({ queue: NAME, commands: list(GPU_COMMAND, L.commandsPerList, { minItems: 1 }) }, ['queue', 'commands']),
  destroyFence: strict({ fence: NAME }, ['fence']),
  /** Lock2 (Flags 0): maps the allocation for the CPU; the thread keeps pData for cpuWrite / cpuRead. */
  lock: strict({ allocation: NAME }, ['allocation']),
  unlock: strict({ allocation: NAME }, ['allocation']),
  /** A CPU store / load through the thread's Lock2 mapping. */
  cpuWrite: strict({ allocation: NAME, offset: BYTES, bytes: { ...HEX_BYTES, maxLength: 2 * 4096 } }, ['allocation', 'bytes']),
  cpuRead: strict({ id: NAME, allocation: NAME, offset: BYTES, length: { type: 'integer', minimum: 1, maximum: 4096 } }, ['id', 'allocation', 'length']),
  /** D3DKMTDestroyAllocation2; synchronous: the thread waits until the memory is reclaimed. */
  destroyAllocation: strict({ allocation: NAME, assumeNotInUse: { type: 'boolean' }, synchronous: { type: 'boolean' } }, ['allocation']),
  makeResident: strict({ allocation: NAME, segment: { type: ['string', 'integer'], minimum: 0, maximum: 64 } }, ['allocation']),
  evict: strict({ allocation: NAME }, ['allocation']),
  /** LOG-03: the OS recreates one of a hardware queue's native fence log buffers. */
  recreateLogBuffer: strict({ queue: NAME, log: { enum: ['waits', 'signals'] } }, ['queue', 'log']),
});

const ADAPTER = strict({
  name: NAME,
  integrated: { type: 'boolean' },
  engines: { type: 'integer', minimum: 1, maximum: 16 },
  localMemoryBytes: BYTES,
  caps: strict({
    nativeGpuFence: { type: 'boolean' },
    optimizedNativeFenceSignaledInterrupt: { type: 'boolean' },
    no64BitAtomics: { type: 'boolean' },
    nativeFenceCaps: strict({ monitoredValuePadding: { type: 'integer', minimum: 0, maximum: 4088, multipleOf: 8 }, mapToGpuSystemProcess: { type: 'boolean' } }),
  }),
  interrupts: strict({ payload: { enum: ['list', 'noList'] }, evaluateLegacyMonitoredFences: { type: 'boolean' } }),
  segments: { type: 'array', minItems: 1, maxItems: 64, items: strict({ name: NAME, sizeBytes: { type: 'integer', minimum: 1, maximum: 1 << 30 }, cpuVisible: { type: 'boolean' }, aperture: { type: 'boolean' },
    cacheCoherent: { type: 'boolean' }, supportsCpuHostAperture: { type: 'boolean' } }, ['sizeBytes']) },
  cpuHostAperturePages: { type: 'integer', minimum: 0, maximum: 1 << 16 },
  driver: { anyOf: [
    { ...MODULE_PATH, description: 'the driver module file (same as driver: { module: … })' },
    strict({ queryFeatureBeforeAdvertising: { type: 'boolean' }, monitoredValueBarrier: { type: 'boolean' }, module: MODULE_PATH }),
  ] },
  // the same ranges as createMachine's adapter limits
  limits: strict(Object.fromEntries(['fences', 'waitBlocks', 'waitersPerFence', 'heapArenaBytes', 'queues', 'ringEntries', 'gpuVaPagesPerProcess', 'interruptListEntries']
    .map((k) => [k, { type: 'integer', minimum: 1, maximum: k === 'heapArenaBytes' ? 1 << 30 : k === 'waitersPerFence' ? 1 << 22 : 1 << 24 }]))),
}, ['name']);

const WAIT_OUTCOME = { enum: ['woken', 'satisfiedAtOnce', 'timedOut', 'pending', 'deviceRemoved', 'adapterStopped', 'objectDestroyed'] };
const LEGACY_COUNTER_NAMES = ['dmaCompletedInterrupts', 'monitoredFenceInterrupts', 'scans', 'legacyScans', 'fencesExamined', 'gpuWaitsHeld',
  'heldWaitsReleased', 'softwareSignals', 'commandBuffers'];
const VIDMM_COUNTER_NAMES = ['allocationsCreated', 'allocationsFreed', 'destroysDeferred', 'destroysAtOnce', 'locks', 'relocations', 'cacheInvalidations',
  'linesWrittenBack', 'staleGpuReads', 'staleCpuReads', 'lostWrites', 'gpuUseAfterFree', 'gpuReadsDropped', 'coherenceFaultsDropped',
  'freedAllocationsForgotten'];
const LOG_COUNTER_NAMES = ['buffersCreated', 'buffersRecreated', 'logReads', 'entriesRead', 'updateNativeFenceLogsCalls', 'overruns', 'entriesLost',
  'fallbackScans', 'contractViolations', 'optimizedInterrupts'];
const COUNTER_NAMES = ['cpuSignals', 'interruptsHandled', 'spuriousInterrupts', 'propagationInterrupts', 'waitersAdded', 'waitersWoken', 'waitsSatisfiedAtOnce',
  'waitsTimedOut', 'monitoredValueUpdates', 'monitoredValuesWritten', 'currentValueUpdates', 'fencesScanned', 'fullScans',
  'gpuRewinds', 'deferredCloses', 'orphanedWaits'];

export const SCENARIO_SCHEMA = strict({
  $schema: { type: 'string' },
  name: NAME,
  description: { type: 'string' },
  machine: strict({
    seed: { type: 'integer', minimum: 0, maximum: 4294967295 },
    os: strict({ nativeFence: { type: 'boolean' }, rereadCurrentValue: { type: 'boolean', description: 'NF-09: the OS reads CurrentValue again after UpdateMonitoredValues (default true); false judges the driver alone' } }),
    workers: { type: 'boolean', description: 'run each adapter in its own worker thread' },
    ioCoherent: { type: 'boolean', description: 'the platform keeps CPU caches coherent with GPU accesses (default true)' },
    doorbell: strict({ enabled: { type: 'boolean' }, ringEntries: { type: 'integer', minimum: 2, maximum: 65536 }, latencyNs: DURATION }),
    timing: strict({ commandNs: DURATION, interruptLatencyNs: DURATION, jitter: { type: 'number', minimum: 0, maximum: 1 } }),
    adapters: { type: 'array', items: ADAPTER, minItems: 1, maxItems: 8 },
    limits: strict({
      processes: { type: 'integer', minimum: 1, maximum: L.processes, description: 'processes the machine holds (default 16)' },
      eventsPerRun: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'scheduler events before the livelock guard stops the run (default 50000000)' },
      traceEvents: { type: 'integer', minimum: 1, maximum: 1 << 24, description: 'trace events kept in memory, the newest (default 262144)' },
      timelineRecords: { type: 'integer', minimum: 1, maximum: 1 << 24, description: 'LOG-08 records of each kind kept for the timeline, the newest (default 16384)' },
      allocationRecords: { type: 'integer', minimum: 1, maximum: 1 << 24, description: 'VidMm records of each kind kept (GPU reads, coherence faults, freed allocations), the newest (default 16384)' },
    }),
  }, ['adapters']),
  processes: { type: 'array', minItems: 1, maxItems: L.processes, items: strict({ name: NAME }, ['name']) },
  fences: { type: 'array', maxItems: L.fences, items: strict({
    name: NAME,
    process: NAME,
    adapter: NAME,
    kind: { enum: ['native', 'monitored'] },
    type: { enum: ['DEFAULT', 'INTRA_GPU'] },
    flags: SYNC_FLAGS,
    initialValue: VALUE,
    sharedWith: { type: 'array', items: NAME, maxItems: L.processes, description: 'processes that open it through an NT handle' },
    crossAdapter: { type: 'array', items: NAME, minItems: 1, maxItems: 8, description: 'other adapters that open the same fence' },
  }, ['name', 'process', 'adapter']) },
  queues: { type: 'array', maxItems: L.queues, items: strict({
    name: NAME,
    process: NAME,
    adapter: NAME,
    kind: { enum: ['hardware', 'kernelMode'], description: 'a user-mode hardware queue, or a kernel-mode context (monitored-fence path)' },
    engine: { type: 'integer', minimum: 0, maximum: 15 },
    progressFence: { type: 'boolean' },
    commands: list(GPU_COMMAND, L.commandsPerList),
  }, ['name', 'process', 'adapter']) },
  allocations: { type: 'array', maxItems: L.allocations, items: strict({ name: NAME, process: NAME, adapter: NAME, sizeBytes: { type: 'integer', minimum: 1, maximum: 1 << 30 },
    segments: { type: 'array', items: { type: ['string', 'integer'], minimum: 0, maximum: 64 }, minItems: 1, maxItems: 64 }, cpuAccess: { enum: ['none', 'cached', 'uncached'] }, resident: { type: 'boolean' } },
  ['name', 'process', 'adapter', 'sizeBytes']) },
  threads: { type: 'array', maxItems: L.threads, items: strict({
    name: NAME, process: NAME, startNs: DURATION, steps: list(THREAD_STEP, L.stepsPerThread),
  }, ['name', 'process', 'steps']) },
  faults: { type: 'array', maxItems: L.faults, items: strict({
    atNs: DURATION,
    removeDevice: strict({ adapter: NAME, reason: { type: 'string' } }, ['adapter']),
    removeAdapter: strict({ adapter: NAME, reason: { type: 'string' } }, ['adapter']),
    collapseInterrupts: strict({ adapter: NAME, windowNs: { type: 'integer', exclusiveMinimum: 0, maximum: L.timeNs, description: 'virtual ns interrupt delivery is held, from atNs' } }, ['adapter', 'windowNs']),
    forceLogOverrun: strict({ adapter: NAME, queue: NAME }, ['adapter']),
  }, ['atNs'], { minProperties: 2, maxProperties: 2 }) },
  expect: strict({
    fences: map(VALUE, { description: 'fence name → its CurrentValue at the end' }),
    waits: map({ anyOf: [WAIT_OUTCOME, strict({ outcome: WAIT_OUTCOME, index: COUNT, atNs: DURATION }, ['outcome'])] }),
    interrupts: map(COUNT, { description: 'adapter name → interrupts raised' }),
    counters: strict(Object.fromEntries(COUNTER_NAMES.map((k) => [k, COUNT]))),
    logCounters: strict(Object.fromEntries(LOG_COUNTER_NAMES.map((k) => [k, COUNT])), [], { description: 'native fence log counters (machine.summary().logs)' }),
    allocations: map({ enum: ['live', 'destroyPending', 'freed'] }, { description: 'allocation name → its state at the end' }),
    reads: map({ ...HEX_BYTES, maxLength: 2 * 4096 }, { description: 'cpuRead id → the bytes it read' }),
    crossAdapterCounters: strict(Object.fromEntries(['propagations', 'notificationOnlyCalls', 'doorbellPosted', 'doorbellTaken', 'doorbellFallbacks', 'crossWakes']
      .map((k) => [k, COUNT]))),
    vidmmCounters: strict(Object.fromEntries(VIDMM_COUNTER_NAMES.map((k) => [k, COUNT]))),
    legacyCounters: strict(Object.fromEntries(LEGACY_COUNTER_NAMES.map((k) => [k, COUNT])), [], { description: 'monitored fence + kernel-mode context counters (machine.summary().legacy)' }),
    threads: map({ enum: ['done', 'blocked', 'failed'] }),
    adapters: map({ enum: ['running', 'stopped'] }),
    blockedQueues: map({ type: 'boolean' }, { description: 'queue name → still blocked on a wait at the end' }),
    bugChecks: COUNT,
    contractViolations: COUNT,
    stuck: { type: 'boolean', description: 'the run ends with a queue blocked, a CPU waiter pending or a CPU thread unfinished (default false: such a run fails)' },
    deadlock: { type: 'boolean', description: 'the run ends in a deadlock: a cycle of waits nothing in the machine can release (implies stuck)' },
    timedOnly: map({ type: 'string', minLength: 1, maxLength: 1000, description: 'why it holds only with the scenario\'s times' },
      { propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_.-]{0,127}$' },
        description: 'expectation (a group of expect, e.g. counters, or one entry, e.g. waits.frame) → why it holds only in timed runs: the race explorer\'s --untimed mode leaves it out' }),
  }),
}, ['name', 'machine', 'processes']);

export const COUNTERS = COUNTER_NAMES;
