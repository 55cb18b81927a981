// The conformance suite's targeted cases (issues 12 and 28): small scenarios, and a few cases
// written as code, each aimed at rules the built-in scenarios reach little or not at all (the
// rules are in its `targets`; a rule not reached says which aimed case did not get there).
//
// Why this file is long: it is the cases themselves, each a scenario file's text with the comment
// saying what it is for; one file keeps them in the order the suite runs them.
//
// A case judges the end state the contract fixes (fence values, wait outcomes, what a reset left)
// through its scenario's `expect`, under the rules in its `endState`; counters a legal driver may
// change (interrupts, scans, log counters) are never judged (conformance.ts JUDGED_EXPECTATIONS).

import type { Machine } from '../machine/machine.js';

/** Which rule judges a case's end state: its fence values, and its waits (outcomes, threads, nothing stuck). */
export interface EndStateRules { readonly values: string; readonly waits: string }

/** A case written as a scenario file. */
export interface ScenarioCase { readonly name: string; readonly targets: readonly string[]; readonly endState: EndStateRules; readonly text: string }

/** What a case written as code may do: make machines (the driver under test on every adapter, a checker on each) and judge what it sees. */
export interface CaseSession {
  machine(options: Parameters<typeof import('../machine/machine.js').createMachine>[0]): Promise<Machine>;
  /** A machine nothing observes and nothing traces (the driver's production paths); only its end state is judged. */
  unwatchedMachine(options: Parameters<typeof import('../machine/machine.js').createMachine>[0]): Promise<Machine>;
  /** An end-state judgement under `rule` (an evaluation; a violation when `ok` is false and nothing else went wrong in the case). */
  judge(rule: string, ok: boolean, where: string, expected: string, actual: string): void;
}
/**
 * A case written as code. `unwatched`: its machines are unwatched (CaseSession.unwatchedMachine), so only its end state
 * is judged, and only when no other case broke a rule (else what it shows is that rule's consequence).
 */
export interface CodeCase { readonly name: string; readonly targets: readonly string[]; readonly unwatched?: boolean; run(session: CaseSession): Promise<void> }

const BUILT_IN_END_STATE: EndStateRules = { values: 'NF-05', waits: 'NF-10' };
export { BUILT_IN_END_STATE };

const values32 = (n: number, first = 1) => Array.from({ length: n }, (_, i) => i + first);
const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(2, '0')}`);
const F32 = names('f', 32);

export const SCENARIO_CASES: readonly ScenarioCase[] = [
  {
    // A CPU waiter on two fences, GPU signals from one queue with work between them: UpdateMonitoredValues
    // (NF-09, NF-11), interrupts with a list (INT-01, INT-06), a signal log read after each (LOG-04, LOG-07).
    name: 'cpu-waiter-gpu-signals', targets: ['NF-09', 'NF-11', 'INT-01', 'INT-06', 'LOG-04', 'LOG-07'], endState: { values: 'NF-05', waits: 'NF-10' },
    text: `name: cpu-waiter-gpu-signals
machine: { adapters: [ { name: gpu0, engines: 2 } ] }
processes: [ { name: app } ]
fences:
  - { name: a, process: app, adapter: gpu0, kind: native }
  - { name: b, process: app, adapter: gpu0, kind: native }
  - { name: c, process: app, adapter: gpu0, kind: native }
queues:
  - name: producer
    process: app
    adapter: gpu0
    engine: 0
    commands:
      - work: { durationNs: 3000 }
      - signal: { fence: a, value: 1 }
      - work: { durationNs: 3000 }
      - signal: { fence: a, value: 2 }
      - work: { durationNs: 3000 }
      - signal: { fence: b, value: 1 }
      - signal: { fence: a, value: 3 }
  - name: consumer
    process: app
    adapter: gpu0
    engine: 1
    commands:
      - wait: { fence: a, value: 2 }
      - signal: { fence: c, value: 1 }
threads:
  - name: waiter
    process: app
    steps:
      - wait: { id: first, fences: [a], values: [1], timeoutNs: 1000000 }
      - wait: { id: all, fences: [a, b, c], values: [3, 1, 1], timeoutNs: 1000000 }
expect:
  fences: { a: 3, b: 1, c: 1 }
  waits: { first: woken, all: woken }
`,
  },
  {
    // Optimized interrupts: two queues of one engine signal into one interrupt (it must name none), then one queue alone
    // (it may name that queue): INT-05; the OS reads both queues' logs (LOG-06).
    name: 'optimized-interrupt-queues', targets: ['INT-05', 'LOG-06'], endState: { values: 'NF-05', waits: 'NF-10' },
    text: `name: optimized-interrupt-queues
machine: { adapters: [ { name: gpu0, engines: 1, caps: { optimizedNativeFenceSignaledInterrupt: true } } ] }
processes: [ { name: app } ]
fences:
  - { name: a, process: app, adapter: gpu0, kind: native }
  - { name: b, process: app, adapter: gpu0, kind: native }
queues:
  - name: first
    process: app
    adapter: gpu0
    commands:
      - work: { durationNs: 2000 }
      - signal: { fence: a, value: 1 }
      - work: { durationNs: 20000 }
      - signal: { fence: a, value: 2 }
  - name: second
    process: app
    adapter: gpu0
    commands:
      - work: { durationNs: 2000 }
      - signal: { fence: b, value: 1 }
threads:
  - name: waiter
    process: app
    steps:
      - wait: { id: both, fences: [a, b], values: [1, 1], timeoutNs: 1000000 }
      - wait: { id: again, fences: [a], values: [2], timeoutNs: 1000000 }
expect:
  fences: { a: 2, b: 1 }
  waits: { both: woken, again: woken }
`,
  },
  {
    // A fence destroyed before another one's signal interrupts: no list may name it (INT-03).
    name: 'destroyed-fence', targets: ['INT-03'], endState: { values: 'NF-05', waits: 'NF-10' },
    text: `name: destroyed-fence
machine: { adapters: [ { name: gpu0, engines: 1 } ] }
processes: [ { name: app } ]
fences:
  - { name: gone, process: app, adapter: gpu0, kind: native }
  - { name: live, process: app, adapter: gpu0, kind: native }
