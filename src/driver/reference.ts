// The reference kernel-mode driver: a correct implementation of every DDI in
// ddi.ts over the simulated GPU (src/gpu/hardware.ts) and the core.
//
// Options let a test make it misbehave in one documented way at a time
// (skip the feature query, leave the CMP barrier out, drop interrupt lists),
// which is how the OS's checks and the NF-11 loss are shown.

import { readLogLayout, type CoreExports, type NativeFenceLogLayout } from '../core.js';
import { check, WddmError } from '../errors.js';
import type { GpuHardware } from '../gpu/hardware.js';
import { DXGK_FEATURE_NATIVE_FENCE, DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED, KERNEL_VA_BASE, VIDSCHCAPS, hex } from '../wddm.js';
import type {
  DXGKARG_CREATECONTEXT, DXGKARG_DESTROYCONTEXT, DXGKARG_SUBMITCOMMAND,
  DXGKARG_CLOSENATIVEFENCE, DXGKARG_CREATEHWQUEUE, DXGKARG_CREATENATIVEFENCE, DXGKARG_DESTROYHWQUEUE,
  DXGKARG_DESTROYNATIVEFENCE, DXGKARG_OPENNATIVEFENCE, DXGKARG_UPDATECURRENTVALUESFROMCPU,
  DXGKARG_UPDATEMONITOREDVALUES, DXGKARG_SETNATIVEFENCELOGBUFFER, DXGKARG_UPDATENATIVEFENCELOGS, DriverStartResult, DxgkrnlCallbacks, KernelModeDriver, NativeFenceCaps,
  NativeFenceOsCaps, UserModeCommand,
} from './ddi.js';

export interface ReferenceDriverOptions {
  /** What the hardware can do: these bits are advertised only where the OS allows. */
  hardwareCaps: number;
  nativeFenceCaps: NativeFenceCaps;
  /** 'list': interrupts carry the signalled fences with waiters; 'noList': always NULL (scan everything). */
  interruptPayload: 'list' | 'noList';
  /** Set EvaluateLegacyMonitoredFences on every no-list interrupt. */
  evaluateLegacyMonitoredFences: boolean;
  /** Correct drivers ask the OS first (CAP-02). false = advertise NativeGpuFence without asking. */
  queryFeatureBeforeAdvertising: boolean;
  /** Correct drivers put the barrier between writing MonitoredValue and reading CurrentValue (NF-11). */
  monitoredValueBarrier: boolean;
  /** Ring size of every hardware queue (the core's ringEntries). */
  ringEntries: number;
  /** The engines can write a monitored fence through its GPU VA (else: software signal packets). Default true. */
  enginesWriteMonitoredFences?: boolean;
}

interface DriverFence { hGlobal: number; coreFence: number; locals: Set<number> }

export class ReferenceDriver implements KernelModeDriver {
  private os?: DxgkrnlCallbacks;
  private osCaps?: NativeFenceOsCaps;
  private nativeFenceEnabled = false;
  private nextGlobal = 0x1000;
  private nextLocal = 0x2000;
  private nextQueue = 0x3000;
  private readonly fences = new Map<number, DriverFence>();
  private readonly locals = new Map<number, DriverFence>();
  private readonly queues = new Map<number, number>(); // hHwQueue → core queue id
  private nextContext = 0x4000;
  private readonly contexts = new Map<number, number>(); // hContext → core queue id (its DMA ring)
  private readonly contextOfQueue = new Map<number, number>(); // core queue id → hContext
  private readonly submitted = new Map<number, number>(); // SubmissionFenceId on an engine → hContext
  /** Per engine: a monitored fence write raised the pending interrupt. */
  private readonly monitoredRaised: boolean[] = [];
  private readonly queueHandles = new Map<number, number>(); // core queue id → hHwQueue
  private optimizedInterrupt = false;
  private logLayout?: NativeFenceLogLayout;
  /** Negotiation record, for the trace and tests. */
  readonly negotiation: string[] = [];

  constructor(readonly hardware: GpuHardware, readonly core: CoreExports, readonly options: ReferenceDriverOptions) {
    hardware.onInterrupt = (engine) => this.interruptServiceRoutine(engine);
    hardware.onDmaCompleted = (engine, queueId, submissionFenceId) => this.dmaCompletedServiceRoutine(engine, queueId, submissionFenceId);
    hardware.stepListeners.push((step) => { if (step.kind === 'fence-write') this.monitoredRaised[step.queue.engine] = true; });
  }

