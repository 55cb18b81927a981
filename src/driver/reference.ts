// The reference driver module: a correct implementation of every DDI in
// ddi.ts over the simulated GPU (src/gpu/hardware.ts) and the core's GPU view.
//
//   ReferenceDriver (kernel mode)   the DDIs the OS calls through the driver port;
//                                   owns the GPU: queues, contexts, the ISR, faults,
//                                   the doorbell registrations, GPU progress reports
//   ReferenceUserModeDriver         the runtime's half: writes a hardware queue's ring
//                                   and rings its doorbell (user-mode submission)
//
// The driver is told where things are, never the core's ids: a fence by its
// CurrentValue address (DxgkDdiCreateNativeFence's kernel CPU VA, a command's
// GPU VA), and it finds its core record from that (fenceAtCurrentValue); its
// own handles (hGlobalNativeFence, hHwQueue, hContext) name everything after.
//
// Options let a test make it misbehave in one documented way at a time
// (skip the feature query, leave the CMP barrier out, drop interrupt lists),
// which is how the OS's checks and the NF-11 loss are shown.
//
// Why this file is long: it is one driver module, every DDI of ddi.ts over one
// set of records (queues, contexts, fences by handle) that the kernel-mode half,
// its ISR, its progress reports (per command and per stretch) and the user-mode
// half's ring writes all read; split, each part would reach into the others.

import type { CoreLayout, GpuCore } from '../core/bindings.js';
import { CMP_ORDER, CMP_ORDER_WITHOUT_BARRIER, MonitoredValueUpdateSteps, cmpStep, type CmpStep } from './cmp-steps.js';
import { columnsCommandCount } from './columns.js';
import { check, WddmError } from '../base/errors.js';
import { IntMap } from '../base/int-map.js';
import { grownTo } from '../base/grow.js';
import type { GpuHardware, HwQueueInfo, StepRecord, StretchReport } from '../gpu/hardware.js';
import { DXGK_FEATURE_NATIVE_FENCE, DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED, KERNEL_VA_BASE, VIDSCHCAPS, hex } from '../base/wddm.js';
import {
  HWQUEUE_PRIVATE_DRIVER_DATA_BYTES,
  type DXGKARG_CREATECONTEXT, type DXGKARG_DESTROYCONTEXT, type DXGKARG_SUBMITCOMMAND,
  type DXGKARG_CLOSENATIVEFENCE, type DXGKARG_CREATEHWQUEUE, type DXGKARG_CREATENATIVEFENCE, type DXGKARG_DESTROYHWQUEUE,
  type DXGKARG_DESTROYNATIVEFENCE, type DXGKARG_OPENNATIVEFENCE, type DXGKARG_UPDATECURRENTVALUESFROMCPU,
  type DXGKARG_UPDATEMONITOREDVALUES, type DXGKARG_SETNATIVEFENCELOGBUFFER, type DXGKARG_UPDATENATIVEFENCELOGS, type DriverStartResult,
  type DxgkrnlCallbacks, type KernelModeDriver, type KernelModeDriverCpuSignal, type NativeFenceCaps, type NativeFenceOsCaps, type GpuProgressOperation,
  type UMDARG_SUBMITTOHWQUEUE, type UMDARG_SUBMITCOLUMNSTOHWQUEUE, type UserModeDriverColumns, type UserModeDriverInterface, UMD_OP_SIGNAL, UMD_OP_WAIT,
} from '../ddi/ddi.js';

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

/** A hardware queue or context: its core queue (ring), the process whose GPU VA space it runs in (frozen: fixed for its life). */
interface DriverQueue { readonly handle: number; readonly coreQueue: number; readonly processSlot: number; readonly engine: number; readonly kind: 'HW_QUEUE' | 'CONTEXT' }

/**
 * hGlobalNativeFence = GLOBAL_HANDLE_BASE + generation (4 bits) × 2^24 + core fence id; a fence's first
 * hLocalNativeFence is the same value moved to LOCAL_HANDLE_BASE, later ones count up from 0x2000.
 */
const GLOBAL_HANDLE_BASE = 0x1000_0000, LOCAL_HANDLE_BASE = 0x2000_0000, FENCE_ID_MASK = 0xff_ffff;
/**
 * writeCurrentValue's cache, under a symbol: the race explorer's state key and snapshots walk a machine's objects by
 * their string keys (Object.keys), and a cache is no state; each use checks it against linear memory as it is.
 */
const LAST_RECORD = Symbol('writeCurrentValue.lastRecord');

/** 'WDQ1': the first word of a hardware queue's private driver data (then its hHwQueue). */
const QUEUE_DATA_MAGIC = 0x3151_4457;
const littleEndian32 = (bytes: Uint8Array, at: number): number => (bytes[at] | bytes[at + 1] << 8 | bytes[at + 2] << 16 | bytes[at + 3] << 24) >>> 0;

