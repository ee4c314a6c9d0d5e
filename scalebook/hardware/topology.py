"""TPU slices: a `TpuMesh` is a box of chips on a 2-D or 3-D torus, with named axes X, Y, Z.

Wraparound links (the torus edge joining the last chip of an axis back to the first) are what make an axis
a full ring, and they halve the worst-case distance. Whether an axis has them depends on the chip family
(How To Scale Your Model, ch. 2):

- v5e, v6e (and v2, v3): a 2-D pod; an axis wraps only when it spans the whole pod (16 on v5e/v6e).
- v4p, v5p, TPU7x: 3-D slices built from 4x4x4 cubes joined by optical switches, which supply the
  wraparound; a slice made of whole cubes wraps on every axis, a smaller slice (e.g. 2x2x4) on none.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from ..estimate import Estimate
from ..units import check_int, check_kind, fmt_bytes, fmt_rate
from .chips import Chip, get_chip

__all__ = ["TpuMesh", "CUBE", "HOP_LATENCY"]

CUBE = 4  # edge of the v4p/v5p/TPU7x building block (4x4x4 chips)
HOP_LATENCY = 1e-6  # seconds per ICI hop, the book's working figure
_CUBE_FAMILIES = {"TPU v4p", "TPU v5p", "TPU7x"}
AXIS_NAMES = ("X", "Y", "Z")


def _default_wrap(chip: Chip, sizes: Sequence[int]) -> list[bool]:
    """Which axes of a slice of `chip` with these sizes have wraparound links, by the family's rules."""
    if chip.name in _CUBE_FAMILIES:
        whole_cubes = all(s % CUBE == 0 for s in sizes)
        return [whole_cubes and s >= CUBE for s in sizes]
    full = max(chip.max_slice or (0,))
    return [s == full for s in sizes]


