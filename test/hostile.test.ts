// Hostile input: every way a scenario file, a path or an option can be wrong
// exits 2 with a message that names the place (file:line:col where there is
// one) and what was expected, and nothing runs; nothing exhausts memory or
// takes long. Most cases run the command in-process (runCli, fast); a few
// spawn the real bin to see true exit codes.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, existsSync, readFileSync, openSync, ftruncateSync, closeSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../src/cli/main.js';
import { SCENARIO_LIMITS } from '../src/scenario-files/limits.js';
import { SMALL_SCENARIO } from './helpers.js';

const CLI = join(__dirname, '..', 'dist', 'cli.js');
let dir: string;
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'wddm-fence-hostile-')); });
afterAll(() => { rmSync(dir, { recursive: true, force: true }); });

async function cli(...args: string[]) {
  let stdout = '', stderr = '';
  const code = await runCli(args, { out: (t) => { stdout += t; }, err: (t) => { stderr += t; } });
  return { code, stdout, stderr };
}
function file(name: string, text: string | Buffer): string { const p = join(dir, name); writeFileSync(p, text); return p; }

const SCENARIO = SMALL_SCENARIO.replace('name: small', 'name: hostile');
/** The base scenario with one piece replaced (the replaced text must be in it). */
function variant(from: string, to: string): string {
  expect(SCENARIO).toContain(from);
  return SCENARIO.replace(from, to);
}

function billionLaughs(): string {
  let text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n';
  let previous = 'a';
  for (const name of 'bcdefghi') { text += `${name}: &${name} [${Array(9).fill(`*${previous}`).join(',')}]\n`; previous = name; }
  return text;
}

/** A list of `n` work commands, in flow style. */
const commands = (n: number) => `[${Array.from({ length: n }, () => '{work: {durationNs: 1}}').join(',')}]`;

interface Case { name: string; args: () => string[]; code: number; message: RegExp; stdout?: RegExp | '' }

