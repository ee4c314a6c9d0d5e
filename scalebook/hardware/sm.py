"""Inside one NVIDIA GPU: streaming multiprocessors, their four subpartitions, warps and tensor cores (ch. 12).

Every SM since Volta splits into 4 subpartitions; each has one tensor core (the matmul unit, the MXU's
counterpart), a warp scheduler issuing one instruction to 32 lanes at a time (the CUDA cores, like a VPU's
ALUs), and a slice of the register file. The counts below follow from the chip's SM count and clock.
"""

from __future__ import annotations

from ..estimate import Estimate
from ..tables import Table
from ..units import check_positive, checks, fmt_bytes, fmt_rate
from .chips import Chip, get_chip

__all__ = ["SUBPARTITIONS_PER_SM", "WARP_LANES", "VPU_ALUS", "VPU_SHAPE", "cuda_cores", "vpu_alus",
           "vector_flops", "clock_from_vector_flops", "tensor_core_flops_per_cycle", "on_chip_bytes", "vector_add",
           "gpu_table", "vpu_flops_per_core", "PIPELINE_STAGES", "pipeline_stages"]

SUBPARTITIONS_PER_SM = 4
WARP_LANES = 32
# A TPU TensorCore's vector unit (ch. 2): registers of 8 sublanes × 128 lanes, 4 ALUs working on each.
VPU_SHAPE = (8, 128)
VPU_ALUS = 4


def _gpu(chip: Chip | str) -> Chip:
    chip = get_chip(chip)
    if chip.kind != "gpu" or not chip.cores:
        raise ValueError(f"chip={chip.name!r} is not a GPU with a known SM count")
    return chip


def _clock(chip: Chip, clock: str | float) -> float:
    """'boost' or 'base' picks the chip's published clock (Hz); a number is used as given."""
    if isinstance(clock, (int, float)) and not isinstance(clock, bool):
        return check_positive("clock", clock)
    value = {"boost": chip.clock_hz, "base": chip.base_clock_hz}.get(clock, "unknown")
    if value == "unknown":
        raise ValueError(f"clock={clock!r}; allowed: 'boost', 'base' or a frequency in Hz")
    if value is None:
        raise ValueError(f"{chip.name} has no published {clock} clock; pass clock= in Hz")
    return float(value)


# fp32 lanes per SM where they are not 4 × 32: Volta and the A100 have 16 per subpartition (NVIDIA's V100 and
# A100 whitepapers: 64 FP32 cores per SM); Hopper and Blackwell have 32.
_FP32_LANES_PER_SM = {"NVIDIA V100": 64, "NVIDIA A100": 64}


def cuda_cores(chip: Chip | str) -> int:
    """Return the fp32 lanes (CUDA cores) of a GPU: SMs × 4 subpartitions × 32 lanes on Hopper and Blackwell
    (16 per subpartition on V100 and A100)."""
    chip = _gpu(chip)
    return chip.cores * _FP32_LANES_PER_SM.get(chip.name, SUBPARTITIONS_PER_SM * WARP_LANES)


def vpu_alus(chip: Chip | str) -> int:
    """Return a TPU's vector ALUs for comparison with `cuda_cores`: TensorCores × 4 ALUs × 8 × 128 lanes."""
    chip = get_chip(chip)
    if chip.kind != "tpu" or not chip.cores:
        raise ValueError(f"chip={chip.name!r} is not a TPU with a known TensorCore count")
    return chip.cores * VPU_ALUS * VPU_SHAPE[0] * VPU_SHAPE[1]


@checks(fma="flag")
def vector_flops(chip: Chip | str, clock: str | float = "boost", fma: bool = False) -> float:
    """Return the fp32 FLOPs/s of the CUDA cores: one op per lane per cycle, or two when each is a fused
    multiply-add (`fma=True`, the spec sheets' convention). `clock` is 'boost', 'base' or Hz."""
    chip = _gpu(chip)
    return cuda_cores(chip) * _clock(chip, clock) * (2 if fma else 1)


@checks(flops="size", fma="flag")
def clock_from_vector_flops(chip: Chip | str, flops: float, fma: bool = True) -> float:
    """Return the clock (Hz) that makes the CUDA cores deliver `flops` fp32 FLOPs/s (inverse of `vector_flops`)."""
    return flops / (cuda_cores(chip) * (2 if fma else 1))


