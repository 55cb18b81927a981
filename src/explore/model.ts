// The explorer's machine: a small world described by six numbers and a
// protocol variant, built the same way every time, so that a list of choices
// (which enabled event runs next) reproduces a run exactly.
//
//   adapters A, each with engines E; one process "app" with a device on each
//   fence f (f = 0 … F−1)   native fence "f<f>" on adapter f mod A
//   hardware queue q<a>.<e>  one per engine that signals a fence; fence f is
//                            signalled by engine ⌊f / A⌋ mod E of its adapter
//   GPU signals              each queue's ring holds, for k = 1 … S, a signal of
//                            each of its fences to value v(k) (fence order inside k)
//   CPU waiters W            thread "w<j>" waits for fence j mod F to reach
//                            v(1 + ⌊j / F⌋ mod N_f), N_f the values fence f is
//                            signalled to (GPU and CPU); infinite timeout
//   CPU signals C            signal c goes to fence c mod F, value v(S + 1 + ⌊c / F⌋);
//                            one thread "s<f>" per fence signals them in order,
//                            one signal per scheduler event (it yields sleep(0)
//                            between two)
//
//   v(k) = k × 0x1_0000_0001: both 32-bit halves change with every value, so a
//   CurrentValue made of two values' halves (a torn write) is never a value.
//
// Time plays no part: every latency is 0 and jitter is 0, so every pending
// event is due now and scheduler.enabled() lists all of them. The machine is
// built with schedule.granularity 'step' (src/gpu/hardware.ts): a GPU signal
// is five events, one core step each. What the machine is built with (the
// variant's driver option, or a caller's MachineFactory with a driver of its
// own) is the only thing the explorer judges.

import { createMachineSync, type Machine, type MachineOptions, type AdapterOptions } from '../machine/machine.js';
import type { OsGranularity } from '../machine/options.js';
import { counted } from '../base/words.js';
export type { OsGranularity };
import { VARIANTS, applyVariantToOs, variantDriver, type Variant } from './variants.js';
import type { RuntimeProcess, CpuThread, Cpu, ThreadOp, ThreadBody } from '../user/runtime.js';
import type { FenceView as GlobalFence, WaitResult } from '../os/inspect.js';
import { invalid } from '../base/errors.js';
import * as v from '../base/validate.js';
import { LatencyChoices, type World, type WorldFence, type WorldQueue, type WorldThread, type WorldModel } from './world.js';
import { MACHINE_INVARIANTS } from './invariants.js';
import type { Violation } from './world.js';
import { formatValue } from './render.js';
export type { WorldFence, WorldQueue, World } from './world.js';

/** The numbers that define an explorer machine (the header's drawing). */
export interface ExploreMachine {
  fences: number;
  waiters: number;
  /** GPU signals per fence. */
  signals: number;
  /** Engines per adapter. */
  engines: number;
  adapters: number;
  /** CPU signals in all (spread over the fences). */
  cpuSignals: number;
}

export { VARIANTS, VARIANT_TITLES, VARIANT_NEEDS, type Variant } from './variants.js';

/** How the explorer's machine cuts the OS's operations (schedule.osGranularity; default 'step'). */
export const OS_GRANULARITIES: readonly OsGranularity[] = ['step', 'operation'];

/** Each number's range: small on purpose (exhaustive search is exponential in them). */
export const MACHINE_BOUNDS: Readonly<Record<keyof ExploreMachine, readonly [number, number]>> = {
  fences: [1, 8], waiters: [0, 16], signals: [0, 16], engines: [1, 4], adapters: [1, 4], cpuSignals: [0, 16],
};

/** The machine `wddm-fence explore` exhausts when given no numbers. */
export const DEFAULT_MACHINE: Readonly<ExploreMachine> = { fences: 1, waiters: 2, signals: 2, engines: 1, adapters: 1, cpuSignals: 0 };

export const MACHINE_KEYS = Object.keys(MACHINE_BOUNDS) as (keyof ExploreMachine)[];

/** Builds a machine from options: createMachineSync, or a caller's (a plug-in driver). */
export type MachineFactory = (options: MachineOptions) => Machine;

