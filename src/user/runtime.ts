// What a process sees: the D3DKMT-style runtime API (numeric, per-process
// handles), CPU threads that block in virtual time, and CPU events.
//
// A CPU thread is a generator that yields what it blocks on (cpu.wait,
// cpu.sleep, cpu.waitEvent). Every resumption of a thread is a scheduler
// event (owner "process <slot>", kind thread-resume {thread}; an event wait's
// timeout is thread-event-timeout {thread, wait}), so a schedule explorer
// chooses when each thread runs next, like any other event. What a
// resumption hands the thread (a WaitResult, or an error) is kept on the
// thread, not in a closure.
//
// Every method validates its arguments before anything changes (the OS does
// the checking in one place); a failed call leaves the machine as it was.
// There is deliberately no way to write CurrentValue or to read
// MonitoredValue from here (NF-04): readFenceValue goes through the
// read-only user mapping of CurrentValue.
//
// User mode reaches the kernel only through its calls (the D3DKMT-style
// entry points of src/os/) and a driver only through the driver's user-mode
// half (UserModeDriverInterface): user-mode submission writes the ring there,
// then tells the OS what it submitted. It never writes a kernel table.

import type { CommandList, CpuEvent, Kernel, KernelProcess, MonitoredFenceCreated, NativeFenceMapping, WaitResult, WaiterOwner, AllocationUse, CpuAccess } from '../os/kernel.js';
import type { UserModeDriverInterface } from '../ddi/ddi.js';
import type { WasmMemory } from '../core/bindings.js';
import { WddmError, invalid } from '../base/errors.js';
import * as v from '../base/validate.js';
import { hex } from '../base/wddm.js';
import type { Scheduler, ScheduledEvent } from '../base/scheduler.js';
import type { Trace } from '../base/trace.js';
import { writeRing } from './ring-write.js';

/**
 * What a process's user mode runs on (the machine provides it): the kernel's
 * entry points, virtual time, physical memory behind its read-only mappings,
 * and each adapter's user-mode driver.
 */
export interface UserModeSystem {
  readonly os: Kernel;
  readonly scheduler: Scheduler;
  readonly trace: Trace;
  readonly memory: WasmMemory;
  readonly nowNs: number;
  /** The index of an adapter named by name or index (throws for none). */
  adapterIndex(adapter: string | number): number;
  /** The user-mode half of adapter `index`'s driver module. */
  userModeDriver(index: number): UserModeDriverInterface;
  /** Does it take the typed form of a submission (ring-write.ts takesColumns)? */ userModeDriverTakesColumns(index: number): boolean;
}

export type ThreadOp =
  | { op: 'wait'; args: WaitArgs }
  | { op: 'sleep'; durationNs: number }
  | { op: 'waitEvent'; hEvent: number; timeoutNs?: number };

export interface WaitArgs {
  objects: number[];
  values: (bigint | number)[];
  waitAny?: boolean;
  timeoutNs?: number;
  hDevice?: number;
}

/**
 * Handed to a thread body: each method returns an operation to `yield`, and
 * every `yield` evaluates to a WaitResult (one type for all three, so
 * TypeScript types `const r = yield cpu.wait(…)` as a WaitResult):
 *   cpu.wait(…)       the wait's result (SUCCESS, TIMEOUT, DEVICE_REMOVED, …)
 *   cpu.waitEvent(…)  SUCCESS when the event was set (immediate: it already was), TIMEOUT when the timeout passed
 *   cpu.sleep(ns)     SUCCESS when the time has passed
 */
export class Cpu {
  constructor(private readonly machine: UserModeSystem, readonly thread: CpuThread) {}
  /** Blocks the thread until the wait completes; `yield` gives its WaitResult. */
  wait(args: WaitArgs): ThreadOp { return { op: 'wait', args }; }
  /** Blocks for a virtual duration (0 … MAX_VIRTUAL_TIME_NS); `yield` gives { status: 'SUCCESS', timeNs }. */
  sleep(durationNs: number): ThreadOp { return { op: 'sleep', durationNs }; }
  /** Blocks until a CPU event is set (or the timeout passes); `yield` gives SUCCESS when set, TIMEOUT otherwise. */
  waitEvent(hEvent: number, timeoutNs?: number): ThreadOp { return { op: 'waitEvent', hEvent, timeoutNs }; }
  get nowNs(): number { return this.machine.nowNs; }
}

