"""Micro-benchmarks on the reader's own device: measured peak FLOP/s and bandwidth, and matmul sweeps.

Every timing warms up first (compilation), then reports the median of `repeats` runs. On emulated CPU
devices the numbers describe the host CPU and are only indicative of what an accelerator does; on a
TPU or GPU runtime they are the real thing.
"""

from __future__ import annotations

import dataclasses
import html
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..collectives import collective, default_mesh, fit_bandwidth
from ..hardware.chips import IDEAL, Chip, chip_for_device_kind
from ..roofline import matmul
from ..tables import Table
from ..units import checks, dtype_bytes, fmt_bytes, fmt_rate, fmt_time, is_a, sequence_of
from .runtime import a_function, device_mesh, jax_and_numpy, jnp_dtype

__all__ = ["median_time", "calibrate", "matmul_sweep", "Sweep", "default_dtype", "sweep_shapes", "collective_sweep",
           "collective_factors", "COLLECTIVE_MODEL"]

def default_dtype() -> str:
    """Return the dtype benchmarks use here: 'fp32' on a CPU (bf16 is emulated there), else 'bf16'."""
    jax, _ = jax_and_numpy()
    return "fp32" if jax.default_backend() == "cpu" else "bf16"


@checks(repeats="count", warmup="count0", fn=a_function)
def median_time(fn: Callable[..., Any], *args: Any, repeats: int = 5, warmup: int = 1) -> float:
    """Return the median wall time in seconds of `fn(*args)`, waiting for the device each time."""
    jax, _ = jax_and_numpy()
    for _ in range(warmup):
        jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _array(shape: Sequence[int], dtype: str):
    _, jnp = jax_and_numpy()
    return jnp.ones(shape, dtype=jnp_dtype(dtype))


def progress_bar(items: Iterable, total: int, desc: str, progress: bool) -> Iterable:
    """`items`, with a progress bar when `progress`: in a notebook kernel an HTML bar updated in place that ends
    as one line ('calibrating: 2 of 2 done'), so a saved or built page never shows a frozen bar; elsewhere
    tqdm's text bar on stderr, cleared when done."""
    if not progress:
        return items
    ipython = sys.modules.get("IPython")
    if getattr(ipython and ipython.get_ipython(), "kernel", None) is None:
        from tqdm import tqdm

        return tqdm(items, total=total, desc=desc, leave=False)
    return _notebook_bar(items, total, desc)


def _notebook_bar(items: Iterable, total: int, desc: str) -> Iterable:
    """Yield `items` while one display, replaced after each item, shows `desc` and the steps done."""
    from IPython.display import HTML, display

    label = html.escape(desc)
    handle = display(HTML(f"<progress value='0' max='{total}'></progress> <small>{label} 0/{total}</small>"),
                     display_id=True)
    done = 0
    for item in items:
        yield item
        done += 1
        handle.update(HTML(f"<progress value='{done}' max='{total}'></progress> <small>{label} {done}/{total}</small>"))
    handle.update(HTML(f"<small>{label}: {done} of {total} done</small>"))


