/*
 * reference.c: the reference driver (src/driver/reference.ts) written in C. The same DDIs, the same
 * handles, the same calls to the GPU and to Dxgkrnl in the same order, so its trace is the TypeScript
 * reference driver's byte for byte (test/c-drivers.test.ts runs every built-in scenario with both).
 *
 *   DDIs (kernel mode)           the native fence DDIs, hardware queues and their log buffers, kernel-mode
 *                                contexts, start/stop/reset; each checks its handles up front
 *   the GPU's events             the ISR (DxgkDdiInterruptRoutine), DMA completed, page faults, every
 *                                executed step and stretch reported to the OS in the driver's own handles
 *   UmdSubmitToHwQueue           the user-mode half: writes a hardware queue's ring, rings its doorbell
 *
 * What it keeps (all in its pool, sized at DxgkDdiAddDevice from the adapter's limits):
 *
 *   hGlobalNativeFence = GLOBAL_HANDLE_BASE + generation (4 bits) × 2^24 + core fence id
 *   primaryOpen[core fence id]   1 while the fence's first hLocalNativeFence (derived from hGlobal) is out
 *   otherOpens[core fence id]    its other open local handles, each in `locals` (hLocal → hGlobal)
 *   queues[core queue id]        a hardware queue or context: its handle, engine, process slot, kind
 *   hwQueues, contexts           handle → core queue id; `submitted`: SubmissionFenceId → hContext
 *
 * It finds a fence's record from the address it is given (GpuFenceAtCurrentValue), checks a handle by
 * reading the core's fence record at the offsets WDDM_GPU_LAYOUT gives (no call), and writes CurrentValue
 * with one 64-bit atomic store at CurrentValueKernelCpuVa's word.
 *
 * Extension points (weak: a driver linked with this file may replace them, as examples/drivers/c/broken/
 * does; reference.h declares them): ReferenceCmpOrder, ReferenceNotifyInterrupt, ReferenceProgramFirmware.
 *
 * Built with -DWDDM_REFERENCE_LIBRARY (build.sh does for a file marked "link with reference.c as a library",
 * as template.c is) it exports nothing: each DDI is a function named Reference<DDI> that the other file's
 * exports call, and ReferenceFenceOf finds a fence's core id from its handle.
 */
#include "reference.h"

#ifdef WDDM_REFERENCE_LIBRARY
#define DDI(name) Reference##name
#define REFERENCE(name) Reference##name
#else
#define DDI(name) WDDM_EXPORT(name) name
#define REFERENCE(name) name
#endif

#define WEAK __attribute__((weak))

#define GLOBAL_HANDLE_BASE 0x10000000u
#define LOCAL_HANDLE_BASE 0x20000000u
#define FENCE_ID_MASK 0x00FFFFFFu
/* 'WDQ1': the first word of a hardware queue's private driver data (then its hHwQueue). */
#define QUEUE_DATA_MAGIC 0x31514457u
/* Commands the UMD stages in the out buffer per GpuQueuePushStaged call (64 × 32 B: the out buffer holds 128). */
#define STAGED_COMMANDS 64u

/* ───────────────────────────── a map of 32-bit keys (handles, ids) ───────────────────────────── */

/* Open addressing in the pool; grows by doubling (the old table stays in the pool: it is a bump allocator). */
typedef struct { UINT *keys; UINT *values; BYTE *states; UINT capacity; UINT used; UINT live; } HandleMap;
enum { SLOT_EMPTY, SLOT_LIVE, SLOT_DELETED };

static UINT slotOf(const HandleMap *map, UINT key) { return (key * 0x9E3779B1u) & (map->capacity - 1); }

static BOOLEAN mapMake(HandleMap *map, UINT capacity) {
  map->keys = WddmPoolAllocate(capacity * 4);
  map->values = WddmPoolAllocate(capacity * 4);
  map->states = WddmPoolAllocate(capacity);
  map->capacity = capacity;
  map->used = map->live = 0;
  return map->keys && map->values && map->states;
}

static int32_t mapFind(const HandleMap *map, UINT key) {
  for (UINT slot = slotOf(map, key), n = 0; n < map->capacity; slot = (slot + 1) & (map->capacity - 1), n++) {
    if (map->states[slot] == SLOT_EMPTY) return -1;
    if (map->states[slot] == SLOT_LIVE && map->keys[slot] == key) return (int32_t)slot;
  }
  return -1;
}

static BOOLEAN mapGet(const HandleMap *map, UINT key, UINT *value) {
  int32_t slot = mapFind(map, key);
  if (slot < 0) return FALSE;
  *value = map->values[slot];
  return TRUE;
}

static BOOLEAN mapSet(HandleMap *map, UINT key, UINT value) {
  int32_t found = mapFind(map, key);
  if (found >= 0) { map->values[found] = value; return TRUE; }
  if ((map->used + 1) * 4 > map->capacity * 3) {
    /* Rebuilt at twice the size when live entries fill half of it, else at the same size (drops the deleted slots). */
    HandleMap old = *map;
    if (!mapMake(map, old.live * 2 >= old.capacity ? old.capacity * 2 : old.capacity)) { *map = old; return FALSE; }
    for (UINT i = 0; i < old.capacity; i++) if (old.states[i] == SLOT_LIVE) mapSet(map, old.keys[i], old.values[i]);
  }
  UINT slot = slotOf(map, key);
  while (map->states[slot] == SLOT_LIVE) slot = (slot + 1) & (map->capacity - 1);
  if (map->states[slot] == SLOT_EMPTY) map->used++;
  map->states[slot] = SLOT_LIVE;
  map->keys[slot] = key;
  map->values[slot] = value;
  map->live++;
  return TRUE;
}

static void mapDelete(HandleMap *map, UINT key) {
  int32_t slot = mapFind(map, key);
  if (slot < 0) return;
  map->states[slot] = SLOT_DELETED;
  map->live--;
}

/* ───────────────────────────── the driver's state ───────────────────────────── */

typedef struct { BOOLEAN Live; BYTE Kind; HANDLE Handle; UINT Engine; UINT ProcessSlot; } DRIVER_QUEUE;