/** Commands the UMD stages in the out buffer per queuePushStaged call (64 × 32 B: the machine's out buffer holds 128). */
const STAGED_COMMANDS = 64;

const PROGRESS_OPERATION: Record<StepRecord['kind'], GpuProgressOperation> = {
  'wait-passed': 'WAIT_PASSED', 'wait-blocked': 'WAIT_BLOCKED', 'wait-unblocked': 'WAIT_UNBLOCKED', signal: 'SIGNAL',
  work: 'WORK', 'fence-write': 'FENCE_WRITE', 'dma-completed': 'BUFFER_COMPLETED',
};

export class ReferenceDriver implements KernelModeDriver, KernelModeDriverCpuSignal {
  private os?: DxgkrnlCallbacks;
  private osCaps?: NativeFenceOsCaps;
  private nativeFenceEnabled = false;
  /** Bits 24–27 of the next hGlobalNativeFence (a stale handle of a reused core id differs from the new one's). */
  private generation = 0;
  private nextLocal = 0x2000;
  private nextQueue = 0x3000;
  /**
   * hLocalNativeFence → its hGlobalNativeFence for a fence's second and later opens (a shared fence opened by
   * several processes); the first open's handle is derived from the global one (no entry per fence).
   */
  private readonly locals = new IntMap();
  /** Per core fence id (grown by doubling; the core bounds the ids by its fence limit): 1 while the derived local handle is out. */
  private primaryOpen = new Uint8Array(64);
  /** Core fence id → its other open local handles (those in `locals`), for the few fences that have any. */
  private readonly otherOpens = new Map<number, number>();
  private readonly queues = new Map<number, DriverQueue>(); // hHwQueue → queue
  private nextContext = 0x4000;
  private readonly contexts = new Map<number, DriverQueue>(); // hContext → its DMA ring
  private readonly byCoreQueue = new Map<number, DriverQueue>(); // core queue id → hardware queue or context
  private readonly submitted = new Map<number, number>(); // SubmissionFenceId on an engine → hContext
  /** Per engine: a monitored fence write raised the pending interrupt. */
  private readonly monitoredRaised: boolean[] = [];
  private optimizedInterrupt = false;
  /** DxgkDdiStopDevice: the adapter is stopped for good; nothing is reported any more. */
  private stopped = false;
  /** Linear memory as bytes, u32 and u64 words, and this adapter's base address (makeViews). */
  private bytes?: Uint8Array;
  private words?: Uint32Array;
  private values?: BigUint64Array;
  private adapterBase = 0;
  private sharedMemory = false;
  /**
   * What recordOf reads, from the layout the core exports, kept as numbers of this object (makeViews): the u32 word
   * indices of the adapter's fence table address and capacity, a record's size, and its fields' offsets.
   */
  private fenceTableWord = 0;
  private fenceCapacityWord = 0;
  private fenceRecordBytes = 0;
  private fenceStateOffset = 0;
  private fenceStateLive = 0;
  private fenceHandleOffset = 0;
  private fenceCurrentValueOffset = 0;
  /** writeCurrentValue's last fence: `handle`'s record (recordOf), checked live and that handle's again at each use. */
  private readonly [LAST_RECORD] = { handle: 0, record: 0 };
  private readonly layout: CoreLayout;
  /** Negotiation record, for the trace and tests. */
  readonly negotiation: string[] = [];
  /** The user-mode half of this driver module (the runtime calls it). */
  readonly userMode: ReferenceUserModeDriver;

