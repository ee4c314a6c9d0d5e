"""ARCHITECTURE.md describes the house as built: every module it names exists, and every module is named."""

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
