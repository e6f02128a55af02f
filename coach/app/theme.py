"""One look for every page and plot: the palette, the plotly template, and category colours.

The CSS in ``assets/coach.css`` uses the same palette through CSS variables; plots get it through
the ``coach`` plotly template, registered once and named in every figure the app builds.
"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

FONT = "Inter, system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"
MONO = "'JetBrains Mono', 'SFMono-Regular', Menlo, Consolas, monospace"

INK = "#1f2937"
MUTED = "#6b7280"
GRID = "#e5e7eb"
PAPER = "#ffffff"
ACCENT = "#4f46e5"  # indigo: the app's one strong colour
GOOD = "#059669"
BAD = "#dc2626"
WARN = "#d97706"

#: Distinct, colour-blind-safe series colours (Okabe-Ito, reordered so the first two contrast).
SERIES = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")

#: Timeline categories, fixed so a kernel is the same colour on every page.
CATEGORY_COLOURS = {
    "kernel": "#0072B2",
    "memcpy": "#E69F00",
    "memset": "#CC79A7",
    "sync": "#D55E00",
    "api": "#56B4E9",
    "nvtx": "#009E73",
}

TEMPLATE = "coach-dash"  # coach.analyze.roofline_plot registers "coach" for its own figures


def _template() -> go.layout.Template:
    axis = dict(gridcolor=GRID, zerolinecolor=GRID, linecolor="#d1d5db", ticks="outside", tickcolor="#d1d5db",
                title=dict(font=dict(size=13, color=INK)), automargin=True)
    return go.layout.Template(layout=go.Layout(
        font=dict(family=FONT, size=13, color=INK),
        paper_bgcolor=PAPER,
        plot_bgcolor=PAPER,
        colorway=list(SERIES),
        xaxis=axis,
        yaxis=axis,
        margin=dict(l=64, r=24, t=48, b=56),
        hoverlabel=dict(font=dict(family=FONT, size=12), bgcolor="white"),
        legend=dict(bgcolor="rgba(255,255,255,0.8)", bordercolor=GRID, borderwidth=1),
        title=dict(font=dict(size=15), x=0.01, xanchor="left"),
    ))


pio.templates[TEMPLATE] = _template()


def fit(fig: go.Figure, height: int | None = None) -> go.Figure:
    """Let a figure built elsewhere (coach.analyze draws for files of a fixed size) fill its card."""
    fig.update_layout(width=None, autosize=True, **({"height": height} if height else {}))
    return fig
