"""What is wrong with a submission before it is graded: one specific reason per problem, files only read.

nbgrader alone says little: a malformed notebook aborts the student's whole autograde, a missing or misnamed
notebook and a deleted test cell silently score 0, and a duplicated or split cell loses its grade id on all
but one copy. Here each gets a sentence the instructor can act on, and only readable notebooks are graded.
"""

import codecs
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from perfaudit.autograde.isolation import submission
from perfaudit.grade.escape import one_line


@dataclass
class Diagnosis:
    gradable: list[str] = field(default_factory=list)  # notebook names nbgrader can grade
    reasons: dict[str, list[str]] = field(default_factory=dict)  # {notebook name: [problems found]}
    withheld: list[str] = field(default_factory=list)  # refused at intake (refused.py): no row in the gradebook

    def add(self, notebook: str, reason: str) -> None:
        self.reasons.setdefault(notebook, []).append(reason)


def _grade_ids(cells):
    return [c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in cells]


def _read(path):
    """(notebook dict, None) or (None, why it cannot be read as a notebook)."""
    data = path.read_bytes()
    if not data.strip():
        return None, "the file is empty (0 bytes of notebook)"
    if data.startswith(codecs.BOM_UTF8):  # json.loads of bytes skips it; nbgrader and Jupyter read text, and stop
        return None, ("malformed: the file starts with a byte-order mark (bytes EF BB BF), which nbgrader and "
                      "JupyterLab cannot read: save it as UTF-8 without one (an editor's 'UTF-8', not 'UTF-8 with "
                      "BOM')")
    try:
        nb = json.loads(data)
    except RecursionError:
        return None, "malformed: JSON nested too deeply to be a notebook"
    except UnicodeDecodeError as error:
        return None, f"malformed: not UTF-8 text ({error.reason} at byte {error.start})"
    except json.JSONDecodeError as error:
        return None, f"malformed JSON ({error.msg}, line {error.lineno} column {error.colno}): not graded"
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return None, "malformed: valid JSON but not a notebook (no list of cells)"
    if nb.get("nbformat") != 4:
        return None, f"malformed: notebook format {one_line(repr(nb.get('nbformat')))[:20]}, expected 4"
    wrong = _misshapen(nb)
    return (None, f"malformed: valid JSON but not a notebook ({wrong})") if wrong else (nb, None)


JSON_KINDS = {int: "a number", float: "a number", str: "a string", list: "a list", bool: "true or false",
              type(None): "null"}


def _misshapen(nb):
    """Where nb is not shaped as a notebook's JSON in the parts this module and nbgrader read, else None: a cell
    that is not an object, a metadata that is not one, a source that is not text (each read below without a type
    check)."""
    if not isinstance(nb.get("metadata", {}), dict):
        return "its metadata is not an object"
    for i, cell in enumerate(nb["cells"]):
        if not isinstance(cell, dict):
            return f"cell {i} is {JSON_KINDS.get(type(cell), 'a value')}, not a cell"
        if cell.get("cell_type") not in ("code", "markdown", "raw"):
            return f"cell {i} has no cell type nbformat knows"
        source = cell.get("source", "")
        if not isinstance(source, str) and not (isinstance(source, list) and all(isinstance(s, str) for s in source)):
            return f"cell {i}'s source is not text"
        metadata = cell.get("metadata", {})
        if not isinstance(metadata, dict) or not isinstance(metadata.get("nbgrader", {}), dict):
            return f"cell {i}'s metadata is not an object"
        if not isinstance(metadata.get("nbgrader", {}).get("grade_id", ""), (str, type(None))):
            return f"cell {i}'s grade id is not text"
    return None


