// The receiving side of the cross-adapter doorbell (XA-07), as each adapter's
// hardware scheduler runs it. The rings themselves and the posting live in
// the core (assembly/doorbell.ts); this file decides WHEN a scheduler looks
// at its ring (doorbell.latencyNs after a post, in virtual time) and what it
// does with a record:
//
//   other GPU signals F=v ──core posts (cv word of F, v)──▶ ring of this adapter
//        ──latencyNs──▶ scheduler takes the records
//            ├─ rechecks ONLY the hardware queues blocked on F (no CPU, no interrupt)
//            └─ CMP check of this adapter's MonitoredValue of F: a CPU waiter here
//               that v satisfies gets the ordinary native fence signaled interrupt
//
// The driver tells its adapter's scheduler which local fence each CurrentValue
// word belongs to when it creates the fence (register, in
// DxgkDdiCreateNativeFence) and forgets it when it destroys it (unregister).

import type { GpuCore } from '../core/bindings.js';
import { u64 } from '../core/bindings.js';
import type { Scheduler, ScheduledEvent } from '../base/scheduler.js';
import type { Trace } from '../base/trace.js';
import type { CoreLayout, WasmMemory } from '../core/bindings.js';
import type { Random } from '../base/rng.js';

/** What the doorbell scheduler uses of its adapter's GPU (GpuHardware has it; no import back, src/gpu/hardware.ts owns the service). */
export interface DoorbellHost {
  readonly name: string;
  readonly memory: WasmMemory;
  readonly layout: CoreLayout;
  readonly stopped: boolean;
  /** The run list looks again at the queues blocked on `fence`. */
  rescanFence(fence: number): void;
  /** The CMP raised `engine`'s interrupt line. */
  raise(engine: number): void;
}

export class DoorbellService {
  private readonly fenceByCurrentValue = new Map<number, number>();
  private event?: ScheduledEvent;
  /** Every adapter's service, by adapter index (set by the machine). */
  peers: DoorbellService[] = [];
  /** Records this adapter's engines posted, and this adapter's scheduler took. */
  posted = 0;
  taken = 0;
  /**
   * A signal of `coreFence` on `engine` found `full` rings full (`posted` records went out): the
   * fence takes the interrupt path. The driver reports it to the OS (DxgkrnlCallbacks.NotifyDoorbellFallback).
   */
  onFallback: (engine: number, coreFence: number, posted: number, full: number) => void = () => {};

  constructor(
    readonly index: number,
    private readonly hardware: DoorbellHost,
    private readonly core: GpuCore,
    private readonly scheduler: Scheduler,
    private readonly trace: Trace,
    readonly latencyNs: number,
    /** The machine's timing stream and jitter fraction (Timing.jitter). */
    private readonly random: Random,
    private readonly jitter: number,
  ) {
    scheduler.register(this.owner, (event) => {
      if (event.kind !== 'doorbell') throw new Error(`${this.owner}: no scheduler event of kind "${event.kind}"`);
      this.event = undefined;
      this.service();
    });
  }

  /** Its scheduler owner name: one doorbell event kind, 'doorbell'. */
  get owner(): string { return `${this.hardware.name}/doorbell`; }

  register(cvPhys: number, coreFence: number): void { this.fenceByCurrentValue.set(cvPhys, coreFence); }
  unregister(cvPhys: number): void { this.fenceByCurrentValue.delete(cvPhys); }

  /** Right after a signal step of this adapter: read what the core posted (the StepReport's doorbell counts). */
  afterSignal(engine: number, coreFence: number): void {
    const view = new DataView(this.hardware.memory.buffer);
    const base = this.core.outBufferAddress();
    const at = this.hardware.layout.out.step;
    const posted = view.getUint32(base + at.doorbellPosted, true);
    const full = view.getUint32(base + at.doorbellFull, true);
    if (!posted && !full) return;
    this.trace.record('gpu', `${this.hardware.name}/engine${engine}`, 'doorbell rung', { fence: coreFence, posted, fullRings: full });
    this.posted += posted;
    if (full > 0) this.onFallback(engine, coreFence, posted, full);
    for (const peer of this.peers) if (peer !== this) peer.ring();
  }

  /** A doorbell write reached this adapter: its scheduler looks at the ring after the latency. */
  ring(): void {
    if (this.hardware.stopped || (this.event && !this.event.cancelled)) return;
    this.event = this.scheduler.after(this.random.jittered(this.latencyNs, this.jitter), this.owner, 'doorbell', {}, `${this.hardware.name} doorbell`);
  }

  /** The scheduler takes every record in its ring. Returns how many. */
  service(): number {
    if (this.hardware.stopped) return 0;
    let total = 0;
    for (;;) {
      const n = this.core.doorbellTake(64);
      if (n <= 0) break;
      const record = this.hardware.layout.out.doorbell;
      const view = new DataView(this.hardware.memory.buffer.slice(this.core.outBufferAddress(), this.core.outBufferAddress() + n * record.bytes));
      for (let i = 0; i < n; i++) {
        const cvPhys = view.getUint32(i * record.bytes + record.word, true);
        const source = view.getUint32(i * record.bytes + record.source, true);
        const value = view.getBigUint64(i * record.bytes + record.value, true);
        const fence = this.fenceByCurrentValue.get(cvPhys);
        const actor = `${this.hardware.name}/scheduler`;
        if (fence === undefined) {
          this.trace.record('gpu', actor, 'doorbell record for a fence not opened here (ignored)', { CurrentValuePhys: cvPhys, value, fromAdapter: source });
          continue;
        }
        this.trace.record('gpu', actor, 'doorbell record taken: rescanning queues waiting on it', { fence, value, fromAdapter: source });
        this.hardware.rescanFence(fence);
        const raised = this.core.cmpSignalCheck(0, fence, value) === 1;
        this.trace.record('cmp', actor, raised ? 'interrupt raised' : 'no interrupt', {
          value, monitoredValue: u64(this.core.cpuReadMonitoredValue(fence)), rule: raised ? 'CurrentValue > MonitoredValue (a CPU waiter here)' : 'CurrentValue <= MonitoredValue',
        });
        if (raised) this.hardware.raise(0);
      }
      total += n;
      this.taken += n;
      if (n < 64) break;
    }
    return total;
  }
}
