"""The validation suite: published runs (`data/published_runs.toml`) run through scalebook's model.

Each run names what ran and what was measured. `predict_run(run, efficiency)` turns it into the same metric with
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

import dataclasses
import math
import statistics
import warnings
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from .data import load
from .hardware.chips import Efficiency, get_chip
from .inference.steps import decode_step, prefill
from .models import TransformerConfig, get_model
from .tables import Table
from .training.frameworks import DEFAULT_FRAMEWORK, NO_FRAMEWORK, Framework, check_framework, get_framework
from .training.layout import Layout
from .training.prediction import layout_of
from .training.prediction import predict as train_predict
from .units import check_choice, checks, is_a

__all__ = ["PublishedRun", "runs", "calibration_runs", "sources", "model", "predict_run", "results", "table", "summary",
           "disagreements", "flops_per_token", "derived_layer_overhead", "derived_framework_share",
           "generic_framework_share", "leave_one_source_out",
           "FASTER_IS_HIGHER", "FASTER_IS_LOWER", "METRICS", "STATUSES", "GiB"]

GiB = 2.0**30
# Metrics where a faster machine shows a larger number, and those where it shows a smaller one.
FASTER_IS_HIGHER = ("tokens_per_second", "out_tokens_per_second_per_chip", "tflops_per_chip", "mfu")
FASTER_IS_LOWER = ("ms_per_token", "ttft_ms", "step_time_s")
METRICS = FASTER_IS_HIGHER + FASTER_IS_LOWER + ("params_optimizer_gib", "activations_gib")
_KINDS = ("decode", "prefill", "serve", "training", "memory")
STATUSES = ("calibration", "development", "held-out")


@dataclass(frozen=True)
class PublishedRun:
    """One published measurement: `kind` of work, `model`, `hardware` (a chip name), `n_chips`, the `metric`
    and its `published` value, where it came from (`source`, `check`: V read in the source, S from a
    secondary summary, D derived by us), and the layout and sizes in `params`. `calibration_point`: a
    calibrated factor was read off this run, so it cannot test that factor. `disagreement`: why the calibrated
    model misses this run by more than 35 % (empty where it does not). `status` and `entered`: the row's
    provenance (`STATUSES`: a calibration source, a development row the model was changed after seeing, or a
    row held out since it entered the suite on `entered`)."""

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
    status: str = "development"
    entered: str = ""
    params: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def family(self) -> str:
        """The row's family: its kind of work and the kind of chip, e.g. 'training GPU' or 'decode TPU'."""
        return f"{'training' if self.kind == 'memory' else self.kind} {get_chip(self.hardware).kind.upper()}"


@cache
def _data(name: str = "published_runs") -> dict[str, Any]:
    return load(f"data/{name}.toml")


def sources() -> dict[str, str]:
    """Return {key: citation} of every source the suite and its calibration runs draw on."""
    return {**_data("calibration_runs")["sources"], **_data()["sources"]}


def model(name: str | TransformerConfig) -> TransformerConfig:
    """Return a preset (`models.get_model`) or one of the suite's own models (GPT shapes of the Megatron
    papers, Llama 2, PaLM, NeMo's GPT-3 and Nemotron ...), by key."""
    if isinstance(name, str):
        for file in ("calibration_runs", "published_runs"):
            extra = _data(file).get("models", {})
            if name in extra:
                return TransformerConfig(**extra[name])
    return get_model(name)


_RUN_FIELDS = {"id", "kind", "model", "hardware", "n_chips", "metric", "published", "source", "check", "note",
               "calibration_point", "disagreement", "status", "entered"}


def _runs(file: str) -> tuple[PublishedRun, ...]:
    out = []
    cited = sources()
    for spec in _data(file)["runs"]:
        if spec["kind"] not in _KINDS or spec["metric"] not in METRICS or spec["source"] not in cited \
                or spec.get("status", "development") not in STATUSES:
            raise ValueError(f"run {spec.get('id')!r}: kind, metric, source or status unknown")
        params = {k: v for k, v in spec.items() if k not in _RUN_FIELDS}
        out.append(PublishedRun(**{k: v for k, v in spec.items() if k in _RUN_FIELDS and k != "model"},
                       model=model(spec["model"]), params=params))
    return tuple(out)


