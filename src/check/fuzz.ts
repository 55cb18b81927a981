// The fuzz test's cases, as plain data, and the rules every case must keep (issues 15 and 27).
//
// Why this file is long: it is one interpreter over one state — a machine
// configuration and a list of calls become a machine and the calls made on it,
// each checked against the rules below — and its calls and rules only make
// sense together. The generators and the shrinking are fast-check's
// (src/check/fuzz-property.ts); nothing here draws a random number.
//
//   FuzzConfig ──makeMachine──▶ 1–3 adapters (optimized interrupts or not, list or no list,
//                               No64BitAtomics or not, a hostile user-mode half or not),
//                               the doorbell or not, two processes with a device on each adapter
//   FuzzCall[] ──one by one──▶ create, share, open, duplicate, close, signal, wait, destroy,
//                               hardware queues and submissions (some with hostile GPU VAs),
//                               kernel-mode contexts with fence writes and GPU waits and signals
//                               (monitored fences, 32-bit wraparound), device removal, bad
//                               handles, virtual time
//
// A signal or wait with `alias` names its first fence again through another handle of
// it (another adapter's, if the process has one): a call names each fence once (NF-19).
// A call names what it acts on by small numbers taken modulo what exists when it
// runs (the k-th live handle, the k-th queue…), so any sub-list of a case is a
// case too: that is what lets fast-check shrink a failure to a few calls. Every
// fence signals values from its own range, just below a multiple of 2^32
// (fence n: [n·2^32 − 8, n·2^32 − 8 + 2^20)), so a write through a reused slot
// shows, and 32-bit GPU writes wrap.
//
// After every call:
//   1. nothing but a WddmError is thrown;
//   2. a call that threw changed nothing (a digest of the machine before and after);
//   3. no fence holds a value nothing signalled it to, and none moves down unless the
//      rules allow it (a CPU signal with AllowFenceRewind, a GPU rewind the OS reported),
//      "no stale value after the OS's look": a No64BitAtomics monitored fence is judged
//      once no notification is on its way (MF-07's bound, docs/ARCHITECTURE.md);
//   4. no GPU page fault but from a hostile GPU VA (and each hostile write faults: rule 6);
//   5. no lost wake-up (machine.lostWakeups(): a waiter whose value was reached with
//      nothing on its way to wake it, still waiting or timed out so, NF-10);
//   when the machine is quiet:
//   6. every native fence's MonitoredValue in memory is what NF-02 says (the smallest
//      waited value − 1, UINT64_MAX with no waiter, 0 when XA-03 holds it): nothing wrote
//      through a read-only mapping (NF-04);
//   7. no adapter bug-checked, no queue waits for a destroyed fence nothing queued can
//      signal (a silent hang), no in-flight reference on a queue whose ring is empty;
//   and at the end, once every handle, queue and context is gone and the machine is quiet:
//   8. no fence storage is left (deferred closes all finished).

import { createMachineSync, type Machine } from '../machine/machine.js';
import { notificationInFlight, lostWakeupText } from '../machine/lost-wakeups.js';
import type { RuntimeProcess } from '../user/runtime.js';
import type { HwQueueView } from '../os/inspect.js';
import type { UMDARG_SUBMITTOHWQUEUE, UserModeCommand } from '../ddi/ddi.js';
import { u64 } from '../core/bindings.js';
import { WddmError } from '../base/errors.js';
import { UINT64_MAX } from '../base/wddm.js';

// ── the case: a machine configuration and a list of calls (plain data) ──

export interface FuzzAdapterConfig {
  engines: 1 | 2;
  /** OptimizedNativeFenceSignaledInterrupt (INT-05): interrupts served from the logs. */
  optimized: boolean;
  /** Interrupts with no list (the OS scans every waiter). */
  noList: boolean;
  /** DXGK_VIDSCHCAPS::No64BitAtomics: no native fences, monitored fences with 32-bit GPU writes (MF-07). */
  no64BitAtomics: boolean;
  /** Its user-mode half rewrites the GPU VA of the signals a submission marks hostile. */
  hostile: boolean;
}

export interface FuzzConfig {
  adapters: FuzzAdapterConfig[];
  doorbell: boolean;
  /** Doorbell ring entries (2: full rings fall back to the interrupt path). */
  doorbellRing: number;
  /** The machine's seed (tie order and jitter). */
  seed: number;
}

/** Where a hostile signal points instead of its fence's CurrentValue (each one a GPU page fault, never a write). */
export const HOSTILE_TARGETS = ['monitoredValue', 'systemMonitoredValue', 'otherProcess', 'misaligned', 'unmapped'] as const;
export type HostileTarget = typeof HOSTILE_TARGETS[number];

export interface FuzzCommand { op: 'wait' | 'signal' | 'work'; handle: number; delta: number; hostile?: HostileTarget }

