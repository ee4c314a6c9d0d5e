"""Report how fast the explorers, `import scalebook`, the planner and the serving simulator answer here.

    python benchmarks/speed.py [--out benchmarks/out]

`make test` checks these timings only against 10x their targets (tests/speed.py), so that a busy machine never
fails it. This script runs the same timed tests with SCALEBOOK_TIMINGS set, collects what each measured, and
prints every measurement beside its target (widgets: 50 ms). It reports and never gates: its exit status is 0
whatever the times, unless the tests themselves fail. Run it on a quiet machine; writes `speed.md` to --out.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMED = {"assert_fast", "assert_answers_fast"}


def timed_tests() -> list[str]:
    """The pytest ids of every test function that calls `speed.assert_fast` or `explorers.assert_answers_fast`."""
    ids = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_") and any(
                    isinstance(call, ast.Call) and getattr(call.func, "id", None) in TIMED for call in ast.walk(node)):
                ids.append(f"{path.relative_to(ROOT)}::{node.name}")
    return ids


def measure() -> list[dict]:
    """Run the timed tests with SCALEBOOK_TIMINGS pointing at a temporary file; return its records."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "timings.jsonl"
        env = {**os.environ, "SCALEBOOK_TIMINGS": str(log)}
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *timed_tests()],
                             cwd=ROOT, env=env, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"the timed tests failed:\n{run.stdout[-4000:]}")
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def report(records: list[dict]) -> str:
    """A Markdown table: what was timed, the time, its target, and whether it met it (not a pass/fail gate)."""
    lines = ["| what | measured | target | |", "|---|---:|---:|---|"]
    for r in sorted(records, key=lambda r: r["seconds"] / r["target"], reverse=True):
        mark = "within target" if r["seconds"] <= r["target"] else f"{r['seconds'] / r['target']:.1f}x over"
        lines.append(f"| {r['what']} | {r['seconds'] * 1e3:.1f} ms | {r['target'] * 1e3:.0f} ms | {mark} |")
    over = sum(r["seconds"] > r["target"] for r in records)
    lines.append(f"\n{len(records)} timings, {over} over their target on this machine.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out")
    args = parser.parse_args()
    text = report(measure())
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "speed.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
