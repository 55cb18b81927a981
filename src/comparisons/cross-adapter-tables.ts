// The cross-adapter wait/signal scenarios of the native fence document
// (XA-06), played on an integrated GPU ("iGPU") and a discrete GPU ("dGPU").
//
// Each scenario table has a wait column pair (from the GPU, from the CPU) and
// a signal column pair; a run picks one wait and one signal. The rows below
// are the table's steps in the table's order. A row is NOT narrated by this
// file: each row has a matcher over the machine's trace, and the row is
// marked (with an 'explain' trace line naming it) only when the OS, driver or
// GPU actually did that step. A run therefore shows which rows happened, and
// in which order, and the tests check both.
//
// Scenario 1: both GPUs support native fences; the iGPU waits, the dGPU signals.
// Scenario 2a: the iGPU has no native fences and opens the dGPU's native fence
// as a monitored fence (XA-05); the iGPU waits (kernel-mode context or CPU),
// the dGPU signals. Scenario 2b: a monitored fence created on the iGPU is
// opened as a native fence on the dGPU; the iGPU signals (software signal
// packet or CPU), the dGPU waits (hardware queue or CPU). The document's 2b
// table ends at the dGPU's NotificationOnly call; the tests also check that
// the wait then completes.
//
// XA-07 (doorbell) adds a comparison workload: the same GPU-to-GPU
// producer/consumer run with the document's interrupt design and with the
// doorbell, with interrupt counts and wake latency side by side.

import { createMachine, type Machine } from '../machine/machine.js';
import type { TraceEvent } from '../base/trace.js';
import { WddmError } from '../base/errors.js';

export type ScenarioId = '1' | '2a' | '2b';
export type Side = 'gpu' | 'cpu';
export const SCENARIO_IDS: readonly ScenarioId[] = ['1', '2a', '2b'];

interface Ctx { waitQueue: string; signalQueue: string; waiter: string; signaller: string; process: string; waitContext: string; signalContext: string }

export interface ScenarioRow {
  row: number;
  column: 'wait' | 'signal';
  side: Side;
  text: string;
  match: (e: TraceEvent, c: Ctx) => boolean;
}

const isDdi = (e: TraceEvent, actor: string, notificationOnly: boolean) =>
  e.kind === 'ddi' && e.actor === actor && e.name === 'DxgkDdiUpdateCurrentValuesFromCpu' && e.args.NotificationOnly === notificationOnly;

