// Where `npm run bench` writes results.json and scaling.svg: a full run
// writes the tracked bench/ files (the README's figures); a quick run writes
// bench/out/ (ignored by git) so a quick look never replaces them, unless
// --out DIR names a folder or --write asks for bench/ itself.
import { join } from 'node:path';

/** @param {{ quick?: boolean, write?: boolean, out?: string }} args  @param {string} benchDir */
export function outputFolder(args, benchDir) {
  if (args.out !== undefined) return args.out;
  return args.quick && !args.write ? join(benchDir, 'out') : benchDir;
}
