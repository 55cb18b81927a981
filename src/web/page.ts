// The browser page (dist/web/index.html + page.js, served by `npm run web`):
// pick or paste a scenario, run it here on the WebAssembly core, and draw the
// timeline (SVG), the DDI trace (a table) and the summary. Its address can
// run a built-in scenario as it opens: `?scenario=demo&seed=7` (address.ts).

import { parseScenario, ScenarioError, formatProblem } from '../scenario-files/load.js';
import { runScenario, type ScenarioResult } from '../scenario-files/run.js';
import { runnableScenarios } from '../scenario-files/builtin.js';
import { timelineModel, type TimelineModel } from '../timeline/model.js';
import { expectationsText } from '../scenario-files/report.js';
import { Trace } from '../base/trace.js';
import { runWorkerStress, workerStressText } from '../workers/worker-mode.js';
import { exportTimeline } from '../timeline/timeline.js';
import { scenarioFromAddress } from './address.js';
import { timeTicks } from './axis.js';
import { stuckText } from '../machine/liveness.js';

let lastResult: ScenarioResult | undefined;

/** The Chrome JSON timeline of the last run (src/timeline/timeline.ts), as a file download. */
function downloadTrace(): void {
  if (!lastResult) return;
  const blob = new Blob([JSON.stringify(exportTimeline(lastResult.machine)) + '\n'], { type: 'application/json' });
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = `${lastResult.scenario.name}.trace.json`;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const SVG = 'http://www.w3.org/2000/svg';

function svg<K extends keyof SVGElementTagNameMap>(name: K, attrs: Record<string, string | number>, parent?: Element): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  parent?.appendChild(node);
  return node;
}

const COLOURS: Record<string, string> = { work: '#7aa6d8', wait: '#f2b36b', 'cpu-wait': '#f2b36b', signal: '#3c9a5f', 'cpu-signal': '#3c9a5f' };