/** Everything that determines an explored run, choices aside. */
export interface ExploreModel {
  machine: ExploreMachine;
  variant: Variant;
  /** The machine's seed: it breaks ties only where no explorer chooses (swarm mode draws choices from its own stream). */
  seed: number;
  /** Makes the machine (default createMachineSync): how a driver of one's own is explored. */
  createMachine?: MachineFactory;
  /** Changes the generated machine options before they are used (e.g. an adapter's driver option). */
  adjustOptions?: (options: MachineOptions) => MachineOptions;
  /**
   * 'step' (default): each OS operation runs in steps (waiter add, MonitoredValue write + DDI,
   * each of the DDI's CMP steps, re-read, retire); 'operation': each runs whole, in one event
   * (the explorer before the OS's steps were split).
   */
  osGranularity?: OsGranularity;
  /** false: the OS does not re-read CurrentValue after UpdateMonitoredValues (NF-09), so a driver is judged alone (explore --driver's second search). */
  resample?: false;
}

/** Checks a machine description: every number present, an integer, in its range; nothing else. */
export function parseMachine(raw: unknown, where = 'machine'): ExploreMachine {
  const o = v.options(raw, where, MACHINE_KEYS);
  const machine = {} as ExploreMachine;
  for (const key of MACHINE_KEYS) {
    const [min, max] = MACHINE_BOUNDS[key];
    machine[key] = o[key] === undefined ? DEFAULT_MACHINE[key] : v.integer(o[key], `${where}.${key}`, min, max);
  }
  return machine;
}

export function parseVariant(raw: unknown, where = 'variant'): Variant {
  return raw === undefined ? 'barrier' : v.oneOf(raw, where, VARIANTS);
}

export function parseOsGranularity(raw: unknown, where = 'osGranularity'): OsGranularity {
  return raw === undefined ? 'step' : v.oneOf(raw, where, OS_GRANULARITIES);
}

/** v(k): the k-th value a fence is signalled to. */
export function signalValue(k: number): bigint { return BigInt(k) * 0x1_0000_0001n; }

/** The machine in one line, e.g. "1 adapter × 1 engine, 1 fence, 2 waiters, 2 GPU signals per fence, 0 CPU signals". */
export function describeMachine(m: ExploreMachine): string {
  const n = counted;
  return `${n(m.adapters, 'adapter')} × ${n(m.engines, 'engine')}, ${n(m.fences, 'fence')}, ${n(m.waiters, 'CPU waiter')}, ` +
    `${n(m.signals, 'GPU signal')} per fence, ${n(m.cpuSignals, 'CPU signal')}`;
}

export interface WorldWaiter { name: string; fence: number; value: bigint; thread: CpuThread }
export interface WorldSignaller { name: string; fence: number; values: readonly bigint[]; thread: CpuThread }

/** A built generated machine and what the explorer put in it (a World of kind 'machine'). */
export interface GeneratedWorld extends World {
  readonly kind: 'machine';
  model: ExploreModel;
  process: RuntimeProcess;
  fences: WorldFence[];
  waiters: WorldWaiter[];
  signallers: WorldSignaller[];
  queues: WorldQueue[];
}

/** Any model the explorer explores: the generated machine's numbers, or a World's builder (a scenario file's). */
export type AnyModel = ExploreModel | WorldModel;

/** Builds any model's world (nothing run yet). */
export function buildAnyWorld(model: AnyModel, options: { trace?: boolean } = {}): World {
  return 'kind' in model && model.kind === 'scenario' ? model.build({ trace: options.trace ?? false }) : buildWorld(model as ExploreModel, options);
}

/** Where fence f lives and which engine signals it. */
export function placement(m: ExploreMachine, f: number): { adapter: number; engine: number } {
  return { adapter: f % m.adapters, engine: Math.floor(f / m.adapters) % m.engines };
}

/** The values CPU signals give fence f, in order. */
export function cpuSignalValues(m: ExploreMachine, f: number): bigint[] {
  const values: bigint[] = [];
  for (let c = f; c < m.cpuSignals; c += m.fences) values.push(signalValue(m.signals + 1 + Math.floor(c / m.fences)));
  return values;
}

