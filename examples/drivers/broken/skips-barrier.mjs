// Broken on purpose: DxgkDdiUpdateMonitoredValues writes the CMP's shadow MonitoredValue and reads
// CurrentValue with no memory barrier between them. A GPU signal still in an engine's write buffer is
// compared against the old MonitoredValue, and the new one can sit in the CMP's write buffer while a
// signal's check reads memory: a CPU waiter's wakeup can be lost.
// Expected rule: NF-11 (the checker sees the CMP's MonitoredValue write still buffered when the DDI returns).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'skips-barrier';

export function createDriver(context) {
  // The reference driver's documented switch for the barrier (ReferenceDriverOptions.monitoredValueBarrier).
  return new ReferenceDriver(context.hardware, context.core, { ...context.options, monitoredValueBarrier: false });
}
