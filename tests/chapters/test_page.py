"""A clean page (issue #32): long tables capped with the rest folded, cells set apart, progress bars that leave one
final line (never a frozen bar) in a saved or built notebook, and every worked answer's checks, explorer and
discussion folded behind a dropdown."""

import re
import sys
import types
from pathlib import Path

import scalebook as sb
from scalebook.lab.bench import progress_bar


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
    assert list(progress_bar(range(3), 3, "decode steps", True)) == [0, 1, 2]
    assert "<progress value='0' max='3'>" in shown[0] and "<progress value='2' max='3'>" in shown[2]
    assert shown[-1] == "<small>decode steps: 3 of 3 done</small>"  # what a saved page keeps: no bar
    assert len(shown) == 5


def test_no_bar_when_asked_for_none_and_a_text_bar_outside_a_kernel(monkeypatch, capsys):
    items = range(2)
    assert progress_bar(items, 2, "calibrating", False) is items
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: None))
    assert list(progress_bar(items, 2, "calibrating", True)) == [0, 1]
    assert "calibrating" in capsys.readouterr().err


def test_the_validation_table_names_the_ideal_model_once():
    assert sb.validation.table("ideal").title.startswith("published runs: measured vs the ideal bound (status:")
    assert "measured vs the ideal bound vs the calibrated model (" in sb.validation.table().title


ROOT = Path(__file__).resolve().parents[2]
ANSWER = re.compile(r'^<details class="fold"><summary>(Worked answer|Answer|Our answer)</summary>$', re.M)
MORE = '<details class="fold"><summary>More on this answer</summary>'


def _after_answers(text: str) -> list[tuple[int, str, str]]:
    """(line, 'cell' or 'prose', first line or tags) for what follows each answer dropdown, up to the next question,
    heading or answer, or through the first explorer; prose inside a 'More on this answer' dropdown is skipped."""
    lines, found, i = text.split("\n"), [], 0
    while i < len(lines):
        if not ANSWER.match(lines[i]):
            i += 1
            continue
        i = lines.index("</details>", i) + 1
        while i < len(lines) and not lines[i].startswith(("#", "**Question")) and not ANSWER.match(lines[i]):
            if lines[i].startswith("```{code-cell}"):
                end = next(k for k in range(i + 1, len(lines)) if lines[k].startswith("```"))
                found.append((i + 1, "cell", lines[i + 1]))
                if any("explore" in line or "widgets." in line for line in lines[i + 1:end]):
                    break
                i = end
            elif lines[i] == MORE:
                i = lines.index("</details>", i + 1)
            elif lines[i].strip():
                found.append((i + 1, "prose", lines[i]))
            i += 1
        if found and found[-1][1] == "prose" and i < len(lines) and ANSWER.match(lines[i]):
            while found and found[-1][1] == "prose":  # the next answer's question
                found.pop()
    return found


def test_every_answer_keeps_its_checks_explorer_and_discussion_folded():
    chapters = sorted((ROOT / "chapters").glob("*.md"))
    answers = sum(len(ANSWER.findall(md.read_text(encoding="utf-8"))) for md in chapters)
    assert answers >= 103
    open_ = [f"{md.name}:{line}: {what} {first[:60]}" for md in chapters
             for line, what, first in _after_answers(md.read_text(encoding="utf-8"))
             if what == "prose" or "hide-cell" not in first]
    assert not open_, "\n".join(open_)


def test_the_fold_check_sees_an_open_answer():
    open_page = "Q\n\n<details class=\"fold\"><summary>Worked answer</summary>\n\n42\n\n</details>\n\n" \
                "```{code-cell} ipython3\n" \
                "sb.expect(answer, 42)\n```\n\nThe explorer opens on 42.\n"
    assert [what for _, what, _ in _after_answers(open_page)] == ["cell", "prose"]
    folded = open_page.replace("```{code-cell} ipython3\n", "```{code-cell} ipython3\n:tags: [hide-cell]\n\n")
    folded = folded.replace("The explorer opens on 42.\n",
                            f"{MORE}\n\nThe explorer opens on 42.\n\n</details>\n")
    assert [first for _, _, first in _after_answers(folded)] == [":tags: [hide-cell]"]
