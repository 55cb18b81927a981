// CPU waits that block on the fence word itself (worker mode).
//
// In worker mode each adapter runs in its own thread over the one shared
// memory, and a CPU thread waits by sleeping on the 64-bit CurrentValue word
// (memory.atomic.wait64) instead of in the OS model's virtual-time waiter
// heap. A CPU signal only ever moves the word forward (compare-and-swap to
// the larger value, so two signallers racing never move it back) and then
// wakes every thread sleeping on it. Readers always see both halves of the
// word change at once (NF-01): every access is a 64-bit atomic.
//
// A browser main thread may not block: it polls fenceWordReached and uses
// Atomics.waitAsync on the same word from JavaScript.
//
// There is deliberately no "wait by fence id" export: a host looks the word
// up once (fenceCurrentValueAddress) and waits on it with fenceWordWait. A
// by-id variant, whose wait loop the optimizer inlined after the record
// lookup, lost wakeups under Node 20's baseline wasm compiler (Liftoff: the
// sleeper slept through every notify; with --no-liftoff it did not).

import { OK, E_BAD_FENCE } from './layout';
import { fenceAt, fenceValid } from './adapter';

/** Moves the word at `cvPhys` forward to `value` (never back) and wakes its sleepers. Returns the value before. */
export function fenceWordSignal(cvPhys: u32, value: u64): u64 {
  let current = atomic.load<u64>(<usize>cvPhys);
  while (current < value) {
    const seen = atomic.cmpxchg<u64>(<usize>cvPhys, current, value);
    if (seen == current) break;
    current = seen;
  }
  atomic.notify(<usize>cvPhys, -1);
  return current;
}

/**
 * Blocks until the word at `cvPhys` is >= `value`. Returns 0 when it already
 * was (no sleep), 1 when it was reached after sleeping, 2 when a sleep of
 * `timeoutNs` (-1 = no limit) ended with the value still short.
 */
export function fenceWordWait(cvPhys: u32, value: u64, timeoutNs: i64): i32 {
  let slept = false;
  while (true) {
    const current = atomic.load<u64>(<usize>cvPhys);
    if (current >= value) return slept ? 1 : 0;
    const result = atomic.wait<i64>(<usize>cvPhys, <i64>current, timeoutNs);
    slept = true;
    if (result == 2) return atomic.load<u64>(<usize>cvPhys) >= value ? 1 : 2;
  }
  return 0;
}

/** Is the word at `cvPhys` >= `value`? (never blocks) */
export function fenceWordReached(cvPhys: u32, value: u64): u32 { return atomic.load<u64>(<usize>cvPhys) >= value ? 1 : 0; }

/** fenceWordSignal by fence id of the attached adapter. */
export function fenceCpuSignal(fence: u32, value: u64): i32 {
  if (!fenceValid(fence)) return E_BAD_FENCE;
  fenceWordSignal(fenceAt(fence).cvPhys, value);
  return OK;
}
