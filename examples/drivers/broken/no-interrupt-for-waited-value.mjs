// Broken on purpose: the ISR takes the engine's interrupt but, on a "fast path" for an interrupt that
// lists a single fence, returns without calling DxgkCbNotifyInterrupt: the OS never hears of that signal.
// Expected rule: INT-06 (a GPU signal that made CurrentValue > MonitoredValue must reach the OS).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'no-interrupt-for-waited-value';

class NoInterruptForWaitedValue extends ReferenceDriver {
  startDevice(os) {
    return super.startDevice({
      ...os,
      NotifyInterrupt: (data) => {
        if (data.pSignaledNativeFenceArray && data.pSignaledNativeFenceArray.length === 1) return undefined;
        return os.NotifyInterrupt(data);
      },
    });
  }
}

export function createDriver(context) {
  return new NoInterruptForWaitedValue(context.hardware, context.core, context.options);
}
