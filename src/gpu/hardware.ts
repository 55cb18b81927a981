// The simulated GPU of one adapter: engines that execute hardware queues in
// virtual time, the hardware scheduler's run list, and the interrupt line to
// the driver's ISR. The commands themselves execute in the core
// (engineStep); this file decides WHEN each step happens and traces it.
//
//   engine tick ──▶ core.engineStep(queue) ──▶ DONE / BLOCKED / WORK / INTERRUPT
//        ▲                                                   │
//        └──── next tick: +commandNs, or +work duration ◀────┘
//   INTERRUPT ──▶ ISR scheduled at +interruptLatencyNs (signals raised before
//                 it runs join the same interrupt: collapsing)
//   a signal  ──▶ run-list rescan of queues blocked on that fence (no CPU)
//   NOP marker ─▶ a kernel-mode context's command buffer completed: DMA
//                 completed interrupt at +interruptLatencyNs (one per buffer)
//
// Granularity (machine option schedule.granularity). 'command' (the default):
// one engine-tick event executes a whole command (core.engineStep). 'step': a
// native fence signal is a small state machine that runs one exported core
// step per scheduler event, so a schedule explorer chooses what happens
// between any two of them:
//
//   engine-tick ─▶ 1 engineStepBegin (engineSignalWrite: CV → write buffer)
//   engine-step ─▶ 2 logWriteEntry ─▶ 3 logAdvance (skipped when 2 dropped it)
//   engine-step ─▶ 4 engineDrain (CV reaches memory) ─▶ doorbell (XA-07, when on)
//   engine-step ─▶ 5 cmpSignalCheck, then what a whole command does after it
//                  (trace, step listeners, interrupt, run-list rescan); the
//                  next engine-tick is commandNs later
//
// Every sub-step runs at the virtual time it is taken. Any other command is
// one step at both granularities.
//
// Why this file is long: the two granularities, the firmware's index-first
// signal (GpuFirmware) and the interrupt line are one state machine over the
// same private engine records; split, each part would reach into the others.

import type { CoreLayout, GpuCore, WasmMemory } from '../core/bindings.js';
import { u64 } from '../core/bindings.js';
import type { Scheduler, ScheduledEvent } from '../base/scheduler.js';
import type { Random } from '../base/rng.js';
import type { Trace } from '../base/trace.js';
import { check } from '../base/errors.js';
import type { DoorbellService } from './doorbell.js';

export interface Timing {
  /** Virtual time one command takes on an engine. */
  commandNs: number;
  /** From the CMP raising an interrupt to the ISR running. */
  interruptLatencyNs: number;
  /**
   * Seeded jitter, a fraction from 0 to 1: every command time, interrupt
   * delivery and doorbell latency takes its value plus a whole number of ns
   * from 0 to value × jitter, drawn from the machine's seed. 0 = exact.
   */
  jitter: number;
}

/** A queue as the GPU knows it (the drivers freeze theirs: fixed for the queue's life). */
export interface HwQueueInfo {
  id: number;          // core queue id
  engine: number;
  handle: number;      // the driver's hHwQueue
  label: string;       // for the trace
}

export interface StepRecord {
  queue: HwQueueInfo;
  kind: 'wait-passed' | 'wait-blocked' | 'wait-unblocked' | 'signal' | 'work' | 'fence-write' | 'dma-completed';
  fence: number;       // core fence id
  handle: number;      // user-mode handle in the command
  value: bigint;
  timeNs: number;
  observedNs?: number; // waits: when the GPU first saw the wait
  interrupt?: boolean;
  /** Signals: the CurrentValue the store overwrote (the OS's GPU-rewind rule reads it, src/os/gpu-rewind.ts). */
  previousValue?: bigint;
}

/**
 * A stretch (granularity 'command', nothing watching each command): commands one queue executed in
 * one core call (engineRunStretch), each a passed wait, work, or a signal that neither lowered
 * CurrentValue nor raised the interrupt, at the virtual times the scheduler would have run them one
 * tick at a time. Its reporter hears the count instead of a StepRecord per command.
 */
export interface StretchReport {
  queue: HwQueueInfo;
  /** Commands executed. */
  commands: number;
  /** Of them, waits and signals (each held a fence reference). */
  fenceCommands: number;
  /** Virtual time when it ended (the scheduler's now). */
  endNs: number;
}

/**
 * Who hears stretches instead of step records (the driver that owns the GPU). Stretches run only while
 * the step listeners are this reporter's `stepListener` alone (a tool watching every step turns them off)
 * and `accepts` says yes for the queue.
 */
export interface StretchReporter {
  readonly stepListener: (step: StepRecord) => void;
  /** May the queue's next commands run as a stretch (nobody needs to hear each one)? */
  accepts(queue: HwQueueInfo): boolean;
  executed(stretch: StretchReport): void;
}

/** How much of a command one engine event executes (see the drawing on top). */
export type Granularity = 'command' | 'step';

/** The next core step of a signal an engine executes one step per event (granularity 'step'). */
export type SignalPhase = 'log-entry' | 'log-advance' | 'drain' | 'doorbell' | 'cmp-check';

