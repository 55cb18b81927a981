// The stuck report (machine.stuck()): what is still blocked, and why it can
// never move: it waits on itself (a deadlock), for a value nothing in the
// machine will signal (never signalled), or for a value CurrentValue already
// holds, so the wake-up that should have come was lost (a lost wake-up).
//
// Read it when the machine is quiet (machine.run() returned): then every item
// below waits forever unless code outside the machine (yours, after run())
// signals something. Called mid-run it lists what is blocked at that moment.
//
//   stuck items                       each needs …                      … which can come from
//   ─────────────────────────────────────────────────────────────────────────────────────────
//   hardware queue blocked on a wait  fence F ≥ V                       a signal of F (≥ V) queued in a
//   kernel-mode context held by one   every unmet fence of its wait       hardware queue or context, or an
//   CPU waiter (no timeout)           wait-all: every unmet fence;        unfinished CPU thread whose
//                                     wait-any: one of them               process holds a handle to F
//   CPU thread blocked in a wait      its waiter
//   CPU thread blocked on an event    a pending waitWithEvent that sets it
//
// A CPU thread's future is its own: one made with createThread(name, body,
// { mayStillSignal }) says what it may still signal (the scenario runner says
// it from the steps left), and only that counts; one that says nothing may
// signal any fence its process holds a handle to.
//
// A fence is named by its CurrentValue word, so every record of a
// cross-adapter fence is the same fence here. Three findings, each for what it is:
//   lost wake-up    an item waits for values CurrentValue already holds (a
//                   queue, context or waiter nobody woke: e.g. a driver without
//                   the CMP's barrier). It needs nothing, so it is in no cycle.
//                   A CPU waiter is judged by the rule machine.lostWakeups()
//                   uses (lost-wakeups.ts, dueWaits); its text is said there
//                   (stuckText marks the waiter's line "[lost wake-up]").
//   deadlock        the greatest set D of stuck items such that each has a need
//                   whose sources are all in D (and there is at least one):
//                   nothing inside the machine can ever release them. Each cycle
//                   of needs inside D is reported; items of D not on a cycle are
//                   blocked behind one.
//   never signalled an item outside D with a need no source in the machine can
//                   meet (no queued GPU signal, no CPU thread that may still
//                   signal it, no pending wait that sets the event): only code
//                   outside the machine (yours, after run()) could release it.

import type { FenceView as GlobalFence, HwQueueView as OsHwQueue, OsInspector } from '../os/inspect.js';
import type { CpuThread, RuntimeProcess, ThreadSignal } from '../user/runtime.js';
import type { Scheduler } from '../base/scheduler.js';
import { dueWaits, notificationInFlight } from './lost-wakeups.js';

export interface StuckWait {
  fence: string;
  value: bigint;
  currentValue: bigint;
  /** Its last handle was destroyed; the storage lives while GPU commands name it. */
  fenceDestroyed: boolean;
}

export interface StuckQueue {
  /** "hardware queue" (user-mode submission) or "kernel-mode context". */
  kind: 'hardware queue' | 'kernel-mode context';
  adapter: string;
  process: string;
  queue: string;
  /** The wait at its head (a context's GPU wait may name several fences: all must be reached). */
  waits: StuckWait[];
  /** Signals queued behind it, in order. */
  queuedSignals: { fence: string; value: bigint }[];
  deadlocked: boolean;
}

export interface StuckWaiter {
  process: string;
  label: string;
  mode: 'all' | 'any';
  waits: StuckWait[];
  /** The thread blocked in it, or the event it sets (waitWithEvent). */
  thread?: string;
  event?: string;
  deadlocked: boolean;
}

export interface StuckThread {
  process: string;
  thread: string;
  /** "a wait (waiter …)", "event …". */
  blockedOn: string;
  deadlocked: boolean;
}

export interface Deadlock {
  /** The items of the cycle, each needing the next (the last needs the first). */
  cycle: string[];
  /** One line per item: what it waits for and where that would come from. */
  text: string;
}

/** A stuck item that waits for values CurrentValue already holds: the wake-up was lost. */
export interface StuckLostWakeup {
  item: string;
  waits: StuckWait[];
  text: string;
}

/** A stuck item (not deadlocked) with a need nothing in the machine can meet. */
export interface NeverSignalled {
  item: string;
  /** What it waits for, in words ("waits for f >= 3 (CurrentValue 1)", "waits for event E"). */
  need: string;
  text: string;
}

