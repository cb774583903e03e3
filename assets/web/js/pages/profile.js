// One's own profile and password.

import {h, field} from '../dom.js';
import * as api from '../api.js';
import {section, form, notice, load} from '../ui.js';
import {when} from '../format.js';

export function profilePage({el}) {
  const info = h('div', {id: 'profile'});
  load(info, () => api.get('/api/profile'), u => h('dl', {class: 'facts'},
    h('dt', {}, 'Name'), h('dd', {}, u.name),
    h('dt', {}, 'Role'), h('dd', {}, u.role),
    h('dt', {}, 'State'), h('dd', {}, u.state),
    h('dt', {}, 'Since'), h('dd', {}, when(u.created_at))));
  const f = form([
    field('Current password', h('input', {name: 'current_password', type: 'password', autocomplete: 'current-password', required: true})),
    field('New password', h('input', {name: 'new_password', type: 'password', autocomplete: 'new-password', required: true})),
  ], 'Change password', async (v, fm) => {
    await api.put('/api/profile/password', {current_password: v.current_password, new_password: v.new_password});
    // The change rotated this session: its CSRF token is new too.
    const me = await api.get('/api/auth/me');
    api.setCSRF(me.csrf_token);
    notice('Password changed; your other sessions were signed out.');
    fm.reset();
  });
  el.append(section('Me', info), section('Password', f));
}
