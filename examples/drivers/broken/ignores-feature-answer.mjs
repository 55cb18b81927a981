// Broken on purpose: DxgkDdiStartDevice asks the OS as documented (IsFeatureEnabled, then
// QueryFeatureInterface) but advertises NativeGpuFence whatever it answers: on an OS with the feature
// off (IsFeatureEnabled says Enabled: false) the adapter fails to start.
// Expected rule: CAP-02 (ask, and honour the answer).
import { DXGK_FEATURE_NATIVE_FENCE, ReferenceDriver } from 'wddm-fence';

export const name = 'ignores-feature-answer';

class IgnoresFeatureAnswer extends ReferenceDriver {
  startDevice(os) {
    const answer = os.IsFeatureEnabled(DXGK_FEATURE_NATIVE_FENCE);
    os.QueryFeatureInterface(DXGK_FEATURE_NATIVE_FENCE, answer.Version || 1); // the answer is never looked at
    return super.startDevice(os);
  }
}

export function createDriver(context) {
  // queryFeatureBeforeAdvertising: false is the reference driver's switch for "advertise what the hardware has".
  return new IgnoresFeatureAnswer(context.hardware, context.core, { ...context.options, queryFeatureBeforeAdvertising: false });
}
