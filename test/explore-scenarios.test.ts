// The race explorer on scenario files (src/explore/scenario-world.ts, docs/EXPLORER.md): the seed
// document's cross-adapter tables exhausted and their row orders among the explored schedules, every
// built-in scenario explored timed and untimed, the variants that break the new paths with their
// counterexamples replayed byte for byte, --driver with and without the OS's re-read, faults, bounds,
// time, and schedule files of version 3.
import { describe, it, expect, beforeAll } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exhaustive, Runner, type SearchResult } from '../src/explore/search.js';
import { replay } from '../src/explore/replay.js';
import { namedSteps, scheduleOf } from '../src/explore/replay.js';
import { parseSchedule, scheduleJson } from '../src/explore/schedule.js';
import { ScenarioModel, type TimeMode } from '../src/explore/scenario-world.js';
import type { Variant } from '../src/explore/variants.js';
import { findBuiltin, runnableScenarios } from '../src/scenario-files/builtin.js';
import { parseScenario, ScenarioError } from '../src/scenario-files/load.js';
import { scenarioAdapters } from '../src/scenario-files/run.js';
import type { Scenario } from '../src/scenario-files/types.js';
import { rowsFor, type ScenarioId } from '../src/comparisons/cross-adapter-tables.js';
import { createMachineSync } from '../src/machine/machine.js';
import { cli } from './helpers.js';

let dir: string;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'wddm-fence-explore-scenarios-')); });


async function model(name: string, time: TimeMode, options: { variant?: Variant; faults?: number; scenario?: Scenario } = {}): Promise<ScenarioModel> {
  const scenario = options.scenario ?? findBuiltin(name)!.scenario!;
  return new ScenarioModel({ scenario, source: name, adapters: await scenarioAdapters(scenario, name), time, variant: options.variant ?? 'barrier', faults: options.faults });
}

const messages = (r: SearchResult) => [...r.violations.values()].map((v) => `${v.invariant}: ${v.message}`);

describe('the seed document\'s cross-adapter scenarios', () => {
  it('XA-06 explore scenario-1, scenario-2a and scenario-2b exhaust every interleaving of their steps, timed and untimed, and hold', async () => {
    for (const name of ['scenario-1', 'scenario-2a', 'scenario-2b']) {
      for (const time of ['timed', 'untimed'] as const) {
        const r = exhaustive(await model(name, time));
        expect(r.stats.complete, `${name} ${time}`).toBe(true);
        expect(messages(r), `${name} ${time}`).toEqual([]);
        expect(r.stats.quietStates, `${name} ${time}`).toBeGreaterThan(0);
      }
    }
    const cli1 = await cli('explore', 'scenario-1');
    expect(cli1.code).toBe(0);
    expect(cli1.stdout).toMatch(/scenario: scenario-1 \(scenarios\/scenario-1\.yaml\); timed, each latency at either end of its jitter span; variant barrier; seed 1/);
    expect(cli1.stdout).toMatch(/holds {5}expectations/);
    expect(cli1.stdout).toContain('every invariant holds in every reachable state');
  });

  it('XA-06 each table\'s documented row order (GPU wait, GPU signal) is the order of one of the explored schedules', async () => {
    const contexts: Record<ScenarioId, { waiter: string; signaller: string }> = { '1': { waiter: 'iGPU', signaller: 'dGPU' }, '2a': { waiter: 'iGPU', signaller: 'dGPU' }, '2b': { waiter: 'dGPU', signaller: 'iGPU' } };
    for (const id of ['1', '2a', '2b'] as const) {
      const m = await model(`scenario-${id}`, 'timed');
      const ends: { path: number[]; bounds: string[] }[] = [];
      exhaustive(m, { reduction: 'states', onQuiet: (_key, path, bounds) => ends.push({ path: [...path], bounds: [...(bounds ?? [])] }) });
      expect(ends.length).toBeGreaterThan(0);
      const rows = rowsFor(id, 'gpu', 'gpu');
      const { waiter, signaller } = contexts[id];
      const ctx = { waitQueue: `${waiter}.wait`, signalQueue: `${signaller}.signal`, waiter, signaller, process: 'app', waitContext: `${waiter}.context`, signalContext: `${signaller}.context` };
      let inOrder = 0;
      for (const end of ends) {
        const events = replay(m, namedSteps(m, end.path, end.bounds), { trace: true }).world.machine.trace.events;
        // Each row matched by an event after the one that matched the row before it.
        let at = -1, all = true;
        for (const row of rows) {
          const found = events.findIndex((e, i) => i > at && row.match(e, ctx));
          if (found < 0) { all = false; break; }
          at = found;
        }
        if (all) inOrder++;
      }
      expect(inOrder, `scenario ${id}: explored schedules whose trace has every row in the table's order`).toBeGreaterThan(0);
    }
  });
});

