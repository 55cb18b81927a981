// The seam between the OS, the driver and the GPU (issue 11 part b, issue 12
// item 1): the OS reaches a driver only through the driver port and the
// KernelModeDriver interface, a driver reaches the OS only through
// DxgkrnlCallbacks, the simulated GPU belongs to the driver side, and user mode
// reaches the kernel only through its calls and a driver only through the
// driver's user-mode half.
import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createMachine, type Machine } from '../src/index.js';
import { GPU_CORE_EXPORTS, OS_CORE_EXPORTS } from '../src/core/bindings.js';
import type { DdiCall, DdiName, DdiOutcome } from '../src/port/driver-port.js';
import { osModules } from './helpers.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const sourceFiles = (dir: string): string[] => readdirSync(join(root, dir), { withFileTypes: true })
  .flatMap((e) => (e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
const read = (file: string) => readFileSync(join(root, file), 'utf8');
/** Every module path a file imports (static import / export … from, `import type` too), as written. */
const importsOf = (file: string) => [...read(file).matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+'([^']+)'/gms)].map((m) => m[1]);
/** Code without comments (so a doc comment naming an export does not count as a call). */
const code = (file: string) => read(file).replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');

/** The kernel: the OS model, VidMm included. */
const KERNEL_FILES = sourceFiles('src/os');
/** User mode: the runtime and the D3D11 map layer. */
const USER_FILES = sourceFiles('src/user');

const METHOD_TO_DDI: Record<string, DdiName> = {
  startDevice: 'DxgkDdiStartDevice', stopDevice: 'DxgkDdiStopDevice', resetFromTimeout: 'DxgkDdiResetFromTimeout',
  restartFromTimeout: 'DxgkDdiRestartFromTimeout', queryNativeFenceCaps: 'DxgkDdiQueryAdapterInfo',
  createNativeFence: 'DxgkDdiCreateNativeFence', openNativeFence: 'DxgkDdiOpenNativeFence', closeNativeFence: 'DxgkDdiCloseNativeFence',
  destroyNativeFence: 'DxgkDdiDestroyNativeFence', updateCurrentValuesFromCpu: 'DxgkDdiUpdateCurrentValuesFromCpu',
  updateMonitoredValues: 'DxgkDdiUpdateMonitoredValues', createHwQueue: 'DxgkDdiCreateHwQueue', destroyHwQueue: 'DxgkDdiDestroyHwQueue',
  setNativeFenceLogBuffer: 'DxgkDdiSetNativeFenceLogBuffer', updateNativeFenceLogs: 'DxgkDdiUpdateNativeFenceLogs',
  createContext: 'DxgkDdiCreateContext', destroyContext: 'DxgkDdiDestroyContext', submitCommand: 'DxgkDdiSubmitCommand',
};

/** Records every call made to each adapter's kernel-mode driver object, by DDI name, in order. */
function spyOnDrivers(machine: Machine): string[] {
  const calls: string[] = [];
  for (const adapter of machine.adapters) {
    const driver = adapter.driver as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const [method, ddi] of Object.entries(METHOD_TO_DDI)) {
      const original = driver[method].bind(driver);
      driver[method] = (...args: unknown[]) => { calls.push(`${adapter.name}:${ddi}`); return original(...args); };
    }
  }
  return calls;
}

/** A workload that makes most DDIs: native and monitored fences, queues, contexts, logs, a cross-adapter fence, waits, a reset. */
async function workload(): Promise<{ machine: Machine; driverCalls: string[]; seen: DdiCall[]; callbacks: string[] }> {
  const machine = await createMachine({ seed: 7, adapters: [{ name: 'dGPU' }, { name: 'iGPU', caps: { optimizedNativeFenceSignaledInterrupt: true } }] });
  const driverCalls = spyOnDrivers(machine);
  const seen: DdiCall[] = [];
  const callbacks: string[] = [];
  machine.port.observe({
    beforeDdi: (call) => seen.push(call),
    beforeCallback: (call) => callbacks.push(`${call.adapter}:${call.callback}`),
    afterCallback: (call) => callbacks.push(`${call.adapter}:${call.callback}:done`),
  });
  const app = machine.createProcess('app');
  const d = app.createDevice({ hAdapter: app.openAdapter('dGPU') });
  const i = app.createDevice({ hAdapter: app.openAdapter('iGPU') });
  app.queryAdapterInfo(app.openAdapter('dGPU'), 'NATIVE_FENCE_CAPS');
  const shared = app.createNativeFence({ hDevice: d, flags: { crossAdapter: true, shared: true }, name: 'shared' });
  const onI = app.openNativeFenceFromNtHandle({ hNtHandle: app.shareObject(shared.hSyncObject), hDevice: i });
  const local = app.createNativeFence({ hDevice: d, name: 'local' });
  const qd = app.createHwQueue({ hDevice: d, name: 'qd' });
  const qi = app.createHwQueue({ hDevice: i, name: 'qi' });
  void app.waitAsync({ objects: [onI.hSyncObject], values: [2n] });
  app.submit({ hHwQueue: qd.hHwQueue, commands: [{ work: { durationNs: 500 } }, { signal: { hSyncObject: shared.hSyncObject, value: 2n } }, { signal: { hSyncObject: local.hSyncObject, value: 1n } }] });
  app.submit({ hHwQueue: qi.hHwQueue, commands: [{ wait: { hSyncObject: onI.hSyncObject, value: 2n } }] });
  const monitored = app.createSynchronizationObject({ hDevice: d, type: 'MONITORED_FENCE' });
  const context = app.createContext({ hDevice: d });
  app.submitCommand({ hContext: context, commands: [{ work: { durationNs: 100 } }, { fenceWrite: { hSyncObject: monitored.hSyncObject, value: 1n } }] });
  machine.run();
  app.signal({ objects: [local.hSyncObject], values: [5n] });
  app.destroyContext(context);
  app.destroyHwQueue(qi.hHwQueue);
  app.destroySynchronizationObject(local.hSyncObject);
  machine.removeDevice('dGPU');
  machine.run();
  return { machine, driverCalls, seen, callbacks };
}

