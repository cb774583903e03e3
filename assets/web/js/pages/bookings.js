// Bookings: a week calendar of the lanes' bookings, a form to book, one's own list with
// cancel, and for an admin the pending requests to approve or reject.

import {h, replace, field, table, badge, select} from '../dom.js';
import * as api from '../api.js';
import {section, errorBox, form, notice, dangerButton} from '../ui.js';
import {when, toDate, localInput} from '../format.js';

const HOUR = 26; // px per hour in the week view
const stateKind = {approved: 'ok', pending: 'warn', rejected: 'bad', cancelled: 'muted'};

function weekStart(d) {
  const s = new Date(d);
  s.setHours(0, 0, 0, 0);
  s.setDate(s.getDate() - ((s.getDay() + 6) % 7)); // Monday
  return s;
}

export function bookingsPage({el, page, user, admin}) {
  let week = weekStart(new Date());
  let lanes = [], mine = [], all = [];
  // What the tables show: redrawn only when it changes, so that a half-confirmed Cancel
  // survives the refresh.
  let shownMine = '', shownPending = '';
  // Bookings name their lane by id; show its name.
  const laneName = b => {
    const l = lanes.find(x => x.id === b.lane || x.name === b.lane);
    return l ? l.name : (b.lane || (b.device ? 'all of ' + b.device : '—'));
  };
  const cal = h('div', {class: 'week', id: 'week'});
  const title = h('strong', {class: 'week-title'});
  const pending = h('div', {id: 'pending'});
  const own = h('div', {id: 'my-bookings'});
  const laneSelect = h('select', {name: 'lane', id: 'book-lane', required: true});
  const start = h('input', {name: 'start', id: 'book-start', type: 'datetime-local', required: true});
  const end = h('input', {name: 'end', id: 'book-end', type: 'datetime-local', required: true});
  const now = new Date();
  now.setMinutes(0, 0, 0);
  start.value = localInput(new Date(now.getTime() + 3600e3));
  end.value = localInput(new Date(now.getTime() + 2 * 3600e3));

  const startNow = h('input', {type: 'checkbox', name: 'now', id: 'book-now'});
  startNow.addEventListener('change', () => { start.disabled = startNow.checked; });
  const book = form([
    field('Lane', laneSelect),
    field('From', start),
    h('label', {class: 'check'}, startNow, ' starting now'),
    field('Until', end),
    field('Model', h('input', {name: 'model', placeholder: 'optional: switch the lane to this model'})),
  ], 'Book', async (v, f) => {
    if (!v.now && !start.value) throw Object.assign(new Error('Say when the booking starts.'), {param: 'start'});
    if (!end.value) throw Object.assign(new Error('Say when the booking ends.'), {param: 'end'});
    const body = {lane: v.lane, start: v.now ? 'now' : new Date(start.value).toISOString(), end: new Date(end.value).toISOString()};
    if (v.model) body.model = v.model;
    const b = await api.post('/api/bookings', body);
    notice(b.state === 'pending' ? 'Booked; waiting for an admin to approve it.' : 'Booked.');
    f.elements.namedItem('model').value = '';
    refresh();
  });
  book.id = 'book';

  el.append(
    section(null, h('div', {class: 'week-nav'},
      h('button', {type: 'button', class: 'secondary', onclick: () => { week = new Date(week.getTime() - 7 * 86400e3); draw(); }}, '‹ Previous'),
      title,
      h('button', {type: 'button', class: 'secondary', onclick: () => { week = weekStart(new Date()); draw(); }}, 'This week'),
      h('button', {type: 'button', class: 'secondary', onclick: () => { week = new Date(week.getTime() + 7 * 86400e3); draw(); }}, 'Next ›')),
    h('p', {class: 'muted small'}, 'Click an hour to start a booking there.'), cal),
    h('div', {class: 'cols'}, section('Book a lane', book), section('My bookings', own)));
  if (admin) el.insertBefore(section('Waiting for approval', pending), el.firstChild);

  async function refresh() {
    try {
      [lanes, mine] = await Promise.all([api.list('/api/lanes'), api.list('/api/bookings')]);
      all = admin ? await api.list('/api/admin/reservations') : mine;
    } catch (err) {
      replace(own, errorBox(err));
      return;
    }
    if (page.left) return;
    const chosen = laneSelect.value;
    replace(laneSelect, lanes.map(l => h('option', {value: l.name || l.id, selected: (l.name || l.id) === chosen}, (l.name || l.id) + ' — ' + (l.model || ''))));
    draw();
    const mineNow = JSON.stringify([mine, lanes.map(l => [l.id, l.name])]);
    if (mineNow !== shownMine) {
      shownMine = mineNow;
      replace(own, table([
      {title: 'Lane', cell: laneName},
      {title: 'From', cell: b => when(b.start)},
      {title: 'Until', cell: b => when(b.end)},
      {title: 'State', cell: b => badge(b.state, stateKind[b.state])},
      {title: '', cell: b => (b.state === 'pending' || b.state === 'approved') && toDate(b.end) > new Date()
        ? dangerButton('Cancel', async () => { await api.post('/api/bookings/' + encodeURIComponent(b.id) + '/cancel'); notice('Cancelled.'); refresh(); }) : ''},
    ], [...mine].sort((a, b) => b.start - a.start), 'You have no bookings.'));
    }
    const waiting = all.filter(b => b.state === 'pending');
    if (admin && JSON.stringify(waiting) !== shownPending) {
      shownPending = JSON.stringify(waiting);
      replace(pending, table([
        {title: 'Person', cell: b => b.person || b.person_id},
        {title: 'Lane', cell: laneName},
        {title: 'From', cell: b => when(b.start)},
        {title: 'Until', cell: b => when(b.end)},
        {title: '', cell: b => h('span', {class: 'actions'},
          h('button', {type: 'button', class: 'primary', dataset: {approve: b.id}, onclick: () => decide(b, 'approve')}, 'Approve'),
          h('button', {type: 'button', class: 'danger', dataset: {reject: b.id}, onclick: () => decide(b, 'reject')}, 'Reject'))},
      ], waiting, 'Nothing is waiting.'));
    }
  }

  async function decide(b, action) {
    try {
      await api.post('/api/admin/reservations/' + encodeURIComponent(b.id) + '/' + action);
      notice(action === 'approve' ? 'Approved.' : 'Rejected.');
    } catch (err) {
      notice(err.message, 'error');
    }
    refresh();
  }

  function draw() {
    const days = [...Array(7)].map((_, i) => new Date(week.getFullYear(), week.getMonth(), week.getDate() + i));
    title.textContent = days[0].toLocaleDateString([], {month: 'short', day: 'numeric'}) + ' – ' + days[6].toLocaleDateString([], {month: 'short', day: 'numeric', year: 'numeric'});
    const hours = h('div', {class: 'week-hours'}, h('div', {class: 'week-head'}), [...Array(24)].map((_, hr) => h('div', {class: 'week-hour'}, String(hr).padStart(2, '0') + ':00')));
    const cols = days.map(day => {
      const col = h('div', {class: 'week-day'});
      for (let hr = 0; hr < 24; hr++) {
        const at = new Date(day.getFullYear(), day.getMonth(), day.getDate(), hr);
        col.append(h('button', {type: 'button', class: 'week-slot', 'aria-label': 'Book from ' + at.toLocaleString(), onclick: () => {
          start.value = localInput(at);
          end.value = localInput(new Date(at.getTime() + 3600e3));
          laneSelect.focus();
        }}));
      }
      const dayStart = day.getTime(), dayEnd = dayStart + 86400e3;
      for (const b of all) {
        if (b.state === 'rejected' || b.state === 'cancelled') continue;
        const s = toDate(b.start).getTime(), e = toDate(b.end).getTime();
        if (e <= dayStart || s >= dayEnd) continue;
        const top = (Math.max(s, dayStart) - dayStart) / 3600e3 * HOUR;
        const height = Math.max((Math.min(e, dayEnd) - Math.max(s, dayStart)) / 3600e3 * HOUR, 14);
        const block = h('div', {class: ['booking', 'booking-' + b.state, b.person_id === user.id ? 'booking-mine' : ''], dataset: {booking: b.id},
          title: (b.person || '') + ' · ' + laneName(b) + ' · ' + when(b.start) + ' – ' + when(b.end) + ' · ' + b.state},
        h('span', {class: 'booking-lane'}, laneName(b)), ' ', h('span', {class: 'booking-who'}, b.person || ''));
        block.style.top = top + 'px';
        block.style.height = height + 'px';
        col.append(block);
      }
      return h('div', {class: ['week-col', sameDay(day, new Date()) ? 'today' : '']},
        h('div', {class: 'week-head'}, day.toLocaleDateString([], {weekday: 'short', day: 'numeric'})), col);
    });
    const old = cal.querySelector('.week-grid');
    const grid = h('div', {class: 'week-grid'}, hours, cols);
    replace(cal, grid);
    // Keep the scroll across refreshes; at first show the day from two hours before now.
    grid.scrollTop = old ? old.scrollTop : Math.max(0, new Date().getHours() - 2) * HOUR;
  }

  refresh();
  page.every(5000, refresh);
}

function sameDay(a, b) {
  return a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();
}