queues:
  - name: q
    process: app
    adapter: gpu0
    commands:
      - work: { durationNs: 5000 }
      - signal: { fence: live, value: 1 }
threads:
  - name: t
    process: app
    steps:
      - destroyFence: { fence: gone }
      - wait: { id: w, fences: [live], values: [1], timeoutNs: 1000000 }
expect:
  waits: { w: woken }
`,
  },
  {
    // A cross-adapter fence: the other adapter's hardware queue waits; the signal reaches it as NotificationOnly (NF-18),
    // and a CPU signal writes it (NF-07).
    name: 'cross-adapter-notification', targets: ['NF-07', 'NF-18'], endState: { values: 'NF-07', waits: 'NF-18' },
    text: `name: cross-adapter-notification
machine: { adapters: [ { name: gpu0, engines: 1 }, { name: gpu1, engines: 1 } ] }
processes: [ { name: app } ]
fences:
  - { name: x, process: app, adapter: gpu0, kind: native, flags: { shared: true, crossAdapter: true }, crossAdapter: [gpu1] }
  - { name: c, process: app, adapter: gpu1, kind: native }
queues:
  - name: waiter
    process: app
    adapter: gpu1
    commands:
      - wait: { fence: x, value: 1 }
      - wait: { fence: c, value: 1 }
      - work: { durationNs: 100 }
  - name: signaller
    process: app
    adapter: gpu0
    commands:
      - work: { durationNs: 4000 }
      - signal: { fence: x, value: 1 }
threads:
  - name: cpu
    process: app
    steps:
      - sleep: { durationNs: 20000 }
      - signal: { fences: [c], values: [1] }
expect:
  fences: { x: 1, c: 1 }
  blockedQueues: { waiter: false }
`,
  },
  {
    // Values past 32 bits on a 64-bit adapter: the GPU's store keeps every bit (NF-01) and moves forward (NF-19).
    name: '64-bit-values', targets: ['NF-01', 'NF-19'], endState: { values: 'NF-01', waits: 'NF-10' },
    text: `name: values-64-bit
machine: { adapters: [ { name: gpu0, engines: 1 } ] }
processes: [ { name: app } ]
fences:
  - { name: big, process: app, adapter: gpu0, kind: native, initialValue: "4294967296" }
queues:
  - name: q
    process: app
    adapter: gpu0
    commands:
      - signal: { fence: big, value: "4294967297" }
      - signal: { fence: big, value: "4294967298" }
threads:
  - name: t
    process: app
    steps:
      - wait: { id: w, fences: [big], values: ["4294967298"], timeoutNs: 1000000 }
expect:
  fences: { big: "4294967298" }
`,
  },
  {
    // A No64BitAtomics GPU crossing 2^32: only the low half is written and the OS extends it (MF-07). Monitored
    // fences on kernel-mode contexts: a 32-bit-only GPU has no native fences (NF-01: a driver must not advertise them).
    name: '32-bit-atomics', targets: ['MF-07', 'NF-01', 'MF-04', 'MF-06'], endState: { values: 'MF-07', waits: 'MF-07' },
    text: `name: atomics-32-bit
machine: { adapters: [ { name: gpu0, engines: 1, caps: { no64BitAtomics: true } } ] }
processes: [ { name: app } ]
fences:
  - { name: f, process: app, adapter: gpu0, kind: monitored, initialValue: "4294967280" }
queues:
  - name: q
    process: app
    adapter: gpu0
    kind: kernelMode
    engine: 0
    commands:
      - fenceWrite: { fence: f, value: "4294967290" }
      - fenceWrite: { fence: f, value: "4294967301" }
threads:
  - name: t
    process: app
    steps:
      - wait: { id: w, fences: [f], values: ["4294967301"], timeoutNs: 1000000 }
expect:
  fences: { f: "4294967301" }
  waits: { w: woken }
`,
  },
  {
    // MF-07's window at its edges: a No64BitAtomics GPU writes a monitored fence exactly UINT32_MAX/2 (0x7FFFFFFF)
    // past the last signalled value, across 2^32 and up to just below 2^33, and a CPU signal crosses 2^33; a waiter
    // waits at each edge value (each wait within the window when it is made).
    name: 'monitored-window-edges', targets: ['MF-07', 'MF-04', 'MF-06'], endState: { values: 'MF-07', waits: 'MF-07' },
    text: `name: monitored-window-edges
machine: { adapters: [ { name: gpu0, engines: 1, caps: { no64BitAtomics: true } } ] }
processes: [ { name: app } ]
fences:
  - { name: m, process: app, adapter: gpu0, kind: monitored, initialValue: "0xFFFFFFF0" }
queues:
  - { name: ctx, process: app, adapter: gpu0, kind: kernelMode, engine: 0 }
threads:
  - name: t
    process: app
    steps:
      - submit: { queue: ctx, commands: [ { work: { durationNs: 5000 } }, { fenceWrite: { fence: m, value: "0x100000000" } } ] }
      - wait: { id: at2to32, fences: [m], values: ["0x100000000"], timeoutNs: 1000000 }
      - submit: { queue: ctx, commands: [ { work: { durationNs: 5000 } }, { fenceWrite: { fence: m, value: "0x17FFFFFFF" } } ] }
      - wait: { id: edge1, fences: [m], values: ["0x17FFFFFFF"], timeoutNs: 1000000 }
      - submit: { queue: ctx, commands: [ { work: { durationNs: 5000 } }, { fenceWrite: { fence: m, value: "0x1FFFFFFFE" } } ] }
      - wait: { id: edge2, fences: [m], values: ["0x1FFFFFFFE"], timeoutNs: 1000000 }
      - signal: { fences: [m], values: ["0x200000001"] }
      - wait: { id: past2to33, fences: [m], values: ["0x200000001"], timeoutNs: 1000000 }
expect:
  fences: { m: "0x200000001" }
  waits: { at2to32: woken, edge1: woken, edge2: woken, past2to33: satisfiedAtOnce }
