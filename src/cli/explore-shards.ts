// The exhaustive search past one process: shard reports and their merge
// (`wddm-fence explore … --shard i/n --report FILE`, `explore --merge REPORT…`,
// `explore … --workers N`). src/explore/search.ts says how a shard searches and
// why the shards' states together are the one process's; docs/EXPLORER.md
// ("Shards and workers") shows how to run them with GNU parallel, a CI matrix,
// a Kubernetes Indexed Job or a batch array.
//
//   shard i of n ──► report (JSON): the command's own arguments, the package version, the
//                    scenario text's SHA-256, i/n, the split depth, the subtree roots met,
//                    and per search: the counts, every state key seen (8 bytes each, sorted,
//                    base64), the quiet ones, the dead ends, the violations with their paths
//   merge R1…Rn  ──► checks they are the n shards of one search (same arguments, version,
//                    scenario text, n, split depth and roots; each i once), then the
//                    verdict of the one process: states = |∪ keys|, quiet = |∪ quiet keys|,
//                    a violation when any shard saw one, and the shortest counterexample
//                    searched again over the whole machine (search.ts shortest, bounded by
//                    the shortest violation any shard saw), so it is the one process's
//
// A shard alone proves nothing: only the merge of all n says "holds".

import { readFileSync, statSync } from 'node:fs';
import type { SearchResult, SearchStats, FoundViolation, Bound } from '../explore/search.js';
import type { InvariantId } from '../explore/invariants.js';

export const SHARD_REPORT_FORMAT = 'wddm-fence-explore-shard';
/**
 * 2: state keys of the strong hash (src/explore/state.ts, issue 31). Version 1 reports hold keys of the old hash,
 * which name the same states differently: a merge of the two would count states twice, so they are refused.
 */
export const SHARD_REPORT_VERSION = 2;
/** Bytes of one state key in a report (the key is 64 bits: src/explore/state.ts). */
export const KEY_BYTES = 8;

/** One search of a shard (two with --driver: the OS as documented, the driver alone). */
export interface ShardSearchReport {
  title?: string;
  stats: SearchStats & { timeMs: number };
  roots: number;
  owned: number;
  /** Every distinct state key the shard visited, packed (KEY_BYTES each, sorted) in base64; the quiet ones alike. */
  keys: string;
  quietKeys: string;
  /** Dead ends where a step threw, by their path. */
  crashes: string[];
  violations: { invariant: InvariantId; message: string; path: number[]; bounds?: string[] }[];
}

export interface ShardReport {
  format: typeof SHARD_REPORT_FORMAT;
  version: number;
  /** The package version that wrote it: a merge refuses reports of two versions (their state keys may differ). */
  package: string;
  /** The explore command's arguments, less --shard, --report, --json and --progress: what a merge runs again to judge. */
  argv: string[];
  /** The scenario text's SHA-256 (a scenario file), or null (the generated machine). */
  scenarioSha256: string | null;
  shard: { index: number; count: number };
  splitDepth: number;
  searches: ShardSearchReport[];
}

/** Packs 16-hex-digit state keys into sorted 8-byte words, base64. */
export function packKeys(keys: Iterable<string>): string {
  const sorted = [...keys].sort();
  const bytes = Buffer.alloc(sorted.length * KEY_BYTES);
  sorted.forEach((key, i) => {
    if (!/^[0-9a-f]{16}$/.test(key)) throw new Error(`internal: state key "${key}" is not 16 hex digits`);
    bytes.write(key, i * KEY_BYTES, KEY_BYTES, 'hex');
  });
  return bytes.toString('base64');
}

/** The keys of packKeys again, as 16-hex-digit strings. */
export function unpackKeys(packed: string, where: string): string[] {
  const bytes = Buffer.from(packed, 'base64');
  if (bytes.length % KEY_BYTES !== 0) throw new ShardError(`${where}: the packed state keys are ${bytes.length} bytes; expected a multiple of ${KEY_BYTES}`);
  const keys: string[] = [];
  for (let at = 0; at < bytes.length; at += KEY_BYTES) keys.push(bytes.toString('hex', at, at + KEY_BYTES));
  return keys;
}

export class ShardError extends Error {}

