"""Shared check for the chapters' explorers: after one warm-up, moving a control must answer quickly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from speed import assert_fast


def assert_answers_fast(make: Callable[[], Any], change: dict[str, Any], limit: float = 0.05) -> None:
    """Open the explorer `make()`, move its controls to `change`, and check the answer without an error.

    `limit` is the target in seconds (widgets must answer well under 0.1 s), timed as the best of three moves
    after a warm-up. The test fails only past 10x the target (`speed.assert_fast`); `benchmarks/speed.py`
    reports every explorer against the target itself.
    """
    ex = make()
    ex.update(**change)  # the first move may import lazily
    seconds = min(ex.update(**change) for _ in range(3))
    assert not isinstance(ex.result, Exception), ex.result
    assert_fast(seconds, limit, f"{make.__name__}({change})")