export interface StuckReport {
  /** Anything at all is blocked. */
  stuck: boolean;
  queues: StuckQueue[];
  waiters: StuckWaiter[];
  threads: StuckThread[];
  deadlocks: Deadlock[];
  lostWakeups: StuckLostWakeup[];
  neverSignalled: NeverSignalled[];
}

interface Need { what: string; sources: Item[]; kind: 'fence' | 'event' | 'waiter' }
interface Item {
  name: string;
  /** Will move on its own (running, sleeping, a timeout on its way). */
  alive: boolean;
  needs: Need[];
  /** Fence words it would signal, with values (queues, contexts); threads: every word their process holds a handle to. */
  signals: { word: number; value: bigint }[];
  anyValue: boolean;
  report?: { deadlocked: boolean };
}

const lostText = (item: string, waits: StuckWait[]) =>
  `lost wake-up: ${item} still waits for ${waits.map(waitText).join(' and ')}: the value is there, but the wake-up never came and nothing will wake it`;

const waitText = (w: StuckWait) => `${w.fence} >= ${w.value} (CurrentValue ${w.currentValue}${w.fenceDestroyed ? ', fence destroyed' : ''})`;

function stuckWait(fence: GlobalFence, value: bigint): StuckWait {
  return { fence: fence.label, value, currentValue: fence.destroyed ? 0n : fence.peekValue(), fenceDestroyed: fence.destroyPending || fence.destroyed };
}

/** A need of a stuck item on fences, resolved to its sources once every item exists. */
interface PendingNeed { item: Item; what: string; waits: readonly { readonly fence: GlobalFence; readonly value: bigint }[] }
/** The report as it is gathered: every item, the report's entries, and the needs still to resolve. */
interface Gathering { readonly items: Item[]; readonly report: StuckReport; readonly pendingNeeds: PendingNeed[] }

/** Builds the report from the OS and the processes' CPU threads. */
export function stuckReport(os: OsInspector, processes: readonly RuntimeProcess[], scheduler: Scheduler): StuckReport {
  const g: Gathering = { items: [], report: { stuck: false, queues: [], waiters: [], threads: [], deadlocks: [], lostWakeups: [], neverSignalled: [] }, pendingNeeds: [] };
  gatherQueues(os, g);
  gatherHeldContexts(os, g);
  const waiterItems = gatherWaiters(os, notificationInFlight(scheduler), g);
  gatherThreads(os, processes, waiterItems, g);
  conclude(g);
  return g.report;
}

/** Hardware queues: blocked ones are stuck; any with queued signals is a source. */
function gatherQueues(os: OsInspector, g: Gathering): void {
  for (const adapter of os.adapters) {
    if (adapter.state !== 'running') continue; // a bug-checked adapter is reported as such
    for (const device of adapter.devices) {
      if (device.removed) continue;
      for (const queue of device.queues) {
        const pending = os.inFlight(queue);
        // What the OS knows from the driver's progress reports (it never reads the ring).
        const blocked = queue.gpu.blocked;
        const signals = pending.filter((c) => c.op === 'signal').map((c) => ({ word: c.local.global.cvPhys, value: c.value, fence: c.local.global }));
        if (!blocked) {
          if (signals.length) g.items.push({ name: queueName(queue), alive: true, needs: [], signals, anyValue: false });
          continue;
        }
        const fence = blocked.local.global;
        if (fence.destroyed) continue;
        const value = blocked.value;
        const item: Item = { name: queueName(queue), alive: false, needs: [], signals, anyValue: false };
        const entry: StuckQueue = {
          kind: 'hardware queue', adapter: adapter.name, process: device.process.name, queue: queue.label,
          waits: [stuckWait(fence, value)], queuedSignals: signals.map((s) => ({ fence: s.fence.label, value: s.value })), deadlocked: false,
        };
        item.report = entry;
        g.items.push(item);
        g.report.queues.push(entry);
        if (fence.peekValue() >= value) g.report.lostWakeups.push({ item: item.name, waits: entry.waits, text: lostText(item.name, entry.waits) });
        else g.pendingNeeds.push({ item, what: `waits for ${waitText(entry.waits[0])}`, waits: [{ fence, value }] });
      }
    }
  }
}

