// Storage admin: add and edit storages (a local folder, an S3-compatible bucket, an SMB or NFS
// mount), check access, see usage. The secret is write-only: the form never shows one back,
// only whether one is stored; leaving it empty on an edit keeps it.

import {h, replace, field, table, badge, select} from '../dom.js';
import * as api from '../api.js';
import {section, form, notice, load, dangerButton} from '../ui.js';
import {bytes, num, ms} from '../format.js';
import {storageWhere} from './storage.js';

export function adminStoragePage({el}) {
  const listEl = h('div', {id: 'admin-storage'});
  const editor = h('div', {id: 'storage-editor'});
  let people = [];
  api.list('/api/admin/users').then(p => { people = p; }).catch(() => {});

  const refresh = () => load(listEl, () => api.list('/api/admin/storage'), list => table([
    {title: 'Name', cell: s => s.name},
    {title: 'Kind', cell: s => badge(s.kind, 'muted')},
    {title: 'Where', cell: s => h('span', {class: 'mono'}, storageWhere(s))},
    {title: 'Secret', cell: s => s.has_password ? 'stored' : 'none'},
    {title: 'Who', cell: s => s.shared ? 'everyone' : ((s.people || []).length === 1 ? '1 person' : (s.people || []).length + ' people')},
    {title: 'Check', cell: s => checkCell(s)},
    {title: '', cell: s => h('span', {class: 'actions'},
      h('button', {type: 'button', class: 'secondary', onclick: () => edit(s)}, 'Edit'),
      dangerButton('Delete', async () => { await api.del('/api/admin/storage/' + encodeURIComponent(s.id)); notice('Deleted ' + s.name); refresh(); }))},
  ], list, 'No storage yet: models live in the models folder.'));

  function checkCell(s) {
    const out = h('span', {class: 'small', dataset: {check: s.id}});
    const run = async (what) => {
      replace(out, '…');
      try {
        if (what === 'check') {
          const r = await api.post('/api/admin/storage/' + encodeURIComponent(s.id) + '/check');
          replace(out, r.ok ? badge('ok · ' + ms(r.latency_ms), 'ok') : h('span', {class: 'error-text'}, 'failed: ' + (r.reason || '')));
        } else {
          const u = await api.get('/api/admin/storage/' + encodeURIComponent(s.id) + '/usage');
          replace(out, bytes(u.bytes) + ' in ' + num(u.objects) + ' files');
        }
      } catch (err) {
        replace(out, h('span', {class: 'error-text'}, err.message));
      }
    };
    return h('span', {class: 'actions'},
      h('button', {type: 'button', class: 'secondary', title: 'Check ' + s.name, onclick: () => run('check')}, 'Check'),
      h('button', {type: 'button', class: 'secondary', title: 'Usage of ' + s.name, onclick: () => run('usage')}, 'Usage'), out);
  }

  function edit(s) {
    const isNew = !s;
    s = s || {kind: 'local', shared: true, people: []};
    const kind = select('kind', [['local', 'local folder'], ['s3', 'S3-compatible bucket'], ['smb', 'SMB mount'], ['nfs', 'NFS mount']], s.kind);
    const mounted = h('div', {class: 'kind-fields'},
      field('Path', h('input', {name: 'path', value: s.path || '', placeholder: '/srv/models (already mounted)'})));
    const s3 = h('div', {class: 'kind-fields'},
      field('Endpoint', h('input', {name: 'endpoint', value: s.endpoint || '', placeholder: 'https://s3.example.com'})),
      field('Bucket', h('input', {name: 'bucket', value: s.bucket || ''})),
      field('Region', h('input', {name: 'region', value: s.region || ''})),
      field('Prefix', h('input', {name: 'prefix', value: s.prefix || ''})),
      field('Access key', h('input', {name: 'access_key', value: s.access_key || '', autocomplete: 'off'})),
      field('Secret key', h('input', {name: 'password', type: 'password', autocomplete: 'new-password', value: '',
        placeholder: s.has_password ? 'stored — type to replace' : ''}), 'Write-only: never shown again.'));
    const show = () => { mounted.hidden = kind.value === 's3'; s3.hidden = kind.value !== 's3'; };
    kind.addEventListener('change', show);
    show();
    const who = h('select', {name: 'people', multiple: true, size: 4}, people.map(p => h('option', {value: p.id, selected: (s.people || []).includes(p.id)}, p.name)));
    const f = form([
      field('Name', h('input', {name: 'name', value: s.name || '', required: true})),
      field('Kind', kind), mounted, s3,
      h('label', {class: 'check'}, h('input', {type: 'checkbox', name: 'shared', checked: !!s.shared}), ' everyone may use it'),
      field('Or only', who),
    ], isNew ? 'Add storage' : 'Save', async v => {
      const body = {name: v.name, kind: v.kind, shared: v.shared, people: v.people};
      if (v.kind === 's3') Object.assign(body, {endpoint: v.endpoint, bucket: v.bucket, region: v.region, prefix: v.prefix, access_key: v.access_key});
      else body.path = v.path;
      if (v.password) body.password = v.password;
      if (isNew) await api.post('/api/admin/storage', body);
      else await api.put('/api/admin/storage/' + encodeURIComponent(s.id), body);
      notice((isNew ? 'Added ' : 'Saved ') + v.name);
      replace(editor, addButton());
      refresh();
    }, {extra: h('button', {type: 'button', class: 'secondary', onclick: () => replace(editor, addButton())}, 'Close')});
    f.id = 'storage-form';
    replace(editor, section(isNew ? 'Add storage' : 'Edit ' + s.name, f));
  }
  const addButton = () => h('button', {type: 'button', class: 'primary', id: 'add-storage', onclick: () => edit(null)}, 'Add storage');
  replace(editor, addButton());
  el.append(editor, section('Storages', listEl));
  refresh();
}