`,
  },
  {
    // CPU signals of several fences in one call: 2 fences of one adapter, then 32 fences over two adapters (the OS
    // makes one DxgkDdiUpdateCurrentValuesFromCpu per adapter); waits over 2 and 32 fences (wait-all and wait-any,
    // across adapters), and a hardware queue waiting on one of the 32 (the driver's rescan releases it).
    name: 'cpu-signals-multi-fence', targets: ['NF-07', 'NF-09', 'NF-11'], endState: { values: 'NF-07', waits: 'NF-07' },
    text: `name: cpu-signals-multi-fence
machine: { adapters: [ { name: gpu0, engines: 1 }, { name: gpu1, engines: 1 } ] }
processes: [ { name: app } ]
fences:
  - { name: p, process: app, adapter: gpu0, kind: native }
  - { name: q, process: app, adapter: gpu0, kind: native }
  - { name: done, process: app, adapter: gpu1, kind: native }
${F32.map((f, i) => `  - { name: ${f}, process: app, adapter: ${i % 2 ? 'gpu1' : 'gpu0'}, kind: native }`).join('\n')}
queues:
  - name: gated
    process: app
    adapter: gpu1
    commands:
      - wait: { fence: f31, value: 32 }
      - signal: { fence: done, value: 1 }
threads:
  - name: pair
    process: app
    steps:
      - wait: { id: bothOfTwo, fences: [p, q], values: [1, 1], timeoutNs: 1000000 }
  - name: all32
    process: app
    steps:
      - wait: { id: allOf32, fences: [${F32.join(', ')}], values: [${values32(32).join(', ')}], timeoutNs: 1000000 }
  - name: any32
    process: app
    steps:
      - wait: { id: anyOf32, fences: [${F32.join(', ')}], values: [${values32(32, 100).join(', ')}], any: true, timeoutNs: 1000000 }
  - name: gpuDone
    process: app
    steps:
      - wait: { id: gpuDone, fences: [done], values: [1], timeoutNs: 1000000 }
  - name: signaller
    process: app
    steps:
      - sleep: { durationNs: 10000 }
      - signal: { fences: [p, q], values: [1, 1] }
      - sleep: { durationNs: 10000 }
      - signal: { fences: [${F32.join(', ')}], values: [${values32(32).join(', ')}] }
      - sleep: { durationNs: 10000 }
      - signal: { fences: [f00, f31], values: [100, 200] }
expect:
  fences: { p: 1, q: 1, done: 1, f00: 100, f01: 2, f30: 31, f31: 200 }
  waits: { bothOfTwo: woken, allOf32: woken, anyOf32: woken, gpuDone: woken }
  blockedQueues: { gated: false }
`,
  },
  {
    // AllowFenceRewind from the CPU (NF-19): the OS passes the lower value and the driver writes it (NF-07); a wait
    // satisfied before the rewind stays satisfied; a hardware queue blocked after it runs when the value comes back.
    name: 'cpu-rewind', targets: ['NF-19', 'NF-07'], endState: { values: 'NF-07', waits: 'NF-07' },
    text: `name: cpu-rewind
machine: { adapters: [ { name: gpu0, engines: 1 } ] }
processes: [ { name: app } ]
fences:
  - { name: r, process: app, adapter: gpu0, kind: native }
  - { name: done, process: app, adapter: gpu0, kind: native }
threads:
  - name: early
    process: app
    steps:
      - wait: { id: atFive, fences: [r], values: [5], timeoutNs: 1000000 }
  - name: cpu
    process: app
    steps:
      - sleep: { durationNs: 5000 }
      - signal: { fences: [r], values: [5] }
      - sleep: { durationNs: 5000 }
      - signal: { fences: [r], values: [3], allowFenceRewind: true }
      - wait: { id: afterRewind, fences: [r], values: [3], timeoutNs: 1000000 }
      - submit: { queue: gated, commands: [ { wait: { fence: r, value: 4 } }, { signal: { fence: done, value: 1 } } ] }
      - sleep: { durationNs: 5000 }
      - signal: { fences: [r], values: [4] }
      - wait: { id: gpuDone, fences: [done], values: [1], timeoutNs: 1000000 }
queues:
  - { name: gated, process: app, adapter: gpu0, engine: 0 }
expect:
  fences: { r: 4, done: 1 }
  waits: { atFive: woken, afterRewind: satisfiedAtOnce, gpuDone: woken }
  blockedQueues: { gated: false }
`,
  },
  {
    // The OS's native fence feature off (CAP-02's answer Enabled: false): the driver advertises no NativeGpuFence,
    // no native fence DDI is called (CAP-04), and monitored fences on kernel-mode contexts work (MF-04, MF-06).
    name: 'os-feature-off', targets: ['CAP-02', 'CAP-04', 'MF-04', 'MF-06'], endState: { values: 'CAP-02', waits: 'CAP-02' },
    text: `name: os-feature-off
machine: { os: { nativeFence: false }, adapters: [ { name: gpu0, engines: 1 } ] }
processes: [ { name: app } ]
fences:
  - { name: m, process: app, adapter: gpu0, kind: monitored }
queues:
  - name: ctx
    process: app
    adapter: gpu0
    kind: kernelMode
    engine: 0
    commands:
      - work: { durationNs: 5000 }
      - fenceWrite: { fence: m, value: 1 }
      - work: { durationNs: 5000 }
      - fenceWrite: { fence: m, value: 2 }
threads:
  - name: t
    process: app
    steps:
      - wait: { id: one, fences: [m], values: [1], timeoutNs: 1000000 }
      - wait: { id: two, fences: [m], values: [2], timeoutNs: 1000000 }
      - signal: { fences: [m], values: [3] }
expect:
  fences: { m: 3 }
  waits: { one: woken, two: woken }
`,
  },
  {
    // A TDR with work queued and in flight on three queues of two engines, and NoSignalMaxValueOnTdr on two fences
    // (one the GPU signalled before the reset, one it never reaches): every other fence goes to UINT64_MAX and its
    // waiters wake; the kept fences keep their values; none of the dropped work runs after the reset (NF-20).
    name: 'tdr-queued-and-in-flight', targets: ['NF-20', 'NF-07'], endState: { values: 'NF-20', waits: 'NF-20' },
    text: `name: tdr-queued-and-in-flight
