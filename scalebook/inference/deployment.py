"""Ch. 8's planning tables for serving a model on TPU slices: what a dollar buys, the smallest slice for each weight
dtype, queries per second per chip, one configuration in full, the best slice under a latency budget, and dollars
per million tokens.

Every table is a plain function built on `inference.steps` (steps, batches) and `inference.cost` (the one price
look-up, `cost.chip_price`), so a chapter prints one without a widget, an explorer redraws in milliseconds, and the
same code runs in the reader's browser. Dtype names ('bf16', 'int8', 'int4') set the bytes of weights and of KV
caches alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..estimate import StepEstimate
from ..hardware.chips import Chip, get_chip
from ..hardware.topology import TpuMesh
from ..kinds import mapping_of
from ..models import TransformerConfig, get_model
from ..tables import Table
from ..units import checks, dtype_bytes, fmt_bytes, fmt_time, sequence_of
from .caches import smallest_topology
from .cost import chip_price, cost_per_million_tokens, prices
from .steps import decode_step, max_batch

__all__ = ["SLICES", "DTYPES", "slice_name", "flops_per_dollar", "topology_table", "qps_table", "serving_summary",
           "latency_budget", "cost_table"]

Model = TransformerConfig | str

# The 2-D slice shapes the chapter considers, smallest first (v5e offers these; 16x16 is a full pod).
SLICES: tuple[tuple[int, int], ...] = ((1, 1), (2, 1), (2, 2), (4, 2), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16))

DTYPES = ("bf16", "int8", "int4")  # the weight and KV-cache dtypes the tables compare


@checks(shape=sequence_of("count", "slice sides (X, Y)"))
def slice_name(shape: tuple[int, int]) -> str:
    """Return the name of a 2-D slice shape, e.g. (4, 2) -> "4x2"."""
    return f"{shape[0]}x{shape[1]}"


def _parse_topology(text: str | tuple[int, int]) -> tuple[int, int]:
    """Read a slice shape such as '4x4' (or a pair) into (X, Y)."""
    if isinstance(text, tuple):
        return text
    try:
        X, Y = (int(p) for p in str(text).lower().split("x"))
    except ValueError:
        raise ValueError(f"topology={text!r} must be a 2-D slice shape such as '4x4'") from None
    if X < 1 or Y < 1:
        raise ValueError(f"topology={text!r} must have positive sides")
    return X, Y


def _usd(v: float | None) -> str:
    return "—" if v is None else f"${v:.3g}"


def _cost(chip: Chip, rate_per_chip: float) -> float | None:
    """Dollars per million tokens, or None when the chip has no listed price or produces nothing."""
    try:
        return cost_per_million_tokens(chip, rate_per_chip) if rate_per_chip > 0 else None
    except KeyError:
        return None


@checks(chips="?names")
def flops_per_dollar(chips: Sequence[str] | None = None) -> Table:
    """Return, for each priced chip, its peak bf16 FLOP/s, HBM bandwidth, on-demand USD per hour, and the FLOPs and
    HBM bytes one dollar buys (peak rate x 3600 / price). Prices come from `cost.prices()`, with their date."""
    table = prices()
    rows = []
    for name in chips or table["chips"]:
        chip = get_chip(name)
        usd = chip_price(chip)
        rows.append({"chip": chip.name, "bf16 FLOP/s": chip.bf16_flops, "HBM B/s": chip.hbm_bandwidth,
                     "USD/hour": usd, "FLOPs per $": chip.bf16_flops * 3600 / usd,
                     "HBM bytes per $": chip.hbm_bandwidth * 3600 / usd})
    sci = lambda v: f"{v:.3g}"  # noqa: E731
    return Table(rows, formats={"bf16 FLOP/s": sci, "HBM B/s": sci, "USD/hour": lambda v: f"${v:g}",
                                "FLOPs per $": sci, "HBM bytes per $": sci},
                 title=f"What a dollar buys (on-demand prices of {table['date']}; {table['source']})")


@checks(rates=mapping_of("size", "tokens/s per chip"))
def cost_table(rates: Mapping[str, float], chip: str | Chip = "v5e") -> Table:
    """Return dollars per million generated tokens for each labelled throughput (`rates`: label -> tokens/s per
    chip) at `chip`'s listed price per chip-hour."""
    c = get_chip(chip)
    if not rates:
        raise ValueError("rates={} must name at least one configuration (label -> tokens/s per chip)")
    rows = [{"configuration": label, "tokens/s/chip": rate, "$ per M tokens": cost_per_million_tokens(c, rate)}
            for label, rate in rates.items()]
    return Table(rows, formats={"tokens/s/chip": lambda v: f"{v:.4g}", "$ per M tokens": _usd},
                 title=f"Cost of {c.name} at ${chip_price(c):g} per chip-hour ({prices()['date']})")


