"""Ch. 5's training roofline as curves: each strategy's per-layer communication time against the global batch,
beside the compute time every strategy shares, and the FSDP + TP split of the chips nearest the book's X_opt.

The per-layer times are `book.layer_cost`'s; `plots.training.strategy_times` draws what `strategy_curves` returns
and the chapter's explorer draws the same curves as SVG.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..estimate import Estimate
from ..hardware.chips import Chip
from ..units import checks, geomspace
from .book import layer_cost, x_opt

__all__ = ["CURVE_STRATEGIES", "StrategyCurves", "best_split", "strategy_cost", "strategy_curves"]

CURVE_STRATEGIES = ("dp", "fsdp", "tp", "fsdp_tp")


@dataclass(frozen=True)
class StrategyCurves:
    """Per-layer times of each strategy over a range of global batches B (tokens), all on N chips.

    `t_math[i]` is the compute time at `batches[i]` (the same for every strategy); `t_comms[s][i]` the
    communication time of strategy s; `splits[i]` the (X, Y) that FSDP + TP uses there; `crossovers[s]` the
    batch where s stops being communication-bound (None when it never changes bound inside the range).
    """

    batches: list[float]
    t_math: list[float]
    t_comms: dict[str, list[float]]
    splits: list[tuple[int, int]]
    crossovers: dict[str, float | None]


def _divisors(n: int) -> list[int]:
    """The divisors of `n`, smallest first."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


@checks(B="size", D="size", F="size", N="count", M_X="count", M_Y="count")
def best_split(B: float, D: float, F: float, chip: Chip | str, N: int, M_X: int = 1,
               M_Y: int = 1) -> tuple[Estimate, int, int]:
    """Return (the FSDP + TP layer `Estimate`, X, Y) at the divisor of N nearest X_opt = sqrt((B/F)(M_X/M_Y)N).

    The two divisors either side of X_opt are tried and the one with less communication kept.
    """
    target = x_opt(B, F, N, M_X, M_Y)
    divisors = _divisors(N)
    below = max((d for d in divisors if d <= target), default=1)
    above = min((d for d in divisors if d >= target), default=N)
    options = [(layer_cost("fsdp_tp", B, D, F, chip, X=X, Y=N // X, M_X=M_X, M_Y=M_Y), X, N // X)
               for X in {below, above}]
    return min(options, key=lambda o: (o[0].t_comms, o[1]))


@checks(B="size", D="size", F="size", N="count", M_X="count", M_Y="count")
def strategy_cost(strategy: str, B: float, D: float, F: float, chip: Chip | str, N: int, M_X: int = 1,
                  M_Y: int = 1) -> tuple[Estimate, int, int]:
    """Return (the layer `Estimate`, X, Y) of `strategy` on N chips: DP, FSDP and TP use every chip over all
    M_X + M_Y mesh axes; FSDP + TP splits N = X·Y near X_opt (`best_split`)."""
    if strategy == "fsdp_tp":
        return best_split(B, D, F, chip, N, M_X, M_Y)
    if strategy == "tp":
        return layer_cost("tp", B, D, F, chip, Y=N, M_Y=M_X + M_Y), 1, N
    return layer_cost(strategy, B, D, F, chip, X=N, M_X=M_X + M_Y), N, 1


def _crossover(batches: Sequence[float], t_math: Sequence[float], t_comms: Sequence[float]) -> float | None:
    """Batch where t_math overtakes t_comms, interpolated on log axes; None if it never happens in the range."""
    for i in range(1, len(batches)):
        if t_math[i - 1] < t_comms[i - 1] and t_math[i] >= t_comms[i]:
            lo = math.log(t_comms[i - 1] / t_math[i - 1])
            hi = math.log(t_comms[i] / t_math[i])
            f = lo / (lo - hi)
            return math.exp(math.log(batches[i - 1]) + f * math.log(batches[i] / batches[i - 1]))
    return None


@checks(N="count", D="size", F="size", M_X="count", M_Y="count", batches="?sizes")
def strategy_curves(chip: Chip | str = "v5p", N: int = 4096, D: float = 8192, F: float = 32768, M_X: int = 2,
                    M_Y: int = 1, batches: Sequence[float] | None = None) -> StrategyCurves:
    """Return every strategy's per-layer times against the global batch (ch. 5's training roofline).

    DP, FSDP and TP use all N chips over all M_X + M_Y mesh axes; FSDP + TP puts X (over M_X axes) times
    Y (over M_Y axes) = N, with X the divisor of N nearest X_opt at each batch.
    """
    bs = list(batches) if batches is not None else geomspace(1e4, 1e8, 81)
    if not bs:
        raise ValueError(f"batches={batches!r} must list at least one batch (tokens)")
    t_comms: dict[str, list[float]] = {s: [] for s in CURVE_STRATEGIES}
    t_math, splits = [], []
    for B in bs:
        for strategy in CURVE_STRATEGIES:
            est, X, Y = strategy_cost(strategy, B, D, F, chip, N, M_X, M_Y)
            t_comms[strategy].append(est.t_comms)
        t_math.append(est.t_math)
        splits.append((X, Y))
    crossovers = {s: _crossover(bs, t_math, t) for s, t in t_comms.items()}
    return StrategyCurves(bs, t_math, t_comms, splits, crossovers)
