"""Each "What to notice" caption that names a mark, a colour or a value is checked against the figure it describes
(issue #40): the figure is drawn with the chapter's own call and read back through matplotlib's artists (their
colours, line styles, markers, texts and data), and what the caption promises must be there.

A colour is named as a reader names it: the nearest of a few reference shades per name (Okabe & Ito's vermilion
reads as red, a light orange as orange), grey and black by their saturation and value. Each case first checks that
its caption still says what is tested, so an edited caption cannot leave a stale check behind.
"""

from __future__ import annotations

import colorsys
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import scalebook as sb

ROOT = Path(__file__).resolve().parents[2]
# Reference shades of each colour name a caption uses (matplotlib's, Okabe & Ito's, Tableau's, the diagrams').
SHADES = {"red": ("#ff0000", "#d62728", "#e15759", "#D55E00", "#cf222e", "#c00000"),
          "orange": ("#E69F00", "#ff7f0e", "#f28e2b", "#fdae6b", "#fdd0a2", "#ffa500"),
          "blue": ("#0072B2", "#1f77b4", "#4e79a7", "#56B4E9", "#9ecae1", "#c6dbef", "#0000ff"),
          "green": ("#009E73", "#2ca02c", "#59a14f", "#a1d99b", "#00a000"),
          "yellow": ("#F0E442", "#edc948", "#fee391"), "purple": ("#CC79A7", "#b07aa1", "#9467bd", "#dadaeb")}
STYLES = {"-": "solid", "--": "dashed", ":": "dotted", "-.": "dashdot"}


def colour_name(colour) -> str | None:
    """The name a reader gives `colour` (any matplotlib colour): None when transparent."""
    from matplotlib.colors import to_rgba

    r, g, b, a = to_rgba(colour)
    if a == 0:
        return None
    _, s, v = colorsys.rgb_to_hsv(r, g, b)
    if v < 0.2:
        return "black"
    if s < 0.15:
        return "white" if v > 0.95 else "grey"
    return min((sum((x - y) ** 2 for x, y in zip((r, g, b), to_rgba(ref)[:3])), name)
               for name, refs in SHADES.items() for ref in refs)[1]


def _style(style) -> str:
    """'solid', 'dashed', 'dotted' or 'dashdot' of a matplotlib line style (a name, a symbol or a dash tuple)."""
    if isinstance(style, tuple):
        return "solid" if not style[1] else "dashed"
    return STYLES.get(style, style)


@dataclass(frozen=True)
class Mark:
    """One thing drawn: kind 'line', 'patch', 'arrow', 'points' or 'text', its colour name (a patch's fill, an
    arrow's or a line's stroke; None when hollow), edge colour, line style, marker, label or text, x and y data,
    and a rectangle's width (data units)."""

    kind: str
    colour: str | None = None
    edge: str | None = None
    style: str = "solid"
    marker: str = ""
    text: str = ""
    x: tuple[float, ...] = ()
    y: tuple[float, ...] = ()
    width: float = 0.0


class Marks(list):
    """A figure's `Mark`s, with the figure they were read from (`figure`) for a check that needs its axes."""

    figure: object = None


def marks(fig) -> Marks:
    """Every visible artist of `fig` that a caption could name, as `Mark`s."""
    from matplotlib.collections import Collection
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch, Patch
    from matplotlib.text import Text

    found = Marks()
    found.figure = fig
    artists = fig.findobj(lambda a: a.get_visible())
    artists += [a.arrow_patch for a in artists if getattr(a, "arrow_patch", None) is not None]  # annotate's arrows
    for a in artists:
        if isinstance(a, Line2D):
            found.append(Mark("line", colour_name(a.get_color()), None, _style(a.get_linestyle()),
                              str(a.get_marker()), a.get_label(), tuple(map(float, a.get_xdata())),
                              tuple(map(float, a.get_ydata()))))
        elif isinstance(a, FancyArrowPatch):
            found.append(Mark("arrow", colour_name(a.get_edgecolor()), style=_style(a.get_linestyle())))
        elif isinstance(a, Patch):
            found.append(Mark("patch", colour_name(a.get_facecolor()), colour_name(a.get_edgecolor()),
                              _style(a.get_linestyle()), text=a.get_label(), width=float(getattr(a, "get_width",
                                                                                                  lambda: 0.0)())))
        elif isinstance(a, Collection):
            faces, edges = list(a.get_facecolor()), list(a.get_edgecolor())
            for i in range(max(len(faces), len(edges), 1) if len(a.get_paths()) else 0):
                face = colour_name(faces[i % len(faces)]) if len(faces) else None
                edge = colour_name(edges[i % len(edges)]) if len(edges) else None
                found.append(Mark("points", face, edge, _style(a.get_linestyle()[0]), text=a.get_label()))
        elif isinstance(a, Text) and a.get_text():
            found.append(Mark("text", colour_name(a.get_color()), text=a.get_text()))
    return found


