// An interface's optional faster form of a method (a driver's typed or one-fence entry point) is used only where the
// implementer wrote it together with the method it stands in for: on the same object of the prototype chain. A
// subclass or an instance that overrides only the plain method (a test's spy, a wrapper) is then called through its
// override, never around it by an inherited fast form it did not write.

/** True when `object[formKey]` is a function defined on the same object of `object`'s prototype chain as `object[methodKey]`. */
export function hasFormBeside(object: object, formKey: string, methodKey: string): boolean {
  if (typeof (object as Record<string, unknown>)[formKey] !== 'function') return false;
  return definer(object, formKey) === definer(object, methodKey);
}

/** The object of `object`'s prototype chain that holds `key` as its own property, or null. */
function definer(object: object, key: string): object | null {
  for (let at: object | null = object; at !== null; at = Object.getPrototypeOf(at)) {
    if (Object.prototype.hasOwnProperty.call(at, key)) return at;
  }
  return null;
}