@cache
def runs() -> tuple[PublishedRun, ...]:
    """Return every run of the suite, in the file's order."""
    return _runs("published_runs")


@cache
def calibration_runs() -> tuple[PublishedRun, ...]:
    """Return the calibration sources kept apart from the suite (`data/calibration_runs.toml`): the rows a
    factor or a mechanism's constant is read off, never scored."""
    return _runs("calibration_runs")


@checks(run=is_a(PublishedRun))
def flops_per_token(run: PublishedRun) -> float:
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


def _serving(run: PublishedRun, efficiency: str | Efficiency) -> float:
    p, chip, n = run.params, get_chip(run.hardware), run.n_chips
    dtype = p.get("dtype", "bf16")
    width = 1 if dtype in ("fp8", "int8") else 2
    param_bytes, kv_bytes = p.get("param_bytes", width), p.get("kv_bytes", width)
    # a serving layout where the row names one (DP attention, EP), else tensor parallelism over the chips
    layout = Layout(**{k: p[k] for k in ("dp", "tp", "ep") if k in p}) if {"dp", "ep"} & p.keys() else None
    common = dict(param_bytes=param_bytes, kv_bytes=kv_bytes, compute_dtype=dtype, efficiency=efficiency,
                  layout=layout)
    kernel = {"gqa_kernel": p.get("gqa_kernel", True)}
    if run.kind == "decode":
        step = decode_step(run.model, chip, n, p["batch"], p["context"], **kernel, **common)
        return step.tokens_per_second if run.metric == "tokens_per_second" else step.time * 1e3
    if run.kind == "prefill":
        first = prefill(run.model, chip, n, p["tokens"], batch=p.get("batch", 1), **common)
        return first.tokens_per_second if run.metric == "tokens_per_second" else first.time * 1e3
    # serve: prefill the whole batch, then osl decode steps at the mean context (KV reads grow linearly).
    first = prefill(run.model, chip, n, p["isl"], batch=p["batch"], **common)
    step = decode_step(run.model, chip, n, p["batch"], p["isl"] + p["osl"] / 2, **kernel, **common)
    return p["batch"] * p["osl"] / (first.time + p["osl"] * step.time) / n


def _training(run: PublishedRun, efficiency: str | Efficiency, framework: str | Framework | None) -> float:
    p = dict(run.params)
    # the data file says whether FSDP shards the data-parallel chips (fsdp = true), and over how many slices
    layout = layout_of(run.n_chips, None, p.get("slices", 1),
                       **{k: p.get(k) for k in ("tp", "pp", "cp", "ep", "fsdp", "virtual_stages")})
    settings = {k: p[k] for k in ("microbatch_tokens", "recompute", "dtype", "sequence_parallel", "flash_attention",
                                  "master_bytes", "grad_bytes", "tp_overlap", "cp_overlap", "balanced_stages",
                                  "reshard_after_forward", "expert_imbalance", "capacity_factor", "ep_overlap",
                                  "fp8_recipe", "cp_rotate", "repeat_kv")
                if k in p}
    pred = train_predict(run.model, run.hardware, run.n_chips, p["global_batch_tokens"], p["seq_len"],
                         layout=layout, efficiency=efficiency,
                         framework=p.get("framework", DEFAULT_FRAMEWORK) if framework is None else framework,
                         **settings)
    if p.get("zero_stage") == 2 and pred.layout.microbatches > 1:
        raise ValueError(f"run {run.id!r}: zero_stage=2 with {pred.layout.microbatches} microbatches a step: ZeRO-2 "
                         f"reduce-scatters every microbatch's gradients, which the model does not price (it prices "
                         f"ZeRO-1's once a step, the same traffic when a replica runs one microbatch)")
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


@checks(run=is_a(PublishedRun), framework=lambda n, v: v if v is None else check_framework(n, v))
def predict_run(run: PublishedRun, efficiency: str | Efficiency = "calibrated",
                framework: str | Framework | None = None) -> float:
    """Return the model's value of published `run`'s metric, in the metric's units (tokens/s, ms, TFLOP/s, GiB ...).

    One name, one thing: this prices a published run (whatever its metric); `training.predict` prices one
    training layout, and is what this one calls for a training run's step. A training run is priced with the
    framework its row names (`framework` in the data file; None here), or with `framework`."""
    if run.kind in ("training", "memory"):
        return _training(run, efficiency, framework)
    return _serving(run, efficiency)