/** A CPU thread's body: a generator that yields ThreadOps and gets a WaitResult back from each. */
export type ThreadBody = (cpu: Cpu) => Generator<ThreadOp, unknown, WaitResult>;

/** An error raised by a blocking call, thrown into the thread at its yield. */
class ThreadFault { constructor(readonly error: unknown) {} }

/** What a blocked thread is waiting in (tools: machine.stuck()). */
export type ThreadBlock =
  | { op: 'wait' }
  | { op: 'waitEvent'; event: CpuEvent; timed: boolean }
  | { op: 'sleep'; untilNs: number };

/** A fence a CPU thread may still signal (a handle of `process`, default the thread's own) and the highest value it may signal it to. */
export interface ThreadSignal { hSyncObject: number; value: bigint | number; process?: RuntimeProcess }

export interface ThreadOptions {
  /**
   * What the thread may still signal from where it is now (CPU signals, GPU signals it will submit), asked by
   * machine.stuck() only. Without it a thread may signal any fence its process holds a handle to, so the stuck
   * report cannot tell a value nothing will signal from a deadlock.
   */
  mayStillSignal?: () => readonly ThreadSignal[];
}

export class CpuThread {
  state: 'ready' | 'running' | 'blocked' | 'done' | 'failed' = 'ready';
  result: unknown;
  error?: unknown;
  /** While blocked: what in. */
  blockedOn?: ThreadBlock;
  /** Every wait result this thread received, in order. */
  readonly waits: WaitResult[] = [];
  /** What its next resumption hands it (undefined: the start; an error is thrown into it). */
  resumeWith?: WaitResult | ThreadFault;
  /** Counts the thread's blocking operations: a wake for an earlier one (an event set after its timeout) is ignored. */
  blockNumber = 0;
  /** A pending event-wait timeout. */
  timer?: ScheduledEvent;
  /** `index`: its place in its process's `threads`, the scheduler events' `thread` argument. */
  constructor(readonly name: string, readonly process: RuntimeProcess, readonly index: number, readonly mayStillSignal?: () => readonly ThreadSignal[]) {}
}

/**
 * A CPU thread's body threw something other than a WddmError (a bug in the
 * body, or a TypeError such as yielding something that is not an operation).
 * machine.run() throws it at the moment the thread fails, with the original
 * error as `cause`; the thread is left 'failed' and the machine as it was, so
 * run() can go on. (A WddmError a thread does not catch is a refused call: the
 * thread fails, the trace says so, and the run goes on.)
 */
export class CpuThreadError extends Error {
  constructor(readonly thread: CpuThread, cause: unknown) {
    super(`CPU thread "${thread.process.name}:${thread.name}" failed: ${cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)}`, { cause });
    this.name = 'CpuThreadError';
  }
}

/** waitAsync's promise executor, one for the process's every wait (not a closure each), and the resolver it hands back (taken at once). */
const RESOLVER = Symbol('RuntimeProcess.resolver');

export class RuntimeProcess {
  private readonly [RESOLVER]: { resolve: ((result: WaitResult) => void) | undefined; capture: (resolve: (result: WaitResult) => void) => void } =
    { resolve: undefined, capture: (resolve) => { this[RESOLVER].resolve = resolve; } };
  readonly threads: CpuThread[] = [];
  private readonly bodies: Generator<ThreadOp, unknown, WaitResult>[] = [];
  /** The UMD's own record of its hardware queues: adapter, and the private data the kernel-mode driver left for it. */
  private readonly hwQueues = new Map<number, { adapterIndex: number; privateDriverData: Uint8Array }>();
  /** The label of a waitAsync without one, and the owner of every waitAsync (a waiter keeps both: one of each for all of them). */
  private readonly asyncLabel: string;
  private readonly asyncOwner: WaiterOwner;
  /** The OS's front door (src/os/kernel.ts): every kernel call of this process goes through it. */
  private readonly os: Kernel;
  constructor(readonly machine: UserModeSystem, readonly kernel: KernelProcess) {
    this.os = machine.os;
    machine.scheduler.register(this.owner, (event) => this.onEvent(event));
    this.asyncLabel = `${kernel.name}:async`;
    this.asyncOwner = Object.freeze({ process: kernel.name });
  }

