// Scenario files: load (schema + checks), run, report, and the timeline model.
export { parseScenario, ScenarioError, formatProblem } from './load.js';
export type { ScenarioProblem } from './load.js';
export { runScenario, runScenario as runScenarioFile, contractViolations, lostWakeupsAndOsFaults } from './run.js';
export type { ScenarioResult, ExpectationResult, WaitRecord, RunOptions } from './run.js';
export { builtinScenarios, runnableScenarios, findBuiltin } from './builtin.js';
export type { BuiltinScenario } from './builtin.js';
export { SCENARIO_SCHEMA } from './schema.js';
export { FEATURES } from './features.js';
export { SCENARIO_LIMITS } from './limits.js';
export { locationOf } from './load.js';
export { timelineModel } from '../timeline/model.js';
export type { TimelineModel, TimelineTrack, TimelineSlice, TimelineArrow, TimelineMark } from '../timeline/model.js';
export { reportText, reportJson } from './report.js';
export type { Scenario } from './types.js';
