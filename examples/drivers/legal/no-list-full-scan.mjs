// Legal: every native fence signaled interrupt carries no list (pSignaledNativeFenceArray NULL), which
// tells the OS to scan every native fence waiter (INT-01, INT-04). Slower for the OS, never wrong: no
// waiter can be missed, so this driver passes (exit 0).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'no-list-full-scan';

export function createDriver(context) {
  // The reference driver's payload option (ReferenceDriverOptions.interruptPayload).
  return new ReferenceDriver(context.hardware, context.core, { ...context.options, interruptPayload: 'noList' });
}
