// Broken on purpose: the ISR takes the engine's interrupt after a fence-write command but does not
// report DXGK_INTERRUPT_MONITORED_FENCE_SIGNALED ("the DMA completed interrupt will do"): the OS learns
// of the write only when the command buffer ends, and waiters on the fence wake late.
// Expected rule: MF-04 (a fence write is followed by the monitored fence signaled interrupt).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'skips-monitored-fence-interrupt';

class SkipsMonitoredFenceInterrupt extends ReferenceDriver {
  startDevice(os) {
    return super.startDevice({ ...os, NotifyMonitoredFenceSignaled: () => undefined });
  }
}

export function createDriver(context) {
  return new SkipsMonitoredFenceInterrupt(context.hardware, context.core, context.options);
}
