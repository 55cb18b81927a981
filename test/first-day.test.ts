// What a newcomer's first day runs into (issue 33), each as the user meets it: the built command
// (dist/cli.js) in a child process, run from a folder outside the clone, its exit code, stdout and
// stderr; commands the tool prints are run as printed, through a shell.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync, cpSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMALL_SCENARIO } from './helpers.js';

const ROOT = join(__dirname, '..');
const CLI = join(ROOT, 'dist', 'cli.js');
let dir = '';
/** A folder on PATH whose `wddm-fence` runs this checkout's built command, as an installed bin would. */
let bin = '';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'wddm-fence first day '));
  bin = join(dir, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'wddm-fence'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} "$@"\n`, { mode: 0o755 });
});
afterAll(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });

/** Writes a file into the test's folder; its path. */
function write(name: string, text: string): string { const path = join(dir, name); writeFileSync(path, text); return path; }

function cli(args: string[], cwd = dir) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd, timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
/** A command line as the user would paste it into a shell, with this checkout's `wddm-fence` on PATH. */
function shell(command: string, cwd = dir) {
  const r = spawnSync('/bin/sh', ['-c', command], { encoding: 'utf8', cwd, timeout: 120_000, env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('explore: the replay command it prints', () => {
  it('NF-11 explore --driver FILE --out FILE prints a replay command that runs as printed and replays the same counterexample', () => {
    // a driver in a folder whose name needs quoting, and a schedule file name that does too
    const drivers = join(dir, 'my drivers');
    mkdirSync(drivers, { recursive: true });
    cpSync(join(ROOT, 'examples', 'drivers', 'broken', 'skips-barrier.mjs'), join(drivers, 'skips-barrier.mjs'));
    writeFileSync(join(drivers, 'package.json'), '{ "type": "module" }\n');
    const found = cli(['explore', '--driver', 'my drivers/skips-barrier.mjs', '--out', 'cx 1.json']);
    expect(found.code, found.stderr).toBe(1);
    const printed = /replay it with: (.*)$/m.exec(found.stdout)?.[1];
    expect(printed).toBe(`wddm-fence explore --replay 'cx 1.json' --driver 'my drivers/skips-barrier.mjs'`);
    const replayed = shell(printed!);
    expect(replayed.code, replayed.stderr).toBe(1);
    // the same step list, byte for byte, as the search printed after the command
    const stepList = found.stdout.slice(found.stdout.indexOf('\n\n', found.stdout.indexOf('replay it with:')) + 2);
    expect(stepList).toMatch(/^machine: [^]*VIOLATED no-lost-wakeup/);
    expect(replayed.stdout).toBe(stepList);
    const json = cli(['explore', '--driver', 'my drivers/skips-barrier.mjs', '--out', 'cx 2.json', '--json']);
    expect(JSON.parse(json.stdout).counterexample.replayCommand).toBe(`wddm-fence explore --replay 'cx 2.json' --driver 'my drivers/skips-barrier.mjs'`);
  });
});

describe('a driver module outside the clone', () => {
  it('CAP-01 NF-11 a copy of the template in a folder of its own loads in check-driver, explore --driver, a scenario file and createMachine: its \'wddm-fence\' is the running copy', () => {
    const driverDir = join(dir, 'elsewhere', 'my-driver');
    cpSync(join(ROOT, 'examples', 'drivers', 'template'), driverDir, { recursive: true });
    expect(existsSync(join(dir, 'elsewhere', 'node_modules'))).toBe(false);
    const checked = cli(['check-driver', 'elsewhere/my-driver/driver.mjs']);
    expect(checked.code, checked.stderr).toBe(0);
    expect(checked.stdout).toMatch(/^PASS: \d+ passed, 0 violated/m);
    const explored = cli(['explore', '--driver', 'elsewhere/my-driver/driver.mjs', '--fences', '1', '--waiters', '1', '--signals', '1']);
    expect(explored.code, explored.stderr).toBe(0);
    expect(explored.stdout).toContain('every invariant holds in every reachable state');
    writeFileSync(join(dir, 'elsewhere', 'own-driver.yaml'), SMALL_SCENARIO.replace('{ name: gpu0 }', '{ name: gpu0, driver: ./my-driver/driver.mjs }')
      + 'expect: { fences: { f: 2 }, waits: { w: woken } }\n');
    const ran = cli(['run', 'elsewhere/own-driver.yaml', '--quiet']);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain('PASSED');
    // the library, imported by path from a script in yet another folder: the driver's 'wddm-fence' is that same bundle
    writeFileSync(join(driverDir, 'exports-its-package.mjs'), `export * from './driver.mjs';
