// The coverage table (issue 28): every requirement ID of the project's requirement list
// (SPEC.md: CAP, NF, INT, XA, LOG, MF, VM), and what `wddm-fence check-driver` does with it.
//
//   driver-facing, with a rule     a driver can break it; the contract checker's rule of that ID
//                                  (CONTRACT_RULES in contract.ts) judges it
//   driver-facing, judged by …     a driver can break it, and what it can break is exactly what
//                                  another ID's rule judges (its result is that rule's)
//   not driver-facing              the OS's, the runtime's or the tools' obligation, or a permission:
//                                  no driver module can break it (the reason says why)
//
// CAP-04 has a rule that judges the OS, listed so a run shows both sides. test/check-driver.test.ts
// checks this table against CONTRACT_RULES, the ID ranges below and docs/DRIVERS.md.

import { CONTRACT_RULES } from './contract.js';

export interface Requirement {
  readonly id: string;
  /** What it asks, in a line. */
  readonly summary: string;
  readonly driverFacing: boolean;
  /** The ID whose rule judges it (its own when it has a rule). Undefined: no rule judges it. */
  readonly judgedBy?: string;
  /** Why it is not driver-facing, or why another ID's rule is the one that judges it. */
  readonly reason?: string;
}

const OS = (summary: string, reason: string): Omit<Requirement, 'id'> => ({ summary, driverFacing: false, reason });
const RULE = (summary: string): Omit<Requirement, 'id'> => ({ summary, driverFacing: true });
const BY = (summary: string, judgedBy: string, reason: string): Omit<Requirement, 'id'> => ({ summary, driverFacing: true, judgedBy, reason });

