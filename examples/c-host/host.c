/*
 * A host for the wddm-fence core written in C, with no JavaScript engine:
 * the core (build/core-nothreads.wasm, turned into C by wasm2c) linked into
 * a plain C program that plays the OS, the driver and the GPU's clock, and
 * follows docs/ABI.md alone.
 *
 *   start-up      read the constants the module exports, check the ABI
 *                 version and that the layout holds together; refuse the
 *                 module otherwise (exit 2, a message naming what is wrong)
 *   memory plan   STATIC_RESERVED_BYTES │ system region │ adapter private region
 *   sequence      one adapter, one fence, three CPU waiters (each add followed
 *                 by the MonitoredValue refresh), GPU signals and a GPU wait
 *                 from one engine, the interrupts the CMP raises and their
 *                 service, a waiter retired early, a waiter whose value was
 *                 already reached (the CMP raises on the MonitoredValue
 *                 update), the native fence log read, counters, teardown
 *
 * Every line it prints on stdout is one step and its values; the TypeScript
 * twin (sequence.mjs) runs the same sequence through the TypeScript host and
 * prints the same lines (test/c-host.test.ts compares them byte for byte).
 *
 * Exit status: 0 done, 1 a core call returned an error status, 2 the module
 * was refused (ABI version, layout), 64 bad command line, 70 the core trapped
 * or aborted (env.abort: a failed assertion, a bug in the core; or the
 * single-thread build refusing an unlimited wait).
 *
 * Options (the tests use them to prove the refusals):
 *   --expect-abi-version N    follow ABI version N instead of HOST_ABI_VERSION
 *   --override NAME=VALUE     use VALUE for the exported constant NAME
 *   --corrupt-region FIELD    overwrite the system region header's `magic` or
 *                             `version` after formatting, before checking it
 *   --wait-forever            ask for an unlimited fenceWordWait on a word that
 *                             never changes: the single-thread core refuses
 *                             through env.abort (exit 70, its message decoded)
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core-binding.h"
#include "wasm-rt-impl.h" /* wasm_rt_impl_try: where a trap in the core lands */

/* The ABI version this host was written for (docs/ABI.md, ABI_VERSION). */
#define HOST_ABI_VERSION 10u

#define K core_constants

/* ───────────────────────── the host's own choices ───────────────────────── */

enum {
  SYSTEM_PAGES = 64,          /* system memory: fence pages and log buffers */
  FENCES = 4, PROCESSES = 1, WAIT_BLOCKS = 8, HEAP_ARENA_BYTES = 4096, HEAP_LIMIT_CLASS = 4,
  GPU_VA_PAGES_PER_PROCESS = 8, ENGINES = 1, QUEUES = 1, RING_ENTRIES = 16,
  INTERRUPT_LIST_ENTRIES = 8, OUT_WORDS = 64, MONITORED_VALUE_STRIDE = 8,
  SATISFY_LIMIT = 16,         /* waiters popped per fenceSatisfy call (<= OUT_WORDS x 4 / SATISFIED_WAIT_BYTES) */
  ENGINE = 0, PROCESS = 0,
  DRIVER_HANDLE = 0x51,       /* hGlobalNativeFence: what interrupt lists name */
  USER_HANDLE = 0x77,         /* hNativeFence: what log entries name */
};
static const uint64_t GPU_VA_BASE = 0x100000000ull;
static const uint64_t UINT64_MAXIMUM = 0xFFFFFFFFFFFFFFFFull;

/* ───────────────────────────── errors ───────────────────────────── */

static uint32_t expected_abi_version = HOST_ABI_VERSION;

/* The name of a status code, found among the exported OK / E_* constants. */
static const char *status_name(int32_t status) {
  for (unsigned i = 0; i < core_constant_count; i++) {
    const char *name = core_constant_refs[i].name;
    if ((strncmp(name, "E_", 2) == 0 || strcmp(name, "OK") == 0) && (int32_t)*core_constant_refs[i].value == status) return name;
  }
  return "not a status code the core exports";
}

/* A negative return is a status code: the step failed and changed nothing. */
static int32_t check(int32_t result, const char *what) {
  if (result < 0) {
    fprintf(stderr, "error: %s returned %d (%s)\n", what, result, status_name(result));
    exit(1);
  }
  return result;
}

static void refuse(const char *format, ...) {
  va_list args;
  va_start(args, format);
  fputs("refusing the core: ", stderr);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
  exit(2);
}

/* ───────────────────────────── checks ───────────────────────────── */

/* A field of `width` bytes at `offset` lies inside a record of `record_bytes`, naturally aligned. */
static void field_fits(const char *field, uint32_t offset, uint32_t width, const char *record, uint32_t record_bytes) {
  if ((uint64_t)offset + width > record_bytes) {
    refuse("layout: %s (%u) + %u bytes runs past %s (%u)", field, offset, width, record, record_bytes);
  }
  if (offset % width != 0) refuse("layout: %s (%u) is not %u-byte aligned", field, offset, width);
}

