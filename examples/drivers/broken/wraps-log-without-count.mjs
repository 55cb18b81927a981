// Broken on purpose: the driver programs its GPU's log writer to wrap FirstFreeEntryIndex back to 0
// without bumping WraparoundCount (firmware). A reader that falls behind by a whole buffer then sees
// fewer entries than were written and cannot tell that it lost any.
// Expected rule: LOG-05 (an overrun bumps the wraparound count, so the reader can detect it).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'wraps-log-without-count';

export function createDriver(context) {
  context.hardware.configureFirmware({ logWraparound: 'index-only' });
  return new ReferenceDriver(context.hardware, context.core, context.options);
}
