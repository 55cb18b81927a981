// Driver modules (issue 12, item 2): an adapter's kernel-mode driver comes from a module's
// createDriver(context); its shape is checked up front and a wrong shape is refused by name.
import { describe, it, expect } from 'vitest';
import { createMachine, ReferenceDriver, WddmError, type DriverContext, type DriverModule } from '../src/index.js';

describe('driver modules', () => {
  it('CAP-01 each adapter is built from the driver its module makes, with that adapter\'s context', async () => {
    const contexts: DriverContext[] = [];
    let updates = 0;
    class CountingDriver extends ReferenceDriver {
      override updateCurrentValuesFromCpu(args: Parameters<ReferenceDriver['updateCurrentValuesFromCpu']>[0]): void {
        updates++;
        super.updateCurrentValuesFromCpu(args);
      }
    }
    const module: DriverModule = {
      name: 'counting',
      createDriver: (context) => { contexts.push(context); return new CountingDriver(context.hardware, context.core, context.options); },
    };
    const m = await createMachine({ seed: 3, adapters: [{ name: 'a0', driver: { module } }, { name: 'a1' }] });
    expect(contexts.map((c) => [c.adapterIndex, c.adapterName])).toEqual([[0, 'a0']]);
    expect(m.adapters[0].driver).toBeInstanceOf(CountingDriver);
    expect(m.adapters[1].driver).not.toBeInstanceOf(CountingDriver);
    const app = m.createProcess('app');
    for (const name of ['a0', 'a1']) {
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(name) });
      const fence = app.createNativeFence({ hDevice, initialValue: 0n });
      app.signal({ objects: [fence.hSyncObject], values: [5n] });
    }
    expect(updates).toBe(1);
  });

  it('a module without createDriver, or a driver missing a DDI, is refused naming what is missing', async () => {
    await expect(createMachine({ adapters: [{ driver: { module: {} as DriverModule } }] }))
      .rejects.toThrow(/adapters\[0\]\.driver\.module\.createDriver is undefined; expected a function createDriver\(context\)/);
    const partial: DriverModule = {
      createDriver: (context) => {
        const driver = new ReferenceDriver(context.hardware, context.core, context.options) as unknown as Record<string, unknown>;
        return Object.assign(Object.create(driver), { updateMonitoredValues: undefined, destroyNativeFence: 7 }) as never;
      },
    };
    await expect(createMachine({ adapters: [{ driver: { module: partial } }] }))
      .rejects.toThrow(/missing or not a function: destroyNativeFence, updateMonitoredValues/);
    const noUserMode: DriverModule = {
      createDriver: (context) => Object.assign(Object.create(new ReferenceDriver(context.hardware, context.core, context.options)), { userMode: undefined }),
    };
    await expect(createMachine({ adapters: [{ driver: { module: noUserMode } }] })).rejects.toThrow(/userMode is undefined; expected the driver's user-mode half/);
    const throwing: DriverModule = { createDriver: () => { throw new Error('no GPU found'); } };
    const error = await createMachine({ adapters: [{ name: 'x', driver: { module: throwing } }] }).catch((e) => e);
    expect(error).toBeInstanceOf(WddmError);
    expect(error.message).toMatch(/adapters\[0\]\.driver\.module\.createDriver\(context\) threw while building the driver of "x": no GPU found/);
  });
});
