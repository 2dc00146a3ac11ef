"""evaldelta.cli._options: the options shared by compare and gate (their flags and
defaults), a subcommand's parser (``add_command``), the statistics settings they ask for
(``settings_from``, with every refusal of ``--confidence``, ``--margin`` and
``--min-cases``), the keyword parameters of ``compare`` (``compare_options``), ``--map``
merged (``mapping_from``) and reading an input as the options say (``load_for``: a
results file, a run store file, ``store.db:REF``, or a run reference looked up in the
store)."""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from evaldelta.analysis import Settings
from evaldelta.cli import _options as options
from evaldelta.cli._main import error_message
from evaldelta.cli._output import Parser
from evaldelta.cli._store import REFERENCE_STORE_HELP
from evaldelta.errors import InputError, StoreError, UnknownFormatError, UsageError
from evaldelta.model import Run
from evaldelta.store import RunStore
from tests.conftest import run_evaldelta, write_jsonl

FORMATS = ("table", "json", "markdown")


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in ``tmp_path``, with no $EVALDELTA_STORE: no store of the machine is seen."""
    monkeypatch.delenv("EVALDELTA_STORE", raising=False)
    monkeypatch.chdir(tmp_path)


def _parser() -> Parser:
    """A command with every option compare and gate share."""
    p = Parser(prog="evaldelta t")
    p.add_argument("results", nargs="*")
    options.add_input_options(p)
    options.add_statistics_options(p)
    options.add_dataset_option(p)
    options.add_output_options(p, FORMATS)
    return p


def _parse(*argv: str) -> argparse.Namespace:
    return _parser().parse_args(list(argv))


def _action(p: argparse.ArgumentParser, flag: str) -> argparse.Action:
    found = [a for a in p._actions if flag in a.option_strings]
    assert len(found) == 1, flag
    return found[0]


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exc:
        _parse(*argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


# -- the options and their defaults -------------------------------------------------------


def test_defaults() -> None:
    args = _parse()
    assert vars(args) == {
        "results": [],
        "baseline": None,
        "candidate": None,
        "input_format": None,
        "map": None,
        "scorer": None,
        "store": None,
        "progress": False,
        "threshold": 0.1,
        "pass_threshold": 0.5,
        "confidence": 0.95,
        "resamples": 10_000,
        "seed": 0,
        "cluster_by": None,
        "max_slowdown": 0.10,
        "max_cost_increase": 0.10,
        "margin": 1.0,
        "metric": "score",
        "min_cases": 20,
        "allow_dataset_change": False,
        "format": "table",
        "output": None,
        "color": "auto",
        "debug": False,
    }


def test_input_options() -> None:
    args = _parse(
        "-b",
        "gpt-a",
        "-c",
        "gpt-b",
        "--input-format",
        "csv",
        "--map",
        "test_id=q",
        "--map",
        "score=ok",
        "--scorer",
        "exact",
        "--store",
        "runs.db",
        "--progress",
    )
    assert (args.baseline, args.candidate) == ("gpt-a", "gpt-b")
    assert args.input_format == "csv"
    assert args.map == ["test_id=q", "score=ok"]
    assert args.scorer == "exact"
    assert args.store == "runs.db"
    assert args.progress is True
    long = _parse("--baseline", "x", "--candidate", "y")
    assert (long.baseline, long.candidate) == ("x", "y")


def test_store_option_says_results_may_be_run_references() -> None:
    p = Parser(prog="evaldelta power")
    options.add_reference_options(p)
    assert _action(p, "--store").help == REFERENCE_STORE_HELP
    assert _action(p, "--store").metavar == "PATH"
    assert vars(p.parse_args([])) == {"store": None, "progress": False}
    assert vars(p.parse_args(["--store", "s.db", "--progress"])) == {
        "store": "s.db",
        "progress": True,
    }


#: Every statistics option, each set to a value other than its default.
EVERY_STATISTICS_OPTION = (
    *("-t", "0.2", "--pass-threshold", "0.7", "--confidence", "0.9"),
    *("--resamples", "500", "--seed", "7", "--cluster-by", "doc"),
    *("--max-slowdown", "0.3", "--max-cost-increase", "0.4", "--margin", "2.5"),
    *("--metric", "pass_rate", "--min-cases", "5"),
)


def test_statistics_options() -> None:
    args = _parse(*EVERY_STATISTICS_OPTION)
    assert (args.threshold, args.pass_threshold, args.confidence) == (0.2, 0.7, 0.9)
    assert (args.resamples, args.seed, args.cluster_by) == (500, 7, "doc")
    assert (args.max_slowdown, args.max_cost_increase, args.margin) == (0.3, 0.4, 2.5)
    assert (args.metric, args.min_cases) == ("pass_rate", 5)
    assert _parse("--threshold", "0.3").threshold == 0.3


def test_statistics_options_are_a_group_of_their_own() -> None:
    p = _parser()
    group = next(g for g in p._action_groups if g.title == "statistics")
    flags = [a.option_strings[-1] for a in group._group_actions]
    assert flags == [
        "--threshold",
        "--pass-threshold",
        "--confidence",
        "--resamples",
        "--seed",
        "--cluster-by",
        "--max-slowdown",
        "--max-cost-increase",
        "--margin",
        "--metric",
        "--min-cases",
    ]
    assert "\nstatistics:\n" in p.format_help()


def test_metric_choices() -> None:
    assert options.METRICS == ("score", "pass_rate")
    assert _action(_parser(), "--metric").choices == options.METRICS
    assert _action(_parser(), "--metric").help == options.METRIC_HELP


def test_unknown_metric_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, "--metric", "accuracy")
    assert err.startswith("evaldelta t: error: argument --metric: invalid choice: ")
    assert "accuracy" in err
    assert err.endswith(" (see evaldelta t --help)\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--resamples", "1.5"), "argument --resamples: invalid int value: '1.5'"),
        (("--min-cases", "x"), "argument --min-cases: invalid int value: 'x'"),
        (("--threshold", "big"), "argument -t/--threshold: invalid float value: 'big'"),
        (("--margin", "one"), "argument --margin: invalid float value: 'one'"),
    ],
)
def test_option_types(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    assert _error(capsys, *argv) == f"evaldelta t: error: {message} (see evaldelta t --help)\n"


def test_dataset_option_on_a_parser_and_on_a_group() -> None:
    assert _parse("--allow-dataset-change").allow_dataset_change is True
    p = argparse.ArgumentParser()
    options.add_dataset_option(p.add_argument_group("inputs"))
    assert p.parse_args([]).allow_dataset_change is False
    assert p.parse_args(["--allow-dataset-change"]).allow_dataset_change is True


def test_output_options() -> None:
    assert _parse("--json").format == "json"
    assert _parse("-f", "markdown").format == "markdown"
    assert _parse("--format", "json").format == "json"
    # --json is --format json: the last one given wins.
    assert _parse("--json", "-f", "table").format == "table"
    assert _parse("-f", "table", "--json").format == "json"
    args = _parse("-o", "out.md", "--color", "never", "--debug")
    assert (args.output, args.color, args.debug) == ("out.md", "never", True)
    assert _parse("--output", "x.json").output == "x.json"
    assert _action(_parser(), "--format").choices == FORMATS
    assert _action(_parser(), "--color").choices == ("auto", "always", "never")


def test_output_formats_are_the_commands_own(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, "--format", "html")
    assert err.startswith("evaldelta t: error: argument -f/--format: invalid choice: ")
    assert "'html'" in err


def test_debug_is_not_in_the_help() -> None:
    text = _parser().format_help()
    assert "--debug" not in text
    assert "--json" in text
    assert "--color {auto,always,never}" in text


# -- add_command ----------------------------------------------------------------------------


EPILOG = "examples:\n  evaldelta demo a.jsonl b.jsonl\n      (the two runs)\n"


def _commands() -> tuple[Parser, Any]:
    top = Parser(prog="evaldelta")
    return top, top.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)


def test_add_command() -> None:
    top, commands = _commands()
    p = options.add_command(commands, "demo", ("Do the demo.", "The demo, at length."), EPILOG)
    assert isinstance(p, Parser)
    assert p.prog == "evaldelta demo"
    assert p.description == "The demo, at length."
    assert p.epilog == EPILOG
    assert p.formatter_class is argparse.RawDescriptionHelpFormatter
    p.add_argument("x")
    assert top.parse_args(["demo", "1"]) == argparse.Namespace(command="demo", x="1")
    # The summary is the command's line in the list of commands.
    assert [(a.dest, a.help) for a in commands._choices_actions] == [("demo", "Do the demo.")]


def test_add_command_keeps_the_epilog_as_written() -> None:
    _, commands = _commands()
    p = options.add_command(commands, "demo", ("Do it.", "Does it."), EPILOG)
    assert p.format_help().endswith("\n" + EPILOG)


def test_add_command_passes_extra_keywords_on() -> None:
    top, commands = _commands()
    p = options.add_command(commands, "eval", ("Run.", "Runs."), "", aliases=["run"])
    p.add_argument("suite")
    assert top.parse_args(["run", "s.yaml"]) == argparse.Namespace(command="run", suite="s.yaml")
    assert commands.choices["run"] is commands.choices["eval"] is p


def test_add_command_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    top, commands = _commands()
    options.add_command(commands, "demo", ("Do it.", "Does it."), "").add_argument("x")
    with pytest.raises(SystemExit) as exc:
        top.parse_args(["demo"])
    assert exc.value.code == 2
    assert capsys.readouterr().err == (
        "evaldelta demo: error: the following arguments are required: x "
        "(see evaldelta demo --help)\n"
    )


# -- settings_from ------------------------------------------------------------------------


def test_default_settings_are_the_librarys() -> None:
    assert options.settings_from(_parse()) == Settings()


def test_settings_from_every_option() -> None:
    args = _parse(*EVERY_STATISTICS_OPTION)
    args.sequential = True
    assert options.settings_from(args) == Settings(
        threshold=0.2,
        pass_threshold=0.7,
        alpha=0.1,
        resamples=500,
        seed=7,
        cluster_by="doc",
        max_slowdown=0.3,
        max_cost_increase=0.4,
        margin=0.025,
        sequential=True,
        min_cases=5,
        metric="pass_rate",
    )


@pytest.mark.parametrize(
    ("confidence", "alpha"), [(0.95, 0.05), (0.9, 0.1), (0.99, 0.01), (0.8, 0.2), (0.5, 0.5)]
)
def test_alpha_is_one_minus_the_confidence_exactly(confidence: float, alpha: float) -> None:
    args = _parse("--confidence", str(confidence))
    settings = options.settings_from(args)
    assert settings.alpha == alpha  # rounded: 1 - 0.9 is 0.09999999999999998
    assert settings.level == 1 - alpha


@pytest.mark.parametrize(("points", "margin"), [(1.0, 0.01), (2.5, 0.025), (0.5, 0.005)])
def test_margin_points_become_a_fraction(points: float, margin: float) -> None:
    assert options.settings_from(_parse("--margin", str(points))).margin == margin


@pytest.mark.parametrize("points", ["0", "0.0", "-0"])
def test_margin_zero_is_no_margin(points: str) -> None:
    assert options.settings_from(_parse("--margin", points)).margin is None


def test_sequential_is_off_unless_the_command_has_it() -> None:
    args = _parse()
    assert not hasattr(args, "sequential")
    assert options.settings_from(args).sequential is False
    args.sequential = False
    assert options.settings_from(args).sequential is False
    args.sequential = True
    assert options.settings_from(args).sequential is True


@pytest.mark.parametrize("confidence", ["0.9999999999999", "1e-13"])
def test_confidence_too_near_0_or_1_is_refused(confidence: str) -> None:
    with pytest.raises(UsageError) as exc:
        options.settings_from(_parse("--confidence", confidence))
    assert str(exc.value) == (
        "--confidence must be at least 1e-12 away from 0 and from 1 (e.g. 0.95), got "
        f"{float(confidence)}"
    )


@pytest.mark.parametrize("confidence", ["0", "1", "1.5", "95", "-0.5", "nan", "inf"])
def test_confidence_outside_0_and_1_is_refused(confidence: str) -> None:
    args = _parse("--confidence", confidence)
    with pytest.raises(UsageError) as exc:
        options.settings_from(args)
    assert str(exc.value) == (
        f"--confidence must be between 0 and 1 (e.g. 0.95), got {float(confidence)}"
    )


@pytest.mark.parametrize(
    ("points", "shown"), [("-1", "-1"), ("-0.5", "-0.5"), ("inf", "inf"), ("nan", "nan")]
)
def test_margin_below_0_or_not_finite_is_refused(points: str, shown: str) -> None:
    args = _parse("--margin", points)
    with pytest.raises(UsageError) as exc:
        options.settings_from(args)
    assert str(exc.value) == f"--margin must be a number of points >= 0 (e.g. 1), got {shown}"


@pytest.mark.parametrize("n", ["0", "-3"])
def test_min_cases_below_1_is_refused(n: str) -> None:
    with pytest.raises(UsageError) as exc:
        options.settings_from(_parse("--min-cases", n))
    assert str(exc.value) == f"--min-cases must be a whole number >= 1, got {n}"


def test_min_cases_1_is_the_least() -> None:
    assert options.settings_from(_parse("--min-cases", "1")).min_cases == 1


@pytest.mark.parametrize(
    ("argv", "parameter", "flag", "rest"),
    [
        (("-t", "-1"), "threshold", "--threshold", "must be a number >= 0, got -1.0"),
        (("-t", "inf"), "threshold", "--threshold", "must be a number >= 0, got inf"),
        (
            ("--pass-threshold", "nan"),
            "pass_threshold",
            "--pass-threshold",
            "must be a finite number, got nan",
        ),
        (
            ("--resamples", "99"),
            "resamples",
            "--resamples",
            "must be at least 100 (10000 is the default), got 99",
        ),
        (
            ("--max-slowdown", "-0.1"),
            "max_slowdown",
            "--max-slowdown",
            "must be a fraction >= 0 (0.1 for 10%), got -0.1",
        ),
        (
            ("--max-cost-increase", "inf"),
            "max_cost_increase",
            "--max-cost-increase",
            "must be a fraction >= 0 (0.1 for 10%), got inf",
        ),
    ],
)
def test_other_settings_are_checked_by_the_library_and_shown_as_flags(
    argv: tuple[str, ...], parameter: str, flag: str, rest: str
) -> None:
    with pytest.raises(UsageError) as exc:
        options.settings_from(_parse(*argv))
    # the library names its parameter; the command line shows the flag that sets it
    assert exc.value.option == parameter
    assert str(exc.value) == f"{parameter} {rest}"
    assert error_message(exc.value) == f"{flag} {rest}"


def test_settings_edges_that_are_accepted() -> None:
    args = _parse("-t", "0", "--resamples", "100", "--max-slowdown", "0", "--confidence", "0.001")
    settings = options.settings_from(args)
    assert (settings.threshold, settings.resamples, settings.max_slowdown) == (0.0, 100, 0.0)
    assert settings.alpha == 0.999
    assert math.isclose(settings.level, 0.001)


def test_margin_refusal_through_the_installed_command() -> None:
    r = run_evaldelta("compare", "a.jsonl", "b.jsonl", "--margin", "-2")
    assert (r.code, r.out) == (2, "")
    assert r.err == "evaldelta: error: --margin must be a number of points >= 0 (e.g. 1), got -2\n"


# -- compare_options ----------------------------------------------------------------------


def test_compare_options_defaults() -> None:
    args = _parse()
    settings = Settings()
    assert options.compare_options(args, settings) == {
        "baseline_target": None,
        "candidate_target": None,
        "settings": settings,
        "allow_dataset_change": False,
        "sample": None,
        "scorer": None,
    }


def test_compare_options_given() -> None:
    args = _parse("-b", "old", "-c", "new", "--allow-dataset-change", "--scorer", "exact")
    args.sample = 50
    settings = Settings(seed=3)
    found = options.compare_options(args, settings)
    assert found == {
        "baseline_target": "old",
        "candidate_target": "new",
        "settings": settings,
        "allow_dataset_change": True,
        "sample": 50,
        "scorer": "exact",
    }
    assert found["settings"] is settings


# -- mapping_from -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args", [argparse.Namespace(), argparse.Namespace(map=None), argparse.Namespace(map=[])]
)
def test_no_map_is_none(args: argparse.Namespace) -> None:
    assert options.mapping_from(args) is None


def test_one_map() -> None:
    args = argparse.Namespace(map=["test_id=question_id, score = correct,"])
    assert options.mapping_from(args) == {"test_id": "question_id", "score": "correct"}


def test_maps_are_merged_in_order() -> None:
    args = _parse("--map", "test_id=q", "--map", "score=ok,scores.exact=em", "--map", "target=m")
    merged = options.mapping_from(args)
    assert merged == {"test_id": "q", "score": "ok", "scores.exact": "em", "target": "m"}
    assert list(merged or {}) == ["test_id", "score", "scores.exact", "target"]


def test_a_field_mapped_twice_alike_is_kept_once() -> None:
    args = argparse.Namespace(map=["test_id=q", "score=ok,test_id=q"])
    assert options.mapping_from(args) == {"test_id": "q", "score": "ok"}


def test_a_field_mapped_twice_differently_is_refused() -> None:
    args = argparse.Namespace(map=["test_id=question_id", "score=ok", "test_id=x"])
    with pytest.raises(UsageError) as exc:
        options.mapping_from(args)
    assert str(exc.value) == "--map gives 'test_id' twice ('question_id' and 'x'); keep one"


KNOWN = (
    "known fields: test_id, target, score, passed, attempt, latency_ms, wait_ms, "
    "input_tokens, output_tokens, cost_usd, error, error_kind, category, input, output, "
    "expected, scores.NAME (a scorer)"
)
WRITE = "write e.g. --map test_id=question_id,score=correct"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("test_id", f'--map: "test_id" is not FIELD=COLUMN; {WRITE}'),
        ("=q", f'--map: "=q" is not FIELD=COLUMN; {WRITE}'),
        ("test_id=", f'--map: "test_id=" is not FIELD=COLUMN; {WRITE}'),
        ("", f"--map: no FIELD=COLUMN given; {WRITE}"),
        (" , ", f"--map: no FIELD=COLUMN given; {WRITE}"),
        ("test_id=a,test_id=b", '--map: "test_id" is given twice ("a" and "b"); keep one'),
        (
            "scores.=x",
            '--map: "scores." names no scorer; write scores.NAME=COLUMN, e.g. scores.exact=em',
        ),
        ("scroe=x", f'--map: unknown field "scroe" (did you mean "score"?); {KNOWN}'),
        ("zzz=x", f'--map: unknown field "zzz"; {KNOWN}'),
    ],
)
def test_a_bad_map_is_refused_as_the_parser_says(spec: str, message: str) -> None:
    with pytest.raises(UsageError) as exc:
        options.mapping_from(argparse.Namespace(map=["score=ok", spec]))
    assert str(exc.value) == message


# -- load_for -----------------------------------------------------------------------------


def _args(**given: Any) -> argparse.Namespace:
    """The options load_for reads, as a command's parser gives them."""
    args = _parse()
    args.store = "no-store.db"
    for name, value in given.items():
        setattr(args, name, value)
    return args