  constructor(readonly hardware: GpuHardware, readonly core: GpuCore, readonly options: ReferenceDriverOptions) {
    this.layout = hardware.layout;
    hardware.onInterrupt = (engine) => this.interruptServiceRoutine(engine);
    hardware.onDmaCompleted = (engine, queueId, submissionFenceId) => this.dmaCompletedServiceRoutine(engine, queueId, submissionFenceId);
    hardware.onFault = (message, queue) => this.faultServiceRoutine(message, queue);
    const stepListener = (step: StepRecord) => this.reportProgress(step);
    hardware.stepListeners.push(stepListener);
    // Stretches of quiet commands are reported by count, when the OS takes them (QueryGpuProgressStretch).
    hardware.stretchReporter = Object.freeze({ stepListener, accepts: (queue: HwQueueInfo) => this.acceptsStretch(queue), executed: (stretch: StretchReport) => this.reportStretch(stretch) });
    if (hardware.doorbell) {
      hardware.doorbell.onFallback = (engine, coreFence, posted, full) => {
        // The core keeps each fence's hGlobalNativeFence (fenceSetDriverHandle at create): no map of our own.
        const hGlobal = this.core.fenceIsLive(coreFence) ? this.core.fenceDriverHandle(coreFence) : 0;
        if (this.os && !this.stopped && this.fenceOf(hGlobal) >= 0) this.os.NotifyDoorbellFallback({ NodeOrdinal: engine, hGlobalNativeFence: hGlobal, RecordsPosted: posted, RingsFull: full });
      };
    }
    this.userMode = new ReferenceUserModeDriver(this);
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
    // The OS allocated the storage; the driver finds the fence's record by where CurrentValue is.
    const cvPhys = Number(args.CurrentValueKernelCpuVa - KERNEL_VA_BASE);
    const coreFence = this.core.fenceAtCurrentValue(cvPhys);
    if (coreFence <= 0) throw new Error(`DxgkDdiCreateNativeFence: no fence storage at CurrentValueKernelCpuVa ${hex(args.CurrentValueKernelCpuVa)}`);
    if (coreFence > FENCE_ID_MASK) throw new Error(`DxgkDdiCreateNativeFence: core fence id ${coreFence} does not fit the handle's 24 bits`);
    // The handle names the core id (the core keeps the handle, so it is checked against it): no table of our own.
    const hGlobal = GLOBAL_HANDLE_BASE + (this.generation++ & 0xf) * 0x100_0000 + coreFence;
    check(this.core.fenceSetDriverHandle(coreFence, hGlobal), 'DxgkDdiCreateNativeFence');
    this.primaryOpen = grownTo(this.primaryOpen, coreFence + 1);
    this.primaryOpen[coreFence] = 0;
    this.otherOpens.delete(coreFence);
    // XA-07: this adapter's doorbell scheduler learns which local fence a shared CurrentValue word is.
    this.hardware.doorbell?.register(cvPhys, coreFence);
    return { hGlobalNativeFence: hGlobal };
  }

  openNativeFence(args: DXGKARG_OPENNATIVEFENCE): { hLocalNativeFence: number } {
    const coreFence = this.fence(args.hGlobalNativeFence, 'DxgkDdiOpenNativeFence');
    let hLocal: number;
    if (this.primaryOpen[coreFence] === 0) {
      hLocal = args.hGlobalNativeFence - GLOBAL_HANDLE_BASE + LOCAL_HANDLE_BASE;
      this.primaryOpen[coreFence] = 1;
    } else {
      hLocal = this.nextLocal++;
      this.locals.set(hLocal, args.hGlobalNativeFence);
      this.otherOpens.set(coreFence, (this.otherOpens.get(coreFence) ?? 0) + 1);
    }
    return { hLocalNativeFence: hLocal };
  }

  closeNativeFence(args: DXGKARG_CLOSENATIVEFENCE): void {
    const hLocal = args.hLocalNativeFence;
    const derived = Number.isInteger(hLocal) && hLocal >= LOCAL_HANDLE_BASE && hLocal < LOCAL_HANDLE_BASE + 0x1000_0000;
    const hGlobal = derived ? hLocal - LOCAL_HANDLE_BASE + GLOBAL_HANDLE_BASE : this.locals.get(hLocal);
    const coreFence = hGlobal === undefined ? -1 : this.fenceOf(hGlobal);
    if (coreFence < 0 || (derived && this.primaryOpen[coreFence] === 0)) {
      throw new Error(`DxgkDdiCloseNativeFence: unknown hLocalNativeFence 0x${hLocal.toString(16)}`);
    }
    if (derived) { this.primaryOpen[coreFence] = 0; return; }
    this.locals.delete(hLocal);
    const others = this.otherOpens.get(coreFence)! - 1;
    if (others > 0) this.otherOpens.set(coreFence, others); else this.otherOpens.delete(coreFence);
  }

  destroyNativeFence(args: DXGKARG_DESTROYNATIVEFENCE): void {
    const coreFence = this.fence(args.hGlobalNativeFence, 'DxgkDdiDestroyNativeFence');
    const open = this.primaryOpen[coreFence] + (this.otherOpens.get(coreFence) ?? 0);
    if (open) throw new Error(`DxgkDdiDestroyNativeFence: 0x${args.hGlobalNativeFence.toString(16)} still has ${open} open local handle(s)`);
    // Forgotten: interrupt lists the core still builds name handle 0 until the storage is freed (dropped below).
    check(this.core.fenceSetDriverHandle(coreFence, 0), 'DxgkDdiDestroyNativeFence');
    // The storage is freed after this DDI returns: where CurrentValue is, is still the core's to say.
    if (this.hardware.doorbell) this.hardware.doorbell.unregister(this.core.fenceCurrentValueAddress(coreFence));
  }

  updateCurrentValuesFromCpu(args: DXGKARG_UPDATECURRENTVALUESFROMCPU): void {
    if (!args.Flags.NotificationOnly) {
      // Every CPU signal's DDI: each handle checked and each value written through views of linear memory (the
      // fence record's fields, and cpuWriteCurrentValue's one aligned 64-bit atomic store), no core call.
      for (let i = 0; i < args.NumFences; i++) this.writeCurrentValue(args.NativeFenceArray[i], args.UpdatedValueArray[i]);
    }
    // Rescan the run list: hardware queues waiting on these fences may run now.
    this.hardware.rescanAll();
  }

