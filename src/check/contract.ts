// The contract checker: judges a machine's drivers, and the GPUs they drive,
// against the rules of SPEC.md while the machine runs (issue 12).
//
//   createMachine({ observers: [checker] })          opt-in: off by default, and off costs nothing
//        │ machineCreated: port.observe(checker)     every DDI and callback of every adapter
//        │ adapterBuilt:   hardware.stepListeners    every executed GPU command
//        │                 hardware.interruptListeners  each ISR, bracketed
//        ▼
//   DDI / callback / GPU step ──▶ the rule's check ──▶ Violation { rule (a SPEC ID), adapter, where,
//                                                      timeNs, traceIndex, expected, actual, fatal }
//
// The checker sits at machine level: it sees every process and adapter at once,
// reads what the GPU left in memory (fence values, the CMP's write buffer, log
// buffers) through the core's GPU view, and never changes anything but its own
// records and, for a fatal violation, the adapter's state: a fatal violation
// bug-checks that adapter only, through the OS's bug check (the same path a
// driver fault takes), after the OS handled the call. A violation never throws.
// Each violation is also a trace event (kind fault, "contract violation <rule>"),
// whose sequence number is the violation's traceIndex.
//
// The rules and what each one observes are in CONTRACT_RULES (src/check/README.md
// has the table; docs/ARCHITECTURE.md "The contract checker" the design and the
// NF-19 decision for GPU signals below CurrentValue).

import type { DdiCall, DdiObserver, DdiOutcome, CallbackCall } from '../port/driver-port.js';
import type { DXGKARG_SETNATIVEFENCELOGBUFFER, DXGKARG_UPDATECURRENTVALUESFROMCPU, DXGKARG_UPDATEMONITOREDVALUES, DXGKARG_UPDATENATIVEFENCELOGS, DriverStartResult, NativeFenceSignaledInterrupt } from '../ddi/ddi.js';
import type { GpuHardware, InterruptPhase, StepRecord } from '../gpu/hardware.js';
import type { GpuCore } from '../core/bindings.js';
import type { BuiltAdapter, Machine, MachineObserver } from '../machine/machine.js';
import { KERNEL_VA_BASE, VIDSCHCAPS } from '../base/wddm.js';

export interface Violation {
  /** The SPEC requirement ID whose text the check enforces (e.g. 'NF-11'). */
  rule: string;
  adapter: string;
  /** The DDI, callback or GPU step where it was seen. */
  where: string;
  timeNs: bigint | number;
  /** Sequence number of the violation's trace event (the trace keeps fault events even when off). */
  traceIndex: number;
  expected: string;
  actual: string;
  /** A fatal violation bug-checks its adapter (only it). */
  fatal: boolean;
}

