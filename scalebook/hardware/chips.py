"""Accelerator chips: the `Chip` spec record, the spec table (`chips.toml`) and forgiving look-ups."""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field
from functools import cache

from ..data import load
from ..tables import Table
from ..units import check_choice, check_fields, check_kind, checks, closest, fmt_bytes, fmt_rate, is_a, sequence_of
from .announced import chip_key, refusal

__all__ = ["Chip", "get_chip", "list_chips", "chip_names", "chip_for_device_kind", "FLOP_DTYPES", "Efficiency",
           "IDEAL", "EFFICIENCY_MODES", "VMEM_FACTOR", "mxus_per_core", "ladder_rows"]

VMEM_FACTOR = 22.0  # VMEM -> MXU bandwidth over HBM bandwidth (How To Scale Your Model, ch. 2)

# Which peak-FLOP/s field a compute dtype uses.
FLOP_DTYPES: dict[str, str] = {
    "bf16": "bf16_flops", "bfloat16": "bf16_flops",
    "fp16": "fp16_flops", "float16": "fp16_flops", "f16": "fp16_flops",
    "fp8": "fp8_flops", "f8": "fp8_flops",
    "int8": "int8_flops", "i8": "int8_flops",
    "fp4": "fp4_flops",
    "fp32": "fp32_flops", "f32": "fp32_flops", "float32": "fp32_flops",
}

_SPEC_FIELDS = (
    "bf16_flops", "fp16_flops", "fp8_flops", "int8_flops", "fp4_flops", "fp32_flops",
    "hbm_bytes", "hbm_bandwidth", "ici_bandwidth", "ici_links", "nvlink_bandwidth",
    "dcn_bandwidth", "pcie_bandwidth", "clock_hz", "cores", "mxu_size",
    "vmem_bytes", "smem_bytes", "register_bytes", "l2_bytes", "base_clock_hz",
)

EFFICIENCY_MODES = ("ideal", "calibrated")


@dataclass(frozen=True)
class Efficiency:
    """What real kernels and collectives reach on a chip, as fractions of its peaks, plus per-call latencies.

    `matmul` (and `matmul_fp8`): the best large matmul's FLOP/s over the dense peak. `hbm`: achieved over
    peak HBM bytes/s. `collectives`: bus bandwidth over link bandwidth per collective kind (nccl-tests'
    busbw for GPUs). `network`: the same for links between nodes. `link`: an ICI link's achieved fraction
    (TPUs). `attention`: the share of the dense peak a fused (flash) attention kernel reaches, forward and
    backward (None: the matmul figure). `latency_node` (s): the fixed cost of one collective call inside an
    NVLink node (GPUs) or of one ICI hop (TPUs); `latency_network` (s): what each step of a ring between
    nodes adds to a call (n - 1 steps over n nodes, twice that for AllReduce).
    Three mechanisms of real runs, each read off its own source: `layer_overhead` (s), the fixed cost of one
    layer's forward pass beyond its FLOPs and bytes (kernel launches, synchronisation: what dominates a short
    prompt); `interference`, the fraction by which compute slows while a collective overlaps it (the collective's
    kernels take SMs and HBM bandwidth); `framework` (and `framework_fp8`), the share of the modelled training
    step rate a production framework reaches (what the terms above leave unexplained, calibrated on a disjoint
    family of published runs). `overlap`: the exponent p by which a kernel's arithmetic and memory times combine,
    (t_math^p + t_bytes^p)^(1/p) (`estimate.combine`), read off a published GEMM sweep of the chip's architecture
    (None, their max: no chip's calibrated set adopts it, see chapter 13). The ideal set (`IDEAL`) is all ones and
    zeros and the max: the book's bounds. `sources`
    names where each came from; 'assumed' marks a value no measurement gave (`assumed`).
    """

    matmul: float = 1.0
    matmul_fp8: float | None = None
    attention: float | None = None
    hbm: float = 1.0
    collectives: dict[str, float] = field(default_factory=dict, compare=False, hash=False)
    network: float = 1.0
    link: float = 1.0
    latency_node: float = 0.0
    latency_network: float = 0.0
    layer_overhead: float = 0.0
    interference: float = 0.0
    framework: float = 1.0
    framework_fp8: float | None = None
    overlap: float | None = None
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        check_fields(self, matmul="fraction", matmul_fp8="?fraction", attention="?fraction", hbm="fraction",
                     network="fraction", link="fraction", latency_node="nonneg", latency_network="nonneg",
                     layer_overhead="nonneg", interference="nonneg", framework="fraction",
                     framework_fp8="?fraction", collectives=_collective_fractions, overlap="?exponent")

    @property
    def assumed(self) -> tuple[str, ...]:
        """The factors no measurement gave: those whose source is chips.toml's 'assumed'."""
        assumed = _load()[1]["assumed"]
        return tuple(sorted(name for name, source in self.sources.items() if source == assumed))

    @checks(dtype="dtype")
    def framework_share(self, dtype: str = "bf16") -> float:
        """Share of the modelled training step rate a framework reaches in `dtype` (fp8 falls back to bf16's)."""
        return self.framework_fp8 if str(dtype).lower() in ("fp8", "f8") and self.framework_fp8 else self.framework

    @checks(dtype="dtype")
    def compute(self, dtype: str = "bf16") -> float:
        """Fraction of the dense peak a large matmul in `dtype` reaches (fp8 falls back to bf16's)."""
        return self.matmul_fp8 if str(dtype).lower() in ("fp8", "f8") and self.matmul_fp8 else self.matmul

    @checks(kind=("all_gather", "reduce_scatter", "all_reduce", "all_to_all"))
    def collective(self, kind: str) -> float:
        """Bus-bandwidth fraction of collective `kind` (the mean of the listed kinds when it is not listed)."""
        if kind in self.collectives:
            return self.collectives[kind]
        return sum(self.collectives.values()) / len(self.collectives) if self.collectives else 1.0


