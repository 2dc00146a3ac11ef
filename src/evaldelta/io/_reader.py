"""The shared reader layer: the contract every reader meets, and what readers do alike
(read a file's content, decode a JSON document or JSON Lines and name what is wrong,
take the extra fields asked for, fill in a score from the scorers)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar, runtime_checkable

import msgspec

from evaldelta.errors import ParseError
from evaldelta.io._errors import explain_decode, explain_validation
from evaldelta.io._source import check_utf8, read_bytes

if TYPE_CHECKING:
    from evaldelta.model import Run

#: The value of a ``msgspec.Raw`` field the file does not have.
RAW_NONE = msgspec.Raw(b"")

#: What an empty results file is told, for a reader whose file holds records.
NO_RECORDS = "no records to compare; check the eval wrote its results"

_T = TypeVar("_T")


class ReadOptions(NamedTuple):
    """What a caller asks of a reader: whether to keep the text fields, the further
    fields to keep (each once, in order), and ``--map``'s field -> column or path."""

    keep_text: bool
    extra: tuple[str, ...]
    mapping: dict[str, str]


class ReadFunction(Protocol):
    """A reader's ``read``: the run of the file at ``path``."""

    def __call__(
        self,
        path: Path,
        *,
        keep_text: bool = True,
        extra_fields: Sequence[str] = (),
        mapping: Mapping[str, str] | None = None,
    ) -> Run: ...


@runtime_checkable
class ReaderModule(Protocol):
    """What a reader module provides (``tests/io/test_contract.py`` holds each to it).

    - ``NAME``: the name users give to ``--input-format``;
    - ``sniff(path, head)``: whether the file is in this format, from its path and its
      first 64 KiB (gunzipped); ``path`` may be a directory (``head`` is then ``b""``);
    - ``read(path, *, keep_text, extra_fields, mapping)``: the run (see
      :class:`ReadOptions`); readers of fixed formats ignore ``mapping`` (``--map``).
    """

    NAME: str
    read: ReadFunction

    def sniff(self, path: Path, head: bytes) -> bool: ...


#: What a value nested deeper than the decoder (and Python) can follow is called.
NESTED = (
    "JSON nested too deeply (arrays or objects inside one another beyond the decoder's "
    "limit); no results file needs that: check how the file was written"
)


def reader(read: Callable[[Path, ReadOptions], Run]) -> ReadFunction:
    """A reader's ``read`` with the keyword arguments of :class:`ReadFunction`, from a
    function of the path and the :class:`ReadOptions` (each reader writes only that)."""

    def read_file(
        path: Path,
        *,
        keep_text: bool = True,
        extra_fields: Sequence[str] = (),
        mapping: Mapping[str, str] | None = None,
    ) -> Run:
        options = ReadOptions(keep_text, tuple(dict.fromkeys(extra_fields)), dict(mapping or {}))
        try:
            return read(path, options)
        except RecursionError:  # a nested value decoded after its line was read
            raise ParseError(str(path), None, NESTED) from None

    read_file.__name__ = read.__name__
    read_file.__qualname__ = read.__qualname__
    read_file.__module__ = read.__module__
    read_file.__doc__ = read.__doc__
    return read_file


def read_content(path: Path, nothing: str = NO_RECORDS) -> tuple[str, bytes]:
    """The file's name (for messages) and content; a file with nothing in it is named,
    ``"is empty: <nothing>"``."""
    data = read_bytes(path)
    src = str(path)
    if not data or data.isspace():
        raise ParseError(src, None, f"is empty: {nothing}")
    check_utf8(src, data)
    return src, data


def decode_document(
    src: str,
    data: bytes,
    decoder: msgspec.json.Decoder[_T],
    *,
    not_an_object: str,
    mend: str,
    mend_syntax: str | None = None,
) -> _T:
    """One JSON document, decoded; a wrong field or broken JSON is named, with how to
    mend it (``mend_syntax`` for broken JSON, when it is said differently)."""
    try:
        return decoder.decode(data)
    except RecursionError:
        raise ParseError(src, None, NESTED) from None
    except msgspec.ValidationError as err:
        message = explain_validation(str(err), data, not_an_object=not_an_object, mend=mend)
        raise ParseError(src, None, message) from None
    except msgspec.DecodeError as err:
        line, message = explain_decode(str(err), data, mend_syntax or mend)
        raise ParseError(src, line, message) from None


#: ``explain(error, line)``: what is wrong with a line that does not decode.
Explain = Callable[[ValueError, bytes], str]


def decode_lines(
    src: str,
    data: bytes,
    decoder: msgspec.json.Decoder[Any],
    explain: Explain,
    decode: Callable[[bytes], Any] | None = None,
) -> tuple[list[Any], Sequence[int]]:
    """Every line of JSON Lines, decoded, and its line number: all at once when each
    line is plainly one object, else line by line (see :func:`decode_by_line`)."""
    try:
        found: list[Any] = decoder.decode_lines(data)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        found = []  # the line-by-line reading names the bad line
    if found and one_object_per_line(data, len(found)):
        return found, range(1, len(found) + 1)
    return decode_by_line(src, data, decode or decoder.decode, explain)


