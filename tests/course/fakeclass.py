"""A class's gradebook made by the real grader (`autograde.grade`) with each notebook's run faked: a notebook here
is JSON naming the questions its student answers right (and the reasoning it writes), so a test sets every score
without starting a kernel."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from scalebook.course.grader import autograde

ROOT = Path(__file__).resolve().parents[2]


def notebook(right: Iterable[str] = (), reasoning: dict[str, str] | None = None) -> str:
    """A notebook whose faked run answers the questions `right` right, with a reasoning cell after the check of each
    question of `reasoning` ({qid: text})."""
    cells: list[dict[str, Any]] = []
    for qid, text in (reasoning or {}).items():
        cells += [{"cell_type": "code", "source": f'sb.check("{qid}", x)', "metadata": {}, "outputs": [],
                   "execution_count": None},
                  {"cell_type": "markdown", "source": text, "metadata": {}}]
    return json.dumps({"cells": cells, "metadata": {"right": list(right)}, "nbformat": 4, "nbformat_minor": 5})


def _run(content: bytes, *args: Any) -> tuple[str, bytes, str]:
    """Stands for `autograde.run_notebook`: the answer records of the notebook `content` describes."""
    right = json.loads(content)["metadata"]["right"]
    return "graded", b"".join(json.dumps({"qid": q, "answer": "right"}).encode() + b"\n" for q in right), ""


def fake_runs(monkeypatch: Any) -> None:
    """Grade `notebook`s without a kernel: their runs faked, an answer 'right' judged right."""
    monkeypatch.setattr(autograde, "run_notebook", _run)
    monkeypatch.setattr(autograde.AnswerKey, "judge",
                        lambda self, qid, answer, values=None: "right" if answer == "right" else "wrong")


def submissions(folder: Path, files: dict[str, str]) -> Path:
    """The folder `folder` holding `files` ({file name: text}), as students upload them."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder
