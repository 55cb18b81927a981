// Broken on purpose: DxgkDdiResetFromTimeout signals every fence of the adapter to UINT64_MAX itself,
// "so that no waiter hangs", without looking at NoSignalMaxValueOnTdr: a fence created with that flag
// loses the value it held, and its waiters wake though their value was never reached.
// Expected rule: NF-20 (NoSignalMaxValueOnTdr fences keep their value across a reset; the OS signals the others).
import { KERNEL_VA_BASE, ReferenceDriver } from 'wddm-fence';

export const name = 'signals-every-fence-at-reset';

class SignalsEveryFenceAtReset extends ReferenceDriver {
  liveFences = new Map(); // hGlobalNativeFence → CurrentValue's physical address

  createNativeFence(args) {
    const result = super.createNativeFence(args);
    this.liveFences.set(result.hGlobalNativeFence, Number(args.CurrentValueKernelCpuVa - KERNEL_VA_BASE));
    return result;
  }

  destroyNativeFence(args) {
    super.destroyNativeFence(args);
    this.liveFences.delete(args.hGlobalNativeFence);
  }

  resetFromTimeout() {
    super.resetFromTimeout();
    for (const cvPhys of this.liveFences.values()) this.core.cpuWriteCurrentValue(this.core.fenceAtCurrentValue(cvPhys), 0xffff_ffff_ffff_ffffn);
  }
}

export function createDriver(context) {
  return new SignalsEveryFenceAtReset(context.hardware, context.core, context.options);
}
