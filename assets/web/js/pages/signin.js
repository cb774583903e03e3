// The sign-in form: a wrong name or password says so, a lockout says how long to wait.

import {h, field} from '../dom.js';
import * as api from '../api.js';
import {form} from '../ui.js';
import {waitText} from '../format.js';

export function signIn(done) {
  const f = form([
    field('Name', h('input', {name: 'name', id: 'signin-name', autocomplete: 'username', required: true, autofocus: true})),
    field('Password', h('input', {name: 'password', id: 'signin-password', type: 'password', autocomplete: 'current-password', required: true})),
  ], 'Sign in', async v => {
    try {
      done(await api.post('/api/auth/login', {name: v.name, password: v.password}, {quiet: true}));
    } catch (err) {
      if (err.code === 'too_many_attempts') {
        const wait = err.retryAfter ? ' Try again in ' + waitText(err.retryAfter) + '.' : ' Try again later.';
        throw new Error('Too many failed sign-ins.' + wait);
      }
      if (err.code === 'invalid_credentials') throw new Error('Wrong name or password.');
      throw err;
    }
  });
  f.id = 'signin';
  return h('div', {class: 'signin'},
    h('div', {class: 'card signin-card'},
      h('h1', {}, h('img', {src: 'icon.svg', alt: ''}), 'SlotServe'),
      h('p', {class: 'muted'}, 'Sign in with the name and password your admin gave you.'),
      f));
}
