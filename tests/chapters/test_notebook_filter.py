"""A reader's run leaves git clean: the twins' strip filter (.gitattributes) and JupyterLab's post-save hook, both
set up by `make lab`.

A chapter saved in JupyterLab after Run All holds outputs, execution counts, `language_info`, widget state and
per-cell run metadata. With the filter configured as `make notebook-filter` does, git reads that file as the
tracked twin, and the hook (`scalebook.book.notebooks.after_save`, which jupyter_server calls after writing the file)
refreshes git's index: `git status` is clean, the outputs stay on disk, and `git pull` brings in a new version of
the chapter. Without the filter the same save shows as a modification, and so does a reader's edit of a cell.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from scalebook.book import notebooks

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[2]
TWIN = "chapters/01_rooflines.ipynb"
TWINS = sorted(p for folder in notebooks.FOLDERS for p in (ROOT / folder).glob("*.ipynb"))

needs_git = pytest.mark.skipif(not (shutil.which("git") and shutil.which("make")), reason="needs git and make")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def _configure(repo: Path) -> None:
    """Set up the filter in `repo` as `make lab` does, with this interpreter's scalebook."""
    subprocess.run(["make", "-s", "-f", str(ROOT / "Makefile"), "notebook-filter",
                    f"BIN={Path(sys.executable).parent}"], cwd=repo, check=True, capture_output=True)


def _repo(path: Path, filtered: bool) -> Path:
    """A git repository holding the twin, .gitattributes and .gitignore; its filter configured by `make
    notebook-filter`."""
    (path / "chapters").mkdir(parents=True)
    shutil.copy(ROOT / TWIN, path / TWIN)
    for kept in (".gitattributes", ".gitignore"):  # the filter's attributes; JupyterLab's checkpoints ignored
        shutil.copy(ROOT / kept, path / kept)
    _git(path, "init", "-q")
    _git(path, "config", "user.email", "reader@example.org")
    _git(path, "config", "user.name", "reader")
    if filtered:
        _configure(path)
    _git(path, "add", ".")
    _git(path, "commit", "-q", "-m", "the book")
    return path


def _run_all(path: Path, edit: str = "") -> dict:
    """The twin at `path` as JupyterLab holds it after Run All: outputs, execution counts, `language_info`,
    widget state and per-cell run metadata, with `edit` appended to the first code cell."""
    nb = nbformat.read(path, as_version=4)
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.2"}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    for count, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.execution_count = count + 1
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="calibrating: 100%\n"),
                        nbformat.v4.new_output("execute_result", {"text/plain": "240.2"}, execution_count=count + 1)]
        cell.metadata["execution"] = {"iopub.status.busy": "2026-12-04T03:00:00.000Z"}
        cell.metadata["scrolled"] = True
    next(c for c in nb.cells if c.cell_type == "code").source += edit
    return nb