  /** Its scheduler owner: the events that resume its threads. */
  get owner(): string { return `process ${this.kernel.slot}`; }

  get name(): string { return this.kernel.name; }

  // ── adapters and devices ──

  /** D3DKMTOpenAdapterFromLuid: returns hAdapter. */
  openAdapter(adapter: string | number): number {
    return this.os.openAdapter(this.kernel, this.machine.adapterIndex(adapter));
  }

  /**
   * D3DKMTQueryAdapterInfo. 'KMTQAITYPE_WDDM_3_1_CAPS' → { NativeGpuFenceSupported }
   * (what user mode sees, CAP-03); 'NATIVE_FENCE_CAPS' → the driver's DXGK_NATIVE_FENCE_CAPS.
   */
  queryAdapterInfo(hAdapter: number, type: 'KMTQAITYPE_WDDM_3_1_CAPS' | 'NATIVE_FENCE_CAPS'): Record<string, unknown> {
    return this.os.queryAdapterInfo(this.kernel, hAdapter, type);
  }

  /** D3DKMTCreateDevice: returns hDevice. */
  createDevice(args: { hAdapter: number }): number { return this.os.createDevice(this.kernel, args); }

  // ── native fences ──

  /** D3DKMTCreateNativeFence. */
  createNativeFence(args: {
    hDevice: number; initialValue?: bigint | number; type?: 'DEFAULT' | 'INTRA_GPU';
    flags?: import('../base/wddm.js').SyncObjectFlags; engineAffinity?: number; privateDriverData?: Uint8Array; name?: string;
  }): { hSyncObject: number; mapping: NativeFenceMapping } {
    return this.os.createNativeFence(this.kernel, args);
  }

  /** D3DKMTShareObjects: an NT handle for a shareable fence (valid in this process). */
  shareObject(hSyncObject: number): number { return this.os.shareObjects(this.kernel, hSyncObject); }

  /** DuplicateHandle: copies an NT handle into another process; returns the copy's value there. */
  duplicateHandle(hNtHandle: number, target: RuntimeProcess): number {
    if (!(target instanceof RuntimeProcess) || target.machine !== this.machine) throw invalid('target', target, 'a process of the same machine');
    return this.os.duplicateHandle(this.kernel, hNtHandle, target.kernel);
  }

  /** CloseHandle on an NT handle. */
  closeHandle(hNtHandle: number): void { this.os.closeHandle(this.kernel, hNtHandle); }

  /** D3DKMTOpenNativeFenceFromNTHandle. */
  openNativeFenceFromNtHandle(args: { hNtHandle: number; hDevice: number; engineAffinity?: number }): { hSyncObject: number; mapping: NativeFenceMapping } {
    return this.os.openNativeFenceFromNtHandle(this.kernel, args);
  }

  /** D3DKMTDestroySynchronizationObject. */
  destroySynchronizationObject(hSyncObject: number): void { this.os.destroySynchronizationObject(this.kernel, hSyncObject); }

  /** Reads CurrentValue through this process's read-only CPU mapping (a 64-bit atomic load). */
  readFenceValue(hSyncObject: number): bigint {
    return this.readMapping(this.os.currentValueCpuVa(this.kernel, hSyncObject));
  }

  /** Reads a 64-bit value at a user-mode CPU VA this process has mapped (read-only mappings only exist). */
  readMapping(cpuVa: bigint): bigint {
    const phys = this.os.translateUser(this.kernel, v.u64(cpuVa, 'cpuVa'));
    if (phys === undefined || phys % 8) throw new WddmError('ACCESS_DENIED', `cpuVa ${hex(cpuVa)} is not an 8-byte aligned address mapped in process "${this.name}"`);
    return Atomics.load(new BigUint64Array(this.machine.memory.buffer, phys, 1), 0);
  }

  /** D3DKMTSignalSynchronizationObjectFromCpu. */
  signal(args: { objects: number[]; values: (bigint | number)[]; flags?: { allowFenceRewind?: boolean }; hDevice?: number }): void {
    this.os.signalSynchronizationObjectFromCpu(this.kernel, args);
  }

