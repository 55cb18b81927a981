// Single-fence CPU waiters driven through the core's exports directly (white-box heap tests):
// each waiter is a record (waiterCreate) and one wait block (waitBlockAdd); it is retired with
// waiterRetire, and a satisfied one is retired as the OS retires it.
import type { CoreExports, CoreLayout, Machine } from '../src/index.js';

export interface CoreWaiters {
  /** A waiter of `fence` for `value` with host id `hostId`: returns its wait block id (or the core's error). */
  add(fence: number, value: bigint, hostId: number): number;
  /** Retires the waiter of wait block `block`: the core's result (the fence ids it changed, or an error). */
  remove(block: number): number;
  /** The record of a block's waiter (0 for none). */
  recordOf(block: number): number;
  /** fenceSatisfy up to `limit`, the records' host ids in pop order; every completed waiter is retired. */
  satisfy(fence: number, current: bigint, limit: number): number[];
}

export function coreWaiters(machine: Machine, core: CoreExports, layout: CoreLayout = machine.layout): CoreWaiters {
  const recordByBlock = new Map<number, number>();
  const blockByHost = new Map<number, number>();
  return {
    add(fence, value, hostId) {
      const record = core.waiterCreate(hostId, layout.waiterModeAll);
      if (record < 0) return record;
      const block = core.waitBlockAdd(fence, value, record, 0);
      if (block < 0) { core.waiterRetire(record); return block; }
      recordByBlock.set(block, record);
      blockByHost.set(hostId, block);
      return block;
    },
    remove(block) {
      const record = recordByBlock.get(block) ?? 0;
      const result = core.waiterRetire(record);
      if (result >= 0) recordByBlock.delete(block);
      return result;
    },
    recordOf: (block) => recordByBlock.get(block) ?? 0,
    satisfy(fence, current, limit) {
      const n = core.fenceSatisfy(fence, current, limit);
      const at = layout.out.satisfied;
      const view = new DataView(machine.memory.buffer.slice(core.outBufferAddress(), core.outBufferAddress() + n * at.bytes));
      const hosts: number[] = [];
      for (let i = 0; i < n; i++) {
        const host = view.getUint32(i * at.bytes + at.waiter, true);
        hosts.push(host);
        if (view.getUint32(i * at.bytes + at.completed, true) === 1) {
          const block = blockByHost.get(host)!;
          core.waiterRetire(recordByBlock.get(block)!);
          recordByBlock.delete(block);
        }
      }
      return hosts;
    },
  };
}