/** Kernel-mode contexts held by a GPU wait. */
function gatherHeldContexts(os: OsInspector, g: Gathering): void {
  for (const held of os.heldContexts()) {
    const c = held.context;
    const name = `context ${c.device.adapter.name}/${c.label}`;
    const item: Item = { name, alive: false, needs: [], signals: held.queuedSignals.map((s) => ({ word: s.fence.cvPhys, value: s.value })), anyValue: false };
    const unmet = held.fences.map((fence, i) => ({ fence, value: held.values[i] })).filter((w) => w.fence.peekValue() < w.value);
    const entry: StuckQueue = {
      kind: 'kernel-mode context', adapter: c.device.adapter.name, process: c.device.process.name, queue: c.label,
      waits: unmet.map((w) => stuckWait(w.fence, w.value)), queuedSignals: held.queuedSignals.map((s) => ({ fence: s.fence.label, value: s.value })), deadlocked: false,
    };
    item.report = entry;
    g.items.push(item);
    g.report.queues.push(entry);
    if (!unmet.length) {
      const met = held.fences.map((fence, i) => stuckWait(fence, held.values[i]));
      g.report.lostWakeups.push({ item: name, waits: met, text: lostText(name, met) });
    }
    unmet.forEach((w, i) => g.pendingNeeds.push({ item, what: `waits for ${waitText(entry.waits[i])}`, waits: [w] }));
  }
}

/**
 * CPU waiters; returns the items of the waiters of each owner tag (a CPU thread, an event). A waiter whose wake-up is
 * due (lost-wakeups.ts's dueWaits, the rule machine.lostWakeups() judges by) is a lost wake-up, or, while a notification
 * is on its way (a call mid-run), alive: it is about to be woken.
 */
function gatherWaiters(os: OsInspector, notificationOnItsWay: boolean, g: Gathering): Map<object, Item[]> {
  const waiterItems = new Map<object, Item[]>();
  const waiterById = new Map<number, Item>();
  for (const w of os.pendingWaiterList()) {
    const item: Item = { name: `waiter ${w.label}`, alive: w.timed, needs: [], signals: [], anyValue: false };
    waiterById.set(w.id, item);
    if (w.owner.tag) {
      let list = waiterItems.get(w.owner.tag);
      if (!list) waiterItems.set(w.owner.tag, (list = []));
      list.push(item);
    }
    g.items.push(item);
    if (w.timed) continue;
    const waits = w.waits.map((x) => stuckWait(x.fence, x.value));
    const entry: StuckWaiter = { process: w.owner.process, label: w.label, mode: w.mode, waits, deadlocked: false };
    if (w.owner.thread) entry.thread = w.owner.thread;
    if (w.owner.event) entry.event = w.owner.event;
    item.report = entry;
    g.report.waiters.push(entry);
    const due = dueWaits(w.mode, w.waits);
    if (due.length && notificationOnItsWay) {
      item.alive = true;
    } else if (due.length) {
      const met = due.map((x) => stuckWait(x.fence, x.value));
      g.report.lostWakeups.push({ item: item.name, waits: met, text: lostText(item.name, met) });
    } else if (w.mode === 'any') {
      g.pendingNeeds.push({ item, what: `waits for any of ${waits.map(waitText).join(', ')}`, waits: w.waits });
    } else {
      w.waits.forEach((x, i) => { if (x.fence.destroyed || x.fence.peekValue() < x.value) g.pendingNeeds.push({ item, what: `waits for ${waitText(waits[i])}`, waits: [x] }); });
    }
  }
  return waiterItems;
}

/** CPU threads: unfinished ones are sources for what they say they may still signal, or else for every fence their process holds a handle to. */
function gatherThreads(os: OsInspector, processes: readonly RuntimeProcess[], waiterItems: Map<object, Item[]>, g: Gathering): void {
  for (const process of processes) {
    const words = os.fenceWordsOf(process.kernel);
    const anyOfProcess = [...words].sort((a, b) => a - b).map((word) => ({ word, value: 0n }));
    for (const thread of process.threads) {
      if (thread.state === 'done' || thread.state === 'failed') continue;
      const declared = thread.mayStillSignal?.();
      const signals = declared ? declaredSignals(os, process, declared) : anyOfProcess;
      const item: Item = { name: `thread ${process.name}:${thread.name}`, alive: true, needs: [], signals, anyValue: !declared };
      g.items.push(item);
      const need = threadNeed(thread, waiterItems);
      if (!need) continue;
      item.alive = false;
      item.needs.push(need);
      const entry: StuckThread = { process: process.name, thread: thread.name, blockedOn: need.what.replace(/^is blocked in /, '').replace(/^waits for /, ''), deadlocked: false };
      item.report = entry;
      g.report.threads.push(entry);
    }
  }
}

