// Loading a scenario: bound the input (size, nesting, aliases: limits.ts),
//
// Why this file is long: it is one reader: each check after the schema needs the
// whole parsed file and the source positions the parser kept, and reports into
// the one list of problems; the bounds, the schema and the feature list are
// files of their own (limits.ts, schema.ts, features.ts).
// parse (JSON or YAML), check against the schema (ajv), then check what a
// schema cannot say (names that must exist, features this build lacks,
// expectations that cannot hold, counts against the machine's limits). Every
// problem is collected with its path in the file and its line; if there is
// any, nothing runs.

import AjvModule, { type ErrorObject, type ValidateFunction } from 'ajv';
import { parseDocument, LineCounter, isMap, isPair, isScalar, isAlias, isCollection, type Document, type Node as YamlNode } from 'yaml';
import { SCENARIO_SCHEMA } from './schema.js';
import { counted } from '../base/words.js';
import { longestSubmissions } from './rings.js';
import { SCENARIO_LIMITS, fileTooLarge, nestingProblem } from './limits.js';

/** The processes a machine holds when machine.limits.processes is not given (createMachine's default). */
const DEFAULT_PROCESS_LIMIT = 16;
import { FEATURES, FEATURE_TEXT, type FeatureName } from './features.js';
import type { Scenario, GpuCommand, ThreadStep } from './types.js';

export interface ScenarioProblem {
  /** Where in the file, e.g. "fences[0].kind" ("" for the whole file). */
  path: string;
  line?: number;
  column?: number;
  /** A full sentence: the path, the bad value, what was expected. */
  message: string;
}

export class ScenarioError extends Error {
  constructor(readonly source: string, readonly problems: ScenarioProblem[]) {
    super(`${source}: invalid scenario\n` + problems.map((p) => `  ${formatProblem(source, p)}`).join('\n'));
    this.name = 'ScenarioError';
  }
}

export function formatProblem(source: string, p: ScenarioProblem): string {
  const where = p.line ? `${source}:${p.line}${p.column ? `:${p.column}` : ''}` : source;
  return `${where}: ${p.message}`;
}

type Segment = string | number;
const pathText = (segments: Segment[]) =>
  segments.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('') || 'the file';
const show = (value: unknown): string => {
  if (typeof value === 'bigint') return value.toString();
  if (value === undefined) return 'missing';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value); // YAML .nan, .inf, 1e400
  const text = JSON.stringify(value);
  return text.length > 60 ? text.slice(0, 57) + '...' : text;
};

// ajv is CommonJS: under Node's ESM loader its class is the default export's `default`.
const Ajv = ((AjvModule as unknown as { default?: unknown }).default ?? AjvModule) as unknown as typeof AjvModule.default;
let compiled: ValidateFunction | undefined;
function validator(): ValidateFunction {
  if (!compiled) compiled = new Ajv({ allErrors: true, verbose: true, strict: true, allowUnionTypes: true }).compile(SCENARIO_SCHEMA);
  return compiled;
}

/** Numbers past 2^53 stay exact: YAML integers are read as bigint, then small ones become numbers, large ones decimal strings. */
function normaliseNumbers(value: unknown): unknown {
  if (typeof value === 'bigint') return value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString();
  if (Array.isArray(value)) return value.map(normaliseNumbers);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normaliseNumbers(v)]));
  return value;
}

class Locator {
  constructor(private doc: Document | undefined, private lines: LineCounter | undefined) {}
  /** Line/column of a path; for a missing key, its parent; `key` points at the key itself. */
  at(segments: Segment[], key?: string): { line?: number; column?: number } {
    if (!this.doc || !this.lines) return {};
    for (let n = segments.length; n >= 0; n--) {
      const node = this.doc.getIn(segments.slice(0, n), true) as { range?: [number, number, number] } | undefined;
      if (n === 0 && !node) {
        const root = this.doc.contents as { range?: [number, number, number] } | null;
        if (root?.range) return this.pos(root.range[0]);
        return {};
      }
      if (!node || !node.range) continue;
      if (key !== undefined && n === segments.length && isMap(node)) {
        const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && p.key.value === key);
        const range = pair && (pair.key as { range?: [number, number, number] }).range;
        if (range) return this.pos(range[0]);
      }
      return this.pos(node.range[0]);
    }
    return {};
  }
  private pos(offset: number) { const p = this.lines!.linePos(offset); return { line: p.line, column: p.col }; }
}

/** Bytes of `text` in UTF-8 (without building the bytes). */
function utf8Bytes(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x800) bytes += c >= 0xd800 && c <= 0xdbff ? 1 : 2; // a surrogate pair is 4 bytes for 2 units
    else if (c >= 0x80) bytes += 1;
  }
  return bytes;
}

const where = (lines: LineCounter | string, offset: number) => {
  if (typeof lines === 'string') { const before = lines.slice(0, offset).split('\n'); return { line: before.length, column: before[before.length - 1].length + 1 }; }
  const p = lines.linePos(offset);
  return { line: p.line, column: p.col };
};

/**
 * The parsed tree against the bounds that matter once aliases are expanded:
 * nesting depth, alias uses (counted like yaml's maxAliasCount: an alias
 * inside an alias's target counts each time), and nodes. Aliases refer only
 * to anchors before them, so one pass in post-order (children first) knows
 * each target's expanded size before any alias to it; a second pass in
 * document order finds where a bound is first passed, for the location.
 */
