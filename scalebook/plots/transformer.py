"""Concept diagrams of a Transformer, drawn from a `TransformerConfig` so that every shape is the model's: one
decoder layer with its einsums, a mixture-of-experts layer, the tiles of flash attention, and how a matmul's
FLOPs add up (every count from `roofline.einsum_flops`)."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from ..models import TransformerConfig, get_model, layer_einsums
from ..roofline import einsum_flops
from ..units import checks, fmt_si
from .base import ROLES, SIZES
from .diagram import COLOURS, arrow, box, canvas, panels

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["MATMUL_MARK", "layer_einsums", "layer_diagram", "moe_diagram", "flash_tiles", "matmul_flops"]


MATMUL_MARK = "●"  # what marks a matmul in the layer diagram, as the chapters' captions name it


def _n(value: float) -> str:
    return fmt_si(value, "").strip()


def layer_diagram(model: TransformerConfig | str = "llama3-70b", title: str | None = None) -> Figure:
    """Draw one pre-norm decoder layer top to bottom as a graph: the residual stream (grey, left) with its two
    adds, the norms, the Q/K/V projections, attention and the O projection, then the (gated) MLP. Every matmul is
    a white box marked `MATMUL_MARK` (●) with its einsum, fed by an edge from its weight (orange, the model's
    numbers); every activation (blue) carries its shape in letters. Units: one data unit is one inch of the
    drawing."""
    m = get_model(model)
    rows = {name: (spec, weight) for name, spec, weight in layer_einsums(m)}
    fig, ax = canvas(7.4, 11.4, (7.4, 12.3), title or f"One decoder layer of {m.name or 'the model'}:\n"
                                                     f"D={m.D}, F={m.F}, N={m.N}, K={m.K}, H={m.H}")
    act, norm = COLOURS["act"], COLOURS["norm"]

    def node(cx: float, y: float, w: float, label: str, colour: str) -> tuple[float, float, float]:
        """A box centred on cx with its bottom at y; return (cx, top, bottom)."""
        box(ax, cx - w / 2, y, w, 0.34, label, colour, SIZES["small"])
        return cx, y + 0.34, y

    def matmul(cx: float, y: float, name: str) -> tuple[float, float, float]:
        """The matmul's box (name and einsum) centred on cx, its weight to the right with an edge into it."""
        spec, weight = rows[name]
        box(ax, cx - 0.6, y, 1.2, 0.56, f"{MATMUL_MARK} {name}\n{spec}", "white", SIZES["small"], lw=1.4)
        if weight != "no weights":
            label, _, shape = weight.partition("[")
            box(ax, cx + 0.66, y + 0.03, 0.95, 0.5, f"{label}\n[{shape}", COLOURS["weight"], SIZES["small"])
            arrow(ax, (cx + 0.66, y + 0.28), (cx + 0.6, y + 0.28), colour="#a05000")
        return cx, y + 0.56, y

    def flow(a: tuple[float, float, float], b: tuple[float, float, float]) -> None:
        arrow(ax, (a[0], a[2]), (b[0], b[1]))

    stream = dict(color=ROLES["idle"], lw=5, solid_capstyle="butt", zorder=1)
    x_in = node(3.7, 10.5, 2.2, "x: [B, T, D]", act)
    ax.plot([0.25, 0.25], [10.67, 0.2], **stream)
    ax.plot([0.25, x_in[0] - 1.1], [10.67, 10.67], **stream)
    ax.text(0.4, 5.2, "residual\nstream", fontsize=SIZES["small"], color="0.35", ha="left")
    n1 = node(3.7, 9.75, 1.6, "RMSNorm", norm)
    flow(x_in, n1)
    heads = {"Q": (1.0, "Q: [B, T, N, H]"), "K": (3.35, "K: [B, S, K, H]"), "V": (5.7, "V: [B, S, K, H]")}
    acts = {}
    for key, (cx, shape) in heads.items():
        mm = matmul(cx, 8.65, f"{key} projection")
        flow(n1, mm)
        acts[key] = node(mm[0], 7.85, 1.4, shape, act)
        flow(mm, acts[key])
    scores = matmul(2.25, 6.75, "scores Q·K")
    flow(acts["Q"], scores)
    flow(acts["K"], scores)
    soft = node(2.25, 6.05, 2.4, "mask, softmax over S", norm)
    flow(scores, soft)
    mix = matmul(3.7, 5.0, "mix V")
    flow(soft, mix)
    flow(acts["V"], mix)
    o = matmul(3.7, 4.0, "O projection")
    flow(mix, o)
    _add(ax, 0.25, 3.55)
    arrow(ax, (o[0] - 0.6, o[2] + 0.1), (0.4, 3.58))
    n2 = node(3.7, 3.0, 1.6, "RMSNorm", norm)
    arrow(ax, (0.4, 3.55), (n2[0] - 0.8, n2[2] + 0.17), colour="0.45")
    mlp = [n for n in ("MLP up", "MLP gate") if n in rows]
    ups = [matmul(cx, 1.95, name) for cx, name in zip((1.3, 4.6) if len(mlp) == 2 else (3.7,), mlp)]
    act_f = node(3.7, 1.25, 3.0, "silu(gate) ⊙ up: [B, T, F]" if m.gated else "gelu(up): [B, T, F]", act)
    for up in ups:
        flow(n2, up)
        flow(up, act_f)
    down = matmul(3.7, 0.25, "MLP down")
    flow(act_f, down)
    _add(ax, 0.25, 0.53)
    arrow(ax, (down[0] - 0.6, 0.53), (0.4, 0.53))
    ax.text(7.35, 11.3, f"G = N/K = {m.N // m.K} query heads\nshare each key/value head\n"
                        f"{_n(m.param_count() / m.L)} parameters per layer\n(average of {m.L} layers)",
            fontsize=SIZES["small"], ha="right", va="top")
    return fig


