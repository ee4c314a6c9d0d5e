"""The one-page sheet of chapter 11: generated from the package, it carries the book's headline numbers."""

import pytest

import scalebook as sb


def test_constants_carry_the_books_thresholds():
    """The H100's critical batch is the book number chapter 1 shows (read, not typed); the v5e's 240, the H100's
    2,475 DP tokens per chip and F/2200 TP bound are asserted on these same rows by chapter 11 (nbval)."""
    rows = {row["chip"]: row for row in sb.cheatsheet.constants().rows}
    sb.expect(rows["NVIDIA H100"]["critical batch"], sb.published("01_rooflines.q5_h100_critical_batch"))
    sb.expect(rows["NVIDIA B200"]["DP tokens/chip"], sb.published("12_gpus.q5_1_b200_dp_tokens"))


def test_every_rule_has_a_worked_value():
    rows = sb.cheatsheet.formulas().rows
    assert len(rows) >= 10 and all(row["formula"] and row["example"] for row in rows)
    by_rule = {row["rule"]: row["example"] for row in rows}
    assert "850" in by_rule["DP / FSDP hide their traffic above"]  # ch. 5: v5p FSDP with 3 axes
    assert "113" in by_rule["FSDP + TP at the best split"]  # ch. 5: LLaMA 3-70B


def test_bad_chip_names_are_reported():
    with pytest.raises(KeyError, match="closest"):
        sb.cheatsheet.constants(["h1000"])