describe('the driver port is the only way to a driver (issue 12, one seam)', () => {
  it('every call any driver gets was made through the port, which showed it to its observers first', async () => {
    const { driverCalls, seen } = await workload();
    expect(driverCalls.length).toBeGreaterThan(30);
    expect(seen.map((c) => `${c.adapter}:${c.ddi}`)).toEqual(driverCalls);
    const made = new Set(driverCalls.map((c) => c.split(':')[1]));
    for (const ddi of ['DxgkDdiCreateNativeFence', 'DxgkDdiOpenNativeFence', 'DxgkDdiCloseNativeFence', 'DxgkDdiDestroyNativeFence',
      'DxgkDdiUpdateMonitoredValues', 'DxgkDdiUpdateCurrentValuesFromCpu', 'DxgkDdiCreateHwQueue', 'DxgkDdiDestroyHwQueue',
      'DxgkDdiSetNativeFenceLogBuffer', 'DxgkDdiUpdateNativeFenceLogs', 'DxgkDdiCreateContext', 'DxgkDdiSubmitCommand',
      'DxgkDdiDestroyContext', 'DxgkDdiResetFromTimeout', 'DxgkDdiRestartFromTimeout', 'DxgkDdiQueryAdapterInfo']) {
      expect(made, ddi).toContain(ddi);
    }
    // Sequence numbers order the calls; each names the adapter and carries the very arguments.
    expect(seen.every((c, k) => k === 0 || c.sequence > seen[k - 1].sequence)).toBe(true);
    expect(seen.find((c) => c.ddi === 'DxgkDdiCreateNativeFence')!.args).toHaveProperty('CurrentValueKernelCpuVa');
  });

  it('DDI arguments carry what a real driver gets (addresses, handles, private data), never a core id', async () => {
    const { seen } = await workload();
    for (const call of seen) {
      const keys = Object.keys((call.args ?? {}) as object).join(',');
      expect(keys, call.ddi).not.toMatch(/core/i);
    }
    const submit = seen.find((c) => c.ddi === 'DxgkDdiSubmitCommand')!;
    for (const command of (submit.args as { Commands: object[] }).Commands) expect(Object.keys(command)).toEqual(['op', 'gpuVa', 'value', 'handle']);
    const queue = seen.find((c) => c.ddi === 'DxgkDdiCreateHwQueue')!;
    expect((queue.args as { PrivateDriverData: Uint8Array }).PrivateDriverData).toBeInstanceOf(Uint8Array);
  });

  it('the driver reaches the OS only through its callbacks, and the observers see each one before the OS acts', async () => {
    const { callbacks } = await workload();
    for (const name of ['NotifyInterrupt', 'NotifyGpuProgress', 'NotifyDmaCompleted', 'NotifyMonitoredFenceSignaled']) {
      expect(callbacks.some((c) => c.endsWith(`:${name}`)), name).toBe(true);
    }
    // Each callback is seen before and after the OS handled it, properly nested.
    const open: string[] = [];
    for (const c of callbacks) {
      if (c.endsWith(':done')) expect(open.pop()).toBe(c.slice(0, -':done'.length));
      else open.push(c);
    }
    expect(open).toEqual([]);
  });

  it('a driver that throws bug-checks its own adapter only, through the port, with a report naming the DDI', async () => {
    const machine = await createMachine({ seed: 3, adapters: [{ name: 'a' }, { name: 'b' }] });
    const outcomes: [DdiCall, DdiOutcome][] = [];
    machine.port.observe({ afterDdi: (call, outcome) => outcomes.push([call, outcome]) });
    const app = machine.createProcess('app');
    const da = app.createDevice({ hAdapter: app.openAdapter('a') });
    const db = app.createDevice({ hAdapter: app.openAdapter('b') });
    const fa = app.createNativeFence({ hDevice: da });
    const fb = app.createNativeFence({ hDevice: db });
    machine.adapter('b').driver.updateMonitoredValues = () => { throw new TypeError('broken driver'); };
    const waitB = app.waitAsync({ objects: [fb.hSyncObject], values: [1n] });
    const waitA = app.waitAsync({ objects: [fa.hSyncObject], values: [1n] });
    expect(machine.summary().bugChecks).toEqual([expect.objectContaining({ adapter: 'b', code: 'DRIVER_FAULT', message: expect.stringMatching(/DxgkDdiUpdateMonitoredValues: broken driver/) })]);
    await expect(waitB).resolves.toMatchObject({ status: 'ADAPTER_STOPPED' });
    expect(machine.adapter('b').state).toBe('stopped');
    expect(machine.adapter('a').state).toBe('running');
    const failed = outcomes.find(([call]) => call.adapter === 'b' && call.ddi === 'DxgkDdiUpdateMonitoredValues')!;
    expect(failed[1]).toMatchObject({ ok: false });
    expect(outcomes.some(([call]) => call.adapter === 'b' && call.ddi === 'DxgkDdiStopDevice')).toBe(true);
    app.signal({ objects: [fa.hSyncObject], values: [1n] });
    await expect(waitA).resolves.toMatchObject({ status: 'SUCCESS' });
    expect(machine.port.calls(0, 'DxgkDdiUpdateMonitoredValues')).toBeGreaterThan(0);
  });
});

