// Broken on purpose: DxgkDdiResetFromTimeout only stops the engines; the hardware queues keep their
// rings, and DxgkDdiRestartFromTimeout starts them again. Work queued or in flight before the TDR then
// runs after it: its signals land on fences the OS has already signalled to UINT64_MAX, or kept.
// Expected rule: NF-20 (a reset drops every queue's work).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'keeps-work-across-reset';

class KeepsWorkAcrossReset extends ReferenceDriver {
  resetFromTimeout() { this.hardware.stop(); }
}

export function createDriver(context) {
  return new KeepsWorkAcrossReset(context.hardware, context.core, context.options);
}
