"""Grading a class, safe whatever comes in.

    submissions.py  which uploaded files count, and whose they are; each opened once, never followed
    sandbox.py      the sandbox a notebook runs in (bubblewrap, or namespaces.py's own), without the course
    limits.py       what one sandbox may use, sized from the host's limits and the jobs running at once
    cgroups.py      per-notebook caps on CPU, memory and processes
    namespaces.py   the seccomp filter and the namespaces backend
    strictjson.py   JSON a submission wrote, read as the standard defines it, within a memory budget
    autograde.py    the run: each notebook in its sandbox, its answers set beside the key in the grader's process
    runner.py       what a sandbox runs: the notebook's cells in one IPython shell, a time limit per cell
    reasoning.py    the reasoning students wrote, whole, the handout's text left out: a page per problem set
    integrity.py    flags: answers or code another student's, or another student named
    gradebook.py    the CSV, each student's feedback and the class summary
    manual.py       the teacher's own points for the reasoning, in a file no regrade writes

Each name loads its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...faces import face

if TYPE_CHECKING:
    from . import (
        autograde,
        cgroups,
        gradebook,
        integrity,
        limits,
        manual,
        namespaces,
        reasoning,
        runner,
        sandbox,
        strictjson,
        submissions,
    )
    from .autograde import grade

_MODULES = ("submissions", "sandbox", "limits", "cgroups", "namespaces", "strictjson", "autograde", "runner",
            "reasoning", "integrity", "gradebook", "manual")
_TABLE = {"grade": "autograde", **{name: name for name in _MODULES}}

__all__ = list(_TABLE)
__getattr__, __dir__ = face(__name__, _TABLE, {})
