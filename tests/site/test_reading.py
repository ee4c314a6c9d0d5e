"""The site as a reader without a network meets it, in headless Chromium: the maths typesets from the site's own
MathJax, and no worked answer's number is in sight before its fold is opened: on the site with JavaScript on and
off, and in JupyterLab.

Each check is first run on a fixture page that must fail it: `fixtures/cdn_math.html` loads MathJax from a CDN
(raw TeX offline); `fixtures/spoiler.html` leaves answers in sight in a check output below a closed fold and, past
a closed "More on this answer" fold, in a figure's alt text and an explorer's slider; `fixtures/spoiler_script.html`
folds an answer with the page's own script only, so it shows with JavaScript off; `fixtures/spoiler.ipynb` has a
MyST directive JupyterLab shows as raw text and a code cell that shows an answer.

JupyterLab is the real thing, not a substitute: this environment's `jupyter lab` serves the notebook, and Chromium
renders it with JupyterLab's own markdown pipeline (`marked`, then its HTML sanitizer, which keeps <details> and
<summary>). `jupyter nbconvert --to html` would not do: it renders markdown in Python with mistune.
Run by `make test-site`; SCALEBOOK_SITE points at a site built elsewhere (default: _build/html).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from browser import BROWSER, read_offline
from pagecheck import tex_in_text

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SCALEBOOK_SITE", ROOT / "_build" / "html"))
FIXTURES = Path(__file__).parent / "fixtures"
CHAPTERS = sorted((SITE / "chapters").glob("*.html"))
MATH_PAGES = CHAPTERS + sorted((SITE / "exercises").glob("*.html"))[:1]

needs_browser = pytest.mark.skipif(BROWSER is None, reason="chromium is not installed: `make test-site` installs it")
needs_site = pytest.mark.skipif(not CHAPTERS, reason=f"no built site in {SITE}: run `make book` first")

# The reader's text once MathJax is done: prose and outputs, without code and without typeset formulas.
MATHS = """(async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const root = document.querySelector('article') || document.body, parts = [];
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n; (n = walk.nextNode());)
    if (!n.parentElement.closest('pre, code, script, style, mjx-container')) parts.push(n.data);
  return JSON.stringify({formulas: root.querySelectorAll('span.math, div.math').length,
                         typeset: root.querySelectorAll('mjx-container').length, text: parts.join(' ')});
})()"""

# Each fold titled "...answer...": its whole text, the question before it (hidden text too) and what a reader
# sees of the fold and of what follows it, up to the next heading, section or answer (a "More on this answer" fold
# ends neither). A figure's alt text and an explorer's controls (their values) count as text.
# BLOCKS gives the elements a fold sits among: on the site its siblings; in JupyterLab every rendered markdown
# block and every code cell of the notebook, in order. There a directive shown as raw text (":::{admonition}") is
# reported too: JupyterLab does not know MyST.
FOLDS = """(async () => {
  WAIT
  const FOLD = 'details.fold, div.dropdown, details.sd-dropdown, details.dropdown';
  const seen = el => el.checkVisibility({contentVisibilityAuto: true, opacityProperty: true,
                                         visibilityProperty: true});
  const words = (root, shownOnly) => {
    const parts = [], walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT | NodeFilter.SHOW_ELEMENT);
    for (let n = root; n; n = walk.nextNode()) {
      const el = n.nodeType === Node.TEXT_NODE ? n.parentElement : n;
      if (el.closest('script, style') || (shownOnly && !seen(el))) continue;
      if (n.nodeType === Node.TEXT_NODE) parts.push(n.data);
      else if (n.matches('img[alt], [role=img][aria-label]')) parts.push(n.alt || n.getAttribute('aria-label'));
      else if (n.matches('input:not([type=hidden]), select, textarea')) parts.push(n.value);
    }
    return parts.join(' ');
  };
  const blocks = BLOCKS;
  const heading = el => /^H[1-6]$/.test(el.tagName);
  const title = fold => (fold.querySelector('.admonition-title, summary') || fold).textContent.trim();
  const stop = (el, forward) => el.tagName === 'SECTION' || (forward && heading(el))  // a fold "More on this answer"
    || (el.matches(FOLD) && !/^more on/i.test(title(el)));                          // is passed, either way
  const around = (fold, forward, cells) => {  // cells: JupyterLab's code cells only, or all but them
    const all = blocks(fold), parts = [];
    for (let i = all.indexOf(fold) + (forward ? 1 : -1); i >= 0 && i < all.length; i += forward ? 1 : -1) {
      const el = all[i];
      if (stop(el, forward)) break;
      if (cells === undefined || cells === el.matches('.jp-CodeCell')) parts.unshift(words(el, forward));
      if (heading(el)) break;
    }
    return parts.join(' ');
  };
  const raw = [...document.querySelectorAll('.jp-RenderedMarkdown > *')].map(el => words(el, true))
    .filter(text => /:{3,}\\{(admonition|dropdown)\\}/.test(text));
  return JSON.stringify({raw, folds: [...document.querySelectorAll(FOLD)].map(fold => ({
    title: title(fold),
    answer: words(fold, false), question: around(fold, false),
    shown: words(fold, true) + ' ' + around(fold, true, false), code: around(fold, true, true)}))});
})()"""
SITE_FOLDS = FOLDS.replace("WAIT", "").replace("BLOCKS", "fold => [...fold.parentElement.children]")
# JupyterLab: wait until the notebook shows its N markdown cells rendered, then take its blocks in order.
LAB_FOLDS = FOLDS.replace("WAIT", """
  const rendered = () => [...document.querySelectorAll('.jp-Notebook .jp-MarkdownCell .jp-RenderedMarkdown')]
    .filter(r => r.childElementCount);
  for (let t = 0; rendered().length < MARKDOWN_CELLS; t++) {
    if (t > 1200) throw new Error(`JupyterLab rendered ${rendered().length} of MARKDOWN_CELLS markdown cells`);
    await new Promise(go => setTimeout(go, 100));
  }""").replace("BLOCKS", """(() => {
    const all = [...document.querySelectorAll('.jp-Notebook .jp-Cell')].flatMap(cell =>
      cell.classList.contains('jp-MarkdownCell') ? [...cell.querySelector('.jp-RenderedMarkdown').children] : [cell]);
    return () => all;
  })()""")
NUMBER = re.compile(r"(?<![A-Za-z\d.])\d+(?:,\d{3})*(?:\.\d+)?(?![A-Za-z\d])")  # not the 16 of bf16 or H100's 100


def maths_problems(url: str) -> list[str]:
    """Formulas MathJax left untypeset, raw TeX in the text, and requests to other hosts, with the network off."""
    value, offsite = read_offline(url, MATHS)
    page = json.loads(value)
    found = [f"{page['formulas'] - page['typeset']} of {page['formulas']} formulas not typeset"] \
        if page["typeset"] < page["formulas"] else []
    return found + tex_in_text(page["text"]) + [f"asked another host: {u}" for u in offsite]


def _numbers(text: str) -> set[str]:
    """The numbers in `text` with at least two significant digits ('560', '2,047', '1.37'; not '8', '100', and
    not the digits of a name such as 'bf16', 'H100' or 'v5e')."""
    found = {m.group().replace(",", "") for m in NUMBER.finditer(text)}
    return {n for n in found if len(n.replace(".", "").strip("0")) >= 2}


def spoilers(url: str, scripts: bool = True) -> list[str]:
    """One line per worked answer whose numbers a reader sees before opening its fold; empty for a clean page.
    With `scripts` False the page is read with JavaScript switched off.

    An answer's numbers are those in its fold that its question does not already state."""
    return _spoilers(json.loads(read_offline(url, SITE_FOLDS, scripts=scripts)[0]))


