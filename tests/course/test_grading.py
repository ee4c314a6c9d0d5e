"""expect / check: immediate ✓/✗ feedback, compact in a page, recorded for the chapter's table of checked numbers;
solution stripping for the student versions."""

import re

import pytest

import scalebook as sb
from scalebook.book import checks as grading
from scalebook.compare import Comparison, ExpectationError
from scalebook.course import answers, variants
from scalebook.course.answers import agrees
from scalebook.course.grader import autograde
from scalebook.course.handouts import strip_solutions
from scalebook.course.key import get_problem, list_problems
from scalebook.course.variants import student_key


def test_expect_passes_within_tolerance_and_shows_a_tick():
    result = sb.expect(250.25, 250, rtol=0.01, source="ch. 1")
    assert isinstance(result, Comparison) and result.ok
    assert str(result).startswith("✓") and "ch. 1" in str(result)
    assert "✓" in result._repr_html_()


def test_expect_raises_with_both_numbers_when_it_drifts():
    with pytest.raises(ExpectationError, match=r"✗ 300 vs published 250 \(off by 20.0%"):
        sb.expect(300, 250, rtol=0.05)


def test_expect_formats_units_and_small_tolerances():
    shown = str(sb.expect(2.0226e-3, 2.02e-3, rtol=0.005, unit="s"))
    assert "2.023 ms vs published 2.02 ms" in shown and "tolerance 0.5%" in shown
    exact = str(sb.expect(2.0, 2.0 * (1 + 1e-12), rtol=1e-9))
    assert "off by < 1e-4%, tolerance < 1e-4%" in exact
    assert "off by 0%, tolerance 0%" in str(sb.expect(560, 560, rtol=0))


def test_expect_compares_strings_exactly():
    assert sb.expect("compute", "compute").ok
    with pytest.raises(ExpectationError):
        sb.expect("memory", "compute")


def test_expect_rejects_a_negative_tolerance():
    with pytest.raises(ValueError, match="rtol"):
        sb.expect(1, 1, rtol=-0.1)


def test_check_unknown_problem_names_close_ids():
    with pytest.raises(KeyError, match="qid='99.9'"):
        sb.check("99.9", 1.0)


SOLUTION = """\
# Problem 1

```{code-cell} ipython3
# BEGIN SOLUTION
chip = sb.get_chip("v5e")
answer = sb.roofline.critical_batch(chip)
# END SOLUTION
sb.check("01.1", answer)
```

<!-- BEGIN SOLUTION -->
Because the weights dominate the bytes, $B > C/W$.
<!-- END SOLUTION -->

```{code-cell} ipython3
# BEGIN SOLUTION
print("hello")
# END SOLUTION
```
"""


def test_strip_solutions_leaves_stubs_for_each_assigned_name():
    student = strip_solutions(SOLUTION)
    assert "chip = ...  # YOUR CODE HERE" in student
    assert "answer = ...  # YOUR CODE HERE" in student
    assert "critical_batch" not in student and "B > C/W" not in student
    assert 'sb.check("01.1", answer)' in student
    assert "*Write your reasoning here.*" in student
    assert student.count("# YOUR CODE HERE") == 3


def test_strip_solutions_splits_tuple_assignments_so_the_stub_runs():
    student = strip_solutions("```{code-cell} ipython3\n# BEGIN SOLUTION\na, b = 1, 2\n# END SOLUTION\n```\n")
    assert "a = ...  # YOUR CODE HERE" in student and "b = ...  # YOUR CODE HERE" in student
    exec(student.split("\n", 1)[1].rsplit("```", 1)[0])  # the stub itself executes


def test_strip_solutions_reports_an_unclosed_block():
    with pytest.raises(ValueError, match="line 1 has no matching END SOLUTION"):
        strip_solutions("# BEGIN SOLUTION\nx = 1\n")


def test_expect_compares_sequences_item_by_item_within_rtol():
    assert sb.expect([1.0, 2.01], [1.0, 2.0], rtol=0.01).ok
    assert sb.expect(("memory", 8.6e-6), ("memory", 8.58e-6), rtol=0.01).ok
    with pytest.raises(sb.grading.ExpectationError):
        sb.expect([1.0, 2.1], [1.0, 2.0], rtol=0.01)
    with pytest.raises(sb.grading.ExpectationError):
        sb.expect([1.0], [1.0, 2.0])
    with pytest.raises(sb.grading.ExpectationError):
        sb.expect(("compute",), ("memory",))


def test_expect_renders_a_compact_mark_with_the_numbers_on_hover_only():
    check = sb.expect(470e-6, 470e-6, rtol=0.01, source="ch. 1, Q5", unit="s")
    page = check._repr_html_()
    visible = re.sub(r"<[^>]*>", "", page)  # the text a reader sees, tags (and their title attribute) dropped
    assert visible == "✓" and "470" not in visible
    assert 'title="Checked against the published number: 470 µs vs published 470 µs' in page
    assert str(check) == "✓ 470 µs vs published 470 µs (off by 0%, tolerance 1.0%) — ch. 1, Q5"