def count(fig_marks: list[Mark], **want) -> int:
    """How many marks have every attribute in `want` (a callable value is a test of the attribute)."""
    return sum(all(v(getattr(m, k)) if callable(v) else getattr(m, k) == v for k, v in want.items())
               for m in fig_marks)


def _at(value: float, rtol: float = 0.05) -> Callable[[tuple[float, ...]], bool]:
    """A test of a line's x data: a vertical line (all its x equal) at `value`."""
    return lambda xs: bool(xs) and max(xs) - min(xs) <= 1e-12 * abs(value) and math.isclose(xs[0], value, rel_tol=rtol)


def _points_of(fig_marks: list[Mark]) -> int:
    """The ● marks a figure holds: ● in a text, or a round marker."""
    return sum(m.text.count("●") for m in fig_marks if m.kind == "text") + \
        count(fig_marks, kind="line", marker="o")


def _layer(fig_marks: list[Mark]) -> None:
    """Chapters 0 and 4's layer diagram: nine matmuls marked ● and the weights in orange."""
    points = _points_of(fig_marks)
    assert points == 9, f"the caption promises nine ● marks; found {points}"
    assert count(fig_marks, kind="patch", colour="orange") > 0, "no orange weight"


def _q6_answer() -> dict[str, float]:
    """Chapter 2's question 6, stage by stage (the chapter's hidden cell)."""
    v5e, mesh, A = sb.get_chip("v5e"), sb.TpuMesh("v5e", X=4, Y=4), (128 * 1024) ** 2
    mm = sb.roofline.matmul(8, 128 * 1024, 128 * 1024, v5e, weight_dtype="int8", act_dtype="bf16")
    pcie = sb.roofline.estimate(0, A / mesh.n_chips, v5e, bandwidth=v5e.pcie_bandwidth, channel="PCIe")
    ici = sb.roofline.estimate(0, A * 15 / 16, v5e, bandwidth=2 * v5e.ici_bandwidth, channel="ICI")
    return {"PCIe: shards to all 16 chips": pcie.time, "ICI: 15 shards into chip (0, 0)": ici.time,
            "HBM → MXU on (0, 0)": mm.t_comms, "MXU FLOPs": mm.t_math}


def _stage_lines(fig_marks: list[Mark]) -> None:
    times = _q6_answer().values()
    lines = [m for m in fig_marks if m.kind == "line" and m.style in ("dashed", "dotted") and len(set(m.x)) == 1]
    by_style = {m.style: m.x[0] for m in lines}
    scale = by_style.get("dotted", 0) / sum(times) if by_style.get("dotted") else 0
    assert scale, f"no dotted line (the sum); vertical lines: {by_style}"
    assert math.isclose(by_style.get("dashed", 0), max(times) * scale, rel_tol=1e-6), "the dashed line is not the " \
                                                                                      "slowest stage"


def _moe(fig_marks: list[Mark]) -> None:
    bars = {m.text: m for m in fig_marks if m.kind == "patch" and m.text in sb.plots.experts.PHASES}
    assert {n: m.colour for n, m in bars.items()} == {"router": "blue", "dispatch": "red", "experts": "blue",
                                                      "combine": "red"}
    us = {n: m.width for n, m in bars.items()}  # the bars are drawn in µs
    comms = us["dispatch"] + us["combine"]
    assert (round(comms), round(sum(us.values()))) == (58, 84), us
    assert comms > 2 * us["experts"] and math.isclose(us["combine"], 2 * us["dispatch"], rel_tol=0.01), us
    assert us["router"] < 1, us
    assert count(fig_marks, kind="arrow", colour="red") > 0, "no vermilion AllToAll arrows"


def _ring_halfway(fig) -> None:
    """Chapter 3's ring AllReduce on 8 devices: after step 4, each device holds one fully summed chunk, drawn solid
    (opaque, where a partial sum is pale) and labelled 'k:8' (chunk k, summed over 8 devices)."""
    [ax] = [ax for ax in fig.axes if ax.get_title() == "after step 4"]
    solid = [p for p in ax.patches if (p.get_alpha() or 0) >= 0.9]
    assert len(solid) == 8, f"{len(solid)} solid chunks after step 4, not one per device"
    assert {f"{k}:8" for k in range(8)} <= {t.get_text() for t in ax.texts}


