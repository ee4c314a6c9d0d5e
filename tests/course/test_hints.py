"""Hints that teach and agree with the answer key.

Every problem has two hints; `sb.hint` reveals them one at a time (under the grader it only records them, at the
course's cost), and a wrong answer's likely slip is named.

Every number a hint states is checked against the key, for the book's values and 40 generated students per
problem (`variants.draw` with keys from `student_key`). How a number in a hint is recognised, and what it claims,
is the contract `scalebook.course.hints` states:

- a number is a numeral written with digits (`NUMBER`: 12, 0.45, 9.2e14); digits attached to a letter are part of
  a name (v5e, bf16, H100, 4x4x4, llama3-70b) and state nothing;
- in prose a hint states no number: outside its formulas, the only numerals are the student's own inputs, filled
  into `{V}` fields (`test_prose_states_no_number`);
- every other number sits in a formula `⟦name = expression⟧`: the one formula of a hint that no other formula uses
  claims the answer, and each other one defines a name used on the way to it; evaluated with the student's
  inputs, the claim must agree with the key's reference answer within the problem's own tolerance, compared
  exactly as `sb.check` grades (`Comparison(claim, reference, rtol).ok`): `test_every_formula_agrees_with_the_key`;
- a second hint teaches the method as at least one formula, and no value a hint prints (an input filled into a
  field, a formula that is a bare number) is the reference answer within that tolerance: the hint never prints
  the answer (`test_no_hint_shows_the_answer`).
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Mapping
from typing import Any

import pytest

import scalebook as sb
from scalebook.compare import Comparison
from scalebook.course import variants
from scalebook.course.answers import GRADE_ANSWERS
from scalebook.course.grader import autograde
from scalebook.course.hints import FORMULA, formulas, hint, hint_text
from scalebook.course.key import Problem, get_problem, list_problems
from scalebook.course.mistakes import likely_mistake
from scalebook.course.variants import draw, enrol, student_key

SECRET = "course secret of CS 599, spring 2027"
STUDENTS = 40  # generated students per problem, beside the book's values
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w]|\.\d)")
FIELD = re.compile(r"\{[^{}]*\}")
# What a formula may use besides the problem's inputs and the hint's own names (hints.py's contract).
NAMESPACE = {"sb": sb, "ceil": math.ceil, "floor": math.floor, "sqrt": math.sqrt, "min": min, "max": max,
             "sum": sum, "range": range, "next": next, "round": round}
QIDS = [p.qid for p in list_problems()]


@pytest.fixture(autouse=True)
def _self_study(monkeypatch):
    monkeypatch.delenv(variants.SECRET, raising=False)
    monkeypatch.delenv(variants.VARIANT, raising=False)
    monkeypatch.delenv(GRADE_ANSWERS, raising=False)
    enrol(None)
    yield
    enrol(None)


def _students(p: Problem) -> list[dict[str, Any]]:
    """The book's values of problem `p`'s inputs, then 40 generated students' values."""
    keys = [None] + [student_key(SECRET, f"student {i}") for i in range(STUDENTS)]
    return [draw(p.params, key, p.qid) for key in keys]


def _names(expression: str) -> set[str]:
    """The names an expression reads (attributes and keyword names aside)."""
    return {node.id for node in ast.walk(ast.parse(expression, mode="eval")) if isinstance(node, ast.Name)}


def claim(template: str, inputs: Mapping[str, Any]) -> float:
    """The value a hint claims for `inputs`: its one formula that no other formula uses, the others defining the
    names it reads.

    Refuses formulas that redefine an input or a namespace name, define a name twice, or leave more than one
    formula unused by the rest (each unused one would be a second claim, or a number no claim checks)."""
    found = formulas(template)
    names = [name for name, _ in found]
    clashes = sorted((set(names) & (set(inputs) | set(NAMESPACE))) | {n for n in names if names.count(n) > 1})
    assert not clashes, f"formula names {clashes} clash with an input, the namespace or each other"
    table = dict(found)
    uses = {name: (_names(expression) & set(table)) - {name} for name, expression in found}
    roots = [name for name in names if not any(name in used for used in uses.values())]
    assert len(roots) == 1, f"formulas {roots} are used by no other formula: a hint claims one answer"
    values: dict[str, Any] = {}

    def value(name: str, seen: tuple[str, ...] = ()) -> Any:
        if name not in values:
            assert name not in seen, f"formula {name} defines itself through {seen}"
            for used in uses[name]:
                value(used, (*seen, name))
            values[name] = eval(table[name], {"__builtins__": {}, **NAMESPACE, **inputs, **values})
        return values[name]

    return value(roots[0])