/** Scenario 1's table, row by row (the document's wording, hFence and the value 10 as written there). */
export const SCENARIO_1_ROWS: readonly ScenarioRow[] = [
  { row: 1, column: 'wait', side: 'gpu', text: 'UMD inserts a wait for hFence CurrentValue == 10 instruction in the command buffer',
    match: (e, c) => e.kind === 'umd' && e.args.queue === c.waitQueue },
  { row: 1, column: 'wait', side: 'cpu', text: 'Runtime calls D3DKMTWaitForSynchronizationObjectFromCpu',
    match: (e, c) => e.kind === 'runtime' && e.actor === c.process && e.name === 'D3DKMTWaitForSynchronizationObjectFromCpu' },
  { row: 2, column: 'wait', side: 'cpu', text: 'VidSch tracks this sync object in its native fence CPU waiter list',
    match: (e) => e.kind === 'os' && e.name === 'waiter added' },
  { row: 3, column: 'signal', side: 'gpu', text: 'UMD inserts a write hFence CurrentValue = 10 signal instruction in the command buffer',
    match: (e, c) => e.kind === 'umd' && e.args.queue === c.signalQueue },
  { row: 3, column: 'signal', side: 'cpu', text: 'Runtime calls D3DKMTSignalSynchronizationObjectFromCpu',
    match: (e, c) => e.kind === 'runtime' && e.actor === c.process && e.name === 'D3DKMTSignalSynchronizationObjectFromCpu' },
  { row: 4, column: 'signal', side: 'gpu', text: 'VidSch receives a native fence signaled ISR when CurrentValue is written (because MonitoredValue == 0 always)',
    match: (e, c) => e.kind === 'interrupt' && e.actor === c.signaller && e.name === 'DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED' },
  { row: 4, column: 'signal', side: 'cpu', text: 'VidSch calls DxgkDdiUpdateCurrentValuesFromCpu(hFence, 10)',
    match: (e, c) => isDdi(e, c.signaller, false) },
  { row: 5, column: 'signal', side: 'gpu', text: 'VidSch propagates the signal (hFence, 10) to the iGPU',
    match: (e, c) => e.kind === 'os' && e.name === 'cross-adapter signal propagated' && e.args.to === c.waiter },
  { row: 5, column: 'signal', side: 'cpu', text: 'VidSch propagates the signal (hFence, 10) to the iGPU',
    match: (e, c) => e.kind === 'os' && e.name === 'cross-adapter signal propagated' && e.args.to === c.waiter },
  { row: 6, column: 'signal', side: 'gpu', text: 'VidSch receives the propagated signal and calls DxgkDdiUpdateCurrentValuesFromCpu(hFence, NotificationOnly=TRUE)',
    match: (e, c) => isDdi(e, c.waiter, true) },
  { row: 6, column: 'signal', side: 'cpu', text: 'VidSch receives the propagated signal and calls DxgkDdiUpdateCurrentValuesFromCpu(hFence, NotificationOnly=TRUE)',
    match: (e, c) => isDdi(e, c.waiter, true) },
  { row: 7, column: 'wait', side: 'gpu', text: 'KMD rescans the run list to unblock HW channel that was waiting on hFence',
    match: (e, c) => e.kind === 'gpu' && e.actor.startsWith(`${c.waiter}/`) && e.name === 'wait unblocked' },
  { row: 7, column: 'wait', side: 'cpu', text: 'VidSch unblocks the CPU wait condition by signaling the KEVENT',
    match: (e) => e.kind === 'cpu' && e.name === 'KEVENT signaled' },
];

const propagatedTo = (e: TraceEvent, to: string) => e.kind === 'os' && e.name === 'cross-adapter signal propagated' && e.args.to === to;
const both = (row: number, column: 'wait' | 'signal', text: string, match: ScenarioRow['match']): ScenarioRow[] =>
  [{ row, column, side: 'gpu', text, match }, { row, column, side: 'cpu', text, match }];

/** Scenario 2a: the iGPU has no native fences (it opens the dGPU's native fence as a monitored fence); the iGPU waits, the dGPU signals. */
export const SCENARIO_2A_ROWS: readonly ScenarioRow[] = [
  { row: 1, column: 'wait', side: 'gpu', text: 'Runtime calls D3DKMTWaitForSynchronizationObjectFromGpu',
    match: (e, c) => e.kind === 'runtime' && e.actor === c.process && e.name === 'D3DKMTWaitForSynchronizationObjectFromGpu' },
  { row: 1, column: 'wait', side: 'cpu', text: 'Runtime calls D3DKMTWaitForSynchronizationObjectFromCpu',
    match: (e, c) => e.kind === 'runtime' && e.actor === c.process && e.name === 'D3DKMTWaitForSynchronizationObjectFromCpu' },
  { row: 2, column: 'wait', side: 'gpu', text: 'VidSch tracks this sync object in its monitored fence waiting list',
    match: (e, c) => e.kind === 'os' && e.name === 'context held by GPU wait' && e.args.context === c.waitContext },
  { row: 2, column: 'wait', side: 'cpu', text: 'VidSch tracks this sync object in its monitored fence CPU waiter list head',
    match: (e) => e.kind === 'os' && e.name === 'waiter added' },
  ...SCENARIO_1_ROWS.filter((r) => r.row === 3),
  { row: 4, column: 'signal', side: 'gpu', text: 'VidSch receives NativeFenceSignaledISR when CurrentValue is written (because MV == 0 always)',
    match: (e, c) => e.kind === 'interrupt' && e.actor === c.signaller && e.name === 'DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED' },
  { row: 4, column: 'signal', side: 'cpu', text: 'VidSch calls DxgkDdiUpdateCurrentValuesFromCpu(hFence, 10)',
    match: (e, c) => isDdi(e, c.signaller, false) },
  ...both(5, 'signal', 'VidSch propagates the signal (hFence, 10) to iGPU', (e, c) => propagatedTo(e, c.waiter)),
  ...both(6, 'signal', 'VidSch receives the propagated signal and observes new fence value',
    (e, c) => e.kind === 'os' && e.actor === c.waiter && e.name === 'propagated signal received: observes the new fence value'),
  { row: 7, column: 'wait', side: 'gpu', text: 'VidSch scans its monitored fence waiting list and unblocks software contexts',
    match: (e, c) => e.kind === 'os' && e.name === 'GPU wait satisfied: context released' && e.args.context === c.waitContext },
  { row: 7, column: 'wait', side: 'cpu', text: 'VidSch scans its monitored fence CPU waiter list head and unblocks CPU wait by signaling the KEVENT',
    match: (e) => e.kind === 'cpu' && e.name === 'KEVENT signaled' },
];

