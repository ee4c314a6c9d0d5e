"""Chapters 00–04 draw a counterpart of every figure of the book, from the package's own objects.

The count is read from the chapter sources: a code cell displays a figure when its last statement is a call of an
`sb.plots` function (nbval executes every such cell). Each function so called must be one that returns a matplotlib
`Figure`, and the diagrams themselves are checked below against the numbers they are drawn from.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest
from explorers import assert_answers_fast

import scalebook as sb
from scalebook.plots import chip as chip_plots
from scalebook.plots import collective_steps, transformer
from scalebook.rings import ring_schedule

ROOT = Path(__file__).resolve().parents[2]
# Figures per chapter in How To Scale Your Model (placements, shared/book-figures.md): 36 in chapters 00–04.
BOOK_FIGURES = {"00_intro": 3, "01_rooflines": 2, "02_tpus": 14, "03_sharding": 13, "04_transformers": 4}
_CELL = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)```", re.S)


def _plot_call(node: ast.AST) -> str | None:
    """Return 'name' (or 'module.name') when `node` is a call of sb.plots.name(...) or display(sb.plots...)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "display" and node.args:
        node = node.args[0]
    if not isinstance(node, ast.Call):
        return None
    parts = []
    target = node.func
    while isinstance(target, ast.Attribute):
        parts.append(target.attr)
        target = target.value
    if isinstance(target, ast.Name) and target.id == "sb" and parts[-1:] == ["plots"] and len(parts) >= 2:
        return ".".join(reversed(parts[:-1]))
    return None


def _python(line: str) -> str:
    """Return a line of a cell as Python: an IPython magic (%pip, !ls) becomes `pass` at the same indent."""
    code = line.lstrip()
    return line[: len(line) - len(code)] + "pass" if code.startswith(("%", "!")) else line


def figure_cells(chapter: str) -> list[str]:
    """Return the sb.plots function behind every code cell of a chapter that ends by drawing a figure."""
    return cell_figures((ROOT / "chapters" / f"{chapter}.md").read_text())


def cell_figures(text: str) -> list[str]:
    """Return the sb.plots function behind every code cell of `text` (MyST Markdown) that ends by drawing one."""
    names = []
    for body in _CELL.findall(text):
        tree = ast.parse("\n".join(_python(line) for line in body.splitlines() if not line.startswith(":")))
        if tree.body and isinstance(tree.body[-1], ast.Expr) and (name := _plot_call(tree.body[-1].value)):
            names.append(name)
    return names


def _resolve(name: str):
    obj = sb.plots
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("chapter", sorted(BOOK_FIGURES))
def test_chapter_draws_at_least_the_books_figures(chapter: str) -> None:
    names = figure_cells(chapter)
    assert len(names) >= BOOK_FIGURES[chapter], f"{chapter} draws {len(names)} figures: {names}"
    for name in set(names):
        fn = _resolve(name)
        assert inspect.signature(fn).return_annotation in ("Figure", "'Figure'"), f"sb.plots.{name} is not a figure"


def test_chapters_00_04_draw_36_or_more() -> None:
    assert sum(len(figure_cells(c)) for c in BOOK_FIGURES) >= 36


def test_figure_cells_reads_only_final_plot_calls() -> None:
    fig_cell = "```{code-cell} ipython3\nx = 1\nsb.plots.tpu.torus(m)\n```"
    hidden = "```{code-cell} ipython3\nf = sb.plots.tpu.torus(m)\n```"
    calls = ("sb.plots.tpu.torus(m)", "display(sb.plots.chip.tray())")
    assert [_plot_call(ast.parse(c).body[-1].value) for c in calls] == ["tpu.torus", "chip.tray"]
    assert len(_CELL.findall(fig_cell + "\n" + hidden)) == 2
    assert cell_figures(fig_cell + "\n" + hidden) == ["tpu.torus"]  # an assignment displays nothing


# --- the diagrams follow their inputs -------------------------------------------------------------------------


_RING = sb.overlap.collective_matmul("A[I_X, J_Y] @ B[J, K_Y] -> C[I_X, K_Y]", sb.TpuMesh("v5e", X=2, Y=4), I=1024,
                                     J=2048, K=8192)


@pytest.mark.parametrize("expr, K", [("A[I_X, J_Y] @ B[J, K_Y] -> C[I_X, K_Y]", 8192),
                                     ("A[I_X, J_Y] @ B[J, K_Y] -> C[I_X, K_Y]", 32768),
                                     ("A[I, J_X] @ B[J_X, K] -> C[I_X, K]", 4096)])
