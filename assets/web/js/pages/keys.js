// One's own API keys: create (the key is shown once, with a copy button), list, revoke.

import {h, replace, field, table, badge} from '../dom.js';
import * as api from '../api.js';
import {section, form, notice, dangerButton, load, copyButton} from '../ui.js';
import {when} from '../format.js';

// shownOnce renders a new key's secret with a copy button and the warning that it will not be
// shown again.
export function shownOnce(key) {
  return h('div', {class: 'secret', id: 'new-key'},
    h('p', {}, h('strong', {}, 'Copy this key now: '), 'it is shown once and never again.'),
    h('div', {class: 'secret-row'}, h('code', {class: 'mono', id: 'new-key-value'}, key), copyButton(key)));
}

export function keyColumns(revoke, extra = []) {
  return [
    {title: 'Name', cell: k => k.name},
    ...extra,
    {title: 'Key', cell: k => h('code', {class: 'mono'}, (k.prefix || '') + '…')},
    {title: 'Models', cell: k => k.models && k.models.length ? k.models.join(', ') : 'all'},
    {title: 'Created', cell: k => when(k.created_at)},
    {title: 'State', cell: k => k.revoked_at ? badge('revoked', 'muted') : badge('active', 'ok')},
    {title: '', cell: k => k.revoked_at ? '' : Object.assign(dangerButton('Revoke', () => revoke(k)), {title: 'Revoke ' + k.name})},
  ];
}

export function keysPage({el}) {
  const created = h('div');
  const listEl = h('div', {id: 'keys'});
  const refresh = () => load(listEl, () => api.list('/api/keys'), keys => table(keyColumns(async k => {
    await api.del('/api/keys/' + encodeURIComponent(k.id));
    notice('Revoked ' + k.name);
    refresh();
  }), keys, 'You have no keys yet.'));
  const f = form([field('Name', h('input', {name: 'name', id: 'key-name', required: true, placeholder: 'laptop'}))], 'Create key', async (v, fm) => {
    const k = await api.post('/api/keys', {name: v.name});
    replace(created, shownOnce(k.key));
    fm.reset();
    refresh();
  }, {inline: true});
  f.id = 'create-key';
  el.append(section('Create a key', h('p', {class: 'muted'}, 'Scripts and tools use a key (Authorization: Bearer sk-…) instead of this session.'), f, created),
    section('My keys', listEl));
  refresh();
}