@checks(chip=is_a(Chip), n_devices="count")
def collective_factors(sweep: Table, chip: Chip, n_devices: int) -> dict[str, Any]:
    """Read the calibrated collective factors of `n_devices` chips off a `collective_sweep` over them.

    Per kind (psum, all_gather, psum_scatter), fit T = overhead + V / algbw (`collectives.fit_bandwidth`) and
    set it against scalebook's own ideal estimate of the same collective on the slice a calibrated estimate
    assumes (`collectives.default_mesh`): the fraction is the ideal bandwidth time over the measured one. On a
    GPU node that is nccl-tests' bus bandwidth over the NVLink rate, per kind (`Efficiency.collectives`), and
    the median overhead is the fixed cost per call (`latency_node`); on a TPU slice the median fraction is the
    ICI link's (`link`) and the overhead divided by the ideal estimate's hop count is the cost per hop. Returns
    the `Efficiency` fields to replace, each fraction at most 1.
    """
    if not isinstance(sweep, Table) or not sweep.rows:
        raise ValueError(f"sweep={sweep!r} must be a non-empty collective_sweep table")
    if n_devices < 2:
        raise ValueError(f"n_devices={n_devices!r}: a collective needs at least 2 devices")
    mesh = default_mesh(chip, n_devices)
    fractions, overheads = {}, []
    for kind in ("psum", "all_gather", "psum_scatter"):
        rows = [r for r in sweep.rows if r["kind"] == kind]
        if len(rows) < 2:
            continue
        algbw, overhead = fit_bandwidth([r["V"] for r in rows], [r["measured"] for r in rows])
        V = max(r["V"] for r in rows)
        ideal = collective(COLLECTIVE_MODEL[kind], mesh, None, V)
        fractions[COLLECTIVE_MODEL[kind]] = min(1.0, ideal.t_comms * algbw / V)
        hops = ideal.t_latency / mesh.hop_latency if chip.kind != "gpu" and ideal.t_latency else 1.0
        overheads.append(overhead / hops)
    if not fractions:
        raise ValueError("sweep holds no psum, all_gather or psum_scatter at two sizes or more")
    if chip.kind == "gpu":
        return {"collectives": fractions, "latency_node": statistics.median(overheads)}
    return {"link": statistics.median(fractions.values()), "latency_node": statistics.median(overheads)}


@checks(dtype="?dtype", n="?count", nbytes="?size", repeats="count", progress="flag", collectives="?flag")
def calibrate(dtype: str | None = None, n: int | None = None, nbytes: float | None = None,
              repeats: int = 5, progress: bool = True, collectives: bool | None = None) -> Chip:
    """Measure this device's two roofs and return them as a `Chip` (its other fields from the spec table).

    Peak FLOP/s: an n x n x n matmul in `dtype` (n = 2048 on a CPU, 8192 on an accelerator).
    Memory bandwidth: a matrix-vector product x[1, D] @ W[D, D] whose weights W take `nbytes` (256 MiB on
    a CPU, 2 GiB on an accelerator): it reads every weight once and does almost no math, so it measures
    the bandwidth at which a matmul can stream its weights — the roof the memory-bound matmuls hit.

    The measured chip is also calibrated (`Chip.efficiency("calibrated")`): its roofs are already what this
    device reaches, so its matmul and HBM factors are 1, and their sources say which fraction of the data-sheet
    peaks was measured; the collective factors and per-call latencies are the spec chip's (one device cannot
    measure them). With `collectives` (default: whenever this host has two or more GPUs with an NVLink figure,
    or TPU chips of one JAX device each with an ICI figure) it also times AllReduce, AllGather and
    ReduceScatter over all of them (`collective_sweep`, 1-64 MiB per device) and stores the fitted fractions
    and fixed costs (`collective_factors`) in place of the spec chip's.
    """
    jax, jnp = jax_and_numpy()
    dtype = dtype or default_dtype()
    on_cpu = jax.default_backend() == "cpu"
    n = n or (2048 if on_cpu else 8192)
    nbytes = nbytes or (2**28 if on_cpu else 2**31)
    side = int((nbytes / dtype_bytes(dtype)) ** 0.5)
    flops_rate = bandwidth = 0.0
    mm = jax.jit(jnp.matmul)
    for step in progress_bar(range(2), 2, "calibrating", progress):
        if step == 0:
            a = _array((n, n), dtype)
            flops_rate = 2 * n**3 / median_time(mm, a, a, repeats=repeats)
        else:
            w = _array((side, side), dtype)
            bandwidth = w.nbytes / median_time(mm, _array((1, side), dtype), w, repeats=repeats)
    kind = jax.devices()[0].device_kind
    base = chip_for_device_kind(kind) or Chip(name=kind, vendor="host", kind=jax.default_backend())
    field = {"fp32": "fp32_flops", "f32": "fp32_flops", "int8": "int8_flops"}.get(dtype, "bf16_flops")
    measured = f"measured on this device ({fmt_rate(flops_rate)} {dtype}, {fmt_rate(bandwidth, 'B/s')})"
    spec_flops, spec_bw = getattr(base, field), base.hbm_bandwidth
    inherited = base.calibration or IDEAL
    calibration = dataclasses.replace(inherited, matmul=1.0, matmul_fp8=None, hbm=1.0, sources={
        **inherited.sources,
        "matmul": measured + (f": {flops_rate / spec_flops:.0%} of the data-sheet peak" if spec_flops else ""),
        "hbm": measured + (f": {bandwidth / spec_bw:.0%} of the data-sheet bandwidth" if spec_bw else "")})
    devices = len(jax.devices())
    one_device_per_chip = max(getattr(d, "core_on_chip", 0) for d in jax.devices()) == 0  # v2/v3: 2 per chip
    linked = base.nvlink_bandwidth if base.kind == "gpu" else base.ici_bandwidth and one_device_per_chip
    measurable = bool(linked) and devices >= 2 and not on_cpu
    if collectives and not measurable:
        raise ValueError(f"collectives=True needs two or more GPUs with an NVLink figure or TPU chips (one "
                         f"device each) with an ICI figure; this host has {devices} {jax.default_backend()} "
                         f"device(s) of kind {kind!r}")
    if measurable and collectives is not False:
        sweep = collective_sweep(("psum", "all_gather", "psum_scatter"), sizes=(2**20, 2**23, 2**26),
                                 axis_size=devices, repeats=repeats, progress=progress)
        fields = collective_factors(sweep, base, devices)
        how = f"measured over this host's {devices} devices (collective_sweep against the ideal model's time)"
        calibration = dataclasses.replace(calibration, **fields, sources={
            **calibration.sources, **{name: how for name in fields}})
    return base.replace(
        name=f"{kind} (measured)", hbm_bandwidth=bandwidth, **{field: flops_rate},
        sources={**base.sources, field: measured, "hbm_bandwidth": measured}, calibration=calibration,
    )