def _written(*values: str) -> Callable[[list[Mark]], None]:
    """A check that each of `values` (as the caption writes it) is written in the figure."""
    def check(fig_marks: list[Mark]) -> None:
        texts = " ".join(m.text for m in fig_marks if m.kind == "text")
        assert [v for v in values if v not in texts] == [], f"not written in the figure: {texts[:300]}"
    return check


MOE = ("deepseek-v3", sb.TpuMesh("tpu7x", X=4, Y=4, Z=4), 64)
SLICES = [((0, 0), (4, 4)), ((4, 0), (8, 16))]
# (chapter, words of its caption, the chapter's figure call, the check of what the caption promises)
CASES = {
    "00 layer diagram": ("00_intro", "of the nine matmuls (●), seven multiply the activations by a weight (orange)",
                         lambda: sb.plots.transformer.layer_diagram("llama3-70b"), _layer),
    "04 layer diagram": ("04_transformers", "seven of the nine contractions (●) involve a weight (orange)",
                         lambda: sb.plots.transformer.layer_diagram("llama3-70b"), _layer),
    "01 roofline": ("01_rooflines", "deep in the red, bandwidth-bound region",
                    lambda: sb.plots.roofline.roofline("v5e", points={"dot": sb.roofline.dot(1_000_000, "v5e")}),
                    lambda m: count(m, kind="patch", colour="red") > 0 or pytest.fail("no red region")),
    "00 banner": ("00_intro", "no chip is more than 16 hops from the centre", lambda: sb.plots.chip.banner(),
                  _written("16 hops")),
    "02 memory hierarchy": ("02_tpus", "(16 GB, 128 MiB, 256 KiB) while bandwidth rises (820 GB/s out of HBM, about 18 "
                                       "TB/s out of VMEM)", lambda: sb.plots.chip.memory_hierarchy("v5e"),
                            _written("16 GB", "128 MiB", "256 KiB", "820 GB/s", "18 TB/s")),
    "02 v5p chip": ("02_tpus", "four MXUs, and the HBM bandwidth arrow is shared, so per core a v5p has half of its "
                               "2.8 TB/s", lambda: sb.plots.chip.chip_diagram("v5p"),
                    _written("TensorCore 0", "TensorCore 1", "4 MXUs", "2.8 TB/s", "shared by")),
    "02 tray": ("02_tpus", "solid between this host's chips; dashed where a link leaves",
                lambda: sb.plots.chip.tray("v5p"),
                lambda m: (count(m, kind="line", style="solid", colour="red") and
                           count(m, kind="line", style="dashed", colour="red")) or pytest.fail("no solid, dashed ICI")),
    "02 v5e torus": ("02_tpus", "the two dotted boxes are the two hosts",
                     lambda: sb.plots.tpu.torus(sb.TpuMesh("v5e", X=4, Y=4)),
                     lambda m: count(m, kind="patch", style="dotted") == 2 or pytest.fail("not two dotted boxes")),
    "02 v5p torus": ("02_tpus", "the red stubs mark wraparound links",
                     lambda: sb.plots.tpu.torus(sb.TpuMesh("v5p", X=4, Y=4, Z=4)),
                     lambda m: count(m, kind="line", colour="red") > 0 or pytest.fail("no red stubs")),
    "02 pod cubes": ("02_tpus", "only the orange optical links between cubes",
                     lambda: sb.plots.chip.pod_cubes(sb.TpuMesh("v5p", X=8, Y=8, Z=16)),
                     lambda m: count(m, kind="line", colour="orange") > 0 or pytest.fail("no orange links")),
    "02 slices": ("02_tpus", r"the $8\times16$ slice (orange) spans the whole $Y$ axis",
                  lambda: sb.plots.chip.slices(sb.TpuMesh("v5e", X=16, Y=16), SLICES),
                  lambda m: (count(m, kind="points", colour="orange"), count(m, kind="points", colour="blue")) ==
                  (8 * 16, 4 * 4) or pytest.fail("not 128 orange and 16 blue chips")),
    "02 stage breakdown": ("02_tpus", "The dashed line (slowest stage)",
                           lambda: sb.plots.tpu.stage_breakdown(_q6_answer(), title="Q6"), _stage_lines),
    "02 systolic": ("02_tpus", "Row 0 (blue) now spans a whole anti-diagonal",
                    lambda: sb.plots.tpu.systolic(3, B=3, D=4, F=4),
                    lambda m: (count(m, kind="patch", colour="blue") and count(m, kind="patch", colour="green") and
                               count(m, kind="text", text=lambda t: "18" in t)) or pytest.fail("blue, green or 18")),
    "02 mxu pipeline": ("02_tpus", "after the first fill (grey)",
                        lambda: sb.plots.chip.mxu_pipeline(n_tiles=3, B=128, size=128),
                        lambda m: count(m, kind="patch", colour="grey") > 0 or pytest.fail("no grey fill")),
    "03 collective vs size": ("03_sharding", "the model (black) is flat at 3 µs",
                              lambda: sb.plots.sharding.collective_vs_size(sb.TpuMesh("v5e", X=8, Y=4), "Y"),
                              lambda m: count(m, kind="line", colour="black", style="solid",
                                              y=lambda ys: len(ys) > 2 and ys[0] == ys[1]) > 0 or
                              pytest.fail("no flat black model line")),
    "03 ring all-reduce": ("03_sharding", "after step 4 each device holds one fully summed chunk (solid)",
                           lambda: sb.plots.sharding.ring_steps(8, "all_reduce"),
                           lambda m: _ring_halfway(m.figure)),
    "03 collective matmul": ("03_sharding", "the red arrows are sends of a partial sum",
                             lambda: sb.plots.collective_steps.collective_matmul(4),
                             lambda m: count(m, kind="arrow", colour="red") > 0 or pytest.fail("no red arrows")),
    "05 zero bubble": ("05_training", "input gradient (orange, passed upstream at once) and its weight gradient "
                                      "(green, W)",
                       lambda: sb.plots.schedules.schedule_figure(sb.training.zero_bubble_schedule(4, 8), "Z"),
                       lambda m: (count(m, kind="patch", colour="orange") and count(m, kind="patch", colour="green")
                                  and count(m, kind="text", text="weight gradient")) or
                       pytest.fail("no orange input gradient or green weight gradient")),
    "07 throughput vs batch": ("07_inference", r"the dotted line at $B \approx 240$",
                               lambda: sb.plots.inference.throughput_vs_batch(600e6, "v5e", n_chips=4),
                               lambda m: count(m, kind="line", style="dotted", x=_at(240)) > 0 or
                               pytest.fail("no dotted line at 240")),
    "07 latency breakdown": ("07_inference", "The dashed line marks where 138 caches fill",
                             lambda: sb.plots.inference.latency_breakdown("llama3-70b", "v5e", 16, context=8192),
                             lambda m: (count(m, kind="line", style="dashed", x=_at(138, 0.01)) and
                                        count(m, kind="points", colour="green")) or
                             pytest.fail("no dashed line at 138 or no green region")),
    "07 paged cache": ("07_inference", "the cache shrinks with the number of orange boxes, not the blue ones",
                       lambda: sb.plots.kv_cache.paged_cache(lengths=(37, 22, 50), block=16, n_blocks=12,
                                                             model="llama3-8b"),
                       lambda m: (count(m, kind="patch", colour="orange") and count(m, kind="patch", colour="blue"))
                       or pytest.fail("no orange and blue boxes")),
    "07 latency-bound gather": ("07_inference", "the bandwidth term (dashed) keeps falling",
                                lambda: sb.plots.serving.latency_bound_gather("v5e", chips=8, D=8192),
                                lambda m: count(m, kind="line", style="dashed", text=lambda t: "bandwidth" in t) > 0
                                or pytest.fail("no dashed bandwidth line")),
    "13 validation": ("13_validation", "the grey calibration rows and the blue development rows",
                      lambda: sb.plots.validation.validation(),
                      lambda m: (count(m, kind="points", colour=None) and
                                 all(count(m, kind="points", colour=c) for c in ("grey", "blue", "orange")) and
                                 count(m, kind="line", style="dashed") >= 3) or
                      pytest.fail("hollow markers, grey/blue/orange rows or dashed medians missing")),
    "14 moe layer": ("14_moe", "the two AllToAlls (the vermilion arrows and bars) take 58 µs of the layer's 84 µs",
                     lambda: sb.plots.experts.moe_layer(*MOE), _moe),
}


def _caption_text(chapter: str) -> str:
    """The chapter's prose on one line (captions wrap over several lines of the source)."""
    return " ".join((ROOT / "chapters" / f"{chapter}.md").read_text().split())


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_caption_matches_its_figure(case: str):
    chapter, words, draw, check = CASES[case]
    assert " ".join(words.split()) in _caption_text(chapter), f"{chapter}'s caption no longer says {words!r}"
    check(marks(draw()))


def test_colours_are_named_as_a_reader_names_them():
    assert [colour_name(c) for c in ("#D55E00", "#fdae6b", "#0072B2", "#009E73", "#BBBBBB", "black", "none")] == \
        ["red", "orange", "blue", "green", "grey", "black", None]


def test_a_figure_without_the_promised_marks_fails():
    """The checks can fail: an empty figure has no ●, no orange weight, no red region."""
    fig, _ = sb.plots.base.figure()
    with pytest.raises(AssertionError):
        _layer(marks(fig))
    assert count(marks(fig), kind="patch", colour="red") == 0
