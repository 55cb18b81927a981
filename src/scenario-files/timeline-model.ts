// A timeline drawn from nothing but the trace: one track per hardware queue
// per adapter, one per CPU thread, one for each adapter's interrupts; slices
// for GPU work, waits and signals; an arrow from each signal to each wait it
// unblocked; marks where interrupts were raised and delivered and where
// faults happened. The browser page draws this model; it needs no access to
// the machine, so a saved JSON trace draws the same picture.

import type { TraceEvent } from '../base/trace.js';

export interface TimelineTrack { id: string; label: string; kind: 'queue' | 'cpu' | 'interrupts'; adapter?: string }
export interface TimelineSlice {
  id: number; track: string; startNs: number; endNs: number;
  kind: 'work' | 'wait' | 'signal' | 'cpu-wait' | 'cpu-signal';
  label: string; outcome?: string; seq: number;
}
export interface TimelineArrow { from: number; to: number; fence: string; value: string }
export interface TimelineMark { track: string; timeNs: number; kind: 'interrupt-raised' | 'interrupt' | 'fault'; label: string }
export interface TimelineModel { tracks: TimelineTrack[]; slices: TimelineSlice[]; arrows: TimelineArrow[]; marks: TimelineMark[]; endNs: number }

interface SignalRecord { slice: number; timeNs: number; value: bigint }

/** A cross-adapter fence opened on another adapter is labelled "name@adapter"; it is the same fence (one CurrentValue). */
const canonical = (label: string) => label.replace(/@[^@]*$/, '');

