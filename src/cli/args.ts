// What the command line's commands share about arguments: a command printed for the user to run
// again (shellQuote), so it runs as printed.

/** One argument as a POSIX shell reads it back: as is when it is plain, else in single quotes. */
export function shellQuote(argument: string): string {
  if (/^[\w@%+=:,./-]+$/.test(argument)) return argument;
  return `'${argument.replace(/'/g, `'\\''`)}'`;
}

/** A command line to print: each argument quoted as a shell needs it. */
export const commandLine = (...args: string[]): string => args.map(shellQuote).join(' ');
