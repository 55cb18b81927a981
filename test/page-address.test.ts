// The page's address (`?scenario=NAME&seed=N`), read without a browser.
import { it, expect } from 'vitest';
import { scenarioFromAddress } from '../src/web/address.js';

const NAMES = ['demo', 'scenario-1'];

it('page the address ?scenario=NAME runs that built-in scenario (with &seed=N), and says why it cannot otherwise', () => {
  expect(scenarioFromAddress('', NAMES)).toEqual({});
  expect(scenarioFromAddress('?seed=4', NAMES)).toEqual({});
  expect(scenarioFromAddress('?scenario=demo', NAMES)).toEqual({ scenario: 'demo' });
  expect(scenarioFromAddress('?scenario=scenario-1&seed=4294967295', NAMES)).toEqual({ scenario: 'scenario-1', seed: '4294967295' });
  expect(scenarioFromAddress('?scenario=nosuch', NAMES).problem).toBe('the page\'s address asks for scenario="nosuch"; expected one of the built-in scenarios: demo, scenario-1');
  for (const seed of ['-1', 'abc', '4294967296', '1e3', '']) {
    expect(scenarioFromAddress(`?scenario=demo&seed=${seed}`, NAMES).problem, seed).toBe(`the page's address asks for seed=${JSON.stringify(seed)}; expected an integer from 0 to 4294967295`);
  }
});

it('page the time axis picks its unit and step from the span: round steps, labels that all differ', async () => {
  const { timeTicks } = await import('../src/web/axis.js');
  const labels = (spanNs: number) => timeTicks(spanNs).map((t) => t.label);
  expect(labels(40)).toEqual(['0 ns', '5 ns', '10 ns', '15 ns', '20 ns', '25 ns', '30 ns', '35 ns', '40 ns']);
  expect(labels(3100)).toEqual(['0.0 us', '0.5 us', '1.0 us', '1.5 us', '2.0 us', '2.5 us', '3.0 us']);
  expect(labels(1)).toEqual(['0 ns', '1 ns']);
  expect(labels(250_000_000)).toEqual(['0 ms', '50 ms', '100 ms', '150 ms', '200 ms', '250 ms']);
  for (const span of [1, 7, 99, 101, 999, 1000, 1001, 4105, 12_345, 999_999, 10 ** 7, 3.3e9, 9007199254740991]) {
    const ticks = timeTicks(span);
    expect(ticks.length, String(span)).toBeGreaterThanOrEqual(2);
    expect(ticks.length, String(span)).toBeLessThanOrEqual(11);
    expect(new Set(ticks.map((t) => t.label)).size, String(span)).toBe(ticks.length);
    expect(ticks.at(-1)!.ns, String(span)).toBeLessThanOrEqual(span);
  }
});