/* Everything the host relies on, checked once before the first call that uses it. */
static void check_layout(void) {
  if (K.ABI_VERSION != expected_abi_version) {
    refuse("it exports ABI_VERSION %u; this host follows ABI version %u (docs/ABI.md lists what each version changed)",
           K.ABI_VERSION, expected_abi_version);
  }
  if (K.LAYOUT_VERSION == 0) refuse("layout: LAYOUT_VERSION is 0; every layout the core writes has a version from 1");
  if (K.PAGE_BYTES < 64 || (K.PAGE_BYTES & (K.PAGE_BYTES - 1)) != 0 || WASM_PAGE_BYTES % K.PAGE_BYTES != 0) {
    refuse("layout: PAGE_BYTES (%u) is not a power of two from 64 that divides the %u-byte WebAssembly page", K.PAGE_BYTES, WASM_PAGE_BYTES);
  }
  if (K.STATIC_RESERVED_BYTES == 0 || K.STATIC_RESERVED_BYTES % K.PAGE_BYTES != 0) {
    refuse("layout: STATIC_RESERVED_BYTES (%u) is not a whole number of PAGE_BYTES (%u)", K.STATIC_RESERVED_BYTES, K.PAGE_BYTES);
  }
  if (core_staticDataEnd() > K.STATIC_RESERVED_BYTES) {
    refuse("layout: the core's static data ends at %u, past STATIC_RESERVED_BYTES (%u)", core_staticDataEnd(), K.STATIC_RESERVED_BYTES);
  }
  field_fits("REGION_MAGIC_OFFSET", K.REGION_MAGIC_OFFSET, 4, "REGION_HEADER_BYTES", K.REGION_HEADER_BYTES);
  field_fits("REGION_VERSION_OFFSET", K.REGION_VERSION_OFFSET, 4, "REGION_HEADER_BYTES", K.REGION_HEADER_BYTES);
  field_fits("REGION_KIND_OFFSET", K.REGION_KIND_OFFSET, 4, "REGION_HEADER_BYTES", K.REGION_HEADER_BYTES);
  field_fits("REGION_FREE_PAGES_OFFSET", K.REGION_FREE_PAGES_OFFSET, 4, "REGION_HEADER_BYTES", K.REGION_HEADER_BYTES);
  field_fits("ADAPTER_GPU_SIGNALS_OFFSET", K.ADAPTER_GPU_SIGNALS_OFFSET, 8, "ADAPTER_HEADER_BYTES", K.ADAPTER_HEADER_BYTES);
  field_fits("ADAPTER_CMP_CHECKS_OFFSET", K.ADAPTER_CMP_CHECKS_OFFSET, 8, "ADAPTER_HEADER_BYTES", K.ADAPTER_HEADER_BYTES);
  field_fits("ADAPTER_INTERRUPTS_OFFSET", K.ADAPTER_INTERRUPTS_OFFSET, 8, "ADAPTER_HEADER_BYTES", K.ADAPTER_HEADER_BYTES);
  field_fits("ADAPTER_HEAP_PUSHES_OFFSET", K.ADAPTER_HEAP_PUSHES_OFFSET, 8, "ADAPTER_HEADER_BYTES", K.ADAPTER_HEADER_BYTES);
  field_fits("ADAPTER_HEAP_POPS_OFFSET", K.ADAPTER_HEAP_POPS_OFFSET, 8, "ADAPTER_HEADER_BYTES", K.ADAPTER_HEADER_BYTES);
  field_fits("ADAPTER_FENCE_LIVE_OFFSET", K.ADAPTER_FENCE_LIVE_OFFSET, 4, "ADAPTER_HEADER_BYTES", K.ADAPTER_HEADER_BYTES);
  field_fits("ADAPTER_WAIT_BLOCK_LIVE_OFFSET", K.ADAPTER_WAIT_BLOCK_LIVE_OFFSET, 4, "ADAPTER_HEADER_BYTES", K.ADAPTER_HEADER_BYTES);
  field_fits("ADAPTER_OUT_CAPACITY_OFFSET", K.ADAPTER_OUT_CAPACITY_OFFSET, 4, "ADAPTER_HEADER_BYTES", K.ADAPTER_HEADER_BYTES);
  field_fits("STEP_REPORT_VALUE_OFFSET", K.STEP_REPORT_VALUE_OFFSET, 8, "STEP_REPORT_BYTES", K.STEP_REPORT_BYTES);
  field_fits("STEP_REPORT_OP_OFFSET", K.STEP_REPORT_OP_OFFSET, 4, "STEP_REPORT_BYTES", K.STEP_REPORT_BYTES);
  field_fits("SATISFIED_WAIT_WAITER_OFFSET", K.SATISFIED_WAIT_WAITER_OFFSET, 4, "SATISFIED_WAIT_BYTES", K.SATISFIED_WAIT_BYTES);
  field_fits("SATISFIED_WAIT_ENTRY_OFFSET", K.SATISFIED_WAIT_ENTRY_OFFSET, 4, "SATISFIED_WAIT_BYTES", K.SATISFIED_WAIT_BYTES);
  field_fits("SATISFIED_WAIT_COMPLETED_OFFSET", K.SATISFIED_WAIT_COMPLETED_OFFSET, 4, "SATISFIED_WAIT_BYTES", K.SATISFIED_WAIT_BYTES);
  if (K.INTERRUPT_HANDLE_BYTES < 4) refuse("layout: INTERRUPT_HANDLE_BYTES (%u) cannot hold a 32-bit driver handle", K.INTERRUPT_HANDLE_BYTES);
  if (K.STEP_REPORT_BYTES > OUT_WORDS * 4u || (uint64_t)SATISFY_LIMIT * K.SATISFIED_WAIT_BYTES > OUT_WORDS * 4u) {
    refuse("layout: STEP_REPORT_BYTES (%u) or %u x SATISFIED_WAIT_BYTES (%u) does not fit the host's %u-word out buffer",
           K.STEP_REPORT_BYTES, (unsigned)SATISFY_LIMIT, K.SATISFIED_WAIT_BYTES, (unsigned)OUT_WORDS);
  }
  uint64_t log_bytes = (uint64_t)K.NATIVE_FENCE_LOG_HEADER_BYTES + (uint64_t)K.NATIVE_FENCE_LOG_ENTRIES * K.NATIVE_FENCE_LOG_ENTRY_BYTES;
  if (K.NATIVE_FENCE_LOG_ENTRIES == 0 || log_bytes > K.PAGE_BYTES) {
    refuse("layout: NATIVE_FENCE_LOG_HEADER_BYTES (%u) + NATIVE_FENCE_LOG_ENTRIES (%u) x NATIVE_FENCE_LOG_ENTRY_BYTES (%u) = %" PRIu64
           " bytes; a log buffer holds at least one entry in one PAGE_BYTES (%u) page",
           K.NATIVE_FENCE_LOG_HEADER_BYTES, K.NATIVE_FENCE_LOG_ENTRIES, K.NATIVE_FENCE_LOG_ENTRY_BYTES, log_bytes, K.PAGE_BYTES);
  }
  field_fits("NATIVE_FENCE_LOG_INDEX_OFFSET", K.NATIVE_FENCE_LOG_INDEX_OFFSET, 8, "NATIVE_FENCE_LOG_HEADER_BYTES", K.NATIVE_FENCE_LOG_HEADER_BYTES);
  field_fits("NATIVE_FENCE_LOG_TYPE_OFFSET", K.NATIVE_FENCE_LOG_TYPE_OFFSET, 4, "NATIVE_FENCE_LOG_HEADER_BYTES", K.NATIVE_FENCE_LOG_HEADER_BYTES);
  field_fits("NATIVE_FENCE_LOG_COUNT_OFFSET", K.NATIVE_FENCE_LOG_COUNT_OFFSET, 8, "NATIVE_FENCE_LOG_HEADER_BYTES", K.NATIVE_FENCE_LOG_HEADER_BYTES);
  field_fits("NATIVE_FENCE_LOG_ENTRY_VALUE_OFFSET", K.NATIVE_FENCE_LOG_ENTRY_VALUE_OFFSET, 8, "NATIVE_FENCE_LOG_ENTRY_BYTES", K.NATIVE_FENCE_LOG_ENTRY_BYTES);
  field_fits("NATIVE_FENCE_LOG_ENTRY_HANDLE_OFFSET", K.NATIVE_FENCE_LOG_ENTRY_HANDLE_OFFSET, 4, "NATIVE_FENCE_LOG_ENTRY_BYTES", K.NATIVE_FENCE_LOG_ENTRY_BYTES);
  field_fits("NATIVE_FENCE_LOG_ENTRY_OPERATION_OFFSET", K.NATIVE_FENCE_LOG_ENTRY_OPERATION_OFFSET, 4, "NATIVE_FENCE_LOG_ENTRY_BYTES", K.NATIVE_FENCE_LOG_ENTRY_BYTES);
  field_fits("NATIVE_FENCE_LOG_ENTRY_OBSERVED_OFFSET", K.NATIVE_FENCE_LOG_ENTRY_OBSERVED_OFFSET, 8, "NATIVE_FENCE_LOG_ENTRY_BYTES", K.NATIVE_FENCE_LOG_ENTRY_BYTES);
  field_fits("NATIVE_FENCE_LOG_ENTRY_END_OFFSET", K.NATIVE_FENCE_LOG_ENTRY_END_OFFSET, 8, "NATIVE_FENCE_LOG_ENTRY_BYTES", K.NATIVE_FENCE_LOG_ENTRY_BYTES);
  if (K.OK != 0) refuse("layout: OK is %d; success is 0", (int32_t)K.OK);
  for (unsigned i = 0; i < core_constant_count; i++) {
    const char *name = core_constant_refs[i].name;
    int32_t value = (int32_t)*core_constant_refs[i].value;
    if (strncmp(name, "E_", 2) == 0 && value >= 0) refuse("layout: status code %s is %d; status codes are negative", name, value);
  }
}

