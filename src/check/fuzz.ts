// A seeded random test of fence lifetime and handle aliasing (issue 15).
//
// Each sequence is one fresh machine (two adapters, two processes) and a run of
// random calls — create, open, share, duplicate, close, signal (with repeated
// and lower values), wait and wait-any (with repeated handles), destroy, GPU
// submit, queue create/destroy, device removal, garbage handles, virtual time —
// all drawn from ONE seed. After every call it checks:
//
//   1. nothing but a WddmError is ever thrown;
//   2. a call that threw changed nothing (a digest of the machine before and after);
//   3. no fence value moves down unless the rules allow it: a CPU signal with
//      AllowFenceRewind, or a GPU rewind the OS reported (src/os/gpu-rewind.ts);
//   4. no fence holds a value nothing signalled it to (each fence signals values
//      from its own range, so a write through a reused slot shows), and the GPU
//      never page-faults (nothing it was given is unmapped under it);
//   5. whenever the machine is quiet, no CPU waiter whose condition holds is
//      still waiting, no adapter bug-checked, no queue waits for a destroyed
//      fence that nothing queued can signal (a silent hang), and the OS counts
//      no in-flight reference on a queue whose ring is empty;
//   6. at the end, once every handle and queue is gone and the machine is quiet,
//      no fence storage is left (deferred closes all finished).
//
// A failure names the sequence's seed; fuzzFenceLifetime({ seed, sequences: 1,
// onAction }) replays exactly that sequence, printing every call.

import { createMachineSync, type Machine } from '../machine/machine.js';
import type { RuntimeProcess } from '../user/runtime.js';
import type { OsHwQueue } from '../os/dxgkrnl.js';
import { WddmError } from '../base/errors.js';
import { Random } from '../base/rng.js';
import { UINT64_MAX } from '../base/wddm.js';

export interface FuzzOptions {
  /** Seed of the first sequence; sequence i runs with seed + i (default 1). */
  seed?: number;
  /** Sequences to run, each on a fresh machine (default 200). */
  sequences?: number;
  /** Random calls per sequence (default 100). */
  steps?: number;
  /** Called with every call of every sequence, in order (for a replay). */
  onAction?: (line: string) => void;
}

export interface FuzzFailure {
  /** The sequence's seed: { seed, sequences: 1, steps } replays it. */
  seed: number;
  /** Calls per sequence of the run that found it. */
  steps: number;
  /** Index of the call that broke a rule (steps + 1 for the final teardown). */
  step: number;
  action: string;
  problem: string;
}

export interface FuzzReport {
  firstSeed: number;
  sequences: number;
  /** Calls made, and of those, refused with a WddmError. */
  calls: number;
  refused: number;
  /** Calls made per action kind. */
  actions: Record<string, number>;
  /** Rule events seen: GPU rewinds, adapter resets for waits nothing could satisfy, deferred closes. */
  gpuRewinds: number;
  orphanedWaits: number;
  deferredCloses: number;
  failures: FuzzFailure[];
}

const FENCE_RANGE_BITS = 20n; // fence n signals values in [n << 20, (n + 1) << 20)

interface ModelFence { id: number; name: string; base: bigint; allowed: Set<bigint>; lastSeen?: bigint; cross: boolean; shared: boolean }
interface Handle { p: number; h: number; fence: ModelFence; adapter: number }
interface NtHandle { p: number; h: number; fence: ModelFence }
interface Queue { p: number; adapter: number; h: number }

class Sequence {
  readonly random: Random;
  readonly machine: Machine;
  readonly processes: RuntimeProcess[];
  readonly devices: number[][] = [];   // [process][adapter] → hDevice
  readonly fences: ModelFence[] = [];
  handles: Handle[] = [];
  nts: NtHandle[] = [];
  queues: Queue[] = [];
  /** Fences a call of this step may lower (CPU rewind, GPU rewind). */
  readonly mayLower = new Set<ModelFence>();
  /** The machine's digest before the API call being made (see mark()). */
  before = '';
  private nextFence = 1;