/** Scenario 2b: the same adapters; the iGPU (monitored fence, created there) signals, the dGPU (opened as a native fence) waits. */
export const SCENARIO_2B_ROWS: readonly ScenarioRow[] = [
  { row: 1, column: 'wait', side: 'gpu', text: 'UMD inserts a wait for hFence CurrentValue == 10 instruction in command buffer',
    match: (e, c) => e.kind === 'umd' && e.args.queue === c.waitQueue },
  { row: 1, column: 'wait', side: 'cpu', text: 'Runtime calls D3DKMTWaitForSynchronizationObjectFromCpu',
    match: (e, c) => e.kind === 'runtime' && e.actor === c.process && e.name === 'D3DKMTWaitForSynchronizationObjectFromCpu' },
  { row: 2, column: 'wait', side: 'cpu', text: 'VidSch tracks this sync object in its native fence CPU waiter list',
    match: (e) => e.kind === 'os' && e.name === 'waiter added' },
  { row: 3, column: 'signal', side: 'gpu', text: 'UMD calls D3DKMTSignalSynchronizationObjectFromGpu',
    match: (e, c) => e.kind === 'runtime' && e.actor === c.process && e.name === 'D3DKMTSignalSynchronizationObjectFromGpu' },
  { row: 3, column: 'signal', side: 'cpu', text: 'UMD calls D3DKMTSignalSynchronizationObjectFromCpu',
    match: (e, c) => e.kind === 'runtime' && e.actor === c.process && e.name === 'D3DKMTSignalSynchronizationObjectFromCpu' },
  { row: 4, column: 'signal', side: 'gpu', text: 'When packet is at the head of the software context, VidSch updates fence value directly from CPU',
    match: (e) => e.kind === 'os' && e.name === 'monitored fence value written' },
  { row: 4, column: 'signal', side: 'cpu', text: 'VidSch updates fence value directly from CPU',
    match: (e) => e.kind === 'os' && e.name === 'monitored fence value written' },
  ...both(5, 'signal', 'VidSch propagates the signal (hFence, 10) to dGPU', (e, c) => propagatedTo(e, c.waiter)),
  ...both(6, 'signal', 'VidSch receives the propagated signal and calls DxgkDdiUpdateCurrentValuesFromCpu(hFence, NotificationOnly=TRUE)', (e, c) => isDdi(e, c.waiter, true)),
];

export interface ScenarioStep {
  row: number;
  column: 'wait' | 'signal';
  text: string;
  /** The trace event that did the step (undefined: the step never happened). */
  event?: TraceEvent;
}

export interface ScenarioRun {
  scenario: ScenarioId;
  wait: Side;
  signal: Side;
  title: string;
  machine: Machine;
  steps: ScenarioStep[];
  /** Every row happened, each after the one before it. */
  inOrder: boolean;
}

/** The rows a (wait, signal) pair reads from the table, in the table's order. */
export function rowsFor(scenario: ScenarioId, wait: Side, signal: Side): ScenarioRow[] {
  const table = scenario === '1' ? SCENARIO_1_ROWS : scenario === '2a' ? SCENARIO_2A_ROWS : scenario === '2b' ? SCENARIO_2B_ROWS : undefined;
  if (!table) throw new WddmError('INVALID_PARAMETER', `scenario is ${JSON.stringify(scenario)}; expected one of 1, 2a, 2b`, { parameter: 'scenario', value: scenario, expected: '1, 2a or 2b' });
  return table.filter((r) => (r.column === 'wait' ? r.side === wait : r.side === signal));
}

