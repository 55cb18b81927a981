// submit() reads the usual { signal } / { wait } command without building its parameter paths
// (src/os/hw-queues.ts quickFenceCommand); every other shape takes the full check. These tests hold
// the two readings together: what is taken, what is refused, and the parameter each error names.
import { describe, it, expect } from 'vitest';
import { WddmError } from '../src/index.js';
import { world } from './helpers.js';

async function rig() {
  const w = await world();
  const { hSyncObject } = w.app.createNativeFence({ hDevice: w.hDevice, initialValue: 0n });
  const { hHwQueue } = w.app.createHwQueue({ hDevice: w.hDevice, engine: 0, nativeProgressFence: false });
  return { ...w, hSyncObject, hHwQueue };
}

/** The WddmError submit throws for `commands`, as { status, parameter }. */
function refusal(app: Awaited<ReturnType<typeof rig>>['app'], hHwQueue: number, commands: unknown[]): { status: string; parameter?: string } {
  try {
    app.submit({ hHwQueue, commands: commands as never });
  } catch (error) {
    expect(error).toBeInstanceOf(WddmError);
    const e = error as WddmError;
    return { status: e.status, parameter: e.parameter };
  }
  throw new Error('submit took the commands');
}

describe('submit: the usual command shape and every other one', () => {
  it('NF-06 signals and waits with bigint and number values, in the second and later places too, run as written', async () => {
    const { machine, app, hSyncObject, hHwQueue } = await rig();
    app.submit({ hHwQueue, commands: [{ signal: { hSyncObject, value: 1n } }, { wait: { hSyncObject, value: 1 } }, { signal: { value: 5, hSyncObject } }] });
    machine.run();
    expect(app.readFenceValue(hSyncObject)).toBe(5n);
    expect(machine.summary().adapters[0].gpuSignals).toBe(2);
  });

  it('NF-06 a bad command anywhere is refused naming its place and what is wrong, and nothing is submitted', async () => {
    const { machine, app, hSyncObject, hHwQueue } = await rig();
    const good = { signal: { hSyncObject, value: 1n } };
    const cases: [unknown, string, string][] = [
      [{ signal: { hSyncObject, value: 2n }, extra: 1 }, 'INVALID_PARAMETER', 'commands[1].extra'],
      [{ signal: { hSyncObject, value: 2n }, wait: { hSyncObject, value: 2n } }, 'INVALID_PARAMETER', 'commands[1]'],
      [{ signal: { hSyncObject, value: 2n, x: 0 } }, 'INVALID_PARAMETER', 'commands[1].signal.x'],
      [{ signal: { hSyncObject: 0, value: 2n } }, 'INVALID_HANDLE', 'commands[1].signal.hSyncObject'],
      [{ wait: { hSyncObject: hSyncObject + 1000, value: 2n } }, 'INVALID_HANDLE', 'commands[1].wait.hSyncObject'],
      [{ signal: { hSyncObject: hHwQueue, value: 2n } }, 'OBJECT_TYPE_MISMATCH', 'commands[1].signal.hSyncObject'],
      [{ signal: { hSyncObject, value: -1n } }, 'INTEGER_OVERFLOW', 'commands[1].signal.value'],
      [{ signal: { hSyncObject, value: 1n << 64n } }, 'INTEGER_OVERFLOW', 'commands[1].signal.value'],
      [{ signal: { hSyncObject, value: 1.5 } }, 'INVALID_PARAMETER', 'commands[1].signal.value'],
      [{ signal: { hSyncObject } }, 'INVALID_PARAMETER', 'commands[1].signal.value'],
      [{ signal: null }, 'INVALID_PARAMETER', 'commands[1].signal'],
      [[good], 'INVALID_PARAMETER', 'commands[1]'],
    ];
    for (const [bad, status, parameter] of cases) {
      expect(refusal(app, hHwQueue, [good, bad]), JSON.stringify(bad, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))).toEqual({ status, parameter });
    }
    machine.run();
    expect(app.readFenceValue(hSyncObject)).toBe(0n);
    expect(machine.summary().adapters[0].gpuSignals).toBe(0);
  });

  it('NF-06 keys are read as the full check reads them: own keys only, an inherited `work` makes it a work command', async () => {
    const { machine, app, hSyncObject, hHwQueue } = await rig();
    // An inherited key is not one of the command's keys; an own one is.
    const inheritedSignal = Object.create({ signal: { hSyncObject, value: 9n } }) as object;
    expect(refusal(app, hHwQueue, [inheritedSignal])).toEqual({ status: 'INVALID_PARAMETER', parameter: 'commands[0]' });
    const withInheritedWork = Object.assign(Object.create({ work: { durationNs: 500 } }) as object, { signal: { hSyncObject, value: 3n } });
    app.submit({ hHwQueue, commands: [withInheritedWork as never] });
    machine.run();
    // Read as the work it inherits (the full check's reading), not as the signal.
    expect(app.readFenceValue(hSyncObject)).toBe(0n);
    expect(machine.summary().adapters[0].gpuSignals).toBe(0);
    app.submit({ hHwQueue, commands: [{ signal: { hSyncObject, value: 3n } }] });
    machine.run();
    expect(app.readFenceValue(hSyncObject)).toBe(3n);
  });
});