  constructor(readonly seed: number) {
    this.random = new Random(seed);
    const limits = { fences: 40, waitBlocks: 128, waitersPerFence: 4, ringEntries: 10, queues: 8 };
    this.machine = createMachineSync({
      seed, trace: false,
      adapters: [
        { name: 'gpu0', engines: 2, limits, interrupts: { payload: seed % 3 === 0 ? 'noList' : 'list' } },
        { name: 'gpu1', engines: 1, limits, caps: { optimizedNativeFenceSignaledInterrupt: seed % 2 === 1 } },
      ],
    });
    this.processes = [this.machine.createProcess('A'), this.machine.createProcess('B')];
    for (const p of this.processes) this.devices.push([0, 1].map((a) => p.createDevice({ hAdapter: p.openAdapter(a) })));
    this.machine.os.gpuRewinds.onRewind((r) => { const f = this.fenceNamed(r.fence); if (f) this.mayLower.add(f); });
  }

  /** Before each further API call of a compound action: a refusal is checked against this point. */
  mark(): void { this.before = digest(this); }

  fenceNamed(label: string): ModelFence | undefined {
    const match = /^f(\d+)/.exec(label);
    return match ? this.fences.find((f) => f.id === Number(match[1])) : undefined;
  }

  pick<T>(list: readonly T[]): T | undefined { return list.length ? list[this.random.below(list.length)] : undefined; }
  chance(p: number): boolean { return this.random.next() < p; }
  /** A value in the fence's own range near `from`. */
  valueNear(fence: ModelFence, from: bigint | undefined, spread: number): bigint {
    const start = from === undefined || from === UINT64_MAX ? fence.base : from;
    const offset = BigInt(this.random.below(spread + 1)) - BigInt(Math.floor(spread / 4));
    let v = start + offset;
    if (v < fence.base) v = fence.base;
    if (v >= fence.base + (1n << FENCE_RANGE_BITS)) v = fence.base + (1n << FENCE_RANGE_BITS) - 1n;
    return v;
  }
  handlesOf(p: number): Handle[] { return this.handles.filter((x) => x.p === p); }
  /** A handle number that is no live handle of `p`: a closed one, another process's, another kind, or junk. */
  badHandle(p: number): number {
    const other = this.pick(this.handlesOf(1 - p));
    const choices = [0x4000_0000 + this.random.below(100), -1, 0, other?.h ?? 7, this.devices[p][0], this.queues.find((q) => q.p === p)?.h ?? 3];
    return this.pick(choices)!;
  }
  newFence(cross: boolean, shared: boolean): ModelFence {
    const id = this.nextFence++;
    const base = BigInt(id) << FENCE_RANGE_BITS;
    const fence: ModelFence = { id, name: `f${id}`, base, allowed: new Set([base]), cross, shared };
    this.fences.push(fence);
    return fence;
  }
}

interface Plan { kind: string; text: string; call: () => void }

