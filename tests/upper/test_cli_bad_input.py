"""Every bad invocation of the `scalebook` command exits 2 with one line on stderr and no traceback (issues #16, #33);
none exits 0 after ignoring an option; the line names the option (or argument) at fault, never a Python parameter;
a GPU chip name builds its default cluster and says so."""

import re

import pytest

from scalebook import cli

ROOF = ["roofline", "--chip", "v5e", "--shape"]
COLL_TPU = ["collective", "all_gather", "--chip", "v5e", "--mesh", "4x4", "--axes", "X", "--bytes"]
COLL_GPU = ["collective", "all_reduce", "--cluster", "h100-superpod", "--bytes"]
PLAN = ["plan", "--model", "llama3-8b", "--chip", "v5p", "--batch", "1Mi", "--chips"]
SERVE = ["serve", "--model", "llama3-8b", "--chip", "v5e", "--context"]
BAD_NUMBERS = ["0", "-1", "nan", "inf", "-inf", "1e30", "2.5", "abc", "", "-4Mi"]

BAD = [
    *[[*ROOF, f"{b},8192,28672"] for b in BAD_NUMBERS],
    [*ROOF, "1024,8192"], [*ROOF, "1024,8192,28672,1"], ["roofline", "--chip", "v5x", "--shape", "1,2,3"],
    ["roofline", "--chip", "v5e", "--shape", "1,2,3", "--dtype", "bf17"],
    ["roofline", "--chip", "v5e", "--shape", "1,2,3", "--dtyp", "bf16"],  # no abbreviations
    ["roofline", "--chip", "v5e"], ["roofline", "--chip", "v5e", "--shape", "1,2,3", "--extra"],
    *[[*COLL_TPU, b] for b in ["-1", "nan", "inf", "1e999", "1e30", "abc", "", "-32MiB", "0"]],
    *[[*COLL_GPU, b] for b in ["-1", "1e999", "nan"]],
    ["collective", "all_gahter", "--chip", "v5e", "--mesh", "4x4", "--bytes", "1GB"],
    [*COLL_TPU, "1GB", "--gpus", "8"], [*COLL_TPU, "1GB", "--sharp"],  # GPU options beside a TPU slice
    [*COLL_TPU, "1GB", "--top-k", "2"], [*COLL_GPU, "1GB", "--gpus", "-8"], [*COLL_GPU, "1GB", "--gpus", "2.5"],
    [*COLL_GPU, "1GB", "--gpus", "20000"], [*COLL_GPU, "1GB", "--also-sharded", "Y"],
    ["collective", "all_gather", "--chip", "v5e", "--mesh", "4x-4", "--bytes", "1GB"],
    ["collective", "all_gather", "--chip", "h100", "--mesh", "8", "--bytes", "1GB"],
    ["collective", "all_gather", "--chip", "h100", "--cluster", "h100-superpod", "--bytes", "1GB"],
    ["collective", "all_to_all", "--cluster", "h100-superpd", "--bytes", "1GB"],
    *[[*PLAN, b] for b in BAD_NUMBERS],
    ["plan", "--model", "llama3-8b", "--chip", "v5p", "--chips", "256", "--batch", "-1Mi"],
    ["plan", "--model", "llama3-8b", "--chip", "v5p", "--chips", "256", "--batch", "1Mi", "--seq", "-4096"],
    ["plan", "--model", "llama3-8x", "--chip", "v5p", "--chips", "256", "--batch", "1Mi"],
    ["plan", "--model", "llama3-8b", "--chips", "256", "--batch", "1Mi"],
    ["plan", "--model", "llama3-405b", "--chip", "h100", "--chips", "8", "--batch", "1Mi"],  # does not fit
    *[[*SERVE, b] for b in BAD_NUMBERS],
    ["serve", "--model", "llama3-8b", "--chip", "v5e", "--dtype", "int3"],
    ["shard", "A[I, J] @ B[J, K] -> C[I, K]", "--chip", "v5p", "--mesh", "4x4x4", "--sizes", "I=-1,J=2,K=3"],
    ["shard", "A[I, J] @ B[J, K] -> C[I, K]", "--chip", "v5p", "--mesh", "4x4x4", "--sizes", "I=1e30,J=2,K=3"],
    ["shard", "A[I, J] @ B[J, K] -> C[I, K]", "--chip", "v5p", "--mesh", "4x4x4", "--sizes", "I=8,J=8,K=8,Q=5"],
    ["chips", "--vendor", "intel"], ["chips", "--vend", "google"], ["nonsense"], [],
]

