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
import html
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np

from .estimate import feasibility
from .hardware.chips import Chip, get_chip
from .inference import decode_step, kv_cache_bytes, max_batch, prefill
from .models import TransformerConfig, get_model
from .tables import Table
from .units import check_fields, check_int, check_kind, check_number, checks, fmt_rate, fmt_time, is_a

__all__ = ["Lengths", "Workload", "Requests", "Engine", "Report", "simulate", "MODES", "METRICS"]

MODES = ("interleaved", "disaggregated")
METRICS = ("ttft", "tpot", "e2e")
PERCENTILES = (50, 90, 99)
MAX_TOKENS, MAX_SIGMA = 1e9, 4.0  # the longest prompt or output a workload may describe; the widest spread
MAX_REQUESTS = 10**5  # the most requests one simulation replays (seconds and memory grow with them)


@dataclass(frozen=True)
class Lengths:
    """A distribution of token counts: lognormal with `median` tokens and shape `sigma` (0 = always `median`)."""

    median: float
    sigma: float = 0.0

    def __post_init__(self) -> None:
        # Bounded so that a sample stays a token count an int64 holds (a lognormal of sigma 4 already spans e^±9).
        check_number("median", self.median, low=1.0, high=MAX_TOKENS, what=f"a token count in [1, {MAX_TOKENS:g}]")
        check_number("sigma", self.sigma, low=0.0, high=MAX_SIGMA, what=f"a lognormal shape in [0, {MAX_SIGMA:g}]")

    @checks(rng=is_a(np.random.Generator), n="count")
    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Return `n` token counts (integers >= 1)."""
        if self.sigma == 0:
            return np.full(n, max(1, round(self.median)), dtype=np.int64)
        draws = rng.lognormal(math.log(self.median), self.sigma, n)
        return np.clip(np.rint(draws), 1, MAX_TOKENS).astype(np.int64)


def _lengths(name: str, value: Lengths | float) -> Lengths:
    if isinstance(value, Lengths):
        return value
    check_number(name, value, low=1.0, high=MAX_TOKENS, what=f"a token count in [1, {MAX_TOKENS:g}] or a Lengths")
    return Lengths(value)


@dataclass(frozen=True)
class Requests:
    """Sampled requests, in arrival order: `arrival` (s), `prompt`, `uncached` (prompt tokens to prefill) and
    `output` (tokens to generate, the first included)."""

    arrival: np.ndarray
    prompt: np.ndarray
    uncached: np.ndarray
    output: np.ndarray

    def __len__(self) -> int:
        return len(self.arrival)


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
        """Return `n_requests` requests. Arrivals, lengths and cache hits draw from separate streams of `seed`,
        so changing one knob leaves the others' draws alone."""
        rngs = [np.random.default_rng([seed, stream]) for stream in range(4)]
        gaps = rngs[0].exponential(1 / self.rate, n_requests) if math.isfinite(self.rate) else np.zeros(n_requests)
        prompt, output = self.prompt.sample(rngs[1], n_requests), self.output.sample(rngs[2], n_requests)
        hits = rngs[3].random(n_requests) < self.prefix_hit
        cached = np.where(hits, np.floor(self.prefix_fraction * prompt), 0).astype(np.int64)
        return Requests(np.cumsum(gaps), prompt, np.maximum(1, prompt - cached), output)

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

    admitted: np.ndarray
    finish: np.ndarray
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
    return _Trace(np.array(admitted), np.array(finish), steps, tokens, busy, flops)


def _prefill_pool(arrival: np.ndarray, prefill_s: list[float], transfer_s: list[float]) -> tuple[np.ndarray, ...]:
    """Return when each prefill ends and when its KV cache reaches the decode chips (s): one prefill and one
    transfer at a time, first come first served."""
    done, ready = np.empty(len(arrival)), np.empty(len(arrival))
    end = link = 0.0
    for i, (a, p, x) in enumerate(zip(arrival.tolist(), prefill_s, transfer_s)):
        end = max(a, end) + p
        link = max(end, link) + x
        done[i], ready[i] = end, link
    return done, ready