@checks(context="size", dtypes="names")
def topology_table(model: Model = "llama3-70b", chip: str | Chip = "v5e", context: float = 8192,
                   dtypes: Sequence[str] = DTYPES) -> Table:
    """Return the smallest slice for each dtype of weights and KV caches (ch. 8's table): the weights' bytes, KV
    bytes per token, chips the weights need (unrounded), the smallest slice in `SLICES` that holds them, the HBM
    left over, and how many caches of `context` tokens fit in it (the largest batch)."""
    cfg, c = get_model(model), get_chip(chip)
    rows = []
    for dtype in dtypes:
        b = dtype_bytes(dtype)
        shape = smallest_topology(cfg, c, b, shapes=SLICES)
        n = shape[0] * shape[1]
        weights = cfg.param_count() * b
        rows.append({"dtype": dtype, "weights": weights, "KV per token": cfg.kv_bytes_per_token(b),
                     "chips for weights": weights / c.hbm_bytes, "slice": slice_name(shape), "chips": n,
                     "HBM left": n * c.hbm_bytes - weights,
                     f"caches @ {context:g}": max_batch(cfg, c, n, context, b, b)})
    return Table(rows, formats={"weights": fmt_bytes, "KV per token": lambda v: f"{v / 1e3:.1f} kB",
                                "chips for weights": lambda v: f"{v:.2f}", "HBM left": fmt_bytes},
                 title=f"Smallest {c.name} slice for {cfg.name}, context {context:g}")


def _step(cfg: TransformerConfig, c: Chip, shape: tuple[int, int], batch: int, context: float, pb: float,
          kb: float, ici: bool) -> StepEstimate:
    """The decode step on a slice; with `ici`, the tensor-parallel collectives over it are counted."""
    n = shape[0] * shape[1]
    mesh = TpuMesh(c, X=shape[0], Y=shape[1]) if ici and n > 1 else None
    return decode_step(cfg, c, n, batch, context, param_bytes=pb, kv_bytes=kb, mesh=mesh)


@checks(context="size", decode_tokens="count", grow="count0", dtypes="names")
def qps_table(model: Model = "llama3-70b", chip: str | Chip = "v5e", context: float = 8192,
              decode_tokens: int = 512, grow: int = 0, dtypes: Sequence[str] = DTYPES) -> Table:
    """Return queries per second per chip at the largest batch that fits, per dtype (ch. 8): on the smallest
    slice, or `grow` sizes up `SLICES` (1 doubles it). QPS/chip = batch / (step · decode_tokens · chips), with the
    step taken two ways: the book's (all of HBM's bytes read once, bytes / W) and the full roofline step, which
    also counts the FLOPs when the MLP turns compute-bound."""
    cfg, c = get_model(model), get_chip(chip)
    rows = []
    for dtype in dtypes:
        b = dtype_bytes(dtype)
        i = SLICES.index(smallest_topology(cfg, c, b, shapes=SLICES)) + grow
        if i >= len(SLICES):
            raise ValueError(f"grow={grow} goes past the largest slice {slice_name(SLICES[-1])} for {dtype}")
        shape = SLICES[i]
        n = shape[0] * shape[1]
        batch = max_batch(cfg, c, n, context, b, b)
        step = _step(cfg, c, shape, max(batch, 1), context, b, b, ici=False)
        hbm = step.t_params + step.t_kv  # the book's step: every byte in HBM read once
        rate = batch / step.time / n
        rows.append({"dtype": dtype, "slice": slice_name(shape), "chips": n, "batch": batch, "HBM-read step": hbm,
                     "roofline step": step.time, "bound": step.bound,
                     "QPS/chip (book)": batch / (hbm * decode_tokens * n), "QPS/chip (roofline)": rate / decode_tokens,
                     "tokens/s/chip": rate, "$ per M tokens": _cost(c, rate)})
    q = lambda v: f"{v:.3g}"  # noqa: E731
    return Table(rows, formats={"HBM-read step": fmt_time, "roofline step": fmt_time, "QPS/chip (book)": q,
                                "QPS/chip (roofline)": q, "tokens/s/chip": q, "$ per M tokens": _usd},
                 title=f"{cfg.name} on {c.name}: queries/s per chip, {decode_tokens}-token replies at context "
                       f"{context:g}")