/* A region the core formatted starts with REGION_MAGIC, LAYOUT_VERSION and its kind. */
static void check_region_header(uint32_t base, uint32_t kind, const char *name) {
  uint32_t magic = memory_read_u32(base + K.REGION_MAGIC_OFFSET);
  uint32_t version = memory_read_u32(base + K.REGION_VERSION_OFFSET);
  uint32_t found_kind = memory_read_u32(base + K.REGION_KIND_OFFSET);
  int32_t verdict = core_regionCheck(base, kind);
  if (magic != K.REGION_MAGIC) {
    refuse("%s at %u: magic 0x%08x is not REGION_MAGIC 0x%08x (regionCheck says %s)", name, base, magic, K.REGION_MAGIC, status_name(verdict));
  }
  if (version != K.LAYOUT_VERSION) {
    refuse("%s at %u: layout version %u, the core lays out version %u (regionCheck says %s)", name, base, version, K.LAYOUT_VERSION, status_name(verdict));
  }
  if (found_kind != kind) refuse("%s at %u: kind %u, expected %u (regionCheck says %s)", name, base, found_kind, kind, status_name(verdict));
  if (verdict != (int32_t)K.OK) refuse("%s at %u: the header reads right but regionCheck says %s", name, base, status_name(verdict));
}

