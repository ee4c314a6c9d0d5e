"""What every figure shares: a closed matplotlib figure with a constrained layout."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from ..models import TransformerConfig, model_names
from ..units import check_choice, check_kind, check_positive


def geomspace(lo: float, hi: float, n: int) -> list[float]:
    """Return `n` numbers from `lo` to `hi` evenly spaced on a log scale (NumPy's `geomspace`, in pure Python)."""
    a, b = math.log10(lo), math.log10(hi)
    step = (b - a) / (n - 1)
    return [float(lo), *(10.0 ** (i * step + a) for i in range(1, n - 1)), float(hi)]


def figure(figsize: tuple[float, float] = (7.0, 4.5), ncols: int = 1, nrows: int = 1) -> tuple[Any, Any]:
    """Return (fig, ax) from pyplot, closed so that a notebook shows it once: when it is returned."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(nrows, ncols, figsize=figsize, layout="constrained")
    plt.close(fig)
    return fig, ax


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


def a_model(name: str, value: object) -> object:
    """A kind for a model: a `TransformerConfig` or the name of a preset."""
    return value if isinstance(value, TransformerConfig) else check_choice(name, value, model_names())


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


def finish(ax: Any, xlabel: str, ylabel: str, title: str, legend: str = "lower right") -> None:
    """Label an axes with units, title it, grid it and place its legend (the same on every figure)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc=legend)


def schematic(ax: Any, xlim: tuple[float, float], ylim: tuple[float, float], title: str, fontsize: float = 9) -> None:
    """Frame a drawing that has no axes of its own: set its limits, hide the axes and title it."""
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.axis("off")
    ax.set_title(title, fontsize=fontsize)


def time_axis(ax: Any, xlabel: str, title: str) -> None:
    """Label a schematic's time axis and title it (no legend: the bars carry their own labels)."""
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
