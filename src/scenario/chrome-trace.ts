// `wddm-fence run --trace out.json` writes a Chrome/Perfetto timeline through
// the project's timeline exporter (src/timeline.ts). This build does not have
// it yet; the command says so instead of writing a file of its own making.
import type { TraceEvent } from '../trace.js';

export const CHROME_TRACE_AVAILABLE = false;

export function chromeTraceJson(_events: readonly TraceEvent[]): string {
  throw new Error('--trace needs the Chrome/Perfetto timeline exporter (src/timeline.ts), which is not in this build yet; use --json for the raw trace');
}