  startDevice(os: DxgkrnlCallbacks): DriverStartResult {
    this.os = os;
    let caps = this.options.hardwareCaps & ~VIDSCHCAPS.NativeGpuFence & ~VIDSCHCAPS.OptimizedNativeFenceSignaledInterrupt;
    const hardwareNative = (this.options.hardwareCaps & VIDSCHCAPS.NativeGpuFence) !== 0;
    if (hardwareNative && this.options.queryFeatureBeforeAdvertising) {
      // The documented sequence: IsFeatureEnabled → QueryFeatureInterface → GetOSCaps.
      const result = os.IsFeatureEnabled(DXGK_FEATURE_NATIVE_FENCE);
      this.negotiation.push(`IsFeatureEnabled(DXGK_FEATURE_NATIVE_FENCE) → Enabled=${result.Enabled} Version=${result.Version}`);
      if (result.Enabled) {
        const table = os.QueryFeatureInterface(DXGK_FEATURE_NATIVE_FENCE, result.Version);
        this.negotiation.push(`QueryFeatureInterface(DXGK_FEATURE_NATIVE_FENCE, ${result.Version}) → ${table ? 'DXGKCBINT_FEATURE_NATIVEFENCE_1' : 'failed'}`);
        if (table) {
          this.osCaps = table.GetOSCaps();
          this.negotiation.push(`GetOSCaps → SupportOptimizedDefaultFenceType=${this.osCaps.SupportOptimizedDefaultFenceType} SupportIntraGpuFenceType=${this.osCaps.SupportIntraGpuFenceType}`);
          this.nativeFenceEnabled = true;
        }
      }
    } else if (hardwareNative) {
      this.negotiation.push('advertising NativeGpuFence without asking the OS (queryFeatureBeforeAdvertising: false)');
      this.nativeFenceEnabled = true;
    }
    if (this.nativeFenceEnabled) {
      caps |= VIDSCHCAPS.NativeGpuFence;
      caps |= this.options.hardwareCaps & VIDSCHCAPS.OptimizedNativeFenceSignaledInterrupt;
      this.optimizedInterrupt = (caps & VIDSCHCAPS.OptimizedNativeFenceSignaledInterrupt) !== 0;
    }
    return { VidSchCaps: caps, NativeFenceCaps: this.queryNativeFenceCaps(), EnginesWriteMonitoredFences: this.options.enginesWriteMonitoredFences ?? true };
  }

  queryNativeFenceCaps(): NativeFenceCaps { return { ...this.options.nativeFenceCaps }; }

  createNativeFence(args: DXGKARG_CREATENATIVEFENCE): { hGlobalNativeFence: number } {
    const hGlobal = this.nextGlobal++;
    check(this.core.fenceSetDriverHandle(args.CoreFence, hGlobal), 'DxgkDdiCreateNativeFence');
    this.fences.set(hGlobal, { hGlobal, coreFence: args.CoreFence, locals: new Set() });
    return { hGlobalNativeFence: hGlobal };
  }

  openNativeFence(args: DXGKARG_OPENNATIVEFENCE): { hLocalNativeFence: number } {
    const fence = this.fences.get(args.hGlobalNativeFence);
    if (!fence) throw new Error(`DxgkDdiOpenNativeFence: unknown hGlobalNativeFence 0x${args.hGlobalNativeFence.toString(16)}`);
    const hLocal = this.nextLocal++;
    fence.locals.add(hLocal);
    this.locals.set(hLocal, fence);
    return { hLocalNativeFence: hLocal };
  }

  closeNativeFence(args: DXGKARG_CLOSENATIVEFENCE): void {
    const fence = this.locals.get(args.hLocalNativeFence);
    if (!fence) throw new Error(`DxgkDdiCloseNativeFence: unknown hLocalNativeFence 0x${args.hLocalNativeFence.toString(16)}`);
    fence.locals.delete(args.hLocalNativeFence);
    this.locals.delete(args.hLocalNativeFence);
  }

