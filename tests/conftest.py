"""Test-wide settings. No test may depend on how fast the machine is at the moment (see tests/speed.py).

The fast lane, `make test-fast` (`pytest -m "not slow"`), leaves out every test marked `slow`: a single test
carries `@pytest.mark.slow` itself; a module whose every test runs a kernel, JAX programs, a sandbox or several
processes is marked whole here, with the reason. `make test` runs them all.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The tests live in a folder per floor, and a floor may keep a helper module of its own (tests/course/lms.py,
# tests/upper/traces.py) beside this folder's shared ones: every floor's folder is on the path, so each helper is
# imported by its name. A test module never imports another (tests/test_tests.py).
for _floor in ("ground", "upper", "course", "chapters"):
    sys.path.insert(0, str(Path(__file__).resolve().parent / _floor))

try:
    from hypothesis import settings
except ImportError:  # hypothesis is a dev dependency; the tests that use it import it themselves
    pass
else:
    # Hypothesis fails an example that takes over 200 ms by default, and flags a slow first example as flaky:
    # on a busy machine that is timing, not a bug. Property tests check values only.
    settings.register_profile("scalebook", deadline=None)
    settings.load_profile("scalebook")

SLOW_MODULES = {
    "test_figure_legibility": "draws every figure of every chapter with matplotlib and measures its text",
    "test_sharded_ops": "compiles and runs chapter 10's JAX programs on 8 emulated devices",
    "test_lab_roundtrip": "starts a Jupyter server and runs kernels",
    "test_gate": "runs other test files again on a copy of the checkout",
    "test_multihost": "starts several JAX processes",
    "test_notebook_filter": "runs git, make and a notebook's save hook on copies of the checkout",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `slow` every test of a module in `SLOW_MODULES`."""
    for item in items:
        if item.path.stem in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
