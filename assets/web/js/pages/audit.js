// The audit log: every admin action and booking change, newest first.

import {h, table} from '../dom.js';
import * as api from '../api.js';
import {section, load} from '../ui.js';
import {when} from '../format.js';

export function auditPage({el}) {
  const box = h('div', {id: 'audit'});
  el.append(section(null, box));
  load(box, () => api.list('/api/admin/audit'), list => table([
    {title: 'When', cell: e => when(e.at), class: 'nowrap'},
    {title: 'Who', cell: e => (e.actor && (e.actor.user || e.actor.key)) || '—'},
    {title: 'Action', cell: e => h('span', {class: 'mono'}, e.action)},
    {title: 'Target', cell: e => e.target || '—'},
    {title: 'Detail', cell: e => h('span', {class: 'mono small'}, e.detail ? JSON.stringify(e.detail) : '')},
  ], list, 'Nothing audited yet.'));
}
