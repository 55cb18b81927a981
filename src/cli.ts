// The wddm-fence command's entry (dist/cli.js, the package's bin): the
// process's streams and exit code around runCli (src/cli/main.ts).
import { runCli } from './cli/main.js';

process.stdout.on('error', (error: NodeJS.ErrnoException) => { if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0); else throw error; });

runCli(process.argv.slice(2), {
  out: (text) => { process.stdout.write(text); },
  err: (text) => { process.stderr.write(text); },
  isTTY: process.stderr.isTTY === true,
}).then((code) => { process.exitCode = code; });
