// One's own usage over time: tokens and requests per day (SVG charts), and a table by model.

import {h, replace, table, select} from '../dom.js';
import * as api from '../api.js';
import {section, errorBox} from '../ui.js';
import {num, ms} from '../format.js';
import {barChart} from '../chart.js';

function isoDay(d) { return d.toISOString().slice(0, 10); }

export function usagePage({el}) {
  const days = select('days', [['7', 'Last 7 days'], ['30', 'Last 30 days'], ['90', 'Last 90 days']], '30');
  const charts = h('div', {class: 'charts', id: 'usage-charts'});
  const byModel = h('div', {id: 'usage-models'});
  const quota = h('div');
  days.addEventListener('change', draw);
  el.append(section(null, h('div', {class: 'toolbar'}, days), quota, charts), section('By model', byModel));

  async function draw() {
    const n = Number(days.value);
    const from = new Date(Date.now() - (n - 1) * 86400e3);
    const q = {from: isoDay(from)};
    try {
      const [perDay, perModel] = await Promise.all([
        api.get('/api/usage' + api.query({...q, group_by: 'day'})),
        api.get('/api/usage' + api.query({...q, group_by: 'model'})),
      ]);
      const rows = (perDay && perDay.data) || [];
      const byDate = new Map(rows.map(r => [r.date, r]));
      const series = [...Array(n)].map((_, i) => {
        const d = isoDay(new Date(from.getTime() + i * 86400e3));
        return {d, r: byDate.get(d) || {}};
      });
      const label = d => new Date(d + 'T00:00:00Z').toLocaleDateString([], {month: 'short', day: 'numeric', timeZone: 'UTC'});
      replace(charts,
        barChart(series.map(x => ({label: label(x.d), value: x.r.total_tokens || 0})), 'Tokens per day', 'c1'),
        barChart(series.map(x => ({label: label(x.d), value: x.r.requests || 0})), 'Requests per day', 'c2'));
      const qo = perDay && perDay.quota;
      replace(quota, qo ? quotaLine(qo) : null);
      replace(byModel, table([
        {title: 'Model', cell: r => r.model || '—'},
        {title: 'Requests', cell: r => num(r.requests), class: 'num'},
        {title: 'Prompt', cell: r => num(r.prompt_tokens), class: 'num'},
        {title: 'Cached', cell: r => num(r.cached_tokens), class: 'num'},
        {title: 'Completion', cell: r => num(r.completion_tokens), class: 'num'},
        {title: 'Time', cell: r => ms(r.duration_ms), class: 'num'},
      ], (perModel && perModel.data) || [], 'No requests in this window.'));
    } catch (err) {
      replace(charts, errorBox(err));
    }
  }
  draw();
}

// quotaLine says what is left of one's token quotas (a null limit is no limit).
function quotaLine(q) {
  const part = (label, limit, used) => limit === null || limit === undefined ? null : label + ': ' + num(used) + ' of ' + num(limit) + ' tokens';
  const parts = [part('Today', q.daily_tokens, q.daily_used), part('This month', q.monthly_tokens, q.monthly_used)].filter(Boolean);
  return parts.length ? h('p', {class: 'muted', id: 'usage-quota'}, parts.join(' · ')) : null;
}