def _records(score: float, n: int = 3) -> list[dict[str, Any]]:
    return [
        {"test_id": f"t{i}", "score": score, "doc": f"d{i % 2}", "input": f"question {i}"}
        for i in range(n)
    ]


def _store(path: str, *runs: tuple[str, float]) -> str:
    """A store file holding a run per ``(name, score)``, the field ``doc`` kept."""
    with RunStore(path) as store:
        for name, score in runs:
            rows = _records(score)
            run = Run.from_columns(
                source=f"{name}.jsonl",
                format="jsonl",
                test_id=[r["test_id"] for r in rows],
                score=[r["score"] for r in rows],
                extra={"doc": [r["doc"] for r in rows]},
                texts={"input": [r["input"] for r in rows]},
            )
            store.import_run(run, name=name)
    return path


def test_load_for_reads_a_results_file(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "r.jsonl", _records(0.5))
    run = options.load_for(_args(), "r.jsonl")
    assert (run.source, run.format, len(run)) == ("r.jsonl", "jsonl", 3)
    assert run.score.tolist() == [0.5, 0.5, 0.5]
    assert run.extra == {}
    assert run.texts is None


def test_load_for_keeps_text_when_asked(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "r.jsonl", _records(0.5, n=2))
    run = options.load_for(_args(), "r.jsonl", keep_text=True)
    assert run.texts is not None
    assert run.texts["input"] == ["question 0", "question 1"]


