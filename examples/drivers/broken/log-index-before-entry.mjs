// Broken on purpose: the driver programs its GPU to advance a signal log's FirstFreeEntryIndex before it
// writes the entry. The slot the index now covers still holds old data when the OS reads it, and the
// entry lands one slot further on.
// Expected rule: LOG-04 (write the entry, then advance the index).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'log-index-before-entry';

export function createDriver(context) {
  context.hardware.configureFirmware({ signalLogOrder: 'index-first' });
  return new ReferenceDriver(context.hardware, context.core, context.options);
}
