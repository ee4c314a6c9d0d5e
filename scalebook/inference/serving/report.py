"""What a run of the serving simulator (`simulator.simulate`) measured: per-request latencies, their percentiles, and
the run's throughput, batch, utilisation and MFU, as a `Report` that prints as a table and renders as HTML.

Plain Python on tuples of floats, so it runs where NumPy does not (the website's calculators, under Pyodide).
Percentiles interpolate linearly between the sorted values, as NumPy's default does.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ...estimate import feasibility
from ...tables import Table
from ...units import check_number, checks, fmt_rate, fmt_time
from ..steps import kv_cache_bytes
from .engine import Engine
from .workload import Requests, Workload

__all__ = ["Report", "percentile", "METRICS", "PERCENTILES"]

METRICS = ("ttft", "tpot", "e2e")
PERCENTILES = (50, 90, 99)
_LABELS = {"ttft": "time to first token", "tpot": "time per output token", "e2e": "end to end"}


def percentile(values: Sequence[float], q: float) -> float:
    """Return the `q`-th percentile (0-100) of `values`, interpolated linearly between the sorted values (NumPy's
    default method); NaN when `values` is empty."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _finite_stat(values: Sequence[float], q: float | None = None) -> float:
    """Return the `q`-th percentile (None: the mean) of the finite `values`, NaN when there are none."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return math.nan
    return math.fsum(finite) / len(finite) if q is None else percentile(finite, q)


def _fmt_time(seconds: float) -> str:
    return fmt_time(seconds) if math.isfinite(seconds) else "—"


@dataclass(frozen=True, eq=False)
class Report:
    """What a simulation measured. Per request (tuples, seconds): `first_token`, `finish`, and the properties
    `ttft`, `tpot`, `e2e`. Totals: `decode_steps`, `decode_tokens` (sum of the batch over steps), `prefill_busy` and
    `decode_busy` (s the pools were working) and `flops` (FLOPs of every prefill and decode step)."""

    workload: Workload
    engine: Engine
    slots: int
    requests: Requests
    first_token: tuple[float, ...]
    finish: tuple[float, ...]
    decode_steps: int
    decode_tokens: int
    prefill_busy: float
    decode_busy: float
    flops: float
    seed: int = 0

    @property
    def ttft(self) -> tuple[float, ...]:
        """Seconds from each request's arrival to its first token."""
        return tuple(f - a for f, a in zip(self.first_token, self.requests.arrival))

    @property
    def tpot(self) -> tuple[float, ...]:
        """Mean seconds between each request's output tokens after the first (NaN for one-token outputs)."""
        return tuple((end - first) / (n - 1) if n > 1 else math.nan
                     for first, end, n in zip(self.first_token, self.finish, self.requests.output))

    @property
    def e2e(self) -> tuple[float, ...]:
        """Seconds from each request's arrival to its last token."""
        return tuple(f - a for f, a in zip(self.finish, self.requests.arrival))

    @checks(metric=METRICS, q=lambda n, v: check_number(n, v, low=0.0, high=100.0, what="a percentile in [0, 100]"))
    def percentile(self, metric: str, q: float) -> float:
        """Return the `q`-th percentile (0-100) of `metric` ("ttft", "tpot" or "e2e"), in seconds."""
        return _finite_stat(getattr(self, metric), q)

    @property
    def makespan(self) -> float:
        """Seconds from time 0 to the last token of the last request."""
        return max(self.finish)

    @property
    def throughput(self) -> float:
        """Output tokens per second over the whole run."""
        return sum(self.requests.output) / self.makespan

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
        rows = [{"metric": _LABELS[m], "mean": _finite_stat(getattr(self, m)),
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
