// A driver whose DxgkDdiUpdateMonitoredValues does the CMP's steps out of NF-11's order: it reads
// CurrentValue before it writes MonitoredValue (c, a, b, d instead of a, b, c, d). The OS's own
// re-read of CurrentValue after the DDI (NF-09) covers for it, so with the OS as documented no
// wakeup is lost; on its own it loses one. `wddm-fence explore --driver` searches both and reports
// NF-11 (docs/EXPLORER.md "Any driver").
import { ReferenceDriver } from 'wddm-fence';

export const name = 'cmp-reads-first';

class ReadsFirst extends ReferenceDriver {
  cmpOrder() { return ['read-current-value', 'write-monitored-value', 'barrier', 'check']; }
}

export function createDriver(context) {
  return new ReadsFirst(context.hardware, context.core, context.options);
}