/** The random calls, with their weights. Each returns what it will do and the call itself (which may throw). */
const ACTIONS: { kind: string; weight: number; plan: (s: Sequence) => Plan | undefined }[] = [
  { kind: 'create', weight: 8, plan: (s) => {
    const p = s.random.below(2), adapter = s.random.below(2);
    const cross = s.chance(0.2), shared = cross || s.chance(0.4);
    const fence = s.newFence(cross, shared);
    const flags = { ...(shared ? { shared: true } : {}), ...(cross ? { crossAdapter: true } : {}), ...(s.chance(0.1) ? { noSignalMaxValueOnTdr: true } : {}) };
    return { kind: 'create', text: `${s.processes[p].name}.createNativeFence(${fence.name} on gpu${adapter}, ${JSON.stringify(flags)})`, call: () => {
      const made = s.processes[p].createNativeFence({ hDevice: s.devices[p][adapter], initialValue: fence.base, flags, name: fence.name });
      s.handles.push({ p, h: made.hSyncObject, fence, adapter });
    } };
  } },
  { kind: 'share', weight: 6, plan: (s) => {
    const from = s.pick(s.handles.filter((x) => x.fence.shared)) ?? s.pick(s.handles);
    if (!from) return undefined;
    const to = s.random.below(2);
    const adapter = from.fence.cross && s.chance(0.5) ? 1 - from.adapter : s.chance(0.9) ? from.adapter : 1 - from.adapter;
    const keep = s.chance(0.3);
    const P = s.processes;
    return { kind: 'share', text: `${P[from.p].name} shares ${from.fence.name}; ${P[to].name} opens it on gpu${adapter}${keep ? ' (keeps the NT handle)' : ''}`, call: () => {
      // Several calls: the model follows each one that worked, and s.mark() before the next one
      // makes "a refused call changed nothing" apply to that call alone.
      let held: NtHandle = { p: from.p, h: P[from.p].shareObject(from.h), fence: from.fence };
      s.nts.push(held);
      if (to !== from.p) {
        s.mark();
        const copy: NtHandle = { p: to, h: P[from.p].duplicateHandle(held.h, P[to]), fence: from.fence };
        s.nts.push(copy);
        s.mark();
        P[from.p].closeHandle(held.h);
        s.nts = s.nts.filter((x) => x !== held);
        held = copy;
      }
      s.mark();
      const opened = P[to].openNativeFenceFromNtHandle({ hNtHandle: held.h, hDevice: s.devices[to][adapter] }).hSyncObject;
      s.handles.push({ p: to, h: opened, fence: from.fence, adapter });
      if (keep) return;
      s.mark();
      P[held.p].closeHandle(held.h);
      s.nts = s.nts.filter((x) => x !== held);
    } };
  } },
  { kind: 'closeNt', weight: 3, plan: (s) => {
    const nt = s.pick(s.nts);
    if (!nt) return undefined;
    return { kind: 'closeNt', text: `${s.processes[nt.p].name}.closeHandle(NT ${nt.fence.name})`, call: () => {
      s.processes[nt.p].closeHandle(nt.h);
      s.nts = s.nts.filter((x) => x !== nt);
    } };
  } },
  { kind: 'signal', weight: 10, plan: (s) => {
    const p = s.random.below(2);
    const mine = s.handlesOf(p);
    if (!mine.length) return undefined;
    const count = 1 + s.random.below(3);
    const picked: Handle[] = [];
    for (let i = 0; i < count; i++) picked.push(s.chance(0.15) && picked.length ? picked[0] : s.pick(mine)!);
    const rewind = s.chance(0.2);
    const values = picked.map((x) => s.valueNear(x.fence, x.fence.lastSeen, 6));
    const objects = picked.map((x) => (s.chance(0.05) ? s.badHandle(p) : x.h));
    return { kind: 'signal', text: `${s.processes[p].name}.signal(${picked.map((x, i) => `${x.fence.name}=${values[i]}`).join(', ')}${rewind ? ', allowFenceRewind' : ''})`, call: () => {
      picked.forEach((x, i) => { x.fence.allowed.add(values[i]); if (rewind) s.mayLower.add(x.fence); });
      s.processes[p].signal({ objects, values, ...(rewind ? { flags: { allowFenceRewind: true } } : {}) });
    } };
  } },
  { kind: 'wait', weight: 10, plan: (s) => {
    const p = s.random.below(2);
    const mine = s.handlesOf(p);
    if (!mine.length) return undefined;
    const count = 1 + s.random.below(3);
    const picked: Handle[] = [];
    for (let i = 0; i < count; i++) picked.push(s.chance(0.2) && picked.length ? s.pick(picked)! : s.pick(mine)!);
    const values = picked.map((x) => s.valueNear(x.fence, x.fence.lastSeen, 5));
    const waitAny = s.chance(0.5);
    const timeoutNs = s.pick([undefined, undefined, 0, 1000, 50_000]);
    const withEvent = s.chance(0.25);
    const P = s.processes[p];
    return { kind: 'wait', text: `${P.name}.${withEvent ? 'waitWithEvent' : 'waitAsync'}(${picked.map((x, i) => `${x.fence.name}>=${values[i]}`).join(waitAny ? ' | ' : ' & ')}${timeoutNs === undefined ? '' : `, timeout ${timeoutNs}`})`, call: () => {
      const args = { objects: picked.map((x) => x.h), values, waitAny, ...(timeoutNs === undefined ? {} : { timeoutNs }) };
      if (withEvent) {
        const hAsyncEvent = P.createEvent('fuzz');
        s.mark();
        P.waitWithEvent({ ...args, hAsyncEvent });
      }
      else void P.waitAsync(args, 'fuzz');
    } };
  } },
  { kind: 'destroy', weight: 6, plan: (s) => {
    const x = s.pick(s.handles);
    if (!x) return undefined;
    return { kind: 'destroy', text: `${s.processes[x.p].name}.destroySynchronizationObject(${x.fence.name} on gpu${x.adapter})`, call: () => {
      s.processes[x.p].destroySynchronizationObject(x.h);
      s.handles = s.handles.filter((y) => y !== x);
    } };
  } },
  { kind: 'recycle', weight: 3, plan: (s) => {
    // The hazard of issue 15 on purpose: destroy a fence GPU work may still name, then make a fence at once
    // (the freed slot would be the next one taken).
    const inFlight = (h: Handle) => { try { return s.machine.inspectFence(s.processes[h.p], h.h).gpuSignalsInFlight > 0; } catch { return false; } };
    const x = s.pick(s.handles.filter((h) => !h.fence.shared && inFlight(h))) ?? s.pick(s.handles.filter((h) => !h.fence.shared)) ?? s.pick(s.handles);
    if (!x) return undefined;
    const fence = s.newFence(false, false);
    return { kind: 'recycle', text: `${s.processes[x.p].name}.destroySynchronizationObject(${x.fence.name}); createNativeFence(${fence.name} on gpu${x.adapter})`, call: () => {
      s.processes[x.p].destroySynchronizationObject(x.h);
      s.handles = s.handles.filter((y) => y !== x);
      s.mark();
      const made = s.processes[x.p].createNativeFence({ hDevice: s.devices[x.p][x.adapter], initialValue: fence.base, name: fence.name });
      s.handles.push({ p: x.p, h: made.hSyncObject, fence, adapter: x.adapter });
    } };
  } },
  { kind: 'createQueue', weight: 3, plan: (s) => {
    const p = s.random.below(2), adapter = s.random.below(2);
    const engine = s.random.below(adapter === 0 ? 2 : 1);
    return { kind: 'createQueue', text: `${s.processes[p].name}.createHwQueue(gpu${adapter}, engine ${engine})`, call: () => {
      const made = s.processes[p].createHwQueue({ hDevice: s.devices[p][adapter], engine, nativeProgressFence: s.chance(0.5) });
      s.queues.push({ p, adapter, h: made.hHwQueue });
    } };
  } },
  { kind: 'destroyQueue', weight: 1, plan: (s) => {
    const q = s.pick(s.queues);
    if (!q) return undefined;
    return { kind: 'destroyQueue', text: `${s.processes[q.p].name}.destroyHwQueue(gpu${q.adapter})`, call: () => {
      s.processes[q.p].destroyHwQueue(q.h);
      s.queues = s.queues.filter((x) => x !== q);
    } };
  } },
  { kind: 'submit', weight: 12, plan: (s) => {
    const q = s.pick(s.queues);
    if (!q) return undefined;
    const usable = s.handles.filter((x) => x.p === q.p && (x.adapter === q.adapter || s.chance(0.05)));
    const count = 1 + s.random.below(4);
    const commands: ({ wait: { hSyncObject: number; value: bigint } } | { signal: { hSyncObject: number; value: bigint } } | { work: { durationNs: number } })[] = [];
    const text: string[] = [];
    const signalled: [ModelFence, bigint][] = [];
    for (let i = 0; i < count; i++) {
      const x = s.pick(usable);
      const r = s.random.below(10);
      if (!x || r < 2) { const d = 100 + s.random.below(5000); commands.push({ work: { durationNs: d } }); text.push(`work ${d}`); continue; }
      const op = r < 5 ? 'wait' : 'signal';
      const value = s.valueNear(x.fence, x.fence.lastSeen, op === 'wait' ? 4 : 8);
      if (op === 'signal') signalled.push([x.fence, value]);
      commands.push(op === 'wait' ? { wait: { hSyncObject: x.h, value } } : { signal: { hSyncObject: x.h, value } });
      text.push(`${op} ${x.fence.name}=${value}`);
    }
    return { kind: 'submit', text: `${s.processes[q.p].name}.submit(gpu${q.adapter}: ${text.join(', ')})`, call: () => {
      for (const [fence, value] of signalled) fence.allowed.add(value);
      s.processes[q.p].submit({ hHwQueue: q.h, commands });
    } };
  } },
  { kind: 'run', weight: 10, plan: (s) => {
    const all = s.chance(0.35);
    const until = s.machine.nowNs + s.random.below(20_000);
    return { kind: 'run', text: all ? 'machine.run()' : `machine.run(${until})`, call: () => { s.machine.run(all ? undefined : until); } };
  } },
  { kind: 'removeDevice', weight: 1, plan: (s) => {
    const adapter = s.random.below(2);
    return { kind: 'removeDevice', text: `machine.removeDevice(gpu${adapter}); new devices`, call: () => {
      s.machine.removeDevice(adapter, 'fuzz');
      // the model's devices are gone: new ones (old handles and queues stay; their GPU calls fail with DEVICE_REMOVED)
      s.processes.forEach((p, i) => { s.mark(); s.devices[i][adapter] = p.createDevice({ hAdapter: p.openAdapter(adapter) }); });
    } };
  } },
  { kind: 'junk', weight: 3, plan: (s) => {
    const p = s.random.below(2);
    const P = s.processes[p];
    const bad = s.badHandle(p);
    const calls: [string, () => void][] = [
      [`signal(bad ${bad})`, () => P.signal({ objects: [bad], values: [1n] })],
      [`waitAsync(bad ${bad})`, () => { void P.waitAsync({ objects: [bad], values: [1n] }); }],
      [`destroySynchronizationObject(bad ${bad})`, () => P.destroySynchronizationObject(bad)],
      [`closeHandle(bad ${bad})`, () => P.closeHandle(bad)],
      [`submit(bad queue ${bad})`, () => { P.submit({ hHwQueue: bad, commands: [{ work: { durationNs: 1 } }] }); }],
      ['signal(mismatched arrays)', () => P.signal({ objects: s.handlesOf(p).slice(0, 2).map((x) => x.h), values: [] })],
      ['waitAsync(33 objects)', () => { void P.waitAsync({ objects: Array.from({ length: 33 }, () => bad), values: Array.from({ length: 33 }, () => 1n) }); }],
    ];
    const [text, call] = s.pick(calls)!;
    return { kind: 'junk', text: `${P.name}.${text}`, call };
  } },
];

