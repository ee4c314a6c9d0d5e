"""The old path of `scalebook.book.notebooks`, kept for one release (removal: 0.3) because clones made before it
moved run `python -m scalebook.notebooks strip` as git's clean filter; `make lab` writes the new path."""

from __future__ import annotations

import sys

from .book.notebooks import main

if __name__ == "__main__":
    sys.exit(main())
