// The cost of the legacy model, counted: one producer/consumer workload run
// twice on the same kind of adapter —
//
//   monitored fences + kernel-mode contexts (WDDM 2.x): every command buffer
//     goes through the OS; a GPU wait holds the context's later work on the
//     CPU side until the OS sees the value (a scan after an interrupt);
//   native fences + hardware queues (WDDM 3.2): the GPU waits on the GPU;
//     the CPU hears only about the signal a CPU thread waits for.
//
// and counted the same way: CPU interrupts, OS scans of pending waits (and
// the fences they read), and CPU round trips that held GPU work (a GPU wait
// whose later work could only run after the CPU acted).
//
// Workload, per frame n = 1..frames (engine 0 produces, engine 1 consumes):
//   producer: [wait frameConsumed >= n−1] work 4 us, signal frameReady = n
//   consumer:  wait frameReady >= n,      work 2.5 us, signal frameConsumed = n
//   a CPU thread waits for frameConsumed >= frames.

import { createMachine, type Machine, type MachineOptions } from '../machine/machine.js';
import type { WaitResult } from '../os/inspect.js';
import * as v from '../base/validate.js';

export interface ModelCost {
  model: 'monitored fence + kernel-mode context' | 'native fence + hardware queue';
  /** Every interrupt the OS handled. */
  cpuInterrupts: number;
  dmaCompletedInterrupts: number;
  monitoredFenceInterrupts: number;
  nativeFenceInterrupts: number;
  /** Times the OS went through fences looking for satisfied waits (MF-06 scans, no-list interrupts). */
  scans: number;
  /** Fence values the OS read while looking for satisfied waits. */
  fencesExamined: number;
  /** GPU waits whose later work could run only after the CPU acted. */
  cpuRoundTrips: number;
  /** GPU waits in the workload. */
  gpuWaits: number;
  /** Virtual time the CPU thread saw the last frame consumed. */
  lastFrameConsumedNs: number;
  machine: Machine;
}

export interface Comparison {
  seed: number;
  frames: number;
  monitored: ModelCost;
  native: ModelCost;
  /** The two side by side, as a text table. */
  text: string;
}

const WORK_PRODUCE_NS = 4000;
const WORK_CONSUME_NS = 2500;

function adapterOptions(): MachineOptions {
  return { os: { nativeFence: true }, adapters: [{ name: 'gpu0', engines: 2 }] };
}

function costOf(machine: Machine, model: ModelCost['model'], gpuWaits: number, result: WaitResult | undefined): ModelCost {
  const s = machine.summary();
  const legacy = s.legacy;
  const nativeFenceInterrupts = s.os.interruptsHandled;
  const cpuReleased = machine.adapters.reduce((n, a) => n + a.hardware.waitsReleasedByCpu, 0);
  return {
    model,
    cpuInterrupts: nativeFenceInterrupts + legacy.dmaCompletedInterrupts + legacy.monitoredFenceInterrupts,
    dmaCompletedInterrupts: legacy.dmaCompletedInterrupts,
    monitoredFenceInterrupts: legacy.monitoredFenceInterrupts,
    nativeFenceInterrupts,
    scans: s.os.fullScans + legacy.scans,
    fencesExamined: s.os.fencesScanned + legacy.fencesExamined,
    cpuRoundTrips: legacy.heldWaitsReleased + cpuReleased,
    gpuWaits,
    lastFrameConsumedNs: result?.timeNs ?? Number.NaN,
    machine,
  };
}

async function runMonitored(seed: number, frames: number): Promise<ModelCost> {
  const machine = await createMachine({ seed, ...adapterOptions() });
  const app = machine.createProcess('app');
  const hDevice = app.createDevice({ hAdapter: app.openAdapter('gpu0') });
  const ready = app.createSynchronizationObject({ hDevice, type: 'MONITORED_FENCE', initialValue: 0n, name: 'frameReady' });
  const consumed = app.createSynchronizationObject({ hDevice, type: 'MONITORED_FENCE', initialValue: 0n, name: 'frameConsumed' });
  const producer = app.createContext({ hDevice, engine: 0, name: 'producer' });
  const consumer = app.createContext({ hDevice, engine: 1, name: 'consumer' });
  let gpuWaits = 0;
  for (let n = 1n; n <= BigInt(frames); n++) {
    if (n > 1n) {
      app.waitForSynchronizationObjectFromGpu({ hContext: producer, objects: [consumed.hSyncObject], values: [n - 1n] });
      gpuWaits++;
    }
    app.submitCommand({ hContext: producer, commands: [{ work: { durationNs: WORK_PRODUCE_NS } }, { fenceWrite: { hSyncObject: ready.hSyncObject, value: n } }] });
    app.waitForSynchronizationObjectFromGpu({ hContext: consumer, objects: [ready.hSyncObject], values: [n] });
    gpuWaits++;
    app.submitCommand({ hContext: consumer, commands: [{ work: { durationNs: WORK_CONSUME_NS } }, { fenceWrite: { hSyncObject: consumed.hSyncObject, value: n } }] });
  }
  let result: WaitResult | undefined;
  app.createThread('presenter', function* (cpu) {
    result = (yield cpu.wait({ objects: [consumed.hSyncObject], values: [BigInt(frames)] })) as WaitResult;
  });
  machine.run();
  return costOf(machine, 'monitored fence + kernel-mode context', gpuWaits, result);
}

