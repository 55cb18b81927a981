// Drivers in C (issue 32, examples/drivers/c): the C reference driver is the JavaScript reference
// driver — the same trace for every built-in scenario, the same check-driver report, the same
// explorer verdict in the same number of states —, every broken C driver is caught with its rule,
// a C driver that writes outside its memory is stopped before the store, and a module that is no
// driver is refused naming why. The .wasm files are build outputs: this file runs
// examples/drivers/c/build.sh (Debian clang and lld) first; where they are missing the tests that
// need them are skipped, loudly (.ci/run installs them in CI).
import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createMachine, createMachineSync, loadDriverModule, WddmError, type Machine } from '../src/index.js';
import { runConformance } from '../src/scenario.js';
import { runnableScenarios } from '../src/scenario-files/builtin.js';
import { runScenario } from '../src/scenario-files/run.js';
import { runCli } from '../src/cli/main.js';
import { C_ABI, type WasmDriver } from '../src/driver/wasm-driver.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const folder = join(root, 'examples', 'drivers', 'c');
const fixtures = join(root, 'test', 'fixtures', 'c-drivers');
const fixtureSources = readdirSync(fixtures).filter((f) => f.endsWith('.c')).map((f) => join(fixtures, f));
const buildScript = join(folder, 'build.sh');

// build.sh says what is missing (exit 77 and the install line on stderr).
const built = spawnSync('bash', [buildScript], { cwd: root, encoding: 'utf8', timeout: 300_000 });
const builtFixtures = built.status === 0 ? spawnSync('bash', [buildScript, ...fixtureSources], { cwd: root, encoding: 'utf8', timeout: 300_000 }) : built;
const missing = built.status === 77 ? built.stderr.trim() : '';
if (missing) console.warn(`\n*** C driver tests SKIPPED, the toolchain is missing ***\n${missing}\n`);
const withToolchain = missing ? it.skip : it;

const reference = join(folder, 'reference.wasm');
const brokenFolder = join(folder, 'broken');
const brokenSources = readdirSync(brokenFolder).filter((f) => f.endsWith('.c')).sort();
const expectedRule = (file: string) => /^ \* Expected rule: ([A-Z]+-\d+)/m.exec(readFileSync(join(brokenFolder, file), 'utf8'))?.[1] ?? 'none';

/** Runs the CLI, capturing its output. */
async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '', err = '';
  const code = await runCli(args, { out: (t) => { out += t; }, err: (t) => { err += t; } });
  return { code, out, err };
}

const json = (value: unknown) => JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? `${v}n` : v));

