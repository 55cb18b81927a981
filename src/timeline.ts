// The fence timeline (LOG-08): the CPU's "queued" events joined with the GPU's
// log entries into a Chrome JSON trace, which Perfetto UI (ui.perfetto.dev)
// and chrome://tracing open.
//
//   pid = adapter index + 1            process_name = adapter name
//   tid 1 "Dxgkrnl"                    interrupts, fallbacks, contract violations (instants)
//   tid 2… one per hardware queue      each wait/signal a slice: queued (CPU time at
//          (+ extra lanes)             submit) → executed / unblocked (FenceEndGpuTimestamp)
//
// Slices on one tid must nest, but a queue's operations overlap (a later one is
// queued before an earlier one finished): each queue gets as many lanes (tids)
// as it needs, named "queue", "queue #2", …, and each slice goes in the first
// lane where it nests. A signal gets a zero-length child slice at its GPU end
// per wait it unblocked, carrying the flow arrow's start (bind_id + flow_out);
// the wait gets one at its GPU end carrying the arrow's end (bind_id + flow_in),
// so the arrow joins the two GPU moments. The signal that unblocked a wait
// is the first signal of the same fence with a value >= the wait's, in GPU time
// no later than the wait's end. Virtual nanoseconds become microseconds (ts, dur).
//
// Exporting reads the logs first (as an interrupt would) so every entry the
// GPU wrote is in the timeline.

import type { Machine } from './machine.js';
import type { LogEntryRecord, QueuedEvent } from './os/logs.js';

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

interface Operation {
  adapterIndex: number;
  hHwQueue: number;
  queue: string;
  kind: 'wait' | 'signal';
  queued?: QueuedEvent;
  entry?: LogEntryRecord;
  startNs: number;
  endNs: number;
  tid: number;
  flowIn?: string;
  flowsOut: { id: string; wait: Operation }[];
}

const us = (ns: number): number => ns / 1000;

