"""Interactive explorers on core ipywidgets (loaded only when used). One module per topic; `core` holds
`explore`, the `Explorer` every topic builds on, and the roofline explorer."""

from __future__ import annotations

from .core import Explorer, Log, explore, roofline_chart, roofline_explorer

__all__ = ["Log", "Explorer", "explore", "roofline_chart", "roofline_explorer"]
