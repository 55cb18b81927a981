// Broken on purpose: the user-mode half packs each signal command's value into a 32-bit ring field.
// On a 64-bit GPU a signal past 2^32 then writes a value user mode never submitted, lower than
// CurrentValue: the fence moves backwards with no AllowFenceRewind.
// Expected rule: NF-05 (a GPU signal writes the value user mode submitted; NF-19, the fence moving
// backwards, is that wrong value's consequence and is not reported on its own).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'truncates-signal-values';

export function createDriver(context) {
  const driver = new ReferenceDriver(context.hardware, context.core, context.options);
  const userMode = driver.userMode;
  const submit = userMode.submitToHwQueue.bind(userMode);
  userMode.submitToHwQueue = (args) => submit({
    ...args,
    Commands: args.Commands.map((c) => (c.op === 'signal' ? { ...c, value: c.value & 0xffff_ffffn } : c)),
  });
  return driver;
}
