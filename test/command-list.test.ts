// Command lists (src/os/command-list.ts): wait / signal / work recorded into typed columns, submitted
// whole. Recording checks each command's shape with the array form's errors (naming the command's
// index); submit checks what depends on the OS's state, and a refusal changes nothing; a list is
// bounded, reusable after reset(), and runs exactly as the same commands given as objects do.
import { describe, it, expect } from 'vitest';
import { createHash } from 'node:crypto';
import {
  CommandList, ReferenceDriver, WddmError, createMachine, createMachineSync, exportTimeline, MAX_VIRTUAL_TIME_NS,
  type DriverContext, type Machine, type RuntimeProcess, type UMDARG_SUBMITTOHWQUEUE,
} from '../src/index.js';
import { world } from './helpers.js';

async function rig(options: Parameters<typeof world>[0] = {}) {
  const w = await world(options);
  const { hSyncObject } = w.app.createNativeFence({ hDevice: w.hDevice, initialValue: 0n });
  const { hHwQueue } = w.app.createHwQueue({ hDevice: w.hDevice, engine: 0, nativeProgressFence: false });
  return { ...w, hSyncObject, hHwQueue };
}

/** What `call` throws, as { status, parameter, message }; fails the test when it throws nothing or no WddmError. */
function thrown(call: () => unknown): { status: string; parameter?: string; message: string } {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(WddmError);
    const e = error as WddmError;
    return { status: e.status, parameter: e.parameter, message: e.message };
  }
  throw new Error('the call was taken');
}

/** The same commands as objects (the array form) and as a list recorder. */
type Command = ['signal' | 'wait', number, bigint | number] | ['work', number];
const asObjects = (commands: Command[]) => commands.map((c) => (c[0] === 'work' ? { work: { durationNs: c[1] } } : { [c[0]]: { hSyncObject: c[1], value: c[2] } }));
function record(list: CommandList, commands: Command[]): CommandList {
  for (const c of commands) {
    if (c[0] === 'work') list.work(c[1]);
    else list[c[0]](c[1], c[2]);
  }
  return list;
}