static struct {
  /* What AddDevice was told. */
  UINT engineCount, hardwareCaps, interruptPayload, ringEntries, maxFences, maxQueues, granularity;
  BOOLEAN evaluateLegacyMonitoredFences, queryFeatureBeforeAdvertising, monitoredValueBarrier, enginesWriteMonitoredFences, doorbell;
  DXGK_NATIVE_FENCE_CAPS nativeFenceCaps;
  WDDM_GPU_LAYOUT layout;
  /* StartDevice and after. */
  BOOLEAN started, stopped, nativeFenceEnabled, optimizedInterrupt;
  UINT generation, nextLocal, nextQueue, nextContext;
  BYTE *primaryOpen;           /* [maxFences + 1] */
  UINT *otherOpens;            /* [maxFences + 1] */
  HandleMap locals, hwQueues, contexts, submitted;
  DRIVER_QUEUE *queues;        /* [maxQueues + 1], by core queue id */
  BYTE *monitoredRaised;       /* [engineCount]: a monitored fence write raised the engine's pending interrupt */
  HANDLE *interruptList;       /* the ISR's copy of an engine's list */
  UINT interruptListCapacity;
  UINT *resetOrder;            /* [maxQueues]: a reset's queues, in the order they were made */
  /* writeCurrentValue's last fence (checked live and that handle's again at each use). */
  HANDLE lastHandle;
  UINT lastRecord;
  /* DxgkDdiUpdateMonitoredValues in progress (Granularity STEP): MonitoredValueUpdateSteps. */
  struct { UINT *fences; UINT64 *values; UINT count, capacity, index, position, orderLength; UINT order[4]; UINT64 currentValue; } steps;
} g;

/* ───────────────────────────── extension points ───────────────────────────── */

/* The CMP's steps for one fence in DxgkDdiUpdateMonitoredValues, in order (NF-11): a, b, c, d; without the
 * barrier (WDDM_ADAPTER_INFO.MonitoredValueBarrier FALSE) a, c, d. Returns how many. */
WEAK UINT ReferenceCmpOrder(UINT order[4]) {
  UINT n = 0;
  order[n++] = CMP_WRITE_MONITORED_VALUE;
  if (g.monitoredValueBarrier) order[n++] = CMP_BARRIER;
  order[n++] = CMP_READ_CURRENT_VALUE;
  order[n++] = CMP_CHECK;
  return n;
}

/* The ISR's last step: the interrupt's data to Dxgkrnl (INT-01…06). */
WEAK void ReferenceNotifyInterrupt(const DXGKARGCB_NOTIFY_INTERRUPT_DATA *data) { DxgkCbNotifyInterrupt(data); }

/* What AddDevice programs into the GPU's firmware: the documented behaviour (LOG-04's order, virtual-time stamps). */
WEAK void ReferenceProgramFirmware(WDDM_GPU_FIRMWARE *firmware) { (void)firmware; }

/* ───────────────────────────── fences, by handle ───────────────────────────── */

/* Is the fence record at `record` live and `hGlobal`'s? */
static BOOLEAN holds(UINT record, HANDLE hGlobal) {
  return WddmRead8(record + g.layout.FenceStateOffset) == g.layout.FenceStateLive && WddmRead32(record + g.layout.FenceDriverHandleOffset) == hGlobal;
}

/* The address of the live core fence record `hGlobal` names (its id live, and the handle the core keeps for it hGlobal), 0 for none. */
static UINT recordOf(HANDLE hGlobal) {
  if (hGlobal < GLOBAL_HANDLE_BASE || hGlobal >= LOCAL_HANDLE_BASE) return 0;
  UINT id = hGlobal & FENCE_ID_MASK;
  if (id == 0 || id > WddmRead32(g.layout.FenceCapacityAddress)) return 0;
  UINT record = WddmRead32(g.layout.FenceTableAddress) + (id - 1) * g.layout.FenceRecordBytes;
  return holds(record, hGlobal) ? record : 0;
}

/* The core fence id of `hGlobal`, a live native fence this driver made; -1 otherwise. */
static int32_t fenceOf(HANDLE hGlobal) { return recordOf(hGlobal) == 0 ? -1 : (int32_t)(hGlobal & FENCE_ID_MASK); }

#ifdef WDDM_REFERENCE_LIBRARY
int32_t ReferenceFenceOf(HANDLE hGlobal) { return fenceOf(hGlobal); }
#endif

/* The core fence id of `hGlobal`, or a driver fault naming the DDI (written to *status). */
static int32_t fence(HANDLE hGlobal, const char *ddi, NTSTATUS *status) {
  int32_t id = fenceOf(hGlobal);
  if (id < 0) *status = WddmFault("%s: unknown hGlobalNativeFence 0x%x", ddi, hGlobal);
  return id;
}

/* The core fence a command names by GPU VA in the process `slot`, 0 when none (the GPU then faults on the VA). */
static UINT fenceAtGpuVa(UINT slot, UINT64 gpuVa) {
  UINT physical = GpuVaTranslate(slot, gpuVa);
  if (physical == 0) return 0;
  int32_t id = GpuFenceAtCurrentValue(physical);
  return id > 0 ? (UINT)id : 0;
}

/* Checks hGlobal and writes CurrentValue with one 64-bit atomic store at its word (NF-07). */
static NTSTATUS writeCurrentValue(HANDLE hGlobal, UINT64 value) {
  UINT record = hGlobal == g.lastHandle ? g.lastRecord : 0;
  if (record == 0 || !holds(record, hGlobal)) {
    record = recordOf(hGlobal);
    if (record == 0) return WddmFault("DxgkDdiUpdateCurrentValuesFromCpu: unknown hGlobalNativeFence 0x%x", hGlobal);
    g.lastHandle = hGlobal;
    g.lastRecord = record;
  }
  UINT currentValue = WddmRead32(record + g.layout.FenceCurrentValueOffset);
  __atomic_store_n((UINT64 *)(uintptr_t)currentValue, value, __ATOMIC_SEQ_CST);
  return STATUS_SUCCESS;
}

/* ───────────────────────────── queues, by handle ───────────────────────────── */

static DRIVER_QUEUE *queueAt(UINT coreQueue) {
  return coreQueue >= 1 && coreQueue <= g.maxQueues && g.queues[coreQueue].Live ? &g.queues[coreQueue] : NULL;
}

/* The hardware queue behind hHwQueue (its core id in *coreQueue); a handle this driver never made is a driver fault. */
static NTSTATUS queue(HANDLE hHwQueue, const char *ddi, UINT *coreQueue) {
  if (!mapGet(&g.hwQueues, hHwQueue, coreQueue)) return WddmFault("%s: unknown hHwQueue 0x%x", ddi, hHwQueue);
  return STATUS_SUCCESS;
}

