"""Figures for the inference chapter's mechanisms: naive and cached decoding, attention-head sharing, layers that
share a KV cache, a paged cache's block table, the three engine layouts and continuous batching, a prefix cache,
speculative decoding, and latency-bound collectives. Every time or size printed on them comes from
`scalebook.inference`, `models` or `collectives`; the drawings are schematic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..collectives import all_gather, all_to_all
from ..hardware import TpuMesh
from ..inference import decode_step, kv_cache_bytes, pareto, prefill, speculative_speedup, weight_stationary
from ..models import TransformerConfig, get_model
from ..units import fmt_bytes, fmt_time
from .base import figure, finish

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["batching_snapshots", "cache_sharding", "decoding", "heads", "layer_sharing", "paged_cache", "engine",
           "engine_segments", "continuous_batching", "prefix_tree", "speculative", "speculative_panels", "latency_cost",
           "weight_stationary_curves", "latency_bound_gather"]

Model = TransformerConfig | str
_C = {"prefill": "#4e79a7", "decode": "#f28e2b", "idle": "#eeeeee", "transfer": "#b07aa1", "draft": "#59a14f",
      "verify": "#e15759"}


def _box(ax, x: float, y: float, w: float, h: float, color: str, text: str = "", size: float = 8,
         tcolor: str = "white") -> None:
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor="white", lw=0.8))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, color=tcolor)


def _label(ax, xlabel: str, title: str) -> None:
    """Label a schematic's time axis and title it (no legend: the bars carry their own labels)."""
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)


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
            _box(ax, p, s, 0.95, 0.85, _C[kind], "" if new else "kv", 6, "#666")
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
            _box(ax, q, 2, 0.8, 0.6, "#4e79a7", f"q{q}", 7)
        for k in range(K):
            x = (k + 0.5) * N / K - 0.4
            _box(ax, x, 0, 0.8, 0.6, "#f28e2b", f"kv{k}", 7)
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
        _box(ax, 0, i, 2.5, 0.8, "#4e79a7", f"layer {i}: global", 7)
        _box(ax, 5, i, 2.5, 0.8, "#4e79a7" if is_global[i] else "#59a14f",
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
            _box(ax, j, y, 0.9, 0.8, colors[s % len(colors)], f"→{phys}", 7)
            ax.add_patch(Rectangle((phys * 0.75, 0), 0.7 * used / block, 0.8, facecolor=colors[s % len(colors)]))
    for p in range(n_blocks):
        ax.add_patch(Rectangle((p * 0.75, 0), 0.7, 0.8, fill=False, edgecolor="#333", lw=0.6))
        ax.text(p * 0.75 + 0.35, -0.25, str(p), ha="center", fontsize=7)
    per_block = kv_cache_bytes(cfg, block)
    ax.text(-0.3, 0.4, "HBM blocks", ha="right", va="center", fontsize=8)
    ax.set_xlim(-2.2, max(n_blocks * 0.75, max(need)) + 0.5)
    ax.set_ylim(-0.6, len(lengths) + 2.4)
    ax.axis("off")
    ax.set_title(f"Paged KV cache: block tables (top) map {block}-token blocks to HBM pages (bottom;\nfill = tokens "
                 f"used); one block of {cfg.name} holds {fmt_bytes(per_block)}", fontsize=9)
    return fig


def engine_segments(mode: str, prompts: Sequence[int], outputs: Sequence[int], slots: int, t_prefill: float,
                    t_step: float) -> list[tuple[int, float, float, str, int]]:
    """Return (row, start, end, kind, request) bars of a tiny serving engine (times in seconds).

    'batched': prefill `slots` requests together, decode until all finish, repeat. 'interleaved': one slice
    decodes continuously and pauses for one request's prefill whenever a slot is free (continuous batching).
    'disaggregated': a prefill slice (row -1) prefills back to back; finished caches join the decode slice's
    free slots without pausing it. Requests all arrive at t = 0, prefill time scales with prompt length.
    """
    if mode not in ("batched", "interleaved", "disaggregated"):
        raise ValueError(f"mode={mode!r}; allowed: batched, interleaved, disaggregated")
    n = len(prompts)
    bars: list[tuple[int, float, float, str, int]] = []
    pre = [t_prefill * p / max(prompts) for p in prompts]
    if mode == "batched":
        t = 0.0
        for first in range(0, n, slots):
            group = list(range(first, min(n, first + slots)))
            span = sum(pre[r] for r in group)
            for row, r in enumerate(group):
                bars.append((row, t, t + span, "prefill", r))
            t += span
            longest = max(outputs[r] for r in group)
            for row, r in enumerate(group):
                bars.append((row, t, t + outputs[r] * t_step, "decode", r))
            t += longest * t_step
        return bars
    ready = [0.0] * n
    if mode == "disaggregated":
        t = 0.0
        for r in range(n):
            bars.append((-1, t, t + pre[r], "prefill", r))
            t += pre[r]
            ready[r] = t
    free_at = [0.0] * slots
    decodes: list[list] = []  # [row, start, end, request]; interleaved prefills stretch the ones they interrupt
    t = 0.0
    for r in range(n):
        row = int(np.argmin(free_at))
        start = max(free_at[row], ready[r], t if mode == "interleaved" else 0.0)
        if mode == "interleaved":
            bars.append((row, start, start + pre[r], "prefill", r))
            for d in decodes:  # the whole slice prefills: every running decode waits
                if d[1] <= start < d[2]:
                    d[2] += pre[r]
                    free_at[d[0]] = d[2]
            start += pre[r]
            t = start
        decodes.append([row, start, start + outputs[r] * t_step, r])
        free_at[row] = start + outputs[r] * t_step
    return bars + [(row, a, b, "decode", r) for row, a, b, r in decodes]


def engine(mode: str, model: Model = "llama3-70b", chip: str = "v5e", n_chips: int = 16,
           prompts: Sequence[int] = (2048, 1024, 4096, 2048, 1024, 3072), outputs: Sequence[int] = (60, 30, 45, 20,
                                                                                                      50, 35),
           slots: int = 3) -> Figure:
    """Draw a Gantt chart of `engine_segments` for `mode`, with the prefill and decode-step times of `model`
    on `n_chips` chips from `inference.prefill` and `inference.decode_step` (int8 weights, 8k context)."""
    t_prefill = prefill(model, chip, n_chips, max(prompts), param_bytes=1).time
    t_step = decode_step(model, chip, n_chips, slots, 8192, param_bytes=1, kv_bytes=1).time
    bars = engine_segments(mode, prompts, outputs, slots, t_prefill, t_step)
    fig, ax = figure((9.0, 2.6 + 0.35 * slots))
    colors = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#9c755f", "#76b7b2", "#edc948"]
    for row, start, end, kind, r in bars:
        ax.barh(row, end - start, left=start, color=colors[r % len(colors)], alpha=1.0 if kind == "decode" else 0.45,
                hatch="///" if kind == "prefill" else "", edgecolor="white")
        ax.text((start + end) / 2, row, f"{'P' if kind == 'prefill' else 'D'}{r}", ha="center", va="center",
                fontsize=7)
    rows = sorted({b[0] for b in bars})
    ax.set_yticks(rows, ["prefill slice" if r < 0 else f"decode slot {r}" for r in rows])
    done = max(b[2] for b in bars)
    _label(ax, "time (s); hatched: prefill, solid: decode", f"{mode.capitalize()}, {get_model(model).name} "
           f"on {n_chips} × {chip}: prefill {fmt_time(t_prefill)} (longest prompt), decode step {fmt_time(t_step)};"
           f" all done at {done:.2f} s")
    return fig


def batching_snapshots(slots: int, outputs: Sequence[int], steps: int) -> list[tuple]:
    """Return, before each of `steps` decode steps of a continuous-batching engine, (step, slots, queue, done):
    each of `slots` KV slots holds (request, tokens made) or None; a request leaves when it has made
    `outputs[request]` tokens, and a free slot takes the next queued request before the following step."""
    if not isinstance(slots, int) or slots < 1 or not outputs or min(outputs) < 1:
        raise ValueError(f"need slots >= 1 and positive output lengths, got slots={slots!r}, outputs={outputs!r}")
    state: list[tuple[int, int] | None] = [None] * slots
    queue = list(range(len(outputs)))
    snaps, finished = [], []
    for step in range(steps):
        for i in range(slots):
            if state[i] is None and queue:
                state[i] = (queue.pop(0), 0)
        snaps.append((step, list(state), list(queue), list(finished)))
        for i, cell in enumerate(state):
            if cell is not None:
                r, made = cell
                state[i] = (r, made + 1) if made + 1 < outputs[r] else None
                if made + 1 == outputs[r]:
                    finished.append(r)
    return snaps


def continuous_batching(slots: int = 4, outputs: Sequence[int] = (3, 5, 2, 4, 3, 2, 4), panels: int = 6) -> Figure:
    """Draw a strip of `panels` snapshots (`batching_snapshots`) of a continuous-batching engine: each KV slot
    holds a request (tokens made / wanted) or sits free; freed slots are refilled from the queue."""
    snaps = batching_snapshots(slots, outputs, panels)
    fig, axes = figure((11.0, 2.8), ncols=panels)
    colors = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#9c755f", "#76b7b2", "#edc948"]
    for ax, (step, cells, waiting, done) in zip(np.atleast_1d(axes), snaps):
        for i, cell in enumerate(cells):
            if cell is None:
                _box(ax, 0, slots - 1 - i, 1, 0.85, _C["idle"], "free", 7, "#666")
            else:
                r, made = cell
                _box(ax, 0, slots - 1 - i, 1, 0.85, colors[r % len(colors)], f"r{r}: {made}/{outputs[r]}", 7)
        ax.text(0.5, -0.35, "queue: " + (",".join(f"r{q}" for q in waiting) or "—"), ha="center", fontsize=7)
        ax.text(0.5, -0.75, "done: " + (",".join(f"r{q}" for q in done) or "—"), ha="center", fontsize=7)
        ax.set_title(f"before step {step}", fontsize=8)
        ax.set_xlim(-0.05, 1.05)
        ax.set_ylim(-1.0, slots)
        ax.axis("off")
    fig.suptitle(f"Continuous batching: {slots} KV slots, a freed slot refilled before the next step "
                 "(tokens made / tokens wanted)", fontsize=10)
    return fig


def prefix_tree(prompts: Sequence[Sequence[str]], block: int = 1) -> Figure:
    """Draw the prefix tree (trie) of cached prompts, one node per shared block of tokens, and for the last
    prompt the blocks it reuses (hits, green) and the ones it must prefill (orange)."""
    if len(prompts) < 2:
        raise ValueError("prompts: give at least one cached prompt and one new prompt")
    cached, new = prompts[:-1], prompts[-1]
    nodes: dict[tuple[str, ...], tuple[float, int]] = {}
    leaves: list[tuple[str, ...]] = []
    for p in cached:
        for d in range(1, len(p) + 1):
            nodes.setdefault(tuple(p[:d]), (0.0, d))
        leaves.append(tuple(p))
    # lay leaves out left to right and put each node above the mean of its leaves
    xs: dict[tuple[str, ...], list[float]] = {}
    for i, leaf in enumerate(leaves):
        for d in range(1, len(leaf) + 1):
            xs.setdefault(leaf[:d], []).append(i)
    fig, ax = figure((9.0, 4.2))
    hit = 0
    for d in range(1, len(new) + 1):
        if tuple(new[:d]) in nodes:
            hit = d
    for key, (_, depth) in nodes.items():
        x = float(np.mean(xs[key])) * 2
        color = "#59a14f" if len(key) <= hit and tuple(new[:len(key)]) == key else "#bab0ac"
        _box(ax, x, -depth, 1.6, 0.6, color, key[-1], 8)
        if depth > 1:
            parent = key[:-1]
            ax.plot([x + 0.8, float(np.mean(xs[parent])) * 2 + 0.8], [-depth + 0.6, -depth + 1], color="#888", lw=0.8)
    x0 = len(leaves) * 2 + 1
    ax.text(x0, 0.2, "new request:", fontsize=8)
    for d, tok in enumerate(new):
        _box(ax, x0, -d - 1, 1.6, 0.6, "#59a14f" if d < hit else "#f28e2b", tok, 8)
    ax.set_xlim(-0.5, x0 + 2.5)
    ax.set_ylim(-max(len(p) for p in prompts) - 0.5, 0.8)
    ax.axis("off")
    ax.set_title(f"Prefix cache as a tree of KV blocks: the new request reuses {hit} of its {len(new)} blocks "
                 f"(green) and prefills {len(new) - hit} (orange)", fontsize=9)
    return fig


def speculative(draft_tokens: int = 4, accepted: int = 2, target: Model = "llama3-70b", drafter: Model = "llama3-8b",
                chip: str = "v5e", n_chips: int = 16) -> Figure:
    """Draw one speculative-decoding loop against plain decoding: the drafter proposes `draft_tokens` one at a
    time, the target verifies them in one pass, `accepted` are kept and the first mismatch is replaced by the
    target's own token; step times from `decode_step` (batch 1, 8k context, int8 weights)."""
    if not 0 <= accepted <= draft_tokens:
        raise ValueError(f"accepted={accepted} must lie in [0, draft_tokens={draft_tokens}]")
    t_t = decode_step(target, chip, n_chips, 1, 8192, param_bytes=1).time
    t_d = decode_step(drafter, chip, n_chips, 1, 8192, param_bytes=1).time
    made = accepted + 1
    t_t, t_d = t_t * 1e3, t_d * 1e3  # drawn in milliseconds
    fig, ax = figure((9.0, 3.0))
    for i in range(made):
        _box(ax, i * t_t, 1.2, t_t, 0.6, "#4e79a7", f"target: t{i}", 7)
    t = 0.0
    for i in range(draft_tokens):
        _box(ax, t, 0, t_d, 0.6, _C["draft"], f"d{i}", 7)
        t += t_d
    _box(ax, t, 0, t_t, 0.6, _C["verify"], "verify d0..d" + str(draft_tokens - 1), 7)
    marks = " ".join("✓" if i < accepted else "✗" if i == accepted else "–" for i in range(draft_tokens))
    ax.text(t + t_t * 1.05, 0.3, marks, fontsize=9, va="center")
    ax.set_yticks([0.3, 1.5], [f"speculative: {draft_tokens} drafts", "plain decoding"])
    spec_time = t + t_t
    ax.set_xlim(0, max(made * t_t, spec_time) * 1.35)
    ax.set_ylim(-0.3, 2.1)
    _label(ax, "time (ms)", f"{made} tokens: plain {made * t_t:.1f} ms, speculative {spec_time:.1f} ms "
           f"({accepted} of {draft_tokens} drafts accepted, then the target's own next token)")
    return fig


def speculative_panels(draft_cost: float = 4 / 70, acceptances: Sequence[float] = (0.6, 0.8),
                       max_draft: int = 7, tokens: int = 128, t_target: float = 1.0) -> Figure:
    """Three panels against the draft length K: the time to generate `tokens` tokens (in target steps), the
    expected tokens per loop for each acceptance rate, and the time per loop, from `speculative_speedup`."""
    ks = np.arange(0, max_draft + 1)
    fig, axes = figure((11.0, 3.4), ncols=3)
    for a in acceptances:
        speed = [1.0 if k == 0 else speculative_speedup(a, int(k), draft_cost) for k in ks]
        axes[0].plot(ks, [tokens * t_target / s for s in speed], "o-", label=f"acceptance {a}")
        per_loop = [(1 - a ** (k + 1)) / (1 - a) for k in ks]
        axes[1].plot(ks, per_loop, "o-", label=f"acceptance {a}")
    axes[2].plot(ks, [t_target * (1 + k * draft_cost) for k in ks], "o-", color="black", label="target + K drafts")
    finish(axes[0], "draft length K", "time for 128 tokens (target steps)", "Time to finish", "upper right")
    finish(axes[1], "draft length K", "tokens per loop (expected)", "Tokens each loop keeps", "upper left")
    finish(axes[2], "draft length K", "time per loop (target steps)", "Cost of a loop", "upper left")
    fig.suptitle(f"Speculative decoding against draft length, drafter costing {draft_cost:.3f} of a target step",
                 fontsize=10)
    return fig


def latency_cost(models: Sequence[str] = ("llama3-8b", "llama3-70b", "llama3-405b"), chip: str = "v5e",
                 chips: Sequence[int] = (16, 32, 64), context: float = 2048) -> Figure:
    """Plot decode cost (chip-milliseconds per token) against per-token latency for each model, in bf16 and int8
    weights, one point per (slice size, batch) from `inference.pareto`; the lower-left envelope is the front."""
    fig, ax = figure((8.0, 5.0))
    colors = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759"]
    for i, name in enumerate(models):
        for pb, marker in ((2, "o"), (1, "^")):
            lat, cost = [], []
            for n in chips:
                for row in pareto(name, chip, n, context, param_bytes=pb, kv_bytes=pb):
                    lat.append(row["step"] * 1e3)
                    cost.append(1e3 / row["tokens/s/chip"])
            if lat:
                ax.loglog(lat, cost, marker, color=colors[i % 4], ms=4, alpha=0.8,
                          label=f"{get_model(name).name}, {'bf16' if pb == 2 else 'int8'}")
    finish(ax, "per-token latency (ms)", "cost (chip-ms per token)",
           f"Decode cost against latency on {chip}, {int(context)}-token context, slices of {list(chips)} chips",
           "upper right")
    return fig


def weight_stationary_curves(B: float = 1024, D: float = 8192, F_over_D: float = 4.0, chip: str = "v5e",
                             chips: Sequence[int] = (8, 16, 32, 64, 128, 256, 512, 1024)) -> Figure:
    """Plot the communication time of one MLP under 1-D and 2-D weight-stationary sharding against the number
    of chips, with the compute time, from `inference.weight_stationary`."""
    rows = [weight_stationary(B, D, F_over_D * D, chip, n) for n in chips]
    fig, ax = figure((7.5, 4.5))
    for key, label in (("1d", "1-D comms"), ("2d", "2-D comms"), ("math", "compute")):
        ax.loglog(chips, [r[key] for r in rows], "o-" if key != "math" else "k--", label=label)
    finish(ax, "chips N", "time per MLP (s)", f"1-D vs 2-D weight-stationary, B = {B:g}, D = {D:g}, F = {F_over_D:g}D "
           f"on {chip}", "lower left")
    return fig


def latency_bound_gather(chip: str = "v5e", chips: int = 8, D: int = 8192,
                         batches: Sequence[float] = tuple(2.0 ** np.arange(0, 13))) -> Figure:
    """Plot the time of the AllGather of an int8 [B, D] activation over `chips` chips against B, next to its
    bandwidth-only time: below the knee the per-hop latency sets the time (`collectives.all_gather`)."""
    mesh = TpuMesh(chip, X=chips)
    est = [all_gather(mesh, "X", b * D) for b in batches]
    fig, ax = figure((7.5, 4.5))
    ax.loglog(batches, [e.time for e in est], "o-", label="AllGather (bandwidth + per-hop latency)")
    ax.loglog(batches, [e.t_comms for e in est], "--", label="bandwidth term alone")
    latency_bound = [b for b, e in zip(batches, est) if e.bound == "latency"]
    if latency_bound:
        ax.axvspan(batches[0], max(latency_bound), color="#e15759", alpha=0.12, label="latency-bound")
    finish(ax, "batch B (tokens)", "time (s)", f"AllGather of int8 [B, {D}] over {chips} × {chip}", "upper left")
    return fig


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
                _box(ax, x, batch - 1 - b, 1.0, 0.85, colors[b % 8] if mine else "#f4f4f4", label, 6)
        if not by_head:
            for y, text in ((-0.6, "AllToAll: queries to their caches"), (-1.2, "AllToAll: outputs back")):
                ax.annotate("", xy=(chips * 1.2 - 0.2, y), xytext=(0, y),
                            arrowprops=dict(arrowstyle="<->", color="#e15759"))
                ax.text(chips * 0.6, y + 0.1, text, ha="center", fontsize=7, color="#e15759")
        ax.set_xlim(-0.2, chips * 1.2)
        ax.set_ylim(-1.6, batch + 0.9)
        ax.axis("off")
        ax.set_title("by key/value head: no extra collective" if by_head else
                     f"by batch: 2 AllToAlls per layer, {fmt_time(per_step)} per step", fontsize=9)
    fig.suptitle(f"Splitting {batch} sequences' KV caches ({fmt_bytes(kv_cache_bytes(cfg, context))} each at "
                 f"{context} tokens) over {chips} × {chip}", fontsize=10)
    return fig
