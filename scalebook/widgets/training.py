"""Explorers for the training chapter: the training roofline (compute against each strategy's communication as the
batch grows), training memory per chip, and a pipeline schedule with its bubble.

Every answer is an SVG `Chart`, a `Table` or a little hand-written HTML, so a redraw takes milliseconds.
"""

from __future__ import annotations

import html

from ..hardware.chips import get_chip
from ..kinds import mapping_of
from ..models import get_model
from ..plots.training import STRATEGY_LABELS, tokens
from ..svg import Chart, svg_open
from ..tables import Table
from ..training.book import min_tokens_per_chip, step_time, tp_limit, x_opt
from ..training.curves import strategy_cost, strategy_curves
from ..training.footprint import REMAT_SAVES, max_params, memory, parts_per_chip
from ..training.pipeline import PIPELINE_SCHEDULES, idle_fraction, pipeline_bubble, pipeline_schedule
from ..units import checks, fmt_bytes, fmt_time, is_a
from .core import Explorer, Log, explore, opening_on
from .sharding import TPU_CHIPS
from .tpu import Picture

__all__ = ["training_roofline_chart", "training_roofline_explorer", "memory_picture", "training_memory_explorer",
           "pipeline_html", "pipeline_explorer", "threshold_table", "threshold_explorer", "dp_capacity_explorer",
           "layout_step_explorer"]

CHIP_COUNTS = [64, 256, 1024, 4096, 8192, 8960, 16384]
_COLORS = {"dp": "#1f77b4", "fsdp": "#ff7f0e", "tp": "#2ca02c", "fsdp_tp": "#d62728"}


# --- the training roofline -------------------------------------------------------------------------------------


@checks(N="count", D="size", F="size", M_X="count", M_Y="count", B="size")
def training_roofline_chart(chip: str = "v5p", N: int = 4096, D: float = 8192, F: float = 32768, M_X: int = 2,
                            M_Y: int = 1, B: float = 4e5) -> tuple[Chart, Table]:
    """Return an SVG chart of per-layer compute and each strategy's communication time against the global batch,
    and a table of every strategy at batch `B` (its split, both clocks, which one wins)."""
    curves = strategy_curves(chip, N, D, F, M_X, M_Y)
    name = get_chip(chip).name
    chart = Chart(title=f"Training roofline: {N} × {name}, D = {D:g}, F = {F:g}", xlabel="global batch B (tokens)",
                  ylabel="time per layer (s)", xlog=True, ylog=True)
    chart.line(curves.batches, curves.t_math, label="compute", color="#000")
    for s, label in STRATEGY_LABELS.items():
        at = curves.crossovers[s]
        suffix = f", fine above {tokens(at)}" if at else ""
        chart.line(curves.batches, curves.t_comms[s], label=f"{label} comms{suffix}", color=_COLORS[s], dash=True)
    chart.vline(B, label=f"B = {tokens(B)}")
    rows = []
    for s, label in STRATEGY_LABELS.items():
        est, X, Y = strategy_cost(s, B, D, F, chip, N, M_X, M_Y)
        rows.append({"strategy": label, "X (FSDP/DP)": X, "Y (TP)": Y, "T_math": est.t_math, "T_comms": est.t_comms,
                     "bound": est.bound})
    table = Table(rows, formats={"T_math": fmt_time, "T_comms": fmt_time},
                  title=f"one layer at B = {tokens(B)} tokens ({B / N:.0f} per chip)")
    return chart, table


@checks(N="count", D="size", F="size", M_X="count", M_Y="count", B="size")
def training_roofline_explorer(chip: str = "v5p", N: int = 4096, D: float = 8192, F: float = 32768, M_X: int = 2,
                               M_Y: int = 1, B: float = 4e5) -> Explorer:
    """Return an explorer of the training roofline (ch. 5's interactive figure); opens on the book's v5p
    16x16x16 example, where every strategy is communication-bound below about 4e5 tokens."""
    return explore(
        lambda chip, N, D, F, M_X, M_Y, B: training_roofline_chart(chip, N, round(D), round(F), M_X, M_Y, B),
        title="Compute vs communication per strategy",
        chip=opening_on(TPU_CHIPS, chip), N=opening_on(CHIP_COUNTS, N), D=Log(1024, 65536, D), F=Log(1024, 262144, F),
        M_X=(1, 3, 1, M_X), M_Y=(1, 3, 1, M_Y), B=Log(1e4, 1e8, B),
    )


