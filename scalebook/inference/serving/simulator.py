"""A small discrete-event simulator of an LLM serving engine, timed by the analytic model of `inference.steps`.

Chapter 7 prices one prefill and one decode step; a server strings thousands of them together while requests
arrive at random. This module plays that out, so a reader can watch queueing turn step times into the latencies a
user feels: time to first token (TTFT), time per output token (TPOT) and end-to-end latency, against throughput.

The model, in brief:

* Requests arrive as a Poisson process (`Workload.rate` per second). Prompt and output lengths are fixed or
  lognormal (`Lengths`); with probability `prefix_hit` a fraction `prefix_fraction` of the prompt is already in a
  prefix cache, and only the rest is prefilled.
* The engine has `slots` decode slots (the most sequences decoded together; by default as many KV caches as fit
  in HBM beside the weights at a typical context, `steps.max_batch`). Continuous batching: sequences join free
  slots, first come first served, at step boundaries, and leave the step they emit their last token.
* A decode step of B active sequences costs `steps.decode_step(batch=B, context=their mean context)`; every
  sequence emits one token per step. A prefill costs `steps.prefill(tokens=uncached prompt tokens)`, one
  prompt at a time (prefill is compute-bound, so batching prompts would not shorten the total) and emits the
  first token.
* "interleaved": prefill and decode share all `n_chips`; whenever a slot is free and a request waits, the engine
  prefills it and decoding pauses meanwhile (prefill first, as most engines schedule by default).
* "disaggregated": `prefill_chips` prefill prompts one after another (first come first served) and ship each
  prompt's whole KV cache to the `decode_chips` over a link of `kv_bandwidth` bytes/s (by default the chip's DCN
  bandwidth times the smaller pool), one transfer at a time; decoding never pauses for a prefill.

It measures, per request, TTFT = first token − arrival, TPOT = (last token − first token) / (output − 1) and
end-to-end = last token − arrival; over the run, output tokens per second from time 0 to the last token (the final
drain included), the mean decode batch per step, the fraction of chip-seconds busy and the MFU.

What it leaves out, on purpose: KV memory is budgeted by slots, not by each sequence's actual length (a long
sequence takes one slot like a short one); each pool runs one model copy over all its chips (no replicas);
tensor-parallel collectives, sampling and host overheads are not timed; a prefix hit's attention over its cached
part is not counted; prefix-cache capacity, eviction and routing are not modelled (hits are a coin flip); nothing is
preempted or chunked. Step times are cached by batch and context bucket (about 3% wide), and the clock jumps over
runs of identical steps: 10,000 requests simulate in well under a second.

    w = Workload(rate=2.0, prompt=Lengths(1024, 0.5), output=Lengths(256, 0.5))
    report = simulate(w, Engine("llama3-70b", "v5e", n_chips=16, param_bytes=1, kv_bytes=1), n_requests=2000)
    report.percentile("ttft", 99), report.throughput
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial

from ...kinds import mapping_with
from ...tables import Table
from ...units import check_int, checks, fmt_time, is_a
from ..steps import decode_step, kv_cache_bytes, prefill
from .engine import Engine
from .report import Report
from .workload import CHAT_OUTPUT, CHAT_PROMPT, Lengths, Workload

__all__ = ["simulate", "chapter_engines", "engine_comparison", "forget_step_times"]

MAX_REQUESTS = 10**5  # the most requests one simulation replays (seconds and memory grow with them)


def _bucket(context: float) -> tuple[float, float]:
    """Return the centre and upper edge of the context bucket holding `context` tokens (about 1/32 octave)."""
    width = 2.0 ** max(4, math.floor(math.log2(max(context, 1.0))) - 5)
    lower = math.floor(context / width) * width
    return lower + width / 2, lower + width


@lru_cache(maxsize=1 << 16)
def _decode_cost(engine: Engine, batch: int, context: float) -> tuple[float, float]:
    """Return the seconds and FLOPs of one decode step of `batch` sequences at `context` tokens."""
    step = decode_step(engine.model, engine.chip, engine.pools()[1], batch, context, engine.param_bytes,
                       engine.kv_bytes)
    return step.time, step.flops


@lru_cache(maxsize=1 << 16)
def _prefill_cost(engine: Engine, tokens: int) -> tuple[float, float]:
    """Return the seconds and FLOPs of prefilling `tokens` prompt tokens."""
    est = prefill(engine.model, engine.chip, engine.pools()[0], tokens, engine.mfu)
    return est.time, est.flops


def forget_step_times() -> None:
    """Forget the step times cached so far, so that the next run computes each afresh (a cold run, as a
    benchmark times it); the numbers a run reports do not change."""
    _decode_cost.cache_clear()
    _prefill_cost.cache_clear()


@dataclass(frozen=True)
class _Trace:
    """What the decode loop saw: when each request was admitted and finished (s), and its step counters."""

    admitted: list[float]
    finish: list[float]
    steps: int
    tokens: int
    busy: float
    flops: float


def _decode_loop(ready: list[float], stall: list[float], prompt: list[int], output: list[int], slots: int,
                 step_cost: Callable[[int, float], tuple[float, float]]) -> _Trace:
    """Run continuous batching over requests that can join at `ready` (s, ascending); admitting one pauses the
    engine `stall` s (its prefill when interleaved). Steps are taken in runs between events, each run at one
    step time: until a sequence finishes, a waiting request arrives or the mean context leaves its bucket."""
    n = len(ready)
    admitted, finish = [0.0] * n, [0.0] * n
    offset = [0] * n  # a sequence's context at global step s is offset + s
    heap: list[tuple[int, int]] = []
    t, step, i, S, steps, tokens, busy, flops = 0.0, 0, 0, 0, 0, 0, 0.0, 0.0
    while i < n or heap:
        while i < n and len(heap) < slots and ready[i] <= t:
            t += stall[i]
            admitted[i] = finish[i] = t
            if output[i] > 1:
                offset[i] = prompt[i] + 1 - step
                S += offset[i]
                heapq.heappush(heap, (step + output[i] - 1, i))
            i += 1
        if not heap:
            if i < n:
                t = max(t, ready[i])
            continue
        B = len(heap)
        context = S / B + step
        centre, upper = _bucket(context)
        dt, step_flops = step_cost(B, centre)
        k = min(heap[0][0] - step, max(1, math.ceil(upper - context)))
        if i < n and B < slots:
            k = min(k, max(1, math.ceil((ready[i] - t) / dt)))
        t, step, steps, tokens, busy = t + k * dt, step + k, steps + k, tokens + k * B, busy + k * dt
        flops += k * step_flops
        while heap and heap[0][0] <= step:
            j = heapq.heappop(heap)[1]
            finish[j] = t
            S -= offset[j]
    return _Trace(admitted, finish, steps, tokens, busy, flops)


def _prefill_pool(arrival: Sequence[float], prefill_s: Sequence[float],
                  transfer_s: Sequence[float]) -> tuple[list[float], list[float]]:
    """Return when each prefill ends and when its KV cache reaches the decode chips (s): one prefill and one
    transfer at a time, first come first served."""
    done, ready = [], []
    end = link = 0.0
    for a, p, x in zip(arrival, prefill_s, transfer_s):
        end = max(a, end) + p
        link = max(end, link) + x
        done.append(end)
        ready.append(link)
    return done, ready


@checks(workload=is_a(Workload), engine=is_a(Engine), n_requests=lambda n, v: check_int(n, v, 1, MAX_REQUESTS),
        seed="count0")
def simulate(workload: Workload, engine: Engine, n_requests: int = 1000, seed: int = 0) -> Report:
    """Return the `Report` of serving `n_requests` requests of `workload` on `engine` (deterministic per `seed`)."""
    req = workload.sample(n_requests, seed)
    slots = engine.batch_slots(workload)
    prefill_s, prefill_flops = zip(*(_prefill_cost(engine, u) for u in req.uncached))
    prompt, output = list(req.prompt), list(req.output)
    step_cost = partial(_decode_cost, engine)
    if engine.mode == "interleaved":
        trace = _decode_loop(list(req.arrival), list(prefill_s), prompt, output, slots, step_cost)
        first = trace.admitted
    else:
        W = engine.link_bandwidth()
        transfer = [kv_cache_bytes(engine.model, p, 1, engine.kv_bytes) / W for p in prompt]
        first, ready = _prefill_pool(req.arrival, prefill_s, transfer)
        trace = _decode_loop(ready, [0.0] * n_requests, prompt, output, slots, step_cost)
    finish = tuple(end if n > 1 else start for end, start, n in zip(trace.finish, first, output))
    return Report(workload, engine, slots, req, tuple(first), finish, trace.steps, trace.tokens,
                  math.fsum(prefill_s), trace.busy, trace.flops + math.fsum(prefill_flops), seed)



def chapter_engines() -> dict[str, Engine]:
    """Return ch. 8's two 32-chip servers for LLaMA 3-70B in int8: interleaved, and 24 prefill + 8 decode chips."""
    return {"interleaved (32 chips)": Engine("llama3-70b", "v5e", 32, 1, 1),
            "disaggregated (24 + 8)": Engine("llama3-70b", "v5e", 32, 1, 1, mode="disaggregated",
                                             prefill_chips=24, decode_chips=8)}