/** A native fence signal part-way through its steps on an engine (granularity 'step'). */
export interface SignalInFlight {
  readonly queue: HwQueueInfo;
  readonly fence: number;
  readonly handle: number;
  readonly value: bigint;
  /** The step the engine's next event runs. */
  phase: SignalPhase;
  /** CurrentValue the drain overwrote (the OS's GPU-rewind rule). */
  previousValue?: bigint;
  /** The doorbell's fallback raised the interrupt (XA-07). */
  doorbellFallback: boolean;
}

/**
 * What the driver programs into its GPU (firmware-like): the GPU model's few
 * behaviours a driver legitimately controls. The defaults are the documented
 * behaviour; a driver module changes them through `hardware.configureFirmware`
 * (docs/DRIVERS.md), and the contract checker (src/check/contract.ts) judges
 * what the GPU then does.
 */
export interface GpuFirmware {
  /**
   * The GPU timestamp counter the engines stamp log entries with (LOG-02, LOG-07), from the
   * virtual time of the step in ns. Default: the virtual time itself.
   */
  timestamp(nowNs: number): bigint;
  /**
   * LOG-04: the order of a signal's log write. 'entry-first' (the documented order): write the
   * entry at FirstFreeEntryIndex, then advance the index. 'index-first': advance the index, then
   * write the entry (at the slot the advanced index names).
   */
  signalLogOrder: 'entry-first' | 'index-first';
  /**
   * LOG-05: what the GPU does when FirstFreeEntryIndex passes a log's last entry. 'count' (the
   * documented behaviour): back to 0 and WraparoundCount + 1, in one 64-bit write. 'index-only':
   * back to 0 with WraparoundCount left as it was, so a reader cannot tell an overrun from no progress.
   */
  logWraparound: 'count' | 'index-only';
}

/** The documented firmware: virtual-time timestamps, entry then index, a wrap bumps the count. */
export const DEFAULT_FIRMWARE: Readonly<GpuFirmware> = Object.freeze({
  timestamp: (nowNs: number) => BigInt(nowNs), signalLogOrder: 'entry-first' as const, logWraparound: 'count' as const,
});
/** The members of GpuFirmware (configureFirmware refuses any other). */
const FIRMWARE_MEMBERS: readonly (keyof GpuFirmware)[] = ['timestamp', 'signalLogOrder', 'logWraparound'];

/** Where an engine's interrupt service routine is: about to run, or returned (the contract checker brackets it). */
export type InterruptPhase = 'service' | 'serviced';

interface EngineState {
  event?: ScheduledEvent; busyUntilNs: number; cursor: number; isr?: ScheduledEvent; queueIds: number[]; signal?: SignalInFlight;
  /**
   * Made once: the actor and the tick's label, and the arguments of every event of the engine (frozen: one
   * object shared by its ticks, steps and interrupts, which the explorer's state key writes as a constant).
   */
  readonly actor: string; readonly tickLabel: string; readonly args: Readonly<{ engine: number }>;
}

/** The core step each phase runs, for traces and explorers. */
export const SIGNAL_PHASE_STEP: Readonly<Record<SignalPhase, string>> = {
  'log-entry': '2 logWriteEntry', 'log-advance': '3 logAdvance', drain: '4 engineDrain',
  doorbell: 'engineDoorbellPost', 'cmp-check': '5 cmpSignalCheck',
};

export class GpuHardware {
  readonly queues = new Map<number, HwQueueInfo>();
  private readonly blockedOn = new Map<number, Set<number>>(); // core fence → blocked queue ids
  private readonly engines: EngineState[];
  stopped = false;
  /** Called when the GPU faults (e.g. a page fault on an unmapped fence VA), with the queue whose command faulted: the driver's ISR reports it. */
  onFault: (message: string, queue: HwQueueInfo | undefined) => void = (message) => { throw new Error(message); };
  /** Called when an engine's interrupt line must be serviced (the driver's ISR). */
  onInterrupt: (engine: number) => void = () => {};
  /** Called (after the interrupt latency) when a command buffer's completion marker executed. */
  onDmaCompleted: (engine: number, queueId: number, submissionFenceId: number) => void = () => {};
  /** Hardware-queue waits released by the driver's run-list rescan on a CPU update (UpdateCurrentValuesFromCpu). */
  waitsReleasedByCpu = 0;
  /** Observers of executed steps (log buffers, timeline). */
  readonly stepListeners: ((step: StepRecord) => void)[] = [];
  /** The cross-adapter doorbell of this adapter (XA-07), when the machine enables it. */
  doorbell?: DoorbellService;
  /** What one engine event executes: a whole command, or one core step of a signal (drawing on top). */
  granularity: Granularity = 'command';
  /** Hears stretches of commands run in one core call (the owning driver; undefined: every command is a tick of its own). */
  stretchReporter?: StretchReporter;
  /** Stretches run and the commands in them (tests, tools; counts only, no step reads them). */
  readonly counts = { stretches: 0, stretchedCommands: 0 };
  /** Observers of the interrupt line's service: before the driver's ISR runs, and after it returned (the contract checker). */
  readonly interruptListeners: ((engine: number, phase: InterruptPhase) => void)[] = [];
  private firmwareState: GpuFirmware = DEFAULT_FIRMWARE;
  /** The timestamp counter as programmed (firmware.timestamp), kept apart: it is on every step's path. */
  private timestamp: (nowNs: number) => bigint = DEFAULT_FIRMWARE.timestamp;
  /** firmware.logWraparound is 'index-only' (kept apart: emit, on every step's path, tests it). */
  private wrapKeepsCount = false;
  /** 'index-only' firmware: each log buffer's WraparoundCount as the firmware keeps it (by its physical address). */
  private readonly keptWraparounds = new Map<number, number>();