static void forgetQueue(UINT coreQueue) {
  DRIVER_QUEUE *q = &g.queues[coreQueue];
  if (q->Kind == WDDM_QUEUE_KIND_HW_QUEUE) mapDelete(&g.hwQueues, q->Handle); else mapDelete(&g.contexts, q->Handle);
  q->Live = FALSE;
}

#define CHECK_GPU(call, what) do { int32_t status_ = (call); if (status_ < 0) return WddmGpuFailure(status_, what); } while (0)

/* ═════════════════════════════ DDIs ═════════════════════════════ */

NTSTATUS DDI(DxgkDdiAddDevice)(const WDDM_ADAPTER_INFO *info) {
  g.engineCount = info->EngineCount;
  g.hardwareCaps = info->HardwareCaps;
  g.nativeFenceCaps = info->NativeFenceCaps;
  g.interruptPayload = info->InterruptPayload;
  g.evaluateLegacyMonitoredFences = info->EvaluateLegacyMonitoredFences;
  g.queryFeatureBeforeAdvertising = info->QueryFeatureBeforeAdvertising;
  g.monitoredValueBarrier = info->MonitoredValueBarrier;
  g.enginesWriteMonitoredFences = info->EnginesWriteMonitoredFences;
  g.ringEntries = info->RingEntries;
  g.maxFences = info->MaxFences;
  g.maxQueues = info->MaxQueues;
  g.granularity = info->Granularity;
  g.doorbell = info->DoorbellPresent;
  g.layout = info->Layout;
  g.nextLocal = 0x2000;
  g.nextQueue = 0x3000;
  g.nextContext = 0x4000;
  WddmPoolInitialize(info->PoolBase, info->PoolBytes);
  UINT queueSlots = 16;
  while (queueSlots < 2 * g.maxQueues) queueSlots *= 2;
  g.primaryOpen = WddmPoolAllocate(g.maxFences + 1);
  g.otherOpens = WddmPoolAllocate((g.maxFences + 1) * 4);
  g.queues = WddmPoolAllocate((g.maxQueues + 1) * sizeof(DRIVER_QUEUE));
  g.monitoredRaised = WddmPoolAllocate(g.engineCount);
  g.interruptListCapacity = g.layout.OutBufferBytes / g.layout.InterruptHandleBytes;
  g.interruptList = WddmPoolAllocate(g.interruptListCapacity * 4);
  g.resetOrder = WddmPoolAllocate(g.maxQueues * 4);
  g.steps.capacity = g.maxFences;
  g.steps.fences = WddmPoolAllocate(g.steps.capacity * 4);
  g.steps.values = WddmPoolAllocate(g.steps.capacity * 8);
  if (!g.primaryOpen || !g.otherOpens || !g.queues || !g.monitoredRaised || !g.interruptList || !g.resetOrder || !g.steps.fences || !g.steps.values
      || !mapMake(&g.locals, 64) || !mapMake(&g.hwQueues, queueSlots) || !mapMake(&g.contexts, queueSlots) || !mapMake(&g.submitted, 64)) {
    return WddmFault("DxgkDdiAddDevice: the driver's pool (%u bytes) cannot hold its tables for %u fences and %u queues", info->PoolBytes, g.maxFences, g.maxQueues);
  }
  WDDM_GPU_FIRMWARE firmware = { WDDM_SIGNAL_LOG_ENTRY_FIRST, WDDM_TIMESTAMP_VIRTUAL_TIME };
  ReferenceProgramFirmware(&firmware);
  if (firmware.SignalLogOrder != WDDM_SIGNAL_LOG_ENTRY_FIRST || firmware.TimestampSource != WDDM_TIMESTAMP_VIRTUAL_TIME) GpuProgramFirmware(&firmware);
  return STATUS_SUCCESS;
}

/* CAP-02: IsFeatureEnabled → QueryFeatureInterface → GetOSCaps before advertising NativeGpuFence. */
NTSTATUS DDI(DxgkDdiStartDevice)(WDDM_START_DEVICE_RESULT *result) {
  g.started = TRUE;
  UINT caps = g.hardwareCaps & ~DXGK_VIDSCHCAPS_NATIVE_GPU_FENCE & ~DXGK_VIDSCHCAPS_OPTIMIZED_NATIVE_FENCE_SIGNALED_INTERRUPT;
  BOOLEAN hardwareNative = (g.hardwareCaps & DXGK_VIDSCHCAPS_NATIVE_GPU_FENCE) != 0;
  if (hardwareNative && g.queryFeatureBeforeAdvertising) {
    DXGKARGCB_ISFEATUREENABLED2 enabled = { .FeatureId = DXGK_FEATURE_NATIVE_FENCE };
    DxgkCbIsFeatureEnabled(&enabled);
    if (enabled.Enabled) {
      DXGKCBINT_FEATURE_NATIVEFENCE_1 table = { 0 };
      DXGKARGCB_QUERYFEATUREINTERFACE query = { .FeatureId = DXGK_FEATURE_NATIVE_FENCE, .Version = enabled.Version, .pInterface = &table };
      if (NT_SUCCESS(DxgkCbQueryFeatureInterface(&query))) {
        DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1 osCaps;
        DxgkCbNativeFenceGetOSCaps(table.Context, &osCaps);
        g.nativeFenceEnabled = TRUE;
      }
    }
  } else if (hardwareNative) {
    g.nativeFenceEnabled = TRUE; /* advertising NativeGpuFence without asking the OS (QueryFeatureBeforeAdvertising FALSE) */
  }
  if (g.nativeFenceEnabled) {
    caps |= DXGK_VIDSCHCAPS_NATIVE_GPU_FENCE;
    caps |= g.hardwareCaps & DXGK_VIDSCHCAPS_OPTIMIZED_NATIVE_FENCE_SIGNALED_INTERRUPT;
    g.optimizedInterrupt = (caps & DXGK_VIDSCHCAPS_OPTIMIZED_NATIVE_FENCE_SIGNALED_INTERRUPT) != 0;
  }
  result->VidSchCaps = caps;
  result->NativeFenceCaps = g.nativeFenceCaps;
  result->EnginesWriteMonitoredFences = g.enginesWriteMonitoredFences;
  return STATUS_SUCCESS;
}

