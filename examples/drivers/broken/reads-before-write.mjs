// Broken on purpose: DxgkDdiUpdateMonitoredValues reads CurrentValue first, then writes the new
// MonitoredValue and puts the barrier after it (c, a, b, d instead of a, b, c, d). A GPU signal that
// lands after the read compares against the old MonitoredValue, and the driver's own check uses the
// stale value it read: nobody raises the interrupt. The documented OS reads CurrentValue again after
// the DDI returns (NF-09) and hides it; an OS without that re-read loses the wakeup.
// Expected rule: NF-11 (the CMP's order, judged on the driver alone: check-driver's driver-alone probe).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'reads-before-write';

class ReadsBeforeWrite extends ReferenceDriver {
  // The reference driver's hook for its CMP order (src/driver/cmp-steps.ts), here in the wrong order.
  cmpOrder() { return ['read-current-value', 'write-monitored-value', 'barrier', 'check']; }
}

export function createDriver(context) {
  return new ReadsBeforeWrite(context.hardware, context.core, context.options);
}
