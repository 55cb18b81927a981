// Driver modules from files: loadDriverModule(pathOrUrl, { from }) imports an ES module (.mjs or
// .js) and returns the DriverModule it exports, checked (module.ts). What can go wrong is said
// plainly, each as a WddmError (INVALID_PARAMETER) naming the file:
//
//   - no file there (the path as resolved), a folder, or a TypeScript file (compile it first);
//   - the module does not load: a syntax error (with its line, from `node --check`), an import it
//     cannot resolve, or its top-level code throws (the message, and where in the file);
//   - it loads but exports no createDriver (its exports are listed), or a wrong shape.
//
// A module exports `createDriver(context)` (and optionally `name`), or has a default export with
// them. Relative paths resolve against `from` (a folder, or a file: URL such as import.meta.url,
// which resolves like an import) or the working directory. createMachine loads a
// `driver: { module: './x.mjs' }` through this; scenario files resolve theirs against the file.
//
// A module's `import … from 'wddm-fence'` resolves to the running copy of the package, wherever
// the file is (resolve-hook.ts). Node is reached only through dynamic imports, so the library
// bundle still runs in browsers (there a path resolves as a URL against `from` or the page).
//
// A `.wasm` file is a driver built from C (examples/drivers/c/): its bytes go to wasm-driver.ts, which
// checks, guards and compiles it; the same errors name what is wrong with it.

import { WddmError, invalid, show } from '../base/errors.js';
import * as v from '../base/validate.js';
import { checkDriverModule, type DriverModule } from './module.js';
import { resolvePackageToRunningCopy, type PackageResolution } from './resolve-hook.js';
import { loadWasmDriverModule } from './wasm-driver.js';

export interface LoadDriverModuleOptions {
  /** The folder relative paths resolve against, or a file: URL (import.meta.url) to resolve like an import. Default: the working directory. */
  from?: string | URL;
}

/** A URL with a scheme of two letters or more ("file:", "data:", "https:"); "C:\…" stays a path. */
const HAS_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]+:/;
const isNode = () => typeof process !== 'undefined' && typeof process.versions?.node === 'string';
const failed = (message: string, value: unknown) =>
  new WddmError('INVALID_PARAMETER', message, { parameter: 'driver module', value, expected: 'an ES module (.mjs or .js) exporting createDriver(context) (docs/DRIVERS.md)' });

/** Where the module is: the URL to import, the file on disk (Node, file: URLs), and how to name it in messages. */
interface Located { url: string; file?: string; shown: string; baseName: string }

async function locate(pathOrUrl: string | URL, from: string | URL | undefined): Promise<Located> {
  const spec = pathOrUrl instanceof URL ? pathOrUrl.href : pathOrUrl;
  const baseName = (spec.split(/[\\/]/).pop() ?? spec).replace(/\.(mjs|js|wasm)$/i, '') || 'module';
  if (!isNode()) {
    const base = from instanceof URL ? from.href : from ?? (globalThis as { location?: { href: string } }).location?.href;
    let url: string;
    try { url = new URL(spec, base).href; } catch {
      throw failed(`driver module ${JSON.stringify(spec)} is no URL here (relative to ${base === undefined ? 'nothing: give options.from' : JSON.stringify(base)})`, spec);
    }
    return { url, shown: JSON.stringify(spec), baseName };
  }
  const { resolve, dirname } = await import('node:path');
  const { pathToFileURL, fileURLToPath } = await import('node:url');
  let file: string;
  if (HAS_SCHEME.test(spec)) {
    if (!spec.startsWith('file:')) return { url: spec, shown: JSON.stringify(spec), baseName }; // data:, https: … as given
    file = fileURLToPath(spec);
  } else {
    const fromHref = from instanceof URL ? from.href : from;
    const folder = fromHref === undefined ? process.cwd() : HAS_SCHEME.test(fromHref) ? dirname(fileURLToPath(fromHref)) : resolve(fromHref);
    file = resolve(folder, spec);
  }
  const shown = file === spec ? JSON.stringify(spec) : `"${spec}" (${file})`;
  if (/\.(ts|mts|cts|tsx)$/i.test(file)) {
    throw failed(`driver module ${shown} is TypeScript; compile it to JavaScript first (tsc, or your bundler) and give the .js or .mjs file`, spec);
  }
  const { statSync } = await import('node:fs');
  let stats;
  try { stats = statSync(file); } catch {
    throw failed(`driver module ${JSON.stringify(spec)} not found: no file at ${file}${from === undefined ? ' (relative paths resolve against the working directory)' : ''}`, spec);
  }
  if (stats.isDirectory()) throw failed(`driver module ${shown} is a folder; expected its .mjs or .js file (e.g. ${resolve(file, 'driver.mjs')})`, spec);
  if (!stats.isFile()) throw failed(`driver module ${shown} is not a regular file`, spec);
  if (!/\.(mjs|js|wasm)$/i.test(file)) throw failed(`driver module ${shown} is not a .mjs, .js or .wasm file; expected an ES module, or a driver built from C`, spec);
  return { url: pathToFileURL(file).href, file, shown, baseName };
}

/**
 * The module's syntax error, if it has one, with its place (file:line, the line, a caret):
 * `node --check` says where, which a dynamic import does not (and a test runner's loader may
 * not even call it a SyntaxError).
 */
