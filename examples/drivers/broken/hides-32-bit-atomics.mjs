// Broken on purpose: the GPU's engines write only 32 bits atomically, but the driver leaves No64BitAtomics
// out of the caps it reports at DxgkDdiStartDevice. The OS then takes CurrentValue as a whole 64-bit value
// and does not extend it across 2^32; a GPU signal past 2^32 leaves the high half behind.
// Expected rule: MF-07 (on a 32-bit-only GPU the OS must know, and extend the value).
import { ReferenceDriver, VIDSCHCAPS } from 'wddm-fence';

export const name = 'hides-32-bit-atomics';

class Hides32BitAtomics extends ReferenceDriver {
  startDevice(os) {
    const result = super.startDevice(os);
    return { ...result, VidSchCaps: result.VidSchCaps & ~VIDSCHCAPS.No64BitAtomics };
  }
}

export function createDriver(context) {
  return new Hides32BitAtomics(context.hardware, context.core, context.options);
}
