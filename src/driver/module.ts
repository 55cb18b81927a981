// Driver modules: how a kernel-mode driver (the built-in reference driver or a user's own) is
// plugged into an adapter.
//
// A driver module is any object (usually an ES module namespace) with a `createDriver` function.
// The machine calls it once per adapter, while the machine is being built, with a DriverContext:
// the adapter's simulated GPU (the driver owns it: the OS never touches it), the core's GPU view
// (the driver finds its fence records, rings and log buffers through it) and the options the
// machine resolved for the adapter (the caps to advertise, the interrupt payload, the ring size).
// It returns a KernelModeDriver with its user-mode half (`userMode`). The OS then talks to it only
// through the driver port (src/port/driver-port.ts), and it talks back only through the
// DxgkrnlCallbacks it is given in DxgkDdiStartDevice.
//
//   createMachine({ adapters: [{ driver: { module: myDriverModule } }] })
//
// The shape is checked here, up front, in one place: a module without createDriver, or a driver
// missing a required DDI or its user-mode half, is refused with an error naming what is missing.

import type { KernelModeDriver, KernelModeDriverCpuSignal, UserModeDriverColumns, UserModeDriverInterface } from '../ddi/ddi.js';
import type { GpuHardware } from '../gpu/hardware.js';
import type { GpuCore } from '../core/bindings.js';
import { invalid } from '../base/errors.js';
import { ReferenceDriver, type ReferenceDriverOptions } from './reference.js';

/** The adapter limits a driver sizes its own tables by (core fence ids are 1 … fences, core queue ids 1 … queues). */
export interface DriverLimits { readonly fences: number; readonly queues: number; readonly ringEntries: number }

/** What DriverModule.memoryBytes is told about the adapter it sizes a region for. */
export interface DriverMemorySizing { readonly engines: number; readonly limits: DriverLimits }

/** What the machine gives a driver module for one adapter. */
export interface DriverContext {
  /** The adapter's index in the machine (adapters[i]). */
  readonly adapterIndex: number;
  /** The adapter's name (adapters[i].name). */
  readonly adapterName: string;
  /** The adapter's simulated GPU: engines, queues, interrupts. It belongs to the driver. */
  readonly hardware: GpuHardware;
  /** The core's GPU view of this adapter (fence records, rings, log buffers, CMP steps). */
  readonly core: GpuCore;
  /** The adapter's resolved options, as the reference driver takes them. */
  readonly options: ReferenceDriverOptions;
  /** The adapter's limits (its fences, queues and ring size). */
  readonly limits: DriverLimits;
  /**
   * The region of the machine's memory the memory plan reserved for this driver, when its module asked for one
   * (DriverModule.memoryBytes): a C driver's globals, stack and pool (docs/MEMORY.md, "Driver regions").
   */
  readonly memory?: { readonly base: number; readonly bytes: number };
}

/** A kernel-mode driver with its user-mode half, as a driver module makes it. */
export interface PluggableDriver extends KernelModeDriver {
  /** The user-mode half (UMD): the runtime writes hardware queue rings through it. */
  readonly userMode: UserModeDriverInterface;
  /** Optional: the core queue behind a hardware queue or context handle (tools and tests that step the core). */
  coreQueueOf?(handle: number): number | undefined;
  /**
   * Optional: [start, end) ranges of linear memory the driver keeps nothing in between calls (a C driver's stack
   * and argument area). A schedule explorer leaves them out of a state's key.
   */
  scratchMemory?(): readonly (readonly [number, number])[];
}

/** A driver module: an ES module (or any object) exporting a factory. */
export interface DriverModule {
  createDriver(context: DriverContext): PluggableDriver;
  /** Shown in traces and reports; defaults to "module". */
  readonly name?: string;
  /**
   * Optional: bytes of the machine's memory one adapter's driver needs of its own (a C driver's region: its
   * globals, stack, argument area and pool). The memory plan reserves them after the core's regions, behind a
   * guard page, and DriverContext.memory says where.
   */
  memoryBytes?(sizing: DriverMemorySizing): number;
}

/**
 * The module with another factory (a checker's wrapper around its drivers): its name and the memory it asks
 * for (memoryBytes, a C driver's region) kept, so the wrapped module builds where the module would.
 */
export function withCreateDriver(module: DriverModule, createDriver: DriverModule['createDriver']): DriverModule {
  return {
    ...(module.name !== undefined ? { name: module.name } : {}),
    ...(module.memoryBytes !== undefined ? { memoryBytes: (sizing: DriverMemorySizing) => module.memoryBytes!(sizing) } : {}),
    createDriver,
  };
}

