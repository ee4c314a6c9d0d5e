"""A notebook shows the package's figures as SVG, not PNG (issue #40: vector on the site, in JupyterLab and Colab, and
in print): a real Jupyter kernel, the one myst-nb and JupyterLab run, displays a figure returned by a cell, and the
output carries `image/svg+xml` and no raster image. With matplotlib's inline default (what the figures were until
then) the same cell gives `image/png`, which the first case shows, so the check can fail.
"""

from __future__ import annotations

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

RASTER = {"image/png", "image/jpeg", "image/gif", "image/webp"}


def _mimetypes(*cells: str) -> list[set[str]]:
    """The mimetypes of each display output of `cells`, run in order in a fresh python3 kernel."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    return [set(o.get("data", {})) for c in nb.cells for o in c.outputs if o.output_type in ("execute_result",
                                                                                               "display_data")]


@pytest.mark.slow
def test_a_figure_of_plain_matplotlib_shows_as_png():
    shown = _mimetypes("import matplotlib.pyplot as plt\nfig, ax = plt.subplots(); plt.close(fig); fig")
    assert shown and "image/png" in shown[0] and "image/svg+xml" not in shown[0]


@pytest.mark.slow
def test_the_package_figures_show_as_svg_from_the_first_one_on():
    shown = _mimetypes("import scalebook as sb\nsb.plots.experts.moe_layer()", "sb.plots.chip.banner()")
    assert len(shown) == 2 and all("image/svg+xml" in s and not s & RASTER for s in shown), shown
