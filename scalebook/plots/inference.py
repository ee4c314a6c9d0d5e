"""Figures for the inference chapter: the latency/throughput Pareto, what a decode step spends its time on, the KV
cache of each attention variant, and one layer's latency and throughput against the batch.

Each draws what a ground function returns: `inference.pareto`, `inference.breakdown_curves`,
`inference.kv_variant_table` and `inference.decode_time`; the chapter's explorers draw the same as SVG.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import inference
from ..hardware.chips import Chip, get_chip
from ..inference.caches import kv_variant_table
from ..inference.steps import breakdown_curves, decode_critical_batch, decode_time
from ..kinds import positive_range
from ..models import TransformerConfig, get_model
from ..units import checks
from .base import figure, finish, legend_below

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["pareto", "latency_breakdown", "kv_variants", "throughput_vs_batch"]

Model = TransformerConfig | str
_TERMS = {"t_params": ("weights from HBM", "#4e79a7"), "t_kv": ("KV caches from HBM", "#f28e2b"),
          "t_math": ("FLOPs", "#59a14f")}


@checks(n_chips="count", param_bytes="size", kv_bytes="size", contexts="sizes")
def pareto(model: Model = "llama3-70b", chip: Chip | str = "v5e", n_chips: int = 16,
           contexts: Sequence[float] = (1024, 4096, 8192, 32768), param_bytes: float = 1,
           kv_bytes: float = 1) -> Figure:
    """Plot tokens/s per chip against the per-token latency (the decode step) as the batch doubles, one curve per
    context length, each ending at the largest batch that fits in HBM (log-log)."""
    import numpy as np  # for drawing, beside matplotlib: the calculations here need no NumPy

    if not contexts:
        raise ValueError("contexts must list at least one context length")
    fig, ax = figure((7.5, 4.8))
    for context in contexts:
        curve = inference.pareto(model, chip, n_chips, context, param_bytes=param_bytes, kv_bytes=kv_bytes)
        if not curve:
            continue
        batches, steps, rates = (curve.column(c) for c in ("batch", "step", "tokens/s/chip"))
        (line,) = ax.loglog(np.array(steps) * 1e3, rates, "o-", ms=3, lw=1.8, label=f"context {context:g}")
        ax.annotate(f"B = {batches[-1]}", (steps[-1] * 1e3, rates[-1]), textcoords="offset points", xytext=(4, -10),
                    fontsize=8, color=line.get_color())
    finish(ax, "per-token latency: one decode step (ms)", "throughput (tokens/s per chip)",
           f"Latency vs throughput: {get_model(model).name}, {n_chips} × {get_chip(chip).name}, "
           f"{param_bytes:g}-byte weights", "lower right")
    return fig


@checks(n_chips="count", context="size", param_bytes="size", kv_bytes="size", batches=positive_range)
def latency_breakdown(model: Model = "llama3-70b", chip: Chip | str = "v5e", n_chips: int = 16, context: float = 8192,
                      param_bytes: float = 1, kv_bytes: float = 1, batches: tuple[float, float] = (1, 4096)) -> Figure:
    """Stack the shares of a decode step's time against the batch (log x): the KV-cache reads, and the weight reads
    or the FLOPs, whichever is longer (they overlap); the step time itself on the right axis (log), the
    compute-bound batches shaded and the largest batch that fits in HBM marked."""
    import numpy as np  # for drawing, beside matplotlib: the calculations here need no NumPy

    lo, hi = positive_range("batches", batches)
    c = breakdown_curves(model, chip, n_chips, context, param_bytes, kv_bytes, list(np.geomspace(lo, hi, 200)))
    bs, step = np.array(c.batches), np.array(c.step)
    kv, params, math_ = (np.array(t) / step for t in (c.t_kv, c.t_params, c.t_math))
    fig, ax = figure((7.0, 5.2))
    ax.fill_between(bs, 0, kv, color=_TERMS["t_kv"][1], alpha=0.85, label="KV caches from HBM")
    weights_win = params >= math_
    flops_win = ~weights_win
    flops_win[:-1] |= flops_win[1:]  # overlap one sample so no white sliver opens where the two bands meet
    ax.fill_between(bs, kv, 1, where=weights_win, color=_TERMS["t_params"][1], alpha=0.85,
                    label="weights from HBM (longer than the FLOPs)")
    ax.fill_between(bs, kv, 1, where=flops_win, color=_TERMS["t_math"][1], alpha=0.85,
                    label="FLOPs (longer than the weight reads)")
    ax.axvline(c.crossover, color="#2b6a2b", ls=":", lw=1.5, label=f"critical batch ≈ {c.crossover:.0f}")
    if lo <= c.limit <= hi:
        ax.axvspan(c.limit, hi, color="white", alpha=0.5)
        ax.axvline(c.limit, color="black", ls="--", lw=1.2, label=f"HBM full at B = {c.limit} (paler beyond)")
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(0, 1)
    right = ax.twinx()
    right.semilogy(bs, step * 1e3, color="black", lw=2, label="step time (right axis)")
    right.set_ylabel("decode step time (ms)")
    finish(ax, "batch (sequences)", "share of the step time",
           f"Where a decode step's time goes: {get_model(model).name}, context {context:g}, {n_chips} × "
           f"{get_chip(chip).name}", "center left")
    handles, labels = ax.get_legend_handles_labels()
    extra, extra_labels = right.get_legend_handles_labels()
    legend_below(ax, handles=handles + extra, labels=labels + extra_labels)
    return fig  # the legend sits under the figure: the stacked shares fill every point of the axes


@checks(context="size", window="size", local_layers="frac0", share="count", contexts=positive_range)
def kv_variants(model: Model = "llama3-70b", context: float = 32768, window: float = 4096,
                local_layers: float = 5 / 6, share: int = 2, contexts: tuple[float, float] = (1024, 2**20)) -> Figure:
    """Two panels: each attention variant's KV cache for one sequence of `context` tokens (bars, GB), and the same
    against the context length (log-log), where local attention flattens out."""
    import numpy as np  # for drawing, beside matplotlib: the calculations here need no NumPy

    lo, hi = positive_range("contexts", contexts)
    table = kv_variant_table(model, context, 1, window, local_layers, share)
    fig, (bars, lines) = figure((10.0, 4.6), ncols=2)
    names = table.column("variant")
    ys = np.arange(len(names))[::-1]
    gb = np.array(table.column("KV bytes")) / 1e9
    bars.barh(ys, gb, color=[f"C{i}" for i in range(len(names))])
    for y, v in zip(ys, gb):
        bars.text(v, y, f" {v:.3g} GB", va="center", fontsize=8)
    bars.set_yticks(ys, names, fontsize=8)
    bars.set_xlim(0, gb.max() * 1.3)
    bars.set_xlabel(f"KV cache of one {context:g}-token sequence (GB)")
    bars.set_ylabel("attention variant")
    bars.set_title("Per attention variant")
    xs = np.geomspace(lo, hi, 80)
    for i, name in enumerate(names):
        per = [kv_variant_table(model, x, 1, window, local_layers, share)[i]["KV bytes"] / 1e9 for x in xs]
        lines.loglog(xs, per, color=f"C{i}", lw=1.8, label=name)
    lines.axvline(context, color="#555", ls=":", lw=1)
    finish(lines, "context length (tokens)", "KV cache per sequence (GB)",
           "Against the context length\n(colours as on the left)", "upper left")
    lines.get_legend().remove()  # the bars on the left name each colour: a legend here would cover the curves
    fig.suptitle(f"KV-cache tricks on {get_model(model).name}")
    return fig


@checks(params="size", n_chips="count", param_bytes="size", batches=positive_range)
def throughput_vs_batch(params: float = 600e6, chip: Chip | str = "v5e", n_chips: int = 4, param_bytes: float = 2,
                        batches: tuple[float, float] = (1, 4096)) -> Figure:
    """Two panels for a layer (or model) of `params` weights split over `n_chips`, no KV cache: the step time and
    the tokens/s against the batch (log-log), flat and then rising at the critical batch."""
    import numpy as np  # for drawing, beside matplotlib: the calculations here need no NumPy

    lo, hi = positive_range("batches", batches)
    bs = sorted({max(1, round(b)) for b in np.geomspace(lo, hi, 120)})
    steps = [decode_time(params, 0, b, chip, n_chips, param_bytes) for b in bs]
    knee = decode_critical_batch(chip, param_bytes)
    fig, (left, right) = figure((10.0, 4.2), ncols=2)
    left.loglog(bs, [s.time * 1e6 for s in steps], lw=2, label="step time")
    right.loglog(bs, [s.tokens_per_second for s in steps], lw=2, color="C1", label="tokens/s")
    for ax in (left, right):
        ax.axvline(knee, color="#555", ls=":", lw=1.2, label=f"critical batch ≈ {knee:.0f}")
    name = get_chip(chip).name
    finish(left, "batch (tokens)", "step time (µs)", f"Latency: {params / 1e6:.0f}M weights on {n_chips} × {name}",
           "upper left")
    finish(right, "batch (tokens)", "throughput (tokens/s)", "Throughput", "upper left")
    return fig
