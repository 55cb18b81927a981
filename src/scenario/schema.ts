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

const NAME = { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_.-]{0,31}$', description: 'a name: a letter or "_", then up to 31 letters, digits, "_", "." or "-"' };
/** A 64-bit unsigned fence value: a number, or a decimal / 0x-hex string for values past 2^53. */
const VALUE = { type: ['integer', 'string'], minimum: 0, pattern: '^(0|[1-9][0-9]{0,19}|0[xX][0-9a-fA-F]{1,16})$', description: 'a 64-bit unsigned value: a number, or a decimal or 0x-hex string' };
const DURATION = { type: 'number', minimum: 0 };
const HEX_BYTES = { type: 'string', pattern: '^([0-9a-fA-F]{2})*$', description: 'bytes as hex digits, two per byte ("deadbeef")' };
const COUNT = { type: 'integer', minimum: 0 };

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
  useAllocation: strict({ allocation: NAME, write: { type: 'boolean' }, offset: COUNT, length: { type: 'integer', minimum: 1 }, bytes: HEX_BYTES }, ['allocation']),
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
  submit: strict({ queue: NAME, commands: { type: 'array', items: GPU_COMMAND, minItems: 1, maxItems: 4096 } }, ['queue', 'commands']),
  destroyFence: strict({ fence: NAME }, ['fence']),
  /** Lock2 (Flags 0): maps the allocation for the CPU; the thread keeps pData for cpuWrite / cpuRead. */
  lock: strict({ allocation: NAME }, ['allocation']),
  unlock: strict({ allocation: NAME }, ['allocation']),
  /** A CPU store / load through the thread's Lock2 mapping. */
  cpuWrite: strict({ allocation: NAME, offset: COUNT, bytes: HEX_BYTES }, ['allocation', 'bytes']),
  cpuRead: strict({ id: NAME, allocation: NAME, offset: COUNT, length: { type: 'integer', minimum: 1, maximum: 4096 } }, ['id', 'allocation', 'length']),
  /** D3DKMTDestroyAllocation2; synchronous: the thread waits until the memory is reclaimed. */
  destroyAllocation: strict({ allocation: NAME, assumeNotInUse: { type: 'boolean' }, synchronous: { type: 'boolean' } }, ['allocation']),
  makeResident: strict({ allocation: NAME, segment: { type: ['string', 'integer'] } }, ['allocation']),
  evict: strict({ allocation: NAME }, ['allocation']),
  /** LOG-03: the OS recreates one of a hardware queue's native fence log buffers. */
  recreateLogBuffer: strict({ queue: NAME, log: { enum: ['waits', 'signals'] } }, ['queue', 'log']),
});

const ADAPTER = strict({
  name: NAME,
  integrated: { type: 'boolean' },
  engines: { type: 'integer', minimum: 1, maximum: 16 },
  localMemoryBytes: { type: 'integer', minimum: 0 },
  caps: strict({
    nativeGpuFence: { type: 'boolean' },
    optimizedNativeFenceSignaledInterrupt: { type: 'boolean' },
    no64BitAtomics: { type: 'boolean' },
    nativeFenceCaps: strict({ monitoredValuePadding: { type: 'integer', minimum: 0, maximum: 4088, multipleOf: 8 }, mapToGpuSystemProcess: { type: 'boolean' } }),
  }),
  interrupts: strict({ payload: { enum: ['list', 'noList'] }, evaluateLegacyMonitoredFences: { type: 'boolean' } }),
  segments: { type: 'array', minItems: 1, items: strict({ name: NAME, sizeBytes: { type: 'integer', minimum: 1 }, cpuVisible: { type: 'boolean' }, aperture: { type: 'boolean' },
    cacheCoherent: { type: 'boolean' }, supportsCpuHostAperture: { type: 'boolean' } }, ['sizeBytes']) },
  cpuHostAperturePages: { type: 'integer', minimum: 0 },
  driver: strict({ queryFeatureBeforeAdvertising: { type: 'boolean' }, monitoredValueBarrier: { type: 'boolean' } }),
  limits: strict(Object.fromEntries(['fences', 'waitBlocks', 'waitersPerFence', 'heapArenaBytes', 'queues', 'ringEntries', 'gpuVaPagesPerProcess', 'interruptListEntries']
    .map((k) => [k, { type: 'integer', minimum: 1 }]))),
}, ['name']);

const WAIT_OUTCOME = { enum: ['woken', 'satisfiedAtOnce', 'timedOut', 'pending', 'deviceRemoved', 'adapterStopped', 'objectDestroyed'] };
const LEGACY_COUNTER_NAMES = ['dmaCompletedInterrupts', 'monitoredFenceInterrupts', 'scans', 'legacyScans', 'fencesExamined', 'gpuWaitsHeld',
  'heldWaitsReleased', 'softwareSignals', 'commandBuffers'];
const VIDMM_COUNTER_NAMES = ['allocationsCreated', 'allocationsFreed', 'destroysDeferred', 'destroysAtOnce', 'locks', 'relocations', 'cacheInvalidations',
  'linesWrittenBack', 'staleGpuReads', 'staleCpuReads', 'lostWrites', 'gpuUseAfterFree'];
const LOG_COUNTER_NAMES = ['buffersCreated', 'buffersRecreated', 'logReads', 'entriesRead', 'updateNativeFenceLogsCalls', 'overruns', 'entriesLost',
  'fallbackScans', 'contractViolations', 'optimizedInterrupts'];