def _collective_fractions(name: str, value: object) -> object:
    """`Efficiency.collectives`: {collective kind: bus-bandwidth fraction in (0, 1]}."""
    kinds = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all")
    if not isinstance(value, dict):
        raise TypeError(f"{name}={value!r} must be a dict {{collective kind: fraction}}")
    for kind, fraction in value.items():
        check_kind(f"{name}[{kind!r}]", kind, kinds)
        check_kind(f"{name}[{kind!r}]", fraction, "fraction")
    return value


IDEAL = Efficiency()

# The units a source prints a figure in, as multiples of the SI base unit (chips.toml's `read` tables).
PRINTED_UNITS: dict[str, float] = {
    "TFLOP/s": 1e12, "PFLOP/s": 1e15, "TOP/s": 1e12, "POP/s": 1e15,
    "GB": 1e9, "GiB": 2.0**30, "TB": 1e12, "TiB": 2.0**40,
    "GB/s": 1e9, "TB/s": 1e12, "Gb/s": 1e9 / 8, "Tb/s": 1e12 / 8,
}


@dataclass(frozen=True)
class Reading:
    """One figure as its source printed it, the day it was read, and how a `Chip` field follows from it.

    `printed` in `unit` (a key of `PRINTED_UNITS`: GB and GiB apart); `basis` 'dense' or 'sparse' (2:4 sparsity,
    twice the dense rate); `direction` 'one-way' or 'bidirectional' (both directions summed); `chips`: how many
    chips the figure covers (72 for an NVL72 rack, 8 for an HGX board); `ports`: how many links a per-chip figure
    covers when the field is per link; `links`: how many links the field sums when the figure is per link.
    `flag` says why the field keeps another number (the book's) instead. `source` is the reference text.
    """

    field: str
    printed: float
    unit: str
    source: str
    on: datetime.date | None = None
    basis: str = "dense"
    direction: str = "one-way"
    chips: int = 1
    ports: int = 1
    links: int = 1
    flag: str = ""

    def __post_init__(self) -> None:
        check_fields(self, field=_SPEC_FIELDS, printed="size", unit=tuple(PRINTED_UNITS), source="text",
                     basis=("dense", "sparse"), direction=("one-way", "bidirectional"), chips="count",
                     ports="count", links="count", flag="?text")

    @property
    def value(self) -> float:
        """The field's quantity this figure gives: SI units, dense, one-way, per chip (per link for ICI)."""
        halve = (2 if self.basis == "sparse" else 1) * (2 if self.direction == "bidirectional" else 1)
        return self.printed * PRINTED_UNITS[self.unit] / halve / self.chips / self.ports * self.links


_CHIP_SIZES = ("bf16_flops", "fp16_flops", "fp8_flops", "int8_flops", "fp4_flops", "fp32_flops", "hbm_bytes",
               "hbm_bandwidth", "ici_bandwidth", "nvlink_bandwidth", "dcn_bandwidth", "pcie_bandwidth", "clock_hz",
               "base_clock_hz", "vmem_bytes", "smem_bytes", "register_bytes", "l2_bytes")