def _spoilers(page: dict, code: bool = False) -> list[str]:
    """The lines of `spoilers` for what FOLDS read of a page; with `code`, for JupyterLab's code cells only."""
    found = [] if code else [f"fold shown as raw text: {' '.join(text.split())[:60]}" for text in page["raw"]]
    for fold in (f for f in page["folds"] if "answer" in f["title"].lower()):
        if visible := sorted(_numbers(fold["answer"]) - _numbers(fold["question"])
                             & _numbers(fold["code" if code else "shown"])):
            question = " ".join(fold["question"].split())[-60:]
            found.append(f"...{question}: answer {', '.join(visible)} in sight")
    return found


# JupyterLab's own settings for the run: every cell attached to the page (not only those in view), no news fetched.
LAB_SETTINGS = {"@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
                "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                                   "checkForUpdates": False}}


@contextmanager
def jupyterlab() -> Iterator[str]:
    """A JupyterLab server of this environment over the repository, on a free local port, with its settings and
    workspaces in a temporary folder; yields its base URL."""
    with tempfile.TemporaryDirectory() as home, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        for name, settings in LAB_SETTINGS.items():
            (Path(home) / "settings" / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(home) / "settings" / name).write_text(json.dumps(settings))
        env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=f"{home}/settings", JUPYTERLAB_WORKSPACES_DIR=f"{home}/ws")
        probe.close()
        server = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ServerApp.port_retries=0",
             "--ServerApp.ip=127.0.0.1", "--allow-root", "--IdentityProvider.token=", "--ServerApp.password=",
             f"--ServerApp.root_dir={ROOT}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(600):
                try:
                    urllib.request.urlopen(f"{url}/api/status", timeout=5)
                    break
                except OSError:
                    if server.poll() is not None:
                        raise RuntimeError(f"jupyter lab exited (status {server.returncode})") from None
                    time.sleep(0.2)
            yield url
        finally:
            server.terminate()
            server.wait(timeout=30)


