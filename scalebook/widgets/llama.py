"""Explorers for the LLaMA 3 training chapter: a config read into the book's letters, what a training run costs,
which batch bounds a layout meets, and the planner's table of layouts.

The tables are plain functions too (`config_table`, `model_comparison`, `run_table`, `batch_bounds`), so a chapter
can print one without a widget. Every answer is a `Table` or a `TrainingPlan`: a redraw takes milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..hardware.chips import Chip, get_chip
from ..models import LETTER_MEANINGS, TransformerConfig, config_table, get_model, model_names
from ..tables import Table
from ..training.book import min_tokens_per_chip, tp_limit, x_opt
from ..training.planner import plan
from ..units import checks, fmt_flops, fmt_si, fmt_time, is_a
from .core import Explorer, Log, explore, opening_on

__all__ = ["config_table", "model_comparison", "run_table", "batch_bounds", "run_explorer",
           "bounds_explorer", "plan_explorer"]

Model = TransformerConfig | str


# TPU families with a DCN figure: the planner needs one as soon as a run spans more than one pod.
TRAINING_CHIPS = ("v5p", "v5e", "v6e", "tpu7x")

def _count(v: float) -> str:
    return fmt_si(v, "", 4).strip()


def _value(v: Any) -> str:
    return v if isinstance(v, str) else f"{v:,}" if isinstance(v, int) else f"{v:.4g}"


@checks(models=is_a(list, tuple))
def model_comparison(models: Sequence[Model] = ("llama3-8b", "llama3-70b", "llama3-405b")) -> Table:
    """Return a side-by-side table of models: their letters, F/D, parameters, the MLP's and attention's shares
    of them, and training FLOPs per token (6 × matmul parameters, attention's T-dependent FLOPs left out)."""
    cfgs = [get_model(m) for m in models]
    if not cfgs:
        raise ValueError("models must name at least one model")

    def share(cfg: TransformerConfig, part: str) -> float:
        return cfg.components()[part][0] / cfg.param_count()

    quantities: list[tuple[str, Callable[[TransformerConfig], Any]]] = [
        *((f"{letter} ({meaning})", lambda c, letter=letter: getattr(c, letter))
          for letter, meaning in LETTER_MEANINGS.items()),
        ("F / D", lambda c: c.F / c.D),
        ("parameters", lambda c: _count(c.param_count())),
        ("MLP share of parameters", lambda c: f"{share(c, 'MLP (dense)'):.1%}"),
        ("attention share of parameters", lambda c: f"{share(c, 'attention'):.1%}"),
        ("embeddings share of parameters", lambda c: f"{share(c, 'embedding') + share(c, 'unembedding'):.1%}"),
        ("training FLOPs per token", lambda c: fmt_flops(c.flops_per_token())),
    ]
    names = [c.name or f"model {i}" for i, c in enumerate(cfgs)]
    rows = [{"quantity": q, **{n: f(c) for n, c in zip(names, cfgs)}} for q, f in quantities]
    return Table(rows, formats={n: _value for n in names}, title="Models side by side")


@checks(tokens="size", n_chips="count", mfu="fraction", usd_per_chip_hour="nonneg")
def run_table(model: Model = "llama3-70b", tokens: float = 15e12, n_chips: int = 8960, chip: str | Chip = "v5p",
              mfu: float = 0.4, usd_per_chip_hour: float = 0.0) -> Table:
    """Return what a training run costs: FLOPs per token (6 × matmul parameters), total FLOPs for `tokens`, the
    time on one chip at peak, the time on `n_chips` at `mfu` of peak, chip-hours, and dollars at your price
    (`usd_per_chip_hour`; 0 leaves the cost out). Raw values are in SI units (seconds, FLOPs)."""
    cfg, c = get_model(model), get_chip(chip)
    per_token = cfg.flops_per_token()
    total = per_token * tokens
    count = f"{tokens:.3g} token{'' if tokens == 1 else 's'}"
    wall = total / (n_chips * c.peak_flops() * mfu)
    rows = [
        {"quantity": "parameters", "value": cfg.param_count(), "shown": _count(cfg.param_count())},
        {"quantity": "training FLOPs per token", "value": per_token, "shown": fmt_flops(per_token)},
        {"quantity": f"training FLOPs for {count}", "value": total, "shown": fmt_flops(total)},
        {"quantity": f"one {c.name} at peak", "value": total / c.peak_flops(),
         "shown": fmt_time(total / c.peak_flops())},
        {"quantity": f"{n_chips} × {c.name} at {mfu:.0%} MFU", "value": wall, "shown": fmt_time(wall)},
        {"quantity": "chip-hours", "value": n_chips * wall / 3600, "shown": _count(n_chips * wall / 3600)},
    ]
    if usd_per_chip_hour > 0:
        cost = usd_per_chip_hour * n_chips * wall / 3600
        rows.append({"quantity": f"cost at ${usd_per_chip_hour:g} per chip-hour", "value": cost,
                     "shown": f"${_count(cost)}"})
    title = f"Training {cfg.name or 'the model'} on {count}"
    return Table(rows, columns=["quantity", "shown"], title=title)


@checks(n_chips="count", batch_tokens="size", seq_len="count")
def batch_bounds(model: Model = "llama3-70b", chip: str | Chip = "v5p", n_chips: int = 8960,
                 batch_tokens: float = 4 * 2**20, seq_len: int = 4096) -> Table:
    """Return the ch. 5-6 checks of a batch on a set of chips, each with what it needs, what the batch has, and
    whether it passes: sequences for sequence-free data parallelism, tokens per chip for FSDP over all torus axes
    and for FSDP + TP (M_X = axes - 1, M_Y = 1), the TP width limit, X_opt, and the batch per slice over DCN."""
    cfg, c = get_model(model), get_chip(chip)
    if batch_tokens < seq_len or seq_len <= 0:
        raise ValueError(f"batch_tokens={batch_tokens!r} must hold at least one sequence of seq_len={seq_len!r}")
    axes = len(c.max_slice or (0, 0))
    pod = math.prod(c.max_slice or (n_chips,))
    slices = max(1, math.ceil(n_chips / pod))
    per_chip, sequences = batch_tokens / n_chips, batch_tokens / seq_len
    fsdp = min_tokens_per_chip("fsdp", c, M_X=axes)
    mixed = min_tokens_per_chip("fsdp_tp", c, F=cfg.F, M_X=max(1, axes - 1))
    y_max = tp_limit(cfg.F, c)
    rows = [
        {"check": "pure data parallelism, no sequence sharding", "needs": f"chips ≤ sequences ({sequences:.0f})",
         "has": f"{n_chips} chips", "passes": n_chips <= sequences},
        {"check": f"FSDP over {axes} axes", "needs": f"> {fsdp:.0f} tokens/chip", "has": f"{per_chip:.0f}",
         "passes": per_chip > fsdp},
        {"check": "FSDP + TP at the best split", "needs": f"> {mixed:.0f} tokens/chip", "has": f"{per_chip:.0f}",
         "passes": per_chip > mixed},
        {"check": "TP on one axis", "needs": f"Y < F·W/C = {y_max:.1f}", "has": "—", "passes": "—"},
        {"check": "best FSDP degree X_opt", "needs": "—",
         "has": f"{x_opt(batch_tokens / slices, cfg.F, n_chips // slices, M_X=max(1, axes - 1)):.0f}",
         "passes": "—"},
    ]
    if slices > 1:
        dcn = min_tokens_per_chip("dcn", c)
        rows.append({"check": f"data parallelism over DCN ({slices} slices)", "needs": f"> {dcn:,.0f} tokens/slice",
                     "has": f"{batch_tokens / slices:,.0f}", "passes": batch_tokens / slices > dcn})
    return Table(rows, formats={"passes": lambda v: v if isinstance(v, str) else "yes" if v else "no"},
                 title=f"{cfg.name}: {batch_tokens:.3g} tokens on {n_chips} × {c.name}")


def _model_menu(model: str) -> list[str]:
    key = next((n for n in model_names() if get_model(n) == get_model(model)), None)
    if key is None:
        raise KeyError(f"model={model!r} is not a preset; presets: {model_names()}")
    return opening_on([n for n in model_names() if not get_model(n).is_moe], key)


def _chip_menu(chip: str) -> list[str]:
    key = next((n for n in TRAINING_CHIPS if get_chip(n) is get_chip(chip)), None)
    if key is None:
        raise KeyError(f"chip={chip!r} is not among the training chips {list(TRAINING_CHIPS)}")
    return opening_on(TRAINING_CHIPS, key)


_CHIP_COUNTS = (256, 1024, 2048, 4096, 8192, 8960, 17920, 35840, 71680, 143360)
_BATCHES = tuple(2**k for k in range(16, 27))  # tokens per step for the planner: 64Ki ... 64Mi


@checks(tokens="size", n_chips="count", mfu="fraction", usd_per_chip_hour="nonneg")
def run_explorer(model: str = "llama3-70b", tokens: float = 15e12, n_chips: int = 8960, chip: str = "v5p",
                 mfu: float = 0.4, usd_per_chip_hour: float = 0.0) -> Explorer:
    """Return an explorer of a training run's FLOPs, duration and chip-hours (opens on the book's 44-day run)."""
    return explore(lambda model, tokens, n_chips, chip, mfu, usd_per_chip_hour:
                   run_table(model, tokens, int(n_chips), chip, mfu, usd_per_chip_hour),
                   title="What a training run costs", model=_model_menu(model), tokens=Log(1, 1e14, tokens),
                   n_chips=opening_on((1, *_CHIP_COUNTS), n_chips), chip=_chip_menu(chip), mfu=(0.05, 1.0, 0.05, mfu),
                   usd_per_chip_hour=(0.0, 10.0, 0.25, usd_per_chip_hour))


@checks(n_chips="count", batch_tokens="size", seq_len="count")
def bounds_explorer(model: str = "llama3-70b", chip: str = "v5p", n_chips: int = 8960,
                    batch_tokens: float = 4 * 2**20, seq_len: int = 4096) -> Explorer:
    """Return an explorer of the batch bounds a layout must meet (opens on the book's 4M tokens on a v5p pod)."""
    return explore(lambda model, chip, n_chips, batch_tokens, seq_len:
                   batch_bounds(model, chip, int(n_chips), batch_tokens, int(seq_len)),
                   title="Which parallelism can stay compute-bound?", model=_model_menu(model),
                   chip=_chip_menu(chip), n_chips=opening_on(_CHIP_COUNTS, n_chips),
                   batch_tokens=Log(2**16, 2**26, batch_tokens), seq_len=opening_on((2048, 4096, 8192, 16384), seq_len))


@checks(n_chips="count", batch_tokens="size", seq_len="count", sequence_sharding="flag")
def plan_explorer(model: str = "llama3-70b", chip: str = "v5p", n_chips: int = 8960, batch_tokens: float = 4 * 2**20,
                  seq_len: int = 4096, sequence_sharding: bool = True) -> Explorer:
    """Return an explorer of `training.plan`: the chosen layout and every candidate with why it lost.

    The batch is a menu of powers of two (64Ki to 64Mi tokens), not a slider: the planner needs a whole number of
    sequences that splits evenly over its data-parallel replicas, which a log slider's values almost never are.
    """
    return explore(lambda model, chip, n_chips, batch_tokens, seq_len, sequence_sharding:
                   plan(model, chip, int(n_chips), batch_tokens, int(seq_len), sequence_sharding=sequence_sharding),
                   title="The planner's layouts", unfit=("no layout of", "does not split evenly"),
                   model=_model_menu(model), chip=_chip_menu(chip),
                   n_chips=opening_on(_CHIP_COUNTS, n_chips), batch_tokens=opening_on(_BATCHES, batch_tokens),
                   seq_len=opening_on((2048, 4096, 8192, 16384), seq_len),
                   sequence_sharding=opening_on((True, False), sequence_sharding))