  destroyNativeFence(args: DXGKARG_DESTROYNATIVEFENCE): void {
    const fence = this.fences.get(args.hGlobalNativeFence);
    if (!fence) throw new Error(`DxgkDdiDestroyNativeFence: unknown hGlobalNativeFence 0x${args.hGlobalNativeFence.toString(16)}`);
    if (fence.locals.size) throw new Error(`DxgkDdiDestroyNativeFence: 0x${fence.hGlobal.toString(16)} still has ${fence.locals.size} open local handle(s)`);
    this.fences.delete(args.hGlobalNativeFence);
  }

  updateCurrentValuesFromCpu(args: DXGKARG_UPDATECURRENTVALUESFROMCPU): void {
    if (!args.Flags.NotificationOnly) {
      for (let i = 0; i < args.NumFences; i++) {
        const fence = this.fence(args.NativeFenceArray[i], 'DxgkDdiUpdateCurrentValuesFromCpu');
        check(this.core.cpuWriteCurrentValue(fence.coreFence, args.UpdatedValueArray[i]), 'DxgkDdiUpdateCurrentValuesFromCpu');
      }
    }
    // Rescan the run list: hardware queues waiting on these fences may run now.
    this.hardware.rescanAll();
  }

  /**
   * The CMP's order for each fence (NF-11): write the shadow MonitoredValue,
   * memory barrier, read CurrentValue, interrupt if CurrentValue >
   * MonitoredValue: the core's four steps, called one by one. Without the
   * barrier (monitoredValueBarrier: false) a signal still in an engine's write
   * buffer is missed and the wakeup can be lost.
   */
  updateMonitoredValues(args: DXGKARG_UPDATEMONITOREDVALUES): void {
    const ddi = 'DxgkDdiUpdateMonitoredValues';
    for (let i = 0; i < args.NumFences; i++) {
      const fence = this.fence(args.NativeFenceArray[i], ddi);
      check(this.core.cmpWriteMonitoredValue(fence.coreFence, args.UpdatedValueArray[i]), ddi);
      if (this.options.monitoredValueBarrier) this.core.cmpBarrier();
      const current = this.core.cmpReadCurrentValue(fence.coreFence);
      if (check(this.core.cmpMonitoredValueCheck(0, fence.coreFence, current), ddi) === 1) this.hardware.raise(0);
    }
  }

  createHwQueue(args: DXGKARG_CREATEHWQUEUE): { hHwQueue: number; coreQueue: number } {
    const id = check(this.core.queueCreate(args.EngineOrdinal, args.ProcessSlot), 'DxgkDdiCreateHwQueue');
    const hHwQueue = this.nextQueue++;
    this.queues.set(hHwQueue, id);
    this.queueHandles.set(id, hHwQueue);
    this.hardware.addQueue({ id, engine: args.EngineOrdinal, handle: hHwQueue, label: args.DebugName });
    return { hHwQueue, coreQueue: id };
  }

  destroyHwQueue(args: DXGKARG_DESTROYHWQUEUE): void {
    const id = this.queues.get(args.hHwQueue);
    if (id === undefined) throw new Error(`DxgkDdiDestroyHwQueue: unknown hHwQueue 0x${args.hHwQueue.toString(16)}`);
    this.hardware.removeQueue(id);
    check(this.core.queueDestroy(id), 'DxgkDdiDestroyHwQueue');
    this.queues.delete(args.hHwQueue);
    this.queueHandles.delete(id);
  }

  setNativeFenceLogBuffer(args: DXGKARG_SETNATIVEFENCELOGBUFFER): void {
    const id = this.queues.get(args.hHwQueue);
    if (id === undefined) throw new Error(`DxgkDdiSetNativeFenceLogBuffer: unknown hHwQueue ${hex(args.hHwQueue)}`);
    const L = (this.logLayout ??= readLogLayout(this.core));
    const phys = Number(args.LogBufferCpuVa - KERNEL_VA_BASE);
    if (args.NumberOfEntries < 1 || args.NumberOfEntries > L.entries) {
      throw new Error(`DxgkDdiSetNativeFenceLogBuffer: NumberOfEntries ${args.NumberOfEntries} does not fit a 4 KiB buffer (1..${L.entries})`);
    }
    // The header says which log this is (DXGK_NATIVE_FENCE_LOG_TYPE).
    const type = new DataView(this.hardware.memory.buffer).getUint32(phys + L.typeOffset, true);
    check(this.core.queueSetLogBuffer(id, type, phys), 'DxgkDdiSetNativeFenceLogBuffer');
  }

