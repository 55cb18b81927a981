// Legal: DxgkDdiUpdateMonitoredValues issues a memory barrier before writing MonitoredValue as well as
// after it (b, a, b, c, d). NF-11 asks for the order write, barrier, read, check; an extra barrier costs
// time and changes nothing the contract fixes, so this driver passes (exit 0), the driver-alone probe too.
import { ReferenceDriver } from 'wddm-fence';

export const name = 'extra-barrier';

class ExtraBarrier extends ReferenceDriver {
  cmpOrder() { return ['barrier', 'write-monitored-value', 'barrier', 'read-current-value', 'check']; }
}

export function createDriver(context) {
  return new ExtraBarrier(context.hardware, context.core, context.options);
}
