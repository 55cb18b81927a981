// Broken on purpose: DxgkDdiUpdateCurrentValuesFromCpu never writes a value below the fence's
// CurrentValue ("fence values only move forward"). But the OS decides what may move backwards: a CPU
// signal with AllowFenceRewind reaches the driver as an ordinary value, and the driver must write it.
// Expected rule: NF-07 (each CurrentValue is the value the OS gave).
import { KERNEL_VA_BASE, ReferenceDriver } from 'wddm-fence';

export const name = 'refuses-rewind';

class RefusesRewind extends ReferenceDriver {
  updateCurrentValuesFromCpu(args) {
    if (args.Flags.NotificationOnly) return super.updateCurrentValuesFromCpu(args);
    const keep = [];
    for (let i = 0; i < args.NumFences; i++) {
      const fence = this.core.fenceAtCurrentValue(Number(args.CurrentValueKernelCpuVa[i] - KERNEL_VA_BASE));
      if (BigInt.asUintN(64, this.core.cpuReadCurrentValue(fence)) <= args.UpdatedValueArray[i]) keep.push(i);
    }
    return super.updateCurrentValuesFromCpu({
      ...args, NumFences: keep.length,
      NativeFenceArray: keep.map((i) => args.NativeFenceArray[i]),
      UpdatedValueArray: keep.map((i) => args.UpdatedValueArray[i]),
      CurrentValueKernelCpuVa: keep.map((i) => args.CurrentValueKernelCpuVa[i]),
    });
  }
}

export function createDriver(context) {
  return new RefusesRewind(context.hardware, context.core, context.options);
}
