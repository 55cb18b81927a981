// Hardware queues and user-mode submission (NF-06, NF-17, LOG-01): D3DKMTCreateHwQueue,
// D3DKMTDestroyHwQueue, and what the OS knows of each queue.
//
// With user-mode submission the OS never sees the ring: the runtime asks
// prepareSubmission whether its commands may go in (nothing changes), the
// driver's user-mode half writes them and rings the doorbell, then submitted()
// records what went in. From then on the OS follows each queue through the
// driver's progress reports (NotifyGpuProgress, routed by src/os/interrupts.ts):
//
//   submitted ──▶ gpu.inRing += commands ──▶ each executed command: inRing − 1
//                 a wait that blocked: gpu.blocked = { fence handle, value } until it is unblocked
//
// A queue's in-flight fence references are src/os/lifetime.ts's; its log
// buffers are src/os/logs.ts's.

import { WddmError, invalid } from '../base/errors.js';
import { HWQUEUE_PRIVATE_DRIVER_DATA_BYTES, UMD_OP_WORK as OP_WORK } from '../ddi/ddi.js';
import type { DriverPort } from '../port/driver-port.js';
import type { Trace } from '../base/trace.js';
import * as v from '../base/validate.js';
import { SYNC_FLAG_BITS, UINT64_MAX, hex } from '../base/wddm.js';
import { CommandList, MAX_SUBMISSION_COMMANDS, SubmissionCommands } from './command-list.js';
import type { NativeFences } from './fences.js';
import type { Handles } from './handles.js';
import type { FenceLifetime } from './lifetime.js';
import type { NativeFenceLogs } from './logs.js';
import { rowOnAdapter } from './fence-rows.js';
import { FenceCommandList, OP_SIGNAL, OP_WAIT, QueueReferences, fenceLabel, pageVa, requireRunning, type FenceReference, type LocalFence, type OsAdapter, type OsHwQueue, type Process, type SubmissionPlan } from './objects.js';

/** What hardware queues use of the rest of the OS (the OS wires it). */
export interface HwQueuesEnvironment {
  readonly handles: Handles;
  readonly fences: NativeFences;
  readonly logs: NativeFenceLogs;
  readonly lifetime: FenceLifetime;
  readonly port: DriverPort;
  readonly trace: Trace;
}

/** What quickFenceCommand read besides the handle (one object for every call of a HwQueues: no allocation per command). */
interface QuickRead { op: 'wait' | 'signal'; value: bigint }
/** HwQueues' QuickRead, under a symbol: scratch, no state (the race explorer walks string keys). */
const QUICK = Symbol('HwQueues.quick');


export class HwQueues {
  private readonly [QUICK]: QuickRead = { op: 'signal', value: 0n };
  /** Per adapter: the driver's hHwQueue → the OS's queue (progress reports name queues by it). */
  private readonly byDriverHandle = new Map<OsAdapter, Map<number, OsHwQueue>>();

  /** SubmissionPlan.commands and .references, reused by every submission. */
  private readonly scratch = submissionScratch();

  constructor(private readonly os: HwQueuesEnvironment) {}

  /** The live queue the driver knows as `hHwQueue` on `adapter`. */
  byHandle(adapter: OsAdapter, hHwQueue: number): OsHwQueue | undefined { return this.byDriverHandle.get(adapter)?.get(hHwQueue); }

