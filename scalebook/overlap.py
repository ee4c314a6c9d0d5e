"""Collective matmuls: a sharded matmul whose collective runs as a ring underneath the arithmetic.

`sharding.sharded_matmul` prices a plan two ways: overlapped, max(T_math, T_comms), a bound no schedule beats,
and sequential, T_math + T_comms, the collective first and the matmul after. A collective matmul (Wang et al.
2023; How To Scale Your Model, ch. 3 and 10) sits in between. Its ring has n devices, so the collective is n − 1
sends of one block each and the matmul splits into n blocks; each step multiplies the block a device already has
while the next block is on the wire:

    T = t_step + (n − 1) · max(t_step, t_send),   t_step = T_math / n,   t_send = max(T_comms / (n − 1), hop)

The first block has nothing to hide behind and every later step waits for the slower of its two clocks, so T
reaches the overlapped bound only when each step is compute-bound. `collective_matmul` builds that schedule from
a `ShardedMatmul` whose one collective is an AllGather (of an input, before the matmul) or a ReduceScatter (of the
output, after it) over one mesh axis.
"""

from __future__ import annotations

from dataclasses import dataclass

from .hardware.topology import TpuMesh
from .rings import overlapped_ring_time
from .sharding import ShardedMatmul, sharded_matmul
from .tables import Table
from .units import checks, fmt_time, is_a

__all__ = ["OVERLAPPED_KINDS", "CollectiveMatmul", "collective_matmul"]

OVERLAPPED_KINDS = ("all_gather", "reduce_scatter")  # the collectives a ring can hide under a matmul


@dataclass(frozen=True)
class CollectiveMatmul:
    """A `ShardedMatmul` whose collective runs as `steps` ring steps, each a block of matmul beside one send
    (seconds)."""

    plan: ShardedMatmul
    steps: int
    t_step: float
    t_send: float

    @property
    def kind(self) -> str:
        """The collective the ring replaces: 'all_gather' or 'reduce_scatter'."""
        return self.plan.collectives[0].kind

    @property
    def time(self) -> float:
        """Seconds of the collective matmul: the first block alone, then n − 1 steps at the slower clock."""
        return overlapped_ring_time(self.t_step, self.t_send, self.steps)

    @property
    def sequential(self) -> float:
        """Seconds with no overlap: the whole collective, then the whole matmul (the plan's `upper`)."""
        return self.plan.upper

    @property
    def bound(self) -> float:
        """Seconds if every byte hid perfectly: max(T_math, T_comms), the plan's `time`."""
        return self.plan.time

    @property
    def hidden(self) -> float:
        """Share of the collective's time that the ring hides under the matmul (0 to 1)."""
        t_comms = self.plan.t_comms
        return (self.sequential - self.time) / t_comms if t_comms else 1.0

    def schedule(self) -> list[tuple[str, int, float, float]]:
        """Return the ring's timeline: (lane 'compute' or 'link', step, start s, end s) for every block and send.

        AllGather: block k arrives after k sends and is passed on at once; its matmul starts when both it and the
        previous matmul are done. ReduceScatter: the blocks are multiplied back to back; partial sum k leaves when
        its block is done and sum k − 1 has arrived. Either way the last block ends at `time`."""
        rows, compute_end, link_end = [], 0.0, 0.0
        for k in range(self.steps):
            gather = self.kind == "all_gather"
            start = max(compute_end, link_end) if gather else compute_end
            compute_end = start + self.t_step
            rows.append(("compute", k, start, compute_end))
            if k < self.steps - 1:
                send = link_end if gather else max(compute_end, link_end)
                link_end = send + self.t_send
                rows.append(("link", k, send, link_end))
        return rows

    def table(self) -> Table:
        """The three times side by side, and the two clocks of one ring step."""
        rows = [("one ring step: matmul block", self.t_step), ("one ring step: send of one block", self.t_send),
                ("sequential: collective, then matmul", self.sequential),
                ("collective matmul (ring under the matmul)", self.time),
                ("bound: max(T_math, T_comms)", self.bound)]
        return Table([{"schedule": name, "time": t} for name, t in rows], formats={"time": fmt_time},
                     title=f"{self.plan.expr}: {self.steps} ring steps, {self.hidden:.0%} of the "
                           f"{self.kind} hidden")

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


@checks(mesh=is_a(TpuMesh), dtype="dtype")
def collective_matmul(expr: str, mesh: TpuMesh, dtype: str = "bf16", **sizes: int) -> CollectiveMatmul:
    """Return the collective-matmul schedule of `sharded_matmul(expr, mesh, dtype, **sizes)`.

    The cheapest plan must run exactly one collective, an AllGather or a ReduceScatter over one mesh axis, e.g.
    'A[I_X, J_Y] @ B[J, K_Y] -> C[I_X, K_Y]' (gather A's J over Y); the ring has that axis's devices."""
    plan = sharded_matmul(expr, mesh, dtype, **sizes)
    one = plan.collectives[0] if len(plan.collectives) == 1 else None
    if one is None or one.kind not in OVERLAPPED_KINDS or len(one.axes) != 1:
        found = ", ".join(f"{s.kind}_{''.join(s.axes)}" for s in plan.collectives) or "none"
        raise ValueError(f"expr={expr!r} plans {found}; a collective matmul needs exactly one AllGather or "
                         f"ReduceScatter over one mesh axis")
    n = mesh.axes[one.axes[0]]
    t_send = max(one.estimate.t_comms / (n - 1), mesh.hop_latency)
    return CollectiveMatmul(plan, n, plan.t_math / n, t_send)
