"""The runtime a chapter runs on, and the JAX toolbox every live module shares.

`setup()` must run before anything imports JAX: XLA reads the number of emulated CPU devices once, when
its CPU backend starts. It then reports, in one line, what the chapter's live sections will run on.
`jnp_dtype` and `device_mesh` are the one way the lab names a dtype and builds a mesh (`xla`, `profiling`,
`bench` and the chapters' `labs` all go through them; compiling a function is `xla.compiled`).
JAX is imported only inside these functions.
"""

from __future__ import annotations

import importlib.metadata
import math
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..hardware.chips import Chip, chip_for_device_kind
from ..units import JAX_DTYPES, check_int, checks

if TYPE_CHECKING:
    import jax

__all__ = ["Runtime", "setup", "host", "jnp_dtype", "device_mesh"]


@dataclass(frozen=True)
class Runtime:
    """What the live lab runs on. `chip` is the spec-table `Chip` of the device, None on a CPU."""

    jax_version: str | None
    platform: str | None
    device_count: int
    device_kind: str
    chip: Chip | None
    host: str

    @property
    def emulated(self) -> bool:
        """True when the devices are CPU devices emulated by XLA (timings are only indicative)."""
        return self.platform == "cpu"

    def summary(self) -> str:
        """Return the one-line description printed by `setup()`."""
        if self.jax_version is None:
            return f"scalebook on {self.host}: JAX not installed — analytic model only (pip install 'scalebook[lab]')"
        what = f"{self.device_count} × {self.device_kind}"
        if self.emulated:
            what += " (emulated CPU devices: timings are indicative only)"
        elif self.chip is not None:
            what += f" → specs of {self.chip.name}"
        return f"scalebook on {self.host}: JAX {self.jax_version}, {self.platform}, {what}"

    def __str__(self) -> str:
        return self.summary()


def host() -> str:
    """Return 'colab', 'kaggle' or 'local': where this Python process runs."""
    if "google.colab" in sys.modules or os.environ.get("COLAB_RELEASE_TAG"):
        return "colab"
    if os.environ.get("KAGGLE_KERNEL_RUN_TYPE"):
        return "kaggle"
    return "local"


def _request_cpu_devices(n: int) -> None:
    """Ask XLA for `n` CPU devices, through both the current and the older mechanism."""
    os.environ["JAX_NUM_CPU_DEVICES"] = str(n)
    flag = f"--xla_force_host_platform_device_count={n}"
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if "force_host_platform_device_count" not in f]
    os.environ["XLA_FLAGS"] = " ".join([*flags, flag])


def _cpu_runtime(n_cpu_devices: int) -> Runtime | None:
    """The runtime, known without starting JAX where `JAX_PLATFORMS=cpu` fixes it (the grader's sandbox sets it):
    JAX installed but not started yet, and its devices the CPU devices requested. JAX then starts when first used
    (a second or more saved for a notebook that never uses it). None elsewhere."""
    if "jax" in sys.modules or os.environ.get("JAX_PLATFORMS") != "cpu":
        return None
    try:
        version = importlib.metadata.version("jax")
    except importlib.metadata.PackageNotFoundError:
        return None
    return Runtime(version, "cpu", n_cpu_devices, "cpu", chip_for_device_kind("cpu"), host())


def started_runtime(n_cpu_devices: int) -> Runtime:
    """The runtime JAX reports once started (JAX is started here), or one without JAX where it is not installed."""
    try:
        import jax
    except ImportError:
        return Runtime(None, None, 0, "", None, host())
    devices = jax.devices()
    kind = devices[0].device_kind
    info = Runtime(jax.__version__, jax.default_backend(), len(devices), kind, chip_for_device_kind(kind), host())
    if info.emulated and len(devices) < n_cpu_devices:
        print(f"note: JAX started before setup() and has {len(devices)} CPU device(s), not "
              f"{n_cpu_devices}; restart the kernel and run setup() first.")
    return info


