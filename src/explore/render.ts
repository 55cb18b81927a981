// How the explorer shows a step and the state after it (step lists of
// counterexamples and replays). Everything is read, nothing is changed.
//
//   values     0, v<k> (the k-th signalled value), v<k>-1, MAX (UINT64_MAX),
//              anything else in hex (a torn value shows as such)
//   a state    per fence: CurrentValue, MonitoredValue in memory and in the
//              CMP's write buffer; per engine: its write buffer, its signal in
//              flight and its interrupt line; the OS's waiters; each thread.
//              Items that changed in the step are marked with *.

import { u64 } from '../core/bindings.js';
import type { ScheduledEvent } from '../base/scheduler.js';
import { SIGNAL_PHASE_STEP } from '../gpu/hardware.js';
import type { World } from './world.js';
import { MonitoredValueUpdateSteps, type CmpStep } from '../driver/reference.js';
import { eventName } from './state.js';

const UINT64_MAX = 0xffff_ffff_ffff_ffffn;
const UNIT = 0x1_0000_0001n;

/** A fence value as the explorer writes it (see the header). */
export function formatValue(value: bigint): string {
  if (value === 0n) return '0';
  if (value === UINT64_MAX) return 'MAX';
  if (value % UNIT === 0n && value / UNIT <= 1000n) return `v${value / UNIT}`;
  if ((value + 1n) % UNIT === 0n && (value + 1n) / UNIT <= 1000n) return `v${(value + 1n) / UNIT}-1`;
  return `0x${value.toString(16).padStart(16, '0')}`;
}

function fenceByCore(world: World, adapter: number, coreFence: number): string {
  if (world.kind === 'scenario') {
    // A queue names the record of its own adapter; the explorer names each record (hFence, hFence@iGPU).
    const own = world.fences.find((f) => f.adapter === adapter && !f.global.destroyed && f.global.coreFence === coreFence);
    if (own) return own.name;
  }
  return world.fences.find((f) => f.adapter === adapter && f.global.coreFence === coreFence)?.name ?? `fence#${coreFence}`;
}

function fenceByCurrentValueAddress(world: World, adapter: number, address: number): string {
  const core = world.machine.adapters[adapter].core;
  return world.fences.find((f) => f.adapter === adapter && core.fenceCurrentValueAddress(f.global.coreFence) === address)?.name ?? `@${address}`;
}

function fenceByMonitoredValueAddress(world: World, adapter: number, address: number): string {
  const core = world.machine.adapters[adapter].core;
  return world.fences.find((f) => f.adapter === adapter && core.fenceMonitoredValueAddress(f.global.coreFence) === address)?.name ?? `@${address}`;
}

