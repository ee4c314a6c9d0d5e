"""An explorer for the chapter on serving LLaMA 3-70B: one serving configuration (`deployment.serving_summary`),
with the model, chip, dtype, context, slice shape, reply length and the ICI collectives as controls.

The chapter's tables themselves (what a dollar buys, smallest slices, QPS per chip, the latency budget, cost per
token) are ground-floor functions in `scalebook.deployment`; this module only explores them.
"""

from __future__ import annotations

from ..inference.deployment import DTYPES, SLICES, serving_summary, slice_name
from ..units import checks
from .core import Explorer, explore, opening_on

__all__ = ["topology_explorer"]


@checks(dtype="dtype", context="count", decode_tokens="count", ici="flag")
def topology_explorer(model: str = "llama3-70b", chip: str = "v5e", dtype: str = "int8", context: int = 8192,
                      topology: str = "4x2", decode_tokens: int = 512, ici: bool = False) -> Explorer:
    """Return an explorer of one serving configuration: dtype, context and slice shape in; largest batch, step time,
    tokens and queries per second per chip and $ per million tokens out (opens on ch. 8's int8 4x2 at 8k)."""
    return explore(lambda model, chip, dtype, context, topology, decode_tokens, ici:
                   serving_summary(model, chip, dtype, context, topology, decode_tokens, 0, ici),
                   title="Serving one configuration", unfit=("leaves no room for",),
                   model=opening_on(("llama3-70b", "llama3-8b", "llama3-405b"), model),
                   chip=opening_on(("v5e", "v5p"), chip), dtype=opening_on(DTYPES, dtype),
                   context=opening_on(tuple(2**k for k in range(10, 18)), context),
                   topology=opening_on(tuple(slice_name(s) for s in SLICES[2:]), topology),
                   decode_tokens=opening_on((128, 256, 512, 1024, 2048, 4096), decode_tokens),
                   ici=opening_on((False, True), ici))