const sideName = (s: Side) => (s === 'gpu' ? 'GPU' : 'CPU');

/** Plays one wait/signal pair of a scenario. */
export async function runScenario(scenario: ScenarioId, wait: Side, signal: Side, seed = 1): Promise<ScenarioRun> {
  if (!SCENARIO_IDS.includes(scenario)) throw new WddmError('INVALID_PARAMETER', `scenario is ${JSON.stringify(scenario)}; expected one of 1, 2a, 2b`, { parameter: 'scenario', value: scenario, expected: '1, 2a or 2b' });
  if (wait !== 'gpu' && wait !== 'cpu') throw new WddmError('INVALID_PARAMETER', `wait is ${JSON.stringify(wait)}; expected "gpu" or "cpu"`, { parameter: 'wait', value: wait, expected: 'gpu or cpu' });
  if (signal !== 'gpu' && signal !== 'cpu') throw new WddmError('INVALID_PARAMETER', `signal is ${JSON.stringify(signal)}; expected "gpu" or "cpu"`, { parameter: 'signal', value: signal, expected: 'gpu or cpu' });
  const rows = rowsFor(scenario, wait, signal);
  // Scenarios 1 and 2a: the iGPU waits, the dGPU signals. Scenario 2b: the iGPU signals, the dGPU waits.
  const iWaits = scenario !== '2b';
  const waiterName = iWaits ? 'iGPU' : 'dGPU';
  const signallerName = iWaits ? 'dGPU' : 'iGPU';
  const title = `Scenario ${scenario}: ${waiterName} WaitFrom${sideName(wait)}(hFence, 10) + ${signallerName} SignalFrom${sideName(signal)}(hFence, 10)`;
  const iGpuNative = scenario === '1';
  const machine = await createMachine({
    seed,
    adapters: [{ name: 'iGPU', integrated: true, engines: 1, caps: { nativeGpuFence: iGpuNative } }, { name: 'dGPU', engines: 1 }],
  });
  const ctx: Ctx = {
    waitQueue: `${waiterName}.wait`, signalQueue: `${signallerName}.signal`, waiter: waiterName, signaller: signallerName, process: 'app',
    waitContext: `${waiterName}.context`, signalContext: `${signallerName}.context`,
  };
  const steps: ScenarioStep[] = rows.map((r) => ({ row: r.row, column: r.column, text: r.text }));
  machine.trace.onEvent((e) => {
    if (e.kind === 'explain') return;
    rows.forEach((r, i) => {
      if (steps[i].event || !r.match(e, ctx)) return;
      steps[i].event = e;
      const column = r.column === 'wait' ? `${waiterName} WaitFrom${sideName(wait)}` : `${signallerName} SignalFrom${sideName(signal)}`;
      machine.trace.record('explain', 'table', `Scenario ${scenario} row ${r.row} (${column})`, { step: r.text });
    });
  });
  machine.trace.record('explain', 'table', title, {});

  const app = machine.createProcess('app');
  const iDevice = app.createDevice({ hAdapter: app.openAdapter('iGPU') });
  const dDevice = app.createDevice({ hAdapter: app.openAdapter('dGPU') });
  let onI: { hSyncObject: number };
  let onD: { hSyncObject: number };
  if (scenario === '2b') {
    // A monitored fence created on the iGPU (no native fences there), opened as a native fence on the dGPU (XA-05).
    onI = app.createSynchronizationObject({ hDevice: iDevice, type: 'MONITORED_FENCE', initialValue: 0n, flags: { shared: true, crossAdapter: true }, name: 'hFence' });
    onD = app.openNativeFenceFromNtHandle({ hNtHandle: app.shareObject(onI.hSyncObject), hDevice: dDevice });
  } else {
    // A native fence created on the dGPU, opened on the iGPU (scenario 2a: as a monitored fence there, XA-05).
    onD = app.createNativeFence({ hDevice: dDevice, initialValue: 0n, flags: { shared: true, crossAdapter: true }, name: 'hFence' });
    onI = app.openNativeFenceFromNtHandle({ hNtHandle: app.shareObject(onD.hSyncObject), hDevice: iDevice });
  }
  machine.run();
  const [waitDevice, waitFence, signalDevice, signalFence] = iWaits ? [iDevice, onI, dDevice, onD] : [dDevice, onD, iDevice, onI];
  const waitNative = iWaits ? iGpuNative : true;
  const signalNative = iWaits ? true : iGpuNative;

  // The wait first (so it is pending when the signal comes).
  let event: number | undefined;
  if (wait === 'gpu' && waitNative) {
    const queue = app.createHwQueue({ hDevice: waitDevice, name: ctx.waitQueue, nativeProgressFence: false });
    app.submit({ hHwQueue: queue.hHwQueue, commands: [{ wait: { hSyncObject: waitFence.hSyncObject, value: 10n } }] });
  } else if (wait === 'gpu') {
    const hContext = app.createContext({ hDevice: waitDevice, name: ctx.waitContext });
    app.waitForSynchronizationObjectFromGpu({ hContext, objects: [waitFence.hSyncObject], values: [10n] });
    app.submitCommand({ hContext, commands: [{ work: { durationNs: 500 } }] }); // the work the wait holds
  } else {
    event = app.createEvent('KEVENT');
    app.waitWithEvent({ objects: [waitFence.hSyncObject], values: [10n], hAsyncEvent: event });
  }
  machine.run();
  if (signal === 'gpu' && signalNative) {
    const queue = app.createHwQueue({ hDevice: signalDevice, name: ctx.signalQueue, nativeProgressFence: false });
    app.submit({ hHwQueue: queue.hHwQueue, commands: [{ signal: { hSyncObject: signalFence.hSyncObject, value: 10n } }] });
  } else if (signal === 'gpu') {
    const hContext = app.createContext({ hDevice: signalDevice, name: ctx.signalContext });
    app.signalSynchronizationObjectFromGpu({ hContext, objects: [signalFence.hSyncObject], values: [10n] });
  } else {
    app.signal({ objects: [signalFence.hSyncObject], values: [10n] });
  }
  machine.run();
  if (event !== undefined && !app.isEventSet(event)) machine.trace.record('fault', 'table', 'the KEVENT was never signaled', {});

  let inOrder = steps.every((s) => s.event);
  for (let i = 1; i < steps.length && inOrder; i++) if (steps[i].event!.seq <= steps[i - 1].event!.seq) inOrder = false;
  return { scenario, wait, signal, title, machine, steps, inOrder };
}

