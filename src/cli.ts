// The wddm-fence command's entry (dist/cli.js, the package's bin): the
// process's streams and exit code around runCli (src/cli/main.ts). The same
// file is the entry of the explorer's worker threads (explore --random
// --workers N): started with workerData { explorerSwarmJob }, it runs that job
// and posts its tally back; with { explorerShardArgv } (explore --workers N of the
// exhaustive search), it runs that shard, which writes its report, and posts its exit code.
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { runCli } from './cli/main.js';
import { runJob, type SwarmJob, type SwarmTally } from './explore/swarm.js';
import { exploreCommand } from './cli/explore.js';

if (!isMainThread && workerData?.explorerSwarmJob) {
  parentPort!.postMessage(runJob(workerData.explorerSwarmJob as SwarmJob));
} else if (!isMainThread && workerData?.explorerShardArgv) {
  // A shard of explore --workers N: it writes its report; its output is the parent's to give (errors go to stderr).
  void exploreCommand({ out: () => {}, err: (text) => { process.stderr.write(text); }, sharedVisited: workerData.sharedVisited as SharedArrayBuffer },
    workerData.explorerShardArgv as string[]).then((code) => parentPort!.postMessage(code));
} else {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => { if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0); else throw error; });

  runCli(process.argv.slice(2), {
    out: (text) => { process.stdout.write(text); },
    err: (text) => { process.stderr.write(text); },
    isTTY: process.stderr.isTTY === true,
    startWorker: (job) => new Promise<SwarmTally>((done, fail) => {
      const worker = new Worker(new URL(import.meta.url), { workerData: { explorerSwarmJob: job } });
      worker.once('message', (tally: SwarmTally) => { done(tally); void worker.terminate(); });
      worker.once('error', fail);
      worker.once('exit', (code) => { if (code !== 0) fail(new Error(`explorer worker exited with code ${code}`)); });
    }),
    startShard: (argv, sharedVisited) => new Promise<number>((done, fail) => {
      const worker = new Worker(new URL(import.meta.url), { workerData: { explorerShardArgv: argv, sharedVisited } });
      worker.once('message', (code: number) => { done(code); void worker.terminate(); });
      worker.once('error', fail);
      worker.once('exit', (code) => { if (code !== 0) fail(new Error(`explorer shard worker exited with code ${code}`)); });
    }),
  }).then((code) => { process.exitCode = code; });
}
