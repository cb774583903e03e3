// Shared pieces of the pages: notices, error boxes, forms that show the server's refusal next
// to the field it names, and timers that stop when the page is left.

import {h, replace} from './dom.js';

// notice shows a short message at the top of the page for a few seconds.
export function notice(text, kind = 'ok') {
  let box = document.getElementById('notices');
  if (!box) {
    box = h('div', {id: 'notices', role: 'status', 'aria-live': 'polite'});
    document.body.append(box);
  }
  const n = h('div', {class: ['notice', 'notice-' + kind]}, text);
  box.append(n);
  setTimeout(() => n.remove(), kind === 'error' ? 8000 : 4000);
}

// errorBox renders an error (an ApiError or any Error) as a message block.
export function errorBox(err) {
  return h('div', {class: 'error', role: 'alert'}, err && err.message ? err.message : String(err));
}

// form builds a <form> from fields (Nodes holding named inputs) and a submit label; onSubmit
// gets the values by name and may throw: the error is shown in the form, and the field the
// server named (param) is marked.
export function form(fields, submitLabel, onSubmit, opts = {}) {
  const msg = h('div', {class: 'form-msg'});
  const button = h('button', {type: 'submit', class: 'primary'}, submitLabel);
  const f = h('form', {class: ['form', opts.inline ? 'form-inline' : ''], novalidate: opts.novalidate}, fields, h('div', {class: 'form-actions'}, button, opts.extra), msg);
  f.addEventListener('submit', async ev => {
    ev.preventDefault();
    replace(msg);
    f.querySelectorAll('.invalid').forEach(el => el.classList.remove('invalid'));
    const values = {};
    for (const el of f.elements) {
      if (!el.name) continue;
      if (el.type === 'checkbox') values[el.name] = el.checked;
      else if (el.type === 'file') values[el.name] = el.files[0] || null;
      else if (el.tagName === 'SELECT' && el.multiple) values[el.name] = [...el.selectedOptions].map(o => o.value);
      else values[el.name] = el.value;
    }
    button.disabled = true;
    try {
      await onSubmit(values, f);
    } catch (err) {
      replace(msg, errorBox(err));
      const bad = err && err.param && f.elements.namedItem(err.param);
      if (bad && bad.classList) { bad.classList.add('invalid'); bad.focus(); }
    } finally {
      button.disabled = false;
    }
  });
  return f;
}

// section is a titled card.
export function section(title, ...children) {
  return h('section', {class: 'card'}, title ? h('h2', {}, title) : null, children);
}

// loading is the placeholder a section shows until its data comes.
export function loading() { return h('p', {class: 'muted'}, 'Loading…'); }

// load fills el with render(data) once get() answers, or with the error.
export async function load(el, get, render) {
  replace(el, loading());
  try {
    replace(el, render(await get()));
  } catch (err) {
    replace(el, errorBox(err));
  }
}

// Page keeps what a page started (timers, streams) so that leaving the page stops them.
export class Page {
  constructor() { this.stops = []; this.left = false; }
  onLeave(fn) { this.stops.push(fn); }
  every(ms, fn) {
    const id = setInterval(fn, ms);
    this.onLeave(() => clearInterval(id));
  }
  leave() { this.left = true; this.stops.forEach(fn => { try { fn(); } catch { /* already stopped */ } }); this.stops = []; }
}

// copyButton copies text to the clipboard and says so.
export function copyButton(text, label = 'Copy') {
  const b = h('button', {type: 'button', class: 'secondary', onclick: async () => {
    try {
      await navigator.clipboard.writeText(text);
      b.textContent = 'Copied';
    } catch {
      // No clipboard permission (an http page): select the text for the person to copy.
      const code = b.parentElement && b.parentElement.querySelector('code');
      if (code) window.getSelection().selectAllChildren(code);
      b.textContent = 'Select and copy';
    }
  }}, label);
  return b;
}

// dangerButton asks once more on the button itself (no blocking dialog): the first click
// turns it into "Confirm?", a second within 4 s runs fn.
export function dangerButton(label, fn) {
  let armed = null;
  const b = h('button', {type: 'button', class: 'danger', onclick: async () => {
    if (!armed) {
      b.textContent = 'Confirm ' + label.toLowerCase() + '?';
      armed = setTimeout(() => { armed = null; b.textContent = label; }, 4000);
      return;
    }
    clearTimeout(armed);
    armed = null;
    b.disabled = true;
    try { await fn(); } catch (err) { notice(err.message, 'error'); } finally { b.disabled = false; b.textContent = label; }
  }}, label);
  return b;
}
