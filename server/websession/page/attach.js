// Attachments of the --web playground: images and audio clips picked with Attach, pasted or
// dropped, shown as chips (an image's preview is an object URL: the page's CSP allows blob:
// images), uploaded with POST /web/attachments when a message is sent (a file is bigger than a
// WebSocket frame can carry), and named by id in the chat call.
"use strict";
(function () {
  // The files the playground takes, by extension; a browser's own type is used when it agrees.
  const TYPES = {
    png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", webp: "image/webp", gif: "image/gif",
    wav: "audio/wav", mp3: "audio/mpeg", flac: "audio/flac",
  };
  const ALIASES = { "audio/x-wav": "audio/wav", "audio/wave": "audio/wav", "audio/vnd.wave": "audio/wav", "audio/mp3": "audio/mpeg", "audio/x-flac": "audio/flac" };

  function typeOf(file) {
    const ext = (/\.([a-z0-9]+)$/i.exec(file.name || "") || [])[1];
    if (ext && TYPES[ext.toLowerCase()]) return TYPES[ext.toLowerCase()];
    const t = ALIASES[file.type] || file.type;
    return Object.values(TYPES).includes(t) ? t : "";
  }
  function kindOf(mime) { return mime.split("/")[0]; }

  function sizeText(n) {
    if (n < 1000) return n + " B";
    if (n < 1e6) return (n / 1e3).toFixed(1) + " kB";
    return (n / 1e6).toFixed(1) + " MB";
  }

  // chip is one attachment's node: preview or icon, name, size, and ✕ when onRemove is given.
  function chip(a, onRemove) {
    const d = document.createElement("span");
    d.className = "chip";
    d.dataset.kind = a.kind;
    if (a.kind === "image" && a.url) {
      const img = document.createElement("img");
      img.src = a.url; img.alt = a.name;
      d.appendChild(img);
    } else {
      const icon = document.createElement("span");
      icon.className = "icon"; icon.textContent = a.kind === "audio" ? "♪" : "▣";
      d.appendChild(icon);
    }
    const name = document.createElement("span");
    name.className = "name"; name.textContent = a.name; name.title = a.name;
    const size = document.createElement("span");
    size.className = "size"; size.textContent = sizeText(a.size);
    d.append(name, size);
    if (onRemove) {
      const x = document.createElement("button");
      x.type = "button"; x.className = "x"; x.textContent = "✕";
      x.setAttribute("aria-label", "Remove " + a.name);
      x.onclick = onRemove;
      d.appendChild(x);
    }
    return d;
  }

  // create wires the Attach button, the file input, paste into the input and drops on the
  // chat to a list of pending attachments; say shows a message to the person.
  function create({ button, input, chips, note, textarea, dropZone, headers, say }) {
    const self = { pending: [], model: null, maxBytes: 0 };

    self.setModel = (m) => {
      self.model = m || null;
      const takes = [];
      if (m && m.vision) takes.push("image");
      if (m && m.audio) takes.push("audio");
      button.disabled = takes.length === 0;
      input.accept = Object.entries(TYPES).filter(([, t]) => takes.includes(kindOf(t))).map(([e]) => "." + e).join(",");
      note.textContent = !m ? "" : takes.length ? "attach, paste or drop " + takes.join(" or ") + " files"
        : m.id + " takes text only: choose a model that sees or hears to attach files";
      document.body.dataset.attach = takes.join(",");
    };

    // add attaches files the model can take; anything else is refused, saying why.
    self.add = (files) => {
      for (const file of files) {
        const mime = typeOf(file), kind = kindOf(mime);
        const model = self.model ? self.model.id : "the chosen model";
        if (!mime) { say(file.name + ": attach a PNG, JPEG, WebP or GIF image, or a WAV, MP3 or FLAC audio file"); continue; }
        if (kind === "image" && !(self.model && self.model.vision) || kind === "audio" && !(self.model && self.model.audio)) {
          say(file.name + " is " + (kind === "image" ? "an image" : "an audio clip") + ", and " + model + " does not take " + kind + " input"); continue;
        }
        if (self.maxBytes && file.size > self.maxBytes) {
          say(file.name + " is over " + Math.round(self.maxBytes / 1048576) + " MiB, the largest file the playground takes: attach a smaller one"); continue;
        }
        if (file.size === 0) { say(file.name + " is empty"); continue; }
        self.pending.push({ file, name: file.name || "pasted." + mime.split("/")[1], mime, kind, size: file.size,
          url: kind === "image" ? URL.createObjectURL(file) : "", id: "" });
      }
      self.render();
    };
    self.render = () => {
      chips.textContent = "";
      self.pending.forEach((a, i) => chips.appendChild(chip(a, () => { self.pending.splice(i, 1); release([a]); self.render(); })));
      chips.hidden = self.pending.length === 0;
    };
    // take hands the pending attachments to a message; restore puts them back.
    self.take = () => { const out = self.pending; self.pending = []; self.render(); return out; };
    self.restore = (atts) => { self.pending = atts.concat(self.pending); self.render(); };

    // upload sends each attachment of msgs not yet held by the server; the chat names them by id.
    self.upload = async (msgs) => {
      for (const m of msgs) {
        for (const a of m.attachments || []) {
          if (a.id) continue;
          const h = headers();
          h["Content-Type"] = a.mime;
          const resp = await fetch("/web/attachments?name=" + encodeURIComponent(a.name), { method: "POST", headers: h, body: a.file });
          const body = await resp.json().catch(() => ({}));
          if (!resp.ok) throw new Error((body.error && body.error.message) || "uploading " + a.name + " failed: HTTP " + resp.status);
          a.id = body.id;
        }
      }
    };
    // forget drops the server's ids (it no longer holds the files): the next upload sends them again.
    self.forget = (msgs) => { for (const m of msgs) for (const a of m.attachments || []) a.id = ""; };
    self.wire = (a) => ({ id: a.id, name: a.name });

    function release(atts) { for (const a of atts) if (a.url) URL.revokeObjectURL(a.url); }
    self.release = (msgs) => { for (const m of msgs) release(m.attachments || []); };

    button.onclick = () => input.click();
    input.onchange = () => { self.add(Array.from(input.files)); input.value = ""; };
    textarea.addEventListener("paste", (e) => {
      const files = Array.from((e.clipboardData && e.clipboardData.files) || []);
      if (!files.length) return;
      e.preventDefault();
      self.add(files);
    });
    const hasFiles = (e) => e.dataTransfer && Array.from(e.dataTransfer.types || []).includes("Files");
    dropZone.addEventListener("dragover", (e) => { if (hasFiles(e)) { e.preventDefault(); dropZone.classList.add("dropping"); } });
    dropZone.addEventListener("dragleave", () => dropZone.classList.remove("dropping"));
    dropZone.addEventListener("drop", (e) => {
      dropZone.classList.remove("dropping");
      if (!hasFiles(e)) return;
      e.preventDefault();
      self.add(Array.from(e.dataTransfer.files));
    });
    return self;
  }

  window.sfAttach = { create, chip };
})();
