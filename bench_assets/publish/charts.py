"""The published pictures, drawn from the leaderboard record with matplotlib.

Every chart is a pure function of the record (and, for time-to-retrievability, of the sentinel
observations), so the pictures show the same numbers as the tables. A chart is headline-eligible
only when every figure it draws is (`aggregate.eligibility.figures_eligibility`, each figure by
its own n: the hit@k panels by each stratum's search rows); otherwise the picture itself says
"Illustrative" with the reasons, and so does its caption. Figures are built with the
object-oriented API (`matplotlib.figure.Figure`, no pyplot): no GUI backend, no global figure
state. SVG output is reproducible byte for byte: a fixed `svg.hashsalt` for element ids and no
creation date in the metadata. Text stays text (`svg.fonttype = none`), so it is searchable and
takes the page's font.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, NullFormatter, PercentFormatter
from matplotlib.typing import RcKeyType

from bench_assets.aggregate.eligibility import figures_eligibility
from bench_assets.aggregate.frontier import COST_METRIC
from bench_assets.metrics import DEFAULT_CENSOR_AT_HOURS, km_estimate

INK = "#1f2933"
MUTED = "#8a94a0"
GRID = "#e4e7eb"
ACCENT = "#1d4ed8"
WARN = "#b42318"
# Okabe–Ito (Okabe & Ito 2008, "Color Universal Design"): eight colours told apart by colour-blind
# readers. Beyond eight series the colours repeat with another line style and marker, so no two
# series look alike whatever the reader's colour vision.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
LINE_STYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D"]


def series_style(i: int) -> dict[str, Any]:
    """The i-th series' colour, line style and marker: unique for 32 series."""
    cycle = i // len(PALETTE)
    return {
        "color": PALETTE[i % len(PALETTE)],
        "linestyle": LINE_STYLES[cycle % len(LINE_STYLES)],
        "marker": MARKERS[cycle % len(MARKERS)],
    }


STYLE: dict[RcKeyType, Any] = {
    "svg.hashsalt": "bench",
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
    "font.size": 9,
    "axes.edgecolor": MUTED,
    "axes.labelcolor": INK,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.titlecolor": INK,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": GRID,
    "grid.linewidth": 0.8,
    "xtick.color": INK,
    "ytick.color": INK,
    "legend.frameon": False,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
}


@dataclass(frozen=True)
class Chart:
    """A chart of the site: its file stem, title, caption (alt text), builder, and whether every
    figure it draws is headline-eligible (with the reasons when not)."""

    name: str
    title: str
    caption: str
    build: Callable[[], Figure | None]
    headline_eligible: bool = False
    reasons: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return "headline" if self.headline_eligible else "illustrative"


def _short(reasons: Sequence[str], limit: int = 2) -> str:
    shown = "; ".join(reasons[:limit])
    return shown + (f"; and {len(reasons) - limit} more" if len(reasons) > limit else "")


def illustrative_note(reasons: Sequence[str]) -> str:
    """The label an illustrative chart carries, in the picture and in its caption."""
    return "Illustrative, not headline-eligible: " + (_short(reasons) or "no figure drawn")


def _stamp(fig: Figure, eligible: tuple[bool, list[str]]) -> Figure:
    """Write "Illustrative …" at the top of a chart whose figures are not all headline-eligible."""
    ok, reasons = eligible
    if not ok:
        with matplotlib.rc_context(STYLE):
            fig.suptitle(
                illustrative_note(reasons), x=0.01, ha="left", fontsize=7.5, fontweight="normal", color=WARN, wrap=True
            )
    return fig


def cost_accuracy_eligibility(board: Mapping[str, Any]) -> tuple[bool, list[str]]:
    return figures_eligibility(
        board,
        [
            (e["vendor"], m, None)
            for e in _scored(board)
            if _value(e, "cost_per_correct_usd") and _value(e, "correct_rate")
            for m in ("correct_rate", "cost_per_correct_usd")
        ],
    )


def overfit_gap_eligibility(board: Mapping[str, Any]) -> tuple[bool, list[str]]:
    return figures_eligibility(
        board, [(e["vendor"], "overfit_gap", None) for e in _scored(board) if _value(e, "overfit_gap")]
    )


def hit_at_k_eligibility(board: Mapping[str, Any]) -> tuple[bool, list[str]]:
    return figures_eligibility(
        board,
        [
            (e["vendor"], m, s)
            for e in _scored(board)
            for s in _strata(board)
            for m in ("hit_at_1", "hit_at_10")
            if _value_in(e, s, m)
        ],
    )


