"""The command line a practitioner reaches for (issue #33): the questions they ask are answered with the Python API's
numbers, each answer says whether it is a bound (ideal) or calibrated, and GPU output speaks of GPUs and NVLink."""

import re
import shlex
from pathlib import Path

import pytest

import scalebook as sb
from scalebook import cli
from scalebook.units import fmt_time

LLAMA_256_H100 = ["plan", "llama3-70b", "h100", "256", "--tokens", "4Mi", "--seq", "8192", "--efficiency",
                  "calibrated"]


def run(argv: list[str], capsys) -> str:
    status = cli.main(argv)
    out, err = capsys.readouterr()
    assert status == 0, err
    return out


def test_llama3_70b_on_256_h100_is_planned_as_the_python_api_plans_it(capsys):
    """'Llama 3 70B on 256 H100, 4M tokens, 8k': the command line finds the layout `training.plan` finds."""
    out = run(LLAMA_256_H100, capsys)
    p = sb.training.plan("llama3-70b", sb.GpuCluster("h100", gpus=256), 256, 4 * 2**20, seq_len=8192,
                         efficiency="calibrated")
    assert f"MFU {p.mfu:.1%}" in out and str(p).replace(" per chip", " per GPU") in out
    assert "numbers: calibrated" in out


def test_fixed_degrees_recompute_and_microbatch_reach_the_planner(capsys):
    out = run([*LLAMA_256_H100, "--tp", "8", "--pp", "4", "--recompute", "full", "--microbatch", "16Ki"], capsys)
    p = sb.training.plan("llama3-70b", sb.GpuCluster("h100", gpus=256), 256, 4 * 2**20, seq_len=8192,
                         efficiency="calibrated", tp=8, pp=4, recompute="full", microbatch_tokens=16 * 2**10)
    assert (p.tp, p.pp) == (8, 4) and str(p).replace(" per chip", " per GPU") in out


def test_the_positional_and_the_option_forms_agree(capsys):
    options = run(["plan", "--model", "llama3-70b", "--chip", "h100", "--chips", "256", "--batch", "4Mi", "--seq",
                   "8192", "--efficiency", "calibrated"], capsys)
    assert options == run(LLAMA_256_H100, capsys)


@pytest.mark.parametrize("efficiency", ["ideal", "calibrated"])
def test_decode_latency_of_llama3_70b_on_8_h100_at_batch_1(capsys, efficiency):
    """'Decode latency of Llama 3 70B on 8 H100 at batch 1': `inference.decode_step`'s time, and `prefill`'s for
    the first token."""
    out = run(["serve", "llama3-70b", "h100", "--chips", "8", "--batch", "1", "--context", "8192",
               "--efficiency", efficiency], capsys)
    step = sb.inference.decode_step("llama3-70b", "h100", 8, 1, 8192, efficiency=efficiency)
    first = sb.inference.prefill("llama3-70b", "h100", 8, 8192, efficiency=efficiency)
    assert f"decode step         {fmt_time(step.time)} per token" in out
    assert f"prefill             {fmt_time(first.time)} for one 8192-token prompt" in out
    assert f"numbers: {efficiency}" in out and "batch               1 sequence of 8192 tokens" in out


def test_calibrated_decode_prices_the_nvlink_collectives(capsys):
    out = run(["serve", "llama3-70b", "h100", "--chips", "8", "--batch", "1", "--efficiency", "calibrated"], capsys)
    step = sb.inference.decode_step("llama3-70b", "h100", 8, 1, 8192, efficiency="calibrated")
    assert step.t_ici > 0 and f"  TP over NVLink    {fmt_time(step.t_ici)}" in out
    across = run(["serve", "llama3-70b", "h100", "--chips", "16", "--batch", "1", "--efficiency", "calibrated"], capsys)
    assert "  TP over network   " in across  # 16 GPUs span two NVLink nodes


