// What the command line's commands share about arguments: reading them (parseArguments, every
// usage error in the tool's own words, naming the option and what was expected), and a command
// printed for the user to run again (shellQuote), so it runs as printed.

/** One option of a command: a flag, or an option that takes a value (`--seed N`, `--seed=N`). */
export interface OptionSpec {
  type: 'boolean' | 'string';
  /** A one-letter form (`-h`). */
  short?: string;
  /** What the value is, for messages (`N`, `OUT.json`); default VALUE. */
  value?: string;
}

export type OptionValues<O extends Record<string, OptionSpec>> = { [K in keyof O]?: O[K]['type'] extends 'boolean' ? boolean : string };

/** A usage error found while reading the arguments: the message says what was wrong and what was expected. */
export class ArgumentError extends Error {}

/**
 * Reads `argv` (the arguments after the command) against the command's options: flags, options
 * with a value (the next argument, whatever it looks like — `--seed -1` gives "-1", for the
 * command to judge — unless it is one of the command's own options), `--name=value`, and `--`
 * (everything after it is an argument). Refused, each with an ArgumentError: an option the command
 * does not have, a flag given a value, an option without its value, an option given twice, more
 * arguments than `maxPositionals`. `renamed` maps an option's old name to the message that says
 * where it went.
 */
export function parseArguments<O extends Record<string, OptionSpec>>(
  command: string, argv: readonly string[], options: O, { maxPositionals = Infinity, renamed = {} }: { maxPositionals?: number; renamed?: Record<string, string> } = {},
): { values: OptionValues<O>; positionals: string[] } {
  const byName = new Map<string, string>();
  for (const [name, spec] of Object.entries(options)) {
    byName.set(`--${name}`, name);
    if (spec.short) byName.set(`-${spec.short}`, name);
  }
  const isOption = (argument: string) => byName.has(argument.split('=')[0]);
  const known = () => Object.keys(options).map((name) => `--${name}`).join(', ');
  const values: Record<string, string | boolean> = {};
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const argument = argv[i];
    if (argument === '--') { positionals.push(...argv.slice(i + 1)); break; }
    if (!argument.startsWith('-') || argument === '-') { positionals.push(argument); continue; }
    const equals = argument.startsWith('--') ? argument.indexOf('=') : -1;
    const written = equals < 0 ? argument : argument.slice(0, equals);
    const name = byName.get(written);
    if (name === undefined && Object.hasOwn(renamed, written)) throw new ArgumentError(renamed[written]);
    if (name === undefined) throw new ArgumentError(`unknown option ${written}; the options of ${command} are ${known()}`);
    const spec = options[name];
    const shown = `--${name}`;
    if (values[name] !== undefined) throw new ArgumentError(`${shown} is given twice; expected it once`);
    if (spec.type === 'boolean') {
      if (equals >= 0) throw new ArgumentError(`${shown} takes no value (it was given "${argument.slice(equals + 1)}"); expected ${shown} alone`);
      values[name] = true;
      continue;
    }
    if (equals >= 0) { values[name] = argument.slice(equals + 1); continue; }
    const next = argv[i + 1];
    if (next === undefined || isOption(next)) {
      throw new ArgumentError(`${shown} needs a value${next === undefined ? '' : ` (the next argument, ${next}, is an option)`}; expected ${spec.value ? `${shown} ${spec.value}` : `${shown} followed by its value`}`);
    }
    values[name] = next;
    i++;
  }
  if (positionals.length > maxPositionals) {
    throw new ArgumentError(maxPositionals === 0 ? `${command} takes no arguments besides its options; got "${positionals[0]}"`
      : `unexpected argument "${positionals[maxPositionals]}"; ${command} takes ${maxPositionals === 1 ? 'one argument' : `${maxPositionals} arguments`}`);
  }
  return { values: values as OptionValues<O>, positionals };
}

/** One argument as a POSIX shell reads it back: as is when it is plain, else in single quotes. */
export function shellQuote(argument: string): string {
  if (/^[\w@%+=:,./-]+$/.test(argument)) return argument;
  return `'${argument.replace(/'/g, `'\\''`)}'`;
}

/** A command line to print: each argument quoted as a shell needs it. */
export const commandLine = (...args: string[]): string => args.map(shellQuote).join(' ');
