// A timeline drawn from nothing but the trace: one track per hardware queue
// per adapter, one per CPU thread, one for each adapter's interrupts; slices
// for GPU work, waits and signals; an arrow from each signal to each wait it
// unblocked (by the rule the Perfetto export draws its flows by too:
// unblocked-by.ts); marks where interrupts were raised and delivered and
// where faults happened. The browser page draws this model; it needs no access to
// the machine, so a saved JSON trace draws the same picture.

import type { TraceEvent } from '../base/trace.js';
import { canonicalFence as canonical, unblockedBy } from './unblocked-by.js';

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

export function buildTimeline(events: readonly TraceEvent[]): TimelineModel {
  const builder = new TimelineBuilder();
  for (const e of events) builder.add(e);
  return builder.finish();
}

/** Builds the model event by event (buildTimeline). */
class TimelineBuilder {
  readonly tracks = new Map<string, TimelineTrack>();
  readonly slices: TimelineSlice[] = [];
  readonly arrows: TimelineArrow[] = [];
  readonly marks: TimelineMark[] = [];
  private readonly fenceOfHandle = new Map<number, string>();
  private readonly signals = new Map<string, SignalRecord[]>();
  /** Track → the index of its open GPU wait's slice. */
  private readonly openGpuWait = new Map<string, number>();
  private readonly openCpuWait = new Map<string, { slice: number; fences: string[]; values: bigint[] }>();
  private readonly lastSignalOnEngine = new Map<string, number>();
  /** Kernel-mode contexts: the driver's "context 0x…" queue label → the context's name, and its adapter. */
  private readonly contextName = new Map<string, string>();
  private readonly contextAdapter = new Map<string, string>();
  private readonly openContextWait = new Map<string, number>();
  private readonly contextEngine = new Map<string, number>();
  endNs = 0;
  /** Adapters in machine order (tracks are sorted by it). */
  readonly adapterOrder = new Map<string, number>();

  private track(id: string, label: string, kind: TimelineTrack['kind'], adapter?: string): string {
    if (!this.tracks.has(id)) this.tracks.set(id, { id, label, kind, adapter });
    return id;
  }
  private slice(s: Omit<TimelineSlice, 'id'>): number { this.slices.push({ ...s, id: this.slices.length }); return this.slices.length - 1; }
  private addSignal(fence: string, value: bigint, index: number, timeNs: number): void {
    let list = this.signals.get(fence);
    if (!list) this.signals.set(fence, (list = []));
    list.push({ slice: index, timeNs, value });
  }
  /** The signal that unblocked a wait for fence ≥ value that ended at `endNs` (the rule: timeline/unblocked-by.ts). */
  private releasing(fence: string, value: bigint, endNs: number): SignalRecord | undefined {
    return unblockedBy(this.signals.get(fence) ?? [], value, endNs);
  }

  /** Ends the open GPU wait `index` at `endNs`, unblocked: an arrow to it from the signal that unblocked each of its fences. */
  private unblocked(index: number, endNs: number, fences: readonly string[], values: readonly bigint[]): void {
    const s = this.slices[index];
    s.endNs = endNs; s.outcome = 'unblocked';
    fences.forEach((fence, i) => {
      const from = this.releasing(fence, values[i], endNs);
      if (from) this.arrows.push({ from: from.slice, to: index, fence, value: values[i].toString() });
    });
  }

