"""The book's own machinery: what checks a chapter's numbers and keeps its files in step.

    checks.py      `expect` (a computed number beside the published one) and `checked_numbers` (the closing table)
    numbers.py     `published(key)`: the book's numbers a chapter and a unit test both check, typed once
    notebooks.py   the notebooks: install cells, exercises, the README's table, the .ipynb twins, git's filter
    upstream.py    the ledger of the book's upstream commits we follow
    errata.py      the errata page, from the errata table and the ledger
    cheatsheet.py  the book on one page

A chapter calls `sb.expect`, `sb.published` and `sb.checked_numbers` from the top face. Each name loads its module
on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..faces import face

if TYPE_CHECKING:
    from . import cheatsheet, checks, errata, notebooks, numbers, upstream
    from .checks import checked_numbers, expect
    from .numbers import published

_TABLE = {"expect": "checks", "checked_numbers": "checks", "published": "numbers",
          **{name: name for name in ("checks", "numbers", "notebooks", "upstream", "errata", "cheatsheet")}}

__all__ = list(_TABLE)
__getattr__, __dir__ = face(__name__, _TABLE, {})