def _add(ax, x: float, y: float) -> None:
    """A residual add (⊕) on the stream at (x, y)."""
    from matplotlib.patches import Circle

    ax.add_patch(Circle((x, y), 0.15, facecolor="white", edgecolor="0.2", lw=1.2, zorder=3))
    ax.text(x, y, "+", ha="center", va="center", fontsize=SIZES["label"], zorder=4)


@checks(shown="count")
def moe_diagram(model: TransformerConfig | str = "deepseek-v3", shown: int = 10, title: str | None = None) -> Figure:
    """Draw a mixture-of-experts MLP: a router scores the E experts for each token, the top k (highlighted) run,
    and their outputs are summed with the router's weights. Expert widths and counts come from the model; the
    routing shown is an example (a fixed draw), not a trained router."""
    m = get_model(model)
    if not m.is_moe:
        raise ValueError(f"model={m.name!r} has E=1 expert: not a mixture of experts")
    n_show = min(m.E, shown)
    scores = np.random.default_rng(0).random(n_show)
    chosen = set(np.argsort(-scores)[: min(m.k, n_show)].tolist())
    fe = m.F_expert or m.F
    width = 1.3 * n_show + 2.2
    fig, ax = canvas(width, 7.2, (min(10.0, 0.85 * width + 1.0), 5.6),  # 10 in: the cell is tagged full-width
                     title or f"{m.name or 'MoE'}: each token runs {m.k} of {m.E} experts "
                              f"({_n(m.param_count(active=True))} of {_n(m.param_count())} parameters active)")
    mid = width / 2
    box(ax, mid - 1.6, 6.3, 3.2, 0.6, "token x: [D]", COLOURS["act"], 8)
    box(ax, mid - 2.2, 5.1, 4.4, 0.7, f"router W_gate[{m.D}, {m.E}] → top-{m.k}", COLOURS["weight"], 8)
    arrow(ax, (mid, 6.3), (mid, 5.8))
    for j in range(n_show):
        x = 1.1 + 1.3 * j
        on = j in chosen
        box(ax, x, 2.6, 1.1, 1.5, f"expert {j}\n{m.D}×{fe}", COLOURS["highlight"] if on else "white", 6.5,
            lw=2.0 if on else 0.8, edge="k" if on else "0.6")
        arrow(ax, (mid, 5.1), (x + 0.55, 4.1), colour="k" if on else "0.8", lw=1.3 if on else 0.6,
              label=f"g={scores[j] / scores[list(chosen)].sum():.2f}" if on else "", fontsize=8,
              offset=(0.3 * (x + 0.55 - mid), -0.3))  # each weight near its expert, clear of the others
        if on:
            arrow(ax, (x + 0.55, 2.6), (mid, 1.4))
    if m.E > n_show:
        ax.text(width - 0.5, 3.35, f"… {m.E - n_show} more", fontsize=8, va="center")
    box(ax, mid - 2.4, 0.6, 4.8, 0.8, "Σ g·expert(x): [D]", COLOURS["act"], 8)
    if m.shared:
        ax.text(0.1, 0.1, f"+ {m.shared} shared expert(s) every token runs", fontsize=8)
    return fig


