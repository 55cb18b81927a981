// Broken on purpose: the driver takes NativeGpuFence from a table of its GPU family, and the table lists it
// for the family's low-power member too, whose engines write only 32 bits atomically (No64BitAtomics): a
// native fence's CurrentValue would be written a half at a time. The OS refuses to start such an adapter.
// Expected rule: NF-01 (CurrentValue is written 64 bits at once: NativeGpuFence only with 64-bit atomics).
import { ReferenceDriver, VIDSCHCAPS } from 'wddm-fence';

export const name = 'native-fence-on-32-bit-gpu';

export function createDriver(context) {
  const caps = context.options.hardwareCaps;
  // The table's wrong entry: the 32-bit member is listed with native fences.
  const hardwareCaps = (caps & VIDSCHCAPS.No64BitAtomics) !== 0 ? caps | VIDSCHCAPS.NativeGpuFence : caps;
  return new ReferenceDriver(context.hardware, context.core, { ...context.options, hardwareCaps });
}