/* ───────────────────────────── the OS's part ───────────────────────────── */

/* What the host keeps about its one fence. */
typedef struct {
  uint32_t id;
  uint64_t monitored; /* the MonitoredValue the OS last asked the CMP for */
} host_fence_t;

/* Each waiter's record (waiterCreate's address), by the host's waiter id. */
static uint32_t waiter_record[8];

/*
 * Pops the waiters `current` satisfies; prints each SatisfiedWait (waiter,
 * entry, completed) from the out buffer, then retires each completed waiter
 * (its record and blocks go back; nothing else may happen in between).
 */
static uint32_t satisfy(const host_fence_t *fence, uint64_t current) {
  uint32_t total = 0;
  for (;;) {
    int32_t popped = check(core_fenceSatisfy(fence->id, current, SATISFY_LIMIT), "fenceSatisfy");
    uint32_t out = core_outBufferAddress();
    uint32_t completed[SATISFY_LIMIT];
    uint32_t done = 0;
    for (int32_t i = 0; i < popped; i++) {
      uint32_t record = out + K.SATISFIED_WAIT_BYTES * (uint32_t)i; /* SatisfiedWait i */
      uint32_t waiter = memory_read_u32(record + K.SATISFIED_WAIT_WAITER_OFFSET);
      uint32_t finished = memory_read_u32(record + K.SATISFIED_WAIT_COMPLETED_OFFSET);
      printf("satisfied waiter=%u entry=%u completed=%u\n", waiter, memory_read_u32(record + K.SATISFIED_WAIT_ENTRY_OFFSET), finished);
      if (finished) completed[done++] = waiter;
    }
    for (uint32_t k = 0; k < done; k++) {
      printf("waiter-retire waiter=%u fences=%d\n", completed[k], check(core_waiterRetire(waiter_record[completed[k]]), "waiterRetire"));
    }
    total += (uint32_t)popped;
    if (popped < SATISFY_LIMIT) return total;
  }
}

/*
 * After anything changes a fence's waiters (an add, a removal, a satisfy):
 * MonitoredValue := smallest waited value - 1 through the CMP's four steps
 * (write, barrier, read CurrentValue, raise: NF-11), then read CurrentValue
 * again and satisfy what it reached, until nothing changes (NF-09).
 */
static void refresh(host_fence_t *fence) {
  for (;;) {
    uint64_t target = core_fenceMonitoredTarget(fence->id);
    if (target == fence->monitored) {
      printf("monitored-value fence=%u target=%" PRIu64 " unchanged\n", fence->id, target);
      return;
    }
    check(core_cmpWriteMonitoredValue(fence->id, target), "cmpWriteMonitoredValue");
    core_cmpBarrier(); /* without it the CMP may read CurrentValue before its write is visible: a lost wakeup */
    uint64_t seen = core_cmpReadCurrentValue(fence->id);
    int32_t raised = check(core_cmpMonitoredValueCheck(ENGINE, fence->id, seen), "cmpMonitoredValueCheck");
    fence->monitored = target;
    printf("update-monitored fence=%u monitored=%" PRIu64 " raised=%d\n", fence->id, target, raised);
    uint64_t current = core_cpuReadCurrentValue(fence->id);
    uint32_t satisfied = satisfy(fence, current);
    printf("resample fence=%u current=%" PRIu64 " satisfied=%u\n", fence->id, current, satisfied);
    if (satisfied == 0) return;
  }
}

