"""Training: how long a step takes and what it holds, by the book's model and by the calibrated one.

One package, one vocabulary. A `Layout` names the degrees of a run (data, fully sharded data, tensor, pipeline,
context and expert parallelism; virtual stages; microbatches). The modules, each building only on those
before it:

    layout.py      `Layout`: the degrees, validated once; `Layout.from_strategy` reads ch. 5's X/Y/P
    pipeline.py    schedules, bubbles and stage-to-stage sends
    footprint.py   memory per chip: the book's 10 bytes/parameter and the mixed-precision (Korthikanti) count
    book.py        ch. 5's per-layer roofline of each strategy, its thresholds and `step_time`
    frameworks.py  `Framework`: the share of the modelled rate each family of training code reaches
    prediction.py  `predict`: one step of a published layout, term by term, ideal (the book's bound) or calibrated
    ideals.py      `compare_ideals`: one layout's book `step_time` beside `predict`'s ideal bound, term by term
    planner.py     `plan`: one candidate loop over Layouts, priced by the book's model or a prediction (`PLAN_MODES`)
    curves.py      ch. 5's strategy curves against the batch and the FSDP + TP best split

(The modules are not named after the functions they hold, so `import scalebook.training.planner as m` binds the
module and `sb.training.plan` the function.) This face's `__all__` is the package's contract; each name loads its
module on first use. A layout travels whole: `predict`, `training_memory` and `plan`'s candidates take one
`Layout` (keyword degrees build one, `Layout.of`), and `fsdp` is a degree wherever it appears, as in `Layout`.
`critical_batch` is an old name of `min_tokens_per_chip` (tokens per chip that hide a strategy's communication),
kept apart from `roofline.critical_batch` (a matmul's batch at the ridge point).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..faces import face

if TYPE_CHECKING:
    from . import book, curves, footprint, frameworks, ideals, layout, pipeline, planner, prediction, terms
    from .book import (
        STRATEGIES,
        comms_terms,
        comms_time,
        expert_parallel,
        expert_width_threshold,
        layer_cost,
        mfu,
        min_tokens_per_chip,
        step_time,
        tp_limit,
        x_opt,
    )
    from .footprint import (
        OPTIMIZERS,
        RECOMPUTE,
        REMAT_SAVES,
        Memory,
        activation_bytes,
        activation_bytes_per_layer,
        max_params,
        memory,
        training_memory,
    )
    from .frameworks import DEFAULT_FRAMEWORK, Framework, framework_names, get_framework
    from .ideals import IdealComparison, compare_ideals
    from .layout import Layout
    from .pipeline import (
        PIPELINE_SCHEDULES,
        idle_fraction,
        interleaved_schedule,
        pipeline_bubble,
        pipeline_comms,
        pipeline_schedule,
        zero_bubble_schedule,
    )
    from .planner import PLAN_MODES, TrainingPlan, check_parallelism, plan
    from .prediction import Prediction, predict

_TABLE = {
    "Layout": "layout",
    **{name: "pipeline" for name in ("PIPELINE_SCHEDULES", "pipeline_bubble", "pipeline_schedule",
                                     "interleaved_schedule", "zero_bubble_schedule", "idle_fraction",
                                     "pipeline_comms")},
    **{name: "footprint" for name in ("OPTIMIZERS", "REMAT_SAVES", "RECOMPUTE", "Memory", "memory",
                                      "activation_bytes", "max_params", "activation_bytes_per_layer",
                                      "training_memory")},
    **{name: "book" for name in ("STRATEGIES", "layer_cost", "expert_width_threshold", "min_tokens_per_chip",
                                 "tp_limit", "x_opt", "comms_terms", "comms_time", "step_time", "mfu",
                                 "expert_parallel")},
    "Prediction": "prediction", "predict": "prediction",
    "IdealComparison": "ideals", "compare_ideals": "ideals",
    **{name: "frameworks" for name in ("Framework", "get_framework", "framework_names", "DEFAULT_FRAMEWORK")},
    "PLAN_MODES": "planner", "TrainingPlan": "planner", "plan": "planner", "check_parallelism": "planner",
    **{name: name for name in ("layout", "pipeline", "footprint", "book", "terms", "frameworks", "prediction",
                               "ideals", "planner", "curves")},
}
# Old names a reader's notebook may still use: name → (message, target, removal release).
_DEPRECATED = {
    "critical_batch": ("use sb.training.min_tokens_per_chip (sb.roofline.critical_batch is a matmul's ridge batch, "
                       "another quantity)", "book:min_tokens_per_chip", "0.3"),
}

__all__ = list(_TABLE)
__getattr__, __dir__ = face(__name__, _TABLE, _DEPRECATED)
