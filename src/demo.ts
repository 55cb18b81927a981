// The demo workload `npm start` runs: two hardware queues producing and
// consuming through native fences on one adapter, a CPU thread waiting for
// the consumer, one wait that is already satisfied when made, one that times out.

import { createMachine, type Machine, type MachineOptions } from './machine/machine.js';

/** `options.timing` overrides the default timing (e.g. `{ jitter: 0 }` for exact latencies). */
export async function runDemo(seed = 1, options: Pick<MachineOptions, 'timing'> = {}): Promise<Machine> {
  const machine = await createMachine({ seed, os: { nativeFence: true }, adapters: [{ name: 'gpu0', engines: 2 }], ...options });
  const app = machine.createProcess('app');
  const hAdapter = app.openAdapter('gpu0');
  const hDevice = app.createDevice({ hAdapter });
  const frames = app.createNativeFence({ hDevice, initialValue: 0n, name: 'frameReady' });
  const consumed = app.createNativeFence({ hDevice, initialValue: 0n, name: 'frameConsumed' });
  const producer = app.createHwQueue({ hDevice, engine: 0, name: 'producer' });
  const consumer = app.createHwQueue({ hDevice, engine: 1, name: 'consumer' });

  // Three frames: the producer renders and signals frameReady = n; the consumer
  // waits for it on the GPU (no CPU involved) and signals frameConsumed = n.
  for (let frame = 1n; frame <= 3n; frame++) {
    app.submit({ hHwQueue: producer.hHwQueue, commands: [
      ...(frame > 1n ? [{ wait: { hSyncObject: consumed.hSyncObject, value: frame - 1n } }] : []),
      { work: { durationNs: 4000 } },
      { signal: { hSyncObject: frames.hSyncObject, value: frame } },
    ] });
    app.submit({ hHwQueue: consumer.hHwQueue, commands: [
      { wait: { hSyncObject: frames.hSyncObject, value: frame } },
      { work: { durationNs: 2500 } },
      { signal: { hSyncObject: consumed.hSyncObject, value: frame } },
    ] });
  }

  // A CPU thread that waits for the last frame to be consumed: the only CPU
  // waiter, so only the signal of frameConsumed = 3 raises an interrupt.
  app.createThread('presenter', function* (cpu) {
    yield cpu.wait({ objects: [consumed.hSyncObject], values: [3n] });
    // Already satisfied: returns at once, adds no waiter.
    yield cpu.wait({ objects: [frames.hSyncObject], values: [1n] });
    // Never signalled to 10: times out after 5 us.
    return yield cpu.wait({ objects: [frames.hSyncObject, consumed.hSyncObject], values: [10n, 10n], waitAny: true, timeoutNs: 5000 });
  });
  machine.run();
  return machine;
}
