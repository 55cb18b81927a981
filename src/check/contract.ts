// The contract checker: judges a machine's drivers, and the GPUs they drive,
// against the rules of SPEC.md while the machine runs (issues 12 and 28).
//
//   createMachine({ observers: [checker] })          opt-in: off by default, and off costs nothing
//        │ machineCreated: port.observe(checker)     every DDI and callback of every adapter, and
//        │                                           what user mode submitted (userModeSubmitted)
//        │ adapterBuilt:   hardware.stepListeners    every executed GPU command
//        │                 hardware.interruptListeners  each ISR, bracketed
//        ▼
//   DDI / callback / GPU step ──▶ the rule's check ──▶ Violation { rule (a SPEC ID), adapter, where,
//                                                      timeNs, traceIndex, expected, actual, fatal }
//
// The checker sits at machine level: it sees every process and adapter at once,
// reads what the GPU left in memory (fence values, the CMP's write buffer, log
// buffers, queue rings) through the core's GPU view, and never changes anything
// but its own records and, for a fatal violation, the adapter's state: a fatal
// violation bug-checks that adapter only, through the OS's bug check (the same
// path a driver fault takes), after the OS handled the call. A violation never
// throws. Each violation is also a trace event (kind fault, "contract violation
// <rule>"), whose sequence number is the violation's traceIndex.
//
// `evaluations` counts, per rule, how many times its condition was evaluated
// (a rule with none was not reached: the driver was not judged on it).
//
// One violation is one cause: where a GPU step already broke one rule (work run
// after a reset, a command user mode never submitted), the step's other checks
// are skipped; a log found out of step is not judged again; and NF-10's lost
// wakeup is reported only when nothing else was.
//
// Why this file is long: each rule is a few lines, but the rules share the checker's records of
// each adapter (its fences, logs, user-mode submissions, command buffers, the ISR in progress, the
// last reset); split by rule, every part would reach into the others' records.
//
// The rules and what each one observes are in CONTRACT_RULES (src/check/README.md
// has the table; docs/DRIVERS.md says what the checker cannot see; docs/ARCHITECTURE.md
// "The contract checker" the design and the NF-19 decision for GPU signals below CurrentValue).

import type { DdiCall, DdiObserver, DdiOutcome, CallbackCall, UserModeSubmission } from '../port/driver-port.js';
import type {
  DXGKARG_SETNATIVEFENCELOGBUFFER, DXGKARG_SUBMITCOMMAND, DXGKARG_UPDATECURRENTVALUESFROMCPU, DXGKARG_UPDATEMONITOREDVALUES,
  DXGKARG_UPDATENATIVEFENCELOGS, DmaCompletedInterrupt, DriverStartResult, MonitoredFenceSignaledInterrupt, NativeFenceCaps, NativeFenceSignaledInterrupt,
} from '../ddi/ddi.js';
import type { GpuHardware, HwQueueInfo, InterruptPhase, StepRecord } from '../gpu/hardware.js';
import type { GpuCore } from '../core/bindings.js';
import type { BuiltAdapter, Machine, MachineObserver } from '../machine/machine.js';
import { KERNEL_VA_BASE, SYNC_FLAG_BITS, VIDSCHCAPS } from '../base/wddm.js';

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

/** One rule: its SPEC ID, what it checks, where its condition is evaluated, and whether a violation is fatal. */
export interface ContractRule {
  readonly rule: string;
  readonly checks: string;
  /** The state a case must reach for the condition to be evaluated (the reason a rule was not reached). */
  readonly reachedBy: string;
  readonly fatal: boolean;
  /** The rule judges the OS, not the driver (it is listed so a run shows both sides). */
  readonly judgesOs?: boolean;
}

