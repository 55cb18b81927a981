// Broken on purpose: the driver programs its GPU's timestamp counter to count down (a wrong direction bit):
// every log entry's end timestamp is lower than the one before it.
// Expected rule: LOG-07 (timestamps never decrease within a log).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'decreasing-log-timestamp';

const COUNTER_RESET_VALUE = 1_000_000_000_000;

export function createDriver(context) {
  context.hardware.configureFirmware({ timestamp: (nowNs) => BigInt(Math.max(1, COUNTER_RESET_VALUE - nowNs)) });
  return new ReferenceDriver(context.hardware, context.core, context.options);
}
