// The wddm-fence command as a user runs it: the built bundle (dist/cli.js,
// built by `npm test`'s ensure-built step), a child process, its exit code,
// stdout and stderr.
import { describe, it, expect, beforeAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMALL_SCENARIO } from './helpers.js';

const CLI = join(__dirname, '..', 'dist', 'cli.js');
let dir: string;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'wddm-fence-cli-')); });

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: dir });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
function file(name: string, text: string): string { const p = join(dir, name); writeFileSync(p, text); return p; }

const MINIMAL = SMALL_SCENARIO.replace('name: small', 'name: minimal').replace(', timeoutNs: 100000', '');

describe('wddm-fence run', () => {
  it('cli run demo exits 0 and prints the trace, the summary and every expectation', () => {
    const r = cli('run', 'demo');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('DxgkDdiCreateNativeFence');
    expect(r.stdout).toMatch(/summary \(seed 1,/);
    expect(r.stdout).toMatch(/expectations \(12 of 12 hold\)/); // the demo's 11 and the implicit "nothing stuck"
    expect(r.stdout).toContain('ok   the run ends with nothing stuck  [(implicit)]');
    expect(r.stdout).toContain('PASSED');
  });

  it('cli demo (npm start) runs the demo scenario, then the monitored-versus-native count', () => {
    const r = cli('demo', '--quiet');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('scenario demo (seed 1)');
    expect(r.stdout).not.toContain('DxgkDdiCreateNativeFence');
    expect(r.stdout).toMatch(/PASSED[^]*cost of the legacy model/);
  });

  it('cli runs every built-in scenario it lists, and each passes', () => {
    const names = cli('list').stdout.trim().split('\n').map((l) => l.split(/\s+/)[0]);
    expect(names).toEqual(expect.arrayContaining(['demo', 'cross-process', 'device-removal', 'interrupt-payload', 'log-overrun', 'monitored-vs-native', 'allocation-lifetime', 'scenario-1', 'scenario-2a', 'scenario-2b']));
    for (const name of names) {
      const r = cli('run', name, '--quiet');
      expect(r.code, `${name}: ${r.stdout}${r.stderr}`).toBe(0);
    }
  });

  it('cli run exits 1 and reports each failed expectation with its path', () => {
    const p = file('fails.yaml', MINIMAL + `expect:\n  fences: { f: 0 }\n  waits: { w: woken }\n  interrupts: { gpu0: 5 }\n`);
    const r = cli('run', p, '--quiet');
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/FAIL fence f ends at 0: expected 0, got 2 {2}\[expect\.fences\.f\]/);
    expect(r.stdout).toMatch(/FAIL adapter gpu0 raised 5 interrupts: expected 5, got 1 {2}\[expect\.interrupts\.gpu0\]/);
    expect(r.stdout).toMatch(/ok {3}wait w is woken/);
    expect(r.stdout).toContain('FAILED: 2 expectations did not hold');
  });

  it('cli run reads JSON files and gives the same trace as the YAML form', () => {
    const yaml = file('same.yaml', MINIMAL);
    const json = file('same.json', JSON.stringify({
      name: 'minimal', machine: { adapters: [{ name: 'gpu0' }] }, processes: [{ name: 'app' }], fences: [{ name: 'f', process: 'app', adapter: 'gpu0' }],
      queues: [{ name: 'q', process: 'app', adapter: 'gpu0', commands: [{ work: { durationNs: 1000 } }, { signal: { fence: 'f', value: 2 } }] }],
      threads: [{ name: 't', process: 'app', steps: [{ wait: { id: 'w', fences: ['f'], values: [2] } }] }],
    }, null, 2));
    const a = cli('run', yaml), b = cli('run', json);
    expect(a.code).toBe(0);
    expect(b.code).toBe(0);
    expect(b.stdout).toBe(a.stdout);
  });

  it('cli run --seed overrides the seed and the same seed gives a byte-identical report', () => {
    const a = cli('run', 'demo', '--seed', '99');
    const b = cli('run', 'demo', '--seed', '99');
    expect(a.stdout).toContain('created seed=99');
    expect(a.stdout).toBe(b.stdout);
  });

  it('cli run --json prints one JSON document with events, summary and expectations', () => {
    const r = cli('run', 'demo', '--json');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.passed).toBe(true);
    expect(doc.summary.adapters[0].interruptsRaised).toBe(1);
    expect(doc.expectations).toHaveLength(12);
    expect(doc.stuck).toEqual({ stuck: false, queues: [], waiters: [], threads: [], deadlocks: [], lostWakeups: [], neverSignalled: [] });
    expect(doc.events.some((e: { name: string }) => e.name === 'DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED')).toBe(true);
  });

  it('cli run --timeline writes a Chrome trace, or exits 2 saying the exporter is not in this build', () => {
    const out = join(dir, 'out.json');
    const r = cli('run', 'demo', '--timeline', out);
    if (existsSync(out)) {
      expect(r.code).toBe(0);
      expect(JSON.parse(readFileSync(out, 'utf8')).traceEvents.length).toBeGreaterThan(0);
      expect(r.stdout).toBe(cli('run', 'demo').stdout); // writing the timeline does not change the report
    } else {
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/--timeline needs the Chrome\/Perfetto timeline exporter \(src\/timeline\.ts\), which is not in this build yet/);
      expect(r.stdout).toBe('');
    }
  });
});