# --- memory ----------------------------------------------------------------------------------------------------

_REMAT_MENU = ["checkpoint In, Tmp (D + 2F)", *REMAT_SAVES]


def _saves(policy: str, D: int, F: int) -> float | str:
    """Arrays of [tokens, D] saved per layer: a REMAT_SAVES name, or the D + 2F checkpoints of ch. 5's problems."""
    return (D + 2 * F) / D if policy not in REMAT_SAVES else policy


@checks(hbm="size", width="count", parts=mapping_of("nonneg", "byte counts"))
def memory_picture(parts: dict[str, float], hbm: float, width: int = 560) -> Picture:
    """Return an SVG stacked bar of the bytes per chip in `parts`, with the chip's `hbm` drawn as a line."""
    colors = {"params": "#4e79a7", "grads": "#76b7b2", "optimizer": "#f28e2b", "activations": "#e15759"}
    total = sum(parts.values())
    scale = (width - 20) / max(total, hbm)
    out, x = [svg_open(width, 70, "font-family='sans-serif' font-size='11'")], 10.0
    for i, (part, value) in enumerate(parts.items()):
        w = value * scale
        out.append(f"<rect x='{x:.1f}' y='10' width='{w:.1f}' height='26' fill='{colors.get(part, '#999')}'/>")
        out.append(f"<rect x='{10 + 110 * i}' y='48' width='10' height='10' fill='{colors.get(part, '#999')}'/>"
                   f"<text x='{24 + 110 * i}' y='57'>{html.escape(part)}</text>")
        x += w
    hx = 10 + hbm * scale
    out.append(f"<line x1='{hx:.1f}' y1='4' x2='{hx:.1f}' y2='42' stroke='#000' stroke-dasharray='4 3'/>"
               f"<text x='{min(hx, width - 70):.1f}' y='66' font-weight='bold'>HBM</text></svg>")
    return Picture("".join(out))


def _memory_view(model: str, B: float, N: int, chip: str, remat: str, optimizer: str,
                 layout: str) -> tuple[Picture, Table]:
    cfg, c = get_model(model), get_chip(chip)
    mem = memory(cfg, B, N, saves_per_layer=_saves(remat, cfg.D, cfg.F), optimizer=optimizer)
    parts = {k: v for k, v in parts_per_chip(mem, replicated=layout.startswith("DP")).items() if mem[k]}
    rows = [{"part": k, "whole model": mem[k], "per chip": v} for k, v in parts.items()]
    rows.append({"part": "total", "whole model": mem.total, "per chip": sum(parts.values())})
    fits = "fits" if sum(parts.values()) <= c.hbm_bytes else "does NOT fit"
    table = Table(rows, formats={"whole model": fmt_bytes, "per chip": fmt_bytes},
                  title=f"{cfg.name}, {tokens(B)} tokens on {N} chips ({layout}): {fits} in "
                        f"{fmt_bytes(c.hbm_bytes)} of {c.name} HBM")
    return memory_picture(parts, c.hbm_bytes), table


@checks(B="size", N="count", remat=_REMAT_MENU, layout=["FSDP (state sharded)", "DP (state replicated)"])
def training_memory_explorer(model: str = "llama2-13b", B: float = 16e6, N: int = 4096, chip: str = "v5p",
                             remat: str = _REMAT_MENU[0], optimizer: str = "adam",
                             layout: str = "FSDP (state sharded)") -> Explorer:
    """Return an explorer of training memory (`training.memory`) per chip against a chip's HBM; opens on ch. 5's
    problem 2 (LLaMA 2-13B, 16M tokens, checkpoints of In and the two [B, F] activations per layer)."""
    return explore(
        _memory_view, title="Training memory per chip",
        model=opening_on(["llama2-13b", "llama3-8b", "llama3-70b", "llama3-405b", "gemma-7b"], model),
        B=Log(1e5, 1e8, B), N=opening_on(CHIP_COUNTS + [1, 16], N), chip=opening_on(TPU_CHIPS, chip),
        remat=opening_on(_REMAT_MENU, remat), optimizer=opening_on(["adam", "adafactor", "sgd", "none"], optimizer),
        layout=opening_on(["FSDP (state sharded)", "DP (state replicated)"], layout),
    )