describe('command lists: recording', () => {
  it('NF-06 a command of a bad shape is refused as it is recorded, with the array form\'s status and parameter for the same index, and nothing is recorded', async () => {
    const { app, hSyncObject, hHwQueue, machine } = await rig();
    // Each bad command as the array form gives it (at index 1, after a good one) and as a list records it.
    const cases: [string, unknown, (list: CommandList) => unknown][] = [
      ['handle 0', { signal: { hSyncObject: 0, value: 2n } }, (l) => l.signal(0, 2n)],
      ['handle -3', { wait: { hSyncObject: -3, value: 2n } }, (l) => l.wait(-3, 2n)],
      ['handle 1.5', { signal: { hSyncObject: 1.5, value: 2n } }, (l) => l.signal(1.5, 2n)],
      ['handle a string', { signal: { hSyncObject: String(hSyncObject), value: 2n } }, (l) => l.signal(String(hSyncObject) as never, 2n)],
      ['value -1n', { signal: { hSyncObject, value: -1n } }, (l) => l.signal(hSyncObject, -1n)],
      ['value 2^64', { wait: { hSyncObject, value: 1n << 64n } }, (l) => l.wait(hSyncObject, 1n << 64n)],
      ['value 1.5', { signal: { hSyncObject, value: 1.5 } }, (l) => l.signal(hSyncObject, 1.5)],
      ['value -1', { signal: { hSyncObject, value: -1 } }, (l) => l.signal(hSyncObject, -1)],
      ['value 2^53 (not a safe integer)', { signal: { hSyncObject, value: 2 ** 53 } }, (l) => l.signal(hSyncObject, 2 ** 53)],
      ['value a string', { wait: { hSyncObject, value: '3' } }, (l) => l.wait(hSyncObject, '3' as never)],
      ['value missing', { signal: { hSyncObject } }, (l) => l.signal(hSyncObject, undefined as never)],
      ['work -1 ns', { work: { durationNs: -1 } }, (l) => l.work(-1)],
      ['work NaN', { work: { durationNs: Number.NaN } }, (l) => l.work(Number.NaN)],
      ['work past MAX_VIRTUAL_TIME_NS', { work: { durationNs: MAX_VIRTUAL_TIME_NS + 2 } }, (l) => l.work(MAX_VIRTUAL_TIME_NS + 2)],
      ['work a bigint', { work: { durationNs: 5n } }, (l) => l.work(5n as never)],
    ];
    const list = app.createCommandList();
    for (const [what, object, recordIt] of cases) {
      const byObjects = thrown(() => app.submit({ hHwQueue, commands: [{ signal: { hSyncObject, value: 1n } }, object] as never }));
      list.reset().signal(hSyncObject, 1n);
      const byList = thrown(() => recordIt(list));
      expect(byList.status, what).toBe(byObjects.status);
      expect(byList.parameter, what).toBe(byObjects.parameter);
      expect(byList.parameter, what).toMatch(/^commands\[1\]\./);
      expect(list.length, what).toBe(1);
    }
    // A handle past 32 bits is refused as it is recorded (the array form refuses it at submit, as no handle of the process).
    expect(thrown(() => list.signal(2 ** 32, 1n))).toMatchObject({ status: 'INVALID_HANDLE', parameter: 'commands[1].signal.hSyncObject' });
    // Nothing of the refused commands was recorded: the list submits its one good command.
    app.submit({ hHwQueue, commands: list });
    machine.run();
    expect(app.readFenceValue(hSyncObject)).toBe(1n);
    expect(machine.summary().adapters[0].gpuSignals).toBe(1);
  });

  it('NF-06 a list is bounded: its capacity (1 … 4096, default 4096) is checked, and a command past it is refused naming its index', async () => {
    const { app, hSyncObject, hHwQueue, machine } = await rig({ adapters: [{ limits: { ringEntries: 8192 } }] });
    const small = app.createCommandList({ capacity: 3 });
    expect(small.capacity).toBe(3);
    small.signal(hSyncObject, 1).work(10).signal(hSyncObject, 2);
    const full = thrown(() => small.signal(hSyncObject, 3));
    expect(full).toMatchObject({ status: 'INVALID_PARAMETER', parameter: 'commands[3]' });
    expect(full.message).toMatch(/command list is full.*3 commands/);
    expect(thrown(() => small.work(1)).parameter).toBe('commands[3]');
    expect(small.length).toBe(3);
    for (const capacity of [0, 4097, 1.5, '8', -1]) {
      expect(thrown(() => app.createCommandList({ capacity: capacity as never })).parameter).toBe('createCommandList(options).capacity');
    }
    expect(thrown(() => app.createCommandList({ size: 3 } as never)).parameter).toBe('createCommandList(options).size');
    const big = app.createCommandList();
    expect(big.capacity).toBe(4096);
    for (let k = 1; k <= 4096; k++) big.signal(hSyncObject, k);
    expect(thrown(() => big.wait(hSyncObject, 1)).parameter).toBe('commands[4096]');
    app.submit({ hHwQueue, commands: big });
    machine.run();
    expect(app.readFenceValue(hSyncObject)).toBe(4096n);
  });
});

