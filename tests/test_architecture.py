"""ARCHITECTURE.md describes the house as built: every module it names exists, every module is named, and each is
listed under its own floor (a wing's module in its wing's table, never on the ground floor's)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "scalebook"
TEXT = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
NAMED = {name.removeprefix("scalebook/") for name in re.findall(r"`([\w/]+\.py)`", TEXT)
         if not name.startswith(("tests/", "benchmarks/", "_ext/"))}


def test_every_module_it_names_exists():
    assert NAMED, "ARCHITECTURE.md names no module"
    missing = sorted(name for name in NAMED if not (PACKAGE / name).is_file())
    assert not missing, f"ARCHITECTURE.md names modules that do not exist: {missing}"


def test_every_module_of_the_package_is_named():
    modules = {str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")}
    unnamed = sorted(modules - NAMED)
    assert not unnamed, f"ARCHITECTURE.md does not name {unnamed}: add each to its floor's table"


def test_every_test_path_it_names_exists():
    paths = re.findall(r"`(tests/[\w/.]+)`", TEXT)
    assert paths and not [p for p in paths if not (ROOT / p).exists()], paths


def test_the_readme_links_it():
    assert "(ARCHITECTURE.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


# --- the floor a module is listed under -----------------------------------------------------------------------------

GROUND = ""


def floor_tables(text: str) -> dict[tuple[str, ...], set[str]]:
    """{a floor's folders: the modules its table names}, read from the Floors section: each bold heading a table
    follows is a floor, the ground floor's (folders ("",)) or a wing's, whose heading names its folders (`lab/`;
    `plots/` and `widgets/`); a heading that is neither ("The wings.") starts no table."""
    section = text.split("\n## Floors\n", 1)[1].split("\n## ", 1)[0]
    tables: dict[tuple[str, ...], set[str]] = {}
    floor: tuple[str, ...] | None = None
    for line in section.splitlines():
        if line.startswith("**"):
            heading = line.split("**")[1]
            folders = tuple(re.findall(r"`(\w+)/`", heading))
            floor = folders or ((GROUND,) if heading.startswith("Ground floor") else None)
        elif line.startswith("| `") and floor is not None:
            tables.setdefault(floor, set()).update(re.findall(r"`([\w/]+\.py)`", line.split("|")[1]))
    return tables


def misplaced(text: str, modules: set[str]) -> list[str]:
    """What `text` lists on the wrong floor: a wing's module in the ground floor's table or in another wing's, a
    ground module in a wing's, or a wing's module in none of its wing's tables (the ground floor's faces are named
    in the Faces section instead)."""
    tables = floor_tables(text)
    wings = {folder for floor in tables for folder in floor if folder != GROUND}

    def floor_of(module: str) -> str:
        top = module.split("/")[0] if "/" in module else GROUND
        return top if top in wings else GROUND

    found = [f"{m} is listed under {'/, '.join(floor) + '/' if floor != (GROUND,) else 'the ground floor'} but lives "
             f"{'in ' + floor_of(m) + '/' if floor_of(m) else 'on the ground floor'}"
             for floor, named in tables.items() for m in sorted(named) if floor_of(m) not in floor]
    found += [f"{m} is in no table of its wing, {floor_of(m)}/" for m in sorted(modules) if floor_of(m) != GROUND
              and not any(m in named for floor, named in tables.items() if floor_of(m) in floor)]
    return found


WRONG_FLOORS = """
## Floors

**Ground floor: the analytic model.**

| module | holds |
| --- | --- |
| `units.py`, `lab/bench.py` | constants; micro-benchmarks |

**The wings.** JAX, lazily.

**`lab/`: the live lab.**

| module | holds |
| --- | --- |
| `lab/__init__.py`, `roofline.py` | the face; rooflines |

**`plots/` and `widgets/`: figures and explorers.**

| module | holds |
| --- | --- |
| `widgets/core.py` | explorers |

## Faces
"""


def test_the_floor_rule_catches_a_module_listed_on_the_wrong_floor():
    modules = {"units.py", "roofline.py", "lab/__init__.py", "lab/bench.py", "lab/xla.py", "widgets/core.py",
               "plots/base.py"}
    assert misplaced(WRONG_FLOORS, modules) == [
        "lab/bench.py is listed under the ground floor but lives in lab/",
        "roofline.py is listed under lab/ but lives on the ground floor",
        "lab/bench.py is in no table of its wing, lab/", "lab/xla.py is in no table of its wing, lab/",
        "plots/base.py is in no table of its wing, plots/"]


def test_every_module_is_listed_under_its_floor():
    modules = {str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")}
    assert not misplaced(TEXT, modules), misplaced(TEXT, modules)