/** One call. Numbers that name something (handle, queue, …) are taken modulo what exists when it runs. */
export type FuzzCall =
  | { kind: 'create'; process: number; adapter: number; cross: boolean; shared: boolean; noSignalMaxValueOnTdr: boolean; monitored: boolean }
  | { kind: 'share'; handle: number; to: number; otherAdapter: boolean; keepNt: boolean }
  | { kind: 'closeNt'; nt: number }
  | { kind: 'crossPair'; process: number; adapter: number; to: number }
  | { kind: 'signal'; process: number; handles: number[]; deltas: number[]; rewind: boolean; badAt: number; alias: boolean }
  | { kind: 'wait'; process: number; handles: number[]; deltas: number[]; waitAny: boolean; timeout: number; withEvent: boolean; alias: boolean }
  | { kind: 'destroy'; handle: number }
  | { kind: 'recycle'; handle: number }
  | { kind: 'createQueue'; process: number; adapter: number; engine: number; progress: boolean }
  | { kind: 'destroyQueue'; queue: number }
  | { kind: 'submit'; queue: number; commands: FuzzCommand[] }
  | { kind: 'createContext'; process: number; adapter: number; engine: number }
  | { kind: 'destroyContext'; context: number }
  | { kind: 'submitCommand'; context: number; handle: number; delta: number; workNs: number }
  | { kind: 'gpuWait'; context: number; handle: number; delta: number }
  | { kind: 'gpuSignal'; context: number; handle: number; delta: number }
  | { kind: 'run'; all: boolean; ns: number }
  | { kind: 'removeDevice'; adapter: number }
  | { kind: 'junk'; process: number; which: number; bad: number };

/** The timeouts a wait may take (an index into it). */
export const WAIT_TIMEOUTS: readonly (number | undefined)[] = [undefined, undefined, 0, 1000, 3000, 50_000];

/** What the cases generated and the rules saw, summed over a run of cases. */
export interface FuzzCounts {
  cases: number;
  calls: number;
  /** Calls refused with a WddmError. */
  refused: number;
  /** Calls skipped: they named something and nothing of that kind existed. */
  skipped: number;
  actions: Record<string, number>;
  /** Machines by number of adapters (index 1–3). */
  adapters: number[];
  doorbell: number;
  /** Machines with at least one adapter of the kind. */
  optimized: number;
  no64BitAtomics: number;
  hostileAdapters: number;
  /** Commands a hostile user-mode half sent to a hostile GPU VA, and the GPU page faults they caused. */
  hostileVas: number;
  hostileFaults: number;
  crossAdapterFences: number;
  monitoredFences: number;
  /** Rule events seen: GPU rewinds, adapter resets for waits nothing could satisfy, deferred closes, waits timed out. */
  gpuRewinds: number;
  orphanedWaits: number;
  deferredCloses: number;
  waitsTimedOut: number;
}

export function emptyCounts(): FuzzCounts {
  return {
    cases: 0, calls: 0, refused: 0, skipped: 0, actions: {}, adapters: [0, 0, 0, 0], doorbell: 0, optimized: 0, no64BitAtomics: 0,
    hostileAdapters: 0, hostileVas: 0, hostileFaults: 0, crossAdapterFences: 0, monitoredFences: 0, gpuRewinds: 0, orphanedWaits: 0, deferredCloses: 0, waitsTimedOut: 0,
  };
}

/** A rule a case broke: at which call (its index among the calls made; calls.length: the teardown), and what. */
export interface FuzzProblem { step: number; call: string; problem: string }

/** The calls one case made, as text (one per call, with its outcome), and the problem, if any. */
export interface FuzzCaseResult { lines: string[]; problem?: FuzzProblem }

// ── the state of a case ──

const LIMITS = { fences: 40, waitBlocks: 128, waitersPerFence: 4, ringEntries: 10, queues: 8, gpuVaPagesPerProcess: 64 };
const RANGE = 1n << 20n;

interface ModelFence {
  id: number; name: string; base: bigint; allowed: Set<bigint>; lastSeen?: bigint; cross: boolean; shared: boolean; monitored: boolean; narrow: boolean;
  /** Values a GPU write of a monitored fence (a fence write, a software signal packet) gives it: it may move down to one (not judged, docs/ARCHITECTURE.md). */
  gpuWrites: Set<bigint>;
}
interface Handle { p: number; h: number; fence: ModelFence; adapter: number }
interface NtHandle { p: number; h: number; fence: ModelFence }
interface Queue { p: number; adapter: number; h: number; label: string }
interface Context { p: number; adapter: number; h: number }

class Case {
  readonly machine: Machine;
  readonly processes: RuntimeProcess[];
  readonly devices: number[][] = [];   // [process][adapter] → hDevice
  readonly fences: ModelFence[] = [];
  handles: Handle[] = [];
  nts: NtHandle[] = [];
  queues: Queue[] = [];
  contexts: Context[] = [];
  /** Fences that may have moved down since their last check (a CPU rewind, a GPU rewind the OS reported). */
  readonly mayLower = new Set<ModelFence>();
  /** The rewrites the next submission's hostile user-mode half makes: command index → GPU VA. */
  rewrite: Map<number, bigint> | undefined;
  /** Queues (by label) a hostile GPU VA was written into: a GPU page fault is expected there. */
  readonly hostileQueues = new Set<string>();
  before = '';
  private nextFence = 1;

  constructor(readonly config: FuzzConfig, readonly counts: FuzzCounts) {
    const adapters = config.adapters.map((a, i) => ({
      name: `gpu${i}`, engines: a.engines, limits: LIMITS,
      caps: { optimizedNativeFenceSignaledInterrupt: a.optimized, no64BitAtomics: a.no64BitAtomics },
      interrupts: { payload: a.noList ? 'noList' as const : 'list' as const },
    }));
    this.machine = createMachineSync({ seed: config.seed, trace: false, adapters, doorbell: { enabled: config.doorbell, ringEntries: config.doorbellRing } });
    this.processes = [this.machine.createProcess('A'), this.machine.createProcess('B')];
    for (const p of this.processes) this.devices.push(config.adapters.map((_, a) => p.createDevice({ hAdapter: p.openAdapter(a) })));
    this.machine.os.inspect.onGpuRewind((r) => { const f = this.fenceNamed(r.fence); if (f) this.mayLower.add(f); });
    config.adapters.forEach((a, i) => { if (a.hostile) this.makeHostile(i); });
  }

