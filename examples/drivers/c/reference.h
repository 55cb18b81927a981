/*
 * reference.h: the reference driver's extension points (reference.c). Each is a weak function: a driver
 * linked with reference.c (build.sh: a file that says "wddm-fence: link with reference.c") replaces one by
 * defining it, and is the reference driver with that one piece changed, as examples/drivers/c/broken/ is.
 * A JavaScript driver module does the same by extending ReferenceDriver.
 */
#ifndef WDDM_FENCE_REFERENCE_H
#define WDDM_FENCE_REFERENCE_H

#include "wddm_fence_driver.h"

/* The CMP's steps of DxgkDdiUpdateMonitoredValues for one fence (NF-11): a, b, c, d. */
enum { CMP_WRITE_MONITORED_VALUE, CMP_BARRIER, CMP_READ_CURRENT_VALUE, CMP_CHECK };

/* The CMP's steps for each fence, in the order performed; returns how many (the reference: a, b, c, d, or a, c, d
 * when WDDM_ADAPTER_INFO.MonitoredValueBarrier is FALSE). Both the whole DDI and the stepped one follow it. */
UINT ReferenceCmpOrder(UINT order[4]);

/* The ISR's last step: hands the interrupt's data to Dxgkrnl (the reference: DxgkCbNotifyInterrupt as it is). */
void ReferenceNotifyInterrupt(const DXGKARGCB_NOTIFY_INTERRUPT_DATA *data);

/* What DxgkDdiAddDevice programs into the GPU's firmware (the reference: the documented behaviour, unchanged). */
void ReferenceProgramFirmware(WDDM_GPU_FIRMWARE *firmware);

#endif /* WDDM_FENCE_REFERENCE_H */