  /**
   * D3DKMTWaitForSynchronizationObjectFromCpu with an event (hAsyncEvent):
   * returns at once; the event is set when the wait is satisfied.
   */
  waitWithEvent(args: WaitArgs & { hAsyncEvent: number }): void { this.os.waitWithEvent(this.kernel, args); }

  /** The same wait, as a Promise that settles (in virtual time) with the WaitResult. */
  waitAsync(args: WaitArgs, label = 'async'): Promise<WaitResult> {
    // Bad input throws here, synchronously, before anything changes.
    const handoff = this[RESOLVER];
    const settled = new Promise<WaitResult>(handoff.capture); // no closure per wait: the resolver comes back through `handoff`
    const settle = handoff.resolve!;
    handoff.resolve = undefined;
    this.os.waitForSynchronizationObjectFromCpu(this.kernel, args, label === 'async' ? this.asyncLabel : `${this.name}:${label}`, settle, this.asyncOwner);
    return settled;
  }

  /**
   * The same wait with a callback instead of a promise (hAsyncEvent's JavaScript analogue; the form for many waits):
   * same checks, errors, results, labels and trace as waitAsync. Like a `then` handler, `callback` runs as a microtask
   * after the OS is done, in completion order (docs/ARCHITECTURE.md); one that throws changes nothing in the OS.
   */
  waitWithCallback(args: WaitArgs, callback: (result: WaitResult) => void, label = 'async'): void {
    if (typeof callback !== 'function') throw invalid('callback', callback, 'a function (result: WaitResult) => void');
    this.os.waitForSynchronizationObjectFromCpu(this.kernel, args, label === 'async' ? this.asyncLabel : `${this.name}:${label}`, callback, this.asyncOwner, true);
  }

  // ── CPU events ──

  /** A CPU event (KEVENT, manual reset) of this process: returns hEvent. */
  createEvent(name = 'event'): number { return this.os.createEvent(this.kernel, name); }
  isEventSet(hEvent: number): boolean { return this.os.isEventSet(this.kernel, hEvent); }
  /**
   * Events are manual-reset (a KEVENT NotificationEvent): once set, an event
   * stays set — every thread waiting on it wakes, and later waits return at
   * once — until resetEvent clears it. Resetting an event that is not set does
   * nothing; a wait with hAsyncEvent still pending sets it again when satisfied.
   */
  resetEvent(hEvent: number): void { this.os.resetEvent(this.kernel, hEvent); }

  // ── hardware queues ──

  createHwQueue(args: { hDevice: number; engine?: number; nativeProgressFence?: boolean; name?: string }): { hHwQueue: number; hProgressFence?: number } {
    const created = this.os.createHwQueue(this.kernel, args);
    this.hwQueues.set(created.hHwQueue, { adapterIndex: created.adapterIndex, privateDriverData: created.privateDriverData });
    return { hHwQueue: created.hHwQueue, hProgressFence: created.hProgressFence };
  }
  destroyHwQueue(hHwQueue: number): void {
    this.os.destroyHwQueue(this.kernel, hHwQueue);
    this.hwQueues.delete(hHwQueue);
  }
  /**
   * A command list for submit (D3D12's sense): record wait / signal / work commands into it, submit it whole with
   * submit({ hHwQueue, commands: list }), reset() it and record again. `capacity`: 1 … 4,096 commands (default 4,096).
   */
  createCommandList(options?: { capacity?: number }): CommandList { return this.os.createCommandList(this.kernel, options); }
  /**
   * User-mode submission of { wait }, { signal }, { work } commands, or of a command list (createCommandList).
   * Returns the progress fence value it will signal.
   * Optional `reads` / `writes` declare the allocations the work accesses (src/os/vidmm/, docs/ALLOCATIONS.md).
   */
  submit(args: { hHwQueue: number; commands: CommandList | ({ wait: { hSyncObject: number; value: bigint | number } } | { signal: { hSyncObject: number; value: bigint | number } } | { work: { durationNs: number } })[]; reads?: AllocationUse[]; writes?: AllocationUse[] }): { progressValue?: bigint } {
    if (!args || typeof args !== 'object' || (args.reads === undefined && args.writes === undefined)) return this.submitToRing(args);
    const { reads, writes, ...rest } = args;
    const use = this.os.prepareUse(this.kernel, rest.hHwQueue, reads, writes);
    const result = this.submitToRing(rest);
    this.os.commitUse(use, result.progressValue!);
    return result;
  }