const TOTAL_WEIGHT = ACTIONS.reduce((n, a) => n + a.weight, 0);

/**
 * Commands in a hardware queue's ring, read from the GPU side (the simulated GPU's core, through
 * the driver that owns the queue): the truth the OS's bookkeeping is checked against.
 */
function ringLength(m: Machine, queue: OsHwQueue): number {
  const adapter = m.adapters[queue.device.adapter.index];
  const coreQueue = adapter.driver.coreQueueOf?.(queue.hHwQueue);
  return coreQueue === undefined ? 0 : adapter.core.queuePending(coreQueue);
}

/** What a failed call must not change: counters, handle tables, queues, waiters, values, storage. */
function digest(s: Sequence): string {
  const m = s.machine;
  const parts: string[] = [];
  const summary = m.summary();
  parts.push(JSON.stringify(summary.adapters), JSON.stringify(summary.os), String(summary.pendingWaiters), String(m.scheduler.pending), String(m.trace.events.length));
  for (const p of s.processes) parts.push(`${p.kernel.handles.size}/${p.kernel.retired.size}/${p.kernel.ntHandles.size}`);
  for (const x of s.handles) {
    try {
      const i = m.inspectFence(s.processes[x.p], x.h);
      parts.push(`${x.h}:${i.currentValue}:${i.monitoredValue}:${i.cpuWaiters}:${i.gpuWaitsInFlight}:${i.gpuSignalsInFlight}:${i.openHandles}`);
    } catch (error) { parts.push(`${x.h}:${(error as Error).message}`); }
  }
  for (const q of s.queues) {
    try {
      const queue = m.os.handles.resolve(s.processes[q.p].kernel, q.h, 'hwQueue', 'hHwQueue');
      parts.push(`q${q.h}:${ringLength(m, queue)}:${queue.references.pendingCount}`);
    } catch (error) { parts.push(`q${q.h}:${(error as Error).message}`); }
  }
  return parts.join('|');
}