# --- pipelining ------------------------------------------------------------------------------------------------


@checks(grid=is_a(list, tuple))
def pipeline_html(grid: list[list[str]]) -> str:
    """Return an HTML table of a pipeline grid: forward cells blue, backward orange, idle cells shaded grey."""
    style = {"F": "background:#4e79a7;color:#fff", "B": "background:#f28e2b;color:#fff", "": "background:#ddd"}
    rows = []
    for s, row in enumerate(grid):
        cells = "".join(f"<td style='{style[c[:1]]};width:22px;text-align:center;font-size:10px'>"
                        f"{html.escape(c)}</td>" for c in row)
        rows.append(f"<tr><th style='font-size:11px'>stage {s}</th>{cells}</tr>")
    return f"<table style='border-collapse:separate;border-spacing:1px'>{''.join(rows)}</table>"


def _pipeline_view(stages: int, microbatches: int, schedule: str, virtual: int) -> tuple[Picture, Table]:
    grid = pipeline_schedule(stages, microbatches, schedule)
    rows = [{"schedule": "this grid", "bubble": idle_fraction(grid)}]
    rows += [{"schedule": s if s != "interleaved" else f"interleaved, {virtual} chunks per device",
              "bubble": pipeline_bubble(stages, microbatches, s, virtual)} for s in PIPELINE_SCHEDULES]
    table = Table(rows, formats={"bubble": lambda f: f"{f:.1%}"},
                  title=f"idle fraction, {stages} stages × {microbatches} microbatches: (P − 1) / (v·M + P − 1)")
    return Picture(pipeline_html(grid)), table


@checks(stages="count", microbatches="count", virtual="count")
def pipeline_explorer(stages: int = 4, microbatches: int = 8, schedule: str = "1f1b", virtual: int = 2) -> Explorer:
    """Return an explorer of a pipeline schedule: the stage × time grid with idle slots shaded, and the bubble."""
    return explore(
        _pipeline_view, title="Pipeline schedule and its bubble",
        stages=(2, 16, 1, stages), microbatches=(1, 32, 1, microbatches),
        schedule=opening_on(["1f1b", "gpipe"], schedule),
        virtual=(1, 8, 1, virtual),
    )


# --- thresholds, capacity and one layout's step (the chapter's worked examples) ----------------------------------


@checks(B="size", F="size", N="count", M_X="count", M_Y="count")
def threshold_table(chip: str = "v5p", B: float = 2e6, F: float = 28672, N: int = 4096, M_X: int = 2,
                    M_Y: int = 1) -> Table:
    """Return each strategy's bound on `chip` (ch. 5): tokens per chip DP/FSDP (over all M_X + M_Y axes) and
    FSDP + TP need, the TP width limit, how many chips a global batch `B` keeps compute-bound, and X_opt for `N`
    chips."""
    dp = min_tokens_per_chip("fsdp", chip, M_X=M_X + M_Y)
    mixed = min_tokens_per_chip("fsdp_tp", chip, F=F, M_X=M_X, M_Y=M_Y)
    rows = [{"strategy": f"DP / FSDP over all {M_X + M_Y} axes", "bound": f"B/X > {dp:,.0f} tokens per chip",
             "chips B keeps busy": f"{B / dp:,.0f}"},
            {"strategy": f"FSDP + TP (M_X·M_Y = {M_X * M_Y})", "bound": f"B/N > {mixed:,.0f} tokens per chip",
             "chips B keeps busy": f"{B / mixed:,.0f}"},
            {"strategy": f"TP over {M_Y} axes", "bound": f"Y < {tp_limit(F, chip, M_Y=M_Y):.1f} (no batch helps)",
             "chips B keeps busy": "—"},
            {"strategy": f"X_opt on {N} chips", "bound": f"X = {x_opt(B, F, N, M_X, M_Y):,.1f}",
             "chips B keeps busy": "—"}]
    return Table(rows, title=f"{get_chip(chip).name}, F = {F:,.0f}, global batch {tokens(B)} tokens")


