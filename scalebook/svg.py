"""Tiny SVG charts for widgets: a redraw takes about a millisecond, where matplotlib takes ~150 ms.

Widgets must answer well under 0.1 s, so explorers draw with `Chart` (lines, points, shaded spans,
log or linear axes); the chapters' static figures use matplotlib (`scalebook.plots`).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from .units import LARGEST, check_fields, check_int, check_number, checks, fmt_si

__all__ = ["Chart", "COLORS", "svg_open"]

@checks(width="size", height="size", attributes="text")
def svg_open(width: float, height: float, attributes: str = "") -> str:
    """Return an `<svg>` start tag `width` by `height` pixels that shrinks to a narrower column (a phone's 390 px)
    instead of being clipped: a viewBox, and a width of at most 100 %."""
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:g}' height='{height:g}' "
            f"viewBox='0 0 {width:g} {height:g}' style='max-width:100%;height:auto' {attributes}>")


COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def _ticks(lo: float, hi: float, log: bool) -> list[float]:
    if log:
        return [10.0**k for k in range(math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9) + 1)]
    step = 10 ** math.floor(math.log10((hi - lo) / 4))
    for mult in (1, 2, 5, 10):
        if (hi - lo) / (step * mult) <= 6:
            step *= mult
            break
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _label(v: float) -> str:
    if v == 0:
        return "0"
    exp = math.floor(math.log10(abs(v)))
    if 4 < exp < 18:  # an SI prefix reads better than a power of ten on FLOP/s and byte axes: 100T, not 1e14
        return fmt_si(v, "").replace(" ", "")
    return f"{v:g}" if -2 <= exp <= 4 else f"1e{exp}" if v == 10.0**exp else f"{v:.0e}"


def _pixels(name: str, value: object) -> int:
    return check_int(name, value, 1, 10_000)


def _series(name: str, values: object) -> list[float | None]:
    """A series of coordinates: finite numbers, with None or NaN marking a gap (a point left out)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) and not hasattr(values, "tolist"):
        raise ValueError(f"{name}={values!r} must be a list of numbers; got a {type(values).__name__}")
    items = values.tolist() if hasattr(values, "tolist") else list(values)
    return [None if v is None or isinstance(v, float) and math.isnan(v) else
            check_number(f"{name}[{i}]", v, low=-LARGEST) for i, v in enumerate(items)]


def _pair(xs: object, ys: object) -> tuple[list[float | None], list[float | None]]:
    """Both coordinates of a series, checked (`_series`) and of one length."""
    xs, ys = _series("xs", xs), _series("ys", ys)
    if len(xs) != len(ys):
        raise ValueError(f"ys has {len(ys)} values and xs {len(xs)}: a series needs one y per x")
    return xs, ys