describe('every built-in scenario, timed and untimed', () => {
  // Exhausted in this test: the others are bounded here (their counts are in docs/EXPLORER.md).
  const EXHAUSTED = new Set(['scenario-1/timed', 'scenario-1/untimed', 'scenario-2a/timed', 'scenario-2a/untimed', 'scenario-2b/timed', 'scenario-2b/untimed',
    'deadlock/timed', 'deadlock/untimed', 'device-removal/timed', 'device-removal/untimed', 'cross-process/timed', 'demo/timed', 'forced-log-overrun/timed',
    'allocation-lifetime/timed', 'allocation-lifetime/untimed']);
  it('each holds in every state explored, with what needs the file\'s times marked timedOnly in the file', async () => {
    const names = runnableScenarios().map((b) => b.name);
    expect(names.length).toBeGreaterThanOrEqual(13);
    for (const name of names) {
      for (const time of ['timed', 'untimed'] as const) {
        const exhausted = EXHAUSTED.has(`${name}/${time}`);
        const r = exhaustive(await model(name, time), { maxStates: exhausted ? 100_000 : 400 });
        expect(messages(r), `${name} ${time}`).toEqual([]);
        if (exhausted) expect(r.stats.complete, `${name} ${time}`).toBe(true);
        else expect(r.stats.stoppedBy, `${name} ${time}`).toEqual(r.stats.complete ? [] : ['states']);
      }
    }
  });

  it('the untimed mode leaves out what the file marks timedOnly, and only that: without the marks scenario-1 fails untimed', async () => {
    const s = findBuiltin('scenario-1')!.scenario!;
    expect(Object.keys(s.expect!.timedOnly!)).toEqual(['waits.cpuWait', 'crossAdapterCounters.crossWakes']);
    const unmarked: Scenario = { ...s, expect: { ...s.expect, timedOnly: undefined } };
    const r = exhaustive(await model('scenario-1', 'untimed', { scenario: unmarked }));
    expect(r.violations.get('expectations')?.message).toMatch(/^expect\.waits\.cpuWait( \(.*\))?: wait cpuWait is woken: expected woken, got timedOut$/);
    // Timed, the marks change nothing: the timed exploration judges every expectation.
    expect(messages(exhaustive(await model('scenario-1', 'timed', { scenario: unmarked })))).toEqual([]);
  });

  it('expect.timedOnly names expectations of the file: anything else is refused with its place, nothing runs', () => {
    const text = readFileSync(join(__dirname, '..', 'examples', 'explore', 'hand-off.yaml'), 'utf8').replace('waits.frame:', 'waits.framez:');
    let error: unknown;
    try { parseScenario(text, 'hand-off.yaml'); } catch (e) { error = e; }
    expect(error).toBeInstanceOf(ScenarioError);
    const problem = (error as ScenarioError).problems[0];
    expect(problem.path).toBe('expect.timedOnly');
    expect(problem.line).toBeGreaterThan(20);
    expect(problem.message).toMatch(/^expect\.timedOnly has "waits\.framez"; expected an expectation of this file: a group of expect \("fences", "waits", "interrupts"\) or one of its entries, as group\.entry$/);
  });
});

