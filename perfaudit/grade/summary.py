"""The instructor's terminal summary: scores per student per notebook, why each zero, which tests the class missed.

Student ids, reasons and failure messages come from submissions (file and folder names, exception messages): each
is shown through escape.one_line, so none can add a line of its own or send the terminal an escape code.
"""

from pathlib import Path
from typing import Any, TextIO

import nbformat

from perfaudit.autograde.plugins.execute import NOT_RUN
from perfaudit.bookkeeping import versions
from perfaudit.bookkeeping.statefolder import State
from perfaudit.grade import gradebook, refused
from perfaudit.grade.escape import one_line


def _kernel_events_and_first_failure(notebook_path):
    """(reasons the grader stopped the notebook, first failed test as 'grade_id: message') from an autograded nb."""
    if not notebook_path.exists():
        return [], None
    nb = nbformat.read(notebook_path, as_version=4)
    events, first_failure = [], None
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        for output in cell.get("outputs", []):
            if output.get("output_type") != "error":
                continue
            if output.get("ename") == NOT_RUN and not output["evalue"].startswith("not run"):
                events.append(f"{output['evalue']} (cell '{meta.get('grade_id', '?')}')")
            if output.get("ename") == "MemoryError":
                events.append(f"ran out of memory in cell '{meta.get('grade_id', '?')}' (MemoryError)")
            if meta.get("grade") and first_failure is None:
                message = output.get("evalue") or output.get("ename")
                first_failure = f"'{meta['grade_id']}' failed: {message.splitlines()[0] if message else ''}"
    return events, first_failure


def reasons_for(student: str, notebook: str, score: float, state: State, autograded: str | Path,
                assignment: str) -> list[str]:
    record = state.record(student) or {}
    reasons = list(record.get("reasons", {}).get(notebook, []))
    events, first_failure = _kernel_events_and_first_failure(
        Path(autograded) / student / assignment / f"{notebook}.ipynb"
    )
    reasons += events
    if score == 0 and not reasons:
        reasons.append(f"no test passed; first: {first_failure}" if first_failure else "no test passed")
    return reasons


def _shown(value: float | None) -> str:
    """A score or total as the summary shows it; None (a notebook with no row in the gradebook) as "not graded"."""
    return "not graded" if value is None else f"{value:g}"


def say(batch: Any, line: str, out: TextIO) -> None:
    """Print a line of the run's setting (versions, sandbox, environment check) unless this run printed it already:
    said before grading, it is not said again in the summary; changed since (the environment check's outcome), it
    is."""
    if line not in batch.said:
        batch.said.add(line)
        print(line, file=out)


def print_versions(batch: Any, out: TextIO) -> None:
    """What the run graded with, a WARNING for each version that is not the pinned one."""
    if batch.versions:
        for line in versions.summary_lines(batch.versions, batch.drift):
            say(batch, line, out)


def print_summary(url: str, course_id: str, assignment: str, state: State, autograded: str | Path, batch: Any,
                  out: TextIO) -> None:
    with gradebook.opened(url, course_id) as course_gb:
        scores = gradebook.scores(course_gb, assignment)
        counts = gradebook.pass_counts(course_gb, assignment)
        late = gradebook.penalties(course_gb, assignment)
        maxima = gradebook.maxima(course_gb, assignment)
        held = gradebook.withheld(course_gb, assignment)
    print_versions(batch, out)
    if batch.sandbox.startswith("UNSANDBOXED"):  # a warning: said again where the scores are
        print(f"Student code: {batch.sandbox}", file=out)
    elif batch.sandbox:
        say(batch, f"Student code: {batch.sandbox}", out)
    if batch.canary:
        say(batch, f"Environment check: {batch.canary}", out)
    for student, whys in sorted(batch.environment.items()):
        for why in whys:
            print(f"NOT GRADED (the grading environment's fault, not the student's): {one_line(student)} "
                  f"{one_line(why)}", file=out)
    for folder, why in sorted(batch.refused.items()):
        print(f"NOT GRADED (the folder's name): submitted/{one_line(folder)}: {why}; rename the folder to the "
              "student's id and run again", file=out)
    if batch.engine:
        print(f"Graded on: {batch.engine}", file=out)
    if not scores:
        print("No submissions in the gradebook.", file=out)
        return
    if batch.stale:
        print(f"Graded again, their source notebook changed since they were graded (tests, hidden tests or points): "
              f"{len(batch.stale)} student{'' if len(batch.stale) == 1 else 's'}", file=out)
    for student, (old, new, resubmitted) in sorted(batch.again.items()):
        said = ("resubmitted: graded again" if resubmitted else
                f"graded again: the source of {', '.join(batch.stale[student])} changed" if student in batch.stale
                else "graded again")
        print(f"{one_line(student)}: {said} ({_shown(old)} -> {_shown(new)})", file=out)
    notebooks = list(maxima)
    short = {nb: nb.split("-")[0] for nb in notebooks}
    header = ["student"] + [f"{short[nb]} /{maxima[nb]:g}" for nb in notebooks] + [f"total /{sum(maxima.values()):g}"]
    # refused at intake: no row in the gradebook (held), and the reason intake gave (batch.needs_you)
    withheld = {student: {**dict.fromkeys(held.get(student, []), refused.AGAIN), **batch.needs_you.get(student, {})}
                for student in set(held) | set(batch.needs_you)}
    rows = [
        [one_line(student)] + [_shown(None if nb in withheld.get(student, {}) or nb not in scores[student]
                                      else scores[student][nb][0]) for nb in notebooks]
        + [_shown(None if student in withheld else sum(scores[student][nb][0] for nb in notebooks))]
        for student in sorted(scores)
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(f"\nScores ({len(batch.graded)} graded now, {len(batch.skipped)} unchanged since graded):", file=out)
    for row in [header, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)), file=out)

    if withheld:
        print("\nNeeds you (refused at intake: not graded, and nothing of theirs exported, until you put the file you "
              "choose in their submitted folder and run again):", file=out)
        for student, notebooks_refused in sorted(withheld.items()):
            for nb, why in sorted(notebooks_refused.items()):
                print(f"  {one_line(student)} {nb}: {one_line(why)}", file=out)

    print("\nZeros and problems:", file=out)
    any_problem = False
    for student in sorted(scores):
        record = (state.record(student) or {}).get("reasons", {})
        for nb in notebooks + sorted(set(record) - set(notebooks)):  # then files that are no notebook of ours
            score = scores[student][nb][0] if nb in scores[student] else 0
            penalty, raw = late.get(student, {}).get(nb, (0, score))
            reasons = reasons_for(student, nb, raw, state, autograded, assignment)
            if penalty:
                reasons.insert(0, f"late: nbgrader's late penalty took {penalty:g} of {raw:g} points")
            if nb not in scores[student] and nb not in maxima:  # a file that is no notebook of ours
                print("".join(f"  {one_line(student)} {one_line(reason)}\n" for reason in reasons), end="", file=out)
                any_problem = any_problem or bool(reasons)
                continue
            shown = ("not graded" if nb in withheld.get(student, {}) or nb not in scores[student]
                     else f"{score:g}/{maxima[nb]:g}")
            for reason in reasons:
                any_problem = True
                print(f"  {one_line(student)} {nb} ({shown}): {one_line(reason)}", file=out)
    if not any_problem:
        print("  none", file=out)

    print("\nTests passed (students with full points / students graded):", file=out)
    for notebook, test, points, passed, graded in counts:
        print(f"  {passed:>4}/{graded:<4} {notebook} {test} ({points:g} pt)", file=out)
