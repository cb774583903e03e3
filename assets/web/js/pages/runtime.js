// The runtime: devices, backends, lanes and loaded models, starting and stopping an engine by
// hand, and the load history.

import {h, replace, field, table, badge, select} from '../dom.js';
import * as api from '../api.js';
import {section, form, notice, errorBox, load} from '../ui.js';
import {when, bytes, num} from '../format.js';

function value(v, key = '') {
  if (v === null || v === undefined) return '—';
  if (Array.isArray(v)) return v.length ? v.map(x => value(x)).join(', ') : '—';
  if (key.endsWith('_at') && typeof v === 'number') return when(v);
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// objectTable shows a list of objects with whatever fields they have.
function objectTable(list, empty) {
  const keys = [...new Set(list.flatMap(o => Object.keys(o || {})))].filter(k => k !== 'object');
  return table(keys.map(k => ({title: k.replace(/_/g, ' '), cell: o => k.endsWith('bytes') ? bytes(o[k]) : value(o[k], k)})), list, empty);
}

export function runtimePage({el, page}) {
  const overview = h('div', {id: 'runtime', class: 'stack'});
  const history = h('div', {id: 'runtime-history'});
  const lane = h('select', {name: 'lane', required: true});
  const manual = form([
    field('Lane', lane),
    field('Action', select('action', [['start', 'start (load a model)'], ['stop', 'stop (unload)']], 'start')),
    field('Model', h('input', {name: 'model', placeholder: 'for start: the model'})),
  ], 'Run', async v => {
    const body = {action: v.action, lane: v.lane};
    if (v.model) body.model = v.model;
    const st = await api.post('/api/admin/runtime/manual', body);
    notice(v.lane + ': ' + (st && st.state ? st.state : 'done'));
    refresh();
    refreshHistory();
  }, {inline: true});
  manual.id = 'manual';

  async function refresh() {
    try {
      const rt = await api.get('/api/admin/runtime');
      if (page.left) return;
      const chosen = lane.value;
      replace(lane, (rt.lanes || []).map(l => h('option', {value: l.name || l.id, selected: (l.name || l.id) === chosen}, l.name || l.id)));
      replace(overview,
        section('Lanes', table([
          {title: 'Lane', cell: l => l.name || l.id},
          {title: 'Model', cell: l => h('span', {class: 'mono'}, l.model || '—')},
          {title: 'Engine', cell: l => l.engine || '—'},
          {title: 'State', cell: l => badge(l.state || '—', l.state === 'serving' ? 'ok' : l.state === 'switching' ? 'warn' : 'bad')},
          {title: 'Running', cell: l => num(l.inflight || 0), class: 'num'},
        ], rt.lanes || [], 'No lanes.')),
        section('Loaded models', objectTable(rt.models || [], 'No model is loaded.')),
        h('div', {class: 'cols'},
          section('Devices', objectTable(rt.devices || [], 'No devices reported.')),
          section('Backends', objectTable(rt.backends || [], 'No backends reported.'))));
    } catch (err) {
      if (!page.left) replace(overview, errorBox(err));
    }
  }
  function refreshHistory() {
    load(history, () => api.list('/api/admin/runtime/history'), list => table([
      {title: 'When', cell: e => when(e.at), class: 'nowrap'},
      {title: 'Event', cell: e => badge(e.event, 'muted')},
      {title: 'Lane', cell: e => e.lane || '—'},
      {title: 'Model', cell: e => h('span', {class: 'mono'}, e.model || '—')},
      {title: 'Detail', cell: e => value(e.detail)},
    ], list, 'Nothing loaded or unloaded yet.'));
  }
  el.append(section('Start or stop by hand', manual), overview, section('History', history));
  refresh();
  refreshHistory();
  page.every(5000, refresh);
}