  /**
   * User-mode submission: the kernel checks what may go into the ring (nothing changes yet), the
   * driver's user-mode half writes it and rings the doorbell (or refuses, writing nothing), then the
   * kernel learns what was submitted (in-flight references, the timeline's queued events).
   */
  private submitToRing(args: unknown): { progressValue?: bigint } {
    const plan = this.os.prepareSubmission(this.kernel, args);
    const queue = this.hwQueues.get(plan.queue.handle);
    if (!queue) throw invalid('hHwQueue', plan.queue.handle, 'a hardware queue this process created with createHwQueue');
    writeRing(this.machine.userModeDriver(queue.adapterIndex), this.machine.userModeDriverTakesColumns(queue.adapterIndex), queue.privateDriverData, plan.commands);
    const result = this.os.submitted(plan);
    this.machine.trace.record('umd', this.name, 'commands written to ring + doorbell', { queue: plan.queue.label, commands: plan.described });
    return result;
  }
  /** hSyncObject of a hardware queue's progress fence (undefined without one). */
  progressFenceOf(hHwQueue: number): number | undefined { return this.os.progressFenceOf(this.kernel, hHwQueue); }

  // ── allocations (WDDM 2.0 VidMm, src/os/vidmm/vidmm.ts) ──

  createAllocation(args: { hDevice: number; sizeBytes: number; segments?: (number | string)[]; cpuAccess?: CpuAccess; resident?: boolean; name?: string }): { hAllocation: number } { return this.os.createAllocation(this.kernel, args); }
  /** D3DKMTDestroyAllocation2: never blocks; with SynchronousDestroy, `wait` (a cpu.waitEvent on `hEvent`, set when the memory is reclaimed) is a ThreadOp a CPU thread may yield. */
  destroyAllocation2(args: { hDevice: number; hAllocations: number[]; Flags?: { AssumeNotInUse?: boolean; SynchronousDestroy?: boolean } }): { freed: boolean; wait?: ThreadOp; hEvent?: number } {
    const result = this.os.destroyAllocation2(this.kernel, args);
    return result.hEvent === undefined ? result : { ...result, wait: { op: 'waitEvent', hEvent: result.hEvent } };
  }
  lock2(args: { hDevice: number; hAllocation: number; Flags?: number }): { pData: bigint } { return this.os.lock2(this.kernel, args); }
  unlock2(args: { hDevice: number; hAllocation: number }): void { this.os.unlock2(this.kernel, args); }
  makeResident(args: { hDevice: number; hAllocation: number; segment?: number | string }): { segment: string } { return this.os.makeResident(this.kernel, args); }
  evict(args: { hDevice: number; hAllocation: number }): void { this.os.evict(this.kernel, args); }
  invalidateCache(args: { hDevice: number; hAllocation: number; Offset?: number; Length?: number }): void { this.os.invalidateCache(this.kernel, args); }
  /** CPU store through a Lock2 mapping (goes through the CPU cache model on a non-coherent platform). */
  cpuStore(cpuVa: bigint, data: Uint8Array): void { this.os.cpuWrite(this.kernel, cpuVa, data); }
  /** CPU load through a Lock2 mapping. */
  cpuLoad(cpuVa: bigint, length: number): Uint8Array { return this.os.cpuRead(this.kernel, cpuVa, length); }

  // ── monitored fences and kernel-mode contexts (WDDM 2.x; src/os/monitored.ts, src/os/contexts.ts) ──

  /**
   * D3DKMTCreateSynchronizationObject2 with type MONITORED_FENCE (MF-01): the
   * handle, a read-only CPU mapping of the 64-bit value and its read/write GPU
   * VA. Signal and wait on it with signal(), cpu.wait(), waitAsync(), waitWithEvent().
   */
  createSynchronizationObject(args: {
    hDevice: number; type: 'MONITORED_FENCE'; initialValue?: bigint | number;
    flags?: import('../base/wddm.js').SyncObjectFlags; engineAffinity?: number; name?: string;
  }): MonitoredFenceCreated {
    return this.os.createSynchronizationObject(this.kernel, args);
  }

