// Broken on purpose: DxgkDdiStartDevice returns the native fence caps of the hardware, but the
// DxgkDdiQueryAdapterInfo(NATIVE_FENCE_CAPS) handler answers from a static default table (no
// MonitoredValuePadding): user mode is told a stride the adapter's fence storage does not have.
// Expected rule: CAP-03 (QueryAdapterInfo returns the caps the adapter was started with).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'reports-unpadded-caps';

class ReportsUnpaddedCaps extends ReferenceDriver {
  started = false;

  startDevice(os) {
    const result = super.startDevice(os); // builds its result from queryNativeFenceCaps() while not started yet
    this.started = true;
    return result;
  }

  queryNativeFenceCaps() {
    const caps = super.queryNativeFenceCaps();
    return this.started ? { ...caps, MonitoredValuePadding: 0 } : caps;
  }
}

export function createDriver(context) {
  return new ReportsUnpaddedCaps(context.hardware, context.core, context.options);
}