export { WddmError as ItsWddmError } from 'wddm-fence';\n`);
    writeFileSync(join(dir, 'library.mjs'), `const library = await import(process.argv[2]);
const machine = await library.createMachine({ adapters: [{ name: 'gpu0', driver: { module: './elsewhere/my-driver/driver.mjs' } }] });
const its = await import('./elsewhere/my-driver/exports-its-package.mjs');
console.log(machine.adapters[0].driver.constructor.name, its.ItsWddmError === library.WddmError);\n`);
    const library = spawnSync(process.execPath, ['library.mjs', join(ROOT, 'dist', 'wddm-fence.js')], { cwd: dir, encoding: 'utf8' });
    expect(library.status, library.stderr).toBe(0);
    expect(library.stdout.trim()).toBe('TemplateDriver true');
  });
});

describe('the command line: usage in its own words', () => {
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const nodeWords = /Unknown option '|ERR_PARSE_ARGS|is ambiguous|Did you forget/;

  it('no arguments print the usage on stderr and exit 2; --help and help print it on stdout and exit 0; --version the version', () => {
    const none = cli([]);
    expect(none.code).toBe(2);
    expect(none.stdout).toBe('');
    expect(none.stderr).toMatch(/a command is needed\n\nusage: wddm-fence <command> \[options\]/);
    const help = cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: wddm-fence <command>/);
    expect(cli(['help'])).toEqual(help);
    expect(cli(['--version'])).toEqual({ code: 0, stdout: `wddm-fence ${version}\n`, stderr: '' });
    for (const command of ['run', 'list', 'show', 'schema', 'demo', 'table', 'compare', 'explore', 'check-driver']) {
      const own = cli([command, '--help']);
      expect(own.code, command).toBe(0);
      expect(own.stdout, command).toMatch(new RegExp(`^usage: wddm-fence ${command}`));
      expect(cli(['help', command]), command).toEqual(own);
    }
    const nope = cli(['help', 'nope']);
    expect(nope.code).toBe(2);
    expect(nope.stderr).toContain('there is no command "nope"; the commands: run, list, show, schema, demo, table, compare, explore, check-driver, help');
  });

  it('an unknown option, a missing value, a flag given a value, a seed of -1: exit 2, each named in the tool\'s words', () => {
    const cases: [string[], RegExp][] = [
      [['--frobnicate'], /^wddm-fence: --frobnicate is not a command; expected a command first: wddm-fence <command> \[options\]/],
      [['frobnicate'], /^wddm-fence: there is no command "frobnicate"; the commands: run, list/],
      [['run', 'demo', '--frobnicate'], /^wddm-fence: unknown option --frobnicate; the options of run are --seed, --json, --quiet, --timeline, --trace-events, --check, --help\n\(wddm-fence help run lists its options\)\n$/],
      [['run', 'demo', '--seed', '-1'], /^wddm-fence: --seed is "-1"; expected an integer from 0 to 4294967295\n$/],
      [['run', 'demo', '--seed'], /^wddm-fence: --seed needs a value; expected --seed N\n/],
      [['run', 'demo', '--timeline', '--quiet'], /^wddm-fence: --timeline needs a value \(the next argument, --quiet, is an option\); expected --timeline OUT\.json\n/],
      [['run', 'demo', '--json=yes'], /^wddm-fence: --json takes no value \(it was given "yes"\); expected --json alone\n/],
      [['run', 'demo', '--seed', '1', '--seed', '2'], /^wddm-fence: --seed is given twice; expected it once\n/],
      [['run', 'demo', 'extra'], /^wddm-fence: unexpected argument "extra"; run takes one argument\n/],
      [['list', 'extra'], /^wddm-fence: list takes no arguments besides its options; got "extra"\n/],
      [['explore', '--frobnicate'], /^wddm-fence explore: unknown option --frobnicate; the options of explore are /],
      [['explore', '--seed', '-1'], /^wddm-fence explore: --seed is "-1"; expected an integer from 0 to 4294967295\n/],
      [['check-driver', 'reference', '--frobnicate'], /^wddm-fence check-driver: unknown option --frobnicate; the options of check-driver are --help, --json, --junit, --seed, --list-rules\n/],
      [['check-driver', 'reference', '--seed', '-1'], /^wddm-fence check-driver: --seed is "-1"; expected an integer from 0 to 4294967295\n/],
    ];
    for (const [args, message] of cases) {
      const r = cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout, args.join(' ')).toBe('');
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr, args.join(' ')).not.toMatch(nodeWords);
    }
  });
});

describe('demo, table and compare: one story, every option works or is refused', () => {
  /** The options a command's --help lists (the `--name` at the start of an option line, or in its usage line). */
  const listedOptions = (help: string) => [...new Set([...help.matchAll(/(?:^ {2}|\[)(--[a-z-]+)/gm)].map((m) => m[1]))];

  it('every option each command\'s --help lists is one the command takes', () => {
    const values: Record<string, string> = { '--seed': '3', '--timeline': join(dir, 'listed.json'), '--trace-events': join(dir, 'listed.jsonl') };
    for (const command of ['run', 'list', 'show', 'schema', 'demo', 'table', 'compare']) {
      const options = listedOptions(cli([command, '--help']).stdout);
      if (!['show', 'schema'].includes(command)) expect(options.length, command).toBeGreaterThan(0);
      for (const option of options) {
        // the options are read before --help is acted on: an option the command does not take is refused (exit 2)
        const r = cli([command, option, ...(values[option] ? [values[option]] : []), ...(option === '--help' ? [] : ['--help'])]);
        expect(r.code, `${command} ${option}: ${r.stderr}`).toBe(0);
      }
    }
  });

  it('demo takes --seed, --quiet, --json, --timeline and --trace-events (as run does); --scenario is refused, naming table and compare', () => {
    const quiet = cli(['demo', '--quiet', '--seed', '2']);
    expect(quiet.code).toBe(0);
    expect(quiet.stdout).toContain('scenario demo (seed 2)');
    expect(quiet.stdout).not.toContain('DxgkDdiCreateNativeFence');
    const json = cli(['demo', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ passed: true });
    const timeline = join(dir, 'demo-timeline.json');
    const events = join(dir, 'demo-events.jsonl');
    const written = cli(['demo', '--quiet', '--timeline', timeline, '--trace-events', events]);
    expect(written.code, written.stderr).toBe(0);
    expect(JSON.parse(readFileSync(timeline, 'utf8')).traceEvents.length).toBeGreaterThan(0);
    expect(readFileSync(events, 'utf8').trim().split('\n').map((l) => JSON.parse(l))[0]).toMatchObject({ kind: 'machine', name: 'created' });
    for (const old of [['--scenario', '1'], ['--scenario', 'doorbell']]) {
      const r = cli(['demo', ...old, '--json']);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('demo --scenario moved: the cross-adapter tables are wddm-fence table 1|2a|2b, the doorbell comparison wddm-fence compare doorbell');
    }
    for (const [old, now] of [['--trace', '--timeline'], ['--trace-file', '--trace-events']]) {
      const r = cli(['run', 'demo', old, join(dir, 'old-name.out')]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`${old} is now ${now}`);
    }
  });

  it('XA-06 table 1|2a|2b plays every wait/signal pair with its rows; --quiet leaves out the traces, --json gives the pairs; run scenario-1 is one pair, and says so', () => {
    const full = cli(['table', '1']);
    expect(full.code, full.stderr).toBe(0);
    expect(full.stdout.match(/^=== Scenario 1: /gm)).toHaveLength(4);
    expect(full.stdout.match(/^every step happened, in the table's order$/gm)).toHaveLength(4);
    expect(full.stdout).toContain('\ntrace:\n');
    const quiet = cli(['table', '1', '--quiet']);
    expect(quiet.stdout.match(/^every step happened, in the table's order$/gm)).toHaveLength(4);
    expect(quiet.stdout).not.toContain('trace:');
    const json = JSON.parse(cli(['table', '2b', '--json', '--seed', '5']).stdout);
    expect(json).toMatchObject({ ok: true, exitCode: 0, table: '2b', seed: 5 });
    expect(json.pairs.map((p: { wait: string; signal: string }) => `${p.wait}+${p.signal}`)).toEqual(['gpu+gpu', 'gpu+cpu', 'cpu+gpu', 'cpu+cpu']);
    expect(json.pairs.every((p: { inOrder: boolean; rows: { happened: boolean }[] }) => p.inOrder && p.rows.every((r) => r.happened))).toBe(true);
    expect(cli(['table', '3']).stderr).toContain('there is no table "3"; expected 1, 2a or 2b');
    expect(cli(['list']).stdout).toMatch(/^scenario-1 .*One pair of the table: wddm-fence table 1 plays every pair\.$/m);
    expect(cli(['table', '--help']).stdout).toContain('Not the same as "wddm-fence run scenario-1"');
  });

  it('XA-07 compare doorbell and compare models count one workload two ways; --json gives the counts', () => {
    const doorbell = cli(['compare', 'doorbell']);
    expect(doorbell.code).toBe(0);
    expect(doorbell.stdout).toMatch(/interrupt \+ OS propagation +interrupts=8 /);
    const counts = JSON.parse(cli(['compare', 'doorbell', '--json']).stdout);
    expect(counts.interrupt.interrupts).toBe(8);
    expect(counts.doorbell).toMatchObject({ interrupts: 0, fallbacks: 0 });
    const models = JSON.parse(cli(['compare', 'models', '--json']).stdout);
    expect(models.monitored.cpuInterrupts).toBeGreaterThan(models.native.cpuInterrupts);
    expect(cli(['demo', '--quiet']).stdout).toContain(cli(['compare', 'models']).stdout);
  });
});

describe('smaller things', () => {
  const SCENARIO = SMALL_SCENARIO;
  const scenario = write;

  it('virtual time is whole nanoseconds: a fractional duration or timeout is refused, in a scenario file and in the library', async () => {
    for (const [from, to, path] of [['durationNs: 1000', 'durationNs: 1.5', 'queues[0].commands[0].work.durationNs is 1.5'], ['timeoutNs: 100000', 'timeoutNs: 0.5', 'threads[0].steps[0].wait.timeoutNs is 0.5']]) {
      const r = cli(['run', scenario('fraction.yaml', SCENARIO.replace(from, to)), '--quiet']);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`${path}; expected an integer`);
    }
    const { createMachineSync, WddmError } = await import('../src/index.js');
    const machine = createMachineSync({});
    const app = machine.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const queue = app.createHwQueue({ hDevice, engine: 0 });
    const refused = (action: () => unknown) => { try { action(); } catch (error) { return error; } return undefined; };
    for (const error of [
      refused(() => app.submit({ hHwQueue: queue.hHwQueue, commands: [{ work: { durationNs: 1.5 } }] })),
      refused(() => app.createCommandList({ capacity: 4 }).work(2.5)),
      refused(() => machine.run(10.25)),
    ]) {
      expect(error).toBeInstanceOf(WddmError);
      expect((error as Error).message).toMatch(/expected a whole number of virtual nanoseconds from 0 to 9007199254740991/);
    }
  });

  it('the timeline names handles in hex, as the trace does', () => {
    const out = join(dir, 'hex-timeline.json');
    expect(cli(['run', 'demo', '--quiet', '--timeline', out]).code).toBe(0);
    const handles = (JSON.parse(readFileSync(out, 'utf8')) as { traceEvents: { args?: Record<string, unknown> }[] }).traceEvents
      .flatMap((e) => Object.entries(e.args ?? {}).filter(([key]) => /^h[A-Z]/.test(key)).map(([, value]) => value));
    expect(handles.length).toBeGreaterThan(5);
    for (const handle of handles) expect(handle === null || /^0x[0-9a-f]+$/.test(String(handle)), String(handle)).toBe(true);
  });

  it('an output path that is a folder is answered with a file name of that option\'s kind', () => {
    expect(cli(['run', 'demo', '--trace-events', dir]).stderr).toContain(`a directory; expected a file to write (e.g. ${dir}/events.jsonl)`);
    expect(cli(['run', 'demo', '--timeline', dir]).stderr).toContain(`a directory; expected a file to write (e.g. ${dir}/timeline.json)`);
  });

  it('counts of one are singular: "raised 1 interrupt", "has 1 engine", "names 1 fence"', () => {
    const passed = cli(['run', scenario('one.yaml', `${SCENARIO}expect:\n  interrupts: { gpu0: 1 }\n`), '--quiet']);
    expect(passed.code, passed.stderr).toBe(0);
    expect(passed.stdout).toContain('ok   adapter gpu0 raised 1 interrupt  [expect.interrupts.gpu0]');
    const engine = cli(['run', scenario('engine.yaml', SCENARIO.replace('adapter: gpu0, commands', 'adapter: gpu0, engine: 1, commands').replace('{ name: gpu0 }', '{ name: gpu0, engines: 1 }'))]);
    expect(engine.stderr).toContain('queues[0].engine is 1; expected 0 to 0 (adapter "gpu0" has 1 engine)');
    const index = cli(['run', scenario('index.yaml', `${SCENARIO}expect:\n  waits: { w: { outcome: woken, index: 1 } }\n`)]);
    expect(index.stderr).toContain('expect.waits.w.index is 1; expected 0 to 0 (the wait names 1 fence)');
  });
});

describe('the stuck report: never signalled, lost wake-up and deadlock, each for what it is', () => {
  const QUEUE_WAITS_FOR_F = `name: never
