"""A computed value set beside a reference one: how far apart they are, and whether they agree.

`Comparison` is what both sides of the house check with: a chapter's worked answer against the book's printed
number (`book.checks.expect`) and a student's answer against the key (`course.answers.check`). Numbers compare by
relative error, lists item by item, anything else by equality.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

from .units import fmt_si, fmt_time

__all__ = ["Comparison", "ExpectationError", "is_number", "percent", "fmt_number"]


class ExpectationError(AssertionError):
    """A computed value disagrees with the published (or reference) one."""


@dataclass(frozen=True)
class Comparison:
    """A value set beside the published one; `ok` says whether they agree within `rtol`."""

    value: Any
    published: Any
    rtol: float
    source: str = ""
    label: str = ""
    unit: str = ""
    reference_name: str = "published"

    @property
    def rel_error(self) -> float:
        """Relative error |value - published| / |published|; for lists and tuples of the same length the
        largest over their items; 0 or infinity for non-numbers, which must match exactly."""
        return _rel_error(self.value, self.published)

    @property
    def ok(self) -> bool:
        return self.rel_error <= self.rtol

    def _text(self) -> tuple[str, str]:
        mark = "✓" if self.ok else "✗"
        head = f"{self.label}: " if self.label else ""
        ref = self.reference_name
        if is_number(self.value) and is_number(self.published):
            body = (
                f"{head}{fmt_number(self.value, self.unit)} vs {ref} {fmt_number(self.published, self.unit)} "
                f"(off by {percent(self.rel_error)}, tolerance {percent(self.rtol)})"
            )
        else:
            body = f"{head}{self.value!r} vs {ref} {self.published!r}"
        return mark, body + (f" — {self.source}" if self.source else "")

    def __str__(self) -> str:
        mark, body = self._text()
        return f"{mark} {body}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        mark, body = self._text()
        colour = "#1a7f37" if self.ok else "#cf222e"
        return (
            f"<div style='font-family:monospace'><span style='color:{colour};font-weight:bold'>{mark}</span>"
            f" {html.escape(body)}</div>"
        )


def _rel_error(value: Any, published: Any) -> float:
    if is_number(value) and is_number(published):
        if published == 0:
            return abs(float(value))
        return abs(float(value) - float(published)) / abs(float(published))
    if isinstance(value, (list, tuple)) and isinstance(published, (list, tuple)) and len(value) == len(published):
        return max((_rel_error(v, p) for v, p in zip(value, published)), default=0.0)
    return 0.0 if value == published else math.inf


def is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) or hasattr(x, "__float__")


def fmt_number(x: Any, unit: str = "") -> str:
    """Format a number for a comparison line: times, bytes and rates with prefixes, others plainly."""
    x = float(x)
    if unit == "s":
        return fmt_time(x, digits=4)
    if unit:
        return fmt_si(x, unit, digits=4)
    return f"{x:.4g}" if abs(x) < 1e5 else f"{x:.3e}"


def percent(fraction: float) -> str:
    """A relative error or tolerance as a percentage; below one part in a million, '< 1e-4%'."""
    if fraction < 1e-6:
        return "0%" if fraction == 0 else "< 1e-4%"
    return f"{fraction * 100:.2g}%" if fraction < 0.01 else f"{fraction:.1%}"
