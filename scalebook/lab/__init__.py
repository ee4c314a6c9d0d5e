"""The live lab: what runs on real (or emulated) devices, with JAX imported only when a function needs it.

    runtime.py     `setup()` (8 emulated CPU devices before JAX starts), meshes and dtypes
    xla.py         `compiled`, the one way a function is compiled, and what XLA emitted (HLO, cost, collectives)
    bench.py       micro-benchmarks and `calibrate()`: this device's roofs and collective factors
    profiling.py   traces read back as op tables beside their rooflines
    multihost.py   N local JAX processes joined as one job

and the chapters' programs, one module per chapter, named by it so a reader finds a program from its page:
`ch05_mlp` (one training step of a sharded MLP under DP, FSDP, TP and FSDP+TP), `ch07_decoder` (a tiny
decoder with a KV cache, its decode step timed), `ch08_llama` (LLaMA 3-8B inference from scratch, chapter 8's
Question 4), `ch09_transformer` (chapter 9's program to profile),
`ch10_programs` (one matmul in JAX's three sharding modes, collective matmuls), `ch10_moe` (a toy mixture of
experts three ways) and `ch10_routing` (top-k routing). The lab stands on the ground floor; only a chapter's
program imports another chapter's program. Each name loads its module on first use: `sb.lab.ch07_decoder`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..faces import face

if TYPE_CHECKING:
    from . import (
        bench,
        ch05_mlp,
        ch07_decoder,
        ch08_llama,
        ch09_transformer,
        ch10_moe,
        ch10_programs,
        ch10_routing,
        multihost,
        profiling,
        runtime,
        xla,
    )

PROGRAMS = ("ch05_mlp", "ch07_decoder", "ch08_llama", "ch09_transformer", "ch10_moe", "ch10_programs", "ch10_routing")
_TABLE = {name: name for name in ("runtime", "xla", "bench", "profiling", "multihost", *PROGRAMS)}

__all__ = list(_TABLE)
__getattr__, __dir__ = face(__name__, _TABLE, {})
