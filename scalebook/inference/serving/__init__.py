"""The serving simulator: requests arrive at random, an engine prefills and decodes them step by step, timed by
the step model (`inference.steps`), and a report says what a user felt and what the chips did.

The modules, each building only on those before it:

    workload.py   the traffic: token-count distributions (`Lengths`), Poisson arrivals, the sampled `Requests`
    engine.py     `Engine`: a model on chips, its decode slots, interleaved or disaggregated
    report.py     `Report`: what a run measured (latency percentiles, throughput, batch, utilisation, MFU)
    simulator.py  `simulate`: continuous batching, event by event; ch. 8's two engines compared
    timelines.py  tiny engines for the figures: serving's bars and continuous batching's slots, step by step

This face (`sb.serving`, also `sb.inference.serving`) serves every name a chapter uses, flat; each name loads its
module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...faces import face

if TYPE_CHECKING:
    from . import engine, report, simulator, timelines, workload
    from .engine import MODES, Engine
    from .report import METRICS, Report
    from .simulator import chapter_engines, engine_comparison, simulate
    from .timelines import batching_snapshots, engine_segments
    from .workload import CHAT_OUTPUT, CHAT_PROMPT, Lengths, Requests, Workload

_TABLE = {
    **{name: "workload" for name in ("Lengths", "Workload", "Requests", "CHAT_PROMPT", "CHAT_OUTPUT")},
    "Engine": "engine", "MODES": "engine", "Report": "report", "METRICS": "report",
    **{name: "simulator" for name in ("simulate", "engine_comparison", "chapter_engines")},
    **{name: "timelines" for name in ("engine_segments", "batching_snapshots")},
    **{name: name for name in ("workload", "engine", "report", "simulator", "timelines")},
}
# Old names a reader's notebook may still use: name → (message, target, removal release).
_DEPRECATED: dict[str, tuple[str, str, str]] = {}

__all__ = list(_TABLE)
__getattr__, __dir__ = face(__name__, _TABLE, _DEPRECATED)
