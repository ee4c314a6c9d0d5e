"""The profiling helpers: HLO lines compiled in this run read back, a trace captured in this run, tiling padding.

The MLP below is sharded 8 ways over the hidden dimension F on 8 emulated CPU devices, so each device holds
w1[D, F/8] and w2[F/8, D], does two matmuls of 2·B·D·(F/8) FLOPs and ends with one all-reduce of f32[B, D].
"""

import pytest

import scalebook as sb

sb.setup(quiet=True)  # must run before JAX starts: XLA reads the CPU device count once

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from scalebook import hlo, profiling  # noqa: E402

B, D, F = 64, 128, 512


def _mlp(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


@pytest.fixture(scope="module")
def mlp_args():
    mesh = sb.runtime.device_mesh({"X": 8})
    put = lambda a, spec: jax.device_put(a, NamedSharding(mesh, spec))  # noqa: E731
    return (put(jnp.ones((B, D)), P()), put(jnp.ones((D, F)), P(None, "X")), put(jnp.ones((F, D)), P("X", None)))


@pytest.fixture(scope="module")
def cpu_chip():
    return sb.bench.calibrate(n=256, nbytes=2**22, repeats=2, progress=False)


def test_parse_op_reads_every_line_of_real_compiled_hlo(mlp_args):
    ops = hlo.parse_hlo(sb.xla.hlo_text(_mlp, *mlp_args))["ENTRY"]
    params = [op for op in ops if op.opcode == "parameter"]
    assert [op.shape for op in params] == [(B, D), (D, F // 8), (F // 8, D)]
    assert all(op.dtype == "f32" and op.layout == (1, 0) and op.memory_space == 0 for op in params)
    reduce = next(op for op in ops if op.opcode == "all-reduce")
    assert reduce.shape == (B, D) and reduce.nbytes == B * D * 4 and len(reduce.operands) == 1


def test_op_costs_count_the_per_device_matmul_flops(mlp_args):
    costs = profiling.op_costs(sb.xla.hlo_text(_mlp, *mlp_args))
    flops = sorted(c["flops"] for c in costs.values())
    assert flops[-2:] == [2 * B * D * (F // 8)] * 2


def test_parse_op_reads_the_books_tpu_layouts():
    line = ("%fusion.3 = bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)} fusion(bf16[32,32,8192]{2,1,0:T(8,128)(2,1)S(1)} "
            "%fusion.32), kind=kCustom, calls=%all-reduce-scatter.3")
    op = hlo.parse_op(line)
    assert (op.name, op.opcode, op.dtype, op.shape) == ("fusion.3", "fusion", "bf16", (32, 32, 4096))
    assert op.layout == (2, 1, 0) and op.tiling == ((8, 128), (2, 1)) and op.tile == "T(8,128)(2,1)"
    assert op.memory_space == 1 and op.operands == ("fusion.32",)
    assert hlo.parse_op("%p = f32[3,5]{1,0:T(2,2)} parameter(0)").memory_space == 0


@pytest.mark.parametrize("bad", ["", "ENTRY %main {", "%x = f32[3 parameter(0)", 42])
def test_parse_op_rejects_what_is_not_an_instruction(bad):
    with pytest.raises(ValueError):
        hlo.parse_op(bad)


def test_padding_on_the_books_examples():
    f32 = hlo.padding((3, 5), "T(2,2)", "f32")
    assert f32["padded_shape"] == (4, 6) and f32["logical"] == 15
    sb.expect(f32["stored"], sb.published("09_profiling.f32_tiling_stored"))
    assert f32["waste"] == pytest.approx(0.375)
    sb.expect(f32["overhead"], sb.published("09_profiling.f32_tiling_overhead"))
    bf16 = hlo.padding((4, 8), "T(2,4)(2,1)", "bf16")
    assert (bf16["stored"], bf16["waste"], bf16["stored_bytes"]) == (32, 0.0, 64)
    small = hlo.padding((3, 5), ((8, 128), (2, 1)), "bf16")
    assert small["stored"] == 8 * 128 and small["waste"] == pytest.approx(1 - 15 / 1024)


@pytest.mark.parametrize("shape, tile", [((3, 5), "(2,2)"), ((0, 5), "T(2,2)"), ((5,), "T(2,2)"), ((3, 5), "T(0,2)")])
def test_padding_rejects_bad_input(shape, tile):
    with pytest.raises(ValueError):
        hlo.padding(shape, tile)


def test_capture_reads_a_real_trace_and_sets_ops_beside_their_roofline(mlp_args, cpu_chip):
    trace = profiling.capture(_mlp, *mlp_args, repeats=2, chip=cpu_chip)
    assert {e.device for e in trace.events} == set(range(8))
    rows = {row["opcode"]: row for row in trace.table}
    assert rows["all-reduce"]["count"] == 2 * 8
    matmuls = [row for row in trace.table if row["flops"] == 2 * B * D * (F // 8)]
    assert len(matmuls) == 2
    for row in trace.table:
        assert row["measured"] > 0 and row["roofline"] > 0
        assert row["fraction"] == pytest.approx(row["roofline"] / row["measured"])
    fig = sb.plots.profile.timeline(trace)
    assert fig.axes[0].get_title() and fig.axes[0].get_xlabel().endswith("(ms)")


def test_capture_and_timeline_reject_bad_input(mlp_args):
    with pytest.raises(ValueError, match="fn"):
        profiling.capture("not a function", *mlp_args)
    with pytest.raises(ValueError, match="repeats"):
        profiling.capture(_mlp, *mlp_args, repeats=0)
    with pytest.raises(ValueError, match="trace"):
        sb.plots.profile.timeline("not a trace")
    with pytest.raises(ValueError, match="path"):
        profiling.read_trace("/nonexistent/trace.json.gz")
