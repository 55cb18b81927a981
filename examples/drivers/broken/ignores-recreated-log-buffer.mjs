// Broken on purpose: the driver programs each hardware queue's two log buffers once, when the OS first
// sets them after DxgkDdiCreateHwQueue, and ignores DxgkDdiSetNativeFenceLogBuffer after that: when the
// OS destroys and recreates a buffer, the GPU goes on logging into the old one (a page the OS has freed).
// Expected rule: LOG-03 (the driver always writes to the latest buffer).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'ignores-recreated-log-buffer';

class IgnoresRecreatedLogBuffer extends ReferenceDriver {
  buffersSet = new Map(); // hHwQueue → SetNativeFenceLogBuffer calls so far

  setNativeFenceLogBuffer(args) {
    const calls = (this.buffersSet.get(args.hHwQueue) ?? 0) + 1;
    this.buffersSet.set(args.hHwQueue, calls);
    if (calls <= 2) super.setNativeFenceLogBuffer(args); // the waits and the signals buffer, once each
  }

  destroyHwQueue(args) {
    super.destroyHwQueue(args);
    this.buffersSet.delete(args.hHwQueue);
  }
}

export function createDriver(context) {
  return new IgnoresRecreatedLogBuffer(context.hardware, context.core, context.options);
}