  /** D3DKMTCreateContextVirtual: a kernel-mode (OS-scheduled) context on one engine. Returns hContext. */
  createContext(args: { hDevice: number; engine?: number; name?: string }): number { return this.os.createContext(this.kernel, args); }
  /** D3DKMTDestroyContext. */
  destroyContext(hContext: number): void { this.os.destroyContext(this.kernel, hContext); }
  /**
   * D3DKMTSubmitCommand: one command buffer through the OS. { fenceWrite } writes
   * a monitored fence from the GPU and raises its interrupt (engines that can write the VA).
   */
  submitCommand(args: { hContext: number; commands: ({ work: { durationNs: number } } | { fenceWrite: { hSyncObject: number; value: bigint | number } })[]; reads?: AllocationUse[]; writes?: AllocationUse[] }): { submitted: number } {
    if (!args || typeof args !== 'object' || (args.reads === undefined && args.writes === undefined)) return this.os.submitCommand(this.kernel, args);
    // Optional reads / writes: the allocations the command buffer accesses (docs/ALLOCATIONS.md).
    const { reads, writes, ...rest } = args;
    const use = this.os.prepareContextUse(this.kernel, rest.hContext, rest.commands, reads, writes);
    const result = this.os.submitCommand(this.kernel, rest);
    this.os.commitUse(use);
    return result;
  }
  /** D3DKMTWaitForSynchronizationObjectFromGpu: returns at once; the context's later work waits (MF-05). */
  waitForSynchronizationObjectFromGpu(args: { hContext: number; objects: number[]; values: (bigint | number)[] }): void {
    this.os.waitForSynchronizationObjectFromGpu(this.kernel, args);
  }
  /** D3DKMTSignalSynchronizationObjectFromGpu: a software signal packet at the context's current end (MF-04). */
  signalSynchronizationObjectFromGpu(args: { hContext: number; objects: number[]; values: (bigint | number)[] }): void {
    this.os.signalSynchronizationObjectFromGpu(this.kernel, args);
  }

  // ── threads ──

  /** A simulated CPU thread: `body` yields blocking operations and runs in virtual time. `options.mayStillSignal`: ThreadOptions. */
  createThread(name: string, body: ThreadBody, options: ThreadOptions = {}): CpuThread {
    if (typeof name !== 'string' || !name) throw invalid('name', name, 'a thread name');
    if (typeof body !== 'function') throw invalid('body', body, 'a generator function (cpu) => Generator');
    const o = v.options(options, 'createThread(options)', ['mayStillSignal']);
    if (o.mayStillSignal !== undefined && typeof o.mayStillSignal !== 'function') {
      throw invalid('createThread(options).mayStillSignal', o.mayStillSignal, 'a function returning the { hSyncObject, value } the thread may still signal');
    }
    const thread = new CpuThread(name, this, this.threads.length, o.mayStillSignal as ThreadOptions['mayStillSignal']);
    this.threads.push(thread);
    this.bodies.push(body(new Cpu(this.machine, thread)));
    this.machine.scheduler.after(0, this.owner, 'thread-resume', { thread: thread.index }, `${this.actor(thread)} start`);
    return thread;
  }

  private actor(thread: CpuThread): string { return `${this.name}:${thread.name}`; }

  /** Its scheduler events: a thread resumes, or an event wait times out. */
  private onEvent(event: ScheduledEvent): void {
    const thread = this.threads[event.args.thread as number];
    if (!thread) throw new Error(`${this.owner}: no thread ${event.args.thread}`);
    if (event.kind === 'thread-resume') this.run(thread);
    else if (event.kind === 'thread-event-timeout') {
      thread.timer = undefined;
      this.wake(thread, event.args.wait as number, { status: 'TIMEOUT', timeNs: this.machine.scheduler.nowNs, immediate: false });
    } else throw new Error(`${this.owner}: no scheduler event of kind "${event.kind}"`);
  }

