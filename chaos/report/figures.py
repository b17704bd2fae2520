"""The plot files of a run: what they are called and how the page embeds them.

Kept free of matplotlib so that building the page (and ``chaos --help``) does not pay for
importing it; only the code that draws (``plots.py``) does.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

# name (file stem) → caption, in page order
PLOTS = (
    ("latency-raw", "Latency, raw"),
    ("latency-quantiles", "Latency, quantiles"),
    ("throughput", "Throughput"),
)


@dataclass(frozen=True, slots=True)
class Plot:
    name: str
    title: str
    png: bytes
    png_path: Path
    svg_path: Path

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")
