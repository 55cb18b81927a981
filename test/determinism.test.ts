import { describe, it, expect } from 'vitest';
import { runDemo } from '../src/demo.js';

describe('determinism and the demo', () => {
  it('NF-10 same seed and inputs give a byte-identical trace', async () => {
    const a = await runDemo(5);
    const b = await runDemo(5);
    expect(JSON.stringify(a.trace.json())).toBe(JSON.stringify(b.trace.json()));
    expect(a.trace.text()).toBe(b.trace.text());
    expect(a.summaryText()).toBe(b.summaryText());
  });

  it('NF-08 the demo produces, consumes, wakes its CPU waiter, satisfies one wait at once and times one out', async () => {
    const machine = await runDemo(1);
    const s = machine.summary();
    expect(s.os).toMatchObject({ waitersWoken: 1, waitsSatisfiedAtOnce: 1, waitsTimedOut: 1, spuriousInterrupts: 0 });
    expect(s.adapters[0].interruptsRaised).toBe(1); // only the signal with a CPU waiter interrupts
    expect(s.adapters[0].gpuSignals).toBe(12);
    expect(s.pendingWaiters).toBe(0);
    expect(machine.summaryText()).toMatch(/interrupts: raised=1 handled=1 spurious=0/);
  });
});
