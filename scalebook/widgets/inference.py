"""Explorers for the inference chapter: the latency/throughput Pareto with a context-length slider, where a decode
step's time goes as the batch grows, and the KV cache of each attention variant.

Each answer is an SVG `Chart` with a `Table` or `StepEstimate` beside it: a redraw takes milliseconds.
"""

from __future__ import annotations

from ..estimate import StepEstimate
from ..hardware.chips import get_chip
from ..inference.caches import kv_variant_table
from ..inference.cost import cost_per_million_tokens
from ..inference.steps import breakdown_curves, decode_step, pareto
from ..svg import Chart
from ..tables import Table
from ..units import checks, fmt_time
from .core import Explorer, Log, explore
from .models import Model, model_menu

__all__ = ["pareto_explorer", "latency_breakdown_explorer", "kv_variants_explorer"]

# Bytes per weight (and per cached value) for each menu entry.
_PRECISIONS = {"int8": 1, "bf16": 2, "int4": 0.5}
_CHIPS = ["v5e", "v6e", "v5p", "h100", "b200"]
_REFERENCE_CONTEXTS = (1024, 32768)


def _options(first, rest):
    return [first, *[r for r in rest if r != first]]


def _cost(chip: str, rate: float) -> float | None:
    try:
        return cost_per_million_tokens(chip, rate)
    except KeyError:
        return None


def _pareto_view(model: str, chip: str, n_chips: int, precision: str, context: float, lookup) -> tuple[Chart, Table]:
    cfg, b = lookup(model), _PRECISIONS[precision]
    context = round(context)
    chart = Chart(title=f"{cfg.name}: latency vs throughput on {n_chips} × {get_chip(chip).name} ({precision})",
                  xlabel="per-token latency: one decode step (ms)", ylabel="tokens/s per chip", xlog=True, ylog=True)
    rows = []
    for ctx in (*_REFERENCE_CONTEXTS, context):
        curve = pareto(cfg, chip, n_chips, ctx, param_bytes=b, kv_bytes=b)
        if not curve:
            continue
        batches, steps, rates = (curve.column(c) for c in ("batch", "step", "tokens/s/chip"))
        current = ctx == context
        chart.line([s * 1e3 for s in steps], rates, label=f"context {ctx}" if current else f"context {ctx} (ref.)",
                   color="#d62728" if current else None, dash=not current)
        if current:
            chart.points([s * 1e3 for s in steps], rates, color="#d62728")
            rows = [{"batch": bb, "step": s, "tokens/s/chip": r, "$ per 1M tokens": _cost(chip, r)}
                    for bb, s, r in zip(batches, steps, rates)]
    table = Table(rows, columns=["batch", "step", "tokens/s/chip", "$ per 1M tokens"],
                  formats={"step": fmt_time, "tokens/s/chip": "{:.4g}".format, "$ per 1M tokens": "{:.3g}".format},
                  title=f"context {context}: batch 1 up to the largest batch that fits"
                        if rows else f"context {context}: the weights leave no room for a KV cache")
    return chart, table


@checks(n_chips="count", context="size", precision=_PRECISIONS)
def pareto_explorer(model: Model = "llama3-70b", chip: str = "v5e", n_chips: int = 16, precision: str = "int8",
                    context: float = 8192) -> Explorer:
    """Return an explorer of the latency/throughput trade-off over the batch (the book's interactive Pareto):
    drag the context length and watch the curve shrink; the two dashed curves stay at 1k and 32k tokens."""
    menu, lookup = model_menu(model)
    return explore(lambda model, chip, n_chips, precision, context:
                   _pareto_view(model, chip, n_chips, precision, context, lookup),
                   title="Latency vs throughput", model=menu, chip=_options(chip, _CHIPS),
                   n_chips=_options(n_chips, [4, 8, 16, 32, 64, 256]),
                   precision=_options(precision, list(_PRECISIONS)), context=Log(128, 131072, context))


