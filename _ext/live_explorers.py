"""Sphinx extension: the book's explorers come alive on the website, computed in the reader's browser by Pyodide.

Each explorer's snapshot carries a JSON description (`scalebook.widgets.web.describe`). This extension
- fetches the Pyodide core from the npm registry at a pinned version (the one whose Python matches the Python
  that pickled the explorers' functions), and MathJax, checks each tarball's sha512 against its pinned integrity,
  and keeps them in `.cache/<package>/<version>/` (out of git; a clean clone fetches them once);
- builds a wheel of `scalebook` (pure Python) at every build;
- copies them under the site's `_static/` so the site runs from any static host and offline, asking no other
  host for anything;
- adds the bridge (`static/scalebook-live.js`, which starts `static/scalebook-worker.js`) to the pages that
  have explorers, and only to them: other pages load no Pyodide;
- draws the chapters' Colab and Kaggle badges from the site's own copies (`static/badges/`), so that no page
  asks another host for an image (the links themselves still lead to Colab and Kaggle).
"""

from __future__ import annotations

import base64
import hashlib
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# Pyodide release per Python minor version, with the npm registry's integrity of its tarball
# (`npm view pyodide@<version> dist.integrity`).
PYODIDE = {
    "3.11": ("0.25.1",
             "sha512-y0nJ/fLA3bxD2iZRzvVTbP2O+wp4Ewm2wThfV4HF0BytQ6hsoqTJFLNY4usLOcCVBrK8TTWqFqrmsVPzHe4rsw=="),
    "3.12": ("0.27.7",
             "sha512-RUSVJlhQdfWfgO9hVHCiXoG+nVZQRS5D9FzgpLJ/VcgGBLSAKoPL8kTiOikxbHQm1kRISeWUBdulEgO26qpSRA=="),
    "3.13": ("0.28.3",
             "sha512-rtCsyTU55oNGpLzSVuAd55ZvruJDEX8o6keSdWKN9jPeBVSNlynaKFG7eRqkiIgU7i2M6HEgYtm0atCEQX3u4A=="),
}
CORE = ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json", "package.json")
# MathJax, served by the site too, so that a page with equations asks no other host either (Sphinx's default is
# jsDelivr's CDN): its browser build, es5/.
MATHJAX = ("3.2.2", "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==")
REGISTRY = "https://registry.npmjs.org/{name}/-/{name}-{version}.tgz"
MARKER = "data-scalebook="


def pyodide_version() -> tuple[str, str]:
    """(version, integrity) of the Pyodide whose Python is this Python (pickled code runs on its own minor)."""
    minor = "{}.{}".format(*sys.version_info[:2])
    if minor not in PYODIDE:
        raise RuntimeError(f"no Pyodide is pinned for Python {minor} (pinned: {sorted(PYODIDE)})")
    return PYODIDE[minor]


def _tarball(name: str, version: str, integrity: str) -> bytes:
    """The package tarball from the npm registry (through `npm pack` where npm exists), checked against `integrity`."""
    data = b""
    if shutil.which("npm"):
        with tempfile.TemporaryDirectory() as tmp:
            run = subprocess.run(["npm", "pack", f"{name}@{version}", "--silent", "--pack-destination", tmp],
                                 capture_output=True, text=True, timeout=600)
            packed = list(Path(tmp).glob("*.tgz"))
            if run.returncode == 0 and packed:
                data = packed[0].read_bytes()
    if not data:
        with urllib.request.urlopen(REGISTRY.format(name=name, version=version), timeout=600) as response:  # noqa: S310
            data = response.read()
    algorithm, digest = integrity.split("-", 1)
    if base64.b64encode(hashlib.new(algorithm, data).digest()).decode() != digest:
        raise RuntimeError(f"{name}@{version} from the registry does not match its pinned integrity {integrity}")
    return data


def fetch_npm(name: str, version: str, integrity: str, keep: tuple[str, ...], cache: Path) -> Path:
    """Return the folder holding the files `keep` (paths in the package, a trailing / for a whole folder) of
    `name@version`, fetching them once into `cache`/`name`/`version`."""
    folder = cache / name / version
    if (folder / ".complete").exists():
        return folder
    part = folder.with_suffix(".part")
    shutil.rmtree(part, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(_tarball(name, version, integrity)), mode="r:gz") as tar:
        for member in tar.getmembers():
            path = member.name.removeprefix("package/")
            if member.isfile() and any(path == k or (k.endswith("/") and path.startswith(k)) for k in keep):
                target = part / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
    missing = [k for k in keep if not (part / k).exists()]
    if missing:
        raise RuntimeError(f"{name}@{version} has no {missing}")
    (part / ".complete").write_text(f"{name}@{version} {integrity}\n")
    shutil.rmtree(folder, ignore_errors=True)
    part.rename(folder)
    return folder


def build_wheel(root: Path, out: Path) -> Path:
    """Build the `scalebook` wheel (pure Python, no dependencies) into `out`; return its path."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:  # build from a copy, so the tree gets no build/ folder
        src = Path(tmp) / "src"
        shutil.copytree(root, src, ignore=shutil.ignore_patterns(
            ".git", ".venv", "_build", ".cache", ".jupyter_cache", "*.ipynb", "node_modules", "__pycache__",
            "*.egg-info", "build", ".pytest_cache", ".ruff_cache", ".hypothesis"))
        for isolation in (["--no-build-isolation"], []):  # this venv's setuptools, else pyproject's (from PyPI)
            run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "--quiet",
                                  "-w", str(out), str(src)], capture_output=True, text=True, timeout=600)
            if run.returncode == 0:
                break
    wheels = list(out.glob("scalebook-*.whl"))
    if run.returncode != 0 or not wheels:
        raise RuntimeError(f"pip wheel failed: {run.stderr[-2000:]}")
    return wheels[0]


def _page_context(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    from scalebook.book.notebooks import BADGE_COLAB, BADGE_KAGGLE

    body = context.get("body", "")
    for url, badge in ((BADGE_COLAB, "colab.svg"), (BADGE_KAGGLE, "kaggle.svg")):  # the links stay, the images are ours
        body = body.replace(f'src="{url}"', f'src="{context["pathto"](f"_static/badges/{badge}", 1)}"')
    context["body"] = body
    if MARKER in body:
        wheel = app.scalebook_live["wheel"].name
        app.add_js_file("scalebook-live.js", loading_method="defer", **{"data-wheel": f"scalebook/{wheel}"})


def _builder_inited(app: Any) -> None:
    if app.builder.format != "html":
        return
    root = Path(app.srcdir)
    cache = root / ".cache"
    app.config.html_static_path.append(str(HERE / "static"))
    version, integrity = pyodide_version()
    app.scalebook_live = {"pyodide": fetch_npm("pyodide", version, integrity, CORE, cache),
                          "mathjax": fetch_npm("mathjax", *MATHJAX, ("es5/",), cache) / "es5",
                          "wheel": build_wheel(root, cache / "wheel")}
    app.config.mathjax_path = "mathjax/tex-mml-chtml.js"


def _build_finished(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    for name in ("pyodide", "mathjax"):
        shutil.copytree(app.scalebook_live[name], static / name, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".complete"))
    wheels = static / "scalebook"
    shutil.rmtree(wheels, ignore_errors=True)
    wheels.mkdir()
    wheel = app.scalebook_live["wheel"]
    shutil.copyfile(wheel, wheels / wheel.name)


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _builder_inited)
    app.connect("html-page-context", _page_context)
    app.connect("build-finished", _build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
