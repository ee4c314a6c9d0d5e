"""Checking a chapter's numbers: `expect` for a worked answer, `checked_numbers` for the chapter's closing table.

`expect(value, published)` sets a computed number beside the book's printed one and raises when they
drift apart, so executing a chapter (nbval, the website build) fails on a wrong number. In a page it shows only
a compact ✓ (the numbers and source on hover) and records the check; `checked_numbers()` at the end of a chapter
shows them all in a collapsed table. `kind="regression"` marks a check against our own earlier output (a guard
against drift, not a published claim). A student's answer to a problem set is checked by `course.answers.check`,
which sets it beside the key with the same `Comparison`.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

from .booknumbers import Published
from .tables import Table
from .units import check_choice, check_kind, check_number, fmt_si, fmt_time

__all__ = ["Comparison", "Check", "CheckedNumbers", "ExpectationError", "expect", "checked_numbers", "is_number",
           "percent"]

# The kinds of a chapter's check: what the reference number is, and what it is called beside the value.
KINDS = {"published": "published", "regression": "recorded"}
_KIND_TITLES = {"published": "Checked against the published number",
                "regression": "Regression check against our own earlier output"}


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
                f"{head}{_fmt(self.value, self.unit)} vs {ref} {_fmt(self.published, self.unit)} "
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


def _fmt(x: Any, unit: str = "") -> str:
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


@dataclass(frozen=True)
class Check(Comparison):
    """One checked number of a chapter (what `expect` returns): a `Comparison` with its `kind`.

    In a notebook or page it renders as a compact mark, ✓ (or ✓ regression), with the numbers, the tolerance
    and the source on hover; `str()` keeps the full line for scripts and tests.
    """

    kind: str = "published"

    def _repr_html_(self) -> str:
        mark, body = self._text()
        tip = html.escape(f"{_KIND_TITLES[self.kind]}: {body}", quote=True)
        word = " regression" if self.kind == "regression" else ""
        return (f"<span class='sb-check sb-{self.kind}' title=\"{tip}\" "
                f"style='color:#1a7f37;font-size:0.85em;cursor:help'>{mark}{word}</span>")


_RECORDED: list[Check] = []  # every check `expect` passed in this process, in order


def expect(value: Any, published: Any, rtol: float | None = None, source: str = "", label: str = "",
           unit: str = "", kind: str = "published") -> Check:
    """Return a ✓ `Check` of a computed `value` against the `published` one, or raise if they disagree.

    `published` is a number (or list of numbers) or a `Published` from `sb.published(key)` (a printed number a
    unit test checks too, typed once in `scalebook/data/book/`), which brings its own tolerance, source and unit.
    `rtol` is the relative tolerance (default 5%; the book rounds its inputs, typically to 2 significant figures);
    `source` names where the published number is printed (e.g. 'ch. 1, Q5'); `unit` ('s', 'B', 'FLOP/s'
    ...) only changes how the two numbers are shown (1.01 ms rather than 0.00101); `kind` is 'published'
    (a number printed in the book or a cited source) or 'regression' (our own earlier output, kept so a
    change that moves it fails). A passing check is recorded for `checked_numbers()`.
    """
    if isinstance(published, Published):
        rtol = published.rtol if rtol is None else rtol
        source, unit, published = source or published.source, unit or published.unit, published.value
    rtol = 0.05 if rtol is None else rtol
    check_number("rtol", rtol, low=0.0, high=1.0, what="a relative tolerance in [0, 1] (beyond 100% it checks nothing)")
    for name, text in (("source", source), ("label", label), ("unit", unit)):
        check_kind(name, text, "text")
    check_choice("kind", kind, KINDS)
    result = Check(value, published, rtol, source, label, unit, KINDS[kind], kind)
    if not result.ok:
        raise ExpectationError(str(result))
    _RECORDED.append(result)
    return result


class CheckedNumbers:
    """The checks `expect` passed so far: a one-line summary, and every check in a table that a page collapses."""

    def __init__(self, checks: list[Check]) -> None:
        self.checks = list(checks)

    def __len__(self) -> int:
        return len(self.checks)

    @property
    def summary(self) -> str:
        """'Checked numbers: 12 (10 against published figures, 2 regression checks)'."""
        regression = sum(c.kind == "regression" for c in self.checks)
        return (f"Checked numbers: {len(self.checks)} ({len(self.checks) - regression} against published figures, "
                f"{regression} regression check{'' if regression == 1 else 's'} against our own earlier output)")

    @property
    def table(self) -> Table:
        """One row per check: what was checked, our value, the reference, the error, the tolerance, the kind."""
        rows = []
        for number, c in enumerate(self.checks, start=1):
            numeric = is_number(c.value) and is_number(c.published)
            ours, reference = (_fmt(c.value, c.unit), _fmt(c.published, c.unit)) if numeric else (
                repr(c.value), repr(c.published))
            rows.append({"#": number, "what": c.label or c.source or "—", "ours": ours, "reference": reference,
                         "off by": percent(c.rel_error) if numeric else "equal",
                         "tolerance": percent(c.rtol), "kind": c.kind})
        return Table(rows, columns=["#", "what", "ours", "reference", "off by", "tolerance", "kind"])

    def __str__(self) -> str:
        return f"{self.summary}\n{self.table}" if self.checks else self.summary

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return (f"<details class='sb-checked-numbers'><summary>{html.escape(self.summary)}</summary>"
                f"{self.table._repr_html_(fold=False) if self.checks else ''}</details>")


def checked_numbers() -> CheckedNumbers:
    """Return every check `expect` has passed in this process (a chapter's kernel): a page shows the count and
    keeps the table folded until the reader opens it."""
    return CheckedNumbers(_RECORDED)
