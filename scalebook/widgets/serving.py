"""An explorer of the serving simulator (`scalebook.serving`): move the arrival rate, the decode slots, the mode and
the lengths, and watch time to first token and time per output token respond.

`serving_chart` and `serving_view` are plain functions too, so a chapter can draw one run without a widget. A redraw
simulates a few hundred requests and draws an SVG `Chart`: it takes milliseconds.
"""

from __future__ import annotations

import html

from ..inference.serving.engine import MODES, Engine
from ..inference.serving.report import Report
from ..inference.serving.simulator import simulate
from ..inference.serving.timelines import batching_snapshots
from ..inference.serving.workload import Lengths, Workload
from ..inference.steps import max_batch
from ..svg import Chart
from ..units import checks, is_a
from .core import Explorer, Log, explore

__all__ = ["serving_chart", "serving_view", "serving_explorer", "batching_html", "batching_stepper"]


@checks(report=is_a(Report))
def serving_chart(report: Report) -> Chart:
    """Return an SVG chart of each request's TTFT and TPOT (s, log scale) against its arrival time (s)."""
    arrival = report.requests.arrival
    chart = Chart(title=f"Latency per request ({report.engine.mode}, {report.workload.rate:g} requests/s)",
                  xlabel="arrival time (s)", ylabel="latency (s)", ylog=True)
    chart.line(arrival, report.ttft, label=f"time to first token, p99 {report.percentile('ttft', 99):.3g} s")
    chart.line(arrival, report.tpot, label=f"time per output token, p99 {report.percentile('tpot', 99):.3g} s")
    return chart


@checks(rate="size", slots="count", prompt="size", output="size", prefix_hit="frac0", n_chips="count",
        param_bytes="size", kv_bytes="size", sigma="nonneg", n_requests="count", seed="count0")
def serving_view(rate: float, slots: int, mode: str, prompt: float, output: float, prefix_hit: float = 0.0,
                 model: str = "llama3-70b", chip: str = "v5e", n_chips: int = 16, param_bytes: float = 1,
                 kv_bytes: float = 1, sigma: float = 0.5, n_requests: int = 400, seed: int = 0) -> tuple:
    """Return the latency chart and the `Report` of one run (after a note when `slots` KV caches overflow HBM):
    `rate` requests/s, lognormal lengths of median `prompt` and `output` tokens (shape `sigma`)."""
    workload = Workload(rate, Lengths(prompt, sigma), Lengths(output, sigma), prefix_hit=prefix_hit)
    engine = Engine(model, chip, n_chips, param_bytes, kv_bytes, slots=round(slots), mode=mode)
    report = simulate(workload, engine, n_requests, seed)
    fit = max_batch(engine.model, engine.chip, engine.pools()[1], workload.typical_context(), param_bytes, kv_bytes)
    notes = [f"Note: {report.slots} KV caches of {workload.typical_context():.0f} tokens do not fit in HBM beside the "
             f"weights; at most {fit} do."] if report.slots > fit else []
    return (*notes, serving_chart(report), report)


@checks(rate="size", prompt="size", output="size", slots="?count", n_chips="count", param_bytes="size", kv_bytes="size",
        n_requests="count")
def serving_explorer(rate: float = 2.0, mode: str = "interleaved", prompt: float = 1024, output: float = 256,
                     slots: int | None = None, model: str = "llama3-70b", chip: str = "v5e", n_chips: int = 16,
                     param_bytes: float = 1, kv_bytes: float = 1, n_requests: int = 400) -> Explorer:
    """Return an explorer of the serving simulator; it opens on LLaMA 3-70B in int8 on 16 v5e chips, with as many
    slots as fit at the typical context (median prompt + median output)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got mode={mode!r}")
    if slots is None:
        engine = Engine(model, chip, n_chips, param_bytes, kv_bytes, mode=mode)
        slots = engine.batch_slots(Workload(rate, prompt, output))
    return explore(serving_view, title="Serving: queueing turns step times into latency",
                   rate=Log(0.05, 100, rate), slots=(1, max(1024, slots), 1, slots),
                   mode=[mode, *[m for m in MODES if m != mode]], prompt=Log(16, 32768, prompt),
                   output=Log(1, 4096, output), prefix_hit=(0.0, 1.0, 0.05, 0.0), model=model, chip=chip,
                   n_chips=n_chips, param_bytes=param_bytes, kv_bytes=kv_bytes, n_requests=n_requests)


_SLOT_COLORS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#9c755f", "#76b7b2", "#edc948")


@checks(slots="count", step="count0", outputs="counts")
def batching_html(slots: int, outputs: list[int], step: int) -> str:
    """Return an HTML picture of a continuous-batching engine before decode step `step` (`batching_snapshots`)."""
    _, cells, queue, done = batching_snapshots(slots, outputs, step + 1)[-1]
    rows = []
    for i, cell in enumerate(cells):
        if cell is None:
            rows.append(f"<tr><th>slot {i}</th><td style='background:#eee;width:140px'>free</td></tr>")
        else:
            r, made = cell
            rows.append(f"<tr><th>slot {i}</th><td style='background:{_SLOT_COLORS[r % 8]};color:#fff;width:140px'>"
                        f"request {r}: {made} of {outputs[r]} tokens</td></tr>")
    fmt = lambda rs: ", ".join(f"r{r}" for r in rs) or "none"  # noqa: E731
    return (f"<b>before decode step {step}</b><table>{''.join(rows)}</table>"
            f"<p>queue: {html.escape(fmt(queue))} &nbsp; finished: {html.escape(fmt(done))}</p>")


class _Html:
    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_html_(self) -> str:
        return self.text


@checks(slots="count", step="count0", outputs="counts")
def batching_stepper(slots: int = 4, outputs: tuple[int, ...] = (3, 5, 2, 4, 3, 2, 4), step: int = 0) -> Explorer:
    """Return a stepper through a continuous-batching engine, one decode step per click of the slider (the
    chapter's animation as a widget; the static strip is `plots.serving.continuous_batching`)."""
    return explore(lambda slots, step: _Html(batching_html(slots, list(outputs), step)),
                   title="Continuous batching, step by step", slots=(1, 8, 1, slots),
                   step=(0, sum(outputs), 1, step))