function treeProblems(doc: Document, lines: LineCounter): ScenarioProblem[] {
  /** Once expanded: nodes (maps, lists, values, keys), alias uses, and levels of maps and lists (a value: 0). */
  type Sized = { nodes: number; aliases: number; depth: number };
  const sized = new Map<unknown, Sized>();
  const children = (node: unknown): unknown[] => (isCollection(node) ? node.items.flatMap((item) => (isPair(item) ? [item.key, item.value] : [item])).filter((x) => x !== null && x !== undefined && typeof x === 'object') : []);
  const at = (node: unknown) => where(lines, ((node as { range?: [number, number, number] }).range ?? [0])[0]);
  const root = doc.contents;
  if (!root) return [];
  // pass 1: post-order, explicit stack (the parse already bounded the raw depth; this is the expanded one)
  const stack: { node: unknown; next: number; kids: unknown[] }[] = [{ node: root, next: 0, kids: children(root) }];
  const open = new Set<unknown>([root]);
  while (stack.length) {
    const top = stack[stack.length - 1];
    if (top.next < top.kids.length) {
      const kid = top.kids[top.next++];
      if (!sized.has(kid) && !open.has(kid)) { open.add(kid); stack.push({ node: kid, next: 0, kids: children(kid) }); }
      continue;
    }
    stack.pop();
    open.delete(top.node);
    let size: Sized;
    if (isAlias(top.node)) {
      const target = top.node.resolve(doc);
      const of = target ? sized.get(target) : undefined;
      if (!target) return [{ path: '', ...at(top.node), message: `the YAML alias *${top.node.source} has no anchor &${top.node.source} before it; expected an alias to an earlier anchor` }];
      if (!of) return [{ path: '', ...at(top.node), message: `the YAML alias *${top.node.source} is inside the node it refers to (a loop); expected an alias to a node that does not contain it` }];
      size = { nodes: of.nodes, aliases: 1 + of.aliases, depth: of.depth };
    } else {
      size = { nodes: 1, aliases: 0, depth: isCollection(top.node) ? 1 : 0 };
      for (const kid of top.kids) {
        const k = sized.get(kid)!;
        size.nodes += k.nodes; size.aliases += k.aliases; size.depth = Math.max(size.depth, 1 + k.depth);
      }
    }
    sized.set(top.node, size);
  }
  const total = sized.get(root)!;
  if (total.nodes <= SCENARIO_LIMITS.nodes && total.aliases <= SCENARIO_LIMITS.aliases && total.depth <= SCENARIO_LIMITS.depth) return [];
  // pass 2: document order, to name the place where a bound is first passed
  let nodes = 0, aliases = 0;
  const walk: { node: unknown; depth: number }[] = [{ node: root, depth: 1 }];
  while (walk.length) {
    const { node, depth } = walk.pop()!;
    const size = sized.get(node)!;
    if (isAlias(node)) {
      nodes += size.nodes; aliases += size.aliases;
      if (aliases > SCENARIO_LIMITS.aliases) return [{ path: '', ...at(node), message: `the YAML alias *${node.source} brings the file past ${SCENARIO_LIMITS.aliases} alias uses once aliases inside aliases are expanded (${total.aliases} in all: an alias bomb?); expected at most ${SCENARIO_LIMITS.aliases} (a scenario file's limit)` }];
      if (nodes > SCENARIO_LIMITS.nodes) return [{ path: '', ...at(node), message: `the YAML alias *${node.source} (${size.nodes} nodes) brings the file to ${total.nodes} maps, lists and values once expanded; expected at most ${SCENARIO_LIMITS.nodes} (a scenario file's limit)` }];
      if (depth - 1 + size.depth > SCENARIO_LIMITS.depth) return [{ path: '', ...at(node), message: `the YAML alias *${node.source} nests ${depth - 1 + size.depth} levels deep once expanded; expected at most ${SCENARIO_LIMITS.depth} (a scenario file's limit)` }];
      continue;
    }
    nodes++;
    if (nodes > SCENARIO_LIMITS.nodes) return [{ path: '', ...at(node), message: `the file holds ${total.nodes} maps, lists and values${total.aliases ? ' once its aliases are expanded' : ''}; expected at most ${SCENARIO_LIMITS.nodes} (a scenario file's limit; this is where it passes it)` }];
    if (depth > SCENARIO_LIMITS.depth && !isScalar(node)) return [{ path: '', ...at(node), message: `maps and lists are nested ${depth} levels deep here; expected at most ${SCENARIO_LIMITS.depth} (a scenario file's limit; the format itself nests 10)` }];
    const kids = children(node);
    for (let k = kids.length - 1; k >= 0; k--) walk.push({ node: kids[k], depth: depth + 1 });
  }
  return [{ path: '', message: `the file holds ${total.nodes} maps, lists and values and ${total.aliases} alias uses, ${total.depth} levels deep once expanded; expected at most ${SCENARIO_LIMITS.nodes}, ${SCENARIO_LIMITS.aliases} and ${SCENARIO_LIMITS.depth} (a scenario file's limits)` }];
}

/** Where each expectation and each top-level item is in the file, for reports after the run (failed expectations, set-up refusals). */
const scenarioLocations = new WeakMap<Scenario, Map<string, { line: number; column: number }>>();

/** The line and column of a path ("expect.fences.f", "queues[2]") in the file a scenario was read from, when known. */
export function locationOf(scenario: Scenario, path: string): { line: number; column: number } | undefined {
  return scenarioLocations.get(scenario)?.get(path);
}

function rememberLocations(scenario: Scenario, locate: Locator): void {
  const found = new Map<string, { line: number; column: number }>();
  const note = (segments: Segment[], key?: string) => {
    const { line, column } = locate.at(segments, key);
    if (line !== undefined && column !== undefined) found.set(pathText(key === undefined ? segments : [...segments, key]), { line, column });
  };
  note(['machine']);
  // every place under machine (a few dozen at most): createMachine names the option it refuses
  const under = (value: unknown, segments: Segment[]) => {
    if (value === null || typeof value !== 'object') return;
    for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
      const at: Segment[] = [...segments, Array.isArray(value) ? Number(key) : key];
      note(at);
      if (at.length < 8) under(child, at);
    }
  };
  under(scenario.machine, ['machine']);
  for (const list of ['processes', 'fences', 'queues', 'allocations', 'threads', 'faults'] as const) {
    (scenario[list] ?? []).forEach((_item: unknown, i: number) => note([list, i]));
  }
  for (const [group, entries] of Object.entries(scenario.expect ?? {})) {
    if (entries === null || typeof entries !== 'object') { note(['expect'], group); continue; }
    for (const [key, value] of Object.entries(entries as Record<string, unknown>)) {
      note(['expect', group], key);
      if (value !== null && typeof value === 'object') for (const sub of Object.keys(value)) note(['expect', group, key], sub);
    }
  }
  scenarioLocations.set(scenario, found);
}

