"""Terminal text helpers."""

from __future__ import annotations

import pytest

from evaldelta.report._text import (
    Style,
    clip_list,
    ljust,
    printable,
    relative_suffix,
    rjust,
    width,
)


def test_width_counts_wide_characters_and_ignores_colour() -> None:
    assert width("abc") == 3
    assert width("数学") == 4
    assert width("e\u0301") == 1  # e + combining accent
    assert width(Style(True)("win", "green")) == 3
    assert ljust("数", 4) == "数  "
    assert rjust("ab", 4) == "  ab"


def test_printable_escapes_control_characters() -> None:
    assert printable("plain") == "plain"
    assert printable("a\nb\x1b[31m") == "a\\nb\\x1b[31m"


def test_clip_list() -> None:
    assert clip_list(["a", "b"]) == "a, b"
    assert clip_list(list("abcdefg")) == "a, b, c, d, e, ... (+2 more)"
    assert clip_list(list("abcde"), total=100) == "a, b, c, d, e, ... (+95 more)"


def test_style_off_is_identity() -> None:
    assert Style(False)("x", "red") == "x"


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (0.12, " (+12%)"),
        (-0.094, " (-9%)"),
        (0.0095, " (+1%)"),
        (-0.004, " (-0.4%)"),
        (0.0004, " (0%)"),
        (-0.0004, " (0%)"),
        (0.0, " (0%)"),
        (float("nan"), ""),
    ],
)
def test_relative_suffix_never_shows_minus_zero(x: float, text: str) -> None:
    assert relative_suffix(x) == text
