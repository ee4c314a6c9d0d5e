// The bridge: turns each explorer's snapshot into live controls that call the same Python function, run by Pyodide
// in a Web Worker (scalebook-worker.js), from files this site serves. Nothing is sent anywhere. Until Python is
// ready, and with JavaScript off, the snapshot (the worked answer) shows. Loaded only on pages with explorers.
// A worker silent for `data-timeout` ms (default 45 s; it reports each stage of its start) is given up: a start
// is tried once more in a fresh worker, then the snapshots stay with a status line saying so; a stalled answer
// disables the controls. A reader never sees a dead control. A page not live `data-deadline` ms after it started
// (default 20 s) says so beside each snapshot, which stays; should Python start later, the explorers go live then.
(() => {
  const script = document.currentScript;
  const boxes = [...document.querySelectorAll("div.scalebook-explorer[data-scalebook]")];
  if (!boxes.length) return;
  const root = document.documentElement;
  const base = new URL(".", script.src);
  if (location.protocol === "file:") {  // a Web Worker and WebAssembly need the page served over http(s)
    for (const box of boxes) {
      const status = box.querySelector(".scalebook-status");
      if (status) status.textContent = "a snapshot here: served over http(s) (any static server), this explorer is live";
    }
    return;
  }
  const PREFIX = ["y", "z", "a", "f", "p", "n", "µ", "m", "", "k", "M", "G", "T", "P", "E", "Z", "Y"];

  // d3-format ".3s", as the kernel's log sliders read out: 4.10k, 16.0G
  function si(x) {
    if (x === 0 || !isFinite(x)) return String(x);
    let e = Math.max(-8, Math.min(8, Math.floor(Math.log10(Math.abs(x)) / 3)));
    let s = (x / 10 ** (3 * e)).toPrecision(3);
    if (Math.abs(Number(s)) >= 1000 && e < 8) { e += 1; s = (x / 10 ** (3 * e)).toPrecision(3); }
    return s + PREFIX[e + 8];
  }

  const style = document.createElement("style");
  style.textContent = `
    .scalebook-controls { display: flex; flex-wrap: wrap; gap: .3em 1.4em; margin: .4em 0 .6em; font-size: .9em; }
    .scalebook-controls label { display: inline-flex; align-items: center; gap: .4em; }
    .scalebook-controls input[type=range] { width: 11em; }
    .scalebook-controls output { min-width: 3.5em; font-variant-numeric: tabular-nums; }
    .scalebook-status { font-size: .85em; opacity: .8; }`;
  document.head.appendChild(style);

  const TIMEOUT_MS = Number(script.dataset.timeout || 45000);
  const DEADLINE_MS = Number(script.dataset.deadline || 20000);

  // A calculator: one worker, and `ask(message)`, which resolves with its reply, or with {ok: false, timedOut: true}
  // once the worker has been silent for TIMEOUT_MS (any message, a start's progress included, counts as a sign of life).
  function calculator() {
    const worker = new Worker(new URL("scalebook-worker.js", base));
    const waiting = new Map();
    let next = 0;
    let heard = performance.now();
    worker.onmessage = (event) => {
      heard = performance.now();
      const done = waiting.get(event.data.id);
      waiting.delete(event.data.id);
      if (done) done(event.data);
    };
    const ask = (message) => new Promise((resolve) => {
      next += 1;
      const id = next;
      waiting.set(id, resolve);
      heard = Math.max(heard, performance.now());
      const watch = setInterval(() => {
        if (!waiting.has(id)) { clearInterval(watch); return; }
        if (performance.now() - heard < TIMEOUT_MS) return;
        clearInterval(watch);
        waiting.delete(id);
        resolve({ id, ok: false, timedOut: true, error: `no answer from the calculator in ${TIMEOUT_MS / 1000} s` });
      }, 250);
      worker.postMessage({ id, ...message });
    });
    return { worker, ask };
  }
  let calc = null;
  const ask = (message) => calc.ask(message);
  const say = (text) => { for (const [box, a] of about) if (a.call && !root.dataset.scalebookLate) setStatus(box, text); };
  const setStatus = (box, text) => { const s = box.querySelector(".scalebook-status"); if (s) s.textContent = text; };

  const about = new Map(boxes.map((box) => [box, JSON.parse(box.dataset.scalebook)]));
  for (const [box, a] of about) {
    const status = box.querySelector(".scalebook-status");
    if (status) status.textContent = a.call ? "loading the calculator…" : "a snapshot here (live in JupyterLab, Colab or Kaggle)";
    box.dataset.state = a.call ? "loading" : "snapshot";
  }
  root.dataset.scalebookLive = "loading";
  setTimeout(() => {
    if (root.dataset.scalebookLive !== "loading") return;
    root.dataset.scalebookLate = "true";
    for (const [box, a] of about) {
      if (!a.call || box.dataset.state !== "loading") continue;
      Object.assign(box.dataset, { state: "snapshot", why: `not live after ${DEADLINE_MS / 1000} s` });
      setStatus(box, `a snapshot here: the calculator did not start in ${DEADLINE_MS / 1000} s (this machine is busy or `
                     + "slow); the worked answer shows, and the controls appear if it starts");
    }
  }, DEADLINE_MS);

  function controlFor(box, c, values, changed) {
    const label = document.createElement("label");
    label.append(c.name);
    if (c.kind === "menu") {
      const select = document.createElement("select");
      c.options.forEach((text, i) => select.add(new Option(text, String(i), false, i === c.value)));
      select.name = c.name;
      select.addEventListener("change", () => { values[c.name] = Number(select.value); changed(); });
      label.append(select);
      return label;
    }
    if (c.kind === "text") {
      const text = document.createElement("input");
      Object.assign(text, { type: "text", name: c.name, value: c.value, size: Math.max(12, c.value.length + 2) });
      text.addEventListener("change", () => { values[c.name] = text.value; changed(); });
      label.append(text);
      return label;
    }
    const input = document.createElement("input");
    const out = document.createElement("output");
    input.type = "range";
    input.name = c.name;
    // a log slider with a `factor` moves in whole steps of it from c.min (its position counts the steps)
    const steps = (x) => Math.round(Math.log(x / c.min) / Math.log(c.factor));
    if (c.kind === "log" && c.factor) {
      Object.assign(input, { min: 0, max: steps(c.max), step: 1 });
      input.value = steps(c.value);
    } else if (c.kind === "log") {
      Object.assign(input, { min: Math.log10(c.min), max: Math.log10(c.max), step: "any" });
      input.value = Math.log10(c.value);
    } else {
      Object.assign(input, { min: c.min, max: c.max, step: c.step });
      input.value = c.value;
    }
    const read = () => (c.kind === "log" && c.factor ? c.min * c.factor ** Math.round(Number(input.value))
                        : c.kind === "log" ? 10 ** Number(input.value)
                        : c.kind === "int" ? Math.round(Number(input.value)) : Number(input.value));
    const show = (v) => { out.textContent = c.kind === "log" ? si(v) : c.kind === "int" ? String(v) : String(Number(v.toPrecision(6))); };
    show(c.value);
    input.addEventListener("input", () => show(read()));
    input.addEventListener("change", () => { values[c.name] = read(); show(values[c.name]); changed(); });
    label.append(input, out);
    return label;
  }

  function goLive(box, a) {
    const values = Object.fromEntries(a.controls.map((c) => [c.name, c.value]));
    const output = box.querySelector(".scalebook-output");
    const status = box.querySelector(".scalebook-status");
    const inputs = box.querySelector(".scalebook-inputs");
    const controls = document.createElement("div");
    let latest = 0;
    let runs = 0;
    const changed = async () => {
      const mine = ++latest;
      const snapshot = { ...values };
      const t0 = performance.now();
      box.dataset.state = "busy";
      const r = await ask({ kind: "answer", call: a.call, values: snapshot });
      if (r.timedOut) {
        controls.querySelectorAll("input, select").forEach((el) => { el.disabled = true; });
        Object.assign(box.dataset, { state: "stalled", why: r.error });
        if (status) status.textContent = `the calculator stopped answering (${r.error}); the last answer stays: reload the page to try again`;
        return;
      }
      if (mine !== latest) return;
      output.innerHTML = r.ok ? r.html : `<pre style='color:#cf222e'>${r.error}</pre>`;
      runs += 1;
      Object.assign(box.dataset, { values: JSON.stringify(snapshot), answer: JSON.stringify(r.ok ? r.numbers : []),
                                   answerMs: (performance.now() - t0).toFixed(1), runs: String(runs), state: "live" });
    };
    controls.className = "scalebook-controls";
    for (const c of a.controls) controls.append(controlFor(box, c, values, changed));
    if (inputs) inputs.replaceWith(controls); else output.before(controls);
    box.dataset.values = JSON.stringify(values);
    box.dataset.state = "live";
    if (status) status.textContent = "live: computed in this page by Python (Pyodide); nothing is sent anywhere";
  }

  // Start Python; a start that falls silent gets one more try in a fresh worker (about one cold start in fifteen
  // hung on a busy 2-core machine, cause not found), then gives up, leaving the snapshots.
  async function start() {
    for (let attempt = 0; attempt < 2; attempt += 1) {
      calc = calculator();
      root.dataset.scalebookStarts = String(attempt + 1);
      const started = await ask({ kind: "start", wheel: script.dataset.wheel });
      if (!started.timedOut) return started;
      calc.worker.terminate();
      if (attempt === 0) say("loading the calculator… (slow to start: trying once more)");
    }
    return { ok: false, error: "the calculator did not start in time: reload the page to try again" };
  }

  (async () => {
    const started = await start();
    let stalled = "";
    for (const [box, a] of about) {
      if (!a.call) continue;
      const status = box.querySelector(".scalebook-status");
      let why = !started.ok ? started.error : stalled || (started.python !== a.python ? `needs Python ${a.python}` : "");
      if (!why) {
        const loaded = await ask({ kind: "load", call: a.call });
        why = loaded.ok ? "" : loaded.error;
        if (loaded.timedOut) stalled = why;
      }
      if (why) {
        box.dataset.state = "snapshot";
        box.dataset.why = why;
        if (status) status.textContent = `a snapshot here (${why}); live in JupyterLab, Colab or Kaggle`;
      } else {
        goLive(box, a);
      }
    }
    root.dataset.scalebookLiveMs = performance.now().toFixed(0);
    root.dataset.scalebookLive = "ready";
  })();
})();