/** Rules 3 and 4 for every fence with a live handle. */
function checkValues(s: Sequence): string | undefined {
  const seen = new Set<ModelFence>();
  for (const x of s.handles) {
    if (seen.has(x.fence)) continue;
    seen.add(x.fence);
    let value: bigint;
    try { value = s.processes[x.p].readFenceValue(x.h); } catch (error) { return `reading ${x.fence.name} through a live handle failed: ${(error as Error).message}`; }
    const f = x.fence;
    if (value !== UINT64_MAX && !f.allowed.has(value)) return `${f.name} holds ${value}, a value nothing signalled it to (a write through a reused slot?)`;
    if (f.lastSeen !== undefined && value < f.lastSeen && !s.mayLower.has(f)) return `${f.name} moved down from ${f.lastSeen} to ${value} with no CPU rewind and no reported GPU rewind`;
    f.lastSeen = value;
  }
  return undefined;
}

/** No GPU page fault: the sequences write no bad VA, so one means the OS unmapped storage a command still named. */
function checkFaults(s: Sequence): string | undefined {
  const fault = s.machine.trace.events.find((e) => e.kind === 'fault' && e.name === 'GPU fault');
  if (fault) return `GPU page fault: ${String(fault.args.message)} (the OS unmapped fence storage a submitted command still named)`;
  const untracked = s.machine.trace.events.find((e) => e.kind === 'fault' && e.name === 'GPU executed a command the OS never saw submitted');
  return untracked ? `the OS's in-flight bookkeeping lost a command: ${JSON.stringify(untracked.args)}` : undefined;
}

