"""Tiny serving engines for the chapter's figures, step by step: the bars of batched, interleaved and
disaggregated serving (`engine_segments`), and the slots of continuous batching before each step
(`batching_snapshots`). Schematic: unit costs, every request there at t = 0; `simulator` times the real thing."""

from __future__ import annotations

from collections.abc import Sequence

from ...units import checks

__all__ = ["engine_segments", "batching_snapshots"]


@checks(slots="count", t_prefill="size", t_step="size", outputs="counts", prompts="counts")
def engine_segments(mode: str, prompts: Sequence[int], outputs: Sequence[int], slots: int, t_prefill: float,
                    t_step: float) -> list[tuple[int, float, float, str, int]]:
    """Return (row, start, end, kind, request) bars of a tiny serving engine (times in seconds).

    'batched': prefill `slots` requests together, decode until all finish, repeat. 'interleaved': one slice
    decodes continuously and pauses for one request's prefill whenever a slot is free (continuous batching).
    'disaggregated': a prefill slice (row -1) prefills back to back; finished caches join the decode slice's
    free slots without pausing it. Requests all arrive at t = 0, prefill time scales with prompt length.
    """
    if mode not in ("batched", "interleaved", "disaggregated"):
        raise ValueError(f"mode={mode!r}; allowed: batched, interleaved, disaggregated")
    n = len(prompts)
    bars: list[tuple[int, float, float, str, int]] = []
    pre = [t_prefill * p / max(prompts) for p in prompts]
    if mode == "batched":
        t = 0.0
        for first in range(0, n, slots):
            group = list(range(first, min(n, first + slots)))
            span = sum(pre[r] for r in group)
            for row, r in enumerate(group):
                bars.append((row, t, t + span, "prefill", r))
            t += span
            longest = max(outputs[r] for r in group)
            for row, r in enumerate(group):
                bars.append((row, t, t + outputs[r] * t_step, "decode", r))
            t += longest * t_step
        return bars
    ready = [0.0] * n
    if mode == "disaggregated":
        t = 0.0
        for r in range(n):
            bars.append((-1, t, t + pre[r], "prefill", r))
            t += pre[r]
            ready[r] = t
    free_at = [0.0] * slots
    decodes: list[list] = []  # [row, start, end, request]; interleaved prefills stretch the ones they interrupt
    t = 0.0
    for r in range(n):
        row = free_at.index(min(free_at))  # the first free slot
        start = max(free_at[row], ready[r], t if mode == "interleaved" else 0.0)
        if mode == "interleaved":
            bars.append((row, start, start + pre[r], "prefill", r))
            for d in decodes:  # the whole slice prefills: every running decode waits
                if d[1] <= start < d[2]:
                    d[2] += pre[r]
                    free_at[d[0]] = d[2]
            start += pre[r]
            t = start
        decodes.append([row, start, start + outputs[r] * t_step, r])
        free_at[row] = start + outputs[r] * t_step
    return bars + [(row, a, b, "decode", r) for row, a, b, r in decodes]


@checks(slots="count", steps="count", outputs="counts")
def batching_snapshots(slots: int, outputs: Sequence[int], steps: int) -> list[tuple]:
    """Return, before each of `steps` decode steps of a continuous-batching engine, (step, slots, queue, done):
    lengths count tokens and requests are numbered from 0;
    each of `slots` KV slots holds (request, tokens made) or None; a request leaves when it has made
    `outputs[request]` tokens, and a free slot takes the next queued request before the following step."""
    if not isinstance(slots, int) or slots < 1 or not outputs or min(outputs) < 1:
        raise ValueError(f"need slots >= 1 and positive output lengths, got slots={slots!r}, outputs={outputs!r}")
    state: list[tuple[int, int] | None] = [None] * slots
    queue = list(range(len(outputs)))
    snaps, finished = [], []
    for step in range(steps):
        for i in range(slots):
            if state[i] is None and queue:
                state[i] = (queue.pop(0), 0)
        snaps.append((step, list(state), list(queue), list(finished)))
        for i, held in enumerate(state):
            if held is not None:
                r, made = held
                state[i] = (r, made + 1) if made + 1 < outputs[r] else None
                if made + 1 == outputs[r]:
                    finished.append(r)
    return snaps
