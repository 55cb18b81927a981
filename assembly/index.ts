// The wddm-fence core: the ABI every host (the TypeScript shell, or any other
// runtime embedding core.wasm) calls. Every export takes and returns plain
// numbers: u32 addresses and ids, u64 values, i32 status codes. Layout
// constants are exported as immutable globals so hosts read the same numbers
// the core was built with. docs/ABI.md lists them all.

import {
  AdapterHeader, EngineRecord, QueueRecord, RegionHeader,
} from './layout';
import { adapter, fenceAt, fenceValid, lastSignaledAddress } from './adapter';
import { OK, E_BAD_FENCE, StretchRecord, Command, FenceRecord, FENCE_STATE_LIVE, FENCE_KIND_MONITORED } from './layout';

export {
  PAGE_BYTES, STATIC_RESERVED_BYTES, REGION_MAGIC, LAYOUT_VERSION,
  REGION_KIND_SYSTEM, REGION_KIND_LOCAL, REGION_KIND_ADAPTER,
  REGION_HEADER_BYTES, ADAPTER_HEADER_BYTES, FENCE_RECORD_BYTES, PAGE_DESCRIPTOR_BYTES,
  PROCESS_RECORD_BYTES, WAIT_BLOCK_BYTES, HEAP_ENTRY_BYTES, ENGINE_RECORD_BYTES, QUEUE_RECORD_BYTES,
  COMMAND_BYTES, HEAP_MIN_CLASS, HEAP_MAX_CLASS, ARENA_BLOCK_BYTES, ARENA_MAX_CLASS,
  FENCE_KIND_NATIVE, FENCE_KIND_MONITORED, MEMORY_SYSTEM, MEMORY_LOCAL,
  OP_NOP, OP_WAIT, OP_SIGNAL, OP_WORK, OP_FENCE_WRITE,
  QUEUE_STATE_FREE, QUEUE_STATE_READY, QUEUE_STATE_BLOCKED,
  OK, E_BAD_REGION, E_BAD_VERSION, E_TOO_SMALL, E_NO_PAGES, E_NO_FENCE_RECORDS, E_NO_PAGE_DESCRIPTORS,
  E_BAD_FENCE, E_HEAP_FULL, E_NO_WAIT_BLOCKS, E_BAD_WAIT_BLOCK, E_NO_GPU_VA, E_BAD_PROCESS, E_NO_QUEUES,
  E_BAD_QUEUE, E_RING_FULL, E_GPU_PAGE_FAULT, E_BAD_ENGINE, E_BAD_ARGUMENT, E_LOG_CORRUPT, E_NO_WAITERS, E_BAD_WAITER,
  E_GPU_WRITE_FAULT, GPU_VA_READ, GPU_VA_READ_WRITE,
  WAITER_RECORD_BYTES, WAIT_PAIR_BYTES, WAITER_MODE_ALL, WAITER_MODE_ANY, WAITER_MAX_ENTRIES,
  STEP_IDLE, STEP_DONE, STEP_BLOCKED, STEP_WORK, STEP_INTERRUPT, STEP_UNBLOCKED, STEP_MONITORED_INTERRUPT, STEP_SIGNAL_WRITTEN,
  STEP_REPORT_BYTES, STEP_REPORT_WORK_DURATION_OFFSET, STEP_REPORT_FENCE_OFFSET, STEP_REPORT_HANDLE_OFFSET,
  STEP_REPORT_VALUE_OFFSET, STEP_REPORT_STEPS_OFFSET, STEP_REPORT_OP_OFFSET, STEP_REPORT_DOORBELL_POSTED_OFFSET,
  STEP_REPORT_DOORBELL_FULL_OFFSET, STEP_REPORT_OBSERVED_OFFSET, INTERRUPT_HANDLE_BYTES,
  SATISFIED_WAIT_BYTES, SATISFIED_WAIT_WAITER_OFFSET, SATISFIED_WAIT_ENTRY_OFFSET, SATISFIED_WAIT_COMPLETED_OFFSET,
  TAKEN_DOORBELL_RECORD_BYTES, TAKEN_DOORBELL_WORD_OFFSET, TAKEN_DOORBELL_SOURCE_OFFSET, TAKEN_DOORBELL_VALUE_OFFSET,
} from './layout';
export { regionFormat, regionCheck, regionAllocPage, regionFreePage, regionFreePages } from './region';
export {
  adapterFormat, adapterAttach, adapterRegionBytes, arenaBlockBytes, gpuVaMap, gpuVaUnmap, gpuVaTranslate, gpuVaAccess,
  fenceCreate, fenceDestroy, fenceAtCurrentValue,
} from './adapter';
export {
  waiterCreate, waitBlockAdd, fenceSatisfy, waiterRetire, waiterPending, fenceWaiters, fenceMinWaited, fenceMonitoredTarget, fenceWaiterCount,
  heapCheck, heapBench,
} from './heap';
export {
  CAP_NO_64BIT_ATOMICS, CAP_NATIVE_GPU_FENCE, CAP_OPTIMIZED_NATIVE_FENCE_INTERRUPT,
  queueCreate, queueDestroy, queuePush, queuePending, queueState, queueEngine, queueBlockedFence,
  queueBlockedValue, queueBlockedSince, queueHeadOp, queueHeadValue, queueHeadFence, queueHeadHandle,
  engineSignalWrite, engineDrain, enginePendingWrite, cmpSignalCheck, engineDoorbellPost, engineRaiseMonitoredFenceInterrupt,
  cmpWriteMonitoredValue, cmpBarrier, cmpPendingWrite, cmpPendingValue, cmpReadCurrentValue, cmpMonitoredValueCheck, engineRecordAddress,
  engineTakeInterrupt, engineInterruptLine, engineInterruptQueue, engineStep, engineStepBegin, engineRun, engineRunStretch, queuePushStaged, queueRecheck, queueRecheckAt,
  cpuWriteCurrentValue, cpuReadCurrentValue, cpuReadMonitoredValue, bareSignalLoop,
} from './gpu';
export {
  NATIVE_FENCE_LOG_TYPE_WAITS, NATIVE_FENCE_LOG_TYPE_SIGNALS, NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED,
  NATIVE_FENCE_LOG_OPERATION_WAIT_UNBLOCKED, NATIVE_FENCE_LOG_HEADER_BYTES, NATIVE_FENCE_LOG_ENTRY_BYTES,
  NATIVE_FENCE_LOG_ENTRIES, NATIVE_FENCE_LOG_INDEX_OFFSET, NATIVE_FENCE_LOG_TYPE_OFFSET, NATIVE_FENCE_LOG_COUNT_OFFSET,
  NATIVE_FENCE_LOG_ENTRY_VALUE_OFFSET, NATIVE_FENCE_LOG_ENTRY_HANDLE_OFFSET, NATIVE_FENCE_LOG_ENTRY_OPERATION_OFFSET,
  NATIVE_FENCE_LOG_ENTRY_OBSERVED_OFFSET, NATIVE_FENCE_LOG_ENTRY_END_OFFSET,
  logFormat, logCheck, logHeaderWord, logBufferCreate, logBufferDestroy, queueSetLogBuffer, queueLogBuffer, logFlush, logPendingAddress, queueRecordAddress,
  logWriteEntry, logAdvance, logRecord,
} from './log';
export {
  doorbellRegionBytes, doorbellFormat, doorbellCheck, adapterSetDoorbell, doorbellPost, doorbellTake,
  doorbellPending, doorbellCounter, doorbellAdapterCount, doorbellWait,
  DOORBELL_DIRECTORY_BYTES, DOORBELL_RING_HEADER_BYTES, DOORBELL_RECORD_BYTES,
} from './doorbell';
export { fenceWordSignal, fenceWordWait, fenceWordReached, fenceCpuSignal } from './cpuwait';
export {
  STRETCH_RECORD_BYTES, STRETCH_RECORD_OFFSET, STRETCH_STOP_LOUD, STRETCH_STOP_COUNT, STRETCH_STOP_QUEUED, STRETCH_STOP_EMPTY,
} from './layout';
// engineRunStretch's StretchRecord (layout.ts); the two generator states are four u32 each (a, b, c, d).
// A Command record's fields (queuePushStaged's staging area; the ring's records have the same shape).
export const COMMAND_OP_OFFSET: u32 = offsetof<Command>('op');
export const COMMAND_VALUE_OFFSET: u32 = offsetof<Command>('value');
export const COMMAND_GPU_VA_OFFSET: u32 = offsetof<Command>('gpuVa');
export const COMMAND_HANDLE_OFFSET: u32 = offsetof<Command>('handle');
export const STRETCH_NOW_OFFSET: u32 = offsetof<StretchRecord>('nowNs');
export const STRETCH_UNTIL_OFFSET: u32 = offsetof<StretchRecord>('untilNs');
export const STRETCH_TOP_TIME_OFFSET: u32 = offsetof<StretchRecord>('topTimeNs');
export const STRETCH_SEQUENCE_OFFSET: u32 = offsetof<StretchRecord>('sequence');
export const STRETCH_COMMAND_NS_OFFSET: u32 = offsetof<StretchRecord>('commandNs');
export const STRETCH_JITTER_SPAN_OFFSET: u32 = offsetof<StretchRecord>('jitterSpan');
export const STRETCH_TIMING_STATE_OFFSET: u32 = offsetof<StretchRecord>('timingA');
export const STRETCH_TIE_STATE_OFFSET: u32 = offsetof<StretchRecord>('tieA');
export const STRETCH_TOP_TIE_BREAK_OFFSET: u32 = offsetof<StretchRecord>('topTieBreak');
export const STRETCH_BUDGET_OFFSET: u32 = offsetof<StretchRecord>('budget');
export const STRETCH_IN_PLACE_OFFSET: u32 = offsetof<StretchRecord>('inPlace');
export const STRETCH_NEXT_QUEUED_OFFSET: u32 = offsetof<StretchRecord>('nextQueued');
export const STRETCH_NEXT_TIE_BREAK_OFFSET: u32 = offsetof<StretchRecord>('nextTieBreak');
export const STRETCH_STOP_OFFSET: u32 = offsetof<StretchRecord>('stop');
export const STRETCH_FENCE_COMMANDS_OFFSET: u32 = offsetof<StretchRecord>('fenceCommands');
export const STRETCH_NEXT_OFFSET: u32 = offsetof<StretchRecord>('nextNs');
export const STRETCH_TOP_SEQUENCE_OFFSET: u32 = offsetof<StretchRecord>('topSequence');
export { E_DOORBELL_FULL, E_BAD_DOORBELL, SYNC_FLAG_CROSS_ADAPTER, REGION_KIND_DOORBELL } from './layout';

