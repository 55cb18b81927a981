// The exhaustive search past one process (src/explore/search.ts "Shards",
// src/cli/explore-shards.ts): shards whose states together are the one
// process's, reports, their merge, worker threads, and the progress line.
import { cli } from './helpers.js';
import { describe, it, expect, beforeAll } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../src/cli/main.js';
import { exhaustive, sleptMask } from '../src/explore/search.js';
import { DEFAULT_MACHINE, type AnyModel, type ExploreModel, type Variant } from '../src/explore/model.js';
import { ScenarioModel } from '../src/explore/scenario-world.js';
import { findBuiltin } from '../src/scenario-files/builtin.js';
import { scenarioAdapters } from '../src/scenario-files/run.js';
import { ProgressLine } from '../src/explore/progress.js';
import { packKeys, unpackKeys } from '../src/cli/explore-shards.js';
import { SharedVisited, SharedVisitedFull } from '../src/explore/shared-visited.js';

let dir: string;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'wddm-fence-shards-')); });


const machineModel = (variant: Variant, machine: Partial<typeof DEFAULT_MACHINE> = {}): ExploreModel => ({ machine: { ...DEFAULT_MACHINE, ...machine }, variant, seed: 1, osGranularity: 'step' });

async function scenarioModel(name: string, time: 'timed' | 'untimed'): Promise<ScenarioModel> {
  const builtin = findBuiltin(name)!;
  return new ScenarioModel({ scenario: builtin.scenario!, source: builtin.name, adapters: await scenarioAdapters(builtin.scenario!, builtin.name), time, variant: 'barrier', faults: 0 });
}

/** The one process's states, quiet states and verdicts, and the union of n shards'. */
function compare(model: AnyModel, count: number, splitDepth: number) {
  const keys = new Set<string>();
  const one = exhaustive(model, { onState: (key) => keys.add(key) });
  const union = new Set<string>(), quiet = new Set<string>(), invariants = new Set<string>();
  let owned = 0, roots = -1;
  for (let index = 0; index < count; index++) {
    const r = exhaustive(model, { shard: { index, count, splitDepth } });
    for (const k of r.shard!.keys) union.add(k);
    for (const k of r.shard!.quietKeys) quiet.add(k);
    for (const k of r.violations.keys()) invariants.add(k);
    owned += r.shard!.owned;
    if (roots >= 0) expect(r.shard!.roots, 'every shard meets the same subtree roots').toBe(roots);
    roots = r.shard!.roots;
    expect(r.stats.complete).toBe(true);
  }
  expect(owned, 'each subtree root is one shard\'s').toBe(roots);
  return { one: { states: one.stats.states, quiet: one.stats.quietStates, keys, invariants: [...one.violations.keys()].sort() }, union, quiet, invariants: [...invariants].sort(), roots };
}

