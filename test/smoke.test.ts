import { it, expect } from 'vitest';
import { createMachine } from '../src/index.js';
it('smoke', async () => {
  const m = await createMachine({ seed: 7 });
  const app = m.createProcess('app');
  const hAdapter = app.openAdapter(0);
  const hDevice = app.createDevice({ hAdapter });
  const f = app.createNativeFence({ hDevice, initialValue: 0n, name: 'F' });
  const q1 = app.createHwQueue({ hDevice, engine: 0, name: 'producer' });
  const q2 = app.createHwQueue({ hDevice, engine: 1, name: 'consumer' });
  app.submit({ hHwQueue: q2.hHwQueue, commands: [{ wait: { hSyncObject: f.hSyncObject, value: 2n } }, { work: { durationNs: 500 } }] });
  app.submit({ hHwQueue: q1.hHwQueue, commands: [{ work: { durationNs: 1000 } }, { signal: { hSyncObject: f.hSyncObject, value: 1n } }, { work: { durationNs: 1000 } }, { signal: { hSyncObject: f.hSyncObject, value: 2n } }] });
  const t = app.createThread('waiter', function* (cpu) {
    const r = yield cpu.wait({ objects: [f.hSyncObject], values: [2n] });
    return r;
  });
  m.run();
  console.log(m.trace.text());
  console.log(m.summaryText());
  expect(t.state).toBe('done');
  expect(app.readFenceValue(f.hSyncObject)).toBe(2n);
});
