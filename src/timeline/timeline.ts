// The fence timeline (LOG-08), the one builder of it: the CPU's "queued"
// events joined with the GPU's log entries into a Chrome JSON trace, which
// Perfetto UI (ui.perfetto.dev) and chrome://tracing open, and which the
// browser page reads back to draw (model.ts: a projection, no rules of its own).
//
//   pid = adapter index + 1            process_name = adapter name
//   tid 1 "Dxgkrnl"                    interrupts (native fence ones from the log reader; monitored fence
//                                      and DMA completed ones from the trace), cross-adapter propagations,
//                                      fallbacks, contract violations, the trace's faults (instants)
//   tid 2… one per queue               GPU time: work slices (from the trace), each wait a
//                                      slice from the GPU reaching it (observed) to its
//                                      unblocking (FenceEndGpuTimestamp), each signal a
//                                      zero-length slice when it executed
//   last pid "CPU"                     a track per waiting thread (its blocked waits, waits satisfied
//                                      at once, timeouts), a track per process's CPU signals
//
// Everything on a queue's track is at its GPU time; the CPU time the user-mode
// driver queued a wait or signal (the "queued" event) is in the slice's args
// (cpuQueuedNs). A wait or signal queued but never logged (still in the ring,
// or lost in an overrun) is an instant at its CPU queued time. A queue's GPU
// operations do not overlap, but slices on one tid must nest, so a queue still
// gets an extra lane ("queue #2"…) if two ever would not. A signal (a GPU's,
// a kernel-mode context's, a CPU's) gets a zero-length child slice at its end
// per wait it unblocked, carrying the flow arrow's start (bind_id + flow_out,
// with the fence and value waited for); the wait gets one at its end carrying
// the arrow's end (bind_id + flow_in). The signal that unblocked a wait is the
// first signal of the same fence (across adapters: the same cross-adapter
// fence) with a value >= the wait's, no later than the wait's end: the rule in
// unblocked-by.ts. Virtual nanoseconds become microseconds (ts, dur).
//
// What no log holds comes from the machine's trace (trace-facts.ts, one pass):
// kernel-mode contexts' GPU waits (held by the OS until their value) and
// signals (fence writes, packets the OS runs) on monitored fences, which have
// no log; CPU signals; CPU waits that blocked ("waiter added" → "waiter
// woken"/"waiter released") or were satisfied at once; interrupts other than
// native fence ones; faults. GPU work and cross-adapter propagations are read
// from it too (addGpuWork). With the trace off (or its oldest events dropped,
// limits.traceEvents) those are absent.
//
// Cross-adapter fences (XA-04): the interrupt that carried a signal on to
// other adapters, and woke nobody on its own, is named a propagation
// interrupt; each adapter told the value gets a "cross-adapter propagation"
// instant on its Dxgkrnl track.
//
// Exporting reads the logs first (as an interrupt would) so every entry the
// GPU wrote is in the timeline. The OS keeps only the most recent records of
// each kind (createMachine option limits.timelineRecords): a long run's timeline is
// its recent window, and otherData says how many records were dropped. At the
// window's edge a log entry whose queued event was dropped is drawn from its
// GPU times alone.

import type { Machine } from '../machine/machine.js';
import type { LogEntryRecord, LogHistory, QueuedEvent } from '../os/inspect.js';
import { hex } from '../base/wddm.js';
import { canonicalFence, unblockedBy } from './unblocked-by.js';
import { traceFacts, type CpuSignal, type CpuWait, type Flow, type Operation, type TraceFacts } from './trace-facts.js';

export interface ChromeTraceEvent {
  name: string;
  ph: 'X' | 'i' | 'M';
  ts: number;
  pid: number;
  tid: number;
  dur?: number;
  cat?: string;
  s?: 't' | 'p' | 'g';
  args?: Record<string, string | number | boolean | null>;
  bind_id?: string;
  flow_in?: boolean;
  flow_out?: boolean;
}

export interface ChromeTrace {
  traceEvents: ChromeTraceEvent[];
  displayTimeUnit: 'ns';
  otherData: Record<string, string | number>;
}