@checks(T="count", S="count", block="count", causal="flag")
def flash_tiles(T: int = 8, S: int = 8, block: int = 2, causal: bool = True, title: str | None = None) -> Figure:
    """Draw flash attention's tiling of the T × S score matrix into block × block tiles: tiles loaded and computed
    (numbered in the order one query block visits them), tiles the causal mask skips, and the running state
    (row max m, row sum ℓ, output O) that each query block keeps on chip instead of the full scores."""
    for name, v in (("T", T), ("S", S), ("block", block)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}={v!r} must be a positive integer")
    if T % block or S % block:
        raise ValueError(f"block={block} must divide T={T} and S={S}")
    nq, nk = T // block, S // block
    fig, ax = canvas(nk + 5.5, nq + 1.2, (0.5 * (nk + 5.5) + 1.0, 0.5 * (nq + 1.2) + 0.8),
                     title or f"Flash attention: {nq}×{nk} tiles of {block}×{block} scores, never all in memory "
                              f"at once")
    computed = skipped = 0
    for qi, ki in itertools.product(range(nq), range(nk)):
        y = nq - 1 - qi
        first, last = ki * block, ki * block + block - 1
        if causal and first > qi * block + block - 1:
            colour, text = "0.92", "skip"
            skipped += 1
        else:
            colour = COLOURS["mxu"] if not causal or last <= qi * block else COLOURS["highlight"]
            text = f"{ki + 1}"
            computed += 1
        box(ax, ki + 0.05, y + 0.05, 0.9, 0.9, text, colour, 7, round_=False)
    ax.text(nk / 2, nq + 0.4, "key blocks (S) →", ha="center", fontsize=8)
    ax.text(-0.1, nq / 2, "query blocks (T)", rotation=90, ha="right", va="center", fontsize=8)
    ax.text(nk + 0.4, nq - 0.5, f"green: {computed} tiles computed\nyellow: on the diagonal, masked inside\n"
                                f"grey: {skipped} tiles skipped (causal)\nnumbers: the order a query block\n"
                                f"visits its key blocks\n\nper query block, on chip:\n  m = running row max\n"
                                f"  ℓ = running Σ exp(s − m)\n  O = running Σ exp(s − m)·V\nrescale O and ℓ when m "
                                f"grows;\nO / ℓ at the end", fontsize=8, va="top")
    return fig


@checks(N="count", P="count", M="count")
def matmul_flops(N: int = 3, P: int = 4, M: int = 2, title: str | None = None) -> Figure:
    """Draw how A[N, P] @ B[P, M] adds up to 2·N·P·M FLOPs in three panels: one output element (a dot product
    of length P: 2P FLOPs), one output row (2PM), the whole output (2NPM), each count from `einsum_flops`."""
    for name, v in (("N", N), ("P", P), ("M", M)):
        if not isinstance(v, int) or not 1 <= v <= 8:
            raise ValueError(f"{name}={v!r} must be an integer from 1 to 8")
    stages = [
        ("one element C[0, 0]", einsum_flops("P,P->", {"P": P}), "2P", {(0, 0)}),
        ("one row C[0, :]", einsum_flops("P,PM->M", {"P": P, "M": M}), "2PM", {(0, j) for j in range(M)}),
        ("all of C", einsum_flops("NP,PM->NM", {"N": N, "P": P, "M": M}), "2NPM",
         set(itertools.product(range(N), range(M)))),
    ]
    width = P + P + M + 4.0
    height = max(N, P) + 2.2
    scale = 2.3 / width  # in per unit: three panels side by side fill the text column
    fig, axs = panels(3, 3, (2.4, scale * height + 0.2), width, height,
                      title or f"FLOPs of A[N={N}, P={P}] @ B[P, M={M}]: a multiply and an add per term")
    for ax, (label, flops, formula, cells) in zip(axs, stages):
        rows = {r for r, _ in cells}
        cols = {c for _, c in cells}
        top = height - 1.2
        for r, p in itertools.product(range(N), range(P)):
            box(ax, p, top - r - 1, 0.95, 0.95, "", ROLES["A"] if r in rows else "white", round_=False,
                alpha=0.7 if r in rows else 1)
        for p, c in itertools.product(range(P), range(M)):
            box(ax, P + 1 + c, top - p - 1, 0.95, 0.95, "", ROLES["B"] if c in cols else "white", round_=False,
                alpha=0.7 if c in cols else 1)
        for r, c in itertools.product(range(N), range(M)):
            box(ax, P + M + 2 + c, top - r - 1, 0.95, 0.95, "", ROLES["C"] if (r, c) in cells else "white",
                round_=False, alpha=0.8 if (r, c) in cells else 1)
        ax.text(P / 2, top + 0.2, "A", ha="center", fontsize=8)
        ax.text(P + 1 + M / 2, top + 0.2, "B", ha="center", fontsize=8)
        ax.text(P + M + 2 + M / 2, top + 0.2, "C", ha="center", fontsize=8)
        ax.text(width / 2, 0.05, f"{label}: {formula} = {flops:,.0f} FLOPs", ha="center", fontsize=8)
    return fig

