"""Per-student variants: every student of a course has their own inputs, the grader recomputes each student's
key from the course secret outside the sandbox, and no notebook can earn marks with anyone else's values."""

from __future__ import annotations

import csv
import itertools
import json
import math
import random
from pathlib import Path

import pytest

import scalebook as sb
from scalebook.compare import ExpectationError
from scalebook.course import variants
from scalebook.course.answers import check
from scalebook.course.grader import autograde
from scalebook.course.inputs import Param, vary
from scalebook.course.key import get_problem, list_problems
from scalebook.course.variants import canonical, check_key, draw, enrol, student_key

ROOT = Path(__file__).resolve().parents[2]
SECRET = "course secret of CS 599, spring 2027"
VARIED = [p for p in list_problems() if p.params]
ALL = list_problems()


@pytest.fixture(autouse=True)
def _self_study(monkeypatch):
    """Each test starts in self-study (no student named, no course secret in the environment)."""
    monkeypatch.delenv(variants.SECRET, raising=False)
    monkeypatch.delenv(variants.VARIANT, raising=False)
    monkeypatch.delenv(variants.COURSE, raising=False)
    enrol(None)
    yield
    enrol(None)


def test_a_varied_default_is_the_book_value_to_any_code():
    x, n, chip = vary(3e12, 1e12, 1e13), vary(4096, 1024, 8192, step=1024), vary("v6e", choices=("v5e", "v6e"))
    assert x == 3e12 and x * 2 == 6e12 and n // 2 == 2048 and chip.upper() == "V6E" and isinstance(n, int)


@pytest.mark.parametrize("bad", [
    lambda: vary(3.0, 4.0, 5.0), lambda: vary(3.0, 5.0, 1.0), lambda: vary("v6e", choices=("v5e",)),
    lambda: vary(4, 1, 8, step=0), lambda: vary(True, 0, 1), lambda: vary(3.0),
])
def test_a_bad_range_is_refused_naming_it(bad):
    with pytest.raises(ValueError, match="book|step|choices|low"):
        bad()


def test_the_key_is_an_hmac_of_the_canonical_name():
    assert student_key(SECRET, "Alice ") == student_key(SECRET, "alice") != student_key(SECRET, "bob")
    assert student_key(SECRET, "alice") != student_key(SECRET + "!", "alice") and len(student_key("s", "a")) == 33
    with pytest.raises(ValueError, match="student"):
        canonical("  ")
    with pytest.raises(ValueError, match="secret"):
        student_key("", "alice")


def test_most_problems_have_varied_inputs():
    assert len(VARIED) >= 0.9 * len(ALL), f"{len(VARIED)} of {len(ALL)} problems vary"


def test_every_draw_is_in_range():
    rng = random.Random(0)
    for p in VARIED:
        for _ in range(40):
            for param in p.params:
                assert param.holds(param.draw(rng)), (p.qid, param)


@pytest.mark.parametrize("qid", [p.qid for p in VARIED])
def test_every_variant_has_a_finite_answer_that_moves_with_its_inputs(qid):
    p = get_problem(qid)
    book = p.reference()
    answers = []
    for seed in range(12):
        values = draw(p.params, student_key(SECRET, f"student {seed}"), qid)
        assert all(param.holds(values[param.name]) for param in p.params)
        answer = p.reference(values)
        numbers = answer if isinstance(answer, (list, tuple)) else [answer]
        assert all(isinstance(x, str) or math.isfinite(float(x)) for x in numbers), (values, answer)
        answers.append(json.dumps(answer, default=str))
    assert len(set(answers)) > 1, f"{qid}: 12 students' values all give the book's answer {book!r}"


def test_two_students_see_different_values_in_nearly_every_problem():
    alice, bob = student_key(SECRET, "alice"), student_key(SECRET, "bob")
    differ = [p.qid for p in VARIED if draw(p.params, alice, p.qid) != draw(p.params, bob, p.qid)]
    assert len(differ) >= 0.9 * len(VARIED), f"only {len(differ)} of {len(VARIED)} differ"


def test_each_student_is_right_with_their_own_answers_and_wrong_with_the_others():
    key = autograde.AnswerKey(SECRET)
    qids = [p.qid for p in VARIED]
    mine, theirs = key.values("alice", qids), key.values("bob", qids)
    moved = 0
    for p in VARIED:
        own, other = p.reference(mine[p.qid]), p.reference(theirs[p.qid])
        assert key.judge(p.qid, own, mine[p.qid]) == "right"
        moved += key.judge(p.qid, other, mine[p.qid]) == "wrong"
    assert moved >= 0.9 * len(VARIED), f"bob's answers pass for alice in {len(VARIED) - moved} problems"


