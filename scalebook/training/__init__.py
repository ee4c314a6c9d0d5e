"""Training: how long a step takes and what it holds, by the book's model and by the calibrated one.

One package, one vocabulary. A `Layout` names the degrees of a run (data, fully sharded data, tensor, pipeline,
context and expert parallelism; virtual stages; microbatches). The modules, each building only on those
before it:

    layout.py      `Layout`: the degrees, validated once; `Layout.from_strategy` reads ch. 5's X/Y/P
    pipeline.py    schedules, bubbles and stage-to-stage sends
    footprint.py   memory per chip: the book's 10 bytes/parameter and the mixed-precision (Korthikanti) count
    book.py        ch. 5's per-layer roofline of each strategy, its thresholds and `step_time`
    prediction.py  `predict`: one step of a published layout, term by term, ideal (the book's bound) or calibrated
    planner.py     `plan`: one candidate loop over Layouts, priced by either model; `check_parallelism`

(The modules are not named after the functions they hold, so `import scalebook.training.planner as m` binds the
module and `sb.training.plan` the function.) This face's `__all__` is the package's contract.
"""

from __future__ import annotations

from .book import (
                   STRATEGIES,
                   comms_time,
                   critical_batch,
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
from .planner import TrainingPlan, check_parallelism, plan
from .prediction import Prediction, predict

__all__ = [
    "Layout",
    "PIPELINE_SCHEDULES", "pipeline_bubble", "pipeline_schedule", "interleaved_schedule", "zero_bubble_schedule",
    "idle_fraction", "pipeline_comms",
    "OPTIMIZERS", "REMAT_SAVES", "RECOMPUTE", "Memory", "memory", "activation_bytes", "max_params",
    "activation_bytes_per_layer", "training_memory",
    "STRATEGIES", "layer_cost", "expert_width_threshold", "min_tokens_per_chip", "critical_batch", "tp_limit",
    "x_opt", "comms_time", "step_time", "mfu", "expert_parallel",
    "Prediction", "predict",
    "TrainingPlan", "plan", "check_parallelism",
]