const COUNTER_NAMES = ['cpuSignals', 'interruptsHandled', 'spuriousInterrupts', 'propagationInterrupts', 'waitersAdded', 'waitersWoken', 'waitsSatisfiedAtOnce',
  'waitsTimedOut', 'monitoredValueUpdates', 'monitoredValuesWritten', 'currentValueUpdates', 'fencesScanned', 'fullScans'];

export const SCENARIO_SCHEMA = strict({
  $schema: { type: 'string' },
  name: NAME,
  description: { type: 'string' },
  machine: strict({
    seed: { type: 'integer', minimum: 0, maximum: 4294967295 },
    os: strict({ nativeFence: { type: 'boolean' } }),
    workers: { type: 'boolean', description: 'run each adapter in its own worker thread' },
    ioCoherent: { type: 'boolean', description: 'the platform keeps CPU caches coherent with GPU accesses (default true)' },
    doorbell: strict({ enabled: { type: 'boolean' }, ringEntries: { type: 'integer', minimum: 2, maximum: 65536 }, latencyNs: DURATION }),
    timing: strict({ commandNs: DURATION, interruptLatencyNs: DURATION }),
    adapters: { type: 'array', items: ADAPTER, minItems: 1, maxItems: 8 },
  }, ['adapters']),
  processes: { type: 'array', minItems: 1, items: strict({ name: NAME }, ['name']) },
  fences: { type: 'array', items: strict({
    name: NAME,
    process: NAME,
    adapter: NAME,
    kind: { enum: ['native', 'monitored'] },
    type: { enum: ['DEFAULT', 'INTRA_GPU'] },
    flags: SYNC_FLAGS,
    initialValue: VALUE,
    sharedWith: { type: 'array', items: NAME, description: 'processes that open it through an NT handle' },
    crossAdapter: { type: 'array', items: NAME, minItems: 1, description: 'other adapters that open the same fence' },
  }, ['name', 'process', 'adapter']) },
  queues: { type: 'array', items: strict({
    name: NAME,
    process: NAME,
    adapter: NAME,
    kind: { enum: ['hardware', 'kernelMode'], description: 'a user-mode hardware queue, or a kernel-mode context (monitored-fence path)' },
    engine: { type: 'integer', minimum: 0, maximum: 15 },
    progressFence: { type: 'boolean' },
    commands: { type: 'array', items: GPU_COMMAND, maxItems: 4096 },
  }, ['name', 'process', 'adapter']) },
  allocations: { type: 'array', items: strict({ name: NAME, process: NAME, adapter: NAME, sizeBytes: { type: 'integer', minimum: 1 },
    segments: { type: 'array', items: { type: ['string', 'integer'] }, minItems: 1 }, cpuAccess: { enum: ['none', 'cached', 'uncached'] }, resident: { type: 'boolean' } },
  ['name', 'process', 'adapter', 'sizeBytes']) },
  threads: { type: 'array', items: strict({
    name: NAME, process: NAME, startNs: DURATION, steps: { type: 'array', items: THREAD_STEP },
  }, ['name', 'process', 'steps']) },
  faults: { type: 'array', items: strict({
    atNs: DURATION,
    removeDevice: strict({ adapter: NAME, reason: { type: 'string' } }, ['adapter']),
    collapseInterrupts: strict({ adapter: NAME, windowNs: { type: 'integer', exclusiveMinimum: 0, description: 'virtual ns interrupt delivery is held, from atNs' } }, ['adapter', 'windowNs']),
    forceLogOverrun: strict({ adapter: NAME, queue: NAME }, ['adapter']),
  }, ['atNs'], { minProperties: 2, maxProperties: 2 }) },
  expect: strict({
    fences: { type: 'object', additionalProperties: VALUE, description: 'fence name → its CurrentValue at the end' },
    waits: { type: 'object', additionalProperties: { anyOf: [WAIT_OUTCOME, strict({ outcome: WAIT_OUTCOME, index: COUNT, atNs: DURATION }, ['outcome'])] } },
    interrupts: { type: 'object', additionalProperties: COUNT, description: 'adapter name → interrupts raised' },
    counters: strict(Object.fromEntries(COUNTER_NAMES.map((k) => [k, COUNT]))),
    logCounters: strict(Object.fromEntries(LOG_COUNTER_NAMES.map((k) => [k, COUNT])), [], { description: 'native fence log counters (machine.summary().logs)' }),
    allocations: { type: 'object', additionalProperties: { enum: ['live', 'destroyPending', 'freed'] }, description: 'allocation name → its state at the end' },
    reads: { type: 'object', additionalProperties: HEX_BYTES, description: 'cpuRead id → the bytes it read' },
    crossAdapterCounters: strict(Object.fromEntries(['propagations', 'notificationOnlyCalls', 'doorbellPosted', 'doorbellTaken', 'doorbellFallbacks', 'crossWakes']
      .map((k) => [k, COUNT]))),
    vidmmCounters: strict(Object.fromEntries(VIDMM_COUNTER_NAMES.map((k) => [k, COUNT]))),
    legacyCounters: strict(Object.fromEntries(LEGACY_COUNTER_NAMES.map((k) => [k, COUNT])), [], { description: 'monitored fence + kernel-mode context counters (machine.summary().legacy)' }),
    threads: { type: 'object', additionalProperties: { enum: ['done', 'blocked', 'failed'] } },
    adapters: { type: 'object', additionalProperties: { enum: ['running', 'stopped'] } },
    blockedQueues: { type: 'object', additionalProperties: { type: 'boolean' }, description: 'queue name → still blocked on a wait at the end' },
    bugChecks: COUNT,
    contractViolations: COUNT,
  }),
}, ['name', 'machine', 'processes']);

export const COUNTERS = COUNTER_NAMES;
