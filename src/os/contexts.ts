// Kernel-mode contexts (WDDM 2.x): the OS-scheduled kind of GPU context, the
// one monitored fences were made for (MF-04, MF-05, MF-06).
//
// Unlike a hardware queue (user-mode submission: the UMD writes the ring and
// the OS never sees it), every command buffer of a kernel-mode context goes
// through the OS. VidSch keeps one software queue of packets per context and
// feeds the engine from its head, in virtual time:
//
//   context packets (software queue, in submission order)
//   ┌──────────────┬────────────┬──────────────┬──────────────┬─────
//   │ command buf. │ GPU wait   │ command buf. │ signal pkt.  │ …
//   └──────────────┴────────────┴──────────────┴──────────────┴─────
//     head ─▶ command buffer: DxgkDdiSubmitCommand at once (several may be on the engine)
//             GPU wait:       satisfied? drop it and go on : the context is HELD (MF-05)
//             signal packet:  waits until the buffers before it completed, then the
//                             OS writes the value (SignalSynchronizationObjectFromGpu, MF-04)
//
//   engine runs a buffer ─▶ completion marker ─▶ DMA completed interrupt ─▶ the OS
//   scans the monitored fences with pending waits of that process (MF-06),
//   releases satisfied CPU waiters and held contexts, and feeds the engine again.
//
// A held context needs the CPU to see the signal before its GPU work can run:
// each release is counted as a CPU round trip that held GPU work.

import { WddmError, invalid } from '../base/errors.js';
import type { ContextCommand, DmaCompletedInterrupt } from '../ddi/ddi.js';
import type { DriverPort } from '../port/driver-port.js';
import type { Scheduler } from '../base/scheduler.js';
import type { Trace } from '../base/trace.js';
import { hex } from '../base/wddm.js';
import * as v from '../base/validate.js';
import type { Handles } from './handles.js';
import type { MonitoredFences } from './monitored.js';
import { requireRunning, type GlobalFence, type OsAdapter, type OsContext, type Process } from './objects.js';

export type { OsContext };

/** What kernel-mode contexts use of the rest of the OS (the OS wires it). */
export interface ContextsEnvironment {
  readonly handles: Handles;
  readonly port: DriverPort;
  readonly monitored: MonitoredFences;
  readonly scheduler: Scheduler;
  readonly trace: Trace;
  /** A fatal driver error on `adapter` (src/os/resets.ts). */
  bugCheckAdapter(adapter: OsAdapter, code: string, message: string): void;
}

/** What kernel-mode contexts count (part of LegacyCounters). */
export interface ContextCounters {
  dmaCompletedInterrupts: number;
  gpuWaitsHeld: number;
  heldWaitsReleased: number;
  softwareSignals: number;
  commandBuffers: number;
}

export class KernelContexts {
  readonly counters: ContextCounters = { dmaCompletedInterrupts: 0, gpuWaitsHeld: 0, heldWaitsReleased: 0, softwareSignals: 0, commandBuffers: 0 };
  /** Live contexts, in creation order. */
  private readonly live: OsContext[] = [];
  /** Per adapter: the driver's hContext → the live context. */
  private readonly byHandle = new Map<OsAdapter, Map<number, OsContext>>();
  /** Per adapter: SubmissionFenceId → context. */
  private readonly submissions = new Map<OsAdapter, Map<number, OsContext>>();
  private readonly nextSubmission = new Map<OsAdapter, number>();
  private readonly pending = new Set<OsContext>();
  private draining = false;
  /**
   * Told each time the OS retires one of a context's command buffers (its DMA completed interrupt), and for
   * a context destroyed or of a removed device (its buffers dropped): VidMm reclaims memory a deferred
   * destroy waited on then, when the OS knows the buffer done, as it counts it.
   */
  readonly retiredListeners: ((adapter: OsAdapter, context: OsContext) => void)[] = [];

  constructor(private readonly os: ContextsEnvironment) {}

  // ── lifecycle ──

