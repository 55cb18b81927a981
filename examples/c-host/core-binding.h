/*
 * The wddm-fence core as a C library: what a C host needs from the module,
 * whatever tool turned the module into C (or loaded it).
 *
 * core-binding.c implements this header over the C that Debian's wasm2c
 * 1.0.32 generates from build/core-nothreads.wasm. Every core export the host
 * calls has one wrapper here and one line there, so an export that is renamed
 * or split (docs/ABI.md) changes one place. The values of the layout
 * constants come from the module's exported globals, never from this file.
 */
#ifndef WDDM_FENCE_CORE_BINDING_H
#define WDDM_FENCE_CORE_BINDING_H

#include <stdint.h>

/*
 * Every exported global the host reads, by its export name. X(NAME) expands
 * once per constant. The C host reads each at start-up (some are mutable
 * globals that the module's start function sets: read them after
 * instantiation, never write them).
 */
#define CORE_CONSTANTS(X)                                                        \
  X(ABI_VERSION) X(LAYOUT_VERSION) X(PAGE_BYTES) X(STATIC_RESERVED_BYTES)        \
  X(REGION_MAGIC) X(REGION_KIND_SYSTEM) X(REGION_KIND_ADAPTER)                   \
  X(REGION_HEADER_BYTES) X(REGION_MAGIC_OFFSET) X(REGION_VERSION_OFFSET)         \
  X(REGION_KIND_OFFSET) X(REGION_FREE_PAGES_OFFSET)                              \
  X(ADAPTER_HEADER_BYTES) X(ADAPTER_GPU_SIGNALS_OFFSET)                          \
  X(ADAPTER_CMP_CHECKS_OFFSET) X(ADAPTER_INTERRUPTS_OFFSET)                      \
  X(ADAPTER_HEAP_PUSHES_OFFSET) X(ADAPTER_HEAP_POPS_OFFSET)                      \
  X(ADAPTER_FENCE_LIVE_OFFSET) X(ADAPTER_WAIT_BLOCK_LIVE_OFFSET)                 \
  X(ADAPTER_OUT_CAPACITY_OFFSET)                                                 \
  X(STEP_REPORT_BYTES) X(STEP_REPORT_VALUE_OFFSET) X(STEP_REPORT_OP_OFFSET)      \
  X(INTERRUPT_HANDLE_BYTES) X(SATISFIED_WAIT_BYTES)                              \
  X(SATISFIED_WAIT_WAITER_OFFSET) X(SATISFIED_WAIT_ENTRY_OFFSET)                 \
  X(SATISFIED_WAIT_COMPLETED_OFFSET) X(WAITER_MODE_ALL)                          \
  X(HEAP_MIN_CLASS) X(HEAP_MAX_CLASS) X(FENCE_KIND_NATIVE) X(MEMORY_SYSTEM)      \
  X(OP_WAIT) X(OP_SIGNAL)                                                        \
  X(STEP_IDLE) X(STEP_DONE) X(STEP_BLOCKED) X(STEP_WORK) X(STEP_INTERRUPT)       \
  X(STEP_UNBLOCKED) X(STEP_MONITORED_INTERRUPT)                                  \
  X(CAP_NATIVE_GPU_FENCE) X(CAP_OPTIMIZED_NATIVE_FENCE_INTERRUPT)                \
  X(NATIVE_FENCE_LOG_TYPE_WAITS) X(NATIVE_FENCE_LOG_TYPE_SIGNALS)                \
  X(NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED)                                  \
  X(NATIVE_FENCE_LOG_OPERATION_WAIT_UNBLOCKED)                                   \
  X(NATIVE_FENCE_LOG_HEADER_BYTES) X(NATIVE_FENCE_LOG_ENTRY_BYTES)               \
  X(NATIVE_FENCE_LOG_ENTRIES) X(NATIVE_FENCE_LOG_INDEX_OFFSET)                   \
  X(NATIVE_FENCE_LOG_TYPE_OFFSET) X(NATIVE_FENCE_LOG_COUNT_OFFSET)               \
  X(NATIVE_FENCE_LOG_ENTRY_VALUE_OFFSET) X(NATIVE_FENCE_LOG_ENTRY_HANDLE_OFFSET) \
  X(NATIVE_FENCE_LOG_ENTRY_OPERATION_OFFSET)                                     \
  X(NATIVE_FENCE_LOG_ENTRY_OBSERVED_OFFSET) X(NATIVE_FENCE_LOG_ENTRY_END_OFFSET) \
  X(OK) X(E_BAD_REGION) X(E_BAD_VERSION) X(E_TOO_SMALL) X(E_NO_PAGES)            \
  X(E_NO_FENCE_RECORDS) X(E_NO_PAGE_DESCRIPTORS) X(E_BAD_FENCE) X(E_HEAP_FULL)   \
  X(E_NO_WAIT_BLOCKS) X(E_BAD_WAIT_BLOCK) X(E_NO_GPU_VA) X(E_BAD_PROCESS)        \
  X(E_NO_QUEUES) X(E_BAD_QUEUE) X(E_RING_FULL) X(E_GPU_PAGE_FAULT)               \
  X(E_BAD_ENGINE) X(E_BAD_ARGUMENT) X(E_LOG_CORRUPT) X(E_NO_WAITERS)            \
  X(E_BAD_WAITER) X(E_GPU_WRITE_FAULT) X(E_DOORBELL_FULL) X(E_BAD_DOORBELL)     \
  X(GPU_VA_READ) X(GPU_VA_READ_WRITE)