/** Lane index for each [start, end] so that slices within a lane nest; `items` sorted by start, longer first. */
function assignLanes(items: { startNs: number; endNs: number }[]): number[] {
  const lanes: { startNs: number; endNs: number }[][] = [];
  return items.map((item) => {
    for (let k = 0; k < lanes.length; k++) {
      const open = lanes[k];
      while (open.length && open[open.length - 1].endNs <= item.startNs) open.pop();
      const top = open[open.length - 1];
      if (!top || top.endNs >= item.endNs) { open.push(item); return k; }
    }
    lanes.push([item]);
    return lanes.length - 1;
  });
}

const us = (ns: number): number => ns / 1000;

/** A cross-adapter signal carried on by an interrupt, from the trace. */
interface Propagation { timeNs: number; fence: string; value: string; from: string; to: string }
/** An interrupt that carried cross-adapter signals on, from the trace. */
interface PropagationInterrupt { adapter: string; timeNs: number; propagations: number }

/** Builds the Chrome JSON trace of everything the machine's fence logs and queued events hold, with what only the trace holds. */
export function exportTimeline(machine: Machine): ChromeTrace {
  machine.os.readNativeFenceLogs();
  const logs = machine.os.inspect.logs;
  const events: ChromeTraceEvent[] = [];
  const facts = traceFacts(machine);
  const ops = joinedOperations(logs);
  const { propagationInterrupts, propagations } = addGpuWork(machine, ops);
  // a kernel-mode context's work is on its context's track, named as the scenario names it
  for (const op of ops) op.queue = facts.contextNames.get(op.queue) ?? op.queue;
  ops.push(...facts.contextOps);
  const cpuWaits = facts.cpuWaits;
  addFlows(ops, cpuWaits, facts.cpuSignals);
  const adapters = machine.adapters.map((a) => a.os);
  for (const adapter of adapters) adapterEvents(adapter, ops, logs, propagationInterrupts, propagations, facts, events);
  if (cpuWaits.length || facts.cpuSignals.length) cpuEvents(cpuWaits, facts.cpuSignals, adapters.length + 1, events);
  const c = logs.counters;
  const otherData: Record<string, string | number> = { generator: 'wddm-fence', seed: machine.seed, clock: 'virtual ns, shown as us' };
  if (c.queuedDropped + c.entriesDropped + c.interruptsDropped + c.overrunsDropped + c.faultsDropped) {
    // Only the most recent records of each kind are kept (createMachine option limits.timelineRecords): say what is left out.
    Object.assign(otherData, { recordsKeptPerKind: logs.historyRecords, queuedDropped: c.queuedDropped, entriesDropped: c.entriesDropped,
      interruptsDropped: c.interruptsDropped, overrunsDropped: c.overrunsDropped, faultsDropped: c.faultsDropped });
  }
  return { traceEvents: events, displayTimeUnit: 'ns', otherData };
}


/** Join: per queue and kind, log entries in GPU order against queued events in ring order. */
function joinedOperations(logs: LogHistory): Operation[] {
  const ops: Operation[] = [];
  const entriesByKey = new Map<string, LogEntryRecord[]>();
  for (const e of logs.entries) {
    const key = `${e.adapterIndex}/${e.hHwQueue}/${e.kind === 'waits' ? 'wait' : 'signal'}`;
    let list = entriesByKey.get(key);
    if (!list) entriesByKey.set(key, (list = []));
    list.push(e);
  }
  const queuedByKey = new Map<string, QueuedEvent[]>();
  for (const q of logs.queued) {
    const key = `${q.adapterIndex}/${q.hHwQueue}/${q.kind}`;
    let list = queuedByKey.get(key);
    if (!list) queuedByKey.set(key, (list = []));
    list.push(q);
  }
  const keys = [...new Set([...entriesByKey.keys(), ...queuedByKey.keys()])].sort();
  for (const key of keys) {
    const queued = queuedByKey.get(key) ?? [];
    const entries = entriesByKey.get(key) ?? [];
    let cursor = 0;
    for (const entry of entries) {
      let match = -1;
      for (let i = cursor; i < queued.length; i++) {
        if (queued[i].hSyncObject === entry.hNativeFence && queued[i].value === entry.value) { match = i; break; }
      }
      if (match < 0) {
        ops.push(operationOf(entry.kind === 'waits' ? 'wait' : 'signal', undefined, entry));
        continue;
      }
      for (let i = cursor; i < match; i++) ops.push(operationOf(queued[i].kind, queued[i], undefined));
      ops.push(operationOf(queued[match].kind, queued[match], entry));
      cursor = match + 1;
    }
    for (let i = cursor; i < queued.length; i++) ops.push(operationOf(queued[i].kind, queued[i], undefined));
  }

  return ops;
}

