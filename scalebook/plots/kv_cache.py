"""Figures of the KV cache (chapter 7): naive against cached decoding, attention heads shared by MHA, GQA and MQA,
layers that share a cache, a paged cache's block table, and a cache sharded by head or by batch. Every size or time
printed on them comes from `scalebook.inference`, `models` or `collectives`; the drawings are schematic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..collectives import all_to_all
from ..hardware.topology import TpuMesh
from ..inference.steps import kv_cache_bytes
from ..models import TransformerConfig, get_model
from ..units import checks, fmt_bytes, fmt_time
from .base import figure, schematic
from .diagram import cell

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["decoding", "heads", "layer_sharing", "paged_cache", "cache_sharding"]

Model = TransformerConfig | str
_C = {"prefill": "#4e79a7", "decode": "#f28e2b", "idle": "#eeeeee"}


@checks(cached="flag", prompt="count", steps="count")
def decoding(cached: bool, model: Model = "llama3-8b", prompt: int = 6, steps: int = 5) -> Figure:
    """Draw which token positions each generation step pushes through the model, without (`cached=False`) or
    with a KV cache, with the FLOPs of each step from `TransformerConfig.flops_per_token` (prompt + step tokens
    in naive decoding; the prompt once, then one token per step, reading the cache)."""
    cfg = get_model(model)
    fig, ax = figure((8.5, 3.6))
    total = 0.0
    for s in range(steps + 1):
        length = prompt + s
        fresh = length if (not cached or s == 0) else 1
        start = length - fresh
        for p in range(length):
            new = p >= start
            kind = "prefill" if (s == 0 or not cached) and new else "decode" if new else "idle"
            cell(ax, p, s, 0.95, 0.85, _C[kind], "" if new else "kv", 6, "#666")
        flops = cfg.flops_per_token(length, training=False) * fresh
        total += flops
        ax.text(prompt + steps + 0.5, s + 0.42, f"{flops:.2g} FLOPs", va="center", fontsize=8)
    ax.set_xlim(-0.2, prompt + steps + 4)
    ax.set_ylim(-0.2, steps + 1)
    ax.set_yticks(np.arange(steps + 1) + 0.42, ["prefill" if cached else "step 0"]
                  + [f"step {s}" for s in range(1, steps + 1)])
    ax.invert_yaxis()
    ax.set_xlabel("token position (blue/orange: pushed through the model this step; grey: read from the cache)")
    mode = "with a KV cache" if cached else "without a cache (naive)"
    ax.set_title(f"Decoding {mode}: {cfg.name}, {prompt}-token prompt, {total:.3g} FLOPs in all", fontsize=10)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    return fig


@checks(N="count", context="count", groups="counts")
def heads(N: int = 8, groups: Sequence[int] = (8, 2, 1), model: Model = "llama3-70b", context: int = 8192) -> Figure:
    """Draw N query heads joined to their key/value heads for each KV-head count in `groups` (MHA, GQA, MQA),
    with the KV cache per sequence of `model` at `context` tokens with K = its query heads (MHA), its own K (GQA)
    or one (MQA)."""
    from dataclasses import replace

    cfg = get_model(model)
    fig, axes = figure((10.0, 3.4), ncols=len(groups))
    names = {N: "multi-head (MHA)", 1: "multi-query (MQA)"}
    for ax, K in zip(np.atleast_1d(axes), groups):
        if N % K:
            raise ValueError(f"groups: {K} KV heads must divide N={N} query heads")
        for q in range(N):
            cell(ax, q, 2, 0.8, 0.6, "#4e79a7", f"q{q}", 7)
        for k in range(K):
            x = (k + 0.5) * N / K - 0.4
            cell(ax, x, 0, 0.8, 0.6, "#f28e2b", f"kv{k}", 7)
            for q in range(k * N // K, (k + 1) * N // K):
                ax.plot([q + 0.4, x + 0.4], [2, 0.6], color="#888", lw=0.8)
        real_K = cfg.N if K == N else 1 if K == 1 else cfg.K  # the model's own GQA width for the middle panel
        kv = kv_cache_bytes(replace(cfg, K=real_K), context)
        ax.set_title(f"{names.get(K, f'grouped-query (GQA), {K} groups')}\n{cfg.name} at K = {real_K}: "
                     f"{fmt_bytes(kv)} per {context}-token cache", fontsize=8)
        ax.set_xlim(-0.3, N)
        ax.set_ylim(-0.2, 2.8)
        ax.axis("off")
    fig.suptitle("Query heads (blue) and the key/value heads they read (orange)", fontsize=10)
    return fig


@checks(layers="count", local_every="count", share="count", context="count", window="count")
def layer_sharing(layers: int = 12, local_every: int = 6, share: int = 2, model: Model = "llama3-70b",
                  context: int = 32768, window: int = 4096) -> Figure:
    """Draw two layer stacks: every layer global with its own cache, and mostly local (sliding-window) layers
    with one global layer every `local_every`, neighbours sharing one cache `share` at a time; each labelled with
    the cache it would hold for `model` at `context` tokens."""
    cfg = get_model(model)
    per_layer = kv_cache_bytes(cfg, context) / cfg.L
    fig, ax = figure((8.0, 4.6))
    plain = layers * per_layer
    tricks = 0.0
    is_global = [i % local_every == local_every - 1 for i in range(layers)]
    for i in range(layers):
        cell(ax, 0, i, 2.5, 0.8, "#4e79a7", f"layer {i}: global", 7)
        cell(ax, 5, i, 2.5, 0.8, "#4e79a7" if is_global[i] else "#59a14f",
             f"layer {i}: {'global' if is_global[i] else f'local, {window}'}", 7)
        # local layers share a cache with the local layers of their group; a global layer keeps its own
        group = range(i - i % share, min(layers, i - i % share + share))
        shares = not is_global[i] and i % share and all(not is_global[j] for j in group)
        if shares:
            ax.annotate("", xy=(7.6, i + 0.4), xytext=(7.6, i - 0.6),
                        arrowprops=dict(arrowstyle="<->", color="#e15759", connectionstyle="arc3,rad=-0.6"))
        else:
            tricks += per_layer * (1 if is_global[i] else window / context)
    ax.text(1.25, layers + 0.2, f"all global: {fmt_bytes(plain)}", ha="center", fontsize=9)
    ax.text(6.25, layers + 0.2, f"local + shared (red arcs): {fmt_bytes(tricks)}", ha="center", fontsize=9)
    ax.set_xlim(-0.5, 9)
    ax.set_ylim(-0.5, layers + 1)
    ax.axis("off")
    ax.set_title(f"KV cache of {layers} of {cfg.name}'s layers at {context} tokens: plain vs local layers and "
                 f"cross-layer sharing", fontsize=10)
    return fig


@checks(block="count", n_blocks="count", lengths="counts")
def paged_cache(lengths: Sequence[int] = (37, 22, 50), block: int = 16, n_blocks: int = 12,
                model: Model = "llama3-8b") -> Figure:
    """Draw a paged KV cache: each sequence's logical blocks of `block` tokens mapped through its block table to
    physical blocks handed out in arrival order, interleaved across sequences, with the bytes per block."""
    cfg = get_model(model)
    tables: list[list[int]] = [[] for _ in lengths]
    need = [-(-n // block) for n in lengths]
    if sum(need) > n_blocks:
        raise ValueError(f"n_blocks={n_blocks} cannot hold {sum(need)} blocks of the sequences {list(lengths)}")
    free = iter(range(n_blocks))
    for step in range(max(need)):  # sequences grow together, so their blocks interleave in memory
        for s, n in enumerate(need):
            if step < n:
                tables[s].append(next(free))
    from matplotlib.patches import Rectangle

    colors = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1"]
    fig, ax = figure((9.0, 3.8))
    for s, (table, n) in enumerate(zip(tables, lengths)):
        y = len(lengths) - 1 - s + 2.2
        ax.text(-0.3, y + 0.4, f"seq {s} ({n} tok)", ha="right", va="center", fontsize=8)
        for j, phys in enumerate(table):
            used = min(block, n - j * block)
            cell(ax, j, y, 0.9, 0.8, colors[s % len(colors)], f"→{phys}", 7)
            ax.add_patch(Rectangle((phys * 0.75, 0), 0.7 * used / block, 0.8, facecolor=colors[s % len(colors)]))
    for p in range(n_blocks):
        ax.add_patch(Rectangle((p * 0.75, 0), 0.7, 0.8, fill=False, edgecolor="#333", lw=0.6))
        ax.text(p * 0.75 + 0.35, -0.25, str(p), ha="center", fontsize=8)
    per_block = kv_cache_bytes(cfg, block)
    ax.text(-0.3, 0.4, "HBM blocks", ha="right", va="center", fontsize=8)
    schematic(ax, (-2.2, max(n_blocks * 0.75, max(need)) + 0.5), (-0.6, len(lengths) + 2.4),
              f"Paged KV cache: block tables (top) map {block}-token blocks to HBM pages (bottom;\nfill = tokens "
              f"used); one block of {cfg.name} holds {fmt_bytes(per_block)}")
    return fig


@checks(chips="count", batch="count", context="count")
def cache_sharding(chips: int = 4, batch: int = 8, model: Model = "llama3-70b", chip: str = "v5e",
                   context: int = 8192) -> Figure:
    """Draw two ways to split decode's KV caches over `chips`: by key/value head (each chip holds its heads of
    every sequence, no extra collective) and by batch (each chip holds whole caches of some sequences, so each
    attention layer sends queries to their caches and outputs back: two AllToAlls, timed by
    `collectives.all_to_all` for `model`'s bf16 [batch, N·H] queries on a ring of `chips`)."""
    cfg = get_model(model)
    if not isinstance(chips, int) or not 1 <= chips <= cfg.K or cfg.K % chips:
        raise ValueError(f"chips={chips!r} must divide {cfg.name}'s K={cfg.K} key/value heads to split by head")
    kh = cfg.K // chips
    mesh = TpuMesh(chip, X=chips)
    a2a = all_to_all(mesh, "X", batch * cfg.N * cfg.H * 2)
    per_step = 2 * cfg.L * a2a.time
    fig, axes = figure((10.0, 3.6), ncols=2)
    colors = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#9c755f", "#76b7b2", "#edc948"]
    for ax, by_head in zip(axes, (True, False)):
        for c in range(chips):
            x = c * 1.2
            ax.text(x + 0.5, batch + 0.4, f"chip {c}", ha="center", fontsize=8)
            for b in range(batch):
                mine = by_head or b * chips // batch == c
                heads = f"KV heads {c * kh}-{c * kh + kh - 1}" if kh > 1 else f"KV head {c}"
                label = f"s{b}, {heads}" if by_head else (f"s{b}, all heads" if mine else "")
                cell(ax, x, batch - 1 - b, 1.0, 0.85, colors[b % 8] if mine else "#f4f4f4", label, 6)
        if not by_head:
            for y, text in ((-0.6, "AllToAll: queries to their caches"), (-1.2, "AllToAll: outputs back")):
                ax.annotate("", xy=(chips * 1.2 - 0.2, y), xytext=(0, y),
                            arrowprops=dict(arrowstyle="<->", color="#e15759"))
                ax.text(chips * 0.6, y + 0.1, text, ha="center", fontsize=8, color="#e15759")
        ax.set_xlim(-0.2, chips * 1.2)
        ax.set_ylim(-1.6, batch + 0.9)
        ax.axis("off")
        ax.set_title("by key/value head: no extra collective" if by_head else
                     f"by batch: 2 AllToAlls per layer, {fmt_time(per_step)} per step", fontsize=9)
    fig.suptitle(f"Splitting {batch} sequences' KV caches ({fmt_bytes(kv_cache_bytes(cfg, context))} each at "
                 f"{context} tokens) over {chips} × {chip}", fontsize=10)
    return fig
