// The --web playground: the desktop playground's features in a browser, over superfluid's
// browser transport (a WebSocket at /web/ws, falling back to POST /web/rpc and /web/stream).
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const TOKEN_KEY = "superfluid-web-token";

  // The token arrives in the URL fragment (never sent to a server, never in a log); it is kept
  // for this tab only and removed from the address bar at once.
  function takeToken() {
    const m = /(?:^#|&)token=([0-9a-fA-F]+)/.exec(location.hash);
    if (m) {
      sessionStorage.setItem(TOKEN_KEY, m[1]);
      history.replaceState(null, "", location.pathname + location.search);
    }
    return sessionStorage.getItem(TOKEN_KEY) || "";
  }
  const token = takeToken();

  // Transport: one WebSocket for calls and streamed chats; HTTP when it cannot open.
  const transport = {
    ws: null, ready: null, nextID: 1, pending: new Map(), mode: "",
    open() {
      if (this.ready) return this.ready;
      this.ready = new Promise((resolve) => {
        let ws;
        try {
          const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/web/ws";
          ws = new WebSocket(url, ["superfluid.v1", "token." + token]);
        } catch (e) { this.useHTTP(); resolve(); return; }
        let opened = false;
        const timer = setTimeout(() => { if (!opened) { ws.close(); this.useHTTP(); resolve(); } }, 4000);
        ws.onopen = () => { opened = true; clearTimeout(timer); this.ws = ws; this.setMode("ws"); resolve(); };
        ws.onmessage = (ev) => this.onFrame(ev.data);
        ws.onerror = () => {};
        ws.onclose = () => {
          clearTimeout(timer);
          const wasOpen = this.ws === ws;
          this.ws = null;
          for (const [, p] of this.pending) p.fail({ code: "closed", message: "the connection closed" });
          this.pending.clear();
          if (!opened) { this.useHTTP(); resolve(); return; }
          if (wasOpen) { this.ready = null; this.setMode("closed"); }
        };
      });
      return this.ready;
    },
    useHTTP() { this.ws = null; this.setMode("http"); },
    setMode(m) {
      this.mode = m;
      const link = $("link");
      link.textContent = m === "ws" ? "connected (WebSocket)" : m === "http" ? "connected (HTTP)" : "disconnected — reconnecting";
      link.className = "link " + (m === "closed" ? "bad" : "ok");
      document.body.dataset.transport = m;
    },
    onFrame(data) {
      let f;
      try { f = JSON.parse(data); } catch (e) { return; }
      const p = this.pending.get(String(f.id));
      if (!p) return;
      if (f.event) {
        if (f.event === "piece") p.piece(f);
        else { this.pending.delete(String(f.id)); f.event === "done" ? p.done(f) : p.fail(f.error); }
        return;
      }
      this.pending.delete(String(f.id));
      f.error ? p.fail(f.error) : p.done(f.result);
    },
    async call(method, params) {
      await this.open();
      if (this.ws) {
        const id = String(this.nextID++);
        return new Promise((resolve, reject) => {
          this.pending.set(id, { done: resolve, fail: (e) => reject(rpcErr(e)), piece() {} });
          this.ws.send(JSON.stringify({ id, method, params }));
        });
      }
      const resp = await fetch("/web/rpc", { method: "POST", headers: headers(), body: JSON.stringify({ id: 1, method, params }) });
      const body = await resp.json().catch(() => ({}));
      if (body.error) throw rpcErr(body.error);
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      return body.result;
    },
    // chat streams a reply: onPiece for each piece; resolves with the done event; stop() ends it.
    chat(params, onPiece) {
      let stopper = () => {};
      const run = (async () => {
        await this.open();
        if (this.ws) {
          const id = "chat-" + this.nextID++, ws = this.ws;
          return new Promise((resolve, reject) => {
            this.pending.set(id, { piece: onPiece, done: resolve, fail: (e) => reject(rpcErr(e)) });
            stopper = () => { if (ws.readyState === 1) ws.send(JSON.stringify({ id, method: "cancel" })); };
            ws.send(JSON.stringify({ id, method: "chat", params }));
          });
        }
        return this.chatSSE(params, onPiece, (f) => { stopper = f; });
      })();
      return { result: run, stop: () => stopper() };
    },
    async chatSSE(params, onPiece, setStop) {
      const ctl = new AbortController();
      let stopped = false;
      setStop(() => { stopped = true; ctl.abort(); });
      let resp;
      try {
        resp = await fetch("/web/stream", { method: "POST", headers: headers(), body: JSON.stringify({ method: "chat", params }), signal: ctl.signal });
      } catch (e) { if (stopped) return { stopped: true }; throw e; }
      if (!resp.ok) {
        const body = await resp.json().catch(() => ({}));
        throw rpcErr(body.error || { message: "HTTP " + resp.status });
      }
      const reader = resp.body.getReader(), dec = new TextDecoder();
      let buf = "", end = null;
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, i); buf = buf.slice(i + 2);
            const ev = /^event: (.*)$/m.exec(block), data = /^data: (.*)$/m.exec(block);
            if (!ev || !data) continue;
            const v = JSON.parse(data[1]);
            if (ev[1] === "piece") onPiece(v);
            else if (ev[1] === "done") end = v;
            else throw rpcErr(v);
          }
        }
      } catch (e) { if (stopped) return { stopped: true }; throw e; }
      return end || { stopped: true };
    },
  };
  function headers() { return { "Content-Type": "application/json", "Authorization": "Bearer " + token }; }
  function rpcErr(e) { const err = new Error((e && e.message) || "failed"); err.code = e && e.code; return err; }

  // State: the open conversation; att the attachments (attach.js).
  const st = { models: [], history: [], convID: "", running: null };
  let att = null;

  function setStats(text) { $("stats").textContent = text; }

  async function refreshModels() {
    st.models = await transport.call("models.list");
    const sel = $("model"), keep = sel.value;
    sel.textContent = "";
    for (const m of st.models) {
      if (m.state === "missing") continue;
      const o = document.createElement("option");
      const senses = [m.vision && "vision", m.audio && "audio"].filter(Boolean).join(", ");
      o.value = m.id; o.textContent = m.id + (senses ? " · " + senses : "") + (m.state === "loaded" ? " (loaded)" : "");
      sel.appendChild(o);
    }
    const loaded = st.models.find((m) => m.state === "loaded");
    if (keep && st.models.some((m) => m.id === keep)) sel.value = keep;
    else if (loaded) sel.value = loaded.id;
    showState();
  }
  function showState() {
    const m = st.models.find((x) => x.id === $("model").value);
    $("state").textContent = m ? m.state + (m.error ? ": " + m.error : "") : "";
    $("load").disabled = !m || m.state === "loaded" || m.state === "loading";
    document.body.dataset.modelState = m ? m.state : "";
    att.setModel(m);
  }
  async function loadModel() {
    const id = $("model").value;
    if (!id) return;
    $("load").disabled = true;
    $("state").textContent = "loading…";
    try { await transport.call("models.load", { model: id }); }
    catch (e) { $("state").textContent = "failed: " + e.message; }
    await refreshModels();
  }

  function messageNode(role) {
    const d = document.createElement("div");
    d.className = "msg " + role;
    const who = document.createElement("div");
    who.className = "who"; who.textContent = role === "user" ? "You" : "Assistant";
    const thought = document.createElement("div");
    thought.className = "thought"; thought.hidden = true;
    const atts = document.createElement("div");
    atts.className = "atts"; atts.hidden = true;
    const body = document.createElement("div");
    body.className = "body";
    d.append(who, thought, atts, body);
    $("messages").appendChild(d);
    return { node: d, thought, atts, body };
  }
  function fill(view, role, text, reasoning, attachments) {
    view.atts.replaceChildren(...(attachments || []).map((a) => window.sfAttach.chip(a)));
    view.atts.hidden = !(attachments && attachments.length);
    if (role === "user") view.body.textContent = text;
    else view.body.replaceChildren(window.sfMarkdown.render(text));
    view.thought.hidden = !reasoning;
    view.thought.textContent = reasoning || "";
  }
  function renderHistory() {
    $("messages").textContent = "";
    for (const m of st.history) fill(messageNode(m.role), m.role, m.content, m.reasoning, m.attachments);
    scrollDown();
  }
  function scrollDown() { const m = $("messages"); m.scrollTop = m.scrollHeight; }

  function number(id, parse, ok, what) {
    const v = $(id).value.trim();
    if (v === "") return undefined;
    const n = parse(v);
    if (!ok(n)) throw new Error(what);
    return n;
  }

  async function ask(ev) {
    if (ev) ev.preventDefault();
    const text = $("input").value.trim();
    if (!text && !att.pending.length || st.running) return;
    const model = $("model").value;
    if (!model) { setStats("Choose a model first."); return; }
    let params;
    try {
      params = {
        model, system: $("system").value,
        temperature: number("temperature", parseFloat, (n) => n >= 0 && n <= 2, "temperature must be a number from 0 to 2"),
        top_p: number("top_p", parseFloat, (n) => n > 0 && n <= 1, "top p must be above 0 and at most 1"),
        max_tokens: number("max_tokens", (s) => Number(s), (n) => Number.isInteger(n) && n >= 1, "max tokens must be a whole number above 0"),
        seed: number("seed", (s) => Number(s), (n) => Number.isInteger(n) && n >= 0, "the seed must be a whole number"),
      };
    } catch (e) { setStats(e.message); return; }
    const attachments = att.take();
    st.history.push({ role: "user", content: text, attachments });
    const userView = messageNode("user");
    fill(userView, "user", text, "", attachments);
    $("input").value = "";
    const view = messageNode("assistant");
    view.node.classList.add("streaming");
    let reply = "", thought = "", queued = false;
    const paint = () => { queued = false; fill(view, "assistant", reply, thought); scrollDown(); };
    const onPiece = (p) => {
      reply += p.text || ""; thought += p.reasoning || "";
      if (!queued) { queued = true; requestAnimationFrame(paint); }
    };
    // The conversation's files go up first (those the server holds already are named by id);
    // a server that no longer holds one (restarted, or it made room) gets them all again once.
    const run = async (retry) => {
      await att.upload(st.history);
      params.messages = st.history.map((m) => ({ role: m.role, content: m.content, attachments: (m.attachments || []).map(att.wire) }));
      st.running = transport.chat(params, onPiece);
      try { return await st.running.result; } catch (e) {
        if (retry && e.code === "attachment_gone") { att.forget(st.history); return run(false); }
        throw e;
      }
    };
    st.running = { stop() {} };
    $("send").disabled = true; $("stop").disabled = false;
    setStats(attachments.length ? "Sending…" : "Generating…");
    try {
      const done = await run(true);
      // The reply is over: Stop no longer applies while the conversation saves.
      st.running = null; $("stop").disabled = true;
      paint();
      if (done.stopped) {
        setStats("Stopped.");
      } else {
        setStats(`${done.tokens} tokens · ${done.tokens_per_second.toFixed(1)} tokens/s · ${done.cached_tokens} cached prompt tokens` +
          (done.finish_reason === "length" ? " · stopped at max tokens" : ""));
      }
      if (reply) st.history.push({ role: "assistant", content: reply, reasoning: thought });
      else if (done.stopped) unask(userView, view, text, attachments);
      if (reply) await save();
    } catch (e) {
      paint();
      setStats("Error: " + e.message);
      if (!reply) unask(userView, view, text, attachments);
    } finally {
      view.node.classList.remove("streaming");
      st.running = null;
      $("send").disabled = false; $("stop").disabled = true;
    }
  }

  // unask takes back a question that got no answer: its text and files return to the input.
  function unask(userView, view, text, attachments) {
    st.history.pop();
    view.node.remove();
    userView.node.remove();
    if (!$("input").value) $("input").value = text;
    att.restore(attachments);
  }

  // save stores the conversation after a reply; its title is the first question.
  async function save() {
    if (!st.history.length) return;
    const first = st.history[0];
    let title = (first.content || (first.attachments || []).map((a) => a.name).join(", ")).replace(/\n/g, " ");
    if ([...title].length > 40) title = [...title].slice(0, 40).join("") + "…";
    try {
      const r = await transport.call("conversations.save", {
        id: st.convID, title, model: $("model").value, system: $("system").value,
        messages: st.history.map((m) => ({ role: m.role, content: m.content })),
      });
      st.convID = r.id;
    } catch (e) { setStats($("stats").textContent + " (not saved: " + e.message + ")"); }
    await refreshConvs();
  }

  async function refreshConvs() {
    const list = await transport.call("conversations.list");
    const ul = $("convs");
    ul.textContent = "";
    for (const c of list) {
      const li = document.createElement("li");
      li.dataset.id = c.id;
      if (c.id === st.convID) li.className = "current";
      const open = document.createElement("button");
      open.type = "button"; open.className = "open"; open.title = c.title;
      open.textContent = c.title || c.id;
      const small = document.createElement("small");
      small.textContent = [c.model, c.updated].filter(Boolean).join(" · ");
      open.appendChild(small);
      open.onclick = () => openConv(c.id);
      const del = document.createElement("button");
      del.type = "button"; del.className = "del"; del.title = "Delete"; del.textContent = "✕";
      del.setAttribute("aria-label", "Delete " + (c.title || c.id));
      del.onclick = () => deleteConv(c.id);
      li.append(open, del);
      ul.appendChild(li);
    }
  }
  async function openConv(id) {
    if (st.running) return;
    const c = await transport.call("conversations.get", { id });
    st.convID = c.id;
    att.release(st.history);
    st.history = (c.messages || []).map((m) => ({ role: m.role, content: m.content }));
    $("system").value = c.system || "";
    if (c.model && st.models.some((m) => m.id === c.model)) { $("model").value = c.model; showState(); }
    renderHistory();
    setStats("");
    await refreshConvs();
  }
  async function deleteConv(id) {
    await transport.call("conversations.delete", { id });
    if (id === st.convID) newChat();
    await refreshConvs();
  }
  function newChat() {
    if (st.running) return;
    st.convID = ""; att.release(st.history); st.history = [];
    renderHistory();
    setStats("");
    refreshConvs();
  }

  async function start() {
    if (!token) { $("notoken").hidden = false; $("app").hidden = true; $("link").textContent = "no token"; return; }
    att = window.sfAttach.create({ button: $("attach"), input: $("file"), chips: $("chips"), note: $("attachnote"),
      textarea: $("input"), dropZone: $("chat"), headers, say: setStats });
    $("ask").addEventListener("submit", ask);
    $("input").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); ask(); }
    });
    $("stop").onclick = () => { if (st.running) { setStats("Stopping…"); st.running.stop(); } };
    $("load").onclick = loadModel;
    $("model").onchange = showState;
    $("new").onclick = newChat;
    try {
      await refreshModels();
      await refreshConvs();
      const limits = await transport.call("limits").catch(() => null);
      if (limits) att.maxBytes = limits.max_attachment;
      document.body.dataset.ready = "1";
    } catch (e) { setStats("Error: " + e.message); }
    // The model states change under the page (loads from elsewhere, keep-alive unloads).
    setInterval(() => { if (!st.running) refreshModels().catch(() => {}); }, 5000);
  }
  start();
})();
