#!/usr/bin/env node
// Builds whatever is missing or older than its sources, so `npm start`, `npm test` and the
// `wddm-fence` command work right after `npm install` and after any source edit, and a build is
// made once and reused: nothing is rebuilt that is current. The package has no install script
// (no `prepare`): `npm install` in a clone installs the dependencies, and the first command that
// needs dist/ builds it (about a minute, once). In the npm package (installed, without the dev
// tools) dist/ is prebuilt: there is nothing to build and nothing is tried.
//
//   node scripts/ensure-built.mjs [--declarations]   also dist/types (tsc), as `npm pack` needs
//   import { ensureBuilt } from './ensure-built.mjs'  the same from bin/wddm-fence.mjs
import { existsSync, statSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const newest = (dir) => {
  let t = 0;
  for (const name of readdirSync(join(root, dir), { withFileTypes: true })) {
    const p = join(dir, name.name);
    t = Math.max(t, name.isDirectory() ? newest(p) : statSync(join(root, p)).mtimeMs);
  }
  return t;
};
const age = (file) => (existsSync(join(root, file)) ? statSync(join(root, file)).mtimeMs : 0);
/** The core's sources: assembly/, and the one file of src/ it compiles too (the host's generator and order). */
const CORE_SOURCES_IN_SRC = ['src/base/portable.ts'];

/**
 * Builds what is stale. `stdio`: where the build tools write ('inherit', or [0, 2, 2] to keep stdout
 * for the command's own output). Returns what happened: 'package' (an installed package: nothing to
 * build), 'current' or 'built'; throws when dist/ is missing and cannot be built.
 */
export function ensureBuilt({ declarations = false, stdio = 'inherit', announce = () => {} } = {}) {
  if (!existsSync(join(root, 'node_modules', 'rollup')) || !existsSync(join(root, 'node_modules', 'assemblyscript'))) {
    if (!existsSync(join(root, 'dist', 'cli.js'))) throw new Error('wddm-fence: dist/ is not built and the build tools are not installed: run `npm install` first');
    return 'package';
  }
  const steps = [];
  if (Math.min(age('src/generated/core-wasm.ts'), age('build/core-nothreads.wasm')) < Math.max(newest('assembly'), ...CORE_SOURCES_IN_SRC.map(age))) steps.push(['scripts/build-core.mjs']);
  const scenariosStale = age('src/generated/scenarios.ts') < newest('scenarios');
  if (scenariosStale) steps.push(['scripts/build-scenarios.mjs']);
  if (steps.length || Math.min(age('dist/wddm-fence.js'), age('dist/web/page.js'), age('dist/fuzz.js'), age('dist/fuzz-explore.js')) < Math.max(newest('src'), newest('web'), age('rollup.config.mjs'))) {
    steps.push(['node_modules/rollup/dist/bin/rollup', '-c', '--silent']);
  }
  if (declarations && (steps.length || age('dist/types/index.d.ts') < newest('src'))) steps.push(['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json']);
  if (!steps.length) return 'current';
  announce(`wddm-fence: building ${existsSync(join(root, 'dist', 'cli.js')) ? 'what changed' : 'dist/ (once: later commands reuse it)'}…`);
  for (const [script, ...args] of steps) execFileSync(process.execPath, [join(root, script), ...args], { cwd: root, stdio });
  return 'built';
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    ensureBuilt({ declarations: process.argv.includes('--declarations') });
  } catch (error) {
    console.error(error.message ?? error);
    process.exit(1);
  }
}
