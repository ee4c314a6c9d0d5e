"""The likely mistake behind a wrong answer: where its ratio to the right one is a known slip (×2 uni- against
bidirectional, ×8 bits against bytes, ×1e3 or ×2^10 prefixes, a wrong dtype), a sentence naming it. A course's
`sb.check` and feedback say this instead of the expected value."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["likely_mistake"]

# Ratios of a wrong answer to the right one that a known slip produces, most telling first.
_SLIPS = (
    (8.0, "a factor of 8: bits against bytes"),
    (1024.0, "a factor of 2^10: KiB against kB (binary against decimal prefixes)"),
    (2.0**20, "a factor of 2^20: MiB against bytes"),
    (1e3, "a factor of 1000: a unit prefix (ms against s, kB against B)"),
    (1e6, "a factor of a million: a unit prefix (µs against s, MB against B)"),
    (2.0, "a factor of 2: unidirectional against bidirectional bandwidth, one direction of a ring against "
          "both, or a dtype of 2 bytes against 1 or 4"),
    (4.0, "a factor of 4: the wrong dtype (fp32's 4 bytes against int8's 1), or both links of both axes"),
)


def likely_mistake(answer: Any, reference: Any, rtol: float = 0.01) -> str:
    """A sentence naming the slip that turns `reference` into `answer` (too large or too small by a known
    factor), or '' when the ratio is none of them or either is not a positive number."""
    try:
        a, r = float(answer), float(reference)
    except (TypeError, ValueError, OverflowError):
        return ""
    if not (math.isfinite(a) and math.isfinite(r) and a > 0 and r > 0):
        return ""
    ratio = a / r
    for factor, slip in _SLIPS:
        for size, direction in ((factor, "too large"), (1 / factor, "too small")):
            if abs(ratio / size - 1) <= max(2 * rtol, 0.01):
                return f"Your answer is {direction} by {slip}?"
    return ""
