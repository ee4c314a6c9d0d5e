"""The validation suite: published runs (`data/published_runs.toml`) run through scalebook's model.

Each run names what ran and what was measured. `predict(run, efficiency)` turns it into the same metric with
the model's own functions — `inference.decode_step` / `prefill` for serving, `training.predict` for
training steps and memory — either as the book's ideal bound (`efficiency="ideal"`: peak FLOP/s, peak
bandwidth, no per-call latency) or with the chips' calibrated factors (`"calibrated"`, one set per chip,
`hardware/chips.toml`). `table()` sets published, ideal and calibrated side by side with the errors;
`summary()` gives the numbers chapter 13 and the tests hold the model to.

Errors are predicted / published - 1 in the published metric's own units. An ideal prediction is a bound
when it is never slower than what was measured: at least the published throughput, at most the published
time. Memory is neither fast nor slow: it has an error but no bound.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from .data import load
from .hardware.chips import Efficiency, get_chip
from .inference import decode_step, prefill
from .models import TransformerConfig, get_model
from .tables import Table
from .training.prediction import predict as train_predict
from .units import check_choice, checks, is_a

__all__ = ["Run", "runs", "sources", "model", "predict", "results", "table", "summary", "disagreements",
           "flops_per_token",
           "FASTER_IS_HIGHER", "FASTER_IS_LOWER", "METRICS", "GiB"]

GiB = 2.0**30
# Metrics where a faster machine shows a larger number, and those where it shows a smaller one.
FASTER_IS_HIGHER = ("tokens_per_second", "out_tokens_per_second_per_chip", "tflops_per_chip", "mfu")
FASTER_IS_LOWER = ("ms_per_token", "ttft_ms", "step_time_s")
METRICS = FASTER_IS_HIGHER + FASTER_IS_LOWER + ("params_optimizer_gib", "activations_gib")
_KINDS = ("decode", "prefill", "serve", "training", "memory")


@dataclass(frozen=True)
class Run:
    """One published measurement: `kind` of work, `model`, `hardware` (a chip name), `n_chips`, the `metric`
    and its `published` value, where it came from (`source`, `check`: V read in the source, S from a
    secondary summary, D derived by us), and the layout and sizes in `params`. `calibration_point`: a
    calibrated factor was read off this run, so it cannot test that factor. `disagreement`: why the calibrated
    model misses this run by more than 35 % (empty where it does not)."""

    id: str
    kind: str
    model: TransformerConfig
    hardware: str
    n_chips: int
    metric: str
    published: float
    source: str
    check: str = "V"
    note: str = ""
    calibration_point: bool = False
    disagreement: str = ""
    params: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@cache
def _data() -> dict[str, Any]:
    return load("data/published_runs.toml")


def sources() -> dict[str, str]:
    """Return {key: citation} of every source the suite draws on."""
    return dict(_data()["sources"])


def model(name: str | TransformerConfig) -> TransformerConfig:
    """Return a preset (`models.get_model`) or one of the suite's own models (GPT shapes of the Megatron
    papers, Llama 2, PaLM), by key."""
    extra = _data()["models"]
    if isinstance(name, str) and name in extra:
        return TransformerConfig(**extra[name])
    return get_model(name)


_RUN_FIELDS = {"id", "kind", "model", "hardware", "n_chips", "metric", "published", "source", "check", "note",
               "calibration_point", "disagreement"}


@cache
def runs() -> tuple[Run, ...]:
    """Return every run of the suite, in the file's order."""
    out = []
    cited = sources()
    for spec in _data()["runs"]:
        if spec["kind"] not in _KINDS or spec["metric"] not in METRICS or spec["source"] not in cited:
            raise ValueError(f"run {spec.get('id')!r}: kind, metric or source unknown")
        params = {k: v for k, v in spec.items() if k not in _RUN_FIELDS}
        out.append(Run(**{k: v for k, v in spec.items() if k in _RUN_FIELDS and k != "model"},
                       model=model(spec["model"]), params=params))
    return tuple(out)


