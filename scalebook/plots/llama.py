"""Figure for chapter 6: a Hugging Face config's keys joined to the book's letters, read by `models.config_table`
(the same rows the chapter prints as a table)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..models import config_table
from .base import figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["llama_config"]


def llama_config(config: Mapping[str, Any], name: str = "") -> Figure:
    """Draw each `config.json` key (left) with an arrow to the letter of our notation it sets (right) and its
    value; keys the letters do not use are listed greyed out beneath."""
    rows = config_table(config, name).rows
    used = {r["config.json key"] for r in rows}
    unused = [k for k in config if k not in used]
    fig, ax = figure((8.5, 0.42 * (len(rows) + 2) + 1.2))
    for i, row in enumerate(rows):
        y = len(rows) - i
        ax.text(0.0, y, row["config.json key"], ha="left", va="center", fontsize=9, family="monospace",
                bbox=dict(boxstyle="round", fc="#dbe7f3", ec="#4e79a7"))
        ax.annotate("", xy=(0.62, y), xytext=(0.47, y), arrowprops=dict(arrowstyle="->", color="#4e79a7"))
        value = row["value"]
        shown = f"{value:,}" if isinstance(value, int) else str(value)
        ax.text(0.64, y, f"{row['letter']} = {shown}", ha="left", va="center", fontsize=10, weight="bold")
        ax.text(0.84, y, row["meaning"], ha="left", va="center", fontsize=8, color="#444")
    ax.text(0.0, 0.0, "not used by the cost model: " + ", ".join(unused), fontsize=8, color="#888", va="center",
            wrap=True)
    ax.set_xlim(0, 1.25)
    ax.set_ylim(-0.6, len(rows) + 0.8)
    ax.axis("off")
    ax.set_title(f"{name or 'config.json'}: Hugging Face config keys → the book's letters", fontsize=10)
    return fig
