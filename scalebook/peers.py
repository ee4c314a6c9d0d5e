"""The peers: what two public calculators predict for the suite's published runs, beside scalebook's own prediction.

`data/peers.toml`, written by `benchmarks/peers.py` (which needs the optional extra `scalebook[peers]`), holds what
llm-analysis and GenZ predict for every suite row they can express, at the settings their own documentation gives
(llm-analysis: flops efficiency 0.5 for training, 0.7 for inference, HBM 0.9; GenZ: system efficiency 0.8), and why
they cannot express the others. The peers' numbers are stored, so a reader needs neither tool; scalebook's are
computed now, from the model as it is (`validation.results`), so the comparison follows every change to the model.

Errors are scored as the suite scores scalebook: the speed error (predicted over published speed - 1, positive when
a prediction is too fast) for throughput and time rows; predicted over published - 1 for memory rows, which form
their own family, 'memory GPU'. Each tool is compared with scalebook on exactly the rows that tool prices.
"""

from __future__ import annotations

import statistics
from functools import cache
from typing import Any

from .data import load
from .tables import Table
from .units import check_choice, checks
from .validation import FASTER_IS_LOWER, METRICS, STATUSES
from .validation import results as suite_results

__all__ = ["tools", "priced", "unexpressed", "speed_error", "results", "scores", "table", "behind", "reload"]


@cache
def _data() -> dict[str, Any]:
    return load("data/peers.toml")


def reload() -> None:
    """Read `data/peers.toml` again on next use (after `benchmarks/peers.py` has rewritten it)."""
    _data.cache_clear()


def tools() -> dict[str, dict[str, str]]:
    """Return {tool: its PyPI package, version, settings and the source of those settings}."""
    return {name: dict(spec) for name, spec in _data()["tools"].items()}


def _check_tool(name: str, value: object) -> str:
    return check_choice(name, value, tools())


@checks(tool=_check_tool)
def priced(tool: str) -> dict[str, float]:
    """Return {run id: `tool`'s value of the run's metric, in the metric's units} for every run it expresses."""
    return {r["run"]: r["value"] for r in _data()["rows"] if r["tool"] == tool and "value" in r}


@checks(tool=_check_tool)
def unexpressed(tool: str) -> dict[str, str]:
    """Return {run id: why `tool` has no input for the run} (context parallelism, training in GenZ, a TPU ...)."""
    return {r["run"]: r["cannot"] for r in _data()["rows"] if r["tool"] == tool and "cannot" in r}


@checks(metric=lambda n, v: check_choice(n, v, METRICS), predicted="size", published="size")
def speed_error(metric: str, predicted: float, published: float) -> float:
    """Predicted over published speed - 1 for a throughput or time `metric` (positive: the prediction is too fast);
    predicted over published - 1 for anything else (memory)."""
    if metric in FASTER_IS_LOWER:
        return published / predicted - 1
    return predicted / published - 1


def _family(row: dict[str, Any]) -> str:
    """The suite's family of a row, memory rows apart ('memory GPU'): they have an error but no speed."""
    return row["family"].replace("training", "memory") if row["speed error"] is None else row["family"]


def results(tool: str | None = None) -> list[dict[str, Any]]:
    """Return one dict per (tool, suite run the tool priced): the run, its family and status, the published
    value, the tool's value and error, scalebook's calibrated value (computed now) and its error."""
    if tool is not None:
        _check_tool("tool", tool)
    suite = {r["run"]: r for r in suite_results("calibrated")}
    out = []
    for name in tools() if tool is None else (tool,):
        for run, value in priced(name).items():
            if run not in suite:
                continue
            r = suite[run]
            out.append({"tool": name, "run": run, "family": _family(r), "status": r["status"],
                        "metric": r["metric"], "published": r["published"], "peer": value,
                        "peer error": speed_error(r["metric"], value, r["published"]),
                        "scalebook": r["calibrated"],
                        "scalebook error": speed_error(r["metric"], r["calibrated"], r["published"])})
    return out


def _score(errors: list[float]) -> dict[str, float]:
    """Median |error| and bias (the median signed error) of a group of errors."""
    return {"median abs error": statistics.median(abs(e) for e in errors), "bias": statistics.median(errors)}


def _check_status(name: str, value: object) -> str | None:
    return value if value is None else check_choice(name, value, STATUSES)


@checks(status=_check_status)
def scores(status: str | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    """Return {(family, tool): rows, the tool's and scalebook's median |error| and bias on those same rows, and
    whether scalebook is ahead (its median |error| the smaller)}, over the rows of `status` (None: all)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in results():
        if status is None or r["status"] == status:
            groups.setdefault((r["family"], r["tool"]), []).append(r)
    out = {}
    for key in sorted(groups):
        rows = groups[key]
        peer, ours = _score([r["peer error"] for r in rows]), _score([r["scalebook error"] for r in rows])
        out[key] = {"rows": len(rows), "peer": peer, "scalebook": ours,
                    "ahead": ours["median abs error"] < peer["median abs error"]}
    return out


@checks(status=_check_status)
def behind(status: str | None = None) -> list[str]:
    """Return 'family / tool' for every family where scalebook is not ahead of the tool on the rows of `status`."""
    return [f"{family} / {tool}" for (family, tool), s in scores(status).items() if not s["ahead"]]


def _pct(v: float) -> str:
    return f"{v * 100:+.0f}%"


@checks(status=_check_status)
def table(status: str | None = None) -> Table:
    """Family by family and tool by tool, on the rows of `status` (None: all) that tool prices: the rows, the tool's
    median |error| and bias at its documented settings, scalebook's on the same rows, and ✓ where scalebook is
    ahead."""
    rows = [{"family": family, "tool": tool, "rows": s["rows"],
             "tool |error|": s["peer"]["median abs error"], "tool bias": s["peer"]["bias"],
             "scalebook |error|": s["scalebook"]["median abs error"], "scalebook bias": s["scalebook"]["bias"],
             "ahead": "✓" if s["ahead"] else "✗"} for (family, tool), s in scores(status).items()]
    pct = {"tool |error|": "{:.0%}".format, "scalebook |error|": "{:.0%}".format, "tool bias": _pct,
           "scalebook bias": _pct}
    which = "every row" if status is None else f"the {status} rows"
    return Table(rows, formats=pct, title=f"scalebook beside the calculators, on {which} each tool prices (median "
                                          f"|error| and bias of the speed error; memory: of the size)")
