"""The multi-host launcher: 2 processes x 4 CPU devices compute what 1 process x 8 does, and leave nothing behind."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from speed import assert_stopped

pytest.importorskip("jax")

from scalebook import multihost  # noqa: E402


def _alive(pids: tuple[int, ...]) -> list[int]:
    """Return the pids that still belong to a launcher child (a reused pid running something else does not count)."""
    alive = []
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"scalebook.lab.multihost" in cmdline:
            alive.append(pid)
    return alive


def test_process_layout_on_one_host() -> None:
    """In this one process the global array is the local one: every device's rows, each numbered once."""
    layout = multihost.process_layout(rows_per_device=2, cols=4)
    n = layout.device_count
    assert (layout.process_index, layout.process_count) == (0, 1)
    assert layout.local_device_count == n
    assert layout.local_shape == layout.global_shape == (2 * n, 4)
    assert layout.checksum == sum(range(8 * n))


def fail_in(process: int) -> None:
    """A program that raises in one process (the others wait for it at a barrier)."""
    import jax
    from jax.experimental import multihost_utils

    if jax.process_index() == process:
        raise RuntimeError(f"boom in process {process}")
    multihost_utils.sync_global_devices("never reached by the failing process")


def sleep_forever() -> None:
    """A program that never returns, to trip the time limit."""
    while True:
        time.sleep(1)


@pytest.mark.slow
def test_cross_process_matmul_matches_one_process_and_numpy():
    two = multihost.run("sharded_matmul", n_processes=2, devices_per_process=4, timeout=90)
    one = multihost.run("sharded_matmul", n_processes=1, devices_per_process=8, timeout=90)
    x, w = multihost.matmul_inputs(64, 256, 128)
    for value in two.values:  # every process gathered the same full product
        np.testing.assert_allclose(value["out"], one.values[0]["out"], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(value["out"], x @ w, rtol=1e-4, atol=1e-4)
    # D is split across the two processes: the partial sums are added over "dcn", i.e. across processes,
    # each device sending its [64/4, 128] float32 block; on one process nothing crosses.
    assert two.values[0]["collectives"] == [dict(kind="all_reduce", axes="dcn", group_size=2, nbytes=16 * 128 * 4)]
    assert all(c["axes"] != "dcn" for c in one.values[0]["collectives"])
    assert _alive(two.pids + one.pids) == []


@pytest.mark.slow
def test_a_failing_process_is_named_and_every_process_is_killed():
    with pytest.raises(multihost.MultihostError, match="process 1 of 2 failed") as err:
        multihost.run("test_multihost:fail_in", timeout=90, process=1)
    assert err.value.process == 1
    assert "boom in process 1" in str(err.value)
    assert len(err.value.pids) == 2 and _alive(err.value.pids) == []


@pytest.mark.slow
def test_the_time_limit_kills_every_process():
    start = time.monotonic()
    with pytest.raises(multihost.MultihostError, match="time limit") as err:
        multihost.run("test_multihost:sleep_forever", timeout=6)
    assert err.value.process is None
    assert_stopped(time.monotonic() - start, 6, "two JAX processes that sleep for ever")
    assert _alive(err.value.pids) == []


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="program="):
        multihost.run("no_such_program")
    with pytest.raises(ValueError, match="n_processes"):
        multihost.run("global_array", n_processes=0)
    with pytest.raises(ValueError, match="devices_per_process"):
        multihost.run("global_array", devices_per_process=2.5)
    with pytest.raises(ValueError, match="timeout"):
        multihost.run("global_array", timeout=0)
