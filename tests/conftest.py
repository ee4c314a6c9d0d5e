"""Test-wide settings. No test may depend on how fast the machine is at the moment (see tests/speed.py)."""

from __future__ import annotations

try:
    from hypothesis import settings
except ImportError:  # hypothesis is a dev dependency; the tests that use it import it themselves
    pass
else:
    # Hypothesis fails an example that takes over 200 ms by default, and flags a slow first example as flaky:
    # on a busy machine that is timing, not a bug. Property tests check values only.
    settings.register_profile("scalebook", deadline=None)
    settings.load_profile("scalebook")
