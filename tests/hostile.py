"""A class of hostile submissions for the autograder, written by code: every attack of issues #18 and #33.

Each hostile notebook is the blank one (every `sb.check` answered `...`) plus cells that try to cheat or to
hurt others, placed after the checks so a forged record would be the last word. A sandbox that leaks shows
as marks: the key and the solutions, if reachable, are used to answer everything right. Beside them lie the
hostile files and layouts: links (soft and hard), a pipe, names and metadata with control characters, lone
surrogates and markup, a file in another student's name, a student's second file, folders nested past any
recursion and past the system's path limit. Two races cannot be staged in a class run and are tested on
their own in test_autograde.py: a file that vanishes, or turns into a pipe, between listing and reading.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from scalebook.book.notebooks import FOLDERS
from scalebook.course.grader.autograde import question_points

PROBLEM_SET = "01_rooflines"
QIDS = [f"01.{n}" for n in range(1, 12)]  # at least these; the blank notebook checks every question of the set
NAMES = ("a b", "a_b", "=1+2", "@SUM(A1)", "-2+3")  # collide as file names, or run in a spreadsheet


def marker(out: Path) -> str:
    """What the command line of every process a submission of the class graded into `out` tries to leave
    behind carries: one grading run's mark, not another's."""
    return f"scalebook-hostile-survivor {out}"


def notebook(*cells: str, kernel: str = "python3", language: str = "python", display: str = "") -> str:
    """A notebook of code `cells` with the given kernelspec, as JSON text (any string, lone surrogates too)."""
    return json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [],
                   "source": source} for i, source in enumerate(cells)],
        "metadata": {"kernelspec": {"name": kernel, "language": language, "display_name": display or kernel}},
        "nbformat": 4, "nbformat_minor": 5})


def blank(qids: list[str]) -> list[str]:
    """The cells of a blank notebook: scalebook imported, every question checked with `...`."""
    return ["import scalebook as sb", *[f"sb.check({q!r}, ...)" for q in qids]]


def attacks(root: Path, subs: Path, out: Path, memory_capped: bool = True) -> dict[str, list[str]]:
    """{student: hostile cells}; `root` is the repository, `subs` the submissions folder, `out` the gradebook;
    the attack on the machine's memory is left out unless a cgroup caps each sandbox's (`memory_capped`)."""
    solutions = root / "solutions" / f"{PROBLEM_SET}.ipynb"
    checkpoint = root / "solutions" / ".ipynb_checkpoints" / f"{PROBLEM_SET}-checkpoint.ipynb"  # JupyterLab's copy
    victim = subs / f"ada__{PROBLEM_SET}.ipynb"
    survivor = f"import time, pathlib; time.sleep(600); pathlib.Path({str(out)!r}).write_text('pwned')  # {marker(out)}"
    return {
        "keyholder": [  # the answer key, imported or read
            "from scalebook.course.key import list_problems\nfor p in list_problems('01.'):\n"
            "    sb.check(p.qid, p.reference())",
            "import pathlib\nprint((pathlib.Path(sb.__file__).parent / 'problems' / 'rooflines.py').read_text())",
        ],
        "procreader": [  # the solutions, directly or through /proc, run for their checks
            "import glob, json\n"
            f"paths = [{str(solutions)!r}, {str(checkpoint)!r}] + glob.glob('/proc/*/root{solutions}')"
            f" + glob.glob('/proc/*/cwd/solutions/{PROBLEM_SET}.ipynb')"
            f" + ['/proc/{os.getpid()}/cwd/solutions/{PROBLEM_SET}.ipynb']\n"
            "for path in paths:\n    try:\n        cells = json.load(open(path))['cells']\n    except OSError:\n"
            "        continue\n    for cell in cells:\n        if cell['cell_type'] == 'code':\n            try:\n"
            "                exec(''.join(cell['source']), globals())\n            except Exception:\n"
            "                pass\n    break",
        ],
        "forger": [  # verdicts, garbage, nesting, oversize, objects, non-UTF-8 into the channel
            "import json, os\npath = os.environ['SCALEBOOK_GRADE_ANSWERS']\nwith open(path, 'ab') as f:\n"
            f"    for q in {QIDS!r}:\n"
            "        f.write(json.dumps({'qid': q, 'outcome': 'right', 'points': 99}).encode() + b'\\n')\n"
            "    f.write(b'garbage\\n\\xff\\xfe not json\\n[1, 2]\\n{\"qid\": 5}\\n')\n"
            "    f.write(b'{\"qid\": \"01.1\", \"answer\": ' + b'[' * 100000 + b']' * 100000 + b'}\\n')\n"
            "    f.write(b'{\"qid\": \"01.2\", \"answer\": \"' + b'x' * 200000 + b'\"}\\n')\n"
            "    f.write(b'{\"qid\": \"01.3\", \"answer\": {\"__eq__\": true}, \"outcome\": \"right\"}\\n')",
        ],
        "equaliser": [  # answers that equal anything
            "class Always:\n    def __eq__(self, other):\n        return True\n    def __float__(self):\n"
            "        raise TypeError('no')\n    __hash__ = object.__hash__\n"
            "class Float(float):\n    def __eq__(self, other):\n        return True\n    __hash__ = float.__hash__\n"
            "class Loop:\n    def tolist(self):\n        return [self]\n"
            f"for i, q in enumerate({QIDS!r}):\n    sb.check(q, [Always(), Float(0.0), Loop()][i % 3])",
        ],
        "patcher": [  # the comparison patched in the kernel
            "import scalebook.compare as g\ng.Comparison.ok = property(lambda self: True)\n"
            "g.Comparison.rel_error = property(lambda self: 0.0)\n"
            f"for q in {QIDS!r}:\n    sb.check(q, 0.0)",
        ],
        "saboteur": [  # the installed package, the key, another submission, the gradebook, the output folder
            "import pathlib\npkg = pathlib.Path(sb.__file__).parent\n"
            f"targets = [pkg / 'grading.py', pkg / 'problems' / '__init__.py', pathlib.Path({str(victim)!r}),\n"
            f"           pathlib.Path({str(out)!r}), pathlib.Path({str(out.parent / 'notes.txt')!r}),\n"
            f"           pathlib.Path({str(out.parent / 'feedback' / 'x.md')!r})]\n"
            "for t in targets:\n    for act in ('append', 'unlink', 'write'):\n        try:\n"
            "            if act == 'append':\n                t.open('a').write('\\nPWNED = True\\n')\n"
            "            elif act == 'unlink':\n                t.unlink()\n            else:\n"
            "                t.write_text('pwned')\n        except Exception as err:\n"
            "            print(t, act, type(err).__name__)",
        ],
        "daemon": [  # processes that outlive their cell: a new session and a double fork
            "import os, subprocess, sys\n"
            f"code = {survivor!r}\n"
            "subprocess.Popen([sys.executable, '-c', code], start_new_session=True, stdin=subprocess.DEVNULL,\n"
            "                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            "        os.execv(sys.executable, [sys.executable, '-c', code])\n    os._exit(0)",
        ],
        "forker": [  # fifty children left sleeping
            "import os, sys\nfor _ in range(50):\n    if os.fork() == 0:\n"
            "        os.execv(sys.executable, [sys.executable, '-c',\n"
            f"                  'import time; time.sleep(600)  # {marker(out)}'])",
        ],
        "forkbomb": [  # forks until the process cap says no
            "import os, time\nn = 0\ntry:\n    while n < 100000:\n        if os.fork() == 0:\n"
            "            time.sleep(600)\n            os._exit(0)\n        n += 1\nexcept OSError:\n"
            "    print('the process cap stopped it after', n)",
        ],
        "hog": [  # 30 GiB, in two ways
            "try:\n    big = bytearray(30 * 2**30)\nexcept MemoryError:\n    print('refused')",
            "import numpy as np\ntry:\n    big = np.ones(30 * 2**30 // 8)\nexcept MemoryError:\n    print('refused')",
        ],
        "kamikaze": ["import os, signal\nos.kill(-1, signal.SIGKILL)"],  # every process it may signal
        "shouter": ["print('x' * 20_000_000)"],  # 20 MB of output
        "eraser": [  # the answer channel deleted, then emptied, in the last cell
            "import os\npath = os.environ['SCALEBOOK_GRADE_ANSWERS']\ntry:\n    os.remove(path)\n"
            "except OSError as err:\n    print(err)\nopen(path, 'w').close()",
        ],
        "spinner": [  # 150 busy processes for 30 s, to starve the notebook beside it
            "import os, time\nend = time.monotonic() + 30\nfor _ in range(150):\n    if os.fork() == 0:\n"
            "        while time.monotonic() < end:\n            pass\n        os._exit(0)\n"
            "for _ in range(150):\n    os.wait()",
        ],
        "filer": [  # files without end in the scratch folders: their inodes
            "n = 0\ntry:\n    while n < 300_000:\n        open(f'/tmp/{n}', 'w').close()\n        n += 1\n"
            "except OSError:\n    print('stopped after', n)",
        ],
        **({"glutton": [  # the machine's memory, through many processes, memfd files and /dev/shm
            "import os, time\nfor _ in range(5):\n    if os.fork() == 0:\n        try:\n"
            "            block = b'x' * (1536 * 2**20)\n            time.sleep(20)\n        finally:\n"
            "            os._exit(0)\nfiles = []\ntry:\n    for i in range(40):\n"
            "        fd = os.memfd_create(f'm{i}')\n        os.write(fd, b'y' * (60 * 2**20))\n"
            "        files.append(fd)\n    open('/dev/shm/fill', 'wb').write(b'z' * 2**30)\nexcept OSError as err:\n"
            "    print(err)\nfor _ in range(5):\n    os.wait()",
        ]} if memory_capped else {}),
    }


CONTROL = "e\x1b[2J\x07\r\u202etxt.exe"  # ESC, BEL, CR and the right-to-left override, in a name
MARKUP = "<img src=x onerror=alert(1)> [x](javascript:alert(1)) *b*"  # HTML and Markdown, in a name


def nest(top: Path, depth: int, name: str = "a") -> None:
    """Make `depth` folders `name` one inside the other under `top`, through folder descriptors, so the chain
    may outgrow the system's path limit."""
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)