machine: { adapters: [ { name: gpu0 } ] }
processes: [ { name: app } ]
fences: [ { name: f, process: app, adapter: gpu0 }, { name: g, process: app, adapter: gpu0 } ]
queues:
  - { name: q, process: app, adapter: gpu0, commands: [ { wait: { fence: f, value: 1 } }, { signal: { fence: g, value: 1 } } ] }
`;

  it('NF-10 a queue waiting for a value no later step of anything signals is "never signalled", not a cycle through the thread', () => {
    const path = write('never.yaml', `${QUEUE_WAITS_FOR_F}threads:\n  - { name: t, process: app, steps: [ { wait: { id: w, fences: [g], values: [1] } } ] }\n`);
    const r = cli(['run', path, '--quiet']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('STUCK: 1 queue blocked, 1 CPU waiter pending, 1 CPU thread unfinished, 1 never signalled');
    expect(r.stdout).toContain('never signalled: queue gpu0/q waits for f >= 1 (CurrentValue 0); nothing in the machine will signal it (no queued GPU signal of it, no CPU thread that may still signal it)');
    expect(r.stdout).not.toMatch(/deadlock|\[deadlocked\]/);
    expect(r.stdout).toContain('FAIL the run ends with nothing stuck: expected nothing stuck, got stuck: 1 queue blocked, 1 CPU waiter pending, 1 CPU thread unfinished, never signalled: queue gpu0/q waits for f >= 1 (CurrentValue 0)');
    const json = JSON.parse(cli(['run', path, '--json']).stdout);
    expect(json.stuck.deadlocks).toEqual([]);
    expect(json.stuck.neverSignalled.map((n: { item: string }) => n.item)).toEqual(['queue gpu0/q']);
    // the same thread with a later step that signals f: that one is a real cycle (queue → thread → its waiter → queue)
    const cycle = cli(['run', write('cycle.yaml', `${QUEUE_WAITS_FOR_F}threads:\n  - { name: t, process: app, steps: [ { wait: { id: w, fences: [g], values: [1] } }, { signal: { fences: [f], values: [1] } } ] }\n`), '--quiet']);
    expect(cycle.stdout).toContain('deadlock (a cycle of 3):');
    expect(cycle.stdout).toContain('queue gpu0/q waits for f >= 1 (CurrentValue 0); that would come from thread app:t');
    expect(cycle.stdout).not.toContain('never signalled');
    // and a later step that signals f too low to release it is not a source
    const low = cli(['run', write('low.yaml', QUEUE_WAITS_FOR_F.replace('value: 1 } }, { signal', 'value: 5 } }, { signal') + `threads:\n  - { name: t, process: app, steps: [ { wait: { id: w, fences: [g], values: [1] } }, { signal: { fences: [f], values: [4] } } ] }\n`), '--quiet']);
    expect(low.stdout).toContain('never signalled: queue gpu0/q waits for f >= 5 (CurrentValue 0)');
  });

  it('NF-10 a waiter whose value CurrentValue already holds is a "lost wake-up", not a deadlock', () => {
    const path = write('lost.yaml', `name: lost
