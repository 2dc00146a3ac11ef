"""evaldelta.cli._output: the exit codes, the parser whose usage errors are one line,
``--color`` (``use_color``, with NO_COLOR and FORCE_COLOR), writing the output to stdout
or a file (``write_output``, with its fallback for a terminal that cannot show a
character) and ``can_show``."""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import pytest

from evaldelta.cli import _output
from evaldelta.cli._output import (
    EXIT_CANNOT_JUDGE,
    EXIT_OK,
    EXIT_REGRESSION,
    Parser,
    can_show,
    use_color,
    write_output,
)
from evaldelta.errors import InputError
from tests.conftest import run_evaldelta


class _Stream:
    """A stream whose ``isatty`` answers as told."""

    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class _Encoded:
    """A stream that has nothing but an ``encoding``."""

    def __init__(self, encoding: str | None) -> None:
        self.encoding = encoding


@pytest.fixture
def no_color_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return monkeypatch


# -- exit codes ---------------------------------------------------------------------------


def test_exit_codes() -> None:
    assert (EXIT_OK, EXIT_REGRESSION, EXIT_CANNOT_JUDGE) == (0, 1, 2)


def test_public_names() -> None:
    assert sorted(_output.__all__) == [
        "EXIT_CANNOT_JUDGE",
        "EXIT_OK",
        "EXIT_REGRESSION",
        "Parser",
        "can_show",
        "use_color",
        "write_output",
    ]


# -- Parser -------------------------------------------------------------------------------


def test_parser_is_an_argument_parser() -> None:
    p = Parser(prog="evaldelta x")
    p.add_argument("--n", type=int)
    assert isinstance(p, argparse.ArgumentParser)
    assert p.parse_args(["--n", "3"]) == argparse.Namespace(n=3)


def test_parser_usage_error_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    p = Parser(prog="evaldelta x")
    p.add_argument("--n", type=int)
    with pytest.raises(SystemExit) as exc:
        p.parse_args(["--n", "z"])
    assert exc.value.code == EXIT_CANNOT_JUDGE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "evaldelta x: error: argument --n: invalid int value: 'z' (see evaldelta x --help)\n"
    )


def test_parser_unknown_argument(capsys: pytest.CaptureFixture[str]) -> None:
    p = Parser(prog="evaldelta")
    with pytest.raises(SystemExit) as exc:
        p.parse_args(["--bogus"])
    assert exc.value.code == 2
    assert capsys.readouterr().err == (
        "evaldelta: error: unrecognized arguments: --bogus (see evaldelta --help)\n"
    )


def test_parser_missing_argument(capsys: pytest.CaptureFixture[str]) -> None:
    p = Parser(prog="evaldelta y")
    p.add_argument("file")
    with pytest.raises(SystemExit) as exc:
        p.parse_args([])
    assert exc.value.code == 2
    assert capsys.readouterr().err == (
        "evaldelta y: error: the following arguments are required: file (see evaldelta y --help)\n"
    )


