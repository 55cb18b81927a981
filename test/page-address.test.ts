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