/* One field per constant, with the value the module exports (core_open fills it). */
typedef struct {
#define CORE_CONSTANT_FIELD(name) uint32_t name;
  CORE_CONSTANTS(CORE_CONSTANT_FIELD)
#undef CORE_CONSTANT_FIELD
} core_constants_t;
extern core_constants_t core_constants;

/* A constant by its export name (for messages and the test overrides). */
typedef struct { const char *name; uint32_t *value; } core_constant_ref_t;
extern const core_constant_ref_t core_constant_refs[];
extern const unsigned core_constant_count;

/* The module's own facts about its import. */
#define CORE_MEMORY_MAXIMUM_PAGES 32768u /* env.memory's declared maximum */
#define WASM_PAGE_BYTES 65536u           /* WebAssembly's page, not the core's */

/*
 * Instantiates the core over a new linear memory of one 64 KiB page (maximum
 * CORE_MEMORY_MAXIMUM_PAGES, as the import declares) and reads every
 * constant into core_constants.
 */
void core_open(void);

/* Grows the memory to `pages` (the core never grows it itself). On failure prints why and returns 0. */
int core_memory_grow_to(uint32_t pages);

/* The linear memory the core runs in: bounds-checked little-endian reads and writes. */
uint32_t core_memory_bytes(void);
uint32_t memory_read_u32(uint32_t address);
uint64_t memory_read_u64(uint32_t address);
void memory_write_u32(uint32_t address, uint32_t value);

/* The exports, each a plain call (docs/ABI.md lists arguments, results, status codes). */
uint32_t core_staticDataEnd(void);
int32_t core_regionFormat(uint32_t base, uint32_t sizeBytes, uint32_t kind);
int32_t core_regionCheck(uint32_t base, uint32_t kind);
uint32_t core_regionFreePages(uint32_t base);
uint32_t core_adapterRegionBytes(uint32_t fences, uint32_t processes, uint32_t waitBlocks, uint32_t heapArenaBytes,
                                 uint32_t gpuVaPagesPerProcess, uint32_t engines, uint32_t queues,
                                 uint32_t ringEntries, uint32_t pendingCapacity, uint32_t outCapacity);
int32_t core_adapterFormat(uint32_t base, uint32_t sizeBytes, uint32_t adapterIndex, uint32_t capsBits,
                           uint32_t monitoredValueStride, uint32_t systemRegion, uint32_t localRegion,
                           uint32_t fences, uint32_t processes, uint32_t waitBlocks, uint32_t heapArenaBytes,
                           uint32_t heapLimitClass, uint32_t gpuVaPagesPerProcess, uint64_t gpuVaBase,
                           uint32_t engines, uint32_t queues, uint32_t ringEntries, uint32_t pendingCapacity,
                           uint32_t outCapacity);
uint32_t core_adapterBaseAddress(void);
uint32_t core_outBufferAddress(void);
uint64_t core_gpuVaMap(uint32_t slot, uint32_t phys, uint32_t access);
int32_t core_gpuVaUnmap(uint32_t slot, uint64_t va);
int32_t core_fenceCreate(uint32_t owner, uint32_t kind, uint32_t memoryKind, uint32_t shareable, uint32_t flags,
                         uint64_t initialValue, uint32_t cvPhys);
int32_t core_fenceDestroy(uint32_t fence);
int32_t core_fenceSetDriverHandle(uint32_t fence, uint32_t handle);
uint32_t core_fenceCurrentValueAddress(uint32_t fence);
uint32_t core_fenceMonitoredValueAddress(uint32_t fence);
int32_t core_waiterCreate(uint32_t hostId, uint32_t mode);
int32_t core_waitBlockAdd(uint32_t fence, uint64_t value, uint32_t waiter, uint32_t entry);
int32_t core_waiterRetire(uint32_t waiter);
int32_t core_fenceSatisfy(uint32_t fence, uint64_t currentValue, uint32_t limit);
uint64_t core_fenceMonitoredTarget(uint32_t fence);
uint32_t core_fenceWaiterCount(uint32_t fence);
int32_t core_heapCheck(uint32_t fence);
int32_t core_queueCreate(uint32_t engine, uint32_t owner);
int32_t core_queueDestroy(uint32_t queue);
int32_t core_queuePush(uint32_t queue, uint32_t op, uint32_t fence, uint64_t value, uint64_t gpuVa, uint32_t handle);
int32_t core_engineStep(uint32_t queue, uint64_t nowNs);
int32_t core_cmpWriteMonitoredValue(uint32_t fence, uint64_t monitored);
int32_t core_cmpBarrier(void);
uint64_t core_cmpReadCurrentValue(uint32_t fence);
int32_t core_cmpMonitoredValueCheck(uint32_t engine, uint32_t fence, uint64_t currentValue);
uint32_t core_engineInterruptLine(uint32_t engine);
uint32_t core_engineInterruptQueue(uint32_t engine);
int32_t core_engineTakeInterrupt(uint32_t engine);
uint64_t core_cpuReadCurrentValue(uint32_t fence);
uint64_t core_cpuReadMonitoredValue(uint32_t fence);
uint32_t core_logBufferCreate(uint32_t type);
int32_t core_logBufferDestroy(uint32_t phys);
int32_t core_queueSetLogBuffer(uint32_t queue, uint32_t type, uint32_t phys);
int32_t core_logFlush(uint32_t queue);
uint64_t core_logHeaderWord(uint32_t phys);
int32_t core_fenceWordWait(uint32_t cvPhys, uint64_t value, int64_t timeoutNs);

#endif