describe('explore FILE: a user\'s own scenario file', () => {
  const handOff = join(__dirname, '..', 'examples', 'explore', 'hand-off.yaml');
  it('explores it timed and untimed (the README\'s example), and a schedule of it replays as printed', async () => {
    const timed = await cli('explore', handOff);
    expect(timed.code, timed.stderr).toBe(0);
    expect(timed.stdout).toMatch(/scenario: hand-off \(.*hand-off\.yaml\); timed/);
    const untimed = await cli('explore', handOff, '--untimed');
    expect(untimed.code, untimed.stderr).toBe(0);
    expect(untimed.stdout).toMatch(/; untimed; variant barrier; seed 1/);
    // examples/explore/README.md: with a TDR at any step too; one that wakes nobody is caught though the
    // waiter times out (its fence is at UINT64_MAX then: a lost wake-up, src/machine/lost-wakeups.ts).
    const faults = await cli('explore', handOff, '--faults', '1');
    expect(faults.code, faults.stdout).toBe(0);
    expect(faults.stdout).toMatch(/; up to 1 fault injected \(TDR or adapter removal, at any step\); seed 1/);
    const noWake = await cli('explore', handOff, '--faults', '1', '--variant', 'tdr-no-wake', '--out', join(dir, 'hand-off-tdr-no-wake.json'));
    expect(noWake.code, noWake.stdout).toBe(1);
    expect(noWake.stdout).toMatch(/lost wake-up: app:presenter timed out at 100000 ns waiting for ready >= 1 though it is 18446744073709551615/);
    // The README's hand-off: the command printed replays the counterexample, the same step list byte for byte.
    const readme = readFileSync(join(__dirname, '..', 'examples', 'explore', 'README.md'), 'utf8');
    expect(readme).toContain('explore examples/explore/hand-off.yaml --faults 1 --variant tdr-no-wake   # exit 1');
    expect(readme).toContain('explore --replay wddm-fence-counterexample.json examples/explore/hand-off.yaml   # exit 1');
    const command = /replay it with: wddm-fence explore (--replay \S+ \S+hand-off\.yaml)$/m.exec(noWake.stdout)![1].split(' ');
    const replayed = await cli('explore', ...command);
    expect(replayed.code, replayed.stderr).toBe(1);
    expect(noWake.stdout.endsWith(replayed.stdout)).toBe(true);
  });

  it('NF-01 timed: each latency is explored at both ends of its span (a step\'s latency choices are transitions of their own, written in the schedule)', async () => {
    const m = await model('hand-off', 'timed', { scenario: parseScenario(readFileSync(handOff, 'utf8'), handOff) });
    let high = 0;
    exhaustive(m, { onQuiet: (_k, _p, bounds) => { if (bounds?.some((b) => b.includes('1'))) high++; } });
    expect(high).toBeGreaterThan(0);
    const exact = parseScenario(readFileSync(handOff, 'utf8').replace('seed: 1', 'seed: 1\n  timing: { jitter: 0 }'), handOff);
    const withJitter = exhaustive(m).stats.quietStates;
    const without = exhaustive(await model('hand-off', 'timed', { scenario: exact })).stats.quietStates;
    expect(without).toBeLessThan(withJitter);
  });
});

describe('variants that break the new paths: each exits 1, and its counterexample replays byte for byte as printed', () => {
  const examples = join(__dirname, '..', 'examples', 'explore');
  const cases: { what: string; args: string[]; violated: RegExp }[] = [
    { what: 'XA-04 cross-adapter: a driver that skips its NotificationOnly rescan', args: ['scenario-1', '--variant', 'skip-notification-rescan'], violated: /iGPU\.wait is not blocked at the end: expected false, got true/ },
    { what: 'XA-03 cross-adapter: a shared fence\'s MonitoredValue not held at 0', args: ['scenario-1', '--untimed', '--variant', 'no-cross-adapter-hold'], violated: /cross-adapter counter propagations is 1: expected 1, got 0/ },
    { what: 'MF-07 monitored fence: the 32-bit window compared without extension', args: [join(examples, 'wraparound.yaml'), '--variant', 'no-32bit-extension'], violated: /fence F ends at 4294967301: expected 4294967301, got 5/ },
    { what: 'LOG-04 log: the index published before its entry', args: [join(examples, 'log-race.yaml'), '--variant', 'log-index-first'], violated: /no-lost-wakeup: app:waiter still waits for F ≥ 2 but CurrentValue is 2/ },
    { what: 'NF-20 fault: a TDR that leaves a waiter blocked (the file\'s own TDR)', args: ['device-removal', '--variant', 'tdr-no-wake'], violated: /app:waiter still waits for neverSignalled ≥ 100 but CurrentValue is MAX/ },
    { what: 'NF-20 fault: a TDR injected at any step (--faults 1) that leaves a waiter blocked', args: ['demo', '--faults', '1', '--variant', 'tdr-no-wake'], violated: /app:presenter still waits for frameConsumed ≥ 3 but CurrentValue is MAX/ },
  ];
  for (const c of cases) {
    it(c.what, async () => {
      const out = join(dir, `${c.args[2] ?? c.args[1]}-${c.args.length}.json`);
      const found = await cli('explore', ...c.args, '--out', out);
      expect(found.code, found.stderr).toBe(1);
      expect(found.stdout).toMatch(c.violated);
      const command = /replay it with: wddm-fence explore (.*)$/m.exec(found.stdout)![1].split(' ');
      const replayed = await cli('explore', ...command);
      expect(replayed.code, replayed.stderr).toBe(1);
      expect(found.stdout.endsWith(replayed.stdout)).toBe(true);
      const schedule = parseSchedule(readFileSync(out, 'utf8'), out);
      expect(schedule.version).toBe(3);
      expect(schedule.scenario!.sha256).toMatch(/^[0-9a-f]{64}$/);
      // The same file with the reference driver and OS holds.
      const reference = await cli('explore', ...c.args.filter((a, i) => a !== '--variant' && c.args[i - 1] !== '--variant'));
      expect(reference.code, reference.stdout).toBe(0);
    });
  }

  it('a schedule refuses to replay on another scenario text, naming both', async () => {
    const copy = join(dir, 'log-race.yaml');
    copyFileSync(join(examples, 'log-race.yaml'), copy);
    const out = join(dir, 'log-race-schedule.json');
    expect((await cli('explore', copy, '--variant', 'log-index-first', '--out', out)).code).toBe(1);
    writeFileSync(copy, readFileSync(copy, 'utf8').replace('durationNs: 1000', 'durationNs: 1001'));
    const replayed = await cli('explore', '--replay', out, copy);
    expect(replayed.code).toBe(2);
    expect(replayed.stderr).toMatch(/was found on the scenario file .*log-race\.yaml as it was then \(SHA-256 [0-9a-f]{12}…\), but .*log-race\.yaml is not that text now/);
  });
});