/** GPU work, from the trace (actor "adapter/engineN", args.queue), added to `ops`; and the cross-adapter propagations the trace holds. */
function addGpuWork(machine: Machine, ops: Operation[]): { propagationInterrupts: PropagationInterrupt[]; propagations: Propagation[] } {
  const adapterIndex = new Map(machine.adapters.map((a) => [a.name, a.index]));
  const hHwQueueOf = new Map(ops.map((o) => [`${o.adapterIndex}/${o.queue}`, o.hHwQueue]));
  const propagationInterrupts: PropagationInterrupt[] = [];
  const propagations: Propagation[] = [];
  for (const e of machine.trace.events) {
    if (e.kind === 'gpu' && e.name === 'work') {
      const index = adapterIndex.get(e.actor.split('/')[0]);
      if (index === undefined) continue;
      const queue = String(e.args.queue);
      const durationNs = Number(e.args.durationNs);
      ops.push({ adapterIndex: index, hHwQueue: hHwQueueOf.get(`${index}/${queue}`) ?? 0, queue, kind: 'work', durationNs, startNs: e.timeNs, endNs: e.timeNs + durationNs, tid: 0, flowsOut: [] });
    } else if (e.kind === 'os' && e.name.startsWith('propagation interrupt')) {
      propagationInterrupts.push({ adapter: String(e.args.adapter), timeNs: e.timeNs, propagations: Number(e.args.propagations) });
    } else if (e.kind === 'os' && e.name === 'cross-adapter signal propagated') {
      propagations.push({ timeNs: e.timeNs, fence: String(e.args.fence), value: String(e.args.value), from: String(e.args.from), to: String(e.args.to) });
    }
  }

  return { propagationInterrupts, propagations };
}

/** A signal an arrow may start at: a logged GPU signal, a kernel-mode context's, or a CPU signal (one per fence it names). */
interface Source { adapterIndex: number; coreFence?: number; fence: string; value: bigint; timeNs: number; flowsOut: Flow[]; logged: boolean }

/**
 * Two records name the same fence: logged ones of one adapter by the core's fence; logged ones of two adapters by the
 * cross-adapter fence they share (a label with "@"); anything from the trace by its label (canonicalFence).
 */
function sameFence(a: { adapterIndex: number; coreFence?: number; fence?: string }, b: { adapterIndex: number; coreFence?: number; fence?: string }, logged: boolean): boolean {
  if (logged && a.adapterIndex === b.adapterIndex) return a.coreFence === b.coreFence;
  if (a.fence === undefined || b.fence === undefined || canonicalFence(a.fence) !== canonicalFence(b.fence)) return false;
  return !logged || a.fence.includes('@') || b.fence.includes('@');
}

/**
 * Flows: each completed wait (a GPU's, a kernel-mode context's, a CPU's) from the signal that unblocked it (unblocked-by.ts:
 * the first of the same fence with a value >= the wait's, no later than its end). Each fence of a wait on several gets one.
 */
