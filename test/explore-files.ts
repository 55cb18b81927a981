// Scenario files the explorer's tests share: built-in ones cut down to what a test can search twice.
import { readFileSync } from 'node:fs';
import { parseScenario } from '../src/scenario-files/load.js';
import type { Scenario } from '../src/scenario-files/types.js';

/** monitored-vs-native.yaml cut down to its first `frames` frames (each queue's commands and each wait up to that frame), without its work commands unless `work`, and without its consumer queues unless `consumers` (then the producers wait for nothing and the presenters wait for what the producers write). */
export function monitoredVsNative(frames: number, { work = true, consumers = true }: { work?: boolean; consumers?: boolean } = {}): Scenario {
  const text = readFileSync(new URL('../scenarios/monitored-vs-native.yaml', import.meta.url), 'utf8');
  const s = parseScenario(text, 'monitored-vs-native.yaml');
  const value = (v: unknown) => Number(v);
  const keep = (c: { wait?: { value: unknown }; signal?: { value: unknown }; fenceWrite?: { value: unknown } }) => value((c.wait ?? c.signal ?? c.fenceWrite ?? { value: 0 }).value) <= frames;
  const queues = s.queues!.filter((q) => consumers || !q.name.endsWith('Consumer')).map((q) => {
    const commands = q.commands!.filter((c) => keep(c) && (work || !c.work) && (consumers || !c.wait));
    // A producer's work before a frame it no longer writes goes too.
    while (commands.length && commands[commands.length - 1].work) commands.pop();
    return { ...q, commands };
  });
  // Without the consumers the presenters wait for the last frame produced instead.
  const waitFor = (fence: string) => (consumers ? fence : fence.replace('Consumed', 'Ready'));
  const threads = s.threads!.map((t) => ({ ...t, steps: t.steps.map((step) => ({ wait: { ...step.wait!, fences: step.wait!.fences.map(waitFor), values: step.wait!.values.map(() => frames) } })) }));
  return { ...s, name: `monitored-vs-native-${frames}`, queues, threads, expect: { fences: Object.fromEntries(Object.keys(s.expect!.fences!).map((f) => [f, consumers || f.endsWith('Ready') ? frames : 0])), blockedQueues: Object.fromEntries(queues.map((q) => [q.name, false])) } };
}