/** Every rule the checker enforces, in the requirement list's order (src/check/README.md has the same table). */
export const CONTRACT_RULES: readonly ContractRule[] = [
  { rule: 'CAP-02', checks: 'DxgkDdiStartDevice advertising NativeGpuFence asked first (IsFeatureEnabled, then QueryFeatureInterface) and was answered Enabled: a driver honours the OS\'s answer', reachedBy: 'an adapter start', fatal: false },
  { rule: 'CAP-03', checks: 'the native fence caps DxgkDdiStartDevice returns are the GPU\'s, and DxgkDdiQueryAdapterInfo(NATIVE_FENCE_CAPS) returns the same (the ones the adapter was built from)', reachedBy: 'an adapter start advertising NativeGpuFence; user mode querying NATIVE_FENCE_CAPS', fatal: false },
  { rule: 'CAP-04', checks: 'no native fence DDI reaches an adapter whose driver did not advertise NativeGpuFence', reachedBy: 'an adapter started without NativeGpuFence', fatal: false, judgesOs: true },
  { rule: 'NF-01', checks: 'NativeGpuFence is advertised only by a GPU that writes 64 bits atomically (no No64BitAtomics, advertised or in the hardware); each GPU signal leaves the whole 64-bit value in CurrentValue', reachedBy: 'an adapter start advertising NativeGpuFence, or a GPU signal', fatal: false },
  { rule: 'NF-05', checks: 'each GPU signal is the next fence command user mode submitted to its queue: that signal, of that fence, with that value', reachedBy: 'a GPU signal of a user-mode submission', fatal: false },
  { rule: 'NF-06', checks: 'each GPU wait is the next fence command user mode submitted to its queue (none skipped), and passes only once CurrentValue >= its value', reachedBy: 'a GPU wait of a user-mode submission', fatal: false },
  { rule: 'NF-07', checks: 'after DxgkDdiUpdateCurrentValuesFromCpu: each CurrentValue is the value given, and no hardware queue still waits on a value it reached', reachedBy: 'a CPU signal', fatal: false },
  { rule: 'NF-09', checks: 'after DxgkDdiUpdateMonitoredValues: each MonitoredValue the CMP compares against is the value the OS gave', reachedBy: 'a MonitoredValue update (a CPU waiter added or retired)', fatal: true },
  { rule: 'NF-10', checks: 'when the machine is quiet: no CPU waiter whose value was reached is still waiting (reported when no other rule explains it)', reachedBy: 'the end of a case', fatal: false },
  { rule: 'NF-11', checks: 'DxgkDdiUpdateMonitoredValues: the CMP\'s MonitoredValue write left its write buffer when the DDI returned; and with a GPU signal placed between any two of the driver\'s CMP steps and no OS re-read of CurrentValue (the driver alone), no wakeup is lost', reachedBy: 'a MonitoredValue update; the driver-alone probe', fatal: false },
  { rule: 'NF-18', checks: 'after DxgkDdiUpdateCurrentValuesFromCpu with NotificationOnly: no CurrentValue written, and the run list rescanned', reachedBy: 'a cross-adapter fence signalled on another adapter', fatal: false },
  { rule: 'NF-19', checks: 'each GPU signal: it does not move CurrentValue below the value it overwrote (no GPU signal carries AllowFenceRewind)', reachedBy: 'a GPU signal', fatal: false },
  { rule: 'NF-20', checks: 'across a reset (DxgkDdiResetFromTimeout, DxgkDdiRestartFromTimeout, the OS\'s UINT64_MAX signals): a NoSignalMaxValueOnTdr fence keeps its value, and no work queued or in flight before the reset executes after it', reachedBy: 'a device removal or TDR', fatal: false },
  { rule: 'INT-01', checks: 'each native fence signaled interrupt with a list: it lists every live fence whose GPU signal raised it', reachedBy: 'an interrupt with a list raised by GPU signals', fatal: false },
  { rule: 'INT-03', checks: 'each native fence signaled interrupt: no listed handle is a destroyed (or unknown) fence', reachedBy: 'an interrupt with a list', fatal: true },
  { rule: 'INT-05', checks: 'each optimized interrupt (no list) naming a hardware queue: every GPU signal that raised it came from that queue (else it must name none)', reachedBy: 'an optimized interrupt (OptimizedNativeFenceSignaledInterrupt advertised) naming a queue', fatal: false },
  { rule: 'INT-06', checks: 'each interrupt the CMP raised for a GPU signal: the ISR notifies the OS (a list naming the fence, or no list)', reachedBy: 'an interrupt raised by a GPU signal', fatal: false },
  { rule: 'LOG-03', checks: 'each GPU operation\'s log entry lands in the buffer the OS set last for that queue and log (its FirstFreeEntryIndex moves by one)', reachedBy: 'a GPU signal or wait on a hardware queue with log buffers', fatal: false },
  { rule: 'LOG-04', checks: 'each log entry the OS reads (after DxgkDdiUpdateNativeFenceLogs): the entry of the GPU operation its index covers (value, handle, operation)', reachedBy: 'a log read after GPU operations', fatal: false },
  { rule: 'LOG-05', checks: 'each time a log\'s FirstFreeEntryIndex wraps to 0, its WraparoundCount goes up by one (so a reader can tell an overrun)', reachedBy: 'more GPU operations on one log than it has entries', fatal: false },
  { rule: 'LOG-06', checks: 'when DxgkDdiUpdateNativeFenceLogs returns, no log entry of the queues it names is still in a write buffer', reachedBy: 'a log read (DxgkDdiUpdateNativeFenceLogs)', fatal: false },
  { rule: 'LOG-07', checks: 'each log entry read: its end timestamp is not below the last non-zero one of that log', reachedBy: 'a log read after GPU operations', fatal: false },
  { rule: 'MF-04', checks: 'each monitored fence write the GPU executes is followed by DxgkCbNotifyMonitoredFenceSignaled from the ISR of its engine', reachedBy: 'a fence-write command of a kernel-mode context', fatal: false },
  { rule: 'MF-06', checks: 'each command buffer DxgkDdiSubmitCommand accepted is reported completed once (DxgkCbNotifyDmaCompleted with its SubmissionFenceId), and none that was not submitted', reachedBy: 'a command buffer of a kernel-mode context', fatal: false },
  { rule: 'MF-07', checks: 'each monitored fence write: the fence holds the value (its low 32 bits when the driver advertised No64BitAtomics)', reachedBy: 'a fence-write command', fatal: false },
];

const signalWhere = (step: StepRecord) => `GPU signal (${step.queue.label}, value ${step.value})`;
const stepWhere = (step: StepRecord) => `GPU ${step.kind} (${step.queue.label}${step.kind === 'work' || step.kind === 'dma-completed' ? '' : `, value ${step.value}`})`;
/** The DDIs of the native fence feature (CAP-04: never called on an adapter without it). */
const NATIVE_FENCE_DDIS: ReadonlySet<string> = new Set([
  'DxgkDdiCreateNativeFence', 'DxgkDdiOpenNativeFence', 'DxgkDdiCloseNativeFence', 'DxgkDdiDestroyNativeFence',
  'DxgkDdiUpdateCurrentValuesFromCpu', 'DxgkDdiUpdateMonitoredValues', 'DxgkDdiSetNativeFenceLogBuffer', 'DxgkDdiUpdateNativeFenceLogs',
]);
/** The DDIs the OS calls while it removes a device, after DxgkDdiRestartFromTimeout (NF-20's window ends at any other). */
const REMOVAL_DDIS: ReadonlySet<string> = new Set(['DxgkDdiUpdateCurrentValuesFromCpu', 'DxgkDdiUpdateMonitoredValues', 'DxgkDdiRestartFromTimeout']);
const FATAL = new Set(CONTRACT_RULES.filter((r) => r.fatal).map((r) => r.rule));
const MASK32 = 0xffff_ffffn;
const NO_SIGNAL_MAX_VALUE_ON_TDR = 1 << SYNC_FLAG_BITS.noSignalMaxValueOnTdr;
const u64 = (value: bigint) => BigInt.asUintN(64, value);
const hex = (value: number | bigint) => `0x${value.toString(16)}`;