describe('shards of the exhaustive search', () => {
  it('the union of the shards\' states is the one process\'s, state for state, with its quiet states and verdicts (machines, variants, scenarios timed and untimed, 2–4 shards, split depths 1–10)', async () => {
    const models: [string, AnyModel][] = [
      ['barrier', machineModel('barrier')], ['no-barrier', machineModel('no-barrier')], ['no-resample 2 engines', machineModel('no-resample', { engines: 2 })],
      ['scenario-1 timed', await scenarioModel('scenario-1', 'timed')], ['scenario-2b untimed', await scenarioModel('scenario-2b', 'untimed')],
    ];
    for (const [name, model] of models) {
      for (const [count, splitDepth] of [[2, 1], [3, 4], [4, 8], [2, 10]]) {
        const r = compare(model, count, splitDepth);
        const where = `${name}, ${count} shards, split depth ${splitDepth}`;
        expect(r.union.size, where).toBe(r.one.states);
        expect([...r.union].every((k) => r.one.keys.has(k)), where).toBe(true);
        expect(r.quiet.size, where).toBe(r.one.quiet);
        expect(r.invariants, where).toEqual(r.one.invariants);
      }
    }
    // The check can fail: one shard left out loses states where the split has more roots than one shard.
    const model = machineModel('barrier');
    const all = exhaustive(model).stats.states;
    const some = new Set<string>();
    for (const index of [0, 1]) for (const k of exhaustive(model, { shard: { index, count: 3, splitDepth: 8 } }).shard!.keys) some.add(k);
    expect(some.size).toBeLessThan(all);
  });

  it('shards that share a visited table (explore --workers N) search each state below the split once, and together reach the one process\'s states', async () => {
    for (const model of [machineModel('barrier', { fences: 2 }), machineModel('no-barrier'), await scenarioModel('scenario-2b', 'untimed')]) {
      const one = exhaustive(model);
      const table = new SharedVisited(SharedVisited.create(100_000));
      const union = new Set<string>(), quiet = new Set<string>();
      const seenBy = new Map<string, number>();
      const invariants = new Set<string>();
      let transitions = 0, top = 0;
      for (let index = 0; index < 3; index++) {
        const r = exhaustive(model, { shard: { index, count: 3, splitDepth: 3, shared: table } });
        transitions += r.stats.transitions;
        if (index === 2) top = r.stats.transitions;
        for (const k of r.shard!.keys) { union.add(k); seenBy.set(k, (seenBy.get(k) ?? 0) + 1); }
        for (const k of r.shard!.quietKeys) quiet.add(k);
        for (const k of r.violations.keys()) invariants.add(k);
      }
      expect(union.size).toBe(one.stats.states);
      expect(quiet.size).toBe(one.stats.quietStates);
      expect([...invariants].sort()).toEqual([...one.violations.keys()].sort());
      // A state two shards visited is one of the top's, which every shard walks: none below the split is searched twice.
      expect([...seenBy.values()].filter((n) => n !== 1 && n !== 3)).toEqual([]);
      // Their sleep sets stay on below the split: every transition below it is taken once, as in one process (the
      // top's, which every shard walks, three times). Without them below the split this machine takes more.
      expect(transitions).toBe(one.stats.transitions + 2 * top);
    }
  });

  it('the shared visited table: the first claim of a key wins, every later one meets it; a full table says so', () => {
    const table = new SharedVisited(SharedVisited.create(4));
    expect(table.claim('0123456789abcdef')).toBe(true);
    expect(table.claim('0123456789abcdef')).toBe(false);
    expect(table.claim('0000000000000000')).toBe(true);
    expect(table.claim('fedcba9876543210')).toBe(true);
    expect(() => new SharedVisited(new SharedArrayBuffer(36))).toThrow(/a power of two of 12-byte slots/);
    const small = new SharedVisited(new SharedArrayBuffer(24));
    small.claim('0000000000000001'); small.claim('0000000000000002');
    expect(() => small.claim('0000000000000003')).toThrow(SharedVisitedFull);
    expect(() => table.meet('1111111111111111', 2 ** 31)).toThrow(/at most 31 transitions/);
  });

  it('the shared visited table keeps what the claimer slept; each slept transition goes to the first worker that meets the state with it awake', () => {
    const table = new SharedVisited(SharedVisited.create(16));
    const slot = table.meet('00000000000000aa', 0b1011);            // claimed, with transitions 0, 1 and 3 slept
    expect(slot).toBeGreaterThanOrEqual(0);
    const met = table.meet('00000000000000aa', 0);
    expect(met).toBe(-(slot + 1));
    expect(table.narrow(slot, 0b1011)).toBe(0);                      // the same sleep set: nothing to explore
    expect(table.narrow(slot, 0b0011)).toBe(0b1000);                 // 3 awake here: this worker explores it
    expect(table.narrow(slot, 0b0001)).toBe(0b0010);                 // 3 is taken; 1 is this one's
    expect(table.narrow(slot, 0)).toBe(0b0001);
    expect(table.narrow(slot, 0)).toBe(0);                           // nothing slept is left
    expect(sleptMask(['a', 'b', 'c'], new Set(['c', 'a']))).toBe(0b101);
    expect(sleptMask(['a', 'b'], new Set(['a#1']))).toBe(-1);         // a latency choice's transition: no bit names it
    expect(sleptMask(Array.from({ length: 32 }, (_, i) => `e${i}`), new Set(['e0']))).toBe(-1);
  });

  it('a shard needs the full reduction and a shard index below the count', () => {
    const model = machineModel('barrier');
    expect(() => exhaustive(model, { reduction: 'states', shard: { index: 0, count: 2, splitDepth: 4 } })).toThrow(/needs the reduction 'full'/);
    expect(() => exhaustive(model, { shard: { index: 2, count: 2, splitDepth: 4 } })).toThrow(/expected 0 <= index < count/);
    expect(() => exhaustive(model, { shard: { index: 0, count: 2, splitDepth: 0 } })).toThrow(/splitDepth 0/);
  });

  it('state keys pack into 8 bytes each and back', () => {
    const keys = ['00000000000000ff', 'ffffffffffffffff', '0123456789abcdef'];
    const packed = packKeys(keys);
    expect(Buffer.from(packed, 'base64').length).toBe(24);
    expect(unpackKeys(packed, 'x')).toEqual([...keys].sort());
    expect(() => packKeys(['xyz'])).toThrow(/not 16 hex digits/);
    expect(() => unpackKeys(Buffer.alloc(5).toString('base64'), 'r.json')).toThrow(/r\.json: the packed state keys are 5 bytes/);
  });
});