  /** What the driver programmed (GpuFirmware). */
  get firmware(): Readonly<GpuFirmware> { return this.firmwareState; }

  /**
   * The driver programs its GPU (GpuFirmware): the named members replace the current ones.
   * Unknown members, a timestamp that is no function or an unknown log order are refused, changing nothing.
   */
  configureFirmware(firmware: Partial<GpuFirmware>): void {
    if (firmware === null || typeof firmware !== 'object') throw new TypeError(`${this.name}: configureFirmware(firmware): expected an object with some of ${FIRMWARE_MEMBERS.join(', ')}`);
    for (const key of Object.keys(firmware)) {
      if (!(FIRMWARE_MEMBERS as readonly string[]).includes(key)) throw new TypeError(`${this.name}: configureFirmware: unknown member "${key}"; expected one of ${FIRMWARE_MEMBERS.join(', ')}`);
    }
    if (firmware.timestamp !== undefined && typeof firmware.timestamp !== 'function') throw new TypeError(`${this.name}: configureFirmware: timestamp must be a function (nowNs) => bigint`);
    if (firmware.signalLogOrder !== undefined && firmware.signalLogOrder !== 'entry-first' && firmware.signalLogOrder !== 'index-first') {
      throw new TypeError(`${this.name}: configureFirmware: signalLogOrder is ${JSON.stringify(firmware.signalLogOrder)}; expected 'entry-first' or 'index-first'`);
    }
    if (firmware.logWraparound !== undefined && firmware.logWraparound !== 'count' && firmware.logWraparound !== 'index-only') {
      throw new TypeError(`${this.name}: configureFirmware: logWraparound is ${JSON.stringify(firmware.logWraparound)}; expected 'count' or 'index-only'`);
    }
    this.firmwareState = Object.freeze({ ...this.firmwareState, ...firmware });
    this.timestamp = this.firmwareState.timestamp;
    this.wrapKeepsCount = this.firmwareState.logWraparound === 'index-only';
  }

  constructor(
    readonly name: string,
    readonly core: GpuCore,
    readonly layout: CoreLayout,
    readonly engineCount: number,
    private readonly scheduler: Scheduler,
    private readonly trace: Trace,
    readonly timing: Timing,
    /** The machine's timing stream (jitter). */
    private readonly random: Random,
  ) {
    // Every field from the start, in one order: the race explorer's state key hashes a record's fields in order, so a
    // field added when first set would make one state two keys (test/explore-commute.test.ts).
    this.engines = Array.from({ length: engineCount }, (_, engine) => ({
      event: undefined, busyUntilNs: 0, cursor: 0, isr: undefined, queueIds: [] as number[], signal: undefined,
      actor: `${name}/engine${engine}`, tickLabel: `${name}/engine${engine} tick`, args: Object.freeze({ engine }),
    }));
    scheduler.register(name, (event) => this.onEvent(event));
  }

  /** This adapter's scheduler events (src/base/scheduler.ts lists every kind). */
  private onEvent(event: ScheduledEvent): void {
    const engine = event.args.engine as number;
    switch (event.kind) {
      case 'engine-tick':
      case 'engine-step': this.runEngineEvent(engine, event.kind); return;
      case 'interrupt':
        this.engines[engine].isr = undefined;
        if (this.stopped) return;
        if (!this.interruptListeners.length) { this.onInterrupt(engine); return; }
        for (const listener of this.interruptListeners) listener(engine, 'service');
        this.onInterrupt(engine);
        for (const listener of this.interruptListeners) listener(engine, 'serviced');
        return;
      case 'dma-completed':
        if (!this.stopped) this.onDmaCompleted(engine, event.args.queue as number, event.args.submissionFenceId as number);
        return;
      default: throw new Error(`${this.name}: no scheduler event of kind "${event.kind}"`);
    }
  }

  /** A configured latency with the machine's seeded jitter. */
  private latency(baseNs: number): number { return this.random.jittered(baseNs, this.timing.jitter); }

  addQueue(info: HwQueueInfo): void {
    this.queues.set(info.id, info);
    const ids = this.engines[info.engine].queueIds;
    ids.push(info.id);
    ids.sort((a, b) => a - b);
  }
  removeQueue(id: number): void {
    const info = this.queues.get(id);
    this.queues.delete(id);
    if (info) {
      const ids = this.engines[info.engine].queueIds;
      const at = ids.indexOf(id);
      if (at >= 0) ids.splice(at, 1);
    }
    for (const set of this.blockedOn.values()) set.delete(id);
  }

  /**
   * The engine whose event (a tick or a signal's step) is running, -1 between events. Its command may unblock a
   * queue of its own (a signal a queue of the same engine waits for: rescanFence): the kick that follows must not
   * start a second chain of ticks beside the one the command schedules when it ends (two commands of one engine at
   * once; in the explorer's steps, a signal begun while another is in flight, its last steps lost).
   */
  private running = -1;

  /** The doorbell: the engine looks for work (unless it is running an event of its own, which schedules its next tick). */
  kick(engine: number): void {
    if (this.stopped || engine === this.running) return;
    const state = this.engines[engine];
    if (state.event && !state.event.cancelled) return;
    const at = Math.max(this.scheduler.nowNs, state.busyUntilNs);
    state.event = this.scheduler.at(at, this.name, 'engine-tick', state.args, state.tickLabel);
  }

