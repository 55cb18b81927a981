// examples/explore-shards/: one exhaustive search run as shards by GNU parallel (and written for
// a CI matrix, a Kubernetes Indexed Job and a Slurm array), merged, equal to one process.
import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

const root = join(__dirname, '..');
const folder = join(root, 'examples', 'explore-shards');
const cli = join(root, 'dist', 'cli.js');
const hasParallel = spawnSync('parallel', ['--version'], { encoding: 'utf8' }).status === 0;
if (!hasParallel) console.warn('examples/explore-shards: GNU parallel is not installed (apt-get install -y parallel; .ci/run installs it): the run-parallel.sh test is skipped');

const explore = (...args: string[]) => spawnSync(process.execPath, [cli, 'explore', ...args], { encoding: 'utf8', cwd: root });

describe('examples/explore-shards', () => {
  it.skipIf(!hasParallel)('run-parallel.sh: four shards through GNU parallel, merged, equal one process (states, verdict, counterexample length)', () => {
    for (const args of [['--fences', '2', '--signals', '3'], ['--variant', 'no-barrier'], ['scenario-2b', '--untimed']]) {
      const one = explore(...args, '--json', '--out', join(mkdtempSync(join(tmpdir(), 'wddm-one-')), 'c.json'));
      const shardsDir = mkdtempSync(join(tmpdir(), 'wddm-shards-'));
      const run = spawnSync(join(folder, 'run-parallel.sh'), ['4', ...args, '--json'], {
        encoding: 'utf8', cwd: shardsDir, env: { ...process.env, WDDM_FENCE: `${process.execPath} ${cli}`, SHARDS_DIR: shardsDir },
      });
      expect(run.status, `${args.join(' ')}: ${run.stderr}`).toBe(one.status);
      const a = JSON.parse(one.stdout), b = JSON.parse(run.stdout);
      expect(b.merged.shards).toBe(4);
      expect(b.search.states, args.join(' ')).toBe(a.search.states);
      expect(b.search.quietStates).toBe(a.search.quietStates);
      expect(b.search.complete).toBe(true);
      expect(b.invariants.map((i: { violated: boolean }) => i.violated)).toEqual(a.invariants.map((i: { violated: boolean }) => i.violated));
      expect(b.counterexample?.steps ?? null).toBe(a.counterexample?.steps ?? null);
    }
  });

  it.skipIf(!hasParallel)('run-parallel.sh: a shard that cannot run fails the search with exit 2 and its message', () => {
    const run = spawnSync(join(folder, 'run-parallel.sh'), ['2', '--fences', '99'], { encoding: 'utf8', env: { ...process.env, WDDM_FENCE: `${process.execPath} ${cli}` } });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/--fences is "99"; expected an integer from 1 to/);
    expect(run.stderr).toMatch(/2 shard\(s\) could not run/);
    const usage = spawnSync(join(folder, 'run-parallel.sh'), ['four'], { encoding: 'utf8' });
    expect(usage.status).toBe(2);
    expect(usage.stderr).toMatch(/usage: .* N \[explore arguments…\]/);
  });

  it('the CI matrix, the Indexed Job and the Slurm array run the same shard and merge commands, for 4 shards', () => {
    const actions = parseAllDocuments(readFileSync(join(folder, 'github-actions.yml'), 'utf8')).map((d) => d.toJS());
    expect(actions).toHaveLength(1);
    const jobs = actions[0].jobs;
    expect(jobs.shard.strategy.matrix.index).toEqual([1, 2, 3, 4]);
    expect(jobs.shard.strategy['fail-fast']).toBe(false);
    const shardRun = jobs.shard.steps.map((s: { run?: string }) => s.run ?? '').join('\n');
    expect(shardRun).toMatch(/wddm-fence explore \$EXPLORE_ARGS --shard \$\{\{ matrix\.index \}\}\/\$SHARDS --report shard-\$\{\{ matrix\.index \}\}-of-\$SHARDS\.json/);
    expect(jobs.merge.needs).toBe('shard');
    expect(jobs.merge.steps.map((s: { run?: string }) => s.run ?? '').join('\n')).toMatch(/wddm-fence explore --merge reports\/shard-\*\.json/);

    const kube = parseAllDocuments(readFileSync(join(folder, 'kubernetes-job.yaml'), 'utf8')).map((d) => d.toJS());
    expect(kube.map((k) => k.kind)).toEqual(['Job', 'Job']);
    expect(kube[0].spec.completionMode).toBe('Indexed');
    expect(kube[0].spec.completions).toBe(4);
    expect(kube[0].spec.template.spec.containers[0].command[2]).toMatch(/--shard \$\(\(JOB_COMPLETION_INDEX \+ 1\)\)\/4 --report \/reports\/shard-\$\(\(JOB_COMPLETION_INDEX \+ 1\)\)-of-4\.json/);
    expect(kube[1].spec.template.spec.containers[0].command[2]).toMatch(/wddm-fence explore --merge \/reports\/shard-\*-of-4\.json/);

    const slurm = readFileSync(join(folder, 'slurm-array.sh'), 'utf8');
    expect(slurm).toMatch(/^#SBATCH --array=1-4$/m);
    expect(slurm).toMatch(/--shard "\$SLURM_ARRAY_TASK_ID\/\$SHARDS" --report "shard-\$SLURM_ARRAY_TASK_ID-of-\$SHARDS\.json"/);
    expect(slurm).toMatch(/--dependency=afterany:"\$SLURM_ARRAY_JOB_ID"/);
    for (const script of ['slurm-array.sh', 'run-parallel.sh']) expect(spawnSync('bash', ['-n', join(folder, script)]).status, script).toBe(0);
    // Their shard and merge options are the command's: a shard of each form runs here.
    const dir = mkdtempSync(join(tmpdir(), 'wddm-forms-'));
    for (let i = 1; i <= 2; i++) expect([0, 1]).toContain(explore('scenario-2a', '--shard', `${i}/2`, '--report', join(dir, `shard-${i}-of-2.json`)).status);
    expect(explore('--merge', join(dir, 'shard-1-of-2.json'), join(dir, 'shard-2-of-2.json')).status).toBe(0);
  });

  it('README.md names every file of the folder and the test', () => {
    const readme = readFileSync(join(folder, 'README.md'), 'utf8');
    for (const file of ['run-parallel.sh', 'github-actions.yml', 'kubernetes-job.yaml', 'slurm-array.sh', 'test/examples-explore-shards.test.ts']) expect(readme).toContain(file);
  });
});
