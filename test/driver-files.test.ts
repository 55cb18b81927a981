// Driver modules from files (issue 12): loadDriverModule, createMachine's driver.module path,
// scenario files' `driver: ./x.mjs`, and what each failure says.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, writeFileSync, rmSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createMachine, createMachineSync, loadDriverModule, ReferenceDriver, WddmError } from '../src/index.js';
import { parseScenario, ScenarioError } from '../src/scenario-files/load.js';
import { runScenario } from '../src/scenario-files/run.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const bundle = pathToFileURL(join(root, 'dist', 'wddm-fence.js')).href;
const referenceFile = join(root, 'examples', 'drivers', 'reference.mjs');
let dir: string;

/** Writes a module into the test's folder and returns its path. */
const file = (name: string, text: string) => { const path = join(dir, name); writeFileSync(path, text); return path; };
/** A module whose driver is the reference driver (the bundle's, as a user's module would get it) counting one DDI. */
const countingModule = `import { ReferenceDriver } from ${JSON.stringify(bundle)};
export const calls = { updateCurrentValuesFromCpu: 0 };
class Counting extends ReferenceDriver {
  updateCurrentValuesFromCpu(args) { calls.updateCurrentValuesFromCpu++; super.updateCurrentValuesFromCpu(args); }
}
export function createDriver(context) { return new Counting(context.hardware, context.core, context.options); }
`;

beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'wddm-fence-driver-files-')); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One GPU signal a CPU thread waits for: the status it gets. */
function signalAndWait(machine: Awaited<ReturnType<typeof createMachine>>, adapter: string): string[] {
  const app = machine.createProcess(`app-${adapter}`);
  const hDevice = app.createDevice({ hAdapter: app.openAdapter(adapter) });
  const fence = app.createNativeFence({ hDevice, initialValue: 0n });
  const queue = app.createHwQueue({ hDevice, engine: 0 });
  app.submit({ hHwQueue: queue.hHwQueue, commands: [{ work: { durationNs: 1000 } }, { signal: { hSyncObject: fence.hSyncObject, value: 1n } }] });
  const statuses: string[] = [];
  app.createThread('waiter', function* (cpu) { statuses.push((yield cpu.wait({ objects: [fence.hSyncObject], values: [1n], timeoutNs: 1e6 })).status); });
  app.signal({ objects: [fence.hSyncObject], values: [0n] });
  machine.run();
  return statuses;
}

