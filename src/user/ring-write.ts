// User-mode submission's last step: the checked commands (src/os/hw-queues.ts) handed to the driver's
// user-mode half in the form it takes. A user-mode half with the optional typed form
// (submitColumnsToHwQueue) defined where its submitToHwQueue is gets the columns as they are; any other
// gets UserModeCommand records made from them (docs/DRIVERS.md). So a driver that overrides only
// submitToHwQueue, on an instance or in a subclass of one that has the typed form, still sees every
// submission through its override.

import { hasFormBeside } from '../base/optional-form.js';
import type { UserModeDriverColumns, UserModeDriverInterface } from '../ddi/ddi.js';
import type { SubmissionCommands } from '../os/kernel.js';

/** Does `umd` take the typed form (its submitColumnsToHwQueue defined where its submitToHwQueue is)? Its machine asks once, at the first submission. */
export function takesColumns(umd: UserModeDriverInterface): boolean {
  return hasFormBeside(umd, 'submitColumnsToHwQueue', 'submitToHwQueue');
}

/**
 * Writes `commands` to a hardware queue's ring through `umd`, in the typed form when `columns` (takesColumns, decided
 * once per user-mode half: a driver's halves do not change shape); throws what the driver throws, having written nothing.
 */
export function writeRing(umd: UserModeDriverInterface, columns: boolean, privateDriverData: Uint8Array, commands: SubmissionCommands): void {
  if (columns) {
    (umd as UserModeDriverInterface & UserModeDriverColumns).submitColumnsToHwQueue({
      HwQueuePrivateDriverData: privateDriverData, CommandCount: commands.count,
      Ops: commands.ops, GpuVas: commands.gpuVas, Values: commands.values, Handles: commands.handles,
    });
  } else {
    umd.submitToHwQueue({ HwQueuePrivateDriverData: privateDriverData, Commands: commands.toRecords() });
  }
}