/** The built-in reference driver as a driver module. */
export const referenceDriverModule: DriverModule = {
  name: 'reference',
  createDriver: (context) => new ReferenceDriver(context.hardware, context.core, context.options),
};

/** The DDIs every kernel-mode driver must implement (the optional ones serve kernel-mode contexts). */
export const REQUIRED_DDIS = [
  'startDevice', 'stopDevice', 'resetFromTimeout', 'restartFromTimeout', 'queryNativeFenceCaps',
  'createNativeFence', 'openNativeFence', 'closeNativeFence', 'destroyNativeFence',
  'updateCurrentValuesFromCpu', 'updateMonitoredValues', 'createHwQueue', 'destroyHwQueue',
  'setNativeFenceLogBuffer', 'updateNativeFenceLogs',
] as const satisfies readonly (keyof KernelModeDriver)[];
/** DDIs a driver may leave out; when present they must be functions. */
export const OPTIONAL_DDIS = ['createContext', 'destroyContext', 'submitCommand'] as const satisfies readonly (keyof KernelModeDriver)[];
/** Optional forms of a DDI a driver may add (the one-fence form of UpdateCurrentValuesFromCpu); when present they must be functions. */
export const OPTIONAL_DDI_FORMS = ['updateOneCurrentValueFromCpu'] as const satisfies readonly (keyof KernelModeDriverCpuSignal)[];
/** What the user-mode half must implement. */
export const REQUIRED_USER_MODE = ['submitToHwQueue'] as const satisfies readonly (keyof UserModeDriverInterface)[];
/** What the user-mode half may leave out (the typed form of submission); when present it must be a function. */
export const OPTIONAL_USER_MODE = ['submitColumnsToHwQueue'] as const satisfies readonly (keyof UserModeDriverColumns)[];

/** Checks a driver module's shape; `where` names the option or file it came from. */
export function checkDriverModule(value: unknown, where: string): DriverModule {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) {
    throw invalid(where, value, 'a driver module: an object (or ES module) exporting createDriver(context)');
  }
  const createDriver = (value as { createDriver?: unknown }).createDriver;
  if (typeof createDriver !== 'function') {
    throw invalid(`${where}.createDriver`, createDriver, 'a function createDriver(context) returning a KernelModeDriver with its userMode half (docs/DRIVERS.md)');
  }
  const name = (value as { name?: unknown }).name;
  if (name !== undefined && typeof name !== 'string') throw invalid(`${where}.name`, name, 'a string, or absent');
  const memoryBytes = (value as { memoryBytes?: unknown }).memoryBytes;
  if (memoryBytes !== undefined && typeof memoryBytes !== 'function') throw invalid(`${where}.memoryBytes`, memoryBytes, 'a function memoryBytes(sizing) returning a byte count, or absent');
  return value as DriverModule;
}

/** Checks what createDriver returned: every required DDI a function, the user-mode half present. */
export function checkDriver(value: unknown, where: string): PluggableDriver {
  if (value === null || typeof value !== 'object') throw invalid(`${where}.createDriver(context)`, value, 'a driver object implementing KernelModeDriver');
  const record = value as Record<string, unknown>;
  const missing = REQUIRED_DDIS.filter((name) => typeof record[name] !== 'function');
  if (missing.length) {
    throw invalid(`${where}.createDriver(context)`, `a driver without ${missing.join(', ')}`,
      `a KernelModeDriver implementing every required DDI (missing or not a function: ${missing.join(', ')}; docs/DRIVERS.md)`);
  }
  const wrong = [...OPTIONAL_DDIS, ...OPTIONAL_DDI_FORMS].filter((name) => record[name] !== undefined && typeof record[name] !== 'function');
  if (wrong.length) throw invalid(`${where}.createDriver(context)`, `${wrong.join(', ')} not a function`, 'optional DDIs absent or functions');
  const userMode = record.userMode as Record<string, unknown> | undefined;
  if (!userMode || typeof userMode !== 'object') {
    throw invalid(`${where}.createDriver(context).userMode`, userMode, 'the driver\'s user-mode half: an object with submitToHwQueue(args)');
  }
  const missingUser = REQUIRED_USER_MODE.filter((name) => typeof userMode[name] !== 'function');
  if (missingUser.length) throw invalid(`${where}.createDriver(context).userMode`, `a user-mode half without ${missingUser.join(', ')}`, 'submitToHwQueue(args) a function');
  const wrongUser = OPTIONAL_USER_MODE.filter((name) => userMode[name] !== undefined && typeof userMode[name] !== 'function');
  if (wrongUser.length) throw invalid(`${where}.createDriver(context).userMode`, `${wrongUser.join(', ')} not a function`, 'optional user-mode entry points absent or functions');
  return value as PluggableDriver;
}
