// Broken on purpose: DxgkDdiUpdateMonitoredValues writes the new MonitoredValue, reads CurrentValue, and
// only then issues the barrier (a, c, b, d). The barrier is there, so the write reaches memory before the
// DDI returns, but too late: a GPU signal landing between the read and the barrier compares against the
// old MonitoredValue, and the driver's check uses the value it read before the signal.
// Expected rule: NF-11 (judged on the driver alone: the documented OS's re-read of CurrentValue would cover for it).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'barrier-after-read';

class BarrierAfterRead extends ReferenceDriver {
  cmpOrder() { return ['write-monitored-value', 'read-current-value', 'barrier', 'check']; }
}

export function createDriver(context) {
  return new BarrierAfterRead(context.hardware, context.core, context.options);
}
