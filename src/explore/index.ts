// The race explorer's public API (docs/EXPLORER.md): the machine it builds,
// the searches, schedule files, replays and swarm runs.
export { buildWorld, parseMachine, parseVariant, parseOsGranularity, describeMachine, machineOptions, signalValue, DEFAULT_MACHINE, MACHINE_BOUNDS, VARIANTS, VARIANT_TITLES, OS_GRANULARITIES } from './model.js';
export type { ExploreMachine, ExploreModel, MachineFactory, Variant, World, GeneratedWorld, AnyModel } from './model.js';
export { exhaustive, shortest, Runner, REDUCTIONS, RESTORES } from './search.js';
export type { Reduction, Restore, SearchOptions, SearchResult, SearchStats, ShortestResult, FoundViolation, Bound } from './search.js';
export { INVARIANTS, MACHINE_INVARIANTS, SCENARIO_INVARIANTS, checkAlways, checkQuiet } from './invariants.js';
export { TIME_MODES, LatencyChoices, options as worldOptions, take as worldTake } from './world.js';
export type { World as ExplorerWorld, WorldModel, WorldFence, WorldQueue, WorldThread, TimeMode, ScenarioScheduleInfo } from './world.js';
export { VARIANT_NEEDS, DRIVER_VARIANTS } from './variants.js';
export type { InvariantId, InvariantInfo, Violation } from './invariants.js';
export { StateKeys, eventKey, eventName } from './state.js';
export { takeSnapshot, restoreSnapshot, SnapshotUnsupported } from './snapshot.js';
export { parseSchedule, checkSchedule, scheduleJson, ScheduleFileError, SCHEDULE_FORMAT, SCHEDULE_VERSION } from './schedule.js';
export type { ScheduleFile, ScheduleStep } from './schedule.js';
export { replay, replayText, scheduleOf, namedSteps, ReplayMismatch } from './replay.js';
export type { Replay, ReplayedStep } from './replay.js';
export { runSeed, runJob, shardSeeds, shardSize, parseSeedRange, parseShard, DEFAULT_SWARM_MACHINE } from './swarm.js';
export type { SwarmJob, SwarmTally, SeedFailure } from './swarm.js';