NTSTATUS DDI(DxgkDdiQueryAdapterInfo)(const DXGKARG_QUERYADAPTERINFO *args) {
  if (args->Type != DXGKQAITYPE_NATIVE_FENCE_CAPS || args->OutputDataSize < sizeof(DXGK_NATIVE_FENCE_CAPS)) {
    return WddmFault("DxgkDdiQueryAdapterInfo: type %u with %u bytes; expected DXGKQAITYPE_NATIVE_FENCE_CAPS with a DXGK_NATIVE_FENCE_CAPS", args->Type, args->OutputDataSize);
  }
  *(DXGK_NATIVE_FENCE_CAPS *)args->pOutputData = g.nativeFenceCaps;
  return STATUS_SUCCESS;
}

/* The OS allocated the storage; the driver finds the fence's record by where CurrentValue is. */
NTSTATUS DDI(DxgkDdiCreateNativeFence)(DXGKARG_CREATENATIVEFENCE *args) {
  UINT currentValue = WDDM_PHYSICAL(args->CurrentValueKernelCpuVa);
  int32_t coreFence = GpuFenceAtCurrentValue(currentValue);
  if (coreFence <= 0) return WddmFault("DxgkDdiCreateNativeFence: no fence storage at CurrentValueKernelCpuVa 0x%llx", args->CurrentValueKernelCpuVa);
  if ((UINT)coreFence > FENCE_ID_MASK) return WddmFault("DxgkDdiCreateNativeFence: core fence id %d does not fit the handle's 24 bits", coreFence);
  /* The handle names the core id (the core keeps the handle, so it is checked against it): no table of our own. */
  HANDLE hGlobal = GLOBAL_HANDLE_BASE + (g.generation++ & 0xF) * 0x1000000u + (UINT)coreFence;
  CHECK_GPU(GpuFenceSetDriverHandle((UINT)coreFence, hGlobal), "DxgkDdiCreateNativeFence");
  g.primaryOpen[coreFence] = 0;
  g.otherOpens[coreFence] = 0;
  /* XA-07: this adapter's doorbell scheduler learns which local fence a shared CurrentValue word is. */
  if (g.doorbell) GpuDoorbellRegister(currentValue, (UINT)coreFence);
  args->hGlobalNativeFence = hGlobal;
  return STATUS_SUCCESS;
}

NTSTATUS DDI(DxgkDdiOpenNativeFence)(DXGKARG_OPENNATIVEFENCE *args) {
  NTSTATUS status = STATUS_SUCCESS;
  int32_t coreFence = fence(args->hGlobalNativeFence, "DxgkDdiOpenNativeFence", &status);
  if (coreFence < 0) return status;
  HANDLE hLocal;
  if (g.primaryOpen[coreFence] == 0) {
    hLocal = args->hGlobalNativeFence - GLOBAL_HANDLE_BASE + LOCAL_HANDLE_BASE;
    g.primaryOpen[coreFence] = 1;
  } else {
    hLocal = g.nextLocal++;
    if (!mapSet(&g.locals, hLocal, args->hGlobalNativeFence)) {
      return WddmRefuse(STATUS_INSUFFICIENT_RESOURCES, NULL, NULL, NULL, "DxgkDdiOpenNativeFence: the driver's pool has no room for another local handle");
    }
    g.otherOpens[coreFence]++;
  }
  args->hLocalNativeFence = hLocal;
  return STATUS_SUCCESS;
}

NTSTATUS DDI(DxgkDdiCloseNativeFence)(const DXGKARG_CLOSENATIVEFENCE *args) {
  HANDLE hLocal = args->hLocalNativeFence;
  BOOLEAN derived = hLocal >= LOCAL_HANDLE_BASE && hLocal < LOCAL_HANDLE_BASE + 0x10000000u;
  HANDLE hGlobal = 0;
  BOOLEAN known = derived ? (hGlobal = hLocal - LOCAL_HANDLE_BASE + GLOBAL_HANDLE_BASE, TRUE) : mapGet(&g.locals, hLocal, &hGlobal);
  int32_t coreFence = known ? fenceOf(hGlobal) : -1;
  if (coreFence < 0 || (derived && g.primaryOpen[coreFence] == 0)) return WddmFault("DxgkDdiCloseNativeFence: unknown hLocalNativeFence 0x%x", hLocal);
  if (derived) { g.primaryOpen[coreFence] = 0; return STATUS_SUCCESS; }
  mapDelete(&g.locals, hLocal);
  g.otherOpens[coreFence]--;
  return STATUS_SUCCESS;
}

NTSTATUS DDI(DxgkDdiDestroyNativeFence)(const DXGKARG_DESTROYNATIVEFENCE *args) {
  NTSTATUS status = STATUS_SUCCESS;
  int32_t coreFence = fence(args->hGlobalNativeFence, "DxgkDdiDestroyNativeFence", &status);
  if (coreFence < 0) return status;
  UINT open = g.primaryOpen[coreFence] + g.otherOpens[coreFence];
  if (open) return WddmFault("DxgkDdiDestroyNativeFence: 0x%x still has %u open local handle(s)", args->hGlobalNativeFence, open);
  /* Forgotten: interrupt lists the core still builds name handle 0 until the storage is freed (after this DDI). */
  CHECK_GPU(GpuFenceSetDriverHandle((UINT)coreFence, 0), "DxgkDdiDestroyNativeFence");
  if (g.doorbell) GpuDoorbellUnregister(GpuFenceCurrentValueAddress((UINT)coreFence));
  return STATUS_SUCCESS;
}

/* NF-07: write each value to CurrentValue, then rescan the run list; NotificationOnly (XA-04): only rescan. */
NTSTATUS DDI(DxgkDdiUpdateCurrentValuesFromCpu)(const DXGKARG_UPDATECURRENTVALUESFROMCPU *args) {
  if (!args->Flags.NotificationOnly) {
    for (UINT i = 0; i < args->NumFences; i++) {
      NTSTATUS status = writeCurrentValue(args->NativeFenceArray[i], args->UpdatedValueArray[i]);
      if (!NT_SUCCESS(status)) return status;
    }
  }
  GpuRescanRunList();
  return STATUS_SUCCESS;
}

/* The one-fence form (docs/DRIVERS.md): what the array form does for NumFences 1 and no flag. */
NTSTATUS DDI(DxgkDdiUpdateOneCurrentValueFromCpu)(HANDLE hGlobalNativeFence, UINT64 value, UINT64 currentValueKernelCpuVa) {
  (void)currentValueKernelCpuVa; /* found by its handle, as in the array form */
  NTSTATUS status = writeCurrentValue(hGlobalNativeFence, value);
  if (!NT_SUCCESS(status)) return status;
  GpuRescanRunList();
  return STATUS_SUCCESS;
}

