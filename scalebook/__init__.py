"""scalebook: the helper package of an executable textbook on scaling language models.

The ground floor is the analytic model: pure Python and NumPy. `import scalebook` itself loads nothing; each
name (`sb.expect`, `sb.training`, ...) loads its module on first use, so a script or widget pays only for what it
touches. The live lab (`runtime`, `bench`, `xla`, `profiling`, the chapters' `labs`) imports JAX only when a
function of it is called; `plots` and `widgets` import matplotlib and ipywidgets only when used.

    import scalebook as sb
    rt = sb.setup()                        # emulate 8 CPU devices before JAX starts; describe the runtime
    sb.roofline.matmul(4096, 8192, 28672, "v5e")
    sb.expect(sb.roofline.critical_batch("v5e"), 240, rtol=0.01, source="ch. 1")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .faces import face

if TYPE_CHECKING:  # for type checkers and IDEs; at run time every name below is loaded on first use
    from . import (
        book,
        cli,
        collectives,
        compare,
        course,
        estimate,
        gemm,
        hardware,
        hlo,
        inference,
        lab,
        models,
        overlap,
        peers,
        plots,
        rings,
        roofline,
        sharding,
        svg,
        systolic,
        tables,
        training,
        units,
        validation,
        widgets,
    )
    from .book import cheatsheet
    from .book.checks import checked_numbers, expect
    from .book.numbers import published
    from .collectives import all_gather, all_reduce, all_to_all, reduce_scatter
    from .course.answers import check
    from .course.hints import hint
    from .course.session import setup
    from .course.variants import problem
    from .estimate import Estimate
    from .hardware.chips import Chip, get_chip, list_chips
    from .hardware.gpu import GpuCluster
    from .hardware.topology import TpuMesh
    from .inference import deployment, moe, serving
    from .lab import bench, multihost, profiling, runtime, xla
    from .models import TransformerConfig, get_model
    from .sharding import ShardedMatmul, sharded_matmul
    from .tables import Table

__version__ = "0.1.0"

# The ground floor's modules, and the wings (folders with a face of their own).
_MODULES = ("units", "tables", "svg", "estimate", "compare", "hardware", "models", "roofline", "gemm", "systolic",
            "collectives", "rings", "sharding", "overlap", "hlo", "training", "inference", "validation", "peers", "lab",
            "book", "course", "plots", "widgets", "cli")
# The one table of the face: each name `import scalebook as sb` offers → the module that defines it (a module's
# own name, or a path ending in it: the module). Nothing is imported until a name is first used.
_TABLE = {
    "Chip": "hardware.chips", "get_chip": "hardware.chips", "list_chips": "hardware.chips",
    "TpuMesh": "hardware.topology", "GpuCluster": "hardware.gpu",
    "TransformerConfig": "models", "get_model": "models",
    "Estimate": "estimate", "Table": "tables", "ShardedMatmul": "sharding", "sharded_matmul": "sharding",
    **{name: "collectives" for name in ("all_gather", "reduce_scatter", "all_reduce", "all_to_all")},
    "expect": "book.checks", "checked_numbers": "book.checks", "published": "book.numbers",
    "check": "course.answers", "problem": "course.variants", "hint": "course.hints", "setup": "course.session",
    **{name: name for name in _MODULES},
    # the inference package's modules that chapters call by their own name (sb.serving.simulate, sb.moe.dispatch)
    **{name: f"inference.{name}" for name in ("deployment", "moe", "serving")},
    # the lab's and the book's modules that chapters call by their own name (sb.xla.compiled, sb.bench.calibrate)
    **{name: f"lab.{name}" for name in ("runtime", "xla", "bench", "profiling", "multihost")},
    "cheatsheet": "book.cheatsheet",
}
# Old names a reader's notebook may still use: name → (message, target, removal release).
_DEPRECATED = {
    "Plan": ("use sb.ShardedMatmul (what sb.sharded_matmul returns; a training plan is sb.training.plan's)",
             "sharding:ShardedMatmul", "0.3"),
    "decoder": ("use sb.lab.ch07_decoder (chapter 7's lab)", "lab.ch07_decoder", "0.3"),
    "sharded_ops": ("use sb.lab.ch10_programs (chapter 10's programs)", "lab.ch10_programs", "0.3"),
    "pipeline": ("use sb.training (pipeline_bubble, pipeline_schedule, ...)", "training.pipeline", "0.3"),
    "planner": ("use sb.training (plan, check_parallelism)", "training.planner", "0.3"),
    "prediction": ("use sb.training (predict, Prediction)", "training.prediction", "0.3"),
    "autograde": ("use sb.course.grader.autograde (the classroom moved into sb.course)", "course.grader.autograde",
                  "0.3"),
    "problems": ("use sb.course.key (the answer key moved into sb.course)", "course.key", "0.3"),
    "labs": ("use sb.lab (the chapters' programs live in the lab)", "lab", "0.3"),
    "grading": ("use sb.expect and sb.checked_numbers (the book's checks are sb.book.checks)", "book.checks", "0.3"),
    "notebooks": ("use sb.book.notebooks", "book.notebooks", "0.3"),
    "serving_report": ("use sb.serving (Report, METRICS) or sb.inference.serving.report (percentile)",
                       "inference.serving.report", "0.3"),
}

__all__ = list(_TABLE)
__getattr__, __dir__ = face(__name__, _TABLE, _DEPRECATED)