def _is_folder(name: str, fd: int) -> bool:
    return stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)


def unnest(top: Path) -> None:
    """Remove a tree of any depth (made by `nest`, say) without recursion or long paths: descend through
    folder descriptors, and remove each folder's files, then the folder, once it holds no folder."""
    stack = [(os.open(top, os.O_RDONLY | os.O_DIRECTORY), "")]
    while stack:
        fd, _ = stack[-1]
        inner = next((e for e in os.listdir(fd) if _is_folder(e, fd)), None)
        if inner is not None:
            stack.append((os.open(inner, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd), inner))
            continue
        for name in os.listdir(fd):
            os.unlink(name, dir_fd=fd)
        os.close(fd)
        _, name = stack.pop()
        if stack:
            os.rmdir(name, dir_fd=stack[-1][0])
    os.rmdir(top)


def write_class(root: Path, subs: Path, out: Path, honest: list[str], memory_capped: bool = True) -> dict[str, str]:
    """Fill `subs` with honest (the solutions of the `honest` problem sets), blank, broken and hostile
    submissions and folder layouts; return {file name: expected status} for the files whose status is known
    in advance (the rest must score what the blank notebook scores)."""
    for name in honest:
        (subs / f"ada__{name}.ipynb").write_bytes((root / "solutions" / f"{name}.ipynb").read_bytes())
    cells = blank(list(question_points(PROBLEM_SET, root)))
    (subs / f"bo__{PROBLEM_SET}.ipynb").write_text(notebook(*cells))
    for student, attack in attacks(root, subs, out, memory_capped).items():
        (subs / f"{student}__{PROBLEM_SET}.ipynb").write_text(notebook(*cells, *attack))
    for student in NAMES:  # awkward names only need their rows: files that are not notebooks run nothing
        (subs / f"{student}__{PROBLEM_SET}.ipynb").write_text("not a notebook")
    with open(os.fsencode(subs) + b"/\xff\xfe__" + PROBLEM_SET.encode() + b".ipynb", "w") as f:
        f.write(notebook(*cells))
    (subs / "cy").mkdir()
    (subs / "cy" / f"{PROBLEM_SET}.ipynb").write_text(notebook(*cells))  # a student's own folder
    (subs / f"di__{PROBLEM_SET}.ipynb").write_text("this is not a notebook")
    (subs / f"deep__{PROBLEM_SET}.ipynb").write_text("[" * 200_000 + "]" * 200_000)
    (subs / f"julia__{PROBLEM_SET}.ipynb").write_text(notebook('println("hi")', kernel="julia-1.9",
                                                               language="julia"))
    (subs / f"passwd__{PROBLEM_SET}.ipynb").symlink_to("/etc/passwd")
    (subs / f"copycat__{PROBLEM_SET}.ipynb").symlink_to(subs / f"ada__{PROBLEM_SET}.ipynb")
    (subs / "answers").symlink_to(root / "solutions", target_is_directory=True)
    os.mkfifo(subs / f"pipe__{PROBLEM_SET}.ipynb")
    (subs / "homework.txt").write_text("wrong file")
    (subs / f"surrogate__{PROBLEM_SET}.ipynb").write_text(notebook(*cells, display="\ud800\x00\x1b[31m"))
    (subs / f"hebrew__{PROBLEM_SET}.ipynb").write_text(notebook(*cells, kernel="\ud800\x1b]0;pwned\x07",
                                                                language="julia\u202e"))
    (subs / f"{CONTROL}__{PROBLEM_SET}.ipynb").write_text(notebook(*cells))
    (subs / f"{MARKUP}__{PROBLEM_SET}.ipynb").write_text(notebook(*cells))
    (subs / "mallory").mkdir()  # Mallory's folder, a file in it in Alice's name
    (subs / "mallory" / f"alice__{PROBLEM_SET}.ipynb").write_text(notebook(*cells, f"# {MARKUP}"))
    (subs / "twice").mkdir()  # two files of one student and set: the latest counts
    (subs / "twice" / f"{PROBLEM_SET}.ipynb").write_text(notebook(*cells))
    (subs / f"twice__{PROBLEM_SET}.ipynb").write_text(notebook(*cells, "while True:\n    pass"))
    os.utime(subs / f"twice__{PROBLEM_SET}.ipynb", (1e9, 1e9))
    (subs / f"vic__{PROBLEM_SET}.ipynb").write_text(notebook(*cells))  # and its second name, a hard link (both run)
    os.link(subs / f"vic__{PROBLEM_SET}.ipynb", subs / f"linker__{PROBLEM_SET}.ipynb")
    nest(subs / "nested", 1100)  # deeper than any recursion
    nest(subs / "longpath", 20, "l" * 250)  # longer than the system's path limit
    return {**{f"{name}__{PROBLEM_SET}.ipynb": "corrupt" for name in NAMES},
            f"\udcff\udcfe__{PROBLEM_SET}.ipynb": "unmatched",  # a name with undecodable bytes names no one
            f"cy/{PROBLEM_SET}.ipynb": "graded", f"di__{PROBLEM_SET}.ipynb": "corrupt",
            f"deep__{PROBLEM_SET}.ipynb": "corrupt", f"julia__{PROBLEM_SET}.ipynb": "not python (julia-1.9)",
            f"passwd__{PROBLEM_SET}.ipynb": "symlink refused", f"copycat__{PROBLEM_SET}.ipynb": "symlink refused",
            "answers": "symlink refused", f"pipe__{PROBLEM_SET}.ipynb": "special file refused",
            "homework.txt": "unrecognised", f"shouter__{PROBLEM_SET}.ipynb": "graded",
            f"surrogate__{PROBLEM_SET}.ipynb": "graded",
            f"hebrew__{PROBLEM_SET}.ipynb": r"not python (\ud800\x1b]0;pwned\x07)",
            f"mallory/alice__{PROBLEM_SET}.ipynb": "misnamed", f"twice__{PROBLEM_SET}.ipynb": "superseded",
            f"twice/{PROBLEM_SET}.ipynb": "graded", f"vic__{PROBLEM_SET}.ipynb": "graded",
            f"linker__{PROBLEM_SET}.ipynb": "graded", "nested/a": "folder refused",
            f"longpath/{'l' * 250}": "folder refused"}


