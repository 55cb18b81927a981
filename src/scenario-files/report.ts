// What `wddm-fence run` prints: the readable trace, the machine summary and
// each expectation with its verdict; or all of it as one JSON document.

import type { ScenarioResult } from './run.js';

export function expectationsText(result: ScenarioResult): string {
  const lines = [`expectations (${result.expectations.filter((e) => e.ok).length} of ${result.expectations.length} hold)`];
  for (const e of result.expectations) {
    // a failed one says where it is in the file, as an invalid one would
    const at = !e.ok && e.line ? `  ${result.source}:${e.line}:${e.column}` : '';
    lines.push(`  ${e.ok ? 'ok  ' : 'FAIL'} ${e.description}${e.ok ? '' : `: expected ${e.expected}, got ${e.actual}`}  [${e.path}]${at}`);
  }
  return lines.join('\n') + '\n';
}

export function reportText(result: ScenarioResult, options: { trace?: boolean } = {}): string {
  const parts: string[] = [];
  parts.push(`scenario ${result.scenario.name} (seed ${result.seed})${result.scenario.description ? `: ${result.scenario.description}` : ''}\n`);
  if (options.trace !== false) parts.push(result.machine.trace.text());
  parts.push(result.machine.summaryText());
  parts.push(expectationsText(result));
  const failed = result.expectations.filter((e) => !e.ok);
  parts.push(failed.length ? `FAILED: ${failed.length} expectation${failed.length === 1 ? '' : 's'} did not hold\n` : 'PASSED: every expectation holds\n');
  return parts.join('\n');
}

export function reportJson(result: ScenarioResult): string {
  return JSON.stringify({
    scenario: result.scenario.name,
    source: result.source,
    seed: result.seed,
    passed: result.passed,
    summary: result.machine.summary(),
    expectations: result.expectations,
    stuck: result.stuck,
    lostWakeups: result.machine.lostWakeups(),
    waits: result.waits,
    events: result.machine.trace.json(),
  }, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2) + '\n';
}
