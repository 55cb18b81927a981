// The `wddm-fence/scenario` entry (dist/scenario.js): scenario files, and the driver conformance
// suite that runs the built-in ones. Both parse YAML and check schemas (yaml, ajv), which the
// library bundle (src/index.ts, dependency-free) leaves out.
export * from './scenario-files/index.js';
export { runConformance } from './check/conformance.js';
export type { ConformanceOptions, ConformanceReport, RequirementResult, Violation } from './check/conformance.js';
// The race explorer over a scenario file (src/explore/scenario-world.ts): its model, for exhaustive() / shortest() / replay().
export { ScenarioModel, formatScenarioValue } from './explore/scenario-world.js';
export type { ScenarioModelOptions, TimeMode } from './explore/scenario-world.js';
export { setUpScenario, scenarioAdapters, scenarioMachineOptions, checkExpectations } from './scenario-files/run.js';
export type { ScenarioSetup, ScenarioState, ThreadPosition } from './scenario-files/run.js';