@checks(dtype="dtype", context="size", decode_tokens="count", batch="count0", ici="flag")
def serving_summary(model: Model = "llama3-70b", chip: str | Chip = "v5e", dtype: str = "int8",
                    context: float = 8192, topology: str | tuple[int, int] = "4x2", decode_tokens: int = 512,
                    batch: int = 0, ici: bool = False) -> Table:
    """Return what one serving configuration gives on a `topology` (slice shape, e.g. '4x2'): the largest batch that
    fits, the decode step and its parts, tokens/s and queries/s per chip, the time of a whole reply, and dollars per
    million tokens. `batch` = 0 takes the largest that fits; `ici` adds the tensor-parallel collectives."""
    cfg, c = get_model(model), get_chip(chip)
    shape = _parse_topology(topology)
    n, b = shape[0] * shape[1], dtype_bytes(dtype)
    fits = max_batch(cfg, c, n, context, b, b)
    if fits < 1:
        raise ValueError(f"{cfg.name} in {dtype} leaves no room for a {context:g}-token cache on {slice_name(shape)} "
                         f"({n} × {fmt_bytes(c.hbm_bytes)}); pick a bigger slice, a smaller dtype or less context")
    if batch > fits:
        raise ValueError(f"batch={batch} does not fit: at most {fits} caches of {context:g} tokens on "
                         f"{slice_name(shape)}")
    B = batch or fits
    step = _step(cfg, c, shape, B, context, b, b, ici)
    rate = B / step.time / n
    rows = [
        ("slice", f"{slice_name(shape)} = {n} × {c.name}"),
        ("weights", f"{fmt_bytes(cfg.param_count() * b)} ({dtype})"),
        ("KV cache per sequence", fmt_bytes(cfg.kv_bytes_per_token(b) * context)),
        ("largest batch that fits", str(fits)),
        ("batch", str(B)),
        ("weights from HBM", fmt_time(step.t_params)),
        ("KV caches from HBM", fmt_time(step.t_kv)),
        ("FLOPs", fmt_time(step.t_math)),
        ("ICI collectives", fmt_time(step.t_ici) if ici else "not counted"),
        ("decode step", f"{fmt_time(step.time)} ({step.bound}-bound)"),
        (f"a {decode_tokens}-token reply", fmt_time(step.time * decode_tokens)),
        ("tokens/s per chip", f"{rate:.4g}"),
        ("queries/s per chip", f"{rate / decode_tokens:.3g}"),
        ("$ per million tokens", _usd(_cost(c, rate))),
    ]
    return Table([{"quantity": q, "value": v} for q, v in rows],
                 title=f"Serving {cfg.name} in {dtype} at context {context:g}")


def _fastest_batch(cfg: TransformerConfig, c: Chip, shape: tuple[int, int], context: float, pb: float, kb: float,
                   max_step: float, ici: bool) -> tuple[int, StepEstimate | None]:
    """Largest batch whose step fits in `max_step` (the step grows with the batch, so bisect)."""
    lo, hi = 0, max_batch(cfg, c, shape[0] * shape[1], context, pb, kb)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _step(cfg, c, shape, mid, context, pb, kb, ici).time <= max_step:
            lo = mid
        else:
            hi = mid - 1
    return lo, (_step(cfg, c, shape, lo, context, pb, kb, ici) if lo else None)


@checks(max_step="size", context="size", ici="flag", weights="dtype", kv="dtype",
        shapes=lambda name, value: value if value is None else sequence_of("counts", "(X, Y) shapes")(name, value))
def latency_budget(model: Model = "llama3-405b", chip: str | Chip = "v5e", max_step: float = 15e-3,
                   context: float = 8192, weights: str = "int8", kv: str = "int8", ici: bool = True,
                   shapes: Sequence[tuple[int, int]] | None = None) -> Table:
    """Return, for each slice that holds the weights, the fastest step it can take (batch 1), the largest batch
    whose decode step stays within `max_step` seconds, and the tokens/s per chip and dollars per million tokens
    at that batch. `ici` counts the tensor-parallel collectives over the slice (with their per-hop latency)."""
    cfg, c = get_model(model), get_chip(chip)
    pb, kb = dtype_bytes(weights), dtype_bytes(kv)
    rows = []
    for shape in shapes or SLICES:
        n = shape[0] * shape[1]
        if max_batch(cfg, c, n, context, pb, kb) < 1:
            continue
        fastest = _step(cfg, c, shape, 1, context, pb, kb, ici)
        B, step = _fastest_batch(cfg, c, shape, context, pb, kb, max_step, ici)
        rate = B / step.time / n if step else 0.0
        rows.append({"slice": slice_name(shape), "chips": n, "fastest step": fastest.time,
                     "fastest bound": fastest.bound, "batch within budget": B, "step": step.time if step else None,
                     "bound": step.bound if step else None, "tokens/s/chip": rate if step else None,
                     "$ per M tokens": _cost(c, rate)})
    if not rows:
        raise ValueError(f"{cfg.name} in {weights} fits none of the slices {[slice_name(s) for s in shapes or SLICES]}")
    return Table(rows, formats={"fastest step": fmt_time, "step": fmt_time, "tokens/s/chip": lambda v: f"{v:.4g}",
                                "$ per M tokens": _usd},
                 title=f"{cfg.name} on {c.name}, {weights} weights, {kv} KV, context {context:g}: "
                       f"steps within {fmt_time(max_step)}" + (" (ICI counted)" if ici else ""))