/** Resolves the needs to their sources, then finds the deadlocked set, its cycles and what is never signalled. */
function conclude(g: Gathering): void {
  const { items, report, pendingNeeds } = g;
  // resolve fence needs to their sources
  const sourcesOf = (fence: GlobalFence, value: bigint): Item[] => items.filter((s) => s.signals.some((x) => x.word === fence.cvPhys && (s.anyValue || x.value >= value)));
  for (const need of pendingNeeds) {
    const sources = [...new Set(need.waits.flatMap((w) => sourcesOf(w.fence, w.value)))];
    need.item.needs.push({ what: need.what, sources, kind: 'fence' });
  }

  // the deadlocked set: greatest fixpoint
  const dead = new Set(items.filter((i) => !i.alive));
  report.stuck = dead.size > 0;
  const proves = (n: Need) => n.sources.length > 0 && n.sources.every((s) => dead.has(s));
  for (let changed = true; changed;) {
    changed = false;
    for (const item of [...dead]) if (!item.needs.some(proves)) { dead.delete(item); changed = true; }
  }
  for (const item of dead) if (item.report) item.report.deadlocked = true;
  report.deadlocks = cyclesOf(items.filter((i) => dead.has(i)), proves);
  // never signalled: outside every deadlock, a need that nothing in the machine can meet
  for (const item of items) {
    if (item.alive || dead.has(item)) continue;
    for (const need of item.needs) {
      if (need.sources.length) continue;
      const nothing = need.kind === 'event' ? 'no pending wait of the machine sets it'
        : 'nothing in the machine will signal it (no queued GPU signal of it, no CPU thread that may still signal it)';
      report.neverSignalled.push({ item: item.name, need: need.what, text: `never signalled: ${item.name} ${need.what}; ${nothing}` });
    }
  }
}

/** What a thread declared it may still signal (createThread's mayStillSignal), as fence words; handles that name no fence are left out. */
function declaredSignals(os: OsInspector, process: RuntimeProcess, declared: readonly ThreadSignal[]): Item['signals'] {
  const signals: Item['signals'] = [];
  for (const s of declared) {
    const word = os.fenceWordAt((s.process ?? process).kernel, s.hSyncObject);
    if (word !== undefined) signals.push({ word, value: BigInt(s.value) });
  }
  return signals;
}

/** What a thread blocked for good needs (undefined: it will move on its own, or is not blocked). */
function threadNeed(thread: CpuThread, waiterItems: Map<object, Item[]>): Need | undefined {
  const block = thread.blockedOn;
  if (thread.state !== 'blocked' || !block || block.op === 'sleep') return undefined;
  if (block.op === 'wait') {
    const waiter = waiterItems.get(thread)?.[0];
    if (!waiter || waiter.alive) return undefined; // completed (it resumes), or a timeout is on its way
    return { what: `is blocked in ${waiter.name}`, sources: [waiter], kind: 'waiter' };
  }
  if (block.timed) return undefined;
  return { what: `waits for event ${block.event.name}`, sources: waiterItems.get(block.event) ?? [], kind: 'event' };
}

const queueName = (queue: OsHwQueue) => `queue ${queue.device.adapter.name}/${queue.label}`;