  /** D3DKMTCreateContextVirtual: a kernel-mode context on one engine. Returns hContext. */
  create(process: Process, args: unknown): number {
    const os = this.os;
    const a = v.options(args, 'createContext(args)', ['hDevice', 'engine', 'name']);
    const device = os.handles.requireDevice(process, a.hDevice, 'hDevice');
    const adapter = device.adapter;
    const engine = a.engine === undefined ? 0 : v.integer(a.engine, 'engine', 0, adapter.engines - 1);
    if (!os.port.hasContexts(adapter.index)) {
      throw new WddmError('NOT_SUPPORTED', `createContext: the driver of "${adapter.name}" has no kernel-mode contexts (DxgkDdiCreateContext / SubmitCommand / DestroyContext)`,
        { parameter: 'hDevice', value: device.handle, expected: 'a device whose driver supports kernel-mode contexts' });
    }
    const label = a.name === undefined ? `context${this.live.length + 1}` : String(a.name);
    os.trace.record('runtime', process.name, 'D3DKMTCreateContextVirtual', { hDevice: device.handle, NodeOrdinal: engine, name: label });
    const created = os.port.createContext(adapter.index, { hDevice: device.handle, NodeOrdinal: engine, ProcessSlot: process.slot });
    if (!created) throw new WddmError('GRAPHICS_ADAPTER_STOPPED', `createContext: the driver of "${adapter.name}" failed`);
    const context: OsContext = {
      kind: 'context', handle: process.allocHandle(), device, engine, hContext: created.hContext, label, packets: [], inFlight: [], destroyed: false,
    };
    process.handles.set(context.handle, context);
    this.live.push(context);
    let handles = this.byHandle.get(adapter);
    if (!handles) this.byHandle.set(adapter, (handles = new Map()));
    handles.set(context.hContext, context);
    os.trace.record('ddi', adapter.name, 'DxgkDdiCreateContext returned', { hContext: created.hContext, context: label });
    return context.handle;
  }

  /** D3DKMTDestroyContext: packets not yet on the engine are dropped, the engine drops the rest. */
  destroy(process: Process, hContext: unknown): void {
    const os = this.os;
    const context = os.handles.resolve(process, hContext, 'context', 'hContext');
    const adapter = context.device.adapter;
    os.trace.record('runtime', process.name, 'D3DKMTDestroyContext', { hContext: context.handle, droppedPackets: context.packets.length, inFlight: context.inFlight.length });
    if (adapter.state === 'running' && !context.device.removed) os.port.destroyContext(adapter.index, { hContext: context.hContext });
    this.forget(context);
    process.handles.delete(context.handle);
    process.retired.add(context.handle);
  }

  private forget(context: OsContext): void {
    context.destroyed = true;
    const submissions = this.submissions.get(context.device.adapter);
    for (const { id } of context.inFlight) submissions?.delete(id);
    context.inFlight = [];
    context.packets = [];
    this.pending.delete(context);
    const index = this.live.indexOf(context);
    if (index >= 0) this.live.splice(index, 1);
    const handles = this.byHandle.get(context.device.adapter);
    if (handles?.get(context.hContext) === context) handles.delete(context.hContext);
    // Its command buffers are dropped: nothing will retire them any more.
    for (const listener of this.retiredListeners) listener(context.device.adapter, context);
  }

  /** NF-20 for contexts: the driver dropped their engine work; the OS drops their queued packets. */
  onDeviceRemoved(adapter: OsAdapter): void {
    const removed = this.live.filter((c) => c.device.adapter === adapter);
    for (const context of removed) {
      this.submissions.get(adapter)?.clear();
      context.inFlight = [];
      context.packets = [];
    }
    // Their command buffers are gone with the reset: nothing will retire them any more (VidMm stops waiting).
    for (const context of removed) for (const listener of this.retiredListeners) listener(adapter, context);
  }

