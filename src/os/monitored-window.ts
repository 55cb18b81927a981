// MF-07, the monitored fence's value window on an adapter without 64-bit atomics (No64BitAtomics):
// the GPU writes 32 bits, which the OS extends to 64 against the last signalled value (extend32 and
// observeMonitoredValue, in objects.ts with the fence that reads through them); a wait or a signal
// more than UINT32_MAX/2 from that value is refused here, because a 32-bit write could no longer tell
// which 64-bit value it stands for.
//
//   last signalled value L ──▶ window [L − UINT32_MAX/2, L + UINT32_MAX/2]
//
// On 64-bit adapters (narrow() false) both checks pass everything.

import { WddmError } from '../base/errors.js';
import { MONITORED_FENCE_WINDOW, UINT64_MAX } from '../base/wddm.js';
import { narrow, type GlobalFence } from './objects.js';

/** MF-07: a wait more than UINT32_MAX/2 ahead of the last signalled value is refused (No64BitAtomics adapters only). */
export function checkMonitoredWait(fence: GlobalFence, value: bigint, parameter: string): void {
  if (!narrow(fence.adapter)) return;
  const last = fence.currentValue();
  if (value > last && value - last > MONITORED_FENCE_WINDOW) throw windowError(fence, value, last, parameter, 'wait');
}

/** MF-07: a signal more than UINT32_MAX/2 away (either way) from the last signalled value is refused (No64BitAtomics adapters only). */
export function checkMonitoredSignal(fence: GlobalFence, value: bigint, parameter: string): void {
  if (signalOutsideWindow(fence, value)) throw windowError(fence, value, fence.currentValue(), parameter, 'signal');
}

/** checkMonitoredSignal's test without its error: is `value` more than UINT32_MAX/2 from the last signalled value (No64BitAtomics only)? */
export function signalOutsideWindow(fence: GlobalFence, value: bigint): boolean {
  if (!narrow(fence.adapter)) return false;
  const last = fence.currentValue();
  return (value > last ? value - last : last - value) > MONITORED_FENCE_WINDOW;
}

function windowError(fence: GlobalFence, value: bigint, last: bigint, parameter: string, what: 'wait' | 'signal'): WddmError {
  const low = last > MONITORED_FENCE_WINDOW ? last - MONITORED_FENCE_WINDOW : 0n;
  const high = UINT64_MAX - last < MONITORED_FENCE_WINDOW ? UINT64_MAX : last + MONITORED_FENCE_WINDOW;
  const expected = what === 'wait' ? `at most ${high} (last signalled value ${last} + UINT32_MAX/2)` : `${low} … ${high} (last signalled value ${last} ± UINT32_MAX/2)`;
  return new WddmError('INVALID_PARAMETER',
    `${parameter} ${value} is ${value > last ? value - last : last - value} away from the last signalled value ${last} of monitored fence ${fence.label}: ` +
    `on adapter "${fence.adapter.name}" (No64BitAtomics) an outstanding ${what} must stay within UINT32_MAX/2 (${MONITORED_FENCE_WINDOW}) of the last signalled value (MF-07)`,
    { parameter, value, expected });
}