describe('wddm-fence run --check', () => {
  const examples = join(__dirname, '..', 'examples', 'drivers');
  it('NF-11 run --check attaches the contract checker: the reference driver passes (exit 0, the rules evaluated); a broken driver module named by the file fails with its rule, where and when (exit 1), in text and JSON', () => {
    const ok = cli('run', 'demo', '--check', '--quiet');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^contract checker \(--check\): 0 violations; \d+ rules evaluated \(CAP-02 ×1, /m);
    expect(ok.stdout).toContain('PASSED: every expectation holds, no contract violation');
    // The same scenario with a driver whose UpdateMonitoredValues has no barrier (examples/drivers/broken/skips-barrier.mjs)
    const text = cli('show', 'demo').stdout.replace('    - name: gpu0\n', `    - name: gpu0\n      driver: ${JSON.stringify(join(examples, 'broken', 'skips-barrier.mjs'))}\n`);
    const scenario = file('demo-skips-barrier.yaml', text);
    const bad = cli('run', scenario, '--check', '--quiet');
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/^contract checker \(--check\): 1 violation of NF-11; /m);
    expect(bad.stdout).toMatch(/^ {2}NF-11 at DxgkDdiUpdateMonitoredValues, adapter gpu0, \d+ ns, trace #\d+\n {4}expected: the CMP's MonitoredValue write reaches memory/m);
    expect(bad.stdout).toMatch(/^FAILED: .*1 contract violation \(--check\)$/m);
    const json = cli('run', scenario, '--check', '--json');
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout);
    expect(report.passed).toBe(false);
    expect(report.contract.violations.map((v: { rule: string }) => v.rule)).toEqual(['NF-11']);
    expect(report.contract.evaluations['NF-11']).toBeGreaterThan(0);
    expect(json.stderr).toMatch(/^FAIL contract NF-11 at DxgkDdiUpdateMonitoredValues \(gpu0\): /m);
    // without --check the run reports what the OS sees, named for what it counts
    const plain = cli('run', scenario, '--quiet');
    expect(plain.code).toBe(1);
    expect(plain.stdout).not.toContain('contract checker');
    expect(plain.stdout).toMatch(/FAIL 0 lost wake-ups or OS-detected faults: expected 0, got 1 \(lost wake-up: app:presenter still waits for frameConsumed >= 3/);
  });
});

