"""A small table of rows that prints as text and renders as HTML in a notebook (no pandas needed)."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .units import closest

__all__ = ["Table"]

Formatter = Callable[[Any], str]


class Table:
    """Rows of named columns, with optional per-column formatters used for display only.

    The raw values stay untouched (`table.rows`, `table.column(name)`), so code can compute with them
    while a notebook shows `fmt_bytes`-style strings.
    """

    SHOWN_ROWS = 20  # rows a page shows before folding the rest

    def __init__(
        self,
        rows: Iterable[Mapping[str, Any]],
        columns: Sequence[str] | None = None,
        formats: Mapping[str, Formatter] | None = None,
        title: str = "",
    ) -> None:
        if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Iterable):
            raise TypeError(f"rows={rows!r} must be an iterable of mappings (one dict per row)")
        self.rows: list[dict[str, Any]] = []
        for i, row in enumerate(rows):
            if not isinstance(row, Mapping):
                raise TypeError(f"rows[{i}]={row!r} must be a mapping of column name to value")
            self.rows.append(dict(row))
        if columns is not None and (isinstance(columns, str) or not isinstance(columns, Iterable)
                                    or not all(isinstance(c, str) for c in columns)):
            raise TypeError(f"columns={columns!r} must be a sequence of column names")
        self.columns: list[str] = list(columns or (self.rows[0].keys() if self.rows else []))
        missing = [c for c in self.columns if self.rows and all(c not in row for row in self.rows)]
        if missing:
            raise KeyError(f"columns={missing!r} name no column of the rows; they have {list(self.rows[0])}")
        if formats is not None and not isinstance(formats, Mapping):
            raise TypeError(f"formats={formats!r} must be a mapping {{column: formatter}}")
        self.formats: dict[str, Formatter] = dict(formats or {})
        if not isinstance(title, str):
            raise TypeError(f"title={title!r} must be a string")
        self.title = title

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.rows[index]

    def column(self, name: str) -> list[Any]:
        """Return the raw values of column `name`."""
        if name not in self.columns:
            near = closest(name, map(str, self.columns))
            hint = f"; did you mean {' or '.join(map(repr, near))}?" if near else ""
            raise KeyError(f"name={name!r} is not a column of this table; columns: {self.columns}{hint}")
        return [row.get(name) for row in self.rows]

    def _cell(self, name: str, value: Any) -> str:
        if value is None:
            return "—"
        fmt = self.formats.get(name)
        if fmt is not None:
            return fmt(value)
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)

    def _cells(self) -> list[list[str]]:
        return [[self._cell(c, row.get(c)) for c in self.columns] for row in self.rows]

    def __str__(self) -> str:
        cells = self._cells()
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(self.columns)]
        lines = [self.title] if self.title else []
        lines.append("  ".join(c.ljust(w) for c, w in zip(self.columns, widths)))
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self, fold: bool = True) -> str:
        """The table as HTML with padded cells; past `SHOWN_ROWS` rows (when `fold`) the rest sits in a folded
        <details> below, so a long table does not flood the page (a table at most 5 rows longer is shown whole)."""
        rows = self._cells()
        cap = self.SHOWN_ROWS if fold and len(rows) > self.SHOWN_ROWS + 5 else len(rows)
        caption = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        html_ = _html_table(self.columns, rows[:cap], caption)
        if len(rows) <= cap:
            return html_
        rest = _html_table(self.columns, rows[cap:], "")
        return (f"{html_}<details class='sb-more-rows'><summary>Show the other {len(rows) - cap} rows "
                f"(of {len(rows)})</summary>{rest}</details>")


# Cells padded so neighbouring columns never run together, whatever the page's style sheet does to tables.
_TABLE_STYLE = "border-collapse:separate;border-spacing:0.9em 0.15em"


def _html_table(columns: Sequence[str], rows: list[list[str]], caption: str) -> str:
    """One <table> of already formatted `rows` under `columns`, its cells set apart by `_TABLE_STYLE`."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table style='{_TABLE_STYLE}'>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
