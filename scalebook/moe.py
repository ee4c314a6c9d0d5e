"""Routing arithmetic of a mixture-of-experts layer: how many distinct experts a batch of tokens touches.

Ground floor: pure Python, no JAX. (A candidate for `models.py` or `inference.py`; kept apart while those move.)
"""

from __future__ import annotations

__all__ = ["expected_experts"]


def expected_experts(B: float, E: int, k: int) -> float:
    """Return the expected number of distinct experts that B tokens touch when each picks k of E experts uniformly
    at random without repeats: E · (1 - (1 - k/E)^B). The minimum batch that *can* touch all E is E/k tokens; on
    average that many touch fewer."""
    if not (isinstance(E, int) and isinstance(k, int) and 1 <= k <= E):
        raise ValueError(f"need integers 1 <= k <= E, got E={E!r}, k={k!r}")
    if B < 0:
        raise ValueError(f"B={B!r} must be a non-negative number of tokens")
    return E * (1 - (1 - k / E) ** B)
