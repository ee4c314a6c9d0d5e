"""Every figure a chapter draws can be read where the site shows it.

The figures are found in the chapter sources: every top-level expression of a code cell that calls `sb.plots`
(the final one, or one passed to `display`). Each is evaluated with the chapter's own arguments, after a short setup
that stands in for the chapter's earlier cells (measured sweeps become fixed synthetic rows), and checked:

- its smallest text, shrunk to the width the page gives it, is at least 8 pt. The notebook saves a figure with a
  tight bounding box; the site shows it at most one text column wide (730 px, 7.6 in at 96 px/in), or 136 % of
  that in a cell tagged `full-width` (sphinx-book-theme's `tag_full-width` rule);
- no legend covers a data artist: a line's drawn segments, a bar or box, a scatter point or a polygon;
- no two texts overlap, none leaves the figure, none spills out of the box it is written in, no arrow runs through
  a text other than its own label on a plate, and no box of a drawing is cut off at its edge (`text_collisions`,
  on the texts the renderer really draws).

Fixture figures (5-pt text; a legend on a line; a text of each collision) show that the checks fail when they
should; the ten figures issue #40 judged poor (`REDRAWN`) failed the collision check or an exact one below before
they were redrawn.
"""

from __future__ import annotations

import ast
import itertools
import re
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import scalebook as sb

