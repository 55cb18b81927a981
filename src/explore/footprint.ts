// Which enabled steps are independent, and what may still touch what: the input of the full
// reduction's sleep sets, eager steps and persistent sets (src/explore/search.ts).
//
// A step's footprint, read at the state where it is enabled, names what it
// reads and writes:
//
//   resource         what it is
//   cv:@<phys>       the CurrentValue word at physical address phys (one word for
//                    every record of a cross-adapter fence: shared by its adapters)
//   mv:<a>.@<cv>     the MonitoredValue word (memory) of adapter a's record whose
//                    CurrentValue is at cv
//   wb:<a>.<e>       engine e's write buffer (and which queue it runs)
//   irq:<a>.<e>      engine e's interrupt line, pending list and ISR event
//   q:<a>.<id>       hardware queue id's ring position
//   log:<a>.<id>     hardware queue id's log buffers and log write buffer
//   life:<a>.@<cv>   the OS's count of GPU commands in flight naming that record
//   thread:<p>.<t>   CPU thread t of the process in slot p
//   cmp:<a>          the CMP's write buffer (a MonitoredValue on its way to memory)
//   os               the OS's own state: waiter records and heaps, its operation in flight
//   xa:@<phys>       the cross-adapter group whose records share the CurrentValue word at phys: its
//                    list of signals (value, time, adapter), the value last propagated
//   adapter:<a>      everything of adapter a (a scenario file's component footprints): it meets
//                    every resource above named with adapter a
//   *                everything above except threads (an OS operation)
//
//   step                                        reads        writes
//   engine-tick, head is a signal (step 1)      -            wb, q (cv of a store still
//                                                            buffered: it drains first)
//   engine-tick, nothing to run                 q of the engine's queues  -
//   engine-step 2 logWriteEntry, 3 logAdvance   -            log
//   engine-step 4 engineDrain                   -            wb, cv
//   engine-step 5 cmpSignalCheck (+ the end of  mv, cv       irq, life, xa of a cross-adapter
//     the command: listeners, run-list rescan)               fence (its progress report joins the
//                                                            group's signals); * when a queue
//                                                            waits on the fence
//   a thread resuming after its wait, with      -            thread
//     nothing after it (World.resumeIsLocal)
//   OS step (os-step), operation in steps:
//     retire a satisfied waiter                 -            os, the waiter's thread
//     re-read CurrentValue (resample)           cv           os
//     the reference driver's UpdateMonitoredValues steps (the DDI's call
//     with its first step, each next step):
//       a cmpWriteMonitoredValue                -            os, cmp (mv of a value still
//                                                            in the CMP's buffer: it drains first)
//       b cmpBarrier                            -            os, cmp, mv of the CMP's buffered
//                                                            value, every engine's wb, the cv
//                                                            of each buffered store
//       c cmpReadCurrentValue                   cv           os
//       d cmpMonitoredValueCheck                cmp, mv      os, irq of engine 0
//     any step of an operation with ends (a     + cv of      + xa of each cross-adapter group
//       CPU signal's, an interrupt's: they      each cross-  (its ends run inside its last step:
//       run inside its last step)               adapter group  afterCpuSignal, afterInterrupt)
//     any other driver's step; a cross-adapter  *            *
//       notification (NotificationOnly), the
//       OS's log read, its fallback
//   anything else: a thread starting its wait,  *            *  on the generated machine; a scenario file's
//     a CPU signal, an interrupt delivered (the                 (untimed) by its component instead
//     OS serves it), other commands, doorbells,                 (src/explore/components.ts: adapter:<a>
//     timeouts, faults (the explorer's too)                     and its records' cv for a GPU step; os and
//                                                               the component's adapters for the rest)
//
// Two steps are independent at a state when neither writes what the other
// reads or writes. Then running them in either order from that state reaches
// states with the same key (src/explore/state.ts: the order events were
// scheduled in is not part of it) and neither disables the other (an event
// is only cancelled by a step that writes its resource). An OS operation
// never touches a thread whose resumption is already enabled: that thread's
// wait is over. While an OS operation runs in steps it holds the OS's lock:
// the only other enabled steps are the GPU's, which never touch "os" or
// "cmp" (the CMP's write buffer is the DDI's; a GPU signal's check reads
// MonitoredValue in memory). docs/EXPLORER.md gives the argument step by step.

