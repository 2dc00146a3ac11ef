"""The shared reader layer (``io/_reader.py``): the reader contract and the ``reader``
wrapper, reading a file's content, decoding a JSON document or JSON Lines and naming
what is wrong (with file and line), the extra columns asked for, what an ``error``
field says, and scores filled in from the scorers."""

from __future__ import annotations

import gzip
import json
import math
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest

from evaldelta.errors import ParseError
from evaldelta.io._reader import (
    NESTED,
    NO_RECORDS,
    RAW_NONE,
    ReaderModule,
    ReadOptions,
    decode_by_line,
    decode_document,
    decode_lines,
    decoded,
    error_text,
    extra_columns,
    fill_scores,
    one_object_per_line,
    read_content,
    reader,
    struct_extra_columns,
    with_extra_fields,
)

#: Nested deeper than msgspec (and Python) follows.
TOO_DEEP = b"[" * 100_000 + b"]" * 100_000


class _Doc(msgspec.Struct):
    score: float | None = None
    name: str | None = None


class _Base(msgspec.Struct, gc=False):
    a: int | None = None
    meta: msgspec.Raw = RAW_NONE


_DOC = msgspec.json.Decoder(_Doc)
_ANY = msgspec.json.Decoder()


def _explain(err: ValueError, line: bytes) -> str:
    """An ``explain`` that shows what it was given."""
    return f"{type(err).__name__} on {line.decode()}"


# -- the constants -----------------------------------------------------------------------------


def test_the_constants() -> None:
    assert isinstance(RAW_NONE, msgspec.Raw)
    assert len(RAW_NONE) == 0
    assert NO_RECORDS == "no records to compare; check the eval wrote its results"
    assert NESTED == (
        "JSON nested too deeply (arrays or objects inside one another beyond the decoder's "
        "limit); no results file needs that: check how the file was written"
    )


# -- the contract and the reader wrapper -----------------------------------------------------


def test_read_options() -> None:
    options = ReadOptions(False, ("a",), {"score": "s"})
    assert options.keep_text is False
    assert options.extra == ("a",)
    assert options.mapping == {"score": "s"}
    keep_text, extra, mapping = options
    assert (keep_text, extra, mapping) == (False, ("a",), {"score": "s"})


def test_a_module_with_name_sniff_and_read_is_a_reader_module() -> None:
    module = types.ModuleType("fake_reader")
    module.NAME = "fake"  # type: ignore[attr-defined]
    module.sniff = lambda path, head: False  # type: ignore[attr-defined]
    module.read = lambda path, **options: None  # type: ignore[attr-defined]
    assert isinstance(module, ReaderModule)
    del module.sniff  # type: ignore[attr-defined]
    assert not isinstance(module, ReaderModule)


def _recording_reader() -> tuple[Any, list[tuple[Path, ReadOptions]]]:
    seen: list[tuple[Path, ReadOptions]] = []

    def read_fake(path: Path, options: ReadOptions) -> Any:
        """Read a fake file."""
        seen.append((path, options))
        return "the run"

    return reader(read_fake), seen


def test_reader_passes_the_options_with_their_defaults() -> None:
    read, seen = _recording_reader()
    assert read(Path("r.jsonl")) == "the run"
    assert seen == [(Path("r.jsonl"), ReadOptions(True, (), {}))]


def test_reader_keeps_each_extra_field_once_in_order_and_copies_the_mapping() -> None:
    read, seen = _recording_reader()
    mapping = {"score": "points"}
    read(Path("r.csv"), keep_text=False, extra_fields=["b", "a", "b", "c", "a"], mapping=mapping)
    ((_, options),) = seen
    assert options == ReadOptions(False, ("b", "a", "c"), {"score": "points"})
    assert options.mapping is not mapping


def test_reader_keeps_the_name_and_the_doc_of_the_function() -> None:
    read, _ = _recording_reader()
    assert read.__name__ == "read_fake"
    assert read.__qualname__.endswith("read_fake")
    assert read.__module__ == __name__
    assert read.__doc__ == "Read a fake file."


