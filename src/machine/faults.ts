// Fault injection on a running machine (machine.injectFault). Each fault is
// modelled by the part of the system it disturbs, never by editing counters:
//
//   collapseInterrupts (INT-02)  the adapter's interrupt delivery is held for
//                                windowNs of virtual time (GpuHardware.holdInterrupts):
//                                every signal raised meanwhile joins one interrupt
//                                per engine; more distinct fences than the driver's
//                                pending list holds (limits.interruptListEntries)
//                                and the payload has no list (the OS scans).
//   forceLogOverrun (LOG-05)     the OS reader of a queue's signal log (every
//                                hardware queue of the adapter when none is named)
//                                stays away until the GPU has overwritten entries it
//                                had not read (NativeFenceLogs.fallBehind): the next
//                                read finds the overrun and falls back to checking
//                                every fence of the device.
//
// Bad input (unknown keys, an unknown adapter or queue, a negative window, an
// adapter that is not running) is a WddmError and changes nothing.

import type { Scheduler } from '../base/scheduler.js';
import type { Trace } from '../base/trace.js';
import { WddmError, invalid } from '../base/errors.js';
import * as v from '../base/validate.js';
import type { Kernel } from '../os/kernel.js';

/** What fault injection reaches in a machine (Machine has it; no import back, machine.ts calls injectFault). */
export interface FaultTarget {
  readonly scheduler: Scheduler;
  readonly trace: Trace;
  /** The OS: its live hardware queues (inspect) and its log reader, held back (LOG-05). */
  readonly os: Pick<Kernel, 'inspect' | 'holdLogReader'>;
  adapter(nameOrIndex: string | number): { readonly name: string; readonly index: number; readonly state: string; readonly hardware: { holdInterrupts(untilNs: number): number[] } };
}

export interface CollapseInterruptsFault {
  /** Adapter name or index. */
  adapter: string | number;
  /** How long interrupt delivery is held, from now (virtual ns, > 0). */
  windowNs: number;
}

export interface ForceLogOverrunFault {
  /** Adapter name or index. */
  adapter: string | number;
  /** The hardware queue: its name (label) or kernel handle (hHwQueue). Default: every live hardware queue of the adapter. */
  queue?: string | number;
}

export interface FaultInjection {
  collapseInterrupts?: CollapseInterruptsFault;
  forceLogOverrun?: ForceLogOverrunFault;
}

/** What an injection did. */
export interface FaultReport {
  fault: 'collapseInterrupts' | 'forceLogOverrun';
  adapter: string;
  /** collapseInterrupts: delivery held until this virtual time. */
  untilNs?: number;
  /** collapseInterrupts: engines whose interrupt already on its way was held back. */
  heldEngines?: number[];
  /** forceLogOverrun: the queues whose signal-log reader now stays behind. */
  queues?: string[];
}

const KINDS = ['collapseInterrupts', 'forceLogOverrun'] as const;

export function injectFault(machine: FaultTarget, fault: unknown): FaultReport {
  const f = v.options(fault, 'fault', KINDS);
  const named = KINDS.filter((k) => f[k] !== undefined);
  if (named.length !== 1) throw invalid('fault', fault, `exactly one of ${KINDS.map((k) => JSON.stringify(k)).join(', ')}`);
  return named[0] === 'collapseInterrupts' ? collapseInterrupts(machine, f.collapseInterrupts) : forceLogOverrun(machine, f.forceLogOverrun);
}

function runningAdapter(machine: FaultTarget, value: unknown, parameter: string) {
  if (typeof value !== 'string' && typeof value !== 'number') throw invalid(parameter, value, 'an adapter name or index');
  let adapter;
  try { adapter = machine.adapter(value); } catch (error) {
    const e = error as WddmError;
    throw invalid(parameter, value, e.expected ?? 'an adapter of this machine');
  }
  if (adapter.state !== 'running') throw new WddmError('DEVICE_REMOVED', `${parameter} is ${JSON.stringify(adapter.name)}, whose state is ${adapter.state}; expected a running adapter`, { parameter, value, expected: 'a running adapter' });
  return adapter;
}

function collapseInterrupts(machine: FaultTarget, body: unknown): FaultReport {
  const c = v.options(body, 'fault.collapseInterrupts', ['adapter', 'windowNs']);
  const adapter = runningAdapter(machine, c.adapter, 'fault.collapseInterrupts.adapter');
  const windowNs = c.windowNs;
  if (typeof windowNs !== 'number' || !Number.isSafeInteger(windowNs) || windowNs <= 0) {
    throw invalid('fault.collapseInterrupts.windowNs', windowNs, 'a whole number of virtual nanoseconds > 0');
  }
  const untilNs = machine.scheduler.nowNs + windowNs;
  const heldEngines = adapter.hardware.holdInterrupts(untilNs);
  machine.trace.record('fault', adapter.name, 'interrupts collapsed', { windowNs, untilNs, heldEngines: heldEngines.join(',') || 'none' });
  return { fault: 'collapseInterrupts', adapter: adapter.name, untilNs, heldEngines };
}

function forceLogOverrun(machine: FaultTarget, body: unknown): FaultReport {
  const c = v.options(body, 'fault.forceLogOverrun', ['adapter', 'queue']);
  const adapter = runningAdapter(machine, c.adapter, 'fault.forceLogOverrun.adapter');
  const live = machine.os.inspect.liveHwQueues(adapter.index);
  let chosen: { label: string; hHwQueue: number }[];
  if (c.queue === undefined) {
    if (!live.length) throw invalid('fault.forceLogOverrun.adapter', adapter.name, 'an adapter with at least one live hardware queue (only user-mode-submission queues have log buffers)');
    chosen = live;
  } else {
    const matches = live.filter((q) => (typeof c.queue === 'number' ? q.hHwQueue === c.queue : q.label === c.queue));
    const names = live.map((q) => JSON.stringify(q.label)).join(', ') || 'none: the adapter has no live hardware queue';
    if (matches.length !== 1) {
      throw invalid('fault.forceLogOverrun.queue', c.queue, `the name or hHwQueue of one live hardware queue of ${JSON.stringify(adapter.name)} (${names})`);
    }
    chosen = matches;
  }
  const queues: string[] = [];
  for (const q of chosen) if (machine.os.holdLogReader(adapter.index, q.hHwQueue)) queues.push(q.label);
  machine.trace.record('fault', adapter.name, 'log reader held back', { queues: chosen.map((q) => q.label).join(','), log: 'signals' });
  return { fault: 'forceLogOverrun', adapter: adapter.name, queues };
}