  private nextRunnable(engine: number): HwQueueInfo | undefined {
    const state = this.engines[engine];
    const ids = state.queueIds; // kept sorted by addQueue/removeQueue: round-robin in queue order
    if (!ids.length) return undefined;
    for (let n = 0; n < ids.length; n++) {
      const id = ids[(state.cursor + n) % ids.length];
      if (this.core.queueState(id) === this.layout.queueStateReady && this.core.queuePending(id) > 0) {
        state.cursor = (state.cursor + n + 1) % ids.length;
        return this.queues.get(id);
      }
    }
    return undefined;
  }

  /** Reads the StepReport the core left in its out buffer, at the offsets the core exports. */
  private readOut(memory: ArrayBufferLike): { fence: number; handle: number; value: bigint; workDurationNs: bigint; observedNs: bigint; op: number } {
    const base = this.core.outBufferAddress();
    // The machine's memory never grows (maximum = initial), so one view serves every step.
    if (this.outView?.buffer !== memory) this.outView = new DataView(memory);
    const view = this.outView;
    const at = this.layout.out.step;
    return {
      workDurationNs: view.getBigUint64(base + at.workDurationNs, true),
      observedNs: view.getBigUint64(base + at.observedNs, true),
      fence: view.getUint32(base + at.fence, true),
      handle: view.getUint32(base + at.handle, true),
      value: view.getBigUint64(base + at.value, true),
      op: view.getUint32(base + at.op, true),
    };
  }

  memory!: WasmMemory;
  private outView?: DataView;

  /** An engine-tick; a next tick run() would take next anyway runs in place (Scheduler.atOrContinue). */
  private tick(engine: number): void {
    const state = this.engines[engine];
    while (this.tickOnce(engine, state)) { /* the next tick, in place */ }
  }

  /** One command; true when the engine's next tick is to run in place now. */
  private tickOnce(engine: number, state: EngineState): boolean {
    state.event = undefined;
    if (this.stopped) return false;
    const queue = this.nextRunnable(engine);
    if (!queue) return false;
    const now = this.scheduler.nowNs;
    const L = this.layout;
    const actor = state.actor;
    const tracing = this.trace.enabled; // trace arguments (and the core reads made only for them) are built only when tracing
    if (this.granularity === 'step' && this.core.queueHeadOp(queue.id) === L.opSignal) { this.signalBegin(engine, queue); return false; }
    if (this.firmwareState.signalLogOrder === 'index-first' && this.core.queueHeadOp(queue.id) === L.opSignal) { this.signalIndexFirst(engine, queue); return false; }
    if (!tracing && this.stretchable(engine, state, queue)) {
      const outcome = this.runStretch(engine, state, queue);
      if (outcome !== 'loud') return outcome === 'in-place';
      // The next command needs the host: it runs below, at the time the stretch reached.
      return this.commandAt(engine, state, queue);
    }
    return this.commandAt(engine, state, queue);
  }

  /** One command the ordinary way (engineStep), at the scheduler's now. */
  private commandAt(engine: number, state: EngineState, queue: HwQueueInfo): boolean {
    const now = this.scheduler.nowNs;
    const L = this.layout;
    const actor = state.actor;
    const tracing = this.trace.enabled;
    const overwritten = this.valueUnderHeadSignal(queue.id);
    const result = this.core.engineStep(queue.id, this.timestamp(now));
    if (result < 0) { this.fault(`${actor} executing ${queue.label}`, result, queue); return false; }
    const out = this.readOut(this.memory.buffer);
    if (result === L.stepIdle) return false;
    let nextNs = now + this.latency(this.timing.commandNs);
    if (result === L.stepWork) {
      nextNs = now + Number(out.workDurationNs);
      this.trace.record('gpu', actor, 'work', { queue: queue.label, durationNs: Number(out.workDurationNs) });
      this.emit({ queue, kind: 'work', fence: 0, handle: 0, value: out.workDurationNs, timeNs: now });
    } else if (result === L.stepBlocked) {
      if (tracing) this.trace.record('gpu', actor, 'wait blocked', { queue: queue.label, hSyncObject: out.handle, value: out.value, currentValue: u64(this.core.cpuReadCurrentValue(out.fence)) });
      let set = this.blockedOn.get(out.fence);
      if (!set) this.blockedOn.set(out.fence, (set = new Set()));
      set.add(queue.id);
      this.emit({ queue, kind: 'wait-blocked', fence: out.fence, handle: out.handle, value: out.value, timeNs: now, observedNs: now });
    } else if (out.op === L.opNop) {
      // The completion marker the driver put after a kernel-mode context's command buffer.
      const submissionFenceId = Number(out.value);
      this.trace.record('gpu', actor, 'command buffer completed', { queue: queue.label, SubmissionFenceId: submissionFenceId });
      this.emit({ queue, kind: 'dma-completed', fence: 0, handle: 0, value: out.value, timeNs: now });
      this.scheduler.after(this.latency(this.timing.interruptLatencyNs), this.name, 'dma-completed',
        { engine, queue: queue.id, submissionFenceId }, `${actor} DMA completed interrupt`);
    } else if (out.op === L.opWait) {
      this.trace.record('gpu', actor, 'wait passed', { queue: queue.label, hSyncObject: out.handle, value: out.value });
      this.emit({ queue, kind: 'wait-passed', fence: out.fence, handle: out.handle, value: out.value, timeNs: now, observedNs: now });
    } else {
      const interrupt = result === L.stepInterrupt || result === L.stepMonitoredInterrupt;
      const monitored = result === L.stepMonitoredInterrupt;
      if (tracing) {
        this.trace.record('gpu', actor, monitored ? 'fence write' : 'signal', { queue: queue.label, hSyncObject: out.handle, value: out.value });
        if (!monitored) {
          this.trace.record('cmp', actor, interrupt ? 'interrupt raised' : 'no interrupt', {
            value: out.value, monitoredValue: u64(this.core.cpuReadMonitoredValue(out.fence)), rule: interrupt ? 'CurrentValue > MonitoredValue' : 'CurrentValue <= MonitoredValue',
          });
        } else {
          this.trace.record('cmp', actor, 'monitored fence signaled interrupt raised', { value: out.value });
        }
      }
      this.emit({ queue, kind: monitored ? 'fence-write' : 'signal', fence: out.fence, handle: out.handle, value: out.value, timeNs: now, interrupt, previousValue: overwritten });
      if (!monitored) this.doorbell?.afterSignal(engine, out.fence); // XA-07: reads the StepReport's doorbell counts
      if (interrupt) this.raise(engine);
      this.rescanFence(out.fence);
    }
    state.busyUntilNs = nextNs;
    if (this.granularity !== 'command') {
      state.event = this.scheduler.at(nextNs, this.name, 'engine-tick', state.args, state.tickLabel);
      return false;
    }
    state.event = this.scheduler.atOrContinue(nextNs, this.name, 'engine-tick', state.args, state.tickLabel);
    return state.event === undefined;
  }