function addFlows(ops: Operation[], cpuWaits: CpuWait[], cpuSignals: CpuSignal[]): void {
  const sources: Source[] = [];
  for (const op of ops) {
    if (op.kind !== 'signal') continue;
    if (op.entry?.coreFence !== undefined) sources.push({ adapterIndex: op.adapterIndex, coreFence: op.entry.coreFence, fence: op.entry.fence ?? '', value: op.entry.value, timeNs: Number(op.entry.endNs), flowsOut: op.flowsOut, logged: true });
    else if (op.traced) op.traced.fences.forEach((fence, i) => sources.push({ adapterIndex: op.adapterIndex, fence, value: op.traced!.values[i], timeNs: op.endNs, flowsOut: op.flowsOut, logged: false }));
  }
  for (const signal of cpuSignals) signal.fences.forEach((fence, i) => sources.push({ adapterIndex: -1, fence, value: signal.values[i], timeNs: signal.timeNs, flowsOut: signal.flowsOut, logged: false }));
  let flowId = 0;
  const draw = (wanted: { adapterIndex: number; coreFence?: number; fence?: string; logged: boolean }, value: bigint, endNs: number, target: string, wait: string): string | undefined => {
    const best = unblockedBy(sources.filter((s) => sameFence(s, wanted, s.logged && wanted.logged)), value, endNs);
    if (!best) return undefined;
    const id = `0x${(++flowId).toString(16)}`;
    best.flowsOut.push({ id, target, wait, fence: canonicalFence(wanted.fence ?? ''), value: value.toString() });
    return id;
  };
  for (const wait of ops) {
    if (wait.kind !== 'wait') continue;
    if (wait.entry && wait.entry.coreFence !== undefined) {
      const entry = wait.entry;
      wait.flowIn = draw({ adapterIndex: wait.adapterIndex, coreFence: entry.coreFence, fence: entry.fence, logged: true }, entry.value, Number(entry.endNs), wait.queue, `${wait.queue}: wait ${entry.fence ?? ''} ${entry.value}`);
    } else if (wait.traced?.outcome === 'unblocked') {
      const { fences, values } = wait.traced;
      const ids = fences.map((fence, i) => draw({ adapterIndex: wait.adapterIndex, fence, logged: false }, values[i], wait.endNs, wait.queue, `${wait.queue}: ${operationName(wait)}`));
      wait.flowIn = ids.find((id) => id !== undefined);
      wait.flowsInMore = ids.filter((id): id is string => id !== undefined && id !== wait.flowIn);
    }
  }
  for (const w of cpuWaits) {
    if (w.status !== 'SUCCESS') continue;
    for (const [fence, value] of w.waited) {
      const id = draw({ adapterIndex: -1, fence, logged: false }, value, w.endNs, `CPU ${w.label}`, `CPU ${w.label}: wait ${fence} ${value}`);
      if (id) w.flowsIn.push(id);
    }
  }
}

