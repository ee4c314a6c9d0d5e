"""A small discrete-event simulator of an LLM serving engine, timed by the analytic model of `inference`.

Chapter 7 prices one prefill and one decode step; a server strings thousands of them together while requests
arrive at random. This module plays that out, so a reader can watch queueing turn step times into the latencies a
user feels: time to first token (TTFT), time per output token (TPOT) and end-to-end latency, against throughput.

The model, in brief:

* Requests arrive as a Poisson process (`Workload.rate` per second). Prompt and output lengths are fixed or
  lognormal (`Lengths`); with probability `prefix_hit` a fraction `prefix_fraction` of the prompt is already in a
  prefix cache, and only the rest is prefilled.
* The engine has `slots` decode slots (the most sequences decoded together; by default as many KV caches as fit
  in HBM beside the weights at a typical context, `inference.max_batch`). Continuous batching: sequences join free
  slots, first come first served, at step boundaries, and leave the step they emit their last token.
* A decode step of B active sequences costs `inference.decode_step(batch=B, context=their mean context)`; every
  sequence emits one token per step. A prefill costs `inference.prefill(tokens=uncached prompt tokens)`, one
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
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from itertools import accumulate

from .hardware.chips import Chip, get_chip
from .inference import decode_step, kv_cache_bytes, max_batch, prefill
from .kinds import mapping_with
from .models import TransformerConfig, get_model
from .serving_report import METRICS, Report, Requests
from .tables import Table
from .units import check_fields, check_int, check_kind, check_number, checks, fmt_time, is_a

__all__ = ["Lengths", "Workload", "Requests", "Engine", "Report", "simulate", "engine_comparison", "chapter_engines",
           "CHAT_PROMPT", "CHAT_OUTPUT", "MODES", "METRICS",
           "engine_segments", "batching_snapshots"]

MODES = ("interleaved", "disaggregated")
MAX_TOKENS, MAX_SIGMA = 1e9, 4.0  # the longest prompt or output a workload may describe; the widest spread
MAX_REQUESTS = 10**5  # the most requests one simulation replays (seconds and memory grow with them)


@dataclass(frozen=True)
class Lengths:
    """A distribution of token counts: lognormal with `median` tokens and shape `sigma` (0 = always `median`)."""

    median: float
    sigma: float = 0.0

    def __post_init__(self) -> None:
        # Bounded so that a sample stays a modest token count (a lognormal of sigma 4 already spans e^±9).
        check_number("median", self.median, low=1.0, high=MAX_TOKENS, what=f"a token count in [1, {MAX_TOKENS:g}]")
        check_number("sigma", self.sigma, low=0.0, high=MAX_SIGMA, what=f"a lognormal shape in [0, {MAX_SIGMA:g}]")

    @checks(rng=is_a(random.Random), n="count")
    def sample(self, rng: random.Random, n: int) -> tuple[int, ...]:
        """Return `n` token counts (integers >= 1), drawn from `rng`."""
        if self.sigma == 0:
            return (max(1, round(self.median)),) * n
        mu = math.log(self.median)
        return tuple(int(min(max(round(rng.lognormvariate(mu, self.sigma)), 1), MAX_TOKENS)) for _ in range(n))


def _lengths(name: str, value: Lengths | float) -> Lengths:
    if isinstance(value, Lengths):
        return value
    check_number(name, value, low=1.0, high=MAX_TOKENS, what=f"a token count in [1, {MAX_TOKENS:g}] or a Lengths")
    return Lengths(value)


@dataclass(frozen=True)
class Workload:
    """The traffic: Poisson arrivals at `rate` requests/s (`math.inf`: all at time 0), prompt and output lengths
    (token counts or `Lengths`), and a prefix cache that holds a fraction `prefix_fraction` of a prompt with
    probability `prefix_hit`."""

    rate: float
    prompt: Lengths | float = 1024
    output: Lengths | float = 256
    prefix_hit: float = 0.0
    prefix_fraction: float = 0.5

    def __post_init__(self) -> None:
        check_number("rate", self.rate, low=0.0, low_open=True, high=math.inf,
                     what="a positive number of requests/s (math.inf: all at once)")
        for name in ("prefix_hit", "prefix_fraction"):
            check_kind(name, getattr(self, name), "frac0")
        object.__setattr__(self, "prompt", _lengths("prompt", self.prompt))
        object.__setattr__(self, "output", _lengths("output", self.output))

    @checks(n_requests="count", seed="count0")
    def sample(self, n_requests: int, seed: int = 0) -> Requests:
        """Return `n_requests` requests. Arrivals, lengths and cache hits draw from separate streams of `seed`
        (the standard library's Mersenne Twister, seeded by name), so changing one knob leaves the others' draws
        alone and the same seed gives the same requests in the reader's browser."""
        rngs = [random.Random(f"scalebook.serving/{seed}/{stream}") for stream in range(4)]
        finite = math.isfinite(self.rate)
        gaps = [rngs[0].expovariate(self.rate) if finite else 0.0 for _ in range(n_requests)]
        prompt, output = self.prompt.sample(rngs[1], n_requests), self.output.sample(rngs[2], n_requests)
        hit = [rngs[3].random() < self.prefix_hit for _ in range(n_requests)]
        uncached = tuple(max(1, p - math.floor(self.prefix_fraction * p)) if h else p for p, h in zip(prompt, hit))
        return Requests(tuple(accumulate(gaps)), prompt, uncached, output)

    def typical_context(self) -> float:
        """Return the tokens a median sequence holds when it finishes: median prompt + median output."""
        return self.prompt.median + self.output.median


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


# The chapter's simulated chat traffic: lognormal prompts of median 2048 tokens and replies of median 512.
CHAT_PROMPT, CHAT_OUTPUT = Lengths(2048, 0.5), Lengths(512, 0.5)


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