/** What waiter j waits for. */
export function waiterTarget(m: ExploreMachine, j: number): { fence: number; value: bigint } {
  const fence = j % m.fences;
  const count = Math.max(1, m.signals + cpuSignalValues(m, fence).length);
  return { fence, value: signalValue(1 + (Math.floor(j / m.fences) % count)) };
}

const pow2 = (n: number) => 2 ** Math.ceil(Math.log2(Math.max(1, n)));

/** The createMachine options of a model: small bounds, no time, one core step per event. */
export function machineOptions(model: ExploreModel, trace: boolean): MachineOptions {
  const m = model.machine;
  const queuesPerAdapter = Math.min(m.engines, Math.ceil(m.fences / m.adapters));
  const ringEntries = pow2(Math.max(8, m.signals * Math.ceil(m.fences / (m.adapters * m.engines))));
  const adapters: AdapterOptions[] = Array.from({ length: m.adapters }, (_, a) => ({
    name: `gpu${a}`,
    engines: m.engines,
    localMemoryBytes: 0,
    driver: variantDriver(model.variant, {}, `adapters[${a}]`),
    limits: {
      fences: m.fences + 2, waitBlocks: m.waiters + 4, waitersPerFence: Math.max(4, m.waiters),
      queues: queuesPerAdapter + 1, ringEntries, gpuVaPagesPerProcess: 8 + 2 * queuesPerAdapter,
      interruptListEntries: Math.max(2, m.fences), heapArenaBytes: pow2((queuesPerAdapter + 1) * ringEntries * 32 + (m.fences + 2) * 64 * pow2(Math.max(4, m.waiters)) + 4096),
    },
  }));
  const pages = 4 + 2 * m.adapters + 2 * queuesPerAdapter * m.adapters;
  return {
    seed: model.seed,
    trace,
    systemMemoryBytes: Math.max(64 << 10, pages * 4096),
    timing: { commandNs: 0, interruptLatencyNs: 0, jitter: 0 },
    limits: { processes: 1, timelineRecords: 64 },
    schedule: { granularity: 'step', osGranularity: model.osGranularity ?? 'step' },
    adapters,
  };
}

/**
 * Builds the model's machine and puts the world in it (fences, queues with
 * their signals submitted, CPU threads created): nothing has run yet, every
 * engine tick and thread start is an enabled event.
 */