import type { ScheduledEvent } from '../base/scheduler.js';
import { u64 } from '../core/bindings.js';
import { MonitoredValueUpdateSteps, ReferenceDriver } from '../driver/reference.js';
import type { World } from './world.js';
import type { CpuThread } from '../user/runtime.js';
import { componentFootprint, componentPersistentSet, resourceAdapter } from './components.js';
import { logsAbstracted } from './state.js';

export interface Footprint { reads: readonly string[]; writes: readonly string[] }

const EVERYTHING: Footprint = { reads: ['*'], writes: ['*'] };

export function footprint(world: World, event: ScheduledEvent): Footprint {
  return tableFootprint(world, event) ?? componentFootprint(world, event) ?? EVERYTHING;
}

/** The table's footprint of a step (the header), or undefined: not in it (a scenario file's component footprint, else everything). */
function tableFootprint(world: World, event: ScheduledEvent): Footprint | undefined {
  const machine = world.machine;
  const a = machine.adapters.findIndex((x) => x.name === event.owner);
  if (a >= 0) {
    const adapter = machine.adapters[a];
    if (adapter.hardware.granularity !== 'step' || adapter.state !== 'running') return EVERYTHING;
    const core = adapter.core;
    const e = event.args.engine as number;
    if (event.kind === 'engine-tick') {
      const queue = adapter.hardware.peekRunnable(e);
      if (!queue) {
        const mine = [...adapter.hardware.queues.values()].filter((q) => q.engine === e).map((q) => `q:${a}.${q.id}`);
        return { reads: mine, writes: [] };
      }
      if (core.queueHeadOp(queue.id) !== machine.layout.opSignal) return undefined;
      const writes = [`wb:${a}.${e}`, `q:${a}.${queue.id}`];
      const buffered = core.enginePendingWrite(e);
      if (buffered) writes.push(`cv:@${buffered}`);
      return { reads: [], writes };
    }
    if (event.kind === 'engine-step') {
      const signal = adapter.hardware.signalInFlight(e);
      if (!signal) return { reads: [], writes: [] };
      const cv = core.fenceCurrentValueAddress(signal.fence);
      switch (signal.phase) {
        case 'log-entry': case 'log-advance': return { reads: [], writes: [`log:${a}.${signal.queue.id}`] };
        case 'drain': return { reads: [], writes: [`wb:${a}.${e}`, `cv:@${cv}`] };
        case 'cmp-check': {
          if (anyQueueBlocked(world)) return undefined;
          // The signal's progress report of a cross-adapter fence joins its group's list of signals (order and time).
          const group = crossAdapterWords(world).includes(cv) ? [`xa:@${cv}`] : [];
          return { reads: [`mv:${a}.@${cv}`, `cv:@${cv}`], writes: [`irq:${a}.${e}`, `life:${a}.@${cv}`, ...group] };
        }
        default: return undefined;
      }
    }
    return undefined;
  }
  if (event.owner === 'dxgkrnl' && event.kind === 'os-step') return osStepFootprint(world);
  if (event.kind === 'thread-resume') {
    const processes = machine.processes;
    const process = processes.length === 1 ? processes[0] : processes.find((p) => p.owner === event.owner);
    const thread = process?.threads[event.args.thread as number];
    if (thread && thread.state === 'blocked' && thread.resumeWith !== undefined && world.resumeIsLocal(thread)) {
      return { reads: [], writes: [threadResource(thread)] };
    }
  }
  return undefined;
}

/** A CPU thread's resource name. */
const threadResource = (thread: CpuThread): string => `thread:${thread.process.kernel.slot}.${thread.index}`;

/** A hardware queue of any adapter is blocked on a GPU wait (a signal's end rescans it). */
function anyQueueBlocked(world: World): boolean {
  for (const adapter of world.machine.adapters) if (adapter.hardware.blockedQueues() > 0) return true;
  return false;
}

/**
 * The CurrentValue words of the cross-adapter fences (one word a group, shared by its records on
 * every adapter: the World's records that share a word), in the World's order.
 */
function crossAdapterWords(world: World): number[] {
  if (world.machine.os.inspect.crossAdapterFences === 0) return [];
  const words = world.fences.map((f) => f.global.cvPhys);
  return words.filter((word, i) => words.indexOf(word) === i && words.lastIndexOf(word) !== i);
}

/**
 * The next step of the OS operation in flight (src/os/waits.ts), with what its ends may touch of the
 * cross-adapter fences (osStepTableFootprint, crossAdapterEnds).
 */