machine: { seed: 2, adapters: [ { name: gpu0, driver: { monitoredValueBarrier: false } } ] }
processes: [ { name: app } ]
fences: [ { name: g, process: app, adapter: gpu0 } ]
queues:
  - { name: q, process: app, adapter: gpu0, commands: [ { signal: { fence: g, value: 1 } } ] }
threads:
  - { name: t, process: app, steps: [ { wait: { id: w, fences: [g], values: [1] } } ] }
`);
    const r = cli(['run', path, '--quiet']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('STUCK: 0 queues blocked, 1 CPU waiter pending, 1 CPU thread unfinished, 1 lost wake-up');
    // said once, under LOST WAKE-UPS (machine.lostWakeups()); the stuck report marks the waiter's line
    expect(r.stdout).toContain('LOST WAKE-UPS (NF-10): 1\n    lost wake-up: app:t still waits for g >= 1 though it is 1\n');
    expect(r.stdout).toContain('CPU waiter app:t (app, thread app:t) waits for g >= 1 (CurrentValue 1) [lost wake-up]\n');
    expect(r.stdout.split('\nexpectations')[0].match(/lost wake-up: /g)).toHaveLength(1);
    expect(r.stdout).not.toMatch(/deadlock|\[deadlocked\]|never signalled/);
    const json = JSON.parse(cli(['run', path, '--json']).stdout);
    expect(json.stuck.lostWakeups).toEqual([{ item: 'waiter app:t', waits: [{ fence: 'g', value: '1', currentValue: '1', fenceDestroyed: false }], text: expect.stringContaining('lost wake-up') }]);
  });

  it('in the library, a thread that says what it may still signal (createThread mayStillSignal) is judged by that; one that says nothing is only a possible source', async () => {
    const { createMachineSync } = await import('../src/index.js');
    const stuckWith = (options?: { mayStillSignal: () => [] }) => {
      const machine = createMachineSync({});
      const app = machine.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const f = app.createNativeFence({ hDevice, name: 'f' }).hSyncObject;
      const g = app.createNativeFence({ hDevice, name: 'g' }).hSyncObject;
      const queue = app.createHwQueue({ hDevice, nativeProgressFence: false, name: 'q' });
      app.submit({ hHwQueue: queue.hHwQueue, commands: [{ wait: { hSyncObject: f, value: 1n } }, { signal: { hSyncObject: g, value: 1n } }] });
      app.createThread('t', function* (cpu) { yield cpu.wait({ objects: [g], values: [1n] }); }, options);
      machine.run();
      return machine.stuck();
    };
    const unsaid = stuckWith();
    expect(unsaid.deadlocks.map((d) => d.text)).toEqual([expect.stringContaining('queue gpu0/q waits for f >= 1 (CurrentValue 0); that could come only from thread app:t (it said nothing of what it will signal; its process holds a handle to the fence)')]);
    const said = stuckWith({ mayStillSignal: () => [] });
    expect(said.deadlocks).toEqual([]);
    expect(said.neverSignalled.map((n) => n.item)).toEqual(['queue gpu0/q']);
  });
});

describe('a scenario file\'s lists and the ring', () => {
  const scenario = (commands: number, extra: { ringEntries?: number; progressFence?: boolean; threadSubmits?: number } = {}) => JSON.stringify({
    name: 'long', machine: { adapters: [{ name: 'gpu0', ...(extra.ringEntries ? { limits: { ringEntries: extra.ringEntries } } : {}) }] },
    processes: [{ name: 'app' }], fences: [{ name: 'f', process: 'app', adapter: 'gpu0' }],
    queues: [{ name: 'q', process: 'app', adapter: 'gpu0', ...(extra.progressFence ? { progressFence: true } : {}),
      commands: [...Array.from({ length: commands - 1 }, () => ({ work: { durationNs: 10 } })), { signal: { fence: 'f', value: 1 } }] }],
    ...(extra.threadSubmits ? { threads: [{ name: 't', process: 'app', steps: Array.from({ length: 2 }, () => ({ submit: { queue: 'q', commands: Array.from({ length: extra.threadSubmits! }, () => ({ work: { durationNs: 10 } })) } })) }] } : {}),
    expect: { fences: { f: 1 } },
  });

  it('every list the schema allows runs: the runner makes the ring as long as the longest submission (4,096 commands and a progress fence)', () => {
    for (const [name, text] of [['long-2000.json', scenario(2000)], ['long-4096.json', scenario(4096, { progressFence: true })]]) {
      const r = cli(['run', write(name, text), '--quiet']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('PASSED');
    }
  });

  it('a ring the file makes too short is refused before the run, naming the key and the list; a thread that fills it names the key too', () => {
    const short = cli(['run', write('short-ring.json', scenario(2000, { ringEntries: 1024 }))]);
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(/machine\.adapters\[0\]\.limits\.ringEntries is 1024, but queues\[0\]\.commands puts 2000 commands into one hardware queue's ring in one submission; expected at least 2000/);
    expect(short.stderr).not.toContain('machine.run');
    const piled = cli(['run', write('piled.json', scenario(2, { threadSubmits: 1000 })), '--quiet']);
    expect(piled.code).toBe(1);
    expect(piled.stdout).toMatch(/FAIL thread t does not fail: .*queue q: hardware queue ring has room for \d+ more command\(s\), the submission has 1000; in a scenario file, raise machine\.adapters\[0\]\.limits\.ringEntries \(now 1024\), or let the thread wait until the queue has run its earlier commands/);
    expect(piled.stdout).not.toContain('machine.run');
  });
});

describe('npm run web', () => {
  const npm = process.env.npm_execpath && /npm-cli\.js$/.test(process.env.npm_execpath)
    ? { command: process.execPath, prefix: [process.env.npm_execpath] } : { command: 'npm', prefix: [] as string[] };

  it('killing `npm run web` (SIGTERM to npm) stops the server it started', async () => {
    const child = spawn(npm.command, [...npm.prefix, 'run', 'web', '--', '--port', '0'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_update_notifier: 'false' } });
    let output = '';
    const url = await new Promise<string>((resolve, reject) => {
      // a bound, not a timing: npm run web first rebuilds a stale dist/ (several minutes on a loaded 2-core machine)
      const timer = setTimeout(() => { child.kill('SIGTERM'); reject(new Error(`no page URL printed: ${output}`)); }, 300_000);
      const read = (chunk: Buffer) => {
        output += chunk.toString();
        const found = /wddm-fence page: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(output);
        if (found) { clearTimeout(timer); resolve(found[1]); }
      };
      child.stdout.on('data', read);
      child.stderr.on('data', read);
      child.once('exit', (code) => reject(new Error(`npm run web exited (${code}) before serving: ${output}`)));
    });
    expect((await fetch(url)).status).toBe(200);
    child.kill('SIGTERM');
    // the server goes within a moment; asked again and again until it refuses (a bound, not a timed assertion)
    let serving = true;
    for (let attempt = 0; attempt < 100 && serving; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      serving = await fetch(url).then(() => true, () => false);
    }
    expect(serving, 'the server still answers after npm run web was killed').toBe(false);
  }, 330_000);
});
