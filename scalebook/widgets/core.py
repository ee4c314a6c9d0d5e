"""Interactive explorers built on core ipywidgets. ipywidgets and matplotlib load only when used.

`explore(fn, **controls)` turns any scalebook calculation into sliders and menus. An `Explorer` shows
the widget in JupyterLab/Colab and, for the static website, a snapshot of its current answer (the
bundle carries both; the site is configured to prefer the snapshot). Explorers open on the worked
answer, so the snapshot on the site is true.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..estimate import Estimate
from ..hardware.chips import chip_names, get_chip
from ..kinds import has, mapping_with, positive_range
from ..roofline import achievable_flops, matmul
from ..svg import Chart
from ..units import checks, geomspace, is_a
from .web import Fitting, Log, Text, Unfit, control, describe, render

__all__ = ["Log", "Unfit", "Explorer", "explore", "roofline_chart", "roofline_explorer"]


def opening_on(options: Sequence[Any], value: Any) -> list[Any]:
    """The menu `options` with `value` first (added if missing), so an explorer opens on it."""
    return [value, *[o for o in options if o != value]]


def _control(name: str, spec: Any):
    """Return the widget for one control spec, or None when `spec` is a fixed value."""
    import ipywidgets as w

    if isinstance(spec, w.ValueWidget):
        return spec
    c = control(name, spec)
    if c is None:
        return None
    common = {"description": name, "style": {"description_width": "initial"}}
    if c["kind"] == "log":
        # read-out with an SI prefix (4.10k, 16.0G) rather than 4.10e+3 (d3-format "s"); a `factor` moves in
        # whole steps of it
        base = c.get("factor") or 10
        return w.FloatLogSlider(value=c["value"], base=base, min=math.log(c["min"], base),
                                max=math.log(c["max"], base), step=1 if c.get("factor") else 0.1,
                                continuous_update=False, readout_format=".3s", **common)
    if c["kind"] == "menu":
        return w.Dropdown(options=spec, value=spec[0], **common)
    slider = w.IntSlider if c["kind"] == "int" else w.FloatSlider
    return slider(value=c["value"], min=c["min"], max=c["max"], step=c["step"], continuous_update=False, **common)


class Explorer:
    """Controls wired to a calculation. `update(**values)` moves them from code and times the answer."""

    def __init__(self, fn: Callable[..., Any], controls: dict[str, Any], title: str = "") -> None:
        import ipywidgets as w

        self.fn = fn
        self.title = title
        self.specs = dict(controls)
        self.fixed = {k: v for k, v in controls.items() if _control(k, v) is None}
        self.controls = {k: c for k, v in controls.items() if (c := _control(k, v)) is not None}
        self.output = w.HTML()
        header = [w.HTML(f"<b>{html.escape(title)}</b>")] if title else []
        self.widget = w.VBox([*header, w.HBox(list(self.controls.values()),
                                              layout=w.Layout(flex_flow="row wrap")), self.output])
        self.result: Any = None
        self.seconds = 0.0
        for widget in self.controls.values():
            widget.observe(lambda _change: self.refresh(), names="value")
        self.refresh()
        if isinstance(self.result, Exception):  # an explorer opens on a worked answer: a bad start is the caller's
            raise self.result

    def values(self) -> dict[str, Any]:
        """Return the current inputs: the controls' values and the fixed ones."""
        return {**self.fixed, **{k: c.value for k, c in self.controls.items()}}

    def refresh(self) -> float:
        """Recompute and redraw; return the seconds it took (the widget's response time)."""
        start = time.perf_counter()
        try:
            self.result = self.fn(**self.values())
            self.output.value = render(self.result)
        except (ValueError, KeyError) as err:
            self.result = err
            self.output.value = f"<pre style='color:#cf222e'>{html.escape(str(err))}</pre>"
        self.seconds = time.perf_counter() - start
        return self.seconds

    def update(self, **values: Any) -> float:
        """Set some controls (as a reader would) and return the seconds the answer took."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise KeyError(f"no control(s) {sorted(unknown)}; controls: {sorted(self.controls)}")
        for name, value in values.items():
            with self.controls[name].hold_trait_notifications():
                self.controls[name].value = value
        return self.refresh()

    def describe(self) -> dict[str, Any]:
        """Return the website's description of this explorer (`web.describe`), starting on the current values.

        A text box (`ipywidgets.Text`) becomes one on the site; an explorer with another ipywidget of its own as a
        control stays a snapshot there (`why` says so).
        """
        import ipywidgets as w

        specs = dict(self.specs)
        for name, spec in specs.items():
            if isinstance(spec, w.Text):
                specs[name] = Text(spec.value)
            elif isinstance(spec, w.ValueWidget):
                return {"title": self.title, "controls": [], "why": f"control {name!r} is an ipywidget of its own"}
            if name in self.controls:
                value = self.controls[name].value
                if isinstance(spec, Log):
                    specs[name] = dataclasses.replace(spec, value=value)
                elif isinstance(spec, tuple):
                    specs[name] = (spec[0], spec[1], spec[2] if len(spec) > 2 else None, value)
        about = describe(self.fn, specs, self.title)
        for c in about["controls"]:
            if c["kind"] == "menu":
                value = self.controls[c["name"]].value
                c["value"] = next(i for i, o in enumerate(specs[c["name"]]) if o is value or o == value)
        return about

    def snapshot_html(self) -> str:
        """Return a static HTML picture of the explorer: its inputs and its current answer, with the description
        the website's bridge turns into live controls (the picture stays when JavaScript is off)."""
        inputs = ", ".join(f"{k} = {v:g}" if isinstance(v, float) else f"{k} = {v!r}"
                           for k, v in self.values().items())
        head = f"<b>{html.escape(self.title)}</b><br/>" if self.title else ""
        about = html.escape(json.dumps(self.describe(), separators=(",", ":")), quote=True)
        return (f"<div class='scalebook-explorer' data-scalebook=\"{about}\">{head}"
                f"<code class='scalebook-inputs'>{html.escape(inputs)}</code>"
                f"<br/><div class='scalebook-output' style='overflow-x:auto'>{self.output.value}</div>"
                f"<i class='scalebook-status'>Interactive in JupyterLab, Colab or Kaggle.</i></div>")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        bundle["text/html"] = self.snapshot_html()
        return bundle


