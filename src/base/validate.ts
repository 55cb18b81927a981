// Input checks shared by every entry point: values that must be 64-bit
// unsigned, options objects with no unknown keys, small integers. Each
// failure names the parameter path, the bad value and what was expected.
//
// The checks every CPU signal and wait makes (u64, options, array) are a test
// and a call: what builds the error is a function of its own, so the check is
// small enough for V8 to compile into its caller (its inlining budget counts a
// callee's whole bytecode, messages included).

import { invalid, WddmError } from './errors.js';
import { UINT64_MAX } from './wddm.js';

export function u64(value: unknown, parameter: string): bigint {
  // 0 … UINT64_MAX: the value its low 64 bits make is itself (one truncation V8 compiles inline, not two BigInt compares).
  if (typeof value === 'bigint' && BigInt.asUintN(64, value) === value) return value;
  return u64Other(value, parameter);
}

/** u64's value without its error: the bigint, or undefined where u64 throws (a caller that reports it later calls u64 then). */
export function u64OrUndefined(value: unknown): bigint | undefined {
  if (typeof value === 'bigint' && BigInt.asUintN(64, value) === value) return value;
  return u64Number(value);
}

/** A non-negative safe integer number as a bigint; undefined for anything else. */
function u64Number(value: unknown): bigint | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? BigInt(value) : undefined;
}

/** u64 for anything but a bigint in range: a non-negative safe integer number, else the error. */
function u64Other(value: unknown, parameter: string): bigint {
  if (typeof value === 'bigint') throw invalid(parameter, value, 'a 64-bit unsigned value (0n … 18446744073709551615n)', 'INTEGER_OVERFLOW');
  const number = u64Number(value);
  if (number !== undefined) return number;
  throw invalid(parameter, value, 'a 64-bit unsigned value: a bigint, or a non-negative safe integer number');
}

export function integer(value: unknown, parameter: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(parameter, value, `an integer from ${min} to ${max}`);
  }
  return value;
}

/**
 * The bound of virtual time. The scheduler keeps virtual time as a JavaScript
 * number of nanoseconds, exact for every integer up to 2^53 − 1 (about 104
 * days); the core keeps GPU times as u64, which holds any sum of such values.
 * Every duration, timeout and point in time the model takes is bounded by it,
 * and a run whose virtual time would pass it stops with an error.
 */
export const MAX_VIRTUAL_TIME_NS = Number.MAX_SAFE_INTEGER;
const TIME_RANGE = `a whole number of virtual nanoseconds from 0 to ${MAX_VIRTUAL_TIME_NS} (2^53 − 1, the largest time virtual time holds exactly)`;

/**
 * A duration, timeout or point in virtual time: a whole number of nanoseconds from 0 to
 * MAX_VIRTUAL_TIME_NS. Virtual time moves in whole nanoseconds (the core keeps GPU times as u64),
 * so a fraction is refused rather than rounded somewhere later.
 */
export function nonNegative(value: unknown, parameter: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_VIRTUAL_TIME_NS) throw invalid(parameter, value, TIME_RANGE);
  return value;
}
export { nonNegative as durationNs };

export function fraction(value: unknown, parameter: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) throw invalid(parameter, value, 'a fraction from 0 to 1');
  return value;
}

export function bool(value: unknown, parameter: string): boolean {
  if (typeof value !== 'boolean') throw invalid(parameter, value, 'true or false');
  return value;
}

export function oneOf<T extends string>(value: unknown, parameter: string, choices: readonly T[]): T {
  if (typeof value !== 'string' || !choices.includes(value as T)) throw invalid(parameter, value, `one of ${choices.map((c) => JSON.stringify(c)).join(', ')}`);
  return value as T;
}

/** Rejects anything that is not a plain object, and any key not in `known`. */
export function options(value: unknown, parameter: string, known: readonly string[]): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid(parameter, value, 'an options object');
  // for…in over own keys: Object.keys' order, without its array (this runs on every call of the API).
  for (const key in value) if (!known.includes(key) && Object.prototype.hasOwnProperty.call(value, key)) throw unknownKey(parameter, key, known);
  return value as Record<string, unknown>;
}

function unknownKey(parameter: string, key: string, known: readonly string[]): WddmError {
  return new WddmError('INVALID_PARAMETER', `${parameter} has unknown key ${JSON.stringify(key)}; expected only ${known.map((k) => JSON.stringify(k)).join(', ')}`,
    { parameter: `${parameter}.${key}`, value: key, expected: known.join(', ') });
}

export function array(value: unknown, parameter: string, min: number, max: number): unknown[] {
  if (!Array.isArray(value) || value.length < min || value.length > max) throw arrayError(value, parameter, min, max);
  return value;
}

function arrayError(value: unknown, parameter: string, min: number, max: number): WddmError {
  if (!Array.isArray(value)) return invalid(parameter, value, `an array of ${min} to ${max} items`);
  return new WddmError('INVALID_PARAMETER', `${parameter} has ${value.length} items; expected ${min} to ${max}`,
    { parameter, value: value.length, expected: `${min} to ${max} items` });
}

/** A `{ work: { durationNs } }` command body, as the engine takes it (hardware queues and contexts alike). */
export function workCommand(body: unknown, parameter: string): { command: { op: 'work'; gpuVa: bigint; value: bigint; handle: number }; described: string } {
  const w = options(body, parameter, ['durationNs']);
  const durationNs = nonNegative(w.durationNs, `${parameter}.durationNs`);
  return { command: { op: 'work', gpuVa: 0n, value: BigInt(durationNs), handle: 0 }, described: `work(${durationNs}ns)` };
}
