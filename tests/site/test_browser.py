"""The built website in a real browser: every page loads without console errors, every local image exists.

Run by `make test-site` after `make book`; needs Debian's chromium (the make target installs it). Two pages are
saved as screenshots in _build/screenshots/ to look at.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

SITE = Path(__file__).resolve().parents[2] / "_build" / "html"
PAGES = sorted([*SITE.glob("chapters/*.html"), *SITE.glob("exercises/*.html")]) if SITE.exists() else []
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
CONSOLE = re.compile(r'CONSOLE\(\d+\)\] "(?P<message>.*)", source: (?P<source>\S*)')

pytestmark = [
    pytest.mark.skipif(not PAGES, reason="no built site: run `make book` first"),
    pytest.mark.skipif(BROWSER is None, reason="chromium is not installed: `make test-site` installs it"),
]


def _chromium(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([BROWSER, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=timeout)


def test_the_site_has_every_chapter_and_problem_set():
    names = {p.stem for p in PAGES}
    assert {"00_intro", "01_rooflines"} <= names
    assert len([p for p in PAGES if p.parent.name == "exercises"]) >= 1


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_page_loads_without_errors_of_its_own(page: Path):
    run = _chromium("--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    assert "<main" in run.stdout or "<article" in run.stdout
    local_errors = [m["message"] for m in CONSOLE.finditer(run.stderr)
                    if m["source"].startswith("file:") and re.search(r"Error|Uncaught", m["message"])]
    assert not local_errors, local_errors


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_local_image_exists(page: Path):
    html = page.read_text(encoding="utf-8")
    sources = re.findall(r'<img[^>]*\ssrc="([^"]+)"', html)
    local = [s for s in sources if not s.startswith(("http:", "https:", "data:"))]
    missing = [s for s in local if not (page.parent / s.split("#")[0]).resolve().exists()]
    assert not missing, missing


@pytest.mark.parametrize("stem", ["01_rooflines", "03_sharding"])
def test_screenshots_of_two_chapters(stem: str):
    out = SITE.parent / "screenshots"
    out.mkdir(exist_ok=True)
    shot = out / f"{stem}.png"
    run = _chromium("--window-size=1280,2400", f"--screenshot={shot}", (SITE / "chapters" / f"{stem}.html").as_uri())
    assert run.returncode == 0 and shot.exists() and shot.stat().st_size > 50_000
