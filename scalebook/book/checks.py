"""Checking a chapter's numbers: `expect` for a worked answer, `checked_numbers` for the chapter's closing table.

`expect(value, published)` sets a computed number beside the book's printed one and raises when they
drift apart, so executing a chapter (nbval, the website build) fails on a wrong number. In a notebook (JupyterLab,
Colab) it shows a compact ✓ (the numbers and source on hover), so a reader running the chapter sees each check
pass where it stands; `str()` keeps the full line for scripts and tests. The website's stylesheet
(_ext/static/scalebook-page.css) leaves these marks out of the page, where a chapter once showed dozens in view:
there, as in print, the chapter's checks are read in the table `checked_numbers()` shows, folded, at its end.
`kind="regression"` marks a check against our own earlier output (a guard against drift, not a published claim). A
student's answer to a problem set is checked by `course.answers.check`, which sets it beside the key with the same
`compare.Comparison`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from ..compare import Comparison, ExpectationError, fmt_number, is_number, percent
from ..tables import Table
from ..units import check_choice, check_kind, check_number
from .numbers import Published

__all__ = ["Check", "CheckedNumbers", "expect", "checked_numbers"]

# The kinds of a chapter's check: what the reference number is, and what it is called beside the value.
KINDS = {"published": "published", "regression": "recorded"}
_KIND_TITLES = {"published": "Checked against the published number",
                "regression": "Regression check against our own earlier output"}


@dataclass(frozen=True)
class Check(Comparison):
    """One checked number of a chapter (what `expect` returns): a `Comparison` with its `kind`.

    In a notebook it renders as a compact mark, ✓ (or ✓ regression), with the numbers, the tolerance and the
    source on hover (its class `sb-check` lets the website leave it out); `str()` keeps the full line.
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
            ours, reference = (fmt_number(c.value, c.unit), fmt_number(c.published, c.unit)) if numeric else (
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