describe('wddm-fence run: invalid input exits 2 and nothing runs', () => {
  it('cli run exits 2 for malformed YAML with the line', () => {
    const p = file('malformed.yaml', 'name: x\nmachine:\n  adapters: [ { name: gpu0 }\n  processes: 1\n');
    const r = cli('run', p);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/malformed\.yaml:\d+:\d+: malformed YAML/);
    expect(r.stdout).toBe('');
  });

  it('cli run exits 2 for malformed JSON with the line', () => {
    const p = file('malformed.json', '{\n  "name": "x",\n  "machine": }\n');
    const r = cli('run', p);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/malformed\.json:3:\d+: malformed JSON/);
  });

  it('cli run exits 2 for an unknown key, naming its path, line and the keys expected', () => {
    const p = file('unknown.yaml', MINIMAL.replace('fences: [ { name: f,', 'fences: [ { colour: red, name: f,'));
    const r = cli('run', p);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown\.yaml:4:\d+: fences\[0\] has unknown key "colour"; expected only "name", "process", "adapter"/);
  });

  it('cli run exits 2 for a wrong type in JSON, naming the path, the bad value and what was expected', () => {
    const p = file('types.json', '{"name": "x",\n "machine": {"adapters": [{"name": "gpu0", "engines": "two"}]},\n "processes": [{"name": "app"}]}\n');
    const r = cli('run', p);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('types.json:2:');
    expect(r.stderr).toContain('machine.adapters[0].engines is "two"; expected an integer');
  });

  it('cli run exits 2 for references to fences and queues that do not exist', () => {
    const p = file('refs.yaml', MINIMAL.replace('signal: { fence: f, value: 2 }', 'signal: { fence: g, value: 2 }') +
      '  - { name: u, process: app, steps: [ { submit: { queue: nosuch, commands: [ { work: { durationNs: 1 } } ] } } ] }\n');
    const r = cli('run', p);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/refs\.yaml:6:\d+: queues\[0\]\.commands\[1\]\.signal\.fence is "g"; expected the name of one of the fences \("f"\)/);
    expect(r.stderr).toMatch(/refs\.yaml:9:\d+: threads\[1\]\.steps\[0\]\.submit\.queue is "nosuch"; expected the name of one of the queues \("q"\)/);
  });

  it('cli run exits 2 for impossible expectations', () => {
    const p = file('impossible.yaml', MINIMAL + 'expect:\n  fences: { f: 3 }\n  waits: { w: timedOut, nosuch: woken }\n');
    const r = cli('run', p);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/impossible\.yaml:10:\d+: expect\.fences\.f is 3, a value fence "f" can never hold; expected one of the values it starts with or is signalled to: 0, 2/);
    expect(r.stderr).toMatch(/impossible\.yaml:11:\d+: expect\.waits\.w is "timedOut", but that wait has no timeoutNs/);
    expect(r.stderr).toMatch(/impossible\.yaml:11:\d+: expect\.waits has "nosuch"; expected the id of a thread wait \("w"\)/);
  });

  it('cli run exits 2 for a kernelMode queue given a native fence, naming the path and what was expected', () => {
    const p = file('kinds.yaml', MINIMAL.replace('{ name: q, process: app, adapter: gpu0,', '{ name: q, process: app, adapter: gpu0, kind: kernelMode,'));
    const r = cli('run', p);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/kinds\.yaml:6:\d+: queues\[0\]\.commands\[1\]\.signal\.fence is "f", a native fence; expected a monitored fence/);
  });

  it('cli run exits 2 when the model refuses the set-up, naming the item', () => {
    const p = file('refused.yaml', MINIMAL.replace('{ name: gpu0 }', '{ name: gpu0, caps: { nativeGpuFence: false } }'));
    const r = cli('run', p);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/fences\[0\]: the model refused it at set-up: .*does not support native fences/);
  });

  it('cli exits 2 for bad usage: unknown command, option, seed, missing file', () => {
    expect(cli('frobnicate').code).toBe(2);
    expect(cli('run', 'demo', '--colour').code).toBe(2);
    const seed = cli('run', 'demo', '--seed=-1');
    expect(seed.code).toBe(2);
    expect(seed.stderr).toContain('--seed is "-1"; expected an integer from 0 to 4294967295');
    const missing = cli('run', 'no-such-file.yaml');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('scenario file "no-such-file.yaml" does not exist');
    const name = cli('run', 'nosuchname');
    expect(name.code).toBe(2);
    expect(name.stderr).toMatch(/neither a scenario file nor a built-in scenario; built-in: demo/);
  });
});

