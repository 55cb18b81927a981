// The built-in scenarios: the files under scenarios/, embedded at build time
// (scripts/build-scenarios.mjs). A file that this build cannot run (it uses a
// feature features.ts marks unsupported) is left out of `list` and cannot be
// run by name; `list --all` shows it with the reason.

import { BUILTIN_SCENARIO_FILES } from '../generated/scenarios.js';
import { parseScenario, ScenarioError } from './load.js';
import type { Scenario } from './types.js';
import { deepFreeze } from '../base/freeze.js';

export interface BuiltinScenario {
  name: string;
  file: string;
  text: string;
  /** The parsed scenario, when this build can run it. */
  scenario?: Scenario;
  /** Why it cannot run here. */
  unavailable?: string;
}

/** Parsed once per process, frozen: every caller (and every machine) reads the same, and none can change it. */
let cache: readonly BuiltinScenario[] | undefined;

export function builtinScenarios(): readonly BuiltinScenario[] {
  if (!cache) {
    cache = deepFreeze(BUILTIN_SCENARIO_FILES.map((f): BuiltinScenario => {
      try {
        return { ...f, scenario: parseScenario(f.text, `scenarios/${f.file}`) };
      } catch (error) {
        const text = error instanceof ScenarioError ? error.problems.map((p) => p.message).join('; ') : (error as Error).message;
        return { ...f, unavailable: text };
      }
    }));
  }
  return cache;
}

/** The built-in scenarios this build runs. */
export function runnableScenarios(): BuiltinScenario[] { return builtinScenarios().filter((b) => b.scenario); }

export function findBuiltin(name: string): BuiltinScenario | undefined {
  return builtinScenarios().find((b) => b.name === name);
}
