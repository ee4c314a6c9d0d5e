"""Chapter 10's programs on 8 emulated CPU devices: each gives the plain result and the expected collectives."""

import numpy as np
import pytest

import scalebook as sb

sb.setup(quiet=True)  # must run before JAX starts: XLA reads the CPU device count once

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from scalebook import xla  # noqa: E402
from scalebook.lab import ch10_programs  # noqa: E402

if jax.device_count() < 8:
    pytest.skip(f"JAX started with {jax.device_count()} device(s) before sb.setup() could ask for 8; run "
                "`JAX_NUM_CPU_DEVICES=8 pytest tests/upper/test_sharded_ops.py`", allow_module_level=True)


@pytest.fixture(scope="module")
def ring_inputs():
    mesh = ch10_programs.make_mesh()
    x = ch10_programs.random_on_mesh(mesh, (64, 128), ("X", "Y"))
    w = ch10_programs.random_on_mesh(mesh, (128, 256), (None, "Y"), seed=1)
    return mesh, x, w


def test_sharding_modes_compile_to_the_expected_reductions() -> None:
    table = ch10_programs.sharding_modes(64, 128, 256)
    got = {(r["mode"], r["how"]): r["collectives"] for r in table}
    assert got[("Auto", "jit(x @ w)")] == "all_reduce"
    assert got[("Explicit", "out_sharding=P('X', None)")] == "all_reduce"
    assert got[("Explicit", "out_sharding=P('X', 'Y')")] in {"all_reduce", "reduce_scatter"}
    assert got[("Manual", "shard_map + psum")] == "all_reduce"
    assert got[("Manual", "shard_map + psum_scatter")] == "reduce_scatter"


def test_explicit_mode_carries_the_sharding_in_the_type() -> None:
    mesh = ch10_programs.make_mesh(mode="explicit")
    x = ch10_programs.random_on_mesh(mesh, (64, 128), ("X", "Y"))
    assert str(jax.typeof(x)) == "float32[64@X,128@Y]"


def test_collective_matmul_equals_the_plain_product(ring_inputs) -> None:
    mesh, x, w = ring_inputs
    out = jax.jit(lambda x, w: ch10_programs.collective_matmul(x, w, mesh))(x, w)
    np.testing.assert_allclose(out, x @ w, rtol=1e-5, atol=1e-4)
    assert out.sharding.spec == jax.P("X", "Y")


def test_bidirectional_collective_matmul_equals_the_plain_product(ring_inputs) -> None:
    mesh, x, w = ring_inputs
    out = jax.jit(lambda x, w: ch10_programs.bidirectional_collective_matmul(x, w, mesh))(x, w)
    np.testing.assert_allclose(out, x @ w, rtol=1e-5, atol=1e-4)


def test_collective_matmul_replaces_the_all_gather_by_permutes(ring_inputs) -> None:
    mesh, x, w = ring_inputs
    one = xla.collectives(jax.jit(lambda x, w: ch10_programs.collective_matmul(x, w, mesh)), x, w)
    two = xla.collectives(jax.jit(lambda x, w: ch10_programs.bidirectional_collective_matmul(x, w, mesh)), x, w)
    assert xla.kinds(one) == xla.kinds(two) == ["collective_permute"]
    # one ring shifts the whole [32, 32] chunk; the two rings each shift half of its rows
    assert max(c.nbytes for c in one) == 32 * 32 * 4
    assert max(c.nbytes for c in two) == 16 * 32 * 4


def test_time_collective_matmul_agrees_with_jit() -> None:
    table = ch10_programs.time_collective_matmul(64, 128, 256, repeats=1)
    assert len(table) == 3
    assert all(r["median time"] > 0 and r["max |error|"] < 1e-3 for r in table)


@pytest.fixture(scope="module")
def mlp_inputs():
    """x[B_X, D_Y], w_in[D, F_Y], w_out[F_Y, D] with B=64, D=128, F=256, weights scaled by 1/sqrt(fan-in)."""
    mesh = ch10_programs.make_mesh()
    x = ch10_programs.random_on_mesh(mesh, (64, 128), ("X", "Y"))
    w_in = ch10_programs.random_on_mesh(mesh, (128, 256), (None, "Y"), seed=1) / 128**0.5
    w_out = ch10_programs.random_on_mesh(mesh, (256, 128), ("Y", None), seed=2) / 256**0.5
    return mesh, x, w_in, w_out


