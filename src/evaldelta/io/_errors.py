"""Turning msgspec's decoding errors into messages a user can act on, for every
reader of a JSON-based format: what is wrong, at which field, and how to mend it."""

from __future__ import annotations

import re
from typing import Any

import msgspec

#: msgspec's type names, in the user's words.
TYPE_WORDS = {
    "float": "a number",
    "int": "an integer",
    "str": "a string",
    "bool": "true or false",
    "object": "a JSON object",
    "array": "a list",
}


def value_at(data: bytes, path: str) -> str:
    """The value at a JSON path (``a.b[0].c``), as JSON text, for an error message."""
    try:
        value: Any = msgspec.json.decode(data)
        for key, index in re.findall(r"(\w+)|\[(\d+)\]", path):
            value = value[key] if key else value[int(index)]
    except Exception:  # the message is still right without the value
        return "a value of the wrong type"
    text = msgspec.json.encode(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def explain_validation(
    message: str, data: bytes, *, not_an_object: str, mend: str = "", prefix: str = ""
) -> str:
    """A msgspec validation error as ``"field" must be <type>, got <value>[; mend]``.

    Args:
        message: msgspec's message (``Expected `float`, got `str` - at `$.score```).
        data: the JSON text it was decoding, to quote the offending value.
        not_an_object: the advice when the whole document is not a JSON object.
        mend: how to mend a wrong field, appended after a semicolon.
        prefix: where the decoded part sits in the whole record (``data.``).
    """
    at = re.search(r" - at `\$(.*)`$", message)
    path = at.group(1).lstrip(".") if at else ""
    expected = re.search(r"Expected `([^`]*)`", message)
    kinds = [k for k in (expected.group(1).split(" | ") if expected else []) if k != "null"]
    wanted = " or ".join(TYPE_WORDS.get(k, k) for k in kinds) or "something else"
    if not path:
        kind = re.search(r"got `(\w+)`", message)
        got = TYPE_WORDS.get(kind.group(1), kind.group(1)) if kind else "something else"
        return f"expected a JSON object, got {got}; {not_an_object}"
    said = f'"{prefix}{path}" must be {wanted}, got {value_at(data, path)}'
    return f"{said}; {mend}" if mend else said


def explain_decode(message: str, data: bytes, mend: str) -> tuple[int | None, str]:
    """(line, what) for a JSON document that does not parse."""
    detail = message.replace("JSON is malformed: ", "")
    if detail == "Input data was truncated":
        return None, "not valid JSON: the file ends before the JSON does (was it cut short?)"
    at = re.search(r" \(byte (\d+)\)$", detail)
    if not at:
        return None, f"not valid JSON ({detail})"
    byte = int(at.group(1))
    return data.count(b"\n", 0, byte) + 1, f"not valid JSON ({detail[: at.start()]}); {mend}"