/** Every wait/signal pair of a scenario: GPU+GPU, GPU+CPU, CPU+GPU, CPU+CPU. */
export async function runScenarioPairs(scenario: ScenarioId, seed = 1): Promise<ScenarioRun[]> {
  const runs: ScenarioRun[] = [];
  for (const wait of ['gpu', 'cpu'] as const) for (const signal of ['gpu', 'cpu'] as const) runs.push(await runScenario(scenario, wait, signal, seed));
  return runs;
}

/** The step-by-step text `wddm-fence table N` prints. */
export function scenarioText(runs: ScenarioRun[]): string {
  const out: string[] = [];
  for (const run of runs) {
    out.push(`=== ${run.title} ===`);
    out.push('table steps, in the table\'s order:');
    for (const s of run.steps) {
      const at = s.event ? `${(s.event.timeNs / 1000).toFixed(3)}us #${s.event.seq} ${s.event.kind} ${s.event.actor} ${s.event.name}` : 'DID NOT HAPPEN';
      out.push(`  row ${s.row} [${s.column}] ${s.text}\n           → ${at}`);
    }
    out.push(run.inOrder ? 'every step happened, in the table\'s order' : 'STEPS MISSING OR OUT OF ORDER');
    out.push('trace:');
    out.push(run.machine.trace.text((e) => e.kind !== 'machine' && e.kind !== 'cb').trimEnd());
    out.push(run.machine.summaryText());
  }
  return out.join('\n') + '\n';
}

// ───────────────────────── XA-07: doorbell vs interrupts ─────────────────────────