  /** The thread runs until its next blocking operation (or its end). */
  private run(thread: CpuThread): void {
    const input = thread.resumeWith;
    thread.resumeWith = undefined;
    thread.state = 'running';
    thread.blockedOn = undefined;
    const actor = this.actor(thread);
    let next: IteratorResult<ThreadOp, unknown>;
    try {
      const body = this.bodies[thread.index];
      // the first next() starts the body: its argument is ignored, there is no yield to receive it
      next = input instanceof ThreadFault ? body.throw(input.error) : input === undefined ? body.next() : body.next(input);
    } catch (error) {
      thread.state = 'failed';
      thread.error = error;
      this.machine.trace.record('cpu', actor, 'thread failed', { error: error instanceof Error ? error.message : String(error), unexpected: !(error instanceof WddmError) });
      if (!(error instanceof WddmError)) throw new CpuThreadError(thread, error); // surfaces from machine.run()
      return;
    }
    if (next.done) {
      thread.state = 'done';
      thread.result = next.value;
      this.machine.trace.record('cpu', actor, 'thread done', {});
      return;
    }
    this.blockOn(thread, next.value);
  }

  /**
   * Ends the thread's blocking operation number `block` with `input`: its
   * resumption is scheduled `afterNs` from now. A wake for an operation
   * already ended is ignored.
   */
  private wake(thread: CpuThread, block: number, input: WaitResult | ThreadFault, afterNs = 0): void {
    if (thread.blockNumber !== block || thread.state !== 'blocked') return;
    thread.blockNumber++;
    this.machine.scheduler.cancel(thread.timer);
    thread.timer = undefined;
    thread.resumeWith = input;
    this.machine.scheduler.after(afterNs, this.owner, 'thread-resume', { thread: thread.index }, `${this.actor(thread)} resume`);
  }

  private blockOn(thread: CpuThread, op: ThreadOp): void {
    thread.state = 'blocked';
    const block = thread.blockNumber;
    const actor = this.actor(thread);
    const fault = (error: unknown) => this.wake(thread, block, new ThreadFault(error));
    if (!op || typeof op !== 'object') { fault(new TypeError('a thread must yield cpu.wait(), cpu.sleep() or cpu.waitEvent()')); return; }
    const scheduler = this.machine.scheduler;
    if (op.op === 'sleep') {
      let durationNs: number;
      try { durationNs = v.nonNegative(op.durationNs, 'sleep(durationNs)'); } catch (error) { fault(error); return; }
      thread.blockedOn = { op: 'sleep', untilNs: scheduler.nowNs + durationNs };
      // the thread resumes when the time has passed, with the result it will see then
      this.wake(thread, block, { status: 'SUCCESS', timeNs: scheduler.nowNs + durationNs, immediate: false }, durationNs);
      return;
    }
    if (op.op === 'waitEvent') {
      let waited: { set: boolean; event: CpuEvent };
      let timeoutNs: number | undefined;
      try {
        this.os.isEventSet(this.kernel, op.hEvent); // the handle first: a bad one is the error, whatever the timeout
        timeoutNs = op.timeoutNs === undefined ? undefined : v.nonNegative(op.timeoutNs, 'waitEvent(timeoutNs)');
        waited = this.os.waitForEvent(this.kernel, op.hEvent, () => this.wake(thread, block, { status: 'SUCCESS', timeNs: scheduler.nowNs, immediate: false }));
      } catch (error) { fault(error); return; }
      if (waited.set) { this.wake(thread, block, { status: 'SUCCESS', timeNs: scheduler.nowNs, immediate: true }); return; }
      thread.blockedOn = { op: 'waitEvent', event: waited.event, timed: timeoutNs !== undefined };
      if (timeoutNs !== undefined) {
        thread.timer = scheduler.after(timeoutNs, this.owner, 'thread-event-timeout', { thread: thread.index, wait: block }, `${actor} event timeout`);
      }
      return;
    }
    if (op.op !== 'wait') {
      fault(new TypeError(`a thread yielded { op: ${JSON.stringify((op as { op: unknown }).op)} }; it must yield cpu.wait(), cpu.sleep() or cpu.waitEvent()`));
      return;
    }
    let immediate: WaitResult | undefined;
    try {
      immediate = this.os.waitForSynchronizationObjectFromCpu(this.kernel, op.args, actor, (result) => {
        thread.waits.push(result);
        if (!result.immediate) this.machine.trace.record('cpu', actor, 'thread woke', { status: result.status });
        this.wake(thread, block, result);
      }, { tag: thread, thread: actor });
    } catch (error) {
      fault(error);
      return;
    }
    if (!immediate) {
      thread.blockedOn = { op: 'wait' };
      this.machine.trace.record('cpu', actor, 'thread blocked', {});
    }
  }
}