@checks(dtype="dtype")
def tensor_core_flops_per_cycle(chip: Chip | str, dtype: str = "bf16", clock: str | float = "boost") -> float:
    """Return the FLOPs one tensor core does per cycle: peak / (SMs × 4 × clock), counting one tensor core
    per subpartition as ch. 12 does (true since Ampere; a V100 SM has two per subpartition, so its figure
    is per pair)."""
    chip = _gpu(chip)
    return chip.peak_flops(dtype) / (chip.cores * SUBPARTITIONS_PER_SM * _clock(chip, clock))


def on_chip_bytes(chip: Chip | str) -> dict[str, float]:
    """Return the GPU's fast on-chip memory in bytes: all SMs' shared memory (SMEM/L1), register files, both."""
    chip = _gpu(chip)
    if chip.smem_bytes is None or chip.register_bytes is None:
        raise ValueError(f"{chip.name} lacks a per-SM SMEM or register-file size")
    smem, regs = chip.cores * chip.smem_bytes, chip.cores * chip.register_bytes
    return {"smem": smem, "registers": regs, "total": smem + regs}


@checks(N="size")
def vector_add(N: float, chip: Chip | str, clock: str | float = "boost") -> Estimate:
    """Return the roofline `Estimate` of adding two fp32[N] vectors on a GPU's CUDA cores: N FLOPs at
    `vector_flops`, 12·N bytes (read two, write one) at HBM bandwidth."""
    chip = _gpu(chip)
    C, W = vector_flops(chip, clock), chip.hbm_bandwidth
    return Estimate(float(N), 12.0 * N, N / C, 12 * N / W, channel="HBM",
                    label=f"fp32[{N:g}] + fp32[{N:g}] on {chip.name}'s CUDA cores",
                    terms=(("C (CUDA cores)", fmt_rate(C)), ("W (HBM)", fmt_rate(W, "B/s"))))


@checks(chips="names")
def gpu_table(chips: tuple[str, ...] = ("v100", "a100", "h100", "h200", "b200")) -> Table:
    """Return one row per GPU: SMs, CUDA cores, SMEM per SM, L2, HBM size and bandwidth, dense bf16/fp16
    FLOPs/s and the boost clock (ch. 12's two spec tables, from `chips.toml`)."""
    rows = []
    for name in chips:
        chip = _gpu(name)
        rows.append({"GPU": chip.name, "SMs": chip.cores, "CUDA cores": cuda_cores(chip),
                     "SMEM/SM": chip.smem_bytes, "L2": chip.l2_bytes, "HBM": chip.hbm_bytes,
                     "HBM B/s": chip.hbm_bandwidth, "bf16/fp16 FLOPs/s": chip.peak_flops("bf16"),
                     "boost clock": chip.clock_hz})
    size = lambda v: fmt_bytes(v) if v else "?"  # noqa: E731
    return Table(rows, formats={"SMEM/SM": size, "L2": size, "HBM": size,
                                "HBM B/s": lambda v: fmt_rate(v, "B/s"), "bf16/fp16 FLOPs/s": fmt_rate,
                                "boost clock": lambda v: f"{v / 1e9:.2f} GHz" if v else "?"},
                 title="NVIDIA GPUs, one chip each (dense figures)")


def vpu_flops_per_core(chip: Chip | str) -> float | None:
    """Return one TPU TensorCore's vector-unit FLOP/s (8 sublanes × 128 lanes × 4 ALUs per cycle × clock in Hz),
    or None when the clock is not in the spec table."""
    c = get_chip(chip)
    return VPU_SHAPE[0] * VPU_SHAPE[1] * VPU_ALUS * c.clock_hz if c.clock_hz else None


# The stages an elementwise op streams through on a TPU core (ch. 2), one chunk of the arrays per step.
PIPELINE_STAGES = ("HBM → VMEM", "VMEM → registers", "VPU multiply", "registers → VMEM", "VMEM → HBM")


@checks(n_chunks="count", step="count0")
def pipeline_stages(n_chunks: int, step: int) -> dict[str, int | None]:
    """Return which chunk (numbered from 0) each stage of a TPU's pipelined elementwise op works on at `step`
    (steps counted from 0; None: idle).

    Chunk c enters stage s at step c + s: every stage is busy once the pipe is full, so n chunks take
    n + (stages − 1) steps rather than n × stages.
    """
    last = n_chunks + len(PIPELINE_STAGES) - 1
    if not isinstance(step, int) or not 0 <= step < last:
        raise ValueError(f"step={step!r} must be an integer in [0, {last})")
    return {name: (step - s if 0 <= step - s < n_chunks else None) for s, name in enumerate(PIPELINE_STAGES)}