def test_overlap_timeline_draws_the_ring_it_prices(expr: str, K: int) -> None:
    """The figure's bars are the ring's schedule: its last bar ends at the ring's time, which lies between the
    plan's bound and its sequential time; the sequential rows add up to T_comms + T_math."""
    mesh = sb.TpuMesh("v5e", X=4, Y=2) if "J_X" in expr else sb.TpuMesh("v5e", X=2, Y=4)
    ring = sb.overlap.collective_matmul(expr, mesh, I=1024, J=2048, K=K)
    fig = collective_steps.overlap_timeline(ring)
    bars = [(b.get_y() + b.get_height() / 2, b.get_x(), b.get_x() + b.get_width()) for b in fig.axes[0].patches]
    ring_bars = sorted((x0 / 1e6, x1 / 1e6) for y, x0, x1 in bars if y < 1.5)
    drawn = [t for pair in ring_bars for t in pair]
    assert drawn == pytest.approx([t for _, _, s, e in sorted(ring.schedule(), key=lambda r: r[2:]) for t in (s, e)],
                                  rel=1e-9, abs=1e-15)
    assert max(e for _, e in ring_bars) == pytest.approx(ring.time, rel=1e-9)
    assert max(x1 for y, _, x1 in bars if y > 1.5) / 1e6 == pytest.approx(ring.sequential, rel=1e-9)
    assert ring.bound <= ring.time + 1e-15 <= ring.sequential + 2e-15
    assert len(bars) == 2 * (2 * ring.steps - 1)


def test_overlap_explorer_answers_fast_and_opens_on_the_worked_answer() -> None:
    def overlap():
        return sb.widgets.explore(sb.widgets.sharding.overlap_view, I=sb.widgets.Log(256, 65536, 1024),
                                  J=sb.widgets.Log(512, 65536, 2048), K=sb.widgets.Log(1024, 262144, 8192),
                                  Y=[4, 2, 8, 16], chip=["v5e", "v5p", "v6e"])

    chart, ring = sb.widgets.sharding.overlap_view()
    assert ring.time == pytest.approx(_RING.time) and chart.title.startswith("A[I_X, J_Y]")
    assert isinstance(sb.widgets.sharding.overlap_view(I=65536, K=1024), sb.ShardedMatmul)  # another plan wins: shown
    assert_answers_fast(overlap, {"K": 32768, "Y": 8}, limit=0.1)


def test_matmul_flops_panels_use_the_counting_rule() -> None:
    assert sb.roofline.einsum_flops("NP,PM->NM", {"N": 3, "P": 4, "M": 2}) == 48  # 2NPM, the last panel


@pytest.mark.parametrize("make", [
    lambda: chip_plots.chip_diagram("v5p"), lambda: chip_plots.memory_hierarchy("v5e"), lambda: chip_plots.tray("v5e"),
    lambda: chip_plots.hosts(sb.TpuMesh("v5e", X=8, Y=4)),
    lambda: chip_plots.pod_cubes(sb.TpuMesh("v5p", X=4, Y=8, Z=4)),
    lambda: chip_plots.slices(sb.TpuMesh("v5p", X=4, Y=4, Z=4), [((0, 0, 0), (4, 4, 4))]),
    lambda: chip_plots.elementwise_pipeline(2), lambda: chip_plots.mxu_pipeline(2, B=8, size=4), chip_plots.banner,
    lambda: sb.plots.tpu.systolic_strip(2, 2, 2, steps=[0, 1]),
    lambda: sb.plots.array_layouts.sharding_gallery(["A[I_X, J]"], key=True),
    lambda: collective_steps.torus_steps(2, 2, "reduce_scatter"), lambda: collective_steps.collectives_summary(4),
    lambda: collective_steps.collective_matmul(3), lambda: transformer.layer_diagram("llama3-8b"),
    lambda: collective_steps.overlap_timeline(_RING),
    lambda: transformer.moe_diagram("deepseek-v3", shown=4), lambda: transformer.flash_tiles(4, 4, 2, causal=False),
    lambda: transformer.matmul_flops(2, 2, 2),
    lambda: sb.plots.array_layouts.matmul_cases(["A[I, J_X] @ B[J_X, K] -> C[I, K]"], sb.TpuMesh("v5e", X=2, Y=2),
                                           {"I": 256, "J": 512, "K": 256}),
])
def test_every_diagram_is_a_titled_figure(make) -> None:
    fig = make()
    titles = [fig._suptitle.get_text()] if fig._suptitle else []
    titles += [ax.get_title() for ax in fig.axes]
    assert any(t.strip() for t in titles)


