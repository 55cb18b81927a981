// The built-in reference driver as a driver module file: what `wddm-fence check-driver` loads
// when you point it at this file, and the shortest correct driver module there is.
//
//   node dist/cli.js check-driver examples/drivers/reference.mjs      # exits 0: every requirement passes
//
// A driver module exports createDriver(context) (docs/DRIVERS.md). The machine calls it once per
// adapter, with that adapter's simulated GPU (context.hardware), the core's GPU view
// (context.core) and the options it resolved (context.options); it returns a KernelModeDriver
// whose user-mode half is its `userMode` property. ReferenceDriver is exactly that.
//
// It imports the package by name: inside this repository through package self-reference (the
// "exports" of package.json name dist/wddm-fence.js, built by `npm run build`), in your own
// project once wddm-fence is installed.
import { ReferenceDriver } from 'wddm-fence';

/** Shown in reports and traces. */
export const name = 'reference';

export function createDriver(context) {
  return new ReferenceDriver(context.hardware, context.core, context.options);
}
