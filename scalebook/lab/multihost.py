"""Multi-host JAX on one machine: N processes, each with its own CPU devices, joined as one job.

A TPU slice bigger than one host runs one copy of the same program per host. `run` does the same on this
machine: it starts `n_processes` Python processes, each with `devices_per_process` emulated CPU devices,
joins them with `jax.distributed.initialize` (coordinator on 127.0.0.1, a free port) and CPU collectives
over gloo, runs one program in each, and returns what every process returned. Collectives between devices of
different processes really cross a process boundary (over local TCP, where a slice would use DCN or ICI).

    import scalebook as sb
    out = sb.multihost.run("global_array", n_processes=2, devices_per_process=4)
    out.values[0]["process_count"], out.values[0]["device_count"]       # 2, 8

A program is the name of one of this module's programs (`global_array`, `sharded_matmul`, `fsdp_step`,
`chapter10`) or any importable `"module:function"`; it is called with the keyword arguments given to `run`
and returns something picklable (NumPy arrays, numbers, dicts). Every process runs in its own session and is
killed with its whole process group when the run ends, fails or passes its time limit, so nothing outlives
`run`; a failure raises `MultihostError` naming the process and quoting the end of its error output.

This module imports JAX only inside the child processes and inside the programs (the upper floor).
"""

from __future__ import annotations

import importlib
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..units import checks
from .runtime import device_mesh
from .xla import collectives

__all__ = ["MultihostError", "MultihostResult", "run", "free_port", "dcn_ici_mesh", "ProcessLayout", "process_layout",
           "global_array", "sharded_matmul", "fsdp_step", "chapter10", "PROGRAMS"]

PROGRAMS = ("global_array", "sharded_matmul", "fsdp_step", "chapter10")
_TAIL = 2000  # characters of a failed process's error output quoted in the exception


class MultihostError(RuntimeError):
    """A multi-host run failed: `process` is the id of the process that failed first (None: time limit),
    `pids` the operating-system ids of all processes (all gone when this is raised)."""

    def __init__(self, message: str, process: int | None, pids: tuple[int, ...]) -> None:
        super().__init__(message)
        self.process = process
        self.pids = pids


@dataclass(frozen=True)
class MultihostResult:
    """The outcome of a multi-host run: `values[i]` is what process i returned; `seconds` the wall time of the
    whole run (start-up included); `pids` the processes' operating-system ids (all ended by now)."""

    program: str
    values: tuple[Any, ...]
    seconds: float
    pids: tuple[int, ...]


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on now (for the coordinator)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _resolve(program: str) -> Callable[..., Any]:
    """Return the function a program name stands for: one of `PROGRAMS` or an importable 'module:function'."""
    if program in PROGRAMS:
        return globals()[program]
    module, _, name = program.partition(":")
    if not module or not name:
        raise ValueError(f"program={program!r} is neither one of {PROGRAMS} nor 'module:function'")
    return getattr(importlib.import_module(module), name)


