"""The live lab on this machine: emulated devices, calibration and a matmul sweep (JAX on the CPU)."""

import subprocess
import sys

import pytest

from scalebook.lab.runtime import Runtime

SETUP_PROBE = "import scalebook as sb; rt = sb.setup(); print(rt.device_count, rt.platform, rt.emulated)"


def test_setup_emulates_eight_cpu_devices_before_jax_starts():
    out = subprocess.run([sys.executable, "-c", SETUP_PROBE], capture_output=True, text=True, check=True).stdout
    lines = out.strip().splitlines()
    assert lines[0].startswith("scalebook on local: JAX") and "8 × cpu" in lines[0]
    assert lines[-1] == "8 cpu True"


def test_runtime_summary_names_the_chip():
    from scalebook import get_chip

    rt = Runtime("0.10", "tpu", 1, "TPU v5 lite", get_chip("v5e"), "colab")
    assert rt.summary() == "scalebook on colab: JAX 0.10, tpu, 1 × TPU v5 lite → specs of TPU v5e"
    assert "analytic model only" in Runtime(None, None, 0, "", None, "local").summary()


@pytest.mark.slow
def test_calibrate_and_sweep_on_this_device():
    from scalebook import bench

    chip = bench.calibrate(n=512, nbytes=2**24, repeats=3, progress=False)
    assert chip.fp32_flops > 1e9 and chip.hbm_bandwidth > 1e8
    assert "measured" in chip.source("hbm_bandwidth")
    sweep = bench.matmul_sweep([(1, 1024, 1024), (256, 1024, 1024)], chip=chip, repeats=3, progress=False)
    assert len(sweep.table) == 2 and sweep.median_ratio > 0
    assert sweep.table[0]["bound"] == "memory" and sweep.table[1]["bound"] == "compute"


def test_bench_rejects_bad_arguments():
    from scalebook import bench, get_chip

    with pytest.raises(ValueError, match="repeats"):
        bench.median_time(lambda: None, repeats=0)
    with pytest.raises(ValueError, match="shapes"):
        bench.matmul_sweep([], chip=get_chip("v5e"), dtype="fp32")