describe('command lists: submit', () => {
  it('NF-16 what depends on the OS is refused at submit with the array form\'s error, and a refused submission changes nothing', async () => {
    const w = await rig({ adapters: [{}, {}] });
    const { app, machine, hDevice, hSyncObject, hHwQueue } = w;
    const other = machine.createProcess('other');
    const otherFence = other.createNativeFence({ hDevice: other.createDevice({ hAdapter: other.openAdapter(0) }), initialValue: 0n }).hSyncObject;
    const closed = app.createNativeFence({ hDevice, initialValue: 0n }).hSyncObject;
    app.destroySynchronizationObject(closed);
    const monitored = app.createSynchronizationObject({ hDevice, type: 'MONITORED_FENCE', initialValue: 0n }).hSyncObject;
    const elsewhere = app.createNativeFence({ hDevice: app.createDevice({ hAdapter: app.openAdapter(1) }), initialValue: 0n }).hSyncObject;
    const noSignal = app.createNativeFence({ hDevice, initialValue: 0n, flags: { noSignal: true } }).hSyncObject;
    const noWait = app.createNativeFence({ hDevice, initialValue: 0n, flags: { noWait: true } }).hSyncObject;
    // Each bad command at index 2, after two good ones of another handle (a run that passed its checks).
    const cases: [string, Command][] = [
      ['a handle of another process', ['signal', otherFence, 1n]],
      ['a closed handle', ['wait', closed, 1n]],
      ['no handle at all', ['signal', hSyncObject + 4096, 1n]],
      ['a queue handle', ['signal', hHwQueue, 1n]],
      ['a monitored fence', ['wait', monitored, 1n]],
      ['a fence of another adapter', ['signal', elsewhere, 1n]],
      ['a noSignal fence signalled', ['signal', noSignal, 1n]],
      ['a noWait fence waited', ['wait', noWait, 1n]],
      ['the good fence waited, then a noSignal one', ['signal', noSignal, 2n]],
    ];
    const before = { trace: machine.trace.text(), inRing: machine.os.inspect.hwQueueOf(app.kernel, hHwQueue).gpu.inRing };
    const list = app.createCommandList();
    for (const [what, bad] of cases) {
      const commands: Command[] = [['signal', hSyncObject, 1n], ['signal', hSyncObject, 2n], bad, ['signal', hSyncObject, 3n]];
      const byObjects = thrown(() => app.submit({ hHwQueue, commands: asObjects(commands) as never }));
      const byList = thrown(() => app.submit({ hHwQueue, commands: record(list.reset(), commands) }));
      expect(byList, what).toEqual(byObjects);
      expect(byList.message, what).toMatch(/^commands\[2\]\.(signal|wait)\.hSyncObject /);
      expect(list.length, what).toBe(4); // the list is left as it was
    }
    // A list of another process and an empty list.
    const foreign = other.createCommandList().signal(otherFence, 1n);
    expect(thrown(() => app.submit({ hHwQueue, commands: foreign })).parameter).toBe('commands');
    const empty = thrown(() => app.submit({ hHwQueue, commands: app.createCommandList() }));
    expect(empty).toMatchObject({ status: 'INVALID_PARAMETER', parameter: 'commands' });
    expect(thrown(() => app.submit({ hHwQueue, commands: [] }))).toMatchObject({ status: 'INVALID_PARAMETER', parameter: 'commands' });
    // Nothing changed: no trace line, nothing in the ring or in flight, no signal when the machine runs.
    expect(machine.trace.text()).toBe(before.trace);
    const queue = machine.os.inspect.hwQueueOf(app.kernel, hHwQueue);
    expect(queue.gpu.inRing).toBe(before.inRing);
    expect(queue.references.pendingCount).toBe(0);
    expect(machine.inspectFence(app, hSyncObject)).toMatchObject({ gpuSignalsInFlight: 0, gpuWaitsInFlight: 0 });
    machine.run();
    expect(app.readFenceValue(hSyncObject)).toBe(0n);
    expect(machine.summary().adapters[0].gpuSignals).toBe(0);
  });

  it('NF-06 columns written around the recording methods are refused at submit, naming the command, and change nothing', async () => {
    const { app, machine, hSyncObject, hHwQueue } = await rig();
    const list = app.createCommandList().signal(hSyncObject, 1n).signal(hSyncObject, 2n).work(10);
    list.ops[1] = 9;
    expect(thrown(() => app.submit({ hHwQueue, commands: list }))).toMatchObject({ status: 'INVALID_PARAMETER', parameter: 'commands[1]' });
    list.ops[1] = 1;
    list.values[2] = 1n << 60n; // a duration past MAX_VIRTUAL_TIME_NS
    expect(thrown(() => app.submit({ hHwQueue, commands: list }))).toMatchObject({ status: 'INVALID_PARAMETER', parameter: 'commands[2]' });
    list.handles[0] = 0;
    expect(thrown(() => app.submit({ hHwQueue, commands: list }))).toMatchObject({ status: 'INVALID_HANDLE', parameter: 'commands[0].signal.hSyncObject' });
    machine.run();
    expect(machine.summary().adapters[0].gpuSignals).toBe(0);
    app.submit({ hHwQueue, commands: list.reset().signal(hSyncObject, 4n) });
    machine.run();
    expect(app.readFenceValue(hSyncObject)).toBe(4n);
  });

  it('NF-06 a list is reused: submitted again as it is, or reset and recorded again', async () => {
    const { app, machine, hDevice, hSyncObject, hHwQueue } = await rig();
    const gate = app.createNativeFence({ hDevice, initialValue: 0n }).hSyncObject;
    const list = app.createCommandList({ capacity: 8 });
    list.wait(gate, 1n).work(100).signal(hSyncObject, 5n);
    app.submit({ hHwQueue, commands: list });
    app.submit({ hHwQueue, commands: list }); // the same three commands again
    expect(list.length).toBe(3);
    machine.run();
    expect(app.readFenceValue(hSyncObject)).toBe(0n); // both wait for the gate
    expect(machine.inspectFence(app, gate).gpuWaitsInFlight).toBe(2);
    app.signal({ objects: [gate], values: [1n] });
    machine.run();
    expect(app.readFenceValue(hSyncObject)).toBe(5n);
    expect(machine.summary().adapters[0].gpuSignals).toBe(2);
    expect(list.reset()).toBe(list);
    expect(list.length).toBe(0);
    for (let k = 6; k <= 13; k++) list.signal(hSyncObject, BigInt(k));
    app.submit({ hHwQueue, commands: list });
    machine.run();
    expect(app.readFenceValue(hSyncObject)).toBe(13n);
    expect(machine.summary().adapters[0].gpuSignals).toBe(10);
  });

  it('NF-17 LOG-08 the same commands as a list or as objects give the same trace byte for byte, the same timeline and the same summary', async () => {
    const run = async (form: 'objects' | 'list') => {
      const machine = await createMachine({ seed: 77, trace: true, timing: { jitter: 0.3 }, adapters: [{ engines: 2 }] });
      const app = machine.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const [a, b] = [0, 1].map(() => app.createNativeFence({ hDevice, initialValue: 0n }).hSyncObject);
      const q0 = app.createHwQueue({ hDevice, engine: 0 }).hHwQueue; // with its progress fence (NF-17)
      const q1 = app.createHwQueue({ hDevice, engine: 1, nativeProgressFence: false }).hHwQueue;
      for (let k = 1; k <= 9; k++) app.waitAsync({ objects: [k % 2 ? a : b], values: [BigInt(k * 2)] });
      const list = app.createCommandList();
      const progress: (bigint | undefined)[] = [];
      for (let round = 1; round <= 12; round++) {
        const value = BigInt(round * 2);
        const first: Command[] = [['signal', a, value], ['work', 37], ['signal', a, value + 1n], ['signal', b, Number(value)]];
        const second: Command[] = [['wait', a, value], ['wait', b, value], ['work', 100], ['signal', b, value + 1n]];
        for (const [queue, commands] of [[q0, first], [q1, second]] as const) {
          const result = form === 'objects' ? app.submit({ hHwQueue: queue, commands: asObjects(commands) as never }) : app.submit({ hHwQueue: queue, commands: record(list.reset(), commands) });
          progress.push(result.progressValue);
        }
        if (round % 4 === 0) machine.run();
      }
      machine.run();
      return { trace: machine.trace.text(), timeline: JSON.stringify(exportTimeline(machine)), summary: machine.summaryText(), progress, values: [app.readFenceValue(a), app.readFenceValue(b)] };
    };
    const objects = await run('objects');
    const list = await run('list');
    expect(list.values).toEqual([25n, 25n]);
    expect(list.progress).toEqual(objects.progress);
    expect(list.summary).toBe(objects.summary);
    expect(list.timeline).toBe(objects.timeline);
    expect(list.trace).toMatch(/commands written to ring \+ doorbell.*work\(37ns\)/);
    expect(createHash('sha256').update(list.trace).digest('hex')).toBe(createHash('sha256').update(objects.trace).digest('hex'));
    expect((await run('list')).trace).toBe(list.trace); // same seed, same trace
  });
});

