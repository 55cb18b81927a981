// Scenario files the explorer's tests share: built-in ones cut down to what a test can search twice.
import { readFileSync } from 'node:fs';
import { parseScenario } from '../src/scenario-files/load.js';
import type { Scenario } from '../src/scenario-files/types.js';

/** monitored-vs-native.yaml cut down to its first `frames` frames (each queue's commands and each wait up to that frame). */
export function monitoredVsNative(frames: number): Scenario {
  const text = readFileSync(new URL('../scenarios/monitored-vs-native.yaml', import.meta.url), 'utf8');
  const s = parseScenario(text, 'monitored-vs-native.yaml');
  const value = (v: unknown) => Number(v);
  const keep = (c: { wait?: { value: unknown }; signal?: { value: unknown }; fenceWrite?: { value: unknown } }) => value((c.wait ?? c.signal ?? c.fenceWrite ?? { value: 0 }).value) <= frames;
  const queues = s.queues!.map((q) => {
    const commands = q.commands!.filter(keep);
    // A producer's work before a frame it no longer writes goes too.
    while (commands.length && commands[commands.length - 1].work) commands.pop();
    return { ...q, commands };
  });
  const threads = s.threads!.map((t) => ({ ...t, steps: t.steps.map((step) => ({ wait: { ...step.wait!, values: step.wait!.values.map(() => frames) } })) }));
  return { ...s, name: `monitored-vs-native-${frames}`, queues, threads, expect: { fences: Object.fromEntries(Object.keys(s.expect!.fences!).map((f) => [f, frames])), blockedQueues: s.expect!.blockedQueues } };
}