interface FenceState { hGlobal: number; coreFence: number; cvPhys: number }
interface ExpectedEntry { handle: number; value: bigint; operation: number }
interface LogState {
  phys: number; entries: number; type: number;
  /** The reader's position (what the OS read up to: after DxgkDdiUpdateNativeFenceLogs). */
  index: number; wraps: number; lastEndNs: bigint;
  /** The writer's position (WraparoundCount × entries + FirstFreeEntryIndex after the GPU's last logged operation). */
  written: number;
  /** The entries the GPU owes this log, oldest first from `head` (a queue: consumed by index, compacted when read up). */
  expected: ExpectedEntry[]; head: number;
  /** Entries read before the GPU step that owes them was reported (granularity 'step'): their expectations are dropped when they come. */
  readAhead: number;
  /** False once the log broke a rule (LOG-03/04/05/06): out of step, it is not judged again. */
  judged: boolean;
}
/** What user mode submitted to a hardware queue and the GPU has not executed yet (NF-05, NF-06). */
interface SubmittedQueue { commands: { op: 'wait' | 'signal'; handle: number; value: bigint }[]; head: number; judged: boolean }
interface AdapterState {
  index: number; name: string; hardware: GpuHardware; core: GpuCore; hardwareCaps: number; hardwareNativeFenceCaps: Readonly<NativeFenceCaps>;
  vidSchCaps: number;
  /** What DxgkDdiStartDevice returned (CAP-03 compares QueryAdapterInfo with its NativeFenceCaps). */
  startCaps?: NativeFenceCaps;
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
  /** Per engine: a monitored fence write raised the pending interrupt (MF-04). */
  monitoredRaised: boolean[];
  /** The ISR running now: the fences its interrupt was raised for and their queues, and whether it notified the OS. */
  isr?: { engine: number; batch: Set<number>; queues: Set<number>; notified: boolean; monitored: boolean; monitoredNotified: boolean };
  /** hHwQueue → its two logs (set by DxgkDdiSetNativeFenceLogBuffer). */
  logs: Map<number, { signals?: LogState; waits?: LogState }>;
  /** hHwQueue → the fence commands user mode submitted that the GPU has not executed yet. */
  submitted: Map<number, SubmittedQueue>;
  /** SubmissionFenceId → the context whose command buffer it is, until reported completed (MF-06). */
  buffers: Map<number, { hContext: number; reported: boolean }>;
  /** SubmissionFenceIds of the command buffers the last reset dropped (NF-20: none completes after it). */
  droppedBuffers: Set<number>;
  /** Hardware queues DxgkDdiDestroyHwQueue returned for while the GPU still had them (NF-05: none runs again). */
  destroyedQueues: Set<HwQueueInfo>;
  /** NF-20: the queues (and contexts) that existed before the last reset, and the ones already reported. */
  staleQueues?: Set<HwQueueInfo>;
  staleReported: Set<HwQueueInfo>;
  /** NF-20: each NoSignalMaxValueOnTdr fence's CurrentValue before the reset, while the OS removes the device. */
  keptAcrossReset?: Map<number, bigint>;
  resets: number;
  cvBefore?: bigint[];
}

export class ContractChecker implements MachineObserver, DdiObserver {
  readonly violations: Violation[] = [];
  /** Per rule, how many times its condition was evaluated (a rule with none was not reached). */
  readonly evaluations = new Map<string, number>();
  private machine?: Machine;
  private readonly adapters: AdapterState[] = [];
  private readonly fatalPending: AdapterState[] = [];
  private readonly listeners: ((violation: Violation) => void)[] = [];

  /** The machine the checker watches (undefined before createMachine attached it). */
  get attachedMachine(): Machine | undefined { return this.machine; }

  /** The same as `evaluations` (the name issue 12 gave it). */
  get checks(): Map<string, number> { return this.evaluations; }

  /** Calls `listener` with every violation from now on. */
  onViolation(listener: (violation: Violation) => void): void { this.listeners.push(listener); }

  /**
   * Counts one evaluation of `rule`'s condition made outside the checker (check-driver's NF-11 probe,
   * a case judging its end state), and reports a violation of it when `violation` is given.
   */
  evaluated(rule: string, adapter: string, violation?: { where: string; expected: string; actual: string }): void {
    this.count(rule);
    if (!violation || !this.machine) return;
    const a = this.adapters.find((x) => x?.name === adapter) ?? this.adapters.find(Boolean);
    this.report(a ?? adapter ?? this.machine.adapters[0]?.name ?? 'machine', rule, violation.where, violation.expected, violation.actual);
  }

  /**
   * For a run nothing watched (check-driver runs each scenario once more that way, so a driver's unwatched paths
   * run): the machine whose end state `evaluated` judges, without observing it. Its violations are non-fatal.
   */
  judgeAfterRun(machine: Machine): void {
    if (this.machine) throw new Error('contract checker: already attached to a machine (one checker per machine)');
    this.machine = machine;
  }

  // ── attaching (MachineObserver) ──

  machineCreated(machine: unknown): void {
    if (this.machine) throw new Error('contract checker: already attached to a machine (one checker per machine)');
    this.machine = machine as Machine;
    this.machine.port.observe(this);
  }

  adapterBuilt(adapter: BuiltAdapter): void {
    const engines = adapter.hardware.engineCount;
    const state: AdapterState = {
      index: adapter.index, name: adapter.name, hardware: adapter.hardware, core: adapter.core, hardwareCaps: adapter.hardwareCaps,
      hardwareNativeFenceCaps: adapter.hardwareNativeFenceCaps, vidSchCaps: 0, started: false,
      fences: new Map(), byCore: new Map(), destroyed: new Set(), raised: Array.from({ length: engines }, () => new Set<number>()),
      raisedBy: Array.from({ length: engines }, () => new Set<number>()), monitoredRaised: Array.from({ length: engines }, () => false),
      logs: new Map(), submitted: new Map(), buffers: new Map(), droppedBuffers: new Set(), destroyedQueues: new Set(), staleReported: new Set(), resets: 0,
    };
    this.adapters[adapter.index] = state;
    adapter.hardware.stepListeners.push((step) => this.onStep(state, step));
    adapter.hardware.interruptListeners.push((engine, phase) => this.onInterruptService(state, engine, phase));
  }