export function drawTimeline(root: SVGSVGElement, model: TimelineModel): void {
  root.replaceChildren();
  const available = root.parentElement?.clientWidth ?? 1000;
  const labelWidth = 270, rowHeight = 34, top = 24, width = Math.max(900, available - 4, Math.min(4000, 260 + model.slices.length * 10));
  const plot = width - labelWidth - 20;
  const endNs = Math.max(model.endNs, 1);
  const x = (ns: number) => labelWidth + (ns / endNs) * plot;
  const height = top + model.tracks.length * rowHeight + 10;
  root.setAttribute('width', String(width));
  root.setAttribute('height', String(height));
  root.setAttribute('viewBox', `0 0 ${width} ${height}`);
  const defs = svg('defs', {}, root);
  const marker = svg('marker', { id: 'arrowhead', markerWidth: 8, markerHeight: 8, refX: 7, refY: 4, orient: 'auto' }, defs);
  svg('path', { d: 'M0,0 L8,4 L0,8 z', fill: '#5b3fa8' }, marker);
  // time axis
  const axis = svg('g', { class: 'axis' }, root);
  for (const tick of timeTicks(endNs)) {
    svg('line', { x1: x(tick.ns), x2: x(tick.ns), y1: top - 4, y2: height, stroke: '#eceef2' }, axis);
    const t = svg('text', { x: x(tick.ns), y: top - 8, 'font-size': 10, 'text-anchor': 'middle', fill: '#666' }, axis);
    t.textContent = tick.label;
  }
  const rowOf = new Map<string, number>();
  model.tracks.forEach((track, i) => {
    rowOf.set(track.id, i);
    const g = svg('g', { class: 'track', 'data-track': track.id, 'data-kind': track.kind }, root);
    const y = top + i * rowHeight;
    svg('rect', { x: 0, y, width, height: rowHeight, fill: i % 2 ? '#fafbfc' : '#fff' }, g);
    const label = svg('text', { x: 8, y: y + rowHeight / 2 + 4, 'font-size': 12, fill: '#1d2330' }, g);
    label.textContent = track.label;
  });
  const centre = new Map<number, { x1: number; x2: number; y: number }>();
  const slices = svg('g', { class: 'slices' }, root);
  for (const s of model.slices) {
    const row = rowOf.get(s.track);
    if (row === undefined) continue;
    const y = top + row * rowHeight + 7;
    const x1 = x(s.startNs);
    const w = Math.max(s.kind === 'signal' || s.kind === 'cpu-signal' ? 4 : 3, x(s.endNs) - x1);
    const fill = s.outcome === 'timed out' ? '#e3a0a0' : s.outcome === 'satisfied at once' || s.outcome === 'passed' ? '#f7d9a8' : COLOURS[s.kind] ?? '#999';
    const rect = svg('rect', { class: `slice slice-${s.kind}`, x: x1, y, width: w, height: rowHeight - 14, rx: 2, fill, stroke: '#fff', 'stroke-width': 1, 'data-slice': s.id, 'data-outcome': s.outcome ?? '' }, slices);
    const title = svg('title', {}, rect);
    title.textContent = `${s.label}${s.outcome ? ` (${s.outcome})` : ''}\n${(s.startNs / 1000).toFixed(3)} – ${(s.endNs / 1000).toFixed(3)} us`;
    centre.set(s.id, { x1, x2: x1 + w, y: y + (rowHeight - 14) / 2 });
  }
  const arrows = svg('g', { class: 'arrows' }, root);
  for (const a of model.arrows) {
    const from = centre.get(a.from), to = centre.get(a.to);
    if (!from || !to) continue;
    const sx = from.x2, sy = from.y, tx = to.x2, ty = to.y;
    const path = svg('path', { class: 'arrow', d: `M${sx},${sy} C${sx + 30},${sy} ${tx - 30},${ty} ${tx - 1},${ty}`, fill: 'none', stroke: '#5b3fa8', 'stroke-width': 1.4, 'marker-end': 'url(#arrowhead)', 'data-fence': a.fence }, arrows);
    svg('title', {}, path).textContent = `${a.fence} reached ${a.value}`;
  }
  const marks = svg('g', { class: 'marks' }, root);
  for (const m of model.marks) {
    const row = rowOf.get(m.track);
    if (row === undefined) continue;
    const y = top + row * rowHeight;
    const mx = x(m.timeNs);
    const colour = m.kind === 'fault' ? '#000' : m.kind === 'note' ? '#8a8f99' : '#c23b3b';
    const shape = m.kind === 'note'
      ? svg('path', { class: `mark mark-${m.kind}`, d: `M${mx - 4},${y + 3} L${mx + 4},${y + 3} L${mx},${y + 9} z`, fill: colour }, marks)
      : svg('path', { class: `mark mark-${m.kind}`, d: `M${mx},${y + 6} L${mx + 6},${y + rowHeight / 2} L${mx},${y + rowHeight - 6} L${mx - 6},${y + rowHeight / 2} z`, fill: colour }, marks);
    svg('title', {}, shape).textContent = `${m.label} at ${(m.timeNs / 1000).toFixed(3)} us`;
  }
}

