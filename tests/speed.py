"""Speed in `make test`: every timed check has a target, but the test gates only at SANITY times it.

A test run shares its machine (two busy cores, a garbage-collection pause, a cold cache), so a timing within a
few times its target says nothing about the code. What a test can say without flaking is that nothing is
*badly* slow: an accidental quadratic loop or an import of JAX at `import scalebook` costs far more than 10x.
The targets themselves are measured and reported, never gated, by `python benchmarks/speed.py`, which runs
these same checks with SCALEBOOK_TIMINGS set so that each appends what it measured to that file.
"""

from __future__ import annotations

import json
import math
import os

SANITY = 10
STOPPED = 30
TIMINGS = "SCALEBOOK_TIMINGS"


def assert_fast(seconds: float, target: float, what: str) -> None:
    """Record `seconds` against `target` (both in seconds) for the benchmark, and fail only past SANITY × target."""
    path = os.environ.get(TIMINGS)
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"what": what, "seconds": seconds, "target": target}) + "\n")
    assert seconds < SANITY * target, (
        f"{what} took {seconds:.3g} s, over {SANITY}x its {target:g} s target: far too slow to be noise")


def assert_stopped(seconds: float, limit: float, what: str, unstopped: float = math.inf) -> None:
    """Fail only if a run given `limit` seconds, which left alone would run `unstopped` seconds, took past STOPPED
    times its limit: far more than a busy machine adds to a start and a kill, far less than the run unstopped."""
    if not STOPPED * limit < unstopped:
        raise ValueError(f"unstopped={unstopped:g} s is within {STOPPED}x the {limit:g} s limit: a run left to "
                         "its end would pass; give the program longer to run")
    assert seconds < STOPPED * limit, (
        f"{what} took {seconds:.3g} s under a {limit:g} s limit, over {STOPPED}x it: the limit did not stop it")