def test_parser_error_called_directly(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        Parser(prog="p").error("something is off")
    assert exc.value.code == 2
    assert capsys.readouterr().err == "p: error: something is off (see p --help)\n"


def test_parser_help_still_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    p = Parser(prog="evaldelta z", description="does z")
    with pytest.raises(SystemExit) as exc:
        p.parse_args(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: evaldelta z [-h]\n")
    assert "does z" in out


def test_parser_error_through_the_installed_command() -> None:
    r = run_evaldelta("compare", "a.jsonl", "b.jsonl", "--color", "purple")
    assert r.code == 2
    assert r.out == ""
    assert len(r.err.splitlines()) == 1
    assert r.err.startswith("evaldelta compare: error: argument --color: invalid choice: ")
    assert "purple" in r.err
    assert r.err.endswith(" (see evaldelta compare --help)\n")


# -- use_color ----------------------------------------------------------------------------


@pytest.mark.parametrize("tty", [True, False])
def test_color_always_and_never_ignore_terminal_and_environment(
    no_color_env: pytest.MonkeyPatch, tty: bool
) -> None:
    no_color_env.setenv("NO_COLOR", "1")
    assert use_color("always", _Stream(tty)) is True
    no_color_env.delenv("NO_COLOR")
    no_color_env.setenv("FORCE_COLOR", "1")
    assert use_color("never", _Stream(tty)) is False


def test_color_auto_follows_the_terminal(no_color_env: pytest.MonkeyPatch) -> None:
    assert use_color("auto", _Stream(True)) is True
    assert use_color("auto", _Stream(False)) is False


def test_color_auto_without_isatty_is_off(no_color_env: pytest.MonkeyPatch) -> None:
    assert use_color("auto", object()) is False
    assert use_color("auto", None) is False


def test_color_auto_with_a_non_callable_isatty_attribute_is_off(
    no_color_env: pytest.MonkeyPatch,
) -> None:
    class Odd:
        isatty = None

    assert use_color("auto", Odd()) is False


def test_force_color_forces_it_off_a_terminal(no_color_env: pytest.MonkeyPatch) -> None:
    no_color_env.setenv("FORCE_COLOR", "1")
    assert use_color("auto", _Stream(False)) is True
    no_color_env.setenv("FORCE_COLOR", "0")  # any non-empty value forces it
    assert use_color("auto", _Stream(False)) is True


def test_empty_force_color_is_unset(no_color_env: pytest.MonkeyPatch) -> None:
    no_color_env.setenv("FORCE_COLOR", "")
    assert use_color("auto", _Stream(False)) is False
    assert use_color("auto", _Stream(True)) is True


def test_no_color_turns_it_off_on_a_terminal(no_color_env: pytest.MonkeyPatch) -> None:
    no_color_env.setenv("NO_COLOR", "1")
    assert use_color("auto", _Stream(True)) is False


def test_empty_no_color_is_unset(no_color_env: pytest.MonkeyPatch) -> None:
    no_color_env.setenv("NO_COLOR", "")
    assert use_color("auto", _Stream(True)) is True


def test_force_color_wins_over_no_color(no_color_env: pytest.MonkeyPatch) -> None:
    no_color_env.setenv("NO_COLOR", "1")
    no_color_env.setenv("FORCE_COLOR", "1")
    assert use_color("auto", _Stream(False)) is True


def test_color_unknown_choice_is_off(no_color_env: pytest.MonkeyPatch) -> None:
    no_color_env.setenv("FORCE_COLOR", "1")
    assert use_color("sometimes", _Stream(True)) is False


# -- write_output -------------------------------------------------------------------------


def test_write_output_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    write_output("line one\nline two\n", None)
    write_output("no newline", None)
    captured = capsys.readouterr()
    assert captured.out == "line one\nline two\nno newline"
    assert captured.err == ""


def test_write_output_to_a_file_as_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "report.txt"
    text = "Verdict: Better. caf\u00e9 \u2713\n"
    write_output(text, str(path))
    assert path.read_bytes() == text.encode("utf-8")
    assert capsys.readouterr().out == ""


def test_write_output_replaces_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text("old content that is longer than the new one\n", encoding="utf-8")
    write_output("{}\n", str(path))
    assert path.read_text(encoding="utf-8") == "{}\n"


def test_write_output_empty_text_makes_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    write_output("", str(path))
    assert path.read_bytes() == b""


def test_write_output_to_a_folder_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        write_output("x", str(tmp_path))
    assert str(exc.value) == f"{tmp_path}: cannot write the output (Is a directory)"
    assert isinstance(exc.value.__cause__, OSError)


def test_write_output_into_a_missing_folder_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "out.md"
    with pytest.raises(InputError) as exc:
        write_output("x", str(path))
    assert str(exc.value) == f"{path}: cannot write the output (No such file or directory)"
    assert not (tmp_path / "no").exists()


def test_write_output_to_a_folder_through_the_installed_command(tmp_path: Path) -> None:
    from tests.conftest import FIXTURES

    r = run_evaldelta(
        "compare", FIXTURES / "baseline.jsonl", FIXTURES / "candidate.jsonl", "-o", tmp_path
    )
    assert r.code == 2
    assert r.out == ""
    assert r.err == f"evaldelta: error: {tmp_path}: cannot write the output (Is a directory)\n"


def _ascii_stdout(monkeypatch: pytest.MonkeyPatch) -> io.BytesIO:
    """Replace stdout by one that encodes ASCII strictly; returns its bytes."""
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="ascii"))
    return raw


def test_write_output_shows_a_question_mark_for_what_stdout_cannot_encode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = _ascii_stdout(monkeypatch)
    write_output("ok ", None)
    write_output("caf\u00e9 \u2713 done\n", None)
    write_output("after\n", None)
    assert raw.getvalue() == b"ok caf? ? done\nafter\n"


def test_write_output_fallback_uses_the_stream_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="latin-1"))
    write_output("caf\u00e9 \u2713\n", None)
    assert raw.getvalue() == b"caf\xe9 ?\n"


# -- can_show -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "encoding", "expected"),
    [
        ("plain ascii", "ascii", True),
        ("caf\u00e9", "ascii", False),
        ("caf\u00e9", "latin-1", True),
        ("\u2713", "latin-1", False),
        ("\u2713", "utf-8", True),
        ("\u2713", "cp1252", False),
        ("", "ascii", True),
        ("\ud800", "utf-8", False),  # a lone surrogate encodes nowhere
    ],
)
def test_can_show(text: str, encoding: str, expected: bool) -> None:
    assert can_show(text, _Encoded(encoding)) is expected


def test_can_show_without_an_encoding_assumes_utf8() -> None:
    assert can_show("\u2713", _Encoded(None)) is True
    assert can_show("\u2713", object()) is True
    assert can_show("\ud800", object()) is False


def test_can_show_an_unknown_encoding_is_false() -> None:
    assert can_show("x", _Encoded("no-such-codec")) is False


def test_can_show_defaults_to_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    _ascii_stdout(monkeypatch)
    assert can_show("ascii only") is True
    assert can_show("caf\u00e9") is False
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    assert can_show("caf\u00e9") is True
