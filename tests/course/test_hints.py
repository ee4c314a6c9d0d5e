"""Hints that teach: every problem has two, the second filled with the student's own values; `sb.hint` reveals them
one at a time (and under the grader only records them, at the course's cost); a wrong answer's likely slip is named."""

from __future__ import annotations

import json

import pytest

from scalebook.course import variants
from scalebook.course.answers import GRADE_ANSWERS
from scalebook.course.grader import autograde
from scalebook.course.hints import hint, hint_text
from scalebook.course.key import get_problem, list_problems
from scalebook.course.mistakes import likely_mistake
from scalebook.course.variants import draw, enrol, student_key

SECRET = "course secret of CS 599, spring 2027"


@pytest.fixture(autouse=True)
def _self_study(monkeypatch):
    monkeypatch.delenv(variants.SECRET, raising=False)
    monkeypatch.delenv(variants.VARIANT, raising=False)
    monkeypatch.delenv(GRADE_ANSWERS, raising=False)
    enrol(None)
    yield
    enrol(None)


@pytest.mark.parametrize("qid", [p.qid for p in list_problems()])
def test_every_problem_has_two_hints_and_the_second_names_the_students_values(qid):
    p = get_problem(qid)
    assert len(p.hints) == 2 and all(len(h) > 10 for h in p.hints), qid
    values = draw(p.params, student_key(SECRET, "alice"), qid)
    second = hint_text(qid, 2, values)
    named = [n for n in values if "{" + n in p.hints[1]]
    assert all(f"{{{n}" not in second for n in values) and "{" not in second.replace("{X}", "")
    for name in named:
        shown = values[name]
        assert (f"{shown:.4g}" if isinstance(shown, float) else str(shown)) in second, (qid, name, second)
    assert len(named) >= min(1, len(values)) or not values, f"{qid}: the second hint shows none of its inputs"


def test_hints_are_revealed_one_at_a_time(capsys):
    hint("01.1")
    hint("01.1")
    hint("01.1")
    shown = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in shown] == ["01.1, hint 1 of 2", "01.1, hint 2 of 2", "01.1, hint 2 of 2"]
    assert "3e+12" in shown[1]  # the book's FLOPs, self-study


def test_a_named_student_sees_their_own_values_in_the_second_hint(capsys):
    key = student_key(SECRET, "bob")
    enrol("bob", key)
    hint("01.3")
    hint("01.3")
    second = capsys.readouterr().out.splitlines()[-1]
    assert str(draw(get_problem("01.3").params, key, "01.3")["T"]) in second


def test_under_the_grader_a_hint_is_recorded_not_shown(tmp_path, monkeypatch, capsys):
    channel = tmp_path / "answers.jsonl"
    monkeypatch.setenv(GRADE_ANSWERS, str(channel))
    hint("02.4")
    hint("02.4")
    records = [json.loads(line) for line in channel.read_text().splitlines()]
    assert records == [{"qid": "02.4", "hint": 1}, {"qid": "02.4", "hint": 2}]
    assert "recorded" in capsys.readouterr().out


def test_hints_taken_are_counted_and_cost_what_the_course_sets():
    data = b"\n".join(json.dumps(r).encode() for r in [
        {"qid": "01.1", "hint": 1}, {"qid": "01.1", "hint": 2}, {"qid": "01.2", "hint": 99},
        {"qid": "01.3", "hint": "many"}, {"qid": "01.1", "answer": 1.0}])
    last, hints, errors = autograde._records(data)
    assert hints == {"01.1": 2, "01.2": 2, "01.3": 2} and last["01.1"] == ("answer", 1.0) and errors == []
    outcomes = {"01.1": "right", "01.2": "right", "01.4": "right", "01.5": "wrong"}
    possible = {"01.1": 2, "01.2": 1, "01.4": 1, "01.5": 1}
    assert autograde._scored(possible, outcomes, hints, 0.25) == {"01.1": 1.0, "01.2": 0.5, "01.4": 1, "01.5": 0}
    assert autograde._scored(possible, outcomes, hints, 0.0) == {"01.1": 2, "01.2": 1, "01.4": 1, "01.5": 0}


def test_a_hint_record_never_changes_an_answer():
    data = b'{"qid": "01.1", "answer": 1.0}\n{"qid": "01.1", "hint": 1}\n'
    assert autograde.read_answers(data, {"01.1": 1}, lambda q, a: "right") == {"01.1": "right"}


@pytest.mark.parametrize(("answer", "slip"), [
    (8.0, "too large by a factor of 8: bits against bytes"),
    (1 / 8, "too small by a factor of 8"),
    (2.0, "too large by a factor of 2: unidirectional against bidirectional"),
    (0.5, "too small by a factor of 2"),
    (1e3, "a factor of 1000"),
    (1e-3, "too small by a factor of 1000"),
    (1024.0, "2^10"),
    (4.0, "the wrong dtype"),
])
def test_the_likely_slip_is_named(answer, slip):
    assert slip in likely_mistake(answer, 1.0)


@pytest.mark.parametrize("answer", [1.3, 3.0, -8.0, None, float("nan"), 0.0, [8.0]])
def test_no_slip_is_invented(answer):
    assert likely_mistake(answer, 1.0) == ""


def test_the_feedback_gives_the_slip_and_a_hint_never_the_value():
    key = autograde._Key(SECRET)
    values = key.values("alice", ["01.1"])["01.1"]
    reference = get_problem("01.1").reference(values)
    advice = key.advice("01.1", reference * 8, values)
    assert "factor of 8" in advice and advice.count("Hint:") == 1 and f"{reference:.3g}" not in advice
