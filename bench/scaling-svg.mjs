// Draws the scaling chart as plain SVG: total time against object count,
// both axes logarithmic, one line per operation, the fitted slope in the
// legend (slope 1 = linear growth; a dashed slope-1 guide for comparison).

const COLORS = { fenceCreate: '#1f77b4', waiterAddRetire: '#d62728', gpuSignal: '#2ca02c' };
const LABELS = { fenceCreate: 'fence creation (public API)', waiterAddRetire: 'waiter add + retire (public API)', gpuSignal: 'GPU signal (core engine)' };

const escape = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function fitSlope(points) {
  const xs = points.map((p) => Math.log10(p.n)), ys = points.map((p) => Math.log10(p.totalMs));
  const mx = xs.reduce((a, b) => a + b) / xs.length, my = ys.reduce((a, b) => a + b) / ys.length;
  let num = 0, den = 0;
  for (let i = 0; i < xs.length; i++) { num += (xs[i] - mx) * (ys[i] - my); den += (xs[i] - mx) ** 2; }
  return num / den;
}

/** `fitFrom`: the smallest n the legend's slope is fitted from (the bench's SCALING_FIT_FROM). */
export function drawScaling(series, subtitle, fitFrom = 0) {
  const width = 720, height = 440;
  const left = 70, right = 250, top = 50, bottom = 60;
  const plotW = width - left - right, plotH = height - top - bottom;
  const all = Object.values(series).flat();
  const xMin = Math.floor(Math.log10(Math.min(...all.map((p) => p.n))));
  const xMax = Math.ceil(Math.log10(Math.max(...all.map((p) => p.n))));
  const yMin = Math.floor(Math.log10(Math.min(...all.map((p) => p.totalMs))));
  const yMax = Math.ceil(Math.log10(Math.max(...all.map((p) => p.totalMs))));
  const x = (n) => left + ((Math.log10(n) - xMin) / Math.max(1, xMax - xMin)) * plotW;
  const y = (ms) => top + plotH - ((Math.log10(ms) - yMin) / Math.max(1, yMax - yMin)) * plotH;
  const out = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${width}" height="${height}" fill="#fff"/>`);
  out.push(`<text x="${left}" y="22" font-size="15" font-weight="bold">wddm-fence: total time against object count (log-log)</text>`);
  out.push(`<text x="${left}" y="38" fill="#555">${escape(subtitle)}</text>`);
  // Grid and axes.
  for (let e = xMin; e <= xMax; e++) {
    const gx = x(10 ** e).toFixed(1);
    out.push(`<line x1="${gx}" y1="${top}" x2="${gx}" y2="${top + plotH}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${gx}" y="${top + plotH + 18}" text-anchor="middle">10<tspan dy="-6" font-size="9">${e}</tspan></text>`);
  }
  for (let e = yMin; e <= yMax; e++) {
    const gy = y(10 ** e).toFixed(1);
    out.push(`<line x1="${left}" y1="${gy}" x2="${left + plotW}" y2="${gy}" stroke="#e5e5e5"/>`);
    const label = e >= 3 ? `${10 ** (e - 3)} s` : e >= 0 ? `${10 ** e} ms` : `${Math.round(10 ** (e + 3))} µs`;
    out.push(`<text x="${left - 6}" y="${(+gy + 4).toFixed(1)}" text-anchor="end">${label}</text>`);
  }
  out.push(`<rect x="${left}" y="${top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`);
  out.push(`<text x="${left + plotW / 2}" y="${height - 18}" text-anchor="middle">objects (fences, waiters, signals)</text>`);
  out.push(`<text x="16" y="${top + plotH / 2}" text-anchor="middle" transform="rotate(-90 16 ${top + plotH / 2})">total time</text>`);
  // Slope-1 guide through the first point of the first series.
  const first = Object.values(series)[0][0];
  const guideEnd = 10 ** xMax;
  const guideMs = first.totalMs * (guideEnd / first.n);
  out.push(`<line x1="${x(first.n).toFixed(1)}" y1="${y(first.totalMs).toFixed(1)}" x2="${x(guideEnd).toFixed(1)}" y2="${y(guideMs).toFixed(1)}" stroke="#999" stroke-dasharray="4 4"/>`);
  // Series.
  let legendY = top + 10;
  for (const [name, points] of Object.entries(series)) {
    const color = COLORS[name] ?? '#000';
    const path = points.map((p, i) => `${i ? 'L' : 'M'}${x(p.n).toFixed(1)},${y(p.totalMs).toFixed(1)}`).join(' ');
    out.push(`<path d="${path}" fill="none" stroke="${color}" stroke-width="2"/>`);
    for (const p of points) out.push(`<circle cx="${x(p.n).toFixed(1)}" cy="${y(p.totalMs).toFixed(1)}" r="3.5" fill="${color}"><title>${escape(`${name} n=${p.n}: ${p.totalMs.toFixed(2)} ms (${p.nsPerOp.toFixed(0)} ns/op)`)}</title></circle>`);
    const lx = left + plotW + 16;
    out.push(`<line x1="${lx}" y1="${legendY}" x2="${lx + 20}" y2="${legendY}" stroke="${color}" stroke-width="2"/>`);
    out.push(`<text x="${lx + 26}" y="${legendY + 4}">${escape(LABELS[name] ?? name)}</text>`);
    const last = points[points.length - 1];
    out.push(`<text x="${lx + 26}" y="${legendY + 19}" fill="#555">slope ${fitSlope(points.filter((p) => p.n >= fitFrom)).toFixed(2)}${fitFrom ? ` (from ${fitFrom.toExponential(0)})` : ''}, ${last.nsPerOp.toFixed(0)} ns/op at ${last.n.toExponential(0)}</text>`);
    legendY += 44;
  }
  const lx = left + plotW + 16;
  out.push(`<line x1="${lx}" y1="${legendY}" x2="${lx + 20}" y2="${legendY}" stroke="#999" stroke-dasharray="4 4"/>`);
  out.push(`<text x="${lx + 26}" y="${legendY + 4}">slope 1 (linear)</text>`);
  out.push('</svg>');
  return out.join('\n') + '\n';
}
