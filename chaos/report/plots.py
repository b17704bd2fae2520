"""Latency and throughput plots (matplotlib, Agg), each with the fault bands behind the data.

Figures are built with the object API, never pyplot: ``chaos serve`` renders from several threads
and pyplot's global state is not thread-safe. Scatter points are rasterised inside the SVG so a
100k-op run gives a small file rather than one path per point.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import LogFormatter

from chaos.report.clientops import ClientOp
from chaos.report.faults import FaultBand
from chaos.report.figures import PLOTS, Plot

TYPE_COLOURS = {"ok": "#3a9d3a", "fail": "#d62728", "info": "#ff9f1c"}
MARKERS = ("o", "s", "^", "D", "v", "P", "X")


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


def _log_y(ax: Axes) -> None:
    """A log y axis labelled in plain numbers: matplotlib's ``9x10^3`` minor labels are wider
    than the fixed left margin and pushed the axis title off the figure."""
    ax.set_yscale("log")
    # LogFormatter keeps the default's thinning of minor labels (only on short ranges)
    ax.yaxis.set_major_formatter(LogFormatter(labelOnlyBase=False))
    ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4)))


def _figure() -> tuple[Figure, Axes]:
    # A fixed layout: constrained layout re-measures every text on every save.
    fig = Figure(figsize=(10, 3.6), dpi=100)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.09, right=0.8, top=0.9, bottom=0.14)
    return fig, fig.add_subplot()


def _save(fig: Figure, out: Path, name: str, title: str) -> Plot:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    png = buf.getvalue()
    png_path, svg_path = out / f"{name}.png", out / f"{name}.svg"
    png_path.write_bytes(png)
    fig.savefig(svg_path, format="svg")
    return Plot(name, title, png, png_path, svg_path)


TITLES = dict(PLOTS)


@dataclass(frozen=True, slots=True)
class _Columns:
    """The ops as numpy columns, built once: three plots filter them many ways."""

    fs: list[str]
    f: np.ndarray
    type: np.ndarray  # index into TYPES
    start: np.ndarray
    end: np.ndarray
    completed: np.ndarray

    @staticmethod
    def of(ops: list[ClientOp]) -> _Columns:
        fs = sorted({o.f for o in ops})
        f_of = {f: i for i, f in enumerate(fs)}
        t_of = {t: i for i, t in enumerate(TYPES)}
        n = len(ops)
        return _Columns(
            fs=fs,
            f=np.fromiter((f_of[o.f] for o in ops), np.int32, n),
            type=np.fromiter((t_of.get(o.type, 2) for o in ops), np.int32, n),
            start=np.fromiter((o.start for o in ops), float, n),
            end=np.fromiter((o.end for o in ops), float, n),
            completed=np.fromiter((o.completed for o in ops), bool, n),
        )


TYPES = tuple(TYPE_COLOURS)


def latency_raw(cols: _Columns, bands: list[FaultBand], out: Path) -> Plot:
    fig, ax = _figure()
    faults = _bands(ax, bands)
    data: list[Artist] = []
    size = 14 if len(cols.start) < 2_000 else 4  # few ops: make each one visible
    lat = np.maximum(cols.end - cols.start, 1e-6) * 1000
    for fi, f in enumerate(cols.fs):
        for ti, (ty, colour) in enumerate(TYPE_COLOURS.items()):
            sel = (cols.f == fi) & (cols.type == ti) & cols.completed
            if not sel.any():
                continue
            h = ax.scatter(
                cols.start[sel],
                lat[sel],
                s=size,
                c=colour,
                marker=MARKERS[fi % len(MARKERS)],
                alpha=0.6,
                linewidths=0,
                rasterized=True,
                label=f"{f} {ty}",
            )
            data.append(h)
    _log_y(ax)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("latency (ms)")
    ax.set_title("Latency of every completed op (invoke time → completion)")
    _legend(ax, [*data, *faults])
    return _save(fig, out, "latency-raw", TITLES["latency-raw"])


def _windows(cols: _Columns, end: float) -> tuple[np.ndarray, float]:
    span = max(end, float(cols.end.max()) if len(cols.end) else 0.0, 1e-3)
    n = int(min(120, max(10, len(cols.end) // 50)))
    return np.linspace(0.0, span, n + 1), span / n


def latency_quantiles(cols: _Columns, bands: list[FaultBand], out: Path, end: float) -> Plot:
    fig, ax = _figure()
    faults = _bands(ax, bands)
    data: list[Artist] = []
    ok = cols.completed & (cols.type == 0)
    if ok.any():
        edges, width = _windows(cols, end)
        t = cols.start[ok]
        lat = (cols.end[ok] - t) * 1000
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
        _log_y(ax)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("latency (ms)")
    ax.set_title("Latency quantiles of ok ops per time window")
    _legend(ax, [*data, *faults])
    return _save(fig, out, "latency-quantiles", TITLES["latency-quantiles"])


def throughput(cols: _Columns, bands: list[FaultBand], out: Path, end: float) -> Plot:
    fig, ax = _figure()
    faults = _bands(ax, bands)
    data: list[Artist] = []
    if cols.completed.any():
        edges, width = _windows(cols, end)
        styles = ("-", "--", ":", "-.")
        for fi, f in enumerate(cols.fs):
            for ti, (ty, colour) in enumerate(TYPE_COLOURS.items()):
                sel = (cols.f == fi) & (cols.type == ti) & cols.completed
                if not sel.any():
                    continue
                counts, _ = np.histogram(cols.end[sel], bins=edges)
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
    return _save(fig, out, "throughput", TITLES["throughput"])


def make_plots(ops: list[ClientOp], bands: list[FaultBand], out: Path, end: float) -> list[Plot]:
    out.mkdir(parents=True, exist_ok=True)
    cols = _Columns.of(ops)
    return [
        latency_raw(cols, bands, out),
        latency_quantiles(cols, bands, out, end),
        throughput(cols, bands, out, end),
    ]