@checks(D="?count", F="?count", batches="?counts")
def sweep_shapes(D: int | None = None, F: int | None = None,
                 batches: Sequence[int] | None = None) -> list[tuple[int, int, int]]:
    """Return (B, D, F) shapes with B doubling, from weight-load-bound to compute-bound, sized for this device.

    On a CPU: D = F = 4096 and B = 1 ... 2048 (the knee is near B = 10; past 2048 a shape only costs time). On an
    accelerator the weights must take far longer to load than a dispatch (tens of µs), so D = F = 16384 and
    B = 16 ... 16384.
    """
    jax, _ = jax_and_numpy()
    on_cpu = jax.default_backend() == "cpu"
    size = 4096 if on_cpu else 16384
    batches = batches or [2**i for i in (range(12) if on_cpu else range(4, 15))]
    return [(int(B), D or size, F or size) for B in batches]


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


@checks(dtype="?dtype", repeats="count", progress="flag", shapes=sequence_of("counts", "(B, D, F) shapes"))
def matmul_sweep(shapes: Sequence[tuple[int, int, int]], dtype: str | None = None, chip: Chip | None = None,
                 repeats: int = 5, progress: bool = True) -> Sweep:
    """Time X[B,D] @ W[D,F] for every (B, D, F) in `shapes` and set each beside the roofline of `chip`.

    `chip` defaults to `calibrate()` of this device. Each row also gives the no-overlap upper bound
    (T_math + T_comms): real kernels land between the two bounds, nearest the upper one at the knee.
    """
    jax, jnp = jax_and_numpy()
    dtype = dtype or default_dtype()
    chip = chip or calibrate(dtype, progress=progress)
    if not shapes:
        raise ValueError("shapes must list at least one (B, D, F) triple")
    fn = jax.jit(jnp.matmul)
    rows = []
    for B, D, F in progress_bar(shapes, len(shapes), "matmul sweep", progress):
        predicted = matmul(B, D, F, chip, dtype=dtype)
        measured = median_time(fn, _array((B, D), dtype), _array((D, F), dtype), repeats=repeats)
        rows.append({
            "B": B, "D": D, "F": F, "intensity": predicted.intensity, "bound": predicted.bound,
            "predicted": predicted.time, "upper bound": predicted.upper, "measured": measured,
            "measured FLOP/s": predicted.flops / measured, "measured/predicted": measured / predicted.time,
        })
    formats = {"predicted": fmt_time, "upper bound": fmt_time, "measured": fmt_time, "measured FLOP/s": fmt_rate,
               "measured/predicted": lambda r: f"{r:.2f}", "intensity": lambda v: f"{v:.3g}"}
    table = Table(rows, formats=formats, title=f"matmul sweep on {chip.name}, {dtype}")
    return Sweep(table, chip, dtype)


