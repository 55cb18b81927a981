// A driver module's `import … from 'wddm-fence'` (or 'wddm-fence/scenario', …) resolves to the
// running copy of the package, wherever the driver file is: a copy of examples/drivers/template
// in a folder of its own, with no wddm-fence installed next to it, loads as it does in the clone.
//
// How: before loadDriverModule imports a file it registers, once per process, a Node module
// resolve hook (node:module register, Node 20.6 or newer) that resolves every specifier naming
// the package as the package itself would resolve its own name (Node's self-reference, through
// the "exports" of the running copy's package.json). Other specifiers are left to Node. The
// running copy is the package whose package.json is the nearest one named "wddm-fence" above this
// code: dist/ of a clone or of an installed package (and src/ under the tests).
//
// Where that cannot be (a browser, Node before 20.6, this code bundled into something with no
// wddm-fence package.json above it) nothing is registered and Node's own resolution applies; the
// loader's error then says so (load.ts).

/** The hook, as a module of its own (it runs on Node's loader thread): initialize gets the running copy's package.json URL. */
const HOOK_SOURCE = `let packageJsonUrl;
export function initialize(data) { packageJsonUrl = data.packageJsonUrl; }
export function resolve(specifier, context, nextResolve) {
  if (specifier === 'wddm-fence' || specifier.startsWith('wddm-fence/')) return nextResolve(specifier, { ...context, parentURL: packageJsonUrl });
  return nextResolve(specifier, context);
}
`;

/** What registering the hook came to: the package.json imports of 'wddm-fence' resolve through, or why there is none. */
export type PackageResolution = { packageJsonUrl: string } | { unavailable: string };

let registration: Promise<PackageResolution> | undefined;

/** Registers the resolve hook (once per process; later calls return the first call's outcome). Never throws. */
export function resolvePackageToRunningCopy(): Promise<PackageResolution> {
  registration ??= register().catch((error: unknown) => ({ unavailable: `registering the resolve hook failed: ${(error as Error)?.message ?? error}` }));
  return registration;
}

async function register(): Promise<PackageResolution> {
  if (typeof process === 'undefined' || typeof process.versions?.node !== 'string') return { unavailable: 'not running in Node' };
  const nodeModule = await import('node:module');
  if (typeof nodeModule.register !== 'function') return { unavailable: `Node ${process.version} has no module resolve hooks (node:module register needs Node 20.6 or newer)` };
  const packageJsonUrl = (await runningPackage())?.packageJsonUrl;
  if (!packageJsonUrl) return { unavailable: 'this copy of wddm-fence has no package.json named "wddm-fence" above it (bundled into something else?)' };
  nodeModule.register(`data:text/javascript,${encodeURIComponent(HOOK_SOURCE)}`, { data: { packageJsonUrl } });
  return { packageJsonUrl };
}

/** The running copy of the package: its package.json's file: URL and its version (Node only; undefined where there is none). */
export async function runningPackage(): Promise<{ packageJsonUrl: string; version: string } | undefined> {
  if (typeof process === 'undefined' || typeof process.versions?.node !== 'string' || !import.meta.url.startsWith('file:')) return undefined;
  const { readFileSync } = await import('node:fs');
  const { dirname, join } = await import('node:path');
  const { fileURLToPath, pathToFileURL } = await import('node:url');
  for (let folder = dirname(fileURLToPath(import.meta.url)); ; folder = dirname(folder)) {
    const file = join(folder, 'package.json');
    try {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
      if (manifest.name === 'wddm-fence') return { packageJsonUrl: pathToFileURL(file).href, version: String(manifest.version) };
    } catch { /* none here, or not JSON: look further up */ }
    if (dirname(folder) === folder) return undefined;
  }
}