/** What an enabled event will do, in the model's words. */
export function describeEvent(world: World, event: ScheduledEvent): string {
  const machine = world.machine;
  const formatValue = (value: bigint) => world.formatValue(value);
  const adapterIndex = machine.adapters.findIndex((a) => a.name === event.owner);
  if (adapterIndex >= 0) {
    const adapter = machine.adapters[adapterIndex];
    const engine = event.args.engine as number;
    const actor = `${adapter.name}/engine${engine}`;
    if (event.kind === 'engine-tick') {
      const queue = adapter.hardware.peekRunnable(engine);
      if (!queue) return `${actor} tick: nothing to run`;
      const op = adapter.core.queueHeadOp(queue.id);
      const fence = fenceByCore(world, adapterIndex, adapter.core.queueHeadFence(queue.id));
      const value = formatValue(u64(adapter.core.queueHeadValue(queue.id)));
      const L = machine.layout;
      if (op === L.opSignal) {
        return adapter.hardware.granularity === 'step' ? `${actor} 1 engineSignalWrite ${fence} ← ${value} (${queue.label})` : `${actor} signal ${fence} ← ${value} (${queue.label})`;
      }
      if (world.kind === 'scenario') {
        if (op === L.opWait) return `${actor} ${queue.label}: wait for ${fence} ≥ ${value} (passes, or the queue blocks)`;
        if (op === L.opWork) return `${actor} ${queue.label}: work`;
        if (op === L.opFenceWrite) return `${actor} ${queue.label}: fence write ${fence} ← ${value} (low 32 bits on a No64BitAtomics GPU)`;
        if (op === L.opNop) return `${actor} ${queue.label}: command buffer done (its DMA completed interrupt comes next)`;
      }
      return `${actor} runs the next command of ${queue.label}`;
    }
    if (event.kind === 'engine-step') {
      const signal = adapter.hardware.signalInFlight(engine);
      if (!signal) return `${actor} step: nothing in flight`;
      return `${actor} ${SIGNAL_PHASE_STEP[signal.phase]} ${fenceByCore(world, adapterIndex, signal.fence)} ${formatValue(signal.value)}`;
    }
    if (event.kind === 'interrupt') {
      if (world.kind === 'scenario') return `${actor} interrupt delivered: the driver's ISR reports what the engine raised, the OS serves it`;
      return machine.os.inspect.stepwise ? `${actor} interrupt delivered: ISR, then the OS satisfies the waiters of the fences it lists`
        : `${actor} interrupt delivered: ISR, then the OS serves it (NF-09)`;
    }
    if (event.kind === 'dma-completed') return `${actor} DMA completed interrupt: the OS scans the monitored fences with pending waits (MF-06)`;
    return `${adapter.name} ${event.kind}`;
  }
  if (event.kind === 'thread-resume') {
    const process = machine.processes.find((p) => p.owner === event.owner);
    const thread = process?.threads[event.args.thread as number];
    const described = thread && world.describeResume(thread);
    if (described) return described;
  }
  if (event.owner === 'dxgkrnl' && event.kind === 'os-step') return describeOsStep(world);
  if (event.owner === 'dxgkrnl' && event.kind === 'wait-timeout') return `OS: ${event.label.replace(/^timeout /, '')}'s CPU wait times out: released with TIMEOUT`;
  if (event.kind === 'thread-event-timeout') return `${eventName(event)}: an event wait times out`;
  if (event.owner === 'scenario' && event.kind === 'fault') return `the scenario's faults[${event.args.index}] happens`;
  if (event.owner === 'explorer' && event.kind === 'fault') {
    return event.args.kind === 'removal' ? `the explorer removes ${event.args.adapter} for good (adapter removal, --faults)`
      : `the explorer injects a TDR on ${event.args.adapter} (device removal and restart, --faults)`;
  }
  return eventName(event);
}

const CMP_LETTER: Readonly<Record<CmpStep, string>> = {
  'write-monitored-value': 'a cmpWriteMonitoredValue', 'barrier': 'b cmpBarrier', 'read-current-value': 'c cmpReadCurrentValue', 'check': 'd cmpMonitoredValueCheck',
};

/** The next step of the OS operation in flight (src/os/waits.ts). */
function describeOsStep(world: World): string {
  const op = world.machine.os.inspect.operation;
  if (!op) return 'dxgkrnl os-step: no operation in flight';
  const formatValue = (value: bigint) => world.formatValue(value);
  // The loop names fences by key (src/os/fence-rows.ts): the world's name of the fence at that adapter and core id.
  const fenceName = (key: number) => {
    const { adapterIndex, coreFence, label } = world.machine.os.inspect.fenceKey(key);
    return world.fences.find((f) => f.adapter === adapterIndex && f.global.coreFence === coreFence)?.name ?? label;
  };
  switch (op.phase) {
    case 'retire': {
      const { owner, label } = op.retiring[0];
      const name = world.threads.find((t) => t.thread === owner.tag)?.name ?? label;
      return `OS retires ${name}: its wait is satisfied, its thread wakes`;
    }
    case 'monitored-write': {
      const batch = op.batch!;
      const values = batch.fences.map((f, i) => `${fenceName(f)}.MV ← ${formatValue(batch.values[i])}`).join(', ');
      return `OS: ${values}: DxgkDdiUpdateMonitoredValues, the driver's first step`;
    }
    case 'ddi': {
      const steps = op.ddi!.steps;
      const adapter = world.machine.adapters[op.ddi!.adapterIndex];
      if (steps instanceof MonitoredValueUpdateSteps) {
        const fence = world.fences.find((f) => f.adapter === op.ddi!.adapterIndex && f.global.coreFence === steps.fences[steps.index]);
        const name = fence?.name ?? `fence#${steps.fences[steps.index]}`;
        const what = steps.next === 'barrier' ? CMP_LETTER.barrier
          : steps.next === 'write-monitored-value' ? `${CMP_LETTER[steps.next]} ${name}.MV ← ${formatValue(steps.values[steps.index])}`
          : steps.next === 'check' ? `${CMP_LETTER.check} ${name}: CV read ${formatValue(steps.currentValue)} > MV?` : `${CMP_LETTER[steps.next]} ${name}`;
        return `${adapter.name} DxgkDdiUpdateMonitoredValues ${what}`;
      }
      return `${adapter.name} DxgkDdiUpdateMonitoredValues: ${steps.describeNext?.() ?? 'the driver\'s next step'}`;
    }
    case 'resample': {
      const batch = op.batch!;
      return `OS re-reads ${fenceName(batch.fences[batch.resampled])}'s CurrentValue and satisfies what it reached (NF-09)`;
    }
    case 'notify': {
      const n = op.notifications[0];
      const what = n.records.map((r, i) => `${fenceName(r.key)} = ${formatValue(n.values[i])}`).join(', ');
      return n.records[0]?.kind === 'monitored'
        ? `OS: the signal reaches ${n.target.name} (no native fences): it scans its monitored fences with pending waits (${what}; XA-05)`
        : `OS: ${n.target.name} DxgkDdiUpdateCurrentValuesFromCpu NotificationOnly (${what}): its driver rescans its run list, then its waiters (XA-04)`;
    }
    case 'log-read': {
      const read = op.logReads[0];
      return `OS reads the ${read.queues.map((q) => q.queue.label).join(', ')} logs of ${read.adapter.name} (${read.reason}): headers, DxgkDdiUpdateNativeFenceLogs, entries (LOG-05, INT-05)`;
    }
    case 'log-fallback': {
      const fallback = op.logFallbacks[0];
      return `OS log fallback on ${fallback.adapter.name}: every fence of ${fallback.queue.queue.label}'s device against its CurrentValue (LOG-05)`;
    }
  }
}

