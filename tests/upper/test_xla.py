"""The live lab's compiler view: real functions compiled on 8 emulated CPU devices, their collectives read back.

Every case compiles in this test run; the expected bytes are worked out by hand from the shapes below.
The mesh is X=4 by Y=2 over devices 0..7, so X groups are {0,2,4,6},{1,3,5,7} and Y groups {0,1},{2,3},...
"""

from functools import partial

import numpy as np
import pytest

import scalebook as sb

sb.setup(quiet=True)  # must run before JAX starts: XLA reads the CPU device count once

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from scalebook import xla  # noqa: E402

if jax.device_count() < 8:
    pytest.skip(f"JAX started with {jax.device_count()} device(s) before sb.setup() could ask for 8; run "
                "`JAX_NUM_CPU_DEVICES=8 pytest tests/upper/test_xla.py`", allow_module_level=True)

MESH = jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("X", "Y"))
F32 = 4  # bytes per float32 element


def spec(*axes):
    return NamedSharding(MESH, P(*axes))


def arg(shape, *axes, dtype=jnp.float32):
    """An abstract argument of `shape`, sharded over the mesh as P(*axes)."""
    return jax.ShapeDtypeStruct(shape, dtype, sharding=spec(*axes))


def only(colls):
    assert len(colls) == 1, colls
    return colls[0]


def test_gathering_a_row_sharded_array_is_one_all_gather_over_x():
    colls = xla.collectives(jax.jit(lambda a: 2 * a, out_shardings=spec()), arg((256, 1024), "X", None))
    c = only(colls)
    assert (c.kind, c.group_size, c.groups, c.dimensions) == ("all_gather", 4, 2, (0,))
    assert c.nbytes == 256 * 1024 * F32  # every device ends with the whole f32[256,1024]: 1 MiB


def test_a_collective_over_one_mesh_axis_has_groups_across_the_other():
    over_y = only(xla.collectives(jax.jit(lambda a: 2 * a, out_shardings=spec()), arg((256, 1024), "Y", None)))
    assert (over_y.kind, over_y.group_size, over_y.groups) == ("all_gather", 2, 4)

    @partial(jax.shard_map, mesh=MESH, in_specs=P("X", "Y"), out_specs=(P("X", "Y"), P("X", "Y")))
    def sums(a):
        return jax.lax.psum(a, "Y"), jax.lax.psum(2 * a, "X")

    colls = xla.collectives(sums, arg((256, 1024), "X", "Y"))
    assert sorted((c.kind, c.group_size, c.groups) for c in colls) == [("all_reduce", 2, 4), ("all_reduce", 4, 2)]
    assert all(c.nbytes == 64 * 512 * F32 for c in colls)  # the local block f32[256/4, 1024/2]: 128 KiB


def test_contracting_a_sharded_dimension_into_a_replicated_output_is_an_all_reduce():
    matmul = jax.jit(lambda a, b: a @ b, out_shardings=spec())
    c = only(xla.collectives(matmul, arg((128, 256), None, "X"), arg((256, 64), "X", None)))
    assert (c.kind, c.group_size, c.groups) == ("all_reduce", 4, 2)
    assert c.nbytes == 128 * 64 * F32  # each device sums a full partial product f32[128,64]: 32 KiB


def test_contracting_into_a_sharded_output_reduces_over_x():
    # TPU and GPU emit a reduce-scatter here; XLA's CPU pipeline has no reduce-scatter creator and emits an
    # all-reduce followed by a local slice, so either kind is what the compiler "really did".
    matmul = jax.jit(lambda a, b: a @ b, out_shardings=spec("X", None))
    c = only(xla.collectives(matmul, arg((128, 256), None, "X"), arg((256, 64), "X", None)))
    assert c.kind in ("reduce_scatter", "all_reduce") and (c.group_size, c.groups) == (4, 2)