def _efficiency_or_none(name: str, value: object) -> object:
    if value is not None and not isinstance(value, Efficiency):
        raise TypeError(f"{name}={value!r} must be an Efficiency or None")
    return value


@dataclass(frozen=True)
class Chip:
    """One accelerator chip. Every number is in SI units; `None` means the figure is not known.

    FLOP/s fields are dense peak rates per chip. `ici_bandwidth` is the ONE-WAY bandwidth of one ICI
    link in bytes/s (`ici_bidirectional` doubles it); `nvlink_bandwidth` is a GPU's one-way scale-up
    egress in bytes/s: NVLink on NVIDIA parts, the sum of the Infinity Fabric links to the other GPUs of
    its node on AMD parts. `sources` maps each field to where its number comes from; `readings` maps a field
    to a `Reading`: the figure as its source printed it (dense or sparse, GB or GiB, per link or per chip,
    one-way or bidirectional, per GPU or per rack), the day it was read, and a `flag` where the field keeps
    the book's number instead (chips.toml's `read` tables). Those records never change a field's units.
    """

    name: str
    vendor: str = "unknown"
    kind: str = "unknown"
    bf16_flops: float | None = None
    fp16_flops: float | None = None
    fp8_flops: float | None = None
    int8_flops: float | None = None
    fp4_flops: float | None = None
    fp32_flops: float | None = None
    hbm_bytes: float | None = None
    hbm_bandwidth: float | None = None
    ici_bandwidth: float | None = None
    ici_links: int | None = None
    nvlink_bandwidth: float | None = None
    dcn_bandwidth: float | None = None
    pcie_bandwidth: float | None = None
    clock_hz: float | None = None
    base_clock_hz: float | None = None
    cores: int | None = None
    mxu_size: int | None = None
    vmem_bytes: float | None = None
    smem_bytes: float | None = None
    register_bytes: float | None = None
    l2_bytes: float | None = None
    max_slice: tuple[int, ...] | None = None
    host_shape: tuple[int, ...] | None = None
    aliases: tuple[str, ...] = ()
    device_kinds: tuple[str, ...] = ()
    notes: str = ""
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)
    calibration: Efficiency | None = field(default=None, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        check_fields(self, name="text", vendor="text", kind="text", notes="text", **dict.fromkeys(_CHIP_SIZES, "?size"),
                     ici_links="?count", cores="?count", mxu_size="?count", calibration=_efficiency_or_none)

    def efficiency(self, mode: str | Efficiency = "ideal") -> Efficiency:
        """Return the efficiency factors of `mode`: 'ideal' (the book's bounds: all ones, no latency),
        'calibrated' (this chip's published measurements, `chips.toml`), or an `Efficiency` as given."""
        if isinstance(mode, Efficiency):
            return mode
        if check_choice("efficiency", mode, EFFICIENCY_MODES) == "ideal":
            return IDEAL
        if self.calibration is None:
            known = [c.name for c in _load()[0].values() if c.calibration is not None]
            raise ValueError(f"efficiency='calibrated': {self.name} has no calibrated factors; chips with "
                             f"them: {known}")
        return self.calibration

    def peak_flops(self, dtype: str = "bf16") -> float:
        """Return the peak FLOP/s (OP/s for integers) of this chip for matmuls in `dtype`.

        fp16 falls back to the bf16 figure (the same tensor units run both) and vice versa.
        """
        key = str(dtype).lower()
        if key not in FLOP_DTYPES:
            raise ValueError(f"dtype={dtype!r} has no peak-FLOP/s field; allowed: {sorted(FLOP_DTYPES)}")
        attr = FLOP_DTYPES[key]
        value = getattr(self, attr)
        if value is None and attr in ("bf16_flops", "fp16_flops"):
            value = self.bf16_flops or self.fp16_flops
        if value is None:
            known = sorted({k for k, a in FLOP_DTYPES.items() if getattr(self, a) is not None})
            raise ValueError(f"{self.name} has no published {dtype} peak; dtypes with a figure: {known}")
        return float(value)

    @property
    def default_dtype(self) -> str:
        """The dtype whose peak this chip quotes first: bf16, else fp16, fp32 or int8 (a measured CPU has fp32)."""
        for dtype in ("bf16", "fp16", "fp32", "int8"):
            if getattr(self, FLOP_DTYPES[dtype]) is not None:
                return dtype
        return "bf16"

    @property
    def ici_bidirectional(self) -> float | None:
        """Bytes/s one ICI link carries in both directions together (2 x the one-way figure)."""
        return None if self.ici_bandwidth is None else 2.0 * self.ici_bandwidth

    @checks(bandwidth="?size")
    def critical_intensity(self, dtype: str = "bf16", bandwidth: float | None = None) -> float:
        """Return peak FLOP/s divided by `bandwidth` (bytes/s; HBM by default), in FLOPs per byte."""
        W = self.hbm_bandwidth if bandwidth is None else bandwidth
        if not W or W <= 0:
            raise ValueError(f"bandwidth must be a positive number of bytes/s for {self.name}, got {W!r}")
        return self.peak_flops(dtype) / W

    def replace(self, **changes) -> Chip:
        """Return a copy of this chip with some fields changed (e.g. a measured bandwidth)."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(f"Chip has no field(s) {sorted(unknown)}; fields: {list(_SPEC_FIELDS)}")
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        dtype = self.default_dtype
        parts = [f"{fmt_rate(getattr(self, FLOP_DTYPES[dtype]) or 0)} {dtype}"]
        if self.hbm_bytes and self.hbm_bandwidth:
            parts.append(f"{fmt_bytes(self.hbm_bytes)} HBM at {fmt_rate(self.hbm_bandwidth, 'B/s')}")
        return f"Chip({self.name!r}: {', '.join(parts)})"

    @property
    def readings(self) -> dict[str, Reading]:
        """The figures behind this chip's fields as their sources printed them, by field (chips.toml's `read`
        table of the chip of this name; empty for a chip built by hand)."""
        return _load()[2].get(self.name, {})

    def source(self, field_name: str) -> str:
        """Return the source of one of this chip's numbers ('' when the number is not known)."""
        return self.sources.get(check_choice("field_name", field_name, _SPEC_FIELDS), "")

    def _repr_html_(self) -> str:
        return list_chips([self])._repr_html_()