  /**
   * The one-fence form of DxgkDdiUpdateCurrentValuesFromCpu (KernelModeDriverCpuSignal; the OS uses it for every CPU
   * signal of one fence with no flag): what updateCurrentValuesFromCpu does for NumFences 1 and no flag.
   * The fence is found by its handle, as there; its kernel VA is not needed.
   */
  updateOneCurrentValueFromCpu(hGlobalNativeFence: number, updatedValue: bigint, _currentValueKernelCpuVa: bigint): void {
    this.writeCurrentValue(hGlobalNativeFence, updatedValue);
    this.hardware.rescanAll();
  }

  /** Checks hGlobal (a live fence of this driver) and writes CurrentValue through a view of linear memory (cpuWriteCurrentValue's store), no core call. */
  private writeCurrentValue(hGlobal: number, value: bigint): void {
    // The handle's record: where the last one was found when it is the same handle (a handle's record is where its id
    // says, in a fence table made once), then recordOf's own last check, live and this handle's, made again each time.
    const last = this[LAST_RECORD];
    let record = hGlobal === last.handle ? last.record : 0;
    if (record === 0 || !this.holds(record, hGlobal)) {
      record = this.recordOf(hGlobal); // makes the views at first use
      if (record === 0) this.fence(hGlobal, 'DxgkDdiUpdateCurrentValuesFromCpu'); // throws the unknown handle's error
      last.handle = hGlobal;
      last.record = record;
    }
    const at = this.words![(record + this.fenceCurrentValueOffset) >>> 2] >>> 3;
    // Shared memory (worker mode) may have readers on other threads: an atomic store, as the core's. Otherwise no
    // one else can see the word mid-store, and a plain store is the same store (Atomics costs ~6 ns more).
    if (this.sharedMemory) Atomics.store(this.values!, at, value);
    else this.values![at] = value;
  }

  /**
   * The CMP's order for each fence (NF-11): write the shadow MonitoredValue,
   * memory barrier, read CurrentValue, interrupt if CurrentValue >
   * MonitoredValue: the core's four steps (cmpStep), called one by one in
   * cmpOrder()'s order. Without the barrier (monitoredValueBarrier: false) a
   * signal still in an engine's write buffer is missed and the wakeup can be lost.
   */
  updateMonitoredValues(args: DXGKARG_UPDATEMONITOREDVALUES): void | MonitoredValueUpdateSteps {
    const ddi = 'DxgkDdiUpdateMonitoredValues';
    const order = this.cmpOrder();
    if (this.hardware.granularity === 'step' && args.NumFences > 0) {
      // One CMP step per OS step: the first now, each next one when the OS asks (DdiInProgress).
      const fences: number[] = [];
      for (let i = 0; i < args.NumFences; i++) fences.push(this.fence(args.NativeFenceArray[i], ddi));
      const steps = new MonitoredValueUpdateSteps(this.core, this.hardware, order, fences, args.UpdatedValueArray.slice(0, args.NumFences));
      return steps.step() ? undefined : steps;
    }
    // The same steps, each fence's in one go (no DdiInProgress to make).
    for (let i = 0; i < args.NumFences; i++) {
      const fence = this.fence(args.NativeFenceArray[i], ddi);
      const value = args.UpdatedValueArray[i];
      let current = 0n;
      for (let k = 0; k < order.length; k++) current = cmpStep(this.core, this.hardware, order[k], fence, value, current);
    }
  }

  /** The CMP's steps for one fence in DxgkDdiUpdateMonitoredValues, in order (NF-11; a driver that extends this one may change it). */
  protected cmpOrder(): readonly CmpStep[] {
    return this.options.monitoredValueBarrier ? CMP_ORDER : CMP_ORDER_WITHOUT_BARRIER;
  }

  createHwQueue(args: DXGKARG_CREATEHWQUEUE): { hHwQueue: number } {
    if (!(args.PrivateDriverData instanceof Uint8Array) || args.PrivateDriverData.length < HWQUEUE_PRIVATE_DRIVER_DATA_BYTES) {
      throw new Error(`DxgkDdiCreateHwQueue: PrivateDriverData must be ${HWQUEUE_PRIVATE_DRIVER_DATA_BYTES} bytes`);
    }
    const id = check(this.core.queueCreate(args.EngineOrdinal, args.ProcessSlot), 'DxgkDdiCreateHwQueue');
    const hHwQueue = this.nextQueue++;
    const queue: DriverQueue = Object.freeze({ handle: hHwQueue, coreQueue: id, processSlot: args.ProcessSlot, engine: args.EngineOrdinal, kind: 'HW_QUEUE' });
    this.queues.set(hHwQueue, queue);
    this.byCoreQueue.set(id, queue);
    this.hardware.addQueue(Object.freeze({ id, engine: args.EngineOrdinal, handle: hHwQueue, label: args.DebugName }));
    // What the user-mode half will need to find the queue: a tag and the handle.
    const data = new DataView(args.PrivateDriverData.buffer, args.PrivateDriverData.byteOffset, args.PrivateDriverData.byteLength);
    data.setUint32(0, QUEUE_DATA_MAGIC, true);
    data.setUint32(4, hHwQueue, true);
    return { hHwQueue };
  }

