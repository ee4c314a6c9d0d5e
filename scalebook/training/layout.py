"""A training layout: how many ways a run splits its batch, its weights, its layers, its sequence and its experts.

`Layout` is the one vocabulary of the training package: `predict` prices one, `plan` searches over them, and
ch. 5's strategies (DP, FSDP, TP, FSDP + TP, DP + TP with pipelining, in its X/Y/P letters) are layouts too
(`Layout.from_strategy`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from ..units import check_int

__all__ = ["Layout", "degree_or_flag"]

# ch. 5's strategies in its letters: X the data (or FSDP) degree, Y the tensor-parallel degree, P the stages.
_STRATEGY_DEGREES = {
    "dp": lambda X, Y, P: {"dp": X},
    "fsdp": lambda X, Y, P: {"fsdp": X},
    "tp": lambda X, Y, P: {"tp": Y},
    "fsdp_tp": lambda X, Y, P: {"fsdp": X, "tp": Y},
    "dp_tp": lambda X, Y, P: {"dp": X, "tp": Y, "pp": P},
}


@dataclass(frozen=True)
class Layout:
    """The parallel degrees of a training run; `chips` = dp · fsdp · tp · pp · cp.

    `dp`: replicas that each hold the whole weights (their optimizer state sharded, ZeRO-1); `fsdp`: replicas
    that shard weights, gradients and optimizer state (ZeRO-3); a run may have both (hybrid sharding: FSDP
    inside a group, DP across groups). `tp` tensor, `pp` pipeline stages (each running `virtual_stages` chunks
    of layers, interleaved), `cp` context parallelism (the sequence split; the weights shared as data
    parallelism's are). `ep` splits an MoE's experts `ep` ways. Within the data-parallel chips (ep divides
    dp · fsdp · cp, FSDP's chips included, as MaxText shards experts) each expert is also split by the `tp` chips;
    folded over tensor x data parallelism (ep divides dp · fsdp · cp · tp but not dp · fsdp · cp), Megatron-Core's
    "MoE parallel folding", the experts keep their own grid: no expert tensor parallelism (`expert_tp` = 1) and
    the EP group the innermost chips. `microbatches`: per replica and step (None: decided by the batch, one
    sequence each).
    """

    dp: int = 1
    fsdp: int = 1
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    virtual_stages: int = 1
    microbatches: int | None = None

    def __post_init__(self) -> None:
        for name in ("dp", "fsdp", "tp", "pp", "cp", "ep", "virtual_stages"):
            check_int(name, getattr(self, name))
        if self.microbatches is not None:
            check_int("microbatches", self.microbatches)
        if (self.dp * self.fsdp * self.cp * self.tp) % self.ep:
            raise ValueError(f"ep={self.ep} must divide the chips of a pipeline stage dp·fsdp·cp·tp = "
                             f"{self.dp * self.fsdp * self.cp * self.tp}: experts are split over the data-parallel "
                             f"chips, or folded over tensor x data parallelism")
        if self.virtual_stages > 1 and self.pp == 1:
            raise ValueError(f"virtual_stages={self.virtual_stages} needs a pipeline (pp > 1)")

    @property
    def chips(self) -> int:
        """Chips the layout occupies."""
        return self.dp * self.fsdp * self.tp * self.pp * self.cp

    @property
    def data_parallel(self) -> int:
        """Replicas the batch splits over: dp · fsdp (context parallelism splits each sequence, not the batch)."""
        return self.dp * self.fsdp

    @property
    def expert_tp(self) -> int:
        """Chips each expert's matmuls are split over: `tp` when EP runs within the data-parallel chips, 1 when
        it is folded over tensor x data parallelism (Megatron-Core's expert_tensor_parallel_size=1)."""
        return self.tp if (self.dp * self.fsdp * self.cp) % self.ep == 0 else 1

    @property
    def expert_dp(self) -> int:
        """Chips that hold the same experts and reduce their gradients: a stage's chips over ep · expert_tp."""
        return self.dp * self.fsdp * self.cp * self.tp // (self.ep * self.expert_tp)

    @property
    def sharded(self) -> bool:
        """Whether the weights are fully sharded (FSDP / ZeRO-3) across the data-parallel chips."""
        return self.fsdp > 1

    @classmethod
    def from_strategy(cls, strategy: str, X: int = 1, Y: int = 1, P: int = 1) -> Layout:
        """The layout of ch. 5's `strategy` ('dp', 'fsdp', 'tp', 'fsdp_tp', 'dp_tp') with its X, Y and P."""
        if strategy not in _STRATEGY_DEGREES:
            raise ValueError(f"strategy={strategy!r}; allowed: {list(_STRATEGY_DEGREES)}")
        X, Y, P = (check_int(name, value) for name, value in (("X", X), ("Y", Y), ("P", P)))
        return cls(**_STRATEGY_DEGREES[strategy](X, Y, P))

    @classmethod
    def of(cls, n_chips: int, *, tp: int = 1, pp: int = 1, cp: int = 1, ep: int = 1, dp: int | None = None,
           fsdp: int | None = None, virtual_stages: int = 1, microbatches: int | None = None) -> Layout:
        """The layout of `n_chips` chips with these degrees: the data-parallel chips, n_chips / (tp·pp·cp), go to `dp`
        (ZeRO-1) unless `fsdp` or `dp` says how they split (the other takes the rest: `fsdp=256` of 512 data chips
        leaves dp=2, FSDP inside each of two groups)."""
        chips = check_int("n_chips", n_chips)
        tp, pp, cp = (check_int(name, value) for name, value in (("tp", tp), ("pp", pp), ("cp", cp)))
        if chips % (tp * pp * cp):
            raise ValueError(f"n_chips={chips} must be a multiple of tp·pp·cp = {tp * pp * cp}")
        data = chips // (tp * pp * cp)
        for name, value in (("dp", dp), ("fsdp", fsdp)):
            if value is not None and data % check_int(name, value):
                raise ValueError(f"{name}={value} must divide the {data} data-parallel chips of n_chips={chips} / "
                                 f"(tp·pp·cp = {tp * pp * cp})")
        if dp is not None and fsdp is not None and dp * fsdp != data:
            raise ValueError(f"dp·fsdp = {dp}·{fsdp} must equal the {data} data-parallel chips of n_chips={chips}")
        if fsdp is None:
            dp = data if dp is None else dp
            fsdp = data // dp
        return cls(dp=data // fsdp, fsdp=fsdp, tp=tp, pp=pp, cp=cp, ep=ep, virtual_stages=virtual_stages,
                   microbatches=microbatches)

    def __str__(self) -> str:
        parts = [f"{name.upper()} {value}" for name, value in (("tp", self.tp), ("pp", self.pp), ("cp", self.cp),
                                                              ("ep", self.ep), ("fsdp", self.fsdp), ("dp", self.dp))
                 if value > 1]
        if self.virtual_stages > 1:
            parts.append(f"v={self.virtual_stages}")
        return " × ".join(parts) or "one chip"


def degree_or_flag(name: str, value: object) -> object:
    """A `checks` kind for an `fsdp` argument: None, or a degree as in `Layout`. The old flag (True: FSDP over the
    data-parallel chips; False: ZeRO-1) still works and warns until release 0.3."""
    if isinstance(value, bool):
        warnings.warn(f"{name}={value} is deprecated and goes in release 0.3: {name} is a degree, as in Layout "
                      f"({name}=<the data-parallel chips> shards them all, {name}=1 keeps ZeRO-1), or pass a Layout",
                      DeprecationWarning, stacklevel=3)
        return value
    return value if value is None else check_int(name, value)
