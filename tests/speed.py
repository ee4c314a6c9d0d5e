"""Speed in `make test`: every timed check has a target, but the test gates only at SANITY times it.

A test run shares its machine (two busy cores, a garbage-collection pause, a cold cache), so a timing within a
few times its target says nothing about the code. What a test can say without flaking is that nothing is
*badly* slow: an accidental quadratic loop or an import of JAX at `import scalebook` costs far more than 10x.
The targets themselves are measured and reported, never gated, by `python benchmarks/speed.py`, which runs
these same checks with SCALEBOOK_TIMINGS set so that each appends what it measured to that file.
"""

from __future__ import annotations

import json
import os

SANITY = 10
TIMINGS = "SCALEBOOK_TIMINGS"


def assert_fast(seconds: float, target: float, what: str) -> None:
    """Record `seconds` against `target` (both in seconds) for the benchmark, and fail only past SANITY × target."""
    path = os.environ.get(TIMINGS)
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"what": what, "seconds": seconds, "target": target}) + "\n")
    assert seconds < SANITY * target, (
        f"{what} took {seconds:.3g} s, over {SANITY}x its {target:g} s target: far too slow to be noise")