  updateNativeFenceLogs(args: DXGKARG_UPDATENATIVEFENCELOGS): void {
    for (let i = 0; i < args.NumberOfQueues; i++) {
      const id = this.queues.get(args.hHWQueueArray[i]);
      if (id === undefined) throw new Error(`DxgkDdiUpdateNativeFenceLogs: unknown hHWQueue ${hex(args.hHWQueueArray[i])}`);
      // The memory barrier on that queue: its pending log entry write reaches memory.
      check(this.core.logFlush(id), 'DxgkDdiUpdateNativeFenceLogs');
    }
  }

  /** Core queue id behind a driver queue handle. */
  coreQueue(hHwQueue: number): number | undefined { return this.queues.get(hHwQueue); }

  writeUserModeCommands(hHwQueue: number, commands: UserModeCommand[]): void {
    const id = this.queues.get(hHwQueue);
    if (id === undefined) throw new Error(`UMD submit: unknown hHwQueue 0x${hHwQueue.toString(16)}`);
    const room = this.options.ringEntries - this.core.queuePending(id);
    if (commands.length > room) {
      throw new WddmError('INSUFFICIENT_RESOURCES', `hardware queue ring has room for ${room} more command(s), the submission has ${commands.length}; let the GPU drain it (machine.run) or raise limits.ringEntries`,
        { parameter: 'commands', value: commands.length, expected: `at most ${room} commands` });
    }
    const L = this.hardware.layout;
    for (const c of commands) {
      const op = c.op === 'wait' ? L.opWait : c.op === 'signal' ? L.opSignal : L.opWork;
      check(this.core.queuePush(id, op, c.coreFence, c.value, c.gpuVa, c.handle), 'UMD ring write');
    }
    this.hardware.kick(this.core.queueEngine(id));
  }

  resetEngines(): void {
    this.hardware.stop();
    for (const [hHwQueue, id] of [...this.queues]) {
      this.hardware.removeQueue(id);
      this.core.queueDestroy(id);
      this.queues.delete(hHwQueue);
      this.queueHandles.delete(id);
    }
    for (const hContext of [...this.contexts.keys()]) this.destroyContext({ hContext });
    this.hardware.restart();
  }

  // ── kernel-mode contexts: each gets a ring the OS fills through SubmitCommand ──

  createContext(args: DXGKARG_CREATECONTEXT): { hContext: number } {
    const id = check(this.core.queueCreate(args.NodeOrdinal, args.ProcessSlot), 'DxgkDdiCreateContext');
    const hContext = this.nextContext++;
    this.contexts.set(hContext, id);
    this.contextOfQueue.set(id, hContext);
    this.hardware.addQueue({ id, engine: args.NodeOrdinal, handle: hContext, label: `context 0x${hContext.toString(16)}` });
    return { hContext };
  }

  destroyContext(args: DXGKARG_DESTROYCONTEXT): void {
    const id = this.contexts.get(args.hContext);
    if (id === undefined) throw new Error(`DxgkDdiDestroyContext: unknown hContext 0x${args.hContext.toString(16)}`);
    this.hardware.removeQueue(id);
    check(this.core.queueDestroy(id), 'DxgkDdiDestroyContext');
    this.contexts.delete(args.hContext);
    this.contextOfQueue.delete(id);
    for (const [fenceId, hContext] of [...this.submitted]) if (hContext === args.hContext) this.submitted.delete(fenceId);
  }

