// The fuzz test (src/check/fuzz.ts, src/check/fuzz-property.ts): fast-check's cases over machine
// configurations (1–3 adapters, cross-adapter fences, the doorbell on and off, optimized interrupts on
// and off, No64BitAtomics adapters with monitored fences, user-mode halves that submit hostile GPU VAs),
// every rule checked after every call; a failure is shrunk to a minimal case. `npm test` runs a bounded
// number of cases; `npm run fuzz -- --seeds N` runs more. The minimal cases it found on main before
// issue 27's fixes are kept below, each a test of its own.
import { describe, expect } from 'vitest';
import { it } from '@fast-check/vitest';
import { caseArbitrary, runFuzz, fuzzCountsText } from '../src/check/fuzz-property.js';
import { runFuzzCase, type FuzzAdapterConfig, type FuzzCall, type FuzzConfig } from '../src/check/fuzz.js';

const CASES = 200;

describe('fuzz: random machines and calls keep every rule', () => {
  it.prop([caseArbitrary(60)], { numRuns: CASES, seed: 27 })(
    'NF-10 no lost wake-up, no fence moved backwards without AllowFenceRewind, no stale value after the OS\'s look, no write through a read-only mapping',
    ([config, calls]) => {
      const result = runFuzzCase(config, calls);
      expect(result.problem, result.problem && [...result.lines, `→ ${result.problem.problem}`].join('\n')).toBeUndefined();
    });

  it('the cases reach what the rules are about (several adapters, the doorbell, optimized interrupts, No64BitAtomics, hostile GPU VAs), and the runner reports none broken', () => {
    const report = runFuzz({ seed: 1, cases: 60, steps: 60 });
    const c = report.counts;
    console.log(fuzzCountsText(c));
    expect(report.failure).toBeUndefined();
    expect(c.cases).toBe(60);
    expect(c.adapters[2] + c.adapters[3]).toBeGreaterThan(20);
    for (const [what, n] of Object.entries({ doorbell: c.doorbell, optimized: c.optimized, no64BitAtomics: c.no64BitAtomics, hostile: c.hostileAdapters, hostileVas: c.hostileVas, hostileFaults: c.hostileFaults, cross: c.crossAdapterFences, monitored: c.monitoredFences, refused: c.refused, gpuRewinds: c.gpuRewinds, timedOut: c.waitsTimedOut })) {
      expect(n, what).toBeGreaterThan(0);
    }
    for (const kind of ['create', 'crossPair', 'share', 'signal', 'wait', 'destroy', 'submit', 'submitCommand', 'gpuWait', 'run', 'removeDevice', 'junk']) expect(c.actions[kind] ?? 0, kind).toBeGreaterThan(0);
  });
});

