// The runtime log, live: the recent lines, then each new one as the server writes it (SSE,
// event "log"); pausing keeps the stream but stops scrolling, and a download link gets it all.

import {h, select} from '../dom.js';
import {section} from '../ui.js';
import {clock} from '../format.js';

const MAX_LINES = 2000;

export function logPage({el, page}) {
  const lines = h('ol', {class: 'log', id: 'log-lines'});
  const state = h('span', {class: 'badge badge-muted', id: 'log-state'}, 'connecting');
  const level = select('level', [['', 'all levels'], ['INFO', 'info and up'], ['WARN', 'warnings and errors'], ['ERROR', 'errors']], '');
  const filter = h('input', {type: 'search', placeholder: 'filter', 'aria-label': 'Filter the log'});
  const pause = h('button', {type: 'button', class: 'secondary'}, 'Pause');
  let paused = false;
  pause.addEventListener('click', () => { paused = !paused; pause.textContent = paused ? 'Resume' : 'Pause'; if (!paused) lines.lastElementChild?.scrollIntoView({block: 'nearest'}); });
  const rank = {DEBUG: 0, INFO: 1, WARN: 2, WARNING: 2, ERROR: 3};
  const visible = li => (!level.value || (rank[li.dataset.level] ?? 1) >= rank[level.value]) && (!filter.value || li.textContent.toLowerCase().includes(filter.value.toLowerCase()));
  const refilter = () => { for (const li of lines.children) li.hidden = !visible(li); };
  level.addEventListener('change', refilter);
  filter.addEventListener('input', refilter);

  el.append(section(null,
    h('div', {class: 'toolbar'}, state, level, filter, pause,
      h('a', {class: 'button secondary', href: '/api/admin/runtime/log', download: 'runtime.log'}, 'Download')),
    h('div', {class: 'log-box'}, lines)));

  const src = new EventSource('/api/admin/runtime/log/stream?backlog=100');
  page.onLeave(() => src.close());
  src.addEventListener('open', () => { state.textContent = 'live'; state.className = 'badge badge-ok'; });
  src.addEventListener('error', () => { state.textContent = src.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting'; state.className = 'badge badge-warn'; });
  src.addEventListener('log', ev => {
    let line;
    try { line = JSON.parse(ev.data); } catch { line = {message: ev.data}; }
    const lvl = String(line.level || 'INFO').toUpperCase();
    const attrs = line.attrs && typeof line.attrs === 'object' ? Object.entries(line.attrs).map(([k, v]) => k + '=' + (typeof v === 'string' ? v : JSON.stringify(v))).join(' ') : '';
    const li = h('li', {class: 'log-' + lvl.toLowerCase(), dataset: {level: lvl}},
      h('time', {}, clock(line.at)), h('span', {class: 'log-level'}, lvl), h('span', {class: 'log-msg'}, line.message || ''), attrs ? h('span', {class: 'log-attrs'}, attrs) : null);
    li.hidden = !visible(li);
    lines.append(li);
    while (lines.childElementCount > MAX_LINES) lines.firstElementChild.remove();
    if (!paused) li.scrollIntoView({block: 'nearest'});
  });
}