/** Every rule the checker enforces: its SPEC ID, what it observes, and whether a violation is fatal. */
export const CONTRACT_RULES: readonly { readonly rule: string; readonly checks: string; readonly fatal: boolean }[] = [
  { rule: 'CAP-02', checks: 'DxgkDdiStartDevice advertising NativeGpuFence called IsFeatureEnabled (Enabled) then QueryFeatureInterface first', fatal: false },
  { rule: 'CAP-04', checks: 'no native fence DDI reaches an adapter whose driver did not advertise NativeGpuFence (judges the OS)', fatal: false },
  { rule: 'NF-07', checks: 'after DxgkDdiUpdateCurrentValuesFromCpu: each CurrentValue is the value given, and no hardware queue still waits on a value it reached', fatal: false },
  { rule: 'NF-09', checks: 'after DxgkDdiUpdateMonitoredValues: each MonitoredValue the CMP compares against is the value the OS gave', fatal: true },
  { rule: 'NF-10', checks: 'when the machine is quiet: no CPU waiter whose value was reached is still waiting (reported when no other rule explains it)', fatal: false },
  { rule: 'NF-11', checks: 'after DxgkDdiUpdateMonitoredValues: the CMP\'s MonitoredValue write left its write buffer (the barrier before reading CurrentValue)', fatal: false },
  { rule: 'NF-18', checks: 'after DxgkDdiUpdateCurrentValuesFromCpu with NotificationOnly: no CurrentValue written, and the run list rescanned', fatal: false },
  { rule: 'NF-19', checks: 'each GPU signal: it does not move CurrentValue below the value it overwrote (no GPU signal carries AllowFenceRewind)', fatal: false },
  { rule: 'MF-07', checks: 'each GPU signal and monitored fence write: the fence holds the value (its low 32 bits when the driver advertised No64BitAtomics)', fatal: false },
  { rule: 'INT-01', checks: 'each native fence signaled interrupt with a list: it lists every live fence whose GPU signal raised it', fatal: false },
  { rule: 'INT-03', checks: 'each native fence signaled interrupt: no listed handle is a destroyed (or unknown) fence', fatal: true },
  { rule: 'INT-05', checks: 'each optimized interrupt (no list) naming a hardware queue: every GPU signal that raised it came from that queue (else it must name none)', fatal: false },
  { rule: 'INT-06', checks: 'each interrupt the CMP raised for a GPU signal: the ISR notifies the OS (a list naming the fence, or no list)', fatal: false },
  { rule: 'LOG-04', checks: 'each log entry the OS reads (after DxgkDdiUpdateNativeFenceLogs): the entry of the GPU operation its index covers (value, handle, operation)', fatal: false },
  { rule: 'LOG-07', checks: 'each log entry read: its end timestamp is not below the last non-zero one of that log', fatal: false },
];

const signalWhere = (step: StepRecord) => `GPU signal (${step.queue.label}, value ${step.value})`;
/** The DDIs of the native fence feature (CAP-04: never called on an adapter without it). */
const NATIVE_FENCE_DDIS: ReadonlySet<string> = new Set([
  'DxgkDdiCreateNativeFence', 'DxgkDdiOpenNativeFence', 'DxgkDdiCloseNativeFence', 'DxgkDdiDestroyNativeFence',
  'DxgkDdiUpdateCurrentValuesFromCpu', 'DxgkDdiUpdateMonitoredValues', 'DxgkDdiSetNativeFenceLogBuffer', 'DxgkDdiUpdateNativeFenceLogs',
]);
const FATAL = new Set(CONTRACT_RULES.filter((r) => r.fatal).map((r) => r.rule));
const MASK32 = 0xffff_ffffn;
const u64 = (value: bigint) => BigInt.asUintN(64, value);
const hex = (value: number | bigint) => `0x${value.toString(16)}`;

interface FenceState { hGlobal: number; coreFence: number; cvPhys: number }
interface ExpectedEntry { handle: number; value: bigint; operation: number }
interface LogState {
  phys: number; entries: number; type: number; index: number; wraps: number; lastEndNs: bigint;
  /** The entries the GPU owes this log, oldest first from `head` (a queue: consumed by index, compacted when read up). */
  expected: ExpectedEntry[]; head: number;
  /** Entries read before the GPU step that owes them was reported (granularity 'step'): their expectations are dropped when they come. */
  readAhead: number;
}
interface AdapterState {
  index: number; name: string; hardware: GpuHardware; core: GpuCore;
  vidSchCaps: number;
  /** DxgkDdiStartDevice returned (its caps are known). */
  started: boolean;
  /** Callbacks made during DxgkDdiStartDevice (CAP-02), undefined outside it. */
  startCallbacks?: { name: string; data: unknown }[];
  fences: Map<number, FenceState>;
  byCore: Map<number, FenceState>;
  destroyed: Set<number>;
  /** Per engine: the core fences whose GPU signal raised the pending interrupt, and the queues (hHwQueue) that signalled them. */
  raised: Set<number>[];
  raisedBy: Set<number>[];
  /** The ISR running now: the fences its interrupt was raised for and their queues, and whether it notified the OS. */
  isr?: { engine: number; batch: Set<number>; queues: Set<number>; notified: boolean };
  /** hHwQueue → its two logs (set by DxgkDdiSetNativeFenceLogBuffer). */
  logs: Map<number, { signals?: LogState; waits?: LogState }>;
  cvBefore?: bigint[];
}

