"""The test gate in real use: the tests that read the checkout's folders or watch the machine's processes pass
after a JupyterLab session (checkpoint folders beside the notebooks) and while another `scalebook grade`
runs on the same machine."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import hostile
import pytest

from scalebook.course.grader import sandbox

ROOT = Path(__file__).resolve().parents[2]
# test_autograde.py is not run again here: its class is graded on a course copy with JupyterLab's checkpoint
# folders, beside another grading run, already (its `graded` fixture), which saves a second run of the class.
GATED = ["tests/chapters/test_launch_links.py", "tests/upper/test_sandbox.py"]


def _checkout_copy(to: Path) -> None:
    """Copy what git sees of the checkout (tracked and untracked files, none it ignores) into `to`, a fresh
    git repository, so the copy holds the working tree as it is, edits included."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, to / name)
    subprocess.run(["git", "init", "-q"], cwd=to, check=True)


@pytest.mark.slow
def test_the_gate_passes_after_jupyterlab_and_beside_another_grading_run(tmp_path):
    if why := sandbox.available():
        pytest.skip(f"no sandbox here, so no second grading run can be started: {why}")
    copy = tmp_path / "checkout"
    _checkout_copy(copy)
    hostile.jupyterlab_was_here(copy)
    with hostile.neighbour(copy, tmp_path / "neighbour") as alive:
        ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *GATED], cwd=copy,
                             env={**os.environ, "PYTHONPATH": str(copy)}, capture_output=True, text=True,
                             timeout=3600)
        still = alive()
    assert ran.returncode == 0, ran.stdout[-4000:]
    assert still, "the neighbouring grading run was disturbed"