  private requireUsable(process: Process, hContext: unknown): OsContext {
    const context = this.os.handles.resolve(process, hContext, 'context', 'hContext');
    if (context.device.removed) {
      throw new WddmError('DEVICE_REMOVED', `hContext ${hex(context.handle)} belongs to a removed device`, { parameter: 'hContext', value: context.handle, expected: 'a context of a device that was not removed' });
    }
    requireRunning(context.device.adapter, 'hContext');
    return context;
  }

  // ── what user mode calls ──

  /**
   * D3DKMTSubmitCommand: one command buffer ({ work } and, on engines that
   * can write the fence VA, { fenceWrite }) goes through the OS to the context.
   */
  submitCommand(process: Process, args: unknown): { submitted: number } {
    const os = this.os;
    const a = v.options(args, 'submitCommand(args)', ['hContext', 'commands']);
    const context = this.requireUsable(process, a.hContext);
    const adapter = context.device.adapter;
    const list = v.array(a.commands, 'commands', 1, 4096);
    const commands: ContextCommand[] = [];
    const described: string[] = [];
    const written: GlobalFence[] = [];
    list.forEach((raw, i) => {
      const c = v.options(raw, `commands[${i}]`, ['work', 'fenceWrite']);
      if (Object.keys(c).length !== 1) throw invalid(`commands[${i}]`, raw, 'exactly one of { work }, { fenceWrite }');
      if (c.work !== undefined) {
        const work = v.workCommand(c.work, `commands[${i}].work`);
        commands.push(work.command);
        described.push(work.described);
        return;
      }
      const body = v.options(c.fenceWrite, `commands[${i}].fenceWrite`, ['hSyncObject', 'value']);
      if (adapter.caps.EnginesWriteMonitoredFences === false) {
        throw new WddmError('NOT_SUPPORTED', `commands[${i}].fenceWrite: the engines of "${adapter.name}" cannot write a monitored fence through its GPU VA; queue a software signal packet with signalSynchronizationObjectFromGpu instead (MF-04)`,
          { parameter: `commands[${i}].fenceWrite`, expected: 'signalSynchronizationObjectFromGpu on this adapter' });
      }
      const { fences, values } = os.monitored.resolveObjects(process, { objects: [body.hSyncObject], values: [body.value] }, adapter, 'signal');
      const local = os.handles.resolve(process, body.hSyncObject, 'syncObject', `commands[${i}].fenceWrite.hSyncObject`);
      commands.push({ op: 'fenceWrite', gpuVa: local.cvGpuVa, value: values[0], handle: local.handle });
      described.push(`fenceWrite(${fences[0].label}, ${values[0]})`);
      written.push(fences[0]);
    });
    os.trace.record('runtime', process.name, 'D3DKMTSubmitCommand', { hContext: context.handle, context: context.label, commands: described });
    os.trace.record('os', 'vidsch', 'command buffer queued', { context: context.label, queuedAhead: context.packets.length });
    context.packets.push({ type: 'commandBuffer', commands, described, fences: written });
    this.wakeContexts([context]);
    return { submitted: commands.length };
  }

  /** D3DKMTWaitForSynchronizationObjectFromGpu: returns at once; later packets of the context wait for it (MF-05). */
  waitFromGpu(process: Process, args: unknown): void {
    const { fences, values, context } = this.fromGpu(process, args, 'wait', 'WaitForSynchronizationObjectFromGpu');
    context.packets.push({ type: 'wait', fences, values, held: false, heldSinceNs: 0 });
    this.wakeContexts([context]);
  }

  /** D3DKMTSignalSynchronizationObjectFromGpu: a software signal packet the OS executes at the head of the context (MF-04). */
  signalFromGpu(process: Process, args: unknown): void {
    const { fences, values, context } = this.fromGpu(process, args, 'signal', 'SignalSynchronizationObjectFromGpu');
    context.packets.push({ type: 'signal', fences, values });
    this.wakeContexts([context]);
  }

