// The state key (src/explore/state.ts, src/explore/host-walk.ts) is fast: memory hashed sparsely, the host
// objects walked once for the key and the snapshot, field-name lists and strings by checked digests, shapes
// and object numbers remembered between walks. This file keeps the definition it must agree with, written
// the plain way, as an oracle: every covered word of linear memory, the pending events as a sorted multiset,
// the virtual time and the world's extras, and a generic walk of every object reachable from the machine
// (the explorer's state when faults were injected) by the same rules of what is left out, each serialized
// exactly (no hash: two states are the same to the oracle when their serializations are equal). At every
// key the searches below take, the key and the oracle must partition the states alike: equal keys <=> equal
// serializations, on generated machines (one and two engines, two adapters) and on scenario files (a
// cross-adapter monitored fence, cross-adapter native fences, an injected fault). The key writes an object
// deeply frozen in the machine as built (the OS's options, the adapters' caps, the timing, an engine's event
// arguments) as one word, where the oracle walks it: the partitions agreeing says that is exact. A key that
// leaves something out is caught (the last tests plant two: a key of memory alone, and a key that takes
// objects a step writes for deeply frozen ones).
import { describe, it, expect, vi, afterEach } from 'vitest';
import { createHash } from 'node:crypto';
import { exhaustive } from '../src/explore/search.js';
import { StateKeys, IGNORED_KEYS, LOG_READER_KEYS, eventKey, pendingEvents } from '../src/explore/state.js';
import { DEFAULT_MACHINE, type AnyModel, type ExploreMachine, type ExploreModel } from '../src/explore/model.js';
import type { World } from '../src/explore/world.js';
import { ScenarioModel } from '../src/explore/scenario-world.js';
import { findBuiltin } from '../src/scenario-files/builtin.js';
import { scenarioAdapters } from '../src/scenario-files/run.js';
import { Random } from '../src/base/rng.js';
import { Trace } from '../src/base/trace.js';
import { Scheduler } from '../src/base/scheduler.js';
import { HostWalk } from '../src/explore/host-walk.js';
import type { Machine } from '../src/machine/machine.js';

