// The model catalog: what can be loaded where, and the pulls with their progress bars (an
// admin starts pulls). Pulls refresh every second while one runs.

import {h, replace, field, table, badge, select} from '../dom.js';
import * as api from '../api.js';
import {section, form, notice, load, errorBox} from '../ui.js';
import {bytes, when} from '../format.js';

// params says a parameter count the short way (260K, 4.0B).
function params(n) {
  if (!n) return '';
  if (typeof n !== 'number') return String(n);
  for (const [d, u] of [[1e12, 'T'], [1e9, 'B'], [1e6, 'M'], [1e3, 'K']]) if (n >= d) return (n / d).toFixed(n / d < 10 ? 1 : 0) + u;
  return String(n);
}

const pullKind = {done: 'ok', failed: 'bad', queued: 'muted', downloading: 'warn', verifying: 'warn', uploading: 'warn'};

export function catalogPage({el, page, admin}) {
  const models = h('div', {id: 'catalog'});
  const pulls = h('div', {id: 'pulls'});
  let running = false;
  let laneNames = new Map();
  const names = ids => (ids || []).map(id => laneNames.get(id) || id).join(', ') || '—';
  load(models, async () => {
    const [list, lanes] = await Promise.all([api.list('/api/catalog'), api.list('/api/lanes')]);
    laneNames = new Map(lanes.map(l => [l.id, l.name]));
    return list;
  }, list => table([
    {title: 'Model', cell: m => h('span', {class: 'mono'}, m.id)},
    {title: 'Size', cell: m => bytes(m.size_bytes), class: 'num'},
    {title: 'Quantization', cell: m => m.quantization || '—'},
    {title: 'Family', cell: m => [m.family, params(m.parameters)].filter(Boolean).join(' · ') || '—'},
    {title: 'Storage', cell: m => m.storage || 'models folder'},
    {title: 'Lanes', cell: m => names(m.lanes)},
    {title: 'Serving on', cell: m => names(m.loaded_on)},
    {title: '', cell: m => m.error ? h('span', {class: 'error-text small'}, m.error) : ''},
  ], list, 'The catalog is empty.'));
  if (admin) el.append(pullForm(refreshPulls));
  el.append(section('Pulls', pulls), section('Models', models));

  async function refreshPulls() {
    try {
      const list = await api.list('/api/catalog/pulls');
      if (page.left) return;
      running = list.some(p => !['done', 'failed'].includes(p.status));
      replace(pulls, list.length ? list.map(pullRow) : h('p', {class: 'empty'}, 'No pulls yet.'));
    } catch (err) {
      if (!page.left) replace(pulls, errorBox(err));
    }
  }
  refreshPulls();
  let ticks = 0;
  page.every(1000, () => { ticks++; if (running || ticks % 5 === 0) refreshPulls(); });
}

function pullRow(p) {
  const total = p.total_bytes || 0, done = p.completed_bytes || 0;
  const bar = h('progress', {max: total || 1, value: p.status === 'done' ? (total || 1) : done, 'aria-label': 'Pull of ' + p.model});
  return h('div', {class: 'pull', dataset: {pull: p.id, status: p.status}},
    h('div', {class: 'pull-head'}, h('span', {class: 'mono'}, p.model), badge(p.status, pullKind[p.status])),
    bar,
    h('div', {class: 'pull-meta muted small'},
      bytes(done) + (total ? ' of ' + bytes(total) + ' · ' + Math.floor(100 * done / total) + '%' : ''),
      p.storage ? ' · into ' + p.storage : '',
      ' · started ' + when(p.started_at),
      p.finished_at ? ' · finished ' + when(p.finished_at) : ''),
    p.error ? h('p', {class: 'error small'}, p.error) : null);
}

function pullForm(refresh) {
  const storage = h('select', {name: 'storage'}, h('option', {value: ''}, 'the models folder'));
  api.list('/api/storage').then(list => list.forEach(s => storage.append(h('option', {value: s.id}, s.name + ' (' + s.kind + ')')))).catch(() => {});
  const f = form([
    field('Model', h('input', {name: 'model', id: 'pull-model', required: true, placeholder: 'hf.co/OWNER/REPO:Q4_K_M'})),
    field('Into', storage),
  ], 'Pull', async (v, fm) => {
    const body = {model: v.model};
    if (v.storage) body.storage = v.storage;
    await api.post('/api/catalog/pulls', body);
    notice('Pull started: ' + v.model);
    fm.elements.namedItem('model').value = '';
    refresh();
  }, {inline: true});
  f.id = 'pull';
  return section('Pull a model', f);
}