export class ContractChecker implements MachineObserver, DdiObserver {
  readonly violations: Violation[] = [];
  /** Checks made per rule (a rule with none was not exercised). */
  readonly checks = new Map<string, number>();
  private machine?: Machine;
  private readonly adapters: AdapterState[] = [];
  private readonly fatalPending: AdapterState[] = [];
  private readonly listeners: ((violation: Violation) => void)[] = [];

  /** Calls `listener` with every violation from now on. */
  onViolation(listener: (violation: Violation) => void): void { this.listeners.push(listener); }

  // ── attaching (MachineObserver) ──

  machineCreated(machine: unknown): void {
    if (this.machine) throw new Error('contract checker: already attached to a machine (one checker per machine)');
    this.machine = machine as Machine;
    this.machine.port.observe(this);
  }

  adapterBuilt(adapter: BuiltAdapter): void {
    const state: AdapterState = {
      index: adapter.index, name: adapter.name, hardware: adapter.hardware, core: adapter.core, vidSchCaps: 0, started: false,
      fences: new Map(), byCore: new Map(), destroyed: new Set(), raised: Array.from({ length: adapter.hardware.engineCount }, () => new Set<number>()),
      raisedBy: Array.from({ length: adapter.hardware.engineCount }, () => new Set<number>()),
      logs: new Map(),
    };
    this.adapters[adapter.index] = state;
    adapter.hardware.stepListeners.push((step) => this.onStep(state, step));
    adapter.hardware.interruptListeners.push((engine, phase) => this.onInterruptService(state, engine, phase));
  }

  /** The quiet-machine checks (after a run): NF-10. Returns every violation so far. */
  finish(): Violation[] {
    const machine = this.machine;
    if (!machine) return this.violations;
    this.count('NF-10');
    const lost = machine.os.waits.lostWakeups();
    // A lost wakeup after another violation is that violation's consequence: the first cause is the report.
    if (lost.length && !this.violations.length) {
      const l = lost[0];
      this.report(this.adapters.find(Boolean)!, 'NF-10', 'quiet machine (after the run)', `${l.waiter} woken once ${l.fence} reached ${l.value}`,
        `${l.waiter} still waits though ${l.fence} is ${l.currentValue}${lost.length > 1 ? ` (and ${lost.length - 1} more)` : ''}`);
    }
    return this.violations;
  }

  // ── DDIs and callbacks (DdiObserver) ──

  beforeDdi(call: DdiCall): void {
    const a = this.adapters[call.adapterIndex];
    if (!a) return;
    if (call.ddi === 'DxgkDdiStartDevice') a.startCallbacks = [];
    else if (a.started && (a.vidSchCaps & VIDSCHCAPS.NativeGpuFence) === 0 && NATIVE_FENCE_DDIS.has(call.ddi)) {
      this.report(a, 'CAP-04', call.ddi, 'no native fence DDI on an adapter without NativeGpuFence (its fences are monitored fences, XA-05)', `${call.ddi} called`);
    } else if (call.ddi === 'DxgkDdiUpdateCurrentValuesFromCpu') {
      const args = call.args as DXGKARG_UPDATECURRENTVALUESFROMCPU;
      a.cvBefore = args.CurrentValueKernelCpuVa.slice(0, args.NumFences).map((va) => this.read64(Number(va - KERNEL_VA_BASE)));
    }
  }