  createHwQueue(process: Process, args: unknown): { hHwQueue: number; hProgressFence?: number; adapterIndex: number; privateDriverData: Uint8Array } {
    const a = v.options(args, 'createHwQueue(args)', ['hDevice', 'engine', 'nativeProgressFence', 'name']);
    const device = this.os.handles.requireDevice(process, a.hDevice, 'hDevice');
    const adapter = device.adapter;
    const engine = a.engine === undefined ? 0 : v.integer(a.engine, 'engine', 0, adapter.engines - 1);
    const nativeProgressFence = a.nativeProgressFence === undefined ? true : v.bool(a.nativeProgressFence, 'nativeProgressFence');
    if (!adapter.nativeFence) {
      throw new WddmError('NOT_SUPPORTED', `createHwQueue: adapter "${adapter.name}" has no native fence support, so user-mode submission hardware queues cannot wait or signal on the GPU; use a kernel-mode context`,
        { parameter: 'hDevice', value: device.handle, expected: 'a device on an adapter with NativeGpuFence' });
    }
    const label = a.name === undefined ? `queue${device.queues.size + 1}` : String(a.name);
    this.os.trace.record('runtime', process.name, 'D3DKMTCreateHwQueue', { hDevice: device.handle, engine, NativeProgressFence: nativeProgressFence, name: label });
    let progress: LocalFence | undefined;
    if (nativeProgressFence) {
      const made = this.os.fences.createNativeFenceOn(process, device, 'DEFAULT', 0, 0n, new Uint8Array(64), `${label}.progress`);
      progress = process.handles.get(made.hSyncObject) as LocalFence;
    }
    const privateDriverData = new Uint8Array(HWQUEUE_PRIVATE_DRIVER_DATA_BYTES);
    const undo = () => {
      // Undone as if never made: the progress fence's handle never reached the caller, so it is not "closed" either.
      if (progress) { this.os.fences.closeLocal(progress); process.retired.delete(progress.handle); }
    };
    let created: { hHwQueue: number } | undefined;
    try {
      created = this.os.port.createHwQueue(adapter.index, {
        hDevice: device.handle, EngineOrdinal: engine, Flags: { NativeProgressFence: nativeProgressFence },
        hHwQueueProgressFence: progress ? progress.global.hGlobal : 0, ProcessSlot: process.slot, DebugName: label, PrivateDriverData: privateDriverData,
      });
    } catch (error) {
      undo();
      throw error;
    }
    if (!created) {
      undo();
      throw new WddmError('GRAPHICS_ADAPTER_STOPPED', `createHwQueue: the driver of "${adapter.name}" failed`);
    }
    const queue: OsHwQueue = {
      kind: 'hwQueue', handle: process.allocHandle(), device, hHwQueue: created.hHwQueue, engine, progress, progressValue: 0n, progressGpuVa: progress ? progress.cvGpuVa : 0n, label,
      privateDriverData, references: new QueueReferences(), gpu: { inRing: 0 },
    };
    device.queues.add(queue);
    process.handles.set(queue.handle, queue);
    let byHandle = this.byDriverHandle.get(adapter);
    if (!byHandle) this.byDriverHandle.set(adapter, (byHandle = new Map()));
    byHandle.set(queue.hHwQueue, queue);
    // LOG-01, LOG-03: the queue's two log buffers, announced to the driver.
    try {
      this.os.logs.queueCreated(queue);
    } catch (error) {
      this.destroyHwQueue(process, queue.handle);
      process.retired.delete(queue.handle);
      if (progress) process.retired.delete(progress.handle);
      throw error;
    }
    // User mode gets its own copy of the private data (its UMD hands it back at every submission).
    return { hHwQueue: queue.handle, hProgressFence: progress?.handle, adapterIndex: adapter.index, privateDriverData: privateDriverData.slice() };
  }

  destroyHwQueue(process: Process, hHwQueue: unknown): void {
    const queue = this.os.handles.resolve(process, hHwQueue, 'hwQueue', 'hHwQueue');
    const adapter = queue.device.adapter;
    this.os.trace.record('runtime', process.name, 'D3DKMTDestroyHwQueue', { hHwQueue: queue.handle });
    this.os.logs.queueDestroying(queue);
    if (adapter.state === 'running' && !queue.device.removed) this.os.port.destroyHwQueue(adapter.index, { hHwQueue: queue.hHwQueue });
    this.os.logs.queueDestroyed(queue);
    this.os.lifetime.queueGone(queue); // its unexecuted commands release their fences
    this.forgetQueue(queue);
    queue.device.queues.delete(queue);
    process.handles.delete(queue.handle);
    process.retired.add(queue.handle);
    if (queue.progress) this.os.fences.closeLocal(queue.progress);
  }

  /** The OS forgets a queue the driver no longer has (destroyed, or its device removed). */
  forgetQueue(queue: OsHwQueue): void {
    const byHandle = this.byDriverHandle.get(queue.device.adapter);
    if (byHandle?.get(queue.hHwQueue) === queue) byHandle.delete(queue.hHwQueue);
    queue.gpu = { inRing: 0 };
  }