/** The oracle: the state's exact serialization (see the header). */
export function oracleText(keys: StateKeys, world: World): string {
  const machine = world.machine;
  const out: string[] = [];
  // Linear memory: every covered word.
  const words = new Uint32Array(machine.memory.buffer);
  for (const [start, end] of keys.coveredRanges()) out.push(`M${start}:${Array.from(words.subarray(start >>> 2, end >>> 2)).join(',')}`);
  // The pending events (a multiset: sorted), the virtual time and what the world's quiet checks read.
  out.push(`E${pendingEvents(machine.scheduler).map(eventKey).sort().join('|')}`, `T${machine.scheduler.nowNs}`, `X${JSON.stringify(world.keyExtras?.() ?? [])}`);
  // The host objects: a generic walk.
  const skip = new Set<object>([machine.scheduler, machine.trace, machine.layout, machine.memory, machine.module as object, ...machine.port.tallies()]);
  for (const adapter of machine.adapters) { skip.add(adapter.core); skip.add(adapter.hardware.core); skip.add(adapter.hardware.layout); }
  const ignored = new Set([...IGNORED_KEYS, ...(keys.logsAbstracted ? LOG_READER_KEYS : [])]);
  const seen = new Map<object, number>();
  const walk = (value: unknown): void => {
    switch (typeof value) {
      case 'undefined': out.push('u'); return;
      case 'boolean': case 'bigint': out.push(`${typeof value}:${value}`); return;
      case 'number': out.push(`n:${Object.is(value, -0) ? 0 : value}`); return;
      case 'string': out.push(`s:${JSON.stringify(value)}`); return;
      case 'function': out.push('f'); return;
      case 'symbol': out.push('y'); return;
    }
    if (value === null) { out.push('null'); return; }
    const object = value as object;
    // A frozen plain object of primitives is a value: its content wherever met, never its identity.
    const record = [Object.prototype, null].includes(Object.getPrototypeOf(object)) && Object.isFrozen(object) &&
      Object.values(Object.getOwnPropertyDescriptors(object)).every((d) => 'value' in d && (d.value === null || (typeof d.value !== 'object' && typeof d.value !== 'function')));
    if (record) { out.push(`record ${JSON.stringify(Object.entries(object).filter(([k, v]) => v !== undefined && !ignored.has(k)).map(([k, v]) => [k, typeof v === 'bigint' ? `${v}n` : Object.is(v, -0) ? 0 : v]))}`); return; }
    if (seen.has(object)) { out.push(`@${seen.get(object)}`); return; }
    seen.set(object, seen.size);
    if (skip.has(object) || object instanceof Random || object instanceof Trace || object instanceof Scheduler ||
        object instanceof WebAssembly.Memory || object instanceof WebAssembly.Module || object instanceof WebAssembly.Instance ||
        object instanceof WebAssembly.Global || object instanceof ArrayBuffer || object instanceof SharedArrayBuffer) { out.push('skipped'); return; }
    // By index: a hole reads as undefined, as the model reads it.
    if (Array.isArray(object)) { out.push(`[${object.length}`); for (let i = 0; i < object.length; i++) walk(object[i]); out.push(']'); return; }
    if (object instanceof Map) { out.push(`{map ${object.size}`); for (const [k, item] of object) { walk(k); walk(item); } out.push('}'); return; }
    if (object instanceof Set) { out.push(`{set ${object.size}`); for (const item of object) walk(item); out.push('}'); return; }
    if (ArrayBuffer.isView(object)) {
      out.push(object.buffer === machine.memory.buffer ? 'view of memory' : `bytes ${Array.from(new Uint8Array(object.buffer, object.byteOffset, object.byteLength)).join(',')}`);
      return;
    }
    out.push('{');
    for (const key of Object.keys(object)) {
      const item = (object as Record<string, unknown>)[key];
      if (item === undefined || ignored.has(key)) continue;
      out.push(`.${key}`);
      walk(item);
    }
    out.push('}');
  };
  walk(machine);
  if (world.explorer.faultsInjected) walk(world.explorer);
  return out.join('\n');
}
/** The oracle's serialization as a SHA-256 (to keep thousands). */
const oracle = (keys: StateKeys, world: World): string => createHash('sha256').update(oracleText(keys, world)).digest('hex');

/**
 * Runs the search with every key checked against the oracle: returns the keys taken, the distinct states by
 * each, and the first pairs where they disagree (two states one key, or one state two keys).
 */
function checkKeys(model: AnyModel, key: (keys: StateKeys, original: () => string) => string = (_keys, original) => original()): { keys: number; states: number; oracleStates: number; disagreements: string[] } {
  const original = StateKeys.prototype.key;
  const byKey = new Map<string, string>(), byOracle = new Map<string, string>();
  const disagreements: string[] = [];
  let taken = 0;
  const spy = vi.spyOn(StateKeys.prototype, 'key').mockImplementation(function (this: StateKeys) {
    const world = (this as unknown as { world: World }).world;
    const k = key(this, () => original.call(this));
    const o = oracle(this, world);
    taken++;
    const oracleOfKey = byKey.get(k), keyOfOracle = byOracle.get(o);
    if (oracleOfKey !== undefined && oracleOfKey !== o && disagreements.length < 5) disagreements.push(`key ${k} names two states the oracle tells apart`);
    if (keyOfOracle !== undefined && keyOfOracle !== k && disagreements.length < 5) disagreements.push(`one state (oracle ${o.slice(0, 16)}) has keys ${keyOfOracle} and ${k}`);
    byKey.set(k, o); byOracle.set(o, k);
    return k;
  });
  try {
    exhaustive(model);
  } finally {
    spy.mockRestore();
  }
  return { keys: taken, states: byKey.size, oracleStates: byOracle.size, disagreements };
}

