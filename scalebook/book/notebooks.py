"""The notebook files of the book: install cells, exercises, README table and .ipynb twins, kept in sync.

The MyST-Markdown files in `chapters/`, `solutions/` and `exercises/` are the source; each has an
.ipynb twin without outputs (for Colab, Kaggle and nbval). `exercises/` is derived from `solutions/`.
The repository URL lives only in `_config.yml`; install cells and README badges are generated from it.

    python -m scalebook.notebooks sync    # regenerate everything derived (what `make sync` runs)
    python -m scalebook.notebooks check   # fail when anything derived is stale (what `make test` runs)
    python -m scalebook.notebooks strip   # stdin to stdout: a saved twin as tracked (git's filter)
    python -m scalebook.notebooks hooks   # set up the filter and the save hook (what making the venv runs)
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..course.handouts import strip_solutions

__all__ = ["BookConfig", "read_config", "install_cell", "set_install_cell", "badges", "inline_badges", "set_badges",
           "foreign_links", "derive_exercise", "twin_text", "strip_outputs", "after_save", "install_hooks",
           "readme_table", "expected_files", "sync", "check", "main", "SERVER_CONFIG", "FILTER", "HOOK"]

FOLDERS = ("chapters", "solutions", "exercises")
INSTALL_MARK = "# scalebook install cell: generated from _config.yml by `make sync`; edit that file, not this cell."
README_START, README_END = "<!-- chapters:start -->", "<!-- chapters:end -->"


@dataclass(frozen=True)
class BookConfig:
    """What the generated parts need from `_config.yml`: the repository's URL and branch."""

    url: str
    branch: str

    @property
    def slug(self) -> str:
        """'owner/name' of a GitHub URL."""
        match = re.match(r"https://github\.com/([^/]+/[^/]+?)(?:\.git)?/?$", self.url)
        if not match:
            raise ValueError(f"repository.url={self.url!r} in _config.yml must be a https://github.com/owner/name URL")
        return match.group(1)

    def colab(self, path: str) -> str:
        return f"https://colab.research.google.com/github/{self.slug}/blob/{self.branch}/{path}"

    def kaggle(self, path: str) -> str:
        return f"https://kaggle.com/kernels/welcome?src={self.url}/blob/{self.branch}/{path}"


def read_config(root: Path) -> BookConfig:
    """Return the repository URL and branch written in `root/_config.yml`."""
    import yaml

    data = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    repo = data.get("repository") or {}
    if "url" not in repo:
        raise ValueError(f"{root / '_config.yml'} has no repository.url")
    return BookConfig(repo["url"].rstrip("/"), repo.get("branch", "main"))


def install_cell(config: BookConfig) -> str:
    """Return the source of the install cell: installs scalebook where it is missing (Colab, Kaggle)."""
    return (
        f"{INSTALL_MARK}\n"
        "import importlib.util\n\n"
        'if importlib.util.find_spec("scalebook") is None:  # on Colab or Kaggle\n'
        f'    %pip install --quiet "scalebook[lab] @ git+{config.url}@{config.branch}"'
    )


_CELL = re.compile(r"(```\{code-cell\}[^\n]*\n(?::[^\n]*\n)*\n?)(.*?)(\n```)", re.S)


def set_install_cell(text: str, config: BookConfig) -> str:
    """Return a MyST notebook's text with its install cell (the one starting with INSTALL_MARK) regenerated."""

    def replace(match: re.Match) -> str:
        if not match.group(2).startswith(INSTALL_MARK):
            return match.group(0)
        return match.group(1) + install_cell(config) + match.group(3)

    return _CELL.sub(replace, text)


BADGE_COLAB = "https://colab.research.google.com/assets/colab-badge.svg"
BADGE_KAGGLE = "https://kaggle.com/static/images/open-in-kaggle.svg"
# Our own drawings of the two badges (in the site's static folder, relative to the repository's root): the site
# serves them in place of the remote images, and the .ipynb twins carry them inline (`inline_badges`).
BADGE_FILES = {BADGE_COLAB: "_ext/static/badges/colab.svg", BADGE_KAGGLE: "_ext/static/badges/kaggle.svg"}


def badges(config: BookConfig, path: str) -> str:
    """Return the Markdown line of 'Open in Colab' and 'Open in Kaggle' badges for the notebook at `path`."""
    return (f"[![Open in Colab]({BADGE_COLAB})]({config.colab(path)}) "
            f"[![Open in Kaggle]({BADGE_KAGGLE})]({config.kaggle(path)})")