  // ── stretches: the engine's next commands in one core call ──

  private readonly window = { untilNs: 0, budget: 0, topTimeNs: 0, topTieBreak: 0, topSequence: 0, sequence: 0 };
  private stretchWords?: Uint32Array;
  private stretchNumbers?: Float64Array;

  /**
   * May the engine run `queue`'s next commands as a stretch? Only when nothing needs to see each one:
   * trace off (checked by the caller), default firmware and granularity, no doorbell, the step listeners
   * the reporter's own, no queue blocked on this GPU (a signal would rescan it), no other queue of the
   * engine with work (round-robin), the scheduler letting ticks run in place, and the reporter accepting.
   */
  private stretchable(engine: number, state: EngineState, queue: HwQueueInfo): boolean {
    const reporter = this.stretchReporter;
    if (!reporter || this.granularity !== 'command' || this.doorbell || this.timestamp !== DEFAULT_FIRMWARE.timestamp || this.wrapKeepsCount) return false;
    const listeners = this.stepListeners;
    if (listeners.length > 1 || (listeners.length === 1 && listeners[0] !== reporter.stepListener)) return false;
    if (this.blockedOn.size) for (const set of this.blockedOn.values()) if (set.size) return false;
    const ids = state.queueIds;
    if (ids.length > 1) {
      for (const id of ids) {
        if (id !== queue.id && this.core.queueState(id) === this.layout.queueStateReady && this.core.queuePending(id) > 0) return false;
      }
    }
    if (this.core.queuePending(queue.id) < 2) return false; // one command: the ordinary tick is as cheap
    return this.scheduler.inPlaceWindow(this.window) !== undefined && reporter.accepts(queue);
  }

  /**
   * Runs the stretch in the core (engineRunStretch), which draws each command's time and the
   * scheduler's sequence and tie-break exactly as commandAt + atOrContinue would, then hands the
   * generators, the scheduler and the reporter what it used. 'in-place': the engine's next tick runs
   * now, in place; 'queued': it is queued; 'loud': the command at the scheduler's (new) now needs commandAt.
   */
  private runStretch(engine: number, state: EngineState, queue: HwQueueInfo): 'in-place' | 'queued' | 'loud' {
    const S = this.layout.out.stretch;
    const memory = this.memory.buffer;
    if (this.stretchWords?.buffer !== memory) { this.stretchWords = new Uint32Array(memory); this.stretchNumbers = new Float64Array(memory); }
    const words = this.stretchWords!, numbers = this.stretchNumbers!;
    const base = this.core.outBufferAddress() + S.offset;
    const window = this.window;
    const tieBreaks = this.scheduler.tieBreakRandom;
    numbers[(base + S.nowNs) >> 3] = this.scheduler.nowNs;
    numbers[(base + S.untilNs) >> 3] = window.untilNs;
    numbers[(base + S.topTimeNs) >> 3] = window.topTimeNs;
    numbers[(base + S.topSequence) >> 3] = window.topSequence;
    numbers[(base + S.sequence) >> 3] = window.sequence;
    numbers[(base + S.commandNs) >> 3] = this.timing.commandNs;
    numbers[(base + S.jitterSpan) >> 3] = Math.floor(this.timing.commandNs * this.timing.jitter);
    this.random.saveState(words, (base + S.timingState) >> 2);
    tieBreaks.saveState(words, (base + S.tieState) >> 2);
    words[(base + S.topTieBreak) >> 2] = window.topTieBreak;
    words[(base + S.budget) >> 2] = Math.min(window.budget, 0xffffffff);
    const result = this.core.engineRunStretch(queue.id, 0xffffffff);
    const commands = words[(this.core.outBufferAddress() + this.layout.out.step.steps) >> 2];
    if (result !== this.layout.stepDone || commands === 0) return 'loud';
    this.random.loadState(words, (base + S.timingState) >> 2);
    tieBreaks.loadState(words, (base + S.tieState) >> 2);
    const nowNs = numbers[(base + S.nowNs) >> 3];
    const nextNs = numbers[(base + S.nextNs) >> 3];
    const sequence = numbers[(base + S.sequence) >> 3];
    const stop = words[(base + S.stop) >> 2];
    this.scheduler.tookInPlace(words[(base + S.inPlace) >> 2], sequence, nowNs);
    this.counts.stretches++;
    this.counts.stretchedCommands += commands;
    state.busyUntilNs = nextNs;
    this.stretchReporter!.executed({ queue, commands, fenceCommands: words[(base + S.fenceCommands) >> 2], endNs: nowNs });
    if (stop === S.stopQueued) {
      state.event = this.scheduler.queueDrawn(nextNs, sequence - 1, words[(base + S.nextTieBreak) >> 2], this.name, 'engine-tick', state.args, state.tickLabel);
      return 'queued';
    }
    return stop === S.stopLoud ? 'loud' : 'in-place';
  }