def _child_env(devices: int) -> dict[str, str]:
    """Return the environment of a child: CPU only, `devices` emulated devices, this process's import path."""
    env = dict(os.environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split() if "force_host_platform_device_count" not in f]
    env.update(XLA_FLAGS=" ".join(flags), JAX_NUM_CPU_DEVICES=str(devices), JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return env


def _kill(procs: Sequence[subprocess.Popen]) -> None:
    """Kill every process group (each child leads its own session) and reap the children."""
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for p in procs:
        p.wait()


def _tail(path: Path) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return text[-_TAIL:].strip() or "(no output)"


@checks(n_processes="count", devices_per_process="count", timeout="size", program="text")
def run(program: str, n_processes: int = 2, devices_per_process: int = 4, timeout: float = 60.0,
        **kwargs: Any) -> MultihostResult:
    """Run `program(**kwargs)` in `n_processes` local JAX processes of `devices_per_process` CPU devices each.

    Returns a `MultihostResult` whose `values` hold each process's return value, by process id. Raises `MultihostError`
    naming the process when one exits with an error, or the processes still running after `timeout` seconds;
    in every case all processes are killed (with their process groups) before `run` returns or raises.
    """
    _resolve(program)
    start = time.monotonic()
    coordinator = f"127.0.0.1:{free_port()}"
    with tempfile.TemporaryDirectory(prefix="scalebook-multihost-") as tmp:
        folder = Path(tmp)
        procs: list[subprocess.Popen] = []
        try:
            for pid in range(n_processes):
                spec = folder / f"spec-{pid}.pkl"
                spec.write_bytes(pickle.dumps(dict(
                    program=program, kwargs=kwargs, coordinator=coordinator, n_processes=n_processes,
                    process_id=pid, devices=devices_per_process, timeout=timeout, parent=os.getpid(),
                    out=str(folder / f"out-{pid}.pkl"))))
                with open(folder / f"log-{pid}.txt", "wb") as log:
                    procs.append(subprocess.Popen(
                        [sys.executable, "-m", __name__, str(spec)], stdin=subprocess.DEVNULL,
                        stdout=log, stderr=subprocess.STDOUT, env=_child_env(devices_per_process),
                        start_new_session=True))
            _wait(procs, folder, start + timeout, timeout)
            values = tuple(pickle.loads((folder / f"out-{pid}.pkl").read_bytes()) for pid in range(n_processes))
        finally:
            _kill(procs)
    return MultihostResult(program, values, time.monotonic() - start, tuple(p.pid for p in procs))


def _wait(procs: Sequence[subprocess.Popen], folder: Path, deadline: float, timeout: float) -> None:
    """Wait until every process has exited 0; raise `MultihostError` at the first failure or at `deadline`."""
    pids = tuple(p.pid for p in procs)
    while True:
        codes = [p.poll() for p in procs]
        failed = [i for i, code in enumerate(codes) if code not in (None, 0)]
        if failed:
            i = failed[0]
            raise MultihostError(f"process {i} of {len(procs)} failed (exit code {codes[i]}); its output ends "
                                 f"with:\n{_tail(folder / f'log-{i}.txt')}", i, pids)
        if all(code == 0 for code in codes):
            return
        if time.monotonic() > deadline:
            running = [i for i, code in enumerate(codes) if code is None]
            raise MultihostError(f"process(es) {running} of {len(procs)} still running after the time limit of "
                                 f"{timeout:g} s; all were killed", None, pids)
        time.sleep(0.05)


def _exit_with_parent(parent: int) -> None:
    """Exit this child at once if the process that launched it dies (nothing is left behind to wait for it)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


def _child(spec_path: str) -> None:
    """Body of one child process: join the job, run the program, write its value where the parent reads it."""
    spec = pickle.loads(Path(spec_path).read_bytes())
    _exit_with_parent(spec["parent"])
    import jax

    jax.config.update("jax_num_cpu_devices", spec["devices"])
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(spec["coordinator"], num_processes=spec["n_processes"],
                               process_id=spec["process_id"], initialization_timeout=max(1, int(spec["timeout"])))
    try:
        value = _resolve(spec["program"])(**spec["kwargs"])
    except BaseException:
        # Exit at once: a normal exit would wait at JAX's shutdown barrier for processes that never arrive.
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    out = Path(spec["out"])
    out.with_suffix(".tmp").write_bytes(pickle.dumps(value))
    out.with_suffix(".tmp").rename(out)
    jax.distributed.shutdown()


# ---- the chapter's programs: each runs inside every process of the job ----

def dcn_ici_mesh() -> Any:
    """Return the ("dcn", "ici") mesh of this job: one row per process, one column per local device.

    Collectives over "ici" stay inside a process (a host's chips on their fast links); those over "dcn"
    cross processes (the data-centre network between hosts).
    """
    import jax
    import numpy as np
    from jax.sharding import Mesh

    devices = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    return Mesh(np.array(devices).reshape(jax.process_count(), jax.local_device_count()), ("dcn", "ici"))


def _axes_of(group_size: int, mesh: Any) -> str:
    """Name the mesh axes a collective's replica group spans, from its size ('dcn', 'ici' or 'dcn+ici')."""
    names = [n for n in ("dcn", "ici") if mesh.shape[n] > 1]
    options = {mesh.shape[n]: n for n in names} | {mesh.size: "+".join(names)}
    return options.get(group_size, f"{group_size} devices")


def _emitted(jitted: Callable[..., Any], mesh: Any, *args: Any) -> list[dict[str, Any]]:
    """Return the collectives XLA emitted for `jitted(*args)`: kind, the mesh axes they span, bytes per device."""
    return [dict(kind=c.kind, axes=_axes_of(c.group_size, mesh), group_size=c.group_size, nbytes=c.nbytes)
            for c in collectives(jitted, *args)]


def _global(mesh: Any, spec: Any, host_array: Any) -> Any:
    """Return `host_array` (identical in every process) as a global array laid out on `mesh` by `spec`;
    each process places only the blocks of its own devices."""
    import jax
    from jax.sharding import NamedSharding

    return jax.make_array_from_callback(host_array.shape, NamedSharding(mesh, spec), lambda idx: host_array[idx])


def _gather(arr: Any) -> Any:
    """Return a global array as one NumPy array in every process (a gather across processes)."""
    import numpy as np
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(arr, tiled=True))


@dataclass(frozen=True)
class ProcessLayout:
    """Where this program runs: its process among all hosts, and the devices it sees locally and globally.

    global_shape is the shape of the array built from every process's local rows; checksum its sum
    (each process contributes rows numbered from its own offset, so the sum is the same on every host).
    """

    process_index: int
    process_count: int
    local_device_count: int
    device_count: int
    local_shape: tuple[int, ...]
    global_shape: tuple[int, ...]
    checksum: float


@checks(rows_per_device="count", cols="count")
def process_layout(rows_per_device: int = 2, cols: int = 4) -> ProcessLayout:
    """Return this process's place in a (possibly multi-host) job and build one global array from local data.

    Every process makes only its own rows (`rows_per_device` per local device) and
    `jax.make_array_from_process_local_data` stitches them into one array sharded over all devices. On one
    host that is the whole array; on a real slice, after `jax.distributed.initialize()`, the same code runs
    unchanged in every process.
    """
    import jax
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = device_mesh({"data": jax.device_count()})
    local_rows = rows_per_device * jax.local_device_count()
    offset = jax.process_index() * local_rows
    local = np.arange(offset * cols, (offset + local_rows) * cols, dtype=np.float32).reshape(local_rows, cols)
    global_rows = local_rows * jax.process_count()
    arr = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local, (global_rows, cols))
    return ProcessLayout(jax.process_index(), jax.process_count(), jax.local_device_count(), jax.device_count(),
                         local.shape, arr.shape, float(jax.jit(lambda a: a.sum())(arr)))


