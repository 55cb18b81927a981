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

/** NF-11's order: a write the new MonitoredValue, b barrier, c read CurrentValue, d interrupt if CurrentValue > MonitoredValue. */
export const CMP_ORDER: readonly CmpStep[] = Object.freeze(['write-monitored-value', 'barrier', 'read-current-value', 'check'] as const);
/** The same without the barrier (the reference driver's monitoredValueBarrier: false, NF-11 broken on purpose). */
export const CMP_ORDER_WITHOUT_BARRIER: readonly CmpStep[] = Object.freeze(['write-monitored-value', 'read-current-value', 'check'] as const);

/**
 * One CMP step for `fence` (the core's export for it; `check` raises engine 0's interrupt when the
 * CMP says so). `currentValue` is what step c read last; returns what it is after this step.
 */
export function cmpStep(core: GpuCore, hardware: GpuHardware, step: CmpStep, fence: number, value: bigint, currentValue: bigint): bigint {
  const ddi = 'DxgkDdiUpdateMonitoredValues';
  switch (step) {
    case 'write-monitored-value':
      check(core.cmpWriteMonitoredValue(fence, value), ddi);
      return currentValue;
    case 'barrier':
      core.cmpBarrier();
      return currentValue;
    case 'read-current-value':
      return u64(core.cmpReadCurrentValue(fence));
    case 'check':
      if (check(core.cmpMonitoredValueCheck(0, fence, currentValue), ddi) === 1) hardware.raise(0);
      return currentValue;
  }
}

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
    this.currentValue = cmpStep(this.core, this.hardware, this.next, this.fences[this.index], this.values[this.index], this.currentValue);
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
