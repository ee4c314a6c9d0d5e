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
    (lambda: sb.roofline.estimate(1, 10, "v5e", efficiency=1.5), ValueError, "efficiency"),
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
]


@pytest.mark.parametrize("call, error, message", BAD_CALLS, ids=[m for _, _, m in BAD_CALLS])
def test_bad_call_raises_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()
