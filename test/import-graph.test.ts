// Folders are layers (src/README.md): each src/ folder may import only the
// folders its row of LAYERS names (and its own files); nothing may import an
// entry point; there is no import circle, `import type` included; outside
// src/os/ the OS is reached only through its two doors (DOORS: kernel.ts, the
// entry points, and inspect.ts, the read-only views). Also: every folder says
// what it owns and may import (its README.md, which must list exactly its row).
// (The size rules, files and functions, are test/size.test.ts's.)
import { describe, it, expect } from 'vitest';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(root, 'src');

/** The layer table: what each folder of src/ may import (besides its own files). Entry points ('.') import anything. */
const LAYERS: Record<string, readonly string[]> = {
  base: [],
  generated: [],
  core: ['generated'],
  gpu: ['core', 'base'],
  ddi: ['base'],
  driver: ['ddi', 'gpu', 'core', 'base'],
  port: ['ddi', 'base'],
  os: ['port', 'ddi', 'core', 'base'],
  user: ['os', 'ddi', 'core', 'base'],
  machine: ['user', 'os', 'port', 'driver', 'gpu', 'ddi', 'core', 'base'],
  timeline: ['machine', 'os', 'base'],
  workers: ['machine', 'core', 'base'],
  comparisons: ['machine', 'os', 'base'],
  check: ['scenario-files', 'machine', 'user', 'os', 'port', 'ddi', 'driver', 'gpu', 'core', 'base'],
  'scenario-files': ['machine', 'user', 'os', 'timeline', 'generated', 'base'],
  web: ['scenario-files', 'timeline', 'workers', 'machine', 'base'],
  explore: ['scenario-files', 'machine', 'user', 'os', 'driver', 'ddi', 'gpu', 'core', 'timeline', 'base'],
  cli: ['scenario-files', 'comparisons', 'explore', 'check', 'machine', 'driver', 'base'],
};
/** The only files of a folder that other folders may import (its front doors); a folder not listed has none such rule. */
const DOORS: Record<string, readonly string[]> = {
  os: ['os/kernel.ts', 'os/inspect.ts'],
};

const sources = (dir: string): string[] => readdirSync(dir, { withFileTypes: true })
  .flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
const files = sources(SRC).map((f) => relative(SRC, f).split('\\').join('/')).sort();
/** The layer of a file: its first folder under src/, '.' for the entry points at the top. */
const layerOf = (file: string) => (file.includes('/') ? file.split('/')[0] : '.');

/** Static imports and re-exports of a file, `import type` too: the relative module paths, as written. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(SRC, file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const specs: string[] = [];
  for (const m of text.matchAll(/(?:^|[\n;])\s*(?:import|export)\b(?:[^;'"]*?\bfrom\s*)?(['"])([^'"]+)\1/g)) specs.push(m[2]);
  return specs.filter((s) => s.startsWith('.'));
}

/** file → the src/ files it imports (a .js specifier names the .ts file). */
const graph = new Map<string, string[]>();
const unresolved: string[] = [];
for (const file of files) {
  const targets: string[] = [];
  for (const spec of importsOf(file)) {
    const target = normalize(join(dirname(file), spec.replace(/\.js$/, '.ts'))).split('\\').join('/');
    if (!files.includes(target)) unresolved.push(`${file} imports ${spec}, which is no source file`);
    else targets.push(target);
  }
  graph.set(file, targets);
}

/** Every import the layer table or a door forbids, one line each naming the edge and the rule. */
function badImports(): string[] {
  const bad: string[] = [];
  for (const [file, targets] of graph) {
    const from = layerOf(file);
    for (const target of targets) {
      const to = layerOf(target);
      if (from === to) continue;
      if (to === '.') bad.push(`${file} → ${target}: ${target} is an entry point; nothing imports it`);
      else if (from !== '.' && !LAYERS[from].includes(to)) bad.push(`${file} → ${target}: ${from}/ may import ${LAYERS[from].map((l) => `${l}/`).join(', ') || 'nothing'}, not ${to}/`);
      else if (DOORS[to] && !DOORS[to].includes(target)) bad.push(`${file} → ${target}: outside ${to}/ only its doors are imported (${DOORS[to].join(', ')})`);
    }
  }
  return bad;
}

/** Every import circle: the strongly connected components of more than one file (or a file importing itself), with one cycle of each. */
function knots(): { files: string[]; cycle: string[] }[] {
  let index = 0;
  const order = new Map<string, number>(), low = new Map<string, number>(), stack: string[] = [], onStack = new Set<string>();
  const found: { files: string[]; cycle: string[] }[] = [];
  const visit = (v: string) => {
    order.set(v, index); low.set(v, index); index++;
    stack.push(v); onStack.add(v);
    for (const w of graph.get(v)!) {
      if (!order.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, order.get(w)!));
    }
    if (low.get(v) !== order.get(v)) return;
    const component: string[] = [];
    let w: string;
    do { w = stack.pop()!; onStack.delete(w); component.push(w); } while (w !== v);
    if (component.length > 1 || graph.get(v)!.includes(v)) found.push({ files: component.sort(), cycle: cycleIn(new Set(component)) });
  };
  for (const f of files) if (!order.has(f)) visit(f);
  return found;
}

/** One cycle through a strongly connected set of files, from its first file (breadth first: the shortest). */
function cycleIn(component: Set<string>): string[] {
  const start = [...component].sort()[0];
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const v = queue.shift()!;
    for (const w of graph.get(v)!) {
      if (!component.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(previous.get(path[0])!);
        return [...path, start];
      }
      if (!previous.has(w) && w !== start) { previous.set(w, v); queue.push(w); }
    }
  }
  return [start, start];
}