/* One CMP step of DxgkDdiUpdateMonitoredValues for `fence` (the whole DDI and the stepped one run the same steps). */
static NTSTATUS cmpStep(UINT step, UINT fence, UINT64 monitoredValue, UINT64 *currentValue) {
  switch (step) {
    case CMP_WRITE_MONITORED_VALUE: CHECK_GPU(GpuCmpWriteMonitoredValue(fence, monitoredValue), "DxgkDdiUpdateMonitoredValues"); break;
    case CMP_BARRIER: GpuCmpBarrier(); break;
    case CMP_READ_CURRENT_VALUE: *currentValue = GpuCmpReadCurrentValue(fence); break;
    case CMP_CHECK: {
      int32_t raised = GpuCmpMonitoredValueCheck(0, fence, *currentValue);
      if (raised < 0) return WddmGpuFailure(raised, "DxgkDdiUpdateMonitoredValues");
      if (raised == 1) GpuRaiseInterrupt(0);
      break;
    }
  }
  return STATUS_SUCCESS;
}

/* The stepped DDI's next step (MonitoredValueUpdateSteps.step): 1 when the DDI has returned, 0 when more is left. */
int32_t DDI(WddmDdiUpdateMonitoredValuesStep)(void) {
  NTSTATUS status = cmpStep(g.steps.order[g.steps.position], g.steps.fences[g.steps.index], g.steps.values[g.steps.index], &g.steps.currentValue);
  if (!NT_SUCCESS(status)) return -1;
  if (++g.steps.position < g.steps.orderLength) return 0;
  g.steps.position = 0;
  g.steps.currentValue = 0;
  return ++g.steps.index >= g.steps.count ? 1 : 0;
}

/*
 * For each fence, in this order (NF-11): write the new MonitoredValue, memory barrier, read CurrentValue,
 * raise the interrupt if CurrentValue > MonitoredValue. Without the barrier a signal still in an engine's
 * write buffer is missed and the wakeup can be lost (NF-10). Granularity STEP: one CMP step per OS step.
 */
NTSTATUS DDI(DxgkDdiUpdateMonitoredValues)(const DXGKARG_UPDATEMONITOREDVALUES *args) {
  const char *ddi = "DxgkDdiUpdateMonitoredValues";
  NTSTATUS status = STATUS_SUCCESS;
  UINT order[4];
  UINT orderLength = ReferenceCmpOrder(order);
  if (g.granularity == WDDM_GRANULARITY_STEP && args->NumFences > 0) {
    if (args->NumFences > g.steps.capacity) return WddmFault("%s: %u fences, more than the %u this adapter has", ddi, args->NumFences, g.steps.capacity);
    for (UINT i = 0; i < args->NumFences; i++) {
      int32_t coreFence = fence(args->NativeFenceArray[i], ddi, &status);
      if (coreFence < 0) return status;
      g.steps.fences[i] = (UINT)coreFence;
      g.steps.values[i] = args->UpdatedValueArray[i];
    }
    g.steps.count = args->NumFences;
    g.steps.index = g.steps.position = 0;
    g.steps.currentValue = 0;
    g.steps.orderLength = orderLength;
    memcpy(g.steps.order, order, sizeof order);
    int32_t done = REFERENCE(WddmDdiUpdateMonitoredValuesStep)();
    return done < 0 ? STATUS_INVALID_PARAMETER : done ? STATUS_SUCCESS : STATUS_PENDING;
  }
  for (UINT i = 0; i < args->NumFences; i++) {
    int32_t coreFence = fence(args->NativeFenceArray[i], ddi, &status);
    if (coreFence < 0) return status;
    UINT64 currentValue = 0;
    for (UINT s = 0; s < orderLength; s++) {
      status = cmpStep(order[s], (UINT)coreFence, args->UpdatedValueArray[i], &currentValue);
      if (!NT_SUCCESS(status)) return status;
    }
  }
  return STATUS_SUCCESS;
}

NTSTATUS DDI(DxgkDdiCreateHwQueue)(DXGKARG_CREATEHWQUEUE *args) {
  if (!args->pPrivateDriverData || args->PrivateDriverDataSize < HWQUEUE_PRIVATE_DRIVER_DATA_BYTES) {
    return WddmFault("DxgkDdiCreateHwQueue: PrivateDriverData must be %u bytes", HWQUEUE_PRIVATE_DRIVER_DATA_BYTES);
  }
  int32_t id = GpuQueueCreate(args->EngineOrdinal, args->ProcessSlot);
  if (id < 0) return WddmGpuFailure(id, "DxgkDdiCreateHwQueue");
  HANDLE hHwQueue = g.nextQueue++;
  if (!mapSet(&g.hwQueues, hHwQueue, (UINT)id)) return WddmFault("DxgkDdiCreateHwQueue: the driver's pool is full");
  g.queues[id] = (DRIVER_QUEUE){ TRUE, WDDM_QUEUE_KIND_HW_QUEUE, hHwQueue, args->EngineOrdinal, args->ProcessSlot };
  GpuAddQueue((UINT)id, args->EngineOrdinal, hHwQueue, args->DebugName);
  /* What the user-mode half will need to find the queue: a tag and the handle (little-endian). */
  UINT words[2] = { QUEUE_DATA_MAGIC, hHwQueue };
  memcpy(args->pPrivateDriverData, words, sizeof words);
  args->hHwQueue = hHwQueue;
  return STATUS_SUCCESS;
}

NTSTATUS DDI(DxgkDdiDestroyHwQueue)(const DXGKARG_DESTROYHWQUEUE *args) {
  UINT coreQueue;
  NTSTATUS status = queue(args->hHwQueue, "DxgkDdiDestroyHwQueue", &coreQueue);
  if (!NT_SUCCESS(status)) return status;
  GpuRemoveQueue(coreQueue);
  CHECK_GPU(GpuQueueDestroy(coreQueue), "DxgkDdiDestroyHwQueue");
  forgetQueue(coreQueue);
  return STATUS_SUCCESS;
}