def predict(run: PublishedRun, efficiency: str | Efficiency = "calibrated") -> float:
    """The old name of `predict_run` (it warns until release 0.3: `training.predict` is another thing)."""
    warnings.warn("sb.validation.predict is deprecated and goes in release 0.3: use sb.validation.predict_run "
                  "(it prices a published run; sb.training.predict prices a layout)", DeprecationWarning,
                  stacklevel=2)
    return predict_run(run, efficiency)


def _speed_ratio(metric: str, predicted: float, published: float) -> float:
    """How much faster the run went than predicted: published over predicted speed (above 1: we were slow)."""
    return published / predicted if metric in FASTER_IS_HIGHER else predicted / published


def _without(hardware: str, **factors: float | None) -> Efficiency:
    """The chip's calibrated factors with some set aside (to read one of them off its calibration rows)."""
    return dataclasses.replace(get_chip(hardware).efficiency("calibrated"), **factors)


@checks(hardware="text")
def derived_layer_overhead(hardware: str) -> float:
    """Return the seconds of fixed cost per layer and forward pass read off the calibration rows: TensorRT-LLM's
    GPT-J 6B first-token latency at 128 tokens on `hardware`, less our calibrated prefill without that cost, over
    its 28 layers (a short prompt's matmuls are tiny, so what is left is what every layer's kernels cost)."""
    rows = [r for r in runs() if r.status == "calibration" and r.kind == "prefill"
            and get_chip(r.hardware) is get_chip(hardware) and r.params["tokens"] <= 128]
    if not rows:
        raise ValueError(f"hardware={hardware!r}: no short-prompt calibration row on it")
    eff = _without(hardware, layer_overhead=0.0)
    return statistics.mean((r.published - predict_run(r, eff)) / 1e3 / r.model.L for r in rows)


def _share_free_ratio(run: PublishedRun) -> float:
    """Published over predicted speed of a training `run` with no framework share (the modelled rate itself)."""
    eff = _without(run.hardware, framework=1.0, framework_fp8=None)
    return _speed_ratio(run.metric, predict_run(run, eff, NO_FRAMEWORK), run.published)


@checks(hardware="text", dtype="dtype", framework=check_framework)
def derived_framework_share(hardware: str, dtype: str = "fp8", framework: str = "megatron") -> float:
    """Return the share of our calibrated training rate `framework` reaches, read off its training calibration
    rows on `hardware` in `dtype`: the median of published over predicted speed with the framework term set aside.
    Megatron's rows (the chip's own share, chips.toml): NeMo's FP8 performance table (`calibration_runs`), and in
    BF16 the suite's rows marked as calibration, Megatron-Core's weak-scaling table on H100 and Megatron-LM's 2021
    table on A100. Other families: their rows of `calibration_runs` (`data/frameworks.toml` names them)."""
    family = get_framework(framework).key
    rows = [r for r in (*calibration_runs(), *runs()) if r.kind == "training" and r.status == "calibration"
            and r.params.get("framework", DEFAULT_FRAMEWORK) == family
            and get_chip(r.hardware) is get_chip(hardware) and r.params.get("dtype", "bf16") == dtype]
    if not rows:
        raise ValueError(f"hardware={hardware!r}, dtype={dtype!r}, framework={framework!r}: no training "
                         f"calibration row")
    return statistics.median(_share_free_ratio(r) for r in rows)


@cache
def _ratios_by_source() -> dict[str, tuple[tuple[PublishedRun, float], ...]]:
    """{source: ((run, published over share-free predicted speed), ...)} over every training row of the suite and
    the calibration file, whatever its status."""
    out: dict[str, list[tuple[PublishedRun, float]]] = {}
    for r in (*calibration_runs(), *runs()):
        if r.kind == "training":
            out.setdefault(r.source, []).append((r, _share_free_ratio(r)))
    return {source: tuple(rows) for source, rows in out.items()}


