"""The runtime a chapter runs on: emulated CPU devices on a laptop, or a real TPU/GPU on Colab/Kaggle.

`setup()` must run before anything imports JAX: XLA reads the number of emulated CPU devices once, when
its CPU backend starts. It then reports, in one line, what the chapter's live sections will run on.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from .hardware import Chip, chip_for_device_kind

__all__ = ["Runtime", "setup", "host"]


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


def setup(n_cpu_devices: int = 8, quiet: bool = False) -> Runtime:
    """Emulate `n_cpu_devices` CPU devices (unless JAX already started), detect the runtime, print a line.

    On a TPU or GPU runtime the accelerator stays the default backend; the CPU devices are still there
    (`jax.devices('cpu')`) for multi-device demos that need more devices than the chip count.
    """
    if not isinstance(n_cpu_devices, int) or n_cpu_devices < 1:
        raise ValueError(f"n_cpu_devices must be a positive integer, got {n_cpu_devices!r}")
    if "jax" not in sys.modules:
        _request_cpu_devices(n_cpu_devices)
    try:
        import jax
    except ImportError:
        info = Runtime(None, None, 0, "", None, host())
    else:
        devices = jax.devices()
        kind = devices[0].device_kind
        info = Runtime(jax.__version__, jax.default_backend(), len(devices), kind,
                       chip_for_device_kind(kind), host())
        if info.emulated and len(devices) < n_cpu_devices:
            print(f"note: JAX started before setup() and has {len(devices)} CPU device(s), not "
                  f"{n_cpu_devices}; restart the kernel and run setup() first.")
    if not quiet:
        print(info.summary())
    return info