  // ── granularity 'step': a signal, one core step per event ──

  /** Step 1 (engine-tick): the head signal is consumed and its value enters the engine's write buffer. */
  private signalBegin(engine: number, queue: HwQueueInfo): void {
    const state = this.engines[engine];
    const now = this.scheduler.nowNs;
    const actor = `${this.name}/engine${engine}`;
    const result = this.core.engineStepBegin(queue.id, this.timestamp(now));
    if (result < 0) { this.fault(`${actor} executing ${queue.label}`, result, queue); return; }
    if (result !== this.layout.stepSignalWritten) throw new Error(`${actor}: engineStepBegin on a signal returned step ${result}`);
    const out = this.readOut(this.memory.buffer);
    const indexFirst = this.firmwareState.signalLogOrder === 'index-first';
    state.signal = { queue, fence: out.fence, handle: out.handle, value: out.value, phase: indexFirst ? 'log-advance' : 'log-entry', doorbellFallback: false };
    this.trace.record('gpu', actor, 'signal step 1 engineSignalWrite', { queue: queue.label, hSyncObject: out.handle, value: out.value });
    this.nextSignalStep(engine);
  }

  private nextSignalStep(engine: number): void {
    const state = this.engines[engine];
    state.event = this.scheduler.at(this.scheduler.nowNs, this.name, 'engine-step', state.args,
      `${this.name}/engine${engine} ${SIGNAL_PHASE_STEP[state.signal!.phase]}`);
  }

  /** Steps 2-5 (engine-step): the in-flight signal's next core step. */
  private signalStep(engine: number): void {
    const state = this.engines[engine];
    state.event = undefined;
    const signal = state.signal;
    if (this.stopped || !signal) return;
    const now = this.scheduler.nowNs;
    const L = this.layout.log;
    const actor = `${this.name}/engine${engine}`;
    const { queue, fence, value } = signal;
    const step = SIGNAL_PHASE_STEP[signal.phase];
    switch (signal.phase) {
      case 'log-entry': {
        const slot = this.core.logWriteEntry(queue.id, L.typeSignals, signal.handle, value, L.operationSignalExecuted, 0n, this.timestamp(now));
        // A corrupt header (or a queue destroyed meanwhile) drops the entry, and the advance with it (engineStep does the same).
        // Firmware 'index-first' advanced already.
        signal.phase = slot >= 0 && this.firmwareState.signalLogOrder === 'entry-first' ? 'log-advance' : 'drain';
        this.trace.record('gpu', actor, `signal step ${step}`, { queue: queue.label, dropped: slot < 0 });
        break;
      }
      case 'log-advance':
        this.core.logAdvance(queue.id, L.typeSignals);
        if (this.wrapKeepsCount) this.keepWraparound(queue.id, L.typeSignals);
        signal.phase = this.firmwareState.signalLogOrder === 'index-first' ? 'log-entry' : 'drain';
        this.trace.record('gpu', actor, `signal step ${step}`, { queue: queue.label });
        break;
      case 'drain':
        signal.previousValue = this.core.fenceIsLive(fence) ? u64(this.core.cpuReadCurrentValue(fence)) : undefined;
        this.core.engineDrain(engine);
        signal.phase = this.doorbell ? 'doorbell' : 'cmp-check';
        this.trace.record('gpu', actor, `signal step ${step}`, { queue: queue.label, hSyncObject: signal.handle, value });
        break;
      case 'doorbell':
        signal.doorbellFallback = this.core.engineDoorbellPost(engine, fence, value) === 1;
        signal.phase = 'cmp-check';
        this.doorbell?.afterSignal(engine, fence); // XA-07: reads the StepReport's doorbell counts
        break;
      case 'cmp-check': {
        const raised = this.core.cmpSignalCheck(engine, fence, value) === 1;
        state.signal = undefined;
        this.finishSignal(engine, signal, raised || signal.doorbellFallback);
        return;
      }
    }
    this.nextSignalStep(engine);
  }