/** Builds the Chrome JSON trace of everything the machine's fence logs and queued events hold. */
export function exportTimeline(machine: Machine): ChromeTrace {
  const logs = machine.os.logs;
  logs.readAll();
  const events: ChromeTraceEvent[] = [];
  const ops: Operation[] = [];

  // Join: per queue and kind, log entries in GPU order against queued events in ring order.
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

  // Flows: each completed wait from the first signal that satisfied it.
  const signals = ops.filter((o) => o.kind === 'signal' && o.entry?.coreFence !== undefined);
  let flowId = 0;
  for (const wait of ops) {
    if (wait.kind !== 'wait' || !wait.entry || wait.entry.coreFence === undefined) continue;
    let best: Operation | undefined;
    for (const s of signals) {
      if (s.adapterIndex !== wait.adapterIndex || s.entry!.coreFence !== wait.entry.coreFence) continue;
      if (s.entry!.value < wait.entry.value || s.entry!.endNs > wait.entry.endNs) continue;
      if (!best || s.entry!.endNs < best.entry!.endNs) best = s;
    }
    if (!best) continue;
    const id = `0x${(++flowId).toString(16)}`;
    best.flowsOut.push({ id, wait });
    wait.flowIn = id;
  }

  // Lanes and tids, per adapter.
  const adapters = machine.adapters.map((a) => a.os);
  for (const adapter of adapters) {
    const pid = adapter.index + 1;
    events.push({ name: 'process_name', ph: 'M', ts: 0, pid, tid: 0, args: { name: adapter.name } });
    events.push({ name: 'process_sort_index', ph: 'M', ts: 0, pid, tid: 0, args: { sort_index: adapter.index } });
    events.push({ name: 'thread_name', ph: 'M', ts: 0, pid, tid: 1, args: { name: 'Dxgkrnl' } });
    events.push({ name: 'thread_sort_index', ph: 'M', ts: 0, pid, tid: 1, args: { sort_index: 0 } });
    let nextTid = 2;
    const mine = ops.filter((o) => o.adapterIndex === adapter.index);
    const queues = [...new Map(mine.map((o) => [o.hHwQueue, o.queue])).entries()].sort((x, y) => x[0] - y[0]);
    const firstTid = new Map<number, number>();
    for (const [hHwQueue, label] of queues) {
      const lanes: { tid: number; open: Operation[] }[] = [];
      const queueOps = mine.filter((o) => o.hHwQueue === hHwQueue)
        .sort((x, y) => x.startNs - y.startNs || y.endNs - x.endNs || (x.kind === y.kind ? 0 : x.kind === 'wait' ? -1 : 1));
      const newLane = () => {
        const tid = nextTid++;
        const n = lanes.length + 1;
        events.push({ name: 'thread_name', ph: 'M', ts: 0, pid, tid, args: { name: n === 1 ? `${label} (hHwQueue 0x${hHwQueue.toString(16)})` : `${label} #${n}` } });
        events.push({ name: 'thread_sort_index', ph: 'M', ts: 0, pid, tid, args: { sort_index: tid } });
        const lane = { tid, open: [] as Operation[] };
        lanes.push(lane);
        return lane;
      };
      if (!queueOps.length) continue;
      for (const op of queueOps) {
        let placed = false;
        for (const lane of lanes) {
          while (lane.open.length && lane.open[lane.open.length - 1].endNs <= op.startNs) lane.open.pop();
          const top = lane.open[lane.open.length - 1];
          if (!top || top.endNs >= op.endNs) { lane.open.push(op); op.tid = lane.tid; placed = true; break; }
        }
        if (!placed) { const lane = newLane(); lane.open.push(op); op.tid = lane.tid; }
      }
      firstTid.set(hHwQueue, lanes[0].tid);
    }
    for (const op of mine) events.push(...sliceEvents(op, pid));
    for (const i of logs.interrupts.filter((x) => x.adapterIndex === adapter.index)) {
      events.push({
        name: i.hHWQueue ? `interrupt (engine ${i.engine}, hHWQueue 0x${i.hHWQueue.toString(16)})` : `interrupt (engine ${i.engine}${i.listed === null ? ', no list' : `, ${i.listed} listed`})`,
        ph: 'i', s: 't', ts: us(i.timeNs), pid, tid: 1, cat: 'interrupt',
        args: { engine: i.engine, hHWQueue: i.hHWQueue, listed: i.listed },
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
  }
  return { traceEvents: events, displayTimeUnit: 'ns', otherData: { generator: 'wddm-fence', seed: machine.seed, clock: 'virtual ns, shown as us' } };
}

function operationOf(kind: 'wait' | 'signal', queued: QueuedEvent | undefined, entry: LogEntryRecord | undefined): Operation {
  const source = (queued ?? entry)!;
  const endNs = entry ? Number(entry.endNs) : queued!.cpuTimeNs;
  let startNs = queued ? queued.cpuTimeNs : Number(entry!.observedNs || entry!.endNs);
  if (startNs > endNs) startNs = endNs;
  return {
    adapterIndex: source.adapterIndex, hHwQueue: source.hHwQueue, queue: source.queue, kind, queued, entry,
    startNs, endNs, tid: 0, flowsOut: [],
  };
}

function sliceEvents(op: Operation, pid: number): ChromeTraceEvent[] {
  const fence = op.queued?.fence ?? op.entry?.fence ?? `handle 0x${(op.entry?.hNativeFence ?? 0).toString(16)}`;
  const value = (op.queued?.value ?? op.entry?.value ?? 0n).toString();
  const what = `${op.kind} ${fence} ${value}`;
  if (!op.entry) {
    // Queued but never logged: still in the ring, or its entry was lost in an overrun.
    return [{ name: `${what} (queued, no log entry)`, ph: 'i', s: 't', ts: us(op.startNs), pid, tid: op.tid, cat: op.kind, args: { fence, value, cpuQueuedNs: op.startNs } }];
  }
  const args: Record<string, string | number | boolean | null> = {
    fence, value, hNativeFence: op.entry.hNativeFence, slot: op.entry.slot,
    cpuQueuedNs: op.queued ? op.queued.cpuTimeNs : null,
    gpuEndNs: Number(op.entry.endNs),
  };
  if (op.kind === 'wait') args.gpuObservedNs = Number(op.entry.observedNs);
  const slice: ChromeTraceEvent = {
    name: what, ph: 'X', ts: us(op.startNs), dur: us(op.endNs - op.startNs), pid, tid: op.tid, cat: op.kind, args,
  };
  const out: ChromeTraceEvent[] = [slice];
  if (op.flowIn) {
    out.push({ name: 'unblocked', ph: 'X', ts: us(op.endNs), dur: 0, pid, tid: op.tid, cat: 'flow', bind_id: op.flowIn, flow_in: true, args: { wait: what } });
  }
  for (const flow of op.flowsOut) {
    out.push({
      name: `unblocks ${flow.wait.queue}`, ph: 'X', ts: us(op.endNs), dur: 0, pid, tid: op.tid, cat: 'flow',
      bind_id: flow.id, flow_out: true, args: { wait: `${flow.wait.queue}: wait ${fence} ${flow.wait.entry?.value ?? ''}` },
    });
  }
  return out;
}
