// The admin dashboard: requests, tokens, active lanes and queue depth over a window, charts of
// the series, and the top people and models.

import {h, replace, table, select} from '../dom.js';
import * as api from '../api.js';
import {section, errorBox} from '../ui.js';
import {num} from '../format.js';
import {lineChart} from '../chart.js';

export function statsPage({el, page}) {
  const win = select('window', [['1h', 'Last hour'], ['24h', 'Last 24 hours'], ['168h', 'Last 7 days'], ['720h', 'Last 30 days']], '24h');
  const body = h('div', {id: 'stats', class: 'stack'});
  win.addEventListener('change', draw);
  el.append(h('div', {class: 'toolbar'}, win), body);

  async function draw() {
    try {
      const st = await api.get('/api/admin/stats' + api.query({window: win.value}));
      if (page.left) return;
      const tile = (label, value, id) => h('div', {class: 'tile', id}, h('div', {class: 'tile-value'}, num(value)), h('div', {class: 'tile-label'}, label));
      const series = (st.series || []).map(p => ({...p, at: new Date(typeof p.at === 'number' ? p.at * 1000 : p.at)}));
      replace(body,
        h('div', {class: 'tiles'},
          tile('Requests', st.requests, 'stat-requests'),
          tile('Prompt tokens', st.prompt_tokens, 'stat-prompt'),
          tile('Completion tokens', st.completion_tokens, 'stat-completion'),
          tile('Cached tokens', st.cached_tokens, 'stat-cached'),
          tile('Active lanes', st.active_lanes, 'stat-lanes'),
          tile('Queued now', st.queue_depth, 'stat-queue')),
        h('div', {class: 'charts'},
          lineChart(series, [{key: 'requests', label: 'requests', class: 'c2'}], 'Requests over time'),
          lineChart(series, [{key: 'tokens', label: 'tokens', class: 'c1'}], 'Tokens over time')),
        h('div', {class: 'cols'},
          section('By person', table([
            {title: 'Person', cell: r => r.person || '(no person)'},
            {title: 'Requests', cell: r => num(r.requests), class: 'num'},
            {title: 'Tokens', cell: r => num(r.tokens), class: 'num'}], st.by_person || [], 'No requests.')),
          section('By model', table([
            {title: 'Model', cell: r => h('span', {class: 'mono'}, r.model || '—')},
            {title: 'Requests', cell: r => num(r.requests), class: 'num'},
            {title: 'Tokens', cell: r => num(r.tokens), class: 'num'}], st.by_model || [], 'No requests.'))));
    } catch (err) {
      if (!page.left) replace(body, errorBox(err));
    }
  }
  draw();
  page.every(15000, draw);
}
