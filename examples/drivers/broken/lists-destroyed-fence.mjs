// Broken on purpose: the ISR keeps the handle of the last fence the OS destroyed and adds it to every
// native fence signaled interrupt that carries a list (a stale entry in the driver's signalled-fence table).
// Expected rule: INT-03 (a destroyed fence's handle in the list: a fatal driver error, the adapter is bug-checked).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'lists-destroyed-fence';

class ListsDestroyedFence extends ReferenceDriver {
  lastDestroyed = 0;

  destroyNativeFence(args) {
    super.destroyNativeFence(args);
    this.lastDestroyed = args.hGlobalNativeFence;
  }

  startDevice(os) {
    return super.startDevice({
      ...os,
      NotifyInterrupt: (data) => {
        const list = data.pSignaledNativeFenceArray;
        if (!list || !this.lastDestroyed) return os.NotifyInterrupt(data);
        return os.NotifyInterrupt({ ...data, pSignaledNativeFenceArray: [...list, this.lastDestroyed], SignaledNativeFenceCount: list.length + 1 });
      },
    });
  }
}

export function createDriver(context) {
  return new ListsDestroyedFence(context.hardware, context.core, context.options);
}