@cache
def _load() -> tuple[dict[str, Chip], dict[str, str], dict[str, dict[str, Reading]]]:
    data = load("hardware/chips.toml")
    refs: dict[str, str] = data["sources"]
    chips: dict[str, Chip] = {}
    readings: dict[str, dict[str, Reading]] = {}
    for key, spec in data["chips"].items():
        spec = dict(spec)
        default_ref = spec.pop("source")
        overrides = spec.pop("sources", {})
        sources = {
            f: refs[overrides.get(f, default_ref)] for f in _SPEC_FIELDS if spec.get(f) is not None
        }
        if "calibrated" in spec:
            factors = dict(spec.pop("calibrated"))
            cited = factors.pop("sources")
            spec["calibration"] = Efficiency(sources={k: refs[v] for k, v in cited.items()}, **factors)
        readings[spec["name"]] = {name: Reading(field=name, **{**entry, "source": refs[entry.get(
            "source", overrides.get(name, default_ref))]}) for name, entry in spec.pop("read", {}).items()}
        for name in ("aliases", "device_kinds", "max_slice", "host_shape"):
            if name in spec:
                spec[name] = tuple(spec[name])
        chips[key] = Chip(sources=sources, **spec)
    return chips, refs, readings


@cache
def _alias_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for key, chip in _load()[0].items():
        for alias in (key, chip.name, *chip.aliases):
            table[chip_key(alias)] = key
    return table


def chip_names() -> list[str]:
    """Return the canonical keys of every chip in the spec table, e.g. ['v2', 'v3', ..., 'gb200']."""
    return list(_load()[0])


def get_chip(name: str | Chip) -> Chip:
    """Return the `Chip` called `name`, forgiving case, spaces, dashes and vendor prefixes.

    'v5e', 'TPU v5e', 'tpu-v5e' and 'v5litepod' all give the TPU v5e; 'H100' and 'nvidia-h100' the H100.
    Unknown names raise `KeyError` listing the closest known names; an announced chip's ('rubin') says why it has no
    numbers yet (`hardware.announced`).
    """
    if isinstance(name, Chip):
        return name
    if not isinstance(name, str):
        raise KeyError(f"chip={name!r} must be a chip name such as 'v5e' or 'h100'")
    key = chip_key(name)
    table = _alias_table()
    if key.startswith("tpu") and key[3:] in table:
        key = key[3:]
    if key not in table and refusal(name):
        raise KeyError(f"chip={name!r}: {refusal(name)}; announced chips: sb.hardware.announced.announced_chips()")
    if key not in table:
        close = closest(key, table, n=4, cutoff=0.4)
        suggestions = sorted({_load()[0][table[c]].name for c in close})
        hint = f"closest: {', '.join(suggestions)}" if suggestions else "no close match"
        raise KeyError(f"chip={name!r} is not known ({hint}); known chips: {', '.join(chip_names())}")
    return _load()[0][table[key]]