function osStepFootprint(world: World): Footprint | undefined {
  const step = osStepTableFootprint(world);
  if (!step) return undefined;
  const ends = crossAdapterEnds(world);
  return ends.length ? { reads: [...step.reads, ...ends.map((word) => `cv:@${word}`)], writes: [...step.writes, ...ends.map((word) => `xa:@${word}`)] } : step;
}

/**
 * The CurrentValue words of the cross-adapter groups the ends of the OS operation in flight read, or [].
 * An operation's ends run inside its last step (src/os/waits.ts): a CPU signal's (afterCpuSignal) and an
 * interrupt's (afterInterrupt, afterLogInterrupt) read each cross-adapter fence's CurrentValue, note it in
 * its group's signals and as last propagated, and queue the other adapters' notifications with it. Every
 * step of such an operation is taken to read those words (which step is the last one is not told here).
 * (npm run fuzz:explore, seeds 2717 and 2418: a CPU signal's retire step, and its CMP check d, were slept
 * beside a GPU signal's drain, or taken eagerly before it, of the same cross-adapter fence, and the
 * propagated value differed: quiet states lost untimed.)
 */
function crossAdapterEnds(world: World): number[] {
  const op = world.machine.os.inspect.operation;
  if (!op || !op.ends.length) return [];
  return crossAdapterWords(world);
}

/** The table's footprint of the OS operation's next step (the header), its ends aside. */
function osStepTableFootprint(world: World): Footprint | undefined {
  const machine = world.machine;
  const op = machine.os.inspect.operation;
  if (!op) return undefined;
  // An operation's ends run inside its last step (src/os/waits.ts), and an interrupt's end reads its adapter's logs
  // for the timeline (Logs.afterInterrupt, which flushes their write buffers and moves the reader's positions). The
  // key covers the logs where they are not abstracted (an adapter with the optimized interrupt), so there any step
  // of such an operation may touch them: everything. (npm run fuzz:explore, seed 527: a CMP check d that ended an
  // interrupt's NF-09 loop was slept beside a signal's log write, and a quiet state was lost untimed.)
  if (!logsAbstracted(machine) && op.ends.some((end) => end.owner === 'interrupts')) return undefined;
  switch (op.phase) {
    case 'retire': {
      const thread = op.retiring[0].owner.tag as CpuThread | undefined;
      const known = world.threads.some((t) => t.thread === thread);
      return !known ? undefined : { reads: [], writes: ['os', threadResource(thread!)] };
    }
    case 'resample': {
      const batch = op.batch!;
      return { reads: [`cv:@${machine.os.inspect.fenceKey(batch.fences[batch.resampled]).cvPhys}`], writes: ['os'] };
    }
    case 'monitored-write': {
      const batch = op.batch!;
      const adapter = machine.adapters[batch.adapter.index];
      // The DDI's first step: only the reference driver's is known (any other driver's may do anything).
      if (Object.getPrototypeOf(adapter.driver) !== ReferenceDriver.prototype || Object.prototype.hasOwnProperty.call(adapter.driver, 'updateMonitoredValues')
          || adapter.hardware.granularity !== 'step') return undefined;
      return cmpStepFootprint(world, batch.adapter.index, 'write-monitored-value', machine.os.inspect.fenceKey(batch.fences[0]).coreFence);
    }
    case 'ddi': {
      const steps = op.ddi!.steps;
      if (Object.getPrototypeOf(steps) !== MonitoredValueUpdateSteps.prototype) return undefined;
      const update = steps as MonitoredValueUpdateSteps;
      return cmpStepFootprint(world, op.ddi!.adapterIndex, update.next, update.fences[update.index], update.currentValue);
    }
    default: return undefined; // a cross-adapter notification, the log reader's read or fallback: the OS's scans
  }
}