def generic_framework_share(leave_out: str | None = None) -> float:
    """Return the generic framework share (`frameworks.toml`'s default): the median over training sources (each
    source once: the median of its rows) of published over predicted speed with no share, every source but
    `leave_out` (a source key, for `leave_one_source_out`)."""
    by_source = _ratios_by_source()
    if leave_out is not None and leave_out not in by_source:
        raise ValueError(f"leave_out={leave_out!r} is not a training source; allowed: {sorted(by_source)}")
    return statistics.median(statistics.median(ratio for _, ratio in rows)
                             for source, rows in by_source.items() if source != leave_out)


@cache
def _leave_one_source_out() -> dict[str, Any]:
    """`leave_one_source_out`, computed once (the caller gets copies)."""
    table = []
    for source, rows in _ratios_by_source().items():
        share = generic_framework_share(leave_out=source)
        errors = [share / ratio - 1 for _, ratio in rows]
        table.append({"source": source, "rows": len(rows), "share": share,
                      "median abs error": statistics.median(abs(e) for e in errors),
                      "bias": statistics.median(errors)})
    return {"sources": table, "median abs error": statistics.median(t["median abs error"] for t in table),
            "bias": statistics.median(t["bias"] for t in table)}


def leave_one_source_out() -> dict[str, Any]:
    """Score the generic framework share out of sample: for each training source, read the share off all the
    others (`generic_framework_share(leave_out=source)`), predict the source's rows with it and take their speed
    errors (positive: too fast). Returns 'sources' (one dict per source: rows, the share, median |error|, bias)
    and, over the sources (each once), the median of their median |error| ('median abs error') and of their bias
    ('bias'): the error to expect of the generic default on a framework, machine and team it has never seen."""
    scored = _leave_one_source_out()
    return {**scored, "sources": [dict(row) for row in scored["sources"]]}


def _faster(metric: str, predicted: float, published: float) -> bool:
    """Whether `predicted` is at least as fast as `published` (tiny rounding allowed)."""
    if metric in FASTER_IS_HIGHER:
        return predicted >= published * (1 - 1e-9)
    return predicted <= published * (1 + 1e-9)


@cache
def _results(efficiency: str) -> tuple[dict[str, Any], ...]:
    rows = []
    for run in runs():
        ideal = predict_run(run, "ideal")
        row = {"run": run.id, "kind": run.kind, "metric": run.metric, "published": run.published,
               "ideal": ideal, "ideal error": ideal / run.published - 1,
               "bound": _faster(run.metric, ideal, run.published) if run.metric not in
               ("params_optimizer_gib", "activations_gib") else None,
               "source": run.source, "check": run.check, "calibration point": run.calibration_point,
               "disagreement": run.disagreement, "status": run.status, "family": run.family, "chips": run.n_chips}
        value = ideal if efficiency == "ideal" else predict_run(run, efficiency)
        if efficiency != "ideal":
            row[efficiency] = value
        row["error"] = value / run.published - 1
        row["speed error"] = None if row["bound"] is None else 1 / _speed_ratio(run.metric, value, run.published) - 1
        rows.append(row)
    return tuple(rows)


def results(efficiency: str = "calibrated") -> list[dict[str, Any]]:
    """Return one dict per run: published, ideal (and `efficiency`'s) prediction, their errors (in the metric's
    units, and as 'speed error': predicted over published speed - 1, positive when the model is too fast), whether
    the ideal prediction is a bound (None for memory), the row's status and family."""
    if efficiency not in ("ideal", "calibrated"):
        raise ValueError(f"efficiency={efficiency!r}; allowed: 'ideal', 'calibrated'")
    return [dict(r) for r in _results(efficiency)]


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v * 100:+.0f}%"