@checks(device_kind="text")
def chip_for_device_kind(device_kind: str) -> Chip | None:
    """Return the `Chip` a JAX `device.device_kind` string names ('TPU v5 lite' -> v5e), or None."""
    kind = str(device_kind).lower()
    best: tuple[int, Chip] | None = None
    for chip in _load()[0].values():
        for prefix in chip.device_kinds:
            p = prefix.lower()
            if kind.startswith(p) and (best is None or len(p) > best[0]):
                best = (len(p), chip)
    return None if best is None else best[1]


def list_chips(chips: list[Chip] | None = None, vendor: str | None = None) -> Table:
    """Return a table of chips (all by default, or one `vendor`) with their headline specs."""
    if chips is not None:
        check_kind("chips", chips, sequence_of(is_a(Chip), "Chips"))
    vendors = sorted({c.vendor for c in _load()[0].values()})
    if vendor is not None:
        check_kind("vendor", vendor, vendors)
    if chips is None:
        chips = [c for c in _load()[0].values() if vendor is None or c.vendor == vendor]
    rows = [
        {
            "chip": c.name,
            "bf16 FLOP/s": c.bf16_flops or c.fp16_flops or c.fp32_flops,
            "int8 OP/s": c.int8_flops,
            "HBM": c.hbm_bytes,
            "HBM BW": c.hbm_bandwidth,
            "critical intensity": c.critical_intensity(c.default_dtype) if c.hbm_bandwidth else None,
            "ICI link (one-way)": c.ici_bandwidth,
            "scale-up egress": c.nvlink_bandwidth,
            "PCIe": c.pcie_bandwidth,
        }
        for c in chips
    ]
    rate = fmt_rate
    formats = {
        "bf16 FLOP/s": rate, "int8 OP/s": lambda v: fmt_rate(v, "OP/s"), "HBM": fmt_bytes,
        "HBM BW": lambda v: fmt_rate(v, "B/s"), "ICI link (one-way)": lambda v: fmt_rate(v, "B/s"),
        "scale-up egress": lambda v: fmt_rate(v, "B/s"), "PCIe": lambda v: fmt_rate(v, "B/s"),
        "critical intensity": lambda v: f"{v:.0f}",
    }
    return Table(rows, formats=formats,
                 title="Accelerator specs (dense peaks; one-way bandwidths; scale-up: NVLink or Infinity Fabric)")


def mxus_per_core(chip: Chip | str) -> int | None:
    """Return the MXUs in one TensorCore (a count), from peak bf16 FLOP/s = cores × MXUs × 2 × size² × clock (Hz);
    None when the clock or MXU size is not in the spec table."""
    c = get_chip(chip)
    if not (c.clock_hz and c.mxu_size and c.cores and c.bf16_flops):
        return None
    return round(c.bf16_flops / (c.cores * 2 * c.mxu_size**2 * c.clock_hz))


@checks(vmem_factor="size")
def ladder_rows(chip: Chip | str, vmem_factor: float = VMEM_FACTOR) -> dict[str, float | None]:
    """Return the bandwidths (bytes/s) of one chip's channels, fastest first; None where a figure is unknown.

    VMEM is `vmem_factor` x HBM, listed only for chips whose VMEM size is known. ICI appears three ways: one
    link one-way, one link both ways (the book's "bidirectional"), and the chip's egress over all its links.
    """
    c = get_chip(chip)
    ici = c.ici_bandwidth
    return {
        "VMEM→MXU (≈22× HBM)": vmem_factor * c.hbm_bandwidth if c.vmem_bytes and c.hbm_bandwidth else None,
        "HBM": c.hbm_bandwidth,
        "ICI, all links, one-way": ici * c.ici_links if ici and c.ici_links else None,
        "ICI link, bidirectional": c.ici_bidirectional,
        "ICI link, one-way": ici,
        "PCIe (host↔chip)": c.pcie_bandwidth,
        "DCN (per chip)": c.dcn_bandwidth,
    }