@checks(run=is_a(Run))
def flops_per_token(run: Run) -> float:
    """FLOPs per token by the convention the run's source used to report TFLOP/s or MFU (see the data file):
    'megatron-causal', 'megatron-full', 'narayanan2021' (counts the full recompute) or 'palm'."""
    m, seq, convention = run.model, run.params["seq_len"], run.params.get("flops", "megatron-causal")
    if convention == "megatron-causal":
        return m.flops_per_token(seq, causal=True)
    if convention == "megatron-full":
        return m.flops_per_token(seq, causal=False)
    if convention == "narayanan2021":
        layers, h = m.L, m.D
        return 96 * layers * h**2 * (1 + seq / (6 * h) + m.V / (16 * layers * h))
    if convention == "palm":
        return 6 * m.param_count() + 12 * m.L * m.N * m.H * seq
    raise ValueError(f"run {run.id!r}: flops={convention!r}; allowed: megatron-causal, megatron-full, "
                     f"narayanan2021, palm")


def _serving(run: Run, efficiency: str | Efficiency) -> float:
    p, chip, n = run.params, get_chip(run.hardware), run.n_chips
    dtype = p.get("dtype", "bf16")
    width = 1 if dtype in ("fp8", "int8") else 2
    param_bytes, kv_bytes = p.get("param_bytes", width), p.get("kv_bytes", width)
    ideal = efficiency == "ideal"
    common = dict(param_bytes=param_bytes, kv_bytes=kv_bytes, compute_dtype=dtype, efficiency=efficiency)
    kernel = {"gqa_kernel": p.get("gqa_kernel", True)}
    if run.kind == "decode":
        step = decode_step(run.model, chip, n, p["batch"], p["context"], **kernel, **common)
        return step.tokens_per_second if run.metric == "tokens_per_second" else step.time * 1e3
    if run.kind == "prefill":
        return prefill(run.model, chip, n, p["tokens"], mfu=1.0 if ideal else None, **common).time * 1e3
    # serve: prefill the whole batch, then osl decode steps at the mean context (KV reads grow linearly).
    first = prefill(run.model, chip, n, p["isl"], mfu=1.0 if ideal else None, batch=p["batch"], **common)
    step = decode_step(run.model, chip, n, p["batch"], p["isl"] + p["osl"] / 2, **kernel, **common)
    return p["batch"] * p["osl"] / (first.time + p["osl"] * step.time) / n


def _training(run: Run, efficiency: str | Efficiency) -> float:
    p = dict(run.params)
    keys = ("tp", "pp", "cp", "ep", "fsdp", "microbatch_tokens", "virtual_stages", "recompute", "dtype")
    layout = {k: p[k] for k in keys if k in p}
    layout.update({k: p[k] for k in ("sequence_parallel", "flash_attention", "master_bytes", "grad_bytes",
                                     "tp_overlap", "cp_overlap", "balanced_stages") if k in p})
    pred = train_predict(run.model, run.hardware, run.n_chips, p["global_batch_tokens"], p["seq_len"],
                         efficiency=efficiency, **layout)
    if run.metric == "params_optimizer_gib":
        m = pred.memory
        return (m["weights"] + m["gradients"] + m["optimizer"]) / GiB
    if run.metric == "activations_gib":
        return pred.memory["activations"] / GiB
    if run.metric == "step_time_s":
        return pred.step_time
    achieved = flops_per_token(run) * p["global_batch_tokens"] / pred.step_time / run.n_chips
    if run.metric == "tflops_per_chip":
        return achieved / 1e12
    return achieved / get_chip(run.hardware).peak_flops(p.get("dtype", "bf16"))


@checks(run=is_a(Run))
def predict(run: Run, efficiency: str | Efficiency = "calibrated") -> float:
    """Return the model's value of `run`'s metric, in the metric's units (tokens/s, ms, TFLOP/s, GiB ...)."""
    if run.kind in ("training", "memory"):
        return _training(run, efficiency)
    return _serving(run, efficiency)


def _faster(metric: str, predicted: float, published: float) -> bool:
    """Whether `predicted` is at least as fast as `published` (tiny rounding allowed)."""
    if metric in FASTER_IS_HIGHER:
        return predicted >= published * (1 - 1e-9)
    return predicted <= published * (1 + 1e-9)