class TpuMesh:
    """A slice of TPU chips with named torus axes, e.g. `TpuMesh("v5p", X=4, Y=4, Z=4)`.

    Args:
        chip: a `Chip` or chip name (a TPU).
        X, Y, Z: axis sizes in chips (Z only on 3-D families). Axes of size 1 are kept, so specs may name them.
        wrap: override the family's wraparound rule: True/False for every axis, or {"X": True, ...}.
        hop_latency: seconds per ICI hop (default 1 µs).
    """

    def __init__(self, chip: Chip | str, X: int = 1, Y: int = 1, Z: int | None = None,
                 wrap: bool | Mapping[str, bool] | None = None, hop_latency: float = HOP_LATENCY) -> None:
        self.chip = get_chip(chip)
        if self.chip.kind != "tpu":
            raise ValueError(f"chip={self.chip.name!r} is not a TPU; a GPU cluster is a GpuCluster, not a TpuMesh")
        sizes = {"X": X, "Y": Y} if Z is None else {"X": X, "Y": Y, "Z": Z}
        sizes = {name: check_int(name, size) for name, size in sizes.items()}
        self._check_shape(sizes)
        self.axes: dict[str, int] = sizes
        default = dict(zip(sizes, _default_wrap(self.chip, list(sizes.values()))))
        if isinstance(wrap, Mapping):
            unknown = set(wrap) - set(sizes)
            if unknown:
                raise ValueError(f"wrap names unknown axes {sorted(unknown)}; axes: {list(sizes)}")
            default.update({k: check_kind(f"wrap[{k!r}]", v, "flag") for k, v in wrap.items()})
        elif wrap is not None:
            default = dict.fromkeys(sizes, check_kind("wrap", wrap, "flag"))
        self.wrap: dict[str, bool] = {k: default[k] and sizes[k] > 2 for k in sizes}
        self.hop_latency = float(check_kind("hop_latency", hop_latency, "nonneg"))

    def _check_shape(self, sizes: Mapping[str, int]) -> None:
        limit = self.chip.max_slice
        if limit is None:
            return
        if len(sizes) > len(limit) and sizes.get("Z", 1) > 1:
            raise ValueError(f"{self.chip.name} slices are {len(limit)}-D (at most {'x'.join(map(str, limit))}); "
                             f"got a 3-D shape {self.shape_str(sizes)}")
        used = sorted((s for s in sizes.values() if s > 1), reverse=True)
        cap = sorted(limit, reverse=True)
        if len(used) > len(cap) or any(s > c for s, c in zip(used, cap)):
            raise ValueError(f"a {self.shape_str(sizes)} slice does not fit a {self.chip.name} pod "
                             f"(at most {'x'.join(map(str, limit))})")

    @staticmethod
    def shape_str(sizes: Mapping[str, int]) -> str:
        """Return a slice shape such as '4x4x4' from {axis: size in chips}."""
        if not isinstance(sizes, Mapping):
            raise ValueError(f"sizes={sizes!r} must map axis names to sizes, e.g. {{'X': 4, 'Y': 4}}")
        return "x".join(str(check_int(f"sizes[{name!r}]", s)) for name, s in sizes.items())

    # --- size -------------------------------------------------------------------------------------------------

    @property
    def n_chips(self) -> int:
        """Number of chips in the slice."""
        return math.prod(self.axes.values())

    @property
    def cores(self) -> int:
        """Number of TensorCores in the slice."""
        return self.n_chips * (self.chip.cores or 1)

    @property
    def hosts(self) -> int:
        """Number of host machines (each drives one tray of `chip.host_shape` chips)."""
        per_host = math.prod(self.chip.host_shape or (1,))
        return max(1, math.ceil(self.n_chips / per_host))

    def total_flops(self, dtype: str = "bf16") -> float:
        """Peak FLOP/s of the whole slice."""
        return self.n_chips * self.chip.peak_flops(dtype)

    @property
    def total_hbm(self) -> float:
        """HBM bytes of the whole slice."""
        return self.n_chips * (self.chip.hbm_bytes or 0.0)

    # --- axes ---------------------------------------------------------------------------------------------------

    def resolve_axes(self, axes: str | Iterable[str] | None, name: str = "axes") -> tuple[str, ...]:
        """Normalise an axes argument: None = every axis, 'X', 'XY', ('X', 'Y') -> ('X', 'Y'). Errors call the
        argument `name`."""
        name = check_kind("name", name, "text")
        if axes is None:
            return tuple(self.axes)
        if not isinstance(axes, (str, Iterable)):
            raise ValueError(f"{name}={axes!r} must name axes of this mesh {list(self.axes)}, e.g. 'X' or 'XY'")
        names = tuple(axes) if not isinstance(axes, str) else tuple(axes.replace(",", "").replace(" ", ""))
        unknown = [a for a in names if a not in self.axes]
        if unknown or not names:
            raise ValueError(f"{name}={axes!r} must name axes of this mesh {list(self.axes)}")
        if len(set(names)) != len(names):
            raise ValueError(f"{name}={axes!r} names an axis twice")
        return names

    def size(self, axes: str | Iterable[str] | None = None) -> int:
        """Number of chips along `axes` (the product of their sizes)."""
        return math.prod(self.axes[a] for a in self.resolve_axes(axes))

    def ring_hops(self, axis: str) -> int:
        """Hops from one end of `axis` to the farthest chip: X/2 with wraparound, X-1 without."""
        if axis not in self.axes:
            raise ValueError(f"axis={axis!r} must be one axis of this mesh, one of {list(self.axes)}")
        n = self.axes[axis]
        return n // 2 if self.wrap[axis] else n - 1

    def _coordinates(self, point: Sequence[int], name: str = "point") -> tuple[int, ...]:
        """Return `point` as one whole coordinate per axis, each in [0, axis size); errors call it `name`."""
        if isinstance(point, (str, bytes)) or not isinstance(point, Sequence) or len(point) != len(self.axes):
            raise ValueError(f"{name}={point!r} must be {len(self.axes)} coordinates, one per axis {list(self.axes)}")
        out = []
        for i, (c, (axis, n)) in enumerate(zip(point, self.axes.items())):
            try:
                out.append(check_int(f"{name}[{i}]", c, 0, n - 1))
            except ValueError:
                raise ValueError(f"{name}[{i}]={c!r} must be a whole coordinate on axis {axis}, in [0, {n})") from None
        return tuple(out)

    def hops(self, src: Sequence[int], dst: Sequence[int]) -> int:
        """Number of ICI hops between two chips given by their coordinates (shortest path on the torus)."""
        src, dst = self._coordinates(src, "src"), self._coordinates(dst, "dst")
        total = 0
        for (name, n), a, b in zip(self.axes.items(), src, dst):
            d = abs(a - b)
            total += min(d, n - d) if self.wrap[name] else d
        return total

    @property
    def diameter(self) -> int:
        """The largest hop count between any two chips of the slice."""
        return sum(self.ring_hops(a) for a in self.axes)

    def transfer_time(self, nbytes: float, src: Sequence[int], dst: Sequence[int]):
        """Return the `Estimate` of sending `nbytes` from chip `src` to chip `dst`.

        Latency and bandwidth add: hops x hop_latency + nbytes / (links x one-way link bandwidth), where
        `links` is the number of axes the route moves along (one outgoing link per direction of travel).
        """
        nbytes = check_kind("nbytes", nbytes, "nonneg")
        src, dst = self._coordinates(src, "src"), self._coordinates(dst, "dst")
        hops = self.hops(src, dst)
        links = sum(1 for a, b in zip(src, dst) if a != b)
        W = self.chip.ici_bandwidth
        t_bw = nbytes / (links * W) if links else 0.0
        terms = (("hops", f"{hops} × {self.hop_latency * 1e6:g} µs"),
                 ("links used", f"{links} × {fmt_rate(W, 'B/s')} one-way"), ("payload", fmt_bytes(nbytes)))
        return Estimate(0.0, float(nbytes), 0.0, t_bw, channel="ICI", label=f"send {src} → {dst} on {self}",
                        terms=terms, t_latency=hops * self.hop_latency, latency_adds=True)

    def __repr__(self) -> str:
        wraps = "".join(a for a, w in self.wrap.items() if w) or "none"
        return f"TpuMesh({self.chip.name}, {self.shape_str(self.axes)}, wraparound: {wraps})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TpuMesh) and (self.chip, self.axes, self.wrap, self.hop_latency) == (
            other.chip, other.axes, other.wrap, other.hop_latency)

    __hash__ = None  # type: ignore[assignment]