describe('command lists: the user-mode half', () => {
  /** A module whose user-mode half is the reference one with submitToHwQueue wrapped on the instance (as examples/drivers/broken/ do). */
  const wrapping = (seen: string[]) => ({
    name: 'wraps-submit',
    createDriver(context: DriverContext) {
      const driver = new ReferenceDriver(context.hardware, context.core, context.options);
      const submit = driver.userMode.submitToHwQueue.bind(driver.userMode);
      driver.userMode.submitToHwQueue = (args: UMDARG_SUBMITTOHWQUEUE) => {
        seen.push(args.Commands.map((c) => `${c.op} ${c.value}`).join(', '));
        submit(args);
      };
      return driver;
    },
  });

  const runWith = (machine: Machine, app: RuntimeProcess) => {
    const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
    const { hSyncObject } = app.createNativeFence({ hDevice, initialValue: 0n });
    const { hHwQueue } = app.createHwQueue({ hDevice, engine: 0, nativeProgressFence: false });
    app.submit({ hHwQueue, commands: app.createCommandList().signal(hSyncObject, 1n).work(10).signal(hSyncObject, 2) });
    app.submit({ hHwQueue, commands: [{ signal: { hSyncObject, value: 3n } }] });
    machine.run();
    return app.readFenceValue(hSyncObject);
  };

  it('the reference user-mode half takes the typed form; one that overrides only submitToHwQueue gets every submission as records', () => {
    const reference = createMachineSync({ seed: 5 });
    const forms: string[] = [];
    // Counted on the reference user-mode half's prototype (both methods on one level, as they are).
    type Umd = { submitColumnsToHwQueue(args: unknown): void; submitToHwQueue(args: unknown): void };
    const proto = Object.getPrototypeOf(reference.adapters[0].driver.userMode) as Umd;
    const original = { columns: proto.submitColumnsToHwQueue, records: proto.submitToHwQueue };
    proto.submitColumnsToHwQueue = function (this: Umd, args) { forms.push('columns'); original.columns.call(this, args); };
    proto.submitToHwQueue = function (this: Umd, args) { forms.push('records'); original.records.call(this, args); };
    try {
      expect(runWith(reference, reference.createProcess('app'))).toBe(3n);
    } finally {
      proto.submitColumnsToHwQueue = original.columns;
      proto.submitToHwQueue = original.records;
    }
    expect(forms).toEqual(['columns', 'columns']);

    const seen: string[] = [];
    const wrapped = createMachineSync({ seed: 5, adapters: [{ driver: { module: wrapping(seen) } }] });
    expect(runWith(wrapped, wrapped.createProcess('app'))).toBe(3n);
    expect(seen).toEqual(['signal 1, work 10, signal 2', 'signal 3']);
  });

  it('a user-mode half whose submitColumnsToHwQueue is not a function is refused as the machine is built', () => {
    const module = {
      createDriver(context: DriverContext) {
        const driver = new ReferenceDriver(context.hardware, context.core, context.options);
        (driver.userMode as unknown as Record<string, unknown>).submitColumnsToHwQueue = 7;
        return driver;
      },
    };
    expect(() => createMachineSync({ seed: 1, adapters: [{ driver: { module } }] })).toThrow(/submitColumnsToHwQueue not a function/);
  });
});