/**
 * The version of this ABI: the imports, every export's name, parameters,
 * results and status codes, and the order rules docs/ABI.md gives for calling
 * them. Bumped whenever any of those changes, so a host written against one
 * version refuses another (the TypeScript host in src/core/bindings.ts readLayout, the
 * C host in examples/c-host). LAYOUT_VERSION is the other number: it is
 * written into every region header and bumps when a record in memory changes
 * shape, so instances of two builds never share one memory.
 */
export const ABI_VERSION: u32 = 10;

// Field offsets the host reads directly (statistics, out buffer, fence fields).
export const ADAPTER_OUT_BUFFER_OFFSET: u32 = offsetof<AdapterHeader>('outBuffer');
export const ADAPTER_GPU_SIGNALS_OFFSET: u32 = offsetof<AdapterHeader>('gpuSignals');
export const ADAPTER_CMP_CHECKS_OFFSET: u32 = offsetof<AdapterHeader>('cmpChecks');
export const ADAPTER_INTERRUPTS_OFFSET: u32 = offsetof<AdapterHeader>('interruptsRaised');
export const ADAPTER_HEAP_PUSHES_OFFSET: u32 = offsetof<AdapterHeader>('heapPushes');
export const ADAPTER_HEAP_POPS_OFFSET: u32 = offsetof<AdapterHeader>('heapPops');
export const ADAPTER_FENCE_LIVE_OFFSET: u32 = offsetof<AdapterHeader>('fenceLive');
export const ADAPTER_PAGE_LIVE_OFFSET: u32 = offsetof<AdapterHeader>('pageLive');
export const ADAPTER_WAIT_BLOCK_LIVE_OFFSET: u32 = offsetof<AdapterHeader>('waitBlockLive');
export const ADAPTER_WAITER_LIVE_OFFSET: u32 = offsetof<AdapterHeader>('waiterLive');
export const ADAPTER_OUT_CAPACITY_OFFSET: u32 = offsetof<AdapterHeader>('outCapacity');
// A driver finds a fence's record from its id (fence table + (id - 1) × FENCE_RECORD_BYTES) and reads these fields
// through a view of linear memory on its hot paths (a core call per field is polymorphic with several instances).
export const ADAPTER_FENCE_TABLE_OFFSET: u32 = offsetof<AdapterHeader>('fenceTable');
export const ADAPTER_FENCE_CAPACITY_OFFSET: u32 = offsetof<AdapterHeader>('fenceCapacity');
export const FENCE_STATE_OFFSET: u32 = offsetof<FenceRecord>('state');
export const FENCE_CURRENT_VALUE_OFFSET: u32 = offsetof<FenceRecord>('cvPhys');
export const FENCE_DRIVER_HANDLE_OFFSET: u32 = offsetof<FenceRecord>('driverHandle');
export { FENCE_STATE_LIVE };
export const QUEUE_LOG_PENDING_OFFSET: u32 = offsetof<QueueRecord>('logPendingPhys');
export const QUEUE_LOG_PENDING_BYTES: u32 = offsetof<QueueRecord>() - offsetof<QueueRecord>('logPendingPhys');
export const ENGINE_SIGNALS_OFFSET: u32 = offsetof<EngineRecord>('signals');
export const ENGINE_INTERRUPTS_OFFSET: u32 = offsetof<EngineRecord>('interrupts');
export const REGION_MAGIC_OFFSET: u32 = offsetof<RegionHeader>('magic');
export const ADAPTER_ARRIVAL_SEQUENCE_OFFSET: u32 = offsetof<AdapterHeader>('arrivalSequence');
export const REGION_FREE_PAGES_OFFSET: u32 = offsetof<RegionHeader>('freePages');
export const REGION_SIZE_OFFSET: u32 = offsetof<RegionHeader>('sizeBytes');
export const REGION_VERSION_OFFSET: u32 = offsetof<RegionHeader>('version');
export const REGION_KIND_OFFSET: u32 = offsetof<RegionHeader>('kind');