@dataclass
class Chart:
    """A line/point chart rendered to SVG. Add series with `line`, `points`, `span`, `vline`."""

    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    xlog: bool = False
    ylog: bool = False
    xlim: tuple[float, float] | None = None
    ylim: tuple[float, float] | None = None
    width: int = 600
    height: int = 360
    _items: list[tuple] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_fields(self, title="text", xlabel="text", ylabel="text", xlog="flag", ylog="flag",
                     width=_pixels, height=_pixels)
        for name, log in (("xlim", self.xlog), ("ylim", self.ylog)):
            limits = getattr(self, name)
            if limits is None:
                continue
            if not isinstance(limits, (tuple, list)) or len(limits) != 2:
                raise TypeError(f"{name}={limits!r} must be None or a (low, high) pair")
            low = check_number(f"{name}[0]", limits[0], low=-LARGEST)
            high = check_number(f"{name}[1]", limits[1], low=-LARGEST)
            if not low < high or (log and low <= 0):
                positive = " and low > 0 on a log axis" if log else ""
                raise ValueError(f"{name}={limits!r} must be (low, high) with low < high{positive}")

    @checks(label="text", color="?text", dash="flag")
    def line(self, xs: Sequence[float], ys: Sequence[float], label: str = "", color: str | None = None,
             dash: bool = False) -> Chart:
        """Add a polyline through (xs, ys) (data units; None or NaN leaves a point out); return the chart."""
        self._items.append(("line", *_pair(xs, ys), label, color or self._next_color(), dash))
        return self

    @checks(label="text", color="?text")
    def points(self, xs: Sequence[float], ys: Sequence[float], label: str = "", color: str | None = None) -> Chart:
        """Add markers at (xs, ys) (data units; None or NaN leaves a point out); return the chart."""
        self._items.append(("points", *_pair(xs, ys), label, color or self._next_color(), False))
        return self

    @checks(x0="finite", x1="finite", color="text", label="text")
    def span(self, x0: float, x1: float, color: str, label: str = "") -> Chart:
        """Shade the band x0 ≤ x ≤ x1 (data units); return the chart."""
        self._items.append(("span", [x0, x1], [], label, color, False))
        return self

    @checks(x="finite", color="text", label="text")
    def vline(self, x: float, color: str = "#555", label: str = "") -> Chart:
        """Draw a vertical line at x (data units); return the chart."""
        self._items.append(("vline", [x], [], label, color, True))
        return self

    def _next_color(self) -> str:
        used = sum(1 for i in self._items if i[0] in ("line", "points"))
        return COLORS[used % len(COLORS)]

    def _limits(self, axis: int, log: bool, given: tuple[float, float] | None) -> tuple[float, float]:
        if given:
            return given
        vals = [v for item in self._items if item[0] in ("line", "points") for v in item[1 + axis]
                if v is not None and math.isfinite(v) and (v > 0 or not log)]
        lo, hi = (min(vals), max(vals)) if vals else (1.0, 10.0)
        if log:
            return 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
        pad = (hi - lo) * 0.05 or 1.0
        return lo - pad, hi + pad

    def to_svg(self) -> str:
        """Return the chart as a standalone SVG string."""
        L, R, T, B = 70, 20, 30, 45
        pw, ph = self.width - L - R, self.height - T - B
        xlo, xhi = self._limits(0, self.xlog, self.xlim)
        ylo, yhi = self._limits(1, self.ylog, self.ylim)

        def sx(x: float) -> float:
            f = (math.log10(x) - math.log10(xlo)) / (math.log10(xhi) - math.log10(xlo)) if self.xlog \
                else (x - xlo) / (xhi - xlo)
            return L + pw * min(max(f, -0.05), 1.05)

        def sy(y: float) -> float:
            f = (math.log10(y) - math.log10(ylo)) / (math.log10(yhi) - math.log10(ylo)) if self.ylog \
                else (y - ylo) / (yhi - ylo)
            return T + ph * (1 - min(max(f, -0.05), 1.05))

        out = [svg_open(self.width, self.height, "font-family='sans-serif' font-size='11'"),
               f"<clipPath id='plot'><rect x='{L}' y='{T}' width='{pw}' height='{ph}'/></clipPath>"]
        for t in _ticks(xlo, xhi, self.xlog):
            x = sx(t)
            out.append(f"<line x1='{x:.1f}' y1='{T}' x2='{x:.1f}' y2='{T + ph}' stroke='#eee'/>"
                       f"<text x='{x:.1f}' y='{T + ph + 14}' text-anchor='middle'>{_label(t)}</text>")
        for t in _ticks(ylo, yhi, self.ylog):
            y = sy(t)
            out.append(f"<line x1='{L}' y1='{y:.1f}' x2='{L + pw}' y2='{y:.1f}' stroke='#eee'/>"
                       f"<text x='{L - 4}' y='{y + 4:.1f}' text-anchor='end'>{_label(t)}</text>")
        legend = []
        for kind, xs, ys, label, color, dash in self._items:
            style = " stroke-dasharray='4 3'" if dash else ""
            if kind == "span":
                x0, x1 = sx(max(xs[0], xlo)), sx(min(xs[1], xhi))
                out.append(f"<rect x='{x0:.1f}' y='{T}' width='{max(x1 - x0, 0):.1f}' height='{ph}' "
                           f"fill='{color}' fill-opacity='0.08'/>")
            elif kind == "vline":
                out.append(f"<line x1='{sx(xs[0]):.1f}' y1='{T}' x2='{sx(xs[0]):.1f}' y2='{T + ph}' "
                           f"stroke='{color}'{style}/>")
            elif kind == "line":
                path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in self._drawable(xs, ys))
                out.append(f"<polyline clip-path='url(#plot)' points='{path}' fill='none' stroke='{color}' "
                           f"stroke-width='2'{style}/>")
            else:
                out += [f"<circle clip-path='url(#plot)' cx='{sx(x):.1f}' cy='{sy(y):.1f}' r='4.5' fill='{color}'/>"
                        for x, y in self._drawable(xs, ys)]
            if label:
                legend.append((label, color, kind))
        out.append(f"<rect x='{L}' y='{T}' width='{pw}' height='{ph}' fill='none' stroke='#333'/>")
        for i, (label, color, kind) in enumerate(legend):
            y = T + ph - 8 - 15 * (len(legend) - 1 - i)
            x = L + pw - 230
            mark = (f"<circle cx='{x + 8}' cy='{y - 4}' r='4' fill='{color}'/>" if kind == "points" else
                    f"<rect x='{x}' y='{y - 8}' width='16' height='8' fill='{color}' "
                    f"fill-opacity='{0.3 if kind == 'span' else 1}'/>")
            out.append(mark + f"<text x='{x + 22}' y='{y}'>{html.escape(label)}</text>")
        out.append(f"<text x='{L + pw / 2}' y='{self.height - 8}' text-anchor='middle'>"
                   f"{html.escape(self.xlabel)}</text>"
                   f"<text transform='translate(14,{T + ph / 2}) rotate(-90)' text-anchor='middle'>"
                   f"{html.escape(self.ylabel)}</text>"
                   f"<text x='{L + pw / 2}' y='18' text-anchor='middle' font-weight='bold'>"
                   f"{html.escape(self.title)}</text></svg>")
        return "".join(out)

    def _drawable(self, xs: list[float | None], ys: list[float | None]) -> list[tuple[float, float]]:
        """The points of a series that can be drawn: no gap, and positive on a log axis."""
        return [(x, y) for x, y in zip(xs, ys) if x is not None and y is not None
                and (x > 0 or not self.xlog) and (y > 0 or not self.ylog)]

    def _repr_html_(self) -> str:
        return self.to_svg()

    _repr_svg_ = to_svg