describe('wddm-fence list, show, schema, --help', () => {
  it('cli show prints a built-in scenario that runs as a file', () => {
    const r = cli('show', 'demo');
    expect(r.code).toBe(0);
    const p = file('from-show.yaml', r.stdout);
    expect(cli('run', p, '--quiet').code).toBe(0);
    expect(cli('show', 'nosuch').code).toBe(2);
  });

  it('cli schema prints the JSON Schema', () => {
    const r = cli('schema');
    expect(r.code).toBe(0);
    const schema = JSON.parse(r.stdout);
    expect(schema.required).toEqual(['name', 'machine', 'processes']);
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['fences', 'queues', 'threads', 'allocations', 'faults', 'expect']));
  });

  it('cli --help works for every command', () => {
    for (const command of ['run', 'list', 'show', 'schema', 'demo']) {
      const r = cli(command, '--help');
      expect(r.code, command).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^usage: wddm-fence ${command}`));
    }
    const top = cli('--help');
    expect(top.code).toBe(0);
    expect(top.stdout).toContain('run FILE|NAME');
  });
});

describe('wddm-fence run: bounded memory and where things are (in-process)', () => {
  const inProcess = async (...args: string[]) => {
    const { runCli } = await import('../src/cli/main.js');
    let stdout = '', stderr = '';
    const code = await runCli(args, { out: (t) => { stdout += t; }, err: (t) => { stderr += t; } });
    return { code, stdout, stderr };
  };

  it('cli --trace-events streams every trace event as JSON Lines while memory keeps machine.limits.traceEvents; the summary counts what it dropped', async () => {
    const p = file('ring.yaml', MINIMAL.replace('machine: { adapters', 'machine: { limits: { traceEvents: 10 }, adapters'));
    const out = join(dir, 'events.jsonl');
    const r = await inProcess('run', p, '--trace-events', out, '--json');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    const lines = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(doc.summary.trace).toEqual({ recorded: lines.length, kept: 10, dropped: lines.length - 10, capacity: 10 });
    expect(lines.length).toBeGreaterThan(30);
    expect(lines.map((e) => e.seq)).toEqual(lines.map((_, i) => i));
    expect(lines[0]).toMatchObject({ kind: 'machine', name: 'created' });
    expect(doc.events).toEqual(lines.slice(-10)); // the ring holds the newest ten
    expect(r.stderr).toContain(`wddm-fence: ${lines.length} trace events written to ${out} (JSON Lines)`);
    const text = await inProcess('run', p, '--quiet');
    expect(text.stdout).toMatch(new RegExp(`trace: ${lines.length} events recorded; the oldest ${lines.length - 10} were dropped \\(memory keeps the last 10: limits\\.traceEvents; \`wddm-fence run --trace-events\` keeps every one\\)`));
  });

  it('cli a failed expectation names its file:line:col, in the text and in --json', async () => {
    const p = file('where.yaml', MINIMAL + 'expect:\n  fences: { f: 0 }\n  waits: { w: woken }\n');
    const text = await inProcess('run', p, '--quiet');
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(`FAIL fence f ends at 0: expected 0, got 2  [expect.fences.f]  ${p}:10:13`);
    expect(text.stdout).toMatch(/ok {3}wait w is woken {2}\[expect\.waits\.w\]\n/); // a kept one needs no place
    const json = await inProcess('run', p, '--json');
    const failed = JSON.parse(json.stdout).expectations.find((e: { path: string }) => e.path === 'expect.fences.f');
    expect(failed).toMatchObject({ ok: false, line: 10, column: 13 });
    expect(json.stderr).toContain(`FAIL fence f ends at 0: expected 0, got 2 [expect.fences.f] ${p}:10:13`);
  });

  it('cli machine.limits from a scenario file reach the machine: more processes, a smaller event bound', async () => {
    const processes = Array.from({ length: 20 }, (_, i) => `{ name: p${i} }`).join(', ');
    const many = file('many.yaml', MINIMAL.replace('machine: { adapters', 'machine: { limits: { processes: 21 }, adapters').replace('processes: [ { name: app } ]', `processes: [ { name: app }, ${processes} ]`));
    const r = await inProcess('run', many, '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).events.filter((e: { name: string }) => e.name === 'process created')).toHaveLength(21);
    const bounded = await inProcess('run', file('bounded.yaml', MINIMAL.replace('machine: { adapters', 'machine: { limits: { eventsPerRun: 3 }, adapters')));
    expect(bounded.code).toBe(2);
    expect(bounded.stderr).toMatch(/after 3 scheduler events: a livelock .* \(scenario files: machine\.limits\.eventsPerRun\)/);
  });
});

