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
preempted or chunked. A decode step is priced at the centre of its context bucket (about 3% wide), and the clock
jumps over runs of identical steps; a dense model's steps are priced by lines read off the step model once per
engine (an MoE's are asked of it and cached): 10,000 requests simulate in well under a second.

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


@dataclass(frozen=True)
class _DecodeLine:
    """A decode step read off `decode_step(batch=1, context=1)` where its terms are linear: the KV reads grow as
    batch x context, the FLOPs as the batch, the weight reads not at all (s = fixed + B·c·kv + max(B·math, params),
    the step model's T = B·KV/W + max(2·B·P/C, P·b/W))."""

    kv: float  # s per sequence per token of context
    math: float  # s of arithmetic per sequence
    params: float  # s of weight reads
    fixed: float  # s of the step's other local terms
    flops: float  # FLOPs per sequence

    def __call__(self, batch: int, context: float) -> tuple[float, float]:
        """Return the seconds and FLOPs of one decode step of `batch` sequences at `context` tokens."""
        return self.fixed + batch * context * self.kv + max(batch * self.math, self.params), batch * self.flops


@dataclass(frozen=True)
class _PrefillLine:
    """A prefill of T tokens read off two `prefill`s where its terms are linear: FLOPs T·(per_token + attention·T)
    (matmuls, then causal attention) at `rate` s per FLOP, against weight and cache writes of params + kv·T s."""

    per_token: float  # FLOPs per token of the matmuls
    attention: float  # FLOPs per token per token of prompt
    rate: float  # s per FLOP
    params: float  # s of weight reads
    kv: float  # s per token of KV cache written
    fixed: float  # s of the prefill's other local terms

    def __call__(self, tokens: int) -> tuple[float, float]:
        """Return the seconds and FLOPs of prefilling `tokens` prompt tokens."""
        flops = tokens * (self.per_token + self.attention * tokens)
        return self.fixed + max(flops * self.rate, self.params + self.kv * tokens), flops


_DecodeCost = Callable[[int, float], tuple[float, float]]  # (batch, context) -> (s, FLOPs) of one decode step
_PrefillCost = Callable[[int], tuple[float, float]]  # prompt tokens -> (s, FLOPs) of their prefill
_PROBE_TOKENS = (1, 1 << 20)  # the prompts a prefill's line is read off: far apart, so no digits cancel
_CHECKS = (((5, 777.0), (700, 12345.0)), (3000, 100_000))  # decode (batch, context)s and prefills each line redoes


def _agree(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two (s, FLOPs) pairs agree to a relative 1e-12."""
    return all(abs(x - y) <= 1e-12 * max(abs(x), abs(y)) for x, y in zip(a, b))


@lru_cache(maxsize=256)
def _step_costs(engine: Engine) -> tuple[_DecodeCost, _PrefillCost]:
    """Return `engine`'s decode cost, (batch, context) -> (s, FLOPs), and prefill cost, tokens -> (s, FLOPs).

    A run prices hundreds of decode steps and a prefill per request; asking the step model for each took most of
    a cold run (nine tenths of an explorer's answer, in the reader's browser too). A dense model on the engine's default
    layout at ideal efficiency prices no collective and its terms are linear (`_DecodeLine`, `_PrefillLine`), so
    the lines are read off three calls and then redo a few others to 1e-12; an MoE, whose weight reads follow its
    routing, or an engine whose lines miss is priced call by call."""
    decode, fill = partial(_decode_cost, engine), partial(_prefill_cost, engine)
    if engine.model.is_moe:
        return decode, fill
    P, G = engine.pools()
    one = decode_step(engine.model, engine.chip, G, 1, 1.0, engine.param_bytes, engine.kv_bytes)
    lo, hi = (prefill(engine.model, engine.chip, P, t, engine.mfu) for t in _PROBE_TOKENS)
    if any(s.t_ici or s.ici_adds for s in (one, lo, hi)):
        return decode, fill
    (t0, t1), span = _PROBE_TOKENS, _PROBE_TOKENS[1] - _PROBE_TOKENS[0]
    attention = (hi.flops / t1 - lo.flops / t0) / span
    kv = (hi.t_params - lo.t_params) / span
    line = _DecodeLine(one.t_kv, one.t_math, one.t_params, one.t_elementwise + one.t_fixed, one.flops)
    fill_line = _PrefillLine(lo.flops / t0 - attention * t0, attention, lo.t_math / lo.flops, lo.t_params - kv * t0,
                             kv, lo.t_kv + lo.t_elementwise + lo.t_fixed)
    steps, prompts = _CHECKS
    if all(_agree(line(b, c), decode(b, c)) for b, c in steps) and all(_agree(fill_line(t), fill(t)) for t in prompts):
        return line, fill_line
    return decode, fill


def forget_step_times() -> None:
    """Forget the step times cached so far, so that the next run computes each afresh (a cold run, as a
    benchmark times it); the numbers a run reports do not change."""
    _decode_cost.cache_clear()
    _prefill_cost.cache_clear()
    _step_costs.cache_clear()


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
    step_cost, fill_cost = _step_costs(engine)
    prefill_s, prefill_flops = zip(*(fill_cost(u) for u in req.uncached))
    prompt, output = list(req.prompt), list(req.output)
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
