// wddm-fence: link with reference.c
/*
 * Broken on purpose: the ISR copies one entry too few of the engine's signalled-fence list into the
 * interrupt data (an off-by-one in its copy loop): the last signalled fence with a CPU waiter is never named.
 * Expected rule: INT-01 (the list is the exact set of signalled fences with CPU waiters).
 */
#include "../reference.h"

void ReferenceNotifyInterrupt(const DXGKARGCB_NOTIFY_INTERRUPT_DATA *data) {
  static HANDLE copied[1024];
  DXGKARGCB_NOTIFY_INTERRUPT_DATA notify = *data;
  if (data->InterruptType == DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED && data->NativeFenceSignaled.pSignaledNativeFenceArray) {
    UINT n = 0;
    for (UINT i = 0; i + 1 < data->NativeFenceSignaled.SignaledNativeFenceCount && n < 1024; i++) { /* should be i < count */
      copied[n++] = data->NativeFenceSignaled.pSignaledNativeFenceArray[i];
    }
    notify.NativeFenceSignaled.pSignaledNativeFenceArray = copied;
    notify.NativeFenceSignaled.SignaledNativeFenceCount = n;
  }
  DxgkCbNotifyInterrupt(&notify);
}