  /** The adapter's user-mode half applies `rewrite` to the signals of the submission it writes (an instance property: records form). */
  private makeHostile(adapter: number): void {
    const umd = this.machine.userModeDriver(adapter);
    const honest = umd.submitToHwQueue.bind(umd);
    umd.submitToHwQueue = (args: UMDARG_SUBMITTOHWQUEUE) => {
      const rewrite = this.rewrite;
      if (!rewrite) return honest(args);
      const commands = args.Commands.map((c: UserModeCommand, i) => (rewrite.has(i) ? { ...c, gpuVa: rewrite.get(i)! } : c));
      return honest({ ...args, Commands: commands });
    };
  }

  mark(): void { this.before = digest(this); }
  fenceNamed(label: string): ModelFence | undefined {
    const match = /^f(\d+)/.exec(label);
    return match ? this.fences.find((f) => f.id === Number(match[1])) : undefined;
  }
  adapterCount(): number { return this.config.adapters.length; }
  narrow(adapter: number): boolean { return this.config.adapters[adapter].no64BitAtomics; }
  /** A value in the fence's range `delta` from its last seen value. */
  value(fence: ModelFence, delta: number): bigint {
    const from = fence.lastSeen === undefined || fence.lastSeen === UINT64_MAX || fence.lastSeen < fence.base ? fence.base : fence.lastSeen;
    let v = from + BigInt(delta);
    if (v < fence.base) v = fence.base;
    if (v >= fence.base + RANGE) v = fence.base + RANGE - 1n;
    return v;
  }
  handlesOf(p: number): Handle[] { return this.handles.filter((x) => x.p === p); }
  badHandle(p: number, which: number): number {
    const other = pick(this.handlesOf(1 - p), which);
    const choices = [0x4000_0000 + (which % 100), -1, 0, other?.h ?? 7, this.devices[p][0], this.queues.find((q) => q.p === p)?.h ?? 3];
    return choices[which % choices.length];
  }
  newFence(cross: boolean, shared: boolean, monitored: boolean, narrow: boolean): ModelFence {
    const id = this.nextFence++;
    const base = (BigInt(id) << 32n) - 8n;
    const fence: ModelFence = { id, name: `f${id}`, base, allowed: new Set([base]), cross, shared, monitored, narrow, gpuWrites: new Set() };
    this.fences.push(fence);
    return fence;
  }
  /** A hostile GPU VA for a command of `queue` naming `handle` (each one unmapped, misaligned or read-only in the queue's process). */
  hostileVa(queue: Queue, handle: Handle | undefined, target: HostileTarget): bigint {
    const P = this.processes;
    const machine = this.machine;
    const local = handle ? machine.os.inspect.handleOf(P[queue.p].kernel, handle.h) : undefined;
    switch (target) {
      case 'monitoredValue': return local && local.global.adapter.index === queue.adapter ? local.mvGpuVa : this.anyMonitoredValueVa(queue);
      case 'systemMonitoredValue': return local?.global.systemMvVa || 0x10n;
      case 'otherProcess': {
        const theirs = this.handles.find((x) => x.p !== queue.p && x.adapter === queue.adapter);
        return theirs ? machine.os.inspect.handleOf(P[theirs.p].kernel, theirs.h).cvGpuVa || 0x18n : 0x18n;
      }
      case 'misaligned': return (local?.cvGpuVa ?? 0x20n) + 4n;
      case 'unmapped': return 0x8n;
    }
  }
  private anyMonitoredValueVa(queue: Queue): bigint {
    for (const x of this.handlesOf(queue.p)) {
      if (x.adapter !== queue.adapter || x.fence.monitored) continue;
      try { return this.machine.os.inspect.handleOf(this.processes[queue.p].kernel, x.h).mvGpuVa; } catch { /* a closed one */ }
    }
    return 0x28n;
  }
}

function pick<T>(list: readonly T[], i: number): T | undefined { return list.length ? list[i % list.length] : undefined; }

/** A signal's or wait's process, the handles it names and their values; undefined when the process has none. */
function namedFences(s: Case, c: { process: number; handles: number[]; deltas: number[]; alias: boolean }): { p: number; picked: Handle[]; values: bigint[] } | undefined {
  const p = c.process % 2;
  const mine = s.handlesOf(p);
  if (!mine.length) return undefined;
  const picked = pickHandles(mine, c.handles, c.alias);
  return { p, picked, values: picked.map((x, i) => s.value(x.fence, c.deltas[i] ?? 0)) };
}

/** The handles a signal or wait names: `indexes` among `mine`; with `alias`, the second is another handle of the first's fence (another adapter's first). */
function pickHandles(mine: readonly Handle[], indexes: readonly number[], alias: boolean): Handle[] {
  const picked = indexes.map((i) => pick(mine, i)!);
  if (alias && picked.length > 1) {
    const others = mine.filter((x) => x.fence === picked[0].fence && x !== picked[0]);
    picked[1] = others.find((x) => x.adapter !== picked[0].adapter) ?? others[0] ?? picked[0];
  }
  return picked;
}

// ── the calls ──

/** A call ready to make: its text (what it does, named), and the call itself (which may throw). undefined: skipped. */
interface Plan { text: string; call: () => void }

function plan(s: Case, c: FuzzCall): Plan | undefined {
  switch (c.kind) {
    case 'create': case 'share': case 'closeNt': case 'crossPair': case 'destroy': case 'recycle': return planFences(s, c);
    case 'signal': case 'wait': case 'junk': return planCpuCalls(s, c);
    case 'createQueue': case 'destroyQueue': case 'submit': return planQueues(s, c);
    case 'createContext': case 'destroyContext': case 'submitCommand': case 'gpuWait': case 'gpuSignal': return planContexts(s, c);
    case 'run': case 'removeDevice': return planMachine(s, c);
  }
}