machine: { adapters: [ { name: gpu0, engines: 2 } ] }
processes: [ { name: app } ]
fences:
  - { name: a, process: app, adapter: gpu0, kind: native }
  - { name: b, process: app, adapter: gpu0, kind: native }
  - { name: c, process: app, adapter: gpu0, kind: native }
  - { name: keptEarly, process: app, adapter: gpu0, kind: native, flags: { noSignalMaxValueOnTdr: true } }
  - { name: keptLate, process: app, adapter: gpu0, kind: native, flags: { noSignalMaxValueOnTdr: true } }
queues:
  - name: inFlight
    process: app
    adapter: gpu0
    engine: 0
    commands:
      - work: { durationNs: 5000 }
      - signal: { fence: a, value: 1 }
      - signal: { fence: keptEarly, value: 7 }
      - work: { durationNs: 100000 }
      - signal: { fence: a, value: 2 }
      - signal: { fence: keptLate, value: 1 }
  - name: queued
    process: app
    adapter: gpu0
    engine: 1
    commands:
      - wait: { fence: b, value: 1 }
      - signal: { fence: c, value: 1 }
      - signal: { fence: keptLate, value: 2 }
  - name: behind
    process: app
    adapter: gpu0
    engine: 1
    commands:
      - work: { durationNs: 50000 }
      - signal: { fence: keptLate, value: 3 }
threads:
  - { name: waitA, process: app, steps: [ { wait: { id: a2, fences: [a], values: [2], timeoutNs: 1000000 } } ] }
  - { name: waitC, process: app, steps: [ { wait: { id: c1, fences: [c], values: [1], timeoutNs: 1000000 } } ] }
  - { name: waitEarly, process: app, steps: [ { wait: { id: early7, fences: [keptEarly], values: [7], timeoutNs: 1000000 } } ] }
  - { name: waitLate, process: app, steps: [ { wait: { id: late1, fences: [keptLate], values: [1], timeoutNs: 200000 } } ] }
faults:
  - atNs: 30000
    removeDevice: { adapter: gpu0, reason: TDR }
expect:
  fences: { a: "18446744073709551615", b: "18446744073709551615", c: "18446744073709551615", keptEarly: 7, keptLate: 0 }
  waits: { a2: woken, c1: woken, early7: woken, late1: timedOut }
`,
  },
  {
    // Device removal while a queue is blocked on a GPU wait and another is part-way through its work, on two
    // adapters: only the removed adapter's fences go to UINT64_MAX (a kept one stays); the other adapter runs on.
    name: 'device-removal-two-adapters', targets: ['NF-20', 'NF-07'], endState: { values: 'NF-20', waits: 'NF-20' },
    text: `name: device-removal-two-adapters
machine: { adapters: [ { name: gpu0, engines: 1 }, { name: gpu1, engines: 1 } ] }
processes: [ { name: app } ]
fences:
  - { name: x, process: app, adapter: gpu0, kind: native }
  - { name: kept, process: app, adapter: gpu0, kind: native, initialValue: 4, flags: { noSignalMaxValueOnTdr: true } }
  - { name: y, process: app, adapter: gpu1, kind: native }
queues:
  - name: blocked
    process: app
    adapter: gpu0
    commands:
      - wait: { fence: x, value: 1 }
      - signal: { fence: kept, value: 5 }
  - name: busy
    process: app
    adapter: gpu0
    commands:
      - work: { durationNs: 80000 }
      - signal: { fence: kept, value: 6 }
  - name: other
    process: app
    adapter: gpu1
    commands:
      - work: { durationNs: 40000 }
      - signal: { fence: y, value: 1 }
threads:
  - { name: waitX, process: app, steps: [ { wait: { id: x1, fences: [x], values: [1], timeoutNs: 1000000 } } ] }
  - { name: waitKept, process: app, steps: [ { wait: { id: kept5, fences: [kept], values: [5], timeoutNs: 150000 } } ] }
  - { name: waitY, process: app, steps: [ { wait: { id: y1, fences: [y], values: [1], timeoutNs: 1000000 } } ] }
faults:
  - atNs: 20000
    removeDevice: { adapter: gpu0, reason: device removed }
expect:
  fences: { x: "18446744073709551615", kept: 4, y: 1 }
  waits: { x1: woken, kept5: timedOut, y1: woken }
`,
  },
  {
    // Log buffers recreated part-way (LOG-03) and written past their 84 entries (LOG-05's wrap, twice): 100 signals,
    // the OS recreates the signal and wait logs, 100 more signals; a second queue's GPU waits fill its wait log,
    // one of them already satisfied when it is submitted (it still runs and logs: NF-06).
    name: 'log-recreate-and-overrun', targets: ['LOG-03', 'LOG-05', 'LOG-04', 'LOG-06', 'NF-06'], endState: { values: 'NF-05', waits: 'NF-10' },
    text: `name: log-recreate-and-overrun
machine: { adapters: [ { name: gpu0, engines: 2 } ] }
processes: [ { name: app } ]
fences:
  - { name: F, process: app, adapter: gpu0, kind: native }
  - { name: G, process: app, adapter: gpu0, kind: native }
queues:
  - { name: A, process: app, adapter: gpu0, engine: 0 }
  - { name: B, process: app, adapter: gpu0, engine: 1 }
threads:
  - name: waitFirst
    process: app
    steps:
      - wait: { id: f100, fences: [F], values: [100], timeoutNs: 1000000 }
  - name: driver
    process: app
    steps:
      - submit: { queue: A, commands: [ ${values32(100).map((v) => `{ signal: { fence: F, value: ${v} } }`).join(', ')} ] }
      - submit: { queue: B, commands: [ ${values32(90).map((v) => `{ wait: { fence: F, value: ${v} } }`).join(', ')}, { signal: { fence: G, value: 1 } } ] }
      - wait: { id: g1, fences: [G], values: [1], timeoutNs: 1000000 }
      - recreateLogBuffer: { queue: A, log: signals }
      - recreateLogBuffer: { queue: B, log: waits }
      - submit: { queue: A, commands: [ ${values32(100, 101).map((v) => `{ signal: { fence: F, value: ${v} } }`).join(', ')} ] }
      - submit: { queue: B, commands: [ { wait: { fence: F, value: 100 } }, { wait: { fence: F, value: 200 } }, { signal: { fence: G, value: 2 } } ] }
      - wait: { id: g2, fences: [G], values: [2], timeoutNs: 1000000 }
