// Broken on purpose: DxgkDdiDestroyHwQueue returns without taking the queue off the GPU ("the ring is freed
// once the queue drains"): what was still in its ring runs after user mode destroyed it, signalling fences
// for work that no longer exists.
// Expected rule: NF-05 (the GPU executes what user mode submitted to a live queue, and nothing of a destroyed one).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'keeps-destroyed-queue-running';

class KeepsDestroyedQueueRunning extends ReferenceDriver {
  destroyHwQueue() { /* the hardware queue stays on the run list */ }
}

export function createDriver(context) {
  return new KeepsDestroyedQueueRunning(context.hardware, context.core, context.options);
}