export function buildTimeline(events: readonly TraceEvent[]): TimelineModel {
  const tracks = new Map<string, TimelineTrack>();
  const slices: TimelineSlice[] = [];
  const arrows: TimelineArrow[] = [];
  const marks: TimelineMark[] = [];
  const fenceOfHandle = new Map<number, string>();
  const signals = new Map<string, SignalRecord[]>();
  const openGpuWait = new Map<string, number>();           // track → slice index
  const openCpuWait = new Map<string, { slice: number; fences: string[]; values: bigint[]; startNs: number }>();
  const lastSignalOnEngine = new Map<string, number>();
  /** Kernel-mode contexts: the driver's "context 0x…" queue label → the context's name, and its adapter. */
  const contextName = new Map<string, string>();
  const contextAdapter = new Map<string, string>();
  const openContextWait = new Map<string, number>();
  const contextEngine = new Map<string, number>();
  let endNs = 0;
  /** Adapters in machine order (tracks are sorted by it). */
  const adapterOrder = new Map<string, number>();

  const track = (id: string, label: string, kind: TimelineTrack['kind'], adapter?: string) => {
    if (!tracks.has(id)) tracks.set(id, { id, label, kind, adapter });
    return id;
  };
  const slice = (s: Omit<TimelineSlice, 'id'>) => { slices.push({ ...s, id: slices.length }); return slices.length - 1; };
  const addSignal = (fence: string, value: bigint, index: number, timeNs: number) => {
    let list = signals.get(fence);
    if (!list) signals.set(fence, (list = []));
    list.push({ slice: index, timeNs, value });
  };
  /** The signal that released a wait for fence ≥ value that started at `fromNs` and ended at `toNs`. */
  const releasing = (fence: string, value: bigint, fromNs: number, toNs: number): SignalRecord | undefined => {
    const list = (signals.get(fence) ?? []).filter((r) => r.value >= value && r.timeNs <= toNs);
    return list.find((r) => r.timeNs >= fromNs) ?? list[list.length - 1];
  };

  for (const e of events) {
    endNs = Math.max(endNs, e.timeNs);
    const a = e.args;
    if (e.kind === 'machine' && e.name === 'adapter regions' && !adapterOrder.has(e.actor)) adapterOrder.set(e.actor, adapterOrder.size);
    if (e.kind === 'os' && (e.name === 'handle' || e.name === 'monitored fence created')) fenceOfHandle.set(Number(a.hSyncObject), canonical(String(a.fence)));
    if (e.kind === 'runtime' && e.name === 'D3DKMTCreateContextVirtual') contextEngine.set(String(a.name), Number(a.NodeOrdinal));
    if (e.kind === 'ddi' && e.name === 'DxgkDdiCreateContext returned') {
      contextName.set(`context 0x${Number(a.hContext).toString(16)}`, String(a.context));
      contextAdapter.set(String(a.context), e.actor);
    }
    if (e.kind === 'gpu') {
      const [adapter, engine] = e.actor.split('/');
      const context = contextName.get(String(a.queue));
      const queueName = context ?? String(a.queue);
      const id = track(`${adapter}/${queueName}`, `${adapter} · ${queueName} (${context ? 'context, ' : ''}${engine})`, 'queue', adapter);
      const fence = fenceOfHandle.get(Number(a.hSyncObject)) ?? `handle 0x${Number(a.hSyncObject).toString(16)}`;
      if (e.name === 'work') {
        slice({ track: id, startNs: e.timeNs, endNs: e.timeNs + Number(a.durationNs), kind: 'work', label: `work ${Number(a.durationNs)} ns`, seq: e.seq });
        endNs = Math.max(endNs, e.timeNs + Number(a.durationNs));
      } else if (e.name === 'wait blocked') {
        openGpuWait.set(id, slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'wait', label: `wait ${fence} ≥ ${a.value}`, outcome: 'blocked', seq: e.seq }));
      } else if (e.name === 'wait unblocked') {
        const index = openGpuWait.get(id);
        if (index !== undefined) {
          openGpuWait.delete(id);
          const s = slices[index];
          s.endNs = e.timeNs; s.outcome = 'unblocked';
          const from = releasing(fence, BigInt(String(a.value)), s.startNs, e.timeNs);
          if (from) arrows.push({ from: from.slice, to: index, fence, value: String(a.value) });
        }
      } else if (e.name === 'wait passed') {
        slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'wait', label: `wait ${fence} ≥ ${a.value}`, outcome: 'passed', seq: e.seq });
      } else if (e.name === 'signal' || e.name === 'fence write') {
        const index = slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'signal', label: `signal ${fence} = ${a.value}`, seq: e.seq });
        addSignal(fence, BigInt(String(a.value)), index, e.timeNs);
        lastSignalOnEngine.set(e.actor, index);
      }
    } else if (e.kind === 'os' && e.actor === 'vidsch' && (e.name === 'context held by GPU wait' || e.name === 'GPU wait satisfied at once' || e.name === 'GPU wait satisfied: context released' || e.name === 'software signal packet executed')) {
      // kernel-mode contexts: GPU waits are held on the OS side; signal packets are executed by the OS
      const context = String(a.context);
      const adapter = contextAdapter.get(context) ?? '?';
      const id = track(`${adapter}/${context}`, `${adapter} · ${context} (context, engine${contextEngine.get(context) ?? '?'})`, 'queue', adapter);
      const fences = ((a.fences as string[]) ?? []).map(canonical);
      const values = ((a.values as string[]) ?? []).map((v) => BigInt(v));
      const label = fences.map((f, i) => `${f} ≥ ${values[i]}`).join(', ');
      if (e.name === 'context held by GPU wait') {
        openContextWait.set(context, slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'wait', label: `wait ${label} (held by the OS)`, outcome: 'blocked', seq: e.seq }));
      } else if (e.name === 'GPU wait satisfied at once') {
        slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'wait', label: `wait ${label}`, outcome: 'passed', seq: e.seq });
      } else if (e.name === 'GPU wait satisfied: context released') {
        const index = openContextWait.get(context);
        if (index !== undefined) {
          openContextWait.delete(context);
          const s = slices[index];
          s.endNs = e.timeNs; s.outcome = 'unblocked';
          fences.forEach((fence, i) => {
            const from = releasing(fence, values[i], s.startNs, e.timeNs);
            if (from) arrows.push({ from: from.slice, to: index, fence, value: values[i].toString() });
          });
        }
      } else {
        const index = slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'signal', label: `signal ${fences.map((f, i) => `${f} = ${values[i]}`).join(', ')}`, seq: e.seq });
        fences.forEach((f, i) => addSignal(f, values[i], index, e.timeNs));
      }
    } else if (e.kind === 'cmp' && /interrupt raised/.test(e.name)) {
      const last = lastSignalOnEngine.get(e.actor);
      if (last !== undefined) marks.push({ track: slices[last].track, timeNs: e.timeNs, kind: 'interrupt-raised', label: `${e.name} (${slices[last].label})` });
    } else if (e.kind === 'interrupt') {
      const id = track(`${e.actor}/interrupts`, `${e.actor} · interrupts`, 'interrupts', e.actor);
      marks.push({ track: id, timeNs: e.timeNs, kind: 'interrupt', label: `${e.name}${a.SignaledNativeFenceCount !== undefined ? ` (${a.SignaledNativeFenceCount} fences listed)` : ''}` });
    } else if (e.kind === 'fault') {
      const id = track(`${e.actor}/interrupts`, `${e.actor} · interrupts`, 'interrupts', e.actor);
      marks.push({ track: id, timeNs: e.timeNs, kind: 'fault', label: e.name });
    } else if (e.kind === 'runtime' && e.name === 'D3DKMTWaitForSynchronizationObjectFromCpu' && typeof a.waiter === 'string' && !a.waiter.startsWith('event ')) {
      const waiter = a.waiter;
      const handlesList = (a.ObjectHandleArray as number[]) ?? [];
      const values = ((a.FenceValueArray as string[]) ?? []).map((v) => BigInt(v));
      const fences = handlesList.map((h) => fenceOfHandle.get(Number(h)) ?? `0x${Number(h).toString(16)}`);
      const id = track(`cpu/${waiter}`, `CPU · ${waiter}`, 'cpu');
      const label = `wait${a.WaitAny ? ' any' : ''} ${fences.map((f, i) => `${f} ≥ ${values[i]}`).join(', ')}`;
      openCpuWait.set(waiter, { slice: slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'cpu-wait', label, outcome: 'waiting', seq: e.seq }), fences, values, startNs: e.timeNs });
    } else if (e.kind === 'runtime' && e.name === 'D3DKMTSignalSynchronizationObjectFromCpu') {
      const handlesList = (a.ObjectHandleArray as number[]) ?? [];
      const values = ((a.FenceValueArray as string[]) ?? []).map((v) => BigInt(v));
      const id = track(`cpu/${e.actor}`, `CPU · ${e.actor}`, 'cpu');
      const fences = handlesList.map((h) => fenceOfHandle.get(Number(h)) ?? `0x${Number(h).toString(16)}`);
      const index = slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'cpu-signal', label: `signal ${fences.map((f, i) => `${f} = ${values[i]}`).join(', ')}`, seq: e.seq });
      fences.forEach((f, i) => addSignal(f, values[i], index, e.timeNs));
    } else if (e.kind === 'os' && (e.name === 'wait satisfied at once' || e.name === 'waiter woken' || e.name === 'waiter released' || e.name === 'wait timed out')) {
      const open = openCpuWait.get(String(a.waiter));
      if (!open) continue;
      openCpuWait.delete(String(a.waiter));
      const s = slices[open.slice];
      s.endNs = e.timeNs;
      s.outcome = e.name === 'wait satisfied at once' ? 'satisfied at once' : e.name === 'waiter woken' ? 'woken' : e.name === 'wait timed out' ? 'timed out' : String(a.status ?? 'released');
      if (e.name === 'waiter woken') {
        open.fences.forEach((fence, i) => {
          const from = releasing(fence, open.values[i], open.startNs, e.timeNs);
          if (from && from.timeNs >= open.startNs) arrows.push({ from: from.slice, to: open.slice, fence, value: open.values[i].toString() });
        });
      }
    }
  }
  // waits still open at the end run to the end of the trace
  for (const index of openGpuWait.values()) slices[index].endNs = endNs;
  for (const index of openContextWait.values()) slices[index].endNs = endNs;
  for (const open of openCpuWait.values()) slices[open.slice].endNs = endNs;
  // adapters in machine order, each with its queues (first seen first) then its interrupts; CPU threads last
  const rank = (t: TimelineTrack) => (t.kind === 'cpu' ? 1e9 : (adapterOrder.get(t.adapter ?? '') ?? 1e6) * 2 + (t.kind === 'interrupts' ? 1 : 0));
  const seen = [...tracks.values()];
  const sorted = seen.map((t, i) => ({ t, i })).sort((x, y) => rank(x.t) - rank(y.t) || x.i - y.i).map((x) => x.t);
  return { tracks: sorted, slices, arrows, marks, endNs };
}
