"""A problem's inputs, as the answer key declares them: `vary` marks a reference solution's keyword default as an input
that varies between students (with its range or choices), and `parameters` reads those inputs back as `Param`s.

The key (`course/key/`) stands on this module and `variants` draws each student's values from its `Param`s; neither
the key nor this module knows who the student is, so the key never imports `variants`.
"""

from __future__ import annotations

import inspect
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["vary", "Param", "parameters"]


class _Varied:
    """Marks a default value as a problem input that varies between students (see `vary`)."""

    low: Any
    high: Any
    step: Any
    choices: tuple


def vary(book: Any, low: Any = None, high: Any = None, *, step: Any = None, choices: Sequence | None = None) -> Any:
    """Return `book` (the book's value: a float, int or str) marked as an input drawn per student.

    Numbers are drawn from [`low`, `high`] (ints in multiples of `step`, floats to two significant figures,
    log-uniformly when `high / low` is 4 or more); `choices` lists the values a name or a choice may take.
    The result is still `book` to any code that uses it.
    """
    if choices is not None:
        if book not in choices or len(choices) < 2:
            raise ValueError(f"choices={choices!r} must hold book={book!r} and at least one other value")
    elif not (isinstance(low, (int, float)) and isinstance(high, (int, float)) and low <= book <= high and low < high):
        raise ValueError(f"vary({book!r}, low={low!r}, high={high!r}): need low <= book <= high, low < high")
    elif isinstance(book, int) and not (step is None or isinstance(step, int) and step > 0):
        raise ValueError(f"step={step!r} must be a positive int for an int input")
    base = {bool: None, int: int, float: float, str: str}.get(type(book))
    if base is None:
        raise ValueError(f"book={book!r} must be an int, a float or a str")
    marked = type(f"varied_{base.__name__}", (base, _Varied), {})(book)
    marked.low, marked.high, marked.choices = low, high, tuple(choices or ())
    marked.step = (step or 1) if base is int else step
    return marked


@dataclass(frozen=True)
class Param:
    """One varied input of a problem: its name, the book's value, and its range or choices."""

    name: str
    book: Any
    low: Any = None
    high: Any = None
    step: Any = None
    choices: tuple = ()

    def draw(self, rng: random.Random) -> Any:
        """One value of this input, drawn with `rng`: a choice, a multiple of `step`, or a 2-figure float."""
        if self.choices:
            return rng.choice(self.choices)
        if isinstance(self.book, int):
            first, last = -(-self.low // self.step), self.high // self.step
            return rng.randint(first, last) * self.step
        if self.high / self.low >= 4 and self.low > 0:
            value = math.exp(rng.uniform(math.log(self.low), math.log(self.high)))
        else:
            value = rng.uniform(self.low, self.high)
        return min(max(float(f"{value:.2g}"), self.low), self.high)

    def holds(self, value: Any) -> bool:
        """Whether `value` is one this input may take."""
        if self.choices:
            return value in self.choices
        return self.low <= value <= self.high and (not isinstance(self.book, int) or value % self.step == 0)


def parameters(solve: Callable[..., Any]) -> tuple[Param, ...]:
    """The varied inputs of a reference solution: its keyword parameters whose defaults `vary` marked."""
    found = []
    for name, p in inspect.signature(solve).parameters.items():
        if isinstance(p.default, _Varied):
            d = p.default
            book = type(d).__mro__[1](d)
            found.append(Param(name, book, d.low, d.high, d.step, d.choices))
    return tuple(found)
