// What a newcomer's first day runs into (issue 33), each as the user meets it: the built command
// (dist/cli.js) in a child process, run from a folder outside the clone, its exit code, stdout and
// stderr; commands the tool prints are run as printed, through a shell.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync, cpSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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
    writeFileSync(join(dir, 'elsewhere', 'own-driver.yaml'), `name: own-driver
machine: { adapters: [ { name: gpu0, driver: ./my-driver/driver.mjs } ] }
processes: [ { name: app } ]
fences: [ { name: f, process: app, adapter: gpu0 } ]
queues:
  - { name: q, process: app, adapter: gpu0, commands: [ { work: { durationNs: 1000 } }, { signal: { fence: f, value: 2 } } ] }
threads:
  - { name: t, process: app, steps: [ { wait: { id: w, fences: [f], values: [2] } } ] }
expect: { fences: { f: 2 }, waits: { w: woken } }
`);
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