describe('explore --shard i/n, --merge, --workers N', () => {
  it('four shard reports merge into the one process\'s verdict: states, quiet states, the violation, the shortest counterexample, a schedule that replays', async () => {
    const one = await cli('explore', '--variant', 'no-barrier', '--json', '--out', join(dir, 'one.json'));
    expect(one.code).toBe(1);
    const reports: string[] = [];
    for (let i = 1; i <= 4; i++) {
      const report = join(dir, `nb-${i}.json`);
      const shard = await cli('explore', '--variant', 'no-barrier', '--shard', `${i}/4`, '--report', report);
      expect([0, 1]).toContain(shard.code);
      expect(shard.stdout).toMatch(new RegExp(`shard ${i}/4 \\(split depth 8\\): \\d+ of \\d+ subtree roots`));
      expect(shard.stdout).toMatch(/shard report written to .*; the verdict is the merge of all 4/);
      expect(shard.stdout).not.toMatch(/ holds /);
      reports.push(report);
    }
    const merged = await cli('explore', '--merge', ...reports.reverse(), '--json', '--out', join(dir, 'merged.json'));
    expect(merged.code, merged.stderr).toBe(1);
    const a = JSON.parse(one.stdout), b = JSON.parse(merged.stdout);
    expect(b.search.states).toBe(a.search.states);
    expect(b.search.quietStates).toBe(a.search.quietStates);
    expect(b.search.complete).toBe(true);
    expect(b.invariants.map((i: { violated: boolean }) => i.violated)).toEqual(a.invariants.map((i: { violated: boolean }) => i.violated));
    expect(b.counterexample.steps).toBe(a.counterexample.steps);
    expect(b.merged.shards).toBe(4);
    expect(readFileSync(join(dir, 'merged.json'), 'utf8')).toBe(readFileSync(join(dir, 'one.json'), 'utf8'));
    const replayed = await cli('explore', '--replay', join(dir, 'merged.json'));
    expect(replayed.code).toBe(1);
  });

  it('a merge refuses reports of different searches, a missing or repeated shard, and files that are no reports, naming the file; nothing runs', async () => {
    const write = async (name: string, ...args: string[]) => {
      const report = join(dir, name);
      const r = await cli('explore', ...args, '--report', report);
      expect([0, 1]).toContain(r.code);
      return report;
    };
    const r1 = await write('m1.json', '--shard', '1/2');
    const r2 = await write('m2.json', '--shard', '2/2');
    const other = await write('o2.json', '--shard', '2/2', '--variant', 'no-barrier');
    const deeper = await write('d2.json', '--shard', '2/2', '--split-depth', '5');
    const cases: [string[], RegExp][] = [
      [[r1], /shard 2\/2 missing; expected all 2 reports of the search/],
      [[r1, r1, r2], /shard 1\/2 is given twice/],
      [[r1, other], /o2\.json" is a shard of another search than .*m1\.json": its command is .*no-barrier/],
      [[r1, deeper], /d2\.json" is a shard of another search .*: its split depth is 5, not 8/],
      [[r1, join(dir, 'none.json')], /none\.json" cannot be read: no such file/],
      [[], /--merge needs the report files of every shard/],
    ];
    const notJson = join(dir, 'not.json');
    writeFileSync(notJson, '{');
    cases.push([[r1, notJson], /not\.json" is not JSON/]);
    const wrongFormat = join(dir, 'wrong.json');
    writeFileSync(wrongFormat, JSON.stringify({ format: 'x' }));
    cases.push([[r1, wrongFormat], /wrong\.json" is not a shard report/]);
    const tampered = join(dir, 'tampered.json');
    writeFileSync(tampered, JSON.stringify({ ...JSON.parse(readFileSync(r2, 'utf8')), package: '0.0.1' }));
    cases.push([[r1, tampered], /its package version is "0\.0\.1"/]);
    const oldKeys = join(dir, 'old-keys.json');
    writeFileSync(oldKeys, JSON.stringify({ ...JSON.parse(readFileSync(r2, 'utf8')), version: 1 }));
    cases.push([[r1, oldKeys], /old-keys\.json" is a shard report of format version 1; expected version 2 \(a version 1 report holds state keys of the hash before/]);
    for (const [files, message] of cases) {
      const r = await cli('explore', '--merge', ...files, '--out', join(dir, 'never.json'));
      expect(r.code, files.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(existsSync(join(dir, 'never.json'))).toBe(false);
    }
    // The two that belong together merge.
    expect((await cli('explore', '--merge', r1, r2)).code).toBe(0);
    // A scenario file changed between the shards and the merge is refused.
    const file = join(dir, 'mine.yaml');
    writeFileSync(file, readFileSync(join(__dirname, '..', 'examples', 'explore', 'hand-off.yaml'), 'utf8'));
    const f1 = await write('f1.json', file, '--shard', '1/2'), f2 = await write('f2.json', file, '--shard', '2/2');
    writeFileSync(file, readFileSync(file, 'utf8') + '\n# changed\n');
    const changed = await cli('explore', '--merge', f1, f2);
    expect(changed.code).toBe(2);
    expect(changed.stderr).toMatch(/--merge: the shards searched another text of the scenario .* than the file reads now/);
  });

  it('bad shard options exit 2 with the reason', async () => {
    const cases: [string[], RegExp][] = [
      [['--shard', '3/2'], /--shard is "3\/2"; expected i\/n/],
      [['--shard', '1/2', '--reduction', 'states'], /--shard needs --reduction full/],
      [['--report', 'x.json'], /--report goes with --shard i\/n or --workers N/],
      [['--split-depth', '4'], /--split-depth goes with --shard/],
      [['--workers', '2', '--shard', '1/2'], /--workers does not go with --shard/],
      [['--shard', '1/2', '--split-depth', '0'], /--split-depth is "0"; expected an integer from 1/],
      [['--merge', 'a.json', '--variant', 'no-barrier'], /--variant does not go with --merge/],
    ];
    for (const [args, message] of cases) {
      const r = await cli('explore', ...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
    }
  });

  it('--workers 2 on worker threads (the command) gives the one process\'s counts and verdict', () => {
    const run = (...args: string[]) => spawnSync(process.execPath, [join(__dirname, '..', 'dist', 'cli.js'), 'explore', '--json', ...args], { encoding: 'utf8', cwd: dir });
    const one = JSON.parse(run('--fences', '2').stdout);
    const two = run('--fences', '2', '--workers', '2');
    expect(two.status, two.stderr).toBe(0);
    const merged = JSON.parse(two.stdout);
    expect(merged.search.states).toBe(one.search.states);
    expect(merged.search.quietStates).toBe(one.search.quietStates);
    expect(merged.merged.shards).toBe(2);
    expect(merged.invariants.every((i: { holds: boolean }) => i.holds)).toBe(true);
  });
});

describe('the progress line', () => {
  it('at most once a second, with states, states/s, depth, frontier and an estimate; cleared before the report', () => {
    let now = 0;
    const written: string[] = [];
    const line = new ProgressLine((t) => written.push(t), () => now);
    const stats = (states: number) => ({ states, transitions: states * 2, maxDepth: 12 });
    now = 500; line.update(stats(100), { done: 0.25, frontier: 7 });
    now = 900; line.update(stats(200), { done: 0.3, frontier: 8 }); // under a second after the last: not shown
    now = 1600; line.update(stats(400), { done: 0.5, frontier: 9 });
    line.end();
    expect(written).toEqual([
      '\r  100 states, 200 states/s, depth 12, frontier 7, ~25.0% of the tree (about 2 s left)\x1b[K',
      '\r  400 states, 250 states/s, depth 12, frontier 9, ~50.0% of the tree (about 2 s left)\x1b[K',
      '\r\x1b[2K',
    ]);
    const lines: string[] = [];
    let clock = 0;
    const plain = new ProgressLine((t) => lines.push(t), () => (clock += 2000), false);
    plain.update(stats(10), { done: 0, frontier: 1 });
    plain.end();
    expect(lines).toEqual(['  10 states, 5 states/s, depth 12, frontier 1, ~0.0% of the tree\n']);
  });

  it('explore --progress writes it on stderr; --json and a pipe without --progress write none', async () => {
    let now = 0;
    let stderr = '';
    const io = { out: () => {}, err: (t: string) => { stderr += t; }, nowMs: () => (now += 300) };
    await runCli(['explore', '--progress', '--fences', '2'], io);
    expect(stderr).toMatch(/^ {2}\d+ states, \d+ states\/s, depth \d+, frontier \d+, ~\d+\.\d% of the tree/m);
    stderr = '';
    await runCli(['explore', '--fences', '2', '--json'], { ...io, isTTY: true });
    await runCli(['explore', '--fences', '2'], io);
    expect(stderr).toBe('');
  });
});
