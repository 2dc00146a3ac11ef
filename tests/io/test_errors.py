"""The io error helpers (``io/_errors.py``): msgspec's decoding errors turned into the
words a user reads (the field, the type it must have, the value it has, how to mend
it), and the small helpers that quote values and names in messages.

Most messages here come from msgspec itself (a real decode of a real line), so a change
of msgspec's wording shows up as a failure here, not as a worse message for users."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from evaldelta.io._errors import (
    TYPE_WORDS,
    explain_decode,
    explain_expected,
    explain_line,
    explain_line_decode,
    explain_validation,
    listed,
    shown,
    value_at,
)


class _Inner(msgspec.Struct):
    x: int | None = None
    ys: list[float] | None = None


class _Rec(msgspec.Struct):
    """Fields of the types the readers decode, all optional (as a reader's are)."""

    test_id: str | int | None = None
    score: float | None = None
    scores: dict[str, float | None] | None = None
    passed: bool | None = None
    items: list[int] | None = None
    inner: _Inner | None = None


_DECODER = msgspec.json.Decoder(_Rec)


def _validation(data: bytes) -> str:
    """msgspec's validation message for ``data`` decoded as a :class:`_Rec`."""
    with pytest.raises(msgspec.ValidationError) as info:
        _DECODER.decode(data)
    return str(info.value)


def _malformed(data: bytes) -> str:
    """msgspec's message for ``data`` that is not JSON."""
    with pytest.raises(msgspec.DecodeError) as info:
        msgspec.json.decode(data)
    assert not isinstance(info.value, msgspec.ValidationError)
    return str(info.value)


# -- the small helpers ---------------------------------------------------------------------


def test_type_words() -> None:
    assert TYPE_WORDS == {
        "float": "a number",
        "int": "an integer",
        "str": "a string",
        "bool": "true or false",
        "object": "a JSON object",
        "array": "a list",
    }


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("high", '"high"'),
        (True, "true"),
        (None, "null"),
        (1.0, "1.0"),
        (-0.0, "-0.0"),
        (2**70, "1180591620717411303424"),
        ({"b": 1, "a": [1, 2]}, '{"b":1,"a":[1,2]}'),  # as written, no spacing
        ("café ☕", '"café ☕"'),  # not escaped
        ('say "hi"\n', '"say \\"hi\\"\\n"'),
    ],
)
def test_shown_is_the_value_as_json(value: Any, text: str) -> None:
    assert shown(value) == text


def test_shown_cuts_a_long_value_to_the_width() -> None:
    assert shown("x" * 58) == '"' + "x" * 58 + '"'  # 60 characters: kept whole
    assert shown("x" * 59) == '"' + "x" * 56 + "..."  # 61: cut to 60
    assert len(shown("x" * 1000)) == 60
    assert shown("abcdefghij", width=8) == '"abcd...'
    assert shown("abcdefghij", width=8, cut="…") == '"abcdef…'
    assert shown([1, 2, 3], width=7) == "[1,2,3]"


@pytest.mark.parametrize(
    ("names", "last", "text"),
    [
        (["a"], "or", '"a"'),
        (["a", "b"], "or", '"a" or "b"'),
        (["a", "b", "c"], "or", '"a", "b" or "c"'),
        (["score", "passed", "error"], "and", '"score", "passed" and "error"'),
    ],
)
def test_listed(names: list[str], last: str, text: str) -> None:
    assert listed(names, last) == text


def test_listed_says_or_by_default() -> None:
    assert listed(("x", "y")) == '"x" or "y"'


@pytest.mark.parametrize(
    ("data", "path", "text"),
    [
        (b'{"score": "high"}', "score", '"high"'),
        (b'{"a": {"b": [{"c": 5}, {"c": [1, 2]}]}}', "a.b[1].c", "[1,2]"),
        (b'{"a": [10, 20]}', "a[0]", "10"),
        (b'{"a": null}', "a", "null"),
        (b'{"a": 1}', "", '{"a":1}'),  # no path: the whole value
        (b'{"a": "' + b"y" * 100 + b'"}', "a", '"' + "y" * 56 + "..."),
    ],
)
def test_value_at(data: bytes, path: str, text: str) -> None:
    assert value_at(data, path) == text


