"""The package's data files — chips, model presets, prices, published runs, stored `config.json`s — parsed from
disk when a module first asks for one (each caller caches what it builds from them)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

__all__ = ["load"]

_ROOT = Path(__file__).resolve().parent.parent  # the scalebook package folder


def load(relative: str) -> Any:
    """Return the parsed contents of the package file at `relative` (a path below `scalebook/`, TOML or JSON)."""
    if not relative.endswith((".toml", ".json")):
        raise ValueError(f"relative={relative!r} must name a .toml or .json file of the package")
    text = (_ROOT / relative).read_text(encoding="utf-8")
    return json.loads(text) if relative.endswith(".json") else tomllib.loads(text)