  destroyHwQueue(args: DXGKARG_DESTROYHWQUEUE): void {
    const queue = this.queue(args.hHwQueue, 'DxgkDdiDestroyHwQueue');
    this.hardware.removeQueue(queue.coreQueue);
    check(this.core.queueDestroy(queue.coreQueue), 'DxgkDdiDestroyHwQueue');
    this.queues.delete(args.hHwQueue);
    this.byCoreQueue.delete(queue.coreQueue);
  }

  setNativeFenceLogBuffer(args: DXGKARG_SETNATIVEFENCELOGBUFFER): void {
    const id = this.queue(args.hHwQueue, 'DxgkDdiSetNativeFenceLogBuffer').coreQueue;
    const L = this.hardware.layout.log;
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
      const id = this.queue(args.hHWQueueArray[i], 'DxgkDdiUpdateNativeFenceLogs').coreQueue;
      // The memory barrier on that queue: its pending log entry write reaches memory.
      check(this.core.logFlush(id), 'DxgkDdiUpdateNativeFenceLogs');
    }
  }

  /** Core queue id behind one of this driver's hardware queue or context handles (tools and tests stepping the core). */
  coreQueueOf(handle: number): number | undefined { return (this.queues.get(handle) ?? this.contexts.get(handle))?.coreQueue; }

  /** The hardware queue behind hHwQueue; a handle this driver never made (or destroyed) is a driver error. */
  private queue(hHwQueue: number, ddi: string): DriverQueue {
    const queue = this.queues.get(hHwQueue);
    if (!queue) throw new Error(`${ddi}: unknown hHwQueue ${hex(hHwQueue)}`);
    return queue;
  }

  /** The hardware queue a user-mode half's private data names (undefined: not data this driver wrote, or a queue gone). */
  queueOfPrivateData(data: Uint8Array): DriverQueue | undefined {
    if (!(data instanceof Uint8Array) || data.length < HWQUEUE_PRIVATE_DRIVER_DATA_BYTES) return undefined;
    // Read from the bytes: a DataView per submission costs more than the rest of this.
    if (littleEndian32(data, 0) !== QUEUE_DATA_MAGIC) return undefined;
    return this.queues.get(littleEndian32(data, 4));
  }

  /**
   * The core fence a command names by GPU VA in the process `slot` (what the engine will write or
   * read), 0 when none: the GPU then faults on the VA when it executes the command.
   */
  fenceAtGpuVa(slot: number, gpuVa: bigint): number {
    const phys = this.core.gpuVaTranslate(slot, gpuVa);
    if (phys === 0) return 0;
    const fence = this.core.fenceAtCurrentValue(phys);
    return fence > 0 ? fence : 0;
  }

  /** DxgkDdiStopDevice: a bug check. The engines stop for good; no interrupt or report reaches the OS again. */
  stopDevice(): void {
    this.stopped = true;
    this.hardware.stop();
  }

  /** DxgkDdiResetFromTimeout: the engines stop and every queue's and context's work is dropped with them. */
  resetFromTimeout(): void {
    this.hardware.stop();
    for (const [hHwQueue, queue] of [...this.queues]) {
      this.hardware.removeQueue(queue.coreQueue);
      this.core.queueDestroy(queue.coreQueue);
      this.queues.delete(hHwQueue);
      this.byCoreQueue.delete(queue.coreQueue);
    }
    for (const hContext of [...this.contexts.keys()]) this.destroyContext({ hContext });
  }

  /** DxgkDdiRestartFromTimeout: the engines run again. */
  restartFromTimeout(): void {
    if (!this.stopped) this.hardware.restart();
  }

  // ── kernel-mode contexts: each gets a ring the OS fills through SubmitCommand ──

  createContext(args: DXGKARG_CREATECONTEXT): { hContext: number } {
    const id = check(this.core.queueCreate(args.NodeOrdinal, args.ProcessSlot), 'DxgkDdiCreateContext');
    const hContext = this.nextContext++;
    const context: DriverQueue = Object.freeze({ handle: hContext, coreQueue: id, processSlot: args.ProcessSlot, engine: args.NodeOrdinal, kind: 'CONTEXT' });
    this.contexts.set(hContext, context);
    this.byCoreQueue.set(id, context);
    this.hardware.addQueue(Object.freeze({ id, engine: args.NodeOrdinal, handle: hContext, label: `context 0x${hContext.toString(16)}` }));
    return { hContext };
  }

  destroyContext(args: DXGKARG_DESTROYCONTEXT): void {
    const context = this.contexts.get(args.hContext);
    if (!context) throw new Error(`DxgkDdiDestroyContext: unknown hContext 0x${args.hContext.toString(16)}`);
    this.hardware.removeQueue(context.coreQueue);
    check(this.core.queueDestroy(context.coreQueue), 'DxgkDdiDestroyContext');
    this.contexts.delete(args.hContext);
    this.byCoreQueue.delete(context.coreQueue);
    for (const [fenceId, hContext] of [...this.submitted]) if (hContext === args.hContext) this.submitted.delete(fenceId);
  }

  /** Writes the command buffer and its completion marker (a NOP carrying SubmissionFenceId) to the context's ring. */
  submitCommand(args: DXGKARG_SUBMITCOMMAND): boolean {
    const context = this.contexts.get(args.hContext);
    if (!context) throw new Error(`DxgkDdiSubmitCommand: unknown hContext 0x${args.hContext.toString(16)}`);
    const id = context.coreQueue;
    if (this.core.queuePending(id) + args.Commands.length + 1 > this.options.ringEntries) return false;
    const L = this.hardware.layout;
    const writable = this.options.enginesWriteMonitoredFences ?? true;
    for (const c of args.Commands) {
      if (c.op === 'fenceWrite' && !writable) throw new Error('DxgkDdiSubmitCommand: a fence-write command on an engine that cannot write monitored fences');
      const op = c.op === 'work' ? L.opWork : L.opFenceWrite;
      const fence = c.op === 'fenceWrite' ? this.fenceAtGpuVa(context.processSlot, c.gpuVa) : 0;
      check(this.core.queuePush(id, op, fence, c.value, c.gpuVa, c.handle), 'DxgkDdiSubmitCommand');
    }
    check(this.core.queuePush(id, L.opNop, 0, BigInt(args.SubmissionFenceId), 0n, 0), 'DxgkDdiSubmitCommand');
    this.submitted.set(args.SubmissionFenceId, args.hContext);
    this.hardware.kick(this.core.queueEngine(id));
    return true;
  }

  /** Every executed GPU step, reported to the OS (DxgkrnlCallbacks.NotifyGpuProgress) in the driver's own handles. */
  private reportProgress(step: StepRecord): void {
    if (step.kind === 'fence-write') this.monitoredRaised[step.queue.engine] = true;
    if (!this.os || this.stopped) return;
    const queue = this.byCoreQueue.get(step.queue.id);
    if (!queue) return; // a queue the OS never asked for (a test driving the hardware by hand)
    this.os.NotifyGpuProgress({
      hQueue: queue.handle, QueueKind: queue.kind, EngineOrdinal: step.queue.engine, Operation: PROGRESS_OPERATION[step.kind],
      hSyncObject: step.handle, Value: step.value, PreviousValue: step.previousValue, Interrupt: step.interrupt,
      GpuTimeNs: step.timeNs, ObservedGpuTimeNs: step.observedNs,
    });
  }

  /** May the GPU run the queue's next quiet commands as a stretch? The OS says (QueryGpuProgressStretch). */
  private acceptsStretch(info: HwQueueInfo): boolean {
    if (!this.os || this.stopped) return true; // nobody hears progress reports
    const queue = this.byCoreQueue.get(info.id);
    if (!queue) return true; // a queue the OS never asked for: its steps are not reported either
    return this.os.QueryGpuProgressStretch({ hQueue: queue.handle, QueueKind: queue.kind, CommandsInRing: this.core.queuePending(info.id) });
  }

  /** A stretch ran: its commands reported by count (NotifyGpuProgressStretch). */
  private reportStretch(stretch: StretchReport): void {
    if (!this.os || this.stopped) return;
    const queue = this.byCoreQueue.get(stretch.queue.id);
    if (!queue) return;
    this.os.NotifyGpuProgressStretch({
      hQueue: queue.handle, QueueKind: queue.kind, EngineOrdinal: stretch.queue.engine, Commands: stretch.commands,
      FenceCommands: stretch.fenceCommands, GpuTimeNs: stretch.endNs,
    });
  }

  /** A GPU page fault: DXGK_INTERRUPT_DMA_PAGE_FAULTED (the OS resets the adapter). */
  private faultServiceRoutine(message: string, queue: HwQueueInfo | undefined): void {
    if (!this.os || this.stopped) return;
    this.os.NotifyDmaPageFaulted({
      InterruptType: 'DXGK_INTERRUPT_DMA_PAGE_FAULTED', NodeOrdinal: queue?.engine ?? 0, EngineOrdinal: 0,
      hQueue: queue ? this.byCoreQueue.get(queue.id)?.handle ?? 0 : 0, Message: message,
    });
  }

  /** The DMA completed interrupt: one per command buffer, naming its SubmissionFenceId. */
  private dmaCompletedServiceRoutine(engine: number, queueId: number, submissionFenceId: number): void {
    // Only buffers still on the engine: a context destroyed (or reset) meanwhile dropped its own.
    const hContext = this.submitted.get(submissionFenceId);
    if (!this.os || this.stopped || hContext === undefined || hContext !== this.byCoreQueue.get(queueId)?.handle) return;
    this.submitted.delete(submissionFenceId);
    this.os.NotifyDmaCompleted({ InterruptType: 'DXGK_INTERRUPT_DMA_COMPLETED', NodeOrdinal: engine, EngineOrdinal: 0, SubmissionFenceId: submissionFenceId });
  }

  /** The ISR: take the engine's interrupt payload and notify the OS. */
  private interruptServiceRoutine(engine: number): void {
    // INT-05: with the optimized cap the payload names the running queue (or none) instead of a list.
    const queue = this.core.engineInterruptQueue(engine);
    const count = this.core.engineTakeInterrupt(engine);
    if (count === -2 || !this.os || this.stopped) return;
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
      const running = queue ? this.byCoreQueue.get(queue) : undefined;
      this.os.NotifyInterrupt({
        InterruptType: DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED, NodeOrdinal: engine, EngineOrdinal: 0,
        SignaledNativeFenceCount: 0, pSignaledNativeFenceArray: null,
        hHWQueue: running?.kind === 'HW_QUEUE' ? running.handle : 0,
        Flags: { EvaluateLegacyMonitoredFences: false },
      });
      return;
    }
    let list: number[] | null = null;
    if (count >= 0 && this.options.interruptPayload === 'list') {
      // A correct driver never reports a fence it has been told to destroy.
      list = raw.filter((h) => this.fenceOf(h) >= 0);
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

  /** The core fence id of `hGlobal`, a live native fence this driver made; -1 otherwise. */
  private fenceOf(hGlobal: number): number {
    return this.recordOf(hGlobal) === 0 ? -1 : hGlobal & FENCE_ID_MASK;
  }

  /**
   * The address of the live core fence record `hGlobal` names (its id live, and the handle the core keeps for it
   * `hGlobal`), 0 for none. It reads the record through a view of linear memory, at the offsets the core exports
   * (docs/ABI.md): a core call per field is polymorphic once a process holds several machines.
   */
  private recordOf(hGlobal: number): number {
    if (!Number.isInteger(hGlobal) || hGlobal < GLOBAL_HANDLE_BASE || hGlobal >= LOCAL_HANDLE_BASE) return 0;
    const id = hGlobal & FENCE_ID_MASK;
    const words = this.words ?? this.makeViews();
    if (id === 0 || id > words[this.fenceCapacityWord]) return 0;
    const record = words[this.fenceTableWord] + (id - 1) * this.fenceRecordBytes;
    return this.holds(record, hGlobal) ? record : 0;
  }

  /** Is the fence record at `record` live and `hGlobal`'s? (recordOf's last check; writeCurrentValue's check of its last record) */
  private holds(record: number, hGlobal: number): boolean {
    return this.bytes![record + this.fenceStateOffset] === this.fenceStateLive && this.words![(record + this.fenceHandleOffset) >>> 2] === hGlobal;
  }

  /** The views of linear memory (made at first use: a machine's memory is made at its final size and never grows). */
  private makeViews(): Uint32Array {
    this.adapterBase = this.core.adapterBaseAddress();
    const { offsets } = this.layout;
    this.fenceTableWord = (this.adapterBase + offsets.fenceTable) >>> 2;
    this.fenceCapacityWord = (this.adapterBase + offsets.fenceCapacity) >>> 2;
    this.fenceRecordBytes = this.layout.fenceRecordBytes;
    this.fenceStateOffset = offsets.fenceState;
    this.fenceStateLive = this.layout.fenceStateLive;
    this.fenceHandleOffset = offsets.fenceDriverHandle;
    this.fenceCurrentValueOffset = offsets.fenceCurrentValue;
    this.sharedMemory = typeof SharedArrayBuffer !== 'undefined' && this.hardware.memory.buffer instanceof SharedArrayBuffer;
    this.values = new BigUint64Array(this.hardware.memory.buffer);
    this.bytes = new Uint8Array(this.hardware.memory.buffer);
    return (this.words = new Uint32Array(this.hardware.memory.buffer));
  }

  /** The core fence id of `hGlobal`. */
  private fence(hGlobal: number, ddi: string): number {
    const fence = this.fenceOf(hGlobal);
    if (fence < 0) throw new Error(`${ddi}: unknown hGlobalNativeFence 0x${hGlobal.toString(16)}`);
    return fence;
  }
}