def test_without_a_secret_everyone_has_the_books_values():
    key = autograde.AnswerKey()
    assert key.values("alice", ["01.1"]) == key.values("bob", ["01.1"]) == {
        "01.1": {p.name: p.book for p in get_problem("01.1").params}}


def test_sb_problem_shows_the_named_students_values(monkeypatch):
    qid = VARIED[0].qid
    book = variants.problem(qid)
    assert book.student is None and book.values == {p.name: p.book for p in VARIED[0].params}
    enrol("alice", student_key(SECRET, "alice"))
    mine = variants.problem(qid)
    assert mine.student == "alice" and mine.values == draw(VARIED[0].params, student_key(SECRET, "alice"), qid)
    assert "alice's own values" in str(mine) and getattr(mine, VARIED[0].params[0].name) == mine.values[
        VARIED[0].params[0].name]
    monkeypatch.setenv(variants.SECRET, SECRET)
    enrol("alice")
    assert variants.problem(qid).values == mine.values
    with pytest.raises(ValueError, match="key 'not a key' is mistyped"):
        enrol("alice", "not a key")


def test_under_the_grader_the_sandboxs_variant_wins_over_what_the_notebook_claims(monkeypatch):
    qid = VARIED[0].qid
    monkeypatch.setenv(variants.VARIANT, json.dumps({"student": "alice", "values": {qid: {"x": 1}}}))
    enrol("bob", student_key(SECRET, "bob"))
    assert variants.enrolled() == "alice" and variants.problem(qid).values == {"x": 1}


def test_in_a_course_a_wrong_answer_never_shows_the_expected_value():
    p = get_problem("01.1")
    enrol("alice", student_key(SECRET, "alice"))
    reference = p.reference(draw(p.params, student_key(SECRET, "alice"), "01.1"))
    assert check("01.1", reference).ok
    with pytest.raises(ExpectationError) as wrong:
        check("01.1", reference * 8)
    message = str(wrong.value)
    assert "too large by a factor of 8: bits against bytes" in message and "sb.hint('01.1')" in message
    assert f"{reference:.3g}"[:4] not in message and "expected" not in message
    enrol(None)
    with pytest.raises(ExpectationError, match="expected"):
        check("01.1", reference * 8 if reference != p.reference() else 1.0)


def test_a_forged_seed_or_student_in_a_record_is_ignored():
    key = autograde.AnswerKey(SECRET)
    qids = [p.qid for p in VARIED[:20]]
    alice, bob = key.values("alice", qids), key.values("bob", qids)
    lines = [json.dumps({"qid": q, "answer": get_problem(q).reference(bob[q]), "student": "bob",
                         "seed": student_key(SECRET, "bob"), "values": bob[q]}) for q in qids]
    outcomes = autograde.read_answers("\n".join(lines).encode(), dict.fromkeys(qids, 1),
                                      lambda q, a: key.judge(q, a, alice[q]))
    differ = [q for q in qids if key.judge(q, get_problem(q).reference(bob[q]), alice[q]) == "wrong"]
    assert len(differ) >= 0.7 * len(qids) and all(outcomes[q] == "wrong" for q in differ)


def test_param_draws_respect_steps_and_choices():
    rng = random.Random(1)
    n = Param("n", 4096, 1024, 8192, 1024)
    chip = Param("chip", "v6e", choices=("v5e", "v6e", "v5p"))
    x = Param("x", 3e12, 1e12, 1e13)
    assert {n.draw(rng) for _ in range(200)} == {1024 * k for k in range(1, 9)}
    assert {chip.draw(rng) for _ in range(50)} == {"v5e", "v6e", "v5p"}
    assert all(float(f"{v:.2g}") == v and 1e12 <= v <= 1e13 for v in (x.draw(rng) for _ in range(200)))