@checks(kind=lambda n, v: v if v is None else check_choice(n, v, _KINDS))
def table(efficiency: str = "calibrated", kind: str | None = None) -> Table:
    """Published vs ideal vs `efficiency` for every run (or one `kind`), with the errors and each row's status
    (test: held out; dev: development; cal: a calibration source); ✓ where the ideal prediction is a bound (never
    slower than measured), ✗ where it is not."""
    short = {"held-out": "test", "development": "dev", "calibration": "cal"}
    rows = []
    for r in results(efficiency):
        if kind is not None and r["kind"] != kind:
            continue
        row = {"run": r["run"] + (" †" if r["disagreement"] else ""), "status": short[r["status"]],
               "metric": r["metric"], "published": r["published"], "ideal": r["ideal"],
               "bound": {True: "✓", False: "✗", None: ""}[r["bound"]]}
        if efficiency != "ideal":
            row[efficiency] = r[efficiency]
        row["error"] = r["error"]
        rows.append(row)
    num = lambda v: f"{v:.4g}"  # noqa: E731
    return Table(rows, formats={"published": num, "ideal": num, efficiency: num, "error": _pct},
                 title=f"published runs: measured vs the ideal bound"
                       f"{'' if efficiency == 'ideal' else f' vs the {efficiency} model'} (status: test = held "
                       f"out, dev = development, cal = calibration; † a reason recorded: see `disagreements()`)")


def disagreements() -> Table:
    """Every run the calibrated model misses by more than 35 % (its speed error), whatever the data file says,
    with its status, the published value, ours, and the reason the data file records (or that none is)."""
    rows = [{"run": r["run"], "status": r["status"], "published": r["published"], "calibrated": r["calibrated"],
             "speed error": r["speed error"], "why": r["disagreement"] or "no explanation recorded"}
            for r in results("calibrated") if r["speed error"] is not None and abs(r["speed error"]) > 0.35]
    return Table(rows, formats={"published": lambda v: f"{v:.4g}", "calibrated": lambda v: f"{v:.4g}",
                                "speed error": _pct},
                 title="where the calibrated model misses a published run by more than 35 % (speed error > 0: "
                       "too fast)")


def _scores(errors: list[float]) -> dict[str, Any]:
    """Rows, median |error|, bias (the median signed error: positive, too fast) and scatter (the median distance
    from that bias) of a group of speed errors (None for an empty group)."""
    if not errors:
        return {"rows": 0, "median abs error": None, "bias": None, "scatter": None}
    bias = statistics.median(errors)
    return {"rows": len(errors), "median abs error": statistics.median(abs(e) for e in errors), "bias": bias,
            "scatter": statistics.median(abs(e - bias) for e in errors)}


def summary(efficiency: str = "calibrated") -> dict[str, Any]:
    """Return the suite's scorecard over its throughput and time rows, by provenance (`STATUSES`): the test rows
    (held out: no model change was made after their error was seen, no factor read off them) give the error to
    expect on a new run; the development rows measure fit; the calibration rows show what their factors left.
    Each group has its median |error|, bias (median signed speed error: positive when the model is too fast) and
    scatter; `families` splits them by kind of work x GPU/TPU. Also: the rows beyond ±35 % (all, and test rows),
    memory rows beyond ±10 %, and the ideal predictions that are not bounds."""
    rows = results(efficiency)
    speed = [r for r in rows if r["bound"] is not None]
    memory = [r for r in rows if r["bound"] is None]

    def group(status: str, family: str | None = None) -> dict[str, Any]:
        return _scores([r["speed error"] for r in speed if r["status"] == status
                        and (family is None or r["family"] == family)])

    families = sorted({r["family"] for r in speed})
    test = group("held-out")
    return {
        "runs": len(rows),
        "test rows": test,
        "development rows": group("development"),
        "calibration rows": group("calibration"),
        "families": {f: {status: group(status, f) for status in STATUSES} for f in families},
        "median abs error, test rows": test["median abs error"],
        "bias, test rows": test["bias"],
        "median abs error": statistics.median(abs(r["speed error"]) for r in speed) if speed else math.nan,
        "max abs error": max((abs(r["speed error"]) for r in speed), default=math.nan),
        "beyond 35%": [r["run"] for r in speed if abs(r["speed error"]) > 0.35],
        "beyond 35%, test rows": [r["run"] for r in speed if r["status"] == "held-out"
                                  and abs(r["speed error"]) > 0.35],
        "memory beyond 10%": [r["run"] for r in memory if abs(r["error"]) > 0.10],
        "not a bound": [r["run"] for r in speed if not r["bound"]],
    }
