#!/usr/bin/env node
// The `wddm-fence` command (the package's bin). In a clone it first builds whatever is missing or
// older than its sources (scripts/ensure-built.mjs; the build's output goes to stderr, so stdout
// stays the command's own), then runs dist/cli.js; in the installed package there is nothing to
// build. So `npx wddm-fence …` works in a fresh clone after `npm install`, builds once, and reuses
// the build after that.
import { ensureBuilt } from '../scripts/ensure-built.mjs';

try {
  ensureBuilt({ stdio: ['ignore', 2, 2], announce: (line) => process.stderr.write(`${line}\n`) });
} catch (error) {
  process.stderr.write(`${error.message ?? error}\n`);
  process.exit(error.status ?? 1);
}
await import('../dist/cli.js');
