// The explorer's state key (src/explore/state.ts) sees each kind of difference two protocol states can have:
// a word of linear memory wherever it is (the key hashes memory sparsely: each non-zero word with its index),
// a write-buffer entry a GPU step leaves, a field only the driver writes (the CMP's read in step c), a pending
// event, a field name, and a log index where the logs wake waiters (left out, as documented, where they feed
// the timeline only). Each case plants the difference in a real state and checks the key moves, and comes back
// when the difference is undone. The visited table (src/explore/visited.ts) keeps keys and sleep sets exactly.
import { describe, it, expect, vi, afterEach } from 'vitest';
import { readFileSync } from 'node:fs';
import { Runner } from '../src/explore/search.js';
import type { ExploreModel } from '../src/explore/model.js';
import { ScenarioModel } from '../src/explore/scenario-world.js';
import { parseScenario } from '../src/scenario-files/load.js';
import { scenarioAdapters } from '../src/scenario-files/run.js';
import { readLogLayout } from '../src/core/bindings.js';
import { VisitedTable, keyLanes } from '../src/explore/visited.js';
import { exhaustive } from '../src/explore/search.js';
import { StateKeys } from '../src/explore/state.js';
import { zeroScan } from '../src/explore/zero-scan.js';
import { deepFreeze } from '../src/base/freeze.js';

const model: ExploreModel = { machine: { fences: 1, waiters: 2, signals: 2, engines: 1, adapters: 1, cpuSignals: 0 }, variant: 'barrier', seed: 1, osGranularity: 'step' };

/** The index of the first enabled event matching, or -1. */
function find(runner: Runner, match: (kind: string, owner: string) => boolean): number {
  return runner.enabled().findIndex((e) => match(e.kind, e.owner));
}

afterEach(() => { vi.restoreAllMocks(); });

/** The objects a snapshot's host part keeps (HostRecord: each object, its field names or its kind and count, its values). */
function keptObjects(record: { entries: readonly unknown[] }): Set<unknown> {
  const kept = new Set<unknown>();
  const entries = record.entries;
  for (let at = 0; at < entries.length;) {
    kept.add(entries[at++]);
    const names = entries[at++];
    at += typeof names === 'number' ? 1 + (entries[at] as number) : (names as readonly string[]).length;
  }
  return kept;
}