  /**
   * The quiet-machine checks (after a run): MF-06's unreported buffers, then NF-10. Returns every violation so far.
   * `lostWakeups: false`: a lost wakeup is known to be another run's violation's consequence (not judged again).
   */
  finish(options: { lostWakeups?: boolean } = {}): Violation[] {
    const machine = this.machine;
    if (!machine) return this.violations;
    for (const a of this.adapters) if (a) { this.endRemoval(a); this.unreportedBuffers(a); }
    if (options.lostWakeups === false) { this.flushFatal(); return this.violations; }
    this.count('NF-10');
    const lost = machine.os.inspect.lostWakeups();
    // A lost wakeup after another violation is that violation's consequence: the first cause is the report.
    if (lost.length && !this.violations.length) {
      const l = lost[0];
      this.report(this.adapters.find(Boolean) ?? machine.adapters[0]?.name ?? 'machine', 'NF-10', 'quiet machine (after the run)', `${l.waiter} woken once ${l.fence} reached ${l.value}`,
        `${l.waiter} still waits though ${l.fence} is ${l.currentValue}${lost.length > 1 ? ` (and ${lost.length - 1} more)` : ''}`);
    }
    this.flushFatal();
    return this.violations;
  }

  // ── DDIs and callbacks (DdiObserver) ──

  beforeDdi(call: DdiCall): void {
    const a = this.adapters[call.adapterIndex];
    if (!a) return;
    if (a.keptAcrossReset && !REMOVAL_DDIS.has(call.ddi)) this.endRemoval(a);
    if (call.ddi === 'DxgkDdiStartDevice') a.startCallbacks = [];
    else if (a.started && (a.vidSchCaps & VIDSCHCAPS.NativeGpuFence) === 0 && NATIVE_FENCE_DDIS.has(call.ddi)) {
      this.report(a, 'CAP-04', call.ddi, 'no native fence DDI on an adapter without NativeGpuFence (its fences are monitored fences, XA-05)', `${call.ddi} called`);
    } else if (call.ddi === 'DxgkDdiUpdateCurrentValuesFromCpu') {
      const args = call.args as DXGKARG_UPDATECURRENTVALUESFROMCPU;
      a.cvBefore = args.CurrentValueKernelCpuVa.slice(0, args.NumFences).map((va) => this.read64(Number(va - KERNEL_VA_BASE)));
    } else if (call.ddi === 'DxgkDdiResetFromTimeout') {
      this.beforeReset(a);
    }
  }

  afterDdi(call: DdiCall, outcome: DdiOutcome): void {
    const a = this.adapters[call.adapterIndex];
    if (!a) return;
    const args = call.args as Record<string, unknown>;
    if (outcome.ok) {
      switch (call.ddi) {
        case 'DxgkDdiStartDevice': this.afterStart(a, outcome.result as DriverStartResult); break;
        case 'DxgkDdiQueryAdapterInfo': this.afterQueryAdapterInfo(a, outcome.result as NativeFenceCaps); break;
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
        case 'DxgkDdiUpdateMonitoredValues': this.afterUpdateMonitoredValues(a, args as unknown as DXGKARG_UPDATEMONITOREDVALUES); break;
        case 'DxgkDdiUpdateCurrentValuesFromCpu': this.afterUpdateCurrentValues(a, args as unknown as DXGKARG_UPDATECURRENTVALUESFROMCPU); break;
        case 'DxgkDdiSetNativeFenceLogBuffer': this.afterSetLogBuffer(a, args as unknown as DXGKARG_SETNATIVEFENCELOGBUFFER); break;
        case 'DxgkDdiUpdateNativeFenceLogs': this.afterUpdateLogs(a, args as unknown as DXGKARG_UPDATENATIVEFENCELOGS); break;
        case 'DxgkDdiDestroyHwQueue': {
          a.logs.delete(args.hHwQueue as number);
          a.submitted.delete(args.hHwQueue as number);
          const gone = [...a.hardware.queues.values()].find((q) => q.handle === args.hHwQueue);
          if (gone) a.destroyedQueues.add(gone); // the driver did not take it off its GPU: any step of it is reported
          break;
        }
        case 'DxgkDdiSubmitCommand': {
          const submit = args as unknown as DXGKARG_SUBMITCOMMAND;
          if (outcome.result === true) a.buffers.set(submit.SubmissionFenceId, { hContext: submit.hContext, reported: false });
          break;
        }
        case 'DxgkDdiDestroyContext':
          for (const [id, buffer] of [...a.buffers]) if (buffer.hContext === args.hContext) a.buffers.delete(id);
          break;
        default: break;
      }
    }
    if (call.ddi === 'DxgkDdiStartDevice') a.startCallbacks = undefined;
    if (call.ddi === 'DxgkDdiStopDevice' || call.ddi === 'DxgkDdiResetFromTimeout') {
      // The engines stopped: pending interrupts and every queue's work are gone.
      for (const set of a.raised) set.clear();
      for (const set of a.raisedBy) set.clear();
      a.monitoredRaised.fill(false);
      if (call.ddi === 'DxgkDdiResetFromTimeout') { a.logs.clear(); a.submitted.clear(); a.droppedBuffers = new Set(a.buffers.keys()); a.buffers.clear(); }
    }
    if (call.ddi === 'DxgkDdiResetFromTimeout' || call.ddi === 'DxgkDdiRestartFromTimeout') this.keptFencesKept(a, call.ddi);
    this.flushFatal();
  }

  beforeCallback(call: CallbackCall): void {
    const a = this.adapters[call.adapterIndex];
    if (!a) return;
    if (a.keptAcrossReset) this.endRemoval(a);
    a.startCallbacks?.push({ name: call.callback, data: call.data });
    switch (call.callback) {
      case 'NotifyInterrupt': this.onNotifyInterrupt(a, call.data as NativeFenceSignaledInterrupt); break;
      case 'NotifyMonitoredFenceSignaled': {
        const data = call.data as MonitoredFenceSignaledInterrupt;
        if (a.isr && data && a.isr.engine === data.NodeOrdinal) a.isr.monitoredNotified = true;
        break;
      }
      case 'NotifyDmaCompleted': this.onDmaCompleted(a, call.data as DmaCompletedInterrupt); break;
      case 'NotifyDmaPageFaulted': this.staleFault(a, call.data as { hQueue?: number }); break;
      default: break;
    }
  }

  afterCallback(): void { this.flushFatal(); }