def decode_by_line(
    src: str,
    data: bytes,
    decode: Callable[[bytes], Any],
    explain: Explain,
    first_line: int = 1,
) -> tuple[list[Any], list[int]]:
    """Decode line by line, blank lines skipped, so that every record knows its line
    and a line that does not decode is named, with ``explain``'s words."""
    found: list[Any] = []
    numbers: list[int] = []
    for number, line in enumerate(data.split(b"\n"), start=first_line):
        if not line.strip():
            continue
        try:
            found.append(decode(line))
        except ValueError as err:  # msgspec's errors, and json's for lm-eval's NaN
            raise ParseError(src, number, explain(err, line)) from None
        except RecursionError:
            raise ParseError(src, number, NESTED) from None
        numbers.append(number)
    return found, numbers


def one_object_per_line(data: bytes, n: int) -> bool:
    """True when object ``i`` is certainly on line ``i + 1``: ``n`` lines, each starting
    with ``{``, none blank. (Anything else takes the careful path.)"""
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    opening = data.count(b"\n{") + (1 if data.startswith(b"{") else 0)
    return lines == n and opening == n


def decoded(raw: msgspec.Raw) -> Any:
    """An undecoded JSON value, decoded; ``None`` for an absent one."""
    return msgspec.json.decode(raw) if len(raw) else None


def with_extra_fields(base: type[_T], names: Sequence[str], name: str) -> type[_T]:
    """``base`` with a field of any type for each of ``names`` it lacks, renamed from
    ``extra_<i>`` (in the order of ``names``)."""
    fields: Any = getattr(base, "__struct_fields__", ())
    wanted = [f for f in names if f not in fields]
    if not wanted:
        return base
    extra = [(f"extra_{i}", Any, None) for i in range(len(wanted))]
    rename = {f"extra_{i}": field for i, field in enumerate(wanted)}
    struct: Any = msgspec.defstruct(name, extra, bases=(base,), rename=rename, gc=False)
    return struct  # type: ignore[no-any-return]


def extra_columns(
    objects: Sequence[Any],
    names: Iterable[str],
    places: Callable[[dict[str, Any]], Iterable[Any]],
) -> dict[str, list[Any]]:
    """Each of the ``extra_fields`` asked for, from each decoded object: its own key,
    else the key in the first of its ``places`` (nested objects) that has it."""

    def lookup(obj: Any, name: str) -> Any:
        if not isinstance(obj, dict):
            return None
        if name in obj:
            return obj[name]
        for place in places(obj):
            if isinstance(place, dict) and name in place:
                return place[name]
        return None

    return {name: [lookup(o, name) for o in objects] for name in dict.fromkeys(names)}


def error_text(value: Any) -> str | None:
    """What an ``error`` field says (its ``message``, if it has one); ``None`` for no
    error (null, false, empty)."""
    if value is None or value is False or value == "" or value == {} or value == []:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        return str(value["message"])
    return msgspec.json.encode(value).decode()


def struct_extra_columns(
    records: Sequence[Any], names: Iterable[str], fallback: Callable[[Any, str], Any]
) -> dict[str, list[Any]]:
    """Each of the ``extra_fields`` asked for, from records decoded with a struct of
    :func:`with_extra_fields`: the record's own field (decoded when kept raw), else
    ``fallback(record, name)`` (a place the format keeps further fields)."""
    struct: Any = type(records[0]) if records else None
    fields = struct.__struct_fields__ if struct is not None else ()
    attrs = dict(zip(getattr(struct, "__struct_encode_fields__", ()), fields, strict=True))
    out: dict[str, list[Any]] = {}
    for name in names:
        attr = attrs.get(name, name)
        column = out[name] = []
        for record in records:
            value = getattr(record, attr, None)
            if isinstance(value, msgspec.Raw):
                value = decoded(value)
            if value is None:
                value = fallback(record, name)
            column.append(value)
    return out


def fill_scores(
    scores: list[Any],
    scorers: Mapping[str, Sequence[float | None]],
    errors: Mapping[int, str],
    missing: Callable[[int], ParseError],
) -> list[float]:
    """``scores`` with each missing one filled in: the mean of the record's scorers, else
    0 for an attempt that did not run (it has an error); ``missing(i)`` is raised for
    a record with neither."""
    if None not in scores:
        return scores
    for i, s in enumerate(scores):
        if s is not None:
            continue
        parts = [v for col in scorers.values() if (v := col[i]) is not None]
        if parts:
            scores[i] = sum(parts) / len(parts)
        elif i in errors:
            scores[i] = 0.0
        else:
            raise missing(i)
    return scores
