"""The layer below the readers: the UTF-8 check of every piece of text read."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaldelta.errors import ParseError
from evaldelta.io._source import check_utf8

#: Pieces of UTF-8 and of what is not: characters of 1 to 4 bytes, lone lead and
#: continuation bytes, a surrogate, an overlong form, a code point past U+10FFFF.
PIECES = [
    b"a", b"\n", b" ", "é".encode(), "€".encode(), "😀".encode(),
    b"\xc3", b"\xa9", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\xff", b"\x80",
    b"\xf4\x90\x80\x80",
]  # fmt: skip


def _valid(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@settings(max_examples=2000, derandomize=True, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=16))
def test_the_check_agrees_with_a_whole_decode(parts: list[bytes]) -> None:
    """Only the runs of bytes >= 0x80 are decoded: the same verdict as decoding it all."""
    data = b"".join(parts)
    if _valid(data):
        check_utf8("f.jsonl", data)
    else:
        with pytest.raises(ParseError, match="not valid UTF-8"):
            check_utf8("f.jsonl", data)


def test_the_bad_byte_is_named_by_line_and_column() -> None:
    data = '{"a": "é"}\n{"b": "x\xff"}\n'.encode("latin-1").replace(b"\xe9", "é".encode())
    with pytest.raises(ParseError) as caught:
        check_utf8("f.jsonl", data, first_line=10)
    assert str(caught.value) == (
        "f.jsonl:11: not valid UTF-8 (byte 0xff at column 9); save the file as UTF-8"
    )
