import { it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { compileCoreSync } from '../src/core.js';

it('docs/ABI.md names every function and constant the core exports', () => {
  const doc = readFileSync(new URL('../docs/ABI.md', import.meta.url), 'utf8');
  const exports = WebAssembly.Module.exports(compileCoreSync());
  const functions = exports.filter((e) => e.kind === 'function').map((e) => e.name);
  expect(functions.filter((name) => !doc.includes(name))).toEqual([]);
  const globals = exports.filter((e) => e.kind === 'global').map((e) => e.name);
  expect(globals.filter((name) => !doc.includes(`\`${name}\``))).toEqual([]);
});
