// Broken on purpose: DxgkDdiUpdateCurrentValuesFromCpu only acts when it has values to write: a call with
// NotificationOnly (another adapter signalled a cross-adapter fence) returns without rescanning the run
// list, so this adapter's hardware queues waiting on the fence stay blocked.
// Expected rule: NF-18 (NotificationOnly means rescan without writing).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'ignores-notification-only';

class IgnoresNotificationOnly extends ReferenceDriver {
  updateCurrentValuesFromCpu(args) {
    if (args.Flags.NotificationOnly) return;
    super.updateCurrentValuesFromCpu(args);
  }
}

export function createDriver(context) {
  return new IgnoresNotificationOnly(context.hardware, context.core, context.options);
}