  /** NF-05 / NF-06: what user mode asked the GPU to execute on a queue, in order (its fence commands). */
  userModeSubmitted(submission: UserModeSubmission): void {
    const a = this.adapters[submission.adapterIndex];
    if (!a) return;
    let queue = a.submitted.get(submission.hHwQueue);
    if (!queue) a.submitted.set(submission.hHwQueue, (queue = { commands: [], head: 0, judged: true }));
    for (const c of submission.commands) if (c.op !== 'work') queue.commands.push({ op: c.op, handle: c.handle, value: c.value });
  }

  // ── the rules ──

  /** CAP-02 (asked, and honoured the answer), NF-01 (64-bit writes): what DxgkDdiStartDevice advertised. */
  private afterStart(a: AdapterState, result: DriverStartResult): void {
    if (typeof result?.VidSchCaps !== 'number') return; // the OS refuses to start such a driver itself
    a.vidSchCaps = result.VidSchCaps;
    a.startCaps = result.NativeFenceCaps ? { ...result.NativeFenceCaps } : undefined;
    a.started = true;
    this.count('CAP-02');
    if ((result.VidSchCaps & VIDSCHCAPS.NativeGpuFence) === 0) { this.count('CAP-04'); return; }
    this.sameCaps(a, 'DxgkDdiStartDevice', result.NativeFenceCaps, a.hardwareNativeFenceCaps, 'the GPU\'s native fence caps');
    const names = (a.startCallbacks ?? []).map((c) => c.name);
    const asked = names.indexOf('IsFeatureEnabled');
    const queried = names.indexOf('QueryFeatureInterface', asked + 1);
    if (asked < 0 || queried < 0) {
      this.report(a, 'CAP-02', 'DxgkDdiStartDevice', 'IsFeatureEnabled(DXGK_FEATURE_NATIVE_FENCE), then QueryFeatureInterface, before advertising NativeGpuFence',
        `NativeGpuFence advertised after ${names.length ? names.join(', ') : 'no callback at all'}`);
    } else if (!this.machine!.os.inspect.nativeFenceFeature) {
      this.report(a, 'CAP-02', 'DxgkDdiStartDevice', 'no NativeGpuFence: IsFeatureEnabled(DXGK_FEATURE_NATIVE_FENCE) answered Enabled: false (the OS has the feature off)',
        'NativeGpuFence advertised anyway');
    }
    this.count('NF-01');
    const advertised32 = (result.VidSchCaps & VIDSCHCAPS.No64BitAtomics) !== 0, hardware32 = (a.hardwareCaps & VIDSCHCAPS.No64BitAtomics) !== 0;
    if (advertised32 || hardware32) {
      this.report(a, 'NF-01', 'DxgkDdiStartDevice', 'NativeGpuFence only on a GPU whose engines write CurrentValue\'s 64 bits at once',
        `NativeGpuFence advertised on a GPU that writes 32 bits atomically (${advertised32 ? 'No64BitAtomics advertised too' : 'its hardware has No64BitAtomics, which the driver left out'})`);
    }
  }

  /** CAP-03: QueryAdapterInfo(NATIVE_FENCE_CAPS) returns the caps the adapter was started with. */
  private afterQueryAdapterInfo(a: AdapterState, caps: NativeFenceCaps): void {
    if (!a.startCaps || caps === null || typeof caps !== 'object') return;
    this.sameCaps(a, 'DxgkDdiQueryAdapterInfo(DXGKQAITYPE_NATIVE_FENCE_CAPS)', caps, a.startCaps, 'the caps DxgkDdiStartDevice returned (the adapter\'s fence storage is laid out from them)');
  }

  /** CAP-03: the native fence caps a driver reports (at StartDevice, at QueryAdapterInfo) are `wanted` (the GPU's, then the ones it started with). */
  private sameCaps(a: AdapterState, where: string, caps: NativeFenceCaps | undefined, wanted: Readonly<NativeFenceCaps>, what: string): void {
    this.count('CAP-03');
    const fields = ['MonitoredValuePadding', 'MapToGpuSystemProcess', 'MinimumAddress', 'MaximumAddress'] as const;
    const differ = fields.filter((f) => String(caps?.[f]) !== String(wanted[f]));
    if (differ.length) {
      this.report(a, 'CAP-03', where, `${what}: ${differ.map((f) => `${f} ${String(wanted[f])}`).join(', ')}`,
        differ.map((f) => `${f} ${String(caps?.[f])}`).join(', '));
    }
  }

  /** NF-09 (the value the CMP compares against) and NF-11 (the barrier drained the CMP's write). */
  private afterUpdateMonitoredValues(a: AdapterState, args: DXGKARG_UPDATEMONITOREDVALUES): void {
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
  }