async function syntaxErrorOf(file: string): Promise<{ message: string; place: string } | undefined> {
  try {
    const { spawnSync } = await import('node:child_process');
    const result = spawnSync(process.execPath, ['--check', file], { encoding: 'utf8', timeout: 10_000 });
    if (result.status === 0) return undefined;
    const lines = (result.stderr ?? '').split('\n');
    const messageLine = lines.find((l) => l.startsWith('SyntaxError: '));
    if (!messageLine) return undefined;
    const at = lines.findIndex((l) => /:\d+$/.test(l.trim()));
    const place = at < 0 ? '' : lines.slice(at, at + 3).map((l) => l.replace(/^file:\/\//, '')).join('\n    ').trimEnd();
    return { message: messageLine.slice('SyntaxError: '.length), place };
  } catch {
    return undefined;
  }
}

/** What went wrong while importing, in one message: the error's own text and where in the module it happened. */
async function describeLoadError(error: unknown, where: Located, resolution: PackageResolution): Promise<string> {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ERR_MODULE_NOT_FOUND' && /Cannot find package 'wddm-fence'/.test((error as Error).message) && 'unavailable' in resolution) {
    return `${(error as Error).message}: 'wddm-fence' could not be resolved to the running copy (${resolution.unavailable}); import the bundle by path instead (its dist/wddm-fence.js)`;
  }
  if (typeof code === 'string' && code.startsWith('ERR_')) return `${(error as Error).message} (${code})`;
  const syntax = where.file && isNode() ? await syntaxErrorOf(where.file) : undefined;
  if (syntax) return `a syntax error: ${syntax.message}${syntax.place ? `\n    ${syntax.place}` : ''}`;
  if (!(error instanceof Error)) return `its top-level code threw ${show(error)}`;
  if (error.name === 'SyntaxError') return `a syntax error: ${error.message}`;
  // the first stack frame inside the module: where its top-level code threw
  const frame = where.file ? (error.stack ?? '').split('\n').find((l) => l.includes(where.url) || l.includes(where.file!)) : undefined;
  const place = frame ? ` (at ${frame.trim().replace(/^at /, '').replace(where.url, where.file!)})` : '';
  return `its top-level code threw ${error.name}: ${error.message}${place}`;
}

/**
 * Imports a driver module from a file (or URL) and checks its shape: `createDriver` must be a
 * function (exported by name, or on the default export), `name` a string if present. Throws a
 * WddmError that says what is wrong; nothing else changes.
 */
export async function loadDriverModule(pathOrUrl: string | URL, options: LoadDriverModuleOptions = {}): Promise<DriverModule> {
  const o = v.options(options, 'loadDriverModule(options)', ['from']);
  if (o.from !== undefined && typeof o.from !== 'string' && !(o.from instanceof URL)) {
    throw invalid('loadDriverModule(options).from', o.from, 'a folder path, or a file: URL such as import.meta.url');
  }
  if (!(pathOrUrl instanceof URL) && (typeof pathOrUrl !== 'string' || pathOrUrl.trim() === '')) {
    throw invalid('loadDriverModule(pathOrUrl)', pathOrUrl, 'the path or URL of an ES module (.mjs or .js) exporting createDriver(context)');
  }
  const where = await locate(pathOrUrl, o.from as string | URL | undefined);
  if (/\.wasm$/i.test(where.file ?? where.url)) return loadWasmDriverModule(await wasmBytes(where), where);
  const resolution = await resolvePackageToRunningCopy();
  let namespace: Record<string, unknown>;
  try {
    namespace = await import(/* @vite-ignore */ where.url) as Record<string, unknown>;
  } catch (error) {
    throw failed(`driver module ${where.shown} could not be loaded: ${await describeLoadError(error, where, resolution)}`, pathOrUrl);
  }
  const fallback = namespace.default as Record<string, unknown> | undefined;
  const source = typeof namespace.createDriver === 'function' ? namespace
    : fallback && typeof fallback === 'object' && typeof fallback.createDriver === 'function' ? fallback : undefined;
  if (!source) {
    const names = Object.keys(namespace).sort();
    throw failed(`driver module ${where.shown} exports no createDriver function (its exports: ${names.length ? names.join(', ') : 'none'}); `
      + 'expected `export function createDriver(context) { … }` returning a KernelModeDriver with its userMode half (docs/DRIVERS.md)', pathOrUrl);
  }
  const name = source.name === undefined ? where.baseName : source.name;
  const createDriver = source.createDriver as DriverModule['createDriver'];
  return checkDriverModule({ name, createDriver: (context: Parameters<DriverModule['createDriver']>[0]) => createDriver.call(source, context) },
    `driver module ${where.shown}`);
}

/** A .wasm driver's bytes: from the file (Node), or fetched. */
async function wasmBytes(where: Located): Promise<Uint8Array> {
  try {
    if (where.file) return new Uint8Array(await (await import('node:fs/promises')).readFile(where.file));
    const response = await fetch(where.url);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return new Uint8Array(await response.arrayBuffer());
  } catch (error) {
    throw failed(`driver module ${where.shown} could not be read: ${(error as Error).message}`, where.shown);
  }
}