export { MonitoredValueUpdateSteps, CMP_ORDER, type CmpStep };

/**
 * The user-mode half of the reference driver module: user-mode submission.
 * It finds the queue from the private data its kernel-mode half wrote at
 * DxgkDdiCreateHwQueue, writes each command into the queue's ring (naming the
 * fence the way the engine needs it: the record at the command's GPU VA), and
 * rings the queue's doorbell (the engine looks for work). The OS never sees it.
 */
export class ReferenceUserModeDriver implements UserModeDriverInterface, UserModeDriverColumns {
  constructor(private readonly kernelMode: ReferenceDriver) {}

  /** Views of the machine's memory for staging ring writes (made once: the memory never grows). */
  private staging?: { words: Uint32Array; bigWords: BigUint64Array };

  submitToHwQueue(args: UMDARG_SUBMITTOHWQUEUE): void {
    const commands = args.Commands;
    const queue = this.writableQueue(args.HwQueuePrivateDriverData, commands.length);
    // The commands are staged in the out buffer as the ring's Command records, STAGED_COMMANDS at a time,
    // and written by queuePushStaged (which finds each fence from its CurrentValue VA, as fenceAtGpuVa does).
    const kmd = this.kernelMode;
    const L = kmd.hardware.layout;
    const C = L.out.command;
    const { words, bigWords } = this.views();
    const base = kmd.core.outBufferAddress();
    for (let first = 0; first < commands.length; first += STAGED_COMMANDS) {
      const count = Math.min(STAGED_COMMANDS, commands.length - first);
      for (let i = 0; i < count; i++) {
        const c = commands[first + i];
        const at = base + i * C.bytes;
        words[(at + C.op) >> 2] = c.op === 'wait' ? L.opWait : c.op === 'signal' ? L.opSignal : L.opWork;
        bigWords[(at + C.value) >> 3] = c.value;
        bigWords[(at + C.gpuVa) >> 3] = c.gpuVa;
        words[(at + C.handle) >> 2] = c.handle;
      }
      check(kmd.core.queuePushStaged(queue.coreQueue, count, queue.processSlot), 'UMD ring write');
    }
    kmd.hardware.kick(queue.engine);
  }