def inline_badges(root: Path) -> dict[str, str]:
    """Each badge's remote image URL mapped to a `data:` URI of our drawing of it under `root`.

    The twins show the badges from these: JupyterLab opened offline draws them (a remote image would be a broken
    icon), and so do Colab, Kaggle and GitHub, which render `data:` images in Markdown. JupyterLab's sanitizer
    checks the scheme of `href` and `cite` only, not of an image's `src`."""
    import base64

    return {url: "data:image/svg+xml;base64," + base64.b64encode((root / name).read_bytes()).decode("ascii")
            for url, name in BADGE_FILES.items()}


def set_badges(text: str, config: BookConfig, path: str) -> str:
    """Return a MyST notebook's text with its badge line (right under the `# ` title) regenerated."""
    lines = text.split("\n")
    title = next((i for i, line in enumerate(lines) if line.startswith("# ")), None)
    if title is None:
        return text
    line = badges(config, path)
    rest = lines[title + 1:]
    while rest and not rest[0].strip():
        rest = rest[1:]
    if rest and rest[0].startswith("[![Open in Colab]"):
        rest = rest[1:]
        while rest and not rest[0].strip():
            rest = rest[1:]
    return "\n".join([*lines[: title + 1], "", line, "", *rest])


# Every way a notebook or the README can name the repository: install cells, Colab, Kaggle and Binder links.
_REPO_LINKS = {
    "install cell": re.compile(r"git\+(https?://[^\s\"'@]+?)(?:\.git)?(?=[@\s\"'])"),
    "Colab link": re.compile(r"colab\.research\.google\.com/github/([^/\s)]+/[^/\s)]+)"),
    "Kaggle link": re.compile(r"kaggle\.com/kernels/welcome\?src=(https?://[^\s)]+?)/blob/"),
    "Binder link": re.compile(r"mybinder\.org/v2/gh/([^/\s)]+/[^/\s)]+)"),
}


def foreign_links(text: str, config: BookConfig) -> list[str]:
    """Return every install cell, Colab, Kaggle or Binder link in `text` that names another repository than
    `config` (the one setting, repository.url in _config.yml)."""
    wanted = {"install cell": config.url, "Colab link": config.slug, "Kaggle link": config.url,
              "Binder link": config.slug}
    return [f"{kind} names {found}, not {wanted[kind]}" for kind, pattern in _REPO_LINKS.items()
            for found in pattern.findall(text) if found.rstrip("/") != wanted[kind]]


def derive_exercise(solution_text: str, solution_path: str) -> str:
    """Return the student version of a solution notebook: solutions stripped, a do-not-edit banner added."""
    stripped = strip_solutions(solution_text)
    banner = f"<!-- Generated from {solution_path} by `make exercises`: edit that file, not this one. -->\n"
    if stripped.startswith("---\n"):
        end = stripped.index("\n---\n", 4) + 5
        return stripped[:end] + "\n" + banner + stripped[end:]
    return banner + stripped


# What JupyterLab folds of a code cell for each tag by which the site folds or drops part of it. JupyterLab reads
# `metadata.jupyter.source_hidden` / `outputs_hidden` (nbformat's documented cell metadata) and shows a folded part
# as a bar to click open, so a check cell or an explorer whose code the site hides gives nothing away there either.
# `remove-cell` folds nothing: it marks the install cell, which the site drops and a Colab or JupyterLab reader runs.
_FOLDS = {"hide-input": ("source_hidden",), "remove-input": ("source_hidden",), "hide-output": ("outputs_hidden",),
          "remove-output": ("outputs_hidden",), "hide-cell": ("source_hidden", "outputs_hidden")}


def _fold_as_tagged(metadata: dict) -> None:
    """Set a code cell's `jupyter` metadata to the folds its tags ask for (`_FOLDS`), dropping any other state: a
    reader who opens a fold in JupyterLab and saves leaves the tracked twin unchanged."""
    folds = {part: True for tag in metadata.get("tags", []) for part in _FOLDS.get(tag, ())}
    metadata.pop("jupyter", None)
    if folds:
        metadata["jupyter"] = dict(sorted(folds.items()))