@pytest.mark.parametrize(
    ("data", "path"),
    [
        (b'{"a": 1}', "b"),  # no such key
        (b'{"a": [1]}', "a[3]"),  # no such index
        (b'{"a": 1}', "a.b"),  # not an object
        (b"not json", "a"),
        (b'{"a": 1e999}', "a"),  # msgspec will not decode it
    ],
)
def test_value_at_says_so_when_the_value_cannot_be_found(data: bytes, path: str) -> None:
    assert value_at(data, path) == "a value of the wrong type"


# -- explain_line: a line of JSON Lines of the wrong shape ---------------------------------


@pytest.mark.parametrize(
    ("line", "text"),
    [
        (b'{"score": "high"}', '"score" must be a number, got "high"'),
        (b'{"score": true}', '"score" must be a number, got true'),
        (b'{"score": {}}', '"score" must be a number, got {}'),
        (b'{"score": 1e999}', '"score" must be a finite number, got a number out of range'),
        # a string before an integer, whatever order msgspec names them in
        (b'{"test_id": [1]}', '"test_id" must be a string or an integer, got [1]'),
        (b'{"test_id": 1.5}', '"test_id" must be a string or an integer, got 1.5'),
        (b'{"passed": "yes"}', '"passed" must be true or false, got "yes"'),
        (b'{"items": [1, "z"]}', '"items[1]" must be an integer, got "z"'),
        (b'{"items": {"a": 1}}', '"items" must be a list, got {"a":1}'),
        (b'{"inner": {"x": 1.5}}', '"inner.x" must be an integer, got 1.5'),
        (b'{"inner": {"ys": [1, "q"]}}', '"inner.ys[1]" must be a number, got "q"'),
        (b'{"inner": 3}', '"inner" must be a JSON object, got 3'),
        (b'{"scores": {"a": "b"}}', 'values in "scores" must each be a number, got {"a":"b"}'),
        (
            b'{"scores": {"a": 1e999}}',
            'values in "scores" must each be a finite number, got a number out of range',
        ),
        (
            b'{"score": "' + b"x" * 100 + b'"}',
            '"score" must be a number, got "' + "x" * 56 + "...",
        ),
    ],
)
def test_explain_line_names_the_field_the_type_and_the_value(line: bytes, text: str) -> None:
    assert explain_line(_validation(line), line) == text


@pytest.mark.parametrize(
    ("line", "got"),
    [
        (b"[1, 2]", "a list"),
        (b'"text"', "a string"),
        (b"3", "an integer"),
        (b"1.5", "a number"),
        (b"true", "true or false"),
        (b"null", "null"),
    ],
)
def test_explain_line_of_a_line_that_is_not_an_object(line: bytes, got: str) -> None:
    assert explain_line(_validation(line), line) == (
        f"expected a JSON object, got {got}; each line must be one JSON object"
    )


def test_explain_line_words_a_type_it_does_not_know_as_msgspec_names_it() -> None:
    message = "Expected `datetime | null`, got `int` - at `$.when`"
    assert explain_line(message, b'{"when": 5}') == '"when" must be datetime, got 5'


def test_explain_line_names_a_mapping_inside_a_list() -> None:
    message = "Expected `float`, got `str` - at `$.runs[0].scores[...]`"
    line = b'{"runs": [{"scores": {"a": "b"}}]}'
    assert explain_line(message, line) == (
        'values in "runs[0].scores" must each be a number, got {"a":"b"}'
    )


# -- explain_line_decode: a line that is not JSON ------------------------------------------


