"""Bad input anywhere in the public API gives a ValueError or KeyError that names the argument."""

import pytest

import scalebook as sb

BAD_CALLS = [
    (lambda: sb.get_chip("tpu v9"), KeyError, "chip='tpu v9'"),
    (lambda: sb.get_chip(42), KeyError, "chip=42"),
    (lambda: sb.roofline.matmul(-1, 8192, 8192, "v5e"), ValueError, "B=-1 must be a positive"),
    (lambda: sb.roofline.matmul(1024, 0, 8192, "v5e"), ValueError, "D=0 must be a positive"),
    (lambda: sb.roofline.matmul(1024, 8192, "big", "v5e"), ValueError, "F='big' must be a positive"),
    (lambda: sb.roofline.matmul(1024, 8192, 8192, "v5e", dtype="bf17"), ValueError, "dtype='bf17'"),
    (lambda: sb.roofline.matmul(1024, 8192, 8192, "v5e", dtype="fp8"), ValueError, "no published fp8 peak"),
    (lambda: sb.roofline.matmul(1024, 8192, 8192, "v2", bandwidth=-5), ValueError, "bandwidth=-5 must be"),
    (lambda: sb.roofline.estimate(-1, 10, "v5e"), ValueError, "flops=-1 must be"),
    (lambda: sb.roofline.estimate(1, 10, "v5e", assumed_mfu=1.5), ValueError, "assumed_mfu"),
    (lambda: sb.roofline.critical_intensity("v5e", bandwidth=0), ValueError, "bandwidth"),
    (lambda: sb.roofline.achievable_flops(-1, "v5e"), ValueError, "intensity"),
    (lambda: sb.roofline.einsum_flops("BD;DF", {"B": 1}), ValueError, "spec="),
    (lambda: sb.roofline.einsum_flops("BD,DF->BF", {"B": 1, "D": 2}), ValueError, r"missing dimension\(s\) \['F'\]"),
    (lambda: sb.roofline.einsum_flops("BD,DF->BX", {"B": 1, "D": 2, "F": 3}), ValueError, "appear in no input"),
    (lambda: sb.roofline.einsum("BD,DF->BF", {"B": 1, "D": 2, "F": 3}, "v5e", dtypes=["bf16"]), ValueError, "dtypes"),
    (lambda: sb.roofline.tiled_matmul(1000, 512, 512, 128, 128, 128, "v5e"), ValueError, "bm=128 must divide"),
    (lambda: sb.roofline.crossover_batch(8, 8, "v5e"), ValueError, "never becomes compute-bound"),
    (lambda: sb.roofline.dot(0, "v5e"), ValueError, "N=0 must be"),
    (lambda: sb.units.parse_size("12 parsecs"), ValueError, "size="),
    (lambda: sb.get_chip("v5e").replace(tflops=1), ValueError, "tflops"),
    (lambda: sb.expect(1, 1, rtol=-1), ValueError, "rtol"),
    (lambda: sb.check("nope", 1), KeyError, "qid='nope'"),
    (lambda: sb.setup(n_cpu_devices=0), ValueError, "n_cpu_devices"),
    # issue #16's examples, each once silent or generic
    (lambda: sb.all_gather(sb.TpuMesh("v5e", X=4, Y=4), "X", float("nan")), ValueError, "nbytes=nan"),
    (lambda: sb.training.layer_cost("dp", "abc", 8192, 28672, "v5p"), ValueError, "B='abc'"),
    (lambda: sb.training.plan("llama3-8b", "v5p", 256, 2**20, saves_per_layer=float("nan")), ValueError,
     "saves_per_layer=nan"),
    (lambda: sb.collectives.gpu_collective("all_gahter", sb.GpuCluster("h100"), None, 1e9), ValueError,
     "kind='all_gahter'.*did you mean 'all_gather'"),
    (lambda: sb.GpuCluster("h100", gpu_bandwidth=-450e9), ValueError, "gpu_bandwidth=-4"),
    (lambda: sb.GpuCluster("h100", node_egress=float("nan")), ValueError, "node_egress=nan"),
    (lambda: sb.training.mfu("llama3-8b", "v5p", -1, 2**20, 1.0), ValueError, "n_chips=-1"),
    (lambda: sb.inference.prefill("llama3-8b", "v5e", -1, 4096), ValueError, "n_chips=-1"),
    (lambda: sb.serving.Lengths(512, float("inf")), ValueError, "sigma=inf"),
    (lambda: sb.expect(1, 1000, rtol=float("inf")), ValueError, "rtol=inf"),
    (lambda: sb.collectives.fit_bandwidth([1e6, float("nan")], [1e-4, 2e-4]), ValueError, r"nbytes\[1\]=nan"),
    (lambda: sb.roofline.matmul(2.5, 8192, 8192, "v5e", dtype=3), ValueError, "dtype=3"),
    (lambda: sb.TpuMesh("v5e", X=2.5), ValueError, "X=2.5 must be a whole number"),
    (lambda: sb.TransformerConfig(2, 8, 8, 2, 2, 4, 10, gated="no"), ValueError, "gated='no'"),
]


@pytest.mark.parametrize("call, error, message", BAD_CALLS, ids=[m for _, _, m in BAD_CALLS])
def test_bad_call_raises_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()