@pytest.mark.slow  # grades a class's notebooks in kernels
def test_a_class_with_variants_earns_only_its_own_answers(tmp_path):
    """Alice answers from her own values; Carol copies Alice's numbers, names herself Alice with Alice's key,
    forges the variant in her environment and writes a record claiming Alice's seed: she earns nothing."""
    import hostile

    from scalebook.course.grader import sandbox
    from scalebook.course.grader.autograde import grade

    qids = ["01.1", "01.3", "01.7", "01.8"]
    key = autograde.AnswerKey(SECRET)
    alice_values = key.values("alice", qids)
    alice_answers = {q: get_problem(q).reference(alice_values[q]) for q in qids}
    honest_cells = [
        "import scalebook as sb",
        *[f"sb.check({q!r}, {alice_answers[q]!r})" for q in qids],
    ]
    forged = json.dumps({"student": "alice", "values": alice_values})
    cheat_cells = [
        "import os, json\nimport scalebook as sb",
        f"sb.setup(quiet=True, student='alice', key={student_key(SECRET, 'alice')!r})",
        f"os.environ[{variants.VARIANT!r}] = {forged!r}",
        *[f"sb.check({q!r}, {alice_answers[q]!r})" for q in qids],
        "import os, json\nopen(os.environ['SCALEBOOK_GRADE_ANSWERS'], 'a').write(json.dumps({'qid': '01.1', "
        f"'answer': {alice_answers['01.1']!r}, 'student': 'alice', "
        f"'seed': {student_key(SECRET, 'alice')!r}}}) + '\\n')",
    ]
    own_cells = ["import scalebook as sb", *[
        f"v = sb.problem({q!r}).values\nsb.check({q!r}, {get_problem(q).reference(key.values('dan', [q])[q])!r})"
        for q in qids]]
    subs = tmp_path / "subs"
    subs.mkdir()
    for name, cells in (("alice", honest_cells), ("carol", cheat_cells), ("dan", own_cells)):
        (subs / f"{name}__01_rooflines.ipynb").write_text(hostile.notebook(*cells))
    grade(subs, tmp_path / "g.csv", root=ROOT, sandboxed=sandbox.available() is None, secret=SECRET, jobs=2)
    with open(tmp_path / "g.csv", newline="", encoding="utf-8") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert all(rows[s]["status"] == "graded" for s in rows)
    assert [rows["alice"][q] for q in qids] == [rows["dan"][q] for q in qids] == ["1", "2", "2", "2"]
    assert [rows["carol"][q] for q in qids] == ["0", "0", "0", "0"]
    feedback = (tmp_path / "feedback").glob("carol-*.md")
    text = next(feedback).read_text()
    carol_01_1 = get_problem("01.1").reference(key.values("carol", ["01.1"])["01.1"])
    assert f"{carol_01_1:.4g}" not in text and "alice" not in text.lower()
    assert text.count("✗ wrong — right for another key") == len(qids)  # she copied a classmate's numbers


# The check character: Damm's algorithm (https://en.wikipedia.org/wiki/Damm_algorithm) needs a quasigroup that is
# totally anti-symmetric, (c*x)*y == (c*y)*x only when x == y, with a zero diagonal; then every single changed
# character and every swap of two neighbours (the check character included) moves the final interim off 0.
def _star(x: int, y: int) -> int:
    """The key's quasigroup, written out independently of the module: 2 (x XOR y) in GF(16) mod x^4 + x + 1."""
    z = x ^ y
    return ((z << 1) ^ 0b10011) & 0xF if z & 0b1000 else z << 1


def test_the_check_characters_quasigroup_is_a_totally_anti_symmetric_latin_square_with_a_zero_diagonal():
    digits = range(16)
    assert all(sorted(_star(x, y) for y in digits) == list(digits) == sorted(_star(y, x) for y in digits)
               for x in digits)
    assert all(_star(x, x) == 0 for x in digits)
    assert all(_star(_star(c, x), y) != _star(_star(c, y), x) for c, x, y in itertools.product(digits, repeat=3)
               if x != y)


def test_an_issued_keys_check_character_folds_it_to_zero():
    for n in range(200):
        interim = 0
        for c in student_key(SECRET, f"student {n}"):
            interim = _star(interim, int(c, 16))
        assert interim == 0


def test_every_single_changed_character_and_every_swap_of_neighbours_is_refused():
    """Exhaustive over a sample of 40 keys: 33 positions x 15 wrong characters, and all 32 neighbour swaps."""
    for n in range(40):
        key = student_key(SECRET, f"student {n}")
        assert check_key(key) == key
        for i, wrong in itertools.product(range(len(key)), "0123456789abcdef"):
            if wrong != key[i]:
                with pytest.raises(ValueError, match="is mistyped: its check character does not match"):
                    check_key(key[:i] + wrong + key[i + 1:])
        for i in range(len(key) - 1):
            if key[i] != key[i + 1]:
                with pytest.raises(ValueError, match="is mistyped"):
                    check_key(key[:i] + key[i + 1] + key[i] + key[i + 2:])


