"""Drive the website's live explorers in headless Chromium, over HTTP from a local server, and watch every request.

`serve(folder)` serves a built site on 127.0.0.1 (a Web Worker and WebAssembly need http:, not file:).
`LivePage(url)` (`width`: a phone's screen) opens a page in a browser context whose proxy records every request for
another host (so a worker's requests are seen from its first one), follows the page and its workers over the DevTools
protocol, and records every request; `offsite()` lists those to any host but the site's own.
`wait_ready()` waits for the bridge's "ready" (every explorer live or left a snapshot); `explorers()` reads each
explorer's description and state; `move(i, name, value)` sets a control as a reader would and returns what the
page then shows.
"""

from __future__ import annotations

import functools
import json
import socketserver
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from browser import Chromium

BOXES = "document.querySelectorAll('div.scalebook-explorer[data-scalebook]')"


class _Quiet(SimpleHTTPRequestHandler):
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm",
                      ".mjs": "text/javascript", ".js": "text/javascript", ".whl": "application/zip"}

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class Server:
    """A static HTTP server for `folder` on 127.0.0.1 (a free port), in a thread; `close()` stops it."""

    def __init__(self, folder: Path) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
        self.origin = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def url(self, path: Path | str) -> str:
        return f"{self.origin}/{str(path).lstrip('/')}"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


# What Chromium itself opens through a context's proxy whatever the page does: a connection to its default search
# engine (a preconnect no flag here turns off) and, once a page has form fields (an explorer's controls), its
# autofill service (now and then, even with AutofillServerCommunication disabled in browser.FLAGS). A page's own
# request to either host is still seen by the DevTools protocol, so the check loses nothing.
BROWSER_OWN = {"https://www.google.com:443", "https://content-autofill.googleapis.com:443"}


class _Recorder:
    """An HTTP proxy on 127.0.0.1 that records each request's target and answers 502. The browser sends it every
    request for another host (loopback bypasses a proxy), from the page and from its workers alike: the DevTools
    protocol missed a worker now and then (it was not auto-attached in about one run in four, cause not found)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        seen = self.seen

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                words = self.rfile.readline(65536).decode("latin-1").split()
                if len(words) >= 2:
                    seen.append(f"https://{words[1]}" if words[0] == "CONNECT" else words[1])
                self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.address = f"127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class LivePage:
    """One page in a fresh headless Chromium, with its workers followed and its requests recorded."""

    def __init__(self, url: str, javascript: bool = True, width: int | None = None) -> None:
        self.url = url
        self.requests: list[str] = []
        self.errors: list[str] = []
        self._proxy = _Recorder()
        self._browser = Chromium()
        # The page gets a browser context of its own whose proxy is the recorder; the browser's own background
        # requests stay outside it.
        context = self._browser.send("Target.createBrowserContext",
                                     {"proxyServer": f"http://{self._proxy.address}"})["browserContextId"]
        target = self._browser.send("Target.createTarget", {"url": "about:blank",
                                                            "browserContextId": context})["targetId"]
        self._session = self._browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self._follow(self._session)
        if not javascript:
            self._browser.send("Emulation.setScriptExecutionDisabled", {"value": True}, session=self._session)
        if width:  # a window `width` CSS pixels wide (a phone's, for 390): the page lays itself out for it
            self._browser.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": 2 * width,
                                                                      "deviceScaleFactor": 1, "mobile": False},
                               session=self._session)
        self.t0 = time.monotonic()
        self._browser.send("Page.navigate", {"url": url}, session=self._session)

    def _follow(self, session: str) -> None:
        for domain in ("Runtime", "Network"):
            self._browser.send(f"{domain}.enable", session=session)
        # Workers are not held at their start: now and then one was never announced, and waited for ever. The
        # recording proxy sees every request a worker makes, from its first.
        self._browser.send("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": False,
                                                    "flatten": True}, session=session)

    def _pump(self, seconds: float) -> None:
        for event in self._browser.events(seconds):
            method, params = event.get("method"), event.get("params", {})
            if method == "Target.attachedToTarget":
                self._follow(params["sessionId"])
            elif method == "Network.requestWillBeSent":
                self.requests.append(params["request"]["url"])
            elif method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                self.errors.append(details.get("exception", {}).get("description") or details.get("text", ""))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                self.errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))

    def evaluate(self, expression: str, timeout: float = 60) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        reply = self._browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                        "awaitPromise": True}, session=self._session, timeout=timeout)
        if "exceptionDetails" in reply:
            raise RuntimeError(f"{expression[:80]}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def wait_for(self, expression: str, timeout: float) -> float:
        """Wait until `expression` is truthy; return the seconds since navigation started."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._pump(0.05)
            if self.evaluate(expression):
                return time.monotonic() - self.t0
        raise TimeoutError(f"{self.url}: `{expression}` not true within {timeout} s")

    def wait_ready(self, timeout: float = 180) -> float:
        """Wait for the bridge to finish (every explorer live or a snapshot); return the page's own ms to 'ready'."""
        self.wait_for("document.documentElement.dataset.scalebookLive === 'ready'", timeout)
        return float(self.evaluate("Number(document.documentElement.dataset.scalebookLiveMs)"))

    def explorers(self) -> list[dict[str, Any]]:
        """Each explorer's state ('live', 'snapshot' ...), why it is not live, and its description."""
        rows = self.evaluate(f"JSON.stringify([...{BOXES}].map(b => ({{state: b.dataset.state,"
                             " why: b.dataset.why || '', about: b.dataset.scalebook})))")
        return [{**r, "about": json.loads(r["about"])} for r in json.loads(rows)]

    def move(self, index: int, name: str, value: float, timeout: float = 60) -> dict[str, Any]:
        """Set control `name` of explorer `index` to `value` (a menu: the option's index) and fire 'change', as a
        reader's release of a slider does; wait for the answer and return what the page shows."""
        box = f"{BOXES}[{index}]"
        runs = self.evaluate(f"Number({box}.dataset.runs || 0)")
        self.evaluate(f"(() => {{ const el = {box}.querySelector('[name={json.dumps(name)}]');"
                      f" el.value = {json.dumps(str(value))}; el.dispatchEvent(new Event('change')); }})()")
        self.wait_for(f"Number({box}.dataset.runs || 0) > {runs}", timeout)
        shown = self.evaluate(f"(() => {{ const b = {box};"
                              " const o = b.querySelector('.scalebook-output').cloneNode(true);"
                              " o.querySelectorAll('style, script').forEach(e => e.remove());"
                              " return JSON.stringify({values: JSON.parse(b.dataset.values),"
                              " numbers: JSON.parse(b.dataset.answer), text: o.textContent,"
                              " ms: Number(b.dataset.answerMs)}); })()")
        return json.loads(shown)

    def offsite(self) -> list[str]:
        """Every request so far to a host other than the page's own (data: and blob: URLs stay in the page): those
        the DevTools protocol reported, and those the browser sent to the recording proxy."""
        self._pump(0.2)
        own = urlsplit(self.url).netloc
        seen = [u for u in self.requests if urlsplit(u).scheme not in ("data", "blob", "about", "chrome-extension")
                and urlsplit(u).netloc != own]
        return list(dict.fromkeys(seen + [u for u in self._proxy.seen if u not in BROWSER_OWN]))

    def close(self) -> None:
        self._browser.close()
        self._proxy.close()