async function runNative(seed: number, frames: number): Promise<ModelCost> {
  const machine = await createMachine({ seed, ...adapterOptions() });
  const app = machine.createProcess('app');
  const hDevice = app.createDevice({ hAdapter: app.openAdapter('gpu0') });
  const ready = app.createNativeFence({ hDevice, initialValue: 0n, name: 'frameReady' });
  const consumed = app.createNativeFence({ hDevice, initialValue: 0n, name: 'frameConsumed' });
  const producer = app.createHwQueue({ hDevice, engine: 0, name: 'producer', nativeProgressFence: false });
  const consumer = app.createHwQueue({ hDevice, engine: 1, name: 'consumer', nativeProgressFence: false });
  let gpuWaits = 0;
  for (let n = 1n; n <= BigInt(frames); n++) {
    if (n > 1n) gpuWaits++;
    app.submit({ hHwQueue: producer.hHwQueue, commands: [
      ...(n > 1n ? [{ wait: { hSyncObject: consumed.hSyncObject, value: n - 1n } }] : []),
      { work: { durationNs: WORK_PRODUCE_NS } },
      { signal: { hSyncObject: ready.hSyncObject, value: n } },
    ] });
    gpuWaits++;
    app.submit({ hHwQueue: consumer.hHwQueue, commands: [
      { wait: { hSyncObject: ready.hSyncObject, value: n } },
      { work: { durationNs: WORK_CONSUME_NS } },
      { signal: { hSyncObject: consumed.hSyncObject, value: n } },
    ] });
  }
  let result: WaitResult | undefined;
  app.createThread('presenter', function* (cpu) {
    result = (yield cpu.wait({ objects: [consumed.hSyncObject], values: [BigInt(frames)] })) as WaitResult;
  });
  machine.run();
  return costOf(machine, 'native fence + hardware queue', gpuWaits, result);
}

/** Runs the workload on both models and returns the counts side by side. Bad options throw at the call. */
export function compareSynchronizationModels(options: { seed?: number; frames?: number } = {}): Promise<Comparison> {
  const o = v.options(options, 'compareSynchronizationModels(options)', ['seed', 'frames']);
  const seed = o.seed === undefined ? 1 : v.integer(o.seed, 'seed', 0, 0xffff_ffff);
  const frames = o.frames === undefined ? 3 : v.integer(o.frames, 'frames', 1, 1000);
  return compare(seed, frames);
}

async function compare(seed: number, frames: number): Promise<Comparison> {
  const monitored = await runMonitored(seed, frames);
  const native = await runNative(seed, frames);
  return { seed, frames, monitored, native, text: comparisonText(seed, frames, monitored, native) };
}

function comparisonText(seed: number, frames: number, m: ModelCost, n: ModelCost): string {
  const rows: [string, string | number, string | number][] = [
    ['CPU interrupts', m.cpuInterrupts, n.cpuInterrupts],
    ['  DMA completed', m.dmaCompletedInterrupts, n.dmaCompletedInterrupts],
    ['  monitored fence signaled', m.monitoredFenceInterrupts, n.monitoredFenceInterrupts],
    ['  native fence signaled', m.nativeFenceInterrupts, n.nativeFenceInterrupts],
    ['OS scans of pending waits', m.scans, n.scans],
    ['fence values the OS read to find them', m.fencesExamined, n.fencesExamined],
    ['CPU round trips that held GPU work', m.cpuRoundTrips, n.cpuRoundTrips],
    ['GPU waits in the workload', m.gpuWaits, n.gpuWaits],
    ['last frame consumed at (us)', (m.lastFrameConsumedNs / 1000).toFixed(3), (n.lastFrameConsumedNs / 1000).toFixed(3)],
  ];
  const width = 40;
  const lines = [
    `cost of the legacy model: the same producer/consumer workload (${frames} frames, seed ${seed})`,
    `${''.padEnd(width)}${'monitored fence +'.padStart(22)}${'native fence +'.padStart(18)}`,
    `${''.padEnd(width)}${'kernel-mode context'.padStart(22)}${'hardware queue'.padStart(18)}`,
  ];
  for (const [label, a, b] of rows) lines.push(`  ${label.padEnd(width - 2)}${String(a).padStart(22)}${String(b).padStart(18)}`);
  return lines.join('\n') + '\n';
}