@checks(B="size", F="size", N="count", M_X="count", M_Y="count")
def threshold_explorer(chip: str = "v5p", B: float = 2e6, F: float = 28672, N: int = 4096, M_X: int = 2,
                       M_Y: int = 1) -> Explorer:
    """Return an explorer of every strategy's bound (`threshold_table`); each worked example opens it on its
    own inputs."""
    return explore(lambda chip, B, F, N, M_X, M_Y: threshold_table(chip, B, round(F), N, M_X, M_Y),
                   title="How many tokens per chip each strategy needs", chip=opening_on(TPU_CHIPS, chip),
                   B=Log(1e3, 1e9, B), F=Log(1024, 262144, F), N=opening_on([64, *CHIP_COUNTS], N),
                   M_X=(1, 3, 1, M_X), M_Y=(1, 3, 1, M_Y))


def _capacity(chip: str, optimizer: str, param_bytes: int, state_bytes: int) -> Table:
    c = get_chip(chip)
    dtypes = {2: "bf16", 4: "fp32"}
    n = max_params(chip, optimizer, dtypes[param_bytes], dtypes[state_bytes])
    return Table([{"chip": c.name, "HBM": fmt_bytes(c.hbm_bytes), "bytes per parameter": c.hbm_bytes / n,
                   "largest model under pure DP": f"{n / 1e9:.1f}B parameters"}],
                 formats={"bytes per parameter": lambda v: f"{v:.0f}"}, title="Everything replicated on every chip")


def dp_capacity_explorer(chip: str = "v5p", optimizer: str = "adam") -> Explorer:
    """Return an explorer of the largest model pure data parallelism fits (ch. 5, Ex2: about 9B on a v5p)."""
    return explore(_capacity, title="The largest model pure DP can train", chip=opening_on(TPU_CHIPS, chip),
                   optimizer=opening_on(["adam", "adafactor", "sgd", "none"], optimizer), param_bytes=[2, 4],
                   state_bytes=[4, 2])


@checks(n_chips="count", B="size", X="count", M_X="count", mfu="fraction")
def layout_step_explorer(model: str = "llama2-13b", chip: str = "v5p", n_chips: int = 4096, B: float = 3e6,
                         strategy: str = "fsdp_tp", X: int = 1024, M_X: int = 2, mfu: float = 0.4) -> Explorer:
    """Return an explorer of one training step under a chosen layout (`training.step_time`), opening on
    ch. 5's Q3: LLaMA 2-13B, 3M tokens, 1024-way FSDP × 4-way TP on 4096 v5p chips at 40% MFU."""
    def view(model: str, chip: str, n_chips: int, B: float, strategy: str, X: int, M_X: int, mfu: float):
        if strategy == "fsdp_tp" and n_chips % X:
            raise ValueError(f"X={X} must divide n_chips={n_chips}")
        axes = {"X": X, "Y": n_chips // X} if strategy == "fsdp_tp" else {}
        return step_time(model, chip, n_chips, B, strategy, M_X=M_X, mfu=mfu, **axes)

    return explore(view, title="One training step under a layout", unfit=("must divide n_chips",),
                   model=opening_on(["llama2-13b", "llama3-8b", "llama3-70b", "llama3-405b"], model),
                   chip=opening_on(TPU_CHIPS, chip), n_chips=opening_on(CHIP_COUNTS, n_chips), B=Log(1e5, 1e8, B),
                   strategy=opening_on(["fsdp_tp", "fsdp", "dp", "tp"], strategy),
                   X=opening_on([64, 128, 256, 512, 1024, 2048, 4096], X), M_X=(1, 3, 1, M_X),
                   mfu=(0.1, 1.0, 0.05, mfu))