  add(e: TraceEvent): void {
    this.endNs = Math.max(this.endNs, e.timeNs);
    const a = e.args;
    if (e.kind === 'machine' && e.name === 'adapter regions' && !this.adapterOrder.has(e.actor)) this.adapterOrder.set(e.actor, this.adapterOrder.size);
    if (e.kind === 'os' && (e.name === 'handle' || e.name === 'monitored fence created')) this.fenceOfHandle.set(Number(a.hSyncObject), canonical(String(a.fence)));
    if (e.kind === 'runtime' && e.name === 'D3DKMTCreateContextVirtual') this.contextEngine.set(String(a.name), Number(a.NodeOrdinal));
    if (e.kind === 'ddi' && e.name === 'DxgkDdiCreateContext returned') {
      this.contextName.set(`context 0x${Number(a.hContext).toString(16)}`, String(a.context));
      this.contextAdapter.set(String(a.context), e.actor);
    }
    if (e.kind === 'gpu') this.gpu(e);
    else if (e.kind === 'os' && e.actor === 'vidsch' && (e.name === 'context held by GPU wait' || e.name === 'GPU wait satisfied at once' || e.name === 'GPU wait satisfied: context released' || e.name === 'software signal packet executed')) this.contextStep(e);
    else if (e.kind === 'cmp' && /interrupt raised/.test(e.name)) {
      const last = this.lastSignalOnEngine.get(e.actor);
      if (last !== undefined) this.marks.push({ track: this.slices[last].track, timeNs: e.timeNs, kind: 'interrupt-raised', label: `${e.name} (${this.slices[last].label})` });
    } else if (e.kind === 'interrupt') {
      const id = this.track(`${e.actor}/interrupts`, `${e.actor} · interrupts`, 'interrupts', e.actor);
      this.marks.push({ track: id, timeNs: e.timeNs, kind: 'interrupt', label: `${e.name}${a.SignaledNativeFenceCount !== undefined ? ` (${a.SignaledNativeFenceCount} fences listed)` : ''}` });
    } else if (e.kind === 'fault') {
      const id = this.track(`${e.actor}/interrupts`, `${e.actor} · interrupts`, 'interrupts', e.actor);
      this.marks.push({ track: id, timeNs: e.timeNs, kind: 'fault', label: e.name });
    } else if (e.kind === 'runtime' && e.name === 'D3DKMTWaitForSynchronizationObjectFromCpu' && typeof a.waiter === 'string' && !a.waiter.startsWith('event ')) this.cpuWaitStarted(e);
    else if (e.kind === 'runtime' && e.name === 'D3DKMTSignalSynchronizationObjectFromCpu') this.cpuSignal(e);
    else if (e.kind === 'os' && (e.name === 'wait satisfied at once' || e.name === 'waiter woken' || e.name === 'waiter released' || e.name === 'wait timed out')) this.cpuWaitEnded(e);
  }