def test_a_key_reads_the_same_in_capitals_spaced_or_hyphenated():
    key = student_key(SECRET, "alice")
    grouped = " ".join(key[i:i + 4] for i in range(0, len(key), 4))
    assert check_key(key.upper()) == check_key(f"  {grouped} ") == check_key("-".join(grouped.split())) == key


@pytest.mark.parametrize("bad, slip", [
    (lambda k: k[:-1], "has 32 characters, not 33"),
    (lambda k: k + "0", "has 34 characters, not 33"),
    (lambda k: k[:5] + "o" + k[6:], "'o' \\(character 6\\) is not one of 0-9, a-f"),
    (lambda k: int(k, 16), "must be the text your teacher issued"),
])
def test_a_malformed_key_is_refused_naming_it_and_the_slip(bad, slip):
    key = student_key(SECRET, "alice")
    with pytest.raises(ValueError, match=slip) as refused:
        check_key(bad(key))
    assert str(bad(key))[:10] in str(refused.value) and ("teacher" in str(refused.value))


def test_sb_setup_refuses_a_mistyped_key_before_anything_else_runs():
    key = student_key(SECRET, "alice")
    swapped = key[:3] + key[4] + key[3] + key[5:] if key[3] != key[4] else key[:3] + "f0"[key[3] == "f"] + key[4:]
    with pytest.raises(ValueError, match=f"key '{swapped}' is mistyped"):
        sb.setup(quiet=True, student="alice", key=swapped)
    assert variants.enrolled() is None and variants.key_in_session() is None


def test_a_key_issued_to_someone_else_is_refused_where_the_secret_is_known(monkeypatch):
    monkeypatch.setenv(variants.SECRET, SECRET)
    with pytest.raises(ValueError, match="was not issued to student='alice'"):
        enrol("alice", student_key(SECRET, "bob"))
    enrol("alice", student_key(SECRET, "alice"))
    assert variants.key_in_session() == student_key(SECRET, "alice")


@pytest.mark.parametrize("course", [(variants.COURSE, "cs599-spring27"), (variants.SECRET, SECRET)])
def test_in_a_course_a_student_without_a_key_is_refused_or_given_theirs(monkeypatch, course):
    monkeypatch.setenv(*course)
    assert variants.in_course()
    if course[0] == variants.COURSE:
        with pytest.raises(ValueError, match="student='alice' needs key=: this is a course .*cs599-spring27.*"
                                             "sb.setup\\(student='alice', key='...'\\)"):
            sb.setup(quiet=True, student="alice")
        assert variants.enrolled() is None
    else:  # the teacher's own machine or a hub that holds the secret derives the key
        enrol("alice")
        assert variants.key_in_session() == student_key(SECRET, "alice")


def test_outside_a_course_a_student_without_a_key_works_on_the_books_values_and_is_told_so():
    assert not variants.in_course()
    said = enrol("alice")
    assert "no key given" in said and "book's values, not numbers of your own" in said
    shown = str(variants.problem("05.15"))
    assert "with the book's values" in shown and "alice has no key" in shown and "own values" not in shown
    assert variants.problem("05.15").own is False


def test_sb_problem_restates_the_inputs_marking_each_that_differs_from_the_text():
    qid = next(p.qid for p in VARIED if all(
        v != p_.book for p_, v in zip(p.params, draw(p.params, student_key(SECRET, "alice"), p.qid).values())))
    enrol("alice", student_key(SECRET, "alice"))
    mine = variants.problem(qid)
    lines = str(mine).splitlines()
    assert lines[0].startswith(f"Problem {qid}, ") and "alice's own values (use these, not the numbers in the text)" \
        in lines[0]
    for param, line in zip(get_problem(qid).params, lines[1:], strict=True):
        assert line.split("=")[0].strip() == param.name and "(the text says" in line
        assert variants.shown(param.book) in line.split("(the text says")[1]


def test_under_the_grader_setup_is_ignored_even_with_a_mistyped_key(monkeypatch):
    """The grader names the student; a notebook's own setup line must not crash the graded run."""
    monkeypatch.setenv(variants.VARIANT, json.dumps({"student": "alice", "values": {}}))
    monkeypatch.setenv(variants.COURSE, "cs599")
    assert enrol("alice", "0000") == "" and enrol("bob") == ""
    assert variants.enrolled() == "alice"
