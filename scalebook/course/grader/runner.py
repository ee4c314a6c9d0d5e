"""The process a sandbox runs for one submitted notebook: its code cells, in order, in one IPython shell.

    python -m scalebook.course.grader.runner NOTEBOOK SECONDS_PER_CELL

It reads the notebook as JSON (never through nbformat, whose import alone costs more than a second), refuses a
file that is not a readable Python notebook, then forks: the child runs every code cell in an in-process
`IPython.core.interactiveshell.InteractiveShell` (what a Jupyter kernel runs cells in, without the kernel's
process, sockets and message round trips; errors allowed, outputs discarded), and the parent, which started
nothing the notebook wrote, holds the sandbox's lifeline (`sandbox.hold_lifeline`) and kills the child when one
cell runs past its limit. The child says "next cell" on a pipe; a notebook that writes there itself can only
stretch its own cells up to the whole notebook's limit, which the grader enforces from outside. Each cell that
raises sends its error line to the grader (`{"cell": N, "error": "NameError: ..."}` on the answer channel, at
most `MAX_ERRORS`), so the student's feedback can show it.

Exit codes (the grader's `EXITS`): 0 every cell ran, 3 a cell ran past its limit, 5 not a readable notebook,
6 another language (named on the last line of output), 1 the cells' process died (named likewise).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
from typing import Any, NoReturn

from ..answers import GRADE_ANSWERS
from . import sandbox

__all__ = ["EXITS", "MAX_ERRORS", "SKIP", "read_notebook", "run", "main"]

EXITS = {0: "graded", 3: "timeout", 5: "corrupt"}  # 6: not python; anything else: error
MAX_ERRORS = 10  # crashed cells reported back per submission
SKIP = "skip-execution"  # the tag of a code cell that is not run
_DIED, _TIMEOUT, _CORRUPT, _FOREIGN = 1, 3, 5, 6

Cells = list[tuple[int, str]]  # (the cell's number in the notebook, from 1; its source) of each code cell


def _source(cell: Any) -> str:
    """A code cell's source, which nbformat stores as a string or a list of lines; TypeError otherwise."""
    source = cell["source"]
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    if not isinstance(source, str):
        raise TypeError("source")
    return source


def _skipped(cell: Any) -> bool:
    """Whether a code cell is tagged `skip-execution`, which Jupyter's executors do not run (nbclient's
    `NotebookClient.skip_cells_with_tag`, https://nbclient.readthedocs.io/en/latest/reference/config_options.html)."""
    tags = (cell.get("metadata") or {}).get("tags")
    return isinstance(tags, list) and SKIP in tags


def read_notebook(path: str) -> tuple[int, str, Cells]:
    """Before any of it runs: (0, '', its code cells but those tagged `SKIP`) for a readable Python notebook,
    else (5, why, []) for a file that is not one, or (6, its kernel's name as one line of ASCII, []) for another
    language."""
    try:
        with open(path, "rb") as f:
            notebook = json.loads(f.read().decode("utf-8"))
        meta = notebook.get("metadata") or {}
        spec = meta.get("kernelspec") or {}
        language = str(spec.get("language") or (meta.get("language_info") or {}).get("name") or "python")
        name = str(spec.get("name") or language)
        cells = [(n, _source(c)) for n, c in enumerate(notebook["cells"], start=1)
                 if c["cell_type"] == "code" and not _skipped(c)]
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, UnicodeDecodeError, MemoryError):
        return _CORRUPT, "not a readable notebook", []
    if not language.lower().startswith("python"):
        return _FOREIGN, name[:40].encode("unicode_escape").decode("ascii"), []
    return 0, "", cells


def _shell() -> Any:
    """A fresh IPython shell that keeps no history file and formats results as plain text only (no HTML or
    images rendered for outputs nobody reads)."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    shell.display_formatter.active_types = ["text/plain"]
    return shell


def _report(number: int, error: BaseException) -> None:
    """Send the grader the error line of cell `number`."""
    line = f"{type(error).__name__}: {error}"[:200]
    with open(os.environ[GRADE_ANSWERS], "a", encoding="utf-8") as channel:
        channel.write(json.dumps({"cell": number, "error": line}) + "\n")


def _run_cells(cells: Cells, progress: int) -> NoReturn:
    """The child: run `cells` in one shell, writing a byte to `progress` as each starts; exit 0 when all ran."""
    shell = _shell()
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    errors = 0
    for number, source in cells:
        with contextlib.suppress(OSError):  # a notebook that closed the pipe has only the whole notebook's limit
            os.write(progress, b".")
        result = shell.run_cell(source, store_history=True)
        error = result.error_before_exec or result.error_in_exec
        if error is not None and errors < MAX_ERRORS:
            errors += 1
            _report(number, error)
    os._exit(0)


def _wait(child: int, progress: int, limit: float) -> int:
    """The parent: wait for `child`; kill it when `limit` seconds pass without its saying a new cell began.
    Returns the exit code the grader reads."""
    exited = os.pidfd_open(child)
    watched = [exited, progress]
    while True:
        ready, _, _ = select.select(watched, [], [], limit)
        if not ready:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            return _TIMEOUT
        if exited in ready:
            break
        if not os.read(progress, 4096):  # the notebook closed its end: only the whole notebook's limit is left
            watched.remove(progress)
    code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
    if code < 0:
        print(f"the notebook's process died: {signal.Signals(-code).name}", file=sys.stderr)
        return _DIED
    return code


def run(notebook: str, limit: float) -> int:
    """Run the notebook at `notebook`, at most `limit` seconds per cell; return the exit code (see the module)."""
    code, detail, cells = read_notebook(notebook)
    if code:
        print(detail, file=sys.stderr)
        return code
    progress, said = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(progress)
        try:
            _run_cells(cells, said)
        except BaseException as err:  # noqa: BLE001 - the shell could not start: the row says why
            os.write(2, f"{type(err).__name__}: {err}"[:200].encode("utf-8", "replace") + b"\n")
            os._exit(_DIED)
    os.close(said)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the notebook's processes may signal this one: it ignores them
    sandbox.hold_lifeline()
    return _wait(child, progress, limit)


def main(argv: list[str] | None = None) -> int:
    """`python -m scalebook.course.grader.runner NOTEBOOK SECONDS_PER_CELL`."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: python -m scalebook.course.grader.runner NOTEBOOK SECONDS_PER_CELL", file=sys.stderr)
        return 2
    return run(argv[0], float(argv[1]))


if __name__ == "__main__":
    sys.exit(main())
