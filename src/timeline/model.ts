// The timeline the browser page draws: a projection of the one timeline
// exportTimeline builds (timeline.ts), not a second builder. Every track,
// slice, arrow and mark the page shows is an event of the Chrome JSON trace
// Perfetto opens, read back:
//
//   thread_name (M)            → a track: `${process}/${thread}` ("gpu0/producer",
//                                "gpu0/interrupts" for the Dxgkrnl thread, "cpu/app:presenter")
//   X, cat work|wait|signal|cpu-wait|cpu-signal → a slice (ts, dur in µs back to ns)
//   X, cat flow (flow_out / flow_in, one bind_id) → an arrow from the slice just before
//                                the flow_out to the slice just before the flow_in
//                                (the exporter writes each flow right after its slice)
//   i                          → a mark: interrupts, faults and violations, notes
//
// So the page shows what Perfetto shows, by the same rules (which signal
// unblocked a wait: unblocked-by.ts), and a saved timeline (the page's
// download, `wddm-fence run --timeline`) draws the same picture again.

import type { ChromeTrace, ChromeTraceEvent } from './timeline.js';

export interface TimelineTrack { id: string; label: string; kind: 'queue' | 'cpu' | 'interrupts'; adapter?: string }
export interface TimelineSlice {
  id: number; track: string; startNs: number; endNs: number;
  kind: 'work' | 'wait' | 'signal' | 'cpu-wait' | 'cpu-signal';
  label: string; outcome?: string; seq: number;
}
export interface TimelineArrow { from: number; to: number; fence: string; value: string }
export interface TimelineMark { track: string; timeNs: number; kind: 'interrupt' | 'fault' | 'note'; label: string }
export interface TimelineModel { tracks: TimelineTrack[]; slices: TimelineSlice[]; arrows: TimelineArrow[]; marks: TimelineMark[]; endNs: number }

const SLICE_KINDS = new Set<string>(['work', 'wait', 'signal', 'cpu-wait', 'cpu-signal']);
const MARK_KINDS: Record<string, TimelineMark['kind']> = {
  interrupt: 'interrupt', 'propagation-interrupt': 'interrupt', propagation: 'interrupt',
  fault: 'fault', violation: 'fault', overrun: 'fault', report: 'note',
};
/** A CPU wait's status as the page words its outcome. */
const CPU_WAIT_OUTCOME: Record<string, string> = { SUCCESS: 'woken', SATISFIED_AT_ONCE: 'satisfied at once', TIMEOUT: 'timed out' };
/** The CPU's process in the export (exportTimeline: the last one, named so). */
const CPU_PROCESS = 'CPU';

/** Virtual ns from the export's µs (it divides whole ns by 1000: rounding gives them back). */
const ns = (us: number): number => Math.round(us * 1000);

/** The page's timeline: the export's events as tracks, slices, arrows and marks (see the header). */
export function timelineModel(trace: ChromeTrace): TimelineModel {
  const processes = new Map<number, string>();
  const threads = new Map<string, { pid: number; tid: number; name: string }>();
  for (const e of trace.traceEvents) {
    if (e.ph !== 'M') continue;
    if (e.name === 'process_name') processes.set(e.pid, String(e.args?.name));
    if (e.name === 'thread_name') threads.set(`${e.pid}/${e.tid}`, { pid: e.pid, tid: e.tid, name: String(e.args?.name) });
  }
  const tracks = new Map<string, TimelineTrack & { pid: number; tid: number }>();
  const trackOf = (e: ChromeTraceEvent): string => {
    const key = `${e.pid}/${e.tid}`;
    const known = tracks.get(key);
    if (known) return known.id;
    const process = processes.get(e.pid) ?? `process ${e.pid}`;
    const thread = threads.get(key)?.name ?? `thread ${e.tid}`;
    const cpu = process === CPU_PROCESS;
    const interrupts = !cpu && thread === 'Dxgkrnl';
    const name = interrupts ? 'interrupts' : thread.replace(/ \(hHwQueue 0x[0-9a-f]+\)$/, '');
    const track = {
      id: `${cpu ? 'cpu' : process}/${name}`, label: cpu ? `CPU · ${thread}` : `${process} · ${interrupts ? 'interrupts' : thread}`,
      kind: cpu ? 'cpu' as const : interrupts ? 'interrupts' as const : 'queue' as const, ...(cpu ? {} : { adapter: process }), pid: e.pid, tid: e.tid,
    };
    tracks.set(key, track);
    return track.id;
  };
  const slices: TimelineSlice[] = [];
  const marks: TimelineMark[] = [];
  const arrows: TimelineArrow[] = [];
  const lastSlice = new Map<string, number>();
  const flowStarts = new Map<string, { slice: number; fence: string; value: string }>();
  const flowEnds: { id: string; slice: number }[] = [];
  let endNs = 0;
  for (const e of trace.traceEvents) {
    if (e.ph === 'X' && e.cat && SLICE_KINDS.has(e.cat)) {
      const startNs = ns(e.ts), stopNs = ns(e.ts + (e.dur ?? 0));
      const status = e.cat === 'cpu-wait' ? String(e.args?.status ?? '') : undefined;
      const outcome = status !== undefined ? CPU_WAIT_OUTCOME[status] ?? status.toLowerCase().replace(/_/g, ' ') : e.args?.outcome === undefined ? undefined : String(e.args.outcome);
      slices.push({ id: slices.length, track: trackOf(e), startNs, endNs: stopNs, kind: e.cat as TimelineSlice['kind'], label: e.name, ...(outcome ? { outcome } : {}), seq: slices.length });
      lastSlice.set(`${e.pid}/${e.tid}`, slices.length - 1);
      endNs = Math.max(endNs, stopNs);
    } else if (e.ph === 'X' && e.cat === 'flow' && e.bind_id !== undefined) {
      const slice = lastSlice.get(`${e.pid}/${e.tid}`);
      if (slice === undefined) continue;
      if (e.flow_out) flowStarts.set(e.bind_id, { slice, fence: String(e.args?.fence ?? ''), value: String(e.args?.value ?? '') });
      else if (e.flow_in) flowEnds.push({ id: e.bind_id, slice });
    } else if (e.ph === 'i') {
      const kind = MARK_KINDS[e.cat ?? ''] ?? 'note';
      marks.push({ track: trackOf(e), timeNs: ns(e.ts), kind, label: e.name });
      endNs = Math.max(endNs, ns(e.ts));
    }
  }
  // an arrow's ends may come in either order (a wait on one adapter, its signal on a later one)
  for (const end of flowEnds) {
    const start = flowStarts.get(end.id);
    if (start) arrows.push({ from: start.slice, to: end.slice, fence: start.fence, value: start.value });
  }
  // adapters in the export's order, each with its queues then its interrupts; the CPU last
  const order = (t: { pid: number; tid: number; kind: TimelineTrack['kind'] }) => t.pid * 1e6 + (t.kind === 'interrupts' ? 1e5 : t.tid);
  const sorted = [...tracks.values()].sort((a, b) => order(a) - order(b)).map(({ pid: _pid, tid: _tid, ...track }) => track);
  return { tracks: sorted, slices, arrows, marks, endNs };
}
