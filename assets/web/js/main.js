// The single-page app: sign-in, then the shell (navigation by role) and one page at a time,
// picked by the address's #fragment (#/lanes, #/admin/log, ...).

import {h, replace} from './dom.js';
import * as api from './api.js';
import {Page, notice} from './ui.js';
import {signIn} from './pages/signin.js';
import {pages, navigation} from './pages/index.js';

const root = document.getElementById('app');
let me = null;
let current = null;

api.onSignedOut(() => {
  if (!me) return;
  me = null;
  notice('Your session ended; sign in again.', 'error');
  showSignIn();
});

async function boot() {
  try {
    const v = await api.get('/api/auth/me', {quiet: true});
    signedIn(v);
  } catch (err) {
    if (err.status === 401) showSignIn();
    else replace(root, h('div', {class: 'error boot'}, 'The server could not be reached: ' + err.message));
  }
}

function showSignIn() {
  if (current) current.leave();
  current = null;
  document.title = 'Sign in · SlotServe';
  replace(root, signIn(v => signedIn(v)));
}

function signedIn(v) {
  me = v.user;
  api.setCSRF(v.csrf_token);
  renderShell();
  route();
}

function renderShell() {
  const admin = me.role === 'admin';
  const nav = h('nav', {class: 'nav', 'aria-label': 'Pages'},
    navigation(admin).map(group => h('div', {class: 'nav-group'},
      h('div', {class: 'nav-title'}, group.title),
      group.items.map(([hash, label]) => h('a', {href: '#' + hash, dataset: {page: hash}}, label)))));
  const logout = h('button', {type: 'button', class: 'secondary', id: 'logout', onclick: async () => {
    try { await api.post('/api/auth/logout'); } catch { /* signed out either way */ }
    me = null;
    api.setCSRF('');
    showSignIn();
  }}, 'Sign out');
  replace(root,
    h('header', {class: 'top'},
      h('a', {class: 'brand', href: '#/lanes'}, h('img', {src: 'icon.svg', alt: ''}), 'SlotServe'),
      h('span', {class: 'who'}, h('span', {id: 'who-name'}, me.name), ' · ', me.role),
      logout),
    h('div', {class: 'layout'}, nav, h('main', {id: 'main', tabindex: '-1'})));
}

function route() {
  if (!me) return;
  const admin = me.role === 'admin';
  let hash = location.hash.replace(/^#/, '') || '/lanes';
  let page = pages[hash];
  if (!page || (page.admin && !admin)) { hash = '/lanes'; page = pages[hash]; }
  if (current) current.leave();
  current = new Page();
  document.querySelectorAll('.nav a').forEach(a => a.classList.toggle('active', a.dataset.page === hash));
  const main = document.getElementById('main');
  document.title = page.title + ' · SlotServe';
  replace(main, h('h1', {}, page.title));
  const body = h('div', {class: 'page', id: 'page-' + hash.replace(/\W+/g, '-').replace(/^-/, '')});
  main.append(body);
  page.render({el: body, page: current, user: me, admin});
}

window.addEventListener('hashchange', route);
boot();
