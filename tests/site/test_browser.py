"""The built website as a reader meets it: every page loads in headless Chromium with no exception, no console
error and no failed local load, and every local image and internal link (file and anchor) exists.

Run by `make test-site` after `make book`; needs Debian's chromium (the make target installs it). The checker
(`browser.problems`) is first run on `fixtures/broken.html`, a page with one of each problem, and must report
every one: a test of the site that cannot fail proves nothing. SCALEBOOK_SITE points the tests at a site built
elsewhere (default: _build/html). Two pages are saved as screenshots in _build/screenshots/ to look at.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from browser import BROWSER, FLAGS, file_problems, problems

from scalebook.book import notebooks

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SCALEBOOK_SITE", ROOT / "_build" / "html"))
SKIP = ("_static", "_sources", "_images")
PAGES = sorted(p for p in SITE.rglob("*.html") if not set(p.relative_to(SITE).parts) & set(SKIP)) \
    if SITE.exists() else []
FIXTURES = Path(__file__).parent / "fixtures"
ANCHORS: dict = {}  # parsed pages, shared by the link checks of every page

needs_site = pytest.mark.skipif(not PAGES, reason=f"no built site in {SITE}: run `make book` first")
needs_browser = pytest.mark.skipif(BROWSER is None, reason="chromium is not installed: `make test-site` installs it")


@needs_browser
def test_the_checker_catches_every_problem_of_the_broken_page():
    found = problems(FIXTURES / "broken.html")
    expected = [
        "exception: SyntaxError: Identifier 'CONFIG_URL' has already been declared",  # a script written twice
        "console.error: deliberate console error",
        "exception: ReferenceError: notDefinedAnywhere is not defined",
        "failed to load file:",  # the missing image, as the browser saw it
        "missing image images/missing.png",
        "broken link no_such_page.html",
        "broken link clean.html#no-such-anchor",
    ]
    for start in expected:
        assert any(line.startswith(start) for line in found), (start, found)
    assert len(found) == len(expected), found  # and nothing else: the plain log, the good links and image pass


@needs_browser
def test_the_checker_finds_nothing_on_a_clean_page():
    assert problems(FIXTURES / "clean.html") == []


def test_the_file_checks_need_no_browser():
    assert [line.split(" ")[0:2] for line in file_problems(FIXTURES / "broken.html")] == [
        ["missing", "image"], ["broken", "link"], ["broken", "link"]]


@needs_site
def test_the_site_has_every_chapter_and_problem_set():
    names = {p.stem for p in PAGES}
    assert {"00_intro", "01_rooflines"} <= names
    assert len([p for p in PAGES if p.parent.name == "exercises"]) >= 1


@needs_site
@needs_browser
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(SITE)))
def test_page_loads_without_errors_and_its_images_and_links_exist(page: Path):
    html = page.read_text(encoding="utf-8")
    assert "<main" in html or 'http-equiv="Refresh"' in html  # index.html only redirects to the first chapter
    assert problems(page, ANCHORS) == []


@needs_site
def test_launch_buttons_use_the_configured_repository():
    """Colab and Binder buttons come from repository.url in _config.yml, like the notebooks' badges."""
    config = notebooks.read_config(ROOT)
    for page in [p for p in PAGES if p.parent.name in ("chapters", "exercises")]:
        html = page.read_text(encoding="utf-8")
        assert config.colab(f"{page.parent.name}/{page.stem}.ipynb") in html, page
        assert f"https://mybinder.org/v2/gh/{config.slug}/{config.branch}?" in html, page
        assert notebooks.foreign_links(html, config) == [], page


@needs_site
def test_no_page_writes_an_inline_script_twice():
    """The cause of 'THEBE_JS_URL has already been declared' on every page (fixed by _ext/js_once.py)."""
    twice = [str(p.relative_to(SITE)) for p in PAGES if p.read_text(encoding="utf-8").count("const THEBE_JS_URL") > 1]
    assert not twice, twice


@needs_site
@needs_browser
@pytest.mark.parametrize("stem", ["01_rooflines", "03_sharding"])
def test_screenshots_of_two_chapters(stem: str):
    out = SITE.parent / "screenshots"
    out.mkdir(exist_ok=True)
    shot = out / f"{stem}.png"
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        run = subprocess.run([BROWSER, *FLAGS, f"--user-data-dir={profile}", "--window-size=1280,2400",
                              f"--screenshot={shot}", (SITE / "chapters" / f"{stem}.html").as_uri()],
                             capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and shot.exists() and shot.stat().st_size > 50_000
