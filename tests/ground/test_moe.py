"""Expected experts touched by a batch: E · (1 - (1 - k/E)^B), checked against counting by hand."""

import pytest

from scalebook.models import expected_experts


def test_eight_tokens_with_top2_of_16_touch_about_ten_and_a_half_experts():
    # each token misses a given expert with probability 14/16; eight tokens miss it with (7/8)^8
    assert expected_experts(8, 16, 2) == pytest.approx(16 * (1 - (7 / 8) ** 8))
    assert expected_experts(8, 16, 2) == pytest.approx(10.5, abs=0.05)


def test_one_token_touches_exactly_k_and_many_touch_all():
    assert expected_experts(1, 16, 2) == pytest.approx(2)
    assert expected_experts(1000, 16, 2) == pytest.approx(16)


def test_bad_routing_raises_naming_the_argument():
    with pytest.raises(ValueError, match="k=8"):
        expected_experts(8, 4, 8)