export function buildWorld(model: ExploreModel, options: { trace?: boolean } = {}): GeneratedWorld {
  const m = model.machine;
  let machineOpts = machineOptions(model, options.trace ?? false);
  if (model.adjustOptions) machineOpts = model.adjustOptions(machineOpts);
  const machine = (model.createMachine ?? createMachineSync)(machineOpts);
  applyVariantToOs(model.variant, machine);
  if (model.resample === false) machine.os.variant({ rereadCurrentValue: false });
  if (machine.adapters.length !== m.adapters) {
    throw invalid('createMachine', machine.adapters.length, `a machine with the ${m.adapters} adapter(s) the options ask for`);
  }
  const process = machine.createProcess('app');
  const devices = machine.adapters.map((_, a) => process.createDevice({ hAdapter: process.openAdapter(a) }));
  const fences: WorldFence[] = [];
  for (let f = 0; f < m.fences; f++) {
    const { adapter, engine } = placement(m, f);
    const { hSyncObject } = process.createNativeFence({ hDevice: devices[adapter] });
    const global = machine.os.inspect.fenceOf(process.kernel, hSyncObject);
    const gpu = Array.from({ length: m.signals }, (_, k) => signalValue(k + 1));
    fences.push({ name: `f${f}`, index: f, handle: hSyncObject, global, adapter, engine, values: [0n, ...gpu, ...cpuSignalValues(m, f)] });
  }
  const queues: WorldQueue[] = [];
  for (let a = 0; a < m.adapters; a++) {
    for (let e = 0; e < m.engines; e++) {
      const mine = fences.filter((f) => f.adapter === a && f.engine === e).map((f) => f.index);
      if (!mine.length) continue;
      const name = `q${a}.${e}`;
      const { hHwQueue } = process.createHwQueue({ hDevice: devices[a], engine: e, nativeProgressFence: false, name });
      // The core's id of the queue: the hardware's record of the driver's queue (the OS knows only the driver's handle).
      const { hHwQueue: driverQueue } = machine.os.inspect.hwQueueOf(process.kernel, hHwQueue);
      const coreQueue = [...machine.adapters[a].hardware.queues.values()].find((q) => q.handle === driverQueue)?.id;
      if (coreQueue === undefined) throw new Error(`explorer: the hardware of ${machine.adapters[a].name} has no queue for ${name}`);
      queues.push({ name, adapter: a, engine: e, handle: hHwQueue, coreQueue, fences: mine });
    }
  }
  for (const q of queues) {
    const commands = [];
    for (let k = 1; k <= m.signals; k++) for (const f of q.fences) commands.push({ signal: { hSyncObject: fences[f].handle, value: signalValue(k) } });
    if (commands.length) process.submit({ hHwQueue: q.handle, commands });
  }
  const waiters: WorldWaiter[] = [];
  for (let j = 0; j < m.waiters; j++) {
    const { fence, value } = waiterTarget(m, j);
    const handle = fences[fence].handle;
    const name = `w${j}`;
    const thread = process.createThread(name, (cpu) => threadBody(new WaitOnce(cpu, handle, value)));
    waiters.push({ name, fence, value, thread });
  }
  const signallers: WorldSignaller[] = [];
  for (let f = 0; f < m.fences; f++) {
    const values = cpuSignalValues(m, f);
    if (!values.length) continue;
    const handle = fences[f].handle;
    const name = `s${f}`;
    const thread = process.createThread(name, (cpu) => threadBody(new SignalInOrder(cpu, process, handle, values)));
    signallers.push({ name, fence: f, values, thread });
  }
  const threads: WorldThread[] = [...waiters, ...signallers].map((x) => ({ name: x.name, process, thread: x.thread }));
  const world: GeneratedWorld = {
    kind: 'machine', model, machine, process, fences, waiters, signallers, queues, threads,
    invariants: MACHINE_INVARIANTS,
    latencies: new LatencyChoices(false),
    explorer: { faultsInjected: 0 },
    header: () => [
      `machine: ${describeMachine(m)}; variant ${model.variant}; OS in ${(model.osGranularity ?? 'step') === 'step' ? 'steps' : 'whole operations'}${model.resample === false ? '; the OS does not re-read CurrentValue (the driver alone)' : ''}; seed ${model.seed}`,
      'values: v<k> = k × 0x100000001, MAX = UINT64_MAX; [choice/enabled]; * marks what the step changed',
    ],
    formatValue,
    resumeIsLocal: (thread) => waiters.some((w) => w.thread === thread),
    describeResume: (thread) => {
      const waiter = waiters.find((w) => w.thread === thread);
      if (waiter) {
        const fence = fences[waiter.fence].name;
        if (thread.state === 'ready') {
          return machine.os.inspect.stepwise ? `${waiter.name} waits for ${fence} ≥ ${formatValue(waiter.value)}: the OS adds the waiter (or finds CurrentValue there)`
            : `${waiter.name} waits for ${fence} ≥ ${formatValue(waiter.value)}: the OS adds the waiter, UpdateMonitoredValues, re-reads CurrentValue`;
        }
        return `${waiter.name} resumes from its wait`;
      }
      const signaller = signallers.find((x) => x.thread === thread);
      if (!signaller) return undefined;
      const value = signaller.values[thread.blockNumber];
      return `${signaller.name} signals ${fences[signaller.fence].name} = ${value === undefined ? '?' : formatValue(value)} from the CPU: UpdateCurrentValuesFromCpu, then its waiters`;
    },
    threadItems: () => [
      ...waiters.map((w): [string, string] => {
        const t = w.thread;
        const result = t.waits.length ? `:${t.waits.map((r) => r.status).join(',')}` : '';
        return [`thread.${w.name}`, `${w.name}=${t.state}${result}`];
      }),
      ...signallers.map((x): [string, string] => [`thread.${x.name}`, `${x.name}=${x.thread.state}`]),
    ],
    checkQuiet: () => machineQuiet(world),
    explorerOptions: () => [],
    takeExplorerOption: () => { throw new Error('the generated machine has no explorer options'); },
  };
  return world;
}

// The explorer's CPU threads are plain iterator objects, not generators: a
// generator's position lives where no snapshot can reach (src/explore/snapshot.ts),
// an object's fields do not. Each behaves as the generator in its comment.

