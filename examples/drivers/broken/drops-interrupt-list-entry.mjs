// Broken on purpose: the ISR copies one entry too few of the engine's signalled-fence list into the
// interrupt data (an off-by-one in its copy loop): the last signalled fence with a CPU waiter is never named.
// Expected rule: INT-01 (the list is the exact set of signalled fences with CPU waiters).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'drops-interrupt-list-entry';

class DropsInterruptListEntry extends ReferenceDriver {
  startDevice(os) {
    return super.startDevice({
      ...os,
      NotifyInterrupt: (data) => {
        const list = data.pSignaledNativeFenceArray;
        if (!list || !list.length) return os.NotifyInterrupt(data);
        return os.NotifyInterrupt({ ...data, pSignaledNativeFenceArray: list.slice(0, -1), SignaledNativeFenceCount: list.length - 1 });
      },
    });
  }
}

export function createDriver(context) {
  return new DropsInterruptListEntry(context.hardware, context.core, context.options);
}
