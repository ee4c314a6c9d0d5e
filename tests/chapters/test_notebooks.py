"""The notebook pipeline: twins, exercises, install cells and the README table stay in sync with the sources."""

import json
import shutil
from pathlib import Path

import pytest

from scalebook.book import notebooks

ROOT = Path(__file__).resolve().parents[2]

SOLUTION = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# Problem set 9 — Demo

```{code-cell} ipython3
:tags: [remove-cell]

# scalebook install cell: generated from _config.yml by `make sync`; edit that file, not this cell.
```

```{code-cell} ipython3
# BEGIN SOLUTION
answer = 42
# END SOLUTION
print(answer)
```
"""


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """A tiny book: config, the badges' drawings, README with markers, one chapter and one solution notebook."""
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    for drawing in notebooks.BADGE_FILES.values():
        (tmp_path / drawing).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / drawing, tmp_path / drawing)
    (tmp_path / "README.md").write_text("# demo\n<!-- chapters:start -->\n<!-- chapters:end -->\n")
    for folder in notebooks.FOLDERS:
        (tmp_path / folder).mkdir()
    (tmp_path / "chapters" / "09_demo.md").write_text(SOLUTION.replace("Problem set 9", "9. A chapter"))
    (tmp_path / "solutions" / "09_demo.md").write_text(SOLUTION)
    notebooks.sync(tmp_path)
    return tmp_path


def test_sync_then_check_is_clean(book):
    assert notebooks.check(book) == []
    assert notebooks.sync(book) == []  # idempotent: nothing changes the second time


def test_install_cell_is_generated_from_the_config(book):
    text = (book / "chapters" / "09_demo.md").read_text()
    config = notebooks.read_config(book)
    assert f"git+{config.url}@{config.branch}" in text
    assert "%pip install" in text


def test_exercise_is_derived_from_the_solution(book):
    exercise = (book / "exercises" / "09_demo.md").read_text()
    assert "answer = ...  # YOUR CODE HERE" in exercise and "answer = 42" not in exercise
    assert "Generated from solutions/09_demo.md" in exercise
    assert (book / "exercises" / "09_demo.ipynb").exists()


def test_readme_table_has_colab_and_kaggle_badges_from_the_config(book):
    readme = (book / "README.md").read_text()
    slug = notebooks.read_config(book).slug
    assert f"colab.research.google.com/github/{slug}/blob/main/chapters/09_demo.ipynb" in readme
    assert "kaggle.com/kernels/welcome?src=" in readme
    assert "[exercises/09_demo](exercises/09_demo.ipynb)" in readme


def test_check_catches_a_stale_twin(book):
    md = book / "chapters" / "09_demo.md"
    md.write_text(md.read_text() + "\nA new paragraph.\n")
    assert notebooks.check(book) == ["chapters/09_demo.ipynb: is stale — run `make sync`"]


def test_check_catches_outputs_in_a_twin(book):
    twin = book / "chapters" / "09_demo.ipynb"
    nb = json.loads(twin.read_text())
    nb["cells"][-1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["42\n"]}]
    twin.write_text(json.dumps(nb))
    assert "has outputs" in notebooks.check(book)[0]


def test_check_catches_a_hand_edited_exercise(book):
    exercise = book / "exercises" / "09_demo.md"
    exercise.write_text(exercise.read_text().replace("YOUR CODE HERE", "answer = 42"))
    assert any(line.startswith("exercises/09_demo.md: is stale") for line in notebooks.check(book))


def test_config_url_must_be_github(tmp_path):
    config = notebooks.BookConfig("https://example.org/x", "main")
    with pytest.raises(ValueError, match="repository.url"):
        _ = config.slug



def test_chapters_and_exercises_carry_colab_and_kaggle_badges_under_the_title(book):
    config = notebooks.read_config(book)
    chapter = (book / "chapters" / "09_demo.md").read_text()
    assert notebooks.badges(config, "chapters/09_demo.ipynb") in chapter
    assert chapter.index("[![Open in Colab]") > chapter.index("# 9. A chapter")
    exercise = (book / "exercises" / "09_demo.md").read_text()
    assert config.kaggle("exercises/09_demo.ipynb") in exercise
    assert "Open in Colab" not in (book / "solutions" / "09_demo.md").read_text()


def test_check_catches_a_hard_coded_repository_link(book):
    md = book / "chapters" / "09_demo.md"
    md.write_text(md.read_text() + "\n[Binder](https://mybinder.org/v2/gh/someone/fork/main)\n")
    notebooks.sync(book)  # a twin in sync does not make the link right
    slug = notebooks.read_config(book).slug
    assert sorted(notebooks.check(book)) == [
        f"chapters/09_demo.{ext}: Binder link names someone/fork, not {slug} — links are generated from "
        "repository.url in _config.yml" for ext in ("ipynb", "md")]