def test_load_for_keeps_the_field_to_cluster_by(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "r.jsonl", _records(0.5, n=4))
    run = options.load_for(_args(cluster_by="doc"), "r.jsonl")
    assert run.extra == {"doc": ["d0", "d1", "d0", "d1"]}


def test_load_for_category_needs_no_extra_field(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "r.jsonl", _records(0.5))
    assert options.load_for(_args(cluster_by="category"), "r.jsonl").extra == {}


def test_load_for_applies_the_map(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "m.jsonl", [{"q": "a", "ok": 1}, {"q": "b", "ok": 0}])
    run = options.load_for(_args(map=["test_id=q", "score=ok"]), "m.jsonl")
    assert run.test_ids == ["a", "b"]
    assert run.score.tolist() == [1.0, 0.0]


def test_load_for_uses_the_input_format(tmp_path: Path) -> None:
    (tmp_path / "r.data").write_text("test_id,score\na,1\nb,0\n", encoding="utf-8")
    run = options.load_for(_args(input_format="csv"), "r.data")
    assert (run.format, run.test_ids, run.score.tolist()) == ("csv", ["a", "b"], [1.0, 0.0])


def test_load_for_unknown_input_format(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "r.jsonl", _records(0.5))
    with pytest.raises(UnknownFormatError) as exc:
        options.load_for(_args(input_format="nope"), "r.jsonl")
    assert str(exc.value) == (
        "unknown input format 'nope'; choose one of: inspect, lm-eval, promptfoo, deepeval, "
        "openai-evals, parquet, csv, jsonl"
    )


