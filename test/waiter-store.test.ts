// Every CPU waiter is kept in one store (src/os/waiter-slots.ts), whichever way its wait came in: the one-fence short
// path (src/os/waits.ts waitOne: a bigint value, no option, tracing off) or the general path (startWait: here the same
// wait with its value as a number, which the short path leaves to it). These tests start the two kinds side by side
// on the same fences with the same values and expect them listed, released and woken identically, pair by pair.
import { describe, it, expect } from 'vitest';
import type { WaitResult } from '../src/index.js';
import { world } from './helpers.js';

/** A waiter as tools list it, without its label and id (the two of a pair differ there only). */
const listed = (w: { label: string; mode: string; owner: object; timed: boolean; waits: readonly { fence: { label: string }; value: bigint }[] }) =>
  JSON.stringify({ mode: w.mode, owner: w.owner, timed: w.timed, waits: w.waits.map((x) => `${x.fence.label}>=${x.value}`) });

describe('the CPU waiters\' one store', () => {
  it('NF-08 a wait the short path starts and the same wait the general path starts are listed, released and woken identically', async () => {
    const { machine, app, hDevice } = await world({ seed: 11, trace: false });
    // a: made into objects first (a signal looks it up); b: a row until the general path's first wait makes its objects.
    const a = app.createNativeFence({ hDevice }).hSyncObject;
    const b = app.createNativeFence({ hDevice }).hSyncObject;
    const c = app.createNativeFence({ hDevice }).hSyncObject;
    app.signal({ objects: [a], values: [0n] });
    const results = new Map<string, WaitResult[]>();
    const got = (name: string) => (r: WaitResult) => { (results.get(name) ?? results.set(name, []).get(name)!).push(r); };
    const pairs: { fence: number; value: bigint; callback: boolean }[] = [];
    for (let k = 0; k < 24; k++) pairs.push({ fence: [a, b, c][k % 3], value: BigInt(1 + ((k * 5) % 9)), callback: k % 2 === 0 });
    for (const [k, p] of pairs.entries()) {
      // The short path's call, then the general path's (a number value): the same wait.
      for (const [kind, value] of [['s', p.value], ['g', Number(p.value)]] as const) {
        const args = { objects: [p.fence], values: [value] };
        if (p.callback) app.waitWithCallback(args, got(`${kind}${k}`), `${kind}${k}`);
        else void app.waitAsync(args, `${kind}${k}`).then(got(`${kind}${k}`));
      }
    }
    /** Each pair's two waiters: listed one after the other, alike but for their labels; or both gone. Returns the pairs listed. */
    const expectPairsListedAlike = () => {
      const list = machine.os.inspect.pendingWaiterList();
      const byLabel = new Map(list.map((w, i) => [w.label.replace(/^app:/, ''), { w, i }]));
      expect(byLabel.size).toBe(list.length);
      let compared = 0;
      for (let k = 0; k < pairs.length; k++) {
        const s = byLabel.get(`s${k}`), g = byLabel.get(`g${k}`);
        expect(s === undefined, `pair ${k} listed both or neither`).toBe(g === undefined);
        if (!s || !g) continue;
        expect(listed(g.w), `pair ${k}`).toBe(listed(s.w));
        expect(g.i, `pair ${k} in wait order`).toBe(s.i + 1);
        expect(g.w.id).toBe(s.w.id + 1);
        compared++;
      }
      expect(compared * 2).toBe(list.length);
      return compared;
    };
    /** Each pair's two results: the same, once each. */
    const expectPairsEndedAlike = async () => {
      await new Promise((r) => setImmediate(r));
      for (let k = 0; k < pairs.length; k++) {
        expect(results.get(`g${k}`), `pair ${k}`).toEqual(results.get(`s${k}`));
        expect((results.get(`s${k}`) ?? []).length).toBeLessThanOrEqual(1);
      }
    };
    expect(expectPairsListedAlike()).toBe(24);
    expect(machine.inspectFence(app, a).cpuWaiters).toBe(16);
    expect(machine.inspectFence(app, b).cpuWaiters).toBe(16);

    // Woken by a signal: the pairs at or below 4 on a.
    app.signal({ objects: [a], values: [4n] });
    await expectPairsEndedAlike();
    expect(results.size).toBe(2 * pairs.filter((p) => p.fence === a && p.value <= 4n).length);
    expect(expectPairsListedAlike()).toBe(24 - results.size / 2);

    // Released: b destroyed with its waiters pending.
    app.destroySynchronizationObject(b);
    await expectPairsEndedAlike();
    expect([...results.entries()].filter(([name]) => pairs[Number(name.slice(1))].fence === b).map(([, r]) => r[0].status))
      .toEqual(new Array(16).fill('OBJECT_DESTROYED'));
    expectPairsListedAlike();

    // Woken by the GPU's progress through a device removal (its reset signals every fence).
    machine.run();
    machine.removeDevice(0);
    await expectPairsEndedAlike();
    expect(results.size).toBe(48);
    expect(machine.os.inspect.pendingWaiterList()).toEqual([]);
    expect(machine.os.inspect.pendingWaiters).toBe(0);
  });

  it('NF-08 a timed wait of one fence and an untimed one of the same fence and value wake alike, and the timed one times out alone', async () => {
    const { machine, app, hDevice } = await world({ seed: 12, trace: false });
    const a = app.createNativeFence({ hDevice }).hSyncObject;
    const results = new Map<string, WaitResult>();
    const wait = (name: string, args: { objects: number[]; values: (bigint | number)[]; timeoutNs?: number }) => {
      void app.waitAsync(args, name).then((r) => { results.set(name, r); });
    };
    wait('short', { objects: [a], values: [2n] });
    wait('timed', { objects: [a], values: [2n], timeoutNs: 1_000_000 });
    wait('late', { objects: [a], values: [3n] });
    wait('timed-late', { objects: [a], values: [3n], timeoutNs: 50 });
    const list = machine.os.inspect.pendingWaiterList();
    expect(list.map((w) => [w.label, w.timed])).toEqual([['app:short', false], ['app:timed', true], ['app:late', false], ['app:timed-late', true]]);
    expect(listed({ ...list[1], timed: false })).toBe(listed(list[0]));
    app.signal({ objects: [a], values: [2n] });
    await new Promise((r) => setImmediate(r));
    expect(results.get('timed')).toEqual(results.get('short'));
    machine.run(); // the timeouts: 'timed' was woken (its timeout cancelled), 'timed-late' times out
    await new Promise((r) => setImmediate(r));
    expect(results.get('timed-late')).toMatchObject({ status: 'TIMEOUT', immediate: false });
    expect(results.has('late')).toBe(false);
    expect(machine.os.inspect.pendingWaiterList().map((w) => w.label)).toEqual(['app:late']);
    app.signal({ objects: [a], values: [3n] });
    await new Promise((r) => setImmediate(r));
    expect(results.get('late')).toMatchObject({ status: 'SUCCESS', immediate: false });
    expect(machine.os.inspect.pendingWaiters).toBe(0);
  });
});