describe('the state key', () => {
  it('NF-10 sees one word of linear memory anywhere it covers: set, moved to another word, changed, cleared', () => {
    const runner = new Runner(model);
    for (let i = 0; i < 3; i++) runner.take(0);
    const words = new Uint32Array(runner.world.machine.memory.buffer);
    const keys = runner.keys;
    const ranges = keys.coveredRanges();
    // Zero words at a range's start, in its middle and at its very end (the sparse hash skips zeros eight at a time).
    const zeros: number[] = [];
    for (const [start, end] of ranges) {
      for (const address of [start, start + 4 * Math.floor((end - start) / 8), end - 4, end - 8, end - 12]) {
        if (address >= start && address < end && words[address >>> 2] === 0 && !zeros.includes(address)) zeros.push(address);
      }
    }
    expect(zeros.length).toBeGreaterThan(6);
    const before = keys.key();
    const seen = new Set([before]);
    for (const address of zeros) {
      expect(keys.covers(address)).toBe(true);
      words[address >>> 2] = 1;
      const key = keys.key();
      expect(seen.has(key), `a 1 at ${address} gives a key seen before`).toBe(false);
      seen.add(key);
      words[address >>> 2] = 0x8000_0000;
      expect(keys.key()).not.toBe(key);
      words[address >>> 2] = 0;
      expect(keys.key()).toBe(before);
    }
    // Differences that a multiply-only hash cancels: the top bit of two words, each pair of non-zero words.
    const nonZero: number[] = [];
    for (const [start, end] of ranges) for (let a = start; a < end && nonZero.length < 12; a += 4) if (words[a >>> 2] !== 0) nonZero.push(a >>> 2);
    expect(nonZero.length).toBeGreaterThan(3);
    for (let x = 0; x < nonZero.length; x++) {
      for (let y = x + 1; y < nonZero.length; y++) {
        words[nonZero[x]] ^= 0x8000_0000; words[nonZero[y]] ^= 0x8000_0000;
        expect(keys.key(), `words ${nonZero[x]} and ${nonZero[y]} with their top bits flipped`).not.toBe(before);
        words[nonZero[x]] ^= 0x8000_0000; words[nonZero[y]] ^= 0x8000_0000;
      }
    }
    expect(keys.key()).toBe(before);
    // What the key leaves out (documented: the out buffer, statistics) does not move it.
    const L = runner.world.machine.layout;
    const stat = runner.world.machine.adapters[0].privateBase + L.offsets.gpuSignals;
    expect(keys.covers(stat)).toBe(false);
    words[stat >>> 2]++;
    expect(keys.key()).toBe(before);
    words[stat >>> 2]--;
  });

  it('NF-01 sees every word a GPU signal\'s first step writes (the engine\'s write buffer, the queue\'s position) but its statistics', () => {
    const runner = new Runner(model);
    const words = new Uint32Array(runner.world.machine.memory.buffer);
    const copy = words.slice();
    const gpu = find(runner, (kind) => kind === 'engine-tick');
    expect(gpu).toBeGreaterThanOrEqual(0);
    runner.take(gpu);
    const after = runner.keys.key();
    const changed: number[] = [];
    for (let i = 0; i < words.length; i++) if (words[i] !== copy[i] && runner.keys.covers(i * 4)) changed.push(i);
    expect(changed.length).toBeGreaterThan(0);
    for (const i of changed) {
      const now = words[i];
      words[i] = copy[i];
      expect(runner.keys.key(), `word ${i} put back`).not.toBe(after);
      words[i] = now;
    }
    expect(runner.keys.key()).toBe(after);
  });

  it('NF-09 sees a field only the driver writes: what the CMP\'s step c read, in its DDI in progress', () => {
    const runner = new Runner(model);
    // w0 waits: the OS adds the waiter, then its MonitoredValue write starts the driver's DDI in steps.
    runner.take(find(runner, (kind, owner) => kind === 'thread-resume' && owner.startsWith('process')));
    runner.take(find(runner, (kind) => kind === 'os-step'));
    const operation = (runner.world.machine.os as unknown as { waits: { operation?: { ddi?: { steps?: { currentValue: bigint; position: number } } } } }).waits.operation;
    const steps = operation?.ddi?.steps;
    expect(steps, 'a DDI in progress').toBeDefined();
    const before = runner.keys.key();
    steps!.currentValue += 1n;
    expect(runner.keys.key()).not.toBe(before);
    steps!.currentValue -= 1n;
    expect(runner.keys.key()).toBe(before);
    steps!.position++;
    expect(runner.keys.key()).not.toBe(before);
    steps!.position--;
    // A field added with a value is seen; a field holding undefined counts as none (documented).
    (steps as unknown as Record<string, unknown>).planted = 0;
    expect(runner.keys.key()).not.toBe(before);
    (steps as unknown as Record<string, unknown>).planted = undefined;
    expect(runner.keys.key()).toBe(before);
  });

  it('sees a pending event\'s arguments and two objects of one class with different fields', () => {
    const runner = new Runner(model);
    const before = runner.keys.key();
    // A pending event due later (its time is in the key; its arguments too, frozen here).
    const event = runner.world.machine.scheduler.pendingEvents()[0] as { timeNs: number };
    event.timeNs += 1;
    expect(runner.keys.key()).not.toBe(before);
    event.timeNs -= 1;
    expect(runner.keys.key()).toBe(before);
    // The walk caches each class's field names: an instance whose field is renamed in place (same values, same
    // order) is still told apart, and so is one whose fields come in another order.
    const thread = runner.world.threads[0].thread as unknown as Record<string, unknown>;
    const keys = Object.keys(thread);
    const values = keys.map((k) => thread[k]);
    const field = keys.find((k) => typeof thread[k] === 'number')!;
    const rebuild = (names: string[], order: number[]) => {
      for (const k of Object.keys(thread)) delete thread[k];
      for (const i of order) thread[names[i]] = values[i];
    };
    const inOrder = keys.map((_, i) => i);
    rebuild(keys.map((k) => (k === field ? `${k}Renamed` : k)), inOrder);
    expect(runner.keys.key()).not.toBe(before);
    rebuild(keys, [...inOrder].reverse());
    expect(runner.keys.key()).not.toBe(before);
    rebuild(keys, inOrder);
    expect(runner.keys.key()).toBe(before);
  });

  it('sees every byte of a typed array of the host (whole words, odd bytes, unaligned views, 64-bit elements, a buffer resized), bigints negative or past 64 bits and a Map\'s or Set\'s entries', () => {
    const runner = new Runner(model);
    runner.take(0);
    const machine = runner.world.machine as unknown as Record<string, unknown>;
    const shared = new ArrayBuffer(32);
    const resizable = new (ArrayBuffer as unknown as new (length: number, options: { maxByteLength: number }) => ArrayBuffer & { resize(length: number): void })(8, { maxByteLength: 16 });
    const planted = {
      odd: new Uint8Array(7), unaligned: new Uint16Array(shared, 2, 5), wide: new BigUint64Array(shared, 16, 2),
      tracking: new Uint8Array(resizable), big: 1n, map: new Map<unknown, unknown>([['a', 1]]), set: new Set<unknown>([1]),
    };
    machine.plantedBytes = planted;
    const keys = new StateKeys(runner.world);
    const before = keys.key();
    const moves = (change: () => void, undo: () => void, what: string): void => {
      change();
      expect(keys.key(), what).not.toBe(before);
      undo();
      expect(keys.key(), `${what}, undone`).toBe(before);
    };
    for (let i = 0; i < 7; i++) moves(() => { planted.odd[i] = 1; }, () => { planted.odd[i] = 0; }, `byte ${i} of 7`);
    for (let i = 0; i < 5; i++) moves(() => { planted.unaligned[i] = 0x8001; }, () => { planted.unaligned[i] = 0; }, `unaligned element ${i}`);
    for (let i = 0; i < 2; i++) for (const v of [1n, 1n << 32n, 1n << 63n]) moves(() => { planted.wide[i] = v; }, () => { planted.wide[i] = 0n; }, `64-bit element ${i} = ${v}`);
    for (const v of [0n, -1n, 1n << 32n, (1n << 64n) - 1n, (1n << 64n) + 1n, 1n - (1n << 64n), -(1n << 64n) + 1n - (1n << 64n), (1n << 200n) + 1n]) {
      moves(() => { planted.big = v; }, () => { planted.big = 1n; }, `bigint ${v}`);
    }
    // Bigints whose low 64 bits are equal: negative against unsigned (-1n and 2^64 - 1 wrote one set of words
    // before), and past 64 bits.
    for (const [x, y] of [[-1n, (1n << 64n) - 1n], [1n - (1n << 64n), 1n], [(1n << 64n) + 5n, 5n], [(1n << 64n) + 5n, (2n << 64n) + 5n], [-5n, -5n - (1n << 64n)]]) {
      planted.big = x;
      const first = keys.key();
      planted.big = y;
      expect(keys.key(), `${x} against ${y}`).not.toBe(first);
    }
    planted.big = 1n;
    expect(keys.key()).toBe(before);
    // A view that tracks a resizable buffer: grown, its new bytes are read; shrunk back, the key returns.
    resizable.resize(12);
    const grown = keys.key();
    expect(grown).not.toBe(before);
    for (let i = 8; i < 12; i++) { planted.tracking[i] = 1; expect(keys.key(), `grown byte ${i}`).not.toBe(grown); planted.tracking[i] = 0; }
    resizable.resize(8);
    expect(keys.key()).toBe(before);
    moves(() => { planted.map.set('a', 2); }, () => { planted.map.set('a', 1); }, 'a Map\'s value');
    moves(() => { planted.map.set('b', 1); }, () => { planted.map.delete('b'); }, 'a Map\'s entry added');
    moves(() => { planted.map.delete('a'); planted.map.set('b', 1); }, () => { planted.map.delete('b'); planted.map.set('a', 1); }, 'a Map\'s key');
    moves(() => { planted.set.add(2); }, () => { planted.set.delete(2); }, 'a Set\'s item added');
    moves(() => { planted.set.delete(1); planted.set.add(2); }, () => { planted.set.delete(2); planted.set.add(1); }, 'a Set\'s item');
  });

  it('LOG-04 sees a log index where the logs wake waiters, and leaves it out where they feed the timeline only', async () => {
    const file = 'examples/explore/log-race.yaml';
    const scenario = parseScenario(readFileSync(file, 'utf8'), file);
    const runner = new Runner(new ScenarioModel({ scenario, source: file, adapters: await scenarioAdapters(scenario, file), time: 'timed', variant: 'barrier' }));
    expect(runner.keys.logsAbstracted).toBe(false);
    const core = runner.world.machine.adapters[0].core as unknown as Parameters<typeof readLogLayout>[0] & { queueLogBuffer(q: number, t: number): number };
    const layout = readLogLayout(core);
    const queue = runner.world.queues[0];
    const index = core.queueLogBuffer(queue.coreQueue, layout.typeSignals) + layout.indexOffset;
    const words = new Uint32Array(runner.world.machine.memory.buffer);
    const before = runner.keys.key();
    expect(runner.keys.covers(index)).toBe(true);
    words[index >>> 2]++;
    expect(runner.keys.key()).not.toBe(before);
    words[index >>> 2]--;
    // The generated machine has no optimized interrupts: its logs are left out of the key.
    const plain = new Runner(model);
    expect(plain.keys.logsAbstracted).toBe(true);
    const plainCore = plain.world.machine.adapters[0].core as unknown as typeof core;
    const plainIndex = plainCore.queueLogBuffer(plain.world.queues[0].coreQueue, layout.typeSignals) + layout.indexOffset;
    expect(plain.keys.covers(plainIndex)).toBe(false);
  });
});

