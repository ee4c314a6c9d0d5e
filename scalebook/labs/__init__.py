"""The chapters' live programs, one module per chapter: what a reader runs on real (or emulated) devices.

- `ch05_mlp`: one training step of a sharded MLP under DP, FSDP, TP and FSDP+TP, and what XLA emitted.
- `ch07_decoder`: a tiny decoder-only Transformer with a KV cache, its decode step timed.
- `ch09_transformer`: chapter 9's program to profile, one training step of a small Transformer.
- `ch10_programs`: one matmul in JAX's three sharding modes, collective matmuls, the multi-host layout;
  `ch10_moe`: a toy mixture of experts three ways; `ch10_routing`: top-k routing (exercise 10.Q2).

Each module imports JAX only when one of its functions is called, and this face loads a module only when it is
first named: `sb.labs.ch07_decoder.measure_decode(...)`. The modules keep their chapter's number in the name so a
reader finds a program from the page that runs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..faces import face

if TYPE_CHECKING:
    from . import ch05_mlp, ch07_decoder, ch09_transformer, ch10_moe, ch10_programs, ch10_routing

_TABLE = {name: name for name in ("ch05_mlp", "ch07_decoder", "ch09_transformer", "ch10_moe", "ch10_programs",
                                  "ch10_routing")}

__all__ = list(_TABLE)
__getattr__, __dir__ = face(__name__, _TABLE, {})