@pytest.mark.parametrize(
    ("line", "text"),
    [
        (
            b'{"score": NaN}',
            '"score" must be a finite number, got NaN '
            '(not valid JSON; write a number, or null with an "error")',
        ),
        (
            b'{"score":-Infinity}',
            '"score" must be a finite number, got -Infinity '
            '(not valid JSON; write a number, or null with an "error")',
        ),
        (
            b'{"latency_ms" :  Infinity, "score": 1}',
            '"latency_ms" must be a finite number, got Infinity '
            '(not valid JSON; write a number, or null with an "error")',
        ),
        (
            b'{"score": inf}',
            '"score" must be a finite number, got inf '
            '(not valid JSON; write a number, or null with an "error")',
        ),
        (
            b'{"score": -inf}',
            '"score" must be a finite number, got -inf '
            '(not valid JSON; write a number, or null with an "error")',
        ),
        (
            b'{"score": -nan}',
            '"score" must be a finite number, got -nan '
            '(not valid JSON; write a number, or null with an "error")',
        ),
        (
            b'{"score": nan}',  # msgspec reads it as a null and reports the byte after
            '"score" must be a finite number, got nan '
            '(not valid JSON; write a number, or null with an "error")',
        ),
        (
            b'{"score":nan,"x":1}',
            '"score" must be a finite number, got nan '
            '(not valid JSON; write a number, or null with an "error")',
        ),
        (
            b'{"a": [1, nan]}',
            "a number must be a finite number, got nan "
            '(not valid JSON; write a number, or null with an "error")',
        ),
        (
            b'{"a": [1, NaN]}',  # no key right before it: "a number"
            "a number must be a finite number, got NaN "
            '(not valid JSON; write a number, or null with an "error")',
        ),
        (
            b'{"a": 1}}',
            "more than one JSON value on the line; each line must be one JSON object",
        ),
        (
            b'{"a": 1}{"b": 2}',
            "more than one JSON value on the line; each line must be one JSON object",
        ),
        (
            b"{'a': 1}",
            "not valid JSON (object keys must be strings at column 2); "
            "each line must be one JSON object",
        ),
        (
            b'{"x": 1 2}',
            "not valid JSON (expected ',' or '}' at column 9); each line must be one JSON object",
        ),
        (
            b'{"score": 1.}',
            "not valid JSON (invalid number at column 13); each line must be one JSON object",
        ),
        (
            b'{"test_id": "a", "score": ',
            "not valid JSON (the line ends before the JSON object does); "
            "each line must be one JSON object",
        ),
        (
            b"{",
            "not valid JSON (the line ends before the JSON object does); "
            "each line must be one JSON object",
        ),
    ],
)
def test_explain_line_decode(line: bytes, text: str) -> None:
    assert explain_line_decode(_malformed(line), line) == text


@pytest.mark.parametrize(
    ("line", "column"),
    [
        (b'{"score": nope}', 11),  # the column of the n, not the byte after "nope"
        (b'{"score": nul}', 11),
        (b'{"score": nano}', 11),  # not "nan"
        (b'{"passed": tru}', 12),
        (b'{"passed": fals}', 12),
        (b'{"passed": Tru}', 12),
        (b'{"an": x}', 8),  # an n ending a key starts no value
    ],
)
def test_explain_line_decode_names_the_column_where_the_bad_value_starts(
    line: bytes, column: int
) -> None:
    assert explain_line_decode(_malformed(line), line) == (
        f"not valid JSON (invalid character at column {column}); each line must be one JSON object"
    )
    assert column <= len(line)


class _OnlyScore(msgspec.Struct):
    score: float | None = None


@pytest.mark.parametrize(
    ("line", "text"),
    [
        (
            b'{"score": 1, "note": nan}',
            '"note" must be a finite number, got nan (not valid JSON; write a number, or null '
            'with an "error")',
        ),
        (
            b'{"score": 1, "note": nope}',
            "not valid JSON (invalid character at column 22); each line must be one JSON object",
        ),
        (
            b'{"score": 1, "note": [1, tru]}',
            "not valid JSON (invalid character at column 26); each line must be one JSON object",
        ),
    ],
)
def test_a_bad_value_in_a_field_the_record_skips_is_named_where_it_starts(
    line: bytes, text: str
) -> None:
    # msgspec skips an unknown field unread and reports its bad word one byte in
    with pytest.raises(msgspec.DecodeError) as info:
        msgspec.json.decode(line, type=_OnlyScore)
    assert explain_line_decode(str(info.value), line) == text


