import { describe, it, expect } from 'vitest';
import { createMachine, WddmError, VIDSCHCAPS, ReferenceDriver } from '../src/index.js';
import { world, globalOf } from './helpers.js';

describe('feature enablement and caps', () => {
  it('CAP-01 an adapter is built from its driver caps (scheduler caps and native fence caps)', async () => {
    const { machine, app, hDevice } = await world({
      adapters: [{ caps: { nativeGpuFence: true, optimizedNativeFenceSignaledInterrupt: true,
        nativeFenceCaps: { monitoredValuePadding: 24, mapToGpuSystemProcess: false, minimumAddress: 0x2_0000_0000n } } }],
    });
    const caps = machine.adapters[0].os.caps;
    expect(caps.VidSchCaps & VIDSCHCAPS.NativeGpuFence).toBeTruthy();
    expect(caps.VidSchCaps & VIDSCHCAPS.OptimizedNativeFenceSignaledInterrupt).toBeTruthy();
    expect(caps.VidSchCaps & VIDSCHCAPS.No64BitAtomics).toBe(0);
    // Padding 24 → MonitoredValues 32 bytes apart; CurrentValues stay packed at 8.
    const a = app.createNativeFence({ hDevice });
    const b = app.createNativeFence({ hDevice });
    const ga = globalOf({ machine }, app, a.hSyncObject), gb = globalOf({ machine }, app, b.hSyncObject);
    expect(gb.mvPhys - ga.mvPhys).toBe(32);
    expect(gb.cvPhys - ga.cvPhys).toBe(8);
    // No MapToGpuSystemProcess → no system-process VAs handed to the driver.
    const create = machine.trace.find({ kind: 'ddi', name: 'DxgkDdiCreateNativeFence' })[0];
    expect(create.args.CurrentValueSystemProcessGpuVa).toBe('0');
    // GPU VAs come from the driver's range.
    expect(a.mapping.CurrentValueGpuVa >= 0x2_0000_0000n).toBe(true);
  });

  it('CAP-01 a 32-bit-only GPU (No64BitAtomics) has no native fences: off by default, both caps together refused, a driver advertising both fails to start', async () => {
    const narrow = await createMachine({ adapters: [{ caps: { no64BitAtomics: true } }] });
    expect(narrow.adapters[0].os.caps.VidSchCaps & VIDSCHCAPS.No64BitAtomics).toBeTruthy();
    expect(narrow.adapters[0].nativeFence).toBe(false);
    const options = await createMachine({ adapters: [{ caps: { nativeGpuFence: true, no64BitAtomics: true } }] }).catch((e) => e);
    expect(options).toBeInstanceOf(WddmError);
    expect(options.parameter).toBe('adapters[0].caps');
    expect(options.message).toMatch(/nativeGpuFence and no64BitAtomics not both true: a native fence needs 64-bit atomic GPU writes/);
    // A driver module that advertises both anyway: the OS refuses to start the adapter, naming the two caps.
    const both = await createMachine({ adapters: [{ caps: { no64BitAtomics: true }, driver: { module: {
      createDriver: (context) => {
        const driver = new ReferenceDriver(context.hardware, context.core, context.options);
        const start = driver.startDevice.bind(driver);
        driver.startDevice = (os) => { const r = start(os); return { ...r, VidSchCaps: r.VidSchCaps | VIDSCHCAPS.NativeGpuFence | VIDSCHCAPS.No64BitAtomics }; };
        return driver;
      },
    } } }] }).catch((e) => e);
    expect(both).toBeInstanceOf(WddmError);
    expect(both.status).toBe('NOT_SUPPORTED');
    expect(both.message).toMatch(/advertises DXGK_VIDSCHCAPS::NativeGpuFence together with No64BitAtomics/);
  });

  it('CAP-02 the driver asks IsFeatureEnabled → QueryFeatureInterface → GetOSCaps before advertising NativeGpuFence', async () => {
    const machine = await createMachine({ adapters: [{}] });
    const names = machine.trace.events.filter((e) => e.kind === 'cb' || e.name === 'adapter caps').map((e) => e.name);
    expect(names).toEqual(['DxgkCbIsFeatureEnabled', 'DxgkCbQueryFeatureInterface', 'DXGKCBINT_FEATURE_NATIVEFENCE_1::GetOSCaps', 'adapter caps']);
    expect(machine.adapters[0].nativeFence).toBe(true);
  });

  it('CAP-02 with the OS feature off a correct driver does not advertise, and the adapter starts without native fences', async () => {
    const machine = await createMachine({ os: { nativeFence: false }, adapters: [{ caps: { nativeGpuFence: true } }] });
    expect(machine.adapters[0].nativeFence).toBe(false);
    expect(machine.trace.find({ kind: 'cb', name: 'DxgkCbQueryFeatureInterface' })).toHaveLength(0);
  });

  it('CAP-02 advertising NativeGpuFence while the OS feature is off fails adapter start with a clear error', async () => {
    const attempt = createMachine({ os: { nativeFence: false }, adapters: [{ name: 'dgpu', driver: { queryFeatureBeforeAdvertising: false } }] });
    await expect(attempt).rejects.toThrow(/adapter "dgpu" failed to start: its driver advertises DXGK_VIDSCHCAPS::NativeGpuFence but the OS has not enabled DXGK_FEATURE_NATIVE_FENCE/);
    await expect(attempt).rejects.toBeInstanceOf(WddmError);
  });

  it('CAP-03 querying adapter info returns the native fence caps and user mode sees the supported bit', async () => {
    const { app, hAdapter } = await world({ adapters: [{ caps: { nativeFenceCaps: { monitoredValuePadding: 56, mapToGpuSystemProcess: true } } }] });
    expect(app.queryAdapterInfo(hAdapter, 'KMTQAITYPE_WDDM_3_1_CAPS')).toEqual({ NativeGpuFenceSupported: true });
    expect(app.queryAdapterInfo(hAdapter, 'NATIVE_FENCE_CAPS')).toMatchObject({ MonitoredValuePadding: 56, MapToGpuSystemProcess: true });
    const off = await world({ os: { nativeFence: false } });
    expect(off.app.queryAdapterInfo(off.hAdapter, 'KMTQAITYPE_WDDM_3_1_CAPS')).toEqual({ NativeGpuFenceSupported: false });
    expect(() => off.app.queryAdapterInfo(off.hAdapter, 'NATIVE_FENCE_CAPS')).toThrow(/no native fence support/);
  });

  it('CAP-04 no native fence DDI is ever called on an adapter without the feature', async () => {
    const { machine, app, hDevice } = await world({ adapters: [{ caps: { nativeGpuFence: false } }] });
    expect(() => app.createNativeFence({ hDevice })).toThrow(/does not support native fences/);
    expect(() => app.createHwQueue({ hDevice })).toThrow(/no native fence support/);
    const nativeDdis = machine.trace.events.filter((e) => e.kind === 'ddi' && /NativeFence|MonitoredValues|CurrentValuesFromCpu|HwQueue/.test(e.name));
    expect(nativeDdis).toEqual([]);
  });
});

describe('machine options', () => {
  it('CAP-01 rejects unknown option keys and bad caps with the path, value and what was expected', async () => {
    await expect(createMachine({ adapters: [{ caps: { nativGpuFence: true } as never }] })).rejects.toThrow(/adapters\[0\]\.caps has unknown key "nativGpuFence"/);
    await expect(createMachine({ adapters: [{ caps: { nativeFenceCaps: { monitoredValuePadding: 12 } } }] })).rejects.toThrow(/monitoredValuePadding is 12; expected a multiple of 8/);
    await expect(createMachine({ seed: -1 })).rejects.toThrow(/seed is -1; expected an integer from 0 to 4294967295/);
    await expect(createMachine({ adapters: [{ name: 'a' }, { name: 'a' }] })).rejects.toThrow(/adapters\[1\]\.name is "a"; expected a name no other adapter has/);
  });
});
