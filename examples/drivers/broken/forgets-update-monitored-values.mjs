// Broken on purpose: DxgkDdiUpdateMonitoredValues returns at once. The CMP never learns the MonitoredValue
// the OS computed (the smallest waited value − 1), so GPU signals are compared against a stale one: CPU
// waiters are never woken by an interrupt.
// Expected rule: NF-09 (the MonitoredValue the CMP compares against is not the one the OS gave; fatal).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'forgets-update-monitored-values';

class ForgetsUpdateMonitoredValues extends ReferenceDriver {
  updateMonitoredValues() { /* nothing reaches the CMP */ }
}

export function createDriver(context) {
  return new ForgetsUpdateMonitoredValues(context.hardware, context.core, context.options);
}