  /** Validates a *FromGpu call and traces it; the caller queues its packet. */
  private fromGpu(process: Process, args: unknown, use: 'wait' | 'signal', call: string) {
    const os = this.os;
    const name = call[0].toLowerCase() + call.slice(1);
    const a = v.options(args, `${name}(args)`, ['hContext', 'objects', 'values']);
    const context = this.requireUsable(process, a.hContext);
    const { fences, values } = os.monitored.resolveObjects(process, a, context.device.adapter, use);
    os.trace.record('runtime', process.name, `D3DKMT${call}`, {
      hContext: context.handle, context: context.label, ObjectCount: fences.length, ObjectHandleArray: a.objects as number[], FenceValueArray: values,
    });
    return { fences, values, context };
  }

  // ── VidSch ──

  /** Contexts whose head packet is a GPU wait on one of `fences`: look at them again. */
  wake(fences: GlobalFence[]): void {
    if (!fences.length || !this.live.length) return; // no context at all (the common case): nothing to look at
    const set = new Set(fences);
    this.wakeContexts(this.live.filter((c) => {
      const head = c.packets[0];
      return head?.type === 'wait' && head.fences.some((f) => set.has(f));
    }));
  }

  /** Pumps each context (in handle order) until none changes; re-entrant calls just add to the set. */
  private wakeContexts(contexts: OsContext[]): void {
    for (const c of contexts) this.pending.add(c);
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.pending.size) {
        const next = [...this.pending].sort((x, y) => x.handle - y.handle)[0];
        this.pending.delete(next);
        this.pump(next);
      }
    } finally {
      this.draining = false;
    }
  }

  private pump(context: OsContext): void {
    const os = this.os;
    const adapter = context.device.adapter;
    const counters = this.counters;
    while (!context.destroyed && !context.device.removed && adapter.state === 'running' && context.packets.length) {
      const packet = context.packets[0];
      if (packet.type === 'wait') {
        const current = packet.fences.map((f) => f.currentValue());
        if (!packet.fences.every((_, i) => current[i] >= packet.values[i])) {
          if (!packet.held) {
            packet.held = true;
            packet.heldSinceNs = os.scheduler.nowNs;
            counters.gpuWaitsHeld++;
            os.trace.record('os', 'vidsch', 'context held by GPU wait', {
              context: context.label, fences: packet.fences.map((f) => f.label), values: packet.values, currentValues: current, packetsHeld: context.packets.length - 1,
            });
          }
          return;
        }
        context.packets.shift();
        if (packet.held) {
          counters.heldWaitsReleased++;
          os.trace.record('os', 'vidsch', 'GPU wait satisfied: context released', { context: context.label, fences: packet.fences.map((f) => f.label), values: packet.values, heldNs: os.scheduler.nowNs - packet.heldSinceNs });
        } else {
          os.trace.record('os', 'vidsch', 'GPU wait satisfied at once', { context: context.label, fences: packet.fences.map((f) => f.label), values: packet.values });
        }
        continue;
      }
      if (packet.type === 'signal') {
        if (context.inFlight.length) return; // executes when the GPU has reached it
        context.packets.shift();
        counters.softwareSignals++;
        os.trace.record('os', 'vidsch', 'software signal packet executed', { context: context.label, fences: packet.fences.map((f) => f.label), values: packet.values });
        os.monitored.cpuSignal(packet.fences, packet.values);
        continue;
      }
      const id = this.nextSubmission.get(adapter) ?? 1;
      const accepted = os.port.submitCommand(adapter.index, { hContext: context.hContext, SubmissionFenceId: id, Commands: packet.commands }, packet.described);
      if (accepted === undefined) return; // the driver failed: its adapter is bug-checked
      if (!accepted) {
        if (context.inFlight.length === 0) {
          context.packets.shift();
          os.trace.record('fault', adapter.name, 'command buffer dropped: larger than the context ring', { context: context.label, commands: packet.commands.length, hint: 'raise limits.ringEntries' });
          continue;
        }
        os.trace.record('os', 'vidsch', 'engine queue full: command buffer stays queued', { context: context.label });
        return;
      }
      this.nextSubmission.set(adapter, id + 1);
      context.packets.shift();
      context.inFlight.push({ id, fences: packet.fences });
      let map = this.submissions.get(adapter);
      if (!map) this.submissions.set(adapter, (map = new Map()));
      map.set(id, context);
      counters.commandBuffers++;
    }
  }

  /** DXGK_INTERRUPT_DMA_COMPLETED: one command buffer finished; MF-06 scan, then feed the engine. */
  onDmaCompleted(adapter: OsAdapter, data: DmaCompletedInterrupt): void {
    const os = this.os;
    os.trace.record('interrupt', adapter.name, 'DXGK_INTERRUPT_DMA_COMPLETED', { NodeOrdinal: data.NodeOrdinal, SubmissionFenceId: data.SubmissionFenceId });
    if (adapter.state !== 'running') return;
    this.counters.dmaCompletedInterrupts++;
    const context = this.submissions.get(adapter)?.get(data.SubmissionFenceId);
    if (!context) {
      os.bugCheckAdapter(adapter, 'DMA_COMPLETED_UNKNOWN_SUBMISSION',
        `DMA completed interrupt names SubmissionFenceId ${data.SubmissionFenceId}, which no command buffer on "${adapter.name}" has in flight`);
      return;
    }
    this.submissions.get(adapter)!.delete(data.SubmissionFenceId);
    context.inFlight = context.inFlight.filter((b) => b.id !== data.SubmissionFenceId);
    for (const listener of this.retiredListeners) listener(adapter, context);
    os.monitored.scan(adapter, `command buffer ${data.SubmissionFenceId} of ${context.label} completed`, context.device.process);
    this.wakeContexts([context]);
  }

  // ── for the monitored fence scans ──

  /** Monitored fences that head-of-context GPU waits of `adapter` are held on. */
  heldOn(adapter: OsAdapter): GlobalFence[] {
    const fences: GlobalFence[] = [];
    for (const c of this.live) {
      const head = c.packets[0];
      if (c.device.adapter === adapter && head?.type === 'wait' && head.held) fences.push(...head.fences);
    }
    return fences;
  }

  /** Contexts with queued or in-flight work naming `fence` (GPU waits, signal packets, fence writes). */
  packetsUsing(fence: GlobalFence): OsContext[] {
    return this.live.filter((c) => c.packets.some((p) => p.fences.includes(fence)) || c.inFlight.some((b) => b.fences.includes(fence)));
  }

  /**
   * Contexts held by the GPU wait at their head, with that wait and the
   * signals queued behind it (software signal packets, fence writes of
   * command buffers), in order. Read-only, for machine.stuck().
   */
  held(): { context: OsContext; fences: GlobalFence[]; values: bigint[]; queuedSignals: { fence: GlobalFence; value: bigint }[] }[] {
    const out = [];
    for (const context of this.live) {
      const head = context.packets[0];
      if (head?.type !== 'wait' || !head.held || context.device.removed || context.device.adapter.state !== 'running') continue;
      const queuedSignals: { fence: GlobalFence; value: bigint }[] = [];
      for (const packet of context.packets.slice(1)) {
        if (packet.type === 'signal') packet.fences.forEach((fence, i) => queuedSignals.push({ fence, value: packet.values[i] }));
        if (packet.type === 'commandBuffer') {
          let written = 0;
          for (const c of packet.commands) {
            const fence = c.op === 'fenceWrite' ? packet.fences[written++] : undefined;
            if (fence && !fence.destroyed) queuedSignals.push({ fence, value: c.value });
          }
        }
      }
      out.push({ context, fences: head.fences, values: head.values, queuedSignals });
    }
    return out;
  }

  /** Contexts of a process (for tests and the summary). */
  contextsOf(process: Process): OsContext[] { return this.live.filter((c) => c.device.process === process); }

  /** The live context the driver knows as `hContext` on `adapter` (GPU progress reports name it so). */
  byDriverHandle(adapter: OsAdapter, hContext: number): OsContext | undefined {
    return this.byHandle.get(adapter)?.get(hContext);
  }
}
