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
    if (event.kind === 'interrupt') return `${actor} interrupt delivered: ISR, then the OS serves it (NF-09)`;
    return `${adapter.name} ${event.kind}`;
  }
  if (event.owner === `process ${world.process.kernel.slot}` && event.kind === 'thread-resume') {
    const thread = world.process.threads[event.args.thread as number];
    const waiter = world.waiters.find((w) => w.thread === thread);
    if (waiter) {
      const fence = world.fences[waiter.fence].name;
      if (thread.state === 'ready') return `${waiter.name} waits for ${fence} ≥ ${formatValue(waiter.value)}: the OS adds the waiter, UpdateMonitoredValues, re-reads CurrentValue`;
      return `${waiter.name} resumes from its wait`;
    }
    const signaller = world.signallers.find((s) => s.thread === thread);
    if (signaller) {
      const value = signaller.values[thread.blockNumber];
      return `${signaller.name} signals ${world.fences[signaller.fence].name} = ${value === undefined ? '?' : formatValue(value)} from the CPU: UpdateCurrentValuesFromCpu, then its waiters`;
    }
  }
  return eventName(event);
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
