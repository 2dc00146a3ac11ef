"""The benchmark harness works: the generator is deterministic, the runner runs at a tiny size.

Not a timed test: the figures themselves are in ``bench/RESULTS.md``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

BENCH = REPO / "bench"
#: Every row ``bench/run.py`` prints, the skipped ones included.
ROWS = (
    "reference query (DuckDB alone)",
    "line loop",
    "line loop, bytes (no decoding)",
    "compare pairwise",
    "compare pairwise, DuckDB engine",
    "compare N-way matrix",
    "compare N-way matrix, DuckDB engine",
    "gate (10,000 resamples)",
    "gate (10,000 resamples), DuckDB engine",
    "runs import",
    "compare two stored runs",
    "python -c 'import numpy, msgspec'",
    "compare 9-record file (start-up)",
)


def _python(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a bench script with this interpreter, the venv's ``evaldelta`` first on PATH."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(
        [sys.executable, *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )


def _generate(out: Path, seed: int) -> None:
    args = ("--cases", "50", "--targets", "3", "--attempts", "2", "--seed", str(seed))
    proc = _python(BENCH / "generate.py", out, *args, cwd=out.parent)
    assert proc.returncode == 0, proc.stderr


def test_generate_is_deterministic_and_writes_every_record(tmp_path: Path) -> None:
    first, again, other = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    _generate(first, seed=0)
    _generate(again, seed=0)
    _generate(other, seed=1)

    assert first.read_bytes() == again.read_bytes()
    assert first.read_bytes() != other.read_bytes()

    lines = first.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 50 * 3 * 2
    records = [json.loads(line) for line in lines]
    assert {r["target"] for r in records} == {"gpt-4.1", "gpt-5-mini", "claude-sonnet-4.5"}
    assert len({r["test_id"] for r in records}) == 50
    assert {r["attempt"] for r in records} == {1, 2}
    for r in records:
        assert set(r) == {
            "test_id",
            "target",
            "attempt",
            "score",
            "scores",
            "latency_ms",
            "input",
            "answer",
        }
        assert r["score"] in (0, 1)
        assert r["scores"]["exact"] == r["score"]
        assert 0.0 <= r["scores"]["judge"] <= 1.0
        assert round(r["scores"]["judge"], 2) == r["scores"]["judge"]
        assert r["latency_ms"] > 0
    assert any("\n" in r["answer"] for r in records)
    # Shuffled: not grouped by case as generated.
    assert [r["test_id"] for r in records] != sorted(r["test_id"] for r in records)


def test_run_quick_prints_every_row(tmp_path: Path) -> None:
    report = tmp_path / "RESULTS.md"
    proc = _python(
        BENCH / "run.py", "--quick", "--workdir", tmp_path, "--markdown", report, cwd=REPO
    )

    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = proc.stdout.split("\n\n", 1)[1]
    for row in ROWS:
        assert f"\n{row}  " in f"\n{table}", row
        assert f"| {row} |" in report.read_text(encoding="utf-8"), row
    if "skipped" in proc.stdout:
        assert "runs import: skipped: evaldelta has no run store yet" in proc.stdout
