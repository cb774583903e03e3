// A small markdown renderer for untrusted model output. It never parses the text as HTML:
// every node is made with createElement and filled with textContent, so markup in a reply
// (<img onerror=...>, <script>) shows as the characters it is.
"use strict";
(function () {
  function el(tag, cls) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    return e;
  }

  // safeURL keeps http(s) links only (no javascript:, data:, ...).
  function safeURL(u) {
    try {
      const url = new URL(u, "http://invalid/");
      return (url.protocol === "http:" || url.protocol === "https:") && /^https?:\/\//i.test(u) ? url.href : "";
    } catch (e) { return ""; }
  }

  // inline renders `code`, **bold**, *italic* / _italic_ and [text](http...) into parent.
  function inline(parent, text) {
    const re = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|_([^_\s][^_]*)_|\[([^\]]+)\]\(([^)\s]+)\)/g;
    let last = 0, m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > last) parent.appendChild(document.createTextNode(text.slice(last, m.index)));
      if (m[1]) {
        const c = el("code"); c.textContent = m[2]; parent.appendChild(c);
      } else if (m[3] || m[4]) {
        const b = el("strong"); inline(b, m[3] || m[4]); parent.appendChild(b);
      } else if (m[5] || m[6]) {
        const i = el("em"); inline(i, m[5] || m[6]); parent.appendChild(i);
      } else {
        const href = safeURL(m[8]);
        if (href) {
          const a = el("a"); a.href = href; a.rel = "noopener noreferrer"; a.target = "_blank";
          a.textContent = m[7]; parent.appendChild(a);
        } else {
          parent.appendChild(document.createTextNode(m[0]));
        }
      }
      last = re.lastIndex;
    }
    if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
  }

  // render turns markdown text into a DocumentFragment: fenced code, headings, lists,
  // quotes and paragraphs. An unclosed fence (a reply still streaming) is code to the end.
  function render(text) {
    const frag = document.createDocumentFragment();
    const lines = String(text).replace(/\r\n?/g, "\n").split("\n");
    let para = [], list = null;
    const flush = () => {
      if (para.length) {
        const p = el("p");
        para.forEach((l, i) => { if (i) p.appendChild(el("br")); inline(p, l); });
        frag.appendChild(p);
        para = [];
      }
      list = null;
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      let m;
      if ((m = /^\s*(```+|~~~+)\s*([\w+.#-]*)/.exec(line))) {
        flush();
        const fence = m[1], code = [];
        for (i++; i < lines.length && !lines[i].trim().startsWith(fence); i++) code.push(lines[i]);
        const pre = el("pre"), c = el("code");
        if (m[2]) { c.className = "language-" + m[2]; pre.dataset.lang = m[2]; }
        c.textContent = code.join("\n");
        pre.appendChild(c);
        frag.appendChild(pre);
      } else if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
        flush();
        const h = el("h" + Math.min(6, m[1].length + 2));
        inline(h, m[2]);
        frag.appendChild(h);
      } else if ((m = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line))) {
        const tag = /\d/.test(m[1]) ? "ol" : "ul";
        if (para.length) flush();
        if (!list || list.tagName.toLowerCase() !== tag) {
          list = el(tag);
          frag.appendChild(list);
        }
        const li = el("li");
        inline(li, m[2]);
        list.appendChild(li);
      } else if ((m = /^>\s?(.*)$/.exec(line))) {
        flush();
        const q = el("blockquote");
        inline(q, m[1]);
        frag.appendChild(q);
      } else if (line.trim() === "") {
        flush();
      } else {
        list = null;
        para.push(line);
      }
    }
    flush();
    return frag;
  }

  window.sfMarkdown = { render: render };
})();
