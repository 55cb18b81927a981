// Broken on purpose: DxgkDdiUpdateMonitoredValues, written out over the core's GPU view as the template
// does, writes MonitoredValue, issues the barrier, reads CurrentValue, and stops there: step d (raise the
// interrupt when CurrentValue > MonitoredValue) is left out, on the theory that "the OS reads
// CurrentValue again anyway". A GPU signal that landed before the new MonitoredValue was visible raised
// nothing, and the driver does not raise it either.
// Expected rule: NF-11 (the driver's own obligation, whatever the OS does after the DDI).
import { KERNEL_VA_BASE, ReferenceDriver } from 'wddm-fence';

export const name = 'skips-interrupt-check';

class SkipsInterruptCheck extends ReferenceDriver {
  constructor(context) {
    super(context.hardware, context.core, context.options);
    this.coreFences = new Map(); // hGlobalNativeFence → core fence id
  }

  createNativeFence(args) {
    const result = super.createNativeFence(args);
    this.coreFences.set(result.hGlobalNativeFence, this.core.fenceAtCurrentValue(Number(args.CurrentValueKernelCpuVa - KERNEL_VA_BASE)));
    return result;
  }

  destroyNativeFence(args) {
    super.destroyNativeFence(args);
    this.coreFences.delete(args.hGlobalNativeFence);
  }

  updateMonitoredValues(args) {
    for (let i = 0; i < args.NumFences; i++) {
      const fence = this.coreFences.get(args.NativeFenceArray[i]);
      if (fence === undefined) throw new Error(`DxgkDdiUpdateMonitoredValues: unknown hGlobalNativeFence ${args.NativeFenceArray[i]}`);
      this.core.cmpWriteMonitoredValue(fence, args.UpdatedValueArray[i]);
      this.core.cmpBarrier();
      this.core.cmpReadCurrentValue(fence); // read, and nothing done with it: no cmpMonitoredValueCheck, no interrupt
    }
  }
}

export function createDriver(context) {
  return new SkipsInterruptCheck(context);
}