def test_reader_names_a_value_nested_too_deeply() -> None:
    def read_deep(path: Path, options: ReadOptions) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    with pytest.raises(ParseError) as info:
        reader(read_deep)(Path("deep.json"))
    assert (info.value.path, info.value.line, info.value.reason) == ("deep.json", None, NESTED)
    assert str(info.value) == f"deep.json: {NESTED}"
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__ is True


def test_reader_lets_other_errors_through() -> None:
    def read_bad(path: Path, options: ReadOptions) -> Any:
        raise ParseError(str(path), 3, "bad line")

    with pytest.raises(ParseError, match=r"^x.jsonl:3: bad line$"):
        reader(read_bad)(Path("x.jsonl"))


# -- read_content --------------------------------------------------------------------------------


def test_read_content_gives_the_name_and_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(b'{"a": "caf\xc3\xa9"}\n')
    assert read_content(path) == (str(path), b'{"a": "caf\xc3\xa9"}\n')


def test_read_content_drops_a_byte_order_mark_and_gunzips(tmp_path: Path) -> None:
    path = tmp_path / "r.json.gz"
    path.write_bytes(gzip.compress(b'\xef\xbb\xbf{"a": 1}'))
    assert read_content(path) == (str(path), b'{"a": 1}')


@pytest.mark.parametrize(
    "content",
    [b"", b"\n", b" \t\r\n  \n", b"\xef\xbb\xbf", gzip.compress(b""), gzip.compress(b"\n\n")],
    ids=["empty", "a line break", "whitespace", "a byte-order mark", "gzip", "gzip of blanks"],
)
def test_read_content_of_a_file_with_nothing_in_it(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(content)
    with pytest.raises(ParseError) as info:
        read_content(path)
    assert info.value.line is None
    assert str(info.value) == (
        f"{path}: is empty: no records to compare; check the eval wrote its results"
    )


def test_read_content_says_what_an_empty_file_should_have_held(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(b"")
    with pytest.raises(ParseError) as info:
        read_content(path, "no samples; check the log was saved")
    assert str(info.value) == f"{path}: is empty: no samples; check the log was saved"


def test_read_content_refuses_text_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "caf\xe9"}\n')
    with pytest.raises(ParseError) as info:
        read_content(path)
    assert info.value.line == 2
    assert str(info.value) == (
        f"{path}:2: not valid UTF-8 (byte 0xe9 at column 11); save the file as UTF-8"
    )


# -- decode_document -------------------------------------------------------------------------------


def _decode_document(data: bytes, **mends: str) -> Any:
    return decode_document(
        "doc.json",
        data,
        _DOC,
        not_an_object=mends.get("not_an_object", "is this an export?"),
        mend=mends.get("mend", "export it again"),
        **({"mend_syntax": mends["mend_syntax"]} if "mend_syntax" in mends else {}),
    )


def _document_error(data: bytes, **mends: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        _decode_document(data, **mends)
    return info.value


def test_decode_document() -> None:
    assert _decode_document(b'{"score": 1e3, "name": "caf\\u00e9", "other": [1]}') == _Doc(
        1000.0, "café"
    )


def test_decode_document_names_a_wrong_field_and_how_to_mend_it() -> None:
    error = _document_error(b'{\n  "score": "high"\n}')
    assert (error.path, error.line) == ("doc.json", None)
    assert str(error) == 'doc.json: "score" must be a number, got "high"; export it again'


def test_decode_document_of_a_document_that_is_not_an_object() -> None:
    error = _document_error(b"[1, 2]")
    assert str(error) == "doc.json: expected a JSON object, got a list; is this an export?"


def test_decode_document_names_the_line_of_broken_json() -> None:
    error = _document_error(b'{\n  "score": 1,\n  "name": ]\n}')
    assert (error.line, error.reason) == (3, "not valid JSON (invalid character); export it again")
    assert str(error) == "doc.json:3: not valid JSON (invalid character); export it again"


def test_decode_document_says_broken_json_is_mended_in_its_own_words() -> None:
    error = _document_error(b'{"score": 1,, }', mend_syntax="fix the syntax")
    assert str(error) == "doc.json:1: not valid JSON (object keys must be strings); fix the syntax"
    wrong = _document_error(b'{"score": "x"}', mend_syntax="fix the syntax")
    assert wrong.reason == '"score" must be a number, got "x"; export it again'


def test_decode_document_of_a_document_cut_short() -> None:
    error = _document_error(b'{\n  "score": 1,\n  "name": "ab')
    assert str(error) == (
        "doc.json: not valid JSON: the file ends before the JSON does (was it cut short?)"
    )


def test_decode_document_nested_too_deeply() -> None:
    with pytest.raises(ParseError) as info:
        decode_document("doc.json", TOO_DEEP, _ANY, not_an_object="-", mend="-")
    assert (info.value.line, info.value.reason) == (None, NESTED)


# -- decode_lines and decode_by_line -----------------------------------------------------------


def test_decode_lines_of_one_object_per_line_numbers_them_in_order() -> None:
    found, lines = decode_lines("r.jsonl", b'{"a":1}\r\n{"a":2}\r\n{"a":3}', _ANY, _explain)
    assert found == [{"a": 1}, {"a": 2}, {"a": 3}]
    assert lines == range(1, 4)


def test_decode_lines_numbers_the_lines_around_blank_ones() -> None:
    data = b'\n{"a":1}\n\n   \n{"a":2}\n\n'
    found, lines = decode_lines("r.jsonl", data, _ANY, _explain)
    assert found == [{"a": 1}, {"a": 2}]
    assert list(lines) == [2, 5]


def test_decode_lines_of_a_line_indented() -> None:
    found, lines = decode_lines("r.jsonl", b'{"a":1}\n  {"a":2}\n', _ANY, _explain)
    assert (found, list(lines)) == ([{"a": 1}, {"a": 2}], [1, 2])


@pytest.mark.parametrize(
    ("data", "line", "reason"),
    [
        (b'{"a":1}\n{"a":\n', 2, 'DecodeError on {"a":'),
        (b'{"a":1}\n\n{"a":2}{"a":3}\n', 3, 'DecodeError on {"a":2}{"a":3}'),
        (b'{"a":1}\n{"a":2}\n[3]\n', 3, "ValidationError on [3]"),
        (b'{"score":"x"}\n', 1, 'ValidationError on {"score":"x"}'),
    ],
)
def test_decode_lines_names_the_line_that_does_not_decode(
    data: bytes, line: int, reason: str
) -> None:
    decoder = msgspec.json.Decoder(_Doc)
    with pytest.raises(ParseError) as info:
        decode_lines("r.jsonl", data, decoder, _explain)
    assert (info.value.path, info.value.line, info.value.reason) == ("r.jsonl", line, reason)
    assert str(info.value) == f"r.jsonl:{line}: {reason}"


def test_decode_lines_decodes_line_by_line_with_the_decode_given() -> None:
    """The careful path decodes with ``decode`` (lm-eval's NaN, which only ``json``
    reads); the quick path never sees it."""
    data = b'{"a": 1}\n{"a": NaN}\n'
    found, lines = decode_lines("r.jsonl", data, _ANY, _explain, json.loads)
    assert found[0] == {"a": 1}
    assert math.isnan(found[1]["a"])
    assert list(lines) == [1, 2]


def test_decode_lines_of_nothing_but_blank_lines() -> None:
    assert decode_lines("r.jsonl", b"\n \n\t\n", _ANY, _explain) == ([], [])


def test_decode_lines_names_a_line_nested_too_deeply() -> None:
    data = b'{"a": 1}\n' + TOO_DEEP + b"\n"
    with pytest.raises(ParseError) as info:
        decode_lines("r.jsonl", data, _ANY, _explain)
    assert (info.value.line, info.value.reason) == (2, NESTED)


def test_decode_by_line_counts_from_the_first_line_given() -> None:
    data = b'{"a":1}\n\n{"a":2}'
    assert decode_by_line("r.jsonl", data, _ANY.decode, _explain, first_line=41) == (
        [{"a": 1}, {"a": 2}],
        [41, 43],
    )


def test_decode_by_line_names_a_bad_line_counted_from_the_first_line_given() -> None:
    with pytest.raises(ParseError) as info:
        decode_by_line("r.jsonl", b'{"a":1}\n\n{"a"}\n', _ANY.decode, _explain, first_line=41)
    assert str(info.value) == 'r.jsonl:43: DecodeError on {"a"}'


def test_decode_by_line_explains_the_errors_of_json_too() -> None:
    def explain(err: ValueError, line: bytes) -> str:
        return f"{type(err).__name__}: {err}"

    with pytest.raises(ParseError) as info:
        decode_by_line("r.jsonl", b"{}\n{x}\n", json.loads, explain)
    assert str(info.value) == (
        "r.jsonl:2: JSONDecodeError: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)"
    )


def test_decode_by_line_names_a_line_nested_too_deeply() -> None:
    with pytest.raises(ParseError) as info:
        decode_by_line("r.jsonl", b"{}\n\n" + TOO_DEEP, _ANY.decode, _explain, first_line=7)
    assert (info.value.line, info.value.reason) == (9, NESTED)


@pytest.mark.parametrize(
    ("data", "n", "expected"),
    [
        (b'{"a":1}\n{"a":2}\n', 2, True),
        (b'{"a":1}\n{"a":2}', 2, True),
        (b'{"a":1}\r\n{"a":2}\r\n', 2, True),
        (b'{"a":1}\n{"a":2}\n', 3, False),
        (b'{"a":1}\n\n{"a":2}\n', 2, False),
        (b' {"a":1}\n', 1, False),
        (b'{"a":1}{"a":2}\n', 2, False),
        (b"", 0, False),
    ],
)
def test_one_object_per_line(data: bytes, n: int, expected: bool) -> None:
    assert one_object_per_line(data, n) is expected


# -- decoded, error_text ---------------------------------------------------------------------


def test_decoded() -> None:
    assert decoded(RAW_NONE) is None
    assert decoded(msgspec.Raw(b"null")) is None
    assert decoded(msgspec.Raw(b'{"a": [1, "x"]}')) == {"a": [1, "x"]}
    assert decoded(msgspec.Raw(b"-0.0")) == 0.0
    assert math.copysign(1.0, decoded(msgspec.Raw(b"-0.0"))) == -1.0


@pytest.mark.parametrize("value", [None, False, "", {}, []])
def test_error_text_of_no_error(value: Any) -> None:
    assert error_text(value) is None


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("timeout after 60s", "timeout after 60s"),
        ({"message": "judge flaked", "code": 500}, "judge flaked"),
        ({"message": 500}, '{"message":500}'),
        ({"code": 500}, '{"code":500}'),
        (["boom", 1], '["boom",1]'),
        (True, "true"),
        (0, "0"),
        (1.5, "1.5"),
        (" ", " "),
    ],
)
def test_error_text(value: Any, text: str) -> None:
    assert error_text(value) == text


