"""Two pictures of a report: where the first call's time goes, and how the steady calls spread.

Drawn with matplotlib's Agg canvas straight onto PNG files (no GUI, no pyplot state), so the same code runs in a
notebook, a grader and a terminal; a notebook shows the saved files.
"""

from pathlib import Path

import numpy as np

FIRST_CALL_PNG = "first-call-parts.png"
STEADY_PNG = "steady-calls.png"
COLOURS = {"first call": "#444444", "observed": "#1f77b4", "ahead of time": "#ff7f0e",
           "one-time": "#9467bd", "steady": "#2ca02c"}


def _figure(width, height):
    # matplotlib (seconds) only when a chart is drawn: notebook 4's setup cell imports this module, in the grader too
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    return figure


def first_call_bars(decomposition, steady_median_s):
    """(group, label, seconds) rows: the first call, both decompositions, the one-time cost, the steady median."""
    observed, aot = decomposition["observed"], decomposition["aot"]
    rows = [("first call", "first call (wall clock)", decomposition["first_call_s"])]
    rows += [("observed", f"observed: {part}", observed[f"{part}_s"]) for part in ("trace", "lower", "compile")]
    rows.append(("observed", "observed: remainder", observed["remainder_s"]))
    rows += [("ahead of time", f"AOT: {part.replace('_', ' ')}", aot[f"{part}_s"])
             for part in ("trace", "lower", "compile", "first_run")]
    if "one_time_lowering" in decomposition:
        rows.append(("one-time", "one-time lowering (fresh process)", decomposition["one_time_lowering"]["one_time_s"]))
    rows.append(("steady", "steady call (median)", steady_median_s))
    return rows


def first_call_chart(decomposition, steady_median_s, path):
    """Horizontal bars on a log scale: each part of the first call beside the steady median. Saves a PNG."""
    rows = [r for r in first_call_bars(decomposition, steady_median_s) if r[2] > 0]  # a log axis has no 0
    figure = _figure(8, 0.45 * len(rows) + 1.2)
    axes = figure.add_subplot()
    y = np.arange(len(rows))[::-1]
    axes.barh(y, [s * 1e3 for _, _, s in rows], color=[COLOURS[g] for g, _, _ in rows])
    axes.set_yticks(y, [label for _, label, _ in rows])
    for yi, (_, _, seconds) in zip(y, rows):
        axes.annotate(f" {seconds * 1e3:.3g} ms", (seconds * 1e3, yi), va="center", fontsize=8)
    axes.set_xscale("log")
    axes.set_xlim(right=max(s for _, _, s in rows) * 1e3 * 4)  # room for the labels
    axes.set_xlabel("milliseconds (log scale)")
    axes.set_title(f"Where the first call's time goes, {decomposition['shape']} {decomposition['dtype']}")
    figure.tight_layout()
    figure.savefig(path)
    return Path(path)


def steady_chart(steady_s, path):
    """Every steady call in order, with the median and interquartile range, beside their histogram. Saves a PNG."""
    micro = np.asarray(steady_s, dtype=float) * 1e6
    q1, median, q3 = np.percentile(micro, [25, 50, 75])
    figure = _figure(8, 3.2)
    axes, spread = figure.subplots(1, 2, sharey=True, width_ratios=[3, 1])
    axes.axhspan(q1, q3, color=COLOURS["steady"], alpha=0.15, label=f"interquartile range ({q3 - q1:.1f} us)")
    axes.axhline(median, color=COLOURS["steady"], label=f"median ({median:.1f} us)")
    axes.plot(np.arange(1, len(micro) + 1), micro, "o", color="#333333", markersize=3, label="one steady call")
    axes.set_xlabel("call number")
    axes.set_ylabel("microseconds")
    axes.set_ylim(bottom=0)
    axes.set_title(f"{len(micro)} synchronized steady calls")
    axes.legend(fontsize=8, loc="upper right")
    spread.hist(micro, bins=min(20, len(micro)), orientation="horizontal", color=COLOURS["steady"])
    spread.axhline(median, color=COLOURS["steady"])
    spread.set_xlabel("calls")
    spread.set_title("distribution")
    figure.tight_layout()
    figure.savefig(path)
    return Path(path)


def save_charts(evidence_dir, report):
    """Both charts of a report that has a decomposition, as PNG files in evidence_dir; returns their paths."""
    evidence_dir = Path(evidence_dir)
    steady = report["timings"]["steady_s"]
    return [
        first_call_chart(report["decomposition"], float(np.median(steady)), evidence_dir / FIRST_CALL_PNG),
        steady_chart(steady, evidence_dir / STEADY_PNG),
    ]
