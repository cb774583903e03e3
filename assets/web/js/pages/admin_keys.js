// Every key of the team: create one for a person (shown once), revoke any.

import {h, replace, field, table} from '../dom.js';
import * as api from '../api.js';
import {section, form, notice, load} from '../ui.js';
import {keyColumns, shownOnce} from './keys.js';

export function adminKeysPage({el}) {
  const listEl = h('div', {id: 'admin-keys'});
  const created = h('div');
  const who = h('select', {name: 'user'});
  api.list('/api/admin/users').then(people => people.forEach(p => who.append(h('option', {value: p.name}, p.name)))).catch(() => {});
  const refresh = () => load(listEl, () => api.list('/api/admin/keys'), keys => table(keyColumns(async k => {
    await api.del('/api/admin/keys/' + encodeURIComponent(k.id));
    notice('Revoked ' + k.name);
    refresh();
  }, [{title: 'Person', cell: k => (k.user && k.user.name) || '—'}]), keys));
  const f = form([
    field('Name', h('input', {name: 'name', required: true})),
    field('For', who),
    field('Models', h('input', {name: 'models', placeholder: 'all (or a, b)'})),
    h('label', {class: 'check'}, h('input', {type: 'checkbox', name: 'admin'}), ' admin key'),
  ], 'Create key', async (v, fm) => {
    const body = {name: v.name, user: v.user, admin: v.admin};
    const models = v.models.split(',').map(x => x.trim()).filter(Boolean);
    if (models.length) body.models = models;
    const k = await api.post('/api/admin/keys', body);
    replace(created, shownOnce(k.key));
    fm.reset();
    refresh();
  });
  el.append(section('Create a key', f, created), section('Keys', listEl));
  refresh();
}