/** An adapter's process: its lanes and tids (hardware queues, then queues known only from their work), slices, interrupts, propagations, overruns, faults. */
function adapterEvents(adapter: Machine['adapters'][number]['os'], ops: Operation[], logs: LogHistory, propagationInterrupts: PropagationInterrupt[],
                       propagations: Propagation[], facts: TraceFacts, events: ChromeTraceEvent[]): void {
  const pid = adapter.index + 1;
  events.push({ name: 'process_name', ph: 'M', ts: 0, pid, tid: 0, args: { name: adapter.name } });
  events.push({ name: 'process_sort_index', ph: 'M', ts: 0, pid, tid: 0, args: { sort_index: adapter.index } });
  events.push({ name: 'thread_name', ph: 'M', ts: 0, pid, tid: 1, args: { name: 'Dxgkrnl' } });
  events.push({ name: 'thread_sort_index', ph: 'M', ts: 0, pid, tid: 1, args: { sort_index: 0 } });
  let nextTid = 2;
  const mine = ops.filter((o) => o.adapterIndex === adapter.index);
  // hardware queues by handle, then queues known only from their work (kernel-mode contexts) by name
  const queues = [...new Map(mine.map((o) => [o.queue, o.hHwQueue])).entries()]
    .sort((x, y) => (x[1] === 0 ? 1 : 0) - (y[1] === 0 ? 1 : 0) || x[1] - y[1] || (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  const firstTid = new Map<number, number>();
  for (const [label, hHwQueue] of queues) {
    const order = { work: 0, wait: 1, signal: 2 };
    const queueOps = mine.filter((o) => o.queue === label)
      .sort((x, y) => x.startNs - y.startNs || y.endNs - x.endNs || order[x.kind] - order[y.kind]);
    const lanes = assignLanes(queueOps);
    const tids: number[] = [];
    for (let k = 0; k <= Math.max(...lanes); k++) {
      const tid = nextTid++;
      tids.push(tid);
      const name = hHwQueue ? `${label} (hHwQueue 0x${hHwQueue.toString(16)})` : label;
      events.push({ name: 'thread_name', ph: 'M', ts: 0, pid, tid, args: { name: k === 0 ? name : `${label} #${k + 1}` } });
      events.push({ name: 'thread_sort_index', ph: 'M', ts: 0, pid, tid, args: { sort_index: tid } });
    }
    queueOps.forEach((op, i) => { op.tid = tids[lanes[i]]; });
    if (hHwQueue) firstTid.set(hHwQueue, tids[0]);
  }
  for (const op of mine) events.push(...sliceEvents(op, pid));
  const carried = propagationInterrupts.filter((x) => x.adapter === adapter.name);
  for (const i of logs.interrupts.filter((x) => x.adapterIndex === adapter.index)) {
    const base = i.hHWQueue ? `interrupt (engine ${i.engine}, hHWQueue ${hex(i.hHWQueue)})` : `interrupt (engine ${i.engine}${i.listed === null ? ', no list' : `, ${i.listed} listed`})`;
    // an interrupt that woke nobody here and carried a cross-adapter signal on is a propagation, not a spurious interrupt
    const propagation = carried.find((x) => x.timeNs === i.timeNs);
    const onward = propagation ? propagations.filter((x) => x.from === adapter.name && x.timeNs === i.timeNs) : [];
    events.push({
      name: propagation ? `propagation ${base}: ${onward.map((x) => `${x.fence} = ${x.value} to ${x.to}`).join(', ')}` : base,
      ph: 'i', s: 't', ts: us(i.timeNs), pid, tid: 1, cat: propagation ? 'propagation-interrupt' : 'interrupt',
      args: { engine: i.engine, hHWQueue: i.hHWQueue ? hex(i.hHWQueue) : null, listed: i.listed, ...(propagation ? { propagations: propagation.propagations } : {}) },
    });
  }
  for (const x of propagations.filter((y) => y.to === adapter.name)) {
    events.push({
      name: `cross-adapter propagation: ${x.fence} = ${x.value} from ${x.from}`, ph: 'i', s: 't', ts: us(x.timeNs), pid, tid: 1,
      cat: 'propagation', args: { fence: x.fence, value: x.value, from: x.from },
    });
  }
  for (const o of logs.overruns.filter((x) => x.adapter === adapter.name)) {
    events.push({
      name: `log overrun: ${o.lost} ${o.log} entries lost`, ph: 'i', s: 't', ts: us(o.timeNs), pid,
      tid: firstTid.get(o.hHwQueue) ?? 1, cat: 'overrun', args: { queue: o.queue, log: o.log, lost: o.lost },
    });
  }
  for (const f of logs.faults.filter((x) => x.adapter === adapter.name)) {
    events.push({
      name: f.kind === 'interrupt-queue-destroyed' ? `report: ${f.kind}` : `contract violation: ${f.kind}`, ph: 'i', s: 't',
      ts: us(f.timeNs), pid, tid: (f.hHwQueue !== undefined ? firstTid.get(f.hHwQueue) : undefined) ?? 1,
      cat: f.kind === 'interrupt-queue-destroyed' ? 'report' : 'violation', args: { message: f.message },
    });
  }
  // the trace's other interrupts (monitored fences, DMA completion) and its faults on this adapter: a TDR, a bug check, the adapter removed…
  for (const i of facts.otherInterrupts.filter((x) => x.adapter === adapter.name)) {
    events.push({ name: i.name, ph: 'i', s: 't', ts: us(i.timeNs), pid, tid: 1, cat: 'interrupt', args: plainArgs(i.args) });
  }
  for (const f of facts.faults.filter((x) => x.adapter === adapter.name)) {
    if (f.name === 'native fence log contract violation') continue; // drawn above from the log reader's own record
    events.push({ name: `fault: ${f.name}`, ph: 'i', s: 't', ts: us(f.timeNs), pid, tid: 1, cat: 'fault', args: plainArgs(f.args) });
  }
}

/** A trace event's arguments as a Chrome trace's: strings, numbers and booleans as they are, the rest as JSON. */
function plainArgs(args: Record<string, unknown>): Record<string, string | number | boolean | null> {
  const out: Record<string, string | number | boolean | null> = {};
  for (const [key, value] of Object.entries(args)) out[key] = typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) ?? null;
  return out;
}

/** The CPU's process (`pid`): a track per waiting thread (lanes for waits that overlap), then one per process that signals from the CPU. */
function cpuEvents(cpuWaits: CpuWait[], cpuSignals: CpuSignal[], pid: number, events: ChromeTraceEvent[]): void {
  events.push({ name: 'process_name', ph: 'M', ts: 0, pid, tid: 0, args: { name: 'CPU' } });
  events.push({ name: 'process_sort_index', ph: 'M', ts: 0, pid, tid: 0, args: { sort_index: pid } });
  let nextTid = 1;
  const byLabel = [...new Set(cpuWaits.map((w) => w.label))].sort();
  for (const label of byLabel) {
    const mine = cpuWaits.filter((w) => w.label === label).sort((x, y) => x.startNs - y.startNs || y.endNs - x.endNs);
    const lanes = assignLanes(mine);
    const tids: number[] = [];
    for (let k = 0; k <= Math.max(...lanes); k++) {
      const tid = nextTid++;
      tids.push(tid);
      events.push({ name: 'thread_name', ph: 'M', ts: 0, pid, tid, args: { name: k === 0 ? label : `${label} #${k + 1}` } });
    }
    mine.forEach((w, i) => {
      const tid = tids[lanes[i]];
      const what = `CPU wait ${w.waited.map(([f, v]) => `${f} ${v}`).join(', ')}`;
      events.push({ name: what, ph: 'X', ts: us(w.startNs), dur: us(w.endNs - w.startNs), pid, tid, cat: 'cpu-wait', args: { status: w.status } });
      for (const id of w.flowsIn) events.push(flowIn(id, 'woken', what, w.endNs, pid, tid));
    });
  }
  for (const process of [...new Set(cpuSignals.map((x) => x.process))].sort()) {
    const tid = nextTid++;
    events.push({ name: 'thread_name', ph: 'M', ts: 0, pid, tid, args: { name: `${process} CPU signals` } });
    for (const signal of cpuSignals.filter((x) => x.process === process)) {
      const what = `CPU signal ${signal.fences.map((f, i) => `${f} ${signal.values[i]}`).join(', ')}`;
      events.push({ name: what, ph: 'X', ts: us(signal.timeNs), dur: 0, pid, tid, cat: 'cpu-signal', args: { fences: signal.fences.join(', '), values: signal.values.join(', ') } });
      for (const flow of signal.flowsOut) events.push(flowOut(flow, signal.timeNs, pid, tid));
    }
  }
}

/** A traced wait's or signal's name: "wait f 1, g 2" (a context's packet may name several fences). */
function operationName(op: Operation): string {
  const t = op.traced!;
  return `${op.kind} ${t.fences.map((f, i) => `${f} ${t.values[i]}`).join(', ')}`;
}

function operationOf(kind: 'wait' | 'signal', queued: QueuedEvent | undefined, entry: LogEntryRecord | undefined): Operation {
  const source = (queued ?? entry)!;
  // GPU time when logged: a wait from when the GPU reached it to its unblocking, a signal when it executed;
  // a wait or signal never logged: its CPU queued time.
  const endNs = entry ? Number(entry.endNs) : queued!.cpuTimeNs;
  let startNs = entry ? (kind === 'wait' ? Number(entry.observedNs) : endNs) : queued!.cpuTimeNs;
  if (startNs > endNs) startNs = endNs;
  return {
    adapterIndex: source.adapterIndex, hHwQueue: source.hHwQueue, queue: source.queue, kind, queued, entry,
    startNs, endNs, tid: 0, flowsOut: [],
  };
}

function sliceEvents(op: Operation, pid: number): ChromeTraceEvent[] {
  if (op.kind === 'work') {
    return [{ name: `work ${op.durationNs} ns`, ph: 'X', ts: us(op.startNs), dur: us(op.endNs - op.startNs), pid, tid: op.tid, cat: 'work', args: { durationNs: op.durationNs! } }];
  }
  if (op.traced) {
    // a kernel-mode context's wait (held by the OS until its value, or passed at once) or signal (a fence write, a packet the OS ran)
    const what = operationName(op);
    const out: ChromeTraceEvent[] = [{ name: what, ph: 'X', ts: us(op.startNs), dur: us(op.endNs - op.startNs), pid, tid: op.tid, cat: op.kind,
      args: { fences: op.traced.fences.join(', '), values: op.traced.values.join(', '), ...(op.traced.outcome ? { outcome: op.traced.outcome } : {}), source: 'trace (no log: a kernel-mode context)' } }];
    for (const id of [op.flowIn, ...(op.flowsInMore ?? [])]) if (id) out.push(flowIn(id, 'unblocked', what, op.endNs, pid, op.tid));
    for (const flow of op.flowsOut) out.push(flowOut(flow, op.endNs, pid, op.tid));
    return out;
  }
  const fence = op.queued?.fence ?? op.entry?.fence ?? `handle ${hex(op.entry?.hNativeFence ?? 0)}`;
  const value = (op.queued?.value ?? op.entry?.value ?? 0n).toString();
  const what = `${op.kind} ${fence} ${value}`;
  if (!op.entry) {
    // Queued but never logged: still in the ring, or its entry was lost in an overrun.
    return [{ name: `${what} (queued, no log entry)`, ph: 'i', s: 't', ts: us(op.startNs), pid, tid: op.tid, cat: op.kind, args: { fence, value, cpuQueuedNs: op.startNs } }];
  }
  const args: Record<string, string | number | boolean | null> = {
    fence, value, hNativeFence: hex(op.entry.hNativeFence), slot: op.entry.slot,
    cpuQueuedNs: op.queued ? op.queued.cpuTimeNs : null,
    gpuEndNs: Number(op.entry.endNs),
  };
  if (op.kind === 'wait') { args.gpuObservedNs = Number(op.entry.observedNs); args.outcome = op.entry.observedNs < op.entry.endNs ? 'unblocked' : 'passed'; }
  const slice: ChromeTraceEvent = {
    name: what, ph: 'X', ts: us(op.startNs), dur: us(op.endNs - op.startNs), pid, tid: op.tid, cat: op.kind, args,
  };
  const out: ChromeTraceEvent[] = [slice];
  if (op.flowIn) {
    out.push(flowIn(op.flowIn, 'unblocked', what, op.endNs, pid, op.tid));
  }
  for (const flow of op.flowsOut) out.push(flowOut(flow, op.endNs, pid, op.tid));
  return out;
}

/** An arrow's end: a zero-length child of its wait's slice, at the wait's end. */
function flowIn(id: string, name: string, wait: string, timeNs: number, pid: number, tid: number): ChromeTraceEvent {
  return { name, ph: 'X', ts: us(timeNs), dur: 0, pid, tid, cat: 'flow', bind_id: id, flow_in: true, args: { wait } };
}

/** An arrow's start: a zero-length child of its signal's slice, at the signal's end. */
function flowOut(flow: Flow, timeNs: number, pid: number, tid: number): ChromeTraceEvent {
  return { name: `unblocks ${flow.target}`, ph: 'X', ts: us(timeNs), dur: 0, pid, tid, cat: 'flow', bind_id: flow.id, flow_out: true, args: { wait: flow.wait, fence: flow.fence, value: flow.value } };
}
