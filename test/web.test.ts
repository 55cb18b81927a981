// The page as a person uses it: `npm run web`'s server, headless Debian
// Chromium driven by playwright-core (never a downloaded browser), pick a
// scenario, run it, and check what is drawn. Saves screenshots under
// test/artifacts/. Without /usr/bin/chromium the tests are skipped, loudly.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findBuiltin, runScenario, timelineModel } from '../src/scenario-files/index.js';
import { exportTimeline } from '../src/index.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
const ROOT = join(__dirname, '..');
const ARTIFACTS = join(ROOT, 'test', 'artifacts');

if (!haveChromium) {
  const line = '!'.repeat(78);
  console.warn(`\n${line}\n!! BROWSER TESTS SKIPPED: no Chromium at ${CHROMIUM}.\n!! Install Debian's Chromium to run them:  apt-get install -y chromium\n!! (playwright-core drives it; no browser is ever downloaded.)\n${line}\n`);
}

describe.skipIf(!haveChromium)('the page in headless Chromium', () => {
  let server: ChildProcess;
  let url = '';
  let userDataDir = '';
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let context: any;

  beforeAll(async () => {
    server = spawn(process.execPath, [join(ROOT, 'scripts', 'serve-web.mjs'), '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    url = await new Promise<string>((resolve, reject) => {
      server.stdout!.on('data', (chunk: Buffer) => { const m = /http:\/\/\S+\//.exec(String(chunk)); if (m) resolve(m[0]); });
      server.on('exit', (code) => reject(new Error(`web server exited with ${code}`)));
    });
    const { chromium } = await import('playwright-core');
    userDataDir = mkdtempSync(join(tmpdir(), 'wddm-fence-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM, headless: true, viewport: { width: 1400, height: 1000 },
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
    });
    mkdirSync(ARTIFACTS, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    server?.kill();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  });

  it('page is served cross-origin isolated', async () => {
    const response = await fetch(url);
    expect(response.headers.get('cross-origin-opener-policy')).toBe('same-origin');
    expect(response.headers.get('cross-origin-embedder-policy')).toBe('require-corp');
    const page = await context.newPage();
    await page.goto(url);
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    await page.close();
  });

  it('the library bundle (dist/wddm-fence.js) runs unchanged in the browser: a machine, a fence, a GPU signal, a woken wait', async () => {
    const page = await context.newPage();
    await page.goto(url);
    // A string, so vitest does not rewrite the import() for its own loader.
    const result = await page.evaluate(`(async () => {
      const lib = await import('/wddm-fence.js');
      const machine = await lib.createMachine({ seed: 3 });
      const app = machine.createProcess('app');
      const hDevice = app.createDevice({ hAdapter: app.openAdapter(0) });
      const fence = app.createNativeFence({ hDevice });
      const queue = app.createHwQueue({ hDevice });
      const waited = app.waitAsync({ objects: [fence.hSyncObject], values: [1n] });
      app.submit({ hHwQueue: queue.hHwQueue, commands: [{ signal: { hSyncObject: fence.hSyncObject, value: 1n } }] });
      machine.run();
      const r = await waited;
      return { status: r.status, value: String(app.readFenceValue(fence.hSyncObject)), interrupts: machine.summary().adapters[0].interruptsRaised };
    })()`);
    expect(result).toEqual({ status: 'SUCCESS', value: '1', interrupts: 1 });
    await page.close();
  });

  it('page runs the demo: tracks, arrows, interrupt marks and the summary numbers match the model', async () => {
    const expected = await runScenario(findBuiltin('demo')!.scenario!);
    const model = timelineModel(exportTimeline(expected.machine));
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e: Error) => errors.push(e.message));
    await page.goto(`${url}?scenario=demo`); // the address runs it as the page opens
    await page.waitForSelector('body[data-state="passed"]', { timeout: 30_000 });
    expect(errors).toEqual([]);
    expect(await page.$eval('#builtin', (s: HTMLSelectElement) => s.value)).toBe('demo');
    const tracks = await page.$$eval('#timeline g.track', (nodes: Element[]) => nodes.map((n) => n.getAttribute('data-track')));
    expect(tracks).toEqual(['gpu0/producer', 'gpu0/consumer', 'gpu0/interrupts', 'cpu/app:presenter']);
    expect(await page.$$eval('#timeline path.arrow', (n: Element[]) => n.length)).toBe(model.arrows.length);
    expect(model.arrows.length).toBe(6);
    expect(await page.$$eval('#timeline rect.slice', (n: Element[]) => n.length)).toBe(model.slices.length);
    expect(await page.$$eval('#timeline .mark-interrupt', (n: Element[]) => n.length)).toBe(1);
    const summary = await page.$eval('#summary', (n: HTMLElement) => ({ ...n.dataset }));
    expect(summary).toMatchObject({ passed: 'true', interrupts: '1', gpuSignals: '6' });
    const numbers = await page.$$eval('#summary-numbers tr', (rows: HTMLTableRowElement[]) => Object.fromEntries(rows.map((r) => [r.cells[0].textContent, r.cells[1].textContent])));
    const s = expected.machine.summary();
    expect(numbers).toMatchObject({ 'interrupts raised': '1', 'waiters woken': String(s.os.waitersWoken), 'waits timed out': '1', 'waits satisfied at once': '1', 'bug checks': '0' });
    expect(await page.$$eval('#expectations tr.ok', (n: Element[]) => n.length)).toBe(12); // the demo's 11 and the implicit "nothing stuck"
    expect(await page.$('#stuck-report')).toBeNull();
    expect(await page.$$eval('#trace tbody tr', (n: Element[]) => n.length)).toBe(expected.machine.trace.events.length);
    await page.screenshot({ path: join(ARTIFACTS, 'page-demo.png'), fullPage: true });
    // the timeline download is the exporter's Chrome JSON
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-trace')]);
    expect(download.suggestedFilename()).toBe('demo.trace.json');
    const saved = join(ARTIFACTS, 'demo.trace.json');
    await download.saveAs(saved);
    expect(JSON.parse(readFileSync(saved, 'utf8')).traceEvents.length).toBeGreaterThan(0);
    await page.close();
  }, 60_000);

  it('page loads with no console error and no failed request (its icon too), and a short run\'s time axis reads in ns, every label different', async () => {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m: { type(): string; text(): string }) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
    page.on('pageerror', (e: Error) => problems.push(`page: ${e.message}`));
    page.on('response', (r: { status(): number; url(): string }) => { if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`); });
    page.on('requestfailed', (r: { url(): string }) => problems.push(`failed ${r.url()}`));
    await page.goto(`${url}?scenario=interrupt-payload`);
    await page.waitForSelector('body[data-state="passed"]', { timeout: 30_000 });
    // the icon the page names, and where a browser looks by default
    expect(await page.$eval('link[rel="icon"]', (l: HTMLLinkElement) => l.href)).toBe(`${url}favicon.svg`);
    expect((await fetch(`${url}favicon.ico`)).status).toBe(200);
    await page.fill('#source', `name: short
machine: { adapters: [ { name: gpu0 } ] }
processes: [ { name: app } ]
fences: [ { name: f, process: app, adapter: gpu0 } ]
queues:
  - { name: q, process: app, adapter: gpu0, commands: [ { work: { durationNs: 40 } }, { signal: { fence: f, value: 1 } } ] }
`);
    await page.click('#run');
    await page.waitForFunction(() => document.body.dataset.state === 'passed' && document.querySelector('#status')?.textContent?.startsWith('short'), undefined, { timeout: 30_000 });
    const labels = await page.$$eval('#timeline g.axis text', (n: Element[]) => n.map((t) => t.textContent));
    expect(labels.length).toBeGreaterThan(2);
    expect(new Set(labels).size).toBe(labels.length);
    expect(labels.every((l: string | null) => / ns$/.test(l ?? ''))).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);

  it('page runs cross-adapter scenario 1: a track per queue per adapter, the arrow from the dGPU signal to the iGPU wait, the summary numbers', async () => {
    const expected = await runScenario(findBuiltin('scenario-1')!.scenario!);
    const page = await context.newPage();
    await page.goto(`${url}?scenario=scenario-1`);
    await page.waitForSelector('body[data-state="passed"]', { timeout: 30_000 });
    const tracks = await page.$$eval('#timeline g.track', (nodes: Element[]) => nodes.map((n) => n.getAttribute('data-track')));
    // the iGPU's Dxgkrnl track shows the cross-adapter value arriving (XA-04), as Perfetto does
    expect(tracks).toEqual(['iGPU/iGPU.wait', 'iGPU/interrupts', 'dGPU/dGPU.signal', 'dGPU/interrupts', 'cpu/app:cpuWaiter']);
    // two arrows from the dGPU's signal: to the iGPU's GPU wait (across adapters) and to the CPU waiter
    expect(await page.$$eval('#timeline path.arrow', (n: Element[]) => n.map((a) => a.getAttribute('data-fence')))).toEqual(['hFence', 'hFence']);
    const s = expected.machine.summary();
    const numbers = await page.$$eval('#summary-numbers tr', (rows: HTMLTableRowElement[]) => Object.fromEntries(rows.map((r) => [r.cells[0].textContent, r.cells[1].textContent])));
    expect(numbers).toMatchObject({ 'GPU signals': '1', 'interrupts raised': '1', 'interrupts handled': String(s.os.interruptsHandled), 'waiters woken': '1', 'bug checks': '0' });
    expect(await page.$$eval('#expectations tr.fail', (n: Element[]) => n.length)).toBe(0);
    await page.screenshot({ path: join(ARTIFACTS, 'page-scenario-1.png'), fullPage: true });
    await page.close();
  }, 60_000);

  it('page runs worker mode: the adapters in Web Workers over the shared memory, invariants hold', async () => {
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e: Error) => errors.push(e.message));
    await page.goto(url);
    await page.waitForSelector('body[data-state="ready"]');
    await page.click('#run-workers');
    await page.waitForFunction(() => { const s = document.getElementById('workers-section')!.dataset.state; return s && s !== 'running'; }, undefined, { timeout: 90_000 });
    const state = await page.$eval('#workers-section', (n: HTMLElement) => ({ ...n.dataset }));
    const report = await page.textContent('#workers-report');
    expect(errors).toEqual([]);
    expect(state.state, report ?? '').toBe('passed');
    expect(Number(state.workers)).toBeGreaterThanOrEqual(4); // 2 adapters × (1 producer + 2 consumers)
    expect(report).toMatch(/torn=0 short=0 leftBlocked=0 finalValuesOk=true/);
    await page.close();
  }, 120_000);

  it('page ?scenario=NAME&seed=N runs that built-in scenario with that seed as it opens; an unknown name runs nothing and says why', async () => {
    const page = await context.newPage();
    await page.goto(`${url}?scenario=cross-process&seed=7`);
    await page.waitForSelector('body[data-state="passed"]', { timeout: 30_000 });
    const numbers = await page.$$eval('#summary-numbers tr', (rows: HTMLTableRowElement[]) => Object.fromEntries(rows.map((r) => [r.cells[0].textContent, r.cells[1].textContent])));
    expect(numbers.seed).toBe('7');
    expect(await page.$eval('#builtin', (s: HTMLSelectElement) => s.value)).toBe('cross-process');
    await page.goto(`${url}?scenario=nosuch`);
    await page.waitForSelector('body[data-state="invalid"]');
    expect(await page.textContent('#problems')).toMatch(/the page's address asks for scenario="nosuch"; expected one of the built-in scenarios: demo, /);
    expect(await page.isHidden('#timeline-section')).toBe(true);
    await page.close();
  }, 60_000);

  it('page shows every problem of a pasted invalid scenario with its line, and runs nothing', async () => {
    const page = await context.newPage();
    await page.goto(url);
    await page.waitForSelector('body[data-state="ready"]');
    await page.fill('#source', 'name: pasted\nmachine: { adapters: [ { name: gpu0 } ] }\nprocesses: [ { name: app } ]\nfences: [ { name: f, process: app, adapter: gpu9 } ]\n');
    await page.click('#run');
    await page.waitForSelector('body[data-state="invalid"]');
    const text = await page.textContent('#problems');
    expect(text).toMatch(/pasted scenario:4:\d+: fences\[0\]\.adapter is "gpu9"; expected the name of one of the adapters \("gpu0"\)/);
    expect(await page.isHidden('#timeline-section')).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, 'page-invalid.png') });
    await page.close();
  }, 60_000);

  it('page shows a run that ends stuck as FAILED, with the stuck report and the deadlock cycle; expected, it passes', async () => {
    const stuck = 'name: pasted\nmachine: { adapters: [ { name: gpu0, engines: 2 } ] }\nprocesses: [ { name: app } ]\n' +
      'fences: [ { name: x, process: app, adapter: gpu0 }, { name: y, process: app, adapter: gpu0 } ]\nqueues:\n' +
      '  - { name: a, process: app, adapter: gpu0, engine: 0, commands: [ { wait: { fence: x, value: 1 } }, { signal: { fence: y, value: 1 } } ] }\n' +
      '  - { name: b, process: app, adapter: gpu0, engine: 1, commands: [ { wait: { fence: y, value: 1 } }, { signal: { fence: x, value: 1 } } ] }\n';
    const page = await context.newPage();
    await page.goto(url);
    await page.waitForSelector('body[data-state="ready"]');
    await page.fill('#source', stuck);
    await page.click('#run');
    await page.waitForSelector('body[data-state="failed"]', { timeout: 30_000 });
    expect(await page.textContent('#verdict')).toMatch(/^FAILED: 2 expectation\(s\) did not hold/);
    expect(await page.$eval('#summary', (n: HTMLElement) => ({ ...n.dataset }))).toMatchObject({ passed: 'false', stuck: 'true', deadlocks: '1' });
    const report = await page.textContent('#stuck-report');
    expect(report).toContain('STUCK: 2 queues blocked, 0 CPU waiters pending, 0 CPU threads unfinished, 1 deadlock');
    expect(report).toContain('queue gpu0/a waits for x >= 1 (CurrentValue 0); that would come from queue gpu0/b');
    expect(await page.getAttribute('#stuck-report', 'class')).toBe('stuck deadlock');
    await page.screenshot({ path: join(ARTIFACTS, 'page-stuck.png'), fullPage: true });
    await page.fill('#source', stuck + 'expect: { deadlock: true }\n');
    await page.click('#run');
    await page.waitForSelector('body[data-state="passed"]', { timeout: 30_000 });
    expect(await page.textContent('#stuck-report')).toContain('deadlock (a cycle of 2)');
    await page.close();
  }, 60_000);

  it('page runs every built-in scenario and each passes', async () => {
    const page = await context.newPage();
    await page.goto(url);
    await page.waitForSelector('body[data-state="ready"]');
    const names: string[] = await page.$$eval('#builtin option', (o: HTMLOptionElement[]) => o.map((x) => x.value).filter((v) => v !== '(pasted)'));
    expect(names.length).toBeGreaterThanOrEqual(4);
    for (const name of names) {
      await page.selectOption('#builtin', name);
      await page.click('#run');
      await page.waitForFunction(() => document.body.dataset.state !== 'running');
      expect(await page.evaluate(() => document.body.dataset.state), name).toBe('passed');
      await page.screenshot({ path: join(ARTIFACTS, `page-${name}.png`), fullPage: true });
    }
    await page.close();
  }, 120_000);
});
