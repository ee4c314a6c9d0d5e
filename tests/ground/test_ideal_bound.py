"""The ideal is a bound (issue #38): no ideal prediction in the suite is slower than what was measured, family by
family."""

import collections

import pytest

from scalebook import validation as v


def _not_bounds_by_family() -> dict[str, list[str]]:
    """{family: ['row (measured speed / ideal speed)', ...]} for every ideal prediction slower than measured."""
    out = collections.defaultdict(list)
    for r in v.results("ideal"):
        if r["bound"] is None:
            continue
        out[r["family"]]  # every family with a speed row is listed, bound or not
        if not r["bound"]:
            ratio = 1 / (1 + r["speed error"])
            out[r["family"]].append(f"{r['run']} (measured {ratio:.3f}x the ideal's speed)")
    return dict(out)


FAMILIES = sorted(_not_bounds_by_family())


def test_every_family_of_work_has_speed_rows():
    assert {"training GPU", "training TPU", "prefill GPU", "decode GPU"} <= set(FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_ideal_prediction_of_a_family_is_a_bound(family):
    """100 % of peak, every byte once, everything overlapped: no run, whoever added it, went faster."""
    slower = _not_bounds_by_family()[family]
    assert slower == [], f"{family}: the ideal is slower than measured on {slower}"