/** Parses scenario text (JSON when it starts with "{", else YAML) and validates it. Throws ScenarioError. */
export function parseScenario(text: string, source = 'scenario'): Scenario {
  const problems: ScenarioProblem[] = [];
  if (typeof text !== 'string') throw new ScenarioError(source, [{ path: '', message: `the scenario is ${text === null ? 'null' : typeof text}; expected its text (YAML or JSON)` }]);
  // bounds first, before any parser sees the text (limits.ts)
  if (text.length > SCENARIO_LIMITS.fileBytes || utf8Bytes(text) > SCENARIO_LIMITS.fileBytes) {
    throw new ScenarioError(source, [{ path: '', message: fileTooLarge(utf8Bytes(text)) }]);
  }
  const nesting = nestingProblem(text);
  if (nesting) throw new ScenarioError(source, [{ path: '', ...where(text, nesting.offset), message: nesting.message }]);
  const trimmed = text.trimStart();
  const isJson = /\.json$/i.test(source) || trimmed.startsWith('{');
  if (isJson) {
    try { JSON.parse(text); } catch (error) {
      const message = (error as Error).message;
      const m = /position (\d+)/.exec(message);
      let line: number | undefined, column: number | undefined;
      if (m) { const before = text.slice(0, Number(m[1])).split('\n'); line = before.length; column = before[before.length - 1].length + 1; }
      else {
        // Node 20 does not always say where: find the quoted context it shows, or the end of input.
        const context = /"(?:\.\.\.)?([^]*?)(?:\.\.\.)?" is not valid JSON/.exec(message)?.[1];
        const token = /Unexpected token '([^]*?)'/.exec(message)?.[1];
        let offset = /end of JSON input/.test(message) ? text.trimEnd().length : -1;
        if (context) {
          const at = text.indexOf(context);
          if (at >= 0) offset = at + (token ? Math.max(0, context.lastIndexOf(token)) : 0);
        }
        if (offset >= 0) { const before = text.slice(0, offset).split('\n'); line = before.length; column = before[before.length - 1].length + 1; }
      }
      throw new ScenarioError(source, [{ path: '', line, column, message: `malformed JSON: ${message}` }]);
    }
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, intAsBigInt: true, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length) {
    throw new ScenarioError(source, doc.errors.map((e) => {
      const p = lines.linePos(e.pos[0]);
      const message = e.code === 'RESOURCE_EXHAUSTION' || /call stack/i.test(e.message)
        ? `the file nests too deeply for the YAML parser; expected a scenario nested at most ${SCENARIO_LIMITS.depth} levels (a scenario file's limit)`
        : e.code === 'MULTIPLE_DOCS' ? 'the file holds more than one YAML document (a "---" line between them); expected one scenario per file'
        : `malformed ${isJson ? 'JSON' : 'YAML'}: ${e.message.split('\n')[0]}`;
      return { path: '', line: p.line, column: p.col, message };
    }));
  }
  const bounds = treeProblems(doc, lines);
  if (bounds.length) throw new ScenarioError(source, bounds);
  let js: unknown;
  try {
    js = doc.toJS({ maxAliasCount: SCENARIO_LIMITS.aliases });
  } catch (error) {
    // yaml's own alias guard, behind ours: name the first alias
    let first: { range?: [number, number, number]; source?: string } | undefined;
    const find = (node: unknown): void => { if (first || !node || typeof node !== 'object') return; if (isAlias(node)) { first = node as never; return; } if (isCollection(node)) for (const item of node.items) { if (isPair(item)) { find(item.key); find(item.value); } else find(item); } };
    find(doc.contents);
    throw new ScenarioError(source, [{ path: '', ...(first?.range ? where(lines, first.range[0]) : {}), message: `the YAML aliases expand too far (${(error as Error).message}); expected at most ${SCENARIO_LIMITS.aliases} alias uses (a scenario file's limit)` }]);
  }
  const data = normaliseNumbers(js);
  if (data === null || data === undefined) throw new ScenarioError(source, [{ path: '', message: 'the file is empty; expected a scenario: a map with at least name, machine and processes' }]);
  const locate = new Locator(doc, lines);
  const validate = validator();
  if (!validate(data)) {
    for (const error of validate.errors ?? []) problems.push(schemaProblem(error, locate));
  }
  if (problems.length === 0) problems.push(...semanticProblems(data as Scenario, locate));
  else {
    // Also report broken references and the like in the parts the schema accepted.
    try {
      const related = (a: string, b: string) => a === b || a.startsWith(b + '.') || a.startsWith(b + '[') || b.startsWith(a + '.') || b.startsWith(a + '[');
      const extra = semanticProblems(data as Scenario, locate).filter((x) => !problems.some((p) => related(p.path, x.path)));
      problems.push(...extra);
    } catch { /* the shape is too broken to check further; the schema problems say why */ }
  }
  if (problems.length) {
    const seen = new Set<string>();
    const unique = problems.filter((p) => !seen.has(p.message) && seen.add(p.message));
    unique.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
    throw new ScenarioError(source, unique);
  }
  rememberLocations(data as Scenario, locate);
  return data as Scenario;
}