describe('wddm-fence run: liveness', () => {
  const STUCK = `name: stuck
machine: { adapters: [ { name: gpu0, engines: 2 } ] }
processes: [ { name: app } ]
fences:
  - { name: x, process: app, adapter: gpu0 }
  - { name: y, process: app, adapter: gpu0 }
queues:
  - { name: a, process: app, adapter: gpu0, engine: 0, commands: [ { wait: { fence: x, value: 1 } }, { signal: { fence: y, value: 1 } } ] }
  - { name: b, process: app, adapter: gpu0, engine: 1, commands: [ { wait: { fence: y, value: 1 } }, { signal: { fence: x, value: 1 } } ] }
threads:
  - { name: t, process: app, steps: [ { wait: { id: w, fences: [y], values: [1] } } ] }
`;

  it('cli run exits 1 for a run that ends stuck, printing the stuck report and the cycle; 0 when the file expects it', () => {
    const r = cli('run', file('stuck.yaml', STUCK), '--quiet');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('STUCK: 2 queues blocked, 1 CPU waiter pending, 1 CPU thread unfinished, 1 deadlock');
    expect(r.stdout).toContain('hardware queue gpu0/a (app) waits for x >= 1 (CurrentValue 0); queued behind it: signal(y, 1) [deadlocked]');
    expect(r.stdout).toContain('CPU thread app:t is blocked on waiter app:t [deadlocked]');
    expect(r.stdout).toContain('queue gpu0/a waits for x >= 1 (CurrentValue 0); that would come from queue gpu0/b');
    expect(r.stdout).toMatch(/FAIL the run ends with nothing stuck: expected nothing stuck, got stuck: 2 queues blocked, 1 CPU waiter pending, 1 CPU thread unfinished, 1 deadlock: queue gpu0\/a -> queue gpu0\/b/);
    const json = cli('run', file('stuck.yaml', STUCK), '--json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout).stuck.deadlocks[0].cycle).toEqual(['queue gpu0/a', 'queue gpu0/b']);
    expect(json.stderr).toContain('FAIL the run ends with nothing stuck');
    const expected = cli('run', file('expected.yaml', STUCK + 'expect: { deadlock: true, waits: { w: pending } }\n'), '--quiet');
    expect(expected.code).toBe(0);
    expect(expected.stdout).toContain('STUCK:');
    expect(expected.stdout).toContain('PASSED');
    // The built-in one, too.
    expect(cli('run', 'deadlock', '--quiet').code).toBe(0);
  });
});
