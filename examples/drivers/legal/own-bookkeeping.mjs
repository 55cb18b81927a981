// Legal: the driver keeps its own books. It records each fence in a table of its own (handle → the
// core's record, found once from the CurrentValue address), writes CPU signals through the core's
// 64-bit store (cpuWriteCurrentValue) instead of a view of memory, rescans only the hardware queues
// waiting on the fences a call names (not the whole run list), and writes UpdateMonitoredValues out
// over the core's CMP steps in the documented order. None of that is the contract's business: the
// values it leaves and the interrupts it raises are the same, so this driver passes (exit 0).
import { KERNEL_VA_BASE, ReferenceDriver } from 'wddm-fence';

export const name = 'own-bookkeeping';

class OwnBookkeeping extends ReferenceDriver {
  constructor(context) {
    super(context.hardware, context.core, context.options);
    /** hGlobalNativeFence → { coreFence } */
    this.table = new Map();
  }

  createNativeFence(args) {
    const created = super.createNativeFence(args);
    this.table.set(created.hGlobalNativeFence, { coreFence: this.core.fenceAtCurrentValue(Number(args.CurrentValueKernelCpuVa - KERNEL_VA_BASE)) });
    return created;
  }

  destroyNativeFence(args) {
    super.destroyNativeFence(args);
    this.table.delete(args.hGlobalNativeFence);
  }

  record(hGlobal, ddi) {
    const entry = this.table.get(hGlobal);
    if (!entry) throw new Error(`${ddi}: unknown hGlobalNativeFence 0x${hGlobal.toString(16)}`);
    return entry;
  }

  updateCurrentValuesFromCpu(args) {
    const fences = [];
    for (let i = 0; i < args.NumFences; i++) fences.push(this.record(args.NativeFenceArray[i], 'DxgkDdiUpdateCurrentValuesFromCpu').coreFence);
    if (!args.Flags.NotificationOnly) {
      for (let i = 0; i < fences.length; i++) this.core.cpuWriteCurrentValue(fences[i], args.UpdatedValueArray[i]);
    }
    for (const fence of fences) this.hardware.rescanFence(fence); // only the queues waiting on these fences
  }

  updateOneCurrentValueFromCpu(hGlobalNativeFence, updatedValue, currentValueKernelCpuVa) {
    this.updateCurrentValuesFromCpu({ NumFences: 1, NativeFenceArray: [hGlobalNativeFence], UpdatedValueArray: [updatedValue], CurrentValueKernelCpuVa: [currentValueKernelCpuVa], Flags: { AlwaysSignaled: false, NotificationOnly: false } });
  }

  updateMonitoredValues(args) {
    for (let i = 0; i < args.NumFences; i++) {
      const { coreFence } = this.record(args.NativeFenceArray[i], 'DxgkDdiUpdateMonitoredValues');
      this.core.cmpWriteMonitoredValue(coreFence, args.UpdatedValueArray[i]); // a
      this.core.cmpBarrier();                                                 // b
      const current = this.core.cmpReadCurrentValue(coreFence);               // c
      if (this.core.cmpMonitoredValueCheck(0, coreFence, current) === 1) this.hardware.raise(0); // d
    }
  }
}

export function createDriver(context) {
  return new OwnBookkeeping(context);
}
