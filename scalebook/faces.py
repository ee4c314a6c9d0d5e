"""What every package face (an `__init__.py` a reader imports) is made of: one table and one deprecation table.

A face's table maps each public name to the module that defines it, relative to the face: `"Chip":
"hardware.chips"` is the class `Chip` of `scalebook.hardware.chips`; a name mapped to itself (`"roofline":
"roofline"`), or to a path ending in it (`"bench": "lab.bench"`), is that module. The face's `__all__` is the
table's keys, its `if TYPE_CHECKING:` imports say the
same for type checkers (`tests/test_house.py` checks the three agree), and `face` builds the `__getattr__` that
loads a name on first use, so importing a face loads nothing.

Old names live in a dated deprecation table in the style of JAX's `_deprecations`: name → (message, target,
removal release), the target written `"module"` for a module or `"module:attr"` for an object in it. Using an
old name warns (`DeprecationWarning`) and then works, until the release named. `served` and `deprecations` give a
face's two tables to whoever checks them (the tests), so no one reads a face's private names.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["face", "resolve", "served", "deprecations", "Deprecations"]

Deprecations = dict[str, tuple[str, str, str]]
_FACES: dict[str, tuple[dict[str, str], Deprecations]] = {}  # package → (table, deprecation table), set by `face`


def resolve(package: str, target: str) -> Any:
    """Return what `target` names below the package `package`: a module (`"labs.ch07_decoder"`) or an object
    in one (`"roofline:roofline"`)."""
    module, _, attr = target.partition(":")
    loaded = importlib.import_module(f"{package}.{module}")
    return getattr(loaded, attr) if attr else loaded


def served(package: str) -> dict[str, str]:
    """Return the table of the face `package` (public name → the module defining it, relative to the face)."""
    importlib.import_module(package)
    if package not in _FACES:
        raise ValueError(f"package={package!r} is not a face (its __init__.py does not call faces.face)")
    return dict(_FACES[package][0])


def deprecations(package: str) -> Deprecations:
    """Return the dated deprecation table of the face `package` (old name → message, target, removal release)."""
    served(package)
    return dict(_FACES[package][1])


def _names_module(name: str, target: str) -> bool:
    """Whether a table's `target` for `name` is the module itself: `name` (a submodule), or a path ending in it
    (`"bench": "lab.bench"`, a module of a wing served under its own name)."""
    return target == name or target.endswith(f".{name}")


def face(package: str, table: dict[str, str], deprecated: Deprecations) -> tuple[Callable, Callable]:
    """Return `(__getattr__, __dir__)` for the face `package`, serving `table` lazily and `deprecated` with a warning.

    A name of `table` is loaded on first use and kept in the face's namespace (later look-ups skip this function);
    an old name warns each time it is used. Anything else raises `AttributeError` naming the face.
    """
    clash = sorted(set(table) & set(deprecated))
    if clash:
        raise ValueError(f"names {clash} of {package} are both current (table) and deprecated")
    _FACES[package] = (table, deprecated)

    def __getattr__(name: str) -> Any:
        if name in table:
            target = table[name]
            value = resolve(package, target if _names_module(name, target) else f"{target}:{name}")
            vars(sys.modules[package])[name] = value
            return value
        if name in deprecated:
            message, target, removal = deprecated[name]
            warnings.warn(f"{package}.{name} is deprecated and goes in release {removal}: {message}",
                          DeprecationWarning, stacklevel=2)
            return resolve(package, target)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
