// Backups: download an online copy of the database; restore one (checked by the server first:
// a corrupt, foreign or newer file is refused and the live database is left as it was).

import {h, replace, field} from '../dom.js';
import * as api from '../api.js';
import {section, form, notice} from '../ui.js';

export function backupsPage({el}) {
  const result = h('div', {id: 'restore-result'});
  const f = form([
    field('Backup file', h('input', {name: 'file', id: 'restore-file', type: 'file', required: true, accept: '.db,.sqlite,application/octet-stream'})),
  ], 'Restore', async v => {
    if (!v.file) throw new Error('Choose a backup file first.');
    const r = await api.request('POST', '/api/admin/backups/restore', new Blob([await v.file.arrayBuffer()], {type: 'application/octet-stream'}));
    replace(result, h('p', {class: 'ok-text'}, 'Restored ' + (r && r.tables !== undefined ? r.tables + ' tables' : 'the backup') + '.'));
    notice('Backup restored.');
  });
  f.id = 'restore';
  el.append(
    section('Download', h('p', {class: 'muted'}, 'A consistent copy of the database, taken while the server keeps serving.'),
      h('a', {class: 'button primary', id: 'backup-download', href: '/api/admin/backups/download', download: 'superfluid-backup.db'}, 'Download a backup')),
    section('Restore', h('p', {class: 'muted'}, 'Replaces every table with the backup\'s. The file is checked first.'), f, result));
}