@cache
def _results(efficiency: str) -> tuple[dict[str, Any], ...]:
    rows = []
    for run in runs():
        ideal = predict(run, "ideal")
        row = {"run": run.id, "kind": run.kind, "metric": run.metric, "published": run.published,
               "ideal": ideal, "ideal error": ideal / run.published - 1,
               "bound": _faster(run.metric, ideal, run.published) if run.metric not in
               ("params_optimizer_gib", "activations_gib") else None,
               "source": run.source, "check": run.check, "calibration point": run.calibration_point,
               "disagreement": run.disagreement}
        if efficiency != "ideal":
            value = predict(run, efficiency)
            row.update({efficiency: value, "error": value / run.published - 1})
        else:
            row["error"] = row["ideal error"]
        rows.append(row)
    return tuple(rows)


def results(efficiency: str = "calibrated") -> list[dict[str, Any]]:
    """Return one dict per run: published, ideal (and `efficiency`'s) prediction, their errors, and whether
    the ideal prediction is a bound (None for memory)."""
    if efficiency not in ("ideal", "calibrated"):
        raise ValueError(f"efficiency={efficiency!r}; allowed: 'ideal', 'calibrated'")
    return [dict(r) for r in _results(efficiency)]


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v * 100:+.0f}%"


@checks(kind=lambda n, v: v if v is None else check_choice(n, v, _KINDS))
def table(efficiency: str = "calibrated", kind: str | None = None) -> Table:
    """Published vs ideal vs `efficiency` for every run (or one `kind`), with the errors; ✓ where the ideal
    prediction is a bound (never slower than measured), ✗ where it is not."""
    rows = []
    for r in results(efficiency):
        if kind is not None and r["kind"] != kind:
            continue
        mark = " *" if r["calibration point"] else " †" if r["disagreement"] else ""
        row = {"run": r["run"] + mark, "metric": r["metric"],
               "published": r["published"], "ideal": r["ideal"],
               "bound": {True: "✓", False: "✗", None: ""}[r["bound"]]}
        if efficiency != "ideal":
            row.update({efficiency: r[efficiency], "error": r["error"]})
        else:
            row["error"] = r["error"]
        rows.append(row)
    num = lambda v: f"{v:.4g}"  # noqa: E731
    return Table(rows, formats={"published": num, "ideal": num, efficiency: num, "error": _pct},
                 title=f"published runs: measured vs ideal vs {efficiency} (* a calibration point, † a "
                       f"disagreement: see `disagreements()`)")


def disagreements() -> Table:
    """The runs the calibrated model misses by more than 35 %, with the published value, ours, and why."""
    rows = [{"run": r["run"], "published": r["published"], "calibrated": r["calibrated"], "error": r["error"],
             "why": r["disagreement"]} for r in results("calibrated") if r["disagreement"]]
    return Table(rows, formats={"published": lambda v: f"{v:.4g}", "calibrated": lambda v: f"{v:.4g}",
                                "error": _pct}, title="where the calibrated model disagrees with a published run")


def summary(efficiency: str = "calibrated") -> dict[str, Any]:
    """Return the suite's scorecard: median and largest absolute error over throughput/time rows (all of them,
    those not marked as disagreements, and the held-out ones: all but the calibration points a factor was
    derived from), the rows beyond ±35 %, memory rows beyond ±10 %, and the ideal predictions that are not
    bounds."""
    rows = results(efficiency)
    speed = [r for r in rows if r["bound"] is not None]
    memory = [r for r in rows if r["bound"] is None]
    errors = [abs(r["error"]) for r in speed]
    agreeing = [abs(r["error"]) for r in speed if not r["disagreement"]]
    held_out = [abs(r["error"]) for r in speed if not r["calibration point"]]
    return {
        "runs": len(rows),
        "median abs error": statistics.median(errors) if errors else math.nan,
        "median abs error, agreeing rows": statistics.median(agreeing) if agreeing else math.nan,
        "median abs error, held-out rows": statistics.median(held_out) if held_out else math.nan,
        "max abs error": max(errors, default=math.nan),
        "beyond 35%": [r["run"] for r in speed if abs(r["error"]) > 0.35],
        "memory beyond 10%": [r["run"] for r in memory if abs(r["error"]) > 0.10],
        "not a bound": [r["run"] for r in speed if not r["bound"]],
    }