  /**
   * User-mode submission, checked (NF-06, NF-17): what user mode may write into the queue's ring.
   * Changes nothing: the runtime hands `commands` to the driver's user-mode half, which writes the
   * ring and rings the doorbell, and then tells the OS with submitted() (the OS never sees the ring).
   * `commands` is an array of { wait } / { signal } / { work } objects, or a CommandList (its shapes
   * were checked as it was recorded: what is left is what depends on the OS's state).
   */
  prepareSubmission(process: Process, args: unknown): SubmissionPlan {
    const a = v.options(args, 'submit(args)', ['hHwQueue', 'commands']);
    const queue = this.os.handles.resolve(process, a.hHwQueue, 'hwQueue', 'hHwQueue');
    const device = queue.device;
    if (device.removed) throw new WddmError('DEVICE_REMOVED', `submit: hardware queue ${hex(queue.handle)} belongs to a removed device`);
    requireRunning(device.adapter, 'hHwQueue');
    // What the UMD writes (its argument, the driver's during the call only: the columns are reused by the next
    // submission) and the OS's in-flight references (columns, no object per command).
    const out = this.scratch.commands();
    out.count = 0;
    const references = this.scratch.references();
    references.reset();
    const described: string[] = [];
    if (a.commands instanceof CommandList) this.checkList(process, queue, a.commands, out, references, described);
    else this.checkObjects(process, queue, a.commands, out, references, described);
    let progressValue: bigint | undefined;
    if (queue.progress) {
      progressValue = queue.progressValue + 1n;
      out.add(OP_SIGNAL, queue.progressGpuVa, progressValue, queue.progress.handle);
      references.push(queue.progress, OP_SIGNAL, progressValue);
      if (this.os.trace.enabled) described.push(`signal(${queue.progress.global.label}, ${progressValue})`);
    }
    return { process, queue, adapterIndex: device.adapter.index, commands: out, references, described, progressValue };
  }

  /** The object form: each command's shape, then what depends on the OS's state (once per run of one handle and op). */
  private checkObjects(process: Process, queue: OsHwQueue, commands: unknown, out: SubmissionCommands, references: FenceCommandList, described: string[]): void {
    const list = v.array(commands, 'commands', 1, MAX_SUBMISSION_COMMANDS);
    const tracing = this.os.trace.enabled;
    // A fence's CurrentValue VA is derived from its mappings (LocalFence.cvGpuVa): once per run of commands naming it.
    let lastLocal: LocalFence | undefined;
    let lastGpuVa = 0n;
    let lastOp: 'wait' | 'signal' | undefined;
    for (let i = 0; i < list.length; i++) {
      const raw = list[i];
      // The usual shape is read without building parameter paths; any other takes the full check.
      const quick = this[QUICK];
      let local = quickFenceCommand(process, raw, quick, lastLocal);
      let op = quick.op, value = quick.value;
      if (local === undefined) {
        const c = v.options(raw, `commands[${i}]`, ['wait', 'signal', 'work']);
        const keys = Object.keys(c);
        if (keys.length !== 1) throw invalid(`commands[${i}]`, raw, 'exactly one of { wait }, { signal }, { work }');
        if (c.work !== undefined) {
          const checked = v.workCommand(c.work, `commands[${i}].work`);
          out.add(OP_WORK, 0n, checked.command.value, 0);
          if (tracing) described.push(checked.described);
          continue;
        }
        op = c.wait !== undefined ? 'wait' : 'signal';
        const body = v.options(c[op], `commands[${i}].${op}`, ['hSyncObject', 'value']);
        local = this.os.handles.resolve(process, body.hSyncObject, 'syncObject', `commands[${i}].${op}.hSyncObject`);
        value = v.u64(body.value, `commands[${i}].${op}.value`);
      }
      const code = op === 'wait' ? OP_WAIT : OP_SIGNAL;
      // The checks depend only on the handle and the op: a run of commands naming the same one passed them already.
      if (local !== lastLocal || op !== lastOp) {
        checkFenceCommand(queue, local, op, i);
        if (local !== lastLocal) { lastLocal = local; lastGpuVa = local.cvGpuVa; }
        lastOp = op;
      }
      out.add(code, lastGpuVa, value, local.handle);
      references.push(local, code, value);
      if (tracing) described.push(`${op}(${local.global.label}, ${value})`);
    }
  }

