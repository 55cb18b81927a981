// A scenario file's independent components: the footprints of its steps that
// the generated machine's table (src/explore/footprint.ts) does not tell, and
// its persistent sets (Godefroid ch. 4), one component's steps at a time.
//
// A component is a set of adapters (and the threads, queues and faults that
// touch them) that nothing links to another: two adapters are linked when a
// cross-adapter fence spans them, when one queue's commands name a fence of
// the other, and when one thread's steps name fences or queues of both
// (linkScenario, from the file, once). A file is not split at all (one
// component) when it holds what every adapter may share: a doorbell, an
// allocation or a command that uses one (VidMm), a thread step other than a
// wait, signal, sleep or submit (destroys, log-buffer recreation: the OS's
// deferred closes and hang checks scan every adapter), or a fault that
// removes a device or an adapter.
//
//   step (its event)                         component                         footprint
//   a GPU step: engine-tick, engine-step     its adapter's                     adapter:<a>, cv of each record on a
//     (one the table does not tell)
//   an interrupt served, a DMA completed     its adapter's                     os, and for each adapter x of the
//     interrupt, a log reader's retry                                            component: adapter:<x>, cv of its
//   a thread's step, its event's timeout     the thread's                        records; each thread of it
//   a CPU wait's timeout                     its waiter's thread's
//   a scenario fault (collapsed interrupts,  its adapter's
//     a forced log overrun)
//   an OS step (one the table does not tell) its operation's (operationOf)
//   anything else (lifetime events, a        none: every component             *
//     doorbell, an injected fault)
//
//   adapter:<a>   everything of adapter a: its engines, queues, contexts, logs, CMP, its records' MonitoredValues
//                 and in-flight counts, and the OS's records of them (a queue's picture, a context's held waits,
//                 its interrupt state); it meets every resource the table names with adapter a (wb:a.e, irq:a.e,
//                 q:a.id, log:a.id, life:a.@cv, mv:a.@cv, cmp:a). CurrentValues are named apart (cv:@phys), since a
//                 cross-adapter fence's records share one.
//   os            the OS's lock and operation in flight, its waiter store, the handle tables: every step that may
//                 take the lock or that the lock holds back writes it (such steps disable one another), so they are
//                 never independent of one another.
// The counters the expectations read (interrupts handled, waiters woken...) are sums: steps of two components
// add to them in either order alike.
//
// The component footprints are used untimed only: timed with latencies at their ends, a search with sleep
// sets and these footprints lost quiet states (60 of 344 on monitored-vs-native's producers, one frame),
// though test/explore-commute.test.ts finds every pair they call independent commuting, each latency choice
// too. Not understood yet; until it is, a timed search keeps "everything" for these steps.
//
// Persistent sets (componentPersistentSet), timed and untimed. Each pending event belongs to a component
// (or to every one).
//   - Lock held by an operation whose work lies in one component K: the set is K's enabled steps (the
//     operation's next step and K's GPU steps). The other enabled steps are other components' GPU steps (the
//     lock's gate holds the rest back), and a path that takes no step of the set never takes the OS step, so
//     the lock stays held and only GPU steps of other components run on it: they touch nothing of K, enable
//     and disable nothing of K (they schedule their own adapter's events), and time cannot pass the OS step's.
//   - Lock free: the first component K whose enabled steps are all GPU steps, which the lock never holds
//     back: the set is those steps. A path outside it takes only other components' steps (K has nothing else
//     due now, and only K's own steps and operations make K work), which touch nothing of K and neither take
//     nor need anything K's GPU steps take; time cannot pass the set's steps either.
// Not a component's every step: an interrupt or a thread's wait of K taken before another component's
// operation reorders the OS's waiter store they share (which slot each waiter gets), and the search lost
// quiet states so (6 of 17 on monitored-vs-native's producers, one frame, untimed).
// None while a fault may be injected (--faults), when a pending event belongs to every component, or when
// one component has every enabled step.
//
// Visibility: the set's steps may write CurrentValues, which the "always" invariants read; they are still
// judged wherever they could fail, since each of them reads one component (a fence's CurrentValue, its
// MonitoredValue and waiters; monitored-value also that no operation holds the lock). A state a set leaves out
// differs from one the search visits only in the other components' parts: the GPU steps of the set's component
// can be taken before the other components' steps on any path, and an operation (whose steps are in every set
// while it holds the lock) taken to its end. docs/EXPLORER.md ("Scenario files: one component at a time")
// says so too; test/explore-scenario-reduction.test.ts checks it against the visited-set search, and that a
// set planted wrong is caught.

import type { ScheduledEvent } from '../base/scheduler.js';
import type { CpuThread } from '../user/runtime.js';
import type { Scenario, GpuCommand } from '../scenario-files/types.js';
import type { World, Components } from './world.js';

/** What a step reads and writes (footprint.ts's Footprint). */
interface Footprint { reads: readonly string[]; writes: readonly string[] }

/** A step of every component. */
export const EVERY = -1;

