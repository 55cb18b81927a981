// The timeline's time axis, apart from the DOM (so it is tested in Node): ticks at round steps of
// 1, 2 or 5 × 10^k ns, at most `most` of them over the span, labelled in the unit the span calls for
// (ns, us, ms, s) with as many decimals as the step needs, so no two labels read the same.

const UNITS = [{ ns: 1e9, name: 's' }, { ns: 1e6, name: 'ms' }, { ns: 1e3, name: 'us' }, { ns: 1, name: 'ns' }] as const;

export interface AxisTick { ns: number; label: string }

/** The ticks of an axis from 0 to `spanNs` (virtual nanoseconds; at least 1). */
export function timeTicks(spanNs: number, most = 10): AxisTick[] {
  const span = Math.max(1, spanNs);
  const wanted = span / most;
  const power = 10 ** Math.floor(Math.log10(wanted));
  const step = Math.max(1, [1, 2, 5, 10].map((m) => m * power).find((s) => s >= wanted)!);
  const unit = UNITS.find((u) => u.ns <= span) ?? UNITS[UNITS.length - 1];
  const decimals = Math.max(0, Math.ceil(Math.log10(unit.ns / step) - 1e-9));
  const ticks: AxisTick[] = [];
  for (let i = 0; i * step <= span; i++) ticks.push({ ns: i * step, label: `${((i * step) / unit.ns).toFixed(decimals)} ${unit.name}` });
  return ticks;
}