/** Rule 5, when the machine is quiet. */
function checkQuiet(s: Sequence): string | undefined {
  const m = s.machine;
  if (m.summary().bugChecks.length) return `bug check: ${m.summary().bugChecks.map((b) => `${b.adapter}: ${b.code}: ${b.message}`).join('; ')}`;
  for (const w of m.os.waits.pendingWaiterList()) {
    const reached = w.waits.map((x) => !x.fence.destroyed && x.fence.currentValue() >= x.value);
    if (w.mode === 'all' ? reached.every(Boolean) : reached.some(Boolean)) {
      return `lost wakeup: waiter ${w.label} (${w.mode}) still waits for ${w.waits.map((x) => `${x.fence.label}>=${x.value} (now ${x.fence.currentValue()})`).join(', ')}`;
    }
  }
  // The OS's in-flight references follow the rings: an empty ring holds none.
  for (const adapter of m.os.adapters) {
    if (adapter.state !== 'running') continue;
    for (const device of adapter.devices) {
      if (device.removed) continue;
      for (const queue of device.queues) {
        const held = m.os.lifetime.pending(queue);
        if (held.length && ringLength(m, queue) === 0) {
          return `in-flight bookkeeping: ${adapter.name}/${queue.label}'s ring is empty but the OS still counts ${held.map((c) => `${c.op} ${c.local.global.label} ${c.value}`).join(', ')} as in flight`;
        }
      }
    }
  }
  // A queue blocked on a destroyed fence must have a queued signal that could still release it (else: a silent hang).
  const report = m.stuck();
  const base = (label: string) => label.replace(/@.*$/, '');
  for (const q of report.queues) {
    for (const w of q.waits) {
      if (!w.fenceDestroyed) continue;
      const hope = report.queues.some((r) => r.queuedSignals.some((x) => base(x.fence) === base(w.fence) && x.value >= w.value));
      if (!hope) return `silent hang: ${q.kind} ${q.adapter}/${q.queue} waits for destroyed fence ${w.fence} >= ${w.value} and nothing queued can signal it`;
    }
  }
  return undefined;
}