def _cell_problems(nb, expected_ids):
    ids = _grade_ids(nb["cells"])
    problems = []
    for grade_id in sorted(set(expected_ids) - set(ids)):
        problems.append(f"cell '{grade_id}' was deleted from the notebook")
    for grade_id in sorted({g for g in ids if g and ids.count(g) > 1}):
        where = [i for i, g in enumerate(ids) if g == grade_id]
        consecutive = all(b == a + 1 for a, b in zip(where, where[1:]))
        if consecutive:
            problems.append(f"cell '{grade_id}' was split into {len(where)} cells: graded as the last part")
        else:
            problems.append(f"cell '{grade_id}' appears {len(where)} times: only the last copy is graded")
    return problems


def diagnose(folder: str | Path, expected: dict[str, list[str]], ignore: Sequence[str] = ()) -> Diagnosis:
    """Diagnose submitted/<student>/<assignment>/ against {notebook name: grade ids of its graded cells}; ignore:
    the course's CourseDirectory.ignore, whose names are neither refused nor counted (submission.problems)."""
    folder = Path(folder)
    found = {p.stem: p for p in folder.glob("*.ipynb")} if folder.is_dir() else {}
    result = Diagnosis()
    unsafe = submission.problems(folder, ignore) if folder.is_dir() else []
    if unsafe:  # nothing in it is read: a link could point anywhere, a FIFO would hang the reader
        for name in expected:
            result.add(name, f"not graded: {submission.describe(unsafe)}")
        return result
    if not found:
        for name in expected:
            result.add(name, f"empty submission: no notebook in submitted/{folder.parent.name}/{folder.name}")
        return result
    misnamed = _misnamed({stem: path for stem, path in found.items() if stem not in expected}, expected)
    for stem in sorted(set(found) - set(expected) - {Path(f).stem for f in misnamed.values()}):
        result.add(f"{stem}.ipynb", f"extra notebook '{stem}.ipynb': not one of {folder.name}'s notebooks "
                                    f"({', '.join(sorted(expected))}), not graded")
    for name, expected_ids in expected.items():
        if name not in found:
            if name in misnamed:
                result.add(name, f"misnamed: submitted as '{misnamed[name]}'; rename it to '{name}.ipynb', grade again")
            else:
                result.add(name, f"missing: no {name}.ipynb in the submission")
            continue
        nb, why = _read(found[name])
        if nb is None:
            result.add(name, why)
            continue
        foreign = _foreign(nb, name, expected)
        if foreign:
            result.add(name, foreign)
            continue
        for problem in _cell_problems(nb, expected_ids):
            result.add(name, problem)
        result.gradable.append(name)
    return result


def _misnamed(unknown, expected):
    """{expected notebook: file name} for files under another name that hold cells only that notebook has."""
    owners: dict[str, set[str]] = {}
    for name, ids in expected.items():
        for grade_id in ids:
            owners.setdefault(grade_id, set()).add(name)
    found: dict[str, str] = {}
    for stem, path in sorted(unknown.items()):
        nb, _ = _read(path)
        if nb is None:
            continue
        claims = [next(iter(owners[g])) for g in _grade_ids(nb["cells"]) if g in owners and len(owners[g]) == 1]
        if claims:
            found.setdefault(max(set(claims), key=claims.count), path.name)
    return found


def _foreign(nb, name, expected):
    """One sentence when a notebook under this name holds none of its graded cells: whose it is, else None."""
    ids = {g for g in _grade_ids(nb["cells"]) if g}
    if not expected[name] or ids & set(expected[name]):
        return None
    others = [other for other, other_ids in expected.items() if ids & set(other_ids)]
    if others:
        return (f"holds the cells of {others[0]}.ipynb, not {name}'s: the student saved one notebook under the other's "
                f"name; not graded (rename it to {others[0]}.ipynb, or ask for {name}.ipynb)")
    shown = ", ".join(f"'{one_line(g)}'" for g in sorted(ids)[:3]) or "no graded cell"
    return (f"a notebook of another assignment: none of {name}'s graded cells, but {shown}; not graded (ask the "
            f"student for this assignment's {name}.ipynb)")
