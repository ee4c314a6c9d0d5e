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

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r) + "</tr>" for r in self._cells()
        )
        caption = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