def test_explain_line_decode_of_a_key_that_is_not_utf8() -> None:
    line = b'{"sc\xffore": NaN}'
    message = "JSON is malformed: invalid character (byte 11)"
    assert explain_line_decode(message, line) == (
        '"sc\ufffdore" must be a finite number, got NaN '
        '(not valid JSON; write a number, or null with an "error")'
    )


def test_explain_line_decode_of_a_message_without_a_position() -> None:
    assert explain_line_decode("JSON is malformed: something odd", b"{}") == (
        "not valid JSON (something odd); each line must be one JSON object"
    )


# -- explain_validation: a document (or line) of the wrong shape, with how to mend it ------


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b'{"score": "high"}', '"score" must be a number, got "high"; re-export it'),
        (b'{"passed": 1}', '"passed" must be true or false, got 1; re-export it'),
        (b'{"items": [1, "z"]}', '"items[1]" must be an integer, got "z"; re-export it'),
        (b'{"inner": {"x": "1"}}', '"inner.x" must be an integer, got "1"; re-export it'),
    ],
)
def test_explain_validation_names_the_field_and_the_mend(data: bytes, text: str) -> None:
    message = _validation(data)
    assert explain_validation(message, data, not_an_object="is it a log?", mend="re-export it") == (
        text
    )


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b'{"score": 1e999}', '"score" must be a finite number, got a number out of range'),
        (b'{"score": -1e999}', '"score" must be a finite number, got a number out of range'),
        (
            b'{"inner": {"x": 1e400}}',
            '"inner.x" must be a finite number, got a number out of range',
        ),
        (
            b'{"scores": {"a": 1e999}}',
            'values in "scores" must each be a finite number, got a number out of range',
        ),
    ],
)
def test_explain_validation_of_a_number_out_of_range(data: bytes, text: str) -> None:
    """Worded as explain_line words it, not as a value of the wrong type."""
    message = _validation(data)
    assert message.startswith("Number out of range")
    assert explain_validation(message, data, not_an_object="-", mend="re-export it") == (
        f"{text}; re-export it"
    )


def test_explain_validation_names_the_values_of_a_mapping() -> None:
    """msgspec's ``[...]`` (a key of the mapping) is not shown: its values are named."""
    data = b'{"scores": {"a": "b"}}'
    message = _validation(data)
    assert message == "Expected `float | null`, got `str` - at `$.scores[...]`"
    assert explain_validation(message, data, not_an_object="-", mend="re-export it") == (
        'values in "scores" must each be a number, got {"a":"b"}; re-export it'
    )
    assert explain_validation(message, data, not_an_object="-", prefix="data.") == (
        'values in "data.scores" must each be a number, got {"a":"b"}'
    )


def test_explain_validation_names_the_types_in_explain_lines_order() -> None:
    """A string before an integer, whatever order msgspec names them in."""
    data = b'{"test_id": [1]}'
    message = _validation(data)
    assert explain_validation(message, data, not_an_object="-") == (
        '"test_id" must be a string or an integer, got [1]'
    )


@pytest.mark.parametrize(
    "line",
    [
        b'{"score": "high"}',
        b'{"score": 1e999}',
        b'{"test_id": 1.5}',
        b'{"items": [1, "z"]}',
        b'{"inner": {"ys": [1, "q"]}}',
        b'{"scores": {"a": "b"}}',
        b'{"scores": {"a": 1e999}}',
        b"[1, 2]",
    ],
)
def test_explain_line_is_explain_validation_of_a_line(line: bytes) -> None:
    message = _validation(line)
    assert explain_line(message, line) == explain_validation(
        message, line, not_an_object="each line must be one JSON object"
    )


def test_explain_validation_without_a_mend_and_with_a_prefix() -> None:
    data = b'{"score": "high"}'
    message = _validation(data)
    assert explain_validation(message, data, not_an_object="-") == (
        '"score" must be a number, got "high"'
    )
    assert explain_validation(message, data, not_an_object="-", prefix="data.") == (
        '"data.score" must be a number, got "high"'
    )