/* LOG-03: from now on the GPU logs to this buffer; its header says which log it is (DXGK_NATIVE_FENCE_LOG_TYPE). */
NTSTATUS DDI(DxgkDdiSetNativeFenceLogBuffer)(const DXGKARG_SETNATIVEFENCELOGBUFFER *args) {
  UINT coreQueue;
  NTSTATUS status = queue(args->hHwQueue, "DxgkDdiSetNativeFenceLogBuffer", &coreQueue);
  if (!NT_SUCCESS(status)) return status;
  UINT physical = WDDM_PHYSICAL(args->LogBufferCpuVa);
  if (args->NumberOfEntries < 1 || args->NumberOfEntries > g.layout.LogEntries) {
    return WddmFault("DxgkDdiSetNativeFenceLogBuffer: NumberOfEntries %u does not fit a 4 KiB buffer (1..%u)", args->NumberOfEntries, g.layout.LogEntries);
  }
  UINT type = WddmRead32(physical + g.layout.LogTypeOffset);
  CHECK_GPU(GpuQueueSetLogBuffer(coreQueue, type, physical), "DxgkDdiSetNativeFenceLogBuffer");
  return STATUS_SUCCESS;
}

/* LOG-06: the memory barrier on each queue: its pending log entry write reaches memory. */
NTSTATUS DDI(DxgkDdiUpdateNativeFenceLogs)(const DXGKARG_UPDATENATIVEFENCELOGS *args) {
  for (UINT i = 0; i < args->NumberOfQueues; i++) {
    UINT coreQueue;
    NTSTATUS status = queue(args->hHWQueueArray[i], "DxgkDdiUpdateNativeFenceLogs", &coreQueue);
    if (!NT_SUCCESS(status)) return status;
    CHECK_GPU(GpuLogFlush(coreQueue), "DxgkDdiUpdateNativeFenceLogs");
  }
  return STATUS_SUCCESS;
}

/* DxgkDdiStopDevice: a bug check. The engines stop for good; no interrupt or report reaches the OS again. */
NTSTATUS DDI(DxgkDdiStopDevice)(void) {
  g.stopped = TRUE;
  GpuStop();
  return STATUS_SUCCESS;
}

NTSTATUS REFERENCE(DxgkDdiDestroyContext)(const DXGKARG_DESTROYCONTEXT *args);

/* The live queues of one kind in the order they were made (handles count up), for a reset. */
static UINT liveQueues(UINT kind, UINT *out) {
  UINT n = 0;
  for (UINT id = 1; id <= g.maxQueues; id++) {
    if (!g.queues[id].Live || g.queues[id].Kind != kind) continue;
    UINT at = n++;
    while (at > 0 && g.queues[out[at - 1]].Handle > g.queues[id].Handle) { out[at] = out[at - 1]; at--; }
    out[at] = id;
  }
  return n;
}

/* DxgkDdiResetFromTimeout: the engines stop and every queue's and context's work is dropped with them. */
NTSTATUS DDI(DxgkDdiResetFromTimeout)(void) {
  GpuStop();
  UINT *ids = g.resetOrder;
  UINT n = liveQueues(WDDM_QUEUE_KIND_HW_QUEUE, ids);
  for (UINT i = 0; i < n; i++) {
    GpuRemoveQueue(ids[i]);
    GpuQueueDestroy(ids[i]);
    forgetQueue(ids[i]);
  }
  n = liveQueues(WDDM_QUEUE_KIND_CONTEXT, ids);
  for (UINT i = 0; i < n; i++) {
    DXGKARG_DESTROYCONTEXT destroy = { g.queues[ids[i]].Handle };
    NTSTATUS status = REFERENCE(DxgkDdiDestroyContext)(&destroy);
    if (!NT_SUCCESS(status)) return status;
  }
  return STATUS_SUCCESS;
}

NTSTATUS DDI(DxgkDdiRestartFromTimeout)(void) {
  if (!g.stopped) GpuRestart();
  return STATUS_SUCCESS;
}

/* ── kernel-mode contexts: each gets a ring the OS fills through SubmitCommand (MF-04…07) ── */

NTSTATUS DDI(DxgkDdiCreateContext)(DXGKARG_CREATECONTEXT *args) {
  int32_t id = GpuQueueCreate(args->NodeOrdinal, args->ProcessSlot);
  if (id < 0) return WddmGpuFailure(id, "DxgkDdiCreateContext");
  HANDLE hContext = g.nextContext++;
  if (!mapSet(&g.contexts, hContext, (UINT)id)) return WddmFault("DxgkDdiCreateContext: the driver's pool is full");
  g.queues[id] = (DRIVER_QUEUE){ TRUE, WDDM_QUEUE_KIND_CONTEXT, hContext, args->NodeOrdinal, args->ProcessSlot };
  char label[32];
  WddmFormat(label, sizeof label, "context 0x%x", hContext);
  GpuAddQueue((UINT)id, args->NodeOrdinal, hContext, label);
  args->hContext = hContext;
  return STATUS_SUCCESS;
}

NTSTATUS DDI(DxgkDdiDestroyContext)(const DXGKARG_DESTROYCONTEXT *args) {
  UINT coreQueue;
  if (!mapGet(&g.contexts, args->hContext, &coreQueue)) return WddmFault("DxgkDdiDestroyContext: unknown hContext 0x%x", args->hContext);
  GpuRemoveQueue(coreQueue);
  CHECK_GPU(GpuQueueDestroy(coreQueue), "DxgkDdiDestroyContext");
  forgetQueue(coreQueue);
  for (UINT i = 0; i < g.submitted.capacity; i++) {
    if (g.submitted.states[i] == SLOT_LIVE && g.submitted.values[i] == args->hContext) { g.submitted.states[i] = SLOT_DELETED; g.submitted.live--; }
  }
  return STATUS_SUCCESS;
}

/* Writes the command buffer and its completion marker (a NOP carrying SubmissionFenceId) to the context's ring. */
NTSTATUS DDI(DxgkDdiSubmitCommand)(DXGKARG_SUBMITCOMMAND *args) {
  const char *ddi = "DxgkDdiSubmitCommand";
  UINT id;
  if (!mapGet(&g.contexts, args->hContext, &id)) return WddmFault("%s: unknown hContext 0x%x", ddi, args->hContext);
  DRIVER_QUEUE *context = &g.queues[id];
  if ((UINT64)(uint32_t)GpuQueuePending(id) + args->NumCommands + 1 > g.ringEntries) { args->Submitted = FALSE; return STATUS_SUCCESS; }
  for (UINT i = 0; i < args->NumCommands; i++) {
    const WDDM_CONTEXT_COMMAND *c = &args->pCommands[i];
    BOOLEAN fenceWrite = c->Op != WDDM_CONTEXT_COMMAND_WORK;
    if (fenceWrite && !g.enginesWriteMonitoredFences) return WddmFault("%s: a fence-write command on an engine that cannot write monitored fences", ddi);
    UINT fenceId = fenceWrite ? fenceAtGpuVa(context->ProcessSlot, c->GpuVa) : 0;
    CHECK_GPU(GpuQueuePush(id, fenceWrite ? g.layout.OpFenceWrite : g.layout.OpWork, fenceId, c->Value, c->GpuVa, c->hSyncObject), ddi);
  }
  CHECK_GPU(GpuQueuePush(id, g.layout.OpNop, 0, args->SubmissionFenceId, 0, 0), ddi);
  if (!mapSet(&g.submitted, args->SubmissionFenceId, args->hContext)) return WddmFault("%s: the driver's pool is full", ddi);
  GpuKick((UINT)GpuQueueEngine(id));
  args->Submitted = TRUE;
  return STATUS_SUCCESS;
}