/** Fences and NT handles: made, shared, opened, destroyed, recycled. */
function planFences(s: Case, c: Extract<FuzzCall, { kind: 'create' | 'share' | 'closeNt' | 'crossPair' | 'destroy' | 'recycle' }>): Plan | undefined {
  const P = s.processes;
  switch (c.kind) {
    case 'create': {
      const p = c.process % 2, adapter = c.adapter % s.adapterCount();
      const monitored = c.monitored || s.narrow(adapter);
      const cross = c.cross, shared = cross || (c.shared && !monitored);
      const fence = s.newFence(cross, shared, monitored, s.narrow(adapter));
      const flags = { ...(shared ? { shared: true } : {}), ...(cross ? { crossAdapter: true } : {}), ...(c.noSignalMaxValueOnTdr ? { noSignalMaxValueOnTdr: true } : {}) };
      const what = monitored ? 'createSynchronizationObject(MONITORED_FENCE' : 'createNativeFence(';
      return { text: `${P[p].name}.${what} ${fence.name} on gpu${adapter}, ${JSON.stringify(flags)})`, call: () => {
        const hDevice = s.devices[p][adapter];
        const made = monitored
          ? P[p].createSynchronizationObject({ hDevice, type: 'MONITORED_FENCE', initialValue: fence.base, flags, name: fence.name })
          : P[p].createNativeFence({ hDevice, initialValue: fence.base, flags, name: fence.name });
        s.handles.push({ p, h: made.hSyncObject, fence, adapter });
        if (cross) s.counts.crossAdapterFences++;
        if (monitored) s.counts.monitoredFences++;
      } };
    }
    case 'share': {
      const shared = s.handles.filter((x) => x.fence.shared);
      const from = pick(shared.length ? shared : s.handles, c.handle);
      if (!from) return undefined;
      const to = c.to % 2;
      const adapter = c.otherAdapter ? (from.adapter + 1) % s.adapterCount() : from.adapter;
      return { text: `${P[from.p].name} shares ${from.fence.name}; ${P[to].name} opens it on gpu${adapter}${c.keepNt ? ' (keeps the NT handle)' : ''}`, call: () => {
        // Several calls: the model follows each one that worked; s.mark() before the next makes rule 2 apply to it alone.
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
        if (c.keepNt) return;
        s.mark();
        P[held.p].closeHandle(held.h);
        s.nts = s.nts.filter((x) => x !== held);
      } };
    }
    case 'closeNt': {
      const nt = pick(s.nts, c.nt);
      if (!nt) return undefined;
      return { text: `${P[nt.p].name}.closeHandle(NT ${nt.fence.name})`, call: () => { P[nt.p].closeHandle(nt.h); s.nts = s.nts.filter((x) => x !== nt); } };
    }
    case 'crossPair': {
      // A cross-adapter fence made on one adapter and opened on the next, in one process or the other (XA-02, XA-07).
      if (s.adapterCount() < 2) return undefined;
      const p = c.process % 2, to = c.to % 2, adapter = c.adapter % s.adapterCount(), other = (adapter + 1) % s.adapterCount();
      const fence = s.newFence(true, true, false, false);
      return { text: `${P[p].name}.createNativeFence(${fence.name} on gpu${adapter}, cross-adapter); ${P[to].name} opens it on gpu${other}`, call: () => {
        const made = P[p].createNativeFence({ hDevice: s.devices[p][adapter], initialValue: fence.base, flags: { shared: true, crossAdapter: true }, name: fence.name });
        s.handles.push({ p, h: made.hSyncObject, fence, adapter });
        s.counts.crossAdapterFences++;
        s.mark();
        const nt = P[p].shareObject(made.hSyncObject);
        const held = to === p ? nt : P[p].duplicateHandle(nt, P[to]);
        if (to !== p) P[p].closeHandle(nt);
        s.nts.push({ p: to, h: held, fence });
        s.mark();
        const opened = P[to].openNativeFenceFromNtHandle({ hNtHandle: held, hDevice: s.devices[to][other] }).hSyncObject;
        s.handles.push({ p: to, h: opened, fence, adapter: other });
      } };
    }
    case 'destroy': {
      const x = pick(s.handles, c.handle);
      if (!x) return undefined;
      return { text: `${P[x.p].name}.destroySynchronizationObject(${x.fence.name} on gpu${x.adapter})`, call: () => {
        P[x.p].destroySynchronizationObject(x.h);
        s.handles = s.handles.filter((y) => y !== x);
      } };
    }
    case 'recycle': {
      // The hazard of issue 15 on purpose: destroy a fence GPU work may still name, then make a fence at once
      // (the freed slot would be the next one taken).
      const x = pick(s.handles.filter((h) => !h.fence.shared && !h.fence.monitored), c.handle) ?? pick(s.handles, c.handle);
      if (!x) return undefined;
      const monitored = x.fence.monitored;
      const fence = s.newFence(false, false, monitored, x.fence.narrow);
      return { text: `${P[x.p].name}.destroySynchronizationObject(${x.fence.name}); create ${fence.name} on gpu${x.adapter}`, call: () => {
        P[x.p].destroySynchronizationObject(x.h);
        s.handles = s.handles.filter((y) => y !== x);
        s.mark();
        const hDevice = s.devices[x.p][x.adapter];
        const made = monitored
          ? P[x.p].createSynchronizationObject({ hDevice, type: 'MONITORED_FENCE', initialValue: fence.base, name: fence.name })
          : P[x.p].createNativeFence({ hDevice, initialValue: fence.base, name: fence.name });
        s.handles.push({ p: x.p, h: made.hSyncObject, fence, adapter: x.adapter });
      } };
    }
  }
}