ROOT = Path(__file__).resolve().parents[2]
COLUMN_IN = 730 / 96  # the site's text column, inches at 96 px per inch
FULL_WIDTH_IN = 1.36 * COLUMN_IN  # sphinx-book-theme: div.cell.tag_full-width {width: 136%}
MIN_PT = 8.0
TIGHT_PAD_IN = 0.1  # savefig(bbox_inches="tight") pads the box by 0.1 in on each side
_CELL = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)```", re.S)
_TAGS = re.compile(r"^:tags:\s*\[(.*)\]", re.M)

# What each chapter's earlier cells define, for the figure calls that read it (measured sweeps: fixed rows).
SETUP = {
    "00_intro": """
B, D, F = 4096, 8192, 28672
v5e = sb.get_chip("v5e")
split = {n: sb.roofline.estimate(2 * B * D * F / n, (n - 1) / n * 2 * B * F, v5e, bandwidth=v5e.ici_bidirectional,
                                 channel="ICI") for n in (1, 2, 4, 8, 16, 64, 256)}
""",
    "01_rooflines": """
dot = sb.roofline.estimate(2 * 8192, 2 * 2 * 8192, "v5e")
pts = {"dot product": dot, "matmul, B = 32": sb.roofline.matmul(32, 8192, 8192, "v5e"),
       "matmul, B = 1024": sb.roofline.matmul(1024, 8192, 8192, "v5e")}
# the chapter's sweep on a CPU: B = 1 ... 2048 against 4096 x 4096 weights, timed at 70 % of the roofline
rows = [{"B": b, "intensity": e.intensity, "measured FLOP/s": 0.7 * e.achieved_flops}
        for e, b in ((sb.roofline.matmul(b, 4096, 4096, "v5e"), b) for b in (2**i for i in range(12)))]
sweep = sb.bench.Sweep(sb.Table(rows), sb.get_chip("v5e"), "bf16")
""",
    "02_tpus": """
answer = {"PCIe: shards to all 16 chips": 0.16, "ICI: 15 shards into chip (0, 0)": 0.4, "HBM → MXU on (0, 0)": 0.05,
          "MXU FLOPs": 0.0035}
""",
    "03_sharding": """
mesh, sizes = sb.TpuMesh("v5e", X=2, Y=2), {"I": 1024, "J": 4096}
mm = {"I": 1024, "J": 2048, "K": 4096}
ring = sb.overlap.collective_matmul("A[I_X, J_Y] @ B[J, K_Y] -> C[I_X, K_Y]", sb.TpuMesh("v5e", X=2, Y=4),
                                    I=1024, J=2048, K=8192)
measured = [(v, 2e-5 + v / 2e10) for v in (2**14, 2**17, 2**20, 2**23)]
""",
    "05_training": """
mem = sb.training.memory("llama3-70b", 2**21, 4096)
gpipe = sb.training.pipeline_schedule(4, 8, "gpipe")
meshes = {s: sb.TpuMesh("v5p", **({"X": 2, "Y": 2} if s == "fsdp_tp" else {("Y" if s == "tp" else "X"): 4}))
          for s in ("dp", "fsdp", "tp", "fsdp_tp")}
""",
    "06_training_llama": """
llama3_70b_config = {"hidden_size": 8192, "intermediate_size": 28672, "num_attention_heads": 64,
                     "num_hidden_layers": 80, "num_key_value_heads": 8, "vocab_size": 128256}
""",
    "08_serving_llama": 'llama, v5e = sb.get_model("llama3-70b"), sb.get_chip("v5e")',
    "12_gpus": """
from scalebook.hardware import gpu
node, pod, su = sb.GpuCluster("h100", gpus=8), sb.GpuCluster("h100", gpus=1024), sb.GpuCluster("h100", gpus=256)
b200_pod, gb200_pod = sb.GpuCluster("b200", gpus=1024), gpu.get_cluster("gb200-superpod")
h800_pod, rack = sb.GpuCluster("h800", gpus=2048), gpu.get_cluster("gb200-nvl72")
overhead = sb.collectives.fixed_overhead(58e6, 150e9, 370e9)
sweep = [{"V": v, "V / time": v / (2e-5 + v / 3e10)} for v in (2**14, 2**17, 2**20, 2**22)]
peak, per_call = 3e10, 2e-5
rows = [{"model": name, **sb.training.check_parallelism(sb.GpuCluster("h100", gpus=g), s * 4096, tp=mp)}
        for name, g, s, mp in (("16B", 192, 192, 1), ("70B", 768, 384, 16), ("314B", 3072, 1536, 64))]
""",
}


def _statements(body: str) -> list[ast.stmt]:
    """Return a cell's top-level statements (its `:tags:` lines dropped, IPython magics made `pass`)."""
    lines = [line for line in body.splitlines() if not line.startswith(":")]
    magic = [line[: len(line) - len(line.lstrip())] + "pass" if line.lstrip().startswith(("%", "!")) else line
             for line in lines]
    return ast.parse("\n".join(magic)).body


def _is_figure_call(node: ast.expr) -> bool:
    """True when `node` is sb.plots.<...>(...) or display(sb.plots.<...>(...))."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "display" and node.args:
        node = node.args[0]
    return isinstance(node, ast.Call) and ast.unparse(node.func).startswith("sb.plots.")


def figure_calls(chapter: str) -> Iterator[tuple[str, bool]]:
    """Yield (expression, full_width) for every figure the chapter's code cells display."""
    for body in _CELL.findall((ROOT / "chapters" / f"{chapter}.md").read_text()):
        tags = _TAGS.search(body)
        full = bool(tags) and "full-width" in [t.strip() for t in tags.group(1).split(",")]
        for node in _statements(body):
            if isinstance(node, ast.Expr) and _is_figure_call(node.value):
                call = node.value
                yield ast.unparse(call.args[0] if ast.unparse(call.func) == "display" else call), full


def all_figure_calls() -> list[Any]:
    """Every chapter's figure calls as pytest params, named chapter:n."""
    params = []
    for md in sorted((ROOT / "chapters").glob("*.md")):
        for n, (expr, full) in enumerate(figure_calls(md.stem)):
            params.append(pytest.param(md.stem, expr, full, id=f"{md.stem}:{n}"))
    return params


_RENDERED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # each figure is drawn once for both checks


def _render(fig: Any) -> Any:
    """Draw `fig` on an Agg canvas (a closed figure has none), once, and return the renderer."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if fig not in _RENDERED:
        canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
        canvas.draw()
        _RENDERED[fig] = canvas.get_renderer()
    return _RENDERED[fig]


def displayed_scale(fig: Any, full_width: bool = False) -> float:
    """Return how much the site shrinks `fig`: its tight width against the column (1 when it fits)."""
    renderer = _render(fig)
    width = fig.get_tightbbox(renderer).width + 2 * TIGHT_PAD_IN
    return min(1.0, (FULL_WIDTH_IN if full_width else COLUMN_IN) / width)


def smallest_text(fig: Any, full_width: bool = False) -> tuple[float, str]:
    """Return (points, text) of the smallest visible text in `fig` at its displayed width."""
    from matplotlib.text import Text

    scale = displayed_scale(fig, full_width)
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and _drawn(t)]
    if not texts:
        return float("inf"), ""
    smallest = min(texts, key=lambda t: t.get_fontsize())
    return smallest.get_fontsize() * scale, smallest.get_text()


def _drawn(text: Any) -> bool:
    """True when a text lies inside its figure (a tick label beyond the view limits is never drawn)."""
    box = text.get_window_extent()
    fig_box = text.figure.bbox
    return box.x1 > fig_box.x0 and box.x0 < fig_box.x1 and box.y1 > fig_box.y0 and box.y0 < fig_box.y1


def _solid(artist: Any) -> bool:
    """True for an artist a reader reads as data: visible and not a faint background shade."""
    alpha = artist.get_alpha()
    return artist.get_visible() and (alpha is None or alpha >= 0.5)


def _segment_points(xy: Any, per_segment: int = 16) -> Iterator[tuple[float, float]]:
    """Yield points along a polyline in display coordinates, `per_segment` per segment (what the line covers)."""
    pts = [(float(x), float(y)) for x, y in xy if x == x and y == y]  # NaN breaks a line: drop it
    yield from pts[:1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        for i in range(1, per_segment + 1):
            yield x0 + (x1 - x0) * i / per_segment, y0 + (y1 - y0) * i / per_segment


def legend_overlaps(fig: Any) -> list[str]:
    """Return a description of every data artist that a legend of `fig` covers (empty when none)."""
    renderer = _render(fig)
    found = []
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or not legend.get_visible():
            continue
        box = legend.get_window_extent(renderer).shrunk(0.98, 0.98)
        for kind, where in _data_artists(ax, renderer):
            if _covers(box, kind, where):
                found.append(f"{ax.get_title()!r}: legend covers a {kind}")
    return found


def _covers(box: Any, kind: str, where: Any) -> bool:
    """True when the legend's `box` covers a data artist: a box it overlaps, a point or line point inside it, or
    an area (a filled polygon) with a corner of the box inside it or its outline through the box."""
    if kind == "box":
        return box.overlaps(where)
    if kind == "area":
        corners = [(box.x0, box.y0), (box.x0, box.y1), (box.x1, box.y0), (box.x1, box.y1)]
        return bool(where.contains_points(corners).any()) or _covers(box, "line", _segment_points(where.vertices))
    return any(box.contains(x, y) for x, y in where)


def _data_artists(ax: Any, renderer: Any) -> Iterator[tuple[str, Any]]:
    """Yield ("line", points), ("point", points) or ("box", bbox) for each solid data artist of `ax`."""
    for line in filter(_solid, ax.lines):
        yield "line", list(_segment_points(line.get_transform().transform(line.get_xydata())))
        if line.get_marker() not in (None, "None", "", " "):
            yield "point", line.get_transform().transform(line.get_xydata())
    for patch in filter(_solid, ax.patches):
        yield "box", patch.get_window_extent(renderer)
    for coll in filter(_solid, ax.collections):
        offsets = coll.get_offsets()
        if len(offsets) and len(coll.get_paths()) <= 1:
            yield "point", coll.get_offset_transform().transform(offsets)
            continue
        filled = len(coll.get_facecolor()) and max(c[3] for c in coll.get_facecolor()) > 0
        for path in coll.get_paths():
            yield ("area" if filled else "line"), path.transformed(coll.get_transform())


def drawn_texts(fig: Any) -> list[tuple[Any, Any]]:
    """Return (text, box in display pixels) for every text the renderer draws in `fig` (a tick label beyond the
    view limits, or of a hidden axis, is never drawn and is left out)."""
    from unittest import mock

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    drawn: list[tuple[Any, Any]] = []
    draw = Text.draw

    def record(text: Any, renderer: Any) -> None:
        draw(text, renderer)
        if text.get_visible() and text.get_text().strip():
            drawn.append((text, text.get_window_extent(renderer)))

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    with mock.patch.object(Text, "draw", record):
        canvas.draw()
    return drawn


def text_collisions(fig: Any) -> list[str]:
    """Return a line for each pair of drawn texts whose boxes overlap by more than a pixel each way, for each
    text that leaves the figure or the clip box it is drawn in, and for each arrow whose path runs through a text
    other than its own label; in a drawing (axes turned off), for each patch that leaves the axes (cut off)
    and each text that spills out of the box it is written in
    (empty when the figure is clean)."""
    texts = drawn_texts(fig)
    found = [f"{a.get_text()!r} overlaps {b.get_text()!r}" for (a, box_a), (b, box_b)
             in itertools.combinations(texts, 2) if _overlap(box_a, box_b)]
    for text, box in texts:
        clip = text.get_clip_box() if text.get_clip_on() else None
        for name, frame in (("the figure", fig.bbox), ("its clip box", clip)):
            if frame is not None and not _inside(box, frame):
                found.append(f"{text.get_text()!r} leaves {name}")
    for ax in fig.axes:
        if not ax.axison:  # a drawing: what leaves its axes is cut off where the axes end
            found += [f"{t.get_text()!r} spills out of its box" for t, box in texts if t.axes is ax
                      and not _inside(box, _box_under(ax, box))]
            found += [f"a {type(p).__name__} leaves its drawing" for p in ax.patches
                      if p.get_visible() and p.get_clip_on() and not _inside(p.get_window_extent(), ax.bbox)]
    for owner, patch in _arrows(fig):
        path = patch.get_transform().transform_path(patch.get_path())  # display pixels, a polyline per stroke
        points = [p for stroke in path.to_polygons(closed_only=False) for p in _segment_points(stroke, 8)]
        found += [f"an arrow runs through {text.get_text()!r}" for text, box in texts if text is not owner
                  and not _on_a_plate_above(text, patch) and any(box.shrunk(0.9, 0.8).contains(x, y)
                                                                for x, y in points)]
    return found


def _box_under(ax: Any, box: Any) -> Any:
    """Return the extent of the smallest box (a rectangle, rounded or not) of `ax` under the centre of `box`, the
    one drawn last among equals (the front sheet of a stack), or the figure's when there is none: the box a label is
    written in."""
    from matplotlib.patches import FancyBboxPatch, Rectangle

    centre = ((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2)
    under = [p.get_window_extent() for p in reversed(ax.patches) if isinstance(p, (Rectangle, FancyBboxPatch))
             and p.get_visible() and p.get_window_extent().contains(*centre)]
    smallest = min((b.width * b.height for b in under), default=None)
    return next((b for b in under if b.width * b.height <= 1.01 * smallest), ax.figure.bbox)


def _on_a_plate_above(text: Any, patch: Any) -> bool:
    """True when `text` sits on an opaque plate drawn over `patch` (an arrow's own label): the arrow passes under
    it, hidden, and the text reads."""
    plate = text.get_bbox_patch()
    return plate is not None and plate.get_facecolor()[3] >= 0.8 and text.get_zorder() > patch.get_zorder()


def _arrows(fig: Any) -> Iterator[tuple[Any, Any]]:
    """Yield (its own text or None, patch) for every drawn arrow of `fig`: annotations' and free-standing ones."""
    from matplotlib.patches import FancyArrowPatch
    from matplotlib.text import Annotation

    for note in fig.findobj(Annotation):
        if note.arrow_patch is not None and note.get_visible():
            yield note, note.arrow_patch
    for patch in fig.findobj(FancyArrowPatch):
        if patch.get_visible():
            yield None, patch


def _overlap(a: Any, b: Any, tolerance: float = 1.0) -> bool:
    """True when boxes `a` and `b` (display pixels) share more than `tolerance` pixels both ways."""
    return min(a.x1, b.x1) - max(a.x0, b.x0) > tolerance and min(a.y1, b.y1) - max(a.y0, b.y0) > tolerance


def _inside(box: Any, frame: Any, tolerance: float = 1.0) -> bool:
    """True when `box` lies within `frame` give or take `tolerance` pixels."""
    return (box.x0 >= frame.x0 - tolerance and box.x1 <= frame.x1 + tolerance and box.y0 >= frame.y0 - tolerance
            and box.y1 <= frame.y1 + tolerance)


@pytest.fixture(scope="module")
def namespaces() -> dict[str, dict[str, Any]]:
    """Each chapter's namespace: `sb` and what its SETUP defines (ch. 9's trace is captured lazily below)."""
    spaces: dict[str, dict[str, Any]] = {}
    for chapter, source in SETUP.items():
        spaces[chapter] = {"sb": sb}
        exec(source, spaces[chapter])  # noqa: S102 - the test's own setup text
    return spaces


def _profiling_namespace() -> dict[str, Any]:
    """Chapter 9's trace of the tiny transformer on 8 emulated devices, and its memory analysis; chapter 10's
    timelines and chapter 9's mystery program are drawn from the same trace (a profile of 8 devices is what
    they draw)."""
    sb.setup(quiet=True)
    from scalebook import profiling
    from scalebook.lab import ch09_transformer as tt

    cfg = tt.TinyTransformer(B=8, T=64, D=128, F=512, V=256)
    params, tokens, _ = tt.step_inputs(cfg)
    chip = sb.bench.calibrate(n=256, nbytes=2**22, repeats=2, progress=False)
    trace = profiling.capture(tt.train_step(cfg), params, tokens, repeats=2, chip=chip)
    ffw = next(r["op"] for r in trace.table if r["kind"] == "matmul" and r["scope"] == "layer0/ffw")
    sizes = {r["op"]: profiling.fusion_text(trace.hlo, r["op"]).count("\n") for r in trace.table
             if r["opcode"] == "fusion"}
    memory = sb.xla.compiled(tt.train_step(cfg), params, tokens).memory_analysis()
    return {"trace": trace, "ffw": ffw, "sizes": sizes, "memory": memory, "plain_trace": trace, "ring_trace": trace,
            "mystery_trace": trace}


_TRACED = ("trace", "memory.")  # a figure call that reads a profile needs the captured namespace


def _draw(chapter: str, expr: str, namespaces: dict[str, dict[str, Any]]) -> Any:
    """Evaluate a chapter's figure expression in its namespace and return the figure."""
    space = namespaces.setdefault(chapter, {"sb": sb})
    if any(name in expr for name in _TRACED) and "memory" not in space:
        if "profiled" not in namespaces:
            namespaces["profiled"] = _profiling_namespace()
        space.update(namespaces["profiled"])
    return eval(expr, space)  # noqa: S307 - the chapter's own figure call


@pytest.mark.parametrize(("chapter", "expr", "full_width"), all_figure_calls())
def test_every_chapter_figure_is_legible_at_its_displayed_width(chapter, expr, full_width, namespaces) -> None:
    from matplotlib.figure import Figure

    fig = _draw(chapter, expr, namespaces)
    assert isinstance(fig, Figure), f"{expr} returned {type(fig).__name__}"
    points, text = smallest_text(fig, full_width)
    assert points >= MIN_PT, f"{expr}: {text!r} is {points:.1f} pt at its displayed width (full-width={full_width})"
    assert legend_overlaps(fig) == [], expr
    assert text_collisions(fig) == [], expr


# The ten figures judged poor in issue #40 and redrawn; the test of every chapter figure checks them with the rest.
REDRAWN = ("transformer.layer_diagram", "roofline.sweep", "collective_steps.collective_matmul",
           "parallelism.layer_chain", "tpu.bandwidth_ladder", "gpus.level_bandwidth", "gpu_diagrams.sm_diagram",
           "transformer.matmul_flops", "serving.engine", "serving.speculative")


def redrawn_figure_calls() -> list[Any]:
    """The chapters' calls of the redrawn figures, as pytest params named chapter:n."""
    return [p for p in all_figure_calls() if p.values[1].startswith(tuple(f"sb.plots.{name}(" for name in REDRAWN))]


def test_every_redrawn_figure_is_drawn_by_a_chapter_and_so_checked_above() -> None:
    drawn = {p.values[1].split("(")[0].removeprefix("sb.plots.") for p in redrawn_figure_calls()}
    assert drawn == set(REDRAWN)


def test_the_collision_check_fails_on_each_defect_it_names() -> None:
    from matplotlib.patches import Rectangle

    from scalebook.plots.base import figure

    fig, ax = figure((4.0, 3.0))
    ax.text(0.5, 0.5, "B=512")
    ax.text(0.52, 0.5, "B=1024")
    ax.text(1.2, 0.5, "beyond the right edge of the figure")
    assert text_collisions(fig) == ["'B=512' overlaps 'B=1024'", "'beyond the right edge of the figure' leaves the "
                                                                  "figure"]
    fig, ax = figure((4.0, 3.0))
    ax.set_axis_off()
    ax.add_patch(Rectangle((0.1, 0.1), 0.2, 0.2))
    ax.text(0.2, 0.2, "a label wider than its box", ha="center", va="center")
    ax.add_patch(Rectangle((0.8, 0.5), 0.4, 0.2))  # past the right edge of the drawing: cut off
    ax.text(0.5, 0.8, "a box label", ha="center", va="center")
    ax.annotate("", xy=(0.5, 0.95), xytext=(0.5, 0.65), arrowprops=dict(arrowstyle="->"))
    assert text_collisions(fig) == ["'a label wider than its box' spills out of its box",
                                    "a Rectangle leaves its drawing", "an arrow runs through 'a box label'"]


def test_the_layer_chain_draws_each_array_with_an_area_to_its_bytes() -> None:
    from matplotlib.patches import Rectangle

    B, D, F = 2**17, 8192, 32768  # chapter 5's: Tmp 8.59 GB, In 2.15 GB, each weight 537 MB
    fig = sb.plots.parallelism.layer_chain(B=B, D=D, F=F)
    _render(fig)
    areas = [p.get_window_extent().width * p.get_window_extent().height for p in fig.axes[0].patches
             if isinstance(p, Rectangle)]
    elements = [B * D, D * F, B * F, F * D, B * D]  # In, W_in, Tmp, W_out, Out
    assert [a / areas[0] for a in areas] == pytest.approx([n / elements[0] for n in elements], rel=0.03)


@pytest.mark.parametrize("chapter", ["00_intro", "04_transformers"])
def test_the_layer_diagram_marks_each_matmul_as_its_caption_says(chapter) -> None:
    from scalebook.models import layer_einsums
    from scalebook.plots.transformer import MATMUL_MARK

    source = (ROOT / "chapters" / f"{chapter}.md").read_text()
    caption = source.split('sb.plots.transformer.layer_diagram("llama3-70b")', 1)[1].split("\n\n", 2)[1]
    assert f"({MATMUL_MARK})" in caption
    fig = sb.plots.transformer.layer_diagram("llama3-70b")
    marked = [t.get_text() for t, _ in drawn_texts(fig) if t.get_text().startswith(MATMUL_MARK)]
    einsums = layer_einsums("llama3-70b")
    assert [m.split("\n")[0] for m in marked] == [f"{MATMUL_MARK} {name}" for name, *_ in einsums]
    assert len(marked) == 9 and sum(weight != "no weights" for *_, weight in einsums) == 7  # "seven of the nine"


def test_the_chapters_draw_figures_from_every_chapter_with_plots() -> None:
    calls = all_figure_calls()
    chapters = {p.values[0] for p in calls}
    assert len(calls) >= 120
    assert {"00_intro", "03_sharding", "05_training", "07_inference", "12_gpus", "13_validation"} <= chapters


def test_the_checks_fail_on_tiny_text_and_on_a_legend_over_data() -> None:
    from scalebook.plots.base import figure

    fig, ax = figure((6.0, 3.0))
    ax.plot([0, 1], [0, 1], label="data")
    ax.set_title("tiny", fontsize=5)
    assert smallest_text(fig) == (5.0, "tiny")
    for where, covered in ((dict(loc="center"), True), (dict(loc="upper left", bbox_to_anchor=(1.02, 1.0)), False)):
        fig, ax = figure((6.0, 3.0))
        ax.plot([0, 1], [0, 1], label="a line through the legend")
        ax.plot([0, 1], [1, 0], label="another")
        ax.legend(**where)
        assert bool(legend_overlaps(fig)) == covered, where


def test_a_wide_figure_is_shrunk_to_the_column_unless_tagged_full_width() -> None:
    from scalebook.plots.base import figure

    fig, ax = figure((15.2, 3.0))
    ax.set_title("wide", fontsize=12)
    shrunk, _ = smallest_text(fig)
    assert shrunk < 6.5  # about 12 pt × 7.6 / 15.4 in
    assert smallest_text(fig, full_width=True)[0] == pytest.approx(shrunk * 1.36, rel=1e-6)
