// DxgkDdiUpdateMonitoredValues in steps: the reference driver's CMP steps a-d, one per step()
// (schedule granularity 'step'; src/driver/reference.ts returns it as its DdiInProgress, and the
// OS calls step() once per scheduler event: src/os/waits.ts). The race explorer knows what each
// step touches (src/explore/footprint.ts), because it is this class and no other.

import { u64, type GpuCore } from '../core/bindings.js';
import { check } from '../base/errors.js';
import type { GpuHardware } from '../gpu/hardware.js';
import type { DdiInProgress } from '../ddi/ddi.js';

/** The CMP's steps of DxgkDdiUpdateMonitoredValues for one fence, in the reference driver's order (NF-11). */
export type CmpStep = 'write-monitored-value' | 'barrier' | 'read-current-value' | 'check';

/**
 * DxgkDdiUpdateMonitoredValues performed in steps (schedule granularity 'step'): the same
 * calls as the whole DDI, the core's four CMP steps per fence (a cmpWriteMonitoredValue,
 * b cmpBarrier, c cmpReadCurrentValue, d cmpMonitoredValueCheck; b left out without the
 * barrier), one per step(), so GPU steps can run between any two. Where it is lives in its
 * fields (a schedule explorer snapshots them).
 */
export class MonitoredValueUpdateSteps implements DdiInProgress {
  /** The fence being updated (an index into `fences`). */
  index = 0;
  /** Its next CMP step (an index into `order`). */
  position = 0;
  /** What step c read, for step d. */
  currentValue = 0n;

  constructor(private readonly core: GpuCore, private readonly hardware: GpuHardware,
              /** The CMP steps for each fence, in the order performed (the reference: a, b, c, d; without the barrier: a, c, d). */
              readonly order: readonly CmpStep[],
              /** Core fence ids, in the DDI's order. */
              readonly fences: readonly number[], readonly values: readonly bigint[]) {
    if (!order.length) throw new Error('MonitoredValueUpdateSteps: no CMP step in the order');
  }

  /** The CMP step step() performs next. */
  get next(): CmpStep { return this.order[this.position]; }

  step(): boolean {
    const ddi = 'DxgkDdiUpdateMonitoredValues';
    const fence = this.fences[this.index];
    switch (this.next) {
      case 'write-monitored-value':
        check(this.core.cmpWriteMonitoredValue(fence, this.values[this.index]), ddi);
        break;
      case 'barrier':
        this.core.cmpBarrier();
        break;
      case 'read-current-value':
        this.currentValue = u64(this.core.cmpReadCurrentValue(fence));
        break;
      case 'check':
        if (check(this.core.cmpMonitoredValueCheck(0, fence, this.currentValue), ddi) === 1) this.hardware.raise(0);
        break;
    }
    if (++this.position < this.order.length) return false;
    this.position = 0;
    this.currentValue = 0n;
    return ++this.index >= this.fences.length;
  }

  describeNext(): string {
    const fence = this.fences[this.index];
    switch (this.next) {
      case 'write-monitored-value': return `a cmpWriteMonitoredValue(fence ${fence}, ${this.values[this.index]})`;
      case 'barrier': return 'b cmpBarrier';
      case 'read-current-value': return `c cmpReadCurrentValue(fence ${fence})`;
      case 'check': return `d cmpMonitoredValueCheck(fence ${fence}, ${this.currentValue})`;
    }
  }
}
