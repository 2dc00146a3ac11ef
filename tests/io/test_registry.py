"""``evaldelta.io.load``: sniffing, and what it says of a file in no format it knows."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaldelta.errors import ParseError, UnknownFormatError
from evaldelta.io import formats, load


def test_one_object_in_no_known_format(tmp_path: Path) -> None:
    path = tmp_path / "hello.jsonl"
    path.write_text('{"hello": "world"}\n{"test_id": "a", "score": 1}\n')
    with pytest.raises(UnknownFormatError) as info:
        load(path)
    message = str(info.value)
    assert message.startswith(f"{path}:1: not a results file evaldelta can read")
    assert '(fields found: "hello")' in message
    assert f"formats tried: {', '.join(formats())};" in message
    assert "--input-format FORMAT" in message
    assert "--map FIELD=NAME" in message
    assert isinstance(info.value.__cause__, ParseError)


def test_an_empty_first_object_is_in_no_known_format(tmp_path: Path) -> None:
    path = tmp_path / "empty-object.jsonl"
    path.write_text("{}\n")
    with pytest.raises(UnknownFormatError, match=r"\(fields found: none\)"):
        load(path)


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        (['{"score": 1}'], 1, 'record has no "test_id" (nor "eval_id" or "testId")'),
        (['{"test_id": "a", "score": 1}', '{"hello": 1}'], 2, 'record has no "test_id"'),
    ],
)
def test_an_agentv_file_keeps_its_record_errors(
    tmp_path: Path, lines: list[str], line: int, message: str
) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParseError) as info:
        load(path)
    assert not isinstance(info.value, UnknownFormatError)
    assert info.value.line == line
    assert message in str(info.value)


def test_a_forced_format_keeps_the_readers_message(tmp_path: Path) -> None:
    path = tmp_path / "hello.jsonl"
    path.write_text('{"hello": "world"}\n')
    with pytest.raises(ParseError, match=r':1: record has no "test_id"'):
        load(path, format="jsonl")