function segmentsOf(instancePath: string): Segment[] {
  if (!instancePath) return [];
  return instancePath.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')).map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

function schemaProblem(error: ErrorObject, locate: Locator): ScenarioProblem {
  const segments = segmentsOf(error.instancePath);
  const path = pathText(segments);
  const parent = error.parentSchema as { properties?: Record<string, unknown>; description?: string } | undefined;
  const known = parent?.properties ? Object.keys(parent.properties).filter((k) => k !== '$schema') : [];
  const value = error.data;
  let message: string;
  let key: string | undefined;
  switch (error.keyword) {
    case 'additionalProperties': {
      key = (error.params as { additionalProperty: string }).additionalProperty;
      message = `${path} has unknown key ${JSON.stringify(key)}; expected only ${known.map((k) => JSON.stringify(k)).join(', ')}`;
      break;
    }
    case 'required': {
      const missing = (error.params as { missingProperty: string }).missingProperty;
      message = `${path} is missing ${JSON.stringify(missing)}; it is required`;
      break;
    }
    case 'minProperties': case 'maxProperties': {
      const names = known.filter((k) => k !== 'atNs');
      message = `${path} is ${show(value)}; expected ${known.includes('atNs') ? '"atNs" and ' : ''}exactly one of ${names.map((k) => JSON.stringify(k)).join(', ')}`;
      break;
    }
    case 'enum':
      message = `${path} is ${show(value)}; expected one of ${(error.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
      break;
    case 'type': {
      const t = (error.params as { type: string | string[] }).type;
      const expected = parent?.description && /^an? /.test(parent.description) ? parent.description
        : typeof value === 'number' && !Number.isFinite(value) ? `a finite ${Array.isArray(t) ? t.join(' or ') : t}`
        : Array.isArray(t) ? t.join(' or ') : t === 'object' ? 'an object (a map of keys)' : t === 'array' ? 'a list' : `a${/^[aeiou]/.test(t) ? 'n' : ''} ${t}`;
      message = `${path} is ${show(value)}; expected ${expected}`;
      break;
    }
    case 'minimum': case 'maximum': case 'exclusiveMinimum': case 'exclusiveMaximum': {
      const p = error.params as { comparison: string; limit: number };
      const what = p.limit === Number.MAX_SAFE_INTEGER ? ' (2^53 − 1: for times, the largest virtual time holds exactly)' : '';
      message = `${path} is ${show(value)}; expected ${p.comparison === '>=' ? 'at least' : p.comparison === '<=' ? 'at most' : p.comparison} ${p.limit}${what}`;
      break;
    }
    case 'minItems': case 'maxItems': {
      const limit = (error.params as { limit: number }).limit;
      message = `${path} has ${Array.isArray(value) ? value.length : '?'} items; expected ${error.keyword === 'minItems' ? 'at least' : 'at most'} ${limit}`;
      break;
    }
    case 'multipleOf':
      message = `${path} is ${show(value)}; expected a multiple of ${(error.params as { multipleOf: number }).multipleOf}`;
      break;
    case 'pattern':
      message = `${path} is ${show(value)}; expected ${parent?.description ?? `text matching ${(error.params as { pattern: string }).pattern}`}`;
      break;
    case 'anyOf':
      message = `${path} is ${show(value)}; expected one of "woken", "satisfiedAtOnce", "timedOut", "pending", "deviceRemoved", "adapterStopped", "objectDestroyed", or { outcome, index?, atNs? }`;
      break;
    default:
      message = `${path} is ${show(value)}; expected a value that ${error.message}`;
  }
  return { path, ...locate.at(segments, key), message };
}

// ── checks beyond the schema ──

const UINT64_MAX = 0xffff_ffff_ffff_ffffn;
export function toValue(raw: number | string): bigint { return BigInt(raw); }

/**
 * The checks a scenario file needs beyond its schema (semanticProblems): names that must be unique and references
 * that must resolve, who may name which fence and allocation, commands and steps that make sense where they are,
 * expectations the scenario can meet, and rings long enough for its submissions. Each problem names its path.
 */
class SemanticCheck {
  readonly problems: ScenarioProblem[] = [];
  readonly adapters: Map<string, number>;
  readonly processes: Map<string, number>;
  readonly fences: Map<string, number>;
  readonly queues: Map<string, number>;
  readonly allocations: Map<string, number>;
  readonly threads: Map<string, number>;
  // fences: who can name which fence
  readonly fenceOwners = new Map<string, Set<string>>();
  readonly fenceAdapter = new Map<string, string>();
  readonly fenceKind = new Map<string, 'native' | 'monitored'>();
  /** Adapters each fence is opened on (its own first, then fences[].crossAdapter). */
  readonly fenceAdapters = new Map<string, string[]>();
  /** The values each fence can ever hold (for impossible expectations). */
  readonly reachable = new Map<string, Set<bigint>>();
  /** Fences whose values are in doubt (a value was rejected): no "can never hold" verdict on them. */
  readonly doubtful = new Set<string>();
  readonly allocationInfo = new Map<string, { process: string; adapter: string }>();
  /** Whether the queue of the commands being checked has a progress fence. */
  queueHasProgress = false;
  readonly queueAdapter = new Map<string, { adapter: string; process: string; kind: 'hardware' | 'kernelMode'; progress: boolean }>();
  readonly reads = new Map<string, number>();
  readonly waits = new Map<string, { segments: Segment[]; timeoutNs?: number; fences: string[]; values: (number | string)[]; any: boolean }>();
  readonly removed = new Set<string>();

  constructor(readonly s: Scenario, readonly locate: Locator) {
    this.adapters = this.unique(s.machine.adapters, 'machine', 'adapters');
    this.processes = this.unique(s.processes, 'processes');
    this.fences = this.unique(s.fences, 'fences');
    this.queues = this.unique(s.queues, 'queues');
    this.allocations = this.unique(s.allocations, 'allocations');
    this.threads = this.unique(s.threads, 'threads');
  }

  /** Every check, in the file's order. */
  run(): ScenarioProblem[] {
    const s = this.s;
    this.checkMachine();
    this.checkFences();
    for (const f of s.fences ?? []) { this.reachable.set(f.name, new Set()); this.reach(f.name, f.initialValue ?? 0); }
    this.checkAllocations();
    this.checkQueues();
    this.checkThreads();
    this.checkFaults();
    if (s.expect) {
      this.expectValues(s.expect);
      this.expectNamesAndLiveness(s.expect);
    }
    this.checkRings();
    return this.problems;
  }

  add(segments: Segment[], message: string, key?: string): void { this.problems.push({ path: pathText(segments), ...this.locate.at(segments, key), message }); }
  unsupported(feature: FeatureName, segments: Segment[], key?: string): void {
    const at = key ? [...segments, key] : segments;
    if (!FEATURES[feature]) this.add(at, `${pathText(at)}: ${FEATURE_TEXT[feature]} not supported by this build yet`);
  }
  unique(list: { name: string }[] | undefined, ...where: Segment[]): Map<string, number> {
    const names = new Map<string, number>();
    const what = pathText(where);
    (list ?? []).forEach((item, i) => {
      if (names.has(item.name)) this.add([...where, i, 'name'], `${what}[${i}].name is ${show(item.name)}; expected a name no other item of ${what} has (${what}[${names.get(item.name)}] has it)`);
      else names.set(item.name, i);
    });
    return names;
  }
  ref(segments: Segment[], name: string, names: Map<string, number>, what: string): boolean {
    if (!names.has(name)) this.add(segments, `${pathText(segments)} is ${show(name)}; expected the name of one of the ${what}${names.size ? ` (${[...names.keys()].map((n) => JSON.stringify(n)).join(', ')})` : ', but the scenario defines none'}`);
    return names.has(name);
  }

  private checkMachine(): void {
    const s = this.s;
    if (s.machine.workers) this.unsupported('workers', ['machine'], 'workers');
    const processLimit = s.machine.limits?.processes ?? DEFAULT_PROCESS_LIMIT;
    if (s.processes.length > processLimit) {
      this.add(['processes', processLimit], `processes has ${s.processes.length} items; expected at most ${processLimit}, the processes the machine holds (machine.limits.processes${s.machine.limits?.processes === undefined ? `, default ${DEFAULT_PROCESS_LIMIT}` : ''}; it may be raised to ${SCENARIO_LIMITS.processes})`);
    }
    // GPU commands in all (queues and submit steps): each list is bounded by the schema, the whole file here
    let total = 0, reported = false;
    const count = (n: number, segments: Segment[]) => {
      total += n;
      if (total > SCENARIO_LIMITS.commands && !reported) {
        reported = true;
        this.add(segments, `${pathText(segments)} brings the scenario to more than ${SCENARIO_LIMITS.commands} GPU commands in all (queues and submit steps); expected at most ${SCENARIO_LIMITS.commands} (a scenario file's limit)`);
      }
    };
    (s.queues ?? []).forEach((q, i) => count(q.commands?.length ?? 0, ['queues', i, 'commands']));
    (s.threads ?? []).forEach((t, i) => t.steps.forEach((step, k) => { if (step.submit) count(step.submit.commands.length, ['threads', i, 'steps', k, 'submit', 'commands']); }));
  }

  adapterNative(name: string): boolean {
    const a = this.s.machine.adapters.find((x) => x.name === name);
    return this.s.machine.os?.nativeFence !== false && a?.caps?.nativeGpuFence !== false;
  }
  /** What a fence is on an adapter: a cross-adapter fence is native where native fences are supported, monitored elsewhere (XA-05). */
  kindOn(fence: string, adapter: string | undefined): 'native' | 'monitored' | undefined {
    return adapter === undefined || adapter === this.fenceAdapter.get(fence) ? this.fenceKind.get(fence) : this.adapterNative(adapter) ? 'native' : 'monitored';
  }

  private checkFences(): void {
    const s = this.s;
    (s.fences ?? []).forEach((f, i) => {
      this.ref(['fences', i, 'process'], f.process, this.processes, 'processes');
      this.ref(['fences', i, 'adapter'], f.adapter, this.adapters, 'adapters');
      if (f.kind === 'monitored') this.unsupported('monitoredFences', ['fences', i], 'kind');
      if (f.crossAdapter) this.unsupported('crossAdapterFences', ['fences', i], 'crossAdapter');
      if (f.initialValue !== undefined) this.checkValue(['fences', i, 'initialValue'], f.initialValue);
      if (f.type === 'INTRA_GPU' && f.flags?.crossAdapter) this.add(['fences', i, 'type'], `fences[${i}].type is "INTRA_GPU"; expected "DEFAULT" for a fence with flags.crossAdapter`);
      const owners = new Set([f.process]);
      (f.sharedWith ?? []).forEach((p, j) => {
        if (this.ref(['fences', i, 'sharedWith', j], p, this.processes, 'processes')) owners.add(p);
        if (p === f.process) this.add(['fences', i, 'sharedWith', j], `fences[${i}].sharedWith[${j}] is ${show(p)}; expected another process than the one that creates the fence`);
      });
      if (f.kind !== 'monitored' && f.crossAdapter?.length && !this.adapterNative(f.adapter)) this.add(['fences', i, 'adapter'], `fences[${i}].adapter is ${show(f.adapter)}, which has no native fence support; expected a native fence to be created on an adapter that supports them (or kind: monitored, opened as a native fence elsewhere)`);
      if (f.sharedWith?.length && !f.flags?.shared && !f.flags?.ntSecuritySharing) this.add(['fences', i, 'sharedWith'], `fences[${i}].sharedWith lists processes but the fence is not shareable; expected flags.shared: true (or ntSecuritySharing)`);
      this.fenceOwners.set(f.name, owners);
      this.fenceAdapter.set(f.name, f.adapter);
      this.fenceKind.set(f.name, f.kind ?? 'native');
      this.fenceAdapters.set(f.name, [f.adapter, ...(f.crossAdapter ?? [])]);
      (f.crossAdapter ?? []).forEach((other, j) => {
        this.ref(['fences', i, 'crossAdapter', j], other, this.adapters, 'adapters');
        if (other === f.adapter) this.add(['fences', i, 'crossAdapter', j], `fences[${i}].crossAdapter[${j}] is ${show(other)}; expected another adapter than the one that creates the fence`);
      });
      if (f.crossAdapter?.length && (!f.flags?.shared || !f.flags?.crossAdapter)) {
        this.add(['fences', i, 'crossAdapter'], `fences[${i}].crossAdapter lists adapters but the fence is not a cross-adapter fence; expected flags: { shared: true, crossAdapter: true }`);
      }
      if (f.kind === 'monitored' && !f.crossAdapter?.length) {
        if (f.sharedWith?.length) this.add(['fences', i, 'sharedWith'], `fences[${i}].sharedWith: shared monitored fences are not modelled; expected a native fence for sharing between processes`);
        for (const flag of ['shared', 'ntSecuritySharing', 'crossAdapter'] as const) {
          if (f.flags?.[flag]) this.add(['fences', i, 'flags', flag], `fences[${i}].flags.${flag} is true; expected false for a monitored fence that is not opened on another adapter (shared monitored fences are modelled only as cross-adapter fences)`);
        }
      }
      if (f.kind === 'monitored') {
        if (f.type !== undefined) this.add(['fences', i, 'type'], `fences[${i}].type is ${show(f.type)}; expected no type for a monitored fence (DEFAULT and INTRA_GPU are native fence types)`);
      }
    });
  }

  checkValue(segments: Segment[], raw: number | string): void {
    let value: bigint;
    try { value = BigInt(raw); } catch { this.add(segments, `${pathText(segments)} is ${show(raw)}; expected a 64-bit unsigned value`); return; }
    if (value > UINT64_MAX) this.add(segments, `${pathText(segments)} is ${show(raw)}; expected a 64-bit unsigned value (at most 18446744073709551615)`);
  }

  reach(fence: string, raw: unknown): void {
    const v = valueOf(raw);
    if (v === undefined) this.doubtful.add(fence); else this.reachable.get(fence)?.add(v);
  }

  fenceRef(segments: Segment[], fence: string, process: string, adapter?: string): boolean {
    if (!this.ref(segments, fence, this.fences, 'fences')) return false;
    if (!this.fenceOwners.get(fence)!.has(process)) {
      this.add(segments, `${pathText(segments)} is ${show(fence)}, which process ${show(process)} has no handle to; expected a fence it creates or one listed with sharedWith: [${process}]`);
      return false;
    }
    if (adapter !== undefined && !this.fenceAdapters.get(fence)!.includes(adapter)) {
      this.add(segments, `${pathText(segments)} is ${show(fence)}, a fence on adapter ${show(this.fenceAdapter.get(fence))}; expected a fence opened on the queue's adapter ${show(adapter)} (list it in the fence's crossAdapter to open it there)`);
      return false;
    }
    return true;
  }

  private checkAllocations(): void {
    const s = this.s;
    (s.allocations ?? []).forEach((x, i) => {
      this.ref(['allocations', i, 'process'], x.process, this.processes, 'processes');
      this.ref(['allocations', i, 'adapter'], x.adapter, this.adapters, 'adapters');
      this.allocationInfo.set(x.name, { process: x.process, adapter: x.adapter });
    });
  }

  allocationRef(segments: Segment[], name: string, process: string, adapter?: string): boolean {
    if (!this.ref(segments, name, this.allocations, 'allocations')) return false;
    const info = this.allocationInfo.get(name)!;
    if (info.process !== process) { this.add(segments, `${pathText(segments)} is ${show(name)}, an allocation of process ${show(info.process)}; expected one of process ${show(process)}`); return false; }
    if (adapter !== undefined && info.adapter !== adapter) { this.add(segments, `${pathText(segments)} is ${show(name)}, an allocation on adapter ${show(info.adapter)}; expected one on the queue's adapter ${show(adapter)}`); return false; }
    return true;
  }

  commands(list: GpuCommand[], base: Segment[], process: string, adapter: string | undefined, queueKind: 'hardware' | 'kernelMode'): void {
    const kindCheck = (segments: Segment[], fence: string, op: string) => {
      const kind = this.kindOn(fence, adapter);
      if (queueKind === 'kernelMode' && kind !== 'monitored') this.add(segments, `${pathText(segments)} is ${show(fence)}, a native fence${adapter !== this.fenceAdapter.get(fence) ? ` on ${show(adapter)}` : ''}; expected a monitored fence (a kernelMode queue ${op}s monitored fences; native fences belong in hardware queues)`);
    };
    list.forEach((c, k) => {
      if (c.wait && this.fenceRef([...base, k, 'wait', 'fence'], c.wait.fence, process, adapter)) kindCheck([...base, k, 'wait', 'fence'], c.wait.fence, 'wait');
      if (c.wait) this.checkValue([...base, k, 'wait', 'value'], c.wait.value);
      if (c.signal) {
        if (this.fenceRef([...base, k, 'signal', 'fence'], c.signal.fence, process, adapter)) { this.reach(c.signal.fence, c.signal.value); kindCheck([...base, k, 'signal', 'fence'], c.signal.fence, 'signal'); }
        this.checkValue([...base, k, 'signal', 'value'], c.signal.value);
      }
      if (c.fenceWrite) {
        if (queueKind !== 'kernelMode') this.add([...base, k], `${pathText([...base, k])} is a fenceWrite; expected wait, signal or work (fenceWrite is for kernelMode queues: a hardware queue signals with signal)`, 'fenceWrite');
        if (this.fenceRef([...base, k, 'fenceWrite', 'fence'], c.fenceWrite.fence, process, adapter)) {
          this.reach(c.fenceWrite.fence, c.fenceWrite.value);
          if (this.kindOn(c.fenceWrite.fence, adapter) !== 'monitored') this.add([...base, k, 'fenceWrite', 'fence'], `${pathText([...base, k, 'fenceWrite', 'fence'])} is ${show(c.fenceWrite.fence)}, a native fence; expected a monitored fence (the GPU writes a monitored fence's value)`);
        }
        this.checkValue([...base, k, 'fenceWrite', 'value'], c.fenceWrite.value);
      }
      if (c.useAllocation) {
        this.unsupported('allocations', [...base, k], 'useAllocation');
        this.allocationRef([...base, k, 'useAllocation', 'allocation'], c.useAllocation.allocation, process, adapter);
        if (queueKind === 'hardware' && !this.queueHasProgress) this.add([...base, k, 'useAllocation'], `${pathText([...base, k, 'useAllocation'])} is in a hardware queue without a progress fence; expected progressFence: true on the queue (the model completes a submission's allocation accesses at its progress fence)`);
      }
    });
  }

  private checkQueues(): void {
    const s = this.s;
    (s.queues ?? []).forEach((q, i) => {
      this.ref(['queues', i, 'process'], q.process, this.processes, 'processes');
      if (this.ref(['queues', i, 'adapter'], q.adapter, this.adapters, 'adapters')) {
        const engines = s.machine.adapters[this.adapters.get(q.adapter)!].engines ?? 2;
        if ((q.engine ?? 0) >= engines) this.add(['queues', i, 'engine'], `queues[${i}].engine is ${q.engine}; expected 0 to ${engines - 1} (adapter ${show(q.adapter)} has ${counted(engines, 'engine')})`);
      }
      if (q.kind === 'kernelMode') this.unsupported('kernelModeContexts', ['queues', i], 'kind');
      if (q.kind === 'kernelMode' && q.progressFence !== undefined) this.add(['queues', i, 'progressFence'], `queues[${i}].progressFence is ${show(q.progressFence)}; expected no progressFence on a kernelMode queue (progress fences belong to hardware queues)`);
      this.queueAdapter.set(q.name, { adapter: q.adapter, process: q.process, kind: q.kind ?? 'hardware', progress: q.progressFence ?? false });
      this.queueHasProgress = q.progressFence ?? false;
      this.commands(q.commands ?? [], ['queues', i, 'commands'], q.process, q.adapter, q.kind ?? 'hardware');
    });
    if (s.allocations?.length) this.unsupported('allocations', [], 'allocations');
  }

  private checkThreads(): void {
    (this.s.threads ?? []).forEach((t, i) => {
      this.ref(['threads', i, 'process'], t.process, this.processes, 'processes');
      const locked = new Set<string>();
      t.steps.forEach((step: ThreadStep, k) => this.checkStep(t, i, step, k, locked));
    });
  }

  /** Step `k` of thread `t` (threads[i]); `locked`: the allocations the thread holds locked there. */
  private checkStep(t: NonNullable<Scenario['threads']>[number], i: number, step: ThreadStep, k: number, locked: Set<string>): void {
    const base: Segment[] = ['threads', i, 'steps', k];
    for (const op of ['lock', 'unlock', 'cpuWrite', 'cpuRead', 'destroyAllocation', 'makeResident', 'evict'] as const) {
      const body = step[op];
      if (!body) continue;
      if (!this.allocationRef([...base, op, 'allocation'], body.allocation, t.process)) continue;
      if (op === 'lock') locked.add(body.allocation);
      if (op === 'unlock') locked.delete(body.allocation);
      if ((op === 'cpuWrite' || op === 'cpuRead') && !locked.has(body.allocation)) {
        this.add([...base, op, 'allocation'], `${pathText([...base, op, 'allocation'])} is ${show(body.allocation)}, which this thread has not locked here; expected a lock: { allocation: ${body.allocation} } step before it (CPU accesses go through the Lock2 mapping)`);
      }
      if (op === 'cpuRead') {
        const id = step.cpuRead!.id;
        if (this.reads.has(id) || this.waits.has(id)) this.add([...base, 'cpuRead', 'id'], `${pathText([...base, 'cpuRead', 'id'])} is ${show(id)}; expected an id no other step has`);
        this.reads.set(id, step.cpuRead!.length);
      }
    }
    const w = step.wait ?? step.waitWithEvent;
    if (w) {
      const key = step.wait ? 'wait' : 'waitWithEvent';
      if (w.values.length !== w.fences.length) this.add([...base, key, 'values'], `${pathText([...base, key, 'values'])} has ${w.values.length} values; expected ${w.fences.length}, one per fence`);
      w.fences.forEach((f, j) => this.fenceRef([...base, key, 'fences', j], f, t.process));
      w.values.forEach((v, j) => this.checkValue([...base, key, 'values', j], v));
      if (w.id !== undefined) {
        if (this.waits.has(w.id)) this.add([...base, key, 'id'], `${pathText([...base, key, 'id'])} is ${show(w.id)}; expected an id no other wait has`);
        this.waits.set(w.id, { segments: [...base, key], timeoutNs: w.timeoutNs, fences: w.fences, values: w.values, any: w.any ?? false });
      }
    }
    if (step.signal) {
      if (step.signal.values.length !== step.signal.fences.length) this.add([...base, 'signal', 'values'], `${pathText([...base, 'signal', 'values'])} has ${step.signal.values.length} values; expected ${step.signal.fences.length}, one per fence`);
      step.signal.fences.forEach((f, j) => {
        if (this.fenceRef([...base, 'signal', 'fences', j], f, t.process)) this.reach(f, step.signal!.values[j]);
      });
      step.signal.values.forEach((v, j) => this.checkValue([...base, 'signal', 'values', j], v));
    }
    if (step.submit) {
      const q = this.queueAdapter.get(step.submit.queue);
      if (this.ref([...base, 'submit', 'queue'], step.submit.queue, this.queues, 'queues') && q) {
        if (q.process !== t.process) this.add([...base, 'submit', 'queue'], `${pathText([...base, 'submit', 'queue'])} is ${show(step.submit.queue)}, a queue of process ${show(q.process)}; expected a queue of the thread's process ${show(t.process)}`);
        this.queueHasProgress = q.progress;
        this.commands(step.submit.commands, [...base, 'submit', 'commands'], t.process, q.adapter, q.kind);
      }
    }
    if (step.destroyFence) this.fenceRef([...base, 'destroyFence', 'fence'], step.destroyFence.fence, t.process);
    if (step.recreateLogBuffer) {
      const q = this.queueAdapter.get(step.recreateLogBuffer.queue);
      if (this.ref([...base, 'recreateLogBuffer', 'queue'], step.recreateLogBuffer.queue, this.queues, 'queues') && q) {
        if (q.kind !== 'hardware') this.add([...base, 'recreateLogBuffer', 'queue'], `${pathText([...base, 'recreateLogBuffer', 'queue'])} is ${show(step.recreateLogBuffer.queue)}, a kernelMode queue; expected a hardware queue (only user-mode-submission queues have log buffers)`);
        else if (q.process !== t.process) this.add([...base, 'recreateLogBuffer', 'queue'], `${pathText([...base, 'recreateLogBuffer', 'queue'])} is ${show(step.recreateLogBuffer.queue)}, a queue of process ${show(q.process)}; expected a queue of the thread's process ${show(t.process)}`);
      }
    }
    if (step.lock) this.unsupported('allocations', base, 'lock');
    if (step.unlock) this.unsupported('allocations', base, 'unlock');
  }

  private checkFaults(): void {
    const s = this.s;
    (s.faults ?? []).forEach((f, i) => {
      if (f.removeDevice && this.ref(['faults', i, 'removeDevice', 'adapter'], f.removeDevice.adapter, this.adapters, 'adapters')) this.removed.add(f.removeDevice.adapter);
      if (f.removeAdapter && this.ref(['faults', i, 'removeAdapter', 'adapter'], f.removeAdapter.adapter, this.adapters, 'adapters')) this.removed.add(f.removeAdapter.adapter);
      if (f.collapseInterrupts) { this.ref(['faults', i, 'collapseInterrupts', 'adapter'], f.collapseInterrupts.adapter, this.adapters, 'adapters'); this.unsupported('collapsedInterrupts', ['faults', i], 'collapseInterrupts'); }
      if (f.forceLogOverrun) {
        const o = f.forceLogOverrun, at: Segment[] = ['faults', i, 'forceLogOverrun', 'queue'];
        this.ref(['faults', i, 'forceLogOverrun', 'adapter'], o.adapter, this.adapters, 'adapters');
        this.unsupported('forcedLogOverrun', ['faults', i], 'forceLogOverrun');
        const q = o.queue === undefined ? undefined : this.queueAdapter.get(o.queue);
        if (o.queue !== undefined && this.ref(at, o.queue, this.queues, 'queues') && q) {
          if (q.kind !== 'hardware') this.add(at, `${pathText(at)} is ${show(o.queue)}, a kernelMode queue; expected a hardware queue (only user-mode-submission queues have log buffers)`);
          else if (q.adapter !== o.adapter) this.add(at, `${pathText(at)} is ${show(o.queue)}, a queue of adapter ${show(q.adapter)}; expected a queue of ${show(o.adapter)}`);
        }
      }
    });
    for (const f of s.fences ?? []) if (this.removed.has(f.adapter) && !f.flags?.noSignalMaxValueOnTdr) this.reachable.get(f.name)!.add(UINT64_MAX);
  }

  /** Expected fence values and wait outcomes the scenario can reach. */
  private expectValues(e: NonNullable<Scenario['expect']>): void {
    for (const [name, raw] of Object.entries(e.fences ?? {})) {
      const segments: Segment[] = ['expect', 'fences', name];
      if (!this.ref(segments, name, this.fences, 'fences')) continue;
      this.checkValue(segments, raw);
      let value: bigint; try { value = BigInt(raw); } catch { continue; }
      const can = this.reachable.get(name)!;
      if (!can.has(value) && !this.doubtful.has(name)) {
        this.add(segments, `expect.fences.${name} is ${show(raw)}, a value fence ${show(name)} can never hold; expected one of the values it starts with or is signalled to: ${[...can].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map(String).join(', ')}`);
      }
    }
    for (const [id, raw] of Object.entries(e.waits ?? {})) {
      const segments: Segment[] = ['expect', 'waits', id];
      const wait = this.waits.get(id);
      if (!wait) { this.add(segments, `expect.waits has ${show(id)}; expected the id of a thread wait${this.waits.size ? ` (${[...this.waits.keys()].map((n) => JSON.stringify(n)).join(', ')})` : ' (give a wait an id: to name it)'}`, id); continue; }
      const outcome = typeof raw === 'string' ? raw : raw.outcome;
      if (outcome === 'woken' || outcome === 'satisfiedAtOnce') {
        // each fence can reach the value it is waited for? (wait-all: every one; wait-any: at least one)
        const reaches = wait.fences.map((f, j) => {
          if (this.doubtful.has(f) || !this.reachable.has(f)) return true;
          const want = valueOf(wait.values[j]);
          return want === undefined || [...this.reachable.get(f)!].some((v) => v >= want);
        });
        if (wait.any ? !reaches.some(Boolean) : !reaches.every(Boolean)) {
          const never = wait.fences.map((f, j) => (reaches[j] ? '' : `${f} never reaches ${wait.values[j]}`)).filter(Boolean).join(', ');
          this.add(segments, `expect.waits.${id} is ${show(outcome)}, but nothing in the scenario can satisfy that wait (${never}); expected "timedOut" or "pending", or a signal that reaches the value`);
        }
      }
      if (outcome === 'timedOut' && wait.timeoutNs === undefined) this.add(segments, `expect.waits.${id} is "timedOut", but that wait has no timeoutNs; expected an outcome an infinite wait can have`);
      if (typeof raw === 'object' && raw.index !== undefined && raw.index >= wait.fences.length) this.add([...segments, 'index'], `expect.waits.${id}.index is ${raw.index}; expected 0 to ${wait.fences.length - 1} (the wait names ${counted(wait.fences.length, 'fence')})`);
    }
  }

  /** Expectations that name adapters, allocations, reads, threads and queues; and liveness: a run that ends stuck fails unless the file says so. */
  private expectNamesAndLiveness(e: NonNullable<Scenario['expect']>): void {
    for (const name of Object.keys(e.interrupts ?? {})) this.ref(['expect', 'interrupts', name], name, this.adapters, 'adapters');
    for (const name of Object.keys(e.allocations ?? {})) this.ref(['expect', 'allocations', name], name, this.allocations, 'allocations');
    for (const [id, bytes] of Object.entries(e.reads ?? {})) {
      const length = this.reads.get(id);
      if (length === undefined) this.add(['expect', 'reads', id], `expect.reads has ${show(id)}; expected the id of a cpuRead step${this.reads.size ? ` (${[...this.reads.keys()].map((n) => JSON.stringify(n)).join(', ')})` : ''}`, id);
      else if (bytes.length !== length * 2) this.add(['expect', 'reads', id], `expect.reads.${id} has ${bytes.length / 2} bytes; expected ${length}, the length that cpuRead reads`);
    }
    for (const name of Object.keys(e.adapters ?? {})) this.ref(['expect', 'adapters', name], name, this.adapters, 'adapters');
    for (const name of Object.keys(e.threads ?? {})) this.ref(['expect', 'threads', name], name, this.threads, 'threads');
    for (const name of Object.keys(e.blockedQueues ?? {})) this.ref(['expect', 'blockedQueues', name], name, this.queues, 'queues');
    // Liveness: a run that ends stuck fails unless the file says so (expect.stuck / expect.deadlock).
    const expectsStuck = e.stuck === true || e.deadlock === true;
    const stuckBy: [Segment[], string][] = [
      ...Object.entries(e.waits ?? {}).filter(([, raw]) => (typeof raw === 'string' ? raw : raw.outcome) === 'pending')
        .map(([id]): [Segment[], string] => [['expect', 'waits', id], `expect.waits.${id} is "pending"`]),
      ...Object.entries(e.threads ?? {}).filter(([, state]) => state === 'blocked')
        .map(([name]): [Segment[], string] => [['expect', 'threads', name], `expect.threads.${name} is "blocked"`]),
      ...Object.entries(e.blockedQueues ?? {}).filter(([, blocked]) => blocked)
        .map(([name]): [Segment[], string] => [['expect', 'blockedQueues', name], `expect.blockedQueues.${name} is true`]),
    ];
    if (!expectsStuck) {
      for (const [segments, what] of stuckBy) this.add(segments, `${what}, so the run ends stuck; expected expect.stuck: true (or expect.deadlock: true) beside it: a run that ends stuck fails unless the file expects it`);
    }
    if (e.stuck === false && e.deadlock === true) this.add(['expect', 'deadlock'], 'expect.deadlock is true but expect.stuck is false; expected expect.stuck: true or left out (a deadlocked run is stuck)');
    // Timed-only expectations name expectations of this file.
    for (const path of Object.keys(e.timedOnly ?? {})) {
      const [group, ...rest] = path.split('.');
      const entry = rest.join('.');
      const section = (e as Record<string, unknown>)[group];
      const named = group !== 'timedOnly' && section !== undefined
        && (entry === '' || (section !== null && typeof section === 'object' && Object.prototype.hasOwnProperty.call(section, entry)));
      if (!named) {
        this.add(['expect', 'timedOnly'], `expect.timedOnly has ${show(path)}; expected an expectation of this file: a group of expect (${Object.keys(e).filter((k) => k !== 'timedOnly').map((k) => JSON.stringify(k)).join(', ') || 'none'}) or one of its entries, as group.entry`, path);
      }
    }
  }

  private checkRings(): void {
    const s = this.s;
    // a ring the file makes shorter than one of its submissions (rings.ts): the key to raise, and the list
    longestSubmissions(s).forEach((longest, i) => {
      const ringEntries = s.machine.adapters[i].limits?.ringEntries;
      if (longest && ringEntries !== undefined && longest.commands > ringEntries) {
        this.add(['machine', 'adapters', i, 'limits', 'ringEntries'], `machine.adapters[${i}].limits.ringEntries is ${ringEntries}, but ${longest.path} puts ${counted(longest.commands, 'command')} into one hardware queue's ring in one submission; expected at least ${longest.commands} (or leave it out: the runner then makes each ring as long as the longest submission)`);
      }
    });
  }
}

/** A 64-bit unsigned value, or undefined. */
const valueOf = (raw: unknown): bigint | undefined => {
  try { const v = BigInt(raw as string); return v >= 0n && v <= UINT64_MAX ? v : undefined; } catch { return undefined; }
};

function semanticProblems(s: Scenario, locate: Locator): ScenarioProblem[] { return new SemanticCheck(s, locate).run(); }