def pairwise_eligibility(board: Mapping[str, Any]) -> tuple[bool, list[str]]:
    rank = board.get("rank_metric") or "correct_rate"
    vendors = ((board.get("comparisons") or {}).get("vendors")) or []
    return figures_eligibility(board, [(v, rank, None) for v in vendors])


def ttr_eligibility(board: Mapping[str, Any] | None, vendors: Sequence[str]) -> tuple[bool, list[str]]:
    if board is None:
        return False, ["no leaderboard record to judge the curves by"]
    return figures_eligibility(board, [(v, "ttr_median_hours", None) for v in vendors])


def render(figure: Figure, fmt: str = "svg", dpi: int = 110) -> bytes:
    """The figure as SVG (reproducible) or PNG bytes."""
    buf = io.BytesIO()
    with matplotlib.rc_context(STYLE):
        if fmt == "svg":
            figure.savefig(buf, format="svg", metadata={"Date": None})
        else:
            figure.savefig(buf, format=fmt, dpi=dpi)
    return buf.getvalue()


def _scored(board: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Scored vendors in leaderboard order."""
    return [e for e in board["vendors"] if e.get("status") == "scored"]


def _value(entry: Mapping[str, Any], metric: str) -> dict[str, Any] | None:
    fig = (entry.get("metrics") or {}).get(metric)
    return fig if fig and fig.get("value") is not None else None


def _new_figure(width: float, height: float) -> Figure:
    with matplotlib.rc_context(STYLE):
        return Figure(figsize=(width, height), layout="constrained")


def pareto_front(points: Sequence[tuple[str, float, float]]) -> list[str]:
    """Names on the cost/accuracy Pareto front, cheapest first.

    ``points`` are ``(name, cost, accuracy)``; a point is on the front when no other point
    is at most as expensive and at least as accurate, and strictly better in one of the two.
    """
    front = []
    for name, cost, acc in points:
        dominated = any((c <= cost and a >= acc) and (c < cost or a > acc) for n, c, a in points if n != name)
        if not dominated:
            front.append((cost, -acc, name))
    return [name for _, _, name in sorted(front)]


def cost_accuracy_figure(board: Mapping[str, Any]) -> Figure | None:
    """Cost per correct answer (log scale) against correct rate with its 95 % interval; the
    Pareto front (nobody both cheaper and more accurate) is drawn and its vendors named in colour."""
    points = []
    for e in _scored(board):
        cost, acc = _value(e, "cost_per_correct_usd"), _value(e, "correct_rate")
        if cost and acc and cost["value"] > 0:
            points.append((e["vendor"], cost["value"], acc["value"], acc.get("low"), acc.get("high")))
    if not points:
        return None
    front = pareto_front([(n, c, a) for n, c, a, _, _ in points])
    with matplotlib.rc_context(STYLE):
        fig = _new_figure(7.2, 4.4)
        ax = fig.add_subplot()
        ax.set_xscale("log")
        # Fixed limits with room for the labels: with one vendor (or one cost) autoscaling a log
        # axis would collapse to a single point.
        costs = [p[1] for p in points]
        ax.set_xlim(min(costs) / 1.8, max(costs) * 1.8)
        ax.autoscale(enable=False, axis="x")
        by_name = {p[0]: p for p in points}
        fx = [by_name[n][1] for n in front]
        fy = [by_name[n][2] for n in front]
        ax.step(fx, fy, where="post", color=ACCENT, alpha=0.35, linewidth=2, zorder=1)
        for name, cost, acc, low, high in points:
            on_front = name in front
            color = ACCENT if on_front else MUTED
            if low is not None and high is not None:
                ax.errorbar(
                    [cost],
                    [acc],
                    yerr=[[acc - low], [high - acc]],
                    fmt="none",
                    ecolor=color,
                    elinewidth=1,
                    capsize=2.5,
                    alpha=0.8,
                    zorder=2,
                )
            ax.scatter([cost], [acc], s=36, color=color, edgecolor="white", linewidth=0.8, zorder=3)
        ax.set_ylim(
            *_padded(
                [p[3] if p[3] is not None else p[2] for p in points],
                [p[4] if p[4] is not None else p[2] for p in points],
            )
        )
        dollars = FuncFormatter(lambda x, _: f"${x:g}")
        ax.xaxis.set_major_formatter(dollars)
        # within about a decade there are few major ticks: label the minor ones too
        # (2, 3 and 5 of each decade only: the log scale crowds 6 to 9 into too little width to read)
        sparse = FuncFormatter(
            lambda x, _: f"${x:g}" if round(x / 10 ** math.floor(math.log10(x))) in (2, 3, 5) else ""
        )
        ax.xaxis.set_minor_formatter(sparse if max(costs) / min(costs) < 12 else NullFormatter())
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_xlabel("cost per correct answer (USD, billed on the pinned plan; log scale)")
        ax.set_ylabel("overall correct rate (every task type)")
        ax.legend(
            handles=[
                Line2D([], [], color=ACCENT, marker="o", linewidth=2, alpha=0.6, label="Pareto front"),
                Line2D([], [], color=MUTED, marker="o", linewidth=0, label="dominated"),
                Line2D([], [], color=MUTED, marker="|", linewidth=0, markersize=10, label="95 % interval"),
            ],
            loc="lower left",
            fontsize=8,
        )
        undefined = [e["vendor"] for e in _scored(board) if not _value(e, "cost_per_correct_usd")]
        if undefined:
            ax.set_title(
                "cost per correct undefined (zero correct): " + ", ".join(undefined),
                fontsize=8,
                fontweight="normal",
                loc="left",
                color=MUTED,
            )
        fig = _stamp(fig, cost_accuracy_eligibility(board))
        # last: once every tick, label, legend and stamp is in place the layout no longer moves
        _label_points(fig, ax, [(name, cost, acc, name in front) for name, cost, acc, _, _ in points])
    return fig


FRONTIER_COST = COST_METRIC  # $ per 1,000 correct on the ranking figure's own rows
# Okabe–Ito: the optimal configurations in blue, filled diamonds; the dominated in orange, hollow
# circles; told apart by shape as well as colour.
OPTIMAL_COLOUR, DOMINATED_COLOUR = PALETTE[0], PALETTE[4]


def frontier_eligibility(board: Mapping[str, Any]) -> tuple[bool, list[str]]:
    rank = board.get("rank_metric") or "correct_rate"
    return figures_eligibility(
        board,
        [
            (e["vendor"], m, None)
            for e in _scored(board)
            if _value(e, FRONTIER_COST) and _value(e, rank)
            for m in (rank, FRONTIER_COST)
        ],
    )


def _span(value: float, low: float | None, high: float | None) -> tuple[float, float] | None:
    """An error bar's lengths below and above the value (None: no interval to draw)."""
    if low is None or high is None:
        return None
    return max(0.0, value - low), max(0.0, high - value)


def frontier_figure(board: Mapping[str, Any]) -> Figure | None:
    """The ranking figure against $ per 1,000 correct (log scale), each configuration a point with
    its 95 % interval in both directions; the Pareto-optimal ones (each entry's `pareto_optimal`,
    `aggregate.frontier`) joined by a step line and marked. A free configuration (cost 0) cannot sit
    on a log axis and one without a cost (no correct answer) has no point: both are named above the
    plot."""
    rank = board.get("rank_metric") or "correct_rate"
    points = []
    free, undefined = [], []
    for e in _scored(board):
        cost, quality = _value(e, FRONTIER_COST), _value(e, rank)
        if not quality:
            continue
        if not cost:
            undefined.append(e["vendor"])
        elif cost["value"] <= 0:
            free.append(e["vendor"])
        else:
            points.append((e["vendor"], cost, quality, bool(e.get("pareto_optimal"))))
    if not points:
        return None
    with matplotlib.rc_context(STYLE):
        fig = _new_figure(7.2, 4.6)
        ax = fig.add_subplot()
        ax.set_xscale("log")
        lows = [c["low"] if c.get("low") else c["value"] for _, c, _, _ in points]
        highs = [c["high"] if c.get("high") else c["value"] for _, c, _, _ in points]
        # fixed limits holding every interval: autoscaling a log axis collapses with one point
        ax.set_xlim(min(lows) / 1.6, max(highs) * 1.6)
        ax.autoscale(enable=False, axis="x")
        front = sorted((c["value"], -q["value"], name) for name, c, q, on in points if on)
        by_name = {name: (c, q) for name, c, q, _ in points}
        if front:
            fx = [by_name[n][0]["value"] for _, _, n in front]
            fy = [by_name[n][1]["value"] for _, _, n in front]
            # the best reachable at each budget: flat until the next optimal configuration
            ax.step(
                [*fx, ax.get_xlim()[1]],
                [*fy, fy[-1]],
                where="post",
                color=OPTIMAL_COLOUR,
                alpha=0.45,
                linewidth=2,
                zorder=1,
            )
        for _, cost, quality, on in points:
            colour = OPTIMAL_COLOUR if on else DOMINATED_COLOUR
            xerr = _span(cost["value"], cost.get("low"), cost.get("high"))
            yerr = _span(quality["value"], quality.get("low"), quality.get("high"))
            ax.errorbar(
                [cost["value"]],
                [quality["value"]],
                xerr=[[xerr[0]], [xerr[1]]] if xerr else None,
                yerr=[[yerr[0]], [yerr[1]]] if yerr else None,
                fmt="none",
                ecolor=colour,
                elinewidth=1,
                capsize=2.5,
                alpha=0.7,
                zorder=2,
            )
            ax.scatter(
                [cost["value"]],
                [quality["value"]],
                s=44 if on else 34,
                marker="D" if on else "o",
                facecolor=colour if on else "white",
                edgecolor=colour,
                linewidth=1.4,
                zorder=3,
            )
        ax.set_ylim(
            *_padded(
                [q["low"] if q.get("low") is not None else q["value"] for _, _, q, _ in points],
                [q["high"] if q.get("high") is not None else q["value"] for _, _, q, _ in points],
            )
        )
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"${x:,g}"))
        sparse = FuncFormatter(lambda x, _: f"${x:,g}" if round(x / 10 ** math.floor(math.log10(x))) in (2, 5) else "")
        span = ax.get_xlim()[1] / ax.get_xlim()[0]
        ax.xaxis.set_minor_formatter(sparse if span < 30 else NullFormatter())
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_xlabel("$ per 1,000 correct answers, shared rows (billed on the pinned plan; log scale)")
        ax.set_ylabel("ranking figure (correct rate, shared rows)" if rank == "correct_rate_shared" else rank)
        ax.legend(
            handles=[
                Line2D([], [], color=OPTIMAL_COLOUR, marker="D", linewidth=2, alpha=0.8, label="Pareto-optimal"),
                Line2D(
                    [], [], color=DOMINATED_COLOUR, marker="o", markerfacecolor="white", linewidth=0, label="dominated"
                ),
                Line2D([], [], color=INK, marker="+", linewidth=0, markersize=10, label="95 % intervals"),
            ],
            loc="lower right",
            fontsize=8,
        )
        notes = []
        if free:
            notes.append("free (cost 0, off the log axis): " + ", ".join(free))
        if undefined:
            notes.append("no cost (zero correct): " + ", ".join(undefined))
        if notes:
            ax.set_title("; ".join(notes), fontsize=8, fontweight="normal", loc="left", color=MUTED)
        fig = _stamp(fig, frontier_eligibility(board))
        _label_points(fig, ax, [(name, c["value"], q["value"], on) for name, c, q, on in points])
    return fig