def test_psum_scatter_is_a_reduce_scatter():
    @partial(jax.shard_map, mesh=MESH, in_specs=P(None, "X"), out_specs=P("X", None))
    def scatter(a):
        return jax.lax.psum_scatter(a, "X", scatter_dimension=0, tiled=True)

    c = only(xla.collectives(scatter, arg((256, 1024), None, "X")))
    assert (c.kind, c.group_size, c.groups, c.dimensions) == ("reduce_scatter", 4, 2, (0,))
    assert c.nbytes == (256 // 4) * (1024 // 4) * F32  # local f32[256,256] summed, 1/4 of its rows kept: 64 KiB


def test_moving_the_sharded_dimension_is_an_all_to_all():
    reshard = jax.jit(lambda a: a, out_shardings=spec(None, "X"))
    c = only(xla.collectives(reshard, arg((256, 1024), "X", None)))
    assert (c.kind, c.group_size, c.groups) == ("all_to_all", 4, 2)
    assert c.nbytes == (256 // 4) * 1024 * F32  # each device exchanges its whole shard f32[64,1024]: 256 KiB


def test_ppermute_around_x_is_a_collective_permute_in_rings_of_four():
    @partial(jax.shard_map, mesh=MESH, in_specs=P("X"), out_specs=P("X"))
    def shift(a):
        return jax.lax.ppermute(a, "X", [(i, (i + 1) % 4) for i in range(4)])

    c = only(xla.collectives(shift, arg((256, 1024), "X")))
    assert (c.kind, c.group_size, c.groups) == ("collective_permute", 4, 2)
    assert c.nbytes == (256 // 4) * 1024 * F32  # one f32[64,1024] shard sent to the next device: 256 KiB


def test_matmul_cost_analysis_counts_2mkn_flops():
    M, K, N = 128, 256, 64
    cost = xla.cost_analysis(jnp.matmul, jnp.ones((M, K)), jnp.ones((K, N)))
    assert cost["flops"] == pytest.approx(2 * M * K * N, rel=0.01)
    assert cost["bytes accessed"] == pytest.approx((M * K + K * N + M * N) * F32, rel=0.01)  # read A, B; write C


def test_elementwise_work_on_a_sharded_array_needs_no_collectives():
    assert xla.collectives(jax.jit(jnp.sin, out_shardings=spec("X", "Y")), arg((256, 1024), "X", "Y")) == []


def test_one_compilation_serves_text_costs_and_collectives():
    compiled = xla.compiled(jax.jit(lambda a: 2 * a, out_shardings=spec()), arg((256, 1024), "X", None))
    assert xla.compiled(compiled) is compiled
    assert "all-gather" in xla.hlo_text(compiled)
    assert xla.cost_analysis(compiled)["flops"] > 0
    table = xla.summarize(xla.collectives(compiled))
    assert table.column("kind") == ["all_gather"] and "1.05 MB" in str(table)
    assert xla.kinds(xla.collectives(compiled) * 2) == ["all_gather"]


# The forms below are what TPU and GPU backends and older XLA print; this JAX's CPU backend prints the
# mesh and list forms exercised above, so these few lines are the only pasted HLO in this file.
ACCELERATOR_FORMS = """HloModule m, num_partitions=8
  %ags = (bf16[64,1024]{1,0:T(8,128)(2,1)}, bf16[256,1024]{1,0:T(8,128)(2,1)}) all-gather-start(%p), \
replica_groups=[2,4]<=[4,2]T(1,0), dimensions={0}
  %agd = bf16[256,1024]{1,0} all-gather-done(%ags)
  %ars = f32[1024]{0} all-reduce-start(%x), replica_groups={}, to_apply=%add
  %ard = f32[1024]{0} all-reduce-done(%ars)
  %cps = (f32[4096]{0}, f32[4096]{0}, u32[], u32[]) collective-permute-start(%y), source_target_pairs={{0,1},{1,0}}
  %rs = bf16[64,4]{1,0} reduce-scatter(%w), replica_groups=mesh['a'=2,'b'=4] {'b':(1)2}, dimensions={0}
"""


def test_async_iota_and_sub_axis_forms_parse_once_each():
    found = [(c.kind, c.group_size, c.groups, c.nbytes) for c in sb.hlo.collectives(ACCELERATOR_FORMS)]
    assert found == [
        ("all_gather", 4, 2, 256 * 1024 * 2),  # the result half of the start tuple, bf16[256,1024]
        ("all_reduce", 8, 1, 1024 * F32),  # empty replica groups: all num_partitions devices
        ("collective_permute", 2, 1, 4096 * F32),  # the received buffer, not the u32 sync flags
        ("reduce_scatter", 2, 4, 64 * 4 * 2),  # sub-axis b:(1)2 of size 2, so 8 / 2 = 4 groups
    ]


@pytest.mark.parametrize("fn", [None, 3, "matmul"])
def test_something_not_callable_is_refused_by_name(fn):
    with pytest.raises(ValueError, match="fn must be a function"):
        xla.collectives(fn)
