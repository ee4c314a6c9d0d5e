"""Micro-benchmarks on the reader's own device: measured peak FLOP/s and bandwidth, and matmul sweeps.

Every timing warms up first (compilation), then reports the median of `repeats` runs. On emulated CPU
devices the numbers describe the host CPU and are only indicative of what an accelerator does; on a
TPU or GPU runtime they are the real thing.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .hardware import Chip, chip_for_device_kind
from .roofline import matmul
from .tables import Table
from .units import dtype_bytes, fmt_rate, fmt_time

__all__ = ["median_time", "calibrate", "matmul_sweep", "Sweep", "default_dtype", "sweep_shapes"]

_JNP_DTYPES = {"fp32": "float32", "f32": "float32", "bf16": "bfloat16", "fp16": "float16", "int8": "int8"}


def _jax():
    import jax
    import jax.numpy as jnp

    return jax, jnp


def default_dtype() -> str:
    """Return the dtype benchmarks use here: 'fp32' on a CPU (bf16 is emulated there), else 'bf16'."""
    jax, _ = _jax()
    return "fp32" if jax.default_backend() == "cpu" else "bf16"


def median_time(fn: Callable[..., Any], *args: Any, repeats: int = 5, warmup: int = 1) -> float:
    """Return the median wall time in seconds of `fn(*args)`, waiting for the device each time."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats!r}")
    jax, _ = _jax()
    for _ in range(warmup):
        jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _array(shape: Sequence[int], dtype: str):
    _, jnp = _jax()
    if dtype not in _JNP_DTYPES:
        raise ValueError(f"dtype={dtype!r} cannot be benchmarked; allowed: {sorted(_JNP_DTYPES)}")
    return jnp.ones(shape, dtype=_JNP_DTYPES[dtype])


def _progress(items: Iterable, total: int, desc: str, progress: bool):
    from tqdm.auto import tqdm

    return tqdm(items, total=total, desc=desc, disable=not progress, leave=False)


def calibrate(dtype: str | None = None, n: int | None = None, nbytes: float | None = None,
              repeats: int = 5, progress: bool = True) -> Chip:
    """Measure this device's matmul FLOP/s and memory bandwidth; return them as a `Chip`.

    FLOP/s: an n x n x n matmul in `dtype` (n = 2048 on a CPU, 8192 on an accelerator). Bandwidth: a
    sum over an array of `nbytes` bytes (256 MiB on a CPU, 2 GiB on an accelerator), which reads
    every byte once and writes almost nothing — like a weight load. Other fields come from the spec
    table when the device is a known chip.
    """
    jax, jnp = _jax()
    dtype = dtype or default_dtype()
    on_cpu = jax.default_backend() == "cpu"
    n = n or (2048 if on_cpu else 8192)
    nbytes = nbytes or (2**28 if on_cpu else 2**31)
    steps = _progress(range(2), 2, "calibrating", progress)
    a = _array((n, n), dtype)
    flops_rate = bandwidth = 0.0
    for step in steps:
        if step == 0:
            flops_rate = 2 * n**3 / median_time(jax.jit(jnp.matmul), a, a, repeats=repeats)
        else:
            x = _array((int(nbytes // dtype_bytes(dtype)),), dtype)
            bandwidth = x.nbytes / median_time(jax.jit(jnp.sum), x, repeats=repeats)
    kind = jax.devices()[0].device_kind
    base = chip_for_device_kind(kind) or Chip(name=kind, vendor="host", kind=jax.default_backend())
    field = {"fp32": "fp32_flops", "f32": "fp32_flops", "int8": "int8_flops"}.get(dtype, "bf16_flops")
    measured = f"measured on this device ({fmt_rate(flops_rate)} {dtype}, {fmt_rate(bandwidth, 'B/s')})"
    return base.replace(
        name=f"{kind} (measured)", hbm_bandwidth=bandwidth, **{field: flops_rate},
        sources={**base.sources, field: measured, "hbm_bandwidth": measured},
    )


def sweep_shapes(D: int = 4096, F: int = 4096, batches: Sequence[int] | None = None) -> list[tuple[int, int, int]]:
    """Return (B, D, F) shapes with B doubling from 1 to 1024: from weight-load-bound to compute-bound."""
    batches = batches or [2**i for i in range(11)]
    return [(int(B), D, F) for B in batches]


@dataclass(frozen=True)
class Sweep:
    """A matmul sweep: one row per shape with measured and predicted times (seconds)."""

    table: Table
    chip: Chip
    dtype: str

    @property
    def ratios(self) -> list[float]:
        """measured / predicted for every shape."""
        return self.table.column("measured/predicted")

    @property
    def median_ratio(self) -> float:
        """The median of measured / predicted: 1.0 means the roofline predicts this device exactly."""
        return statistics.median(self.ratios)

    def _repr_html_(self) -> str:
        return self.table._repr_html_() + f"<p>median measured/predicted: {self.median_ratio:.2f}</p>"

    def __str__(self) -> str:
        return f"{self.table}\nmedian measured/predicted: {self.median_ratio:.2f}"


def matmul_sweep(shapes: Sequence[tuple[int, int, int]], dtype: str | None = None, chip: Chip | None = None,
                 repeats: int = 5, progress: bool = True) -> Sweep:
    """Time X[B,D] @ W[D,F] for every (B, D, F) in `shapes` and set each beside the roofline of `chip`.

    `chip` defaults to `calibrate()` of this device. W is stored as [F, D] (the layout PyTorch and
    many checkpoints use) and contracted on D; XLA's CPU kernels handle thin X faster that way.
    """
    jax, jnp = _jax()
    dtype = dtype or default_dtype()
    chip = chip or calibrate(dtype, progress=progress)
    if not shapes:
        raise ValueError("shapes must list at least one (B, D, F) triple")
    fn = jax.jit(lambda x, w: jnp.matmul(x, w.T))
    rows = []
    for B, D, F in _progress(shapes, len(shapes), "matmul sweep", progress):
        predicted = matmul(B, D, F, chip, dtype=dtype)
        measured = median_time(fn, _array((B, D), dtype), _array((F, D), dtype), repeats=repeats)
        rows.append({
            "B": B, "D": D, "F": F, "intensity": predicted.intensity, "bound": predicted.bound,
            "predicted": predicted.time, "measured": measured,
            "measured FLOP/s": predicted.flops / measured, "measured/predicted": measured / predicted.time,
        })
    formats = {"predicted": fmt_time, "measured": fmt_time, "measured FLOP/s": fmt_rate,
               "measured/predicted": lambda r: f"{r:.2f}", "intensity": lambda v: f"{v:.3g}"}
    table = Table(rows, formats=formats, title=f"matmul sweep on {chip.name}, {dtype}")
    return Sweep(table, chip, dtype)

