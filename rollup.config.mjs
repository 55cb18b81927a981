// One self-contained ESM bundle (the core's .wasm is embedded as base64 by
// scripts/build-core.mjs), the same file in Node and in browsers, plus the
// command-line entry and the browser page's script. TypeScript is compiled
// here; declarations come from `tsc -p tsconfig.build.json` (npm run build).
// The library bundle has no npm dependency at all. The scenario entry
// (dist/scenario.js) and the CLI leave theirs (yaml, ajv) to Node's resolver;
// the page bundles them for the browser.
//
// The three shipped bundles have no source map: the npm package carries the
// sources (src/, assembly/) instead of 2.5 MB of maps, and a bundle without a
// sourceMappingURL makes no tool look for a missing file. The page (dist/web,
// served by `npm run web` from a clone, not in the package) keeps its map.
import typescript from '@rollup/plugin-typescript';
import { nodeResolve } from '@rollup/plugin-node-resolve';
import commonjs from '@rollup/plugin-commonjs';
import json from '@rollup/plugin-json';
import { readFileSync } from 'node:fs';

/** Copies the page's HTML and icon next to its script (dist/web is the whole static site). */
const PAGE_FILES = ['index.html', 'favicon.svg'];
const html = () => ({
  name: 'page-html',
  buildStart() { for (const file of PAGE_FILES) this.addWatchFile(`web/${file}`); },
  generateBundle() { for (const file of PAGE_FILES) this.emitFile({ type: 'asset', fileName: file, source: readFileSync(`web/${file}`) }); },
});

const ts = () => typescript({ tsconfig: './tsconfig.json', compilerOptions: { noEmit: false, declaration: false, outDir: undefined }, include: ['src/**/*.ts'], noEmitOnError: true });
const nodeExternal = (id) => id.startsWith('node:') || id === 'yaml' || id === 'ajv';

export default [
  {
    input: 'src/index.ts',
    external: (id) => id.startsWith('node:'), // worker mode imports node:worker_threads lazily; nothing else is external
    output: { file: 'dist/wddm-fence.js', format: 'es', sourcemap: false },
    plugins: [ts()],
  },
  {
    input: 'src/scenario.ts',
    external: nodeExternal,
    output: { file: 'dist/scenario.js', format: 'es', sourcemap: false },
    plugins: [ts()],
  },
  {
    input: 'src/cli.ts',
    external: nodeExternal,
    output: { file: 'dist/cli.js', format: 'es', sourcemap: false, banner: '#!/usr/bin/env node' },
    plugins: [ts()],
  },
  {
    // The fuzz test's runner (scripts/fuzz.mjs, from a clone): fast-check, a dev dependency, stays an import.
    input: 'src/check/fuzz-property.ts',
    external: (id) => id.startsWith('node:') || id === 'fast-check',
    output: { file: 'dist/fuzz.js', format: 'es', sourcemap: false },
    plugins: [ts()],
  },
  {
    // The explorer's reduction fuzz (scripts/fuzz-explore.mjs, from a clone): its generator and comparison, with the
    // scenario files' parser (yaml, ajv: the package's own dependencies) left to Node's resolver.
    input: 'src/explore/fuzz-reduction.ts',
    external: nodeExternal,
    output: { file: 'dist/fuzz-explore.js', format: 'es', sourcemap: false },
    plugins: [ts()],
  },
  {
    input: 'src/web/page.ts',
    output: { dir: 'dist/web', entryFileNames: 'page.js', format: 'es', sourcemap: true },
    plugins: [ts(), nodeResolve({ browser: true, preferBuiltins: false }), commonjs(), json(), html()],
  },
];