function drawSummary(result: ScenarioResult): void {
  const s = result.machine.summary();
  const root = $('summary');
  root.replaceChildren();
  const interrupts = s.adapters.reduce((n, a) => n + a.interruptsRaised, 0);
  const gpuSignals = s.adapters.reduce((n, a) => n + a.gpuSignals, 0);
  const verdict = document.createElement('p');
  verdict.id = 'verdict';
  verdict.className = result.passed ? 'verdict-pass' : 'verdict-fail';
  verdict.textContent = result.passed ? 'PASSED: every expectation holds' : `FAILED: ${result.expectations.filter((e) => !e.ok).length} expectation(s) did not hold`;
  root.appendChild(verdict);
  const numbers = document.createElement('table');
  numbers.id = 'summary-numbers';
  const rows: [string, string | number][] = [
    ['seed', s.seed], ['virtual time (us)', (s.timeNs / 1000).toFixed(3)], ['GPU signals', gpuSignals], ['CPU signals', s.os.cpuSignals],
    ['interrupts raised', interrupts], ['interrupts handled', s.os.interruptsHandled], ['waiters woken', s.os.waitersWoken],
    ['waits satisfied at once', s.os.waitsSatisfiedAtOnce], ['waits timed out', s.os.waitsTimedOut], ['bug checks', s.bugChecks.length],
  ];
  for (const [k, v] of rows) {
    const tr = numbers.insertRow();
    tr.dataset.key = k;
    tr.insertCell().textContent = k;
    tr.insertCell().textContent = String(v);
  }
  root.appendChild(numbers);
  if (result.stuck.stuck) {
    // What is still blocked at the end (and any deadlock): shown whether or not the scenario expected it.
    const stuck = document.createElement('pre');
    stuck.id = 'stuck-report';
    stuck.className = result.stuck.deadlocks.length ? 'stuck deadlock' : 'stuck';
    stuck.textContent = stuckText(result.stuck).map((l) => l.replace(/^ {2}/, '')).join('\n');
    root.appendChild(stuck);
  }
  const expectations = document.createElement('table');
  expectations.id = 'expectations';
  for (const e of result.expectations) {
    const tr = expectations.insertRow();
    tr.className = e.ok ? 'ok' : 'fail';
    tr.insertCell().textContent = e.ok ? 'ok' : 'FAIL';
    tr.insertCell().textContent = e.description;
    tr.insertCell().textContent = e.ok ? '' : `expected ${e.expected}, got ${e.actual}`;
    tr.insertCell().textContent = e.path;
  }
  const h = document.createElement('h2');
  h.textContent = 'Expectations';
  root.appendChild(h);
  root.appendChild(expectations);
  const pre = document.createElement('pre');
  pre.textContent = result.machine.summaryText() + '\n' + expectationsText(result);
  pre.hidden = true;
  pre.id = 'summary-text';
  root.appendChild(pre);
  root.dataset.passed = String(result.passed);
  root.dataset.stuck = String(result.stuck.stuck);
  root.dataset.deadlocks = String(result.stuck.deadlocks.length);
  root.dataset.interrupts = String(interrupts);
  root.dataset.gpuSignals = String(gpuSignals);
}

function drawTrace(result: ScenarioResult): void {
  const table = $('trace') as HTMLTableElement;
  table.replaceChildren();
  const head = table.createTHead().insertRow();
  for (const h of ['time (us)', 'kind', 'actor', 'event', 'arguments']) { const th = document.createElement('th'); th.textContent = h; head.appendChild(th); }
  const body = table.createTBody();
  const limit = 5000;
  for (const e of result.machine.trace.events.slice(0, limit)) {
    const tr = body.insertRow();
    tr.className = `kind-${e.kind}`;
    tr.insertCell().textContent = (e.timeNs / 1000).toFixed(3);
    tr.insertCell().textContent = e.kind;
    tr.insertCell().textContent = e.actor;
    tr.insertCell().textContent = e.name;
    tr.insertCell().textContent = Object.keys(e.args).map((k) => `${k}=${Trace.formatArg(k, e.args[k])}`).join(' ');
  }
  if (result.machine.trace.events.length > limit) body.insertRow().insertCell().textContent = `… ${result.machine.trace.events.length - limit} more events kept (wddm-fence run --json has them${result.machine.trace.dropped ? `; ${result.machine.trace.dropped} older ones were dropped, machine.limits.traceEvents` : ''})`;
}

