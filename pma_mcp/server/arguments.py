"""Tool arguments of the wrong type or out of range, said the way the tools' own checks say
things: which argument, what it must be, what came, and a call that works.

The SDK checks arguments against each tool's input schema with pydantic and would answer
with pydantic's report (its class names, `[type=int_type, ...]` and a link to its website).
This turns that report, and the schema the client was given, into one message an agent can
act on. Pure: pydantic's error dicts in, text out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

SHOWN_CHARS = 40
"""How much of a bad value is echoed back (a 10 MB argument must not be)."""
REASONS = {
    "int_type": "not a valid integer", "int_parsing": "not a valid integer",
    "int_from_float": "not a valid integer", "float_type": "not a valid number",
    "float_parsing": "not a valid number", "finite_number": "not a finite number",
    "string_type": "not a valid string", "bool_type": "not a valid boolean",
    "bool_parsing": "not a valid boolean", "list_type": "not a valid list",
    "dict_type": "not a valid dictionary", "literal_error": "not one of those",
    "enum": "not one of those",
}
JSON_KINDS = {"integer": "a JSON number", "number": "a JSON number", "string": "a JSON string",
              "boolean": "true or false", "array": "a JSON array", "object": "a JSON object"}


def explain(tool: str, errors: Sequence[Mapping[str, Any]], schema: Mapping[str, Any]) -> str:
    """One message for every problem pydantic found in a call of `tool`."""
    problems = [_problem(error, schema) for error in errors]
    return f"{tool}: {'; '.join(problems)}. Nothing was done."


def _problem(error: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    loc = [part for part in error.get("loc", ()) if not _is_union_branch(part)]
    name = "".join(f"[{p}]" if isinstance(p, int) else ("." if i else "") + str(p)
                   for i, p in enumerate(loc)) or "the arguments"
    wanted = _schema_at(schema, loc)
    expected = describe(wanted)
    kind = str(error.get("type", ""))
    if kind == "missing":
        about = wanted.get("description")
        return f"{name} is required: {expected}" + (f" ({about})" if about else "")
    got = error.get("input")
    if kind in REASONS:  # the wrong JSON type: say which type came
        got_text = _shown(got) if got is None else f"{_shown(got)}, {_json_type(got)}"
        reason = REASONS[kind]
    else:
        got_text, reason = _shown(got), _bound_reason(kind, error.get("ctx") or {})
    return (f"{name} must be {expected}, got {got_text}" + (f" ({reason})" if reason else "")
            + _example(name, wanted, got))


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _is_union_branch(part: object) -> bool:
    """pydantic names the branch of an `X | None` it tried (`'literal[...]'`, `'str'`)."""
    return isinstance(part, str) and (part.endswith("]") or part in {"str", "int", "float",
                                                                      "bool", "list", "dict"})


def _schema_at(schema: Mapping[str, Any], loc: Sequence[object]) -> Mapping[str, Any]:
    here: Mapping[str, Any] = schema
    for part in loc:
        here = _non_null(here)
        if isinstance(part, int):
            here = here.get("items") or {}
        else:
            here = (here.get("properties") or {}).get(str(part)) or {}
    return here


def _non_null(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    options = [o for o in schema.get("anyOf", []) if o.get("type") != "null"]
    return {**schema, **options[0]} if len(options) == 1 else schema


def describe(schema: Mapping[str, Any]) -> str:
    """What a value must be, in words: 'a whole number from 1 to 50', 'one of ...'."""
    nullable = any(o.get("type") == "null" for o in schema.get("anyOf", []))
    s = _non_null(schema)
    kind = s.get("type")
    if "enum" in s:
        values = [repr(v) for v in s["enum"]]
        text = "one of " + (", ".join(values[:-1]) + " or " + values[-1] if len(values) > 1
                            else values[0])
    elif kind in ("integer", "number"):
        text = ("a whole number" if kind == "integer" else "a number") + _range(s)
    elif kind == "string":
        text = "text" + _length(s, "character")
    elif kind == "boolean":
        text = "true or false"
    elif kind == "array":
        item = s.get("items") or {}
        text = ("a list of " + ("strings" if item.get("type") == "string" else "values")
                + _length({"minLength": s.get("minItems"), "maxLength": s.get("maxItems")},
                          "item"))
    elif kind == "object":
        text = "a JSON object"
    else:
        text = "a valid value"
    return text + (" (or null to leave it out)" if nullable else "")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _range(s: Mapping[str, Any]) -> str:
    low, high = s.get("minimum"), s.get("maximum")
    if low is not None and high is not None:
        return f" from {_number(low)} to {_number(high)}"
    if low is not None:
        return f" of at least {_number(low)}"
    return f" of at most {_number(high)}" if high is not None else ""


def _length(s: Mapping[str, Any], unit: str) -> str:
    low, high = s.get("minLength"), s.get("maxLength")
    parts = []
    if low:
        parts.append(f"at least {low} {unit}{'' if low == 1 else 's'}")
    if high:
        parts.append(f"at most {high} {unit}s")
    return " of " + " and ".join(parts) if parts else ""


def _bound_reason(kind: str, ctx: Mapping[str, Any]) -> str:
    words = {"less_than_equal": ("less than or equal to", "le"),
             "greater_than_equal": ("greater than or equal to", "ge"),
             "less_than": ("less than", "lt"), "greater_than": ("greater than", "gt")}
    if kind in words:
        text, key = words[kind]
        return f"not {text} {ctx.get(key)}"
    if kind in ("string_too_short", "too_short"):
        return "too short"
    if kind in ("string_too_long", "too_long"):
        return "too long"
    return ""


def _shown(value: object) -> str:
    """A bad value as the tools' own messages show one (repr), JSON's words for the rest."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _example(name: str, schema: Mapping[str, Any], got: object) -> str:
    """`; send it as a JSON number, e.g. "limit": 5`: a value of the right type (the one
    meant, when a number came as a string), for a type mistake only."""
    s = _non_null(schema)
    kind = s.get("type")
    if kind not in JSON_KINDS or "enum" in s or "[" in name or _fits(got, kind):
        return ""
    value = _parsed(got, kind)
    if value is None:
        value = s.get("default")
    if value is None or value == []:
        low, high = s.get("minimum", 0.0), s.get("maximum", 1.0)  # a number: its middle
        value = {"integer": s.get("minimum", 1), "number": (low + high) / 2,
                 "string": "…", "boolean": True, "array": ["…"], "object": {}}[kind]
    key = name
    example = json.dumps(value, ensure_ascii=False)
    return f"; send it as {JSON_KINDS[kind]}, e.g. {json.dumps(key)}: {example}"


def _fits(value: object, kind: str) -> bool:
    """Whether the value already has the JSON type (so the mistake is its range or length)."""
    if isinstance(value, bool):
        return kind == "boolean"
    return {"integer": isinstance(value, int),
            "number": isinstance(value, (int, float)) and math.isfinite(value),
            "string": isinstance(value, str), "array": isinstance(value, list),
            "object": isinstance(value, dict), "boolean": False}[kind]


def _parsed(value: object, kind: str) -> object:
    """'0.7' meant 0.7; 'true' meant true: the value the caller had in mind, if obvious."""
    if not isinstance(value, str):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return parsed if _fits(parsed, kind) else None