@checks(fn=has("__call__", what="a function"), unfit="?names")
def explore(fn: Callable[..., Any], *, title: str = "", unfit: Sequence[str] = (), **controls: Any) -> Explorer:
    """Return an `Explorer` that calls `fn(**values)` whenever a control moves.

    A control is a slider `(min, max[, step[, value]])`, a menu `[option, ...]` (first is the start),
    a `Log(lo, hi, value[, factor])` slider, any ipywidgets value widget, or a plain value (held fixed). `fn` may
    return a matplotlib figure, anything with an HTML repr (an `Estimate`, a `Table`), or a tuple of them.
    `unfit`: phrases of the `ValueError`s that a combination the controls offer can meet and that have no answer
    (a slice larger than the pod): such a combination answers one line, "does not fit: <why>" (`Unfit`), where
    any other error shows as an error.
    """
    return Explorer(Fitting(fn, tuple(unfit)) if unfit else fn, controls, title)


@checks(dtype="dtype", points=mapping_with(is_a(Estimate), "Estimates"), intensity=positive_range)
def roofline_chart(chip: str, dtype: str, points: dict[str, Estimate],
                   intensity: tuple[float, float] = (0.1, 1e5)) -> Chart:
    """Return a fast SVG roofline of `chip` with `points` (Estimates) on it: the widgets' picture."""
    c = get_chip(chip)
    xs = geomspace(*intensity, 60)
    knee = c.critical_intensity(dtype)
    chart = Chart(title=f"Roofline of {c.name} ({dtype})", xlabel="arithmetic intensity (FLOPs per byte)",
                  ylabel="attainable FLOP/s", xlog=True, ylog=True, xlim=intensity)
    chart.span(intensity[0], knee, "#d62728", "bandwidth-bound").span(knee, intensity[1], "#2ca02c", "compute-bound")
    chart.line(xs, [achievable_flops(x, c, dtype) for x in xs], label=f"roofline, knee at {knee:.0f} FLOPs/B")
    for label, est in points.items():
        chart.points([est.intensity], [est.achieved_flops], label=label)
    return chart


def _roofline_view(chip: str, dtype: str, B: float, D: float, F: float) -> tuple[Chart, Estimate]:
    est = matmul(round(B), round(D), round(F), chip, dtype=dtype)
    return roofline_chart(chip, est.label.split()[-1], {f"matmul, B = {round(B)}": est}), est


@checks(dtype="dtype", B="size", D="size", F="size", chips="?names")
def roofline_explorer(chip: str = "v5e", dtype: str = "bf16", B: float = 240, D: float = 8192,
                      F: float = 8192, chips: Sequence[str] | None = None) -> Explorer:
    """Return an explorer of one matmul X[B,D] @ W[D,F] on a chip's roofline (opens on v5e's knee, B=240)."""
    names = list(chips or chip_names())
    first = get_chip(chip)
    key = next((n for n in names if get_chip(n) is first), None)
    if key is None:
        raise KeyError(f"chip={chip!r} is not among the explorer's chips {names}")
    names.remove(key)
    return explore(
        _roofline_view, title="One matmul on the roofline", unfit=("has no published",),
        chip=[key, *names], dtype=[dtype, *[d for d in ("bf16", "int8", "fp8") if d != dtype]],
        B=Log(1, 65536, B), D=Log(128, 65536, D), F=Log(128, 262144, F),
    )