  /** After step 5: what a whole signal command does after its last step (tick's signal branch). */
  private finishSignal(engine: number, signal: SignalInFlight, interrupt: boolean): void {
    const state = this.engines[engine];
    const now = this.scheduler.nowNs;
    const actor = `${this.name}/engine${engine}`;
    const { queue, fence, handle, value } = signal;
    this.trace.record('gpu', actor, 'signal', { queue: queue.label, hSyncObject: handle, value });
    this.trace.record('cmp', actor, interrupt ? 'interrupt raised' : 'no interrupt', {
      value, monitoredValue: u64(this.core.cpuReadMonitoredValue(fence)), rule: interrupt ? 'CurrentValue > MonitoredValue' : 'CurrentValue <= MonitoredValue',
    });
    this.emit({ queue, kind: 'signal', fence, handle, value, timeNs: now, interrupt, previousValue: signal.previousValue });
    if (interrupt) this.raise(engine);
    this.rescanFence(fence);
    const nextNs = now + this.latency(this.timing.commandNs);
    state.busyUntilNs = nextNs;
    state.event = this.scheduler.at(nextNs, this.name, 'engine-tick', state.args, state.tickLabel);
  }

  /**
   * A whole signal with firmware signalLogOrder 'index-first' (granularity 'command'): the core's
   * steps in one event, the log's index advanced before its entry is written (LOG-04 broken on purpose
   * by the driver that programmed it; the entry lands in the slot after the one the index covers).
   */
  private signalIndexFirst(engine: number, queue: HwQueueInfo): void {
    const now = this.scheduler.nowNs;
    const L = this.layout.log;
    const result = this.core.engineStepBegin(queue.id, this.timestamp(now));
    if (result < 0) { this.fault(`${this.name}/engine${engine} executing ${queue.label}`, result, queue); return; }
    const out = this.readOut(this.memory.buffer);
    const signal: SignalInFlight = { queue, fence: out.fence, handle: out.handle, value: out.value, phase: 'cmp-check', doorbellFallback: false };
    if (this.core.logAdvance(queue.id, L.typeSignals) >= 0) {
      this.core.logWriteEntry(queue.id, L.typeSignals, out.handle, out.value, L.operationSignalExecuted, 0n, this.timestamp(now));
    }
    signal.previousValue = this.core.fenceIsLive(out.fence) ? u64(this.core.cpuReadCurrentValue(out.fence)) : undefined;
    this.core.engineDrain(engine);
    if (this.doorbell) {
      signal.doorbellFallback = this.core.engineDoorbellPost(engine, out.fence, out.value) === 1;
      this.doorbell.afterSignal(engine, out.fence);
    }
    const raised = this.core.cmpSignalCheck(engine, out.fence, out.value) === 1;
    this.finishSignal(engine, signal, raised || signal.doorbellFallback);
  }

  /** The signal an engine is part-way through (granularity 'step'), for explorers and tools. */
  signalInFlight(engine: number): Readonly<SignalInFlight> | undefined { return this.engines[engine]?.signal; }

  /** The queue the engine's next command comes from, without taking it (round-robin order). */
  peekRunnable(engine: number): HwQueueInfo | undefined {
    const state = this.engines[engine];
    const ids = state.queueIds;
    for (let n = 0; n < ids.length; n++) {
      const id = ids[(state.cursor + n) % ids.length];
      if (this.core.queueState(id) === this.layout.queueStateReady && this.core.queuePending(id) > 0) return this.queues.get(id);
    }
    return undefined;
  }

  /** CurrentValue of the fence a queue's head signal is about to overwrite (undefined when the head is no signal). */
  private valueUnderHeadSignal(id: number): bigint | undefined {
    if (this.core.queueHeadOp(id) !== this.layout.opSignal) return undefined;
    const fence = this.core.queueHeadFence(id);
    return this.core.fenceIsLive(fence) ? u64(this.core.cpuReadCurrentValue(fence)) : undefined;
  }

  /** Hardware run-list rescan of queues blocked on one fence (after a signal). */
  rescanFence(fence: number): void {
    const set = this.blockedOn.get(fence);
    if (!set || !set.size) return;
    for (const id of [...set].sort((a, b) => a - b)) this.recheck(id, fence);
  }

  /** The driver's full run-list rescan (UpdateCurrentValuesFromCpu). Returns queues unblocked. */
  rescanAll(): number {
    // On every CPU signal's path, most often with no queue blocked: small enough to compile into its caller.
    return this.blockedOn.size === 0 ? 0 : this.rescanBlocked();
  }

  private rescanBlocked(): number {
    let unblocked = 0;
    const fences = [...this.blockedOn.keys()].sort((a, b) => a - b);
    for (const fence of fences) {
      for (const id of [...this.blockedOn.get(fence)!].sort((a, b) => a - b)) if (this.recheck(id, fence)) unblocked++;
    }
    this.waitsReleasedByCpu += unblocked;
    return unblocked;
  }

  private recheck(id: number, fence: number): boolean {
    const queue = this.queues.get(id);
    if (!queue) return false;
    const result = this.core.queueRecheckAt(id, this.timestamp(this.scheduler.nowNs));
    if (result < 0) { this.fault(`${this.name} rescanning ${queue.label}`, result, queue); return false; }
    if (result !== this.layout.stepUnblocked) return false;
    this.blockedOn.get(fence)?.delete(id);
    const out = this.readOut(this.memory.buffer);
    const now = this.scheduler.nowNs;
    this.trace.record('gpu', `${this.name}/engine${queue.engine}`, 'wait unblocked', { queue: queue.label, hSyncObject: out.handle, value: out.value, observedNs: Number(out.observedNs) });
    this.emit({ queue, kind: 'wait-unblocked', fence: out.fence, handle: out.handle, value: out.value, timeNs: now, observedNs: Number(out.observedNs) });
    this.kick(queue.engine);
    return true;
  }

