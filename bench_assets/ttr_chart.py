"""The Kaplan–Meier curves of time-to-retrievability as one SVG picture (matplotlib, Agg canvas).

Built with matplotlib's object API on an Agg canvas (no pyplot, no display, no global state),
written with a fixed hash salt and no date so the same figures give the same bytes.
"""

from __future__ import annotations

import io

from bench_assets.metrics import DEFAULT_CENSOR_AT_HOURS
from bench_assets.ttr import TTRFigure

X_TICKS = (0, 24, 72, 168, 336, 504, 720)


def _label(fig: TTRFigure) -> str:
    median = "not reached" if fig.median_hours is None else f"{fig.median_hours:g} h"
    return f"{fig.vendor}: {median} ({fig.found}/{fig.sentinels} found)"


def _steps(fig: TTRFigure, horizon: float) -> tuple[list[float], list[float]]:
    xs, ys = [0.0], [1.0]
    if fig.curve is not None:
        for t, s in zip(fig.curve.times, fig.curve.survival):
            xs.append(t)
            ys.append(s)
    follow_up = min(max(fig.durations, default=0.0), horizon)
    xs.append(max(follow_up, xs[-1]))
    ys.append(ys[-1])
    return xs, ys


def _survival_at(xs: list[float], ys: list[float], t: float) -> float:
    level = ys[0]
    for x, y in zip(xs, ys):
        if x <= t:
            level = y
    return level


def km_chart_svg(figures: dict[str, TTRFigure], title: str,
                 horizon_hours: float = DEFAULT_CENSOR_AT_HOURS) -> str:
    """One step curve per vendor (share of sentinel pages not yet returned against hours since
    publication), censored pages marked with a tick, the median level dashed. Returns SVG text."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    vendors = [f for _, f in sorted(figures.items()) if f.sentinels]
    with matplotlib.rc_context({"svg.hashsalt": "bench-ttr", "svg.fonttype": "none", "font.size": 9}):
        figure = Figure(figsize=(9.0, 5.0), layout="constrained")
        FigureCanvasAgg(figure)
        ax = figure.add_subplot()
        colors = matplotlib.colormaps["tab20"].colors
        for i, fig in enumerate(vendors):
            xs, ys = _steps(fig, horizon_hours)
            color = colors[(2 * i) % 20 if i < 10 else (2 * (i - 10) + 1) % 20]
            ax.step(xs, ys, where="post", color=color, linewidth=1.6, linestyle="-" if i < 10 else "--",
                    label=_label(fig))
            censored = [min(d, horizon_hours) for d, o in zip(fig.durations, fig.observed) if not o]
            if censored:
                ax.plot(censored, [_survival_at(xs, ys, t) for t in censored], linestyle="none", marker="|",
                        markersize=8, color=color)
        ax.axhline(0.5, color="0.4", linewidth=0.8, linestyle=":")
        ax.set_xlim(0, horizon_hours)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xticks(list(X_TICKS))
        ax.set_xlabel("hours since publication (probes every 6 h; censored at 720 h = 30 days)")
        ax.set_ylabel("share of sentinel pages not yet returned")
        ax.set_title(title)
        ax.grid(True, linewidth=0.3, alpha=0.6)
        if vendors:
            ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False,
                      title="vendor: KM median (found/sentinels)")
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()
