"""The report's JSON Schema (perfaudit/report.py): loaded from its file, and outlined for a student."""

from perfaudit import paths, report

SMALL = {
    "required": ["audit", "timings"],
    "properties": {
        "audit": {"const": "performance-audit", "description": "Which audit wrote this report."},
        "timings": {"type": "object", "required": ["shape"], "properties": {
            "shape": {"$ref": "#/$defs/shape", "description": "Input shape."},
            "steady_s": {"type": ["array", "null"], "description": " ".join(["seconds"] * 30)}}},
        "extra": {"type": "object", "properties": {"note": {"type": "string"}}},
    },
}


def test_the_schema_is_the_file_s_and_carries_the_version_the_code_writes():
    schema = report.load_schema()
    assert schema["properties"]["schema_version"]["const"] == report.SCHEMA_VERSION
    assert schema["properties"].keys() >= {"audit", "timings", "tracing", "environment"}
    assert paths.SCHEMA.name == "report.schema.json"


def test_each_field_s_line_gives_its_path_its_kind_and_whether_it_is_optional(monkeypatch):
    monkeypatch.setattr(report, "load_schema", lambda: SMALL)
    lines = report.schema_outline(["audit", "timings", "extra"]).splitlines()
    assert [line for line in lines if not line.startswith(" ")] == [
        'audit             = "performance-audit"',
        "timings           object",
        "timings.shape     [rows, cols]",
        "timings.steady_s  array or null (optional)",
        "extra             object (optional)",
        "extra.note        string (optional)",
    ]
    described = lines[lines.index("timings.steady_s  array or null (optional)") + 1:lines.index(
        "extra             object (optional)")]
    assert len(described) > 1 and all(line.startswith("    ") and len(line) <= 88 for line in described)
    assert " ".join(line.strip() for line in described) == " ".join(["seconds"] * 30)


def test_by_default_every_section_is_listed_and_an_optional_one_stays_folded(monkeypatch):
    monkeypatch.setattr(report, "load_schema", lambda: SMALL)
    assert [line.split()[0] for line in report.schema_outline().splitlines() if not line.startswith(" ")] == [
        "audit", "timings", "timings.shape", "timings.steady_s", "extra"]
    assert [line.split()[0] for line in report.schema_outline(["extra"]).splitlines()] == ["extra", "extra.note"]


def test_schema_outline_folds_the_going_further_sections_unless_asked():
    lines = [line for line in report.schema_outline().splitlines() if not line.startswith(" ")]  # field lines
    assert any(line.startswith("decomposition ") and line.endswith("(optional)") for line in lines)
    assert not any(line.startswith("decomposition.") for line in lines), "notebook 3 does not teach them"
    assert not next(line for line in lines if line.startswith("timings.first_call_s ")).endswith("(optional)")
    unfolded = [line for line in report.schema_outline(["decomposition"]).splitlines() if not line.startswith(" ")]
    assert unfolded[0].startswith("decomposition ") and len(unfolded) > 20
    assert all(line.endswith("(optional)") for line in unfolded), "fields of an optional section are optional"
