"""Two pictures of a report (perfaudit/charts.py): the first call's parts and the steady calls, as PNG files."""

import numpy as np
import pytest

from perfaudit import charts
from perfaudit.answer_key import answers

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def made_up():
    """A report with a decomposition, its numbers made up (no measurement)."""
    first = answers.first_call_of(np.random.default_rng(2))
    evidence = answers.evidence_of(np.random.default_rng(2), 9)
    return {**answers.report_of(evidence, np.random.default_rng(2)), "decomposition": first["decomposition"]}


def test_the_bars_are_the_first_call_each_part_of_both_decompositions_and_the_steady_median(made_up):
    decomposition = made_up["decomposition"]
    rows = charts.first_call_bars(decomposition, 3e-5)
    assert [(group, label) for group, label, _ in rows] == [
        ("first call", "first call (wall clock)"), ("observed", "observed: trace"), ("observed", "observed: lower"),
        ("observed", "observed: compile"), ("observed", "observed: remainder"), ("ahead of time", "AOT: trace"),
        ("ahead of time", "AOT: lower"), ("ahead of time", "AOT: compile"), ("ahead of time", "AOT: first run"),
        ("one-time", "one-time lowering (fresh process)"), ("steady", "steady call (median)")]
    assert [s for _, _, s in rows] == [
        decomposition["first_call_s"], *(decomposition["observed"][k] for k in ("trace_s", "lower_s", "compile_s",
                                                                                "remainder_s")),
        *(decomposition["aot"][k] for k in ("trace_s", "lower_s", "compile_s", "first_run_s")),
        decomposition["one_time_lowering"]["one_time_s"], 3e-5]
    without = {k: v for k, v in decomposition.items() if k != "one_time_lowering"}
    assert "one-time" not in [group for group, _, _ in charts.first_call_bars(without, 3e-5)]


def test_both_charts_are_png_files_in_the_evidence_folder_even_with_a_part_of_0(made_up, tmp_path, monkeypatch):
    drawn = []
    figure = charts._figure
    monkeypatch.setattr(charts, "_figure", lambda *size: drawn.append(figure(*size)) or drawn[-1])
    made_up["decomposition"]["observed"]["remainder_s"] = 0.0  # a log axis has no 0: the bar is left out
    paths = charts.save_charts(tmp_path, made_up)
    assert paths == [tmp_path / charts.FIRST_CALL_PNG, tmp_path / charts.STEADY_PNG]
    assert all(path.read_bytes().startswith(PNG) for path in paths)
    bars = drawn[0].axes[0]
    labels = [label.get_text() for label in bars.get_yticklabels()]
    assert "observed: remainder" not in labels and len(labels) == 10 and labels[0] == "first call (wall clock)"
    median_ms = float(np.median(made_up["timings"]["steady_s"])) * 1e3
    assert labels[-1] == "steady call (median)" and bars.texts[-1].get_text() == f" {median_ms:.3g} ms"
    legend = [text.get_text() for text in drawn[1].axes[0].get_legend().get_texts()]
    assert legend[1] == f"median ({median_ms * 1e3:.1f} us)"