/** function* (cpu) { yield cpu.wait({ objects: [handle], values: [value] }); } */
class WaitOnce {
  position = 0;
  constructor(private readonly cpu: Cpu, private readonly handle: number, private readonly value: bigint) {}
  next(): IteratorResult<ThreadOp, unknown> {
    if (this.position++ === 0) return { done: false, value: this.cpu.wait({ objects: [this.handle], values: [this.value] }) };
    return { done: true, value: undefined };
  }
  return(value: unknown): IteratorResult<ThreadOp, unknown> { this.position = 2; return { done: true, value }; }
  throw(error: unknown): IteratorResult<ThreadOp, unknown> { this.position = 2; throw error; }
}

/** function* (cpu) { for (i …) { if (i > 0) yield cpu.sleep(0); process.signal({ objects: [handle], values: [values[i]] }); } } */
class SignalInOrder {
  signalled = 0;
  constructor(private readonly cpu: Cpu, private readonly process: RuntimeProcess, private readonly handle: number, private readonly values: readonly bigint[]) {}
  next(): IteratorResult<ThreadOp, unknown> {
    if (this.signalled >= this.values.length) return { done: true, value: undefined };
    this.process.signal({ objects: [this.handle], values: [this.values[this.signalled++]] });
    if (this.signalled < this.values.length) return { done: false, value: this.cpu.sleep(0) };
    return { done: true, value: undefined };
  }
  return(value: unknown): IteratorResult<ThreadOp, unknown> { this.signalled = this.values.length; return { done: true, value }; }
  throw(error: unknown): IteratorResult<ThreadOp, unknown> { this.signalled = this.values.length; throw error; }
}

/** An iterator object where the runtime expects a generator (it calls next, throw and return only). */
function threadBody(body: WaitOnce | SignalInOrder): ReturnType<ThreadBody> {
  return body as unknown as Generator<ThreadOp, unknown, WaitResult>;
}

/** The generated machine's own quiet checks: every waiter thread woken once, every signaller done, every queue run. */
export function machineQuiet(world: GeneratedWorld): Violation[] {
  const violations: Violation[] = [];
  const os = world.machine.os;
  const pending = new Set(os.inspect.pendingWaiterList().map((w) => w.owner.tag));
  for (const w of world.waiters) {
    const t = w.thread;
    if (t.state === 'failed') {
      violations.push({ invariant: 'satisfied-waiters-woken', message: `${w.name} failed: ${t.error instanceof Error ? t.error.message : String(t.error)}` });
    } else if (t.state === 'done') {
      const statuses = t.waits.map((r) => r.status);
      if (statuses.length !== 1 || statuses[0] !== 'SUCCESS') violations.push({ invariant: 'satisfied-waiters-woken', message: `${w.name} returned from its wait with ${statuses.join(', ') || 'nothing'}, expected one SUCCESS` });
    } else if (t.state === 'blocked') {
      if (!pending.has(t)) violations.push({ invariant: 'satisfied-waiters-woken', message: `${w.name} is blocked in its wait, but the OS has no waiter for it any more: retired without waking its thread` });
    } else {
      violations.push({ invariant: 'satisfied-waiters-woken', message: `${w.name} is ${t.state} with nothing left to run it` });
    }
  }
  for (const s of world.signallers) {
    if (s.thread.state !== 'done') {
      violations.push({ invariant: 'satisfied-waiters-woken', message: `CPU signal thread ${s.name} is ${s.thread.state}${s.thread.error ? `: ${s.thread.error instanceof Error ? s.thread.error.message : String(s.thread.error)}` : ''}` });
    }
  }
  for (const q of world.queues) {
    const adapter = world.machine.adapters[q.adapter];
    const left = adapter.core.queueState(q.coreQueue) === world.machine.layout.queueStateFree ? 0 : adapter.core.queuePending(q.coreQueue);
    if (left > 0) violations.push({ invariant: 'gpu-work-done', message: `${q.name} still holds ${left} command(s) and nothing will run them` });
    if (adapter.hardware.signalInFlight(q.engine)) violations.push({ invariant: 'gpu-work-done', message: `${adapter.name}/engine${q.engine} stopped part-way through a signal` });
  }
  return violations;
}
