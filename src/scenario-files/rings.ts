// How long a hardware queue's ring a scenario file needs: the limit the schema states (4,096
// commands per list) is the one that applies. Each list of GPU commands a hardware queue gets — its
// `commands` at set-up, or a thread's `submit` step — is one submission, written into the queue's
// ring whole (plus the progress fence's signal when the queue has one). The runner makes each
// adapter's rings that long when the file leaves `limits.ringEntries` unset (never shorter than
// createMachine's default); a file that sets it shorter is refused before anything runs, naming
// the key and the list (load.ts). Submissions that pile up faster than the GPU drains them (a
// thread's submit steps in a row) can still fill a ring: run.ts names the key in that error too.

import { DEFAULT_LIMITS } from '../machine/options.js';
import type { GpuCommand, Scenario } from './types.js';

/** The commands one list puts into a hardware queue's ring (useAllocation declares, it is no command). */
const ringCommands = (list: GpuCommand[], progressFence: boolean) => list.filter((c) => !c.useAllocation).length + (progressFence ? 1 : 0);

/** The longest submission into a ring of each adapter (by index), and where it is in the file. */
export function longestSubmissions(s: Scenario): ({ commands: number; path: string } | undefined)[] {
  const adapterIndex = new Map(s.machine.adapters.map((a, i) => [a.name, i]));
  const queues = new Map((s.queues ?? []).map((q) => [q.name, q]));
  const longest: ({ commands: number; path: string } | undefined)[] = s.machine.adapters.map(() => undefined);
  const note = (queue: string, list: GpuCommand[] | undefined, path: string) => {
    const q = queues.get(queue);
    const index = q && adapterIndex.get(q.adapter);
    if (!q || index === undefined || q.kind === 'kernelMode' || !list?.length) return;
    const commands = ringCommands(list, q.progressFence ?? false);
    if (commands > (longest[index]?.commands ?? 0)) longest[index] = { commands, path };
  };
  (s.queues ?? []).forEach((q, i) => note(q.name, q.commands, `queues[${i}].commands`));
  (s.threads ?? []).forEach((t, i) => t.steps.forEach((step, k) => { if (step.submit) note(step.submit.queue, step.submit.commands, `threads[${i}].steps[${k}].submit.commands`); }));
  return longest;
}

/** The ring length each adapter's queues get: the file's limits.ringEntries, or the default made long enough for the file's longest submission. */
export function ringEntriesFor(s: Scenario): (number | undefined)[] {
  const longest = longestSubmissions(s);
  return s.machine.adapters.map((a, i) => {
    if (a.limits?.ringEntries !== undefined) return a.limits.ringEntries;
    const needed = longest[i]?.commands ?? 0;
    return needed > DEFAULT_LIMITS.ringEntries ? needed : undefined;
  });
}
