"""scalebook: the helper package of an executable textbook on scaling language models.

The ground floor is the analytic model: pure Python and NumPy. `import scalebook` itself loads nothing; each
name (`sb.expect`, `sb.training`, ...) loads its module on first use, so a script or widget pays only for what it
touches. The live lab (`runtime`, `bench`, `xla`, `profiling`, the chapters' `labs`) imports JAX only when a
function of it is called; `plots` and `widgets` import matplotlib and ipywidgets only when used. `sb.decoder` and
`sb.sharded_ops` are chapters 7's and 10's labs.

    import scalebook as sb
    rt = sb.setup()                        # emulate 8 CPU devices before JAX starts; describe the runtime
    sb.roofline.matmul(4096, 8192, 28672, "v5e")
    sb.expect(sb.roofline.critical_batch("v5e"), 240, rtol=0.01, source="ch. 1")
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers and IDEs; at run time every name below is loaded on first use
    from . import collectives, grading, hardware, inference, models, roofline, serving, sharding, training, units
    from .collectives import all_gather, all_reduce, all_to_all, reduce_scatter
    from .grading import check, expect
    from .hardware import Chip, GpuCluster, TpuMesh, get_chip, list_chips
    from .models import TransformerConfig, get_model
    from .roofline import Estimate
    from .runtime import setup
    from .sharding import Plan, sharded_matmul
    from .tables import Table

__version__ = "0.1.0"

__all__ = [
    "Chip", "Estimate", "Table", "TpuMesh", "GpuCluster", "Plan", "TransformerConfig", "get_chip", "get_model",
    "list_chips", "expect", "check", "setup",
    "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "sharded_matmul",
    "units", "hardware", "roofline", "gemm", "collectives", "sharding", "models", "training", "inference", "moe",
    "serving", "deployment",
    "grading",
    "runtime", "bench", "xla", "hlo", "plots", "widgets", "svg", "systolic", "decoder", "autograde", "profiling",
    "sharded_ops", "labs", "validation", "multihost", "problems", "notebooks", "overlap",
    "cli", "cheatsheet",
]

# The names `import scalebook as sb` offers, each from the module that defines it. Nothing is imported until a
# name is first used, so `import scalebook` costs a few milliseconds and the first `sb.<name>` loads only what
# that name needs (the analytic floor: Python and NumPy; the live lab: JAX, on its first call).
_NAMES = {
    **{name: "collectives" for name in ("all_gather", "all_reduce", "all_to_all", "reduce_scatter")},
    **{name: "grading" for name in ("check", "expect")},
    **{name: "hardware" for name in ("Chip", "GpuCluster", "TpuMesh", "get_chip", "list_chips")},
    **{name: "models" for name in ("TransformerConfig", "get_model")},
    "Estimate": "roofline", "setup": "runtime", "Plan": "sharding", "sharded_matmul": "sharding", "Table": "tables",
}
# The chapters' labs under the names chapters 7 and 10 use: `sb.decoder`, `from scalebook import sharded_ops`.
_LAB_NAMES = {"decoder": "labs.ch07_decoder", "sharded_ops": "labs.ch10_programs"}
_MODULES = set(__all__) - set(_NAMES) - set(_LAB_NAMES) | {"tables"}
# Old names, each with the module that replaced it and the release that removes it (JAX's `_deprecations` style):
# a use warns, then works.
_DEPRECATED = {
    "pipeline": ("training.pipeline", "sb.pipeline is sb.training (pipeline_bubble, pipeline_schedule, ...)", "0.3"),
    "planner": ("training.planner", "sb.planner is sb.training (plan, check_parallelism)", "0.3"),
    "prediction": ("training.prediction", "sb.prediction is sb.training (predict, Prediction)", "0.3"),
}


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
        globals()[name] = value  # later lookups skip this function
        return value
    if name in _MODULES or name in _LAB_NAMES:
        return importlib.import_module(f"{__name__}.{_LAB_NAMES.get(name, name)}")
    if name in _DEPRECATED:
        target, message, removal = _DEPRECATED[name]
        warnings.warn(f"{message}; the old name goes in release {removal}", DeprecationWarning, stacklevel=2)
        return importlib.import_module(f"{__name__}.{target}")
    raise AttributeError(f"module 'scalebook' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