static int32_t add_waiter(host_fence_t *fence, uint32_t waiter, uint64_t value) {
  waiter_record[waiter] = (uint32_t)check(core_waiterCreate(waiter, K.WAITER_MODE_ALL), "waiterCreate");
  int32_t block = check(core_waitBlockAdd(fence->id, value, waiter_record[waiter], 0), "waitBlockAdd");
  printf("waiter-add waiter=%u value=%" PRIu64 " block=%d waiters=%u\n", waiter, value, block, core_fenceWaiterCount(fence->id));
  refresh(fence); /* the order rule: every add is followed by the MonitoredValue update */
  return block;
}

/* The interrupt service: ISR (take the payload) then DPC (satisfy the listed fences). */
static void service_interrupt(host_fence_t *fence) {
  uint32_t line = core_engineInterruptLine(ENGINE);
  uint32_t queue = core_engineInterruptQueue(ENGINE); /* read before engineTakeInterrupt clears it */
  int32_t count = core_engineTakeInterrupt(ENGINE);
  printf("interrupt engine=%u line=%u queue=%u count=%d", (unsigned)ENGINE, line, queue, count);
  uint32_t out = core_outBufferAddress();
  int listed = count == -1; /* -1: no list (collapsed); every fence with waiters is checked */
  for (int32_t i = 0; i < count; i++) {
    uint32_t handle = memory_read_u32(out + K.INTERRUPT_HANDLE_BYTES * (uint32_t)i);
    printf(" handle=0x%x", handle);
    if (handle == DRIVER_HANDLE) listed = 1;
  }
  printf("\n");
  if (!listed) return;
  uint64_t current = core_cpuReadCurrentValue(fence->id);
  uint32_t satisfied = satisfy(fence, current);
  printf("dpc fence=%u current=%" PRIu64 " satisfied=%u\n", fence->id, current, satisfied);
  if (satisfied > 0) refresh(fence);
}

/* ───────────────────────────── the GPU's part ───────────────────────────── */

static const char *step_name(int32_t step) {
  if (step == (int32_t)K.STEP_IDLE) return "idle";
  if (step == (int32_t)K.STEP_DONE) return "done";
  if (step == (int32_t)K.STEP_BLOCKED) return "blocked";
  if (step == (int32_t)K.STEP_WORK) return "work";
  if (step == (int32_t)K.STEP_INTERRUPT) return "interrupt";
  if (step == (int32_t)K.STEP_UNBLOCKED) return "unblocked";
  if (step == (int32_t)K.STEP_MONITORED_INTERRUPT) return "monitored-interrupt";
  return "unknown";
}

static const char *op_name(uint32_t op) {
  return op == K.OP_SIGNAL ? "signal" : op == K.OP_WAIT ? "wait" : "other";
}

/* One command of the queue at GPU time `now_ns`; the StepReport in the out buffer describes it (value, op). */
static int32_t gpu_step(uint32_t queue, uint64_t now_ns, const host_fence_t *fence) {
  int32_t step = check(core_engineStep(queue, now_ns), "engineStep");
  uint32_t out = core_outBufferAddress();
  if (step == (int32_t)K.STEP_IDLE) {
    printf("engine-step now=%" PRIu64 " result=%s\n", now_ns, step_name(step));
  } else {
    printf("engine-step now=%" PRIu64 " op=%s value=%" PRIu64 " result=%s current=%" PRIu64 "\n", now_ns,
           op_name(memory_read_u32(out + K.STEP_REPORT_OP_OFFSET)), memory_read_u64(out + K.STEP_REPORT_VALUE_OFFSET), step_name(step),
           core_cpuReadCurrentValue(fence->id));
  }
  return step;
}

