// Broken on purpose: the driver advertises NativeGpuFence at DxgkDdiStartDevice without asking the OS
// first (no IsFeatureEnabled, QueryFeatureInterface, GetOSCaps). It works while the OS happens to have
// the feature on, and fails to start where it has not.
// Expected rule: CAP-02 (ask, then advertise).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'advertises-without-asking';

export function createDriver(context) {
  // The reference driver's documented switch (ReferenceDriverOptions.queryFeatureBeforeAdvertising).
  return new ReferenceDriver(context.hardware, context.core, { ...context.options, queryFeatureBeforeAdvertising: false });
}