def test_reduce_scatter_collective_matmul_equals_the_plain_product(mlp_inputs) -> None:
    mesh, _, w_in, w_out = mlp_inputs
    t = ch10_programs.random_on_mesh(mesh, (64, 256), ("X", "Y"), seed=3)
    fn = jax.jit(lambda t, w: ch10_programs.reduce_scatter_collective_matmul(t, w, mesh))
    out = fn(t, w_out)
    np.testing.assert_allclose(out, t @ w_out, rtol=1e-5, atol=1e-5)
    assert out.sharding.spec == jax.P("X", "Y")
    assert xla.kinds(xla.collectives(fn, t, w_out)) == ["collective_permute"]


def test_allreduce_collective_matmul_equals_the_plain_product(mlp_inputs) -> None:
    mesh, x, _, _ = mlp_inputs
    w = ch10_programs.random_on_mesh(mesh, (128, 256), ("Y", None), seed=4) / 128**0.5
    fn = jax.jit(lambda a, w: ch10_programs.allreduce_collective_matmul(a, w, mesh))
    out = fn(x, w)
    np.testing.assert_allclose(out, x @ w, rtol=1e-5, atol=1e-5)
    assert out.sharding.spec in (jax.P("X"), jax.P("X", None))
    assert xla.kinds(xla.collectives(fn, x, w)) == ["collective_permute"]


def test_overlapped_mlp_equals_the_plain_block(mlp_inputs) -> None:
    mesh, x, w_in, w_out = mlp_inputs
    fn = jax.jit(lambda x, wi, wo: ch10_programs.overlapped_mlp(x, wi, wo, mesh))
    out = fn(x, w_in, w_out)
    np.testing.assert_allclose(out, jax.nn.relu(x @ w_in) @ w_out, rtol=1e-5, atol=1e-5)
    assert out.sharding.spec == jax.P("X", "Y")
    assert xla.kinds(xla.collectives(fn, x, w_in, w_out)) == ["collective_permute"]


def test_reduce_scatter_collective_matmul_rejects_uneven_chunks() -> None:
    mesh = ch10_programs.make_mesh()
    t = ch10_programs.random_on_mesh(mesh, (64, 256), ("X", "Y"))
    w = ch10_programs.random_on_mesh(mesh, (256, 6), ("Y", None), seed=1)
    with pytest.raises(ValueError, match="chunks"):
        ch10_programs.reduce_scatter_collective_matmul(t, w, mesh)


def test_time_overlapped_mlp_agrees_with_jit() -> None:
    table = ch10_programs.time_overlapped_mlp(64, 128, 256, repeats=1)
    assert len(table) == 2
    assert all(r["median time"] > 0 and r["max |error|"] < 1e-4 for r in table)
    assert table[1]["collectives"] == "collective_permute"
    with pytest.raises(ValueError, match="split evenly"):
        ch10_programs.time_overlapped_mlp(63, 128, 256, repeats=1)


def test_the_three_moe_layers_agree() -> None:
    a, w, route = ch10_programs.moe_inputs(S=128, D=32, F=48, E=16)
    expected = jnp.einsum("sd,sdf->sf", a, w[route])
    for fn in (ch10_programs.moe_local, ch10_programs.moe_jit, ch10_programs.moe_shard_map):
        np.testing.assert_allclose(fn(a, w, route), expected, rtol=1e-5, atol=1e-5)


def test_moe_shard_map_exchanges_tokens_by_all_to_all() -> None:
    a, w, route = ch10_programs.moe_inputs(S=128, D=32, F=48, E=16)
    mesh = ch10_programs.make_mesh({"X": 8})
    colls = xla.collectives(lambda a, w, r: ch10_programs.moe_shard_map(a, w, r, mesh), a, w, route)
    assert "all_to_all" in xla.kinds(colls)


def test_make_mesh_rejects_an_unknown_mode() -> None:
    with pytest.raises(ValueError, match="mode"):
        ch10_programs.make_mesh(mode="manual")