  afterDdi(call: DdiCall, outcome: DdiOutcome): void {
    const a = this.adapters[call.adapterIndex];
    if (!a) return;
    const args = call.args as Record<string, unknown>;
    if (outcome.ok) {
      switch (call.ddi) {
        case 'DxgkDdiStartDevice': this.afterStart(a, outcome.result as DriverStartResult); break;
        case 'DxgkDdiCreateNativeFence': {
          if (typeof (outcome.result as { hGlobalNativeFence?: unknown } | undefined)?.hGlobalNativeFence !== 'number') break; // the OS refuses such a result itself
          const cvPhys = Number((args.CurrentValueKernelCpuVa as bigint) - KERNEL_VA_BASE);
          const fence: FenceState = { hGlobal: (outcome.result as { hGlobalNativeFence: number }).hGlobalNativeFence, coreFence: a.core.fenceAtCurrentValue(cvPhys), cvPhys };
          a.fences.set(fence.hGlobal, fence);
          a.byCore.set(fence.coreFence, fence);
          a.destroyed.delete(fence.hGlobal);
          break;
        }
        case 'DxgkDdiDestroyNativeFence': {
          const fence = a.fences.get(args.hGlobalNativeFence as number);
          if (fence) { a.fences.delete(fence.hGlobal); a.byCore.delete(fence.coreFence); a.destroyed.add(fence.hGlobal); }
          break;
        }
        case 'DxgkDdiUpdateMonitoredValues': this.afterUpdateMonitoredValues(a, call, args as unknown as DXGKARG_UPDATEMONITOREDVALUES); break;
        case 'DxgkDdiUpdateCurrentValuesFromCpu': this.afterUpdateCurrentValues(a, call, args as unknown as DXGKARG_UPDATECURRENTVALUESFROMCPU); break;
        case 'DxgkDdiSetNativeFenceLogBuffer': this.afterSetLogBuffer(a, args as unknown as DXGKARG_SETNATIVEFENCELOGBUFFER); break;
        case 'DxgkDdiUpdateNativeFenceLogs': this.afterUpdateLogs(a, call, args as unknown as DXGKARG_UPDATENATIVEFENCELOGS); break;
        case 'DxgkDdiDestroyHwQueue': a.logs.delete(args.hHwQueue as number); break;
        default: break;
      }
    }
    if (call.ddi === 'DxgkDdiStartDevice') a.startCallbacks = undefined;
    if (call.ddi === 'DxgkDdiStopDevice' || call.ddi === 'DxgkDdiResetFromTimeout') {
      // The engines stopped: pending interrupts and every queue's work are gone.
      for (const set of a.raised) set.clear();
      for (const set of a.raisedBy) set.clear();
      if (call.ddi === 'DxgkDdiResetFromTimeout') a.logs.clear();
    }
    this.flushFatal();
  }

  beforeCallback(call: CallbackCall): void {
    const a = this.adapters[call.adapterIndex];
    if (!a) return;
    a.startCallbacks?.push({ name: call.callback, data: call.data });
    if (call.callback === 'NotifyInterrupt') this.onNotifyInterrupt(a, call, call.data as NativeFenceSignaledInterrupt);
  }

  afterCallback(): void { this.flushFatal(); }

  // ── the rules ──

  /** CAP-02: a driver advertising NativeGpuFence asked first: IsFeatureEnabled (Enabled), then QueryFeatureInterface. */
  private afterStart(a: AdapterState, result: DriverStartResult): void {
    if (typeof result?.VidSchCaps !== 'number') return; // the OS refuses to start such a driver itself
    a.vidSchCaps = result.VidSchCaps;
    a.started = true;
    if ((result.VidSchCaps & VIDSCHCAPS.NativeGpuFence) === 0) this.count('CAP-04');
    if ((result.VidSchCaps & VIDSCHCAPS.NativeGpuFence) === 0) return;
    this.count('CAP-02');
    const names = (a.startCallbacks ?? []).map((c) => c.name);
    const asked = names.indexOf('IsFeatureEnabled');
    const queried = names.indexOf('QueryFeatureInterface', asked + 1);
    if (asked < 0 || queried < 0) {
      this.report(a, 'CAP-02', 'DxgkDdiStartDevice', 'IsFeatureEnabled(DXGK_FEATURE_NATIVE_FENCE), then QueryFeatureInterface, before advertising NativeGpuFence',
        `NativeGpuFence advertised after ${names.length ? names.join(', ') : 'no callback at all'}`);
    }
  }