  /** GPU work, waits and signals on a hardware queue (or a kernel-mode context's, by its driver label). */
  private gpu(e: TraceEvent): void {
    const a = e.args;
    const [adapter, engine] = e.actor.split('/');
    const context = this.contextName.get(String(a.queue));
    const queueName = context ?? String(a.queue);
    const id = this.track(`${adapter}/${queueName}`, `${adapter} · ${queueName} (${context ? 'context, ' : ''}${engine})`, 'queue', adapter);
    const fence = this.fenceOfHandle.get(Number(a.hSyncObject)) ?? `handle 0x${Number(a.hSyncObject).toString(16)}`;
    if (e.name === 'work') {
      this.slice({ track: id, startNs: e.timeNs, endNs: e.timeNs + Number(a.durationNs), kind: 'work', label: `work ${Number(a.durationNs)} ns`, seq: e.seq });
      this.endNs = Math.max(this.endNs, e.timeNs + Number(a.durationNs));
    } else if (e.name === 'wait blocked') {
      this.openGpuWait.set(id, this.slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'wait', label: `wait ${fence} ≥ ${a.value}`, outcome: 'blocked', seq: e.seq }));
    } else if (e.name === 'wait unblocked') {
      const index = this.openGpuWait.get(id);
      if (index !== undefined) {
        this.openGpuWait.delete(id);
        this.unblocked(index, e.timeNs, [fence], [BigInt(String(a.value))]);
      }
    } else if (e.name === 'wait passed') {
      this.slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'wait', label: `wait ${fence} ≥ ${a.value}`, outcome: 'passed', seq: e.seq });
    } else if (e.name === 'signal' || e.name === 'fence write') {
      const index = this.slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'signal', label: `signal ${fence} = ${a.value}`, seq: e.seq });
      this.addSignal(fence, BigInt(String(a.value)), index, e.timeNs);
      this.lastSignalOnEngine.set(e.actor, index);
    }
  }

  /** Kernel-mode contexts: GPU waits are held on the OS side; signal packets are executed by the OS. */
  private contextStep(e: TraceEvent): void {
    const a = e.args;
    // kernel-mode contexts: GPU waits are held on the OS side; signal packets are executed by the OS
    const context = String(a.context);
    const adapter = this.contextAdapter.get(context) ?? '?';
    const id = this.track(`${adapter}/${context}`, `${adapter} · ${context} (context, engine${this.contextEngine.get(context) ?? '?'})`, 'queue', adapter);
    const fences = ((a.fences as string[]) ?? []).map(canonical);
    const values = ((a.values as string[]) ?? []).map((v) => BigInt(v));
    const label = fences.map((f, i) => `${f} ≥ ${values[i]}`).join(', ');
    if (e.name === 'context held by GPU wait') {
      this.openContextWait.set(context, this.slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'wait', label: `wait ${label} (held by the OS)`, outcome: 'blocked', seq: e.seq }));
    } else if (e.name === 'GPU wait satisfied at once') {
      this.slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'wait', label: `wait ${label}`, outcome: 'passed', seq: e.seq });
    } else if (e.name === 'GPU wait satisfied: context released') {
      const index = this.openContextWait.get(context);
      if (index !== undefined) {
        this.openContextWait.delete(context);
        this.unblocked(index, e.timeNs, fences, values);
      }
    } else {
      const index = this.slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'signal', label: `signal ${fences.map((f, i) => `${f} = ${values[i]}`).join(', ')}`, seq: e.seq });
      fences.forEach((f, i) => this.addSignal(f, values[i], index, e.timeNs));
    }
  }

  /** A CPU wait (not an event's): its slice, open until it ends. */
  private cpuWaitStarted(e: TraceEvent): void {
    const a = e.args;
    const waiter = a.waiter as string; // a string: add() checked it
    const handlesList = (a.ObjectHandleArray as number[]) ?? [];
    const values = ((a.FenceValueArray as string[]) ?? []).map((v) => BigInt(v));
    const fences = handlesList.map((h) => this.fenceOfHandle.get(Number(h)) ?? `0x${Number(h).toString(16)}`);
    const id = this.track(`cpu/${waiter}`, `CPU · ${waiter}`, 'cpu');
    const label = `wait${a.WaitAny ? ' any' : ''} ${fences.map((f, i) => `${f} ≥ ${values[i]}`).join(', ')}`;
    this.openCpuWait.set(waiter, { slice: this.slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'cpu-wait', label, outcome: 'waiting', seq: e.seq }), fences, values });
  }

  /** A CPU signal: its slice, a source of arrows. */
  private cpuSignal(e: TraceEvent): void {
    const a = e.args;
    const handlesList = (a.ObjectHandleArray as number[]) ?? [];
    const values = ((a.FenceValueArray as string[]) ?? []).map((v) => BigInt(v));
    const id = this.track(`cpu/${e.actor}`, `CPU · ${e.actor}`, 'cpu');
    const fences = handlesList.map((h) => this.fenceOfHandle.get(Number(h)) ?? `0x${Number(h).toString(16)}`);
    const index = this.slice({ track: id, startNs: e.timeNs, endNs: e.timeNs, kind: 'cpu-signal', label: `signal ${fences.map((f, i) => `${f} = ${values[i]}`).join(', ')}`, seq: e.seq });
    fences.forEach((f, i) => this.addSignal(f, values[i], index, e.timeNs));
  }

  /** A CPU wait ends: satisfied at once, woken (with its arrows), released or timed out. */
  private cpuWaitEnded(e: TraceEvent): void {
    const a = e.args;
    const open = this.openCpuWait.get(String(a.waiter));
    if (!open) return;
    this.openCpuWait.delete(String(a.waiter));
    const s = this.slices[open.slice];
    s.endNs = e.timeNs;
    s.outcome = e.name === 'wait satisfied at once' ? 'satisfied at once' : e.name === 'waiter woken' ? 'woken' : e.name === 'wait timed out' ? 'timed out' : String(a.status ?? 'released');
    if (e.name === 'waiter woken') {
      open.fences.forEach((fence, i) => {
        const from = this.releasing(fence, open.values[i], e.timeNs);
        if (from) this.arrows.push({ from: from.slice, to: open.slice, fence, value: open.values[i].toString() });
      });
    }
  }

  /** The model: waits still open at the end run to the end of the trace; tracks in their order. */
  finish(): TimelineModel {
    const { slices, endNs } = this;
    for (const index of this.openGpuWait.values()) slices[index].endNs = endNs;
    for (const index of this.openContextWait.values()) slices[index].endNs = endNs;
    for (const open of this.openCpuWait.values()) slices[open.slice].endNs = endNs;
    // adapters in machine order, each with its queues (first seen first) then its interrupts; CPU threads last
    const rank = (t: TimelineTrack) => (t.kind === 'cpu' ? 1e9 : (this.adapterOrder.get(t.adapter ?? '') ?? 1e6) * 2 + (t.kind === 'interrupts' ? 1 : 0));
    const seen = [...this.tracks.values()];
    const sorted = seen.map((t, i) => ({ t, i })).sort((x, y) => rank(x.t) - rank(y.t) || x.i - y.i).map((x) => x.t);
    return { tracks: sorted, slices, arrows: this.arrows, marks: this.marks, endNs };
  }
}