def test_a_regression_check_is_named_so_and_never_called_published():
    check = sb.expect(40.4e-6, 40.38e-6, rtol=0.01, source="the collective matmul", unit="s", kind="regression")
    assert check.kind == "regression" and "published" not in str(check) and "published" not in check._repr_html_()
    assert str(check).startswith("✓ 40.4 µs vs recorded 40.38 µs")
    assert re.sub(r"<[^>]*>", "", check._repr_html_()) == "✓ regression"
    with pytest.raises(ValueError, match=r"kind='regresion' is not one of \['published', 'regression'\]"):
        sb.expect(1, 1, kind="regresion")


def test_a_mismatch_still_raises_whatever_the_kind():
    with pytest.raises(ExpectationError, match=r"✗ 51 vs recorded 50 \(off by 2.0%"):
        sb.expect(51, 50, rtol=0.01, kind="regression")


def test_checked_numbers_lists_every_passed_check_in_a_folded_table():
    before = len(grading.checked_numbers())
    sb.expect(250.2, 250, rtol=0.01, source="ch. 1, Q1: critical batch")
    sb.expect(0.47, 0.47, rtol=0.02, source="share hidden", kind="regression")
    with pytest.raises(ExpectationError):
        sb.expect(1, 2, source="a failed check is not recorded")
    report = grading.checked_numbers()
    assert len(report) == before + 2 and report.checks[-1].source == "share hidden"
    assert [row["kind"] for row in report.table.rows[-2:]] == ["published", "regression"]
    assert report.table.rows[-2]["off by"] == "0.08%" and report.table.rows[-2]["reference"] == "250"
    page = report._repr_html_()
    assert page.startswith("<details class='sb-checked-numbers'><summary>Checked numbers: ")
    assert page.count("<tr>") == len(report) + 1  # every check, none folded away a second time
    assert "ch. 1, Q1: critical batch" in str(report)



# A wrong answer that is right for other numbers: the grader's feedback and the student's `sb.check` say whose.
COURSE_SECRET = "course secret of CS 599, spring 2027"


def _apart(qid: str, key: autograde.AnswerKey) -> bool:
    """Whether alice's, bob's and the book's answers to `qid` are each wrong for the other two."""
    answers = {who: get_problem(qid).reference(values) for who, values in
               (("alice", key.values("alice", [qid])[qid]), ("bob", key.values("bob", [qid])[qid]),
                ("book", key.values(None, [qid])[qid]))}
    return all(not agrees(answers[a], answers[b], get_problem(qid).rtol) for a in answers for b in answers if a != b)


@pytest.fixture
def course_key() -> tuple[autograde.AnswerKey, str]:
    """The grader's key for a class of alice, bob and carol, and a problem whose three answers all differ."""
    key = autograde.AnswerKey(COURSE_SECRET, ["alice", "bob", "carol"])
    qid = next(p.qid for p in list_problems() if p.params and _apart(p.qid, key))
    return key, qid


def test_the_grader_says_a_wrong_answer_is_right_for_the_books_values(course_key):
    key, qid = course_key
    mine = key.values("alice", [qid])[qid]
    book_answer = get_problem(qid).reference()
    assert key.judge(qid, book_answer, mine) == "wrong"
    advice = key.advice(qid, book_answer, mine)
    assert advice.startswith("right for the book's values, not for yours") and f"sb.problem({qid!r})" in advice


def test_the_grader_says_a_wrong_answer_is_right_for_another_key_without_naming_it(course_key):
    key, qid = course_key
    mine, bobs = key.values("alice", [qid])[qid], key.values("bob", [qid])[qid]
    advice = key.advice(qid, get_problem(qid).reference(bobs), mine)
    assert advice.startswith("right for another key's values, not for yours") and "bob" not in advice


def test_a_plain_wrong_answer_gets_neither_flag(course_key):
    key, qid = course_key
    mine = key.values("alice", [qid])[qid]
    advice = key.advice(qid, 7 * get_problem(qid).reference(mine) + 1, mine)
    assert "right for" not in advice


def test_without_a_secret_the_books_values_are_everyones_so_nothing_is_flagged():
    key = autograde.AnswerKey(None, ["alice", "bob"])
    qid = next(p.qid for p in list_problems() if p.params)
    assert key.classmates == () and key.values("alice", [qid]) == key.values(None, [qid])
    assert key.judge(qid, get_problem(qid).reference(), key.values("alice", [qid])[qid]) == "right"


def test_the_students_check_says_right_for_the_books_values_not_yours(course_key, monkeypatch):
    key, qid = course_key
    monkeypatch.delenv(variants.VARIANT, raising=False)
    monkeypatch.delenv(answers.GRADE_ANSWERS, raising=False)
    variants.enrol("alice", student_key(COURSE_SECRET, "alice"))
    try:
        with pytest.raises(ExpectationError, match=f"✗ {re.escape(qid)}: right for the book's values, not for yours"):
            sb.check(qid, get_problem(qid).reference())
        with pytest.raises(ExpectationError, match="not within .* of the answer for your values"):
            sb.check(qid, get_problem(qid).reference(key.values("bob", [qid])[qid]))
        variants.enrol("alice")  # outside a course, no key: the book's values, and the message says so
        with pytest.raises(ExpectationError, match="of the answer for the book's values \\(you have no key\\)"):
            sb.check(qid, 7 * get_problem(qid).reference() + 1)
    finally:
        variants.enrol(None)