  /** NF-09 (the value the CMP compares against) and NF-11 (the barrier drained the CMP's write). */
  private afterUpdateMonitoredValues(a: AdapterState, call: DdiCall, args: DXGKARG_UPDATEMONITOREDVALUES): void {
    const where = 'DxgkDdiUpdateMonitoredValues';
    const pending = a.core.cmpPendingWrite();
    for (let i = 0; i < args.NumFences; i++) {
      this.count('NF-09');
      const mvPhys = Number(args.MonitoredValueKernelCpuVa[i] - KERNEL_VA_BASE);
      const seen = pending === mvPhys ? u64(a.core.cmpPendingValue()) : this.read64(mvPhys);
      const wanted = args.UpdatedValueArray[i];
      if (seen !== wanted) {
        this.report(a, 'NF-09', where, `MonitoredValue of ${hex(args.NativeFenceArray[i])} = ${wanted} (the smallest waited value − 1)`, `the CMP compares against ${seen}`);
        return;
      }
    }
    if (args.NumFences === 0) return;
    this.count('NF-11');
    if (pending !== 0) {
      this.report(a, 'NF-11', where, 'the CMP\'s MonitoredValue write reaches memory (barrier) before it reads CurrentValue',
        `a MonitoredValue write (${u64(a.core.cmpPendingValue())} at ${hex(pending)}) still in the CMP's write buffer when the DDI returned: no barrier`);
    }
    void call;
  }

  /** NF-07 / NF-18: the values written (or, NotificationOnly, left alone) and the run list rescanned. */
  private afterUpdateCurrentValues(a: AdapterState, call: DdiCall, args: DXGKARG_UPDATECURRENTVALUESFROMCPU): void {
    const where = 'DxgkDdiUpdateCurrentValuesFromCpu';
    const notify = args.Flags.NotificationOnly;
    const rule = notify ? 'NF-18' : 'NF-07';
    this.count(rule);
    for (let i = 0; i < args.NumFences; i++) {
      const now = this.read64(Number(args.CurrentValueKernelCpuVa[i] - KERNEL_VA_BASE));
      const wanted = notify ? a.cvBefore?.[i] : args.UpdatedValueArray[i];
      if (wanted !== undefined && now !== wanted) {
        this.report(a, rule, where, notify ? `CurrentValue of ${hex(args.NativeFenceArray[i])} left at ${wanted} (NotificationOnly: rescan without writing)` : `CurrentValue of ${hex(args.NativeFenceArray[i])} = ${wanted}`,
          `CurrentValue is ${now}`);
        return;
      }
    }
    // Every hardware queue of this adapter waiting on one of these fences, with its value reached, runs again.
    const named = new Set(args.NativeFenceArray.slice(0, args.NumFences).map((h) => a.fences.get(h)?.coreFence).filter((f): f is number => f !== undefined));
    const blocked = a.hardware.layout.queueStateBlocked;
    for (const queue of a.hardware.queues.values()) {
      if (a.core.queueState(queue.id) !== blocked) continue;
      const fence = a.core.queueBlockedFence(queue.id);
      if (!named.has(fence) || !a.core.fenceIsLive(fence)) continue;
      const value = u64(a.core.queueBlockedValue(queue.id));
      const current = u64(a.core.cpuReadCurrentValue(fence));
      if (current >= value) {
        this.report(a, rule, where, `hardware queue "${queue.label}" released: its wait for ${value} is satisfied (the driver rescans its run list)`,
          `still blocked with CurrentValue ${current}${notify ? ' (the NotificationOnly call was ignored)' : ''}`);
        return;
      }
    }
    void call;
  }

