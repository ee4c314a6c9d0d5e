"""Roofline figures: a chip's roofline with points on it, matmul throughput against batch, measured sweeps."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..estimate import Estimate
from ..hardware.chips import Chip, get_chip
from ..kinds import has, positive_range
from ..roofline import achievable_flops, matmul
from ..units import checks, fmt_rate, is_a, sequence_of
from .base import figure, finish

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..lab.bench import Sweep

__all__ = ["roofline", "batch_roofline", "sweep", "human_ticks", "legend_outside", "label_apart"]

Point = Estimate | tuple[float, float]


def _as_chips(chips: Chip | str | Sequence[Chip | str]) -> list[Chip]:
    if isinstance(chips, (Chip, str)):
        chips = [chips]
    return [get_chip(c) for c in chips]


def _point_xy(point: Point) -> tuple[float, float]:
    if isinstance(point, Estimate):
        return point.intensity, point.achieved_flops
    x, y = point
    return float(x), float(y)


@checks(chips=is_a(str, Chip, list, tuple), dtype="dtype", bandwidth="?size", shade="flag",
        intensity=positive_range)
def roofline(
    chips: Chip | str | Sequence[Chip | str],
    dtype: str = "bf16",
    points: Mapping[str, Point] | None = None,
    bandwidth: float | None = None,
    intensity: tuple[float, float] = (0.1, 1e5),
    title: str | None = None,
    shade: bool = True,
) -> Figure:
    """Draw the log-log roofline of one or more chips: reachable FLOP/s against FLOPs per byte.

    `points` maps a label to an `Estimate` (drawn at its intensity and achieved FLOP/s) or to an
    (intensity, FLOP/s) pair. With `shade`, the first chip's memory-bound region (left of its knee) is
    tinted red and the compute-bound region green.
    """
    import numpy as np  # for drawing, beside matplotlib: the calculations here need no NumPy

    chips = _as_chips(chips)
    lo, hi = positive_range("intensity", intensity)
    fig, ax = figure((9.0, 4.5))
    x = np.geomspace(lo, hi, 400)
    for chip in chips:
        y = achievable_flops(x, chip, dtype, bandwidth)
        knee = chip.critical_intensity(dtype, bandwidth)
        (line,) = ax.loglog(x, y, lw=2, label=f"{chip.name} ({dtype}); knee at {knee:.0f} FLOPs/B")
        ax.axvline(knee, color=line.get_color(), ls=":", lw=1)
    if shade:
        knee = chips[0].critical_intensity(dtype, bandwidth)
        ax.axvspan(lo, knee, color="tab:red", alpha=0.07, label="bandwidth-bound")
        ax.axvspan(knee, hi, color="tab:green", alpha=0.07, label="compute-bound")
    for label, point in (points or {}).items():
        px, py = _point_xy(point)
        ax.plot(px, py, "o", ms=7, label=label)
    ax.set_xlim(lo, hi)
    tops = [c.peak_flops(dtype) for c in chips] + [_point_xy(p)[1] for p in (points or {}).values()]
    bottoms = [float(achievable_flops(lo, c, dtype, bandwidth)) for c in chips]
    ax.set_ylim(min(bottoms) / 3, max(tops) * 3)  # room above the roof, so no marker sits on the frame
    finish(ax, "arithmetic intensity (FLOPs per byte)", "attainable FLOP/s",
           title or "Roofline: " + ", ".join(c.name for c in chips))
    human_ticks(ax)
    legend_outside(ax)
    return fig


def human_ticks(ax: Any, fmt: Callable[[float], str] = fmt_rate, axis: str = "y") -> None:
    """Label an axis in human units with `fmt` (197 TFLOP/s, 10 µs, 4 MB), not as powers of ten or an offset."""
    from matplotlib.ticker import FuncFormatter

    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(FuncFormatter(lambda v, _: fmt(v) if v else "0"))


def legend_outside(ax: Any) -> None:
    """Move the legend to the right of the axes, where it cannot cover a curve or a point."""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


@checks(batches="counts", shapes=sequence_of("counts", "(D, F) pairs"))
def batch_roofline(
    chip: Chip | str,
    shapes: Sequence[tuple[int, int]],
    batches: Sequence[int] = range(1, 512),
    title: str | None = None,
    **matmul_kwargs: Any,
) -> Figure:
    """Plot the FLOP/s a matmul X[B,D] @ W[D,F] can reach against the batch B, one curve per (D, F).

    `matmul_kwargs` go to `roofline.matmul` (e.g. `weight_dtype="int8"`), so the curves use the exact
    byte count, not the B << D approximation. The dashed line is the chip's peak.
    """
    import numpy as np  # for drawing, beside matplotlib: the calculations here need no NumPy

    chip = get_chip(chip)
    batches = np.asarray(list(batches))
    if batches.size == 0 or batches.min() < 1:
        raise ValueError("batches must be a non-empty sequence of positive integers")
    fig, ax = figure()
    peak = None
    for D, F in shapes:
        ests = [matmul(int(B), D, F, chip, **matmul_kwargs) for B in batches]
        ax.plot(batches, [e.achieved_flops for e in ests], lw=2, label=f"D = F = {D}" if D == F else f"D={D}, F={F}")
        peak = ests[0].flops / ests[0].t_math
    ax.axhline(peak, color="k", ls="--", lw=1, label=f"peak {fmt_rate(peak)}")
    ax.set_ylim(0, peak * 1.12)
    finish(ax, "batch B (tokens)", "attainable FLOP/s", title or f"Matmul throughput against batch on {chip.name}")
    human_ticks(ax)
    return fig


@checks(result=has("table", "chip", "dtype", what="a bench.Sweep (bench.matmul_sweep)"))
def sweep(result: Sweep, title: str | None = None) -> Figure:
    """Plot a measured matmul sweep as points on the roofline of the chip it was predicted with."""
    intensities = result.table.column("intensity")
    measured = result.table.column("measured FLOP/s")
    fig = roofline(result.chip, result.dtype, intensity=(min(intensities) / 3, max(intensities) * 3),
                   title=title or f"Matmuls timed on {result.chip.name}, {result.dtype}")
    ax = fig.axes[0]
    bottom, top = ax.get_ylim()
    ax.set_ylim(min(bottom, min(measured) / 3), max(top, max(measured) * 3))
    ax.plot(intensities, measured, "o", color="tab:orange", ms=6, label="timed matmuls")
    legend_outside(ax)
    label_apart(ax, [(x, y, f"B={B}") for x, y, B in zip(intensities, measured, result.table.column("B"))])
    return fig


# Where a point's label may go, in points from the point: below right first, then above, then further out.
_LABEL_SPOTS = ((4, -11, "left"), (4, 4, "left"), (-4, -11, "right"), (-4, 4, "right"), (0, -20, "center"),
                (0, 12, "center"), (0, -29, "center"), (0, 21, "center"))


def label_apart(ax: Any, points: Sequence[tuple[float, float, str]], fontsize: float = 8.0) -> None:
    """Label each (x, y, text) point of `ax` in the first of `_LABEL_SPOTS` where its text overlaps no label placed
    before it (the last spot when none is free): points bunched on a roof keep their labels apart."""
    ax.figure.draw_without_rendering()  # the layout settles, so a label's box measures where it will be drawn
    placed: list[Any] = []
    for x, y, text in points:
        for dx, dy, ha in _LABEL_SPOTS:
            note = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, fontsize=fontsize)
            box = note.get_window_extent()
            if not any(box.overlaps(other) for other in placed) or (dx, dy, ha) == _LABEL_SPOTS[-1]:
                placed.append(box)
                break
            note.remove()