  /** Writes the command buffer and its completion marker (a NOP carrying SubmissionFenceId) to the context's ring. */
  submitCommand(args: DXGKARG_SUBMITCOMMAND): boolean {
    const id = this.contexts.get(args.hContext);
    if (id === undefined) throw new Error(`DxgkDdiSubmitCommand: unknown hContext 0x${args.hContext.toString(16)}`);
    if (this.core.queuePending(id) + args.Commands.length + 1 > this.options.ringEntries) return false;
    const L = this.hardware.layout;
    const writable = this.options.enginesWriteMonitoredFences ?? true;
    for (const c of args.Commands) {
      if (c.op === 'fenceWrite' && !writable) throw new Error('DxgkDdiSubmitCommand: a fence-write command on an engine that cannot write monitored fences');
      const op = c.op === 'work' ? L.opWork : L.opFenceWrite;
      check(this.core.queuePush(id, op, c.coreFence, c.value, c.gpuVa, c.handle), 'DxgkDdiSubmitCommand');
    }
    check(this.core.queuePush(id, L.opNop, 0, BigInt(args.SubmissionFenceId), 0n, 0), 'DxgkDdiSubmitCommand');
    this.submitted.set(args.SubmissionFenceId, args.hContext);
    this.hardware.kick(this.core.queueEngine(id));
    return true;
  }

  /** The DMA completed interrupt: one per command buffer, naming its SubmissionFenceId. */
  private dmaCompletedServiceRoutine(engine: number, queueId: number, submissionFenceId: number): void {
    // Only buffers still on the engine: a context destroyed (or reset) meanwhile dropped its own.
    const hContext = this.submitted.get(submissionFenceId);
    if (!this.os || hContext === undefined || hContext !== this.contextOfQueue.get(queueId)) return;
    this.submitted.delete(submissionFenceId);
    this.os.NotifyDmaCompleted({ InterruptType: 'DXGK_INTERRUPT_DMA_COMPLETED', NodeOrdinal: engine, EngineOrdinal: 0, SubmissionFenceId: submissionFenceId });
  }

  /** The ISR: take the engine's interrupt payload and notify the OS. */
  private interruptServiceRoutine(engine: number): void {
    // INT-05: with the optimized cap the payload names the running queue (or none) instead of a list.
    const queue = this.core.engineInterruptQueue(engine);
    const count = this.core.engineTakeInterrupt(engine);
    if (count === -2 || !this.os) return;
    const monitored = this.monitoredRaised[engine] === true;
    this.monitoredRaised[engine] = false;
    const raw: number[] = [];
    if (count > 0) {
      const view = new DataView(this.hardware.memory.buffer);
      const base = this.core.outBufferAddress();
      const bytes = this.hardware.layout.out.interruptHandleBytes;
      for (let i = 0; i < count; i++) raw.push(view.getUint32(base + i * bytes, true));
    }
    if (monitored) {
      // A monitored fence write: its own interrupt, which names no fence (the OS scans).
      this.os.NotifyMonitoredFenceSignaled({ InterruptType: 'DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED', NodeOrdinal: engine, EngineOrdinal: 0 });
      // Monitored fences carry driver handle 0 in the engine's list; with nothing else raised, no native interrupt.
      if (count >= 0 && raw.every((h) => h === 0)) return;
    }
    if (this.optimizedInterrupt) {
      // A queue id that is no hardware queue of ours (a kernel-mode context's ring) names none.
      this.os.NotifyInterrupt({
        InterruptType: DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED, NodeOrdinal: engine, EngineOrdinal: 0,
        SignaledNativeFenceCount: 0, pSignaledNativeFenceArray: null,
        hHWQueue: queue ? this.queueHandles.get(queue) ?? 0 : 0,
        Flags: { EvaluateLegacyMonitoredFences: false },
      });
      return;
    }
    let list: number[] | null = null;
    if (count >= 0 && this.options.interruptPayload === 'list') {
      // A correct driver never reports a fence it has been told to destroy.
      list = raw.filter((h) => this.fences.has(h));
    }
    this.os.NotifyInterrupt({
      InterruptType: DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED,
      NodeOrdinal: engine,
      EngineOrdinal: 0,
      SignaledNativeFenceCount: list ? list.length : 0,
      pSignaledNativeFenceArray: list,
      hHWQueue: 0,
      Flags: { EvaluateLegacyMonitoredFences: list === null && this.options.evaluateLegacyMonitoredFences },
    });
  }

  private fence(hGlobal: number, ddi: string): DriverFence {
    const fence = this.fences.get(hGlobal);
    if (!fence) throw new Error(`${ddi}: unknown hGlobalNativeFence 0x${hGlobal.toString(16)}`);
    return fence;
  }
}