  /** A native fence signaled interrupt: INT-03 (no destroyed handle), INT-01 (every raised live fence listed). */
  private onNotifyInterrupt(a: AdapterState, call: CallbackCall, data: NativeFenceSignaledInterrupt): void {
    if (data === null || typeof data !== 'object') return; // nothing to judge: the OS's handler refuses it
    const where = `NotifyInterrupt (engine ${data.NodeOrdinal})`;
    if (a.isr && a.isr.engine === data.NodeOrdinal) a.isr.notified = true;
    const list = data.pSignaledNativeFenceArray;
    if (!Array.isArray(list)) {
      // INT-05: an optimized interrupt names the one queue whose signals raised it, or none.
      const queues = a.isr && a.isr.engine === data.NodeOrdinal ? a.isr.queues : undefined;
      if ((a.vidSchCaps & VIDSCHCAPS.OptimizedNativeFenceSignaledInterrupt) === 0 || !data.hHWQueue || !queues?.size) return;
      this.count('INT-05');
      if (queues.size > 1 || !queues.has(data.hHWQueue)) {
        this.report(a, 'INT-05', where, `hHWQueue ${[...queues].map(hex).join(' or ')} when one queue's signals raised the interrupt, else none (0): the GPU signals came from ${[...queues].map(hex).join(', ')}`,
          `hHWQueue ${hex(data.hHWQueue)}: the OS reads only its log`);
      }
      return;
    }
    this.count('INT-03');
    for (const h of list) {
      if (!a.fences.has(h)) {
        this.report(a, 'INT-03', where, 'only live fences listed', `${hex(h)} listed, ${a.destroyed.has(h) ? 'a fence the OS destroyed' : 'no fence of this adapter'}`);
        return;
      }
    }
    const batch = a.isr && a.isr.engine === data.NodeOrdinal ? a.isr.batch : undefined;
    if (!batch) return;
    this.count('INT-01');
    const listed = new Set(list);
    for (const coreFence of batch) {
      const fence = a.byCore.get(coreFence);
      if (fence && !listed.has(fence.hGlobal)) {
        this.report(a, 'INT-01', where, `${hex(fence.hGlobal)} listed: its GPU signal raised this interrupt (CurrentValue > MonitoredValue)`,
          `list [${list.map(hex).join(', ')}] leaves it out`);
        return;
      }
    }
    void call;
  }

  /** The ISR bracket: which raised fences it serves; INT-06 when it returned without notifying the OS. */
  private onInterruptService(a: AdapterState, engine: number, phase: InterruptPhase): void {
    if (phase === 'service') {
      a.isr = { engine, batch: a.raised[engine], queues: a.raisedBy[engine], notified: false };
      a.raised[engine] = new Set();
      a.raisedBy[engine] = new Set();
      return;
    }
    const isr = a.isr;
    a.isr = undefined;
    if (!isr || isr.engine !== engine) return;
    const live = [...isr.batch].map((f) => a.byCore.get(f)).filter((f): f is FenceState => f !== undefined);
    if (!live.length) return;
    this.count('INT-06');
    const adapter = this.machine?.os.adapters[a.index];
    if (!isr.notified && adapter?.state === 'running') {
      this.report(a, 'INT-06', `interrupt service routine (engine ${engine})`,
        `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED for ${live.map((f) => hex(f.hGlobal)).join(', ')} (a GPU signal made CurrentValue > MonitoredValue)`,
        'the ISR returned without notifying the OS');
    }
    this.flushFatal();
  }

