"""A serving engine: a model on a pool of chips, its decode slots, and how prefill and decode share the chips
("interleaved") or split them ("disaggregated", the KV caches crossing a link between the pools)."""

from __future__ import annotations

from dataclasses import dataclass

from ...hardware.chips import Chip, get_chip
from ...models import TransformerConfig, get_model
from ...units import check_fields, checks, is_a
from ..steps import max_batch
from .workload import Workload

__all__ = ["Engine", "MODES"]

MODES = ("interleaved", "disaggregated")


@dataclass(frozen=True)
class Engine:
    """A serving engine: `model` on `n_chips` × `chip`, `param_bytes` per weight and `kv_bytes` per cached value,
    `slots` decode slots (None: what fits at the workload's typical context), `mode` "interleaved" or
    "disaggregated" (then `prefill_chips` + `decode_chips` = `n_chips`, half each by default, and KV caches travel
    at `kv_bandwidth` bytes/s), and prefill at `mfu` of peak."""

    model: TransformerConfig | str = "llama3-70b"
    chip: Chip | str = "v5e"
    n_chips: int = 16
    param_bytes: float = 2
    kv_bytes: float = 2
    slots: int | None = None
    mode: str = "interleaved"
    prefill_chips: int | None = None
    decode_chips: int | None = None
    kv_bandwidth: float | None = None
    mfu: float = 0.4

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", get_model(self.model))
        object.__setattr__(self, "chip", get_chip(self.chip))
        check_fields(self, mode=MODES, n_chips="count", slots="?count", prefill_chips="?count", decode_chips="?count",
                     param_bytes="size", kv_bytes="size", kv_bandwidth="?size", mfu="fraction")
        self.pools()

    def pools(self) -> tuple[int, int]:
        """Return the chips that prefill and the chips that decode (both `n_chips` when interleaved)."""
        if self.mode == "interleaved":
            return self.n_chips, self.n_chips
        P = self.prefill_chips or (self.n_chips - self.decode_chips if self.decode_chips else self.n_chips // 2)
        G = self.decode_chips or self.n_chips - P
        if P < 1 or G < 1 or P + G != self.n_chips:
            raise ValueError(f"disaggregated mode needs prefill_chips + decode_chips = n_chips with both >= 1, got "
                             f"prefill_chips={self.prefill_chips!r}, decode_chips={self.decode_chips!r}, "
                             f"n_chips={self.n_chips!r}")
        return P, G

    @checks(workload=is_a(Workload))
    def batch_slots(self, workload: Workload) -> int:
        """Return the decode slots: `slots`, or the KV caches of `workload.typical_context()` tokens that fit."""
        if self.slots is not None:
            return self.slots
        decode = self.pools()[1]
        fit = max_batch(self.model, self.chip, decode, workload.typical_context(), self.param_bytes, self.kv_bytes)
        if fit < 1:
            raise ValueError(f"n_chips: {self.model.name} at {self.param_bytes} bytes per weight leaves no room for a "
                             f"KV cache on {decode} × {self.chip.name}; use more chips (or decode_chips)")
        return fit

    def link_bandwidth(self) -> float:
        """Return the bytes/s that carry KV caches from prefill to decode chips (disaggregated mode)."""
        if self.kv_bandwidth is not None:
            return self.kv_bandwidth
        if not self.chip.dcn_bandwidth:
            raise ValueError(f"{self.chip.name} has no DCN bandwidth on file: pass kv_bandwidth (bytes/s)")
        return self.chip.dcn_bandwidth * min(self.pools())