  /** The CMP raised the interrupt line of `engine`: the ISR runs after the latency. */
  raise(engine: number): void {
    const state = this.engines[engine];
    if (state.isr && !state.isr.cancelled) return; // joins the interrupt already on its way
    // INT-02 fault injection: while delivery is held, the ISR waits for the end of the window.
    const at = Math.max(this.scheduler.nowNs + this.latency(this.timing.interruptLatencyNs), this.interruptsHeldUntilNs);
    this.scheduleIsr(engine, at);
  }

  private scheduleIsr(engine: number, atNs: number): void {
    const state = this.engines[engine];
    state.isr = this.scheduler.at(atNs, this.name, 'interrupt', state.args, `${this.name}/engine${engine} interrupt`);
  }

  // ── INT-02 fault injection: collapsed interrupts (src/machine/faults.ts) ──
  /** Virtual time until which interrupt delivery is held (0: not held). */
  interruptsHeldUntilNs = 0;

  /**
   * Holds every engine's interrupt delivery until `untilNs`: signals raised
   * before then join one interrupt per engine (the core's pending list; past
   * its capacity the payload has no list). An interrupt already on its way is
   * held too. Returns the engines whose interrupt was held back.
   */
  holdInterrupts(untilNs: number): number[] {
    this.interruptsHeldUntilNs = Math.max(this.interruptsHeldUntilNs, untilNs);
    const held: number[] = [];
    for (let engine = 0; engine < this.engineCount; engine++) {
      const isr = this.engines[engine].isr;
      if (!isr || isr.cancelled || isr.timeNs >= this.interruptsHeldUntilNs) continue;
      this.scheduler.cancel(isr);
      this.scheduleIsr(engine, this.interruptsHeldUntilNs);
      held.push(engine);
    }
    return held;
  }

  private fault(what: string, status: number, queue: HwQueueInfo): void {
    let message: string;
    try { check(status, what); message = what; } catch (error) { message = (error as Error).message; }
    this.trace.record('fault', this.name, 'GPU fault', { message });
    this.onFault(message, queue);
  }

  /** Stops every engine (bug check or reset): pending ticks and interrupts are dropped. */
  stop(): void {
    this.stopped = true;
    for (const state of this.engines) {
      this.scheduler.cancel(state.event);
      this.scheduler.cancel(state.isr);
      state.event = undefined;
      state.isr = undefined;
      state.signal = undefined; // a signal part-way through its steps is dropped with the rest of the work
    }
  }

  restart(): void {
    this.stopped = false;
    for (let e = 0; e < this.engineCount; e++) this.kick(e);
  }

  blockedQueues(): number { let n = 0; for (const s of this.blockedOn.values()) n += s.size; return n; }

  private emit(step: StepRecord): void {
    if (this.wrapKeepsCount && step.kind !== 'work' && step.kind !== 'wait-blocked' && step.kind !== 'fence-write' && step.kind !== 'dma-completed') {
      this.keepWraparound(step.queue.id, step.kind === 'signal' ? this.layout.log.typeSignals : this.layout.log.typeWaits);
    }
    for (const l of this.stepListeners) l(step);
  }

  /**
   * Firmware logWraparound 'index-only': the log's WraparoundCount goes back to what the firmware keeps
   * (the count it found there first), whatever the advance wrote: a wrap moves FirstFreeEntryIndex only.
   */
  private keepWraparound(queueId: number, type: number): void {
    const phys = this.core.queueLogBuffer(queueId, type);
    if (phys === 0) return;
    const at = phys + this.layout.log.indexOffset;
    const view = new DataView(this.memory.buffer);
    const word = view.getBigUint64(at, true);
    const kept = this.keptWraparounds.get(phys);
    if (kept === undefined) { this.keptWraparounds.set(phys, Number(word >> 32n)); return; }
    if (Number(word >> 32n) !== kept) view.setBigUint64(at, (word & 0xffff_ffffn) | (BigInt(kept) << 32n), true);
  }

  /**
   * Tools: the engine's next step (its due engine-tick or engine-step), run now, inside whatever is
   * running: check-driver's NF-11 probe (src/check/cmp-order.ts) puts a GPU signal between two of a
   * driver's CMP steps this way. Virtual time does not move. False when the engine has no step due.
   */
  runEngineNow(engine: number): boolean {
    const state = this.engines[engine];
    const event = state?.event;
    if (!event || event.cancelled || this.stopped) return false;
    this.scheduler.cancel(event);
    state.event = undefined;
    this.runEngineEvent(engine, event.kind);
    return true;
  }

  /** Runs the engine's tick or signal step with `running` naming it (kick), then gives `running` back to what ran outside. */
  private runEngineEvent(engine: number, kind: string): void {
    const outer = this.running;
    this.running = engine;
    try { if (kind === 'engine-step') this.signalStep(engine); else this.tick(engine); } finally { this.running = outer; }
  }
}
