// Errors and status codes: ONE table maps every failure to its NTSTATUS.
//
// Every API entry point validates its input before changing anything; a bad
// call throws WddmError naming the parameter, the bad value and what was
// expected, and the machine is exactly as it was.

export const NTSTATUS = {
  SUCCESS: 0x00000000,
  TIMEOUT: 0x00000102,
  INVALID_HANDLE: 0xc0000008,
  INVALID_PARAMETER: 0xc000000d,
  NO_MEMORY: 0xc0000017,
  ACCESS_DENIED: 0xc0000022,
  OBJECT_TYPE_MISMATCH: 0xc0000024,
  INTEGER_OVERFLOW: 0xc0000095,
  INSUFFICIENT_RESOURCES: 0xc000009a,
  NOT_SUPPORTED: 0xc00000bb,
  INVALID_DEVICE_STATE: 0xc0000184,
  DEVICE_REMOVED: 0xc00002b6,
  GRAPHICS_ADAPTER_STOPPED: 0xc01e0001, // the model's own: the adapter bug-checked (STATUS_GRAPHICS_NO_VIDEO_MEMORY range is reused nowhere)
} as const;
export type StatusName = keyof typeof NTSTATUS;

export interface ErrorDetail {
  /** The parameter that was wrong, as the caller named it (e.g. "objects[2]"). */
  parameter?: string;
  /** The value it had. */
  value?: unknown;
  /** What would have been accepted. */
  expected?: string;
}

/**
 * Every copy of this package (the library bundle, the command's bundle, the sources under a test
 * runner) marks its WddmErrors with the same registered symbol, so `error instanceof WddmError`
 * holds for a WddmError made by another copy: a driver module that imports 'wddm-fence' gets the
 * bundle's classes while the command that loads it runs its own (docs/DRIVERS.md).
 */
const WDDM_ERROR_BRAND = Symbol.for('wddm-fence.WddmError');

export class WddmError extends Error {
  /** A WddmError of any copy of the package; a subclass (ScheduleFileError, …) keeps the ordinary check. */
  static [Symbol.hasInstance](value: unknown): boolean {
    if (this !== WddmError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[WDDM_ERROR_BRAND] === true;
  }
  readonly status: StatusName;
  readonly ntstatus: number;
  readonly parameter?: string;
  readonly value?: unknown;
  readonly expected?: string;
  constructor(status: StatusName, message: string, detail: ErrorDetail = {}) {
    super(message);
    this.name = 'WddmError';
    this.status = status;
    this.ntstatus = NTSTATUS[status];
    this.parameter = detail.parameter;
    this.value = detail.value;
    this.expected = detail.expected;
    Object.defineProperty(this, WDDM_ERROR_BRAND, { value: true });
  }
}

/** A readable rendering of any value for an error message. */
export function show(value: unknown): string {
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return Number.isInteger(value) && value > 0xffff ? `0x${value.toString(16)}` : String(value);
  if (value === undefined) return 'undefined';
  try { return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)) ?? String(value); } catch { return String(value); }
}

export function invalid(parameter: string, value: unknown, expected: string, status: StatusName = 'INVALID_PARAMETER'): WddmError {
  return new WddmError(status, `${parameter} is ${show(value)}; expected ${expected}`, { parameter, value, expected });
}

/** Status codes returned by the core (negative i32), mapped once. */
export const CORE_STATUS: Record<number, { status: StatusName; text: string }> = {
  [-1]: { status: 'INVALID_PARAMETER', text: 'region header is not a wddm-fence region (bad magic or kind)' },
  [-2]: { status: 'INVALID_PARAMETER', text: 'region layout version differs from the core' },
  [-3]: { status: 'NO_MEMORY', text: 'region too small for the requested tables' },
  [-4]: { status: 'NO_MEMORY', text: 'no free 4 KiB page left in the memory region' },
  [-5]: { status: 'INSUFFICIENT_RESOURCES', text: 'fence table full (adapter option limits.fences)' },
  [-6]: { status: 'INSUFFICIENT_RESOURCES', text: 'page descriptor table full' },
  [-7]: { status: 'INVALID_HANDLE', text: 'not a live fence of this adapter' },
  [-8]: { status: 'INSUFFICIENT_RESOURCES', text: 'CPU waiter heap of this fence is full (adapter option limits.waitersPerFence, or the arena limits.heapArenaBytes that waiter heaps and queue rings share)' },
  [-9]: { status: 'INSUFFICIENT_RESOURCES', text: 'no free wait block (adapter option limits.waitBlocks)' },
  [-10]: { status: 'INVALID_HANDLE', text: 'not a live wait block' },
  [-11]: { status: 'NO_MEMORY', text: 'GPU virtual address window of the process is full (adapter option limits.gpuVaPagesPerProcess)' },
  [-12]: { status: 'INVALID_PARAMETER', text: 'process slot out of range (machine option limits.processes)' },
  [-13]: { status: 'INSUFFICIENT_RESOURCES', text: 'hardware queue table full (adapter option limits.queues), or no room left in the arena for another ring of limits.ringEntries commands (limits.heapArenaBytes)' },
  [-14]: { status: 'INVALID_HANDLE', text: 'not a live hardware queue' },
  [-15]: { status: 'INSUFFICIENT_RESOURCES', text: 'hardware queue ring full (adapter option limits.ringEntries); wait for the GPU to drain it' },
  [-16]: { status: 'ACCESS_DENIED', text: 'GPU page fault: the GPU VA is not mapped in the queue\'s process' },
  [-17]: { status: 'INVALID_PARAMETER', text: 'engine index out of range' },
  [-18]: { status: 'INVALID_PARAMETER', text: 'invalid argument to the core' },
  [-19]: { status: 'INVALID_DEVICE_STATE', text: 'native fence log buffer header is corrupt (wrong Type, NumberOfEntries that does not fit 4 KiB, or FirstFreeEntryIndex past the end)' },
  [-20]: { status: 'INSUFFICIENT_RESOURCES', text: 'no free CPU waiter record (adapter option limits.waitBlocks: a waiter takes one record on its first fence\'s adapter)' },
  [-21]: { status: 'INVALID_PARAMETER', text: 'not a live, uncompleted CPU waiter record' },
  [-22]: { status: 'ACCESS_DENIED', text: 'GPU page fault: a write through a GPU VA the queue\'s process has mapped read-only for the GPU (a MonitoredValue: the GPU only reads it, NF-04)' },
  [-40]: { status: 'INSUFFICIENT_RESOURCES', text: 'cross-adapter doorbell ring full (machine option doorbell.ringEntries); the signal falls back to the interrupt path' },
  [-41]: { status: 'INVALID_PARAMETER', text: 'not a formatted cross-adapter doorbell area' },
};

/** Throws WddmError for a negative core status; returns the value otherwise. */
export function check(result: number, what: string): number {
  if (result >= 0) return result;
  const known = CORE_STATUS[result] ?? { status: 'INVALID_PARAMETER' as StatusName, text: `core status ${result}` };
  throw new WddmError(known.status, `${what}: ${known.text}`);
}