@checks(rows_per_device="count", cols="count")
def global_array(rows_per_device: int = 2, cols: int = 4) -> dict[str, Any]:
    """Build one global array from process-local rows (`process_layout`) and return this process's
    view of the job as a dict: process_index, process_count, local_device_count, device_count, local_shape,
    global_shape, checksum (the sum of all elements, computed on the devices of every process)."""
    return asdict(process_layout(rows_per_device, cols))


def matmul_inputs(B: int, D: int, F: int, seed: int = 0) -> tuple[Any, Any]:
    """Return the float32 inputs x[B, D], w[D, F] of `sharded_matmul` (the same in every process, from `seed`)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return (rng.standard_normal((B, D), dtype=np.float32),
            (rng.standard_normal((D, F), dtype=np.float32) / np.sqrt(D)).astype(np.float32))


@checks(B="count", D="count", F="count", seed="count0")
def sharded_matmul(B: int = 64, D: int = 256, F: int = 128, seed: int = 0) -> dict[str, Any]:
    """Compute x[B_ici, D_dcn] @ w[D_dcn, F] -> out[B_ici, F] over the job's ("dcn", "ici") mesh.

    The contracting dimension D is split across processes, so each device holds a partial sum that must be
    added up over "dcn": the reduction crosses the process boundary. Returns a dict: out (the [B, F] product,
    gathered), collectives (what XLA emitted: kind, axes, group_size, bytes per device).
    """
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = dcn_ici_mesh()
    x_host, w_host = matmul_inputs(B, D, F, seed)
    x, w = _global(mesh, P("ici", "dcn"), x_host), _global(mesh, P("dcn", None), w_host)
    matmul = jax.jit(lambda x, w: x @ w, out_shardings=NamedSharding(mesh, P("ici", None)))
    return dict(out=_gather(matmul(x, w)), collectives=_emitted(matmul, mesh, x, w))


def mlp_inputs(B: int, D: int, F: int, seed: int = 0) -> tuple[Any, Any, Any, Any]:
    """Return float32 (x[B, D], y[B, D], w_in[D, F], w_out[F, D]) for `fsdp_step`, the same in every process."""
    import numpy as np

    rng = np.random.default_rng(seed)
    x, y = (rng.standard_normal((B, D), dtype=np.float32) for _ in range(2))
    w_in = (rng.standard_normal((D, F), dtype=np.float32) / np.sqrt(D)).astype(np.float32)
    w_out = (rng.standard_normal((F, D), dtype=np.float32) / np.sqrt(F)).astype(np.float32)
    return x, y, w_in, w_out


@checks(B="count", D="count", F="count", lr="size", seed="count0")
def fsdp_step(B: int = 64, D: int = 64, F: int = 256, lr: float = 0.1, seed: int = 0) -> dict[str, Any]:
    """One SGD step of an MLP, sharded as multi-host jobs usually are: data-parallel over "dcn", FSDP over "ici".

    The batch is split over every device; each weight is split over "ici" (a host's devices share one copy)
    and replicated over "dcn". Returns a dict: loss_before, loss_after (mean squared error, float), w_in and
    w_out after the step (gathered), collectives (what XLA emitted for the step).
    """
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = dcn_ici_mesh()
    x_host, y_host, w_in_host, w_out_host = mlp_inputs(B, D, F, seed)
    batch = P(("dcn", "ici"), None)
    x, y = _global(mesh, batch, x_host), _global(mesh, batch, y_host)
    params = (_global(mesh, P("ici", None), w_in_host), _global(mesh, P("ici", None), w_out_host))

    def loss(p: tuple[Any, Any], x: Any, y: Any) -> Any:
        return jnp.mean((jax.nn.relu(x @ p[0]) @ p[1] - y) ** 2)

    def step(p: tuple[Any, Any], x: Any, y: Any) -> tuple[tuple[Any, Any], Any]:
        value, grads = jax.value_and_grad(loss)(p, x, y)
        return jax.tree.map(lambda w, g: w - lr * g, p, grads), value

    shardings = tuple(NamedSharding(mesh, P("ici", None)) for _ in params)
    jitted = jax.jit(step, out_shardings=(shardings, NamedSharding(mesh, P())))
    new, before = jitted(params, x, y)
    after = jax.jit(loss, out_shardings=NamedSharding(mesh, P()))(new, x, y)
    return dict(loss_before=float(before), loss_after=float(after), w_in=_gather(new[0]), w_out=_gather(new[1]),
                collectives=_emitted(jitted, mesh, params, x, y))


def chapter10() -> dict[str, Any]:
    """Run chapter 10's three multi-host programs in one job (one start-up): a dict of their results by name."""
    import jax

    return dict(devices=[(d.id, d.process_index) for d in jax.devices()], global_array=global_array(),
                sharded_matmul=sharded_matmul(), fsdp_step=fsdp_step())


if __name__ == "__main__":
    _child(sys.argv[1])
