// deepFreeze: a value made unchangeable all the way down, for the few module-level caches of constant input (the
// built-in scenarios parsed once per process, the conformance suite's cases): every machine of a process may read
// them, so none may change them (test/isolation.test.ts is about the state machines do change).

/** Freezes `value` and every object reachable from it through own properties; returns it. */
export function deepFreeze<T>(value: T): T {
  const stack: unknown[] = [value];
  while (stack.length) {
    const item = stack.pop();
    if (item === null || typeof item !== 'object' || Object.isFrozen(item)) continue;
    Object.freeze(item);
    for (const key of Reflect.ownKeys(item)) stack.push((item as Record<string | symbol, unknown>)[key]);
  }
  return value;
}
