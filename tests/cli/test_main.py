"""The command line's own part of an error: the parameter a library error names,
shown as the flag that sets it (``cli.error_message``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaldelta.cli import error_message
from evaldelta.errors import EvalDeltaError, PairingError, StoreError, UsageError
from evaldelta.model import Record, Run
from evaldelta.pairing._cases import cases
from evaldelta.store import RunStore


def test_a_missing_store_names_the_commands_and_the_flag(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with pytest.raises(StoreError) as err:
        RunStore(path, create=False)
    assert error_message(err.value) == (
        f"no run store at {path}; store a run first with `evaldelta eval SUITE` or "
        "`evaldelta runs import FILE`, or choose a store with --store PATH or EVALDELTA_STORE"
    )


def test_an_ambiguous_run_names_the_baseline_and_candidate_flags() -> None:
    run = Run.from_records([Record("a", 1, target="x"), Record("a", 0, target="y")], source="m")
    with pytest.raises(PairingError) as err:
        cases(run, None)
    assert error_message(err.value) == (
        "m: holds 2 targets (x, y); choose one to compare "
        "(--baseline/--candidate TARGET on the command line)"
    )
    with pytest.raises(PairingError) as err:
        run.target_code("z")
    assert error_message(err.value) == (
        "m: no records for target 'z' (targets present: x, y); check the name, "
        "or list them with --format json"
    )


@pytest.mark.parametrize(
    ("option", "library", "shown"),
    [
        ("store", "choose another file with store=PATH", "choose another file with --store PATH"),
        ("name", "give one with name=NAME", "give one with --name NAME"),
        ("target", "pick one with target=TARGET", "pick one with --target TARGET"),
        ("targets", "(a, b); add it to targets", "(a, b); add it to --targets"),
        ("sample", "sample must be at least 1, got 0", "--sample must be at least 1, got 0"),
        ("cluster_by", "or use cluster_by='category')", "or use --cluster-by category)"),
    ],
)
def test_each_parameter_becomes_its_flag(option: str, library: str, shown: str) -> None:
    assert error_message(UsageError(library, option=option)) == shown


def test_an_error_without_a_parameter_is_shown_as_it_is() -> None:
    assert error_message(EvalDeltaError("store=PATH")) == "store=PATH"


def test_a_large_input_is_told_by_its_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file named on the command line or a store of LARGE_INPUT bytes or more makes
    a short command keep freed memory for reuse (fewer page faults on big inputs);
    eval and serve, long-running, never do."""
    from evaldelta.cli._main import LARGE_INPUT, build_parser, large_input

    def large(*argv: str) -> bool:
        return large_input(build_parser().parse_args(argv), argv)

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVALDELTA_STORE", raising=False)
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    small.write_bytes(b"{}\n")
    with big.open("wb") as fh:
        fh.truncate(LARGE_INPUT)
    assert not large("compare", str(small), str(small), "--json")
    assert large("compare", str(small), str(big))
    assert not large("compare", "missing.jsonl", str(tmp_path))
    assert large("runs", "import", str(big))
    assert large("compare", "1", "2", f"--store={big}")
    assert large("compare", "1", "2", "--store", str(big))
    # --store wins over $EVALDELTA_STORE, which names the store otherwise.
    monkeypatch.setenv("EVALDELTA_STORE", str(big))
    assert large("compare", "1", "2")
    assert not large("compare", "1", "2", "--store", str(small))
    assert not large("serve")
    assert not large("eval", "suite.yaml")
