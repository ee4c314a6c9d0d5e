"""House rules for where a number lives (issue #28): the ground floor computes, `plots/` draws, `widgets/` explores.

Three rules, read from the source with `ast` (nothing is imported):

1. Only `widgets/` imports `plots/`. Every `import` or `from ... import` in the package that names `scalebook.plots`
   or one of its modules (absolute or relative) sits in a module of `scalebook/plots/` or `scalebook/widgets/`, or
   under `if TYPE_CHECKING:` in a face (an `__init__.py`, where it only tells type checkers what the face serves).
2. `plots/` defines no computing function of its own. Each public top-level name a `plots/` module defines (a
   `def` or `class` whose name does not start with `_`) is drawing: a function whose return annotation names
   `Figure`, a primitive whose first parameter is `ax` (it draws on an axes a figure passes in), a function that
   returns `str` (the text of a label), or one of `DRAWING`, the canvas-and-style helpers below. Anything else
   computes, and belongs on the ground floor (the last twelve such names moved there under issue #28).
3. Only a chapter's program (`lab/chNN_*.py`) imports a chapter's program: a chapter's lab stands on the package,
   never the other way round (a face's `if TYPE_CHECKING:` imports excepted). `multihost` was the last to break it
   (`process_layout` moved there).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "scalebook"

DRAWING = {
    "base.figure": "a closed figure in the house style",
    "base.house_style": "matplotlib's defaults set to the house style",
    "diagram.canvas": "an empty schematic figure", "diagram.panels": "a row of schematic panels",
    "collective_steps.to_rgb": "a colour name as an RGB triple",
}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _dotted(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The absolute names an import statement brings in, `from . import x` counted as `package.x`."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    package = _dotted(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - node.level + 1] if node.level else []
    module = ".".join(base + ([node.module] if node.module else []))
    return [module] + [f"{module}.{a.name}" for a in node.names]


def _type_checking_lines(tree: ast.Module) -> set[int]:
    return {n.lineno for stmt in tree.body if isinstance(stmt, ast.If) and ast.unparse(stmt.test) == "TYPE_CHECKING"
            for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))}


def importers(target: str, allowed: tuple[str, ...]) -> list[str]:
    """Every 'module:line' outside the subpackages `allowed` that imports the subpackage `target` (a face's
    `if TYPE_CHECKING:` imports excepted)."""
    found, wanted = [], f"scalebook.{target}"
    for path in _modules():
        name = _dotted(path)
        if name.startswith(tuple(f"scalebook.{a}" for a in allowed)):
            continue
        tree = ast.parse(path.read_text())
        typing_only = _type_checking_lines(tree) if path.name == "__init__.py" else set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno not in typing_only and any(
                    n == wanted or n.startswith(f"{wanted}.") for n in _imported(path, node)):
                found.append(f"{name}:{node.lineno}")
    return found


def plots_importers() -> list[str]:
    """Every 'module:line' outside plots/ and widgets/ that imports plots/ (rule 1)."""
    return importers("plots", ("plots", "widgets"))


def _draws(node: ast.FunctionDef | ast.ClassDef, key: str) -> bool:
    if isinstance(node, ast.ClassDef):
        return False
    returns = ast.unparse(node.returns) if node.returns else ""
    first = node.args.args[0].arg if node.args.args else ""
    return "Figure" in returns or first == "ax" or returns == "str" or key in DRAWING


def computing_in_plots() -> set[str]:
    """Every public 'module.name' a plots/ module defines that is not drawing (rule 2)."""
    found = set()
    for path in sorted((PACKAGE / "plots").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                key = f"{path.stem}.{node.name}"
                if not _draws(node, key):
                    found.add(key)
    return found


def test_only_widgets_import_plots():
    assert plots_importers() == [], "only widgets/ (and plots/ itself) may import plots/: move the number to the " \
                                    "ground floor, or the caller to widgets/"


def program_importers() -> list[str]:
    """Every 'module:line' outside the chapters' programs that imports one of them (rule 3)."""
    programs = sorted(p.stem for p in (PACKAGE / "lab").glob("ch[0-9]*.py"))
    return [found for name in programs for found in importers(f"lab.{name}", ("lab.ch",))]


def test_only_a_chapters_program_imports_a_chapters_program():
    """A chapter's lab stands on the package; nothing in the package stands on a chapter's lab (rule 3)."""
    assert program_importers() == [], "move what the module needs out of the chapter's lab, to its own floor"


def test_plots_define_no_computing_function():
    assert computing_in_plots() == set(), "plots/ draws what a ground function returns: compute it there"


@pytest.mark.parametrize("source, expected", [
    ("from ..plots.base import figure\n", True), ("from ..plots import profile\n", True),
    ("import scalebook.plots.roofline as m\n", True), ("from ..units import checks\n", False),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import plots\n", False),
])
def test_the_import_rule_sees_relative_and_absolute_imports(tmp_path, monkeypatch, source, expected):
    """The rule can fail: a ground module (a face for the TYPE_CHECKING case) that imports plots/ is reported."""
    package = tmp_path / "scalebook"
    (package / "training").mkdir(parents=True)
    name = "__init__.py" if "TYPE_CHECKING" in source else "training/book.py"
    (package / name).write_text(source)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert bool(plots_importers()) is expected


def test_the_drawing_rule_flags_a_calculator(tmp_path, monkeypatch):
    """A plots/ module that defines a public function returning numbers is reported; figures and ax helpers not."""
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "x.py").write_text(
        "def crossover(B: float) -> float:\n    return B\n\ndef draw() -> Figure:\n    pass\n\n"
        "def label(ax, text: str) -> None:\n    pass\n\ndef _helper() -> float:\n    return 1.0\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    assert computing_in_plots() == {"x.crossover"}


def test_the_labs_rule_flags_a_module_standing_on_a_lab(tmp_path, monkeypatch):
    """The import that rule 3 was written for (multihost reaching into chapter 10's lab) is reported."""
    package = tmp_path / "scalebook"
    (package / "lab").mkdir(parents=True)
    (package / "lab" / "multihost.py").write_text("from .ch10_programs import process_layout\n")
    (package / "lab" / "ch10_programs.py").write_text("from .multihost import run\nfrom . import ch10_moe\n")
    (package / "lab" / "ch10_moe.py").write_text("")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert program_importers() == ["scalebook.lab.multihost:1"]


def test_the_argument_kinds_know_no_model():
    """`kinds` is a base of the house (every floor's `@checks` reads it): it stands on `units` alone, and a model's
    kind lives with the models (`models.a_model`)."""
    path = PACKAGE / "kinds.py"
    tree = ast.parse(path.read_text())
    imported = {n for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for n in _imported(path, node) if n.startswith("scalebook")}
    assert imported and all(n.startswith("scalebook.units") for n in imported), imported


def test_the_lab_knows_no_student():
    """The course stands on the lab, never the lab on the course: a student enrols through `sb.setup`
    (`course.session.setup`), which then starts the lab (`lab.runtime.setup`)."""
    assert [f for f in importers("course", ("course",)) if f.startswith("scalebook.lab")] == []
