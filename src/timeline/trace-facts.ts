// What the fence timeline (timeline.ts) takes from the machine's trace rather
// than from the OS's logs, in one pass (traceFacts), and the records both
// files share: an operation on a queue's track (a logged wait or signal, GPU
// work, or a kernel-mode context's wait or signal), a CPU wait, a CPU signal,
// an arrow.
//
// From the trace: fence labels by handle ("handle", "monitored fence
// created"); kernel-mode contexts by their GPU events' label ("context 0x…",
// DxgkDdiCreateContext returned) with their GPU waits the OS held
// ("context held by GPU wait" … "GPU wait satisfied: context released", or
// "at once"), their fence writes and the signal packets the OS ran (monitored
// fences have no log); CPU signals; CPU waits that blocked ("waiter added" →
// "waiter woken" / "waiter released") or were satisfied at once; interrupts
// that are not native fence ones; faults.

import type { Machine } from '../machine/machine.js';
import type { LogEntryRecord, QueuedEvent } from '../os/inspect.js';
import { hex } from '../base/wddm.js';

/** An arrow: its id (bind_id), the track and name of the wait it ends at, and the fence and value that wait wanted. */
export interface Flow { id: string; target: string; wait: string; fence: string; value: string }

export interface Operation {
  adapterIndex: number;
  hHwQueue: number;
  queue: string;
  kind: 'wait' | 'signal' | 'work';
  /** work: its duration. */
  durationNs?: number;
  queued?: QueuedEvent;
  entry?: LogEntryRecord;
  /** A wait or signal that no log holds, from the trace (a kernel-mode context's: monitored fences have no log). */
  traced?: TracedOperation;
  startNs: number;
  endNs: number;
  tid: number;
  flowIn?: string;
  /** A kernel-mode context's wait on several fences: the arrows of its other fences. */
  flowsInMore?: string[];
  /** Arrows starting here: the track of the wait they end at, and what that wait was. */
  flowsOut: Flow[];
}

export interface CpuWait { label: string; waited: [string, bigint][]; startNs: number; endNs: number; status: string; flowsIn: string[] }

/** A wait or signal of a kernel-mode context (the OS holds its GPU waits; its signals are fence writes or packets the OS executes). */
export interface TracedOperation { fences: string[]; values: bigint[]; outcome?: 'held' | 'unblocked' | 'passed' }

/** A CPU signal (D3DKMTSignalSynchronizationObjectFromCpu), from the trace: a slice on its process's CPU track, and the start of arrows. */
export interface CpuSignal { process: string; timeNs: number; fences: string[]; values: bigint[]; flowsOut: Flow[] }

/** What the trace adds to the logs, read in one pass: fence labels by handle, kernel-mode contexts' operations, CPU signals and waits, other interrupts, faults. */
export interface TraceFacts {
  contextOps: Operation[]; cpuSignals: CpuSignal[];
  /** CPU waits that blocked ("waiter added" until "waiter woken" / "waiter released"), then those satisfied at once. */
  cpuWaits: CpuWait[];
  faults: { adapter: string; timeNs: number; name: string; args: Record<string, unknown> }[];
  /** Interrupts no native fence log reader records: a monitored fence signaled interrupt, a DMA completed one. */
  otherInterrupts: { adapter: string; timeNs: number; name: string; args: Record<string, unknown> }[];
  /** A kernel-mode context's name by the label its GPU events carry ("context 0x…"). */
  contextNames: Map<string, string>;
}

