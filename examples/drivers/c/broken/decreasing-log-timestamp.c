// wddm-fence: link with reference.c
/*
 * Broken on purpose: the driver programs its GPU's timestamp counter to count down from a reset value
 * (a sign error in its clock setup), so each native fence log entry carries an earlier timestamp than
 * the one before it.
 * Expected rule: LOG-07 (log timestamps never decrease).
 */
#include "../reference.h"

#define COUNTER_RESET_VALUE 1000000000000.0

void ReferenceProgramFirmware(WDDM_GPU_FIRMWARE *firmware) {
  firmware->TimestampSource = WDDM_TIMESTAMP_DRIVER;
}

/* The GPU timestamp counter the engines stamp log entries with, from the virtual time in ns. */
WDDM_EXPORT(WddmGpuTimestamp) UINT64 WddmGpuTimestamp(double nowNs) {
  double value = COUNTER_RESET_VALUE - nowNs; /* should be nowNs (or a counter that only goes up) */
  return value < 1 ? 1 : (UINT64)value;
}