/** One of the reference driver's CMP steps (MonitoredValueUpdateSteps) on adapter `a`, for core fence `coreFence`. */
function cmpStepFootprint(world: World, a: number, step: MonitoredValueUpdateSteps['next'], coreFence: number, currentValue = 0n): Footprint {
  const core = world.machine.adapters[a].core;
  const cv = core.fenceCurrentValueAddress(coreFence);
  const buffered = (): string[] => {
    const mv = core.cmpPendingWrite();
    if (!mv) return [];
    const owner = world.fences.find((f) => f.adapter === a && !f.global.destroyed && core.fenceMonitoredValueAddress(f.global.coreFence) === mv);
    return [owner ? `mv:${a}.@${owner.global.cvPhys}` : '*'];
  };
  switch (step) {
    case 'write-monitored-value': return { reads: [], writes: ['os', `cmp:${a}`, ...buffered()] };
    case 'barrier': {
      const writes = ['os', `cmp:${a}`, ...buffered()];
      // Every engine's write buffer, full or not: a store an engine buffers before the barrier runs is drained by it.
      for (let e = 0; e < world.machine.adapters[a].hardware.engineCount; e++) {
        writes.push(`wb:${a}.${e}`);
        const pending = core.enginePendingWrite(e);
        if (pending) writes.push(`cv:@${pending}`);
      }
      return { reads: [], writes };
    }
    case 'read-current-value': return { reads: [`cv:@${cv}`], writes: ['os'] };
    case 'check': {
      // It raises engine 0's interrupt iff what step c read > MonitoredValue as the CMP holds it; no GPU step changes either.
      const mvPhys = core.fenceMonitoredValueAddress(coreFence);
      const held = core.cmpPendingWrite() === mvPhys ? u64(core.cmpPendingValue()) : u64(core.cpuReadMonitoredValue(coreFence));
      return { reads: [`cmp:${a}`, `mv:${a}.@${cv}`], writes: currentValue > held ? ['os', `irq:${a}.0`] : ['os'] };
    }
  }
}

/** What one engine may still touch, from this state to the end (its current step included). */
interface EngineFuture { adapter: number; engine: number; footprint: Footprint }

/**
 * Everything each engine may still touch, from this state to the end: its write buffer and
 * interrupt, its queues' positions and logs, and for each fence it still signals (its signal in
 * flight, its store still buffered, the fences of each of its queues with commands left) that
 * fence's CurrentValue (written, read), MonitoredValue in memory (read) and in-flight count.
 * Every footprint an engine step of it can have from here on (footprint()) is within it.
 * Undefined when that cannot be told (a blocked queue, a doorbell, a head command that is not a
 * signal, a queue the World does not know, e.g. a kernel-mode context's).
 * A scenario file's queue may hold GPU waits after its head signal: their reads of other fences'
 * CurrentValues are not named here, which is safe for the one use that can meet them (isEager's
 * OS steps, which never write a CurrentValue); a wait that blocks makes this undefined from then
 * on. test/explore-scenario-reduction.test.ts searches such queues both ways.
 */
function engineFutures(world: World): EngineFuture[] | undefined {
  const machine = world.machine;
  const futures: EngineFuture[] = [];
  const crossAdapter = crossAdapterWords(world);
  for (let a = 0; a < machine.adapters.length; a++) {
    const adapter = machine.adapters[a];
    if (adapter.state !== 'running' || adapter.hardware.doorbell || adapter.hardware.blockedQueues() > 0) return undefined;
    const core = adapter.core;
    const engines = adapter.hardware.engineCount;
    const fencesOf: Set<number>[] = Array.from({ length: engines }, () => new Set<number>()); // CurrentValue addresses
    const queuesOf: number[][] = Array.from({ length: engines }, () => []);
    for (let e = 0; e < engines; e++) {
      const signal = adapter.hardware.signalInFlight(e);
      if (signal) fencesOf[e].add(core.fenceCurrentValueAddress(signal.fence));
      const buffered = core.enginePendingWrite(e);
      if (buffered) fencesOf[e].add(buffered);
    }
    for (const info of adapter.hardware.queues.values()) {
      queuesOf[info.engine].push(info.id);
      if (core.queueState(info.id) === machine.layout.queueStateFree || core.queuePending(info.id) === 0) continue;
      const q = world.queues.find((x) => x.adapter === a && x.coreQueue === info.id);
      if (!q || core.queueHeadOp(info.id) !== machine.layout.opSignal) return undefined;
      for (const f of q.fences) fencesOf[info.engine].add(world.fences[f].global.cvPhys);
    }
    for (let e = 0; e < engines; e++) {
      const reads = queuesOf[e].map((id) => `q:${a}.${id}`);
      const writes: string[] = [];
      if (fencesOf[e].size) {
        writes.push(`wb:${a}.${e}`, `irq:${a}.${e}`, ...queuesOf[e].flatMap((id) => [`q:${a}.${id}`, `log:${a}.${id}`]));
        for (const cv of fencesOf[e]) {
          writes.push(`cv:@${cv}`, `life:${a}.@${cv}`, ...(crossAdapter.includes(cv) ? [`xa:@${cv}`] : []));
          reads.push(`mv:${a}.@${cv}`, `cv:@${cv}`);
        }
      }
      futures.push({ adapter: a, engine: e, footprint: { reads, writes } });
    }
  }
  return futures;
}