# -- the extra fields asked for ----------------------------------------------------------------


def test_with_extra_fields_returns_the_base_when_it_has_every_field() -> None:
    assert with_extra_fields(_Base, ["a", "meta"], "_X") is _Base
    assert with_extra_fields(_Base, [], "_X") is _Base


def test_with_extra_fields_adds_the_fields_it_lacks_in_order() -> None:
    struct = with_extra_fields(_Base, ["doc-id", "a", "split"], "_BaseExtra")
    assert struct.__name__ == "_BaseExtra"
    assert issubclass(struct, _Base)
    assert struct.__struct_fields__ == ("a", "meta", "extra_0", "extra_1")
    assert struct.__struct_encode_fields__ == ("a", "meta", "doc-id", "split")  # type: ignore[attr-defined]
    record: Any = msgspec.json.decode(
        b'{"a": 1, "doc-id": {"n": 7}, "other": 3, "split": "test"}', type=struct
    )
    assert (record.a, record.extra_0, record.extra_1) == (1, {"n": 7}, "test")
    absent: Any = msgspec.json.decode(b"{}", type=struct)
    assert (absent.extra_0, absent.extra_1) == (None, None)


def test_struct_extra_columns() -> None:
    struct = with_extra_fields(_Base, ["doc-id", "meta", "a"], "_BaseExtra")
    records = msgspec.json.Decoder(list[struct]).decode(  # type: ignore[valid-type]
        b'[{"a": 1, "doc-id": "d1", "meta": {"k": 1}}, {"doc-id": null, "meta": [2]}, {}]'
    )
    asked: list[tuple[int | None, str]] = []

    def fallback(record: Any, name: str) -> Any:
        asked.append((record.a, name))
        return f"fallback {name}"

    columns = struct_extra_columns(records, ["doc-id", "meta", "a", "nowhere"], fallback)
    assert columns == {
        "doc-id": ["d1", "fallback doc-id", "fallback doc-id"],
        "meta": [{"k": 1}, [2], "fallback meta"],  # kept raw, decoded here
        "a": [1, "fallback a", "fallback a"],
        "nowhere": ["fallback nowhere"] * 3,
    }
    assert list(columns) == ["doc-id", "meta", "a", "nowhere"]
    assert asked[:2] == [(None, "doc-id"), (None, "doc-id")]