static void read_log(uint32_t phys, const char *type_name) {
  uint64_t word = core_logHeaderWord(phys); /* low half FirstFreeEntryIndex, high half WraparoundCount: one atomic word */
  uint32_t first_free = (uint32_t)word, wraps = (uint32_t)(word >> 32);
  uint64_t entries = memory_read_u64(phys + K.NATIVE_FENCE_LOG_COUNT_OFFSET);
  printf("log type=%s header_type=%u entries=%" PRIu64 " first_free=%u wraparound=%u\n", type_name,
         memory_read_u32(phys + K.NATIVE_FENCE_LOG_TYPE_OFFSET), entries, first_free, wraps);
  uint32_t count = wraps == 0 ? first_free : (uint32_t)entries;
  uint32_t oldest = wraps == 0 ? 0 : first_free;
  for (uint32_t n = 0; n < count; n++) {
    uint32_t slot = (oldest + n) % (uint32_t)entries;
    uint32_t entry = phys + K.NATIVE_FENCE_LOG_HEADER_BYTES + slot * K.NATIVE_FENCE_LOG_ENTRY_BYTES;
    uint32_t operation = memory_read_u32(entry + K.NATIVE_FENCE_LOG_ENTRY_OPERATION_OFFSET);
    printf("log-entry type=%s slot=%u value=%" PRIu64 " handle=0x%x operation=%s observed=%" PRIu64 " end=%" PRIu64 "\n", type_name, slot,
           memory_read_u64(entry + K.NATIVE_FENCE_LOG_ENTRY_VALUE_OFFSET), memory_read_u32(entry + K.NATIVE_FENCE_LOG_ENTRY_HANDLE_OFFSET),
           operation == K.NATIVE_FENCE_LOG_OPERATION_SIGNAL_EXECUTED ? "signal-executed"
           : operation == K.NATIVE_FENCE_LOG_OPERATION_WAIT_UNBLOCKED ? "wait-unblocked" : "unknown",
           memory_read_u64(entry + K.NATIVE_FENCE_LOG_ENTRY_OBSERVED_OFFSET), memory_read_u64(entry + K.NATIVE_FENCE_LOG_ENTRY_END_OFFSET));
  }
}

/* ───────────────────────────── the sequence ───────────────────────────── */