  /** Every executed GPU command: NF-19, MF-07, the interrupts raised, the log entries it owes. */
  private onStep(a: AdapterState, step: StepRecord): void {
    const kind = step.kind;
    if (kind === 'signal' || kind === 'fence-write') {
      const no64 = (a.vidSchCaps & VIDSCHCAPS.No64BitAtomics) !== 0;
      const before = step.previousValue;
      if (kind === 'signal' && before !== undefined) {
        this.count('NF-19');
        // Native fences only run on adapters with 64-bit atomic writes (both caps together fail adapter start): a whole compare.
        if (step.value < before) {
          this.report(a, 'NF-19', signalWhere(step), `CurrentValue stays at or above ${before} (a GPU signal carries no AllowFenceRewind)`,
            `the signal moved it down to ${step.value}`);
        }
      }
      if (a.hardware.granularity === 'command' && a.core.fenceIsLive(step.fence)) {
        this.count('MF-07');
        const current = u64(a.core.cpuReadCurrentValue(step.fence));
        const ok = no64 ? (current & MASK32) === (step.value & MASK32) : current === step.value;
        if (!ok) {
          this.report(a, 'MF-07', signalWhere(step), no64 ? `the low 32 bits of CurrentValue = ${step.value & MASK32}` : `CurrentValue = ${step.value} (the driver advertised 64-bit atomics)`,
            `CurrentValue is ${current}${no64 ? '' : ': the engine wrote only part of the value'}`);
        }
      }
      if (kind === 'fence-write') return; // a monitored fence: no CMP interrupt list, no log entry
      if (step.interrupt) { a.raised[step.queue.engine]?.add(step.fence); a.raisedBy[step.queue.engine]?.add(step.queue.handle); }
      this.expect(a, step, 'signals');
    } else if (kind === 'wait-passed' || kind === 'wait-unblocked') {
      this.expect(a, step, 'waits');
    }
  }

  // ── log buffers (LOG-04, LOG-07) ──

  private expect(a: AdapterState, step: StepRecord, kind: 'signals' | 'waits'): void {
    const log = a.logs.get(step.queue.handle)?.[kind];
    if (!log) return;
    const L = a.hardware.layout.log;
    if (log.readAhead > 0) { log.readAhead--; return; }
    log.expected.push({ handle: step.handle, value: step.value, operation: kind === 'signals' ? L.operationSignalExecuted : L.operationWaitUnblocked });
    // More owed than the buffer holds: the oldest are overwritten (an overrun the next read sees); keep the newest.
    if (log.expected.length - log.head > 2 * log.entries) { log.expected.splice(0, log.expected.length - log.entries); log.head = 0; }
  }

  private afterSetLogBuffer(a: AdapterState, args: DXGKARG_SETNATIVEFENCELOGBUFFER): void {
    const L = a.hardware.layout.log;
    const phys = Number(args.LogBufferCpuVa - KERNEL_VA_BASE);
    const view = this.view();
    const type = view.getUint32(phys + L.typeOffset, true);
    const kind = type === L.typeSignals ? 'signals' : type === L.typeWaits ? 'waits' : undefined;
    if (!kind) return;
    const word = view.getBigUint64(phys + L.indexOffset, true);
    const logs = a.logs.get(args.hHwQueue) ?? {};
    // The GPU wraps at the header's NumberOfEntries (what the OS formatted).
    logs[kind] = { phys, entries: Number(view.getBigUint64(phys + L.countOffset, true)), type, index: Number(word & MASK32), wraps: Number(word >> 32n), expected: [], head: 0, lastEndNs: 0n, readAhead: 0 };
    a.logs.set(args.hHwQueue, logs);
  }

