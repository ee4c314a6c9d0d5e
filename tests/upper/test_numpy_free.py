"""The calculating core runs on the standard library alone, as it must in the reader's browser (Pyodide has no NumPy).

A subprocess makes NumPy (and matplotlib, JAX, ipywidgets) unimportable with a `sys.meta_path` blocker, then:
- imports every calculating module;
- answers every explorer of chapters 1–8 on its worked problem, from the description its snapshot carries on the
  website (`Explorer.describe`), and the answer must equal, number for number and in its HTML, the answer this
  process (NumPy loaded) computes from the same description.
The explorers are the chapters' own cells: each `sb.widgets...explorer(...)`/`explore(...)` call, evaluated after
the simple assignments above it (`v5e = sb.get_chip("v5e")`, ...).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import scalebook as sb
from scalebook.widgets import web

ROOT = Path(__file__).resolve().parents[2]
BLOCKER = """
import sys
class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numpy", "matplotlib", "jax", "jaxlib", "ipywidgets", "scipy", "pandas"):
            raise ImportError(f"{name} is blocked: the website's calculators run without it")
sys.meta_path.insert(0, _Blocked())
# What the website's worker does before it imports an explorer: the faces of `widgets` and `plots` import every
# figure (and NumPy); an explorer needs only its own module.
import importlib.util
sys.modules["scalebook.widgets"] = importlib.util.module_from_spec(importlib.util.find_spec("scalebook.widgets"))
from scalebook.widgets import web
web.open_faceless("scalebook.plots")
"""
MODULES = ["units", "hardware", "models", "estimate", "roofline", "collectives", "sharding", "systolic", "tables",
           "svg", "compare", "book.checks", "training", "inference", "inference.steps", "inference.deployment",
           "inference.moe", "inference.serving", "inference.serving.simulator", "inference.serving.report",
           "widgets.web", "widgets.core", "widgets.tpu", "widgets.models",
           "widgets.sharding", "widgets.gpus", "widgets.training", "widgets.inference", "widgets.llama",
           "plots.base", "plots.roofline", "plots.sharding", "plots.training", "plots.inference", "plots.tpu",
           "plots.chip", "plots.serving", "widgets.serving", "widgets.llama_serving"]
CELL = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)```", re.S)
SKIP_ASSIGN = ("setup(", "jax", "lab.", "labs", "xla", "bench", "profil", "decoder", "sharded_ops", "multihost",
               "plots.")


def run_blocked(code: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCKER + code], input=stdin, capture_output=True, text=True,
                          cwd=ROOT, timeout=600)


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_without_numpy(module: str):
    run = run_blocked(f"import scalebook.{module}")
    assert run.returncode == 0, run.stderr[-2000:]


def chapter_explorers(chapter: Path) -> list[tuple[str, object]]:
    """(source, Explorer) for every explorer cell of a chapter, built as the chapter builds it."""
    scope: dict = {"sb": sb}
    found = []
    for cell in CELL.findall(chapter.read_text(encoding="utf-8")):
        cell = re.sub(r"\A(?:---\n.*?\n---\n|(?::[\w-]+:[^\n]*\n)+)", "", cell, flags=re.S)  # the cell's options
        try:
            tree = ast.parse(cell)
        except SyntaxError:
            continue
        for node in tree.body:
            source = ast.get_source_segment(cell, node) or ""
            if isinstance(node, (ast.Assign, ast.Import, ast.ImportFrom)) and not any(s in source for s in SKIP_ASSIGN):
                try:
                    exec(compile(ast.Module([node], []), str(chapter), "exec"), scope)
                except Exception:  # noqa: BLE001 (an assignment that needs the live lab: its explorers are skipped)
                    pass
            elif (isinstance(node, ast.Expr) and source.startswith("sb.widgets.")
                  and re.search(r"(explorer|explore|stepper)\(", source.split("\n")[0])):
                found.append((source, eval(compile(ast.Expression(node.value), str(chapter), "eval"), scope)))
    return found


def explorers() -> list[tuple[str, object]]:
    return [(f"{path.stem}: {source[:90]}", ex) for path in sorted((ROOT / "chapters").glob("0[1-8]_*.md"))
            for source, ex in chapter_explorers(path)]


@pytest.mark.slow
def test_every_explorer_of_chapters_1_to_8_answers_its_worked_problem_without_numpy():
    cases = []
    for name, ex in explorers():
        about = ex.describe()
        values = {c["name"]: c["value"] for c in about["controls"]}
        cases.append({"name": name, "call": about.get("call"), "why": about.get("why", ""), "values": values})
    assert len(cases) >= 80, len(cases)
    code = """
import json, sys
from scalebook.widgets import web
out = []
for case in json.load(sys.stdin):
    try:
        out.append(web.answer(case["call"], case["values"]))
    except Exception as err:
        out.append({"failed": f"{type(err).__name__}: {err}"})
print(json.dumps(out))
"""
    live = [c for c in cases if c["call"]]
    run = run_blocked(code, json.dumps(live))
    assert run.returncode == 0, run.stderr[-3000:]
    blocked = json.loads(run.stdout.splitlines()[-1])
    wrong, failed = [], []
    for case, got in zip(live, blocked):
        if "failed" in got:
            failed.append(f"{case['name']}: {got['failed']}")
            continue
        want = web.answer(case["call"], case["values"])
        if got != want:
            wrong.append(case["name"])
    not_live = [f"{c['name']}: {c['why']}" for c in cases if not c["call"]]
    assert not wrong, wrong
    assert not failed, "\n".join(failed)
    assert not not_live, not_live


def test_an_explorer_of_a_measured_profile_keeps_its_snapshot():
    """A profile is measured on the machine that built the page: the site shows it as it was, not live."""
    from scalebook.lab.profiling import Trace
    from scalebook.tables import Table
    from scalebook.widgets import web

    trace = Trace(events=(), hlo="", table=Table([{"op": "x"}]))
    about = web.describe(lambda op: (trace, op), {"op": ["x", "y"]}, "one op")
    assert "call" not in about and "measured" in about["why"]
    assert "call" in web.describe(lambda op: op, {"op": ["x", "y"]}, "plain")