  /** A command list: its shapes were checked as it was recorded; what depends on the OS's state is checked once per run of one handle and op. */
  private checkList(process: Process, queue: OsHwQueue, list: CommandList, out: SubmissionCommands, references: FenceCommandList, described: string[]): void {
    if (list.process !== process) throw invalid('commands', 'a command list of another process', `a command list of process "${process.name}" (its createCommandList)`);
    const count = list.length;
    if (count < 1) {
      throw new WddmError('INVALID_PARAMETER', `commands is an empty command list; expected 1 to ${MAX_SUBMISSION_COMMANDS} commands`,
        { parameter: 'commands', value: 0, expected: `1 to ${MAX_SUBMISSION_COMMANDS} commands` });
    }
    const tracing = this.os.trace.enabled;
    const { ops, handles, values } = list;
    out.ops.set(ops.subarray(0, count));
    out.values.set(values.subarray(0, count));
    out.handles.set(handles.subarray(0, count));
    out.count = count;
    const gpuVas = out.gpuVas;
    const adapter = queue.device.adapter;
    // What the run's commands name: a LocalFence, or the core id of a row (src/os/fence-rows.ts), whose checks and
    // GPU VA come from the row and the core, so that submitting through it makes no object (FenceReference).
    let lastFence: FenceReference | undefined;
    let lastGpuVa = 0n;
    let lastHandle = -1, lastOp = -1; // -1: no handle yet (a u32 column never holds it)
    // A run at a time: the commands naming one handle with one op in a row share the checks and the GPU VA.
    for (let i = 0; i < count;) {
      const code = ops[i];
      if (code === OP_WORK) {
        // The columns are the list's public arrays: what was written into them around its methods is refused here.
        if (values[i] > MAX_WORK_NS) throw tampered(i, `a work duration of ${values[i]} ns`);
        gpuVas[i] = 0n;
        if (tracing) described.push(`work(${list.durationsNs[i]}ns)`);
        i++;
        continue;
      }
      if (code !== OP_WAIT && code !== OP_SIGNAL) throw tampered(i, `op code ${code}`);
      const handle = handles[i];
      let end = i + 1;
      while (end < count && handles[end] === handle && ops[end] === code) end++;
      const op = code === OP_WAIT ? 'wait' : 'signal';
      if (handle !== lastHandle || code !== lastOp) {
        const token = process.handles.rowToken(handle);
        const coreFence = token !== 0 ? rowCommandFence(adapter, token, code) : -1;
        let fence: FenceReference;
        if (coreFence >= 0) fence = coreFence;
        else {
          const local = handle === lastHandle && typeof lastFence === 'object' ? lastFence : this.os.handles.resolve(process, handle, 'syncObject', `commands[${i}].${op}.hSyncObject`);
          checkFenceCommand(queue, local, op, i);
          fence = local;
        }
        if (fence !== lastFence) {
          lastFence = fence;
          lastGpuVa = typeof fence === 'number' ? pageVa(process.gpuMappings.get(adapter.index), adapter.core.fenceCurrentValueAddress(fence)) : fence.cvGpuVa;
        }
        lastHandle = handle;
        lastOp = code;
      }
      if (end - i < 16) for (let k = i; k < end; k++) gpuVas[k] = lastGpuVa;
      else gpuVas.fill(lastGpuVa, i, end);
      references.pushRange(lastFence!, handle, code, values, i, end);
      if (tracing) for (let k = i; k < end; k++) described.push(`${op}(${fenceLabel(lastFence!)}, ${values[k]})`);
      i = end;
    }
  }

  /**
   * The driver's user-mode half wrote `plan`'s commands into the ring: each command holds its fence
   * until it executed (src/os/lifetime.ts), the timeline records them as queued (LOG-08).
   */
  /** Observers of the driver port (the contract checker) hear what user mode submitted, command by command. */
  private tellObservers(plan: SubmissionPlan): void {
    const { ops, handles, values, count } = plan.commands;
    const commands = [];
    for (let i = 0; i < count; i++) commands.push({ op: OP_NAMES[ops[i]] ?? 'work', handle: ops[i] === OP_WORK ? 0 : handles[i], value: values[i] });
    this.os.port.userModeSubmitted({ adapterIndex: plan.adapterIndex, adapter: plan.queue.device.adapter.name, hHwQueue: plan.queue.hHwQueue, commands });
  }

  submitted(plan: SubmissionPlan): { progressValue?: bigint } {
    const { queue, references, progressValue } = plan;
    const rows = queue.device.adapter.rowReferences;
    for (let r = 0; r < references.runCount; r++) {
      const fence = references.runLocals[r];
      if (typeof fence === 'number') rows.markUsed(fence);
      else fence.usedByGpu = true;
    }
    queue.gpu.inRing += plan.commands.count;
    if (this.os.port.observed) this.tellObservers(plan);
    this.os.lifetime.submitted(queue, references);
    this.os.logs.recordQueued(queue, references);
    if (progressValue !== undefined) queue.progressValue = progressValue;
    return { progressValue };
  }
}

const MAX_WORK_NS = BigInt(v.MAX_VIRTUAL_TIME_NS);
const OP_NAMES = ['wait', 'signal', 'work'] as const;

/** A list command no recording method writes (its columns were written directly). */
function tampered(i: number, what: string): WddmError {
  return new WddmError('INVALID_PARAMETER', `commands[${i}] holds ${what}, which no recording method writes: the command list's columns were written around signal() / wait() / work(); reset() it and record again`,
    { parameter: `commands[${i}]`, expected: 'a command recorded by the list\'s methods' });
}

/**
 * The core id of the row a handle's `token` names when a wait or signal (`code`) through it passes checkFenceCommand's
 * checks on `adapter` (a row is a native fence: its adapter and flags are what is left to check); -1 when it does not
 * (the caller then takes the object path, which throws the error).
 */
