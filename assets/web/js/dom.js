// Building the page from data without ever parsing data as HTML: every string child becomes
// a text node, attributes are set one by one, handlers are attached with addEventListener.

const SVG = 'http://www.w3.org/2000/svg';

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.setAttribute('class', Array.isArray(v) ? v.filter(Boolean).join(' ') : v);
    else if (k === 'value' || k === 'checked' || k === 'selected' || k === 'disabled') el[k] = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// h('div', {class: 'x', onclick: fn}, 'text', child, [more]) makes an HTML element.
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// s('rect', {...}) makes an SVG element.
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG, tag), attrs, children);
}

// replace empties el and puts children in it.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// table builds a table: cols is [{title, cell: row => Node|string, class?}].
export function table(cols, rows, empty = 'Nothing here yet.') {
  if (!rows.length) return h('p', {class: 'empty'}, empty);
  return h('div', {class: 'table-wrap'}, h('table', {},
    h('thead', {}, h('tr', {}, cols.map(c => h('th', {class: c.class}, c.title)))),
    h('tbody', {}, rows.map(r => h('tr', {}, cols.map(c => h('td', {class: c.class, 'data-label': c.title}, c.cell(r))))))));
}

// field wraps an input with its label.
export function field(label, input, hint) {
  return h('label', {class: 'field'}, h('span', {}, label), input, hint ? h('small', {}, hint) : null);
}

// select builds a <select> from [value, label] pairs.
export function select(name, options, value) {
  return h('select', {name}, options.map(([v, l]) => h('option', {value: v, selected: v === value}, l)));
}

// badge shows a state word in its colour.
export function badge(text, kind) {
  return h('span', {class: ['badge', 'badge-' + (kind || text)]}, text);
}