GPU_RUNS = [
    ["serve", "--model", "llama3-8b", "--chip", "h100"],
    ["serve", "--model", "llama3-70b", "--chip", "h100"],
    ["serve", "llama3-70b", "b200", "--chips", "16", "--batch", "4", "--efficiency", "calibrated"],
    ["plan", "--model", "llama3-70b", "--chip", "h100", "--chips", "1000", "--batch", "4Mi"],
    LLAMA_256_H100,
    ["collective", "all_gather", "--chip", "h100", "--gpus", "8", "--bytes", "1GiB"],
]


@pytest.mark.parametrize("argv", GPU_RUNS, ids=[" ".join(a) for a in GPU_RUNS])
def test_gpu_output_speaks_of_gpus_nodes_and_nvlink(capsys, argv):
    out = run(argv, capsys)
    assert not re.search(r"(?<!-)\bchips?\b", out), out   # GPUs, not chips (an option name such as --chip aside)
    assert "ICI" not in out and not re.search(r"\b\d+x\d+\b", out), out   # no TPU torus words or shapes
    assert re.search(r"\bGPUs?\b", out)


def test_serve_on_gpus_names_gpus_and_nvlink_nodes(capsys):
    out = run(["serve", "--model", "llama3-70b", "--chip", "h100"], capsys)
    assert "smallest topology   2 GPUs in 1 NVLink node (of 8) (weights only)" in out
    assert "tokens/s per GPU" in out and "memory per GPU" in out


@pytest.mark.parametrize("argv, word", [
    (["plan", "--model", "llama3-70b", "--chip", "v5p", "--chips", "8960", "--batch", "4Mi"], "numbers: ideal"),
    (["plan", "llama3-70b", "h100", "256", "--tokens", "4Mi", "--seq", "8192", "--efficiency", "ideal"],
     "numbers: ideal"),
    (["serve", "--model", "llama3-70b", "--chip", "v5e", "--dtype", "int8"], "numbers: ideal"),
    (["serve", "llama3-70b", "h100", "--chips", "8", "--efficiency", "calibrated"], "numbers: calibrated"),
])
def test_each_answer_says_whether_it_is_a_bound_or_calibrated(capsys, argv, word):
    assert word in run(argv, capsys)


def test_plan_s_ideal_mfu_says_it_is_a_bound(capsys):
    out = run(["plan", "--model", "llama3-70b", "--chip", "v5p", "--chips", "8960", "--batch", "4Mi"], capsys)
    p = sb.training.plan("llama3-70b", "v5p", 8960, 4 * 2**20)
    assert f"MFU {p.mfu:.1%} is a bound (ideal), not a forecast" in out


def test_chips_shows_fp8(capsys):
    out = run(["chips", "--vendor", "nvidia"], capsys)
    header, _rule, *rows = out.splitlines()[1:]
    assert "fp8 FLOP/s" in header
    h100 = next(r for r in rows if r.startswith("NVIDIA H100"))
    assert "1.98 PFLOP/s" in h100.split("989 TFLOP/s")[1]  # fp8 beside bf16: twice its 989 TFLOP/s


def test_serve_at_a_batch_that_fits_and_one_that_does_not(capsys):
    out = run(["serve", "llama3-8b", "v5e", "--chips", "4", "--batch", "8"], capsys)
    fit = sb.inference.max_batch("llama3-8b", "v5e", 4, 8192)
    assert f"batch               8 sequences of 8192 tokens ({fit} fit)" in out
    assert cli.main(["serve", "llama3-8b", "v5e", "--chips", "4", "--batch", str(fit + 1)]) == 2
    assert f"--batch={fit + 1}: only {fit} sequences" in capsys.readouterr().err


README_COMMANDS = [shlex.split(line.split("  #")[0])[1:] for line in
                   (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8").splitlines()
                   if line.startswith("scalebook ") and not line.startswith(("scalebook bench", "scalebook grade"))]


@pytest.mark.parametrize("argv", README_COMMANDS, ids=[" ".join(a) for a in README_COMMANDS])
def test_the_readme_s_commands_run(capsys, argv):
    """The README's command-line section stays true: each command it shows answers (JAX's bench aside)."""
    run(argv, capsys)


def test_the_readme_shows_the_practitioner_s_commands():
    assert len(README_COMMANDS) >= 8 and {a[0] for a in README_COMMANDS} >= {"chips", "plan", "serve", "collective"}
