"""Argument kinds beyond `units.KINDS`, for `@checks`: a pair (low, high), a list of allowed names, a dict of one
kind, an object read through named attributes, an object of a class or the name of one (a model: `TransformerConfig` or
a preset's name).

Each is a callable `(name, value) -> value` that raises `ValueError` naming the argument, the value given and
what is allowed; `units.checks` accepts it wherever it accepts a kind's name. The figures, the explorers and the
labs share them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .units import check_choice, check_kind, check_positive

__all__ = ["positive_range", "names_in", "mapping_of", "mapping_with", "has", "instance_or_name"]


def positive_range(name: str, pair: tuple[float, float]) -> tuple[float, float]:
    """Return `pair` if it is an increasing pair of positive finite numbers, else raise `ValueError` naming `name`
    (also a kind for `units.checks`)."""
    if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
        raise ValueError(f"{name}={pair!r} must be a pair (low, high) of positive numbers")
    lo, hi = (check_positive(f"{name}[{i}]", v) for i, v in enumerate(pair))
    if not lo < hi:
        raise ValueError(f"{name} must be an increasing pair of positive numbers, got {pair!r}")
    return pair[0], pair[1]


def names_in(allowed: Iterable[str] | Callable[[], Iterable[str]]) -> Callable[[str, object], object]:
    """A kind for a list or tuple of names, each one of `allowed` (or of what `allowed()` returns when called);
    the error names `name[i]` and the closest allowed names."""
    def check(name: str, value: object) -> object:
        check_kind(name, value, "names")
        known = list(allowed() if callable(allowed) else allowed)
        for i, item in enumerate(value):  # type: ignore[arg-type]
            check_choice(f"{name}[{i}]", item, known)
        return value
    return check


def mapping_of(kind: str, what: str) -> Callable[[str, object], object]:
    """A kind for a dict whose every value is of `kind` (a key of `units.KINDS`); errors name `name[key]`."""
    return mapping_with(lambda name, value: check_kind(name, value, kind), what)


def mapping_with(check: Callable[[str, object], object], what: str) -> Callable[[str, object], object]:
    """A kind for a dict whose every value passes `check` (a kind's callable); errors name `name[key]`."""
    def run(name: str, value: object) -> object:
        if not isinstance(value, dict):
            raise ValueError(f"{name}={value!r:.60} must be a dict of {what}")
        for key, item in value.items():
            check(f"{name}[{key!r}]", item)
        return value
    return run


def has(*attributes: str, what: str) -> Callable[[str, object], object]:
    """A kind for an object read through `attributes` (a profiling Trace, a bench Sweep) whose class lives above
    the figures: the error names the argument and `what` it must be."""
    def check(name: str, value: object) -> object:
        if not all(hasattr(value, a) for a in attributes):
            raise ValueError(f"{name}={value!r:.60} must be {what}")
        return value
    return check


def instance_or_name(cls: type, names: Callable[[], Iterable[str]]) -> Callable[[str, object], object]:
    """A kind for an object of `cls` or one of the names `names()` returns (a model: `TransformerConfig` or a
    preset's name); a name not known is refused with the closest ones."""
    def check(name: str, value: object) -> object:
        return value if isinstance(value, cls) else check_choice(name, value, list(names()))
    return check
