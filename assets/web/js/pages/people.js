// People: add, change role, disable or enable (disabling ends their sessions and bookings),
// set a new password.

import {h, field, table, badge, select} from '../dom.js';
import * as api from '../api.js';
import {section, form, notice, load, dangerButton} from '../ui.js';
import {when} from '../format.js';

export function peoplePage({el, user}) {
  const listEl = h('div', {id: 'people'});
  const made = h('div');
  const refresh = () => load(listEl, () => api.list('/api/admin/users'), people => table([
    {title: 'Name', cell: p => p.name},
    {title: 'Role', cell: p => p.role},
    {title: 'State', cell: p => badge(p.state, p.state === 'active' ? 'ok' : 'muted')},
    {title: 'Since', cell: p => when(p.created_at)},
    {title: '', cell: p => p.id === user.id ? h('span', {class: 'muted small'}, 'you') : h('span', {class: 'actions'},
      h('button', {type: 'button', class: 'secondary', onclick: () => change(p, {role: p.role === 'admin' ? 'member' : 'admin'})}, p.role === 'admin' ? 'Make member' : 'Make admin'),
      p.state === 'active'
        ? dangerButton('Disable', () => change(p, {state: 'disabled'}))
        : h('button', {type: 'button', class: 'secondary', onclick: () => change(p, {state: 'active'})}, 'Enable'))},
  ], people));
  async function change(p, body) {
    try {
      await api.patch('/api/admin/users/' + encodeURIComponent(p.id), body);
      notice('Updated ' + p.name);
    } catch (err) {
      notice(err.message, 'error');
    }
    refresh();
  }
  const f = form([
    field('Name', h('input', {name: 'name', required: true})),
    field('Password', h('input', {name: 'password', type: 'password', autocomplete: 'new-password'}), 'Leave empty to have one made up.'),
    field('Role', select('role', [['member', 'member'], ['admin', 'admin']], 'member')),
  ], 'Add person', async (v, fm) => {
    const body = {name: v.name, role: v.role};
    if (v.password) body.password = v.password;
    const p = await api.post('/api/admin/users', body);
    made.replaceChildren(p.password ? h('div', {class: 'secret'}, h('p', {}, 'Password for ' + p.name + ' (shown once): '), h('code', {class: 'mono'}, p.password)) : '');
    notice('Added ' + p.name);
    fm.reset();
    refresh();
  });
  el.append(section('Add a person', f, made), section('People', listEl));
  refresh();
}