@pytest.mark.parametrize(
    ("data", "got"),
    [(b"[1]", "a list"), (b'"x"', "a string"), (b"3", "an integer"), (b"null", "null")],
)
def test_explain_validation_of_a_document_that_is_not_an_object(data: bytes, got: str) -> None:
    message = _validation(data)
    assert explain_validation(message, data, not_an_object="is it a log?", mend="unused") == (
        f"expected a JSON object, got {got}; is it a log?"
    )


def test_explain_validation_when_the_value_cannot_be_quoted() -> None:
    message = "Expected `str`, got `int` - at `$.a`"
    assert explain_validation(message, b'{"b": 1}', not_an_object="-") == (
        '"a" must be a string, got a value of the wrong type'
    )


# -- explain_decode: a document that is not JSON ----------------------------------------------


def test_explain_decode_names_the_line_of_the_bad_byte() -> None:
    data = b'{\n  "a": 1,\n  "b": ]\n}'
    assert explain_decode(_malformed(data), data, "export it again") == (
        3,
        "not valid JSON (invalid character); export it again",
    )


def test_explain_decode_names_the_line_of_a_misspelt_null() -> None:
    """msgspec reports ``nan`` (read as a null) at the byte after it: on the next line."""
    data = b'{\n  "score": nan\n}'
    assert explain_decode(_malformed(data), data, "export it again") == (
        2,
        "not valid JSON (invalid character); export it again",
    )


def test_explain_decode_of_something_after_the_document() -> None:
    data = b'{"a": 1}\n\n['
    assert explain_decode(_malformed(data), data, "export it again") == (
        3,
        "not valid JSON (trailing characters); export it again",
    )


def test_explain_decode_of_a_document_cut_short() -> None:
    data = b'{\n  "a": [1, 2'
    assert explain_decode(_malformed(data), data, "unused") == (
        None,
        "not valid JSON: the file ends before the JSON does (was it cut short?)",
    )


def test_explain_decode_of_a_message_without_a_position() -> None:
    assert explain_decode("JSON is malformed: something odd", b"{}", "unused") == (
        None,
        "not valid JSON (something odd)",
    )


# -- explain_expected: a validation message read without the document ---------------------


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b'{"score": "high"}', '"score" must be a number, got a string; mend it'),
        (b'{"passed": {}}', '"passed" must be true or false, got a JSON object; mend it'),
        (b'{"items": [1, 2.5]}', '"items[1]" must be an integer, got a number; mend it'),
        (
            b'{"inner": {"ys": [true]}}',
            '"inner.ys[0]" must be a number, got true or false; mend it',
        ),
        (b'{"scores": {"a": []}}', '"scores[]" must be a number, got a list; mend it'),
        (b"[1]", "expected a JSON object, got a list; mend it"),
    ],
)
def test_explain_expected(data: bytes, text: str) -> None:
    assert explain_expected(_validation(data), what="an eval log", mend="mend it") == text


def test_explain_expected_names_the_whole_document() -> None:
    message = _validation(b"[1]")
    assert explain_expected(message, what="-", mend="mend it", whole="the log") == (
        '"the log" must be a JSON object, got a list; mend it'
    )


def test_explain_expected_may_leave_the_mend_off_a_wrong_field() -> None:
    message = _validation(b'{"score": "high"}')
    assert explain_expected(message, what="-", mend="mend it", mend_fields=False) == (
        '"score" must be a number, got a string'
    )
    # ... but not off a document that is not an object
    whole = _validation(b"3")
    assert explain_expected(whole, what="-", mend="mend it", mend_fields=False) == (
        "expected a JSON object, got an integer; mend it"
    )


def test_explain_expected_of_a_field_that_may_only_be_null() -> None:
    message = "Expected `null`, got `int` - at `$.x`"
    assert explain_expected(message, what="-", mend="mend it") == (
        '"x" must be valid, got an integer; mend it'
    )


def test_explain_expected_of_a_message_in_other_words() -> None:
    message = "Object missing required field `version`"
    assert explain_expected(message, what="an Inspect AI log", mend="re-run the eval") == (
        "is not an Inspect AI log as expected (Object missing required field `version`); "
        "re-run the eval"
    )