/** CPU signals and waits, and calls that must be refused (junk). */
function planCpuCalls(s: Case, c: Extract<FuzzCall, { kind: 'signal' | 'wait' | 'junk' }>): Plan | undefined {
  const P = s.processes;
  switch (c.kind) {
    case 'signal': {
      const named = namedFences(s, c);
      if (!named) return undefined;
      const { p, picked, values } = named;
      const objects = picked.map((x, i) => (i === c.badAt ? s.badHandle(p, c.handles[i]) : x.h));
      return { text: `${P[p].name}.signal(${picked.map((x, i) => `${i === c.badAt ? `bad ${objects[i]}` : x.fence.name}=${values[i]}`).join(', ')}${c.rewind ? ', allowFenceRewind' : ''})`, call: () => {
        picked.forEach((x, i) => { x.fence.allowed.add(values[i]); if (c.rewind) s.mayLower.add(x.fence); });
        P[p].signal({ objects, values, ...(c.rewind ? { flags: { allowFenceRewind: true } } : {}) });
        // NF-19 within the call: without AllowFenceRewind, each fence ends at least at every value the call gave it (or at a
        // value a monitored fence's GPU write released by the call gave it, which is not judged).
        if (!c.rewind) {
          picked.forEach((x, i) => {
            const now = P[p].readFenceValue(x.h);
            if (now < values[i] && !x.fence.narrow && !x.fence.gpuWrites.has(now)) throw new RuleBroken(`${x.fence.name} reads ${now} right after a signal without AllowFenceRewind gave it ${values[i]} (objects[${i}]): it moved back within the call`);
          });
        }
      } };
    }
    case 'wait': {
      const named = namedFences(s, c);
      if (!named) return undefined;
      const { p, picked, values } = named;
      const timeoutNs = WAIT_TIMEOUTS[c.timeout % WAIT_TIMEOUTS.length];
      const Pp = P[p];
      return { text: `${Pp.name}.${c.withEvent ? 'waitWithEvent' : 'waitAsync'}(${picked.map((x, i) => `${x.fence.name}>=${values[i]}`).join(c.waitAny ? ' | ' : ' & ')}${timeoutNs === undefined ? '' : `, timeout ${timeoutNs}`})`, call: () => {
        const args = { objects: picked.map((x) => x.h), values, waitAny: c.waitAny, ...(timeoutNs === undefined ? {} : { timeoutNs }) };
        if (c.withEvent) {
          const hAsyncEvent = Pp.createEvent('fuzz');
          s.mark();
          Pp.waitWithEvent({ ...args, hAsyncEvent });
        } else void Pp.waitAsync(args, 'fuzz');
      } };
    }
    case 'junk': {
      const p = c.process % 2;
      const Pp = P[p];
      const bad = s.badHandle(p, c.bad);
      const calls: [string, () => void][] = [
        [`signal(bad ${bad})`, () => Pp.signal({ objects: [bad], values: [1n] })],
        [`waitAsync(bad ${bad})`, () => { void Pp.waitAsync({ objects: [bad], values: [1n] }); }],
        [`destroySynchronizationObject(bad ${bad})`, () => Pp.destroySynchronizationObject(bad)],
        [`closeHandle(bad ${bad})`, () => Pp.closeHandle(bad)],
        [`submit(bad queue ${bad})`, () => { Pp.submit({ hHwQueue: bad, commands: [{ work: { durationNs: 1 } }] }); }],
        ['signal(mismatched arrays)', () => Pp.signal({ objects: s.handlesOf(p).slice(0, 2).map((x) => x.h), values: [] })],
        ['waitAsync(33 objects)', () => { void Pp.waitAsync({ objects: Array.from({ length: 33 }, () => bad), values: Array.from({ length: 33 }, () => 1n) }); }],
      ];
      const [text, call] = calls[c.which % calls.length];
      return { text: `${Pp.name}.${text}`, call };
    }
  }
}

