// examples/drivers/ (issue 12): reference.mjs and the template run, as their READMEs say, and the
// template is what its README promises: every DDI, callback and the user-mode half, each saying
// which requirements it serves. check-driver's verdict on both is in test/check-driver.test.ts.
import { describe, it, expect } from 'vitest';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REQUIRED_DDIS, OPTIONAL_DDIS, ReferenceDriver } from '../src/index.js';
import { runnableScenarios } from '../src/scenario-files/builtin.js';
import { runScenario } from '../src/scenario-files/run.js';
import { runCli } from '../src/cli/main.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const examples = join(root, 'examples', 'drivers');
const templateFile = join(examples, 'template', 'driver.mjs');
const CALLBACKS = ['IsFeatureEnabled', 'QueryFeatureInterface', 'NotifyInterrupt', 'NotifyDmaCompleted', 'NotifyMonitoredFenceSignaled',
  'NotifyDmaPageFaulted', 'NotifyGpuProgress', 'NotifyDoorbellFallback'];

describe('examples/drivers', () => {
  for (const [label, path, className] of [['template/driver.mjs', templateFile, 'TemplateDriver'], ['reference.mjs', join(examples, 'reference.mjs'), 'ReferenceDriver']] as const) {
    it(`CAP-01 NF-10 ${label} in place of the reference driver: every built-in scenario still holds every expectation`, async () => {
      for (const builtin of runnableScenarios()) {
        const s = builtin.scenario!;
        const adapters = s.machine.adapters.map((a) => ({ ...a, driver: { ...(typeof a.driver === 'object' ? a.driver : {}), module: path } }));
        const result = await runScenario({ ...s, machine: { ...s.machine, adapters } }, { source: join(examples, `${builtin.name}.yaml`) });
        expect(result.expectations.filter((e) => !e.ok).map((e) => `${e.description}: ${e.actual}`), builtin.name).toEqual([]);
        expect(result.passed, builtin.name).toBe(true);
        for (const adapter of result.machine.adapters) {
          expect(adapter.driver.constructor.name).toBe(className);
          expect(adapter.driver).not.toBeInstanceOf(ReferenceDriver); // the bundle's class, by 'wddm-fence'
        }
      }
    });
  }

  it('the template has every DDI, every callback and the user-mode half, each with a comment naming the requirements it serves', () => {
    const text = readFileSync(templateFile, 'utf8');
    const documented = (member: string, pattern: RegExp) => {
      const at = text.search(pattern);
      expect(at, `${member} is in the template`).toBeGreaterThan(0);
      const comment = text.slice(text.lastIndexOf('/**', at), at);
      expect(comment, `${member}'s comment`).toMatch(/\*\//);
      expect(comment, `${member}'s comment names a requirement`).toMatch(/\b(CAP|NF|INT|XA|LOG|MF)-\d\d\b/);
    };
    for (const ddi of [...REQUIRED_DDIS, ...OPTIONAL_DDIS]) documented(ddi, new RegExp(`\\n  ${ddi}\\(`));
    for (const callback of CALLBACKS.filter((c) => !['NotifyGpuProgress', 'NotifyDoorbellFallback'].includes(c))) documented(callback, new RegExp(`\\n    ${callback}: `));
    for (const callback of CALLBACKS) expect(text).toMatch(new RegExp(`\\n    ${callback}: \\(.*\\) => os\\.${callback}\\(`));
    expect(text).toMatch(/class TemplateUserModeDriver extends ReferenceUserModeDriver \{\n {2}submitToHwQueue\(args\)/);
    expect(text).toMatch(/export function createDriver\(context\)/);
  });

  it('each example folder has a README, and the READMEs\' commands name files that exist', () => {
    const folders = [examples, ...readdirSync(examples, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => join(examples, e.name))];
    for (const folder of folders) expect(existsSync(join(folder, 'README.md')), folder).toBe(true);
    for (const readme of [join(examples, 'README.md'), join(examples, 'template', 'README.md')]) {
      const text = readFileSync(readme, 'utf8');
      for (const [, path] of text.matchAll(/check-driver (examples\/drivers\/[\w./-]+)/g)) expect(existsSync(join(root, path)), `${readme}: ${path}`).toBe(true);
    }
  });

  it('CAP-02 NF-11 the template passes check-driver as it stands: exit 0, no requirement violated', async () => {
    let stdout = '', stderr = '';
    const code = await runCli(['check-driver', templateFile], { out: (t) => { stdout += t; }, err: (t) => { stderr += t; } });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^wddm-fence check-driver: driver "template" from /);
    expect(stdout).toMatch(/^PASS: \d+ passed, 0 violated/m);
  });
});