@pytest.mark.parametrize("call, match", [
    (lambda: chip_plots.chip_diagram("h100"), "not a TPU"),
    (lambda: chip_plots.hosts(sb.TpuMesh("v5e", X=4, Y=16)), "rows of trays"),
    (lambda: chip_plots.slices(sb.TpuMesh("v5e", X=4, Y=4), [((2, 2), (4, 4))]), "does not fit"),
    (lambda: chip_plots.pod_cubes(sb.TpuMesh("v5p", X=2, Y=4, Z=4)), "whole"),
    (lambda: collective_steps.torus_steps(4, 4, "all_scatter"), "kind"),
    (lambda: transformer.moe_diagram("llama3-70b"), "not a mixture"),
    (lambda: transformer.flash_tiles(8, 8, 3), "block"),
    (lambda: sb.plots.array_layouts.sharding_gallery(["A[I_XY, J]"], {"X": 3, "Y": 1}), "multiple"),
    (lambda: sb.plots.tpu.systolic_strip(2, 2, 2, steps=[9]), "step"),
])
def test_diagrams_refuse_bad_input(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_pipeline_and_vpu_explorers_answer_fast() -> None:
    def pipeline():
        return sb.widgets.explore(lambda n_chunks, step: sb.hardware.sm.pipeline_stages(n_chunks, step),
                                  n_chunks=(1, 8, 1, 4), step=(0, 11, 1, 4))

    def vpu():
        return sb.widgets.explore(lambda chip: sb.hardware.sm.vpu_flops_per_core(chip), chip=["v5p", "v5e"])

    assert_answers_fast(pipeline, {"step": 6})
    assert_answers_fast(vpu, {"chip": "v5e"})


_WORKED = re.compile(r"^#{2,3} (?:Q\d+\.|Pop quiz|Appendix 2\.A)", re.M)


def worked_sections(chapter: str) -> dict[str, str]:
    """Return {heading: body} for every worked problem (and pop quiz) of a chapter, body up to the next heading."""
    text = (ROOT / "chapters" / f"{chapter}.md").read_text()
    parts = re.split(r"^(#{2,3} .*)$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2) if _WORKED.match(parts[i])}


@pytest.mark.parametrize("chapter", ["01_rooflines", "02_tpus", "03_sharding", "04_transformers"])
def test_every_worked_problem_has_an_explorer(chapter: str) -> None:
    sections = worked_sections(chapter)
    assert len(sections) >= 5
    missing = [h for h, body in sections.items() if "sb.widgets." not in body]
    assert not missing, f"{chapter}: no explorer under {missing}"


@pytest.mark.parametrize("n", [4, 8, 16])
def test_ring_drawings_follow_the_priced_schedule(n: int) -> None:
    """The drawn ring has as many steps as the pricing counts hops, and its busiest link sets the priced time."""
    from scalebook.rings import busiest_link_share

    for wrap in (True, False):
        mesh = sb.TpuMesh("v5e", X=n, Y=16 if n != 16 else 4, wrap={"X": wrap})
        assert len(ring_schedule(n, "all_gather", wrap=wrap)) - 1 == mesh.ring_hops("X")
    ring = sb.TpuMesh("v5e", X=n, Y=4, wrap={"X": True})
    assert len(ring_schedule(n, "all_reduce")) - 1 == 2 * ring.ring_hops("X")  # AllReduce: twice the hops
    V = 1e9
    assert sb.all_gather(ring, "X", V).t_comms == pytest.approx(busiest_link_share(n) * V / ring.chip.ici_bandwidth)


def test_log_sliders_read_out_in_si_units() -> None:
    ex = sb.widgets.explore(lambda B: B, B=sb.widgets.Log(1, 1e6, 4096))
    assert ex.controls["B"].readout_format == ".3s"  # shows 4.10k, not 4.10e+3


def _texts(fig: object) -> str:
    """Return every text drawn on `fig`, one per line."""
    return "\n".join(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")))


def test_tpu_chip_diagram_labels_carry_the_chips_numbers() -> None:
    v5p = sb.get_chip("v5p")  # 2.8e12 B/s HBM, 96 GB, 6 ICI links of 9e10 B/s one way (book's ch. 2 table)
    text = _texts(chip_plots.chip_diagram("v5p"))
    assert "2.8 TB/s" in text and "6 ICI links × 90 GB/s" in text and "= 540 GB/s out" in text
    assert text.count("MXU\n128×128") == 2 * 4 and "ICI 5" in text and "ICI 6" not in text
    assert sb.units.fmt_bytes(v5p.hbm_bytes) in text and "shared by\n2 cores" in text
    assert "1 TensorCore" in _texts(chip_plots.chip_diagram("v5e")) and "820 GB/s" in _texts(
        chip_plots.chip_diagram("v5e"))


def test_tpu_tray_shows_the_hosts_chips_and_link_rates() -> None:
    text = _texts(chip_plots.tray("v5p"))
    assert "4 chips" in text and "chip (1,1)" in text and "chip (2,0)" not in text
    assert "PCIe 16 GB/s per chip" in text and "6.25 GB/s" in text and "6 ICI links, 90 GB/s one way" in text
    fig = chip_plots.tray("v6e")  # 8 chips, PCIe 3.2e10 B/s per chip
    assert "8 chips" in _texts(fig) and "PCIe 32 GB/s per chip" in _texts(fig)
    assert "tray 1" in _texts(fig) and "tray 1" not in text  # 8 chips: two trays of four; v5p's 4: one


def test_tray_dashes_the_ici_links_that_leave_the_tray() -> None:
    from matplotlib.text import Annotation

    dashed = [a for a in chip_plots.tray("v5p").axes[0].texts if isinstance(a, Annotation)
              and a.arrow_patch.get_linestyle() == "--"]
    assert len(dashed) == 4 * (6 - 2)  # a 2 x 2 tray: each chip has 2 neighbours on it, so 4 of its 6 links leave
