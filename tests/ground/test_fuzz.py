"""Hostile-but-honest fuzz of the analytic model (issue #16).

Every public callable of the ground floor (the `__all__` of each module in `tests/fuzz_recipes.py`'s
`GROUND_MODULES`) has a recipe in its `GROUND`: one valid call and the kind of each parameter. The fuzz replaces one
argument at a time with each bad value of its kind (0, -1, NaN, ±inf, 10**30, 2.5 for a count, a wrong type, None, a
misspelt name) and demands a ValueError, TypeError or KeyError whose message names the argument, raised within a
second. A function made public without a recipe fails `test_every_public_callable_has_a_recipe`. The property test
feeds valid random values and asserts every number in the result is finite and non-negative.
"""

from __future__ import annotations

import numbers
from typing import Any

import fuzzing
import numpy as np
import pytest
from fuzz_recipes import GROUND, GROUND_EXEMPT, GROUND_MODULES
from fuzzing import guarded, kind_gaps, missing_recipes, resolve, summary
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scalebook as sb


def test_every_public_callable_has_a_recipe():
    """Coverage by identity: a re-export (sb.roofline.Estimate, sb.training.pipeline_bubble) uses the recipe of the
    object it re-exports; a public callable with neither a recipe nor an exemption fails."""
    missing = missing_recipes(GROUND, GROUND_EXEMPT, GROUND_MODULES)
    assert not missing, f"public callables without a fuzz recipe (add one to tests/fuzz_recipes.py's GROUND): {missing}"


def test_every_parameter_has_a_kind():
    gaps = kind_gaps(GROUND)
    assert not gaps, gaps


# Results whose numbers may be negative: formatters (a difference formats fine), relative errors of the published-runs
# suite (a prediction below the published value), the systolic frames (-1 marks an empty cell, NaN a psum not
# started: display markers, not quantities).
SIGNED_RESULTS = {"units.fmt_bytes", "units.fmt_time", "units.fmt_flops", "units.fmt_rate", "units.fmt_si",
                  "validation.results", "validation.table", "validation.disagreements", "validation.summary",
                  "validation.leave_one_source_out", "peers.results", "peers.scores", "peers.table",
                  "peers.speed_error", "gemm.gemm_sweep_errors"}
MARKED_RESULTS = {"systolic.simulate"}


def bad_numbers(name: str, result: Any) -> str:
    """'' if every number in `result` is finite and non-negative (negative allowed in SIGNED_RESULTS), else which."""
    return "" if name in MARKED_RESULTS else fuzzing.bad_numbers(result, signed=name in SIGNED_RESULTS)


def call(name: str, kwargs: dict[str, Any]) -> Any:
    return resolve(name)(**kwargs)


def test_fuzz_one_bad_argument_at_a_time(capsys):
    n_cases, outcomes, failures = fuzzing.fuzz(GROUND, bad_numbers)
    with capsys.disabled():
        print(summary("fuzz", n_cases, len(GROUND), outcomes))
    assert n_cases >= 2000
    assert not failures, f"{len(failures)} bad calls not refused by name:\n" + "\n".join(failures[:400])


def test_every_recipe_is_a_valid_call():
    broken = fuzzing.invalid_recipes(GROUND, bad_numbers)
    assert not broken, "\n".join(broken)


# --- valid random input -----------------------------------------------------------------------------------------

SCALE = {"count": (1, 64), "count0": (0, 64), "size": (1e-3, 1e6), "nonneg": (0.0, 1e6), "fraction": (0.05, 1.0),
         "frac0": (0.0, 1.0)}
SLOW = {"serving.simulate", "validation.results", "validation.table", "validation.summary", "training.planner.plan"}


def _scaled(example: Any, kind: str, draw: Any) -> Any:
    """A valid random value of `kind` near the recipe's `example` (a multiple of it for sizes and counts, so that
    divisibility the example satisfies is kept: a power-of-two multiple for counts)."""
    if kind in ("count",) and isinstance(example, int) and example >= 1:
        return example * 2 ** draw(st.integers(0, 3))
    if kind == "size" and isinstance(example, numbers.Real) and example > 0:
        return float(example) * draw(st.floats(0.5, 4.0))
    if kind == "nonneg" and isinstance(example, numbers.Real):
        return float(example) * draw(st.floats(0.0, 4.0))
    if kind in ("fraction", "frac0"):
        return draw(st.floats(*SCALE[kind]))
    return example


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_valid_random_inputs_give_finite_non_negative_results(data):
    name = data.draw(st.sampled_from(sorted(set(GROUND) - SLOW)))
    valid, kinds = GROUND[name]
    kwargs = valid()
    for param, kind in kinds.items():
        if param in kwargs and isinstance(kind, str) and kind.lstrip("?") in SCALE:
            kwargs[param] = _scaled(kwargs[param], kind.lstrip("?"), data.draw)
    try:
        with guarded(10):
            result = call(name, kwargs)
    except (ValueError, KeyError) as exc:  # a valid-but-impossible combination, refused clearly by name
        assert "=" in str(exc) or "fit" in str(exc), f"{name}({kwargs}): unclear refusal {exc}"
        return
    assert not bad_numbers(name, result), f"{name}({kwargs}) -> {result!r:.300}"