/** The steps that are the GPU's own (the OS's lock never holds them back). */
const isGpuStep = (event: ScheduledEvent): boolean => event.kind === 'engine-tick' || event.kind === 'engine-step';

/** The file's components: adapters linked by cross-adapter fences, queues and threads (the header). */
export function linkScenario(s: Scenario): Components {
  const adapters = s.machine.adapters.map((a) => a.name);
  const parent = adapters.map((_, i) => i);
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i])));
  const link = (list: number[]) => { for (const i of list.slice(1)) parent[find(i)] = find(list[0]); };
  const adapterOf = (name: string) => adapters.indexOf(name);
  const fenceAdapters = new Map<string, number[]>();
  for (const f of s.fences ?? []) fenceAdapters.set(f.name, [f.adapter, ...(f.crossAdapter ?? [])].map(adapterOf));
  const queueAdapter = new Map<string, number>();
  for (const q of s.queues ?? []) queueAdapter.set(q.name, adapterOf(q.adapter));
  const ofCommands = (commands: readonly GpuCommand[] | undefined): number[] =>
    (commands ?? []).flatMap((c) => [c.wait?.fence, c.signal?.fence, c.fenceWrite?.fence]).flatMap((f) => (f === undefined ? [] : fenceAdapters.get(f) ?? [])).filter((i) => i >= 0);
  let unsplit: string | undefined;
  if (s.machine.doorbell?.enabled) unsplit = 'a cross-adapter doorbell';
  else if ((s.allocations ?? []).length || [...(s.queues ?? []).flatMap((q) => q.commands ?? []), ...(s.threads ?? []).flatMap((t) => t.steps.flatMap((step) => step.submit?.commands ?? []))].some((c) => c.useAllocation)) unsplit = 'allocations (VidMm)';
  else if ((s.faults ?? []).some((f) => f.removeDevice || f.removeAdapter)) unsplit = 'a device or adapter removal';
  const threadAdapters = new Map<string, number[]>();
  for (const f of s.fences ?? []) link(fenceAdapters.get(f.name)!);
  for (const q of s.queues ?? []) link([adapterOf(q.adapter), ...ofCommands(q.commands)]);
  for (const t of s.threads ?? []) {
    const mine: number[] = [];
    for (const step of t.steps) {
      const known = Object.keys(step).every((k) => k === 'wait' || k === 'waitWithEvent' || k === 'signal' || k === 'sleep' || k === 'submit');
      if (!known) unsplit ??= `a thread step that is not a wait, signal, sleep or submit (${t.name}: ${Object.keys(step).join(', ')})`;
      for (const f of [...(step.wait?.fences ?? []), ...(step.waitWithEvent?.fences ?? []), ...(step.signal?.fences ?? [])]) mine.push(...(fenceAdapters.get(f) ?? []));
      if (step.submit) mine.push(queueAdapter.get(step.submit.queue) ?? -1, ...ofCommands(step.submit.commands));
    }
    const named = mine.filter((i) => i >= 0);
    link(named);
    threadAdapters.set(t.name, named);
  }
  if (unsplit !== undefined || adapters.length < 2) {
    return { count: 1, ofAdapter: adapters.map(() => 0), ofThread: new Map((s.threads ?? []).map((t) => [t.name, 0])), ofFault: (s.faults ?? []).map(() => 0), unsplit };
  }
  const roots = [...new Set(adapters.map((_, i) => find(i)))];
  const ofAdapter = adapters.map((_, i) => roots.indexOf(find(i)));
  const ofThread = new Map([...threadAdapters].map(([name, list]) => [name, list.length ? ofAdapter[list[0]] : EVERY]));
  const ofFault = (s.faults ?? []).map((f) => {
    const name = f.collapseInterrupts?.adapter ?? f.forceLogOverrun?.adapter;
    return name === undefined || adapterOf(name) < 0 ? EVERY : ofAdapter[adapterOf(name)];
  });
  return { count: roots.length, ofAdapter, ofThread, ofFault };
}

/** The component of a thread of the world (EVERY when it is not one of the file's). */
function threadComponent(world: World, components: Components, thread: CpuThread | undefined): number {
  const name = world.threads.find((t) => t.thread === thread)?.name;
  return name === undefined ? EVERY : components.ofThread.get(name) ?? EVERY;
}

/** The component whose adapters the OS operation in flight works on (its batch, DDI, fences, waiters, reads, notifications, ends), EVERY when that is more than one or cannot be told. */
function operationComponent(world: World, components: Components): number {
  const op = world.machine.os.inspect.operation;
  if (!op) return EVERY;
  const found = new Set<number>();
  const adapter = (index: number) => found.add(components.ofAdapter[index] ?? EVERY);
  if (op.batch) adapter(op.batch.adapter.index);
  if (op.ddi) adapter(op.ddi.adapterIndex);
  for (const key of [...op.changed, ...op.turn]) adapter(world.machine.os.inspect.fenceKey(key).adapterIndex);
  for (const r of op.retiring) found.add(threadComponent(world, components, r.owner.tag as CpuThread | undefined));
  for (const work of [...op.logReads, ...op.logFallbacks]) adapter(work.adapter.index);
  for (const work of op.notifications) adapter(work.target.index);
  for (const end of op.ends) {
    const from = (end as { adapter?: { index: number } }).adapter;
    const fences = (end as { fences?: readonly { adapter: { index: number } }[] | null }).fences;
    if (from) adapter(from.index);
    else if (end.owner === 'signals' && fences) for (const f of fences) adapter(f.adapter.index);
    else found.add(EVERY);
  }
  return found.size === 1 ? [...found][0] : EVERY;
}