describe('explore --driver: the driver with the OS as documented, and the driver alone', () => {
  it('NF-11 a CMP step order that only the OS\'s re-read of CurrentValue hides is reported, and its schedule (the OS\'s re-read off) replays as printed', async () => {
    const driver = join(__dirname, '..', 'examples', 'explore', 'drivers', 'cmp-reads-first.mjs');
    const out = join(dir, 'nf11.json');
    const r = await cli('explore', '--driver', driver, '--out', out);
    expect(r.code, r.stderr).toBe(1);
    const [documented, alone] = r.stdout.split(/^2\. /m);
    expect(documented).toMatch(/1\. the driver with the OS as documented[\s\S]*complete\ninvariants:\n(\s+holds .*\n)+/);
    expect(documented).not.toMatch(/VIOLATED/);
    expect(alone).toMatch(/^the driver alone \(the OS's re-read after UpdateMonitoredValues off: NF-11 judged on its own\)/);
    expect(alone).toMatch(/VIOLATED {2}no-lost-wakeup/);
    expect(r.stdout).toMatch(/^NF-11: the driver alone loses what only the OS's re-read of CurrentValue finds/m);
    const schedule = parseSchedule(readFileSync(out, 'utf8'), out);
    expect(schedule.resample).toBe(false);
    const command = /replay it with: wddm-fence explore (.*)$/m.exec(r.stdout)![1].split(' ');
    expect(command).toContain('--driver');
    const replayed = await cli('explore', ...command);
    expect(replayed.code).toBe(1);
    expect(r.stdout.endsWith(replayed.stdout)).toBe(true);
    expect(replayed.stdout).toMatch(/the OS does not re-read CurrentValue \(the driver alone\)/);
  });
});

describe('faults, bounds and time', () => {
  it('NF-20 --faults 1 injects a TDR or an adapter removal between any two steps; the reference holds, and a schedule with one replays', async () => {
    const m = await model('scenario-1', 'timed', { faults: 1 });
    const r = exhaustive(m);
    expect(messages(r)).toEqual([]);
    expect(r.stats.complete).toBe(true);
    expect(r.stats.states).toBeGreaterThan(exhaustive(await model('scenario-1', 'timed')).stats.states);
    // Walks the first options until `where` holds at a state, then takes the fault of `kind` on `adapter` there.
    const faultWhere = (kind: string, where: (runner: Runner, last: string) => boolean) => {
      const runner = new Runner(m);
      let last = '';
      for (let i = 0; i < 60; i++) {
        const options = runner.enabled();
        const fault = options.findIndex((e) => e.owner === 'explorer' && e.args.kind === kind);
        if (fault >= 0 && where(runner, last)) { runner.take(fault); return [...runner.path]; }
        const next = options.findIndex((e) => e.owner !== 'explorer');
        if (next < 0) break;
        last = `${options[next].owner} ${options[next].kind}`;
        runner.take(next);
      }
      return undefined;
    };
    // After an OS operation's step with the operation still in flight (its lock held): between two of its steps.
    const insideOperation = (runner: Runner, last: string) => runner.world.machine.os.lockHeld && last === 'dxgkrnl os-step';
    const betweenLogSteps = (runner: Runner) => runner.world.machine.adapters.some((a) => a.hardware.signalInFlight(0)?.phase === 'log-advance');
    for (const kind of ['tdr', 'removal']) {
      for (const [where, test] of [['inside an OS operation', insideOperation], ['between a signal\'s log steps', betweenLogSteps]] as const) {
        const path = faultWhere(kind, test);
        expect(path, `${kind} ${where}`).toBeDefined();
        const steps = namedSteps(m, path!);
        expect(steps.at(-1)!.event).toMatch(new RegExp(`^explorer fault \\{adapter=(iGPU|dGPU),kind=${kind}\\}$`));
        // The fault is at no operation boundary: the step before it is an OS operation's step, or a signal's step 2.
        expect(steps.at(-2)!.event, `${kind} ${where}`).toMatch(where === 'inside an OS operation' ? /^dxgkrnl os-step/ : /^(iGPU|dGPU) engine-(tick|step)/);
        const replayed = replay(m, steps, { trace: false });
        expect(replayed.steps.at(-1)!.description).toMatch(kind === 'tdr' ? /^the explorer injects a TDR on (iGPU|dGPU)/ : /^the explorer removes (iGPU|dGPU) for good/);
        // From there every continuation holds too: the search below the fault's state is part of `r`, which found nothing.
      }
    }
  });

  it('a schedule file written before faults had kinds (its fault named "explorer fault {adapter=…}") replays as the TDR it was', async () => {
    const m = await model('scenario-1', 'timed', { faults: 1 });
    // A few steps, then a TDR on the last adapter listed (its recorded index moved when removals were added).
    const runner = new Runner(m);
    for (let i = 0; i < 3; i++) runner.take(runner.enabled().findIndex((e) => e.owner !== 'explorer'));
    const options = runner.enabled();
    const tdrs = options.filter((e) => e.owner === 'explorer' && e.args.kind === 'tdr');
    const last = tdrs.at(-1)!;
    runner.take(options.indexOf(last));
    const steps = namedSteps(m, [...runner.path]);
    const now = replay(m, steps, { trace: false });
    // The same file as it was written then: the fault without its kind, at the index it had (one option per adapter).
    const firstExplorer = options.findIndex((e) => e.owner === 'explorer');
    const legacy = steps.map((s, i) => i < steps.length - 1 ? s : { choice: firstExplorer + tdrs.length - 1, event: `explorer fault {adapter=${String(last.args.adapter)}}` });
    expect(legacy.at(-1)!.choice).not.toBe(steps.at(-1)!.choice);
    const file = parseSchedule(scheduleJson({ ...scheduleOf(m, steps, undefined), steps: legacy }), 'old.json');
    const then = replay(m, file.steps, { trace: false });
    expect(then.steps.map((s) => s.description)).toEqual(now.steps.map((s) => s.description));
    expect(then.steps.at(-1)!.description).toMatch(/^the explorer injects a TDR on/);
    // A legacy name no adapter has is refused, naming it.
    const wrong = parseSchedule(scheduleJson({ ...scheduleOf(m, steps, undefined), steps: [...legacy.slice(0, -1), { choice: 0, event: 'explorer fault {adapter=nowhere}' }] }), 'old.json');
    expect(() => replay(m, wrong.steps, { trace: false })).toThrow(/"explorer fault \{adapter=nowhere,kind=tdr\}" \(an injected TDR, as files before faults had kinds name it\), but no such event is enabled here/);
  });

  it('NF-20 an injected adapter removal stops the adapter for good (no bug check) and ends every wait on it', async () => {
    const m = await model('device-removal', 'untimed', { faults: 1 });
    const runner = new Runner(m);
    const fault = runner.enabled().findIndex((e) => e.owner === 'explorer' && e.args.kind === 'removal');
    expect(fault).toBeGreaterThanOrEqual(0);
    runner.take(fault);
    const machine = runner.world.machine;
    expect(machine.adapters[0].state).toBe('stopped');
    expect(machine.summary().bugChecks).toEqual([]);
    expect(() => machine.removeAdapter('gpu0')).toThrow(/gpu0.*removed \(adapter removed \(injected by the explorer\)\)/);
  });

  it('a state, depth or time limit reached is reported as no proof, never silently', async () => {
    const states = await cli('explore', 'demo', '--untimed', '--max-states', '50');
    expect(states.code).toBe(0);
    expect(states.stdout).toMatch(/NOT complete \(--max-states reached\): no proof/);
    expect(states.stdout).toMatch(/not seen {2}no-lost-wakeup/);
    expect(states.stdout).toContain('no violation in the states explored (the search was bounded: not a proof)');
    const depth = await cli('explore', 'scenario-1', '--max-depth', '5');
    expect(depth.stdout).toMatch(/NOT complete \(--max-depth reached\): no proof/);
    const time = await cli('explore', 'interrupt-payload', '--untimed', '--max-seconds', '1');
    expect(time.stdout).toMatch(/NOT complete \(--max-seconds reached\): no proof/);
    const json = JSON.parse((await cli('explore', 'scenario-1', '--max-depth', '5', '--json')).stdout);
    expect(json.search).toMatchObject({ complete: false, stoppedBy: ['depth'] });
  });

  it('schedule.time \'untimed\': every event is due at once, whatever its delay, so a timeout is enabled beside what could satisfy it', () => {
    const m = createMachineSync({ schedule: { time: 'untimed' }, trace: false });
    const app = m.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const f = app.createNativeFence({ hDevice });
    app.createThread('w', function* (cpu) { yield cpu.wait({ objects: [f.hSyncObject], values: [1n], timeoutNs: 1_000_000 }); });
    const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
    app.submit({ hHwQueue: q.hHwQueue, commands: [{ work: { durationNs: 50_000 } }, { signal: { hSyncObject: f.hSyncObject, value: 1n } }] });
    m.scheduler.take(m.scheduler.enabled().findIndex((e) => e.kind === 'thread-resume'));
    const kinds = m.scheduler.enabled().map((e) => `${e.kind}@${e.timeNs}`);
    expect(kinds).toContain('wait-timeout@0');
    expect(kinds).toContain('engine-tick@0');
    expect(() => createMachineSync({ schedule: { time: 'sometimes' as never } })).toThrow(/schedule\.time is "sometimes"; expected one of "virtual", "untimed"/);
  });

  it('schedule files of version 3 are checked: a scenario, its time and each step\'s latency choices', () => {
    const base = { schedule: 'wddm-fence explore', version: 3, scenario: { name: 'x', source: 'x', builtin: true, sha256: 'a'.repeat(64) }, time: 'timed', faults: 0, variant: 'barrier', osGranularity: 'step', seed: 1, steps: [{ choice: 0, event: 'e', bounds: '01' }] };
    expect(parseSchedule(JSON.stringify(base), 'f').steps[0].bounds).toBe('01');
    const bad = (patch: Record<string, unknown>) => () => parseSchedule(JSON.stringify({ ...base, ...patch }), 'f');
    expect(bad({ version: 2 })).toThrow(/scenario is "\{…\}"; expected no scenario in a version 1 or 2 file/);
    expect(bad({ time: 'sometimes' })).toThrow(/time is "sometimes"; expected one of "timed", "untimed"/);
    expect(bad({ steps: [{ choice: 0, event: 'e', bounds: '2' }] })).toThrow(/steps\[0\]\.bounds is "2"; expected the end of each latency the step drew/);
    expect(bad({ machine: { fences: 1 } })).toThrow(/machine is "\{…\}"; expected no machine beside a scenario/);
    expect(bad({ scenario: { ...base.scenario, sha256: 'xyz' } })).toThrow(/scenario\.sha256 is "xyz"; expected the SHA-256/);
  });
});

describe('snapshots of a scenario\'s machine', () => {
  it('NF-10 restoring snapshots reaches exactly the quiet states that rebuilding and replaying does (host state in fields, none in closures)', async () => {
    for (const [name, time] of [['allocation-lifetime', 'timed'], ['scenario-2b', 'untimed'], ['device-removal', 'timed']] as const) {
      const m = await model(name, time);
      const keys = (restore: 'snapshot' | 'replay') => {
        const found = new Set<string>();
        const r = exhaustive(m, { restore, onQuiet: (key) => found.add(key) });
        expect(r.stats.restore).toBe(restore);
        return found;
      };
      expect([...keys('snapshot')].sort(), `${name} ${time}`).toEqual([...keys('replay')].sort());
    }
  });
});
