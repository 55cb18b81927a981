// One rule for which signal unblocked a wait (src/timeline/unblocked-by.ts), in the one timeline
// (src/timeline/timeline.ts, the OS's logs joined with the trace), which the page reads back (model.ts).
import { describe, it, expect } from 'vitest';
import { unblockedBy, canonicalFence } from '../src/timeline/unblocked-by.js';
import { timelineModel, findBuiltin, runScenario } from '../src/scenario-files/index.js';
import { exportTimeline } from '../src/index.js';

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

  it('LOG-08 the page\'s model is the export read back: each slice an X event, each arrow a flow between the slices it binds', async () => {
    for (const name of ['demo', 'monitored-vs-native', 'scenario-2a', 'cross-process']) {
      const result = await runScenario(findBuiltin(name)!.scenario!);
      const trace = exportTimeline(result.machine);
      const model = timelineModel(trace);
      const slices = trace.traceEvents.filter((e) => e.ph === 'X' && e.cat !== 'flow');
      expect(model.slices.map((s) => s.label), name).toEqual(slices.map((e) => e.name));
      const flows = trace.traceEvents.filter((e) => e.flow_out);
      expect(model.arrows.length, name).toBe(flows.length);
      expect(flows.every((out) => trace.traceEvents.filter((e) => e.flow_in && e.bind_id === out.bind_id).length === 1), name).toBe(true);
      expect(model.marks.length, name).toBe(trace.traceEvents.filter((e) => e.ph === 'i').length);
    }
  });

  it('LOG-08 every arrow of every built-in scenario starts at the signal the rule names: the first of its fence with a value >= the wait\'s, no later than the wait\'s end', async () => {
    let arrows = 0, fromCpu = 0, fromContexts = 0;
    for (const name of ['demo', 'monitored-vs-native', 'scenario-1', 'scenario-2a', 'scenario-2b', 'cross-process', 'interrupt-payload', 'log-overrun']) {
      const result = await runScenario(findBuiltin(name)!.scenario!);
      const model = timelineModel(exportTimeline(result.machine));
      // every signal slice, per fence it names: "signal f 3", "CPU signal f 3, g 4"
      const signals = model.slices.filter((s) => s.kind === 'signal' || s.kind === 'cpu-signal').flatMap((s) =>
        s.label.replace(/^(CPU )?signal /, '').split(', ').map((part) => {
          const [fence, value] = part.split(' ');
          return { slice: s, fence: canonicalFence(fence), value: BigInt(value), timeNs: s.endNs };
        }));
      for (const a of model.arrows) {
        const to = model.slices[a.to];
        const expected = unblockedBy(signals.filter((s) => s.fence === a.fence), BigInt(a.value), to.endNs);
        expect(expected, `${name}: ${to.label}`).toBeDefined();
        expect(model.slices[a.from].id, `${name}: ${to.label} from ${model.slices[a.from].label}`).toBe(expected!.slice.id);
        arrows++;
        if (model.slices[a.from].kind === 'cpu-signal') fromCpu++;
        if (/^context|context/.test(model.slices[a.from].track) || result.scenario.queues?.some((q) => q.kind === 'kernelMode' && model.slices[a.from].track.endsWith(`/${q.name}`))) fromContexts++;
      }
    }
    expect(arrows).toBeGreaterThan(20);
    expect(fromCpu).toBeGreaterThan(0);
    expect(fromContexts).toBeGreaterThan(0);
  });
});