/** Hardware queues: made, destroyed, submitted to. */
function planQueues(s: Case, c: Extract<FuzzCall, { kind: 'createQueue' | 'destroyQueue' | 'submit' }>): Plan | undefined {
  const P = s.processes;
  switch (c.kind) {
    case 'createQueue': {
      const p = c.process % 2, adapter = c.adapter % s.adapterCount();
      const engine = c.engine % s.config.adapters[adapter].engines;
      return { text: `${P[p].name}.createHwQueue(gpu${adapter}, engine ${engine})`, call: () => {
        const made = P[p].createHwQueue({ hDevice: s.devices[p][adapter], engine, nativeProgressFence: c.progress });
        const queue = s.machine.os.inspect.hwQueueOf(P[p].kernel, made.hHwQueue);
        s.queues.push({ p, adapter, h: made.hHwQueue, label: queue.label });
      } };
    }
    case 'destroyQueue': {
      const q = pick(s.queues, c.queue);
      if (!q) return undefined;
      return { text: `${P[q.p].name}.destroyHwQueue(gpu${q.adapter})`, call: () => { P[q.p].destroyHwQueue(q.h); s.queues = s.queues.filter((x) => x !== q); } };
    }
    case 'submit': {
      const q = pick(s.queues, c.queue);
      if (!q) return undefined;
      const usable = s.handles.filter((x) => x.p === q.p && x.adapter === q.adapter);
      const hostile = s.config.adapters[q.adapter].hostile;
      const commands: ({ wait: { hSyncObject: number; value: bigint } } | { signal: { hSyncObject: number; value: bigint } } | { work: { durationNs: number } })[] = [];
      const text: string[] = [];
      const signalled: [ModelFence, bigint][] = [];
      const rewrite = new Map<number, bigint>();
      for (const command of c.commands) {
        const x = pick(usable, command.handle);
        if (!x || command.op === 'work') { const d = 100 + Math.abs(command.delta) * 500; commands.push({ work: { durationNs: d } }); text.push(`work ${d}`); continue; }
        const value = s.value(x.fence, command.delta);
        if (command.op === 'wait') { commands.push({ wait: { hSyncObject: x.h, value } }); text.push(`wait ${x.fence.name}=${value}`); continue; }
        commands.push({ signal: { hSyncObject: x.h, value } });
        if (hostile && command.hostile) {
          rewrite.set(commands.length - 1, s.hostileVa(q, x, command.hostile));
          text.push(`signal ${x.fence.name}=${value} through a hostile VA (${command.hostile})`);
        } else {
          signalled.push([x.fence, value]);
          text.push(`signal ${x.fence.name}=${value}`);
        }
      }
      return { text: `${P[q.p].name}.submit(gpu${q.adapter}: ${text.join(', ')})`, call: () => {
        for (const [fence, value] of signalled) fence.allowed.add(value);
        s.rewrite = rewrite.size ? rewrite : undefined;
        try {
          P[q.p].submit({ hHwQueue: q.h, commands });
        } finally { s.rewrite = undefined; }
        if (rewrite.size) { s.hostileQueues.add(q.label); s.counts.hostileVas += rewrite.size; }
      } };
    }
  }
}

/** Kernel-mode contexts: made, destroyed, their command buffers, GPU waits and signals. */
function planContexts(s: Case, c: Extract<FuzzCall, { kind: 'createContext' | 'destroyContext' | 'submitCommand' | 'gpuWait' | 'gpuSignal' }>): Plan | undefined {
  const P = s.processes;
  switch (c.kind) {
    case 'createContext': {
      const p = c.process % 2, adapter = c.adapter % s.adapterCount();
      const engine = c.engine % s.config.adapters[adapter].engines;
      return { text: `${P[p].name}.createContext(gpu${adapter}, engine ${engine})`, call: () => {
        s.contexts.push({ p, adapter, h: P[p].createContext({ hDevice: s.devices[p][adapter], engine }) });
      } };
    }
    case 'destroyContext': {
      const x = pick(s.contexts, c.context);
      if (!x) return undefined;
      return { text: `${P[x.p].name}.destroyContext(gpu${x.adapter})`, call: () => { P[x.p].destroyContext(x.h); s.contexts = s.contexts.filter((y) => y !== x); } };
    }
    case 'submitCommand': case 'gpuWait': case 'gpuSignal': {
      const x = pick(s.contexts, c.context);
      if (!x) return undefined;
      const mine = s.handles.filter((h) => h.p === x.p && h.adapter === x.adapter && h.fence.monitored);
      const h = pick(mine.length ? mine : s.handlesOf(x.p), c.handle);
      if (!h) return undefined;
      const value = s.value(h.fence, c.delta);
      const Pp = P[x.p];
      const lowers = () => { h.fence.gpuWrites.add(value); };
      if (c.kind === 'submitCommand') {
        return { text: `${Pp.name}.submitCommand(gpu${x.adapter}: work ${c.workNs}, fenceWrite ${h.fence.name}=${value})`, call: () => {
          lowers();
          h.fence.allowed.add(value);
          Pp.submitCommand({ hContext: x.h, commands: [{ work: { durationNs: c.workNs } }, { fenceWrite: { hSyncObject: h.h, value } }] });
        } };
      }
      if (c.kind === 'gpuWait') {
        return { text: `${Pp.name}.waitForSynchronizationObjectFromGpu(gpu${x.adapter}: ${h.fence.name}>=${value})`, call: () => {
          Pp.waitForSynchronizationObjectFromGpu({ hContext: x.h, objects: [h.h], values: [value] });
        } };
      }
      return { text: `${Pp.name}.signalSynchronizationObjectFromGpu(gpu${x.adapter}: ${h.fence.name}=${value})`, call: () => {
        lowers();
        h.fence.allowed.add(value);
        Pp.signalSynchronizationObjectFromGpu({ hContext: x.h, objects: [h.h], values: [value] });
      } };
    }
  }
}

/** The machine: run for a while, or remove a device. */
function planMachine(s: Case, c: Extract<FuzzCall, { kind: 'run' | 'removeDevice' }>): Plan | undefined {
  switch (c.kind) {
    case 'run': {
      const until = s.machine.nowNs + c.ns;
      return { text: c.all ? 'machine.run()' : `machine.run(${until})`, call: () => { s.machine.run(c.all ? undefined : until); } };
    }
    case 'removeDevice': {
      const adapter = c.adapter % s.adapterCount();
      return { text: `machine.removeDevice(gpu${adapter}); new devices`, call: () => {
        s.machine.removeDevice(adapter, 'fuzz');
        // the model's devices are gone: new ones (old handles, queues and contexts stay; their GPU calls fail with DEVICE_REMOVED)
        s.processes.forEach((p, i) => { s.mark(); s.devices[i][adapter] = p.createDevice({ hAdapter: p.openAdapter(adapter) }); });
      } };
    }
  }
}

// ── the rules ──

/** A rule a call broke, found while making it (not an error of the call: rule 1 does not apply). */
class RuleBroken extends Error {}

