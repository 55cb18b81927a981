// The `wddm-fence/scenario` entry (dist/scenario.js): scenario files, and the driver conformance
// suite that runs the built-in ones. Both parse YAML and check schemas (yaml, ajv), which the
// library bundle (src/index.ts, dependency-free) leaves out.
export * from './scenario-files/index.js';
export { runConformance, failedCases } from './check/conformance.js';
export type { ConformanceOptions, ConformanceReport, RequirementResult, RequirementStatus, CaseResult, Violation } from './check/conformance.js';
// The race explorer over a scenario file (src/explore/scenario-world.ts): its model, and the searches from this
// same bundle (a model from one bundle and a search from another would each have their own copies of the
// model's classes, which a search tells apart by class).
export { ScenarioModel, formatScenarioValue, explorationSizing } from './explore/scenario-world.js';
export { exhaustive, shortest, Runner, replay, replayText, namedSteps, scheduleOf, scheduleJson, parseSchedule, INVARIANTS } from './explore/index.js';
export type { SearchResult, SearchStats, SearchOptions, ScheduleFile, Replay } from './explore/index.js';
export type { ScenarioModelOptions, TimeMode } from './explore/scenario-world.js';
export { setUpScenario, scenarioAdapters, scenarioMachineOptions, checkExpectations } from './scenario-files/run.js';
export type { ScenarioSetup, ScenarioState, ThreadPosition } from './scenario-files/run.js';