/* The core queue behind one of this driver's hardware queue or context handles, 0 for none (tools stepping the core). */
int32_t DDI(WddmDriverQueueOf)(HANDLE handle) {
  UINT id;
  return mapGet(&g.hwQueues, handle, &id) || mapGet(&g.contexts, handle, &id) ? (int32_t)id : 0;
}

/* ═════════════════════════════ the GPU's events ═════════════════════════════ */

static const UINT PROGRESS_OPERATION[] = {
  [WDDM_GPU_STEP_WAIT_PASSED] = WDDM_GPU_PROGRESS_WAIT_PASSED, [WDDM_GPU_STEP_WAIT_BLOCKED] = WDDM_GPU_PROGRESS_WAIT_BLOCKED,
  [WDDM_GPU_STEP_WAIT_UNBLOCKED] = WDDM_GPU_PROGRESS_WAIT_UNBLOCKED, [WDDM_GPU_STEP_SIGNAL] = WDDM_GPU_PROGRESS_SIGNAL,
  [WDDM_GPU_STEP_WORK] = WDDM_GPU_PROGRESS_WORK, [WDDM_GPU_STEP_FENCE_WRITE] = WDDM_GPU_PROGRESS_FENCE_WRITE,
  [WDDM_GPU_STEP_DMA_COMPLETED] = WDDM_GPU_PROGRESS_BUFFER_COMPLETED,
};

/* Every executed GPU step, reported to the OS (DxgkCbNotifyGpuProgress) in the driver's own handles. */
void DDI(WddmGpuStepExecuted)(const WDDM_GPU_STEP *step) {
  if (step->Kind == WDDM_GPU_STEP_FENCE_WRITE) g.monitoredRaised[step->Engine] = 1;
  if (!g.started || g.stopped) return;
  DRIVER_QUEUE *q = queueAt(step->Queue);
  if (!q) return; /* a queue the OS never asked for (a test driving the hardware by hand) */
  WDDM_GPU_PROGRESS_REPORT report = {
    .hQueue = q->Handle, .QueueKind = q->Kind, .EngineOrdinal = step->Engine, .Operation = PROGRESS_OPERATION[step->Kind],
    .hSyncObject = step->Handle, .Flags = step->Flags, .Value = step->Value, .PreviousValue = step->PreviousValue,
    .GpuTimeNs = step->TimeNs, .ObservedGpuTimeNs = step->ObservedNs,
  };
  DxgkCbNotifyGpuProgress(&report);
}

/* May the GPU run the queue's next quiet commands as a stretch? The OS says (DxgkCbQueryGpuProgressStretch). */
BOOLEAN DDI(WddmGpuStretchAccepted)(UINT coreQueue) {
  if (!g.started || g.stopped) return TRUE; /* nobody hears progress reports */
  DRIVER_QUEUE *q = queueAt(coreQueue);
  if (!q) return TRUE; /* a queue the OS never asked for: its steps are not reported either */
  WDDM_GPU_PROGRESS_STRETCH_QUERY query = { q->Handle, q->Kind, (UINT)GpuQueuePending(coreQueue) };
  return DxgkCbQueryGpuProgressStretch(&query);
}

/* A stretch ran: its commands reported by count (DxgkCbNotifyGpuProgressStretch). */
void DDI(WddmGpuStretchExecuted)(UINT coreQueue, UINT engine, UINT commands, UINT fenceCommands, double endNs) {
  if (!g.started || g.stopped) return;
  DRIVER_QUEUE *q = queueAt(coreQueue);
  if (!q) return;
  WDDM_GPU_PROGRESS_STRETCH stretch = { q->Handle, q->Kind, engine, commands, fenceCommands, endNs };
  DxgkCbNotifyGpuProgressStretch(&stretch);
}

/* A GPU page fault: DXGK_INTERRUPT_DMA_PAGE_FAULTED (the OS resets the adapter). */
void DDI(WddmGpuFaulted)(UINT coreQueue, UINT engine, const char *message) {
  if (!g.started || g.stopped) return;
  DRIVER_QUEUE *q = coreQueue ? queueAt(coreQueue) : NULL;
  DXGKARGCB_NOTIFY_INTERRUPT_DATA data = { .InterruptType = DXGK_INTERRUPT_DMA_PAGE_FAULTED };
  data.DmaPageFaulted.NodeOrdinal = coreQueue ? engine : 0;
  data.DmaPageFaulted.hQueue = q ? q->Handle : 0;
  data.DmaPageFaulted.Message = message;
  DxgkCbNotifyInterrupt(&data);
}

/* The DMA completed interrupt: one per command buffer still on the engine (a context destroyed meanwhile dropped its own). */
void DDI(WddmGpuDmaCompleted)(UINT engine, UINT coreQueue, UINT submissionFenceId) {
  UINT hContext;
  DRIVER_QUEUE *q = queueAt(coreQueue);
  if (!g.started || g.stopped || !mapGet(&g.submitted, submissionFenceId, &hContext) || !q || q->Handle != hContext) return;
  mapDelete(&g.submitted, submissionFenceId);
  DXGKARGCB_NOTIFY_INTERRUPT_DATA data = { .InterruptType = DXGK_INTERRUPT_DMA_COMPLETED };
  data.DmaCompleted.SubmissionFenceId = submissionFenceId;
  data.DmaCompleted.NodeOrdinal = engine;
  DxgkCbNotifyInterrupt(&data);
}

/* XA-07: a signal's doorbell could not reach every adapter; the OS propagates the fence after the interrupt. */
void DDI(WddmGpuDoorbellFallback)(UINT engine, UINT coreFence, UINT posted, UINT full) {
  /* The core keeps each fence's hGlobalNativeFence (GpuFenceSetDriverHandle at create): no map of our own. */
  HANDLE hGlobal = GpuFenceIsLive(coreFence) ? GpuFenceDriverHandle(coreFence) : 0;
  if (!g.started || g.stopped || fenceOf(hGlobal) < 0) return;
  WDDM_DOORBELL_FALLBACK fallback = { engine, hGlobal, posted, full };
  DxgkCbNotifyDoorbellFallback(&fallback);
}