expect:
  fences: { F: 200, G: 2 }
  waits: { f100: woken, g1: woken, g2: woken }
`,
  },
  {
    // UpdateMonitoredValues in batches: one wait-all over four fences (one DDI naming four), a wait-any over three,
    // GPU signals from two engines whose interrupts move several MonitoredValues at once (NF-09, NF-11).
    name: 'monitored-value-batches', targets: ['NF-09', 'NF-11', 'INT-01'], endState: { values: 'NF-05', waits: 'NF-10' },
    text: `name: monitored-value-batches
machine: { adapters: [ { name: gpu0, engines: 2 } ] }
processes: [ { name: app } ]
fences:
  - { name: w, process: app, adapter: gpu0, kind: native }
  - { name: x, process: app, adapter: gpu0, kind: native }
  - { name: y, process: app, adapter: gpu0, kind: native }
  - { name: z, process: app, adapter: gpu0, kind: native }
queues:
  - name: left
    process: app
    adapter: gpu0
    engine: 0
    commands:
      - work: { durationNs: 4000 }
      - signal: { fence: w, value: 1 }
      - signal: { fence: x, value: 1 }
      - work: { durationNs: 4000 }
      - signal: { fence: w, value: 2 }
  - name: right
    process: app
    adapter: gpu0
    engine: 1
    commands:
      - work: { durationNs: 6000 }
      - signal: { fence: y, value: 1 }
      - signal: { fence: z, value: 1 }
      - work: { durationNs: 6000 }
      - signal: { fence: z, value: 2 }
threads:
  - name: all
    process: app
    steps:
      - wait: { id: allFour, fences: [w, x, y, z], values: [2, 1, 1, 2], timeoutNs: 1000000 }
  - name: any
    process: app
    steps:
      - wait: { id: anyThree, fences: [x, y, z], values: [5, 5, 2], any: true, timeoutNs: 1000000 }
  - name: each
    process: app
    steps:
      - wait: { id: eachW, fences: [w], values: [1], timeoutNs: 1000000 }
      - wait: { id: eachZ, fences: [z], values: [1], timeoutNs: 1000000 }
expect:
  fences: { w: 2, x: 1, y: 1, z: 2 }
  waits: { allFour: woken, anyThree: woken, eachW: woken }
`,
  },
  {
    // The cross-adapter doorbell (XA-07, opt-in) with a ring of two: signals overflow it and fall back to the interrupt
    // path, which the driver reports (NotifyDoorbellFallback); the other adapter's GPU waits are all released (NF-18).
    name: 'doorbell-ring-full', targets: ['NF-18'], endState: { values: 'NF-05', waits: 'NF-18' },
    text: `name: doorbell-ring-full
machine: { doorbell: { enabled: true, ringEntries: 2, latencyNs: 50000 }, adapters: [ { name: iGPU, integrated: true, engines: 1 }, { name: dGPU, engines: 1 } ] }
processes: [ { name: app } ]
fences:
  - { name: F, process: app, adapter: dGPU, kind: native, flags: { shared: true, crossAdapter: true }, crossAdapter: [iGPU] }
  - { name: done, process: app, adapter: iGPU, kind: native }
queues:
  - name: waits
    process: app
    adapter: iGPU
    commands:
${[1, 2, 3, 4, 5, 6].map((v) => `      - wait: { fence: F, value: ${v} }`).join('\n')}
      - signal: { fence: done, value: 1 }
  - name: signals
    process: app
    adapter: dGPU
    commands:
      - work: { durationNs: 2000 }
${[1, 2, 3, 4, 5, 6].map((v) => `      - signal: { fence: F, value: ${v} }`).join('\n')}
threads:
  - { name: t, process: app, steps: [ { wait: { id: allDone, fences: [done], values: [1], timeoutNs: 1000000 } } ] }
expect:
  fences: { F: 6, done: 1 }
  waits: { allDone: woken }
  blockedQueues: { waits: false }
`,
  },
  {
    // A fence destroyed while its signal's interrupt is on its way (raised at 1.1 us, delivered at 3.1 us, destroyed
    // at 2 us): the list must not name it (INT-03), whatever the GPU's pending list still holds.
    name: 'destroyed-before-interrupt', targets: ['INT-03'], endState: { values: 'NF-05', waits: 'NF-10' },
    text: `name: destroyed-before-interrupt
machine: { timing: { jitter: 0 }, adapters: [ { name: gpu0, engines: 1 } ] }
processes: [ { name: app } ]
fences:
  - { name: x, process: app, adapter: gpu0, kind: native }
  - { name: y, process: app, adapter: gpu0, kind: native }
queues:
  - name: q
    process: app
    adapter: gpu0
    commands:
      - work: { durationNs: 1000 }
      - signal: { fence: x, value: 1 }
      - signal: { fence: y, value: 1 }
threads:
  - { name: waitX, process: app, steps: [ { wait: { id: x1, fences: [x], values: [1], timeoutNs: 1000000 } } ] }
  - { name: waitY, process: app, steps: [ { wait: { id: y1, fences: [y], values: [1], timeoutNs: 1000000 } } ] }
  - { name: destroyer, process: app, steps: [ { sleep: { durationNs: 2000 } }, { destroyFence: { fence: x } } ] }
expect:
  waits: { y1: woken }
`,
  },
  {
    // A kernel-mode context whose ring (8 entries) cannot take the next command buffer while one is on the engine:
    // DxgkDdiSubmitCommand says no (false), and the OS submits it again after the completion (MF-06).
    name: 'context-ring-full', targets: ['MF-04', 'MF-06'], endState: { values: 'MF-07', waits: 'MF-07' },
    text: `name: context-ring-full
machine: { adapters: [ { name: gpu0, engines: 1, limits: { ringEntries: 8 } } ] }
processes: [ { name: app } ]
fences:
  - { name: m, process: app, adapter: gpu0, kind: monitored }
