"""The sharding notation, local shapes and memory (ch. 3 pop quizzes), and sharded-matmul plans."""

import pytest

import scalebook as sb
from scalebook import TpuMesh
from scalebook.sharding import bytes_per_device, local_shape, parse_spec, partition_spec, total_bytes


def test_parse_the_books_notation():
    spec = parse_spec("A[I_XY, J]")
    assert spec.dims == (("I", ("X", "Y")), ("J", ()))
    assert str(parse_spec("C[I, K]{U_X}")) == "C[I, K]{U_X}"
    assert partition_spec("A[I_XY, J_Z]") == (("X", "Y"), "Z")


@pytest.mark.parametrize("text, message", [
    ("A[I_X, J_X]", "uses mesh axis X twice"),
    ("A[I_X, J]{U_X}", "uses mesh axis X twice"),
    ("A[I, I]", "names a dimension twice"),
    ("A(I, J)", "must look like"),
    ("A[I_x, J]", "dimension 'I_x'"),
])
def test_malformed_specs_say_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message):
        parse_spec(text)


def test_pq_a_local_shape_and_read_time():
    # 3.PQ-a: fp32[1024, 4096] as A[I_XY, J] on {X:8, Y:2} -> fp32[64, 4096] = 1 MiB per device;
    # reading it from an H100's HBM takes ~1e6 / 3.4e12 ~ 294 ns (book), 1 MiB / 3.35e12 ~ 313 ns (exact).
    mesh = TpuMesh("v5e", X=8, Y=2)
    sizes = {"I": 1024, "J": 4096}
    assert local_shape("A[I_XY, J]", mesh, sizes) == {"I": 64, "J": 4096}
    nbytes = bytes_per_device("A[I_XY, J]", mesh, sizes, "fp32")
    sb.expect(nbytes, sb.published("03_sharding.pq_a_bytes_per_device"))
    assert sb.roofline.estimate(0, nbytes, "h100").time == pytest.approx(313e-9, rel=0.01)


def test_pq_b_memory_per_device_and_across_the_mesh():
    # 3.PQ-b: int8[128, 2048] as A[I_XY, J] on {X:2, Y:8, Z:2}: 16,384 B per device, 512 KiB in total.
    mesh = TpuMesh("v5p", X=2, Y=8, Z=2)
    sizes = {"I": 128, "J": 2048}
    sb.expect(bytes_per_device("A[I_XY, J]", mesh, sizes, "int8"), sb.published("03_sharding.pq_b_bytes_per_device"))
    sb.expect(total_bytes("A[I_XY, J]", mesh, sizes, "int8"), sb.published("03_sharding.pq_b_total_bytes"))


def test_q1_replication_factor():
    # 3.Q1: A[I_X, J, K] on {X:4, Y:8, Z:2} holds Y·Z = 16 copies of the array across the chips.
    mesh = TpuMesh("v5p", X=4, Y=8, Z=2)
    sizes = {"I": 64, "J": 64, "K": 64}
    one_copy = 64**3 * 2
    assert total_bytes("A[I_X, J, K]", mesh, sizes) / one_copy == 16


def test_local_shape_errors_name_the_dimension():
    mesh = TpuMesh("v5e", X=4, Y=4)
    with pytest.raises(ValueError, match="dimension I=10 .* multiple of 4"):
        local_shape("A[I_X, J]", mesh, {"I": 10, "J": 8})
    with pytest.raises(ValueError, match="no size for dimension 'J'"):
        local_shape("A[I_X, J]", mesh, {"I": 8})
    with pytest.raises(ValueError, match="does not have"):
        local_shape("A[I_Z, J]", mesh, {"I": 8, "J": 8})


MESH = TpuMesh("v5p", X=4, Y=4, Z=4)
SIZES = {"I": 1024, "J": 4096, "K": 8192}


@pytest.mark.parametrize("expr, case, kinds", [
    ("A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", 1, []),
    ("A[I, J_X] @ B[J, K] -> C[I, K]", 2, ["all_gather"]),
    ("A[I, J_X] @ B[J_X, K] -> C[I, K]", 3, ["all_reduce"]),
    ("A[I, J_X] @ B[J_X, K] -> C[I_X, K]", 3, ["reduce_scatter"]),
    ("A[I_X, J] @ B[J, K_X] -> C[I_X, K]", 4, ["all_gather", "all_to_all"]),
])
def test_the_four_cases(expr, case, kinds):
    plan = sb.sharded_matmul(expr, MESH, **SIZES)
    assert plan.case == case and plan.kinds == kinds
    assert plan.time == pytest.approx(max(plan.t_math, plan.t_comms))
    assert plan.alternatives[0] == (plan.strategy, plan.time)
    assert all(t >= plan.time for _, t in plan.alternatives)


def test_case_three_comms_are_the_reduction_of_the_output():
    plan = sb.sharded_matmul("A[I, J_X] @ B[J_X, K] -> C[I, K]", MESH, **SIZES)
    (step,) = plan.collectives
    assert step.nbytes == 2 * 1024 * 8192
    assert step.estimate.time == pytest.approx(sb.all_reduce(MESH, "X", 2 * 1024 * 8192).time)
    assert plan.t_math == pytest.approx(2 * 1024 * 4096 * 8192 / 4 / 4.59e14)


def test_q4_gather_weights_or_reduce_outputs():
    # 3.Q4: X[B, D] · W[D_X, F]. Gathering the weights costs 2DF/W; multiplying locally and all-reducing the
    # output costs 4BF/W; with both comms-bound the reduce wins exactly when D > 2B.
    mesh = TpuMesh("v5p", X=4, Y=4, Z=4)
    expr = "A[B, D] @ W[D_X, F] -> C[B, F]"
    wide = sb.sharded_matmul(expr, mesh, B=512, D=4096, F=8192)
    narrow = sb.sharded_matmul(expr, mesh, B=4096, D=1024, F=8192)
    assert wide.kinds == ["all_reduce"] and narrow.kinds == ["all_gather"]


def test_plan_renders_and_lists_alternatives():
    plan = sb.sharded_matmul("A[I, J_X] @ B[J_X, K] -> C[I_X, K]", MESH, **SIZES)
    assert "reduce_scatter" in plan._repr_html_() and "case 3" in str(plan)
    assert len(plan.table()) == len(plan.alternatives) >= 2


@pytest.mark.parametrize("expr, message", [
    ("A[I, J] @ B[K, L] -> C[I, L]", "share exactly one"),
    ("A[I, J] @ B[J, K] -> C[I, J]", "free dimensions"),
    ("A[I, J] @ B[J, K]", "must look like"),
])
def test_bad_expressions(expr, message):
    with pytest.raises(ValueError, match=message):
        sb.sharded_matmul(expr, MESH, **SIZES)


def test_q9_gather_first_or_scatter_after_costs_in_the_ratio_M_over_K():
    # 3.Q9: A[N, M_X] @ B[M, K] with a sharded output: gathering A moves N·M, multiplying locally and
    # reduce-scattering the output moves N·K, so the comms differ by M/K; the planner picks the smaller.
    N, M, K = 2048, 16384, 4096
    mesh = TpuMesh("v5p", X=4, Y=4, Z=4)
    gather = sb.all_gather(mesh, "X", 2 * N * M).time
    scatter = sb.reduce_scatter(mesh, "X", 2 * N * K).time
    assert gather / scatter == pytest.approx(M / K)
    plan = sb.sharded_matmul("A[N, M_X] @ B[M, K] -> C[N_X, K]", mesh, N=N, M=M, K=K)
    assert plan.kinds == ["reduce_scatter"]
