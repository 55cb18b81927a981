// One rule for which signal unblocked a wait (src/timeline/unblocked-by.ts), drawn by both timelines:
// the page's model (built from the trace) and the Chrome/Perfetto export (built from the OS's logs).
import { describe, it, expect } from 'vitest';
import { unblockedBy, canonicalFence } from '../src/timeline/unblocked-by.js';
import { buildTimeline, findBuiltin, runScenario } from '../src/scenario-files/index.js';
import { exportTimeline } from '../src/index.js';
import type { TraceEvent } from '../src/base/trace.js';

describe('which signal unblocked a wait', () => {
  it('the first signal of the fence with a value >= the wait\'s, no later than the wait\'s end; ties in the order given', () => {
    const signals = [
      { name: 'a', value: 3n, timeNs: 5 }, { name: 'b', value: 5n, timeNs: 10 }, { name: 'c', value: 5n, timeNs: 10 },
      { name: 'd', value: 9n, timeNs: 30 }, { name: 'e', value: 7n, timeNs: 8 },
    ];
    expect(unblockedBy(signals, 5n, 40)?.name).toBe('e');
    expect(unblockedBy(signals, 6n, 40)?.name).toBe('e');
    expect(unblockedBy(signals.slice(0, 4), 5n, 40)?.name).toBe('b');
    expect(unblockedBy(signals, 8n, 29)).toBeUndefined();
    expect(unblockedBy(signals, 8n, 30)?.name).toBe('d');
    expect(unblockedBy([], 1n, 100)).toBeUndefined();
    expect(canonicalFence('frame@dGPU')).toBe('frame');
    expect(canonicalFence('a@b@iGPU')).toBe('a@b');
  });

  it('the page\'s model draws the arrow from the signal that reached the value, not a later one, when a wait blocked after it (seen late)', () => {
    let seq = 0;
    const event = (timeNs: number, kind: TraceEvent['kind'], actor: string, name: string, args: TraceEvent['args']): TraceEvent => ({ seq: seq++, timeNs, kind, actor, name, args });
    const events: TraceEvent[] = [
      event(0, 'os', 'dxgkrnl', 'handle', { hSyncObject: 0x40, fence: 'frame' }),
      event(10, 'gpu', 'gpu0/engine0', 'signal', { queue: 'producer', hSyncObject: 0x40, value: '5' }),
      event(20, 'gpu', 'gpu0/engine1', 'wait blocked', { queue: 'consumer', hSyncObject: 0x40, value: '5' }),
      event(30, 'gpu', 'gpu0/engine0', 'signal', { queue: 'producer', hSyncObject: 0x40, value: '6' }),
      event(40, 'gpu', 'gpu0/engine1', 'wait unblocked', { queue: 'consumer', hSyncObject: 0x40, value: '5' }),
    ];
    const model = buildTimeline(events);
    expect(model.arrows).toHaveLength(1);
    const from = model.slices[model.arrows[0].from];
    expect([from.label, from.startNs]).toEqual(['signal frame = 5', 10]);
  });

  it('LOG-08 the page\'s model and the Perfetto export draw the same arrows for the demo: signal time to wait end, each once', async () => {
    const result = await runScenario(findBuiltin('demo')!.scenario!);
    const model = buildTimeline(result.machine.trace.events);
    const pairs = (list: [number, number][]) => list.map(([a, b]) => `${a}→${b}`).sort();
    const fromModel = model.arrows.map((a): [number, number] => [model.slices[a.from].startNs, model.slices[a.to].endNs]);
    const events = exportTimeline(result.machine).traceEvents;
    const fromExport = events.filter((e) => e.flow_out).map((out): [number, number] => {
      const into = events.find((e) => e.flow_in && e.bind_id === out.bind_id)!;
      return [Math.round(out.ts * 1000), Math.round(into.ts * 1000)];
    });
    expect(fromModel.length).toBe(6);
    expect(pairs(fromExport)).toEqual(pairs(fromModel));
  });
});
