// Broken on purpose: DxgkDdiUpdateCurrentValuesFromCpu writes only the first fence of the call (its loop
// was written for the one-fence signal): a CPU signal of several fences leaves the others at their old
// values, and their waiters and waiting hardware queues are never released.
// Expected rule: NF-07 (each CurrentValue the call names is written).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'writes-first-fence-only';

class WritesFirstFenceOnly extends ReferenceDriver {
  updateCurrentValuesFromCpu(args) {
    super.updateCurrentValuesFromCpu({ ...args, NumFences: Math.min(args.NumFences, 1) });
  }
}

export function createDriver(context) {
  return new WritesFirstFenceOnly(context.hardware, context.core, context.options);
}
