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
import type { World } from './model.js';
import type { GlobalFence } from '../os/objects.js';
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
      if (op === machine.layout.opSignal) {
        return adapter.hardware.granularity === 'step' ? `${actor} 1 engineSignalWrite ${fence} ← ${value} (${queue.label})` : `${actor} signal ${fence} ← ${value} (${queue.label})`;
      }
      return `${actor} runs the next command of ${queue.label}`;
    }
    if (event.kind === 'engine-step') {
      const signal = adapter.hardware.signalInFlight(engine);
      if (!signal) return `${actor} step: nothing in flight`;
      return `${actor} ${SIGNAL_PHASE_STEP[signal.phase]} ${fenceByCore(world, adapterIndex, signal.fence)} ${formatValue(signal.value)}`;
    }
    if (event.kind === 'interrupt') {
      return machine.os.waits.stepwise ? `${actor} interrupt delivered: ISR, then the OS satisfies the waiters of the fences it lists`
        : `${actor} interrupt delivered: ISR, then the OS serves it (NF-09)`;
    }
    return `${adapter.name} ${event.kind}`;
  }
  if (event.owner === `process ${world.process.kernel.slot}` && event.kind === 'thread-resume') {
    const thread = world.process.threads[event.args.thread as number];
    const waiter = world.waiters.find((w) => w.thread === thread);
    if (waiter) {
      const fence = world.fences[waiter.fence].name;
      if (thread.state === 'ready') {
        return machine.os.waits.stepwise ? `${waiter.name} waits for ${fence} ≥ ${formatValue(waiter.value)}: the OS adds the waiter (or finds CurrentValue there)`
          : `${waiter.name} waits for ${fence} ≥ ${formatValue(waiter.value)}: the OS adds the waiter, UpdateMonitoredValues, re-reads CurrentValue`;
      }
      return `${waiter.name} resumes from its wait`;
    }
    const signaller = world.signallers.find((s) => s.thread === thread);
    if (signaller) {
      const value = signaller.values[thread.blockNumber];
      return `${signaller.name} signals ${world.fences[signaller.fence].name} = ${value === undefined ? '?' : formatValue(value)} from the CPU: UpdateCurrentValuesFromCpu, then its waiters`;
    }
  }
  if (event.owner === 'dxgkrnl' && event.kind === 'os-step') return describeOsStep(world);
  return eventName(event);
}

const CMP_LETTER: Readonly<Record<CmpStep, string>> = {
  'write-monitored-value': 'a cmpWriteMonitoredValue', 'barrier': 'b cmpBarrier', 'read-current-value': 'c cmpReadCurrentValue', 'check': 'd cmpMonitoredValueCheck',
};

/** The next step of the OS operation in flight (src/os/waits.ts). */
function describeOsStep(world: World): string {
  const op = world.machine.os.waits.operation;
  if (!op) return 'dxgkrnl os-step: no operation in flight';
  const fenceName = (g: GlobalFence) => world.fences.find((f) => f.global === g)?.name ?? g.label;
  switch (op.phase) {
    case 'retire': {
      const { completion } = op.retiring[0];
      const name = world.waiters.find((w) => w.thread === completion.owner.tag)?.name ?? completion.label;
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
  }
}

/** The state items a step list shows, keyed so that two of them can be compared. */
export function stateItems(world: World): [string, string][] {
  const items: [string, string][] = [];
  const machine = world.machine;
  for (const f of world.fences) {
    const g = f.global;
    const core = machine.adapters[f.adapter].core;
    if (g.destroyed) { items.push([f.name, `${f.name} destroyed`]); continue; }
    items.push([`${f.name}.cv`, `${f.name} CV=${formatValue(u64(core.cpuReadCurrentValue(g.coreFence)))}`]);
    items.push([`${f.name}.mv`, `MV=${formatValue(u64(core.cpuReadMonitoredValue(g.coreFence)))}`]);
  }
  machine.adapters.forEach((adapter, a) => {
    const core = adapter.core;
    const cmp = core.cmpPendingWrite();
    items.push([`${adapter.name}.cmp`, `${adapter.name} CMP buffer ${cmp ? `${fenceByMonitoredValueAddress(world, a, cmp)}.MV←${formatValue(u64(core.cmpPendingValue()))}` : 'empty'}`]);
    for (let e = 0; e < adapter.hardware.engineCount; e++) {
      if (!world.queues.some((q) => q.adapter === a && q.engine === e)) continue;
      const pending = core.enginePendingWrite(e);
      const signal = adapter.hardware.signalInFlight(e);
      const buffer = pending ? `${fenceByCurrentValueAddress(world, a, pending)}.CV←${signal ? formatValue(signal.value) : '?'}` : 'empty';
      items.push([`${adapter.name}.e${e}.wb`, `engine${e} buffer ${buffer}`]);
      items.push([`${adapter.name}.e${e}.next`, signal ? `next ${SIGNAL_PHASE_STEP[signal.phase]}` : 'between commands']);
      items.push([`${adapter.name}.e${e}.irq`, `irq ${core.engineInterruptLine(e) ? 'raised' : '-'}`]);
    }
  });
  const waiting = machine.os.waits.pendingWaiterList().map((w) => {
    const name = world.waiters.find((x) => x.thread === w.owner.tag)?.name ?? w.label;
    return `${name}(${w.waits.map((x) => `${world.fences.find((f) => f.global === x.fence)?.name ?? x.fence.label}≥${formatValue(x.value)}`).join(',')})`;
  });
  items.push(['os.waiters', `OS waiters ${waiting.length ? waiting.join(' ') : 'none'}`]);
  if (machine.os.waits.stepwise) {
    const op = machine.os.waits.operation;
    items.push(['os.lock', `OS lock ${op ? `held (${op.label})` : 'free'}`]);
  }
  for (const w of world.waiters) {
    const t = w.thread;
    const result = t.waits.length ? `:${t.waits.map((r) => r.status).join(',')}` : '';
    items.push([`thread.${w.name}`, `${w.name}=${t.state}${result}`]);
  }
  for (const s of world.signallers) items.push([`thread.${s.name}`, `${s.name}=${s.thread.state}`]);
  return items;
}

/** One state line; items that differ from `before` are marked with *. */
export function stateLine(items: [string, string][], before?: [string, string][]): string {
  const old = new Map(before ?? []);
  return items.map(([key, text]) => (before && old.get(key) !== text ? `*${text}` : text)).join('  ');
}
