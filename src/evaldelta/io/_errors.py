"""Turning msgspec's decoding errors into messages a user can act on, for every
reader of a JSON-based format: what is wrong, at which field, and how to mend it."""

from __future__ import annotations

import re
from collections.abc import Sequence
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

#: The order in which a message names the types a field may have: the most useful
#: first (a string before an integer for ids).
_TYPE_ORDER = ("str", "float", "int", "bool", "object", "array")


def shown(value: Any, width: int = 60, cut: str = "...") -> str:
    """A value as JSON text, cut to ``width`` characters (ending in ``cut``), for an
    error message."""
    text = msgspec.json.encode(value).decode()
    return text if len(text) <= width else text[: width - len(cut)] + cut


def listed(names: Sequence[str], last: str = "or") -> str:
    """Names in quotes, the last joined by ``last``: ``"a", "b" or "c"``."""
    quoted = [f'"{n}"' for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} {last} {quoted[-1]}"


def value_at(data: bytes, path: str) -> str:
    """The value at a JSON path (``a.b[0].c``), as JSON text, for an error message."""
    try:
        value: Any = msgspec.json.decode(data)
        for key, index in re.findall(r"(\w+)|\[(\d+)\]", path):
            value = value[key] if key else value[int(index)]
    except Exception:  # the message is still right without the value
        return "a value of the wrong type"
    return shown(value)


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
    path = at.group(1) if at else ""
    reason = message[: at.start()] if at else message
    if not path:
        kind = re.search(r"got `(\w+)`", reason)
        got = TYPE_WORDS.get(kind.group(1), kind.group(1)) if kind else "something else"
        return f"expected a JSON object, got {got}; {not_an_object}"
    said = _field_must_be(reason, path, data, prefix)
    return f"{said}; {mend}" if mend else said


def _field_must_be(reason: str, path: str, data: bytes, prefix: str) -> str:
    """``"field" must be <type>, got <value>`` for msgspec's ``reason`` at ``path``
    (``.a[0].b``): a number too large for its type is named so, and the values of a
    mapping (``[...]`` stands for one of its keys) as the mapping's values."""
    inside_mapping = path.endswith("[...]")
    base = path.removesuffix("[...]").lstrip(".")
    field = prefix + base.replace("[...]", "[]")
    subject = f'values in "{field}"' if inside_mapping else f'"{field}"'
    verb = "must each be" if inside_mapping else "must be"
    if reason.startswith("Number out of range"):
        return f"{subject} {verb} a finite number, got a number out of range"
    expected = re.search(r"Expected `([^`]*)`", reason)
    kinds = [k for k in (expected.group(1).split(" | ") if expected else []) if k != "null"]
    kinds.sort(key=lambda k: _TYPE_ORDER.index(k) if k in _TYPE_ORDER else len(_TYPE_ORDER))
    wanted = " or ".join(TYPE_WORDS.get(k, k) for k in kinds) or "valid"
    return f"{subject} {verb} {wanted}, got {value_at(data, base)}"


def explain_decode(message: str, data: bytes, mend: str) -> tuple[int | None, str]:
    """(line, what) for a JSON document that does not parse."""
    detail = message.replace("JSON is malformed: ", "")
    if detail == "Input data was truncated":
        return None, "not valid JSON: the file ends before the JSON does (was it cut short?)"
    at = re.search(r" \(byte (\d+)\)$", detail)
    if not at:
        return None, f"not valid JSON ({detail})"
    byte = _value_start(data, int(at.group(1)))
    return data.count(b"\n", 0, byte) + 1, f"not valid JSON ({detail[: at.start()]}); {mend}"


#: JSON's words: msgspec compares a value's letters with the word its first letter
#: begins, and reports a mismatch (``nan`` read as ``null``) at the byte after them;
#: in a field it skips unread, at the byte after the first letter.
_WORDS = (b"null", b"true", b"false")


def _value_start(data: bytes, byte: int) -> int:
    """Where the value that msgspec could not read at ``byte`` starts: ``byte``, or the
    first letter of a misspelt ``null``, ``true`` or ``false`` (``nan``, ``tru``)."""
    for word in _WORDS:
        for start in (byte - len(word), byte - 1):
            if start < 0 or data[start] != word[0] or data[start : start + len(word)] == word:
                continue
            before = start - 1
            while before >= 0 and data[before] in b" \t\r\n":
                before -= 1
            if before < 0 or data[before] in b"[:,":  # where a value may start
                return start
    return byte


def explain_expected(
    message: str, *, what: str, mend: str, whole: str | None = None, mend_fields: bool = True
) -> str:
    """A msgspec validation error (``Expected `X`, got `Y` - at `$.path```), read
    without the document: ``"field" must be <type>, got <type>[; mend]``.

    Args:
        what: what the document should have been, for a message msgspec words otherwise.
        mend: how to mend it.
        whole: the name of the document when the whole of it is wrong; ``None`` says
            "expected a JSON object" instead.
        mend_fields: whether a wrong field's message ends with ``mend`` too.
    """
    found = re.match(r"Expected `([^`]*)`, got `([^`]*)`(?: - at `\$(.*)`)?$", message)
    if not found:
        return f"is not {what} as expected ({message}); {mend}"
    expected, got, path = found.groups()
    got_words = TYPE_WORDS.get(got, got)
    if not path and whole is None:
        return f"expected a JSON object, got {got_words}; {mend}"
    kinds = [k for k in expected.split(" | ") if k != "null"]
    wanted = " or ".join(TYPE_WORDS.get(k, k) for k in kinds) or "valid"
    field = (path or "").lstrip(".").replace("[...]", "[]") or whole
    said = f'"{field}" must be {wanted}, got {got_words}'
    return f"{said}; {mend}" if mend_fields else said


def explain_line(message: str, line: bytes) -> str:
    """msgspec's validation message for one line of JSON Lines, naming the field, the
    type it must have and the value it has."""
    return explain_validation(message, line, not_an_object="each line must be one JSON object")


def explain_line_decode(message: str, line: bytes) -> str:
    """Why a line is not JSON, naming NaN and Infinity, which JSON has no room for."""
    detail = message.replace("JSON is malformed: ", "")
    if detail == "Input data was truncated":
        return (
            "not valid JSON (the line ends before the JSON object does); "
            "each line must be one JSON object"
        )
    at = re.search(r" \(byte (\d+)\)$", detail)
    if at:
        byte = _value_start(line, int(at.group(1)))
        if byte > 0 and line[byte - 1 : byte] == b"-":
            byte -= 1  # the sign belongs to the token
        token = re.match(rb"-?(NaN|Infinity|inf|nan)(?!\w)", line[byte:])
        if token:
            key = re.search(rb'"([^"]*)"\s*:\s*$', line[:byte])
            field = f'"{key.group(1).decode(errors="replace")}" ' if key else "a number "
            return (
                f"{field}must be a finite number, got {token.group(0).decode()} "
                '(not valid JSON; write a number, or null with an "error")'
            )
        if detail.startswith("trailing characters"):
            return "more than one JSON value on the line; each line must be one JSON object"
        detail = f"{detail[: at.start()]} at column {byte + 1}"
    return f"not valid JSON ({detail}); each line must be one JSON object"