def jupyterlab_was_here(root: Path) -> None:
    """Leave in the checkout or course copy at `root` what opening every notebook in JupyterLab leaves: a
    `.ipynb_checkpoints` folder beside them, holding a copy of each."""
    for folder in (*FOLDERS, "."):
        if not (root / folder).is_dir():
            continue
        checkpoints = root / folder / ".ipynb_checkpoints"
        checkpoints.mkdir(exist_ok=True)
        for nb in (root / folder).glob("*.ipynb"):
            shutil.copy(nb, checkpoints / f"{nb.stem}-checkpoint.ipynb")

def _running(text: str) -> bool:
    """Whether a live process carries `text` in its command line."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


@contextlib.contextmanager
def neighbour(root: Path, base: Path) -> Iterator[Callable[[], bool]]:
    """Another `scalebook grade` run (of the course at `root`, in `base`), alive inside the block: its one
    notebook leaves a process sleeping in its sandbox, marked as that run's survivor. Yields a function that
    says whether that process still lives; at the end the run is killed, and its sandbox with it."""
    subs, out = base / "submissions", base / "gradebook.csv"
    subs.mkdir(parents=True)
    sleeper = f"import time; time.sleep(3600)  # {marker(out)}"  # outlives any run the tests allow
    (subs / f"nel__{PROBLEM_SET}.ipynb").write_text(notebook(
        f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {sleeper!r}])\ntime.sleep(3600)"))
    grader = subprocess.Popen([sys.executable, "-c", "import sys; from scalebook.cli import main; sys.exit(main())",
                               "grade", str(subs), "--out", str(out), "--timeout", "3600"], cwd=root,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not _running(marker(out)) and grader.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _running(marker(out)), "the neighbouring grading run did not start its notebook"
        yield lambda: _running(marker(out))
    finally:
        os.killpg(grader.pid, 9)
        grader.wait()
        deadline = time.monotonic() + 10
        while _running(marker(out)) and time.monotonic() < deadline:
            time.sleep(0.2)