@pytest.mark.parametrize("preset", sorted(sb.hardware.gpu.PRESETS))
def test_plan_any_gpu_count(preset):
    """300 random valid GPU counts per preset plan without a crash; the layout uses whole nodes and fits."""
    rng = np.random.default_rng(16)
    cluster = sb.hardware.gpu.get_cluster(preset)
    node = cluster.gpus_per_node
    crashes, planned, too_small = [], 0, 0
    for n in rng.integers(1, cluster.gpus + 1, size=300):
        n = int(n)
        try:
            with guarded(10):
                p = sb.training.plan("llama3-8b", cluster, n, 4 * 2**20)
        except ValueError as exc:  # a valid request that no layout fits is refused, saying so; anything else crashed
            too_small += str(exc).startswith("no layout of") and "HBM" in str(exc)
            if not str(exc).startswith("no layout of"):
                crashes.append(f"{n}: {exc}")
            continue
        planned += 1
        nodes = -(-p.chips_used // node)
        if p.chips_used > n or nodes * min(node, p.chips_used) > n or not p.fits:
            crashes.append(f"{n}: a layout of {p.chips_used} GPUs in {nodes} nodes of {node} on {n} GPUs")
        if p.chips_used < n and "idle" not in str(p):
            crashes.append(f"{n}: {n - p.chips_used} idle GPUs not reported: {p}")
    print(f"\n{preset}: 300 GPU counts, {planned} planned, {too_small} refused as too small to hold the model and "
          f"its 4M-token batch, {len(crashes)} crashes")
    assert planned >= 150
    assert not crashes, crashes[:20]


# --- the command line: one bad option value at a time --------------------------------------------------------------

CLI = {  # subcommand: (a valid invocation, {option: kind})
    "roofline": (["roofline", "--chip", "v5e", "--shape", "1024,8192,28672"],
                 {"--chip": "name", "--shape": "shape", "--dtype": "name", "--weight-dtype": "name"}),
    "collective": (["collective", "all_gather", "--chip", "v5e", "--mesh", "4x4", "--axes", "X", "--bytes", "32MiB"],
                   {"--chip": "name", "--mesh": "shape", "--axes": "name", "--bytes": "size", "--gpus": "count",
                    "--also-sharded": "name", "--top-k": "count"}),
    "collective-gpu": (["collective", "all_reduce", "--cluster", "h100-superpod", "--gpus", "256", "--bytes", "1GiB"],
                       {"--cluster": "name", "--gpus": "count", "--bytes": "size", "--also-sharded": "count",
                        "--axes": "name"}),
    "shard": (["shard", "A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", "--chip", "v5p", "--mesh", "4x4x4", "--sizes",
               "I=1024,J=4096,K=8192"], {"--chip": "name", "--mesh": "shape", "--sizes": "shape", "--dtype": "name"}),
    "plan": (["plan", "--model", "llama3-8b", "--chip", "v5p", "--chips", "256", "--batch", "1Mi"],
             {"--model": "name", "--chip": "name", "--chips": "count", "--batch": "size", "--seq": "count",
              "--cluster": "name", "--efficiency": "name", "--tokens": "size", "--recompute": "name",
              "--microbatch": "size", "--tp": "count", "--pp": "count", "--cp": "count", "--ep": "count",
              "--framework": "name"}),
    "serve": (["serve", "--model", "llama3-8b", "--chip", "v5e"],
              {"--model": "name", "--chip": "name", "--context": "count", "--dtype": "name", "--chips": "count",
               "--batch": "count", "--efficiency": "name"}),
    "grade": (["grade", "/no-such-submissions"], {"--out": "path", "--jobs": "count", "--timeout": "size"}),
    "bench": (["bench"], {"--dtype": "name"}),
    "chips": (["chips"], {"--vendor": "name"}),
}
CLI_BAD = {"count": ["0", "-1", "nan", "inf", "-inf", "1e30", "2.5", "abc", ""],
           "size": ["0", "-1", "nan", "inf", "-inf", "1e999", "1e30", "abc", "", "-4Mi"],
           "name": ["misspelt", "-1", "", "nan"],
           "shape": ["-1", "0,0,0", "inf,1,1", "nan", "abc", "", "1e30"],
           "path": ["/no/such/folder/g.csv", "/dev/null/g.csv", "", "/"]}


def cli_cases() -> list[list[str]]:
    cases = []
    for base, options in CLI.values():
        for option, kind in options.items():
            for value in CLI_BAD[kind]:
                argv = list(base)
                if option in argv:
                    argv[argv.index(option) + 1] = value
                else:
                    argv += [option, value]
                cases.append(argv)
    return cases


def test_cli_fuzz_one_bad_option_at_a_time(capsys):
    from scalebook import cli

    failures = []
    for argv in cli_cases():
        try:
            with guarded(10):
                status = cli.main(argv)
        except SystemExit as exc:
            status = exc.code
        except Exception as exc:  # noqa: BLE001 - a traceback is what the fuzz counts
            status = f"{type(exc).__name__}: {exc}"
        err = capsys.readouterr().err
        if status != 2 or err.count("\n") != 1:
            failures.append(f"{argv}: status {status}, stderr {err!r:.200}")
    with capsys.disabled():
        print(f"\ncli fuzz: {len(cli_cases())} bad invocations, {len(cli_cases()) - len(failures)} exit 2 with one "
              f"line, {len(failures)} do not")
    assert not failures, "\n".join(failures)