def twin_text(md_path: Path, images: dict[str, str] | None = None) -> str:
    """Return what the .ipynb twin of a MyST notebook must contain: the same cells, no outputs, and no pairing;
    in its Markdown cells each image URL that is a key of `images` is replaced by its value (`inline_badges`).

    The twin is the reader's copy. Without `jupytext.formats` in its metadata (and no global `formats` in
    jupytext.toml), JupyterLab saves a twin on its own: running and saving it never rewrites the .md source.
    The source keeps its pairing, so a contributor who opens the .md as a notebook still updates the twin.
    """
    import jupytext

    nb = jupytext.read(md_path)
    nb.metadata.get("jupytext", {}).pop("formats", None)
    for index, cell in enumerate(nb.cells):
        cell.id = f"{md_path.stem[:40]}-{index:03d}"  # stable ids keep the twin byte-for-byte reproducible
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            _fold_as_tagged(cell.metadata)
        elif cell.cell_type == "markdown":
            for url, inline in (images or {}).items():
                cell.source = cell.source.replace(f"]({url})", f"]({inline})")
    return jupytext.writes(nb, fmt="ipynb")


def strip_outputs(text: str) -> str:
    """Return a saved .ipynb twin as it is tracked: no outputs or execution counts, and only the metadata the
    twins carry (jupytext.toml's filters: the notebook's accelerator, colab, kernelspec and jupytext; cell tags, and
    the folds the tags ask for).

    git runs it as the twins' clean filter (.gitattributes; `make lab` configures it), so a reader who runs and
    saves a chapter still has a clean `git status`, and `git pull` works. For a twin as `twin_text` wrote it, the
    result is the same text, byte for byte.
    """
    import nbformat

    nb = nbformat.reads(text, as_version=4)
    nb.metadata = {k: v for k, v in nb.metadata.items() if k in ("accelerator", "colab", "kernelspec", "jupytext")}
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k == "tags"}
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            _fold_as_tagged(cell.metadata)
    return nbformat.writes(nb)


def after_save(model: dict | None = None, os_path: str = "", contents_manager: object = None, **kwargs: object) -> None:
    """Jupyter's post-save hook (`install_hooks` sets it): when a saved notebook differs from git's copy only by what
    the strip filter removes (a run's outputs), record that in git's index, so `git status` stays clean.

    git compares a file's size before it asks the filter, so a twin saved with outputs would show as modified
    until `git add`. The hook runs that `git add` only when `git diff` (through the filter) is empty: a reader's
    own edit of a cell stays a visible modification. It touches only tracked twins (.gitattributes names the filter
    for them); outside a git checkout, or for any other file, it does nothing.
    """
    path = Path(os_path)

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args, "--", path.name], cwd=path.parent, capture_output=True, text=True)

    if not path.is_file() or not git("check-attr", "filter").stdout.strip().endswith(": scalebook-notebook"):
        return
    if git("ls-files", "--error-unmatch").returncode == 0 and git("diff", "--quiet").returncode == 0:
        git("add")


# Under an environment's prefix, the server config every Jupyter server it starts reads, however it is started
# (Jupyter's config path: {sys.prefix}/etc/jupyter, `jupyter --paths`).
SERVER_CONFIG = Path("etc", "jupyter", "jupyter_server_config.json")
FILTER = "filter.scalebook-notebook.clean"  # .gitattributes names the filter of the twins
HOOK = "scalebook.book.notebooks.after_save"  # by name: this module may run as __main__


def install_hooks(root: Path, prefix: Path = Path(sys.prefix)) -> list[str]:
    """Make a reader's saved run leave `git status` clean however JupyterLab is started: set git's strip filter
    in the checkout at `root` (this interpreter runs `strip`; nothing outside a git checkout) and `after_save`
    as the post-save hook of every Jupyter server the environment at `prefix` starts (`SERVER_CONFIG`, its other
    settings kept). Return one line per thing set."""
    done = []
    inside = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=root, capture_output=True).returncode == 0
    if inside:
        subprocess.run(["git", "config", FILTER, f"{sys.executable} -m scalebook.book.notebooks strip"], cwd=root,
                       check=True)
        done.append(f"git {FILTER} in {root}")
    path = prefix / SERVER_CONFIG
    config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    config.setdefault("ContentsManager", {})["post_save_hook"] = HOOK
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return [*done, f"Jupyter's post-save hook in {path}"]


def _title(md_path: Path) -> str:
    match = re.search(r"^# (.+)$", md_path.read_text(encoding="utf-8"), re.M)
    return match.group(1).strip() if match else md_path.stem


def readme_table(root: Path, config: BookConfig) -> str:
    """Return the README's chapter table: title, problem set, and Colab/Kaggle badges for each chapter."""
    lines = ["| # | Chapter | Problem set | Run it |", "| --- | --- | --- | --- |"]
    for md in sorted((root / "chapters").glob("*.md")):
        number = md.stem.split("_")[0]
        nb = f"chapters/{md.stem}.ipynb"
        sets = sorted((root / "solutions").glob(f"{number}_*.md"))  # each has a derived exercise twin
        problem = f"[exercises/{sets[0].stem}](exercises/{sets[0].stem}.ipynb)" if sets else "—"
        lines.append(f"| {number} | [{_title(md)}]({nb}) | {problem} | {badges(config, nb)} |")
    return "\n".join(lines)


