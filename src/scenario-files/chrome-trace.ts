// `wddm-fence run --timeline out.json` writes a Chrome/Perfetto timeline through
// the project's timeline exporter (src/timeline/timeline.ts, LOG-08).
import type { Machine } from '../machine/machine.js';
import { exportTimeline } from '../timeline/timeline.js';

export const CHROME_TRACE_AVAILABLE = true;

export function chromeTraceJson(machine: Machine): string {
  return JSON.stringify(exportTimeline(machine)) + '\n';
}