/** Cycles of "needs" inside the deadlocked set (Tarjan's strongly connected components, in item order). */
function cyclesOf(dead: Item[], proves: (n: Need) => boolean): Deadlock[] {
  const edges = new Map<Item, { to: Item; what: string }[]>();
  for (const item of dead) {
    const out: { to: Item; what: string }[] = [];
    for (const need of item.needs) if (proves(need)) for (const s of need.sources) if (!out.some((e) => e.to === s)) out.push({ to: s, what: need.what });
    edges.set(item, out);
  }
  const index = new Map<Item, number>();
  const low = new Map<Item, number>();
  const stack: Item[] = [];
  const onStack = new Set<Item>();
  const components: Item[][] = [];
  let counter = 0;
  const visit = (v: Item) => {
    index.set(v, counter); low.set(v, counter); counter++;
    stack.push(v); onStack.add(v);
    for (const { to } of edges.get(v)!) {
      if (!index.has(to)) { visit(to); low.set(v, Math.min(low.get(v)!, low.get(to)!)); }
      else if (onStack.has(to)) low.set(v, Math.min(low.get(v)!, index.get(to)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: Item[] = [];
      let w: Item;
      do { w = stack.pop()!; onStack.delete(w); component.push(w); } while (w !== v);
      components.push(component);
    }
  };
  for (const item of dead) if (!index.has(item)) visit(item);
  const order = new Map(dead.map((item, i) => [item, i]));
  const deadlocks: Deadlock[] = [];
  for (const component of components) {
    const members = new Set(component);
    const start = component.reduce((a, b) => (order.get(a)! <= order.get(b)! ? a : b));
    if (component.length === 1 && !edges.get(start)!.some((e) => e.to === start)) continue;
    // walk the cycle through the component from its first item back to it
    const path = findCycle(start, members, edges);
    const lines = path.map((item, i) => {
      const next = path[(i + 1) % path.length];
      const edge = edges.get(item)!.find((e) => e.to === next)!;
      // a thread that said nothing of its future may signal anything its process holds: it is a possible source, not a known one
      return `  ${item.name} ${edge.what}; that ${next.anyValue ? `could come only from ${next.name} (it said nothing of what it will signal; its process holds a handle to the fence)` : `would come from ${next.name}`}`;
    });
    deadlocks.push({ cycle: path.map((i) => i.name), text: `deadlock (${path.length === 1 ? 'an item needs itself' : `a cycle of ${path.length}`}):\n${lines.join('\n')}` });
  }
  return deadlocks.sort((a, b) => order.get(dead.find((d) => d.name === a.cycle[0])!)! - order.get(dead.find((d) => d.name === b.cycle[0])!)!);
}

/** A shortest cycle from `start` back to it inside `members` (breadth first, edges in item order). */
function findCycle(start: Item, members: Set<Item>, edges: Map<Item, { to: Item }[]>): Item[] {
  const previous = new Map<Item, Item>();
  const queue: Item[] = [start];
  const seen = new Set<Item>([start]);
  while (queue.length) {
    const item = queue.shift()!;
    for (const { to } of edges.get(item)!) {
      if (to === start) {
        const path = [item];
        while (path[0] !== start) path.unshift(previous.get(path[0])!);
        return path;
      }
      if (!members.has(to) || seen.has(to)) continue;
      seen.add(to);
      previous.set(to, item);
      queue.push(to);
    }
  }
  return [start];
}

/** The report as summary lines (empty when nothing is stuck). */
export function stuckText(report: StuckReport): string[] {
  if (!report.stuck) return [];
  const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
  const findings = [report.deadlocks.length ? count(report.deadlocks.length, 'deadlock') : '', report.lostWakeups.length ? count(report.lostWakeups.length, 'lost wake-up') : '',
    report.neverSignalled.length ? `${report.neverSignalled.length} never signalled` : ''].filter(Boolean);
  const lines = [`  STUCK: ${count(report.queues.length, 'queue')} blocked, ${count(report.waiters.length, 'CPU waiter')} pending, ${count(report.threads.length, 'CPU thread')} unfinished${findings.map((f) => `, ${f}`).join('')}`];
  const mark = (deadlocked: boolean) => (deadlocked ? ' [deadlocked]' : '');
  for (const q of report.queues) {
    lines.push(`    ${q.kind} ${q.adapter}/${q.queue} (${q.process}) waits for ${q.waits.map(waitText).join(' and ')}` +
      `${q.queuedSignals.length ? `; queued behind it: ${q.queuedSignals.map((s) => `signal(${s.fence}, ${s.value})`).join(', ')}` : ''}${mark(q.deadlocked)}`);
  }
  // A CPU waiter's lost wake-up is said once, by machine.lostWakeups() (the summary's LOST WAKE-UPS); here its line is marked.
  const lostWaiters = new Set(report.lostWakeups.map((l) => l.item).filter((item) => item.startsWith('waiter ')));
  for (const w of report.waiters) {
    const by = w.thread ? `thread ${w.thread}` : w.event ? `sets event ${w.event}` : 'no thread';
    lines.push(`    CPU waiter ${w.label} (${w.process}, ${by}) waits for ${w.mode === 'any' ? 'any of ' : ''}${w.waits.map(waitText).join(w.mode === 'any' ? ', ' : ' and ')}` +
      `${mark(w.deadlocked)}${lostWaiters.has(`waiter ${w.label}`) ? ' [lost wake-up]' : ''}`);
  }
  for (const t of report.threads) lines.push(`    CPU thread ${t.process}:${t.thread} is blocked on ${t.blockedOn}${mark(t.deadlocked)}`);
  for (const d of report.deadlocks) lines.push(...d.text.split('\n').map((l) => `    ${l}`));
  for (const l of report.lostWakeups) if (!lostWaiters.has(l.item)) lines.push(`    ${l.text}`);
  for (const n of report.neverSignalled) lines.push(`    ${n.text}`);
  return lines;
}
