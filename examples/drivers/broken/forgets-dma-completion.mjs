// Broken on purpose: the ISR does not report the DMA completed interrupt of a command buffer that ends
// with a fence write ("its monitored fence interrupt already told the OS"): the OS never learns the
// buffer completed, never scans for it, and holds what the context submits next.
// Expected rule: MF-06 (each completed command buffer is reported, with its SubmissionFenceId).
import { ReferenceDriver } from 'wddm-fence';

export const name = 'forgets-dma-completion';

class ForgetsDmaCompletion extends ReferenceDriver {
  endsWithFenceWrite = new Set(); // SubmissionFenceId of each buffer whose last command is a fence write

  submitCommand(args) {
    const accepted = super.submitCommand(args);
    if (accepted && args.Commands.at(-1)?.op === 'fenceWrite') this.endsWithFenceWrite.add(args.SubmissionFenceId);
    return accepted;
  }

  startDevice(os) {
    return super.startDevice({
      ...os,
      NotifyDmaCompleted: (data) => {
        if (this.endsWithFenceWrite.delete(data.SubmissionFenceId)) return undefined;
        return os.NotifyDmaCompleted(data);
      },
    });
  }
}

export function createDriver(context) {
  return new ForgetsDmaCompletion(context.hardware, context.core, context.options);
}
