// Which signal unblocked a wait: the one rule the timeline draws its arrows by
// (timeline/timeline.ts, which the page reads back: timeline/model.ts).
//
// A fence's value only moves forward (NF-19; a rewind is a signal that says so), so a wait for `fence >= value`
// was satisfied by the first signal of that fence that wrote a value >= the
// wait's, and that signal happened no later than the wait's end. That is the
// signal drawn as the arrow's start, even when it happened before the wait
// started (a wait that blocked anyway saw the value late: a cross-adapter copy
// not yet told, a lost or late interrupt), because no later signal unblocked it.
// Signals at the same time: the first in the order given (trace order, log order).

/** A cross-adapter fence opened on another adapter is labelled "name@adapter"; it is the same fence (one CurrentValue). */
export const canonicalFence = (label: string): string => label.replace(/@[^@]*$/, '');

/** A signal a wait may have been unblocked by: the value it wrote and when. */
export interface SignalAt { value: bigint; timeNs: number }

/**
 * The signal among `signals` (all of the waited fence) that unblocked a wait for
 * `>= value` which ended at `endNs`: the earliest with a value >= `value` at or
 * before `endNs`; undefined when none did (the wait ended another way).
 */
export function unblockedBy<S extends SignalAt>(signals: Iterable<S>, value: bigint, endNs: number): S | undefined {
  let first: S | undefined;
  for (const s of signals) {
    if (s.value < value || s.timeNs > endNs) continue;
    if (!first || s.timeNs < first.timeNs) first = s;
  }
  return first;
}