@checks(n_requests="count", seed="count0", rates="sizes",
        engines=lambda name, value: value if value is None else mapping_with(is_a(Engine), "serving Engines")(
            name, value))
def engine_comparison(rates: Sequence[float] = (1, 2, 4, 6), engines: dict[str, Engine] | None = None,
                      prompt: Lengths | float = CHAT_PROMPT, output: Lengths | float = CHAT_OUTPUT,
                      n_requests: int = 2000, seed: int = 0) -> Table:
    """Return one row per engine (default: `chapter_engines()`) and arrival rate (requests/s) of `simulate`: median
    and p99 time to first token and time per output token (s), output tokens/s per chip, and the mean decode
    batch. The same requests (same `seed`) go to every engine at a given rate."""
    rows = []
    for label, engine in (engines or chapter_engines()).items():
        for rate in rates:
            r = simulate(Workload(rate, prompt, output), engine, n_requests, seed)
            rows.append({"engine": label, "requests/s": rate, "TTFT p50": r.percentile("ttft", 50),
                         "TTFT p99": r.percentile("ttft", 99), "TPOT p50": r.percentile("tpot", 50),
                         "TPOT p99": r.percentile("tpot", 99), "tokens/s/chip": r.throughput_per_chip,
                         "mean batch": r.mean_batch})
    return Table(rows, formats={**dict.fromkeys(("TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99"), fmt_time),
                                "tokens/s/chip": lambda v: f"{v:.4g}", "mean batch": lambda v: f"{v:.1f}"},
                 title=f"Simulated serving, {n_requests} requests per run")