/** The state items a step list shows, keyed so that two of them can be compared. */
export function stateItems(world: World): [string, string][] {
  const items: [string, string][] = [];
  const machine = world.machine;
  const formatValue = (value: bigint) => world.formatValue(value);
  for (const f of world.fences) {
    const g = f.global;
    const core = machine.adapters[f.adapter].core;
    if (g.destroyed) { items.push([f.name, `${f.name} destroyed`]); continue; }
    items.push([`${f.name}.cv`, `${f.name} CV=${formatValue(u64(core.cpuReadCurrentValue(g.coreFence)))}`]);
    if (g.kind === 'native') items.push([`${f.name}.mv`, `MV=${formatValue(u64(core.cpuReadMonitoredValue(g.coreFence)))}`]);
  }
  machine.adapters.forEach((adapter, a) => {
    const core = adapter.core;
    if (adapter.state !== 'running') { items.push([`${adapter.name}.state`, `${adapter.name} ${adapter.state}`]); return; }
    const cmp = core.cmpPendingWrite();
    items.push([`${adapter.name}.cmp`, `${adapter.name} CMP buffer ${cmp ? `${fenceByMonitoredValueAddress(world, a, cmp)}.MV←${formatValue(u64(core.cmpPendingValue()))}` : 'empty'}`]);
    for (let e = 0; e < adapter.hardware.engineCount; e++) {
      if (![...adapter.hardware.queues.values()].some((q) => q.engine === e)) continue;
      const pending = core.enginePendingWrite(e);
      const signal = adapter.hardware.signalInFlight(e);
      const buffer = pending ? `${fenceByCurrentValueAddress(world, a, pending)}.CV←${signal ? formatValue(signal.value) : '?'}` : 'empty';
      items.push([`${adapter.name}.e${e}.wb`, `engine${e} buffer ${buffer}`]);
      items.push([`${adapter.name}.e${e}.next`, signal ? `next ${SIGNAL_PHASE_STEP[signal.phase]}` : 'between commands']);
      items.push([`${adapter.name}.e${e}.irq`, `irq ${core.engineInterruptLine(e) ? 'raised' : '-'}`]);
    }
  });
  const waiting = machine.os.inspect.pendingWaiterList().map((w) => {
    const name = world.threads.find((x) => x.thread === w.owner.tag)?.name ?? w.label;
    return `${name}(${w.waits.map((x) => `${world.fences.find((f) => f.global === x.fence)?.name ?? x.fence.label}≥${formatValue(x.value)}`).join(',')})`;
  });
  items.push(['os.waiters', `OS waiters ${waiting.length ? waiting.join(' ') : 'none'}`]);
  if (machine.os.inspect.stepwise) {
    const op = machine.os.inspect.operation;
    items.push(['os.lock', `OS lock ${op ? `held (${op.label})` : 'free'}`]);
  }
  items.push(...world.threadItems());
  return items;
}

/** One state line; items that differ from `before` are marked with *. */
export function stateLine(items: [string, string][], before?: [string, string][]): string {
  const old = new Map(before ?? []);
  return items.map(([key, text]) => (before && old.get(key) !== text ? `*${text}` : text)).join('  ');
}
