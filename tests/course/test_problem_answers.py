"""Every problem set's answer key against answers worked by hand and against the book's printed answers, from one
table (tests/course/data/problem_answers.toml): every registered problem has a row, and every row holds."""

from __future__ import annotations

import math
import tomllib
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import scalebook as sb
from scalebook.compare import ExpectationError
from scalebook.course.key import get_problem, list_problems

TABLE = tomllib.loads((Path(__file__).parent / "data" / "problem_answers.toml").read_text(encoding="utf-8"))
ANSWERS: dict[str, dict[str, Any]] = TABLE["answers"]
REGISTERED = [p.qid for p in list_problems()]
PUBLISHED = [qid for qid, row in ANSWERS.items() if "published" in row]
EXACT = [qid for qid, row in ANSWERS.items() if row.get("exact")]


def _set(qid: str) -> dict[str, Any]:
    """The [sets] table of a problem's set ("01" for "01.7")."""
    return TABLE["sets"][qid.split(".")[0]]


@cache
def _names(prefix: str) -> dict[str, Any]:
    """The names a set's hand answers use: math, Fraction, the package, and what its prelude defines."""
    names: dict[str, Any] = {"math": math, "Fraction": Fraction, "sb": sb}
    exec(TABLE["sets"][prefix].get("prelude", ""), names)
    return names


def _value(expression: str | float, prefix: str) -> float:
    """A number of the table: a TOML number as it is, a string as a Python expression over the set's names."""
    return eval(expression, _names(prefix)) if isinstance(expression, str) else expression


def test_every_registered_problem_has_a_row_and_every_row_a_problem() -> None:
    assert sorted(ANSWERS) == sorted(REGISTERED), set(ANSWERS) ^ set(REGISTERED)
    assert {qid.split(".")[0] for qid in ANSWERS} == set(TABLE["sets"])
    assert all(row.get("why") or _set(qid).get("hand_source") for qid, row in ANSWERS.items())


@pytest.mark.parametrize("qid", REGISTERED)
def test_the_answer_key_matches_the_hand_worked_answer(qid: str) -> None:
    hand = _value(ANSWERS[qid]["hand"], qid.split(".")[0])
    assert get_problem(qid).reference() == pytest.approx(hand, rel=_set(qid)["rtol"])


@pytest.mark.parametrize("qid", PUBLISHED)
def test_the_answer_key_matches_the_book_at_its_printed_rounding(qid: str) -> None:
    row = ANSWERS[qid]
    assert _set(qid)["book_source"]
    published = _value(row["published"], qid.split(".")[0])
    assert get_problem(qid).reference() == pytest.approx(published, rel=row["published_rtol"], abs=0)


@pytest.mark.parametrize("qid", EXACT)
def test_counts_are_graded_exactly(qid: str) -> None:
    assert get_problem(qid).rtol == 0.0
    with pytest.raises(ExpectationError):
        sb.check(qid, get_problem(qid).reference() + 1)


def test_hand_counts_match_the_published_model_sizes() -> None:
    """Mistral 7B is "7.24B" on its model card; the LLaMA 3 names round 8.03e9 and 405.9e9 (set 6's prelude)."""
    assert _value(ANSWERS["06.1"]["hand"], "06") == pytest.approx(7.24e9, rel=1e-3)
    assert _names("06")["P8"] == pytest.approx(8.03e9, rel=1e-3)
    assert _names("06")["P405"] == pytest.approx(405.9e9, rel=1e-3)


def test_the_plans_run_the_collectives_problem_set_3_describes() -> None:
    v6e = sb.TpuMesh("v6e", X=16, Y=16)
    assert sb.sharded_matmul("X[B, D] @ W[D_X, F] -> Y[B, F]", v6e, B=2048, D=8192, F=32768).kinds == ["all_reduce"]
    assert sb.sharded_matmul("X[B, D] @ W[D_X, F] -> Y[B, F]", v6e, B=8192, D=8192, F=32768).kinds == ["all_gather"]
    v5e = sb.TpuMesh("v5e", X=16, Y=16)
    case4 = sb.sharded_matmul("A[I_X, J] @ B[J, K_X] -> C[I_X, K]", v5e, I=4096, J=8192, K=16384)
    assert case4.case == 4 and case4.kinds == ["all_gather", "all_to_all"]
    cube = sb.TpuMesh("v5p", X=4, Y=4, Z=4)
    fsdp = sb.sharded_matmul("In[B_XYZ, D] @ W[D_XYZ, F] -> Out[B_XYZ, F]", cube, B=65536, D=8192, F=28672)
    assert fsdp.kinds == ["all_gather"] and fsdp.t_math > fsdp.t_comms


def test_problem_set_3s_small_gather_is_latency_bound() -> None:
    mesh = sb.TpuMesh("v6e", X=16, Y=16)
    assert sb.all_gather(mesh, "X", 256 * 128 * 2).bound == "latency"
    assert sb.all_gather(mesh, "X", 2 * get_problem("03.4").reference()).bound == "comms"