export interface DoorbellComparison {
  interrupt: { machine: Machine; interrupts: number; crossWakes: number; meanWakeNs: number; maxWakeNs: number };
  doorbell: { machine: Machine; interrupts: number; crossWakes: number; meanWakeNs: number; maxWakeNs: number; fallbacks: number };
}

/**
 * The same workload twice: the dGPU produces `frames` values of a
 * cross-adapter fence; the iGPU consumes each with a GPU wait; no CPU waits.
 * `ringEntries` sizes the doorbell rings (small rings show the fallback).
 */
export async function compareDoorbell(frames = 8, seed = 1, ringEntries = 64): Promise<DoorbellComparison> {
  const run = async (doorbell: boolean) => {
    const machine = await createMachine({
      seed, adapters: [{ name: 'iGPU', integrated: true, engines: 1 }, { name: 'dGPU', engines: 1 }],
      doorbell: { enabled: doorbell, ringEntries },
      timing: { jitter: 0 }, // the comparison shows the configured latencies themselves
    });
    machine.trace.record('explain', 'workload', `dGPU produces ${frames} values of a cross-adapter fence, the iGPU waits for each on the GPU (${doorbell ? 'doorbell' : 'interrupt + OS propagation'})`, {});
    const app = machine.createProcess('app');
    const iDevice = app.createDevice({ hAdapter: app.openAdapter('iGPU') });
    const dDevice = app.createDevice({ hAdapter: app.openAdapter('dGPU') });
    const onD = app.createNativeFence({ hDevice: dDevice, flags: { shared: true, crossAdapter: true }, name: 'frames' });
    const onI = app.openNativeFenceFromNtHandle({ hNtHandle: app.shareObject(onD.hSyncObject), hDevice: iDevice });
    machine.run();
    const before = machine.summary().adapters.reduce((n, a) => n + a.interruptsRaised, 0);
    const consumer = app.createHwQueue({ hDevice: iDevice, name: 'consumer', nativeProgressFence: false });
    const producer = app.createHwQueue({ hDevice: dDevice, name: 'producer', nativeProgressFence: false });
    const waits = [];
    const signals = [];
    for (let f = 1; f <= frames; f++) {
      waits.push({ wait: { hSyncObject: onI.hSyncObject, value: BigInt(f) } }, { work: { durationNs: 200 } });
      signals.push({ work: { durationNs: 5000 } }, { signal: { hSyncObject: onD.hSyncObject, value: BigInt(f) } });
    }
    app.submit({ hHwQueue: consumer.hHwQueue, commands: waits });
    app.submit({ hHwQueue: producer.hHwQueue, commands: signals });
    machine.run();
    const c = machine.os.inspect.crossAdapterCounters;
    const interrupts = machine.summary().adapters.reduce((n, a) => n + a.interruptsRaised, 0) - before;
    return { machine, interrupts, crossWakes: c.crossWakes, meanWakeNs: c.crossWakes ? c.crossWakeTotalNs / c.crossWakes : 0, maxWakeNs: c.crossWakeMaxNs, fallbacks: c.doorbellFallbacks };
  };
  const interrupt = await run(false);
  const doorbell = await run(true);
  return { interrupt, doorbell };
}

export function doorbellComparisonText(c: DoorbellComparison): string {
  const line = (name: string, r: { interrupts: number; crossWakes: number; meanWakeNs: number; maxWakeNs: number }) =>
    `  ${name.padEnd(28)} interrupts=${r.interrupts} crossAdapterWakes=${r.crossWakes} wakeLatencyMeanNs=${r.meanWakeNs.toFixed(0)} wakeLatencyMaxNs=${r.maxWakeNs}`;
  return [
    '=== XA-07: the same workload, interrupt design vs doorbell ===',
    c.doorbell.machine.trace.text((e) => e.kind !== 'machine' && e.kind !== 'cb').trimEnd(),
    c.doorbell.machine.summaryText().trimEnd(),
    'comparison (virtual time):',
    line('interrupt + OS propagation', c.interrupt),
    line('doorbell', c.doorbell) + ` fallbacks=${c.doorbell.fallbacks}`,
  ].join('\n') + '\n';
}
