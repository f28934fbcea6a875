"""Pairs of students whose solution code for one notebook is unusually alike, as copydetect finds them.

copydetect fingerprints code as MOSS does (winnowing, "Winnowing: Local Algorithms for Document Fingerprinting"):
Pygments tokenizes it and every name, attribute and string becomes one letter, so renamed variables change nothing,
and functions put in another order keep their runs of matching code. The course's own code (the release's: each
solution cell's starter and every other cell) is copydetect's boilerplate: a run shared with it is nobody's. A pair
is listed when at least THRESHOLD of either student's fingerprinted code is found in the other's, and at least
MIN_MATCHED_CHARS of it.

The figures inform the instructor: short answers to the same question written with the same API look alike, and
a copy can be disguised past any fingerprint. They change no grade.
"""

import html
import io
from dataclasses import dataclass

import numpy as np
from copydetect import CodeFingerprint, compare_files
from copydetect.utils import highlight_overlap

from perfaudit.grade.escape import control_free

# copydetect's default: a run of normalized code shorter than this many characters is not a match. window 1
# (guarantee = noise) keeps every fingerprint: the figures do not depend on the process's string hashes.
NOISE_CHARS = 25
# Share of one student's fingerprinted code found in the other's. On notebook 05, copies (renamed variables,
# reordered functions) score 1.0 and differently written honest answers at most 0.23 (tests/grade/test_similarity.py).
THRESHOLD = 0.5
# And at least this many characters of normalized code matched: a pair of one-line answers alike is no sign.
MIN_MATCHED_CHARS = 100
CONTEXT_LINES = 3  # unmatched lines shown around each match; the rest is cut to "..."


@dataclass
class Pair:
    first: str
    second: str
    first_share: float  # of first's fingerprinted code, the part found in second's
    second_share: float
    matched_chars: int  # of first's normalized code, in runs found in second's
    first_runs: np.ndarray  # where first's matching runs start ([0]) and end ([1]) in its code: for marked()
    second_runs: np.ndarray

    @property
    def larger_share(self) -> float:
        return max(self.first_share, self.second_share)


def fingerprint(code: str, boilerplate: np.ndarray | None = None) -> CodeFingerprint:
    return CodeFingerprint("solution.py", NOISE_CHARS, 1, boilerplate=boilerplate, language="python",
                           fp=io.StringIO(code))


def similar_pairs(code: dict[str, str], course_code: str, threshold: float = THRESHOLD,
                  min_matched: int = MIN_MATCHED_CHARS) -> list[Pair]:
    """The pairs of students over threshold (and min_matched), most alike first. code: {student: their code}."""
    boilerplate = np.array(sorted(fingerprint(course_code).hashes), dtype=np.int64)
    prints = {student: fingerprint(text, boilerplate) for student, text in code.items()}
    students = sorted(prints)
    found = []
    for at, first in enumerate(students):
        for second in students[at + 1:]:
            matched, (first_share, second_share), (first_runs, second_runs) = compare_files(prints[first],
                                                                                            prints[second])
            if max(first_share, second_share) >= threshold and matched >= min_matched:
                found.append(Pair(first, second, float(first_share), float(second_share), int(matched),
                                  first_runs, second_runs))
    return sorted(found, key=lambda pair: (-pair.larger_share, pair.first, pair.second))


def marked(code: str, runs: np.ndarray) -> str:
    """The code as HTML, each matching run (a Pair's) marked, CONTEXT_LINES around each; any character that is not
    printable shown as its escape (a right-to-left override cannot reorder what the instructor reads)."""
    if runs.size == 0:  # nothing matched (a pair listed at threshold 0)
        return control_free(html.escape(code))
    marked, _ = highlight_overlap(code, runs, "<mark>", "</mark>", truncate=CONTEXT_LINES, escape_html=True)
    return control_free(marked)