queues:
  - { name: ctx, process: app, adapter: gpu0, kind: kernelMode, engine: 0 }
threads:
  - name: t
    process: app
    steps:
      - submit: { queue: ctx, commands: [ { work: { durationNs: 20000 } }, { work: { durationNs: 100 } }, { work: { durationNs: 100 } }, { fenceWrite: { fence: m, value: 1 } } ] }
      - submit: { queue: ctx, commands: [ { work: { durationNs: 100 } }, { work: { durationNs: 100 } }, { work: { durationNs: 100 } }, { fenceWrite: { fence: m, value: 2 } } ] }
      - wait: { id: two, fences: [m], values: [2], timeoutNs: 1000000 }
expect:
  fences: { m: 2 }
  waits: { two: woken }
`,
  },
  {
    // A shared fence opened by two other processes (a local handle each: DxgkDdiOpenNativeFence), each of which
    // waits, then destroys its handle; the creator's last: Close for each local handle, then Destroy once (NF-15).
    // A driver that loses track of its local handles throws (a DRIVER_FAULT, which fails the case).
    name: 'shared-fence-closes', targets: ['NF-07'], endState: { values: 'NF-05', waits: 'NF-10' },
    text: `name: shared-fence-closes
machine: { adapters: [ { name: gpu0, engines: 1 } ] }
processes: [ { name: app }, { name: second }, { name: third } ]
fences:
  - { name: S, process: app, adapter: gpu0, kind: native, flags: { shared: true }, sharedWith: [second, third] }
queues:
  - name: q
    process: app
    adapter: gpu0
    commands:
      - work: { durationNs: 3000 }
      - signal: { fence: S, value: 1 }
      - work: { durationNs: 3000 }
      - signal: { fence: S, value: 2 }
threads:
  - { name: b, process: second, steps: [ { wait: { id: b1, fences: [S], values: [1], timeoutNs: 1000000 } }, { destroyFence: { fence: S } } ] }
  - { name: c, process: third, steps: [ { wait: { id: c2, fences: [S], values: [2], timeoutNs: 1000000 } }, { destroyFence: { fence: S } } ] }
  - name: a
    process: app
    steps:
      - wait: { id: a2, fences: [S], values: [2], timeoutNs: 1000000 }
      - sleep: { durationNs: 5000 }
      - signal: { fences: [S], values: [3] }
      - destroyFence: { fence: S }
expect:
  waits: { b1: woken, c2: woken, a2: woken }
  threads: { a: done, b: done, c: done }
