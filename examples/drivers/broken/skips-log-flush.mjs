// Broken on purpose: DxgkDdiUpdateNativeFenceLogs returns without flushing the queues' pending log
// writes ("the GPU's writes are coherent"): the last entry each queue wrote is still in its log write
// buffer when the OS reads the log, which then reads a stale slot.
// Expected rule: LOG-06 (the driver flushes pending log writes before the OS reads new entries).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'skips-log-flush';

class SkipsLogFlush extends ReferenceDriver {
  updateNativeFenceLogs() { /* nothing flushed */ }
}

export function createDriver(context) {
  return new SkipsLogFlush(context.hardware, context.core, context.options);
}