def _padded(lows: Sequence[float], highs: Sequence[float]) -> tuple[float, float]:
    """Y limits of a rate axis holding every interval, with room above for labels, within [0, 1.05]."""
    low, high = min(lows), max(highs)
    pad = max(0.04, (high - low) * 0.12)
    return max(0.0, low - pad), min(1.05, high + pad)


def _label_points(fig: Figure, ax: Any, points: Sequence[tuple[str, float, float, bool]]) -> None:
    """Name each point beside it, moving a label down or up in steps of its own height until it
    overlaps no label already placed and covers no point (labels are placed from the highest point
    down), with a thin line back to its point when it moved: no two labels ever overlap."""
    renderer = FigureCanvasAgg(fig).get_renderer()  # text extents measured as drawn
    fig.draw_without_rendering()  # the layout fixed, so display positions are final
    placed: list[Any] = []
    dots = [ax.transData.transform((x, y)) for _, x, y, _ in points]
    for name, x, y, on_front in sorted(points, key=lambda p: (-p[2], p[1], p[0])):
        style = {
            "textcoords": "offset points",
            "fontsize": 9,
            "color": INK if on_front else "#4b5563",
            "fontweight": "bold" if on_front else "normal",
            "zorder": 4,
        }
        # labels do not move the axes when the figure is laid out again on saving
        style["in_layout"] = False
        text = ax.annotate(name, (x, y), xytext=(6, 3), **style)
        step = text.get_window_extent(renderer).height * 72 / fig.dpi + 1
        shift = 0.0
        for k in range(1, 400):
            box = text.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in placed) and not any(box.contains(*dot) for dot in dots):
                break
            shift = step * ((k + 1) // 2) * (-1 if k % 2 else 1)  # down, up, further down, further up
            text.set_position((6, 3 + shift))
        placed.append(box)  # the text's own box (an annotation's extent would include its line)
        if shift:
            text.remove()
            arrow = {"arrowstyle": "-", "color": MUTED, "linewidth": 0.6, "shrinkA": 0, "shrinkB": 3}
            ax.annotate(name, (x, y), xytext=(6, 3 + shift), arrowprops=arrow, **style)


def overfit_gap_figure(board: Mapping[str, Any]) -> Figure | None:
    """Public minus holdout accuracy per vendor with Newcombe 95 % intervals; an interval
    entirely above zero (public clearly better) is drawn in red."""
    rows = [(e["vendor"], f) for e in _scored(board) if (f := _value(e, "overfit_gap"))]
    if not rows:
        return None
    rows.sort(key=lambda r: (r[1]["value"], r[0]))
    with matplotlib.rc_context(STYLE):
        fig = _new_figure(7.2, 0.8 + 0.32 * len(rows))
        ax = fig.add_subplot()
        ax.grid(axis="y", visible=False)
        ax.axvline(0, color=INK, linewidth=0.9, zorder=1)
        for y, (_name, f) in enumerate(rows):
            flagged = f.get("low") is not None and f["low"] > 0
            color = WARN if flagged else ACCENT
            if f.get("low") is not None and f.get("high") is not None:
                ax.hlines(y, f["low"], f["high"], color=color, linewidth=2, alpha=0.55, zorder=2)
            ax.plot([f["value"]], [y], "o", color=color, markersize=5.5, zorder=3)
        ax.set_yticks(range(len(rows)), [r[0] for r in rows])
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: "0" if abs(x) < 1e-12 else f"{x * 100:+.0f} pt"))
        ax.set_xlabel("public accuracy − holdout accuracy (percentage points; 95 % Newcombe interval)")
        lo, hi = ax.get_xlim()
        span = max(abs(lo), abs(hi))
        ax.set_xlim(-span, span)
        ax.text(0.99, 1.0, "public better →", transform=ax.transAxes, ha="right", va="bottom", color=MUTED, fontsize=8)
        ax.text(0.01, 1.0, "← holdout better", transform=ax.transAxes, ha="left", va="bottom", color=MUTED, fontsize=8)
    return _stamp(fig, overfit_gap_eligibility(board))


