// wddm-fence: link with reference.c
/*
 * Broken on purpose: the ISR takes the engine's interrupt but, on a "fast path" for an interrupt that
 * lists a single fence, returns without calling DxgkCbNotifyInterrupt: the OS never hears of that signal.
 * Expected rule: INT-06 (a GPU signal that made CurrentValue > MonitoredValue must reach the OS).
 */
#include "../reference.h"

void ReferenceNotifyInterrupt(const DXGKARGCB_NOTIFY_INTERRUPT_DATA *data) {
  if (data->InterruptType == DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED && data->NativeFenceSignaled.pSignaledNativeFenceArray
      && data->NativeFenceSignaled.SignaledNativeFenceCount == 1) {
    return; /* "nothing else is pending": but the OS still has a waiter to wake */
  }
  DxgkCbNotifyInterrupt(data);
}
