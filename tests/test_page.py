"""A clean page (issue #32): long tables capped with the rest folded, cells set apart, and progress bars that leave
one final line (never a frozen bar) in a saved or built notebook."""

import sys
import types

import scalebook as sb
from scalebook.bench import _progress


def test_a_long_table_shows_twenty_rows_and_folds_the_rest():
    long = sb.Table([{"n": i, "square": i * i} for i in range(307)], title="squares")
    page = long._repr_html_()
    shown, folded = page.split("<details", 1)
    assert shown.count("<tr>") == 1 + 20 and "<td>19</td>" in shown and "<td>20</td>" not in shown
    assert "Show the other 287 rows (of 307)" in folded and folded.count("<tr>") == 1 + 287
    assert "<details" not in sb.Table([{"n": i} for i in range(25)])._repr_html_()  # a little over: shown whole
    assert len(str(long).splitlines()) == 2 + 1 + 307  # plain text keeps every row


def test_table_cells_are_set_apart_in_html():
    page = sb.Table([{"what": "partial sums over X", "time": "210 µs"}])._repr_html_()
    assert "border-spacing:0.9em" in page.split(">", 1)[0]
    assert "<td>partial sums over X</td><td>210 µs</td>" in page


class _Handle:
    """Stands in for IPython's DisplayHandle: keeps every version of the one display."""

    def __init__(self, shown: list) -> None:
        self.shown = shown

    def update(self, obj) -> None:
        self.shown.append(obj.data)


def test_a_bar_in_a_notebook_kernel_ends_as_one_line(monkeypatch):
    shown: list[str] = []
    display = types.SimpleNamespace(HTML=lambda text: types.SimpleNamespace(data=text),
                                    display=lambda obj, display_id: (shown.append(obj.data), _Handle(shown))[1])
    kernel = types.SimpleNamespace(get_ipython=lambda: types.SimpleNamespace(kernel=object()))
    monkeypatch.setitem(sys.modules, "IPython", kernel)
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    assert list(_progress(range(3), 3, "decode steps", True)) == [0, 1, 2]
    assert "<progress value='0' max='3'>" in shown[0] and "<progress value='2' max='3'>" in shown[2]
    assert shown[-1] == "<small>decode steps: 3 of 3 done</small>"  # what a saved page keeps: no bar
    assert len(shown) == 5


def test_no_bar_when_asked_for_none_and_a_text_bar_outside_a_kernel(monkeypatch, capsys):
    items = range(2)
    assert _progress(items, 2, "calibrating", False) is items
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: None))
    assert list(_progress(items, 2, "calibrating", True)) == [0, 1]
    assert "calibrating" in capsys.readouterr().err
