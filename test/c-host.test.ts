// The core outside JavaScript (examples/c-host): a C host built with wasm2c
// runs the documented ABI sequence and prints what the TypeScript host prints
// for the same sequence, byte for byte; it refuses a core of another ABI
// version or with a malformed layout. Where wasm2c or a C compiler is missing
// the C tests are skipped with a message saying what to install (.ci/run
// installs them in CI).
import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { compileCoreSync, instantiateCore, readLayout, CORE_ABI_VERSION } from '../src/core/bindings.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const run = (command: string, args: string[]) => spawnSync(command, args, { cwd: root, encoding: 'utf8', timeout: 120_000 });
const cHost = (...args: string[]) => run('bash', ['examples/c-host/run.sh', ...args]);
const twin = (...args: string[]) => run(process.execPath, ['examples/c-host/sequence.mjs', ...args]);

// run.sh decides what is missing (exit 77 and a list on stderr); building it once here also times nothing in the tests.
const first = cHost();
const missing = first.status === 77 ? first.stderr.trim() : '';
if (missing) {
  console.warn(`\n*** C host tests SKIPPED, the toolchain is missing ***\n${missing}\n`);
}
const withToolchain = missing ? it.skip : it;

describe('examples/c-host: the core driven from C through docs/ABI.md', () => {
  if (missing) it.skip(`C host not built or run: ${missing.split('\n').slice(1, -1).join('; ')} (apt-get install -y wabt gcc)`, () => {});

  withToolchain('NF-09 the C host (wasm2c, no JavaScript engine) prints exactly what the TypeScript host prints for the ABI sequence', () => {
    expect(first.stderr).not.toMatch(/error|refusing/);
    expect(first.status).toBe(0);
    const typescript = twin();
    expect(typescript.status, typescript.stderr).toBe(0);
    expect(first.stdout).toBe(typescript.stdout);
  });

  it('NF-09 the sequence\'s steps: MonitoredValue follows the smallest waited value, the CMP decides, the log holds every signal', () => {
    const out = twin();
    expect(out.status, out.stderr).toBe(0);
    const lines = out.stdout.split('\n');
    // NF-02: waiters for 5 then 3 move MonitoredValue to 4 then 2; a waiter for 8 leaves it.
    expect(lines).toContain('update-monitored fence=1 monitored=4 raised=0');
    expect(lines).toContain('update-monitored fence=1 monitored=2 raised=0');
    expect(lines).toContain('monitored-value fence=1 target=2 unchanged');
    // NF-05: signal 2 is not past MonitoredValue 2; signal 4 is, and names its queue (INT-05) and the fence's handle.
    expect(lines).toContain('engine-step now=1000 op=signal value=2 result=done current=2');
    expect(lines).toContain('engine-step now=2000 op=signal value=4 result=interrupt current=4');
    expect(lines).toContain('interrupt engine=0 line=1 queue=1 count=1 handle=0x51');
    // NF-11: a waiter for 6 when CurrentValue is 9: the CMP raises on the MonitoredValue update, naming no queue.
    expect(lines).toContain('update-monitored fence=1 monitored=5 raised=1');
    expect(lines).toContain('satisfied waiter=4 entry=0 completed=1');
    expect(lines).toContain('waiter-retire waiter=4 fences=0'); // its one block already left the heap: no fence to refresh
    expect(lines).toContain('interrupt engine=0 line=1 queue=0 count=1 handle=0x51');
    // LOG-04: three signal entries and one wait entry, after the flush.
    expect(lines.filter((l) => l.startsWith('log-entry type=signals'))).toHaveLength(3);
    expect(lines).toContain('log-entry type=waits slot=0 value=4 handle=0x77 operation=wait-unblocked observed=3000 end=3000');
    expect(lines.at(-2)).toBe('teardown free_pages=63 fences_live=0 all_pages_back=yes');
  });

  it('examples/c-host/README.md shows the output the sequence prints', () => {
    const readme = readFileSync(new URL('../examples/c-host/README.md', import.meta.url), 'utf8');
    const shown = /```text\n([\s\S]*?)```/.exec(readme);
    expect(shown?.[1]).toBe(twin().stdout);
  });

  it('the single-thread build (build/core-nothreads.wasm) runs the sequence through the TypeScript host exactly as the shipped build does', () => {
    const threads = twin(), single = twin('--core', 'nothreads');
    expect(single.status, single.stderr).toBe(0);
    expect(single.stdout).toBe(threads.stdout);
    const exportsOf = (module: WebAssembly.Module) => WebAssembly.Module.exports(module).map((e) => `${e.kind} ${e.name}`).sort();
    const singleModule = new WebAssembly.Module(readFileSync(new URL('../build/core-nothreads.wasm', import.meta.url)));
    expect(exportsOf(singleModule)).toEqual(exportsOf(compileCoreSync()));
  });

  it('the single-thread build keeps the word operations without sleeping: a finite wait times out at once, an unlimited one aborts with a message', () => {
    const module = new WebAssembly.Module(readFileSync(new URL('../build/core-nothreads.wasm', import.meta.url)));
    const memory = new WebAssembly.Memory({ initial: 2, maximum: 32768 });
    const core = instantiateCore(module, memory);
    const word = readLayout(core).staticReservedBytes;
    expect(core.fenceWordSignal(word, 5n)).toBe(0n);
    expect(core.fenceWordSignal(word, 3n)).toBe(5n); // never backwards: compare-and-swap to the larger value
    expect(new DataView(memory.buffer).getBigUint64(word, true)).toBe(5n);
    expect(core.fenceWordReached(word, 5n)).toBe(1);
    expect(core.fenceWordWait(word, 5n, -1n)).toBe(0);        // reached: returns at once, as in the threads build
    expect(core.fenceWordWait(word, 6n, 1_000_000n)).toBe(2); // not reached: nothing else can change it, timed out
    expect(() => core.fenceWordWait(word, 6n, -1n)).toThrow(/single-thread core: an unlimited wait on a word no other thread can change would never end/);
    expect(new DataView(memory.buffer).getBigUint64(word, true)).toBe(5n);
  });

  withToolchain('the C host refuses a core of another ABI version, naming both versions', () => {
    for (const args of [['--expect-abi-version', String(CORE_ABI_VERSION + 1)], ['--override', `ABI_VERSION=${CORE_ABI_VERSION + 1}`]]) {
      const r = cHost(...args);
      expect(r.status).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/refusing the core: it exports ABI_VERSION \d+; this host follows ABI version \d+/);
    }
  });

  withToolchain('the C host refuses a malformed layout before calling the core, naming the constants that disagree', () => {
    const log = cHost('--override', 'NATIVE_FENCE_LOG_ENTRIES=200');
    expect(log.status).toBe(2);
    expect(log.stdout).toBe('');
    expect(log.stderr).toContain('NATIVE_FENCE_LOG_ENTRIES (200) x NATIVE_FENCE_LOG_ENTRY_BYTES (48) = 9640 bytes');
    const headerBytes = readLayout(instantiateCore(compileCoreSync(), new WebAssembly.Memory({ initial: 1, maximum: 32768, shared: true }))).adapterHeaderBytes;
    const offset = cHost('--override', `ADAPTER_HEAP_POPS_OFFSET=${headerBytes - 3}`); // 8 bytes from there run past the header
    expect(offset.status).toBe(2);
    expect(offset.stderr).toContain(`ADAPTER_HEAP_POPS_OFFSET (${headerBytes - 3}) + 8 bytes runs past ADAPTER_HEADER_BYTES (${headerBytes})`);
    const status = cHost('--override', 'E_BAD_FENCE=7');
    expect(status.status).toBe(2);
    expect(status.stderr).toContain('status code E_BAD_FENCE is 7; status codes are negative');
  });

  withToolchain('the C host refuses a region header that is not the core\'s (wrong magic, other layout version), as regionCheck does', () => {
    const magic = cHost('--corrupt-region', 'magic');
    expect(magic.status).toBe(2);
    expect(magic.stderr).toContain('system region at 65536: magic 0x12345678 is not REGION_MAGIC 0x46444457 (regionCheck says E_BAD_REGION)');
    expect(magic.stdout).not.toContain('region kind=system');
    const version = cHost('--corrupt-region', 'version');
    expect(version.status).toBe(2);
    expect(version.stderr).toMatch(/system region at 65536: layout version \d+, the core lays out version \d+ \(regionCheck says E_BAD_VERSION\)/);
  });

  withToolchain('the C host decodes env.abort\'s AssemblyScript string: the single-thread core refuses an unlimited wait', () => {
    const r = cHost('--wait-forever');
    expect(r.status).toBe(70);
    expect(r.stderr).toContain('the core aborted: single-thread core: an unlimited wait on a word no other thread can change would never end');
  });

  it('the TypeScript host (readLayout) refuses a core of another ABI version', () => {
    const core = instantiateCore(compileCoreSync(), new WebAssembly.Memory({ initial: 1, maximum: 32768, shared: true }));
    expect(readLayout(core).abiVersion).toBe(CORE_ABI_VERSION);
    const other = { ...core, ABI_VERSION: new WebAssembly.Global({ value: 'i32', mutable: false }, CORE_ABI_VERSION + 1) };
    expect(() => readLayout(other)).toThrow(`core.wasm exports ABI_VERSION ${CORE_ABI_VERSION + 1}; this host follows ABI version ${CORE_ABI_VERSION}`);
    const { ABI_VERSION: _dropped, ...without } = core;
    expect(() => readLayout(without as typeof core)).toThrow('core.wasm exports no ABI_VERSION');
  });
});
