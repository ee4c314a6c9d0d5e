"""Explorers for chapter 9: pick an op of a captured trace and see its roofline against its measured time; move
the inputs of the book's worked profile examples.

Answers are SVG `Chart`s and `Table`s, so a redraw takes milliseconds (the trace is captured once, before).
"""

from __future__ import annotations

from typing import Any

from ..hardware.chips import get_chip
from ..kinds import has
from ..roofline import achievable_flops, estimate
from ..svg import Chart
from ..tables import Table
from ..units import checks, fmt_bytes, fmt_flops, fmt_rate, fmt_time, geomspace
from .core import Explorer, Log, explore

__all__ = ["op_view", "op_explorer", "profile_example_view", "profile_example_explorer", "breakdown_view",
           "breakdown_explorer", "collective_check_view", "collective_check_explorer", "memory_check_view",
           "memory_check_explorer"]


@checks(trace=has("events", "table", what="a profiling Trace (profiling.capture)"))
def op_view(trace: Any, op: str) -> tuple[Chart, Table]:
    """Return one op of `trace` on its chip's roofline (where its FLOPs and bytes say it could run, and where its
    measured time puts it) and a table of its numbers: measured and roofline time, FLOPs, bytes, intensity."""
    row = trace.row(op)
    chip = trace.chip
    dtype = "bf16" if chip.bf16_flops else "fp32"
    measured, flops, nbytes = row["measured"], row["flops"], row["bytes"]
    intensity = flops / nbytes if nbytes else None
    chart = Chart(title=f"{op} ({row['kind']}) on the roofline of {chip.name}",
                  xlabel="arithmetic intensity (FLOPs per byte)", ylabel="FLOP/s", xlog=True, ylog=True,
                  xlim=(1e-2, 1e4))
    xs = geomspace(1e-2, 1e4, 50)
    chart.line(xs, [achievable_flops(x, chip, dtype) for x in xs], label="roofline")
    if intensity and flops:
        chart.points([intensity], [flops / row["roofline"]], label="roofline time", color="#ff7f0e")
        chart.points([intensity], [flops / measured], label="measured", color="#1f77b4")
    rows = [("measured (median of its executions)", fmt_time(measured)), ("roofline time", fmt_time(row["roofline"])),
            ("fraction of roofline reached", f"{row['fraction']:.1%}" if row["fraction"] is not None else "—"),
            ("FLOPs per device", fmt_flops(flops)), ("bytes read + written", fmt_bytes(nbytes)),
            ("intensity", f"{intensity:.2f} FLOPs/B" if intensity else "no FLOPs"),
            ("bandwidth achieved", fmt_rate(nbytes / measured, "B/s") if measured else "—"),
            ("opcode / scope", f"{row['opcode']} / {row['scope'] or '—'}"), ("executions in the trace", row["count"])]
    return chart, Table([{"quantity": q, "value": v} for q, v in rows], title=f"{op}: measured vs roofline")


@checks(top="count", trace=has("events", "table", what="a profiling Trace (profiling.capture)"))
def op_explorer(trace: Any, op: str | None = None, top: int = 30) -> Explorer:
    """Return an explorer over the `top` most expensive ops of a captured trace (opens on `op`, default the most
    expensive matmul): each shown on the roofline with its measured time."""
    names = [r["op"] for r in list(trace.table)[:top]]
    first = op or next((r["op"] for r in trace.table if r["kind"] == "matmul"), names[0])
    if first not in names:
        names.insert(0, first)
    names.remove(first)
    return explore(lambda op: op_view(trace, op), title="One op of the trace: roofline vs measured",
                   op=[first, *names])


@checks(B="size", T="size", D="size", F="size", cores="count", measured_ms="size")
def profile_example_view(B: float = 32, T: float = 1024, D: float = 8192, F: float = 32768, cores: int = 8,
                         chip: str = "v2", measured_ms: float = 96.0) -> Table:
    """Return the book's profile check for an MLP matmul bf16[B, T, D] x bf16[D, F] split over `cores` TPU cores
    (two per chip, as on a v2 or v3): FLOPs, the roofline time per core and the fraction a measured time reaches."""
    if chip not in ("v2", "v3"):
        raise ValueError(f"chip={chip!r}: this check counts two TensorCores per chip, true of 'v2' and 'v3' only")
    c = get_chip(chip)
    flops = 2 * B * T * D * F
    roof = estimate(flops / (cores / 2), 0, c).time
    rows = [("FLOPs, 2·B·T·D·F", fmt_flops(flops)), (f"roofline on {cores} cores of {c.name}", fmt_time(roof)),
            ("measured in the profile", fmt_time(measured_ms * 1e-3)),
            ("fraction of roofline", f"{roof / (measured_ms * 1e-3):.0%}")]
    return Table([{"quantity": q, "value": v} for q, v in rows], title="9.Ex1: how long should the matmul take?")


