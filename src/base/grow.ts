// One way the flat tables grow: a typed array doubled until an index fits, what it held copied, the rest
// zero. The OS's and the reference driver's per-fence and per-waiter columns all grow this way, only
// when an id past their end first comes (never on a per-operation path).

type GrowableArray = Uint8Array | Uint32Array | Float64Array | BigUint64Array;

/** `array` itself when it holds `length` entries; else a copy doubled from its length (at least 1) until it does, the new entries zero. */
export function grownTo<T extends GrowableArray>(array: T, length: number): T {
  if (length <= array.length) return array;
  let capacity = Math.max(1, array.length);
  while (capacity < length) capacity *= 2;
  const grown = new (array.constructor as new (length: number) => T)(capacity);
  (grown as { set(source: T): void }).set(array);
  return grown;
}