def test_load_for_a_missing_file_without_a_store() -> None:
    with pytest.raises(InputError) as exc:
        options.load_for(_args(), "missing.jsonl")
    assert (
        str(exc.value) == "missing.jsonl: no such file; check the path (run from the right folder?)"
    )


def test_load_for_a_store_file_is_its_latest_run() -> None:
    _store("s.db", ("before", 0.2), ("after", 0.8))
    run = options.load_for(_args(), "s.db")
    assert run.source == "s.db:after (run 2)"
    assert run.score.tolist() == [0.8, 0.8, 0.8]


@pytest.mark.parametrize(
    ("ref", "source"), [("before", "s.db:before (run 1)"), ("2", "s.db:after (run 2)")]
)
def test_load_for_a_run_of_a_store_file(ref: str, source: str) -> None:
    _store("s.db", ("before", 0.2), ("after", 0.8))
    assert options.load_for(_args(), f"s.db:{ref}").source == source


def test_load_for_a_store_file_passes_keep_text_and_the_cluster_field() -> None:
    _store("s.db", ("before", 0.2))
    assert options.load_for(_args(), "s.db").texts is None
    run = options.load_for(_args(cluster_by="doc"), "s.db:before", keep_text=True)
    assert run.texts is not None
    assert run.texts["input"] == ["question 0", "question 1", "question 2"]
    assert run.extra == {"doc": ["d0", "d1", "d0"]}


