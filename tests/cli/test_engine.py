"""End to end through the installed command: large inputs read by the DuckDB engine give
what the plain path gives, byte for byte (``EVALDELTA_DUCKDB_MB=0`` sends every file to
the engine, ``off`` none); Parquet goes out and comes back in."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, Result

Cli = Callable[..., Result]
ENGINE = {"EVALDELTA_DUCKDB_MB": "0"}
PLAIN = {"EVALDELTA_DUCKDB_MB": "off"}


@pytest.fixture(scope="module")
def bench_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("engine") / "bench.jsonl"
    subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "generate.py"),
            str(path),
            *("--cases", "300", "--targets", "3", "--attempts", "3", "--seed", "4"),
        ],
        check=True,
        capture_output=True,
    )
    return path


PAIR = ("--baseline", "gpt-4.1", "--candidate", "gpt-5-mini")


@pytest.mark.parametrize(
    "args",
    [
        ("compare", "{file}", *PAIR, "--json"),
        ("compare", "{file}", *PAIR),
        ("compare", "{file}", "--json"),
        ("compare", "{file}", "--baseline", "gpt-4.1", "--format", "markdown"),
        ("gate", "{file}", *PAIR, "--format", "json"),
        ("gate", "{file}", "--baseline", "gpt-4.1"),
        ("compare", "{file}", *PAIR, "--pass-threshold", "0.8", "--json"),
    ],
    ids=[
        "pairwise json",
        "pairwise table",
        "matrix",
        "matrix markdown",
        "gate",
        "gate matrix",
        "pass threshold",
    ],
)
def test_the_engine_prints_what_the_plain_path_prints(
    evaldelta: Cli, bench_file: Path, args: tuple[str, ...]
) -> None:
    argv = [a.format(file=bench_file) for a in args]
    engine = evaldelta(*argv, env=ENGINE)
    plain = evaldelta(*argv, env=PLAIN)
    assert engine.code in (0, 1), engine.err
    assert (engine.code, engine.out, engine.err) == (plain.code, plain.out, plain.err)


def test_the_command_reads_a_large_file_with_the_engine(bench_file: Path) -> None:
    """In process: the command loads DuckDB for a file over the size, and not under it."""
    code = (
        "import contextlib, io, os, sys\n"
        "from evaldelta.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['compare', {str(bench_file)!r}, '--baseline', 'gpt-4.1', '--json'])\n"
        "print('duckdb' in sys.modules)"
    )

    def loads_duckdb(size_mb: str) -> bool:
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**_environ(), "EVALDELTA_DUCKDB_MB": size_mb},
        )
        return proc.stdout.strip().splitlines()[-1] == "True"

    assert loads_duckdb("0")
    assert not loads_duckdb("16")  # the file is far smaller


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


@pytest.mark.parametrize(
    "line",
    [
        '{"test_id": "q9", "target": "gpt-4.1", "score": "high"}',
        '{"test_id": "q9", "target": "gpt-4.1", "score": "0.5"}',
        '{"test_id": "q9", "target": "gpt-4.1", "score": 1} {"test_id": "q10"}',
        '{"test_id": "  ", "target": "gpt-4.1", "score": 1}',
    ],
)
def test_a_bad_record_is_named_alike(
    evaldelta: Cli, bench_file: Path, tmp_path: Path, line: str
) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = bench_file.read_text(encoding="utf-8").splitlines()
    lines.insert(700, line)
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    engine = evaldelta("compare", bad, *PAIR, env=ENGINE)
    plain = evaldelta("compare", bad, *PAIR, env=PLAIN)
    assert engine.code == 2
    assert "bad.jsonl:701: " in engine.err
    assert (engine.code, engine.out, engine.err) == (plain.code, plain.out, plain.err)


def test_a_bad_engine_setting_is_named(evaldelta: Cli) -> None:
    r = evaldelta(
        "compare",
        REPO / "tests" / "fixtures" / "combined-results.jsonl",
        env={"EVALDELTA_DUCKDB_MB": "lots"},
    )
    assert r.code == 2
    assert r.err == (
        "evaldelta: error: EVALDELTA_DUCKDB_MB must be a number of MiB >= 0, or off; got 'lots'\n"
    )


# -- Parquet out and in --------------------------------------------------------------------


def test_a_run_exported_as_parquet_compares_as_all_ties(
    evaldelta: Cli, bench_file: Path, tmp_path: Path
) -> None:
    store = tmp_path / "runs.db"
    assert evaldelta("runs", "import", bench_file, "--name", "b", "--store", store).code == 0
    out = tmp_path / "gpt-4.1.parquet"
    r = evaldelta("runs", "export", "b/gpt-4.1", "--format", "parquet", "-o", out, "--store", store)
    assert (r.code, r.out, r.err) == (0, "", "")
    r = evaldelta("compare", bench_file, out, "--baseline", "gpt-4.1", "--candidate", "gpt-4.1",
                  "--json")  # fmt: skip
    assert r.code == 0, r.err
    summary = json.loads(r.out)["summary"]
    assert summary["matched"] == 300
    assert summary["ties"] == 300
    assert summary["mean_delta"] == 0
    # The file is read in, like any other: imported, gated.
    r = evaldelta("runs", "import", out, "--name", "again", "--store", store)
    assert r.code == 0, r.err
    assert r.out == "Stored run 4: again (300 cases, 900 records)\n"
    r = evaldelta("gate", out, out, "--store", store)
    assert r.code == 0, r.err


def test_an_export_named_parquet_is_parquet(evaldelta: Cli, tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    before = REPO / "examples" / "agent-versions" / "before.jsonl"
    assert evaldelta("runs", "import", before, "--name", "b", "--store", store).code == 0
    out = tmp_path / "b.parquet"
    assert evaldelta("runs", "export", "b", "-o", out, "--store", store).code == 0
    assert out.read_bytes()[:4] == b"PAR1"
    r = evaldelta("compare", before, out)
    assert r.code == 0, r.err
    assert "Summary: 0 wins, 0 losses, 60 ties" in r.out


def test_parquet_needs_a_file_to_go_to(evaldelta: Cli, tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    before = REPO / "examples" / "agent-versions" / "before.jsonl"
    assert evaldelta("runs", "import", before, "--name", "b", "--store", store).code == 0
    r = evaldelta("runs", "export", "b", "--format", "parquet", "--store", store)
    assert r.code == 2
    assert r.err == (
        "evaldelta: error: runs export --format parquet needs -o FILE (Parquet is no text)\n"
    )