@pytest.mark.parametrize("qid", QIDS)
def test_every_problem_has_two_hints_and_the_second_teaches_a_formula(qid):
    p = get_problem(qid)
    assert len(p.hints) == 2 and all(len(h) > 10 for h in p.hints), qid
    assert formulas(p.hints[1]), f"{qid}: the second hint states no formula to follow"


@pytest.mark.parametrize("qid", QIDS)
def test_prose_states_no_number(qid):
    p = get_problem(qid)
    for level, template in enumerate(p.hints, 1):
        prose = FIELD.sub("", FORMULA.sub("", template))
        assert not NUMBER.findall(prose), f"{qid} hint {level} states numbers outside a formula: {prose!r}"
        assert {f.strip("{}").split("!")[0].split(":")[0] for f in FIELD.findall(template)} <= {
            q.name for q in p.params}, f"{qid} hint {level} fills a field that is not an input"


@pytest.mark.parametrize("qid", QIDS)
def test_every_formula_agrees_with_the_key(qid):
    p = get_problem(qid)
    disagree = []
    for values in _students(p):
        reference = p.reference(values)
        for level, template in enumerate(p.hints, 1):
            if formulas(template):
                stated = claim(template, values)
                if not Comparison(stated, reference, p.rtol).ok:
                    disagree.append(f"hint {level} for {values}: {stated!r}, the key {reference!r}")
    assert not disagree, f"{qid}: {len(disagree)} disagreements, e.g. {disagree[:3]}"


def shown(template: str, values: Mapping[str, Any]) -> list[float]:
    """The values a hint prints for a student: the inputs its `{V}` fields fill in and every formula whose whole
    expression is a number (⟦D = 8192⟧). A numeral inside an expression (the 2 of ⟦t = 2 * V / W⟧) is a
    coefficient, not a value, and a formula's result is never printed: `hint_text` shows expressions."""
    fields = {f.strip("{}").split("!")[0].split(":")[0] for f in FIELD.findall(FORMULA.sub("", template))}
    inputs = [float(values[n]) for n in fields if isinstance(values[n], (int, float))]
    return inputs + [float(e) for _, e in formulas(template) if NUMBER.fullmatch(e)]


@pytest.mark.parametrize("qid", QIDS)
def test_no_hint_shows_the_answer(qid):
    p = get_problem(qid)
    for values in _students(p):
        reference = p.reference(values)
        for level, template in enumerate(p.hints, 1):
            answer = [v for v in shown(template, values) if Comparison(v, reference, p.rtol).ok]
            text = hint_text(qid, level, values)
            assert not answer, f"{qid} hint {level} shows the answer {reference!r} for {values}: {text}"


def _axis(chip: str, X: int) -> sb.TpuMesh:
    """Problem 03.4's mesh: X chips on a full pod's other axis (v5e, v6e) or on a slice of 4x4 planes."""
    return sb.TpuMesh(chip, X=X, Y=16) if chip in ("v5e", "v6e") else sb.TpuMesh(chip, X=X, Y=4, Z=4)


def test_03_4s_key_is_where_latency_and_bandwidth_meet_on_every_students_axis():
    """The hints exposed this key: it multiplied the latency by the bidirectional bandwidth on every axis, but an
    axis without wraparound (a v5p X of 14, a v6e X of 10) is a line whose bandwidth term is (X - 1)/X · V / W
    one way, so that V was not where the AllGather's two terms meet."""
    p = get_problem("03.4")
    cases = [*_students(p), {"X": 14, "chip": "v5p"}, {"X": 10, "chip": "v6e"}]
    assert any(not _axis(v["chip"], v["X"]).wrap["X"] for v in cases)
    for values in cases:
        gather = sb.all_gather(_axis(values["chip"], values["X"]), "X", p.reference(values))
        assert gather.t_comms == pytest.approx(gather.t_latency, rel=1e-9), values