  /** The OS is about to read these queues' logs: every new entry is the GPU operation it stands for, in time order. */
  private afterUpdateLogs(a: AdapterState, call: DdiCall, args: DXGKARG_UPDATENATIVEFENCELOGS): void {
    const L = a.hardware.layout.log;
    const view = this.view();
    for (let q = 0; q < args.NumberOfQueues; q++) {
      const logs = a.logs.get(args.hHWQueueArray[q]);
      if (!logs) continue;
      for (const kind of ['signals', 'waits'] as const) {
        const log = logs[kind];
        if (!log) continue;
        const word = view.getBigUint64(log.phys + L.indexOffset, true);
        const index = Number(word & MASK32), wraps = Number(word >> 32n);
        if (view.getUint32(log.phys + L.typeOffset, true) !== log.type || Number(view.getBigUint64(log.phys + L.countOffset, true)) !== log.entries || index >= log.entries) {
          // A corrupt header: the GPU drops entries, the OS recreates the buffer (SetNativeFenceLogBuffer starts over).
          log.expected.length = 0; log.head = 0; log.readAhead = 0; log.index = index; log.wraps = wraps;
          continue;
        }
        const fresh = (wraps - log.wraps) * log.entries + (index - log.index);
        const from = log.index;
        log.index = index; log.wraps = wraps;
        if (fresh <= 0) continue;
        if (fresh > log.entries) { log.expected.length = 0; log.head = 0; log.readAhead = 0; continue; } // an overrun (LOG-05 allows it): start over from here
        const where = () => `DxgkDdiUpdateNativeFenceLogs (${kind} log of hHwQueue ${hex(args.hHWQueueArray[q])})`;
        for (let n = 0; n < fresh; n++) {
          const slot = (from + n) % log.entries;
          const at = log.phys + L.headerBytes + slot * L.entryBytes;
          const value = view.getBigUint64(at + L.entryValueOffset, true);
          const handle = view.getUint32(at + L.entryHandleOffset, true);
          const operation = view.getUint32(at + L.entryOperationOffset, true);
          const endNs = view.getBigUint64(at + L.entryEndOffset, true);
          const wanted = log.head < log.expected.length ? log.expected[log.head++] : undefined;
          if (!wanted) { log.readAhead++; continue; } // the GPU is part-way through a signal (granularity 'step'): owed later
          this.count('LOG-04');
          if (wanted.value !== value || wanted.handle !== handle || wanted.operation !== operation) {
            this.report(a, 'LOG-04', where(), `slot ${slot}: value ${wanted.value}, hNativeFence ${hex(wanted.handle)}, operation ${wanted.operation} (written before the index covers it)`,
              `slot ${slot}: value ${value}, hNativeFence ${hex(handle)}, operation ${operation}`);
            log.expected.length = 0; log.head = 0;
            break;
          }
          this.count('LOG-07');
          if (endNs !== 0n && endNs < log.lastEndNs) {
            this.report(a, 'LOG-07', where(), `slot ${slot}: an end timestamp ≥ ${log.lastEndNs} (the last one of this log)`, `FenceEndGpuTimestamp ${endNs}`);
          }
          if (endNs !== 0n) log.lastEndNs = endNs;
        }
        if (log.head === log.expected.length) { log.expected.length = 0; log.head = 0; }
      }
    }
    void call;
  }

  // ── reporting ──

  private count(rule: string): void { this.checks.set(rule, (this.checks.get(rule) ?? 0) + 1); }

  private report(a: AdapterState, rule: string, where: string, expected: string, actual: string): void {
    const machine = this.machine!;
    const fatal = FATAL.has(rule);
    const event = machine.trace.record('fault', a.name, `contract violation ${rule}`, { where, expected, actual, fatal });
    const violation: Violation = { rule, adapter: a.name, where, timeNs: machine.scheduler.nowNs, traceIndex: event ? event.seq : machine.trace.recorded - 1, expected, actual, fatal };
    this.violations.push(violation);
    if (fatal) this.fatalPending.push(a);
    for (const listener of this.listeners) listener(violation);
  }

  /** Fatal violations bug-check their adapter once the OS is done with the call that showed them. */
  private flushFatal(): void {
    while (this.fatalPending.length) {
      const a = this.fatalPending.shift()!;
      const os = this.machine!.os;
      const adapter = os.adapters[a.index];
      const first = this.violations.find((v) => v.fatal && v.adapter === a.name)!;
      if (adapter && adapter.state !== 'stopped') {
        os.resets.bugCheckAdapter(adapter, 'CONTRACT_VIOLATION', `${first.rule} at ${first.where}: expected ${first.expected}; actual ${first.actual}`);
      }
    }
  }

  private view(): DataView {
    const buffer = this.machine!.memory.buffer;
    if (this.viewCache?.buffer !== buffer) this.viewCache = new DataView(buffer);
    return this.viewCache;
  }
  private viewCache?: DataView;

  private read64(phys: number): bigint { return this.view().getBigUint64(phys, true); }
}

/** A new checker, to pass in createMachine's `observers`. */
export function createContractChecker(): ContractChecker { return new ContractChecker(); }