function runSequence(seed: number, steps: number, report: FuzzReport, onAction?: (line: string) => void): FuzzFailure | undefined {
  const s = new Sequence(seed);
  const fail = (step: number, action: string, problem: string): FuzzFailure => ({ seed, steps, step, action, problem });
  for (let step = 0; step < steps; step++) {
    let r = s.random.below(TOTAL_WEIGHT);
    let action = ACTIONS[0];
    for (const a of ACTIONS) { if (r < a.weight) { action = a; break; } r -= a.weight; }
    const plan = action.plan(s);
    if (!plan) continue;
    onAction?.(`[${seed}:${step}] ${plan.text}`);
    report.calls++;
    report.actions[plan.kind] = (report.actions[plan.kind] ?? 0) + 1;
    s.mayLower.clear();
    s.mark();
    try {
      plan.call();
    } catch (error) {
      if (!(error instanceof WddmError)) return fail(step, plan.text, `threw ${error instanceof Error ? `${error.name}: ${error.message}\n${error.stack}` : String(error)}, not a WddmError`);
      report.refused++;
      onAction?.(`    refused: ${error.status}: ${error.message}`);
      const after = digest(s);
      if (after !== s.before) return fail(step, plan.text, `the call was refused (${error.message}) but changed the machine:\n  before ${s.before}\n  after  ${after}`);
    }
    const problem = checkValues(s) ?? checkFaults(s) ?? (s.machine.scheduler.pending === 0 ? checkQuiet(s) : undefined);
    if (problem) return fail(step, plan.text, problem);
  }
  // Teardown: every queue, NT handle and handle goes; once quiet, no storage may be left.
  try {
    for (const q of s.queues) s.processes[q.p].destroyHwQueue(q.h);
    for (const nt of s.nts) s.processes[nt.p].closeHandle(nt.h);
    for (const x of s.handles) s.processes[x.p].destroySynchronizationObject(x.h);
    s.machine.run();
  } catch (error) {
    return fail(steps, 'teardown', `tearing down threw ${(error as Error).message}`);
  }
  const quiet = checkQuiet(s);
  if (quiet) return fail(steps, 'teardown', quiet);
  const left = s.machine.summary().adapters.filter((a) => a.liveFences > 0);
  if (left.length) return fail(steps, 'teardown', `fence storage left after every handle and queue was destroyed: ${left.map((a) => `${a.name} ${a.liveFences}`).join(', ')}`);
  const c = s.machine.summary().os;
  report.gpuRewinds += c.gpuRewinds;
  report.orphanedWaits += c.orphanedWaits;
  report.deferredCloses += c.deferredCloses;
  return undefined;
}

/** Runs the sequences; failures are collected (one per failing sequence), never thrown. */
export function fuzzFenceLifetime(options: FuzzOptions = {}): FuzzReport {
  const firstSeed = options.seed ?? 1;
  const sequences = options.sequences ?? 200;
  const steps = options.steps ?? 100;
  const report: FuzzReport = { firstSeed, sequences, calls: 0, refused: 0, actions: {}, gpuRewinds: 0, orphanedWaits: 0, deferredCloses: 0, failures: [] };
  for (let i = 0; i < sequences; i++) {
    const seed = (firstSeed + i) >>> 0;
    let failure: FuzzFailure | undefined;
    try {
      failure = runSequence(seed, steps, report, options.onAction);
    } catch (error) {
      failure = { seed, steps, step: -1, action: 'set-up', problem: `threw ${(error as Error)?.stack ?? String(error)}` };
    }
    if (failure) report.failures.push(failure);
  }
  return report;
}

/** A failure as text: the seed first, and how to replay it. */
export function fuzzFailureText(failure: FuzzFailure): string {
  return `seed ${failure.seed}, call ${failure.step}: ${failure.action}\n  ${failure.problem}\n  replay: npm run fuzz -- --replay ${failure.seed}${failure.steps === 100 ? '' : ` --steps ${failure.steps}`}`;
}
