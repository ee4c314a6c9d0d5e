"""Measured collectives beside the model: the book's Appendix B curves, read off its plots, against `collectives`.

How To Scale Your Model shows three measured bandwidth-against-size curves only as pictures (ch. 12, Appendix B):
an AllReduce along one axis of a TPU v5p 4x4x4, an AllGather along one axis of a TPU v5e 8x16, and an AllGather on
an 8 x H100 node. `data/collective_curves.toml` holds their points as read off the published plots (the file says
how), each a message size V (bytes) and a bandwidth V / time (bytes/s). Here each curve gives its system (a
`TpuMesh` or `GpuCluster`), its measured times, and the package's model of the same collective on the same system,
ideal (the book's bound) or calibrated (link efficiency and per-call latency), so a chapter can set them side by
side. Nothing here is fitted to these points.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from .collectives import collective
from .data import load
from .hardware.chips import Efficiency
from .hardware.gpu import GpuCluster
from .hardware.topology import TpuMesh
from .tables import Table
from .units import check_choice, check_fields, fmt_bytes, fmt_rate

__all__ = ["Curve", "curves", "curve", "model_bandwidth", "ring_bound", "comparison"]


@dataclass(frozen=True)
class Curve:
    """One published curve: what was measured (`kind` over `axis` of a `chip` mesh of `shape`, or on `gpus` GPUs of
    one node), its points (`sizes` in bytes, `bandwidth` = V / time in bytes/s, read off the plot), the plot's second
    series (`derived`, at `derived_sizes`: bandwidth x `derived_factor`), the plot's `claimed` line (bytes/s), the
    y axis's `resolution` (bytes/s per pixel), and its `figure`, `caption` and `source`."""

    key: str
    title: str
    chip: str
    kind: str
    sizes: tuple[float, ...]
    bandwidth: tuple[float, ...]
    derived_label: str
    derived_factor: float
    derived_sizes: tuple[float, ...]
    derived: tuple[float, ...]
    claimed: float
    resolution: float
    figure: str
    caption: str
    source: str
    shape: tuple[int, ...] = ()
    axis: str | None = None
    gpus: int = 0

    def __post_init__(self) -> None:
        check_fields(self, key="text", title="text", chip="text", kind=("all_gather", "all_reduce"),
                     derived_factor="fraction", claimed="size", resolution="size", gpus="count0")
        if len(self.sizes) != len(self.bandwidth) or len(self.derived_sizes) != len(self.derived):
            counts = (len(self.sizes), len(self.bandwidth), len(self.derived_sizes), len(self.derived))
            raise ValueError(f"curve {self.key!r}: each size needs one bandwidth; sizes, bandwidth, derived sizes "
                             f"and derived have {counts} entries")

    @property
    def system(self) -> TpuMesh | GpuCluster:
        """The measured system: the TPU slice of `shape`, or a node of `gpus` GPUs."""
        return GpuCluster(self.chip, gpus=self.gpus) if self.gpus else TpuMesh(self.chip, *self.shape)

    @property
    def times(self) -> tuple[float, ...]:
        """The measured time of each point (s): V / bandwidth."""
        return tuple(v / bw for v, bw in zip(self.sizes, self.bandwidth))


@cache
def curves() -> dict[str, Curve]:
    """Return the published curves by key, as `data/collective_curves.toml` lists them."""
    data = load("data/collective_curves.toml")
    out = {}
    for key, row in data["curves"].items():
        row = dict(row)
        sizes = tuple(2.0 ** p for p in row.pop("log2_bytes"))
        derived_sizes = tuple(2.0 ** p for p in row.pop("derived_log2_bytes"))
        out[key] = Curve(key=key, sizes=sizes, derived_sizes=derived_sizes, bandwidth=tuple(row.pop("bandwidth")),
                         derived=tuple(row.pop("derived")), shape=tuple(row.pop("shape", ())),
                         source=data["sources"][row.pop("source")], **row)
    return out


def curve(key: str) -> Curve:
    """Return one published curve: 'v5p_all_reduce', 'v5e_all_gather' or 'h100_all_gather'."""
    return curves()[check_choice("key", key, tuple(curves()))]


def model_bandwidth(c: Curve, nbytes: float, efficiency: str | Efficiency = "ideal") -> float:
    """Return the package's bandwidth V / time (bytes/s) for curve `c`'s collective on its system at `nbytes`
    bytes: 'ideal' is the book's bound, 'calibrated' adds the chip's link efficiency and per-call latency."""
    axes = c.axis if isinstance(c.system, TpuMesh) else None
    return nbytes / collective(c.kind, c.system, axes, nbytes, efficiency=efficiency).time


def ring_bound(c: Curve, nbytes: float) -> float:
    """Return the exact ring's bound on curve `c`'s bandwidth V / time (bytes/s) at `nbytes`: on a TPU axis of X
    chips the model's bandwidth term moves all of V (the book's form) where a ring moves (X - 1)/X of it, so the
    bound is the ideal model's x X/(X - 1); a GPU node's model already counts (N - 1)/N, so it is the ideal model's."""
    system = c.system
    X = system.axes[c.axis] if isinstance(system, TpuMesh) else 1
    return model_bandwidth(c, nbytes) * (X / (X - 1) if X > 1 else 1.0)


def comparison(c: Curve) -> Table:
    """Return curve `c` point by point: V, the bandwidth read off the plot, the ideal and calibrated model's, and
    the measured share of the calibrated one."""
    rows = [{"V": v, "published (read off)": bw, "model, ideal": model_bandwidth(c, v),
             "model, calibrated": model_bandwidth(c, v, "calibrated"),
             "published / calibrated": bw / model_bandwidth(c, v, "calibrated")}
            for v, bw in zip(c.sizes, c.bandwidth)]
    rate = lambda value: fmt_rate(value, "B/s")  # noqa: E731
    return Table(rows, formats={"V": fmt_bytes, "published (read off)": rate, "model, ideal": rate,
                                "model, calibrated": rate, "published / calibrated": "{:.2f}".format},
                 title=f"{c.title}: the book's measurement against the model")