  /** The typed form: the same writes from the columns (a value is copied between typed arrays, no bigint made). */
  submitColumnsToHwQueue(args: UMDARG_SUBMITCOLUMNSTOHWQUEUE): void {
    const total = columnsCommandCount(args);
    const { Ops: ops, GpuVas: gpuVas, Values: values, Handles: handles } = args;
    const queue = this.writableQueue(args.HwQueuePrivateDriverData, total);
    const kmd = this.kernelMode;
    const L = kmd.hardware.layout;
    const C = L.out.command;
    const { words, bigWords } = this.views();
    const base = kmd.core.outBufferAddress();
    const opWait = L.opWait, opSignal = L.opSignal, opWork = L.opWork;
    for (let first = 0; first < total; first += STAGED_COMMANDS) {
      const count = Math.min(STAGED_COMMANDS, total - first);
      for (let i = 0, c = first; i < count; i++, c++) {
        const at = base + i * C.bytes;
        const op = ops[c];
        words[(at + C.op) >> 2] = op === UMD_OP_WAIT ? opWait : op === UMD_OP_SIGNAL ? opSignal : opWork;
        bigWords[(at + C.value) >> 3] = values[c];
        bigWords[(at + C.gpuVa) >> 3] = gpuVas[c];
        words[(at + C.handle) >> 2] = handles[c];
      }
      check(kmd.core.queuePushStaged(queue.coreQueue, count, queue.processSlot), 'UMD ring write');
    }
    kmd.hardware.kick(queue.engine);
  }