  /** NF-07 / NF-18: the values written (or, NotificationOnly, left alone) and the run list rescanned. */
  private afterUpdateCurrentValues(a: AdapterState, args: DXGKARG_UPDATECURRENTVALUESFROMCPU): void {
    const where = 'DxgkDdiUpdateCurrentValuesFromCpu';
    const notify = args.Flags.NotificationOnly;
    const rule = notify ? 'NF-18' : 'NF-07';
    this.count(rule);
    this.keptFencesKept(a, where);
    for (let i = 0; i < args.NumFences; i++) {
      const now = this.read64(Number(args.CurrentValueKernelCpuVa[i] - KERNEL_VA_BASE));
      const wanted = notify ? a.cvBefore?.[i] : args.UpdatedValueArray[i];
      if (wanted !== undefined && now !== wanted) {
        this.report(a, rule, where, notify ? `CurrentValue of ${hex(args.NativeFenceArray[i])} left at ${wanted} (NotificationOnly: rescan without writing)` : `CurrentValue of ${hex(args.NativeFenceArray[i])} = ${wanted}${args.NumFences > 1 ? ` (fence ${i + 1} of the ${args.NumFences} the call names)` : ''}`,
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
  }

  /** A native fence signaled interrupt: INT-03 (no destroyed handle), INT-01 (every raised live fence listed), INT-05. */
  private onNotifyInterrupt(a: AdapterState, data: NativeFenceSignaledInterrupt): void {
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
  }

  /** MF-06: a DMA completed interrupt names a command buffer that was submitted and not reported yet. */
  private onDmaCompleted(a: AdapterState, data: DmaCompletedInterrupt): void {
    if (data === null || typeof data !== 'object') return;
    const buffer = a.buffers.get(data.SubmissionFenceId);
    if (!buffer && a.droppedBuffers.delete(data.SubmissionFenceId)) {
      this.count('NF-20');
      this.report(a, 'NF-20', `NotifyDmaCompleted (engine ${data.NodeOrdinal})`, `command buffer ${data.SubmissionFenceId}, dropped by the last reset, never completes (DxgkDdiResetFromTimeout drops every context's work)`,
        'it completed after the reset: the work was kept');
      return;
    }
    this.count('MF-06');
    if (buffer && !buffer.reported) { a.buffers.delete(data.SubmissionFenceId); return; }
    this.report(a, 'MF-06', `NotifyDmaCompleted (engine ${data.NodeOrdinal})`, 'the SubmissionFenceId of a command buffer DxgkDdiSubmitCommand accepted and not reported yet',
      `SubmissionFenceId ${data.SubmissionFenceId}, which ${buffer ? 'was reported before' : 'no accepted command buffer has'}`);
  }

  /** MF-06 at the quiet end: a command buffer its context's ring has executed was reported. */
  private unreportedBuffers(a: AdapterState): void {
    if (this.machine!.os.inspect.adapters[a.index]?.state !== 'running') return;
    for (const [id, buffer] of a.buffers) {
      const context = [...a.hardware.queues.values()].find((q) => q.handle === buffer.hContext);
      if (!context || a.core.queuePending(context.id) !== 0) continue; // gone with its context, or not executed yet
      this.count('MF-06');
      this.report(a, 'MF-06', 'quiet machine (after the run)', `command buffer ${id} of ${context.label} reported completed (DxgkCbNotifyDmaCompleted): its ring has executed`,
        'never reported: the OS never scanned for it, and what the context submits next stays held');
      a.buffers.delete(id);
    }
  }

  /** The ISR bracket: which raised fences it serves; INT-06 and MF-04 when it returned without notifying the OS. */
  private onInterruptService(a: AdapterState, engine: number, phase: InterruptPhase): void {
    if (phase === 'service') {
      a.isr = { engine, batch: a.raised[engine], queues: a.raisedBy[engine], notified: false, monitored: a.monitoredRaised[engine], monitoredNotified: false };
      a.raised[engine] = new Set();
      a.raisedBy[engine] = new Set();
      a.monitoredRaised[engine] = false;
      return;
    }
    const isr = a.isr;
    a.isr = undefined;
    if (!isr || isr.engine !== engine) return;
    const running = this.machine?.os.inspect.adapters[a.index]?.state === 'running';
    if (isr.monitored) {
      this.count('MF-04');
      if (!isr.monitoredNotified && running) {
        this.report(a, 'MF-04', `interrupt service routine (engine ${engine})`, 'DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED (a fence-write command wrote a monitored fence)',
          'the ISR returned without DxgkCbNotifyMonitoredFenceSignaled');
      }
    }
    const live = [...isr.batch].map((f) => a.byCore.get(f)).filter((f): f is FenceState => f !== undefined);
    if (!live.length) return;
    this.count('INT-06');
    if (!isr.notified && running) {
      this.report(a, 'INT-06', `interrupt service routine (engine ${engine})`,
        `DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED for ${live.map((f) => hex(f.hGlobal)).join(', ')} (a GPU signal made CurrentValue > MonitoredValue)`,
        'the ISR returned without notifying the OS');
    }
    this.flushFatal();
  }

  /** Every executed GPU command: NF-20, NF-05/NF-06, NF-19, NF-01, MF-07, the interrupts raised, the log entries it owes. */
  private onStep(a: AdapterState, step: StepRecord): void {
    if (a.keptAcrossReset) this.endRemoval(a);
    if (a.resets > 0 && this.staleWork(a, step)) return;
    if (a.destroyedQueues.size && a.destroyedQueues.has(step.queue)) {
      a.destroyedQueues.delete(step.queue);
      this.count('NF-05');
      this.report(a, 'NF-05', stepWhere(step), `nothing more from ${step.queue.label}: user mode destroyed it (DxgkDdiDestroyHwQueue takes it and its ring off the GPU)`,
        `the GPU ran its ${step.kind}${step.kind === 'work' ? '' : ` (value ${step.value})`} after DxgkDdiDestroyHwQueue returned`);
      return;
    }
    const kind = step.kind;
    const wrong = this.asSubmitted(a, step);
    if (kind === 'signal' || kind === 'fence-write') {
      const no64 = (a.vidSchCaps & VIDSCHCAPS.No64BitAtomics) !== 0;
      const before = step.previousValue;
      if (kind === 'signal' && before !== undefined && !wrong) {
        this.count('NF-19');
        // Native fences only run on adapters with 64-bit atomic writes (both caps together fail adapter start): a whole compare.
        if (step.value < before) {
          this.report(a, 'NF-19', signalWhere(step), `CurrentValue stays at or above ${before} (a GPU signal carries no AllowFenceRewind)`,
            `the signal moved it down to ${step.value}`);
        }
      }
      if (a.hardware.granularity === 'command' && a.core.fenceIsLive(step.fence) && !wrong) {
        const rule = kind === 'signal' ? 'NF-01' : 'MF-07';
        this.count(rule);
        const current = u64(a.core.cpuReadCurrentValue(step.fence));
        const ok = no64 ? (current & MASK32) === (step.value & MASK32) : current === step.value;
        if (!ok) {
          this.report(a, rule, signalWhere(step), no64 ? `the low 32 bits of CurrentValue = ${step.value & MASK32}` : `CurrentValue = ${step.value} (the driver advertised 64-bit atomics)`,
            `CurrentValue is ${current}${no64 ? '' : ': the engine wrote only part of the value'}`);
        }
      }
      if (kind === 'fence-write') {
        // A monitored fence: no CMP interrupt list, no log entry; its own interrupt (MF-04).
        if (step.interrupt) a.monitoredRaised[step.queue.engine] = true;
        return;
      }
      if (step.interrupt) { a.raised[step.queue.engine]?.add(step.fence); a.raisedBy[step.queue.engine]?.add(step.queue.handle); }
      this.logged(a, step, 'signals');
    } else if (kind === 'wait-passed' || kind === 'wait-unblocked') {
      if (a.core.fenceIsLive(step.fence)) {
        this.count('NF-06');
        const current = u64(a.core.cpuReadCurrentValue(step.fence));
        if (current < step.value) {
          this.report(a, 'NF-06', stepWhere(step), `the wait passes once CurrentValue >= ${step.value}`, `it passed with CurrentValue ${current}`);
        }
      }
      this.logged(a, step, 'waits');
    }
  }

  /** NF-05 / NF-06: the step is the next fence command user mode submitted to its queue. True when it is not (its other checks are skipped). */
  private asSubmitted(a: AdapterState, step: StepRecord): boolean {
    if (step.kind !== 'signal' && step.kind !== 'wait-passed' && step.kind !== 'wait-blocked') return false;
    const queue = a.submitted.get(step.queue.handle);
    if (!queue || !queue.judged) return false;
    const op = step.kind === 'signal' ? 'signal' : 'wait';
    const next = queue.head < queue.commands.length ? queue.commands[queue.head++] : undefined;
    if (queue.head === queue.commands.length) { queue.commands.length = 0; queue.head = 0; }
    const rule = (next?.op ?? op) === 'wait' ? 'NF-06' : 'NF-05';
    this.count(rule);
    if (next && next.op === op && next.handle === step.handle && next.value === step.value) return false;
    queue.judged = false;
    const what = (c: { op: string; handle: number; value: bigint }) => `a ${c.op} of hSyncObject ${hex(c.handle)} to ${c.value}`;
    this.report(a, rule, stepWhere(step), next ? `${what(next)}: the next fence command user mode submitted to ${step.queue.label}` : `nothing more: user mode submitted no further fence command to ${step.queue.label}`,
      `the GPU executed ${what({ op, handle: step.handle, value: step.value })}${next && next.op === 'wait' && op !== 'wait' ? ' (the submitted wait never ran)' : ''}`);
    return true;
  }

  // ── NF-20: resets ──

  /** A reset begins: the queues whose work it drops, and the NoSignalMaxValueOnTdr fences' values. */
  private beforeReset(a: AdapterState): void {
    a.resets++;
    a.staleQueues = new Set(a.hardware.queues.values());
    a.staleReported = new Set();
    const kept = new Map<number, bigint>();
    for (const fence of a.fences.values()) {
      if (a.core.fenceIsLive(fence.coreFence) && (a.core.fenceFlags(fence.coreFence) & NO_SIGNAL_MAX_VALUE_ON_TDR) !== 0) kept.set(fence.coreFence, u64(a.core.cpuReadCurrentValue(fence.coreFence)));
    }
    a.keptAcrossReset = kept;
  }

  /** NF-20: every NoSignalMaxValueOnTdr fence still holds the value it had when the reset began. */
  private keptFencesKept(a: AdapterState, where: string): void {
    const kept = a.keptAcrossReset;
    if (!kept) return;
    for (const [coreFence, value] of kept) {
      if (!a.core.fenceIsLive(coreFence)) { kept.delete(coreFence); continue; }
      this.count('NF-20');
      const now = u64(a.core.cpuReadCurrentValue(coreFence));
      if (now !== value) {
        kept.delete(coreFence);
        const h = a.byCore.get(coreFence)?.hGlobal;
        this.report(a, 'NF-20', where, `${h === undefined ? `fence ${coreFence}` : hex(h)} (NoSignalMaxValueOnTdr) keeps CurrentValue ${value} across the reset`, `CurrentValue is ${now}`);
      }
    }
  }

  /** The OS is done removing the device (it calls or hears anything else): one last look at the kept fences. */
  private endRemoval(a: AdapterState): void {
    if (!a.keptAcrossReset) return;
    this.keptFencesKept(a, 'the end of the device removal');
    a.keptAcrossReset = undefined;
  }

  /** NF-20: a GPU step of work queued before the last reset (true: reported, the step is judged no further). */
  private staleWork(a: AdapterState, step: StepRecord): boolean {
    this.count('NF-20');
    if (!a.staleQueues?.has(step.queue)) return false;
    if (!a.staleReported.has(step.queue)) {
      a.staleReported.add(step.queue);
      this.report(a, 'NF-20', stepWhere(step), `no work of ${step.queue.label} queued or in flight before the reset runs after it (DxgkDdiResetFromTimeout drops every queue's work)`,
        `the GPU ran its ${step.kind}${step.kind === 'work' ? '' : ` (value ${step.value})`} after the reset`);
    }
    return true;
  }

  /** NF-20: a GPU fault of work queued before the last reset (the queue the fault names existed before it). */
  private staleFault(a: AdapterState, data: { hQueue?: number }): void {
    if (a.resets === 0 || data === null || typeof data !== 'object') return;
    this.count('NF-20');
    const queue = [...a.hardware.queues.values()].find((q) => q.handle === data.hQueue);
    if (!queue || !a.staleQueues?.has(queue) || a.staleReported.has(queue)) return;
    a.staleReported.add(queue);
    this.report(a, 'NF-20', 'NotifyDmaPageFaulted', `no work of ${queue.label} queued or in flight before the reset runs after it (DxgkDdiResetFromTimeout drops every queue's work)`,
      'its command faulted again after the reset: the work was kept');
  }

  // ── log buffers (LOG-03, LOG-04, LOG-05, LOG-06, LOG-07) ──

  /** A GPU operation that logs: LOG-03/LOG-05 (the writer's position moved by one, into the latest buffer) and the entry LOG-04 will read. */
  private logged(a: AdapterState, step: StepRecord, kind: 'signals' | 'waits'): void {
    const log = a.logs.get(step.queue.handle)?.[kind];
    if (!log || !log.judged) return;
    const L = a.hardware.layout.log;
    const view = this.view();
    const index = this.logHeader(log, view);
    if (index !== undefined) {
      const wraps = Number(view.getBigUint64(log.phys + L.indexOffset, true) >> 32n);
      const position = wraps * log.entries + index;
      const due = log.written + 1;
      this.count('LOG-03');
      if (due % log.entries === 0) this.count('LOG-05');
      const where = stepWhere(step);
      if (position !== due) {
        log.judged = false;
        const had = `FirstFreeEntryIndex ${log.written % log.entries}, WraparoundCount ${Math.floor(log.written / log.entries)}`;
        if (position === log.written) {
          this.report(a, 'LOG-03', where, `its ${kind} log entry in the buffer the OS set last (at ${hex(log.phys)}): its FirstFreeEntryIndex moves on from ${had}`,
            'the index did not move: the entry went somewhere else (a buffer the OS no longer uses?)');
        } else if (index === due % log.entries && wraps === Math.floor(log.written / log.entries)) {
          this.report(a, 'LOG-05', where, `FirstFreeEntryIndex wraps to 0 and WraparoundCount goes from ${wraps} to ${wraps + 1}`,
            `WraparoundCount stayed ${wraps}: a reader cannot tell the overrun`);
        } else {
          this.report(a, 'LOG-04', where, `FirstFreeEntryIndex ${due % log.entries}, WraparoundCount ${Math.floor(due / log.entries)} (one entry on from ${had})`,
            `FirstFreeEntryIndex ${index}, WraparoundCount ${wraps}`);
        }
        return;
      }
      log.written = position;
    }
    const operation = kind === 'signals' ? L.operationSignalExecuted : L.operationWaitUnblocked;
    if (log.readAhead > 0) { log.readAhead--; return; }
    log.expected.push({ handle: step.handle, value: step.value, operation });
    // More owed than the buffer holds: the oldest are overwritten (an overrun the next read sees); keep the newest.
    if (log.expected.length - log.head > 2 * log.entries) { log.expected.splice(0, log.expected.length - log.entries); log.head = 0; }
  }

  /** The log's FirstFreeEntryIndex, or undefined when its header is not the one the OS formatted (the GPU drops entries; the OS recreates it). */
  private logHeader(log: LogState, view: DataView): number | undefined {
    const L = this.adapters.find(Boolean)!.hardware.layout.log;
    const index = Number(view.getBigUint64(log.phys + L.indexOffset, true) & MASK32);
    if (view.getUint32(log.phys + L.typeOffset, true) !== log.type || Number(view.getBigUint64(log.phys + L.countOffset, true)) !== log.entries || index >= log.entries) return undefined;
    return index;
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
    const entries = Number(view.getBigUint64(phys + L.countOffset, true));
    const index = Number(word & MASK32), wraps = Number(word >> 32n);
    logs[kind] = { phys, entries, type, index, wraps, written: wraps * entries + index, expected: [], head: 0, lastEndNs: 0n, readAhead: 0, judged: entries > 0 };
    a.logs.set(args.hHwQueue, logs);
  }

  /** The OS is about to read these queues' logs: LOG-06 (nothing left in a write buffer), then every new entry is the GPU operation it stands for, in time order. */
  private afterUpdateLogs(a: AdapterState, args: DXGKARG_UPDATENATIVEFENCELOGS): void {
    const L = a.hardware.layout.log;
    const view = this.view();
    for (let q = 0; q < args.NumberOfQueues; q++) {
      const hHwQueue = args.hHWQueueArray[q];
      const logs = a.logs.get(hHwQueue);
      const queue = [...a.hardware.queues.values()].find((x) => x.handle === hHwQueue);
      if (queue) {
        this.count('LOG-06');
        const pending = a.core.logPendingAddress(queue.id);
        if (pending !== 0) {
          this.report(a, 'LOG-06', `DxgkDdiUpdateNativeFenceLogs (hHwQueue ${hex(hHwQueue)})`, `every log entry of ${queue.label} in memory when the DDI returns (the OS reads them next)`,
            `an entry (for slot at ${hex(pending)}) still in the queue's log write buffer`);
          if (logs?.signals) logs.signals.judged = false;
          if (logs?.waits) logs.waits.judged = false;
        }
      }
      if (!logs) continue;
      for (const kind of ['signals', 'waits'] as const) {
        const log = logs[kind];
        if (!log) continue;
        const word = view.getBigUint64(log.phys + L.indexOffset, true);
        const index = Number(word & MASK32), wraps = Number(word >> 32n);
        if (this.logHeader(log, view) === undefined) {
          // A corrupt header: the GPU drops entries, the OS recreates the buffer (SetNativeFenceLogBuffer starts over).
          log.expected.length = 0; log.head = 0; log.readAhead = 0; log.index = index; log.wraps = wraps;
          continue;
        }
        const fresh = (wraps - log.wraps) * log.entries + (index - log.index);
        const from = log.index;
        log.index = index; log.wraps = wraps;
        if (!log.judged || fresh <= 0) continue;
        if (fresh > log.entries) { log.expected.length = 0; log.head = 0; log.readAhead = 0; continue; } // an overrun (LOG-05 allows it): start over from here
        const where = () => `DxgkDdiUpdateNativeFenceLogs (${kind} log of hHwQueue ${hex(hHwQueue)})`;
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
            log.expected.length = 0; log.head = 0; log.judged = false;
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
  }

  // ── reporting ──

  private count(rule: string): void { this.evaluations.set(rule, (this.evaluations.get(rule) ?? 0) + 1); }

  /** `a`: the adapter's state, or only its name (an end state judged after a run nothing watched: never fatal). */
  private report(a: AdapterState | string, rule: string, where: string, expected: string, actual: string): void {
    const machine = this.machine!;
    const name = typeof a === 'string' ? a : a.name;
    const fatal = FATAL.has(rule) && typeof a !== 'string';
    const event = machine.trace.record('fault', name, `contract violation ${rule}`, { where, expected, actual, fatal });
    const violation: Violation = { rule, adapter: name, where, timeNs: machine.scheduler.nowNs, traceIndex: event ? event.seq : machine.trace.recorded - 1, expected, actual, fatal };
    this.violations.push(violation);
    if (fatal) this.fatalPending.push(a as AdapterState);
    for (const listener of this.listeners) listener(violation);
  }

  /** Fatal violations bug-check their adapter once the OS is done with the call that showed them. */
  private flushFatal(): void {
    while (this.fatalPending.length) {
      const a = this.fatalPending.shift()!;
      const first = this.violations.find((v) => v.fatal && v.adapter === a.name)!;
      this.machine!.os.bugCheckAdapter(a.index, 'CONTRACT_VIOLATION', `${first.rule} at ${first.where}: expected ${first.expected}; actual ${first.actual}`);
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