def _fmt_time(seconds: float) -> str:
    return fmt_time(seconds) if math.isfinite(seconds) else "—"


def _finite_stat(values: np.ndarray, q: float | None = None) -> float:
    """Return the `q`-th percentile (None: the mean) of the finite `values`, NaN when there are none."""
    finite = values[np.isfinite(values)]
    if not finite.size:
        return math.nan
    return float(finite.mean() if q is None else np.percentile(finite, q))


@dataclass(frozen=True, eq=False)
class Report:
    """What a simulation measured. Per request (arrays, seconds): `first_token`, `finish`, and the properties
    `ttft`, `tpot`, `e2e`. Totals: `decode_steps`, `decode_tokens` (sum of the batch over steps), `prefill_busy` and
    `decode_busy` (s the pools were working) and `flops` (FLOPs of every prefill and decode step)."""

    workload: Workload
    engine: Engine
    slots: int
    requests: Requests
    first_token: np.ndarray
    finish: np.ndarray
    decode_steps: int
    decode_tokens: int
    prefill_busy: float
    decode_busy: float
    flops: float
    seed: int = 0

    @property
    def ttft(self) -> np.ndarray:
        """Seconds from each request's arrival to its first token."""
        return self.first_token - self.requests.arrival

    @property
    def tpot(self) -> np.ndarray:
        """Mean seconds between each request's output tokens after the first (NaN for one-token outputs)."""
        gaps = np.maximum(self.requests.output - 1, 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(gaps > 0, (self.finish - self.first_token) / gaps, np.nan)

    @property
    def e2e(self) -> np.ndarray:
        """Seconds from each request's arrival to its last token."""
        return self.finish - self.requests.arrival

    @checks(metric=METRICS, q=lambda n, v: check_number(n, v, low=0.0, high=100.0, what="a percentile in [0, 100]"))
    def percentile(self, metric: str, q: float) -> float:
        """Return the `q`-th percentile (0-100) of `metric` ("ttft", "tpot" or "e2e"), in seconds."""
        return _finite_stat(getattr(self, metric), q)

    @property
    def makespan(self) -> float:
        """Seconds from time 0 to the last token of the last request."""
        return float(self.finish.max())

    @property
    def throughput(self) -> float:
        """Output tokens per second over the whole run."""
        return float(self.requests.output.sum()) / self.makespan

    @property
    def throughput_per_chip(self) -> float:
        """Output tokens per second per chip (all `n_chips`, both pools when disaggregated)."""
        return self.throughput / self.engine.n_chips

    @property
    def mean_batch(self) -> float:
        """Sequences per decode step, averaged over the steps."""
        return self.decode_tokens / self.decode_steps if self.decode_steps else 0.0

    @property
    def utilisation(self) -> float:
        """Fraction of chip-seconds spent prefilling or decoding over the run (busy, however small the batch)."""
        P, G = self.engine.pools()
        return (self.prefill_busy * P + self.decode_busy * G) / (self.engine.n_chips * self.makespan)

    @property
    def mfu(self) -> float:
        """Model FLOPs of the run over what all `n_chips` could do at bf16 peak in the makespan."""
        return self.flops / (self.engine.n_chips * self.engine.chip.peak_flops() * self.makespan)

    @property
    def memory_per_chip(self) -> float:
        """Bytes per decode chip with every slot full at the typical context: weights and `slots` KV caches."""
        e = self.engine
        caches = kv_cache_bytes(e.model, self.workload.typical_context(), self.slots, e.kv_bytes)
        return (e.model.param_count() * e.param_bytes + caches) / e.pools()[1]

    @property
    def fits(self) -> bool:
        """Whether the decode chips' HBM holds the weights and every slot's KV cache (`memory_per_chip`)."""
        return self.memory_per_chip <= self.engine.chip.hbm_bytes

    def _title(self) -> str:
        e, w = self.engine, self.workload
        return (f"{e.model.name} on {e.n_chips} × {e.chip.name}, {e.mode}, {self.slots} slots; "
                f"{w.rate:g} req/s, {len(self.requests)} requests")

    def latency_table(self) -> Table:
        """Return mean and percentiles of TTFT, TPOT and end-to-end latency (s)."""
        rows = [{"metric": {"ttft": "time to first token", "tpot": "time per output token", "e2e": "end to end"}[m],
                 "mean": _finite_stat(getattr(self, m)),
                 **{f"p{q}": self.percentile(m, q) for q in PERCENTILES}} for m in METRICS]
        cols = ["mean", *(f"p{q}" for q in PERCENTILES)]
        return Table(rows, formats=dict.fromkeys(cols, _fmt_time), title=self._title())

    def table(self) -> Table:
        """Return every figure of the run: latency percentiles, throughput, batch and utilisation."""
        rows = [{"quantity": f"{m} p{q}", "value": self.percentile(m, q), "shown": _fmt_time(self.percentile(m, q))}
                for m in METRICS for q in PERCENTILES]
        rows += [
            {"quantity": "throughput", "value": self.throughput, "shown": fmt_rate(self.throughput, "tokens/s")},
            {"quantity": "throughput per chip", "value": self.throughput_per_chip,
             "shown": fmt_rate(self.throughput_per_chip, "tokens/s")},
            {"quantity": "mean decode batch", "value": self.mean_batch, "shown": f"{self.mean_batch:.1f}"},
            {"quantity": "decode slots", "value": self.slots, "shown": str(self.slots)},
            {"quantity": "memory per decode chip", "value": self.memory_per_chip,
             "shown": feasibility(self.memory_per_chip, self.engine.chip.hbm_bytes)},
            {"quantity": "utilisation (busy)", "value": self.utilisation, "shown": f"{self.utilisation:.0%}"},
            {"quantity": "MFU", "value": self.mfu, "shown": f"{self.mfu:.1%}"},
            {"quantity": "makespan", "value": self.makespan, "shown": fmt_time(self.makespan)},
        ]
        return Table(rows, columns=["quantity", "shown"], title=self._title())

    def _repr_html_(self) -> str:
        fit = feasibility(self.memory_per_chip, self.engine.chip.hbm_bytes)
        warning = "" if self.fits else f"<p><b>{html.escape(fit)}</b></p>"
        line = (f"{warning}<p>{fmt_rate(self.throughput, 'tokens/s')} "
                f"({fmt_rate(self.throughput_per_chip, 'tokens/s')} per chip), mean decode batch "
                f"{self.mean_batch:.1f} of {self.slots}, busy {self.utilisation:.0%}, MFU {self.mfu:.1%}</p>")
        return self.latency_table()._repr_html_() + line

    def __str__(self) -> str:
        return str(self.table())

    __repr__ = __str__


@checks(workload=is_a(Workload), engine=is_a(Engine), n_requests=lambda n, v: check_int(n, v, 1, MAX_REQUESTS),
        seed="count0")
def simulate(workload: Workload, engine: Engine, n_requests: int = 1000, seed: int = 0) -> Report:
    """Return the `Report` of serving `n_requests` requests of `workload` on `engine` (deterministic per `seed`)."""
    req = workload.sample(n_requests, seed)
    slots = engine.batch_slots(workload)
    prefill_s, prefill_flops = zip(*(_prefill_cost(engine, u) for u in req.uncached.tolist()))
    prompt, output = req.prompt.tolist(), req.output.tolist()
    step_cost = partial(_decode_cost, engine)
    if engine.mode == "interleaved":
        trace = _decode_loop(req.arrival.tolist(), list(prefill_s), prompt, output, slots, step_cost)
        first = trace.admitted
    else:
        W = engine.link_bandwidth()
        transfer = [kv_cache_bytes(engine.model, p, 1, engine.kv_bytes) / W for p in prompt]
        first, ready = _prefill_pool(req.arrival, list(prefill_s), transfer)
        trace = _decode_loop(ready.tolist(), [0.0] * n_requests, prompt, output, slots, step_cost)
    finish = np.where(req.output > 1, trace.finish, first)
    return Report(workload, engine, slots, req, first, finish, trace.steps, trace.tokens, math.fsum(prefill_s),
                  trace.busy, trace.flops + math.fsum(prefill_flops), seed)