/** The report of one shard's searches. */
export function shardReport(options: {
  package: string; argv: string[]; scenarioSha256: string | null; shard: { index: number; count: number }; splitDepth: number;
  searches: { title?: string; result: SearchResult; ms: number }[];
}): ShardReport {
  return {
    format: SHARD_REPORT_FORMAT, version: SHARD_REPORT_VERSION, package: options.package, argv: options.argv, scenarioSha256: options.scenarioSha256,
    shard: options.shard, splitDepth: options.splitDepth,
    searches: options.searches.map(({ title, result, ms }) => ({
      ...(title ? { title } : {}),
      stats: { ...result.stats, interleavings: undefined, timeMs: Math.round(ms) },
      roots: result.shard!.roots, owned: result.shard!.owned,
      keys: packKeys(result.shard!.keys), quietKeys: packKeys(result.shard!.quietKeys), crashes: [...result.shard!.crashes].sort(),
      violations: [...result.violations.values()].map((v) => ({ invariant: v.invariant, message: v.message, path: v.path, ...(v.bounds ? { bounds: v.bounds } : {}) })),
    })),
  };
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Reads one report file, checking its shape; every problem names the file and what was expected. */
export function readShardReport(path: string): ShardReport {
  let text: string;
  try {
    if (!statSync(path).isFile()) throw new ShardError(`--merge: "${path}" is not a file; expected a shard report (explore … --shard i/n --report FILE)`);
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if (error instanceof ShardError) throw error;
    throw new ShardError(`--merge: "${path}" cannot be read: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
  }
  let data: unknown;
  try { data = JSON.parse(text); } catch (error) { throw new ShardError(`--merge: "${path}" is not JSON (${(error as Error).message}); expected a shard report`); }
  if (!isObject(data) || data.format !== SHARD_REPORT_FORMAT) throw new ShardError(`--merge: "${path}" is not a shard report (its "format" is not "${SHARD_REPORT_FORMAT}"); expected the --report file of explore … --shard i/n`);
  if (data.version !== SHARD_REPORT_VERSION) {
    const why = data.version === 1 ? ' (a version 1 report holds state keys of the hash before issue 31\'s fix, which name states differently: run that shard again with this wddm-fence)' : '';
    throw new ShardError(`--merge: "${path}" is a shard report of format version ${String(data.version)}; expected version ${SHARD_REPORT_VERSION}${why}`);
  }
  const shard = data.shard;
  if (!isObject(shard) || !Number.isSafeInteger(shard.index) || !Number.isSafeInteger(shard.count) || (shard.index as number) < 1 || (shard.index as number) > (shard.count as number)) {
    throw new ShardError(`--merge: "${path}" has no valid "shard" ({ index, count } with 1 ≤ index ≤ count)`);
  }
  if (!Array.isArray(data.argv) || !data.argv.every((a) => typeof a === 'string')) throw new ShardError(`--merge: "${path}" has no "argv" (a list of strings)`);
  if (!Number.isSafeInteger(data.splitDepth) || !Array.isArray(data.searches) || data.searches.length < 1) throw new ShardError(`--merge: "${path}" has no "splitDepth" or "searches"`);
  for (const [i, s] of (data.searches as unknown[]).entries()) {
    if (!isObject(s) || !isObject(s.stats) || typeof s.keys !== 'string' || typeof s.quietKeys !== 'string' || !Array.isArray(s.crashes) || !Array.isArray(s.violations) || !Number.isSafeInteger(s.roots)) {
      throw new ShardError(`--merge: "${path}" search ${i + 1} is malformed; expected stats, roots, keys, quietKeys, crashes and violations`);
    }
  }
  return data as unknown as ShardReport;
}

/** What a merge hands the search's report: per search, the one-process result, and how it was made. */
export interface Merged {
  results: SearchResult[];
  count: number;
  splitDepth: number;
  /** Per search: the subtree roots, and each shard's own distinct states (their sum over the union is the work done twice). */
  roots: number[];
  shardStates: number[][];
  ms: number[];
  /** The scenario text the shards searched (SHA-256), or null: the merge's own reading of the file must match. */
  scenarioSha256: string | null;
}

/**
 * Checks that `reports` are the n shards of one search, then unites them: the union of their
 * state keys is the one process's states (search.ts argues it), a violation of any shard is one.
 */
export function mergeShardReports(reports: { path: string; report: ShardReport }[]): Merged {
  if (!reports.length) throw new ShardError('--merge needs the report files of every shard (explore --merge REPORT…)');
  const [first] = reports;
  const count = first.report.shard.count;
  for (const { path, report } of reports) {
    const differs = (what: string, a: unknown, b: unknown) => {
      if (JSON.stringify(a) !== JSON.stringify(b)) throw new ShardError(`--merge: "${path}" is a shard of another search than "${first.path}": its ${what} is ${JSON.stringify(a)}, not ${JSON.stringify(b)}; expected the shards of one command`);
    };
    differs('package version', report.package, first.report.package);
    differs('command', report.argv, first.report.argv);
    differs('scenario text (SHA-256)', report.scenarioSha256, first.report.scenarioSha256);
    differs('shard count', report.shard.count, count);
    differs('split depth', report.splitDepth, first.report.splitDepth);
    differs('number of searches', report.searches.length, first.report.searches.length);
    report.searches.forEach((s, i) => differs(`search ${i + 1}'s subtree roots (the top every shard walks alike)`, s.roots, first.report.searches[i].roots));
  }
  const byIndex = new Map<number, string>();
  for (const { path, report } of reports) {
    const other = byIndex.get(report.shard.index);
    if (other !== undefined) throw new ShardError(`--merge: shard ${report.shard.index}/${count} is given twice ("${other}" and "${path}"); expected each shard once`);
    byIndex.set(report.shard.index, path);
  }
  const missing = Array.from({ length: count }, (_, i) => i + 1).filter((i) => !byIndex.has(i));
  if (missing.length) throw new ShardError(`--merge: shard${missing.length > 1 ? 's' : ''} ${missing.map((i) => `${i}/${count}`).join(', ')} missing; expected all ${count} reports of the search`);
  const ordered = [...reports].sort((a, b) => a.report.shard.index - b.report.shard.index);
  const merged: Merged = { results: [], count, splitDepth: first.report.splitDepth, roots: [], shardStates: [], ms: [], scenarioSha256: first.report.scenarioSha256 };
  first.report.searches.forEach((_, i) => {
    const keys = new Set<string>(), quiet = new Set<string>(), crashes = new Set<string>();
    const violations = new Map<InvariantId, FoundViolation>();
    const stoppedBy = new Set<Bound>();
    // visitedBytes: the shards' visited sets together (each keeps its own).
    const sum = { transitions: 0, runs: 0, events: 0, restores: 0, visitedBytes: 0 };
    let maxDepth = 0, complete = true, ms = 0;
    const shardStates: number[] = [];
    for (const { path, report } of ordered) {
      const s = report.searches[i];
      const own = unpackKeys(s.keys, path);
      for (const key of own) keys.add(key);
      for (const key of unpackKeys(s.quietKeys, path)) quiet.add(key);
      for (const c of s.crashes) crashes.add(c);
      shardStates.push(own.length + s.crashes.length);
      for (const v of s.violations) {
        const known = violations.get(v.invariant);
        if (!known || v.path.length < known.path.length) violations.set(v.invariant, { invariant: v.invariant, message: v.message, path: v.path, ...(v.bounds ? { bounds: v.bounds } : {}) });
      }
      sum.transitions += s.stats.transitions; sum.runs += s.stats.runs; sum.events += s.stats.events; sum.restores += s.stats.restores; sum.visitedBytes += s.stats.visitedBytes ?? 0;
      maxDepth = Math.max(maxDepth, s.stats.maxDepth);
      complete &&= s.stats.complete;
      for (const b of s.stats.stoppedBy) stoppedBy.add(b);
      ms = Math.max(ms, s.stats.timeMs);
    }
    const stats: SearchStats = {
      states: keys.size + crashes.size, quietStates: quiet.size, ...sum, maxDepth, complete, stoppedBy: [...stoppedBy],
      restore: first.report.searches[i].stats.restore,
    };
    merged.results.push({ stats, violations });
    merged.roots.push(first.report.searches[i].roots);
    merged.shardStates.push(shardStates);
    merged.ms.push(ms);
  });
  return merged;
}

/** The split depth a shard search uses when none is given: every shard computes the same (it depends on the model only). */
export const DEFAULT_SPLIT_DEPTH = 8;
