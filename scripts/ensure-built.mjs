#!/usr/bin/env node
// Builds whatever is missing or older than its sources, so `npm start` and
// `npm test` work right after `npm install` and after any source edit.
// In the npm package (installed, without the dev tools) dist/ is prebuilt:
// there is nothing to build and nothing is tried.
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
if (!existsSync(join(root, 'node_modules', 'rollup')) || !existsSync(join(root, 'node_modules', 'assemblyscript'))) {
  if (!existsSync(join(root, 'dist', 'cli.js'))) {
    console.error('wddm-fence: dist/ is not built and the build tools are not installed: run `npm install` first');
    process.exit(1);
  }
  process.exit(0);
}

const age = (file) => (existsSync(join(root, file)) ? statSync(join(root, file)).mtimeMs : 0);
const run = (script, args = []) => execFileSync(process.execPath, [join(root, script), ...args], { cwd: root, stdio: 'inherit' });

if (Math.min(age('src/generated/core-wasm.ts'), age('build/core-nothreads.wasm')) < newest('assembly')) run('scripts/build-core.mjs');
if (age('src/generated/scenarios.ts') < newest('scenarios')) run('scripts/build-scenarios.mjs');
if (Math.min(age('dist/wddm-fence.js'), age('dist/web/page.js'), age('dist/fuzz.js')) < Math.max(newest('src'), newest('web'), age('rollup.config.mjs'))) {
  run('node_modules/rollup/dist/bin/rollup', ['-c', '--silent']);
}
