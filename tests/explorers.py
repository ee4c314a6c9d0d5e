"""Shared check for the chapters' explorers: after one warm-up, moving a control must answer quickly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def assert_answers_fast(make: Callable[[], Any], change: dict[str, Any], limit: float = 0.05) -> None:
    """Open the explorer `make()`, move its controls to `change`, and require the answer to take under `limit`
    seconds (widgets must answer well under 0.1 s) without an error: the best of three moves after a warm-up,
    so that a garbage-collection pause on a busy test machine is not mistaken for a slow widget."""
    ex = make()
    ex.update(**change)  # the first move may import lazily
    seconds = min(ex.update(**change) for _ in range(3))
    assert not isinstance(ex.result, Exception), ex.result
    assert seconds < limit, f"{make.__name__}({change}) took {seconds:.3f} s"
