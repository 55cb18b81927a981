// Reading a scenario for a command (run, explore): a file, bounded before and
// while it is read, or a built-in scenario by name; and the two kinds of bad
// input the commands report with exit 2.

import { statSync, openSync, readSync, closeSync } from 'node:fs';
import { parseScenario, ScenarioError } from '../scenario-files/load.js';
import { findBuiltin, runnableScenarios } from '../scenario-files/builtin.js';
import { SCENARIO_LIMITS, fileTooLarge } from '../scenario-files/limits.js';
import type { Scenario } from '../scenario-files/types.js';

/** Bad arguments (exit 2). */
export class UsageError extends Error {}
/** An output path that cannot be written, or a file that cannot be read: invalid input (exit 2). */
export class InputError extends Error {}

export const codeOf = (error: unknown) => (error as NodeJS.ErrnoException)?.code;

export function exists(path: string): boolean {
  try { statSync(path); return true; } catch { return false; }
}

/** Reads a scenario file, bounded: everything about the file is checked before (or while) it is read. */
export function readScenarioFile(target: string): string {
  let stats;
  try { stats = statSync(target); } catch (error) {
    if (codeOf(error) === 'ENOENT' || codeOf(error) === 'ENOTDIR') throw new InputError(`scenario file "${target}" does not exist`);
    throw new InputError(`scenario file "${target}" cannot be read: ${(error as Error).message}`);
  }
  if (stats.isDirectory()) throw new InputError(`scenario file "${target}" is a directory; expected a .yaml, .yml or .json file`);
  if (!stats.isFile()) throw new InputError(`scenario file "${target}" is not a regular file (a device, pipe or socket); expected a .yaml, .yml or .json file`);
  if (stats.size > SCENARIO_LIMITS.fileBytes) throw new ScenarioError(target, [{ path: '', message: fileTooLarge(stats.size) }]);
  // at most one byte past the limit: a file that grows after stat is still refused without reading it all
  const buffer = Buffer.alloc(SCENARIO_LIMITS.fileBytes + 1);
  let length = 0;
  let fd: number | undefined;
  try {
    fd = openSync(target, 'r');
    for (let n; length < buffer.length && (n = readSync(fd, buffer, length, buffer.length - length, null)) > 0;) length += n;
  } catch (error) {
    throw new InputError(`scenario file "${target}" cannot be read: ${codeOf(error) === 'EACCES' ? 'permission denied' : (error as Error).message}`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  if (length > SCENARIO_LIMITS.fileBytes) throw new ScenarioError(target, [{ path: '', message: fileTooLarge(length) }]);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(buffer.subarray(0, length)).replace(/^\uFEFF/, '');
  } catch {
    throw new ScenarioError(target, [{ path: '', message: 'the file is not UTF-8 text; expected a YAML or JSON scenario file' }]);
  }
}

/** A scenario read for a command: the parsed scenario, how reports name it, its text, and whether it is a built-in. */
export interface LoadedScenario { scenario: Scenario; source: string; text: string; builtin: boolean }

/** A scenario file (a path: it has a / or a .yaml/.yml/.json ending, or exists), else a built-in scenario by name. */
export function loadScenario(target: string): LoadedScenario {
  const looksLikeFile = /[\\/]|\.(ya?ml|json)$/i.test(target) || exists(target);
  if (looksLikeFile) {
    const text = readScenarioFile(target);
    return { scenario: parseScenario(text, target), source: target, text, builtin: false };
  }
  const builtin = findBuiltin(target);
  if (!builtin) throw new UsageError(`"${target}" is neither a scenario file nor a built-in scenario; built-in: ${runnableScenarios().map((b) => b.name).join(', ')}`);
  if (!builtin.scenario) throw new UsageError(`built-in scenario "${target}" cannot run in this build: ${builtin.unavailable}`);
  return { scenario: builtin.scenario, source: `scenarios/${builtin.file}`, text: builtin.text, builtin: true };
}

