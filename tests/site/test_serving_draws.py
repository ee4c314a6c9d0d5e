"""The serving simulator draws the same requests in the reader's browser as in the Python kernel: the site's own
calculator (its Web Worker, Pyodide and the scalebook wheel, in headless Chromium over HTTP) runs two functions
defined as a notebook defines them, and every number must equal the kernel's, bit for bit: the requests a workload
draws (arrival times, prompt, uncached and output lengths) for several seeds, sizes, rates and spreads, and each
request's first-token and finish times through a whole simulated run in both modes.

This is what lets chapter 8's serving explorer be live: the standard library's Mersenne Twister, seeded by name,
gives the same streams in CPython and in Pyodide (no NumPy, which the site does not load).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from browser import BROWSER
from live import LivePage, Server

from scalebook.inference.serving import Engine, Lengths, Workload, simulate
from scalebook.widgets import web

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SCALEBOOK_SITE", ROOT / "_build" / "html"))
WHEELS = sorted((SITE / "_static" / "scalebook").glob("scalebook-*.whl")) if SITE.exists() else []

DRAWS = """
def draws(rate, seed, n_requests, sigma, prefix_hit):
    r = Workload(rate, Lengths(2048, sigma), Lengths(512, sigma), prefix_hit=prefix_hit).sample(n_requests, seed)
    return r.arrival + r.prompt + r.uncached + r.output
"""
LATENCIES = """
def latencies(rate, seed, n_requests, mode):
    engine = Engine("llama3-70b", "v5e", 32, 1, 1, mode=mode)
    report = simulate(Workload(rate, Lengths(2048, 0.5), Lengths(512, 0.5), prefix_hit=0.2), engine, n_requests, seed)
    return report.first_token + report.finish
"""
# (seed, requests, rate per s, lognormal shape, prefix-cache hit rate)
DRAW_CASES = [(0, 1, 4.0, 0.5, 0.0), (1, 10, 0.5, 0.5, 0.3), (7, 1000, 4.0 * 2 ** 0.5, 0.5, 0.0),
              (12345, 400, 60.0, 1.5, 0.9), (2026, 1000, 0.05, 4.0, 0.5)]
RUN_CASES = [(0, 400, 4.0, "interleaved"), (3, 400, 5.5, "disaggregated"), (11, 1000, 2.0, "interleaved")]

ASK = """window.drawsDone = false; (async () => {
  const worker = new Worker("/_static/scalebook-worker.js");  // the site served at the root
  const waiting = new Map();
  worker.onmessage = (e) => {
    const done = waiting.get(e.data.id);
    if (done) { waiting.delete(e.data.id); done(e.data); }
  };
  const ask = (message) => new Promise((done) => { waiting.set(message.id, done); worker.postMessage(message); });
  const started = await ask({ id: 0, kind: "start", wheel: WHEEL });
  if (!started.ok) { worker.terminate(); return [started]; }
  const replies = [];
  for (const [i, job] of JOBS.entries()) replies.push(await ask({ id: i + 1, kind: "answer", ...job }));
  worker.terminate();
  return replies;
})().then((replies) => { window.drawsReplies = replies; window.drawsDone = true; }); true"""


def notebook_function(source: str, name: str) -> Callable[..., Any]:
    """The function `name` that `source` defines, defined as a notebook cell defines it (module `__main__`), so
    that it travels to the browser by value, with the scalebook names it reads."""
    scope: dict[str, Any] = {"__name__": "__main__", "Workload": Workload, "Lengths": Lengths, "Engine": Engine,
                             "simulate": simulate}
    exec(source, scope)  # this file's own text
    return scope[name]


def jobs() -> list[dict[str, Any]]:
    """One calculation per case: the pickled function (`web.describe`'s `call`) and its inputs."""
    draws, latencies = (web.describe(notebook_function(*s), {})["call"] for s in ((DRAWS, "draws"),
                                                                                  (LATENCIES, "latencies")))
    names = ("seed", "n_requests", "rate", "sigma", "prefix_hit")
    return ([{"call": draws, "values": dict(zip(names, case))} for case in DRAW_CASES]
            + [{"call": latencies, "values": dict(zip(("seed", "n_requests", "rate", "mode"), case))}
               for case in RUN_CASES])


@pytest.mark.skipif(BROWSER is None, reason="chromium is not installed: `make test-site` installs it")
@pytest.mark.skipif(not WHEELS, reason=f"no built site with its scalebook wheel in {SITE}: run `make book`")
def test_the_browser_draws_the_same_requests_and_latencies_as_the_kernel_bit_for_bit():
    server = Server(SITE)
    page = LivePage(server.url("index.html"))
    try:
        page.wait_for("document.readyState === 'complete'", 60)
        todo = jobs()
        script = ASK.replace("WHEEL", json.dumps(f"scalebook/{WHEELS[-1].name}")).replace("JOBS", json.dumps(todo))
        page.evaluate(script)
        deadline = time.monotonic() + 300  # a cold Pyodide start takes 10-60 s on a busy machine
        while not page.evaluate("window.drawsDone") and time.monotonic() < deadline:
            time.sleep(0.5)
        replies = page.evaluate("window.drawsReplies") or [{"error": "no reply within 300 s"}]
    finally:
        page.close()
        server.close()
    assert [r.get("ok") for r in replies] == [True] * len(todo), [r.get("error") for r in replies]
    for job, reply in zip(todo, replies):
        want = web.answer(job["call"], job["values"])
        assert not want["error"] and not reply["error"], (job["values"], reply["html"][:300])
        sizes = 4 * job["values"]["n_requests"] if "sigma" in job["values"] else 2 * job["values"]["n_requests"]
        assert len(want["numbers"]) == sizes, job["values"]
        differ = [i for i, (a, b) in enumerate(zip(reply["numbers"], want["numbers"])) if a != b]
        assert reply["numbers"] == want["numbers"], (job["values"], f"{len(differ)} differ, first at {differ[:3]}")