`,
  },
];

/** Cases written as code: what a scenario file cannot say. */
export const CODE_CASES: readonly CodeCase[] = [
  {
    // CAP-03: user mode queries the native fence caps of an adapter whose values are padded and which does not map
    // them into the system process; what it gets is what DxgkDdiStartDevice returned. Fences on it still work.
    name: 'adapter-caps-query', targets: ['CAP-03'],
    async run(session) {
      const machine = await session.machine({ adapters: [{ name: 'gpu0', engines: 1, caps: { nativeFenceCaps: { monitoredValuePadding: 56, mapToGpuSystemProcess: false } } }] });
      const app = machine.createProcess('app');
      const hAdapter = app.openAdapter(0);
      const supported = app.queryAdapterInfo(hAdapter, 'KMTQAITYPE_WDDM_3_1_CAPS').NativeGpuFenceSupported === true;
      if (supported) app.queryAdapterInfo(hAdapter, 'NATIVE_FENCE_CAPS');
      const hDevice = app.createDevice({ hAdapter });
      if (!supported) return;
      const fences = [0, 1, 2].map(() => app.createNativeFence({ hDevice }).hSyncObject);
      const queue = app.createHwQueue({ hDevice });
      app.submit({ hHwQueue: queue.hHwQueue, commands: fences.map((f, i) => ({ signal: { hSyncObject: f, value: BigInt(i + 1) } })) });
      let status = 'pending';
      void app.waitAsync({ objects: fences, values: [1n, 2n, 3n] }).then((r) => { status = r.status; });
      machine.run();
      await Promise.resolve();
      session.judge('CAP-03', status === 'SUCCESS', 'the end of the case', 'the wait on three fences of the padded adapter woken', `the wait is ${status}`);
    },
  },
  {
    // A machine cut into steps (schedule granularity 'step': the GPU's signal steps, the OS's operations and the
    // driver's DdiInProgress of UpdateMonitoredValues each an event of their own): the same rules hold.
    name: 'machine-in-steps', targets: ['NF-09', 'NF-11', 'LOG-04', 'INT-06'],
    async run(session) {
      const machine = await session.machine({ schedule: { granularity: 'step' }, adapters: [{ name: 'gpu0', engines: 2 }] });
      const app = machine.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const fences = [0, 1, 2].map(() => app.createNativeFence({ hDevice }).hSyncObject);
      const queues = [0, 1].map((engine) => app.createHwQueue({ hDevice, engine }).hHwQueue);
      const statuses = fences.map(() => 'pending');
      fences.forEach((f, i) => { void app.waitAsync({ objects: [f], values: [BigInt(i + 1)] }).then((r) => { statuses[i] = r.status; }); });
      for (let round = 1; round <= 3; round++) {
        app.submit({ hHwQueue: queues[0], commands: fences.map((f) => ({ signal: { hSyncObject: f, value: BigInt(round) } })) });
        app.submit({ hHwQueue: queues[1], commands: [{ wait: { hSyncObject: fences[0], value: BigInt(round) } }, { work: { durationNs: 300 } }] });
      }
      machine.run();
      await Promise.resolve();
      session.judge('NF-10', statuses.every((x) => x === 'SUCCESS'), 'the end of the case', 'every waiter woken', statuses.join(', '));
    },
  },
  {
    // A GPU page fault: a ring command naming a GPU VA nothing maps (written by the user-mode half's required form,
    // submitToHwQueue). The driver reports it (DXGK_INTERRUPT_DMA_PAGE_FAULTED), the OS resets the adapter (NF-20):
    // every fence to UINT64_MAX, nobody hangs.
    name: 'gpu-page-fault', targets: ['NF-20'],
    async run(session) {
      const machine = await session.machine({ adapters: [{ name: 'gpu0', engines: 1 }] });
      const app = machine.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const f = app.createNativeFence({ hDevice, flags: { shared: true } }); // pages of its own
      const other = app.createNativeFence({ hDevice });
      const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
      let status = 'pending';
      void app.waitAsync({ objects: [other.hSyncObject], values: [1n] }).then((r) => { status = r.status; });
      const queue = machine.os.inspect.hwQueueOf(app.kernel, q.hHwQueue);
      machine.adapters[0].driver.userMode.submitToHwQueue({ HwQueuePrivateDriverData: queue.privateDriverData, Commands: [
        { op: 'work', gpuVa: 0n, value: 1000n, handle: 0 },
        { op: 'wait', gpuVa: f.mapping.CurrentValueGpuVa + 0x10_0000n, value: 1n, handle: f.hSyncObject },
      ] });
      machine.run();
      await Promise.resolve();
      const removed = machine.trace.find({ kind: 'fault', name: 'device removed (TDR)' }).length === 1;
      session.judge('NF-20', removed && status === 'SUCCESS', 'the end of the case', 'the page fault reported, the adapter reset, the waiter woken (UINT64_MAX)',
        `${removed ? 'reset' : 'no reset'}, the wait is ${status}`);
    },
  },
  {
    // After a TDR that drops a kernel-mode context's command buffer in flight, new work runs: a new device, queue,
    // fence and context (DxgkDdiRestartFromTimeout restarts the engines); the dropped buffer never completes (NF-20, MF-06).
    name: 'work-after-tdr', targets: ['NF-20', 'MF-06'],
    async run(session) {
      const machine = await session.machine({ adapters: [{ name: 'gpu0', engines: 1 }] });
      const app = machine.createProcess('app');
      const hAdapter = app.openAdapter(0);
      const before = app.createDevice({ hAdapter });
      const m = app.createSynchronizationObject({ hDevice: before, type: 'MONITORED_FENCE' }).hSyncObject;
      const context = app.createContext({ hDevice: before, engine: 0 });
      app.submitCommand({ hContext: context, commands: [{ work: { durationNs: 50_000 } }, { fenceWrite: { hSyncObject: m, value: 1n } }] });
      machine.run(10_000);
      machine.removeDevice(0, 'TDR');
      const device = app.createDevice({ hAdapter });
      const f = app.createNativeFence({ hDevice: device }).hSyncObject;
      const q = app.createHwQueue({ hDevice: device });
      const m2 = app.createSynchronizationObject({ hDevice: device, type: 'MONITORED_FENCE' }).hSyncObject;
      const context2 = app.createContext({ hDevice: device, engine: 0 });
      const results: string[] = [];
      void app.waitAsync({ objects: [f], values: [1n] }).then((r) => results.push(`native ${r.status}`));
      void app.waitAsync({ objects: [m2], values: [1n] }).then((r) => results.push(`monitored ${r.status}`));
      app.submit({ hHwQueue: q.hHwQueue, commands: [{ work: { durationNs: 1000 } }, { signal: { hSyncObject: f, value: 1n } }] });
      app.submitCommand({ hContext: context2, commands: [{ work: { durationNs: 1000 } }, { fenceWrite: { hSyncObject: m2, value: 1n } }] });
      machine.run();
      await Promise.resolve();
      results.sort();
      session.judge('NF-20', results.join(', ') === 'monitored SUCCESS, native SUCCESS', 'the end of the case', 'new work after the reset runs and wakes its waiters',
        results.join(', ') || 'no waiter woken');
    },
  },
  {
    // Kernel-mode contexts destroyed while their command buffers are on the engine (one mid-work, one whose
    // completion interrupt is on its way): their work is dropped, and no completion of theirs is reported (MF-06: no
    // report for a buffer its context no longer has).
    name: 'context-destroyed-in-flight', targets: ['MF-06'],
    async run(session) {
      const machine = await session.machine({ timing: { jitter: 0 }, adapters: [{ name: 'gpu0', engines: 2 }] });
      const app = machine.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const m = app.createSynchronizationObject({ hDevice, type: 'MONITORED_FENCE' }).hSyncObject;
      const doomed = app.createContext({ hDevice, engine: 0 });
      const kept = app.createContext({ hDevice, engine: 0 });
      const racing = app.createContext({ hDevice, engine: 1 });
      app.submitCommand({ hContext: doomed, commands: [{ work: { durationNs: 30_000 } }, { fenceWrite: { hSyncObject: m, value: 5n } }] });
      app.submitCommand({ hContext: kept, commands: [{ work: { durationNs: 1000 } }, { fenceWrite: { hSyncObject: m, value: 1n } }] });
      // Its buffer ends at about 1.2 us; its DMA completed interrupt comes 2 us later: destroyed in between.
      app.submitCommand({ hContext: racing, commands: [{ work: { durationNs: 1000 } }] });
      machine.run(2_000);
      app.destroyContext(racing);
      machine.run(5_000);
      app.destroyContext(doomed);
      let status = 'pending';
      void app.waitAsync({ objects: [m], values: [1n] }).then((r) => { status = r.status; });
      machine.run();
      await Promise.resolve();
      session.judge('MF-06', status === 'SUCCESS' && app.readFenceValue(m) === 1n, 'the end of the case', 'the kept context\'s write (1) woke its waiter; the dropped buffer never wrote 5',
        `the wait is ${status}, the fence is ${app.readFenceValue(m)}`);
    },
  },
  {
    // A hardware queue destroyed with commands still in its ring (DxgkDdiDestroyHwQueue): nothing of it runs after
    // that (NF-05), and the other queue runs on.
    name: 'queue-destroyed-with-work', targets: ['NF-05'],
    async run(session) {
      const machine = await session.machine({ adapters: [{ name: 'gpu0', engines: 2 }] });
      const app = machine.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const f = app.createNativeFence({ hDevice }).hSyncObject;
      const g = app.createNativeFence({ hDevice }).hSyncObject;
      const doomed = app.createHwQueue({ hDevice, engine: 0, nativeProgressFence: false }).hHwQueue;
      const kept = app.createHwQueue({ hDevice, engine: 1, nativeProgressFence: false }).hHwQueue;
      app.submit({ hHwQueue: doomed, commands: [{ work: { durationNs: 1000 } }, { signal: { hSyncObject: f, value: 1n } }, { work: { durationNs: 50_000 } }, { signal: { hSyncObject: f, value: 2n } }] });
      app.submit({ hHwQueue: kept, commands: [{ work: { durationNs: 60_000 } }, { signal: { hSyncObject: g, value: 1n } }] });
      machine.run(10_000);
      app.destroyHwQueue(doomed);
      let status = 'pending';
      void app.waitAsync({ objects: [g], values: [1n] }).then((r) => { status = r.status; });
      machine.run();
      await Promise.resolve();
      const value = app.readFenceValue(f);
      // Both fences destroyed: once the GPU is done with them (as its progress reports say), the OS closes and destroys them.
      app.destroySynchronizationObject(f);
      app.destroySynchronizationObject(g);
      machine.run();
      const live = machine.summary().adapters[0].liveFences;
      session.judge('NF-05', status === 'SUCCESS' && value === 1n && live === 0, 'the end of the case',
        'the destroyed queue\'s second signal never ran (f stays 1); the other queue\'s signal woke its waiter; both fences destroyed once the GPU was done',
        `f is ${value}, the wait is ${status}, ${live} fence(s) still live`);
    },
  },
  {
    // A submission larger than the ring's room is refused whole (a WddmError, nothing written: docs/DRIVERS.md); the
    // next one that fits runs (NF-05).
    name: 'submission-larger-than-ring', targets: ['NF-05'],
    async run(session) {
      const machine = await session.machine({ adapters: [{ name: 'gpu0', engines: 1, limits: { ringEntries: 96 } }] });
      const app = machine.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const f = app.createNativeFence({ hDevice }).hSyncObject;
      const q = app.createHwQueue({ hDevice, nativeProgressFence: false }).hHwQueue;
      const signals = (n: number, from: number) => Array.from({ length: n }, (_, i) => ({ signal: { hSyncObject: f, value: BigInt(from + i) } }));
      let refused = 'accepted';
      try { app.submit({ hHwQueue: q, commands: signals(100, 1) }); } catch (error) { refused = (error as { status?: string }).status ?? 'an error'; }
      machine.run();
      const afterRefusal = app.readFenceValue(f);
      app.submit({ hHwQueue: q, commands: signals(70, 1) });
      machine.run();
      const value = app.readFenceValue(f);
      // With 10 commands still in the ring, 90 more do not fit (86 of room) though the ring holds 96: refused whole too,
      // whatever chunks the driver writes them in; the 10 run.
      app.submit({ hHwQueue: q, commands: signals(10, 71) });
      let refusedPending = 'accepted';
      try { app.submit({ hHwQueue: q, commands: signals(90, 81) }); } catch (error) { refusedPending = (error as { status?: string }).status ?? 'an error'; }
      machine.run();
      const last = app.readFenceValue(f);
      session.judge('NF-05', refused !== 'accepted' && afterRefusal === 0n && value === 70n && refusedPending !== 'accepted' && last === 80n, 'the end of the case',
        'the 100 commands refused whole (nothing ran), the 70 that fit all ran; with 10 pending, 90 more refused whole and the 10 ran',
        `the 100 ${refused === 'accepted' ? 'were accepted' : `were refused (${refused})`}, the fence was ${afterRefusal} after it and ${value} after the 70; the 90 ${refusedPending === 'accepted' ? 'were accepted' : `were refused (${refusedPending})`} and the fence is ${last}`);
    },
  },
  {
    // Unwatched and untraced, machine.run(): the GPU runs a queue's quiet commands (work, passed waits, signals nobody
    // waits for) as stretches reported by count (QueryGpuProgressStretch, NotifyGpuProgressStretch), then a signal a
    // CPU waiter waits for; then a second submission naming a fence whose handle is closed meanwhile (the OS refuses
    // stretches while a close waits for the GPU). The end state is judged (NF-05).
    name: 'gpu-stretches-unwatched', targets: ['NF-05'], unwatched: true,
    async run(session) {
      const machine = await session.unwatchedMachine({ adapters: [{ name: 'gpu0', engines: 1 }] });
      const app = machine.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const quiet = app.createNativeFence({ hDevice }).hSyncObject;
      const closed = app.createNativeFence({ hDevice }).hSyncObject;
      const waited = app.createNativeFence({ hDevice }).hSyncObject;
      const q = app.createHwQueue({ hDevice, nativeProgressFence: false });
      const commands = [];
      for (let i = 1; i <= 40; i++) commands.push({ work: { durationNs: 100 } }, { signal: { hSyncObject: quiet, value: BigInt(i) } }, { wait: { hSyncObject: quiet, value: BigInt(i) } });
      commands.push({ signal: { hSyncObject: waited, value: 7n } });
      let status = 'pending';
      void app.waitAsync({ objects: [waited], values: [7n] }).then((r) => { status = r.status; });
      app.submit({ hHwQueue: q.hHwQueue, commands });
      machine.run();
      app.submit({ hHwQueue: q.hHwQueue, commands: [{ work: { durationNs: 100 } }, { signal: { hSyncObject: closed, value: 1n } }, { work: { durationNs: 100 } }, { work: { durationNs: 100 } }] });
      app.destroySynchronizationObject(closed);
      machine.run();
      await Promise.resolve();
      const values = [app.readFenceValue(quiet), app.readFenceValue(waited)];
      // Destroyed after the run: the OS closes them once the GPU's reports (stretches by count) say it is done.
      app.destroySynchronizationObject(quiet);
      app.destroySynchronizationObject(waited);
      machine.run();
      const live = machine.summary().adapters[0].liveFences;
      session.judge('NF-05', status === 'SUCCESS' && values[0] === 40n && values[1] === 7n && live === 0, 'the end of the case',
        'every command ran: quiet at 40, waited at 7, its waiter woken; every fence destroyed once the GPU was done',
        `quiet ${values[0]}, waited ${values[1]}, the wait is ${status}, ${live} fence(s) still live`);
    },
  },
];
