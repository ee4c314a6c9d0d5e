"""A student's session: enrolled in the course (or in self-study), then the lab started.

`sb.setup` is this module's `setup`: the book's chapters call it bare, a course's notebooks with the student's
name and key. The lab (`lab.runtime.setup`) knows nothing of students; the course stands on the lab.
"""

from __future__ import annotations

from ..lab.runtime import Runtime
from ..lab.runtime import setup as start_lab
from ..units import checks
from .variants import enrol

__all__ = ["setup"]


@checks(n_cpu_devices="count", quiet="flag")
def setup(n_cpu_devices: int = 8, quiet: bool = False, student: str | None = None, key: str | None = None) -> Runtime:
    """Name the session's `student` with the `key` their teacher issued (`variants.enrol`; None: self-study),
    then emulate `n_cpu_devices` CPU devices and describe the runtime (`lab.runtime.setup`).

    Enrolled, the problem sets show the student's own values and never an expected answer. A mistyped key is
    refused, and so is a missing one in a course; a line says whose values the problems show (even when `quiet`).
    """
    whose = enrol(student, key)
    if whose:
        print(whose)
    return start_lab(n_cpu_devices, quiet)