/** Attached adapter's private base (0 = not attached). */
export function adapterBaseAddress(): u32 { return adapter().base; }
export function outBufferAddress(): u32 { return adapter().outBuffer; }
export function staticDataEnd(): u32 { return <u32>__heap_base; }

export function fenceCurrentValueAddress(fence: u32): u32 { return fenceValid(fence) ? fenceAt(fence).cvPhys : 0; }
export function fenceMonitoredValueAddress(fence: u32): u32 { return fenceValid(fence) ? fenceAt(fence).mvPhys : 0; }
export function fenceFlags(fence: u32): u32 { return fenceValid(fence) ? fenceAt(fence).flags : 0; }
export function fenceIsLive(fence: u32): u32 { return fenceValid(fence) ? 1 : 0; }
export function fenceSetDriverHandle(fence: u32, handle: u32): i32 {
  if (!fenceValid(fence)) return E_BAD_FENCE;
  fenceAt(fence).driverHandle = handle;
  return OK;
}
export function fenceDriverHandle(fence: u32): u32 { return fenceAt(fence).driverHandle; }
export function fenceLastSignaled(fence: u32): u64 { return fenceMonitored(fence) ? load<u64>(lastSignaledAddress(fence)) : 0; }
export function fenceSetLastSignaled(fence: u32, value: u64): void { if (fenceMonitored(fence)) store<u64>(lastSignaledAddress(fence), value); }
@inline function fenceMonitored(fence: u32): bool { return fenceValid(fence) && fenceAt(fence).kind == <u8>FENCE_KIND_MONITORED; }


