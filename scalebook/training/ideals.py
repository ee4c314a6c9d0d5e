"""One layout's two ideal models side by side: the book's `step_time` (ch. 5 and 12) and `predict`'s ideal bound.

Both price a training step with every FLOP at peak and every collective hidden behind the compute, and both move
the weights and gradients once a step. Where they part, a term says how much and why (`WHY`): the recompute the
layout runs (the book's step has none), the pipeline's bubble and sends (the book keeps them, the bound does not),
how many activation bytes tensor parallelism moves (the book charges the backward twice the forward's; Megatron's
sequence parallelism moves four AllGathers and four ReduceScatters a layer), and the width and links of the
gradient reduction. `compare_ideals` returns both, term by term, with the table chapter 13 prints.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..hardware.chips import Chip
from ..hardware.gpu import GpuCluster, resolve
from ..models import TransformerConfig, get_model
from ..tables import Table
from ..units import checks, fmt_time, is_a
from .book import comms_terms, step_time
from .footprint import RECOMPUTE
from .layout import Layout
from .prediction import predict

__all__ = ["TERMS", "WHY", "IdealComparison", "compare_ideals"]

TERMS = ("compute", "attention", "recompute", "bubble", "tp", "cp", "ep", "dp", "pp sends")
WHY = {
    "compute": "the model's FLOPs but attention's, at peak: the same in both",
    "attention": "attention's FLOPs at peak: the same in both (the book's when it is given seq_len)",
    "recompute": "FLOPs the layout's recompute policy repeats: predict counts them, the book's step has none",
    "bubble": "pipeline stages idle, (P - 1)/M of the compute: the book keeps it, the bound schedules it away",
    "tp": "the book charges each block 6·B·D bytes (the backward twice the forward); predict moves Megatron's 4 "
          "AllGathers and 4 ReduceScatters a layer, (Y - 1)/Y of the array each",
    "cp": "context parallelism's K/V ring: the book has none",
    "ep": "expert parallelism's AllToAlls: the book's step has none (`expert_parallel` prices them apart)",
    "dp": "weights and gradients once a step in both; predict reduces the gradients at grad_bytes over the links "
          "(a GPU cluster's levels, a TPU slice's axes), the book in bf16 at ch. 12's W_collective or one ICI link",
    "pp sends": "stage-to-stage sends: the book adds them to its communication, the bound hides them",
}


@dataclass(frozen=True)
class IdealComparison:
    """Seconds of each term (`TERMS`) of one layout's step by the book's `step_time` (`book`) and by `predict`'s
    ideal bound (`ideal`), each step as its model combines them (`book_step`, `ideal_step`: the compute against
    the slowest communication)."""

    layout: Layout
    strategy: str
    book: dict[str, float]
    ideal: dict[str, float]
    book_step: float
    ideal_step: float

    @property
    def table(self) -> Table:
        """One row per term either model charges, the two steps last, with why they differ."""
        rows = [{"term": t, "book step_time": self.book[t], "predict ideal": self.ideal[t], "why": WHY[t]}
                for t in TERMS if self.book[t] or self.ideal[t]]
        rows.append({"term": "step", "book step_time": self.book_step, "predict ideal": self.ideal_step,
                     "why": "compute (with the book's bubble) against the slowest communication"})
        seconds = lambda v: fmt_time(v) if v else "—"  # noqa: E731
        return Table(rows, formats={"book step_time": seconds, "predict ideal": seconds},
                     title=f"the two ideal models of {self.layout} ({self.strategy}), term by term")


@checks(layout=is_a(Layout))
def _book_strategy(layout: Layout) -> tuple[str, int, int, int]:
    """Return ch. 5's (strategy, X, Y, P) for `layout`: the reverse of `Layout.from_strategy`. The book has no
    context or expert parallelism and no data parallelism across FSDP groups, so those layouts are refused."""
    if layout.cp > 1 or layout.ep > 1 or (layout.dp > 1 and layout.sharded):
        raise ValueError(f"layout={layout}: the book's step_time prices DP, FSDP, TP and their pairs with pipeline "
                         f"stages; it has no cp, ep or data parallelism across FSDP groups")
    X, Y, P = layout.data_parallel, layout.tp, layout.pp
    if layout.sharded:
        strategy = "fsdp_tp" if Y > 1 else "fsdp"
    elif Y > 1:
        strategy = "dp_tp" if X > 1 or P > 1 else "tp"
    else:
        strategy = "dp_tp" if P > 1 else "dp"
    if strategy in ("fsdp", "fsdp_tp", "dp") and P > 1:
        raise ValueError(f"layout={layout}: the book pipelines only ZeRO-1 data parallelism with TP (dp_tp)")
    return strategy, X, Y, P


def _book_terms(model: TransformerConfig, hardware: Chip | GpuCluster, n_chips: int, batch_tokens: float,
                seq_len: int, layout: Layout, M: int) -> tuple[str, dict[str, float], float]:
    """The book's strategy, its terms in seconds and its step (`step_time`) for `layout` with M microbatches."""
    strategy, X, Y, P = _book_strategy(layout)
    hardware = hardware.subset(n_chips) if isinstance(hardware, GpuCluster) else hardware
    peak = resolve(hardware)[1].peak_flops()
    compute = model.flops_per_token(0) * batch_tokens / (n_chips * peak)
    attention = (model.flops_per_token(seq_len) - model.flops_per_token(0)) * batch_tokens / (n_chips * peak)
    comms = comms_terms(model, hardware, batch_tokens, strategy, X, Y, 1, 1, P=P, microbatches=M)
    terms = {t: 0.0 for t in TERMS} | comms | {"compute": compute, "attention": attention,
                                               "bubble": (compute + attention) * (P - 1) / M}
    step = step_time(model, hardware, n_chips, batch_tokens, strategy, X=X, Y=Y, seq_len=seq_len, P=P,
                     microbatches=M).time
    return strategy, terms, step


@checks(n_chips="count", global_batch_tokens="size", seq_len="count", layout=is_a(Layout), recompute=RECOMPUTE,
        grad_bytes="size", reshard_after_forward="flag")
def compare_ideals(model: TransformerConfig | str, hardware: Chip | str | GpuCluster, n_chips: int,
                   global_batch_tokens: float, seq_len: int, *, layout: Layout, recompute: str = "selective",
                   grad_bytes: float = 4, reshard_after_forward: bool = True) -> IdealComparison:
    """Return one layout's step by both ideal models, term by term (`IdealComparison`; its `table` says why each
    term differs). `layout` must be one the book prices (`_book_strategy`); bf16 throughout, as the book's is.
    The book's pipeline runs the microbatches `predict` cuts (one sequence each, or the layout's `microbatches`);
    `recompute`, `grad_bytes` and `reshard_after_forward` are `predict`'s."""
    model = model if isinstance(model, TransformerConfig) else get_model(model)
    hardware, chip = resolve(hardware)
    if chip.kind == "gpu" and not isinstance(hardware, GpuCluster):
        hardware = GpuCluster(chip, gpus=n_chips)
    p = predict(model, hardware, n_chips, global_batch_tokens, seq_len, layout=layout, efficiency="ideal",
                recompute=recompute, grad_bytes=grad_bytes, reshard_after_forward=reshard_after_forward)
    strategy, book, book_step = _book_terms(model, hardware, n_chips, global_batch_tokens, seq_len, p.layout,
                                            p.layout.microbatches)
    ideal = {t: 0.0 for t in TERMS} | p.breakdown | p.hidden
    return IdealComparison(p.layout, strategy, book, ideal, book_step, p.step_time)