def _with_readme_table(readme: str, table: str) -> str:
    if README_START not in readme or README_END not in readme:
        raise ValueError(f"README.md must contain the markers {README_START} and {README_END}")
    head, rest = readme.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    return f"{head}{README_START}\n{table}\n{README_END}{tail}"


def expected_files(root: Path) -> dict[Path, str]:
    """Return every derived file with the text it must have, given the .md sources under `root`."""
    config = read_config(root)
    sources: dict[Path, str] = {}
    for folder in ("chapters", "solutions"):
        for md in sorted((root / folder).glob("*.md")):
            text = set_install_cell(md.read_text(encoding="utf-8"), config)
            if folder == "chapters":
                text = set_badges(text, config, f"chapters/{md.stem}.ipynb")
            sources[md] = text
    for md in [m for m in sources if m.parent.name == "solutions"]:
        exercise = root / "exercises" / md.name
        text = derive_exercise(sources[md], f"solutions/{md.name}")
        sources[exercise] = set_badges(text, config, f"exercises/{md.stem}.ipynb")
    expected = dict(sources)
    readme = root / "README.md"
    expected[readme] = _with_readme_table(readme.read_text(encoding="utf-8"), readme_table(root, config))
    return expected


def _twins(root: Path, expected: dict[Path, str]) -> dict[Path, str]:
    """Return the .ipynb twin text of every notebook source, rendered from its expected Markdown."""
    import tempfile

    twins, images = {}, inline_badges(root)
    with tempfile.TemporaryDirectory() as tmp:
        for md, text in expected.items():
            if md.suffix == ".md" and md.parent.name in FOLDERS:
                scratch = Path(tmp) / md.name
                scratch.write_text(text, encoding="utf-8")
                twins[md.with_suffix(".ipynb")] = twin_text(scratch, images)
    return twins


def _stale(root: Path) -> tuple[dict[Path, str], dict[Path, str]]:
    """Return (every derived file with its expected text, the subset whose file is missing or differs)."""
    expected = expected_files(root)
    expected.update(_twins(root, expected))
    stale = {path: text for path, text in expected.items()
             if not path.exists() or path.read_text(encoding="utf-8") != text}
    return expected, stale


def sync(root: Path) -> list[Path]:
    """Regenerate every derived file under `root`; return the ones that changed."""
    _, stale = _stale(root)
    for path, text in stale.items():
        path.write_text(text, encoding="utf-8")
    return list(stale)


def check(root: Path) -> list[str]:
    """Return one line per stale or wrong derived file under `root` (empty when all is in sync)."""
    import json

    expected, stale = _stale(root)
    problems = []
    for path in stale:
        rel = path.relative_to(root)
        if not path.exists():
            problems.append(f"{rel}: missing — run `make sync`")
        else:
            has_outputs = path.suffix == ".ipynb" and any(
                c.get("outputs") for c in json.loads(path.read_text(encoding="utf-8")).get("cells", []))
            why = ("has outputs (from a run in Jupyter? twins are committed without them)" if has_outputs
                   else "is stale")
            problems.append(f"{rel}: {why} — run `make sync`")
    for folder in FOLDERS:
        for nb in sorted((root / folder).glob("*.ipynb")):
            if not nb.with_suffix(".md").exists() and nb not in expected:
                problems.append(f"{nb.relative_to(root)}: has no .md source")
    config = read_config(root)
    for path in sorted(p for p in expected if p.exists()):
        problems += [f"{path.relative_to(root)}: {line} — links are generated from repository.url in _config.yml"
                     for line in foreign_links(path.read_text(encoding="utf-8"), config)]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scalebook.notebooks", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["sync", "check", "strip", "hooks"])
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository root (default: here)")
    args = parser.parse_args(argv)
    if args.command == "strip":
        sys.stdout.buffer.write(strip_outputs(sys.stdin.buffer.read().decode("utf-8")).encode("utf-8"))
        return 0
    if args.command == "hooks":
        print("\n".join(install_hooks(args.root)))
        return 0
    if args.command == "sync":
        for path in sync(args.root):
            print(f"updated {path.relative_to(args.root)}")
        return 0
    problems = check(args.root)
    for line in problems:
        print(line, file=sys.stderr)
    if not problems:
        print("notebooks, exercises and README are in sync")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