/**
 * Everything any GPU step may still touch, from this state to the end (engineFutures, all
 * engines at once). While an OS operation holds the lock the GPU's steps are the only others
 * that can run, so an OS step independent of this is independent of every step that could
 * come before it.
 */
function gpuFuture(world: World): Footprint | undefined {
  const futures = engineFutures(world);
  if (!futures) return undefined;
  return { reads: futures.flatMap((f) => f.footprint.reads), writes: futures.flatMap((f) => f.footprint.writes) };
}

/**
 * The full reduction's persistent set at a state where an OS operation holds the lock (Godefroid
 * ch. 4): the OS's next step, and the current step of each engine whose remaining work conflicts
 * with a step already in the set, until no engine outside conflicts with one inside. Returns the
 * indexes into `enabled` (whose footprints are `footprints`) of its steps, or undefined: every
 * enabled step (the set would hold them all, or cannot be told).
 *
 * Why it is persistent: while the lock is held the only enabled steps are the OS's one next step
 * and the engines' steps (the scheduler's gate holds interrupts, threads and timeouts back; with
 * a fault left to inject (--faults) there is no set). A path from here that takes no step of the
 * set never takes the OS's step, so the operation stays in flight and every step on the path is
 * a step of an engine outside the set (an engine inside cannot move without its current step).
 * Each of those is within its engine's future (engineFutures), which meets no footprint in the
 * set; and no such step changes a footprint in the set: an engine step's depends on its own
 * engine's state, the OS step's on the OS's and the CMP's (the barrier's names every engine's
 * write buffer, so every engine with work left is in a set that holds it). So each is
 * independent of every step in the set.
 *
 * Visibility: a set that is not every enabled step holds no step that writes a CurrentValue
 * (what current-value-not-torn reads), so the states it leaves out differ from those it keeps
 * only in what no "always" invariant judged there reads (docs/EXPLORER.md, "The search and its
 * reductions", says why for each).
 *
 * For the generated machine; a scenario file's (whose queues hold waits, work and fence writes,
 * whose futures engineFutures does not tell) are one component's steps (componentPersistentSet).
 */
export function persistentSet(world: World, enabled: readonly ScheduledEvent[], footprints: readonly Footprint[]): number[] | undefined {
  if (world.kind === 'scenario') return componentPersistentSet(world, enabled);
  const machine = world.machine;
  if (!machine.os.lockHeld || world.explorerOptions().length) return undefined;
  const os = enabled.findIndex((event) => event.owner === 'dxgkrnl' && event.kind === 'os-step');
  if (os < 0 || touchesEverything(footprints[os])) return undefined;
  // Every other enabled step is an engine's current step (one per engine), on an adapter cut into steps.
  const stepOf = new Map<string, number>();
  for (let i = 0; i < enabled.length; i++) {
    if (i === os) continue;
    const event = enabled[i];
    const a = machine.adapters.findIndex((x) => x.name === event.owner);
    if (a < 0 || (event.kind !== 'engine-tick' && event.kind !== 'engine-step') || machine.adapters[a].hardware.granularity !== 'step') return undefined;
    const engine = `${a}.${event.args.engine as number}`;
    if (stepOf.has(engine)) return undefined;
    stepOf.set(engine, i);
  }
  const futures = engineFutures(world);
  if (!futures) return undefined;
  const members = [os];
  const outside = futures.map((f) => ({ ...f, step: stepOf.get(`${f.adapter}.${f.engine}`) }));
  for (let grew = true; grew;) {
    grew = false;
    for (let k = outside.length - 1; k >= 0; k--) {
      const engine = outside[k];
      const current = engine.step === undefined ? [] : [footprints[engine.step]];
      if (members.every((m) => independent(footprints[m], engine.footprint) && current.every((c) => independent(footprints[m], c)))) continue;
      outside.splice(k, 1);
      if (engine.step !== undefined) members.push(engine.step);
      grew = true;
    }
  }
  // Every enabled step is an engine's with a future, or the OS's (an engine step of an engine engineFutures missed would be outside unexamined).
  for (const i of stepOf.values()) if (!members.includes(i) && !outside.some((o) => o.step === i)) return undefined;
  if (members.length === enabled.length) return undefined;
  if (members.some((m) => footprints[m].writes.some((w) => w === '*' || w.startsWith('cv:')))) return undefined;
  return members.sort((x, y) => x - y);
}