static void run_sequence(const char *corrupt_region) {
  printf("abi version=%u layout=%u\n", K.ABI_VERSION, K.LAYOUT_VERSION);

  /* Memory plan: static data, system region, adapter private region. */
  uint32_t system_base = K.STATIC_RESERVED_BYTES;
  uint32_t system_bytes = SYSTEM_PAGES * K.PAGE_BYTES;
  uint32_t adapter_base = system_base + system_bytes;
  uint32_t adapter_bytes = core_adapterRegionBytes(FENCES, PROCESSES, WAIT_BLOCKS, HEAP_ARENA_BYTES, GPU_VA_PAGES_PER_PROCESS,
                                                   ENGINES, QUEUES, RING_ENTRIES, INTERRUPT_LIST_ENTRIES, OUT_WORDS);
  if (adapter_bytes == UINT32_MAX) refuse("adapterRegionBytes: these capacities need more than 4 GiB");
  uint64_t total_bytes = (uint64_t)adapter_base + adapter_bytes;
  uint32_t pages = (uint32_t)((total_bytes + WASM_PAGE_BYTES - 1) / WASM_PAGE_BYTES);
  if (!core_memory_grow_to(pages)) exit(1);
  printf("plan system=%u+%u adapter=%u+%u memory_pages=%u\n", system_base, system_bytes, adapter_base, adapter_bytes, pages);

  check(core_regionFormat(system_base, system_bytes, K.REGION_KIND_SYSTEM), "regionFormat");
  if (corrupt_region != NULL) {
    /* Tests only: a header someone else wrote (not the core, or another layout version). */
    if (strcmp(corrupt_region, "magic") == 0) memory_write_u32(system_base + K.REGION_MAGIC_OFFSET, 0x12345678u);
    else memory_write_u32(system_base + K.REGION_VERSION_OFFSET, K.LAYOUT_VERSION + 1);
  }
  check_region_header(system_base, K.REGION_KIND_SYSTEM, "system region");
  uint32_t free_pages_at_start = core_regionFreePages(system_base);
  printf("region kind=system magic=0x%08x version=%u free_pages=%u\n",
         memory_read_u32(system_base + K.REGION_MAGIC_OFFSET), memory_read_u32(system_base + K.REGION_VERSION_OFFSET), free_pages_at_start);

  uint32_t caps = K.CAP_NATIVE_GPU_FENCE | K.CAP_OPTIMIZED_NATIVE_FENCE_INTERRUPT;
  check(core_adapterFormat(adapter_base, adapter_bytes, 0, caps, MONITORED_VALUE_STRIDE, system_base, 0, FENCES, PROCESSES,
                           WAIT_BLOCKS, HEAP_ARENA_BYTES, HEAP_LIMIT_CLASS, GPU_VA_PAGES_PER_PROCESS, GPU_VA_BASE, ENGINES,
                           QUEUES, RING_ENTRIES, INTERRUPT_LIST_ENTRIES, OUT_WORDS), "adapterFormat");
  check_region_header(adapter_base, K.REGION_KIND_ADAPTER, "adapter private region");
  if (core_adapterBaseAddress() != adapter_base) refuse("adapterBaseAddress() is %u after adapterFormat(%u)", core_adapterBaseAddress(), adapter_base);
  printf("adapter base=%u caps=0x%x out_words=%u\n", adapter_base, caps, memory_read_u32(adapter_base + K.ADAPTER_OUT_CAPACITY_OFFSET));

  /* One native fence in system memory, its CurrentValue page mapped into the process's GPU VA space. */
  host_fence_t fence = { 0, UINT64_MAXIMUM };
  fence.id = (uint32_t)check(core_fenceCreate(PROCESS, K.FENCE_KIND_NATIVE, K.MEMORY_SYSTEM, 0, 0, 0, 0), "fenceCreate");
  check(core_fenceSetDriverHandle(fence.id, DRIVER_HANDLE), "fenceSetDriverHandle");
  uint32_t cv = core_fenceCurrentValueAddress(fence.id);
  uint32_t cv_page = cv & ~(K.PAGE_BYTES - 1);
  uint64_t va = core_gpuVaMap(PROCESS, cv_page, K.GPU_VA_READ_WRITE); /* CurrentValue: the GPU reads and writes it */
  if (va == 0) check((int32_t)K.E_NO_GPU_VA, "gpuVaMap");
  va += cv - cv_page;
  printf("fence id=%u handle=0x%x cv=%u mv=%u current=%" PRIu64 " monitored=%" PRIu64 " gpu_va=0x%" PRIx64 "\n", fence.id, (unsigned)DRIVER_HANDLE, cv,
         core_fenceMonitoredValueAddress(fence.id), core_cpuReadCurrentValue(fence.id), core_cpuReadMonitoredValue(fence.id), va);

  /* A hardware queue on the engine, with its two native fence log buffers. */
  uint32_t queue = (uint32_t)check(core_queueCreate(ENGINE, PROCESS), "queueCreate");
  uint32_t wait_log = core_logBufferCreate(K.NATIVE_FENCE_LOG_TYPE_WAITS);
  uint32_t signal_log = core_logBufferCreate(K.NATIVE_FENCE_LOG_TYPE_SIGNALS);
  if (wait_log == 0 || signal_log == 0) check((int32_t)K.E_NO_PAGES, "logBufferCreate");
  check(core_queueSetLogBuffer(queue, K.NATIVE_FENCE_LOG_TYPE_WAITS, wait_log), "queueSetLogBuffer");
  check(core_queueSetLogBuffer(queue, K.NATIVE_FENCE_LOG_TYPE_SIGNALS, signal_log), "queueSetLogBuffer");
  printf("queue id=%u engine=%u wait_log=%u signal_log=%u\n", queue, (unsigned)ENGINE, wait_log, signal_log);

  /* Three CPU waiters; each add is followed by the MonitoredValue refresh. */
  add_waiter(&fence, 1, 5);
  add_waiter(&fence, 2, 3);
  int32_t third = add_waiter(&fence, 3, 8);

  /* The GPU: signal 2 (below every waited value), signal 4 (past waiter 2's 3), a wait for 4. */
  check(core_queuePush(queue, K.OP_SIGNAL, fence.id, 2, va, USER_HANDLE), "queuePush");
  check(core_queuePush(queue, K.OP_SIGNAL, fence.id, 4, va, USER_HANDLE), "queuePush");
  check(core_queuePush(queue, K.OP_WAIT, fence.id, 4, va, USER_HANDLE), "queuePush");
  gpu_step(queue, 1000, &fence);
  if (gpu_step(queue, 2000, &fence) == (int32_t)K.STEP_INTERRUPT) service_interrupt(&fence);
  gpu_step(queue, 3000, &fence);

  /* Waiter 3 gives up (a timeout): it is retired (its block leaves the heap of one fence), then the refresh. */
  int32_t changed = check(core_waiterRetire(waiter_record[3]), "waiterRetire");
  printf("waiter-remove waiter=3 block=%d fences=%d waiters=%u\n", third, changed, core_fenceWaiterCount(fence.id));
  refresh(&fence);

  /* Signal 9 satisfies waiter 1. */
  check(core_queuePush(queue, K.OP_SIGNAL, fence.id, 9, va, USER_HANDLE), "queuePush");
  if (gpu_step(queue, 4000, &fence) == (int32_t)K.STEP_INTERRUPT) service_interrupt(&fence);

  /* Waiter 4 waits for a value already reached: the CMP raises on the MonitoredValue update. */
  add_waiter(&fence, 4, 6);
  if (core_engineInterruptLine(ENGINE)) service_interrupt(&fence);
  gpu_step(queue, 5000, &fence);

  /* The log read: DxgkDdiUpdateNativeFenceLogs first (logFlush), then the two buffers. */
  printf("log-flush queue=%u flushed=%d\n", queue, check(core_logFlush(queue), "logFlush"));
  read_log(wait_log, "waits");
  read_log(signal_log, "signals");

  printf("counters gpu_signals=%" PRIu64 " cmp_checks=%" PRIu64 " interrupts=%" PRIu64 " heap_pushes=%" PRIu64
         " heap_pops=%" PRIu64 " fences_live=%u wait_blocks_live=%u heap_check=%d\n",
         memory_read_u64(adapter_base + K.ADAPTER_GPU_SIGNALS_OFFSET), memory_read_u64(adapter_base + K.ADAPTER_CMP_CHECKS_OFFSET),
         memory_read_u64(adapter_base + K.ADAPTER_INTERRUPTS_OFFSET), memory_read_u64(adapter_base + K.ADAPTER_HEAP_PUSHES_OFFSET),
         memory_read_u64(adapter_base + K.ADAPTER_HEAP_POPS_OFFSET), memory_read_u32(adapter_base + K.ADAPTER_FENCE_LIVE_OFFSET),
         memory_read_u32(adapter_base + K.ADAPTER_WAIT_BLOCK_LIVE_OFFSET), core_heapCheck(fence.id));

  /* Teardown: every page goes back to the system region. */
  check(core_queueSetLogBuffer(queue, K.NATIVE_FENCE_LOG_TYPE_WAITS, 0), "queueSetLogBuffer");
  check(core_queueSetLogBuffer(queue, K.NATIVE_FENCE_LOG_TYPE_SIGNALS, 0), "queueSetLogBuffer");
  check(core_logBufferDestroy(wait_log), "logBufferDestroy");
  check(core_logBufferDestroy(signal_log), "logBufferDestroy");
  check(core_queueDestroy(queue), "queueDestroy");
  check(core_gpuVaUnmap(PROCESS, va), "gpuVaUnmap");
  check(core_fenceDestroy(fence.id), "fenceDestroy");
  uint32_t free_pages = core_regionFreePages(system_base);
  printf("teardown free_pages=%u fences_live=%u all_pages_back=%s\n", free_pages,
         memory_read_u32(adapter_base + K.ADAPTER_FENCE_LIVE_OFFSET), free_pages == free_pages_at_start ? "yes" : "no");
}

