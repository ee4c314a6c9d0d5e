"""The process a sandbox runs for one notebook (`runner`): every code cell in one IPython shell, a limit per cell
kept by a parent the notebook did not start, each crashed cell's error line sent to the grader; JAX left unstarted
until a cell uses it (`runtime.setup` under `JAX_PLATFORMS=cpu`, as in the sandbox); and as many notebooks at once
as the grader may use CPUs. How fast a class grades is measured by benchmarks/grade_class.py, not tested."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import hostile
import pytest
from speed import assert_stopped

from scalebook.cli.command import build_parser
from scalebook.course.answers import GRADE_ANSWERS
from scalebook.course.grader import autograde, runner, submissions


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "submission.ipynb"
    path.write_text(text)
    return str(path)


def test_a_notebook_is_read_as_json_its_code_cells_numbered_among_all_cells(tmp_path):
    nb = json.loads(hostile.notebook("a = 1", "b = 2"))
    nb["cells"].insert(1, {"cell_type": "markdown", "metadata": {}, "source": ["# title\n", "text"]})
    nb["cells"][2]["source"] = ["b = 2\n", "c = 3"]
    assert runner.read_notebook(_write(tmp_path, json.dumps(nb))) == (0, "", [(1, "a = 1"), (3, "b = 2\nc = 3")])


def test_a_cell_tagged_skip_execution_is_not_run(tmp_path):
    """nbclient's default, which the runner keeps: `NotebookClient.skip_cells_with_tag = "skip-execution"`
    (https://nbclient.readthedocs.io/en/latest/reference/config_options.html)."""
    nb = json.loads(hostile.notebook("a = 1", "raise SystemExit", "b = 2"))
    nb["cells"][1]["metadata"]["tags"] = ["skip-execution"]
    assert runner.read_notebook(_write(tmp_path, json.dumps(nb)))[2] == [(1, "a = 1"), (3, "b = 2")]


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"cells": 3}', '{"cells": [7]}',
                                  '{"cells": [{"cell_type": "code", "source": 7}]}', '{"nbformat": 4}'])
def test_what_is_not_a_notebook_is_refused_unrun(tmp_path, text):
    assert runner.read_notebook(_write(tmp_path, text)) == (5, "not a readable notebook", [])


def test_another_language_is_named_on_one_ascii_line(tmp_path):
    text = hostile.notebook('println("hi")', kernel="julia\u202e-1.9\n", language="julia")
    assert runner.read_notebook(_write(tmp_path, text)) == (6, "julia\\u202e-1.9\\n", [])


def _run(tmp_path: Path, *cells: str, limit: float = 60) -> tuple[int, list[dict], str, float]:
    """Run `cells` as a notebook through `python -m runner`: (exit code, records sent, its output, seconds)."""
    answers = tmp_path / "answers.jsonl"
    answers.touch()
    env = {**os.environ, GRADE_ANSWERS: str(answers), "JAX_PLATFORMS": "cpu", "HOME": str(tmp_path)}
    start = time.monotonic()
    ran = subprocess.run([sys.executable, "-m", runner.__name__, _write(tmp_path, hostile.notebook(*cells)),
                          str(limit)], env=env, capture_output=True, text=True, timeout=120)
    records = [json.loads(line) for line in answers.read_text().splitlines()]
    return ran.returncode, records, ran.stdout + ran.stderr, time.monotonic() - start


@pytest.mark.slow
def test_every_cell_runs_errors_allowed_and_each_error_line_is_sent(tmp_path):
    code, records, output, _ = _run(tmp_path, "x = 1", "1 / 0", "def f(:\n    pass", "import sys\nsys.exit(3)",
                                    "from scalebook.course.answers import check\ncheck('01.2', x + 1)")
    assert code == 0, output
    assert records[:3] == [{"cell": 2, "error": "ZeroDivisionError: division by zero"},
                           {"cell": 3, "error": records[1]["error"]}, {"cell": 4, "error": "SystemExit: 3"}]
    assert records[1]["error"].startswith("SyntaxError: ")
    assert records[3:] == [{"qid": "01.2", "answer": 2}]  # the cells after the errors ran, in one namespace


@pytest.mark.slow
def test_a_cell_past_its_limit_is_killed_by_the_parent_even_if_it_ignores_signals(tmp_path):
    code, records, _, seconds = _run(tmp_path, "import signal\nfor s in (signal.SIGINT, signal.SIGTERM, "
                                     "signal.SIGALRM):\n    signal.signal(s, signal.SIG_IGN)",
                                     "while True:\n    pass", limit=2)
    assert code == 3 and records == []
    assert_stopped(seconds, 2, "a cell that ignores signals and never ends")


@pytest.mark.slow
def test_a_notebook_that_kills_its_own_process_is_named_dead_and_its_earlier_answers_kept(tmp_path):
    code, records, output, _ = _run(tmp_path, "from scalebook.course.answers import check\ncheck('01.2', 5)",
                                    "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "check('01.2', 6)")
    assert code == 1 and "died: SIGKILL" in output and records == [{"qid": "01.2", "answer": 5}]


@pytest.mark.slow
def test_a_notebook_that_closes_the_progress_pipe_still_runs_to_its_end(tmp_path):
    code, records, output, _ = _run(tmp_path, "import os\nfor fd in range(3, 64):\n    try:\n        os.close(fd)\n"
                                    "    except OSError:\n        pass",
                                    "from scalebook.course.answers import check\ncheck('01.2', 7)")
    assert code == 0 and records == [{"qid": "01.2", "answer": 7}], output


SETUP = """
import sys
import scalebook as sb
info = sb.setup(quiet=True)
started = "jax" in sys.modules
import jax
print(started, info == sb.runtime.started_runtime(8), len(jax.devices()))
"""


@pytest.mark.slow
def test_setup_under_a_cpu_only_jax_leaves_jax_unstarted_and_reports_what_jax_would(tmp_path):
    """The sandbox sets JAX_PLATFORMS=cpu: `setup` then knows the runtime without starting JAX (a second or more per
    notebook), and JAX, started later by a cell, has the CPU devices `setup` asked for."""
    ran = subprocess.run([sys.executable, "-c", SETUP], env={**os.environ, "JAX_PLATFORMS": "cpu"},
                         capture_output=True, text=True, timeout=120)
    assert ran.stdout.split() == ["False", "True", "8"], ran.stderr[-2000:]


def test_jobs_default_to_the_cpus_this_process_may_use(tmp_path, monkeypatch):
    """`os.sched_getaffinity(0)`: the CPUs a container or `taskset` leaves this process, not the machine's count."""
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ada__01_rooflines.ipynb").write_text("junk")
    seen = []
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5})
    monkeypatch.setattr(autograde, "grade_one", lambda s, root, timeout, sandboxed, limits, *rest:
                        seen.append(limits.jobs) or submissions.Result(s, "graded"))
    autograde.grade(subs, tmp_path / "g.csv", root=Path(__file__).resolve().parents[2], sandboxed=False)
    assert seen == [3] and build_parser().parse_args(["grade", str(subs)]).jobs is None
