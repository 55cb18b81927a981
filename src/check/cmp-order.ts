// NF-11 judged on the driver alone (issue 28): the order of the CMP's steps in the driver's
// DxgkDdiUpdateMonitoredValues, with nothing behind it to cover a wrong one.
//
// The documented OS reads CurrentValue again after the DDI returns (NF-09), and so wakes a waiter
// even when the driver's CMP reads CurrentValue too early, puts its barrier after the read, or
// never checks at all. NF-11 is the driver's obligation on its own, so this probe switches that
// re-read off (machine option os.rereadCurrentValue: false) and places a GPU signal at every point
// of the driver's DDI, one machine per point:
//
//   a CPU wait-any on the B fences of one adapter (MonitoredValue UINT64_MAX → 0 for each: one
//   DxgkDdiUpdateMonitoredValues naming B fences), while fence j's signal to 1 is due on the GPU
//
//   point 0        the DDI is called                 ─┐
//   point i        the driver's CMP step i returned   │ hardware.runEngineNow: the whole GPU signal
//   point K        its last CMP step returned         │ (CurrentValue written, drained, the CMP's own
//   point K + 1    the DDI returned                  ─┘ check against MonitoredValue in memory)
//
//   then the machine runs until quiet: the waiter must be woken (NF-10), by the signal's own
//   interrupt or by the one the driver's step d raised. If it still waits, the driver alone would
//   lose the wakeup: an NF-11 violation, naming the point and the CMP steps around it.
//
// A CMP step is a call the driver makes to the CMP's exports of the core's GPU view (the core the
// driver's context gets is wrapped for this: cmpWriteMonitoredValue, cmpBarrier, cmpReadCurrentValue,
// cmpMonitoredValueCheck, and the CPU reads of CurrentValue and MonitoredValue), whether the DDI runs
// whole or returns a DdiInProgress. A whole GPU signal at each point is enough: a lost wakeup needs
// the driver's read of CurrentValue before the signal's store drains and the signal's CMP check
// before the new MonitoredValue reaches memory, and placing the whole signal where its drain would
// be keeps both (src/check/README.md). What it cannot see: a driver that programs the CMP some other
// way than through these exports (docs/DRIVERS.md, "What the checker cannot judge").
//
// Each point is one evaluation of NF-11. A point whose run broke another rule (NF-09: the driver did
// not program the value the OS gave) is not judged: that rule is the report. Every run has its own
// machine, its own contract checker, and the suite's seed.

import { createMachine, type Machine } from '../machine/machine.js';
import { GPU_CORE_EXPORTS, type GpuCore } from '../core/bindings.js';
import { withCreateDriver, type DriverContext, type DriverModule } from '../driver/module.js';
import type { DdiCall, DdiObserver } from '../port/driver-port.js';
import { ContractChecker, type Violation } from './contract.js';

/** The core exports a driver programs the CMP with: each call is one of its CMP steps. */
export const CMP_STEP_EXPORTS = ['cmpWriteMonitoredValue', 'cmpBarrier', 'cmpReadCurrentValue', 'cmpMonitoredValueCheck', 'cpuReadCurrentValue', 'cpuReadMonitoredValue'] as const;

/** What one batch size of the probe found. */
export interface CmpOrderResult {
  /** Fences in the DDI. */
  fences: number;
  /** The driver's CMP steps in the DDI, as it made them (a run without a GPU signal). */
  steps: string[];
  /** Points judged (each an NF-11 evaluation; the checker's own counts are in `evaluations`). */
  points: number;
  violations: Violation[];
  /** Per rule, evaluations made in all the runs (NF-11's points included). */
  evaluations: Map<string, number>;
  /** A run stopped by a bug check (the first): its code and message. */
  stoppedBy?: { code: string; message: string; adapter: string };
}

/** The probe's observer: counts the driver's CMP steps in the armed DDI and puts the GPU signal at the chosen point. */
class Probe implements DdiObserver {
  /** The point to place the signal at (-1: none; the counting run). */
  point = -1;
  armed = false;
  /** Inside the armed DDI. */
  private inside = false;
  private done = false;
  steps: string[] = [];
  constructor(private readonly signal: () => void) {}

  beforeDdi(call: DdiCall): void {
    if (!this.armed || call.ddi !== 'DxgkDdiUpdateMonitoredValues' || this.done) return;
    this.inside = true;
    this.steps = [];
    if (this.point === 0) this.fire();
  }

  afterDdi(call: DdiCall): void {
    if (!this.inside || call.ddi !== 'DxgkDdiUpdateMonitoredValues') return;
    this.inside = false;
    this.done = true;
    if (this.point >= 0) this.fire(); // the last point, or a point past the CMP steps this run made
  }

  /** A CMP step of the driver returned (called by the wrapped core). */
  stepped(name: string, args: unknown[]): void {
    if (!this.inside) return;
    this.steps.push(`${name}(${args.map(String).join(', ')})`);
    if (this.point === this.steps.length) this.fire();
  }

  private fire(): void {
    if (this.point < 0) return;
    this.point = -1;
    this.signal();
  }
}

/** The core's GPU view with each CMP step reported to `probe` after it returns; every other export as it is. */
function probedCore(core: GpuCore, probe: Probe): GpuCore {
  const wrapped: Record<string, unknown> = {};
  const exports = core as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of GPU_CORE_EXPORTS) {
    const f = exports[name];
    wrapped[name] = (CMP_STEP_EXPORTS as readonly string[]).includes(name)
      ? (...args: unknown[]) => { const result = f(...args); probe.stepped(name, args); return result; }
      : f;
  }
  return Object.freeze(wrapped) as unknown as GpuCore;
}

/** One run: B fences, fence `signalled`'s GPU signal at `point` (-1: none). */
async function runOnce(module: DriverModule, seed: number, fences: number, signalled: number, point: number): Promise<{ machine: Machine; checker: ContractChecker; probe: Probe; lost: ReturnType<Machine['os']['waits']['lostWakeups']> }> {
  let machineRef: Machine | undefined;
  const probe = new Probe(() => { machineRef!.adapters[0].hardware.runEngineNow(0); });
  const probed = withCreateDriver(module, (context: DriverContext) => module.createDriver({ ...context, core: probedCore(context.core, probe) }));
  const checker = new ContractChecker();
  const attach = { machineCreated: (m: unknown) => { (m as Machine).port.observe(probe); } };
  const machine = await createMachine({
    seed, os: { rereadCurrentValue: false }, timing: { jitter: 0 }, limits: { eventsPerRun: 100_000 },
    adapters: [{ name: 'gpu0', engines: 1, driver: { module: probed } }], observers: [checker, attach],
  });
  machineRef = machine;
  const app = machine.createProcess('app');
  const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
  const handles = Array.from({ length: fences }, () => app.createNativeFence({ hDevice, initialValue: 0n }).hSyncObject);
  const queue = app.createHwQueue({ hDevice, engine: 0 });
  // The signal is due on the engine (its tick pending); nothing runs until the probe or machine.run() takes it.
  app.submit({ hHwQueue: queue.hHwQueue, commands: [{ signal: { hSyncObject: handles[signalled], value: 1n } }] });
  probe.point = point;
  probe.armed = true;
  void app.waitAsync({ objects: handles, values: handles.map(() => 1n), waitAny: true }, 'probe');
  probe.armed = false;
  machine.run();
  return { machine, checker, probe, lost: machine.os.inspect.lostWakeups() };
}

const pointText = (steps: string[], point: number): string => {
  if (point === 0) return steps.length ? `before its first CMP step, ${steps[0]}` : 'as the DDI began (it made no CMP step)';
  if (point > steps.length) return 'after the DDI returned';
  if (point === steps.length) return `after its last CMP step, ${steps[point - 1]}, before the DDI returned`;
  return `between CMP step ${point}, ${steps[point - 1]}, and step ${point + 1}, ${steps[point]}`;
};

/**
 * The probe for one batch size: every fence of the batch signalled at every point of the driver's DDI.
 * Throws only what createMachine throws (a module the suite already refused would not get here).
 */
export async function probeCmpOrder(module: DriverModule, seed: number, fences: number): Promise<CmpOrderResult> {
  const evaluations = new Map<string, number>();
  const violations: Violation[] = [];
  const merge = (checker: ContractChecker) => {
    for (const [rule, n] of checker.evaluations) evaluations.set(rule, (evaluations.get(rule) ?? 0) + n);
    violations.push(...checker.violations);
  };
  const stoppedBy = (machine: Machine) => {
    const b = machine.summary().bugChecks[0];
    return b ? { code: b.code, message: b.message, adapter: b.adapter } : undefined;
  };
  // The counting run: no signal; the driver's CMP steps as it makes them.
  const counting = await runOnce(module, seed, fences, 0, -1);
  const steps = counting.probe.steps;
  const result: CmpOrderResult = { fences, steps, points: 0, violations, evaluations };
  merge(counting.checker);
  if ((result.stoppedBy = stoppedBy(counting.machine)) || violations.length) return result;
  for (let signalled = 0; signalled < fences; signalled++) {
    for (let point = 0; point <= steps.length + 1; point++) {
      const run = await runOnce(module, seed, fences, signalled, point);
      const before = run.checker.violations.length;
      const stopped = stoppedBy(run.machine);
      if (!stopped && before === 0) {
        result.points++;
        const lost = run.lost[0];
        run.checker.evaluated('NF-11', 'gpu0', lost ? {
          where: `DxgkDdiUpdateMonitoredValues of ${fences} fence${fences === 1 ? '' : 's'}, the GPU signal of fence ${signalled + 1} ${pointText(run.probe.steps, point)}`,
          expected: `the waiter woken once ${lost.fence} reached ${lost.value}: with no OS re-read of CurrentValue (NF-09 off), the driver's CMP (write MonitoredValue, barrier, read CurrentValue, interrupt if greater) or the signal's own CMP check must raise the interrupt`,
          actual: `no interrupt for it: the waiter still waits though ${lost.fence} is ${lost.currentValue} (the driver alone loses the wakeup)`,
        } : undefined);
      }
      merge(run.checker);
      if (stopped) { result.stoppedBy = stopped; return result; }
      if (before) return result; // another rule broke: it is the report, the probe stops here
    }
  }
  return result;
}
