// Shared set-up for tests: one machine, one process, one device.
import { createMachine, WddmError, type MachineOptions, type Machine, type RuntimeProcess } from '../src/index.js';
import type { Dxgkrnl, GlobalFence, Process } from '../src/os/dxgkrnl.js';
import { runCli } from '../src/cli/main.js';

export interface World { machine: Machine; app: RuntimeProcess; hAdapter: number; hDevice: number }

export async function world(options: MachineOptions = {}, processName = 'app'): Promise<World> {
  const machine = await createMachine({ seed: 42, ...options });
  const app = machine.createProcess(processName);
  const hAdapter = app.openAdapter(0);
  const hDevice = app.createDevice({ hAdapter });
  return { machine, app, hAdapter, hDevice };
}

/**
 * The OS's modules behind the front door (src/os/kernel.ts keeps them private), for white-box tests of src/os/'s
 * internals: a forged driver callback, a module's own table. Nothing in src/ may do this (test/import-graph.test.ts:
 * outside src/os/ only kernel.ts and inspect.ts are imported, and the modules are not reachable through them).
 */
export function osModules(machine: Machine): Dxgkrnl {
  return (machine.os as unknown as { os: Dxgkrnl }).os;
}

/** The OS's record of a process, with its tables (white-box: src/ holds it as a KernelProcess token). */
export function processOf(process: RuntimeProcess): Process {
  return process.kernel as unknown as Process;
}

/** The OS's record of a fence, reached through a process handle (white-box checks). */
export function globalOf(w: { machine: Machine }, process: RuntimeProcess, hSyncObject: number): GlobalFence {
  return osModules(w.machine).handles.resolve(process.kernel as never, hSyncObject, 'syncObject', 'hSyncObject').global;
}

export function monitoredValue(w: { machine: Machine }, process: RuntimeProcess, hSyncObject: number): bigint {
  const g = globalOf(w, process, hSyncObject);
  return BigInt.asUintN(64, g.adapter.core.cpuReadMonitoredValue(g.coreFence));
}

export function ddiCalls(machine: Machine, name: string) {
  return machine.trace.find({ kind: 'ddi', name });
}

export const UINT64_MAX = 0xffff_ffff_ffff_ffffn;

/**
 * A seeded test's call logger: `attempt(what, call)` runs `call` and appends `what: ok <state>`, or for a refusal
 * (a WddmError) `what: <status> [<parameter>] <message> <state>`; any other error is rethrown. Two runs that should
 * behave alike (two DDI forms, two wait forms) are then compared log to log.
 */
export function attemptLogger(log: string[], state: () => string, options: { parameter?: boolean } = {}) {
  return (what: string, call: () => unknown): void => {
    try {
      call();
      log.push(`${what}: ok ${state()}`);
    } catch (error) {
      if (!(error instanceof WddmError)) throw error;
      log.push(`${what}: ${error.status}${options.parameter ? ` ${error.parameter}` : ''} ${error.message} ${state()}`);
    }
  };
}

/**
 * A small scenario file that passes: a queue works 1 us and signals f = 2, a thread waits for it (timeout 100 us).
 * Tests vary it with .replace().
 */
export const SMALL_SCENARIO = `name: small
machine: { adapters: [ { name: gpu0 } ] }
processes: [ { name: app } ]
fences: [ { name: f, process: app, adapter: gpu0 } ]
queues:
  - { name: q, process: app, adapter: gpu0, commands: [ { work: { durationNs: 1000 } }, { signal: { fence: f, value: 2 } } ] }
threads:
  - { name: t, process: app, steps: [ { wait: { id: w, fences: [f], values: [2], timeoutNs: 100000 } } ] }
`;

/** Runs the command in-process (runCli), capturing what it writes: `wddm-fence ARGS…`. */
export async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '', stderr = '';
  const code = await runCli(args, { out: (t) => { stdout += t; }, err: (t) => { stderr += t; } });
  return { code, stdout, stderr };
}
