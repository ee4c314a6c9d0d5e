"""The value every roofline returns: two clocks side by side, and how they make a time.

An operation spends T_math = FLOPs / C on arithmetic and T_comms = bytes / W moving data (W: whatever the
bytes cross, HBM, an ICI link, PCIe …). With perfect overlap it takes max(T_math, T_comms), a lower bound;
with none, T_math + T_comms, an upper bound at most 2× the first. `Overlap` holds that rule, `Estimate` the
numbers; `StepEstimate` is an inference step's own account (weights, KV caches, FLOPs and collectives, which
overlap by another rule). None needs a chip, so every module can return one (`roofline` builds them from a
chip's specs).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from .units import check_fields, checks, fmt_bytes, fmt_flops, fmt_time

__all__ = ["Overlap", "Estimate", "combine", "StepEstimate", "feasibility"]

_MEMORY_CHANNELS = {"HBM", "VMEM", "SMEM", "DRAM", "memory"}


@checks(memory_per_chip="result", hbm_bytes="?size")
def feasibility(memory_per_chip: float, hbm_bytes: float | None) -> str:
    """Say plainly whether `memory_per_chip` bytes fit a chip's `hbm_bytes`: 'fits: 17.3 GB of 96 GB of HBM' or
    'does not fit: 140 GB > 16 GB of HBM' ('HBM size unknown' when the chip has no figure)."""
    if hbm_bytes is None:
        return f"{fmt_bytes(memory_per_chip)} per chip (HBM size unknown)"
    if memory_per_chip <= hbm_bytes:
        return f"fits: {fmt_bytes(memory_per_chip)} of {fmt_bytes(hbm_bytes)} of HBM"
    return f"does not fit: {fmt_bytes(memory_per_chip)} > {fmt_bytes(hbm_bytes)} of HBM"


class Overlap:
    """How two clocks make a time (mixin): `time` when the data movement overlaps the math, max(t_math,
    t_link), and `upper` when it does not, t_math + t_link. A class using it defines both in seconds."""

    @property
    def time(self) -> float:
        """Lower-bound time in seconds, assuming compute and data movement overlap perfectly."""
        return max(self.t_math, self.t_link)

    @property
    def upper(self) -> float:
        """Upper-bound time in seconds, assuming no overlap at all."""
        return self.t_math + self.t_link


@dataclass(frozen=True)
class Estimate(Overlap):
    """A roofline estimate. FLOPs and bytes are counts; times are in seconds.

    `t_comms` is the bandwidth time (bytes / W). Links also have a latency floor `t_latency` (hops x
    ~1 µs): a collective takes the larger of the two (`latency_adds=False`, the book's model), a
    point-to-point send pays both (`latency_adds=True`); `t_link` is the result. `time` is the
    overlapped (lower-bound) time max(t_math, t_link); `upper` is the serial time t_math + t_link.
    `terms` lists how each number was obtained, for display.
    """

    flops: float
    bytes: float
    t_math: float
    t_comms: float
    channel: str = "HBM"
    label: str = ""
    terms: tuple[tuple[str, str], ...] = ()
    t_latency: float = 0.0
    latency_adds: bool = False

    def __post_init__(self) -> None:
        # Every count and clock is finite and ≥ 0: a NaN, inf or negative one here is a bug upstream, caught here.
        check_fields(self, flops="result", bytes="result", t_math="result", t_comms="result", t_latency="result",
                     channel="text", label="text", latency_adds="flag")

    @property
    def t_link(self) -> float:
        """Time the data movement takes, latency included, in seconds."""
        if self.latency_adds:
            return self.t_comms + self.t_latency
        return max(self.t_comms, self.t_latency)

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in FLOPs per byte moved (inf when nothing moves)."""
        return self.flops / self.bytes if self.bytes else float("inf")

    @property
    def bound(self) -> str:
        """'compute' when the math clock is the longer one; else 'latency' when hop latency outweighs the
        bandwidth time, else 'memory' (HBM/VMEM) or 'comms' (links)."""
        if self.t_math >= self.t_link:
            return "compute"
        if self.t_latency > self.t_comms:
            return "latency"
        return "memory" if self.channel in _MEMORY_CHANNELS else "comms"

    @property
    def achieved_flops(self) -> float:
        """FLOP/s actually delivered at the lower-bound time."""
        return self.flops / self.time if self.time else 0.0

    def __add__(self, other: Estimate) -> Estimate:
        """Run two operations one after the other: counts and both clocks add."""
        if not isinstance(other, Estimate):
            return NotImplemented
        return Estimate(
            self.flops + other.flops, self.bytes + other.bytes, self.t_math + other.t_math,
            self.t_link + other.t_link, self.channel if self.channel == other.channel else "mixed",
            " + ".join(x for x in (self.label, other.label) if x),
        )

    def summary(self) -> dict[str, str]:
        """Return the headline numbers formatted for people."""
        rows = {
            "FLOPs": fmt_flops(self.flops),
            f"bytes ({self.channel})": fmt_bytes(self.bytes),
            "intensity": f"{self.intensity:.3g} FLOPs/B",
            "T_math": fmt_time(self.t_math),
            "T_comms": fmt_time(self.t_comms),
        }
        if self.t_latency:
            rows["T_latency"] = fmt_time(self.t_latency) + (" (adds)" if self.latency_adds else " (floor)")
        rows.update({"time (max)": fmt_time(self.time), "upper (sum)": fmt_time(self.upper), "bound": self.bound})
        return rows

    def __str__(self) -> str:
        head = f"{self.label}: " if self.label else ""
        s = self.summary()
        latency = f", T_latency {fmt_time(self.t_latency)}" if self.t_latency else ""
        return (
            f"{head}{s['time (max)']} ({self.bound}-bound; T_math {s['T_math']}, "
            f"T_comms {s['T_comms']}{latency}, intensity {s['intensity']})"
        )

    def _repr_html_(self) -> str:
        rows = list(self.summary().items()) + list(self.terms)
        body = "".join(
            f"<tr><td style='text-align:left'>{html.escape(k)}</td>"
            f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
            for k, v in rows
        )
        title = f"<caption>{html.escape(self.label)}</caption>" if self.label else ""
        return f"<table>{title}<tbody>{body}</tbody></table>"


@checks(t_math="result", t_bytes="result", overlap="?exponent")
def combine(t_math: float, t_bytes: float, overlap: float | None = None) -> float:
    """Seconds of a kernel that does `t_math` seconds of arithmetic and `t_bytes` seconds of memory traffic: the
    p-norm (t_math^p + t_bytes^p)^(1/p) with p = `overlap` >= 1 (None: the roofline's max, perfect overlap and a
    bound; 1: their sum, no overlap)."""
    top = max(t_math, t_bytes)
    if overlap is None or not (t_math and t_bytes):
        return top
    return top * ((t_math / top) ** overlap + (t_bytes / top) ** overlap) ** (1 / overlap)


_STEP_TERMS = ("flops", "bytes", "t_math", "t_comms", "t_params", "t_kv", "t_ici", "t_elementwise", "t_fixed")


@dataclass(frozen=True)
class StepEstimate:
    """A decode (or prefill) step: `t_params` (weights from HBM), `t_kv` (KV caches from HBM), `t_math` (FLOPs),
    `t_ici` (model-parallel collectives over `network`: 'ICI' on TPUs, 'NVLink' or 'network' on GPUs) and,
    calibrated, `t_elementwise` (norms, residual adds, rotary and the activation function between the matmuls,
    through HBM) and `t_fixed` (the layers' fixed kernel costs), in seconds; `flops`, `bytes` (HBM) and `t_comms`
    (bytes / W) as an `Estimate` has them. `time` = max(t_kv + max(t_math, t_params), t_ici), or their sum
    t_kv + t_elementwise + t_fixed + max(t_math, t_params) + t_ici when `ici_adds` (calibrated: the collectives
    and the elementwise kernels are serial). The weight reads and the arithmetic they feed combine by `combine`
    with exponent `overlap`: None, the max, is the bound and every chip's calibrated value (`Efficiency.overlap`).
    Its own type,
    not an `Estimate`: its time is not max(T_math, T_comms).
    """

    flops: float
    bytes: float
    t_math: float
    t_comms: float
    channel: str = "HBM"
    label: str = ""
    t_params: float = 0.0
    t_kv: float = 0.0
    t_ici: float = 0.0
    t_elementwise: float = 0.0
    t_fixed: float = 0.0
    batch: int = 1
    ici_adds: bool = False
    memory_per_chip: float = 0.0  # bytes each chip holds: its share of the weights and of the KV caches
    hbm_per_chip: float | None = None  # the chip's HBM bytes (None: unknown)
    network: str = "ICI"
    terms: tuple[tuple[str, str], ...] = ()
    overlap: float | None = None  # the exponent by which t_math and t_params combine (`combine`; None: the max)

    def __post_init__(self) -> None:
        check_fields(self, **dict.fromkeys(_STEP_TERMS, "result"), batch="count", ici_adds="flag",
                     memory_per_chip="result", hbm_per_chip="?size", channel="text", label="text", network="text",
                     overlap="?exponent")

    @property
    def fits(self) -> bool:
        """Whether the weights and KV caches fit the chips' HBM (True when the HBM size is unknown)."""
        return self.hbm_per_chip is None or self.memory_per_chip <= self.hbm_per_chip

    @property
    def time(self) -> float:
        """Seconds of the step (see the class)."""
        local = self.t_kv + self.t_elementwise + self.t_fixed + combine(self.t_math, self.t_params, self.overlap)
        return local + self.t_ici if self.ici_adds else max(local, self.t_ici)

    @property
    def upper(self) -> float:
        """Seconds if nothing overlapped: every term one after the other."""
        return self.t_kv + self.t_elementwise + self.t_fixed + self.t_math + self.t_params + self.t_ici

    @property
    def intensity(self) -> float:
        """FLOPs per byte read from HBM."""
        return self.flops / self.bytes if self.bytes else float("inf")

    @property
    def bound(self) -> str:
        """Which term sets the step: 'ici', 'kv' (cache reads), 'params' (weight reads) or 'compute'."""
        if self.t_ici >= self.t_kv + max(self.t_math, self.t_params) and not self.ici_adds:
            return "ici"
        if self.t_kv >= max(self.t_math, self.t_params):
            return "kv"
        return "compute" if self.t_math >= self.t_params else "params"

    @property
    def tokens_per_second(self) -> float:
        """Tokens generated per second by the whole batch (one per sequence per step)."""
        return self.batch / self.time

    def __add__(self, other: StepEstimate) -> StepEstimate:
        """Two steps of the same batch one after the other: every count and every term adds (the sum's `time` is at
        most the two times added, and equal to it when both steps are bound by the same terms); memory is the
        larger of the two."""
        if not isinstance(other, StepEstimate):
            return NotImplemented
        if (other.batch, other.ici_adds, other.hbm_per_chip, other.overlap) != \
                (self.batch, self.ici_adds, self.hbm_per_chip, self.overlap):
            raise ValueError(f"other: only steps of one batch on one system add; got batch {self.batch} and "
                             f"{other.batch}, ici_adds {self.ici_adds} and {other.ici_adds}, overlap {self.overlap} "
                             f"and {other.overlap}")
        sums = {name: getattr(self, name) + getattr(other, name) for name in _STEP_TERMS}
        return StepEstimate(**sums, channel=self.channel, label=" + ".join(x for x in (self.label, other.label) if x),
                            batch=self.batch, ici_adds=self.ici_adds, hbm_per_chip=self.hbm_per_chip,
                            overlap=self.overlap, memory_per_chip=max(self.memory_per_chip, other.memory_per_chip),
                            network=self.network if self.network == other.network else "mixed")

    def summary(self) -> dict[str, str]:
        """Return the headline numbers formatted for people; the collectives' row only when there are any."""
        rows = {"batch": str(self.batch), "weights from HBM": fmt_time(self.t_params),
                "KV caches from HBM": fmt_time(self.t_kv), "FLOPs": fmt_time(self.t_math)}
        if self.t_ici:
            rows[f"{self.network} collectives"] = fmt_time(self.t_ici)
        return {**rows, "step": fmt_time(self.time), "bound": self.bound, "tokens/s": f"{self.tokens_per_second:.4g}",
                "memory/chip": feasibility(self.memory_per_chip, self.hbm_per_chip)}

    def __str__(self) -> str:
        s = self.summary()
        head = f"{self.label}: " if self.label else ""
        head += "" if self.fits else f"{s['memory/chip']}; "
        ici = f", {self.network} {s[f'{self.network} collectives']}" if self.t_ici else ""
        return (f"{head}{s['step']} per step ({self.bound}-bound; weights {s['weights from HBM']}, "
                f"KV {s['KV caches from HBM']}, FLOPs {s['FLOPs']}{ici})")

    _repr_html_ = Estimate._repr_html_
