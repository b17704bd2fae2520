"""Latency and throughput plots (matplotlib, Agg), each with the fault bands behind the data.

Figures are built with the object API, never pyplot: ``chaos serve`` renders from several threads
and pyplot's global state is not thread-safe. Scatter points are rasterised inside the SVG so a
100k-op run gives a small file rather than one path per point.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from chaos.report.clientops import ClientOp
from chaos.report.faults import FaultBand

TYPE_COLOURS = {"ok": "#3a9d3a", "fail": "#d62728", "info": "#ff9f1c"}
MARKERS = ("o", "s", "^", "D", "v", "P", "X")


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


def _bands(ax: Axes, bands: list[FaultBand]) -> list[Patch]:
    seen: dict[str, Patch] = {}
    for b in bands:
        ax.axvspan(b.start, b.end, color=b.colour, alpha=0.3, lw=0, zorder=0)
        seen.setdefault(b.fault, Patch(color=b.colour, alpha=0.4, label=f"{b.fault} (fault)"))
    return list(seen.values())


def _legend(ax: Axes, handles: list[Artist]) -> None:
    if handles:
        # Outside the axes: over the data it would hide exactly the points a reader looks for.
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)


def _figure() -> tuple[Figure, Axes]:
    fig = Figure(figsize=(10, 3.6), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _save(fig: Figure, out: Path, name: str, title: str) -> Plot:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    png = buf.getvalue()
    png_path, svg_path = out / f"{name}.png", out / f"{name}.svg"
    png_path.write_bytes(png)
    fig.savefig(svg_path, format="svg")
    return Plot(name, title, png, png_path, svg_path)


def latency_raw(ops: list[ClientOp], bands: list[FaultBand], out: Path) -> Plot:
    fig, ax = _figure()
    faults = _bands(ax, bands)
    data: list[Artist] = []
    fs = sorted({o.f for o in ops})
    for fi, f in enumerate(fs):
        for ty, colour in TYPE_COLOURS.items():
            sel = [o for o in ops if o.f == f and o.type == ty and o.completed]
            if not sel:
                continue
            x = np.fromiter((o.start for o in sel), float, len(sel))
            y = np.fromiter((max(o.latency, 1e-6) * 1000 for o in sel), float, len(sel))
            h = ax.scatter(
                x,
                y,
                s=6,
                c=colour,
                marker=MARKERS[fi % len(MARKERS)],
                alpha=0.6,
                linewidths=0,
                rasterized=True,
                label=f"{f} {ty}",
            )
            data.append(h)
    ax.set_yscale("log")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("latency (ms)")
    ax.set_title("Latency of every completed op (invoke time → completion)")
    _legend(ax, [*data, *faults])
    return _save(fig, out, "latency-raw", "Latency, raw")


def _windows(ops: list[ClientOp], end: float) -> tuple[np.ndarray, float]:
    span = max(end, max((o.end for o in ops), default=0.0), 1e-3)
    n = int(min(120, max(10, len(ops) // 50)))
    return np.linspace(0.0, span, n + 1), span / n


def latency_quantiles(ops: list[ClientOp], bands: list[FaultBand], out: Path, end: float) -> Plot:
    fig, ax = _figure()
    faults = _bands(ax, bands)
    data: list[Artist] = []
    done = [o for o in ops if o.completed and o.type == "ok"]
    if done:
        edges, width = _windows(done, end)
        t = np.fromiter((o.start for o in done), float, len(done))
        lat = np.fromiter((o.latency * 1000 for o in done), float, len(done))
        idx = np.clip(np.digitize(t, edges) - 1, 0, len(edges) - 2)
        order = np.argsort(idx, kind="stable")
        idx, lat = idx[order], lat[order]
        bounds = np.searchsorted(idx, np.arange(len(edges)))
        mids, qs = [], []
        for w in range(len(edges) - 1):
            chunk = lat[bounds[w] : bounds[w + 1]]
            if len(chunk):
                mids.append(edges[w] + width / 2)
                qs.append(np.percentile(chunk, [50, 95, 99]))
        if qs:
            q = np.array(qs)
            for col, (name, colour) in enumerate(
                (("p50", "#1f77b4"), ("p95", "#ff7f0e"), ("p99", "#d62728"))
            ):
                (line,) = ax.plot(mids, q[:, col], color=colour, marker=".", label=name)
                data.append(line)
        ax.set_yscale("log")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("latency (ms)")
    ax.set_title("Latency quantiles of ok ops per time window")
    _legend(ax, [*data, *faults])
    return _save(fig, out, "latency-quantiles", "Latency, quantiles")


def throughput(ops: list[ClientOp], bands: list[FaultBand], out: Path, end: float) -> Plot:
    fig, ax = _figure()
    faults = _bands(ax, bands)
    data: list[Artist] = []
    done = [o for o in ops if o.completed]
    if done:
        edges, width = _windows(done, end)
        styles = ("-", "--", ":", "-.")
        for fi, f in enumerate(sorted({o.f for o in done})):
            for ty, colour in TYPE_COLOURS.items():
                t = np.fromiter((o.end for o in done if o.f == f and o.type == ty), float)
                if not len(t):
                    continue
                counts, _ = np.histogram(t, bins=edges)
                (line,) = ax.plot(
                    edges[:-1] + width / 2,
                    counts / width,
                    color=colour,
                    linestyle=styles[fi % len(styles)],
                    label=f"{f} {ty}",
                )
                data.append(line)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("completions / s")
    ax.set_title("Throughput by op and outcome")
    _legend(ax, [*data, *faults])
    return _save(fig, out, "throughput", "Throughput")


def make_plots(ops: list[ClientOp], bands: list[FaultBand], out: Path, end: float) -> list[Plot]:
    out.mkdir(parents=True, exist_ok=True)
    return [
        latency_raw(ops, bands, out),
        latency_quantiles(ops, bands, out, end),
        throughput(ops, bands, out, end),
    ]
