/** Where `npm run bench` writes (bench/output.mjs). */
export function outputFolder(args: { quick?: boolean; write?: boolean; out?: string }, benchDir: string): string;
