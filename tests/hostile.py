"""A class of hostile submissions for the autograder, written by code: every attack of issue #18 and more.

Each hostile notebook is the blank one (every `sb.check` answered `...`) plus cells that try to cheat or to
hurt others, placed after the checks so a forged record would be the last word. A sandbox that leaks shows
as marks: the key and the solutions, if reachable, are used to answer everything right.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from scalebook.autograde import question_points

PROBLEM_SET = "01_rooflines"
QIDS = [f"01.{n}" for n in range(1, 12)]  # at least these; the blank notebook checks every question of the set
NAMES = ("a b", "a_b", "=1+2", "@SUM(A1)", "-2+3")  # collide as file names, or run in a spreadsheet
MARKER = "scalebook-hostile-survivor"  # in the command line of every process a submission tries to leave behind


def notebook(*cells: str, kernel: str = "python3", language: str = "python") -> str:
    """A notebook of code `cells` with the given kernelspec, as JSON text."""
    return json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [],
                   "source": source} for i, source in enumerate(cells)],
        "metadata": {"kernelspec": {"name": kernel, "language": language, "display_name": kernel}},
        "nbformat": 4, "nbformat_minor": 5})


def blank(qids: list[str]) -> list[str]:
    """The cells of a blank notebook: scalebook imported, every question checked with `...`."""
    return ["import scalebook as sb", *[f"sb.check({q!r}, ...)" for q in qids]]


def attacks(root: Path, subs: Path, out: Path) -> dict[str, list[str]]:
    """{student: hostile cells}; `root` is the repository, `subs` the submissions folder, `out` the gradebook."""
    solutions = root / "solutions" / f"{PROBLEM_SET}.ipynb"
    victim = subs / f"ada__{PROBLEM_SET}.ipynb"
    survivor = f"import time, pathlib; time.sleep(600); pathlib.Path({str(out)!r}).write_text('pwned')  # {MARKER}"
    return {
        "keyholder": [  # the answer key, imported or read
            "from scalebook.problems import list_problems\nfor p in list_problems('01.'):\n"
            "    sb.check(p.qid, p.reference())",
            "import pathlib\nprint((pathlib.Path(sb.__file__).parent / 'problems' / 'rooflines.py').read_text())",
        ],
        "procreader": [  # the solutions, directly or through /proc, run for their checks
            "import glob, json\n"
            f"paths = [{str(solutions)!r}] + glob.glob('/proc/*/root{solutions}') + glob.glob('/proc/*/cwd/solutions/"
            f"{PROBLEM_SET}.ipynb') + ['/proc/{os.getpid()}/cwd/solutions/{PROBLEM_SET}.ipynb']\n"
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
            "import scalebook.grading as g\ng.Comparison.ok = property(lambda self: True)\n"
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
            f"        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(600)  # {MARKER}'])",
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
    }


def write_class(root: Path, subs: Path, out: Path, honest: list[str]) -> dict[str, str]:
    """Fill `subs` with honest (the solutions of the `honest` problem sets), blank, broken and hostile
    submissions; return {file name: expected status} for the files whose status is known in advance (the
    rest must score what the blank notebook scores)."""
    for name in honest:
        (subs / f"ada__{name}.ipynb").write_bytes((root / "solutions" / f"{name}.ipynb").read_bytes())
    cells = blank(list(question_points(PROBLEM_SET, root)))
    (subs / f"bo__{PROBLEM_SET}.ipynb").write_text(notebook(*cells))
    for student, attack in attacks(root, subs, out).items():
        (subs / f"{student}__{PROBLEM_SET}.ipynb").write_text(notebook(*cells, *attack))
    for student in NAMES:  # awkward names only need their rows: files that are not notebooks run nothing
        (subs / f"{student}__{PROBLEM_SET}.ipynb").write_text("not a notebook")
    with open(os.fsencode(subs) + b"/\xff\xfe__" + PROBLEM_SET.encode() + b".ipynb", "w") as f:
        f.write(notebook(*cells))
    (subs / "cy").mkdir()
    (subs / "cy" / f"{PROBLEM_SET}.ipynb").write_text(notebook(*cells, "while True:\n    pass"))
    (subs / f"di__{PROBLEM_SET}.ipynb").write_text("this is not a notebook")
    (subs / f"deep__{PROBLEM_SET}.ipynb").write_text("[" * 200_000 + "]" * 200_000)
    (subs / f"julia__{PROBLEM_SET}.ipynb").write_text(notebook('println("hi")', kernel="julia-1.9",
                                                               language="julia"))
    (subs / f"passwd__{PROBLEM_SET}.ipynb").symlink_to("/etc/passwd")
    (subs / f"copycat__{PROBLEM_SET}.ipynb").symlink_to(subs / f"ada__{PROBLEM_SET}.ipynb")
    (subs / "answers").symlink_to(root / "solutions", target_is_directory=True)
    os.mkfifo(subs / f"pipe__{PROBLEM_SET}.ipynb")
    (subs / "homework.txt").write_text("wrong file")
    return {**{f"{name}__{PROBLEM_SET}.ipynb": "corrupt" for name in NAMES},
            f"cy/{PROBLEM_SET}.ipynb": "timeout", f"di__{PROBLEM_SET}.ipynb": "corrupt",
            f"deep__{PROBLEM_SET}.ipynb": "corrupt", f"julia__{PROBLEM_SET}.ipynb": "not python (julia-1.9)",
            f"passwd__{PROBLEM_SET}.ipynb": "symlink refused", f"copycat__{PROBLEM_SET}.ipynb": "symlink refused",
            "answers": "symlink refused", f"pipe__{PROBLEM_SET}.ipynb": "special file refused",
            "homework.txt": "unrecognised", f"shouter__{PROBLEM_SET}.ipynb": "graded"}
