// Legal: more interrupts than needed. After each DxgkDdiUpdateMonitoredValues the driver raises the
// interrupt line whether or not its CMP check asked for it, so the OS sometimes handles an interrupt
// that wakes nobody. The contract allows spurious interrupts (NF-10: they are counted, never an error);
// check-driver does not judge how many interrupts a driver raises, so this driver passes (exit 0).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'extra-interrupts';

class ExtraInterrupts extends ReferenceDriver {
  updateMonitoredValues(args) {
    const inProgress = super.updateMonitoredValues(args);
    if (args.NumFences > 0) this.hardware.raise(0); // needed or not
    return inProgress;
  }
}

export function createDriver(context) {
  return new ExtraInterrupts(context.hardware, context.core, context.options);
}
