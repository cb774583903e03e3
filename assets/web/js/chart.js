// Charts drawn as SVG from data (no library): a line chart over time and a bar chart by day.

import {h, s} from './dom.js';
import {num} from './format.js';

const W = 640, H = 220, PAD = {l: 48, r: 12, t: 12, b: 28};

// niceMax is the top of an axis of four equal whole steps of 1, 2 or 5 × 10^k over v (at
// least 4, so that small counts get distinct ticks).
function niceMax(v) {
  const want = Math.max(v, 4) / 4;
  const p = Math.pow(10, Math.floor(Math.log10(want)));
  for (const m of [1, 2, 5, 10]) if (m * p >= want) return 4 * m * p;
  return 40 * p;
}

function axes(max, xLabels) {
  const g = s('g', {class: 'axes'});
  for (let i = 0; i <= 4; i++) {
    const y = PAD.t + (H - PAD.t - PAD.b) * (1 - i / 4);
    g.append(s('line', {x1: PAD.l, x2: W - PAD.r, y1: y, y2: y, class: 'grid'}));
    g.append(s('text', {x: PAD.l - 6, y: y + 4, 'text-anchor': 'end'}, num(Math.round(max * i / 4))));
  }
  for (const [x, label] of xLabels) g.append(s('text', {x, y: H - 8, 'text-anchor': 'middle'}, label));
  return g;
}

function legend(lines) {
  return h('div', {class: 'legend'}, lines.map(l => h('span', {class: 'legend-item'}, h('i', {class: 'swatch ' + l.class}), l.label)));
}

// lineChart: points is [{at: Date, ...}], lines is [{key, label, class}]; each line on the
// same y axis.
export function lineChart(points, lines, title) {
  const max = niceMax(Math.max(0, ...points.flatMap(p => lines.map(l => Number(p[l.key]) || 0))));
  const n = points.length;
  const x = i => PAD.l + (n <= 1 ? 0 : (W - PAD.l - PAD.r) * i / (n - 1));
  const y = v => PAD.t + (H - PAD.t - PAD.b) * (1 - v / max);
  const every = Math.max(1, Math.ceil(n / 6));
  const labels = points.map((p, i) => [x(i), i % every === 0 ? label(p.at, points) : null]).filter(l => l[1]);
  const svg = s('svg', {viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': title}, s('title', {}, title), axes(max, labels));
  for (const l of lines) {
    const d = points.map((p, i) => (i ? 'L' : 'M') + x(i).toFixed(1) + ' ' + y(Number(p[l.key]) || 0).toFixed(1)).join(' ');
    if (n) svg.append(s('path', {d, class: 'line ' + l.class}));
    points.forEach((p, i) => svg.append(s('circle', {cx: x(i), cy: y(Number(p[l.key]) || 0), r: n > 40 ? 0 : 2.5, class: 'dot ' + l.class},
      s('title', {}, label(p.at, points) + ': ' + num(p[l.key]) + ' ' + l.label))));
  }
  return h('figure', {class: 'chart-box'}, h('figcaption', {}, title), svg, legend(lines));
}

// barChart: bars is [{label, value}].
export function barChart(bars, title, cls = 'c1') {
  const max = niceMax(Math.max(0, ...bars.map(b => Number(b.value) || 0)));
  const n = Math.max(bars.length, 1);
  const slot = (W - PAD.l - PAD.r) / n;
  const every = Math.max(1, Math.ceil(n / 8));
  const labels = bars.map((b, i) => [PAD.l + slot * (i + 0.5), i % every === 0 ? b.label : null]).filter(l => l[1]);
  const svg = s('svg', {viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': title}, s('title', {}, title), axes(max, labels));
  bars.forEach((b, i) => {
    const hgt = (H - PAD.t - PAD.b) * (Number(b.value) || 0) / max;
    svg.append(s('rect', {x: PAD.l + slot * i + slot * 0.15, width: slot * 0.7, y: H - PAD.b - hgt, height: Math.max(hgt, 0), class: 'bar ' + cls},
      s('title', {}, b.label + ': ' + num(b.value))));
  });
  return h('figure', {class: 'chart-box'}, h('figcaption', {}, title), svg);
}

function label(at, points) {
  const d = at instanceof Date ? at : new Date(at);
  const span = points.length > 1 ? Math.abs(new Date(points[points.length - 1].at) - new Date(points[0].at)) : 0;
  if (span > 2 * 86400e3) return d.toLocaleDateString([], {month: 'short', day: 'numeric'});
  return d.toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'});
}