/**
 * Commands in a hardware queue's ring, read from the GPU side (the simulated GPU's core, through
 * the driver that owns the queue): the truth the OS's bookkeeping is checked against.
 */
function ringLength(m: Machine, queue: HwQueueView): number {
  const adapter = m.adapters[queue.device.adapter.index];
  const coreQueue = adapter.driver.coreQueueOf?.(queue.hHwQueue);
  return coreQueue === undefined ? 0 : adapter.core.queuePending(coreQueue);
}

/** What a failed call must not change: counters, handle tables, queues, waiters, values, storage. */
function digest(s: Case): string {
  const m = s.machine;
  const parts: string[] = [];
  const summary = m.summary();
  parts.push(JSON.stringify(summary.adapters), JSON.stringify(summary.os), JSON.stringify(summary.legacy), String(summary.pendingWaiters), String(m.scheduler.pending), String(m.trace.events.length));
  for (const p of s.processes) { const c = m.os.inspect.handleCounts(p.kernel); parts.push(`${c.handles}/${c.closed}/${c.ntHandles}`); }
  for (const x of s.handles) {
    try {
      const i = m.inspectFence(s.processes[x.p], x.h); // writes nothing (issue 27)
      parts.push(`${x.h}:${i.currentValue}:${i.monitoredValue}:${i.cpuWaiters}:${i.gpuWaitsInFlight}:${i.gpuSignalsInFlight}:${i.openHandles}`);
    } catch (error) { parts.push(`${x.h}:${(error as Error).message}`); }
  }
  for (const q of s.queues) {
    try {
      const queue = m.os.inspect.hwQueueOf(s.processes[q.p].kernel, q.h);
      parts.push(`q${q.h}:${ringLength(m, queue)}:${queue.references.pendingCount}`);
    } catch (error) { parts.push(`q${q.h}:${(error as Error).message}`); }
  }
  for (const x of s.contexts) parts.push(`c${x.h}:${s.machine.os.inspect.contextsOf(s.processes[x.p].kernel).map((c) => `${c.packets.length}/${c.inFlight.length}`).join(',')}`);
  return parts.join('|');
}

/** Rule 3 for every fence with a live handle (user-mode reads, through the mapping). */
function checkValues(s: Case): string | undefined {
  const inFlight = notificationInFlight(s.machine.scheduler);
  const seen = new Set<ModelFence>();
  for (const x of s.handles) {
    if (seen.has(x.fence)) continue;
    seen.add(x.fence);
    const f = x.fence;
    // MF-07's bound: between a 32-bit GPU write and the OS's look, the mapping may show the old high half.
    if (f.narrow && inFlight) continue;
    let value: bigint;
    try { value = s.processes[x.p].readFenceValue(x.h); } catch (error) { return `reading ${f.name} through a live handle failed: ${(error as Error).message}`; }
    if (value !== UINT64_MAX && !f.allowed.has(value)) {
      return `${f.name} reads ${value} (0x${value.toString(16)}), a value nothing signalled it to${f.narrow ? ' (a high half the OS did not extend after its look? MF-07)' : ' (a write through a reused slot?)'}`;
    }
    if (f.lastSeen !== undefined && value < f.lastSeen && !s.mayLower.has(f) && !f.gpuWrites.has(value)) return `${f.name} moved down from ${f.lastSeen} to ${value} with no CPU rewind and no reported GPU rewind`;
    f.lastSeen = value;
    s.mayLower.delete(f); // a rewind allows one move down, seen at the fence's next check
  }
  return undefined;
}

/** Rule 4: no GPU page fault but on a queue a hostile GPU VA was written into. */
function checkFaults(s: Case, faultsBefore: number): string | undefined {
  const faults = s.machine.trace.events.filter((e) => e.kind === 'fault' && e.name === 'GPU fault');
  for (const fault of faults.slice(faultsBefore)) {
    const message = String(fault.args.message);
    if (![...s.hostileQueues].some((label) => message.includes(` executing ${label}:`))) return `GPU page fault: ${message} (no hostile GPU VA was written to that queue: the OS unmapped fence storage a submitted command still named?)`;
    s.counts.hostileFaults++;
  }
  const untracked = s.machine.trace.events.find((e) => e.kind === 'fault' && e.name === 'GPU executed a command the OS never saw submitted');
  return untracked ? `the OS's in-flight bookkeeping lost a command: ${JSON.stringify(untracked.args)}` : undefined;
}

/** Rule 5. */
function checkLostWakeups(s: Case): string | undefined {
  const lost = s.machine.lostWakeups();
  return lost.length ? lost.map(lostWakeupText).join('; ') : undefined;
}

/** Rule 6: every native fence's MonitoredValue, as the CMP holds it, is NF-02's (or 0 when XA-03 holds it). */
function checkMonitoredValues(s: Case): string | undefined {
  for (const adapter of s.machine.adapters) {
    if (adapter.state !== 'running' || !adapter.nativeFence) continue;
    const core = adapter.core;
    for (let id = 1; id <= LIMITS.fences; id++) {
      if (!core.fenceIsLive(id)) continue;
      const fence = s.machine.os.inspect.nativeFenceAt(adapter.index, id);
      if (!fence || fence.kind !== 'native' || fence.destroyed) continue;
      const target = fence.monitoredValueHeld ? 0n : u64(core.fenceMonitoredTarget(id));
      const buffered = core.cmpPendingWrite() !== 0 && core.cmpPendingWrite() === core.fenceMonitoredValueAddress(id);
      const held = buffered ? u64(core.cmpPendingValue()) : u64(core.cpuReadMonitoredValue(id));
      if (held !== target) return `${adapter.name} ${fence.label}: MonitoredValue is ${held}, NF-02 says ${target} (a write through a read-only GPU mapping? NF-04)`;
    }
  }
  return undefined;
}