function rowCommandFence(adapter: OsAdapter, token: number, code: number): number {
  const coreFence = rowOnAdapter(token, adapter.index);
  if (coreFence < 0) return -1;
  const flags = adapter.rows.flagsOf(coreFence);
  return (flags & (code === OP_WAIT ? NO_WAIT : NO_SIGNAL)) === 0 ? coreFence : -1;
}
const NO_WAIT = 1 << SYNC_FLAG_BITS.noWait, NO_SIGNAL = 1 << SYNC_FLAG_BITS.noSignal;

/** What a wait or signal through `local` must be on `queue` (the same for every command of a run of one handle and op). */
function checkFenceCommand(queue: OsHwQueue, local: LocalFence, op: 'wait' | 'signal', i: number): void {
  const adapter = queue.device.adapter;
  if (local.global.kind === 'monitored') {
    throw new WddmError('INVALID_PARAMETER', `commands[${i}].${op}.hSyncObject ${hex(local.handle)} is a monitored fence: it has no MonitoredValue for the CMP, so hardware queues do not ${op} on it; use a kernel-mode context (submitCommand / ${op === 'wait' ? 'waitForSynchronizationObjectFromGpu' : 'fenceWrite or signalSynchronizationObjectFromGpu'})`,
      { parameter: `commands[${i}].${op}.hSyncObject`, value: local.handle, expected: 'a native fence' });
  }
  if (local.global.adapter !== adapter) {
    throw new WddmError('INVALID_PARAMETER', `commands[${i}].${op}.hSyncObject ${hex(local.handle)} lives on adapter "${local.global.adapter.name}", not on the queue's "${adapter.name}"`,
      { parameter: `commands[${i}].${op}.hSyncObject`, value: local.handle, expected: `a fence opened on "${adapter.name}"` });
  }
  if (op === 'signal' && local.global.hasFlag('noSignal')) throw new WddmError('INVALID_PARAMETER', `commands[${i}].signal.hSyncObject ${hex(local.handle)} was created with flags.noSignal`);
  if (op === 'wait' && local.global.hasFlag('noWait')) throw new WddmError('INVALID_PARAMETER', `commands[${i}].wait.hSyncObject ${hex(local.handle)} was created with flags.noWait`);
}

const hasOwn = Object.prototype.hasOwnProperty;


/**
 * A valid { signal } / { wait } command read as the full check reads it; undefined for any other shape (the full check then runs).
 * `last`: the handle the previous command named (its table lookup is not repeated: nothing changes during a submission's check).
 */
function quickFenceCommand(process: Process, raw: unknown, into: QuickRead, last: LocalFence | undefined): LocalFence | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  const c = raw as Record<string, unknown>;
  let own = 0;
  for (const key in c) {
    if (!hasOwn.call(c, key)) continue;
    if (key !== 'signal' && key !== 'wait') return undefined;
    own++;
  }
  if (own !== 1 || c.work !== undefined) return undefined;
  const op = c.wait !== undefined ? 'wait' : 'signal';
  const body = c[op] as Record<string, unknown> | undefined;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  for (const key in body) if (key !== 'hSyncObject' && key !== 'value' && hasOwn.call(body, key)) return undefined;
  const handle = body.hSyncObject;
  let local: LocalFence;
  if (last !== undefined && handle === last.handle) local = last;
  else {
    if (typeof handle !== 'number' || !Number.isInteger(handle) || handle <= 0) return undefined;
    const object = process.handles.get(handle);
    if (object === undefined || object.kind !== 'syncObject') return undefined;
    local = object;
  }
  const raw64 = body.value;
  let value: bigint;
  if (typeof raw64 === 'bigint') {
    if (raw64 < 0n || raw64 > UINT64_MAX) return undefined;
    value = raw64;
  } else if (typeof raw64 === 'number' && Number.isSafeInteger(raw64) && raw64 >= 0) {
    value = BigInt(raw64);
  } else {
    return undefined;
  }
  into.op = op;
  into.value = value;
  return local;
}

/**
 * HwQueues.scratch: the commands handed to the UMD and the in-flight references, reused by every submission (an
 * argument is the driver's during the call only, docs/DRIVERS.md). Kept behind a function, so a state digest that
 * walks the OS's objects (the race explorer) does not see it.
 */
function submissionScratch(): { commands(): SubmissionCommands; references(): FenceCommandList } {
  const commands = new SubmissionCommands();
  const references = new FenceCommandList();
  return Object.freeze({ commands: () => commands, references: () => references });
}
