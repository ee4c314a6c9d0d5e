"""Design puzzles: open problems whose answer is a layout, scored by the model that prices it.

Each `Puzzle` states a run (a model, chips, a batch of sequences) and a target: a step no longer than
`max_step` seconds in no more than `max_memory` bytes per chip. The answer is a `training.Layout`; `score`
prices it with `training.predict` (the calibrated model) and scores feasibility first (a layout of this many
chips that `predict` accepts and whose memory fits the cap and the chip), then the target, then how close its
step comes to the best layout `training.plan` finds: 0 when infeasible, 0.3 when feasible but too slow,
0.6 + 0.4 × (best step / its step) when it meets the target, so the planner's own layout scores 1.
`solution` is that layout, the worked answer; `explorer` moves the degrees and shows the score (it opens on
the solution). The explorer makes this an upper-floor module, beside the grader.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from functools import cache

from ..training.layout import Layout
from ..training.planner import plan
from ..training.prediction import Prediction, predict
from ..widgets.core import Explorer, explore

__all__ = ["Puzzle", "Score", "PUZZLES", "get_puzzle"]

GiB = 2**30


@dataclass(frozen=True)
class Score:
    """A layout's score (0 to 1), whether it is feasible and meets the target, its step (s) and memory (B/chip)."""

    points: float
    feasible: bool
    meets_target: bool
    step_time: float | None
    memory: float | None
    why: str

    def __str__(self) -> str:
        return f"{self.points:.2f} points: {self.why}"

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.meets_target else "#9a6700" if self.feasible else "#cf222e"
        return f"<p><b style='color:{colour}'>{self.points:.2f} points</b>: {html.escape(self.why)}</p>"


@dataclass(frozen=True)
class Puzzle:
    """Train `model` on `chips` of `hardware` with steps of `batch_tokens` tokens in `seq_len`-token sequences, in
    at most `max_step` seconds per step and `max_memory` bytes per chip."""

    pid: str
    model: str
    hardware: str
    chips: int
    batch_tokens: int
    seq_len: int
    max_step: float
    max_memory: float

    @property
    def text(self) -> str:
        """The puzzle as a student reads it."""
        return (f"Shard {self.model} on {self.chips} {self.hardware} chips, {self.batch_tokens:,} tokens per step in "
                f"{self.seq_len:,}-token sequences, so that a step takes at most {self.max_step:g} s and fits in "
                f"{self.max_memory / GiB:g} GiB per chip. Answer with a Layout (dp, fsdp, tp, pp, cp, ep).")

    def price(self, layout: Layout) -> Prediction:
        """The calibrated prediction of one step under `layout`, with selective recompute, or full recompute
        where only that fits the cap; raises `ValueError` for a layout of another size, a hybrid of DP and FSDP,
        or one `predict` refuses (a batch that does not split, ...)."""
        if not isinstance(layout, Layout):
            raise ValueError(f"layout={layout!r} must be a scalebook.training.Layout")
        if layout.chips != self.chips:
            raise ValueError(f"layout={layout} uses {layout.chips} chips; the run has {self.chips}")
        if layout.dp > 1 and layout.fsdp > 1:
            raise ValueError(f"layout={layout} mixes DP and FSDP; use one of them for the data-parallel degree")
        tries = [predict(self.model, self.hardware, self.chips, self.batch_tokens, self.seq_len, layout=layout,
                         recompute=recompute, efficiency="calibrated")
                 for recompute in ("selective", "full")]
        return next((p for p in tries if p.fits and p.memory_per_chip <= self.max_memory), tries[0])

    def solution(self) -> Layout:
        """The worked answer: the fastest layout the calibrated planner finds."""
        return _best(self)

    def score(self, layout: Layout) -> Score:
        """Score `layout`: feasibility, then the target, then closeness to the planner's best (see the module)."""
        try:
            p = self.price(layout)
        except ValueError as err:
            return Score(0.0, False, False, None, None, f"not a layout of this run: {err}")
        step, memory = p.step_time, p.memory_per_chip
        if not p.fits or memory > self.max_memory:
            return Score(0.0, False, False, step, memory, f"needs {memory / GiB:.1f} GiB per chip, over the "
                         f"{self.max_memory / GiB:g} GiB cap" + ("" if p.fits else " and the chip's HBM"))
        if step > self.max_step:
            return Score(0.3, True, False, step, memory,
                         f"fits, but a step takes {step:.3g} s, over {self.max_step:g} s")
        best = self.price(self.solution()).step_time
        points = round(0.6 + 0.4 * min(1.0, best / step), 3)
        return Score(points, True, True, step, memory, f"meets the target: {step:.3g} s against the planner's best "
                     f"{best:.3g} s, {memory / GiB:.1f} GiB per chip")


    def explorer(self) -> Explorer:
        """An explorer of this run's layouts: menus for TP, PP and CP degrees and for FSDP or DP over the rest;
        each move scores the layout. It opens on the worked solution."""
        best = self.solution()

        def view(tp: int, pp: int, cp: int, data: str) -> Score:
            rest, left = divmod(self.chips, tp * pp * cp)
            if left or rest < 1:
                return Score(0.0, False, False, None, None, f"tp·pp·cp = {tp * pp * cp} does not divide {self.chips}")
            return self.score(Layout(tp=tp, pp=pp, cp=cp, **{data: rest}))

        def menu(first: int) -> list[int]:
            return [first, *(d for d in (1, 2, 4, 8, 16, 32) if d != first)]

        return explore(view, title=self.text, tp=menu(best.tp), pp=menu(best.pp), cp=menu(best.cp),
                       data=["fsdp", "dp"] if best.dp == 1 else ["dp", "fsdp"])


@cache
def _best(puzzle: Puzzle) -> Layout:
    return plan(puzzle.model, puzzle.hardware, puzzle.chips, puzzle.batch_tokens, seq_len=puzzle.seq_len,
                efficiency="calibrated").layout


# Each target leaves the planner's best layout room and rules out the obvious ones (pure DP or FSDP runs out of
# memory; wider tensor parallelism fits but is too slow). tests/ground/test_puzzles.py checks both for every puzzle.
PUZZLES = (
    Puzzle("P1", "llama3-70b", "v5p", 256, 4 * 2**20, 8192, max_step=25.0, max_memory=60 * GiB),
    Puzzle("P2", "llama3-8b", "v5e", 256, 2 * 2**20, 8192, max_step=3.9, max_memory=14 * GiB),
    Puzzle("P3", "llama3-70b", "h100", 512, 4 * 2**20, 8192, max_step=9.0, max_memory=40 * GiB),
    Puzzle("P4", "llama3-405b", "v5p", 2048, 16 * 2**20, 8192, max_step=72.0, max_memory=85 * GiB),
    Puzzle("P5", "llama3-8b", "h100", 64, 2**20, 8192, max_step=1.9, max_memory=50 * GiB),
    Puzzle("P6", "llama2-13b", "v6e", 256, 2 * 2**20, 4096, max_step=1.4, max_memory=24 * GiB),
)


def get_puzzle(pid: str) -> Puzzle:
    """The puzzle with id `pid` ('P1' ... 'P6'); an unknown id raises `KeyError` listing them."""
    for puzzle in PUZZLES:
        if puzzle.pid == pid:
            return puzzle
    raise KeyError(f"pid={pid!r} is not a puzzle; there are {', '.join(p.pid for p in PUZZLES)}")