@checks(B="size", T="size", D="size", F="size", measured_ms="size")
def profile_example_explorer(B: float = 32, T: float = 1024, D: float = 8192, F: float = 32768,
                             measured_ms: float = 96.0) -> Explorer:
    """Return the explorer of 9.Ex1 (opens on the book's up-projection, 95.6 ms predicted, 96 ms profiled)."""
    return explore(profile_example_view, title="9.Ex1: a matmul's roofline against its profile",
                   B=Log(1, 1024, B), T=Log(128, 32768, T), D=Log(512, 65536, D), F=Log(512, 262144, F),
                   cores=[8, 16, 32, 64], chip=["v2", "v3"], measured_ms=Log(0.1, 1e4, measured_ms))


@checks(trace=has("events", "table", what="a profiling Trace (profiling.capture)"))
def breakdown_view(trace: Any, by: str = "scope") -> Table:
    """Return where the trace's time went, summed by `by` ('scope', 'kind', 'opcode'): time per step and device
    and its share."""
    totals = trace.breakdown(by)
    whole = sum(totals.values()) or 1.0
    return Table([{by: k or "(none)", "time per step": v, "share": v / whole} for k, v in totals.items()],
                 formats={"time per step": fmt_time, "share": "{:.0%}".format}, title=f"where the time went, by {by}")


@checks(trace=has("events", "table", what="a profiling Trace (profiling.capture)"))
def breakdown_explorer(trace: Any, by: str = "kind") -> Explorer:
    """Return an explorer of a trace's time summed by kind, scope or opcode (opens on `by`)."""
    options = [by, *[b for b in ("kind", "scope", "opcode") if b != by]]
    return explore(lambda by: breakdown_view(trace, by), title="Where the time went", by=options)


@checks(shard_mb="size", hops="count", measured_ms="size")
def collective_check_view(shard_mb: float = 134.2, chip: str = "v2", hops: int = 1,
                          measured_ms: float = 1.13) -> Table:
    """Return the book's check of a ReduceScatter seen in a profile: a shard of `shard_mb` MB (1e6 bytes) sent
    over `hops` hops of bidirectional ICI of `chip`, against the measured time."""
    c = get_chip(chip)
    t = estimate(0, shard_mb * 1e6 * hops, c, bandwidth=2 * c.ici_bandwidth, channel="ICI").time
    rows = [("shard", fmt_bytes(shard_mb * 1e6)), ("bidirectional ICI", fmt_rate(2 * c.ici_bandwidth, "B/s")),
            ("roofline time", fmt_time(t)), ("measured in the profile", fmt_time(measured_ms * 1e-3)),
            ("fraction of roofline", f"{t / (measured_ms * 1e-3):.0%}")]
    return Table([{"quantity": q, "value": v} for q, v in rows], title="9.Ex2: how long should the ReduceScatter take?")


@checks(shard_mb="size", measured_ms="size")
def collective_check_explorer(shard_mb: float = 134.2, chip: str = "v2", measured_ms: float = 1.13) -> Explorer:
    """Return the explorer of 9.Ex2 (opens on the book's 128 MiB shard over one v2 hop: 1.1 ms vs 1.13 ms)."""
    return explore(collective_check_view, title="9.Ex2: a collective's roofline against its profile",
                   shard_mb=Log(0.01, 1e4, shard_mb),
                   chip=[chip, *[c for c in ("v2", "v3", "v4", "v5e", "v5p") if c != chip]],
                   hops=(1, 8, 1, 1), measured_ms=Log(0.001, 1e3, measured_ms))


@checks(params_gb="size", seen_gb="size")
def memory_check_view(params_gb: float = 7.5, seen_gb: float = 16.0, chip: str = "v2") -> Table:
    """Return the reading of a memory profile: parameters (GB) out of the memory the profiler shows (GB), what is
    left for activations, gradients and optimizer state, and the chip's HBM for comparison."""
    c = get_chip(chip)
    rows = [("parameters", fmt_bytes(params_gb * 1e9)), ("memory the profiler shows", fmt_bytes(seen_gb * 1e9)),
            ("free for the step", fmt_bytes((seen_gb - params_gb) * 1e9)),
            ("share used by parameters", f"{params_gb / seen_gb:.0%}"),
            (f"{c.name} HBM (spec)", fmt_bytes(c.hbm_bytes))]
    return Table([{"quantity": q, "value": v} for q, v in rows], title="9.Ex3: reading a memory profile")


@checks(params_gb="size", seen_gb="size")
def memory_check_explorer(params_gb: float = 7.5, seen_gb: float = 16.0) -> Explorer:
    """Return the explorer of 9.Ex3 (opens on the book's 7.5 GB of parameters in 16 GB: 8.5 GB free)."""
    return explore(memory_check_view, title="9.Ex3: what a memory profile leaves free",
                   params_gb=(0.5, 32.0, 0.5, params_gb), seen_gb=(1.0, 96.0, 0.5, seen_gb),
                   chip=["v2", "v3", "v4", "v5e", "v5p"])
