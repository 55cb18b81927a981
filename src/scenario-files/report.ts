// What `wddm-fence run` prints: the readable trace, the machine summary and
// each expectation with its verdict, and with --check the contract checker's
// violations; or all of it as one JSON document.

import type { ScenarioResult } from './run.js';

/** What the contract checker found in a run (`run --check`): its violations, and per rule how many times its condition was evaluated. */
export interface ContractFindings {
  violations: readonly { rule: string; adapter: string; where: string; timeNs: number | bigint; traceIndex: number; expected: string; actual: string; fatal: boolean }[];
  evaluations: Readonly<Record<string, number>>;
}

/** The --check section: every violation by rule, where and when, what was expected and what happened. */
export function contractText(contract: ContractFindings): string {
  const rules = [...new Set(contract.violations.map((v) => v.rule))];
  const evaluated = Object.keys(contract.evaluations).length;
  const lines = [`contract checker (--check): ${contract.violations.length} violation${contract.violations.length === 1 ? '' : 's'}`
    + `${rules.length ? ` of ${rules.join(', ')}` : ''}; ${evaluated} rule${evaluated === 1 ? '' : 's'} evaluated (${Object.entries(contract.evaluations).map(([r, n]) => `${r} ×${n}`).join(', ') || 'none'})`];
  for (const v of contract.violations) {
    lines.push(`  ${v.rule} at ${v.where}, adapter ${v.adapter}, ${String(v.timeNs)} ns, trace #${v.traceIndex}${v.fatal ? ' (fatal: that adapter was bug-checked)' : ''}`);
    lines.push(`    expected: ${v.expected}`);
    lines.push(`    actual:   ${v.actual}`);
  }
  return lines.join('\n') + '\n';
}

export function expectationsText(result: ScenarioResult): string {
  const lines = [`expectations (${result.expectations.filter((e) => e.ok).length} of ${result.expectations.length} hold)`];
  for (const e of result.expectations) {
    // a failed one says where it is in the file, as an invalid one would
    const at = !e.ok && e.line ? `  ${result.source}:${e.line}:${e.column}` : '';
    lines.push(`  ${e.ok ? 'ok  ' : 'FAIL'} ${e.description}${e.ok ? '' : `: expected ${e.expected}, got ${e.actual}`}  [${e.path}]${at}`);
  }
  return lines.join('\n') + '\n';
}

export function reportText(result: ScenarioResult, options: { trace?: boolean; contract?: ContractFindings } = {}): string {
  const parts: string[] = [];
  parts.push(`scenario ${result.scenario.name} (seed ${result.seed})${result.scenario.description ? `: ${result.scenario.description}` : ''}\n`);
  if (options.trace !== false) parts.push(result.machine.trace.text());
  parts.push(result.machine.summaryText());
  parts.push(expectationsText(result));
  if (options.contract) parts.push(contractText(options.contract));
  const failed = result.expectations.filter((e) => !e.ok);
  const violations = options.contract?.violations.length ?? 0;
  const problems = [failed.length ? `${failed.length} expectation${failed.length === 1 ? '' : 's'} did not hold` : '',
    violations ? `${violations} contract violation${violations === 1 ? '' : 's'} (--check)` : ''].filter(Boolean);
  parts.push(problems.length ? `FAILED: ${problems.join('; ')}\n` : `PASSED: every expectation holds${options.contract ? ', no contract violation' : ''}\n`);
  return parts.join('\n');
}

export function reportJson(result: ScenarioResult, contract?: ContractFindings): string {
  return JSON.stringify({
    scenario: result.scenario.name,
    source: result.source,
    seed: result.seed,
    passed: result.passed && !contract?.violations.length,
    ...(contract ? { contract } : {}),
    summary: result.machine.summary(),
    expectations: result.expectations,
    stuck: result.stuck,
    lostWakeups: result.machine.lostWakeups(),
    waits: result.waits,
    events: result.machine.trace.json(),
  }, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2) + '\n';
}
