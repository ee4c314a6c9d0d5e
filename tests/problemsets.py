"""Shared checks for the problem sets: each test_problems_<set>.py supplies its hand-worked answers."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from scalebook.problems import get_problem, list_problems


def hand_answer_test(prefix: str, hand: Mapping[str, float], rel: float = 1e-3) -> Callable[[str], None]:
    """Return a test, one case per registered problem `prefix`*, that its reference equals the hand answer."""
    qids = [p.qid for p in list_problems(prefix)]

    @pytest.mark.parametrize("qid", qids)
    def test(qid: str) -> None:
        assert qid in hand, f"{qid} has no hand-worked answer in the test module"
        assert get_problem(qid).reference() == pytest.approx(hand[qid], rel=rel)

    def test_no_stale_answers() -> None:
        assert set(hand) <= set(qids), f"hand answers for unregistered problems: {sorted(set(hand) - set(qids))}"

    test.no_stale_answers = test_no_stale_answers
    return test