const machineModel = (machine: Partial<ExploreMachine>): ExploreModel => ({ machine: { ...DEFAULT_MACHINE, ...machine }, variant: 'barrier', seed: 1, osGranularity: 'step' });

async function scenarioModel(name: string, faults = 0): Promise<ScenarioModel> {
  const builtin = findBuiltin(name)!;
  return new ScenarioModel({ scenario: builtin.scenario!, source: builtin.name, adapters: await scenarioAdapters(builtin.scenario!, builtin.name), time: 'untimed', variant: 'barrier', faults });
}

afterEach(() => { vi.restoreAllMocks(); });

describe('the state key against its plain definition', () => {
  it.each([
    ['the default machine', machineModel({})],
    ['two engines, two fences', machineModel({ engines: 2, fences: 2, waiters: 2, signals: 1 })],
    ['two adapters with a CPU signal', machineModel({ adapters: 2, fences: 2, waiters: 1, signals: 1, cpuSignals: 1 })],
  ])('NF-10 partitions every state of %s as the oracle does', (_name, model) => {
    const r = checkKeys(model);
    expect(r.disagreements).toEqual([]);
    expect(r.states).toBe(r.oracleStates);
    expect(r.keys).toBeGreaterThan(r.states);
  });

  it.each([
    ['scenario-2b', 0],
    ['scenario-1', 0],
    ['device-removal', 1],
  ])('NF-10 partitions every state of the scenario %s (faults %d) as the oracle does', async (name, faults) => {
    const r = checkKeys(await scenarioModel(name, faults));
    expect(r.disagreements).toEqual([]);
    expect(r.states).toBe(r.oracleStates);
  });

  it('catches a key that leaves something out: the host objects and pending events', () => {
    // The planted key: linear memory's covered words alone. The oracle still sees the rest, so states the
    // planted key merges (a step's event pending or not, an OS operation at one phase or the next) are reported.
    const hidden = (keys: StateKeys, original: () => string): string => {
      const words = new Uint32Array((keys as unknown as { world: World }).world.machine.memory.buffer);
      const hash = createHash('sha256');
      for (const [start, end] of keys.coveredRanges()) hash.update(words.subarray(start >>> 2, end >>> 2));
      // The real key's walk too: the snapshot the search may save here is kept by it.
      original();
      return hash.digest('hex').slice(0, 16);
    };
    const r = checkKeys(machineModel({ engines: 2, fences: 2, waiters: 2, signals: 1 }), hidden);
    expect(r.disagreements.length).toBeGreaterThan(0);
    expect(r.disagreements[0]).toMatch(/names two states the oracle tells apart/);
  });

  it('catches a constant that is not one: objects a step writes, taken for deeply frozen ones', () => {
    // The planted key: the GPU engines' records (an engine's cursor, its pending tick, its signal in flight) look
    // frozen when the key numbers its constants, so it writes each as one word and misses what the GPU's steps
    // write there. Object.freeze is what makes the real ones constant: a look is not enough.
    const isFrozen = Object.isFrozen;
    const planted = new Set<object>();
    const plant = (value: unknown): void => {
      if (value === null || typeof value !== 'object' || planted.has(value)) return;
      planted.add(value);
      for (const item of Object.values(value)) plant(item);
    };
    const learn = HostWalk.prototype.learnConstants;
    vi.spyOn(HostWalk.prototype, 'learnConstants').mockImplementation(function (this: HostWalk, roots: readonly object[]) {
      for (const adapter of (roots[0] as Machine).adapters) plant((adapter.hardware as unknown as { engines: object[] }).engines);
      learn.call(this, roots);
    });
    vi.spyOn(Object, 'isFrozen').mockImplementation((value) => planted.has(value as object) || isFrozen(value));
    const r = checkKeys(machineModel({ engines: 2, fences: 2, waiters: 2, signals: 1 }));
    expect(planted.size).toBeGreaterThan(2);
    expect(r.disagreements.length).toBeGreaterThan(0);
    expect(r.disagreements[0]).toMatch(/names two states the oracle tells apart/);
  });
});