/** The component an event's step belongs to (the header's table). */
export function eventComponent(world: World, components: Components, event: ScheduledEvent): number {
  const machine = world.machine;
  const a = machine.adapters.findIndex((x) => x.name === event.owner);
  if (a >= 0) return event.kind === 'doorbell' ? EVERY : components.ofAdapter[a];
  if (event.owner === 'dxgkrnl') {
    if (event.kind === 'os-step') return operationComponent(world, components);
    if (event.kind === 'wait-timeout') {
      const waiter = machine.os.inspect.pendingWaiterList().find((w) => w.id === event.args.waiter);
      return threadComponent(world, components, waiter?.owner.tag as CpuThread | undefined);
    }
    return EVERY;
  }
  if (event.owner === 'dxgkrnl/logs' && event.kind === 'log-reader-retry') {
    const index = machine.adapters.findIndex((x) => x.name === event.args.adapter || x.index === event.args.adapter);
    return index < 0 ? EVERY : components.ofAdapter[index];
  }
  if (event.owner === 'scenario' && event.kind === 'fault') return components.ofFault[event.args.index as number] ?? EVERY;
  if (event.kind === 'thread-resume' || event.kind === 'thread-event-timeout') {
    const thread = world.threads.find((t) => t.process.owner === event.owner && t.thread.index === event.args.thread);
    return thread ? threadComponent(world, components, thread.thread) : EVERY;
  }
  return EVERY;
}

/** The CurrentValue words of adapter a's records. */
const currentValuesOf = (world: World, a: number): string[] => world.fences.filter((f) => f.adapter === a).map((f) => `cv:@${f.global.cvPhys}`);

/**
 * The footprint of a scenario file's step that the table of footprint.ts does not tell (the header's table),
 * or undefined: everything.
 */
export function componentFootprint(world: World, event: ScheduledEvent): Footprint | undefined {
  const components = world.components?.();
  // Timed with latencies at their ends: not used (a search with sleep sets and these footprints lost quiet states
  // there, though every pair they call independent commutes, each latency choice too: docs/EXPLORER.md).
  if (!components || world.latencies.bounded) return undefined;
  const a = world.machine.adapters.findIndex((x) => x.name === event.owner);
  if (a >= 0 && isGpuStep(event)) return { reads: [], writes: [`adapter:${a}`, ...currentValuesOf(world, a)] };
  const component = eventComponent(world, components, event);
  if (component === EVERY) return undefined;
  const writes = ['os'];
  world.machine.adapters.forEach((_, x) => { if (components.ofAdapter[x] === component) writes.push(`adapter:${x}`, ...currentValuesOf(world, x)); });
  for (const t of world.threads) if (components.ofThread.get(t.name) === component) writes.push(`thread:${t.thread.process.kernel.slot}.${t.thread.index}`);
  return { reads: [], writes };
}

/** The adapter a resource the footprints name belongs to (-1: none, a CurrentValue word or the OS's). */
export function resourceAdapter(resource: string): number {
  const match = /^(?:adapter|wb|irq|q|log|life|mv|cmp):(\d+)/.exec(resource);
  return match ? Number(match[1]) : -1;
}

/**
 * The persistent set of a scenario file's state (the header): the indexes into `enabled` of one component's
 * steps, or undefined (every enabled step).
 */
export function componentPersistentSet(world: World, enabled: readonly ScheduledEvent[]): number[] | undefined {
  const components = world.components?.();
  if (!components || components.count < 2 || world.explorerOptions().length) return undefined;
  const machine = world.machine;
  // Every pending event, due now or later, belongs to one component.
  for (const event of machine.scheduler.pendingEvents()) if (eventComponent(world, components, event) === EVERY) return undefined;
  const of = enabled.map((event) => eventComponent(world, components, event));
  // Lock held: the operation's component (the other enabled steps are GPU steps of the others). Free: the first one
  // whose enabled steps are all GPU steps.
  let chosen = -1;
  if (machine.os.lockHeld) chosen = of[enabled.findIndex((event) => event.owner === 'dxgkrnl' && event.kind === 'os-step')] ?? -1;
  else for (let k = 0; k < components.count && chosen < 0; k++) if (of.includes(k) && of.every((c, i) => c !== k || isGpuStep(enabled[i]))) chosen = k;
  if (chosen < 0) return undefined;
  const members = of.flatMap((c, i) => (c === chosen ? [i] : []));
  return members.length < enabled.length ? members : undefined;
}