def pairwise_matrix(board: Mapping[str, Any]) -> tuple[list[str], dict[tuple[str, str], tuple[float, bool]]]:
    """The compared vendors in leaderboard order and, for each ordered pair (row, column), the
    row's rate minus the column's on the rows both were scored on, and whether the paired test
    tells them apart (Holm-adjusted p < alpha)."""
    section = board.get("comparisons") or {}
    vendors = list(section.get("vendors") or [])
    cells: dict[tuple[str, str], tuple[float, bool]] = {}
    for p in section.get("pairs") or []:
        d = (p.get("difference") or {}).get("value")
        if d is None:
            continue
        apart = p.get("better") is not None
        cells[(p["vendor_a"], p["vendor_b"])] = (d, apart)
        cells[(p["vendor_b"], p["vendor_a"])] = (-d, apart)
    return vendors, cells


def pairwise_figure(board: Mapping[str, Any]) -> Figure | None:
    """Every pair of vendors: the row vendor's correct rate minus the column vendor's, on the rows
    both answered, in percentage points. A coloured cell is a difference the paired test finds
    (exact McNemar, Holm-adjusted p < 0.05): orange where the row vendor is better, purple where
    the column vendor is (a colour-blind-safe pair); a grey cell is a pair the test cannot tell apart. Row labels carry each
    vendor's letters (vendors sharing a letter cannot be told apart)."""
    vendors, cells = pairwise_matrix(board)
    if len(vendors) < 2:
        return None
    letters = {e["vendor"]: e.get("rank_letters") or "" for e in _scored(board)}
    largest = max((abs(d) for d, _ in cells.values()), default=0.0) or 1.0
    scale = matplotlib.colormaps["PuOr_r"]
    size = len(vendors)
    with matplotlib.rc_context(STYLE):
        fig = _new_figure(max(6.0, min(9.0, 2.4 + 0.55 * size)), max(3.8, min(8.4, 2.0 + 0.5 * size)))
        ax = fig.add_subplot()
        ax.grid(False)
        for spine in ax.spines.values():
            spine.set_visible(False)
        for i, row in enumerate(vendors):
            for j, column in enumerate(vendors):
                if i == j:
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=GRID, edgecolor="white"))
                    ax.text(j, i, "·", ha="center", va="center", fontsize=9, color=MUTED)
                    continue
                if (row, column) not in cells:
                    ax.text(j, i, "n/a", ha="center", va="center", fontsize=7, color=MUTED)
                    continue
                d, apart = cells[(row, column)]
                face = scale(0.5 + 0.5 * d / largest) if apart else "#f3f4f6"
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=face, edgecolor="white", linewidth=1.2))
                strong = apart and abs(d) / largest > 0.55
                ax.text(
                    j,
                    i,
                    f"{d * 100:+.0f}" if round(d * 100) != 0 else "0",
                    ha="center",
                    va="center",
                    fontsize=10,
                    color="white" if strong else (INK if apart else "#4b5563"),
                    fontweight="bold" if apart else "normal",
                )
        ax.set_xlim(-0.5, size - 0.5)
        ax.set_ylim(size - 0.5, -0.5)
        ax.set_xticks(range(size), vendors, rotation=45, ha="right")
        ax.set_yticks(range(size), [f"{v} ({letters.get(v) or '–'})" for v in vendors])
        ax.tick_params(length=0, labelsize=10)
        ax.set_xlabel("column vendor")
        ax.set_ylabel("row vendor (letters)")
        ax.legend(
            handles=[
                Rectangle((0, 0), 1, 1, facecolor=scale(0.9), label="row vendor better"),
                Rectangle((0, 0), 1, 1, facecolor=scale(0.1), label="column vendor better"),
                Rectangle(
                    (0, 0), 1, 1, facecolor="#f3f4f6", edgecolor=MUTED, linewidth=0.5, label="cannot be told apart"
                ),
            ],
            loc="upper left",
            bbox_to_anchor=(0.0, -0.16 if size > 6 else -0.22),
            ncols=3,
            fontsize=8,
        )
        ax.set_title(
            "row − column, correct rate on the rows both answered (percentage points)",
            fontsize=8.5,
            fontweight="normal",
            loc="left",
            color=INK,
        )
    return _stamp(fig, pairwise_eligibility(board))


