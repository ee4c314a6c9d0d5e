"""A small table of rows that prints as text and renders as HTML in a notebook (no pandas needed)."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = ["Table"]

Formatter = Callable[[Any], str]


class Table:
    """Rows of named columns, with optional per-column formatters used for display only.

    The raw values stay untouched (`table.rows`, `table.column(name)`), so code can compute with them
    while a notebook shows `fmt_bytes`-style strings.
    """

    def __init__(
        self,
        rows: Iterable[Mapping[str, Any]],
        columns: Sequence[str] | None = None,
        formats: Mapping[str, Formatter] | None = None,
        title: str = "",
    ) -> None:
        self.rows: list[dict[str, Any]] = [dict(r) for r in rows]
        self.columns: list[str] = list(columns or (self.rows[0].keys() if self.rows else []))
        self.formats: dict[str, Formatter] = dict(formats or {})
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
            raise KeyError(f"column={name!r} is not in this table; columns: {self.columns}")
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

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r) + "</tr>" for r in self._cells()
        )
        caption = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
