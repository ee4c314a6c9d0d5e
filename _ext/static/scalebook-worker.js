// The explorers' calculator: Pyodide and the scalebook wheel, both served by the site itself, in a Web Worker so
// that the page stays responsive while Python starts and computes. Messages in: {id, kind: "start", wheel} once,
// then {id, kind: "load" | "answer", call, values}; out: {id, ok, ...}, and while starting {kind: "progress", stage}
// after each stage, so that the page can tell a slow start from a hung one.
importScripts("pyodide/pyodide.js");

const BOOT = `
import importlib.util, json, sys
# The faces of scalebook.widgets and scalebook.plots import every figure module (and NumPy, which Pyodide lacks
# here); an explorer needs only its own module.
sys.modules["scalebook.widgets"] = importlib.util.module_from_spec(importlib.util.find_spec("scalebook.widgets"))
from scalebook.widgets import web
web.open_faceless("scalebook.plots")
`;

let python = null;

async function start(wheel) {
  const pyodide = await loadPyodide({ indexURL: new URL("pyodide/", self.location).href });
  self.postMessage({ kind: "progress", stage: "python" });
  const response = await fetch(new URL(wheel, self.location));
  if (!response.ok) throw new Error(`the scalebook wheel did not load (${response.status})`);
  pyodide.unpackArchive(await response.arrayBuffer(), "wheel");
  self.postMessage({ kind: "progress", stage: "wheel" });
  pyodide.runPython(BOOT);
  return pyodide;
}

function run(code, names) {
  for (const [k, v] of Object.entries(names)) python.globals.set(k, v);
  return JSON.parse(python.runPython(code));
}

self.onmessage = async (event) => {
  const { id, kind } = event.data;
  const t0 = performance.now();
  try {
    if (kind === "start") {
      python = await start(event.data.wheel);
      self.postMessage({ id, ok: true, python: python.runPython("'{}.{}'.format(*sys.version_info[:2])") });
    } else if (kind === "load") {
      run("web.load(_call); json.dumps(True)", { _call: event.data.call });
      self.postMessage({ id, ok: true });
    } else {
      const out = run("json.dumps(web.answer(_call, _values))",
                      { _call: event.data.call, _values: JSON.stringify(event.data.values) });
      self.postMessage({ id, ok: true, ...out, ms: performance.now() - t0 });
    }
  } catch (err) {
    const text = String(err && err.message ? err.message : err);
    const lines = text.trim().split("\n");
    const named = lines.filter((line) => /^\w*(Error|Exception)\b/.test(line));
    self.postMessage({ id, ok: false, error: (named.length ? named[named.length - 1] : lines[lines.length - 1]) });
  }
};