/* ───────────────────────────── main ───────────────────────────── */

static void usage(void) {
  fputs("usage: host [--expect-abi-version N] [--override NAME=VALUE]... [--corrupt-region magic|version] [--wait-forever]\n", stderr);
  exit(64);
}

static uint32_t parse_u32(const char *text) {
  char *end;
  long long value = strtoll(text, &end, 0);
  if (*text == '\0' || *end != '\0' || value < -2147483648ll || value > 4294967295ll) {
    fprintf(stderr, "error: '%s' is not a 32-bit number\n", text);
    usage();
  }
  return (uint32_t)value;
}

/* The command line, kept outside main's frame (main calls setjmp through wasm_rt_impl_try). */
static const char *overrides[16];
static unsigned override_count;
static const char *corrupt_region;
static int wait_forever;

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--expect-abi-version") == 0 && i + 1 < argc) expected_abi_version = parse_u32(argv[++i]);
    else if (strcmp(argv[i], "--override") == 0 && i + 1 < argc && override_count < 16) overrides[override_count++] = argv[++i];
    else if (strcmp(argv[i], "--corrupt-region") == 0 && i + 1 < argc &&
             (strcmp(argv[i + 1], "magic") == 0 || strcmp(argv[i + 1], "version") == 0)) corrupt_region = argv[++i];
    else if (strcmp(argv[i], "--wait-forever") == 0) wait_forever = 1;
    else usage();
  }

  wasm_rt_trap_t trap = wasm_rt_impl_try();
  if (trap != WASM_RT_TRAP_NONE) {
    fprintf(stderr, "core trapped: %s\n", wasm_rt_strerror(trap));
    return 70;
  }
  core_open();

  for (unsigned i = 0; i < override_count; i++) {
    const char *equals = strchr(overrides[i], '=');
    unsigned k = 0;
    while (equals != NULL && k < core_constant_count &&
           !(strlen(core_constant_refs[k].name) == (size_t)(equals - overrides[i]) &&
             strncmp(core_constant_refs[k].name, overrides[i], (size_t)(equals - overrides[i])) == 0)) k++;
    if (equals == NULL || k == core_constant_count) {
      fprintf(stderr, "error: --override %s: not NAME=VALUE with NAME one of the constants this host reads\n", overrides[i]);
      usage();
    }
    *core_constant_refs[k].value = parse_u32(equals + 1);
  }

  check_layout();
  if (wait_forever) {
    /* The word at STATIC_RESERVED_BYTES is 0 and nothing will ever make it 1. */
    if (!core_memory_grow_to(K.STATIC_RESERVED_BYTES / WASM_PAGE_BYTES + 1)) return 1;
    int32_t result = core_fenceWordWait(K.STATIC_RESERVED_BYTES, 1, -1);
    fprintf(stderr, "error: an unlimited wait on a word nobody changes returned %d\n", result);
    return 1;
  }
  run_sequence(corrupt_region);
  return 0;
}
