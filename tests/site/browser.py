"""Check a built web page the way a reader meets it: in headless Chromium, plus its images and links on disk.

`problems(page)` returns one line per problem, empty for a good page:
- a JavaScript exception (`Uncaught ...`) or a `console.error` / `console.assert` call while the page loads;
- a local file the page asked for and could not load (a script, a stylesheet, an image);
- an `<img>` whose local file does not exist, a link to a local page that does not exist, or to an anchor
  (`page.html#id`, `#id`) that the target page does not define.

Why the DevTools protocol and not Chromium's log: with `--enable-logging=stderr` Chromium prints every console
message as `[pid:tid:time:INFO:CONSOLE:62] "message", source: file:///... (62)` — the same INFO level for
`console.log` and for `console.error`, and nothing for a failed image. The format has changed before (it was
`CONSOLE(62)]`, and a test that looked for that could no longer fail). The protocol (`--remote-debugging-pipe`:
JSON messages over file descriptors 3 and 4) reports each event with its kind and level.
Resources from other hosts are not counted when they fail to load (the test machine may be offline).
`read_offline(url, expression)` opens a page with every other host unreachable and evaluates JavaScript in it
once loaded: the site serves its own MathJax, so its maths must typeset that way (tests/site/test_reading.py).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--disable-features=AutofillServerCommunication"]
SETTLE = 1.0  # seconds to keep listening after the load event, for async and deferred scripts
# Seconds a starting Chromium may take to answer at all. Its first start on a machine builds the font cache and
# profile, which took over 30 s on a loaded CI machine (Target.createTarget timed out): a start, not a page, is slow.
STARTUP = 180.0
# A laptop's window; every host but this one unreachable (see read_offline).
OFFLINE = ("--window-size=1280,900", "--proxy-server=http://127.0.0.1:9",
           "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")


class Chromium:
    """One headless Chromium driven over --remote-debugging-pipe (commands on its fd 3, replies on its fd 4)."""

    def __init__(self, flags: tuple[str, ...] = ()) -> None:
        if BROWSER is None:
            raise RuntimeError("chromium is not installed (`make test-site` installs it)")
        self._profile = tempfile.TemporaryDirectory(ignore_cleanup_errors=True)
        to_chrome, self._send = os.pipe()
        self._recv, from_chrome = os.pipe()

        def wire_fds() -> None:  # in the child: its fd 3 reads our commands, its fd 4 writes its replies
            high_in, high_out = fcntl.fcntl(to_chrome, fcntl.F_DUPFD, 10), fcntl.fcntl(from_chrome, fcntl.F_DUPFD, 10)
            os.dup2(high_in, 3)
            os.dup2(high_out, 4)

        self._proc = subprocess.Popen(
            [BROWSER, *FLAGS, *flags, "--remote-debugging-pipe", f"--user-data-dir={self._profile.name}",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire_fds, close_fds=False)
        os.close(to_chrome)
        os.close(from_chrome)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict] = []
        try:  # ready: later commands get their own, shorter timeouts
            self.send("Browser.getVersion", timeout=STARTUP)
        except (RuntimeError, TimeoutError):
            self.close()
            raise

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 30) -> dict:
        """Send one command and return its result; events that arrive meanwhile are kept for `events`."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._send, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            for reply in self._read(deadline - time.monotonic()):
                if reply.get("id") == self._next_id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
                self._events.append(reply)
            if time.monotonic() > deadline:
                raise TimeoutError(f"chromium did not answer {method} within {timeout} s")

    def events(self, seconds: float) -> list[dict]:
        """Every event received so far and during the next `seconds`; the list is emptied."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._events += self._read(deadline - time.monotonic())
        events, self._events = self._events, []
        return events

    def _read(self, timeout: float) -> list[dict]:
        ready, _, _ = select.select([self._recv], [], [], max(timeout, 0))
        if ready:
            chunk = os.read(self._recv, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium exited (status {self._proc.poll()})")
            self._buffer += chunk
        *messages, self._buffer = self._buffer.split(b"\0")
        return [json.loads(m) for m in messages if m]

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)  # lets its helper processes finish writing the profile
            self._proc.wait(timeout=10)
        except (RuntimeError, TimeoutError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait()
        os.close(self._send)
        os.close(self._recv)
        self._profile.cleanup()


def _load(browser: Chromium, url: str, timeout: float, scripts: bool = True) -> tuple[str, list[dict]]:
    """Open `url` in a fresh tab; return its session and the events up to `SETTLE` s after its load event.
    With `scripts` False the page's own JavaScript never runs (DevTools' Emulation.setScriptExecutionDisabled, as a
    reader with JavaScript switched off); expressions sent by DevTools still run."""
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Runtime", "Log", "Page", "Network"):
        browser.send(f"{domain}.enable", session=session)
    if not scripts:
        browser.send("Emulation.setScriptExecutionDisabled", {"value": True}, session=session)
    browser.send("Page.navigate", {"url": url}, session=session)
    events, deadline = [], time.monotonic() + timeout
    while not any(e.get("method") == "Page.loadEventFired" for e in events):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} did not finish loading within {timeout} s")
        events += browser.events(0.2)
    return session, events + browser.events(SETTLE)


def console_problems(url: str, timeout: float = 60) -> list[str]:
    """Load `url` in a fresh tab and return its exceptions, console errors and failed local loads."""
    browser = Chromium()
    try:
        _, events = _load(browser, url, timeout)
    except TimeoutError as error:
        return [str(error)]
    finally:
        browser.close()
    return _problems_in(events)


def read_offline(url: str, expression: str, timeout: float = 60, scripts: bool = True,
                 width: int = 1280, media: str = "screen") -> tuple[Any, list[str]]:
    """Open `url` with every other host unreachable, as a reader without a network meets it; return the value of
    the JavaScript `expression` (a promise is awaited) once the page has loaded, and the off-host URLs it asked for.

    Off-host requests go to a proxy on a closed local port and fail; the browser never sends loopback through a
    proxy, so a page served from 127.0.0.1 or opened from disk still loads its own files. With `scripts` False the
    page's own JavaScript is switched off (see `_load`). `width` is the page's width in CSS pixels when the
    expression runs (a laptop's 1280 by default; 390 for a phone's: DevTools' device metrics, since a headless
    window is never narrower than 500 px). `media` is the CSS media the page is laid out for: "print" applies its
    print stylesheet, as Chromium does when it prints the page.
    """
    browser = Chromium(OFFLINE)
    try:
        session, events = _load(browser, url, timeout, scripts)
        browser.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": 900, "deviceScaleFactor": 1,
                                                            "mobile": False}, session=session)
        browser.send("Emulation.setEmulatedMedia", {"media": media}, session=session)
        reply = browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                  "awaitPromise": True}, session=session, timeout=timeout)
    finally:
        browser.close()
    if "exceptionDetails" in reply:
        raise RuntimeError(f"{expression[:80]}: {reply['exceptionDetails']}")
    asked = [e["params"]["request"]["url"] for e in events if e.get("method") == "Network.requestWillBeSent"]
    return reply["result"].get("value"), [u for u in asked if urlsplit(u).scheme in ("http", "https", "ws", "wss")
                                         and urlsplit(u).hostname not in ("127.0.0.1", "localhost")]


def _problems_in(events: list[dict]) -> list[str]:
    requests: dict[str, str] = {}
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text", "")
            found.append(f"exception: {text.splitlines()[0] if text else details}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            found.append(f"console.{params['type']}: {text}")
        elif method == "Network.requestWillBeSent":
            requests[params["requestId"]] = params["request"]["url"]
        elif method == "Network.loadingFailed":
            url = requests.get(params["requestId"], "")
            if url.startswith("file:") and not params.get("canceled"):
                found.append(f"failed to load {url}: {params.get('errorText')}")
    return found


class _Refs(HTMLParser):
    """The ids, image sources and link targets of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.images: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key in ("id", "name"):
            if a.get(key) and (key == "id" or tag == "a"):
                self.ids.add(a[key])
        if tag == "img" and a.get("src"):
            self.images.append(a["src"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])


def _refs(page: Path, cache: dict[Path, _Refs]) -> _Refs:
    if page not in cache:
        cache[page] = _Refs()
        cache[page].feed(page.read_text(encoding="utf-8"))
    return cache[page]


def _local(ref: str) -> bool:
    return not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", ref) and not ref.startswith("//")  # no scheme, not //host


def file_problems(page: Path, cache: dict[Path, _Refs] | None = None) -> list[str]:
    """Broken local images, links to missing local files and links to anchors their page does not define."""
    cache = {} if cache is None else cache
    refs = _refs(page, cache)
    found = []
    for src in refs.images:
        if _local(src) and not (page.parent / unquote(urlsplit(src).path)).resolve().exists():
            found.append(f"missing image {src}")
    for href in refs.links:
        if not _local(href):
            continue
        parts = urlsplit(href)
        target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            found.append(f"broken link {href}: no file {target.name}")
        elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _refs(target, cache).ids:
            found.append(f"broken link {href}: {target.name} has no id {parts.fragment!r}")
    return found


def problems(page: Path, cache: dict[Path, _Refs] | None = None) -> list[str]:
    """Everything wrong with `page` (an .html file on disk): in the browser, then on disk."""
    return console_problems(page.as_uri()) + file_problems(page, cache)