def lab_spoilers(lab: str, notebook: Path, code: bool = False) -> list[str]:
    """`spoilers` for a notebook as JupyterLab renders it (its own `marked` renderer and sanitizer, in Chromium):
    for its markdown, or with `code` for the code cells after each fold (JupyterLab shows their source)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    markdown = sum(1 for c in cells if c["cell_type"] == "markdown" and "".join(c["source"]).strip())
    url = f"{lab}/lab/tree/{notebook.relative_to(ROOT).as_posix()}?reset"  # no other notebook restored
    return _spoilers(json.loads(read_offline(url, LAB_FOLDS.replace("MARKDOWN_CELLS", str(markdown)), 180)[0]), code)


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    with jupyterlab() as url:
        yield url


@needs_browser
def test_the_offline_check_fails_on_maths_from_a_cdn():
    found = maths_problems((FIXTURES / "cdn_math.html").as_uri())
    assert found[0] == "2 of 2 formulas not typeset", found
    assert any("\\text" in line for line in found), found
    assert found[-1] == "asked another host: https://cdn.jsdelivr.net/npm/mathjax@3.2.2/es5/tex-mml-chtml.js"


@needs_site
@needs_browser
@pytest.mark.parametrize("page", MATH_PAGES, ids=lambda p: str(p.relative_to(SITE)))
def test_the_maths_typesets_with_the_network_off(page: Path):
    assert maths_problems(page.as_uri()) == []


@needs_browser
def test_the_spoiler_check_finds_the_answer_left_in_sight():
    found = spoilers((FIXTURES / "spoiler.html").as_uri())
    assert [line.split(": ")[-1] for line in found] == ["answer 560 in sight", "answer 1024, 308 in sight"], found


@needs_browser
def test_the_spoiler_check_finds_an_answer_only_a_script_folds():
    page = (FIXTURES / "spoiler_script.html").as_uri()
    assert spoilers(page) == []
    assert [line.split(": ")[-1] for line in spoilers(page, scripts=False)] == ["answer 330 in sight"]


@needs_site
@needs_browser
@pytest.mark.parametrize("scripts", [True, False], ids=["javascript-on", "javascript-off"])
def test_no_worked_answer_is_in_sight_before_its_fold_opens(scripts: bool):
    found = [f"{page.stem}: {line}" for page in CHAPTERS for line in spoilers(page.as_uri(), scripts)]
    assert found == [], f"{len(found)} answers in sight:\n" + "\n".join(found)


LAB_CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


@needs_browser
def test_the_lab_spoiler_check_finds_a_raw_directive_and_an_answer_in_code(lab: str):
    page = FIXTURES / "spoiler.ipynb"
    found = lab_spoilers(lab, page)
    assert [line.split(": ")[0] for line in found] == ["fold shown as raw text"], found
    assert [line.split(": ")[-1] for line in lab_spoilers(lab, page, code=True)] == ["answer 2047 in sight"]


@needs_browser
@pytest.mark.parametrize("notebook", LAB_CHAPTERS, ids=lambda p: p.stem)
def test_no_worked_answer_is_in_sight_in_jupyterlab(lab: str, notebook: Path):
    assert lab_spoilers(lab, notebook) == []


@needs_browser
def test_no_answer_is_in_sight_in_jupyterlabs_code_cells(lab: str):
    found = [f"{nb.stem}: {line}" for nb in LAB_CHAPTERS for line in lab_spoilers(lab, nb, code=True)]
    assert found == [], f"{len(found)} answers in sight:\n" + "\n".join(found)


# The chapter's badges as JupyterLab draws them, once its first markdown cell has rendered: [alt, natural width].
LAB_BADGES = """(async () => {
  const badges = () => [...document.querySelectorAll('.jp-RenderedMarkdown a > img')]
    .filter(img => /^Open in/.test(img.alt));
  for (let t = 0; badges().length < 2; t++) {
    if (t > 1200) throw new Error(`JupyterLab drew ${badges().length} of 2 badges`);
    await new Promise(go => setTimeout(go, 100));
  }
  await Promise.all(badges().map(img => img.complete ? 0 : new Promise(go => { img.onload = img.onerror = go; })));
  return JSON.stringify(badges().map(img => [img.alt, img.naturalWidth]));
})()"""


@needs_browser
def test_jupyterlab_offline_draws_the_badges_and_asks_no_other_host(lab: str):
    value, offsite = read_offline(f"{lab}/lab/tree/chapters/01_rooflines.ipynb?reset", LAB_BADGES, 180)
    assert [alt for alt, width in json.loads(value) if width > 0] == ["Open in Colab", "Open in Kaggle"], value
    assert offsite == []