describe('folders are layers (src/README.md)', () => {
  it('every src/ folder has a row in the layer table, and every import resolves to a source file', () => {
    const folders = [...new Set(files.map(layerOf))].filter((l) => l !== '.').sort();
    expect(folders).toEqual(Object.keys(LAYERS).sort());
    expect(unresolved).toEqual([]);
  });

  it('no import goes upward or sideways: each folder imports only what its row allows, nothing imports an entry point, and outside src/os/ only kernel.ts and inspect.ts of it', () => {
    expect(badImports()).toEqual([]);
  });

  it('the table has no circle itself (each row names only folders below it), and no file imports in a circle', () => {
    const below = new Map<string, Set<string>>();
    const reach = (layer: string, seen: string[] = []): Set<string> => {
      if (below.has(layer)) return below.get(layer)!;
      if (seen.includes(layer)) throw new Error(`the layer table has a circle: ${[...seen, layer].join(' → ')}`);
      const all = new Set<string>();
      for (const l of LAYERS[layer]) { all.add(l); for (const r of reach(l, [...seen, layer])) all.add(r); }
      below.set(layer, all);
      return all;
    };
    for (const layer of Object.keys(LAYERS)) expect(reach(layer).has(layer)).toBe(false);
    expect(knots().map((k) => `${k.cycle.join(' → ')} (${k.files.length} files in the knot)`)).toEqual([]);
  });

  /** Runs `check` with `from` importing `to` as well (a planted edge), then takes the edge out again. */
  const planted = <T>(from: string, to: string, check: () => T): T => {
    const before = graph.get(from)!;
    graph.set(from, [...before, to]);
    try { return check(); } finally { graph.set(from, before); }
  };

  it('the check can fail: it finds a planted circle', () => {
    // waits.ts is below interrupts.ts (interrupts imports it): an import back closes a circle.
    const found = planted('os/waits.ts', 'os/interrupts.ts', knots);
    expect(found).toHaveLength(1);
    expect(found[0].files).toEqual(expect.arrayContaining(['os/interrupts.ts', 'os/waits.ts']));
    const cycle = found[0].cycle;
    expect(cycle[0]).toBe(cycle.at(-1));
    planted('os/waits.ts', 'os/interrupts.ts', () => {
      for (let k = 1; k < cycle.length; k++) expect(graph.get(cycle[k - 1])).toContain(cycle[k]); // every step is a real import
    });
    expect(knots()).toEqual([]);
  });

  it('the check can fail: it finds a planted upward import (the OS importing user mode, a tool importing nothing its row names)', () => {
    expect(planted('os/waits.ts', 'user/runtime.ts', badImports)).toEqual(['os/waits.ts → user/runtime.ts: os/ may import port/, ddi/, core/, base/, not user/']);
    expect(planted('timeline/timeline.ts', 'explore/search.ts', badImports)).toEqual(['timeline/timeline.ts → explore/search.ts: timeline/ may import machine/, os/, base/, not explore/']);
    expect(badImports()).toEqual([]);
  });

  it('the check can fail: it finds a planted import of an OS module behind the front door', () => {
    expect(planted('user/runtime.ts', 'os/waits.ts', badImports)).toEqual(['user/runtime.ts → os/waits.ts: outside os/ only its doors are imported (os/kernel.ts, os/inspect.ts)']);
    expect(planted('machine/liveness.ts', 'os/dxgkrnl.ts', badImports)).toEqual(['machine/liveness.ts → os/dxgkrnl.ts: outside os/ only its doors are imported (os/kernel.ts, os/inspect.ts)']);
    // The doors themselves are allowed.
    expect(planted('user/runtime.ts', 'os/inspect.ts', badImports)).toEqual([]);
  });

  it('the layer table keeps the seams: the OS never imports the GPU or a driver, user mode never the port, a driver or the GPU', () => {
    const reachable = (layer: string): Set<string> => {
      const all = new Set<string>(LAYERS[layer]);
      for (const l of LAYERS[layer]) for (const r of reachable(l)) all.add(r);
      return all;
    };
    expect([...reachable('os')].sort()).toEqual(['base', 'core', 'ddi', 'generated', 'port']);
    expect(reachable('os').has('gpu') || reachable('os').has('driver')).toBe(false);
    // User mode's own files import no driver, port or GPU (it reaches the kernel through os/, a driver through ddi/'s interface).
    expect(['gpu', 'driver', 'port', 'machine'].filter((l) => LAYERS.user.includes(l))).toEqual([]);
    expect(reachable('port').has('driver') || reachable('port').has('gpu')).toBe(false);
  });

  it('every folder says what it owns and may import: its README.md names exactly its row', () => {
    for (const [layer, allowed] of Object.entries(LAYERS)) {
      const readme = join(SRC, layer, 'README.md');
      expect(existsSync(readme), `src/${layer}/README.md`).toBe(true);
      const text = readFileSync(readme, 'utf8');
      expect(text, `src/${layer}/README.md`).toMatch(/\*\*Owns\*\*/);
      const may = text.slice(text.indexOf('**May import**')).split('\n\n')[0];
      const named = [...may.matchAll(/`src\/([a-z-]+)\/`/g)].map((m) => m[1]).sort();
      expect(named, `src/${layer}/README.md`).toEqual([...allowed].sort());
    }
  });
});
