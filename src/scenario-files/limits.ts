// What a scenario file may hold. Every bound is checked while the file is
// read, before the part it protects is built, so no input can make the loader
// (or the run it describes) take memory or time out of proportion to a real
// scenario:
//
//   bytes on disk ──▶ text ──▶ nesting pre-scan ──▶ YAML/JSON tree ──▶ aliases and
//   fileBytes         (CLI     flowDepth,             (yaml's parser)    expanded nodes
//   (stat, before     stats    indentColumns                              (before toJS)
//    reading)         first)                                                   │
//                                                                              ▼
//   set-up and run ◀── references, counts ◀── schema (ajv): maxItems per list,
//   (machine.limits)   (commands in all,       numbers within virtual time
//                       processes ≤ machine)
//
// A built-in scenario is a few kilobytes, nests 10 levels and has no alias; the
// bounds sit far above anything a hand-written or generated scenario needs.
// docs/SCENARIOS.md lists them.

import { MAX_VIRTUAL_TIME_NS } from '../base/validate.js';

export const SCENARIO_LIMITS = {
  /** Bytes of one scenario file (checked on disk before it is read, and on text given to parseScenario). */
  fileBytes: 1 << 20,
  /** Levels of nested maps and lists (the format itself nests 10). */
  depth: 32,
  /** Open flow brackets ([ and {) at once in the raw text: checked before the YAML parser runs. */
  flowDepth: 64,
  /** Columns a line may be indented (block nesting; each compact "- " counts as two), checked before the YAML parser runs. */
  indentColumns: 256,
  /** YAML alias uses, counted as yaml's maxAliasCount counts them (an alias inside an alias's target counts each time). */
  aliases: 100,
  /** Maps, lists and values in the file once every alias is expanded. */
  nodes: 250_000,
  /** GPU commands in one list (a queue's commands, a submit step's). */
  commandsPerList: 4096,
  /** GPU commands in the whole file (queues and submit steps together). */
  commands: 32_768,
  /** Steps of one thread. */
  stepsPerThread: 4096,
  threads: 1024,
  processes: 1023,
  fences: 4096,
  queues: 1024,
  allocations: 1024,
  faults: 1024,
  /** Entries of each expect map. */
  expectations: 4096,
  /** Durations, timeouts and points in time (ns): what virtual time holds exactly. */
  timeNs: MAX_VIRTUAL_TIME_NS,
} as const;

/** "1 MiB", "512 KiB", "300 bytes". */
export function bytesText(bytes: number): string {
  if (bytes >= 1 << 20 && bytes % (1 << 20) === 0) return `${bytes / (1 << 20)} MiB`;
  if (bytes >= 1 << 10 && bytes % (1 << 10) === 0) return `${bytes / (1 << 10)} KiB`;
  return `${bytes} bytes`;
}

/** The message for a file past fileBytes (the CLI says it before reading). */
export function fileTooLarge(bytes: number): string {
  return `the file is ${bytes} bytes; expected at most ${bytesText(SCENARIO_LIMITS.fileBytes)} (${SCENARIO_LIMITS.fileBytes} bytes, a scenario file's limit; built-in scenarios are a few KiB)`;
}

export interface NestingProblem { offset: number; message: string }

/**
 * The pre-scan: the deepest flow nesting and indentation of the raw text,
 * before any parser recurses into it. Quoted strings and comments are skipped
 * the way YAML starts them (a quote only where a scalar may begin, a # only
 * after a space), so brackets inside them do not count.
 */
export function nestingProblem(text: string): NestingProblem | undefined {
  let flow = 0;
  let lineStart = true, indent = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10 /* \n */) { lineStart = true; indent = 0; continue; }
    if (lineStart) {
      // indentation, and compact nested sequences ("- - - x") that nest without it
      const compact = c === 45 /* - */ && text.charCodeAt(i + 1) === 32;
      if (c === 32 /* space */ || compact) {
        if (compact) { indent++; i++; }
        if (++indent > SCENARIO_LIMITS.indentColumns) {
          return { offset: i, message: `a line is indented more than ${SCENARIO_LIMITS.indentColumns} columns; expected a scenario nested at most ${SCENARIO_LIMITS.depth} levels (a scenario file's limit)` };
        }
        continue;
      }
      lineStart = false;
    }
    const previous = i === 0 ? 10 : text.charCodeAt(i - 1);
    const scalarMayStart = previous === 10 || previous === 32 || previous === 9 || previous === 91 || previous === 123 || previous === 44 || previous === 58;
    if (c === 35 /* # */ && (previous === 32 || previous === 9 || previous === 10)) {
      while (i + 1 < text.length && text.charCodeAt(i + 1) !== 10) i++;
    } else if ((c === 34 /* " */ || c === 39 /* ' */) && scalarMayStart) {
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (c === 34 && d === 92 /* \ */) { i++; continue; }
        if (d === c) {
          if (c === 39 && text.charCodeAt(i + 1) === 39) { i++; continue; } // '' inside '…'
          break;
        }
      }
    } else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++flow > SCENARIO_LIMITS.flowDepth) {
        return { offset: i, message: `flow collections ([ … ] and { … }) are nested more than ${SCENARIO_LIMITS.flowDepth} deep here; expected a scenario nested at most ${SCENARIO_LIMITS.depth} levels (a scenario file's limit)` };
      }
    } else if ((c === 93 /* ] */ || c === 125 /* } */) && flow > 0) {
      flow--;
    }
  }
  return undefined;
}
