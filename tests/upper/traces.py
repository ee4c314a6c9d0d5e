"""A profile built by hand, with no JAX: the tests of the profile's figures and explorers and the fuzz's recipes
read it. One program (a matmul fusion over two devices, then an all-reduce of its result), run twice."""

from __future__ import annotations

import scalebook as sb
from scalebook import profiling

HLO = """HloModule jit_f, num_partitions=2

%fused_computation (p0: f32[8,16], p1: f32[16,4]) -> f32[8,4] {
  %p0 = f32[8,16]{1,0} parameter(0)
  %p1 = f32[16,4]{1,0} parameter(1)
  ROOT %dot.1 = f32[8,4]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY %main (x: f32[8,16], w: f32[16,4]) -> f32[8,4] {
  %x = f32[8,16]{1,0} parameter(0), sharding={devices=[1,2]<=[2]}, metadata={op_name="x"}
  %w = f32[16,4]{1,0} parameter(1), sharding={devices=[2,1]<=[2]}, metadata={op_name="w"}
  %fusion.1 = f32[8,4]{1,0} fusion(%x, %w), calls=%fused_computation, metadata={op_name="jit(f)/jvp(l0/ffw)/dot"}
  ROOT %all-reduce.1 = f32[8,4]{1,0} all-reduce(%fusion.1), metadata={op_name="jit(f)/transpose(jvp(l0/ffw))/add"}
}
"""


def sample_trace() -> profiling.Trace:
    """Both runs of HLO's program on two devices, timed by hand: its fusion, then its all-reduce, 10 us each."""
    events = [profiling.OpEvent(name, device, start, 1e-5, run) for run in ("a", "b") for device in (0, 1)
              for name, start in (("fusion.1", 0.0), ("all-reduce.1", 2e-5))]
    chip = sb.get_chip("v5e")
    return profiling.Trace(tuple(events), HLO, profiling.op_table(events, HLO, chip), chip)