def _run_all_and_save(path: Path, edit: str = "") -> None:
    """Write the run twin (`_run_all`) as jupyter_server writes notebooks (nbformat), then run the post-save hook
    as jupyter_server does."""
    nbformat.write(_run_all(path, edit), path)
    notebooks.after_save(model={"type": "notebook"}, os_path=str(path), contents_manager=None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _call(url: str, method: str = "GET", body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, method=method, headers={"Authorization": "token reader"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"{}")


def _upstream_commit(upstream: Path) -> None:
    """A new sentence in the chapter upstream, the twin written as `make sync` writes it, committed."""
    nb = nbformat.read(upstream / TWIN, as_version=4)
    nb.cells[0].source += "\n\nA sentence added upstream."
    (upstream / TWIN).write_text(nbformat.writes(nb), encoding="utf-8")
    _git(upstream, "commit", "-q", "-am", "a new sentence")


def _pull(reader: Path) -> None:
    for key, value in (("user.email", "reader@example.org"), ("user.name", "reader"), ("pull.rebase", "false")):
        _git(reader, "config", key, value)
    _git(reader, "pull", "-q")


def _save_through_a_plain_server(repo: Path) -> None:
    """Start the environment's Jupyter server in `repo` with no option about saving (as `.venv/bin/jupyter lab`
    starts one) and save the run twin through its contents API, as JupyterLab's Save does."""
    port = _free_port()
    root = ["--allow-root"] if os.geteuid() == 0 else []  # as `make lab` adds it in a container
    server = subprocess.Popen([str(Path(sys.executable).parent / "jupyter-server"), f"--port={port}", "--no-browser",
                               "--IdentityProvider.token=reader", *root], cwd=repo,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}/api"
    try:
        for _ in range(3000):  # until the server answers (up to 5 minutes: an event, not a speed to meet)
            try:
                _call(f"{base}/status")
                break
            except (urllib.error.URLError, ConnectionError):
                assert server.poll() is None, server.stderr.read().decode()[-2000:]
                time.sleep(0.1)
        saved = {"type": "notebook", "format": "json", "content": _run_all(repo / TWIN)}
        _call(f"{base}/contents/{TWIN}", "PUT", saved)
    finally:
        server.terminate()
        server.wait(timeout=60)


@pytest.mark.parametrize("twin", TWINS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_tracked_twin_passes_the_filter_unchanged(twin: Path):
    text = twin.read_text(encoding="utf-8")
    assert notebooks.strip_outputs(text) == text


@needs_git
def test_run_all_and_save_leaves_git_status_clean_and_the_outputs_on_disk(tmp_path: Path):
    repo = _repo(tmp_path / "book", filtered=True)
    _run_all_and_save(repo / TWIN)
    assert "240.2" in (repo / TWIN).read_text(encoding="utf-8")
    assert _git(repo, "status", "--porcelain") == ""
    assert _git(repo, "diff") == ""


@needs_git
def test_an_edited_cell_stays_a_modification(tmp_path: Path):
    repo = _repo(tmp_path / "book", filtered=True)
    _run_all_and_save(repo / TWIN, edit="\nanswer = 42")
    assert _git(repo, "status", "--porcelain") == f" M {TWIN}\n"
    assert "+    \"answer = 42\"" in _git(repo, "diff") and "240.2" not in _git(repo, "diff")


def test_jupyter_server_accepts_the_hook_make_lab_names():
    manager = pytest.importorskip("jupyter_server.services.contents.manager")
    hook = manager.ContentsManager(post_save_hook="scalebook.book.notebooks.after_save").post_save_hook
    assert hook is notebooks.after_save


@needs_git
def test_without_the_filter_the_same_save_is_a_modification(tmp_path: Path):
    repo = _repo(tmp_path / "book", filtered=False)
    _run_all_and_save(repo / TWIN)
    assert _git(repo, "status", "--porcelain") == f" M {TWIN}\n"


@needs_git
def test_git_pull_works_after_a_reading_session(tmp_path: Path):
    upstream = _repo(tmp_path / "upstream", filtered=False)
    reader = tmp_path / "reader"
    _git(tmp_path, "clone", "-q", str(upstream), str(reader))
    _configure(reader)
    _run_all_and_save(reader / TWIN)
    _upstream_commit(upstream)
    _pull(reader)
    assert "A sentence added upstream." in (reader / TWIN).read_text(encoding="utf-8")
    assert _git(reader, "status", "--porcelain") == ""


@needs_git
def test_the_hook_leaves_an_untracked_notebook_alone(tmp_path: Path):
    repo = _repo(tmp_path / "book", filtered=True)
    mine = repo / "chapters" / "mine.ipynb"
    shutil.copy(repo / TWIN, mine)
    notebooks.after_save(model={"type": "notebook"}, os_path=str(mine), contents_manager=None)
    assert _git(repo, "status", "--porcelain") == "?? chapters/mine.ipynb\n"


def test_making_the_venv_sets_up_the_filter_and_the_hook():
    """Every target that makes .venv (`make book`, `make test`, `make lab`) runs `notebooks hooks` (make's dry run
    of the venv's recipe, as if pyproject.toml had changed)."""
    dry = subprocess.run(["make", "-n", "-W", "pyproject.toml", ".venv/.installed-stamp"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert "-m scalebook.book.notebooks hooks" in dry, dry


@needs_git
@pytest.mark.slow
def test_a_chapter_saved_from_a_plain_jupyter_server_leaves_git_clean_and_pull_working(tmp_path: Path):
    """A reader who made the venv (filter and hook set: `notebooks.install_hooks`, as its recipe runs it) and
    started JupyterLab any way saves a run chapter: the outputs stay on disk, `git status` is clean, and `git pull`
    brings a new version of the chapter in (the environment's server config names the hook)."""
    upstream = _repo(tmp_path / "upstream", filtered=False)
    reader = tmp_path / "reader"
    _git(tmp_path, "clone", "-q", str(upstream), str(reader))
    notebooks.install_hooks(reader)
    _save_through_a_plain_server(reader)
    assert "240.2" in (reader / TWIN).read_text(encoding="utf-8")
    assert _git(reader, "status", "--porcelain") == ""
    _upstream_commit(upstream)
    _pull(reader)
    assert "A sentence added upstream." in (reader / TWIN).read_text(encoding="utf-8")
    assert _git(reader, "status", "--porcelain") == ""


REMOTE_IMAGE = re.compile(r"!\[[^\]]*\]\((?:https?:)?//[^)]*\)|<img[^>]*src=[\"'](?:https?:)?//")


def test_the_remote_image_check_finds_a_markdown_and_an_html_image():
    assert len(REMOTE_IMAGE.findall(f"[![Open in Colab]({notebooks.BADGE_COLAB})](x) <img src='//a.b/c.png'>")) == 2
    assert not REMOTE_IMAGE.findall("[![Open in Colab](data:image/svg+xml;base64,PHN2Zz4=)](https://colab)")


@pytest.mark.parametrize("twin", TWINS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_twin_asks_no_other_host_for_an_image(twin: Path):
    """Offline, JupyterLab would draw a remote image as a broken icon: the badges come inline (`inline_badges`)."""
    markdown = ["".join(c["source"]) for c in json.loads(twin.read_text(encoding="utf-8"))["cells"]
                if c["cell_type"] == "markdown"]
    assert [m for text in markdown for m in REMOTE_IMAGE.findall(text)] == []


@pytest.mark.parametrize("twin", TWINS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_jupyterlab_folds_the_cells_the_site_folds(twin: Path):
    """A cell tagged hide-cell shows neither code nor output until opened, hide-input or remove-input hides its
    code: JupyterLab reads nbformat's `jupyter.source_hidden` / `outputs_hidden` cell metadata."""
    for cell in json.loads(twin.read_text(encoding="utf-8"))["cells"]:
        tags, folds = set(cell["metadata"].get("tags", [])), cell["metadata"].get("jupyter", {})
        if cell["cell_type"] == "code":
            assert folds.get("source_hidden", False) == bool(tags & {"hide-cell", "hide-input", "remove-input"})
            assert folds.get("outputs_hidden", False) == bool(tags & {"hide-cell", "hide-output", "remove-output"})


def test_a_fold_a_reader_opens_and_saves_leaves_the_tracked_twin_unchanged():
    text = (ROOT / TWIN).read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=4)
    opened = [cell for cell in nb.cells if cell.metadata.pop("jupyter", None)]
    assert opened, "chapter 1 has folded cells"
    assert notebooks.strip_outputs(nbformat.writes(nb)) == text
