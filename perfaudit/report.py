"""The report's JSON Schema: loading it and describing it to a student."""

import json

from perfaudit import paths


def load_schema():
    return json.loads(paths.SCHEMA.read_text())


def _fields(schema, prefix=""):
    required = set(schema.get("required", []))
    for name, spec in schema.get("properties", {}).items():
        path = f"{prefix}{name}"
        yield path, name in required, spec
        yield from _fields(spec, f"{path}.")


def schema_outline():
    """One line per field of report.schema.json: its path, whether it is required, and what it means."""
    schema = load_schema()
    lines = []
    for path, required, spec in _fields(schema):
        kind = f"= {json.dumps(spec['const'])}" if "const" in spec else spec.get("type", "")
        if isinstance(kind, list):
            kind = " or ".join(kind)
        if "$ref" in spec:
            kind = "[rows, cols]"
        flag = "" if required else " (optional)"
        lines.append(f"{path:<34} {kind:<22} {spec.get('description', '')}{flag}")
    return "\n".join(lines)