describe('drivers in C (examples/drivers/c)', () => {
  if (missing) it.skip(`C drivers not built: ${missing.split('\n').slice(1, -1).join('; ')} (apt-get install -y clang lld)`, () => {});

  withToolchain('build.sh builds every driver and fixture with Debian\'s clang and lld', () => {
    expect(built.status, built.stderr).toBe(0);
    expect(builtFixtures.status, builtFixtures.stderr).toBe(0);
  });

  withToolchain('CAP-01 NF-10 every built-in scenario with seed 1: the C reference driver\'s trace and summary are the JavaScript reference driver\'s, byte for byte', async () => {
    const scenarios = runnableScenarios();
    expect(scenarios.length).toBeGreaterThanOrEqual(13);
    for (const builtin of scenarios) {
      const s = builtin.scenario!;
      const run = async (module?: string) => {
        const adapters = s.machine.adapters.map((a) => (module ? { ...a, driver: { ...(typeof a.driver === 'object' ? a.driver : {}), module } } : a));
        const result = await runScenario({ ...s, machine: { ...s.machine, seed: 1, adapters } }, { source: join(root, 'scenarios', `${builtin.name}.yaml`) });
        for (const adapter of result.machine.adapters) expect(adapter.driver.constructor.name, builtin.name).toBe(module ? 'WasmDriver' : 'ReferenceDriver');
        return { text: result.machine.trace.text(), json: json(result.machine.trace.json()), summary: result.machine.summaryText(), passed: result.passed };
      };
      const js = await run();
      const c = await run(reference);
      expect(js.text.split('\n').length, builtin.name).toBeGreaterThan(30);
      expect(c.text, builtin.name).toBe(js.text);
      expect(c.json, builtin.name).toBe(js.json);
      expect(c.summary, builtin.name).toBe(js.summary);
      expect(c.passed, builtin.name).toBe(js.passed);
    }
  });

  withToolchain('CAP-02 NF-11 check-driver passes the C reference driver (the JavaScript reference\'s report, byte for byte) and the template: exit 0', async () => {
    const c = await cli(['check-driver', reference, '--json']);
    const js = await cli(['check-driver', join(root, 'examples', 'drivers', 'reference.mjs'), '--json']);
    expect(c.err).toBe('');
    expect(c.code).toBe(0);
    const withoutName = (text: string) => text.replace(/"driver": "[^"]*"/, '');
    expect(withoutName(c.out)).toBe(withoutName(js.out));
    const template = await cli(['check-driver', join(folder, 'template.wasm')]);
    expect(template.err).toBe('');
    expect(template.code).toBe(0);
    expect(template.out).toMatch(/^wddm-fence check-driver: driver "template" from /);
    expect(template.out).toMatch(/^PASS: \d+ passed, 0 violated/m);
  });

  it('there are at least three broken C drivers, each with its expected rule in its header and the same rule in the README', () => {
    const readme = readFileSync(join(folder, 'README.md'), 'utf8');
    expect(brokenSources.length).toBeGreaterThanOrEqual(3);
    for (const file of brokenSources) {
      const rule = expectedRule(file);
      expect(rule, file).toMatch(/^[A-Z]+-\d+$/);
      expect(readme, file).toMatch(new RegExp(`\\| \`broken/${file.replace('.', '\\.')}\` \\|[^\\n]*\\| ${rule} \\|`));
    }
    expect(new Set(brokenSources.map(expectedRule)).size).toBe(brokenSources.length);
  });

  for (const file of brokenSources) {
    const rule = expectedRule(file);
    withToolchain(`${rule} broken/${file}: the conformance suite reports exactly ${rule} violated, and check-driver exits 1 naming it`, async () => {
      const wasm = join(brokenFolder, file.replace(/\.c$/, '.wasm'));
      const report = await runConformance(await loadDriverModule(wasm), { seed: 1 });
      const violated = report.results.filter((r) => r.status === 'violated').map((r) => r.requirement);
      expect(violated, JSON.stringify(report.results.filter((r) => r.firstViolation).map((r) => r.firstViolation))).toEqual([rule]);
      expect(report.cases.filter((c) => c.error)).toEqual([]);
      expect(report.driver).toBe(file.replace(/\.c$/, ''));
      const run = await cli(['check-driver', wasm]);
      expect(run.code).toBe(1);
      expect(run.out).toMatch(new RegExp(`^${rule} +VIOLATED`, 'm'));
    }, 60_000);
  }

  withToolchain('NF-10 explore --driver: the C reference driver holds every invariant in the states the JavaScript one reaches; without its barrier it loses a wakeup', async () => {
    const c = await cli(['explore', '--driver', reference]);
    const js = await cli(['explore', '--driver', join(root, 'examples', 'drivers', 'reference.mjs')]);
    expect(c.code, c.err).toBe(0);
    expect(c.out).toMatch(/every invariant holds in every reachable state/);
    const states = (text: string) => /(\d+) states \((\d+) quiet\), (\d+) transitions/.exec(text)?.slice(1);
    expect(states(c.out)).toBeDefined();
    expect(states(c.out)).toEqual(states(js.out));
    const broken = await cli(['explore', '--driver', join(brokenFolder, 'skips-barrier.wasm'), '--out', join(mkdtempSync(join(tmpdir(), 'wddm-c-')), 'counterexample.json')]);
    expect(broken.code).toBe(1);
    expect(broken.out).toMatch(/VIOLATED +no-lost-wakeup +NF-10/);
  });

  withToolchain('INT-03 a C driver that writes past its region is stopped before the store: its adapter bug-checked naming the address, nothing outside its region written, the other adapter runs on', async () => {
    const machine = await createMachine({
      seed: 1,
      adapters: [
        { name: 'gpu0', driver: { module: join(fixtures, 'writes-past-region.wasm') } },
        { name: 'gpu1', driver: { module: reference } },
      ],
    });
    const overrun = machine.adapters[0].driver as unknown as WasmDriver;
    const other = machine.adapters[1].driver as unknown as WasmDriver;
    const end = overrun.region.base + overrun.region.bytes;
    expect(other.region.base).toBeGreaterThan(end); // the next region, after a guard page: what an overrun would reach first
    const app = machine.createProcess('app');
    const device0 = app.createDevice({ hAdapter: app.openAdapter(0) }), device1 = app.createDevice({ hAdapter: app.openAdapter(1) });
    const fence0 = app.createNativeFence({ hDevice: device0, initialValue: 0n }).hSyncObject;
    const fence1 = app.createNativeFence({ hDevice: device1, initialValue: 0n }).hSyncObject;
    const queue1 = app.createHwQueue({ hDevice: device1, engine: 0, nativeProgressFence: false }).hHwQueue;
    app.submit({ hHwQueue: queue1, commands: [{ work: { durationNs: 2000 } }, { signal: { hSyncObject: fence1, value: 5n } }] });
    let first: string | undefined, second: string | undefined;
    app.waitWithCallback({ objects: [fence0], values: [1n] }, (r) => { first = r.status; }); // DxgkDdiUpdateMonitoredValues on gpu0: the overrun
    app.waitWithCallback({ objects: [fence1], values: [5n] }, (r) => { second = r.status; });
    machine.run();
    await new Promise((resolve) => setImmediate(resolve)); // wait callbacks run as microtasks
    const checks = machine.summary().bugChecks;
    expect(checks.map((b) => b.adapter)).toEqual(['gpu0']);
    expect(checks[0].message).toContain(`driver "writes-past-region" was stopped in DxgkDdiUpdateMonitoredValues: a store of 8 byte(s) at 0x${end.toString(16)}, outside its memory`);
    expect(machine.adapter('gpu0').state).toBe('stopped');
    expect(first).toBe('ADAPTER_STOPPED');
    // gpu1 and its C driver are untouched: its wait is satisfied by its GPU's signal.
    expect(second).toBe('SUCCESS');
    expect(app.readFenceValue(fence1)).toBe(5n);
    // The fill pattern is in gpu0's region (the overrun ran) and nowhere else in the machine's memory.
    const words = new BigUint64Array(machine.memory.buffer as ArrayBuffer);
    const pattern = 0x5a5a5a5a5a5a5a5an;
    let inside = 0, outside = 0;
    for (let i = 0; i < words.length; i++) {
      if (words[i] !== pattern) continue;
      if (i * 8 >= overrun.region.base && i * 8 < end) inside++; else outside++;
    }
    expect(inside).toBeGreaterThan(1000);
    expect(outside).toBe(0);
  });

  withToolchain('INT-03 a C driver whose stack overflows is stopped at the guard page below its region, its adapter bug-checked', async () => {
    const machine = await createMachine({ seed: 1, adapters: [{ name: 'gpu0', driver: { module: join(fixtures, 'overflows-stack.wasm') } }] });
    const driver = machine.adapters[0].driver as unknown as WasmDriver;
    const app = machine.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const fence = app.createNativeFence({ hDevice, initialValue: 0n }).hSyncObject;
    app.waitWithCallback({ objects: [fence], values: [1n] }, () => {});
    machine.run();
    const [check] = machine.summary().bugChecks;
    const address = Number.parseInt(/a store of \d+ byte\(s\) at 0x([0-9a-f]+)/.exec(check?.message ?? '')?.[1] ?? 'NaN', 16);
    expect(check?.message).toMatch(/driver "overflows-stack" was stopped in DxgkDdiUpdateMonitoredValues/);
    expect(address).toBeLessThan(driver.region.base);
    expect(address).toBeGreaterThan(driver.region.base - 8192); // in the guard page, or a frame's first bytes just past it
    // The driver is not entered again; the machine goes on.
    expect(() => machine.run()).not.toThrow();
  });

  withToolchain('every kind of store a driver can make is checked: inside its memory it lands, outside it is stopped before it happens', async () => {
    const machine = await createMachine({ seed: 1, adapters: [{ name: 'gpu0', driver: { module: join(fixtures, 'store-kinds.wasm') } }] });
    const driver = machine.adapters[0].driver as unknown as WasmDriver;
    const store = (driver as unknown as { e: { WddmTestStore(kind: number, address: number): void } }).e.WddmTestStore;
    const app = machine.createProcess('app');
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    app.createNativeFence({ hDevice, initialValue: 0n });
    const bytes = new Uint8Array(machine.memory.buffer as ArrayBuffer);
    // A live fence's CurrentValue word is the driver's to write (DxgkDdiUpdateCurrentValuesFromCpu); its MonitoredValue is the CMP's.
    const core = machine.adapters[0].core;
    const [currentValue, monitoredValue] = [core.fenceCurrentValueAddress(1), core.fenceMonitoredValueAddress(1)];
    store(4, currentValue);
    expect(new BigUint64Array(machine.memory.buffer as ArrayBuffer, currentValue, 1)[0]).toBe(0xa5a5a5a5a5a5a5a5n);
    expect(() => store(4, monitoredValue)).toThrow(/a store of 8 byte\(s\) at 0x/);
    expect(() => store(4, currentValue + 8)).toThrow(/a store of 8 byte\(s\) at 0x/); // the next slot: no live fence's
    const kinds = ['i32.store', 'i64.store', 'i32.store8', 'f64.store', 'i64.atomic.store', 'i32.atomic.rmw.add', 'i64.atomic.rmw.cmpxchg', 'memory.fill', 'memory.copy', 'i32.store offset=4000'];
    const target = (kind: number, address: number) => (kind === 9 ? address - 4000 : address); // kind 9 stores at its argument + 4000
    // Outside: the core's system memory region header, the adapter's private region, the guard page below the driver's region.
    const outside = [machine.systemBase, machine.adapters[0].privateBase + 64, driver.region.base - 64, driver.region.base + driver.region.bytes];
    for (let kind = 0; kind < kinds.length; kind++) {
      for (const address of outside) {
        const before = bytes.slice(address, address + 64);
        expect(() => store(kind, target(kind, address)), `${kinds[kind]} at ${address}`).toThrow(/a store of \d+ byte\(s\) at 0x/);
        expect(bytes.slice(address, address + 64), `${kinds[kind]} at ${address}`).toEqual(before);
      }
      // Inside its pool: the store lands (memory.copy copies zeros: over 0xff).
      const inside = driver.region.poolBase + driver.region.poolBytes - 256;
      const fill = kind === 8 ? 0xff : 0;
      bytes.fill(fill, inside, inside + 64);
      store(kind, target(kind, inside));
      expect(bytes.slice(inside, inside + 64).some((b) => b !== fill), kinds[kind]).toBe(true);
    }
  });

  withToolchain('a module that is no driver is refused naming why: check-driver exits 2 (not WebAssembly, not position-independent, missing exports, an import the model does not provide)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wddm-c-'));
    writeFileSync(join(dir, 'text.wasm'), 'not wasm');
    writeFileSync(join(dir, 'empty.wasm'), new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]));
    const cases: [string, RegExp][] = [
      [join(dir, 'text.wasm'), /is not a WebAssembly module/],
      [join(dir, 'empty.wasm'), /is not a position-independent module/],
      [join(fixtures, 'missing-exports.wasm'), /does not implement the driver interface: it exports no DxgkDdiStartDevice, DxgkDdiStopDevice, .*UmdSubmitToHwQueue/],
      [join(fixtures, 'unknown-import.wasm'), /imports wddm_gpu\.TeleportFence, which the model does not provide/],
    ];
    for (const [file, message] of cases) {
      const run = await cli(['check-driver', file]);
      expect(run.code, file).toBe(2);
      expect(run.err, file).toMatch(message);
      await expect(loadDriverModule(file)).rejects.toBeInstanceOf(WddmError);
    }
  });

  withToolchain('CAP-01 createMachine takes a .wasm driver by path; createMachineSync takes the loaded module; every adapter gets its own region', async () => {
    const machine: Machine = await createMachine({ adapters: [{ name: 'a', driver: { module: reference } }, { name: 'b', driver: { module: reference } }] });
    const [a, b] = machine.adapters.map((x) => x.driver as unknown as WasmDriver);
    expect(a.region.base + a.region.bytes).toBeLessThan(b.region.base);
    expect(a.region.base).toBeGreaterThanOrEqual(machine.adapters[1].privateBase); // after the core's regions
    expect(() => createMachineSync({ adapters: [{ driver: { module: reference } }] })).toThrow(/createMachine/);
    const sync = createMachineSync({ adapters: [{ driver: { module: await loadDriverModule(reference) } }] });
    expect(sync.adapters[0].driver.constructor.name).toBe('WasmDriver');
  });

  it('build.sh without clang exits 77 and names the install line', () => {
    const run = spawnSync('bash', [buildScript], { cwd: root, encoding: 'utf8', env: { ...process.env, CLANG: '/nonexistent/clang' } });
    expect(run.status).toBe(77);
    expect(run.stderr).toMatch(/missing:\n {2}- clang \(\/nonexistent\/clang\)/);
    expect(run.stderr).toMatch(/apt-get install -y clang lld/);
  });

  it('every offset the adapter reads and writes is the one the header pins with a static assert', () => {
    const header = readFileSync(join(folder, 'wddm_fence_driver.h'), 'utf8');
    const asserted = new Map<string, number>();
    for (const [, type, field, offset] of header.matchAll(/WDDM_OFFSET\((\w+), ([\w.]+), (\d+)\);/g)) asserted.set(`${type}.${field}`, Number(offset));
    for (const [, type, size] of header.matchAll(/WDDM_SIZE\((\w+), (\d+)\);/g)) asserted.set(`${type}.size`, Number(size));
    const used = Object.entries(C_ABI).flatMap(([type, fields]) => Object.entries(fields).map(([field, offset]) => [`${type}.${field}`, offset] as const));
    expect(used.length).toBeGreaterThan(80);
    for (const [name, offset] of used) expect(asserted.get(name), name).toBe(offset);
  });

  it('the template has every DDI, GPU event and the user-mode half, each with a comment naming the requirements it serves', () => {
    const text = readFileSync(join(folder, 'template.c'), 'utf8');
    const exports = [...text.matchAll(/\nWDDM_EXPORT\((\w+)\)/g)].map((m) => m[1]);
    const header = readFileSync(join(folder, 'wddm_fence_driver.h'), 'utf8');
    const required = [...header.slice(header.indexOf('what the driver exports')).matchAll(/^ \* {3}(?:NTSTATUS|BOOLEAN|void|int32_t|UINT64) +(\w+)\(/gm)].map((m) => m[1]);
    expect(required.length).toBeGreaterThan(20);
    for (const name of required.filter((n) => n !== 'WddmGpuTimestamp')) expect(exports, name).toContain(name);
    for (const name of exports.filter((n) => n !== 'WddmDdiUpdateMonitoredValuesStep')) {
      const at = text.indexOf(`\nWDDM_EXPORT(${name})`);
      const comment = text.slice(text.lastIndexOf('/**', at), at);
      expect(comment, `${name}'s comment`).toMatch(/\*\/\s*$/);
      expect(comment, `${name}'s comment names a requirement`).toMatch(/\b(CAP|NF|INT|XA|LOG|MF)-\d\d\b/);
    }
  });
});
