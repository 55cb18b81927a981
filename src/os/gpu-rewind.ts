// GPU signals below CurrentValue: the model's rule (NF-19 and the GPU).
//
// A GPU signal is a plain 64-bit store; the engine does not compare. D3D12 lets
// a queue signal a fence to a lower value (ID3D12CommandQueue::Signal takes any
// value), so a native fence's GPU signal below its CurrentValue lowers the
// fence: a GPU rewind. The model lets it happen, as hardware does, and says so:
//
//   • trace line `gpu rewind` (kind gpu, actor the engine) with the queue, the
//     fence, the value it overwrote and the one it wrote;
//   • counter `gpuRewinds` (machine.summary().os);
//   • `onRewind(listener)`: every rewind as a GpuRewind record, the hook a
//     contract checker uses to report it.
//
// What NF-19 still holds to: a CPU signal below CurrentValue is refused unless
// it sets AllowFenceRewind; a CPU waiter the OS has woken stays woken (its wait
// block is gone); a hardware queue wait that passed stays passed. A waiter the
// OS had not yet seen satisfied when the lower value landed waits on: the OS
// only ever acts on the CurrentValue it reads.

import type { Trace } from '../base/trace.js';
import type { GpuProgress } from './objects.js';

export interface GpuRewind {
  timeNs: number;
  adapter: string;
  engine: number;
  /** The hardware queue whose signal lowered the fence (its debug name). */
  queue: string;
  /** The fence's label, and the user-mode handle the command named. */
  fence: string;
  hSyncObject: number;
  /** CurrentValue before the store, and after it. */
  fromValue: bigint;
  toValue: bigint;
}

export class GpuRewinds {
  private listeners: ((rewind: GpuRewind) => void)[] = [];
  /** GPU signals that lowered CurrentValue (summary().os.gpuRewinds). */
  count = 0;

  constructor(private readonly trace: Trace) {}

  /** Calls `listener` for every GPU rewind from now on; returns the function that stops it. */
  onRewind(listener: (rewind: GpuRewind) => void): () => void {
    this.listeners.push(listener);
    return () => { this.listeners = this.listeners.filter((l) => l !== listener); };
  }

  /** The rule, applied to every GPU progress report (NotifyGpuProgress): a signal below the value it overwrote. */
  observe(progress: GpuProgress): void {
    const { adapter, report, fence } = progress;
    const before = report.PreviousValue;
    if (report.Operation !== 'SIGNAL' || before === undefined) return;
    // A whole 64-bit store: an adapter with native fences writes 64 bits atomically (NativeGpuFence with
    // No64BitAtomics fails adapter start, src/os/dxgkrnl.ts), so the value is what the engine wrote.
    const now = report.Value;
    if (now >= before) return;
    if (!fence || !progress.queue) return;
    this.count++;
    const engine = report.EngineOrdinal;
    const rewind: GpuRewind = {
      timeNs: report.GpuTimeNs, adapter: adapter.name, engine, queue: progress.queue.label,
      fence: fence.label, hSyncObject: report.hSyncObject, fromValue: before, toValue: now,
    };
    this.trace.record('gpu', `${adapter.name}/engine${engine}`, 'gpu rewind', {
      queue: rewind.queue, fence: rewind.fence, hSyncObject: rewind.hSyncObject, from: rewind.fromValue, to: rewind.toValue,
    });
    for (const listener of this.listeners) listener(rewind);
  }
}