def test_04_14_and_04_20_count_each_chips_own_block_before_any_communication():
    """The problems ask for the FLOPs of the blocks the sharding leaves each chip; the key took the cheapest
    plan's, which for a small D gathers D first and does the whole contraction (B = 14336, D = 4096)."""
    for qid, chips in (("04.14", lambda v: 1), ("04.20", lambda v: 4 * 8 * v["Z"])):
        p = get_problem(qid)
        extra = {"B": 14336, "D": 4096, "F": 23552, **({"Z": 2} if qid == "04.20" else {})}
        for v in [*_students(p), extra]:
            assert p.reference(v) == 2 * (v["B"] / 4) * (v["D"] / 8) * v["F"] * chips(v), (qid, v)


def test_the_checks_catch_a_number_in_prose_a_wrong_or_unused_formula_and_a_clash():
    prose = FIELD.sub("", FORMULA.sub("", "Twice 8192 bytes on a v5e 4x4 (llama3-70b, bf16) with ⟦B = 2 * D⟧, {D}."))
    assert NUMBER.findall(prose) == ["8192"]
    assert claim("⟦B = 2 * w * D⟧ with ⟦w = sb.units.dtype_bytes('int8')⟧", {"D": 8192}) == 16384
    assert not Comparison(claim("⟦B = 3 * D⟧", {"D": 8192}), 16384, 0.01).ok
    assert claim("⟦w = 3⟧ defined first, ⟦B = w * D⟧ claimed", {"D": 8192}) == 3 * 8192
    with pytest.raises(AssertionError, match="used by no other"):
        claim("⟦B = 2 * D⟧ and ⟦k = 3⟧", {"D": 8192})
    with pytest.raises(AssertionError, match="clash"):
        claim("⟦B = 2 * D⟧ with ⟦D = 3⟧", {"D": 8192})
    with pytest.raises(ValueError, match="name = expression"):
        formulas("⟦2 * D⟧")


def test_a_hint_reads_its_formulas_without_brackets_and_its_fields_filled():
    text = hint_text("01.1", 2)
    assert "⟦" not in text and "⟧" not in text and "{" not in text
    for name, expression in formulas(get_problem("01.1").hints[1]):
        assert f"{name} = {expression}" in text


def test_hints_are_revealed_one_at_a_time(capsys):
    hint("01.1")
    hint("01.1")
    hint("01.1")
    shown = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in shown] == ["01.1, hint 1 of 2", "01.1, hint 2 of 2", "01.1, hint 2 of 2"]
    assert shown[1].endswith(hint_text("01.1", 2)) and shown[0].endswith(hint_text("01.1", 1))


def test_a_named_student_sees_their_own_values_in_a_hint(capsys):
    key = student_key(SECRET, "bob")
    enrol("bob", key)
    values = draw(get_problem("03.4").params, key, "03.4")
    hint("03.4")
    hint("03.4")
    second = capsys.readouterr().out.splitlines()[-1]
    assert second.endswith(hint_text("03.4", 2, values)) and f"X = {values['X']}" in second


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
    last, hints, errors = autograde.records(data)
    assert hints == {"01.1": 2, "01.2": 2, "01.3": 2} and last["01.1"] == ("answer", 1.0) and errors == []
    outcomes = {"01.1": "right", "01.2": "right", "01.4": "right", "01.5": "wrong"}
    possible = {"01.1": 2, "01.2": 1, "01.4": 1, "01.5": 1}
    assert autograde.scored(possible, outcomes, hints, 0.25) == {"01.1": 1.0, "01.2": 0.5, "01.4": 1, "01.5": 0}
    assert autograde.scored(possible, outcomes, hints, 0.0) == {"01.1": 2, "01.2": 1, "01.4": 1, "01.5": 0}


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
    key = autograde.AnswerKey(SECRET)
    values = key.values("alice", ["01.1"])["01.1"]
    reference = get_problem("01.1").reference(values)
    advice = key.advice("01.1", reference * 8, values)
    assert "factor of 8" in advice and advice.count("Hint:") == 1 and f"{reference:.3g}" not in advice