describe('the visited table', () => {
  it('keeps every key apart, through growth, with each state\'s sleep set interned', () => {
    const table = new VisitedTable();
    const keys: string[] = [];
    for (let i = 1; i <= 5000; i++) keys.push((Math.imul(i, 2654435761) >>> 0).toString(16).padStart(8, '0') + (i % 7 === 0 ? '00000000' : (Math.imul(i, 40503) >>> 0).toString(16).padStart(8, '0')));
    keys.push('0000000000000000', 'ffffffffffffffff');
    for (const [i, key] of keys.entries()) {
      expect(table.find(key)).toBe(-1);
      table.add(key, table.sleepSet(i % 3 === 0 ? [] : [`t${i % 5}`, `t${i % 2}`]));
    }
    expect(table.size).toBe(keys.length);
    for (const [i, key] of keys.entries()) {
      const slot = table.find(key);
      expect(slot).toBeGreaterThanOrEqual(0);
      expect(table.sleepNames(table.data(slot)).sort()).toEqual(i % 3 === 0 ? [] : [...new Set([`t${i % 5}`, `t${i % 2}`])].sort());
    }
    // Equal lists share one pool entry; a set keeps the order it was given in (the search explores awake
    // transitions in that order), each name once.
    expect(table.sleepSet(['t1', 't0'])).toBe(table.sleepSet(['t1', 't0', 't1']));
    expect(table.sleepNames(table.sleepSet(['t1', 't0']))).toEqual(['t1', 't0']);
    expect(table.sleepNames(table.sleepSet(['t0', 't1']))).toEqual(['t0', 't1']);
    expect(table.find('0123456789abcdef')).toBe(-1);
    expect(keyLanes('80000000ffffffff')).toEqual([-0x8000_0000, -1]);
    // Adding a key twice is a bug of the search: refused.
    expect(() => table.add(keys[0], 0)).toThrow(/added twice/);
    expect(table.bytes / table.size).toBeLessThan(64);
  });

  it('reports its bytes: under 64 per state on the default machine', () => {
    const r = exhaustive(model);
    expect(r.stats.states).toBe(696);
    expect(r.stats.visitedBytes).toBeGreaterThan(0);
    expect(r.stats.visitedBytes / r.stats.states).toBeLessThan(64);
  });

  it('NF-10 writes a deeply frozen object of the machine as built as one word, and walks what is frozen later or not all the way down', () => {
    const runner = new Runner(model);
    const machine = runner.world.machine as unknown as Record<string, unknown>;
    // The model's constants are frozen where it builds them: a write throws (ES modules are strict).
    const os = (machine.os as { inspect: { os: { options: { nativeFence: boolean }; adapters: { caps: { VidSchCaps: number } }[] } } }).inspect.os;
    expect(() => { os.options.nativeFence = false; }).toThrow(TypeError);
    expect(() => { os.adapters[0].caps.VidSchCaps = 0; }).toThrow(TypeError);
    // Objects planted before the key learns its constants (new StateKeys): frozen at the top only, frozen over a
    // Map, deeply frozen; and one frozen after. A change under any of the first two, and a replacement of the
    // last, move the key.
    const inner = { x: 1 };
    const map = new Map<string, number>();
    machine.plantedShallow = Object.freeze({ inner });
    machine.plantedMap = Object.freeze({ map });
    machine.plantedDeep = deepFreeze({ y: { z: 1 } });
    const keys = new StateKeys(runner.world);
    const before = keys.key();
    inner.x = 2;
    expect(keys.key()).not.toBe(before);
    inner.x = 1;
    map.set('a', 1);
    expect(keys.key()).not.toBe(before);
    map.clear();
    expect(keys.key()).toBe(before);
    const deep = machine.plantedDeep;
    machine.plantedDeep = deepFreeze({ y: { z: 1 } }); // equal contents, another object (frozen after the key learnt)
    expect(keys.key()).not.toBe(before);
    machine.plantedDeep = deep;
    expect(keys.key()).toBe(before);
    // Two keys of one state built apart (two processes) agree: the constants are numbered in the machine as built.
    const other = new Runner(model);
    const otherMachine = other.world.machine as unknown as Record<string, unknown>;
    otherMachine.plantedShallow = Object.freeze({ inner: { x: 1 } });
    otherMachine.plantedMap = Object.freeze({ map: new Map() });
    otherMachine.plantedDeep = deepFreeze({ y: { z: 1 } });
    expect(new StateKeys(other.world).key()).toBe(before);
  });

  it('NF-10 learns the objects constant by design as constants: frozen where they are made, one word each, never kept', () => {
    const runner = new Runner(model);
    const machine = runner.world.machine;
    const field = (object: unknown, name: string): Record<string, unknown> => (object as Record<string, Record<string, unknown>>)[name];
    const os = field(machine.os.inspect, 'os');
    const driver = field(field(os, 'port'), 'adapters') as unknown as Record<string, unknown>[];
    const reference = field(driver[0], 'driver');
    const hardware = machine.adapters[0].hardware as unknown as Record<string, unknown>;
    const vidMmAdapter = (field(field(machine.os.inspect, 'vidMm'), 'adapters') as unknown as Record<string, unknown>[])[0];
    const engines = field(hardware, 'engines') as unknown as Record<string, unknown>[];
    const byDesign: [string, unknown][] = [
      ['the driver\'s options', field(reference, 'options')],
      ['the driver\'s native fence caps', field(field(reference, 'options'), 'nativeFenceCaps')],
      ['the OS\'s callback table the driver holds', field(reference, 'os')],
      ['the OS caps the driver read', field(reference, 'osCaps')],
      ['the driver\'s stretch reporter', field(hardware, 'stretchReporter')],
      ...[...(field(reference, 'queues') as unknown as Map<number, unknown>).values()].map((q, i): [string, unknown] => [`the driver's queue ${i}`, q]),
      ...[...(field(hardware, 'queues') as unknown as Map<number, unknown>).values()].map((q, i): [string, unknown] => [`the GPU's queue ${i}`, q]),
      ['the waits\' hooks', field(field(os, 'waits'), 'hooks')],
      ['the lifetime\'s hooks', field(field(os, 'lifetime'), 'hooks')],
      ['the late-release cache', field(field(os, 'lifetime'), 'lateReleases')],
      ['the monitored fences\' hooks', field(field(os, 'monitored'), 'hooks')],
      ['the submission scratch', field(field(os, 'hwQueues'), 'scratch')],
      ...(field(vidMmAdapter, 'segments') as unknown as Record<string, unknown>[]).map((s, i): [string, unknown] => [`segment ${i}'s descriptor`, s.descriptor]),
      ['the aperture\'s descriptor', field(field(vidMmAdapter, 'aperture'), 'descriptor')],
      ['the waitAsync owner', field(machine.processes[0], 'asyncOwner')],
    ];
    expect(byDesign.length).toBeGreaterThanOrEqual(15);
    expect(() => { field(reference, 'options').ringEntries = 1; }).toThrow(TypeError);
    const keys = new StateKeys(runner.world);
    const known = (keys as unknown as { walk: { known: WeakMap<object, { constant: number }> } }).walk.known;
    const kept = keptObjects(keys.keep());
    for (const [name, object] of byDesign) {
      expect(object, name).toBeTypeOf('object');
      expect(Object.isFrozen(object), `${name} is frozen`).toBe(true);
      expect(known.get(object as object)?.constant, `${name} is a constant of the key`).toBeGreaterThanOrEqual(0);
      expect(kept.has(object), `${name} is not kept`).toBe(false);
    }
    // An engine's events carry its frozen arguments (a constant), not an object each: run until one is pending.
    for (let step = 0; step < 40 && !engines.some((e) => e.event); step++) runner.take(0);
    const event = engines.map((e) => e.event as { args: object } | undefined).find((e) => e !== undefined);
    expect(event, 'an engine event pending').toBeDefined();
    expect(engines.some((e) => e.args === event!.args)).toBe(true);
  });

  it.each([['WebAssembly SIMD', true], ['JavaScript (no SIMD)', false]])('NF-10 finds every non-zero word of memory when it skips zeros: %s', (_name, simd) => {
    if (!simd) vi.spyOn(WebAssembly, 'validate').mockReturnValue(false);
    for (const shared of [true, false]) {
      const memory = new WebAssembly.Memory({ initial: 1, maximum: 2, shared });
      const scan = zeroScan(memory);
      expect(String(scan).includes('native code'), 'the scan is the WebAssembly one where SIMD is there').toBe(simd);
      const words = new Int32Array(memory.buffer);
      // Single non-zero words: at a 64-byte step's first and last word, in the last part shorter than a step, the
      // memory's last word, one with only the top bit, and none at all.
      for (const at of [-1, 0, 15, 16, 17, 100, 4093, 16379, 16383]) {
        words.fill(0);
        if (at >= 0) words[at] = at === 100 ? 0x8000_0000 : 1;
        for (const [from, to] of [[0, 16384], [4, 16384], [64, 16380], [68, 4096], [16320, 16384], [400, 400]]) {
          const found = scan(from * 4, to * 4);
          const inRange = at >= from && at < to;
          // Nothing non-zero skipped; the step found holds the word; the end when there is none.
          expect(found % 4).toBe(0);
          expect(found).toBeGreaterThanOrEqual(from * 4);
          if (inRange) expect(at * 4 - found, `word ${at} in [${from}, ${to}), found ${found}`).toBeGreaterThanOrEqual(0);
          if (inRange) expect(at * 4 - found).toBeLessThan(64);
          else expect(found).toBe(to * 4);
        }
      }
    }
  });

  it('NF-10 keys a frozen record by its content: one record in two fields or two equal ones is one state; a changed value or a shared mutable object is another', () => {
    const runner = new Runner(model);
    const machine = runner.world.machine as unknown as Record<string, unknown>;
    const keys = new StateKeys(runner.world);
    // A wait's result as Waits hands them out: frozen, primitives only, shared by the waiters woken at one time.
    const result = Object.freeze({ status: 'SUCCESS', timeNs: 5, immediate: false, index: undefined });
    machine.plantedFirst = result;
    machine.plantedSecond = result;
    const shared = keys.key();
    machine.plantedSecond = Object.freeze({ ...result });
    expect(keys.key(), 'two equal frozen records').toBe(shared);
    machine.plantedSecond = Object.freeze({ ...result, timeNs: 6 });
    expect(keys.key(), 'a record with another value').not.toBe(shared);
    machine.plantedSecond = Object.freeze({ ...result, detail: { timeNs: 5 } });
    expect(keys.key(), 'a frozen object holding an object is no record').not.toBe(shared);
    // A snapshot keeps the fields that hold a record, never the record (nothing can write to it).
    const kept = keptObjects(keys.keep());
    expect(kept.has(result), 'a frozen record is not kept').toBe(false);
    expect(kept.has(machine.plantedSecond), 'a frozen object holding an object is kept').toBe(true);
    // A mutable object: whether two fields hold one or two is state (a write through one shows through the other).
    const mutable = { timeNs: 5 };
    machine.plantedFirst = mutable;
    machine.plantedSecond = mutable;
    const sharedMutable = keys.key();
    machine.plantedSecond = { ...mutable };
    expect(keys.key(), 'a mutable object shared, then two').not.toBe(sharedMutable);
  });

  it('NF-10 gives a state the same key however it was reached: each quiet state\'s path replayed on a fresh machine has its key (timed, waits woken at different times)', async () => {
    // One thread waits for gpu0's fence, then gpu1's: which shared result each wait holds depends on the order the
    // wake-ups happened in (Waits hands out one frozen result per time); the key must not.
    const text = `
name: two-wakes
machine:
  seed: 1
  timing: { commandNs: 100, interruptLatencyNs: 100, jitter: 0.5 }
  adapters: [ { name: gpu0, engines: 1 }, { name: gpu1, engines: 1 } ]
processes: [ { name: app } ]
fences:
  - { name: a, process: app, adapter: gpu0 }
  - { name: b, process: app, adapter: gpu1 }
queues:
  - { name: q0, process: app, adapter: gpu0, commands: [ { signal: { fence: a, value: 1 } } ] }
  - { name: q1, process: app, adapter: gpu1, commands: [ { signal: { fence: b, value: 1 } } ] }
threads:
  - { name: t0, process: app, steps: [ { wait: { id: w0, fences: [a], values: [1] } }, { wait: { id: w1, fences: [b], values: [1] } } ] }
`;
    const scenario = parseScenario(text, 'two-wakes.yaml');
    const adapters = await scenarioAdapters(scenario, 'two-wakes.yaml');
    const make = () => new ScenarioModel({ scenario, source: 'two-wakes.yaml', adapters, time: 'timed', variant: 'barrier' });
    const quiet: [string, number[], string[] | undefined][] = [];
    const result = exhaustive(make(), { onQuiet: (key, path, bounds) => quiet.push([key, [...path], bounds && [...bounds]]) });
    expect(result.stats.complete).toBe(true);
    expect(quiet.length).toBeGreaterThan(20);
    const differ: string[] = [];
    for (const [key, path, bounds] of quiet) {
      const replayed = new Runner(make(), { restore: 'replay' });
      for (let i = 0; i < path.length; i++) replayed.take(path[i], bounds?.[i] ?? '');
      if (replayed.key() !== key) differ.push(path.join(','));
    }
    expect(differ).toEqual([]);
  }, 120_000);
});
