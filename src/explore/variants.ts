// Protocol variants: the reference driver and OS as they are ('barrier'), or
// one of them wrong in one documented way, so that the explorer shows what each
// rule guards against (docs/EXPLORER.md "Variants"). Each is a driver of its own
// (a module extending the reference driver), a reference driver option, or one
// of the OS's switches that exist for this alone (each documented where it is:
// always on but in its variant).
//
//   variant                   what is wrong                                          breaks    needs
//   barrier                   nothing
//   no-barrier                the CMP's barrier left out of UpdateMonitoredValues    NF-11
//   no-resample               the OS's re-read of CurrentValue after it left out     NF-09
//   read-first                the CMP reads CurrentValue before writing MV           NF-11
//   read-first-no-resample    both of the last two
//   no-cross-adapter-hold     a shared fence's MV follows its own waiters instead    XA-03     a cross-adapter fence
//                             of being held at 0 (an adapter programs a non-zero
//                             MonitoredValue for a fence it shares)
//   skip-notification-rescan  the driver ignores NotificationOnly: no run-list       XA-04     a cross-adapter fence
//                             rescan when another adapter signalled
//   no-32bit-extension        the OS compares a No64BitAtomics GPU's 32-bit writes   MF-07     a monitored fence on a
//                             without extending them                                           No64BitAtomics adapter
//   log-index-first           the GPU (firmware the driver programs) publishes a     LOG-04    an optimized-interrupt
//                             log entry's index before writing the entry                       adapter
//   tdr-no-wake               a TDR sets every fence to UINT64_MAX without waking    NF-20     a TDR (a scenario's
//                             its waiters                                                      fault, or --faults)

import type { AdapterOptions, Machine } from '../machine/machine.js';
import { ReferenceDriver, type CmpStep } from '../driver/reference.js';
import type { DriverModule } from '../driver/module.js';
import type { DXGKARG_UPDATECURRENTVALUESFROMCPU } from '../ddi/ddi.js';

export const VARIANTS = [
  'barrier', 'no-barrier', 'no-resample', 'read-first', 'read-first-no-resample',
  'no-cross-adapter-hold', 'skip-notification-rescan', 'no-32bit-extension', 'log-index-first', 'tdr-no-wake',
] as const;
export type Variant = typeof VARIANTS[number];

/** What each variant is, in one line (the command's help and output). */
export const VARIANT_TITLES: Readonly<Record<Variant, string>> = {
  'barrier': 'the reference driver and OS',
  'no-barrier': 'the driver\'s CMP without the barrier in UpdateMonitoredValues (NF-11)',
  'no-resample': 'an OS that does not re-read CurrentValue after UpdateMonitoredValues (NF-09)',
  'read-first': 'a driver whose CMP reads CurrentValue before writing MonitoredValue (NF-11\'s order broken)',
  'read-first-no-resample': 'the read-first driver with the no-resample OS',
  'no-cross-adapter-hold': 'an OS that lets a shared fence\'s MonitoredValue follow its own waiters instead of holding it at 0 (XA-03)',
  'skip-notification-rescan': 'a driver that ignores NotificationOnly: no run-list rescan when another adapter signalled (XA-04)',
  'no-32bit-extension': 'an OS that compares a No64BitAtomics GPU\'s 32-bit fence writes without extending them (MF-07)',
  'log-index-first': 'a GPU that publishes a log entry\'s index before it writes the entry (LOG-04)',
  'tdr-no-wake': 'an OS whose TDR sets every fence to UINT64_MAX without waking its waiters (NF-20)',
};

/** The feature a variant's mistake needs to show (the generated machine has none of them: a scenario file does). */
export const VARIANT_NEEDS: Readonly<Partial<Record<Variant, string>>> = {
  'no-cross-adapter-hold': 'a cross-adapter fence',
  'skip-notification-rescan': 'a cross-adapter fence',
  'no-32bit-extension': 'a monitored fence on a No64BitAtomics adapter',
  'log-index-first': 'an adapter with OptimizedNativeFenceSignaledInterrupt',
  'tdr-no-wake': 'a TDR (a scenario\'s removeDevice fault, or --faults N)',
};

/** The variants that are drivers of their own (they replace the adapters' driver modules). */
export const DRIVER_VARIANTS: ReadonlySet<Variant> = new Set(['read-first', 'read-first-no-resample', 'skip-notification-rescan', 'log-index-first']);

/** The reference driver with its CMP's CurrentValue read moved before the MonitoredValue write (variant read-first). */
class ReadFirstDriver extends ReferenceDriver {
  protected override cmpOrder(): readonly CmpStep[] { return ['read-current-value', 'write-monitored-value', 'barrier', 'check']; }
}

/** The reference driver ignoring NotificationOnly: its run list is not rescanned when another adapter signalled (variant skip-notification-rescan). */
class SkipsNotificationRescan extends ReferenceDriver {
  override updateCurrentValuesFromCpu(args: DXGKARG_UPDATECURRENTVALUESFROMCPU): void {
    if (args.Flags.NotificationOnly) return;
    super.updateCurrentValuesFromCpu(args);
  }
}

const VARIANT_DRIVERS: Readonly<Partial<Record<Variant, DriverModule>>> = {
  'read-first': { name: 'read-first', createDriver: (context) => new ReadFirstDriver(context.hardware, context.core, context.options) },
  'read-first-no-resample': { name: 'read-first', createDriver: (context) => new ReadFirstDriver(context.hardware, context.core, context.options) },
  'skip-notification-rescan': { name: 'skip-notification-rescan', createDriver: (context) => new SkipsNotificationRescan(context.hardware, context.core, context.options) },
  'log-index-first': {
    name: 'log-index-first',
    createDriver: (context) => {
      context.hardware.configureFirmware({ signalLogOrder: 'index-first' });
      return new ReferenceDriver(context.hardware, context.core, context.options);
    },
  },
};

/**
 * An adapter's driver option under `variant`: the variant's own driver module, the reference driver
 * without its barrier, or the adapter's as it was. Throws for a driver variant on an adapter whose
 * driver is a module already (the file's, or --driver's): the two cannot both be its driver.
 */
export function variantDriver(variant: Variant, driver: AdapterOptions['driver'], where: string): AdapterOptions['driver'] {
  const module = VARIANT_DRIVERS[variant];
  if (module) {
    if (driver?.module) throw new Error(`--variant ${variant} is a driver of its own, but ${where} runs the driver module ${(driver.module as DriverModule).name ?? 'given'}; expected one of them`);
    return { ...driver, module };
  }
  if (variant === 'no-barrier') return { ...driver, monitoredValueBarrier: false };
  return driver;
}

/** The OS's switches of `variant`, on a built machine (before anything is set up on it). */
export function applyVariantToOs(variant: Variant, machine: Machine): void {
  const os = machine.os;
  if (variant === 'no-resample' || variant === 'read-first-no-resample') os.variant({ rereadCurrentValue: false });
  if (variant === 'no-cross-adapter-hold') os.variant({ holdCrossAdapterMonitoredValueAtZero: false });
  if (variant === 'no-32bit-extension') os.variant({ extendMonitoredValues: false });
  if (variant === 'tdr-no-wake') os.variant({ wakeWaitersOnReset: false });
}