def test_struct_extra_columns_of_no_records() -> None:
    assert struct_extra_columns([], ["a", "b"], lambda r, n: 1) == {"a": [], "b": []}


def test_extra_columns_look_in_the_object_then_in_its_places_in_order() -> None:
    objects: list[Any] = [
        {"doc": "own", "metadata": {"doc": "meta"}},
        {"metadata": {"doc": "meta"}, "vars": {"doc": "vars"}},
        {"metadata": "not an object", "vars": {"doc": "vars"}},
        {"doc": None, "metadata": {"doc": "meta"}},  # its own key, even null, wins
        {"metadata": {}},
        ["not", "an", "object"],
        None,
    ]

    def places(obj: dict[str, Any]) -> list[Any]:
        return [obj.get("metadata"), obj.get("vars")]

    assert extra_columns(objects, ["doc", "missing", "doc"], places) == {
        "doc": ["own", "meta", "vars", None, None, None, None],
        "missing": [None] * 7,
    }


def test_extra_columns_of_nothing_asked() -> None:
    assert extra_columns([{"a": 1}], [], lambda o: ()) == {}


# -- fill_scores ---------------------------------------------------------------------------------


def _missing(i: int) -> ParseError:
    return ParseError("r.jsonl", i + 1, f"record {i} has no score")


def test_fill_scores_returns_the_list_itself_when_no_score_is_missing() -> None:
    scores: list[Any] = [0.5, 0.0]
    assert fill_scores(scores, {"x": [None, None]}, {}, _missing) is scores


def test_fill_scores_takes_the_mean_of_the_scorers_then_zero_for_an_error() -> None:
    scores: list[Any] = [None, 0.25, None, None]
    scorers: Mapping[str, Sequence[float | None]] = {
        "exact": [1.0, 0.0, None, None],
        "judge": [0.5, 1.0, 0.25, None],
    }
    filled = fill_scores(scores, scorers, {3: "timeout"}, _missing)
    assert filled == [0.75, 0.25, 0.25, 0.0]
    assert filled is scores  # filled in place


def test_fill_scores_prefers_the_scorers_to_the_error() -> None:
    assert fill_scores([None], {"x": [0.5]}, {0: "boom"}, _missing) == [0.5]


def test_fill_scores_raises_for_the_first_record_with_neither() -> None:
    scores: list[Any] = [1.0, None, None]
    with pytest.raises(ParseError) as info:
        fill_scores(scores, {"x": [None, None, None]}, {2: "boom"}, _missing)
    assert str(info.value) == "r.jsonl:2: record 1 has no score"
