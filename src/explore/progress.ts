// The progress line of a long search (`wddm-fence explore`, on stderr): states,
// states per second, depth, frontier (frames on the search's stack) and an
// estimate of the share done, at most once per interval. The clock is given
// (the command passes performance.now; tests their own), so nothing here reads
// the wall clock itself and the line never touches what the search finds.
import type { SearchStats } from './search.js';

export class ProgressLine {
  private readonly startedMs: number;
  private lastMs = -Infinity;
  private shown = false;

  /**
   * `write` gets the text; `terminal`: one line rewritten in place (\r), else a line per update;
   * `intervalMs`: the least time between two updates.
   */
  constructor(private readonly write: (text: string) => void, private readonly nowMs: () => number,
              private readonly terminal = true, private readonly intervalMs = 1000) {
    this.startedMs = nowMs();
  }

  /** The search's counts now, and its estimate of the share of the tree done (0..1) and the frames on its stack. */
  update(stats: Pick<SearchStats, 'states' | 'transitions' | 'maxDepth'>, progress: { done: number; frontier: number }): void {
    const now = this.nowMs();
    if (now - this.lastMs < this.intervalMs) return;
    this.lastMs = now;
    const seconds = Math.max((now - this.startedMs) / 1000, 1e-3);
    const rate = Math.round(stats.states / seconds);
    const done = Math.min(Math.max(progress.done, 0), 1);
    const left = done > 0.001 ? ` (about ${formatSeconds(seconds * (1 - done) / done)} left)` : '';
    const text = `  ${stats.states} states, ${rate} states/s, depth ${stats.maxDepth}, frontier ${progress.frontier}, ~${(done * 100).toFixed(1)}% of the tree${left}`;
    this.write(this.terminal ? `\r${text}\x1b[K` : `${text}\n`);
    this.shown = true;
  }

  /** Clears the line (a terminal's) before the report is printed. */
  end(): void {
    if (this.shown && this.terminal) this.write('\r\x1b[2K');
    this.shown = false;
  }
}

function formatSeconds(s: number): string {
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}