describe('fuzz: the minimal cases it found on main (issue 27), each failing there', () => {
  const plain: FuzzAdapterConfig = { engines: 1, optimized: false, noList: false, no64BitAtomics: false, hostile: false };
  const machine = (adapters: Partial<FuzzAdapterConfig>[], doorbell = false): FuzzConfig => ({ adapters: adapters.map((a) => ({ ...plain, ...a })), doorbell, doorbellRing: 2, seed: 0 });
  const create = (process: number, adapter: number, more: Partial<Extract<FuzzCall, { kind: 'create' }>> = {}): FuzzCall =>
    ({ kind: 'create', process, adapter, cross: false, shared: false, noSignalMaxValueOnTdr: false, monitored: false, ...more });
  const run: FuzzCall = { kind: 'run', all: true, ns: 0 };
  const keeps = (config: FuzzConfig, calls: FuzzCall[]) => {
    const result = runFuzzCase(config, calls);
    expect(result.problem, result.problem && [...result.lines, `→ ${result.problem.problem}`].join('\n')).toBeUndefined();
    return result.lines;
  };

  it('NF-04 a hostile user-mode half points a signal at its MonitoredValueGpuVa: a GPU page fault, MonitoredValue untouched (main: MonitoredValue written)', () => {
    const lines = keeps(machine([{ hostile: true }]), [
      { kind: 'createQueue', process: 0, adapter: 0, engine: 0, progress: false }, create(0, 0),
      { kind: 'submit', queue: 0, commands: [{ op: 'signal', handle: 0, delta: 0, hostile: 'monitoredValue' }, { op: 'wait', handle: 0, delta: 0 }] }, run,
    ]);
    expect(lines.join('\n')).toMatch(/through a hostile VA \(monitoredValue\)/);
  });

  it('NF-19 one cross-adapter fence through two adapters\' handles in one signal, the second value lower: refused (main: accepted, the fence moved back)', () => {
    const lines = keeps(machine([{}, {}]), [
      { kind: 'crossPair', process: 1, adapter: 0, to: 1 },
      { kind: 'signal', process: 1, handles: [0, 1], deltas: [3, 2, 0], rewind: false, badAt: 9, alias: true },
    ]);
    expect(lines.at(-1)).toMatch(/refused: INVALID_PARAMETER: objects\[0\] and objects\[1\] name the same fence/);
  });

  it('MF-07 a No64BitAtomics context writes 2^32 to a monitored fence nobody waits on: user mode reads 2^32 after the OS\'s look (main: 0)', () => {
    keeps(machine([{ no64BitAtomics: true }, {}]), [
      create(0, 0, { monitored: true }), { kind: 'createContext', process: 0, adapter: 0, engine: 0 },
      { kind: 'submitCommand', context: 0, handle: 0, delta: 8, workNs: 100 }, run,
    ]);
  });

  it('NF-10 doorbell on, the waiter\'s adapter optimized, the signal on the other adapter: the waiter wakes (main: lost)', () => {
    keeps(machine([{}, { optimized: true }], true), [
      { kind: 'crossPair', process: 0, adapter: 1, to: 1 },
      { kind: 'wait', process: 0, handles: [0], deltas: [1, 0, 0], waitAny: false, timeout: 0, withEvent: false, alias: false },
      { kind: 'createQueue', process: 1, adapter: 0, engine: 0, progress: false },
      { kind: 'submit', queue: 0, commands: [{ op: 'signal', handle: 0, delta: 1 }] }, run,
    ]);
  });

  it('XA-05 a device removal propagates a monitored record\'s and a native record\'s fences to one adapter together: both wake (main: the native one lost)', () => {
    keeps(machine([{}, {}]), [
      create(1, 1, { cross: true, shared: true, monitored: true }),
      { kind: 'share', handle: 0, to: 1, otherAdapter: true, keepNt: false },
      { kind: 'crossPair', process: 1, adapter: 1, to: 0 },
      { kind: 'wait', process: 1, handles: [2], deltas: [1, 0, 0], waitAny: false, timeout: 0, withEvent: true, alias: false },
      { kind: 'run', all: false, ns: 2116 }, { kind: 'removeDevice', adapter: 0 },
    ]);
  });

  it('MF-07 a cross-adapter monitored fence on a No64BitAtomics adapter: refused (main: a 64-bit GPU\'s rewind of the shared word was extended to UINT64_MAX − 63 and written back)', () => {
    const lines = keeps(machine([{ no64BitAtomics: true }, {}]), [
      { kind: 'createQueue', process: 1, adapter: 1, engine: 0, progress: false },
      create(0, 0, { cross: true, shared: true, monitored: true }),
      { kind: 'share', handle: 0, to: 1, otherAdapter: true, keepNt: false },
      { kind: 'submit', queue: 0, commands: [{ op: 'signal', handle: 0, delta: 0 }] },
      { kind: 'removeDevice', adapter: 0 }, { kind: 'run', all: false, ns: 0 },
      { kind: 'signal', process: 0, handles: [0], deltas: [0, 0, 0], rewind: false, badAt: 9, alias: false },
    ]);
    expect(lines[2]).toMatch(/refused: NOT_SUPPORTED: adapter "gpu0" has No64BitAtomics/);
  });
});
