// The request log, newest first, filtered by person, model, lane, status and time; "Older"
// pages back with the last id seen.

import {h, replace, field, table, badge} from '../dom.js';
import * as api from '../api.js';
import {section, form, errorBox} from '../ui.js';
import {when, num, ms} from '../format.js';

export function requestsPage({el}) {
  const out = h('div', {id: 'requests'});
  const more = h('button', {type: 'button', class: 'secondary', hidden: true}, 'Older');
  let filters = {}, rows = [];
  const f = form([
    field('Person', h('input', {name: 'person'})),
    field('Model', h('input', {name: 'model'})),
    field('Lane', h('input', {name: 'lane'})),
    field('Status', h('input', {name: 'status', placeholder: '200, 4xx, 5xx'})),
    field('Since', h('input', {name: 'since', type: 'datetime-local'})),
    field('Until', h('input', {name: 'until', type: 'datetime-local'})),
  ], 'Filter', async v => {
    filters = {...v};
    for (const k of ['since', 'until']) if (filters[k]) filters[k] = Math.floor(new Date(filters[k]).getTime() / 1000);
    rows = [];
    await fetchPage();
  }, {inline: true});
  f.id = 'request-filters';
  more.addEventListener('click', () => fetchPage(rows.length ? rows[rows.length - 1].id : undefined));

  async function fetchPage(before) {
    try {
      const got = await api.list('/api/admin/requests' + api.query({...filters, limit: 50, before}));
      rows = rows.concat(got);
      more.hidden = got.length < 50;
      replace(out, table([
        {title: 'When', cell: r => when(r.at), class: 'nowrap'},
        {title: 'Person', cell: r => r.person || '—'},
        {title: 'Key', cell: r => r.key || '—'},
        {title: 'Model', cell: r => h('span', {class: 'mono'}, r.model || '—')},
        {title: 'Lane', cell: r => r.lane || '—'},
        {title: 'Route', cell: r => h('span', {class: 'mono'}, r.route || '')},
        {title: 'Status', cell: r => badge(String(r.status), r.status < 400 ? 'ok' : r.status < 500 ? 'warn' : 'bad')},
        {title: 'Tokens in/out', cell: r => num(r.prompt_tokens) + ' / ' + num(r.completion_tokens), class: 'num'},
        {title: 'Cached', cell: r => num(r.cached_tokens) + (r.restored_tokens ? ' (' + num(r.restored_tokens) + ' from disk)' : ''), class: 'num'},
        {title: 'Cache miss', cell: r => r.cache_miss || '—'},
        {title: 'Drafted/kept', cell: r => r.spec_proposed ? num(r.spec_proposed) + ' / ' + num(r.spec_accepted) : '—', class: 'num'},
        {title: 'Time', cell: r => ms(r.duration_ms), class: 'num'},
      ], rows, 'No requests match.'));
    } catch (err) {
      replace(out, errorBox(err));
    }
  }
  el.append(section(null, f), section(null, out, more));
  fetchPage();
}
