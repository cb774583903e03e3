// The storages one may use (no secrets are ever sent to the page).

import {h, table, badge} from '../dom.js';
import * as api from '../api.js';
import {section, load} from '../ui.js';

export function storageWhere(s) {
  if (s.kind === 's3') return [s.endpoint, s.bucket, s.prefix].filter(Boolean).join(' / ');
  return s.path || '—';
}

export function storagePage({el}) {
  const listEl = h('div', {id: 'storage'});
  el.append(section(null, h('p', {class: 'muted'}, 'Places where models and files live. An admin adds them.'), listEl));
  load(listEl, () => api.list('/api/storage'), list => table([
    {title: 'Name', cell: s => s.name},
    {title: 'Kind', cell: s => badge(s.kind, 'muted')},
    {title: 'Where', cell: s => h('span', {class: 'mono'}, storageWhere(s))},
    {title: 'Shared', cell: s => s.shared ? 'everyone' : 'some people'},
  ], list, 'No storage is open to you.'));
}