def _strata(board: Mapping[str, Any]) -> list[str]:
    names: set[str] = set()
    for e in _scored(board):
        names.update((e.get("breakdown") or {}).get("stratum", {}))
    return sorted(names)


def hit_at_k_by_stratum_figure(board: Mapping[str, Any]) -> Figure | None:
    """One panel per stratum: every vendor's hit@1 (with its 95 % interval) and hit@10."""
    strata = _strata(board)
    vendors = [e for e in _scored(board) if any(_value_in(e, s, "hit_at_1") for s in strata)]
    if not strata or not vendors:
        return None
    cols = min(3, len(strata))
    nrows = math.ceil(len(strata) / cols)
    with matplotlib.rc_context(STYLE):
        fig = _new_figure(3.0 * cols + 0.6, 0.9 + nrows * (0.5 + 0.24 * len(vendors)))
        axes = fig.subplots(nrows, cols, sharex=True, sharey=True, squeeze=False)
        names = [e["vendor"] for e in vendors][::-1]
        for i, stratum in enumerate(strata):
            ax = axes[i // cols][i % cols]
            ax.grid(axis="y", visible=False)
            ns = set()
            for y, e in enumerate(vendors[::-1]):
                h1, h10 = _value_in(e, stratum, "hit_at_1"), _value_in(e, stratum, "hit_at_10")
                if h1:
                    ns.add(h1["n"])
                    if h1.get("low") is not None:
                        ax.hlines(y, h1["low"], h1["high"], color=ACCENT, alpha=0.3, linewidth=3)
                    ax.plot([h1["value"]], [y], "o", color=ACCENT, markersize=4.5)
                if h10:
                    ax.plot([h10["value"]], [y], "o", markerfacecolor="white", markeredgecolor=INK, markersize=4.5)
            ax.set_title(f"{stratum}  (n={'/'.join(str(n) for n in sorted(ns))})", loc="left")
            ax.set_yticks(range(len(names)), names)
            ax.set_xlim(-0.03, 1.03)
            ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        for j in range(len(strata), nrows * cols):
            axes[j // cols][j % cols].set_visible(False)
        fig.legend(
            handles=[
                Line2D([], [], color=ACCENT, marker="o", linewidth=3, alpha=0.6, label="hit@1 with 95 % interval"),
                Line2D([], [], color=INK, marker="o", markerfacecolor="white", linewidth=0, label="hit@10"),
            ],
            loc="outside lower center",
            ncols=2,
            fontsize=8.5,
        )
    return _stamp(fig, hit_at_k_eligibility(board))


def _value_in(entry: Mapping[str, Any], stratum: str, metric: str) -> dict[str, Any] | None:
    fig = (((entry.get("breakdown") or {}).get("stratum") or {}).get(stratum) or {}).get(metric)
    return fig if fig and fig.get("value") is not None else None


def km_figure(
    observations: Mapping[str, tuple[Sequence[float], Sequence[bool]]],
    censor_at_hours: float = DEFAULT_CENSOR_AT_HOURS,
    board: Mapping[str, Any] | None = None,
) -> Figure | None:
    """Kaplan–Meier curves of time-to-retrievability: the share of sentinel pages a vendor
    has not yet returned, by hours since publication; `+` marks a censored page (not found
    by the last probe, or censored at 30 days); the dashed line is the median's 50 %."""
    curves = {v: obs for v, obs in sorted(observations.items()) if len(obs[0])}
    if not curves:
        return None
    with matplotlib.rc_context(STYLE):
        fig = _new_figure(7.2, 4.4)
        ax = fig.add_subplot()
        ax.axhline(0.5, color=MUTED, linestyle="--", linewidth=0.9)
        for i, (vendor, (durations, observed)) in enumerate(curves.items()):
            style = series_style(i)
            color = style["color"]
            curve = km_estimate(list(durations), list(observed), censor_at_hours=censor_at_hours)
            xs, ys = [0.0], [1.0]
            for t, s in zip(curve.times, curve.survival):
                xs.append(t)
                ys.append(s)
            xs.append(censor_at_hours)
            ys.append(ys[-1])
            ax.step(
                xs,
                ys,
                where="post",
                color=color,
                linestyle=style["linestyle"],
                marker=style["marker"],
                markevery=slice(1, len(xs) - 1),  # at each step, where curves part (they often share the end)
                markersize=4,
                linewidth=1.6,
                label=vendor,
            )
            censored = [
                min(float(d), censor_at_hours)
                for d, o in zip(durations, observed)
                if not o or float(d) > censor_at_hours
            ]
            for t in censored:
                s = 1.0
                for et, es in zip(curve.times, curve.survival):
                    if et <= t:
                        s = es
                ax.plot([t], [s], marker="+", color=color, markersize=7, linewidth=0)
        ax.set_xlim(0, censor_at_hours * 1.01)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xticks([0, 72, 168, 336, 504, 720], ["0", "3 d", "7 d", "14 d", "21 d", "30 d"])
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_xlabel("time since the sentinel page was published (right-censored at 30 days)")
        ax.set_ylabel("pages not yet retrievable")
        fig.legend(loc="outside right upper", fontsize=8.5)
    return _stamp(fig, ttr_eligibility(board, list(curves)))


def site_charts(
    board: Mapping[str, Any], ttr_observations: Mapping[str, tuple[Sequence[float], Sequence[bool]]] | None = None
) -> list[Chart]:
    """The snapshot-level charts of the site, in the order they are shown, each with its
    eligibility (an illustrative chart's caption starts with the label and the reasons)."""
    observations = ttr_observations or {}
    specs = [
        (
            "pairwise",
            "Which vendors can be told apart",
            "Each cell: the row vendor's correct rate minus the column vendor's on the rows both answered for "
            "the ranking figure, in percentage points. Coloured where the paired test (exact McNemar, Holm-adjusted "
            "over every pair, family-wise 5 %) finds the difference (orange: the row vendor is better; purple: the "
            "column vendor is), grey where it cannot tell the two apart. Beside each vendor, its letters: vendors "
            "sharing a letter cannot be told apart.",
            lambda: pairwise_figure(board),
            pairwise_eligibility(board),
        ),
        (
            "ttr_km",
            "Time to retrievability (Kaplan–Meier)",
            "Share of freshly published sentinel pages each vendor has not yet returned, by hours since "
            "publication; median where a curve crosses 50 %.",
            lambda: km_figure(observations, board=board),
            ttr_eligibility(board, [v for v, obs in sorted(observations.items()) if len(obs[0])]),
        ),
        (
            "frontier",
            "Cost against quality: the frontier",
            "Each configuration's ranking figure (with its 95 % interval) against its dollars per 1,000 correct answers "
            "on the pinned plan (with its 95 % interval; log scale). Filled blue diamonds are Pareto-optimal: no other "
            "configuration is at most as dear and at least as good, strictly better in one; the step line joins them "
            "and reads as the best ranking figure reachable at each budget. Hollow orange circles are dominated. Point "
            "estimates decide the frontier: overlapping intervals and shared letters mean the data may not tell two "
            "points apart.",
            lambda: frontier_figure(board),
            frontier_eligibility(board),
        ),
        (
            "cost_vs_accuracy",
            "Cost per correct answer against the overall correct rate",
            "Each vendor's overall correct rate (with 95 % interval: every row of every task type it supports, "
            "the rows its cost per correct answer is counted over; not the ranking figure, which counts only the "
            "task types every vendor supports) against its cost per correct answer on the pinned plan; the line "
            "joins the Pareto front.",
            lambda: cost_accuracy_figure(board),
            cost_accuracy_eligibility(board),
        ),
        (
            "overfit_gap",
            "Overfit gap: public minus holdout accuracy",
            "Per vendor, public-split accuracy minus holdout accuracy with a 95 % Newcombe interval; "
            "red where the interval lies entirely above zero.",
            lambda: overfit_gap_figure(board),
            overfit_gap_eligibility(board),
        ),
        (
            "hit_at_k_by_stratum",
            "hit@k by stratum",
            "Per stratum, each vendor's hit@1 (filled, with 95 % interval) and hit@10 (hollow); n is the "
            "stratum's search rows.",
            lambda: hit_at_k_by_stratum_figure(board),
            hit_at_k_eligibility(board),
        ),
    ]
    return [
        Chart(name, title, caption if ok else f"{illustrative_note(reasons)}. {caption}", build, ok, tuple(reasons))
        for name, title, caption, build, (ok, reasons) in specs
    ]


def quarter_trend_figure(
    vendor: str, rows: Sequence[Mapping[str, Any]], rank_label: str, signal_quarters: Sequence[str] = ()
) -> Figure | None:
    """One vendor across quarters (`rows`: its `publish.quarters.vendor_rows`, oldest first): the
    ranking figure with its 95 % interval, and the overfit gap with its interval beside a zero line;
    a gap interval above zero is drawn in vermillion, and where it stays there in consecutive
    quarters (`signal_quarters`) the chart says it is the methodology's sign of tuning."""
    ranked = [r for r in rows if r.get("rank_value") is not None]
    if not ranked:
        return None
    labels = [str(r["quarter"]) for r in rows]
    x = {r["snapshot_id"]: i for i, r in enumerate(rows)}
    with matplotlib.rc_context(STYLE):
        fig = _new_figure(6.4, 2.3)
        rank_ax, gap_ax = fig.subplots(1, 2)
        for ax in (rank_ax, gap_ax):
            ax.set_xticks(range(len(labels)), labels)
            ax.set_xlim(-0.5, len(labels) - 0.5)
            ax.grid(axis="x", visible=False)

        def draw(ax: Any, points: Sequence[Mapping[str, Any]], key: str, colour: Callable[[Mapping[str, Any]], str]):
            # key: "rank" (rank_value, rank_low, rank_high) or "overfit_gap" (overfit_gap, _low, _high)
            value = "rank_value" if key == "rank" else key
            xs = [x[r["snapshot_id"]] for r in points]
            ax.plot(xs, [r[value] for r in points], color=MUTED, linewidth=1, zorder=1)
            for xi, r in zip(xs, points, strict=True):
                if r.get(f"{key}_low") is not None and r.get(f"{key}_high") is not None:
                    ax.vlines(xi, r[f"{key}_low"], r[f"{key}_high"], color=colour(r), linewidth=2, alpha=0.6, zorder=2)
                ax.plot([xi], [r[value]], "o", color=colour(r), markersize=5.5, zorder=3)

        draw(rank_ax, ranked, "rank", lambda r: PALETTE[0])
        rank_ax.set_title(f"{vendor}: {rank_label}", loc="left")
        rank_ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=None))  # as many decimals as the ticks need
        gapped = [r for r in rows if r.get("overfit_gap") is not None]
        gap_ax.axhline(0, color=INK, linewidth=0.9, zorder=1)
        if gapped:
            draw(gap_ax, gapped, "overfit_gap", lambda r: PALETTE[1] if r.get("overfit_gap_positive") else PALETTE[2])
            lo, hi = gap_ax.get_ylim()
            span = max(abs(lo), abs(hi))
            gap_ax.set_ylim(-span, span)
        gap_ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: "0" if abs(v) < 1e-12 else f"{v * 100:+.0f} pt"))
        gap_ax.set_title("overfit gap (public − holdout)", loc="left")
        if signal_quarters:
            gap_ax.text(
                0.01, 0.02, "above 0 quarter after quarter: tuning signal", transform=gap_ax.transAxes,
                color=PALETTE[1], fontsize=8, ha="left", va="bottom",
            )  # fmt: skip
    return fig