/* The ISR: take the engine's interrupt payload and notify the OS (INT-01…06). */
BOOLEAN DDI(DxgkDdiInterruptRoutine)(UINT engine) {
  /* INT-05: with the optimized cap the payload names the running queue (or none) instead of a list. */
  UINT running = GpuEngineInterruptQueue(engine);
  int32_t count = GpuEngineTakeInterrupt(engine);
  if (count == -2 || !g.started || g.stopped) return FALSE;
  BOOLEAN monitored = g.monitoredRaised[engine];
  g.monitoredRaised[engine] = 0;
  UINT rawCount = count > 0 ? (UINT)count : 0, nonZero = 0;
  if (rawCount > g.interruptListCapacity) rawCount = g.interruptListCapacity;
  for (UINT i = 0; i < rawCount; i++) {
    g.interruptList[i] = WddmRead32(g.layout.OutBuffer + i * g.layout.InterruptHandleBytes);
    if (g.interruptList[i]) nonZero++;
  }
  if (monitored) {
    /* A monitored fence write: its own interrupt, which names no fence (the OS scans). */
    DXGKARGCB_NOTIFY_INTERRUPT_DATA data = { .InterruptType = DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED };
    data.MonitoredFenceSignaled.NodeOrdinal = engine;
    DxgkCbNotifyInterrupt(&data);
    /* Monitored fences carry driver handle 0 in the engine's list; with nothing else raised, no native interrupt. */
    if (count >= 0 && nonZero == 0) return TRUE;
  }
  DXGKARGCB_NOTIFY_INTERRUPT_DATA data = { .InterruptType = DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED };
  data.NativeFenceSignaled.NodeOrdinal = engine;
  if (g.optimizedInterrupt) {
    /* A queue id that is no hardware queue of ours (a kernel-mode context's ring) names none. */
    DRIVER_QUEUE *q = running ? queueAt(running) : NULL;
    data.NativeFenceSignaled.hHWQueue = q && q->Kind == WDDM_QUEUE_KIND_HW_QUEUE ? q->Handle : 0;
    ReferenceNotifyInterrupt(&data);
    return TRUE;
  }
  if (count >= 0 && g.interruptPayload == WDDM_INTERRUPT_PAYLOAD_LIST) {
    /* A correct driver never reports a fence it has been told to destroy. */
    UINT n = 0;
    for (UINT i = 0; i < rawCount; i++) if (fenceOf(g.interruptList[i]) >= 0) g.interruptList[n++] = g.interruptList[i];
    data.NativeFenceSignaled.SignaledNativeFenceCount = n;
    data.NativeFenceSignaled.pSignaledNativeFenceArray = g.interruptList;
  } else {
    data.Flags.EvaluateLegacyMonitoredFences = g.evaluateLegacyMonitoredFences;
  }
  ReferenceNotifyInterrupt(&data);
  return TRUE;
}

/* ═════════════════════════════ the user-mode half ═════════════════════════════ */

/* The live queue the private data names (NULL: not data this driver wrote, or a queue gone). */
static DRIVER_QUEUE *queueOfPrivateData(const BYTE *data, UINT size, UINT *coreQueue) {
  if (!data || size < HWQUEUE_PRIVATE_DRIVER_DATA_BYTES) return NULL;
  UINT words[2];
  memcpy(words, data, sizeof words);
  if (words[0] != QUEUE_DATA_MAGIC || !mapGet(&g.hwQueues, words[1], coreQueue)) return NULL;
  return &g.queues[*coreQueue];
}

/*
 * User-mode submission (NF-05, NF-06, LOG-04): every command written into the queue's ring and its doorbell
 * rung, or none and a refusal. The commands are staged in the out buffer as the ring's Command records,
 * STAGED_COMMANDS at a time, and written by GpuQueuePushStaged (which finds each fence from its GPU VA).
 */
NTSTATUS DDI(UmdSubmitToHwQueue)(const UMDARG_SUBMITTOHWQUEUE *args) {
  UINT coreQueue = 0;
  DRIVER_QUEUE *q = queueOfPrivateData(args->HwQueuePrivateDriverData, args->HwQueuePrivateDriverDataSize, &coreQueue);
  if (!q) {
    return WddmRefuse(STATUS_INVALID_PARAMETER, "HwQueuePrivateDriverData", NULL, "the private data DxgkDdiCreateHwQueue returned for a live queue",
      "submitToHwQueue: HwQueuePrivateDriverData names no live hardware queue of this driver (the queue was destroyed, or its device removed)");
  }
  UINT total = args->CommandCount;
  UINT room = g.ringEntries - (UINT)GpuQueuePending(coreQueue);
  if (total > room) {
    char expected[48];
    UINT64 value = total;
    WddmFormat(expected, sizeof expected, "at most %u commands", room);
    return WddmRefuse(STATUS_INSUFFICIENT_RESOURCES, "commands", &value, expected,
      "hardware queue ring has room for %u more command(s), the submission has %u; let the GPU drain it (machine.run) or raise limits.ringEntries", room, total);
  }
  const WDDM_GPU_LAYOUT *L = &g.layout;
  for (UINT first = 0; first < total; first += STAGED_COMMANDS) {
    UINT count = total - first < STAGED_COMMANDS ? total - first : STAGED_COMMANDS;
    for (UINT i = 0, c = first; i < count; i++, c++) {
      BYTE *at = (BYTE *)(uintptr_t)(L->OutBuffer + i * L->CommandBytes);
      BYTE op = args->Ops[c];
      *(UINT *)(at + L->CommandOpOffset) = op == UMD_OP_WAIT ? L->OpWait : op == UMD_OP_SIGNAL ? L->OpSignal : L->OpWork;
      *(UINT64 *)(at + L->CommandValueOffset) = args->Values[c];
      *(UINT64 *)(at + L->CommandGpuVaOffset) = args->GpuVas[c];
      *(UINT *)(at + L->CommandHandleOffset) = args->Handles[c];
    }
    CHECK_GPU(GpuQueuePushStaged(coreQueue, count, q->ProcessSlot), "UMD ring write");
  }
  GpuKick(q->Engine);
  return STATUS_SUCCESS;
}