// Each case: what a user might pass, the exit code, and the message on stderr (stdout when stated).
const CASES: Case[] = [
  // ── files that are not scenario files ──
  { name: 'a directory given as the scenario file', args: () => ['run', dir], code: 2, message: /scenario file ".*" is a directory; expected a \.yaml, \.yml or \.json file/ },
  { name: 'a file that does not exist', args: () => ['run', join(dir, 'nope.yaml')], code: 2, message: /scenario file ".*nope\.yaml" does not exist/ },
  { name: 'a path through a file', args: () => ['run', join(file('plain.txt', 'x'), 'inside.yaml')], code: 2, message: /scenario file ".*plain\.txt\/inside\.yaml" does not exist/ },
  { name: 'a device', args: () => ['run', '/dev/null'], code: 2, message: /scenario file "\/dev\/null" is not a regular file \(a device, pipe or socket\)/ },
  { name: 'a binary file', args: () => ['run', file('binary.yaml', Buffer.from([0xff, 0xfe, 0x00, 0x41]))], code: 2, message: /binary\.yaml: the file is not UTF-8 text; expected a YAML or JSON scenario file/ },
  { name: 'an empty file', args: () => ['run', file('empty.yaml', '')], code: 2, message: /empty\.yaml: the file is empty; expected a scenario/ },
  { name: 'a file of comments only', args: () => ['run', file('comments.yaml', '# nothing\n# here\n')], code: 2, message: /comments\.yaml: the file is empty/ },
  { name: 'a file one byte past the limit', args: () => ['run', file('limit.yaml', `# ${'x'.repeat(SCENARIO_LIMITS.fileBytes - 2)}\n`)], code: 2, message: /limit\.yaml: the file is 1048577 bytes; expected at most 1 MiB/ },
  // ── resource exhaustion ──
  { name: 'a YAML alias bomb (billion laughs)', args: () => ['run', file('bomb.yaml', billionLaughs())], code: 2, message: /bomb\.yaml:4:8: the YAML alias \*c brings the file past 100 alias uses once aliases inside aliases are expanded \(\d+ in all: an alias bomb\?\)/ },
  { name: 'an alias inside the node it names', args: () => ['run', file('loop.yaml', 'a: &x [1, *x]\n')], code: 2, message: /loop\.yaml:1:11: the YAML alias \*x is inside the node it refers to \(a loop\)/ },
  { name: 'an alias with no anchor', args: () => ['run', file('dangling.yaml', 'name: *nope\n')], code: 2, message: /dangling\.yaml:1:7: the YAML alias \*nope has no anchor &nope before it/ },
  { name: 'one big list aliased over and over (nodes past the limit)', args: () => ['run', file('amplify.yaml', `big: &big ${commands(4096)}\n${Array.from({ length: 20 }, (_, i) => `c${i}: *big`).join('\n')}\n`)], code: 2, message: /amplify\.yaml:\d+:\d+: the YAML alias \*big \(20481 nodes\) brings the file to \d+ maps, lists and values once expanded; expected at most 250000/ },
  { name: 'flow collections nested 100,000 deep', args: () => ['run', file('deep.yaml', '['.repeat(100_000) + ']'.repeat(100_000))], code: 2, message: /deep\.yaml:1:65: flow collections \(\[ … \] and \{ … \}\) are nested more than 64 deep here/ },
  { name: 'JSON nested 100,000 deep', args: () => ['run', file('deep.json', '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000))], code: 2, message: /deep\.json:1:\d+: flow collections .* nested more than 64 deep/ },
  { name: 'block maps indented 300 columns', args: () => ['run', file('indent.yaml', Array.from({ length: 160 }, (_, i) => `${'  '.repeat(i)}k${i}:`).join('\n') + ' 1\n')], code: 2, message: /indent\.yaml:130:257: a line is indented more than 256 columns/ },
  { name: 'compact sequences nested 300,000 deep on one line', args: () => ['run', file('compact.yaml', '- '.repeat(300_000) + 'x\n')], code: 2, message: /compact\.yaml:1:258: a line is indented more than 256 columns/ },
  { name: 'maps nested 40 levels (within the pre-scan, past the depth)', args: () => ['run', file('levels.yaml', `name: x\nnest: ${'['.repeat(40)}${']'.repeat(40)}\n`)], code: 2, message: /levels\.yaml:2:38: maps and lists are nested 33 levels deep here; expected at most 32/ },
  { name: 'more than 4096 commands in one list', args: () => ['run', file('list.yaml', variant('commands: [ { work: { durationNs: 1000 } }, { signal: { fence: f, value: 2 } } ]', `commands: ${commands(4097)}`))], code: 2, message: /list\.yaml:6:\d+: queues\[0\]\.commands has 4097 items; expected at most 4096/ },
  { name: 'more than 32768 commands in all', args: () => ['run', file('total.yaml', variant('  - { name: q, process: app, adapter: gpu0,', `${Array.from({ length: 8 }, (_, i) => `  - { name: q${i}, process: app, adapter: gpu0, commands: ${i === 0 ? `&c ${commands(4096)}` : '*c'} }`).join('\n')}\n  - { name: q, process: app, adapter: gpu0,`))], code: 2, message: /total\.yaml:\d+:\d+: queues\[8\]\.commands brings the scenario to more than 32768 GPU commands in all/ },
  // ── numbers ──
  { name: 'a duration of 1e30 ns', args: () => ['run', file('d1.yaml', variant('durationNs: 1000', 'durationNs: 1e30'))], code: 2, message: /d1\.yaml:6:\d+: queues\[0\]\.commands\[0\]\.work\.durationNs is 1e\+30; expected at most 9007199254740991 \(2\^53 − 1/ },
  { name: 'a negative duration', args: () => ['run', file('d2.yaml', variant('durationNs: 1000', 'durationNs: -1'))], code: 2, message: /d2\.yaml:6:\d+: queues\[0\]\.commands\[0\]\.work\.durationNs is -1; expected at least 0/ },
  { name: 'a NaN duration', args: () => ['run', file('d3.yaml', variant('durationNs: 1000', 'durationNs: .nan'))], code: 2, message: /d3\.yaml:6:\d+: queues\[0\]\.commands\[0\]\.work\.durationNs is NaN; expected a finite integer/ },
  { name: 'an infinite duration', args: () => ['run', file('d4.yaml', variant('durationNs: 1000', 'durationNs: .inf'))], code: 2, message: /durationNs is Infinity; expected a finite integer/ },
  { name: 'a number past doubles (1e400)', args: () => ['run', file('d5.yaml', variant('durationNs: 1000', 'durationNs: 1e400'))], code: 2, message: /durationNs is Infinity; expected a finite integer/ },
  { name: 'a duration as a string', args: () => ['run', file('d6.yaml', variant('durationNs: 1000', 'durationNs: "1000"'))], code: 2, message: /durationNs is "1000"; expected an integer/ },
  { name: 'a timeout of 1e300 ns', args: () => ['run', file('t1.yaml', variant('timeoutNs: 100000', 'timeoutNs: 1e300'))], code: 2, message: /t1\.yaml:8:\d+: threads\[0\]\.steps\[0\]\.wait\.timeoutNs is 1e\+300; expected at most 9007199254740991/ },
  { name: 'a fault at 1e300 ns', args: () => ['run', file('t2.yaml', `${SCENARIO}faults: [ { atNs: 1e300, removeDevice: { adapter: gpu0 } } ]\n`)], code: 2, message: /t2\.yaml:9:\d+: faults\[0\]\.atNs is 1e\+300; expected at most 9007199254740991/ },
  { name: 'a fence value past 64 bits', args: () => ['run', file('v1.yaml', variant('value: 2 }', 'value: 18446744073709551616 }'))], code: 2, message: /v1\.yaml:6:\d+: queues\[0\]\.commands\[1\]\.signal\.value is "18446744073709551616"; expected a 64-bit unsigned value/ },
  { name: 'a negative fence value', args: () => ['run', file('v2.yaml', variant('value: 2 }', 'value: -2 }'))], code: 2, message: /signal\.value is -2; expected at least 0/ },
  { name: 'a seed past 32 bits', args: () => ['run', file('s1.yaml', variant('machine: {', 'machine: { seed: 1e20,'))], code: 2, message: /s1\.yaml:2:\d+: machine\.seed is 100000000000000000000; expected (an integer|at most 4294967295)/ },
  { name: 'an engine count as a word', args: () => ['run', file('e1.yaml', variant('{ name: gpu0 }', '{ name: gpu0, engines: two }'))], code: 2, message: /e1\.yaml:2:\d+: machine\.adapters\[0\]\.engines is "two"; expected an integer/ },
  { name: 'adapter limits past what the model takes', args: () => ['run', file('e2.yaml', variant('{ name: gpu0 }', '{ name: gpu0, limits: { fences: 1e12 } }'))], code: 2, message: /e2\.yaml:2:\d+: machine\.adapters\[0\]\.limits\.fences is 1000000000000; expected at most 16777216/ },
  { name: 'a collapse window of 0 ns', args: () => ['run', file('w0.yaml', `${SCENARIO}faults: [ { atNs: 0, collapseInterrupts: { adapter: gpu0, windowNs: 0 } } ]\n`)], code: 2, message: /faults\[0\]\.collapseInterrupts\.windowNs is 0; expected > 0/ },
  // ── shapes and names ──
  { name: 'a list at the top', args: () => ['run', file('list-top.yaml', '- 1\n- 2\n')], code: 2, message: /list-top\.yaml:1:1: the file is \[1,2\]; expected an object/ },
  { name: 'a bare word at the top', args: () => ['run', file('word.yaml', 'hello\n')], code: 2, message: /word\.yaml:1:1: the file is "hello"; expected an object/ },
  { name: 'processes as a word', args: () => ['run', file('p1.yaml', variant('processes: [ { name: app } ]', 'processes: app'))], code: 2, message: /p1\.yaml:3:\d+: processes is "app"; expected a list/ },
  { name: 'an unknown top-level key', args: () => ['run', file('k1.yaml', `${SCENARIO}colour: red\n`)], code: 2, message: /k1\.yaml:9:1: the file has unknown key "colour"; expected only "name", "description", "machine"/ },
  { name: 'an unknown GPU command', args: () => ['run', file('k2.yaml', variant('{ work: { durationNs: 1000 } }', '{ jump: { to: 4 } }'))], code: 2, message: /queues\[0\]\.commands\[0\] has unknown key "jump"; expected only "wait", "signal", "work"/ },
  { name: 'a name of 33 characters', args: () => ['run', file('n1.yaml', variant('name: hostile', `name: ${'n'.repeat(33)}`))], code: 2, message: /n1\.yaml:1:7: name is "n{33}"; expected a name: a letter or "_", then up to 31/ },
  { name: 'two processes with one name', args: () => ['run', file('n2.yaml', variant('processes: [ { name: app } ]', 'processes: [ { name: app }, { name: app } ]'))], code: 2, message: /n2\.yaml:3:\d+: processes\[1\]\.name is "app"; expected a name no other item of processes has \(processes\[0\] has it\)/ },
  { name: 'a key given twice', args: () => ['run', file('dup.yaml', `${SCENARIO}name: again\n`)], code: 2, message: /dup\.yaml:9:1: malformed YAML: Map keys must be unique/ },
  { name: 'two YAML documents in one file', args: () => ['run', file('multi.yaml', `${SCENARIO}---\nname: second\n`)], code: 2, message: /multi\.yaml:9:1: the file holds more than one YAML document/ },
  { name: 'malformed JSON', args: () => ['run', file('bad.json', '{\n  "name": "x",\n  "machine": }\n')], code: 2, message: /bad\.json:3:\d+: malformed JSON/ },
  { name: 'a fence that does not exist', args: () => ['run', file('r1.yaml', variant('fences: [f]', 'fences: [g]'))], code: 2, message: /r1\.yaml:8:\d+: threads\[0\]\.steps\[0\]\.wait\.fences\[0\] is "g"; expected the name of one of the fences \("f"\)/ },
  // ── the machine's limits ──
  { name: 'more processes than the machine holds', args: () => ['run', file('many.yaml', variant('processes: [ { name: app } ]', `processes: [ { name: app }, ${Array.from({ length: 16 }, (_, i) => `{ name: p${i} }`).join(', ')} ]`))], code: 2, message: /many\.yaml:3:\d+: processes has 17 items; expected at most 16, the processes the machine holds \(machine\.limits\.processes, default 16; it may be raised to 1023\)/ },
  { name: 'more processes than machine.limits.processes', args: () => ['run', file('many2.yaml', variant('machine: {', 'machine: { limits: { processes: 1 },').replace('processes: [ { name: app } ]', 'processes: [ { name: app }, { name: other } ]'))], code: 2, message: /many2\.yaml:3:\d+: processes has 2 items; expected at most 1, the processes the machine holds \(machine\.limits\.processes; it may be raised to 1023\)/ },
  { name: 'machine.limits.processes past 1023', args: () => ['run', file('many3.yaml', variant('machine: {', 'machine: { limits: { processes: 5000 },'))], code: 2, message: /many3\.yaml:2:\d+: machine\.limits\.processes is 5000; expected at most 1023/ },
  { name: 'a doorbell ring the model refuses (not a power of two)', args: () => ['run', file('db.yaml', variant('machine: {', 'machine: { doorbell: { enabled: true, ringEntries: 100 },'))], code: 2, message: /db\.yaml:2:\d+: machine\.doorbell\.ringEntries: the model refused it: doorbell\.ringEntries is 100; expected a power of two from 2 to 65536/ },
  { name: 'more queues than the adapter holds (refused at set-up)', args: () => ['run', file('queues.yaml', variant('{ name: gpu0 }', '{ name: gpu0, limits: { queues: 1 } }').replace('threads:\n', '  - { name: q2, process: app, adapter: gpu0 }\nthreads:\n'))], code: 2, message: /queues\.yaml:7:5: queues\[1\]: the model refused it at set-up: DxgkDdiCreateHwQueue: hardware queue table full \(adapter option limits\.queues\)/ },
  { name: 'a trace ring of 0 events', args: () => ['run', file('ring.yaml', variant('machine: {', 'machine: { limits: { traceEvents: 0 },'))], code: 2, message: /machine\.limits\.traceEvents is 0; expected at least 1/ },
  { name: 'a run past machine.limits.eventsPerRun', args: () => ['run', file('events.yaml', variant('machine: {', 'machine: { limits: { eventsPerRun: 5 },'))], code: 2, message: /the run stopped \(INSUFFICIENT_RESOURCES\): the run stopped at \d+ ns of virtual time after 5 scheduler events: .*machine\.limits\.eventsPerRun/ },
  { name: 'sleeps adding up past what virtual time holds', args: () => ['run', file('time.yaml', `${SCENARIO}  - { name: u, process: app, steps: [ { sleep: { durationNs: 9007199254740991 } }, { sleep: { durationNs: 9007199254740991 } } ] }\n`)], code: 2, message: /the run stopped \(INTEGER_OVERFLOW\): virtual time reached \d+ ns, past 9007199254740991 ns/ },
  // ── output paths: checked before the run (nothing is printed on stdout) ──
  { name: '--timeline pointing at a directory', args: () => ['run', 'demo', '--timeline', dir], code: 2, message: /--timeline is ".*", a directory; expected a file to write/, stdout: '' },
  { name: '--timeline in a folder that does not exist', args: () => ['run', 'demo', '--timeline', join(dir, 'no', 'such', 'out.json')], code: 2, message: /--timeline is ".*out\.json", but the folder ".*no\/such" does not exist/, stdout: '' },
  { name: '--timeline through a file', args: () => ['run', 'demo', '--timeline', join(file('notafolder', 'x'), 'out.json')], code: 2, message: /--timeline is ".*notafolder\/out\.json", but ".*notafolder" is not a folder/, stdout: '' },
  { name: '--trace-events pointing at a directory', args: () => ['run', 'demo', '--trace-events', dir], code: 2, message: /--trace-events is ".*", a directory; expected a file to write/, stdout: '' },
  { name: '--timeline the scenario file itself', args: () => { const p = file('self.yaml', SCENARIO); return ['run', p, '--timeline', p]; }, code: 2, message: /--timeline is ".*self\.yaml", the scenario file itself; expected another file \(it would be overwritten\)/, stdout: '' },
  { name: '--timeline and --trace-events the same file', args: () => ['run', 'demo', '--timeline', join(dir, 'same.out'), '--trace-events', join(dir, 'same.out')], code: 2, message: /--timeline and --trace-events are both ".*same\.out"; expected two different files/, stdout: '' },
  { name: '--timeline given empty', args: () => ['run', 'demo', '--timeline='], code: 2, message: /--timeline is ""; expected the path of a file to write/, stdout: '' },
  // ── usage ──
  { name: 'a seed that is not a number', args: () => ['run', 'demo', '--seed', 'abc'], code: 2, message: /--seed is "abc"; expected an integer from 0 to 4294967295/ },
  { name: 'a seed past 32 bits on the command line', args: () => ['run', 'demo', '--seed', '99999999999'], code: 2, message: /--seed is "99999999999"; expected an integer from 0 to 4294967295/ },
  { name: 'an unknown option', args: () => ['run', 'demo', '--colour'], code: 2, message: /unknown option --colour; the options of run are --seed, --json/ },
  { name: 'run with no scenario', args: () => ['run'], code: 2, message: /run needs a scenario file or name/ },
  { name: 'an unknown command', args: () => ['frobnicate'], code: 2, message: /there is no command "frobnicate"; the commands: run, list/ },
  // ── --json: machine-readable errors on stdout ──
  { name: '--json with an alias bomb', args: () => ['run', file('bomb2.yaml', billionLaughs()), '--json'], code: 2, message: /bomb2\.yaml:4:8: the YAML alias \*c/, stdout: /"error": "invalid-scenario"[^]*"location": ".*bomb2\.yaml:4:8"/ },
  { name: '--json with a directory', args: () => ['run', dir, '--json'], code: 2, message: /is a directory/, stdout: /"ok": false,\s+"exitCode": 2,\s+"error": "invalid-input",\s+"message": "scenario file \\".*\\" is a directory/ },
  { name: '--json with a bad seed', args: () => ['run', 'demo', '--json', '--seed=-1'], code: 2, message: /--seed is "-1"/, stdout: /"error": "usage"/ },
];

describe('hostile input: every bad input exits 2 with a located, clear message', () => {
  it(`hostile the suite has at least 40 inputs (${CASES.length})`, () => { expect(CASES.length).toBeGreaterThanOrEqual(40); });

  it.each(CASES)('hostile $name: exits $code with a clear message', async (c) => {
    const r = await cli(...c.args());
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: c.code, stderr: expect.stringMatching(c.message) });
    if (c.stdout === '') expect(r.stdout).toBe('');
    if (c.stdout instanceof RegExp) expect(r.stdout).toMatch(c.stdout);
  });

  it('hostile a 50 MB scenario file is refused from its size, before it is read, in well under a second', async () => {
    const path = join(dir, 'fifty.yaml');
    const fd = openSync(path, 'w');
    writeSync(fd, 'name: big\n');
    ftruncateSync(fd, 50 * 1024 * 1024); // a sparse 50 MB file: made in microseconds, refused from its size
    closeSync(fd);
    const r = await cli('run', path);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/fifty\.yaml: the file is 52428800 bytes; expected at most 1 MiB \(1048576 bytes, a scenario file's limit/);
    expect(r.stdout).toBe('');
    // and a real 50 MB of text, written at test time, through the real command
    writeFileSync(path, `name: big\nqueues:\n${'  - { name: q, process: app, adapter: gpu0, commands: [ { work: { durationNs: 1 } } ] }\n'.repeat(630_000)}`);
    const spawned = spawnSync(process.execPath, [CLI, 'run', path], { encoding: 'utf8', timeout: 20_000 });
    expect(spawned.status).toBe(2);
    expect(spawned.stderr).toMatch(/the file is 5\d{7} bytes; expected at most 1 MiB/);
  });

  it('hostile the real command (a child process) exits 2 for an alias bomb, a directory and --json errors, 1 for a failed expectation with its file:line', () => {
    const run = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd: dir, timeout: 20_000 });
    const bomb = run('run', file('bomb3.yaml', billionLaughs()));
    expect(bomb.status).toBe(2);
    expect(bomb.stderr).toMatch(/bomb3\.yaml:4:8: the YAML alias \*c brings the file past 100 alias uses/);
    const folder = run('run', dir);
    expect(folder.status).toBe(2);
    expect(folder.stderr).toMatch(/is a directory/);
    const json = run('run', file('bad2.yaml', SCENARIO.replace('{ name: gpu0 }', '{ name: gpu0, engines: 99 }')), '--json');
    expect(json.status).toBe(2);
    const doc = JSON.parse(json.stdout);
    expect(doc).toMatchObject({ ok: false, exitCode: 2, error: 'invalid-scenario', message: 'invalid scenario (nothing ran): 1 problem' });
    expect(doc.problems).toEqual([{ path: 'machine.adapters[0].engines', line: 2, column: expect.any(Number), message: 'machine.adapters[0].engines is 99; expected at most 16', location: expect.stringMatching(/bad2\.yaml:2:\d+$/) }]);
    const failed = run('run', file('fails.yaml', `${SCENARIO}expect:\n  fences: { f: 0 }\n`), '--quiet');
    expect(failed.status).toBe(1);
    expect(failed.stdout).toMatch(/FAIL fence f ends at 0: expected 0, got 2 {2}\[expect\.fences\.f\] {2}.*fails\.yaml:10:13/);
  });

  it('hostile --timeline checks come before the run: nothing is written, nothing runs', async () => {
    const target = join(dir, 'fresh', 'out.json');
    const r = await cli('run', file('ok.yaml', SCENARIO), '--timeline', target);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(existsSync(target)).toBe(false);
    mkdirSync(join(dir, 'fresh'));
    const ok = await cli('run', join(dir, 'ok.yaml'), '--timeline', target, '--quiet');
    expect(ok.code).toBe(0);
    expect(JSON.parse(readFileSync(target, 'utf8')).traceEvents.length).toBeGreaterThan(0);
  });
});
