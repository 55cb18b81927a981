// wddm-fence: link with reference.c
/*
 * Broken on purpose: DxgkDdiUpdateMonitoredValues leaves out the memory barrier between writing
 * MonitoredValue and reading CurrentValue. A GPU signal still in an engine's write buffer is then read
 * as the old value, no interrupt is raised, and a CPU waiter may never wake (NF-10).
 * Expected rule: NF-11 (write MonitoredValue, barrier, read CurrentValue, in that order).
 */
#include "../reference.h"

UINT ReferenceCmpOrder(UINT order[4]) {
  order[0] = CMP_WRITE_MONITORED_VALUE;
  order[1] = CMP_READ_CURRENT_VALUE; /* the barrier (CMP_BARRIER) belongs before this read */
  order[2] = CMP_CHECK;
  return 3;
}