const touchesEverything = (f: Footprint): boolean => f.reads.includes('*') || f.writes.includes('*');

/** No write of one meets a read or write of the other ("*" meets every resource but a thread's). */
export function independent(x: Footprint, y: Footprint): boolean {
  return !conflicts(x.writes, y.writes) && !conflicts(x.writes, y.reads) && !conflicts(y.writes, x.reads);
}

function conflicts(writes: readonly string[], other: readonly string[]): boolean {
  for (const w of writes) {
    for (const o of other) {
      if (w === o) return true;
      if ((w === '*' && !o.startsWith('thread:')) || (o === '*' && !w.startsWith('thread:'))) return true;
      // adapter:<a> (a scenario file's step, src/explore/components.ts) meets every resource of adapter a.
      if ((w.startsWith('adapter:') || o.startsWith('adapter:')) && resourceAdapter(w) >= 0 && resourceAdapter(w) === resourceAdapter(o)) return true;
    }
  }
  return false;
}

/**
 * Steps the full reduction takes as soon as they are enabled, exploring no
 * alternative (a persistent set of one step): each is independent of every
 * other step, stays enabled until taken, and changes nothing an "always"
 * invariant reads, so any interleaving is equivalent to one that takes it at
 * once. They are:
 *   - a signal's log steps (2 logWriteEntry, 3 logAdvance) when the logs are
 *     left out of the state (no optimized interrupt: only the timeline reads them);
 *   - a waiter thread resuming after its wait (it only ends its own thread);
 *   - an engine tick that finds nothing to run while none of the engine's
 *     queues is blocked (nothing the explorer's machine does gives it work later);
 *   - an OS operation's step that touches only the OS's own state, the CMP's
 *     write buffer and the thread it wakes (retiring a waiter; the reference
 *     driver's step a with the CMP's buffer empty): while the operation holds
 *     the OS's lock only GPU steps can run besides it, and none of them
 *     touches those; the one invariant that reads them (monitored-value) is
 *     judged only where no operation is in flight.
 * None of the GPU's or the OS's while the explorer may still inject a fault (--faults).
 */
export function isEager(world: World, event: ScheduledEvent, logsAbstracted: boolean): boolean {
  const machine = world.machine;
  const a = machine.adapters.findIndex((x) => x.name === event.owner);
  // A fault the explorer may still inject (--faults) comes between any two steps and touches everything (it
  // stops engines, drops their work, joins the OS's operation): no GPU or OS step is independent of it, so
  // none is taken eagerly while one is left; a thread's own last step is (a fault never touches a thread
  // whose wait is over).
  if (world.explorerOptions().length && (a >= 0 || event.owner === 'dxgkrnl')) return false;
  if (a >= 0) {
    const adapter = machine.adapters[a];
    if (adapter.hardware.granularity !== 'step' || adapter.state !== 'running') return false;
    const e = event.args.engine as number;
    if (event.kind === 'engine-step') {
      const phase = adapter.hardware.signalInFlight(e)?.phase;
      return logsAbstracted && (phase === 'log-entry' || phase === 'log-advance');
    }
    if (event.kind === 'engine-tick') {
      if (adapter.hardware.peekRunnable(e)) return false;
      return [...adapter.hardware.queues.values()].every((q) => q.engine !== e || adapter.core.queueState(q.id) !== machine.layout.queueStateBlocked);
    }
    return false;
  }
  const f = footprint(world, event);
  if (event.owner === 'dxgkrnl' && event.kind === 'os-step') {
    // Nothing an "always" invariant judges mid-operation (CurrentValue), nothing any GPU step may still touch;
    // no interrupt raised while latencies are explored (its delivery's latency is a choice, which an eager step never branches on).
    if (f.writes.some((w) => w === '*' || w.startsWith('cv:') || w.startsWith('adapter:') || (world.latencies.bounded && w.startsWith('irq:')))) return false;
    const future = gpuFuture(world);
    return future !== undefined && independent(f, future);
  }
  return f.reads.length === 0 && f.writes.length === 1 && f.writes[0].startsWith('thread:');
}
