"""The answer key of the problem sets: every problem's reference solution, computed with scalebook.

A problem set's notebook (in `solutions/`, and its student twin in `exercises/`) ends each problem
with `sb.check("01.3", answer)`; `check` compares the answer with the function registered here. The
key is code, not a table of numbers, so it can never drift from the package it teaches.
"""

from __future__ import annotations

import importlib
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...units import closest
from ..inputs import Param, parameters

__all__ = ["Problem", "solution", "get_problem", "list_problems"]

# One module per problem set; imported on first look-up so `import scalebook` stays light.
_SETS = ("rooflines", "tpus", "sharding", "transformers", "training", "training_llama", "inference", "serving_llama",
         "jax_programming", "profiling", "gpus", "gpus_book", "validation", "moe")
_REGISTRY: dict[str, Problem] = {}


@dataclass(frozen=True)
class Problem:
    """One graded problem: its id ('01.3'), a short title, the answer's unit and tolerance, its reference
    solution, its varied inputs (`params`, see `scalebook.course.inputs`) and two progressive hints (the second
    a template filled with the student's values, `{V}` for input V)."""

    qid: str
    title: str
    unit: str
    rtol: float
    solve: Callable[..., Any]
    hints: tuple[str, ...] = ()
    params: tuple[Param, ...] = ()

    def reference(self, values: Mapping[str, Any] | None = None) -> Any:
        """Return the reference answer for the input `values` (default: the book's), computed now."""
        unknown = set(values or {}) - {p.name for p in self.params}
        if unknown:
            raise ValueError(f"values={dict(values or {})!r}: problem {self.qid} has no inputs {sorted(unknown)}")
        return self.solve(**(values or {}))


def solution(qid: str, title: str, unit: str, rtol: float = 0.01,
             hints: tuple[str, str] = ()) -> Callable[[Callable[..., Any]], Callable]:
    """Register the decorated function as the reference solution of problem `qid`: called with no arguments
    it answers the book's problem; its `vary`-marked keyword inputs make each student's variant. (A student's
    own variant is another thing, `sb.problem(qid)`.)"""

    def register(solve: Callable[..., Any]) -> Callable[..., Any]:
        if qid in _REGISTRY:
            raise ValueError(f"problem id {qid!r} is registered twice")
        _REGISTRY[qid] = Problem(qid, title, unit, rtol, solve, tuple(hints), parameters(solve))
        return solve

    return register


def problem(qid: str, title: str, unit: str, rtol: float = 0.01,
            hints: tuple[str, str] = ()) -> Callable[[Callable[..., Any]], Callable]:
    """The old name of `solution` (it warns until release 0.3: `sb.problem` is a student's variant)."""
    warnings.warn("scalebook.course.key.problem is deprecated and goes in release 0.3: register an answer with "
                  "@solution (sb.problem is a student's variant)", DeprecationWarning, stacklevel=2)
    return solution(qid, title, unit, rtol, hints)


def _load_all() -> dict[str, Problem]:
    for name in _SETS:
        importlib.import_module(f"{__name__}.{name}")
    return _REGISTRY


def get_problem(qid: str) -> Problem:
    """Return the problem with id `qid`; unknown ids raise `KeyError` naming the closest ones."""
    registry = _load_all()
    if qid not in registry:
        close = closest(qid, registry, n=4)
        raise KeyError(f"qid={qid!r} is not a known problem; closest: {close or sorted(registry)[:8]}")
    return registry[qid]


def list_problems(prefix: str = "") -> list[Problem]:
    """Return every registered problem whose id starts with `prefix` (e.g. '01.')."""
    def natural(qid: str) -> list:
        return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", qid)]

    return [p for q, p in sorted(_load_all().items(), key=lambda item: natural(item[0])) if q.startswith(prefix)]