@checks(n_cpu_devices="count", quiet="flag")
def setup(n_cpu_devices: int = 8, quiet: bool = False) -> Runtime:
    """Emulate `n_cpu_devices` CPU devices (unless JAX already started), detect the runtime, print a line.

    On a TPU or GPU runtime the accelerator stays the default backend; the CPU devices are still there
    (`jax.devices('cpu')`) for multi-device demos that need more devices than the chip count. A course's student
    starts with `sb.setup(student=..., key=...)` (`scalebook.course.session.setup`), which enrols them, then calls
    this.
    """
    n_cpu_devices = check_int("n_cpu_devices", n_cpu_devices, high=4096)
    if "jax" not in sys.modules:
        _request_cpu_devices(n_cpu_devices)
    info = _cpu_runtime(n_cpu_devices) or started_runtime(n_cpu_devices)
    if not quiet:
        print(info.summary())
    return info


def an_array(name: str, value: object) -> object:
    """A kind (`units.checks`) for an array argument of the lab: a JAX or NumPy array, refused before JAX runs."""
    if not (hasattr(value, "shape") and hasattr(value, "dtype")):
        raise ValueError(f"{name}={value!r:.60} must be an array (jax.Array or numpy.ndarray)")
    return value


def a_function(name: str, value: object) -> object:
    """A kind for a function argument (what `jax.jit` would compile)."""
    if not callable(value):
        raise ValueError(f"{name}={value!r:.60} must be a function")
    return value


def a_mesh(name: str, value: object) -> object:
    """A kind for an optional device mesh: None (the lab builds its default) or a `jax.sharding.Mesh`."""
    if value is not None and not (hasattr(value, "axis_names") and hasattr(value, "shape")):
        raise ValueError(f"{name}={value!r:.60} must be a jax.sharding.Mesh (runtime.device_mesh) or None")
    return value


def jax_and_numpy() -> tuple[Any, Any]:
    """Return the modules `jax` and `jax.numpy`, imported on the first call (the lab's modules load JAX only when a
    function needs it)."""
    import jax
    import jax.numpy as jnp

    return jax, jnp


def jnp_dtype(name: str) -> Any:
    """Return the JAX dtype of a scalebook dtype name ('fp32', 'bf16', 'fp16', 'int8'), e.g. jnp.bfloat16."""
    import jax.numpy as jnp

    key = str(name).lower()
    if key not in JAX_DTYPES:
        raise ValueError(f"dtype={name!r} cannot run in the live lab; allowed: {sorted(JAX_DTYPES)}")
    return jnp.dtype(JAX_DTYPES[key])


def device_mesh(axes: dict[str, int], mode: str = "auto") -> jax.sharding.Mesh:
    """Return a JAX mesh with named axes of these sizes, e.g. {"X": 4, "Y": 2}, on the first devices.

    `mode` is the axis type of every axis: 'auto' (XLA chooses shardings between the ones we pin) or
    'explicit' (shardings are part of the type). On a laptop the devices are the emulated CPU devices; on a
    TPU or GPU runtime with too few chips the CPU devices are used, so the compiled program (and its
    collectives) is the same as on a real slice.
    """
    import jax
    import numpy as np
    from jax.sharding import AxisType

    types = {"auto": AxisType.Auto, "explicit": AxisType.Explicit}
    if mode not in types:
        raise ValueError(f"mode={mode!r} is not a mesh axis type; allowed: {sorted(types)}")
    if not isinstance(axes, dict) or not axes:
        raise ValueError(f"axes={axes!r} must map axis names to positive sizes, e.g. {{'X': 4, 'Y': 2}}")
    axes = {name: check_int(f"axes[{name!r}]", size) for name, size in axes.items()}
    n = math.prod(axes.values())
    devices = jax.devices() if jax.device_count() >= n else jax.devices("cpu")
    if len(devices) < n:
        raise ValueError(f"axes={axes!r} needs {n} devices but only {len(devices)} exist; run sb.setup() first")
    return jax.sharding.Mesh(np.array(devices[:n]).reshape(tuple(axes.values())), tuple(axes),
                             axis_types=(types[mode],) * len(axes))
