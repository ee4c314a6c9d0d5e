"""The paper plan and the compiler agree: for each sharded-matmul case where chapter 3 says they do, the kinds
of collectives in `sharded_matmul`'s ShardedMatmul equal those XLA emits on 8 emulated devices (mesh X=4, Y=2)."""

import pytest

import scalebook as sb

sb.setup(quiet=True)  # before JAX starts

import jax  # noqa: E402

from scalebook import xla  # noqa: E402

if jax.device_count() < 8:
    pytest.skip("needs 8 devices: run with JAX_NUM_CPU_DEVICES=8", allow_module_level=True)

AXES = {"X": 4, "Y": 2}
MESH = sb.TpuMesh("v5e", **AXES)
SIZES = {"I": 512, "J": 1024, "K": 2048}

AGREE = [
    "A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]",  # case 1: no communication
    "A[I, J_X] @ B[J, K] -> C[I, K]",  # case 2: gather the split input first
    "A[I_X, J] @ B[J, K] -> C[I, K]",  # gather the output
    "A[I, J_X] @ B[J_X, K] -> C[I, K]",  # case 3: partial sums, all-reduce
]


@pytest.mark.parametrize("expr", AGREE)
def test_plan_kinds_match_the_compiled_hlo(expr):
    plan = sb.sharded_matmul(expr, MESH, **SIZES)
    emitted = xla.matmul_collectives(expr, AXES, **SIZES)
    assert xla.kinds(emitted) == plan.kinds
    for coll, step in zip(emitted, plan.collectives):
        assert coll.group_size == MESH.size(step.axes)


def test_cpu_xla_reduces_with_all_reduce_where_the_plan_scatters():
    # The documented difference: XLA's CPU backend all-reduces and slices instead of reduce-scattering.
    expr = "A[I, J_X] @ B[J_X, K] -> C[I_X, K]"
    assert sb.sharded_matmul(expr, MESH, **SIZES).kinds == ["reduce_scatter"]
    assert xla.kinds(xla.matmul_collectives(expr, AXES, **SIZES)) == ["all_reduce"]


def test_matmul_collectives_rejects_unknown_axes():
    with pytest.raises(ValueError, match="does not define"):
        xla.matmul_collectives("A[I_Z, J] @ B[J, K] -> C[I, K]", AXES, **SIZES)