/** Rule 7, when the machine is quiet. */
function checkQuiet(s: Case): string | undefined {
  const m = s.machine;
  if (m.summary().bugChecks.length) return `bug check: ${m.summary().bugChecks.map((b) => `${b.adapter}: ${b.code}: ${b.message}`).join('; ')}`;
  for (const adapter of m.os.inspect.adapters) {
    if (adapter.state !== 'running') continue;
    for (const device of adapter.devices) {
      if (device.removed) continue;
      for (const queue of device.queues) {
        const held = m.os.inspect.inFlight(queue);
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

/** Rules 3–7 after a call. */
function checkAfter(s: Case, faultsBefore: number): string | undefined {
  return checkValues(s) ?? checkFaults(s, faultsBefore) ?? checkLostWakeups(s)
    ?? (s.machine.scheduler.pending === 0 ? checkMonitoredValues(s) ?? checkQuiet(s) : undefined);
}

// ── a case, run ──

/**
 * Makes the machine of `config` and the calls of `calls` on it, checking every rule; stops at the first
 * problem. Adds what it made to `counts`. `onCall` sees each call's text and outcome as it is made.
 */
export function runFuzzCase(config: FuzzConfig, calls: readonly FuzzCall[], counts: FuzzCounts = emptyCounts(), onCall?: (line: string) => void): FuzzCaseResult {
  const lines: string[] = [];
  const say = (line: string) => { lines.push(line); onCall?.(line); };
  const fail = (step: number, call: string, problem: string): FuzzCaseResult => ({ lines, problem: { step, call, problem } });
  counts.cases++;
  counts.adapters[config.adapters.length]++;
  if (config.doorbell) counts.doorbell++;
  if (config.adapters.some((a) => a.optimized)) counts.optimized++;
  if (config.adapters.some((a) => a.no64BitAtomics)) counts.no64BitAtomics++;
  if (config.adapters.some((a) => a.hostile)) counts.hostileAdapters++;
  let s: Case;
  try {
    s = new Case(config, counts);
  } catch (error) {
    return fail(-1, 'set-up', `making the machine threw ${(error as Error)?.stack ?? String(error)}`);
  }
  say(`machine: ${configText(config)}`);
  for (let step = 0; step < calls.length; step++) {
    const p = plan(s, calls[step]);
    counts.actions[calls[step].kind] = (counts.actions[calls[step].kind] ?? 0) + 1;
    if (!p) { counts.skipped++; continue; }
    counts.calls++;
    s.mark();
    const faultsBefore = s.machine.trace.events.filter((e) => e.kind === 'fault' && e.name === 'GPU fault').length;
    try {
      p.call();
      say(`[${step}] ${p.text}`);
    } catch (error) {
      if (error instanceof RuleBroken) return fail(step, p.text, error.message);
      if (!(error instanceof WddmError)) return fail(step, p.text, `threw ${error instanceof Error ? `${error.name}: ${error.message}\n${error.stack}` : String(error)}, not a WddmError`);
      counts.refused++;
      say(`[${step}] ${p.text}  → refused: ${error.status}: ${error.message}`);
      const after = digest(s);
      if (after !== s.before) return fail(step, p.text, `the call was refused (${error.message}) but changed the machine:\n  before ${s.before}\n  after  ${after}`);
    }
    const problem = checkAfter(s, faultsBefore);
    if (problem) return fail(step, p.text, problem);
  }
  // Teardown: every queue, context, NT handle and handle goes; once quiet, no storage may be left.
  const faultsBefore = s.machine.trace.events.filter((e) => e.kind === 'fault' && e.name === 'GPU fault').length;
  try {
    for (const q of s.queues) s.processes[q.p].destroyHwQueue(q.h);
    for (const x of s.contexts) s.processes[x.p].destroyContext(x.h);
    for (const nt of s.nts) s.processes[nt.p].closeHandle(nt.h);
    for (const x of s.handles) s.processes[x.p].destroySynchronizationObject(x.h);
    s.machine.run();
  } catch (error) {
    return fail(calls.length, 'teardown', `tearing down threw ${(error as Error).message}`);
  }
  const quiet = checkFaults(s, faultsBefore) ?? checkLostWakeups(s) ?? checkQuiet(s);
  if (quiet) return fail(calls.length, 'teardown', quiet);
  const left = s.machine.summary().adapters.filter((a) => a.liveFences > 0);
  if (left.length) return fail(calls.length, 'teardown', `fence storage left after every handle, queue and context was destroyed: ${left.map((a) => `${a.name} ${a.liveFences}`).join(', ')}`);
  const o = s.machine.summary().os;
  counts.gpuRewinds += o.gpuRewinds;
  counts.orphanedWaits += o.orphanedWaits;
  counts.deferredCloses += o.deferredCloses;
  counts.waitsTimedOut += s.machine.os.inspect.counters.waitsTimedOut;
  return { lines };
}

/** The machine of a configuration, in one line. */
export function configText(config: FuzzConfig): string {
  const adapters = config.adapters.map((a, i) => `gpu${i}(${a.engines} engine${a.engines > 1 ? 's' : ''}${a.optimized ? ', optimized' : ''}${a.noList ? ', no list' : ''}${a.no64BitAtomics ? ', No64BitAtomics' : ''}${a.hostile ? ', hostile UMD' : ''})`);
  return `seed ${config.seed}, ${adapters.join(' ')}${config.doorbell ? `, doorbell (ring ${config.doorbellRing})` : ''}`;
}
