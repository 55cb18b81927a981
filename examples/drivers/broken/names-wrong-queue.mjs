// Broken on purpose: with OptimizedNativeFenceSignaledInterrupt, when the GPU cannot tell which hardware
// queue raised an interrupt (several queues signalled into it) the ISR names the engine's newest queue
// instead of none. The OS reads only that queue's signal log and misses the other queues' signals.
// Expected rule: INT-05 (name the one queue whose signals raised the interrupt, or none).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'names-wrong-queue';

class NamesWrongQueue extends ReferenceDriver {
  newestQueue = new Map(); // EngineOrdinal → the hHwQueue made last

  createHwQueue(args) {
    const result = super.createHwQueue(args);
    this.newestQueue.set(args.EngineOrdinal, result.hHwQueue);
    return result;
  }

  startDevice(os) {
    return super.startDevice({
      ...os,
      NotifyInterrupt: (data) => {
        const newest = this.newestQueue.get(data.NodeOrdinal);
        if (data.pSignaledNativeFenceArray || data.hHWQueue !== 0 || newest === undefined) return os.NotifyInterrupt(data);
        return os.NotifyInterrupt({ ...data, hHWQueue: newest });
      },
    });
  }
}

export function createDriver(context) {
  return new NamesWrongQueue(context.hardware, context.core, context.options);
}