def test_load_for_a_stored_run_without_the_cluster_field() -> None:
    _store("s.db", ("before", 0.2))
    with pytest.raises(StoreError) as exc:
        options.load_for(_args(cluster_by="lang"), "s.db")
    assert str(exc.value) == (
        "s.db:before (run 1) was stored without the field 'lang'; import it again with "
        "`evaldelta runs import FILE --keep-field lang` to group cases by it"
    )
    # category is a column of every stored run, not a field kept on request.
    assert options.load_for(_args(cluster_by="category"), "s.db").source == "s.db:before (run 1)"


@pytest.mark.parametrize(("ref", "source"), [("before", "before (run 1)"), ("2", "after (run 2)")])
def test_load_for_a_reference_that_is_no_file_is_looked_up_in_the_store(
    ref: str, source: str
) -> None:
    _store("s.db", ("before", 0.2), ("after", 0.8))
    run = options.load_for(_args(store="s.db"), ref)
    assert run.source == source


def test_load_for_a_reference_in_the_store_of_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _store("env.db", ("before", 0.2))
    monkeypatch.setenv("EVALDELTA_STORE", "env.db")
    assert options.load_for(_args(store=None), "before").source == "before (run 1)"


def test_load_for_a_reference_in_the_default_store() -> None:
    os.mkdir(".evaldelta")
    _store(os.path.join(".evaldelta", "runs.db"), ("before", 0.2))
    assert options.load_for(_args(store=None), "1").source == "before (run 1)"


