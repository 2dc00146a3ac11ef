"""``--progress``: a line on stderr, only on a terminal and only for steps over a second."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

from evaldelta.cli import _progress, main
from evaldelta.cli._progress import INTERVAL, ProgressLine
from tests.conftest import FIXTURES, run_evaldelta


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_nothing_in_the_first_second() -> None:
    out, clock = Terminal(), Clock()
    line = ProgressLine("storing", stream=out, clock=clock)
    line(10, 100)
    clock.now += 0.9
    line(50, 100)
    line(100, 100)
    line.close()
    assert out.getvalue() == ""


def test_a_bar_once_a_step_lasts_over_a_second_then_wiped() -> None:
    out, clock = Terminal(), Clock()
    with ProgressLine("storing", stream=out, clock=clock) as line:
        clock.now += 1.5
        line(50, 100)
        assert out.getvalue() == "\rstoring [############------------]  50%  1.5 s"
        line(60, 100)  # within the redraw interval: not drawn
        assert out.getvalue().count("\r") == 1
        clock.now += 2 * INTERVAL
        line(75, 100)
        assert out.getvalue().endswith("\rstoring [##################------]  75%  1.7 s")
        line(100, 100)  # the end is always drawn
        assert out.getvalue().endswith("\rstoring [########################] 100%  1.7 s")
        drawn = len("storing [########################] 100%  1.7 s")
    assert out.getvalue().endswith("\r" + " " * drawn + "\r")


def test_a_new_step_has_its_own_second() -> None:
    out, clock = Terminal(), Clock()
    line = ProgressLine("reading", stream=out, clock=clock)
    clock.now += 5
    line.step("storing")
    line(1, 2)
    assert out.getvalue() == ""
    clock.now += 1.01
    line(1, 2)
    assert out.getvalue().startswith("\rstoring [")


def test_a_shorter_line_covers_the_longer_one_before() -> None:
    out, clock = Terminal(), Clock()
    line = ProgressLine("reading a rather long file name.jsonl", stream=out, clock=clock)
    clock.now += 2
    line(1, 2)
    first = out.getvalue()
    line.step("storing")
    clock.now += 2
    line(2, 2)
    second = out.getvalue()[len(first) :]
    assert len(second) == len(first)  # padded with spaces over the old text


def test_nothing_when_not_a_terminal_or_not_asked() -> None:
    for stream, enabled in ((io.StringIO(), True), (Terminal(), False)):
        clock = Clock()
        line = ProgressLine("storing", stream=stream, clock=clock, enabled=enabled)
        clock.now += 10
        line(1, 2)
        line.tick()
        with line.ticking("reading"):
            pass
        line.close()
        assert stream.getvalue() == ""


def test_a_step_that_cannot_report_shows_its_time() -> None:
    out = Terminal()
    with ProgressLine("", stream=out, delay=0) as line, line.ticking("reading x.jsonl"):
        time.sleep(4 * INTERVAL)
    text = out.getvalue()
    assert text.startswith("\rreading x.jsonl... 0.")
    assert text.endswith("\r")


def test_the_callback_path_through_the_store_and_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``runs import --progress`` and a compare reading stored runs, on a (fake) terminal
    and with no delay: the store's callback draws the bar, which is wiped at the end."""
    store = tmp_path / "runs.db"
    err = Terminal()
    monkeypatch.setattr(_progress, "DELAY", 0.0)
    monkeypatch.setattr("sys.stderr", err)
    args = ["runs", "import", str(FIXTURES / "baseline.jsonl"), "--store", str(store)]
    assert main([*args, "--name", "before", "--progress"]) == 0
    assert "\rstoring [########################] 100%" in err.getvalue()
    assert err.getvalue().endswith("\r")
    assert capsys.readouterr().out == "Stored run 1: before (3 cases, 3 records)\n"

    err.truncate(0)
    err.seek(0)
    assert main([*args, "--name", "quiet"]) == 0  # without --progress
    assert err.getvalue() == ""

    assert main(["compare", "1", "2", "--store", str(store), "--progress"]) == 0
    assert "\rreading run 1 [########################] 100%" in err.getvalue()
    assert "\rreading run 2 [" in err.getvalue()
    assert "Comparing: before (run 1) -> quiet (run 2)" in capsys.readouterr().out


def test_nothing_on_stderr_when_it_is_not_a_terminal(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    r = run_evaldelta("runs", "import", FIXTURES / "baseline.jsonl", "--store", store, "--progress")
    assert (r.code, r.err) == (0, "")
    r = run_evaldelta("compare", "1", "1", "--store", store, "--progress")
    assert (r.code, r.err) == (0, "")
    r = run_evaldelta("runs", "export", "1", "--store", store, "--progress")
    assert (r.code, r.err) == (0, "")
