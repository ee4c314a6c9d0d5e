"""Transformer-math figures: attention's share of the training FLOPs against context length, and where a
model's parameters sit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..kinds import positive_range
from ..models import TransformerConfig, get_model
from ..units import checks, is_a
from .base import figure, finish

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["attention_share", "param_breakdown"]

PRESETS = ("llama3-8b", "llama3-70b", "llama3-405b", "deepseek-v3")

# Components of `TransformerConfig.components()` drawn as one bar segment each, in this order.
_GROUPS = {
    "attention": ("attention",),
    "dense MLP": ("MLP (dense)",),
    "MoE experts and routers": ("MoE routed experts", "MoE shared experts", "MoE routers"),
    "embedding + unembedding": ("embedding", "unembedding"),
    "norms": ("norms",),
}


@checks(causal="flag", T=positive_range, models=is_a(list, tuple))
def attention_share(models: Sequence[TransformerConfig | str] = PRESETS, T: tuple[float, float] = (512, 2**21),
                    causal: bool = True) -> Figure:
    """Plot the fraction of each model's training FLOPs spent in the two attention contractions against the
    sequence length T (log axis), with the 50% line where attention overtakes all the matmuls."""
    lo, hi = positive_range("T", T)
    fig, ax = figure()
    Ts = np.geomspace(lo, hi, 200)
    for model in models:
        cfg = get_model(model)
        attention = np.array([cfg.attention_flops_per_token(t / 2 if causal else t) for t in Ts])
        dense = 2 * cfg.matmul_params()
        (line,) = ax.semilogx(Ts, attention / (attention + dense), lw=2, label=f"{cfg.name} (D = {cfg.D})")
        half = dense / cfg.attention_flops_per_token(0.5 if causal else 1.0)
        if lo <= half <= hi:
            ax.plot(half, 0.5, "o", color=line.get_color())
    ax.axhline(0.5, color="#555", ls=":", lw=1, label="attention = all matmuls")
    ax.set_xlim(lo, hi)
    ax.set_ylim(0, 1)
    finish(ax, "sequence length T (tokens)", "share of training FLOPs in attention",
           f"Dot-product attention's share of the FLOPs ({'causal' if causal else 'full'} attention)", "upper left")
    return fig


@checks(active="flag", models=is_a(list, tuple))
def param_breakdown(models: Sequence[TransformerConfig | str] = PRESETS, active: bool = True) -> Figure:
    """Draw one horizontal bar per model split into attention, MLP, MoE, embeddings and norms as fractions of
    its parameters; with `active`, MoE models get a second bar for the parameters one token uses."""
    bars: list[tuple[str, dict[str, float], float]] = []
    for model in models:
        cfg = get_model(model)
        parts = cfg.components()
        for use_active in (False, True) if active and cfg.is_moe else (False,):
            counts = {group: sum(parts[n][use_active] for n in names if n in parts) for group, names in _GROUPS.items()}
            total = sum(counts.values())
            label = f"{cfg.name}{' (active)' if use_active else ''}"
            bars.append((label, {g: c / total for g, c in counts.items()}, total))
    fig, ax = figure((7.5, 0.6 * len(bars) + 1.8))
    ys = np.arange(len(bars))[::-1]
    left = np.zeros(len(bars))
    for group in _GROUPS:
        share = np.array([b[1][group] for b in bars])
        ax.barh(ys, share, left=left, label=group)
        left += share
    for y, (_, _, total) in zip(ys, bars):
        ax.text(1.01, y, f"{total / 1e9:.1f}B", va="center", fontsize=9)
    ax.set_yticks(ys, [b[0] for b in bars])
    ax.set_xlim(0, 1.12)
    ax.set_xlabel("fraction of the parameters (total in billions at the right)")
    ax.set_ylabel("model")
    ax.set_title("Where the parameters are")
    ax.legend(fontsize=8, ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    return fig
