import { it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { compileCoreSync } from '../src/core/bindings.js';

it('docs/ABI.md names every function and constant the core exports', () => {
  const doc = readFileSync(new URL('../docs/ABI.md', import.meta.url), 'utf8');
  const exports = WebAssembly.Module.exports(compileCoreSync());
  const functions = exports.filter((e) => e.kind === 'function').map((e) => e.name);
  expect(functions.filter((name) => !doc.includes(name))).toEqual([]);
  const globals = exports.filter((e) => e.kind === 'global').map((e) => e.name);
  expect(globals.filter((name) => !doc.includes(`\`${name}\``))).toEqual([]);
});

it('docs/ABI.md gives every constant the value this build exports', () => {
  const doc = readFileSync(new URL('../docs/ABI.md', import.meta.url), 'utf8');
  const instance = new WebAssembly.Instance(compileCoreSync(), { env: { memory: new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }), abort() {} } });
  const written = new Map([...doc.matchAll(/`([A-Z][A-Z0-9_]+)` = (-?\d+)/g)].map((m) => [m[1], Number(m[2])]));
  const wrong = Object.entries(instance.exports).filter(([, e]) => e instanceof WebAssembly.Global)
    .map(([name, e]) => [name, Number((e as WebAssembly.Global).value), written.get(name)])
    .filter(([, value, doc]) => doc !== value);
  expect(wrong).toEqual([]);
});