def test_load_for_an_unknown_reference_names_the_store() -> None:
    _store("s.db", ("before", 0.2))
    with pytest.raises(InputError) as exc:
        options.load_for(_args(store="s.db"), "after")
    assert str(exc.value) == (
        "after: no such file, and no stored run named 'after' in s.db; check the path, "
        "or list stored runs with `evaldelta runs list`"
    )


def test_load_for_a_file_wins_over_a_run_of_the_same_name(tmp_path: Path) -> None:
    _store("s.db", ("before", 0.2))
    write_jsonl(tmp_path / "before", _records(0.9))
    run = options.load_for(_args(store="s.db"), "before")
    assert (run.source, run.format) == ("before", "jsonl")
    assert run.score.tolist() == [0.9, 0.9, 0.9]


def test_load_for_a_dangling_link_is_not_looked_up_in_the_store() -> None:
    _store("s.db", ("before", 0.2))
    os.symlink("gone.jsonl", "before")
    with pytest.raises(InputError) as exc:
        options.load_for(_args(store="s.db"), "before")
    assert str(exc.value) == (
        "before: a symbolic link to gone.jsonl, which does not exist; point it at the results file"
    )


def test_load_for_a_results_file_whose_name_holds_a_colon(tmp_path: Path) -> None:
    _store("s.db", ("before", 0.2))
    write_jsonl(tmp_path / "cand:v2.jsonl", _records(0.7))
    run = options.load_for(_args(store="s.db"), "cand:v2.jsonl")
    assert (run.source, run.score.tolist()) == ("cand:v2.jsonl", [0.7, 0.7, 0.7])


def test_load_for_a_small_file_is_read_as_records_though_grouping_is_allowed(
    tmp_path: Path,
) -> None:
    """``grouped`` lets only a large file be read grouped per case: a small one comes
    through as the file has it."""
    rows = [{"test_id": "b", "score": 0.1}, {"test_id": "a", "score": 0.9}]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    run = options.load_for(_args(), "r.jsonl", grouped=0.5)
    assert run.totals is None
    assert run.test_ids == ["b", "a"]
    assert run.score.tolist() == [0.1, 0.9]
