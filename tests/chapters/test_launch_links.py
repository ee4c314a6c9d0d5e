"""One setting for the repository address: `repository.url` in _config.yml.

Every install cell (`%pip install ... git+<url>`), Colab and Kaggle badge, Binder link and the README's table
is generated from it by `make sync`, and the website's launch buttons by Jupyter Book from the same key. These
tests check the notebooks and the README as they are, and that pointing the setting at another repository
(the published one) and running `make sync` moves every link there, leaving none behind.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from scalebook.book import notebooks

ROOT = Path(__file__).resolve().parents[2]


def visible(root: Path, folder: str) -> list[Path]:
    """The files directly in `root/folder` that git does not ignore, tracked or not: no Jupyter checkpoint
    folder, no editor backup, nothing a reader's tools leave behind."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", folder],
                            cwd=root, capture_output=True, check=True).stdout
    return sorted(p for name in listed.decode().split("\0") if name and (p := root / name).parent == root / folder
                  and p.is_file())


CONFIG = notebooks.read_config(ROOT)
SOURCES = [p for folder in notebooks.FOLDERS for p in visible(ROOT, folder) if p.suffix == ".md"]
FILES = [*SOURCES, *(p.with_suffix(".ipynb") for p in SOURCES), ROOT / "README.md"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_and_install_cell_names_the_configured_repository(path: Path):
    assert notebooks.foreign_links(path.read_text(encoding="utf-8"), CONFIG) == []


@pytest.mark.parametrize("md", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_notebook_has_the_generated_install_cell(md: Path):
    assert notebooks.install_cell(CONFIG) in md.read_text(encoding="utf-8")


def test_the_checker_catches_a_hard_coded_repository():
    text = ('%pip install "scalebook[lab] @ git+https://github.com/someone/fork@main"\n'
            "[![Open in Colab](x.svg)](https://colab.research.google.com/github/someone/fork/blob/main/a.ipynb)\n"
            "[Kaggle](https://kaggle.com/kernels/welcome?src=https://github.com/someone/fork/blob/main/a.ipynb)\n"
            "[Binder](https://mybinder.org/v2/gh/someone/fork/main?urlpath=lab)\n")
    found = notebooks.foreign_links(text, CONFIG)
    assert [line.split(" names ")[0] for line in found] == ["install cell", "Colab link", "Kaggle link",
                                                            "Binder link"]


def test_the_website_launch_buttons_come_from_the_same_setting():
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    assert len(re.findall(r"https://github\.com/", config)) == 1  # written once, as repository.url
    assert re.search(r"^launch_buttons:\n(  .*\n)*  colab_url: https://colab\.research\.google\.com$", config, re.M)
    assert re.search(r"^  binderhub_url: https://mybinder\.org$", config, re.M)


@pytest.fixture
def moved(tmp_path: Path) -> Path:
    """A copy of the notebooks and the README (what git sees of them) with repository.url pointed elsewhere,
    then synced."""
    for folder in notebooks.FOLDERS:
        (tmp_path / folder).mkdir()
        for path in visible(ROOT, folder):
            shutil.copy(path, tmp_path / folder)
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    for drawing in notebooks.BADGE_FILES.values():  # the badges' drawings, which sync inlines into the twins
        (tmp_path / drawing).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / drawing, tmp_path / drawing)
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    (tmp_path / "_config.yml").write_text(config.replace(CONFIG.url, "https://github.com/example-org/book"))
    notebooks.sync(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_pointing_the_setting_elsewhere_moves_every_link(moved: Path):
    new = notebooks.read_config(moved)
    assert new.slug == "example-org/book"
    files = [*(p for folder in notebooks.FOLDERS for p in (moved / folder).iterdir()), moved / "README.md"]
    left = [str(p.relative_to(moved)) for p in files if CONFIG.slug in p.read_text(encoding="utf-8")]
    assert not left, f"still naming {CONFIG.slug}: {left}"
    for md in (moved / "chapters").glob("*.md"):
        text = md.read_text(encoding="utf-8")
        assert notebooks.install_cell(new) in text and new.colab(f"chapters/{md.stem}.ipynb") in text
    assert new.colab("chapters/01_rooflines.ipynb") in (moved / "README.md").read_text(encoding="utf-8")