  /** The live queue the private data names, with ring room for `count` commands (else a WddmError: nothing is written). */
  private writableQueue(privateDriverData: Uint8Array, count: number): DriverQueue {
    const kmd = this.kernelMode;
    const queue = kmd.queueOfPrivateData(privateDriverData);
    if (!queue) {
      throw new WddmError('INVALID_PARAMETER', 'submitToHwQueue: HwQueuePrivateDriverData names no live hardware queue of this driver (the queue was destroyed, or its device removed)',
        { parameter: 'HwQueuePrivateDriverData', expected: 'the private data DxgkDdiCreateHwQueue returned for a live queue' });
    }
    const room = kmd.options.ringEntries - kmd.core.queuePending(queue.coreQueue);
    if (count > room) {
      throw new WddmError('INSUFFICIENT_RESOURCES', `hardware queue ring has room for ${room} more command(s), the submission has ${count}; let the GPU drain it (machine.run) or raise limits.ringEntries`,
        { parameter: 'commands', value: count, expected: `at most ${room} commands` });
    }
    return queue;
  }

  /** Views of the machine's memory for staging ring writes (made again only if the buffer changed). */
  private views(): { words: Uint32Array; bigWords: BigUint64Array } {
    const buffer = this.kernelMode.hardware.memory.buffer;
    if (this.staging?.words.buffer !== buffer) this.staging = { words: new Uint32Array(buffer), bigWords: new BigUint64Array(buffer) };
    return this.staging;
  }
}