def _breakdown_view(model: str, chip: str, n_chips: int, precision: str, context: float, batch: float,
                    lookup) -> tuple[Chart, StepEstimate]:
    cfg, b = lookup(model), _PRECISIONS[precision]
    context, batch = round(context), round(batch)
    c = breakdown_curves(cfg, chip, n_chips, context, b, b, [2 ** (i / 4) for i in range(49)])
    chart = Chart(title=f"Decode step of {cfg.name}, context {context}, {n_chips} × {get_chip(chip).name}",
                  xlabel="batch (sequences)", ylabel="time (ms)", xlog=True, ylog=True, xlim=(1, 4096))
    chart.span(c.crossover, 4096, "#2ca02c", f"compute-bound: B > {c.crossover:.0f}")
    chart.line(c.batches, [t * 1e3 for t in c.t_params], label="weights from HBM", color="#4e79a7")
    chart.line(c.batches, [t * 1e3 for t in c.t_kv], label="KV caches from HBM", color="#f28e2b")
    chart.line(c.batches, [t * 1e3 for t in c.t_math], label="FLOPs", color="#59a14f")
    chart.line(c.batches, [t * 1e3 for t in c.step], label="step = KV + max(weights, FLOPs)", color="#000", dash=True)
    if 1 <= c.limit <= 4096:
        chart.vline(c.limit, label=f"HBM full at B = {c.limit}")
    step = decode_step(cfg, chip, n_chips, batch, context, b, b)
    chart.points([batch], [step.time * 1e3], label=f"B = {batch}: {fmt_time(step.time)}", color="#d62728")
    return chart, step


@checks(n_chips="count", context="size", batch="size", precision=_PRECISIONS)
def latency_breakdown_explorer(model: Model = "llama3-70b", chip: str = "v5e", n_chips: int = 16,
                               precision: str = "int8", context: float = 8192, batch: float = 64) -> Explorer:
    """Return an explorer of a decode step's three times (weights, KV caches, FLOPs) against the batch, with the
    compute-bound batches shaded and the step at `batch` marked (the book's second interactive figure)."""
    menu, lookup = model_menu(model)
    return explore(lambda model, chip, n_chips, precision, context, batch:
                   _breakdown_view(model, chip, n_chips, precision, context, batch, lookup),
                   title="Where the decode step's time goes", model=menu, chip=_options(chip, _CHIPS),
                   n_chips=_options(n_chips, [4, 8, 16, 32, 64, 256]),
                   precision=_options(precision, list(_PRECISIONS)), context=Log(128, 131072, context),
                   batch=Log(1, 4096, batch))


def _variants_view(model: str, context: float, batch: float, window: float, local_layers: float, share: int,
                   lookup) -> tuple[Table, Chart]:
    cfg = lookup(model)
    context, batch = round(context), round(batch)
    table = kv_variant_table(cfg, context, batch, round(window), local_layers, share)
    xs = [2 ** (i / 2) for i in range(20, 41)]
    curves = [kv_variant_table(cfg, x, 1, round(window), local_layers, share).column("KV bytes") for x in xs]
    chart = Chart(title=f"KV cache per sequence of {cfg.name}", xlabel="context length (tokens)",
                  ylabel="bytes per sequence", xlog=True, ylog=True)
    for i, name in enumerate(table.column("variant")):
        chart.line(xs, [c[i] for c in curves], label=name)
    chart.vline(context, label=f"context {context}")
    return table, chart


@checks(context="size", batch="size", window="size", local_layers="frac0", share="count")
def kv_variants_explorer(model: Model = "llama3-70b", context: float = 32768, batch: float = 1, window: float = 4096,
                         local_layers: float = 5 / 6, share: int = 2) -> Explorer:
    """Return an explorer of the KV cache under MHA, GQA, MQA, local attention, cross-layer sharing and int8."""
    menu, lookup = model_menu(model)
    return explore(lambda model, context, batch, window, local_layers, share:
                   _variants_view(model, context, batch, window, local_layers, share, lookup),
                   title="KV-cache tricks", model=menu, context=Log(128, 2**20, context), batch=Log(1, 1024, batch),
                   window=Log(256, 65536, window), local_layers=(0.0, 1.0, 1 / 12, local_layers),
                   share=_options(share, [1, 2, 3, 4, 6]))