describe('the hardware boundary: the OS holds no GPU', () => {
  it('nothing in the kernel imports the simulated GPU, the reference driver or the port\'s driver objects', () => {
    for (const file of KERNEL_FILES) {
      for (const target of importsOf(file)) {
        expect(`${file} imports ${target}`).not.toMatch(/ imports .*(\/gpu\/|\/driver\/|\/machine\/|\/user\/)/);
      }
    }
  });

  it('the kernel calls no GPU-side core export; its view of each core instance has only OS memory exports', async () => {
    const gpuOnly = GPU_CORE_EXPORTS.filter((name) => !(OS_CORE_EXPORTS as readonly string[]).includes(name));
    expect(gpuOnly.length).toBeGreaterThan(30);
    for (const file of KERNEL_FILES) {
      const text = code(file);
      for (const name of gpuOnly) expect(text.includes(`.${name}(`), `${relative(root, join(root, file))} calls ${name}`).toBe(false);
    }
    // Each view names real exports, and the kernel's sources use only what the OS view names.
    const machine = await createMachine({ seed: 1 });
    for (const name of [...OS_CORE_EXPORTS, ...GPU_CORE_EXPORTS]) expect(typeof machine.adapters[0].core[name], name).toBe('function');
    const osNames = new Set<string>(OS_CORE_EXPORTS);
    const allExports = Object.keys(machine.adapters[0].core).filter((k) => typeof machine.adapters[0].core[k] === 'function');
    for (const file of KERNEL_FILES) {
      const used = [...code(file).matchAll(/\bcore\.(\w+)\(/g)].map((m) => m[1]).filter((name) => allExports.includes(name));
      expect(used.filter((name) => !osNames.has(name)), file).toEqual([]);
    }
    // The OS's adapter record holds no driver and no hardware: the port has the driver, the driver has the GPU.
    expect(Object.keys(osModules(machine).adapters[0])).not.toContain('driver');
    expect(Object.keys(osModules(machine).adapters[0])).not.toContain('hardware');
  });
});

describe('user mode: its kernel calls and its driver half, nothing else', () => {
  it('user mode never writes a kernel table and never calls the kernel-mode driver or the GPU', () => {
    const mutations = /\.(handles|ntHandles|retired|closing|devices|queues|locals)\.(set|delete|add|clear)\(|\.allocHandle\(|\.allocNtHandle\(|\.(signaled|signaledAtNs|removed)\s*=[^=]|\.waiters\.push\(/;
    for (const file of USER_FILES) {
      const text = code(file);
      const hit = text.split('\n').find((line) => mutations.test(line));
      expect(hit, `${file}: ${hit}`).toBeUndefined();
      for (const target of importsOf(file)) expect(`${file} imports ${target}`).not.toMatch(/ imports .*(\/gpu\/|\/driver\/|\/port\/|\/machine\/)/);
    }
  });
});