async function runFromPage(): Promise<void> {
  const status = $('status');
  for (const id of ['problems-section', 'timeline-section', 'summary-section', 'trace-section']) $(id).hidden = true;
  status.textContent = 'running…';
  document.body.dataset.state = 'running';
  try {
    const picked = runnableScenarios().find((b) => b.name === ($('builtin') as HTMLSelectElement).value);
    const source = picked ? `scenarios/${picked.file}` : 'pasted scenario';
    const scenario = parseScenario(($('source') as HTMLTextAreaElement).value, source);
    const seedText = ($('seed') as HTMLInputElement).value.trim();
    const result = await runScenario(scenario, seedText ? { seed: Number(seedText), source } : { source });
    lastResult = result;
    const model = timelineModel(exportTimeline(result.machine));
    $('timeline-section').hidden = false; // visible first, so the drawing can take the page's width
    drawTimeline($('timeline') as unknown as SVGSVGElement, model);
    drawSummary(result);
    drawTrace(result);
    for (const id of ['timeline-section', 'summary-section', 'trace-section']) $(id).hidden = false;
    status.textContent = `${scenario.name}: ${result.machine.trace.events.length} trace events, ${result.passed ? 'passed' : 'failed'}`;
    document.body.dataset.state = result.passed ? 'passed' : 'failed';
  } catch (error) {
    const text = error instanceof ScenarioError ? error.problems.map((p) => formatProblem(error.source, p)).join('\n') : String((error as Error)?.stack ?? error);
    $('problems').textContent = text;
    $('problems-section').hidden = false;
    status.textContent = error instanceof ScenarioError ? 'invalid scenario' : 'error';
    document.body.dataset.state = 'invalid';
  }
}

async function runWorkers(): Promise<void> {
  const report = $('workers-report');
  const section = $('workers-section');
  section.dataset.state = 'running';
  report.textContent = 'running…';
  try {
    const r = await runWorkerStress({
      adapters: Number(($('worker-adapters') as HTMLInputElement).value) || 2,
      waitsPerConsumer: Number(($('worker-waits') as HTMLInputElement).value) || 200,
      lastValue: 400, doorbell: ($('worker-doorbell') as HTMLInputElement).checked, budgetMs: 60_000,
    });
    const ok = r.errors.length === 0 && r.torn === 0 && r.short === 0 && r.leftBlocked === 0 && r.finalValuesOk;
    report.textContent = workerStressText(r) + (ok ? 'invariants hold: no torn value, every wake saw its value, nothing left asleep, final values right\n' : 'INVARIANT BROKEN\n');
    section.dataset.state = ok ? 'passed' : 'failed';
    section.dataset.workers = String(r.workers);
    section.dataset.wakes = String(r.wakes);
  } catch (error) {
    report.textContent = String((error as Error)?.message ?? error);
    section.dataset.state = 'error';
  }
}

function init(): void {
  const select = $('builtin') as HTMLSelectElement;
  const source = $('source') as HTMLTextAreaElement;
  const builtins = runnableScenarios();
  for (const b of builtins) {
    const option = document.createElement('option');
    option.value = b.name;
    option.textContent = `${b.name}${b.scenario?.description ? ` — ${b.scenario.description.slice(0, 60)}` : ''}`;
    select.appendChild(option);
  }
  const pasted = document.createElement('option');
  pasted.value = '(pasted)';
  pasted.textContent = '(your own: paste it on the right)';
  select.appendChild(pasted);
  const pick = () => { const b = builtins.find((x) => x.name === select.value); if (b) source.value = b.text; };
  select.addEventListener('change', pick);
  source.addEventListener('input', () => { if (!builtins.some((b) => b.name === select.value && b.text === source.value)) select.value = '(pasted)'; });
  $('run').addEventListener('click', () => { void runFromPage(); });
  $('run-workers').addEventListener('click', () => { void runWorkers(); });
  $('download-trace').addEventListener('click', downloadTrace);
  const asked = scenarioFromAddress(location.search, builtins.map((b) => b.name));
  if (asked.scenario) select.value = asked.scenario;
  if (asked.seed !== undefined) ($('seed') as HTMLInputElement).value = asked.seed;
  pick();
  if (!crossOriginIsolated) {
    $('status').textContent = 'This page needs cross-origin isolation (COOP/COEP headers) for its shared WebAssembly memory: open it through `npm run web`.';
  }
  document.body.dataset.state = 'ready';
  if (asked.problem) {
    $('problems').textContent = asked.problem;
    $('problems-section').hidden = false;
    $('status').textContent = 'nothing ran';
    document.body.dataset.state = 'invalid';
  } else if (asked.scenario) {
    void runFromPage(); // ?scenario=NAME: run it as the page opens
  }
}

init();