const TABLE: Record<string, Omit<Requirement, 'id'>> = {
  'CAP-01': OS('the adapter is built from its driver\'s caps',
    'the OS builds the adapter from whatever DxgkDdiStartDevice returns (a malformed result is refused: check-driver says the driver could not start); caps that misstate the GPU are judged by the rules they break: NF-01 (NativeGpuFence without 64-bit writes), MF-07 (a hidden No64BitAtomics), CAP-03 (caps that change between StartDevice and QueryAdapterInfo)'),
  'CAP-02': RULE('ask IsFeatureEnabled → QueryFeatureInterface → GetOSCaps before advertising NativeGpuFence, and honour the answer'),
  'CAP-03': RULE('QueryAdapterInfo returns the native fence caps; user mode sees whether native fences are supported'),
  'CAP-04': { summary: 'no native fence DDI on an adapter without the feature', driverFacing: false, judgedBy: 'CAP-04',
    reason: 'the OS\'s obligation (it decides which DDIs to call); its rule judges the OS, listed so a run shows both sides' },
  'NF-01': RULE('CurrentValue is 64-bit and never seen torn'),
  'NF-02': BY('MonitoredValue is the smallest waited value − 1, or UINT64_MAX', 'NF-09',
    'the OS computes the value; the driver\'s part, programming exactly the value the OS gave, is NF-09\'s rule'),
  'NF-03': OS('CPU waiters in a min-heap per fence', 'the OS\'s data structure; no DDI touches it'),
  'NF-04': OS('rights: user mode reads CurrentValue only, never MonitoredValue; the GPU only reads MonitoredValue',
    'the OS\'s mappings give the rights (user mode\'s read-only CPU mapping, the GPU VAs the OS maps); a driver cannot grant more than they allow'),
  'NF-05': RULE('a GPU signal writes CurrentValue, then the CMP interrupts if CurrentValue > MonitoredValue'),
  'NF-06': RULE('a GPU wait blocks its queue on the GPU until CurrentValue >= the value'),
  'NF-07': RULE('a CPU signal updates CurrentValue through the driver and unblocks waiting queues'),
  'NF-08': OS('CPU waits: blocking, event, timeout, several fences, wait-all / wait-any', 'the OS\'s waits; the driver is reached only through NF-09\'s MonitoredValue updates'),
  'NF-09': RULE('on an interrupt the OS wakes waiters, moves MonitoredValue (UpdateMonitoredValues), reads CurrentValue again'),
  'NF-10': RULE('no lost wakeup'),
  'NF-11': RULE('CMP order in UpdateMonitoredValues: write MonitoredValue, barrier, read CurrentValue, interrupt if greater'),
  'NF-12': OS('storage in 4 KiB pages, values packed by the stride caps', 'the OS lays out the storage from the caps the driver returned (CAP-03 judges that the caps stay the same)'),
  'NF-13': OS('placement: system or local memory, kernel CPU VA, GPU VAs', 'the OS places the values and maps them; the driver is told where they are'),
  'NF-14': OS('lifecycle: Create, Open, Close, Destroy DDIs', 'the OS drives the lifecycle; a driver that refuses or throws in these DDIs stops its case with a bug check, which check-driver reports'),
  'NF-15': OS('shared fences: one global handle, a local handle per process', 'the OS\'s handle tables; the driver\'s destroyed handles are judged by INT-03'),
  'NF-16': OS('a handle is valid only in its process', 'the OS checks every handle before a DDI is called'),
  'NF-17': BY('a hardware queue\'s progress fence can be a native fence', 'NF-05',
    'the OS appends the progress signal to each submission; the user-mode half writing it is judged like every signal (NF-05)'),
  'NF-18': RULE('batches; NotificationOnly means rescan without writing'),
  'NF-19': RULE('fence values only move forward unless AllowFenceRewind'),
  'NF-20': RULE('device removal: every fence to UINT64_MAX except NoSignalMaxValueOnTdr ones'),
  'INT-01': RULE('the interrupt lists exactly the signalled fences with waiters, or none'),
  'INT-02': OS('several signals may collapse into one interrupt with no list', 'a permission, not an obligation: what a collapsed interrupt must still do is INT-01\'s and INT-06\'s'),
  'INT-03': RULE('a destroyed fence in the list is a bug check'),
  'INT-04': OS('with no list the OS scans native fence waiters (and monitored ones with EvaluateLegacyMonitoredFences)',
    'the OS\'s scan; the flag is the driver\'s choice, and monitored fence writes have their own interrupt (MF-04)'),
  'INT-05': RULE('an optimized interrupt names the running queue (or none); the OS reads its signal log'),
  'INT-06': RULE('a waiter\'s fence signalled past MonitoredValue is listed, or the interrupt has no list'),
  'XA-01': OS('a cross-adapter fence is of type DEFAULT', 'the OS refuses other types before any DDI'),
  'XA-02': BY('one shared CurrentValue word for every adapter', 'NF-07',
    'the OS maps the word; the driver\'s writes to the address it is given are NF-07\'s (and NF-18\'s) to judge'),
  'XA-03': BY('MonitoredValue held at 0 on the other adapters', 'NF-09', 'the OS asks for 0 through UpdateMonitoredValues; the driver programming it is NF-09\'s rule'),
  'XA-04': BY('the OS propagates each signal; NotificationOnly makes the other adapter rescan', 'NF-18', 'the driver\'s part is the NotificationOnly rescan, NF-18\'s rule'),
  'XA-05': OS('mixed support: native and monitored fences opened across', 'the OS decides what each adapter gets'),
  'XA-06': OS('the document\'s scenario tables play out step by step', 'scenarios the suite runs (scenario-1, -2a, -2b); the driver is judged there by the rules of each step'),
  'XA-07': OS('the GPU-to-GPU doorbell (opt-in, beyond the document)', 'the model\'s extension beyond the document: no contract text for a driver to break'),
  'LOG-01': OS('two 4 KiB log buffers per user-mode-submission queue', 'the OS makes the buffers and sets them (SetNativeFenceLogBuffer); the driver logging into them is LOG-03\'s rule'),
  'LOG-02': OS('the buffer layout: header and entries', 'the OS formats the layout; what the GPU writes into it is judged by LOG-04, LOG-05 and LOG-07'),
  'LOG-03': RULE('the driver always writes to the latest buffer the OS set'),
  'LOG-04': RULE('GPU order: value, entry with timestamp, index, barrier, interrupt'),
  'LOG-05': RULE('an overrun bumps the wraparound count'),
  'LOG-06': RULE('UpdateNativeFenceLogs flushes pending log writes'),
  'LOG-07': RULE('timestamps never decrease within a log'),
  'LOG-08': OS('CPU-side queued events and the combined timeline', 'the OS\'s records and the timeline tool'),
  'LOG-09': OS('the document\'s worked example plays out', 'a scenario the suite runs (interrupt-payload); the driver is judged there by INT-05, LOG-04 and LOG-07'),
  'LOG-10': BY('wait and signal logging are always on', 'LOG-03', 'a driver that does not log is judged by LOG-03 (each GPU operation\'s entry lands in the buffer the OS set)'),
  'MF-01': OS('created with an initial value; read-only CPU mapping, read/write GPU VA', 'the OS creates and maps monitored fences'),
  'MF-02': OS('a CPU signal writes the value and releases waits', 'the OS writes a monitored fence\'s value itself'),
  'MF-03': OS('CPU waits block or set an event', 'the OS\'s waits'),
  'MF-04': RULE('a GPU signals by a fence-write command followed by a monitored fence signaled interrupt'),
  'MF-05': OS('GPU waits return at once; later command buffers are held on the CPU', 'the OS holds the work; the driver sees only the buffers it is given'),
  'MF-06': RULE('when a command buffer completes, the kernel scans pending waits'),
  'MF-07': RULE('64-bit values; with No64BitAtomics only 32 bits are written and the OS extends them'),
  'VM-01': OS('deferred destruction; AssumeNotInUse', 'VidMm (the OS); a driver module has no part in allocation tracking (docs/ALLOCATIONS.md)'),
  'VM-02': OS('Lock2 no-overwrite maps at once', 'VidMm (the OS)'),
  'VM-03': OS('Lock2 discard renames', 'the model\'s D3D11 map layer in user mode (src/user/), not a driver module'),
  'VM-04': OS('a synchronizing Lock2 on a busy allocation', 'VidMm (the OS)'),
  'VM-05': OS('segments and the lock rules', 'VidMm (the OS)'),
  'VM-06': OS('the CpuHostAperture', 'VidMm (the OS)'),
  'VM-07': OS('Lock2 flags are rejected', 'VidMm (the OS)'),
  'VM-08': OS('I/O coherence: cache invalidation on non-coherent platforms', 'the model\'s user-mode runtime and VidMm, not a driver module'),
};

/** The requirement list's ID ranges, in its order (SPEC.md: 62 IDs). */
export const REQUIREMENT_RANGES: readonly (readonly [prefix: string, count: number])[] = [['CAP', 4], ['NF', 20], ['INT', 6], ['XA', 7], ['LOG', 10], ['MF', 7], ['VM', 8]];

/** Every requirement ID, in the requirement list's order, with what check-driver does with it. */
export const REQUIREMENTS: readonly Requirement[] = REQUIREMENT_RANGES.flatMap(([prefix, count]) =>
  Array.from({ length: count }, (_, i) => {
    const id = `${prefix}-${String(i + 1).padStart(2, '0')}`;
    const entry = TABLE[id];
    if (!entry) throw new Error(`requirements: ${id} has no entry in the coverage table`);
    const hasRule = CONTRACT_RULES.some((r) => r.rule === id);
    if (entry.driverFacing && !entry.judgedBy && !hasRule) throw new Error(`requirements: ${id} is driver-facing but no rule judges it`);
    return { id, ...entry, ...(hasRule && !entry.judgedBy ? { judgedBy: id } : {}) };
  }));
