"""Figures for the inference chapter's serving mechanisms: the three engine layouts and continuous batching, a prefix
cache, speculative decoding, and latency-bound collectives (the KV cache's own pictures are in `plots.kv_cache`).
Every time or size printed on them comes from `scalebook.inference`, `models` or `collectives`; the drawings are
schematic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..collectives import all_gather
from ..hardware.topology import TpuMesh
from ..inference.serving.timelines import batching_snapshots, engine_segments
from ..inference.steps import decode_step, pareto, prefill
from ..inference.techniques import speculative_speedup, weight_stationary
from ..kinds import instance_or_name
from ..models import TransformerConfig, get_model, model_names
from ..units import checks, fmt_time, is_a, sequence_of
from .base import figure, finish, schematic, time_axis
from .diagram import cell

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["engine", "continuous_batching", "prefix_tree", "speculative",
           "speculative_panels", "latency_cost", "weight_stationary_curves", "latency_bound_gather"]

Model = TransformerConfig | str
A_MODEL = instance_or_name(TransformerConfig, model_names)  # a model argument: a config or a preset's name
_C = {"prefill": "#4e79a7", "decode": "#f28e2b", "idle": "#eeeeee", "transfer": "#b07aa1", "draft": "#59a14f",
      "verify": "#e15759"}


@checks(n_chips="count", slots="count", outputs="counts", prompts="counts")
def engine(mode: str, model: Model = "llama3-70b", chip: str = "v5e", n_chips: int = 16,
           prompts: Sequence[int] = (2048, 1024, 4096, 2048, 1024, 3072), outputs: Sequence[int] = (60, 30, 45, 20,
                                                                                                      50, 35),
           slots: int = 3) -> Figure:
    """Draw a Gantt chart of `serving.engine_segments` for `mode`, with the prefill and decode-step times of `model`
    on `n_chips` chips from `inference.prefill` (at the book's 40 % MFU) and `inference.decode_step` (int8 weights,
    8k context)."""
    t_prefill = prefill(model, chip, n_chips, max(prompts), assumed_mfu=0.4, param_bytes=1).time
    t_step = decode_step(model, chip, n_chips, slots, 8192, param_bytes=1, kv_bytes=1).time
    bars = engine_segments(mode, prompts, outputs, slots, t_prefill, t_step)
    fig, ax = figure((9.0, 2.6 + 0.35 * slots))
    colors = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#9c755f", "#76b7b2", "#edc948"]
    for row, start, end, kind, r in bars:
        ax.barh(row, end - start, left=start, color=colors[r % len(colors)], alpha=1.0 if kind == "decode" else 0.45,
                hatch="///" if kind == "prefill" else "", edgecolor="white")
        ax.text((start + end) / 2, row, f"{'P' if kind == 'prefill' else 'D'}{r}", ha="center", va="center",
                fontsize=8)
    rows = sorted({b[0] for b in bars})
    ax.set_yticks(rows, ["prefill slice" if r < 0 else f"decode slot {r}" for r in rows])
    done = max(b[2] for b in bars)
    time_axis(ax, "time (s); hatched: prefill, solid: decode", f"{mode.capitalize()}, {get_model(model).name} "
           f"on {n_chips} × {chip}:\nprefill {fmt_time(t_prefill)} (longest prompt), decode step {fmt_time(t_step)}; "
           f"all done at {done:.2f} s")
    return fig


@checks(slots="count", panels="count", outputs="counts")
def continuous_batching(slots: int = 4, outputs: Sequence[int] = (3, 5, 2, 4, 3, 2, 4), panels: int = 6) -> Figure:
    """Draw a strip of `panels` snapshots (`serving.batching_snapshots`) of a continuous-batching engine: each KV slot
    holds a request (tokens made / wanted) or sits free; freed slots are refilled from the queue."""
    snaps = batching_snapshots(slots, outputs, panels)
    fig, axes = figure((10.0, 3.0), ncols=panels)
    colors = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#9c755f", "#76b7b2", "#edc948"]
    for ax, (step, cells, waiting, done) in zip(getattr(axes, "flat", [axes]), snaps):
        for i, held in enumerate(cells):
            if held is None:
                cell(ax, 0, slots - 1 - i, 1, 0.85, _C["idle"], "free", 7, "#666")
            else:
                r, made = held
                cell(ax, 0, slots - 1 - i, 1, 0.85, colors[r % len(colors)], f"r{r}: {made}/{outputs[r]}", 7)
        ax.text(0.5, -0.35, "queue: " + (",".join(f"r{q}" for q in waiting) or "—"), ha="center", fontsize=8)
        ax.text(0.5, -0.75, "done: " + (",".join(f"r{q}" for q in done) or "—"), ha="center", fontsize=8)
        ax.set_title(f"before step {step}", fontsize=8)
        ax.set_xlim(-0.05, 1.05)
        ax.set_ylim(-1.0, slots)
        ax.axis("off")
    fig.suptitle(f"Continuous batching: {slots} KV slots, a freed slot refilled before the next step "
                 "(tokens made / tokens wanted)", fontsize=10)
    return fig


@checks(block="count", prompts=is_a(list, tuple))
def prefix_tree(prompts: Sequence[Sequence[str]], block: int = 1) -> Figure:
    """Draw the prefix tree (trie) of cached prompts, one node per shared block of tokens, and for the last
    prompt the blocks it reuses (hits, green) and the ones it must prefill (orange)."""
    import numpy as np  # for drawing, beside matplotlib: the calculations here need no NumPy

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
        cell(ax, x, -depth, 1.6, 0.6, color, key[-1], 8)
        if depth > 1:
            parent = key[:-1]
            ax.plot([x + 0.8, float(np.mean(xs[parent])) * 2 + 0.8], [-depth + 0.6, -depth + 1], color="#888", lw=0.8)
    x0 = len(leaves) * 2 + 1
    ax.text(x0, 0.2, "new request:", fontsize=8)
    for d, tok in enumerate(new):
        cell(ax, x0, -d - 1, 1.6, 0.6, "#59a14f" if d < hit else "#f28e2b", tok, 8)
    schematic(ax, (-0.5, x0 + 2.5), (-max(len(p) for p in prompts) - 0.5, 0.8),
              f"Prefix cache as a tree of KV blocks: the new request reuses {hit} of its {len(new)} blocks "
              f"(green) and prefills {len(new) - hit} (orange)")
    return fig


@checks(draft_tokens="count", accepted="count0", n_chips="count", target=A_MODEL, drafter=A_MODEL)
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
        cell(ax, i * t_t, 1.2, t_t, 0.6, "#4e79a7", f"target: t{i}", 7)
    t = 0.0
    for i in range(draft_tokens):
        cell(ax, t, 0, t_d, 0.6, _C["draft"], f"d{i}", 7)
        t += t_d
    cell(ax, t, 0, t_t, 0.6, _C["verify"], "verify d0..d" + str(draft_tokens - 1), 7)
    marks = " ".join("✓" if i < accepted else "✗" if i == accepted else "–" for i in range(draft_tokens))
    ax.text(t + t_t * 1.05, 0.3, marks, fontsize=9, va="center")
    ax.set_yticks([0.3, 1.5], [f"speculative: {draft_tokens} drafts", "plain decoding"])
    spec_time = t + t_t
    ax.set_xlim(0, max(made * t_t, spec_time + 0.6 * t_t) * 1.05)  # room for the marks after the verify bar
    ax.set_ylim(-0.3, 2.1)
    time_axis(ax, "time (ms)", f"{made} tokens: plain {made * t_t:.1f} ms, speculative {spec_time:.1f} ms\n"
           f"({accepted} of {draft_tokens} drafts accepted, then the target's own next token)")
    return fig


@checks(draft_cost="size", max_draft="count", tokens="count", t_target="size",
        acceptances=sequence_of("fraction", "fractions in (0, 1]"))
def speculative_panels(draft_cost: float = 4 / 70, acceptances: Sequence[float] = (0.6, 0.8),
                       max_draft: int = 7, tokens: int = 128, t_target: float = 1.0) -> Figure:
    """Three panels against the draft length K: the time to generate `tokens` tokens (in target steps), the
    expected tokens per loop for each acceptance rate, and the time per loop, from `speculative_speedup`."""
    import numpy as np  # for drawing, beside matplotlib: the calculations here need no NumPy

    ks = np.arange(0, max_draft + 1)
    fig, axes = figure((10.0, 3.4), ncols=3)
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


@checks(context="size", chips="counts", models=is_a(list, tuple))
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


@checks(B="size", D="size", F_over_D="size", chips="counts")
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


@checks(chips="count", D="count", batches="sizes")
def latency_bound_gather(chip: str = "v5e", chips: int = 8, D: int = 8192,
                         batches: Sequence[float] = tuple(2.0**k for k in range(13))) -> Figure:
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


