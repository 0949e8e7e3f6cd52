// The control page of cinegpu serve (docs/server.md): plain JavaScript, no build step.
//
// The token is taken once from the page's address (#token=... or ?token=...), which is then
// rewritten to "/", and kept in this tab's sessionStorage; it is only ever sent as an
// "Authorization: Bearer" header (RFC 6750 2.1), never put back into an address.  Status comes
// from the server-sent events of /api/v1/events, read with fetch (EventSource cannot send a
// header); the picture from /api/v1/preview, polled a few times a second while the tab is shown.
"use strict";

(() => {
  const TOKEN_KEY = "cinegpu-token";
  const PREVIEW_MS = 250;          // milliseconds between two preview requests
  const RECONNECT_MS = 1000;       // milliseconds before the event stream is opened again
  const METER_FLOOR_DBFS = -60;    // dBFS at a meter's left end (an empty bar)
  const CLIP_DBFS = -1;            // dBFS above which a meter shows clipping
  const MAX_KDM_BYTES = 1 << 20;   // bytes: the largest KDM the server takes
  const $ = (id) => document.getElementById(id);

  const page = {
    token: null,
    status: null,
    composition: null,       // the library entry of what is loaded (its reels)
    scrubbing: false,
    pending: new Set(),      // the ids of the controls whose command is on its way
    etag: null,
    previewUrl: null,
    fps: { shown: null, at: null, value: null },
  };

  // ------------------------------------------------------------------ the token

  function takeToken() {
    const hash = new URLSearchParams(location.hash.slice(1));
    const query = new URLSearchParams(location.search);
    const given = hash.get("token") || query.get("token");
    if (given) {
      sessionStorage.setItem(TOKEN_KEY, given);
      history.replaceState(null, "", "/");      // the token leaves the address bar and history
    }
    page.token = sessionStorage.getItem(TOKEN_KEY);
  }

  function headers(json) {
    const h = {};
    if (page.token) h.Authorization = "Bearer " + page.token;
    if (json) h["Content-Type"] = "application/json";
    return h;
  }

  // ------------------------------------------------------------------ errors

  function showError(text) {
    const box = $("error");
    box.textContent = text;
    box.hidden = false;
  }

  function clearError() {
    $("error").hidden = true;
    $("error").textContent = "";
  }

  async function failure(response) {
    let message = response.statusText;
    try {
      const body = await response.json();
      message = body.error || message;
    } catch (e) { /* not JSON */ }
    if (response.status === 401) {
      $("token-form").hidden = false;
      message += " (give the token below, or open the address cinegpu serve printed)";
    }
    return `${response.status}: ${message}`;
  }

  // ------------------------------------------------------------------ requests

  async function get(path) {
    const r = await fetch("/api/v1/" + path, { headers: headers(false), cache: "no-store" });
    if (!r.ok) throw new Error(await failure(r));
    return r.json();
  }

  // POST a JSON body to /api/v1/NAME with the token: the fetch's Response.
  function post(name, body) {
    return fetch("/api/v1/" + name, { method: "POST", headers: headers(true), body: JSON.stringify(body || {}) });
  }

  // A command: POST with a JSON body; the new status, or the error shown in the page.  While it
  // is on its way, the statuses of the event stream leave ``control`` (an element's id) alone.
  async function command(name, body, control) {
    if (control) page.pending.add(control);
    clearError();       // the error shown is the last command's (a slow load answers after others)
    try {
      const r = await post(name, body);
      page.pending.delete(control);
      if (!r.ok) {
        showError(`${name}: ${await failure(r)}`);
        if (page.status) showStatus(page.status);      // the control back as the player has it
        return null;
      }
      const status = await r.json();
      showStatus(status);
      return status;
    } catch (e) {
      page.pending.delete(control);
      showError(`${name}: ${e.message}`);
      return null;
    }
  }

  function free(id) {
    return !page.pending.has(id) && document.activeElement !== $(id);
  }

  // ------------------------------------------------------------------ library

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "";
    const s = Math.round(seconds);
    const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60;
    return `${h}:${String(m).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}`;
  }

  function bytes(n) {
    if (n === null || n === undefined) return "?";
    const units = ["B", "kB", "MB", "GB", "TB"];
    let i = 0;
    while (n >= 1000 && i < units.length - 1) { n /= 1000; i += 1; }
    return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
  }

  function cell(row, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    row.appendChild(td);
    return td;
  }

  function kdmText(c) {
    if (!c.encrypted) return "";
    const k = c.kdm || {};
    if (k.state === "valid") return k.not_after ? `valid to ${k.not_after.slice(0, 10)}` : "valid";
    return { "not-valid-now": "not valid now", missing: "no KDM", "no-keys": "no keys" }[k.state] || "?";
  }

  async function loadLibrary() {
    let lib;
    try {
      lib = await get("library");
    } catch (e) {
      showError(`library: ${e.message}`);
      return;
    }
    page.library = lib;
    const body = document.querySelector("#library tbody");
    body.replaceChildren();
    for (const c of lib.compositions) {
      const row = document.createElement("tr");
      row.dataset.id = c.id;
      const title = cell(row, c.title || c.id, "title");
      title.title = c.path;
      cell(row, c.content_kind ? `${c.kind} (${c.content_kind})` : c.kind);
      cell(row, `${duration(c.seconds)} (${c.frames ?? "?"} frames)`);
      cell(row, bytes(c.size));
      cell(row, c.stereoscopic ? "3D" : "2D");
      cell(row, c.encrypted ? "encrypted" : "clear");
      const kdm = cell(row, kdmText(c));
      if (c.kdm && c.kdm.message) kdm.title = c.kdm.message;
      const td = document.createElement("td");
      const button = document.createElement("button");
      button.textContent = "Load";
      button.className = "load";
      button.addEventListener("click", () => load(c));
      td.appendChild(button);
      row.appendChild(td);
      row.addEventListener("dblclick", () => load(c));
      body.appendChild(row);
    }
    const errors = $("library-errors");
    errors.replaceChildren();
    for (const e of lib.errors) {
      const li = document.createElement("li");
      li.textContent = `${e.path}: ${e.error}`;
      errors.appendChild(li);
    }
    markLoaded();
  }

  // ------------------------------------------------------------------ KDM upload

  // The chosen file read as text and posted as {"kdm": text}: the KDM's fields (201), or the
  // server's refusal in the error box; the library (its KDM column) read again after a success.
  async function uploadKdm() {
    const file = $("kdm-file").files[0];
    clearError();
    setText("kdm-result", "");
    if (!file) {
      showError("KDM: choose the KDM's XML file first");
      return;
    }
    if (file.size > MAX_KDM_BYTES) {
      showError(`KDM ${file.name}: ${file.size} bytes, over the ${MAX_KDM_BYTES} a KDM may have`);
      return;
    }
    try {
      const r = await post("kdms", { kdm: await file.text() });
      if (!r.ok) {
        showError(`KDM ${file.name}: ${await failure(r)}`);
        return;
      }
      const k = await r.json();
      setText("kdm-result", `added ${k.content_title || k.cpl_id}: valid ${k.not_before.slice(0, 10)} ` +
        `to ${k.not_after.slice(0, 10)}, ${k.keys.length} keys`);
      $("kdm-file").value = "";
      await loadLibrary();
    } catch (e) {
      showError(`KDM ${file.name}: ${e.message}`);
    }
  }

  async function load(c) {
    $("title").textContent = `loading ${c.title || c.id}...`;
    await command("load", { cpl: c.id, loop: $("loop").checked });
  }

  function markLoaded() {
    const id = page.status && page.status.composition ? page.status.composition.id : null;
    for (const row of document.querySelectorAll("#library tbody tr")) {
      row.classList.toggle("loaded", row.dataset.id === id);
    }
    const entry = id && page.library ? page.library.compositions.find((c) => c.id === id) : null;
    if (entry !== page.composition) {
      page.composition = entry || null;
      drawReels();
    }
  }

  // ------------------------------------------------------------------ timeline

  function drawReels() {
    const box = $("reels");
    box.replaceChildren();
    const c = page.composition;
    const total = page.status && page.status.frame_count;
    if (!c || !total || c.reels.length < 2) return;
    let start = 0;
    for (const reel of c.reels.slice(0, -1)) {
      start += reel.frames;
      const mark = document.createElement("span");
      mark.className = "reel-mark";
      mark.style.left = `${(100 * start) / Math.max(1, total - 1)}%`;
      mark.title = `reel ${c.reels.indexOf(reel) + 2} starts at frame ${start}`;
      box.appendChild(mark);
    }
  }

  function seekTo(text) {
    const t = text.trim();
    if (/^\d+$/.test(t)) return command("seek", { frame: Number(t) });
    return command("seek", { timecode: t });
  }

  // ------------------------------------------------------------------ status

  function setText(id, text) {
    const el = $(id);
    if (el.textContent !== text) el.textContent = text;
  }

  // Pictures shown per second, from the shown count's change between two statuses.
  function achieved(s) {
    const f = page.fps;
    if (s.state !== "playing") {
      f.shown = null;
      f.value = null;
      return "-";
    }
    if (f.shown !== null && s.uptime - f.at >= 0.5) {
      f.value = (s.shown - f.shown) / (s.uptime - f.at);
      f.shown = s.shown;
      f.at = s.uptime;
    } else if (f.shown === null || s.shown < f.shown) {
      f.shown = s.shown;
      f.at = s.uptime;
    }
    return f.value === null ? "..." : f.value.toFixed(1);
  }

  // ------------------------------------------------------------------ meters

  // One bar per channel of the sound playing (status audio.peaks_dbfs: dBFS, null for silence),
  // its width from METER_FLOOR_DBFS (empty) to 0 dBFS (full), red above CLIP_DBFS.
  function drawMeters(a) {
    const box = $("meters");
    const peaks = a && Array.isArray(a.peaks_dbfs) ? a.peaks_dbfs : [];
    const labels = peaks.map((_, i) => (a.channel_labels && a.channel_labels[i]) || String(i + 1));
    box.hidden = peaks.length === 0;
    if (box.dataset.labels !== labels.join(" ")) {
      box.replaceChildren();
      for (const name of labels) {
        const label = document.createElement("span");
        label.className = "meter-label";
        label.textContent = name;
        const track = document.createElement("div");
        track.className = "meter-track";
        const fill = document.createElement("div");
        fill.className = "meter-fill";
        track.appendChild(fill);
        const value = document.createElement("span");
        value.className = "meter-value";
        box.append(label, track, value);
      }
      box.dataset.labels = labels.join(" ");
    }
    const tracks = box.querySelectorAll(".meter-track");
    const values = box.querySelectorAll(".meter-value");
    peaks.forEach((db, i) => {
      const silent = db === null || db === undefined;
      const share = silent ? 0 : Math.min(1, Math.max(0, (db - METER_FLOOR_DBFS) / -METER_FLOOR_DBFS));
      const clip = !silent && db > CLIP_DBFS;
      tracks[i].firstChild.style.width = `${(100 * share).toFixed(1)}%`;
      tracks[i].classList.toggle("clip", clip);
      tracks[i].title = `${labels[i]}: ${silent ? "silence" : db.toFixed(1) + " dBFS"}${clip ? " (clipping)" : ""}`;
      values[i].textContent = silent ? "-inf" : db.toFixed(1);
      values[i].classList.toggle("clip-value", clip);
    });
  }

  // Whether status ``s`` is older than ``before`` of the same server run (a command's answer and
  // the event stream cross): its version is lower and the server started at the same time.
  function older(s, before) {
    if (!before || s.version >= before.version) return false;
    return Math.abs((s.at - s.uptime) - (before.at - before.uptime)) < 5;    // seconds
  }

  function showStatus(s) {
    const before = page.status;
    s.at = Date.now() / 1000;
    if (older(s, before)) return;
    page.status = s;
    const loaded = s.composition !== null && s.frame_count !== null;
    setText("title", s.composition ? s.composition.title || s.composition.id : "nothing loaded");
    setText("state", s.state);
    $("state").dataset.state = s.state;
    setText("timecode", s.timecode || "--:--:--:--");
    setText("frame", s.frame === null ? "-" : `${s.frame} / ${s.frame_count ?? "?"}`);
    setText("reel", s.reel ? `${s.reel.index + 1} (frame ${s.reel.frame})` : "-");
    setText("fps", achieved(s));
    setText("decode-fps", s.decode_fps.toFixed(1));
    setText("dropped", `${s.dropped} / ${s.late}`);
    setText("frame-errors", String(s.frame_errors));
    setText("backend", s.interop ? `${s.backend} (interop ${s.interop})` : s.backend);
    setText("resolution", s.resolution || "full");
    const a = s.audio;
    setText("offset", a && a.offset_ms !== null && a.offset_ms !== undefined
      ? `${a.offset_ms.toFixed(1)} ms (${a.sink})` : "-");
    $("volume").disabled = $("mute").disabled = !a;
    drawMeters(a);
    if (a && free("volume")) {
      $("volume").value = a.volume;
      setText("volume-value", Number(a.volume).toFixed(2));
    }
    if (a && !page.pending.has("mute")) $("mute").checked = a.mute;
    if (!page.pending.has("loop")) $("loop").checked = s.loop;
    if (s.subtitles) {
      if (!page.pending.has("subtitles")) $("subtitles").checked = s.subtitles.on;
      $("subtitles").title = s.subtitles.available ? "" : "the composition loaded has no subtitles";
    }
    const bar = $("scrubber");
    bar.disabled = !loaded;
    if (loaded) {
      bar.max = String(Math.max(0, s.frame_count - 1));
      if (!page.scrubbing && s.frame !== null) bar.value = String(s.frame);
    }
    if (!before || before.frame_count !== s.frame_count ||
        (before.composition || {}).id !== (s.composition || {}).id) {
      markLoaded();
      drawReels();
    }
  }

  // The event stream: "event: status" blocks whose data is the status (text/event-stream,
  // WHATWG HTML 9.2), read from a fetch so that the token goes in a header.
  async function follow() {
    for (;;) {
      try {
        const r = await fetch("/api/v1/events", { headers: headers(false), cache: "no-store" });
        if (!r.ok) {
          setConnection(false, await failure(r));
          if (r.status === 401) return;
        } else {
          setConnection(true);
          await readEvents(r.body.getReader());
        }
      } catch (e) {
        setConnection(false, e.message);
      }
      await new Promise((done) => setTimeout(done, RECONNECT_MS));
    }
  }

  async function readEvents(reader) {
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let kind = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) kind = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (kind === "status" && data.length) showStatus(JSON.parse(data.join("\n")));
      }
    }
  }

  function setConnection(ok, why) {
    const badge = $("connection");
    badge.textContent = ok ? "connected" : "not connected";
    badge.dataset.ok = ok ? "yes" : "no";
    badge.title = why || "";
  }

  // ------------------------------------------------------------------ preview

  async function preview() {
    if (document.hidden) return;
    const h = headers(false);
    if (page.etag) h["If-None-Match"] = page.etag;
    try {
      const r = await fetch("/api/v1/preview?width=480", { headers: h, cache: "no-store" });
      if (r.status === 304) return;
      const img = $("preview");
      if (r.status !== 200) {             // 204: no picture on screen
        img.hidden = true;
        $("no-picture").hidden = false;
        page.etag = null;
        return;
      }
      page.etag = r.headers.get("ETag");
      const url = URL.createObjectURL(await r.blob());
      img.src = url;
      img.dataset.serial = r.headers.get("X-Preview-Serial") || "";
      img.hidden = false;
      $("no-picture").hidden = true;
      if (page.previewUrl) URL.revokeObjectURL(page.previewUrl);
      page.previewUrl = url;
    } catch (e) { /* the next poll tries again */ }
  }

  function pollPreview() {
    preview().finally(() => setTimeout(pollPreview, PREVIEW_MS));
  }

  // ------------------------------------------------------------------ wiring

  function wire() {
    for (const b of document.querySelectorAll("[data-command]")) {
      b.addEventListener("click", () => command(b.dataset.command));
    }
    for (const b of document.querySelectorAll("[data-step]")) {
      b.addEventListener("click", () => command("step", { frames: Number(b.dataset.step) }));
    }
    const bar = $("scrubber");
    bar.addEventListener("input", () => { page.scrubbing = true; });
    bar.addEventListener("change", async () => {
      await command("seek", { frame: Number(bar.value) });
      page.scrubbing = false;
    });
    $("loop").addEventListener("change", (e) => {
      command("loop", { loop: e.target.checked }, "loop");
    });
    $("volume").addEventListener("change", (e) => command("audio", { volume: Number(e.target.value) }, "volume"));
    $("volume").addEventListener("input", (e) => setText("volume-value", Number(e.target.value).toFixed(2)));
    $("mute").addEventListener("change", (e) => command("audio", { mute: e.target.checked }, "mute"));
    $("subtitles").addEventListener("change", (e) => command("subtitles", { on: e.target.checked }, "subtitles"));
    $("seek-form").addEventListener("submit", (e) => {
      e.preventDefault();
      seekTo($("seek-timecode").value);
    });
    $("rescan").addEventListener("click", loadLibrary);
    $("kdm-form").addEventListener("submit", (e) => {
      e.preventDefault();
      uploadKdm();
    });
    $("token-form").addEventListener("submit", (e) => {
      e.preventDefault();
      page.token = $("token-input").value.trim();
      sessionStorage.setItem(TOKEN_KEY, page.token);
      $("token-input").value = "";
      $("token-form").hidden = true;
      clearError();
      start();
    });
  }

  function start() {
    loadLibrary();
    follow();
  }

  takeToken();
  wire();
  start();
  pollPreview();
})();
