// What the explorer checks, at every state it reaches ("always") or at every
// state where nothing is left to run ("quiet"):
//
//   id                      when    holds when
//   no-lost-wakeup          quiet   no CPU waiter still waits for a value its fence's
//                                   CurrentValue has reached (NF-10)
//   monitored-value         always  every fence's MonitoredValue, as the CMP holds it (its
//                                   write buffer, else memory), is the smallest waited
//                                   value − 1, or UINT64_MAX with no waiter (NF-02)
//   current-value-not-torn  always  every fence's CurrentValue in memory is 0 or a value
//                                   the machine signals it to (both halves of one value)
//   satisfied-waiters-woken quiet   every waiter thread either returned from its wait with
//                                   SUCCESS, once, or still waits in the OS: none was
//                                   retired without its thread resuming, none failed
//   gpu-work-done           quiet   every hardware queue ran all its commands and no
//                                   engine is part-way through a signal
//   steps-run               always  no step throws (a model or driver error the OS did not
//                                   turn into a bug check)
//   expectations            quiet   a scenario file's: its `expect` holds, and nothing is
//                                   left stuck unless it expects that (src/explore/scenario-world.ts)
//
// The generated machine is judged by the first six; a scenario file's world by
// no-lost-wakeup, monitored-value, current-value-not-torn, expectations and
// steps-run (World.invariants): its expectations and its liveness check (a
// queue still blocked, a waiter still pending, a thread unfinished) take the
// place of the generated machine's waiter and GPU-work checks, which assume
// what that machine's threads and queues do.
//
// The OS runs each of its operations (a waiter added with its MonitoredValue
// update, an interrupt served, a CPU signal) in steps under its lock
// (schedule.osGranularity 'step', src/os/waits.ts), or whole in one event
// ('operation'). NF-02 must hold where the OS is between operations, so
// monitored-value is judged only where no operation holds the lock. The GPU's steps and the CMP's
// write buffer are not operations of the OS: MonitoredValue is judged as the
// CMP holds it, so a driver that leaves out the barrier (the value not yet
// visible in memory) is caught by what it causes, a lost wakeup.

import { u64 } from '../core/bindings.js';
import type { InvariantId, Violation, World } from './world.js';
export type { InvariantId, Violation } from './world.js';

export interface InvariantInfo { id: InvariantId; when: 'always' | 'quiet'; title: string; requirement: string }

/** In the order verdicts are printed. */
export const INVARIANTS: readonly InvariantInfo[] = [
  { id: 'no-lost-wakeup', when: 'quiet', title: 'no lost wakeup: a waiter whose value is reached is woken once the machine is quiet', requirement: 'NF-10' },
  { id: 'monitored-value', when: 'always', title: 'MonitoredValue = smallest waited value − 1 (UINT64_MAX with no waiter) whenever the OS is between operations', requirement: 'NF-02' },
  { id: 'current-value-not-torn', when: 'always', title: 'CurrentValue is never torn: always 0 or a value signalled to the fence', requirement: 'NF-01' },
  { id: 'satisfied-waiters-woken', when: 'quiet', title: 'every satisfied waiter\'s thread is woken, once, with SUCCESS when the machine is quiet', requirement: 'NF-09' },
  { id: 'gpu-work-done', when: 'quiet', title: 'every GPU command ran when the machine is quiet', requirement: 'NF-05' },
  { id: 'steps-run', when: 'always', title: 'no step throws (an error the model did not turn into a bug check)', requirement: '-' },
  { id: 'expectations', when: 'quiet', title: 'the scenario\'s expect holds, and nothing is left stuck unless it expects that, in every terminal state', requirement: '-' },
];

/** The invariants the generated machine is judged by. */
export const MACHINE_INVARIANTS: readonly InvariantId[] = ['no-lost-wakeup', 'monitored-value', 'current-value-not-torn', 'satisfied-waiters-woken', 'gpu-work-done', 'steps-run'];
/** The invariants a scenario file's world is judged by. */
export const SCENARIO_INVARIANTS: readonly InvariantId[] = ['no-lost-wakeup', 'monitored-value', 'current-value-not-torn', 'expectations', 'steps-run'];


/** The invariants that hold at every state. Reads only: a check changes nothing (the search snapshots the state after it). */
export function checkAlways(world: World): Violation[] {
  const violations: Violation[] = [];
  // Part-way through an OS operation (its lock held) MonitoredValue is on its way: NF-02 holds between operations.
  const between = !world.machine.os.lockHeld;
  const format = (value: bigint) => world.formatValue(value);
  for (const f of world.fences) {
    const g = f.global;
    if (g.destroyed) continue;
    const adapter = world.machine.adapters[f.adapter];
    if (adapter.state !== 'running') continue;
    const core = adapter.core;
    if (g.kind === 'native') {
      // XA-03: a cross-adapter fence's MonitoredValue is held at 0 (the OS's record says which are held).
      const target = g.monitoredValueHeld ? 0n : u64(core.fenceMonitoredTarget(g.coreFence));
      const buffered = core.cmpPendingWrite() !== 0 && core.cmpPendingWrite() === core.fenceMonitoredValueAddress(g.coreFence);
      const held = buffered ? u64(core.cmpPendingValue()) : u64(core.cpuReadMonitoredValue(g.coreFence));
      if (between && held !== target) {
        const why = g.monitoredValueHeld ? 'held at 0: a cross-adapter fence, XA-03' : target === 0xffff_ffff_ffff_ffffn ? 'no waiter' : 'smallest waited value − 1';
        violations.push({ invariant: 'monitored-value', message: `${f.name}: MonitoredValue is ${format(held)}${buffered ? ' (in the CMP\'s write buffer)' : ''}, expected ${format(target)} (${why})` });
      }
    }
    // A monitored fence on a No64BitAtomics adapter holds what the GPU's 32-bit write left: judged as the OS reads it,
    // extended from its last value (MF-07; GlobalFence.peekValue: without the OS's write-back, which a check must not do).
    const current = g.peekValue();
    if (!f.values.includes(current)) {
      violations.push({ invariant: 'current-value-not-torn', message: `${f.name}: CurrentValue is ${format(current)}, which is neither ${f.values.length && f.values[0] !== 0n ? `its initial value ${format(f.values[0])}` : '0'} nor a value the fence is signalled to (${f.values.slice(1).map(format).join(', ')})` });
    }
  }
  return violations;
}

/** The invariants of a quiet machine (no event left): lost wakeups, then the world's own. */
export function checkQuiet(world: World): Violation[] {
  const violations: Violation[] = [];
  for (const lost of world.machine.os.inspect.lostWakeups()) {
    violations.push({ invariant: 'no-lost-wakeup', message: `${lost.waiter} still waits for ${fenceName(world, lost.fence)} ≥ ${world.formatValue(lost.value)} but CurrentValue is ${world.formatValue(lost.currentValue)}` });
  }
  violations.push(...world.checkQuiet());
  return violations;
}

function fenceName(world: World, label: string): string {
  return world.fences.find((f) => f.global.label === label)?.name ?? label;
}