describe('driver modules from files', () => {
  it('examples/drivers/reference.mjs loads by its path, imports the package by name, and runs the adapter by its interface alone', async () => {
    const module = await loadDriverModule(referenceFile);
    expect(module.name).toBe('reference');
    const machine = await createMachine({ adapters: [{ name: 'gpu0', driver: { module: referenceFile } }] });
    // the driver is the bundle's ReferenceDriver ('wddm-fence' → dist/), not this test's (src/): duck typing only
    expect(machine.adapters[0].driver).not.toBeInstanceOf(ReferenceDriver);
    expect(machine.adapters[0].driver.constructor.name).toBe('ReferenceDriver');
    expect(signalAndWait(machine, 'gpu0')).toEqual(['SUCCESS']);
    expect(machine.summary().adapters[0].interruptsRaised).toBe(1);
  });

  it('createMachine loads driver.module paths relative to the working directory, one module per adapter', async () => {
    const path = file('counting.mjs', countingModule);
    const namespace = await import(pathToFileURL(path).href) as { calls: { updateCurrentValuesFromCpu: number } };
    const before = namespace.calls.updateCurrentValuesFromCpu;
    const relativePath = join('.', (await import('node:path')).relative(process.cwd(), path));
    const machine = await createMachine({ adapters: [{ name: 'a0', driver: { module: relativePath } }, { name: 'a1' }] });
    expect(signalAndWait(machine, 'a0')).toEqual(['SUCCESS']);
    expect(signalAndWait(machine, 'a1')).toEqual(['SUCCESS']);
    expect(namespace.calls.updateCurrentValuesFromCpu - before).toBe(1); // only a0's driver came from the file
    const named = await loadDriverModule('counting.mjs', { from: dir });
    expect(named.name).toBe('counting'); // no `name` export: the file's name
    expect((await loadDriverModule('./counting.mjs', { from: pathToFileURL(join(dir, 'scenario.yaml')) })).name).toBe('counting');
  });

  it('a default export with createDriver is a driver module too', async () => {
    const path = file('default-export.mjs', `import { ReferenceDriver } from ${JSON.stringify(bundle)};
export default { name: 'by-default', createDriver: (context) => new ReferenceDriver(context.hardware, context.core, context.options) };\n`);
    const module = await loadDriverModule(path);
    expect(module.name).toBe('by-default');
    expect(signalAndWait(await createMachine({ adapters: [{ name: 'g', driver: { module } }] }), 'g')).toEqual(['SUCCESS']);
  });

  it('a module that cannot be loaded is refused saying why: no file, a folder, TypeScript, a syntax error, a throw, no createDriver', async () => {
    const refused = async (path: string | URL, options?: { from?: string }) => {
      const error = await loadDriverModule(path, options).then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(WddmError);
      return (error as Error).message;
    };
    expect(await refused('missing.mjs', { from: dir })).toBe(`driver module "missing.mjs" not found: no file at ${join(dir, 'missing.mjs')}`);
    expect(await refused(dir)).toMatch(/is a folder; expected its \.mjs or \.js file/);
    expect(await refused(file('driver.ts', 'export {}'))).toMatch(/is TypeScript; compile it to JavaScript first/);
    expect(await refused(file('notes.json', '{}'))).toMatch(/is not a \.mjs, \.js or \.wasm file/);
    const syntax = await refused(file('syntax.mjs', 'export function createDriver() {\n  return {;\n}\n'));
    expect(syntax).toMatch(/could not be loaded: a syntax error: Unexpected token ';'/);
    expect(syntax).toContain(`${join(dir, 'syntax.mjs')}:2`); // the line, from node --check
    expect(await refused(file('throws.mjs', 'export const name = "x";\nthrow new RangeError("no GPU here");\n')))
      .toMatch(new RegExp(`its top-level code threw RangeError: no GPU here \\(at ${join(dir, 'throws.mjs').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:2:7\\)`));
    expect(await refused(file('no-factory.mjs', 'export const name = "x";\nexport function makeDriver() {}\n')))
      .toMatch(/exports no createDriver function \(its exports: makeDriver, name\); expected `export function createDriver\(context\)/);
    expect(await refused(file('bad-name.mjs', 'export const name = 7;\nexport function createDriver() {}\n'))).toMatch(/\.name is 7; expected a string, or absent/);
    expect(await refused('')).toMatch(/loadDriverModule\(pathOrUrl\) is ""; expected the path or URL of an ES module/);
    await expect(loadDriverModule(referenceFile, { from: dir, base: 1 } as never)).rejects.toThrow(/unknown/i);
    // createMachine says which adapter's module it was, and builds nothing
    await expect(createMachine({ adapters: [{}, { driver: { module: join(dir, 'missing.mjs') } }] }))
      .rejects.toThrow(/^adapters\[1\]\.driver\.module: driver module ".*missing\.mjs" not found/);
  });

  it('createMachineSync refuses a module path, saying to use createMachine or loadDriverModule', () => {
    expect(() => createMachineSync({ adapters: [{ driver: { module: referenceFile } }] }))
      .toThrow(/adapters\[0\]\.driver\.module is ".*reference\.mjs"; expected a driver module object here: createMachineSync cannot load a module file; use createMachine \(async\)/);
  });

  it('a WddmError made by another copy of the package (the bundle) is a WddmError here: a driver\'s refusal stays a refusal', async () => {
    const bundled = await import(/* @vite-ignore */ bundle) as { WddmError: typeof WddmError };
    expect(bundled.WddmError).not.toBe(WddmError);
    const foreign = new bundled.WddmError('INVALID_PARAMETER', 'from the bundle');
    expect(foreign).toBeInstanceOf(WddmError);
    expect(new WddmError('TIMEOUT', 'here')).toBeInstanceOf(bundled.WddmError);
    expect(new Error('plain')).not.toBeInstanceOf(WddmError);
    expect({ message: 'lookalike' }).not.toBeInstanceOf(WddmError);
  });
});

describe('scenario files name driver modules', () => {
  const scenarioText = (driver: string) => `name: own-driver
machine:
  adapters:
    - name: gpu0
      driver: ${driver}
processes: [ { name: app } ]
fences: [ { name: done, process: app, adapter: gpu0 } ]
queues:
  - { name: q, process: app, adapter: gpu0, commands: [ { work: { durationNs: 1000 } }, { signal: { fence: done, value: 1 } } ] }
threads:
  - { name: t, process: app, steps: [ { wait: { id: w, fences: [done], values: [1], timeoutNs: 100000 } } ] }
expect: { fences: { done: 1 }, waits: { w: woken } }
`;

  it('`driver: ./x.mjs` and `driver: { module: ./x.mjs, … }` resolve against the scenario file\'s folder', async () => {
    const folder = join(dir, 'scenarios');
    mkdirSync(folder, { recursive: true });
    file('scenarios/mine.mjs', countingModule.replace('export const calls', 'export const name = "mine";\nexport const calls'));
    for (const driver of ['./mine.mjs', '{ module: mine.mjs, monitoredValueBarrier: true }']) {
      const source = join(folder, 'own.yaml');
      const result = await runScenario(parseScenario(scenarioText(driver), source), { source });
      expect(result.expectations.filter((e) => !e.ok)).toEqual([]);
      expect(result.passed).toBe(true);
      expect(result.machine.adapters[0].driver).not.toBeInstanceOf(ReferenceDriver);
    }
  });

  it('a scenario whose driver module cannot be loaded is an invalid file, at the line that names it', async () => {
    const source = join(dir, 'broken.yaml');
    const error = await runScenario(parseScenario(scenarioText('./nowhere.mjs'), source), { source }).catch((e) => e);
    expect(error).toBeInstanceOf(ScenarioError);
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toMatchObject({ path: 'machine.adapters[0].driver', line: 5 });
    expect(error.problems[0].message).toContain(`driver module "./nowhere.mjs" not found: no file at ${join(dir, 'nowhere.mjs')}`);
    expect(() => parseScenario(scenarioText('{ module: 7 }'), source)).toThrow(/driver/);
  });
});
