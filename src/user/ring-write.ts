// User-mode submission's last step: the checked commands (src/os/hw-queues.ts) handed to the driver's
// user-mode half in the form it takes. A user-mode half with the optional typed form
// (submitColumnsToHwQueue) defined where its submitToHwQueue is gets the columns as they are; any other
// gets UserModeCommand records made from them (docs/DRIVERS.md). So a driver that overrides only
// submitToHwQueue, on an instance or in a subclass of one that has the typed form, still sees every
// submission through its override.

import { hasFormBeside } from '../base/optional-form.js';
import type { UserModeDriverColumns, UserModeDriverInterface } from '../ddi/ddi.js';
import type { SubmissionCommands } from '../os/kernel.js';

/** Per user-mode half: whether it takes the typed form (decided once: a driver's halves do not change shape). */
const typed = new WeakMap<object, boolean>();

/** Writes `commands` to a hardware queue's ring through `umd` (throws what the driver throws, having written nothing). */
export function writeRing(umd: UserModeDriverInterface, privateDriverData: Uint8Array, commands: SubmissionCommands): void {
  let columns = typed.get(umd);
  if (columns === undefined) typed.set(umd, (columns = hasFormBeside(umd, 'submitColumnsToHwQueue', 'submitToHwQueue')));
  if (columns) {
    (umd as UserModeDriverInterface & UserModeDriverColumns).submitColumnsToHwQueue({
      HwQueuePrivateDriverData: privateDriverData, CommandCount: commands.count,
      Ops: commands.ops, GpuVas: commands.gpuVas, Values: commands.values, Handles: commands.handles,
    });
  } else {
    umd.submitToHwQueue({ HwQueuePrivateDriverData: privateDriverData, Commands: commands.toRecords() });
  }
}
