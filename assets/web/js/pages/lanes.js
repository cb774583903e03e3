// Lanes and what they serve, refreshed every 2 s; an admin also adds, switches and removes them.

import {h, replace, field, badge, select} from '../dom.js';
import * as api from '../api.js';
import {section, errorBox, form, dangerButton, notice} from '../ui.js';
import {when, num} from '../format.js';

const stateKind = {serving: 'ok', switching: 'warn', unavailable: 'bad'};

// holder reads who holds the lane's current booking, whichever way the lane object says it.
export function holder(l) {
  const b = l.booking || l.current_booking || null;
  const name = l.booked_by || l.holder || (b && (b.person || b.person_name)) || '';
  const until = l.booked_until || l.until || (b && (b.until || b.end)) || null;
  return name ? {name, until} : null;
}

export function lanesPage({el, page, admin}) {
  const grid = h('div', {class: 'lanes', id: 'lanes'});
  const status = h('p', {class: 'muted small', id: 'lanes-updated'});
  el.append(section(null, h('p', {class: 'muted'}, 'Each lane is a slot on a device serving one model. The state updates live.'), status, grid));
  const devices = h('select', {name: 'device', required: true});
  if (admin) el.append(addLane(devices, () => refresh()));

  async function refresh() {
    try {
      const answer = await api.get('/api/lanes');
      const lanes = (answer && answer.data) || [];
      if (page.left) return;
      if (admin && !devices.options.length) {
        // The machine's devices, and "remote" for a forwarding lane whose server is elsewhere.
        const names = [...((answer && answer.devices) || []).map(d => d.name), 'remote'];
        names.forEach(n => devices.append(h('option', {value: n}, n)));
      }
      replace(grid, lanes.length ? lanes.map(l => laneCard(l, admin, refresh)) : h('p', {class: 'empty'}, 'No lanes yet.' + (admin ? ' Add one below.' : ' An admin adds them.')));
      status.textContent = 'Updated ' + new Date().toLocaleTimeString();
    } catch (err) {
      if (!page.left) replace(grid, errorBox(err));
    }
  }
  refresh();
  page.every(2000, refresh);
}

function laneCard(l, admin, refresh) {
  const who = holder(l);
  const card = h('article', {class: 'lane', dataset: {lane: l.name || l.id, state: l.state}},
    h('header', {}, h('h3', {}, l.name || l.id), badge(l.state, stateKind[l.state] || 'muted')),
    h('dl', {},
      h('dt', {}, 'Model'), h('dd', {class: 'mono'}, l.model || '—'),
      h('dt', {}, 'Device'), h('dd', {}, l.device || '—'),
      h('dt', {}, 'Engine'), h('dd', {}, l.engine || '—'),
      h('dt', {}, 'Running'), h('dd', {}, num(l.inflight || 0) + ' requests'),
      h('dt', {}, 'Booked'), h('dd', {class: 'lane-holder'}, who ? [who.name, who.until ? ' until ' + when(who.until) : ''] : 'free')),
    l.error ? h('p', {class: 'error small'}, l.error) : null);
  if (admin) {
    const model = h('input', {name: 'model', value: l.model || '', 'aria-label': 'Model for ' + (l.name || l.id)});
    card.append(h('div', {class: 'lane-admin'},
      form([model], 'Switch', async v => {
        await api.patch('/api/admin/lanes/' + encodeURIComponent(l.id || l.name), {model: v.model});
        notice('Switching ' + (l.name || l.id) + ' to ' + v.model);
        refresh();
      }, {inline: true}),
      dangerButton('Remove', async () => {
        await api.del('/api/admin/lanes/' + encodeURIComponent(l.id || l.name));
        notice('Removed ' + (l.name || l.id));
        refresh();
      })));
  }
  return card;
}

function addLane(devices, refresh) {
  const f = form([
    field('Name', h('input', {name: 'name', required: true, placeholder: 'gpu0-a'})),
    field('Device', devices),
    field('Engine', select('engine', [['local', 'local (this server)'], ['openai', 'openai (forward)'], ['command', 'command (supervised server)']], 'local')),
    field('Model', h('input', {name: 'model', required: true, placeholder: 'a catalog id'})),
    field('URL', h('input', {name: 'url', placeholder: 'openai: http://host:8000/v1'})),
  ], 'Add lane', async (v, fm) => {
    const body = {name: v.name, device: v.device, engine: v.engine, model: v.model};
    if (v.url) body.url = v.url;
    await api.post('/api/admin/lanes', body);
    notice('Added lane ' + v.name);
    fm.reset();
    refresh();
  });
  f.id = 'add-lane';
  return section('Add a lane', f);
}
