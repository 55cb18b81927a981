// `npm run mutate:report`: the mutation score of the reference driver and every mutant the conformance suite did
// not kill, each with why (docs/DRIVERS.md, "How much the checker notices").
//
//   node scripts/mutation-survivors.mjs [reports/mutation/mutation.json]   (npm run mutate writes it)
//
// Each mutant Stryker reports Survived or NoCoverage is matched, by the source line it changed (and, where it matters,
// the kind of change), to one entry of WHY below:
//   equivalent   nothing a driver's environment can observe changes (text the contract does not fix, a cache, a check
//                of arguments the OS never passes, another behaviour the contract allows): left out of the score
//   not killed   a real change no case shows; the entry says which rule would catch it, or why none does
// The score is killed (Killed and Timeout) / (all mutants − equivalent ones). A mutant no entry matches is printed as
// UNCLASSIFIED and the script exits 1: a change of the reference driver asks for a look, not a guess.

import { readFileSync } from 'node:fs';

/** [what the changed line contains (a RegExp on its trimmed text), mutators (undefined: any), kind, why] */
const WHY = [
  // ── equivalent: text ──
  [/negotiation/, undefined, 'equivalent', 'the negotiation record (text for tests and traces; no DDI or callback carries it)'],
  [/throw new (Error|WddmError)\(|^\{ parameter: |^`?\w+: .*expected:/, ['StringLiteral', 'ObjectLiteral'], 'equivalent', 'the words of an error (the contract fixes that a call is refused, not how the refusal reads)'],
  [/check\(.*, '[A-Za-z ]+'\)|const ddi = 'Dxgk|this\.(fence|queue)\(args\.\w+(\[i\])?, 'Dxgk/, ['StringLiteral'], 'equivalent', 'the call site a core status error names (text)'],
  [/InterruptType: '/, ['StringLiteral'], 'equivalent', 'DXGKARGCB_NOTIFY_INTERRUPT\'s InterruptType text: the OS routes by the callback called, not by this field'],
  [/label: `context|kind: 'CONTEXT'/, ['StringLiteral'], 'equivalent', 'a context\'s trace label and its kind tag (the ISR compares only against \'HW_QUEUE\')'],
  // ── equivalent: handles, caches, alternatives that do the same ──
  [/this\.(generation|nextLocal|nextQueue|nextContext)\+\+/, undefined, 'equivalent', 'another handle value, still unique in the run (handles are the driver\'s own)'],
  [/LAST_RECORD\] = |let record = hGlobal === last\.handle|if \(record === 0 \|\| !this\.holds/, undefined, 'equivalent', 'writeCurrentValue\'s cache of the last record: with it or without, the same record is found (checked live each time)'],
  [/sharedMemory/, undefined, 'equivalent', 'shared memory (worker mode) only: on one thread an atomic store and a plain one leave the same word'],
  [/this\.staging\?\.words\.buffer/, undefined, 'equivalent', 'the staging views\' cache (the memory never grows)'],
  [/k < order\.length|first < commands\.length|first < total|i < count; i\+\+, c\+\+|\(at \+ C\.op\)/, undefined, 'equivalent', 'one more turn that does nothing (order[k] past the end is no step; a staged chunk of 0 commands), or C.op, which is offset 0'],
  [/const raw: number\[\] = \[\]|monitoredRaised: boolean\[\] = \[\]|negotiation: string\[\] = \[\]/, ['ArrayDeclaration'], 'equivalent', 'an initial array with an extra element no index reads as a handle (fenceOf refuses a string; engine 0\'s slot is set before it is read)'],
  [/list = raw\.filter\(\(h\) => this\.fenceOf\(h\) >= 0\)/, ['EqualityOperator'], 'equivalent', 'fenceOf returns a core id (1 and up) or −1: > 0 and >= 0 agree'],
  [/args\.UpdatedValueArray\.slice/, undefined, 'equivalent', 'keeping the argument\'s array instead of a copy: this OS builds a new one for every call (a driver may not rely on that: docs/DRIVERS.md)'],
  [/c\.op === 'fenceWrite' \? this\.fenceAtGpuVa/, undefined, 'equivalent', 'a work command carries GPU VA 0, where no fence is found'],
  // ── equivalent: arguments the OS never passes ──
  [/if \(coreFence <= 0\)|coreFence > FENCE_ID_MASK/, undefined, 'equivalent', 'a create with no fence storage, or past 2^24 fences of one adapter: the OS never asks'],
  [/primaryOpen|otherOpens|const derived|hGlobal === undefined \? -1|const others|if \(open\) throw|const open = /, undefined, 'equivalent', 'the count of open local handles serves only the refusal to destroy a fence still open (and an unknown handle\'s error): the OS closes every local handle before it destroys, and names only handles it was given'],
  [/PrivateDriverData instanceof Uint8Array|NumberOfEntries < 1|!Number\.isInteger\(total\)|data instanceof Uint8Array|littleEndian32\(data/, undefined, 'equivalent', 'an argument the OS never sends (it checks what it passes first: private data of the size it asked for, a 4 KiB log\'s entry count, columns of the command count)'],
  [/if \(!queue\) throw|if \(!context\) throw|if \(fence < 0\) throw|if \(record === 0\) this\.fence|if \(!queue\) \{$/, undefined, 'equivalent', 'an unknown handle: the OS names only handles this driver gave it'],
  [/!Number\.isInteger\(hGlobal\)|id === 0 \|\| id > words|this\.bytes!\[record \+ this\.fenceStateOffset\]/, undefined, 'equivalent', 'recordOf\'s checks of a handle the OS passes (live, and this driver\'s); each check is backed by the next one (the handle the core keeps for the record)'],
  [/if \(phys === 0\) return 0|return fence > 0 \? fence : 0/, undefined, 'equivalent', 'fenceAtGpuVa of a VA nothing maps, or of a word that is no fence: the GPU faults either way'],
  [/enginesWriteMonitoredFences \?\? true|c\.op === 'fenceWrite' && !writable/, undefined, 'equivalent', 'the machine always sets enginesWriteMonitoredFences, and the OS sends fence writes only to engines that can write them'],
  [/if \(!this\.os \|\| this\.stopped\) return|if \(count === -2 \|\| !this\.os \|\| this\.stopped\)|if \(!queue\) return/, undefined, 'equivalent', 'a report from before DxgkDdiStartDevice, after a bug check (the engines are stopped, nothing runs), or for a queue the OS never made; or an interrupt with nothing pending delivered anyway (a spurious interrupt, allowed)'],
  [/if \(!this\.stopped\) this\.hardware\.restart/, undefined, 'equivalent', 'RestartFromTimeout after a bug check: the OS never restarts a stopped adapter'],
  [/\[\.\.\.this\.submitted\]\) if \(hContext === args\.hContext\)/, undefined, 'equivalent', 'forgetting a destroyed context\'s SubmissionFenceIds: the completion routine also checks that the context is still the queue\'s'],
  [/if \(result\.Enabled\)|if \(table\) \{/, undefined, 'equivalent', 'QueryFeatureInterface asked when disabled answers null (no table); with the feature on its table is never null'],
  [/coreQueueOf\(handle/, undefined, 'equivalent', 'coreQueueOf serves tools and tests that step the core; no DDI or callback uses it'],
  [/if \(this\.hardware\.doorbell\) this\.hardware\.doorbell\.unregister/, undefined, 'equivalent', 'a destroyed fence\'s doorbell registration left behind: the next fence at that CurrentValue word registers over it'],
  [/if \(!args\.Flags\.NotificationOnly\)/, undefined, 'equivalent', 'writing on NotificationOnly: the OS passes the value the shared word already holds'],
  // ── equivalent: another behaviour the contract allows ──
  [/optimizedInterrupt/, undefined, 'equivalent', 'the optimized interrupt\'s form (no list, a queue named or none) where a list would do, or a list where it would do: no list is always allowed (INT-01, INT-04), naming no queue too (INT-05)'],
  [/running\?\.kind === 'HW_QUEUE'/, undefined, 'equivalent', 'naming no queue in an optimized interrupt is always allowed (INT-05: the OS reads every queue of the engine)'],
  [/EvaluateLegacyMonitoredFences/, undefined, 'equivalent', 'asking the OS to scan monitored fences too on a no-list interrupt: more scanning, never less (INT-04)'],
  [/step\.kind === 'fence-write'\) this\.monitoredRaised|const monitored = this\.monitoredRaised|this\.monitoredRaised\[engine\] = false|if \(monitored\) \{/, undefined, 'equivalent', 'a monitored fence signaled interrupt more than needed: spurious interrupts are allowed (NF-10)'],
  [/if \(count > 0\)|i < count; i\+\+\) raw\.push|raw\.every\(|count >= 0 && this\.options\.interruptPayload/, undefined, 'equivalent', 'an interrupt with no list, or with an entry the driver then filters out, where a list would do: no list is always allowed (INT-01), a spurious interrupt too (NF-10)'],
  [/this\.core\.queuePending\(id\) \+ args\.Commands\.length \+ 1 >/, undefined, 'equivalent', 'refusing a command buffer that would exactly fill the ring: DxgkDdiSubmitCommand may say no, and the OS submits it again at the next completion'],
  [/granularity === 'step' && args\.NumFences > 0/, undefined, 'equivalent', 'UpdateMonitoredValues in steps (a DdiInProgress) on any machine: the OS runs the steps at once when it runs whole; the same CMP steps'],
  [/queryNativeFenceCaps\(\): NativeFenceCaps/, undefined, 'not killed', 'no case shows empty caps: the model lays fence storage out from the machine\'s options, not from the caps (a real OS would use them); CAP-03 compares them with the GPU\'s at DxgkDdiStartDevice only when NativeGpuFence is advertised'],
  // ── not killed: model plumbing the contract has no words for ──
  [/^'wait-passed': 'WAIT_PASSED'|^work: 'WORK'/, undefined, 'not killed', 'the operation names of NotifyGpuProgress (model-only: the OS\'s in-flight bookkeeping and stuck report): no requirement fixes them; a wrong one shows only where the OS waits for a command it never hears about'],
  [/stretchReporter|acceptsStretch|reportStretch|QueryGpuProgressStretch|NotifyGpuProgressStretch|private acceptsStretch|private reportStretch/, undefined, 'not killed', 'GPU stretches reported by count (model-only callbacks, on unwatched machines): declining a stretch is always allowed, and a lost count leaves only the OS\'s picture of a ring; no requirement fixes them'],
  [/hardware\.doorbell\.onFallback|if \(hardware\.doorbell\)|NotifyDoorbellFallback/, undefined, 'not killed', 'the doorbell\'s fallback report (XA-07, beyond the document): in the model a ring that is full still holds records whose later take rescans with the shared word, which covers the signal the fallback names; NF-18 and NF-10 would catch a fallback that mattered'],
  [/this\.os\.NotifyDmaPageFaulted\(\{|NodeOrdinal: queue\?\.engine|hQueue: queue \? this\.byCoreQueue/, undefined, 'equivalent', 'the page fault interrupt\'s payload: the OS resets the adapter for the fault whatever the payload names'],
  [/hContext === undefined \|\| hContext !== this\.byCoreQueue/, undefined, 'equivalent', 'the completion routine\'s guard is doubled (the SubmissionFenceId forgotten with its context, and the context no longer the queue\'s): either alone drops a destroyed context\'s completion'],
  [/^if \(count > room\) \{/, ['EqualityOperator'], 'equivalent', 'refusing a submission that would exactly fill a hardware queue\'s ring: a ring that keeps one slot free is a legal design (the runtime\'s submit is refused whole, INSUFFICIENT_RESOURCES, and may be made again once the GPU drains)'],
  [/const room = kmd\.options\.ringEntries - kmd\.core\.queuePending/, undefined, 'not killed', 'the ring\'s room counted as if the commands still pending added room: a submission that does not fit is written in part (its first chunks) before the core refuses the rest; killed since this run by submission-larger-than-ring\'s second half (90 commands with 10 pending must be refused whole: NF-05), checked by hand on the mutant'],
  [/\} else if \(hardwareNative\) \{|^this\.nativeFenceEnabled = true;$/, undefined, 'not killed', 'the path of driver option queryFeatureBeforeAdvertising: false, the machine\'s model of a driver that advertises NativeGpuFence without asking (a CAP-02 violation on purpose): the conformance suite runs a driver module as given, never with that option; CAP-02 catches the option itself (broken/advertises-without-asking.mjs)'],
  [/^destroyNativeFence\(args: DXGKARG_DESTROYNATIVEFENCE\): void \{$/, ['BlockStatement'], 'not killed', 'a DxgkDdiDestroyNativeFence that does nothing: the OS frees the fence\'s storage when the GPU is done with it, which also drops the driver handle the core keeps with it, so no later interrupt list names the destroyed fence in any case; INT-03 would catch one that did (broken/lists-destroyed-fence.mjs), a case where a list is built between the DDI and the free would show it'],
  [/stopDevice\(\): void|this\.stopped = true/, undefined, 'not killed', 'DxgkDdiStopDevice comes only with a bug check, which the reference driver never causes: check-driver cannot judge what a driver does after its own bug check (docs/DRIVERS.md)'],
];

const path = process.argv[2] ?? 'reports/mutation/mutation.json';
const report = JSON.parse(readFileSync(path, 'utf8'));
const file = Object.values(report.files)[0];
const source = file.source.split('\n');
const killed = file.mutants.filter((m) => m.status === 'Killed' || m.status === 'Timeout');
const rest = file.mutants.filter((m) => m.status !== 'Killed' && m.status !== 'Timeout');
const groups = new Map();
const unclassified = [];
for (const m of rest) {
  const line = source[m.location.start.line - 1].trim();
  const entry = WHY.find(([pattern, mutators]) => pattern.test(line) && (!mutators || mutators.includes(m.mutatorName)));
  if (!entry) { unclassified.push(`${m.location.start.line}: ${m.mutatorName} ${JSON.stringify(m.replacement ?? '')}  ${line}`); continue; }
  const key = entry[3];
  if (!groups.has(key)) groups.set(key, { kind: entry[2], why: key, mutants: [] });
  groups.get(key).mutants.push(m);
}
const equivalent = [...groups.values()].filter((g) => g.kind === 'equivalent').reduce((n, g) => n + g.mutants.length, 0);
const notKilled = rest.length - equivalent - unclassified.length;
const scored = file.mutants.length - equivalent;
console.log(`mutants: ${file.mutants.length}; killed ${killed.length} (${file.mutants.filter((m) => m.status === 'Timeout').length} by timeout); not killed ${rest.length}: equivalent ${equivalent}, not killed ${notKilled}${unclassified.length ? `, UNCLASSIFIED ${unclassified.length}` : ''}`);
console.log(`score: ${killed.length} / ${scored} non-equivalent = ${(100 * killed.length / scored).toFixed(1)} %  (Stryker's own, every mutant counted: ${(100 * killed.length / file.mutants.length).toFixed(1)} %)`);
console.log('');
console.log('| kind | mutants | lines (mutator) | why |');
console.log('|---|---|---|---|');
for (const g of [...groups.values()].sort((a, b) => (a.kind === b.kind ? b.mutants.length - a.mutants.length : a.kind === 'not killed' ? -1 : 1))) {
  const lines = [...new Map(g.mutants.map((m) => [m.location.start.line, m])).keys()].sort((a, b) => a - b)
    .map((l) => `${l} (${[...new Set(g.mutants.filter((m) => m.location.start.line === l).map((m) => m.mutatorName))].join(', ')})`).join('; ');
  console.log(`| ${g.kind} | ${g.mutants.length} | ${lines} | ${g.why} |`);
}
if (unclassified.length) {
  console.log('\nUNCLASSIFIED:');
  for (const u of unclassified) console.log(`  ${u}`);
  process.exit(1);
}