COLLECTIVE_MODEL = {"all_gather": "all_gather", "psum": "all_reduce", "psum_scatter": "reduce_scatter",
                    "all_to_all": "all_to_all"}


def _collective_fn(kind: str, mesh: Any):
    """A jitted shard_map running the JAX collective `kind` over mesh axis 'i' on each device's [n, m] block."""
    jax, _ = jax_and_numpy()
    from jax.sharding import PartitionSpec as P

    ops = {
        "all_gather": lambda x: jax.lax.all_gather(x, "i", tiled=True),
        "psum": lambda x: jax.lax.psum(x, "i"),
        "psum_scatter": lambda x: jax.lax.psum_scatter(x, "i", scatter_dimension=0, tiled=True),
        "all_to_all": lambda x: jax.lax.all_to_all(x, "i", 0, 0, tiled=True),
    }
    return jax.jit(jax.shard_map(ops[kind], mesh=mesh, in_specs=P("i"), out_specs=P("i")))


@checks(axis_size="count", repeats="count", progress="flag", kinds="names", sizes="sizes")
def collective_sweep(kinds: Sequence[str] = ("all_gather", "psum", "psum_scatter", "all_to_all"),
                     sizes: Sequence[float] = (2**10, 2**13, 2**16, 2**19), axis_size: int = 8, repeats: int = 5,
                     progress: bool = True) -> Table:
    """Time JAX's collectives on a 1-D mesh of the first `axis_size` devices; return one row per kind and size.

    `sizes` are the bytes each device holds before the collective (rounded down to whole rows). Where
    fewer than `axis_size` accelerators exist, the emulated CPU devices are used (timings then indicative).
    Each row gives the array bytes V the way `scalebook.collectives` counts them (the gathered array for
    all_gather, the unreduced array for psum and psum_scatter, the whole array for all_to_all), the median
    time in seconds, and V / time.
    """
    jax, _ = jax_and_numpy()
    from jax.sharding import NamedSharding, PartitionSpec

    unknown = [k for k in kinds if k not in COLLECTIVE_MODEL]
    if unknown or not kinds:
        raise ValueError(f"kinds={list(kinds)!r}; allowed: {list(COLLECTIVE_MODEL)}")
    if not isinstance(axis_size, int) or axis_size < 2:
        raise ValueError(f"axis_size={axis_size!r} must be an integer of at least 2 devices")
    mesh = device_mesh({"i": axis_size})
    platform = mesh.devices.flat[0].platform
    dtype = "fp32" if platform == "cpu" else "bf16"
    item = dtype_bytes(dtype)
    rows = []
    cases = [(k, s) for k in kinds for s in sizes]
    for kind, per_device in progress_bar(cases, len(cases), "collective sweep", progress):
        cols = int(per_device // (item * axis_size))
        if cols < 1:
            raise ValueError(f"sizes: {per_device!r} bytes per device is below one row of {axis_size} elements")
        x = jax.device_put(_array((axis_size * axis_size, cols), dtype), NamedSharding(mesh, PartitionSpec("i")))
        seconds = median_time(_collective_fn(kind, mesh), x, repeats=repeats)
        local = axis_size * cols * item
        V = local * axis_size if kind in ("all_gather", "all_to_all") else local
        rows.append({"kind": kind, "model": COLLECTIVE_MODEL[kind], "bytes per device": local, "V": V,
                     "measured": seconds, "V / time": V / seconds})
    formats = {"bytes per device": fmt_bytes, "V": fmt_bytes, "measured": fmt_time,
               "V / time": lambda r: fmt_rate(r, "B/s")}
    return Table(rows, formats=formats, title=f"JAX collectives over {axis_size} {platform} devices, {dtype}")
