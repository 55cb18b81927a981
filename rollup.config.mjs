// One self-contained ESM bundle (the core's .wasm is embedded as base64 by
// scripts/build-core.mjs), the same file in Node and in browsers, plus the
// command-line entry. TypeScript is compiled here; declarations come from
// `tsc -p tsconfig.build.json` (npm run build).
import typescript from '@rollup/plugin-typescript';

const ts = () => typescript({ tsconfig: './tsconfig.json', compilerOptions: { noEmit: false, declaration: false, outDir: undefined }, include: ['src/**/*.ts'], noEmitOnError: true });
const nodeBuiltins = (id) => id.startsWith('node:');

export default [
  {
    input: 'src/index.ts',
    external: nodeBuiltins, // only worker mode imports one (node:worker_threads), lazily
    output: { file: 'dist/wddm-fence.js', format: 'es', sourcemap: true },
    plugins: [ts()],
  },
  {
    input: 'src/cli.ts',
    external: nodeBuiltins,
    output: { file: 'dist/cli.js', format: 'es', sourcemap: true, banner: '#!/usr/bin/env node' },
    plugins: [ts()],
  },
];