export function traceFacts(machine: Machine): TraceFacts {
  const adapterIndex = new Map(machine.adapters.map((a) => [a.name, a.index]));
  const fenceOfHandle = new Map<number, string>();
  const contextOf = new Map<string, { name: string; adapter: string }>();
  /** A context's "context 0x…" label by its name (the OS's vidsch events name it). */
  const contextKey = new Map<string, string>();
  const contextOps: Operation[] = [];
  const openHeld = new Map<string, Operation>();
  const cpuSignals: CpuSignal[] = [];
  const faults: TraceFacts['faults'] = [];
  const atOnce: CpuWait[] = [];
  const blocked: CpuWait[] = [];
  const openCpuWaits = new Map<string, CpuWait[]>();
  const otherInterrupts: TraceFacts['otherInterrupts'] = [];
  const lastCpuWait = new Map<string, [string, bigint][]>();
  const labels = (handles: unknown) => ((handles as number[]) ?? []).map((h) => fenceOfHandle.get(Number(h)) ?? `handle ${hex(Number(h))}`);
  const values = (raw: unknown) => ((raw as string[]) ?? []).map((v) => BigInt(v));
  const contextOp = (context: string, timeNs: number, kind: 'wait' | 'signal', traced: TracedOperation): Operation => {
    const where = contextOf.get(context);
    const op: Operation = { adapterIndex: adapterIndex.get(where?.adapter ?? '') ?? -1, hHwQueue: 0, queue: context, kind, traced, startNs: timeNs, endNs: timeNs, tid: 0, flowsOut: [] };
    contextOps.push(op);
    return op;
  };
  for (const e of machine.trace.events) {
    const a = e.args;
    if (e.kind === 'os' && (e.name === 'handle' || e.name === 'monitored fence created')) fenceOfHandle.set(Number(a.hSyncObject), String(a.fence));
    else if (e.kind === 'ddi' && e.name === 'DxgkDdiCreateContext returned') {
      const key = `context ${hex(Number(a.hContext))}`;
      contextOf.set(key, { name: String(a.context), adapter: e.actor });
      contextKey.set(String(a.context), key);
    }
    else if (e.kind === 'gpu' && e.name === 'fence write') {
      const context = contextOf.get(String(a.queue));
      if (context) contextOp(String(a.queue), e.timeNs, 'signal', { fences: labels([a.hSyncObject]), values: values([a.value]) });
    } else if (e.kind === 'os' && e.actor === 'vidsch' && typeof a.context === 'string') {
      const key = contextKey.get(a.context);
      if (key === undefined) continue;
      const traced = { fences: ((a.fences as string[]) ?? []).map(String), values: values(a.values) };
      if (e.name === 'context held by GPU wait') openHeld.set(key, contextOp(key, e.timeNs, 'wait', { ...traced, outcome: 'held' }));
      else if (e.name === 'GPU wait satisfied at once') contextOp(key, e.timeNs, 'wait', { ...traced, outcome: 'passed' });
      else if (e.name === 'GPU wait satisfied: context released') {
        const held = openHeld.get(key);
        if (held) { openHeld.delete(key); held.endNs = e.timeNs; held.traced!.outcome = 'unblocked'; }
      } else if (e.name === 'software signal packet executed') contextOp(key, e.timeNs, 'signal', traced);
    } else if (e.kind === 'runtime' && e.name === 'D3DKMTSignalSynchronizationObjectFromCpu') {
      cpuSignals.push({ process: e.actor, timeNs: e.timeNs, fences: labels(a.ObjectHandleArray), values: values(a.FenceValueArray), flowsOut: [] });
    } else if (e.kind === 'runtime' && e.name === 'D3DKMTWaitForSynchronizationObjectFromCpu' && typeof a.waiter === 'string') {
      const fences = labels(a.ObjectHandleArray), wanted = values(a.FenceValueArray);
      lastCpuWait.set(a.waiter, fences.map((f, i) => [f, wanted[i]]));
    } else if (e.kind === 'os' && e.name === 'waiter added') {
      const fences = (a.fences as string[]) ?? [], wanted = values(a.values);
      const w: CpuWait = { label: String(a.waiter ?? ''), waited: fences.map((f, i) => [f, wanted[i]]), startNs: e.timeNs, endNs: Infinity, status: 'WAITING', flowsIn: [] };
      let list = openCpuWaits.get(w.label);
      if (!list) openCpuWaits.set(w.label, (list = []));
      list.push(w);
    } else if (e.kind === 'os' && (e.name === 'waiter woken' || e.name === 'waiter released')) {
      const w = openCpuWaits.get(String(a.waiter ?? ''))?.shift();
      if (w) { w.endNs = e.timeNs; w.status = String(a.status); blocked.push(w); }
    } else if (e.kind === 'os' && e.name === 'wait satisfied at once' && !String(a.waiter).startsWith('event ')) {
      atOnce.push({ label: String(a.waiter), waited: lastCpuWait.get(String(a.waiter)) ?? [], startNs: e.timeNs, endNs: e.timeNs, status: 'SATISFIED_AT_ONCE', flowsIn: [] });
    } else if (e.kind === 'interrupt' && e.name !== 'DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED') otherInterrupts.push({ adapter: e.actor, timeNs: e.timeNs, name: e.name, args: a });
    else if (e.kind === 'fault') faults.push({ adapter: adapterIndex.has(e.actor) ? e.actor : String(a.adapter ?? ''), timeNs: e.timeNs, name: e.name, args: a });
  }
  // A context's queue is named by its context's name from here on (the trace's GPU events name it "context 0x…").
  const contextNames = new Map([...contextOf].map(([key, c]) => [key, c.name]));
  for (const op of contextOps) op.queue = contextNames.get(op.queue) ?? op.queue;
  const endNs = machine.scheduler.nowNs;
  for (const held of openHeld.values()) held.endNs = Math.max(held.endNs, endNs);
  return { contextOps, cpuSignals, cpuWaits: [...blocked, ...atOnce], faults, otherInterrupts, contextNames };
}