# Bad invocations of the practitioner's options (issue #33), each with the option or argument its line must name.
PLAN_POS = ["plan", "llama3-70b", "h100", "256", "--tokens", "4Mi"]
SERVE_POS = ["serve", "llama3-70b", "h100"]
NO_SUBMISSIONS = ["grade", "/no-such-submissions"]
NAMED_BAD = [
    *[([*PLAN_POS, "--efficiency", b], "--efficiency") for b in ["idael", "", "nan", "none", "Calibrated"]],
    *[([*PLAN_POS, "--seq", b], "--seq") for b in BAD_NUMBERS],
    *[(["plan", "llama3-70b", "h100", b, "--tokens", "4Mi"], "CHIPS") for b in ["0", "nan", "inf", "1e30", "2.5",
                                                                                 "abc", ""]],
    *[(["plan", "llama3-70b", "h100", "256", "--tokens", b], "--batch") for b in BAD_NUMBERS],  # --batch/--tokens
    ([*PLAN_POS, "--model", "llama3-8b"], "--model"), ([*PLAN_POS, "--chips", "8"], "--chips"),
    ([*PLAN_POS, "--chip", "h100"], "--chip"), (["plan", "llama3-70b", "h100", "256"], "--batch"),
    (["plan", "llama3-70b", "h100", "--tokens", "4Mi"], "--chips"), (["plan", "--tokens", "4Mi"], "--model"),
    (["plan", "llama3-70x", "h100", "256", "--tokens", "4Mi"], "--model"),
    (["plan", "llama3-70b", "h100x", "256", "--tokens", "4Mi"], "--chip"),
    (["plan", "llama3-70b", "h100-superpod", "100000", "--tokens", "4Mi"], "--chips"),
    ([*PLAN_POS, "--seq", "3"], "--seq"), ([*PLAN_POS, "--seq", "3"], "--batch"),
    *[([*PLAN_POS, option, b], option) for option in ("--tp", "--pp", "--cp", "--ep", "--microbatch")
      for b in BAD_NUMBERS],
    *[([*PLAN_POS, "--recompute", b], "--recompute") for b in ["partial", "", "Full", "nan"]],
    ([*PLAN_POS, "--cp", "2"], "--cp"), ([*PLAN_POS, "--efficiency", "calibrated", "--ep", "2"], "--ep"),
    ([*PLAN_POS, "--fsdp"], "--fsdp"), ([*PLAN_POS, "--no-fsdp"], "--no-fsdp"),  # without --efficiency: ignored
    ([*PLAN_POS, "--efficiency", "calibrated", "--microbatch", "5000"], "--batch"),
    *[([*SERVE_POS, option, b], option) for option in ("--chips", "--batch", "--context") for b in BAD_NUMBERS],
    *[([*SERVE_POS, "--efficiency", b], "--efficiency") for b in ["idael", "", "nan", "bound"]],
    ([*SERVE_POS, "--chips", "8", "--batch", "100000"], "--batch"),
    ([*SERVE_POS, "--context", "100000000"], "--context"), ([*SERVE_POS, "--chips", "1"], "--chips"),
    ([*SERVE_POS, "--model", "llama3-8b"], "--model"), ([*SERVE_POS, "--chip", "v5e"], "--chip"),
    (["serve", "llama3-70b"], "--chip"), (["serve"], "--model"), ([*SERVE_POS, "--dtype", "fp3"], "--dtype"),
    *[([*NO_SUBMISSIONS, "--out", b], "--out") for b in ["/dev/null/sub/g.csv", "/dev/null/g.csv", "", "/tmp"]],
    *[([*NO_SUBMISSIONS, "--jobs", b], "--jobs") for b in BAD_NUMBERS],
    *[([*NO_SUBMISSIONS, "--timeout", b], "--timeout") for b in ["0", "-1", "nan", "inf", "-inf", "abc", ""]],
    *[(["bench", "--dtype", b], "--dtype") for b in ["bf17", "", "int4", "nan"]],
    *[(["chips", "--vendor", b], "--vendor") for b in ["intel", "", "Google", "nan"]],
]
BAD += [argv for argv, _ in NAMED_BAD]


@pytest.mark.parametrize("argv", BAD, ids=[" ".join(a) or "(none)" for a in BAD])
def test_bad_invocation_exits_2_with_one_line(argv, capsys):
    try:
        status = cli.main(argv)
    except SystemExit as exc:  # argparse may exit directly; either way the status must be 2
        status = exc.code
    captured = capsys.readouterr()
    assert status == 2, captured.out
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured.err
    assert captured.err.startswith("scalebook")


@pytest.mark.parametrize("argv, option", NAMED_BAD, ids=[f"{' '.join(a)} -> {o}" for a, o in NAMED_BAD])
def test_the_line_names_the_option(argv, option, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert option in err, err
    parameter = r"(?<![-\w])(batch_tokens|seq_len|n_chips|gpus|nbytes|microbatch_tokens|model|chip|efficiency)="
    assert not re.search(parameter, err), err  # the option, not the Python parameter behind it


def test_the_bad_invocations_count(capsys):
    print(f"\n{len(BAD)} bad CLI invocations, each exits 2 with one line")
    assert len(BAD) >= 150


def test_a_gpu_chip_builds_its_default_cluster_and_says_so(capsys):
    assert cli.main(["plan", "--model", "llama3-70b", "--chip", "h100", "--chips", "1000", "--batch", "4Mi"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("(--chip h100 is a GPU: using its default cluster, GpuCluster(NVIDIA H100: 1000 GPUs")
    assert "512 of 1000 (488 idle)" in out and "memory per GPU: fits: " in out
    assert cli.main(["collective", "all_gather", "--chip", "h100", "--gpus", "64", "--bytes", "1GiB"]) == 0
    assert "is a GPU: using its default cluster" in capsys.readouterr().out


def test_the_issue_s_plan_on_gb200_racks(capsys):
    argv = ["plan", "--model", "llama3-70b", "--cluster", "gb200-superpod", "--chips", "576", "--batch", "4Mi"]
    assert cli.main(argv) == 0
    assert "on 512 of 576 (64 idle)" in capsys.readouterr().out


def test_serve_prints_the_memory_per_chip(capsys):
    assert cli.main(["serve", "--model", "llama3-70b", "--chip", "v5e", "--context", "8192", "--dtype", "int8"]) == 0
    assert "memory per chip     fits: " in capsys.readouterr().out
