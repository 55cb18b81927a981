// Broken on purpose: the user-mode half leaves out of the ring every GPU wait whose value the fence's
// CurrentValue already holds when the commands are submitted (a "fast path"). The GPU then never runs
// that wait: it logs no unblocked wait, and a fence rewound below the value before the GPU gets there
// (AllowFenceRewind) no longer holds the queue back.
// Expected rule: NF-06 (a GPU wait user mode submitted blocks its queue until CurrentValue >= the value).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'skips-satisfied-waits';

export function createDriver(context) {
  const driver = new ReferenceDriver(context.hardware, context.core, context.options);
  const userMode = driver.userMode;
  const submit = userMode.submitToHwQueue.bind(userMode);
  const reached = (queue, c) => {
    const phys = context.core.gpuVaTranslate(queue.processSlot, c.gpuVa);
    return phys !== 0 && new DataView(context.hardware.memory.buffer).getBigUint64(phys, true) >= c.value;
  };
  // An own property: the runtime then hands every submission to this form (docs/DRIVERS.md).
  userMode.submitToHwQueue = (args) => {
    const queue = driver.queueOfPrivateData(args.HwQueuePrivateDriverData);
    const commands = queue ? args.Commands.filter((c) => c.op !== 'wait' || !reached(queue, c)) : args.Commands;
    return submit({ ...args, Commands: commands.length ? commands : [{ op: 'work', gpuVa: 0n, value: 0n, handle: 0 }] });
  };
  return driver;
}
