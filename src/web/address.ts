// What the page's address asks for, read apart from the DOM (so it is tested
// in Node): `?scenario=NAME` runs that built-in scenario as the page opens,
// `&seed=N` with that seed: links and screenshots of a given run.

export interface AddressRequest {
  /** The built-in scenario to run at once. */
  scenario?: string;
  /** The seed to run it with (decimal text, 0 … 4294967295). */
  seed?: string;
  /** Why the address cannot be followed (shown on the page; nothing runs). */
  problem?: string;
}

export function scenarioFromAddress(search: string, builtins: readonly string[]): AddressRequest {
  const params = new URLSearchParams(search);
  const scenario = params.get('scenario');
  const seed = params.get('seed');
  if (scenario === null) return {};
  if (!builtins.includes(scenario)) {
    return { problem: `the page's address asks for scenario=${JSON.stringify(scenario)}; expected one of the built-in scenarios: ${builtins.join(', ')}` };
  }
  if (seed !== null && (!/^\d{1,10}$/.test(seed) || Number(seed) > 0xffff_ffff)) {
    return { problem: `the page's address asks for seed=${JSON.stringify(seed)}; expected an integer from 0 to 4294967295` };
  }
  return { scenario, ...(seed !== null ? { seed } : {}) };
}
