"""The report's JSON Schema: loading it and describing it to a student."""

import json
import textwrap

from perfaudit import paths


SCHEMA_VERSION = 2  # report.schema.json's schema_version (tests/test_report.py holds the two together)


def load_schema():
    return json.loads(paths.SCHEMA.read_text())


def _fields(schema, prefix="", optional=False, expand=True):
    """(path, optional, spec) for every field; a field under an optional one is optional too.
    With expand=False an optional object's fields are folded into its own line."""
    required = set(schema.get("required", []))
    for name, spec in schema.get("properties", {}).items():
        path = f"{prefix}{name}"
        is_optional = optional or name not in required
        yield path, is_optional, spec
        if expand or not is_optional:
            yield from _fields(spec, f"{path}.", is_optional, expand)


def schema_outline(sections=None):
    """Each field of report.schema.json: a line with its path, its kind and whether it is optional, then its
    meaning on indented lines (short lines: JupyterLab would otherwise wrap them mid-word).

    By default every top-level section is listed and an optional section's fields stay folded (notebook 3
    does not ask for them); `sections` lists the top-level sections to show, each unfolded.
    """
    schema = load_schema()
    if sections:
        schema = {**schema, "properties": {k: v for k, v in schema["properties"].items() if k in sections}}
    fields = list(_fields(schema, expand=bool(sections)))
    width = max(len(path) for path, _, _ in fields) + 1
    lines = []
    for path, optional, spec in fields:
        kind = f"= {json.dumps(spec['const'])}" if "const" in spec else spec.get("type", "")
        if isinstance(kind, list):
            kind = " or ".join(kind)
        if "$ref" in spec:
            kind = "[rows, cols]"
        lines.append(f"{path:<{width}} {kind}{' (optional)' if optional else ''}")
        lines += textwrap.wrap(spec.get("description", ""), 88, initial_indent="    ", subsequent_indent="    ")
    return "\n".join(lines)
