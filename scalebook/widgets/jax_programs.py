"""Explorers for chapter 10's exercises: what a per-shard program communicates (10.Q1), what top-k expert
routing sends (10.Q2), and how much of a collective matmul's communication hides under its arithmetic (10.Q3,
10.Q4 and section 10.4). All analytic (no compilation), so they answer in milliseconds.
"""

from __future__ import annotations

from ..hardware.chips import get_chip
from ..rings import overlapped_ring_time
from ..roofline import estimate
from ..tables import Table
from ..units import checks, fmt_bytes, fmt_time
from .core import Explorer, Log, explore

__all__ = ["shard_program_view", "shard_program_explorer", "routing_view", "routing_explorer",
           "collective_matmul_view", "collective_matmul_explorer"]

SHARD_PROGRAMS = ("per-shard mean", "roll within shards", "global mean", "roll across shards")


@checks(rows="count", cols="count", X="count", Y="count", bytes_per_value="count")
def shard_program_view(program: str = "per-shard mean", rows: int = 8, cols: int = 16, X: int = 2, Y: int = 4,
                       bytes_per_value: int = 4) -> Table:
    """Return what one device holds and sends for a program on an array [rows, cols] split [rows_X, cols_Y]:
    per-shard programs send nothing; a global mean AllReduces one value; a roll across shards sends one row of
    each block to the next device along X."""
    if program not in SHARD_PROGRAMS:
        raise ValueError(f"program={program!r}; allowed: {SHARD_PROGRAMS}")
    if rows % X or cols % Y:
        raise ValueError(f"rows={rows} must split over X={X} and cols={cols} over Y={Y}")
    block = (rows // X, cols // Y)
    sends = {"per-shard mean": ("none", 0), "roll within shards": ("none", 0),
             "global mean": (f"AllReduce over X·Y = {X * Y} devices", bytes_per_value),
             "roll across shards": ("collective permute along X (one row per block)", block[1] * bytes_per_value)}
    what, nbytes = sends[program]
    rows_out = [("block held by each device", f"[{block[0]}, {block[1]}]"),
                ("bytes held per device", fmt_bytes(block[0] * block[1] * bytes_per_value)),
                ("communication", what), ("bytes each device sends", fmt_bytes(nbytes))]
    return Table([{"quantity": q, "value": v} for q, v in rows_out], title=f"10.Q1: {program} on a {X}×{Y} mesh")


def shard_program_explorer(program: str = "per-shard mean") -> Explorer:
    """Return the 10.Q1 explorer (opens on the per-shard mean of the 8 x 16 array on a 2 x 4 mesh: no
    communication)."""
    return explore(shard_program_view, title="10.Q1: what does a per-shard program send?",
                   program=[program, *[p for p in SHARD_PROGRAMS if p != program]], rows=[8, 16, 64, 1024],
                   cols=[16, 32, 128, 4096], X=[2, 1, 4, 8], Y=[4, 1, 2, 8])


@checks(S="count", D="count", E="count", k="count", devices="count", bytes_per_value="count")
def routing_view(S: int = 256, D: int = 64, E: int = 16, k: int = 2, devices: int = 8,
                 bytes_per_value: int = 4) -> Table:
    """Return what top-k expert parallelism moves, per device: its tokens, the rows it sends (k per token, the
    share bound for other devices), the AllToAll bytes each way, and the padding of the static-capacity
    buffers of the `shard_map` program (capacity = all of a device's rows for every destination)."""
    if S % devices or E % devices or not 1 <= k <= E:
        raise ValueError(f"need devices | S, devices | E and 1 <= k <= E; got S={S}, E={E}, k={k}, "
                         f"devices={devices}")
    tokens = S // devices
    sent_rows = tokens * k
    leaving = sent_rows * (devices - 1) / devices
    buffer_rows = devices * sent_rows
    rows = [("tokens per device", f"{tokens}"), ("rows per device (k per token)", f"{sent_rows}"),
            ("rows expected to leave the device", f"{leaving:.0f} ((N−1)/N of them)"),
            ("AllToAll bytes each way, useful", fmt_bytes(leaving * D * bytes_per_value)),
            ("rows in the static buffers (no drops)", f"{buffer_rows}"),
            ("buffer rows that are padding", f"{1 - sent_rows / buffer_rows:.0%}"),
            ("experts per device", f"{E // devices}")]
    return Table([{"quantity": q, "value": v} for q, v in rows], title=f"10.Q2: top-{k} routing, {E} experts "
                                                                       f"on {devices} devices")


@checks(k="count")
def routing_explorer(k: int = 2) -> Explorer:
    """Return the 10.Q2 explorer (opens on the chapter's toy: 256 tokens, 16 experts, top-2, 8 devices)."""
    return explore(routing_view, title="10.Q2: what top-k routing sends", unfit=("need devices | S",),
                   S=[256, 1024, 8192, 65536],
                   D=[64, 1024, 8192], E=[16, 8, 64, 256], k=[k, *[v for v in (1, 2, 4, 8) if v != k]],
                   devices=[8, 4, 16, 64])


@checks(B="count", D="count", F="count", X="count", Y="count", bidirectional="flag")
def collective_matmul_view(B: int = 1024, D: int = 2048, F: int = 8192, X: int = 2, Y: int = 4,
                           chip: str = "v5e", bidirectional: bool = False) -> Table:
    """Return the times of x[B_X, D_Y] · w[D, F_Y] on an X × Y slice: jit (AllGather x over Y, then one matmul)
    against a collective matmul (Y steps, each a [B/X, D/Y] x [D/Y, F/Y] matmul beside a permute of one
    [B/X, D/Y] bf16 chunk; `bidirectional` sends half each way). Overlapped time: the first permute-free step,
    then max(matmul, permute) for the other Y - 1 steps."""
    c = get_chip(chip)
    chunk = 2 * (B / X) * (D / Y)
    link = c.ici_bandwidth * (2 if bidirectional else 1)
    t_step = estimate(2 * (B / X) * (D / Y) * (F / Y), 0, c).time
    t_send = chunk / link
    t_gather = (Y - 1) * chunk / c.ici_bandwidth / (2 if bidirectional else 1)
    jit_time = t_gather + Y * t_step
    overlapped = overlapped_ring_time(t_step, t_send, Y)
    rows = [("matmul per step", fmt_time(t_step)), ("permute per step", fmt_time(t_send)),
            ("jit: AllGather then matmul", fmt_time(jit_time)), ("collective matmul", fmt_time(overlapped)),
            ("no communication (floor)", fmt_time(Y * t_step)),
            ("share of the AllGather hidden", f"{(jit_time - overlapped) / t_gather:.0%}" if t_gather else "—"),
            ("bound per step", "compute" if t_step >= t_send else "communication")]
    return Table([{"quantity": q, "value": v} for q, v in rows],
                 title=f"collective matmul on {X}×{Y} {c.name}" + (" (bidirectional)" if bidirectional else ""))


@checks(B="count", D="count", F="count", bidirectional="flag")
def collective_matmul_explorer(B: int = 1024, D: int = 2048, F: int = 8192, bidirectional: bool = False,
                               title: str = "A collective matmul: what overlaps") -> Explorer:
    """Return the explorer of section 10.4 and 10.Q3/10.Q4 (opens on the book's B=1024, D=2048, F=8192 on a
    v5e 2x4; `bidirectional` opens on the two-way ring of 10.Q4)."""
    return explore(collective_matmul_view, title=title, B=Log(64, 65536, B), D=Log(256, 65536, D),
                   F=Log(256, 262144, F), X=[2, 1, 4], Y=[4, 2, 8, 16], chip=["v5e", "v5p", "v6e", "v4"],
                   bidirectional=[bidirectional, not bidirectional])
